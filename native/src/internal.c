#define _GNU_SOURCE
#include "internal.h"

#include "acl_fingerprint.h"  /* generated: cmake/fingerprint.cmake */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Thread_local char last_error[512];

int acl_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return -1;
}

const char *acl_last_error(void) { return last_error; }

const char *acl_version(void) { return ACL_ENGINE_VERSION; }

const char *acl_fingerprint(void) { return ACL_ENGINE_FINGERPRINT; }

void *acl_alloc(size_t bytes)
{
    void *p = NULL;
    size_t rounded = (bytes + ACL_ALIGN - 1) / ACL_ALIGN * ACL_ALIGN;
    if (posix_memalign(&p, ACL_ALIGN, rounded ? rounded : ACL_ALIGN) != 0) {
        acl_fail("out of memory allocating %zu bytes", bytes);
        return NULL;
    }
    return p;
}

void acl_free(void *p) { free(p); }

double acl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
