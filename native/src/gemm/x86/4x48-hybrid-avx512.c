/* 12 accumulators + 3 B vectors of the 32 zmm registers. */
#define MR 4
#define NR 48
#define VEC_FLOATS 16
#define UKERNEL_NAME acl_ukr_4x48_hybrid_avx512
#include "templates/hybrid.h"
