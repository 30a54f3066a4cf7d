/* The measure command: times one execution configuration of the task and
 * checks its output against the task's reference. */
#ifndef ACL_LAUNCHER_MEASURE_H
#define ACL_LAUNCHER_MEASURE_H

#include "json.h"
#include "task.h"

/* Runs a measure request and adds the answer's members (everything but "ok")
 * to the object open in w.  -1 with request_error() set on failure; w may
 * then hold a partial answer. */
int measure_command(task *t, const json_value *request, json_writer *w);

/* The largest cache of any CPU as sysfs reports it, 0 when it reports none:
 * what a cold measurement's evict_bytes has to exceed. */
long long measure_largest_cache_bytes(void);

#endif
