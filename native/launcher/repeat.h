/* The repeat loop every timed command shares (measure, graph_run): warm-up
 * runs, then timed runs until enough of them took long enough and, when
 * asked, until their median is known closely enough. */
#ifndef ACL_LAUNCHER_REPEAT_H
#define ACL_LAUNCHER_REPEAT_H

typedef struct {
    int warmup;
    int min_repeats, max_repeats;
    double min_total_ms;  /* the timed runs' sum must reach this too */
    /* Then go on until the median's 95% confidence interval is within
     * +-ci_target of it (0: do not), unless the timed runs' sum has reached
     * max_total_ms (0: no cap). */
    double ci_target;
    double max_total_ms;
} repeat_policy;

/* One run: index < 0 for a warm-up run, else the timed run's index.  Returns
 * its time in ms, or a negative number on failure with request_error() set. */
typedef double (*repeat_fn)(void *ctx, int index);

/* Runs p->warmup warm-ups, then timed runs until the policy is met or
 * max_repeats; returns how many runs were timed, or -1. */
int repeat_runs(const repeat_policy *p, repeat_fn run, void *ctx);

#endif
