/* What the kernel says about the cores' clocks and the board's temperature,
 * read before and after a measurement: a run that a thermal or power limit
 * slowed down must not be taken for the config's time. */
#ifndef ACL_LAUNCHER_MACHINE_STATE_H
#define ACL_LAUNCHER_MACHINE_STATE_H

#include "json.h"
#include "request.h"

typedef struct {
    int ncpus;
    int cpus[MAX_CORES];
    int mhz[MAX_CORES];  /* scaling_cur_freq; 0 where the kernel has no cpufreq */
    double temp_c;       /* the hottest thermal zone; NAN without any */
    double trip_c;       /* the lowest passive or hot trip point; NAN without any */
} machine_state;

/* Reads the clocks of the CPUs with a non-zero weight, and the thermal zones. */
void machine_state_read(const int *weights, int ncores, machine_state *s);

/* Whether a core's clock dropped between the two readings, or the board
 * reached its trip point by the second. */
int machine_state_throttled(const machine_state *before, const machine_state *after);

/* "key_mhz": [..], "key_temp_c": t or null, for the answer. */
void machine_state_write(json_writer *w, const char *key, const machine_state *s);

#endif
