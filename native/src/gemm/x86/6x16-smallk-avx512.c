/* ACL's SmallK MLA shape: K <= 16 unrolled whole; 6 accumulators. */
#define MR 6
#define NR 16
#define VEC_FLOATS 16
#define KMAX 16
#define UKERNEL_NAME acl_ukr_6x16_smallk_avx512
#include "templates/smallk.h"
