/* 12 accumulators + 2 B vectors of the 16 ymm registers. */
#define MR 6
#define NR 16
#define VEC_FLOATS 8
#define UKERNEL_NAME acl_ukr_6x16_hybrid_avx2
#include "templates/hybrid.h"
