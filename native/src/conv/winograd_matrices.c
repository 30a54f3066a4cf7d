/* Toom-Cook construction of F(m, r).
 *
 * Correlation y = g (*) d is the transpose of the linear convolution s = g * h
 * (degrees r-1 and m-1).  That convolution is evaluated at the points p_i and
 * at infinity (the leading coefficient), multiplied pointwise, and
 * interpolated back:
 *   s(x) = s_inf M(x) + sum_i s(p_i) M_i(x) / N_i,
 *   M(x) = prod_i (x - p_i),  M_i(x) = M(x) / (x - p_i),  N_i = M_i(p_i).
 * Transposing gives y = A^T [(G g) . (B^T d)] with
 *   A^T[j][i] = p_i^j,  G[i][j] = p_i^j / N_i,  B^T[i][k] = coefficient k of M_i
 * and, for infinity, the last column of A^T / row of G picking the leading
 * coefficient and the last row of B^T holding M's coefficients.  1/N_i sits in
 * G so B^T and A^T stay small integers (and G runs once, in double, at create). */
#include "winograd_matrices.h"

/* F(2, 3) takes the first three, F(4, 3) the first five: {0, 1, -1, 1/2, -2}
 * has about 2.5x less fp32 error than the textbook {0, 1, -1, 2, -2}
 * (Barabasz et al., "Error analysis and improving the accuracy of Winograd
 * convolution"; measured here at C = 512). */
static const double points[WINOGRAD_MAX_ALPHA - 1] = {0.0, 1.0, -1.0, 0.5, -2.0, 2.0, -0.5};

/* Coefficients (lowest first, `finite` + 1 of them) of prod_{j != skip} (x - p_j). */
static void node_polynomial(int finite, int skip, double *coef)
{
    int degree = 0;
    coef[0] = 1.0;
    for (int j = 1; j <= finite; j++) coef[j] = 0.0;
    for (int j = 0; j < finite; j++) {
        if (j == skip) continue;
        /* multiply by (x - p_j) */
        for (int k = degree + 1; k > 0; k--) coef[k] = coef[k - 1] - points[j] * coef[k];
        coef[0] *= -points[j];
        degree++;
    }
}

void winograd_matrices_init(winograd_matrices *t, int m, int r)
{
    int alpha = m + r - 1, finite = alpha - 1, inf = alpha - 1;
    t->m = m;
    t->r = r;
    t->alpha = alpha;
    double coef[WINOGRAD_MAX_ALPHA];
    for (int i = 0; i < finite; i++) {
        double n_i = 1.0;
        for (int j = 0; j < finite; j++)
            if (j != i) n_i *= points[i] - points[j];
        double power = 1.0;
        for (int j = 0; j < m || j < r; j++, power *= points[i]) {
            if (j < m) t->at[j * alpha + i] = (float)power;
            if (j < r) t->g[i * r + j] = power / n_i;
        }
        node_polynomial(finite, i, coef);
        for (int k = 0; k < alpha; k++) t->bt[i * alpha + k] = (float)coef[k];
    }
    for (int j = 0; j < m; j++) t->at[j * alpha + inf] = j == m - 1;
    for (int j = 0; j < r; j++) t->g[inf * r + j] = j == r - 1;
    node_polynomial(finite, -1, coef);
    for (int k = 0; k < alpha; k++) t->bt[inf * alpha + k] = (float)coef[k];
}
