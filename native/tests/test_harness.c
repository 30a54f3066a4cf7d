/* The harness's counters and random state, one set for a whole suite. */
#include "test_harness.h"

int passed, failed;
uint64_t rng_state = 1;
