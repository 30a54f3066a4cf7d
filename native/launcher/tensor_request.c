#include "tensor_request.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static int read_tensor_object(const json_value *v, acl_tensor *t)
{
    static const char *const fields[] = {"offset", "dims", NULL};
    long long offset = 0;
    *t = (acl_tensor){0};
    /* Dims below 1 and regions outside the arena are the engine's to reject. */
    if (request_check_fields(v, "the tensor", fields) ||
        request_integer(v, "offset", REQUIRED, 0, MAX_JSON_INT, &offset) ||
        request_ints(v, "dims", REQUIRED, 0, t->dims, ACL_MAX_RANK, &t->rank))
        return -1;
    t->offset = (size_t)offset;
    return 0;
}

int read_tensor(const json_value *object, const char *key, presence p, acl_tensor *t, int *given)
{
    const json_value *v = json_get(object, key);
    if (given) *given = v && v->type != JSON_NULL;
    if (p == OPTIONAL && (!v || v->type == JSON_NULL)) return 0;
    if (request_member(object, key, p, JSON_OBJECT, &v)) return -1;
    if (read_tensor_object(v, t)) return request_fail_in(key);
    return 0;
}

int read_tensor_list(const json_value *object, const char *key, tensor_list *out)
{
    const json_value *list = NULL;
    *out = (tensor_list){0};
    if (request_member(object, key, OPTIONAL, JSON_ARRAY, &list)) return -1;
    if (!list || list->array.count == 0) return 0;
    if (list->array.count > INT_MAX)
        return request_fail("field \"%s\" holds too many tensors", key);
    out->items = malloc(list->array.count * sizeof *out->items);
    if (!out->items) return request_fail("out of memory");
    out->count = list->array.count;
    for (size_t i = 0; i < out->count; i++)
        if (read_tensor_object(&list->array.items[i], &out->items[i])) {
            char where[48];
            snprintf(where, sizeof where, "%s[%zu]", key, i);
            return request_fail_in(where);
        }
    return 0;
}

int check_region(long long offset, size_t n, size_t floats)
{
    if ((unsigned long long)offset > floats || n > floats - (size_t)offset)
        return request_fail("floats [%lld, %lld) lie outside the arena of %zu floats", offset,
                            offset + (long long)n, floats);
    return 0;
}
