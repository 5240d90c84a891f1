/* daemon/pstore.c - the shared prefix store (see pstore.h). */
#include "daemon/pstore.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/authz.h"
#include "daemon/connection.h"
#include "daemon/list.h"
#include "daemon/log.h"
#include "proto/errfmt.h"
#include "proto/mem.h"

/* The store memory of one (uid, job): an arena of its own (a memfd apart
 * from the sessions' arena), written only through the daemon's mapping;
 * sessions get ro_fd, a read-only open of that memfd (mode 0400), so
 * their mappings of entries are PROT_READ and cannot be made writable. */
struct srv_pgroup {
    srv_arena_ref *arena;        /* identity (uid, job); one reference */
    tier_arena *mem;             /* owned */
    int ro_fd;                   /* owned */
    uint32_t entries;
    srv_pgroup *prev, *next;
};

struct srv_pentry {
    char key[SRV_PSTORE_KEY_MAX + 1];
    srv_arena_ref *arena;        /* = group->arena (lookups per arena) */
    srv_pgroup *group;           /* the memory; one entry counted */
    uint64_t off, len, block_bytes;
    uint64_t data;               /* bytes of blocks (len is rounded) */
    uint32_t refs, ttl_ms;
    uint64_t idle_since_ms;      /* uv_now when refs dropped to 0 */
    uint64_t maps;
    uint64_t publisher;          /* session id */
    srv_pentry *prev, *next;
};

struct srv_pmap {
    srv_pentry *e;
    uint64_t session_id;
    srv_pmap *prev, *next;
};

static uint64_t arena_bytes(const srv_daemon *d, const srv_arena_ref *a)
{
    uint64_t n = 0;
    for (srv_pentry *e = d->pstore.entries; e; e = e->next)
        n += e->arena == a ? e->len : 0;
    return n;
}

static void group_unref(srv_daemon *d, srv_pgroup *g)
{
    if (--g->entries)
        return;
    SRV_LIST_UNLINK(d->pstore.groups, g);
    if (g->ro_fd >= 0)
        close(g->ro_fd);
    tier_arena_free(g->mem);
    srv_arena_unref(d, g->arena);
    free(g);
}

/* The store memory of arena a's (uid, job), made on first use.  NULL with
 * the reason in err. */
static srv_pgroup *group_get(srv_daemon *d, srv_arena_ref *a, char *err,
                             size_t errlen)
{
    for (srv_pgroup *g = d->pstore.groups; g; g = g->next)
        if (g->arena == a)
            return g;
    srv_pgroup *g = calloc(1, sizeof(*g));
    if (!g) {
        ho_errf(err, errlen, -ENOMEM, "out of memory");
        return NULL;
    }
    char owner[SRV_JOB_MAX + 32];
    snprintf(owner, sizeof owner, "store-%u-%s", (unsigned)a->uid, a->job);
    char terr[256] = "";
    g->mem = tier_arena_new(d->ddr, owner, terr, sizeof terr);
    g->ro_fd = -1;
    char path[64];
    int fd = g->mem ? tier_arena_fd(g->mem) : -1;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    /* owner read-only: a peer cannot reopen it writable through
     * /proc/<pid>/fd either */
    if (fd >= 0 && fchmod(fd, S_IRUSR) == 0)
        g->ro_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!g->mem || g->ro_fd < 0) {
        ho_errf(err, errlen, g->mem ? -errno : -ENOMEM, "the prefix store "
                "memory of uid %u job '%s': %s", (unsigned)a->uid, a->job,
                g->mem ? strerror(errno) : terr);
        tier_arena_free(g->mem);
        free(g);
        return NULL;
    }
    g->arena = a;
    a->refs++;
    SRV_LIST_PUSH(d->pstore.groups, g);
    return g;
}

static void entry_free(srv_daemon *d, srv_pentry *e)
{
    SRV_LIST_UNLINK(d->pstore.entries, e);
    d->pstore.bytes -= e->len;
    d->pstore.n_entries--;
    tier_arena_release(e->group->mem, e->off, e->len);
    group_unref(d, e->group);
    free(e);
}

static void on_ttl_timer(uv_timer_t *t);

/* Free idle entries whose TTL has passed, then arm the TTL timer for the
 * next one to expire (so that they go without any other request). */
static void sweep(srv_daemon *d)
{
    uint64_t now = uv_now(&d->loop);
    uint64_t next = UINT64_MAX;
    for (srv_pentry *e = d->pstore.entries, *nx; e; e = nx) {
        nx = e->next;
        if (e->refs)
            continue;
        if (now - e->idle_since_ms >= e->ttl_ms) {
            srv_debug("prefix store: %s expired", e->key);
            d->pstore.expired++;
            entry_free(d, e);
        } else if (e->idle_since_ms + e->ttl_ms - now < next) {
            next = e->idle_since_ms + e->ttl_ms - now;
        }
    }
    uv_timer_t *t = &d->pstore.ttl_timer;
    if (d->finishing)
        return;
    if (!t->loop) {
        uv_timer_init(&d->loop, t);
        uv_unref((uv_handle_t *)t);
        t->data = d;
    }
    if (uv_is_closing((uv_handle_t *)t))
        return;
    if (next == UINT64_MAX)
        uv_timer_stop(t);
    else
        uv_timer_start(t, on_ttl_timer, next, 0);
}

static void on_ttl_timer(uv_timer_t *t)
{
    sweep(t->data);
}

static srv_pentry *find(srv_daemon *d, const srv_arena_ref *a,
                        const char *key)
{
    for (srv_pentry *e = d->pstore.entries; e; e = e->next)
        if (e->arena == a && strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

/* Evict idle entries of arena a, least recently used first, until
 * `more` bytes fit under `limit`.  0 or HO_E_QUOTA. */
static int make_room(srv_daemon *d, srv_arena_ref *a, uint64_t more,
                     uint64_t limit)
{
    for (;;) {
        if (arena_bytes(d, a) + more <= limit)
            return 0;
        srv_pentry *lru = NULL;
        for (srv_pentry *e = d->pstore.entries; e; e = e->next)
            if (e->arena == a && !e->refs &&
                (!lru || e->idle_since_ms < lru->idle_since_ms))
                lru = e;
        if (!lru)
            return HO_E_QUOTA;
        d->pstore.evictions++;
        entry_free(d, lru);
    }
}

/* The store limit of a session's job: SRV_PSTORE_SHARE of the pool, and
 * no more than its DDR quotas leave beside its sessions' own use. */
static uint64_t store_limit(srv_daemon *d, const srv_session *s)
{
    tier_ddr_stats ds;
    tier_ddr_stats_get(d->ddr, &ds);
    uint64_t limit = ds.capacity / SRV_PSTORE_SHARE;
    srv_quota_use uses[2];
    int n = srv_quota_uses(d, s->uid, s->job, SRV_TIER_DDR, uses);
    for (int i = 0; i < n; i++) {
        uint64_t left = uses[i].limit > uses[i].used
                            ? uses[i].limit - uses[i].used : 0;
        if (left < limit)
            limit = left;
    }
    return limit;
}

static int check_key(const char *key, char *err, size_t errlen)
{
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > SRV_PSTORE_KEY_MAX)
        return ho_errf(err, errlen, -EINVAL, "a prefix store key has 1..%d "
                       "bytes", SRV_PSTORE_KEY_MAX);
    return 0;
}

static int publish(srv_daemon *d, srv_session *s,
                   const Hyperoffload__PublishRequest *req, char *err,
                   size_t errlen)
{
    int rc = check_key(req->key, err, errlen);
    if (rc < 0)
        return rc;
    uint64_t bb = req->block_bytes;
    uint64_t length = (uint64_t)req->n_offsets * bb;
    size_t nx = req->n_extent_ids;
    if (nx && nx != req->n_offsets)
        return ho_errf(err, errlen, -EINVAL, "publish names %zu extents for "
                       "%zu offsets", nx, req->n_offsets);
    if (!(bb && req->n_offsets && bb <= SRV_PSTORE_ENTRY_MAX &&
          req->n_offsets <= SRV_PSTORE_ENTRY_MAX / bb))
        return ho_errf(err, errlen, HO_E_INVALID_SIZE, "publish of %zu "
                       "blocks of %" PRIu64 " bytes exceeds the entry limit "
                       "of %" PRIu64 " bytes", req->n_offsets, bb,
                       (uint64_t)SRV_PSTORE_ENTRY_MAX);
    for (size_t i = 0; i < req->n_offsets; i++) {
        uint64_t id = nx ? req->extent_ids[i] : req->extent_id;
        srv_extent *x = srv_idmap_get(&d->extents, id);
        if (!x || x->owner != s)
            return ho_errf(err, errlen, HO_E_UNKNOWN_EXTENT, "extent %"
                           PRIu64 " does not belong to this session", id);
        if (x->state != SRV_EXT_DDR)
            return ho_errf(err, errlen, HO_E_STATE, "extent %" PRIu64
                           " is not in DDR", id);
        if (req->offsets[i] > x->len || bb > x->len - req->offsets[i])
            return ho_errf(err, errlen, HO_E_INVALID_SIZE, "publish: block "
                           "%zu (offset %" PRIu64 ", %" PRIu64 " bytes) is "
                           "outside extent %" PRIu64 " (%" PRIu64 " bytes)",
                           i, req->offsets[i], bb, id, x->len);
    }
    sweep(d);
    if (find(d, s->arena, req->key))
        return ho_errf(err, errlen, -EEXIST, "the prefix store of job '%s' "
                       "already has key %s", s->job, req->key);
    uint64_t limit = store_limit(d, s);
    if (make_room(d, s->arena, length, limit) < 0)
        return ho_errf(err, errlen, HO_E_QUOTA, "the prefix store of uid %u "
                       "job '%s' holds %" PRIu64 " bytes in use; %" PRIu64
                       " more exceed its limit of %" PRIu64 " bytes",
                       (unsigned)s->uid, s->job, arena_bytes(d, s->arena),
                       length, limit);
    srv_pgroup *g = group_get(d, s->arena, err, errlen);
    if (!g)
        return -ENOMEM;
    srv_pentry *e = calloc(1, sizeof(*e));
    if (!e) {
        g->entries++;
        group_unref(d, g);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    g->entries++;
    uint64_t got = 0;
    rc = tier_arena_alloc(g->mem, length, &e->off, &got);
    if (rc < 0) {
        free(e);
        group_unref(d, g);
        return ho_errf(err, errlen, rc, "no DDR for a prefix store entry of "
                       "%" PRIu64 " bytes", length);
    }
    uint8_t *dst = tier_arena_base(g->mem);
    for (size_t i = 0; i < req->n_offsets; i++) {
        const srv_extent *x = srv_idmap_get(
            &d->extents, nx ? req->extent_ids[i] : req->extent_id);
        memcpy(dst + e->off + i * bb, tier_arena_base(x->arena->arena) +
               x->off + req->offsets[i], bb);
    }
    snprintf(e->key, sizeof(e->key), "%s", req->key);
    e->arena = s->arena;
    e->group = g;
    e->len = got;
    e->data = length;
    e->block_bytes = bb;
    e->ttl_ms = req->ttl_ms ? req->ttl_ms : SRV_PSTORE_TTL_MS;
    if (e->ttl_ms > SRV_PSTORE_TTL_MAX_MS)
        e->ttl_ms = SRV_PSTORE_TTL_MAX_MS;
    e->idle_since_ms = uv_now(&d->loop);
    e->publisher = s->id;
    SRV_LIST_PUSH(d->pstore.entries, e);
    d->pstore.bytes += got;
    d->pstore.published_bytes += length;
    d->pstore.n_entries++;
    sweep(d); /* idle from now: the TTL timer counts */
    return 0;
}

void srv_handle_publish(srv_daemon *d, srv_conn *c, uint64_t rid,
                        const Hyperoffload__PublishRequest *req)
{
    char err[SRV_ERR_MAX];
    int rc = publish(d, c->session, req, err, sizeof(err));
    if (rc < 0)
        srv_reply_error(c, rid, rc, "%s", err);
    else
        srv_reply_ok(c, rid);
}

void srv_handle_map_prefix(srv_daemon *d, srv_conn *c, uint64_t rid,
                           const Hyperoffload__MapPrefixRequest *req)
{
    char err[SRV_ERR_MAX];
    srv_session *s = c->session;
    int rc = check_key(req->key, err, sizeof(err));
    if (rc < 0) {
        srv_reply_error(c, rid, rc, "%s", err);
        return;
    }
    sweep(d);
    d->pstore.lookups++;
    /* per arena: another uid or job never finds this entry */
    srv_pentry *e = find(d, s->arena, req->key);
    srv_pmap *m = e && d->pstore.n_maps < SRV_PSTORE_MAPS_MAX
                      ? calloc(1, sizeof(*m)) : NULL;
    if (!e) {
        srv_reply_error(c, rid, -ENOENT, "no prefix store entry %s for uid "
                        "%u job '%s'", req->key, (unsigned)s->uid, s->job);
        return;
    }
    if (!m) {
        srv_reply_error(c, rid, -ENOMEM, "no room for one more prefix store "
                        "reference (%u held)", d->pstore.n_maps);
        return;
    }
    d->pstore.hits++;
    e->refs++;
    e->maps++;
    m->e = e;
    m->session_id = s->id;
    SRV_LIST_PUSH(d->pstore.maps, m);
    d->pstore.n_maps++;
    Hyperoffload__MapPrefixReply mr = HYPEROFFLOAD__MAP_PREFIX_REPLY__INIT;
    mr.arena_id = tier_arena_id(e->group->mem);
    mr.offset = e->off;
    mr.length = e->data;
    mr.block_bytes = e->block_bytes;
    mr.fd_attached = true;
    /* the store memory, read-only (the reply's one descriptor) */
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_MAP_PREFIX_REPLY, &mr,
                   &e->group->ro_fd, 1);
}

static void unmap(srv_daemon *d, srv_pmap *m)
{
    SRV_LIST_UNLINK(d->pstore.maps, m);
    d->pstore.n_maps--;
    if (--m->e->refs == 0)
        m->e->idle_since_ms = uv_now(&d->loop);
    free(m);
}

void srv_handle_unmap_prefix(srv_daemon *d, srv_conn *c, uint64_t rid,
                             const Hyperoffload__UnmapPrefixRequest *req)
{
    for (srv_pmap *m = d->pstore.maps; m; m = m->next)
        if (m->session_id == c->session->id && req->key &&
            strcmp(m->e->key, req->key) == 0) {
            unmap(d, m);
            sweep(d);
            srv_reply_ok(c, rid);
            return;
        }
    srv_reply_error(c, rid, -ENOENT, "this session maps no prefix store "
                    "entry %s", req->key ? req->key : "");
}

void srv_pstore_session_gone(srv_daemon *d, srv_session *s)
{
    for (srv_pmap *m = d->pstore.maps, *nx; m; m = nx) {
        nx = m->next;
        if (m->session_id == s->id)
            unmap(d, m);
    }
    sweep(d);
}

void srv_handle_store(srv_daemon *d, srv_conn *c, uint64_t rid)
{
    sweep(d);
    bool all = srv_authz_is_admin(&d->authz, c->uid, c->gid);
    size_t n = d->pstore.n_entries;
    Hyperoffload__StoreEntry *es = ho_calloc(n, sizeof(*es));
    Hyperoffload__StoreEntry **ps = ho_calloc(n, sizeof(*ps));
    if (!es || !ps) {
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
        HO_FREE_ALL(es, ps);
        return;
    }
    uint64_t now = uv_now(&d->loop);
    size_t i = 0;
    for (srv_pentry *e = d->pstore.entries; e && i < n; e = e->next) {
        if (!all && e->arena->uid != c->uid)
            continue;
        hyperoffload__store_entry__init(&es[i]);
        es[i].key = e->key;
        es[i].uid = e->arena->uid;
        es[i].job = e->arena->job;
        es[i].bytes = e->len;
        es[i].block_bytes = e->block_bytes;
        es[i].refs = e->refs;
        es[i].maps = e->maps;
        es[i].idle_s = e->refs ? 0 : (double)(now - e->idle_since_ms) / 1e3;
        es[i].ttl_ms = e->ttl_ms;
        es[i].publisher_session = e->publisher;
        ps[i] = &es[i];
        i++;
    }
    Hyperoffload__StoreReply sr = HYPEROFFLOAD__STORE_REPLY__INIT;
    sr.n_entries = i;
    sr.entries = ps;
    sr.lookups = d->pstore.lookups;
    sr.hits = d->pstore.hits;
    sr.evictions = d->pstore.evictions;
    sr.expired = d->pstore.expired;
    sr.bytes = d->pstore.bytes;
    sr.published_bytes = d->pstore.published_bytes;
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_STORE_REPLY, &sr, NULL,
                   0);
    HO_FREE_ALL(es, ps);
}

void srv_pstore_free(srv_daemon *d)
{
    while (d->pstore.maps)
        unmap(d, d->pstore.maps);
    while (d->pstore.entries)
        entry_free(d, d->pstore.entries);
}
