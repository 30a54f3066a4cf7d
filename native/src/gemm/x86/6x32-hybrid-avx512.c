/* 12 accumulators + 2 B vectors of the 32 zmm registers. */
#define MR 6
#define NR 32
#define VEC_FLOATS 16
#define UKERNEL_NAME acl_ukr_6x32_hybrid_avx512
#include "templates/hybrid.h"
