/* The micro-kernel table and the public queries over it.
 *
 * Each family lists its kernels once, as X(MR, NR, style, isa, kmin, kmax,
 * n_multiple), grouped by style, two to a line; the list expands both to the
 * symbol declarations and to the table, and a kernel's symbol is
 * acl_ukr_<MR>x<NR>_<style>_<isa>, the name of the file that instantiates it.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "ukernel.h"

#if defined(ACL_ARCH_AARCH64)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1 << 10)  /* the kernel's bit, for C libraries older than it */
#endif
#endif

#if defined(ACL_ARCH_X86)

#define ACL_FAMILY_AVX512(X)                                                       \
    X(12, 32, interleaved, avx512, 0, 0, 1) X(8, 32, interleaved, avx512, 0, 0, 1) \
    X(16, 16, interleaved, avx512, 0, 0, 1)                                        \
    X(6, 32, hybrid, avx512, 0, 0, 1) X(8, 32, hybrid, avx512, 0, 0, 1)            \
    X(4, 48, hybrid, avx512, 0, 0, 1) X(6, 16, hybrid, avx512, 0, 0, 1)            \
    X(8, 16, hybrid, avx512, 0, 0, 1)                                              \
    X(6, 16, smallk, avx512, 8, 16, 4) X(8, 16, smallk, avx512, 0, 8, 4)

#define ACL_FAMILY_AVX2(X)                                                    \
    X(6, 16, interleaved, avx2, 0, 0, 1) X(4, 24, interleaved, avx2, 0, 0, 1) \
    X(8, 8, interleaved, avx2, 0, 0, 1)                                       \
    X(6, 16, hybrid, avx2, 0, 0, 1) X(4, 24, hybrid, avx2, 0, 0, 1)           \
    X(8, 8, hybrid, avx2, 0, 0, 1)                                            \
    X(6, 8, smallk, avx2, 8, 16, 4) X(8, 8, smallk, avx2, 0, 8, 4)

#elif defined(ACL_ARCH_AARCH64)

/* ACL's Table 3 kernels. */
#define ACL_FAMILY_NEON(X)                                                   \
    X(8, 12, interleaved, neon, 0, 0, 1) X(8, 6, interleaved, neon, 0, 0, 1) \
    X(6, 16, hybrid, neon, 0, 0, 1) X(4, 24, hybrid, neon, 0, 0, 1)          \
    X(8, 4, hybrid, neon, 0, 0, 1)                                           \
    X(6, 4, smallk, neon, 8, 16, 4) X(8, 4, smallk, neon, 0, 8, 4)

/* ACL's fp16 GEMM kernel (Armv8.2-A FP16), for cores whose HWCAP has asimdhp;
 * listed after the fp32 families, so acl_isa() and every default stay fp32. */
#define ACL_FAMILY_NEONFP16(X) X(8, 24, interleaved_fp16, neonfp16, 0, 0, 1)

#else
#error "ACL_ARCH_X86 or ACL_ARCH_AARCH64 must be defined"
#endif

/* An fp16 kernel's style is interleaved_fp16 in its family's list (the
 * signature, the field), interleaved in its name and symbol. */
#define UKR_STYLE_NAME_interleaved interleaved
#define UKR_STYLE_NAME_hybrid hybrid
#define UKR_STYLE_NAME_smallk smallk
#define UKR_STYLE_NAME_interleaved_fp16 interleaved
#define UKR_SYMBOL_(mr, nr, style, isa) acl_ukr_##mr##x##nr##_##style##_##isa
#define UKR_SYMBOL_EXPANDED(mr, nr, style, isa) UKR_SYMBOL_(mr, nr, style, isa)
#define UKR_SYMBOL(mr, nr, style, isa) UKR_SYMBOL_EXPANDED(mr, nr, UKR_STYLE_NAME_##style, isa)
#define UKR_STR_(x) #x
#define UKR_STR(x) UKR_STR_(x)
#define UKR_FIELD_interleaved .interleaved
#define UKR_FIELD_hybrid .hybrid
#define UKR_FIELD_smallk .hybrid
#define UKR_FIELD_interleaved_fp16 .fp16_fn
#define UKR_STYLE_interleaved ACL_STYLE_INTERLEAVED
#define UKR_STYLE_hybrid ACL_STYLE_HYBRID
#define UKR_STYLE_smallk ACL_STYLE_SMALLK
#define UKR_STYLE_interleaved_fp16 ACL_STYLE_INTERLEAVED
#define UKR_TYPE_interleaved __typeof__(*(acl_ukr_interleaved_fn)0)
#define UKR_TYPE_hybrid __typeof__(*(acl_ukr_hybrid_fn)0)
#define UKR_TYPE_smallk UKR_TYPE_hybrid
#define UKR_TYPE_interleaved_fp16 __typeof__(*(acl_ukr_fp16_fn)0)
/* A hybrid or small-K kernel's entry for a partial tile's rows (hybrid.h). */
#define UKR_ROWS_SYMBOL(mr, nr, style, isa) acl_ukr_##mr##x##nr##_##style##_##isa##_rows
#define UKR_ROWS_DECLARE_interleaved(M, N, STYLE, ISA)
#define UKR_ROWS_DECLARE_interleaved_fp16(M, N, STYLE, ISA)
#define UKR_ROWS_DECLARE_hybrid(M, N, STYLE, ISA) \
    extern __typeof__(*(acl_ukr_hybrid_rows_fn)0) UKR_ROWS_SYMBOL(M, N, STYLE, ISA);
#define UKR_ROWS_DECLARE_smallk UKR_ROWS_DECLARE_hybrid
#define UKR_ROWS_FIELD_interleaved(M, N, STYLE, ISA)
#define UKR_ROWS_FIELD_interleaved_fp16(M, N, STYLE, ISA)
#define UKR_ROWS_FIELD_hybrid(M, N, STYLE, ISA) .hybrid_rows = UKR_ROWS_SYMBOL(M, N, STYLE, ISA),
#define UKR_ROWS_FIELD_smallk UKR_ROWS_FIELD_hybrid

/* typeof keeps the declaration's signature in one place per style. */
#define UKR_DECLARE(M, N, STYLE, ISA, KMIN, KMAX, NMUL)                              \
    _Static_assert(M <= ACL_UKR_MAX_MR && M * N <= ACL_UKR_MAX_TILE_FLOATS,         \
                   #M "x" #N " exceeds the macro-kernel's tile bounds");              \
    extern __typeof__(UKR_TYPE_##STYLE) UKR_SYMBOL(M, N, STYLE, ISA);               \
    UKR_ROWS_DECLARE_##STYLE(M, N, STYLE, ISA)
#define UKR_ENTRY(M, N, STYLE, ISA, KMIN, KMAX, NMUL)        \
    {                                                        \
        .name = #M "x" #N "-" UKR_STR(UKR_STYLE_NAME_##STYLE) "-" #ISA, \
        .isa = #ISA,                                         \
        .style = UKR_STYLE_##STYLE,                          \
        .mr = M,                                             \
        .nr = N,                                             \
        .kmin = KMIN,                                        \
        .kmax = KMAX,                                        \
        .n_multiple = NMUL,                                  \
        UKR_FIELD_##STYLE = UKR_SYMBOL(M, N, STYLE, ISA),    \
        UKR_ROWS_FIELD_##STYLE(M, N, STYLE, ISA)             \
    },

#if defined(ACL_ARCH_X86)
ACL_FAMILY_AVX512(UKR_DECLARE)
ACL_FAMILY_AVX2(UKR_DECLARE)
static const acl_ukernel family_avx512[] = {ACL_FAMILY_AVX512(UKR_ENTRY)};
static const acl_ukernel family_avx2[] = {ACL_FAMILY_AVX2(UKR_ENTRY)};
#else
ACL_FAMILY_NEON(UKR_DECLARE)
ACL_FAMILY_NEONFP16(UKR_DECLARE)
static const acl_ukernel family_neon[] = {ACL_FAMILY_NEON(UKR_ENTRY)};
static const acl_ukernel family_neonfp16[] = {ACL_FAMILY_NEONFP16(UKR_ENTRY)};
#endif

#define FAMILY_SIZE(f) ((int)(sizeof(f) / sizeof((f)[0])))
#define MAX_AVAILABLE 64

static const acl_ukernel *available[MAX_AVAILABLE];
static int available_count;
static const char *available_isa = "generic";
static pthread_once_t available_once = PTHREAD_ONCE_INIT;

static void add_family(const acl_ukernel *family, int n)
{
    if (n > 0 && available_count == 0) available_isa = family[0].isa;
    for (int i = 0; i < n && available_count < MAX_AVAILABLE; i++)
        available[available_count++] = &family[i];
}

static void find_available(void)
{
#if defined(ACL_ARCH_X86)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) add_family(family_avx512, FAMILY_SIZE(family_avx512));
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        add_family(family_avx2, FAMILY_SIZE(family_avx2));
#else
    add_family(family_neon, FAMILY_SIZE(family_neon));
    if (getauxval(AT_HWCAP) & HWCAP_ASIMDHP)
        add_family(family_neonfp16, FAMILY_SIZE(family_neonfp16));
#endif
}

int acl_ukernels_available(const acl_ukernel *const **list)
{
    pthread_once(&available_once, find_available);
    if (list) *list = available;
    return available_count;
}

const acl_ukernel *acl_ukernel_find(const char *name)
{
    const acl_ukernel *const *list;
    int n = acl_ukernels_available(&list);
    for (int i = 0; name && i < n; i++)
        if (strcmp(list[i]->name, name) == 0) return list[i];
    return NULL;
}

const char *acl_isa(void)
{
    acl_ukernels_available(NULL);
    return available_isa;
}

int acl_ukernel_count(void) { return acl_ukernels_available(NULL); }

static const char *style_name(acl_style style)
{
    switch (style) {
    case ACL_STYLE_INTERLEAVED: return "interleaved";
    case ACL_STYLE_HYBRID: return "hybrid";
    case ACL_STYLE_SMALLK: return "smallk";
    }
    return "?";
}

int acl_ukernel_get(int i, acl_ukernel_info *out)
{
    const acl_ukernel *const *list;
    int n = acl_ukernels_available(&list);
    if (i < 0 || i >= n) return acl_fail("micro-kernel index %d out of range [0, %d)", i, n);
    const acl_ukernel *uk = list[i];
    *out = (acl_ukernel_info){
        .name = uk->name,
        .isa = uk->isa,
        .style = style_name(uk->style),
        .mr = uk->mr,
        .nr = uk->nr,
        .kmin = uk->kmin,
        .kmax = uk->kmax,
        .n_multiple = uk->n_multiple,
        .precision = uk->fp16_fn ? "fp16" : "fp32",
    };
    return 0;
}
