/*
 * tests/runtime/rt_copylog.h - checks of a step's copy log
 * (ho_step_copies) against the schedule and the step's figures, shared by
 * the host (test_rt_replay.c) and cuda (test_rt_cuda.c) replay tests.
 * Local replays only: their host copies never leave DDR, so no record may
 * show a flash stall.
 */
#ifndef HO_TESTS_RT_COPYLOG_H
#define HO_TESTS_RT_COPYLOG_H

#include "tests/runtime/rt_util.h"

/* The schedule's copies (prefetch, store) in the order the replay issues
 * them: by point (op, when), stably. */
static inline size_t rt_sched_copies(const plan_trace *pt,
                                     const plan_schedule *sc,
                                     const plan_action **out)
{
    size_t n = 0;
    for (uint32_t p = 0; p < 2 * pt->n_ops; p++)
        for (size_t i = 0; i < sc->n_actions; i++) {
            const plan_action *a = &sc->actions[i];
            if (a->op * 2u + a->when != p ||
                (a->kind != PLAN_ACT_PREFETCH && a->kind != PLAN_ACT_STORE))
                continue;
            if (out)
                out[n] = a;
            n++;
        }
    return n;
}

/* Every property a step's records must have (info: the step's figures). */
static inline void rt_check_copies(const plan_trace *pt,
                                   const plan_schedule *sc,
                                   const ho_copy_record *rec, size_t n,
                                   const ho_step_info *info, int duplex)
{
    const plan_action **want = calloc(sc->n_actions + 1, sizeof(*want));
    ck_assert_ptr_nonnull(want);
    ck_assert_uint_eq(n, rt_sched_copies(pt, sc, want));
    uint64_t bytes[2] = {0, 0}, waits = 0;
    int64_t last_end[2] = {-1, -1}, last_issue = 0;
    int64_t wall_ns = (int64_t)(info->wall_us * 1e3) + 1;
    for (size_t i = 0; i < n; i++) {
        const ho_copy_record *c = &rec[i];
        const plan_action *a = want[i];
        /* The schedule's copy, in issue order. */
        ck_assert_uint_eq(c->storage_id, a->storage_id);
        ck_assert_uint_eq(c->op, a->op);
        ck_assert_uint_eq(c->when, a->when);
        ck_assert_uint_eq(c->dir, a->kind == PLAN_ACT_PREFETCH ? HO_COPY_H2D
                                                               : HO_COPY_D2H);
        ck_assert_uint_eq(c->bytes, pt->storages[a->storage].bytes);
        ck_assert_uint_eq(c->engine, duplex ? c->dir : 0);
        bytes[c->dir] += c->bytes;
        /* Times: issue <= start <= end <= the step's wall time. */
        ck_assert_int_ge(c->issue_ns, last_issue);
        last_issue = c->issue_ns;
        ck_assert_int_ge(c->start_ns, c->issue_ns);
        ck_assert_int_ge(c->end_ns, c->start_ns);
        ck_assert_msg(c->end_ns <= wall_ns, "copy %zu ends at %lld ns, the "
                      "step took %lld ns", i, (long long)c->end_ns,
                      (long long)wall_ns);
        /* One engine runs its copies one at a time, in issue order. */
        ck_assert_msg(c->start_ns >= last_end[c->engine], "copy %zu (engine "
                      "%u) starts at %lld ns, before the previous one ended "
                      "(%lld ns)", i, c->engine, (long long)c->start_ns,
                      (long long)last_end[c->engine]);
        last_end[c->engine] = c->end_ns;
        ck_assert_uint_eq(c->stall_ns, 0); /* local: always in DDR */
        waits += c->wait_ns;
    }
    ck_assert_uint_eq(bytes[HO_COPY_H2D], info->h2d_bytes);
    ck_assert_uint_eq(bytes[HO_COPY_D2H], info->d2h_bytes);
    /* What the hooks waited for copies is part of the exposed time. */
    ck_assert_msg((double)waits <= info->exposed_us * 1e3 + 1.0,
                  "waits %llu ns, exposed %.0f ns",
                  (unsigned long long)waits, info->exposed_us * 1e3);
    free(want);
}

#endif
