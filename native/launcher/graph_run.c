/* graph_run: the program timed as its user sees it, inputs copied in and
 * outputs out around every run, with each node's median time. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base64.h"
#include "clock.h"
#include "graph_session.h"
#include "repeat.h"
#include "task.h"
#include "tensor_request.h"

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
static int read_regions(const json_value *request, const char *key, int inputs, size_t arena,
                        regions *rs)
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
            rc = request_floats(v, "data", REQUIRED, SIZE_MAX, &r->data, &r->floats);
        if (rc == 0 && !inputs) {
            rc = request_integer(v, "floats", REQUIRED, 1, MAX_JSON_INT, &floats);
            r->floats = (size_t)floats;
        }
        if (rc == 0) rc = check_region(offset, r->floats, arena);
        if (rc == 0 && !inputs && !(r->data = alloc_floats(r->floats)))
            rc = request_fail("out of memory (%lld floats)", floats);
        if (rc) return request_fail_in(where);
        r->offset = (size_t)offset;
    }
    return 0;
}

typedef struct {
    acl_graph *graph;
    const regions *in;
    regions *out;
    int nodes;
    double *times, *node_ms, *copy_ms;  /* [repeat], [repeat][nodes], [repeat] */
} graph_runs;

/* One run as a user of the program sees it: inputs in, every node, outputs out. */
static double run_graph(void *arg, int index)
{
    graph_runs *r = arg;
    size_t k = index < 0 ? 0 : (size_t)index;
    float *arena = acl_graph_arena(r->graph);
    long long start = now_ns();
    for (size_t i = 0; i < r->in->count; i++)
        memcpy(arena + r->in->items[i].offset, r->in->items[i].data,
               r->in->items[i].floats * sizeof(float));
    long long ran = now_ns();
    if (acl_graph_run(r->graph, r->node_ms + k * (size_t)r->nodes))
        return request_fail("%s", acl_last_error());
    long long copied = now_ns();
    for (size_t i = 0; i < r->out->count; i++)
        memcpy(r->out->items[i].data, arena + r->out->items[i].offset,
               r->out->items[i].floats * sizeof(float));
    long long end = now_ns();
    double ms = (double)(end - start) / 1e6;
    if (index >= 0) {
        r->copy_ms[k] = (double)((ran - start) + (end - copied)) / 1e6;
        r->times[k] = ms;
    }
    return ms;
}

static void write_answer(json_writer *w, const graph_runs *r, int repeat)
{
    json_key(w, "times_ms");
    json_array_begin(w);
    for (int i = 0; i < repeat; i++) json_number(w, r->times[i]);
    json_array_end(w);
    json_key(w, "copy_ms");
    json_number(w, median(r->copy_ms, (size_t)repeat));
    /* node_ms is [repeat][nodes]: each node's median over the runs. */
    double *column = r->times;  /* already written out, reused */
    json_key(w, "node_ms");
    json_array_begin(w);
    for (int j = 0; j < r->nodes; j++) {
        for (int i = 0; i < repeat; i++) column[i] = r->node_ms[(size_t)i * r->nodes + j];
        json_number(w, median(column, (size_t)repeat));
    }
    json_array_end(w);
    json_key(w, "outputs");
    json_array_begin(w);
    for (size_t i = 0; i < r->out->count; i++) {
        size_t bytes = r->out->items[i].floats * sizeof(float), len = base64_encoded_len(bytes);
        char *b64 = malloc(len);
        if (!b64) {
            w->out_of_memory = 1;
            break;
        }
        base64_encode(r->out->items[i].data, bytes, b64);
        json_string_n(w, b64, len);
        free(b64);
    }
    json_array_end(w);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    json_key(w, "peak_rss_kib");  /* Linux counts ru_maxrss in KiB */
    json_int(w, usage.ru_maxrss);
}

int graph_run_command(graph_session *s, const json_value *request, json_writer *w)
{
    static const char *const fields[] = {"cmd",    "inputs",  "outputs", "warmup",
                                         "repeat", "balance", NULL};
    /* acl_balance's values, by name */
    static const char *const balances[] = {"strict", "adaptive", NULL};
    int warmup = 1, repeat = 10, balance = ACL_BALANCE_STRICT;
    regions in = {0}, out = {0};
    int rc = request_check_fields(request, "graph_run", fields) || graph_session_require(s) ||
             request_int(request, "warmup", OPTIONAL, 0, &warmup) ||
             request_int(request, "repeat", OPTIONAL, 1, &repeat) ||
             request_enum(request, "balance", OPTIONAL, balances, &balance) ||
             read_regions(request, "inputs", 1, s->floats, &in) ||
             read_regions(request, "outputs", 0, s->floats, &out);
    int nodes = s->graph ? acl_graph_node_count(s->graph) : 0;
    graph_runs runs = {.graph = s->graph, .in = &in, .out = &out, .nodes = nodes};
    if (rc == 0) {
        runs.times = malloc((size_t)repeat * sizeof *runs.times);
        runs.copy_ms = malloc((size_t)repeat * sizeof *runs.copy_ms);
        runs.node_ms = malloc((size_t)repeat * (size_t)(nodes ? nodes : 1) * sizeof *runs.node_ms);
        if (!runs.times || !runs.copy_ms || !runs.node_ms)
            rc = request_fail("out of memory for %d runs", repeat);
    }
    if (rc == 0) rc = acl_graph_set_balance(s->graph, (acl_balance)balance);
    const repeat_policy policy = {.warmup = warmup, .min_repeats = repeat, .max_repeats = repeat};
    if (rc == 0 && repeat_runs(&policy, run_graph, &runs) < 0) rc = -1;
    if (rc == 0) write_answer(w, &runs, repeat);
    free(runs.times);
    free(runs.copy_ms);
    free(runs.node_ms);
    regions_free(&in);
    regions_free(&out);
    return rc ? request_fail_in("graph_run") : 0;
}
