/* MatMul / Gemm nodes: out[M, N] = act(in[M, K] x B + bias) on the engine's
 * macro-kernel.  B is packed (once for every matmul of the graph with the
 * same B: shared_b.c), the bias copied and the A panels allocated at add
 * time; the bias and activation ride the GEMM's fused epilogue, so a run
 * allocates nothing and makes no second pass over the output. */
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "graph_impl.h"

typedef struct {
    const acl_packed_b *b;  /* the graph's (graph_shared_b) */
    float *bias;      /* N floats or NULL */
    float *a_packed;  /* interleaved micro-kernels only */
    acl_gemm_job job;
    acl_gemm_batch batch;
} matmul_params;

static int matmul_run(const void *arg, const acl_exec *ex)
{
    const matmul_params *p = arg;
    double pack_ms, gemm_ms;
    if (acl_gemm_batch_pack_a(&p->batch, ex, &pack_ms) != 0 ||
        acl_gemm_batch_compute(&p->batch, ex, &gemm_ms) != 0)
        return graph_fail_in("matmul");
    return 0;
}

static void matmul_release(void *arg)
{
    matmul_params *p = arg;
    acl_free(p->bias);
    acl_free(p->a_packed);
}

/* in is [..., K] and out [..., N] with the same leading dims. */
static int check_tensors(const acl_graph *g, int k, int n, const acl_tensor *in,
                         const acl_tensor *out, size_t *m)
{
    size_t count;
    if (graph_check_tensor(g, "matmul", "input", in, &count) != 0 ||
        graph_check_tensor(g, "matmul", "output", out, m) != 0)
        return -1;
    if (in->rank < 1 || in->dims[in->rank - 1] != k) {
        char dims[GRAPH_DIMS_LEN];
        return acl_fail("matmul: input has dims %s but its innermost dim must be K = %d",
                        graph_dims_str(in->rank, in->dims, dims), k);
    }
    int want[ACL_MAX_RANK];
    memcpy(want, in->dims, sizeof want);
    want[in->rank - 1] = n;
    if (graph_check_dims("matmul", "output", out, in->rank, want) != 0 ||
        graph_check_disjoint("matmul", out, "the input", in, 0) != 0)
        return -1;
    *m = count / (size_t)k;
    return 0;
}

int graph_op_matmul(acl_graph *g, const acl_matmul_attrs *a, int nin, const acl_tensor *in,
                    const acl_tensor *out)
{
    const char *ukernel = a->ukernel;
    const int k = a->k, n = a->n, b_transposed = a->b_transposed;
    const float *b = a->b, *bias = a->bias;
    if (k < 1 || n < 1) return acl_fail("matmul: k and n must be >= 1, got %d and %d", k, n);
    if (a->act < 0 || a->act >= ACL_ACT_COUNT)
        return acl_fail("matmul: unknown activation %d (0 to %d)", a->act, ACL_ACT_COUNT - 1);
    if (graph_check_count("matmul", "b", a->b_count, (size_t)k * (size_t)n) != 0 ||
        (bias && graph_check_count("matmul", "bias", a->bias_count, (size_t)n) != 0))
        return -1;
    const acl_ukernel *uk = acl_ukernel_find(ukernel);
    if (!uk)
        return acl_fail("matmul: unknown micro-kernel '%s' on this machine",
                        ukernel ? ukernel : "");
    if (uk->fp16_fn) return acl_fail("matmul computes in fp32 only, %s in fp16", uk->name);
    size_t m;
    if (acl_ukernel_check(uk, k, n) != 0) return graph_fail_in("matmul");
    if (check_tensors(g, k, n, in, out, &m) != 0) return -1;
    matmul_params *p = calloc(1, sizeof *p);
    if (!p) return acl_fail("matmul: out of memory");
    const size_t a_floats = acl_gemm_packed_a_floats(uk, (int)m, k);
    /* Packed straight from either layout: no transposed copy of a large B. */
    p->b =
        b_transposed ? graph_shared_b(g, uk, k, n, b, k, 1) : graph_shared_b(g, uk, k, n, b, 1, n);
    int rc = p->b ? 0 : -1;
    if (rc == 0 && bias && !(p->bias = acl_alloc((size_t)n * sizeof(float)))) rc = -1;
    if (rc == 0 && a_floats && !(p->a_packed = acl_alloc(a_floats * sizeof(float)))) rc = -1;
    if (rc == 0) {
        if (bias) memcpy(p->bias, bias, (size_t)n * sizeof(float));
        p->job = (acl_gemm_job){
            .b = p->b,
            .a = {.base = graph_ptr(g, in), .lda = k},
            .m = (int)m,
            .c = graph_ptr(g, out),
            .ldc = n,
            .ep = {.bias = p->bias, .act = a->act, .act_a = a->act_a, .act_b = a->act_b},
            .a_packed = p->a_packed,
            .whole_k = acl_gemm_whole_k(uk, (int)m),
        };
        /* The batch points at p->job: params never move once allocated. */
        rc = acl_gemm_batch_init(&p->batch, &p->job, 1, g->ex.workloads);
    }
    if (rc != 0) {
        graph_fail_in("matmul");
        matmul_release(p);
        free(p);
        return -1;
    }
    return graph_add(g, matmul_run, matmul_release, p);
}
