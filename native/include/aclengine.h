/* acltuner native engine: the public C API.
 *
 * Activations are fp32 NHWC; weights are given in ONNX's OIHW layout and packed
 * once at creation.  Every call that can fail returns 0 on success and -1 on
 * error; acl_last_error() then holds a one-line reason (thread-local).
 */
#ifndef ACLENGINE_H
#define ACLENGINE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACL_ENGINE_VERSION "0.1.0"

enum acl_activation { ACL_ACT_NONE = 0, ACL_ACT_RELU = 1, ACL_ACT_CLIP = 2 };

/* One convolution, ONNX Conv semantics.  The epilogue is
 * y = act(conv(x, w) + bias + residual); residual has the output's shape. */
typedef struct {
    int n, h, w, c;                  /* input, NHWC */
    int oc;                          /* output channels */
    int kh, kw;                      /* kernel */
    int stride_h, stride_w;
    int dil_h, dil_w;
    int pad_top, pad_left, pad_bottom, pad_right;
    int group;
    int act;                         /* enum acl_activation */
    float act_min, act_max;          /* ACL_ACT_CLIP bounds */
    int has_residual;
} acl_conv_shape;

/* How one call is spread over the cores.  weights[i] is the share of CPU i
 * (0 = no thread on CPU i); the output is cut into `workloads` units that are
 * handed out in proportion to the weights.  No thread is created per call. */
typedef struct {
    int ncores;
    const int *weights;
    int workloads;
} acl_exec;

/* Wall time of each stage of one run, in milliseconds. */
typedef struct {
    double pre_ms;   /* im2col, A interleave, Winograd input transform */
    double gemm_ms;  /* GEMM (with the fused epilogue) or the direct kernel */
    double post_ms;  /* Winograd output transform */
    double total_ms;
} acl_stage_times;

const char *acl_version(void);
const char *acl_isa(void);               /* "avx512", "avx2", "neon", "generic" */
const char *acl_last_error(void);

/* Algorithms and micro-kernels usable on this machine. */
int acl_algorithm_count(void);
const char *acl_algorithm_name(int i);
/* 1 if the algorithm runs through a GEMM micro-kernel, 0 if it is direct. */
int acl_algorithm_uses_ukernel(const char *algorithm);

typedef struct {
    const char *name;   /* e.g. "6x16-hybrid-avx512" */
    const char *isa;
    const char *style;  /* "interleaved", "hybrid", "smallk" */
    int mr, nr;
    int kmin, kmax;     /* valid for kmin < K <= kmax; kmax == 0: unbounded */
    int n_multiple;     /* N must be a multiple of this */
} acl_ukernel_info;

int acl_ukernel_count(void);
int acl_ukernel_get(int i, acl_ukernel_info *out);

int acl_conv_out_size(const acl_conv_shape *s, int *oh, int *ow);

/* 0 if `algorithm` with `ukernel` (NULL or "" for direct algorithms) can run
 * this shape, -1 with the reason in acl_last_error() otherwise. */
int acl_conv_check(const acl_conv_shape *s, const char *algorithm, const char *ukernel);

typedef struct acl_conv acl_conv;

/* weight: oc x (c/group) x kh x kw (OIHW); bias: oc floats or NULL. */
int acl_conv_create(const acl_conv_shape *s, const char *algorithm, const char *ukernel,
                    const float *weight, const float *bias, acl_conv **out);
/* residual: NULL unless shape->has_residual; times may be NULL. */
int acl_conv_run(acl_conv *conv, const acl_exec *ex, const float *input,
                 const float *residual, float *output, acl_stage_times *times);
void acl_conv_destroy(acl_conv *conv);

/* Scratch: what a run overwrites and nothing keeps between runs (im2col
 * blocks, Winograd's transformed tiles, interleaved A panels, indirection
 * pointers), as opposed to the packed weights a convolution owns.  Sized for
 * up to acl_cpu_count() workers.  acl_conv_create allocates a convolution's
 * own; acl_conv_create_borrowing does not, and such a convolution runs only
 * through acl_conv_run_scratch with the caller's buffer of at least
 * acl_conv_scratch_bytes(), aligned to 64 bytes.  Convolutions that never run
 * at the same time (a program's nodes) can so share one buffer of the
 * largest's size.  Results do not depend on whose scratch a run uses. */
int acl_conv_create_borrowing(const acl_conv_shape *s, const char *algorithm, const char *ukernel,
                              const float *weight, const float *bias, acl_conv **out);
size_t acl_conv_scratch_bytes(const acl_conv *conv);
int acl_conv_run_scratch(acl_conv *conv, const acl_exec *ex, const float *input,
                         const float *residual, float *output, void *scratch,
                         acl_stage_times *times);

/* A GEMM with B packed once: C[M,N] = A[M,K] B[K,N], row-major. */
typedef struct acl_gemm acl_gemm;
int acl_gemm_create(const char *ukernel, int k, int n, const float *b, int ldb, acl_gemm **out);
int acl_gemm_run(acl_gemm *g, const acl_exec *ex, int m, const float *a, int lda,
                 float *c, int ldc, acl_stage_times *times);
void acl_gemm_destroy(acl_gemm *g);

/* CPUs this process may be pinned to, as a count of ids 0..n-1 known to the OS. */
int acl_cpu_count(void);

#ifdef __cplusplus
}
#endif
#endif
