/* The macro-kernel (see gemm.h): B packing, A interleaving, blocking, edge
 * tiles, the fused epilogue and the split of a batch into units.
 *
 * A unit is a range of MR-row tiles and a tile's K loop never leaves the
 * thread that owns it, so every output element sees the same sequence of
 * micro-kernel calls whatever the core weights and workloads are.
 */
#include "gemm.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "activation.h"
#include "internal.h"

/* K block of one micro-kernel call: a KC x NR slice of a B panel (32 KB for
 * NR = 32) stays in L1 while a row block of A streams past it. */
#define KC_TARGET 256
/* Rows of A per row block, reused from L2 across all N panels
 * (MC_ROWS x KC_TARGET floats = 128 KB). */
#define MC_ROWS 128
/* A batch whose B is this many times A's size or more is cut by N, not by
 * rows: each unit reads its own chunk of B once and all of A, the small
 * operand, again.  Cut by rows, every thread streamed all of B, and the
 * rows rarely split evenly: ResNeXt's 1024 -> 2048 1x1 on 7x7 (M = 49, B
 * 8 MB) took 0.72 ms, and 0.63 ms cut by N. */
#define B_OVER_A 4
/* K blocks are rounded to this so NEON kernels load A four floats at a time. */
#define K_GRAIN 4

static int job_k(const acl_gemm_job *job) { return job->b->ks * job->b->kc; }

/* Bytes of one packed operand value: a float, or an fp16 kernel's half. */
static size_t packed_bytes(const acl_ukernel *uk) { return uk->fp16_fn ? 2 : sizeof(float); }

/* Floats of room for `values` packed values of uk. */
static size_t packed_room(const acl_ukernel *uk, size_t values)
{
    return (values * packed_bytes(uk) + sizeof(float) - 1) / sizeof(float);
}

/* Packed value `at` of an operand packed for uk. */
static const void *packed_at(const acl_ukernel *uk, const float *data, size_t at)
{
    return (const char *)data + at * packed_bytes(uk);
}

/* Stores src[j * step] for j < count as uk packs them (floats, or halves
 * for an fp16 kernel: where its operands are rounded), then zeros up to
 * `width`.  src[r][c] for r < count when `rows` (A's column c). */
static void pack_values(const acl_ukernel *uk, void *dst, const float *src, ptrdiff_t step,
                        const float *const *rows, int c, int count, int width)
{
#define PACK_VALUES(type)                                                          \
    do {                                                                           \
        type *d = dst;                                                             \
        if (rows) for (int j = 0; j < count; j++) d[j] = (type)rows[j][c];         \
        else for (int j = 0; j < count; j++) d[j] = (type)src[j * step];           \
        for (int j = count; j < width; j++) d[j] = 0;                              \
    } while (0)
    if (uk->fp16_fn) PACK_VALUES(_Float16);
    else PACK_VALUES(float);
#undef PACK_VALUES
}

static int job_tiles(const acl_gemm_job *job) { return acl_div_up(job->m, job->b->uk->mr); }

/* A row is read as `count` segments of `len` contiguous floats: the taps of an
 * indirect A, or the whole row of a dense one. */
typedef struct {
    int count, len;
} k_segments;

static k_segments a_segments(const acl_gemm_job *job)
{
    if (job->a.rows) return (k_segments){job->b->ks, job->b->kc};
    return (k_segments){1, job_k(job)};
}

/* The K runs one micro-kernel call walks: packed A is one contiguous run
 * whatever the source was.  Their length is the K a kernel's bounds apply to. */
static k_segments call_segments(const acl_gemm_job *job)
{
    if (job->b->uk->style == ACL_STYLE_INTERLEAVED) return (k_segments){1, job_k(job)};
    return a_segments(job);
}

/* Start of segment seg of A row `row` (a dense row has only segment 0). */
static const float *a_segment(const acl_gemm_job *job, int row, int seg)
{
    const acl_a_source *a = &job->a;
    if (a->rows) return a->rows[(size_t)row * job->b->ks + seg] + a->offset;
    return a->base + row * a->lda;
}

double acl_fp16_error_bound(int k) { return 1.5 * (acl_min(k, KC_TARGET) + 2) * 0x1p-11; }

/* Never for an fp16 kernel: its half-precision sums (their error,
 * acl_fp16_error_bound, and fp16's range) stay within a K block of
 * KC_TARGET, fp32 adding the blocks. */
int acl_gemm_whole_k(const acl_ukernel *uk, int m) { return m <= uk->mr && !uk->fp16_fn; }

size_t acl_gemm_packed_a_floats(const acl_ukernel *uk, int m, int k)
{
    if (uk->style != ACL_STYLE_INTERLEAVED || m <= 0 || k <= 0) return 0;
    return packed_room(uk, (size_t)acl_div_up(m, uk->mr) * uk->mr * k);
}

int acl_ukernel_check(const acl_ukernel *uk, int k, int n)
{
    if (!uk) return acl_fail("no micro-kernel given");
    if (k < 1 || n < 1) return acl_fail("GEMM needs K >= 1 and N >= 1, got K = %d, N = %d", k, n);
    if (k <= uk->kmin || (uk->kmax && k > uk->kmax))
        return acl_fail("micro-kernel %s needs %d < K <= %d, got K = %d", uk->name, uk->kmin,
                        uk->kmax, k);
    if (n % uk->n_multiple)
        return acl_fail("micro-kernel %s needs N to be a multiple of %d, got N = %d", uk->name,
                        uk->n_multiple, n);
    return 0;
}

size_t acl_packed_b_floats(const acl_ukernel *uk, int k, int n)
{
    return packed_room(uk, (size_t)acl_div_up(n, uk->nr) * (size_t)k * (size_t)uk->nr);
}

void acl_pack_b_into(const acl_ukernel *uk, int ks, int kc, int n, const float *src,
                     ptrdiff_t stride_n, ptrdiff_t stride_c, ptrdiff_t stride_t, float *data)
{
    const int k = ks * kc, nr = uk->nr, panels = acl_div_up(n, nr);
    for (int p = 0; p < panels; p++) {
        const int cols = acl_min(nr, n - p * nr);
        for (int t = 0; t < ks; t++)
            for (int c = 0; c < kc; c++)
                pack_values(uk,
                            (void *)packed_at(uk, data, ((size_t)p * k + (size_t)t * kc + c) * nr),
                            src + c * stride_c + t * stride_t + p * nr * stride_n, stride_n, NULL,
                            0, cols, nr);
    }
}

int acl_pack_b(const acl_ukernel *uk, int ks, int kc, int n, const float *src, ptrdiff_t stride_n,
               ptrdiff_t stride_c, ptrdiff_t stride_t, acl_packed_b *out)
{
    if (!uk || !src || !out) return acl_fail("acl_pack_b: missing micro-kernel, source or output");
    if (ks < 1 || kc < 1 || n < 1 || (long long)ks * kc > INT_MAX)
        return acl_fail("acl_pack_b: bad B shape ks = %d, kc = %d, n = %d", ks, kc, n);
    float *data = acl_alloc(acl_packed_b_floats(uk, ks * kc, n) * sizeof(float));
    if (!data) return -1;
    acl_pack_b_into(uk, ks, kc, n, src, stride_n, stride_c, stride_t, data);
    *out = (acl_packed_b){.uk = uk, .ks = ks, .kc = kc, .n = n, .data = data};
    return 0;
}

void acl_packed_b_free(acl_packed_b *b)
{
    if (!b) return;
    acl_free(b->data);
    b->data = NULL;
}

int acl_gemm_batch_init(acl_gemm_batch *batch, const acl_gemm_job *jobs, int njobs, int workloads)
{
    if (workloads < 1) return acl_fail("workloads must be >= 1, got %d", workloads);
    if (njobs < 0 || (njobs > 0 && !jobs)) return acl_fail("GEMM batch has no jobs");
    const acl_ukernel *uk = NULL;
    long long tiles = 0;
    double a_floats = 0, b_floats = 0;
    int min_panels = INT_MAX;
    for (int j = 0; j < njobs; j++) {
        const acl_gemm_job *job = &jobs[j];
        if (!job->b || !job->b->uk || !job->b->data)
            return acl_fail("GEMM job %d has no packed B", j);
        if (uk && job->b->uk != uk)
            return acl_fail("GEMM job %d uses %s, job 0 uses %s: a batch shares one micro-kernel",
                            j, job->b->uk->name, uk->name);
        uk = job->b->uk;
        if (acl_ukernel_check(uk, call_segments(job).len, job->b->n) != 0) return -1;
        if (job->m < 0) return acl_fail("GEMM job %d has M = %d", j, job->m);
        if (job->m == 0) continue;
        if (!job->c || job->ldc < job->b->n)
            return acl_fail("GEMM job %d: no C or ldc %td < N %d", j, job->ldc, job->b->n);
        if (!job->a.rows && !job->a.base) return acl_fail("GEMM job %d has no A", j);
        if (uk->style == ACL_STYLE_INTERLEAVED && !job->a_packed)
            return acl_fail("GEMM job %d: %s needs an A packing buffer", j, uk->name);
        tiles += job_tiles(job);
        a_floats += (double)job->m * job_k(job);
        b_floats += (double)job_k(job) * job->b->n;
        min_panels = acl_min(min_panels, acl_div_up(job->b->n, uk->nr));
    }
    if (tiles > INT_MAX) return acl_fail("GEMM batch too large: %lld tiles", tiles);
    /* Fewer tiles than workloads, or a B much larger than A (B_OVER_A): N is
     * cut into as many chunks as workloads (as the panels allow), so that a
     * unit is one chunk of B for every tile (for_unit_items) and B, the large
     * operand, is read once: cut into workloads / tiles chunks, each unit was
     * one tile of a chunk, and every chunk was read once per tile (a 32 x 1024
     * x 8210 vocabulary projection read its 34 MB B four times). */
    const int nsplit = tiles > 0 && (tiles < workloads || B_OVER_A * a_floats <= b_floats)
                           ? acl_min(workloads, min_panels)
                           : 1;
    const long long items = tiles * nsplit;
    *batch = (acl_gemm_batch){
        .jobs = jobs,
        .njobs = njobs,
        .units = (int)(items < workloads ? items : workloads),
        .tiles_total = (int)tiles,
        .nsplit = nsplit,
    };
    return 0;
}

/* ---- A interleaving ---------------------------------------------------- */

/* Packs tiles [t0, t1) of a job into [K][MR] panels, rows past M zeroed. */
static void pack_job_tiles(const acl_gemm_job *job, int t0, int t1)
{
    const acl_ukernel *uk = job->b->uk;
    const int k = job_k(job), mr = uk->mr;
    const k_segments seg = a_segments(job);
    for (int t = t0; t < t1; t++) {
        const int row0 = t * mr, rows = acl_min(mr, job->m - row0);
        for (int s = 0; s < seg.count; s++) {
            const float *src[ACL_UKR_MAX_MR];
            for (int r = 0; r < rows; r++) src[r] = a_segment(job, row0 + r, s);
            const size_t at = ((size_t)t * k + (size_t)s * seg.len) * mr;
            /* Column by column: contiguous writes, one read stream per row. */
            for (int c = 0; c < seg.len; c++)
                pack_values(uk, (void *)packed_at(uk, job->a_packed, at + (size_t)c * mr), NULL, 0,
                            src, c, rows, mr);
        }
    }
}

/* ---- compute ----------------------------------------------------------- */

static void apply_epilogue(const acl_epilogue *ep, float *c, ptrdiff_t ldc, int row0, int col0,
                           int rows, int cols)
{
    if (ep->bias)
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < cols; j++) c[r * ldc + j] += ep->bias[col0 + j];
    if (ep->residual) {
        const float *res = ep->residual + row0 * ldc + col0;
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < cols; j++) c[r * ldc + j] += res[r * ldc + j];
    }
    if (ep->act != ACL_ACT_NONE)
        for (int r = 0; r < rows; r++)
            acl_activate(ep->act, ep->act_a, ep->act_b, c + r * ldc, c + r * ldc, (size_t)cols);
}

static int epilogue_is_identity(const acl_epilogue *ep)
{
    return !ep->bias && !ep->residual && ep->act == ACL_ACT_NONE;
}

/* An activation no kernel fuses as a clamp (GELU, SiLU, ...): applied per
 * row block once its tiles are done (block_activation). */
static int act_after_block(const acl_epilogue *ep)
{
    float lo, hi;
    return ep->act != ACL_ACT_NONE && !acl_act_bounds(ep->act, ep->act_a, ep->act_b, &lo, &hi);
}

static void copy_block(float *dst, ptrdiff_t ldd, const float *src, ptrdiff_t lds, int rows,
                       int cols)
{
    for (int r = 0; r < rows; r++) memcpy(dst + r * ldd, src + r * lds, cols * sizeof(float));
}

/* Where one micro-kernel call reads A. */
typedef struct {
    const void *packed;                    /* interleaved: floats or an fp16 kernel's halves */
    const float *rows[ACL_UKR_MAX_MR];     /* hybrid, smallk */
} a_operand;

/* A tile's first `rows` rows: all MR, or fewer through a hybrid kernel's rows
 * entry (an interleaved kernel's partial tile goes through edge_tile_step). */
static void call_ukernel(const acl_ukernel *uk, int rows, size_t kc, const a_operand *a,
                         const void *b, float *c, size_t ldc, const acl_ukr_epilogue *ep)
{
    if (uk->fp16_fn) uk->fp16_fn(kc, a->packed, b, c, ldc, ep);
    else if (uk->style == ACL_STYLE_INTERLEAVED) uk->interleaved(kc, a->packed, b, c, ldc, ep);
    else if (rows < uk->mr) uk->hybrid_rows(rows, kc, a->rows, b, c, ldc, ep);
    else uk->hybrid(kc, a->rows, b, c, ldc, ep);
}

/* The part of a job's epilogue that a micro-kernel call writing C in place
 * fuses: the bias when the call starts the tile; the residual and a ReLU or
 * Clip when it ends it.  Another activation waits for the row block
 * (block_activation). */
static acl_ukr_epilogue fused_epilogue(const acl_gemm_job *job, int row0, int col0, int cols,
                                       int first, int last)
{
    const acl_epilogue *ep = &job->ep;
    acl_ukr_epilogue f = {.cols = cols, .accumulate = !first};
    if (first && ep->bias) f.bias = ep->bias + col0;
    if (last && ep->residual) f.residual = ep->residual + row0 * job->ldc + col0;
    if (last) f.clamp = acl_act_bounds(ep->act, ep->act_a, ep->act_b, &f.lo, &f.hi);
    return f;
}

/* One K step of the last tile of an M that is no multiple of MR, for an
 * interleaved kernel: it writes every row, so it goes through an aligned
 * MR x NR stack tile and gets its epilogue afterwards (but for an activation
 * that waits for the row block). */
static void edge_tile_step(const acl_gemm_job *job, size_t kc, const a_operand *a, const void *b,
                           int row0, int col0, int rows, int cols, int first, int last)
{
    const acl_ukernel *uk = job->b->uk;
    const int mr = uk->mr, nr = uk->nr;
    float *c = job->c + row0 * job->ldc + col0;
    float tile[ACL_UKR_MAX_TILE_FLOATS] __attribute__((aligned(ACL_ALIGN)));
    const acl_ukr_epilogue f = {.cols = cols, .accumulate = !first};
    if (!first) {
        memset(tile, 0, (size_t)mr * nr * sizeof(float));
        copy_block(tile, nr, c, job->ldc, rows, cols);
    }
    call_ukernel(uk, mr, kc, a, b, tile, (size_t)nr, &f);
    copy_block(c, job->ldc, tile, nr, rows, cols);
    if (!last) return;
    acl_epilogue ep = job->ep;
    if (act_after_block(&ep)) ep.act = ACL_ACT_NONE;
    if (!epilogue_is_identity(&ep)) apply_epilogue(&ep, c, job->ldc, row0, col0, rows, cols);
}

/* One K step of one tile, through the epilogue.  A tile of MR rows, or a
 * hybrid kernel's partial one, is written in place (its last columns masked
 * when N ends inside it) and fuses what it can. */
static void tile_step(const acl_gemm_job *job, size_t kc, const a_operand *a, const void *b,
                      int row0, int col0, int rows, int cols, int first, int last)
{
    const acl_ukernel *uk = job->b->uk;
    if (rows < uk->mr && uk->style == ACL_STYLE_INTERLEAVED) {
        edge_tile_step(job, kc, a, b, row0, col0, rows, cols, first, last);
        return;
    }
    float *c = job->c + row0 * job->ldc + col0;
    const acl_ukr_epilogue f = fused_epilogue(job, row0, col0, cols, first, last);
    call_ukernel(uk, rows, kc, a, b, c, (size_t)job->ldc, &f);
}

/* A row block's activation that its tiles did not fuse, over the columns of
 * panels [p0, p1): a row at a time, or all its rows in one call where they
 * are contiguous.  Per tile it was a call per row of NR floats, each
 * broadcasting the activation's constants anew for two vectors of work: a
 * GELU after EfficientFormer's 56x56 48 -> 192 pointwise cost 1.7 times
 * what it costs as a pass of its own. */
static void block_activation(const acl_gemm_job *job, int row0, int rows, int p0, int p1)
{
    const acl_epilogue *ep = &job->ep;
    const int nr = job->b->uk->nr, col0 = p0 * nr, cols = acl_min(p1 * nr, job->b->n) - col0;
    float *c = job->c + row0 * job->ldc + col0;
    if (cols <= 0) return;  /* a chunk of no panels */
    if (cols == job->ldc) {
        acl_activate(ep->act, ep->act_a, ep->act_b, c, c, (size_t)rows * cols);
        return;
    }
    for (int r = 0; r < rows; r++)
        acl_activate(ep->act, ep->act_a, ep->act_b, c + r * job->ldc, c + r * job->ldc,
                     (size_t)cols);
}

/* Computes tiles [t0, t1) x N panels [p0, p1) of a job: row blocks of MC_ROWS,
 * then K blocks (within each A segment), then N panels, then the tiles of the
 * row block. */
static void compute_job_block(const acl_gemm_job *job, int t0, int t1, int p0, int p1)
{
    const acl_packed_b *b = job->b;
    const acl_ukernel *uk = b->uk;
    const int k = job_k(job), mr = uk->mr, nr = uk->nr, n = b->n;
    const int interleaved = uk->style == ACL_STYLE_INTERLEAVED;
    const k_segments seg = call_segments(job);
    const int kc_cap = uk->style == ACL_STYLE_SMALLK || job->whole_k ? seg.len : KC_TARGET;
    const int kblock =
        acl_div_up(acl_div_up(seg.len, acl_div_up(seg.len, kc_cap)), K_GRAIN) * K_GRAIN;
    const int mc_tiles = acl_max(1, MC_ROWS / mr);
    const int after_block = act_after_block(&job->ep);

    for (int blk0 = t0; blk0 < t1; blk0 += mc_tiles) {
        const int blk1 = acl_min(blk0 + mc_tiles, t1);
        for (int s = 0; s < seg.count; s++)
            for (int c0 = 0; c0 < seg.len; c0 += kblock) {
                const int kc = acl_min(kblock, seg.len - c0);
                const int k0 = s * seg.len + c0;
                const int first = k0 == 0, last = k0 + kc == k;
                for (int p = p0; p < p1; p++) {
                    const void *bp = packed_at(uk, b->data, ((size_t)p * k + k0) * nr);
                    const int col0 = p * nr, cols = acl_min(nr, n - col0);
                    for (int t = blk0; t < blk1; t++) {
                        const int row0 = t * mr, rows = acl_min(mr, job->m - row0);
                        a_operand a;
                        if (interleaved) {
                            a.packed = packed_at(uk, job->a_packed, ((size_t)t * k + k0) * mr);
                        } else {
                            /* Rows past M repeat the last valid row; their
                             * results are never stored. */
                            for (int r = 0; r < mr; r++)
                                a.rows[r] = a_segment(job, row0 + acl_min(r, rows - 1), s) + c0;
                        }
                        tile_step(job, (size_t)kc, &a, bp, row0, col0, rows, cols, first, last);
                    }
                }
                if (last && after_block) {
                    const int row0 = blk0 * mr;
                    block_activation(job, row0, acl_min(blk1 * mr, job->m) - row0, p0, p1);
                }
            }
    }
}

/* ---- units and stages -------------------------------------------------- */

/* Calls fn(job, t0, t1, chunk, nsplit) for the work items of units
 * [unit_begin, unit_end): a job's items are its tiles for chunk 0, then its
 * tiles for chunk 1, and so on, so that a unit's run of items is tiles
 * sharing their chunk of B's panels.  Taken tile by tile instead, a GEMM of
 * few rows and a large B (ResNeXt's 1x1s on 7x7: M = 49, B 8 MB) read its
 * whole B from memory once per tile rather than once. */
typedef void (*item_fn)(const acl_gemm_job *job, int t0, int t1, int chunk, int nsplit);

static void for_unit_items(const acl_gemm_batch *batch, int unit_begin, int unit_end, item_fn fn)
{
    const long long items = (long long)batch->tiles_total * batch->nsplit, units = batch->units;
    const long long i0 = unit_begin * items / units, i1 = unit_end * items / units;
    long long base = 0;  /* first item of job j */
    for (int j = 0; j < batch->njobs && base < i1; j++) {
        const acl_gemm_job *job = &batch->jobs[j];
        const int tiles = job->m > 0 ? job_tiles(job) : 0;
        const long long n = tiles * (long long)batch->nsplit;
        long long a = (i0 > base ? i0 : base) - base;
        const long long b = (i1 < base + n ? i1 : base + n) - base;
        while (a < b) {  /* a run of tiles within one chunk: keeps the row blocking */
            const int chunk = (int)(a / tiles), t0 = (int)(a % tiles);
            const int t1 = (int)(t0 + (b - a) < tiles ? t0 + (b - a) : tiles);
            fn(job, t0, t1, chunk, batch->nsplit);
            a += t1 - t0;
        }
        base += n;
    }
}

static void pack_item(const acl_gemm_job *job, int t0, int t1, int chunk, int nsplit)
{
    if (chunk == 0) pack_job_tiles(job, t0, t1);  /* a tile's A is packed once */
}

static void compute_item(const acl_gemm_job *job, int t0, int t1, int chunk, int nsplit)
{
    const int panels = acl_div_up(job->b->n, job->b->uk->nr);
    const int per = acl_div_up(panels, nsplit);
    compute_job_block(job, t0, t1, acl_min(chunk * per, panels),
                      acl_min((chunk + 1) * per, panels));
}

static void pack_task(void *ctx, int unit_begin, int unit_end, int worker)
{
    for_unit_items(ctx, unit_begin, unit_end, pack_item);
}

static void compute_task(void *ctx, int unit_begin, int unit_end, int worker)
{
    for_unit_items(ctx, unit_begin, unit_end, compute_item);
}

static int run_stage(const acl_gemm_batch *batch, const acl_exec *ex, acl_task_fn fn,
                     double *stage_ms)
{
    const double start = acl_now_ms();
    const int rc = acl_parallel(ex, batch->units, fn, (void *)batch);
    if (stage_ms) *stage_ms = acl_now_ms() - start;
    return rc;
}

int acl_gemm_batch_pack_a(const acl_gemm_batch *batch, const acl_exec *ex, double *stage_ms)
{
    if (batch->njobs == 0 || batch->jobs[0].b->uk->style != ACL_STYLE_INTERLEAVED) {
        if (stage_ms) *stage_ms = 0.0;
        return 0;
    }
    return run_stage(batch, ex, pack_task, stage_ms);
}

int acl_gemm_batch_compute(const acl_gemm_batch *batch, const acl_exec *ex, double *stage_ms)
{
    return run_stage(batch, ex, compute_task, stage_ms);
}

void acl_gemm_job_run(const acl_gemm_job *job)
{
    if (job->m <= 0) return;
    const int tiles = job_tiles(job);
    if (job->b->uk->style == ACL_STYLE_INTERLEAVED) pack_job_tiles(job, 0, tiles);
    compute_job_block(job, 0, tiles, 0, acl_div_up(job->b->n, job->b->uk->nr));
}
