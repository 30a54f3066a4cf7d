/* ACL's SmallK MLA shape: K <= 16 unrolled whole; 6 accumulators. */
#define MR 6
#define NR 8
#define VEC_FLOATS 8
#define KMAX 16
#define UKERNEL_NAME acl_ukr_6x8_smallk_avx2
#include "templates/smallk.h"
