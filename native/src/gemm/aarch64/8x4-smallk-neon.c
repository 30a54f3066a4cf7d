/* ACL's SmallK MLA shape: K <= 8 unrolled whole; 8 accumulators. */
#define MR 8
#define NR 4
#define VEC_FLOATS 4
#define KMAX 8
#define UKERNEL_NAME acl_ukr_8x4_smallk_neon
#include "templates/smallk.h"
