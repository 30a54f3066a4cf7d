/* The persistent pool of pinned worker threads.
 *
 * acl_parallel() cuts `units` of work into contiguous ranges in proportion to
 * the weights of the active CPUs (in CPU-id order).  The calling thread runs
 * the first non-empty range itself, pinned to that range's CPU (and left
 * there for the next job, until acl_release_caller), unless that CPU has a
 * worker already, which then runs it; every other range goes to
 * a worker pinned to its CPU, created the first time a configuration needs
 * it and kept for the life of the process.  In the strict balance (the
 * default) every range runs on its own CPU, never on another that is done
 * early, so the per-core weights measured and planned are the ones that run;
 * in the adaptive balance of acl_set_balance a thread done early takes over
 * the rest of a late range.  Because a unit's result never depends on which
 * thread computes it, nor on how its range is cut, every weight vector and
 * either balance give bit-identical output.  units <= ACL_MAX_WORKLOADS.
 */
#ifndef ACL_POOL_H
#define ACL_POOL_H

#include "aclengine.h"

/* worker: the rank of the running thread among the active CPUs,
 * 0..active-1 (the caller is 0), for indexing per-worker scratch. */
typedef void (*acl_task_fn)(void *ctx, int unit_begin, int unit_end, int worker);

/* Checks an execution configuration: a CPU with a weight must exist, weights
 * are >= 0 with at least one positive, workloads >= 1. */
int acl_exec_check(const acl_exec *ex);

/* The number of CPUs with a non-zero weight. */
int acl_exec_active(const acl_exec *ex);

/* Wakes the sleeping workers of ex's CPUs without giving them work: they
 * poll for the next job a while, then sleep again.  A run calls it first, so
 * that the wake-up (tens of microseconds on a VM) overlaps the caller's own
 * work instead of delaying the first job that needs them.  Best effort: a
 * worker just going to sleep may miss it. */
void acl_pool_wake(const acl_exec *ex);

/* Around a program run in the adaptive balance.  Meanwhile the workers poll
 * for their next job rather than sleep, unless the run goes alone (below),
 * giving them none.
 *
 * A run goes one of two ways: shared (its jobs split over the pinned
 * workers) or alone (every job on the calling thread, unpinned, wherever the
 * system finds it a free core).  Shared, unless the program's runs were found
 * contended in the last ACL_POOL_CONTENDED_HOLD_MS: a worker descheduled
 * holding units was rescued, or the caller, pinned to its CPU, waited behind
 * another thread there for a fifth of a watched run (one every 2 ms at most).
 * Then each way is timed (shared from its second run after runs alone on)
 * and the faster kept, the slower timed again once its last time is 100 ms
 * and ACL_POOL_RETRY_RUNS of its runs old; runs alone go on while alone is
 * the faster.  The choice is the program's own, zeroed to start. */
#define ACL_POOL_CONTENDED_HOLD_MS 250.0
#define ACL_POOL_RETRY_RUNS 20.0
typedef struct {
    double ms[2];           /* each way's mean run time (0: not timed) */
    double at_ms[2];        /* when each was last timed (acl_now_ms) */
    double contended_until; /* the ways are chosen between until then */
    double began;
    int way;                /* this run's */
    int waking;             /* this run shares after runs alone: not timed */
} acl_pool_choice;
enum { ACL_POOL_SHARED = 0, ACL_POOL_ALONE = 1 };
void acl_pool_run_begin(acl_pool_choice *choice);
void acl_pool_run_end(acl_pool_choice *choice);

/* Runs fn over [0, units) split by ex; returns when every range is done. */
int acl_parallel(const acl_exec *ex, int units, acl_task_fn fn, void *ctx);

#endif
