/* The 1-D Winograd / Toom-Cook matrices of F(m, r), built from interpolation
 * points rather than typed in, so every variant comes from one construction. */
#ifndef ACL_WINOGRAD_MATRICES_H
#define ACL_WINOGRAD_MATRICES_H

/* alpha = m + r - 1 input points per tile; the finite points come from a
 * fixed well-conditioned list (0, 1, -1, 1/2, -2, 2, -1/2) plus infinity. */
#define WINOGRAD_MAX_ALPHA 8

typedef struct {
    int m, r, alpha;
    float bt[WINOGRAD_MAX_ALPHA * WINOGRAD_MAX_ALPHA];  /* alpha x alpha: input transform */
    float at[WINOGRAD_MAX_ALPHA * WINOGRAD_MAX_ALPHA];  /* m x alpha: output transform */
    double g[WINOGRAD_MAX_ALPHA * WINOGRAD_MAX_ALPHA];  /* alpha x r: weight transform */
} winograd_matrices;

/* F(m, r) for m + r - 1 <= WINOGRAD_MAX_ALPHA; F(1, 1) is the identity. */
void winograd_matrices_init(winograd_matrices *t, int m, int r);

#endif
