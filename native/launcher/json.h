/* A small JSON reader and writer for the launcher protocol.
 *
 * The reader turns one text into a tree of json_value (RFC 8259: objects,
 * arrays, strings with every escape, numbers, true/false/null) and reports the
 * first syntax error with its byte offset.  The writer appends compact JSON to
 * a growing buffer and places the commas itself.
 */
#ifndef ACL_LAUNCHER_JSON_H
#define ACL_LAUNCHER_JSON_H

#include <stddef.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value json_value;
typedef struct json_member json_member;

struct json_value {
    json_type type;
    union {
        int boolean;
        double number;
        struct {
            char *chars;  /* NUL-terminated, without NULs inside (\u0000 is refused) */
            size_t len;
        } string;
        struct {
            json_value *items;
            size_t count;
        } array;
        struct {
            json_member *members;  /* in text order, duplicates kept */
            size_t count;
        } object;
    };
};

struct json_member {
    char *key;
    json_value value;
};

/* Parses exactly one value, optionally surrounded by whitespace, from
 * text[0, len).  0 on success (free with json_free); -1 with a one-line
 * message in err otherwise. */
int json_parse(const char *text, size_t len, json_value *out, char *err, size_t err_size);
void json_free(json_value *v);

/* The first member named key of an object, or NULL. */
const json_value *json_get(const json_value *object, const char *key);
const char *json_type_name(json_type type);

typedef struct {
    char *data;
    size_t len, cap;
    int out_of_memory;  /* set once an append failed; later appends are dropped */
} json_writer;

void json_writer_init(json_writer *w);
void json_writer_reset(json_writer *w);
void json_writer_free(json_writer *w);

void json_object_begin(json_writer *w);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w);
void json_array_end(json_writer *w);
void json_key(json_writer *w, const char *key);
void json_string(json_writer *w, const char *s);
void json_string_n(json_writer *w, const char *s, size_t len);
/* Shortest form that reads back as the same double; NaN and infinities,
 * which JSON cannot express, become null. */
void json_number(json_writer *w, double x);
void json_int(json_writer *w, long long x);
void json_bool(json_writer *w, int b);
void json_null(json_writer *w);
/* A value that is already JSON text (acl_describe()). */
void json_raw(json_writer *w, const char *json);

#endif
