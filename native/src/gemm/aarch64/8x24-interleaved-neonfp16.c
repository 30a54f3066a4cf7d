/* ACL's a64_hgemm_8x24: 24 .8h accumulators, 3 B vectors and one A column of
 * the 32 q registers (FMLA by element takes its A lane from v0-v15). */
#define MR 8
#define NR 24
#define UKERNEL_NAME acl_ukr_8x24_interleaved_neonfp16
#include "templates/interleaved_fp16.h"
