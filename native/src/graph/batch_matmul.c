/* Batched MatMul of two tensors of the program, on the engine's macro-kernel.
 * B changes at every run, so each run packs every distinct B matrix into the
 * program's workspace first (split over the cores by matrix), then spreads
 * the output's MR-row tiles, all batches together, over the cores; a core's
 * run of tiles within one batch is one GEMM job.  Tiles start at multiples of
 * MR whatever the split, so every output element sees the same micro-kernel
 * calls under every split.  Where every batch has a B of its own and the
 * batches split evenly over the cores, a core packs and multiplies whole
 * batches instead, in one job (EfficientFormer's 8 heads of 49x49 by 49x128:
 * 0.047 -> 0.040 ms on two cores).
 *
 * The tensors are read through strides: B while it is packed, A's and C's
 * rows through lda and ldc, the batches through a stride per batch axis (0
 * where broadcast).  So a tensor held transposed costs no copy. */
#include <stdlib.h>

#include "gemm.h"
#include "graph_impl.h"

#define OP "batch_matmul"

/* A tensor's matrices: its logical (ONNX) dims and strides in its buffer. */
typedef struct {
    const char *name;
    int dims[ACL_MAX_RANK];
    ptrdiff_t stride[ACL_MAX_RANK];
} operand;

typedef struct {
    const acl_graph *g;  /* for its workspace, which grows as nodes are added */
    const acl_ukernel *uk;
    const float *a, *b;
    float *c;
    int m, k, n;
    int tiles;           /* MR-row tiles per batch */
    int batch_rank;      /* rank - 2 */
    int batch_dims[ACL_MAX_RANK];  /* out's */
    /* Per out batch axis: the step of A's and C's offsets and of the packed B
     * matrix's index (0 where broadcast). */
    ptrdiff_t a_step[ACL_MAX_RANK], c_step[ACL_MAX_RANK], b_index_step[ACL_MAX_RANK];
    size_t batches, b_count;      /* out's batches, distinct B matrices */
    int b_dims[ACL_MAX_RANK];      /* B's batch dims, and their strides */
    ptrdiff_t b_step[ACL_MAX_RANK];
    ptrdiff_t lda, ldc, b_stride_k, b_stride_n;
    size_t b_floats;   /* one packed B in the workspace, rounded up to ACL_ALIGN bytes */
    float scale;       /* of the product, taken into packed B; 1: none */
    size_t a_packed;   /* where interleaved A panels start in the workspace (after the
                        * packed Bs, so never 0); 0: a kernel that reads A in place */
} bmm_params;

/* Sum of index's coordinates (row-major over dims) times their steps. */
static ptrdiff_t batch_offset(int rank, const int *dims, const ptrdiff_t *step, size_t index)
{
    ptrdiff_t off = 0;
    for (int i = rank - 1; i >= 0; i--) {
        off += (ptrdiff_t)(index % (size_t)dims[i]) * step[i];
        index /= (size_t)dims[i];
    }
    return off;
}

static void pack_matrices(const void *arg, size_t begin, size_t end)
{
    const bmm_params *p = arg;
    float *ws = p->g->workspace;
    const size_t packed = acl_packed_b_floats(p->uk, p->k, p->n);
    for (size_t j = begin; j < end; j++) {
        float *b = ws + j * p->b_floats;
        acl_pack_b_into(p->uk, 1, p->k, p->n,
                        p->b + batch_offset(p->batch_rank, p->b_dims, p->b_step, j), p->b_stride_n,
                        p->b_stride_k, 0, b);
        /* Here, on B in cache just packed (K x N floats), rather than by a Mul
         * that reads and writes the whole product again: an attention's
         * scores are M x N with M = 49 to 256 rows against K = 16 to 64
         * (MobileViT's 4 MB of scores, 0.08 to 0.16 ms a Mul). */
        if (p->scale != 1.0f)
            for (size_t i = 0; i < packed; i++) b[i] *= p->scale;
    }
}

/* Tiles [begin, end) of all batches: one job per batch they cover. */
static void compute_tiles(const void *arg, size_t begin, size_t end)
{
    const bmm_params *p = arg;
    float *ws = p->g->workspace;
    const int mr = p->uk->mr;
    for (size_t t = begin; t < end;) {
        const size_t batch = t / (size_t)p->tiles;
        const int t0 = (int)(t % (size_t)p->tiles);
        const int t1 = (size_t)(p->tiles - t0) < end - t ? p->tiles : t0 + (int)(end - t);
        const size_t matrix =
            (size_t)batch_offset(p->batch_rank, p->batch_dims, p->b_index_step, batch);
        const acl_packed_b b = {p->uk, 1, p->k, p->n, ws + matrix * p->b_floats};
        const ptrdiff_t row0 = (ptrdiff_t)t0 * mr;
        const acl_gemm_job job = {
            .b = &b,
            .a = {.base = p->a + batch_offset(p->batch_rank, p->batch_dims, p->a_step, batch) +
                          row0 * p->lda,
                  .lda = p->lda},
            .m = acl_min(p->m - (int)row0, (t1 - t0) * mr),
            .c =
                p->c + batch_offset(p->batch_rank, p->batch_dims, p->c_step, batch) + row0 * p->ldc,
            .ldc = p->ldc,
            .ep = {.act = ACL_ACT_NONE},
            .a_packed = p->a_packed ? ws + p->a_packed + t * (size_t)mr * p->k : NULL,
        };
        acl_gemm_job_run(&job);
        t += (size_t)(t1 - t0);
    }
}

/* Whole batches [begin, end), each packing its own B and computing all its
 * tiles: the same micro-kernel calls as tile by tile. */
static void whole_batches(const void *arg, size_t begin, size_t end)
{
    const bmm_params *p = arg;
    pack_matrices(p, begin, end);
    compute_tiles(p, begin * (size_t)p->tiles, end * (size_t)p->tiles);
}

/* Whether the batches split evenly over the cores taking a share, each with
 * a B of its own: then each core packs the Bs it multiplies by, in one job
 * rather than all Bs first and the tiles after, a second wait on every core
 * (an attention's heads: 8 or 16 small products). */
static int by_batch(const bmm_params *p, const acl_exec *ex)
{
    size_t active = 0;
    for (int i = 0; i < ex->ncores; i++) active += ex->weights[i] > 0;
    return p->b_count == p->batches && active > 0 && p->batches % active == 0;
}

static int bmm_run(const void *arg, const acl_exec *ex)
{
    const bmm_params *p = arg;
    const size_t mr = (size_t)p->uk->mr;
    /* A tile reads MR rows of A and B's panels, and writes MR rows of C. */
    const size_t tile_floats = mr * (size_t)p->k + (size_t)p->k * p->n + mr * p->n;
    const int rc =
        by_batch(p, ex)
            ? graph_parallel(ex, p->batches, (size_t)p->tiles * tile_floats, whole_batches, p)
            : graph_parallel(ex, p->b_count, (size_t)p->k * p->n, pack_matrices, p) ||
                  graph_parallel(ex, p->batches * (size_t)p->tiles, tile_floats, compute_tiles, p);
    return rc ? graph_fail_in(OP) : 0;
}

/* t's logical dims and strides: t holds the stack transposed by perm (NULL:
 * in order), so logical axis perm[i] is t's axis i. */
static int make_operand(const acl_graph *g, const char *name, const char *attr, const int *perm,
                        int perm_count, const acl_tensor *t, int rank, operand *o)
{
    size_t count;
    char dims[GRAPH_DIMS_LEN];
    if (graph_check_tensor(g, OP, name, t, &count) != 0) return -1;
    if (t->rank != rank)
        return acl_fail(OP ": %s has dims %s but must have the output's rank %d", name,
                        graph_dims_str(t->rank, t->dims, dims), rank);
    if (perm_count != 0 && (graph_check_count(OP, attr, (size_t)perm_count, (size_t)rank) != 0 ||
                            graph_check_perm(OP, attr, rank, perm) != 0))
        return -1;
    o->name = name;
    ptrdiff_t step = 1;
    for (int i = rank - 1; i >= 0; i--) {
        const int axis = perm_count ? perm[i] : i;
        o->dims[axis] = t->dims[i];
        o->stride[axis] = step;
        step *= t->dims[i];
    }
    return 0;
}

/* Axis `axis` of o is innermost (or of size 1): its rows are contiguous. */
static int check_contiguous(const operand *o, int axis, const char *what)
{
    if (o->dims[axis] == 1 || o->stride[axis] == 1) return 0;
    return acl_fail(OP ": %s's %s axis must be innermost in its layout", o->name, what);
}

/* a [.., M, K] x b [.., K, N] -> out [.., M, N], batch dims broadcast. */
static int check_shapes(int rank, const operand *a, const operand *b, const operand *out)
{
    char da[GRAPH_DIMS_LEN], db[GRAPH_DIMS_LEN], dout[GRAPH_DIMS_LEN];
    const int m = rank - 2, k = rank - 1;
    int ok = a->dims[k] == b->dims[m] && out->dims[m] == a->dims[m] && out->dims[k] == b->dims[k];
    for (int i = 0; ok && i < m; i++)
        ok = (a->dims[i] == out->dims[i] || a->dims[i] == 1) &&
             (b->dims[i] == out->dims[i] || b->dims[i] == 1) &&
             out->dims[i] == (a->dims[i] > b->dims[i] ? a->dims[i] : b->dims[i]);
    if (ok) return 0;
    return acl_fail(OP ": a %s times b %s does not give the output's %s (numpy matmul of "
                       "equal ranks; the dims with their perms undone)",
                    graph_dims_str(rank, a->dims, da), graph_dims_str(rank, b->dims, db),
                    graph_dims_str(rank, out->dims, dout));
}

/* The batch walk: out's batch dims, A's and C's offset steps, B's matrices. */
static void batch_steps(bmm_params *p, const operand *a, const operand *b, const operand *out)
{
    size_t b_index = 1;
    p->batches = 1;
    for (int i = p->batch_rank - 1; i >= 0; i--) {
        p->batch_dims[i] = out->dims[i];
        p->a_step[i] = a->dims[i] == 1 ? 0 : a->stride[i];
        p->c_step[i] = out->stride[i];
        p->b_dims[i] = b->dims[i];
        p->b_step[i] = b->stride[i];
        p->b_index_step[i] = b->dims[i] == 1 ? 0 : (ptrdiff_t)b_index;
        b_index *= (size_t)b->dims[i];
        p->batches *= (size_t)out->dims[i];
    }
    p->b_count = b_index;
}

int graph_op_batch_matmul(acl_graph *g, const acl_batch_matmul_attrs *attrs, int nin,
                          const acl_tensor *ins, const acl_tensor *out)
{
    size_t count;
    if (graph_check_tensor(g, OP, "output", out, &count) != 0) return -1;
    const int rank = out->rank;
    if (rank < 2) return acl_fail(OP ": the output has rank %d; it must be at least 2", rank);
    operand a, b, c;
    if (make_operand(g, "a", "a_perm", attrs->a_perm, attrs->a_perm_count, &ins[0], rank, &a) !=
            0 ||
        make_operand(g, "b", "b_perm", attrs->b_perm, attrs->b_perm_count, &ins[1], rank, &b) !=
            0 ||
        make_operand(g, "output", "out_perm", attrs->out_perm, attrs->out_perm_count, out, rank,
                     &c) != 0 ||
        check_shapes(rank, &a, &b, &c) != 0 || check_contiguous(&a, rank - 1, "K") != 0 ||
        check_contiguous(&c, rank - 1, "N") != 0 ||
        graph_check_disjoint(OP, out, "a", &ins[0], 0) != 0 ||
        graph_check_disjoint(OP, out, "b", &ins[1], 0) != 0)
        return -1;
    const int m = a.dims[rank - 2], k = a.dims[rank - 1], n = b.dims[rank - 1];
    const acl_ukernel *uk = acl_ukernel_find(attrs->ukernel);
    if (!uk)
        return acl_fail(OP ": unknown micro-kernel '%s' on this machine",
                        attrs->ukernel ? attrs->ukernel : "");
    if (uk->fp16_fn) return acl_fail(OP " computes in fp32 only, %s in fp16", uk->name);
    if (acl_ukernel_check(uk, k, n) != 0) return graph_fail_in(OP);
    bmm_params *p = malloc(sizeof *p);
    if (!p) return acl_fail(OP ": out of memory");
    *p = (bmm_params){
        .g = g,
        .uk = uk,
        .a = graph_ptr(g, &ins[0]),
        .b = graph_ptr(g, &ins[1]),
        .c = graph_ptr(g, out),
        .m = m,
        .k = k,
        .n = n,
        .tiles = acl_div_up(m, uk->mr),
        .batch_rank = rank - 2,
        .lda = a.stride[rank - 2],
        .ldc = c.stride[rank - 2],
        .b_stride_k = b.stride[rank - 2],
        .b_stride_n = b.stride[rank - 1],
        .scale = attrs->scale != 0.0f ? attrs->scale : 1.0f,
    };
    batch_steps(p, &a, &b, &c);
    const size_t align = ACL_ALIGN / sizeof(float);
    p->b_floats = (acl_packed_b_floats(uk, k, n) + align - 1) / align * align;
    size_t floats = p->b_count * p->b_floats;
    if (uk->style == ACL_STYLE_INTERLEAVED) {
        p->a_packed = floats;
        floats += p->batches * acl_gemm_packed_a_floats(uk, m, k);
    }
    if (graph_workspace_reserve(g, floats * sizeof(float)) != 0) {
        free(p);
        return -1;
    }
    return graph_add(g, bmm_run, NULL, p);
}
