/* The graph suite's trials (test_graph and its families' files): every graph
 * operation over random shapes against naive loops, bit-identical arenas
 * across core weights and workloads, and the one-line errors of bad programs.
 *
 * Each case lays its tensors out in a fresh arena filled with random floats,
 * builds the same one-node program under every exec config, and checks the
 * whole arena after a run: the output within tolerance of the reference,
 * every other float untouched. */
#ifndef ACL_GRAPH_TRIAL_H
#define ACL_GRAPH_TRIAL_H

#include <stddef.h>

#include "aclgraph.h"
#include "test_harness.h"

#define TOL_EXACT 1e-5      /* one rounding per element, or sums of a few terms */
#define TOL_GEMM 1e-4       /* long dot products in a different order */

/* The exec configs every trial runs under. */
#define NCONFIGS 4
extern const acl_exec configs[NCONFIGS];

/* ---- a trial: one program, its arena before and the expected arena after ---- */

/* Adds the operation under test; ex is the program's exec (convolutions take it too). */
typedef int (*add_fn)(acl_graph *g, const void *spec, const acl_exec *ex);

typedef struct {
    char desc[256];
    size_t arena, used;          /* used: where the next tensor goes */
    float *init, *expected;
    const acl_tensor *out;
    double tol;
} trial;

void fill_random(float *p, size_t n, float scale);

size_t volume(int rank, const int *dims);

void trial_begin(trial *t, double tol, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Places a tensor after the previous one, a random gap apart. */
void place(trial *t, acl_tensor *x, int rank, const int *dims);

/* The output of an elementwise case: over its input when in_place, else placed anew. */
void place_output(trial *t, acl_tensor *out, const acl_tensor *in, int in_place, int rank,
                  const int *dims);

/* Allocates the arena (random contents) once every tensor is placed. */
float *trial_arena(trial *t);

/* Input and output of a one-input operation, the expected arena starting as
 * a copy of the placed one; the arena. */
float *place_in_out(trial *t, acl_tensor *in, acl_tensor *out, int rank, const int *dims,
                    const int *odims);

void trial_fail(const trial *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The output within tolerance (relative to max|expected|), the rest exact. */
int check_arena(const trial *t, const float *got);

/* Builds and runs the program under every config; counts one pass or fail. */
void trial_run(trial *t, const acl_tensor *out, add_fn add, const void *spec);

/* Random dims of a rank; `big` cases are large enough to be split over cores. */
void random_dims(int rank, int big, int *dims);

/* A random permutation of [0, n) (Fisher-Yates). */
void random_perm(int n, int *perm);

const char *dims_str(int rank, const int *dims);

/* ---- the cases: test_graph_elementwise.c ---- */

void unary_case(int big);
void accuracy_case(void);
void affine_case(int big);
void layer_norm_case(int big);
void binary_case(int big);
void softmax_case(int big);
void lrn_case(int big);

/* ---- the cases: test_graph_layout.c ---- */

void pool_case(int big);
void global_average_pool_case(int big);
void concat_case(int big);
void transpose_case(int big);
void slice_case(int big);
void gather_shuffle_case(int big);
void pad_case(int big);
void resize_case(int big);

/* ---- the cases: test_graph_linear.c ---- */

void matmul_case(int big);
void batch_matmul_case(int big);
void gather_case(int big);
void conv_case(int big);
void chain_case(void);
void shared_b_case(void);
void shared_workspace_case(void);
void check_errors(void);

/* ---- the cases: test_graph_int8.c (uint8 tensors, checked exactly) ---- */

void quantize_case(int big);
void conv_int8_case(int big);
void quantized_add_case(int big);
void u8_max_pool_case(int big);
void u8_concat_case(int big);
void conv_int8_wide_b_case(void);
void conv_int8_depthwise_case(void);
void conv_int8_im2col_runs_case(void);
void check_int8_errors(void);

#endif
