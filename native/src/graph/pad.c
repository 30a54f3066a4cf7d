/* Constant / edge / reflect padding (ONNX Pad; negative pads crop).
 *
 * Axes after the last padded one are copied whole, so the output is a run of
 * blocks of that size.  At add time each padded axis gets a table mapping an
 * output index to the input index it reads (-1: the constant), which is where
 * the three modes differ; a run then copies or fills block by block. */
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

typedef struct {
    const float *x;
    float *y;
    float value;
    int axes;                     /* the padded axes and those before them: 0..axes-1 */
    int dims[ACL_MAX_RANK];       /* output dims of those axes */
    size_t in_stride[ACL_MAX_RANK];
    size_t block, blocks;         /* floats per block, blocks in the output */
    const int *map[ACL_MAX_RANK]; /* into maps[] */
    int maps[];
} pad_params;

static void pad_rows(const void *arg, size_t begin, size_t end)
{
    const pad_params *p = arg;
    int idx[ACL_MAX_RANK];
    size_t rest = begin;
    for (int a = p->axes - 1; a >= 0; a--) {
        idx[a] = (int)(rest % (size_t)p->dims[a]);
        rest /= (size_t)p->dims[a];
    }
    for (size_t b = begin; b < end; b++) {
        float *y = p->y + b * p->block;
        size_t src = 0;
        int inside = 1;
        for (int a = 0; a < p->axes; a++) {
            const int m = p->map[a][idx[a]];
            if (m < 0) {
                inside = 0;
                break;
            }
            src += (size_t)m * p->in_stride[a];
        }
        if (inside) memcpy(y, p->x + src, p->block * sizeof *y);
        else
            for (size_t i = 0; i < p->block; i++) y[i] = p->value;
        for (int a = p->axes - 1; a >= 0 && ++idx[a] == p->dims[a]; a--) idx[a] = 0;
    }
}

static int pad_run(const void *arg, const acl_exec *ex)
{
    const pad_params *p = arg;
    return graph_parallel(ex, p->blocks, p->block, pad_rows, p);
}

/* The input index output index `o` reads along an axis of size d padded by
 * `before`; -1 for the constant. */
static int source_index(int mode, int o, int before, int d)
{
    const int i = o - before;
    if (i >= 0 && i < d) return i;
    if (mode == ACL_PAD_CONSTANT) return -1;
    if (mode == ACL_PAD_EDGE || d == 1) return i < 0 ? 0 : d - 1;
    /* Reflect without repeating the edge: period 2(d-1), as numpy's "reflect". */
    const int period = 2 * (d - 1), m = ((i % period) + period) % period;
    return m < d ? m : period - m;
}

int graph_op_pad(acl_graph *g, const acl_pad_attrs *a, int nin, const acl_tensor *in,
                 const acl_tensor *out)
{
    const int mode = a->mode, *pads = a->pads;
    const float value = a->value;
    if (mode != ACL_PAD_CONSTANT && mode != ACL_PAD_EDGE && mode != ACL_PAD_REFLECT)
        return acl_fail("pad: unknown mode %d (0: constant, 1: edge, 2: reflect)", mode);
    size_t count;
    if (graph_check_tensor(g, "pad", "input", in, &count) != 0 ||
        graph_check_tensor(g, "pad", "output", out, &count) != 0)
        return -1;
    if (graph_check_count("pad", "pads", (size_t)a->pads_count, 2 * (size_t)in->rank) != 0)
        return -1;
    const int rank = in->rank;
    int want[ACL_MAX_RANK], axes = 1;
    for (int a = 0; a < rank; a++) {
        const long size = (long)in->dims[a] + pads[a] + pads[rank + a];
        if (size < 1)
            return acl_fail("pad: pads %d and %d leave axis %d of size %d empty", pads[a],
                            pads[rank + a], a, in->dims[a]);
        want[a] = (int)size;
        if (pads[a] || pads[rank + a]) axes = a + 1;
    }
    if (graph_check_dims("pad", "output", out, rank, want) != 0 ||
        graph_check_disjoint("pad", out, "the input", in, 0) != 0)
        return -1;
    if (rank == 0) axes = 0;
    size_t nmaps = 0;
    for (int a = 0; a < axes; a++) nmaps += (size_t)want[a];
    pad_params *p = malloc(sizeof *p + nmaps * sizeof p->maps[0]);
    if (!p) return acl_fail("pad: out of memory");
    *p = (pad_params){.x = graph_ptr(g, in),
                      .y = graph_ptr(g, out),
                      .value = value,
                      .axes = axes,
                      .block = graph_volume(in->dims, axes, rank),
                      .blocks = graph_volume(want, 0, axes)};
    int *map = p->maps;
    for (int a = 0; a < axes; a++) {
        p->dims[a] = want[a];
        p->in_stride[a] = graph_volume(in->dims, a + 1, rank);
        p->map[a] = map;
        for (int o = 0; o < want[a]; o++) *map++ = source_index(mode, o, pads[a], in->dims[a]);
    }
    return graph_add(g, pad_run, NULL, p);
}
