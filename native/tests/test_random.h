/* Seeded random numbers for the C test programs (splitmix64: a run is
 * reproducible from its --seed). */
#ifndef ACL_TEST_RANDOM_H
#define ACL_TEST_RANDOM_H

#include <stdint.h>

static uint64_t rng_state;

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
