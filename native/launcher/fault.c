/* See fault.h: compiled into test builds only. */
#ifdef ACL_FAULT_INJECTION
#define _GNU_SOURCE
#include "fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The fault named for `algorithm` in ACL_LAUNCHER_FAULTS, or NULL. */
static const char *fault_for(const char *algorithm)
{
    const char *spec = getenv("ACL_LAUNCHER_FAULTS");
    size_t n = strlen(algorithm);
    for (const char *p = spec; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, algorithm, n) == 0 && p[n] == '=') return p + n + 1;
    return NULL;
}

static int is(const char *fault, const char *name)
{
    size_t n = strlen(name);
    return strncmp(fault, name, n) == 0 && (fault[n] == ',' || fault[n] == '\0');
}

void fault_inject(const json_value *request)
{
    const json_value *config = json_get(request, "config");
    const json_value *algorithm =
        config && config->type == JSON_OBJECT ? json_get(config, "algorithm") : NULL;
    if (!algorithm || algorithm->type != JSON_STRING) return;
    const char *fault = fault_for(algorithm->string.chars);
    if (!fault) return;
    fprintf(stderr, "acl-launcher: injected fault for %s\n", algorithm->string.chars);
    if (is(fault, "segv")) raise(SIGSEGV);
    if (is(fault, "abort")) abort();
    if (is(fault, "hang"))
        for (;;) pause();
}
#endif
