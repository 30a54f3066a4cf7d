#define _GNU_SOURCE
#include "machine_state.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclengine.h"

/* A clock this much lower after a measurement than before is a drop, not
 * the rounding of a governor's steps. */
#define CLOCK_DROP 0.03
#define MAX_ZONES 64
#define MAX_TRIPS 16

static int read_long(const char *path, long *value)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fscanf(f, "%ld", value) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

static int read_word(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok ? 0 : -1;
}

/* ACL_MACHINE_ROOT: a folder holding a recorded machine's sys/ (as `board
 * doctor`'s ROOT), read instead of this machine's own. */
static const char *machine_root(void)
{
    const char *root = getenv("ACL_MACHINE_ROOT");
    return root ? root : "";
}

static void read_zones(const char *root, machine_state *s)
{
    s->temp_c = NAN;
    s->trip_c = NAN;
    char path[PATH_MAX], kind[32];
    for (int z = 0; z < MAX_ZONES; z++) {
        long milli;
        snprintf(path, sizeof path, "%s/sys/class/thermal/thermal_zone%d/temp", root, z);
        if (read_long(path, &milli)) break;
        if (isnan(s->temp_c) || milli / 1000.0 > s->temp_c) s->temp_c = milli / 1000.0;
        for (int t = 0; t < MAX_TRIPS; t++) {
            snprintf(path, sizeof path, "%s/sys/class/thermal/thermal_zone%d/trip_point_%d_type",
                     root, z, t);
            if (read_word(path, kind, sizeof kind)) break;
            if (strcmp(kind, "passive") && strcmp(kind, "hot")) continue;
            snprintf(path, sizeof path, "%s/sys/class/thermal/thermal_zone%d/trip_point_%d_temp",
                     root, z, t);
            if (read_long(path, &milli) == 0 && milli > 0 &&
                (isnan(s->trip_c) || milli / 1000.0 < s->trip_c))
                s->trip_c = milli / 1000.0;
        }
    }
}

void machine_state_read(const int *weights, int ncores, machine_state *s)
{
    s->ncpus = 0;
    const char *root = machine_root();
    char path[PATH_MAX];
    for (int cpu = 0; cpu < ncores && s->ncpus < MAX_CORES; cpu++) {
        if (!weights[cpu]) continue;
        long khz = 0;
        /* Under ACL_CPUS the engine's cpu is another of this machine's. */
        snprintf(path, sizeof path, "%s/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq",
                 root, acl_machine_cpu(cpu));
        if (read_long(path, &khz)) khz = 0;
        s->cpus[s->ncpus] = cpu;
        s->mhz[s->ncpus++] = (int)(khz / 1000);
    }
    read_zones(root, s);
}

int machine_state_throttled(const machine_state *before, const machine_state *after)
{
    for (int i = 0; i < before->ncpus && i < after->ncpus; i++)
        if (before->mhz[i] > 0 && after->mhz[i] < before->mhz[i] * (1 - CLOCK_DROP)) return 1;
    return !isnan(after->trip_c) && after->temp_c >= after->trip_c;
}

void machine_state_write(json_writer *w, const char *key, const machine_state *s)
{
    char name[64];
    snprintf(name, sizeof name, "%s_mhz", key);
    json_key(w, name);
    json_array_begin(w);
    for (int i = 0; i < s->ncpus; i++) json_int(w, s->mhz[i]);
    json_array_end(w);
    snprintf(name, sizeof name, "%s_temp_c", key);
    json_key(w, name);
    if (isnan(s->temp_c)) json_null(w);
    else json_number(w, s->temp_c);
}
