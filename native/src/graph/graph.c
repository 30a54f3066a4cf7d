/* The program: its arena, default split and node list, and running them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"
#include "pool.h"

/* The least work (in floats touched) worth a unit of its own: below it, one
 * core does the operation faster than several can be woken for it. */
#define GRAPH_GRAIN_FLOATS 8192

int graph_copy_exec(const char *op, const acl_exec *src, acl_exec *dst, int **weights)
{
    if (acl_exec_check(src) != 0) return graph_fail_in(op);
    *weights = malloc((size_t)src->ncores * sizeof **weights);
    if (!*weights) return acl_fail("%s: out of memory", op);
    memcpy(*weights, src->weights, (size_t)src->ncores * sizeof **weights);
    *dst = (acl_exec){src->ncores, *weights, src->workloads};
    return 0;
}

int acl_graph_create(size_t arena_floats, const acl_exec *ex, acl_graph **out)
{
    if (!out) return acl_fail("graph: acl_graph_create needs somewhere to store the program");
    *out = NULL;
    if (arena_floats == 0) return acl_fail("graph: the arena must hold at least one float");
    if (arena_floats > SIZE_MAX / sizeof(float))
        return acl_fail("graph: an arena of %zu floats is too large", arena_floats);
    acl_graph *g = calloc(1, sizeof *g);
    if (!g) return acl_fail("graph: out of memory");
    if (graph_copy_exec("graph", ex, &g->ex, &g->ex_weights) != 0) {
        free(g);
        return -1;
    }
    g->arena = acl_alloc(arena_floats * sizeof(float));
    if (!g->arena) {
        acl_graph_destroy(g);
        return graph_fail_in("graph");
    }
    /* Zeroed so that regions the compiler never writes read as 0, run after run. */
    memset(g->arena, 0, arena_floats * sizeof(float));
    g->arena_floats = arena_floats;
    *out = g;
    return 0;
}

static void node_free(graph_node *node)
{
    if (node->release) node->release(node->params);
    free(node->params);
}

void acl_graph_destroy(acl_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->count; i++) node_free(&g->nodes[i]);
    free(g->nodes);
    graph_shared_b_free(g);
    acl_free(g->workspace);
    acl_free(g->arena);
    free(g->ex_weights);
    free(g);
}

float *acl_graph_arena(acl_graph *g) { return g ? g->arena : NULL; }

int acl_graph_node_count(const acl_graph *g) { return g ? g->count : 0; }

int acl_graph_set_balance(acl_graph *g, acl_balance mode)
{
    if (!g) return acl_fail("graph: acl_graph_set_balance needs a program");
    if (mode != ACL_BALANCE_STRICT && mode != ACL_BALANCE_ADAPTIVE)
        return acl_fail("graph: balance must be %d (strict) or %d (adaptive), got %d",
                        ACL_BALANCE_STRICT, ACL_BALANCE_ADAPTIVE, (int)mode);
    g->balance = mode;
    return 0;
}

int acl_graph_order(acl_graph *g, const int *order)
{
    if (!g || !order) return acl_fail("graph: acl_graph_order needs a program and an order");
    if (g->count == 0) return 0;
    graph_node *ordered = malloc((size_t)g->count * sizeof *ordered);
    char *seen = calloc((size_t)g->count, 1);
    int rc = ordered && seen ? 0 : acl_fail("graph: out of memory ordering nodes");
    for (int i = 0; rc == 0 && i < g->count; i++) {
        if (order[i] < 0 || order[i] >= g->count || seen[order[i]])
            rc = acl_fail("graph: order must be a permutation of 0..%d; entry %d is %d",
                          g->count - 1, i, order[i]);
        else {
            seen[order[i]] = 1;
            ordered[i] = g->nodes[order[i]];
        }
    }
    if (rc == 0) memcpy(g->nodes, ordered, (size_t)g->count * sizeof *ordered);
    free(ordered);
    free(seen);
    return rc;
}

size_t acl_graph_workspace_bytes(const acl_graph *g) { return g ? g->workspace_bytes : 0; }

int graph_workspace_reserve(acl_graph *g, size_t bytes)
{
    if (bytes <= g->workspace_bytes) return 0;
    void *grown = acl_alloc(bytes);
    if (!grown) return graph_fail_in("graph: workspace");
    acl_free(g->workspace);
    g->workspace = grown;
    g->workspace_bytes = bytes;
    return 0;
}

int graph_add(acl_graph *g, graph_run_fn run, graph_release_fn release, void *params)
{
    graph_node node = {run, release, params};
    if (g->count == g->capacity) {
        int capacity = g->capacity ? 2 * g->capacity : 16;
        graph_node *grown = realloc(g->nodes, (size_t)capacity * sizeof *grown);
        if (!grown) {
            node_free(&node);
            return acl_fail("graph: out of memory adding node %d", g->count);
        }
        g->nodes = grown;
        g->capacity = capacity;
    }
    g->nodes[g->count++] = node;
    return 0;
}

int acl_graph_run(acl_graph *g, double *node_ms)
{
    if (!g) return acl_fail("graph: acl_graph_run needs a program");
    acl_pool_wake(&g->ex);
    const acl_balance was = acl_set_balance(g->balance);
    if (g->balance == ACL_BALANCE_ADAPTIVE) acl_pool_run_begin(&g->choice);
    int rc = 0;
    for (int i = 0; rc == 0 && i < g->count; i++) {
        const double start = acl_now_ms();
        if (g->nodes[i].run(g->nodes[i].params, &g->ex) != 0) {
            char node[32];
            snprintf(node, sizeof node, "graph: node %d", i);
            rc = graph_fail_in(node);
        }
        if (node_ms) node_ms[i] = acl_now_ms() - start;
    }
    acl_release_caller();  /* pinned once for the whole run, not per operation */
    if (g->balance == ACL_BALANCE_ADAPTIVE) acl_pool_run_end(&g->choice);
    acl_set_balance(was);
    return rc;
}

typedef struct {
    graph_rows_fn fn;
    const void *params;
    size_t rows;
    int units;
} row_split;

static void run_units(void *arg, int unit_begin, int unit_end, int worker)
{
    const row_split *split = arg;
    size_t begin = (size_t)unit_begin * split->rows / (size_t)split->units;
    size_t end = (size_t)unit_end * split->rows / (size_t)split->units;
    if (begin < end) split->fn(split->params, begin, end);
}

int graph_parallel(const acl_exec *ex, size_t rows, size_t floats_per_row, graph_rows_fn fn,
                   const void *params)
{
    if (rows == 0) return 0;
    size_t units = (size_t)ex->workloads;
    if (units > rows) units = rows;
    size_t by_work = rows * (floats_per_row ? floats_per_row : 1) / GRAPH_GRAIN_FLOATS;
    if (units > by_work) units = by_work ? by_work : 1;
    /* Work below one grain runs where the caller is: moving the caller onto
     * the split's first core costs more than the work (a model's small
     * input copied in, a tiny model's every layer). */
    if (units == 1) {
        fn(params, 0, rows);
        return 0;
    }
    row_split split = {fn, params, rows, (int)units};
    return acl_parallel(ex, split.units, run_units, &split);
}
