/*
 * daemon/staging.c - replays: StageRequest, the host copies of a plan,
 * the control region shared with the client, the eventfd, and staging
 * host copies to flash when they do not all fit in DDR (docs/runtime.md,
 * proto/control.h).
 *
 * Ownership.  A session owns its plan memo (s->plan) and holds one
 * reference on its installed replay (s->stage).  The replay's host copies
 * are ordinary extents of the session (x->staged), listed in s->extents;
 * the replay points at them while it is attached.  The replay object
 * itself (control region mapping, memfd, eventfd, uv handles) lives until
 * its handles are closed and no reference is left: the session's, and
 * one per staging move in flight.  A move whose session or replay went
 * away finds its extent orphaned (owner NULL) and frees it.
 *
 * Trust.  The control region is writable by the client: the daemon keeps
 * its own copy of every layout figure and of each slot's state, reads only
 * the client's atomics, and bounds-checks every index it reads there.
 */
#include "daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "control.h"
#include "log.h"

#ifdef HO_HAVE_PLANNER
#include "plan.h"

#define SRV_STAGE_PLANNER_MAX 32

struct srv_plan_memo {
    uint64_t hash, budget;
    char planner[SRV_STAGE_PLANNER_MAX];
    plan_trace *trace;      /* owned, finished */
    plan_schedule *sched;   /* owned, bound to trace */
};

typedef struct stage_slot {
    srv_extent *x;          /* the host copy; NULL once detached */
    uint32_t storage;       /* index in the plan's trace */
    uint64_t storage_id;
    uint64_t bytes;         /* the storage's size */
} stage_slot;

struct srv_stage {
    srv_daemon *d;
    srv_session *s;         /* NULL once detached */
    uint32_t refs;          /* session + moves in flight */
    int handles_open;       /* poll + timer until their close callbacks */
    bool polling;
    int memfd, efd;
    ho_ctl_header *hdr;     /* daemon's mapping of the control region */
    uint64_t ctl_size;
    uint32_t n_slots, n_ops;
    uint64_t slots_off, ms_off; /* layout, the daemon's own copy */
    stage_slot *slots;      /* owned, n_slots */
    uint64_t staged_bytes;  /* sum of the slots' aligned lengths */
    uint64_t ddr_limit;
    uint32_t actions, milestones;
    uint64_t signals;       /* eventfd wake-ups seen */
    uv_poll_t poll;
    uv_timer_t timer;
};

static void ebuf(srv_errbuf *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void ebuf(srv_errbuf *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
}

static const char *sz(uint64_t v, char *buf)
{
    return srv_size_format(v, buf, 32);
}

/* ------------------------------------------------------------ plan memo */

static void memo_free(srv_plan_memo *m)
{
    if (!m)
        return;
    plan_schedule_free(m->sched);
    plan_trace_free(m->trace);
    free(m);
}

void srv_stage_remember_plan(srv_daemon *d, srv_session *s,
                             struct plan_trace *trace, const uint8_t *sched,
                             size_t sched_len, uint64_t hash,
                             uint64_t budget, const char *planner)
{
    char err[256] = "";
    srv_plan_memo *m = calloc(1, sizeof(*m));
    if (!m) {
        plan_trace_free(trace);
        goto fail;
    }
    m->trace = trace;
    m->hash = hash;
    m->budget = budget;
    snprintf(m->planner, sizeof(m->planner), "%s", planner);
    int rc = plan_schedule_from_pb(sched, sched_len, &m->sched, err,
                                   sizeof(err));
    if (rc == 0)
        rc = plan_schedule_bind(m->sched, m->trace, err, sizeof(err));
    if (rc < 0) {
        srv_err("session %" PRIu64 ": cannot keep its plan: %s (%s)", s->id,
                ho_strerror(rc), err);
        memo_free(m);
        goto fail;
    }
    memo_free(s->plan);
    s->plan = m;
    return;
fail:
    (void)d;
    memo_free(s->plan);
    s->plan = NULL;
}

/* ------------------------------------------------------------ replay life */

static void stage_free(srv_stage *st)
{
    if (st->hdr)
        munmap(st->hdr, st->ctl_size);
    if (st->memfd >= 0)
        close(st->memfd);
    if (st->efd >= 0)
        close(st->efd);
    free(st->slots);
    free(st);
}

static void stage_maybe_free(srv_stage *st)
{
    if (st->refs == 0 && st->handles_open == 0)
        stage_free(st);
}

static void on_handle_closed(uv_handle_t *h)
{
    srv_stage *st = h->data;
    st->handles_open--;
    stage_maybe_free(st);
}

static void stage_unref(srv_stage *st)
{
    st->refs--;
    stage_maybe_free(st);
}

/* Stop watching the eventfd and forget the session (its host copies stay
 * where they are: the caller frees them). */
static void stage_detach(srv_stage *st)
{
    for (uint32_t i = 0; i < st->n_slots; i++)
        st->slots[i].x = NULL;
    st->s = NULL;
    if (st->handles_open == 2) {
        if (st->polling)
            uv_poll_stop(&st->poll);
        st->polling = false;
        uv_close((uv_handle_t *)&st->poll, on_handle_closed);
        uv_close((uv_handle_t *)&st->timer, on_handle_closed);
    }
    stage_unref(st);
}

/* Discard an installed replay of a live session: its host copies go now
 * (or when their move ends). */
static void stage_remove(srv_daemon *d, srv_session *s)
{
    srv_stage *st = s->stage;
    if (!st)
        return;
    for (uint32_t i = 0; i < st->n_slots; i++)
        if (st->slots[i].x)
            srv_extent_discard(d, s, st->slots[i].x);
    s->stage = NULL;
    stage_detach(st);
}

void srv_stage_session_gone(srv_daemon *d, srv_session *s)
{
    (void)d;
    if (s->stage) {
        srv_stage *st = s->stage;
        s->stage = NULL;
        stage_detach(st);
    }
    memo_free(s->plan);
    s->plan = NULL;
}

/* ------------------------------------------------------------ progress */

static void stage_process(srv_stage *st)
{
    (void)st;
}

static void on_eventfd(uv_poll_t *p, int status, int events)
{
    srv_stage *st = p->data;
    if (status < 0) {
        srv_warn("session %" PRIu64 ": eventfd poll failed: %s",
                 st->s ? st->s->id : 0, uv_strerror(status));
        return;
    }
    if (events & UV_READABLE) {
        uint64_t v;
        /* Non-blocking: EAGAIN when another wake-up already drained it. */
        if (read(st->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
            st->signals += v;
    }
    if (st->s)
        stage_process(st);
}

/* ------------------------------------------------------------ install */

/* Which storages need a host copy: stored by the schedule or initial
 * host.  needed[] has n_storages entries. */
static void needed_storages(const plan_trace *t, const plan_schedule *sc,
                            uint8_t *needed)
{
    for (uint32_t i = 0; i < t->n_storages; i++)
        needed[i] = t->storages[i].initial == PLAN_INIT_HOST;
    for (size_t k = 0; k < sc->n_actions; k++)
        if (sc->actions[k].kind == PLAN_ACT_STORE &&
            sc->actions[k].storage < t->n_storages)
            needed[sc->actions[k].storage] = 1;
}

/* Validate the request's slots against the memo.  On success *ret_slots
 * (owned by the caller) holds one entry per request slot, x unset. */
static int check_slots(srv_daemon *d, srv_session *s,
                       const Hyperoffload__StageRequest *req,
                       const srv_plan_memo *m, stage_slot **ret_slots,
                       uint64_t *ret_total, srv_errbuf *e)
{
    const plan_trace *t = m->trace;
    size_t n = req->n_slots;
    uint64_t align = d->cfg.ddr_alignment;
    if (n > HO_CTL_MAX_SLOTS || n > t->n_storages) {
        ebuf(e, "%zu slots: the plan's trace has %u storages (and a replay "
             "at most %u slots)", n, t->n_storages, HO_CTL_MAX_SLOTS);
        return -E2BIG;
    }
    uint64_t old = s->stage ? s->stage->n_slots : 0;
    if (s->usage.extents - old + n > d->cfg.max_extents) {
        ebuf(e, "%zu host copies would take the session to %" PRIu64
             " extents, above the limit (max_extents_per_session %u)", n,
             s->usage.extents - old + n, d->cfg.max_extents);
        return HO_E_QUOTA;
    }
    uint8_t *needed = calloc(t->n_storages ? t->n_storages : 1, 1);
    uint8_t *seen = calloc(t->n_storages ? t->n_storages : 1, 1);
    stage_slot *slots = calloc(n ? n : 1, sizeof(*slots));
    int rc = 0;
    if (!needed || !seen || !slots) {
        ebuf(e, "out of memory");
        rc = -ENOMEM;
        goto fail;
    }
    needed_storages(t, m->sched, needed);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const Hyperoffload__StageSlot *ss = req->slots[i];
        uint64_t id = ss ? ss->storage_id : 0, bytes = ss ? ss->bytes : 0;
        uint32_t k = plan_trace_find(t, id);
        if (k == PLAN_NONE) {
            ebuf(e, "slots[%zu]: storage %" PRIu64 " is not in the plan's "
                 "trace", i, id);
            rc = -ENOENT;
            goto fail;
        }
        if (!needed[k]) {
            ebuf(e, "slots[%zu]: storage %" PRIu64 " needs no host copy: the "
                 "schedule never stores it and it does not start on host",
                 i, id);
            rc = -EINVAL;
            goto fail;
        }
        if (bytes != t->storages[k].bytes) {
            ebuf(e, "slots[%zu]: storage %" PRIu64 " has %" PRIu64 " bytes "
                 "in the trace, the slot says %" PRIu64, i, id,
                 t->storages[k].bytes, bytes);
            rc = HO_E_INVALID_SIZE;
            goto fail;
        }
        if (seen[k]) {
            ebuf(e, "slots[%zu]: storage %" PRIu64 " is listed twice", i, id);
            rc = -EEXIST;
            goto fail;
        }
        seen[k] = 1;
        if (bytes > d->cfg.ddr_capacity) {
            char a[32], b[32];
            ebuf(e, "slots[%zu]: storage %" PRIu64 " of %s exceeds the DDR "
                 "pool capacity %s", i, id, sz(bytes, a),
                 sz(d->cfg.ddr_capacity, b));
            rc = HO_E_TOO_LARGE;
            goto fail;
        }
        uint64_t len = (bytes + align - 1) & ~(align - 1);
        if (total > UINT64_MAX - len) {
            ebuf(e, "the slots' total size overflows");
            rc = HO_E_INVALID_SIZE;
            goto fail;
        }
        total += len;
        slots[i].storage = k;
        slots[i].storage_id = id;
        slots[i].bytes = bytes;
    }
    for (uint32_t k = 0; k < t->n_storages; k++)
        if (needed[k] && !seen[k]) {
            ebuf(e, "storage %" PRIu64 " needs a host copy (%s) but has no "
                 "slot", t->storages[k].id,
                 t->storages[k].initial == PLAN_INIT_HOST
                     ? "it starts on host" : "the schedule stores it");
            rc = -ENODATA;
            goto fail;
        }
    free(needed);
    free(seen);
    *ret_slots = slots;
    *ret_total = total;
    return 0;
fail:
    free(needed);
    free(seen);
    free(slots);
    return rc;
}

/* Create, size, map and seal the control region; fill the layout. */
static int make_region(srv_stage *st, srv_errbuf *e)
{
    uint64_t hdr = (sizeof(ho_ctl_header) + 63) & ~(uint64_t)63;
    uint64_t slots_b = (uint64_t)st->n_slots * sizeof(ho_ctl_slot);
    uint64_t ms_b = ((uint64_t)st->n_ops + 63) / 64 * 8;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    st->slots_off = hdr;
    st->ms_off = (hdr + slots_b + 63) & ~(uint64_t)63;
    st->ctl_size = (st->ms_off + ms_b + page - 1) & ~(page - 1);
    char name[64];
    snprintf(name, sizeof(name), "hyperoffload-control-%" PRIu64,
             st->s->id);
    st->memfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (st->memfd < 0)
        goto sys_fail;
    if (ftruncate(st->memfd, (off_t)st->ctl_size) != 0)
        goto sys_fail;
    /* Fixed size for both sides; the content stays writable. */
    if (fcntl(st->memfd, F_ADD_SEALS,
              F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        goto sys_fail;
    void *p = mmap(NULL, st->ctl_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                   st->memfd, 0);
    if (p == MAP_FAILED)
        goto sys_fail;
    st->hdr = p;
    ho_ctl_header *h = st->hdr;
    h->magic = HO_CTL_MAGIC;
    h->version = HO_CTL_VERSION;
    h->header_bytes = (uint32_t)sizeof(ho_ctl_header);
    h->n_slots = st->n_slots;
    h->n_ops = st->n_ops;
    h->slots_offset = st->slots_off;
    h->milestones_offset = st->ms_off;
    h->total_bytes = st->ctl_size;
    atomic_store(&h->step, 0);
    atomic_store(&h->op, HO_CTL_IDLE);
    atomic_store(&h->urgent, 0);
    return 0;
sys_fail:;
    int rc = -errno;
    ebuf(e, "cannot create the control region (%" PRIu64 " bytes): %s",
         st->ctl_size, strerror(errno));
    return rc;
}

static ho_ctl_slot *ctl_slot(srv_stage *st, uint32_t i)
{
    return (ho_ctl_slot *)((uint8_t *)st->hdr + st->slots_off) + i;
}

static uint64_t *ctl_milestones(srv_stage *st)
{
    return (uint64_t *)(void *)((uint8_t *)st->hdr + st->ms_off);
}

/* Publish the slots' extents and states and the daemon counters. */
static void publish_slots(srv_stage *st)
{
    uint64_t ddr = 0;
    for (uint32_t i = 0; i < st->n_slots; i++) {
        stage_slot *sl = &st->slots[i];
        ho_ctl_slot *cs = ctl_slot(st, i);
        cs->storage_id = sl->storage_id;
        cs->extent_id = sl->x->id;
        cs->offset = sl->x->off;
        cs->length = sl->bytes;
        uint32_t state = sl->x->state == SRV_EXT_DDR ? HO_SLOT_DDR
                                                      : HO_SLOT_ABSENT;
        if (state == HO_SLOT_DDR)
            ddr += sl->x->len;
        atomic_store(&cs->state, state);
        atomic_store(&cs->dropped, 0);
        atomic_store(&cs->version, 0);
    }
    atomic_store(&st->hdr->ddr_bytes, ddr);
    atomic_store(&st->hdr->flash_bytes, 0);
    memset(ctl_milestones(st), 0, ((size_t)st->n_ops + 63) / 64 * 8);
}

/* The DDR the session may hold in host copies: quotas of uid and job and
 * the pool's free space, counting the replaced replay's copies as free. */
static uint64_t daemon_ddr_limit(srv_daemon *d, srv_session *s)
{
    uint64_t old = 0;
    if (s->stage)
        for (uint32_t i = 0; i < s->stage->n_slots; i++) {
            srv_extent *x = s->stage->slots[i].x;
            if (x && x->state != SRV_EXT_FLASH && x->state != SRV_EXT_ABSENT)
                old += x->len;
        }
    tier_ddr_stats st;
    tier_ddr_stats_get(d->ddr, &st);
    uint64_t lim = st.capacity - st.used + old;
    for (int k = 0; k < 2; k++) {
        srv_subject_kind kind = k ? SRV_SUBJECT_JOB : SRV_SUBJECT_UID;
        if (kind == SRV_SUBJECT_JOB && !s->job[0])
            continue;
        uint64_t q = srv_quota_limit(d->quota, kind, s->uid, s->job,
                                     SRV_TIER_DDR);
        if (!q)
            continue;
        uint64_t used = srv_subject_usage(d, kind, s->uid, s->job,
                                          SRV_TIER_DDR);
        used = used > old ? used - old : 0;
        uint64_t room = q > used ? q - used : 0;
        if (room < lim)
            lim = room;
    }
    return lim;
}

static void free_new_slots(srv_daemon *d, srv_session *s, srv_stage *st)
{
    for (uint32_t i = 0; i < st->n_slots; i++)
        if (st->slots[i].x) {
            srv_extent_discard(d, s, st->slots[i].x);
            st->slots[i].x = NULL;
        }
}

/* Allocate the host copies: resident ones charged in DDR, the others
 * reserved only. */
static int alloc_slots(srv_daemon *d, srv_session *s, srv_stage *st,
                       const uint8_t *resident, srv_errbuf *e)
{
    for (uint32_t i = 0; i < st->n_slots; i++) {
        int rc = srv_extent_alloc_staged(d, s, st->slots[i].bytes,
                                         resident[i] != 0, &st->slots[i].x,
                                         e);
        if (rc < 0) {
            free_new_slots(d, s, st);
            return rc;
        }
    }
    return 0;
}

static void reply_stage(srv_conn *c, uint64_t rid, srv_stage *st)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__StageReply sr = HYPEROFFLOAD__STAGE_REPLY__INIT;
    Hyperoffload__StageExtent *ex = calloc(st->n_slots ? st->n_slots : 1,
                                           sizeof(*ex));
    Hyperoffload__StageExtent **exp = calloc(st->n_slots ? st->n_slots : 1,
                                             sizeof(*exp));
    if (!ex || !exp) {
        free(ex);
        free(exp);
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < st->n_slots; i++) {
        hyperoffload__stage_extent__init(&ex[i]);
        ex[i].storage_id = st->slots[i].storage_id;
        ex[i].extent_id = st->slots[i].x->id;
        ex[i].offset = st->slots[i].x->off;
        ex[i].length = st->slots[i].x->len;
        exp[i] = &ex[i];
    }
    sr.n_extents = st->n_slots;
    sr.extents = exp;
    sr.control_size = st->ctl_size;
    sr.ddr_limit = st->ddr_limit;
    sr.staged_bytes = st->staged_bytes;
    sr.stage_actions = st->actions;
    sr.milestones = st->milestones;
    env.request_id = rid;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY;
    env.stage_reply = &sr;
    int fds[2] = {st->memfd, st->efd};
    srv_conn_send_fds(c, &env, fds, 2);
    free(ex);
    free(exp);
}

void srv_handle_stage(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__StageRequest *req)
{
    srv_session *s = c->session;
    srv_errbuf e;
    char a[32], b[32];
    int rc;
    srv_stage *st = NULL;
    stage_slot *slots = NULL;
    uint8_t *resident = NULL;
    uint64_t total = 0;

    const srv_plan_memo *m = s->plan;
    const char *planner = req->planner && *req->planner ? req->planner
                                                        : d->cfg.planner;
    if (!m) {
        srv_reply_error(c, rid, HO_E_NO_PLAN, "session %" PRIu64 " has no "
                        "plan: send PlanRequest first", s->id);
        return;
    }
    if (m->hash != req->trace_hash || m->budget != req->budget ||
        strcmp(m->planner, planner) != 0) {
        srv_reply_error(c, rid, HO_E_NO_PLAN, "the StageRequest names trace "
                        "%016" PRIx64 ", budget %" PRIu64 ", planner "
                        "'%.32s'; the session's most recent plan is trace "
                        "%016" PRIx64 ", budget %" PRIu64 ", planner '%s'",
                        req->trace_hash, req->budget, planner, m->hash,
                        m->budget, m->planner);
        return;
    }
    rc = check_slots(d, s, req, m, &slots, &total, &e);
    if (rc < 0)
        goto fail_reply;

    uint64_t limit = daemon_ddr_limit(d, s);
    if (req->ddr_limit && req->ddr_limit < limit)
        limit = req->ddr_limit;

    st = calloc(1, sizeof(*st));
    resident = calloc(req->n_slots ? req->n_slots : 1, 1);
    if (!st || !resident) {
        ebuf(&e, "out of memory");
        rc = -ENOMEM;
        goto fail_reply;
    }
    st->d = d;
    st->s = s;
    st->memfd = st->efd = -1;
    st->n_slots = (uint32_t)req->n_slots;
    st->n_ops = m->trace->n_ops;
    st->slots = slots;
    slots = NULL;
    st->staged_bytes = total;
    st->ddr_limit = limit;

    /* Everything fits: every host copy lives in DDR, nothing to stage. */
    if (total > limit) {
        ebuf(&e, "the host copies take %s, above the %s the session may "
             "hold in DDR; staging to flash is not available yet",
             sz(total, a), sz(limit, b));
        rc = HO_E_QUOTA;
        goto fail_reply;
    }
    memset(resident, 1, st->n_slots);

    rc = make_region(st, &e);
    if (rc < 0)
        goto fail_reply;
    st->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (st->efd < 0) {
        rc = -errno;
        ebuf(&e, "eventfd: %s", strerror(errno));
        goto fail_reply;
    }
    rc = alloc_slots(d, s, st, resident, &e);
    if (rc < 0 && s->stage) {
        /* Room may be held by the replay this one replaces. */
        stage_remove(d, s);
        rc = alloc_slots(d, s, st, resident, &e);
    }
    if (rc < 0)
        goto fail_reply;
    rc = uv_poll_init(&d->loop, &st->poll, st->efd);
    if (rc < 0) {
        free_new_slots(d, s, st);
        ebuf(&e, "cannot watch the eventfd: %s", uv_strerror(rc));
        rc = HO_E_INTERNAL;
        goto fail_reply;
    }
    uv_timer_init(&d->loop, &st->timer);
    st->poll.data = st;
    st->timer.data = st;
    st->handles_open = 2;
    st->refs = 1;
    rc = uv_poll_start(&st->poll, UV_READABLE, on_eventfd);
    if (rc == 0)
        st->polling = true;
    else
        srv_warn("session %" PRIu64 ": cannot watch its eventfd: %s", s->id,
                 uv_strerror(rc));

    stage_remove(d, s);      /* the previous replay, if any */
    s->stage = st;
    publish_slots(st);
    srv_info("session %" PRIu64 ": replay installed: %u host copies, %s, "
             "DDR limit %s, %u staging actions, %u milestones", s->id,
             st->n_slots, sz(total, a), sz(limit, b), st->actions,
             st->milestones);
    reply_stage(c, rid, st);
    free(resident);
    return;

fail_reply:
    srv_reply_error(c, rid, rc, "%s", e.msg);
    if (st) {
        st->s = NULL;
        stage_free(st);
    }
    free(slots);
    free(resident);
}

bool srv_stage_runtime_info(srv_session *s, Hyperoffload__RuntimeInfo *ri)
{
    srv_stage *st = s->stage;
    if (!st)
        return false;
    ho_ctl_header *h = st->hdr;
    ri->steps = atomic_load_explicit(&h->step, memory_order_relaxed);
    ri->current_op = atomic_load_explicit(&h->op, memory_order_relaxed);
    ri->ops_per_step = st->n_ops;
    ri->h2d_bytes = atomic_load_explicit(&h->h2d_bytes, memory_order_relaxed);
    ri->d2h_bytes = atomic_load_explicit(&h->d2h_bytes, memory_order_relaxed);
    ri->flash_out_bytes = atomic_load_explicit(&h->flash_out_bytes,
                                               memory_order_relaxed);
    ri->flash_in_bytes = atomic_load_explicit(&h->flash_in_bytes,
                                              memory_order_relaxed);
    ri->stall_us = (double)atomic_load_explicit(&h->stall_ns,
                                                memory_order_relaxed) / 1e3;
    ri->exposed_us = (double)atomic_load_explicit(&h->exposed_ns,
                                                  memory_order_relaxed) / 1e3;
    ri->host_copies_ddr = atomic_load_explicit(&h->ddr_bytes,
                                               memory_order_relaxed);
    ri->host_copies_flash = atomic_load_explicit(&h->flash_bytes,
                                                 memory_order_relaxed);
    ri->peak_device_bytes = atomic_load_explicit(&h->peak_device_bytes,
                                                 memory_order_relaxed);
    return true;
}

#else /* !HO_HAVE_PLANNER */

void srv_stage_remember_plan(srv_daemon *d, srv_session *s,
                             struct plan_trace *trace, const uint8_t *sched,
                             size_t sched_len, uint64_t hash,
                             uint64_t budget, const char *planner)
{
    (void)d; (void)s; (void)trace; (void)sched; (void)sched_len;
    (void)hash; (void)budget; (void)planner;
}

void srv_handle_stage(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__StageRequest *req)
{
    (void)d;
    (void)req;
    srv_reply_error(c, rid, HO_E_UNSUPPORTED,
                    "this daemon was built without the planner");
}

void srv_stage_session_gone(srv_daemon *d, srv_session *s)
{
    (void)d;
    (void)s;
}

bool srv_stage_runtime_info(srv_session *s, Hyperoffload__RuntimeInfo *ri)
{
    (void)s;
    (void)ri;
    return false;
}

#endif
