/* int8 GEMM: C[M,N] (int32) = A[M,K] (uint8 activations) x B[K,N] (int8 weights).
 *
 * As in the fp32 GEMM, the micro-kernels are the only ISA-specific code: each
 * computes one full MR x NR tile from packed A and packed B, and the
 * macro-kernel (gemm_int8.c) packs, walks the tiles and cuts the edge tiles.
 *
 * Packing.  K is split into groups of KR consecutive values (KR = 4 for the
 * dot-product instructions, vpdpbusd and SDOT, that sum 4 products per int32
 * lane; 2 for vpmaddwd; 1 for SMLAL), the last group zero-padded, so a K that
 * is no multiple of KR costs nothing but padding: a zero times anything adds 0.
 *   packed B: per panel of NR columns, the NR int32 column sums of B, then
 *             for each K group, NR columns x KR int8 values (a column's KR
 *             values contiguous); columns past N are zero;
 *   packed A: per panel of MR rows, for each K group MR rows x KR uint8
 *             values; rows past M are zero.
 *
 * Signedness.  Every kernel returns the exact sum of raw u8 x s8 products.
 * The activation's zero point za is left to the epilogue, which uses
 *   sum_k (a - za) b = sum_k a b - za * colsum(B)
 * with the column sums kept in the packed B (weights are symmetric, as
 * onnxruntime's per-channel int8 quantisation makes them, so B has no zero
 * point).  SDOT multiplies signed by signed, so its kernel flips A to
 * a - 128 (an xor of the top bit) and adds 128 * colsum(B) back when it
 * starts its accumulators.
 *
 * Range.  |a b| <= 255 * 128, so an int32 sum is exact up to K = 65793;
 * acl_gemm_int8_check refuses a larger K.
 */
#ifndef ACL_GEMM_INT8_H
#define ACL_GEMM_INT8_H

#include <stddef.h>
#include <stdint.h>

#define ACL_INT8_MAX_K 65536

/* C[MR x NR] with row stride ldc = the tile of packed A and packed B over
 * kgroups K groups; b_panel points at the panel's column sums. */
typedef void (*acl_ukr_int8_fn)(size_t kgroups, const uint8_t *a_packed, const int32_t *b_panel,
                                int32_t *c, size_t ldc);
/* A kernel's definition, with the parameters of acl_ukr_int8_fn; its packed
 * B data starts after the NR column sums. */
#define ACL_UKR_INT8(name) \
    void name(size_t kgroups, const uint8_t *a, const int32_t *b_panel, int32_t *c, size_t ldc)

/* A rows kernel reads A in place instead, row r of the tile at a + r * lda,
 * KR * kgroups bytes of it (so the macro-kernel copies a row only where K is
 * no multiple of KR, or the tile would run past the last row): it spares
 * the packing pass, a copy of every A byte that cost the im2col layers about
 * a third of their GEMM time. */
typedef void (*acl_ukr_int8_rows_fn)(size_t kgroups, const uint8_t *a, size_t lda,
                                     const int32_t *b_panel, int32_t *c, size_t ldc);
#define ACL_UKR_INT8_ROWS(name)                                                           \
    void name(size_t kgroups, const uint8_t *a, size_t lda, const int32_t *b_panel, int32_t *c, \
              size_t ldc)

/* The requantisation a rows kernel's twin applies to its tile's sums
 * before storing them as bytes, requant.h's with an int32 offset:
 *   out = clamp(round_half_even(clamp((sum + offset[j]) * scale[j], +-512)) + zc, lo, hi)
 * offset and scale hold the tile's NR columns from its first (columns past
 * N are read but not stored). */
typedef struct {
    const int32_t *offset;
    const float *scale;
    int32_t zc;
    int32_t lo, hi;  /* 0 <= lo <= hi <= 255 */
} acl_int8_tile_requant;
/* A rows kernel's twin: the same tile, its sums requantised in registers
 * and stored as bytes (row stride ldc), rather than written out as int32
 * for a second pass to read back: that pass took half the time of a
 * pointwise layer with K = 16 (MobileNetV2's 16 -> 96). */
typedef void (*acl_ukr_int8_rows_requant_fn)(size_t kgroups, const uint8_t *a, size_t lda,
                                             const int32_t *b_panel, const acl_int8_tile_requant *q,
                                             uint8_t *c, size_t ldc);
#define ACL_UKR_INT8_ROWS_REQUANT(name)                                                      \
    void name(size_t kgroups, const uint8_t *a, size_t lda, const int32_t *b_panel,          \
              const acl_int8_tile_requant *q, uint8_t *c, size_t ldc)

typedef struct {
    /* "MRxNRcKR-interleaved-isa" (packed A) or "MRxNRcKR-rows-isa" (A in place),
     * e.g. "8x16c4-interleaved-avx512vnni" */
    const char *name;
    const char *isa;   /* "avx512vnni", "avx2", "neon", "neondot" */
    int mr, nr, kr;
    acl_ukr_int8_fn fn;            /* an interleaved kernel, or NULL */
    acl_ukr_int8_rows_fn rows_fn;  /* a rows kernel, or NULL */
    acl_ukr_int8_rows_requant_fn rows_requant_fn;  /* a rows kernel's twin, or NULL */
    /* The twin for a tile of one row (a fully connected layer at batch 1),
     * or NULL: rows_requant_fn would sum MR - 1 rows of zero padding too,
     * at MR times the instructions. */
    acl_ukr_int8_rows_requant_fn row_requant_fn;
} acl_ukernel_int8;

#define ACL_INT8_MAX_MR 16
#define ACL_INT8_MAX_TILE (16 * 64)

/* The int8 micro-kernels this CPU can run, fastest first: a kernel whose
 * instructions the CPU lacks (cpuid, or HWCAP_ASIMDDP on AArch64) is left out. */
int acl_int8_ukernels_available(const acl_ukernel_int8 *const **list);
const acl_ukernel_int8 *acl_int8_ukernel_find(const char *name);
/* Every int8 kernel this build holds, whether or not this CPU runs it. */
int acl_int8_ukernels_built(const acl_ukernel_int8 *const **list);

/* Bytes of the packed B of a K x N weight matrix. */
size_t acl_gemm_int8_packed_b_size(const acl_ukernel_int8 *uk, int k, int n);
/* Packs B (K x N, row stride ldb) and its column sums into `out`. */
void acl_gemm_int8_pack_b(const acl_ukernel_int8 *uk, int k, int n, const int8_t *b, int ldb,
                          void *out);
/* 0 if uk can multiply a K-deep product, else -1 with acl_last_error set. */
int acl_gemm_int8_check(const acl_ukernel_int8 *uk, int k);
/* C (M x N, row stride ldc) = A (M x K, row stride lda) x the packed B; -1
 * with the error set when K is out of range or memory runs out. */
int acl_gemm_int8(const acl_ukernel_int8 *uk, int m, int n, int k, const uint8_t *a, int lda,
                  const void *packed_b, int32_t *c, int ldc);
/* Bytes of the packed A panels acl_gemm_int8_scratch needs for M x K. */
size_t acl_gemm_int8_packed_a_bytes(const acl_ukernel_int8 *uk, int m, int k);
/* acl_gemm_int8 packing A into the caller's a_packed (packed_a_bytes long),
 * for callers that run it many times and may allocate nothing (a graph's
 * int8 convolution, per worker); K must have passed acl_gemm_int8_check. */
void acl_gemm_int8_scratch(const acl_ukernel_int8 *uk, int m, int n, int k, const uint8_t *a,
                           int lda, const void *packed_b, int32_t *c, int ldc, uint8_t *a_packed);
/* acl_gemm_int8_scratch through uk's rows_requant_fn (uk must have one): C
 * (M x N bytes, row stride ldc) requantised by q, whose offset and scale
 * are those of C's column 0 and readable up to N rounded up to NR. */
void acl_gemm_int8_requant(const acl_ukernel_int8 *uk, int m, int n, int k, const uint8_t *a,
                           int lda, const void *packed_b, const acl_int8_tile_requant *q,
                           uint8_t *c, int ldc, uint8_t *a_packed);
/* The column sums in a packed B, N of them, for the zero-point epilogue. */
void acl_gemm_int8_column_sums(const acl_ukernel_int8 *uk, int n, int k, const void *packed_b,
                               int32_t *sums);

#endif
