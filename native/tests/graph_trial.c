/* The graph suite's trials: arenas, tensors placed in them, runs under
 * every exec config, and the checks of the arena after. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_trial.h"

void fill_random(float *p, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) p[i] = scale * rnd_float();
}

size_t volume(int rank, const int *dims)
{
    size_t v = 1;
    for (int i = 0; i < rank; i++) v *= (size_t)dims[i];
    return v;
}

/* ---- exec configs: the first is checked against the reference, the others
 * must reproduce its arena bit for bit ------------------------------------- */

static const int w_1[] = {1}, w_11[] = {1, 1}, w_01[] = {0, 1}, w_21[] = {2, 1};
const acl_exec configs[NCONFIGS] = {
    {1, w_1, 1},
    {2, w_11, 3},
    {2, w_01, 16},
    {2, w_21, 64},
};

/* ---- a trial: one program, its arena before and the expected arena after ---- */

void trial_begin(trial *t, double tol, const char *fmt, ...)
{
    memset(t, 0, sizeof *t);
    t->tol = tol;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->desc, sizeof t->desc, fmt, ap);
    va_end(ap);
}

/* Places a tensor after the previous one, a random gap apart. */
void place(trial *t, acl_tensor *x, int rank, const int *dims)
{
    x->rank = rank;
    memcpy(x->dims, dims, (size_t)rank * sizeof *dims);
    t->used += (size_t)rnd(0, 7);
    x->offset = t->used;
    t->used += volume(rank, dims);
}

/* The output of an elementwise case: over its input when in_place, else placed anew. */
void place_output(trial *t, acl_tensor *out, const acl_tensor *in, int in_place, int rank,
                  const int *dims)
{
    if (in_place) *out = *in;
    else place(t, out, rank, dims);
}

/* Allocates the arena (random contents) once every tensor is placed. */
float *trial_arena(trial *t)
{
    t->arena = t->used + (size_t)rnd(1, 8);
    t->init = malloc(t->arena * sizeof(float));
    t->expected = malloc(t->arena * sizeof(float));
    fill_random(t->init, t->arena, 1.0f);
    return t->init;
}

/* Input and output of a one-input operation, the expected arena starting as
 * a copy of the placed one; the arena. */
float *place_in_out(trial *t, acl_tensor *in, acl_tensor *out, int rank, const int *dims,
                    const int *odims)
{
    place(t, in, rank, dims);
    place(t, out, rank, odims);
    float *arena = trial_arena(t);
    memcpy(t->expected, arena, t->arena * sizeof(float));
    return arena;
}

void trial_fail(const trial *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(t->desc, fmt, ap);
    va_end(ap);
}

/* The output within tolerance (relative to max|expected|), the rest exact. */
int check_arena(const trial *t, const float *got)
{
    const size_t o0 = t->out->offset, o1 = o0 + volume(t->out->rank, t->out->dims);
    if (memcmp(got, t->expected, o0 * sizeof *got) != 0 ||
        memcmp(got + o1, t->expected + o1, (t->arena - o1) * sizeof *got) != 0) {
        trial_fail(t, "wrote outside its output [%zu, %zu)", o0, o1);
        return 0;
    }
    float scale = 1e-6f;
    for (size_t i = o0; i < o1; i++)
        if (isfinite(t->expected[i]) && fabsf(t->expected[i]) > scale)
            scale = fabsf(t->expected[i]);
    for (size_t i = o0; i < o1; i++) {
        const float e = t->expected[i], y = got[i];
        if (y == e) continue;  /* also equal infinities */
        if (!(fabs((double)y - e) <= t->tol * scale)) {
            trial_fail(t, "output[%zu] = %.9g, expected %.9g (tolerance %.1e x %.3g)", i - o0,
                       (double)y, (double)e, t->tol, (double)scale);
            return 0;
        }
    }
    return 1;
}

/* Builds and runs the program under every config; counts one pass or fail. */
void trial_run(trial *t, const acl_tensor *out, add_fn add, const void *spec)
{
    t->out = out;
    float *first = NULL;
    int ok = 1;
    for (int i = 0; ok && i < NCONFIGS; i++) {
        if (configs[i].ncores > acl_cpu_count()) continue;
        acl_graph *g;
        if (acl_graph_create(t->arena, &configs[i], &g) != 0) {
            trial_fail(t, "create: %s", acl_last_error());
            ok = 0;
            break;
        }
        memcpy(acl_graph_arena(g), t->init, t->arena * sizeof(float));
        double ms[1] = {-1.0};
        if (add(g, spec, &configs[i]) != 0 || acl_graph_run(g, ms) != 0) {
            trial_fail(t, "config %d: %s", i, acl_last_error());
            ok = 0;
        } else if (acl_graph_node_count(g) != 1 || !(ms[0] >= 0.0)) {
            trial_fail(t, "node count %d, node time %g", acl_graph_node_count(g), ms[0]);
            ok = 0;
        } else if (!first) {
            ok = check_arena(t, acl_graph_arena(g));
            first = malloc(t->arena * sizeof(float));
            memcpy(first, acl_graph_arena(g), t->arena * sizeof(float));
        } else if (memcmp(first, acl_graph_arena(g), t->arena * sizeof(float)) != 0) {
            trial_fail(t, "the arena under exec config %d differs from config 0", i);
            ok = 0;
        }
        acl_graph_destroy(g);
    }
    passed += ok;
    free(first);
    free(t->init);
    free(t->expected);
}

/* Random dims of a rank; `big` cases are large enough to be split over cores. */
void random_dims(int rank, int big, int *dims)
{
    const int hi = big ? (rank <= 2 ? 300 : rank == 3 ? 40 : rank == 4 ? 16 : 8) : 5;
    for (int i = 0; i < rank; i++) dims[i] = rnd(big ? hi / 2 : 1, hi);
}

/* A random permutation of [0, n) (Fisher-Yates). */
void random_perm(int n, int *perm)
{
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = rnd(0, i), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

const char *dims_str(int rank, const int *dims)
{
    static char buf[8][64];
    static int next;
    char *s = buf[next++ % 8];
    size_t used = (size_t)snprintf(s, 64, "[");
    for (int i = 0; i < rank && used < 64; i++)
        used += (size_t)snprintf(s + used, 64 - used, "%s%d", i ? "," : "", dims[i]);
    if (used < 64) snprintf(s + used, 64 - used, "]");
    return s;
}
