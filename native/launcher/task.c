#define _GNU_SOURCE
#include "task.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "prng.h"
#include "request.h"
#include "schema_decode.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tensors travel as little-endian float32 and are decoded in place"
#endif

/* Far beyond any layer a board can run, and small enough that no size
 * computation below can overflow. */
#define MAX_TENSOR_FLOATS ((size_t)1 << 31)

/* The seeded streams of PROTOCOL.md, one per tensor. */
enum { STREAM_WEIGHT, STREAM_BIAS, STREAM_INPUT, STREAM_RESIDUAL };

static const char *const load_fields[] = {"cmd",  "shape", "seed",     "weight",
                                          "bias", "input", "residual", NULL};
float *alloc_floats(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n * sizeof(float) : 64) != 0) return NULL;
    return p;
}

int parse_conv_shape(const json_value *shape, acl_conv_shape *s)
{
    int n;
    const acl_field_info *fields = acl_conv_shape_fields(&n);
    schema_buffers none = {0};  /* a shape has no array fields */
    if (schema_decode(shape, "shape", fields, n, sizeof *s, s, &none)) return -1;
    if (s->c % s->group || s->oc % s->group)
        return request_fail("group %d must divide the input channels %d and output channels %d",
                            s->group, s->c, s->oc);
    return 0;
}

/* a * b * c * d floats, or -1 if that is more than MAX_TENSOR_FLOATS. */
static int tensor_floats(const char *name, size_t a, size_t b, size_t c, size_t d, size_t *out)
{
    size_t n = a;
    const size_t factors[] = {b, c, d};
    for (int i = 0; i < 3; i++) {
        if (factors[i] && n > MAX_TENSOR_FLOATS / factors[i])
            return request_fail("the %s tensor would hold more than %zu floats", name,
                                MAX_TENSOR_FLOATS);
        n *= factors[i];
    }
    *out = n;
    return 0;
}

/* Decodes tensor `name` from the request if given, or fills it from the seed. */
static int fill_tensor(const json_value *request, const char *name, unsigned stream, uint64_t seed,
                       size_t floats, float **out)
{
    const json_value *given = NULL;
    if (request_member(request, name, OPTIONAL, JSON_STRING, &given)) return -1;
    float *x = alloc_floats(floats);
    if (!x) return request_fail("out of memory for the %s tensor (%zu floats)", name, floats);
    *out = x;
    if (!given) {
        prng_fill_uniform(x, floats, seed, stream);
        return 0;
    }
    const char *b64 = given->string.chars;
    size_t len = given->string.len;
    long long bytes = base64_decoded_len(b64, len);
    if (bytes < 0) return request_fail("%s: not base64 (its length or padding is wrong)", name);
    if ((size_t)bytes != floats * sizeof(float))
        return request_fail("%s: expected %zu float32 (%zu bytes), got %lld bytes", name, floats,
                            floats * sizeof(float), bytes);
    if (base64_decode(b64, len, x)) return request_fail("%s: invalid base64 character", name);
    return 0;
}

static int load_into(task *t, const json_value *request)
{
    const json_value *shape = NULL;
    long long seed = 0;
    /* Seeds stay within the integers a JSON number (a double) holds exactly. */
    if (request_check_fields(request, "load", load_fields) ||
        request_member(request, "shape", REQUIRED, JSON_OBJECT, &shape) ||
        parse_conv_shape(shape, &t->shape) ||
        request_integer(request, "seed", OPTIONAL, 0, (1LL << 53), &seed))
        return -1;
    const acl_conv_shape *s = &t->shape;
    if (acl_conv_out_size(s, &t->oh, &t->ow) || t->oh < 1 || t->ow < 1)
        return request_fail("%s", acl_last_error());
    if (!s->has_residual && json_get(request, "residual"))
        return request_fail("a residual was given but the shape has has_residual false");
    if (tensor_floats("input", s->n, s->h, s->w, s->c, &t->input_floats) ||
        tensor_floats("weight", s->oc, s->c / s->group, s->kh, s->kw, &t->weight_floats) ||
        tensor_floats("output", s->n, t->oh, t->ow, s->oc, &t->output_floats))
        return -1;
    if (fill_tensor(request, "weight", STREAM_WEIGHT, seed, t->weight_floats, &t->weight) ||
        fill_tensor(request, "bias", STREAM_BIAS, seed, s->oc, &t->bias) ||
        fill_tensor(request, "input", STREAM_INPUT, seed, t->input_floats, &t->input))
        return -1;
    if (s->has_residual &&
        fill_tensor(request, "residual", STREAM_RESIDUAL, seed, t->output_floats, &t->residual))
        return -1;
    t->loaded = 1;
    return 0;
}

int task_load(task *t, const json_value *request)
{
    task_clear(t);
    if (load_into(t, request)) {
        task_clear(t);
        return -1;
    }
    return 0;
}

void task_clear(task *t)
{
    free(t->weight);
    free(t->bias);
    free(t->input);
    free(t->residual);
    free(t->reference);
    free(t->magnitude);
    *t = (task){0};
}

/* The reference runs once per task, on every CPU, since it is the slowest
 * algorithm and its output does not depend on the split. */
static int run_reference(const acl_conv_shape *shape, const float *weight, const float *bias,
                         const float *input, const float *residual, float *out)
{
    int ncpu = acl_cpu_count();
    int *weights = malloc((size_t)ncpu * sizeof *weights);
    if (!weights) return request_fail("out of memory");
    for (int i = 0; i < ncpu; i++) weights[i] = 1;
    acl_exec ex = {.ncores = ncpu, .weights = weights, .workloads = ncpu};
    acl_conv *conv = NULL;
    int rc = acl_conv_create(shape, "reference", NULL, weight, bias, &conv);
    if (rc == 0) rc = acl_conv_run(conv, &ex, input, residual, out, NULL);
    if (rc) request_fail("reference: %s", acl_last_error());
    if (conv) acl_conv_destroy(conv);
    free(weights);
    return rc;
}

/* The reference output into a new buffer; NULL with the error set. */
static float *reference_of(const task *t, const acl_conv_shape *shape, const float *weight,
                           const float *bias, const float *input, const float *residual)
{
    float *out = alloc_floats(t->output_floats);
    if (!out) {
        request_fail("out of memory for the reference output (%zu floats)", t->output_floats);
        return NULL;
    }
    if (run_reference(shape, weight, bias, input, residual, out)) {
        free(out);
        return NULL;
    }
    return out;
}

const float *task_reference(task *t)
{
    if (!t->reference)
        t->reference = reference_of(t, &t->shape, t->weight, t->bias, t->input, t->residual);
    return t->reference;
}

/* |v| in a new buffer (NULL for NULL v); *failed set when out of memory. */
static float *magnitudes(const float *v, size_t n, int *failed)
{
    if (!v) return NULL;
    float *a = alloc_floats(n);
    if (!a) {
        *failed = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) a[i] = fabsf(v[i]);
    return a;
}

const float *task_magnitude(task *t)
{
    if (t->magnitude) return t->magnitude;
    acl_conv_shape shape = t->shape;
    shape.act = ACL_ACT_NONE;
    int failed = 0;
    float *w = magnitudes(t->weight, t->weight_floats, &failed);
    float *b = magnitudes(t->bias, (size_t)shape.oc, &failed);
    float *x = magnitudes(t->input, t->input_floats, &failed);
    float *r = magnitudes(t->residual, t->output_floats, &failed);
    if (failed) request_fail("out of memory for the tensors' magnitudes");
    else t->magnitude = reference_of(t, &shape, w, b, x, r);
    free(w);
    free(b);
    free(x);
    free(r);
    return t->magnitude;
}

long long task_flops(const task *t)
{
    const acl_conv_shape *s = &t->shape;
    /* A transposed convolution's products are per input pixel. */
    const long long pixels = s->transposed ? (long long)s->h * s->w : (long long)t->oh * t->ow;
    return 2LL * s->n * pixels * s->oc * (s->c / s->group) * s->kh * s->kw;
}
