/* Small helpers every algorithm uses: timed stages, micro-kernel checks and
 * scratch reservations. */
#include <stdio.h>

#include "conv_impl.h"

typedef struct {
    acl_task_fn fn;
    void *ctx;
    int rows, units;
} row_split;

static void run_rows(void *arg, int unit_begin, int unit_end, int worker)
{
    const row_split *split = arg;
    int begin = (int)((long long)unit_begin * split->rows / split->units);
    int end = (int)((long long)unit_end * split->rows / split->units);
    if (begin < end) split->fn(split->ctx, begin, end, worker);
}

int conv_stage(const acl_exec *ex, int rows, acl_task_fn fn, void *ctx, double *ms)
{
    row_split split = {fn, ctx, rows, acl_min(ex->workloads, rows)};
    double start = acl_now_ms();
    int rc = acl_parallel(ex, split.units, run_rows, &split);
    *ms += acl_now_ms() - start;
    return rc;
}

int conv_check_ukernel(const char *algorithm, const acl_ukernel *uk, int k, int n)
{
    if (acl_ukernel_check(uk, k, n) == 0) return 0;
    /* acl_fail formats into the buffer acl_last_error() returns: copy first. */
    char reason[400];
    snprintf(reason, sizeof reason, "%s", acl_last_error());
    return acl_fail("%s with %s: %s", algorithm, uk->name, reason);
}

int conv_check_row_ukernel(const char *algorithm, const acl_ukernel *uk, int k, int n)
{
    if (uk->style == ACL_STYLE_INTERLEAVED)
        return acl_fail("%s reads A through row pointers and needs a hybrid or smallk "
                        "micro-kernel, got the interleaved %s",
                        algorithm, uk->name);
    return conv_check_ukernel(algorithm, uk, k, n);
}

size_t conv_scratch_reserve(acl_conv *conv, size_t bytes)
{
    /* Every buffer starts on a cache line, as acl_alloc's would. */
    size_t offset = conv->scratch_bytes;
    conv->scratch_bytes += (bytes + ACL_ALIGN - 1) / ACL_ALIGN * ACL_ALIGN;
    return offset;
}
