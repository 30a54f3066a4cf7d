/* Whole-model program tests: every graph operation over random shapes against
 * naive loops, bit-identical arenas across core weights and workloads, and the
 * one-line errors of bad programs.
 *
 *   test_graph [--cases N] [--seed S]   closes with "N passed, N failed"
 *
 * The cases are in test_graph_{elementwise,layout,linear,int8}.c, their trials in
 * graph_trial.c (graph_trial.h says how a case is checked).
 */
#include <stdlib.h>
#include <string.h>

#include "graph_trial.h"

/* ---- main ------------------------------------------------------------------------ */

static void (*const op_cases[])(int big) = {
    unary_case,
    affine_case,
    binary_case,
    pool_case,
    global_average_pool_case,
    concat_case,
    transpose_case,
    pad_case,
    softmax_case,
    lrn_case,
    matmul_case,
    conv_case,
    resize_case,
    batch_matmul_case,
    gather_case,
    slice_case,
    gather_shuffle_case,
    layer_norm_case,
    quantize_case,
    conv_int8_case,
    quantized_add_case,
    u8_max_pool_case,
    u8_concat_case,
};
#define NOPS (int)(sizeof op_cases / sizeof op_cases[0])

int main(int argc, char **argv)
{
    int cases = 200;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc) cases = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            rng_state = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--cases N] [--seed S]\n", argv[0]);
            return 2;
        }
    }
    check_errors();
    check_int8_errors();
    conv_int8_wide_b_case();
    conv_int8_depthwise_case();
    conv_int8_im2col_runs_case();
    accuracy_case();
    chain_case();
    shared_b_case();
    shared_workspace_case();
    /* `cases` random cases per operation, one in four big enough to be split. */
    for (int i = 0; i < cases; i++)
        for (int op = 0; op < NOPS; op++) op_cases[op](i % 4 == 3);
    return test_summary();
}
