/* Binary elementwise operations with numpy broadcasting, as a strided walk
 * (walk.h) over the output: after collapsing, each innermost row steps each
 * operand by 1 or holds it fixed (0), and the rows are split over the cores. */
#include <stdlib.h>

#include "graph_impl.h"
#include "walk.h"

typedef void (*row_fn)(float *y, const float *a, const float *b, size_t n, ptrdiff_t sa,
                       ptrdiff_t sb);

static inline __attribute__((always_inline)) float apply(int op, float x, float y)
{
    switch (op) {
    case ACL_BINARY_ADD: return x + y;
    case ACL_BINARY_MUL: return x * y;
    case ACL_BINARY_SUB: return x - y;
    case ACL_BINARY_DIV: return x / y;
    case ACL_BINARY_MAX: return x > y ? x : y;
    case ACL_BINARY_MIN: return x < y ? x : y;
    case ACL_BINARY_PRELU: return x < 0.0f ? x * y : x;
    case ACL_BINARY_DIV_NO_NAN: return y == 0.0f ? 0.0f : x / y;
    }
    return 0;
}

/* One innermost row; sa, sb are 0 or 1 and not both 0.  Written once and
 * instantiated per operation so that each loop vectorises with its operator. */
static inline __attribute__((always_inline)) void
row(int op, float *y, const float *a, const float *b, size_t n, ptrdiff_t sa, ptrdiff_t sb)
{
    if (sa && sb) {
        for (size_t i = 0; i < n; i++) y[i] = apply(op, a[i], b[i]);
    } else if (sa) {
        const float bv = *b;
        for (size_t i = 0; i < n; i++) y[i] = apply(op, a[i], bv);
    } else {
        const float av = *a;
        for (size_t i = 0; i < n; i++) y[i] = apply(op, av, b[i]);
    }
}

/* One row function and table entry per value of ACL_BINARY_OPS. */
#define ROW_FN(constant, name)                                                            \
    static void name##_row(float *y, const float *a, const float *b, size_t n, ptrdiff_t sa, \
                           ptrdiff_t sb)                                                  \
    {                                                                                     \
        row(constant, y, a, b, n, sa, sb);                                                \
    }
ACL_BINARY_OPS(ROW_FN)

#define OP_ENTRY(constant, name) [constant] = {#name, name##_row},
static const struct {
    const char *name;
    row_fn fn;
} ops[] = {ACL_BINARY_OPS(OP_ENTRY)};
#define NOPS (int)(sizeof ops / sizeof ops[0])

typedef struct {
    row_fn fn;
    const float *a, *b;
    float *y;
    size_t count;
    graph_walk walk;
} binary_params;

static void binary_run_of_row(const void *arg, size_t pos, const walk_cursor *c, size_t n)
{
    const binary_params *p = arg;
    const graph_walk *w = &p->walk;
    p->fn(p->y + pos, p->a + c->off[0], p->b + c->off[1], n, w->stride[0][w->rank - 1],
          w->stride[1][w->rank - 1]);
}

static void binary_rows(const void *arg, size_t begin, size_t end)
{
    const binary_params *p = arg;
    walk_runs(&p->walk, begin, end, binary_run_of_row, p);
}

static int binary_run(const void *arg, const acl_exec *ex)
{
    const binary_params *p = arg;
    return graph_parallel(ex, p->count, 1, binary_rows, p);
}

/* Source strides along the output's axes: contiguous, 0 where broadcast. */
static void broadcast_strides(const acl_tensor *t, ptrdiff_t *stride)
{
    ptrdiff_t step = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        stride[i] = t->dims[i] == 1 ? 0 : step;
        step *= t->dims[i];
    }
}

/* out must be the numpy broadcast of a and b, at their common rank. */
static int check_broadcast(const char *op, const acl_tensor *a, const acl_tensor *b,
                           const acl_tensor *out)
{
    char da[GRAPH_DIMS_LEN], db[GRAPH_DIMS_LEN], dout[GRAPH_DIMS_LEN];
    int ok = a->rank == out->rank && b->rank == out->rank;
    for (int i = 0; ok && i < out->rank; i++) {
        const int x = a->dims[i], y = b->dims[i];
        ok = (x == y || x == 1 || y == 1) && out->dims[i] == (x > y ? x : y);
    }
    if (ok) return 0;
    return acl_fail("%s: a %s and b %s do not broadcast to the output's %s (numpy rules, equal "
                    "ranks)",
                    op, graph_dims_str(a->rank, a->dims, da), graph_dims_str(b->rank, b->dims, db),
                    graph_dims_str(out->rank, out->dims, dout));
}

int graph_op_binary(acl_graph *g, const acl_binary_attrs *attrs, int nin, const acl_tensor *ins,
                    const acl_tensor *out)
{
    const int op = attrs->op;
    const acl_tensor *a = &ins[0], *b = &ins[1];
    if (op < 0 || op >= NOPS)
        return acl_fail("binary: unknown operation %d (0 to %d)", op, NOPS - 1);
    const char *name = ops[op].name;
    size_t na, nb, count;
    if (graph_check_tensor(g, name, "a", a, &na) != 0 ||
        graph_check_tensor(g, name, "b", b, &nb) != 0 ||
        graph_check_tensor(g, name, "output", out, &count) != 0 ||
        check_broadcast(name, a, b, out) != 0 || graph_check_disjoint(name, out, "a", a, 1) != 0 ||
        graph_check_disjoint(name, out, "b", b, 1) != 0)
        return -1;
    binary_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("%s: out of memory", name);
    *p = (binary_params){.fn = ops[op].fn,
                         .a = graph_ptr(g, a),
                         .b = graph_ptr(g, b),
                         .y = graph_ptr(g, out),
                         .count = count};
    ptrdiff_t stride[2][ACL_MAX_RANK];
    broadcast_strides(a, stride[0]);
    broadcast_strides(b, stride[1]);
    walk_init(&p->walk, out->rank, out->dims, 2, stride);
    return graph_add(g, binary_run, NULL, p);
}
