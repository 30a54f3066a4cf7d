#define _GNU_SOURCE
#include "graph_session.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "schema_decode.h"
#include "tensor_request.h"

void graph_session_clear(graph_session *s)
{
    if (s->graph) acl_graph_destroy(s->graph);
    *s = (graph_session){0};
}

int graph_session_require(const graph_session *s)
{
    return s->graph ? 0 : request_fail("no graph: send graph_create first");
}

static int engine_rc(int rc) { return rc ? request_fail("%s", acl_last_error()) : 0; }

int graph_create_command(graph_session *s, const json_value *request, json_writer *w)
{
    static const char *const fields[] = {"cmd", "arena_floats", "core_weights", "workloads", NULL};
    int weights[MAX_CORES], ncores = 0, workloads = 1;
    long long floats = 0;
    graph_session_clear(s);  /* first, so the old arena's memory is free for the new one */
    if (request_check_fields(request, "graph_create", fields) ||
        request_integer(request, "arena_floats", REQUIRED, 1, MAX_JSON_INT, &floats) ||
        request_exec(request, weights, &ncores, &workloads))
        return request_fail_in("graph_create");
    if ((unsigned long long)floats > SIZE_MAX / sizeof(float))
        return request_fail("graph_create: field \"arena_floats\" is too large for this machine");
    const acl_exec ex = {ncores, weights, workloads};
    if (engine_rc(acl_graph_create((size_t)floats, &ex, &s->graph)))
        return request_fail_in("graph_create");
    s->floats = (size_t)floats;
    return 0;
}

int graph_write_command(graph_session *s, const json_value *request, json_writer *w)
{
    static const char *const fields[] = {"cmd", "offset", "data", NULL};
    long long offset = 0;
    float *data = NULL;
    size_t n = 0;
    int rc = request_check_fields(request, "graph_write", fields) || graph_session_require(s) ||
             request_integer(request, "offset", REQUIRED, 0, MAX_JSON_INT, &offset) ||
             request_floats(request, "data", REQUIRED, SIZE_MAX, &data, &n) ||
             check_region(offset, n, s->floats);
    if (rc == 0) memcpy(acl_graph_arena(s->graph) + offset, data, n * sizeof(float));
    free(data);
    return rc ? request_fail_in("graph_write") : 0;
}

/* {"cmd": "graph_op", "kind", "attrs": {...}, "inputs": [tensor...], "out": tensor}:
 * the attributes are those of the kind's line in ACL_GRAPH_OPS. */
static int add_op(graph_session *s, const json_value *request, int op)
{
    static const char *const fields[] = {"cmd", "kind", "attrs", "inputs", "out", NULL};
    const acl_op_info *info = acl_graph_op_info(op);
    const json_value *attrs_json = NULL;
    tensor_list ins = {0};
    acl_tensor out;
    schema_buffers buffers = {0};
    void *attrs = calloc(1, info->attrs_size ? info->attrs_size : 1);
    if (!attrs) return request_fail("out of memory");
    int rc = request_check_fields(request, "graph_op", fields) ||
             request_member(request, "attrs", OPTIONAL, JSON_OBJECT, &attrs_json) ||
             (attrs_json && schema_decode(attrs_json, "attrs", info->fields, info->field_count,
                                          info->attrs_size, attrs, &buffers)) ||
             read_tensor_list(request, "inputs", &ins) ||
             read_tensor(request, "out", REQUIRED, &out, NULL) ||
             engine_rc(acl_graph_add(s->graph, op, attrs, (int)ins.count, ins.items, &out));
    schema_buffers_free(&buffers);
    free(ins.items);
    free(attrs);
    return rc ? -1 : 0;
}

int graph_op_command(graph_session *s, const json_value *request, json_writer *w)
{
    const char *kind = NULL;
    if (graph_session_require(s) || request_string(request, "kind", REQUIRED, 0, &kind))
        return request_fail_in("graph_op");
    const int op = acl_graph_op_find(kind);
    if (op < 0) {
        char known[512] = "";
        for (int i = 0; i < ACL_OP_COUNT; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                     acl_graph_op_info(i)->name);
        return request_fail("graph_op: unknown kind \"%s\" (expected one of %s)", kind, known);
    }
    if (add_op(s, request, op)) {
        char where[64];
        snprintf(where, sizeof where, "graph_op %s", kind);
        return request_fail_in(where);
    }
    json_key(w, "nodes");
    json_int(w, acl_graph_node_count(s->graph));
    return 0;
}

/* The nodes back in run order after they were added largest weights first
 * (acl_graph_order), so that the launcher's peak memory is that of the
 * weights plus the largest one, not twice the largest few. */
int graph_order_command(graph_session *s, const json_value *request, json_writer *w)
{
    static const char *const fields[] = {"cmd", "order", NULL};
    if (graph_session_require(s) || request_check_fields(request, "graph_order", fields))
        return request_fail_in("graph_order");
    int n = acl_graph_node_count(s->graph);
    int *order = malloc(sizeof *order * (size_t)(n > 0 ? n : 1));
    if (!order) return request_fail("graph_order: out of memory");
    int rc = request_ints(request, "order", REQUIRED, 0, order, n, NULL) ||
             engine_rc(acl_graph_order(s->graph, order));
    free(order);
    return rc ? request_fail_in("graph_order") : 0;
}
