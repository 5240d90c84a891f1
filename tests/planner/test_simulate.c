/*
 * tests/planner/test_simulate.c - the judge (planner/simulate.c) on small
 * cases computed by hand: every rule of PLANNER.md §3 and
 * docs/execution-model.md, every kind of violation, the metrics.
 *
 * Link used unless said otherwise: 1 GB/s each way, no latency, duplex, so
 * a copy of b bytes takes b / 1000 us.
 */
#include "tests/planner/plan_test_util.h"

/* A (1, 100 B) written by op0, read by op1 which writes B (2, 200 B),
 * read by op2.  Peak 300 during op1. */
static plan_trace *chain3(void)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 200, PLAN_INIT_NONE, false, false);
    tu_op(t, 10, TU_NONE, TU_R(1));
    tu_op(t, 5, TU_R(1), TU_R(2));
    tu_op(t, 3, TU_R(2), TU_NONE);
    tu_finish(t);
    return t;
}

START_TEST(test_metrics_no_actions)
{
    plan_trace *t = chain3();
    plan_schedule *s = tu_sched(300);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert_uint_eq(m.peak_device_bytes, 300);
    ck_assert(tu_close(m.compute_us, 18));
    ck_assert(tu_close(m.step_time_us, 18));
    ck_assert(tu_close(m.exposed_us, 0));
    ck_assert_uint_eq(m.h2d_bytes + m.d2h_bytes + m.peak_host_bytes, 0);
    ck_assert_int_eq(v.code, 0);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_over_budget_named_and_metrics_complete)
{
    plan_trace *t = chain3();
    plan_schedule *s = tu_sched(299);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), HO_E_BAD_SCHEDULE);
    ck_assert_int_eq(v.code, HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(v.op, 1);          /* allocation of B before op 1 */
    ck_assert_uint_eq(v.storage_id, 2);
    ck_assert_uint_eq(v.action, SIZE_MAX);
    ck_assert_ptr_nonnull(strstr(v.message, "over budget"));
    ck_assert_uint_eq(m.peak_device_bytes, 300); /* still computed */
    ck_assert(tu_close(m.step_time_us, 18));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* A on host (2000 B) read by op1; op0 takes 10 us. */
static plan_trace *host_read(void)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 2000, PLAN_INIT_HOST, false, false);
    tu_st(t, 9, 10, PLAN_INIT_NONE, false, false);
    tu_op(t, 10, TU_NONE, TU_R(9));
    tu_op(t, 5, TU_R(1), TU_NONE);
    tu_finish(t);
    return t;
}

START_TEST(test_prefetch_exposed_and_hidden)
{
    plan_trace *t = host_read();
    plan_metrics m;
    plan_violation v;
    /* right before the consumer: 2 us exposed */
    plan_schedule *s = tu_sched(10000);
    tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert(tu_close(m.step_time_us, 17));
    ck_assert(tu_close(m.exposed_us, 2));
    ck_assert_uint_eq(m.h2d_bytes, 2000);
    ck_assert_uint_eq(m.peak_host_bytes, 2000); /* initial host copy */
    plan_schedule_free(s);
    /* one op earlier: hidden, but the bytes count from t = 0 */
    s = tu_sched(10000);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert(tu_close(m.exposed_us, 0));
    ck_assert_uint_eq(m.peak_device_bytes, 2010);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_latency_and_bandwidth)
{
    plan_link l = {2.0, 4.0, 3.0, true}; /* 2000 B/us H2D, latency 3 */
    plan_trace *t = tu_trace(&l);
    tu_st(t, 1, 4000, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert(tu_close(m.step_time_us, 3 + 2 + 1)); /* latency + copy + op */
    ck_assert(tu_close(m.exposed_us, 5));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* A (1000 B) written by op0, stored and freed after it; op1 takes `d1`;
 * op2 writes B (1000 B).  The store ends at t = 2. */
static int release_case(double d1, uint64_t *peak)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, d1, TU_NONE, TU_NONE);
    tu_op(t, 5, TU_NONE, TU_R(2));
    tu_finish(t);
    plan_schedule *s = tu_sched(1000);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    plan_metrics m;
    plan_violation v;
    int r = tu_sim(t, s, &m, &v);
    *peak = m.peak_device_bytes;
    plan_schedule_free(s);
    plan_trace_free(t);
    return r;
}

START_TEST(test_release_before_allocation_at_equal_times)
{
    uint64_t peak;
    /* B allocated at t = 2, when A's memory returns: releases first */
    ck_assert_int_eq(release_case(1.0, &peak), 0);
    ck_assert_uint_eq(peak, 1000);
    /* B allocated at t = 1.5: A is still held (its copy runs) */
    ck_assert_int_eq(release_case(0.5, &peak), HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(peak, 2000);
}
END_TEST

START_TEST(test_round_trip)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_op(t, 5, TU_NONE, TU_R(2));
    tu_op(t, 1, TU_R(1, 2), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(2000);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    tu_act(s, 3, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    tu_act(s, 3, PLAN_AFTER, PLAN_ACT_FREE_HOST, 1);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    /* prefetch at 7, done at 8, op3 8..9 */
    ck_assert(tu_close(m.step_time_us, 9));
    ck_assert(tu_close(m.exposed_us, 1));
    ck_assert_uint_eq(m.peak_device_bytes, 2000);
    ck_assert_uint_eq(m.h2d_bytes, 1000);
    ck_assert_uint_eq(m.d2h_bytes, 1000);
    ck_assert_uint_eq(m.peak_host_bytes, 1000);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* op0 writes C and is followed by a store of C and a prefetch of D, both
 * issued at t = 1; op1 reads D. */
static double engine_case(bool duplex)
{
    plan_link l = {1.0, 1.0, 0.0, duplex};
    plan_trace *t = tu_trace(&l);
    tu_st(t, 3, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 4, 1000, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_NONE, TU_R(3));
    tu_op(t, 1, TU_R(4), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 3);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 3);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_PREFETCH, 4);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    plan_schedule_free(s);
    plan_trace_free(t);
    return m.exposed_us;
}

START_TEST(test_engines_duplex_and_shared)
{
    ck_assert(tu_close(engine_case(true), 1));  /* both copies 1..2 */
    ck_assert(tu_close(engine_case(false), 2)); /* store 1..2, H2D 2..3 */
}
END_TEST

START_TEST(test_same_direction_fifo)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_HOST, false, false);
    tu_st(t, 2, 3000, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_op(t, 1, TU_R(2), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 2); /* listed first */
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    /* 2: 0..3, 1: 3..4; op0 4..5; op1 5..6 */
    ck_assert(tu_close(m.step_time_us, 6));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* op1 writes (or only reads) A while A's store is in flight. */
static double war_case(bool writes)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 0.5, TU_R(1), writes ? TU_R(1) : TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    plan_schedule_free(s);
    plan_trace_free(t);
    return m.exposed_us;
}

START_TEST(test_write_after_read_waits_for_d2h)
{
    /* store 1..2: the writer starts at 2, ends 2.5 (exposed 1); a reader
     * does not wait, but the step ends with the copy at 2 (exposed 0.5) */
    ck_assert(tu_close(war_case(true), 1.0));
    ck_assert(tu_close(war_case(false), 0.5));
}
END_TEST

START_TEST(test_implicit_free_waits_for_copies)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 0.5, TU_NONE, TU_R(2));
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    /* A, last used by op0, is freed when its store ends (t = 2), after
     * B's allocation at t = 1 */
    ck_assert_uint_eq(m.peak_device_bytes, 2000);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* ------------------------------------------------------------- violations */

typedef struct vcase {
    const char *name;
    uint32_t op;          /* expected violation op */
    uint64_t storage;     /* expected storage id */
    size_t action;        /* expected action index */
    const char *text;     /* expected in the message */
} vcase;

static void expect_violation(plan_trace *t, plan_schedule *s, const vcase *c)
{
    plan_metrics m;
    plan_violation v;
    int r = tu_sim(t, s, &m, &v);
    ck_assert_msg(r == HO_E_BAD_SCHEDULE, "%s: expected a violation", c->name);
    ck_assert_msg(v.op == c->op, "%s: op %u, expected %u (%s)", c->name, v.op,
                  c->op, v.message);
    ck_assert_msg(v.storage_id == c->storage, "%s: storage %llu (%s)",
                  c->name, (unsigned long long)v.storage_id, v.message);
    ck_assert_msg(v.action == c->action, "%s: action %zu (%s)", c->name,
                  v.action, v.message);
    ck_assert_msg(strstr(v.message, c->text), "%s: message '%s'", c->name,
                  v.message);
    plan_schedule_free(s);
    plan_trace_free(t);
}

START_TEST(test_violation_read_not_on_device)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    vcase c = {"read", 1, 1, SIZE_MAX, "not on device at op 1"};
    expect_violation(t, s, &c);
}
END_TEST

START_TEST(test_violation_prefetch_on_device)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_DEVICE, false, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    vcase c = {"prefetch on device", 0, 1, 0, "already on device"};
    expect_violation(t, s, &c);
}
END_TEST

START_TEST(test_violation_prefetch_stale)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_R(1), TU_R(1));
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 1, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    tu_act(s, 2, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    vcase c = {"stale", 2, 1, 2, "stale"};
    expect_violation(t, s, &c);
}
END_TEST

START_TEST(test_violation_prefetch_without_host_copy)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    vcase c = {"no host", 1, 1, 1, "no host copy"};
    expect_violation(t, s, &c);
}
END_TEST

START_TEST(test_violation_store_not_on_device)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_STORE, 1);
    vcase c = {"store", 0, 1, 0, "not on device"};
    expect_violation(t, s, &c);
}
END_TEST

START_TEST(test_violation_free_not_on_device)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    vcase c = {"free", 0, 1, 0, "free_device"};
    expect_violation(t, s, &c);
}
END_TEST

static plan_trace *pinned_trace(void)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_NONE, false, true);
    tu_st(t, 2, 100, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_NONE, TU_R(2));
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_op(t, 1, TU_R(2), TU_NONE);
    tu_finish(t);
    return t;
}

START_TEST(test_violation_pinned_freed_early)
{
    plan_trace *t = pinned_trace();
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    tu_act(s, 2, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    vcase c = {"pinned", 0, 1, 1, "pinned"};
    expect_violation(t, s, &c);
    /* before the last access is early too, even at its own op */
    t = pinned_trace();
    s = tu_sched(UINT64_MAX);
    tu_act(s, 2, PLAN_BEFORE, PLAN_ACT_FREE_DEVICE, 1);
    vcase c2 = {"pinned before", 2, 1, 0, "pinned"};
    expect_violation(t, s, &c2);
}
END_TEST

START_TEST(test_pinned_free_after_last_access_ok)
{
    plan_trace *t = pinned_trace();
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 2, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_violation_free_host_without_copy)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_HOST, 1);
    vcase c = {"free_host", 0, 1, 0, "no host copy"};
    expect_violation(t, s, &c);
}
END_TEST

START_TEST(test_violation_end_checks)
{
    /* retained, not host: must be on device at the end */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_NONE, true, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    vcase c = {"retained", PLAN_NONE, 1, SIZE_MAX, "not on device at step end"};
    expect_violation(t, s, &c);

    /* retained host data written and not stored */
    t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_HOST, true, false);
    tu_op(t, 1, TU_R(1), TU_R(1));
    tu_finish(t);
    s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    vcase c2 = {"host stale", PLAN_NONE, 1, SIZE_MAX, "no current host copy"};
    expect_violation(t, s, &c2);

    /* retained host data left on the device */
    t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_HOST, true, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    vcase c3 = {"host on device", PLAN_NONE, 1, SIZE_MAX, "still on device"};
    expect_violation(t, s, &c3);
}
END_TEST

START_TEST(test_end_ok_and_first_failure_in_storage_order)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 5, 100, PLAN_INIT_HOST, true, false);
    tu_st(t, 6, 100, PLAN_INIT_NONE, true, false);
    tu_st(t, 7, 100, PLAN_INIT_NONE, true, false);
    tu_op(t, 1, TU_R(5), TU_R(5, 6, 7));
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 5);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 5);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 5);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    /* free 7 and 6: 6 comes first in storage order */
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 7);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 7);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 6);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 6);
    vcase c = {"order", PLAN_NONE, 6, SIZE_MAX, "step end"};
    expect_violation(t, s, &c);
}
END_TEST

START_TEST(test_unbound_and_unsorted_rejected)
{
    plan_trace *t = chain3();
    plan_schedule *s = tu_sched(UINT64_MAX);
    plan_metrics m;
    plan_violation v;
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(v.message, "bind"));
    ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err), 0);
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), 0);
    /* out of order by hand */
    ck_assert_int_eq(plan_schedule_push(s, t, 0, PLAN_BEFORE,
                                        PLAN_ACT_FREE_HOST, 0), 0);
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(v.message, "sorted"));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_host_bytes)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 500, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_R(1), TU_R(1));
    tu_op(t, 1, TU_R(1, 2), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 1, PLAN_AFTER, PLAN_ACT_STORE, 1); /* same host memory */
    tu_act(s, 2, PLAN_BEFORE, PLAN_ACT_PREFETCH, 2);
    tu_act(s, 2, PLAN_AFTER, PLAN_ACT_FREE_HOST, 2);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert_uint_eq(m.peak_host_bytes, 1500);
    ck_assert_uint_eq(m.d2h_bytes, 2000);
    ck_assert_uint_eq(m.h2d_bytes, 500);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

typedef struct obs_count {
    unsigned ops, xfers;
    double last_end;
    uint64_t max_bytes;
} obs_count;

static void oc_bytes(void *ctx, double t, uint64_t b)
{
    obs_count *o = ctx;
    (void)t;
    if (b > o->max_bytes)
        o->max_bytes = b;
}
static void oc_xfer(void *ctx, int dir, uint32_t s, double st, double en,
                    uint64_t b)
{
    obs_count *o = ctx;
    (void)s;
    ck_assert_int_eq(dir, 0);
    ck_assert(tu_close(st, 0));
    ck_assert(tu_close(en, 2));
    ck_assert_uint_eq(b, 2000);
    o->xfers++;
}
static void oc_op(void *ctx, uint32_t op, double st, double en)
{
    obs_count *o = ctx;
    ck_assert_uint_eq(op, o->ops);
    ck_assert(st >= o->last_end);
    o->last_end = en;
    o->ops++;
}

START_TEST(test_observer)
{
    plan_trace *t = host_read();
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err), 0);
    obs_count o = {0, 0, 0, 0};
    plan_sim_observer obs = {&o, oc_bytes, oc_xfer, oc_op};
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, &obs), 0);
    ck_assert_uint_eq(o.ops, 2);
    ck_assert_uint_eq(o.xfers, 1);
    ck_assert_uint_eq(o.max_bytes, m.peak_device_bytes);
    ck_assert(tu_close(o.last_end, m.step_time_us));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_initial_state)
{
    /* device data nobody touches: allocated only when retained */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_DEVICE, true, false);
    tu_st(t, 2, 1000, PLAN_INIT_DEVICE, false, false);
    tu_st(t, 3, 50, PLAN_INIT_HOST, true, false);
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(100);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert_uint_eq(m.peak_device_bytes, 100);
    ck_assert_uint_eq(m.peak_host_bytes, 50);
    plan_schedule_free(s);
    /* over budget at step start names op 0 */
    s = tu_sched(99);
    vcase c = {"start", 0, 1, SIZE_MAX, "step start"};
    expect_violation(t, s, &c);
}
END_TEST

/* ------------------------------------------------------------ wait (rule 13) */

/* A (1, 1000 B) written by op0, stored and freed after it (D2H 1..2,
 * memory back at 2); B (2, 1000 B, host) read by op1; A read again by
 * op2.  Budget 1000: B's prefetch must wait for A's memory. */
static plan_trace *wait_trace(void)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_R(2), TU_NONE);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    return t;
}

static plan_schedule *wait_sched(bool with_wait)
{
    plan_schedule *s = tu_sched(1000);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    if (with_wait)
        tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 1);
    tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_PREFETCH, 2);
    tu_act(s, 2, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    return s;
}

START_TEST(test_wait_before_lets_memory_come_back)
{
    plan_trace *t = wait_trace();
    plan_metrics m;
    plan_violation v;
    /* op0 0..1; store A 1..2 (release at 2); wait A: clock 1 -> 2;
     * prefetch B at 2 (A's release applies first: 1000 B), H2D 2..3;
     * op1 3..4; B freed at 4; prefetch A before op2 at 4, H2D 4..5;
     * op2 5..6. */
    plan_schedule *s = wait_sched(true);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert_uint_eq(m.peak_device_bytes, 1000);
    ck_assert(tu_close(m.compute_us, 3));
    ck_assert(tu_close(m.step_time_us, 6));
    ck_assert(tu_close(m.exposed_us, 3)); /* 1 waiting + 2 copying */
    ck_assert_uint_eq(m.h2d_bytes, 2000);
    ck_assert_uint_eq(m.d2h_bytes, 1000);
    plan_schedule_free(s);
    /* without it B is allocated at 1, while A still holds its memory */
    s = wait_sched(false);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(v.op, 1);
    ck_assert_uint_eq(v.storage_id, 2);
    ck_assert_uint_eq(m.peak_device_bytes, 2000);
    /* B: H2D 1..2, op1 2..3; A: H2D 3..4 (host ready at 2), op2 4..5 */
    ck_assert(tu_close(m.step_time_us, 5));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* A before wait also delays the op's own allocations (step 2). */
START_TEST(test_wait_before_delays_write_allocation)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_NONE, TU_R(2));
    tu_op(t, 1, TU_R(1), TU_R(2)); /* keeps A's host copy needed */
    tu_finish(t);
    plan_metrics m;
    plan_violation v;
    for (int w = 0; w < 2; w++) {
        plan_schedule *s = tu_sched(1000);
        tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
        tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
        if (w)
            tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 1);
        tu_act(s, 2, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
        int r = tu_sim(t, s, &m, &v);
        if (w) {
            /* B allocated at 2, when A's memory is back; op1 2..3; then
             * A (prefetch at 3) and B: 2000 B over budget at op 2 */
            ck_assert_int_eq(r, HO_E_BAD_SCHEDULE);
            ck_assert_uint_eq(v.op, 2);
            ck_assert_uint_eq(v.storage_id, 1);
            /* op2: A's H2D 3..4, op2 4..5 */
            ck_assert(tu_close(m.step_time_us, 5));
        } else {
            ck_assert_int_eq(r, HO_E_BAD_SCHEDULE);
            ck_assert_uint_eq(v.op, 1); /* B allocated at 1 */
            ck_assert_uint_eq(v.storage_id, 2);
            /* op1 1..2, H2D A 2..3 (host ready 2), op2 3..4 */
            ck_assert(tu_close(m.step_time_us, 4));
        }
        ck_assert_uint_eq(m.peak_device_bytes, 2000);
        plan_schedule_free(s);
    }
    plan_trace_free(t);
}
END_TEST

/* An after wait moves the point's clock: the actions listed after it are
 * issued then, and the next op starts no earlier. */
START_TEST(test_wait_after_delays_what_follows)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 2000, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_R(2), TU_NONE);
    tu_finish(t);
    plan_metrics m;
    plan_violation v;
    /* op0 0..1; store A 1..2; wait A: clock 2; prefetch B at 2, H2D
     * 2..4; op1 4..5 */
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_WAIT, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_PREFETCH, 2);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert(tu_close(m.step_time_us, 5));
    ck_assert(tu_close(m.exposed_us, 3));
    ck_assert_uint_eq(m.peak_device_bytes, 3000);
    plan_schedule_free(s);
    /* the wait listed before the store covers nothing: prefetch at 1,
     * H2D 1..3, op1 3..4 */
    s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_WAIT, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_PREFETCH, 2);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert(tu_close(m.step_time_us, 4));
    ck_assert(tu_close(m.exposed_us, 2));
    plan_schedule_free(s);
    /* an after wait delays the next op even with nothing after it */
    s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_WAIT, 1);
    tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_PREFETCH, 2);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert(tu_close(m.step_time_us, 5)); /* H2D 2..4, op1 4..5 */
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* Several waits at one point: the clock only moves forward, to the
 * latest completion; a wait with no copy in flight is a no-op. */
START_TEST(test_wait_several_and_noop)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 3, 500, PLAN_INIT_DEVICE, true, false);
    tu_st(t, 4, 10, PLAN_INIT_DEVICE, true, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_finish(t);
    plan_metrics m;
    plan_violation v;
    /* stores after op0: A 1..2, C 2..2.5 */
    const double want[4] = {2.5, 3.5, 3.5, 3.0};
    for (int c = 0; c < 4; c++) {
        plan_schedule *s = tu_sched(UINT64_MAX);
        tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
        tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 3);
        if (c == 1) { /* C then A: 2.5 */
            tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 3);
            tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 1);
        } else if (c == 2) { /* A then C: 2.5 too; storage 4: no copy */
            tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 4);
            tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 1);
            tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 3);
        } else if (c == 3) { /* only A: op1 2..3 */
            tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 1);
            tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 4);
        }
        ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
        ck_assert_msg(tu_close(m.step_time_us, want[c]), "case %d: %g", c,
                      m.step_time_us);
        ck_assert(tu_close(m.exposed_us, want[c] - 2));
        ck_assert_uint_eq(m.d2h_bytes, 1500);
        plan_schedule_free(s);
    }
    /* a wait on a copy long finished moves nothing */
    plan_schedule *s = tu_sched(UINT64_MAX);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_STORE, 3); /* 0..0.5 */
    tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 3);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert(tu_close(m.step_time_us, 2));
    ck_assert(tu_close(m.exposed_us, 0));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* ------------------------------------------------------------ homes (rule 14) */

START_TEST(test_home_host_read_only)
{
    /* P (1, 1000 B, initial device, movable) read by op0 (1 us) */
    plan_trace *t = tu_trace(NULL);
    uint32_t p = tu_st_movable(t, 1, 1000, PLAN_INIT_DEVICE);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_finish(t);
    plan_metrics m;
    plan_violation v;
    /* home device (as initial): on device from t = 0, nothing to move */
    plan_schedule *s = tu_sched(1000);
    ck_assert_int_eq(plan_schedule_set_home(s, t, p, PLAN_HOME_DEVICE), 0);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert_uint_eq(m.peak_device_bytes, 1000);
    ck_assert_uint_eq(m.peak_host_bytes, 0);
    ck_assert(tu_close(m.step_time_us, 2));
    /* home host: only a host copy at t = 0; prefetched, freed again */
    ck_assert_int_eq(plan_schedule_set_home(s, t, p, PLAN_HOME_HOST), 0);
    ck_assert_uint_eq(s->n_homes, 1); /* replaced, not added */
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert_uint_eq(m.peak_device_bytes, 1000);
    ck_assert_uint_eq(m.peak_host_bytes, 1000);
    ck_assert_uint_eq(m.h2d_bytes, 1000);
    ck_assert_uint_eq(m.d2h_bytes, 0);
    ck_assert(tu_close(m.step_time_us, 3)); /* H2D 0..1, op0 1..2 */
    ck_assert(tu_close(m.exposed_us, 1));
    plan_schedule_free(s);
    /* home host without the prefetch: not on device at op 0 */
    s = tu_sched(1000);
    ck_assert_int_eq(plan_schedule_set_home(s, t, p, PLAN_HOME_HOST), 0);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(v.op, 0);
    ck_assert_uint_eq(v.storage_id, 1);
    plan_schedule_free(s);
    /* ... and without the free: still on device at step end */
    s = tu_sched(1000);
    ck_assert_int_eq(plan_schedule_set_home(s, t, p, PLAN_HOME_HOST), 0);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(v.op, PLAN_NONE);
    ck_assert_uint_eq(v.storage_id, 1);
    ck_assert_ptr_nonnull(strstr(v.message, "still on device"));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_home_host_written_and_home_device)
{
    /* P (1, 1000 B, initial device, movable) read and written by op0;
     * Q (2, 500 B, initial host, movable) read by op1 */
    plan_trace *t = tu_trace(NULL);
    uint32_t p = tu_st_movable(t, 1, 1000, PLAN_INIT_DEVICE);
    uint32_t q = tu_st_movable(t, 2, 500, PLAN_INIT_HOST);
    tu_op(t, 1, TU_R(1), TU_R(1));
    tu_op(t, 1, TU_R(2), TU_NONE);
    tu_finish(t);
    plan_metrics m;
    plan_violation v;
    uint8_t init[2];
    /* P at home on host: prefetch 0..1, op0 1..2, store 2..3, free;
     * Q at home on device: read in place, stays.  Step end 3. */
    plan_schedule *s = tu_sched(1500);
    ck_assert_int_eq(plan_schedule_set_home(s, t, p, PLAN_HOME_HOST), 0);
    ck_assert_int_eq(plan_schedule_set_home(s, t, q, PLAN_HOME_DEVICE), 0);
    ck_assert_int_eq(plan_schedule_initials(t, s, init), 0);
    ck_assert_uint_eq(init[p], PLAN_INIT_HOST);
    ck_assert_uint_eq(init[q], PLAN_INIT_DEVICE);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert_uint_eq(m.peak_device_bytes, 1500);
    ck_assert_uint_eq(m.peak_host_bytes, 1000);
    ck_assert_uint_eq(m.h2d_bytes, 1000);
    ck_assert_uint_eq(m.d2h_bytes, 1000);
    ck_assert(tu_close(m.compute_us, 2));
    ck_assert(tu_close(m.step_time_us, 3));
    plan_schedule_free(s);
    /* P written but not stored back: no current host copy at step end */
    s = tu_sched(1500);
    ck_assert_int_eq(plan_schedule_set_home(s, t, p, PLAN_HOME_HOST), 0);
    ck_assert_int_eq(plan_schedule_set_home(s, t, q, PLAN_HOME_DEVICE), 0);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(v.op, PLAN_NONE);
    ck_assert_uint_eq(v.storage_id, 1);
    ck_assert_ptr_nonnull(strstr(v.message, "no current host copy"));
    plan_schedule_free(s);
    /* no homes: the trace's initials, Q must be prefetched */
    ck_assert_int_eq(plan_schedule_initials(t, NULL, init), 0);
    ck_assert_uint_eq(init[p], PLAN_INIT_DEVICE);
    ck_assert_uint_eq(init[q], PLAN_INIT_HOST);
    s = tu_sched(1500);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(v.op, 1);
    ck_assert_uint_eq(v.storage_id, 2);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_homes_rejected)
{
    plan_trace *t = tu_trace(NULL);
    uint32_t p = tu_st_movable(t, 1, 1000, PLAN_INIT_DEVICE);
    uint32_t a = tu_st(t, 2, 10, PLAN_INIT_DEVICE, true, false);
    tu_op(t, 1, TU_R(1, 2), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    uint8_t init[2] = {9, 9};
    /* only movable storages */
    ck_assert_int_eq(plan_schedule_set_home(s, t, a, PLAN_HOME_HOST),
                     -EINVAL);
    ck_assert_int_eq(plan_schedule_set_home(s, t, p, (plan_home)2), -EINVAL);
    ck_assert_int_eq(plan_schedule_set_home(s, t, 7, PLAN_HOME_HOST),
                     -EINVAL);
    ck_assert_uint_eq(s->n_homes, 0);
    ck_assert_int_eq(plan_schedule_push_home_id(s, 2, PLAN_HOME_HOST), 0);
    ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err),
                     HO_E_BAD_SCHEDULE);
    ck_assert_str_eq(tu_err, "homes[0]: storage id 2 is not movable");
    /* unbound entries: initials refuses and leaves the output alone */
    ck_assert_int_eq(plan_schedule_initials(t, s, init), HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(init[0], 9);
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(v.message, "homes[0]"));
    plan_schedule_free(s);
    s = tu_sched(UINT64_MAX);
    ck_assert_int_eq(plan_schedule_push_home_id(s, 1, PLAN_HOME_HOST), 0);
    ck_assert_int_eq(plan_schedule_push_home_id(s, 1, PLAN_HOME_DEVICE), 0);
    ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err),
                     HO_E_BAD_SCHEDULE);
    ck_assert_str_eq(tu_err,
                     "homes[1]: duplicate storage id 1 (first at homes[0])");
    plan_schedule_free(s);
    s = tu_sched(UINT64_MAX);
    ck_assert_int_eq(plan_schedule_push_home_id(s, 99, PLAN_HOME_HOST), 0);
    ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err),
                     HO_E_BAD_SCHEDULE);
    ck_assert_str_eq(tu_err, "homes[0]: unknown storage id 99");
    plan_schedule_free(s);
    /* a home equal to the initial is allowed */
    s = tu_sched(UINT64_MAX);
    ck_assert_int_eq(plan_schedule_push_home_id(s, 1, PLAN_HOME_DEVICE), 0);
    ck_assert_int_eq(tu_sim(t, s, &m, &v), 0);
    ck_assert_uint_eq(s->homes[0].storage, p);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_simulate");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_metrics_no_actions);
    tcase_add_test(tc, test_over_budget_named_and_metrics_complete);
    tcase_add_test(tc, test_prefetch_exposed_and_hidden);
    tcase_add_test(tc, test_latency_and_bandwidth);
    tcase_add_test(tc, test_release_before_allocation_at_equal_times);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_engines_duplex_and_shared);
    tcase_add_test(tc, test_same_direction_fifo);
    tcase_add_test(tc, test_write_after_read_waits_for_d2h);
    tcase_add_test(tc, test_implicit_free_waits_for_copies);
    tcase_add_test(tc, test_violation_read_not_on_device);
    tcase_add_test(tc, test_violation_prefetch_on_device);
    tcase_add_test(tc, test_violation_prefetch_stale);
    tcase_add_test(tc, test_violation_prefetch_without_host_copy);
    tcase_add_test(tc, test_violation_store_not_on_device);
    tcase_add_test(tc, test_violation_free_not_on_device);
    tcase_add_test(tc, test_violation_pinned_freed_early);
    tcase_add_test(tc, test_pinned_free_after_last_access_ok);
    tcase_add_test(tc, test_violation_free_host_without_copy);
    tcase_add_test(tc, test_violation_end_checks);
    tcase_add_test(tc, test_end_ok_and_first_failure_in_storage_order);
    tcase_add_test(tc, test_unbound_and_unsorted_rejected);
    tcase_add_test(tc, test_host_bytes);
    tcase_add_test(tc, test_observer);
    tcase_add_test(tc, test_initial_state);
    tcase_add_test(tc, test_wait_before_lets_memory_come_back);
    tcase_add_test(tc, test_wait_before_delays_write_allocation);
    tcase_add_test(tc, test_wait_after_delays_what_follows);
    tcase_add_test(tc, test_wait_several_and_noop);
    tcase_add_test(tc, test_home_host_read_only);
    tcase_add_test(tc, test_home_host_written_and_home_device);
    tcase_add_test(tc, test_homes_rejected);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
