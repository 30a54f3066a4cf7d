/* The register tile shared by the micro-kernel templates.
 *
 * A kernel file defines MR, NR, VEC_FLOATS (floats per vector register) and
 * UKERNEL_NAME, then includes one style template, which includes this.  The
 * MR x NR accumulators are NV full vectors per row plus, when NR is not a
 * multiple of the vector width, one half vector (NEON's 8x6 = 4 + 2 columns).
 * Every loop over the tile is fully unrolled with constant indices so that GCC
 * keeps the arrays below in registers.
 */
#ifndef ACL_TEMPLATE_TILE_H
#define ACL_TEMPLATE_TILE_H

#include <stddef.h>

#include "ukernel.h"
#include "vector_select.h"

#if !defined(MR) || !defined(NR) || !defined(VEC_FLOATS) || !defined(UKERNEL_NAME)
#error "define MR, NR, VEC_FLOATS and UKERNEL_NAME before including a micro-kernel template"
#endif

/* The rows the tile macros loop over: MR, or a constant below it where a
 * template instantiates its kernel for an edge tile's rows. */
#ifndef TILE_ROWS
#define TILE_ROWS MR
#endif

#define VH_FLOATS (VEC_FLOATS / 2)
#define NV (NR / VEC_FLOATS)
#define NH ((NR % VEC_FLOATS) / VH_FLOATS)
_Static_assert(NV *VEC_FLOATS + NH * VH_FLOATS == NR,
               "NR must be whole vectors plus at most one half vector");

/* The column vectors the tile macros compute: all of them, or constants
 * below where a template instantiates its kernel for the last panel of an N
 * that ends inside it (see TILE_BY_WIDTH). */
#ifndef TILE_VECTORS
#define TILE_VECTORS NV
#endif
#ifndef TILE_HALVES
#define TILE_HALVES NH
#endif

#define ACL_PRAGMA(x) _Pragma(#x)
#define UNROLL ACL_PRAGMA(GCC unroll 64)

typedef float vf __attribute__((vector_size(VEC_FLOATS * sizeof(float))));
typedef float vh __attribute__((vector_size(VH_FLOATS * sizeof(float))));
/* Packed panels and C rows are only float-aligned. */
typedef float vf_u __attribute__((vector_size(VEC_FLOATS * sizeof(float)), aligned(4), may_alias));
typedef float vh_u __attribute__((vector_size(VH_FLOATS * sizeof(float)), aligned(4), may_alias));

/* A values are fetched A_LANES at a time.  NEON multiplies by a vector lane
 * for free (FMLA by element), so loading four A values with one instruction
 * saves three loads, as long as the A_LANE_VECTORS vectors the style keeps
 * live fit next to the accumulators and one B row in the 32 registers (or
 * GCC spills accumulators).  x86 broadcasts straight from memory instead. */
#if !defined(A_LANE_VECTORS)
#error "the style template defines A_LANE_VECTORS"
#endif
#if defined(__aarch64__) && MR * (NV + NH) + (NV + NH) + A_LANE_VECTORS <= 32
#define A_LANES 4
typedef float va __attribute__((vector_size(A_LANES * sizeof(float))));
typedef float va_u __attribute__((vector_size(A_LANES * sizeof(float)), aligned(4), may_alias));
#define A_LOAD(p) (*(const va_u *)(p))
#define A_LANE(v, l) ((v)[l])
#else
#define A_LANES 1
typedef float va;
#define A_LOAD(p) (*(p))
#define A_LANE(v, l) (v)
#endif

/* Loads and stores of the first `lanes` floats of a vector at p: the whole
 * vector when lanes covers it, nothing when lanes <= 0, a masked access in
 * between, so a tile cut short at column `cols` (a grouped convolution's 34
 * output channels) never touches memory past it.  Called with constant lanes
 * in a full tile, they fold to plain vector accesses.  AVX-512 masks its
 * accesses; TILE_LANE_ACCESS is the portable pair for a vector type v of
 * `width` floats, a lane loop. */
#define TILE_LANE_ACCESS(v, width)                                              \
    static inline v v##_load_lanes(const float *p, int lanes)                  \
    {                                                                           \
        if (lanes >= (width)) return *(const v##_u *)p;                         \
        v r = {0};                                                              \
        for (int l = 0; l < lanes; l++) r[l] = p[l];                            \
        return r;                                                               \
    }                                                                           \
    static inline void v##_store_lanes(float *p, v x, int lanes)               \
    {                                                                           \
        if (lanes >= (width)) *(v##_u *)p = x;                                  \
        else for (int l = 0; l < lanes; l++) p[l] = x[l];                       \
    }
#if defined(__AVX512F__) && VEC_FLOATS == 16
#include <immintrin.h>
static inline vf vf_load_lanes(const float *p, int lanes)
{
    if (lanes >= VEC_FLOATS) return *(const vf_u *)p;
    return (vf)_mm512_maskz_loadu_ps((__mmask16)((1u << (lanes > 0 ? lanes : 0)) - 1), p);
}
static inline void vf_store_lanes(float *p, vf v, int lanes)
{
    if (lanes >= VEC_FLOATS) *(vf_u *)p = v;
    else if (lanes > 0) _mm512_mask_storeu_ps(p, (__mmask16)((1u << lanes) - 1), (__m512)v);
}
#else
TILE_LANE_ACCESS(vf, VEC_FLOATS)
#endif
TILE_LANE_ACCESS(vh, VH_FLOATS)

/* The accumulators, each column vector starting from the bias row (its first
 * `cols` floats) or zero. */
#define TILE_DECLARE(bias, cols)                                                \
    vf acc[MR][NV];                                                             \
    vh acch[MR][NH];                                                            \
    do {                                                                        \
        const float *b0_ = (bias);                                              \
        const int n0_ = b0_ ? ((cols) >= NR ? NR : (cols)) : 0;                 \
        UNROLL for (int j_ = 0; j_ < TILE_VECTORS; j_++) {                  \
            vf v_ = (vf){0};                                                    \
            if (n0_) v_ = vf_load_lanes(b0_ + j_ * VEC_FLOATS, n0_ - j_ * VEC_FLOATS); \
            UNROLL for (int i_ = 0; i_ < TILE_ROWS; i_++) acc[i_][j_] = v_;             \
        }                                                                       \
        UNROLL for (int j_ = 0; j_ < TILE_HALVES; j_++) {                   \
            vh v_ = (vh){0};                                                    \
            if (n0_) v_ = vh_load_lanes(b0_ + NV * VEC_FLOATS, n0_ - NV * VEC_FLOATS); \
            UNROLL for (int i_ = 0; i_ < TILE_ROWS; i_++) acch[i_][j_] = v_;            \
        }                                                                       \
    } while (0)

/* The rank-1 update of one k step: tile += A column x B row, where A_AT(i)
 * is row i's A value and bptr the packed B row (NR floats).  The loop order
 * keeps the fewest registers live for how each ISA gets A: NEON holds the A
 * values in registers and streams B one vector at a time; x86 holds the B row
 * and broadcasts each A value from memory as it goes. */
#if defined(__aarch64__)
#define TILE_STEP(bptr, A_AT)                                                   \
    do {                                                                        \
        UNROLL for (int j_ = 0; j_ < TILE_VECTORS; j_++) {                  \
            const vf b_ = *(const vf_u *)((bptr) + j_ * VEC_FLOATS);            \
            UNROLL for (int i_ = 0; i_ < TILE_ROWS; i_++) acc[i_][j_] += A_AT(i_) * b_; \
        }                                                                       \
        UNROLL for (int j_ = 0; j_ < TILE_HALVES; j_++) {                   \
            const vh b_ = *(const vh_u *)((bptr) + NV * VEC_FLOATS);            \
            UNROLL for (int i_ = 0; i_ < TILE_ROWS; i_++) acch[i_][j_] += A_AT(i_) * b_; \
        }                                                                       \
    } while (0)
#else
#define TILE_STEP(bptr, A_AT)                                                   \
    do {                                                                        \
        vf bf_[NV];                                                             \
        vh bh_[NH];                                                             \
        UNROLL for (int j_ = 0; j_ < TILE_VECTORS; j_++)                    \
            bf_[j_] = *(const vf_u *)((bptr) + j_ * VEC_FLOATS);                \
        UNROLL for (int j_ = 0; j_ < TILE_HALVES; j_++)                     \
            bh_[j_] = *(const vh_u *)((bptr) + NV * VEC_FLOATS);                \
        UNROLL for (int i_ = 0; i_ < TILE_ROWS; i_++) {                                \
            const float a_ = A_AT(i_);                                          \
            UNROLL for (int j_ = 0; j_ < TILE_VECTORS; j_++) acc[i_][j_] += a_ * bf_[j_]; \
            UNROLL for (int j_ = 0; j_ < TILE_HALVES; j_++) acch[i_][j_] += a_ * bh_[j_]; \
        }                                                                       \
    } while (0)
#endif

/* The full vectors a tile cut short at column `cols` needs, where they are
 * fewer than the tile's (or leave out its half vector); 0 where it needs the
 * whole tile. */
static inline int tile_narrow_vectors(int cols)
{
    if (cols >= NR) return 0;
    const int v = (cols + VEC_FLOATS - 1) / VEC_FLOATS;
    return v < NV || (NH && v == NV) ? v : 0;
}

/* Runs CALL(vectors, halves), a template's tile with those column vectors
 * made constants, for a tile whose C ends at column `cols`: the last panel
 * of an N that ends inside it then costs the vectors it stores, not the
 * whole tile's (N = 240 in panels of 32 columns: the eighth, of 16, took a
 * full panel's multiply-adds). */
_Static_assert(NV <= 6, "TILE_BY_WIDTH has cases for up to 6 vectors");
#define TILE_WIDTH_CASE(v, CALL)                                                \
    case v:                                                                     \
        if ((v) < NV || ((v) == NV && NH)) CALL((v) <= NV ? (v) : NV, 0);       \
        break;
#define TILE_BY_WIDTH(cols, CALL)                                               \
    do {                                                                        \
        switch (tile_narrow_vectors(cols)) {                                    \
            TILE_WIDTH_CASE(1, CALL)                                            \
            TILE_WIDTH_CASE(2, CALL)                                            \
            TILE_WIDTH_CASE(3, CALL)                                            \
            TILE_WIDTH_CASE(4, CALL)                                            \
            TILE_WIDTH_CASE(5, CALL)                                            \
            TILE_WIDTH_CASE(6, CALL)                                            \
        default: CALL(NV, NH); break;                                           \
        }                                                                       \
    } while (0)

typedef int vf_mask __attribute__((vector_size(VEC_FLOATS * sizeof(float))));
typedef int vh_mask __attribute__((vector_size(VH_FLOATS * sizeof(float))));

/* One vector (type v, vf or vh) of the tile on its way to C, its first
 * `lanes` floats: C's old value when accumulating, the residual, the clamp
 * (see acl_ukr_epilogue). */
#define TILE_STORE_VEC(v, p, val, res, lanes, acc_on, res_on, clamp_on)      \
    do {                                                                        \
        v s_ = (val);                                                           \
        if (acc_on) s_ += v##_load_lanes(p, lanes);                         \
        if (res_on) s_ += v##_load_lanes(res, lanes);                         \
        if (clamp_on) VEC_CLAMP(s_, lo_##v, hi_##v, v##_mask);                    \
        v##_store_lanes(p, s_, lanes);                                          \
    } while (0)

/* The tile's first `cols` columns to C.  TILE_STORE passes constants where it
 * can: in the unrolled code a runtime flag would cost a test per vector, a few
 * percent of a GEMM whose K fits one block. */
#define TILE_STORE_COLS(c, ldc, ep, cols, acc_on, res_on, clamp_on)          \
    UNROLL for (int i_ = 0; i_ < TILE_ROWS; i_++) {                                    \
        float *ci_ = (c) + (size_t)i_ * (ldc);                                  \
        const float *ri_ = (ep)->residual + (size_t)i_ * (ldc);                 \
        UNROLL for (int j_ = 0; j_ < TILE_VECTORS; j_++)                    \
            TILE_STORE_VEC(vf, ci_ + j_ * VEC_FLOATS, acc[i_][j_], ri_ + j_ * VEC_FLOATS, \
                           (cols) - j_ * VEC_FLOATS, acc_on, res_on, clamp_on); \
        UNROLL for (int j_ = 0; j_ < TILE_HALVES; j_++)                     \
            TILE_STORE_VEC(vh, ci_ + NV * VEC_FLOATS, acch[i_][j_], ri_ + NV * VEC_FLOATS, \
                           (cols) - NV * VEC_FLOATS, acc_on, res_on, clamp_on); \
    }

/* Writes the tile to C through the epilogue ep: the plain stores of a full
 * tile without a fused residual or clamp as their own code, every other case
 * with runtime flags and masked edges. */
#define TILE_STORE(c, ldc, ep)                                                  \
    do {                                                                        \
        const vf lo_vf = (ep)->lo - (vf){0}, hi_vf = (ep)->hi - (vf){0};       \
        const vh lo_vh = (ep)->lo - (vh){0}, hi_vh = (ep)->hi - (vh){0};       \
        if ((ep)->cols >= NR && !(ep)->residual && !(ep)->clamp) {              \
            if ((ep)->accumulate) {                                             \
                TILE_STORE_COLS(c, ldc, ep, NR, 1, 0, 0);                       \
            } else {                                                            \
                TILE_STORE_COLS(c, ldc, ep, NR, 0, 0, 0);                       \
            }                                                                   \
        } else {                                                                \
            TILE_STORE_COLS(c, ldc, ep, (ep)->cols, (ep)->accumulate, (ep)->residual, \
                            (ep)->clamp);                                       \
        }                                                                       \
    } while (0)

#endif
