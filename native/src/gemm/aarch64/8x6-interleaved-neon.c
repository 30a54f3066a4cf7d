/* ACL's 8x6 SGEMM tile: each row is one q (4 columns) plus one d (2 columns)
 * accumulator, 16 registers in all. */
#define MR 8
#define NR 6
#define VEC_FLOATS 4
#define UKERNEL_NAME acl_ukr_8x6_interleaved_neon
#include "templates/interleaved.h"
