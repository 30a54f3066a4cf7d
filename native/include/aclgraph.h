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

/* Convolution with its fused epilogue; weights are packed now.  residual may be
 * NULL (and must be, unless shape->has_residual).  in/out/residual are NHWC
 * 4-D tensors matching `shape`; ex: this convolution's tuned split (copied). */
int acl_graph_conv(acl_graph *g, const acl_conv_shape *shape, const char *algorithm,
                   const char *ukernel, const acl_exec *ex, const float *weight,
                   const float *bias, const acl_tensor *in, const acl_tensor *residual,
                   const acl_tensor *out);

enum acl_unary_op {
    ACL_UNARY_RELU, ACL_UNARY_CLIP,        /* a = min, b = max */
    ACL_UNARY_LEAKY_RELU,                  /* a = alpha */
    ACL_UNARY_SIGMOID, ACL_UNARY_HARD_SIGMOID,  /* a = alpha, b = beta */
    ACL_UNARY_HARD_SWISH, ACL_UNARY_COPY,
};
int acl_graph_unary(acl_graph *g, int op, float a, float b, const acl_tensor *in,
                    const acl_tensor *out);

/* Elementwise with numpy broadcasting: a and b have out's rank (dims of 1
 * broadcast). */
enum acl_binary_op { ACL_BINARY_ADD, ACL_BINARY_MUL, ACL_BINARY_SUB, ACL_BINARY_DIV };
int acl_graph_binary(acl_graph *g, int op, const acl_tensor *a, const acl_tensor *b,
                     const acl_tensor *out);

/* NHWC pooling.  pads: top, left, bottom, right.  Max pooling treats pads as
 * -inf.  Average pooling divides by the window's size inside the padded input
 * when count_include_pad, else by the taps that fall inside the input.  out's
 * spatial dims may be the floor (ceil_mode=0) or the ceil (ceil_mode=1) output
 * size; a window with no tap inside the input gives -inf (max) or 0 (average). */
enum acl_pool_op { ACL_POOL_MAX, ACL_POOL_AVERAGE };
int acl_graph_pool(acl_graph *g, int op, int kh, int kw, int stride_h, int stride_w,
                   int dil_h, int dil_w, const int pads[4], int count_include_pad,
                   const acl_tensor *in, const acl_tensor *out);
/* in [N, H, W, C] -> out [N, 1, 1, C]. */
int acl_graph_global_average_pool(acl_graph *g, const acl_tensor *in, const acl_tensor *out);

/* The n inputs have out's rank and dims except along axis (negative counts
 * from the end), where their sizes add up to out's. */
int acl_graph_concat(acl_graph *g, int axis, int n, const acl_tensor *ins, const acl_tensor *out);
/* out->dims[i] = in->dims[perm[i]] (numpy.transpose). */
int acl_graph_transpose(acl_graph *g, const int *perm, const acl_tensor *in,
                        const acl_tensor *out);
/* Writes transpose(x, perm) into out now, on the program's default split: x is
 * a dense row-major array outside the arena with dims[perm[i]] = out->dims[i]
 * (a model input in ONNX layout, copied into the layout the program keeps). */
int acl_graph_import(acl_graph *g, const float *x, const int *perm, const acl_tensor *out);

/* out[M, N] = in[M, K] x B + bias; B given as K x N row-major, or as its
 * transpose (N x K row-major, as Gemm's transB stores it) when b_transposed
 * (packed now either way); bias: N floats or NULL (copied).  in is [..., K]
 * and out [..., N] with the same leading dims, M their product; ukernel must
 * accept K and N. */
int acl_graph_matmul(acl_graph *g, const char *ukernel, int k, int n, const float *b,
                     int b_transposed, const float *bias, const acl_tensor *in,
                     const acl_tensor *out);

/* Softmax over the innermost axis of in (the compiler transposes others there). */
int acl_graph_softmax(acl_graph *g, const acl_tensor *in, const acl_tensor *out);
/* ONNX LRN across the channels (the innermost axis) of an NHWC tensor. */
int acl_graph_lrn(acl_graph *g, int size, float alpha, float beta, float bias,
                  const acl_tensor *in, const acl_tensor *out);
/* Constant / edge / reflect padding; pads: begin of every axis, then end of
 * every axis (2 * rank ints).  Negative pads crop, as in ONNX; reflect pads
 * wider than the axis keep bouncing between its ends (numpy's "reflect"). */
enum acl_pad_mode { ACL_PAD_CONSTANT, ACL_PAD_EDGE, ACL_PAD_REFLECT };
int acl_graph_pad(acl_graph *g, int mode, float value, const int *pads, const acl_tensor *in,
                  const acl_tensor *out);

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

#ifdef __cplusplus
}
#endif
#endif
