/* int8 convolutions over NHWC uint8 tensors (the graph's conv_int8 node,
 * aclgraph.h, states the arithmetic): weights packed once at create, then
 * runs that allocate nothing, each worker in its own slice of the caller's
 * scratch.  Three algorithms, chosen from the shape:
 *   pointwise  a 1x1, stride 1, unpadded kernel: the GEMM reads the input
 *              pixels in place (K = the group's channels), no im2col;
 *   im2col     any other kernel: each worker copies a block of output
 *              pixels' receptive fields into rows ([group][tap][Cg], padding
 *              taps at the input's zero point), then one GEMM per group;
 *   depthwise  one input and one output channel per group: channels in
 *              blocks of 16 int32 lanes, a run of 8 output pixels' sums in
 *              registers while the taps go by (as fp32's
 *              depthwise_channel_block), starting from bias - za * colsum.
 * Each requantises its int32 sums straight into the output (requant.h). */
#ifndef ACL_CONV_INT8_H
#define ACL_CONV_INT8_H

#include <stddef.h>
#include <stdint.h>

#include "aclengine.h"

typedef struct acl_conv_int8 acl_conv_int8;

typedef struct {
    float x_scale, y_scale;
    int x_zero_point, y_zero_point;  /* 0..255 */
    const float *w_scale;            /* w_scale_count: 1 or oc */
    size_t w_scale_count;
    const int *bias;                 /* oc int32, or NULL */
} acl_conv_int8_quant;

/* s: a valid, non-transposed shape without residual, act none, relu or
 * clip; weight: OIHW int8 values held in floats; ukernel: NULL or "" for
 * the fastest int8 kernel this CPU runs.  Fails with one line (no prefix). */
int acl_conv_int8_create(const acl_conv_shape *s, const char *ukernel, const float *weight,
                         const acl_conv_int8_quant *q, acl_conv_int8 **out);
void acl_conv_int8_destroy(acl_conv_int8 *conv);
/* The scratch a run needs: one slice per worker the CPU can have. */
size_t acl_conv_int8_scratch_bytes(const acl_conv_int8 *conv);
/* "pointwise", "im2col" or "depthwise", and the int8 kernel ("" for depthwise). */
const char *acl_conv_int8_algorithm(const acl_conv_int8 *conv);
const char *acl_conv_int8_ukernel(const acl_conv_int8 *conv);
/* y = conv(x) on ex's split; scratch: acl_conv_int8_scratch_bytes, 64-byte aligned. */
int acl_conv_int8_run(const acl_conv_int8 *conv, const acl_exec *ex, const uint8_t *x, uint8_t *y,
                      void *scratch);

#endif
