/* 16 accumulators + 1 B vector of the 32 zmm registers. */
#define MR 16
#define NR 16
#define VEC_FLOATS 16
#define UKERNEL_NAME acl_ukr_16x16_interleaved_avx512
#include "templates/interleaved.h"
