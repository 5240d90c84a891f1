/*
 * planner/node/node_judge.c - the node judge: NODE.md §3 with the open
 * cases of docs/node.md, exactly.
 *
 * An event-driven fluid simulation in node time T.  At each instant:
 *   1. copies whose latency ends start moving; copies whose bytes are all
 *      moved complete (their engine frees; releases waiting on them are
 *      applied at max(issue, completions));
 *   2. clients act: the lowest-numbered client that can act runs until it
 *      blocks (on an op's running time, on copies, on an allocation that
 *      does not fit, at a sync barrier), until none can;
 *   3. a client blocked on an allocation with nothing pending that could
 *      make it fit makes the workload invalid;
 *   4. idle engines start the head of their FIFO when its dependency is
 *      complete (latency phase; moving at once when latency is 0);
 *   5. when the set of moving copies changed, the weighted max-min fair
 *      rates are recomputed (progressive filling over the capacities of
 *      each copy's path) and copies whose rate changed are re-anchored;
 *   6. T advances to the next latency end, completion or op end.
 * Nothing is time-stepped: between two instants every rate is constant,
 * so completion times are exact (to rounding).
 *
 * The validity of actions does not depend on timing, so each client's
 * schedule is checked once by plan_simulate (with its budget) and the
 * simulation here tracks only residency, copies and memory.  Per client
 * and per step, copies and pending releases live in pools sized from the
 * schedule and reset at step start (every copy of a step is complete at
 * its end).  A copy's completion is computed from the instant its rate
 * last changed, as `anchor + (latency + remaining / rate)`, so a copy alone
 * on its path takes exactly plan_simulate's `latency + bytes / bw`; and
 * when the whole node is idle at a step boundary, node time is re-based to
 * 0 so that a lone client's steps are computed exactly as plan_simulate
 * computes one.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/node/node.h"
#include "planner/plan_impl.h"
#include "proto/errfmt.h"
#include "proto/mem.h"

#define NONE UINT32_MAX

enum { CP_QUEUED = 0, CP_LATENCY, CP_MOVING, CP_DONE };

typedef struct jcopy {
    double issue, start, end;  /* end: completion once done */
    double ev;                 /* next event: latency end or completion */
    double anchor_t, anchor_lat, anchor_rem, rate;
    uint64_t bytes;
    uint32_t client, seq, storage;
    uint32_t dep;              /* copy that must complete first, or NONE */
    uint32_t waiters;          /* releases waiting on this copy */
    uint32_t engine;
    uint8_t dir;               /* 0 H2D, 1 D2H */
    uint8_t state;
} jcopy;

typedef struct jrel {
    double t;           /* max(issue, completions of awaited copies) */
    uint64_t bytes;
    uint32_t other;     /* the second copy still to await, or NONE */
    uint32_t next;      /* next release waiting on the same copy */
    uint32_t client;
    bool host;
} jrel;

/* Per storage, everything the hot loop touches in one place. */
typedef struct jst {
    double h2d_end, d2h_end; /* their completion: 0 none, HUGE_VAL pending */
    uint64_t bytes;          /* the trace's */
    uint32_t last_acc;       /* last accessing op, NONE (the trace's) */
    uint32_t h2d, d2h;       /* latest copies, NONE */
    uint32_t host_ready;     /* copy whose completion readies the host copy */
    bool on_dev, has_host;
    bool retained;           /* the trace's */
} jst;

enum {
    ST_STEP = 0,  /* begin a step */
    ST_BEFORE,
    ST_WRITES,
    ST_START,
    ST_AFTER,
    ST_IMPLICIT,
    ST_END,
    ST_BARRIER,
    ST_DONE
};

enum { BL_NONE = 0, BL_TIMER, BL_COPIES, BL_ALLOC, BL_BARRIER, BL_DONE };

typedef struct jclient {
    const plan_node_input *in;
    const plan_trace *t;
    const plan_schedule *s;
    uint32_t dev;
    uint32_t eng[2];        /* engine per direction (equal when simplex) */
    uint8_t *init;          /* effective initial per storage (homes) */
    jst *st;
    uint64_t t0_dev, t0_host;
    double compute_us;

    /* program counter */
    uint32_t step, op, k;
    size_t ai;
    uint8_t stage, block;
    bool in_alloc;          /* the current action / write waits for memory */
    uint64_t alloc_bytes;
    uint32_t alloc_storage; /* NONE: the step-start allocation */
    double alloc_since;
    double now;

    /* memory */
    uint64_t dev_bytes, host_bytes, peak_dev, peak_host;
    uint32_t pending_dev;   /* device releases not yet applied */

    /* step */
    double step_start, step_end, alloc_wait, last_copy_end;
    uint64_t h2d_bytes, d2h_bytes;
    uint32_t inflight;

    /* pools (global indices) */
    uint32_t copy_base, copy_cap, n_copies;
    uint32_t rel_base, rel_cap, n_rels;

    plan_node_client_fig fig;
} jclient;

typedef struct jengine {
    uint32_t *q;
    size_t head, n, cap;    /* ring */
    uint32_t active;        /* copy on the engine, NONE */
    uint32_t device;
    bool dirty;
} jengine;

typedef struct jcons {
    double cap;             /* capacity, bytes/us */
    double resid, w;        /* progressive filling */
    uint32_t cnt;
    uint32_t mark;
} jcons;

typedef struct jpath {
    uint32_t n;
    uint32_t cons[PLAN_NODE_MAX_DEPTH];
    double coef[PLAN_NODE_MAX_DEPTH];
} jpath;

typedef struct jdevice {
    uint64_t cap, sum, peak;
    uint32_t pending;       /* device releases pending, all clients */
    bool tracking;          /* in the window of last steps */
    uint32_t n_clients;
    double cap_bw[2];       /* own figure, bytes/us */
    jpath path[2];
} jdevice;

typedef struct jgroup {
    uint32_t n, arrived;
} jgroup;

typedef struct jtimer {
    double t;
    uint32_t c;
} jtimer;

typedef struct judge {
    const plan_node *node;
    uint32_t n, steps;
    jclient *c;
    jcopy *cp;
    jrel *rel;
    jengine *eng;
    uint32_t n_eng;
    jdevice *dev;
    jcons *cons;
    uint32_t n_cons;
    jgroup *grp;
    uint32_t n_grp;
    jtimer *tm;
    uint32_t n_tm;
    uint64_t *ready;        /* bitset of clients that can act */
    uint32_t n_ready_words;
    uint32_t *active;       /* copies in latency or moving */
    uint32_t n_active;
    uint32_t *moving;       /* copies moving (rate computation) */
    uint32_t n_moving;
    uint32_t *order;        /* scratch */
    double *lam;            /* scratch */
    uint8_t *frozen;        /* scratch */
    double *fcap, *fw;      /* scratch: per moving copy */
    const jpath **fpath;
    uint32_t *touched;      /* scratch: capacities crossed */
    uint32_t mark_gen;
    bool flows_changed, fluid_changed;
    double fluid_next;
    double T, base;
    uint32_t n_done, n_live_copies, n_pending, n_alloc_blocked;
    uint32_t *dirty;        /* engines to look at in dispatch */
    uint32_t n_dirty;
    uint64_t n_copies_total, n_rate_updates;
    plan_node_violation *v;
    bool failed;
    const plan_node_observer *obs;  /* may be NULL */
} judge;

/* Node time of the judge's clock value t (for the observer). */
#define OBS_T(J, t) ((J)->base + (t))
#define OBS(J, cb) ((J)->obs && (J)->obs->cb)

/* ------------------------------------------------------------ helpers */

static void violate(judge *J, uint32_t c, uint32_t op, uint32_t storage,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void violate(judge *J, uint32_t c, uint32_t op, uint32_t storage,
                    const char *fmt, ...)
{
    va_list ap;
    if (J->failed)
        return;
    J->failed = true;
    J->v->code = HO_E_BAD_SCHEDULE;
    J->v->client = c;
    J->v->step = c == NONE ? NONE : J->c[c].step;
    J->v->op = op;
    J->v->storage_id =
        storage == NONE ? UINT64_MAX : J->c[c].t->storages[storage].id;
    va_start(ap, fmt);
    vsnprintf(J->v->message, sizeof J->v->message, fmt, ap);
    va_end(ap);
}

static const char *cname(const judge *J, uint32_t c)
{
    const char *n = J->c[c].in->name;
    return n ? n : "?";
}

static void set_ready(judge *J, uint32_t c)
{
    J->ready[c >> 6] |= 1ull << (c & 63);
}

static uint32_t next_ready(judge *J)
{
    for (uint32_t w = 0; w < J->n_ready_words; w++)
        if (J->ready[w]) {
            uint32_t b = (uint32_t)__builtin_ctzll(J->ready[w]);
            J->ready[w] &= J->ready[w] - 1;
            return w * 64 + b;
        }
    return NONE;
}

/* Timer heap by (t, client). */
static bool tm_less(const jtimer *a, const jtimer *b)
{
    return a->t < b->t || (a->t == b->t && a->c < b->c);
}

PLAN_HEAP_DEFINE(tm_heap, jtimer, uint32_t, tm_less)

static void tm_push(judge *J, double t, uint32_t c)
{
    tm_heap_insert(J->tm, &J->n_tm, (jtimer){t, c});
}

static jtimer tm_pop(judge *J)
{
    return tm_heap_remove(J->tm, &J->n_tm);
}

/* ------------------------------------------------------------ memory */

static void dev_note_release(judge *J, uint32_t d)
{
    /* Every client of d blocked on an allocation may now fit. */
    if (J->n_alloc_blocked == 0)
        return;
    for (uint32_t i = 0; i < J->n; i++)
        if (J->c[i].dev == d && J->c[i].block == BL_ALLOC)
            set_ready(J, i);
}

static void rel_apply(judge *J, jrel *r)
{
    jclient *c = &J->c[r->client];
    if (r->host) {
        c->host_bytes -= r->bytes;
        return;
    }
    jdevice *d = &J->dev[c->dev];
    c->dev_bytes -= r->bytes;
    d->sum -= r->bytes;
    if (OBS(J, device_bytes))
        J->obs->device_bytes(J->obs->ctx, r->client, OBS_T(J, J->T),
                             c->dev_bytes);
    dev_note_release(J, c->dev);
}

/* A release of `bytes` of client ci at time t, once the copies a and b
 * (NONE or any state) are complete. */
static void rel_issue(judge *J, uint32_t ci, double t, uint64_t bytes,
                      bool host, uint32_t a, uint32_t b)
{
    jclient *c = &J->c[ci];
    if (a != NONE && J->cp[a].state == CP_DONE) {
        if (J->cp[a].end > t)
            t = J->cp[a].end;
        a = NONE;
    }
    if (b != NONE && J->cp[b].state == CP_DONE) {
        if (J->cp[b].end > t)
            t = J->cp[b].end;
        b = NONE;
    }
    if (a == NONE) {
        a = b;
        b = NONE;
    }
    if (a == NONE) {
        jrel r = {t, bytes, NONE, NONE, ci, host};
        rel_apply(J, &r);
        return;
    }
    uint32_t ri = c->rel_base + c->n_rels++;
    jrel *r = &J->rel[ri];
    r->t = t;
    r->bytes = bytes;
    r->other = b;
    r->client = ci;
    r->host = host;
    r->next = J->cp[a].waiters;
    J->cp[a].waiters = ri;
    J->n_pending++;
    if (!host) {
        c->pending_dev++;
        J->dev[c->dev].pending++;
    }
}

/* Copy x completed: its waiting releases move on or apply. */
static void rel_wake(judge *J, uint32_t x)
{
    uint32_t ri = J->cp[x].waiters;
    J->cp[x].waiters = NONE;
    while (ri != NONE) {
        jrel *r = &J->rel[ri];
        uint32_t next = r->next;
        if (J->cp[x].end > r->t)
            r->t = J->cp[x].end;
        if (r->other != NONE && J->cp[r->other].state != CP_DONE) {
            uint32_t o = r->other;
            r->other = NONE;
            r->next = J->cp[o].waiters;
            J->cp[o].waiters = ri;
        } else {
            if (r->other != NONE && J->cp[r->other].end > r->t)
                r->t = J->cp[r->other].end;
            J->n_pending--;
            if (!r->host) {
                J->c[r->client].pending_dev--;
                J->dev[J->c[r->client].dev].pending--;
            }
            rel_apply(J, r);
        }
        ri = next;
    }
}

/* Try to allocate b bytes for client ci now.  True when done. */
static bool try_alloc(judge *J, uint32_t ci, uint64_t b)
{
    jclient *c = &J->c[ci];
    jdevice *d = &J->dev[c->dev];
    if (c->dev_bytes + b > c->in->budget_bytes || d->sum + b > d->cap)
        return false;
    c->dev_bytes += b;
    d->sum += b;
    if (OBS(J, device_bytes))
        J->obs->device_bytes(J->obs->ctx, ci, OBS_T(J, J->T), c->dev_bytes);
    if (c->dev_bytes > c->peak_dev)
        c->peak_dev = c->dev_bytes;
    if (d->tracking && d->sum > d->peak)
        d->peak = d->sum;
    return true;
}

/* Allocation for the current point: 0 done, 1 blocked. */
static int alloc_point(judge *J, uint32_t ci, uint32_t storage, uint64_t b)
{
    jclient *c = &J->c[ci];
    if (c->in_alloc) {
        /* resumed: retry */
        if (!try_alloc(J, ci, b))
            return 1;
        c->alloc_wait += J->T - c->alloc_since;
        if (OBS(J, alloc_wait) && J->T > c->alloc_since)
            J->obs->alloc_wait(J->obs->ctx, ci, OBS_T(J, c->alloc_since),
                               OBS_T(J, J->T));
        c->now = J->T;
        c->in_alloc = false;
        J->n_alloc_blocked--;
        c->block = BL_NONE;
        return 0;
    }
    if (try_alloc(J, ci, b))
        return 0;
    c->in_alloc = true;
    c->alloc_bytes = b;
    c->alloc_storage = storage;
    c->alloc_since = J->T;
    c->block = BL_ALLOC;
    J->n_alloc_blocked++;
    return 1;
}

/* ------------------------------------------------------------ copies */

static void mark_dirty(judge *J, uint32_t e)
{
    if (!J->eng[e].dirty) {
        J->eng[e].dirty = true;
        J->dirty[J->n_dirty++] = e;
    }
}

static uint32_t copy_issue(judge *J, uint32_t ci, int dir, uint32_t s,
                           uint32_t dep)
{
    jclient *c = &J->c[ci];
    uint64_t b = c->st[s].bytes;
    uint32_t x = c->copy_base + c->n_copies;
    jcopy *p = &J->cp[x];
    jengine *e = &J->eng[c->eng[dir]];

    p->issue = J->T;
    p->start = p->end = p->ev = 0;
    p->anchor_t = p->anchor_lat = p->anchor_rem = p->rate = 0;
    p->bytes = b;
    p->client = ci;
    p->storage = s;
    p->seq = c->n_copies++;
    p->dep = dep;
    p->waiters = NONE;
    p->engine = c->eng[dir];
    p->dir = (uint8_t)dir;
    p->state = CP_QUEUED;
    c->inflight++;
    J->n_live_copies++;
    J->n_copies_total++;
    if (dir)
        c->d2h_bytes += b;
    else
        c->h2d_bytes += b;
    /* FIFO in issue order; at equal issue times, by client. */
    size_t pos = e->n++;
    while (pos > 0) {
        uint32_t prev = e->q[(e->head + pos - 1) % e->cap];
        const jcopy *q = &J->cp[prev];
        if (q->issue < p->issue || q->client <= ci)
            break;
        e->q[(e->head + pos) % e->cap] = prev;
        pos--;
    }
    e->q[(e->head + pos) % e->cap] = x;
    mark_dirty(J, c->eng[dir]);
    return x;
}

static bool copy_done(const judge *J, uint32_t x)
{
    return x == NONE || J->cp[x].state == CP_DONE;
}

static void copy_complete(judge *J, uint32_t x)
{
    jcopy *p = &J->cp[x];
    jclient *c = &J->c[p->client];
    jengine *e = &J->eng[p->engine];

    p->state = CP_DONE;
    p->end = p->ev;
    e->active = NONE;
    c->inflight--;
    J->n_live_copies--;
    if (p->end > c->last_copy_end)
        c->last_copy_end = p->end;
    if (OBS(J, rate))
        J->obs->rate(J->obs->ctx, p->client, p->dir, OBS_T(J, p->end), 0);
    if (OBS(J, transfer))
        J->obs->transfer(J->obs->ctx, p->client, p->dir, p->storage,
                         OBS_T(J, p->start), OBS_T(J, p->end), p->bytes);
    jst *ss = &c->st[p->storage];
    if (p->dir ? ss->d2h == x : ss->h2d == x) {
        if (p->dir)
            ss->d2h_end = p->end;
        else
            ss->h2d_end = p->end;
    }
    /* A head waiting on this copy may sit on the other engine. */
    mark_dirty(J, c->eng[0]);
    mark_dirty(J, c->eng[1]);
    rel_wake(J, x);
    if (c->block == BL_COPIES)
        set_ready(J, p->client);
}

static void start_moving(judge *J, uint32_t x)
{
    jcopy *p = &J->cp[x];
    const jclient *c = &J->c[p->client];
    p->state = CP_MOVING;
    p->anchor_t = p->start;
    p->anchor_lat = J->node->devices[c->dev].latency_us;
    p->anchor_rem = (double)p->bytes;
    p->rate = 0;
    J->moving[J->n_moving++] = x;
    J->flows_changed = true;
}

static void dispatch(judge *J)
{
    for (uint32_t di = 0; di < J->n_dirty; di++) {
        jengine *e = &J->eng[J->dirty[di]];
        e->dirty = false;
        if (e->active != NONE || e->n == 0)
            continue;
        uint32_t x = e->q[e->head];
        jcopy *p = &J->cp[x];
        if (!copy_done(J, p->dep))
            continue;
        e->head = (e->head + 1) % e->cap;
        e->n--;
        e->active = x;
        p->start = J->T;
        J->active[J->n_active++] = x;
        J->fluid_changed = true;
        double lat = J->node->devices[e->device].latency_us;
        p->state = CP_LATENCY;
        p->ev = p->start + lat;
        if (p->ev <= J->T)
            start_moving(J, x);
    }
    J->n_dirty = 0;
}

/* ------------------------------------------------------------ fair rates */

static double flow_cap(const judge *J, const jcopy *p)
{
    return J->dev[J->c[p->client].dev].cap_bw[p->dir];
}

static const jpath *flow_path(const judge *J, const jcopy *p)
{
    return &J->dev[J->c[p->client].dev].path[p->dir];
}

/* A copy on path pa frozen at `rate` (weight w) leaves its capacities:
 * their residue drops by what it takes, their weight and count by it. */
static void settle_flow(judge *J, const jpath *pa, double rate, double w)
{
    for (uint32_t k = 0; k < pa->n; k++) {
        jcons *q = &J->cons[pa->cons[k]];
        q->resid -= pa->coef[k] * rate;
        if (q->resid < 0)
            q->resid = 0;
        q->w -= pa->coef[k] * w;
        q->cnt--;
    }
}

/* Weighted max-min fair rates of the moving copies (progressive filling):
 * every copy's rate rises in proportion to its client's weight until a
 * capacity on its path (its device's own figure for its direction, each
 * ancestor link's) is full; copies held by a full capacity keep their
 * rate, the others go on rising.  A capacity is J->cons[] (a link
 * direction, or a link's one capacity when it is not duplex, where a D2H
 * byte counts h2d/d2h of an H2D byte); a device's own figure is the
 * copy's own cap (one copy per engine). */
static void compute_rates(judge *J, double *rate)
{
    uint32_t nf = J->n_moving, nt = 0;
    uint32_t *tl = J->touched;
    bool fits = true;

    J->n_rate_updates++;
    if (++J->mark_gen == 0) {
        for (uint32_t i = 0; i < J->n_cons; i++)
            J->cons[i].mark = 0;
        J->mark_gen = 1;
    }
    for (uint32_t f = 0; f < nf; f++) {
        const jcopy *p = &J->cp[J->moving[f]];
        const jpath *pa = flow_path(J, p);
        double w = J->c[p->client].in->weight, cap = flow_cap(J, p);
        J->fcap[f] = cap;
        J->fw[f] = w;
        J->fpath[f] = pa;
        for (uint32_t k = 0; k < pa->n; k++) {
            jcons *q = &J->cons[pa->cons[k]];
            if (q->mark != J->mark_gen) {
                q->mark = J->mark_gen;
                q->resid = q->cap;
                q->w = 0;
                q->cnt = 0;
                tl[nt++] = pa->cons[k];
            }
            q->w += pa->coef[k] * w;
            q->cnt++;
            q->resid -= pa->coef[k] * cap; /* demand at every own cap */
        }
    }
    for (uint32_t i = 0; i < nt && fits; i++)
        fits = J->cons[tl[i]].resid >= 0;
    if (fits) {
        /* No shared capacity binds: each copy at its own figure. */
        for (uint32_t f = 0; f < nf; f++)
            rate[f] = J->fcap[f];
        return;
    }
    for (uint32_t i = 0; i < nt; i++)
        J->cons[tl[i]].resid = J->cons[tl[i]].cap;
    for (uint32_t f = 0; f < nf; f++) {
        J->lam[f] = J->fcap[f] / J->fw[f];
        J->frozen[f] = 0;
        J->order[f] = f;
    }
    /* flows by their own level cap/weight (insertion sort: nf is small) */
    for (uint32_t i = 1; i < nf; i++) {
        uint32_t x = J->order[i], j = i;
        while (j > 0 && J->lam[J->order[j - 1]] > J->lam[x]) {
            J->order[j] = J->order[j - 1];
            j--;
        }
        J->order[j] = x;
    }
    uint32_t left = nf, oi = 0;
    double level = 0;
    while (left > 0) {
        while (oi < nf && J->frozen[J->order[oi]])
            oi++;
        /* the capacity that fills first (lowest index on ties) */
        double best = HUGE_VAL;
        uint32_t bj = NONE;
        for (uint32_t i = 0; i < nt; i++) {
            const jcons *q = &J->cons[tl[i]];
            if (q->cnt == 0)
                continue;
            double l = q->w > 0 ? q->resid / q->w : HUGE_VAL;
            if (l < level)
                l = level;
            if (l < best || (l == best && tl[i] < bj)) {
                best = l;
                bj = tl[i];
            }
        }
        uint32_t fo = oi < nf ? J->order[oi] : NONE;
        if (fo != NONE && J->lam[fo] <= best) {
            /* this copy reaches its own figure first */
            const jpath *pa = J->fpath[fo];
            rate[fo] = J->fcap[fo];
            level = J->lam[fo];
            J->frozen[fo] = 1;
            left--;
            settle_flow(J, pa, rate[fo], J->fw[fo]);
            continue;
        }
        /* capacity bj is full: freeze every unfrozen copy crossing it */
        const jcons *qb = &J->cons[bj];
        double resid = qb->resid, W = qb->w;
        bool clamped = W <= 0 || resid / W < level;
        level = best;
        for (uint32_t f = 0; f < nf; f++) {
            if (J->frozen[f])
                continue;
            const jpath *pa = J->fpath[f];
            double a = 0;
            for (uint32_t k = 0; k < pa->n; k++)
                if (pa->cons[k] == bj)
                    a = pa->coef[k];
            if (a == 0)
                continue;
            double w = J->fw[f];
            rate[f] = clamped ? w * level : resid * ((a * w) / W) / a;
            J->frozen[f] = 2; /* accounted below */
            left--;
        }
        for (uint32_t f = 0; f < nf; f++) {
            if (J->frozen[f] != 2)
                continue;
            J->frozen[f] = 1;
            settle_flow(J, J->fpath[f], rate[f], J->fw[f]);
        }
    }
}

static void update_rates(judge *J)
{
    double *rate = J->lam + J->n_eng; /* scratch after lam */
    if (J->n_moving == 0)
        return;
    compute_rates(J, rate);
    for (uint32_t f = 0; f < J->n_moving; f++) {
        jcopy *p = &J->cp[J->moving[f]];
        double r = rate[f];
        if (r == p->rate)
            continue;
        if (p->rate > 0) {
            double ms = p->anchor_t + p->anchor_lat;
            double rem = p->anchor_rem - p->rate * (J->T - ms);
            if (rem < 0)
                rem = 0;
            p->anchor_t = J->T;
            p->anchor_lat = 0;
            p->anchor_rem = rem;
        }
        p->rate = r;
        p->ev = p->anchor_t + (p->anchor_lat + p->anchor_rem / r);
        if (OBS(J, rate))
            J->obs->rate(J->obs->ctx, p->client, p->dir,
                         OBS_T(J, p->anchor_t + p->anchor_lat), r);
    }
}

/* ------------------------------------------------------------ clients */

static void client_step_begin(judge *J, uint32_t ci);

/* Apply action ai of client ci at T.  0 go on, 1 blocked. */
static int apply(judge *J, uint32_t ci, size_t ai)
{
    jclient *c = &J->c[ci];
    const plan_action *a = &c->s->actions[ai];
    uint32_t s = a->storage;
    jst *ss = &c->st[s];
    uint64_t b = ss->bytes;

    switch (a->kind) {
    case PLAN_ACT_PREFETCH:
        if (alloc_point(J, ci, s, b))
            return 1;
        ss->on_dev = true;
        ss->h2d = copy_issue(J, ci, 0, s, ss->host_ready);
        ss->h2d_end = HUGE_VAL;
        return 0;
    case PLAN_ACT_STORE:
        if (!ss->has_host) {
            c->host_bytes += b;
            if (c->host_bytes > c->peak_host)
                c->peak_host = c->host_bytes;
            ss->has_host = true;
        }
        ss->d2h = copy_issue(J, ci, 1, s, ss->h2d);
        ss->d2h_end = HUGE_VAL;
        ss->host_ready = ss->d2h;
        return 0;
    case PLAN_ACT_FREE_DEVICE:
        ss->on_dev = false;
        rel_issue(J, ci, J->T, b, false, ss->h2d, ss->d2h);
        return 0;
    case PLAN_ACT_FREE_HOST:
        ss->has_host = false;
        rel_issue(J, ci, J->T, b, true, ss->h2d, ss->d2h);
        return 0;
    case PLAN_ACT_WAIT:
        /* the point's clock moves to the completion of s's copies issued
         * so far: the client sleeps until they are done (then T is it) */
        if (ss->h2d_end == HUGE_VAL || ss->d2h_end == HUGE_VAL) {
            c->block = BL_COPIES;
            return 1;
        }
        return 0;
    default:
        violate(J, ci, a->op, s, "client \"%s\": action %zu: unknown kind",
                cname(J, ci), ai);
        return 1;
    }
}

static void block_timer(judge *J, uint32_t ci)
{
    J->c[ci].block = BL_TIMER;
    tm_push(J, J->c[ci].now, ci);
}

static void record_figures(judge *J, uint32_t ci, double start, double end)
{
    jclient *c = &J->c[ci];
    plan_node_client_fig *f = &c->fig;
    f->compute_us = c->compute_us;
    f->step_time_us = end - start;
    f->exposed_us = f->step_time_us - c->compute_us;
    f->alloc_wait_us = c->alloc_wait;
    f->slowdown = c->compute_us > 0 ? f->step_time_us / c->compute_us : 1.0;
    f->start_us = J->base + start;
    f->end_us = J->base + c->step_end;
    f->h2d_bytes = c->h2d_bytes;
    f->d2h_bytes = c->d2h_bytes;
    f->peak_device_bytes = c->peak_dev;
    f->peak_host_bytes = c->peak_host;
}

/* Client i is through its step, which ended at `end`: its figures when
 * that was the last step, then done, or ready for the next one. */
static void step_next(judge *J, uint32_t i, double end)
{
    jclient *m = &J->c[i];
    if (m->step + 1 == J->steps)
        record_figures(J, i, m->step_start, end);
    m->step++;
    if (m->step == J->steps) {
        m->stage = ST_DONE;
        m->block = BL_DONE;
        J->n_done++;
    } else {
        m->stage = ST_STEP;
        m->block = BL_NONE;
        set_ready(J, i);
    }
}

/* The client's step ended at T: the next step (the client is ready again
 * at T), or the barrier, which releases the whole group once all are
 * there. */
static void step_finish(judge *J, uint32_t ci)
{
    jclient *c = &J->c[ci];
    c->step_end = J->T;
    if (c->in->sync == NONE) {
        step_next(J, ci, c->step_end);
        return;
    }
    jgroup *g = &J->grp[c->in->sync];
    c->stage = ST_BARRIER;
    c->block = BL_BARRIER;
    if (++g->arrived < g->n)
        return;
    g->arrived = 0;
    for (uint32_t i = 0; i < J->n; i++)
        if (J->c[i].in->sync == c->in->sync)
            step_next(J, i, J->T);
}

/* Run client ci at T until it blocks. */
static void client_run(judge *J, uint32_t ci)
{
    jclient *c = &J->c[ci];
    const plan_trace *t = c->t;
    const plan_schedule *s = c->s;

    if (c->block == BL_TIMER || c->block == BL_COPIES)
        c->block = BL_NONE;
    c->now = J->T;
    while (!J->failed) {
        switch (c->stage) {
        case ST_STEP:
            client_step_begin(J, ci);
            if (c->block != BL_NONE)
                return;
            continue;
        case ST_BEFORE:
            while (c->ai < s->n_actions && s->actions[c->ai].op == c->op &&
                   s->actions[c->ai].when == PLAN_BEFORE) {
                if (apply(J, ci, c->ai))
                    return;
                c->ai++;
            }
            c->stage = ST_WRITES;
            c->k = 0;
            continue;
        case ST_WRITES: {
            const plan_op *o = &t->ops[c->op];
            const uint32_t *w = t->refs + o->first_ref + o->n_reads;
            for (; c->k < o->n_writes; c->k++) {
                jst *ss = &c->st[w[c->k]];
                if (ss->on_dev)
                    continue;
                if (alloc_point(J, ci, w[c->k], ss->bytes))
                    return;
                ss->on_dev = true;
            }
            c->stage = ST_START;
            continue;
        }
        case ST_START: {
            const plan_op *o = &t->ops[c->op];
            const uint32_t *r = t->refs + o->first_ref;
            double start = c->now;
            for (uint32_t k = 0; k < o->n_reads + o->n_writes; k++) {
                const jst *ss = &c->st[r[k]];
                /* HUGE_VAL while pending: the op waits */
                if (ss->h2d_end > start)
                    start = ss->h2d_end;
                if (k >= o->n_reads && ss->d2h_end > start)
                    start = ss->d2h_end;
            }
            if (start == HUGE_VAL) {
                c->block = BL_COPIES;
                return;
            }
            c->now = start + o->duration_us;
            c->compute_us += o->duration_us;
            if (OBS(J, op))
                J->obs->op(J->obs->ctx, ci, c->op, OBS_T(J, start),
                           OBS_T(J, c->now));
            c->stage = ST_AFTER;
            if (c->now > J->T) {
                block_timer(J, ci);
                return;
            }
            continue;
        }
        case ST_AFTER:
            while (c->ai < s->n_actions && s->actions[c->ai].op == c->op) {
                if (apply(J, ci, c->ai))
                    return;
                c->ai++;
            }
            c->stage = ST_IMPLICIT;
            continue;
        case ST_IMPLICIT: {
            const plan_op *o = &t->ops[c->op];
            const uint32_t *r = t->refs + o->first_ref;
            for (uint32_t k = 0; k < o->n_reads + o->n_writes; k++) {
                uint32_t x = r[k];
                jst *ss = &c->st[x];
                if (!ss->on_dev || ss->retained || ss->last_acc != c->op)
                    continue;
                ss->on_dev = false;
                rel_issue(J, ci, J->T, ss->bytes, false, ss->h2d,
                          ss->d2h);
            }
            c->op++;
            c->stage = c->op < t->n_ops ? ST_BEFORE : ST_END;
            continue;
        }
        case ST_END:
            if (c->inflight > 0) {
                c->block = BL_COPIES;
                return;
            }
            step_finish(J, ci);
            return;
        default:
            return;
        }
    }
}

static void client_step_begin(judge *J, uint32_t ci)
{
    jclient *c = &J->c[ci];
    jdevice *d = &J->dev[c->dev];

    if (!c->in_alloc) {
        c->step_start = J->T;
        c->alloc_wait = 0;
        c->compute_us = 0;
        c->h2d_bytes = c->d2h_bytes = 0;
        c->n_copies = 0;
        c->n_rels = 0;
        c->inflight = 0;
        c->last_copy_end = J->T;
        c->op = 0;
        c->ai = 0;
        /* The previous step's device state goes; §3's t = 0 comes. */
        if (c->dev_bytes > 0) {
            d->sum -= c->dev_bytes;
            c->dev_bytes = 0;
            if (OBS(J, device_bytes))
                J->obs->device_bytes(J->obs->ctx, ci, OBS_T(J, J->T), 0);
            dev_note_release(J, c->dev);
        }
        if (c->step + 1 == J->steps && !d->tracking) {
            d->tracking = true;
            d->peak = d->sum;
        }
        for (uint32_t i = 0; i < c->t->n_storages; i++) {
            const plan_storage *sto = &c->t->storages[i];
            jst *ss = &c->st[i];
            bool accessed = ss->last_acc != NONE;
            ss->h2d = ss->d2h = ss->host_ready = NONE;
            ss->h2d_end = ss->d2h_end = 0;
            ss->on_dev = c->init[i] == PLAN_INIT_DEVICE &&
                         (accessed || sto->retained);
            ss->has_host = c->init[i] == PLAN_INIT_HOST;
        }
        c->host_bytes = c->t0_host;
        c->peak_host = c->t0_host;
        c->peak_dev = 0;
    }
    if (alloc_point(J, ci, NONE, c->t0_dev))
        return;
    c->peak_dev = c->dev_bytes;
    c->stage = ST_BEFORE;
}

/* ------------------------------------------------------------ checks */

/* A client blocked on an allocation that nothing pending can help. */
static void check_stuck(judge *J)
{
    if (J->n_alloc_blocked == 0)
        return;
    for (uint32_t i = 0; i < J->n && !J->failed; i++) {
        jclient *c = &J->c[i];
        if (c->block != BL_ALLOC)
            continue;
        const jdevice *d = &J->dev[c->dev];
        const plan_node_device *nd = &J->node->devices[c->dev];
        bool over_budget = c->dev_bytes + c->alloc_bytes > c->in->budget_bytes;
        bool over_dev = d->sum + c->alloc_bytes > d->cap;
        char where[160];
        if ((!over_budget || c->pending_dev > 0) &&
            (!over_dev || d->pending > 0))
            continue;
        if (c->alloc_storage == NONE)
            snprintf(where, sizeof where, "at step start, allocating its "
                     "initial %llu B", (unsigned long long)c->alloc_bytes);
        else
            snprintf(where, sizeof where, "at op %u ('%s'), allocating "
                     "storage %llu (%llu B)", c->op,
                     plan_op_name(c->t, c->op),
                     (unsigned long long)c->t->storages[c->alloc_storage].id,
                     (unsigned long long)c->alloc_bytes);
        if (over_budget && c->pending_dev == 0)
            violate(J, i, c->alloc_storage == NONE ? NONE : c->op,
                    c->alloc_storage,
                    "client \"%s\" step %u: %s: over its budget (%llu of "
                    "%llu B in use) with no release of its own pending",
                    cname(J, i), c->step, where,
                    (unsigned long long)c->dev_bytes,
                    (unsigned long long)c->in->budget_bytes);
        else
            violate(J, i, c->alloc_storage == NONE ? NONE : c->op,
                    c->alloc_storage,
                    "client \"%s\" step %u: %s: device %u (\"%s\") is full "
                    "(%llu of %llu B in use by its clients) with no release "
                    "pending", cname(J, i), c->step, where, nd->id, nd->name,
                    (unsigned long long)d->sum, (unsigned long long)d->cap);
    }
}

/* ------------------------------------------------------------ setup */

static int prevalidate(judge *J, uint32_t i)
{
    const plan_node_input *in = &J->c[i].in[0];
    plan_schedule sc = *in->schedule;
    plan_metrics m;
    plan_violation v;
    int r;

    sc.budget_bytes = in->budget_bytes;
    r = plan_simulate(in->trace, &sc, &m, &v, NULL);
    if (r == HO_E_BAD_SCHEDULE) {
        J->failed = true;
        J->v->code = HO_E_BAD_SCHEDULE;
        J->v->client = i;
        J->v->step = NONE;
        J->v->op = v.op;
        J->v->storage_id = v.storage_id;
        snprintf(J->v->message, sizeof J->v->message,
                 "client \"%s\": schedule invalid alone: %s", cname(J, i),
                 v.message);
    }
    return r == HO_E_BAD_SCHEDULE ? 0 : r;
}

static void judge_done(judge *J)
{
    if (J->c)
        for (uint32_t i = 0; i < J->n; i++) {
            free(J->c[i].st);
            free(J->c[i].init);
        }
    if (J->eng)
        for (uint32_t i = 0; i < J->n_eng; i++)
            free(J->eng[i].q);
    HO_FREE_ALL(J->c, J->cp, J->rel, J->eng, J->dev, J->cons, J->grp, J->tm,
                J->ready, J->active, J->moving, J->order, J->lam, J->frozen,
                J->dirty, J->fcap, J->fw, J->fpath, J->touched);
}

static int setup(judge *J, const plan_node_input *in)
{
    const plan_node *node = J->node;
    uint64_t n_cp = 0, n_rel = 0;

    J->c = calloc(J->n ? J->n : 1, sizeof(*J->c));
    J->dev = calloc(node->n_devices, sizeof(*J->dev));
    J->n_eng = 2 * node->n_devices;
    J->eng = calloc(J->n_eng, sizeof(*J->eng));
    J->n_cons = 2 * node->n_links;
    J->cons = calloc(J->n_cons ? J->n_cons : 1, sizeof(*J->cons));
    J->grp = calloc(J->n ? J->n : 1, sizeof(*J->grp));
    J->tm = calloc(J->n ? J->n : 1, sizeof(*J->tm));
    J->n_ready_words = (J->n + 63) / 64 + 1;
    J->ready = calloc(J->n_ready_words, sizeof(*J->ready));
    J->active = calloc(J->n_eng, sizeof(uint32_t));
    J->moving = calloc(J->n_eng, sizeof(uint32_t));
    J->order = calloc(J->n_eng, sizeof(uint32_t));
    J->lam = calloc(2 * (size_t)J->n_eng, sizeof(double));
    J->frozen = calloc(J->n_eng, 1);
    J->dirty = calloc(J->n_eng, sizeof(uint32_t));
    J->fcap = calloc(J->n_eng, sizeof(double));
    J->fw = calloc(J->n_eng, sizeof(double));
    J->fpath = calloc(J->n_eng, sizeof(*J->fpath));
    J->touched = calloc(J->n_cons ? J->n_cons : 1, sizeof(uint32_t));
    if (!J->c || !J->dev || !J->eng || !J->cons || !J->grp || !J->tm ||
        !J->ready || !J->active || !J->moving || !J->order || !J->lam ||
        !J->frozen || !J->dirty || !J->fcap || !J->fw || !J->fpath ||
        !J->touched)
        return -ENOMEM;

    for (uint32_t l = 0; l < node->n_links; l++) {
        const plan_node_link *L = &node->links[l];
        J->cons[2 * l].cap = L->h2d_gbps * 1e3;
        J->cons[2 * l + 1].cap = L->d2h_gbps * 1e3;
    }
    for (uint32_t d = 0; d < node->n_devices; d++) {
        const plan_node_device *D = &node->devices[d];
        jdevice *x = &J->dev[d];
        x->cap = D->hbm_bytes - D->reserve_bytes;
        x->cap_bw[0] = D->h2d_gbps * 1e3;
        x->cap_bw[1] = D->d2h_gbps * 1e3;
        for (int dir = 0; dir < 2; dir++) {
            jpath *pa = &x->path[dir];
            pa->n = 0;
            for (uint32_t l = D->parent; l != PLAN_NONE;
                 l = node->links[l].parent) {
                const plan_node_link *L = &node->links[l];
                if (pa->n >= PLAN_NODE_MAX_DEPTH)
                    return -EINVAL;
                if (L->duplex) {
                    pa->cons[pa->n] = 2 * l + (uint32_t)dir;
                    pa->coef[pa->n] = 1.0;
                } else {
                    /* one capacity for both directions:
                     * sum h2d/h2d_cap + sum d2h/d2h_cap <= 1, in units of
                     * the H2D figure (coefficient 1 when both are equal) */
                    pa->cons[pa->n] = 2 * l;
                    pa->coef[pa->n] =
                        dir ? (L->h2d_gbps * 1e3) / (L->d2h_gbps * 1e3) : 1.0;
                }
                pa->n++;
            }
        }
        for (int e = 0; e < 2; e++) {
            jengine *g = &J->eng[2 * d + (uint32_t)e];
            g->active = NONE;
            g->device = d;
        }
    }

    for (uint32_t i = 0; i < J->n; i++) {
        jclient *c = &J->c[i];
        const plan_trace *t = in[i].trace;
        const plan_schedule *s = in[i].schedule;
        uint64_t ncp = 0, nrel = t->n_storages;

        c->in = &in[i];
        c->t = t;
        c->s = s;
        c->dev = in[i].device;
        c->eng[0] = 2 * c->dev;
        c->eng[1] = node->devices[c->dev].duplex ? 2 * c->dev + 1
                                                 : 2 * c->dev;
        J->dev[c->dev].n_clients++;
        if (in[i].sync != PLAN_NONE) {
            if (in[i].sync >= J->n)
                return -EINVAL;
            J->grp[in[i].sync].n++;
        }
        for (size_t a = 0; a < s->n_actions; a++) {
            uint8_t k = s->actions[a].kind;
            if (k == PLAN_ACT_PREFETCH || k == PLAN_ACT_STORE)
                ncp++;
            else if (k == PLAN_ACT_FREE_DEVICE || k == PLAN_ACT_FREE_HOST)
                nrel++;
        }
        c->st = calloc(t->n_storages ? t->n_storages : 1, sizeof(*c->st));
        c->init = malloc(t->n_storages ? t->n_storages : 1);
        if (!c->st || !c->init)
            return -ENOMEM;
        /* homes (checked by prevalidate: plan_simulate refuses bad ones) */
        if (plan_schedule_initials(t, s, c->init) < 0)
            for (uint32_t x = 0; x < t->n_storages; x++)
                c->init[x] = t->storages[x].initial;
        for (uint32_t x = 0; x < t->n_storages; x++) {
            const plan_storage *sto = &t->storages[x];
            bool accessed = t->acc_start[x] != t->acc_start[x + 1];
            c->st[x].last_acc =
                accessed ? t->acc[t->acc_start[x + 1] - 1].op : NONE;
            c->st[x].bytes = sto->bytes;
            c->st[x].retained = sto->retained;
            if (c->init[x] == PLAN_INIT_DEVICE && (accessed || sto->retained))
                c->t0_dev += sto->bytes;
            else if (c->init[x] == PLAN_INIT_HOST)
                c->t0_host += sto->bytes;
        }
        c->copy_base = (uint32_t)n_cp;
        c->copy_cap = (uint32_t)ncp;
        c->rel_base = (uint32_t)n_rel;
        c->rel_cap = (uint32_t)nrel;
        n_cp += ncp;
        n_rel += nrel;
        if (n_cp >= NONE || n_rel >= NONE)
            return -E2BIG;
        c->stage = ST_STEP;
        c->block = BL_NONE;
        set_ready(J, i);
    }
    J->cp = malloc((n_cp ? n_cp : 1) * sizeof(*J->cp));
    J->rel = malloc((n_rel ? n_rel : 1) * sizeof(*J->rel));
    if (!J->cp || !J->rel)
        return -ENOMEM;
    for (uint32_t e = 0; e < J->n_eng; e++) {
        /* an engine holds at most the copies of its clients in one step */
        uint64_t cap = 1;
        for (uint32_t i = 0; i < J->n; i++)
            if (J->c[i].eng[0] == e || J->c[i].eng[1] == e)
                cap += J->c[i].copy_cap;
        J->eng[e].q = malloc(cap * sizeof(uint32_t));
        if (!J->eng[e].q)
            return -ENOMEM;
        J->eng[e].cap = cap;
    }
    return 0;
}

/* ------------------------------------------------------------ main loop */

/* When the whole node is idle at a step boundary, restart node time at 0
 * (exactness of a lone client's steps; figures use differences). */
static void maybe_rebase(judge *J)
{
    if (J->T == 0 || J->n_live_copies > 0 || J->n_pending > 0 ||
        J->n_tm > 0 || J->n_active > 0)
        return;
    for (uint32_t i = 0; i < J->n; i++) {
        const jclient *c = &J->c[i];
        if (c->stage == ST_DONE)
            continue;
        if (c->stage != ST_STEP || c->in_alloc ||
            !(J->ready[i >> 6] & (1ull << (i & 63))))
            return;
    }
    J->base += J->T;
    J->T = 0;
}

static void fluid_events(judge *J)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < J->n_active; i++) {
        uint32_t x = J->active[i];
        jcopy *p = &J->cp[x];
        if (p->state == CP_LATENCY && p->ev <= J->T) {
            start_moving(J, x);
        } else if (p->state == CP_MOVING && p->rate > 0 && p->ev <= J->T) {
            /* leaves the moving set */
            for (uint32_t f = 0; f < J->n_moving; f++)
                if (J->moving[f] == x) {
                    J->moving[f] = J->moving[--J->n_moving];
                    break;
                }
            J->flows_changed = true;
            J->fluid_changed = true;
            copy_complete(J, x);
            continue; /* dropped from active */
        }
        J->active[k++] = x;
    }
    J->n_active = k;
}

static void fluid_next(judge *J)
{
    double nx = HUGE_VAL;
    for (uint32_t i = 0; i < J->n_active; i++) {
        const jcopy *p = &J->cp[J->active[i]];
        if (p->ev < nx)
            nx = p->ev;
    }
    J->fluid_next = nx;
}

static int run(judge *J)
{
    J->T = 0;
    J->fluid_next = HUGE_VAL;
    for (;;) {
        /* 1 */
        if (J->fluid_next <= J->T)
            fluid_events(J);
        /* copies whose rate is not yet known (just started moving) */
        /* 2 */
        while (J->n_tm > 0 && J->tm[0].t <= J->T)
            set_ready(J, tm_pop(J).c);
        for (;;) {
            maybe_rebase(J);
            uint32_t ci = next_ready(J);
            if (ci == NONE || J->failed)
                break;
            client_run(J, ci);
        }
        if (J->failed)
            return 0;
        /* 3 */
        check_stuck(J);
        if (J->failed)
            return 0;
        /* 4 */
        dispatch(J);
        /* 5 */
        if (J->flows_changed) {
            J->flows_changed = false;
            update_rates(J);
            J->fluid_changed = true;
        }
        if (J->fluid_changed) {
            J->fluid_changed = false;
            fluid_next(J);
        }
        /* 6 */
        double nx = J->fluid_next;
        if (J->n_tm > 0 && J->tm[0].t < nx)
            nx = J->tm[0].t;
        if (nx == HUGE_VAL) {
            if (J->n_done == J->n)
                return 0;
            for (uint32_t i = 0; i < J->n; i++)
                if (J->c[i].block != BL_DONE) {
                    violate(J, i, J->c[i].op, NONE,
                            "client \"%s\" step %u: stuck at op %u with "
                            "nothing left to happen", cname(J, i),
                            J->c[i].step, J->c[i].op);
                    break;
                }
            return 0;
        }
        if (nx < J->T)
            nx = J->T; /* rounding: never go back */
        J->T = nx;
    }
}

/* ------------------------------------------------------------ entry */

plan_node_result *plan_node_result_free(plan_node_result *r)
{
    if (r)
        HO_FREE_ALL(r->clients, r->devices, r);
    return NULL;
}

int plan_node_judge(const plan_node *node, const plan_node_input *in,
                    uint32_t n, const plan_node_opts *opt,
                    plan_node_result **ret, plan_node_violation *ret_violation)
{
    return plan_node_judge_observed(node, in, n, opt, NULL, ret,
                                    ret_violation);
}

int plan_node_judge_observed(const plan_node *node, const plan_node_input *in,
                             uint32_t n, const plan_node_opts *opt,
                             const plan_node_observer *obs,
                             plan_node_result **ret,
                             plan_node_violation *ret_violation)
{
    plan_node_violation v;
    plan_node_result *res = NULL;
    judge J;
    int r;

    memset(&v, 0, sizeof v);
    v.client = v.step = v.op = NONE;
    v.storage_id = UINT64_MAX;
    if (!node || !node->finished || (n > 0 && !in) || !ret ||
        n > PLAN_NODE_MAX_CLIENTS)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++) {
        if (!in[i].trace || !in[i].trace->finished || !in[i].schedule ||
            in[i].device >= node->n_devices || !(in[i].weight > 0) ||
            !isfinite(in[i].weight))
            return -EINVAL;
    }
    memset(&J, 0, sizeof J);
    J.node = node;
    J.n = n;
    J.steps = opt && opt->steps ? opt->steps : PLAN_NODE_DEFAULT_STEPS;
    if (J.steps > PLAN_NODE_MAX_STEPS)
        return -EINVAL;
    J.v = &v;
    J.obs = obs;

    r = setup(&J, in);
    for (uint32_t i = 0; r == 0 && i < n && !J.failed; i++) {
        /* clients sharing trace, schedule and budget are checked once */
        uint32_t j = 0;
        while (j < i && !(in[j].trace == in[i].trace &&
                          in[j].schedule == in[i].schedule &&
                          in[j].budget_bytes == in[i].budget_bytes))
            j++;
        if (j == i)
            r = prevalidate(&J, i);
    }
    if (r == 0 && !J.failed)
        r = run(&J);
    if (r == 0 && J.failed)
        r = HO_E_BAD_SCHEDULE;
    if (r == 0) {
        res = calloc(1, sizeof(*res));
        if (res) {
            res->clients = calloc(n ? n : 1, sizeof(*res->clients));
            res->devices = calloc(node->n_devices, sizeof(*res->devices));
        }
        if (!res || !res->clients || !res->devices) {
            plan_node_result_free(res);
            res = NULL;
            r = -ENOMEM;
        }
    }
    if (r == 0) {
        res->steps = J.steps;
        res->n_clients = n;
        res->n_devices = node->n_devices;
        res->max_slowdown = n ? 0 : 1.0;
        for (uint32_t i = 0; i < n; i++) {
            const plan_node_client_fig *f = &J.c[i].fig;
            res->clients[i] = *f;
            res->weighted_exposed_us += in[i].weight * f->exposed_us;
            res->alloc_wait_us += f->alloc_wait_us;
            if (f->slowdown > res->max_slowdown)
                res->max_slowdown = f->slowdown;
            if (f->end_us > res->end_us)
                res->end_us = f->end_us;
            if (f->start_us + f->step_time_us > res->end_us)
                res->end_us = f->start_us + f->step_time_us;
        }
        for (uint32_t d = 0; d < node->n_devices; d++) {
            res->devices[d].peak_bytes = J.dev[d].peak;
            res->devices[d].capacity_bytes = J.dev[d].cap;
            res->devices[d].n_clients = J.dev[d].n_clients;
        }
        res->n_copies = J.n_copies_total;
        res->n_rate_updates = J.n_rate_updates;
        *ret = res;
    }
    judge_done(&J);
    if (r == -ENOMEM)
        v.code = 0;
    if (ret_violation)
        *ret_violation = v;
    return r;
}
