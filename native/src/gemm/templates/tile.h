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

#if !defined(MR) || !defined(NR) || !defined(VEC_FLOATS) || !defined(UKERNEL_NAME)
#error "define MR, NR, VEC_FLOATS and UKERNEL_NAME before including a micro-kernel template"
#endif

#define VH_FLOATS (VEC_FLOATS / 2)
#define NV (NR / VEC_FLOATS)
#define NH ((NR % VEC_FLOATS) / VH_FLOATS)
_Static_assert(NV * VEC_FLOATS + NH * VH_FLOATS == NR,
               "NR must be whole vectors plus at most one half vector");

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

/* The accumulators, zeroed. */
#define TILE_DECLARE()                                          \
    vf acc[MR][NV];                                             \
    vh acch[MR][NH];                                            \
    UNROLL for (int i_ = 0; i_ < MR; i_++) {                    \
        UNROLL for (int j_ = 0; j_ < NV; j_++) acc[i_][j_] = (vf){0}; \
        UNROLL for (int j_ = 0; j_ < NH; j_++) acch[i_][j_] = (vh){0}; \
    }

/* The rank-1 update of one k step: tile += A column x B row, where A_AT(i)
 * is row i's A value and bptr the packed B row (NR floats).  The loop order
 * keeps the fewest registers live for how each ISA gets A: NEON holds the A
 * values in registers and streams B one vector at a time; x86 holds the B row
 * and broadcasts each A value from memory as it goes. */
#if defined(__aarch64__)
#define TILE_STEP(bptr, A_AT)                                                   \
    do {                                                                        \
        UNROLL for (int j_ = 0; j_ < NV; j_++) {                                \
            const vf b_ = *(const vf_u *)((bptr) + j_ * VEC_FLOATS);            \
            UNROLL for (int i_ = 0; i_ < MR; i_++) acc[i_][j_] += A_AT(i_) * b_; \
        }                                                                       \
        UNROLL for (int j_ = 0; j_ < NH; j_++) {                                \
            const vh b_ = *(const vh_u *)((bptr) + NV * VEC_FLOATS);            \
            UNROLL for (int i_ = 0; i_ < MR; i_++) acch[i_][j_] += A_AT(i_) * b_; \
        }                                                                       \
    } while (0)
#else
#define TILE_STEP(bptr, A_AT)                                                   \
    do {                                                                        \
        vf bf_[NV];                                                             \
        vh bh_[NH];                                                             \
        UNROLL for (int j_ = 0; j_ < NV; j_++)                                  \
            bf_[j_] = *(const vf_u *)((bptr) + j_ * VEC_FLOATS);                \
        UNROLL for (int j_ = 0; j_ < NH; j_++)                                  \
            bh_[j_] = *(const vh_u *)((bptr) + NV * VEC_FLOATS);                \
        UNROLL for (int i_ = 0; i_ < MR; i_++) {                                \
            const float a_ = A_AT(i_);                                          \
            UNROLL for (int j_ = 0; j_ < NV; j_++) acc[i_][j_] += a_ * bf_[j_]; \
            UNROLL for (int j_ = 0; j_ < NH; j_++) acch[i_][j_] += a_ * bh_[j_]; \
        }                                                                       \
    } while (0)
#endif

/* Writes the tile to C, or adds it to what C holds. */
#define TILE_STORE(c, ldc, accumulate)                                          \
    UNROLL for (int i_ = 0; i_ < MR; i_++) {                                    \
        float *ci_ = (c) + (size_t)i_ * (ldc);                                  \
        UNROLL for (int j_ = 0; j_ < NV; j_++) {                                \
            vf_u *p_ = (vf_u *)(ci_ + j_ * VEC_FLOATS);                         \
            if (accumulate) *p_ += acc[i_][j_]; else *p_ = acc[i_][j_];          \
        }                                                                       \
        UNROLL for (int j_ = 0; j_ < NH; j_++) {                                \
            vh_u *p_ = (vh_u *)(ci_ + NV * VEC_FLOATS);                         \
            if (accumulate) *p_ += acch[i_][j_]; else *p_ = acch[i_][j_];        \
        }                                                                       \
    }

#endif
