/*
 * tests/planner/test_baselines.c - the `none`, `ms-distance` and
 * `reactive-lru` baselines (planner/baselines.c) on hand-made traces,
 * plan_make's dispatch and result, and every baseline's output valid
 * under the model on generated traces (budget aside).
 */
#include "tests/planner/plan_test_util.h"

#include "planner/plan_impl.h"

static bool at(const plan_schedule *s, size_t i, uint32_t op, plan_when w,
               plan_act_kind k, uint64_t id)
{
    if (i >= s->n_actions)
        return false;
    const plan_action *a = &s->actions[i];
    return a->op == op && a->when == w && a->kind == k && a->storage_id == id;
}

static plan_schedule *run(const plan_trace *t, uint64_t budget,
                          const plan_options *o, plan_result *res)
{
    plan_schedule *s = NULL;
    int r = plan_make(t, budget, o, &s, res);
    ck_assert_msg(r == 0, "%s: %d %s", o->planner, r, res->message);
    return s;
}

START_TEST(test_none_forced_only)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_HOST, false, false); /* read: prefetched */
    tu_st(t, 2, 100, PLAN_INIT_HOST, true, false);  /* updated: stored */
    tu_st(t, 3, 100, PLAN_INIT_DEVICE, false, false);
    tu_st(t, 4, 100, PLAN_INIT_NONE, false, false);
    tu_st(t, 5, 100, PLAN_INIT_HOST, true, false);  /* overwritten */
    tu_op(t, 1, TU_R(2), TU_R(2, 4, 5));
    tu_op(t, 1, TU_R(1, 4), TU_NONE);
    tu_op(t, 1, TU_R(2, 3), TU_NONE);
    tu_finish(t);
    plan_options o = {"none", 0, 0, 0};
    plan_result res;
    plan_schedule *s = run(t, UINT64_MAX, &o, &res);
    ck_assert_uint_eq(s->n_actions, 6);
    ck_assert(at(s, 0, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 2));
    ck_assert(at(s, 1, 0, PLAN_AFTER, PLAN_ACT_STORE, 2));
    ck_assert(at(s, 2, 0, PLAN_AFTER, PLAN_ACT_STORE, 5));
    ck_assert(at(s, 3, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 5));
    ck_assert(at(s, 4, 1, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1));
    ck_assert(at(s, 5, 2, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 2));
    ck_assert(s->has_predicted);
    ck_assert_uint_eq(s->predicted.peak_device_bytes, res.no_offload_peak);
    ck_assert_uint_eq(res.working_set_bound, 300);
    ck_assert(res.planning_ms >= 0);
    plan_metrics m;
    plan_violation v;
    ck_assert(tu_valid(t, s, &m, &v));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_unknown_planner)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_DEVICE, false, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_options o = {"magic", 0, 0, 0};
    plan_schedule *s = NULL;
    plan_result res;
    ck_assert_int_eq(plan_make(t, 100, &o, &s, &res), -EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(res.message, "magic"));
    int n = 0;
    for (; plan_planner_names[n]; n++)
        ;
    ck_assert_int_eq(n, 6);
    ck_assert_str_eq(plan_planner_names[0], "hoplan");
    plan_trace_free(t);
}
END_TEST

/* 200 ops of 1 us; (write op, read op) per storage id 1..5. */
static plan_trace *distance_trace(void)
{
    static const int wr[5][2] = {
        {0, 150}, {0, 50}, {10, 190}, {20, 199}, {100, 105}};
    plan_trace *t = tu_trace(NULL);
    for (int k = 0; k < 5; k++)
        tu_st(t, (uint64_t)k + 1, 100, PLAN_INIT_NONE, false, false);
    for (int i = 0; i < 200; i++) {
        int rd[6], w[6], nr = 0, nw = 0;
        for (int k = 0; k < 5; k++) {
            if (wr[k][0] == i)
                w[nw++] = k + 1;
            if (wr[k][1] == i)
                rd[nr++] = k + 1;
        }
        rd[nr] = -1;
        w[nw] = -1;
        tu_op(t, 1, rd, w);
    }
    tu_finish(t);
    return t;
}

START_TEST(test_ms_distance)
{
    plan_trace *t = distance_trace();
    plan_result res;
    plan_metrics m;
    plan_violation v;
    /* defaults 100 / 100 / 50: storages 1, 3, 4 */
    plan_options o = {"ms-distance", 0, 0, 0};
    plan_schedule *s = run(t, UINT64_MAX, &o, &res);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 1), 1);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 2), 0);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 5), 0);
    long i = tu_find(s, PLAN_ACT_PREFETCH, 1);
    ck_assert_uint_eq(s->actions[i].op, 100);
    ck_assert_uint_eq(s->actions[i].when, PLAN_BEFORE);
    i = tu_find(s, PLAN_ACT_PREFETCH, 3);
    ck_assert_uint_eq(s->actions[i].op, 140);
    i = tu_find(s, PLAN_ACT_PREFETCH, 4);
    ck_assert_uint_eq(s->actions[i].op, 149);
    i = tu_find(s, PLAN_ACT_STORE, 4);
    ck_assert_uint_eq(s->actions[i].op, 20);
    ck_assert_uint_eq(s->actions[i].when, PLAN_AFTER);
    ck_assert(tu_valid(t, s, &m, &v));
    ck_assert(tu_close(m.exposed_us, 0));
    plan_schedule_free(s);
    /* select_num 2: the first two producers in execution order */
    o.select_num = 2;
    s = run(t, UINT64_MAX, &o, &res);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 1), 1);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 3), 1);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 4), 0);
    plan_schedule_free(s);
    /* distance 4, prefetch 10: 5 too, its prefetch clamped after the free */
    o.select_num = 0;
    o.select_distance = 4;
    o.prefetch_distance = 10;
    s = run(t, UINT64_MAX, &o, &res);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 2), 1);
    i = tu_find(s, PLAN_ACT_PREFETCH, 2);
    ck_assert_uint_eq(s->actions[i].op, 40);
    i = tu_find(s, PLAN_ACT_PREFETCH, 5);
    ck_assert_uint_eq(s->actions[i].op, 101);
    ck_assert(tu_valid(t, s, &m, &v));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_reactive_lru)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false); /* A */
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false); /* B */
    tu_st(t, 3, 1000, PLAN_INIT_NONE, false, false); /* C */
    tu_op(t, 10, TU_NONE, TU_R(1));
    tu_op(t, 10, TU_NONE, TU_R(2));
    tu_op(t, 10, TU_R(1), TU_NONE);
    tu_op(t, 10, TU_NONE, TU_R(3));
    tu_op(t, 10, TU_R(2), TU_NONE);
    tu_op(t, 10, TU_R(1, 3), TU_NONE);
    tu_finish(t);
    plan_options o = {"reactive-lru", 0, 0, 0};
    plan_result res;
    plan_schedule *s = run(t, 2000, &o, &res);
    ck_assert_uint_eq(s->n_actions, 6);
    /* before op3: B is the least recently used, dirty: stored, freed */
    ck_assert(at(s, 0, 3, PLAN_BEFORE, PLAN_ACT_STORE, 2));
    ck_assert(at(s, 1, 3, PLAN_BEFORE, PLAN_ACT_FREE_DEVICE, 2));
    /* before op4: A goes (C was used later), B is fetched on demand */
    ck_assert(at(s, 2, 4, PLAN_BEFORE, PLAN_ACT_STORE, 1));
    ck_assert(at(s, 3, 4, PLAN_BEFORE, PLAN_ACT_FREE_DEVICE, 1));
    ck_assert(at(s, 4, 4, PLAN_BEFORE, PLAN_ACT_PREFETCH, 2));
    ck_assert(at(s, 5, 5, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1));
    plan_metrics m;
    plan_violation v;
    ck_assert(tu_valid(t, s, &m, &v));
    /* every fetch is exposed: 2 us; the stores overlap compute */
    ck_assert(tu_close(m.exposed_us, 2));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_reactive_lru_clean_and_end_state)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_HOST, false, false); /* clean */
    tu_st(t, 2, 1000, PLAN_INIT_DEVICE, true, false);
    tu_st(t, 3, 1000, PLAN_INIT_HOST, true, false);
    tu_st(t, 4, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 10, TU_R(1), TU_NONE);
    tu_op(t, 10, TU_R(2, 3), TU_R(3));
    tu_op(t, 10, TU_NONE, TU_R(4));
    tu_op(t, 10, TU_R(1, 4), TU_NONE);
    tu_finish(t);
    plan_options o = {"reactive-lru", 0, 0, 0};
    plan_result res;
    plan_schedule *s = run(t, 2000, &o, &res);
    /* the host data evicted clean is never stored */
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 1), 0);
    ck_assert_uint_ge(tu_count(s, PLAN_ACT_PREFETCH, 1), 2);
    /* at the end 3 goes back to the host (stored: it was written) and 2,
     * retained on the device, is there */
    ck_assert_uint_ge(tu_count(s, PLAN_ACT_STORE, 3), 1);
    plan_metrics m;
    plan_violation v;
    ck_assert_msg(tu_valid(t, s, &m, &v), "%s", v.message);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* plan_none_peak (the walk that spares building and judging `none`)
 * equals the judge's peak for plan_none's schedule, on random traces with
 * every kind of storage, zero-length ops and slow or shared links (the
 * stores of retained initial: host data then free late). */
START_TEST(test_none_peak_matches_judge)
{
    const tu_shape shapes[] = {
        {60, 25, 4, 0.4, 0.5, 0.6, 0.1, 0.0},
        {200, 80, 6, 0.3, 0.6, 0.8, 0.05, 0.5},
        {20, 6, 3, 0.1, 0.9, 0.9, 0.2, 0.0},
    };
    unsigned iters = tu_iters(300), late = 0;
    for (unsigned it = 0; it < iters; it++) {
        plan_trace *t = tu_random_trace(&shapes[it % 3]);
        if (it % 4 == 0) { /* a link slow against the ops */
            t->link.h2d_gbps /= 50;
            t->link.d2h_gbps /= 50;
        }
        plan_schedule *s = NULL;
        plan_metrics m;
        plan_violation v;
        ck_assert_int_eq(plan_none(t, UINT64_MAX, &s), 0);
        ck_assert_msg(tu_valid(t, s, &m, &v), "trace %u: %s", it, v.message);
        uint64_t peak = 0;
        ck_assert_int_eq(plan_none_peak(t, &peak), 0);
        ck_assert_msg(peak == m.peak_device_bytes,
                      "trace %u: walk %llu, judge %llu", it,
                      (unsigned long long)peak,
                      (unsigned long long)m.peak_device_bytes);
        /* count the traces where a store delays a free past the next op */
        late += m.d2h_bytes > 0;
        plan_schedule_free(s);
        plan_trace_free(t);
    }
    ck_assert_uint_gt(late, iters / 10);
}
END_TEST

START_TEST(test_baselines_valid_on_generated)
{
    unsigned iters = tu_iters(60);
    for (unsigned it = 0; it < iters; it++) {
        plan_gen_random_cfg c;
        memset(&c, 0, sizeof c);
        c.seed = it * 7 + 1;
        c.n_ops = 20 + (uint32_t)(tu_rand() % 200);
        c.n_storages = 5 + (uint32_t)(tu_rand() % 60);
        c.max_refs_per_op = 4;
        c.min_bytes = 100;
        c.max_bytes = 100000;
        c.p_initial_device = 0.2;
        c.p_initial_host = 0.2;
        c.p_retained = 0.3;
        c.p_pinned = 0.1;
        c.p_movable = it % 2 ? 0.6 : 0.0;
        plan_trace *t = NULL;
        ck_assert_int_eq(plan_gen_random(&c, &t, tu_err, sizeof tu_err), 0);
        t->link.duplex = it & 1;
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        for (int p = 1; plan_planner_names[p]; p++) {
            if (strcmp(plan_planner_names[p], "oracle") == 0)
                continue;
            plan_options o = {plan_planner_names[p], 0, 0, 0};
            plan_result res;
            uint64_t budget = sm.max_op_working_set +
                              (sm.no_offload_peak - sm.max_op_working_set) / 2;
            plan_schedule *s = run(t, budget, &o, &res);
            plan_metrics m;
            plan_violation v;
            ck_assert_msg(tu_valid(t, s, &m, &v), "%s on seed %u: %s",
                          o.planner, it, v.message);
            ck_assert(s->has_predicted);
            ck_assert_uint_eq(s->predicted.peak_device_bytes,
                              m.peak_device_bytes);
            ck_assert(tu_close(s->predicted.exposed_us, m.exposed_us));
            plan_schedule_free(s);
        }
        plan_trace_free(t);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_baselines");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_none_forced_only);
    tcase_add_test(tc, test_unknown_planner);
    tcase_add_test(tc, test_ms_distance);
    tcase_add_test(tc, test_reactive_lru);
    tcase_add_test(tc, test_reactive_lru_clean_and_end_state);
    tcase_add_test(tc, test_baselines_valid_on_generated);
    tcase_add_test(tc, test_none_peak_matches_judge);
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
