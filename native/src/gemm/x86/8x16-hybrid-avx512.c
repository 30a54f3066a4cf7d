/* 8 accumulators + 1 B vector of the 32 zmm registers. */
#define MR 8
#define NR 16
#define VEC_FLOATS 16
#define UKERNEL_NAME acl_ukr_8x16_hybrid_avx512
#include "templates/hybrid.h"
