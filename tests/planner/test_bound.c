/*
 * tests/planner/test_bound.c - plan_exposure_bound (planner/bound/):
 * - soundness: no valid schedule within the budget beats the bound -
 *   hoplan's, every baseline's, the oracle's on small traces, and random
 *   valid schedules (random stores, frees, early prefetches, waits and
 *   homes of movable storages) judged at their own peak, over thousands of
 *   random traces, links and budgets; fast and full mode, and the
 *   solver-limit path (a few simplex iterations);
 * - exact small cases (a forced prefetch, a forced store, slack = 0);
 * - infeasible below the memory floor; mode off;
 * - monotone non-increasing in budget and in bandwidth.
 * HO_PLANNER_ITERS scales the iteration counts.
 */
#include "tests/planner/plan_test_util.h"

#include "planner/bound/bound.h"
#include "planner/curve.h"

/* tiny: at most 18 ops and 7 storages (the oracle's size) */
static plan_trace *random_trace_sized(double p_movable, bool tiny)
{
    tu_shape sh = {tiny ? 16 : 60, tiny ? 6 : 24, 4, 0.5, 0.4, 0.6, 0.2, 0};
    plan_trace *t = tu_random_trace(&sh);
    for (uint32_t s = 0; s < t->n_storages; s++) {
        plan_storage *st = &t->storages[s];
        if (st->retained && st->initial != PLAN_INIT_NONE &&
            tu_frand() < p_movable)
            st->movable = true;
    }
    return t;
}

static plan_trace *random_trace(double p_movable)
{
    return random_trace_sized(p_movable, false);
}

static double bound_of(const plan_trace *t, uint64_t budget,
                       plan_bound_mode mode, uint32_t it_lim,
                       plan_bound_result *ret)
{
    plan_bound_options o = {mode, 0, it_lim, 0, 0, 0};
    plan_bound_result r;
    o.time_limit_ms = 60000; /* deterministic: no time limit in tests */
    int rc = plan_exposure_bound(t, budget, NULL, &o, &r, tu_err,
                                 sizeof tu_err);
    ck_assert_msg(rc == 0, "bound: %s", tu_err);
    ck_assert(r.bound_us >= 0);
    ck_assert(r.bound_us >= r.closed_form_us);
    if (ret)
        *ret = r;
    return r.bound_us;
}

static bool sim_ok(const plan_trace *t, const plan_schedule *s, uint64_t budget,
                   plan_metrics *m)
{
    plan_schedule copy = *s;
    plan_violation v;
    copy.budget_bytes = budget;
    return plan_simulate(t, &copy, m, &v, NULL) == 0;
}

static void assert_not_beaten(const plan_trace *t, uint64_t budget,
                              double bound, const plan_metrics *m,
                              const char *who)
{
    double tol = 1e-6 * (m->exposed_us > 1 ? m->exposed_us : 1);
    ck_assert_msg(m->exposed_us + tol >= bound,
                  "%s beats the bound: exposed %.9g < bound %.9g at budget "
                  "%llu (peak %llu, %u ops, %u storages)",
                  who, m->exposed_us, bound, (unsigned long long)budget,
                  (unsigned long long)m->peak_device_bytes, t->n_ops,
                  t->n_storages);
}

/* ---------------------------------------------------------------- random
 * schedules: valid by construction (checked by the judge anyway). */

typedef struct rs {
    const plan_trace *t;
    plan_schedule *s;
    uint8_t *on, *cur;
    double pe, pp, pw;
} rs;

static uint32_t last_op(const plan_trace *t, uint32_t st)
{
    return t->acc_start[st] == t->acc_start[st + 1]
               ? PLAN_NONE
               : t->acc[t->acc_start[st + 1] - 1].op;
}

static bool free_allowed(const rs *x, uint32_t st, uint32_t op, bool after)
{
    const plan_storage *sto = &x->t->storages[st];
    uint32_t last = last_op(x->t, st);
    if (!sto->pinned || last == PLAN_NONE)
        return true;
    return op > last || (op == last && after);
}

static void evict(rs *x, uint32_t op, plan_when w, uint32_t st)
{
    if (!x->cur[st]) {
        tu_act(x->s, op, w, PLAN_ACT_STORE, x->t->storages[st].id);
        x->cur[st] = 1;
        if (tu_frand() < x->pw)
            tu_act(x->s, op, w, PLAN_ACT_WAIT, x->t->storages[st].id);
    }
    tu_act(x->s, op, w, PLAN_ACT_FREE_DEVICE, x->t->storages[st].id);
    x->on[st] = 0;
}

/* Accesses of st at or after op: first one, or PLAN_NONE. */
static uint32_t next_access(const rs *x, uint32_t st, uint32_t op,
                            uint32_t *flags)
{
    const plan_trace *t = x->t;
    for (uint32_t k = t->acc_start[st]; k < t->acc_start[st + 1]; k++)
        if (t->acc[k].op >= op) {
            *flags = t->acc[k].flags;
            return t->acc[k].op;
        }
    return PLAN_NONE;
}

static bool accessed_by(const plan_trace *t, uint32_t st, uint32_t op)
{
    for (uint32_t k = t->acc_start[st]; k < t->acc_start[st + 1]; k++)
        if (t->acc[k].op == op)
            return true;
    return false;
}

static plan_schedule *random_schedule(const plan_trace *t)
{
    rs x = {t, tu_sched(UINT64_MAX), NULL, NULL, 0, 0, 0};
    uint32_t ns = t->n_storages;
    x.on = calloc(ns, 1);
    x.cur = calloc(ns, 1);
    ck_assert(x.on && x.cur);
    x.pe = tu_frand() * 0.5;
    x.pp = tu_frand();
    x.pw = tu_frand() * 0.5;
    uint8_t *host_home = calloc(ns, 1);
    ck_assert(host_home);
    for (uint32_t s = 0; s < ns; s++) {
        const plan_storage *st = &t->storages[s];
        uint8_t init = st->initial;
        if (st->movable) {
            plan_home h = tu_rand() & 1 ? PLAN_HOME_HOST : PLAN_HOME_DEVICE;
            ck_assert_int_eq(plan_schedule_set_home(x.s, t, s, h), 0);
            init = h == PLAN_HOME_HOST ? PLAN_INIT_HOST : PLAN_INIT_DEVICE;
        }
        host_home[s] = init == PLAN_INIT_HOST;
        bool accessed = t->acc_start[s] != t->acc_start[s + 1];
        x.on[s] = init == PLAN_INIT_DEVICE && (accessed || st->retained);
        x.cur[s] = init == PLAN_INIT_HOST;
    }
    for (uint32_t i = 0; i < t->n_ops; i++) {
        /* before: random evictions of data op i does not touch */
        for (uint32_t s = 0; s < ns; s++)
            if (x.on[s] && !accessed_by(t, s, i) &&
                free_allowed(&x, s, i, false) && tu_frand() < x.pe)
                evict(&x, i, PLAN_BEFORE, s);
        /* prefetch what op i reads, and maybe early what comes soon */
        for (uint32_t s = 0; s < ns; s++) {
            if (x.on[s] || !x.cur[s])
                continue;
            uint32_t fl = 0, nx = next_access(&x, s, i, &fl);
            if (nx == PLAN_NONE || !(fl & PLAN_ACC_READ))
                continue;
            if (nx == i || (nx < i + 4 && tu_frand() < x.pp)) {
                tu_act(x.s, i, PLAN_BEFORE, PLAN_ACT_PREFETCH,
                       t->storages[s].id);
                x.on[s] = 1;
                if (nx == i && tu_frand() < x.pw * 0.3)
                    tu_act(x.s, i, PLAN_BEFORE, PLAN_ACT_WAIT,
                           t->storages[s].id);
            }
        }
        /* the op: writes allocate and make host copies stale */
        const plan_op *o = &t->ops[i];
        const uint32_t *wr = t->refs + o->first_ref + o->n_reads;
        for (uint32_t k = 0; k < o->n_writes; k++) {
            x.on[wr[k]] = 1;
            x.cur[wr[k]] = 0;
        }
        /* after: random evictions (data op i touched too) */
        for (uint32_t s = 0; s < ns; s++) {
            if (!x.on[s] || !free_allowed(&x, s, i, true))
                continue;
            uint32_t fl = 0, nx = next_access(&x, s, i + 1, &fl);
            bool live = nx != PLAN_NONE || t->storages[s].retained;
            if (live && tu_frand() < x.pe)
                evict(&x, i, PLAN_AFTER, s);
        }
        /* implicit frees */
        for (uint32_t s = 0; s < ns; s++)
            if (x.on[s] && !t->storages[s].retained &&
                last_op(t, s) == i)
                x.on[s] = 0;
    }
    /* step end: retained data where its home wants it */
    uint32_t end = t->n_ops - 1;
    for (uint32_t s = 0; s < ns; s++) {
        if (!t->storages[s].retained)
            continue;
        if (host_home[s]) {
            if (x.on[s])
                evict(&x, end, PLAN_AFTER, s);
        } else if (!x.on[s]) {
            ck_assert(x.cur[s]);
            tu_act(x.s, end, PLAN_AFTER, PLAN_ACT_PREFETCH, t->storages[s].id);
            x.on[s] = 1;
        }
    }
    free(host_home);
    free(x.on);
    free(x.cur);
    ck_assert_int_eq(plan_schedule_bind(x.s, t, tu_err, sizeof tu_err), 0);
    return x.s;
}

START_TEST(test_random_schedules)
{
    unsigned n = tu_iters(1500), checked = 0, positive = 0;
    tu_rng = 0x5eed0001ull;
    for (unsigned it = 0; it < n; it++) {
        plan_trace *t = random_trace(0.5);
        for (int k = 0; k < 3; k++) {
            plan_schedule *s = random_schedule(t);
            plan_metrics m;
            plan_violation v;
            int r = tu_valid(t, s, &m, &v) ? 0 : -1;
            ck_assert_msg(r == 0, "trace %u: random schedule invalid: %s", it,
                          v.message);
            /* judged at its own peak, and with some room above it */
            uint64_t budget = m.peak_device_bytes;
            if (k == 2)
                budget += budget / 4;
            plan_bound_mode mode = k == 1 ? PLAN_BOUND_FULL : PLAN_BOUND_FAST;
            plan_bound_result br;
            double b = bound_of(t, budget, mode, 0, &br);
            ck_assert_msg(!br.infeasible, "trace %u: a schedule exists at "
                                          "%llu but the bound says none (%s)",
                          it, (unsigned long long)budget, br.note);
            assert_not_beaten(t, budget, b, &m, "random schedule");
            checked++;
            positive += b > 0;
            plan_schedule_free(s);
        }
        plan_trace_free(t);
    }
    printf("test_bound: %u random schedules checked, bound > 0 for %u\n",
           checked, positive);
    ck_assert_uint_gt(positive, checked / 10);
}
END_TEST

static const char *const planners[] = {"hoplan",      "none", "seed-greedy",
                                       "ms-distance", "reactive-lru",
                                       "oracle",      NULL};

/* planners[p]'s schedule of t at `budget` (owned) and its metrics when it
 * is valid and fits; NULL otherwise, and for the oracle (p 5) on traces
 * that are not tiny. */
static plan_schedule *fitting_plan(const plan_trace *t, uint64_t budget,
                                   int p, bool tiny, plan_metrics *m)
{
    plan_schedule *s = NULL;
    plan_result res;
    if ((p == 5 && !tiny) || tu_plan(t, budget, planners[p], &s, &res) < 0 ||
        !sim_ok(t, s, budget, m))
        return plan_schedule_free(s);
    return s;
}

START_TEST(test_planners_never_beat_it)
{
    unsigned n = tu_iters(300), checked = 0, oracle = 0;
    double worst = 0;
    tu_rng = 0x5eed0002ull;
    for (unsigned it = 0; it < n; it++) {
        /* every other trace tiny, for the oracle */
        bool tiny = it % 2 == 0;
        plan_trace *t = random_trace_sized(0.3, tiny);
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        uint64_t budgets[4] = {sm.max_op_working_set,
                               sm.no_offload_peak / 2 +
                                   sm.max_op_working_set / 2,
                               sm.max_op_working_set +
                                   tu_rand() % (sm.no_offload_peak + 1),
                               sm.no_offload_peak};
        for (int b = 0; b < 4; b++) {
            plan_bound_result br;
            double bound = bound_of(t, budgets[b],
                                    b & 1 ? PLAN_BOUND_FULL : PLAN_BOUND_FAST,
                                    0, &br);
            for (int p = 0; planners[p]; p++) {
                plan_metrics m;
                plan_schedule *s = fitting_plan(t, budgets[b], p, tiny, &m);
                if (!s)
                    continue;
                ck_assert_msg(!br.infeasible, "%s fits a budget the bound "
                                              "calls infeasible",
                              planners[p]);
                assert_not_beaten(t, budgets[b], bound, &m, planners[p]);
                checked++;
                oracle += p == 5;
                if (p == 0 && bound > 0 && m.exposed_us / bound > worst)
                    worst = m.exposed_us / bound;
                plan_schedule_free(s);
            }
        }
        plan_trace_free(t);
    }
    printf("test_bound: %u planner schedules checked (%u oracle); largest "
           "hoplan exposed / bound %.2f\n",
           checked, oracle, worst);
    ck_assert_uint_gt(oracle, 0);
}
END_TEST

/* Every point of hoplan's and seed-greedy's curves (planner/curve.h),
 * along budgets and along link bandwidths: the schedule kept at a point is
 * valid there, and does not beat the bound at that point's budget and
 * link. */
START_TEST(test_curves_never_beat_it)
{
    unsigned n = tu_iters(80), checked = 0;
    tu_rng = 0x5eed0005ull;
    const double scales[3] = {0.25, 0.5, 1.0};
    for (unsigned it = 0; it < n; it++) {
        plan_trace *t = random_trace(0.3);
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        uint64_t b[4];
        for (int k = 0; k < 4; k++)
            b[k] = sm.max_op_working_set +
                   (sm.no_offload_peak - sm.max_op_working_set) *
                       (uint64_t)k / 4;
        plan_options o = {it & 1 ? "seed-greedy" : "hoplan", 0, 0, 0};
        plan_curve *c[2] = {NULL, NULL};
        ck_assert_msg(plan_curve_budgets(t, b, 4, &o, &c[0], tu_err,
                                         sizeof tu_err) == 0, "%s", tu_err);
        ck_assert_msg(plan_curve_bandwidths(t, b[1], scales, 3, &o, &c[1],
                                            tu_err, sizeof tu_err) == 0,
                      "%s", tu_err);
        for (int a = 0; a < 2; a++)
            for (uint32_t k = 0; k < c[a]->n_points; k++) {
                const plan_curve_point *p = &c[a]->points[k];
                if (p->rc != 0)
                    continue;
                plan_trace view = *t;
                view.link = p->link;
                plan_metrics m;
                ck_assert(sim_ok(&view, p->s, p->budget, &m));
                plan_bound_options bo = {PLAN_BOUND_FAST, 60000, 0, 0, 0, 0};
                plan_bound_result br;
                ck_assert_int_eq(plan_exposure_bound(t, p->budget, &p->link,
                                                     &bo, &br, tu_err,
                                                     sizeof tu_err), 0);
                ck_assert(!br.infeasible);
                assert_not_beaten(&view, p->budget, br.bound_us, &m,
                                  a ? "bandwidth curve" : "budget curve");
                checked++;
            }
        plan_curve_free(c[0]);
        plan_curve_free(c[1]);
        plan_trace_free(t);
    }
    printf("test_bound: %u curve points checked\n", checked);
    ck_assert_uint_gt(checked, n);
}
END_TEST

/* Homes of the movable storages a schedule uses: +1 per host home, and
 * per device home (an entry, or no entry for initial: device). */
static void count_homes(const plan_trace *t, const plan_schedule *s,
                        unsigned *host, unsigned *dev)
{
    for (uint32_t st = 0; st < t->n_storages; st++) {
        if (!t->storages[st].movable)
            continue;
        int h = t->storages[st].initial == PLAN_INIT_HOST ? PLAN_HOME_HOST
                                                           : PLAN_HOME_DEVICE;
        for (size_t k = 0; k < s->n_homes; k++)
            if (s->homes[k].storage == st)
                h = s->homes[k].home;
        if (h == PLAN_HOME_HOST)
            (*host)++;
        else
            (*dev)++;
    }
}

/* Every retained storage with an initial copy movable (docs/bound.md
 * §2.3, the home coupling): hoplan's schedules (which choose homes), the
 * baselines', the oracle's on tiny traces and random schedules with random
 * homes never beat the bound, in fast and full mode and with the LP
 * stopped after a few iterations. */
START_TEST(test_movable_never_beat_it)
{
    unsigned n = tu_iters(200), checked = 0, positive = 0, oracle = 0;
    unsigned host = 0, dev = 0, hoplan_host = 0;
    tu_rng = 0x5eed0006ull;
    for (unsigned it = 0; it < n; it++) {
        bool tiny = it % 2 == 0;
        plan_trace *t = random_trace_sized(1.0, tiny);
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        uint64_t budgets[3] = {sm.max_op_working_set +
                                   tu_rand() % (sm.no_offload_peak / 4 + 1),
                               sm.no_offload_peak / 2 +
                                   sm.max_op_working_set / 2,
                               sm.no_offload_peak};
        for (int b = 0; b < 3; b++) {
            plan_bound_result br;
            double bound = bound_of(t, budgets[b],
                                    b == 1 ? PLAN_BOUND_FULL : PLAN_BOUND_FAST,
                                    0, &br);
            double lim = bound_of(t, budgets[b], PLAN_BOUND_FAST,
                                  1 + (uint32_t)(tu_rand() % 5), NULL);
            for (int p = 0; planners[p]; p++) {
                plan_metrics m;
                plan_schedule *s = fitting_plan(t, budgets[b], p, tiny, &m);
                if (!s)
                    continue;
                ck_assert(!br.infeasible);
                assert_not_beaten(t, budgets[b], bound, &m, planners[p]);
                assert_not_beaten(t, budgets[b], lim, &m, planners[p]);
                unsigned h0 = host;
                count_homes(t, s, &host, &dev);
                if (p == 0)
                    hoplan_host += host - h0;
                checked++;
                positive += bound > 0;
                oracle += p == 5;
                plan_schedule_free(s);
            }
        }
        for (int k = 0; k < 4; k++) {
            plan_schedule *s = random_schedule(t);
            plan_metrics m;
            plan_violation v;
            ck_assert_msg(tu_valid(t, s, &m, &v), "random schedule: %s",
                          v.message);
            uint64_t budget =
                m.peak_device_bytes + (k & 1) * (m.peak_device_bytes / 8);
            plan_bound_result br;
            double bound = bound_of(t, budget,
                                    k == 2 ? PLAN_BOUND_FULL : PLAN_BOUND_FAST,
                                    k == 3 ? 2 : 0, &br);
            ck_assert(!br.infeasible);
            assert_not_beaten(t, budget, bound, &m, "random schedule");
            count_homes(t, s, &host, &dev);
            checked++;
            positive += bound > 0;
            plan_schedule_free(s);
        }
        plan_trace_free(t);
    }
    printf("test_bound: movable: %u schedules checked (%u oracle), bound > "
           "0 for %u; homes host %u (hoplan %u), device %u\n",
           checked, oracle, positive, host, hoplan_host, dev);
    ck_assert_uint_gt(host, checked / 4);
    ck_assert_uint_gt(dev, checked / 4);
    ck_assert_uint_gt(hoplan_host, 0);
    ck_assert_uint_gt(oracle, 0);
    ck_assert_uint_gt(positive, checked / 10);
}
END_TEST

/* A movable storage read and written by the last op, pushed off the
 * device at op 1 by the budget.  Homed on device it is there at t = 0: off
 * at S_1 needs its store done within op 0 (0.5 us of compute for a 1 us
 * copy): 0.5 us.  Homed on host it is not there at t = 0 and its prefetch
 * hides under op 2, but the store of the final version runs after the
 * last op: 1 us.  The bound that took each stretch at its cheaper home
 * (leading off for the prefetch only, no store at the end) said 0; the
 * coupled one says 0.5, which the device-homed schedule reaches. */
START_TEST(test_movable_coupled_exact)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_st_movable(t, 9, 1000, PLAN_INIT_DEVICE);
    tu_op(t, 0.5, TU_NONE, TU_R(1));
    tu_op(t, 100.0, TU_R(1), TU_R(2));
    tu_op(t, 100.0, TU_R(2), TU_NONE);
    tu_op(t, 1.0, TU_R(9), TU_R(9));
    tu_finish(t);
    const uint64_t budget = 2000;
    plan_bound_result r;
    double b = bound_of(t, budget, PLAN_BOUND_FAST, 0, &r);
    ck_assert_msg(tu_close(b, 0.5), "bound %.9g (cf %.9g, lp %.9g)", b,
                  r.closed_form_us, r.lp_us);
    ck_assert(tu_close(bound_of(t, budget, PLAN_BOUND_FULL, 0, NULL), 0.5));
    /* device home: store at t = 0, wait for it before op 1 allocates,
     * free, prefetch back under op 2 */
    plan_schedule *s = tu_sched(budget);
    ck_assert_int_eq(plan_schedule_set_home(s, t, 2, PLAN_HOME_DEVICE), 0);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_STORE, 9);
    tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 9);
    tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_FREE_DEVICE, 9);
    tu_act(s, 2, PLAN_BEFORE, PLAN_ACT_PREFETCH, 9);
    plan_metrics m;
    plan_violation v;
    ck_assert_msg(tu_sim(t, s, &m, &v) == 0, "%s", v.message);
    ck_assert_msg(tu_close(m.exposed_us, 0.5), "device home: %.9g",
                  m.exposed_us);
    plan_schedule_free(s);
    /* host home: prefetch under op 2, store and free after op 3 */
    s = tu_sched(budget);
    ck_assert_int_eq(plan_schedule_set_home(s, t, 2, PLAN_HOME_HOST), 0);
    tu_act(s, 2, PLAN_BEFORE, PLAN_ACT_PREFETCH, 9);
    tu_act(s, 3, PLAN_AFTER, PLAN_ACT_STORE, 9);
    tu_act(s, 3, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 9);
    ck_assert_msg(tu_sim(t, s, &m, &v) == 0, "%s", v.message);
    ck_assert_msg(tu_close(m.exposed_us, 1.0), "host home: %.9g",
                  m.exposed_us);
    plan_schedule_free(s);
    /* and hoplan does not beat it */
    s = NULL;
    plan_result res;
    ck_assert_int_eq(tu_plan(t, budget, "hoplan", &s, &res), 0);
    ck_assert(sim_ok(t, s, budget, &m));
    assert_not_beaten(t, budget, b, &m, "hoplan");
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* The solver stopped after a few iterations: still sound. */
START_TEST(test_limit_path)
{
    unsigned n = tu_iters(300), limited = 0;
    tu_rng = 0x5eed0003ull;
    for (unsigned it = 0; it < n; it++) {
        plan_trace *t = random_trace(0.3);
        plan_schedule *s = random_schedule(t);
        plan_metrics m;
        plan_violation v;
        ck_assert(tu_valid(t, s, &m, &v));
        plan_bound_result br;
        double b = bound_of(t, m.peak_device_bytes, PLAN_BOUND_FAST,
                            1 + (uint32_t)(tu_rand() % 5), &br);
        if (br.lp_status == PLAN_BOUND_LP_LIMIT) {
            limited++;
            ck_assert_str_eq(plan_bound_lp_status_name(br.lp_status),
                             "limit");
        }
        assert_not_beaten(t, m.peak_device_bytes, b, &m, "limited LP");
        plan_schedule_free(s);
        plan_trace_free(t);
    }
    printf("test_bound: %u of %u LPs stopped at the iteration limit\n",
           limited, n);
    ck_assert_uint_gt(limited, 0);
}
END_TEST

START_TEST(test_monotone)
{
    unsigned n = tu_iters(200);
    tu_rng = 0x5eed0004ull;
    for (unsigned it = 0; it < n; it++) {
        plan_trace *t = random_trace(0.3);
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        double prev = INFINITY;
        for (int k = 0; k <= 8; k++) {
            uint64_t budget = sm.max_op_working_set +
                              (sm.no_offload_peak - sm.max_op_working_set) *
                                  (uint64_t)k / 8;
            double b = bound_of(t, budget, PLAN_BOUND_FAST, 0, NULL);
            ck_assert_msg(b <= prev * (1 + 1e-9) + 1e-9,
                          "trace %u: bound grows with budget: %.9g > %.9g",
                          it, b, prev);
            prev = b;
        }
        uint64_t budget = sm.max_op_working_set / 2 + sm.no_offload_peak / 2;
        plan_link l = t->link;
        prev = INFINITY;
        for (int k = 0; k < 5; k++) {
            plan_bound_options o = {PLAN_BOUND_FAST, 60000, 0, 0, 0, 0};
            plan_bound_result r;
            ck_assert_int_eq(plan_exposure_bound(t, budget, &l, &o, &r, tu_err,
                                                 sizeof tu_err),
                             0);
            ck_assert_msg(r.bound_us <= prev * (1 + 1e-9) + 1e-9,
                          "trace %u: bound grows with bandwidth", it);
            prev = r.bound_us;
            l.h2d_gbps *= 1.5;
            l.d2h_gbps *= 1.3;
        }
        plan_trace_free(t);
    }
}
END_TEST

/* Hand cases. 1 GB/s, no latency: b bytes take b/1000 us. */
START_TEST(test_forced_prefetch_exact)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 5000, PLAN_INIT_HOST, false, false);
    tu_op(t, 2.0, TU_R(1), TU_NONE);
    tu_finish(t);
    /* the prefetch takes 5 us and nothing runs before op 0 */
    plan_bound_result r;
    double b = bound_of(t, 5000, PLAN_BOUND_FAST, 0, &r);
    ck_assert(tu_close(b, 5.0));
    plan_schedule *s = NULL;
    plan_result res;
    ck_assert_int_eq(tu_plan(t, 5000, "none", &s, &res), 0);
    plan_metrics m;
    ck_assert(sim_ok(t, s, 5000, &m));
    ck_assert(tu_close(m.exposed_us, 5.0));
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_forced_store_exact)
{
    /* retained host-homed data written by the last op: its store (3 us)
     * runs after the step's compute. */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 3000, PLAN_INIT_HOST, true, false);
    tu_st(t, 2, 100, PLAN_INIT_NONE, false, false);
    tu_op(t, 10.0, TU_NONE, TU_R(2));
    tu_op(t, 1.0, TU_R(2), TU_R(1));
    tu_finish(t);
    double b = bound_of(t, 1u << 20, PLAN_BOUND_FAST, 0, NULL);
    ck_assert(tu_close(b, 3.0));
    plan_trace_free(t);
}
END_TEST

/* Three 1000-byte activations, 100 us ops: 1 written by op 0 and read
 * by the last, 2 written by op 1 and read by op 2, which writes 3 (read
 * by the last), so 1 must be off during op 2 at a 2000-byte budget; with
 * `idle`, an op touching nothing before the last. */
static plan_trace *three_activations(bool idle)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 3, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 100.0, TU_NONE, TU_R(1));
    tu_op(t, 100.0, TU_NONE, TU_R(2));
    tu_op(t, 100.0, TU_R(2), TU_R(3));
    if (idle)
        tu_op(t, 100.0, TU_NONE, TU_NONE);
    tu_op(t, 100.0, TU_R(1, 3), TU_NONE);
    tu_finish(t);
    return t;
}

START_TEST(test_slack_is_zero)
{
    /* an activation with a long gap under heavy compute: must go off the
     * device (budget), and the link hides it: bound 0.  (op 3 touches
     * nothing: data off at S_2 is prefetched at E_2 at the earliest, and
     * op 3's compute hides that copy.) */
    plan_trace *t = three_activations(true);
    plan_bound_result r;
    ck_assert(bound_of(t, 2000, PLAN_BOUND_FAST, 0, &r) == 0);
    ck_assert(!r.infeasible);
    ck_assert(bound_of(t, 1u << 30, PLAN_BOUND_FULL, 0, &r) == 0);
    /* at no-offload budgets every random trace without forced copies has
     * bound 0 */
    tu_rng = 0x5eed0005ull;
    for (unsigned it = 0; it < tu_iters(200); it++) {
        plan_trace *u = random_trace(0);
        for (uint32_t s = 0; s < u->n_storages; s++)
            if (u->storages[s].initial == PLAN_INIT_HOST)
                u->storages[s].initial = PLAN_INIT_DEVICE;
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(u, &sm), 0);
        ck_assert(bound_of(u, sm.no_offload_peak, PLAN_BOUND_FAST, 0, NULL) ==
                  0);
        plan_trace_free(u);
    }
    plan_trace_free(t);
}
END_TEST

/* Data off the device at S_i comes back by a prefetch issued at E_i at
 * the earliest: with no compute between op i and its reader, the copy is
 * exposed.  The bound finds exactly what the oracle's best schedule
 * reaches. */
START_TEST(test_late_prefetch_exact)
{
    plan_trace *t = three_activations(false); /* 1 must be off at S_2 */
    plan_bound_result r;
    double b = bound_of(t, 2000, PLAN_BOUND_FAST, 0, &r);
    ck_assert_msg(tu_close(b, 1.0), "bound %.9g (cf %.9g, lp %.9g)", b,
                  r.closed_form_us, r.lp_us);
    ck_assert(tu_close(bound_of(t, 2000, PLAN_BOUND_FULL, 0, NULL), 1.0));
    plan_schedule *s = NULL;
    plan_result res;
    ck_assert_int_eq(tu_plan(t, 2000, "oracle", &s, &res), 0);
    plan_metrics m;
    ck_assert(sim_ok(t, s, 2000, &m));
    ck_assert_msg(tu_close(m.exposed_us, 1.0), "oracle exposed %.9g",
                  m.exposed_us);
    plan_schedule_free(s);
    /* the closed form adds such stalls over disjoint stretches: the same
     * pattern twice costs twice */
    plan_trace *u = tu_trace(NULL);
    for (int k = 0; k < 2; k++) {
        int a = 10 * k + 1, bb = a + 1, c = a + 2;
        tu_st(u, (uint64_t)a, 1000, PLAN_INIT_NONE, false, false);
        tu_st(u, (uint64_t)bb, 1000, PLAN_INIT_NONE, false, false);
        tu_st(u, (uint64_t)c, 1000, PLAN_INIT_NONE, false, false);
        tu_op(u, 100.0, TU_NONE, TU_R(a));
        tu_op(u, 100.0, TU_NONE, TU_R(bb));
        tu_op(u, 100.0, TU_R(bb), TU_R(c));
        tu_op(u, 100.0, TU_R(a, c), TU_NONE);
    }
    tu_finish(u);
    double b2 = bound_of(u, 2000, PLAN_BOUND_FAST, 0, &r);
    ck_assert_msg(tu_close(b2, 2.0) && tu_close(r.closed_form_us, 2.0),
                  "bound %.9g, closed form %.9g", b2, r.closed_form_us);
    plan_trace_free(u);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_infeasible_and_off)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_DEVICE, true, false);
    tu_st(t, 2, 500, PLAN_INIT_NONE, false, false);
    tu_op(t, 1.0, TU_R(1), TU_R(2));
    tu_finish(t);
    plan_bound_result r;
    double b = bound_of(t, 1499, PLAN_BOUND_FAST, 0, &r);
    ck_assert(r.infeasible);
    ck_assert(isinf(b));
    ck_assert_uint_eq(r.floor_bytes, 1500);
    ck_assert_uint_eq(r.floor_op, 0);
    ck_assert_ptr_nonnull(strstr(r.note, "op 0"));
    plan_schedule *s = NULL;
    plan_result res;
    ck_assert_int_eq(tu_plan(t, 1499, "hoplan", &s, &res), HO_E_INFEASIBLE);
    plan_trace_free(t);
    /* the step-start total as the floor */
    t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_DEVICE, true, false);
    tu_st(t, 2, 800, PLAN_INIT_DEVICE, true, false);
    tu_op(t, 1.0, TU_R(1), TU_NONE);
    tu_op(t, 1.0, TU_R(2), TU_NONE);
    tu_finish(t);
    b = bound_of(t, 1799, PLAN_BOUND_FAST, 0, &r);
    ck_assert(r.infeasible && r.floor_op == PLAN_NONE);
    ck_assert_uint_eq(r.floor_bytes, 1800);
    ck_assert(!bound_of(t, 1800, PLAN_BOUND_FAST, 0, &r) && !r.infeasible);
    /* off: nothing computed */
    plan_bound_options o = {PLAN_BOUND_OFF, 0, 0, 0, 0, 0};
    ck_assert_int_eq(plan_exposure_bound(t, 1, NULL, &o, &r, tu_err,
                                         sizeof tu_err),
                     0);
    ck_assert(r.bound_us == 0 && !r.infeasible);
    ck_assert_str_eq(r.source, "none");
    /* names and bad input */
    plan_bound_mode md;
    ck_assert_int_eq(plan_bound_mode_parse("full", &md), 0);
    ck_assert_int_eq(md, PLAN_BOUND_FULL);
    ck_assert_int_eq(plan_bound_mode_parse("quick", &md), -EINVAL);
    ck_assert_str_eq(plan_bound_mode_name(PLAN_BOUND_FAST), "fast");
    plan_link bad = {0, 1, 0, true};
    ck_assert_int_eq(plan_exposure_bound(t, 1 << 20, &bad, NULL, &r, tu_err,
                                         sizeof tu_err),
                     -EINVAL);
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_bound");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_forced_prefetch_exact);
    tcase_add_test(tc, test_forced_store_exact);
    tcase_add_test(tc, test_slack_is_zero);
    tcase_add_test(tc, test_late_prefetch_exact);
    tcase_add_test(tc, test_infeasible_and_off);
    tcase_add_test(tc, test_random_schedules);
    tcase_add_test(tc, test_planners_never_beat_it);
    tcase_add_test(tc, test_curves_never_beat_it);
    tcase_add_test(tc, test_limit_path);
    tcase_add_test(tc, test_movable_never_beat_it);
    tcase_add_test(tc, test_movable_coupled_exact);
    tcase_add_test(tc, test_monotone);
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
