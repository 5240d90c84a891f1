/* tests/planner/test_curve.c - plan_curve_budgets / plan_curve_bandwidths
 * (planner/curve.h): on random traces every point's kept schedule is
 * valid at that point (budget and link) with the figures it carries, is
 * never worse than the planner alone at that point, and exposure never
 * rises from tight to loose points (budgets: by construction; links:
 * whenever the curve says monotone, checked independently); points come
 * back in the caller's order; the optimum skips planning; bad arguments
 * are refused. */
#include "tests/planner/plan_test_util.h"

#include "planner/curve.h"
#include "tests/check_main.h"

static plan_trace *random_trace(bool forced_copies)
{
    /* no initial: host data without forced_copies */
    tu_shape sh = {82, 30, 4, 0.5, forced_copies ? 0.4 : 0, 0.6, 0.2, 0};
    return tu_random_trace(&sh);
}

/* Point p's schedule judged again at its budget and link. */
static void assert_point_valid(const plan_trace *t, const plan_curve_point *p)
{
    ck_assert_ptr_nonnull(p->s);
    ck_assert_uint_eq(p->s->budget_bytes, p->budget);
    ck_assert(p->s->has_predicted);
    plan_trace view = *t;
    view.link = p->link;
    plan_metrics m;
    plan_violation v;
    ck_assert_msg(plan_simulate(&view, p->s, &m, &v, NULL) == 0,
                  "kept schedule invalid at its point: %s", v.message);
    ck_assert(m.peak_device_bytes <= p->budget);
    ck_assert_double_eq(m.exposed_us, p->m.exposed_us);
    ck_assert_uint_eq(m.h2d_bytes, p->m.h2d_bytes);
    ck_assert_uint_eq(m.peak_device_bytes, p->m.peak_device_bytes);
}

/* The planner alone at the point: the curve is never worse. */
static void assert_not_worse_than_alone(const plan_trace *t,
                                        const plan_curve_point *p,
                                        const char *planner)
{
    plan_trace view = *t;
    view.link = p->link;
    plan_schedule *s = NULL;
    plan_result res;
    int r = tu_plan(&view, p->budget, planner, &s, &res);
    if (r == 0 && s->predicted.peak_device_bytes <= p->budget) {
        ck_assert_msg(p->rc == 0, "%s alone fits budget %llu, the curve "
                      "says infeasible", planner,
                      (unsigned long long)p->budget);
        ck_assert_msg(p->m.exposed_us <= s->predicted.exposed_us,
                      "%s curve point exposes %.9g, alone %.9g", planner,
                      p->m.exposed_us, s->predicted.exposed_us);
    }
    plan_schedule_free(s);
}

static const char *const planners[] = {"hoplan", "seed-greedy",
                                       "reactive-lru", NULL};

START_TEST(test_budget_curves)
{
    unsigned n = tu_iters(60), reused = 0, infeasible = 0;
    tu_rng = 0xc0e7e001ull;
    for (unsigned it = 0; it < n; it++) {
        plan_trace *t = random_trace(true);
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        /* descending on purpose: the curve visits them ascending */
        uint64_t b[6];
        for (int k = 0; k < 6; k++)
            b[k] = sm.max_op_working_set / 2 +
                   (sm.no_offload_peak - sm.max_op_working_set / 2) *
                       (uint64_t)(6 - k) / 6 + 1;
        const char *pl = planners[it % 3];
        plan_options o = {pl, 0, 0, 0};
        plan_curve *c = NULL;
        ck_assert_msg(plan_curve_budgets(t, b, 6, &o, &c, tu_err,
                                         sizeof tu_err) == 0, "%s", tu_err);
        ck_assert_uint_eq(c->n_points, 6);
        ck_assert_int_eq(c->axis, PLAN_CURVE_BUDGET);
        ck_assert_str_eq(c->planner, pl);
        ck_assert_msg(c->monotone, "budget curve of %s not monotone", pl);
        ck_assert_uint_le(c->plans_made, 6);
        reused += c->reused;
        for (int k = 0; k < 6; k++) {
            const plan_curve_point *p = &c->points[k];
            ck_assert_uint_eq(p->budget, b[k]); /* the caller's order */
            if (p->rc == 0) {
                assert_point_valid(t, p);
                ck_assert_uint_lt(p->from, 6);
                /* the schedule came from a point no larger */
                ck_assert_uint_le(b[p->from], b[k]);
            } else {
                ck_assert_int_eq(p->rc, HO_E_INFEASIBLE);
                ck_assert_ptr_null(p->s);
                infeasible++;
            }
            if (p->planned)
                assert_not_worse_than_alone(t, p, pl);
            /* looser points never expose more (k+1 is tighter) */
            if (k > 0 && p->rc == 0)
                ck_assert(c->points[k - 1].rc == 0 &&
                          c->points[k - 1].m.exposed_us <= p->m.exposed_us);
        }
        plan_curve_free(c);
        plan_trace_free(t);
    }
    printf("test_curve: budgets: %u points kept an earlier schedule, %u "
           "infeasible\n", reused, infeasible);
    ck_assert_uint_gt(reused, 0); /* the reuse path ran */
}
END_TEST

START_TEST(test_bandwidth_curves)
{
    unsigned n = tu_iters(60), monotone = 0, reused = 0;
    tu_rng = 0xc0e7e002ull;
    const double sc[4] = {1.0, 0.25, 2.0, 0.5};
    for (unsigned it = 0; it < n; it++) {
        plan_trace *t = random_trace(true);
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        uint64_t budget = sm.max_op_working_set +
                          (sm.no_offload_peak - sm.max_op_working_set) / 2;
        const char *pl = planners[it % 3];
        plan_options o = {pl, 0, 0, 0};
        plan_curve *c = NULL;
        ck_assert_msg(plan_curve_bandwidths(t, budget, sc, 4, &o, &c, tu_err,
                                            sizeof tu_err) == 0,
                      "%s", tu_err);
        reused += c->reused;
        int order[4] = {1, 3, 0, 2}; /* ascending scale */
        bool mono = true;
        for (int k = 0; k < 4; k++) {
            const plan_curve_point *p = &c->points[k];
            ck_assert_double_eq(p->scale, sc[k]);
            ck_assert_double_eq_tol(p->link.h2d_gbps,
                                    t->link.h2d_gbps * sc[k], 1e-12);
            ck_assert_double_eq(p->link.latency_us, t->link.latency_us);
            if (p->rc == 0)
                assert_point_valid(t, p);
            if (p->planned)
                assert_not_worse_than_alone(t, p, pl);
        }
        for (int k = 1; k < 4; k++) {
            const plan_curve_point *a = &c->points[order[k - 1]],
                                   *b = &c->points[order[k]];
            if ((a->rc == 0 && b->rc != 0) ||
                (a->rc == 0 && b->m.exposed_us > a->m.exposed_us))
                mono = false;
        }
        ck_assert_int_eq(mono, c->monotone);
        monotone += mono;
        plan_curve_free(c);
        plan_trace_free(t);
    }
    printf("test_curve: bandwidths: %u of %u curves monotone, %u points "
           "kept an earlier schedule\n", monotone, n, reused);
    ck_assert_uint_gt(reused, 0);
}
END_TEST

/* Nothing exposed and nothing moved: the looser points are not planned. */
START_TEST(test_optimum_skips)
{
    tu_rng = 0xc0e7e003ull;
    unsigned skipped = 0;
    for (int it = 0; it < 10; it++) {
        plan_trace *t = random_trace(false);
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        uint64_t b[3] = {3 * sm.no_offload_peak, sm.no_offload_peak,
                         2 * sm.no_offload_peak};
        plan_curve *c = NULL;
        ck_assert_int_eq(plan_curve_budgets(t, b, 3, NULL, &c, tu_err,
                                            sizeof tu_err), 0);
        ck_assert_str_eq(c->planner, "hoplan");
        ck_assert(c->points[1].planned);
        ck_assert_int_eq(c->points[1].rc, 0);
        if (c->points[1].m.exposed_us == 0 &&
            c->points[1].m.h2d_bytes + c->points[1].m.d2h_bytes == 0) {
            ck_assert(!c->points[0].planned && !c->points[2].planned);
            ck_assert_uint_eq(c->plans_made, 1);
            ck_assert_uint_eq(c->points[0].from, 1);
            ck_assert_int_eq(c->points[0].rc, 0);
            assert_point_valid(t, &c->points[0]);
            skipped++;
        }
        ck_assert_uint_eq(c->no_offload_peak, sm.no_offload_peak);
        plan_curve_free(c);
        plan_trace_free(t);
    }
    ck_assert_uint_gt(skipped, 0);
}
END_TEST

START_TEST(test_bad_arguments)
{
    tu_rng = 0xc0e7e004ull;
    plan_trace *t = random_trace(true);
    plan_curve *c = NULL;
    uint64_t b[2] = {1000, 0};
    double s[2] = {1.0, 0.0};
    ck_assert_int_eq(plan_curve_budgets(t, b, 0, NULL, &c, tu_err,
                                        sizeof tu_err), -EINVAL);
    ck_assert_int_eq(plan_curve_budgets(t, b, PLAN_CURVE_MAX_POINTS + 1,
                                        NULL, &c, tu_err, sizeof tu_err),
                     -EINVAL);
    ck_assert_int_eq(plan_curve_budgets(t, b, 2, NULL, &c, tu_err,
                                        sizeof tu_err), -EINVAL);
    ck_assert_msg(strstr(tu_err, "budget 1 is 0"), "%s", tu_err);
    ck_assert_int_eq(plan_curve_bandwidths(t, 1000, s, 2, NULL, &c, tu_err,
                                           sizeof tu_err), -EINVAL);
    ck_assert_msg(strstr(tu_err, "scale 1"), "%s", tu_err);
    s[1] = NAN;
    ck_assert_int_eq(plan_curve_bandwidths(t, 1000, s, 2, NULL, &c, tu_err,
                                           sizeof tu_err), -EINVAL);
    ck_assert_int_eq(plan_curve_bandwidths(t, 0, s, 1, NULL, &c, tu_err,
                                           sizeof tu_err), -EINVAL);
    plan_options o = {"no-such-planner", 0, 0, 0};
    ck_assert_int_eq(plan_curve_budgets(t, b, 1, &o, &c, tu_err,
                                        sizeof tu_err), -EINVAL);
    ck_assert_msg(strstr(tu_err, "curve point 0"), "%s", tu_err);
    ck_assert_ptr_null(c);
    ck_assert_ptr_null(plan_curve_free(NULL));
    plan_curve_axis a;
    ck_assert_int_eq(plan_curve_axis_parse("bandwidth", &a), 0);
    ck_assert_int_eq(a, PLAN_CURVE_BANDWIDTH);
    ck_assert_int_eq(plan_curve_axis_parse("time", &a), -EINVAL);
    ck_assert_str_eq(plan_curve_axis_name(PLAN_CURVE_BUDGET), "budget");
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("curve");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_budget_curves);
    tcase_add_test(tc, test_bandwidth_curves);
    tcase_add_test(tc, test_optimum_skips);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ho_check_run(suite(), false);
}
