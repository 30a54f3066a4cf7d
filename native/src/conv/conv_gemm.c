/* A batch of equally shaped GEMMs for one convolution: per-group jobs for
 * im2col / gemm1x1 / indirect, per-(point, group) jobs for Winograd. */
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"

int conv_gemm_create(conv_gemm *g, acl_conv *conv, int njobs, int m, int ks, int kc, int n)
{
    const acl_ukernel *uk = conv->uk;
    g->uk = uk;
    g->njobs = njobs;
    g->ks = ks;
    g->kc = kc;
    g->n = n;
    g->b = calloc((size_t)njobs, sizeof *g->b);
    g->jobs = calloc((size_t)njobs, sizeof *g->jobs);
    if (!g->b || !g->jobs) return acl_fail("out of memory creating %d GEMM jobs", njobs);
    /* Rounded so every job's panels start on a cache line. */
    size_t panel = acl_gemm_packed_a_floats(uk, m, ks * kc);
    g->panel_floats = (panel + ACL_ALIGN / sizeof(float) - 1) / (ACL_ALIGN / sizeof(float)) *
                      (ACL_ALIGN / sizeof(float));
    if (g->panel_floats)
        g->a_packed_at =
            conv_scratch_reserve(conv, g->panel_floats * (size_t)njobs * sizeof(float));
    for (int j = 0; j < njobs; j++) {
        g->jobs[j].b = &g->b[j];
        g->jobs[j].m = m;
    }
    return 0;
}

int conv_gemm_pack(conv_gemm *g, int j, const float *src, ptrdiff_t stride_n, ptrdiff_t stride_c,
                   ptrdiff_t stride_t)
{
    return acl_pack_b(g->uk, g->ks, g->kc, g->n, src, stride_n, stride_c, stride_t, &g->b[j]);
}

acl_epilogue conv_gemm_epilogue(const acl_conv *conv, ptrdiff_t col, const float *residual)
{
    float act_a, act_b;
    acl_conv_act_params(&conv->s, &act_a, &act_b);
    return (acl_epilogue){
        .bias = conv->bias + col,
        .residual = residual,
        .act = conv->s.act,
        .act_a = act_a,
        .act_b = act_b,
    };
}

void conv_gemm_group_outputs(conv_gemm *g, const acl_conv *conv, const conv_io *io)
{
    for (int grp = 0; grp < g->njobs; grp++) {
        ptrdiff_t col = (ptrdiff_t)grp * conv->d.ocg;
        acl_gemm_job *job = &g->jobs[grp];
        job->c = io->y + col;
        job->ldc = conv->s.oc;
        job->ep = conv_gemm_epilogue(conv, col, io->residual ? io->residual + col : NULL);
    }
}

int conv_gemm_run(conv_gemm *g, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    if (g->panel_floats) {
        float *panels = conv_scratch_at(io, g->a_packed_at);
        for (int j = 0; j < g->njobs; j++)
            g->jobs[j].a_packed = panels + g->panel_floats * (size_t)j;
    }
    acl_gemm_batch batch;
    if (acl_gemm_batch_init(&batch, g->jobs, g->njobs, ex->workloads) != 0) return -1;
    double ms = 0;
    if (acl_gemm_batch_pack_a(&batch, ex, &ms) != 0) return -1;
    t->pre_ms += ms;
    ms = 0;
    if (acl_gemm_batch_compute(&batch, ex, &ms) != 0) return -1;
    t->gemm_ms += ms;
    return 0;
}

void conv_gemm_destroy(conv_gemm *g)
{
    for (int j = 0; g->b && j < g->njobs; j++)
        if (g->b[j].data) acl_packed_b_free(&g->b[j]);
    free(g->b);
    free(g->jobs);
}
