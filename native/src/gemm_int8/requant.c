/* The requantising epilogue (requant.h). */
#include <math.h>
#include <stddef.h>

#include "requant.h"

void acl_requantize_u8(const acl_requant *rq, int m, int n, const int32_t *acc, int ldacc,
                       uint8_t *out, int ldo)
{
    const float lo = rq->lo, hi = rq->hi, zc = (float)rq->c_zero_point;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            /* int64: the int32 sum plus any bias need not fit in int32. */
            const int64_t sum = (int64_t)acc[(size_t)i * ldacc + j] -
                                (int64_t)rq->a_zero_point * rq->colsum[j] +
                                (rq->bias ? rq->bias[j] : 0);
            /* nearbyintf rounds in the current mode, to nearest with ties to
             * even unless someone changed it; clamping the float first keeps
             * the conversion defined for any sum. */
            const float q = nearbyintf((float)sum * rq->scale[j]) + zc;
            out[(size_t)i * ldo + j] = (uint8_t)(q < lo ? lo : q > hi ? hi : q);
        }
}
