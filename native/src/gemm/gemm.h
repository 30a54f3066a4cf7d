/* The macro-kernel: one implementation of blocking, packing, edge tiles and
 * the threaded split, shared by every micro-kernel and every GEMM-based
 * convolution algorithm.
 *
 * The GEMM is C[M, N] = A[M, K] B[K, N] with K = ks * kc: A row m is made of
 * ks taps of kc contiguous floats each (ks == 1 for a plain matrix; ks ==
 * kh*kw for the indirect convolution, whose taps point into the input).
 */
#ifndef ACL_GEMM_H
#define ACL_GEMM_H

#include <stddef.h>

#include "pool.h"
#include "ukernel.h"

/* B packed once for one micro-kernel: ceil(N / NR) panels of K x NR floats. */
typedef struct {
    const acl_ukernel *uk;
    int ks, kc, n;
    float *data;
} acl_packed_b;

/* Packs B(k = t*kc + c, n) = src[n*stride_n + c*stride_c + t*stride_t].
 * OIHW conv weights of one group: stride_n = Cg*kh*kw, stride_c = kh*kw,
 * stride_t = 1.  A row-major K x N matrix: stride_n = 1, stride_c = ldb, ks = 1. */
int acl_pack_b(const acl_ukernel *uk, int ks, int kc, int n, const float *src, ptrdiff_t stride_n,
               ptrdiff_t stride_c, ptrdiff_t stride_t, acl_packed_b *out);
/* Floats of a K x N B packed for uk. */
size_t acl_packed_b_floats(const acl_ukernel *uk, int k, int n);
/* acl_pack_b's packing into `data` (acl_packed_b_floats of room), arguments
 * already valid: for a B that changes at every run, packed into scratch
 * without allocating. */
void acl_pack_b_into(const acl_ukernel *uk, int ks, int kc, int n, const float *src,
                     ptrdiff_t stride_n, ptrdiff_t stride_c, ptrdiff_t stride_t, float *data);
void acl_packed_b_free(acl_packed_b *b);

/* Where A's rows are.  Dense: tap t of row m is base + m*lda + t*kc.
 * Indirect: tap t of row m is rows[m*ks + t] + offset. */
typedef struct {
    const float *base;
    ptrdiff_t lda;
    const float *const *rows;  /* NULL for dense */
    ptrdiff_t offset;
} acl_a_source;

/* Fused epilogue applied to each finished tile: y = act(acc + bias + residual). */
typedef struct {
    const float *bias;      /* N floats or NULL */
    const float *residual;  /* laid out like C (same ldc) or NULL */
    int act;                /* enum acl_activation */
    float act_a, act_b;     /* its parameters, as acl_activate takes them */
} acl_epilogue;

/* One GEMM of a batch: Winograd runs alpha^2 of them, grouped convolutions
 * one per group. */
typedef struct {
    const acl_packed_b *b;
    acl_a_source a;
    int m;
    float *c;
    ptrdiff_t ldc;
    acl_epilogue ep;
    float *a_packed;  /* interleaved style only: room for acl_gemm_packed_a_floats() */
    int whole_k;      /* one call per tile and panel covers all of K: acl_gemm_whole_k() */
} acl_gemm_job;

/* Whether a whole GEMM of m rows should run each tile's K in one call (never
 * with an fp16 kernel, whose K blocks bound its half-precision sums): one
 * tile of rows (a batch-1 Gemm) reuses no B panel, so K blocks kept in L1
 * buy nothing, and a panel read whole is one stream instead of hops between
 * panels every K block (alexnet's fc6: 3.84 -> 3.19 ms).  Only for a job that
 * is the whole GEMM: the K blocks set the order of the sums, so a job cut by
 * the workers (im2col's blocks) must not switch with its block's size. */
int acl_gemm_whole_k(const acl_ukernel *uk, int m);

/* Floats of interleaved A panels needed for an M-row job (0 for hybrid). */
size_t acl_gemm_packed_a_floats(const acl_ukernel *uk, int m, int k);

/* The units a batch is cut into for `workloads`.  Work items are MR-row tiles
 * over the concatenated jobs; when there are fewer tiles than workloads (a
 * batch-1 fully connected layer has one), or B is much larger than A (a 1x1
 * convolution on 7x7), each tile's N panels are cut into `nsplit` chunks too
 * (as many as workloads), so that small-M GEMMs still spread over the cores
 * and read B once.  A unit is a range of items, a job's items taken chunk by
 * chunk. */
typedef struct {
    const acl_gemm_job *jobs;
    int njobs;
    int units;          /* min(workloads, items) */
    int tiles_total;
    int nsplit;         /* N chunks per tile, >= 1 */
} acl_gemm_batch;

int acl_gemm_batch_init(acl_gemm_batch *batch, const acl_gemm_job *jobs, int njobs, int workloads);

/* The two stages, each run on the pool with ex's split: interleaved packing of
 * A (a no-op for hybrid kernels) and the GEMM with its epilogue.  stage_ms
 * receives each stage's wall time. */
int acl_gemm_batch_pack_a(const acl_gemm_batch *batch, const acl_exec *ex, double *stage_ms);
int acl_gemm_batch_compute(const acl_gemm_batch *batch, const acl_exec *ex, double *stage_ms);

/* Runs one job whole on the calling thread (A interleaving, then every tile
 * and N panel), for callers that split the work over the pool themselves;
 * the job must already satisfy acl_ukernel_check.  Each output element sees
 * the same micro-kernel calls as under acl_gemm_batch_compute. */
void acl_gemm_job_run(const acl_gemm_job *job);

/* 0 if the micro-kernel can run a GEMM with this per-call K and N. */
int acl_ukernel_check(const acl_ukernel *uk, int k, int n);

#endif
