#define _GNU_SOURCE
#include "clock.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *x, size_t n)
{
    qsort(x, n, sizeof *x, compare_doubles);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double median_ci_rel(double *x, size_t n)
{
    const double half = 0.98 * sqrt((double)n);  /* 1.96 / 2 */
    const long lo = lround(n / 2.0 - half), hi = lround(1 + n / 2.0 + half);  /* 1-based ranks */
    if (lo < 1 || hi > (long)n) return -1;
    const double mid = median(x, n);
    return mid > 0 ? (x[hi - 1] - x[lo - 1]) / 2 / mid : -1;
}
