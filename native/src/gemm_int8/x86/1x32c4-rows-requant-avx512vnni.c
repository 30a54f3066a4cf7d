/* One row x 32 columns, A read in place, the sums requantised to bytes
 * (avx512vnni-tile.h): 8x32c4-rows' twin for a lone row (int8.h's
 * row_requant_fn), its K groups taken by 4 sets of accumulators in turn. */
#define MR 1
#define NB 2
#define KS 4
#define TILE_ROWS
#define TILE_REQUANT
#define TILE_NAME acl_ukr_int8_1x32c4_rows_requant_avx512vnni
#include "avx512vnni-tile.h"
