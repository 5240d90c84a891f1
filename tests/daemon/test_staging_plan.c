/* tests/daemon/test_staging_plan.c - unit tests of the staging planner
 * (planner/staging.c, plan_staging_make), checked by an independent
 * replay of its events over the positions of a step:
 *   - the DDR-resident slots never exceed the limit,
 *   - every copy of the schedule (from the op of its point to the op in
 *     which it completes, as plan_simulate times it) finds its slot in DDR,
 *   - transitions are consistent (fill/alloc only when out, write and
 *     evict only when in) and no live data is dropped,
 *   - the plan is cyclic (end state = start state),
 *   - nothing is staged when everything fits,
 *   - an infeasible limit is reported with its figures, and the smallest
 *     feasible limit it reports is feasible. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/plan.h"
#include "planner/gen/gen.h"
#include "planner/staging/stage_plan.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

static int under_valgrind(void)
{
    const char *v = getenv("HO_UNDER_VALGRIND");
    return v && strcmp(v, "1") == 0;
}

typedef struct fx {
    plan_trace *t;
    plan_schedule *s;
    uint32_t n_slots;
    uint32_t *slot_storage;
    uint64_t *slot_bytes;
    uint64_t total;
} fx;

/* Slots: every storage stored by the schedule or starting on host. */
static void fx_slots(fx *f)
{
    const plan_trace *t = f->t;
    uint8_t *need = calloc(t->n_storages, 1);
    for (uint32_t i = 0; i < t->n_storages; i++)
        need[i] = t->storages[i].initial == PLAN_INIT_HOST;
    for (size_t k = 0; k < f->s->n_actions; k++)
        if (f->s->actions[k].kind == PLAN_ACT_STORE)
            need[f->s->actions[k].storage] = 1;
    f->slot_storage = calloc(t->n_storages, sizeof(uint32_t));
    f->slot_bytes = calloc(t->n_storages, sizeof(uint64_t));
    f->n_slots = 0;
    f->total = 0;
    for (uint32_t i = 0; i < t->n_storages; i++)
        if (need[i]) {
            f->slot_storage[f->n_slots] = i;
            f->slot_bytes[f->n_slots] = (t->storages[i].bytes + 4095) & ~4095ull;
            f->total += f->slot_bytes[f->n_slots];
            f->n_slots++;
        }
    free(need);
}

static int fx_random(fx *f, uint64_t seed, uint32_t ops, uint32_t storages,
                     double pct)
{
    memset(f, 0, sizeof(*f));
    plan_gen_random_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.seed = seed;
    cfg.n_ops = ops;
    cfg.n_storages = storages;
    cfg.max_refs_per_op = 3;
    cfg.min_bytes = 64 * KiB;
    cfg.max_bytes = 2 * MiB;
    cfg.p_initial_device = 0.2;
    cfg.p_initial_host = 0.3;
    cfg.p_retained = 0.2;
    cfg.p_pinned = 0.0;
    char err[256];
    ck_assert_msg(plan_gen_random(&cfg, &f->t, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_int_eq(plan_trace_finish(f->t, err, sizeof(err)), 0);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(f->t, &sm), 0);
    plan_result res;
    int rc = plan_make(f->t, (uint64_t)((double)sm.no_offload_peak * pct),
                       NULL, &f->s, &res);
    if (rc < 0) {
        plan_trace_free(f->t);
        f->t = NULL;
        return rc;
    }
    fx_slots(f);
    return 0;
}

static void fx_done(fx *f)
{
    plan_schedule_free(f->s);
    plan_trace_free(f->t);
    free(f->slot_storage);
    free(f->slot_bytes);
}

static int stage(const fx *f, uint64_t limit, plan_staging **ret,
                 uint64_t *min_limit, char *err, size_t errlen)
{
    plan_staging_input in = {
        .trace = f->t, .sched = f->s, .slot_storage = f->slot_storage,
        .slot_bytes = f->slot_bytes, .n_slots = f->n_slots,
        .ddr_limit = limit, .flash_read_gbps = 1.5, .flash_write_gbps = 1.2,
        .flash_latency_us = 50};
    return plan_staging_make(&in, ret, min_limit, err, errlen);
}

/* ------------------------------------------------------------ checker */

typedef struct xrec {
    double *op_end;
    double *x_end;
    size_t n, cap;
} xrec;

static void on_op(void *ctx, uint32_t op, double s, double e)
{
    (void)s;
    ((xrec *)ctx)->op_end[op] = e;
}

static void on_xfer(void *ctx, int dir, uint32_t st, double s, double e,
                    uint64_t b)
{
    (void)dir;
    (void)st;
    (void)s;
    (void)b;
    xrec *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->x_end = realloc(r->x_end, r->cap * sizeof(double));
    }
    r->x_end[r->n++] = e;
}

/* A copy of the schedule as the checker sees it: slot k must be in DDR
 * at positions [q0, q1]; a store makes the slot's data live at q0. */
typedef struct cuse {
    uint32_t k, q0, q1;
    uint32_t qa;             /* the action's own point: 2*op + when */
    bool store;
    size_t action;
} cuse;

static cuse *copies(const fx *f, size_t *ret_n)
{
    const plan_trace *t = f->t;
    uint32_t n = t->n_ops;
    uint32_t *slot_of = malloc(t->n_storages * sizeof(uint32_t));
    for (uint32_t i = 0; i < t->n_storages; i++)
        slot_of[i] = UINT32_MAX;
    for (uint32_t k = 0; k < f->n_slots; k++)
        slot_of[f->slot_storage[k]] = k;
    xrec r = {.op_end = calloc(n, sizeof(double))};
    plan_sim_observer obs = {.ctx = &r, .op = on_op, .transfer = on_xfer};
    plan_metrics m;
    plan_violation v;
    ck_assert_int_eq(plan_simulate(t, f->s, &m, &v, &obs), 0);
    cuse *u = calloc(f->s->n_actions + 1, sizeof(*u));
    size_t xi = 0, nu = 0;
    for (size_t a = 0; a < f->s->n_actions; a++) {
        const plan_action *ac = &f->s->actions[a];
        if (ac->kind != PLAN_ACT_PREFETCH && ac->kind != PLAN_ACT_STORE)
            continue;
        double end = r.x_end[xi++];
        uint32_t k = slot_of[ac->storage];
        ck_assert_uint_ne(k, UINT32_MAX);
        uint32_t last = ac->op;
        while (last + 1 < n && r.op_end[last] < end)
            last++;
        /* positions: from the begin of the action's op (the daemon hears
         * of an op when it begins) to the begin of the op the copy ends
         * in; an eviction after that op is fine.  (A copy after the last
         * op ends at step end: covered up to before the last op.) */
        u[nu++] = (cuse){k, 2 * ac->op, 2 * last, 2 * ac->op + ac->when,
                         ac->kind == PLAN_ACT_STORE, a};
    }
    free(r.op_end);
    free(r.x_end);
    free(slot_of);
    *ret_n = nu;
    return u;
}

/* Replay p's events over the positions and check every property.  Returns
 * the number of copies checked. */
static size_t check_plan(const fx *f, const plan_staging *p, uint64_t limit)
{
    const plan_trace *t = f->t;
    uint32_t n = t->n_ops, npos = 2 * n;
    ck_assert_uint_eq(p->n_slots, f->n_slots);
    ck_assert_uint_eq(p->n_ops, n);
    for (uint32_t e = 1; e < p->n_events; e++)
        ck_assert_uint_le(p->events[e - 1].pos, p->events[e].pos);
    size_t nu = 0;
    cuse *u = copies(f, &nu);

    /* in[k] after the events of each position: state[pos * n_slots + k] */
    uint8_t *state = calloc((size_t)npos * f->n_slots + 1, 1);
    uint8_t *in = malloc(f->n_slots + 1);
    uint8_t *live = malloc(f->n_slots + 1);  /* data worth keeping */
    uint8_t *has = malloc(f->n_slots + 1);   /* the DDR copy holds it */
    memcpy(in, p->start_in_ddr, f->n_slots);
    uint64_t bytes = 0;
    for (uint32_t k = 0; k < f->n_slots; k++) {
        if (in[k])
            bytes += f->slot_bytes[k];
        live[k] = t->storages[f->slot_storage[k]].initial == PLAN_INIT_HOST;
        has[k] = in[k] && live[k];
    }
    ck_assert_uint_le(bytes, limit);
    uint32_t e = 0, milestone_ops = 0;
    size_t ui = 0;
    uint8_t *in_end = malloc(f->n_slots + 1), *has_end = malloc(f->n_slots + 1);
    for (uint32_t q = 0; q < npos; q++) {
        /* the events after the last op reach the daemon when the next
         * step's op 0 begins, after the step end drained every copy: the
         * copies issued after the last op see the state before them */
        if (q == npos - 1) {
            memcpy(in_end, in, f->n_slots);
            memcpy(has_end, has, f->n_slots);
        }
        for (; e < p->n_events && p->events[e].pos == q; e++) {
            const plan_stage_event *ev = &p->events[e];
            uint32_t k = ev->slot;
            ck_assert_uint_lt(k, f->n_slots);
            switch (ev->kind) {
            case PLAN_STAGE_FILL:
                ck_assert_msg(!in[k], "fill of slot %u already in DDR", k);
                ck_assert_msg(live[k], "fill of slot %u whose data was "
                              "dropped (pos %u)", k, q);
                in[k] = 1;
                has[k] = 1;
                bytes += f->slot_bytes[k];
                break;
            case PLAN_STAGE_ALLOC:
                ck_assert_msg(!in[k], "alloc of slot %u already in DDR", k);
                in[k] = 1;
                has[k] = 0;   /* zeros until a store writes it */
                bytes += f->slot_bytes[k];
                break;
            case PLAN_STAGE_WRITE:
                ck_assert_msg(in[k], "write of slot %u not in DDR", k);
                break;
            case PLAN_STAGE_EVICT:
                ck_assert_msg(in[k], "evict of slot %u not in DDR", k);
                in[k] = 0;
                bytes -= f->slot_bytes[k];
                if (!ev->keep)
                    live[k] = 0;
                break;
            default:
                ck_abort_msg("bad event kind %u", ev->kind);
            }
            /* the op at whose begin the daemon learns of it */
            uint32_t op = q / 2 + (q & 1u);
            if (op >= n)
                op = 0;
            ck_assert_msg((p->milestones[op >> 6] >> (op & 63)) & 1u,
                          "event at pos %u but op %u is no milestone", q, op);
        }
        if (p->pos_ddr)
            ck_assert_uint_eq(p->pos_ddr[q], bytes);
        ck_assert_msg(bytes <= limit, "%llu bytes of slots in DDR at pos %u, "
                      "limit %llu", (unsigned long long)bytes, q,
                      (unsigned long long)limit);
        memcpy(state + (size_t)q * f->n_slots, in, f->n_slots);
        /* the copies issued at this point: a prefetch reads the copy's
         * data (it must be there, not zeros of an alloc); a store writes
         * it */
        (void)ui;
        for (size_t w = 0; w < nu; w++) {
            if (u[w].qa != q)
                continue;
            if (u[w].store) {
                live[u[w].k] = 1;
                has[u[w].k] = 1;
            } else {
                const uint8_t *vi = q == npos - 1 ? in_end : in;
                const uint8_t *vh = q == npos - 1 ? has_end : has;
                ck_assert_msg(vi[u[w].k] && vh[u[w].k], "prefetch of slot "
                              "%u at pos %u would read %s", u[w].k, q,
                              vi[u[w].k] ? "zeros (allocated without "
                              "reading)" : "a copy out of DDR");
            }
        }
    }
    ck_assert_uint_eq(e, p->n_events);
    /* cyclic */
    for (uint32_t k = 0; k < f->n_slots; k++)
        ck_assert_msg(in[k] == p->start_in_ddr[k], "slot %u ends %s DDR but "
                      "starts %s it", k, in[k] ? "in" : "out of",
                      p->start_in_ddr[k] ? "in" : "out of");
    for (uint32_t op = 0; op < n; op++)
        milestone_ops += (p->milestones[op >> 6] >> (op & 63)) & 1u;
    ck_assert_uint_eq(milestone_ops, p->n_milestones);

    /* every copy finds its slot in DDR from its op to its completion */
    for (size_t w = 0; w < nu; w++) {
        const plan_action *ac = &f->s->actions[u[w].action];
        for (uint32_t q = u[w].q0; q <= u[w].q1; q++)
            ck_assert_msg(state[(size_t)q * f->n_slots + u[w].k],
                          "%s of storage %llu (op %u %s) finds slot %u out of "
                          "DDR at pos %u", plan_act_name(ac->kind),
                          (unsigned long long)ac->storage_id, ac->op,
                          ac->when ? "after" : "before", u[w].k, q);
    }
    free(u);
    free(state);
    free(in);
    free(live);
    free(has);
    free(in_end);
    free(has_end);
    return nu;
}

/* ------------------------------------------------------------ tests */

START_TEST(everything_fits_no_actions)
{
    fx f;
    ck_assert_int_eq(fx_random(&f, 3, 60, 25, 0.7), 0);
    ck_assert_uint_gt(f.n_slots, 0);
    plan_staging *p = NULL;
    char err[512] = "";
    ck_assert_int_eq(stage(&f, f.total, &p, NULL, err, sizeof(err)), 0);
    ck_assert_uint_eq(p->n_events, 0);
    ck_assert_uint_eq(p->n_milestones, 0);
    ck_assert_uint_eq(p->n_actions, 0);
    ck_assert_uint_eq(p->total_bytes, f.total);
    for (uint32_t k = 0; k < f.n_slots; k++)
        ck_assert(p->start_in_ddr[k]);
    for (uint32_t w = 0; w < (f.t->n_ops + 63) / 64; w++)
        ck_assert_uint_eq(p->milestones[w], 0);
    check_plan(&f, p, f.total);
    plan_staging_free(p);
    fx_done(&f);
}
END_TEST

START_TEST(limit_respected_copies_in_ddr_cyclic)
{
    int rounds = under_valgrind() ? 3 : 25, staged = 0;
    for (int i = 0; i < rounds; i++) {
        fx f;
        if (fx_random(&f, 100 + (uint64_t)i, 120, 40, 0.6 + 0.02 * i) < 0)
            continue;
        for (int frac = 4; frac <= 9; frac += 5) {
            uint64_t limit = f.total * (uint64_t)frac / 10;
            plan_staging *p = NULL;
            uint64_t min_limit = 0;
            char err[512] = "";
            int rc = stage(&f, limit, &p, &min_limit, err, sizeof(err));
            if (rc == HO_E_INFEASIBLE) {
                ck_assert_uint_gt(min_limit, limit);
                rc = stage(&f, min_limit, &p, NULL, err, sizeof(err));
                ck_assert_msg(rc == 0, "min limit %llu infeasible: %s",
                              (unsigned long long)min_limit, err);
                limit = min_limit;
            }
            ck_assert_msg(rc == 0, "seed %d: %s (%s)", i, err,
                          ho_strerror(rc));
            ck_assert_uint_le(p->peak_ddr_bytes, limit);
            if (f.total > limit) {
                ck_assert_uint_gt(p->n_events, 0);
                ck_assert_uint_gt(p->n_milestones, 0);
                staged++;
            }
            size_t nc = check_plan(&f, p, limit);
            if (getenv("STG_DEBUG"))
                fprintf(stderr, "seed %d frac %d: slots %u total %llu limit "
                        "%llu events %u milestones %u copies %zu promoted %u "
                        "exposed %.0f us\n", i, frac, f.n_slots,
                        (unsigned long long)f.total,
                        (unsigned long long)limit, p->n_events,
                        p->n_milestones, nc, p->promoted, p->exposed_us);
            plan_staging_free(p);
        }
        fx_done(&f);
    }
    ck_assert_int_gt(staged, 0);
}
END_TEST

/* A hand-made step: two optimizer-like states on host, each updated in
 * its own op, and an activation stored early and prefetched late (a large
 * scratch in between forces that).  With room for one state only the
 * daemon must take turns. */
static void fx_hand(fx *f)
{
    memset(f, 0, sizeof(*f));
    plan_link link = {.h2d_gbps = 10, .d2h_gbps = 10, .latency_us = 5,
                      .duplex = true};
    f->t = plan_trace_new("hand", &link);
    char err[256];
    plan_storage st[4] = {
        {.id = 10, .bytes = 2 * MiB, .kind = PLAN_KIND_OPTIMIZER,
         .initial = PLAN_INIT_HOST, .retained = true},
        {.id = 11, .bytes = 2 * MiB, .kind = PLAN_KIND_OPTIMIZER,
         .initial = PLAN_INIT_HOST, .retained = true},
        {.id = 20, .bytes = 2 * MiB, .kind = PLAN_KIND_ACTIVATION,
         .initial = PLAN_INIT_NONE},
        {.id = 30, .bytes = 5 * MiB, .kind = PLAN_KIND_ACTIVATION,
         .initial = PLAN_INIT_NONE},
    };
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(plan_trace_add_storage(f->t, &st[i], NULL, err,
                                                sizeof(err)), 0);
    /* op 0 writes A (20); op 1 idle; ops 2..9 scratch (30); op 10 reads
     * A; op 11 updates state 10; op 12 idle; op 13 updates state 11 */
    uint32_t a = 2, sc = 3, s0 = 0, s1 = 1;
    ck_assert_int_eq(plan_trace_add_op(f->t, "fwd", 100, NULL, 0, &a, 1, err,
                                       sizeof(err)), 0);
    ck_assert_int_eq(plan_trace_add_op(f->t, "gap", 1000, NULL, 0, NULL, 0,
                                       err, sizeof(err)), 0);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(plan_trace_add_op(f->t, "mid", 500, NULL, 0, &sc, 1,
                                           err, sizeof(err)), 0);
    ck_assert_int_eq(plan_trace_add_op(f->t, "bwd", 100, &a, 1, NULL, 0, err,
                                       sizeof(err)), 0);
    ck_assert_int_eq(plan_trace_add_op(f->t, "opt0", 400, &s0, 1, &s0, 1,
                                       err, sizeof(err)), 0);
    ck_assert_int_eq(plan_trace_add_op(f->t, "idle", 2000, NULL, 0, NULL, 0,
                                       err, sizeof(err)), 0);
    ck_assert_int_eq(plan_trace_add_op(f->t, "opt1", 400, &s1, 1, &s1, 1,
                                       err, sizeof(err)), 0);
    ck_assert_int_eq(plan_trace_finish(f->t, err, sizeof(err)), 0);
    plan_result res;
    /* budget 6 MiB: A + scratch = 7 MiB, so A goes to host */
    int rc = plan_make(f->t, 6 * MiB, NULL, &f->s, &res);
    ck_assert_msg(rc == 0, "%s (min %llu)", res.message,
                  (unsigned long long)res.min_budget);
    fx_slots(f);
}

START_TEST(hand_made_takes_turns)
{
    fx f;
    fx_hand(&f);
    /* slots: both states and A */
    ck_assert_uint_eq(f.n_slots, 3);
    ck_assert_uint_eq(f.total, 6 * MiB);
    plan_staging *p = NULL;
    char err[512] = "";
    /* op 10 needs A (its prefetch) and state 10 (prefetched ahead) */
    uint64_t limit = 4 * MiB;
    ck_assert_msg(stage(&f, limit, &p, NULL, err, sizeof(err)) == 0, "%s",
                  err);
    check_plan(&f, p, limit);
    /* not everything fits: at least one state goes to flash and comes back
     * each step */
    int fills = 0, evicts = 0;
    for (uint32_t e = 0; e < p->n_events; e++) {
        uint32_t k = p->events[e].slot;
        if (f.slot_storage[k] > 1)
            continue;
        fills += p->events[e].kind == PLAN_STAGE_FILL;
        evicts += p->events[e].kind == PLAN_STAGE_EVICT;
    }
    ck_assert_int_ge(fills, 1);
    ck_assert_int_ge(evicts, 1);
    ck_assert_int_eq(fills, evicts);
    ck_assert_uint_gt(p->flash_read_bytes, 0);
    plan_staging_free(p);
    p = NULL;

    /* below one state's size: infeasible with the figures */
    uint64_t min_limit = 0;
    err[0] = 0;
    ck_assert_int_eq(stage(&f, MiB, &p, &min_limit, err, sizeof(err)),
                     HO_E_INFEASIBLE);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(err, "4194304 bytes"), "%s", err);
    ck_assert_msg(strstr(err, "1048576 bytes"), "%s", err);
    ck_assert_uint_ge(min_limit, 4 * MiB);
    ck_assert_int_eq(stage(&f, min_limit, &p, NULL, err, sizeof(err)), 0);
    check_plan(&f, p, min_limit);
    plan_staging_free(p);
    fx_done(&f);
}
END_TEST

/* A training step with parameters and optimizer state on host: each
 * state is prefetched before its update op and stored right after it, so
 * the prefetch and the store of one copy meet in one op.  The staging plan
 * must still bring the state in with its data (a fill, not an alloc). */
START_TEST(training_states_on_host)
{
    plan_gen_train_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.model = (plan_model){.name = "tiny", .layers = 2, .hidden = 128,
                             .heads = 4, .kv_heads = 4, .ffn = 256,
                             .vocab = 512};
    cfg.device = (plan_device){.name = "slow", .tflops = 0.05,
                               .hbm_gib = 1, .hbm_gbps = 1, .link_gbps = 1,
                               .link_latency_us = 10};
    cfg.seq = 64;
    cfg.micro_batch = 2;
    cfg.n_micro = 2;
    cfg.dtype_bytes = 2;
    cfg.params_on_host = true;
    cfg.optimizer_on_host = true;
    cfg.optimizer_step = true;
    fx f;
    memset(&f, 0, sizeof(f));
    char err[512] = "";
    ck_assert_msg(plan_gen_train(&cfg, &f.t, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_int_eq(plan_trace_finish(f.t, err, sizeof(err)), 0);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(f.t, &sm), 0);
    plan_result res;
    int prc = plan_make(f.t, sm.no_offload_peak * 6 / 10, NULL, &f.s, &res);
    if (prc == HO_E_INFEASIBLE)
        prc = plan_make(f.t, res.min_budget, NULL, &f.s, &res);
    ck_assert_msg(prc == 0, "%s", res.message);
    fx_slots(&f);
    int staged = 0;
    for (int pct = 30; pct <= 90; pct += 20) {
        plan_staging *p = NULL;
        uint64_t limit = f.total * (uint64_t)pct / 100, min = 0;
        int rc = stage(&f, limit, &p, &min, err, sizeof(err));
        if (rc == HO_E_INFEASIBLE) {
            limit = min;
            rc = stage(&f, limit, &p, NULL, err, sizeof(err));
        }
        ck_assert_msg(rc == 0, "%s", err);
        staged += p->n_events > 0;
        check_plan(&f, p, limit);
        plan_staging_free(p);
    }
    ck_assert_int_gt(staged, 0);
    fx_done(&f);
}
END_TEST

START_TEST(bad_input)
{
    fx f;
    fx_hand(&f);
    plan_staging *p = NULL;
    char err[256];
    plan_staging_input in = {
        .trace = f.t, .sched = f.s, .slot_storage = f.slot_storage,
        .slot_bytes = f.slot_bytes, .n_slots = f.n_slots,
        .ddr_limit = MiB, .flash_read_gbps = 0, .flash_write_gbps = 1};
    ck_assert_int_eq(plan_staging_make(&in, &p, NULL, err, sizeof(err)),
                     -EINVAL);
    in.flash_read_gbps = 1;
    uint32_t dup[3] = {f.slot_storage[0], f.slot_storage[0],
                       f.slot_storage[1]};
    in.slot_storage = dup;
    ck_assert_int_eq(plan_staging_make(&in, &p, NULL, err, sizeof(err)),
                     -EINVAL);
    /* a stored storage without a slot */
    in.slot_storage = f.slot_storage + 1;
    in.slot_bytes = f.slot_bytes + 1;
    in.n_slots = f.n_slots - 1;
    int rc = plan_staging_make(&in, &p, NULL, err, sizeof(err));
    ck_assert_int_eq(rc, -EINVAL);
    ck_assert_ptr_null(p);
    fx_done(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("daemon_staging_plan");
    TCase *tc = tcase_create("staging");
    tcase_set_timeout(tc, under_valgrind() ? 600 : 60);
    tcase_add_test(tc, everything_fits_no_actions);
    tcase_add_test(tc, limit_respected_copies_in_ddr_cyclic);
    tcase_add_test(tc, hand_made_takes_turns);
    tcase_add_test(tc, training_states_on_host);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
