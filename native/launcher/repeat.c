#include "repeat.h"

int repeat_runs(const repeat_policy *p, repeat_fn run, void *ctx)
{
    for (int i = 0; i < p->warmup; i++)
        if (run(ctx, -1) < 0) return -1;
    double total = 0;
    int count = 0;
    while (count < p->max_repeats) {
        double ms = run(ctx, count);
        if (ms < 0) return -1;
        total += ms;
        count++;
        if (count >= p->min_repeats && total >= p->min_total_ms) break;
    }
    return count;
}
