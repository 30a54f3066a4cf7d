/* The public convolution API: the algorithm registry, shape validation and
 * the create / run / destroy life cycle shared by every algorithm. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"

#define ALGORITHM_ENTRY(name) &conv_##name,
static const conv_algo *const algorithms[] = {CONV_ALGORITHMS(ALGORITHM_ENTRY)};
#define NALGORITHMS (int)(sizeof algorithms / sizeof algorithms[0])

static int have_ukernels(void)
{
    const acl_ukernel *const *list;
    return acl_ukernels_available(&list) > 0;
}

/* The i-th algorithm usable here: GEMM-based ones need a micro-kernel. */
static const conv_algo *usable_algorithm(int i)
{
    int gemm_ok = have_ukernels();
    for (int a = 0; a < NALGORITHMS; a++)
        if ((gemm_ok || !algorithms[a]->uses_ukernel) && i-- == 0) return algorithms[a];
    return NULL;
}

int acl_algorithm_count(void)
{
    int count = 0;
    while (usable_algorithm(count)) count++;
    return count;
}

const char *acl_algorithm_name(int i)
{
    const conv_algo *a = i >= 0 ? usable_algorithm(i) : NULL;
    return a ? a->name : NULL;
}

static const conv_algo *find_algorithm(const char *name)
{
    for (int a = 0; name && a < NALGORITHMS; a++)
        if (strcmp(algorithms[a]->name, name) == 0) return algorithms[a];
    char known[512];
    size_t used = 0;
    known[0] = '\0';
    for (int a = 0; a < NALGORITHMS && used < sizeof known; a++)
        used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", a ? ", " : "",
                                 algorithms[a]->name);
    acl_fail("unknown algorithm '%s' (known: %s)", name ? name : "(null)", known);
    return NULL;
}

int acl_algorithm_uses_ukernel(const char *algorithm)
{
    const conv_algo *a = find_algorithm(algorithm);
    return a ? a->uses_ukernel : -1;
}

static int check_int_fields(const acl_conv_shape *s)
{
    int n;
    const acl_field_info *fields = acl_conv_shape_fields(&n);
    for (int i = 0; i < n; i++) {
        int v = *(const int *)((const char *)s + fields[i].offset);
        if (fields[i].kind == ACL_FIELD_BOOL && v != 0 && v != 1)
            return acl_fail("%s must be 0 or 1, got %d", fields[i].name, v);
        if (fields[i].kind == ACL_FIELD_INT && v < fields[i].min)
            return acl_fail("%s must be >= %d, got %d", fields[i].name, fields[i].min, v);
    }
    if (!s->transposed && (s->out_pad_h || s->out_pad_w))
        return acl_fail("out_pad_h/out_pad_w (%d, %d) apply to transposed convolutions only",
                        s->out_pad_h, s->out_pad_w);
    return 0;
}

/* The padded input and the dilated kernel of one axis, in 64 bits so that no
 * pad or dilation wraps around; each must fit an int, as the algorithms index
 * them.  0, or -1 with the error set. */
static int axis_extents(const char *name, int in, int pad_lo, int pad_hi, int k, int dil,
                        int64_t *padded, int64_t *kernel)
{
    *padded = (int64_t)in + pad_lo + pad_hi;
    *kernel = (int64_t)dil * (k - 1) + 1;
    if (*padded > INT32_MAX)
        return acl_fail("the padded input %s (%d + %d + %d = %lld) is over %d", name, pad_lo, in,
                        pad_hi, (long long)*padded, INT32_MAX);
    if (*kernel > INT32_MAX)
        return acl_fail("the dilated kernel %s (%d x (%d - 1) + 1 = %lld) is over %d", name, dil, k,
                        (long long)*kernel, INT32_MAX);
    return 0;
}

/* One spatial axis: the output length, or -1 with the error set. */
static int out_extent(const char *axis, int in, int pad_lo, int pad_hi, int k, int dil, int stride)
{
    const char *name = axis[0] == 'h' ? "height" : "width";
    int64_t padded, kernel;
    if (axis_extents(name, in, pad_lo, pad_hi, k, dil, &padded, &kernel) != 0) return -1;
    if (padded < kernel)
        return acl_fail("the dilated kernel %s (%lld) is larger than the padded input %s (%lld)",
                        name, (long long)kernel, name, (long long)padded);
    return (int)((padded - kernel) / stride + 1);
}

/* The same for a transposed convolution: the full output (every input pixel's
 * kernel footprint, plus out_pad) less the pads. */
static int transposed_extent(const char *axis, int in, int pad_lo, int pad_hi, int k, int dil,
                             int stride, int out_pad)
{
    const char *name = axis[0] == 'h' ? "height" : "width";
    int64_t padded, kernel;
    if (axis_extents(name, in, pad_lo, pad_hi, k, dil, &padded, &kernel) != 0) return -1;
    int64_t full = (int64_t)stride * (in - 1) + out_pad + kernel;
    if (full > INT32_MAX)
        return acl_fail("transposed: the full output %s (%lld) is over %d", name, (long long)full,
                        INT32_MAX);
    if (full - pad_lo - pad_hi < 1)
        return acl_fail("transposed: the %s pads (%d + %d) leave no output of the full %s %lld",
                        axis[0] == 'h' ? "top and bottom" : "left and right", pad_lo, pad_hi, name,
                        (long long)full);
    return (int)(full - pad_lo - pad_hi);
}

int acl_conv_out_size(const acl_conv_shape *s, int *oh, int *ow)
{
    if (!s || !oh || !ow) return acl_fail("acl_conv_out_size needs a shape and two outputs");
    if (check_int_fields(s) != 0) return -1;
    int h = s->transposed
                ? transposed_extent("h", s->h, s->pad_top, s->pad_bottom, s->kh, s->dil_h,
                                    s->stride_h, s->out_pad_h)
                : out_extent("h", s->h, s->pad_top, s->pad_bottom, s->kh, s->dil_h, s->stride_h);
    if (h < 0) return -1;
    int w = s->transposed
                ? transposed_extent("w", s->w, s->pad_left, s->pad_right, s->kw, s->dil_w,
                                    s->stride_w, s->out_pad_w)
                : out_extent("w", s->w, s->pad_left, s->pad_right, s->kw, s->dil_w, s->stride_w);
    if (w < 0) return -1;
    *oh = h;
    *ow = w;
    return 0;
}

static int validate_shape(const acl_conv_shape *s, conv_dims *d)
{
    if (acl_conv_out_size(s, &d->oh, &d->ow) != 0) return -1;
    if (s->c % s->group != 0) return acl_fail("group=%d does not divide c=%d", s->group, s->c);
    if (s->oc % s->group != 0) return acl_fail("group=%d does not divide oc=%d", s->group, s->oc);
    if (s->act < 0 || s->act >= ACL_ACT_COUNT)
        return acl_fail("act must be one of the %d activations (0 to %d), got %d", ACL_ACT_COUNT,
                        ACL_ACT_COUNT - 1, s->act);
    if (s->act == ACL_ACT_CLIP && !(s->act_min <= s->act_max))
        return acl_fail("clip needs act_min <= act_max, got act_min=%g act_max=%g",
                        (double)s->act_min, (double)s->act_max);
    /* Row and pixel indices are ints (indirection entries are int32). */
    int64_t in_pixels = (int64_t)s->n * s->h * s->w, out_pixels = (int64_t)s->n * d->oh * d->ow;
    if (in_pixels * s->c > INT32_MAX || out_pixels * s->oc > INT32_MAX)
        return acl_fail("tensors over %d elements are not supported "
                        "(n*h*w*c=%lld, n*oh*ow*oc=%lld)",
                        INT32_MAX, (long long)(in_pixels * s->c), (long long)(out_pixels * s->oc));
    d->cg = s->c / s->group;
    d->ocg = s->oc / s->group;
    d->taps = s->kh * s->kw;
    d->m = (int)out_pixels;
    return 0;
}

static int resolve(const acl_conv_shape *s, const char *algorithm, const char *ukernel,
                   conv_dims *d, const conv_algo **algo, const acl_ukernel **uk)
{
    if (!s) return acl_fail("no shape given");
    if (validate_shape(s, d) != 0) return -1;
    if (!(*algo = find_algorithm(algorithm))) return -1;
    int named = ukernel && ukernel[0];
    *uk = NULL;
    if (!(*algo)->uses_ukernel) {
        if (named)
            return acl_fail("%s is a direct algorithm and takes no micro-kernel, got '%s'",
                            algorithm, ukernel);
    } else {
        if (!named)
            return acl_fail("%s runs on a GEMM micro-kernel; name one (see acl_ukernel_get)",
                            algorithm);
        if (!(*uk = acl_ukernel_find(ukernel)))
            return acl_fail("unknown micro-kernel '%s' on this machine", ukernel);
        if ((*uk)->fp16_fn && !(*algo)->fp16)
            return acl_fail("%s computes in fp32 only, %s in fp16", algorithm, ukernel);
    }
    if ((*algo)->shapes != CONV_EITHER &&
        (*algo)->shapes != (s->transposed ? CONV_TRANSPOSED : CONV_ORDINARY))
        return acl_fail("%s runs %s convolutions only, the shape is %s", algorithm,
                        s->transposed ? "ordinary" : "transposed",
                        s->transposed ? "transposed" : "ordinary");
    return (*algo)->check(*algo, s, d, *uk);
}

int acl_conv_check(const acl_conv_shape *s, const char *algorithm, const char *ukernel)
{
    conv_dims d;
    const conv_algo *algo;
    const acl_ukernel *uk;
    return resolve(s, algorithm, ukernel, &d, &algo, &uk);
}

static int conv_create(const acl_conv_shape *s, const char *algorithm, const char *ukernel,
                       const float *weight, const float *bias, int own_scratch, acl_conv **out)
{
    if (!out) return acl_fail("acl_conv_create needs somewhere to store the result");
    *out = NULL;
    conv_dims d;
    const conv_algo *algo;
    const acl_ukernel *uk;
    if (resolve(s, algorithm, ukernel, &d, &algo, &uk) != 0) return -1;
    if (!weight) return acl_fail("no weights given");
    acl_conv *conv = calloc(1, sizeof *conv);
    if (!conv) return acl_fail("out of memory creating a convolution");
    conv->s = *s;
    conv->d = d;
    conv->algo = algo;
    conv->uk = uk;
    conv->bias = acl_alloc((size_t)s->oc * sizeof(float));
    if (!conv->bias) {
        acl_conv_destroy(conv);
        return -1;
    }
    if (bias) memcpy(conv->bias, bias, (size_t)s->oc * sizeof(float));
    else memset(conv->bias, 0, (size_t)s->oc * sizeof(float));
    if (algo->create(conv, weight) != 0 ||
        (own_scratch && conv->scratch_bytes &&
         !(conv->own_scratch = acl_alloc(conv->scratch_bytes)))) {
        acl_conv_destroy(conv);
        return -1;
    }
    *out = conv;
    return 0;
}

int acl_conv_create(const acl_conv_shape *s, const char *algorithm, const char *ukernel,
                    const float *weight, const float *bias, acl_conv **out)
{
    return conv_create(s, algorithm, ukernel, weight, bias, 1, out);
}

int acl_conv_create_borrowing(const acl_conv_shape *s, const char *algorithm, const char *ukernel,
                              const float *weight, const float *bias, acl_conv **out)
{
    return conv_create(s, algorithm, ukernel, weight, bias, 0, out);
}

int conv_read_nchw(acl_conv *conv)
{
    if (!conv->algo->reads_nchw)
        return acl_fail("%s reads an NHWC input only, not NCHW", conv->algo->name);
    conv->x_nchw = 1;
    return 0;
}

size_t acl_conv_scratch_bytes(const acl_conv *conv) { return conv ? conv->scratch_bytes : 0; }

int acl_conv_run(acl_conv *conv, const acl_exec *ex, const float *input, const float *residual,
                 float *output, acl_stage_times *times)
{
    if (conv && conv->scratch_bytes && !conv->own_scratch)
        return acl_fail("this convolution was created borrowing its scratch: run it with "
                        "acl_conv_run_scratch");
    return acl_conv_run_scratch(conv, ex, input, residual, output, conv ? conv->own_scratch : NULL,
                                times);
}

int acl_conv_run_scratch(acl_conv *conv, const acl_exec *ex, const float *input,
                         const float *residual, float *output, void *scratch,
                         acl_stage_times *times)
{
    double start = acl_now_ms();
    if (!conv) return acl_fail("no convolution given");
    if (acl_exec_check(ex) != 0) return -1;
    if (!input || !output) return acl_fail("acl_conv_run needs an input and an output");
    if (conv->scratch_bytes && !scratch)
        return acl_fail("the convolution needs %zu bytes of scratch and none was given",
                        conv->scratch_bytes);
    if ((uintptr_t)scratch % ACL_ALIGN)
        return acl_fail("the scratch must be aligned to %d bytes", ACL_ALIGN);
    if (conv->s.has_residual && !residual)
        return acl_fail("the shape has has_residual=1 but no residual was given");
    if (!conv->s.has_residual && residual)
        return acl_fail("a residual was given but the shape has has_residual=0");
    conv_io io = {input, residual, output, scratch};
    acl_stage_times t = {0};
    if (conv->algo->run(conv, ex, &io, &t) != 0) return -1;
    t.total_ms = acl_now_ms() - start;
    if (times) *times = t;
    return 0;
}

void acl_conv_destroy(acl_conv *conv)
{
    if (!conv) return;
    if (conv->impl) conv->algo->destroy(conv);
    acl_free(conv->own_scratch);
    acl_free(conv->bias);
    free(conv);
}
