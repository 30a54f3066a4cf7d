/* Concatenation: every output row (the dims before the axis) is the inputs'
 * blocks side by side; the flat output range is split over the cores and
 * filled block by block with memcpy.  Of uint8 tensors (u8), a block whose
 * quantization differs from the output's is requantized instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

typedef struct {
    const char *src;
    size_t block;   /* elements this input adds to each output row */
    size_t start;   /* where they start in the row */
    /* u8 with another quantization than the output's: each byte's requantized
     * value, as a dequantize and a quantize give it; else NULL (copied) */
    const uint8_t *table;
} concat_part;

typedef struct {
    char *y;
    size_t row, count;  /* output row length and element count */
    size_t elem;        /* bytes of an element: 4, or 1 for uint8 */
    int n;
    concat_part parts[];
} concat_params;

/* len elements of part from x to y: copied, or requantized by its table. */
static void concat_block(const concat_params *p, const concat_part *part, const char *x, char *y,
                         size_t len)
{
    if (!part->table) {
        memcpy(y, x, len * p->elem);
        return;
    }
    const uint8_t *restrict in = (const uint8_t *)x, *restrict table = part->table;
    uint8_t *restrict out = (uint8_t *)y;
    for (size_t i = 0; i < len; i++) out[i] = table[in[i]];
}

static void concat_rows(const void *arg, size_t begin, size_t end)
{
    const concat_params *p = arg;
    size_t r = begin / p->row, off = begin % p->row;
    int i = 0;
    while (p->parts[i].start + p->parts[i].block <= off) i++;
    for (size_t pos = begin; pos < end;) {
        const concat_part *part = &p->parts[i];
        const size_t skip = off - part->start;
        size_t len = part->block - skip;
        if (len > end - pos) len = end - pos;
        concat_block(p, part, part->src + (r * part->block + skip) * p->elem, p->y + pos * p->elem,
                     len);
        pos += len;
        off += len;
        if (++i == p->n) {
            i = 0;
            r++;
            off = 0;
        }
    }
}

static int concat_run(const void *arg, const acl_exec *ex)
{
    const concat_params *p = arg;
    return graph_parallel(ex, p->count, 1, concat_rows, p);
}

/* A float tensor, or a uint8 one. */
static int check_tensor(const acl_graph *g, const char *what, const acl_tensor *t, int u8)
{
    size_t count;
    return u8 ? graph_check_tensor_u8(g, "concat", what, t, &count)
              : graph_check_tensor(g, "concat", what, t, &count);
}

/* Input i has out's rank and dims, except along the axis. */
static int check_input(const acl_graph *g, int i, int axis, const acl_tensor *in,
                       const acl_tensor *out, int u8)
{
    char what[32], got[GRAPH_DIMS_LEN], want[GRAPH_DIMS_LEN];
    snprintf(what, sizeof what, "input %d", i);
    if (check_tensor(g, what, in, u8) != 0) return -1;
    int same = in->rank == out->rank;
    for (int d = 0; same && d < out->rank; d++) same = d == axis || in->dims[d] == out->dims[d];
    if (!same)
        return acl_fail("concat: %s has dims %s but axis %d needs the other dims of %s", what,
                        graph_dims_str(in->rank, in->dims, got), axis,
                        graph_dims_str(out->rank, out->dims, want));
    return graph_check_disjoint_bytes("concat", out, u8 ? 1 : 4, what, in, u8 ? 1 : 4);
}

/* u8: one scale and zero point per input, then the output's. */
static int check_quantizations(const acl_concat_attrs *a, int n)
{
    if (!a->u8) return 0;
    if (graph_check_count("concat", "scales", a->scales_count, (size_t)n + 1) != 0 ||
        graph_check_count("concat", "zero_points", (size_t)a->zero_points_count, (size_t)n + 1) !=
            0)
        return -1;
    for (int i = 0; i <= n; i++) {
        char what[32] = "the output's ";
        if (i < n) snprintf(what, sizeof what, "input %d's ", i);
        if (graph_check_quantization("concat", what, a->scales[i], a->zero_points[i]) != 0)
            return -1;
    }
    return 0;
}

int graph_op_concat(acl_graph *g, const acl_concat_attrs *a, int n, const acl_tensor *ins,
                    const acl_tensor *out)
{
    int axis = a->axis;
    const int u8 = a->u8 != 0;
    size_t count;
    if (check_tensor(g, "output", out, u8) != 0 || check_quantizations(a, n) != 0) return -1;
    count = graph_volume(out->dims, 0, out->rank);
    if (axis < -out->rank || axis >= out->rank)
        return acl_fail("concat: axis %d is out of range for the output's rank %d", axis,
                        out->rank);
    if (axis < 0) axis += out->rank;
    long total = 0;
    for (int i = 0; i < n; i++) {
        if (check_input(g, i, axis, &ins[i], out, u8) != 0) return -1;
        total += ins[i].dims[axis];
    }
    if (total != out->dims[axis])
        return acl_fail("concat: the inputs add up to %ld along axis %d but the output has %d",
                        total, axis, out->dims[axis]);
    /* The parts, then a 256-byte table for each input to requantize. */
    const size_t head = sizeof(concat_params) + (size_t)n * sizeof(concat_part);
    concat_params *p = malloc(head + (u8 ? (size_t)n * 256 : 0));
    if (!p) return acl_fail("concat: out of memory");
    const size_t inner = graph_volume(out->dims, axis + 1, out->rank);
    char *y = u8 ? (char *)graph_ptr_u8(g, out) : (char *)graph_ptr(g, out);
    *p = (concat_params){y, (size_t)out->dims[axis] * inner, count, u8 ? 1 : sizeof(float), n};
    size_t start = 0;
    for (int i = 0; i < n; i++) {
        uint8_t *table = NULL;
        if (u8 && (a->scales[i] != a->scales[n] || a->zero_points[i] != a->zero_points[n])) {
            table = (uint8_t *)p + head + (size_t)i * 256;
            for (int q = 0; q < 256; q++)
                table[q] = graph_quantize((float)(q - a->zero_points[i]) * a->scales[i],
                                          a->scales[n], a->zero_points[n]);
        }
        p->parts[i] = (concat_part){u8 ? (const char *)graph_ptr_u8(g, &ins[i])
                                       : (const char *)graph_ptr(g, &ins[i]),
                                    (size_t)ins[i].dims[axis] * inner, start, table};
        start += p->parts[i].block;
    }
    return graph_add(g, concat_run, NULL, p);
}
