/* Decoding a struct of the engine's schema (aclengine.h, aclgraph.h) from a
 * request object, field by field as acl_field_info describes it, so that the
 * launcher reads every schema struct (a conv shape, an operation's
 * attributes) with one decoder generated from the same lists as the engine. */
#ifndef ACL_LAUNCHER_SCHEMA_DECODE_H
#define ACL_LAUNCHER_SCHEMA_DECODE_H

#include "aclengine.h"
#include "json.h"

/* The buffers a decoded struct points into (INTS and FLOATS fields). */
typedef struct {
    void *items[16];
    int count;
} schema_buffers;

/* Fills *out (a struct of the fields' layout, zeroed first) from `object`:
 * unknown members are refused; an absent field takes its default, or fails
 * when required.  `where` names the object in messages.  INTS and FLOATS
 * fields are decoded into new buffers recorded in *buffers (free them with
 * schema_buffers_free, also after a failure). */
int schema_decode(const json_value *object, const char *where, const acl_field_info *fields,
                  int nfields, size_t size, void *out, schema_buffers *buffers);
void schema_buffers_free(schema_buffers *buffers);

#endif
