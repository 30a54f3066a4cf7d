/* Packed constant B matrices shared by a graph's matmuls.  An unrolled
 * bidirectional LSTM exported as Gemms (a CRNN's 31 steps a direction) names
 * one weight in every step: packed per operation, its 62 copies of a 0.8 MB
 * matrix made 48 MB to stream per inference where 1.6 MB stay in cache.
 *
 * A new matrix is packed, then compared with the packed ones of the same
 * kernel and shape (a hash first, then every float): equal packed data is
 * equal weights whatever array they came from, so nothing rests on the
 * caller's pointers, which a temporary may reuse. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

struct graph_shared_b {
    acl_packed_b b;
    uint64_t hash;
};

static uint64_t packed_hash(const acl_packed_b *b)
{
    const unsigned char *p = (const unsigned char *)b->data;
    const size_t bytes = acl_packed_b_floats(b->uk, b->ks * b->kc, b->n) * sizeof(float);
    uint64_t h = 14695981039346656037ull;  /* FNV-1a */
    for (size_t i = 0; i < bytes; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

const acl_packed_b *graph_shared_b(acl_graph *g, const acl_ukernel *uk, int k, int n,
                                   const float *src, ptrdiff_t stride_n, ptrdiff_t stride_c)
{
    acl_packed_b fresh;
    if (acl_pack_b(uk, 1, k, n, src, stride_n, stride_c, 0, &fresh) != 0) return NULL;
    const uint64_t hash = packed_hash(&fresh);
    const size_t bytes = acl_packed_b_floats(uk, k, n) * sizeof(float);
    for (int i = 0; i < g->shared_b_count; i++) {
        const acl_packed_b *b = &g->shared_b[i]->b;
        if (g->shared_b[i]->hash == hash && b->uk == uk && b->kc == k && b->n == n &&
            memcmp(b->data, fresh.data, bytes) == 0) {
            acl_packed_b_free(&fresh);
            return b;
        }
    }
    /* Each entry allocated alone: the matmuls keep pointers to it. */
    struct graph_shared_b *entry = malloc(sizeof *entry);
    if (entry && g->shared_b_count == g->shared_b_capacity) {
        const int capacity = g->shared_b_capacity ? 2 * g->shared_b_capacity : 8;
        struct graph_shared_b **grown = realloc(g->shared_b, (size_t)capacity * sizeof *grown);
        if (grown) {
            g->shared_b = grown;
            g->shared_b_capacity = capacity;
        }
    }
    if (!entry || g->shared_b_count == g->shared_b_capacity) {
        free(entry);
        acl_packed_b_free(&fresh);
        acl_fail("graph: out of memory keeping a packed matrix");
        return NULL;
    }
    *entry = (struct graph_shared_b){fresh, hash};
    g->shared_b[g->shared_b_count++] = entry;
    return &entry->b;
}

void graph_shared_b_free(acl_graph *g)
{
    for (int i = 0; i < g->shared_b_count; i++) {
        acl_packed_b_free(&g->shared_b[i]->b);
        free(g->shared_b[i]);
    }
    free(g->shared_b);
    g->shared_b = NULL;
    g->shared_b_count = g->shared_b_capacity = 0;
}
