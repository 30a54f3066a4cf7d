/* Small-K micro-kernel template: the hybrid kernel with K bounded by KMAX
 * (ACL's SmallK MLA kernels), so the K loop is unrolled completely and a
 * call runs straight-line code with no loop overhead. */
#ifndef KMAX
#error "a small-K micro-kernel needs KMAX"
#endif
#include "hybrid.h"
