/*
 * daemon/planning.c - PlanRequest, the plan cache and the plan queue (see
 * planning.h).
 *
 * Ownership: a plan job owns its trace and, after the worker, the packed
 * schedule; the cache takes the packed schedule when it stores the result.
 */
#include "daemon/planning.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/connection.h"
#include "daemon/list.h"
#include "daemon/log.h"
#include "daemon/mover.h"
#include "daemon/sessions.h"
#include "planner/io/plan_io.h"
#include "proto/errfmt.h"
#include "planner/plan.h"
#include "planner/bound/bound.h"
#include "proto/plan.pb-c.h"

typedef struct plan_entry {
    uint64_t hash, budget;
    char planner[SRV_PLANNER_NAME_MAX];
    uint8_t bound_mode;          /* plan_bound_mode: part of the key */
    int rc;                      /* 0 or HO_E_INFEASIBLE */
    uint8_t *sched;              /* packed hyperoffload.Schedule, owned */
    size_t sched_len;
    double planning_ms;
    uint64_t no_offload_peak, min_budget, device_floor;
    plan_bound_result bound;     /* when bound_mode is not off */
    char message[512];
    struct plan_entry *prev, *next;  /* LRU: head is the most recent */
} plan_entry;

typedef struct plan_job {
    uv_work_t req;
    struct srv_planning *p;
    uint64_t conn_id, session_id, request_id;
    plan_trace *trace;           /* owned */
    plan_entry result;           /* filled by the worker */
    struct plan_job *next;       /* queue */
} plan_job;

struct srv_planning {
    srv_daemon *d;
    srv_plan_answered_fn *answered;
    plan_entry *head, *tail;
    uint32_t n, max;
    uint64_t bytes;
    srv_idmap inflight;          /* session id -> (void *)count */
    plan_job *q_head, *q_tail;   /* waiting for a worker */
    uint32_t queued, running;
};

/* Accepts NULL; returns NULL. */
static plan_entry *entry_free(plan_entry *e)
{
    if (!e)
        return NULL;
    free(e->sched);
    free(e);
    return NULL;
}

static void cache_unlink(srv_planning *p, plan_entry *e)
{
    SRV_LRU_UNLINK(p->head, p->tail, e);
    p->n--;
    p->bytes -= e->sched_len;
}

static void cache_push(srv_planning *p, plan_entry *e)
{
    SRV_LRU_PUSH(p->head, p->tail, e);
    p->n++;
    p->bytes += e->sched_len;
}

static void cache_trim(srv_planning *p)
{
    while (p->tail && (p->n > p->max ||
                       p->bytes > p->d->cfg.plan_cache_bytes)) {
        plan_entry *e = p->tail;
        cache_unlink(p, e);
        entry_free(e);
        p->d->counters.plan_cache_evictions++;
    }
}

static plan_entry *cache_find(srv_planning *p, uint64_t hash, uint64_t budget,
                              const char *planner, uint8_t bound_mode)
{
    for (plan_entry *e = p->head; e; e = e->next)
        if (e->hash == hash && e->budget == budget &&
            e->bound_mode == bound_mode &&
            strcmp(e->planner, planner) == 0) {
            cache_unlink(p, e);
            cache_push(p, e);
            return e;
        }
    return NULL;
}

int srv_planning_new(srv_daemon *d, srv_plan_answered_fn *answered,
                     srv_planning **ret_p, char *err, size_t errlen)
{
    srv_planning *p = calloc(1, sizeof(*p));
    if (!p)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    p->d = d;
    p->answered = answered;
    p->max = d->cfg.plan_cache;
    srv_idmap_init(&p->inflight);
    *ret_p = p;
    return 0;
}

srv_planning *srv_planning_free(srv_planning *p)
{
    if (!p)
        return NULL;
    while (p->head) {
        plan_entry *e = p->head;
        cache_unlink(p, e);
        entry_free(e);
    }
    while (p->q_head) {
        plan_job *j = p->q_head;
        p->q_head = j->next;
        plan_trace_free(j->trace);
        free(j);
    }
    srv_idmap_done(&p->inflight);
    free(p);
    return NULL;
}

uint64_t srv_planning_cache_bytes(const srv_planning *p)
{
    return p ? p->bytes : 0;
}

void srv_planning_configure(srv_planning *p, uint32_t cache_entries)
{
    p->max = cache_entries;
    cache_trim(p);
}

static void reply(srv_conn *c, uint64_t rid, const plan_entry *e,
                  bool cached, uint64_t hash)
{
    c->d->counters.plan_cache_hits += cached;
    if (e->rc < 0) {
        srv_reply_error(c, rid, e->rc, "%s", e->message);
        return;
    }
    Hyperoffload__Schedule *s =
        hyperoffload__schedule__unpack(NULL, e->sched_len, e->sched);
    if (!s) {
        srv_reply_error(c, rid, HO_E_INTERNAL,
                        "the planned schedule does not decode (bug)");
        return;
    }
    Hyperoffload__PlanReply pr = HYPEROFFLOAD__PLAN_REPLY__INIT;
    pr.schedule = s;
    pr.planning_ms = e->planning_ms;
    pr.cached = cached;
    pr.trace_hash = hash;
    pr.no_offload_peak = e->no_offload_peak;
    pr.min_budget = e->min_budget;
    pr.device_floor = e->device_floor;
    Hyperoffload__PlanBound pb = HYPEROFFLOAD__PLAN_BOUND__INIT;
    if (e->bound_mode != PLAN_BOUND_OFF) {
        const plan_bound_result *b = &e->bound;
        pb.mode = (char *)plan_bound_mode_name(b->mode);
        pb.exposed_lower_bound_us = b->bound_us;
        pb.source = (char *)(b->source ? b->source : "");
        pb.lp_status = (char *)plan_bound_lp_status_name(b->lp_status);
        pb.time_limit_ms = b->time_limit_ms;
        pb.checkpoints = b->checkpoints;
        pb.ops_per_segment = b->ops_per_segment;
        pb.bound_ms = b->total_ms;
        pb.infeasible = b->infeasible;
        pb.floor_bytes = b->floor_bytes;
        pb.closed_form_us = b->closed_form_us;
        pb.lp_us = b->lp_us;
        pb.note = (char *)b->note;
        pr.bound = &pb;
    }
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY, &pr, NULL,
                   0);
    hyperoffload__schedule__free_unpacked(s, NULL);
}

/* A successful plan answered to session s goes to the answered hook
 * (which remembers it); the trace moves there (*trace set to NULL). */
static void remember(srv_planning *p, srv_session *s, const plan_entry *e,
                     plan_trace **trace)
{
    if (e->rc != 0 || !s || !*trace || !p->answered)
        return;
    p->answered(p->d, s, *trace, e->sched, e->sched_len, e->hash, e->budget,
                e->planner);
    *trace = NULL;
}

static void plan_work(uv_work_t *req)
{
    plan_job *j = req->data;
    plan_entry *r = &j->result;
    plan_options opt;
    memset(&opt, 0, sizeof(opt));
    opt.planner = r->planner;
    plan_result res;
    memset(&res, 0, sizeof(res));
    plan_schedule *s = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = plan_make(j->trace, r->budget, &opt, &s, &res);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->planning_ms = res.planning_ms > 0
                         ? res.planning_ms
                         : (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                               (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    r->no_offload_peak = res.no_offload_peak;
    r->min_budget = res.min_budget;
    r->device_floor = res.device_floor;
    if (rc == 0 && r->bound_mode != PLAN_BOUND_OFF) {
        /* The bound is deterministic under its iteration limit only; its
         * time limit makes it load-dependent at worst weaker, never
         * unsound (docs/bound.md), so caching it is safe. */
        plan_bound_options bo;
        memset(&bo, 0, sizeof(bo));
        bo.mode = (plan_bound_mode)r->bound_mode;
        char why[160] = "";
        int brc = plan_exposure_bound(j->trace, r->budget, NULL, &bo,
                                      &r->bound, why, sizeof(why));
        plan_bound_thread_done(); /* the solver's per-thread state */
        if (brc < 0) {
            memset(&r->bound, 0, sizeof(r->bound));
            r->bound.mode = bo.mode;
            r->bound.source = "none";
            snprintf(r->bound.note, sizeof(r->bound.note),
                     "the bound failed: %.120s", why[0] ? why
                                                       : ho_strerror(brc));
        }
    }
    if (rc == HO_E_INFEASIBLE) {
        r->rc = rc;
        snprintf(r->message, sizeof(r->message),
                 "budget of %" PRIu64
                 " bytes is infeasible for %s: %.300s; the "
                 "smallest feasible budget is %" PRIu64 " bytes",
                 r->budget, r->planner,
                 res.message[0] ? res.message : "over budget", res.min_budget);
    } else if (rc < 0) {
        r->rc = rc;
        snprintf(r->message, sizeof(r->message),
                 "planning with %s failed: %.300s", r->planner,
                 res.message[0] ? res.message : ho_strerror(rc));
    } else {
        rc = plan_schedule_to_pb(s, &r->sched, &r->sched_len);
        if (rc < 0) {
            r->rc = rc;
            snprintf(r->message, sizeof(r->message),
                     "cannot encode the schedule: %s", ho_strerror(rc));
        }
    }
    plan_schedule_free(s);
}

static void inflight_add(srv_planning *p, uint64_t sid, int delta)
{
    uintptr_t n = (uintptr_t)srv_idmap_get(&p->inflight, sid);
    n = (uintptr_t)((intptr_t)n + delta);
    if (n == 0)
        srv_idmap_del(&p->inflight, sid);
    else
        srv_idmap_put(&p->inflight, sid, (void *)n);
}

static srv_conn *job_conn(plan_job *j)
{
    srv_conn *c = srv_conn_find(j->p->d, j->conn_id);
    if (c && c->state == SRV_CONN_READY && c->session &&
        c->session->id == j->session_id)
        return c;
    return NULL;
}

static void job_drop(plan_job *j)
{
    inflight_add(j->p, j->session_id, -1);
    free(j->result.sched);
    plan_trace_free(j->trace);
    free(j);
}

static void plan_after(uv_work_t *req, int status);

/* Start queued plans while workers are free. */
static void pump(srv_planning *p)
{
    srv_daemon *d = p->d;
    while (p->q_head && p->running < SRV_PLAN_RUNNING) {
        plan_job *j = p->q_head;
        p->q_head = j->next;
        if (!p->q_head)
            p->q_tail = NULL;
        p->queued--;
        srv_conn *c = job_conn(j);
        if (!c) {
            job_drop(j);
            continue;
        }
        /* An identical plan may have finished while this one waited. */
        plan_entry *hit = cache_find(p, j->result.hash, j->result.budget,
                                     j->result.planner, j->result.bound_mode);
        if (hit) {
            reply(c, j->request_id, hit, true, j->result.hash);
            remember(p, c->session, hit, &j->trace);
            job_drop(j);
            continue;
        }
        j->req.data = j;
        int rc = uv_queue_work(&d->loop, &j->req, plan_work, plan_after);
        if (rc < 0) {
            srv_reply_error(c, j->request_id, HO_E_INTERNAL,
                            "cannot queue the plan: %s", uv_strerror(rc));
            job_drop(j);
            continue;
        }
        p->running++;
        srv_work_begin(d);
    }
}

static void plan_after(uv_work_t *req, int status)
{
    plan_job *j = req->data;
    srv_planning *p = j->p;
    srv_daemon *d = p->d;
    plan_entry *r = &j->result;
    if (status < 0 && r->rc == 0)
        r->rc = status;
    p->running--;
    (*(r->rc == 0 ? &d->counters.plans_ok : &d->counters.plans_failed))++;
    srv_conn *c = job_conn(j);
    if (c) {
        reply(c, j->request_id, r, false, r->hash);
        remember(p, c->session, r, &j->trace);
    }
    srv_debug("plan for session %" PRIu64 " with %s: %s, %.1f ms",
              j->session_id, r->planner, r->rc ? ho_err_name(r->rc) : "ok",
              r->planning_ms);
    /* Cache deterministic outcomes only. */
    if ((r->rc == 0 || r->rc == HO_E_INFEASIBLE) && p->max > 0 &&
        r->sched_len <= d->cfg.plan_cache_bytes) {
        plan_entry *e = malloc(sizeof(*e));
        if (e) {
            *e = *r;
            r->sched = NULL;
            cache_push(p, e);
            cache_trim(p);
        }
    }
    job_drop(j);
    if (!d->draining)
        pump(p);
    srv_work_end(d);
}

void srv_planning_drain(srv_planning *p)
{
    while (p->q_head) {
        plan_job *j = p->q_head;
        p->q_head = j->next;
        p->queued--;
        srv_conn *c = job_conn(j);
        if (c)
            srv_reply_error(c, j->request_id, HO_E_SHUTTING_DOWN,
                            "the daemon is shutting down; the plan was not "
                            "started");
        job_drop(j);
    }
    p->q_tail = NULL;
}

/* The checks of a PlanRequest before its trace is read: a known planner,
 * a budget (the session's grant by default), a trace, room in the
 * session's in-flight count.  *ret_planner and *ret_budget are the
 * resolved ones. */
static int check_plan_request(srv_planning *p, srv_session *s,
                              const Hyperoffload__PlanRequest *req,
                              const char **ret_planner, uint64_t *ret_budget,
                              uint8_t *ret_bound, char *err, size_t errlen)
{
    plan_bound_mode bound = PLAN_BOUND_OFF;
    if (req->bound && *req->bound &&
        plan_bound_mode_parse(req->bound, &bound) < 0)
        return ho_errf(err, errlen, -EINVAL, "bound '%.40s' is unknown "
                       "(off, fast, full)", req->bound);
    const char *planner = req->planner && *req->planner ? req->planner
                                                        : p->d->cfg.planner;
    bool known = false;
    for (int i = 0; plan_planner_names[i]; i++)
        if (strcmp(plan_planner_names[i], planner) == 0)
            known = true;
    if (!known || strlen(planner) >= sizeof(((plan_entry *)0)->planner))
        return ho_errf(err, errlen, -EINVAL, "planner '%.40s' is unknown "
                       "(hoplan, none, seed-greedy, ms-distance, "
                       "reactive-lru, oracle)", planner);
    uint64_t budget = req->budget ? req->budget : s->hbm_granted;
    if (budget == 0)
        return ho_errf(err, errlen, HO_E_BUDGET, "budget 0 means the "
                       "session's HBM grant, and session %" PRIu64 " has "
                       "none", s->id);
    if (!req->trace)
        return ho_errf(err, errlen, HO_E_BAD_TRACE,
                       "the PlanRequest has no trace");
    if ((uintptr_t)srv_idmap_get(&p->inflight, s->id) >=
        SRV_PLAN_MAX_INFLIGHT)
        return ho_errf(err, errlen, HO_E_BUSY, "session %" PRIu64 " already "
                       "has %d plans queued or running", s->id,
                       SRV_PLAN_MAX_INFLIGHT);
    *ret_planner = planner;
    *ret_budget = budget;
    *ret_bound = (uint8_t)bound;
    return 0;
}

/* Re-pack the decoded sub-message and read it with the planner's own
 * reader, which validates it; the trace is finished (owned by the
 * caller). */
static int read_trace(const Hyperoffload__Trace *pb, plan_trace **ret_t,
                      char *err, size_t errlen)
{
    char why[SRV_ERR_MAX] = "";
    size_t len = hyperoffload__trace__get_packed_size(pb);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    hyperoffload__trace__pack(pb, buf);
    plan_trace *t = NULL;
    int rc = plan_trace_from_pb(buf, len, &t, why, sizeof(why));
    free(buf);
    if (rc == 0)
        rc = plan_trace_finish(t, why, sizeof(why));
    if (rc < 0) {
        plan_trace_free(t);
        return ho_errf(err, errlen, rc == -ENOMEM ? rc : HO_E_BAD_TRACE,
                       "invalid trace: %s", why[0] ? why : ho_strerror(rc));
    }
    *ret_t = t;
    return 0;
}

void srv_plan_prepare(const Hyperoffload__PlanRequest *req,
                      srv_plan_prepared *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!req->trace) {
        ret->rc = ho_errf(ret->err, sizeof(ret->err), HO_E_BAD_TRACE,
                          "the PlanRequest has no trace");
        return;
    }
    ret->rc = read_trace(req->trace, &ret->trace, ret->err,
                         sizeof(ret->err));
    if (ret->rc == 0)
        ret->hash = plan_trace_hash(ret->trace);
}

void srv_plan_prepared_done(srv_plan_prepared *p)
{
    p->trace = plan_trace_free(p->trace);
}

/* Queue a plan of trace t (taken in every case) for the request. */
static int queue_plan(srv_planning *p, srv_conn *c, uint64_t rid,
                      plan_trace *t, uint64_t hash, uint64_t budget,
                      const char *planner, uint8_t bound_mode, char *err,
                      size_t errlen)
{
    if (p->queued >= SRV_PLAN_QUEUE) {
        plan_trace_free(t);
        return ho_errf(err, errlen, HO_E_BUSY, "%u plans are already "
                       "waiting; try again later", p->queued);
    }
    plan_job *j = calloc(1, sizeof(*j));
    if (!j) {
        plan_trace_free(t);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    j->p = p;
    j->conn_id = c->id;
    j->session_id = c->session->id;
    j->request_id = rid;
    j->trace = t;
    j->result.hash = hash;
    j->result.budget = budget;
    j->result.bound_mode = bound_mode;
    snprintf(j->result.planner, sizeof(j->result.planner), "%s", planner);
    inflight_add(p, j->session_id, +1);
    if (p->q_tail)
        p->q_tail->next = j;
    else
        p->q_head = j;
    p->q_tail = j;
    p->queued++;
    return 0;
}

void srv_handle_plan(srv_daemon *d, srv_conn *c, uint64_t rid,
                     const Hyperoffload__PlanRequest *req)
{
    srv_planning *p = d->planning;
    srv_session *s = c->session;
    char err[2 * SRV_ERR_MAX];   /* "invalid trace: " + the reader's */
    const char *planner = NULL;
    uint64_t budget = 0;
    uint8_t bound = PLAN_BOUND_OFF;
    plan_trace *t = NULL;
    srv_plan_prepared *pre = c->prepared;
    uint64_t hash = 0;
    int rc = check_plan_request(p, s, req, &planner, &budget, &bound, err,
                                sizeof(err));
    if (rc == 0 && pre) { /* read and hashed on a worker (server.c) */
        rc = pre->rc;
        if (rc < 0)
            snprintf(err, sizeof(err), "%s", pre->err);
        t = pre->trace;
        pre->trace = NULL;
        hash = pre->hash;
    } else if (rc == 0) {
        rc = read_trace(req->trace, &t, err, sizeof(err));
        if (rc == 0)
            hash = plan_trace_hash(t);
    }
    if (rc < 0) {
        plan_trace_free(t);
        srv_reply_error(c, rid, rc, "%s", err);
        return;
    }
    plan_entry *hit = cache_find(p, hash, budget, planner, bound);
    if (hit) {
        reply(c, rid, hit, true, hash);
        remember(p, s, hit, &t);
        plan_trace_free(t);
        return;
    }
    rc = queue_plan(p, c, rid, t, hash, budget, planner, bound, err,
                    sizeof(err));
    d->counters.plan_cache_misses += rc == 0;
    if (rc < 0) {
        srv_reply_error(c, rid, rc, "%s", err);
        return;
    }
    pump(p);
}
