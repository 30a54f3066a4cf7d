/* Lane-wise choices on GNU C vectors, for the kernels written with them
 * (micro-kernel tiles, direct convolutions, pooling).  C has no vector ?:,
 * so a compare gives a lane mask and the bits are merged: the compiler emits
 * a compare and a blend or masked move. */
#ifndef ACL_VECTOR_SELECT_H
#define ACL_VECTOR_SELECT_H

/* m ? a : b per lane; mask_t is the int vector as wide as a and b. */
#define VEC_SELECT(m, a, b, mask_t) \
    ((__typeof__(a))(((m) & (mask_t)(a)) | (~(m) & (mask_t)(b))))

/* v clamped to [lo, hi] (vectors) as ONNX Clip does: NaN passes through. */
#define VEC_CLAMP(v, lo, hi, mask_t)                         \
    do {                                                     \
        (v) = VEC_SELECT((v) < (lo), (lo), (v), mask_t);     \
        (v) = VEC_SELECT((v) > (hi), (hi), (v), mask_t);     \
    } while (0)

#endif
