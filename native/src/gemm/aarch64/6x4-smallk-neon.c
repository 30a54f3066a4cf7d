/* ACL's SmallK MLA shape: K <= 16 unrolled whole; 6 accumulators. */
#define MR 6
#define NR 4
#define VEC_FLOATS 4
#define KMAX 16
#define UKERNEL_NAME acl_ukr_6x4_smallk_neon
#include "templates/smallk.h"
