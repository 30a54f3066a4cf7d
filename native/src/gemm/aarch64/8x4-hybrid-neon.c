/* 8 accumulators + 1 B vector of the 32 q registers. */
#define MR 8
#define NR 4
#define VEC_FLOATS 4
#define UKERNEL_NAME acl_ukr_8x4_hybrid_neon
#include "templates/hybrid.h"
