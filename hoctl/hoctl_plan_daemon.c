/*
 * hoctl/hoctl_plan_daemon.c - `hoctl plan --daemon` (hoctl_plan_daemon.h).
 */
#include "hoctl/hoctl_plan_daemon.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hoctl/hoctl_daemon.h"
#include "hoctl/output.h"
#include "hyperoffload/errors.h"
#include "planner/io/plan_io.h"
#include "proto/frame.h"
#include "proto/plan.pb-c.h"

/* The daemon's PlanBound as the library's result (static strings for the
 * enums; the note copied). */
static void bound_from_pb(const Hyperoffload__PlanBound *pb,
                          plan_bound_result *b)
{
    memset(b, 0, sizeof(*b));
    b->mode = PLAN_BOUND_OFF;
    b->source = "none";
    if (!pb || plan_bound_mode_parse(pb->mode, &b->mode) < 0)
        return;
    static const char *const sources[] = {"closed form", "lp", "lp (limit)",
                                          "memory floor", "none"};
    for (size_t i = 0; i < sizeof(sources) / sizeof(*sources); i++)
        if (pb->source && strcmp(pb->source, sources[i]) == 0)
            b->source = sources[i];
    for (int s = PLAN_BOUND_LP_NOT_RUN; s <= PLAN_BOUND_LP_FAILED; s++)
        if (pb->lp_status &&
            strcmp(pb->lp_status,
                   plan_bound_lp_status_name((plan_bound_lp_status)s)) == 0)
            b->lp_status = (plan_bound_lp_status)s;
    b->bound_us = pb->exposed_lower_bound_us;
    b->closed_form_us = pb->closed_form_us;
    b->lp_us = pb->lp_us;
    b->time_limit_ms = pb->time_limit_ms;
    b->checkpoints = pb->checkpoints;
    b->ops_per_segment = pb->ops_per_segment;
    b->total_ms = pb->bound_ms;
    b->infeasible = pb->infeasible;
    b->floor_bytes = pb->floor_bytes;
    snprintf(b->note, sizeof(b->note), "%s", pb->note ? pb->note : "");
}

/* The reply's schedule, re-packed and read by the planner's own reader,
 * bound to t.  0 or the exit code. */
static int schedule_from_reply(const Hyperoffload__Schedule *m,
                               const plan_trace *t, plan_schedule **ret)
{
    char err[256] = "";
    size_t len = hyperoffload__schedule__get_packed_size(m);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        fputs("hoctl: out of memory\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    hyperoffload__schedule__pack(m, buf);
    int r = plan_schedule_from_pb(buf, len, ret, err, sizeof(err));
    free(buf);
    if (r == 0)
        r = plan_schedule_bind(*ret, t, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "hoctl: the daemon's schedule does not fit the "
                "trace: %s\n", err[0] ? err : ho_strerror(r));
        *ret = plan_schedule_free(*ret);
        return HOCTL_EXIT_FAILED;
    }
    return 0;
}

int hoctl_plan_daemon(const hoctl_globals *g, const plan_trace *t,
                      uint64_t budget, const char *planner,
                      plan_bound_mode bound, plan_schedule **ret_s,
                      plan_result *res, plan_bound_result *b,
                      bool *ret_cached)
{
    ho_client *c = NULL;
    Hyperoffload__Envelope *reply = NULL;
    Hyperoffload__Trace *m = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = hoctl_open_client(g, &c);
    if (rc)
        return rc;
    if ((rc = ho_register(c, "", -1, 0)) < 0) {
        char msg[256];
        ho_last_error(c, msg, sizeof(msg));
        fprintf(stderr, "hoctl: registering a session: %s\n",
                msg[0] ? msg : ho_strerror(rc));
        hoctl_note_cause(rc);
        rc = HOCTL_EXIT_FAILED;
        goto out;
    }
    if (plan_trace_to_pb(t, &buf, &len) < 0 ||
        !(m = hyperoffload__trace__unpack(NULL, len, buf))) {
        fputs("hoctl: cannot encode the trace\n", stderr);
        rc = HOCTL_EXIT_FAILED;
        goto out;
    }
    Hyperoffload__PlanRequest req = HYPEROFFLOAD__PLAN_REQUEST__INIT;
    req.trace = m;
    req.planner = (char *)planner;
    req.budget = budget;
    req.bound = (char *)plan_bound_mode_name(bound);
    HOC_ENVELOPE(env, PLAN_REQUEST, plan_request, &req);
    if ((rc = hoctl_request(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY,
                            &reply)) != 0)
        goto out;
    const Hyperoffload__PlanReply *pr = reply->plan_reply;
    if (!pr || !pr->schedule) {
        fputs("hoctl: the daemon's plan reply has no schedule\n", stderr);
        rc = HOCTL_EXIT_FAILED;
        goto out;
    }
    if ((rc = schedule_from_reply(pr->schedule, t, ret_s)) != 0)
        goto out;
    memset(res, 0, sizeof(*res));
    res->no_offload_peak = pr->no_offload_peak;
    res->min_budget = pr->min_budget;
    res->device_floor = pr->device_floor;
    res->planning_ms = pr->planning_ms;
    plan_trace_summary sm;
    if (plan_trace_summarize(t, &sm) == 0)
        res->working_set_bound = sm.max_op_working_set;
    bound_from_pb(pr->bound, b);
    *ret_cached = pr->cached;
out:
    if (m)
        hyperoffload__trace__free_unpacked(m, NULL);
    free(buf);
    ho_frame_envelope_free(reply);
    ho_close(c);
    return rc;
}
