#include "request.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "task.h"

static char last_error[512];

int request_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    /* One line, whatever text from the request it quotes. */
    for (char *c = last_error; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return -1;
}

void request_error_clear(void) { last_error[0] = '\0'; }

const char *request_error(void)
{
    /* A failure that set no message is still answered with one. */
    return last_error[0] ? last_error : "the request failed without a message (a launcher bug)";
}

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

int request_fail_in(const char *where)
{
    char inner[sizeof last_error];
    snprintf(inner, sizeof inner, "%s", last_error);
    return request_fail("%s: %s", where, inner);
}

int request_ints(const json_value *object, const char *key, presence p, long long min, int *out,
                 int cap, int *count)
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

int request_enum(const json_value *object, const char *key, presence p, const char *const names[],
                 int *out)
{
    const char *name = NULL;
    if (request_string(object, key, p, 0, &name)) return -1;
    if (!name) return 0;
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) {
            *out = i;
            return 0;
        }
    char known[256] = "";
    for (int i = 0; names[i]; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 names[i]);
    return request_fail("field \"%s\" must be one of %s; got \"%s\"", key, known, name);
}

int request_floats(const json_value *object, const char *key, presence p, size_t expected,
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

int request_exec(const json_value *object, int *weights, int *ncores, int *workloads)
{
    /* Negative and all-zero weights are the engine's to reject. */
    if (request_ints(object, "core_weights", REQUIRED, INT_MIN + 1LL, weights, MAX_CORES, ncores) ||
        request_int(object, "workloads", REQUIRED, 1, workloads))
        return -1;
    if (*ncores == 0) return request_fail("field \"core_weights\" must not be empty");
    return 0;
}
