/* 24 accumulators + 2 B vectors of the 32 zmm registers. */
#define MR 12
#define NR 32
#define VEC_FLOATS 16
#define UKERNEL_NAME acl_ukr_12x32_interleaved_avx512
#include "templates/interleaved.h"
