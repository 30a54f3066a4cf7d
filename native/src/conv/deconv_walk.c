/* The output-row walk of the transposed algorithms that gather. */
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"

int conv_transposed_map_init(conv_transposed_map *map, const acl_conv *conv)
{
    memset(map, 0, sizeof *map);
    const acl_conv_shape *s = &conv->s;
    const int oh = conv->d.oh, ow = conv->d.ow;
    map->row_start = malloc(((size_t)oh + 1) * sizeof(int));
    map->row_tap = malloc((size_t)oh * s->kh * sizeof(int));
    map->row_in = malloc((size_t)oh * s->kh * sizeof(int));
    map->col_first = calloc((size_t)s->kw, sizeof(int));
    map->col_in = calloc((size_t)s->kw, sizeof(int));
    map->col_count = calloc((size_t)s->kw, sizeof(int));
    map->bias_row = malloc((size_t)ow * s->oc * sizeof(float));
    if (!map->row_start || !map->row_tap || !map->row_in || !map->col_first || !map->col_in ||
        !map->col_count || !map->bias_row)
        return acl_fail("out of memory creating a transposed convolution's map");
    for (int ox = 0; ox < ow; ox++)
        memcpy(map->bias_row + (size_t)ox * s->oc, conv->bias, (size_t)s->oc * sizeof(float));
    int n = 0;
    for (int oy = 0; oy < oh; oy++) {
        map->row_start[oy] = n;
        for (int ky = 0; ky < s->kh; ky++) {
            const int iy = conv_transposed_source(oy, ky, s->stride_h, s->pad_top, s->dil_h, s->h);
            if (iy < 0) continue;
            map->row_tap[n] = ky;
            map->row_in[n++] = iy;
        }
    }
    map->row_start[oh] = n;
    for (int kx = 0; kx < s->kw; kx++)
        for (int ix = 0; ix < s->w; ix++) {
            const int ox = ix * s->stride_w - s->pad_left + kx * s->dil_w;
            if (ox < 0 || ox >= ow) continue;
            if (!map->col_count[kx]++) {
                map->col_first[kx] = ox;
                map->col_in[kx] = ix;
            }
        }
    return 0;
}

void conv_transposed_map_free(conv_transposed_map *map)
{
    free(map->row_start);
    free(map->row_tap);
    free(map->row_in);
    free(map->col_first);
    free(map->col_in);
    free(map->col_count);
    free(map->bias_row);
}

/* Adds to output row (b, oy), at y, what every (row tap, column tap) pair brings. */
static void land_row(const conv_transposed_walk *walk, float *y, int b, int oy)
{
    const conv_transposed_map *map = walk->map;
    const acl_conv_shape *s = &walk->conv->s;
    for (int a = map->row_start[oy]; a < map->row_start[oy + 1]; a++) {
        const size_t in_row = (size_t)(b * s->h + map->row_in[a]) * s->w;
        for (int kx = 0; kx < s->kw; kx++)
            if (map->col_count[kx])
                walk->land(walk, y + (size_t)map->col_first[kx] * s->oc,
                           (ptrdiff_t)s->stride_w * s->oc, in_row + map->col_in[kx],
                           map->col_count[kx], map->row_tap[a] * s->kw + kx);
    }
}

void conv_transposed_rows(void *arg, int begin, int end, int worker)
{
    const conv_transposed_walk *walk = arg;
    const acl_conv *conv = walk->conv;
    const acl_conv_shape *s = &conv->s;
    const size_t row_floats = (size_t)conv->d.ow * s->oc;
    for (int r = begin; r < end; r++) {
        float *y = walk->io->y + r * row_floats;
        memset(y, 0, row_floats * sizeof(float));
        if (walk->land) land_row(walk, y, r / conv->d.oh, r % conv->d.oh);
        const float *residual = walk->io->residual ? walk->io->residual + r * row_floats : NULL;
        conv_add_bias(y, y, walk->map->bias_row, residual, (int)row_floats);
        conv_activate_in_place(s, y, row_floats);
    }
}
