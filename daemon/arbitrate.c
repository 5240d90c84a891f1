/*
 * daemon/arbitrate.c - the node workload, re-planning and what-if
 * admission (see arbitrate.h).
 *
 * Ownership: the arbiter owns one entry per registered session (the
 * session's trace as packed protobuf, its grant and target and the packed
 * schedule of the target).  A job owns copies of everything it reads on
 * the worker (traces as bytes, the node), so a session leaving while it
 * runs changes nothing there; its results are matched to sessions by id
 * on the loop.  One job runs at a time (the curve cache is not
 * thread-safe); admission queries wait in a FIFO, and a workload change
 * while a job runs only marks the workload dirty.
 */
#include "daemon/arbitrate.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/connection.h"
#include "daemon/log.h"
#include "daemon/mover.h"
#include "daemon/sessions.h"
#include "daemon/staging.h"
#include "daemon/topology.h"
#include "planner/io/plan_io.h"
#include "planner/node/node_arbiter.h"
#include "proto/errfmt.h"

/* Budget curve samples per client: fewer than the planner's default, so
 * that a re-plan of a few clients stays well under a second. */
#define SRV_ARB_POINTS 4u
/* At most this many admission queries wait (more: HO_E_BUSY). */
#define SRV_ARB_QUEUE 16u

typedef struct arb_grant {
    uint64_t budget;
    double h2d_gbps, d2h_gbps;
    uint64_t ddr_limit;
    plan_wl_predicted pred;
    uint64_t epoch;              /* 0: not granted by an arbitration */
} arb_grant;

typedef struct arb_entry {
    uint64_t session_id;
    srv_session *s;              /* borrowed; the entry goes with it */
    double weight, max_slowdown;
    bool sync;
    /* the workload part: its latest answered plan */
    uint8_t *trace_pb;           /* owned; NULL: not in the workload */
    size_t trace_len;
    uint64_t hash, budget;
    uint32_t n_ops;              /* of the trace */
    char planner[SRV_PLANNER_NAME_MAX];
    arb_grant granted, target;
    bool has_target, notified;
    /* a target that shrinks some part and grows the DDR limit: told
     * first with the DDR limit it has (target), the full one (deferred)
     * under a new epoch once no shrink waits */
    bool has_deferred;
    arb_grant deferred;
    uint8_t *sched_pb;           /* the target's schedule, owned */
    size_t sched_len;
    double compute_us;
    uint64_t switched_epoch;
    /* measured: control-region totals when the grant started */
    bool m_started;
    uint64_t m_steps0, m_ms0;
    double m_exposed0;
    struct arb_entry *prev, *next;
} arb_entry;

typedef enum arb_kind { ARB_REPLAN, ARB_ADMIT, ARB_ADMIT_REG } arb_kind;

/* One client of a job (worker inputs and outputs). */
typedef struct job_client {
    uint64_t session_id;         /* 0: the newcomer */
    char name[SRV_MAX_NAME + 1];
    uint32_t device;             /* node device index */
    uint64_t budget;
    double weight, max_slowdown;
    uint32_t sync;               /* group, PLAN_NONE */
    char job[SRV_JOB_MAX + 1];   /* its session's job, "" */
    uint8_t *trace_pb;           /* owned copy */
    size_t trace_len;
    plan_trace *t;               /* worker: parsed */
    /* outputs */
    bool before_valid;
    plan_wl_predicted before;
    plan_arb_choice out;
    double compute_us;
    uint8_t *sched_pb;           /* ARB_REPLAN: packed schedule */
    size_t sched_len;
} job_client;

typedef struct arb_job {
    uv_work_t req;
    srv_arbiter *a;
    arb_kind kind;
    uint64_t conn_id, request_id;
    uint8_t *reg_pb;             /* ARB_ADMIT_REG: the RegisterRequest */
    size_t reg_len;
    srv_arb_admitted_fn *done;
    const plan_node *node;       /* the daemon's (topology.h) */
    plan_node *planned;          /* worker: the node as arbitrated (owned) */
    uint32_t n;                  /* clients (with the newcomer last) */
    job_client *c;               /* owned */
    bool has_new;
    /* outputs */
    int rc;
    char err[SRV_ERR_MAX];
    double ms;
    plan_arb_strategy chosen;
    double wexp_before, wexp_after;
    struct arb_job *next;
} arb_job;

struct srv_arbiter {
    srv_daemon *d;
    arb_entry *head;
    plan_arb_cache *cache;       /* used by the running job only */
    bool running, dirty;
    bool too_large;              /* the last re-plan was skipped (logged) */
    uint64_t epoch;              /* arbitrations applied */
    uint64_t trace_bytes;        /* sum of the entries' trace_pb lengths,
                                    bounded by [planning] retained_total */
    arb_job *q_head, *q_tail;
    uint32_t queued;
    /* the last applied re-plan (its planned node, clients, traces and
     * schedules), exported by srv_arb_workload; NULL before the first */
    arb_job *last;
    uint64_t last_epoch;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------ entries */

static arb_entry *entry_of(srv_arbiter *a, uint64_t sid)
{
    for (arb_entry *e = a->head; e; e = e->next)
        if (e->session_id == sid)
            return e;
    return NULL;
}

static arb_entry *entry_get(srv_arbiter *a, srv_session *s)
{
    arb_entry *e = entry_of(a, s->id);
    if (e)
        return e;
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->session_id = s->id;
    e->s = s;
    e->weight = 1.0;
    e->next = a->head;
    if (a->head)
        a->head->prev = e;
    a->head = e;
    return e;
}

static void entry_free(srv_arbiter *a, arb_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        a->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    a->trace_bytes -= e->trace_pb ? e->trace_len : 0;
    free(e->trace_pb);
    free(e->sched_pb);
    free(e);
}

int srv_arb_new(srv_daemon *d, srv_arbiter **ret, char *err, size_t errlen)
{
    srv_arbiter *a = calloc(1, sizeof(*a));
    if (a)
        a->cache = plan_arb_cache_new();
    if (!a || !a->cache) {
        free(a);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    a->d = d;
    *ret = a;
    return 0;
}

static arb_job *job_free(arb_job *j)
{
    if (!j)
        return NULL;
    for (uint32_t i = 0; i < j->n; i++) {
        free(j->c[i].trace_pb);
        free(j->c[i].sched_pb);
        plan_trace_free(j->c[i].t);
    }
    free(j->c);
    free(j->reg_pb);
    plan_node_free(j->planned);
    free(j);
    return NULL;
}

srv_arbiter *srv_arb_free(srv_arbiter *a)
{
    if (!a)
        return NULL;
    while (a->head)
        entry_free(a, a->head);
    while (a->q_head) {
        arb_job *j = a->q_head;
        a->q_head = j->next;
        job_free(j);
    }
    job_free(a->last);
    plan_arb_cache_free(a->cache);
    free(a);
    return NULL;
}

/* ------------------------------------------------------------ the node */

/* The daemon's node (topology.h), borrowed by jobs: it lives until the
 * daemon is freed, after every worker job ended. */
static int get_node(srv_daemon *d, const plan_node **ret, char *err,
                    size_t errlen)
{
    const plan_node *n = d->topology ? srv_topology_node(d->topology) : NULL;
    if (!n)
        return ho_errf(err, errlen, HO_E_UNSUPPORTED, "the daemon has no "
                       "node description (no devices)");
    *ret = n;
    return 0;
}

/* ------------------------------------------------------------ jobs */

static int job_add(arb_job *j, uint64_t sid, const char *name, int32_t dev,
                   uint64_t budget, double weight, double max_slowdown,
                   const uint8_t *pb, size_t len)
{
    job_client *c = &j->c[j->n];
    memset(c, 0, sizeof(*c));
    c->session_id = sid;
    snprintf(c->name, sizeof(c->name), "%s", name && *name ? name : "client");
    c->device = (uint32_t)dev;
    c->budget = budget;
    c->weight = weight > 0 ? weight : 1.0;
    c->max_slowdown = max_slowdown;
    c->sync = PLAN_NONE;
    c->trace_pb = malloc(len ? len : 1);
    if (!c->trace_pb)
        return -ENOMEM;
    memcpy(c->trace_pb, pb, len);
    c->trace_len = len;
    j->n++;
    return 0;
}

/* Names unique per job (the judge's messages): "name#session". */
static void job_name(char *buf, size_t len, const srv_session *s)
{
    snprintf(buf, len, "%.100s#%" PRIu64, s->name[0] ? s->name : "client",
             s->id);
}

/* A job of `kind` over the current workload (and room for a newcomer). */
static int job_new(srv_arbiter *a, arb_kind kind, arb_job **ret, char *err,
                   size_t errlen)
{
    uint32_t n = 0;
    uint64_t ops = 0;
    for (arb_entry *e = a->head; e; e = e->next) {
        n += e->trace_pb != NULL;
        ops += e->trace_pb ? e->n_ops : 0;
    }
    if (ops > SRV_ARB_MAX_OPS) {
        return ho_errf(err, errlen, HO_E_TOO_LARGE, "the node workload has %u "
                "sessions with %" PRIu64 " ops in all, above the %u one "
                "arbitration plans (SRV_ARB_MAX_OPS)", n, ops,
                SRV_ARB_MAX_OPS);
    }
    arb_job *j = calloc(1, sizeof(*j));
    if (j)
        j->c = calloc(n + 1, sizeof(job_client));
    if (!j || !j->c) {
        free(j);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    j->a = a;
    j->kind = kind;
    int rc = get_node(a->d, &j->node, err, errlen);
    /* workload order: oldest session first (stable across re-plans) */
    arb_entry *last = a->head;
    while (last && last->next)
        last = last->next;
    for (arb_entry *e = last; rc == 0 && e; e = e->prev) {
        if (!e->trace_pb)
            continue;
        char nm[SRV_MAX_NAME + 1];
        job_name(nm, sizeof(nm), e->s);
        rc = job_add(j, e->session_id, nm, e->s->device, e->budget,
                     e->weight, e->max_slowdown, e->trace_pb, e->trace_len);
        if (rc == 0)
            snprintf(j->c[j->n - 1].job, sizeof(j->c[0].job), "%s",
                     e->s->job);
        if (rc == 0 && e->granted.epoch) {
            j->c[j->n - 1].before_valid = true;
            j->c[j->n - 1].before = e->granted.pred;
        }
    }
    if (rc < 0) {
        if (rc == -ENOMEM)
            ho_errf(err, errlen, rc, "out of memory");
        job_free(j);
        return rc;
    }
    /* sync groups: sessions of one job that registered as sync ranks */
    for (uint32_t i = 0; i < j->n; i++) {
        arb_entry *e = entry_of(a, j->c[i].session_id);
        if (!e || !e->sync || !e->s->job[0])
            continue;
        for (uint32_t k = 0; k < i; k++) {
            arb_entry *f = entry_of(a, j->c[k].session_id);
            if (f && f->sync && strcmp(f->s->job, e->s->job) == 0) {
                j->c[i].sync = j->c[k].sync;
                break;
            }
        }
        if (j->c[i].sync == PLAN_NONE)
            j->c[i].sync = i;
    }
    *ret = j;
    return 0;
}

/* Parse the job's traces (worker). */
static int parse_traces(arb_job *j)
{
    for (uint32_t i = 0; i < j->n; i++) {
        char why[256] = "";
        int rc = plan_trace_from_pb(j->c[i].trace_pb, j->c[i].trace_len,
                                    &j->c[i].t, why, sizeof(why));
        if (rc == 0)
            rc = plan_trace_finish(j->c[i].t, why, sizeof(why));
        if (rc < 0)
            return ho_errf(j->err, sizeof(j->err), rc, "client \"%s\": "
                           "invalid trace: %s", j->c[i].name, why);
    }
    return 0;
}

/* The node the job arbitrates on (worker): the daemon's, with each
 * device's figures no wider than the widest trace link of its clients
 * (and their latency): a client is never planned for more bandwidth than
 * its own trace's link, so a client alone gets the plan it asked for. */
static int plan_node_of(arb_job *j)
{
    const plan_node *src = j->node;
    plan_node *n = plan_node_new();
    if (!n)
        return ho_errf(j->err, sizeof(j->err), -ENOMEM, "out of memory");
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < src->n_links; i++) {
        const plan_node_link *l = &src->links[i];
        rc = plan_node_add_link(n, l->name, l->parent_name, l->h2d_gbps,
                                l->d2h_gbps, l->duplex, j->err,
                                sizeof(j->err));
    }
    for (uint32_t i = 0; rc == 0 && i < src->n_devices; i++) {
        plan_node_device dv = src->devices[i];
        double h2d = 0, d2h = 0, lat = -1;
        for (uint32_t k = 0; k < j->n; k++) {
            if (j->c[k].device != dv.id)
                continue;
            const plan_link *tl = &j->c[k].t->link;
            h2d = fmax(h2d, tl->h2d_gbps);
            d2h = fmax(d2h, tl->d2h_gbps);
            lat = fmax(lat, tl->latency_us);
        }
        if (h2d > 0 && h2d < dv.h2d_gbps)
            dv.h2d_gbps = h2d;
        if (d2h > 0 && d2h < dv.d2h_gbps)
            dv.d2h_gbps = d2h;
        if (lat >= 0)
            dv.latency_us = lat;
        rc = plan_node_add_device(n, &dv, j->err, sizeof(j->err));
    }
    n->ddr_bytes = src->ddr_bytes;
    n->has_flash = src->has_flash;
    n->flash = src->flash;
    if (rc == 0)
        rc = plan_node_finish(n, j->err, sizeof(j->err));
    if (rc < 0) {
        plan_node_free(n);
        return rc;
    }
    j->planned = n;
    return 0;
}

/* Arbitrate clients [0, n) of the job; *ret the result. */
static int arbitrate(arb_job *j, uint32_t n, plan_arb_result **ret)
{
    plan_arb_client *ac = calloc(n ? n : 1, sizeof(*ac));
    if (!ac)
        return ho_errf(j->err, sizeof(j->err), -ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        uint32_t sync = j->c[i].sync;
        ac[i] = (plan_arb_client){
            .name = j->c[i].name, .trace = j->c[i].t,
            .device = plan_node_device_index(j->planned, j->c[i].device),
            .has_budget = true, .budget_bytes = j->c[i].budget,
            .weight = j->c[i].weight, .sync = sync < n ? sync : PLAN_NONE};
    }
    plan_arb_opts o = {.cache = j->a->cache, .points = SRV_ARB_POINTS};
    int rc = plan_node_arbitrate(j->planned, ac, n, PLAN_ARB_ARBITER, &o, ret,
                                 j->err, sizeof(j->err));
    free(ac);
    return rc;
}

static void arb_work(uv_work_t *req)
{
    arb_job *j = req->data;
    double t0 = now_ms();
    j->rc = parse_traces(j);
    if (j->rc == 0)
        j->rc = plan_node_of(j);
    plan_arb_result *before = NULL, *after = NULL;
    uint32_t n_old = j->has_new ? j->n - 1 : j->n;
    if (j->rc == 0 && j->has_new && n_old > 0) {
        /* the running clients' figures now, judged the same way */
        if (arbitrate(j, n_old, &before) == 0) {
            for (uint32_t i = 0; i < n_old; i++) {
                j->c[i].before_valid = true;
                j->c[i].before = before->clients[i].predicted;
            }
            j->wexp_before = before->judged->weighted_exposed_us;
        }
        j->err[0] = 0;
    }
    if (j->rc == 0 && j->n > 0)
        j->rc = arbitrate(j, j->n, &after);
    if (j->rc == 0 && after) {
        j->chosen = after->chosen;
        j->wexp_after = after->judged->weighted_exposed_us;
        for (uint32_t i = 0; i < j->n; i++) {
            j->c[i].out = after->clients[i];
            j->c[i].out.schedule = NULL;
            j->c[i].compute_us = after->judged->clients[i].compute_us;
            if (j->kind == ARB_REPLAN) {
                int rc = plan_schedule_to_pb(after->clients[i].schedule,
                                             &j->c[i].sched_pb,
                                             &j->c[i].sched_len);
                if (rc < 0) {
                    j->rc = ho_errf(j->err, sizeof(j->err), rc, "cannot "
                                    "encode the schedule of \"%s\"",
                                    j->c[i].name);
                    break;
                }
            }
        }
    }
    plan_arb_result_free(before);
    plan_arb_result_free(after);
    j->ms = now_ms() - t0;
}

static void arb_after(uv_work_t *req, int status);

static void pump(srv_arbiter *a);

static void start(srv_arbiter *a, arb_job *j)
{
    j->req.data = j;
    int rc = uv_queue_work(&a->d->loop, &j->req, arb_work, arb_after);
    if (rc < 0) {
        srv_err("arbiter: cannot queue a job: %s", uv_strerror(rc));
        j->rc = HO_E_INTERNAL;
        snprintf(j->err, sizeof(j->err), "cannot queue the arbitration: %s",
                 uv_strerror(rc));
        arb_after(&j->req, rc);
        return;
    }
    a->running = true;
    srv_work_begin(a->d);
}

/* ------------------------------------------------------------ grants */

static bool shrinks(const arb_entry *e)
{
    const arb_grant *g = &e->granted, *t = &e->target;
    if (!g->epoch && !g->budget)
        return false; /* nothing granted yet */
    return t->budget < g->budget || t->ddr_limit < g->ddr_limit ||
           t->h2d_gbps < g->h2d_gbps * (1 - 1e-9) ||
           t->d2h_gbps < g->d2h_gbps * (1 - 1e-9);
}

static bool differs(const arb_entry *e)
{
    const arb_grant *g = &e->granted, *t = &e->target;
    return !g->epoch || t->budget != g->budget ||
           t->ddr_limit != g->ddr_limit || t->h2d_gbps != g->h2d_gbps ||
           t->d2h_gbps != g->d2h_gbps;
}

static void fill_info(const arb_grant *g, Hyperoffload__ArbInfo *ai)
{
    hyperoffload__arb_info__init(ai);
    ai->budget = g->budget;
    ai->h2d_gbps = g->h2d_gbps;
    ai->d2h_gbps = g->d2h_gbps;
    ai->ddr_limit = g->ddr_limit;
    ai->predicted_step_us = g->pred.step_time_us;
    ai->predicted_exposed_us = g->pred.exposed_us;
    ai->epoch = g->epoch;
}

/* Measure from now on: the control region's totals at this moment. */
static void measure_from_now(srv_daemon *d, arb_entry *e)
{
    Hyperoffload__RuntimeInfo ri = HYPEROFFLOAD__RUNTIME_INFO__INIT;
    e->m_started = srv_stage_runtime_info(e->s, &ri);
    e->m_steps0 = ri.steps;
    e->m_ms0 = uv_now(&d->loop);
    e->m_exposed0 = ri.exposed_us;
}

/* The grant holds from now on: the DDR limit goes to the reservations
 * (srv_stage_set_ddr_limit: lowered limits are applied before raised
 * ones there too), the measurement restarts. */
static void grant_now(srv_daemon *d, arb_entry *e)
{
    e->granted = e->target;
    measure_from_now(d, e);
    if (!e->granted.ddr_limit)
        return;
    char err[SRV_ERR_MAX];
    if (srv_stage_set_ddr_limit(d, e->s, e->granted.ddr_limit, err,
                                sizeof(err)) < 0)
        srv_warn("session %" PRIu64 ": the arbiter's DDR limit of %" PRIu64
                 " bytes is not applied: %s", e->session_id,
                 e->granted.ddr_limit, err);
}

/* Tell e its target (event + control region). */
static void notify(srv_arbiter *a, arb_entry *e)
{
    (void)a;
    char msg[384], b1[32], b2[32], b3[32], b4[32];
    const arb_grant *g = &e->granted, *t = &e->target;
    snprintf(msg, sizeof(msg), "plan ready (epoch %" PRIu64 "): budget %s "
             "(was %s), %.2f/%.2f GB/s (was %.2f/%.2f), DDR limit %s (was "
             "%s); predicted step %.1f ms, exposed %.1f ms",
             t->epoch, ho_size_format(t->budget, b1, sizeof(b1)),
             ho_size_format(g->budget, b2, sizeof(b2)), t->h2d_gbps,
             t->d2h_gbps, g->h2d_gbps, g->d2h_gbps,
             ho_size_format(t->ddr_limit, b3, sizeof(b3)),
             ho_size_format(g->ddr_limit, b4, sizeof(b4)),
             t->pred.step_time_us / 1e3, t->pred.exposed_us / 1e3);
    e->notified = true;
    bool staged = srv_stage_post_plan_epoch(e->s, t->epoch);
    srv_conn *c = e->s->conn;
    if (c && c->state == SRV_CONN_READY) {
        Hyperoffload__Event ev = HYPEROFFLOAD__EVENT__INIT;
        Hyperoffload__ArbInfo ai;
        fill_info(t, &ai);
        ev.kind = HYPEROFFLOAD__EVENT_KIND__EVENT_PLAN_READY;
        ev.message = msg;
        ev.grant = &ai;
        srv_conn_reply(c, 0, HYPEROFFLOAD__ENVELOPE__BODY_EVENT, &ev, NULL, 0);
    }
    srv_info("session %" PRIu64 ": %s", e->session_id, msg);
    /* Nothing to switch without a replay, or nothing shrinks: the grant
     * holds from now on. */
    if (!staged || !shrinks(e))
        grant_now(a->d, e);
}

/* Shrinks first: notify every shrinking target; growing ones once no
 * shrink waits for its confirmation. */
static void release(srv_arbiter *a)
{
    for (arb_entry *e = a->head; e; e = e->next) {
        if (!e->has_target || e->notified || !shrinks(e))
            continue;
        if (e->target.ddr_limit > e->granted.ddr_limit) {
            e->deferred = e->target;
            e->has_deferred = true;
            e->target.ddr_limit = e->granted.ddr_limit;
        }
        notify(a, e);
    }
    for (arb_entry *e = a->head; e; e = e->next)
        if (e->has_target && e->notified && e->granted.epoch != e->target.epoch)
            return; /* a shrink is not confirmed yet */
    for (arb_entry *e = a->head; e; e = e->next) {
        if (!e->has_deferred)
            continue;
        e->target = e->deferred;
        e->target.epoch = ++a->epoch;
        e->has_deferred = false;
        e->notified = false;
    }
    for (arb_entry *e = a->head; e; e = e->next)
        if (e->has_target && !e->notified)
            notify(a, e);
}

static void apply_replan(srv_arbiter *a, arb_job *j)
{
    if (j->rc < 0) {
        srv_warn("arbiter: re-plan of %u sessions failed: %s", j->n, j->err);
        return;
    }
    uint64_t epoch = ++a->epoch;
    uint32_t changed = 0;
    for (uint32_t i = 0; i < j->n; i++) {
        job_client *c = &j->c[i];
        arb_entry *e = entry_of(a, c->session_id);
        if (!e || !e->trace_pb)
            continue; /* left meanwhile */
        arb_grant t = {.budget = c->out.budget_bytes,
                       .h2d_gbps = c->out.h2d_gbps,
                       .d2h_gbps = c->out.d2h_gbps,
                       .ddr_limit = c->out.ddr_limit_bytes,
                       .pred = c->out.predicted, .epoch = epoch};
        e->compute_us = c->compute_us;
        uint8_t *pb = malloc(c->sched_len ? c->sched_len : 1);
        if (!pb) {
            srv_warn("session %" PRIu64 ": out of memory keeping the "
                     "arbiter's schedule; it keeps its grant",
                     c->session_id);
            continue;
        }
        memcpy(pb, c->sched_pb, c->sched_len);
        free(e->sched_pb);
        e->sched_pb = pb;
        e->sched_len = c->sched_len;
        e->target = t;
        e->has_target = true;
        e->notified = false;
        e->has_deferred = false;
        if (j->n == 1) {
            /* Alone: nothing to arbitrate.  It keeps the plan it runs
             * (its own, or the last one it switched to, planned for no
             * more than it has now); the prediction is the judge's. */
            e->target.h2d_gbps = e->granted.h2d_gbps;
            e->target.d2h_gbps = e->granted.d2h_gbps;
            e->target.ddr_limit = e->granted.epoch ? e->granted.ddr_limit
                                                   : t.ddr_limit;
            e->granted = e->target;
            e->notified = true;
            continue;
        }
        if (!differs(e)) {
            /* same grant: only the prediction moves */
            e->granted.pred = t.pred;
            e->granted.epoch = epoch;
            e->notified = true;
            continue;
        }
        changed++;
    }
    srv_info("arbiter: epoch %" PRIu64 ": %u sessions, %u grants change "
             "(%s, %.1f ms, weighted exposed %.1f ms)", epoch, j->n, changed,
             plan_arb_strategy_name(j->chosen), j->ms, j->wexp_after / 1e3);
    a->last_epoch = epoch;
    release(a);
}

/* Keep the applied re-plan j as the last one (srv_arb_workload); its
 * parsed traces go (the packed ones stay).  true when kept. */
static bool keep_last(srv_arbiter *a, arb_job *j)
{
    if (j->kind != ARB_REPLAN || j->rc < 0 || j->n == 0 || !j->planned)
        return false;
    for (uint32_t i = 0; i < j->n; i++) {
        if (!j->c[i].sched_pb)
            return false;
        j->c[i].t = plan_trace_free(j->c[i].t);
    }
    job_free(a->last);
    a->last = j;
    return true;
}

/* ------------------------------------------------------------ admission */

static void fill_rows(arb_job *j, Hyperoffload__AdmitReply *r,
                      Hyperoffload__AdmitRow *rows,
                      Hyperoffload__AdmitRow **ptrs, char (*reasons)[256],
                      char **rptr)
{
    r->admissible = j->rc == 0;
    r->n_rows = j->rc == 0 ? j->n : 0;
    r->rows = ptrs;
    r->n_reasons = 0;
    r->reasons = rptr;
    r->weighted_exposed_before_us = j->wexp_before;
    r->weighted_exposed_after_us = j->wexp_after;
    r->strategy = (char *)plan_arb_strategy_name(j->chosen);
    r->arbitration_ms = j->ms;
    if (j->rc < 0) {
        snprintf(reasons[0], sizeof(reasons[0]), "%.250s", j->err);
        rptr[0] = reasons[0];
        r->n_reasons = 1;
        r->admissible = false;
        return;
    }
    for (uint32_t i = 0; i < j->n; i++) {
        job_client *c = &j->c[i];
        Hyperoffload__AdmitRow *w = &rows[i];
        hyperoffload__admit_row__init(w);
        ptrs[i] = w;
        w->session_id = c->session_id;
        w->name = c->name;
        w->device = (int32_t)c->device;
        w->budget = c->out.budget_bytes;
        w->compute_us = c->compute_us;
        if (c->before_valid) {
            w->before_step_us = c->before.step_time_us;
            w->before_exposed_us = c->before.exposed_us;
        }
        w->after_step_us = c->out.predicted.step_time_us;
        w->after_exposed_us = c->out.predicted.exposed_us;
        w->after_alloc_wait_us = c->out.predicted.alloc_wait_us;
        w->after_h2d_gbps = c->out.h2d_gbps;
        w->after_d2h_gbps = c->out.d2h_gbps;
        w->after_ddr_limit = c->out.ddr_limit_bytes;
        w->max_slowdown = c->max_slowdown;
        w->ok = true;
        double slow = c->compute_us > 0
                          ? c->out.predicted.step_time_us / c->compute_us
                          : 1.0;
        const char *why = NULL;
        char buf[256];
        if (c->max_slowdown > 0 && slow > c->max_slowdown) {
            snprintf(buf, sizeof(buf), "client \"%s\" would run at %.3fx "
                     "its compute (step %.1f ms, compute %.1f ms), above its "
                     "max_slowdown %.3f", c->name,
                     slow, c->out.predicted.step_time_us / 1e3,
                     c->compute_us / 1e3, c->max_slowdown);
            why = buf;
        } else if (c->out.predicted.alloc_wait_us > 0) {
            snprintf(buf, sizeof(buf), "client \"%s\" would wait %.1f ms a "
                     "step for device memory (device %u over capacity)",
                     c->name, c->out.predicted.alloc_wait_us / 1e3,
                     c->device);
            why = buf;
        }
        if (why) {
            w->ok = false;
            r->admissible = false;
            if (r->n_reasons < SRV_ARB_QUEUE) {
                snprintf(reasons[r->n_reasons], 256, "%s", why);
                rptr[r->n_reasons] = reasons[r->n_reasons];
                w->reason = reasons[r->n_reasons];
                r->n_reasons++;
            }
        }
    }
}

static void answer_admit(srv_arbiter *a, arb_job *j)
{
    srv_conn *c = srv_conn_find(a->d, j->conn_id);
    if (!c || c->state != SRV_CONN_READY)
        return;
    Hyperoffload__AdmitReply r = HYPEROFFLOAD__ADMIT_REPLY__INIT;
    Hyperoffload__AdmitRow *rows = calloc(j->n + 1, sizeof(*rows));
    Hyperoffload__AdmitRow **ptrs = calloc(j->n + 1, sizeof(*ptrs));
    char (*reasons)[256] = calloc(SRV_ARB_QUEUE, 256);
    char **rptr = calloc(SRV_ARB_QUEUE, sizeof(char *));
    if (!rows || !ptrs || !reasons || !rptr) {
        if (j->kind == ARB_ADMIT)
            srv_reply_error(c, j->request_id, -ENOMEM, "out of memory");
        goto out;
    }
    fill_rows(j, &r, rows, ptrs, reasons, rptr);
    if (j->kind == ARB_ADMIT) {
        srv_conn_reply(c, j->request_id,
                       HYPEROFFLOAD__ENVELOPE__BODY_ADMIT_REPLY, &r, NULL, 0);
    } else {
        Hyperoffload__RegisterRequest *req =
            hyperoffload__register_request__unpack(NULL, j->reg_len,
                                                   j->reg_pb);
        if (!req) {
            srv_reply_error(c, j->request_id, HO_E_INTERNAL,
                            "the RegisterRequest does not decode (bug)");
            goto out;
        }
        char why[SRV_ERR_MAX];
        size_t off = 0;
        why[0] = 0;
        for (size_t i = 0; i < r.n_reasons && off < sizeof(why); i++)
            off += (size_t)snprintf(why + off, sizeof(why) - off, "%s%s",
                                    i ? "; " : "", r.reasons[i]);
        int rc = r.admissible ? 0 : HO_E_BUDGET;
        j->done(a->d, c, j->request_id, req, rc,
                rc ? why : "");
        hyperoffload__register_request__free_unpacked(req, NULL);
    }
out:
    free(rows);
    free(ptrs);
    free(reasons);
    free(rptr);
}

/* ------------------------------------------------------------ the queue */

static void pump(srv_arbiter *a)
{
    if (a->running || a->d->draining)
        return;
    arb_job *j = NULL;
    if (a->q_head) {
        j = a->q_head;
        a->q_head = j->next;
        if (!a->q_head)
            a->q_tail = NULL;
        a->queued--;
    } else if (a->dirty) {
        a->dirty = false;
        char err[SRV_ERR_MAX];
        if (job_new(a, ARB_REPLAN, &j, err, sizeof(err)) < 0) {
            if (!a->too_large)
                srv_warn("arbiter: no re-plan: %s", err);
            a->too_large = true;
            return;
        }
        a->too_large = false;
        if (j->n == 0) {
            job_free(j);
            return;
        }
    }
    if (j)
        start(a, j);
}

static void arb_after(uv_work_t *req, int status)
{
    arb_job *j = req->data;
    srv_arbiter *a = j->a;
    bool counted = a->running;
    a->running = false;
    if (status < 0 && j->rc == 0) {
        j->rc = status;
        snprintf(j->err, sizeof(j->err), "the arbitration was cancelled");
    }
    if (j->kind == ARB_REPLAN)
        apply_replan(a, j);
    else
        answer_admit(a, j);
    if (!keep_last(a, j))
        job_free(j);
    pump(a);
    if (counted)
        srv_work_end(a->d);
}

static void replan(srv_arbiter *a)
{
    a->dirty = true;
    pump(a);
}

/* ------------------------------------------------------------ hooks */

void srv_arb_plan_answered(srv_daemon *d, srv_session *s,
                           struct plan_trace *trace, const uint8_t *sched,
                           size_t sched_len, uint64_t hash, uint64_t budget,
                           const char *planner)
{
    srv_arbiter *a = d->arbiter;
    arb_entry *e = a ? entry_get(a, s) : NULL;
    if (e && s->device >= 0 && (e->hash != hash || e->budget != budget ||
                                !e->trace_pb)) {
        uint8_t *pb = NULL;
        size_t len = 0;
        uint64_t held = e->trace_pb ? e->trace_len : 0;
        if (plan_trace_to_pb(trace, &pb, &len) == 0 &&
            (len > d->cfg.retained_per_session ||
             a->trace_bytes - held + len > d->cfg.retained_total)) {
            /* The node workload's traces are bounded like the plans kept
             * for StageRequest: this one stays out of the arbitration. */
            srv_warn("session %" PRIu64 ": its trace (%zu bytes) is not "
                     "kept for the node workload: [planning] "
                     "retained_per_session / retained_total reached",
                     s->id, len);
            free(pb);
        } else if (pb) {
            a->trace_bytes = a->trace_bytes - held + len;
            free(e->trace_pb);
            e->trace_pb = pb;
            e->trace_len = len;
            e->hash = hash;
            e->budget = budget;
            e->n_ops = trace->n_ops;
            snprintf(e->planner, sizeof(e->planner), "%s", planner);
            if (!e->granted.epoch) {
                e->granted.budget = budget;
                e->granted.h2d_gbps = trace->link.h2d_gbps;
                e->granted.d2h_gbps = trace->link.d2h_gbps;
            }
            replan(a);
        } else {
            srv_warn("session %" PRIu64 ": cannot keep its trace for the "
                     "node workload (out of memory)", s->id);
        }
    }
    srv_stage_remember_plan(d, s, trace, sched, sched_len, hash, budget,
                            planner);
}

void srv_arb_session_gone(srv_daemon *d, srv_session *s)
{
    srv_stage_session_gone(d, s);
    srv_arbiter *a = d->arbiter;
    arb_entry *e = a ? entry_of(a, s->id) : NULL;
    if (!e)
        return;
    bool member = e->trace_pb != NULL;
    entry_free(a, e);
    if (member && !d->draining) {
        release(a); /* its shrink no longer blocks anyone */
        replan(a);
    }
}

void srv_arb_session_registered(srv_daemon *d, srv_session *s,
                                double weight, double max_slowdown,
                                bool sync)
{
    srv_arbiter *a = d->arbiter;
    arb_entry *e = a ? entry_get(a, s) : NULL;
    if (!e)
        return;
    e->weight = weight > 0 ? weight : 1.0;
    e->max_slowdown = max_slowdown > 0 ? max_slowdown : 0;
    e->sync = sync;
    /* its flash share follows the same weight (staging.h) */
    srv_stage_set_flash_weight(d, s, e->weight);
}

bool srv_arb_client_info(srv_daemon *d, srv_session *s,
                         Hyperoffload__ArbInfo *ret)
{
    srv_arbiter *a = d->arbiter;
    arb_entry *e = a ? entry_of(a, s->id) : NULL;
    if (!e || !e->trace_pb)
        return false;
    fill_info(&e->granted, ret);
    ret->pending = e->has_target && e->granted.epoch != e->target.epoch;
    ret->weight = e->weight;
    ret->max_slowdown = e->max_slowdown;
    ret->switched_epoch = e->switched_epoch;
    Hyperoffload__RuntimeInfo ri = HYPEROFFLOAD__RUNTIME_INFO__INIT;
    if (srv_stage_runtime_info(s, &ri)) {
        uint64_t now = uv_now(&d->loop);
        if (!e->m_started || ri.steps < e->m_steps0) {
            measure_from_now(d, e);
        } else if (ri.steps > e->m_steps0) {
            double k = (double)(ri.steps - e->m_steps0);
            ret->measured_step_us = (double)(now - e->m_ms0) * 1e3 / k;
            ret->measured_exposed_us = (ri.exposed_us - e->m_exposed0) / k;
        }
    }
    return true;
}

/* ------------------------------------------------------------ requests */

void srv_handle_plan_fetch(srv_daemon *d, srv_conn *c, uint64_t rid,
                           const Hyperoffload__PlanFetchRequest *req)
{
    srv_session *s = c->session;
    arb_entry *e = d->arbiter ? entry_of(d->arbiter, s->id) : NULL;
    if (!e || !e->has_target || !e->sched_pb) {
        srv_reply_error(c, rid, HO_E_NO_PLAN, "session %" PRIu64 " has no "
                        "plan from the node arbiter", s->id);
        return;
    }
    /* An older epoch asked for (a re-plan came meanwhile): the latest,
     * once it is told; the reply's grant names its epoch. */
    if (!e->notified) {
        srv_reply_error(c, rid, HO_E_BUSY, "the plan of epoch %" PRIu64
                        " waits for other sessions to shrink first",
                        e->target.epoch);
        return;
    }
    char why[256] = "";
    plan_trace *t = NULL;
    int rc = plan_trace_from_pb(e->trace_pb, e->trace_len, &t, why,
                                sizeof(why));
    if (rc == 0)
        rc = plan_trace_finish(t, why, sizeof(why));
    Hyperoffload__Schedule *sp =
        rc == 0 ? hyperoffload__schedule__unpack(NULL, e->sched_len,
                                                 e->sched_pb)
                : NULL;
    if (!sp) {
        plan_trace_free(t);
        srv_reply_error(c, rid, HO_E_INTERNAL, "the arbiter's plan does not "
                        "decode (bug): %s", why);
        return;
    }
    Hyperoffload__PlanReply pr = HYPEROFFLOAD__PLAN_REPLY__INIT;
    Hyperoffload__ArbInfo ai;
    fill_info(&e->target, &ai);
    pr.schedule = sp;
    pr.cached = true;
    pr.trace_hash = e->hash;
    pr.grant = &ai;
    /* kept for StageRequest like a PlanRequest's plan, under the key the
     * library stages it by: the schedule's budget and planner */
    char planner[SRV_PLANNER_NAME_MAX];
    snprintf(planner, sizeof(planner), "%s", sp->planner ? sp->planner : "");
    pr.budget = sp->budget_bytes;
    pr.planner = planner;
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY, &pr, NULL,
                   0);
    uint64_t budget = sp->budget_bytes;
    hyperoffload__schedule__free_unpacked(sp, NULL);
    srv_stage_remember_plan(d, s, t, e->sched_pb, e->sched_len, e->hash,
                            budget, planner);
}

void srv_handle_plan_switched(srv_daemon *d, srv_conn *c, uint64_t rid,
                              const Hyperoffload__PlanSwitched *req)
{
    srv_session *s = c->session;
    arb_entry *e = d->arbiter ? entry_of(d->arbiter, s->id) : NULL;
    if (!e || !e->has_target || !req->epoch ||
        req->epoch > e->target.epoch) {
        srv_reply_error(c, rid, HO_E_STATE, "session %" PRIu64 " has no "
                        "plan of epoch %" PRIu64 " to switch to", s->id,
                        req->epoch);
        return;
    }
    if (req->epoch > e->switched_epoch)
        e->switched_epoch = req->epoch;
    if (req->epoch != e->target.epoch) {
        /* a superseded plan: it runs that one now; the latest follows at
         * its next step boundary */
        srv_reply_ok(c, rid);
        return;
    }
    if (e->granted.epoch != e->target.epoch)
        grant_now(d, e);
    srv_reply_ok(c, rid);
    release(d->arbiter);
}

static int queue_admit(srv_daemon *d, srv_conn *c, uint64_t rid,
                       arb_kind kind, const Hyperoffload__Trace *trace,
                       int32_t device, uint64_t budget, const char *name,
                       double weight, double max_slowdown, arb_job **ret_j,
                       char *err, size_t errlen)
{
    srv_arbiter *a = d->arbiter;
    if (!trace)
        return ho_errf(err, errlen, HO_E_BAD_TRACE, "the admission request "
                       "has no trace");
    if (device < 0 || (uint32_t)device >= d->cfg.n_devices)
        return ho_errf(err, errlen, HO_E_UNKNOWN_DEVICE, "device %d is not "
                       "one of the %u devices", (int)device,
                       d->cfg.n_devices);
    if (a->queued >= SRV_ARB_QUEUE)
        return ho_errf(err, errlen, HO_E_BUSY, "%u admission queries are "
                       "already waiting; try again later", a->queued);
    uint64_t cap = srv_config_hbm_capacity(&d->cfg, (uint32_t)device) -
                   srv_config_hbm_reserve(&d->cfg, (uint32_t)device);
    if (!budget)
        budget = cap - tier_hbm_granted(d->hbm, (uint32_t)device);
    if (!budget)
        return ho_errf(err, errlen, HO_E_BUDGET, "device %d has no free HBM "
                       "left for a newcomer", (int)device);
    size_t len = hyperoffload__trace__get_packed_size(trace);
    uint8_t *pb = malloc(len ? len : 1);
    if (!pb)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    hyperoffload__trace__pack(trace, pb);
    arb_job *j = NULL;
    int rc = job_new(a, kind, &j, err, errlen);
    if (rc == 0) {
        rc = job_add(j, 0, name && *name ? name : "newcomer", device, budget,
                     weight, max_slowdown, pb, len);
        if (rc < 0)
            ho_errf(err, errlen, rc, "out of memory");
    }
    free(pb);
    if (rc < 0) {
        job_free(j);
        return rc;
    }
    j->has_new = true;
    j->conn_id = c->id;
    j->request_id = rid;
    if (a->q_tail)
        a->q_tail->next = j;
    else
        a->q_head = j;
    a->q_tail = j;
    a->queued++;
    *ret_j = j;
    return 0;
}

void srv_handle_admit(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__AdmitRequest *req)
{
    char err[SRV_ERR_MAX];
    arb_job *j = NULL;
    int rc = queue_admit(d, c, rid, ARB_ADMIT, req->trace, req->device,
                         req->budget, req->name, req->weight,
                         req->max_slowdown, &j, err, sizeof(err));
    if (rc < 0)
        srv_reply_error(c, rid, rc, "%s", err);
    else
        pump(d->arbiter);
}

int srv_arb_admit_register(srv_daemon *d, srv_conn *c, uint64_t rid,
                           const Hyperoffload__RegisterRequest *req,
                           srv_arb_admitted_fn *done, char *err,
                           size_t errlen)
{
    size_t len = hyperoffload__register_request__get_packed_size(req);
    uint8_t *pb = malloc(len ? len : 1);
    if (!pb)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    hyperoffload__register_request__pack(req, pb);
    arb_job *j = NULL;
    int rc = queue_admit(d, c, rid, ARB_ADMIT_REG, req->admit_trace,
                         req->device, req->hbm_budget, req->client_name,
                         req->weight, req->max_slowdown, &j, err, errlen);
    if (rc < 0) {
        free(pb);
        return rc;
    }
    j->reg_pb = pb;
    j->reg_len = len;
    j->done = done;
    pump(d->arbiter);
    return 0;
}

/* ------------------------------------------------------------ export */

static char *json_of(const plan_node *n, const plan_workload *w)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    int rc = n ? plan_node_write_json(n, m) : plan_workload_write_json(w, m);
    if (fclose(m) != 0 || rc < 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The workload of job j (NODE.md §2 with §4's fields). */
static int workload_of(const arb_job *j, char (*names)[SRV_MAX_NAME + 48],
                       plan_workload **ret, char *err, size_t errlen)
{
    plan_workload *w = plan_workload_new(".");
    if (!w)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < j->n; i++) {
        const job_client *c = &j->c[i];
        char stem[SRV_MAX_NAME + 24];
        plan_workload_file_stem(stem, sizeof(stem), i, c->name);
        snprintf(names[2 * i], sizeof(names[0]), "%s.trace.json", stem);
        snprintf(names[2 * i + 1], sizeof(names[0]), "%s.schedule.json",
                 stem);
        /* sync: the group's first member's job (members share it) */
        const char *sync = c->sync != PLAN_NONE && c->sync < j->n
                               ? j->c[c->sync].job
                               : NULL;
        plan_wl_client wc = {
            .name = (char *)c->name, .job = c->job[0] ? (char *)c->job : NULL,
            .device = c->device, .trace = names[2 * i],
            .schedule = names[2 * i + 1], .has_budget = true,
            .budget_bytes = c->out.budget_bytes, .weight = c->weight,
            .sync = sync && sync[0] ? (char *)sync : NULL,
            .has_max_slowdown = c->max_slowdown >= 1,
            .max_slowdown = c->max_slowdown,
            .has_planned_h2d = true, .planned_h2d_gbps = c->out.h2d_gbps,
            .has_planned_d2h = true, .planned_d2h_gbps = c->out.d2h_gbps,
            .has_ddr_limit = true, .ddr_limit_bytes = c->out.ddr_limit_bytes,
            .has_predicted = true, .predicted = c->out.predicted};
        rc = plan_workload_add_client(w, &wc, err, errlen);
    }
    if (rc < 0) {
        plan_workload_free(w);
        return rc;
    }
    *ret = w;
    return 0;
}

void srv_arb_workload_release(Hyperoffload__NodeReply *nr)
{
    if (!nr)
        return;
    /* unset strings are protobuf-c's static empty string */
    if (nr->workload_json != protobuf_c_empty_string)
        free(nr->workload_json);
    if (nr->planned_node_json != protobuf_c_empty_string)
        free(nr->planned_node_json);
    free(nr->file_names);
    free(nr->file_data);
    nr->workload_json = nr->planned_node_json =
        (char *)protobuf_c_empty_string;
    nr->file_names = NULL;
    nr->file_data = NULL;
    nr->n_file_names = nr->n_file_data = 0;
}

/* File names live in one block after the pointer array. */
int srv_arb_workload(srv_daemon *d, Hyperoffload__NodeReply *nr, char *err,
                     size_t errlen)
{
    srv_arbiter *a = d->arbiter;
    const arb_job *j = a ? a->last : NULL;
    if (!j)
        return 0; /* no re-plan yet: workload_json stays "" */
    size_t nf = 2 * (size_t)j->n;
    typedef char name_t[SRV_MAX_NAME + 48];
    char **ptrs = calloc(1, nf * (sizeof(char *) + sizeof(name_t)));
    ProtobufCBinaryData *data = calloc(nf, sizeof(*data));
    if (!ptrs || !data) {
        free(ptrs);
        free(data);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    name_t *names = (name_t *)(void *)(ptrs + nf);
    plan_workload *w = NULL;
    int rc = workload_of(j, names, &w, err, errlen);
    nr->file_names = ptrs;
    nr->file_data = data;
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < j->n; i++) {
        ptrs[2 * i] = names[2 * i];
        ptrs[2 * i + 1] = names[2 * i + 1];
        data[2 * i] = (ProtobufCBinaryData){j->c[i].trace_len,
                                            j->c[i].trace_pb};
        data[2 * i + 1] = (ProtobufCBinaryData){j->c[i].sched_len,
                                                j->c[i].sched_pb};
    }
    nr->n_file_names = nr->n_file_data = nf;
    char *wj = json_of(NULL, w), *nj = json_of(j->planned, NULL);
    plan_workload_free(w);
    if (!wj || !nj) {
        free(wj);
        free(nj);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    nr->workload_json = wj;
    nr->planned_node_json = nj;
    nr->workload_epoch = a->last_epoch;
    size_t size = hyperoffload__node_reply__get_packed_size(nr);
    if (size + 64 > d->cfg.max_frame) {
        char x[32], y[32];
        return ho_errf(err, errlen, HO_E_TOO_LARGE, "the node workload "
                       "(%u sessions, %s with their traces and schedules) "
                       "is above the daemon's max_frame of %s", j->n,
                       ho_size_format(size, x, sizeof(x)),
                       ho_size_format(d->cfg.max_frame, y, sizeof(y)));
    }
    return 0;
}
