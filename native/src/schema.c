/* The schema lists of aclengine.h and aclgraph.h as data: field tables for
 * the engine's checks and the launcher's decoders, the operations' dispatch,
 * and acl_describe()'s JSON, from which the Python bindings build their
 * ctypes structures. */
#include <float.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclgraph.h"
#include "graph_impl.h"
#include "internal.h"

#define ENUM_NAME(constant, name) #name,
#define NAMES_OF_INT(names) NULL
#define NAMES_OF_FLOAT(names) NULL
#define NAMES_OF_BOOL(names) NULL
#define NAMES_OF_STRING(names) NULL
#define NAMES_OF_INTS(names) NULL
#define NAMES_OF_FLOATS(names) NULL
#define NAMES_OF_CONV_SHAPE(names) NULL
#define NAMES_OF_ENUM(names) ((const char *const[]){names(ENUM_NAME) NULL})

#define SHAPE_FIELD(kind, name, presence, min, dflt, names)                                  \
    {#name, ACL_FIELD_##kind, offsetof(acl_conv_shape, name), presence == REQUIRED, min, dflt, \
     NAMES_OF_##kind(names)},
enum { OPTIONAL, REQUIRED };
static const acl_field_info shape_fields[] = {ACL_CONV_SHAPE_FIELDS(SHAPE_FIELD)};
#define NSHAPE_FIELDS (int)(sizeof shape_fields / sizeof shape_fields[0])

const acl_field_info *acl_conv_shape_fields(int *count)
{
    *count = NSHAPE_FIELDS;
    return shape_fields;
}

#define OP_FIELD(S, kind, name, names) \
    {#name, ACL_FIELD_##kind, offsetof(S, name), 0, INT_MIN, 0, NAMES_OF_##kind(names)},
/* One table per operation; a leading entry keeps an attribute-less one non-empty. */
#define OP_FIELDS(CODE, name, min_in, max_in, ATTRS) \
    static const acl_field_info name##_fields[] = {{0}, ATTRS(OP_FIELD, acl_##name##_attrs)};
ACL_GRAPH_OPS(OP_FIELDS)

#define OP_INFO(CODE, name, min_in, max_in, ATTRS)                        \
    {#name, min_in, max_in, sizeof(acl_##name##_attrs),                   \
     (int)(sizeof name##_fields / sizeof name##_fields[0]) - 1, name##_fields + 1},
static const acl_op_info op_infos[] = {ACL_GRAPH_OPS(OP_INFO)};

typedef int (*op_add_fn)(acl_graph *g, const void *attrs, int nin, const acl_tensor *ins,
                         const acl_tensor *out);
#define OP_ADD(CODE, name, min_in, max_in, ATTRS)                                           \
    static int add_##name(acl_graph *g, const void *attrs, int nin, const acl_tensor *ins, \
                          const acl_tensor *out)                                           \
    {                                                                                      \
        return graph_op_##name(g, attrs, nin, ins, out);                                   \
    }
ACL_GRAPH_OPS(OP_ADD)
#define OP_ADD_ENTRY(CODE, name, min_in, max_in, ATTRS) add_##name,
static const op_add_fn op_adds[] = {ACL_GRAPH_OPS(OP_ADD_ENTRY)};

const acl_op_info *acl_graph_op_info(int op)
{
    return op >= 0 && op < ACL_OP_COUNT ? &op_infos[op] : NULL;
}

int acl_graph_op_find(const char *name)
{
    for (int i = 0; name && i < ACL_OP_COUNT; i++)
        if (strcmp(op_infos[i].name, name) == 0) return i;
    return -1;
}

int acl_graph_add(acl_graph *g, int op, const void *attrs, int nin, const acl_tensor *ins,
                  const acl_tensor *out)
{
    const acl_op_info *info = acl_graph_op_info(op);
    if (!g) return acl_fail("no program given");
    if (!info) return acl_fail("unknown operation %d (0 to %d)", op, ACL_OP_COUNT - 1);
    if (nin < info->min_inputs || (info->max_inputs && nin > info->max_inputs)) {
        if (info->max_inputs == info->min_inputs)
            return acl_fail("%s: takes %d input%s, got %d", info->name, info->min_inputs,
                            info->min_inputs == 1 ? "" : "s", nin);
        if (info->max_inputs)
            return acl_fail("%s: takes %d to %d inputs, got %d", info->name, info->min_inputs,
                            info->max_inputs, nin);
        return acl_fail("%s: takes %d or more inputs, got %d", info->name, info->min_inputs, nin);
    }
    if (!ins || !out) return acl_fail("%s: no %s given", info->name, ins ? "output" : "inputs");
    static const char zeros[64];  /* the attributes of an operation without any */
    if (!attrs && info->field_count) return acl_fail("%s: no attributes given", info->name);
    return op_adds[op](g, attrs ? attrs : zeros, nin, ins, out);
}

/* ---- acl_describe ------------------------------------------------------------ */

typedef struct {
    char *text;
    size_t len, cap;
    int failed;
} builder;

static void put(builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(builder *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = b->text ? vsnprintf(b->text + b->len, room, fmt, ap) : -2;
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? 2 * b->cap : 4096;
        char *grown = n == -1 ? NULL : realloc(b->text, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->text = grown;
        b->cap = cap;
    }
}

static const char *const kind_names[] = {
    [ACL_FIELD_INT] = "int",       [ACL_FIELD_FLOAT] = "float",           [ACL_FIELD_BOOL] = "bool",
    [ACL_FIELD_ENUM] = "enum",     [ACL_FIELD_STRING] = "string",         [ACL_FIELD_INTS] = "ints",
    [ACL_FIELD_FLOATS] = "floats", [ACL_FIELD_CONV_SHAPE] = "conv_shape",
};
#define NKINDS (int)(sizeof kind_names / sizeof kind_names[0])

static void put_fields(builder *b, const acl_field_info *fields, int n)
{
    put(b, "[");
    for (int i = 0; i < n; i++) {
        const acl_field_info *f = &fields[i];
        put(b,
            "%s{\"name\":\"%s\",\"kind\":\"%s\",\"offset\":%zu,\"required\":%s,\"min\":%d,"
            "\"default\":%.17g",
            i ? "," : "", f->name, kind_names[f->kind], f->offset, f->required ? "true" : "false",
            f->min, f->dflt);
        if (f->names) {
            put(b, ",\"names\":[");
            for (int j = 0; f->names[j]; j++) put(b, "%s\"%s\"", j ? "," : "", f->names[j]);
            put(b, "]");
        }
        put(b, "}");
    }
    put(b, "]");
}

#define MEASURE_KIND_INT "int"
#define MEASURE_KIND_DOUBLE "double"
#define MEASURE_KIND_BYTES "bytes"
#define MEASURE_OPTION(kind, name, dflt, min)                                                   \
    put(&b, "%s{\"name\":\"%s\",\"kind\":\"%s\",\"default\":%.17g,\"min\":%.17g}", sep, #name, \
        MEASURE_KIND_##kind, (double)(dflt), (double)(min));                                    \
    sep = ",";

static char *description;

static void describe_once(void)
{
    builder b = {0};
    put(&b, "{\"version\":\"%s\",\"isa\":\"%s\",\"field_kinds\":[", acl_version(), acl_isa());
    for (int i = 0; i < NKINDS; i++) put(&b, "%s\"%s\"", i ? "," : "", kind_names[i]);
    put(&b, "],\"conv_shape\":{\"size\":%zu,\"fields\":", sizeof(acl_conv_shape));
    put_fields(&b, shape_fields, NSHAPE_FIELDS);
    put(&b, "},\"ops\":[");
    for (int i = 0; i < ACL_OP_COUNT; i++) {
        const acl_op_info *op = &op_infos[i];
        put(&b, "%s{\"name\":\"%s\",\"code\":%d,\"inputs\":[%d,%d],\"size\":%zu,\"fields\":",
            i ? "," : "", op->name, i, op->min_inputs, op->max_inputs, op->attrs_size);
        put_fields(&b, op->fields, op->field_count);
        put(&b, "}");
    }
    put(&b, "],\"measure_options\":[");
    const char *sep = "";
    ACL_MEASURE_OPTIONS(MEASURE_OPTION)
    put(&b, "]}");
    if (b.failed) free(b.text);
    else description = b.text;
}

const char *acl_describe(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, describe_once);
    if (!description) acl_fail("out of memory describing the engine");
    return description;
}
