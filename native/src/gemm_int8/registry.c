/* The int8 micro-kernel table and the dispatch over it.  Kept apart from the
 * fp32 table (gemm/registry.c): an int8 kernel takes other operands, and the
 * fp32 algorithms must never be offered one. */
#include <pthread.h>
#include <string.h>

#include "aclengine.h"
#include "int8.h"
#include "internal.h"

#if defined(ACL_ARCH_AARCH64)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)  /* the kernel's bit, for C libraries older than it */
#endif
#endif

/* Each family lists its kernels once as X(MR, NR, KR, isa); a kernel's symbol
 * is acl_ukr_int8_<MR>x<NR>c<KR>_<isa>, named after its file. */
#if defined(ACL_ARCH_X86)
/* 8x32 first: its 16 accumulators keep vpdpbusd at about two a cycle on
 * Zen 5 where 8x16's 8 reach 85% of that (550 and 468 GMAC/s, one core);
 * the rows kernels before the interleaved ones, as they skip packing A
 * (conv_int8 takes 8x16c4-rows for 16 output channels or fewer). */
#define ACL_INT8_ROWS_AVX512VNNI(X) X(8, 32, 4, avx512vnni) X(8, 16, 4, avx512vnni)
#define ACL_INT8_FAMILY_AVX512VNNI(X) X(8, 32, 4, avx512vnni) X(8, 16, 4, avx512vnni)
#define ACL_INT8_FAMILY_AVX2(X) X(4, 16, 2, avx2)
#elif defined(ACL_ARCH_AARCH64)
#define ACL_INT8_FAMILY_NEONDOT(X) X(4, 16, 4, neondot)
#define ACL_INT8_FAMILY_NEON(X) X(4, 16, 1, neon)
#else
#error "ACL_ARCH_X86 or ACL_ARCH_AARCH64 must be defined"
#endif

#define INT8_SYMBOL(mr, nr, kr, isa) acl_ukr_int8_##mr##x##nr##c##kr##_##isa
/* Both kinds of kernel: its tile within the macro-kernel's bounds, and the
 * kernel declared with its kind's signature. */
#define INT8_TILE_DECLARE(M, N, fn_type, symbol)                                             \
    _Static_assert(M <= ACL_INT8_MAX_MR && M * N <= ACL_INT8_MAX_TILE,                    \
                   #M "x" #N " exceeds the macro-kernel's tile bounds");                   \
    extern __typeof__(*(fn_type)0) symbol;
#define INT8_DECLARE(M, N, K, ISA) INT8_TILE_DECLARE(M, N, acl_ukr_int8_fn, INT8_SYMBOL(M, N, K, ISA))
#define INT8_ENTRY(M, N, K, ISA) \
    {.name = #M "x" #N "c" #K "-interleaved-" #ISA, .isa = #ISA, .mr = M, .nr = N, .kr = K, \
     .fn = INT8_SYMBOL(M, N, K, ISA)},
/* A rows kernel comes with its requantising twin, ..._rows_requant_<isa>,
 * and the twin's one-row kernel, acl_ukr_int8_1x<NR>c<KR>_rows_requant_<isa>. */
#define INT8_ROWS_SYMBOL(mr, nr, kr, isa) acl_ukr_int8_##mr##x##nr##c##kr##_rows_##isa
#define INT8_ROWS_REQUANT_SYMBOL(mr, nr, kr, isa) \
    acl_ukr_int8_##mr##x##nr##c##kr##_rows_requant_##isa
#define INT8_ROWS_DECLARE(M, N, K, ISA)                                            \
    INT8_TILE_DECLARE(M, N, acl_ukr_int8_rows_fn, INT8_ROWS_SYMBOL(M, N, K, ISA)) \
    extern __typeof__(*(acl_ukr_int8_rows_requant_fn)0) INT8_ROWS_REQUANT_SYMBOL(M, N, K, ISA); \
    extern __typeof__(*(acl_ukr_int8_rows_requant_fn)0) INT8_ROWS_REQUANT_SYMBOL(1, N, K, ISA);
#define INT8_ROWS_ENTRY(M, N, K, ISA) \
    {.name = #M "x" #N "c" #K "-rows-" #ISA, .isa = #ISA, .mr = M, .nr = N, .kr = K, \
     .rows_fn = INT8_ROWS_SYMBOL(M, N, K, ISA),                                        \
     .rows_requant_fn = INT8_ROWS_REQUANT_SYMBOL(M, N, K, ISA),                         \
     .row_requant_fn = INT8_ROWS_REQUANT_SYMBOL(1, N, K, ISA)},

#if defined(ACL_ARCH_X86)
ACL_INT8_ROWS_AVX512VNNI(INT8_ROWS_DECLARE)
ACL_INT8_FAMILY_AVX512VNNI(INT8_DECLARE)
ACL_INT8_FAMILY_AVX2(INT8_DECLARE)
static const acl_ukernel_int8 family_avx512vnni[] = {ACL_INT8_ROWS_AVX512VNNI(INT8_ROWS_ENTRY)
                                                         ACL_INT8_FAMILY_AVX512VNNI(INT8_ENTRY)};
static const acl_ukernel_int8 family_avx2[] = {ACL_INT8_FAMILY_AVX2(INT8_ENTRY)};
#else
ACL_INT8_FAMILY_NEONDOT(INT8_DECLARE)
ACL_INT8_FAMILY_NEON(INT8_DECLARE)
static const acl_ukernel_int8 family_neondot[] = {ACL_INT8_FAMILY_NEONDOT(INT8_ENTRY)};
static const acl_ukernel_int8 family_neon[] = {ACL_INT8_FAMILY_NEON(INT8_ENTRY)};
#endif

#define FAMILY_SIZE(f) ((int)(sizeof(f) / sizeof((f)[0])))
#define MAX_KERNELS 16

typedef struct {
    const acl_ukernel_int8 *list[MAX_KERNELS];
    int count;
} kernel_list;

static kernel_list available, built;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void add_family(kernel_list *to, const acl_ukernel_int8 *family, int n)
{
    for (int i = 0; i < n && to->count < MAX_KERNELS; i++) to->list[to->count++] = &family[i];
}

/* Each family once into `built`, and into `available` when the CPU runs it. */
static void add(const acl_ukernel_int8 *family, int n, int runs)
{
    add_family(&built, family, n);
    if (runs) add_family(&available, family, n);
}

static void find_kernels(void)
{
#if defined(ACL_ARCH_X86)
    __builtin_cpu_init();
    add(family_avx512vnni, FAMILY_SIZE(family_avx512vnni),
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni"));
    add(family_avx2, FAMILY_SIZE(family_avx2), __builtin_cpu_supports("avx2"));
#else
    add(family_neondot, FAMILY_SIZE(family_neondot), (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0);
    add(family_neon, FAMILY_SIZE(family_neon), 1);
#endif
}

int acl_int8_ukernels_available(const acl_ukernel_int8 *const **list)
{
    pthread_once(&once, find_kernels);
    if (list) *list = available.list;
    return available.count;
}

int acl_int8_ukernels_built(const acl_ukernel_int8 *const **list)
{
    pthread_once(&once, find_kernels);
    if (list) *list = built.list;
    return built.count;
}

int acl_int8_ukernel_count(void) { return acl_int8_ukernels_available(NULL); }

const char *acl_int8_ukernel_name(int i)
{
    const acl_ukernel_int8 *const *list;
    int n = acl_int8_ukernels_available(&list);
    if (i < 0 || i >= n) {
        acl_fail("int8 micro-kernel index %d out of range [0, %d)", i, n);
        return NULL;
    }
    return list[i]->name;
}

const acl_ukernel_int8 *acl_int8_ukernel_find(const char *name)
{
    const acl_ukernel_int8 *const *list;
    int n = acl_int8_ukernels_available(&list);
    for (int i = 0; name && i < n; i++)
        if (strcmp(list[i]->name, name) == 0) return list[i];
    return NULL;
}
