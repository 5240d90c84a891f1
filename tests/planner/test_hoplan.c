/*
 * tests/planner/test_hoplan.c - hoplan (planner/hoplan*.c) on traces whose
 * good schedule is known: budget-exact, time-aware prefetch, version-
 * correct copies, dead data freed for free, pinned data kept, infeasible
 * budgets reported with the smallest budget it meets, determinism,
 * hoplan against seed-greedy on transformer training steps, and the
 * forward planner's backlog-aware (edf) lookahead.
 */
#include "tests/planner/plan_test_util.h"

#include "planner/hoplan_impl.h"

static plan_schedule *hoplan_ok(const plan_trace *t, uint64_t budget)
{
    plan_schedule *s;
    plan_result res;
    int r = tu_plan(t, budget, "hoplan", &s, &res);
    ck_assert_msg(r == 0, "hoplan at %llu: %d %s",
                  (unsigned long long)budget, r, res.message);
    plan_metrics m;
    plan_violation v;
    ck_assert_msg(tu_valid(t, s, &m, &v), "invalid: %s", v.message);
    ck_assert_uint_le(m.peak_device_bytes, budget);
    ck_assert_uint_eq(s->predicted.peak_device_bytes, m.peak_device_bytes);
    ck_assert(tu_close(s->predicted.exposed_us, m.exposed_us));
    ck_assert_uint_eq(s->budget_bytes, budget);
    ck_assert_str_eq(s->planner, "hoplan");
    return s;
}

/* Forward A, B, C, D, backward D, C, B, A (1000 B each), ops of `d` us. */
static plan_trace *lifo(double d)
{
    plan_trace *t = tu_trace(NULL);
    for (int id = 1; id <= 4; id++)
        tu_st(t, (uint64_t)id, 1000, PLAN_INIT_NONE, false, false);
    for (int id = 1; id <= 4; id++)
        tu_op(t, d, TU_NONE, ((const int[]){id, -1}));
    for (int id = 4; id >= 1; id--)
        tu_op(t, d, ((const int[]){id, -1}), TU_NONE);
    tu_finish(t);
    return t;
}

START_TEST(test_loose_budget_no_action)
{
    plan_trace *t = lifo(10);
    plan_schedule *s = hoplan_ok(t, 4000);
    ck_assert_uint_eq(s->n_actions, 0);
    ck_assert(tu_close(s->predicted.exposed_us, 0));
    plan_schedule_free(s);
    s = hoplan_ok(t, UINT64_MAX);
    ck_assert_uint_eq(s->n_actions, 0);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_hidden_prefetch)
{
    /* copies take 1 us, ops 100 us: everything can hide */
    plan_trace *t = lifo(100);
    plan_schedule *s = hoplan_ok(t, 3000);
    ck_assert(tu_close(s->predicted.exposed_us, 0));
    ck_assert_uint_eq(s->predicted.peak_device_bytes, 3000);
    /* A goes (the longest gap) and comes back one op before its consumer
     * (op 7), not right before it */
    long i = tu_find(s, PLAN_ACT_PREFETCH, 1);
    ck_assert_int_ge(i, 0);
    ck_assert_uint_lt(s->actions[i].op, 7);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 1), 1);
    plan_schedule_free(s);
    /* seed-greedy on the same: its prefetch right before op 7 stalls */
    plan_result res;
    ck_assert_int_eq(tu_plan(t, 3000, "seed-greedy", &s, &res), 0);
    ck_assert(tu_close(s->predicted.exposed_us, 1));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_prefetch_as_late_as_the_engine_allows)
{
    /* four 10000-B storages (10 us copies) must leave while F (40000 B)
     * lives, and come back for four consumers of 5 us each: the serialised
     * engine must start 40 us ahead, during the idle op 4, which memory
     * allows once F is gone */
    plan_trace *t = tu_trace(NULL);
    for (int id = 1; id <= 4; id++)
        tu_st(t, (uint64_t)id, 10000, PLAN_INIT_NONE, false, false);
    tu_st(t, 9, 40000, PLAN_INIT_NONE, false, false);
    tu_op(t, 100, TU_NONE, TU_R(1, 2, 3, 4));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_NONE, TU_R(9));
    tu_op(t, 100, TU_R(9), TU_NONE);
    tu_op(t, 100, TU_NONE, TU_NONE);
    for (int id = 1; id <= 4; id++)
        tu_op(t, 5, ((const int[]){id, -1}), TU_NONE);
    tu_finish(t);
    plan_schedule *s = hoplan_ok(t, 60000);
    ck_assert(tu_close(s->predicted.exposed_us, 0));
    unsigned n = 0;
    for (int id = 1; id <= 4; id++) {
        unsigned c = tu_count(s, PLAN_ACT_PREFETCH, (uint64_t)id);
        ck_assert_uint_le(c, 1);
        if (c) { /* during the idle op or later, before its consumer */
            long i = tu_find(s, PLAN_ACT_PREFETCH, (uint64_t)id);
            ck_assert_uint_ge(s->actions[i].op, 4);
            ck_assert_uint_le(s->actions[i].op, 4 + (uint32_t)id);
        }
        n += c;
    }
    ck_assert_uint_ge(n, 2);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_infeasible_reports_min_budget)
{
    plan_trace *t = lifo(10);
    plan_schedule *s = NULL;
    plan_result res;
    /* op 0 alone needs 1000 B */
    ck_assert_int_eq(tu_plan(t, 999, "hoplan", &s, &res), HO_E_INFEASIBLE);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(res.message, "smallest budget"));
    ck_assert_uint_ge(res.min_budget, 1000);
    ck_assert_uint_le(res.min_budget, res.no_offload_peak);
    ck_assert_uint_eq(res.working_set_bound, 1000);
    plan_schedule *ok = hoplan_ok(t, res.min_budget);
    plan_schedule_free(ok);
    /* the answer does not depend on the budget asked for */
    uint64_t first = res.min_budget;
    ck_assert_int_eq(tu_plan(t, 1, "hoplan", &s, &res), HO_E_INFEASIBLE);
    ck_assert_uint_eq(res.min_budget, first);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_initial_device_total_is_a_floor)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 5000, PLAN_INIT_DEVICE, false, false);
    tu_st(t, 2, 100, PLAN_INIT_NONE, false, false);
    tu_op(t, 10, TU_NONE, TU_R(2));
    tu_op(t, 10, TU_R(1, 2), TU_NONE);
    tu_finish(t);
    plan_schedule *s = NULL;
    plan_result res;
    ck_assert_int_eq(tu_plan(t, 4000, "hoplan", &s, &res), HO_E_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(res.message, "step start"));
    ck_assert_uint_ge(res.min_budget, 5000);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_host_readonly_never_stored)
{
    /* a host parameter P read at op 0, 4 and 8; activations fill the
     * gaps */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 2000, PLAN_INIT_HOST, true, false);
    tu_st(t, 2, 3000, PLAN_INIT_NONE, false, false);
    tu_st(t, 3, 3000, PLAN_INIT_NONE, false, false);
    tu_op(t, 100, TU_R(1), TU_NONE);
    tu_op(t, 100, TU_NONE, TU_R(2));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_R(2), TU_NONE);
    tu_op(t, 100, TU_R(1), TU_NONE);
    tu_op(t, 100, TU_NONE, TU_R(3));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_R(3), TU_NONE);
    tu_op(t, 100, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = hoplan_ok(t, 3000);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 1), 0);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 1), 3);
    /* each fetch (2 us) can only start once the filler is gone */
    ck_assert_double_le(s->predicted.exposed_us, 6 + 1e-6);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_device_readonly_stored_once)
{
    /* same with the parameter on the device: stored once, fetched twice */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 2000, PLAN_INIT_DEVICE, true, false);
    tu_st(t, 2, 3000, PLAN_INIT_NONE, false, false);
    tu_st(t, 3, 3000, PLAN_INIT_NONE, false, false);
    tu_op(t, 100, TU_R(1), TU_NONE);
    tu_op(t, 100, TU_NONE, TU_R(2));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_R(2), TU_NONE);
    tu_op(t, 100, TU_R(1), TU_NONE);
    tu_op(t, 100, TU_NONE, TU_R(3));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_R(3), TU_NONE);
    tu_op(t, 100, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = hoplan_ok(t, 3000);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 1), 1);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 1), 2);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_versions_stored_after_each_write)
{
    /* G written at op 0 and rewritten (read-modify-write) at op 5; both
     * versions are needed after a long gap (idle ops give its stores
     * time before the fillers arrive) */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 2000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 3000, PLAN_INIT_NONE, false, false);
    tu_st(t, 3, 3000, PLAN_INIT_NONE, false, false);
    tu_op(t, 100, TU_NONE, TU_R(1));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_NONE, TU_R(2));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_R(2), TU_NONE);
    tu_op(t, 100, TU_R(1), TU_R(1));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_NONE, TU_R(3));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_R(3), TU_NONE);
    tu_op(t, 100, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = hoplan_ok(t, 3000);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 1), 2);
    long i = tu_find(s, PLAN_ACT_STORE, 1);
    ck_assert_uint_le(s->actions[i].op, 1);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 1), 2);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_dead_data_freed_without_copies)
{
    /* X is overwritten (write only) at op 4: between op 1 and op 4 its
     * content is dead */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 2000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 3000, PLAN_INIT_NONE, false, false);
    tu_op(t, 10, TU_NONE, TU_R(1));
    tu_op(t, 10, TU_R(1), TU_NONE);
    tu_op(t, 10, TU_NONE, TU_R(2));
    tu_op(t, 10, TU_R(2), TU_NONE);
    tu_op(t, 10, TU_NONE, TU_R(1));
    tu_op(t, 10, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = hoplan_ok(t, 3000);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_FREE_DEVICE, 1), 1);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_STORE, 1), 0);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 1), 0);
    ck_assert_uint_eq(s->predicted.h2d_bytes + s->predicted.d2h_bytes, 0);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_pinned_stays)
{
    /* the pinned one has the longest gap but must stay */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 2000, PLAN_INIT_NONE, false, true);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 3, 3000, PLAN_INIT_NONE, false, false);
    tu_op(t, 100, TU_NONE, TU_R(1));
    tu_op(t, 100, TU_NONE, TU_R(2));
    tu_op(t, 100, TU_NONE, TU_NONE);
    tu_op(t, 100, TU_NONE, TU_R(3));
    tu_op(t, 100, TU_R(3), TU_NONE);
    tu_op(t, 100, TU_R(2), TU_NONE);
    tu_op(t, 100, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = hoplan_ok(t, 5000);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_FREE_DEVICE, 1), 0);
    ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 2), 1);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_kinds_offloadable)
{
    /* parameters, gradients and optimizer state move like activations */
    static const plan_kind kinds[] = {PLAN_KIND_PARAM, PLAN_KIND_GRAD,
                                      PLAN_KIND_OPTIMIZER};
    for (int k = 0; k < 3; k++) {
        plan_trace *t = tu_trace(NULL);
        plan_storage s1 = {1, 2000, (uint8_t)kinds[k], PLAN_INIT_DEVICE,
                           true, false, false};
        ck_assert_int_eq(plan_trace_add_storage(t, &s1, NULL, NULL, 0), 0);
        tu_st(t, 2, 3000, PLAN_INIT_NONE, false, false);
        tu_op(t, 100, TU_R(1), TU_R(1));
        tu_op(t, 100, TU_NONE, TU_NONE);
        tu_op(t, 100, TU_NONE, TU_R(2));
        tu_op(t, 100, TU_R(2), TU_NONE);
        tu_op(t, 100, TU_R(1), TU_R(1));
        tu_finish(t);
        plan_schedule *s = hoplan_ok(t, 3000);
        ck_assert_uint_eq(tu_count(s, PLAN_ACT_FREE_DEVICE, 1), 1);
        ck_assert_uint_eq(tu_count(s, PLAN_ACT_PREFETCH, 1), 1);
        plan_schedule_free(s);
        plan_trace_free(t);
    }
}
END_TEST

START_TEST(test_deterministic)
{
    plan_gen_random_cfg c;
    memset(&c, 0, sizeof c);
    c.seed = 42;
    c.n_ops = 3000;
    c.n_storages = 800;
    c.p_initial_device = 0.1;
    c.p_initial_host = 0.1;
    c.p_retained = 0.2;
    c.p_pinned = 0.05;
    plan_trace *t = NULL;
    ck_assert_int_eq(plan_gen_random(&c, &t, tu_err, sizeof tu_err), 0);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    uint64_t budget = sm.no_offload_peak / 10 * 6;
    plan_schedule *a = hoplan_ok(t, budget), *b = hoplan_ok(t, budget);
    ck_assert_uint_eq(a->n_actions, b->n_actions);
    ck_assert_uint_gt(a->n_actions, 0);
    for (size_t i = 0; i < a->n_actions; i++) {
        ck_assert_uint_eq(a->actions[i].op, b->actions[i].op);
        ck_assert_uint_eq(a->actions[i].when, b->actions[i].when);
        ck_assert_uint_eq(a->actions[i].kind, b->actions[i].kind);
        ck_assert_uint_eq(a->actions[i].storage_id, b->actions[i].storage_id);
    }
    plan_schedule_free(a);
    plan_schedule_free(b);
    plan_trace_free(t);
}
END_TEST

/* Can the link carry s's traffic during the compute? */
static bool link_carries(const plan_trace *t, const plan_schedule *s)
{
    double h = (double)s->predicted.h2d_bytes / (t->link.h2d_gbps * 1e3);
    double d = (double)s->predicted.d2h_bytes / (t->link.d2h_gbps * 1e3);
    if (!t->link.duplex)
        h += d, d = 0;
    return h <= s->predicted.compute_us && d <= s->predicted.compute_us;
}

START_TEST(test_transformer_vs_seed_greedy)
{
    /* A small decoder (qwen2.5-0.5b) with a long sequence: activations
     * dominate and the link can carry them during the compute. */
    plan_gen_train_cfg c;
    memset(&c, 0, sizeof c);
    c.model = *plan_model_find("qwen2.5-0.5b");
    c.device = *plan_device_find("910b");
    c.seq = 16384;
    c.micro_batch = 1;
    c.n_micro = 1;
    c.dtype_bytes = 2;
    c.optimizer_step = true;
    plan_trace *t = NULL;
    ck_assert_int_eq(plan_gen_train(&c, &t, tu_err, sizeof tu_err), 0);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    uint64_t budget = sm.no_offload_peak / 10 * 9;
    plan_schedule *h = hoplan_ok(t, budget), *g = NULL;
    plan_result res;
    ck_assert_int_eq(tu_plan(t, budget, "seed-greedy", &g, &res), 0);
    ck_assert(link_carries(t, h));
    ck_assert_double_gt(g->predicted.exposed_us, 0);
    ck_assert_double_le(h->predicted.exposed_us,
                        0.10 * g->predicted.exposed_us);
    plan_schedule_free(h);
    plan_schedule_free(g);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_meets_budget_seed_greedy_misses)
{
    /* llama2-7b, two micro-batches, optimizer state on the host, half of
     * the no-offload peak: seed-greedy ignores time and the forced
     * transfers and goes over; hoplan meets it */
    plan_gen_train_cfg c;
    memset(&c, 0, sizeof c);
    c.model = *plan_model_find("llama2-7b");
    c.device = *plan_device_find("910b");
    c.seq = 4096;
    c.micro_batch = 1;
    c.n_micro = 2;
    c.dtype_bytes = 2;
    c.optimizer_step = true;
    c.optimizer_on_host = true;
    plan_trace *t = NULL;
    ck_assert_int_eq(plan_gen_train(&c, &t, tu_err, sizeof tu_err), 0);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    uint64_t budget = sm.no_offload_peak / 2;
    plan_schedule *g = NULL;
    plan_result res;
    ck_assert_int_eq(tu_plan(t, budget, "seed-greedy", &g, &res), 0);
    ck_assert_uint_gt(g->predicted.peak_device_bytes, budget);
    plan_schedule *h = hoplan_ok(t, budget);
    ck_assert_double_lt(h->predicted.exposed_us, g->predicted.exposed_us);
    plan_schedule_free(g);
    plan_schedule_free(h);
    plan_trace_free(t);
}
END_TEST


/* The forward planner alone (hp_fs_plan) under the trace's initials,
 * judged: valid, within budget; returns its exposed time. */
static double fs_exposed(const plan_trace *t, uint64_t budget,
                         const hp_fs_opts *o, plan_schedule **ret)
{
    uint8_t init[8];
    ck_assert_uint_le(t->n_storages, 8);
    for (uint32_t s = 0; s < t->n_storages; s++)
        init[s] = t->storages[s].initial;
    plan_schedule *s = NULL;
    ck_assert_int_eq(hp_fs_plan(t, init, budget, o, &s, NULL), 0);
    plan_metrics m;
    plan_violation v;
    ck_assert_msg(tu_valid(t, s, &m, &v), "invalid: %s", v.message);
    ck_assert_uint_le(m.peak_device_bytes, budget);
    *ret = s;
    return m.exposed_us;
}

START_TEST(test_lookahead_counts_the_backlog)
{
    /* two host storages of 15-us copies read by ops 5 and 6 (1 us each)
     * after five idle 10-us ops.  Alone, A is due at boundary 3 (issued at
     * the next one, 40 + 15 > 50), and B, queued behind it on the FIFO
     * engine, completes at 60 for op 6 at 51: 9 us exposed.  Counting the
     * backlog, A and B back to back from boundary 3 (30 + 30 > 51) make A
     * due at boundary 2 and B at 3: nothing exposed. */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 15000, PLAN_INIT_HOST, false, false);
    tu_st(t, 2, 15000, PLAN_INIT_HOST, false, false);
    for (int k = 0; k < 5; k++)
        tu_op(t, 10, TU_NONE, TU_NONE);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_op(t, 1, TU_R(2), TU_NONE);
    tu_finish(t);
    const hp_fs_opts plain = {.lookahead = true};
    const hp_fs_opts edf = {.lookahead = true, .edf = true};
    plan_schedule *s = NULL;
    ck_assert(tu_close(fs_exposed(t, 1 << 20, &plain, &s), 9));
    ck_assert_uint_eq(s->actions[tu_find(s, PLAN_ACT_PREFETCH, 1)].op, 3);
    plan_schedule_free(s);
    ck_assert(tu_close(fs_exposed(t, 1 << 20, &edf, &s), 0));
    ck_assert_uint_eq(s->actions[tu_find(s, PLAN_ACT_PREFETCH, 1)].op, 2);
    ck_assert_uint_eq(s->actions[tu_find(s, PLAN_ACT_PREFETCH, 2)].op, 3);
    plan_schedule_free(s);
    /* memory for one of them at a time besides nothing else: B cannot
     * come before A is read and freed, edf or not (the room check is the
     * same): both plans valid, B's prefetch after op 5 */
    ck_assert(fs_exposed(t, 15000, &edf, &s) > 0);
    ck_assert_uint_ge(s->actions[tu_find(s, PLAN_ACT_PREFETCH, 2)].op, 6);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_hoplan");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_loose_budget_no_action);
    tcase_add_test(tc, test_hidden_prefetch);
    tcase_add_test(tc, test_prefetch_as_late_as_the_engine_allows);
    tcase_add_test(tc, test_infeasible_reports_min_budget);
    tcase_add_test(tc, test_initial_device_total_is_a_floor);
    tcase_add_test(tc, test_host_readonly_never_stored);
    tcase_add_test(tc, test_device_readonly_stored_once);
    tcase_add_test(tc, test_versions_stored_after_each_write);
    tcase_add_test(tc, test_dead_data_freed_without_copies);
    tcase_add_test(tc, test_pinned_stays);
    tcase_add_test(tc, test_kinds_offloadable);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_transformer_vs_seed_greedy);
    tcase_add_test(tc, test_meets_budget_seed_greedy_misses);
    tcase_add_test(tc, test_lookahead_counts_the_backlog);
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
