/*
 * tests/planner/test_bound_transformer.c - the bound on the transformer
 * training traces of issue 8 (LLaMA-2-7B and LLaMA-3-8B, seq 32768, 910b
 * profile: what `hoctl trace gen train --model M --seq 32768` writes),
 * state on device, optimizer state on host, and parameters + optimizer
 * state movable; at 50% of the no-offload peak and at hoplan's minimum
 * budget.  Asserts that no valid schedule (hoplan, the baselines) beats the
 * bound in fast or full mode, and prints one line per case: the best valid
 * exposure, the bounds, exposed / bound and the bound's time - the figures
 * of docs/bound.md §6.  Timing is printed, never asserted.
 */
#include "tests/planner/plan_test_util.h"

#include <time.h>

#include "planner/bound/bound.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static plan_trace *train(const char *model, bool opt_host, bool movable)
{
    plan_gen_train_cfg c;
    plan_trace *t = NULL;
    memset(&c, 0, sizeof c);
    c.model = *plan_model_find(model);
    c.device = *plan_device_find("910b");
    c.seq = 32768;
    c.micro_batch = 1;
    c.n_micro = 1;
    c.dtype_bytes = 2;
    c.optimizer_on_host = opt_host;
    c.optimizer_step = true;
    ck_assert_int_eq(plan_gen_train(&c, &t, tu_err, sizeof tu_err), 0);
    if (movable)
        for (uint32_t s = 0; s < t->n_storages; s++) {
            plan_storage *st = &t->storages[s];
            if ((st->kind == PLAN_KIND_PARAM ||
                 st->kind == PLAN_KIND_OPTIMIZER) &&
                st->retained && st->initial != PLAN_INIT_NONE)
                st->movable = true;
        }
    return t;
}

static const char *const planners[] = {"hoplan", "none", "seed-greedy",
                                       "ms-distance", "reactive-lru", NULL};

static void one(const char *label, const plan_trace *t, uint64_t budget,
                const char *blabel)
{
    double best = INFINITY, hop = NAN;
    for (int p = 0; planners[p]; p++) {
        plan_schedule *s = NULL;
        plan_result res;
        if (tu_plan(t, budget, planners[p], &s, &res) < 0)
            continue;
        plan_schedule copy = *s;
        plan_metrics m;
        plan_violation v;
        copy.budget_bytes = budget;
        if (plan_simulate(t, &copy, &m, &v, NULL) == 0) {
            if (m.exposed_us < best)
                best = m.exposed_us;
            if (p == 0)
                hop = m.exposed_us;
        }
        plan_schedule_free(s);
    }
    double b[3] = {0, 0, 0}, ms[3] = {0, 0, 0};
    plan_bound_result r[3];
    memset(r, 0, sizeof r); /* r[2] stays empty when full is skipped */
    for (int md = PLAN_BOUND_FAST; md <= PLAN_BOUND_FULL; md++) {
        plan_bound_options o = {(plan_bound_mode)md, 0, 0, 0, 0, 0};
        /* full with a 4 s limit here, and none under the sanitizers or
         * valgrind, so that the suite stays within ctest's timeout; the
         * figures printed are for that limit */
        if (md == PLAN_BOUND_FULL)
            o.time_limit_ms = 4000;
        if (md == PLAN_BOUND_FULL &&
            (getenv("HO_UNDER_VALGRIND") || getenv("ASAN_OPTIONS")))
            break;
        double t0 = now_ms();
        ck_assert_int_eq(plan_exposure_bound(t, budget, NULL, &o, &r[md],
                                             tu_err, sizeof tu_err),
                         0);
        ms[md] = now_ms() - t0;
        b[md] = r[md].bound_us;
        if (isfinite(best))
            ck_assert_msg(best * (1 + 1e-9) >= b[md],
                          "%s %s: a valid schedule (%.3f ms) beats the %s "
                          "bound %.3f ms",
                          label, blabel, best / 1e3,
                          plan_bound_mode_name((plan_bound_mode)md),
                          b[md] / 1e3);
    }
    if (!r[2].source)
        r[2].source = "not run";
    printf("%-34s %-5s hoplan %9.1f ms  best %9.1f ms  bound fast %8.1f ms "
           "(%s, %u ck, %.0f ms)  full %8.1f ms (%s, %u ck, %.0f ms)  "
           "hoplan/full %.2f  best/full %.2f\n",
           label, blabel, hop / 1e3, best / 1e3, b[1] / 1e3, r[1].source,
           r[1].checkpoints, ms[1], b[2] / 1e3, r[2].source,
           r[2].checkpoints, ms[2], hop / b[2], best / b[2]);
}

START_TEST(test_transformers)
{
    static const struct {
        const char *model;
        bool opt_host, movable;
        const char *label;
    } cases[] = {
        {"llama2-7b", false, false, "llama2-7b, state on device"},
        {"llama3-8b", false, false, "llama3-8b, state on device"},
        {"llama2-7b", true, false, "llama2-7b, optimizer on host"},
        {"llama3-8b", true, false, "llama3-8b, optimizer on host"},
        {"llama2-7b", false, true, "llama2-7b, param+opt movable"},
        {"llama3-8b", false, true, "llama3-8b, param+opt movable"},
    };
    setvbuf(stdout, NULL, _IOLBF, 0);
    size_t nc = getenv("HO_UNDER_VALGRIND") ? 1 : sizeof cases / sizeof cases[0];
    for (size_t c = 0; c < nc; c++) {
        plan_trace *t = train(cases[c].model, cases[c].opt_host,
                              cases[c].movable);
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        one(cases[c].label, t, sm.no_offload_peak / 2, "50%");
        /* hoplan's smallest budget */
        plan_schedule *s = NULL;
        plan_result res;
        memset(&res, 0, sizeof res);
        int r = tu_plan(t, 1, "hoplan", &s, &res);
        plan_schedule_free(s);
        if (r == HO_E_INFEASIBLE && res.min_budget)
            one(cases[c].label, t, res.min_budget, "min");
        plan_trace_free(t);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_bound_transformer");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_transformers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
