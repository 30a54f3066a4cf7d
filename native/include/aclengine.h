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

/* ---- The schema -----------------------------------------------------------
 * The engine's structs are declared once, as X-macro lists, and everything
 * that reads or writes their fields is generated from these lists: the C
 * structs, the engine's field checks, the launcher's request decoders, and
 * (through acl_describe(), which reports every list as JSON) the Python
 * bindings.  A field is F(KIND, name, presence, min, default, names):
 *   KIND      INT, FLOAT, BOOL (an int, 0 or 1), ENUM (an int given by name),
 *             STRING (const char *), INTS (const int *name + int name_count),
 *             FLOATS (const float *name + size_t name_count), CONV_SHAPE;
 *   presence  REQUIRED or OPTIONAL (an absent OPTIONAL field takes `default`);
 *   min       the smallest legal value of an INT field;
 *   names     for an ENUM, the X-macro list of its values, X(CONSTANT, name). */

#define ACL_ACTIVATIONS(X)                                                                   \
    X(ACL_ACT_NONE, none) X(ACL_ACT_RELU, relu) X(ACL_ACT_CLIP, clip)                       \
    X(ACL_ACT_LEAKY_RELU, leaky_relu) X(ACL_ACT_SIGMOID, sigmoid)                           \
    X(ACL_ACT_HARD_SIGMOID, hard_sigmoid) X(ACL_ACT_HARD_SWISH, hard_swish)                 \
    X(ACL_ACT_SILU, silu) X(ACL_ACT_MISH, mish) X(ACL_ACT_GELU, gelu)                       \
    X(ACL_ACT_GELU_TANH, gelu_tanh)

/* One convolution, ONNX Conv semantics, NHWC input.  The epilogue is
 * y = act(conv(x, w) + bias + residual); residual has the output's shape;
 * act_min/act_max bound ACL_ACT_CLIP; act_alpha/act_beta are the other
 * activations' parameters (leaky_relu's slope, hard_sigmoid's and
 * hard_swish's alpha x + beta).  With `transposed`, ONNX ConvTranspose
 * semantics instead: input pixel (iy, ix) adds w * x to output pixel
 * (iy * stride_h - pad_top + ky * dil_h, ix * stride_w - pad_left + kx * dil_w),
 * the output is oh = stride_h * (h - 1) + out_pad_h + dil_h * (kh - 1) + 1 -
 * pad_top - pad_bottom high (ow alike), and the weights are c x (oc/group) x
 * kh x kw (ConvTranspose's layout).  out_pad_h/w must be 0 for an ordinary
 * convolution. */
#define ACL_CONV_SHAPE_FIELDS(F)                                                     \
    F(INT, n, REQUIRED, 1, 0, 0) F(INT, h, REQUIRED, 1, 0, 0)                       \
    F(INT, w, REQUIRED, 1, 0, 0) F(INT, c, REQUIRED, 1, 0, 0)                       \
    F(INT, oc, REQUIRED, 1, 0, 0) F(INT, kh, REQUIRED, 1, 0, 0)                     \
    F(INT, kw, REQUIRED, 1, 0, 0) F(INT, stride_h, OPTIONAL, 1, 1, 0)               \
    F(INT, stride_w, OPTIONAL, 1, 1, 0) F(INT, dil_h, OPTIONAL, 1, 1, 0)            \
    F(INT, dil_w, OPTIONAL, 1, 1, 0) F(INT, pad_top, OPTIONAL, 0, 0, 0)             \
    F(INT, pad_left, OPTIONAL, 0, 0, 0) F(INT, pad_bottom, OPTIONAL, 0, 0, 0)       \
    F(INT, pad_right, OPTIONAL, 0, 0, 0) F(INT, group, OPTIONAL, 1, 1, 0)           \
    F(ENUM, act, OPTIONAL, 0, 0, ACL_ACTIVATIONS)                                   \
    F(FLOAT, act_min, OPTIONAL, 0, 0, 0) F(FLOAT, act_max, OPTIONAL, 0, 0, 0)       \
    F(FLOAT, act_alpha, OPTIONAL, 0, 0, 0) F(FLOAT, act_beta, OPTIONAL, 0, 0, 0)    \
    F(BOOL, has_residual, OPTIONAL, 0, 0, 0) F(BOOL, transposed, OPTIONAL, 0, 0, 0)  \
    F(INT, out_pad_h, OPTIONAL, 0, 0, 0) F(INT, out_pad_w, OPTIONAL, 0, 0, 0)

/* C declarations of the field kinds (the FLOATS and INTS counts follow the pointer). */
#define ACL_DECLARE_INT(name) int name;
#define ACL_DECLARE_FLOAT(name) float name;
#define ACL_DECLARE_BOOL(name) int name;
#define ACL_DECLARE_ENUM(name) int name;
#define ACL_DECLARE_STRING(name) const char *name;
#define ACL_DECLARE_INTS(name) const int *name; int name##_count;
#define ACL_DECLARE_FLOATS(name) const float *name; size_t name##_count;
#define ACL_DECLARE_CONV_SHAPE(name) acl_conv_shape name;
#define ACL_DECLARE_FIELD(kind, name, presence, min, dflt, names) ACL_DECLARE_##kind(name)
#define ACL_ENUM_CONSTANT(constant, name) constant,

enum acl_activation { ACL_ACTIVATIONS(ACL_ENUM_CONSTANT) ACL_ACT_COUNT };

typedef struct {
    ACL_CONV_SHAPE_FIELDS(ACL_DECLARE_FIELD)
} acl_conv_shape;

enum acl_field_kind {
    ACL_FIELD_INT,
    ACL_FIELD_FLOAT,
    ACL_FIELD_BOOL,
    ACL_FIELD_ENUM,
    ACL_FIELD_STRING,
    ACL_FIELD_INTS,
    ACL_FIELD_FLOATS,
    ACL_FIELD_CONV_SHAPE,
};

/* One field of a schema list, as the engine and the launcher read it. */
typedef struct {
    const char *name;
    int kind;                   /* enum acl_field_kind */
    size_t offset;              /* in its struct; an INTS/FLOATS count follows the pointer */
    int required;
    int min;                    /* INT */
    double dflt;                /* INT, FLOAT, BOOL, ENUM when absent */
    const char *const *names;   /* ENUM: the values' names, NULL-terminated */
} acl_field_info;

/* The fields of acl_conv_shape, in order. */
const acl_field_info *acl_conv_shape_fields(int *count);

/* The options of the launcher's measure request (native/launcher/PROTOCOL.md):
 * how every config is timed.  The launcher decodes them, and the tuner's
 * MeasureOptions is checked against them, from this one list.
 * F(kind, name, default, minimum): INT an int, DOUBLE a double (milliseconds,
 * or a percentage), BYTES a long long up to the launcher's eviction cap. */
#define ACL_MEASURE_OPTIONS(F)                                                           \
    F(INT, warmup, 1, 0) F(DOUBLE, min_repeat_ms, 30, 0) F(INT, min_repeats, 3, 1)       \
    F(INT, max_repeats, 50, 1) F(BYTES, evict_bytes, 0, 0) F(DOUBLE, ci_target_pct, 0, 0) \
    F(DOUBLE, max_repeat_ms, 0, 0) F(DOUBLE, cooldown_ms, 0, 0)

/* Every schema list of this build as one JSON document (static storage):
 * {"version", "isa", "field_kinds", "conv_shape": {"size", "fields"},
 *  "ops": [{"name", "code", "inputs": [min, max], "size", "fields"}],
 *  "measure_options": [{"name", "kind", "default", "min"}]}; each field is
 * {"name", "kind", "offset", "required", "min", "default"[, "names"]}. */
const char *acl_describe(void);

/* How one call is spread over the cores.  weights[i] is the share of CPU i
 * (0 = no thread on CPU i); the output is cut into `workloads` units (at most
 * ACL_MAX_WORKLOADS) that are handed out in proportion to the weights.  No
 * thread is created per call. */
#define ACL_MAX_WORKLOADS 65535
typedef struct {
    int ncores;
    const int *weights;
    int workloads;
} acl_exec;

/* The calling thread runs the first active CPU's share of each call, pinned
 * to that CPU, and stays pinned (moving only when a call's first share is on
 * another CPU) until acl_release_caller() gives it back its own affinity:
 * once per call sequence rather than two system calls per operation.
 * acl_graph_run, acl_graph_import and acl_graph_export release before they
 * return; after acl_conv_run or acl_gemm_run the caller releases when it
 * wants its thread back (a measuring loop keeps it pinned). */
void acl_release_caller(void);

/* How the calls a thread makes run their shares.  STRICT (the default): each
 * CPU runs its whole share and nothing else, so a config is measured as it is
 * planned.  ADAPTIVE: each CPU starts on its share, and a thread done with its
 * own takes over, half at a time from the back, what is left of a share whose
 * CPU has not started or finished it: a core descheduled by another thread
 * delays a call by the units it holds, not by its whole share, and a worker
 * still holding units, descheduled, after the caller waited 0.3 ms for them
 * is moved onto the caller's CPU (and back before its next job); a worker
 * whose CPU was found contended gets no share for the next 10 ms, the caller
 * and the others taking it over.  Units are cut
 * alike in both modes and a unit's result never depends on the thread that
 * computes it, so outputs are bit-identical.  A calling thread that waited
 * behind another thread on its own CPU during a program run (a fifth of the
 * time) runs its calls alone and unpinned for the next 200 ms: every call
 * waits for it, and the system can move one thread to a free core.  Applies
 * to the calling thread's later calls; returns the previous mode. */
typedef enum { ACL_BALANCE_STRICT = 0, ACL_BALANCE_ADAPTIVE = 1 } acl_balance;
acl_balance acl_set_balance(acl_balance mode);

/* Test hooks of the balancing: from now on the worker pinned to `cpu` waits
 * before each job it is given until another thread takes over units, or `ms`
 * at most (a core held by another thread; ms <= 0: none), and every worker
 * rescued before takes shares again; and the count of units run, since the
 * process started, by a thread other than the one of their share's CPU. */
void acl_pool_test_stall(int cpu, double ms);
/* Test hook: the time a worker moved by a rescue gets no share in the
 * adaptive balance, from its next rescue on (ms < 0: the default). */
void acl_pool_test_rest(double ms);
long long acl_pool_units_taken_over(void);

/* Wall time of each stage of one run, in milliseconds. */
typedef struct {
    double pre_ms;   /* im2col, A interleave, Winograd input transform */
    double gemm_ms;  /* GEMM (with the fused epilogue) or the direct kernel */
    double post_ms;  /* Winograd output transform */
    double total_ms;
} acl_stage_times;

const char *acl_version(void);
/* 16 hex digits hashing every engine source and the compile flags: two
 * builds with the same fingerprint run the same code. */
const char *acl_fingerprint(void);
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
    /* "fp32", or "fp16": operands rounded to half precision and products
     * summed in it (Armv8.2-A FP16), for im2col and gemm1x1 only, and only
     * where reduced precision is allowed. */
    const char *precision;
} acl_ukernel_info;

int acl_ukernel_count(void);
int acl_ukernel_get(int i, acl_ukernel_info *out);

/* The int8 micro-kernels this CPU runs (aclgraph.h's conv_int8 takes one by
 * name), fastest first: the first is the one an empty name picks.  NULL
 * with the error set for an index out of range. */
int acl_int8_ukernel_count(void);
const char *acl_int8_ukernel_name(int i);

/* How far an fp16 micro-kernel's output may be from the exact one: an output
 * of K products is within acl_fp16_error_bound(K) x (sum_k |x w| + |bias| +
 * |residual|), beyond fp32's own rounding.  Each operand is rounded to half
 * precision (u = 2^-11) and a half-precision sum takes at most the GEMM's K
 * block of products, one rounding per FMA (Higham's gamma_n), so (min(K,
 * block) + 2) u; times 1.5, the steepest slope of an activation
 * (hard_swish). */
double acl_fp16_error_bound(int k);

int acl_conv_out_size(const acl_conv_shape *s, int *oh, int *ow);

/* 0 if `algorithm` with `ukernel` (NULL or "" for direct algorithms) can run
 * this shape, -1 with the reason in acl_last_error() otherwise. */
int acl_conv_check(const acl_conv_shape *s, const char *algorithm, const char *ukernel);

typedef struct acl_conv acl_conv;

/* weight: oc x (c/group) x kh x kw (OIHW), or c x (oc/group) x kh x kw for a
 * transposed shape; bias: oc floats or NULL. */
int acl_conv_create(const acl_conv_shape *s, const char *algorithm, const char *ukernel,
                    const float *weight, const float *bias, acl_conv **out);
/* residual: NULL unless shape->has_residual; times may be NULL. */
int acl_conv_run(acl_conv *conv, const acl_exec *ex, const float *input, const float *residual,
                 float *output, acl_stage_times *times);
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
int acl_gemm_run(acl_gemm *g, const acl_exec *ex, int m, const float *a, int lda, float *c, int ldc,
                 acl_stage_times *times);
void acl_gemm_destroy(acl_gemm *g);

/* CPUs this process may be pinned to, as a count of ids 0..n-1 known to the OS;
 * with ACL_CPUS=a,b,.. set, the engine's CPU i is the machine's CPU number i of
 * that list (one machine standing in for several boards); 0 if that list
 * does not parse. */
int acl_cpu_count(void);

/* This machine's id of the engine's CPU `cpu`: its entry in ACL_CPUS, or
 * `cpu` itself where that list is unset or shorter. */
int acl_machine_cpu(int cpu);

#ifdef __cplusplus
}
#endif
#endif
