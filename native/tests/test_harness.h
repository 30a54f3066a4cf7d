/* The pass/fail harness and seeded random numbers of the C test programs.
 * Every program closes with "N passed, N failed" alone on a line, which
 * tests/test_native_suites.py reads, and exits non-zero after a failure.
 * Random numbers are splitmix64 from seed 1 unless a --seed sets rng_state,
 * so that a run is reproducible. */
#ifndef ACL_TEST_HARNESS_H
#define ACL_TEST_HARNESS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

/* ---- pass/fail ------------------------------------------------------------ */

static int passed, failed;

/* Counts a failure and prints it on one line: "FAIL <context>: <message>",
 * or "FAIL <message>" without a context. */
static inline void vfail(const char *context, const char *fmt, va_list ap)
{
    printf("FAIL ");
    if (context) printf("%s: ", context);
    vprintf(fmt, ap);
    printf("\n");
    failed++;
}

static inline void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Counts a pass, or a failure described by fmt. */
static inline void check(int ok, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfail(NULL, fmt, ap);
    va_end(ap);
}

/* Prints the closing line; returns the exit status. */
static inline int test_summary(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* ---- random numbers --------------------------------------------------------- */

static uint64_t rng_state = 1;

static inline uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline int rnd(int lo, int hi) { return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1)); }

/* Uniform in [-1, 1). */
static inline float rnd_float(void)
{
    return (float)((rng_next() >> 40) * (2.0 / (1ull << 24)) - 1.0);
}

#endif
