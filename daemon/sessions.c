/*
 * daemon/sessions.c - sessions, arenas, extents and moves between DDR and
 * flash (see sessions.h).
 */
#include "daemon/sessions.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/connection.h"
#include "daemon/links.h"
#include "daemon/list.h"
#include "daemon/log.h"
#include "proto/errfmt.h"

/* ------------------------------------------------------------ quotas */

uint64_t srv_subject_usage(srv_daemon *d, srv_subject_kind kind,
                           uint32_t uid, const char *job, srv_tier tier)
{
    uint64_t sum = 0;
    for (srv_session *s = d->sessions; s; s = s->next) {
        if (kind == SRV_SUBJECT_UID ? s->uid != uid
                                    : strcmp(s->job, job ? job : "") != 0)
            continue;
        sum += tier == SRV_TIER_DDR     ? s->usage.ddr
               : tier == SRV_TIER_FLASH ? s->usage.flash
                                        : s->usage.hbm;
    }
    return sum;
}

int srv_quota_uses(srv_daemon *d, uint32_t uid, const char *job,
                   srv_tier tier, srv_quota_use ret_uses[2])
{
    int n = 0;
    for (int k = 0; k < 2; k++) {
        srv_subject_kind kind = k ? SRV_SUBJECT_JOB : SRV_SUBJECT_UID;
        if (kind == SRV_SUBJECT_JOB && (!job || !*job))
            continue;
        uint64_t limit = srv_quota_limit(d->quota, kind, uid, job, tier);
        if (!limit)
            continue;
        ret_uses[n].kind = kind;
        ret_uses[n].limit = limit;
        ret_uses[n].used = srv_subject_usage(d, kind, uid, job, tier);
        n++;
    }
    return n;
}

int srv_quota_check(srv_daemon *d, uint32_t uid, const char *job,
                    srv_tier tier, uint64_t more, char *err, size_t errlen)
{
    srv_quota_use uses[2];
    int n = srv_quota_uses(d, uid, job, tier, uses);
    for (int k = 0; k < n; k++) {
        uint64_t limit = uses[k].limit, used = uses[k].used;
        if (more > limit || used > limit - more) {
            char a[32], b[32], c[32], who[SRV_JOB_MAX + 16];
            d->counters.quota_refusals[tier & 3]++;
            srv_quota_subject_name(uses[k].kind, uid, job, who, sizeof(who));
            return ho_errf(err, errlen, HO_E_QUOTA, "%s more of %s would "
                           "exceed the %s quota of %s (limit %s, %s in use)",
                           ho_size_format(more, a, sizeof(a)),
                           srv_tier_name(tier), srv_tier_name(tier), who,
                           ho_size_format(limit, b, sizeof(b)),
                           ho_size_format(used, c, sizeof(c)));
        }
    }
    return 0;
}

/* ------------------------------------------------------------ arenas */

void srv_arena_unref(srv_daemon *d, srv_arena_ref *r)
{
    if (--r->refs > 0)
        return;
    SRV_LIST_UNLINK(d->arenas, r);
    srv_debug("arena %" PRIu64 " destroyed", tier_arena_id(r->arena));
    tier_arena_free(r->arena);
    free(r);
}

static int arena_get(srv_daemon *d, uint32_t uid, const char *job,
                     uint64_t session_id, srv_arena_ref **ret_ref, char *err,
                     size_t errlen)
{
    if (*job) {
        for (srv_arena_ref *r = d->arenas; r; r = r->next)
            if (r->uid == uid && strcmp(r->job, job) == 0) {
                r->refs++;
                *ret_ref = r;
                return 0;
            }
    }
    srv_arena_ref *r = calloc(1, sizeof(*r));
    if (!r)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    char owner[SRV_JOB_MAX + 64], why[256] = "";
    if (*job)
        snprintf(owner, sizeof(owner), "uid %u job %s", uid, job);
    else
        snprintf(owner, sizeof(owner), "session %" PRIu64, session_id);
    r->arena = tier_arena_new(d->ddr, owner, why, sizeof(why));
    if (!r->arena) {
        free(r);
        return ho_errf(err, errlen, -ENOMEM, "cannot create a DDR arena: %s",
                       why[0] ? why : "failed");
    }
    r->uid = uid;
    snprintf(r->job, sizeof(r->job), "%s", job);
    r->refs = 1;
    SRV_LIST_PUSH(d->arenas, r);
    srv_debug("arena %" PRIu64 " created for %s", tier_arena_id(r->arena),
              owner);
    *ret_ref = r;
    return 0;
}

/* ------------------------------------------------------------ sessions */

static bool printable(const char *s, size_t max, bool allow_space)
{
    size_t n = strlen(s);
    if (n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f || (!allow_space && ch == ' '))
            return false;
    }
    return true;
}

/* The HBM part of a RegisterRequest's checks: the quotas of uid and job,
 * then the device's free HBM. */
static int check_hbm_budget(srv_daemon *d, srv_conn *c,
                            const Hyperoffload__RegisterRequest *req,
                            const char *job, char *err, size_t errlen)
{
    char a[32], b[32];
    int rc = srv_quota_check(d, (uint32_t)c->uid, job, SRV_TIER_HBM,
                             req->hbm_budget, err, errlen);
    if (rc < 0)
        return rc;
    const tier_hbm_device *dev =
        tier_hbm_device_get(d->hbm, (uint32_t)req->device);
    uint64_t granted = tier_hbm_granted(d->hbm, (uint32_t)req->device);
    uint64_t avail = dev->capacity - dev->reserve;
    uint64_t free_b = avail > granted ? avail - granted : 0;
    if (req->hbm_budget > free_b)
        return ho_errf(err, errlen, HO_E_BUDGET,
                       "HBM budget of %s (%" PRIu64 " bytes) exceeds the %s "
                       "(%" PRIu64 " bytes) free on device %d (%s)",
                       ho_size_format(req->hbm_budget, a, sizeof(a)),
                       req->hbm_budget, ho_size_format(free_b, b, sizeof(b)),
                       free_b, req->device, dev->name);
    return 0;
}

/* Every check of a RegisterRequest, in the order of sessions.h. */
static int check_register(srv_daemon *d, srv_conn *c,
                          const Hyperoffload__RegisterRequest *req,
                          const char *job, const char *name, char *err,
                          size_t errlen)
{
    char a[32];
    if (c->session)
        return ho_errf(err, errlen, HO_E_ALREADY,
                       "this connection already has session %" PRIu64,
                       c->session->id);
    if (*job && !srv_quota_job_valid(job))
        return ho_errf(err, errlen, -EINVAL, "job name '%.40s' is not 1..%d "
                       "printable characters without spaces", job,
                       SRV_JOB_MAX);
    if (!printable(name, SRV_MAX_NAME, true))
        return ho_errf(err, errlen, -EINVAL, "client name is longer than %d "
                       "bytes or has control characters", SRV_MAX_NAME);
    uint32_t n_dev = tier_hbm_count(d->hbm);
    if (req->device < -1 ||
        (req->device >= 0 && (uint32_t)req->device >= n_dev)) {
        if (n_dev)
            return ho_errf(err, errlen, HO_E_UNKNOWN_DEVICE,
                           "device %d is not configured (devices 0..%u, or "
                           "-1 for none)", req->device, n_dev - 1);
        return ho_errf(err, errlen, HO_E_UNKNOWN_DEVICE,
                       "device %d is not configured (no devices; use -1)",
                       req->device);
    }
    if (req->device < 0 && req->hbm_budget)
        return ho_errf(err, errlen, HO_E_BUDGET, "an HBM budget of %s needs a "
                       "device (device is -1)",
                       ho_size_format(req->hbm_budget, a, sizeof(a)));
    if (req->hbm_budget)
        return check_hbm_budget(d, c, req, job, err, errlen);
    return 0;
}

/* Take the session's arena and HBM grant.  0, or the code with err and
 * nothing taken. */
static int session_take(srv_daemon *d, srv_session *s,
                        const Hyperoffload__RegisterRequest *req, char *err,
                        size_t errlen)
{
    char a[32];
    int rc = arena_get(d, s->uid, s->job, s->id, &s->arena, err, errlen);
    if (rc < 0 || !req->hbm_budget)
        return rc;
    rc = tier_hbm_grant(d->hbm, (uint32_t)req->device, s->id,
                        req->hbm_budget);
    if (rc < 0) {
        srv_arena_unref(d, s->arena);
        return ho_errf(err, errlen, rc, "HBM budget of %s cannot be granted "
                       "on device %d: %s",
                       ho_size_format(req->hbm_budget, a, sizeof(a)),
                       req->device, ho_strerror(rc));
    }
    s->hbm_granted = req->hbm_budget;
    s->usage.hbm = req->hbm_budget;
    return 0;
}

int srv_session_register(srv_daemon *d, srv_conn *c,
                         const Hyperoffload__RegisterRequest *req,
                         srv_session **ret_s, char *err, size_t errlen)
{
    char a[32];
    const char *job = req->job ? req->job : "";
    const char *name = req->client_name && *req->client_name
                           ? req->client_name : c->name;
    int rc = check_register(d, c, req, job, name, err, errlen);
    if (rc < 0)
        return rc;
    srv_session *s = calloc(1, sizeof(*s));
    if (!s)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    s->id = ++d->next_session_id;
    s->conn = c;
    snprintf(s->name, sizeof(s->name), "%s", name);
    snprintf(s->job, sizeof(s->job), "%s", job);
    s->uid = (uint32_t)c->uid;
    s->gid = (uint32_t)c->gid;
    s->pid = (uint32_t)c->pid;
    s->device = req->device;
    s->registered_ms = uv_now(&d->loop);
    rc = session_take(d, s, req, err, errlen);
    if (rc < 0) {
        free(s);
        return rc;
    }
    SRV_LIST_PUSH(d->sessions, s);
    d->n_sessions++;
    c->session = s;
    srv_log_s(SRV_LOG_INFO, s->id, s->job, 0, "session %" PRIu64
              " registered: '%s' pid %u uid %u job '%s' device %d hbm %s, "
              "arena %" PRIu64,
              s->id, s->name, s->pid, s->uid, s->job, s->device,
              ho_size_format(s->hbm_granted, a, sizeof(a)),
              tier_arena_id(s->arena->arena));
    *ret_s = s;
    return 0;
}

/* Give an idle (or orphaned, after its move) extent's tier resources
 * back. */
static void release_resources(srv_daemon *d, srv_extent *x)
{
    srv_flash_release(d, x);
    int rc = tier_arena_release(x->arena->arena, x->off, x->len);
    if (rc < 0)
        srv_err("extent %" PRIu64 ": arena release failed: %s (bug)", x->id,
                ho_strerror(rc));
}

typedef struct dispose_job {
    srv_extent *x;           /* owned until released */
    uint64_t conn_id;        /* FreeRequest to answer when done, 0 none */
    uint64_t request_id;
} dispose_job;

static void dispose_dropped(srv_daemon *d, void *ctx, int rc, double us)
{
    dispose_job *j = ctx;
    srv_extent *x = j->x;
    srv_arena_ref *r = x->arena;
    (void)us;
    if (rc < 0)
        srv_warn("extent %" PRIu64 ": dropping its pages on a worker "
                 "failed (%s); releasing them on the loop", x->id,
                 strerror(-rc));
    release_resources(d, x); /* the move's reference keeps the arena */
    if (j->conn_id) {
        srv_conn *c = srv_conn_find(d, j->conn_id);
        if (c && c->state == SRV_CONN_READY)
            srv_reply_ok(c, j->request_id);
    }
    free(x);
    free(j);
    srv_arena_unref(d, r);
}

/* Free an extent that nobody references any more (its id is gone from the
 * session and the id map) and the struct itself.  Dropping the pages of a
 * large DDR-resident range costs tens of milliseconds (munlock + punch), so
 * that part runs on a worker (SRV_MOVE_DROP): the pool is uncharged at
 * once, the range stays reserved in its arena until the pages are gone,
 * and then the FreeRequest `request_id` of connection `conn_id` (0: none)
 * is answered.  Returns 1 when the release went to a worker (the reply
 * follows), 0 when it was done here (small extents, ranges already out of
 * DDR, or no worker could be started). */
static int dispose_extent(srv_daemon *d, srv_extent *x, uint64_t conn_id,
                          uint64_t request_id)
{
    tier_arena *a = x->arena->arena;
    dispose_job *j;
    if (x->len >= SRV_ASYNC_RELEASE_MIN &&
        tier_arena_is_evicted(a, x->off, x->len) == 0 &&
        (j = malloc(sizeof(*j))) != NULL) {
        *j = (dispose_job){x, conn_id, request_id};
        if (srv_extent_start_move(d, x, SRV_MOVE_DROP, dispose_dropped,
                                  j) == 0) {
            srv_flash_release(d, x);
            int rc = tier_arena_mark_evicted(a, x->off, x->len);
            if (rc < 0)
                srv_err("extent %" PRIu64 ": uncharge failed: %s (bug)",
                        x->id, ho_strerror(rc));
            return 1;
        }
        free(j);
    }
    release_resources(d, x);
    free(x);
    return 0;
}

void srv_extent_free_orphan(srv_daemon *d, srv_extent *x)
{
    dispose_extent(d, x, 0, 0);
}

void srv_session_drop(srv_daemon *d, srv_session *s)
{
    uint64_t freed = 0, orphaned = 0;
    /* The replay first: it stops watching the control region and leaves
     * its host copies to the loop below. */
    /* Copies it was pacing on the node's links are over (a client
     * killed mid-copy leaves its slots claimed). */
    srv_links_release_owner(d->links, s->id);
    if (d->on_session_drop)
        d->on_session_drop(d, s);
    srv_extent *x = s->extents;
    while (x) {
        srv_extent *next = x->next;
        srv_idmap_del(&d->extents, x->id);
        if (x->state == SRV_EXT_SPILLING || x->state == SRV_EXT_FILLING) {
            x->owner = NULL;   /* the move job frees it */
            x->prev = x->next = NULL;
            orphaned++;
        } else {
            dispose_extent(d, x, 0, 0);
            freed++;
        }
        x = next;
    }
    s->extents = NULL;
    if (s->hbm_granted)
        tier_hbm_release(d->hbm, (uint32_t)s->device, s->id);
    srv_arena_unref(d, s->arena);
    SRV_LIST_UNLINK(d->sessions, s);
    d->n_sessions--;
    srv_log_s(SRV_LOG_INFO, s->id, s->job, 0, "session %" PRIu64
              " ('%s', pid %u) dropped: %" PRIu64 " extents freed, %" PRIu64
              " freed when their move ends", s->id, s->name, s->pid, freed,
              orphaned);
    srv_job_totals *jt = srv_count_job(&d->counters, s->job);
    jt->sessions++;
    jt->alloc_bytes += s->alloc_bytes;
    if (s->conn)
        s->conn->session = NULL;
    free(s);
}

/* ------------------------------------------------------------ extents */

/* The checks of an allocation: size, pool capacity, extent count, and for
 * a resident one the DDR quotas.  *ret_len is the aligned length. */
static int check_alloc(srv_daemon *d, srv_session *s, uint64_t bytes,
                       bool resident, uint64_t *ret_len, char *err,
                       size_t errlen)
{
    char a[32], b[32];
    uint64_t cap = d->cfg.ddr_capacity, align = d->cfg.ddr_alignment;
    if (bytes == 0)
        return ho_errf(err, errlen, HO_E_INVALID_SIZE, "alloc of 0 bytes: the "
                       "size must be positive");
    if (bytes > cap)
        return ho_errf(err, errlen, HO_E_TOO_LARGE,
                       "alloc of %s (%" PRIu64 " bytes) exceeds the DDR pool "
                       "capacity %s",
                       ho_size_format(bytes, a, sizeof(a)), bytes,
                       ho_size_format(cap, b, sizeof(b)));
    if (s->usage.extents >= d->cfg.max_extents)
        return ho_errf(err, errlen, HO_E_QUOTA,
                       "the session holds %" PRIu64 " extents, the limit "
                       "(max_extents_per_session %u)",
                       s->usage.extents, d->cfg.max_extents);
    uint64_t len = (bytes + align - 1) & ~(align - 1);
    int rc = resident ? srv_quota_check(d, s->uid, s->job, SRV_TIER_DDR,
                                        len, err, errlen)
                      : 0;
    if (rc == 0)
        *ret_len = len;
    return rc;
}

/* Take the arena range: allocated (and populated) for a plain extent;
 * reserved, and charged when resident, for a host copy. */
static int take_range(srv_session *s, uint64_t bytes, bool resident,
                      bool staged, uint64_t *ret_off, uint64_t *ret_got)
{
    tier_arena *a = s->arena->arena;
    if (resident && !staged)
        return tier_arena_alloc(a, bytes, ret_off, ret_got);
    /* Host copies of a replay are charged but not populated (or locked)
     * here: populating gigabytes would stall the loop; the client's first
     * copy faults the pages in. */
    int rc = tier_arena_reserve(a, bytes, ret_off, ret_got);
    if (rc == 0 && resident) {
        rc = tier_arena_restore_unlocked(a, *ret_off, *ret_got);
        if (rc < 0)
            tier_arena_release(a, *ret_off, *ret_got);
    }
    return rc;
}

/* The sentence for take_range's failure rc on `len` bytes. */
static int range_refused(srv_daemon *d, srv_session *s, int rc, uint64_t len,
                         bool resident, char *err, size_t errlen)
{
    char a[32], b[32], c[32], e[32];
    tier_ddr_stats st;
    tier_ddr_stats_get(d->ddr, &st);
    ho_size_format(len, a, sizeof(a));
    if (rc == HO_E_TIER_FULL && resident && st.capacity - st.used < len)
        return ho_errf(err, errlen, rc, "no room for %s in the DDR pool (%s "
                       "free of %s, largest free block %s)", a,
                       ho_size_format(st.capacity - st.used, b, sizeof(b)),
                       ho_size_format(st.capacity, c, sizeof(c)),
                       ho_size_format(st.largest_free, e, sizeof(e)));
    if (rc == HO_E_TIER_FULL)
        return ho_errf(err, errlen, rc, "no room for %s in the session's "
                       "arena (its offset space of %s is taken)", a,
                       ho_size_format(tier_arena_map_size(s->arena->arena), b,
                                      sizeof(b)));
    return ho_errf(err, errlen, rc, "alloc of %s failed: %s", a,
                   ho_strerror(rc));
}

static int extent_alloc(srv_daemon *d, srv_session *s, uint64_t bytes,
                        bool resident, bool staged, srv_extent **ret_x,
                        char *err, size_t errlen)
{
    uint64_t len = 0;
    int rc = check_alloc(d, s, bytes, resident, &len, err, errlen);
    if (rc < 0)
        return rc;
    srv_extent *x = calloc(1, sizeof(*x));
    if (!x)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    uint64_t off = 0, got = 0;
    rc = take_range(s, bytes, resident, staged, &off, &got);
    if (rc < 0) {
        free(x);
        return range_refused(d, s, rc, len, resident, err, errlen);
    }
    x->id = ++d->next_extent_id;
    if (srv_idmap_put(&d->extents, x->id, x) < 0) {
        tier_arena_release(s->arena->arena, off, got);
        free(x);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    x->owner = s;
    x->arena = s->arena;
    x->off = off;
    x->len = got;
    x->state = resident ? SRV_EXT_DDR : SRV_EXT_ABSENT;
    x->staged = staged;
    SRV_LIST_PUSH(s->extents, x);
    if (resident)
        s->usage.ddr += got;
    s->usage.extents++;
    *ret_x = x;
    return 0;
}

int srv_extent_alloc(srv_daemon *d, srv_session *s, uint64_t bytes,
                     srv_extent **ret_x, char *err, size_t errlen)
{
    int rc = extent_alloc(d, s, bytes, true, false, ret_x, err, errlen);
    s->alloc_bytes += rc == 0 ? (*ret_x)->len : 0;
    return rc;
}

int srv_extent_alloc_staged(srv_daemon *d, srv_session *s, uint64_t bytes,
                            bool resident, srv_extent **ret_x, char *err,
                            size_t errlen)
{
    return extent_alloc(d, s, bytes, resident, true, ret_x, err, errlen);
}

void srv_extent_discard(srv_daemon *d, srv_session *s, srv_extent *x)
{
    srv_idmap_del(&d->extents, x->id);
    SRV_LIST_UNLINK(s->extents, x);
    s->usage.extents--;
    /* DDR is charged in every state but FLASH and ABSENT (a move charges
     * both tiers while it runs); flash while a range is held. */
    if (x->state != SRV_EXT_FLASH && x->state != SRV_EXT_ABSENT)
        s->usage.ddr -= x->len;
    if (x->flash_held)
        s->usage.flash -= x->len;
    if (x->state == SRV_EXT_SPILLING || x->state == SRV_EXT_FILLING) {
        x->owner = NULL;   /* the move frees it when it completes */
        return;
    }
    release_resources(d, x);
    free(x);
}

/* Extent `id` of session s as a client's Free or Move may touch it:
 * HO_E_UNKNOWN_EXTENT (not the session's), HO_E_STATE (a host copy of the
 * replay: `staged_note` says who handles it), HO_E_BUSY (move in
 * flight). */
static int client_extent(srv_daemon *d, srv_session *s, uint64_t id,
                         const char *staged_note, srv_extent **ret_x,
                         char *err, size_t errlen)
{
    srv_extent *x = srv_idmap_get(&d->extents, id);
    if (!x || x->owner != s)
        return ho_errf(err, errlen, HO_E_UNKNOWN_EXTENT, "extent %" PRIu64
                       " does not belong to this session", id);
    if (x->staged)
        return ho_errf(err, errlen, HO_E_STATE, "extent %" PRIu64 " is a "
                       "host copy of the session's replay; %s", id,
                       staged_note);
    if (x->state == SRV_EXT_SPILLING || x->state == SRV_EXT_FILLING)
        return ho_errf(err, errlen, HO_E_BUSY,
                       "extent %" PRIu64 " has a move in flight", id);
    *ret_x = x;
    return 0;
}

int srv_extent_free_by_id(srv_daemon *d, srv_session *s, uint64_t id,
                          uint64_t request_id, char *err, size_t errlen)
{
    srv_extent *x = NULL;
    int rc = client_extent(d, s, id, "it is freed with the replay", &x, err,
                           errlen);
    if (rc < 0)
        return rc;
    if (x->state == SRV_EXT_DDR)
        s->usage.ddr -= x->len;
    if (x->flash_held)
        s->usage.flash -= x->len;
    s->usage.extents--;
    srv_idmap_del(&d->extents, id);
    SRV_LIST_UNLINK(s->extents, x);
    return dispose_extent(d, x, s->conn ? s->conn->id : 0, request_id);
}

/* ------------------------------------------------------------ moves */

typedef struct move_job {
    srv_extent *x;
    bool spill;
    uint64_t request_id;
    uint64_t t_start;         /* loop clock at start (us), for the log */
} move_job;

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void move_reply(srv_session *s, move_job *j, Hyperoffload__Tier tier,
                       double us)
{
    Hyperoffload__MoveReply mr = HYPEROFFLOAD__MOVE_REPLY__INIT;
    mr.extent_id = j->x->id;
    mr.residency = tier;
    mr.bytes = j->x->len;
    mr.duration_us = us;
    srv_conn_reply(s->conn, j->request_id,
                   HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REPLY, &mr, NULL, 0);
}

/* Release x's flash range, and the owner's usage of it (s, when there is
 * one). */
static void drop_flash(srv_daemon *d, srv_extent *x, srv_session *s)
{
    if (x->flash_held && s)
        s->usage.flash -= x->len;
    srv_flash_release(d, x);
}

/* A move whose session went away during the I/O: free everything (the
 * range is charged in DDR in both directions at this point). */
static void orphan_moved(srv_daemon *d, srv_extent *x, bool spill)
{
    release_resources(d, x);
    tier_arena_release(x->arena->arena, x->off, x->len);
    srv_debug("extent %" PRIu64 " freed after its %s finished", x->id,
              spill ? "spill" : "fill");
    free(x);
}

/* Log and answer a move whose I/O failed; the extent stayed where it
 * was. */
static void move_failed(srv_daemon *d, srv_session *s, const move_job *j,
                        int rc)
{
    const srv_extent *x = j->x;
    const char *what = j->spill ? "spill" : "fill";
    srv_warn("%s of extent %" PRIu64 " %s %s failed: %s", what, x->id,
             j->spill ? "to" : "from", d->cfg.flash_paths[x->flash_idx],
             ho_strerror(rc));
    srv_reply_error(s->conn, j->request_id, rc,
                    "%s of extent %" PRIu64 " failed: %s; the extent stays "
                    "%s", what, x->id, ho_strerror(rc),
                    j->spill ? "in DDR" : "on flash");
}

/* SPILLING -> FLASH once the pages are uncharged; SPILLING -> DDR when the
 * write failed (the mover left the pages) or the uncharge did. */
static void spill_finished(srv_daemon *d, srv_session *s, move_job *j,
                           int rc, double us)
{
    srv_extent *x = j->x;
    if (rc < 0) {
        drop_flash(d, x, s);
        x->state = SRV_EXT_DDR;
        move_failed(d, s, j, rc);
        return;
    }
    int r = tier_arena_mark_evicted(x->arena->arena, x->off, x->len);
    if (r < 0) {
        srv_err("extent %" PRIu64 ": evict after spill failed: %s (bug)",
                x->id, ho_strerror(r));
        drop_flash(d, x, s);
        x->state = SRV_EXT_DDR;
        srv_reply_error(s->conn, j->request_id, HO_E_INTERNAL,
                        "spill of extent %" PRIu64 " could not release its "
                        "DDR pages: %s", x->id, ho_strerror(r));
        return;
    }
    s->usage.ddr -= x->len;
    x->state = SRV_EXT_FLASH;
    move_reply(s, j, HYPEROFFLOAD__TIER__TIER_FLASH, us);
}

/* FILLING -> DDR (the flash range is let go); FILLING -> FLASH when the
 * read failed (the partly written pages are given back). */
static void fill_finished(srv_daemon *d, srv_session *s, move_job *j, int rc,
                          double us)
{
    srv_extent *x = j->x;
    if (rc == 0) {
        drop_flash(d, x, s);
        x->state = SRV_EXT_DDR;
        move_reply(s, j, HYPEROFFLOAD__TIER__TIER_DDR, us);
        return;
    }
    /* Rare: give the partly written pages back here on the loop. */
    tier_arena_evict(x->arena->arena, x->off, x->len);
    s->usage.ddr -= x->len;
    x->state = SRV_EXT_FLASH;
    move_failed(d, s, j, rc);
}

/* The mover's callback of srv_extent_move. */
static void move_finished(srv_daemon *d, void *ctx, int rc, double us)
{
    uint64_t t0 = now_us();
    move_job *j = ctx;
    srv_extent *x = j->x;
    srv_session *s = x->owner;
    srv_arena_ref *ref = x->arena;   /* the move's reference */
    bool spill = j->spill;

    if (!s)
        orphan_moved(d, x, spill);
    else if (spill)
        spill_finished(d, s, j, rc, us);
    else
        fill_finished(d, s, j, rc, us);
    if (s && rc == 0) {
        char lenbuf[32];
        srv_debug("extent %" PRIu64 ": %s of %s done: %.1f ms of I/O "
                  "(%.2f GB/s), %.1f ms in all, %.2f ms on the loop",
                  x->id, spill ? "spill" : "fill",
                  ho_size_format(x->len, lenbuf, sizeof(lenbuf)), us / 1e3,
                  us > 0 ? (double)x->len / us / 1e3 : 0.0,
                  (double)(t0 - j->t_start) / 1e3,
                  (double)(now_us() - t0) / 1e3);
    }
    free(j);
    srv_arena_unref(d, ref);
}

int srv_extent_start_move(srv_daemon *d, srv_extent *x, srv_move_kind kind,
                          srv_move_cb *cb, void *ctx)
{
    srv_move_args ma = {.kind = kind, .arena = x->arena->arena,
                        .off = x->off, .len = x->len};
    if (kind != SRV_MOVE_DROP) {
        ma.flash = d->flash[x->flash_idx];
        ma.flash_off = x->flash_off;
    }
    int rc = srv_move_start(d, &ma, cb, ctx);
    if (rc == 0)
        x->arena->refs++;
    return rc;
}

/* The sentence for srv_flash_alloc's failure rc, with the tier's room. */
static int flash_refused(srv_daemon *d, const srv_extent *x, int rc,
                         char *err, size_t errlen)
{
    char a[32], b[32], c[32], e[32];
    uint64_t free_b = 0, largest = 0, capacity = 0;
    for (uint32_t i = 0; i < d->n_flash; i++) {
        tier_flash_stats st;
        tier_flash_stats_get(d->flash[i], &st);
        free_b += st.free;
        capacity += st.capacity;
        if (st.largest_free > largest)
            largest = st.largest_free;
    }
    ho_size_format(x->len, a, sizeof(a));
    if (rc == HO_E_TOO_LARGE)
        return ho_errf(err, errlen, rc, "spill of %s exceeds the capacity of "
                       "every flash file", a);
    if (rc == HO_E_TIER_FULL)
        return ho_errf(err, errlen, rc, "no room for %s on the flash tier (%s "
                       "free of %s, largest free block %s)", a,
                       ho_size_format(free_b, b, sizeof(b)),
                       ho_size_format(capacity, c, sizeof(c)),
                       ho_size_format(largest, e, sizeof(e)));
    return ho_errf(err, errlen, rc, "flash allocation failed: %s",
                   ho_strerror(rc));
}

int srv_flash_alloc(srv_daemon *d, srv_extent *x, char *err, size_t errlen)
{
    /* First flash file with room; TIER_FULL wins over TOO_LARGE. */
    bool full = false;
    int other = 0;
    for (uint32_t i = 0; i < d->n_flash; i++) {
        uint64_t off = 0, len = 0;
        int r = tier_flash_alloc(d->flash[i], x->len, &off, &len);
        if (r == 0) {
            x->flash_idx = i;
            x->flash_off = off;
            x->flash_len = len;
            x->flash_held = true;
            return 0;
        }
        if (r == HO_E_TIER_FULL)
            full = true;
        else if (r != HO_E_TOO_LARGE)
            other = r;
    }
    int rc = full ? HO_E_TIER_FULL : other ? other : HO_E_TOO_LARGE;
    return flash_refused(d, x, rc, err, errlen);
}

void srv_flash_release(srv_daemon *d, srv_extent *x)
{
    if (x->flash_held)
        tier_flash_release(d->flash[x->flash_idx], x->flash_off,
                           x->flash_len);
    x->flash_held = false;
}

/* Charge and claim x for a spill: DDR -> SPILLING, a flash range
 * allocated and counted. */
static int prepare_spill(srv_daemon *d, srv_session *s, srv_extent *x,
                         char *err, size_t errlen)
{
    if (x->state != SRV_EXT_DDR)
        return ho_errf(err, errlen, HO_E_STATE, "extent %" PRIu64 " is on "
                       "flash; only an extent in DDR can be spilled", x->id);
    if (d->n_flash == 0)
        return ho_errf(err, errlen, HO_E_UNSUPPORTED,
                       "no flash tier is configured");
    int rc = srv_quota_check(d, s->uid, s->job, SRV_TIER_FLASH, x->len, err,
                             errlen);
    if (rc == 0)
        rc = srv_flash_alloc(d, x, err, errlen);
    if (rc < 0)
        return rc;
    x->state = SRV_EXT_SPILLING;
    s->usage.flash += x->len;
    return 0;
}

/* Charge x for a fill: FLASH -> FILLING, the pool charged (the pages are
 * written, and then locked, by the move on its workers, not populated
 * here on the loop; huge-page arenas take no write(2): they fill through
 * the mapping, populated and locked by restore). */
static int prepare_fill(srv_daemon *d, srv_session *s, srv_extent *x,
                        char *err, size_t errlen)
{
    char a[32], b[32], c[32];
    if (x->state != SRV_EXT_FLASH)
        return ho_errf(err, errlen, HO_E_STATE, "extent %" PRIu64 " is in "
                       "DDR; only a spilled extent can be filled", x->id);
    int rc = srv_quota_check(d, s->uid, s->job, SRV_TIER_DDR, x->len, err,
                             errlen);
    if (rc < 0)
        return rc;
    tier_arena *arena = x->arena->arena;
    if (d->cfg.ddr_hugepages)
        rc = tier_arena_restore(arena, x->off, x->len);
    else
        rc = tier_arena_restore_unlocked(arena, x->off, x->len);
    if (rc < 0) {
        tier_ddr_stats st;
        tier_ddr_stats_get(d->ddr, &st);
        ho_size_format(x->len, a, sizeof(a));
        if (rc == HO_E_TIER_FULL)
            return ho_errf(err, errlen, rc, "no room to fill %s back into "
                           "the DDR pool (%s free of %s)", a,
                           ho_size_format(st.capacity - st.used, b,
                                          sizeof(b)),
                           ho_size_format(st.capacity, c, sizeof(c)));
        return ho_errf(err, errlen, rc, "fill of %s failed: %s", a,
                       ho_strerror(rc));
    }
    x->state = SRV_EXT_FILLING;
    s->usage.ddr += x->len;
    return 0;
}

/* Undo prepare_spill / prepare_fill (the move could not start). */
static void unprepare(srv_daemon *d, srv_session *s, srv_extent *x,
                      bool spill)
{
    if (spill) {
        drop_flash(d, x, s);
        x->state = SRV_EXT_DDR;
    } else {
        tier_arena_evict(x->arena->arena, x->off, x->len);
        s->usage.ddr -= x->len;
        x->state = SRV_EXT_FLASH;
    }
}

int srv_extent_move(srv_daemon *d, srv_session *s, uint64_t id, int dir,
                    uint64_t request_id, char *err, size_t errlen)
{
    if (dir != HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL &&
        dir != HYPEROFFLOAD__MOVE_DIRECTION__MOVE_FILL)
        return ho_errf(err, errlen, -EINVAL, "move direction %d is neither "
                       "MOVE_SPILL (1) nor MOVE_FILL (2)", dir);
    srv_extent *x = NULL;
    int rc = client_extent(d, s, id, "the daemon moves it", &x, err, errlen);
    if (rc < 0)
        return rc;
    bool spill = dir == HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL;
    move_job *j = calloc(1, sizeof(*j));
    if (!j)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    rc = spill ? prepare_spill(d, s, x, err, errlen)
               : prepare_fill(d, s, x, err, errlen);
    if (rc < 0) {
        free(j);
        return rc;
    }
    j->x = x;
    j->spill = spill;
    j->request_id = request_id;
    j->t_start = now_us();
    rc = srv_extent_start_move(d, x, spill ? SRV_MOVE_SPILL : SRV_MOVE_FILL,
                               move_finished, j);
    if (rc < 0) {
        /* Cannot happen with valid arguments; undo. */
        unprepare(d, s, x, spill);
        free(j);
        return ho_errf(err, errlen, HO_E_INTERNAL,
                       "cannot start the move: %s", ho_strerror(rc));
    }
    srv_debug("extent %" PRIu64 ": %s of %" PRIu64 " bytes started", x->id,
              spill ? "spill" : "fill", x->len);
    return 0;
}
