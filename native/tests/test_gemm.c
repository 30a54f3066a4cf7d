/* GEMM layer tests: every available micro-kernel through the macro-kernel,
 * against a double-precision triple loop, and bit-identical across thread
 * splits.  `test_gemm --bench` prints single-core GFLOP/s per kernel instead.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclengine.h"
#include "gemm.h"
#include "internal.h"
#include "test_harness.h"

#define TOLERANCE 1e-5

/* ---- helpers ------------------------------------------------------------ */

/* Uniform in [-0.5, 1): the positive mean makes |C| grow like K instead of
 * sqrt(K), so float rounding stays well inside TOLERANCE at K = 1000, while
 * the negative values still exercise relu and clip. */
static float rnd_operand(void) { return 0.75f * rnd_float() + 0.25f; }

/* Integers in [-2, 2]: an fp16 kernel's sums of a K block of their
 * products (256 of them, |s| <= 1024) are exact in half precision, so it
 * must then match the reference as closely as an fp32 kernel. */
static int small_ints;

static float *random_floats(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = small_ints ? (float)rnd(-2, 2) : rnd_operand();
    return p;
}

/* The thread splits every result must be identical under; CPUs this
 * machine lacks are skipped. */
typedef struct {
    int ncores;
    int weights[2];
    int workloads;
} split;

static const split splits[] = {
    {1, {1}, 1}, {2, {1, 1}, 2}, {2, {0, 1}, 7}, {2, {3, 1}, 7}, {2, {1, 1}, 1}, {1, {1}, 7},
};
#define NSPLITS ((int)(sizeof splits / sizeof splits[0]))

static int split_runs_here(const split *s) { return s->ncores <= acl_cpu_count(); }

static acl_exec exec_of(const split *s)
{
    return (acl_exec){.ncores = s->ncores, .weights = s->weights, .workloads = s->workloads};
}

/* ---- one GEMM problem ----------------------------------------------------- */

/* A GEMM job with everything it points to and its double-precision result. */
typedef struct {
    int m, n, ks, kc, ldc;
    int indirect;
    float *b_src;
    ptrdiff_t sn, sc, st;
    acl_packed_b b;
    float *a_dense;  /* dense A, or the input the indirect rows point into */
    const float **rows;
    ptrdiff_t offset;
    float *bias, *residual;
    int act;
    float act_a, act_b;
    float *c;
    float *a_packed;
    double *ref;
    double *mag;  /* sum_k |a b| + |bias| + |residual| per element: an fp16 kernel's bound */
    int fp16;
} problem;

static float b_at(const problem *p, int k, int n)
{
    const int t = k / p->kc, c = k % p->kc;
    return p->b_src[n * p->sn + c * p->sc + t * p->st];
}

static float a_at(const problem *p, int m, int k)
{
    const int t = k / p->kc, c = k % p->kc;
    if (p->indirect) return p->rows[m * p->ks + t][p->offset + c];
    return p->a_dense[(size_t)m * (p->ks * p->kc + 3) + k];
}

static int problem_init(problem *p, const acl_ukernel *uk, int m, int n, int ks, int kc,
                        int indirect, int epilogue)
{
    const int k = ks * kc;
    *p = (problem){.m = m,
                   .n = n,
                   .ks = ks,
                   .kc = kc,
                   .ldc = n + rnd(0, 5),
                   .indirect = indirect,
                   .fp16 = uk->fp16_fn != NULL};
    p->b_src = random_floats((size_t)k * n);
    if (rnd(0, 1)) {  /* OIHW weights */
        p->sn = k, p->sc = ks, p->st = 1;
    } else {  /* row-major K x N, tap-major */
        p->sn = 1, p->sc = n, p->st = (ptrdiff_t)kc * n;
    }
    if (acl_pack_b(uk, ks, kc, n, p->b_src, p->sn, p->sc, p->st, &p->b) != 0) return -1;

    if (indirect) {
        /* Rows point at random spots of an input, some shared like a conv's
         * overlapping windows. */
        const int input_floats = 4 * kc + 64;
        p->a_dense = random_floats(input_floats);
        p->offset = rnd(0, 7);
        p->rows = malloc((size_t)(m ? m : 1) * ks * sizeof *p->rows);
        for (int i = 0; i < m * ks; i++)
            p->rows[i] = p->a_dense + rnd(0, input_floats - kc - (int)p->offset);
    } else {
        p->a_dense = random_floats((size_t)m * (k + 3));
    }
    if (epilogue & 1) p->bias = random_floats(n);
    if (epilogue & 2) p->residual = random_floats((size_t)m * p->ldc);
    p->act = (epilogue >> 2) % ACL_ACT_COUNT;
    p->act_a = p->act == ACL_ACT_CLIP ? -0.5f : 0.25f;
    p->act_b = 0.75f;
    p->c = malloc((size_t)(m ? m : 1) * p->ldc * sizeof *p->c);
    const size_t packed = acl_gemm_packed_a_floats(uk, m, k);
    p->a_packed = packed ? acl_alloc(packed * sizeof(float)) : NULL;

    p->ref = malloc((size_t)(m ? m : 1) * n * sizeof *p->ref);
    p->mag = malloc((size_t)(m ? m : 1) * n * sizeof *p->mag);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (int q = 0; q < k; q++) {
                s += (double)a_at(p, i, q) * b_at(p, q, j);
                mag += fabs((double)a_at(p, i, q) * b_at(p, q, j));
            }
            if (p->bias) s += p->bias[j], mag += fabs(p->bias[j]);
            if (p->residual)
                s += p->residual[(size_t)i * p->ldc + j],
                    mag += fabs(p->residual[(size_t)i * p->ldc + j]);
            s = (float)ref_activate(p->act, p->act_a, p->act_b, s);
            p->ref[(size_t)i * n + j] = s;
            p->mag[(size_t)i * n + j] = mag;
        }
    return 0;
}

static acl_gemm_job problem_job(const problem *p)
{
    return (acl_gemm_job){
        .b = &p->b,
        .a = p->indirect ? (acl_a_source){.rows = p->rows, .offset = p->offset}
                         : (acl_a_source){.base = p->a_dense, .lda = p->ks * p->kc + 3},
        .m = p->m,
        .c = p->c,
        .ldc = p->ldc,
        .ep = {.bias = p->bias,
               .residual = p->residual,
               .act = p->act,
               .act_a = p->act_a,
               .act_b = p->act_b},
        .a_packed = p->a_packed,
    };
}

static void problem_free(problem *p)
{
    acl_packed_b_free(&p->b);
    free(p->b_src);
    free(p->a_dense);
    free(p->rows);
    free(p->bias);
    free(p->residual);
    free(p->c);
    acl_free(p->a_packed);
    free(p->ref);
    free(p->mag);
}

/* The largest |C - ref| over its bound, which passes up to 1: TOLERANCE x
 * max|ref|, plus an fp16 kernel's own (acl_fp16_error_bound); -1 when the
 * padding past N (poisoned with a sentinel) was written. */
static double problem_error(const problem *p)
{
    const double fp16_steps = acl_fp16_error_bound(p->ks * p->kc);
    double max_ref = 0, worst = 0;
    for (int i = 0; i < p->m * p->n; i++) max_ref = fmax(max_ref, fabs(p->ref[i]));
    for (int i = 0; i < p->m; i++) {
        for (int j = 0; j < p->n; j++) {
            const size_t at = (size_t)i * p->n + j;
            const double d = fabs(p->c[(size_t)i * p->ldc + j] - p->ref[at]);
            double bound = TOLERANCE * (max_ref > 0 ? max_ref : 1);
            if (p->fp16 && !small_ints) bound += fp16_steps * p->mag[at];
            if (!(d / bound <= worst)) worst = d / bound;  /* NaN sticks */
        }
        for (int j = p->n; j < p->ldc; j++)
            if (p->c[(size_t)i * p->ldc + j] != 1234.5f) return -1;
    }
    return worst;
}

/* ---- the batch test -------------------------------------------------------- */

/* NaN where C is computed, the sentinel problem_error checks in the padding. */
static void poison_c(problem *p)
{
    for (size_t q = 0; q < (size_t)p->m * p->ldc; q++)
        p->c[q] = (q % p->ldc) < (size_t)p->n ? NAN : 1234.5f;
}

/* Runs a batch of problems under every split: the first split is checked
 * against the reference, every other must reproduce it bit for bit. */
static void test_batch(const acl_ukernel *uk, problem *probs, int nprobs, const char *what)
{
    acl_gemm_job jobs[4];
    float *first[4] = {0};
    for (int i = 0; i < nprobs; i++) jobs[i] = problem_job(&probs[i]);
    for (int s = 0; s < NSPLITS; s++) {
        if (!split_runs_here(&splits[s])) continue;
        const acl_exec ex = exec_of(&splits[s]);
        for (int i = 0; i < nprobs; i++) poison_c(&probs[i]);
        acl_gemm_batch batch;
        double t_pack = -1, t_gemm = -1;
        const int rc = acl_gemm_batch_init(&batch, jobs, nprobs, ex.workloads) ||
                       acl_gemm_batch_pack_a(&batch, &ex, &t_pack) ||
                       acl_gemm_batch_compute(&batch, &ex, &t_gemm);
        if (rc) {
            check(0, "%s %s split %d: %s", uk->name, what, s, acl_last_error());
            continue;
        }
        check(t_pack >= 0 && t_gemm >= 0, "%s %s: stage times not set", uk->name, what);
        for (int i = 0; i < nprobs; i++) {
            const size_t bytes = (size_t)probs[i].m * probs[i].ldc * sizeof(float);
            if (!first[i]) {
                const double err = problem_error(&probs[i]);
                check(err >= 0 && err <= 1, "%s %s job %d: error %g of its bound%s", uk->name, what,
                      i, err, small_ints ? " (small integers)" : "");
                first[i] = malloc(bytes ? bytes : 1);
                memcpy(first[i], probs[i].c, bytes);
            } else {
                check(memcmp(first[i], probs[i].c, bytes) == 0,
                      "%s %s job %d: split %d differs from split 0", uk->name, what, i, s);
            }
        }
    }
    /* One job run whole on this thread (im2col's blocks) matches the batch bit
     * for bit. */
    for (int i = 0; i < nprobs; i++) {
        if (!first[i]) continue;
        poison_c(&probs[i]);
        acl_gemm_job_run(&jobs[i]);
        check(memcmp(first[i], probs[i].c, (size_t)probs[i].m * probs[i].ldc * sizeof(float)) == 0,
              "%s %s job %d: acl_gemm_job_run differs from the batch", uk->name, what, i);
    }
    for (int i = 0; i < nprobs; i++) free(first[i]);
}

/* K values worth testing for a kernel: 1, odd ones, around KC and the
 * kernel's own bounds. */
static int pick_k(const acl_ukernel *uk, int idx)
{
    if (uk->kmax) {
        const int lo = uk->kmin + 1, hi = uk->kmax;
        const int ks[] = {lo, hi, rnd(lo, hi)};
        return ks[idx % 3];
    }
    const int ks[] = {1, 2, 3, 7, 17, 64, 255, 256, 257, 300, 531, 1000};
    return ks[idx % 12];
}

static void test_kernel(const acl_ukernel *uk)
{
    const int cases = 14;
    for (int idx = 0; idx < cases; idx++) {
        const int k = pick_k(uk, idx);
        const int m = idx == 0 ? 1 : rnd(1, 3 * uk->mr + 5);
        int n = idx == 1 ? 1 : rnd(1, 3 * uk->nr + 3);
        n = acl_div_up(n, uk->n_multiple) * uk->n_multiple;
        for (int indirect = 0; indirect < 2; indirect++) {
            /* Indirect A splits K into taps; dense A sometimes too (a 1xk
             * conv's im2col rows are dense). */
            int ks = 1, kc = k;
            if (indirect && uk->kmax) {
                /* A small-K kernel's bounds apply per call, i.e. per tap. */
                const int taps[] = {1, 2, 3, 9};
                ks = taps[rnd(0, 3)];
            } else if (indirect || rnd(0, 1)) {
                const int divisors[] = {9, 4, 3, 2, 1};
                for (int d = 0; d < 5; d++)
                    if (k % divisors[d] == 0 && rnd(0, 1)) {
                        ks = divisors[d];
                        break;
                    }
                kc = k / ks;
            }
            const int njobs = (idx % 3 == 2) ? 2 : 1;
            problem probs[2];
            int ok = 1;
            for (int j = 0; j < njobs; j++)
                ok &= problem_init(&probs[j], uk, j ? rnd(0, 2 * uk->mr) : m, n, ks, kc, indirect,
                                   rnd(0, 4 * ACL_ACT_COUNT - 1)) == 0;
            char what[128];
            snprintf(what, sizeof what, "M=%d N=%d K=%d (ks=%d) %s x%d", m, n, ks * kc, ks,
                     indirect ? "indirect" : "dense", njobs);
            if (ok) test_batch(uk, probs, njobs, what);
            else check(0, "%s %s: setup failed: %s", uk->name, what, acl_last_error());
            for (int j = 0; j < njobs; j++) problem_free(&probs[j]);
        }
    }
}

/* Every width of a last panel, 1 to NR columns: a kernel computes only the
 * column vectors such a panel stores (TILE_BY_WIDTH), each count its own
 * code.  A partial row tile and a K of several blocks (the accumulating
 * calls) come with each. */
static void test_last_panel_widths(const acl_ukernel *uk)
{
    for (int cols = 1; cols <= uk->nr; cols++) {
        const int n = uk->nr + cols;
        if (n % uk->n_multiple) continue;
        const int k = uk->kmax ? uk->kmax : (cols % 2 ? 17 : 300);
        problem p;
        char what[96];
        snprintf(what, sizeof what, "last panel of %d columns (N=%d K=%d)", cols, n, k);
        if (problem_init(&p, uk, uk->mr + 1, n, 1, k, 0, cols % (4 * ACL_ACT_COUNT)) == 0)
            test_batch(uk, &p, 1, what);
        else check(0, "%s %s: setup failed: %s", uk->name, what, acl_last_error());
        problem_free(&p);
    }
}

/* ---- the public API ----------------------------------------------------- */

/* An fp16 kernel's on small integers (see small_ints): the fp32 bound. */
static void test_public_gemm(const acl_ukernel *uk)
{
    const int k = uk->kmax ? uk->kmax : 77, n = uk->nr * 2 + uk->n_multiple * 1;
    const int m = uk->mr * 3 + 1, lda = k + 1, ldb = n + 2, ldc = n + 3;
    float *a = random_floats((size_t)m * lda), *b = random_floats((size_t)k * ldb);
    float *c = calloc((size_t)m * ldc, sizeof *c);
    acl_gemm *g = NULL;
    const int weights[] = {1};
    const acl_exec ex = {.ncores = 1, .weights = weights, .workloads = 3};
    acl_stage_times t;
    if (acl_gemm_create(uk->name, k, n, b, ldb, &g) != 0 ||
        acl_gemm_run(g, &ex, m, a, lda, c, ldc, &t) != 0) {
        check(0, "%s public GEMM: %s", uk->name, acl_last_error());
    } else {
        double max_diff = 0, max_ref = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int q = 0; q < k; q++) s += (double)a[i * lda + q] * b[q * ldb + j];
                max_diff = fmax(max_diff, fabs(c[i * ldc + j] - s));
                max_ref = fmax(max_ref, fabs(s));
            }
        check(max_diff <= TOLERANCE * max_ref, "%s public GEMM: error %g", uk->name,
              max_diff / max_ref);
        check(t.total_ms >= t.gemm_ms && t.gemm_ms > 0 && t.post_ms == 0,
              "%s public GEMM: stage times %g %g %g", uk->name, t.pre_ms, t.gemm_ms, t.total_ms);
    }
    acl_gemm_destroy(g);
    if (uk->kmax) {
        check(acl_gemm_create(uk->name, uk->kmax + 1, n, b, ldb, &g) != 0 && !g,
              "%s accepted K = %d", uk->name, uk->kmax + 1);
        check(acl_ukernel_check(uk, uk->kmax, uk->n_multiple + 1) != 0 || uk->n_multiple == 1,
              "%s accepted N = %d", uk->name, uk->n_multiple + 1);
    }
    free(a);
    free(b);
    free(c);
}

static void test_registry(void)
{
    const acl_ukernel *const *list;
    const int n = acl_ukernels_available(&list);
    check(n == acl_ukernel_count() && n > 0, "%d micro-kernels available, count says %d", n,
          acl_ukernel_count());
    for (int i = 0; i < n; i++) {
        acl_ukernel_info info;
        char name[64];
        check(acl_ukernel_get(i, &info) == 0 && strcmp(info.name, list[i]->name) == 0 &&
                  acl_ukernel_find(info.name) == list[i],
              "micro-kernel %d does not round-trip", i);
        snprintf(name, sizeof name, "%dx%d-%s-%s", info.mr, info.nr, info.style, info.isa);
        check(strcmp(name, info.name) == 0, "micro-kernel name %s does not match %s", info.name,
              name);
    }
    check(n == 0 || strcmp(acl_isa(), list[0]->isa) == 0, "acl_isa() %s is not the first family",
          acl_isa());
    check(acl_ukernel_find("no-such-kernel") == NULL, "found a kernel that does not exist");
}

/* ---- bench -------------------------------------------------------------- */

static void bench(void)
{
    const acl_ukernel *const *list;
    const int count = acl_ukernels_available(&list), size = 1024;
    const int weights[] = {1};
    const acl_exec ex = {.ncores = 1, .weights = weights, .workloads = 1};
    float *a = random_floats((size_t)size * size), *b = random_floats((size_t)size * size);
    float *c = malloc((size_t)size * size * sizeof *c);
    printf("single core, M = N = %d (K = 1024, or the kernel's largest small K)\n", size);
    printf("%-24s %6s %10s %10s\n", "kernel", "K", "GFLOP/s", "pack A %");
    for (int i = 0; i < count; i++) {
        const acl_ukernel *uk = list[i];
        const int k = uk->kmax ? uk->kmax : size;
        acl_gemm *g;
        if (acl_gemm_create(uk->name, k, size, b, size, &g) != 0) {
            printf("%-24s %s\n", uk->name, acl_last_error());
            continue;
        }
        double best = 1e30, pre = 0;
        acl_stage_times t;
        acl_gemm_run(g, &ex, size, a, size, c, size, &t);  /* warm-up */
        for (double spent = 0; spent < 1500; spent += t.total_ms) {
            acl_gemm_run(g, &ex, size, a, size, c, size, &t);
            if (t.total_ms < best) best = t.total_ms, pre = t.pre_ms;
        }
        printf("%-24s %6d %10.1f %10.1f\n", uk->name, k, 2.0 * size * size * k / best / 1e6,
               100 * pre / best);
        acl_gemm_destroy(g);
    }
    free(a);
    free(b);
    free(c);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
        bench();
        return 0;
    }
    test_registry();
    const acl_ukernel *const *list;
    const int n = acl_ukernels_available(&list);
    for (int i = 0; i < n; i++) {
        const int before = failed;
        test_kernel(list[i]);
        test_last_panel_widths(list[i]);
        if (list[i]->fp16_fn) {
            small_ints = 1;
            test_kernel(list[i]);
            test_public_gemm(list[i]);
            small_ints = 0;
        } else {
            test_public_gemm(list[i]);
        }
        printf("%-24s %s\n", list[i]->name, failed == before ? "ok" : "FAILED");
    }
    return test_summary();
}
