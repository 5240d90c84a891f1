/* tests/daemon/test_planning.c - PlanRequest against the real daemon: the
 * reply equals what the planner library computes locally for the same
 * trace and budget, the second identical request comes from the cache,
 * infeasible budgets name the smallest feasible one, bad traces and bad
 * requests get their specific codes. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "planner/plan.h"
#include "planner/bound/bound.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"
#include "proto/plan.pb-c.h"
#include "tests/daemon/rawclient.h"

#define MiB (1ull << 20)

static ho_harness *h;

static void start(void)
{
    h = ho_harness_start_args(NULL);
}

static void stop(void)
{
    int st = ho_harness_free(h);
    h = NULL;
    ck_assert_msg(st == 0, "daemon exit status %d", st);
}

/* A small random trace, finished, and its protobuf message. */
static plan_trace *make_trace(uint64_t seed, Hyperoffload__Trace **ret_msg)
{
    plan_gen_random_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.seed = seed;
    cfg.n_ops = 120;
    cfg.n_storages = 40;
    cfg.max_refs_per_op = 4;
    cfg.min_bytes = MiB;
    cfg.max_bytes = 4 * MiB;
    cfg.p_initial_device = 0.2;
    cfg.p_initial_host = 0.2;
    cfg.p_retained = 0.2;
    cfg.p_pinned = 0.05;
    plan_trace *t = NULL;
    char err[256];
    ck_assert_msg(plan_gen_random(&cfg, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(plan_trace_finish(t, err, sizeof(err)), 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(plan_trace_to_pb(t, &buf, &len), 0);
    *ret_msg = hyperoffload__trace__unpack(NULL, len, buf);
    ck_assert_ptr_nonnull(*ret_msg);
    free(buf);
    return t;
}

static int plan_call_bound(int fd, Hyperoffload__Trace *trace,
                           const char *planner, uint64_t budget,
                           const char *bound, Hyperoffload__Envelope **ret)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__PlanRequest pr = HYPEROFFLOAD__PLAN_REQUEST__INIT;
    pr.trace = trace;
    pr.planner = (char *)(planner ? planner : "");
    pr.budget = budget;
    pr.bound = (char *)(bound ? bound : "");
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST;
    env.plan_request = &pr;
    return rc_call(fd, &env, ret, NULL);
}

static int plan_call(int fd, Hyperoffload__Trace *trace, const char *planner,
                     uint64_t budget, Hyperoffload__Envelope **ret)
{
    return plan_call_bound(fd, trace, planner, budget, NULL, ret);
}

static int open_registered(uint64_t budget)
{
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_register(fd, "", budget ? 0 : -1, budget, &r, NULL),
                     0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY);
    ho_frame_envelope_free(r);
    return fd;
}

/* The reply's schedule is the one plan_make gives locally. */
static void assert_same_schedule(const Hyperoffload__PlanReply *pr,
                                 const plan_schedule *local)
{
    const Hyperoffload__Schedule *s = pr->schedule;
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->n_actions, local->n_actions);
    for (size_t i = 0; i < s->n_actions; i++) {
        ck_assert_uint_eq(s->actions[i]->op, local->actions[i].op);
        ck_assert_uint_eq(s->actions[i]->storage,
                          local->actions[i].storage_id);
        ck_assert_int_eq((int)s->actions[i]->kind, local->actions[i].kind);
        ck_assert_int_eq((int)s->actions[i]->when, local->actions[i].when);
    }
    ck_assert(s->has_predicted);
    ck_assert_uint_eq(s->predicted->peak_device_bytes,
                      local->predicted.peak_device_bytes);
    ck_assert_uint_eq(s->budget_bytes, local->budget_bytes);
}

START_TEST(plan_matches_local_planner_and_is_cached)
{
    Hyperoffload__Trace *msg = NULL;
    plan_trace *t = make_trace(7, &msg);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    int fd = open_registered(512 * MiB);

    /* budget 0: the session's grant, far above the peak. */
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(plan_call(fd, msg, NULL, 0, &r), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY,
                  "%s", rc_error_message(r));
    ck_assert(!r->plan_reply->cached);
    ck_assert_uint_eq(r->plan_reply->trace_hash, plan_trace_hash(t));
    ck_assert_uint_eq(r->plan_reply->no_offload_peak, sm.no_offload_peak);
    ck_assert_str_eq(r->plan_reply->schedule->planner, "hoplan");
    plan_schedule *local = NULL;
    plan_result res;
    ck_assert_int_eq(plan_make(t, 512 * MiB, NULL, &local, &res), 0);
    assert_same_schedule(r->plan_reply, local);
    plan_schedule_free(local);
    ho_frame_envelope_free(r);

    /* A budget below the no-offload peak, twice: computed, then cached. */
    uint64_t budget = sm.no_offload_peak * 8 / 10;
    plan_options opt = {.planner = "hoplan"};
    int lrc = plan_make(t, budget, &opt, &local, &res);
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(plan_call(fd, msg, "hoplan", budget, &r), 0);
        if (lrc == 0) {
            ck_assert_msg(r->body_case ==
                              HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY,
                          "%s", rc_error_message(r));
            ck_assert(r->plan_reply->cached == (round == 1));
            ck_assert_uint_le(r->plan_reply->schedule->predicted
                                  ->peak_device_bytes, budget);
            assert_same_schedule(r->plan_reply, local);
        } else {
            ck_assert_int_eq(rc_error_code(r), lrc);
        }
        ho_frame_envelope_free(r);
    }
    plan_schedule_free(local);

    /* A baseline by name. */
    ck_assert_int_eq(plan_call(fd, msg, "none", sm.no_offload_peak, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY);
    ck_assert_str_eq(r->plan_reply->schedule->planner, "none");
    ho_frame_envelope_free(r);
    close(fd);
    plan_trace_free(t);
    hyperoffload__trace__free_unpacked(msg, NULL);
}
END_TEST

START_TEST(infeasible_budget_names_the_smallest)
{
    Hyperoffload__Trace *msg = NULL;
    plan_trace *t = make_trace(11, &msg);
    int fd = open_registered(64 * MiB);
    plan_schedule *local = NULL;
    plan_result res;
    ck_assert_int_eq(plan_make(t, 4096, NULL, &local, &res), HO_E_INFEASIBLE);
    char want[128];
    snprintf(want, sizeof(want), "smallest feasible budget is %llu bytes",
             (unsigned long long)res.min_budget);
    for (int round = 0; round < 2; round++) {
        Hyperoffload__Envelope *r = NULL;
        ck_assert_int_eq(plan_call(fd, msg, "hoplan", 4096, &r), 0);
        ck_assert_int_eq(rc_error_code(r), HO_E_INFEASIBLE);
        ck_assert_msg(strstr(rc_error_message(r), want), "'%s' lacks '%s'",
                      rc_error_message(r), want);
        ho_frame_envelope_free(r);
    }
    close(fd);
    plan_trace_free(t);
    hyperoffload__trace__free_unpacked(msg, NULL);
}
END_TEST

/* PlanRequest.bound: off gives no bound; fast and full give the one the
 * library computes for the same trace and budget (closed form part equal,
 * the LP part within its time limit no higher than an unlimited run),
 * never above the plan's exposure; the mode is part of the cache key; the
 * reply carries min_budget and device_floor as the planner gave them. */
START_TEST(plan_with_bound)
{
    Hyperoffload__Trace *msg = NULL;
    plan_trace *t = make_trace(5, &msg);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    uint64_t budget = sm.no_offload_peak * 8 / 10;
    plan_schedule *local = NULL;
    plan_result res;
    int lrc = plan_make(t, budget, NULL, &local, &res);
    if (lrc == HO_E_INFEASIBLE && res.min_budget) {
        budget = res.min_budget;
        lrc = plan_make(t, budget, NULL, &local, &res);
    }
    ck_assert_msg(lrc == 0, "the test needs a feasible budget: %s",
                  res.message);
    int fd = open_registered(512 * MiB);
    Hyperoffload__Envelope *r = NULL;
    const char *modes[4] = {"", "fast", "full", "fast"};
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(plan_call_bound(fd, msg, "hoplan", budget, modes[k],
                                         &r), 0);
        ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY,
                      "%s", rc_error_message(r));
        const Hyperoffload__PlanReply *pr = r->plan_reply;
        /* fast again: from the cache; full was not answered by fast's */
        ck_assert(pr->cached == (k == 3));
        assert_same_schedule(pr, local);
        ck_assert_uint_eq(pr->min_budget, res.min_budget);
        ck_assert_uint_eq(pr->device_floor, res.device_floor);
        if (k == 0) {
            ck_assert_ptr_null(pr->bound);
            ho_frame_envelope_free(r);
            continue;
        }
        ck_assert_ptr_nonnull(pr->bound);
        const Hyperoffload__PlanBound *b = pr->bound;
        ck_assert_str_eq(b->mode, modes[k]);
        ck_assert(!b->infeasible);
        plan_bound_options o = {k == 2 ? PLAN_BOUND_FULL : PLAN_BOUND_FAST,
                                60000, 0, 0, 0, 0};
        plan_bound_result lb;
        char err[256];
        ck_assert_int_eq(plan_exposure_bound(t, budget, NULL, &o, &lb, err,
                                             sizeof(err)), 0);
        ck_assert_double_eq_tol(b->closed_form_us, lb.closed_form_us,
                                1e-9 * (1 + lb.closed_form_us));
        ck_assert(b->exposed_lower_bound_us <=
                  lb.bound_us + 1e-9 * (1 + lb.bound_us));
        ck_assert(b->exposed_lower_bound_us >= b->closed_form_us);
        ck_assert(b->exposed_lower_bound_us <=
                  local->predicted.exposed_us * (1 + 1e-9) + 1e-9);
        ck_assert_uint_eq(b->time_limit_ms, k == 2 ? 20000 : 300);
        ck_assert(b->source && b->source[0]);
        ck_assert(strcmp(b->lp_status, "not run") == 0 ||
                  b->checkpoints > 0);
        ck_assert(b->bound_ms >= 0);
        ho_frame_envelope_free(r);
    }
    /* An unknown mode is refused before planning. */
    ck_assert_int_eq(plan_call_bound(fd, msg, "hoplan", budget, "exact", &r),
                     0);
    ck_assert_int_eq(rc_error_code(r), -EINVAL);
    ck_assert_msg(strstr(rc_error_message(r), "bound 'exact' is unknown"),
                  "%s", rc_error_message(r));
    ho_frame_envelope_free(r);
    plan_schedule_free(local);
    close(fd);
    plan_trace_free(t);
    hyperoffload__trace__free_unpacked(msg, NULL);
}
END_TEST

START_TEST(bad_requests)
{
    Hyperoffload__Trace *msg = NULL;
    plan_trace *t = make_trace(3, &msg);
    Hyperoffload__Envelope *r = NULL;

    /* No grant and budget 0. */
    int fd = open_registered(0);
    ck_assert_int_eq(plan_call(fd, msg, NULL, 0, &r), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_BUDGET);
    ck_assert_ptr_nonnull(strstr(rc_error_message(r), "has none"));
    ho_frame_envelope_free(r);
    /* Unknown planner. */
    ck_assert_int_eq(plan_call(fd, msg, "magic", MiB, &r), 0);
    ck_assert_int_eq(rc_error_code(r), -EINVAL);
    ck_assert_ptr_nonnull(strstr(rc_error_message(r), "'magic'"));
    ho_frame_envelope_free(r);
    /* No trace at all. */
    ck_assert_int_eq(plan_call(fd, NULL, NULL, MiB, &r), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_BAD_TRACE);
    ho_frame_envelope_free(r);
    /* An op that reads a storage id the trace does not have. */
    uint64_t saved = msg->ops[0]->n_reads ? msg->ops[0]->reads[0] : 0;
    uint64_t bogus = 999999;
    uint64_t *old_reads = msg->ops[0]->reads;
    size_t old_n = msg->ops[0]->n_reads;
    msg->ops[0]->reads = &bogus;
    msg->ops[0]->n_reads = 1;
    ck_assert_int_eq(plan_call(fd, msg, NULL, MiB, &r), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_BAD_TRACE);
    ck_assert_msg(strstr(rc_error_message(r), "999999"), "%s",
                  rc_error_message(r));
    ho_frame_envelope_free(r);
    msg->ops[0]->reads = old_reads;
    msg->ops[0]->n_reads = old_n;
    (void)saved;
    /* The connection is still fine. */
    ck_assert_int_eq(rc_stats(fd, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY);
    ho_frame_envelope_free(r);
    close(fd);
    plan_trace_free(t);
    hyperoffload__trace__free_unpacked(msg, NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_planning");
    TCase *t = tcase_create("planning");
    tcase_add_checked_fixture(t, start, stop);
    tcase_set_timeout(t, ho_harness_under_valgrind() ? 900 : 120);
    tcase_add_test(t, plan_matches_local_planner_and_is_cached);
    tcase_add_test(t, infeasible_budget_names_the_smallest);
    tcase_add_test(t, bad_requests);
    tcase_add_test(t, plan_with_bound);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
