/* Transpose and slice as strided walks (walk.h) over the output: each output
 * row reads the input with the permuted (or stepped) stride of its innermost
 * axis, a plain copy when that stride is 1 (a transpose keeping the innermost
 * axis, a slice of whole rows or of channel ranges of an NHWC map).  A 2-D
 * transpose goes by blocks instead, so that each input line is read from
 * memory once: with short output rows (NCHW -> NHWC of an image: rows of 3
 * channels) by blocks of rows, each reading input rows contiguously; with
 * long ones (NHWC -> NCHW of a model's output: a row per channel, reading
 * every C-th float) by blocks of columns, whose input stays in L1 while each
 * channel's part of them is written. */
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"
#include "walk.h"
#include "pool.h"

typedef struct {
    const float *x;
    float *y;
    size_t count;
    graph_walk walk;
} transpose_params;

/* Output rows per block of the 2-D path: its reads and writes stay in L1. */
#define BLOCK_ROWS 64
/* Output rows this short take the 2-D path when it applies. */
#define SHORT_ROW 16

/* y[r][c] = x[c][r] for output rows [begin, end) of a 2-D walk whose rows
 * read the input with stride `step` and whose row axis steps through it by 1. */
static void transpose_2d_rows(const void *arg, size_t begin, size_t end)
{
    const transpose_params *p = arg;
    const size_t cols = p->walk.dims[1];
    const ptrdiff_t step = p->walk.stride[0][1];
    if (cols == 3) { /* an RGB image: the compiler interleaves whole vectors */
        const float *restrict x0 = p->x, *restrict x1 = x0 + step, *restrict x2 = x1 + step;
        float *restrict y = p->y;
        for (size_t r = begin; r < end; r++) {
            y[3 * r] = x0[r];
            y[3 * r + 1] = x1[r];
            y[3 * r + 2] = x2[r];
        }
        return;
    }
    for (size_t r0 = begin; r0 < end; r0 += BLOCK_ROWS) {
        const size_t rows = end - r0 < BLOCK_ROWS ? end - r0 : BLOCK_ROWS;
        for (size_t c = 0; c < cols; c++) {
            const float *restrict x = p->x + (ptrdiff_t)c * step + (ptrdiff_t)r0;
            float *restrict y = p->y + r0 * cols + c;
            for (size_t r = 0; r < rows; r++) y[r * cols] = x[r];
        }
    }
}

/* Input floats per block of the column path: in L1 with room for the writes. */
#define BLOCK_FLOATS 4096

/* y[r][c] = x[c][r] for output columns [begin, end) of a 2-D walk whose
 * columns step through the input by `step` and whose rows by 1. */
static void transpose_2d_cols(const void *arg, size_t begin, size_t end)
{
    const transpose_params *p = arg;
    const size_t rows = p->walk.dims[0], cols = p->walk.dims[1];
    const ptrdiff_t step = p->walk.stride[0][1];
    const size_t block = (size_t)step < BLOCK_FLOATS / 8 ? BLOCK_FLOATS / (size_t)step : 8;
    for (size_t c0 = begin; c0 < end; c0 += block) {
        const size_t n = end - c0 < block ? end - c0 : block;
        for (size_t r = 0; r < rows; r++) {
            const float *restrict x = p->x + (ptrdiff_t)c0 * step + (ptrdiff_t)r;
            float *restrict y = p->y + r * cols + c0;
            for (size_t i = 0; i < n; i++) y[i] = x[(ptrdiff_t)i * step];
        }
    }
}

static int is_2d_transpose(const graph_walk *w)
{
    return w->rank == 2 && w->stride[0][0] == 1 && w->stride[0][1] != 1;
}

static void transpose_run_of_row(const void *arg, size_t pos, const walk_cursor *c, size_t n)
{
    const transpose_params *p = arg;
    const ptrdiff_t step = p->walk.stride[0][p->walk.rank - 1];
    const float *restrict x = p->x + c->off[0];
    float *restrict y = p->y + pos;
    if (step == 1) memcpy(y, x, n * sizeof *y);
    else
        for (size_t i = 0; i < n; i++) y[i] = x[(ptrdiff_t)i * step];
}

static void transpose_rows(const void *arg, size_t begin, size_t end)
{
    const transpose_params *p = arg;
    walk_runs(&p->walk, begin, end, transpose_run_of_row, p);
}

/* The row function of p, its rows and floats per row. */
static graph_rows_fn transpose_split(const transpose_params *p, size_t *rows, size_t *floats)
{
    if (is_2d_transpose(&p->walk) && p->walk.dims[1] <= SHORT_ROW) {
        *rows = (size_t)p->walk.dims[0];
        *floats = (size_t)p->walk.dims[1];
        return transpose_2d_rows;
    }
    if (is_2d_transpose(&p->walk)) {
        *rows = (size_t)p->walk.dims[1];
        *floats = (size_t)p->walk.dims[0];
        return transpose_2d_cols;
    }
    *rows = p->count;
    *floats = 1;
    return transpose_rows;
}

static int transpose_run(const void *arg, const acl_exec *ex)
{
    size_t rows, floats;
    const graph_rows_fn fn = transpose_split(arg, &rows, &floats);
    return graph_parallel(ex, rows, floats, fn, arg);
}

/* The walk of out = transpose(x, perm) for x of dims in_dims. */
static void transpose_walk(graph_walk *w, int rank, const int *in_dims, const int *perm,
                           const int *out_dims)
{
    ptrdiff_t in_stride[ACL_MAX_RANK], stride[1][ACL_MAX_RANK];
    ptrdiff_t step = 1;
    for (int i = rank - 1; i >= 0; i--) {
        in_stride[i] = step;
        step *= in_dims[i];
    }
    for (int i = 0; i < rank; i++) stride[0][i] = in_stride[perm[i]];
    walk_init(w, rank, out_dims, 1, stride);
}

int acl_graph_import(acl_graph *g, const float *x, const int *perm, const acl_tensor *out)
{
    if (!g || !x) return acl_fail("import: no program or source given");
    size_t count;
    if (graph_check_tensor(g, "import", "output", out, &count) != 0 ||
        graph_check_perm("import", "perm", out->rank, perm) != 0)
        return -1;
    int in_dims[ACL_MAX_RANK];
    for (int i = 0; i < out->rank; i++) in_dims[perm[i]] = out->dims[i];
    transpose_params p = {.x = x, .y = graph_ptr(g, out), .count = count};
    transpose_walk(&p.walk, out->rank, in_dims, perm, out->dims);
    /* On the calling thread alone, while the workers wake up for the run: a
     * copy this size is bound by memory, not by cores (a 224x224 image took
     * as long on two threads, plus the wake-up when they slept). */
    acl_pool_wake(&g->ex);
    size_t rows, floats;
    transpose_split(&p, &rows, &floats)(&p, 0, rows);
    return 0;
}

int acl_graph_export(acl_graph *g, const acl_tensor *in, const int *perm, float *y)
{
    if (!g || !y) return acl_fail("export: no program or destination given");
    size_t count;
    if (graph_check_tensor(g, "export", "input", in, &count) != 0 ||
        graph_check_perm("export", "perm", in->rank, perm) != 0)
        return -1;
    int out_dims[ACL_MAX_RANK];
    for (int i = 0; i < in->rank; i++) out_dims[i] = in->dims[perm[i]];
    transpose_params p = {.x = graph_ptr(g, in), .y = y, .count = count};
    transpose_walk(&p.walk, in->rank, in->dims, perm, out_dims);
    /* On the program's cores, awake from the run before: a large output is
     * bound by memory, and two cores' worth of it copies faster than one
     * (LR-ASPP's 21x512x512 map: 1.3 ms on two threads, 2.2 ms on one); one
     * below the graph's grain stays on the caller.  In the program's
     * balance, as its runs: in the strict one, a worker descheduled in its
     * half held a 33K-float export for a whole time slice beside a busy
     * core (p90 3.4 ms, against 0.05 with the adaptive one's takeovers and
     * rescues).  The caller gets its own affinity back, as after a run:
     * threads it starts later inherit it (an onnxruntime session's pool,
     * confined to one core, ran 2x slower). */
    const acl_balance was = acl_set_balance(g->balance);
    const int rc = transpose_run(&p, &g->ex);
    acl_set_balance(was);
    acl_release_caller();
    return rc;
}

int graph_op_transpose(acl_graph *g, const acl_transpose_attrs *a, int nin, const acl_tensor *in,
                       const acl_tensor *out)
{
    const int *perm = a->perm;
    size_t count;
    if (graph_check_tensor(g, "transpose", "input", in, &count) != 0 ||
        graph_check_tensor(g, "transpose", "output", out, &count) != 0 ||
        graph_check_count("transpose", "perm", (size_t)a->perm_count, (size_t)in->rank) != 0)
        return -1;
    if (graph_check_perm("transpose", "perm", in->rank, perm) != 0) return -1;
    int want[ACL_MAX_RANK];
    for (int i = 0; i < in->rank; i++) want[i] = in->dims[perm[i]];
    if (graph_check_dims("transpose", "output", out, in->rank, want) != 0 ||
        graph_check_disjoint("transpose", out, "the input", in, 0) != 0)
        return -1;
    transpose_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("transpose: out of memory");
    *p = (transpose_params){.x = graph_ptr(g, in), .y = graph_ptr(g, out), .count = count};
    transpose_walk(&p->walk, in->rank, in->dims, perm, out->dims);
    return graph_add(g, transpose_run, NULL, p);
}

/* Every index that axis i reads, starts[i] + k * steps[i] for k below out's dim,
 * lies in [0, in's dim). */
static int check_slice(const acl_slice_attrs *a, const acl_tensor *in, const acl_tensor *out)
{
    char din[GRAPH_DIMS_LEN], dout[GRAPH_DIMS_LEN];
    if (out->rank != in->rank)
        return acl_fail("slice: output %s must have the input %s's rank",
                        graph_dims_str(out->rank, out->dims, dout),
                        graph_dims_str(in->rank, in->dims, din));
    if (graph_check_count("slice", "starts", (size_t)a->starts_count, (size_t)in->rank) != 0 ||
        graph_check_count("slice", "steps", (size_t)a->steps_count, (size_t)in->rank) != 0)
        return -1;
    for (int i = 0; i < in->rank; i++) {
        const long long start = a->starts[i], step = a->steps[i];
        const long long last = start + (long long)(out->dims[i] - 1) * step;
        if (step == 0) return acl_fail("slice: steps[%d] is 0", i);
        if (start < 0 || start >= in->dims[i] || last < 0 || last >= in->dims[i])
            return acl_fail("slice: axis %d reads indices %lld to %lld (step %lld) of the "
                            "input %s, which has %d",
                            i, start, last, step, graph_dims_str(in->rank, in->dims, din),
                            in->dims[i]);
    }
    return 0;
}

int graph_op_slice(acl_graph *g, const acl_slice_attrs *a, int nin, const acl_tensor *in,
                   const acl_tensor *out)
{
    size_t in_count, count;
    if (graph_check_tensor(g, "slice", "input", in, &in_count) != 0 ||
        graph_check_tensor(g, "slice", "output", out, &count) != 0 ||
        check_slice(a, in, out) != 0 || graph_check_disjoint("slice", out, "the input", in, 0) != 0)
        return -1;
    ptrdiff_t stride[1][ACL_MAX_RANK], step = 1, first = 0;
    for (int i = in->rank - 1; i >= 0; i--) {
        first += (ptrdiff_t)a->starts[i] * step;
        stride[0][i] = (ptrdiff_t)a->steps[i] * step;
        step *= in->dims[i];
    }
    transpose_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("slice: out of memory");
    *p = (transpose_params){.x = graph_ptr(g, in) + first, .y = graph_ptr(g, out), .count = count};
    walk_init(&p->walk, out->rank, out->dims, 1, stride);
    return graph_add(g, transpose_run, NULL, p);
}
