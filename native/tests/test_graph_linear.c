/* The graph suite's matmul, batch_matmul, gather and conv, programs of several nodes, packed
 * weights and workspace shared between nodes, and the add-time errors. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_trial.h"

/* ---- matmul / conv ------------------------------------------------------------ */

typedef struct {
    const char *ukernel;
    int k, n, act;
    float act_a, act_b;
    float *b, *bias;
    acl_tensor in, out;
} matmul_spec;

static int add_matmul(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const matmul_spec *s = spec;
    const acl_matmul_attrs a = {.ukernel = s->ukernel,
                                .k = s->k,
                                .n = s->n,
                                .b = s->b,
                                .b_count = (size_t)s->k * s->n,
                                .bias = s->bias,
                                .bias_count = s->bias ? (size_t)s->n : 0,
                                .act = s->act,
                                .act_a = s->act_a,
                                .act_b = s->act_b};
    return acl_graph_add(g, ACL_OP_MATMUL, &a, 1, &s->in, &s->out);
}

/* A random fp32 micro-kernel: MatMul and BatchMatMul take no other, and an
 * fp16 one's convolutions have their own bound (test_conv --fp16). */
static void random_ukernel(acl_ukernel_info *info)
{
    do acl_ukernel_get(rnd(0, acl_ukernel_count() - 1), info);
    while (strcmp(info->precision, "fp32") != 0);
}

void matmul_case(int big)
{
    acl_ukernel_info info;
    if (acl_ukernel_count() == 0) return;
    random_ukernel(&info);
    /* Any activation in the epilogue; clip's bounds ordered. */
    matmul_spec s = {.ukernel = info.name,
                     .act = rnd(0, ACL_ACT_COUNT - 1),
                     .act_a = -0.5f * (float)rnd(0, 2),
                     .act_b = 0.5f * (float)rnd(0, 2)};
    s.k = rnd(info.kmin + 1, info.kmax ? info.kmax : info.kmin + 150);
    s.n = info.n_multiple * rnd(1, 80 / info.n_multiple + 1);
    int rank = rnd(1, 3), in[ACL_MAX_RANK], out[ACL_MAX_RANK];
    random_dims(rank, 0, in);
    if (big) in[0] = rnd(100, 300);
    in[rank - 1] = s.k;
    memcpy(out, in, sizeof out);
    out[rank - 1] = s.n;
    s.b = malloc((size_t)s.k * s.n * sizeof(float));
    fill_random(s.b, (size_t)s.k * s.n, 1.0f);
    if (rnd(0, 3)) {
        s.bias = malloc((size_t)s.n * sizeof(float));
        fill_random(s.bias, (size_t)s.n, 1.0f);
    }
    trial t;
    trial_begin(&t, TOL_GEMM, "matmul %s %s x [%d,%d]%s act %d", s.ukernel, dims_str(rank, in), s.k,
                s.n, s.bias ? " + bias" : "", s.act);
    place(&t, &s.in, rank, in);
    place(&t, &s.out, rank, out);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t m = 0; m < volume(rank, in) / (size_t)s.k; m++)
        for (int j = 0; j < s.n; j++) {
            double acc = s.bias ? s.bias[j] : 0.0;
            for (int k = 0; k < s.k; k++)
                acc += (double)arena[s.in.offset + m * s.k + k] * s.b[(size_t)k * s.n + j];
            t.expected[s.out.offset + m * s.n + j] =
                (float)ref_activate(s.act, s.act_a, s.act_b, acc);
        }
    trial_run(&t, &s.out, add_matmul, &s);
    free(s.b);
    free(s.bias);
}

/* ---- batch_matmul / gather -------------------------------------------------- */

/* A tensor of logical dims held transposed by perm: placed with the permuted
 * dims; stride receives each logical axis's step. */
static void place_held(trial *t, acl_tensor *x, int rank, const int *dims, const int *perm,
                       size_t *stride)
{
    int held[ACL_MAX_RANK];
    for (int i = 0; i < rank; i++) held[i] = dims[perm[i]];
    place(t, x, rank, held);
    size_t step = 1;
    for (int i = rank - 1; i >= 0; i--) {
        stride[perm[i]] = step;
        step *= (size_t)held[i];
    }
}

enum { BMM_A, BMM_B, BMM_OUT };

typedef struct {
    const char *ukernel;
    int rank, perm[3][ACL_MAX_RANK], given[3];  /* given: the perm is passed, else in order */
    float scale;                                /* 0: none */
    acl_tensor t[3];
} bmm_spec;

static int add_batch_matmul(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const bmm_spec *s = spec;
    const acl_batch_matmul_attrs a = {
        s->ukernel,
        s->perm[BMM_A],
        s->given[BMM_A] ? s->rank : 0,
        s->perm[BMM_B],
        s->given[BMM_B] ? s->rank : 0,
        s->perm[BMM_OUT],
        s->given[BMM_OUT] ? s->rank : 0,
        s->scale,
    };
    return acl_graph_add(g, ACL_OP_BATCH_MATMUL, &a, 2, s->t, &s->t[BMM_OUT]);
}

/* Random broadcast batch dims and layouts; a's K and out's N stay innermost
 * (a perm not passed is the identity). */
void batch_matmul_case(int big)
{
    acl_ukernel_info info;
    if (acl_ukernel_count() == 0) return;
    random_ukernel(&info);
    /* Half the cases scaled, by a factor that rounds (1 / sqrt(20)). */
    bmm_spec s = {.ukernel = info.name, .rank = rnd(2, 5), .scale = rnd(0, 1) ? 0.2236068f : 0.0f};
    const int r = s.rank, m = big ? rnd(30, 90) : rnd(1, 20);
    const int k = rnd(info.kmin + 1, info.kmax ? info.kmax : info.kmin + 70);
    const int n = info.n_multiple * rnd(1, 50 / info.n_multiple + 1);
    int dims[3][ACL_MAX_RANK];
    for (int i = 0; i < r - 2; i++) {
        const int d = rnd(1, 3), broadcast = rnd(0, 3);
        dims[BMM_OUT][i] = d;
        dims[BMM_A][i] = broadcast == 0 ? 1 : d;
        dims[BMM_B][i] = broadcast == 1 ? 1 : d;
    }
    const int mats[3][2] = {{m, k}, {k, n}, {m, n}};
    for (int x = 0; x < 3; x++) {
        dims[x][r - 2] = mats[x][0];
        dims[x][r - 1] = mats[x][1];
        s.given[x] = rnd(0, 2) != 0;
        random_perm(x == BMM_B ? r : r - 1, s.perm[x]);
        if (x != BMM_B) s.perm[x][r - 1] = r - 1;
        if (!s.given[x])
            for (int i = 0; i < r; i++) s.perm[x][i] = i;
    }
    trial t;
    trial_begin(&t, TOL_GEMM, "batch_matmul %s a %s perm %s x b %s perm %s -> perm %s scale %g",
                s.ukernel, dims_str(r, dims[BMM_A]), dims_str(r, s.perm[BMM_A]),
                dims_str(r, dims[BMM_B]), dims_str(r, s.perm[BMM_B]), dims_str(r, s.perm[BMM_OUT]),
                s.scale);
    size_t stride[3][ACL_MAX_RANK];
    for (int x = 0; x < 3; x++) place_held(&t, &s.t[x], r, dims[x], s.perm[x], stride[x]);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    const size_t batches = volume(r - 2, dims[BMM_OUT]);
    for (size_t bi = 0; bi < batches; bi++) {
        size_t off[3] = {s.t[0].offset, s.t[1].offset, s.t[2].offset}, rest = bi;
        for (int i = r - 3; i >= 0; i--) {
            const size_t idx = rest % (size_t)dims[BMM_OUT][i];
            rest /= (size_t)dims[BMM_OUT][i];
            for (int x = 0; x < 3; x++) off[x] += (dims[x][i] == 1 ? 0 : idx) * stride[x][i];
        }
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0.0;
                for (int c = 0; c < k; c++)
                    acc += (double)arena[off[BMM_A] + i * stride[BMM_A][r - 2] +
                                         c * stride[BMM_A][r - 1]] *
                           arena[off[BMM_B] + c * stride[BMM_B][r - 2] + j * stride[BMM_B][r - 1]];
                t.expected[off[BMM_OUT] + i * stride[BMM_OUT][r - 2] + j * stride[BMM_OUT][r - 1]] =
                    (float)(s.scale != 0.0f ? acc * s.scale : acc);
            }
    }
    trial_run(&t, &s.t[BMM_OUT], add_batch_matmul, &s);
}

typedef struct {
    int axis, n, indices[8];
    acl_tensor in, out;
} gather_spec;

static int add_gather(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const gather_spec *s = spec;
    return acl_graph_add(g, ACL_OP_GATHER, &(acl_gather_attrs){s->axis, s->indices, s->n}, 1,
                         &s->in, &s->out);
}

/* Indices repeated, in any order, negative ones counted from the end. */
void gather_case(int big)
{
    gather_spec s = {.n = rnd(1, 8)};
    int rank = rnd(1, 5), dims[ACL_MAX_RANK], odims[ACL_MAX_RANK];
    random_dims(rank, big, dims);
    const int axis = rnd(0, rank - 1), extent = dims[axis];
    s.axis = rnd(0, 1) ? axis : axis - rank;
    for (int i = 0; i < s.n; i++) s.indices[i] = rnd(-extent, extent - 1);
    memcpy(odims, dims, sizeof odims);
    odims[axis] = s.n;
    trial t;
    trial_begin(&t, 0.0, "gather %s axis %d of %d indices", dims_str(rank, dims), s.axis, s.n);
    float *arena = place_in_out(&t, &s.in, &s.out, rank, dims, odims);
    const size_t outer = volume(axis, dims), inner = volume(rank - axis - 1, dims + axis + 1);
    float *y = t.expected + s.out.offset;
    for (size_t o = 0; o < outer; o++)
        for (int i = 0; i < s.n; i++) {
            const int index = s.indices[i] < 0 ? s.indices[i] + extent : s.indices[i];
            memcpy(y, arena + s.in.offset + (o * extent + index) * inner, inner * sizeof *y);
            y += inner;
        }
    trial_run(&t, &s.out, add_gather, &s);
}

/* A convolution through acl_graph_add; the weight's size follows the shape. */
static acl_conv_attrs conv_attrs_of(const acl_conv_shape *shape, const char *algorithm,
                                    const char *ukernel, const acl_exec *ex, const float *w,
                                    const float *bias)
{
    return (acl_conv_attrs){.shape = *shape,
                            .algorithm = algorithm,
                            .ukernel = ukernel,
                            .core_weights = ex->weights,
                            .core_weights_count = ex->ncores,
                            .workloads = ex->workloads,
                            .weight = w,
                            .weight_count = (size_t)shape->oc * (shape->c / shape->group) *
                                            shape->kh * shape->kw,
                            .bias = bias,
                            .bias_count = bias ? (size_t)shape->oc : 0};
}

static int add_conv_op(acl_graph *g, const acl_conv_shape *shape, const char *algorithm,
                       const char *ukernel, const acl_exec *ex, const float *w, const float *bias,
                       const acl_tensor *ins, int nin, const acl_tensor *out)
{
    const acl_conv_attrs a = conv_attrs_of(shape, algorithm, ukernel, ex, w, bias);
    return acl_graph_add(g, ACL_OP_CONV, &a, nin, ins, out);
}

typedef struct {
    acl_conv_shape shape;
    const char *algorithm, *ukernel;
    float *w, *bias;
    int x_nchw;
    acl_tensor in, residual, out;
} conv_spec;

static int add_conv(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const conv_spec *s = spec;
    const acl_tensor ins[2] = {s->in, s->residual};
    acl_conv_attrs a = conv_attrs_of(&s->shape, s->algorithm, s->ukernel, ex, s->w, s->bias);
    a.x_nchw = s->x_nchw;
    return acl_graph_add(g, ACL_OP_CONV, &a, 1 + s->shape.has_residual, ins, &s->out);
}

/* Some algorithm (and micro-kernel) that runs the shape; "reference" always does. */
static void pick_algorithm(conv_spec *s)
{
    for (int tries = 0; tries < 20; tries++) {
        const char *algorithm = acl_algorithm_name(rnd(0, acl_algorithm_count() - 1));
        const char *ukernel = NULL;
        acl_ukernel_info info;
        if (acl_algorithm_uses_ukernel(algorithm) && acl_ukernel_count() > 0) {
            random_ukernel(&info);
            ukernel = info.name;
        }
        if (acl_conv_check(&s->shape, algorithm, ukernel) == 0) {
            s->algorithm = algorithm;
            s->ukernel = ukernel;
            return;
        }
    }
    s->algorithm = "reference";
    s->ukernel = NULL;
}

void conv_case(int big)
{
    conv_spec s = {.shape = {.n = rnd(1, 2),
                             .h = rnd(1, big ? 24 : 10),
                             .w = rnd(1, big ? 24 : 10),
                             .kh = rnd(1, 3),
                             .stride_h = rnd(1, 2),
                             .stride_w = rnd(1, 2),
                             .dil_h = 1,
                             .dil_w = 1,
                             .group = 1,
                             .act = rnd(0, ACL_ACT_COUNT - 1),
                             .act_min = -0.5f,
                             .act_max = 0.5f,
                             .act_alpha = 0.2f,
                             .act_beta = 0.5f,
                             .has_residual = rnd(0, 1)}};
    acl_conv_shape *sh = &s.shape;
    sh->kw = sh->kh;
    sh->pad_top = sh->pad_left = sh->pad_bottom = sh->pad_right = sh->kh / 2;
    if (rnd(0, 3) == 0) {
        sh->group = sh->c = rnd(1, 16);
        sh->oc = sh->c;
    } else {
        sh->c = rnd(1, 24);
        sh->oc = rnd(1, 24);
    }
    int oh, ow;
    if (acl_conv_out_size(sh, &oh, &ow) != 0) return;
    pick_algorithm(&s);
    /* direct_nhwc also reads NCHW: the reference reads that input transposed. */
    s.x_nchw = strcmp(s.algorithm, "direct_nhwc") == 0 && rnd(0, 1);
    const int nhwc[4] = {sh->n, sh->h, sh->w, sh->c}, nchw[4] = {sh->n, sh->c, sh->h, sh->w};
    const int *in = s.x_nchw ? nchw : nhwc, out[4] = {sh->n, oh, ow, sh->oc};
    const size_t wcount = (size_t)sh->oc * (sh->c / sh->group) * sh->kh * sh->kw;
    s.w = malloc(wcount * sizeof(float));
    s.bias = malloc((size_t)sh->oc * sizeof(float));
    fill_random(s.w, wcount, 1.0f);
    fill_random(s.bias, (size_t)sh->oc, 1.0f);
    trial t;
    trial_begin(&t, TOL_GEMM, "conv %s %s %s%s -> %s k%d s%d g%d act %d%s", s.algorithm,
                s.ukernel ? s.ukernel : "", s.x_nchw ? "nchw " : "", dims_str(4, in),
                dims_str(4, out), sh->kh, sh->stride_h, sh->group, sh->act,
                sh->has_residual ? " +res" : "");
    place(&t, &s.in, 4, in);
    place(&t, &s.residual, 4, out);
    place(&t, &s.out, 4, out);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    const size_t plane = (size_t)sh->h * sh->w, image = plane * sh->c;
    float *x = malloc((size_t)sh->n * image * sizeof(float));
    for (size_t i = 0; i < (size_t)sh->n * image; i++) /* i: the NHWC index */
        x[i] = s.x_nchw
                   ? arena[s.in.offset + i / image * image + i % sh->c * plane + i % image / sh->c]
                   : arena[s.in.offset + i];
    acl_conv *ref;
    if (acl_conv_create(sh, "reference", NULL, s.w, s.bias, &ref) != 0 ||
        acl_conv_run(ref, &configs[0], x, sh->has_residual ? arena + s.residual.offset : NULL,
                     t.expected + s.out.offset, NULL) != 0) {
        trial_fail(&t, "reference: %s", acl_last_error());
        free(t.init);
        free(t.expected);
    } else {
        acl_conv_destroy(ref);
        trial_run(&t, &s.out, add_conv, &s);
    }
    free(x);
    free(s.w);
    free(s.bias);
}

/* ---- a program of several nodes ----------------------------------------------- */

/* relu(x) -> r; r + x -> s; transpose(s) -> y: nodes run in order on shared
 * tensors, each timed. */
void chain_case(void)
{
    const int dims[3] = {4, 5, 6}, tdims[3] = {6, 4, 5}, perm[3] = {2, 0, 1};
    const acl_tensor x = {0, 3, {4, 5, 6}}, r = {120, 3, {4, 5, 6}}, s = {240, 3, {4, 5, 6}},
                     y = {360, 3, {6, 4, 5}};
    acl_graph *g;
    double ms[3] = {-1, -1, -1};
    if (acl_graph_create(480, &configs[0], &g) != 0) {
        check(0, "chain: create: %s", acl_last_error());
        return;
    }
    float *arena = acl_graph_arena(g);
    fill_random(arena, 120, 1.0f);
    const acl_tensor rx[2] = {r, x};
    int ok =
        acl_graph_add(g, ACL_OP_UNARY, &(acl_unary_attrs){.op = ACL_ACT_RELU}, 1, &x, &r) == 0 &&
        acl_graph_add(g, ACL_OP_BINARY, &(acl_binary_attrs){ACL_BINARY_ADD}, 2, rx, &s) == 0 &&
        acl_graph_add(g, ACL_OP_TRANSPOSE, &(acl_transpose_attrs){perm, 3}, 1, &s, &y) == 0 &&
        acl_graph_run(g, ms) == 0;
    if (!ok) printf("FAIL chain: %s\n", acl_last_error());
    for (int i = 0; ok && i < 3; i++) ok = ms[i] >= 0.0;
    ok = ok && acl_graph_node_count(g) == 3;
    for (int i = 0; ok && i < 120; i++) {
        const int a = i / (dims[1] * dims[2]), b = i / dims[2] % dims[1], c = i % dims[2];
        const float v = arena[i] > 0 ? 2 * arena[i] : arena[i];
        ok = arena[360 + (c * tdims[1] + a) * tdims[2] + b] == v;
    }
    check(ok, "chain: wrong result or node times");
    acl_graph_destroy(g);
}

/* ---- shared packed weights ---------------------------------------------------- */

/* Three matmuls of one input: B1, a copy of B1 in another array (packed once
 * with it: an unrolled RNN's steps), and B3 of the same shape but other
 * values (never taken for B1).  Each output against its own plain product. */
void shared_b_case(void)
{
    enum { M = 5, K = 19, N = 37 };
    static float b1[K * N], b1_copy[K * N], b3[K * N];
    fill_random(b1, K * N, 1.0f);
    memcpy(b1_copy, b1, sizeof b1);
    memcpy(b3, b1, sizeof b1);
    b3[K * N / 2] += 1.0f;  /* one weight apart */
    const float *bs[3] = {b1, b1_copy, b3};
    acl_ukernel_info info;
    int found = 0;
    for (int i = 0; !found && i < acl_ukernel_count(); i++) {
        acl_ukernel_get(i, &info);
        found = info.kmin < K && (!info.kmax || K <= info.kmax) && N % info.n_multiple == 0;
    }
    if (!found) return;
    const acl_tensor x = {0, 2, {M, K}};
    acl_graph *g;
    if (acl_graph_create(M * K + 3 * M * N, &configs[1], &g) != 0) {
        check(0, "shared b: create: %s", acl_last_error());
        return;
    }
    float *arena = acl_graph_arena(g);
    fill_random(arena, M * K, 1.0f);
    int ok = 1;
    for (int i = 0; ok && i < 3; i++) {
        const acl_tensor y = {(size_t)(M * K + i * M * N), 2, {M, N}};
        const acl_matmul_attrs a = {
            .ukernel = info.name, .k = K, .n = N, .b = bs[i], .b_count = K * N};
        ok = acl_graph_add(g, ACL_OP_MATMUL, &a, 1, &x, &y) == 0;
    }
    ok = ok && acl_graph_run(g, NULL) == 0;
    if (!ok) printf("FAIL shared b: %s\n", acl_last_error());
    double worst = 0;
    for (int i = 0; ok && i < 3; i++)
        for (int r = 0; r < M; r++)
            for (int c = 0; c < N; c++) {
                double want = 0;
                for (int k = 0; k < K; k++) want += (double)arena[r * K + k] * bs[i][k * N + c];
                const double got = arena[M * K + i * M * N + r * N + c];
                const double err = fabs(got - want) / (fabs(want) + 1.0);
                if (!(err <= worst)) worst = err;  /* NaN counts as worst */
            }
    check(ok && worst < 1e-4, "shared b: outputs off by %g", worst);
    acl_graph_destroy(g);
}

/* ---- the shared workspace ------------------------------------------------------ */

/* A micro-kernel both algorithms run the shape with (NULL: none). */
static const char *common_ukernel(const acl_conv_shape *a, const char *algo_a,
                                  const acl_conv_shape *b, const char *algo_b)
{
    for (int k = 0; k < acl_ukernel_count(); k++) {
        acl_ukernel_info info;
        acl_ukernel_get(k, &info);
        if (acl_conv_check(a, algo_a, info.name) == 0 && acl_conv_check(b, algo_b, info.name) == 0)
            return info.name;
    }
    return NULL;
}

/* x -> im2col 3x3 -> y1 -> winograd F(4x4, 3x3) -> y2: the program's
 * workspace is the larger convolution's scratch, not the sum, and running both
 * on it (twice) gives exactly what two convolutions with their own scratch give. */
void shared_workspace_case(void)
{
    acl_conv_shape a = conv3x3_shape(10, 10, 8, 16, 1);
    a.act = ACL_ACT_RELU;
    acl_conv_shape b = a;
    b.c = 16;
    b.oc = 8;
    b.act = ACL_ACT_NONE;
    const char *algo_a = "im2col", *algo_b = "winograd_4x4_3x3";
    const char *uk = common_ukernel(&a, algo_a, &b, algo_b);
    if (!uk) algo_a = algo_b = "reference";
    const acl_tensor x = {0, 4, {1, 10, 10, 8}}, y1 = {800, 4, {1, 10, 10, 16}},
                     y2 = {2400, 4, {1, 10, 10, 8}};
    const size_t arena = 3200;
    float wa[16 * 8 * 9], wb[8 * 16 * 9], ba[16], bb[8], *x0 = malloc(800 * sizeof(float));
    fill_random(wa, 16 * 8 * 9, 0.3f);
    fill_random(wb, 8 * 16 * 9, 0.3f);
    fill_random(ba, 16, 1.0f);
    fill_random(bb, 8, 1.0f);
    fill_random(x0, 800, 1.0f);
    const acl_exec *ex = &configs[acl_cpu_count() >= 2 ? NCONFIGS - 1 : 0];

    /* The expected y2, from convolutions owning their scratch. */
    acl_conv *ca = NULL, *cb = NULL;
    float *e1 = malloc(1600 * sizeof(float)), *e2 = malloc(800 * sizeof(float));
    int ok = acl_conv_create(&a, algo_a, uk, wa, ba, &ca) == 0 &&
             acl_conv_create(&b, algo_b, uk, wb, bb, &cb) == 0 &&
             acl_conv_run(ca, ex, x0, NULL, e1, NULL) == 0 &&
             acl_conv_run(cb, ex, e1, NULL, e2, NULL) == 0;
    if (!ok) printf("FAIL shared workspace: standalone %s: %s\n", algo_a, acl_last_error());
    const size_t sa = ok ? acl_conv_scratch_bytes(ca) : 0, sb = ok ? acl_conv_scratch_bytes(cb) : 0;

    acl_graph *g = NULL;
    ok = ok && acl_graph_create(arena, ex, &g) == 0;
    if (ok) {
        memcpy(acl_graph_arena(g), x0, 800 * sizeof(float));
        ok = add_conv_op(g, &a, algo_a, uk, ex, wa, ba, &x, 1, &y1) == 0 &&
             add_conv_op(g, &b, algo_b, uk, ex, wb, bb, &y1, 1, &y2) == 0;
        if (!ok) printf("FAIL shared workspace: add: %s\n", acl_last_error());
    }
    if (ok && (sa == 0 || sb == 0 || acl_graph_workspace_bytes(g) != (sa > sb ? sa : sb))) {
        printf("FAIL shared workspace: %zu bytes for convolutions needing %zu and %zu\n",
               acl_graph_workspace_bytes(g), sa, sb);
        ok = 0;
    }
    for (int run = 0; ok && run < 2; run++) {
        ok = acl_graph_run(g, NULL) == 0;
        if (!ok) printf("FAIL shared workspace: run: %s\n", acl_last_error());
        else if (memcmp(acl_graph_arena(g) + y2.offset, e2, 800 * sizeof(float)) != 0) {
            printf("FAIL shared workspace: run %d differs from convolutions with their own "
                   "scratch\n",
                   run);
            ok = 0;
        }
    }
    check(ok, "shared workspace: see above");
    acl_graph_destroy(g);
    acl_conv_destroy(ca);
    acl_conv_destroy(cb);
    free(x0);
    free(e1);
    free(e2);
}

/* ---- errors: add-time checks fail in one line that names the problem ---------- */

static void expect_error(int rc, const char *part)
{
    const char *msg = acl_last_error();
    check(rc != 0 && strstr(msg, part) && !strchr(msg, '\n'),
          "expected an error mentioning '%s', got rc %d '%s'", part, rc, msg);
}

void check_errors(void)
{
    static const int idle[] = {0};
    const acl_exec no_core = {1, idle, 1};
    acl_graph *g;
    expect_error(acl_graph_create(100, &no_core, &g), "every core weight is 0");
    expect_error(acl_graph_create(0, &configs[0], &g), "at least one float");
    if (acl_graph_create(20000, &configs[0], &g) != 0) {
        check(0, "creating the error-case program: %s", acl_last_error());
        return;
    }
    const acl_tensor a = {0, 4, {1, 7, 7, 64}}, b = {4000, 4, {1, 7, 7, 32}},
                     c = {6000, 4, {1, 7, 7, 3}}, far = {19950, 2, {10, 10}},
                     deep = {0, 7, {1, 1, 1, 1, 1, 1}}, wide = {19000, 1, {64}};
    const acl_tensor out96 = {8000, 4, {1, 7, 7, 96}}, cat_in[2] = {a, c};
    const acl_concat_attrs axis3 = {.axis = 3};
    expect_error(acl_graph_add(g, ACL_OP_CONCAT, &axis3, 2, cat_in, &out96),
                 "concat: the inputs add up to 67 along axis 3 but the output has 96");
    const acl_tensor cat_bad[2] = {a, {4000, 4, {1, 7, 6, 32}}};
    expect_error(acl_graph_add(g, ACL_OP_CONCAT, &axis3, 2, cat_bad, &out96),
                 "concat: input 1 has dims [1,7,6,32] but axis 3 needs the other dims of "
                 "[1,7,7,96]");
    const acl_unary_attrs relu = {.op = ACL_ACT_RELU}, sigmoid = {.op = ACL_ACT_SIGMOID},
                          copy = {.op = ACL_ACT_NONE}, unknown = {.op = 99};
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &relu, 1, &far, &wide),
                 "past the end of the arena");
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &relu, 1, &deep, &deep), "rank 7");
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &unknown, 1, &a, &a), "unknown operation 99");
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &sigmoid, 1, &a, &b), "sigmoid: output has dims");
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &relu, 2, cat_in, &a),
                 "unary: takes 1 input, got 2");
    expect_error(acl_graph_add(g, ACL_OP_COUNT, &relu, 1, &a, &b), "unknown operation");
    const acl_tensor ab[2] = {a, b};
    expect_error(acl_graph_add(g, ACL_OP_BINARY, &(acl_binary_attrs){ACL_BINARY_ADD}, 2, ab, &a),
                 "do not broadcast");
    const acl_tensor shifted = {10, 4, {1, 7, 7, 64}};
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &copy, 1, &a, &shifted), "overlaps");
    const int perm_bad[4] = {0, 1, 1, 3};
    expect_error(acl_graph_add(g, ACL_OP_TRANSPOSE, &(acl_transpose_attrs){perm_bad, 4}, 1, &a, &b),
                 "perm[2] = 1");
    expect_error(acl_graph_add(g, ACL_OP_TRANSPOSE, &(acl_transpose_attrs){perm_bad, 3}, 1, &a, &b),
                 "transpose: perm must hold 4 values, got 3");
    const int starts[4] = {0, 0, 0, 60}, steps[4] = {1, 1, 1, 2}, zero[4] = {0, 0, 0, 0};
    expect_error(acl_graph_add(g, ACL_OP_SLICE, &(acl_slice_attrs){starts, 4, steps, 4}, 1, &a, &b),
                 "slice: axis 3 reads indices 60 to 122 (step 2) of the input [1,7,7,64]");
    expect_error(acl_graph_add(g, ACL_OP_SLICE, &(acl_slice_attrs){zero, 4, zero, 4}, 1, &a, &b),
                 "slice: steps[0] is 0");
    expect_error(acl_graph_add(g, ACL_OP_SLICE, &(acl_slice_attrs){zero, 3, steps, 4}, 1, &a, &b),
                 "slice: starts must hold 4 values, got 3");
    const int pads[4] = {0, 0, 0, 0}, two[2] = {2, 2}, ones[2] = {1, 1}, tall[2] = {9, 2};
    const acl_tensor pooled = {13000, 4, {1, 2, 2, 64}};
    acl_pool_attrs pool = {ACL_POOL_MAX, two, 2, two, 2, ones, 2, pads, 4, 0, 0};
    expect_error(acl_graph_add(g, ACL_OP_POOL, &pool, 1, &a, &pooled),
                 "max pool: output height is 2 but must be 3 (or 4 with ceil_mode)");
    pool = (acl_pool_attrs){ACL_POOL_AVERAGE, tall, 2, ones, 2, ones, 2, pads, 4, 0, 0};
    expect_error(acl_graph_add(g, ACL_OP_POOL, &pool, 1, &a, &pooled), "window height");
    expect_error(acl_graph_add(g, ACL_OP_LRN, &(acl_lrn_attrs){0, 1, 1, 1}, 1, &a, &out96),
                 "lrn: size");
    const int pad_neg[8] = {0, 0, -7, 0, 0, 0, 0, 0};
    expect_error(acl_graph_add(g, ACL_OP_PAD, &(acl_pad_attrs){ACL_PAD_REFLECT, 0, pad_neg, 8}, 1,
                               &a, &out96),
                 "empty");
    acl_resize_attrs resize = {ACL_RESIZE_LINEAR, 0, 0, (const float[]){2.0f, 2.0f}, 1};
    expect_error(acl_graph_add(g, ACL_OP_RESIZE, &resize, 1, &a, &out96),
                 "resize: scales must hold 2 values, got 1");
    resize.scales_count = 2;
    expect_error(acl_graph_add(g, ACL_OP_RESIZE, &resize, 1, &a, &out96),
                 "resize: output has dims [1,7,7,96] but must have [1,7,7,64]");
    resize.coordinate_mode = 9;
    expect_error(acl_graph_add(g, ACL_OP_RESIZE, &resize, 1, &a, &out96),
                 "resize: unknown coordinate_mode 9");
    float weights[64 * 8] = {0};
    acl_matmul_attrs mm = {
        .ukernel = "no-such-kernel", .k = 64, .n = 8, .b = weights, .b_count = 64 * 8};
    expect_error(acl_graph_add(g, ACL_OP_MATMUL, &mm, 1, &a, &b), "unknown micro-kernel");
    mm.b_count = 7;
    expect_error(acl_graph_add(g, ACL_OP_MATMUL, &mm, 1, &a, &b), "matmul: b must hold 512 values");
    mm.act = ACL_ACT_COUNT;
    expect_error(acl_graph_add(g, ACL_OP_MATMUL, &mm, 1, &a, &b), "matmul: unknown activation");
    const acl_tensor norm_in[3] = {a, wide, {19100, 1, {32}}}, norm_out = {8000, 4, {1, 7, 7, 64}};
    expect_error(
        acl_graph_add(g, ACL_OP_LAYER_NORM, &(acl_layer_norm_attrs){1e-5f}, 3, norm_in, &norm_out),
        "layer_norm: shift has dims [32] but must have [64]");
    expect_error(
        acl_graph_add(g, ACL_OP_LAYER_NORM, &(acl_layer_norm_attrs){-1.0f}, 3, norm_in, &norm_out),
        "layer_norm: epsilon must be >= 0");
    const char *uk = NULL;
    if (acl_ukernel_count() > 0) {
        acl_ukernel_info info;
        acl_ukernel_get(0, &info);
        uk = info.name;
    }
    /* a [1,7,7,64] x b [1,7,7,32]: K = 64 against b's 7 rows. */
    const acl_tensor products[2] = {a, b}, mm_out = {15000, 4, {1, 7, 7, 32}};
    const int swap_last[4] = {0, 1, 3, 2}, twice[4] = {0, 1, 1, 3};
    acl_batch_matmul_attrs mm_attrs = {.ukernel = uk};
    expect_error(acl_graph_add(g, ACL_OP_BATCH_MATMUL, &mm_attrs, 2, products, &mm_out),
                 "batch_matmul: a [1,7,7,64] times b [1,7,7,32] does not give the output's "
                 "[1,7,7,32]");
    /* c [1,7,7,3] held transposed is a [1,7,3,7]: its K axis is not innermost. */
    const acl_tensor held[2] = {c, b}, held_out = {15000, 4, {1, 7, 3, 32}};
    mm_attrs = (acl_batch_matmul_attrs){.ukernel = uk, .a_perm = swap_last, .a_perm_count = 4};
    expect_error(acl_graph_add(g, ACL_OP_BATCH_MATMUL, &mm_attrs, 2, held, &held_out),
                 "batch_matmul: a's K axis must be innermost in its layout");
    mm_attrs = (acl_batch_matmul_attrs){.ukernel = uk, .b_perm = twice, .b_perm_count = 4};
    expect_error(acl_graph_add(g, ACL_OP_BATCH_MATMUL, &mm_attrs, 2, products, &mm_out),
                 "batch_matmul: b_perm[2] = 1");
    mm_attrs.b_perm_count = 3;
    expect_error(acl_graph_add(g, ACL_OP_BATCH_MATMUL, &mm_attrs, 2, products, &mm_out),
                 "batch_matmul: b_perm must hold 4 values, got 3");
    const int last = 6, wrong = -8;
    const acl_tensor row = {16000, 4, {1, 7, 1, 64}}, rows = {16000, 4, {1, 7, 2, 64}};
    expect_error(acl_graph_add(g, ACL_OP_GATHER, &(acl_gather_attrs){2, &last, 1}, 1, &a, &rows),
                 "gather: output has dims [1,7,2,64] but must have [1,7,1,64]");
    expect_error(acl_graph_add(g, ACL_OP_GATHER, &(acl_gather_attrs){-2, &wrong, 1}, 1, &a, &row),
                 "gather: indices[0] = -8 is out of range for axis 2 of size 7");
    acl_conv_shape shape = {.n = 1,
                            .h = 7,
                            .w = 7,
                            .c = 32,
                            .oc = 8,
                            .kh = 1,
                            .kw = 1,
                            .stride_h = 1,
                            .stride_w = 1,
                            .dil_h = 1,
                            .dil_w = 1,
                            .group = 1};
    const acl_tensor conv_out = {14000, 4, {1, 7, 7, 8}};
    expect_error(
        add_conv_op(g, &shape, "reference", NULL, &configs[0], weights, NULL, &a, 1, &conv_out),
        "conv: input has dims [1,7,7,64] but must have [1,7,7,32]");
    const acl_tensor with_residual[2] = {b, conv_out};
    expect_error(add_conv_op(g, &shape, "reference", NULL, &configs[0], weights, NULL,
                             with_residual, 2, &conv_out),
                 "has_residual=0");
    expect_error(
        add_conv_op(g, &shape, "no_such", NULL, &configs[0], weights, NULL, &b, 1, &conv_out),
        "conv: unknown algorithm");
    check(acl_graph_node_count(g) == 0, "rejected operations left %d nodes",
          acl_graph_node_count(g));
    acl_graph_destroy(g);
}
