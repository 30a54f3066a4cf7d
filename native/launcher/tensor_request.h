/* Reading the arena's tensors and regions from graph requests. */
#ifndef ACL_LAUNCHER_TENSOR_REQUEST_H
#define ACL_LAUNCHER_TENSOR_REQUEST_H

#include <stddef.h>

#include "aclgraph.h"
#include "json.h"
#include "request.h"

/* Offsets and sizes travel as JSON numbers: integers a double holds exactly. */
#define MAX_JSON_INT (1LL << 53)

/* A tensor {"offset", "dims"}; an OPTIONAL one may be absent or null (*given = 0). */
int read_tensor(const json_value *object, const char *key, presence p, acl_tensor *t, int *given);

typedef struct {
    acl_tensor *items;  /* malloc'ed */
    size_t count;
} tensor_list;

/* An array of tensors; absent reads as none. */
int read_tensor_list(const json_value *object, const char *key, tensor_list *out);

/* n floats at offset lie inside an arena of `floats`. */
int check_region(long long offset, size_t n, size_t floats);

#endif
