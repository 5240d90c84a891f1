/*
 * tests/planner/test_node_arbiter.c - the node arbiter
 * (planner/node/node_arbiter.h):
 *   - on a node where two devices share one switch, the arbiter's plan is
 *     never worse than `independent` or `equal-share` as the node judge
 *     measures it, and strictly better when one client needs the link and
 *     the other does not;
 *   - its prediction equals what the node judge computes for the
 *     workload it returns, every budget fits its device, every client is
 *     planned for no more than its device's figures, and the bandwidth
 *     it was planned for is guaranteed: on every capacity the planned
 *     rates sum to at most the capacity;
 *   - HBM: two unfixed clients of one device split it, a fixed budget is
 *     kept, fixed budgets over the capacity are refused naming the device;
 *   - one client alone: every strategy gives exactly plan_make + the
 *     judge of that one schedule.
 */
#include "tests/check_main.h"
#include "tests/planner/node_test_util.h"

#include "planner/node/node_arbiter.h"

#define GiB (1ull << 30)

static plan_trace *train(const char *model, uint32_t seq, uint32_t mbs,
                         bool params_host, double link_gbps)
{
    plan_gen_train_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.model = *plan_model_find(model);
    cfg.device = *plan_device_find("h200");
    cfg.device.link_gbps = link_gbps;
    cfg.seq = seq;
    cfg.micro_batch = mbs;
    cfg.n_micro = 1;
    cfg.dtype_bytes = 2;
    cfg.params_on_host = params_host;
    cfg.optimizer_on_host = params_host;
    cfg.optimizer_step = true;
    plan_trace *t = NULL;
    int r = plan_gen_train(&cfg, &t, tu_err, sizeof tu_err);
    ck_assert_msg(r == 0, "gen: %s", tu_err);
    return t;
}

static uint64_t peak_of(const plan_trace *t)
{
    plan_trace_summary s;
    ck_assert_int_eq(plan_trace_summarize(t, &s), 0);
    return s.no_offload_peak;
}

/* host 64 GB/s -> sw0 16 GB/s -> dev0, dev1 (16 GB/s each, own HBM). */
static plan_node *switch_node(uint64_t hbm)
{
    plan_node *n = plan_node_new();
    ck_assert_ptr_nonnull(n);
    nu_link(n, "host", NULL, 64, 64, true);
    nu_link(n, "sw0", "host", 16, 16, true);
    nu_dev(n, 0, "sw0", hbm, 16, 16, 15, true);
    nu_dev(n, 1, "sw0", hbm, 16, 16, 15, true);
    nu_finish(n);
    return n;
}

static plan_arb_result *arbitrate(const plan_node *n,
                                  const plan_arb_client *c, uint32_t k,
                                  plan_arb_strategy s)
{
    plan_arb_result *r = NULL;
    int rc = plan_node_arbitrate(n, c, k, s, NULL, &r, tu_err,
                                 sizeof tu_err);
    ck_assert_msg(rc == 0, "arbitrate %s: %d %s",
                  plan_arb_strategy_name(s), rc, tu_err);
    return r;
}

/* The result's prediction is the judge's figures of what it returns, and
 * the planned bandwidth fits every capacity. */
static void check_result(const plan_node *n, const plan_arb_client *c,
                         uint32_t k, const plan_arb_result *r)
{
    plan_node_input in[8];
    for (uint32_t i = 0; i < k; i++) {
        const plan_arb_choice *ch = &r->clients[i];
        ck_assert_ptr_nonnull(ch->schedule);
        in[i] = (plan_node_input){c[i].name, c[i].trace, ch->schedule,
                                  c[i].device, ch->budget_bytes,
                                  c[i].weight, c[i].sync};
        const plan_node_device *d = &n->devices[c[i].device];
        ck_assert_uint_le(ch->budget_bytes, d->hbm_bytes - d->reserve_bytes);
        ck_assert(ch->h2d_gbps > 0 && ch->h2d_gbps <= d->h2d_gbps + 1e-9);
        ck_assert(ch->d2h_gbps > 0 && ch->d2h_gbps <= d->d2h_gbps + 1e-9);
    }
    plan_node_result *j = nu_judge(n, in, k, 0);
    ck_assert(fabs(j->weighted_exposed_us -
                   r->judged->weighted_exposed_us) < 1e-6);
    for (uint32_t i = 0; i < k; i++) {
        ck_assert(fabs(j->clients[i].step_time_us -
                       r->clients[i].predicted.step_time_us) < 1e-6);
        ck_assert(fabs(j->clients[i].exposed_us -
                       r->clients[i].predicted.exposed_us) < 1e-6);
    }
    plan_node_result_free(j);
    /* bandwidth guaranteed: planned rates fit each shared link (the node
     * above: sw0 carries both devices, host carries sw0) */
    if (r->chosen != PLAN_ARB_INDEPENDENT) {
        double h = 0, d2 = 0;
        for (uint32_t i = 0; i < k; i++) {
            h += r->clients[i].h2d_gbps;
            d2 += r->clients[i].d2h_gbps;
        }
        ck_assert_msg(h <= n->links[1].h2d_gbps + 1e-6, "H2D %g > sw0", h);
        ck_assert_msg(d2 <= n->links[1].d2h_gbps + 1e-6, "D2H %g", d2);
    }
}

START_TEST(never_worse_and_better_when_needs_differ)
{
    /* c0 keeps its parameters and optimizer on the host (it needs the
     * link); c1 fits its device (it needs nothing) */
    plan_trace *t0 = train("qwen2.5-0.5b", 1024, 2, true, 16);
    plan_trace *t1 = train("qwen2.5-0.5b", 512, 1, false, 16);
    uint64_t hbm = peak_of(t1) + GiB;
    plan_node *n = switch_node(hbm);
    plan_arb_client c[2] = {
        {"needs-link", t0, 0, true, peak_of(t0), 1.0, PLAN_NONE},
        {"fits", t1, 1, false, 0, 1.0, PLAN_NONE},
    };
    plan_arb_result *ind = arbitrate(n, c, 2, PLAN_ARB_INDEPENDENT);
    plan_arb_result *eq = arbitrate(n, c, 2, PLAN_ARB_EQUAL_SHARE);
    plan_arb_result *ar = arbitrate(n, c, 2, PLAN_ARB_ARBITER);
    double e_ind = ind->judged->weighted_exposed_us;
    double e_eq = eq->judged->weighted_exposed_us;
    double e_ar = ar->judged->weighted_exposed_us;
    fprintf(stderr,
            "arbiter test: weighted exposed independent %.1f us, "
            "equal-share %.1f us, arbiter %.1f us (chosen %s, %u plans); "
            "c0 planned %.2f GB/s, c1 %.2f GB/s\n",
            e_ind, e_eq, e_ar, plan_arb_strategy_name(ar->chosen),
            ar->plans_made, ar->clients[0].h2d_gbps,
            ar->clients[1].h2d_gbps);
    ck_assert(ar->outcomes[PLAN_ARB_INDEPENDENT].tried);
    ck_assert(ar->outcomes[PLAN_ARB_EQUAL_SHARE].tried);
    ck_assert(e_ar <= e_ind + 1e-6 && e_ar <= e_eq + 1e-6);
    /* the client that needs the link got more of it */
    ck_assert(ar->clients[0].h2d_gbps > ar->clients[1].h2d_gbps);
    check_result(n, c, 2, ind);
    check_result(n, c, 2, eq);
    check_result(n, c, 2, ar);
    /* fixed budget kept */
    ck_assert_uint_eq(ar->clients[0].budget_bytes, peak_of(t0));
    plan_arb_result_free(ind);
    plan_arb_result_free(eq);
    plan_arb_result_free(ar);
    plan_node_free(n);
    plan_trace_free(t0);
    plan_trace_free(t1);
}
END_TEST

/* Two unfixed clients of one device with different needs: an equal split
 * leaves the big one below any budget it can be planned at, the arbiter's
 * marginal split gives each what its curve asks for. */
START_TEST(budget_split_follows_the_curves)
{
    plan_trace *small = train("qwen2.5-0.5b", 1024, 2, true, 16);
    plan_trace *big = train("qwen2.5-0.5b", 512, 1, false, 16);
    uint64_t cap = peak_of(small) + peak_of(big) + GiB / 4;
    plan_node *n = plan_node_new();
    nu_dev(n, 0, NULL, cap, 16, 16, 15, true);
    nu_finish(n);
    plan_arb_client c[2] = {{"small", small, 0, false, 0, 1.0, PLAN_NONE},
                            {"big", big, 0, false, 0, 1.0, PLAN_NONE}};
    plan_arb_result *ar = arbitrate(n, c, 2, PLAN_ARB_ARBITER);
    const plan_arb_outcome *o = ar->outcomes;
    fprintf(stderr, "arbiter split: budgets %llu / %llu of %llu; arbiter "
            "%s %.1f us, independent %s, equal-share %s\n",
            (unsigned long long)ar->clients[0].budget_bytes,
            (unsigned long long)ar->clients[1].budget_bytes,
            (unsigned long long)cap,
            o[PLAN_ARB_ARBITER].valid ? "valid" : "invalid",
            o[PLAN_ARB_ARBITER].weighted_exposed_us,
            o[PLAN_ARB_INDEPENDENT].valid ? "valid" : o[PLAN_ARB_INDEPENDENT].why,
            o[PLAN_ARB_EQUAL_SHARE].valid ? "valid" : o[PLAN_ARB_EQUAL_SHARE].why);
    ck_assert_int_eq(ar->chosen, PLAN_ARB_ARBITER);
    ck_assert(o[PLAN_ARB_ARBITER].valid);
    for (int k = PLAN_ARB_INDEPENDENT; k <= PLAN_ARB_EQUAL_SHARE; k++)
        ck_assert(!o[k].valid || o[k].weighted_exposed_us >
                                     o[PLAN_ARB_ARBITER].weighted_exposed_us);
    ck_assert_uint_le(ar->clients[0].budget_bytes +
                          ar->clients[1].budget_bytes, cap);
    ck_assert_uint_gt(ar->clients[1].budget_bytes,
                      ar->clients[0].budget_bytes);
    ck_assert(ar->judged->alloc_wait_us == 0);
    plan_arb_result_free(ar);
    plan_node_free(n);
    plan_trace_free(small);
    plan_trace_free(big);
}
END_TEST

START_TEST(one_device_split_and_refusals)
{
    plan_trace *t = train("qwen2.5-0.5b", 512, 1, false, 16);
    uint64_t peak = peak_of(t);
    plan_node *n = plan_node_new();
    uint64_t cap = peak * 2 - (peak / 64);
    nu_dev(n, 0, NULL, cap, 16, 16, 15, true);
    nu_finish(n);
    plan_arb_client c[2] = {{"a", t, 0, false, 0, 1.0, PLAN_NONE},
                            {"b", t, 0, false, 0, 1.0, PLAN_NONE}};
    plan_arb_result *r = arbitrate(n, c, 2, PLAN_ARB_ARBITER);
    ck_assert_uint_le(r->clients[0].budget_bytes +
                          r->clients[1].budget_bytes, cap);
    ck_assert_uint_gt(r->clients[0].budget_bytes, 0);
    ck_assert_uint_gt(r->clients[1].budget_bytes, 0);
    ck_assert(r->judged->alloc_wait_us == 0);
    /* the device has one engine pair for both: shares add up to it */
    ck_assert(r->chosen == PLAN_ARB_INDEPENDENT ||
              r->clients[0].h2d_gbps + r->clients[1].h2d_gbps <= 16 + 1e-6);
    plan_arb_result_free(r);

    /* fixed budgets above the device: refused, naming it */
    c[0].has_budget = c[1].has_budget = true;
    c[0].budget_bytes = c[1].budget_bytes = cap / 2 + 4096;
    plan_arb_result *bad = NULL;
    int rc = plan_node_arbitrate(n, c, 2, PLAN_ARB_ARBITER, NULL, &bad,
                                 tu_err, sizeof tu_err);
    ck_assert_int_eq(rc, HO_E_INFEASIBLE);
    ck_assert_ptr_null(bad);
    ck_assert_msg(strstr(tu_err, "device dev0") &&
                      strstr(tu_err, "fixed budgets"), "%s", tu_err);
    plan_node_free(n);
    plan_trace_free(t);
}
END_TEST

START_TEST(one_client_alone_is_plan_make)
{
    plan_trace *t = train("qwen2.5-0.5b", 512, 1, true, 16);
    uint64_t budget = peak_of(t);
    plan_node *n = plan_node_new();
    nu_dev(n, 0, NULL, 80 * GiB, t->link.h2d_gbps, t->link.d2h_gbps,
           t->link.latency_us, t->link.duplex);
    nu_finish(n);
    plan_schedule *s = NULL;
    plan_result pr;
    ck_assert_int_eq(plan_make(t, budget, NULL, &s, &pr), 0);
    for (int k = 0; k < PLAN_ARB__COUNT; k++) {
        plan_arb_client c = {"solo", t, 0, true, budget, 1.0, PLAN_NONE};
        plan_arb_result *r = arbitrate(n, &c, 1, (plan_arb_strategy)k);
        ck_assert_uint_eq(r->clients[0].schedule->n_actions, s->n_actions);
        ck_assert(fabs(r->clients[0].predicted.exposed_us -
                       s->predicted.exposed_us) < 1e-6);
        ck_assert(fabs(r->clients[0].h2d_gbps - t->link.h2d_gbps) < 1e-9);
        plan_arb_result_free(r);
    }
    plan_schedule_free(s);
    plan_node_free(n);
    plan_trace_free(t);
}
END_TEST

START_TEST(names_and_bad_input)
{
    plan_arb_strategy s;
    ck_assert_int_eq(plan_arb_strategy_parse("equal-share", &s), 0);
    ck_assert_int_eq(s, PLAN_ARB_EQUAL_SHARE);
    ck_assert_int_eq(plan_arb_strategy_parse("fastest", &s), -EINVAL);
    ck_assert_str_eq(plan_arb_strategy_name(PLAN_ARB_INDEPENDENT),
                     "independent");
    plan_trace *t = train("qwen2.5-0.5b", 256, 1, false, 16);
    plan_node *n = plan_node_new();
    nu_dev(n, 0, NULL, 80 * GiB, 16, 16, 0, true);
    nu_finish(n);
    plan_arb_client c = {"x", t, 3, false, 0, 1.0, PLAN_NONE};
    plan_arb_result *r = NULL;
    ck_assert_int_eq(plan_node_arbitrate(n, &c, 1, PLAN_ARB_ARBITER, NULL,
                                         &r, tu_err, sizeof tu_err),
                     -EINVAL);
    ck_assert_ptr_nonnull(strstr(tu_err, "device index 3"));
    c.device = 0;
    c.weight = 0;
    ck_assert_int_eq(plan_node_arbitrate(n, &c, 1, PLAN_ARB_ARBITER, NULL,
                                         &r, tu_err, sizeof tu_err),
                     -EINVAL);
    ck_assert_ptr_null(r);
    plan_node_free(n);
    plan_trace_free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("node_arbiter");
    TCase *tc = tcase_create("arbiter");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, never_worse_and_better_when_needs_differ);
    tcase_add_test(tc, budget_split_follows_the_curves);
    tcase_add_test(tc, one_device_split_and_refusals);
    tcase_add_test(tc, one_client_alone_is_plan_make);
    tcase_add_test(tc, names_and_bad_input);
    suite_add_tcase(s, tc);
    return ho_check_run(s, false);
}
