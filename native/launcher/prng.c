#include "prng.h"

static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void prng_fill_uniform(float *x, size_t n, uint64_t seed, unsigned stream)
{
    /* splitmix64 steps its state by a large odd constant, so start states
     * that differ by a little are very far apart along the sequence: the
     * streams of one seed, and of neighbouring seeds, do not overlap. */
    uint64_t state = seed * 4 + stream;
    for (size_t i = 0; i < n; i++) {
        /* The top 24 bits make a float in [0, 1) exactly; 2u - 1 stays exact. */
        float u = (float)(splitmix64_next(&state) >> 40) * 0x1p-24f;
        x[i] = 2.0f * u - 1.0f;
    }
}
