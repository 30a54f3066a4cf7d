/* fp16 interleaved micro-kernel template (Armv8.2-A FP16 arithmetic): A
 * comes packed as kc columns of MR halves, B as kc rows of NR halves (see
 * ukernel.h).  Each k step is MR x NR/8 FMLAs on .8h vectors by an A lane,
 * twice the products of an fp32 FMLA.  The sums stay in half precision for
 * the call's K block (gemm.c's, at most 256 steps), then join tile.h's fp32
 * tile, which starts from the bias and goes through the usual store: half
 * precision rounds each operand and a block's running sums, while the sum
 * over blocks, the bias, the residual and the clamp are fp32. */
#ifndef __ARM_FEATURE_FP16_VECTOR_ARITHMETIC
#error "an fp16 micro-kernel is compiled with +fp16"
#endif
#include <arm_neon.h>

#define VEC_FLOATS 4
/* Only tile.h's fp32 tile and store are used: no A lanes of floats. */
#define A_LANE_VECTORS 99
#include "tile.h"

#define VEC_HALVES 8
#define NVH (NR / VEC_HALVES)
_Static_assert(NVH *VEC_HALVES == NR && MR == VEC_HALVES,
               "an fp16 tile is whole .8h vectors wide and one A vector tall");

/* FMLA by element, written out: from vfmaq_laneq_f16 (or a GNU vector
 * product) GCC makes one DUP per A lane, shared by the NR/8 B vectors, then
 * plain FMLAs, and the 8 DUPs crowd 3 accumulators out to the stack each k
 * step.  "x": an .h element comes from v0-v15. */
#define FMLA_LANE(acc, b, a, lane) \
    __asm__("fmla %0.8h, %1.8h, %2.h[%3]" : "+w"(acc) : "w"(b), "x"(a), "i"(lane))

void UKERNEL_NAME(size_t kc, const acl_half *restrict a, const acl_half *restrict b,
                  float *restrict c, size_t ldc, const acl_ukr_epilogue *restrict ep)
{
    const float16_t *ah = (const float16_t *)a, *bh = (const float16_t *)b;
    float16x8_t sum[MR][NVH];
    UNROLL for (int i = 0; i < MR; i++) UNROLL for (int j = 0; j < NVH; j++) sum[i][j] =
        vdupq_n_f16(0);
    for (size_t k = 0; k < kc; k++, ah += MR, bh += NR) {
        const float16x8_t av = vld1q_f16(ah);  /* the column of A, a lane per row */
        float16x8_t bv[NVH];
        UNROLL for (int j = 0; j < NVH; j++) bv[j] = vld1q_f16(bh + j * VEC_HALVES);
        UNROLL for (int i = 0; i < MR; i++) UNROLL for (int j = 0; j < NVH; j++)
            FMLA_LANE(sum[i][j], bv[j], av, i);
    }
    TILE_DECLARE(ep->bias, ep->cols);
    UNROLL for (int i = 0; i < MR; i++) UNROLL for (int j = 0; j < NVH; j++)
    {
        acc[i][2 * j] += (vf)vcvt_f32_f16(vget_low_f16(sum[i][j]));
        acc[i][2 * j + 1] += (vf)vcvt_high_f32_f16(sum[i][j]);
    }
    TILE_STORE(c, ldc, ep);
}
