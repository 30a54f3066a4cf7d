/* What the graph operations share: the program and node structs, the checks
 * every operation runs on its tensors at add time, and the row-split helper
 * that spreads an operation over the program's cores.
 *
 * graph.c owns the program (arena, default exec, node list, run); schema.c
 * dispatches acl_graph_add to graph_op_<name>; each operation file validates its
 * attributes and tensors, precomputes everything its run needs
 * into a params struct and appends a node with graph_add.
 */
#ifndef ACL_GRAPH_IMPL_H
#define ACL_GRAPH_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "aclgraph.h"
#include "gemm.h"
#include "internal.h"
#include "pool.h"

/* Each operation of ACL_GRAPH_OPS: acl_graph_add has checked g, the number
 * of inputs and that ins, out and attrs are given. */
#define GRAPH_OP_DECLARE(CODE, name, min_in, max_in, ATTRS)                       \
    int graph_op_##name(acl_graph *g, const acl_##name##_attrs *a, int nin,     \
                        const acl_tensor *ins, const acl_tensor *out);
ACL_GRAPH_OPS(GRAPH_OP_DECLARE)

/* Runs one node: params are the node's own, ex the program's default split. */
typedef int (*graph_run_fn)(const void *params, const acl_exec *ex);
/* Frees what params own besides the params block itself (a packed conv, ...). */
typedef void (*graph_release_fn)(void *params);

typedef struct {
    graph_run_fn run;
    graph_release_fn release;  /* NULL when params own nothing */
    void *params;              /* malloc'ed, freed with the node */
} graph_node;

struct acl_graph {
    float *arena;
    size_t arena_floats;
    acl_exec ex;  /* the default split; ex.weights points at ex_weights */
    acl_balance balance;
    acl_pool_choice choice; /* its runs' way in the adaptive balance (pool.h) */
    int *ex_weights;
    graph_node *nodes;
    int count, capacity;
    /* One scratch for every node's run buffers: nodes run one after another. */
    void *workspace;
    size_t workspace_bytes;
    struct graph_shared_b **shared_b;  /* packed constant B matrices (shared_b.c) */
    int shared_b_count, shared_b_capacity;
};

/* The packed form of a constant B matrix (acl_pack_b's arguments), shared by
 * every matmul of the graph that packs the same floats for the same kernel:
 * an unrolled RNN's steps are Gemms of one weight.  The graph owns it (freed
 * by graph_shared_b_free); NULL on failure (acl_last_error set). */
const acl_packed_b *graph_shared_b(acl_graph *g, const acl_ukernel *uk, int k, int n,
                                   const float *src, ptrdiff_t stride_n, ptrdiff_t stride_c);
void graph_shared_b_free(acl_graph *g);

/* Grows the workspace to at least bytes, before the node that needs them is
 * added (no run has touched it yet, so nothing is copied). */
int graph_workspace_reserve(acl_graph *g, size_t bytes);

/* Appends a node; takes ownership of params (released and freed on failure). */
int graph_add(acl_graph *g, graph_run_fn run, graph_release_fn release, void *params);

/* Copies an execution config and its weights (validated): for the program's
 * default split and for each convolution's own. */
int graph_copy_exec(const char *op, const acl_exec *src, acl_exec *dst, int **weights);

/* ---- tensor checks (tensor.c) ------------------------------------------------
 * Each fails with "<op>: <what> ..." in one line, `what` naming the tensor
 * ("input", "input 2", "output", ...). */

#define GRAPH_DIMS_LEN 96
/* "[1,7,7,32]" into buf (GRAPH_DIMS_LEN chars). */
const char *graph_dims_str(int rank, const int *dims, char *buf);

/* t exists, has rank 0..ACL_MAX_RANK, dims >= 1 and lies inside the arena;
 * *count receives its element count. */
int graph_check_tensor(const acl_graph *g, const char *op, const char *what, const acl_tensor *t,
                       size_t *count);
/* graph_check_tensor for a uint8 tensor (aclgraph.h): its dims count bytes. */
int graph_check_tensor_u8(const acl_graph *g, const char *op, const char *what, const acl_tensor *t,
                          size_t *count);
/* graph_check_tensor, plus an exact rank (rank < 0: any). */
int graph_check_ranked(const acl_graph *g, const char *op, const char *what, const acl_tensor *t,
                       int rank, size_t *count);
/* t has exactly this rank and these dims. */
int graph_check_dims(const char *op, const char *what, const acl_tensor *t, int rank,
                     const int *dims);
/* The output must not overlap an input, except that an elementwise operation
 * (same_ok) may write over an input of exactly the output's region and dims. */
int graph_check_disjoint(const char *op, const acl_tensor *out, const char *what,
                         const acl_tensor *in, int same_ok);
/* The same for tensors of any element size (4: float, 1: uint8), compared
 * in bytes; no overlap at all is allowed. */
int graph_check_disjoint_bytes(const char *op, const acl_tensor *out, size_t out_elem,
                               const char *what, const acl_tensor *in, size_t in_elem);
/* The input and output of an operation whose output has its input's dims:
 * both checked, the output's dims, and their overlap (in place where same_ok);
 * *count receives their element count. */
int graph_check_like_input(const acl_graph *g, const char *op, const acl_tensor *in,
                           const acl_tensor *out, int same_ok, size_t *count);
/* ins[1] and ins[2], the scale and shift of an operation over the innermost
 * axis (len long): vectors of len floats that the output does not overlap. */
int graph_check_scale_shift(const acl_graph *g, const char *op, const acl_tensor *ins,
                            const acl_tensor *out, int len);

static inline float *graph_ptr(const acl_graph *g, const acl_tensor *t)
{
    return g->arena + t->offset;
}

/* The bytes of a uint8 tensor (aclgraph.h). */
static inline uint8_t *graph_ptr_u8(const acl_graph *g, const acl_tensor *t)
{
    return (uint8_t *)(void *)(g->arena + t->offset);
}

/* quantize's arithmetic (aclgraph.h), clamped in the scaled domain first (to
 * the integers that land on 0 and 255), as onnxruntime does: a NaN fails the
 * first comparison and takes the low bound, so the conversion to int is
 * defined for every input.  Comparisons, not fmaxf / fminf, which GCC does
 * not vectorise. */
static inline uint8_t graph_quantize(float x, float scale, int zero_point)
{
    const float lo = (float)-zero_point, hi = (float)(255 - zero_point);
    float v = x / scale;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    return (uint8_t)((int)nearbyintf(v) + zero_point);
}

/* A uint8 tensor's scale and zero point are usable: 0 or -1 with the error
 * set (`prefix` names the pair of attributes, "" or "a_"...). */
int graph_check_quantization(const char *op, const char *prefix, float scale, int zero_point);

/* An INTS or FLOATS attribute holds exactly `want` values. */
int graph_check_count(const char *op, const char *attr, size_t given, size_t want);

/* perm (the attribute `attr`) orders each of the rank axes once. */
int graph_check_perm(const char *op, const char *attr, int rank, const int *perm);

/* Product of dims [begin, end). */
size_t graph_volume(const int *dims, int begin, int end);

/* Re-fails with "<op>: <the error already set>", for errors from the engine's
 * other APIs. */
int graph_fail_in(const char *op);

/* ---- parallel rows -----------------------------------------------------------
 * Runs fn over rows [0, rows) cut into contiguous units handed out by ex's
 * weights: min(workloads, rows) units, fewer when the whole operation is
 * small (floats_per_row estimates one row's work) so that waking cores does
 * not cost more than the work.  Every row is computed by exactly one thread,
 * so the split never changes the result. */
typedef void (*graph_rows_fn)(const void *params, size_t begin, size_t end);
int graph_parallel(const acl_exec *ex, size_t rows, size_t floats_per_row, graph_rows_fn fn,
                   const void *params);

#endif
