/* The generator behind seeded tensors, documented in PROTOCOL.md so a client
 * can reproduce them: splitmix64, one stream per tensor. */
#ifndef ACL_LAUNCHER_PRNG_H
#define ACL_LAUNCHER_PRNG_H

#include <stddef.h>
#include <stdint.h>

/* Fills x[0, n) uniform in [-1, 1) from the stream (seed, stream). */
void prng_fill_uniform(float *x, size_t n, uint64_t seed, unsigned stream);

#endif
