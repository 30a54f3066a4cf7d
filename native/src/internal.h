/* Helpers shared by every part of the engine. */
#ifndef ACL_INTERNAL_H
#define ACL_INTERNAL_H

#include <stddef.h>

#include "aclengine.h"

#define ACL_ALIGN 64

/* Sets the thread-local one-line error and returns -1, so callers can write
 * `return acl_fail("...", ...);`. */
int acl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* 64-byte aligned allocation; NULL (with the error set) when out of memory. */
void *acl_alloc(size_t bytes);
void acl_free(void *p);

double acl_now_ms(void);

/* From now on conv reads its input NCHW (n, c, h, w) instead of NHWC; fails,
 * changing nothing, where its algorithm reads NHWC only. */
int conv_read_nchw(acl_conv *conv);

static inline int acl_div_up(int a, int b) { return (a + b - 1) / b; }
static inline int acl_min(int a, int b) { return a < b ? a : b; }
static inline int acl_max(int a, int b) { return a > b ? a : b; }

#endif
