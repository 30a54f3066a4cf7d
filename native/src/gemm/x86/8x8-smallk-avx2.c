/* ACL's SmallK MLA shape: K <= 8 unrolled whole; 8 accumulators. */
#define MR 8
#define NR 8
#define VEC_FLOATS 8
#define KMAX 8
#define UKERNEL_NAME acl_ukr_8x8_smallk_avx2
#include "templates/smallk.h"
