/*
 * client/runtime/runtime_engine.c - the replay's hot path: ho_step_begin,
 * ho_op_begin / ho_op_end (and ho_ops_run), ho_step_end, step statistics.
 *
 * Each hook does what PLANNER.md §3 says at that point, with real copies:
 *   op begin: publish the op (one atomic store; the eventfd only at
 *             milestone ops), retire completed copies, `before` actions,
 *             allocate the op's writes, check that every read is on device
 *             with its latest version (else HO_E_BAD_SCHEDULE before the op
 *             runs), wait for in-flight H2D of reads and copies of writes;
 *   op end:   `after` actions, implicit frees after last accesses.
 * `wait` blocks until the storage's in-flight copies are done (counted as
 * the step's wait time, part of its exposed time).
 * Prefetch and store go to the copy engines (H2D and D2H, or one shared
 * engine when the link is not duplex); a prefetch depends on the storage's
 * pending store and a store on its pending prefetch, across engines.
 * free_device defers the release until the storage's copies (and the
 * compute work before the free) are complete; an allocation first applies
 * completed releases, and when the capacity is still short waits for
 * pending ones (counted), then fails with HO_E_DEVICE.
 *
 * No malloc, no lock and no system call on this path except the eventfd
 * write at milestones, waking a sleeping copy thread, and real waits.
 *
 * Copy log (ho_replay_record_copies): when on, issue() takes the next
 * preallocated record of the step (or counts a drop), stamps the issue
 * time and hands the backend the record's times to fill; wait_ticket adds
 * the time it blocked to the record of the ticket it waited for.  Records
 * are read only after ho_step_end drained the engines.
 *
 * Divergence (an unexpected op index, a storage of another size, an
 * ho_op_check mismatch, a step that ends early) drains the copies, brings
 * every storage whose data is on host back to the device and turns the
 * rest of the step into "no offload": hooks allocate what ops write and
 * move nothing.  The next ho_step_begin restores the state the model
 * expects at t = 0.
 */
#include "client/runtime/runtime_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------------------- copies */

static inline bool ticket_done(ho_replay *r, hor_engine *x, uint64_t t)
{
    if (t <= x->done)
        return true;
    x->done = r->ops->completed(x->e);
    return t <= x->done;
}

/* The copy log: add dt to the record of x's in-flight ticket t. */
static void log_wait(ho_replay *r, hor_engine *x, uint64_t t, uint64_t dt)
{
    if (!r->log.active || x->tail == x->head)
        return;
    /* Tickets of an engine are consecutive, and so are its entries. */
    uint64_t first = x->q[x->tail & x->mask].ticket;
    if (t < first || t - first >= x->head - x->tail)
        return;
    const hor_inflight *f = &x->q[(x->tail + (t - first)) & x->mask];
    if (f->ticket == t && f->rec != HOR_NONE)
        r->log.buf[r->log.w][f->rec].wait_ns += dt;
}

/* The replay thread waited dt ns: exposed time of the step and of the
 * totals published in the control region. */
static void add_exposed(ho_replay *r, uint64_t dt)
{
    r->exposed_ns += dt;
    r->tot_exposed += dt;
    atomic_store_explicit(&r->ctl.h->exposed_ns, r->tot_exposed,
                          memory_order_relaxed);
}

/* A copy waited dt ns for its slot to come back from flash: stall (and
 * so exposed) time of the step and of the published totals. */
static void add_stall(ho_replay *r, uint64_t dt)
{
    r->stall_ns += dt;
    r->tot_stall += dt;
    atomic_store_explicit(&r->ctl.h->stall_ns, r->tot_stall,
                          memory_order_relaxed);
    add_exposed(r, dt);
}

/* Wait for ticket t of engine x; the time is exposed. */
static int wait_ticket(ho_replay *r, hor_engine *x, uint64_t t)
{
    if (ticket_done(r, x, t))
        return 0;
    uint64_t t0 = hor_now_ns();
    int rc = r->ops->wait(x->e, t);
    uint64_t dt = hor_now_ns() - t0;
    log_wait(r, x, t, dt);
    add_exposed(r, dt);
    if (rc < 0)
        return hor_fail(r->c, rc, "a copy failed on the device");
    if (x->done < t)
        x->done = t;
    return 0;
}

/* Apply the completion of copies x has finished. */
static void retire(ho_replay *r, hor_engine *x)
{
    if (x->tail == x->head)
        return;
    uint64_t done = r->ops->completed(x->e);
    if (done > x->done)
        x->done = done;
    while (x->tail < x->head) {
        const hor_inflight *f = &x->q[x->tail & x->mask];
        if (f->ticket > x->done)
            break;
        hor_slot_release(r, f->slot, f->store);
        /* A prefetch that read the pool after the daemon let go of it may
         * have read released pages: the step fails instead of going on
         * with them (the caller sees HO_E_DISCONNECTED). */
        if (!f->store && !r->failed && hor_ctl_revoked(r)) {
            r->failed = HO_E_DISCONNECTED;
            hor_fail(r->c, HO_E_DISCONNECTED, "the daemon let go of this "
                     "replay's host copies while storage %u was being "
                     "fetched from the pool", f->slot);
        }
        x->tail++;
    }
}

static inline void retire_all(ho_replay *r)
{
    retire(r, &r->eng[0]);
    if (r->n_eng > 1)
        retire(r, &r->eng[1]);
}

/* Make room for one more copy on engine x: retire what completed, and
 * when the ring is still full wait for its oldest copy. */
static int engine_room(ho_replay *r, hor_engine *x)
{
    if (x->head - x->tail < x->cap)
        return 0;
    retire(r, x);
    if (x->head - x->tail < x->cap)
        return 0;
    int rc = wait_ticket(r, x, x->q[x->tail & x->mask].ticket);
    if (rc < 0)
        return rc;
    retire(r, x);
    return 0;
}

/* The copy log: the next record of the step for a copy of s on engine x
 * at point (op, when), stamped with its issue time; NULL (a drop counted)
 * when the step's records are used up, or when the log is off.  *ret_rec
 * is its index, HOR_NONE without one. */
static hor_copy_rec *log_take(ho_replay *r, hor_engine *x, hob_dir dir,
                              const hor_storage *s, uint32_t op, int when,
                              uint64_t stall, uint32_t *ret_rec)
{
    hor_copylog *L = &r->log;
    *ret_rec = HOR_NONE;
    if (!L->active)
        return NULL;
    if (L->n[L->w] >= L->max) {
        L->dropped[L->w]++;
        return NULL;
    }
    uint32_t rec = (uint32_t)L->n[L->w]++;
    hor_copy_rec *c = &L->buf[L->w][rec];
    c->storage_id = s->id;
    c->bytes = s->bytes;
    c->op = op;
    c->when = (uint8_t)when;
    c->dir = dir == HOB_H2D ? HO_COPY_H2D : HO_COPY_D2H;
    c->engine = x == &r->eng[0] ? 0 : 1;
    c->tm.start_ns = c->tm.end_ns = 0;
    c->wait_ns = 0;
    c->stall_ns = stall;
    c->tm.issue_ns = hor_now_ns();
    *ret_rec = rec;
    return c;
}

/* Queue a copy of storage s between its device buffer and its host copy
 * on engine x, after dep's ticket dep_t (dep NULL: none); the action of
 * point (op, when).  Steps: room on the engine, the slot (DDR -> CLIENT,
 * maybe a stall), a copy-log record, submit, the in-flight entry that
 * retire() will release the slot by. */
static int issue(ho_replay *r, hor_engine *x, hob_dir dir, hor_storage *s,
                 hor_engine *dep, uint64_t dep_t, uint32_t op, int when,
                 uint64_t *ret_ticket)
{
    int rc = engine_room(r, x);
    if (rc < 0)
        return rc;
    uint64_t stall = 0;
    rc = hor_slot_acquire(r, s->slot, &stall);
    if (stall)
        add_stall(r, stall);
    if (rc < 0)
        return rc;
    uint8_t *host = hor_slot_ptr(r, s->slot);
    uint64_t t;
    if (dep && ticket_done(r, dep, dep_t))
        dep = NULL;
    uint32_t rec;
    hor_copy_rec *c = log_take(r, x, dir, s, op, when, stall, &rec);
    rc = r->ops->submit(x->e, dir, dir == HOB_H2D ? s->ptr : (void *)host,
                        dir == HOB_H2D ? (const void *)host : s->ptr,
                        s->bytes, dep ? dep->e : NULL, dep_t,
                        c ? &c->tm : NULL, &t);
    if (rc < 0) {
        if (c)
            r->log.n[r->log.w]--;
        hor_slot_release(r, s->slot, false);
        return hor_fail(r->c, rc, "cannot queue a copy of storage %llu",
                        (unsigned long long)s->id);
    }
    hor_inflight *f = &x->q[x->head & x->mask];
    f->ticket = t;
    f->slot = s->slot;
    f->rec = rec;
    f->store = dir == HOB_D2H;
    x->head++;
    *ret_ticket = t;
    return 0;
}

/* ----------------------------------------------------------- memory */

static bool release_done(ho_replay *r, const hor_release *x)
{
    return ticket_done(r, r->h2d, x->h2d) && ticket_done(r, r->d2h, x->d2h) &&
           (x->cmp == 0 || r->ops->compute_completed(r->bst) >= x->cmp);
}

/* Apply every pending release whose copies are complete. */
static void reap(ho_replay *r)
{
    for (uint32_t i = 0; i < r->n_rel;) {
        if (release_done(r, &r->rel[i])) {
            hor_dev_free_block(r->dev, r->rel[i].blk);
            r->rel[i] = r->rel[--r->n_rel];
        } else {
            i++;
        }
    }
}

/* Wait until release i can be applied, and apply it. */
static int reap_wait(ho_replay *r, uint32_t i)
{
    hor_release *x = &r->rel[i];
    int rc = wait_ticket(r, r->h2d, x->h2d);
    if (rc == 0)
        rc = wait_ticket(r, r->d2h, x->d2h);
    if (rc == 0 && x->cmp && r->ops->compute_completed(r->bst) < x->cmp) {
        uint64_t t0 = hor_now_ns();
        rc = r->ops->compute_wait(r->bst, x->cmp);
        r->exposed_ns += hor_now_ns() - t0;
    }
    if (rc < 0)
        return rc;
    hor_dev_free_block(r->dev, x->blk);
    r->rel[i] = r->rel[--r->n_rel];
    return 0;
}

/* Give storage s a device buffer (holding no data yet). */
static int dev_alloc(ho_replay *r, hor_storage *s, uint32_t op)
{
    ho_device *d = r->dev;
    if (r->n_rel)
        reap(r);
    if (s->bytes > d->capacity - d->used && r->n_rel) {
        /* The real copies are slower than the model's: wait for deferred
         * releases, oldest-issued first, until the allocation fits. */
        r->alloc_waits++;
        while (r->n_rel && s->bytes > d->capacity - d->used) {
            int rc = reap_wait(r, 0);
            if (rc < 0)
                return rc;
            reap(r);
        }
    }
    int rc = hor_dev_alloc(d, s->bytes, &s->blk, &s->ptr);
    if (rc < 0) {
        char why[HOR_ERRLEN];
        snprintf(why, sizeof(why), "%s", ho_runtime_last_error());
        return hor_fail(r->c, rc, "op %u: allocating storage %llu (%llu "
                        "bytes): %s", op, (unsigned long long)s->id,
                        (unsigned long long)s->bytes, why);
    }
    s->dev_valid = false;
    return 0;
}

/* Take s off the device; its memory returns once its copies are done. */
static int dev_release(ho_replay *r, hor_storage *s)
{
    hor_release x = {.blk = s->blk};
    if (!ticket_done(r, r->h2d, s->h2d))
        x.h2d = s->h2d;
    if (!ticket_done(r, r->d2h, s->d2h))
        x.d2h = s->d2h;
    int rc = r->ops->compute_mark(r->bst, &x.cmp);
    if (rc < 0)
        return hor_fail(r->c, rc, "cannot mark the compute stream");
    if (x.cmp && r->ops->compute_completed(r->bst) >= x.cmp)
        x.cmp = 0;
    s->ptr = NULL;
    s->blk = HOR_NONE;
    s->dev_valid = false;
    if (!x.h2d && !x.d2h && !x.cmp) {
        hor_dev_free_block(r->dev, x.blk);
        return 0;
    }
    if (r->n_rel == r->cap_rel) {
        rc = reap_wait(r, 0);
        if (rc < 0)
            return rc;
    }
    r->rel[r->n_rel++] = x;
    return 0;
}

void hor_storage_drop_device(ho_replay *r, hor_storage *s)
{
    if (s->blk != HOR_NONE)
        hor_dev_free_block(r->dev, s->blk);
    s->ptr = NULL;
    s->blk = HOR_NONE;
    s->dev_valid = false;
}

int hor_drain(ho_replay *r)
{
    int rc = 0;
    for (unsigned k = 0; k < r->n_eng; k++) {
        hor_engine *x = &r->eng[k];
        if (x->head > x->tail) {
            int w = wait_ticket(r, x, x->q[(x->head - 1) & x->mask].ticket);
            if (w < 0 && rc == 0)
                rc = w;
        }
    }
    retire_all(r);
    while (r->n_rel) {
        int w = reap_wait(r, r->n_rel - 1);
        if (w < 0) {
            /* The copy failed: give the memory back anyway. */
            hor_dev_free_block(r->dev, r->rel[r->n_rel - 1].blk);
            r->n_rel--;
            if (rc == 0)
                rc = w;
        }
    }
    return rc;
}

/* ----------------------------------------------------------- errors */

static const char *when_name(int when)
{
    return when == PLAN_BEFORE ? "before" : "after";
}

/* A schedule error at run time: the step stops here. */
static int bad(ho_replay *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int bad(ho_replay *r, const char *fmt, ...)
{
    char msg[HOR_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->failed = HO_E_BAD_SCHEDULE;
    return hor_fail(r->c, HO_E_BAD_SCHEDULE, "%s", msg);
}

/* Bring every storage whose latest data is on host back to the device. */
static int bring_back(ho_replay *r)
{
    int rc = hor_drain(r);
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < r->n_st; i++) {
        hor_storage *s = &r->st[i];
        if (s->ptr || !s->host_valid || s->host_version != s->version)
            continue;
        rc = dev_alloc(r, s, r->next_op);
        if (rc < 0)
            return rc;
        uint64_t stall = 0;
        rc = hor_slot_acquire(r, s->slot, &stall);
        r->stall_ns += stall;
        r->exposed_ns += stall;
        if (rc < 0)
            return rc;
        rc = r->ops->copy_sync(r->bst, HOB_H2D, s->ptr,
                               hor_slot_ptr(r, s->slot), s->bytes);
        hor_slot_release(r, s->slot, false);
        if (rc < 0)
            return hor_fail(r->c, rc, "bringing storage %llu back to the "
                            "device failed", (unsigned long long)s->id);
        s->dev_valid = true;
    }
    return 0;
}

int hor_diverge(ho_replay *r, const char *fmt, ...)
{
    char msg[HOR_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (r->diverged || r->failed)
        return hor_fail(r->c, r->failed ? r->failed : HO_E_DIVERGED, "%s",
                        msg);
    r->diverged = true;
    r->in_op = false;
    int rc = bring_back(r);
    if (rc < 0) {
        r->failed = rc;
        char why[HOR_ERRLEN];
        snprintf(why, sizeof(why), "%s", ho_runtime_last_error());
        return hor_fail(r->c, rc, "%s; falling back to no offload failed: "
                        "%s", msg, why);
    }
    return hor_fail(r->c, HO_E_DIVERGED, "%s; the rest of step %llu runs "
                    "without offload", msg, (unsigned long long)r->step);
}

/* ----------------------------------------------------------- actions */

/* The five actions of PLANNER.md, each checked against the model's state
 * first (a violation is HO_E_BAD_SCHEDULE for the step); a failure of the
 * copy machinery is sticky for the step (r->failed). */

static int act_prefetch(ho_replay *r, hor_storage *s, uint32_t op, int when)
{
    uint64_t t;
    if (s->ptr)
        return bad(r, "op %u %s: prefetch of storage %llu, which is "
                   "already on device", op, when_name(when),
                   (unsigned long long)s->id);
    if (s->lost && !s->host_valid) /* runtime_restage.c */
        return r->failed = hor_fail(r->c, HO_E_DISCONNECTED, "op %u %s: "
                                    "storage %llu's host copy was lost "
                                    "with the daemon that went away (on "
                                    "its flash or moving); write it again "
                                    "(ho_storage_write_host) or make a new "
                                    "replay", op, when_name(when),
                                    (unsigned long long)s->id);
    if (!s->host_valid || s->host_version != s->version)
        return bad(r, "op %u %s: prefetch of storage %llu, whose "
                   "host copy is %s", op, when_name(when),
                   (unsigned long long)s->id,
                   s->host_valid ? "stale" : "missing");
    int rc = dev_alloc(r, s, op);
    if (rc < 0)
        return r->failed = rc;
    rc = issue(r, r->h2d, HOB_H2D, s, r->d2h, s->d2h, op, when, &t);
    if (rc < 0)
        return r->failed = rc;
    s->h2d = t;
    s->dev_valid = true;
    r->h2d_bytes += s->bytes;
    r->tot_h2d += s->bytes;
    atomic_store_explicit(&r->ctl.h->h2d_bytes, r->tot_h2d,
                          memory_order_relaxed);
    return 0;
}

static int act_store(ho_replay *r, hor_storage *s, uint32_t op, int when)
{
    uint64_t t;
    if (!s->ptr || !s->dev_valid)
        return bad(r, "op %u %s: store of storage %llu, which is not "
                   "on device", op, when_name(when),
                   (unsigned long long)s->id);
    atomic_store_explicit(&r->ctl.slots[s->slot].dropped, 0,
                          memory_order_relaxed);
    int rc = issue(r, r->d2h, HOB_D2H, s, r->h2d, s->h2d, op, when, &t);
    if (rc < 0)
        return r->failed = rc;
    s->d2h = t;
    s->host_valid = true;
    s->lost = false;
    s->host_version = s->version;
    r->d2h_bytes += s->bytes;
    r->tot_d2h += s->bytes;
    atomic_store_explicit(&r->ctl.h->d2h_bytes, r->tot_d2h,
                          memory_order_relaxed);
    return 0;
}

static int act_free_device(ho_replay *r, hor_storage *s, uint32_t op,
                           int when)
{
    if (!s->ptr)
        return bad(r, "op %u %s: free_device of storage %llu, which "
                   "is not on device", op, when_name(when),
                   (unsigned long long)s->id);
    int rc = dev_release(r, s);
    if (rc < 0)
        return r->failed = rc;
    return 0;
}

static int act_free_host(ho_replay *r, hor_storage *s, uint32_t op, int when)
{
    if (!s->host_valid)
        return bad(r, "op %u %s: free_host of storage %llu, which "
                   "has no host copy", op, when_name(when),
                   (unsigned long long)s->id);
    s->host_valid = false;
    atomic_store_explicit(&r->ctl.slots[s->slot].dropped, 1,
                          memory_order_relaxed);
    return 0;
}

/* `wait s`: the point's clock moves to the completion of every in-flight
 * copy of s -- the replay thread blocks until they are done, so the
 * actions after it at this point are issued then and, before an op, the op
 * starts no earlier.  A deliberate stall: exposed time, and counted apart
 * as the step's wait time. */
static int act_wait(ho_replay *r, hor_storage *s)
{
    uint64_t e0 = r->exposed_ns;
    int rc = wait_ticket(r, r->h2d, s->h2d);
    if (rc == 0)
        rc = wait_ticket(r, r->d2h, s->d2h);
    r->wait_ns += r->exposed_ns - e0; /* the time it blocked */
    r->waits++;
    if (rc < 0)
        return r->failed = rc;
    /* What the copies held (slots, deferred releases) is free now. */
    retire_all(r);
    if (r->n_rel)
        reap(r);
    return 0;
}

/* The schedule's actions at point (op, when), in order. */
static int run_actions(ho_replay *r, uint32_t op, int when)
{
    uint32_t p = op * 2 + (uint32_t)when;
    for (uint32_t k = r->act_off[p]; k < r->act_off[p + 1]; k++) {
        const hor_act *a = &r->acts[k];
        hor_storage *s = &r->st[a->st];
        int rc = 0;
        switch (a->kind) {
        case PLAN_ACT_PREFETCH:
            rc = act_prefetch(r, s, op, when);
            break;
        case PLAN_ACT_STORE:
            rc = act_store(r, s, op, when);
            break;
        case PLAN_ACT_FREE_DEVICE:
            rc = act_free_device(r, s, op, when);
            break;
        case PLAN_ACT_FREE_HOST:
            rc = act_free_host(r, s, op, when);
            break;
        case PLAN_ACT_WAIT:
            rc = act_wait(r, s);
            break;
        default:
            return bad(r, "op %u %s: action of unknown kind %u", op,
                       when_name(when), (unsigned)a->kind);
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ----------------------------------------------------------- hooks */

static inline const uint32_t *op_refs(const ho_replay *r, uint32_t op,
                                      uint32_t *n_reads, uint32_t *n_writes)
{
    const plan_op *o = &r->pt->ops[op];
    *n_reads = o->n_reads;
    *n_writes = o->n_writes;
    return r->pt->refs + o->first_ref;
}

/* Give every storage op writes a device buffer when it has none. */
static int alloc_writes(ho_replay *r, uint32_t op, const uint32_t *ref,
                        uint32_t nr, uint32_t nw)
{
    for (uint32_t k = nr; k < nr + nw; k++) {
        hor_storage *s = &r->st[ref[k]];
        if (!s->ptr) {
            int rc = dev_alloc(r, s, op);
            if (rc < 0)
                return r->failed = rc;
        }
    }
    return 0;
}

/* No offload: give the op's writes a buffer, move nothing. */
static int fallback_begin(ho_replay *r, uint32_t op)
{
    if (op >= r->n_ops)
        return 0;
    uint32_t nr, nw;
    const uint32_t *ref = op_refs(r, op, &nr, &nw);
    for (uint32_t k = nr; k < nr + nw; k++) {
        hor_storage *s = &r->st[ref[k]];
        if (!s->ptr) {
            int rc = dev_alloc(r, s, op);
            if (rc < 0)
                return r->failed = rc;
        }
        s->version++;
        s->dev_valid = true;
    }
    return 0;
}

/* Tell the daemon which op runs: one relaxed store, and a write of the
 * eventfd at milestone ops (where its staging plan acts). */
static void publish_op(ho_replay *r, uint32_t op)
{
    hor_ctl *x = &r->ctl;
    atomic_store_explicit(&x->h->op, op, memory_order_relaxed);
    if (x->efd >= 0 && ho_ctl_is_milestone(x->h, op))
        hor_ctl_signal(x);
}

/* Every read of op is on device with its latest version, and its H2D is
 * complete. */
static int await_reads(ho_replay *r, uint32_t op, const uint32_t *ref,
                       uint32_t nr)
{
    for (uint32_t k = 0; k < nr; k++) {
        hor_storage *s = &r->st[ref[k]];
        if (!s->ptr || !s->dev_valid)
            return bad(r, "op %u (%s) reads storage %llu, which is not on "
                       "device with its latest version: the schedule lacks "
                       "a prefetch or frees it too early", op,
                       plan_op_name(r->pt, op), (unsigned long long)s->id);
        int rc = wait_ticket(r, r->h2d, s->h2d);
        if (rc < 0)
            return r->failed = rc;
    }
    /* The prefetches waited for are retired before the op reads what they
     * brought: one that read the pool after the daemon let go of it (a
     * daemon stopped while the copy was queued) fails the step here, not
     * after the op consumed released pages. */
    retire(r, r->h2d);
    return r->failed;
}

/* No copy of a write is in flight any more; each write then holds a new
 * version on device. */
static int await_writes(ho_replay *r, const uint32_t *ref, uint32_t nr,
                        uint32_t nw)
{
    for (uint32_t k = nr; k < nr + nw; k++) {
        hor_storage *s = &r->st[ref[k]];
        int rc = wait_ticket(r, r->h2d, s->h2d);
        if (rc == 0)
            rc = wait_ticket(r, r->d2h, s->d2h);
        if (rc < 0)
            return r->failed = rc;
        s->version++;
        s->dev_valid = true;
    }
    return 0;
}

/* What both op hooks check first: the step's sticky failure, and that a
 * step is running (else HO_E_STATE; `hint` ends the sentence). */
static int hook_check(ho_replay *r, const char *hook, uint32_t op,
                      const char *hint)
{
    if (r->failed)
        return r->failed;
    if (!r->in_step)
        return hor_fail(r->c, HO_E_STATE, "%s(%u) outside a step%s", hook, op,
                        hint);
    return 0;
}

/* Steps: publish the op, retire completed copies, the `before` actions,
 * buffers for the writes, the reads checked and awaited, the writes'
 * copies awaited (each write then has a new version). */
HO_EXPORT int ho_op_begin(ho_replay *r, uint32_t op)
{
    int rc = hook_check(r, "ho_op_begin", op, " (call ho_step_begin)");
    if (rc != 0)
        return rc;
    if (r->diverged)
        return fallback_begin(r, op);
    if (op != r->next_op || r->in_op)
        return hor_diverge(r, "op %u began where the trace has op %u%s", op,
                           r->in_op ? r->cur_op : r->next_op,
                           r->in_op ? " still running" : "");
    publish_op(r, op);
    retire_all(r);
    rc = run_actions(r, op, PLAN_BEFORE);
    if (rc < 0)
        return rc;
    uint32_t nr, nw;
    const uint32_t *ref = op_refs(r, op, &nr, &nw);
    rc = alloc_writes(r, op, ref, nr, nw);
    if (rc < 0)
        return rc;
    rc = await_reads(r, op, ref, nr);
    if (rc < 0)
        return rc;
    rc = await_writes(r, ref, nr, nw);
    if (rc < 0)
        return rc;
    r->in_op = true;
    r->cur_op = op;
    return 0;
}

/* The storages whose last access was op and that the model does not
 * keep leave the device (their memory returns once their copies are
 * done). */
static int implicit_frees(ho_replay *r, uint32_t op)
{
    for (uint32_t k = r->free_off[op]; k < r->free_off[op + 1]; k++) {
        hor_storage *s = &r->st[r->frees[k]];
        if (s->ptr) {
            int rc = dev_release(r, s);
            if (rc < 0)
                return r->failed = rc;
        }
    }
    return 0;
}

/* Steps: the `after` actions, the implicit frees, the op counted. */
HO_EXPORT int ho_op_end(ho_replay *r, uint32_t op)
{
    int rc = hook_check(r, "ho_op_end", op, "");
    if (rc != 0)
        return rc;
    if (r->diverged)
        return 0;
    if (!r->in_op || op != r->cur_op)
        return hor_diverge(r, "op %u ended where %s", op,
                           r->in_op ? "another op runs" : "no op runs");
    rc = run_actions(r, op, PLAN_AFTER);
    if (rc < 0)
        return rc;
    rc = implicit_frees(r, op);
    if (rc < 0)
        return rc;
    r->in_op = false;
    r->next_op = op + 1;
    r->ops_done++;
    r->tot_ops++;
    atomic_store_explicit(&r->ctl.h->ops_done, r->tot_ops,
                          memory_order_relaxed);
    return 0;
}

HO_EXPORT int ho_ops_run(ho_replay *r, uint32_t first, uint32_t count,
                         ho_op_fn fn, void *ctx)
{
    if (count && !fn)
        return -EINVAL;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t op = first + i;
        int rc = ho_op_begin(r, op);
        if (rc < 0)
            return rc;
        rc = fn(ctx, op);
        if (rc != 0)
            return rc;
        rc = ho_op_end(r, op);
        if (rc < 0)
            return rc;
    }
    return 0;
}

HO_EXPORT int ho_op_check(ho_replay *r, uint32_t op, const uint64_t *reads,
                          uint32_t n_reads, const uint64_t *writes,
                          uint32_t n_writes)
{
    if (!r->opts.verify_ops || r->diverged || r->failed)
        return r->failed;
    if ((n_reads && !reads) || (n_writes && !writes))
        return -EINVAL;
    if (op >= r->n_ops)
        return hor_diverge(r, "ho_op_check: op %u is past the trace's %u "
                           "ops", op, r->n_ops);
    uint32_t nr, nw;
    const uint32_t *ref = op_refs(r, op, &nr, &nw);
    /* Each side's set must equal the trace's (duplicates allowed). */
    for (int side = 0; side < 2; side++) {
        const uint64_t *ids = side ? writes : reads;
        uint32_t n = side ? n_writes : n_reads;
        const uint32_t *tr = side ? ref + nr : ref;
        uint32_t tn = side ? nw : nr;
        if (++r->stamp == 0)
            r->stamp = 1;
        for (uint32_t k = 0; k < tn; k++)
            r->mark[tr[k]] = r->stamp;
        uint32_t distinct = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t s = plan_trace_find(r->pt, ids[k]);
            if (s == PLAN_NONE || r->mark[s] == 0 ||
                (r->mark[s] != r->stamp && r->mark[s] != r->stamp + 1))
                return hor_diverge(r, "op %u %s storage %llu, which the "
                                   "trace's op does not", op,
                                   side ? "writes" : "reads",
                                   (unsigned long long)ids[k]);
            if (r->mark[s] == r->stamp) {
                r->mark[s] = r->stamp + 1; /* seen */
                distinct++;
            }
        }
        if (++r->stamp == 0)
            r->stamp = 1;
        if (distinct != tn)
            return hor_diverge(r, "op %u %s %u storages, the trace's op %u",
                               op, side ? "writes" : "reads", distinct, tn);
    }
    return 0;
}

/* ----------------------------------------------------------- steps */

/* Restore the model's state at t = 0 of the next step: after a normal
 * step this frees nothing that the model keeps, re-creates the inputs
 * (`initial: device`, not retained) and resets host-copy validity; after a
 * divergence it also stores retained host-resident storages back and
 * frees what must not be on device. */
/* A retained `initial: host` storage whose latest data is on device only:
 * store it back to its host copy, synchronously. */
static int store_back(ho_replay *r, hor_storage *s)
{
    uint64_t stall = 0;
    int rc = hor_slot_acquire(r, s->slot, &stall);
    if (rc < 0)
        return rc;
    rc = r->ops->copy_sync(r->bst, HOB_D2H, hor_slot_ptr(r, s->slot), s->ptr,
                           s->bytes);
    hor_slot_release(r, s->slot, rc == 0);
    if (rc < 0)
        return hor_fail(r->c, rc, "storing storage %llu back to host failed",
                        (unsigned long long)s->id);
    s->lost = false;
    return 0;
}

/* The storage's host copy holds nothing the next step needs: the daemon
 * may drop it (it stops staging it). */
static void drop_host_copy(ho_replay *r, hor_storage *s)
{
    if (s->slot != HOR_NONE && s->host_valid) {
        s->host_valid = false;
        atomic_store(&r->ctl.slots[s->slot].dropped, 1);
    }
}

static int normalize(ho_replay *r)
{
    int rc = hor_drain(r);
    if (rc < 0)
        return rc;
    /* Two passes: every release first, then the allocations of the
     * device-initial storages, so that the device never holds both the
     * last step's leftovers and the next step's start (the model's t = 0
     * is the state after every release). */
    for (uint32_t k = 0; k < 2 * r->n_st; k++) {
        hor_storage *s = &r->st[k % r->n_st];
        if ((s->initial == PLAN_INIT_DEVICE) != (k >= r->n_st))
            continue;
        switch (s->initial) {
        case PLAN_INIT_HOST:
            if (s->ptr) {
                if (s->retained && s->dev_valid &&
                    (!s->host_valid || s->host_version != s->version) &&
                    (rc = store_back(r, s)) < 0)
                    return rc;
                hor_storage_drop_device(r, s);
            }
            /* The next step starts from whatever its host copy holds
             * (nothing, when it was lost: runtime_restage.c). */
            s->host_valid = !s->lost;
            s->host_version = s->version;
            break;
        case PLAN_INIT_DEVICE:
            if (!s->ptr && (s->retained || s->accessed)) {
                rc = dev_alloc(r, s, 0);
                if (rc < 0)
                    return rc;
            }
            s->dev_valid = s->ptr != NULL;
            drop_host_copy(r, s);
            s->lost = false;
            break;
        default:
            if (s->ptr)
                hor_storage_drop_device(r, s);
            drop_host_copy(r, s);
            s->lost = false;
            break;
        }
        s->h2d = s->d2h = 0;
    }
    return 0;
}

/* Arm the copy log for the step about to begin (when it is on): the
 * engines' clocks restart (the last step's copies are drained) and the
 * buffer the last completed step did not use takes the records. */
static int log_begin_step(ho_replay *r)
{
    hor_copylog *L = &r->log;
    L->active = L->max > 0;
    if (!L->active)
        return 0;
    for (unsigned k = 0; k < r->n_eng && r->ops->epoch; k++) {
        int rc = r->ops->epoch(r->eng[k].e);
        if (rc < 0) {
            L->active = false;
            return hor_fail(r->c, rc, "cannot start the copy log's clock on "
                            "copy engine %u", k);
        }
    }
    L->w = L->last == 0 ? 1u : 0u;
    L->n[L->w] = L->dropped[L->w] = 0;
    L->step[L->w] = r->step + 1;
    return 0;
}

HO_EXPORT int ho_step_begin(ho_replay *r)
{
    if (!r)
        return -EINVAL;
    if (r->in_step)
        return hor_fail(r->c, HO_E_STATE, "step %llu has not ended",
                        (unsigned long long)r->step);
    if (r->failed) /* the last step could not restore the state */
        return hor_fail(r->c, r->failed, "the replay cannot continue: the "
                        "end of step %llu failed (%s)",
                        (unsigned long long)r->step,
                        ho_strerror(r->failed));
    /* A daemon that went away: staged again first (reconnect on). */
    int rc = hor_restage_if_due(r);
    if (rc < 0)
        return rc;
    /* A step boundary: the node arbiter's new plan, if it posted one
     * (a failed switch keeps the old plan; its error is recorded). */
    (void)hor_replay_switch(r);
    if (r->failed)
        return hor_fail(r->c, r->failed, "the replay cannot continue: "
                        "switching plans failed (%s)",
                        ho_strerror(r->failed));
    rc = log_begin_step(r);
    if (rc < 0)
        return rc;
    r->diverged = false;
    r->step++;
    r->in_step = true;
    r->in_op = false;
    r->next_op = 0;
    r->exposed_ns = r->stall_ns = r->h2d_bytes = r->d2h_bytes = 0;
    r->wait_ns = r->waits = 0;
    r->ops_done = 0;
    r->alloc_waits = 0;
    r->flash_in0 = atomic_load(&r->ctl.h->flash_in_bytes);
    r->flash_out0 = atomic_load(&r->ctl.h->flash_out_bytes);
    hor_dev_mark_peak(r->dev);
    r->t0_ns = hor_now_ns();
    r->log.t0[r->log.w] = r->t0_ns;
    return 0;
}

/* End-of-step checks of the model (rule 10). */
static int end_checks(ho_replay *r)
{
    for (uint32_t i = 0; i < r->n_st; i++) {
        const hor_storage *s = &r->st[i];
        if (!s->retained)
            continue;
        if (s->initial != PLAN_INIT_HOST && !s->ptr)
            return bad(r, "step end: retained storage %llu is not on device",
                       (unsigned long long)s->id);
        if (s->initial == PLAN_INIT_HOST &&
            (s->ptr || !s->host_valid || s->host_version != s->version))
            return bad(r, "step end: retained storage %llu (initial: host) "
                       "%s", (unsigned long long)s->id,
                       s->ptr ? "is still on device"
                              : "has no current host copy");
    }
    return 0;
}

/* Record the step's figures in the history ring (and close the copy
 * log's step) and publish its end in the control region; returns the
 * record. */
static const ho_step_info *record_step(ho_replay *r)
{
    ho_step_info *info = &r->hist[r->n_hist % HO_STEP_HISTORY];
    ho_ctl_header *h = r->ctl.h;
    memset(info, 0, sizeof(*info));
    info->step = r->step;
    info->ops = (uint32_t)r->ops_done;
    info->diverged = r->diverged ? 1 : 0;
    info->wall_us = (double)(hor_now_ns() - r->t0_ns) / 1e3;
    info->exposed_us = (double)r->exposed_ns / 1e3;
    info->stall_us = (double)r->stall_ns / 1e3;
    info->wait_us = (double)r->wait_ns / 1e3;
    info->waits = r->waits;
    info->h2d_bytes = r->h2d_bytes;
    info->d2h_bytes = r->d2h_bytes;
    info->flash_in_bytes = atomic_load(&h->flash_in_bytes) - r->flash_in0;
    info->flash_out_bytes = atomic_load(&h->flash_out_bytes) - r->flash_out0;
    info->peak_device_bytes = r->dev->mark_peak;
    info->ddr_bytes = atomic_load(&h->ddr_bytes);
    info->flash_bytes = atomic_load(&h->flash_bytes);
    r->n_hist++;
    if (r->log.active) {
        /* Every copy of the step is complete (drained before). */
        r->log.last = (int)r->log.w;
        r->log.active = false;
    }
    atomic_store(&h->peak_device_bytes, info->peak_device_bytes);
    atomic_store(&h->op, HO_CTL_IDLE);
    atomic_store(&h->step, r->step);
    return info;
}

/* Steps: a step that ended early diverges; drain; the end-of-step checks;
 * record; normalize for the next step (a failure there is sticky). */
HO_EXPORT int ho_step_end(ho_replay *r, ho_step_info *ret)
{
    int rc = 0;
    if (!r)
        return -EINVAL;
    if (!r->in_step)
        return hor_fail(r->c, HO_E_STATE, "no step to end");
    if (!r->failed && !r->diverged && (r->in_op || r->next_op != r->n_ops))
        rc = hor_diverge(r, "step ended after %u of %u ops%s", r->next_op,
                         r->n_ops, r->in_op ? ", inside an op" : "");
    int drc = hor_drain(r);
    if (rc == 0 && drc < 0)
        rc = drc;
    if (rc == 0 && r->failed)
        rc = r->failed;
    if (rc == 0 && !r->diverged)
        rc = end_checks(r);

    const ho_step_info *info = record_step(r);
    r->in_step = false;
    r->in_op = false;
    /* The daemon went away during the step: staged again before the
     * restoration, which may need host copies. */
    int src = hor_restage_if_due(r);
    if (rc == 0 && src < 0)
        rc = src;
    /* Leave the state the model has at t = 0 of the next step, so that
     * the application can provide the next step's inputs now. */
    r->failed = 0;
    int nrc = normalize(r);
    if (nrc < 0) {
        r->failed = nrc;
        if (rc == 0)
            rc = nrc;
    }
    if (ret)
        *ret = *info;
    return rc;
}

HO_EXPORT int ho_step_stats(const ho_replay *r, uint64_t step,
                            ho_step_info *ret)
{
    if (!r || !ret)
        return -EINVAL;
    if (r->n_hist == 0)
        return -ENOENT;
    if (step == 0)
        step = r->hist[(r->n_hist - 1) % HO_STEP_HISTORY].step;
    for (uint64_t k = 0; k < r->n_hist && k < HO_STEP_HISTORY; k++) {
        const ho_step_info *i = &r->hist[(r->n_hist - 1 - k) %
                                         HO_STEP_HISTORY];
        if (i->step == step) {
            *ret = *i;
            return 0;
        }
        if (i->step < step)
            break;
    }
    return -ENOENT;
}

/* ----------------------------------------------------------- copy log */

/* Timing of the backend's engines on or off. */
static int log_timing(ho_replay *r, int on)
{
    int rc = 0;
    for (unsigned k = 0; k < r->n_eng && r->ops->timing; k++) {
        if (!r->eng[k].e)
            continue;
        int t = r->ops->timing(r->eng[k].e, on);
        if (t < 0 && rc == 0)
            rc = t;
    }
    return rc;
}

void hor_log_done(ho_replay *r)
{
    hor_copylog *L = &r->log;
    if (L->max)
        log_timing(r, 0);
    free(L->buf[0]);
    free(L->buf[1]);
    memset(L, 0, sizeof(*L));
    L->last = -1;
}

HO_EXPORT int ho_replay_record_copies(ho_replay *r, uint32_t max_records)
{
    if (!r)
        return -EINVAL;
    if (r->in_step)
        return hor_fail(r->c, HO_E_STATE, "the copy log is turned on or off "
                        "between steps, not inside step %llu",
                        (unsigned long long)r->step);
    if (max_records > HO_COPY_LOG_MAX)
        return hor_fail(r->c, HO_E_INVALID_SIZE, "a copy log of %u records "
                        "per step, at most %u", max_records,
                        (unsigned)HO_COPY_LOG_MAX);
    /* Between steps nothing is in flight; make sure of it. */
    int rc = hor_drain(r);
    if (rc < 0)
        return rc;
    hor_log_done(r);
    if (max_records == 0)
        return 0;
    hor_copylog *L = &r->log;
    L->buf[0] = calloc(max_records, sizeof(*L->buf[0]));
    L->buf[1] = calloc(max_records, sizeof(*L->buf[1]));
    if (!L->buf[0] || !L->buf[1]) {
        hor_log_done(r);
        return hor_fail(r->c, -ENOMEM, "no memory for a copy log of %u "
                        "records", max_records);
    }
    L->max = max_records;
    rc = log_timing(r, 1);
    if (rc < 0) {
        hor_log_done(r);
        return hor_fail(r->c, rc, "the %s backend cannot time copies",
                        r->ops->name);
    }
    return 0;
}

/* The buffer of the last completed step, or a negative code. */
static int log_last(const ho_replay *r)
{
    if (!r->log.max)
        return hor_fail(r->c, HO_E_STATE, "the copy log is off "
                        "(ho_replay_record_copies)");
    if (r->log.last < 0)
        return hor_fail(r->c, -ENOENT, "no step has completed with the "
                        "copy log on");
    return r->log.last;
}

/* ns from t0 to t (t >= t0: every time of a step is taken after its
 * start). */
static int64_t rel_ns(uint64_t t, uint64_t t0)
{
    return t >= t0 ? (int64_t)(t - t0) : -(int64_t)(t0 - t);
}

HO_EXPORT int ho_step_copies(const ho_replay *r, ho_copy_record *out,
                             size_t max, size_t *ret_n)
{
    if (!r || !ret_n || (max && !out))
        return -EINVAL;
    int b = log_last(r);
    if (b < 0)
        return b;
    const hor_copylog *L = &r->log;
    uint64_t t0 = L->t0[b];
    size_t n = (size_t)L->n[b];
    for (size_t i = 0; i < n && i < max; i++) {
        const hor_copy_rec *c = &L->buf[b][i];
        ho_copy_record *o = &out[i];
        *o = (ho_copy_record){
            .storage_id = c->storage_id, .bytes = c->bytes, .op = c->op,
            .when = c->when, .dir = c->dir, .engine = c->engine,
            .issue_ns = rel_ns(c->tm.issue_ns, t0),
            .wait_ns = c->wait_ns, .stall_ns = c->stall_ns,
        };
        if (c->tm.end_ns == 0) {
            o->start_ns = o->end_ns = -1;
        } else {
            /* As the backend reported them (see hob_times). */
            o->start_ns = rel_ns(c->tm.start_ns, t0);
            o->end_ns = rel_ns(c->tm.end_ns, t0);
        }
    }
    *ret_n = n;
    return 0;
}

HO_EXPORT int ho_step_copies_info(const ho_replay *r, ho_copy_log_info *ret)
{
    if (!r || !ret)
        return -EINVAL;
    int b = log_last(r);
    if (b < 0)
        return b;
    memset(ret, 0, sizeof(*ret));
    ret->step = r->log.step[b];
    ret->records = r->log.n[b];
    ret->dropped = r->log.dropped[b];
    ret->max_records = r->log.max;
    return 0;
}
