/* 8 accumulators + 1 B vector of the 16 ymm registers. */
#define MR 8
#define NR 8
#define VEC_FLOATS 8
#define UKERNEL_NAME acl_ukr_8x8_interleaved_avx2
#include "templates/interleaved.h"
