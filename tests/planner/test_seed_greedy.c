/*
 * tests/planner/test_seed_greedy.c - the seed-greedy baseline
 * (planner/baselines.c), re-expressed from the Hyper-Parallel RFC's test
 * plan (planning/test_greedy_planner.py: basic budget satisfaction,
 * write-before-copy safety, retained sid handling) and PLANNER.md §5:
 * the candidate order, the actions it emits, its exposed H2D and a case
 * where it goes over budget.
 */
#include "tests/planner/plan_test_util.h"

/* Action (op, when, kind) on storage id exists. */
static bool has(const plan_schedule *s, uint32_t op, plan_when w,
                plan_act_kind k, uint64_t id)
{
    for (size_t i = 0; i < s->n_actions; i++) {
        const plan_action *a = &s->actions[i];
        if (a->op == op && a->when == w && a->kind == k && a->storage_id == id)
            return true;
    }
    return false;
}

static plan_schedule *seed(const plan_trace *t, uint64_t budget)
{
    plan_schedule *s;
    plan_result res;
    int r = tu_plan(t, budget, "seed-greedy", &s, &res);
    ck_assert_msg(r == 0, "seed-greedy: %d %s", r, res.message);
    ck_assert_str_eq(s->planner, "seed-greedy");
    return s;
}

/* Forward A, B, C, D, backward D, C, B, A (1000 B each, 10 us ops). */
static plan_trace *lifo(void)
{
    plan_trace *t = tu_trace(NULL);
    for (int id = 1; id <= 4; id++)
        tu_st(t, (uint64_t)id, 1000, PLAN_INIT_NONE, false, false);
    for (int id = 1; id <= 4; id++)
        tu_op(t, 10, TU_NONE, ((const int[]){id, -1}));
    for (int id = 4; id >= 1; id--)
        tu_op(t, 10, ((const int[]){id, -1}), TU_NONE);
    tu_finish(t);
    return t;
}

START_TEST(test_basic_budget_satisfaction)
{
    plan_trace *t = lifo();
    plan_schedule *s = seed(t, 3000);
    plan_metrics m;
    plan_violation v;
    /* only A's gap (the longest) is needed */
    ck_assert(has(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1));
    ck_assert(has(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1));
    ck_assert(has(s, 7, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1)); /* no lookahead */
    ck_assert(has(s, 7, PLAN_AFTER, PLAN_ACT_FREE_HOST, 1));
    ck_assert_uint_eq(s->n_actions, 4);
    s->budget_bytes = 3000;
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), 0);
    ck_assert_uint_eq(m.peak_device_bytes, 3000);
    /* its H2D is fully exposed: 1000 B at 1 GB/s */
    ck_assert(tu_close(m.exposed_us, 1));
    ck_assert(tu_close(s->predicted.exposed_us, 1));
    plan_schedule_free(s);

    /* two gaps for a tighter budget, longest first */
    s = seed(t, 2000);
    ck_assert(has(s, 7, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1));
    ck_assert(has(s, 6, PLAN_BEFORE, PLAN_ACT_PREFETCH, 2));
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 3), 0);
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), 0);
    ck_assert(tu_close(m.exposed_us, 2));
    plan_schedule_free(s);

    /* no budget pressure: no action at all */
    s = seed(t, 4000);
    ck_assert_uint_eq(s->n_actions, 0);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_write_before_copy_safety)
{
    /* A: written op0, updated in place op1, read op2, read again op6;
     * F fills ops 3..5 so that A's gap 2..6 must go */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 3000, PLAN_INIT_NONE, false, false);
    tu_op(t, 10, TU_NONE, TU_R(1));
    tu_op(t, 10, TU_R(1), TU_R(1));
    tu_op(t, 10, TU_R(1), TU_NONE);
    tu_op(t, 10, TU_NONE, TU_R(2));
    tu_op(t, 10, TU_R(2), TU_NONE);
    tu_op(t, 10, TU_R(2), TU_NONE);
    tu_op(t, 10, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = seed(t, 3000);
    /* D2H after the latest write at or before the gap start (op1), not
     * after the first write nor after the gap start */
    ck_assert(has(s, 1, PLAN_AFTER, PLAN_ACT_STORE, 1));
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 1), 1);
    ck_assert(has(s, 2, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1));
    ck_assert(has(s, 6, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1));
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), 0); /* not stale */
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_retained_handling)
{
    /* R retained, T not; both offloaded over the filler's ops */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, true, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 3, 3000, PLAN_INIT_NONE, false, false);
    tu_op(t, 10, TU_NONE, TU_R(1, 2));
    tu_op(t, 10, TU_NONE, TU_R(3));
    tu_op(t, 10, TU_R(3), TU_NONE);
    tu_op(t, 10, TU_R(1, 2), TU_NONE);
    tu_finish(t);
    plan_schedule *s = seed(t, 3000);
    ck_assert(has(s, 3, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1));
    ck_assert(has(s, 3, PLAN_BEFORE, PLAN_ACT_PREFETCH, 2));
    /* the retained one stays on the device at the end, keeps its host copy;
     * the other one's host copy is released after its last access */
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_FREE_HOST, 1), 0);
    ck_assert(has(s, 3, PLAN_AFTER, PLAN_ACT_FREE_HOST, 2));
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_FREE_DEVICE, 1), 1);
    plan_metrics m;
    plan_violation v;
    /* valid (both stores are still running when F arrives: over budget) */
    ck_assert_msg(tu_valid(t, s, &m, &v), "%s", v.message);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* Storages 1 and 2 with the given (write op, read op, bytes), filler F
 * (id 9, 3000 B) live over ops 2..4, 7 ops of 10 us: removing either 1 or
 * 2 is enough for a budget of 3000 + max(bytes). */
static plan_trace *order_case(uint32_t w1, uint32_t r1, uint64_t b1,
                              uint32_t w2, uint32_t r2, uint64_t b2)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, b1, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, b2, PLAN_INIT_NONE, false, false);
    tu_st(t, 9, 3000, PLAN_INIT_NONE, false, false);
    for (uint32_t i = 0; i < 7; i++) {
        int rd[4], wr[4], nr = 0, nw = 0;
        if (i == w1)
            wr[nw++] = 1;
        if (i == w2)
            wr[nw++] = 2;
        if (i == 2)
            wr[nw++] = 9;
        if (i == r1)
            rd[nr++] = 1;
        if (i == r2)
            rd[nr++] = 2;
        if (i == 4)
            rd[nr++] = 9;
        rd[nr] = -1;
        wr[nw] = -1;
        tu_op(t, 10, rd, wr);
    }
    tu_finish(t);
    return t;
}

START_TEST(test_candidate_order)
{
    plan_schedule *s;
    /* longer gap first, though smaller */
    plan_trace *t = order_case(0, 6, 1000, 1, 5, 2000);
    s = seed(t, 3000 + 2000);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 1), 1);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 2), 0);
    plan_schedule_free(s);
    plan_trace_free(t);
    /* same length: larger first */
    t = order_case(0, 5, 1000, 1, 6, 2000);
    s = seed(t, 3000 + 2000);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 1), 0);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 2), 1);
    plan_schedule_free(s);
    plan_trace_free(t);
    /* same length and size: earlier release first (-release descending) */
    t = order_case(1, 6, 1000, 0, 5, 1000);
    s = seed(t, 3000 + 1000);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 1), 0);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 2), 1);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_goes_over_budget)
{
    /* A's store cannot end before B is allocated: the seed counts A gone
     * from op1 on, the model holds it until its copy ends. */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 10, TU_NONE, TU_R(1));
    tu_op(t, 10, TU_NONE, TU_R(2));
    tu_op(t, 10, TU_R(2), TU_NONE);
    tu_op(t, 10, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = seed(t, 1500);
    ck_assert(has(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1));
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(v.message, "over budget"));
    ck_assert_uint_eq(v.op, 1);
    ck_assert_uint_eq(m.peak_device_bytes, 2000);
    ck_assert(tu_valid(t, s, &m, &v)); /* valid otherwise */
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_ignores_time)
{
    /* Same trace, ops 1000x longer: the seed's output is the same (it
     * works in op counts), only the model's figures change. */
    plan_trace *a = lifo(), *b = lifo();
    for (uint32_t i = 0; i < b->n_ops; i++)
        b->ops[i].duration_us *= 1000;
    plan_schedule *sa = seed(a, 2000), *sb = seed(b, 2000);
    ck_assert_uint_eq(sa->n_actions, sb->n_actions);
    for (size_t i = 0; i < sa->n_actions; i++) {
        ck_assert_uint_eq(sa->actions[i].op, sb->actions[i].op);
        ck_assert_uint_eq(sa->actions[i].kind, sb->actions[i].kind);
        ck_assert_uint_eq(sa->actions[i].storage_id,
                          sb->actions[i].storage_id);
    }
    /* exposed either way: right before the consumer */
    ck_assert(tu_close(sb->predicted.exposed_us, 2));
    plan_schedule_free(sa);
    plan_schedule_free(sb);
    plan_trace_free(a);
    plan_trace_free(b);
}
END_TEST

START_TEST(test_host_data_and_repeated_gaps_valid)
{
    /* host optimizer-like state (retained, updated), a parameter read
     * three times (same data: stored once), a pinned one (never moved) */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_HOST, true, false);
    tu_st(t, 2, 1000, PLAN_INIT_DEVICE, true, false);
    tu_st(t, 3, 1000, PLAN_INIT_NONE, false, true);
    tu_st(t, 4, 4000, PLAN_INIT_NONE, false, false);
    tu_op(t, 10, TU_R(2), TU_R(3));
    tu_op(t, 10, TU_NONE, TU_R(4));
    tu_op(t, 10, TU_R(2, 4), TU_NONE);
    tu_op(t, 10, TU_R(4), TU_NONE);
    tu_op(t, 10, TU_R(2, 3), TU_NONE);
    tu_op(t, 10, TU_R(1), TU_R(1));
    tu_finish(t);
    plan_schedule *s = seed(t, 5000);
    plan_metrics m;
    plan_violation v;
    ck_assert_msg(tu_valid(t, s, &m, &v), "%s", v.message);
    ck_assert_uint_le(tu_count(s, PLAN_ACT_STORE, 2), 1);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_FREE_DEVICE, 3), 0);
    ck_assert(has(s, 5, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1));
    ck_assert(has(s, 5, PLAN_AFTER, PLAN_ACT_STORE, 1));
    ck_assert(has(s, 5, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_seed_greedy");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_basic_budget_satisfaction);
    tcase_add_test(tc, test_write_before_copy_safety);
    tcase_add_test(tc, test_retained_handling);
    tcase_add_test(tc, test_candidate_order);
    tcase_add_test(tc, test_goes_over_budget);
    tcase_add_test(tc, test_ignores_time);
    tcase_add_test(tc, test_host_data_and_repeated_gaps_valid);
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
