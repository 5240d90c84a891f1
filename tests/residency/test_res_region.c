/*
 * tests/residency/test_res_region.c - regions on the host backend, local
 * (no daemon): a property test of block data against a reference model
 * under random sequences of allocations, accesses (reads and writes),
 * needs, release hints, pins, frees and steps, for both policies; the
 * watermark is never exceeded; only dirty blocks are written back; needs
 * are prefetched before their step.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/residency.h"
#include "tests/check_main.h"

#define BB 4096u
#define NB 64u

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Reference: the bytes each live block must hold. */
static uint8_t model[NB][BB];
static int live[NB];
static int pinned[NB];

static void fill_pattern(uint8_t *p, uint64_t seed)
{
    for (unsigned i = 0; i < BB; i += 8) {
        uint64_t v = seed * 0x9e3779b97f4a7c15ull + i;
        memcpy(p + i, &v, 8);
    }
}

static void check_block(ho_device *dev, ho_region *r, uint32_t b, int write,
                        uint64_t seed)
{
    void *p = NULL;
    ck_assert_int_eq(ho_block_access(r, b, write, &p), 0);
    ck_assert_int_eq(ho_block_where(r, b), HO_TIER_HBM);
    uint8_t got[BB];
    ck_assert_int_eq(ho_device_read(dev, got, p, BB), 0);
    ck_assert_msg(memcmp(got, model[b], BB) == 0, "block %u differs", b);
    if (write) {
        fill_pattern(model[b], seed);
        ck_assert_int_eq(ho_device_write(dev, p, model[b], BB), 0);
    }
}

static void run(ho_res_policy pol, uint64_t seed, unsigned ops)
{
    rng = seed;
    memset(live, 0, sizeof live);
    memset(pinned, 0, sizeof pinned);
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, 1 << 20, &dev), 0);
    ho_region_config cfg = {.block_bytes = BB, .max_blocks = NB,
                            .device_budget = 16 * BB, .high_pct = 75,
                            .low_pct = 50, .policy = pol,
                            .prefetch_window = 2};
    ho_region *r = NULL;
    ck_assert_int_eq(ho_region_new(NULL, dev, &cfg, &r), 0);
    ho_region_stats st;
    ho_region_get_stats(r, &st);
    ck_assert_uint_eq(st.slots, 16);
    ck_assert_uint_eq(st.high, 12);
    ck_assert_uint_eq(st.low, 8);
    uint32_t id_of[NB];
    unsigned touched = 0, npinned = 0;
    for (unsigned k = 0; k < ops; k++) {
        unsigned op = rnd() % 100;
        uint32_t b = (uint32_t)(rnd() % NB);
        if (op < 10) {
            uint32_t nb;
            if (touched + npinned + 1 >= 12) {
                ck_assert_int_eq(ho_region_step(r, NULL), 0);
                touched = 0;
            }
            int rc = ho_block_alloc(r, &nb);
            if (rc == HO_E_QUOTA)
                continue;
            ck_assert_int_eq(rc, 0);
            ck_assert(!live[nb]);
            live[nb] = 1;
            void *p;
            ck_assert_int_eq(ho_block_access(r, nb, 1, &p), 0);
            fill_pattern(model[nb], rnd());
            ck_assert_int_eq(ho_device_write(dev, p, model[nb], BB), 0);
            touched++;
            (void)id_of;
        } else if (op < 55) {
            if (!live[b])
                continue;
            if (touched + npinned + 1 >= 12) {
                ck_assert_int_eq(ho_region_step(r, NULL), 0);
                touched = 0;
            }
            check_block(dev, r, b, op < 30, rnd());
            touched++;
        } else if (op < 70) {
            if (live[b])
                ck_assert_int_eq(ho_region_need(r, &b, 1, ho_region_steps(r)
                                                + 1 + rnd() % 4), 0);
        } else if (op < 72) {
            /* swap in up to 3 live blocks at once, then check them */
            uint32_t set[3];
            unsigned n = 0;
            for (unsigned j = 0; j < 3; j++) {
                uint32_t c = (uint32_t)((b + j * 7) % NB);
                if (live[c] && (n == 0 || set[n - 1] != c))
                    set[n++] = c;
            }
            if (!n)
                continue;
            if (touched + npinned + n + 1 >= 12) {
                ck_assert_int_eq(ho_region_step(r, NULL), 0);
                touched = 0;
            }
            ck_assert_int_eq(ho_region_fetch(r, set, n), 0);
            for (unsigned j = 0; j < n; j++)
                ck_assert_int_eq(ho_block_where(r, set[j]), HO_TIER_HBM);
            for (unsigned j = 0; j < n; j++)
                check_block(dev, r, set[j], j == 0, rnd());
            touched += n;
        } else if (op < 75) {
            if (live[b])
                ck_assert_int_eq(ho_region_release_hint(r, &b, 1), 0);
        } else if (op < 78) {
            if (live[b] && !pinned[b] && npinned < 3 &&
                touched + npinned + 1 < 12) {
                void *p;
                ck_assert_int_eq(ho_block_pin(r, b, &p), 0);
                pinned[b] = 1;
                npinned++;
            } else if (live[b] && pinned[b]) {
                ck_assert_int_eq(ho_block_unpin(r, b), 0);
                pinned[b] = 0;
                npinned--;
            }
        } else if (op < 85) {
            if (live[b] && !pinned[b]) {
                ck_assert_int_eq(ho_block_free(r, b), 0);
                live[b] = 0;
                ck_assert_int_eq(ho_block_where(r, b), HO_TIER_NONE);
            }
        } else {
            ck_assert_int_eq(ho_region_step(r, NULL), 0);
            touched = 0;
        }
        ho_region_get_stats(r, &st);
        ck_assert_uint_le(st.device_blocks, st.high);
        ck_assert_uint_le(st.device_peak, st.high);
        for (uint32_t i = 0; i < NB; i++)
            if (pinned[i])
                ck_assert_int_eq(ho_block_where(r, i), HO_TIER_HBM);
    }
    /* every live block still exact */
    for (uint32_t i = 0; i < NB; i++) {
        if (!live[i])
            continue;
        ck_assert_int_eq(ho_region_step(r, NULL), 0);
        check_block(dev, r, i, 0, 0);
    }
    ho_region_get_stats(r, &st);
    ck_assert_uint_gt(st.evictions, 0);
    ck_assert_uint_gt(st.misses, 0);
    ck_assert_uint_le(st.writebacks, st.evictions + st.steps);
    if (pol == HO_RES_HINTS)
        ck_assert_uint_gt(st.prefetches, 0);
    else
        ck_assert_uint_eq(st.prefetches, 0);
    ho_region_free(r);
    ck_assert_uint_eq(ho_device_used(dev), 0);
    ho_device_close(dev);
}

/* Fewer seeds under valgrind (HO_UNDER_VALGRIND=1, tests/CMakeLists). */
static uint64_t seeds(uint64_t n)
{
    const char *v = getenv("HO_UNDER_VALGRIND");
    return v && strcmp(v, "1") == 0 ? 2 : n;
}

START_TEST(property_hints)
{
    for (uint64_t s = 1; s <= seeds(12); s++)
        run(HO_RES_HINTS, s * 7919, 3000);
}
END_TEST

START_TEST(property_lru)
{
    for (uint64_t s = 1; s <= seeds(6); s++)
        run(HO_RES_LRU, s * 104729, 3000);
}
END_TEST

/* A needed block is on device before its step, without a miss; clean
 * blocks are dropped, not written back. */
START_TEST(prefetch_and_clean_drop)
{
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, 1 << 20, &dev), 0);
    ho_region_config cfg = {.block_bytes = BB, .max_blocks = NB,
                            .device_budget = 8 * BB, .high_pct = 100,
                            .low_pct = 50, .prefetch_window = 1};
    ho_region *r = NULL;
    ck_assert_int_eq(ho_region_new(NULL, dev, &cfg, &r), 0);
    uint32_t b[16];
    for (int i = 0; i < 16; i++) {
        ck_assert_int_eq(ho_block_alloc(r, &b[i]), 0);
        if (i % 4 == 3)
            ck_assert_int_eq(ho_region_step(r, NULL), 0);
    }
    ck_assert_int_eq(ho_region_step(r, NULL), 0);
    ho_region_stats st;
    ho_region_get_stats(r, &st);
    ck_assert_uint_le(st.device_blocks - st.draining, 4); /* low mark */
    ck_assert_uint_eq(st.writebacks, 12);   /* all were dirty */
    ck_assert_int_eq(ho_block_where(r, b[0]), HO_TIER_DDR);
    uint64_t now = ho_region_steps(r);
    ck_assert_int_eq(ho_region_need(r, &b[0], 1, now + 1), 0);
    ck_assert_int_eq(ho_block_where(r, b[0]), HO_TIER_HBM); /* in flight */
    ck_assert_int_eq(ho_region_step(r, NULL), 0);
    void *p;
    ho_region_get_stats(r, &st);
    uint64_t misses = st.misses;
    ck_assert_int_eq(ho_block_access(r, b[0], 0, &p), 0);
    ho_region_get_stats(r, &st);
    ck_assert_uint_eq(st.misses, misses);
    ck_assert_uint_eq(st.prefetch_hits, 1);
    /* b[0] is clean now: evicting it again is a drop */
    uint64_t wb = st.writebacks;
    ck_assert_int_eq(ho_region_release_hint(r, &b[0], 1), 0);
    ck_assert_int_eq(ho_region_step(r, NULL), 0);
    for (int i = 12; i < 16; i++)
        ck_assert_int_eq(ho_block_access(r, b[i], 1, &p), 0);
    ck_assert_int_eq(ho_region_step(r, NULL), 0);
    ho_region_get_stats(r, &st);
    ck_assert_int_eq(ho_block_where(r, b[0]), HO_TIER_DDR);
    ck_assert_uint_ge(st.drops, 1);
    ck_assert_uint_le(st.writebacks - wb, 4);
    ho_region_free(r);
    ho_device_close(dev);
}
END_TEST

/* A block announced while it was resident, then evicted (by demand:
 * nothing else could go), is prefetched again before its step; and
 * ho_region_fetch brings a whole set in with one wait. */
START_TEST(announced_evicted_is_prefetched)
{
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, 1 << 20, &dev), 0);
    ho_region_config cfg = {.block_bytes = BB, .max_blocks = NB,
                            .device_budget = 8 * BB, .high_pct = 100,
                            .low_pct = 100, .prefetch_window = 1};
    ho_region *r = NULL;
    ck_assert_int_eq(ho_region_new(NULL, dev, &cfg, &r), 0);
    uint32_t b[16];
    uint8_t pat[BB];
    void *p;
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(ho_block_alloc(r, &b[i]), 0);
        ck_assert_int_eq(ho_block_access(r, b[i], 1, &p), 0);
        fill_pattern(pat, 100 + (uint64_t)i);
        ck_assert_int_eq(ho_device_write(dev, p, pat, BB), 0);
    }
    ck_assert_int_eq(ho_region_step(r, NULL), 0);
    uint64_t now = ho_region_steps(r);
    ck_assert_int_eq(ho_region_need(r, &b[0], 1, now + 3), 0);
    ck_assert_int_eq(ho_block_where(r, b[0]), HO_TIER_HBM);
    for (int i = 8; i < 16; i++)
        ck_assert_int_eq(ho_block_alloc(r, &b[i]), 0); /* the 8th: b[0] */
    ck_assert_int_eq(ho_block_where(r, b[0]), HO_TIER_DDR);
    ck_assert_int_eq(ho_region_step(r, NULL), 0);
    ck_assert_int_eq(ho_region_step(r, NULL), 0);
    ck_assert_int_eq(ho_region_step(r, NULL), 0); /* now + 3 */
    ho_region_stats st;
    ho_region_get_stats(r, &st);
    uint64_t misses = st.misses;
    ck_assert_uint_ge(st.prefetches, 1);
    ck_assert_int_eq(ho_block_access(r, b[0], 0, &p), 0);
    uint8_t got[BB];
    ck_assert_int_eq(ho_device_read(dev, got, p, BB), 0);
    fill_pattern(pat, 100);
    ck_assert(memcmp(got, pat, BB) == 0);
    ho_region_get_stats(r, &st);
    ck_assert_uint_eq(st.misses, misses);
    ck_assert_uint_eq(st.prefetch_hits, 1);
    /* swap in b[1..4] (all on the host) at once */
    ck_assert_int_eq(ho_region_step(r, NULL), 0);
    for (int i = 1; i <= 4; i++)
        ck_assert_int_eq(ho_block_where(r, b[i]), HO_TIER_DDR);
    ck_assert_int_eq(ho_region_fetch(r, &b[1], 4), 0);
    ho_region_get_stats(r, &st);
    ck_assert_uint_eq(st.misses, misses + 4);
    for (int i = 1; i <= 4; i++) {
        ck_assert_int_eq(ho_block_where(r, b[i]), HO_TIER_HBM);
        ck_assert_int_eq(ho_block_access(r, b[i], 0, &p), 0);
        ck_assert_int_eq(ho_device_read(dev, got, p, BB), 0);
        fill_pattern(pat, 100 + (uint64_t)i);
        ck_assert(memcmp(got, pat, BB) == 0);
    }
    ho_region_free(r);
    ho_device_close(dev);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("residency_region");
    TCase *tc = tcase_create("region");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, property_hints);
    tcase_add_test(tc, property_lru);
    tcase_add_test(tc, prefetch_and_clean_drop);
    tcase_add_test(tc, announced_evicted_is_prefetched);
    suite_add_tcase(s, tc);
    return ho_check_run(s, false);
}
