/* 24 accumulators + 4 B vectors of the 32 q registers. */
#define MR 6
#define NR 16
#define VEC_FLOATS 4
#define UKERNEL_NAME acl_ukr_6x16_hybrid_neon
#include "templates/hybrid.h"
