/* The public plain-matrix GEMM (aclengine.h) on top of the macro-kernel. */
#include <stdlib.h>

#include "gemm.h"
#include "internal.h"

struct acl_gemm {
    acl_packed_b b;
    /* Interleaved A panels, grown to the largest M run so far and kept, so a
     * repeated run does not pay for fresh pages in its packing stage. */
    float *a_packed;
    size_t a_packed_floats;
};

int acl_gemm_create(const char *ukernel, int k, int n, const float *b, int ldb, acl_gemm **out)
{
    if (!out) return acl_fail("acl_gemm_create: no output pointer");
    *out = NULL;
    const acl_ukernel *uk = acl_ukernel_find(ukernel);
    if (!uk) return acl_fail("unknown micro-kernel '%s' on this machine", ukernel ? ukernel : "");
    if (acl_ukernel_check(uk, k, n) != 0) return -1;
    if (!b || ldb < n) return acl_fail("acl_gemm_create: no B or ldb %d < N %d", ldb, n);
    acl_gemm *g = calloc(1, sizeof *g);
    if (!g) return acl_fail("out of memory");
    if (acl_pack_b(uk, 1, k, n, b, 1, ldb, 0, &g->b) != 0) {
        free(g);
        return -1;
    }
    *out = g;
    return 0;
}

static int reserve_a_packed(acl_gemm *g, int m)
{
    const size_t need = acl_gemm_packed_a_floats(g->b.uk, m, g->b.kc);
    if (need <= g->a_packed_floats) return 0;
    float *p = acl_alloc(need * sizeof(float));
    if (!p) return -1;
    acl_free(g->a_packed);
    g->a_packed = p;
    g->a_packed_floats = need;
    return 0;
}

int acl_gemm_run(acl_gemm *g, const acl_exec *ex, int m, const float *a, int lda, float *c, int ldc,
                 acl_stage_times *times)
{
    const double start = acl_now_ms();
    if (!g) return acl_fail("acl_gemm_run: no GEMM");
    if (m < 0 || (m > 0 && (!a || !c))) return acl_fail("acl_gemm_run: M = %d needs A and C", m);
    if (lda < g->b.kc || ldc < g->b.n)
        return acl_fail("acl_gemm_run: lda %d < K %d or ldc %d < N %d", lda, g->b.kc, ldc, g->b.n);
    if (acl_exec_check(ex) != 0) return -1;
    if (reserve_a_packed(g, m) != 0) return -1;

    const acl_gemm_job job = {
        .b = &g->b,
        .a = {.base = a, .lda = lda},
        .m = m,
        .c = c,
        .ldc = ldc,
        .a_packed = g->a_packed,
        .whole_k = acl_gemm_whole_k(g->b.uk, m),
    };
    acl_gemm_batch batch;
    acl_stage_times t = {0};
    if (acl_gemm_batch_init(&batch, &job, 1, ex->workloads) != 0) return -1;
    if (acl_gemm_batch_pack_a(&batch, ex, &t.pre_ms) != 0) return -1;
    if (acl_gemm_batch_compute(&batch, ex, &t.gemm_ms) != 0) return -1;
    t.total_ms = acl_now_ms() - start;
    if (times) *times = t;
    return 0;
}

void acl_gemm_destroy(acl_gemm *g)
{
    if (!g) return;
    acl_packed_b_free(&g->b);
    acl_free(g->a_packed);
    free(g);
}
