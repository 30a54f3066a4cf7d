/* The requantising epilogue (requant.h). */
#include <math.h>
#include <stddef.h>

#include "requant.h"

void acl_requantize_u8(const acl_requant *rq, int m, int n, const int32_t *acc, int ldacc,
                       uint8_t *out, int ldo)
{
    /* The struct's pointers in restrict locals, and no bias as zeros: the
     * compiler may then vectorise the row loop (it must otherwise assume
     * that out aliases them and reload every one per element). */
    const float lo = rq->lo, hi = rq->hi, zc = (float)rq->c_zero_point;
    const float *restrict scale = rq->scale;
    const int32_t *restrict colsum = rq->colsum, *restrict bias = rq->bias;
    const int64_t za = rq->a_zero_point;
    if (rq->offset) {
        /* int32 throughout: twice the lanes of the int64 sum below. */
        const int32_t *restrict offset = rq->offset;
        for (int i = 0; i < m; i++) {
            const int32_t *restrict row = acc + (size_t)i * ldacc;
            uint8_t *restrict dst = out + (size_t)i * ldo;
            for (int j = 0; j < n; j++) {
                const float q = nearbyintf((float)(row[j] + offset[j]) * scale[j]) + zc;
                dst[j] = (uint8_t)(q < lo ? lo : q > hi ? hi : q);
            }
        }
        return;
    }
    if (za == 0 && !bias) {
        /* The sums alone (the depthwise convolution folds the rest into
         * them): int32 straight to float, as many lanes at a time as floats,
         * where the int64 sum below takes half as many; the same float, as
         * an int32 converts exactly to int64. */
        for (int i = 0; i < m; i++) {
            const int32_t *restrict row = acc + (size_t)i * ldacc;
            uint8_t *restrict dst = out + (size_t)i * ldo;
            for (int j = 0; j < n; j++) {
                const float q = nearbyintf((float)row[j] * scale[j]) + zc;
                dst[j] = (uint8_t)(q < lo ? lo : q > hi ? hi : q);
            }
        }
        return;
    }
    for (int i = 0; i < m; i++) {
        const int32_t *restrict row = acc + (size_t)i * ldacc;
        uint8_t *restrict dst = out + (size_t)i * ldo;
        for (int j = 0; j < n; j++) {
            /* int64: the int32 sum plus any bias need not fit in int32. */
            const int64_t sum = (int64_t)row[j] - za * colsum[j] + (bias ? bias[j] : 0);
            /* nearbyintf rounds in the current mode, to nearest with ties to
             * even unless someone changed it; clamping the float first keeps
             * the conversion defined for any sum. */
            const float q = nearbyintf((float)sum * scale[j]) + zc;
            dst[j] = (uint8_t)(q < lo ? lo : q > hi ? hi : q);
        }
    }
}
