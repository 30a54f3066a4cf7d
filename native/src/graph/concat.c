/* Concatenation: every output row (the dims before the axis) is the inputs'
 * blocks side by side; the flat output range is split over the cores and
 * filled block by block with memcpy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

typedef struct {
    const float *src;
    size_t block;  /* floats this input adds to each output row */
    size_t start;  /* where they start in the row */
} concat_part;

typedef struct {
    float *y;
    size_t row, count;  /* output row length and element count */
    int n;
    concat_part parts[];
} concat_params;

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
        memcpy(p->y + pos, part->src + r * part->block + skip, len * sizeof(float));
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

/* Input i has out's rank and dims, except along the axis. */
static int check_input(const acl_graph *g, int i, int axis, const acl_tensor *in,
                       const acl_tensor *out)
{
    char what[32], got[GRAPH_DIMS_LEN], want[GRAPH_DIMS_LEN];
    size_t count;
    snprintf(what, sizeof what, "input %d", i);
    if (graph_check_tensor(g, "concat", what, in, &count) != 0) return -1;
    int same = in->rank == out->rank;
    for (int d = 0; same && d < out->rank; d++) same = d == axis || in->dims[d] == out->dims[d];
    if (!same)
        return acl_fail("concat: %s has dims %s but axis %d needs the other dims of %s", what,
                        graph_dims_str(in->rank, in->dims, got), axis,
                        graph_dims_str(out->rank, out->dims, want));
    return graph_check_disjoint("concat", out, what, in, 0);
}

int graph_op_concat(acl_graph *g, const acl_concat_attrs *a, int n, const acl_tensor *ins,
                    const acl_tensor *out)
{
    int axis = a->axis;
    size_t count;
    if (graph_check_tensor(g, "concat", "output", out, &count) != 0) return -1;
    if (axis < -out->rank || axis >= out->rank)
        return acl_fail("concat: axis %d is out of range for the output's rank %d", axis,
                        out->rank);
    if (axis < 0) axis += out->rank;
    long total = 0;
    for (int i = 0; i < n; i++) {
        if (check_input(g, i, axis, &ins[i], out) != 0) return -1;
        total += ins[i].dims[axis];
    }
    if (total != out->dims[axis])
        return acl_fail("concat: the inputs add up to %ld along axis %d but the output has %d",
                        total, axis, out->dims[axis]);
    concat_params *p = malloc(sizeof *p + (size_t)n * sizeof p->parts[0]);
    if (!p) return acl_fail("concat: out of memory");
    const size_t inner = graph_volume(out->dims, axis + 1, out->rank);
    *p = (concat_params){graph_ptr(g, out), (size_t)out->dims[axis] * inner, count, n};
    size_t start = 0;
    for (int i = 0; i < n; i++) {
        p->parts[i] =
            (concat_part){graph_ptr(g, &ins[i]), (size_t)ins[i].dims[axis] * inner, start};
        start += p->parts[i].block;
    }
    return graph_add(g, concat_run, NULL, p);
}
