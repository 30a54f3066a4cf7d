/* Gather with constant indices: each output row (one position of the dims
 * before the axis, one index) is the input's slice at that index, copied
 * whole; the rows are split over the cores.
 *
 * Along the innermost axis (the channels of an NHWC map) a slice is one
 * float, so a row is instead one outer position (a pixel), gathered from
 * the matching input row by the index table; a table that is a channel
 * shuffle of 2, 3, 4 or 8 groups takes a loop with the group count fixed,
 * which the compiler turns into vector interleaves (zip; st2 to st4 on
 * NEON) rather than one load per channel. */
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

typedef struct gather_params gather_params;
typedef void (*gather_fn)(const gather_params *p, size_t begin, size_t end);

struct gather_params {
    gather_fn fn;
    const float *x;
    float *y;
    size_t rows;    /* outer positions x indices; innermost axis: outer positions */
    size_t inner;   /* floats of one slice: the dims after the axis */
    size_t extent;  /* the input's size along the axis */
    int n;
    int indices[];  /* n, made non-negative */
};

static void gather_slices(const gather_params *p, size_t begin, size_t end)
{
    for (size_t r = begin; r < end; r++) {
        const size_t outer = r / (size_t)p->n, index = (size_t)p->indices[r % (size_t)p->n];
        memcpy(p->y + r * p->inner, p->x + (outer * p->extent + index) * p->inner,
               p->inner * sizeof(float));
    }
}

/* Innermost axis: y[r][i] = x[r][indices[i]]. */
static void gather_channels(const gather_params *p, size_t begin, size_t end)
{
    const int *restrict index = p->indices;
    for (size_t r = begin; r < end; r++) {
        const float *restrict x = p->x + r * p->extent;
        float *restrict y = p->y + r * (size_t)p->n;
        for (int i = 0; i < p->n; i++) y[i] = x[index[i]];
    }
}

/* A shuffle of G groups: y[r][i * G + j] = x[r][j * per + i]. */
static inline __attribute__((always_inline)) void shuffle(const gather_params *p, size_t begin,
                                                          size_t end, int G)
{
    const size_t per = p->extent / (size_t)G;
    for (size_t r = begin; r < end; r++) {
        const float *restrict x = p->x + r * p->extent;
        float *restrict y = p->y + r * p->extent;
        for (size_t i = 0; i < per; i++)
            for (int j = 0; j < G; j++) y[i * G + j] = x[j * per + i];
    }
}

static void shuffle2(const gather_params *p, size_t begin, size_t end)
{
    shuffle(p, begin, end, 2);
}
static void shuffle3(const gather_params *p, size_t begin, size_t end)
{
    shuffle(p, begin, end, 3);
}
static void shuffle4(const gather_params *p, size_t begin, size_t end)
{
    shuffle(p, begin, end, 4);
}
static void shuffle8(const gather_params *p, size_t begin, size_t end)
{
    shuffle(p, begin, end, 8);
}

/* The loop for an innermost-axis table: a shuffle's of its group count, else the table's. */
static gather_fn channel_loop(const int *index, int extent, int n)
{
    static const struct {
        int groups;
        gather_fn fn;
    } shuffles[] = {{2, shuffle2}, {3, shuffle3}, {4, shuffle4}, {8, shuffle8}};
    for (size_t s = 0; s < sizeof shuffles / sizeof shuffles[0] && n == extent; s++) {
        const int groups = shuffles[s].groups, per = extent / groups;
        int same = extent % groups == 0;
        for (int c = 0; same && c < n; c++) same = index[c] == c % groups * per + c / groups;
        if (same) return shuffles[s].fn;
    }
    return gather_channels;
}

static void gather_rows(const void *arg, size_t begin, size_t end)
{
    const gather_params *p = arg;
    p->fn(p, begin, end);
}

static int gather_run(const void *arg, const acl_exec *ex)
{
    const gather_params *p = arg;
    const size_t floats_per_row = p->inner == 1 ? (size_t)p->n : p->inner;
    return graph_parallel(ex, p->rows, floats_per_row, gather_rows, p);
}

int graph_op_gather(acl_graph *g, const acl_gather_attrs *a, int nin, const acl_tensor *in,
                    const acl_tensor *out)
{
    int axis = a->axis;
    const int n = a->indices_count;
    size_t count;
    if (graph_check_tensor(g, "gather", "input", in, &count) != 0 ||
        graph_check_tensor(g, "gather", "output", out, &count) != 0)
        return -1;
    if (axis < -in->rank || axis >= in->rank)
        return acl_fail("gather: axis %d is out of range for the input's rank %d", axis, in->rank);
    if (axis < 0) axis += in->rank;
    if (n < 1 || !a->indices) return acl_fail("gather: no indices given");
    int want[ACL_MAX_RANK];
    memcpy(want, in->dims, sizeof want);
    want[axis] = n;
    if (graph_check_dims("gather", "output", out, in->rank, want) != 0 ||
        graph_check_disjoint("gather", out, "the input", in, 0) != 0)
        return -1;
    const int extent = in->dims[axis];
    gather_params *p = malloc(sizeof *p + (size_t)n * sizeof p->indices[0]);
    if (!p) return acl_fail("gather: out of memory");
    for (int i = 0; i < n; i++) {
        const int index = a->indices[i];
        if (index < -extent || index >= extent) {
            free(p);
            return acl_fail("gather: indices[%d] = %d is out of range for axis %d of size %d", i,
                            index, axis, extent);
        }
        p->indices[i] = index < 0 ? index + extent : index;
    }
    p->x = graph_ptr(g, in);
    p->y = graph_ptr(g, out);
    p->inner = graph_volume(in->dims, axis + 1, in->rank);
    p->extent = (size_t)extent;
    p->n = n;
    const size_t outer = graph_volume(in->dims, 0, axis);
    if (p->inner == 1) {
        p->fn = channel_loop(p->indices, extent, n);
        p->rows = outer;
    } else {
        p->fn = gather_slices;
        p->rows = outer * (size_t)n;
    }
    return graph_add(g, gather_run, NULL, p);
}
