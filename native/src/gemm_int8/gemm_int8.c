/* The int8 macro-kernel: packs A and B as int8.h lays them out and walks the
 * MR x NR tiles of C.  Single-threaded, and K in one block: an int8 layer's
 * packed A panel (MR x K bytes) stays in L1 up to K of a few thousand, and
 * threads come with the int8 convolution algorithms that call this. */
#include <string.h>

#include "int8.h"
#include "internal.h"

static size_t kgroups_of(const acl_ukernel_int8 *uk, int k)
{
    return ((size_t)k + uk->kr - 1) / uk->kr;
}

/* Panels start int32-aligned, so that the column sums heading each are. */
static size_t panel_bytes(const acl_ukernel_int8 *uk, int k)
{
    size_t bytes = uk->nr * sizeof(int32_t) + kgroups_of(uk, k) * uk->nr * uk->kr;
    return (bytes + 15) & ~(size_t)15;
}

/* Panel p of a packed B, at its column sums. */
static const int32_t *panel_of(const acl_ukernel_int8 *uk, int k, const void *packed_b, int p)
{
    return (const int32_t *)(const void *)((const uint8_t *)packed_b +
                                           (size_t)p * panel_bytes(uk, k));
}

size_t acl_gemm_int8_packed_b_size(const acl_ukernel_int8 *uk, int k, int n)
{
    return ((size_t)n + uk->nr - 1) / uk->nr * panel_bytes(uk, k);
}

void acl_gemm_int8_pack_b(const acl_ukernel_int8 *uk, int k, int n, const int8_t *b, int ldb,
                          void *out)
{
    const int nr = uk->nr, kr = uk->kr;
    const size_t kgroups = kgroups_of(uk, k);
    memset(out, 0, acl_gemm_int8_packed_b_size(uk, k, n));
    for (int j0 = 0; j0 < n; j0 += nr) {
        uint8_t *panel = (uint8_t *)out + (size_t)(j0 / nr) * panel_bytes(uk, k);
        int32_t *sums = (int32_t *)(void *)panel;
        int8_t *data = (int8_t *)(panel + nr * sizeof(int32_t));
        for (int j = 0; j < nr && j0 + j < n; j++)
            for (size_t g = 0; g < kgroups; g++)
                for (int q = 0; q < kr && g * kr + q < (size_t)k; q++) {
                    const int8_t v = b[(g * kr + q) * (size_t)ldb + j0 + j];
                    data[(g * nr + j) * kr + q] = v;
                    sums[j] += v;
                }
    }
}

void acl_gemm_int8_column_sums(const acl_ukernel_int8 *uk, int n, int k, const void *packed_b,
                               int32_t *sums)
{
    for (int j = 0; j < n; j++) sums[j] = panel_of(uk, k, packed_b, j / uk->nr)[j % uk->nr];
}

int acl_gemm_int8_check(const acl_ukernel_int8 *uk, int k)
{
    if (k < 1 || k > ACL_INT8_MAX_K)
        return acl_fail("int8 GEMM with K = %d: %s takes 1 <= K <= %d (its int32 sums would "
                        "overflow past it)",
                        k, uk->name, ACL_INT8_MAX_K);
    return 0;
}

/* The full K groups of one row: kr a compile-time constant in each call
 * below, so each group is one load and store rather than a byte loop with
 * a division per byte (the im2col layers' packing cost more than their
 * GEMM that way). */
static inline void pack_row(uint8_t *dst, const uint8_t *src, int groups, int mr, int kr)
{
    for (int g = 0; g < groups; g++) memcpy(dst + (size_t)g * mr * kr, src + (size_t)g * kr, kr);
}

static void pack_a(const acl_ukernel_int8 *uk, int rows, int k, const uint8_t *a, int lda,
                   uint8_t *out)
{
    const int mr = uk->mr, kr = uk->kr, full = k / kr, tail = k - full * kr;
    /* Zeros where no row or no K value lands: a full panel with K a
     * multiple of KR has none. */
    if (rows < mr || tail) memset(out, 0, kgroups_of(uk, k) * mr * kr);
    for (int i = 0; i < rows; i++) {
        const uint8_t *src = a + (size_t)i * lda;
        uint8_t *dst = out + (size_t)i * kr;
        if (kr == 4) pack_row(dst, src, full, mr, 4);
        else if (kr == 2) pack_row(dst, src, full, mr, 2);
        else pack_row(dst, src, full, mr, kr);
        if (tail) memcpy(dst + (size_t)full * mr * kr, src + (size_t)full * kr, (size_t)tail);
    }
}

size_t acl_gemm_int8_packed_a_bytes(const acl_ukernel_int8 *uk, int m, int k)
{
    return ((size_t)m + uk->mr - 1) / uk->mr * kgroups_of(uk, k) * uk->mr * uk->kr;
}

int acl_gemm_int8(const acl_ukernel_int8 *uk, int m, int n, int k, const uint8_t *a, int lda,
                  const void *packed_b, int32_t *c, int ldc)
{
    if (acl_gemm_int8_check(uk, k)) return -1;
    uint8_t *a_packed = acl_alloc(acl_gemm_int8_packed_a_bytes(uk, m, k));
    if (!a_packed) return -1;
    acl_gemm_int8_scratch(uk, m, n, k, a, lda, packed_b, c, ldc, a_packed);
    acl_free(a_packed);
    return 0;
}

/* Every A panel is packed first, then each B panel (K x NR, tens of KB)
 * meets all of them while it stays in L1/L2: B is read from memory once per
 * call, not once per MR rows (a 3x3 with 512 channels has 2.4 MB of packed
 * B). */
/* A rows kernel's run: A read in place where its rows hold whole K groups
 * and a full tile of rows; otherwise (K no multiple of KR, the last rows)
 * those rows are first copied into a_packed as rows of KR * kgroups bytes,
 * zero-padded.  With q, through the kernel's requantising twin into the
 * bytes c8 (a tile of one row through the twin's one-row kernel, where
 * there is one); without, the int32 sums into c. */
static void gemm_rows(const acl_ukernel_int8 *uk, int m, int n, int k, const uint8_t *a, size_t lda,
                      const void *packed_b, int32_t *c, const acl_int8_tile_requant *q, uint8_t *c8,
                      int ldc, uint8_t *a_packed)
{
    const int mr = uk->mr, nr = uk->nr;
    const size_t kgroups = kgroups_of(uk, k), kpad = kgroups * uk->kr;
    /* Rows [copied, m) are read from a_packed (from row `copied` on). */
    const int copied = (size_t)k == kpad ? m / mr * mr : 0;
    const int padded = acl_div_up(m, mr) * mr;
    if (copied < padded) {
        memset(a_packed, 0, (size_t)(padded - copied) * kpad);
        for (int i = copied; i < m; i++)
            memcpy(a_packed + (size_t)(i - copied) * kpad, a + (size_t)i * lda, (size_t)k);
    }
    int32_t edge[ACL_INT8_MAX_TILE];
    uint8_t edge8[ACL_INT8_MAX_TILE];
    for (int j0 = 0; j0 < n; j0 += nr) {
        const int cols = n - j0 < nr ? n - j0 : nr;
        const int32_t *b_panel = panel_of(uk, k, packed_b, j0 / nr);
        const acl_int8_tile_requant tq =
            q ? (acl_int8_tile_requant){q->offset + j0, q->scale + j0, q->zc, q->lo, q->hi}
              : (acl_int8_tile_requant){0};
        for (int i0 = 0; i0 < m; i0 += mr) {
            const int rows = m - i0 < mr ? m - i0 : mr;
            const uint8_t *a_tile =
                i0 < copied ? a + (size_t)i0 * lda : a_packed + (size_t)(i0 - copied) * kpad;
            const size_t stride = i0 < copied ? lda : kpad;
            const int whole = rows == mr && cols == nr;
            if (q) {
                uint8_t *tile = c8 + (size_t)i0 * ldc + j0;
                const int one = rows == 1 && uk->row_requant_fn;
                const int direct = (whole || one) && cols == nr;
                (one ? uk->row_requant_fn : uk->rows_requant_fn)(kgroups, a_tile, stride, b_panel,
                                                                 &tq, direct ? tile : edge8,
                                                                 direct ? (size_t)ldc : (size_t)nr);
                for (int i = 0; !direct && i < rows; i++)
                    memcpy(tile + (size_t)i * ldc, edge8 + (size_t)i * nr, (size_t)cols);
                continue;
            }
            int32_t *tile = c + (size_t)i0 * ldc + j0;
            if (whole) {
                uk->rows_fn(kgroups, a_tile, stride, b_panel, tile, ldc);
                continue;
            }
            uk->rows_fn(kgroups, a_tile, stride, b_panel, edge, nr);
            for (int i = 0; i < rows; i++)
                memcpy(tile + (size_t)i * ldc, edge + (size_t)i * nr, cols * sizeof *tile);
        }
    }
}

void acl_gemm_int8_requant(const acl_ukernel_int8 *uk, int m, int n, int k, const uint8_t *a,
                           int lda, const void *packed_b, const acl_int8_tile_requant *q,
                           uint8_t *c, int ldc, uint8_t *a_packed)
{
    gemm_rows(uk, m, n, k, a, (size_t)lda, packed_b, NULL, q, c, ldc, a_packed);
}

void acl_gemm_int8_scratch(const acl_ukernel_int8 *uk, int m, int n, int k, const uint8_t *a,
                           int lda, const void *packed_b, int32_t *c, int ldc, uint8_t *a_packed)
{
    const int mr = uk->mr, nr = uk->nr;
    if (uk->rows_fn) {
        gemm_rows(uk, m, n, k, a, (size_t)lda, packed_b, c, NULL, NULL, ldc, a_packed);
        return;
    }
    const size_t kgroups = kgroups_of(uk, k), panel = kgroups * mr * uk->kr;
    int32_t edge[ACL_INT8_MAX_TILE];
    for (int i0 = 0; i0 < m; i0 += mr)
        pack_a(uk, m - i0 < mr ? m - i0 : mr, k, a + (size_t)i0 * lda, lda,
               a_packed + (size_t)(i0 / mr) * panel);
    for (int j0 = 0; j0 < n; j0 += nr) {
        const int cols = n - j0 < nr ? n - j0 : nr;
        const int32_t *b_panel = panel_of(uk, k, packed_b, j0 / nr);
        for (int i0 = 0; i0 < m; i0 += mr) {
            const int rows = m - i0 < mr ? m - i0 : mr;
            const uint8_t *a_panel = a_packed + (size_t)(i0 / mr) * panel;
            int32_t *tile = c + (size_t)i0 * ldc + j0;
            if (rows == mr && cols == nr) {
                uk->fn(kgroups, a_panel, b_panel, tile, ldc);
                continue;
            }
            /* An edge tile runs whole into `edge`; only its real part is copied out. */
            uk->fn(kgroups, a_panel, b_panel, edge, nr);
            for (int i = 0; i < rows; i++)
                memcpy(tile + (size_t)i * ldc, edge + (size_t)i * nr, cols * sizeof *tile);
        }
    }
}
