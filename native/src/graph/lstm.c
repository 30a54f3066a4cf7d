/* One direction of an LSTM (aclgraph.h).  The steps run in order, each one
 * call over the hidden units split across the cores: a unit's four gates
 * need the whole previous hidden state, and its new cell and hidden values
 * need only its own four gates, so a thread computes its units start to end
 * and the steps' calls are the only barriers.
 *
 * The weights are packed transposed, [input][4 hidden] and [hidden][4 hidden]:
 * a unit block's gate sums then grow by a broadcast input value times a
 * contiguous row of weights, which vectorises without reassociating a dot
 * product, so every split gives the same bits. */
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "graph_impl.h"

/* Hidden units whose gate sums a thread keeps together. */
#define UNIT_BLOCK 16

typedef struct {
    const float *x, *h0, *c0;
    float *y;         /* [seq][batch][hidden], then the cell state [batch][hidden] */
    float *wt, *rt;   /* [input][4 hidden], [hidden][4 hidden] */
    float *bias;      /* [4 hidden] */
    int seq, batch, input, hidden, reverse;
} lstm_params;

/* One step: its input rows and the hidden state it reads and writes. */
typedef struct {
    const lstm_params *p;
    const float *x;       /* [batch][input] */
    const float *h_prev;  /* [batch][hidden] */
    float *h;             /* [batch][hidden] */
} lstm_step;

static inline float sigmoid(float v) { return 1.0f / (1.0f + acl_exp(-v)); }

/* tanh(v) = 1 - 2 / (e^2v + 1), with the activations' vectorisable exp. */
static inline float tanh_exp(float v) { return 1.0f - 2.0f / (acl_exp(2.0f * v) + 1.0f); }

/* gates[g][j] += v * row[g * hidden + u0 + j] for the four gates. */
static inline void add_row(float gates[4][UNIT_BLOCK], float v, const float *row, int hidden,
                           int u0, int len)
{
    for (int g = 0; g < 4; g++)
        for (int j = 0; j < len; j++) gates[g][j] += v * row[(size_t)g * hidden + u0 + j];
}

/* Hidden units [begin * UNIT_BLOCK, end * UNIT_BLOCK) of one step. */
static void lstm_blocks(const void *arg, size_t begin, size_t end)
{
    const lstm_step *st = arg;
    const lstm_params *p = st->p;
    const int H = p->hidden, H4 = 4 * p->hidden;
    for (int b = 0; b < p->batch; b++) {
        const float *x = st->x + (size_t)b * p->input, *h_prev = st->h_prev + (size_t)b * H;
        float *h = st->h + (size_t)b * H, *c = p->y + (size_t)p->seq * p->batch * H + (size_t)b * H;
        const int u_end = acl_min((int)end * UNIT_BLOCK, H);
        for (int u0 = (int)begin * UNIT_BLOCK; u0 < u_end; u0 += UNIT_BLOCK) {
            const int len = acl_min(UNIT_BLOCK, u_end - u0);
            float gates[4][UNIT_BLOCK];
            for (int g = 0; g < 4; g++)
                memcpy(gates[g], p->bias + (size_t)g * H + u0, (size_t)len * sizeof(float));
            for (int k = 0; k < p->input; k++)
                add_row(gates, x[k], p->wt + (size_t)k * H4, H, u0, len);
            for (int k = 0; k < H; k++)
                add_row(gates, h_prev[k], p->rt + (size_t)k * H4, H, u0, len);
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
        lstm_step st = {p, p->x + (size_t)t * p->batch * p->input, h_prev,
                        p->y + (size_t)t * step_floats};
        /* Hidden units in whole blocks, so that a split never cuts one. */
        if (graph_parallel(ex, (size_t)acl_div_up(p->hidden, UNIT_BLOCK),
                           (size_t)4 * (p->input + p->hidden) * UNIT_BLOCK, lstm_blocks, &st) != 0)
            return -1;
        h_prev = st.h;
    }
    return 0;
}

static void lstm_release(void *arg)
{
    lstm_params *p = arg;
    free(p->wt);
    free(p->rt);
    free(p->bias);
}

/* w [rows][cols] -> [cols][rows] */
static float *transposed(const float *w, int rows, int cols)
{
    float *t = malloc((size_t)rows * cols * sizeof *t);
    if (!t) return NULL;
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < cols; k++) t[(size_t)k * rows + r] = w[(size_t)r * cols + k];
    return t;
}

int graph_op_lstm(acl_graph *g, const acl_lstm_attrs *a, int nin, const acl_tensor *in,
                  const acl_tensor *out)
{
    size_t count;
    const int H = a->hidden;
    if (H < 1) return acl_fail("lstm: hidden must be >= 1, got %d", H);
    if (graph_check_ranked(g, "lstm", "input", &in[0], 3, &count) != 0) return -1;
    const int seq = in[0].dims[0], batch = in[0].dims[1], input = in[0].dims[2];
    const int state[2] = {batch, H}, want[3] = {seq + 1, batch, H};
    if (graph_check_ranked(g, "lstm", "input 2", &in[1], 2, &count) != 0 ||
        graph_check_dims("lstm", "input 2", &in[1], 2, state) != 0 ||
        graph_check_ranked(g, "lstm", "input 3", &in[2], 2, &count) != 0 ||
        graph_check_dims("lstm", "input 3", &in[2], 2, state) != 0 ||
        graph_check_ranked(g, "lstm", "output", out, 3, &count) != 0 ||
        graph_check_dims("lstm", "output", out, 3, want) != 0 ||
        graph_check_count("lstm", "w", a->w_count, (size_t)4 * H * input) != 0 ||
        graph_check_count("lstm", "r", a->r_count, (size_t)4 * H * H) != 0 ||
        graph_check_count("lstm", "bias", a->bias_count, (size_t)4 * H) != 0)
        return -1;
    /* The steps read x and the initial states while writing out. */
    for (int i = 0; i < 3; i++)
        if (graph_check_disjoint("lstm", out, i ? "an initial state" : "the input", &in[i], 0))
            return -1;
    lstm_params *p = calloc(1, sizeof *p);
    if (!p) return acl_fail("lstm: out of memory");
    *p = (lstm_params){graph_ptr(g, &in[0]), graph_ptr(g, &in[1]), graph_ptr(g, &in[2]),
                       graph_ptr(g, out), transposed(a->w, 4 * H, input),
                       transposed(a->r, 4 * H, H), malloc((size_t)4 * H * sizeof(float)),
                       seq, batch, input, H, a->reverse != 0};
    if (!p->wt || !p->rt || !p->bias) {
        lstm_release(p);
        free(p);
        return acl_fail("lstm: out of memory");
    }
    memcpy(p->bias, a->bias, (size_t)4 * H * sizeof(float));
    return graph_add(g, lstm_run, lstm_release, p);
}
