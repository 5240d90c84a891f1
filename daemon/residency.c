/* daemon/residency.c - registered regions and their headers (see
 * residency.h). */
#include "daemon/residency.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/authz.h"
#include "daemon/connection.h"
#include "daemon/list.h"
#include "proto/errfmt.h"
#include "proto/mem.h"
#include "proto/region_shm.h"

struct srv_region {
    uint64_t session_id;
    uint32_t uid;
    char job[SRV_JOB_MAX + 1];
    char name[SRV_MAX_NAME + 1];
    uint64_t extent_id, offset;
    srv_region *prev, *next;
};

static void region_drop(srv_daemon *d, srv_region *g)
{
    SRV_LIST_UNLINK(d->regions, g);
    d->n_regions--;
    free(g);
}

void srv_handle_region_register(srv_daemon *d, srv_conn *c, uint64_t rid,
                                const Hyperoffload__RegionRegister *req)
{
    srv_session *s = c->session;
    srv_extent *x = srv_idmap_get(&d->extents, req->extent_id);
    if (!x || x->owner != s || x->staged) {
        srv_reply_error(c, rid, HO_E_UNKNOWN_EXTENT, "extent %" PRIu64
                        " is not an extent of this session", req->extent_id);
        return;
    }
    if (req->offset > x->len || x->len - req->offset < HO_REGION_SHM_BYTES ||
        req->offset % 64) {
        srv_reply_error(c, rid, HO_E_INVALID_SIZE, "a region header of %u "
                        "bytes at offset %" PRIu64 " does not fit extent %"
                        PRIu64 " (%" PRIu64 " bytes) aligned",
                        HO_REGION_SHM_BYTES, req->offset, req->extent_id,
                        x->len);
        return;
    }
    uint32_t mine = 0;
    for (srv_region *g = d->regions; g; g = g->next)
        mine += g->session_id == s->id;
    size_t nl = req->name ? strlen(req->name) : 0;
    if (mine >= SRV_REGIONS_PER_SESSION || nl > SRV_MAX_NAME) {
        srv_reply_error(c, rid, HO_E_QUOTA, "a session registers at most %u "
                        "regions, named in at most %d bytes",
                        SRV_REGIONS_PER_SESSION, SRV_MAX_NAME);
        return;
    }
    srv_region *g = calloc(1, sizeof(*g));
    if (!g) {
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
        return;
    }
    g->session_id = s->id;
    g->uid = s->uid;
    snprintf(g->job, sizeof(g->job), "%s", s->job);
    snprintf(g->name, sizeof(g->name), "%s", nl ? req->name : "region");
    g->extent_id = req->extent_id;
    g->offset = req->offset;
    SRV_LIST_PUSH(d->regions, g);
    d->n_regions++;
    srv_reply_ok(c, rid);
}

/* The header of g, or NULL when its extent is gone or not in DDR. */
static const ho_region_shm *header(srv_daemon *d, const srv_region *g)
{
    srv_extent *x = srv_idmap_get(&d->extents, g->extent_id);
    if (!x || !x->owner || x->owner->id != g->session_id ||
        x->state != SRV_EXT_DDR)
        return NULL;
    const ho_region_shm *h =
        (const void *)(tier_arena_base(x->arena->arena) + x->off + g->offset);
    if (atomic_load_explicit(&h->magic, memory_order_acquire) !=
        HO_REGION_SHM_MAGIC)
        return NULL;
    return h;
}

static void fill(const srv_region *g, const ho_region_shm *h,
                 Hyperoffload__RegionInfo *ri)
{
    uint64_t v[HO_RSHM_N];
    for (int i = 0; i < HO_RSHM_N; i++)
        v[i] = atomic_load_explicit(&h->v[i], memory_order_relaxed);
    hyperoffload__region_info__init(ri);
    ri->session_id = g->session_id;
    ri->uid = g->uid;
    ri->job = (char *)g->job;
    ri->name = (char *)g->name;
    ri->block_bytes = v[HO_RSHM_BLOCK_BYTES];
    ri->slots = (uint32_t)v[HO_RSHM_SLOTS];
    ri->high = (uint32_t)v[HO_RSHM_HIGH];
    ri->low = (uint32_t)v[HO_RSHM_LOW];
    ri->device_blocks = (uint32_t)v[HO_RSHM_DEVICE_BLOCKS];
    ri->device_peak = (uint32_t)v[HO_RSHM_DEVICE_PEAK];
    ri->live_blocks = (uint32_t)v[HO_RSHM_LIVE_BLOCKS];
    ri->store_blocks = (uint32_t)v[HO_RSHM_STORE_BLOCKS];
    ri->steps = v[HO_RSHM_STEPS];
    ri->hits = v[HO_RSHM_HITS];
    ri->misses = v[HO_RSHM_MISSES];
    ri->evictions = v[HO_RSHM_EVICTIONS];
    ri->writebacks = v[HO_RSHM_WRITEBACKS];
    ri->bytes_h2d = v[HO_RSHM_BYTES_H2D];
    ri->bytes_d2h = v[HO_RSHM_BYTES_D2H];
    ri->stall_us = (double)v[HO_RSHM_STALL_NS] / 1e3;
    ri->host_bytes = v[HO_RSHM_HOST_BYTES];
    ri->prefetches = v[HO_RSHM_PREFETCHES];
    ri->bytes_flash = v[HO_RSHM_BYTES_FLASH];
    ri->host_flash_bytes = v[HO_RSHM_HOST_FLASH_BYTES];
}

void srv_handle_regions(srv_daemon *d, srv_conn *c, uint64_t rid)
{
    bool all = srv_authz_is_admin(&d->authz, c->uid, c->gid);
    size_t n = d->n_regions;
    Hyperoffload__RegionInfo *ri = ho_calloc(n, sizeof(*ri));
    Hyperoffload__RegionInfo **ps = ho_calloc(n, sizeof(*ps));
    if (!ri || !ps) {
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
        HO_FREE_ALL(ri, ps);
        return;
    }
    size_t i = 0;
    for (srv_region *g = d->regions; g && i < n; g = g->next) {
        if (!all && g->uid != c->uid)
            continue;
        const ho_region_shm *h = header(d, g);
        if (!h)
            continue;
        fill(g, h, &ri[i]);
        ps[i] = &ri[i];
        i++;
    }
    Hyperoffload__RegionsReply rr = HYPEROFFLOAD__REGIONS_REPLY__INIT;
    rr.n_regions = i;
    rr.regions = ps;
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_REGIONS_REPLY, &rr,
                   NULL, 0);
    HO_FREE_ALL(ri, ps);
}

void srv_residency_session_gone(srv_daemon *d, srv_session *s)
{
    for (srv_region *g = d->regions, *nx; g; g = nx) {
        nx = g->next;
        if (g->session_id == s->id)
            region_drop(d, g);
    }
}

void srv_residency_free(srv_daemon *d)
{
    while (d->regions)
        region_drop(d, d->regions);
}
