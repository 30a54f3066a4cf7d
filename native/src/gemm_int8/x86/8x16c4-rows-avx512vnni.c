/* 8 rows x 16 columns, A read in place (avx512vnni-tile.h): for 16 output
 * channels or fewer, where 8x32 would compute twice the columns. */
#define MR 8
#define NB 1
#define TILE_ROWS
#define TILE_NAME acl_ukr_int8_8x16c4_rows_avx512vnni
#include "avx512vnni-tile.h"
