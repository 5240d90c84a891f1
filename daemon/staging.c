/*
 * daemon/staging.c - replays: StageRequest, the host copies of a plan,
 * the control region shared with the client, the eventfd, and staging
 * host copies between DDR and flash when they do not all fit in the DDR
 * the session may use (docs/runtime.md, proto/control.h).
 *
 * Ownership.  d->memos owns a reference on each plan memo a session keeps
 * (m->owner; bounded in bytes per session and in total, least recently
 * used dropped first), a session one on its installed replay (s->stage).  A staging-plan job holds a memo
 * reference while it runs on a worker.  The replay's host copies are
 * ordinary extents of the session (x->staged), listed in s->extents; the
 * replay points at them while it is attached.  The replay object itself
 * (control region mapping, memfd, eventfd, uv handles, staging plan) lives
 * until its handles are closed and no reference is left: the session's,
 * and one per move in flight.  A move whose session or replay went away
 * finds its extent orphaned (owner NULL) and frees it.
 *
 * Execution.  The staging plan (planner/staging/stage_plan.c) is a list of
 * events by position (2*op + when) over a step.  The replay keeps a cursor
 * (step, event); whenever the client signals the eventfd (at milestone ops, or
 * when it waits for a slot: `urgent`), and on a timer while work is
 * pending, the loop reads the client's step and op, applies the events
 * that are due (each sets a slot's target: in DDR, out, written to flash)
 * and reconciles the slots whose target differs from where they are:
 * evictions first (they make room), then fills within the DDR limit; the
 * urgent slot before everything, evicting other slots to make room if it
 * must.  Moves run on workers (mover.c); a slot with a move in flight is
 * left alone until the move completes.  Slot states in the region change
 * by compare-and-swap where the client may change them too (DDR <->
 * CLIENT), and every change a client may wait for bumps `seq` and wakes
 * its futex.
 *
 * Trust.  The control region is writable by the client: the daemon keeps
 * its own copy of every layout figure and of each slot's state, reads only
 * the client's atomics (step, op, urgent, version, dropped, and the slot
 * state for its CAS), and bounds-checks every index it reads there.
 */
#include "daemon/staging.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/connection.h"
#include "daemon/list.h"
#include "daemon/log.h"
#include "daemon/mover.h"
#include "daemon/sessions.h"
#include "planner/io/plan_io.h"
#include "planner/plan.h"
#include "planner/staging/stage_plan.h"
#include "proto/control.h"
#include "proto/errfmt.h"
#include "proto/mem.h"

struct srv_plan_memo {
    uint32_t refs;           /* d->memos (while listed) + staging jobs */
    uint64_t hash, budget;
    char planner[SRV_PLANNER_NAME_MAX];
    plan_trace *trace;       /* owned, finished */
    plan_schedule *sched;    /* owned, bound to trace */
    uint64_t bytes;          /* heap of trace + schedule (memo_size) */
    srv_session *owner;      /* NULL once no longer listed */
    srv_plan_memo *prev, *next; /* d->memos, most recently used first */
};

typedef struct stage_slot {
    srv_extent *x;           /* the host copy; NULL once detached */
    uint32_t storage;        /* index in the plan's trace */
    uint64_t storage_id;
    uint64_t bytes;          /* the storage's size */
    bool boundary;           /* starts on host: its data crosses steps */
    /* the plan's wish at the cursor */
    bool target_in;
    bool noread;             /* the last IN was an ALLOC: no data needed
                                (while the version is still alloc_ver) */
    uint64_t alloc_ver;
    bool want_write;         /* a WRITE is due */
    bool keep;               /* the last OUT keeps the data (true until
                                the plan says otherwise) */
    uint64_t evict_ver;      /* slot version when that OUT was applied */
    /* runtime */
    bool forced_out;         /* evict to make room for an urgent slot */
    bool busy;               /* a move in flight */
    bool queued;             /* in the work list */
    bool flash_valid;        /* the flash range holds version flash_ver */
    uint64_t flash_ver;
} stage_slot;

struct srv_stage {
    srv_daemon *d;
    srv_session *s;          /* NULL once detached */
    uint64_t session_id;
    uint32_t refs;           /* session + moves in flight */
    int handles_open;        /* poll + timer until their close callbacks */
    bool polling, timer_on;
    int memfd, efd;
    ho_ctl_header *hdr;      /* daemon's mapping of the control region */
    uint64_t ctl_size;
    uint32_t n_slots, n_ops;
    uint64_t slots_off, ms_off; /* layout, the daemon's own copy */
    stage_slot *slots;       /* owned, n_slots */
    plan_staging *plan;      /* owned; NULL when nothing is staged */
    uint64_t staged_bytes;   /* sum of the slots' aligned lengths */
    uint64_t ddr_limit;
    uint64_t charged;        /* bytes of slots charged in DDR */
    uint64_t leaving;        /* of which evictions in flight */
    uint64_t on_flash;       /* bytes of slots whose data is on flash only */
    uint64_t cur_step;       /* cursor: events of steps < cur_step and */
    uint32_t cur_ev;         /*   plan->events[< cur_ev] are applied */
    uint32_t *work;          /* slots to reconcile (owned, n_slots) */
    uint32_t n_work;
    uint32_t moves;          /* in flight */
    uint32_t victim_at;      /* round-robin start of the victim scan */
    bool warned_flash;       /* logged that flash is full */
    char flash_why[160];     /* the last refusal of a flash range */
    uint64_t need, min_limit; /* its DDR reservation's ask (s->ddr_need,
                                 s->ddr_min while installed) */
    /* the client's wait for its urgent slot ([ddr] stage_wait) */
    uint32_t wait_slot;      /* UINT32_MAX: none */
    uint64_t wait_since_ms;  /* uv_now when the wait began */
    bool wait_failed;        /* reported in the region */
    /* re-planning for a new limit (or flash share) */
    srv_plan_memo *memo;     /* reference: the plan's trace and schedule */
    bool replanning;         /* a staging plan is being made */
    bool replan_again;       /* the limit changed again meanwhile */
    uint64_t planned_limit;  /* the limit st->plan was made for (0: none:
                                everything fitted) */
    double planned_share;    /* the flash share st->plan was made for (0:
                                none) */
    bool catching_up;        /* swap_plan applies the events already due:
                                ALLOC and EVICT as if their data mattered */
    int blocked_rc;          /* why the urgent slot did not come in */
    char blocked[384];       /*   last time (a sentence) */
    /* statistics */
    uint64_t signals, urgents, fills, spills, writes, drops;
    uv_poll_t poll;
    uv_timer_t timer;
};

/* The job of a replay's session, for the log's HO_JOB= (NULL once the
 * replay is detached from its session). */
#define STAGE_JOB(st) ((st)->s ? (st)->s->job : NULL)


/* ------------------------------------------------------------ plan memo */

static void memo_unref(srv_plan_memo *m)
{
    if (!m || --m->refs > 0)
        return;
    plan_schedule_free(m->sched);
    plan_trace_free(m->trace);
    free(m);
}

/* Heap bytes a memo holds: the trace's arrays (and its id index, about
 * two words a storage), the schedule's, the memo itself. */
static uint64_t memo_size(const srv_plan_memo *m)
{
    const plan_trace *t = m->trace;
    const plan_schedule *c = m->sched;
    uint64_t b = sizeof(*m) + sizeof(*t) + sizeof(*c);
    b += (uint64_t)t->cap_storages * sizeof(plan_storage);
    b += (uint64_t)t->cap_ops * sizeof(plan_op);
    b += t->cap_refs * sizeof(uint32_t);
    b += t->names_cap;
    b += ((uint64_t)t->n_storages + 1) * sizeof(uint32_t);
    b += t->n_refs * sizeof(plan_access);
    b += (uint64_t)t->n_storages * 4 * sizeof(uint64_t);
    b += c->cap_actions * sizeof(plan_action);
    b += c->cap_homes * sizeof(plan_home_entry);
    return b;
}

/* Take m off d->memos (and its session's count) and drop the list's
 * reference. */
static void memo_unlist(srv_daemon *d, srv_plan_memo *m)
{
    SRV_LRU_UNLINK(d->memos, d->memos_tail, m);
    d->memo_bytes -= m->bytes;
    d->n_memos--;
    m->owner->plan_bytes -= m->bytes;
    m->owner = NULL;
    memo_unref(m);
}

static void memo_push(srv_daemon *d, srv_session *s, srv_plan_memo *m)
{
    m->owner = s;
    SRV_LRU_PUSH(d->memos, d->memos_tail, m);
    d->memo_bytes += m->bytes;
    d->n_memos++;
    s->plan_bytes += m->bytes;
}

/* Drop the least recently used plans until each session keeps at most
 * retained_per_session bytes (only s is checked unless s is NULL) and all
 * together at most retained_total.  Each drop is counted. */
static void memos_trim(srv_daemon *d, srv_session *s)
{
    const srv_config *cfg = &d->cfg;
    srv_plan_memo *m = d->memos_tail;
    while (m) {
        srv_plan_memo *prev = m->prev;
        srv_session *o = m->owner;
        if ((!s || o == s) && o->plan_bytes > cfg->retained_per_session) {
            d->counters.retained_evictions++;
            memo_unlist(d, m);
        }
        m = prev;
    }
    while (d->memos_tail && d->memo_bytes > cfg->retained_total) {
        d->counters.retained_evictions++;
        memo_unlist(d, d->memos_tail);
    }
}

void srv_stage_trim_plans(srv_daemon *d)
{
    memos_trim(d, NULL);
}

/* The plan of s for (hash, budget, planner), or NULL. */
static srv_plan_memo *memo_find(srv_daemon *d, const srv_session *s,
                                uint64_t hash, uint64_t budget,
                                const char *planner)
{
    for (srv_plan_memo *m = d->memos; m; m = m->next)
        if (m->owner == s && m->hash == hash && m->budget == budget &&
            strcmp(m->planner, planner) == 0)
            return m;
    return NULL;
}

void srv_stage_remember_plan(srv_daemon *d, srv_session *s,
                             struct plan_trace *trace, const uint8_t *sched,
                             size_t sched_len, uint64_t hash,
                             uint64_t budget, const char *planner)
{
    char err[256] = "";
    srv_plan_memo *old = memo_find(d, s, hash, budget, planner);
    if (old)
        memo_unlist(d, old); /* replaced below: not an eviction */
    srv_plan_memo *m = calloc(1, sizeof(*m));
    if (!m) {
        plan_trace_free(trace);
        return;
    }
    m->refs = 1;
    m->trace = trace;
    m->hash = hash;
    m->budget = budget;
    snprintf(m->planner, sizeof(m->planner), "%s", planner);
    int rc = plan_schedule_from_pb(sched, sched_len, &m->sched, err,
                                   sizeof(err));
    if (rc == 0)
        rc = plan_schedule_bind(m->sched, m->trace, err, sizeof(err));
    if (rc < 0) {
        srv_log_s(SRV_LOG_ERR, s->id, s->job, rc, "session %" PRIu64
                  ": cannot keep its plan: %s (%s)", s->id, ho_strerror(rc),
                  err);
        memo_unref(m);
        return;
    }
    m->bytes = memo_size(m);
    if (m->bytes > d->cfg.retained_per_session ||
        m->bytes > d->cfg.retained_total) {
        srv_log_s(SRV_LOG_NOTICE, s->id, s->job, HO_E_NO_PLAN,
                  "session %" PRIu64 ": its plan of %" PRIu64 " bytes is "
                  "not kept for StageRequest (above [planning] "
                  "retained_per_session or retained_total)", s->id,
                  m->bytes);
        d->counters.retained_evictions++;
        memo_unref(m);
        return;
    }
    memo_push(d, s, m);
    memos_trim(d, s);
}

/* ------------------------------------------------------------ replay life */

/* Free the replay object and what it owns.  Accepts NULL; returns NULL. */
static srv_stage *stage_free(srv_stage *st)
{
    if (!st)
        return NULL;
    if (st->hdr)
        munmap(st->hdr, st->ctl_size);
    if (st->memfd >= 0)
        close(st->memfd);
    if (st->efd >= 0)
        close(st->efd);
    plan_staging_free(st->plan);
    memo_unref(st->memo);
    HO_FREE_ALL(st->slots, st->work, st);
    return NULL;
}

/* Free the replay once no reference and no handle is left. */
static void stage_release_if_idle(srv_stage *st)
{
    if (st->refs == 0 && st->handles_open == 0)
        stage_free(st);
}

static void on_handle_closed(uv_handle_t *h)
{
    srv_stage *st = h->data;
    st->handles_open--;
    stage_release_if_idle(st);
}

static void stage_unref(srv_stage *st)
{
    st->refs--;
    stage_release_if_idle(st);
}

static ho_ctl_slot *ctl_slot(srv_stage *st, uint32_t i);
static void wake(srv_stage *st);

/* Tell the client the replay's host copies are no longer maintained
 * (header.revoked, then every slot the client does not hold -> ABSENT),
 * before the caller releases their pages: a client still running finds
 * out at its next slot or copy instead of reading released pages. */
static void revoke_region(srv_stage *st)
{
    if (!st->hdr)
        return;
    atomic_store(&st->hdr->revoked, 1);
    for (uint32_t i = 0; i < st->n_slots; i++) {
        ho_ctl_slot *cs = ctl_slot(st, i);
        uint32_t cur = atomic_load(&cs->state);
        while (cur != HO_SLOT_CLIENT && cur != HO_SLOT_ABSENT &&
               !atomic_compare_exchange_weak(&cs->state, &cur,
                                             HO_SLOT_ABSENT)) {
        }
    }
    wake(st);
}

static void stage_info(const srv_stage *st,
                       Hyperoffload__RuntimeInfo *ret_info);

/* Stop watching the eventfd and forget the session (its host copies stay
 * where they are: the caller frees them); its job's totals keep what the
 * replay did. */
static void stage_detach(srv_stage *st)
{
    revoke_region(st);
    if (st->s && st->hdr) {
        Hyperoffload__RuntimeInfo ri = HYPEROFFLOAD__RUNTIME_INFO__INIT;
        stage_info(st, &ri);
        srv_count_replay_end(&st->d->counters, st->s->job, &ri);
    }
    if (st->plan)
        srv_info("session %" PRIu64 ": replay ended: %" PRIu64 " wake-ups, %"
                 PRIu64 " urgent requests, %" PRIu64 " fills, %" PRIu64
                 " spills, %" PRIu64 " writes, %" PRIu64 " drops",
                 st->session_id, st->signals, st->urgents, st->fills,
                 st->spills, st->writes, st->drops);
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
    if (s->stage) {
        srv_stage *st = s->stage;
        s->stage = NULL;
        stage_detach(st);
    }
    if (s->ddr_need) {
        /* Its reservation goes back to the others. */
        char err[SRV_ERR_MAX];
        s->ddr_need = s->ddr_min = s->ddr_limit = s->ddr_total = 0;
        if (srv_stage_rebalance(d, err, sizeof(err)) < 0)
            srv_warn("session %" PRIu64 " left; DDR reservations not "
                     "re-split: %s", s->id, err);
    }
    srv_plan_memo *m = d->memos;
    while (m) {
        srv_plan_memo *next = m->next;
        if (m->owner == s)
            memo_unlist(d, m);
        m = next;
    }
}

/* ------------------------------------------------------------ region */

static ho_ctl_slot *ctl_slot(srv_stage *st, uint32_t i)
{
    return (ho_ctl_slot *)((uint8_t *)st->hdr + st->slots_off) + i;
}

static uint64_t *ctl_milestones(srv_stage *st)
{
    return (uint64_t *)(void *)((uint8_t *)st->hdr + st->ms_off);
}

/* Bump seq and wake every client thread sleeping on it. */
static void wake(srv_stage *st)
{
    atomic_fetch_add(&st->hdr->seq, 1);
    syscall(SYS_futex, (uint32_t *)&st->hdr->seq, FUTEX_WAKE, INT_MAX, NULL,
            NULL, 0);
}

static void publish_residency(srv_stage *st)
{
    atomic_store_explicit(&st->hdr->ddr_bytes, st->charged,
                          memory_order_relaxed);
    atomic_store_explicit(&st->hdr->flash_bytes, st->on_flash,
                          memory_order_relaxed);
}

static bool charged_state(srv_ext_state s)
{
    return s == SRV_EXT_DDR || s == SRV_EXT_SPILLING || s == SRV_EXT_FILLING;
}

/* Change the daemon's state of slot k, keeping the charge and residency
 * figures (replay and session) in step. */
static void ext_set(srv_stage *st, stage_slot *sl, srv_ext_state ns)
{
    srv_extent *x = sl->x;
    bool was = charged_state(x->state), now = charged_state(ns);
    if (was && !now) {
        st->charged -= x->len;
        st->s->usage.ddr -= x->len;
    } else if (!was && now) {
        st->charged += x->len;
        st->s->usage.ddr += x->len;
    }
    if (x->state == SRV_EXT_FLASH)
        st->on_flash -= x->len;
    if (ns == SRV_EXT_FLASH)
        st->on_flash += x->len;
    x->state = ns;
    publish_residency(st);
}

/* Allocate the slot's flash range once (kept until its data is dropped). */
static int flash_get(srv_stage *st, stage_slot *sl)
{
    srv_daemon *d = st->d;
    srv_extent *x = sl->x;
    if (x->flash_held)
        return 0;
    char err[SRV_ERR_MAX];
    int rc = d->n_flash
                 ? srv_quota_check(d, st->s->uid, st->s->job, SRV_TIER_FLASH,
                                   x->len, err, sizeof(err))
                 : HO_E_UNSUPPORTED;
    if (rc == 0)
        rc = srv_flash_alloc(d, x, err, sizeof(err));
    if (rc < 0) {
        const char *why = rc == HO_E_UNSUPPORTED ? "no flash tier" : err;
        size_t wl = strnlen(why, sizeof(st->flash_why) - 1);
        memcpy(st->flash_why, why, wl);
        st->flash_why[wl] = '\0';
        if (!st->warned_flash)
            srv_log_s(SRV_LOG_WARNING, st->session_id, STAGE_JOB(st), rc,
                      "session %" PRIu64 ": cannot stage a host copy of %"
                      PRIu64 " bytes to flash: %s", st->session_id, x->len,
                      rc == HO_E_UNSUPPORTED ? "no flash tier" : err);
        st->warned_flash = true;
        return rc;
    }
    st->s->usage.flash += x->len;
    st->flash_why[0] = '\0';
    sl->flash_valid = false;
    return 0;
}

static void flash_put(srv_stage *st, stage_slot *sl)
{
    srv_extent *x = sl->x;
    if (!x->flash_held)
        return;
    srv_flash_release(st->d, x);
    st->s->usage.flash -= x->len;
    sl->flash_valid = false;
}

/* Slot k to extent state ns and region state `region` (in that order). */
static void slot_set(srv_stage *st, uint32_t k, srv_ext_state ns,
                     uint32_t region)
{
    ext_set(st, &st->slots[k], ns);
    atomic_store(&ctl_slot(st, k)->state, region);
}

/* ------------------------------------------------------------ moves */

typedef struct stage_mv {
    srv_stage *st;
    uint32_t k;
    srv_extent *x;
    srv_move_kind kind;
    uint64_t ver;            /* slot version when a write started */
    bool to_absent;          /* DROP: the data is dropped, not on flash */
} stage_mv;

static void work_push(srv_stage *st, uint32_t k)
{
    if (st->slots[k].queued)
        return;
    st->slots[k].queued = true;
    st->work[st->n_work++] = k;
}

static void stage_process(srv_stage *st);
static void replan_check(srv_stage *st);
static void flash_recheck(srv_daemon *d);

/* The flash copy of slot k now holds version ver. */
static void flash_written(srv_stage *st, stage_slot *sl, uint64_t ver)
{
    sl->flash_valid = true;
    sl->flash_ver = ver;
    atomic_fetch_add(&st->hdr->flash_out_bytes, sl->x->len);
}

/* An eviction (SPILL or DROP) ended: SPILLING -> FLASH, or -> ABSENT when
 * its data was dropped; SPILLING -> DDR when it failed. */
static void slot_evicted(srv_stage *st, const stage_mv *mv, int rc)
{
    stage_slot *sl = &st->slots[mv->k];
    srv_extent *x = sl->x;
    st->leaving -= x->len;
    if (rc == 0)
        rc = tier_arena_mark_evicted(x->arena->arena, x->off, x->len);
    if (rc < 0) {
        srv_log_s(SRV_LOG_ERR, st->session_id, STAGE_JOB(st), rc,
                  "session %" PRIu64 ": %s of host copy %u failed: %s; it "
                  "stays in DDR", st->session_id,
                  mv->kind == SRV_MOVE_SPILL ? "spill" : "eviction", mv->k,
                  ho_strerror(rc));
        slot_set(st, mv->k, SRV_EXT_DDR, HO_SLOT_DDR);
        return;
    }
    if (mv->kind == SRV_MOVE_SPILL) {
        flash_written(st, sl, mv->ver);
        st->spills++;
    } else {
        st->drops++;
    }
    sl->forced_out = false;
    if (mv->to_absent) {
        flash_put(st, sl);
        slot_set(st, mv->k, SRV_EXT_ABSENT, HO_SLOT_ABSENT);
    } else {
        slot_set(st, mv->k, SRV_EXT_FLASH, HO_SLOT_FLASH);
    }
}

/* A WRITE ended: SPILLING -> DDR (the copy stayed usable throughout). */
static void slot_written(srv_stage *st, const stage_mv *mv, int rc)
{
    stage_slot *sl = &st->slots[mv->k];
    ext_set(st, sl, SRV_EXT_DDR);
    if (rc == 0) {
        flash_written(st, sl, mv->ver);
        st->writes++;
    } else {
        srv_log_s(SRV_LOG_WARNING, st->session_id, STAGE_JOB(st), rc,
                  "session %" PRIu64 ": writing host copy %u to flash "
                  "failed: %s", st->session_id, mv->k, ho_strerror(rc));
    }
}

/* A FILL ended: FILLING -> DDR, or FILLING -> FLASH when it failed. */
static void slot_filled(srv_stage *st, const stage_mv *mv, int rc)
{
    srv_extent *x = st->slots[mv->k].x;
    if (rc == 0) {
        slot_set(st, mv->k, SRV_EXT_DDR, HO_SLOT_DDR);
        atomic_fetch_add(&st->hdr->flash_in_bytes, x->len);
        st->fills++;
        return;
    }
    srv_log_s(SRV_LOG_ERR, st->session_id, STAGE_JOB(st), rc,
              "session %" PRIu64 ": fill of host copy %u failed: %s; it "
              "stays on flash", st->session_id, mv->k, ho_strerror(rc));
    tier_arena_evict(x->arena->arena, x->off, x->len); /* rare: on the loop */
    slot_set(st, mv->k, SRV_EXT_FLASH, HO_SLOT_FLASH);
}

/* The mover's callback of mv_start. */
static void mv_finished(srv_daemon *d, void *ctx, int rc, double us)
{
    stage_mv *mv = ctx;
    srv_stage *st = mv->st;
    srv_extent *x = mv->x;
    srv_arena_ref *r = x->arena;   /* the move's reference */
    (void)us;
    st->moves--;
    if (!x->owner || !st->s || st->slots[mv->k].x != x) {
        /* The replay or its session went away meanwhile. */
        srv_extent_free_orphan(d, x);
        free(mv);
        stage_unref(st);
        srv_arena_unref(d, r);
        return;
    }
    st->slots[mv->k].busy = false;
    switch (mv->kind) {
    case SRV_MOVE_SPILL:
    case SRV_MOVE_DROP:
        slot_evicted(st, mv, rc);
        break;
    case SRV_MOVE_WRITE:
        slot_written(st, mv, rc);
        break;
    case SRV_MOVE_FILL:
        slot_filled(st, mv, rc);
        break;
    }
    wake(st);
    work_push(st, mv->k);
    free(mv);
    stage_process(st);
    stage_unref(st);
    srv_arena_unref(d, r);
}

static int mv_start(srv_stage *st, uint32_t k, srv_move_kind kind,
                    uint64_t ver, bool to_absent)
{
    stage_slot *sl = &st->slots[k];
    srv_extent *x = sl->x;
    stage_mv *mv = calloc(1, sizeof(*mv));
    if (!mv)
        return -ENOMEM;
    *mv = (stage_mv){.st = st, .k = k, .x = x, .kind = kind, .ver = ver,
                     .to_absent = to_absent};
    int rc = srv_extent_start_move(st->d, x, kind, mv_finished, mv);
    if (rc < 0) {
        free(mv);
        return rc;
    }
    srv_debug("session %" PRIu64 ": host copy %u (storage %" PRIu64 "): %s "
              "started (version %" PRIu64 "%s)", st->session_id, k,
              sl->storage_id,
              kind == SRV_MOVE_SPILL ? "spill" : kind == SRV_MOVE_WRITE
              ? "write" : kind == SRV_MOVE_FILL ? "fill" : "drop", ver,
              to_absent ? ", data dropped" : "");
    sl->busy = true;
    st->moves++;
    st->refs++;
    return 0;
}

/* ------------------------------------------------------------ reconcile */

/* The client's urgent slot, or UINT32_MAX. */
static uint32_t urgent_slot(srv_stage *st)
{
    uint32_t u = atomic_load_explicit(&st->hdr->urgent, memory_order_acquire);
    return u >= 1 && u <= st->n_slots ? u - 1 : UINT32_MAX;
}

/* Is slot k's data worth keeping when it leaves DDR now? */
static bool data_live(const stage_slot *sl, const ho_ctl_slot *cs,
                      uint64_t ver)
{
    /* Dead: never written, dropped by the client, or the plan said its
     * next use overwrites it -- unless the client wrote it since (then it
     * deviates from the plan, and the data is kept).  Copies that start
     * on host always keep theirs: the next step starts from them. */
    return ver != 0 && !atomic_load_explicit(&cs->dropped,
                                             memory_order_relaxed) &&
           (sl->keep || sl->boundary || ver != sl->evict_ver);
}

/* Take slot k out of DDR: dropped without I/O when its data is dead or
 * its flash copy current, else spilled.  1 started, 0 must wait (a move
 * slot, the client's copy, flash room). */
static int evict(srv_stage *st, uint32_t k)
{
    stage_slot *sl = &st->slots[k];
    srv_extent *x = sl->x;
    ho_ctl_slot *cs = ctl_slot(st, k);
    if (st->moves >= SRV_STAGE_MOVES_MAX)
        return 0;
    uint64_t ver = atomic_load_explicit(&cs->version, memory_order_acquire);
    bool spill = data_live(sl, cs, ver) &&
                 !(sl->flash_valid && sl->flash_ver == ver);
    if (spill && flash_get(st, sl) < 0)
        return 0;   /* no flash room: stays in DDR, retried later */
    /* Claim the slot unless the client copies to or from it. */
    uint32_t want = HO_SLOT_DDR;
    if (!atomic_compare_exchange_strong(&cs->state, &want,
                                        HO_SLOT_SPILLING)) {
        if (want == HO_SLOT_CLIENT)
            return 0;
        /* The client scribbled over the state: the daemon's view wins. */
        atomic_store(&cs->state, HO_SLOT_SPILLING);
    }
    /* Decide again after the claim: a store may have completed since. */
    ver = atomic_load_explicit(&cs->version, memory_order_acquire);
    bool live = data_live(sl, cs, ver);
    spill = live && !(sl->flash_valid && sl->flash_ver == ver);
    if (spill && flash_get(st, sl) < 0) {
        atomic_store(&cs->state, HO_SLOT_DDR);
        return 0;
    }
    int rc = mv_start(st, k, spill ? SRV_MOVE_SPILL : SRV_MOVE_DROP, ver,
                      !live);
    if (rc < 0) {
        atomic_store(&cs->state, HO_SLOT_DDR);
        srv_log_s(SRV_LOG_ERR, st->session_id, STAGE_JOB(st), rc,
                  "session %" PRIu64 ": cannot start moving host copy %u: %s",
                  st->session_id, k, ho_strerror(rc));
        return 0;
    }
    ext_set(st, sl, SRV_EXT_SPILLING);
    st->leaving += x->len;
    return 1;
}

/* Start evictions of slots other than the urgent slot u until `want`
 * bytes are on their way out of DDR (evictions in flight count).  Slots
 * the plan has out go first, then others (forced out: they come back when
 * there is room again). */
static void make_room(srv_stage *st, uint32_t u, uint64_t want)
{
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < st->n_slots; i++) {
            if (st->leaving >= want)
                return;
            uint32_t k = (st->victim_at + i) % st->n_slots;
            stage_slot *sl = &st->slots[k];
            if (k == u || sl->busy || !sl->x || sl->x->state != SRV_EXT_DDR)
                continue;
            if (pass == 0 && sl->target_in)
                continue;
            if (atomic_load(&ctl_slot(st, k)->state) != HO_SLOT_DDR)
                continue;
            if (sl->target_in)
                sl->forced_out = true;
            if (evict(st, k))
                st->victim_at = k + 1;
            else
                sl->forced_out = false;
        }
    }
}

/* Bytes by which charging `more` would exceed the DDR quota of the
 * session's uid or job (0: within both). */
static uint64_t quota_shortfall(srv_stage *st, uint64_t more)
{
    srv_session *s = st->s;
    srv_quota_use uses[2];
    int n = srv_quota_uses(st->d, s->uid, s->job, SRV_TIER_DDR, uses);
    uint64_t worst = 0;
    for (int k = 0; k < n; k++) {
        uint64_t q = uses[k].limit, used = uses[k].used;
        if (used + more > q && used + more - q > worst)
            worst = used + more - q;
    }
    return worst;
}

/* Why the urgent slot waits (the sentence a failed wait reports). */
static void blocked(srv_stage *st, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void blocked(srv_stage *st, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->blocked, sizeof(st->blocked), fmt, ap);
    va_end(ap);
    st->blocked_rc = rc;
}

/* The urgent slot k does not fit under the session's DDR limit even
 * after make_room: say what holds the room. */
static void blocked_by_limit(srv_stage *st, const srv_extent *x)
{
    char a[32], b[32], c[32], e[32];
    bool flash = st->flash_why[0] != '\0';
    blocked(st, flash && strstr(st->flash_why, "quota") ? HO_E_QUOTA
                                                        : HO_E_TIER_FULL,
            "its %s do not fit in the session's DDR reservation of %s: %s "
            "of host copies are in DDR, %s of them on their way out; %s%s",
            ho_size_format(x->len, a, sizeof(a)),
            ho_size_format(st->ddr_limit, b, sizeof(b)),
            ho_size_format(st->charged, c, sizeof(c)),
            ho_size_format(st->leaving, e, sizeof(e)),
            flash ? "the others cannot be spilled to flash: "
                  : "the others are in use by the client's copies",
            flash ? st->flash_why : "");
}

/* Bring slot k into DDR.  1 done or started, 0 must wait. */
static int bring_in(srv_stage *st, uint32_t k, bool urgent)
{
    stage_slot *sl = &st->slots[k];
    srv_extent *x = sl->x;
    ho_ctl_slot *cs = ctl_slot(st, k);
    char a[32], b[32], c[32];
    if (st->charged + x->len > st->ddr_limit) {
        if (urgent) {
            make_room(st, k, st->charged + x->len - st->ddr_limit);
            blocked_by_limit(st, x);
        }
        return 0;
    }
    /* Other sessions of the uid or job may have taken quota since the
     * limit was set: the quotas hold at every fill.  (Bytes on their way
     * out are still charged, so they count as made room.) */
    uint64_t short_by = quota_shortfall(st, x->len);
    if (short_by) {
        if (urgent) {
            make_room(st, k, short_by);
            blocked(st, HO_E_QUOTA, "bringing its %s in would exceed the "
                    "DDR quota of the session's uid or job by %s",
                    ho_size_format(x->len, a, sizeof(a)),
                    ho_size_format(short_by, b, sizeof(b)));
        }
        return 0;
    }
    /* Read the flash copy unless the plan said the next store overwrites
     * it and nothing was stored since (then it would be needed). */
    bool read = x->state == SRV_EXT_FLASH &&
                (urgent || !sl->noread ||
                 atomic_load_explicit(&cs->version, memory_order_acquire) !=
                     sl->alloc_ver);
    if (read && st->moves >= SRV_STAGE_MOVES_MAX) {
        if (urgent)
            blocked(st, HO_E_BUSY, "the session's %u flash moves in flight "
                    "did not finish", st->moves);
        return 0;
    }
    int rc = tier_arena_restore_unlocked(x->arena->arena, x->off, x->len);
    if (rc < 0) {
        if (rc != HO_E_TIER_FULL)
            srv_log_s(SRV_LOG_ERR, st->session_id, STAGE_JOB(st), rc,
                      "session %" PRIu64 ": cannot charge host copy %u: %s",
                      st->session_id, k, ho_strerror(rc));
        if (urgent) {
            tier_ddr_stats ps;
            tier_ddr_stats_get(st->d->ddr, &ps);
            blocked(st, rc, "the DDR pool had no room for its %s (%s free "
                    "of %s) although the session's reservation did: other "
                    "sessions did not give back DDR above their "
                    "reservations", ho_size_format(x->len, a, sizeof(a)),
                    ho_size_format(ps.capacity - ps.used, b, sizeof(b)),
                    ho_size_format(ps.capacity, c, sizeof(c)));
        }
        return 0;   /* the pool is full: retried on the timer */
    }
    if (read) {
        atomic_store(&cs->state, HO_SLOT_FILLING);
        rc = mv_start(st, k, SRV_MOVE_FILL, 0, false);
        if (rc < 0) {
            tier_arena_evict(x->arena->arena, x->off, x->len);
            atomic_store(&cs->state, HO_SLOT_FLASH);
            return 0;
        }
        ext_set(st, sl, SRV_EXT_FILLING);
        return 1;
    }
    /* No data to read: a charged empty copy (ABSENT), or one the next
     * store overwrites whole (ALLOC of a FLASH copy). */
    srv_debug("session %" PRIu64 ": host copy %u (storage %" PRIu64 ") in "
              "DDR without reading (%s)", st->session_id, k, sl->storage_id,
              x->state == SRV_EXT_ABSENT ? "no data" : "overwritten next");
    ext_set(st, sl, SRV_EXT_DDR);
    atomic_store(&cs->state, HO_SLOT_DDR);
    wake(st);
    return 1;
}

/* Move slot k towards its target.  true when there is nothing left to do
 * for it now. */
static bool reconcile(srv_stage *st, uint32_t k, uint32_t urgent)
{
    stage_slot *sl = &st->slots[k];
    srv_extent *x = sl->x;
    if (!x || sl->busy)
        return !x;   /* a busy slot is queued again when its move ends */
    bool is_urgent = k == urgent;
    bool want_in = (sl->target_in && !sl->forced_out) || is_urgent;
    ho_ctl_slot *cs = ctl_slot(st, k);
    switch (x->state) {
    case SRV_EXT_DDR:
        if (!want_in)
            return evict(st, k) == 1;
        if (sl->want_write) {
            uint64_t ver = atomic_load_explicit(&cs->version,
                                                memory_order_acquire);
            bool dropped = atomic_load(&cs->dropped);
            if (ver == 0 || dropped ||
                (sl->flash_valid && sl->flash_ver == ver)) {
                sl->want_write = false;
                return true;
            }
            if (st->moves >= SRV_STAGE_MOVES_MAX || flash_get(st, sl) < 0)
                return false;
            /* The copy stays usable (state DDR in the region): the label
             * `ver` is read before the data, so a store racing the write
             * leaves a copy whose label no longer matches. */
            if (mv_start(st, k, SRV_MOVE_WRITE, ver, false) < 0)
                return false;
            ext_set(st, sl, SRV_EXT_SPILLING);
            sl->want_write = false;
            return true;
        }
        if (is_urgent)
            wake(st);   /* the client may have missed the last one */
        return true;
    case SRV_EXT_FLASH:
    case SRV_EXT_ABSENT:
        if (!want_in)
            return true;
        if (bring_in(st, k, is_urgent) != 1)
            return false;
        st->urgents += is_urgent;
        return true;
    default:
        return false;
    }
}

/* ------------------------------------------------------------ progress */

static void apply_event(srv_stage *st, const plan_stage_event *ev)
{
    stage_slot *sl = &st->slots[ev->slot];
    switch (ev->kind) {
    case PLAN_STAGE_FILL:
        sl->target_in = true;
        sl->noread = false;
        break;
    case PLAN_STAGE_ALLOC:
        if (st->catching_up) {
            /* The store it announces may be done already: its data is
             * on flash now, read it. */
            sl->target_in = true;
            sl->noread = false;
            break;
        }
        sl->target_in = true;
        sl->noread = true;
        sl->alloc_ver = atomic_load_explicit(&ctl_slot(st, ev->slot)->version,
                                             memory_order_acquire);
        break;
    case PLAN_STAGE_WRITE:
        sl->want_write = true;
        break;
    case PLAN_STAGE_EVICT:
        sl->target_in = false;
        /* Caught up with later: stores since its position made live data
         * that the version it would record no longer tells apart. */
        sl->keep = ev->keep != 0 || st->catching_up;
        sl->evict_ver = atomic_load_explicit(&ctl_slot(st, ev->slot)->version,
                                             memory_order_acquire);
        break;
    }
    work_push(st, ev->slot);
}

/* Apply the events due at the client's (step, op). */
static void advance(srv_stage *st)
{
    const plan_staging *p = st->plan;
    if (!p || p->n_events == 0)
        return;
    uint64_t step = atomic_load_explicit(&st->hdr->step,
                                         memory_order_acquire);
    uint32_t op = atomic_load_explicit(&st->hdr->op, memory_order_acquire);
    if (op != HO_CTL_IDLE && op >= st->n_ops)
        return;              /* garbage: no progress */
    if (step < st->cur_step)
        return;              /* went backwards: ignore */
    /* Position within step `step`: events with pos <= lim are due
     * (IDLE: none of this step). */
    int64_t lim = op == HO_CTL_IDLE ? -1 : 2 * (int64_t)op;
    for (;;) {
        if (st->cur_ev == p->n_events) {
            if (st->cur_step >= step)
                break;
            /* A whole step (or several) went by: the state at a step's
             * start is the same for every step. */
            st->cur_step = step;
            st->cur_ev = 0;
            continue;
        }
        const plan_stage_event *ev = &p->events[st->cur_ev];
        if (st->cur_step == step && (int64_t)ev->pos > lim)
            break;
        apply_event(st, ev);
        st->cur_ev++;
    }
}

/* Fills ahead of the plan: a FILL due within SRV_STAGE_LOOKAHEAD_US
 * (nominal) of the client's position -- into the next step when it is
 * near the end or idle -- starts now when the slot fits both now and at
 * every position until its due one, as the plan's residency there plus
 * the fills already pulled forward.  So DDR stays within the limit while
 * fills get the slack the plan's as-late-as-possible placement leaves
 * (and fills at a step's start need not wait for the step to begin). */
static void lookahead(srv_stage *st)
{
    const plan_staging *p = st->plan;
    if (!p || !p->n_events || !p->pos_ddr || !p->op_start_us)
        return;
    uint32_t n = st->n_ops, npos = 2 * n;
    uint64_t step = atomic_load_explicit(&st->hdr->step,
                                         memory_order_acquire);
    uint32_t op = atomic_load_explicit(&st->hdr->op, memory_order_acquire);
    if ((op != HO_CTL_IDLE && op >= n) || step != st->cur_step)
        return;
    double step_len = p->op_start_us[n];
    /* r: the position whose residency holds now; idle: the boundary */
    uint32_t r = op == HO_CTL_IDLE ? npos - 1 : 2 * op;
    double now = op == HO_CTL_IDLE ? 0 : p->op_start_us[op];
    bool wrapped = op == HO_CTL_IDLE;
    uint64_t mx = p->pos_ddr[r], extra = 0;
    uint32_t idx = st->cur_ev, seen = 0;
    double offset = 0;
    if (op == HO_CTL_IDLE && idx == p->n_events)
        idx = 0;      /* (cursor already at the next step's start) */
    for (; seen < SRV_STAGE_LOOKAHEAD_EVENTS; seen++) {
        if (idx == p->n_events) {
            if (wrapped)
                break;
            wrapped = true;
            idx = 0;
            offset = step_len;
        }
        const plan_stage_event *ev = &p->events[idx];
        uint32_t ev_op = ev->pos / 2 + (ev->pos & 1u);
        double t = offset + p->op_start_us[ev_op < n ? ev_op : n];
        if (t - now > SRV_STAGE_LOOKAHEAD_US)
            break;
        /* residency over the positions up to this event's */
        while (r != ev->pos) {
            r = r + 1 == npos ? 0 : r + 1;
            if (r == ev->pos)
                break;
            if (p->pos_ddr[r] > mx)
                mx = p->pos_ddr[r];
        }
        if (ev->kind == PLAN_STAGE_FILL) {
            stage_slot *sl = &st->slots[ev->slot];
            srv_extent *x = sl->x;
            if (x && !sl->target_in && !sl->busy &&
                x->state == SRV_EXT_FLASH &&
                st->charged + x->len <= st->ddr_limit &&
                mx + extra + x->len <= st->ddr_limit) {
                sl->target_in = true;
                sl->noread = false;
                extra += x->len;
                work_push(st, ev->slot);
            }
        }
        idx++;
    }
}

/* Over the DDR limit (it was lowered): start evictions towards it. */
static bool over_limit(const srv_stage *st)
{
    return st->charged > st->ddr_limit + st->leaving;
}

static void on_timer(uv_timer_t *t);

static void timer_update(srv_stage *st)
{
    const plan_staging *p = st->plan;
    /* Work that waits, or the step's final events, which no milestone of
     * this step announces (the client goes idle, or to op 0 of the next
     * step, which is a milestone). */
    bool want = st->n_work > 0 || over_limit(st) ||
                (p && st->cur_ev < p->n_events &&
                 p->events[st->cur_ev].pos + 1 >= 2 * st->n_ops);
    if (want && !st->timer_on && st->handles_open == 2) {
        uv_timer_start(&st->timer, on_timer, SRV_STAGE_TIMER_MS,
                       SRV_STAGE_TIMER_MS);
        st->timer_on = true;
    } else if (!want && st->timer_on) {
        uv_timer_stop(&st->timer);
        st->timer_on = false;
    }
}

/* Publish in the region that the wait for slot u failed (st->blocked
 * says why), log it and count it. */
static void wait_give_up(srv_stage *st, uint32_t u, uint64_t waited_ms)
{
    ho_ctl_header *h = st->hdr;
    const stage_slot *sl = &st->slots[u];
    int rc = st->blocked_rc < 0 ? st->blocked_rc : HO_E_TIER_FULL;
    if (!st->blocked[0])
        blocked(st, rc, "the daemon could not bring it in");
    snprintf(h->wait_why, sizeof(h->wait_why), "the daemon gave up after "
             "%.1f s ([ddr] stage_wait): %s", (double)waited_ms / 1e3,
             st->blocked);
    atomic_store(&h->wait_slot, u + 1);
    atomic_store_explicit(&h->wait_error, rc, memory_order_release);
    st->wait_failed = true;
    st->d->counters.stage_wait_failures++;
    srv_log_s(SRV_LOG_ERR, st->session_id, STAGE_JOB(st), rc,
              "session %" PRIu64 ": the client's wait for host copy %u "
              "(storage %" PRIu64 ") failed after %.1f s: %s",
              st->session_id, u, sl->storage_id, (double)waited_ms / 1e3,
              st->blocked);
    wake(st);
}

/* Bound the client's wait for its urgent slot u (UINT32_MAX: none). */
static void wait_check(srv_stage *st, uint32_t u)
{
    ho_ctl_header *h = st->hdr;
    uint64_t now = uv_now(&st->d->loop);
    if (u != st->wait_slot) {
        if (st->wait_failed) {
            atomic_store(&h->wait_error, 0);
            atomic_store(&h->wait_slot, 0);
        }
        st->wait_slot = u;
        st->wait_since_ms = now;
        st->wait_failed = false;
        st->blocked[0] = '\0';
        st->blocked_rc = 0;
        return;
    }
    if (u == UINT32_MAX || st->wait_failed)
        return;
    const srv_extent *x = st->slots[u].x;
    if (!x || x->state == SRV_EXT_DDR) {
        st->wait_since_ms = now;   /* in DDR: the client's turn */
        return;
    }
    uint64_t bound = (uint64_t)st->d->cfg.stage_wait_s * 1000;
    if (now - st->wait_since_ms > bound)
        wait_give_up(st, u, now - st->wait_since_ms);
}

static void stage_process(srv_stage *st)
{
    if (!st->s)
        return;
    advance(st);
    lookahead(st);
    uint32_t u = urgent_slot(st);
    if (over_limit(st))
        make_room(st, u, st->charged - st->ddr_limit);
    if (u != UINT32_MAX) {
        work_push(st, u);
        reconcile(st, u, u);
    }
    wait_check(st, u);
    /* Evictions first: they make the room fills need. */
    for (int pass = 0; pass < 2; pass++) {
        uint32_t n = st->n_work, keep = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t k = st->work[i];
            stage_slot *sl = &st->slots[k];
            bool out_pass = !(sl->target_in && !sl->forced_out) && k != u;
            bool settled = false;
            if (pass == (out_pass ? 0 : 1))
                settled = reconcile(st, k, u);
            if (settled)
                sl->queued = false;
            else
                st->work[keep++] = k;
        }
        /* Slots queued during this pass (move completions) sit after n. */
        for (uint32_t i = n; i < st->n_work; i++)
            st->work[keep++] = st->work[i];
        st->n_work = keep;
    }
    timer_update(st);
}

static void on_timer(uv_timer_t *t)
{
    srv_stage *st = t->data;
    stage_process(st);
}

static void on_eventfd(uv_poll_t *p, int status, int events)
{
    srv_stage *st = p->data;
    if (status < 0) {
        srv_warn("session %" PRIu64 ": eventfd poll failed: %s",
                 st->session_id, uv_strerror(status));
        return;
    }
    if (events & UV_READABLE) {
        uint64_t v;
        /* Non-blocking: EAGAIN when another wake-up already drained it. */
        if (read(st->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
            st->signals += v;
    }
    stage_process(st);
}

/* ------------------------------------------------------------ request */

/* Which storages need a host copy: stored by the schedule, or starting
 * on host -- `initial: host`, or a movable storage whose schedule home is
 * host (its data lives there between steps).  needed[] has n_storages
 * entries: 0 none, NEED_STORED, NEED_HOME (starts on host; may also be
 * stored). */
#define NEED_STORED 1
#define NEED_HOME 2
static int needed_storages(const plan_trace *t, const plan_schedule *sc,
                           uint8_t *needed)
{
    int rc = plan_schedule_initials(t, sc, needed);
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < t->n_storages; i++)
        needed[i] = needed[i] == PLAN_INIT_HOST ? NEED_HOME : 0;
    for (size_t k = 0; k < sc->n_actions; k++)
        if (sc->actions[k].kind == PLAN_ACT_STORE &&
            sc->actions[k].storage < t->n_storages &&
            !needed[sc->actions[k].storage])
            needed[sc->actions[k].storage] = NEED_STORED;
    return 0;
}

/* Request slot i against the trace: a storage of the trace that needs a
 * host copy, of the trace's size, not listed before, within the pool.
 * On 0 *sl is filled (x unset) and the storage marked in seen[]. */
static int check_slot(srv_daemon *d, const plan_trace *t, size_t i,
                      const Hyperoffload__StageSlot *ss, const uint8_t *needed,
                      uint8_t *seen, stage_slot *sl, char *err, size_t errlen)
{
    char a[32], b[32];
    uint64_t id = ss ? ss->storage_id : 0, bytes = ss ? ss->bytes : 0;
    uint32_t k = plan_trace_find(t, id);
    if (k == PLAN_NONE)
        return ho_errf(err, errlen, -ENOENT, "slots[%zu]: storage %" PRIu64
                       " is not in the plan's trace", i, id);
    if (!needed[k])
        return ho_errf(err, errlen, -EINVAL, "slots[%zu]: storage %" PRIu64
                       " needs no host copy: the schedule never stores it "
                       "and it does not start on host (nor has its home "
                       "there)", i, id);
    if (bytes != t->storages[k].bytes)
        return ho_errf(err, errlen, HO_E_INVALID_SIZE, "slots[%zu]: storage %"
                       PRIu64 " has %" PRIu64 " bytes in the trace, the slot "
                       "says %" PRIu64, i, id, t->storages[k].bytes, bytes);
    if (seen[k])
        return ho_errf(err, errlen, -EEXIST, "slots[%zu]: storage %" PRIu64
                       " is listed twice", i, id);
    seen[k] = 1;
    if (bytes > d->cfg.ddr_capacity)
        return ho_errf(err, errlen, HO_E_TOO_LARGE, "slots[%zu]: storage %"
                       PRIu64 " of %s exceeds the DDR pool capacity %s", i,
                       id, ho_size_format(bytes, a, sizeof(a)),
                       ho_size_format(d->cfg.ddr_capacity, b, sizeof(b)));
    sl->storage = k;
    sl->storage_id = id;
    sl->bytes = bytes;
    sl->boundary = needed[k] == NEED_HOME;
    return 0;
}

/* Every storage that needs a host copy has a slot. */
static int check_every_copy(const plan_trace *t, const uint8_t *needed,
                            const uint8_t *seen, char *err, size_t errlen)
{
    for (uint32_t k = 0; k < t->n_storages; k++)
        if (needed[k] && !seen[k])
            return ho_errf(err, errlen, -ENODATA, "storage %" PRIu64 " needs "
                           "a host copy (%s) but has no slot",
                           t->storages[k].id,
                           needed[k] != NEED_HOME ? "the schedule stores it"
                           : t->storages[k].initial == PLAN_INIT_HOST
                               ? "it starts on host"
                               : "its home in the schedule is host");
    return 0;
}

/* Validate the request's slots against the memo.  On success *ret_slots
 * (owned by the caller) holds one entry per request slot, x unset, and
 * *ret_total the sum of their aligned lengths. */
static int check_slots(srv_daemon *d, srv_session *s,
                       const Hyperoffload__StageRequest *req,
                       const srv_plan_memo *m, stage_slot **ret_slots,
                       uint64_t *ret_total, char *err, size_t errlen)
{
    const plan_trace *t = m->trace;
    size_t n = req->n_slots;
    uint64_t align = d->cfg.ddr_alignment;
    if (n > HO_CTL_MAX_SLOTS || n > t->n_storages)
        return ho_errf(err, errlen, -E2BIG, "%zu slots: the plan's trace has "
                       "%u storages (and a replay at most %u slots)", n,
                       t->n_storages, HO_CTL_MAX_SLOTS);
    uint64_t old = s->stage ? s->stage->n_slots : 0;
    if (s->usage.extents - old + n > d->cfg.max_extents)
        return ho_errf(err, errlen, HO_E_QUOTA, "%zu host copies would take "
                       "the session to %" PRIu64 " extents, above the limit "
                       "(max_extents_per_session %u)", n,
                       s->usage.extents - old + n, d->cfg.max_extents);
    uint8_t *needed = ho_calloc(t->n_storages, 1);
    uint8_t *seen = ho_calloc(t->n_storages, 1);
    stage_slot *slots = ho_calloc(n, sizeof(*slots));
    uint64_t total = 0;
    int rc = 0;
    if (!needed || !seen || !slots) {
        rc = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    rc = needed_storages(t, m->sched, needed);
    if (rc < 0) {
        rc = ho_errf(err, errlen, rc, "the plan's homes do not fit its "
                     "trace");
        goto out;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = check_slot(d, t, i, req->slots[i], needed, seen, &slots[i], err,
                        errlen);
        /* <= 2^22 slots of <= pool capacity: no overflow */
        total += (slots[i].bytes + align - 1) & ~(align - 1);
    }
    if (rc == 0)
        rc = check_every_copy(t, needed, seen, err, errlen);
out:
    free(needed);
    free(seen);
    if (rc < 0) {
        free(slots);
        return rc;
    }
    *ret_slots = slots;
    *ret_total = total;
    return 0;
}

/* Create, size, seal and map the control region; fill the layout. */
static int make_region(srv_stage *st, char *err, size_t errlen)
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
             st->session_id);
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
    return ho_errf(err, errlen, rc,
                   "cannot create the control region (%" PRIu64 " bytes): %s",
                   st->ctl_size, strerror(errno));
}

/* Publish the slots' extents and states, milestones and counters. */
static void publish_slots(srv_stage *st)
{
    for (uint32_t i = 0; i < st->n_slots; i++) {
        stage_slot *sl = &st->slots[i];
        ho_ctl_slot *cs = ctl_slot(st, i);
        cs->storage_id = sl->storage_id;
        cs->extent_id = sl->x->id;
        cs->offset = sl->x->off;
        cs->length = sl->bytes;
        atomic_store(&cs->state, sl->x->state == SRV_EXT_DDR
                                     ? HO_SLOT_DDR : HO_SLOT_ABSENT);
        atomic_store(&cs->dropped, 0);
        atomic_store(&cs->version, 0);
    }
    size_t words = ((size_t)st->n_ops + 63) / 64;
    if (st->plan)
        memcpy(ctl_milestones(st), st->plan->milestones, words * 8);
    else
        memset(ctl_milestones(st), 0, words * 8);
    publish_residency(st);
}

/* ------------------------------------------------------------ DDR ledger */

/* DDR reservations (docs/runtime.md, "DDR reservations").  The pool is
 * split into reservations that never add up to more than [ddr] capacity:
 * each DDR quota reserves its limit for its subject, and the rest (less
 * what sessions outside every DDR quota hold in plain extents) is the
 * unreserved pool.  A session that stages host copies gets a limit out
 * of its quotas' reservations, or out of the unreserved pool when it has
 * none: every member first its minimum (a limit pinned by
 * srv_stage_set_ddr_limit, else its largest host copy), then what is
 * left by max-min fairness on what each still needs.  Its replay keeps
 * its host copies within the limit (staging the rest on flash), so no
 * session waits on memory another one holds. */

typedef struct ddr_ask {
    srv_session *s;
    uint64_t need, min, pin;
    uint64_t lim;            /* result: the smallest share of its groups */
} ddr_ask;

/* DDR the session holds outside its replay (plain extents). */
static uint64_t plain_ddr(const srv_session *s)
{
    uint64_t staged = s->stage ? s->stage->charged : 0;
    return s->usage.ddr > staged ? s->usage.ddr - staged : 0;
}

static bool quota_covers(const srv_quota_entry *e, const srv_session *s)
{
    return e->kind == SRV_SUBJECT_UID ? e->uid == s->uid
                                      : s->job[0] && strcmp(e->job, s->job)
                                                         == 0;
}

static bool has_ddr_quota(const srv_daemon *d, const srv_session *s)
{
    for (size_t i = 0; i < srv_quota_count(d->quota); i++) {
        const srv_quota_entry *e = srv_quota_at(d->quota, i);
        if (e->tier == SRV_TIER_DDR && quota_covers(e, s))
            return true;
    }
    return false;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* Split `pool` among the asks in[0..n) (indices into a): minimums (or
 * pins) first, the rest water-filled on need - min.  share[i] for in[i].
 * false when the minimums alone exceed the pool (*ret_base says by how
 * much they add up). */
static bool ddr_split(uint64_t pool, const ddr_ask *a, const uint32_t *in,
                      uint32_t n, uint64_t *share, uint64_t *ret_base)
{
    uint64_t base = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ddr_ask *q = &a[in[i]];
        uint64_t v = q->min;
        if (q->pin)
            v = q->pin < q->min ? q->min : q->pin > q->need ? q->need
                                                            : q->pin;
        share[i] = v;
        base = sat_add(base, v);
    }
    *ret_base = base;
    if (base > pool)
        return false;
    uint64_t rest = pool - base;
    for (;;) {
        uint32_t left = 0;
        for (uint32_t i = 0; i < n; i++)
            left += !a[in[i]].pin && share[i] < a[in[i]].need;
        if (!left || rest < left)
            break;
        uint64_t fair = rest / left, given = 0;
        for (uint32_t i = 0; i < n; i++) {
            const ddr_ask *q = &a[in[i]];
            if (q->pin || share[i] >= q->need)
                continue;
            uint64_t g = q->need - share[i] < fair ? q->need - share[i]
                                                   : fair;
            share[i] += g;
            given += g;
        }
        rest -= given;
    }
    return true;
}

/* One group's split: the members of a[0..n) that `in_group` says, over
 * `pool`; each member's lim lowered to its share.  0, or `code` with the
 * sentence naming the group when its minimums do not fit. */
static int ddr_group(ddr_ask *a, uint32_t n, const bool *member,
                     uint64_t pool, uint32_t *in, uint64_t *share, int code,
                     const char *group, char *err, size_t errlen)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (member[i])
            in[m++] = i;
    if (!m)
        return 0;
    uint64_t base;
    if (!ddr_split(pool, a, in, m, share, &base)) {
        char x[32], y[32];
        return ho_errf(err, errlen, code, "%s has %s for host copies; the "
                       "%u session%s staging from it need%s at least %s "
                       "together (each its largest host copy, or the limit "
                       "set for it)", group,
                       ho_size_format(pool, x, sizeof(x)), m,
                       m == 1 ? "" : "s", m == 1 ? "s" : "",
                       ho_size_format(base, y, sizeof(y)));
    }
    for (uint32_t i = 0; i < m; i++)
        if (share[i] < a[in[i]].lim)
            a[in[i]].lim = share[i];
    return 0;
}

/* The limits of every session with a DDR ask, into a[].lim. */
static int ddr_compute(srv_daemon *d, ddr_ask *a, uint32_t n, bool *member,
                       uint32_t *in, uint64_t *share, char *err,
                       size_t errlen)
{
    char g[320], x[32], y[32], z[32], w[32];
    uint64_t cap = d->cfg.ddr_capacity;
    uint64_t qsum = srv_quota_tier_sum(d->quota, SRV_TIER_DDR);
    uint64_t plain = 0;
    for (srv_session *s = d->sessions; s; s = s->next)
        if (!has_ddr_quota(d, s))
            plain += plain_ddr(s);
    uint64_t used = sat_add(qsum, plain);
    uint64_t unres = cap > used ? cap - used : 0;
    for (uint32_t i = 0; i < n; i++) {
        a[i].lim = a[i].need;
        member[i] = !has_ddr_quota(d, a[i].s);
    }
    snprintf(g, sizeof(g), "the unreserved DDR pool (%s of %s, less %s "
             "reserved by DDR quotas and %s in plain extents)",
             ho_size_format(unres, x, sizeof(x)),
             ho_size_format(cap, y, sizeof(y)),
             ho_size_format(qsum, z, sizeof(z)),
             ho_size_format(plain, w, sizeof(w)));
    int rc = ddr_group(a, n, member, unres, in, share, HO_E_TIER_FULL, g,
                       err, errlen);
    for (size_t qi = 0; rc == 0 && qi < srv_quota_count(d->quota); qi++) {
        const srv_quota_entry *e = srv_quota_at(d->quota, qi);
        if (e->tier != SRV_TIER_DDR)
            continue;
        uint64_t held = 0;
        for (srv_session *s = d->sessions; s; s = s->next)
            if (quota_covers(e, s))
                held += plain_ddr(s);
        for (uint32_t i = 0; i < n; i++)
            member[i] = quota_covers(e, a[i].s);
        char who[SRV_JOB_MAX + 16];
        srv_quota_subject_name(e->kind, e->uid, e->job, who, sizeof(who));
        snprintf(g, sizeof(g), "the DDR quota of %s (%s, less %s in plain "
                 "extents)", who, ho_size_format(e->limit, x, sizeof(x)),
                 ho_size_format(held, y, sizeof(y)));
        rc = ddr_group(a, n, member, e->limit > held ? e->limit - held : 0,
                       in, share, HO_E_QUOTA, g, err, errlen);
    }
    return rc;
}

/* Give the installed replay a new limit: lowered, it starts evicting
 * towards it (and keeps at it on the timer); raised, fills may use it. */
static void stage_apply_limit(srv_stage *st, uint64_t lim)
{
    if (lim == st->ddr_limit)
        return;
    char a[32], b[32];
    srv_info("session %" PRIu64 ": DDR limit of its host copies %s -> %s "
             "(reservations re-split)", st->session_id,
             ho_size_format(st->ddr_limit, a, sizeof(a)),
             ho_size_format(lim, b, sizeof(b)));
    st->ddr_limit = lim;
    st->d->counters.ddr_limit_changes++;
    stage_process(st);
    replan_check(st);
}

int srv_stage_rebalance(srv_daemon *d, char *err, size_t errlen)
{
    uint32_t n = 0;
    for (srv_session *s = d->sessions; s; s = s->next)
        n += s->ddr_need > 0;
    if (n == 0) {
        d->ddr_granted = 0;
        return 0;
    }
    ddr_ask *a = ho_calloc(n, sizeof(*a));
    bool *member = ho_calloc(n, sizeof(*member));
    uint32_t *in = ho_calloc(n, sizeof(*in));
    uint64_t *share = ho_calloc(n, sizeof(*share));
    int rc = 0;
    if (!a || !member || !in || !share) {
        rc = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    uint32_t i = 0;
    for (srv_session *s = d->sessions; s; s = s->next)
        if (s->ddr_need > 0)
            a[i++] = (ddr_ask){.s = s, .need = s->ddr_need,
                               .min = s->ddr_min, .pin = s->ddr_pin};
    rc = ddr_compute(d, a, n, member, in, share, err, errlen);
    if (rc < 0)
        goto out;
    d->ddr_granted = 0;
    for (i = 0; i < n; i++) {
        a[i].s->ddr_limit = a[i].lim;
        if (!has_ddr_quota(d, a[i].s))
            d->ddr_granted += a[i].lim;
    }
    /* Lowered limits first: their evictions make the room others grow
     * into. */
    for (int grow = 0; grow < 2; grow++)
        for (i = 0; i < n; i++) {
            srv_stage *st = a[i].s->stage;
            if (st && (a[i].lim > st->ddr_limit) == (grow == 1))
                stage_apply_limit(st, a[i].lim);
        }
    flash_recheck(d);  /* the limits move the flash shares too */
out:
    HO_FREE_ALL(a, member, in, share);
    return rc;
}

uint64_t srv_stage_ddr_reserved(const srv_daemon *d)
{
    return sat_add(srv_quota_tier_sum(d->quota, SRV_TIER_DDR),
                   d->ddr_granted);
}

int srv_stage_plain_room(srv_daemon *d, const srv_session *s, uint64_t bytes,
                         char *err, size_t errlen)
{
    char a[32], b[32], c[32], e[32], f[32];
    uint64_t align = d->cfg.ddr_alignment, cap = d->cfg.ddr_capacity;
    if (bytes == 0 || bytes > cap || has_ddr_quota(d, s))
        return 0;    /* refused by srv_extent_alloc; or its quotas' own
                        reservations (srv_quota_check) */
    uint64_t len = (bytes + align - 1) & ~(align - 1);
    uint64_t qsum = srv_quota_tier_sum(d->quota, SRV_TIER_DDR), plain = 0;
    for (srv_session *o = d->sessions; o; o = o->next)
        if (!has_ddr_quota(d, o))
            plain += plain_ddr(o);
    uint64_t used = sat_add(sat_add(qsum, d->ddr_granted), plain);
    if (sat_add(used, len) <= cap || sat_add(plain, len) > cap)
        return 0;    /* fits; or the pool itself is full (its message) */
    return ho_errf(err, errlen, HO_E_TIER_FULL, "no unreserved room for %s "
                   "in the DDR pool of %s: DDR quotas reserve %s, the "
                   "host copies of sessions outside them %s, and plain "
                   "extents hold %s",
                   ho_size_format(len, a, sizeof(a)),
                   ho_size_format(cap, b, sizeof(b)),
                   ho_size_format(qsum, c, sizeof(c)),
                   ho_size_format(d->ddr_granted, e, sizeof(e)),
                   ho_size_format(plain, f, sizeof(f)));
}

int srv_stage_set_ddr_limit(srv_daemon *d, srv_session *s, uint64_t limit,
                            char *err, size_t errlen)
{
    uint64_t old = s->ddr_pin;
    s->ddr_pin = limit;
    int rc = srv_stage_rebalance(d, err, errlen);
    if (rc < 0)
        s->ddr_pin = old;   /* nothing was applied */
    return rc;
}

/* Flash bandwidth (docs/runtime.md "Flash bandwidth").  A session
 * stages through flash the bytes of its host copies above its DDR limit
 * (each of them goes out and comes back about once a step); the sessions
 * that do share the measured flash bandwidth in proportion to weight x
 * those bytes, the weight being the node arbiter's for the session
 * (srv_stage_set_flash_weight, 1 without one).  So with equal weights
 * every session spends the same fraction of its step on flash, and the
 * DDR limits the arbiter grants decide who needs how much of it. */
static double flash_weight(const srv_session *s)
{
    return s->flash_weight > 0 ? s->flash_weight : 1.0;
}

static double flash_demand(const srv_session *s, uint64_t limit)
{
    uint64_t over = s->ddr_total > limit ? s->ddr_total - limit : 0;
    return flash_weight(s) * (double)over;
}

/* s's share with `limit` as its DDR limit (the others with theirs); 1
 * when it stages nothing through flash. */
static double flash_share(const srv_daemon *d, const srv_session *s,
                          uint64_t limit)
{
    double mine = flash_demand(s, limit), all = mine;
    if (mine <= 0)
        return 1.0;
    for (const srv_session *o = d->sessions; o; o = o->next)
        if (o != s)
            all += flash_demand(o, o->ddr_limit);
    return mine / all;
}

/* The share moved enough for a new staging plan: by more than
 * SRV_STAGE_SHARE_SLACK of itself (smaller moves keep the plan: a plan
 * costs a planner run and re-applies the step's events). */
static bool share_moved(double now, double planned)
{
    return fabs(now - planned) > SRV_STAGE_SHARE_SLACK * fmax(now, planned);
}

/* Every installed replay whose share moved gets a new staging plan. */
static void flash_recheck(srv_daemon *d)
{
    for (srv_session *s = d->sessions; s; s = s->next)
        if (s->stage)
            replan_check(s->stage);
}

void srv_stage_set_flash_weight(srv_daemon *d, srv_session *s,
                                double weight)
{
    double w = weight > 0 && weight <= 1e6 ? weight : 0;
    if (w == s->flash_weight)
        return;
    s->flash_weight = w;
    flash_recheck(d);
}

double srv_stage_flash_share(const srv_daemon *d, const srv_session *s)
{
    return s->ddr_total > s->ddr_limit ? flash_share(d, s, s->ddr_limit)
                                       : 0;
}

/* The session's ask back to what its installed replay asked (none
 * without one), after a StageRequest that did not install. */
static void ask_restore(srv_daemon *d, srv_session *s)
{
    char err[SRV_ERR_MAX];
    s->ddr_need = s->stage ? s->stage->need : 0;
    s->ddr_min = s->stage ? s->stage->min_limit : 0;
    s->ddr_total = s->stage ? s->stage->staged_bytes : 0;
    if (!s->ddr_need)
        s->ddr_limit = 0;
    if (srv_stage_rebalance(d, err, sizeof(err)) < 0)
        srv_warn("session %" PRIu64 ": DDR reservations not re-split: %s",
                 s->id, err);
}

static void free_new_slots(srv_daemon *d, srv_session *s, srv_stage *st)
{
    for (uint32_t i = 0; i < st->n_slots; i++)
        if (st->slots[i].x) {
            srv_extent_discard(d, s, st->slots[i].x);
            st->slots[i].x = NULL;
        }
}

/* Allocate the host copies: the ones in DDR at step start charged (not
 * populated: the client's first copy faults the pages in), the others
 * reserved only. */
static int alloc_slots(srv_daemon *d, srv_session *s, srv_stage *st,
                       char *err, size_t errlen)
{
    st->charged = 0;
    uint64_t align = d->cfg.ddr_alignment;
    for (uint32_t i = 0; i < st->n_slots; i++) {
        bool want = st->plan ? st->plan->start_in_ddr[i] != 0 : true;
        /* Charged at once only within the limit (a plan made for a larger
         * one, before the reservations were re-split) and while the pool
         * has room (others may still be evicting down to theirs); the
         * rest comes in when its turn comes. */
        uint64_t len = (st->slots[i].bytes + align - 1) & ~(align - 1);
        bool in = want && st->charged + len <= st->ddr_limit;
        int rc = srv_extent_alloc_staged(d, s, st->slots[i].bytes, in,
                                         &st->slots[i].x, err, errlen);
        if (rc == HO_E_TIER_FULL && in) {
            in = false;
            rc = srv_extent_alloc_staged(d, s, st->slots[i].bytes, false,
                                         &st->slots[i].x, err, errlen);
        }
        if (rc < 0) {
            free_new_slots(d, s, st);
            st->charged = 0;
            return rc;
        }
        if (in)
            st->charged += st->slots[i].x->len;
        st->slots[i].target_in = want;
        if (want && !in)
            work_push(st, i);
        st->slots[i].keep = true;
    }
    return 0;
}

static void reply_stage(srv_conn *c, uint64_t rid, srv_stage *st)
{
    Hyperoffload__StageReply sr = HYPEROFFLOAD__STAGE_REPLY__INIT;
    Hyperoffload__StageExtent *ex = ho_calloc(st->n_slots, sizeof(*ex));
    Hyperoffload__StageExtent **exp = ho_calloc(st->n_slots, sizeof(*exp));
    if (!ex || !exp) {
        HO_FREE_ALL(ex, exp);
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
    sr.stage_actions = st->plan ? st->plan->n_actions : 0;
    sr.milestones = st->plan ? st->plan->n_milestones : 0;
    int fds[2] = {st->memfd, st->efd};
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY, &sr, fds,
                   2);
    HO_FREE_ALL(ex, exp);
}

/* A replay object for session s, not yet installed (no region, handles or
 * host copies).  Takes ownership of slots and plan in every case; NULL
 * when out of memory. */
static srv_stage *stage_new(srv_daemon *d, srv_session *s, stage_slot *slots,
                            uint32_t n_slots, uint32_t n_ops, uint64_t total,
                            uint64_t limit, plan_staging *plan)
{
    srv_stage *st = calloc(1, sizeof(*st));
    uint32_t *work = ho_calloc(n_slots, sizeof(*work));
    if (!st || !work) {
        HO_FREE_ALL(st, work, slots);
        plan_staging_free(plan);
        return NULL;
    }
    st->d = d;
    st->s = s;
    st->session_id = s->id;
    st->memfd = st->efd = -1;
    st->n_slots = n_slots;
    st->n_ops = n_ops;
    st->slots = slots;
    st->work = work;
    st->plan = plan;
    st->staged_bytes = total;
    st->ddr_limit = limit;
    st->need = s->ddr_need;
    st->min_limit = s->ddr_min;
    st->wait_slot = UINT32_MAX;
    return st;
}

/* The control region and the eventfd. */
static int stage_open(srv_stage *st, char *err, size_t errlen)
{
    int rc = make_region(st, err, errlen);
    if (rc < 0)
        return rc;
    st->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (st->efd < 0) {
        rc = -errno;
        return ho_errf(err, errlen, rc, "eventfd: %s", strerror(errno));
    }
    return 0;
}

/* The host copies; when they do not fit, once more after removing the
 * replay this one replaces (it may hold the room). */
static int stage_take_slots(srv_daemon *d, srv_session *s, srv_stage *st,
                            char *err, size_t errlen)
{
    int rc = alloc_slots(d, s, st, err, errlen);
    if (rc < 0 && s->stage) {
        stage_remove(d, s);
        rc = alloc_slots(d, s, st, err, errlen);
    }
    return rc;
}

/* Watch the eventfd (poll and timer handles; the replay holds its first
 * reference from here on).  A poll that does not start is logged: the
 * timer still drives the replay. */
static int stage_watch(srv_daemon *d, srv_stage *st, char *err,
                       size_t errlen)
{
    int rc = uv_poll_init(&d->loop, &st->poll, st->efd);
    if (rc < 0)
        return ho_errf(err, errlen, HO_E_INTERNAL,
                       "cannot watch the eventfd: %s", uv_strerror(rc));
    uv_timer_init(&d->loop, &st->timer);
    st->poll.data = st;
    st->timer.data = st;
    st->handles_open = 2;
    st->refs = 1;
    rc = uv_poll_start(&st->poll, UV_READABLE, on_eventfd);
    if (rc == 0)
        st->polling = true;
    else
        srv_warn("session %" PRIu64 ": cannot watch its eventfd: %s",
                 st->session_id, uv_strerror(rc));
    return 0;
}

/* Build and install the replay (loop thread), replacing the session's
 * previous one, and reply.  Takes ownership of slots and plan in every
 * case. */
static int install(srv_daemon *d, srv_conn *c, uint64_t rid,
                   srv_plan_memo *m, stage_slot *slots, uint32_t n_slots,
                   uint64_t total, uint64_t limit, plan_staging *plan,
                   uint64_t planned_limit, double planned_share, char *err,
                   size_t errlen)
{
    srv_session *s = c->session;
    char a[32], b[32];
    srv_stage *st = stage_new(d, s, slots, n_slots, m->trace->n_ops, total,
                              limit, plan);
    if (!st)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    st->memo = m;
    m->refs++;
    st->planned_limit = plan ? planned_limit : 0;
    st->planned_share = plan ? planned_share : 0;
    int rc = stage_open(st, err, errlen);
    if (rc == 0)
        rc = stage_take_slots(d, s, st, err, errlen);
    if (rc == 0) {
        rc = stage_watch(d, st, err, errlen);
        if (rc < 0)
            free_new_slots(d, s, st);
    }
    srv_count_admission(&d->counters, SRV_ADMIT_STAGE, rc);
    if (rc < 0) {
        st->s = NULL;
        stage_free(st);
        ask_restore(d, s);
        return rc;
    }
    stage_remove(d, s);      /* the previous replay, if any */
    s->stage = st;
    publish_slots(st);
    timer_update(st);        /* copies that wait for room to come in */
    replan_check(st);        /* the limit changed while it was planned */
    srv_info("session %" PRIu64 ": replay installed: %u host copies, %s, "
             "DDR limit %s, %u staging actions and %u milestones per step",
             s->id, st->n_slots, ho_size_format(total, a, sizeof(a)),
             ho_size_format(limit, b, sizeof(b)), plan ? plan->n_actions : 0,
             plan ? plan->n_milestones : 0);
    reply_stage(c, rid, st);
    return 0;
}

typedef struct stage_job {
    uv_work_t req;
    srv_daemon *d;
    uint64_t conn_id, session_id, rid;
    srv_plan_memo *memo;     /* reference */
    stage_slot *slots;       /* owned until installed */
    uint32_t n_slots;
    uint64_t total;
    plan_staging_input in;
    uint32_t *slot_storage;  /* owned */
    uint64_t *slot_bytes;    /* owned */
    plan_staging *plan;      /* result, owned until installed */
    double share;            /* the flash share it is made for */
    int rc;
    uint64_t min_limit;
    double ms;
    char err[512];
} stage_job;

/* Accepts NULL; returns NULL. */
static stage_job *job_free(stage_job *j)
{
    if (!j)
        return NULL;
    memo_unref(j->memo);
    plan_staging_free(j->plan);
    HO_FREE_ALL(j->slots, j->slot_storage, j->slot_bytes, j);
    return NULL;
}

static void job_work(uv_work_t *req)
{
    stage_job *j = req->data;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    j->rc = plan_staging_make(&j->in, &j->plan, &j->min_limit, j->err,
                              sizeof(j->err));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    j->ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
            (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
}

static void job_after(uv_work_t *req, int status)
{
    stage_job *j = req->data;
    srv_daemon *d = j->d;
    if (status < 0 && j->rc == 0)
        j->rc = status;
    srv_conn *c = srv_conn_find(d, j->conn_id);
    if (c && c->session && c->session->id == j->session_id)
        c->session->stage_pending = false;
    if (!c || c->state != SRV_CONN_READY || !c->session ||
        c->session->id != j->session_id) {
        job_free(j);
        srv_work_end(d);
        return;
    }
    if (j->rc == 0 && j->plan)
        srv_debug("session %" PRIu64 ": staging plan in %.1f ms: %u events, "
                  "%u milestones, flash %.1f/%.1f MiB in/out per step, "
                  "nominal exposed %.1f ms (flash %.2f/%.2f GB/s)",
                  j->session_id, j->ms, j->plan->n_events,
                  j->plan->n_milestones,
                  (double)j->plan->flash_read_bytes / 1048576.0,
                  (double)j->plan->flash_write_bytes / 1048576.0,
                  j->plan->exposed_us / 1e3, j->in.flash_read_gbps,
                  j->in.flash_write_gbps);
    else
        srv_debug("session %" PRIu64 ": staging plan in %.1f ms: %s",
                  j->session_id, j->ms, j->rc ? ho_err_name(j->rc) : "ok");
    if (j->rc < 0) {
        srv_count_admission(&d->counters, SRV_ADMIT_STAGE, j->rc);
        srv_reply_error(c, j->rid, j->rc, "%s", j->err[0] ? j->err
                                                         : ho_strerror(j->rc));
        ask_restore(d, c->session);
    } else {
        /* The reservation now: it may have been re-split while the plan
         * was made (the plan's limit was what it was then). */
        char err[SRV_ERR_MAX];
        int rc = install(d, c, j->rid, j->memo, j->slots, j->n_slots,
                         j->total, c->session->ddr_limit, j->plan,
                         j->in.ddr_limit, j->share, err, sizeof(err));
        j->slots = NULL;
        j->plan = NULL;
        if (rc < 0)
            srv_reply_error(c, j->rid, rc, "%s", err);
    }
    job_free(j);
    srv_work_end(d);
}

/* The session's plan the request names (made most recently used).
 * HO_E_NO_PLAN (none kept, or not that one: never made, or dropped),
 * HO_E_BUSY (a StageRequest is being planned). */
static int stage_memo(srv_daemon *d, srv_session *s,
                      const Hyperoffload__StageRequest *req,
                      srv_plan_memo **ret_m, char *err, size_t errlen)
{
    const char *planner = req->planner && *req->planner ? req->planner
                                                        : d->cfg.planner;
    srv_plan_memo *m = memo_find(d, s, req->trace_hash, req->budget,
                                 planner);
    if (!m) {
        srv_plan_memo *last = d->memos;
        while (last && last->owner != s)
            last = last->next;
        if (!last)
            return ho_errf(err, errlen, HO_E_NO_PLAN, "session %" PRIu64
                           " has no plan: send PlanRequest first (plans "
                           "past [planning] retained_per_session or "
                           "retained_total are dropped, least recently "
                           "used first)", s->id);
        return ho_errf(err, errlen, HO_E_NO_PLAN, "the StageRequest names "
                       "trace %016" PRIx64 ", budget %" PRIu64 ", planner "
                       "'%.32s', which session %" PRIu64 " does not keep "
                       "(never planned, or dropped past [planning] "
                       "retained_per_session or retained_total); its most "
                       "recent plan is trace %016" PRIx64 ", budget %"
                       PRIu64 ", planner '%s'; send PlanRequest again",
                       req->trace_hash, req->budget, planner, s->id,
                       last->hash, last->budget, last->planner);
    }
    if (s->stage_pending)
        return ho_errf(err, errlen, HO_E_BUSY, "session %" PRIu64 " already "
                       "has a StageRequest being prepared", s->id);
    SRV_LRU_UNLINK(d->memos, d->memos_tail, m);
    SRV_LRU_PUSH(d->memos, d->memos_tail, m);
    *ret_m = m;
    return 0;
}

/* The slots' storages and aligned sizes, the staging planner's arrays. */
static void slot_arrays(const srv_daemon *d, const stage_slot *slots,
                        uint32_t n, uint32_t *storage, uint64_t *bytes)
{
    uint64_t align = d->cfg.ddr_alignment;
    for (uint32_t i = 0; i < n; i++) {
        storage[i] = slots[i].storage;
        bytes[i] = (slots[i].bytes + align - 1) & ~(align - 1);
    }
}

/* The staging planner's input: memo m's trace and schedule, the slots'
 * arrays, the limit, the session's share of the flash bandwidth. */
static double staging_input(srv_daemon *d, const srv_session *s,
                            const srv_plan_memo *m, const uint32_t *storage,
                            const uint64_t *bytes, uint32_t n,
                            uint64_t limit, plan_staging_input *in)
{
    double share = flash_share(d, s, limit);
    in->trace = m->trace;
    in->sched = m->sched;
    in->slot_storage = storage;
    in->slot_bytes = bytes;
    in->n_slots = n;
    in->ddr_limit = limit;
    in->flash_read_gbps = d->flash_read_gbps * share;
    in->flash_write_gbps = d->flash_write_gbps * share;
    in->flash_latency_us = SRV_STAGE_FLASH_LATENCY_US;
    return share;
}

/* ------------------------------------------------------------ re-plan */

/* A staging plan made again for an installed replay whose DDR limit
 * changed: made on a worker, swapped in on the loop (swap_plan). */
typedef struct replan_job {
    uv_work_t req;
    srv_stage *st;           /* reference */
    plan_staging_input in;
    uint32_t *slot_storage;  /* owned */
    uint64_t *slot_bytes;    /* owned */
    plan_staging *plan;      /* result, owned until swapped in */
    double share;            /* the flash share it is made for */
    uint64_t min_limit;
    int rc;
    char err[512];
} replan_job;

/* Replace the replay's plan (NULL: every copy in DDR) made for `limit`:
 * the slots' targets restart from the new plan's step start and the
 * cursor from the start of the client's current step, so the events due
 * so far are applied again (each only sets a target). */
static void swap_plan(srv_stage *st, plan_staging *plan, uint64_t limit,
                      double share)
{
    char a[32];
    plan_staging_free(st->plan);
    st->plan = plan;
    st->planned_limit = plan ? limit : 0;
    st->planned_share = plan ? share : 0;
    for (uint32_t i = 0; i < st->n_slots; i++) {
        stage_slot *sl = &st->slots[i];
        sl->target_in = plan ? plan->start_in_ddr[i] != 0 : true;
        sl->noread = false;
        sl->want_write = false;
        sl->keep = true;
        sl->forced_out = false;
        work_push(st, i);
    }
    st->cur_step = atomic_load_explicit(&st->hdr->step, memory_order_acquire);
    st->cur_ev = 0;
    size_t words = ((size_t)st->n_ops + 63) / 64;
    if (plan)
        memcpy(ctl_milestones(st), plan->milestones, words * 8);
    else
        memset(ctl_milestones(st), 0, words * 8);
    srv_info("session %" PRIu64 ": staging re-planned for its DDR limit of "
             "%s and %.0f%% of the flash bandwidth: %u staging actions and "
             "%u milestones per step", st->session_id,
             ho_size_format(st->ddr_limit, a, sizeof(a)),
             plan ? share * 100 : 0, plan ? plan->n_actions : 0,
             plan ? plan->n_milestones : 0);
    st->catching_up = true;
    advance(st);
    st->catching_up = false;
    stage_process(st);
}

static void replan_work(uv_work_t *req)
{
    replan_job *j = req->data;
    j->rc = plan_staging_make(&j->in, &j->plan, &j->min_limit, j->err,
                              sizeof(j->err));
}

static void replan_after(uv_work_t *req, int status)
{
    replan_job *j = req->data;
    srv_stage *st = j->st;
    srv_daemon *d = st->d;
    char a[32], err[SRV_ERR_MAX];
    if (status < 0 && j->rc == 0)
        j->rc = status;
    st->replanning = false;
    if (st->s && j->rc == 0 && j->in.ddr_limit == st->ddr_limit) {
        swap_plan(st, j->plan, j->in.ddr_limit, j->share);
        j->plan = NULL;
    } else if (st->s && j->rc < 0) {
        srv_log_s(SRV_LOG_WARNING, st->session_id, STAGE_JOB(st), j->rc,
                  "session %" PRIu64 ": no staging plan for its DDR limit of "
                  "%s (%s); it keeps its plan, and copies beyond the limit "
                  "are evicted as the client needs room", st->session_id,
                  ho_size_format(j->in.ddr_limit, a, sizeof(a)), j->err);
        if (j->rc == HO_E_INFEASIBLE && j->min_limit > st->min_limit) {
            /* It needs more than its minimum said: ask for that. */
            st->min_limit = st->s->ddr_min = j->min_limit;
            if (srv_stage_rebalance(d, err, sizeof(err)) < 0)
                srv_warn("session %" PRIu64 ": DDR reservations not "
                         "re-split: %s", st->session_id, err);
        }
    }
    if (st->s && (st->replan_again ||
                  (j->rc == 0 && j->in.ddr_limit != st->ddr_limit))) {
        st->replan_again = false;
        replan_check(st);
    }
    plan_staging_free(j->plan);
    HO_FREE_ALL(j->slot_storage, j->slot_bytes, j);
    stage_unref(st);
    srv_work_end(d);
}

/* Make the replay's staging plan match its DDR limit: none when every
 * copy fits, else one made for the limit (on a worker; once more when
 * the limit changes while it is made). */
static void replan_check(srv_stage *st)
{
    srv_daemon *d = st->d;
    if (!st->s || !st->memo || d->n_flash == 0 || d->draining)
        return;
    bool fits = st->staged_bytes <= st->ddr_limit;
    if ((fits ? 0 : st->ddr_limit) == st->planned_limit &&
        (fits || !share_moved(flash_share(d, st->s, st->ddr_limit),
                              st->planned_share)))
        return;
    if (st->replanning) {
        st->replan_again = true;
        return;
    }
    if (fits) {
        swap_plan(st, NULL, 0, 0);
        return;
    }
    replan_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->slot_storage = ho_calloc(st->n_slots, sizeof(uint32_t));
        j->slot_bytes = ho_calloc(st->n_slots, sizeof(uint64_t));
    }
    if (!j || !j->slot_storage || !j->slot_bytes) {
        if (j)
            HO_FREE_ALL(j->slot_storage, j->slot_bytes, j);
        srv_warn("session %" PRIu64 ": out of memory re-planning its "
                 "staging", st->session_id);
        return;
    }
    slot_arrays(d, st->slots, st->n_slots, j->slot_storage, j->slot_bytes);
    j->share = staging_input(d, st->s, st->memo, j->slot_storage,
                             j->slot_bytes, st->n_slots, st->ddr_limit,
                             &j->in);
    j->st = st;
    j->req.data = j;
    if (uv_queue_work(&d->loop, &j->req, replan_work, replan_after) < 0) {
        HO_FREE_ALL(j->slot_storage, j->slot_bytes, j);
        return;
    }
    st->refs++;
    st->replanning = true;
    srv_work_begin(d);
}

/* A staging-plan job for the request's slots (it takes slots and a memo
 * reference).  NULL when out of memory (slots freed). */
static stage_job *stage_job_new(srv_daemon *d, srv_conn *c, uint64_t rid,
                                srv_plan_memo *m, stage_slot *slots,
                                uint32_t n, uint64_t total, uint64_t limit)
{
    stage_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->slot_storage = ho_calloc(n, sizeof(uint32_t));
        j->slot_bytes = ho_calloc(n, sizeof(uint64_t));
    }
    if (!j || !j->slot_storage || !j->slot_bytes) {
        job_free(j);
        free(slots);
        return NULL;
    }
    slot_arrays(d, slots, n, j->slot_storage, j->slot_bytes);
    j->d = d;
    j->conn_id = c->id;
    j->session_id = c->session->id;
    j->rid = rid;
    j->memo = m;
    m->refs++;
    j->slots = slots;
    j->n_slots = n;
    j->total = total;
    j->share = staging_input(d, c->session, m, j->slot_storage,
                             j->slot_bytes, n, limit, &j->in);
    j->req.data = j;
    return j;
}

void srv_handle_stage(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__StageRequest *req)
{
    srv_session *s = c->session;
    char err[SRV_ERR_MAX], a[32], b[32];
    stage_slot *slots = NULL;
    uint64_t total = 0;
    srv_plan_memo *m = NULL;
    int rc = stage_memo(d, s, req, &m, err, sizeof(err));
    if (rc == 0)
        rc = check_slots(d, s, req, m, &slots, &total, err, sizeof(err));
    if (rc < 0) {
        srv_count_admission(&d->counters, SRV_ADMIT_STAGE, rc);
        srv_reply_error(c, rid, rc, "%s", err);
        return;
    }
    /* The reservation: what the copies take (or the client's own lower
     * limit), at least the largest copy (all of them without flash). */
    uint32_t n = (uint32_t)req->n_slots;
    uint64_t need = total, least = 0, align = d->cfg.ddr_alignment;
    if (req->ddr_limit && req->ddr_limit < need)
        need = req->ddr_limit;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t len = (slots[i].bytes + align - 1) & ~(align - 1);
        if (len > least)
            least = len;
    }
    if (!d->n_flash || least > need)
        least = need;
    s->ddr_need = need ? need : 1;
    s->ddr_min = least;
    s->ddr_total = total;
    rc = srv_stage_rebalance(d, err, sizeof(err));
    if (rc < 0) {
        free(slots);
        ask_restore(d, s);
        srv_count_admission(&d->counters, SRV_ADMIT_STAGE, rc);
        srv_reply_error(c, rid, rc, "the host copies (%s) cannot be given "
                        "a DDR reservation: %s",
                        ho_size_format(total, a, sizeof(a)), err);
        return;
    }
    uint64_t limit = s->ddr_limit;

    /* Everything fits: every host copy lives in DDR, nothing to plan. */
    if (total <= limit) {
        rc = install(d, c, rid, m, slots, n, total, limit, NULL, 0, 0, err,
                     sizeof(err));
        if (rc < 0)
            srv_reply_error(c, rid, rc, "%s", err);
        return;
    }
    if (d->n_flash == 0) {
        free(slots);
        ask_restore(d, s);
        srv_count_admission(&d->counters, SRV_ADMIT_STAGE, HO_E_UNSUPPORTED);
        srv_reply_error(c, rid, HO_E_UNSUPPORTED, "the host copies take %s, "
                        "above the %s the session may hold in DDR, and no "
                        "flash tier is configured to stage them",
                        ho_size_format(total, a, sizeof(a)),
                        ho_size_format(limit, b, sizeof(b)));
        return;
    }
    /* Plan the staging on a worker (it runs the planner). */
    stage_job *j = stage_job_new(d, c, rid, m, slots, n, total, limit);
    if (!j) {
        ask_restore(d, s);
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
        return;
    }
    rc = uv_queue_work(&d->loop, &j->req, job_work, job_after);
    if (rc < 0) {
        job_free(j);
        ask_restore(d, s);
        srv_reply_error(c, rid, HO_E_INTERNAL, "cannot queue the staging "
                        "plan: %s", uv_strerror(rc));
        return;
    }
    s->stage_pending = true;
    srv_work_begin(d);
}

/* The replay's figures as a RuntimeInfo (the client's counters from the
 * region, the daemon's own residency). */
static void stage_info(const srv_stage *st,
                       Hyperoffload__RuntimeInfo *ret_info)
{
    ho_ctl_header *h = st->hdr;
    ret_info->steps = atomic_load_explicit(&h->step, memory_order_relaxed);
    ret_info->current_op = atomic_load_explicit(&h->op, memory_order_relaxed);
    ret_info->ops_per_step = st->n_ops;
    ret_info->h2d_bytes =
        atomic_load_explicit(&h->h2d_bytes, memory_order_relaxed);
    ret_info->d2h_bytes =
        atomic_load_explicit(&h->d2h_bytes, memory_order_relaxed);
    ret_info->flash_out_bytes = atomic_load_explicit(&h->flash_out_bytes,
                                               memory_order_relaxed);
    ret_info->flash_in_bytes = atomic_load_explicit(&h->flash_in_bytes,
                                              memory_order_relaxed);
    ret_info->stall_us = (double)atomic_load_explicit(&h->stall_ns,
                                                memory_order_relaxed) / 1e3;
    ret_info->exposed_us = (double)atomic_load_explicit(&h->exposed_ns,
                                                  memory_order_relaxed) / 1e3;
    /* The daemon's own figures, not the region's (the client could write
     * anything there). */
    ret_info->host_copies_ddr = st->charged;
    ret_info->host_copies_flash = st->on_flash;
    ret_info->ddr_limit = st->ddr_limit;
    ret_info->flash_planned_share = st->planned_share;
    ret_info->host_copies_bytes = st->staged_bytes;
    ret_info->peak_device_bytes = atomic_load_explicit(&h->peak_device_bytes,
                                                 memory_order_relaxed);
}

bool srv_stage_runtime_info(srv_session *s,
                            Hyperoffload__RuntimeInfo *ret_info)
{
    if (!s->stage)
        return false;
    stage_info(s->stage, ret_info);
    ret_info->flash_share = srv_stage_flash_share(s->stage->d, s);
    return true;
}

bool srv_stage_post_plan_epoch(srv_session *s, uint64_t epoch)
{
    if (!s->stage || !s->stage->hdr)
        return false;
    atomic_store(&s->stage->hdr->plan_epoch, epoch);
    return true;
}

bool srv_stage_regions(const srv_session *s, srv_stage_sizes *ret_sizes)
{
    const srv_stage *st = s->stage;
    if (!st)
        return false;
    ret_sizes->control_bytes = st->ctl_size;
    ret_sizes->host_copies = st->n_slots;
    ret_sizes->host_copy_bytes = st->staged_bytes;
    return true;
}
