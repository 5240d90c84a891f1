/*
 * tests/planner/test_property.c - properties over thousands of generated
 * traces (P1's plan_gen_random, then a random link, durations with zeros,
 * duplex or not) and budgets from below the single-op bound up to the
 * no-offload peak:
 * - every hoplan schedule is valid, within its budget, its `predicted`
 *   figures are the judge's, and planning twice gives the same actions;
 * - hoplan fails only with HO_E_INFEASIBLE and a reason, never at or above
 *   the no-offload peak, and then min_budget is itself met;
 * - every baseline's schedule is valid under the model (budget aside).
 * HO_PLANNER_ITERS scales the number of traces (default 1 = 2000).
 */
#include "tests/planner/plan_test_util.h"

static plan_trace *random_trace(unsigned it)
{
    /* movable marks change nothing for planners that set no homes */
    tu_shape sh = {80, 30, 5, 0.4, 0.4, 0.5, 0.2, it % 2 ? 0.5 : 0.0};
    return tu_random_trace(&sh);
}

static bool same_actions(const plan_schedule *a, const plan_schedule *b)
{
    if (a->n_actions != b->n_actions)
        return false;
    for (size_t i = 0; i < a->n_actions; i++) {
        const plan_action *x = &a->actions[i], *y = &b->actions[i];
        if (x->op != y->op || x->when != y->when || x->kind != y->kind ||
            x->storage_id != y->storage_id)
            return false;
    }
    return true;
}

static void check_hoplan(const plan_trace *t, const plan_trace_summary *sm,
                         uint64_t budget, unsigned it, unsigned *infeasible)
{
    plan_schedule *s = NULL, *s2 = NULL;
    plan_result res;
    plan_metrics m;
    plan_violation v;
    int r = tu_plan(t, budget, "hoplan", &s, &res);
    if (r == HO_E_INFEASIBLE) {
        (*infeasible)++;
        ck_assert_ptr_null(s);
        ck_assert_msg(budget < sm->no_offload_peak,
                      "trace %u: infeasible at %llu >= no-offload peak", it,
                      (unsigned long long)budget);
        ck_assert_msg(res.message[0], "trace %u: no reason given", it);
        ck_assert_uint_gt(res.min_budget, budget);
        ck_assert_uint_ge(res.min_budget, sm->max_op_working_set);
        budget = res.min_budget;
        r = tu_plan(t, budget, "hoplan", &s, &res);
        ck_assert_msg(r == 0, "trace %u: min_budget not met: %s", it,
                      res.message);
    }
    ck_assert_msg(r == 0, "trace %u: hoplan %d %s", it, r, res.message);
    ck_assert_msg(tu_valid(t, s, &m, &v), "trace %u: invalid: %s", it,
                  v.message);
    ck_assert_msg(m.peak_device_bytes <= budget, "trace %u: over budget",
                  it);
    ck_assert_uint_eq(s->predicted.peak_device_bytes, m.peak_device_bytes);
    ck_assert_uint_eq(s->predicted.h2d_bytes, m.h2d_bytes);
    ck_assert(tu_close(s->predicted.exposed_us, m.exposed_us));
    ck_assert_int_eq(tu_plan(t, budget, "hoplan", &s2, &res), 0);
    ck_assert_msg(same_actions(s, s2), "trace %u: not deterministic", it);
    plan_schedule_free(s);
    plan_schedule_free(s2);
}

START_TEST(test_random_traces)
{
    unsigned iters = tu_iters(2000), infeasible = 0, runs = 0;
    for (unsigned it = 0; it < iters; it++) {
        plan_trace *t = random_trace(it);
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        uint64_t lo = sm.max_op_working_set, hi = sm.no_offload_peak;
        uint64_t budgets[4] = {lo ? lo - 1 : 0, lo,
                               lo + (uint64_t)((double)(hi - lo) * tu_frand()),
                               hi};
        for (int b = 0; b < 4; b++) {
            check_hoplan(t, &sm, budgets[b], it, &infeasible);
            runs++;
            for (int p = 1; plan_planner_names[p]; p++) {
                if (strcmp(plan_planner_names[p], "oracle") == 0)
                    continue;
                plan_schedule *s = NULL;
                plan_result res;
                plan_metrics m;
                plan_violation v;
                int r = tu_plan(t, budgets[b], plan_planner_names[p], &s,
                                &res);
                ck_assert_msg(r == 0, "trace %u %s: %d %s", it,
                              plan_planner_names[p], r, res.message);
                ck_assert_msg(tu_valid(t, s, &m, &v), "trace %u %s: %s", it,
                              plan_planner_names[p], v.message);
                plan_schedule_free(s);
            }
        }
        plan_trace_free(t);
    }
    /* the bound minus one is always infeasible */
    ck_assert_uint_ge(infeasible, iters);
    printf("property: %u traces, %u hoplan runs, %u infeasible\n", iters,
           runs, infeasible);
}
END_TEST

START_TEST(test_larger_traces)
{
    unsigned iters = tu_iters(12);
    for (unsigned it = 0; it < iters; it++) {
        plan_gen_random_cfg c;
        memset(&c, 0, sizeof c);
        c.seed = 1000 + it;
        c.n_ops = 2000 + (uint32_t)(tu_rand() % 3000);
        c.n_storages = 300 + (uint32_t)(tu_rand() % 1000);
        c.p_initial_device = 0.1;
        c.p_initial_host = 0.1;
        c.p_retained = 0.2;
        c.p_pinned = 0.05;
        plan_trace *t = NULL;
        ck_assert_int_eq(plan_gen_random(&c, &t, tu_err, sizeof tu_err), 0);
        t->link.duplex = it & 1;
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        unsigned inf = 0;
        for (int pct = 50; pct <= 90; pct += 20)
            check_hoplan(t, &sm, sm.no_offload_peak / 100 * (uint64_t)pct, it,
                         &inf);
        plan_trace_free(t);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_property");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_random_traces);
    tcase_add_test(tc, test_larger_traces);
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
