#include "repeat.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "request.h"

/* Whether the first `count` times pin their median down to p->ci_target;
 * `scratch` receives a copy to sort. */
static int median_known(const repeat_policy *p, const double *times, double *scratch, int count)
{
    memcpy(scratch, times, (size_t)count * sizeof *times);
    const double ci = median_ci_rel(scratch, (size_t)count);
    return ci >= 0 && ci <= p->ci_target;
}

int repeat_runs(const repeat_policy *p, repeat_fn run, void *ctx)
{
    for (int i = 0; i < p->warmup; i++)
        if (run(ctx, -1) < 0) return -1;
    double *times = NULL, *scratch = NULL;
    if (p->ci_target > 0) {
        times = malloc((size_t)p->max_repeats * sizeof *times);
        scratch = malloc((size_t)p->max_repeats * sizeof *scratch);
        if (!times || !scratch) {
            free(times);
            free(scratch);
            return request_fail("out of memory for %d run times", p->max_repeats);
        }
    }
    double total = 0;
    int count = 0;
    while (count < p->max_repeats) {
        double ms = run(ctx, count);
        if (ms < 0) {
            count = -1;
            break;
        }
        if (times) times[count] = ms;
        total += ms;
        count++;
        if (count < p->min_repeats || total < p->min_total_ms) continue;
        if (!times || (p->max_total_ms > 0 && total >= p->max_total_ms) ||
            median_known(p, times, scratch, count))
            break;
    }
    free(times);
    free(scratch);
    return count;
}
