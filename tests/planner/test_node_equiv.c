/*
 * tests/planner/test_node_equiv.c - NODE.md §3.2: one client alone on a
 * device, with no link narrower than the device, gets exactly
 * plan_simulate's figures.  Random traces with random links (bandwidths,
 * latency, duplex), schedules from every planner at several budgets; every
 * metric compared for equality (==, not a tolerance), for K = 1 and K = 3
 * steps, with the device's capacity equal to the budget and with links
 * equal to or wider than the device (duplex false too, on a device with
 * one engine, where both directions never overlap).
 */
#include "tests/planner/node_test_util.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rnd_unit(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static const char *const planners[] = {"hoplan", "none", "seed-greedy",
                                       "ms-distance", "reactive-lru"};
static const double fractions[] = {1.0, 0.85, 0.65, 0.45};

/* A node with one device of the trace's link figures, capacity exactly
 * `budget` (+ a reserve), under 0..3 links as wide or wider. */
static plan_node *node_for(const plan_link *l, uint64_t budget, int shape)
{
    plan_node *n = plan_node_new();
    const char *parent = NULL;
    uint64_t reserve = rnd() % 4096;
    char name[4][16];
    int depth = shape % 4;

    ck_assert_ptr_nonnull(n);
    for (int i = 0; i < depth; i++) {
        double f = (rnd() & 1) ? 1.0 : 1.0 + 3 * rnd_unit();
        snprintf(name[i], sizeof name[i], "l%d", i);
        /* duplex false only above a one-engine device */
        nu_link(n, name[i], parent, l->h2d_gbps * f, l->d2h_gbps * f,
                l->duplex || (rnd() & 1));
        parent = name[i];
    }
    nu_dev(n, 3, parent, (budget ? budget : 1) + reserve, l->h2d_gbps,
           l->d2h_gbps, l->latency_us, l->duplex);
    n->devices[0].reserve_bytes = reserve;
    nu_finish(n);
    return n;
}

static void same(const plan_metrics *m, const plan_node_result *r,
                 const char *what)
{
    const plan_node_client_fig *f = &r->clients[0];
    ck_assert_msg(f->step_time_us == m->step_time_us,
                  "%s: step %.17g vs %.17g", what, f->step_time_us,
                  m->step_time_us);
    ck_assert_msg(f->exposed_us == m->exposed_us, "%s: exposed %.17g vs %.17g",
                  what, f->exposed_us, m->exposed_us);
    ck_assert_msg(f->compute_us == m->compute_us, "%s: compute", what);
    ck_assert_msg(f->peak_device_bytes == m->peak_device_bytes,
                  "%s: peak %llu vs %llu", what,
                  (unsigned long long)f->peak_device_bytes,
                  (unsigned long long)m->peak_device_bytes);
    ck_assert_msg(f->peak_host_bytes == m->peak_host_bytes,
                  "%s: peak host %llu vs %llu", what,
                  (unsigned long long)f->peak_host_bytes,
                  (unsigned long long)m->peak_host_bytes);
    ck_assert_msg(f->h2d_bytes == m->h2d_bytes, "%s: h2d", what);
    ck_assert_msg(f->d2h_bytes == m->d2h_bytes, "%s: d2h", what);
    ck_assert_msg(f->alloc_wait_us == 0, "%s: alloc wait %g", what,
                  f->alloc_wait_us);
    ck_assert_msg(r->devices[0].peak_bytes == m->peak_device_bytes,
                  "%s: device peak %llu vs %llu", what,
                  (unsigned long long)r->devices[0].peak_bytes,
                  (unsigned long long)m->peak_device_bytes);
}

START_TEST(test_single_client_equals_plan_simulate)
{
    unsigned compared = 0, invalid_alone = 0;
    int rounds = getenv("HO_UNDER_VALGRIND") ? 3 : 25;

    rng_state = 0x5eed0000ull + (uint64_t)_i;
    for (int round = 0; round < rounds; round++) {
        plan_gen_random_cfg c = {
            .seed = rnd(), .n_ops = 20 + (uint32_t)(rnd() % 300),
            .n_storages = 5 + (uint32_t)(rnd() % 15),
            .max_refs_per_op = 1 + (uint32_t)(rnd() % 5),
            .min_bytes = 1000, .max_bytes = 1000 + rnd() % 5000000,
            .p_initial_device = 0.2 * rnd_unit(),
            .p_initial_host = 0.2 * rnd_unit(),
            .p_retained = 0.3 * rnd_unit(), .p_pinned = 0.05 * rnd_unit()};
        plan_trace *t = NULL;
        ck_assert_int_eq(plan_gen_random(&c, &t, tu_err, sizeof tu_err), 0);
        t->link.h2d_gbps = 0.5 + 30 * rnd_unit();
        t->link.d2h_gbps = (rnd() & 1) ? t->link.h2d_gbps
                                       : 0.5 + 30 * rnd_unit();
        t->link.latency_us = (rnd() & 3) ? 20 * rnd_unit() : 0;
        t->link.duplex = rnd() & 1;
        /* some retained device/host storages movable (PLANNER.md §1) */
        for (uint32_t x = 0; x < t->n_storages; x++) {
            plan_storage *st = &t->storages[x];
            if (st->retained && st->initial != PLAN_INIT_NONE && (rnd() & 1))
                st->movable = true;
        }
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        for (int combo = 0; combo < 20; combo++) {
        const char *pn = planners[combo % 5];
        double frac = fractions[combo / 5];
        uint64_t budget = (uint64_t)((double)sm.no_offload_peak * frac);
        if (budget < sm.max_op_working_set)
            budget = sm.max_op_working_set;
        plan_schedule *s = NULL;
        plan_result res;
        int r = tu_plan(t, budget, pn, &s, &res);
        if (r != 0) {
            ck_assert_int_eq(r, HO_E_INFEASIBLE);
            continue;
        }
        /* waits at random points (always valid), homes at random for the
         * movable storages (a home other than `initial` usually makes the
         * schedule invalid alone: both judges must then refuse it) */
        if (combo % 3 == 0) {
            uint32_t nw = 1 + (uint32_t)(rnd() % 8);
            for (uint32_t w = 0; w < nw; w++)
                ck_assert_int_eq(plan_schedule_push(
                                     s, t, (uint32_t)(rnd() % t->n_ops),
                                     (rnd() & 1) ? PLAN_AFTER : PLAN_BEFORE,
                                     PLAN_ACT_WAIT,
                                     (uint32_t)(rnd() % t->n_storages)),
                                 0);
        }
        if (combo % 4 == 1)
            for (uint32_t x = 0; x < t->n_storages; x++)
                if (t->storages[x].movable && (rnd() & 1))
                    ck_assert_int_eq(plan_schedule_set_home(
                                         s, t, x,
                                         (rnd() & 3) ? (plan_home)(
                                             t->storages[x].initial ==
                                             PLAN_INIT_HOST)
                                                     : (plan_home)(rnd() & 1)),
                                     0);
        ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err), 0);
        plan_metrics m;
        plan_violation v;
        int valid = plan_simulate(t, s, &m, &v, NULL);
        if (valid != 0 && (combo & 1)) {
            /* a baseline over its budget: judge it at its own peak
             * (half of them; the others must be refused) */
            plan_schedule at_peak = *s;
            at_peak.budget_bytes = m.peak_device_bytes;
            int again = plan_simulate(t, &at_peak, &m, &v, NULL);
            if (again == 0) {
                valid = 0;
                budget = m.peak_device_bytes;
            } else {
                m.peak_device_bytes = 0; /* invalid for another reason */
            }
        }
        plan_node *n = node_for(&t->link, budget, round + combo);
        plan_node_input in = nu_in("solo", t, s, 0, budget, 0.5 + rnd_unit(),
                                   PLAN_NONE);
        for (uint32_t k = 1; k <= 3; k += 2) {
            plan_node_opts o = {k};
            plan_node_result *nr = NULL;
            plan_node_violation nv;
            char what[96];
            int jr = plan_node_judge(n, &in, 1, &o, &nr, &nv);
            snprintf(what, sizeof what, "round %d %s %.2f K=%u", round, pn,
                     frac, k);
            if (valid != 0) {
                /* invalid or over budget alone: refused before running */
                ck_assert_msg(jr == HO_E_BAD_SCHEDULE, "%s: %d", what, jr);
                ck_assert_ptr_nonnull(strstr(nv.message, "invalid alone"));
                invalid_alone++;
                continue;
            }
            ck_assert_msg(jr == 0, "%s: %s", what, nv.message);
            same(&m, nr, what);
            compared++;
            plan_node_result_free(nr);
        }
        plan_node_free(n);
        plan_schedule_free(s);
        }
        plan_trace_free(t);
    }
    /* most schedules are within budget; a few baselines are not */
    ck_assert_uint_gt(compared, (unsigned)rounds * 10);
    ck_assert_uint_lt(invalid_alone, compared);
}
END_TEST

/* Generated training traces (many storages, realistic durations). */
START_TEST(test_train_trace_equals_plan_simulate)
{
    plan_trace *t = NULL;
    plan_gen_train_cfg c;
    memset(&c, 0, sizeof c);
    ck_assert_ptr_nonnull(plan_model_find("qwen2.5-0.5b"));
    ck_assert_ptr_nonnull(plan_device_find("910b"));
    c.model = *plan_model_find("qwen2.5-0.5b");
    c.device = *plan_device_find("910b");
    c.seq = 512;
    c.micro_batch = 1;
    c.n_micro = 2;
    c.dtype_bytes = 2;
    c.optimizer_step = true;
    c.optimizer_on_host = true;
    ck_assert_int_eq(plan_gen_train(&c, &t, tu_err, sizeof tu_err), 0);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    for (int i = 0; i < 3; i++) {
        uint64_t budget = (uint64_t)((double)sm.no_offload_peak *
                                     (0.9 - 0.2 * i));
        plan_schedule *s = NULL;
        plan_result res;
        if (tu_plan(t, budget, "hoplan", &s, &res) != 0)
            continue;
        plan_metrics m;
        plan_violation v;
        ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), 0);
        plan_node *n = node_for(&t->link, budget, i);
        plan_node_input in = nu_in("train", t, s, 0, budget, 1, PLAN_NONE);
        plan_node_result *nr = nu_judge(n, &in, 1, 3);
        same(&m, nr, "train");
        plan_node_result_free(nr);
        plan_node_free(n);
        plan_schedule_free(s);
    }
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("node_equiv");
    TCase *tc = tcase_create("equiv");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_single_client_equals_plan_simulate, 0, 4);
    tcase_add_test(tc, test_train_trace_equals_plan_simulate);
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
