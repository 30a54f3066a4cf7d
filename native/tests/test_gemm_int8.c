/* int8 GEMM tests: every int8 micro-kernel this CPU runs, through the int8
 * macro-kernel, against an int64 triple loop on random shapes (edge tiles, K
 * no multiple of the kernel's K group), extreme values (u8 255 x s8 -128 at
 * the largest K) and the zero-point correction for za = 0, 128 and 255; and
 * the requantising epilogue's rounding and saturation, and a rows kernel's
 * requantising twin byte for byte against it.  Each kernel prints
 * "ran NAME" or "skipped NAME", so that a run under an emulated CPU that
 * lacks an ISA shows the dispatch left its kernels out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_int8/int8.h"
#include "gemm_int8/requant.h"
#include "internal.h"
#include "test_harness.h"

typedef enum { VALUES_RANDOM, VALUES_EXTREME } values;

static void fill(uint8_t *a, size_t na, int8_t *b, size_t nb, values v)
{
    for (size_t i = 0; i < na; i++) a[i] = v == VALUES_EXTREME ? 255 : (uint8_t)rnd(0, 255);
    for (size_t i = 0; i < nb; i++) b[i] = v == VALUES_EXTREME ? -128 : (int8_t)rnd(-128, 127);
}

/* One M x N x K product through `uk`, checked entry by entry: the raw sums,
 * the column sums, and raw - za * colsum against sum (a - za) b. */
static void check_product(const acl_ukernel_int8 *uk, int m, int n, int k, values v)
{
    const int lda = k + rnd(0, 3), ldb = n + rnd(0, 3), ldc = n + rnd(0, 3);
    uint8_t *a = malloc((size_t)m * lda);
    int8_t *b = malloc((size_t)k * ldb);
    int32_t *c = malloc((size_t)m * ldc * sizeof *c), *sums = malloc((size_t)n * sizeof *sums);
    void *packed = malloc(acl_gemm_int8_packed_b_size(uk, k, n));
    fill(a, (size_t)m * lda, b, (size_t)k * ldb, v);
    acl_gemm_int8_pack_b(uk, k, n, b, ldb, packed);
    acl_gemm_int8_column_sums(uk, n, k, packed, sums);
    const int rc = acl_gemm_int8(uk, m, n, k, a, lda, packed, c, ldc);
    check(rc == 0, "%s %dx%dx%d: %s", uk->name, m, n, k, acl_last_error());
    static const int zero_points[] = {0, 128, 255};
    int bad = 0;
    for (int i = 0; rc == 0 && i < m && !bad; i++)
        for (int j = 0; j < n && !bad; j++) {
            long long raw = 0, colsum = 0;
            for (int kk = 0; kk < k; kk++) {
                raw += (long long)a[(size_t)i * lda + kk] * b[(size_t)kk * ldb + j];
                colsum += b[(size_t)kk * ldb + j];
            }
            const int32_t got = c[(size_t)i * ldc + j];
            bad = got != raw || sums[j] != colsum;
            for (int z = 0; z < 3 && !bad; z++) {
                const long long want = raw - zero_points[z] * colsum;
                bad = (long long)got - (long long)zero_points[z] * sums[j] != want;
            }
            if (bad)
                printf("%s %dx%dx%d: C[%d][%d] = %d, colsum %d; expected %lld, colsum %lld\n",
                       uk->name, m, n, k, i, j, got, sums[j], raw, colsum);
        }
    if (rc == 0) check(!bad, "%s %dx%dx%d: wrong sums (above)", uk->name, m, n, k);
    free(a), free(b), free(c), free(sums), free(packed);
}

/* A rows kernel's requantising twin against the int32 sums requantised
 * by requant.c: the same bytes, edge tiles included, with random offsets
 * and scales that send some values past [lo, hi] and past +-512. */
static void check_requant(const acl_ukernel_int8 *uk, int m, int n, int k)
{
    const int lda = k + rnd(0, 3), ldc = n + rnd(0, 3), slack = n + uk->nr;
    uint8_t *a = malloc((size_t)m * lda), *got = malloc((size_t)m * ldc);
    uint8_t *want = malloc((size_t)m * ldc),
            *apack = malloc(acl_gemm_int8_packed_a_bytes(uk, m, k));
    int8_t *b = malloc((size_t)k * n);
    int32_t *c = malloc((size_t)m * n * sizeof *c),
            *offset = malloc((size_t)slack * sizeof *offset);
    float *scale = malloc((size_t)slack * sizeof *scale);
    void *packed = malloc(acl_gemm_int8_packed_b_size(uk, k, n));
    fill(a, (size_t)m * lda, b, (size_t)k * n, VALUES_RANDOM);
    for (int j = 0; j < slack; j++) {
        offset[j] = rnd(-300000, 300000);
        scale[j] = (float)rnd(1, 4000) / (float)(1 << 22);
    }
    acl_gemm_int8_pack_b(uk, k, n, b, n, packed);
    memset(got, 0xa5, (size_t)m * ldc);
    memcpy(want, got, (size_t)m * ldc);
    const acl_int8_tile_requant q = {offset, scale, rnd(0, 255), rnd(0, 40), rnd(200, 255)};
    const acl_requant rq = {scale, NULL, NULL, 0, q.zc, (uint8_t)q.lo, (uint8_t)q.hi, offset};
    const int rc = acl_gemm_int8(uk, m, n, k, a, lda, packed, c, n);
    acl_requantize_u8(&rq, m, n, c, n, want, ldc);
    acl_gemm_int8_requant(uk, m, n, k, a, lda, packed, &q, got, ldc, apack);
    check(rc == 0 && memcmp(got, want, (size_t)m * ldc) == 0,
          "%s requantising twin %dx%dx%d: bytes differ from the sums requantised", uk->name, m, n,
          k);
    free(a), free(got), free(want), free(apack), free(b), free(c), free(offset), free(scale);
    free(packed);
}

static void test_kernel(const acl_ukernel_int8 *uk)
{
    for (int t = 0; uk->rows_requant_fn && t < 30; t++)
        check_requant(uk, rnd(1, 3 * uk->mr + 1), rnd(1, 3 * uk->nr + 1), rnd(1, 300));
    /* A lone row (row_requant_fn), whole and edge panels, K past its
     * accumulator sets' turns and a classifier's. */
    for (int k = 1; uk->rows_requant_fn && k <= 40; k += 13)
        check_requant(uk, 1, 2 * uk->nr + 5, k);
    if (uk->rows_requant_fn) check_requant(uk, 1, 3 * uk->nr, 1280);
    /* Shapes of one tile, a tile and a bit, and several tiles with edges. */
    for (int t = 0; t < 60; t++) {
        const int m = rnd(1, 3 * uk->mr + 1), n = rnd(1, 3 * uk->nr + 1);
        const int k = t < 12 ? t + 1 : rnd(1, 300);
        check_product(uk, m, n, k, VALUES_RANDOM);
    }
    check_product(uk, uk->mr, uk->nr, 4 * uk->kr, VALUES_RANDOM);
    /* 255 x -128 over the largest K is the sum nearest int32's bound. */
    check_product(uk, uk->mr + 1, uk->nr + 1, ACL_INT8_MAX_K, VALUES_EXTREME);
    check_product(uk, 2, 3, 3, VALUES_EXTREME);
    check(acl_gemm_int8_check(uk, ACL_INT8_MAX_K + 1) != 0 &&
              strstr(acl_last_error(), "overflow") != NULL,
          "%s: K past ACL_INT8_MAX_K is refused", uk->name);
    check(acl_gemm_int8_check(uk, 0) != 0, "%s: K = 0 is refused", uk->name);
}

/* Ties go to even, after the scale and before the zero point, and the result
 * saturates to [lo, hi]. */
static void test_requantize(void)
{
    const int32_t acc[] = {1, 3, 5, 7, -1, -3, -5, 0, 1000, -1000};
    const int n = (int)(sizeof acc / sizeof acc[0]);
    float scale[16];
    int32_t colsum[16], bias[16];
    for (int j = 0; j < n; j++) scale[j] = 0.5f, colsum[j] = 2, bias[j] = 0;
    /* acc * 0.5 = 0.5 1.5 2.5 3.5 -0.5 -1.5 -2.5 0 500 -500; +10, then [0, 255] */
    const uint8_t want[] = {10, 12, 12, 14, 10, 8, 8, 10, 255, 0};
    uint8_t out[16];
    acl_requant rq = {.scale = scale,
                      .bias = bias,
                      .colsum = colsum,
                      .a_zero_point = 0,
                      .c_zero_point = 10,
                      .lo = 0,
                      .hi = 255};
    acl_requantize_u8(&rq, 1, n, acc, n, out, n);
    for (int j = 0; j < n; j++)
        check(out[j] == want[j], "requantize %d * 0.5 + 10: %d, expected %d", acc[j], out[j],
              want[j]);
    /* za * colsum comes off before the bias goes on; a fused ReLU is lo = zc. */
    rq.a_zero_point = 3, rq.lo = 10, rq.hi = 200;
    for (int j = 0; j < n; j++) bias[j] = 6;
    const uint8_t want_relu[] = {10, 12, 12, 14, 10, 10, 10, 10, 200, 10};
    acl_requantize_u8(&rq, 1, n, acc, n, out, n);
    for (int j = 0; j < n; j++)
        check(out[j] == want_relu[j],
              "requantize (%d - 6 + 6) * 0.5 + 10 in [10, 200]: %d, "
              "expected %d",
              acc[j], out[j], want_relu[j]);
    /* The same through an int32 offset (bias - za * colsum = 0), which
     * takes the place of all three. */
    int32_t offset[16] = {0};
    rq.offset = offset, rq.bias = NULL, rq.a_zero_point = 77;
    acl_requantize_u8(&rq, 1, n, acc, n, out, n);
    for (int j = 0; j < n; j++)
        check(out[j] == want_relu[j],
              "requantize (%d + 0) * 0.5 + 10 in [10, 200]: %d, expected %d", acc[j], out[j],
              want_relu[j]);
}

int main(void)
{
    const acl_ukernel_int8 *const *built, *const *available;
    const int nbuilt = acl_int8_ukernels_built(&built);
    const int navailable = acl_int8_ukernels_available(&available);
    check(nbuilt >= 2 && navailable >= 1, "int8 kernels: %d built, %d available", nbuilt,
          navailable);
    for (int i = 0; i < nbuilt; i++) {
        const acl_ukernel_int8 *uk = acl_int8_ukernel_find(built[i]->name);
        printf("%s %s\n", uk ? "ran" : "skipped", built[i]->name);
        if (uk) test_kernel(uk);
    }
    test_requantize();
    return test_summary();
}
