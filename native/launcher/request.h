/* Reading the fields of a request, with the one-line error a bad field gets.
 *
 * Every reader returns 0 on success and -1 after setting request_error(); a
 * field that is absent leaves *out untouched when it is OPTIONAL, so callers
 * preset their defaults.
 */
#ifndef ACL_LAUNCHER_REQUEST_H
#define ACL_LAUNCHER_REQUEST_H

#include <stddef.h>

#include "json.h"

typedef enum { REQUIRED, OPTIONAL } presence;

int request_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last failure's message, never empty; request_error_clear() forgets it
 * before each request, so that no request is answered with another's. */
const char *request_error(void);
void request_error_clear(void);

/* Rejects a value that is not an object, a member not in `allowed`
 * (NULL-terminated) and a member given twice.  `where` names the object in
 * the message, e.g. "shape". */
int request_check_fields(const json_value *object, const char *where, const char *const allowed[]);

/* An integer in [min, max]. */
int request_integer(const json_value *object, const char *key, presence p, long long min,
                    long long max, long long *out);
int request_int(const json_value *object, const char *key, presence p, int min, int *out);
int request_double(const json_value *object, const char *key, presence p, double *out);
int request_bool(const json_value *object, const char *key, presence p, int *out);
/* A string; with `nullable`, null reads as NULL.  *out points into the request. */
int request_string(const json_value *object, const char *key, presence p, int nullable,
                   const char **out);
/* An array of integers >= min: exactly `cap` of them when count is NULL, else
 * at most `cap` (their number into *count). */
int request_ints(const json_value *object, const char *key, presence p, long long min, int *out,
                 int cap, int *count);
/* One of the NULL-terminated names, its index into *out. */
int request_enum(const json_value *object, const char *key, presence p, const char *const names[],
                 int *out);
/* Base64 float32 into a new 64-byte aligned buffer (free() it): exactly
 * `expected` floats, or any number (into *n) when expected is SIZE_MAX.  An
 * OPTIONAL one absent or null gives NULL. */
int request_floats(const json_value *object, const char *key, presence p, size_t expected,
                   float **out, size_t *n);
/* The most cores an execution config may list. */
#define MAX_CORES 1024
/* An acl_exec's fields from "core_weights" (at most MAX_CORES, into weights)
 * and "workloads" (>= 1). */
int request_exec(const json_value *object, int *weights, int *ncores, int *workloads);

/* Puts "where: " in front of the current error; returns -1. */
int request_fail_in(const char *where);

/* The member itself, checked to be of `type`. */
int request_member(const json_value *object, const char *key, presence p, json_type type,
                   const json_value **out);

#endif
