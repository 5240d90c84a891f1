/* daemon/admin.c - Status, Clients, Quota (see admin.h). */
#include "daemon/admin.h"

#include "hyperoffload/version.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/connection.h"
#include "daemon/handlers.h"
#include "daemon/log.h"
#include "daemon/sessions.h"
#include "daemon/staging.h"

static srv_session *session_by_id(srv_daemon *d, uint64_t id)
{
    for (srv_session *s = d->sessions; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

void srv_handle_status(srv_daemon *d, srv_conn *c, uint64_t rid)
{
    Hyperoffload__TierStats **tiers = NULL;
    size_t n_tiers = 0;
    uint32_t n_dev = tier_hbm_count(d->hbm);
    Hyperoffload__DeviceStats *devs = NULL;
    Hyperoffload__DeviceStats **devp = NULL;
    Hyperoffload__DeviceGrant *grants = NULL;
    Hyperoffload__DeviceGrant **grantp = NULL;
    tier_hbm_grant_info *raw = NULL;
    char(*dev_names)[SRV_DEVICE_NAME] = NULL;

    if (srv_tier_stats(d, &tiers, &n_tiers) < 0)
        goto oom;
    size_t total_grants = 0;
    for (uint32_t i = 0; i < n_dev; i++)
        total_grants += tier_hbm_grants(d->hbm, i, NULL, 0);
    devs = calloc(n_dev ? n_dev : 1, sizeof(*devs));
    devp = calloc(n_dev ? n_dev : 1, sizeof(*devp));
    dev_names = calloc(n_dev ? n_dev : 1, sizeof(*dev_names));
    grants = calloc(total_grants ? total_grants : 1, sizeof(*grants));
    grantp = calloc(total_grants ? total_grants : 1, sizeof(*grantp));
    raw = calloc(total_grants ? total_grants : 1, sizeof(*raw));
    if (!devs || !devp || !dev_names || !grants || !grantp || !raw)
        goto oom;
    size_t g = 0;
    for (uint32_t i = 0; i < n_dev; i++) {
        const tier_hbm_device *dev = tier_hbm_device_get(d->hbm, i);
        Hyperoffload__DeviceStats *ds = &devs[i];
        hyperoffload__device_stats__init(ds);
        snprintf(dev_names[i], SRV_DEVICE_NAME, "%s", dev->name);
        ds->index = (int32_t)i;
        ds->name = dev_names[i];
        ds->capacity = dev->capacity;
        ds->reserved = dev->reserve;
        ds->granted = tier_hbm_granted(d->hbm, i);
        uint32_t want = (uint32_t)(total_grants - g);
        uint32_t got = tier_hbm_grants(d->hbm, i, raw + g, want);
        if (got > want)
            got = want;
        ds->grants = grantp + g;
        ds->n_grants = got;
        for (uint32_t k = 0; k < got; k++, g++) {
            hyperoffload__device_grant__init(&grants[g]);
            grants[g].session_id = raw[g].owner;
            grants[g].bytes = raw[g].bytes;
            srv_session *s = session_by_id(d, raw[g].owner);
            grants[g].client_name = s ? s->name : "";
            grantp[g] = &grants[g];
        }
        devp[i] = ds;
    }

    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__StatusReply sr = HYPEROFFLOAD__STATUS_REPLY__INIT;
    sr.server_version = HO_VERSION_STRING;
    sr.protocol_version = HO_PROTO_VERSION;
    sr.pid = (uint32_t)getpid();
    sr.uptime_s = (double)(uv_now(&d->loop) - d->start_ms) / 1000.0;
    sr.n_tiers = n_tiers;
    sr.tiers = tiers;
    sr.n_devices = n_dev;
    sr.devices = devp;
    sr.clients = d->n_sessions;
    sr.connections = d->n_conns;
    sr.socket_path = d->socket_path;
    sr.config_path = d->cfg.config_path ? d->cfg.config_path : "";
    sr.state_dir = d->cfg.state_dir;
    env.request_id = rid;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY;
    env.status_reply = &sr;
    srv_conn_send(c, &env, -1);
    goto out;
oom:
    srv_reply_error(c, rid, -ENOMEM, "out of memory");
out:
    free(tiers);
    free(devs);
    free(devp);
    free(dev_names);
    free(grants);
    free(grantp);
    free(raw);
}

void srv_handle_clients(srv_daemon *d, srv_conn *c, uint64_t rid)
{
    size_t n = d->n_sessions;
    Hyperoffload__ClientInfo *infos = calloc(n ? n : 1, sizeof(*infos));
    Hyperoffload__ClientInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    Hyperoffload__SessionUsage *us = calloc(n ? n : 1, sizeof(*us));
    Hyperoffload__RuntimeInfo *rt = calloc(n ? n : 1, sizeof(*rt));
    if (!infos || !ptrs || !us || !rt) {
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
        Hyperoffload__ClientInfo *ci = &infos[i];
        hyperoffload__client_info__init(ci);
        hyperoffload__session_usage__init(&us[i]);
        us[i].ddr_bytes = s->usage.ddr;
        us[i].flash_bytes = s->usage.flash;
        us[i].extents = s->usage.extents;
        us[i].hbm_granted = s->hbm_granted;
        ci->session_id = s->id;
        ci->name = s->name;
        ci->pid = s->pid;
        ci->uid = s->uid;
        ci->gid = s->gid;
        ci->job = s->job;
        ci->device = s->device;
        ci->hbm_budget = s->hbm_granted;
        ci->usage = &us[i];
        ci->connected_s = (double)(now - s->registered_ms) / 1000.0;
        ci->requests = s->conn ? s->conn->requests : 0;
        hyperoffload__runtime_info__init(&rt[i]);
        if (srv_stage_runtime_info(s, &rt[i]))
            ci->runtime = &rt[i];
        ptrs[i] = ci;
    }
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__ClientsReply cr = HYPEROFFLOAD__CLIENTS_REPLY__INIT;
    cr.n_clients = i;
    cr.clients = ptrs;
    env.request_id = rid;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REPLY;
    env.clients_reply = &cr;
    srv_conn_send(c, &env, -1);
out:
    free(infos);
    free(ptrs);
    free(us);
    free(rt);
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

static void subject_text(const srv_quota_entry *e, char *buf, size_t len)
{
    if (e->kind == SRV_SUBJECT_UID)
        snprintf(buf, len, "uid %u", e->uid);
    else
        snprintf(buf, len, "job %s", e->job);
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
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__QuotaReply qr = HYPEROFFLOAD__QUOTA_REPLY__INIT;
    qr.n_entries = n;
    qr.entries = ptrs;
    env.request_id = rid;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY;
    env.quota_reply = &qr;
    srv_conn_send(c, &env, -1);
}

void srv_handle_quota(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__QuotaRequest *req)
{
    char err[512], a[32], who[SRV_JOB_MAX + 16], what[SRV_JOB_MAX + 128];
    if (req->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_LIST) {
        size_t n = srv_quota_count(d->quota);
        Hyperoffload__QuotaEntry *qes = calloc(n ? n : 1, sizeof(*qes));
        Hyperoffload__QuotaEntry **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
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
        return;
    }
    if (req->op != HYPEROFFLOAD__QUOTA_OP__QUOTA_GET &&
        req->op != HYPEROFFLOAD__QUOTA_OP__QUOTA_SET &&
        req->op != HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR) {
        srv_reply_error(c, rid, -EINVAL, "quota op %d is not GET, SET, LIST "
                        "or CLEAR", (int)req->op);
        return;
    }
    const Hyperoffload__QuotaEntry *in = req->entry;
    if (!in) {
        srv_reply_error(c, rid, -EINVAL, "the QuotaRequest has no entry");
        return;
    }
    srv_quota_entry e;
    memset(&e, 0, sizeof(e));
    if (in->kind == HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID) {
        e.kind = SRV_SUBJECT_UID;
        e.uid = in->uid;
    } else if (in->kind ==
               HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_JOB) {
        e.kind = SRV_SUBJECT_JOB;
        const char *job = in->job ? in->job : "";
        if (!srv_quota_job_valid(job)) {
            srv_reply_error(c, rid, -EINVAL, "job name '%.40s' is not 1..%d "
                            "printable characters without spaces", job,
                            SRV_JOB_MAX);
            return;
        }
        snprintf(e.job, sizeof(e.job), "%s", job);
    } else {
        srv_reply_error(c, rid, -EINVAL, "quota subject kind %d is neither "
                        "UID nor JOB", (int)in->kind);
        return;
    }
    if (in->tier != HYPEROFFLOAD__TIER__TIER_DDR &&
        in->tier != HYPEROFFLOAD__TIER__TIER_FLASH &&
        in->tier != HYPEROFFLOAD__TIER__TIER_HBM) {
        srv_reply_error(c, rid, -EINVAL, "quota tier %d is not DDR, FLASH or "
                        "HBM", (int)in->tier);
        return;
    }
    e.tier = (srv_tier)in->tier;
    subject_text(&e, who, sizeof(who));

    if (req->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET) {
        e.limit = in->limit;
        int rc = srv_quota_set(d->quota, &e, err, sizeof(err));
        if (rc < 0) {
            if (rc != HO_E_INVALID_SIZE && rc != -EINVAL && rc != -E2BIG)
                srv_err("quota set for %s failed: %s", who, err);
            srv_reply_error(c, rid, rc, "%s", err);
            return;
        }
        srv_notice("quota: %s %s limit set to %s by uid %u", who,
                   srv_tier_name(e.tier), ho_size_format(e.limit, a, 32),
                   (unsigned)c->uid);
        snprintf(what, sizeof(what), "%s quota of %s set to %" PRIu64
                 " bytes", srv_tier_name(e.tier), who, e.limit);
        quota_event(d, &e, what);
    } else if (req->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR) {
        int rc = srv_quota_clear(d->quota, e.kind, e.uid, e.job, e.tier, err,
                                 sizeof(err));
        if (rc < 0) {
            srv_err("quota clear for %s failed: %s", who, err);
            srv_reply_error(c, rid, rc, "%s", err);
            return;
        }
        if (rc == 1) {
            srv_notice("quota: %s %s limit cleared by uid %u", who,
                       srv_tier_name(e.tier), (unsigned)c->uid);
            snprintf(what, sizeof(what), "%s quota of %s cleared",
                     srv_tier_name(e.tier), who);
            quota_event(d, &e, what);
        }
        e.limit = 0;
    } else {
        e.limit = srv_quota_limit(d->quota, e.kind, e.uid, e.job, e.tier);
    }
    Hyperoffload__QuotaEntry qe;
    Hyperoffload__QuotaEntry *ptr = &qe;
    fill_entry(d, &qe, &e);
    reply_entries(c, rid, &ptr, 1);
}
