#define _GNU_SOURCE
#include "graph_cmd.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "aclgraph.h"
#include "base64.h"
#include "clock.h"
#include "request.h"

/* Offsets and sizes travel as JSON numbers: integers a double holds exactly. */
#define MAX_JSON_INT (1LL << 53)
#define MAX_CORES 1024

static acl_graph *graph;
static size_t graph_floats;

void graph_clear(void)
{
    if (graph) acl_graph_destroy(graph);
    graph = NULL;
    graph_floats = 0;
}

/* Puts `where: ` in front of the current error. */
static int fail_in(const char *where)
{
    char inner[512];
    snprintf(inner, sizeof inner, "%s", request_error());
    return request_fail("%s: %s", where, inner);
}

static int need_graph(void)
{
    return graph ? 0 : request_fail("no graph: send graph_create first");
}

/* An array of integers >= min: exactly `cap` of them when count is NULL, else
 * at most `cap` (their number into *count). */
static int read_ints(const json_value *object, const char *key, presence p, long long min,
                     int *out, int cap, int *count)
{
    const json_value *list = NULL;
    if (request_member(object, key, p, JSON_ARRAY, &list)) return -1;
    if (!list) return 0;
    size_t n = list->array.count;
    if (count ? n > (size_t)cap : n != (size_t)cap)
        return request_fail("field \"%s\" must hold %s%d integers, got %zu", key,
                            count ? "at most " : "", cap, n);
    for (size_t i = 0; i < n; i++) {
        const json_value *v = &list->array.items[i];
        if (v->type != JSON_NUMBER || v->number != floor(v->number) || v->number < (double)min ||
            v->number > INT_MAX)
            return request_fail("field \"%s\" must hold integers in [%lld, %d]; item %zu does not",
                                key, min, INT_MAX, i);
        out[i] = (int)v->number;
    }
    if (count) *count = (int)n;
    return 0;
}

/* One of names[0..n) into *out, its index. */
static int read_name(const json_value *object, const char *key, const char *const names[], int n,
                     int *out)
{
    const char *name = NULL;
    if (request_string(object, key, REQUIRED, 0, &name)) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) {
            *out = i;
            return 0;
        }
    char known[256] = "";
    for (int i = 0; i < n; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 names[i]);
    return request_fail("field \"%s\" must be one of %s; got \"%s\"", key, known, name);
}

static int read_tensor_object(const json_value *v, acl_tensor *t)
{
    static const char *const fields[] = {"offset", "dims", NULL};
    long long offset = 0;
    *t = (acl_tensor){0};
    /* Dims below 1 and regions outside the arena are the engine's to reject. */
    if (request_check_fields(v, "the tensor", fields) ||
        request_integer(v, "offset", REQUIRED, 0, MAX_JSON_INT, &offset) ||
        read_ints(v, "dims", REQUIRED, 0, t->dims, ACL_MAX_RANK, &t->rank))
        return -1;
    t->offset = (size_t)offset;
    return 0;
}

/* A tensor {"offset", "dims"}; an OPTIONAL one may be absent or null (*given = 0). */
static int read_tensor(const json_value *object, const char *key, presence p, acl_tensor *t,
                       int *given)
{
    const json_value *v = json_get(object, key);
    if (given) *given = v && v->type != JSON_NULL;
    if (p == OPTIONAL && (!v || v->type == JSON_NULL)) return 0;
    if (request_member(object, key, p, JSON_OBJECT, &v)) return -1;
    if (read_tensor_object(v, t)) return fail_in(key);
    return 0;
}

/* Base64 float32 into a new buffer: exactly `expected` floats, or any number
 * (into *n) when expected is SIZE_MAX.  With OPTIONAL, absent or null gives NULL. */
static int read_floats(const json_value *object, const char *key, presence p, size_t expected,
                       float **out, size_t *n)
{
    const json_value *v = json_get(object, key);
    *out = NULL;
    if (p == OPTIONAL && (!v || v->type == JSON_NULL)) return 0;
    if (request_member(object, key, REQUIRED, JSON_STRING, &v)) return -1;
    long long bytes = base64_decoded_len(v->string.chars, v->string.len);
    if (bytes < 0 || bytes % sizeof(float))
        return request_fail("field \"%s\" is not base64 of float32 (its length is wrong)", key);
    size_t floats = (size_t)bytes / sizeof(float);
    if (expected != SIZE_MAX && floats != expected)
        return request_fail("field \"%s\" must hold %zu floats, got %zu", key, expected, floats);
    float *x = alloc_floats(floats);
    if (!x) return request_fail("out of memory for field \"%s\" (%zu floats)", key, floats);
    if (base64_decode(v->string.chars, v->string.len, x)) {
        free(x);
        return request_fail("field \"%s\": invalid base64 character", key);
    }
    *out = x;
    if (n) *n = floats;
    return 0;
}

/* An acl_exec from "core_weights" and "workloads" in `object`; weights holds MAX_CORES. */
static int read_exec(const json_value *object, int *weights, acl_exec *ex)
{
    int ncores = 0, workloads = 1;
    if (read_ints(object, "core_weights", REQUIRED, INT_MIN + 1LL, weights, MAX_CORES, &ncores) ||
        request_int(object, "workloads", REQUIRED, 1, &workloads))
        return -1;
    if (ncores == 0) return request_fail("field \"core_weights\" must not be empty");
    *ex = (acl_exec){.ncores = ncores, .weights = weights, .workloads = workloads};
    return 0;
}

static int engine_rc(int rc)
{
    return rc ? request_fail("%s", acl_last_error()) : 0;
}

/* ---- graph_create, graph_write ---------------------------------------------------- */

int graph_create_command(task *t, const json_value *request, json_writer *w)
{
    static const char *const fields[] = {"cmd", "arena_floats", "core_weights", "workloads", NULL};
    static int weights[MAX_CORES];
    long long floats = 0;
    acl_exec ex;
    graph_clear();  /* first, so the old arena's memory is free for the new one */
    if (request_check_fields(request, "graph_create", fields) ||
        request_integer(request, "arena_floats", REQUIRED, 1, MAX_JSON_INT, &floats) ||
        read_exec(request, weights, &ex))
        return fail_in("graph_create");
    if ((unsigned long long)floats > SIZE_MAX / sizeof(float))
        return request_fail("graph_create: field \"arena_floats\" is too large for this machine");
    if (engine_rc(acl_graph_create((size_t)floats, &ex, &graph))) return fail_in("graph_create");
    graph_floats = (size_t)floats;
    return 0;
}

/* n floats at offset lie inside the arena. */
static int check_region(long long offset, size_t n)
{
    if ((unsigned long long)offset > graph_floats || n > graph_floats - (size_t)offset)
        return request_fail("floats [%lld, %lld) lie outside the arena of %zu floats", offset,
                            offset + (long long)n, graph_floats);
    return 0;
}

int graph_write_command(task *t, const json_value *request, json_writer *w)
{
    static const char *const fields[] = {"cmd", "offset", "data", NULL};
    long long offset = 0;
    float *data = NULL;
    size_t n = 0;
    int rc = request_check_fields(request, "graph_write", fields) || need_graph() ||
             request_integer(request, "offset", REQUIRED, 0, MAX_JSON_INT, &offset) ||
             read_floats(request, "data", REQUIRED, SIZE_MAX, &data, &n) ||
             check_region(offset, n);
    if (rc == 0) memcpy(acl_graph_arena(graph) + offset, data, n * sizeof(float));
    free(data);
    return rc ? fail_in("graph_write") : 0;
}

/* ---- graph_op: one operation per kind, its fields named as in acltuner.engine.graph --- */

#define TENSOR_FIELDS "cmd", "kind", "x", "out"

static int op_conv(const json_value *r)
{
    static const char *const fields[] = {TENSOR_FIELDS, "shape", "config", "weight", "bias",
                                         "residual", NULL};
    static const char *const config_fields[] = {"algorithm", "ukernel", "core_weights",
                                                "workloads", NULL};
    static int weights[MAX_CORES];
    const json_value *shape_json = NULL, *config = NULL;
    acl_conv_shape s;
    const char *algorithm = NULL, *ukernel = NULL;
    acl_exec ex;
    acl_tensor x, residual, out;
    int has_residual = 0;
    float *weight = NULL, *bias = NULL;
    if (request_check_fields(r, "graph_op conv", fields) ||
        request_member(r, "shape", REQUIRED, JSON_OBJECT, &shape_json) ||
        parse_conv_shape(shape_json, &s) ||
        request_member(r, "config", REQUIRED, JSON_OBJECT, &config) ||
        request_check_fields(config, "config", config_fields) ||
        request_string(config, "algorithm", REQUIRED, 0, &algorithm) ||
        request_string(config, "ukernel", OPTIONAL, 1, &ukernel) ||
        read_exec(config, weights, &ex) ||
        read_tensor(r, "x", REQUIRED, &x, NULL) ||
        read_tensor(r, "residual", OPTIONAL, &residual, &has_residual) ||
        read_tensor(r, "out", REQUIRED, &out, NULL))
        return -1;
    size_t factors[] = {(size_t)s.oc, (size_t)(s.c / s.group), (size_t)s.kh, (size_t)s.kw};
    size_t weight_floats = 1;
    for (int i = 0; i < 4; i++)
        if (__builtin_mul_overflow(weight_floats, factors[i], &weight_floats))
            return request_fail("the weight would hold more floats than this machine can address");
    int rc = read_floats(r, "weight", REQUIRED, weight_floats, &weight, NULL) ||
             read_floats(r, "bias", OPTIONAL, (size_t)s.oc, &bias, NULL) ||
             engine_rc(acl_graph_conv(graph, &s, algorithm, ukernel, &ex, weight, bias, &x,
                                      has_residual ? &residual : NULL, &out));
    free(weight);
    free(bias);
    return rc ? -1 : 0;
}

static int op_unary(const json_value *r)
{
    static const char *const fields[] = {TENSOR_FIELDS, "op", "a", "b", NULL};
    static const char *const ops[] = {
        [ACL_UNARY_RELU] = "relu", [ACL_UNARY_CLIP] = "clip", [ACL_UNARY_LEAKY_RELU] = "leaky_relu",
        [ACL_UNARY_SIGMOID] = "sigmoid", [ACL_UNARY_HARD_SIGMOID] = "hard_sigmoid",
        [ACL_UNARY_HARD_SWISH] = "hard_swish", [ACL_UNARY_COPY] = "copy"};
    int op = 0;
    double a = 0, b = 0;
    acl_tensor x, out;
    if (request_check_fields(r, "graph_op unary", fields) ||
        read_name(r, "op", ops, sizeof ops / sizeof ops[0], &op) ||
        request_double(r, "a", OPTIONAL, &a) || request_double(r, "b", OPTIONAL, &b) ||
        read_tensor(r, "x", REQUIRED, &x, NULL) || read_tensor(r, "out", REQUIRED, &out, NULL))
        return -1;
    return engine_rc(acl_graph_unary(graph, op, (float)a, (float)b, &x, &out));
}

static int op_binary(const json_value *r)
{
    static const char *const fields[] = {"cmd", "kind", "op", "a", "b", "out", NULL};
    static const char *const ops[] = {[ACL_BINARY_ADD] = "add", [ACL_BINARY_MUL] = "mul",
                                      [ACL_BINARY_SUB] = "sub", [ACL_BINARY_DIV] = "div"};
    int op = 0;
    acl_tensor a, b, out;
    if (request_check_fields(r, "graph_op binary", fields) ||
        read_name(r, "op", ops, sizeof ops / sizeof ops[0], &op) ||
        read_tensor(r, "a", REQUIRED, &a, NULL) || read_tensor(r, "b", REQUIRED, &b, NULL) ||
        read_tensor(r, "out", REQUIRED, &out, NULL))
        return -1;
    return engine_rc(acl_graph_binary(graph, op, &a, &b, &out));
}

static int op_pool(const json_value *r)
{
    static const char *const fields[] = {TENSOR_FIELDS, "op", "kernel", "strides", "dilations",
                                         "pads", "count_include_pad", NULL};
    static const char *const ops[] = {[ACL_POOL_MAX] = "max", [ACL_POOL_AVERAGE] = "average"};
    int op = 0, kernel[2], strides[2] = {1, 1}, dilations[2] = {1, 1}, pads[4] = {0};
    int count_include_pad = 0;
    acl_tensor x, out;
    if (request_check_fields(r, "graph_op pool", fields) ||
        read_name(r, "op", ops, sizeof ops / sizeof ops[0], &op) ||
        read_ints(r, "kernel", REQUIRED, 1, kernel, 2, NULL) ||
        read_ints(r, "strides", OPTIONAL, 1, strides, 2, NULL) ||
        read_ints(r, "dilations", OPTIONAL, 1, dilations, 2, NULL) ||
        read_ints(r, "pads", OPTIONAL, 0, pads, 4, NULL) ||
        request_bool(r, "count_include_pad", OPTIONAL, &count_include_pad) ||
        read_tensor(r, "x", REQUIRED, &x, NULL) || read_tensor(r, "out", REQUIRED, &out, NULL))
        return -1;
    return engine_rc(acl_graph_pool(graph, op, kernel[0], kernel[1], strides[0], strides[1],
                                    dilations[0], dilations[1], pads, count_include_pad, &x, &out));
}

/* The operations whose only arguments are x and out. */
static int op_x_out(const json_value *r, const char *where,
                    int (*add)(acl_graph *, const acl_tensor *, const acl_tensor *))
{
    static const char *const fields[] = {TENSOR_FIELDS, NULL};
    acl_tensor x, out;
    if (request_check_fields(r, where, fields) || read_tensor(r, "x", REQUIRED, &x, NULL) ||
        read_tensor(r, "out", REQUIRED, &out, NULL))
        return -1;
    return engine_rc(add(graph, &x, &out));
}

static int op_global_average_pool(const json_value *r)
{
    return op_x_out(r, "graph_op global_average_pool", acl_graph_global_average_pool);
}

static int op_softmax(const json_value *r)
{
    return op_x_out(r, "graph_op softmax", acl_graph_softmax);
}

static int op_concat(const json_value *r)
{
    static const char *const fields[] = {"cmd", "kind", "axis", "ins", "out", NULL};
    long long axis = 0;
    const json_value *list = NULL;
    acl_tensor out;
    if (request_check_fields(r, "graph_op concat", fields) ||
        request_integer(r, "axis", REQUIRED, -ACL_MAX_RANK, ACL_MAX_RANK, &axis) ||
        request_member(r, "ins", REQUIRED, JSON_ARRAY, &list) ||
        read_tensor(r, "out", REQUIRED, &out, NULL))
        return -1;
    size_t n = list->array.count;
    if (n == 0 || n > INT_MAX) return request_fail("field \"ins\" must hold 1 or more tensors");
    acl_tensor *ins = malloc(n * sizeof *ins);
    if (!ins) return request_fail("out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = read_tensor_object(&list->array.items[i], &ins[i]);
        if (rc) {
            char where[32];
            snprintf(where, sizeof where, "ins[%zu]", i);
            fail_in(where);
        }
    }
    if (rc == 0) rc = engine_rc(acl_graph_concat(graph, (int)axis, (int)n, ins, &out));
    free(ins);
    return rc;
}

static int op_transpose(const json_value *r)
{
    static const char *const fields[] = {TENSOR_FIELDS, "perm", NULL};
    int perm[ACL_MAX_RANK];
    acl_tensor x, out;
    if (request_check_fields(r, "graph_op transpose", fields) ||
        read_tensor(r, "x", REQUIRED, &x, NULL) || read_tensor(r, "out", REQUIRED, &out, NULL) ||
        read_ints(r, "perm", REQUIRED, 0, perm, x.rank, NULL))
        return -1;
    return engine_rc(acl_graph_transpose(graph, perm, &x, &out));
}

static int op_matmul(const json_value *r)
{
    static const char *const fields[] = {TENSOR_FIELDS, "ukernel", "k", "n", "b", "bias", NULL};
    const char *ukernel = NULL;
    int k = 1, n = 1;
    float *b = NULL, *bias = NULL;
    acl_tensor x, out;
    if (request_check_fields(r, "graph_op matmul", fields) ||
        request_string(r, "ukernel", REQUIRED, 0, &ukernel) ||
        request_int(r, "k", REQUIRED, 1, &k) || request_int(r, "n", REQUIRED, 1, &n) ||
        read_tensor(r, "x", REQUIRED, &x, NULL) || read_tensor(r, "out", REQUIRED, &out, NULL))
        return -1;
    int rc = read_floats(r, "b", REQUIRED, (size_t)k * (size_t)n, &b, NULL) ||
             read_floats(r, "bias", OPTIONAL, (size_t)n, &bias, NULL) ||
             engine_rc(acl_graph_matmul(graph, ukernel, k, n, b, 0, bias, &x, &out));
    free(b);
    free(bias);
    return rc ? -1 : 0;
}

static int op_lrn(const json_value *r)
{
    static const char *const fields[] = {TENSOR_FIELDS, "size", "alpha", "beta", "bias", NULL};
    int size = 1;
    double alpha = 1e-4, beta = 0.75, bias = 1.0;  /* ONNX's defaults */
    acl_tensor x, out;
    if (request_check_fields(r, "graph_op lrn", fields) ||
        request_int(r, "size", REQUIRED, 1, &size) ||
        request_double(r, "alpha", OPTIONAL, &alpha) ||
        request_double(r, "beta", OPTIONAL, &beta) ||
        request_double(r, "bias", OPTIONAL, &bias) || read_tensor(r, "x", REQUIRED, &x, NULL) ||
        read_tensor(r, "out", REQUIRED, &out, NULL))
        return -1;
    return engine_rc(acl_graph_lrn(graph, size, (float)alpha, (float)beta, (float)bias, &x, &out));
}

static int op_pad(const json_value *r)
{
    static const char *const fields[] = {TENSOR_FIELDS, "mode", "pads", "value", NULL};
    static const char *const modes[] = {[ACL_PAD_CONSTANT] = "constant", [ACL_PAD_EDGE] = "edge",
                                        [ACL_PAD_REFLECT] = "reflect"};
    int mode = 0, pads[2 * ACL_MAX_RANK];
    double value = 0;
    acl_tensor x, out;
    if (request_check_fields(r, "graph_op pad", fields) ||
        read_name(r, "mode", modes, sizeof modes / sizeof modes[0], &mode) ||
        request_double(r, "value", OPTIONAL, &value) || read_tensor(r, "x", REQUIRED, &x, NULL) ||
        read_tensor(r, "out", REQUIRED, &out, NULL) ||
        read_ints(r, "pads", REQUIRED, INT_MIN + 1LL, pads, 2 * x.rank, NULL))
        return -1;
    return engine_rc(acl_graph_pad(graph, mode, (float)value, pads, &x, &out));
}

static const struct {
    const char *kind;
    int (*add)(const json_value *request);
} op_kinds[] = {
    {"conv", op_conv},       {"unary", op_unary},
    {"binary", op_binary},   {"pool", op_pool},
    {"global_average_pool", op_global_average_pool},
    {"concat", op_concat},   {"transpose", op_transpose},
    {"matmul", op_matmul},   {"softmax", op_softmax},
    {"lrn", op_lrn},         {"pad", op_pad},
};

int graph_op_command(task *t, const json_value *request, json_writer *w)
{
    const char *kind = NULL;
    if (need_graph() || request_string(request, "kind", REQUIRED, 0, &kind))
        return fail_in("graph_op");
    for (size_t i = 0; i < sizeof op_kinds / sizeof op_kinds[0]; i++)
        if (strcmp(op_kinds[i].kind, kind) == 0) {
            if (op_kinds[i].add(request)) {
                char where[64];
                snprintf(where, sizeof where, "graph_op %s", kind);
                return fail_in(where);
            }
            json_key(w, "nodes");
            json_int(w, acl_graph_node_count(graph));
            return 0;
        }
    return request_fail("graph_op: unknown kind \"%s\" (expected conv, unary, binary, pool, "
                        "global_average_pool, concat, transpose, matmul, softmax, lrn or pad)",
                        kind);
}

/* The nodes back in run order after they were added largest weights first
 * (acl_graph_order), so that the launcher's peak memory is that of the
 * weights plus the largest one, not twice the largest few. */
int graph_order_command(task *t, const json_value *request, json_writer *w)
{
    static const char *const fields[] = {"cmd", "order", NULL};
    (void)t;
    (void)w;
    if (need_graph() || request_check_fields(request, "graph_order", fields))
        return fail_in("graph_order");
    int n = acl_graph_node_count(graph);
    int *order = malloc(sizeof *order * (size_t)(n > 0 ? n : 1));
    if (!order) return request_fail("graph_order: out of memory");
    int rc = read_ints(request, "order", REQUIRED, 0, order, n, NULL) ||
             engine_rc(acl_graph_order(graph, order));
    free(order);
    return rc ? fail_in("graph_order") : 0;
}

/* ---- graph_run ---------------------------------------------------------------- */

typedef struct {
    size_t offset, floats;
    float *data;  /* inputs: what is copied in; outputs: what was copied out last */
} region;

typedef struct {
    region *items;
    size_t count;
} regions;

static void regions_free(regions *rs)
{
    for (size_t i = 0; i < rs->count; i++) free(rs->items[i].data);
    free(rs->items);
    *rs = (regions){0};
}

/* "inputs": [{"offset", "data"}] or "outputs": [{"offset", "floats"}]. */
static int read_regions(const json_value *request, const char *key, int inputs, regions *rs)
{
    static const char *const input_fields[] = {"offset", "data", NULL};
    static const char *const output_fields[] = {"offset", "floats", NULL};
    const json_value *list = NULL;
    if (request_member(request, key, OPTIONAL, JSON_ARRAY, &list)) return -1;
    if (!list || list->array.count == 0) return 0;
    rs->items = calloc(list->array.count, sizeof *rs->items);
    if (!rs->items) return request_fail("out of memory");
    rs->count = list->array.count;
    for (size_t i = 0; i < rs->count; i++) {
        const json_value *v = &list->array.items[i];
        region *r = &rs->items[i];
        long long offset = 0, floats = 0;
        char where[48];
        snprintf(where, sizeof where, "%s[%zu]", key, i);
        int rc = request_check_fields(v, where, inputs ? input_fields : output_fields) ||
                 request_integer(v, "offset", REQUIRED, 0, MAX_JSON_INT, &offset);
        if (rc == 0 && inputs)
            rc = read_floats(v, "data", REQUIRED, SIZE_MAX, &r->data, &r->floats);
        if (rc == 0 && !inputs) {
            rc = request_integer(v, "floats", REQUIRED, 1, MAX_JSON_INT, &floats);
            r->floats = (size_t)floats;
        }
        if (rc == 0) rc = check_region(offset, r->floats);
        if (rc == 0 && !inputs && !(r->data = alloc_floats(r->floats)))
            rc = request_fail("out of memory (%lld floats)", floats);
        if (rc) return fail_in(where);
        r->offset = (size_t)offset;
    }
    return 0;
}




/* One run as a user of the program sees it: inputs in, every node, outputs
 * out.  Returns its wall time in ms, or -1 on failure. */
static double run_once(const regions *in, regions *out, double *node_ms, double *copy_ms)
{
    float *arena = acl_graph_arena(graph);
    long long start = now_ns();
    for (size_t i = 0; i < in->count; i++)
        memcpy(arena + in->items[i].offset, in->items[i].data,
               in->items[i].floats * sizeof(float));
    long long ran = now_ns();
    if (acl_graph_run(graph, node_ms)) return request_fail("%s", acl_last_error());
    long long copied = now_ns();
    for (size_t i = 0; i < out->count; i++)
        memcpy(out->items[i].data, arena + out->items[i].offset,
               out->items[i].floats * sizeof(float));
    long long end = now_ns();
    *copy_ms = (double)((ran - start) + (end - copied)) / 1e6;
    return (double)(end - start) / 1e6;
}

static void write_answer(json_writer *w, double *times, double *node_ms, double *copy_ms,
                         int repeat, int nodes, const regions *out)
{
    json_key(w, "times_ms");
    json_array_begin(w);
    for (int i = 0; i < repeat; i++) json_number(w, times[i]);
    json_array_end(w);
    json_key(w, "copy_ms");
    json_number(w, median(copy_ms, (size_t)repeat));
    /* node_ms is [repeat][nodes]: each node's median over the runs. */
    double *column = times;  /* already written out, reused */
    json_key(w, "node_ms");
    json_array_begin(w);
    for (int j = 0; j < nodes; j++) {
        for (int i = 0; i < repeat; i++) column[i] = node_ms[(size_t)i * nodes + j];
        json_number(w, median(column, (size_t)repeat));
    }
    json_array_end(w);
    json_key(w, "outputs");
    json_array_begin(w);
    for (size_t i = 0; i < out->count; i++) {
        size_t bytes = out->items[i].floats * sizeof(float), len = base64_encoded_len(bytes);
        char *b64 = malloc(len);
        if (!b64) {
            w->out_of_memory = 1;
            break;
        }
        base64_encode(out->items[i].data, bytes, b64);
        json_string_n(w, b64, len);
        free(b64);
    }
    json_array_end(w);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    json_key(w, "peak_rss_kib");  /* Linux counts ru_maxrss in KiB */
    json_int(w, usage.ru_maxrss);
}

int graph_run_command(task *t, const json_value *request, json_writer *w)
{
    static const char *const fields[] = {"cmd", "inputs", "outputs", "warmup", "repeat", NULL};
    int warmup = 1, repeat = 10;
    regions in = {0}, out = {0};
    int rc = request_check_fields(request, "graph_run", fields) || need_graph() ||
             request_int(request, "warmup", OPTIONAL, 0, &warmup) ||
             request_int(request, "repeat", OPTIONAL, 1, &repeat) ||
             read_regions(request, "inputs", 1, &in) || read_regions(request, "outputs", 0, &out);
    int nodes = graph ? acl_graph_node_count(graph) : 0;
    size_t cells = (size_t)repeat * (size_t)(nodes ? nodes : 1);
    double *times = NULL, *copy_ms = NULL, *node_ms = NULL;
    if (rc == 0) {
        times = malloc((size_t)repeat * sizeof *times);
        copy_ms = malloc((size_t)repeat * sizeof *copy_ms);
        node_ms = malloc(cells * sizeof *node_ms);
        if (!times || !copy_ms || !node_ms) rc = request_fail("out of memory for %d runs", repeat);
    }
    for (int i = 0; rc == 0 && i < warmup + repeat; i++) {
        int timed = i >= warmup;
        size_t k = timed ? (size_t)(i - warmup) : 0;
        double ms = run_once(&in, &out, node_ms + k * (size_t)nodes, copy_ms + k);
        if (ms < 0) rc = -1;
        else if (timed) times[k] = ms;
    }
    if (rc == 0) write_answer(w, times, node_ms, copy_ms, repeat, nodes, &out);
    free(times);
    free(copy_ms);
    free(node_ms);
    regions_free(&in);
    regions_free(&out);
    return rc ? fail_in("graph_run") : 0;
}
