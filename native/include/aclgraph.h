/* acltuner native engine: whole-model programs.
 *
 * A program is a list of operations over one float arena, planned ahead by
 * the compiler (acltuner/runtime): every tensor is a region [offset, offset +
 * size) of the arena, constants included, so running allocates nothing.  4-D
 * activations are NHWC.  Operations run in the order they were added, each
 * spread over the cores of its acl_exec (convolutions: their tuned config;
 * other operations: the program's default exec).  Calls return 0 or -1 with
 * acl_last_error() set, like the rest of aclengine.h.
 *
 * Every add call checks its tensors (rank 0..ACL_MAX_RANK, dims >= 1, inside
 * the arena, at most INT_MAX elements, shapes consistent) and fails with one
 * line naming the operation; a failed add leaves the program unchanged.  An
 * output may not overlap any input, except that unary, binary and softmax
 * operations may write in place over an input with exactly the output's
 * offset and dims.  Results never depend on the core split.
 */
#ifndef ACLGRAPH_H
#define ACLGRAPH_H

#include <stddef.h>

#include "aclengine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACL_MAX_RANK 6

typedef struct acl_graph acl_graph;

/* A tensor: where it lives in the arena and its shape (row-major, innermost last). */
typedef struct {
    size_t offset;  /* in floats */
    int rank;
    int dims[ACL_MAX_RANK];
} acl_tensor;

/* ex: the split for every operation but convolutions (copied). */
int acl_graph_create(size_t arena_floats, const acl_exec *ex, acl_graph **out);
void acl_graph_destroy(acl_graph *g);
/* To fill constants and inputs, read outputs; zero-filled at creation. */
float *acl_graph_arena(acl_graph *g);

/* ---- Operations --------------------------------------------------------------
 * Every operation is one line of ACL_GRAPH_OPS: X(CODE, name, min inputs, max
 * inputs (0: any number), ATTRS).  Each writes one output tensor.  ATTRS is
 * the X-macro list of its attribute struct acl_<name>_attrs, fields as in
 * aclengine.h (F(S, ...) with S the struct, for offsetof); an attribute
 * absent from a request reads as zero or NULL.  Operations are added with
 * acl_graph_add(g, ACL_OP_<CODE>, &attrs, nin, ins, out). */

#define ACL_GRAPH_OPS(X)                                       \
    X(CONV, conv, 1, 2, ACL_CONV_ATTRS)                        \
    X(UNARY, unary, 1, 1, ACL_UNARY_ATTRS)                     \
    X(BINARY, binary, 2, 2, ACL_BINARY_ATTRS)                  \
    X(AFFINE, affine, 3, 3, ACL_AFFINE_ATTRS)                  \
    X(POOL, pool, 1, 1, ACL_POOL_ATTRS)                        \
    X(GLOBAL_AVERAGE_POOL, global_average_pool, 1, 1, ACL_NO_ATTRS) \
    X(CONCAT, concat, 1, 0, ACL_CONCAT_ATTRS)                  \
    X(TRANSPOSE, transpose, 1, 1, ACL_TRANSPOSE_ATTRS)         \
    X(MATMUL, matmul, 1, 1, ACL_MATMUL_ATTRS)                  \
    X(SOFTMAX, softmax, 1, 1, ACL_SOFTMAX_ATTRS)               \
    X(LRN, lrn, 1, 1, ACL_LRN_ATTRS)                           \
    X(PAD, pad, 1, 1, ACL_PAD_ATTRS)                           \
    X(REDUCE, reduce, 1, 1, ACL_REDUCE_ATTRS)                  \
    X(RESIZE, resize, 1, 1, ACL_RESIZE_ATTRS)                  \
    X(BATCH_MATMUL, batch_matmul, 2, 2, ACL_BATCH_MATMUL_ATTRS) \
    X(GATHER, gather, 1, 1, ACL_GATHER_ATTRS)                  \
    X(SLICE, slice, 1, 1, ACL_SLICE_ATTRS)                     \
    X(LSTM, lstm, 3, 3, ACL_LSTM_ATTRS)                        \
    X(LAYER_NORM, layer_norm, 3, 3, ACL_LAYER_NORM_ATTRS)      \
    X(QUANTIZE, quantize, 1, 1, ACL_QUANTIZE_ATTRS)            \
    X(DEQUANTIZE, dequantize, 1, 1, ACL_DEQUANTIZE_ATTRS)      \
    X(CONV_INT8, conv_int8, 1, 1, ACL_CONV_INT8_ATTRS)         \
    X(QUANTIZED_ADD, quantized_add, 2, 2, ACL_QUANTIZED_ADD_ATTRS)

#define ACL_NO_ATTRS(F, S)

/* Convolution with its fused epilogue (inputs: x, then the residual when
 * shape.has_residual), weights packed now; x, residual and out are NHWC 4-D
 * tensors matching `shape`.  core_weights/workloads: this convolution's own
 * split (acl_exec).  weight: oc x (c/group) x kh x kw floats (OIHW), c x
 * (oc/group) x kh x kw for a transposed shape; bias: oc floats or none;
 * ukernel: NULL or "" for direct algorithms.  x_nchw: x is NCHW instead
 * (direct_nhwc only), so that a model's image input is copied in as it is,
 * not transposed. */
#define ACL_CONV_ATTRS(F, S)                                                           \
    F(S, CONV_SHAPE, shape, 0) F(S, STRING, algorithm, 0) F(S, STRING, ukernel, 0)    \
    F(S, INTS, core_weights, 0) F(S, INT, workloads, 0) F(S, FLOATS, weight, 0)       \
    F(S, FLOATS, bias, 0) F(S, BOOL, x_nchw, 0)

/* The activations of aclengine.h, then the elementwise functions no
 * convolution fuses.  a and b are the activations' parameters as for a
 * convolution's act_min/act_max (clip) or act_alpha/act_beta (the others), and
 * pow's exponent is a; "none" copies. */
#define ACL_UNARY_MATH(X)                                                        \
    X(ACL_UNARY_SQRT, sqrt) X(ACL_UNARY_LOG, log) X(ACL_UNARY_EXP, exp)         \
    X(ACL_UNARY_ABS, abs) X(ACL_UNARY_NEG, neg) X(ACL_UNARY_RECIPROCAL, reciprocal) \
    X(ACL_UNARY_TANH, tanh) X(ACL_UNARY_SOFTPLUS, softplus) X(ACL_UNARY_ERF, erf) \
    X(ACL_UNARY_POW, pow)
#define ACL_UNARY_OPS(X) ACL_ACTIVATIONS(X) ACL_UNARY_MATH(X)
#define ACL_UNARY_ATTRS(F, S) F(S, ENUM, op, ACL_UNARY_OPS) F(S, FLOAT, a, 0) F(S, FLOAT, b, 0)

/* Per channel, the channel axis innermost: out = act(x * scale + shift), the
 * inputs x, scale and shift (both 1-D, x's last dim long); act, a and b as
 * for unary.  A BatchNormalization or a chain of per-channel Mul / Add
 * constants, and the activation after it, in one pass. */
#define ACL_AFFINE_ATTRS(F, S) F(S, ENUM, act, ACL_ACTIVATIONS) F(S, FLOAT, a, 0) F(S, FLOAT, b, 0)

/* Elementwise with numpy broadcasting: both inputs have out's rank (dims of 1
 * broadcast).  div_no_nan: a / b, 0 where b is 0 (TensorFlow's, which its
 * ONNX exports spell Div, Equal and Where). */
#define ACL_BINARY_OPS(X)                                                                    \
    X(ACL_BINARY_ADD, add) X(ACL_BINARY_MUL, mul) X(ACL_BINARY_SUB, sub) X(ACL_BINARY_DIV, div) \
    X(ACL_BINARY_MAX, max) X(ACL_BINARY_MIN, min) X(ACL_BINARY_PRELU, prelu)           \
    X(ACL_BINARY_DIV_NO_NAN, div_no_nan)
#define ACL_BINARY_ATTRS(F, S) F(S, ENUM, op, ACL_BINARY_OPS)

/* NHWC pooling: kernel, strides and dilations are (h, w), pads (top, left,
 * bottom, right).  Max pooling treats pads as -inf.  Average pooling divides
 * by the window's size inside the padded input when count_include_pad, else
 * by the taps that fall inside the input.  out's spatial dims may be the
 * floor (ceil_mode=0) or the ceil (ceil_mode=1) output size; a window with no
 * tap inside the input gives -inf (max) or 0 (average).  u8: x and out are
 * uint8 tensors of one scale and zero point (max only; pads and an empty
 * window give 0), which is the float max pool between a dequantize and a
 * quantize of that scale, byte for byte. */
#define ACL_POOL_OPS(X) X(ACL_POOL_MAX, max) X(ACL_POOL_AVERAGE, average)
#define ACL_POOL_ATTRS(F, S)                                                            \
    F(S, ENUM, op, ACL_POOL_OPS) F(S, INTS, kernel, 0) F(S, INTS, strides, 0)          \
    F(S, INTS, dilations, 0) F(S, INTS, pads, 0) F(S, BOOL, count_include_pad, 0)      \
    F(S, BOOL, u8, 0)

/* global_average_pool: [N, H, W, C] -> [N, 1, 1, C]. */

/* softmax: over the innermost axis (the compiler transposes others there),
 * or its logarithm when `log` (LogSoftmax, x - max - log(sum e^(x - max)):
 * no log of a rounded-away probability); out may be x. */
#define ACL_SOFTMAX_ATTRS(F, S) F(S, BOOL, log, 0)

/* The inputs have out's rank and dims except along axis (negative counts from
 * the end), where their sizes add up to out's.  u8: the tensors are uint8,
 * scales and zero_points hold each input's quantization, then the output's;
 * an input of another quantization than the output's is requantized as a
 * dequantize and a quantize would (the same bytes), the others copied. */
#define ACL_CONCAT_ATTRS(F, S)                                                      \
    F(S, INT, axis, 0) F(S, BOOL, u8, 0) F(S, FLOATS, scales, 0)                   \
    F(S, INTS, zero_points, 0)

/* out->dims[i] = in->dims[perm[i]] (numpy.transpose). */
#define ACL_TRANSPOSE_ATTRS(F, S) F(S, INTS, perm, 0)

/* out[M, N] = act(in[M, K] x B + bias); B holds K x N floats row-major, or its
 * transpose (N x K, as Gemm's transB stores it) when b_transposed (packed now
 * either way); bias: N floats or none; act with act_a and act_b as unary's
 * a and b, applied to each tile as it is finished (a GELU after a linear
 * layer costs no pass of its own).  in is [..., K] and out [..., N] with the
 * same leading dims, M their product; ukernel must accept K and N. */
#define ACL_MATMUL_ATTRS(F, S)                                                          \
    F(S, STRING, ukernel, 0) F(S, INT, k, 0) F(S, INT, n, 0) F(S, FLOATS, b, 0)        \
    F(S, BOOL, b_transposed, 0) F(S, FLOATS, bias, 0) F(S, ENUM, act, ACL_ACTIVATIONS) \
    F(S, FLOAT, act_a, 0) F(S, FLOAT, act_b, 0)

/* out[..., M, N] = a[..., M, K] x b[..., K, N] for two tensors of the
 * program (numpy matmul): a, b and out have one rank >= 2, and each batch dim
 * of a and b is out's or 1 (broadcast).  Each may be held transposed: the
 * tensor given is the matrix stack transposed by its perm (absent: in order),
 * so that a Transpose around the product moves no data; a's K axis and out's
 * N axis must stay innermost, b may be held in any order.  B is packed into
 * the program's workspace at every run; ukernel must accept K and N.  scale:
 * a factor of the product (an attention's 1 / sqrt(d)), taken into B as it is
 * packed; 0 (absent) is none. */
#define ACL_BATCH_MATMUL_ATTRS(F, S)                                                   \
    F(S, STRING, ukernel, 0) F(S, INTS, a_perm, 0) F(S, INTS, b_perm, 0)              \
    F(S, INTS, out_perm, 0) F(S, FLOAT, scale, 0)

/* out = in's slices at `indices` along axis (ONNX Gather with constant
 * indices; negative ones count from the end): out has in's rank and dims
 * except out->dims[axis] = indices_count.  Along the innermost axis (the
 * channels of an NHWC map, a channel shuffle) it is a per-row gather by the
 * index table. */
#define ACL_GATHER_ATTRS(F, S) F(S, INT, axis, 0) F(S, INTS, indices, 0)

/* ONNX LRN across the channels (the innermost axis) of an NHWC tensor. */
#define ACL_LRN_ATTRS(F, S) F(S, INT, size, 0) F(S, FLOAT, alpha, 0) F(S, FLOAT, beta, 0) \
    F(S, FLOAT, bias, 0)

/* Constant / edge / reflect padding; pads: begin of every axis, then end of
 * every axis (2 * rank ints).  Negative pads crop, as in ONNX; reflect pads
 * wider than the axis keep bouncing between its ends (numpy's "reflect"). */
#define ACL_PAD_MODES(X) X(ACL_PAD_CONSTANT, constant) X(ACL_PAD_EDGE, edge) X(ACL_PAD_REFLECT, reflect)
#define ACL_PAD_ATTRS(F, S) F(S, ENUM, mode, ACL_PAD_MODES) F(S, FLOAT, value, 0) F(S, INTS, pads, 0)

/* A reduction over axes that are adjacent in the stored order (the input's
 * dims as given): out has the input's rank with those dims 1. */
#define ACL_REDUCE_OPS(X) X(ACL_REDUCE_SUM, sum) X(ACL_REDUCE_MEAN, mean) X(ACL_REDUCE_MAX, max) \
    X(ACL_REDUCE_MIN, min)
#define ACL_REDUCE_ATTRS(F, S) F(S, ENUM, op, ACL_REDUCE_OPS) F(S, INTS, axes, 0)

/* ONNX Resize / Upsample of the two spatial axes of an NHWC tensor: in [N, H,
 * W, C] -> out [N, OH, OW, C], out's dims giving the output size.  scales:
 * (height, width), which place the sampling points (from ONNX sizes: out / in,
 * in float).  Output pixel o of an axis reads the input coordinate
 *   half_pixel            (o + 0.5) / scale - 0.5
 *   pytorch_half_pixel    the same, or 0 when the output axis has size 1
 *   align_corners         o * (in - 1) / (out - 1), or 0 when out is 1
 *   asymmetric            o / scale
 *   tf_half_pixel_for_nn  (o + 0.5) / scale
 * in float arithmetic, as onnxruntime computes it, and as onnxruntime an axis
 * of scale exactly 1 maps onto itself, and an output of the input's size is a
 * copy of it, whatever the scales.  nearest takes the input pixel nearest_mode
 * rounds the coordinate to, clamped into the axis: round_prefer_floor and
 * round_prefer_ceil round halves (within 1e-6, as onnxruntime) down or up;
 * floor; ceil; simple (Resize-10 and Upsample) truncates when the axis grows
 * and takes the ceiling when it shrinks.  linear clamps the coordinate into
 * [0, in - 1] and mixes the two input pixels around it on each axis: four
 * channel vectors per output pixel.  The source pixels and weights of every
 * output row and column are computed when the operation is added. */
#define ACL_RESIZE_MODES(X) X(ACL_RESIZE_NEAREST, nearest) X(ACL_RESIZE_LINEAR, linear)
#define ACL_RESIZE_COORDINATES(X)                                                         \
    X(ACL_RESIZE_HALF_PIXEL, half_pixel) X(ACL_RESIZE_PYTORCH_HALF_PIXEL, pytorch_half_pixel) \
    X(ACL_RESIZE_ALIGN_CORNERS, align_corners) X(ACL_RESIZE_ASYMMETRIC, asymmetric)        \
    X(ACL_RESIZE_TF_HALF_PIXEL_FOR_NN, tf_half_pixel_for_nn)
#define ACL_RESIZE_ROUNDINGS(X)                                                              \
    X(ACL_RESIZE_ROUND_PREFER_FLOOR, round_prefer_floor)                                     \
    X(ACL_RESIZE_ROUND_PREFER_CEIL, round_prefer_ceil) X(ACL_RESIZE_FLOOR, floor)            \
    X(ACL_RESIZE_CEIL, ceil) X(ACL_RESIZE_SIMPLE, simple)
#define ACL_RESIZE_ATTRS(F, S)                                                              \
    F(S, ENUM, mode, ACL_RESIZE_MODES) F(S, ENUM, coordinate_mode, ACL_RESIZE_COORDINATES) \
    F(S, ENUM, nearest_mode, ACL_RESIZE_ROUNDINGS) F(S, FLOATS, scales, 0)

/* A strided sub-tensor of the same rank (ONNX Slice and each output of Split,
 * over the stored order): out[i0, i1, ...] = in[starts[0] + i0 * steps[0],
 * starts[1] + i1 * steps[1], ...].  starts and steps hold one int per axis;
 * a step may be negative but not 0, and every index read must lie inside in. */
#define ACL_SLICE_ATTRS(F, S) F(S, INTS, starts, 0) F(S, INTS, steps, 0)

/* The recurrence of one direction of an ONNX LSTM (layout 0, the default
 * activations: sigmoid for the gates, tanh for the cell; no peepholes, clip
 * or coupled gates): inputs gx [seq, batch, 4 hidden], every step's input
 * gate sums x W^T + Wb + Rb (a matmul computes them for all steps at once),
 * and the initial hidden and cell states h0 and c0 [batch, hidden]; out
 * [seq + 1, batch, hidden] holds the hidden state after each step, in gx's
 * order, then the last cell state.  reverse walks gx from its last step.
 * r [4 hidden, hidden] holds the gates in ONNX's order i, o, f, c. */
#define ACL_LSTM_ATTRS(F, S) F(S, INT, hidden, 0) F(S, INT, reverse, 0) F(S, FLOATS, r, 0)

/* ONNX LayerNormalization over the innermost axis of x, of length D (the
 * compiler lays the normalised axes out innermost and flattens them): each
 * row of D floats becomes (x - mean) / sqrt(variance + epsilon) * scale +
 * shift; inputs x, scale and shift (both D floats).  The mean, then the
 * variance as the mean of the centred squares (two passes, no E[x^2] -
 * E[x]^2 cancellation), summed in blocks and pairs; out must not overlap x. */
#define ACL_LAYER_NORM_ATTRS(F, S) F(S, FLOAT, epsilon, 0)

/* ---- uint8 tensors ---------------------------------------------------------
 * The operations below read or write quantized tensors: uint8 values, one
 * byte each, in the same arena.  Such a tensor's offset is in floats like
 * every tensor's (its bytes start at arena + offset floats) and its dims
 * count bytes, so it takes a quarter of a float tensor's room.  A real value
 * r is held as q = r / scale + zero_point, one scale and zero point per
 * tensor. */

/* quantize: float x -> uint8 out of x's dims, as ONNX QuantizeLinear and
 * onnxruntime compute it: q = saturate(round_half_even(x / scale) +
 * zero_point) (a division, not a multiplication by 1 / scale, so that
 * results match onnxruntime's bit for bit; NaN gives zero_point's floor 0);
 * with perm (absent: in order), of transpose(x, perm), out->dims[i] =
 * x->dims[perm[i]]: a model's NCHW image quantized straight into the NHWC
 * bytes its first int8 convolution reads.
 * dequantize: uint8 x -> float out, (x - zero_point) * scale.  scale > 0 and
 * finite, 0 <= zero_point <= 255. */
#define ACL_QUANTIZE_ATTRS(F, S) F(S, FLOAT, scale, 0) F(S, INT, zero_point, 0) F(S, INTS, perm, 0)
#define ACL_DEQUANTIZE_ATTRS(F, S) F(S, FLOAT, scale, 0) F(S, INT, zero_point, 0)

/* quantized_add: uint8 a (a_scale, a_zero_point) + uint8 b (b_scale,
 * b_zero_point) -> uint8 out (scale, zero_point), all of one dims:
 *   out = saturate(round_half_even(((a - a_zp) a_scale + (b - b_zp) b_scale)
 *                                  / scale) + zero_point)
 * in double (its products exact, the sum and quotient rounded once), the same
 * bytes on every build.  A float dequantize, add and quantize, or
 * onnxruntime's QLinearAdd, round otherwise in the last bit: a sum that
 * lands on a half-step may go to the neighbouring step. */
#define ACL_QUANTIZED_ADD_ATTRS(F, S)                                                  \
    F(S, FLOAT, a_scale, 0) F(S, INT, a_zero_point, 0) F(S, FLOAT, b_scale, 0)         \
    F(S, INT, b_zero_point, 0) F(S, FLOAT, scale, 0) F(S, INT, zero_point, 0)

/* An int8 convolution: uint8 NHWC x (x_scale, x_zero_point) and int8
 * weights with per-output-channel scales -> uint8 NHWC out (y_scale,
 * y_zero_point), as onnxruntime's QLinearConv computes it:
 *   out = saturate(round_half_even(acc * (x_scale * w_scale[o] / y_scale)) + y_zero_point)
 * with acc = sum (x - x_zero_point) * w + bias[o] exact in integers (padding
 * taps hold x_zero_point, the real 0).  shape's act may be none, relu or clip
 * (act_min, act_max), applied as a clamp of the uint8 result (their real
 * bounds quantized with y's scale); has_residual must be 0.  weight: oc x
 * (c/group) x kh x kw (OIHW) int8 values carried as floats (exact: a
 * launcher's request carries them as base64 floats, like every weight),
 * packed now; bias: oc int32 in units of x_scale * w_scale[o], or none;
 * w_scale: oc floats, or one for every channel.  ukernel: an int8 GEMM
 * micro-kernel (gemm_int8/int8.h), empty for the fastest this CPU runs;
 * core_weights/workloads: this convolution's own split, as for conv, or
 * none (core_weights empty) for the graph's.  A
 * depthwise shape (one input and one output channel per group) runs a
 * direct loop instead of the GEMM. */
#define ACL_CONV_INT8_ATTRS(F, S)                                                        \
    F(S, CONV_SHAPE, shape, 0) F(S, STRING, ukernel, 0) F(S, INTS, core_weights, 0)     \
    F(S, INT, workloads, 0) F(S, FLOATS, weight, 0) F(S, INTS, bias, 0)                 \
    F(S, FLOAT, x_scale, 0) F(S, INT, x_zero_point, 0) F(S, FLOATS, w_scale, 0)        \
    F(S, FLOAT, y_scale, 0) F(S, INT, y_zero_point, 0)

/* The math ops number on from the activations. */
enum acl_unary_math {
    ACL_UNARY_MATH_BEFORE = ACL_ACT_COUNT - 1,
    ACL_UNARY_MATH(ACL_ENUM_CONSTANT) ACL_UNARY_COUNT
};
enum acl_binary_op { ACL_BINARY_OPS(ACL_ENUM_CONSTANT) };
enum acl_reduce_op { ACL_REDUCE_OPS(ACL_ENUM_CONSTANT) };
enum acl_pool_op { ACL_POOL_OPS(ACL_ENUM_CONSTANT) };
enum acl_pad_mode { ACL_PAD_MODES(ACL_ENUM_CONSTANT) };
enum acl_resize_mode { ACL_RESIZE_MODES(ACL_ENUM_CONSTANT) };
enum acl_resize_coordinates { ACL_RESIZE_COORDINATES(ACL_ENUM_CONSTANT) };
enum acl_resize_rounding { ACL_RESIZE_ROUNDINGS(ACL_ENUM_CONSTANT) };

#define ACL_OP_ATTR_FIELD(S, kind, name, names) ACL_DECLARE_##kind(name)
/* An operation without attributes has an empty struct (a GNU C extension). */
#define ACL_OP_ATTRS_STRUCT(CODE, name, min_in, max_in, ATTRS) \
    typedef struct { ATTRS(ACL_OP_ATTR_FIELD, acl_##name##_attrs) } acl_##name##_attrs;
ACL_GRAPH_OPS(ACL_OP_ATTRS_STRUCT)

#define ACL_OP_CODE(CODE, name, min_in, max_in, ATTRS) ACL_OP_##CODE,
enum acl_graph_op { ACL_GRAPH_OPS(ACL_OP_CODE) ACL_OP_COUNT };

/* Adds operation `op` reading the nin tensors `ins` and writing `out`; attrs
 * points at its acl_<name>_attrs (NULL for one without attributes).  Weights
 * are copied or packed now: the caller need not keep them. */
int acl_graph_add(acl_graph *g, int op, const void *attrs, int nin, const acl_tensor *ins,
                  const acl_tensor *out);

/* An operation's schema entry: its fields are those of its ATTRS list. */
typedef struct {
    const char *name;
    int min_inputs, max_inputs;  /* max 0: any number */
    size_t attrs_size;
    int field_count;
    const acl_field_info *fields;
} acl_op_info;

/* NULL unless 0 <= op < ACL_OP_COUNT. */
const acl_op_info *acl_graph_op_info(int op);
/* The op code of `name`, or -1. */
int acl_graph_op_find(const char *name);

/* Writes transpose(x, perm) into out now, on the calling thread, and wakes the
 * program's sleeping workers meanwhile for the run that follows: x is a dense
 * row-major array outside the arena with dims[perm[i]] = out->dims[i] (a
 * model input in ONNX layout, copied into the layout the program keeps). */
int acl_graph_import(acl_graph *g, const float *x, const int *perm, const acl_tensor *out);
/* Writes transpose(in, perm) into y now, split over the program's cores
 * (on the calling thread alone when small): y is a dense row-major array
 * outside the arena with dims in->dims[perm[i]] (a model output, copied from
 * the layout the program keeps into ONNX's). */
int acl_graph_export(acl_graph *g, const acl_tensor *in, const int *perm, float *y);

int acl_graph_node_count(const acl_graph *g);
/* Bytes of the one scratch buffer the operations share, since they run one
 * after another: the largest need among them (acl_conv_scratch_bytes for a
 * convolution), not the sum. */
size_t acl_graph_workspace_bytes(const acl_graph *g);

/* Puts the nodes in run order: the node added order[i]-th (from 0) runs
 * i-th.  Lets a compiler add (and pack) the nodes with the largest weights
 * first, freeing its copies early, whatever order they run in. */
int acl_graph_order(acl_graph *g, const int *order);
/* Runs every operation, allocating nothing; node_ms (node_count doubles, or
 * NULL) gets each one's time. */
int acl_graph_run(acl_graph *g, double *node_ms);
/* How the program's runs spread each operation (acl_balance, aclengine.h):
 * strict at creation; the runtime runs adaptive, a measurement strict. */
int acl_graph_set_balance(acl_graph *g, acl_balance mode);

#ifdef __cplusplus
}
#endif
#endif
