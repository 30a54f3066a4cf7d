#define _GNU_SOURCE
#include "measure.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "clock.h"
#include "machine_state.h"
#include "repeat.h"
#include "request.h"

/* PROTOCOL.md: an output is correct when max|y - ref| / max|ref| <= 1e-4;
 * an fp16 kernel's when each |y - ref| <= 1e-4 max|ref| plus its own bound,
 * acl_fp16_error_bound(K) x the output's sum of magnitudes. */
#define CORRECT_REL_ERR 1e-4

#define DECLARE_INT(name) int name;
#define DECLARE_DOUBLE(name) double name;
#define DECLARE_BYTES(name) long long name;
#define DECLARE_OPTION(kind, name, dflt, min) DECLARE_##kind(name)
typedef struct {
    ACL_MEASURE_OPTIONS(DECLARE_OPTION)
} measure_options;

typedef struct {
    const char *algorithm;
    const char *ukernel;  /* NULL for direct algorithms */
    int core_weights[MAX_CORES];
    int ncores;
    int workloads;
    measure_options o;
    int return_output;
} measure_request;

/* Per-run times of the timed repeats. */
typedef struct {
    double *total, *pre, *gemm, *post;
    size_t count, cap;
} samples;

typedef struct {
    samples runs;
    machine_state before, after;
    double max_abs_err, max_rel_err;
    int correct;
    float *output;  /* the first run's output, the one checked */
} measurement;

#define OPTION_NAME(kind, name, dflt, min) #name,
static const char *const measure_fields[] = {
    "cmd", "config", ACL_MEASURE_OPTIONS(OPTION_NAME) "return_output", NULL};
static const char *const config_fields[] = {"algorithm", "ukernel", "core_weights", "workloads",
                                            NULL};

/* Larger evictions would take seconds per run; no cache comes close. */
#define MAX_EVICT_BYTES (1LL << 34)
/* The eviction GEMM's K: B is K x N with N = evict_bytes / 4 / K. */
#define EVICT_K 64
/* The input is read back one float per line; 64 bytes is the smallest line
 * of the ISAs we build for. */
#define LINE_FLOATS (64 / sizeof(float))

/* A double option below its minimum (or NaN) is refused; the other kinds
 * are checked as they are read. */
static int at_least(const char *name, double value, double min)
{
    return value >= min ? 0 : request_fail("field \"%s\" must be >= %g, got %g", name, min, value);
}

#define OPTION_DEFAULT(kind, name, dflt, min) .name = dflt,
#define DECODE_INT(name, min) request_int(request, #name, OPTIONAL, min, &r->o.name)
#define DECODE_DOUBLE(name, min) \
    (request_double(request, #name, OPTIONAL, &r->o.name) || at_least(#name, r->o.name, min))
#define DECODE_BYTES(name, min) \
    request_integer(request, #name, OPTIONAL, min, MAX_EVICT_BYTES, &r->o.name)
#define DECODE_OPTION(kind, name, dflt, min) DECODE_##kind(name, min) ||

static int parse_request(const json_value *request, measure_request *r)
{
    *r = (measure_request){.o = {ACL_MEASURE_OPTIONS(OPTION_DEFAULT)}};
    const json_value *config = NULL;
    return request_check_fields(request, "measure", measure_fields) ||
                   request_member(request, "config", REQUIRED, JSON_OBJECT, &config) ||
                   request_check_fields(config, "config", config_fields) ||
                   request_string(config, "algorithm", REQUIRED, 0, &r->algorithm) ||
                   request_string(config, "ukernel", OPTIONAL, 1, &r->ukernel) ||
                   request_exec(config, r->core_weights, &r->ncores, &r->workloads) ||
                   ACL_MEASURE_OPTIONS(DECODE_OPTION)
                       request_bool(request, "return_output", OPTIONAL, &r->return_output)
               ? -1
               : 0;
}

static int samples_push(samples *s, double total, const acl_stage_times *stages)
{
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        double **arrays[] = {&s->total, &s->pre, &s->gemm, &s->post};
        for (int i = 0; i < 4; i++) {
            double *grown = realloc(*arrays[i], cap * sizeof(double));
            if (!grown) return request_fail("out of memory");
            *arrays[i] = grown;
        }
        s->cap = cap;
    }
    s->total[s->count] = total;
    s->pre[s->count] = stages->pre_ms;
    s->gemm[s->count] = stages->gemm_ms;
    s->post[s->count] = stages->post_ms;
    s->count++;
    return 0;
}

static void samples_free(samples *s)
{
    free(s->total);
    free(s->pre);
    free(s->gemm);
    free(s->post);
}

/* Nanoseconds as an integer: a difference of two milliseconds-since-boot
 * doubles would carry rounding noise into every time. */

/* magnitude: the task's, for an fp16 kernel whose outputs sum K products;
 * NULL for an fp32 kernel. */
static void compare_with_reference(const float *y, const float *ref, const float *magnitude, int k,
                                   size_t n, measurement *m)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(ref[i]) > scale) scale = fabs(ref[i]);
    const double fp16_bound = magnitude ? acl_fp16_error_bound(k) : 0;
    m->correct = 1;
    for (size_t i = 0; i < n; i++) {
        double diff = y[i] == ref[i] ? 0 : fabs((double)y[i] - (double)ref[i]);
        if (isnan(diff)) diff = INFINITY;  /* a NaN must not compare as small */
        if (diff > worst) worst = diff;
        const double allowed =
            CORRECT_REL_ERR * scale + (magnitude ? fp16_bound * magnitude[i] : 0);
        if (!(diff <= allowed)) m->correct = 0;
    }
    m->max_abs_err = worst;
    m->max_rel_err = worst == 0 ? 0 : worst / scale;
}

static int ukernel_is_fp16(const char *name)
{
    acl_ukernel_info info;
    for (int i = 0; name && i < acl_ukernel_count(); i++)
        if (acl_ukernel_get(i, &info) == 0 && strcmp(info.name, name) == 0)
            return strcmp(info.precision, "fp16") == 0;
    return 0;
}

/* Cold-cache runs evict the caches with a one-row GEMM whose packed B is
 * evict_bytes, run on the config's own cores: each core reads its share of
 * B (half a flop per byte), which displaces the weights from the caches that
 * core uses, and its worker is still running when the timed run starts, as
 * between the layers of a model.  (Evicting from this thread would leave the
 * workers asleep, and waking them, on a busy machine a scheduler tick, would
 * be timed.) */
typedef struct {
    acl_gemm *gemm;
    acl_exec ex;  /* the config's cores, cut finely enough to share B out */
    int n;
    float *a, *c;
} evictor;

/* Where the activations read after an eviction go, so the reads stay. */
static volatile float activation_sink;

static int eviction_ukernel(acl_ukernel_info *out)
{
    for (int i = 0; i < acl_ukernel_count(); i++)
        if (acl_ukernel_get(i, out) == 0 && out->kmin < EVICT_K &&
            (out->kmax == 0 || out->kmax >= EVICT_K) && out->nr % out->n_multiple == 0)
            return 0;
    return request_fail("no micro-kernel can run the eviction GEMM");
}

static void evictor_free(evictor *e)
{
    acl_gemm_destroy(e->gemm);
    free(e->a);
    free(e->c);
}

static int evictor_create(const measure_request *r, evictor *e)
{
    *e = (evictor){0};
    if (r->o.evict_bytes == 0) return 0;
    acl_ukernel_info uk;
    if (eviction_ukernel(&uk)) return -1;
    /* At most 2^26 / nr panels (MAX_EVICT_BYTES). */
    long long columns = r->o.evict_bytes / (long long)(EVICT_K * sizeof(float));
    e->n = (int)((columns + uk.nr - 1) / uk.nr) * uk.nr;
    if (e->n == 0) e->n = uk.nr;
    int workloads = 4 * r->ncores > r->workloads ? 4 * r->ncores : r->workloads;
    e->ex = (acl_exec){.ncores = r->ncores, .weights = r->core_weights, .workloads = workloads};
    float *b = calloc((size_t)EVICT_K * e->n, sizeof *b);
    e->a = alloc_floats(EVICT_K);
    e->c = alloc_floats((size_t)e->n);
    int rc = !b || !e->a || !e->c ? request_fail("out of memory for the eviction GEMM") : 0;
    if (rc == 0) {
        memset(e->a, 0, EVICT_K * sizeof(float));
        if (acl_gemm_create(uk.name, EVICT_K, e->n, b, e->n, &e->gemm))
            rc = request_fail("eviction GEMM: %s", acl_last_error());
    }
    free(b);
    if (rc) evictor_free(e);
    return rc;
}

/* Evicts, then reads the input and residual back in, as in a model where the
 * layer before has just written them. */
static int evict_caches(const evictor *e, const task *t)
{
    /* Fails only for core weights the conv would reject the same way. */
    if (acl_gemm_run(e->gemm, &e->ex, 1, e->a, EVICT_K, e->c, e->n, NULL))
        return request_fail("%s", acl_last_error());
    float sum = 0;
    for (size_t i = 0; i < t->input_floats; i += LINE_FLOATS) sum += t->input[i];
    if (t->residual)
        for (size_t i = 0; i < t->output_floats; i += LINE_FLOATS) sum += t->residual[i];
    activation_sink = sum;
    return 0;
}

/* One run of the conv for repeat_runs: the first writes the output that is
 * checked, the others a second buffer; a timed run is evicted for first. */
typedef struct {
    task *t;
    acl_conv *conv;
    acl_exec ex;
    const evictor *e;
    measurement *m;
    float *out, *later_output;
} conv_runs;

static double run_conv(void *arg, int index)
{
    conv_runs *c = arg;
    acl_stage_times stages = {0};
    if (index >= 0 && c->e->gemm && evict_caches(c->e, c->t)) return -1;
    long long start = now_ns();
    int rc = acl_conv_run(c->conv, &c->ex, c->t->input, c->t->residual, c->out, &stages);
    double elapsed = (double)(now_ns() - start) / 1e6;
    if (rc) return request_fail("%s", acl_last_error());
    c->out = c->later_output;
    if (index >= 0 && samples_push(&c->m->runs, elapsed, &stages)) return -1;
    return elapsed;
}

static int run_repeats(task *t, acl_conv *conv, const measure_request *r, measurement *m)
{
    m->output = alloc_floats(t->output_floats);
    float *later_output = alloc_floats(t->output_floats);
    if (!m->output || !later_output) {
        free(later_output);
        return request_fail("out of memory for the outputs (%zu floats)", t->output_floats);
    }
    /* All-ones bits are a NaN: elements the first run never writes fail the
     * check.  Both buffers are touched before timing so no run pays for
     * first-touch page faults. */
    memset(m->output, 0xff, t->output_floats * sizeof(float));
    memset(later_output, 0, t->output_floats * sizeof(float));

    evictor e;
    if (evictor_create(r, &e)) {
        free(later_output);
        return -1;
    }
    conv_runs runs = {t,         conv,        {r->ncores, r->core_weights, r->workloads}, &e, m,
                      m->output, later_output};
    if (r->o.cooldown_ms > 0) {
        const long long ns = (long long)(r->o.cooldown_ms * 1e6);
        nanosleep(&(struct timespec){ns / 1000000000, ns % 1000000000}, NULL);
    }
    machine_state_read(r->core_weights, r->ncores, &m->before);
    const repeat_policy policy = {.warmup = r->o.warmup,
                                  .min_repeats = r->o.min_repeats,
                                  .max_repeats = r->o.max_repeats,
                                  .min_total_ms = r->o.min_repeat_ms,
                                  .ci_target = r->o.ci_target_pct / 100,
                                  .max_total_ms = r->o.max_repeat_ms};
    int rc = repeat_runs(&policy, run_conv, &runs) < 0 ? -1 : 0;
    machine_state_read(r->core_weights, r->ncores, &m->after);
    free(later_output);
    evictor_free(&e);
    return rc;
}

static int measure(task *t, const measure_request *r, measurement *m)
{
    acl_conv *conv = NULL;
    if (acl_conv_create(&t->shape, r->algorithm, r->ukernel, t->weight, t->bias, &conv))
        return request_fail("%s", acl_last_error());
    const float *ref = task_reference(t);
    const float *magnitude = NULL;
    if (ref && ukernel_is_fp16(r->ukernel) && !(magnitude = task_magnitude(t))) ref = NULL;
    int rc = ref ? run_repeats(t, conv, r, m) : -1;
    acl_conv_destroy(conv);
    const acl_conv_shape *s = &t->shape;
    if (rc == 0)
        compare_with_reference(m->output, ref, magnitude, s->c / s->group * s->kh * s->kw,
                               t->output_floats, m);
    return rc;
}

static int write_output(json_writer *w, const float *output, size_t floats)
{
    size_t bytes = floats * sizeof(float);
    char *b64 = malloc(base64_encoded_len(bytes));
    if (!b64) return request_fail("out of memory encoding the output");
    base64_encode(output, bytes, b64);
    json_key(w, "output");
    json_string_n(w, b64, base64_encoded_len(bytes));
    free(b64);
    return 0;
}

static int write_answer(json_writer *w, const task *t, const measure_request *r, measurement *m)
{
    samples *s = &m->runs;
    /* The spread, from a copy: median() and median_ci_rel() sort. */
    double *sorted = malloc(s->count * sizeof *sorted);
    if (!sorted) return request_fail("out of memory");
    memcpy(sorted, s->total, s->count * sizeof *sorted);
    const double ci = median_ci_rel(sorted, s->count);
    free(sorted);
    json_key(w, "ci_pct");
    if (ci < 0) json_null(w);
    else json_number(w, 100 * ci);
    json_key(w, "throttled");
    json_bool(w, machine_state_throttled(&m->before, &m->after));
    machine_state_write(w, "before", &m->before);
    machine_state_write(w, "after", &m->after);
    json_key(w, "times_ms");
    json_array_begin(w);
    for (size_t i = 0; i < s->count; i++) json_number(w, s->total[i]);
    json_array_end(w);
    /* median() sorts, so the times are written first, in run order. */
    double min_ms = s->total[0];
    for (size_t i = 1; i < s->count; i++) min_ms = fmin(min_ms, s->total[i]);
    json_key(w, "median_ms");
    json_number(w, median(s->total, s->count));
    json_key(w, "min_ms");
    json_number(w, min_ms);
    json_key(w, "stages");
    json_object_begin(w);
    json_key(w, "pre_ms");
    json_number(w, median(s->pre, s->count));
    json_key(w, "gemm_ms");
    json_number(w, median(s->gemm, s->count));
    json_key(w, "post_ms");
    json_number(w, median(s->post, s->count));
    json_object_end(w);
    json_key(w, "correct");
    json_bool(w, m->correct);
    json_key(w, "max_abs_err");
    json_number(w, m->max_abs_err);
    json_key(w, "max_rel_err");
    json_number(w, m->max_rel_err);
    return r->return_output ? write_output(w, m->output, t->output_floats) : 0;
}

/* A sysfs cache size ("48K", "2048K", "1M"); 0 when unreadable. */
static long long read_cache_size(int cpu, int index)
{
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu, index);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    long long value = 0;
    char unit = 0;
    int fields = fscanf(f, "%lld%c", &value, &unit);
    fclose(f);
    if (fields < 1 || value < 0) return 0;
    if (unit == 'K') return value << 10;
    if (unit == 'M') return value << 20;
    if (unit == 'G') return value << 30;
    return value;
}

long long measure_largest_cache_bytes(void)
{
    /* Every CPU: on big.LITTLE boards the clusters' caches differ. */
    long long largest = 0;
    for (int cpu = 0; cpu < acl_cpu_count(); cpu++)
        for (int index = 0; index < 16; index++) {
            long long size = read_cache_size(cpu, index);
            if (size > largest) largest = size;
        }
    return largest;
}

int measure_command(task *t, const json_value *request, json_writer *w)
{
    measure_request r;
    measurement m = {0};
    int rc = parse_request(request, &r);
    if (rc == 0 && !t->loaded) rc = request_fail("no task loaded: send a load request first");
    if (rc == 0) rc = measure(t, &r, &m);
    if (rc == 0) rc = write_answer(w, t, &r, &m);
    free(m.output);
    samples_free(&m.runs);
    return rc;
}
