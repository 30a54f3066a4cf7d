#include "schema_decode.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

static int keep(schema_buffers *b, void *p)
{
    if (b->count == (int)(sizeof b->items / sizeof b->items[0])) {
        free(p);
        return request_fail("too many array fields in one request");
    }
    b->items[b->count++] = p;
    return 0;
}

/* An INTS field: any number of integers, copied into a new buffer; null is
 * none, as for FLOATS (an int8 convolution's absent bias). */
static int decode_ints(const json_value *object, const acl_field_info *f, char *at,
                       schema_buffers *buffers)
{
    const json_value *given = json_get(object, f->name);
    if (given && given->type == JSON_NULL) return 0;
    const json_value *list = NULL;
    if (request_member(object, f->name, OPTIONAL, JSON_ARRAY, &list)) return -1;
    if (!list) return 0;
    if (list->array.count > INT_MAX / 2)
        return request_fail("field \"%s\" holds too many integers", f->name);
    int count = (int)list->array.count;
    int *values = malloc(sizeof *values * (size_t)(count ? count : 1));
    if (!values) return request_fail("out of memory for field \"%s\"", f->name);
    /* Negative values are the engine's to reject, with what they mean. */
    if (keep(buffers, values) ||
        request_ints(object, f->name, OPTIONAL, INT_MIN + 1LL, values, count, &count))
        return -1;
    *(const int **)at = values;
    *(int *)(at + sizeof(int *)) = count;
    return 0;
}

static int decode_floats(const json_value *object, const acl_field_info *f, char *at,
                         schema_buffers *buffers)
{
    float *values = NULL;
    size_t count = 0;
    if (request_floats(object, f->name, OPTIONAL, SIZE_MAX, &values, &count) ||
        (values && keep(buffers, values)))
        return -1;
    *(const float **)at = values;
    *(size_t *)(at + sizeof(float *)) = count;
    return 0;
}

static int decode_field(const json_value *object, const acl_field_info *f, char *at,
                        schema_buffers *buffers)
{
    const json_value *v = json_get(object, f->name);
    if (!v && f->required) return request_fail("missing field \"%s\"", f->name);
    switch (f->kind) {
    case ACL_FIELD_INT: {
        int x = (int)f->dflt;
        if (request_int(object, f->name, OPTIONAL, f->min, &x)) return -1;
        *(int *)at = x;
        return 0;
    }
    case ACL_FIELD_FLOAT: {
        double x = f->dflt;
        if (request_double(object, f->name, OPTIONAL, &x)) return -1;
        *(float *)at = (float)x;
        return 0;
    }
    case ACL_FIELD_BOOL:
        *(int *)at = (int)f->dflt;
        return request_bool(object, f->name, OPTIONAL, (int *)at);
    case ACL_FIELD_ENUM:
        *(int *)at = (int)f->dflt;
        return request_enum(object, f->name, OPTIONAL, f->names, (int *)at);
    case ACL_FIELD_STRING: return request_string(object, f->name, OPTIONAL, 1, (const char **)at);
    case ACL_FIELD_INTS: return decode_ints(object, f, at, buffers);
    case ACL_FIELD_FLOATS: return decode_floats(object, f, at, buffers);
    case ACL_FIELD_CONV_SHAPE: {
        int n;
        const acl_field_info *shape = acl_conv_shape_fields(&n);
        const json_value *sub = NULL;
        if (request_member(object, f->name, REQUIRED, JSON_OBJECT, &sub)) return -1;
        return schema_decode(sub, f->name, shape, n, sizeof(acl_conv_shape), at, buffers);
    }
    }
    return request_fail("field \"%s\" has an unknown kind %d", f->name, f->kind);
}

int schema_decode(const json_value *object, const char *where, const acl_field_info *fields,
                  int nfields, size_t size, void *out, schema_buffers *buffers)
{
    const char *names[64];
    if (nfields >= (int)(sizeof names / sizeof names[0]))
        return request_fail("%s has more fields than the launcher reads", where);
    for (int j = 0; j < nfields; j++) names[j] = fields[j].name;
    names[nfields] = NULL;
    memset(out, 0, size);
    if (request_check_fields(object, where, names)) return -1;
    for (int j = 0; j < nfields; j++)
        if (decode_field(object, &fields[j], (char *)out + fields[j].offset, buffers)) return -1;
    return 0;
}

void schema_buffers_free(schema_buffers *buffers)
{
    for (int i = 0; i < buffers->count; i++) free(buffers->items[i]);
    buffers->count = 0;
}
