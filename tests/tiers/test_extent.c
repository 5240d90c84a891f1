/*
 * tests/tiers/test_extent.c - the extent allocator against a reference
 * model (a sorted array of free blocks with the same best-fit rule), plus
 * edge cases.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tiers/extent.h"
#include "hyperoffload/errors.h"

/* ---- reference model ---------------------------------------------------- */

struct mblk {
    uint64_t off, len;
};

struct model {
    uint64_t cap, align, used;
    struct mblk *fr; /* free blocks sorted by offset, never adjacent */
    size_t nfr, cfr;
    struct mblk *lv; /* live allocations, unordered */
    size_t nlv, clv;
};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    ck_assert_ptr_nonnull(q);
    return q;
}

static void model_init(struct model *m, uint64_t cap, uint64_t align)
{
    memset(m, 0, sizeof(*m));
    m->align = align;
    m->cap = cap / align * align;
    if (m->cap) {
        m->cfr = 16;
        m->fr = xrealloc(NULL, m->cfr * sizeof(*m->fr));
        m->fr[0].off = 0;
        m->fr[0].len = m->cap;
        m->nfr = 1;
    }
}

static void model_done(struct model *m)
{
    free(m->fr);
    free(m->lv);
}

static int model_round(const struct model *m, uint64_t len, uint64_t *ret)
{
    if (len == 0)
        return 0;
    if (len > UINT64_MAX - (m->align - 1))
        return 0;
    *ret = (len + m->align - 1) / m->align * m->align;
    return 1;
}

static int model_alloc(struct model *m, uint64_t len, uint64_t *ret_off,
                       uint64_t *ret_len)
{
    uint64_t r;
    size_t i, best = SIZE_MAX;

    if (!model_round(m, len, &r))
        return HO_E_INVALID_SIZE;
    if (r > m->cap)
        return HO_E_TOO_LARGE;
    for (i = 0; i < m->nfr; i++)
        if (m->fr[i].len >= r && (best == SIZE_MAX || m->fr[i].len < m->fr[best].len))
            best = i;
    if (best == SIZE_MAX)
        return HO_E_TIER_FULL;
    *ret_off = m->fr[best].off;
    *ret_len = r;
    if (m->fr[best].len == r) {
        memmove(&m->fr[best], &m->fr[best + 1],
                (m->nfr - best - 1) * sizeof(*m->fr));
        m->nfr--;
    } else {
        m->fr[best].off += r;
        m->fr[best].len -= r;
    }
    if (m->nlv == m->clv) {
        m->clv = m->clv ? 2 * m->clv : 16;
        m->lv = xrealloc(m->lv, m->clv * sizeof(*m->lv));
    }
    m->lv[m->nlv].off = *ret_off;
    m->lv[m->nlv].len = r;
    m->nlv++;
    m->used += r;
    return 0;
}

static int model_release(struct model *m, uint64_t off, uint64_t len)
{
    uint64_t r;
    size_t i, pos;
    struct mblk b;

    if (!model_round(m, len, &r))
        return HO_E_UNKNOWN_EXTENT;
    for (i = 0; i < m->nlv; i++)
        if (m->lv[i].off == off)
            break;
    if (i == m->nlv || m->lv[i].len != r)
        return HO_E_UNKNOWN_EXTENT;
    b = m->lv[i];
    m->lv[i] = m->lv[--m->nlv];
    m->used -= b.len;

    for (pos = 0; pos < m->nfr && m->fr[pos].off < b.off; pos++)
        ;
    if (pos > 0 && m->fr[pos - 1].off + m->fr[pos - 1].len == b.off) {
        m->fr[pos - 1].len += b.len;
        if (pos < m->nfr && b.off + b.len == m->fr[pos].off) {
            m->fr[pos - 1].len += m->fr[pos].len;
            memmove(&m->fr[pos], &m->fr[pos + 1],
                    (m->nfr - pos - 1) * sizeof(*m->fr));
            m->nfr--;
        }
        return 0;
    }
    if (pos < m->nfr && b.off + b.len == m->fr[pos].off) {
        m->fr[pos].off = b.off;
        m->fr[pos].len += b.len;
        return 0;
    }
    if (m->nfr == m->cfr) {
        m->cfr = m->cfr ? 2 * m->cfr : 16;
        m->fr = xrealloc(m->fr, m->cfr * sizeof(*m->fr));
    }
    memmove(&m->fr[pos + 1], &m->fr[pos], (m->nfr - pos) * sizeof(*m->fr));
    m->fr[pos] = b;
    m->nfr++;
    return 0;
}

static void model_stats(const struct model *m, tier_extents_stats *s)
{
    size_t i;

    memset(s, 0, sizeof(*s));
    s->capacity = m->cap;
    s->used = m->used;
    s->free = m->cap - m->used;
    for (i = 0; i < m->nfr; i++)
        if (m->fr[i].len > s->largest_free)
            s->largest_free = m->fr[i].len;
    s->free_blocks = m->nfr;
    s->allocations = m->nlv;
    s->fragmentation = s->free == 0
        ? 0.0
        : 1.0 - (double)s->largest_free / (double)s->free;
}

static uint64_t model_high_water(const struct model *m)
{
    uint64_t hw = 0;
    size_t i;

    for (i = 0; i < m->nlv; i++)
        if (m->lv[i].off + m->lv[i].len > hw)
            hw = m->lv[i].off + m->lv[i].len;
    return hw;
}

static void check_same(const tier_extents *ea, const struct model *m,
                       uint64_t op)
{
    tier_extents_stats a, b;

    tier_extents_stats_get(ea, &a);
    model_stats(m, &b);
    ck_assert_msg(a.capacity == b.capacity && a.used == b.used &&
                      a.free == b.free && a.largest_free == b.largest_free &&
                      a.free_blocks == b.free_blocks &&
                      a.allocations == b.allocations &&
                      a.fragmentation == b.fragmentation,
                  "op %llu: stats differ: used %llu/%llu largest %llu/%llu "
                  "blocks %llu/%llu allocs %llu/%llu",
                  (unsigned long long)op, (unsigned long long)a.used,
                  (unsigned long long)b.used,
                  (unsigned long long)a.largest_free,
                  (unsigned long long)b.largest_free,
                  (unsigned long long)a.free_blocks,
                  (unsigned long long)b.free_blocks,
                  (unsigned long long)a.allocations,
                  (unsigned long long)b.allocations);
    ck_assert_uint_eq(tier_extents_high_water(ea), model_high_water(m));
}

/* ---- randomised runs ------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64* */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
    return n ? rng_next(s) % n : 0;
}

static int under_valgrind(void)
{
    const char *v = getenv("HO_UNDER_VALGRIND");
    return v && *v && strcmp(v, "0") != 0;
}

struct run_cfg {
    uint64_t seed, capacity, align;
};

static const struct run_cfg runs[] = {
    {0x1234567ULL, (64ULL << 20) + 12345, 4096},
    {0xdeadbeefULL, (1ULL << 20) + 7, 1},
    {0xfeedf00dULL, (10ULL << 20) + 300, 512},
    {0xabcdef01ULL, (1ULL << 62) + 99, 1ULL << 20},
    {0x5555aaaaULL, 1ULL << 24, 65536},
};

/* Pick a request size: mostly small and medium, some exactly the size of a
 * current free block (exercises exact fits and ties), some huge, 0 and
 * overflowing ones. */
static uint64_t pick_len(uint64_t *rs, const struct model *m)
{
    uint64_t k = rng_below(rs, 100), a = m->align;

    if (k < 45)
        return 1 + rng_below(rs, 8 * a);
    if (k < 75)
        return 1 + rng_below(rs, m->cap / 64 + 1);
    if (k < 88 && m->nfr) {
        uint64_t l = m->fr[rng_below(rs, m->nfr)].len;
        return l - rng_below(rs, a < l ? a : l); /* rounds up to l */
    }
    if (k < 94)
        return 1 + rng_below(rs, m->cap + 2 * a);
    if (k < 97)
        return 0;
    return UINT64_MAX - rng_below(rs, 2 * a);
}

START_TEST(test_random_vs_model)
{
    const struct run_cfg *rc = &runs[_i];
    uint64_t nops = under_valgrind() ? 12000 : 120000;
    uint64_t rs = rc->seed, op, last_off = 0, last_len = 0;
    struct model m;
    tier_extents *ea;
    uint64_t n_full = 0, n_ok = 0, n_rel = 0;

    ea = tier_extents_new(rc->capacity, rc->align);
    ck_assert_ptr_nonnull(ea);
    model_init(&m, rc->capacity, rc->align);
    check_same(ea, &m, 0);

    for (op = 1; op <= nops; op++) {
        uint64_t k = rng_below(&rs, 100);
        int ra, rb;

        if (k < 55 || m.nlv == 0) {
            uint64_t len = pick_len(&rs, &m);
            uint64_t oa = 7, la = 7, ob = 9, lb = 9;
            ra = tier_extents_alloc(ea, len, &oa, &la);
            rb = model_alloc(&m, len, &ob, &lb);
            ck_assert_msg(ra == rb, "op %llu alloc %llu: %d vs model %d",
                          (unsigned long long)op, (unsigned long long)len,
                          ra, rb);
            if (ra == 0) {
                ck_assert_uint_eq(oa, ob);
                ck_assert_uint_eq(la, lb);
                ck_assert_uint_eq(oa % rc->align, 0);
                ck_assert_uint_eq(tier_extents_lookup(ea, oa), la);
                n_ok++;
            } else {
                ck_assert_uint_eq(oa, 7); /* outputs untouched */
                ck_assert_uint_eq(la, 7);
                if (ra == HO_E_TIER_FULL)
                    n_full++;
            }
        } else if (k < 95) {
            size_t i = rng_below(&rs, m.nlv);
            uint64_t off = m.lv[i].off, len = m.lv[i].len;
            /* as requested (anything rounding to len) or as rounded */
            if (rng_below(&rs, 2) && len > 1)
                len -= rng_below(&rs, len < m.align ? len : m.align);
            ra = tier_extents_release(ea, off, len);
            rb = model_release(&m, off, len);
            ck_assert_int_eq(rb, 0);
            ck_assert_int_eq(ra, 0);
            ck_assert_uint_eq(tier_extents_lookup(ea, off), 0);
            last_off = off;
            last_len = len;
            n_rel++;
        } else {
            /* invalid releases: double, wrong length, length 0, unknown */
            uint64_t off, len;
            size_t i = rng_below(&rs, m.nlv);
            switch (rng_below(&rs, 4)) {
            case 0: off = last_off; len = last_len; break;
            case 1: off = m.lv[i].off; len = m.lv[i].len + m.align; break;
            case 2: off = m.lv[i].off; len = 0; break;
            default: off = m.lv[i].off + m.align; len = m.align; break;
            }
            ra = tier_extents_release(ea, off, len);
            rb = model_release(&m, off, len);
            ck_assert_int_eq(ra, rb);
        }
        check_same(ea, &m, op);
        if (op % 4096 == 0) {
            size_t i;
            for (i = 0; i < m.nlv; i++)
                ck_assert_uint_eq(tier_extents_lookup(ea, m.lv[i].off),
                                  m.lv[i].len);
        }
    }
    /* The run must have exercised the interesting outcomes. */
    ck_assert_uint_gt(n_full, 10);
    ck_assert_uint_gt(n_ok, nops / 10);
    ck_assert_uint_gt(n_rel, nops / 10);

    /* Release everything: one free block of the whole capacity again. */
    while (m.nlv) {
        uint64_t off = m.lv[0].off, len = m.lv[0].len;
        ck_assert_int_eq(tier_extents_release(ea, off, len), 0);
        ck_assert_int_eq(model_release(&m, off, len), 0);
    }
    check_same(ea, &m, op);
    {
        tier_extents_stats s;
        tier_extents_stats_get(ea, &s);
        ck_assert_uint_eq(s.free_blocks, s.capacity ? 1 : 0);
        ck_assert_uint_eq(s.largest_free, s.capacity);
    }
    model_done(&m);
    tier_extents_free(ea);
}
END_TEST

/* ---- edge cases ------------------------------------------------------------- */

static int stats_eq(const tier_extents_stats *a, const tier_extents_stats *b)
{
    return a->capacity == b->capacity && a->used == b->used &&
           a->free == b->free && a->largest_free == b->largest_free &&
           a->free_blocks == b->free_blocks &&
           a->allocations == b->allocations &&
           a->fragmentation == b->fragmentation;
}

START_TEST(test_bad_args)
{
    ck_assert_ptr_null(tier_extents_new(4096, 0));
    ck_assert_ptr_null(tier_extents_new(4096, 3));
    ck_assert_ptr_null(tier_extents_new(4096, 4097));
    ck_assert_ptr_null(tier_extents_free(NULL));
}
END_TEST

START_TEST(test_sizes)
{
    tier_extents *ea = tier_extents_new(1 << 20, 4096);
    tier_extents_stats before, after;
    uint64_t off = 1, len = 1;

    ck_assert_ptr_nonnull(ea);
    tier_extents_stats_get(ea, &before);
    ck_assert_int_eq(tier_extents_alloc(ea, 0, &off, &len), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_extents_alloc(ea, UINT64_MAX, &off, &len),
                     HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_extents_alloc(ea, UINT64_MAX - 4094, &off, &len),
                     HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_extents_alloc(ea, (1 << 20) + 1, &off, &len),
                     HO_E_TOO_LARGE);
    ck_assert_int_eq(tier_extents_alloc(ea, UINT64_MAX - 4095, &off, &len),
                     HO_E_TOO_LARGE); /* rounds to exactly 2^64 - 4096 */
    ck_assert_uint_eq(off, 1);
    ck_assert_uint_eq(len, 1);
    tier_extents_stats_get(ea, &after);
    ck_assert(stats_eq(&before, &after));

    /* rounding; ret_len may be NULL */
    ck_assert_int_eq(tier_extents_alloc(ea, 1, &off, &len), 0);
    ck_assert_uint_eq(off, 0);
    ck_assert_uint_eq(len, 4096);
    ck_assert_int_eq(tier_extents_alloc(ea, 4097, &off, NULL), 0);
    ck_assert_uint_eq(off, 4096);
    ck_assert_uint_eq(tier_extents_lookup(ea, 4096), 8192);
    ck_assert_uint_eq(tier_extents_lookup(ea, 8192), 0);
    ck_assert_uint_eq(tier_extents_high_water(ea), 12288);
    tier_extents_free(ea);

    /* align 1: no rounding, UINT64_MAX is just too large */
    ea = tier_extents_new(100, 1);
    ck_assert_int_eq(tier_extents_alloc(ea, UINT64_MAX, &off, &len),
                     HO_E_TOO_LARGE);
    ck_assert_int_eq(tier_extents_alloc(ea, 3, &off, &len), 0);
    ck_assert_uint_eq(len, 3);
    tier_extents_free(ea);
}
END_TEST

START_TEST(test_exact_fill)
{
    tier_extents *ea = tier_extents_new(64 * 4096, 4096);
    tier_extents_stats s;
    uint64_t off, len;
    int i;

    ck_assert_int_eq(tier_extents_alloc(ea, 64 * 4096, &off, &len), 0);
    ck_assert_uint_eq(off, 0);
    tier_extents_stats_get(ea, &s);
    ck_assert_uint_eq(s.free, 0);
    ck_assert_uint_eq(s.largest_free, 0);
    ck_assert_uint_eq(s.free_blocks, 0);
    ck_assert(s.fragmentation == 0.0);
    ck_assert_int_eq(tier_extents_alloc(ea, 1, &off, &len), HO_E_TIER_FULL);
    ck_assert_int_eq(tier_extents_release(ea, 0, 64 * 4096), 0);

    /* 64 single pages fill it exactly too */
    for (i = 0; i < 64; i++) {
        ck_assert_int_eq(tier_extents_alloc(ea, 4096, &off, &len), 0);
        ck_assert_uint_eq(off, (uint64_t)i * 4096);
    }
    ck_assert_int_eq(tier_extents_alloc(ea, 1, &off, &len), HO_E_TIER_FULL);
    tier_extents_stats_get(ea, &s);
    ck_assert_uint_eq(s.allocations, 64);
    ck_assert_uint_eq(tier_extents_high_water(ea), 64 * 4096);
    tier_extents_free(ea); /* frees live allocations too */
}
END_TEST

START_TEST(test_capacity_rounding)
{
    tier_extents *ea = tier_extents_new(10000, 4096);
    tier_extents_stats s;
    uint64_t off, len;

    tier_extents_stats_get(ea, &s);
    ck_assert_uint_eq(s.capacity, 8192);
    ck_assert_uint_eq(s.free, 8192);
    ck_assert_int_eq(tier_extents_alloc(ea, 8193, &off, &len), HO_E_TOO_LARGE);
    ck_assert_int_eq(tier_extents_alloc(ea, 8192, &off, &len), 0);
    tier_extents_free(ea);

    /* capacity below align: empty allocator */
    ea = tier_extents_new(4095, 4096);
    ck_assert_ptr_nonnull(ea);
    tier_extents_stats_get(ea, &s);
    ck_assert_uint_eq(s.capacity, 0);
    ck_assert_uint_eq(s.free_blocks, 0);
    ck_assert_int_eq(tier_extents_alloc(ea, 1, &off, &len), HO_E_TOO_LARGE);
    tier_extents_free(ea);
}
END_TEST

START_TEST(test_bad_release)
{
    tier_extents *ea = tier_extents_new(1 << 20, 4096);
    tier_extents_stats before, after;
    uint64_t a, b, len;

    ck_assert_int_eq(tier_extents_alloc(ea, 5000, &a, &len), 0);
    ck_assert_int_eq(tier_extents_alloc(ea, 4096, &b, &len), 0);
    tier_extents_stats_get(ea, &before);

    ck_assert_int_eq(tier_extents_release(ea, 12345, 4096), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_extents_release(ea, a + 4096, 4096), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_extents_release(ea, a, 4096), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_extents_release(ea, a, 8193), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_extents_release(ea, a, 0), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_extents_release(ea, a, UINT64_MAX), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_extents_release(ea, 1 << 20, 4096), HO_E_UNKNOWN_EXTENT);
    tier_extents_stats_get(ea, &after);
    ck_assert(stats_eq(&before, &after));
    ck_assert_uint_eq(tier_extents_lookup(ea, a), 8192);

    /* as requested (5000) and as rounded both work */
    ck_assert_int_eq(tier_extents_release(ea, a, 5000), 0);
    ck_assert_int_eq(tier_extents_release(ea, b, 4096), 0);
    tier_extents_stats_get(ea, &before);
    ck_assert_int_eq(tier_extents_release(ea, a, 5000), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_extents_release(ea, b, 4096), HO_E_UNKNOWN_EXTENT);
    tier_extents_stats_get(ea, &after);
    ck_assert(stats_eq(&before, &after));
    ck_assert_uint_eq(after.used, 0);
    ck_assert_uint_eq(after.free_blocks, 1);
    tier_extents_free(ea);
}
END_TEST

START_TEST(test_best_fit_and_coalesce)
{
    tier_extents *ea = tier_extents_new(100 * 4096, 4096);
    tier_extents_stats s;
    uint64_t o[10], off, len;
    int i;

    /* 10 blocks of 1..10 pages, then the tail (100 - 55 = 45 pages) */
    for (i = 0; i < 10; i++)
        ck_assert_int_eq(tier_extents_alloc(ea, (uint64_t)(i + 1) * 4096,
                                            &o[i], &len), 0);
    /* holes of 3 pages (block 2), 5 pages (block 4), 9 pages (block 8) */
    ck_assert_int_eq(tier_extents_release(ea, o[2], 3 * 4096), 0);
    ck_assert_int_eq(tier_extents_release(ea, o[4], 5 * 4096), 0);
    ck_assert_int_eq(tier_extents_release(ea, o[8], 9 * 4096), 0);
    tier_extents_stats_get(ea, &s);
    ck_assert_uint_eq(s.free_blocks, 4);
    ck_assert_uint_eq(s.largest_free, 45 * 4096);
    ck_assert(s.fragmentation > 0.0);

    /* best fit: 4 pages go to the 5-page hole, not the first or the tail */
    ck_assert_int_eq(tier_extents_alloc(ea, 4 * 4096, &off, &len), 0);
    ck_assert_uint_eq(off, o[4]);
    /* 1 page: the 1-page remainder of that hole (smallest) */
    ck_assert_int_eq(tier_extents_alloc(ea, 4096, &off, &len), 0);
    ck_assert_uint_eq(off, o[4] + 4 * 4096);
    /* 3 pages: exact 3-page hole */
    ck_assert_int_eq(tier_extents_alloc(ea, 3 * 4096, &off, &len), 0);
    ck_assert_uint_eq(off, o[2]);

    /* tie-break: two 2-page holes, the lower offset wins */
    ck_assert_int_eq(tier_extents_release(ea, o[1], 2 * 4096), 0);
    ck_assert_int_eq(tier_extents_alloc(ea, 7 * 4096, &off, &len), 0);
    ck_assert_uint_eq(off, o[8]); /* 9-page hole -> 2 left */
    ck_assert_int_eq(tier_extents_alloc(ea, 2 * 4096, &off, &len), 0);
    ck_assert_uint_eq(off, o[1]);

    /* coalescing with both neighbours gives one block back */
    tier_extents_free(ea);
    ea = tier_extents_new(3 * 4096, 4096);
    ck_assert_int_eq(tier_extents_alloc(ea, 4096, &o[0], &len), 0);
    ck_assert_int_eq(tier_extents_alloc(ea, 4096, &o[1], &len), 0);
    ck_assert_int_eq(tier_extents_alloc(ea, 4096, &o[2], &len), 0);
    ck_assert_int_eq(tier_extents_release(ea, o[0], 4096), 0);
    ck_assert_int_eq(tier_extents_release(ea, o[2], 4096), 0);
    tier_extents_stats_get(ea, &s);
    ck_assert_uint_eq(s.free_blocks, 2);
    ck_assert(s.fragmentation == 0.5);
    ck_assert_int_eq(tier_extents_alloc(ea, 2 * 4096, &off, &len),
                     HO_E_TIER_FULL);
    ck_assert_int_eq(tier_extents_release(ea, o[1], 4096), 0);
    tier_extents_stats_get(ea, &s);
    ck_assert_uint_eq(s.free_blocks, 1);
    ck_assert_uint_eq(s.largest_free, 3 * 4096);
    ck_assert_int_eq(tier_extents_alloc(ea, 3 * 4096, &off, &len), 0);
    ck_assert_uint_eq(off, 0);
    tier_extents_free(ea);
}
END_TEST

START_TEST(test_alignment)
{
    static const uint64_t aligns[] = {1, 8, 512, 4096, 1 << 21};
    size_t k;

    for (k = 0; k < sizeof(aligns) / sizeof(aligns[0]); k++) {
        uint64_t al = aligns[k], rs = 77 + k, off, len;
        tier_extents *ea = tier_extents_new(1000 * al + al / 2, al);
        int i;
        for (i = 0; i < 200; i++) {
            int r = tier_extents_alloc(ea, 1 + rng_below(&rs, 3 * al), &off,
                                       &len);
            if (r == 0) {
                ck_assert_uint_eq(off % al, 0);
                ck_assert_uint_eq(len % al, 0);
            }
        }
        tier_extents_free(ea);
    }
}
END_TEST

START_TEST(test_tags)
{
    tier_extents *ea = tier_extents_new(1 << 20, 4096);
    uint64_t off, len;
    uint32_t tag = 99;

    ck_assert_int_eq(tier_extents_alloc(ea, 4096, &off, &len), 0);
    ck_assert_int_eq(tier_extents_get_tag(ea, off, &tag), 0);
    ck_assert_uint_eq(tag, 0);
    ck_assert_int_eq(tier_extents_set_tag(ea, off, 5), 0);
    ck_assert_int_eq(tier_extents_get_tag(ea, off, &tag), 0);
    ck_assert_uint_eq(tag, 5);
    ck_assert_int_eq(tier_extents_set_tag(ea, off + 4096, 1), HO_E_UNKNOWN_EXTENT);
    tag = 42;
    ck_assert_int_eq(tier_extents_get_tag(ea, off + 4096, &tag),
                     HO_E_UNKNOWN_EXTENT);
    ck_assert_uint_eq(tag, 42);
    /* a fresh allocation at the same offset starts with tag 0 */
    ck_assert_int_eq(tier_extents_release(ea, off, len), 0);
    ck_assert_int_eq(tier_extents_alloc(ea, 4096, &off, &len), 0);
    ck_assert_int_eq(tier_extents_get_tag(ea, off, &tag), 0);
    ck_assert_uint_eq(tag, 0);
    tier_extents_free(ea);
}
END_TEST

static Suite *extent_suite(void)
{
    Suite *s = suite_create("extent");
    TCase *tc = tcase_create("edge");
    TCase *tr = tcase_create("random");

    tcase_add_test(tc, test_bad_args);
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_exact_fill);
    tcase_add_test(tc, test_capacity_rounding);
    tcase_add_test(tc, test_bad_release);
    tcase_add_test(tc, test_best_fit_and_coalesce);
    tcase_add_test(tc, test_alignment);
    tcase_add_test(tc, test_tags);
    suite_add_tcase(s, tc);

    tcase_set_timeout(tr, 600);
    tcase_add_loop_test(tr, test_random_vs_model, 0,
                        (int)(sizeof(runs) / sizeof(runs[0])));
    suite_add_tcase(s, tr);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(extent_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
