#define _GNU_SOURCE
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ACL_MAX_CPUS 1024
#define WORKER_STACK_BYTES (16u << 20)
/* Poll this long before sleeping: waking a sleeping thread costs tens of
 * microseconds, more than many small operations take, and a whole-model run
 * hands out its next operation within microseconds of the last.  Timed rather
 * than counted, since a pause instruction takes 1 to 150 cycles by CPU. */
#define SPIN_MS 0.05
#define POLLS_PER_CLOCK 64

/* One job's ranges, one per active CPU in CPU-id order.  A range runs on its
 * own CPU only, never stolen by a thread done early: the per-core weights are
 * what the tuner measures and plans, so a share meant for a big core must not
 * run on a little one. */
typedef struct {
    int begin, end;
} range;

/* A worker serves one CPU, started the first time a job gives that CPU a
 * share the caller does not run.  Each has its own job counter, so that a
 * job wakes only the workers it gives work to. */
typedef struct {
    pthread_t thread;
    int started;
    atomic_int rank;  /* its range's index in the current job */
    /* The generation of the latest job that gave this worker a range, and
     * of the latest it has run. */
    atomic_ullong job;
    unsigned long long seen;
    atomic_int sleeping;
    atomic_int nudged;  /* woken without a job by acl_pool_wake */
    pthread_cond_t wake;
} worker;

static struct {
    pthread_mutex_t submit;  /* one parallel job at a time */
    pthread_mutex_t lock;    /* guards sleeping on the conditions below */
    pthread_cond_t done;
    unsigned long long generation;  /* of the current job; written under submit */
    atomic_int left;                /* ranges of the current job not finished yet */
    atomic_int caller_sleeping;
    acl_task_fn fn;
    void *ctx;
    range ranges[ACL_MAX_CPUS];
    worker workers[ACL_MAX_CPUS];
} pool = {
    .submit = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The calling thread while the pool keeps it pinned: its CPU (-1: not
 * pinned by the pool) and the affinity acl_release_caller gives back. */
static _Thread_local int caller_cpu = -1;
static _Thread_local cpu_set_t caller_own;

/* ACL_CPUS=3,5 makes the engine's CPU i this machine's CPU number i of that
 * list, so that one machine can stand in for several smaller boards (a board
 * farm's members, each given its own cores), every board's configs naming
 * CPUs from 0.  Read once; a list that does not parse (cpu_map_bad) makes
 * every execution config fail with the reason, and the count of CPUs 0. */
static int cpu_map[ACL_MAX_CPUS];
static int cpu_map_len;  /* 0: no map, CPU ids are the machine's */
static int cpu_map_bad;
static pthread_once_t cpu_map_once = PTHREAD_ONCE_INIT;

static void read_cpu_map(void)
{
    const char *text = getenv("ACL_CPUS");
    if (!text || !*text) return;
    for (const char *p = text;;) {
        char *end;
        long cpu = strtol(p, &end, 10);
        if (end == p || cpu < 0 || cpu >= CPU_SETSIZE || cpu_map_len == ACL_MAX_CPUS ||
            (*end != ',' && *end != '\0')) {
            cpu_map_bad = 1;
            cpu_map_len = 0;
            return;
        }
        cpu_map[cpu_map_len++] = (int)cpu;
        if (*end == '\0') return;
        p = end + 1;
    }
}

int acl_machine_cpu(int cpu)
{
    pthread_once(&cpu_map_once, read_cpu_map);
    return cpu < cpu_map_len ? cpu_map[cpu] : cpu;
}

/* The engine's CPUs in `machine` (a set of this machine's ids). */
static void engine_cpus(const cpu_set_t *machine, cpu_set_t *set)
{
    pthread_once(&cpu_map_once, read_cpu_map);
    if (!cpu_map_len) {
        *set = *machine;
        return;
    }
    CPU_ZERO(set);
    for (int i = 0; i < cpu_map_len; i++)
        if (CPU_ISSET(cpu_map[i], machine)) CPU_SET(i, set);
}

/* The CPUs the calling thread may use, in the engine's ids: its own
 * affinity, also while the pool keeps it pinned to one of them. */
static int allowed_cpus(cpu_set_t *set)
{
    cpu_set_t machine;
    if (caller_cpu >= 0) machine = caller_own;
    else if (sched_getaffinity(0, sizeof machine, &machine) != 0) return -1;
    engine_cpus(&machine, set);
    return 0;
}

int acl_cpu_count(void)
{
    cpu_set_t set;
    acl_machine_cpu(0);
    if (cpu_map_bad) return 0; /* no CPU is known to be the engine's */
    if (allowed_cpus(&set) != 0) return 1;
    int last = -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set)) last = i;
    return last + 1;
}

static void describe_available(const cpu_set_t *set, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < CPU_SETSIZE && used + 8 < len; i++)
        if (CPU_ISSET(i, set))
            used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", i);
}

int acl_exec_check(const acl_exec *ex)
{
    acl_machine_cpu(0);
    if (cpu_map_bad)
        return acl_fail("ACL_CPUS must be a comma-separated list of CPU ids, e.g. 0,2");
    if (!ex || !ex->weights || ex->ncores <= 0)
        return acl_fail("execution config has no core weights");
    if (ex->ncores > ACL_MAX_CPUS)
        return acl_fail("execution config names %d cores; at most %d are supported", ex->ncores,
                        ACL_MAX_CPUS);
    if (ex->workloads < 1) return acl_fail("workloads must be >= 1, got %d", ex->workloads);
    cpu_set_t set;
    if (allowed_cpus(&set) != 0)
        return acl_fail("cannot read this process's CPU affinity: %s", strerror(errno));
    int active = 0;
    for (int i = 0; i < ex->ncores; i++) {
        if (ex->weights[i] < 0)
            return acl_fail("weight of CPU %d is negative (%d)", i, ex->weights[i]);
        if (ex->weights[i] == 0) continue;
        if (i >= CPU_SETSIZE || !CPU_ISSET(i, &set)) {
            char avail[256];
            describe_available(&set, avail, sizeof avail);
            return acl_fail("cannot pin a thread to CPU %d: it does not exist on this machine "
                            "(available CPUs: %s)", i, avail);
        }
        active++;
    }
    if (!active) return acl_fail("every core weight is 0: no thread would run");
    return 0;
}

int acl_exec_active(const acl_exec *ex)
{
    int active = 0;
    for (int i = 0; i < ex->ncores; i++) active += ex->weights[i] > 0;
    return active;
}

/* Sleeping and waking use the Dekker pattern: the waker publishes its store,
 * then reads the sleeping flag; the sleeper sets its flag, then re-checks the
 * condition under the lock.  One of them always sees the other, so a wake-up
 * takes the lock and a system call only when its thread did go to sleep.
 * Each side's store is a read-modify-write: a seq_cst store then load is
 * enough in C11, but qemu-user runs AArch64's stlr; ldar on x86 without a
 * fence between them, and a wake-up lost there hangs a share that no other
 * thread may run. */
static void finish_range(void)
{
    if (atomic_fetch_sub(&pool.left, 1) == 1 && atomic_load(&pool.caller_sleeping)) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.lock);
    }
}

/* Runs range `rank` of the current job: its fields stay valid until it is
 * finished, since the caller waits for every range. */
static void run_range(int rank)
{
    const range *r = &pool.ranges[rank];
    pool.fn(pool.ctx, r->begin, r->end, rank);
    finish_range();
}

/* Polls until ready(arg) or SPIN_MS have passed; returns ready(arg). */
static int spin_until(int (*ready)(const void *), const void *arg)
{
    double deadline = 0;
    for (int polls = 1; !ready(arg); polls++) {
        cpu_relax();
        if (polls % POLLS_PER_CLOCK) continue;
        const double now = acl_now_ms();
        if (deadline == 0) deadline = now + SPIN_MS;
        else if (now > deadline) return ready(arg);
    }
    return 1;
}

static int job_arrived(const void *arg)
{
    const worker *w = arg;
    return atomic_load_explicit(&w->job, memory_order_acquire) != w->seen;
}

static int job_done(const void *arg) { return atomic_load(&pool.left) == 0; }

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (;;) {
        if (!spin_until(job_arrived, w)) {
            pthread_mutex_lock(&pool.lock);
            atomic_exchange(&w->sleeping, 1);
            while (atomic_load(&w->job) == w->seen && !atomic_load(&w->nudged))
                pthread_cond_wait(&w->wake, &pool.lock);
            atomic_store(&w->nudged, 0);
            atomic_store(&w->sleeping, 0);
            pthread_mutex_unlock(&pool.lock);
            if (atomic_load(&w->job) == w->seen) continue; /* nudged: poll again */
        }
        const unsigned long long job = atomic_load_explicit(&w->job, memory_order_acquire);
        w->seen = job;
        run_range(atomic_load_explicit(&w->rank, memory_order_relaxed));
    }
    return NULL;
}

static int start_worker(int cpu)
{
    worker *w = &pool.workers[cpu];
    pthread_attr_t attr;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(acl_machine_cpu(cpu), &set);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WORKER_STACK_BYTES);
    int rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    pthread_cond_init(&w->wake, NULL);
    if (rc == 0) rc = pthread_create(&w->thread, &attr, worker_main, w);
    pthread_attr_destroy(&attr);
    if (rc != 0) return acl_fail("cannot start a thread pinned to CPU %d: %s", cpu, strerror(rc));
    w->started = 1;
    return 0;
}

/* Pins the calling thread to `cpu` unless it is there already. */
static int pin_caller(int cpu)
{
    if (caller_cpu == cpu) return 0;
    if (caller_cpu < 0 && sched_getaffinity(0, sizeof caller_own, &caller_own) != 0)
        return acl_fail("cannot read the calling thread's CPU affinity: %s", strerror(errno));
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(acl_machine_cpu(cpu), &one);
    if (!(caller_cpu < 0 && CPU_EQUAL(&one, &caller_own)) &&
        sched_setaffinity(0, sizeof one, &one) != 0)
        return acl_fail("cannot pin the calling thread to CPU %d: %s", cpu, strerror(errno));
    caller_cpu = cpu;
    return 0;
}

void acl_release_caller(void)
{
    if (caller_cpu < 0) return;
    /* Nothing to do if this fails: the thread stays on a CPU it was allowed. */
    sched_setaffinity(0, sizeof caller_own, &caller_own);
    caller_cpu = -1;
}

/* Cuts the job into ranges, one per active CPU whose share is not empty, in
 * proportion to the weights; returns how many, each range's CPU in cpus. */
static int split_ranges(const acl_exec *ex, int units, int *cpus)
{
    long total = 0;
    for (int i = 0; i < ex->ncores; i++) total += ex->weights[i];
    int n = 0;
    long cum = 0;
    for (int cpu = 0; cpu < ex->ncores; cpu++) {
        if (ex->weights[cpu] == 0) continue;
        range *r = &pool.ranges[n];
        r->begin = (int)(units * cum / total);
        cum += ex->weights[cpu];
        r->end = (int)(units * cum / total);
        if (r->begin < r->end) cpus[n++] = cpu;
    }
    return n;
}

/* Hands the ranges to the workers, runs the first on the calling thread
 * pinned to that range's CPU (until acl_release_caller), and waits for the
 * rest.  Where that CPU already has a worker (another job gave it a later
 * share, or the first CPU's share is empty), the worker runs the range and
 * the caller only waits, on the CPU it is on: two threads polling one CPU
 * would take turns by whole time slices. */
static int run_job(int n, const int *cpus, acl_task_fn fn, void *ctx)
{
    const int caller_runs = !pool.workers[cpus[0]].started;
    if (caller_runs && pin_caller(cpus[0]) != 0) return -1;
    const unsigned long long gen = ++pool.generation;
    pool.fn = fn;
    pool.ctx = ctx;
    atomic_store(&pool.left, n);
    for (int i = caller_runs; i < n; i++) {
        worker *w = &pool.workers[cpus[i]];
        atomic_store_explicit(&w->rank, i, memory_order_relaxed);
        atomic_exchange(&w->job, gen);
        if (atomic_load(&w->sleeping)) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&w->wake);
            pthread_mutex_unlock(&pool.lock);
        }
    }
    if (caller_runs) run_range(0);
    if (!spin_until(job_done, NULL)) {
        pthread_mutex_lock(&pool.lock);
        atomic_exchange(&pool.caller_sleeping, 1);
        while (atomic_load(&pool.left) > 0) pthread_cond_wait(&pool.done, &pool.lock);
        atomic_store(&pool.caller_sleeping, 0);
        pthread_mutex_unlock(&pool.lock);
    }
    return 0;
}

void acl_pool_wake(const acl_exec *ex)
{
    if (!ex || !ex->weights) return;
    pthread_mutex_lock(&pool.submit); /* `started` is written under it */
    for (int cpu = 0; cpu < ex->ncores && cpu < ACL_MAX_CPUS; cpu++) {
        worker *w = &pool.workers[cpu];
        if (ex->weights[cpu] == 0 || !w->started || !atomic_load(&w->sleeping)) continue;
        pthread_mutex_lock(&pool.lock);
        atomic_store(&w->nudged, 1);
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&pool.lock);
    }
    pthread_mutex_unlock(&pool.submit);
}

int acl_parallel(const acl_exec *ex, int units, acl_task_fn fn, void *ctx)
{
    if (acl_exec_check(ex) != 0) return -1;
    if (units <= 0) return 0;
    pthread_mutex_lock(&pool.submit);
    int cpus[ACL_MAX_CPUS];
    const int n = split_ranges(ex, units, cpus);
    int rc = 0;
    for (int i = 1; rc == 0 && i < n; i++)
        if (!pool.workers[cpus[i]].started) rc = start_worker(cpus[i]);
    if (rc == 0) rc = run_job(n, cpus, fn, ctx);
    pthread_mutex_unlock(&pool.submit);
    return rc;
}
