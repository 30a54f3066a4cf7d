#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Far deeper than any request nests; bounds the recursion so a line of
 * "[[[[..." cannot overflow the stack. */
#define MAX_DEPTH 64
/* Far more values than any request holds (tensors travel as base64 strings);
 * bounds the tree, 24 bytes a value, so that a line of "[1,1,1,..." costs
 * about its own size, not twelve times it. */
#define MAX_VALUES ((size_t)1 << 20)

typedef struct {
    const char *start, *p, *end;
    char *err;
    size_t err_size;
    int depth;
    size_t values;
} parser;

static int fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(parser *ps, const char *fmt, ...)
{
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    snprintf(ps->err, ps->err_size, "malformed JSON at byte %zu: %s", (size_t)(ps->p - ps->start),
             reason);
    return -1;
}

/* What the parser is looking at, for error messages. */
static const char *describe_next(const parser *ps, char *buf, size_t size)
{
    if (ps->p >= ps->end) return "end of input";
    unsigned char c = (unsigned char)*ps->p;
    if (c >= 0x20 && c < 0x7f) snprintf(buf, size, "'%c'", c);
    else snprintf(buf, size, "byte 0x%02x", c);
    return buf;
}

static int unexpected(parser *ps, const char *wanted)
{
    char buf[16];
    return fail(ps, "expected %s, found %s", wanted, describe_next(ps, buf, sizeof buf));
}

static void skip_whitespace(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int is_digit(const parser *ps) { return ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9'; }

/* Grows a dynamic array so that it holds at least count + 1 items. */
static int reserve_one(void **items, size_t *cap, size_t count, size_t item_size)
{
    if (count < *cap) return 0;
    size_t new_cap = *cap ? *cap * 2 : 4;
    void *grown = realloc(*items, new_cap * item_size);
    if (!grown) return -1;
    *items = grown;
    *cap = new_cap;
    return 0;
}

static int parse_value(parser *ps, json_value *out);

static int parse_literal(parser *ps, const char *word, json_value *out, json_type type, int boolean)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return unexpected(ps, "a value");
    ps->p += n;
    out->type = type;
    out->boolean = boolean;
    return 0;
}

static int parse_number(parser *ps, json_value *out)
{
    const char *begin = ps->p;
    if (ps->p < ps->end && *ps->p == '-') ps->p++;
    if (ps->p < ps->end && *ps->p == '0') {
        ps->p++;
    } else if (is_digit(ps)) {
        while (is_digit(ps)) ps->p++;
    } else {
        return unexpected(ps, "a digit");
    }
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (!is_digit(ps)) return unexpected(ps, "a digit after '.'");
        while (is_digit(ps)) ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
        if (!is_digit(ps)) return unexpected(ps, "a digit in the exponent");
        while (is_digit(ps)) ps->p++;
    }
    /* strtod needs a terminated copy: the text need not end after the number. */
    size_t n = (size_t)(ps->p - begin);
    char local[64];
    char *copy = n < sizeof local ? local : malloc(n + 1);
    if (!copy) return fail(ps, "out of memory");
    memcpy(copy, begin, n);
    copy[n] = '\0';
    out->type = JSON_NUMBER;
    out->number = strtod(copy, NULL);
    if (copy != local) free(copy);
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads the XXXX of a \uXXXX escape; ps->p is on the 'u'. */
static int parse_hex4(parser *ps, unsigned *out)
{
    ps->p++;
    unsigned value = 0;
    for (int i = 0; i < 4; i++, ps->p++) {
        int d = ps->p < ps->end ? hex_digit(*ps->p) : -1;
        if (d < 0) return unexpected(ps, "four hex digits after \\u");
        value = value << 4 | (unsigned)d;
    }
    *out = value;
    return 0;
}

static size_t put_utf8(char *dst, unsigned cp)
{
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xc0 | cp >> 6);
        dst[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xe0 | cp >> 12);
        dst[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        dst[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    dst[0] = (char)(0xf0 | cp >> 18);
    dst[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    dst[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    dst[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A \u escape, with a surrogate pair joined into one code point; ps->p is on the 'u'. */
static int parse_unicode_escape(parser *ps, unsigned *cp)
{
    unsigned high = 0;
    if (parse_hex4(ps, &high)) return -1;
    if (high >= 0xdc00 && high <= 0xdfff) return fail(ps, "lone low surrogate \\u%04x", high);
    if (high < 0xd800 || high > 0xdbff) {
        *cp = high;
        return 0;
    }
    if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
        return fail(ps, "high surrogate \\u%04x without a low surrogate", high);
    ps->p++;
    unsigned low = 0;
    if (parse_hex4(ps, &low)) return -1;
    if (low < 0xdc00 || low > 0xdfff)
        return fail(ps, "high surrogate \\u%04x followed by \\u%04x", high, low);
    *cp = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
    return 0;
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0 if there is none. */
static size_t utf8_length(const unsigned char *p, const unsigned char *end)
{
    size_t n;
    unsigned cp;
    if (p[0] < 0x80) return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) n = 2, cp = p[0] & 0x1f;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) n = 3, cp = p[0] & 0x0f;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4) n = 4, cp = p[0] & 0x07;
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    static const unsigned smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < smallest[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

/* Decodes a string; ps->p is on the opening quote.  The decoded text is never
 * longer than its escaped form, so one allocation of that size suffices. */
static int parse_string(parser *ps, char **chars, size_t *len)
{
    const char *scan = ps->p + 1;
    while (scan < ps->end && *scan != '"') scan += *scan == '\\' ? 2 : 1;
    if (scan >= ps->end) return fail(ps, "unterminated string");
    char *buf = malloc((size_t)(scan - ps->p));
    if (!buf) return fail(ps, "out of memory");

    size_t n = 0;
    ps->p++;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            free(buf);
            return fail(ps, "control character 0x%02x in a string must be escaped", c);
        }
        if (c != '\\') {
            /* Checked here so that an answer quoting the text (an unknown
             * field's name) is valid UTF-8 JSON too. */
            size_t run = utf8_length((const unsigned char *)ps->p, (const unsigned char *)scan);
            if (!run) {
                free(buf);
                return fail(ps, "invalid UTF-8 in a string");
            }
            memcpy(buf + n, ps->p, run);
            n += run;
            ps->p += run;
            continue;
        }
        ps->p++;
        char e = *ps->p;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            buf[n++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            ps->p++;
        } else if (e == 'u') {
            unsigned cp = 0;
            if (parse_unicode_escape(ps, &cp)) {
                free(buf);
                return -1;
            }
            if (cp == 0) {  /* the text is used as a C string, which it would cut short */
                free(buf);
                return fail(ps, "\\u0000 in a string");
            }
            n += put_utf8(buf + n, cp);
        } else {
            free(buf);
            return unexpected(ps, "an escape character (one of \"\\/bfnrtu)");
        }
    }
    ps->p++;
    buf[n] = '\0';
    *chars = buf;
    *len = n;
    return 0;
}

static int parse_array(parser *ps, json_value *out)
{
    size_t cap = 0;
    out->type = JSON_ARRAY;
    out->array.items = NULL;
    out->array.count = 0;
    ps->p++;
    skip_whitespace(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 0;
    }
    for (;;) {
        if (reserve_one((void **)&out->array.items, &cap, out->array.count, sizeof(json_value)))
            return fail(ps, "out of memory");
        /* Counted before parsing so json_free releases a partly parsed item. */
        json_value *item = &out->array.items[out->array.count++];
        if (parse_value(ps, item)) return -1;
        skip_whitespace(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
        } else if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return 0;
        } else {
            return unexpected(ps, "',' or ']' in an array");
        }
    }
}

static int parse_object(parser *ps, json_value *out)
{
    size_t cap = 0;
    out->type = JSON_OBJECT;
    out->object.members = NULL;
    out->object.count = 0;
    ps->p++;
    skip_whitespace(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_whitespace(ps);
        if (ps->p >= ps->end || *ps->p != '"') return unexpected(ps, "a string key in an object");
        if (reserve_one((void **)&out->object.members, &cap, out->object.count,
                        sizeof(json_member)))
            return fail(ps, "out of memory");
        json_member *m = &out->object.members[out->object.count];
        size_t key_len;
        if (parse_string(ps, &m->key, &key_len)) return -1;
        /* Counted before the value is parsed, as in parse_array. */
        m->value.type = JSON_NULL;
        out->object.count++;
        skip_whitespace(ps);
        if (ps->p >= ps->end || *ps->p != ':') return unexpected(ps, "':' after an object key");
        ps->p++;
        if (parse_value(ps, &m->value)) return -1;
        skip_whitespace(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
        } else if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return 0;
        } else {
            return unexpected(ps, "',' or '}' in an object");
        }
    }
}

/* On failure *out is still safe to json_free: containers count only the
 * members that were completely or partially set up. */
static int parse_value(parser *ps, json_value *out)
{
    out->type = JSON_NULL;
    skip_whitespace(ps);
    if (ps->p >= ps->end) return unexpected(ps, "a value");
    if (++ps->depth > MAX_DEPTH) return fail(ps, "nested deeper than %d levels", MAX_DEPTH);
    if (++ps->values > MAX_VALUES) return fail(ps, "more than %zu values", MAX_VALUES);
    int rc;
    switch (*ps->p) {
    case '{': rc = parse_object(ps, out); break;
    case '[': rc = parse_array(ps, out); break;
    case '"':
        out->type = JSON_STRING;
        rc = parse_string(ps, &out->string.chars, &out->string.len);
        if (rc) out->type = JSON_NULL;
        break;
    case 't': rc = parse_literal(ps, "true", out, JSON_BOOL, 1); break;
    case 'f': rc = parse_literal(ps, "false", out, JSON_BOOL, 0); break;
    case 'n': rc = parse_literal(ps, "null", out, JSON_NULL, 0); break;
    default: rc = parse_number(ps, out); break;
    }
    ps->depth--;
    return rc;
}

int json_parse(const char *text, size_t len, json_value *out, char *err, size_t err_size)
{
    parser ps = {.start = text, .p = text, .end = text + len, .err = err, .err_size = err_size};
    if (parse_value(&ps, out)) {
        json_free(out);
        return -1;
    }
    skip_whitespace(&ps);
    if (ps.p != ps.end) {
        json_free(out);
        return unexpected(&ps, "end of input after the value");
    }
    return 0;
}

void json_free(json_value *v)
{
    switch (v->type) {
    case JSON_STRING: free(v->string.chars); break;
    case JSON_ARRAY:
        for (size_t i = 0; i < v->array.count; i++) json_free(&v->array.items[i]);
        free(v->array.items);
        break;
    case JSON_OBJECT:
        for (size_t i = 0; i < v->object.count; i++) {
            free(v->object.members[i].key);
            json_free(&v->object.members[i].value);
        }
        free(v->object.members);
        break;
    default: break;
    }
    v->type = JSON_NULL;
}

const json_value *json_get(const json_value *object, const char *key)
{
    if (object->type != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < object->object.count; i++)
        if (strcmp(object->object.members[i].key, key) == 0)
            return &object->object.members[i].value;
    return NULL;
}

const char *json_type_name(json_type type)
{
    static const char *const names[] = {"null",     "a boolean", "a number",
                                        "a string", "an array",  "an object"};
    return names[type];
}

/* ---- writer ---- */

void json_writer_init(json_writer *w) { *w = (json_writer){0}; }

void json_writer_reset(json_writer *w)
{
    w->len = 0;
    w->out_of_memory = 0;
    if (w->data) w->data[0] = '\0';
}

void json_writer_free(json_writer *w)
{
    free(w->data);
    json_writer_init(w);
}

static void append(json_writer *w, const char *s, size_t n)
{
    if (w->out_of_memory) return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n + 1) cap *= 2;
        char *grown = realloc(w->data, cap);
        if (!grown) {
            w->out_of_memory = 1;
            return;
        }
        w->data = grown;
        w->cap = cap;
    }
    memcpy(w->data + w->len, s, n);
    w->len += n;
    w->data[w->len] = '\0';
}

/* Every value and key is preceded by a comma unless it opens a container or
 * follows its key, which the last character written tells. */
static void separate(json_writer *w)
{
    if (w->len == 0 || w->out_of_memory) return;
    char last = w->data[w->len - 1];
    if (last != '{' && last != '[' && last != ':') append(w, ",", 1);
}

void json_object_begin(json_writer *w)
{
    separate(w);
    append(w, "{", 1);
}

void json_object_end(json_writer *w) { append(w, "}", 1); }

void json_array_begin(json_writer *w)
{
    separate(w);
    append(w, "[", 1);
}

void json_array_end(json_writer *w) { append(w, "]", 1); }

static void append_escaped(json_writer *w, const char *s, size_t len)
{
    append(w, "\"", 1);
    size_t run = 0;  /* start of the pending run of characters that need no escape */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        size_t seq = c >= 0x80
                         ? utf8_length((const unsigned char *)s + i, (const unsigned char *)s + len)
                         : 1;
        if (seq > 1) {
            i += seq - 1;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\' && seq) continue;
        append(w, s + run, i - run);
        char esc[8];
        /* A byte that is not UTF-8 (an error message cut inside a character)
         * becomes U+FFFD: the answer stays valid JSON. */
        const char *named = !seq        ? "\\ufffd"
                            : c == '"'  ? "\\\""
                            : c == '\\' ? "\\\\"
                            : c == '\n' ? "\\n"
                            : c == '\r' ? "\\r"
                            : c == '\t' ? "\\t"
                                        : NULL;
        if (named) {
            append(w, named, strlen(named));
        } else {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            append(w, esc, 6);
        }
        run = i + 1;
    }
    append(w, s + run, len - run);
    append(w, "\"", 1);
}

void json_key(json_writer *w, const char *key)
{
    separate(w);
    append_escaped(w, key, strlen(key));
    append(w, ":", 1);
}

void json_string(json_writer *w, const char *s) { json_string_n(w, s, strlen(s)); }

void json_string_n(json_writer *w, const char *s, size_t len)
{
    separate(w);
    append_escaped(w, s, len);
}

void json_number(json_writer *w, double x)
{
    if (!isfinite(x)) {
        json_null(w);
        return;
    }
    char buf[32];
    for (int precision = 15; precision <= 17; precision++) {
        snprintf(buf, sizeof buf, "%.*g", precision, x);
        if (strtod(buf, NULL) == x) break;
    }
    separate(w);
    append(w, buf, strlen(buf));
}

void json_int(json_writer *w, long long x)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%lld", x);
    separate(w);
    append(w, buf, strlen(buf));
}

void json_bool(json_writer *w, int b)
{
    separate(w);
    append(w, b ? "true" : "false", b ? 4 : 5);
}

void json_raw(json_writer *w, const char *json)
{
    separate(w);
    append(w, json, strlen(json));
}

void json_null(json_writer *w)
{
    separate(w);
    append(w, "null", 4);
}
