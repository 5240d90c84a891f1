/*
 * client/runtime/runtime_plan.c - plans (ho_plan_*): ask the daemon to plan a
 * trace (PlanRequest), or load a schedule file; save a schedule as JSON.
 *
 * A plan owns its schedule, bound to the trace it was made for (action
 * storage indices resolved, actions sorted by point).  Nothing here trusts
 * the schedule: ho_replay_new simulates it before use.
 */
#include "client/runtime/runtime_internal.h"
#include "planner/io/plan_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/plan.pb-c.h"

static void info_from_schedule(ho_plan *p)
{
    const plan_schedule *s = p->s;
    ho_plan_info *i = &p->info;
    snprintf(i->planner, sizeof(i->planner), "%s", s->planner);
    i->budget_bytes = s->budget_bytes;
    i->peak_device_bytes = s->predicted.peak_device_bytes;
    i->peak_host_bytes = s->predicted.peak_host_bytes;
    i->compute_us = s->predicted.compute_us;
    i->step_time_us = s->predicted.step_time_us;
    i->exposed_us = s->predicted.exposed_us;
    i->h2d_bytes = s->predicted.h2d_bytes;
    i->d2h_bytes = s->predicted.d2h_bytes;
    i->actions = s->n_actions;
}

/* Bind s to t; HO_E_BAD_SCHEDULE with the reason recorded. */
static int bind(ho_client *c, plan_schedule *s, const ho_trace *t,
                const char *what)
{
    char err[HOR_DETAIL_LEN] = "";
    int rc = plan_schedule_bind(s, t->pt, err, sizeof(err));
    if (rc < 0)
        return hor_fail(c, rc, "%s does not fit trace '%s': %s", what,
                        t->pt->name, err[0] ? err : ho_strerror(rc));
    return 0;
}

static int plan_from_reply(ho_client *c, const ho_trace *t,
                           const Hyperoffload__PlanReply *pr, ho_plan **ret);

HO_EXPORT int ho_plan_request(ho_client *c, const ho_trace *t,
                              uint64_t budget, const char *planner,
                              ho_plan **ret)
{
    Hyperoffload__PlanRequest req = HYPEROFFLOAD__PLAN_REQUEST__INIT;
    Hyperoffload__Envelope *reply = NULL;
    Hyperoffload__Trace *m = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    ho_plan *p = NULL;
    int rc;

    if (!c || !t || !ret)
        return -EINVAL;
    if (planner && strlen(planner) >= sizeof(p->info.planner))
        return hor_fail(c, -EINVAL, "planner name '%.40s' is too long",
                        planner);
    rc = hor_trace_finish(t);
    if (rc < 0)
        return hor_fail(c, rc, "%s", ho_runtime_last_error());
    rc = plan_trace_to_pb(t->pt, &buf, &len);
    if (rc < 0)
        return hor_fail(c, rc, "cannot encode trace '%s': %s", t->pt->name,
                        ho_strerror(rc));
    m = hyperoffload__trace__unpack(NULL, len, buf);
    free(buf);
    if (!m)
        return hor_fail(c, -ENOMEM, "cannot re-decode trace '%s'",
                        t->pt->name);

    req.trace = m;
    req.planner = (char *)(planner ? planner : "");
    req.budget = budget;
    HOC_ENVELOPE(env, PLAN_REQUEST, plan_request, &req);
    rc = hoc_call_expect(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY,
                         &reply, NULL);
    hyperoffload__trace__free_unpacked(m, NULL);
    if (rc < 0) {
        char why[HOC_ERRLEN];
        return hor_fail(NULL, rc, "%s", ho_last_error(c, why, sizeof(why)));
    }
    rc = plan_from_reply(c, t, reply->plan_reply, ret);
    ho_frame_envelope_free(reply);
    return rc;
}

int hor_plan_fetch(ho_client *c, const ho_trace *t, uint64_t *io_epoch,
                   ho_plan **ret, uint64_t *ret_ddr_limit)
{
    uint64_t epoch = *io_epoch;
    Hyperoffload__PlanFetchRequest req = HYPEROFFLOAD__PLAN_FETCH_REQUEST__INIT;
    Hyperoffload__Envelope *reply = NULL;
    req.epoch = epoch;
    HOC_ENVELOPE(env, PLAN_FETCH_REQUEST, plan_fetch_request, &req);
    int rc = hoc_call_expect(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY,
                             &reply, NULL);
    if (rc < 0) {
        char why[HOC_ERRLEN];
        return hor_fail(NULL, rc, "%s", ho_last_error(c, why, sizeof(why)));
    }
    const Hyperoffload__PlanReply *pr = reply->plan_reply;
    *ret_ddr_limit = pr && pr->grant ? pr->grant->ddr_limit : 0;
    if (pr && pr->grant && pr->grant->epoch)
        *io_epoch = pr->grant->epoch;
    rc = plan_from_reply(c, t, pr, ret);
    ho_frame_envelope_free(reply);
    return rc;
}

int hor_plan_switched(ho_client *c, uint64_t epoch)
{
    Hyperoffload__PlanSwitched req = HYPEROFFLOAD__PLAN_SWITCHED__INIT;
    Hyperoffload__Envelope *reply = NULL;
    req.epoch = epoch;
    HOC_ENVELOPE(env, PLAN_SWITCHED, plan_switched, &req);
    int rc = hoc_call_expect(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_OK, &reply,
                             NULL);
    ho_frame_envelope_free(reply);
    return rc;
}

/* The plan of a PlanReply, bound to t (*ret a new plan). */
static int plan_from_reply(ho_client *c, const ho_trace *t,
                           const Hyperoffload__PlanReply *pr, ho_plan **ret)
{
    char err[HOR_DETAIL_LEN] = "";
    uint8_t *buf = NULL;
    size_t len = 0;
    ho_plan *p = NULL;
    int rc;
    if (!pr || !pr->schedule)
        return hor_fail(c, HO_E_PROTOCOL, "plan reply without a schedule");
    p = calloc(1, sizeof(*p));
    if (!p) {
        rc = -ENOMEM;
        goto out;
    }
    len = hyperoffload__schedule__get_packed_size(pr->schedule);
    buf = malloc(len ? len : 1);
    if (!buf) {
        rc = -ENOMEM;
        goto out;
    }
    hyperoffload__schedule__pack(pr->schedule, buf);
    rc = plan_schedule_from_pb(buf, len, &p->s, err, sizeof(err));
    free(buf);
    if (rc < 0) {
        rc = hor_fail(c, HO_E_PROTOCOL, "the daemon's schedule does not "
                      "decode: %s", err);
        goto out;
    }
    rc = bind(c, p->s, t, "the daemon's schedule");
    if (rc < 0) {
        rc = HO_E_PROTOCOL;
        goto out;
    }
    p->trace_hash = plan_trace_hash(t->pt);
    p->daemon_hash = pr->trace_hash;
    info_from_schedule(p);
    p->info.no_offload_peak = pr->no_offload_peak;
    p->info.min_budget = pr->min_budget;
    p->info.planning_ms = pr->planning_ms;
    p->info.cached = pr->cached ? 1 : 0;
    *ret = p;
    p = NULL;
    rc = 0;
out:
    ho_plan_free(p);
    return rc;
}

HO_EXPORT int ho_plan_load(const ho_trace *t, const char *schedule_path,
                           ho_plan **ret)
{
    char err[HOR_DETAIL_LEN] = "";
    ho_plan *p = NULL;
    int rc;

    if (!t || !schedule_path || !ret)
        return -EINVAL;
    rc = hor_trace_finish(t);
    if (rc < 0)
        return rc;
    p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    rc = plan_schedule_read_file(schedule_path, &p->s, err, sizeof(err));
    if (rc < 0) {
        hor_fail(NULL, rc, "%s: %s", schedule_path,
                 err[0] ? err : ho_strerror(rc));
        goto fail;
    }
    rc = bind(NULL, p->s, t, schedule_path);
    if (rc < 0)
        goto fail;
    if (!p->s->has_predicted) {
        /* Fill the figures from the model; a violation is reported by
         * ho_replay_new, not here. */
        plan_violation v;
        plan_simulate(t->pt, p->s, &p->s->predicted, &v, NULL);
    }
    plan_trace_summary sm;
    if (plan_trace_summarize(t->pt, &sm) == 0)
        p->info.no_offload_peak = sm.no_offload_peak;
    p->trace_hash = plan_trace_hash(t->pt);
    info_from_schedule(p);
    *ret = p;
    return 0;
fail:
    ho_plan_free(p);
    return rc;
}

HO_EXPORT void ho_plan_get_info(const ho_plan *p, ho_plan_info *ret)
{
    if (!ret)
        return;
    if (!p) {
        memset(ret, 0, sizeof(*ret));
        return;
    }
    *ret = p->info;
}

static int write_schedule(FILE *f, const void *obj)
{
    return plan_schedule_write_json(obj, f);
}

HO_EXPORT int ho_plan_save(const ho_plan *p, const char *path)
{
    if (!p || !path)
        return -EINVAL;
    return hor_write_file(path, "schedule", write_schedule, p->s);
}

HO_EXPORT ho_plan *ho_plan_free(ho_plan *p)
{
    if (p) {
        plan_schedule_free(p->s);
        free(p);
    }
    return NULL;
}

HO_EXPORT int ho_set_admission_trace(ho_client *c, const ho_trace *t)
{
    if (!c)
        return -EINVAL;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (t) {
        int rc = hor_trace_finish(t);
        if (rc == 0)
            rc = plan_trace_to_pb(t->pt, &buf, &len);
        if (rc < 0)
            return hor_fail(c, rc, "cannot encode trace '%s' for admission",
                            t->pt->name);
    }
    free(c->node_admit_pb);
    c->node_admit_pb = buf;
    c->node_admit_len = len;
    return 0;
}
