/* daemon/admin.c - Status, Clients, Quota (see admin.h). */
#include "daemon/admin.h"

#include "hyperoffload/version.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/arbitrate.h"
#include "daemon/connection.h"
#include "daemon/handlers.h"
#include "daemon/log.h"
#include "daemon/sessions.h"
#include "daemon/staging.h"
#include "daemon/topology.h"
#include "proto/errfmt.h"
#include "proto/mem.h"

static srv_session *session_by_id(srv_daemon *d, uint64_t id)
{
    for (srv_session *s = d->sessions; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

/* The device part of a StatusReply and the storage behind it. */
typedef struct device_table {
    uint32_t n_dev;
    size_t n_grants;
    Hyperoffload__DeviceStats *devs;
    Hyperoffload__DeviceStats **devp;
    Hyperoffload__DeviceGrant *grants;
    Hyperoffload__DeviceGrant **grantp;
    tier_hbm_grant_info *raw;
    char (*names)[SRV_DEVICE_NAME];
} device_table;

static void device_table_done(device_table *t)
{
    HO_FREE_ALL(t->devs, t->devp, t->names, t->grants, t->grantp, t->raw);
    memset(t, 0, sizeof(*t));
}

/* One entry per allocation, at least one element each.  0 or -ENOMEM. */
static int device_table_init(srv_daemon *d, device_table *t)
{
    memset(t, 0, sizeof(*t));
    t->n_dev = tier_hbm_count(d->hbm);
    for (uint32_t i = 0; i < t->n_dev; i++)
        t->n_grants += tier_hbm_grants(d->hbm, i, NULL, 0);
    t->devs = ho_calloc(t->n_dev, sizeof(*t->devs));
    t->devp = ho_calloc(t->n_dev, sizeof(*t->devp));
    t->names = ho_calloc(t->n_dev, sizeof(*t->names));
    t->grants = ho_calloc(t->n_grants, sizeof(*t->grants));
    t->grantp = ho_calloc(t->n_grants, sizeof(*t->grantp));
    t->raw = ho_calloc(t->n_grants, sizeof(*t->raw));
    if (!t->devs || !t->devp || !t->names || !t->grants || !t->grantp ||
        !t->raw) {
        device_table_done(t);
        return -ENOMEM;
    }
    return 0;
}

/* Device i's stats and its grants from index *g on (advanced). */
static void device_fill(srv_daemon *d, device_table *t, uint32_t i,
                        size_t *g)
{
    const tier_hbm_device *dev = tier_hbm_device_get(d->hbm, i);
    Hyperoffload__DeviceStats *ds = &t->devs[i];
    hyperoffload__device_stats__init(ds);
    snprintf(t->names[i], SRV_DEVICE_NAME, "%s", dev->name);
    ds->index = (int32_t)i;
    ds->name = t->names[i];
    ds->capacity = dev->capacity;
    ds->reserved = dev->reserve;
    ds->granted = tier_hbm_granted(d->hbm, i);
    uint32_t want = (uint32_t)(t->n_grants - *g);
    uint32_t got = tier_hbm_grants(d->hbm, i, t->raw + *g, want);
    if (got > want)
        got = want;
    ds->grants = t->grantp + *g;
    ds->n_grants = got;
    for (uint32_t k = 0; k < got; k++, (*g)++) {
        Hyperoffload__DeviceGrant *gr = &t->grants[*g];
        hyperoffload__device_grant__init(gr);
        gr->session_id = t->raw[*g].owner;
        gr->bytes = t->raw[*g].bytes;
        srv_session *s = session_by_id(d, t->raw[*g].owner);
        gr->client_name = s ? s->name : "";
        t->grantp[*g] = gr;
    }
    t->devp[i] = ds;
}

void srv_handle_status(srv_daemon *d, srv_conn *c, uint64_t rid)
{
    Hyperoffload__TierStats **tiers = NULL;
    size_t n_tiers = 0;
    device_table t;
    if (srv_tier_stats(d, &tiers, &n_tiers) < 0 ||
        device_table_init(d, &t) < 0) {
        free(tiers);
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
        return;
    }
    size_t g = 0;
    for (uint32_t i = 0; i < t.n_dev; i++)
        device_fill(d, &t, i, &g);

    Hyperoffload__StatusReply sr = HYPEROFFLOAD__STATUS_REPLY__INIT;
    sr.server_version = HO_VERSION_STRING;
    sr.protocol_version = HO_PROTO_VERSION;
    sr.pid = (uint32_t)getpid();
    sr.uptime_s = (double)(uv_now(&d->loop) - d->start_ms) / 1000.0;
    sr.n_tiers = n_tiers;
    sr.tiers = tiers;
    sr.n_devices = t.n_dev;
    sr.devices = t.devp;
    sr.clients = d->n_sessions;
    sr.connections = d->n_conns;
    sr.socket_path = d->socket_path;
    sr.config_path = d->cfg.config_path ? d->cfg.config_path : "";
    sr.state_dir = d->cfg.state_dir;
    sr.ddr_reserved = srv_stage_ddr_reserved(d);
    sr.ddr_quota_reserved = srv_quota_tier_sum(d->quota, SRV_TIER_DDR);
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY, &sr,
                   NULL, 0);
    free(tiers);
    device_table_done(&t);
}

/* Session s as a ClientInfo (strings point into s; usage and runtime
 * into the caller's storage). */
static void client_fill(srv_daemon *d, srv_session *s, uint64_t now,
                        Hyperoffload__ClientInfo *ci,
                        Hyperoffload__SessionUsage *u,
                        Hyperoffload__RuntimeInfo *rt,
                        Hyperoffload__ArbInfo *arb)
{
    hyperoffload__client_info__init(ci);
    srv_session_usage_fill(s, u);
    ci->session_id = s->id;
    ci->name = s->name;
    ci->pid = s->pid;
    ci->uid = s->uid;
    ci->gid = s->gid;
    ci->job = s->job;
    ci->device = s->device;
    ci->hbm_budget = s->hbm_granted;
    ci->usage = u;
    ci->connected_s = (double)(now - s->registered_ms) / 1000.0;
    ci->requests = s->conn ? s->conn->requests : 0;
    hyperoffload__runtime_info__init(rt);
    if (srv_stage_runtime_info(s, rt))
        ci->runtime = rt;
    hyperoffload__arb_info__init(arb);
    if (srv_arb_client_info(d, s, arb))
        ci->arb = arb;
}

void srv_handle_clients(srv_daemon *d, srv_conn *c, uint64_t rid)
{
    size_t n = d->n_sessions;
    Hyperoffload__ClientInfo *infos = ho_calloc(n, sizeof(*infos));
    Hyperoffload__ClientInfo **ptrs = ho_calloc(n, sizeof(*ptrs));
    Hyperoffload__SessionUsage *us = ho_calloc(n, sizeof(*us));
    Hyperoffload__RuntimeInfo *rt = ho_calloc(n, sizeof(*rt));
    Hyperoffload__ArbInfo *arb = ho_calloc(n, sizeof(*arb));
    if (!infos || !ptrs || !us || !rt || !arb) {
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
        goto out;
    }
    uint64_t now = uv_now(&d->loop);
    size_t i = 0;
    /* Oldest first: the list is newest-first. */
    srv_session *last = d->sessions;
    while (last && last->next)
        last = last->next;
    for (srv_session *s = last; s && i < n; s = s->prev, i++) {
        client_fill(d, s, now, &infos[i], &us[i], &rt[i], &arb[i]);
        ptrs[i] = &infos[i];
    }
    Hyperoffload__ClientsReply cr = HYPEROFFLOAD__CLIENTS_REPLY__INIT;
    cr.n_clients = i;
    cr.clients = ptrs;
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REPLY, &cr,
                   NULL, 0);
out:
    HO_FREE_ALL(infos, ptrs, us, rt, arb);
}

/* ------------------------------------------------------------ quotas */

static void fill_entry(srv_daemon *d, Hyperoffload__QuotaEntry *qe,
                       const srv_quota_entry *e)
{
    hyperoffload__quota_entry__init(qe);
    qe->kind = e->kind == SRV_SUBJECT_UID
                   ? HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID
                   : HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_JOB;
    qe->uid = e->kind == SRV_SUBJECT_UID ? e->uid : 0;
    qe->job = e->kind == SRV_SUBJECT_JOB ? (char *)e->job : "";
    qe->tier = (Hyperoffload__Tier)e->tier;
    qe->limit = e->limit;
    qe->used = srv_subject_usage(d, e->kind, e->uid, e->job, e->tier);
}

/* Tell every session the change applies to. */
static void quota_event(srv_daemon *d, const srv_quota_entry *e,
                        const char *what)
{
    for (srv_session *s = d->sessions; s; s = s->next) {
        bool hit = e->kind == SRV_SUBJECT_UID ? s->uid == e->uid
                                              : strcmp(s->job, e->job) == 0;
        if (hit && s->conn)
            srv_conn_event(s->conn,
                           HYPEROFFLOAD__EVENT_KIND__EVENT_QUOTA_CHANGED,
                           what);
    }
}

static void reply_entries(srv_conn *c, uint64_t rid,
                          Hyperoffload__QuotaEntry **ptrs, size_t n)
{
    Hyperoffload__QuotaReply qr = HYPEROFFLOAD__QUOTA_REPLY__INIT;
    qr.n_entries = n;
    qr.entries = ptrs;
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY, &qr,
                   NULL, 0);
}

static void quota_list(srv_daemon *d, srv_conn *c, uint64_t rid)
{
    size_t n = srv_quota_count(d->quota);
    Hyperoffload__QuotaEntry *qes = ho_calloc(n, sizeof(*qes));
    Hyperoffload__QuotaEntry **ptrs = ho_calloc(n, sizeof(*ptrs));
    if (!qes || !ptrs) {
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
    } else {
        for (size_t i = 0; i < n; i++) {
            fill_entry(d, &qes[i], srv_quota_at(d->quota, i));
            ptrs[i] = &qes[i];
        }
        reply_entries(c, rid, ptrs, n);
    }
    free(qes);
    free(ptrs);
}

/* The subject and tier of a GET/SET/CLEAR (limit not read).  0 or -EINVAL
 * with err. */
static int entry_from_request(const Hyperoffload__QuotaEntry *in,
                              srv_quota_entry *ret_e, char *err,
                              size_t errlen)
{
    srv_quota_entry e;
    memset(&e, 0, sizeof(e));
    if (!in)
        return ho_errf(err, errlen, -EINVAL, "the QuotaRequest has no entry");
    if (in->kind == HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID) {
        e.kind = SRV_SUBJECT_UID;
        e.uid = in->uid;
    } else if (in->kind ==
               HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_JOB) {
        e.kind = SRV_SUBJECT_JOB;
        const char *job = in->job ? in->job : "";
        if (!srv_quota_job_valid(job))
            return ho_errf(err, errlen, -EINVAL,
                           "job name '%.40s' is not 1..%d printable "
                           "characters without spaces", job, SRV_JOB_MAX);
        snprintf(e.job, sizeof(e.job), "%s", job);
    } else {
        return ho_errf(err, errlen, -EINVAL,
                       "quota subject kind %d is neither UID nor JOB",
                       (int)in->kind);
    }
    if (in->tier != HYPEROFFLOAD__TIER__TIER_DDR &&
        in->tier != HYPEROFFLOAD__TIER__TIER_FLASH &&
        in->tier != HYPEROFFLOAD__TIER__TIER_HBM)
        return ho_errf(err, errlen, -EINVAL,
                       "quota tier %d is not DDR, FLASH or HBM",
                       (int)in->tier);
    e.tier = (srv_tier)in->tier;
    *ret_e = e;
    return 0;
}

/* A DDR quota is a reservation (docs/admin.md, Quotas): e's limit must
 * fit in the pool beside the other DDR quotas (old: e's limit now, 0 when
 * none).  0, or HO_E_TIER_FULL with the figures. */
static int ddr_quota_fits(srv_daemon *d, const srv_quota_entry *e,
                          uint64_t old, const char *who, char *err,
                          size_t errlen)
{
    char a[32], b[32], c[32], f[32];
    uint64_t cap = d->cfg.ddr_capacity;
    uint64_t others = srv_quota_tier_sum(d->quota, SRV_TIER_DDR) - old;
    if (e->limit <= cap && others <= cap - e->limit)
        return 0;
    d->counters.quota_refusals[SRV_TIER_DDR]++;
    return ho_errf(err, errlen, HO_E_TIER_FULL, "a DDR quota of %s for %s "
                   "cannot be honoured: DDR quotas are reservations, and "
                   "the DDR pool of %s has %s left beside the %s the other "
                   "DDR quotas reserve (hoctl quota list)",
                   ho_size_format(e->limit, a, sizeof(a)), who,
                   ho_size_format(cap, b, sizeof(b)),
                   ho_size_format(others < cap ? cap - others : 0, f,
                                  sizeof(f)),
                   ho_size_format(others, c, sizeof(c)));
}

/* Re-split the host-copy reservations after e was set (from `old`, 0:
 * none); when the sessions that stage no longer get their minimums, put
 * the quota back and refuse (HO_E_TIER_FULL or HO_E_QUOTA). */
static int ddr_quota_resplit(srv_daemon *d, const srv_quota_entry *e,
                             uint64_t old, const char *who, char *err,
                             size_t errlen)
{
    char why[SRV_ERR_MAX], undo[SRV_ERR_MAX];
    int rc = srv_stage_rebalance(d, why, sizeof(why));
    if (rc == 0)
        return 0;
    srv_quota_entry back = *e;
    back.limit = old;
    int r2 = old ? srv_quota_set(d->quota, &back, undo, sizeof(undo))
                 : srv_quota_clear(d->quota, e->kind, e->uid, e->job,
                                   e->tier, undo, sizeof(undo));
    if (r2 < 0)
        srv_err("quota for %s could not be put back: %s", who, undo);
    d->counters.quota_refusals[SRV_TIER_DDR]++;
    return ho_errf(err, errlen, rc, "a DDR quota of %" PRIu64 " bytes for "
                   "%s cannot be honoured with the sessions staging host "
                   "copies now: %s", e->limit, who, why);
}

/* SET e (limit in e->limit), tell the sessions concerned.  0 or the code
 * with err. */
static int quota_set(srv_daemon *d, srv_conn *c, const srv_quota_entry *e,
                     const char *who, char *err, size_t errlen)
{
    char a[32], what[SRV_JOB_MAX + 128];
    uint64_t old = srv_quota_limit(d->quota, e->kind, e->uid, e->job,
                                   e->tier);
    if (e->tier == SRV_TIER_DDR && e->limit > 0) {
        int rc = ddr_quota_fits(d, e, old, who, err, errlen);
        if (rc < 0)
            return rc;
    }
    int rc = srv_quota_set(d->quota, e, err, errlen);
    if (rc < 0) {
        if (rc != HO_E_INVALID_SIZE && rc != -EINVAL && rc != -E2BIG)
            srv_err("quota set for %s failed: %s", who, err);
        return rc;
    }
    if (e->tier == SRV_TIER_DDR) {
        rc = ddr_quota_resplit(d, e, old, who, err, errlen);
        if (rc < 0)
            return rc;
    }
    srv_notice("quota: %s %s limit set to %s by uid %u", who,
               srv_tier_name(e->tier), ho_size_format(e->limit, a, 32),
               (unsigned)c->uid);
    snprintf(what, sizeof(what), "%s quota of %s set to %" PRIu64 " bytes",
             srv_tier_name(e->tier), who, e->limit);
    quota_event(d, e, what);
    return 0;
}

/* CLEAR e, tell the sessions concerned when there was a limit.  0 or the
 * code with err. */
static int quota_clear(srv_daemon *d, srv_conn *c, const srv_quota_entry *e,
                       const char *who, char *err, size_t errlen)
{
    char what[SRV_JOB_MAX + 128];
    int rc = srv_quota_clear(d->quota, e->kind, e->uid, e->job, e->tier, err,
                             errlen);
    if (rc < 0) {
        srv_err("quota clear for %s failed: %s", who, err);
        return rc;
    }
    if (rc == 1 && e->tier == SRV_TIER_DDR &&
        srv_stage_rebalance(d, err, errlen) < 0)
        srv_warn("quota of %s cleared; DDR reservations not re-split: %s",
                 who, err);
    if (rc == 1) {
        srv_notice("quota: %s %s limit cleared by uid %u", who,
                   srv_tier_name(e->tier), (unsigned)c->uid);
        snprintf(what, sizeof(what), "%s quota of %s cleared",
                 srv_tier_name(e->tier), who);
        quota_event(d, e, what);
    }
    return 0;
}

void srv_handle_quota(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__QuotaRequest *req)
{
    char err[SRV_ERR_MAX], who[SRV_JOB_MAX + 16];
    if (req->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_LIST) {
        quota_list(d, c, rid);
        return;
    }
    if (req->op != HYPEROFFLOAD__QUOTA_OP__QUOTA_GET &&
        req->op != HYPEROFFLOAD__QUOTA_OP__QUOTA_SET &&
        req->op != HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR) {
        srv_reply_error(c, rid, -EINVAL, "quota op %d is not GET, SET, LIST "
                        "or CLEAR", (int)req->op);
        return;
    }
    srv_quota_entry e;
    int rc = entry_from_request(req->entry, &e, err, sizeof(err));
    if (rc == 0) {
        srv_quota_subject_name(e.kind, e.uid, e.job, who, sizeof(who));
        if (req->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET) {
            e.limit = req->entry->limit;
            rc = quota_set(d, c, &e, who, err, sizeof(err));
        } else if (req->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR) {
            rc = quota_clear(d, c, &e, who, err, sizeof(err));
            e.limit = 0;
        } else {
            e.limit = srv_quota_limit(d->quota, e.kind, e.uid, e.job, e.tier);
        }
    }
    if (rc < 0) {
        srv_reply_error(c, rid, rc, "%s", err);
        return;
    }
    Hyperoffload__QuotaEntry qe;
    Hyperoffload__QuotaEntry *ptr = &qe;
    fill_entry(d, &qe, &e);
    reply_entries(c, rid, &ptr, 1);
}

void srv_handle_node(srv_daemon *d, srv_conn *c, uint64_t rid,
                     const Hyperoffload__NodeRequest *req)
{
    /* the workload carries every session's trace: admin peers only */
    if (req->workload && !srv_authz_is_admin(&d->authz, c->uid, c->gid)) {
        srv_reply_error(c, rid, HO_E_PERMISSION, "NodeRequest with "
                        "workload (every session's trace and schedule) "
                        "needs an admin peer; uid %u is not one",
                        (unsigned)c->uid);
        return;
    }
    const plan_node *n = srv_topology_node(d->topology);
    char *json = NULL;
    size_t len = 0;
    if (n) {
        FILE *m = open_memstream(&json, &len);
        if (!m || plan_node_write_json(n, m) < 0) {
            if (m)
                fclose(m);
            free(json);
            srv_reply_error(c, rid, -ENOMEM, "out of memory");
            return;
        }
        fclose(m);
    }
    Hyperoffload__NodeReply nr = HYPEROFFLOAD__NODE_REPLY__INIT;
    nr.node_json = json ? json : "";
    nr.source = (char *)srv_topology_source_name(
        srv_topology_source_of(d->topology));
    nr.note = (char *)srv_topology_note(d->topology);
    nr.pacing = d->links != NULL;
    char err[SRV_ERR_MAX];
    int rc = req->workload ? srv_arb_workload(d, &nr, err, sizeof(err)) : 0;
    if (rc < 0)
        srv_reply_error(c, rid, rc, "%s", err);
    else
        srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_NODE_REPLY, &nr,
                       NULL, 0);
    srv_arb_workload_release(&nr);
    free(json);
}
