/* 16 accumulators + 2 B vectors of the 32 zmm registers. */
#define MR 8
#define NR 32
#define VEC_FLOATS 16
#define UKERNEL_NAME acl_ukr_8x32_hybrid_avx512
#include "templates/hybrid.h"
