/* Thread pool placement tests: in the strict balance every unit of a job
 * runs on the CPU whose share it is in, for many weight vectors and
 * workloads, and the calling thread stays pinned until acl_release_caller
 * gives it its own affinity back; in the adaptive balance every unit runs
 * exactly once, the share of a worker held back by the test hook is taken
 * over by the others, a worker descheduled holding units is moved onto the
 * waiting caller's CPU, and after a contended program run the faster of
 * sharing the runs' jobs and running them alone is kept.
 *
 *   test_pool [--cases N] [--seed S]   closes with "N passed, N failed"
 *
 * The expected share of each CPU is recomputed here from the documented
 * rule (contiguous ranges in CPU-id order, in proportion to the weights), so
 * a unit stolen by another core's thread, or a caller left unpinned, fails.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool.h"
#include "test_harness.h"

#define MAX_UNITS 512

typedef struct {
    int cpu[MAX_UNITS];   /* where each unit ran */
    int rank[MAX_UNITS];  /* the worker index it was given */
} placement;

static void record(void *ctx, int begin, int end, int worker)
{
    placement *p = ctx;
    const int cpu = sched_getcpu();
    /* Enough work per range that a thread preempted mid-range would be
     * likely to show up on another CPU if it were not pinned. */
    volatile double sink = 0;
    for (int i = 0; i < 20000; i++) sink += i;
    for (int u = begin; u < end; u++) {
        p->cpu[u] = cpu;
        p->rank[u] = worker;
    }
}

/* The CPU each unit belongs to under ex, per the documented split. */
static void expected_cpus(const acl_exec *ex, int units, int *owner)
{
    long total = 0, cum = 0;
    for (int i = 0; i < ex->ncores; i++) total += ex->weights[i];
    for (int cpu = 0; cpu < ex->ncores; cpu++) {
        const int begin = (int)(units * cum / total);
        cum += ex->weights[cpu];
        for (int u = begin; u < (int)(units * cum / total); u++) owner[u] = cpu;
    }
}

static int same_set(const cpu_set_t *a, const cpu_set_t *b) { return CPU_EQUAL(a, b); }

static void check_case(const int *weights, int ncores, int units, const cpu_set_t *own)
{
    const acl_exec ex = {ncores, weights, units};
    placement p;
    int owner[MAX_UNITS];
    memset(&p, 0xff, sizeof p);
    expected_cpus(&ex, units, owner);
    char desc[160];
    int used = snprintf(desc, sizeof desc, "units %d weights", units);
    for (int i = 0; i < ncores && used < (int)sizeof desc - 8; i++)
        used += snprintf(desc + used, sizeof desc - used, " %d", weights[i]);
    if (acl_parallel(&ex, units, record, &p) != 0) {
        check(0, "%s: acl_parallel failed: %s", desc, acl_last_error());
        return;
    }
    int misplaced = -1, rank_mixed = -1;
    for (int u = 0; u < units; u++) {
        if (p.cpu[u] != owner[u] && misplaced < 0) misplaced = u;
        /* one range per CPU: units of one CPU share one rank */
        if (u > 0 && owner[u] == owner[u - 1] && p.rank[u] != p.rank[u - 1]) rank_mixed = u;
    }
    check(misplaced < 0, "%s: unit %d of CPU %d ran on CPU %d", desc, misplaced,
          misplaced < 0 ? 0 : owner[misplaced], misplaced < 0 ? 0 : p.cpu[misplaced]);
    check(rank_mixed < 0, "%s: unit %d has another rank than its CPU's other units", desc,
          rank_mixed);
    /* The caller stays pinned between jobs, until released. */
    cpu_set_t pinned, after;
    sched_getaffinity(0, sizeof pinned, &pinned);
    check(CPU_COUNT(&pinned) == 1 || same_set(&pinned, own),
          "%s: the caller is neither pinned nor back on its own CPUs", desc);
    acl_release_caller();
    sched_getaffinity(0, sizeof after, &after);
    check(same_set(&after, own), "%s: the caller's affinity was not restored", desc);
}

typedef struct {
    atomic_int runs[MAX_UNITS];  /* times each unit ran */
    int cpu[MAX_UNITS];
    atomic_int busy[CPU_SETSIZE];  /* threads inside fn with each rank */
    atomic_int shared_rank;        /* two at once with one rank: one scratch for both */
    atomic_int ranks;              /* bit r: a call ran with rank r (r < 31) */
} tally;

static void tally_units(void *ctx, int begin, int end, int worker)
{
    tally *t = ctx;
    if (atomic_fetch_add(&t->busy[worker], 1) != 0) atomic_store(&t->shared_rank, 1);
    atomic_fetch_or(&t->ranks, 1 << (worker < 30 ? worker : 30));
    const int cpu = sched_getcpu();
    volatile double sink = 0;
    for (int i = 0; i < 20000; i++) sink += i;
    for (int u = begin; u < end; u++) {
        atomic_fetch_add(&t->runs[u], 1);
        t->cpu[u] = cpu;
    }
    atomic_fetch_sub(&t->busy[worker], 1);
}

/* Adaptive jobs, with the worker of `stalled` (-1: none) held back before
 * each job until another thread takes over units (2 s at most): every unit
 * runs once, never two threads with one rank at a time (ranks index
 * per-worker scratch); with a stall, the stalled CPU's units were taken over
 * in part. */
static void check_adaptive(const int *weights, int ncores, int units, int stalled)
{
    const acl_exec ex = {ncores, weights, units};
    int owner[MAX_UNITS];
    expected_cpus(&ex, units, owner);
    tally t;
    memset(&t, 0, sizeof t);
    const long long before = acl_pool_units_taken_over();
    acl_pool_test_stall(stalled, 2000.0);
    const acl_balance was = acl_set_balance(ACL_BALANCE_ADAPTIVE);
    const int rc = acl_parallel(&ex, units, tally_units, &t);
    acl_set_balance(was);
    acl_pool_test_stall(-1, 0);
    acl_release_caller();
    check(rc == 0, "adaptive job failed: %s", acl_last_error());
    int wrong = -1, stalled_units = 0, moved = 0;
    for (int u = 0; u < units; u++) {
        if (atomic_load(&t.runs[u]) != 1 && wrong < 0) wrong = u;
        if (owner[u] == stalled) {
            stalled_units++;
            moved += t.cpu[u] != stalled;
        }
    }
    check(wrong < 0, "units %d, stalled CPU %d: unit %d ran %d times", units, stalled, wrong,
          wrong < 0 ? 0 : atomic_load(&t.runs[wrong]));
    check(!atomic_load(&t.shared_rank), "units %d: two threads ran with one rank at once", units);
    const long long taken = acl_pool_units_taken_over() - before;
    if (stalled_units > 0 && stalled_units < units) {
        check(moved > 0 && taken >= moved,
              "units %d: none of stalled CPU %d's %d units was taken over (counted %lld)", units,
              stalled, stalled_units, taken);
    }
}

static void count_units(void *ctx, int begin, int end, int worker)
{
    atomic_fetch_add((atomic_int *)ctx, end - begin);
}

static void busy_for_ms(double ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

typedef struct {
    atomic_int calls;
    int cpu_after;  /* where rank 1's first call was after its sleep */
} sleeper;

/* Rank 1's first call sleeps holding its units, as a thread descheduled
 * mid-share does, in 2 ms naps until it wakes on another CPU (2 s at most:
 * a loaded machine may run the caller late); rank 0 computes until rank 1
 * has claimed its share (2 s at most), so that it cannot take it over. */
static void sleep_once(void *ctx, int begin, int end, int worker)
{
    sleeper *s = ctx;
    if (worker == 0) {
        for (int i = 0; i < 2000 && !atomic_load(&s->calls); i++) busy_for_ms(1);
        return;
    }
    if (atomic_fetch_add(&s->calls, 1) != 0) return;
    const int cpu = sched_getcpu();
    for (int i = 0; i < 1000 && sched_getcpu() == cpu; i++)
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    s->cpu_after = sched_getcpu();
}

/* Adaptive: a worker that stops running while it holds units is moved onto
 * the caller's CPU (the caller waits with nothing left to take over), and
 * runs its next share on its own CPU again. */
static void check_rescue(int ncores, int caller_cpu, int worker_cpu)
{
    int weights[CPU_SETSIZE] = {0};
    weights[caller_cpu] = weights[worker_cpu] = 1;
    const acl_exec ex = {ncores, weights, 2};
    sleeper s = {.cpu_after = -1};
    acl_pool_test_stall(-1, 0);  /* shares the jobs, even after a contended run */
    acl_pool_test_rest(60e3);    /* a rest no run of this test outlasts */
    const acl_balance was = acl_set_balance(ACL_BALANCE_ADAPTIVE);
    const int rc = acl_parallel(&ex, 2, sleep_once, &s);
    check(rc == 0, "rescue job failed: %s", acl_last_error());
    check(s.cpu_after == caller_cpu,
          "the sleeping holder on CPU %d was not moved to the "
          "caller's CPU %d (it woke on %d)",
          worker_cpu, caller_cpu, s.cpu_after);
    /* Resting, the rescued worker gets no share: the caller runs it. */
    placement p;
    memset(&p, 0xff, sizeof p);
    check(acl_parallel(&ex, 2, record, &p) == 0, "job in a rest failed");
    check(p.cpu[1] == caller_cpu && p.rank[1] == 0,
          "CPU %d's share ran on CPU %d with rank %d while its worker rested after a "
          "rescue, not on the caller's CPU %d",
          worker_cpu, p.cpu[1], p.rank[1], caller_cpu);
    acl_pool_test_rest(-1);
    acl_pool_test_stall(-1, 0);  /* the rest over */
    /* Strict, so that the caller cannot take the share over. */
    acl_set_balance(was);
    memset(&p, 0xff, sizeof p);
    check(acl_parallel(&ex, 2, record, &p) == 0, "job after a rescue failed");
    check(p.cpu[1] == worker_cpu, "after a rescue, CPU %d's share ran on CPU %d", worker_cpu,
          p.cpu[1]);
    acl_release_caller();
}

/* Adaptive, a job whose only share is a worker's, so that the caller runs
 * none (another CPU's): that worker, held back before it starts, is moved
 * onto the caller's CPU, and runs its next share on its own CPU again. */
static void check_unstarted_rescue(int ncores, int caller_cpu, int worker_cpu)
{
    /* A first job pins the caller to caller_cpu. */
    int weights[CPU_SETSIZE] = {0};
    weights[caller_cpu] = 1;
    atomic_int done = 0;
    check(acl_parallel(&(acl_exec){ncores, weights, 1}, 1, count_units, &done) == 0,
          "pinning job failed");
    weights[caller_cpu] = 0;
    weights[worker_cpu] = 1;
    const acl_exec ex = {ncores, weights, 4};
    placement p;
    memset(&p, 0xff, sizeof p);
    acl_pool_test_stall(worker_cpu, 30.0);
    const acl_balance was = acl_set_balance(ACL_BALANCE_ADAPTIVE);
    check(acl_parallel(&ex, 4, record, &p) == 0, "stalled job failed: %s", acl_last_error());
    acl_set_balance(was);
    acl_pool_test_stall(-1, 0);
    check(p.cpu[0] == caller_cpu,
          "the worker of CPU %d, held back, was not moved to the "
          "caller's CPU %d (it ran on %d)",
          worker_cpu, caller_cpu, p.cpu[0]);
    memset(&p, 0xff, sizeof p);
    check(acl_parallel(&ex, 4, record, &p) == 0, "job after a rescue failed");
    check(p.cpu[0] == worker_cpu, "after a rescue, CPU %d's share ran on CPU %d", worker_cpu,
          p.cpu[0]);
    acl_release_caller();
}

static void *spin_on(void *arg)
{
    while (!atomic_load((atomic_int *)arg)) {}
    return NULL;
}

static double clock_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One adaptive program run of `c`: one job of 64 units (each checked to run
 * exactly once), then ms[way] of the caller's own work (the way the run
 * went, ACL_POOL_SHARED or ACL_POOL_ALONE), beside a thread busy on
 * caller_cpu throughout when `neighbour` (the run's first job pins the caller
 * there, where the two then take turns).  Returns whether the job ran alone:
 * every unit on the calling thread, which stayed unpinned.  A caller that
 * shares a job stays pinned to its CPU until acl_release_caller. */
static int one_run(acl_pool_choice *c, const acl_exec *ex, int caller_cpu, int neighbour,
                   const double *ms, const cpu_set_t *own)
{
    atomic_int stop = 0;
    pthread_t busy;
    if (neighbour) {
        pthread_attr_t attr;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(caller_cpu, &one);
        pthread_attr_init(&attr);
        pthread_attr_setaffinity_np(&attr, sizeof one, &one);
        pthread_create(&busy, &attr, spin_on, &stop);
        pthread_attr_destroy(&attr);
    }
    busy_for_ms(3); /* past the last watched run's 2 ms */
    tally t;
    memset(&t, 0, sizeof t);
    const acl_balance was = acl_set_balance(ACL_BALANCE_ADAPTIVE);
    acl_pool_run_begin(c);
    check(acl_parallel(ex, 64, tally_units, &t) == 0, "job of a run failed: %s", acl_last_error());
    cpu_set_t after;
    sched_getaffinity(0, sizeof after, &after);
    busy_for_ms(ms[c->way]);
    acl_pool_run_end(c);
    acl_set_balance(was);
    if (neighbour) {
        atomic_store(&stop, 1);
        pthread_join(busy, NULL);
    }
    acl_release_caller();
    sched_setaffinity(0, sizeof *own, own);
    int others = 0;
    for (int u = 0; u < 64; u++) others += atomic_load(&t.runs[u]) != 1;
    check(others == 0, "%d units did not run exactly once", others);
    const int alone = CPU_EQUAL(&after, own) && atomic_load(&t.ranks) == 1;
    check(alone == (c->way == ACL_POOL_ALONE), "a run that went %s %s its job",
          c->way == ACL_POOL_ALONE ? "alone" : "shared", alone ? "ran alone" : "shared");
    return alone;
}

/* A program run in which the caller shared its CPU with a busy thread makes
 * its next runs a choice between going shared and alone: each is timed (the
 * first shared run after runs alone is not), the faster kept, the slower
 * tried again once its last time is 100 ms and ACL_POOL_RETRY_RUNS of its
 * runs old; alone goes on, contended or not, until the shared way's times
 * come back under it; then
 * without contention for ACL_POOL_CONTENDED_HOLD_MS the runs share again.
 * The runs' times are the test's own busy waits, milliseconds apart, so that
 * the choice does not hang on this machine's speed.  A run in which a worker
 * was rescued counts as contended too. */
static void check_choice(int ncores, int caller_cpu, int other_cpu, const cpu_set_t *own)
{
    FILE *schedstat = fopen("/proc/thread-self/schedstat", "r");
    if (!schedstat) {
        printf("no schedstat here: the caller's contention is not watched\n");
        return;
    }
    fclose(schedstat);
    int weights[CPU_SETSIZE] = {0};
    weights[caller_cpu] = weights[other_cpu] = 1;
    const acl_exec ex = {ncores, weights, 64};
    acl_pool_test_stall(-1, 0);
    const double shared_slow[2] = {12, 3}, shared_fast[2] = {0, 3};
    acl_pool_choice c = {.way = ACL_POOL_SHARED};
    check(!one_run(&c, &ex, caller_cpu, 1, shared_slow, own), "a first run did not share its job");
    check(c.contended_until > 0, "a run sharing CPU %d with a busy thread was not found contended",
          caller_cpu);
    const double contended_at = clock_ms(CLOCK_MONOTONIC);
    /* Alone never timed: tried, and its workers left asleep (polling through
     * it, they took the core the system would move the caller to). */
    const double cpu0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID), wall0 = clock_ms(CLOCK_MONOTONIC);
    acl_pool_wake(&ex);
    check(one_run(&c, &ex, caller_cpu, 0, shared_slow, own),
          "after a contended run, no run went alone");
    const double cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - cpu0,
                 wall = clock_ms(CLOCK_MONOTONIC) - wall0;
    check(cpu < 1.5 * wall, "workers polled through a run alone: %.1f ms of CPU in %.1f ms", cpu,
          wall);
    /* Past the hold, and past shared's first retry however long the
     * contended run took (a sanitiser's or a loaded machine's). */
    const double loop_ms =
        fmax(2 * ACL_POOL_CONTENDED_HOLD_MS, ACL_POOL_RETRY_RUNS * c.ms[ACL_POOL_SHARED] + 150);
    int runs[2] = {0}, late_alone = 0;
    while (clock_ms(CLOCK_MONOTONIC) - contended_at < loop_ms) {
        const int alone = one_run(&c, &ex, caller_cpu, 0, shared_slow, own);
        runs[alone]++;
        late_alone += alone && clock_ms(CLOCK_MONOTONIC) - contended_at >
                                   ACL_POOL_CONTENDED_HOLD_MS + shared_slow[ACL_POOL_ALONE];
    }
    /* Shared, 12 ms or more, is tried again 240 ms or more after its last
     * time (two runs: the first, waking its workers, is not timed), so
     * twice at most in loop_ms. */
    check(runs[0] >= 2 && runs[0] <= 4 && runs[0] < runs[1],
          "alone, the faster way, was not kept, shared tried again every %.0f of its runs (%d runs "
          "shared, %d alone)",
          ACL_POOL_RETRY_RUNS, runs[0], runs[1]);
    check(late_alone > 0, "runs stopped going alone, the faster way, %.0f ms after contention",
          ACL_POOL_CONTENDED_HOLD_MS);
    int shared_in_a_row = 0;
    for (const double t0 = clock_ms(CLOCK_MONOTONIC);
         shared_in_a_row < 3 && clock_ms(CLOCK_MONOTONIC) - t0 < 3000;)
        shared_in_a_row =
            one_run(&c, &ex, caller_cpu, 0, shared_fast, own) ? 0 : shared_in_a_row + 1;
    check(shared_in_a_row == 3, "the shared way, faster again, was not taken back within 3 s");

    /* Alone slower than shared: shared is kept. */
    acl_pool_choice d = {.way = ACL_POOL_SHARED};
    const double alone_slow[2] = {20, 60};
    one_run(&d, &ex, caller_cpu, 1, alone_slow, own);
    check(one_run(&d, &ex, caller_cpu, 0, alone_slow, own),
          "after a contended run, no run went alone");
    const double shared_ms = d.ms[ACL_POOL_SHARED];
    check(!one_run(&d, &ex, caller_cpu, 0, alone_slow, own),
          "shared, the faster way, was not kept");
    check(d.ms[ACL_POOL_SHARED] == shared_ms, "the first shared run after a run alone was timed");
    check(!one_run(&d, &ex, caller_cpu, 0, alone_slow, own),
          "shared, the faster way, was not kept");
    check(d.ms[ACL_POOL_SHARED] != shared_ms,
          "the second shared run after a run alone was not timed");

    /* A rescue makes a run contended. */
    acl_pool_choice e = {.way = ACL_POOL_SHARED};
    sleeper s = {.cpu_after = -1};
    const acl_balance was = acl_set_balance(ACL_BALANCE_ADAPTIVE);
    acl_pool_run_begin(&e);
    check(acl_parallel(&(acl_exec){ncores, weights, 2}, 2, sleep_once, &s) == 0,
          "rescue job failed: %s", acl_last_error());
    acl_pool_run_end(&e);
    acl_set_balance(was);
    acl_release_caller();
    acl_pool_test_stall(-1, 0); /* the rescued worker's rest over */
    check(s.cpu_after == caller_cpu && e.contended_until > 0,
          "a run whose worker was rescued (woke on CPU %d) was not found contended", s.cpu_after);
}

/* Jobs spaced so that the workers go to sleep between them (the pool spins
 * 50 us first): every one must be woken, and a wake-up lost would hang here.
 * Without stealing, nothing else would run a sleeping worker's share.  Some
 * are preceded by acl_pool_wake, right before the job or long enough before
 * it that the nudged workers have gone back to sleep. */
static void check_wakeups(int ncores, const int *cpus, int ncpus, int jobs)
{
    int weights[CPU_SETSIZE] = {0};
    for (int i = 0; i < ncpus; i++) weights[cpus[i]] = 1;
    const acl_exec ex = {ncores, weights, ncpus};
    int lost = 0;
    for (int j = 0; j < jobs; j++) {
        atomic_int done = 0;
        if (acl_parallel(&ex, ncpus, count_units, &done) != 0 || atomic_load(&done) != ncpus)
            lost++;
        if (j % 3 == 0) acl_pool_wake(&ex);
        if (j % 2) nanosleep(&(struct timespec){0, 200000}, NULL);
    }
    check(lost == 0, "%d of %d jobs did not run every share", lost, jobs);
}

int main(int argc, char **argv)
{
    int cases = 300;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--cases")) cases = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed")) rng_state = strtoull(argv[++i], NULL, 10);
    }
    cpu_set_t own;
    sched_getaffinity(0, sizeof own, &own);
    int cpus[CPU_SETSIZE], ncpus = 0;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &own)) cpus[ncpus++] = i;
    const int ncores = cpus[ncpus - 1] + 1;
    printf("CPUs available: %d (highest %d)\n", ncpus, ncores - 1);

    int weights[CPU_SETSIZE];
    for (int c = 0; c < cases; c++) {
        memset(weights, 0, sizeof weights);
        int active = 0;
        for (int i = 0; i < ncpus; i++)
            if (rnd(0, 2)) active += (weights[cpus[i]] = rnd(1, 4)) > 0;
        if (!active) weights[cpus[rnd(0, ncpus - 1)]] = 1;
        check_case(weights, ncores, rnd(1, MAX_UNITS), &own);
    }
    /* A caller already pinned to one CPU keeps that pinning, whichever CPU
     * its job's first share goes to. */
    for (int i = 0; i < ncpus; i++) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[i], &one);
        memset(weights, 0, sizeof weights);
        weights[cpus[i]] = 1;
        sched_setaffinity(0, sizeof one, &one);
        check_case(weights, ncores, 64, &one);
    }
    sched_setaffinity(0, sizeof own, &own);
    check_wakeups(ncores, cpus, ncpus, 4000);
    /* Adaptive: the caller runs the first share, so only a later CPU's
     * worker can be held back. */
    for (int c = 0; c < cases / 2; c++) {
        memset(weights, 0, sizeof weights);
        for (int i = 0; i < ncpus; i++) weights[cpus[i]] = rnd(0, 3);
        weights[cpus[0]] += 1;
        const int stalled = ncpus > 1 && rnd(0, 1) ? cpus[rnd(1, ncpus - 1)] : -1;
        check_adaptive(weights, ncores, rnd(1, MAX_UNITS), stalled);
    }
    if (ncpus > 1)
        for (int i = 0; i < 10; i++) check_rescue(ncores, cpus[0], cpus[ncpus - 1]);
    if (ncpus > 1) check_unstarted_rescue(ncores, cpus[0], cpus[ncpus - 1]);
    /* Last: contended runs choose between sharing and running alone. */
    if (ncpus > 1) check_choice(ncores, cpus[0], cpus[ncpus - 1], &own);
    return test_summary();
}
