/* Add-time checks on tensors, with one-line errors naming the operation. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "graph_impl.h"

const char *graph_dims_str(int rank, const int *dims, char *buf)
{
    size_t used = (size_t)snprintf(buf, GRAPH_DIMS_LEN, "[");
    for (int i = 0; i < rank && used < GRAPH_DIMS_LEN; i++)
        used += (size_t)snprintf(buf + used, GRAPH_DIMS_LEN - used, "%s%d", i ? "," : "", dims[i]);
    if (used < GRAPH_DIMS_LEN) snprintf(buf + used, GRAPH_DIMS_LEN - used, "]");
    return buf;
}

size_t graph_volume(const int *dims, int begin, int end)
{
    size_t v = 1;
    for (int i = begin; i < end; i++) v *= (size_t)dims[i];
    return v;
}

int graph_fail_in(const char *op)
{
    /* acl_fail formats into the buffer acl_last_error() returns: copy first. */
    char reason[400];
    snprintf(reason, sizeof reason, "%s", acl_last_error());
    return acl_fail("%s: %s", op, reason);
}

/* elem_bytes: 4 for float tensors, 1 for uint8 ones, which take a quarter
 * of the floats (rounded up) from their offset on. */
static int check_extent(const acl_graph *g, const char *op, const char *what, const acl_tensor *t,
                        size_t elem_bytes, size_t *count)
{
    if (!t) return acl_fail("%s: no %s tensor given", op, what);
    if (t->rank < 0 || t->rank > ACL_MAX_RANK)
        return acl_fail("%s: %s has rank %d; ranks 0 to %d are supported", op, what, t->rank,
                        ACL_MAX_RANK);
    char dims[GRAPH_DIMS_LEN];
    /* Stopping once past the arena or INT_MAX keeps the product from overflowing. */
    size_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 1)
            return acl_fail("%s: %s has dims %s; every dim must be >= 1", op, what,
                            graph_dims_str(t->rank, t->dims, dims));
        n *= (size_t)t->dims[i];
        if (n > g->arena_floats * sizeof(float) || n > INT_MAX) break;
    }
    if (n > INT_MAX)
        return acl_fail("%s: %s %s has over %d elements, which is not supported", op, what,
                        graph_dims_str(t->rank, t->dims, dims), INT_MAX);
    const size_t floats = (n * elem_bytes + sizeof(float) - 1) / sizeof(float);
    if (floats > g->arena_floats || t->offset > g->arena_floats - floats)
        return acl_fail("%s: %s %s%s at offset %zu runs past the end of the arena (%zu floats)", op,
                        what, elem_bytes == 1 ? "uint8 " : "",
                        graph_dims_str(t->rank, t->dims, dims), t->offset, g->arena_floats);
    *count = n;
    return 0;
}

int graph_check_tensor(const acl_graph *g, const char *op, const char *what, const acl_tensor *t,
                       size_t *count)
{
    return check_extent(g, op, what, t, sizeof(float), count);
}

int graph_check_tensor_u8(const acl_graph *g, const char *op, const char *what, const acl_tensor *t,
                          size_t *count)
{
    return check_extent(g, op, what, t, 1, count);
}

int graph_check_ranked(const acl_graph *g, const char *op, const char *what, const acl_tensor *t,
                       int rank, size_t *count)
{
    if (graph_check_tensor(g, op, what, t, count) != 0) return -1;
    if (rank >= 0 && t->rank != rank) {
        char dims[GRAPH_DIMS_LEN];
        return acl_fail("%s: %s has dims %s but must have rank %d", op, what,
                        graph_dims_str(t->rank, t->dims, dims), rank);
    }
    return 0;
}

int graph_check_dims(const char *op, const char *what, const acl_tensor *t, int rank,
                     const int *dims)
{
    if (t->rank == rank && memcmp(t->dims, dims, (size_t)rank * sizeof *dims) == 0) return 0;
    char got[GRAPH_DIMS_LEN], want[GRAPH_DIMS_LEN];
    return acl_fail("%s: %s has dims %s but must have %s", op, what,
                    graph_dims_str(t->rank, t->dims, got), graph_dims_str(rank, dims, want));
}

/* A tensor's extent in bytes from the arena's start. */
static void byte_range(const acl_tensor *t, size_t elem_bytes, size_t *begin, size_t *end)
{
    *begin = t->offset * sizeof(float);
    *end = *begin + graph_volume(t->dims, 0, t->rank) * elem_bytes;
}

/* Whether the two tensors (elements of the given sizes) share a byte. */
static int overlap(const acl_tensor *a, size_t a_elem, const acl_tensor *b, size_t b_elem)
{
    size_t a0, a1, b0, b1;
    byte_range(a, a_elem, &a0, &a1);
    byte_range(b, b_elem, &b0, &b1);
    return a0 < b1 && b0 < a1;
}

int graph_check_disjoint(const char *op, const acl_tensor *out, const char *what,
                         const acl_tensor *in, int same_ok)
{
    const size_t out_n = graph_volume(out->dims, 0, out->rank);
    const size_t in_n = graph_volume(in->dims, 0, in->rank);
    if (!overlap(out, sizeof(float), in, sizeof(float))) return 0;
    if (same_ok && in->offset == out->offset && in->rank == out->rank &&
        memcmp(in->dims, out->dims, (size_t)out->rank * sizeof(int)) == 0)
        return 0;
    return acl_fail("%s: the output [%zu, %zu) overlaps %s [%zu, %zu)%s", op, out->offset,
                    out->offset + out_n, what, in->offset, in->offset + in_n,
                    same_ok ? "; only an input of the output's exact region and dims may be "
                              "written in place"
                            : "");
}

int graph_check_disjoint_bytes(const char *op, const acl_tensor *out, size_t out_elem,
                               const char *what, const acl_tensor *in, size_t in_elem)
{
    if (!overlap(out, out_elem, in, in_elem)) return 0;
    size_t o0, o1, i0, i1;
    byte_range(out, out_elem, &o0, &o1);
    byte_range(in, in_elem, &i0, &i1);
    return acl_fail("%s: the output (bytes [%zu, %zu)) overlaps %s (bytes [%zu, %zu))", op, o0, o1,
                    what, i0, i1);
}

int graph_check_like_input(const acl_graph *g, const char *op, const acl_tensor *in,
                           const acl_tensor *out, int same_ok, size_t *count)
{
    size_t out_count;
    if (graph_check_tensor(g, op, "input", in, count) != 0 ||
        graph_check_tensor(g, op, "output", out, &out_count) != 0 ||
        graph_check_dims(op, "output", out, in->rank, in->dims) != 0)
        return -1;
    return graph_check_disjoint(op, out, "the input", in, same_ok);
}

int graph_check_scale_shift(const acl_graph *g, const char *op, const acl_tensor *ins,
                            const acl_tensor *out, int len)
{
    size_t count;
    for (int i = 1; i <= 2; i++) {
        const char *what = i == 1 ? "scale" : "shift";
        if (graph_check_ranked(g, op, what, &ins[i], 1, &count) != 0 ||
            graph_check_dims(op, what, &ins[i], 1, &len) != 0 ||
            graph_check_disjoint(op, out, what, &ins[i], 0) != 0)
            return -1;
    }
    return 0;
}

int graph_check_count(const char *op, const char *attr, size_t given, size_t want)
{
    if (given == want) return 0;
    return acl_fail("%s: %s must hold %zu value%s, got %zu", op, attr, want, want == 1 ? "" : "s",
                    given);
}

int graph_check_perm(const char *op, const char *attr, int rank, const int *perm)
{
    if (!perm && rank > 0) return acl_fail("%s: no %s given", op, attr);
    int seen = 0;
    for (int i = 0; i < rank; i++) {
        if (perm[i] < 0 || perm[i] >= rank || (seen >> perm[i] & 1))
            return acl_fail("%s: %s[%d] = %d: the %s must order each of the %d axes once", op, attr,
                            i, perm[i], attr, rank);
        seen |= 1 << perm[i];
    }
    return 0;
}
