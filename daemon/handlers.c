/* daemon/handlers.c - Register, Alloc, Free, Move, Stats (see handlers.h). */
#include "daemon/handlers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/arbitrate.h"
#include "daemon/connection.h"
#include "daemon/links.h"
#include "daemon/log.h"
#include "daemon/sessions.h"
#include "daemon/topology.h"
#include "proto/errfmt.h"
#include "daemon/staging.h"

static void do_register(srv_daemon *d, srv_conn *c, uint64_t rid,
                        const Hyperoffload__RegisterRequest *req, int rc,
                        const char *why)
{
    char err[SRV_ERR_MAX];
    srv_session *s = NULL;
    if (rc < 0)
        snprintf(err, sizeof(err), "admission refused: %s", why);
    else
        rc = srv_session_register(d, c, req, &s, err, sizeof(err));
    if (rc == 0)
        srv_arb_session_registered(d, s, req->weight, req->max_slowdown,
                                   req->sync);
    srv_count_admission(&d->counters, SRV_ADMIT_REGISTER, rc);
    if (rc < 0) {
        srv_log_s(SRV_LOG_INFO, 0, req->job, rc, "register of '%s' (uid %u, "
                  "job '%s') refused: %s", c->name, (unsigned)c->uid,
                  req->job ? req->job : "", err);
        srv_reply_error(c, rid, rc, "%s", err);
        return;
    }
    tier_ddr_stats st;
    tier_ddr_stats_get(d->ddr, &st);
    tier_arena *a = s->arena->arena;
    Hyperoffload__RegisterReply rr = HYPEROFFLOAD__REGISTER_REPLY__INIT;
    Hyperoffload__ArenaInfo ai = HYPEROFFLOAD__ARENA_INFO__INIT;
    ai.arena_id = tier_arena_id(a);
    ai.map_size = tier_arena_map_size(a);
    ai.fd_attached = true;
    ai.numa_node = st.numa_node;
    ai.locked = st.locked;
    rr.session_id = s->id;
    rr.device = s->device;
    rr.hbm_granted = s->hbm_granted;
    rr.arena = &ai;
    rr.ddr_alignment = d->cfg.ddr_alignment;
    /* The link region second, for a session on a device of the node. */
    Hyperoffload__LinkRegion lr = HYPEROFFLOAD__LINK_REGION__INIT;
    int fds[2] = {tier_arena_fd(a), -1};
    uint32_t nd = srv_topology_device(d->topology, s->device);
    if (d->links && req->want_links && fds[0] >= 0 && nd != PLAN_NONE) {
        lr.fd_attached = true;
        lr.map_size = srv_links_size(d->links);
        lr.device_index = nd;
        /* its weight on shared links, as the arbiter weighs it */
        lr.weight = req->weight > 0 && req->weight <= 1e6 ? req->weight
                                                          : 1.0;
        rr.links = &lr;
        fds[1] = srv_links_fd(d->links);
    }
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY, &rr,
                   fds, fds[0] < 0 ? 0 : fds[1] >= 0 ? 2 : 1);
}

void srv_handle_register(srv_daemon *d, srv_conn *c, uint64_t rid,
                         const Hyperoffload__RegisterRequest *req)
{
    /* max_slowdown with a trace: the what-if prediction decides first */
    if (req->max_slowdown > 0 && req->admit_trace && !c->session) {
        char err[SRV_ERR_MAX];
        int rc = srv_arb_admit_register(d, c, rid, req, do_register, err,
                                        sizeof(err));
        if (rc < 0) {
            srv_count_admission(&d->counters, SRV_ADMIT_REGISTER, rc);
            srv_reply_error(c, rid, rc, "%s", err);
        }
        return;
    }
    do_register(d, c, rid, req, 0, "");
}

void srv_handle_alloc(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__AllocRequest *req)
{
    char err[SRV_ERR_MAX];
    srv_extent *x = NULL;
    int rc = srv_stage_plain_room(d, c->session, req->bytes, err,
                                  sizeof(err));
    if (rc == 0)
        rc = srv_extent_alloc(d, c->session, req->bytes, &x, err,
                              sizeof(err));
    srv_count_admission(&d->counters, SRV_ADMIT_ALLOC, rc);
    if (rc < 0) {
        srv_log_s(SRV_LOG_INFO, c->session->id, c->session->job, rc,
                  "session %" PRIu64 ": alloc of %" PRIu64 " bytes refused: "
                  "%s", c->session->id, req->bytes, err);
        srv_reply_error(c, rid, rc, "%s", err);
        return;
    }
    Hyperoffload__AllocReply ar = HYPEROFFLOAD__ALLOC_REPLY__INIT;
    ar.extent_id = x->id;
    ar.arena_id = tier_arena_id(x->arena->arena);
    ar.offset = x->off;
    ar.length = x->len;
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REPLY, &ar, NULL,
                   0);
}

void srv_handle_free_request(srv_daemon *d, srv_conn *c, uint64_t rid,
                             const Hyperoffload__FreeRequest *req)
{
    char err[SRV_ERR_MAX];
    int rc = srv_extent_free_by_id(d, c->session, req->extent_id, rid, err,
                                   sizeof(err));
    if (rc < 0)
        srv_reply_error(c, rid, rc, "%s", err);
    else if (rc == 0)
        srv_reply_ok(c, rid);
}

void srv_handle_move(srv_daemon *d, srv_conn *c, uint64_t rid,
                     const Hyperoffload__MoveRequest *req)
{
    char err[SRV_ERR_MAX];
    int rc = srv_extent_move(d, c->session, req->extent_id,
                             (int)req->direction, rid, err, sizeof(err));
    srv_count_admission(&d->counters, SRV_ADMIT_MOVE, rc);
    if (rc < 0)
        srv_reply_error(c, rid, rc, "%s", err);
    /* else the reply comes when the I/O completes */
}

/* One TierStats with its strings. */
typedef struct tier_slot {
    Hyperoffload__TierStats ts;
    char name[300];
    char detail[200];
} tier_slot;

static void ddr_stats(srv_daemon *d, tier_slot *t)
{
    tier_ddr_stats ds;
    tier_ddr_stats_get(d->ddr, &ds);
    t->ts.tier = HYPEROFFLOAD__TIER__TIER_DDR;
    snprintf(t->name, sizeof(t->name), "ddr");
    snprintf(t->detail, sizeof(t->detail), "%s", ds.detail);
    t->ts.capacity = ds.capacity;
    t->ts.used = ds.used;
    t->ts.free = ds.capacity > ds.used ? ds.capacity - ds.used : 0;
    t->ts.largest_free = ds.largest_free;
    t->ts.fragmentation = ds.fragmentation;
    t->ts.extents = ds.extents;
    t->ts.committed = ds.committed;
}

static void flash_stats(srv_daemon *d, uint32_t i, tier_slot *t)
{
    tier_flash_stats fs;
    tier_flash_stats_get(d->flash[i], &fs);
    t->ts.tier = HYPEROFFLOAD__TIER__TIER_FLASH;
    snprintf(t->name, sizeof(t->name), "flash:%s", d->cfg.flash_paths[i]);
    snprintf(t->detail, sizeof(t->detail), "%s", fs.detail);
    t->ts.capacity = fs.capacity;
    t->ts.used = fs.used;
    t->ts.free = fs.free;
    t->ts.largest_free = fs.largest_free;
    t->ts.fragmentation = fs.fragmentation;
    t->ts.extents = fs.extents;
    t->ts.committed = fs.capacity;
}

static void hbm_stats(srv_daemon *d, uint32_t i, tier_slot *t)
{
    const tier_hbm_device *dev = tier_hbm_device_get(d->hbm, i);
    uint64_t granted = tier_hbm_granted(d->hbm, i);
    uint64_t avail = dev->capacity > dev->reserve
                         ? dev->capacity - dev->reserve : 0;
    char r[32];
    t->ts.tier = HYPEROFFLOAD__TIER__TIER_HBM;
    snprintf(t->name, sizeof(t->name), "hbm:%s", dev->name);
    snprintf(t->detail, sizeof(t->detail), "device %u, reserve %s", i,
             ho_size_format(dev->reserve, r, sizeof(r)));
    t->ts.capacity = dev->capacity;
    t->ts.used = granted;
    t->ts.free = avail > granted ? avail - granted : 0;
    t->ts.largest_free = t->ts.free;
    t->ts.fragmentation = 0;
    t->ts.extents = tier_hbm_grants(d->hbm, i, NULL, 0);
    t->ts.committed = granted;
}

int srv_tier_stats(srv_daemon *d, Hyperoffload__TierStats ***ret_tiers,
                   size_t *ret_n)
{
    uint32_t n_dev = tier_hbm_count(d->hbm);
    size_t n = 1 + d->n_flash + n_dev;
    /* One block: the pointer array, then the slots. */
    void *block = calloc(1, n * (sizeof(void *) + sizeof(tier_slot)));
    if (!block)
        return -ENOMEM;
    Hyperoffload__TierStats **ptrs = block;
    tier_slot *slots = (tier_slot *)(void *)(ptrs + n);
    for (size_t k = 0; k < n; k++)
        hyperoffload__tier_stats__init(&slots[k].ts);
    size_t k = 0;
    ddr_stats(d, &slots[k++]);
    for (uint32_t i = 0; i < d->n_flash; i++)
        flash_stats(d, i, &slots[k++]);
    for (uint32_t i = 0; i < n_dev; i++)
        hbm_stats(d, i, &slots[k++]);
    for (size_t i = 0; i < k; i++) {
        slots[i].ts.name = slots[i].name;
        slots[i].ts.detail = slots[i].detail;
        ptrs[i] = &slots[i].ts;
    }
    *ret_tiers = ptrs;
    *ret_n = k;
    return 0;
}

void srv_session_usage_fill(const srv_session *s,
                            Hyperoffload__SessionUsage *ret_u)
{
    hyperoffload__session_usage__init(ret_u);
    ret_u->ddr_bytes = s->usage.ddr;
    ret_u->flash_bytes = s->usage.flash;
    ret_u->extents = s->usage.extents;
    ret_u->hbm_granted = s->hbm_granted;
}

void srv_handle_stats(srv_daemon *d, srv_conn *c, uint64_t rid)
{
    Hyperoffload__TierStats **tiers = NULL;
    size_t n = 0;
    if (srv_tier_stats(d, &tiers, &n) < 0) {
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
        return;
    }
    Hyperoffload__StatsReply sr = HYPEROFFLOAD__STATS_REPLY__INIT;
    Hyperoffload__SessionUsage u;
    sr.n_tiers = n;
    sr.tiers = tiers;
    if (c->session) {
        srv_session_usage_fill(c->session, &u);
        sr.session = &u;
    }
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY, &sr, NULL,
                   0);
    free(tiers);
}
