/* 12 accumulators + 3 B vectors of the 16 ymm registers. */
#define MR 4
#define NR 24
#define VEC_FLOATS 8
#define UKERNEL_NAME acl_ukr_4x24_hybrid_avx2
#include "templates/hybrid.h"
