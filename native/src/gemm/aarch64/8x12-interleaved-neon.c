/* 24 accumulators + 3 B vectors of the 32 q registers. */
#define MR 8
#define NR 12
#define VEC_FLOATS 4
#define UKERNEL_NAME acl_ukr_8x12_interleaved_neon
#include "templates/interleaved.h"
