/* Timing helpers shared by the measure and graph_run commands. */
#ifndef ACL_LAUNCHER_CLOCK_H
#define ACL_LAUNCHER_CLOCK_H

#include <stddef.h>

/* Monotonic nanoseconds as an integer: a difference of two milliseconds-since-boot
 * doubles would carry rounding noise into every time. */
long long now_ns(void);

/* The median of x[0, n), n >= 1; sorts x in place. */
double median(double *x, size_t n);

/* The half-width of the distribution-free 95% confidence interval of the
 * median of x[0, n) (the order statistics n/2 -+ 0.98 sqrt(n)), relative to
 * the median; -1 when n is too small to have one (n < 6).  Sorts x. */
double median_ci_rel(double *x, size_t n);

#endif
