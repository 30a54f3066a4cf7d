/* Timing helpers shared by the measure and graph_run commands. */
#ifndef ACL_LAUNCHER_CLOCK_H
#define ACL_LAUNCHER_CLOCK_H

#include <stddef.h>

/* Monotonic nanoseconds as an integer: a difference of two milliseconds-since-boot
 * doubles would carry rounding noise into every time. */
long long now_ns(void);

/* The median of x[0, n), n >= 1; sorts x in place. */
double median(double *x, size_t n);

#endif
