/* GEMM micro-kernels: the only ISA-specific code of the GEMM.
 *
 * Every micro-kernel computes one full MR x NR tile of C = A B over kc steps;
 * the macro-kernel (gemm.c) handles blocking, packing, partial edge tiles and
 * threads.  B is always packed: kc rows of NR floats, zero-padded.  How A is
 * read depends on the packing style:
 *   interleaved  A packed too: kc columns of MR floats (ACL's interleave);
 *   hybrid       A read in place through MR row pointers, each row kc
 *                contiguous floats (ACL's hybrid / indirect arrangement);
 *   smallk       hybrid, specialised for a small whole K (kmin < K <= kmax).
 * What a call does around its K loop is acl_ukr_epilogue.
 *
 * An fp16 kernel (isa "neonfp16", Armv8.2-A FP16 arithmetic) is interleaved:
 * the macro-kernel converts A and B to IEEE half precision as it packs them,
 * the kernel sums a K block's products in half precision and adds the block
 * to C in fp32 with the same epilogue.  Only algorithms that declare it take
 * one (conv_algo.fp16), so that a plan computes in fp16 only where the tuner
 * was allowed to choose it.
 */
#ifndef ACL_UKERNEL_H
#define ACL_UKERNEL_H

#include <stddef.h>
#include <stdint.h>

typedef enum { ACL_STYLE_INTERLEAVED, ACL_STYLE_HYBRID, ACL_STYLE_SMALLK } acl_style;

/* A tile starts from zero, or from `bias` (NR floats: the first K block of a
 * tile), and is written to C, or added to what C holds when `accumulate`
 * (later K blocks).  The last K block may add `residual` (an MR x NR block
 * with C's ldc) and clamp to [lo, hi] (ReLU, Clip) before the store, so that
 * a small-K layer's epilogue costs no second pass over its output.  Only the
 * first `cols` columns (1..NR) of C, the bias and the residual are read or
 * written: the last panel of an N that is no multiple of NR is stored in
 * place, with masked edges, and costs only the column vectors it needs. */
typedef struct {
    const float *bias;
    const float *residual;
    int cols, accumulate, clamp;
    float lo, hi;
} acl_ukr_epilogue;

typedef void (*acl_ukr_interleaved_fn)(size_t kc, const float *a_packed, const float *b_packed,
                                       float *c, size_t ldc, const acl_ukr_epilogue *ep);
typedef void (*acl_ukr_hybrid_fn)(size_t kc, const float *const *a_rows, const float *b_packed,
                                  float *c, size_t ldc, const acl_ukr_epilogue *ep);
/* The bits of an IEEE half: packed operands of an fp16 kernel. */
typedef uint16_t acl_half;
typedef void (*acl_ukr_fp16_fn)(size_t kc, const acl_half *a_packed, const acl_half *b_packed,
                                float *c, size_t ldc, const acl_ukr_epilogue *ep);
/* The first `rows` (1..MR-1) rows of a hybrid tile: a partial last tile. */
typedef void (*acl_ukr_hybrid_rows_fn)(int rows, size_t kc, const float *const *a_rows,
                                       const float *b_packed, float *c, size_t ldc,
                                       const acl_ukr_epilogue *ep);

typedef struct {
    const char *name;  /* "MRxNR-style-isa", e.g. "6x16-hybrid-avx512" */
    const char *isa;   /* "avx512", "avx2", "neon", "neonfp16" */
    acl_style style;
    int mr, nr;
    int kmin, kmax;    /* valid for kmin < K <= kmax; kmax == 0: unbounded */
    int n_multiple;    /* N must be a multiple of this (1: any N) */
    acl_ukr_interleaved_fn interleaved;  /* set for fp32 ACL_STYLE_INTERLEAVED */
    acl_ukr_fp16_fn fp16_fn;             /* an fp16 kernel (interleaved), else NULL */
    acl_ukr_hybrid_fn hybrid;            /* set for the other styles */
    acl_ukr_hybrid_rows_fn hybrid_rows;  /* with hybrid */
} acl_ukernel;

/* Bounds on every kernel's tile: the macro-kernel keeps MR row pointers and
 * computes an interleaved kernel's partial edge tiles in an MR x NR stack
 * tile. */
#define ACL_UKR_MAX_MR 16
#define ACL_UKR_MAX_TILE_FLOATS (16 * 64)

/* The micro-kernels this machine can run, fastest family first. */
int acl_ukernels_available(const acl_ukernel *const **list);
const acl_ukernel *acl_ukernel_find(const char *name);

#endif
