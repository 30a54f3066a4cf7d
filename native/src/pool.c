#define _GNU_SOURCE
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define ACL_MAX_CPUS 1024
#define WORKER_STACK_BYTES (16u << 20)
/* Spin this many polls before sleeping: waking a sleeping thread costs tens of
 * microseconds, more than many small convolutions take. */
#define SPIN_POLLS 20000

typedef struct {
    pthread_t thread;
    int cpu;
    int started;
    /* The last generation this worker has seen, set before it starts so that a
     * worker created for a job cannot miss that job's generation bump. */
    unsigned seen;
    /* The range this worker runs, valid only in generation job_gen; 0 (never a
     * live generation) when it has nothing.  A worker that wakes late for an
     * earlier generation therefore never reads a range still being written. */
    atomic_uint job_gen;
    int begin, end, rank;
} worker;

static struct {
    pthread_mutex_t submit;  /* one parallel job at a time */
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    atomic_uint generation;
    atomic_int pending;
    acl_task_fn fn;
    void *ctx;
    worker workers[ACL_MAX_CPUS];
} pool = {
    .submit = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
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

int acl_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    int last = -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set)) last = i;
    return last + 1;
}

static void describe_available(char *buf, size_t len)
{
    cpu_set_t set;
    size_t used = 0;
    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    for (int i = 0; i < CPU_SETSIZE && used + 8 < len; i++)
        if (CPU_ISSET(i, &set))
            used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", i);
}

int acl_exec_check(const acl_exec *ex)
{
    if (!ex || !ex->weights || ex->ncores <= 0)
        return acl_fail("execution config has no core weights");
    if (ex->ncores > ACL_MAX_CPUS)
        return acl_fail("execution config names %d cores; at most %d are supported", ex->ncores,
                        ACL_MAX_CPUS);
    if (ex->workloads < 1) return acl_fail("workloads must be >= 1, got %d", ex->workloads);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return acl_fail("cannot read this process's CPU affinity: %s", strerror(errno));
    int active = 0;
    for (int i = 0; i < ex->ncores; i++) {
        if (ex->weights[i] < 0)
            return acl_fail("weight of CPU %d is negative (%d)", i, ex->weights[i]);
        if (ex->weights[i] == 0) continue;
        if (i >= CPU_SETSIZE || !CPU_ISSET(i, &set)) {
            char avail[256];
            describe_available(avail, sizeof avail);
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

static void finish_one(void)
{
    if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.lock);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    unsigned seen = w->seen;
    for (;;) {
        unsigned gen;
        int polls = 0;
        while ((gen = atomic_load_explicit(&pool.generation, memory_order_acquire)) == seen) {
            if (++polls < SPIN_POLLS) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&pool.lock);
            while (atomic_load(&pool.generation) == seen) pthread_cond_wait(&pool.wake, &pool.lock);
            pthread_mutex_unlock(&pool.lock);
        }
        seen = gen;
        if (atomic_load_explicit(&w->job_gen, memory_order_acquire) == gen) {
            pool.fn(pool.ctx, w->begin, w->end, w->rank);
            finish_one();
        }
    }
    return NULL;
}

static int start_worker(int cpu)
{
    worker *w = &pool.workers[cpu];
    pthread_attr_t attr;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WORKER_STACK_BYTES);
    int rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    w->cpu = cpu;
    w->seen = atomic_load(&pool.generation);
    if (rc == 0) rc = pthread_create(&w->thread, &attr, worker_main, w);
    pthread_attr_destroy(&attr);
    if (rc != 0) return acl_fail("cannot start a thread pinned to CPU %d: %s", cpu, strerror(rc));
    w->started = 1;
    return 0;
}

int acl_parallel(const acl_exec *ex, int units, acl_task_fn fn, void *ctx)
{
    if (acl_exec_check(ex) != 0) return -1;
    if (units <= 0) return 0;
    pthread_mutex_lock(&pool.submit);
    long total = 0;
    for (int i = 0; i < ex->ncores; i++) total += ex->weights[i];
    long cum = 0;
    int rank = 0, busy = 0;
    unsigned next_gen = atomic_load(&pool.generation) + 1;
    if (next_gen == 0) next_gen = 1;  /* 0 marks "no work" in job_gen */
    for (int cpu = 0; cpu < ex->ncores; cpu++) {
        if (ex->weights[cpu] == 0) continue;
        worker *w = &pool.workers[cpu];
        if (!w->started && start_worker(cpu) != 0) {
            pthread_mutex_unlock(&pool.submit);
            return -1;
        }
        w->begin = (int)(units * cum / total);
        cum += ex->weights[cpu];
        w->end = (int)(units * cum / total);
        w->rank = rank++;
        int has_work = w->begin < w->end;
        atomic_store_explicit(&w->job_gen, has_work ? next_gen : 0, memory_order_release);
        busy += has_work;
    }
    pool.fn = fn;
    pool.ctx = ctx;
    atomic_store(&pool.pending, busy);
    pthread_mutex_lock(&pool.lock);
    atomic_store_explicit(&pool.generation, next_gen, memory_order_release);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    /* The caller blocks rather than spins: it is not pinned, and spinning would
     * take a CPU from the worker pinned there until the scheduler preempts it. */
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.pending) > 0) pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.submit);
    return 0;
}
