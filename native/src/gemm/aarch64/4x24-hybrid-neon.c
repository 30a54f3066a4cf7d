/* 24 accumulators + 6 B vectors of the 32 q registers. */
#define MR 4
#define NR 24
#define VEC_FLOATS 4
#define UKERNEL_NAME acl_ukr_4x24_hybrid_neon
#include "templates/hybrid.h"
