/* ACL's SmallK MLA shape: K <= 8 unrolled whole; 8 accumulators. */
#define MR 8
#define NR 16
#define VEC_FLOATS 16
#define KMAX 8
#define UKERNEL_NAME acl_ukr_8x16_smallk_avx512
#include "templates/smallk.h"
