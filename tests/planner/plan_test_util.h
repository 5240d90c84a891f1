/*
 * tests/planner/plan_test_util.h - helpers shared by the planner-core
 * tests (test_ir, test_simulate, test_seed_greedy, test_baselines,
 * test_hoplan, test_property, test_oracle): building small traces by
 * hand, schedules by storage id, judging a schedule, a tiny random
 * generator.  Everything is static; each test includes it once.
 */
#ifndef HO_TESTS_PLAN_TEST_UTIL_H
#define HO_TESTS_PLAN_TEST_UTIL_H

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"

static char tu_err[512] __attribute__((unused));

/* 1 GB/s both ways (1 byte = 1e-3 us), no latency: copy time of b bytes is
 * b / 1000 us, easy to compute by hand. */
static const plan_link tu_link_fast = {1.0, 1.0, 0.0, true};

static inline plan_trace *tu_trace(const plan_link *l)
{
    plan_trace *t = plan_trace_new("test", l ? l : &tu_link_fast);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* Add a storage; returns its index. */
static inline uint32_t tu_st(plan_trace *t, uint64_t id, uint64_t bytes,
                      plan_initial init, bool retained, bool pinned)
{
    plan_storage s = {id, bytes, PLAN_KIND_ACTIVATION, (uint8_t)init,
                      retained, pinned, false};
    uint32_t idx = PLAN_NONE;
    int r = plan_trace_add_storage(t, &s, &idx, tu_err, sizeof tu_err);
    ck_assert_msg(r == 0, "add_storage %llu: %s", (unsigned long long)id,
                  tu_err);
    return idx;
}

/* Add a retained, movable storage (initial device or host). */
static inline uint32_t tu_st_movable(plan_trace *t, uint64_t id,
                                     uint64_t bytes, plan_initial init)
{
    plan_storage s = {id, bytes, PLAN_KIND_PARAM, (uint8_t)init, true,
                      false, true};
    uint32_t idx = PLAN_NONE;
    int r = plan_trace_add_storage(t, &s, &idx, tu_err, sizeof tu_err);
    ck_assert_msg(r == 0, "add_storage %llu: %s", (unsigned long long)id,
                  tu_err);
    return idx;
}

/* Add an op by storage *ids*: reads then writes, each list ended by -1. */
static inline void tu_op(plan_trace *t, double dur, const int *reads,
                  const int *writes)
{
    uint32_t rd[64], wr[64], nr = 0, nw = 0;
    for (; reads && reads[nr] >= 0; nr++)
        rd[nr] = plan_trace_find(t, (uint64_t)reads[nr]);
    for (; writes && writes[nw] >= 0; nw++)
        wr[nw] = plan_trace_find(t, (uint64_t)writes[nw]);
    char name[32];
    snprintf(name, sizeof name, "op%u", t->n_ops);
    int r = plan_trace_add_op(t, name, dur, rd, nr, wr, nw, tu_err,
                              sizeof tu_err);
    ck_assert_msg(r == 0, "add_op: %s", tu_err);
}

#define TU_R(...) ((const int[]){__VA_ARGS__, -1})
#define TU_NONE ((const int[]){-1})

static inline void tu_finish(plan_trace *t)
{
    int r = plan_trace_finish(t, tu_err, sizeof tu_err);
    ck_assert_msg(r == 0, "finish: %s", tu_err);
}

static inline plan_schedule *tu_sched(uint64_t budget)
{
    plan_schedule *s = plan_schedule_new("test", budget);
    ck_assert_ptr_nonnull(s);
    return s;
}

static inline void tu_act(plan_schedule *s, uint32_t op, plan_when w,
                   plan_act_kind k, uint64_t id)
{
    ck_assert_int_eq(plan_schedule_push_id(s, op, w, k, id), 0);
}

/* Bind and simulate; returns plan_simulate's code. */
static inline int tu_sim(const plan_trace *t, plan_schedule *s,
                         plan_metrics *m, plan_violation *v)
{
    int r = plan_schedule_bind(s, t, tu_err, sizeof tu_err);
    ck_assert_msg(r == 0, "bind: %s", tu_err);
    return plan_simulate(t, s, m, v, NULL);
}

/* Valid under the model whatever the budget?  Fills *m. */
static inline bool tu_valid(const plan_trace *t, const plan_schedule *s,
                     plan_metrics *m, plan_violation *v)
{
    plan_schedule copy = *s;
    copy.budget_bytes = UINT64_MAX;
    return plan_simulate(t, &copy, m, v, NULL) == 0;
}

static inline bool tu_close(double a, double b)
{
    return fabs(a - b) <= 1e-6 * (fabs(a) > fabs(b) ? fabs(a) : fabs(b)) +
                              1e-9;
}

/* Count actions of a kind on a storage id. */
static inline unsigned tu_count(const plan_schedule *s, plan_act_kind k,
                                uint64_t id)
{
    unsigned c = 0;
    for (size_t i = 0; i < s->n_actions; i++)
        if (s->actions[i].kind == k && s->actions[i].storage_id == id)
            c++;
    return c;
}

/* Index of the first action (kind, id), or -1. */
static inline long tu_find(const plan_schedule *s, plan_act_kind k,
                           uint64_t id)
{
    for (size_t i = 0; i < s->n_actions; i++)
        if (s->actions[i].kind == k && s->actions[i].storage_id == id)
            return (long)i;
    return -1;
}

/* Run a planner through plan_make. */
static inline int tu_plan(const plan_trace *t, uint64_t budget,
                          const char *name, plan_schedule **ret,
                          plan_result *res)
{
    plan_options o = {name, 0, 0, 0};
    *ret = NULL;
    return plan_make(t, budget, &o, ret, res);
}

/* xorshift64: the tests' own random numbers. */
static uint64_t tu_rng __attribute__((unused)) = 0x9e3779b97f4a7c15ull;
static inline uint64_t tu_rand(void)
{
    tu_rng ^= tu_rng << 13;
    tu_rng ^= tu_rng >> 7;
    tu_rng ^= tu_rng << 17;
    return tu_rng;
}
static inline double tu_frand(void)
{
    return (double)(tu_rand() >> 11) * (1.0 / 9007199254740992.0);
}

/* The shape of a random trace (tu_random_trace): ops 3 + [0, ops_span),
 * storages 2 + [0, storages_span), refs per op 2 + [0, refs_span), and
 * each probability drawn uniformly in [0, max). */
typedef struct tu_shape {
    unsigned ops_span, storages_span, refs_span;
    double p_device_max, p_host_max, p_retained_max, p_pinned_max;
    double p_movable; /* fixed, not drawn */
} tu_shape;

/* A random trace of that shape with a random link (duplex or not, 0.02-1
 * GB/s each way, latency 0-20 us) and durations (0 for one op in five,
 * else 0-500 us).  The draws come in one fixed order. */
static inline plan_trace *tu_random_trace(const tu_shape *sh)
{
    plan_gen_random_cfg c;
    memset(&c, 0, sizeof c);
    c.seed = tu_rand();
    c.n_ops = 3 + (uint32_t)(tu_rand() % sh->ops_span);
    c.n_storages = 2 + (uint32_t)(tu_rand() % sh->storages_span);
    c.max_refs_per_op = 2 + (uint32_t)(tu_rand() % sh->refs_span);
    while ((c.n_storages + c.n_ops - 1) / c.n_ops > c.max_refs_per_op)
        c.max_refs_per_op++;
    c.min_bytes = 1 + tu_rand() % 1000;
    c.max_bytes = c.min_bytes + tu_rand() % 100000;
    c.p_initial_device = tu_frand() * sh->p_device_max;
    c.p_initial_host = tu_frand() * sh->p_host_max;
    c.p_retained = tu_frand() * sh->p_retained_max;
    c.p_pinned = tu_frand() * sh->p_pinned_max;
    c.p_movable = sh->p_movable;
    plan_trace *t = NULL;
    int r = plan_gen_random(&c, &t, tu_err, sizeof tu_err);
    ck_assert_msg(r == 0, "gen: %s", tu_err);
    t->link.duplex = tu_rand() & 1;
    t->link.h2d_gbps = 0.02 + tu_frand();
    t->link.d2h_gbps = 0.02 + tu_frand();
    t->link.latency_us = tu_frand() * 20;
    for (uint32_t i = 0; i < t->n_ops; i++)
        t->ops[i].duration_us = tu_rand() % 5 == 0 ? 0 : tu_frand() * 500;
    return t;
}

/* Iterations: `base`, scaled by HO_PLANNER_ITERS (a factor, e.g. 10) and
 * cut under valgrind. */
static inline unsigned tu_iters(unsigned base)
{
    const char *f = getenv("HO_PLANNER_ITERS");
    double k = f ? atof(f) : 1.0;
    if (getenv("HO_UNDER_VALGRIND"))
        k /= 20;
    unsigned n = (unsigned)(base * k);
    return n ? n : 1;
}

/* The JSON text of a trace / schedule, malloc'ed (owned by the caller). */
static inline char *tu_trace_json(const plan_trace *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(plan_trace_write_json(t, f), 0);
    fclose(f);
    return buf;
}

static inline char *tu_schedule_json(const plan_schedule *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(plan_schedule_write_json(s, f), 0);
    fclose(f);
    return buf;
}

#endif
