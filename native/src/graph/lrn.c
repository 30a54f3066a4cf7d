/* ONNX LRN across the channels (innermost axis), one pixel per unit of work:
 * y = x / (bias + alpha / size * sum of x^2 over the window)^beta, the window
 * being [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the channels. */
#include <math.h>
#include <stdlib.h>

#include "graph_impl.h"

typedef struct {
    const float *x;
    float *y;
    size_t pixels;
    int c, before, after;  /* window: channels [c - before, c + after] */
    float scale, beta, bias;  /* scale = alpha / size */
} lrn_params;

/* d^-beta for d = bias + scale * sum > 0: the betas models use by square
 * roots, which vectorise (powf does not): 0.75 in AlexNet, GoogLeNet and
 * ZFNet, 0.5 and 1. */
static void scale_by_power(const float *restrict x, float *restrict y, int c, float beta)
{
    if (beta == 0.75f) {
        for (int ch = 0; ch < c; ch++) {
            const float r = sqrtf(y[ch]);
            y[ch] = x[ch] / (r * sqrtf(r));
        }
    } else if (beta == 0.5f) {
        for (int ch = 0; ch < c; ch++) y[ch] = x[ch] / sqrtf(y[ch]);
    } else if (beta == 1.0f) {
        for (int ch = 0; ch < c; ch++) y[ch] = x[ch] / y[ch];
    } else {
        for (int ch = 0; ch < c; ch++) y[ch] = x[ch] * powf(y[ch], -beta);
    }
}

static void lrn_rows(const void *arg, size_t begin, size_t end)
{
    const lrn_params *p = arg;
    for (size_t px = begin; px < end; px++) {
        const float *x = p->x + px * p->c;
        float *y = p->y + px * p->c;
        for (int ch = 0; ch < p->c; ch++) {
            const int lo = acl_max(0, ch - p->before), hi = acl_min(p->c - 1, ch + p->after);
            float sum = 0.0f;
            for (int j = lo; j <= hi; j++) sum += x[j] * x[j];
            y[ch] = p->bias + p->scale * sum;  /* the denominator's base, then y */
        }
        scale_by_power(x, y, p->c, p->beta);
    }
}

static int lrn_run(const void *arg, const acl_exec *ex)
{
    const lrn_params *p = arg;
    return graph_parallel(ex, p->pixels, (size_t)p->c * (p->before + p->after + 1), lrn_rows, p);
}

int graph_op_lrn(acl_graph *g, const acl_lrn_attrs *attrs, int nin, const acl_tensor *in,
                 const acl_tensor *out)
{
    const int size = attrs->size;
    const float alpha = attrs->alpha, beta = attrs->beta, bias = attrs->bias;
    if (size < 1) return acl_fail("lrn: size must be >= 1, got %d", size);
    size_t count;
    if (graph_check_like_input(g, "lrn", in, out, 0, &count) != 0) return -1;
    if (in->rank < 1) return acl_fail("lrn: the input must have rank >= 1 (channels innermost)");
    lrn_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("lrn: out of memory");
    const int c = in->dims[in->rank - 1];
    *p = (lrn_params){graph_ptr(g, in),
                      graph_ptr(g, out),
                      count / (size_t)c,
                      c,
                      (size - 1) / 2,
                      size / 2,
                      alpha / (float)size,
                      beta,
                      bias};
    return graph_add(g, lrn_run, NULL, p);
}
