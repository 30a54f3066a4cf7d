/* 8 rows x 32 columns (avx512vnni-tile.h). */
#define MR 8
#define NB 2
#define TILE_NAME acl_ukr_int8_8x32c4_avx512vnni
#include "avx512vnni-tile.h"
