/* 8 rows x 16 columns, A read in place, the sums requantised to bytes
 * (avx512vnni-tile.h): 8x16c4-rows' twin. */
#define MR 8
#define NB 1
#define TILE_ROWS
#define TILE_REQUANT
#define TILE_NAME acl_ukr_int8_8x16c4_rows_requant_avx512vnni
#include "avx512vnni-tile.h"
