/* The recurrence of one direction of an LSTM (aclgraph.h): the input's gate
 * sums come computed for every step (one GEMM before it), so a step adds
 * only the previous hidden state times R.  The steps run in order, each one
 * call over the hidden units split across the cores: a unit's four gates
 * need the whole previous hidden state, and its new cell and hidden values
 * need only its own four gates, so a thread computes its units start to end
 * and the steps' calls are the only barriers.
 *
 * R is packed by blocks of UNIT_BLOCK hidden units, [block][hidden][4 gates]
 * [UNIT_BLOCK] (the last block zero-padded), so that a block streams its
 * part of R in one contiguous run (R, 4 MB at 512 units, is read again at
 * every step) and its gate sums grow by a broadcast hidden value times a
 * contiguous row, which vectorises without reassociating a dot product:
 * every split gives the same bits. */
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "graph_impl.h"

/* Hidden units whose gate sums a thread keeps together. */
#define UNIT_BLOCK 16

typedef struct {
    const float *gx, *h0, *c0;
    float *y;         /* [seq][batch][hidden], then the cell state [batch][hidden] */
    float *rp;        /* R packed by unit blocks */
    int seq, batch, hidden, reverse;
} lstm_params;

/* One step: its input gate sums and the hidden state it reads and writes. */
typedef struct {
    const lstm_params *p;
    const float *gx;      /* [batch][4 hidden] */
    const float *h_prev;  /* [batch][hidden] */
    float *h;             /* [batch][hidden] */
} lstm_step;

static inline float sigmoid(float v) { return 1.0f / (1.0f + acl_exp(-v)); }

/* tanh(v) = 1 - 2 / (e^2v + 1), with the activations' vectorisable exp. */
static inline float tanh_exp(float v) { return 1.0f - 2.0f / (acl_exp(2.0f * v) + 1.0f); }

/* Hidden units [begin * UNIT_BLOCK, end * UNIT_BLOCK) of one step. */
static void lstm_blocks(const void *arg, size_t begin, size_t end)
{
    const lstm_step *st = arg;
    const lstm_params *p = st->p;
    const int H = p->hidden;
    for (int b = 0; b < p->batch; b++) {
        const float *gx = st->gx + (size_t)b * 4 * H, *h_prev = st->h_prev + (size_t)b * H;
        float *h = st->h + (size_t)b * H, *c = p->y + (size_t)p->seq * p->batch * H + (size_t)b * H;
        for (size_t blk = begin; blk < end; blk++) {
            const int u0 = (int)blk * UNIT_BLOCK, len = acl_min(UNIT_BLOCK, H - u0);
            float gates[4][UNIT_BLOCK] = {{0}};
            for (int g = 0; g < 4; g++)
                memcpy(gates[g], gx + (size_t)g * H + u0, (size_t)len * sizeof(float));
            const float *row = p->rp + blk * (size_t)H * 4 * UNIT_BLOCK;
            for (int k = 0; k < H; k++, row += 4 * UNIT_BLOCK)
                for (int g = 0; g < 4; g++)
                    for (int j = 0; j < UNIT_BLOCK; j++)
                        gates[g][j] += h_prev[k] * row[g * UNIT_BLOCK + j];
            for (int j = 0; j < len; j++) {
                const float i = sigmoid(gates[0][j]), o = sigmoid(gates[1][j]);
                const float f = sigmoid(gates[2][j]), cell = tanh_exp(gates[3][j]);
                c[u0 + j] = f * c[u0 + j] + i * cell;
                h[u0 + j] = o * tanh_exp(c[u0 + j]);
            }
        }
    }
}

static int lstm_run(const void *arg, const acl_exec *ex)
{
    const lstm_params *p = arg;
    const size_t step_floats = (size_t)p->batch * p->hidden;
    float *cell = p->y + (size_t)p->seq * step_floats;
    memmove(cell, p->c0, step_floats * sizeof(float));
    const float *h_prev = p->h0;
    for (int i = 0; i < p->seq; i++) {
        const int t = p->reverse ? p->seq - 1 - i : i;
        lstm_step st = {p, p->gx + (size_t)t * 4 * step_floats, h_prev,
                        p->y + (size_t)t * step_floats};
        /* Hidden units in whole blocks, so that a split never cuts one. */
        if (graph_parallel(ex, (size_t)acl_div_up(p->hidden, UNIT_BLOCK),
                           (size_t)4 * p->hidden * UNIT_BLOCK, lstm_blocks, &st) != 0)
            return -1;
        h_prev = st.h;
    }
    return 0;
}

static void lstm_release(void *arg)
{
    lstm_params *p = arg;
    free(p->rp);
}

/* r [4 hidden][hidden] -> [block][hidden][4][UNIT_BLOCK], units past hidden 0. */
static float *packed_by_blocks(const float *r, int H)
{
    const int blocks = acl_div_up(H, UNIT_BLOCK);
    float *rp = calloc((size_t)blocks * H * 4 * UNIT_BLOCK, sizeof *rp);
    if (!rp) return NULL;
    for (int blk = 0; blk < blocks; blk++)
        for (int k = 0; k < H; k++)
            for (int g = 0; g < 4; g++)
                for (int j = 0; j < UNIT_BLOCK && blk * UNIT_BLOCK + j < H; j++)
                    rp[(((size_t)blk * H + k) * 4 + g) * UNIT_BLOCK + j] =
                        r[((size_t)g * H + blk * UNIT_BLOCK + j) * H + k];
    return rp;
}

int graph_op_lstm(acl_graph *g, const acl_lstm_attrs *a, int nin, const acl_tensor *in,
                  const acl_tensor *out)
{
    size_t count;
    const int H = a->hidden;
    if (H < 1) return acl_fail("lstm: hidden must be >= 1, got %d", H);
    if (graph_check_ranked(g, "lstm", "input", &in[0], 3, &count) != 0) return -1;
    const int seq = in[0].dims[0], batch = in[0].dims[1];
    if (in[0].dims[2] != 4 * H)
        return acl_fail("lstm: the input holds gate sums: its last dim must be 4 hidden = %d, "
                        "got %d",
                        4 * H, in[0].dims[2]);
    const int state[2] = {batch, H}, want[3] = {seq + 1, batch, H};
    if (graph_check_ranked(g, "lstm", "input 2", &in[1], 2, &count) != 0 ||
        graph_check_dims("lstm", "input 2", &in[1], 2, state) != 0 ||
        graph_check_ranked(g, "lstm", "input 3", &in[2], 2, &count) != 0 ||
        graph_check_dims("lstm", "input 3", &in[2], 2, state) != 0 ||
        graph_check_ranked(g, "lstm", "output", out, 3, &count) != 0 ||
        graph_check_dims("lstm", "output", out, 3, want) != 0 ||
        graph_check_count("lstm", "r", a->r_count, (size_t)4 * H * H) != 0)
        return -1;
    /* The steps read gx and the initial states while writing out. */
    for (int i = 0; i < 3; i++)
        if (graph_check_disjoint("lstm", out, i ? "an initial state" : "the input", &in[i], 0))
            return -1;
    lstm_params *p = calloc(1, sizeof *p);
    if (!p) return acl_fail("lstm: out of memory");
    *p = (lstm_params){graph_ptr(g, &in[0]),
                       graph_ptr(g, &in[1]),
                       graph_ptr(g, &in[2]),
                       graph_ptr(g, out),
                       packed_by_blocks(a->r, H),
                       seq,
                       batch,
                       H,
                       a->reverse != 0};
    if (!p->rp) {
        free(p);
        return acl_fail("lstm: out of memory");
    }
    return graph_add(g, lstm_run, lstm_release, p);
}
