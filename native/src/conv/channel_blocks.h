/* What the direct NHWC kernels (depthwise_channel_block, grouped_channel_block,
 * direct_nhwc, grouped_direct) share:
 * output channels in blocks of one vector, a run of pixels whose sums stay in
 * registers, and the weights packed block-major with the bias, zero-padded
 * to whole blocks so that a partial last block needs no special weights. */
#ifndef ACL_CHANNEL_BLOCKS_H
#define ACL_CHANNEL_BLOCKS_H

#include <string.h>

#include "conv_impl.h"
#include "vector_select.h"

/* Output channels per block, as a GNU C vector that each ISA lowers to its
 * own registers: one AVX-512 register, or one AVX2 / two NEON registers.
 * Output pixels whose sums stay in registers together: 8 of AVX-512's 32
 * registers; elsewhere 4, which is 8 of NEON's 32 or 4 of AVX2's 16. */
#if defined(__AVX512F__)
#define CHANNEL_BLOCK 16
#define PIXEL_RUN 8
#else
#define CHANNEL_BLOCK 8
#define PIXEL_RUN 4
#endif
typedef float channel_vec __attribute__((vector_size(CHANNEL_BLOCK * sizeof(float))));
typedef int channel_mask __attribute__((vector_size(CHANNEL_BLOCK * sizeof(float))));

static inline channel_vec load_vec(const float *p)
{
    channel_vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The first len (1..CHANNEL_BLOCK) floats of a vector at p, the other lanes
 * zero / untouched: one masked access where the ISA has it.  A copy of
 * variable length was a library call per pixel, which made the last, partial
 * block of a layer cost more than a whole one (GhostNet's 8-channel
 * depthwise 3x3 on 112x112 took twice onnxruntime's time). */
#if defined(__AVX512F__)
#include <immintrin.h>
static inline __mmask16 lanes_mask(int len) { return (__mmask16)((1u << len) - 1); }
static inline channel_vec load_lanes(const float *p, int len)
{
    return (channel_vec)_mm512_maskz_loadu_ps(lanes_mask(len), p);
}
static inline void store_lanes(float *p, channel_vec v, int len)
{
    _mm512_mask_storeu_ps(p, lanes_mask(len), (__m512)v);
}
#elif defined(__AVX2__)
#include <immintrin.h>
static inline __m256i lanes_mask(int len)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(len), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline channel_vec load_lanes(const float *p, int len)
{
    return (channel_vec)_mm256_maskload_ps(p, lanes_mask(len));
}
static inline void store_lanes(float *p, channel_vec v, int len)
{
    _mm256_maskstore_ps(p, lanes_mask(len), (__m256)v);
}
#else
static inline channel_vec load_lanes(const float *p, int len)
{
    channel_vec v = {0};
    memcpy(&v, p, (size_t)len * sizeof(float));
    return v;
}
static inline void store_lanes(float *p, channel_vec v, int len)
{
    memcpy(p, &v, (size_t)len * sizeof(float));
}
#endif

/* The bounds of a convolution's ReLU or Clip, applied to the sums in
 * registers before the store; 0 for other activations, which stay a pass
 * over the output. */
typedef struct {
    int on;
    channel_vec lo, hi;
} channel_clamp;

static inline channel_clamp channel_clamp_of(const acl_conv_shape *s)
{
    float a, b, lo = 0.0f, hi = 0.0f;
    acl_conv_act_params(s, &a, &b);
    channel_clamp c = {.on = acl_act_bounds(s->act, a, b, &lo, &hi)};
    c.lo = lo - (channel_vec){0};
    c.hi = hi - (channel_vec){0};
    return c;
}

static inline channel_vec channel_clamp_apply(const channel_clamp *c, channel_vec v)
{
    if (c->on) VEC_CLAMP(v, c->lo, c->hi, channel_mask);
    return v;
}

/* What a run's parallel stage hands each worker. */
typedef struct {
    const acl_conv *conv;
    const conv_io *io;
} channel_blocks_ctx;

/* conv->impl of the channel-block kernels; part of grouped_direct's. */
typedef struct {
    float *weight;  /* [blocks][per_block floats], block b holding channels b*CHANNEL_BLOCK.. */
    float *bias;    /* [blocks * CHANNEL_BLOCK] */
} channel_blocks;

/* Allocates st's weights of per_block floats per block of output channels,
 * zeroed, and the bias copied. */
static inline int channel_blocks_init(channel_blocks *st, const acl_conv *conv, size_t per_block)
{
    const int blocks = acl_div_up(conv->s.oc, CHANNEL_BLOCK);
    st->weight = acl_alloc((size_t)blocks * per_block * sizeof(float));
    st->bias = acl_alloc((size_t)blocks * CHANNEL_BLOCK * sizeof(float));
    if (!st->weight || !st->bias) return -1;
    memset(st->weight, 0, (size_t)blocks * per_block * sizeof(float));
    memset(st->bias, 0, (size_t)blocks * CHANNEL_BLOCK * sizeof(float));
    memcpy(st->bias, conv->bias, (size_t)conv->s.oc * sizeof(float));
    return 0;
}

/* st initialised with the OIHW weights packed [block][tap][ci][CHANNEL_BLOCK],
 * ci < cg: each tap's input channel of the block's group against a vector
 * of its output channels. */
static inline int channel_blocks_pack(channel_blocks *st, const acl_conv *conv, const float *weight)
{
    const int taps = conv->d.taps, cg = conv->d.cg;
    const size_t per_block = (size_t)taps * cg * CHANNEL_BLOCK;
    if (channel_blocks_init(st, conv, per_block) != 0) return -1;
    for (int o = 0; o < conv->s.oc; o++) {
        float *block = st->weight + (size_t)(o / CHANNEL_BLOCK) * per_block;
        for (int t = 0; t < taps; t++)
            for (int ci = 0; ci < cg; ci++)
                block[((size_t)t * cg + ci) * CHANNEL_BLOCK + o % CHANNEL_BLOCK] =
                    weight[((size_t)o * cg + ci) * taps + t];
    }
    return 0;
}

static inline void channel_blocks_free(channel_blocks *st)
{
    acl_free(st->weight);
    acl_free(st->bias);
}

/* conv->impl, packed (channel_blocks_pack). */
static inline int channel_blocks_create(acl_conv *conv, const float *weight)
{
    channel_blocks *st = acl_alloc(sizeof *st);
    if (!st) return -1;
    memset(st, 0, sizeof *st);
    conv->impl = st;
    return channel_blocks_pack(st, conv, weight);
}

static inline void channel_blocks_destroy(acl_conv *conv)
{
    channel_blocks *st = conv->impl;
    if (!st) return;
    channel_blocks_free(st);
    acl_free(st);
}

#endif
