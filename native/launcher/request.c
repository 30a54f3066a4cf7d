#include "request.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char last_error[512];

int request_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return -1;
}

const char *request_error(void) { return last_error; }

int request_check_fields(const json_value *object, const char *where, const char *const allowed[])
{
    if (object->type != JSON_OBJECT)
        return request_fail("%s must be an object, got %s", where, json_type_name(object->type));
    for (size_t i = 0; i < object->object.count; i++) {
        const char *key = object->object.members[i].key;
        int known = 0;
        for (const char *const *a = allowed; *a && !known; a++) known = strcmp(*a, key) == 0;
        if (!known) return request_fail("unknown field \"%s\" in %s", key, where);
        for (size_t j = 0; j < i; j++)
            if (strcmp(object->object.members[j].key, key) == 0)
                return request_fail("field \"%s\" given twice in %s", key, where);
    }
    return 0;
}

int request_member(const json_value *object, const char *key, presence p, json_type type,
                   const json_value **out)
{
    const json_value *v = json_get(object, key);
    if (!v) {
        if (p == OPTIONAL) return 0;
        return request_fail("missing field \"%s\"", key);
    }
    if (v->type != type)
        return request_fail("field \"%s\" must be %s, got %s", key, json_type_name(type),
                            json_type_name(v->type));
    *out = v;
    return 0;
}

int request_integer(const json_value *object, const char *key, presence p, long long min,
                    long long max, long long *out)
{
    const json_value *v = NULL;
    if (request_member(object, key, p, JSON_NUMBER, &v)) return -1;
    if (!v) return 0;
    /* The comparisons with min and max are done in double, where a value just
     * past LLONG_MAX would otherwise wrap. */
    if (v->number != floor(v->number) || v->number < (double)min || v->number > (double)max)
        return request_fail("field \"%s\" must be an integer in [%lld, %lld], got %.17g", key, min,
                            max, v->number);
    *out = (long long)v->number;
    return 0;
}

int request_int(const json_value *object, const char *key, presence p, int min, int *out)
{
    long long value = *out;
    if (request_integer(object, key, p, min, INT_MAX, &value)) return -1;
    *out = (int)value;
    return 0;
}

int request_double(const json_value *object, const char *key, presence p, double *out)
{
    const json_value *v = NULL;
    if (request_member(object, key, p, JSON_NUMBER, &v)) return -1;
    if (v) *out = v->number;
    return 0;
}

int request_bool(const json_value *object, const char *key, presence p, int *out)
{
    const json_value *v = NULL;
    if (request_member(object, key, p, JSON_BOOL, &v)) return -1;
    if (v) *out = v->boolean;
    return 0;
}

int request_string(const json_value *object, const char *key, presence p, int nullable,
                   const char **out)
{
    const json_value *v = json_get(object, key);
    if (v && v->type == JSON_NULL && nullable) {
        *out = NULL;
        return 0;
    }
    if (request_member(object, key, p, JSON_STRING, &v)) return -1;
    if (v) *out = v->string.chars;
    return 0;
}
