/*
 * planner/baselines.c - the baselines of PLANNER.md §5 on the planner IR:
 * none, seed-greedy, ms-distance and reactive-lru.  Each builds a new
 * schedule (owned by the caller), sorted by point and bound to the trace;
 * plan_make judges it with plan_simulate.
 */
#include "planner/plan_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "proto/mem.h"

/* ----------------------------------------------------------------- none */

/* The actions that the trace forces whatever the budget: an `initial: host`
 * storage is prefetched before its first access when that access reads it;
 * when it is retained, it is stored after its last write (if any op writes
 * it) and freed from the device after its last access, so that the step
 * ends as it started.  Every other storage is left to the model's implicit
 * rules. */
typedef int (*forced_fn)(void *ctx, const plan_trace *t, uint32_t op,
                         plan_when when, plan_act_kind kind, uint32_t st);

static int forced_actions(const plan_trace *t, uint32_t st, forced_fn fn,
                          void *ctx)
{
    const plan_storage *sto = &t->storages[st];
    uint32_t a0 = t->acc_start[st], a1 = t->acc_start[st + 1];
    int r = 0;
    if (sto->initial != PLAN_INIT_HOST || a0 == a1)
        return 0;
    if (t->acc[a0].flags & PLAN_ACC_READ)
        r = fn(ctx, t, t->acc[a0].op, PLAN_BEFORE, PLAN_ACT_PREFETCH, st);
    if (r < 0 || !sto->retained)
        return r;
    for (uint32_t k = a1; k-- > a0;) {
        if (t->acc[k].flags & PLAN_ACC_WRITE) {
            r = fn(ctx, t, t->acc[k].op, PLAN_AFTER, PLAN_ACT_STORE, st);
            break;
        }
    }
    if (r == 0)
        r = fn(ctx, t, t->acc[a1 - 1].op, PLAN_AFTER, PLAN_ACT_FREE_DEVICE,
               st);
    return r;
}

static int forced_push(void *ctx, const plan_trace *t, uint32_t op,
                       plan_when when, plan_act_kind kind, uint32_t st)
{
    return plan_schedule_push(ctx, t, op, when, kind, st);
}

int plan_none(const plan_trace *t, uint64_t budget, plan_schedule **ret_schedule)
{
    plan_schedule *s = plan_schedule_new("none", budget);
    int r = 0;
    if (!s)
        return -ENOMEM;
    for (uint32_t st = 0; st < t->n_storages && r == 0; st++)
        r = forced_actions(t, st, forced_push, s);
    if (r == 0)
        r = plan_schedule_sort(s);
    if (r < 0) {
        plan_schedule_free(s);
        return r;
    }
    *ret_schedule = s;
    return 0;
}

/* The peak plan_simulate gives the `none` schedule, without building it:
 * the same walk as the judge's (PLANNER.md §3) reduced to what `none`
 * does.  Every allocation of op i happens at its before point's clock
 * (its prefetches, then its new writes), after the releases due by then;
 * the releases are those of the after points (the forced free_device of
 * retained initial: host data, waiting for its store) and the implicit
 * frees of data after its last access.  Within a point the actions go in
 * storage order, as plan_none sorts them.  0, -ENOMEM, or HO_E_INTERNAL
 * where the walk finds what the judge would refuse (the caller then asks
 * the judge). */
typedef struct np_st {
    double h2d_end, d2h_end;
    uint64_t bytes;
    uint32_t first_op;   /* of its first access (PLAN_NONE: none) */
    uint32_t last_op;    /* of its last access */
    uint32_t last_write; /* retained initial: host data: the op of its last
                            write (PLAN_NONE: none), else PLAN_NONE */
    uint32_t mark;       /* the after point that listed it last */
    bool on_dev, host, retained, first_reads;
} np_st;

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double np_done(const np_st *x)
{
    return x->h2d_end > x->d2h_end ? x->h2d_end : x->d2h_end;
}

/* A release of s at `now` (its copies done or not): applied at once when
 * due by the next allocation (which happens at `now` or later). */
static int np_release(plan_rheap *rel, np_st *x, double now, uint64_t *dev)
{
    double d = np_done(x);
    x->on_dev = false;
    if (d <= now) {
        *dev -= x->bytes;
        return 0;
    }
    return plan_rheap_push(rel, (plan_rel){d, x->bytes});
}

int plan_none_peak(const plan_trace *t, uint64_t *ret_peak)
{
    const uint32_t ns = t->n_storages ? t->n_storages : 1;
    np_st *st = calloc(ns, sizeof(*st));
    uint32_t *pt = NULL;
    size_t cap_pt = 0;
    plan_rheap rel = {0};
    uint64_t dev = 0, peak;
    double eng[2] = {0, 0}, now = 0;
    int r = -ENOMEM;
    if (!st)
        return r;
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *sto = &t->storages[s];
        uint32_t a0 = t->acc_start[s], a1 = t->acc_start[s + 1];
        np_st *x = &st[s];
        x->bytes = sto->bytes;
        x->host = sto->initial == PLAN_INIT_HOST;
        x->retained = sto->retained;
        x->first_op = a0 != a1 ? t->acc[a0].op : PLAN_NONE;
        x->last_op = a0 != a1 ? t->acc[a1 - 1].op : PLAN_NONE;
        x->first_reads = a0 != a1 && (t->acc[a0].flags & PLAN_ACC_READ);
        x->last_write = PLAN_NONE;
        x->mark = PLAN_NONE;
        if (sto->initial == PLAN_INIT_DEVICE && (a0 != a1 || sto->retained)) {
            x->on_dev = true;
            dev += sto->bytes;
        }
        if (x->host && x->retained)
            for (uint32_t k = a1; k-- > a0;)
                if (t->acc[k].flags & PLAN_ACC_WRITE) {
                    x->last_write = t->acc[k].op;
                    break;
                }
    }
    peak = dev;
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *o = &t->ops[i];
        const uint32_t *refs = t->refs + o->first_ref;
        const uint32_t nr = o->n_reads + o->n_writes;
        size_t np = 0;
        if (i + 2 < t->n_ops) { /* bound by misses on scattered storages */
            const plan_op *o2 = &t->ops[i + 2];
            for (uint32_t k = 0; k < o2->n_reads + o2->n_writes; k++)
                __builtin_prefetch(&st[t->refs[o2->first_ref + k]]);
        }
        while (rel.n > 0 && rel.v[0].t <= now)
            dev -= plan_rheap_pop(&rel).bytes;
        /* the before point: prefetches of initial: host data read first
         * here, in storage order */
        for (uint32_t k = 0; k < o->n_reads; k++) {
            np_st *x = &st[refs[k]];
            if (!x->host || x->on_dev || x->first_op != i || !x->first_reads)
                continue;
            if (plan_reserve((void **)&pt, &cap_pt, np, sizeof(*pt)) < 0)
                goto out;
            pt[np++] = refs[k];
            x->on_dev = true; /* once, if read twice */
        }
        if (np > 1)
            qsort(pt, np, sizeof(*pt), u32_cmp);
        for (size_t q = 0; q < np; q++) {
            np_st *x = &st[pt[q]];
            dev += x->bytes;
            x->h2d_end =
                plan_engine_copy(&t->link, eng, 0, x->bytes, now, 0, NULL);
        }
        for (uint32_t k = 0; k < o->n_reads; k++)
            if (!st[refs[k]].on_dev) {
                r = HO_E_INTERNAL; /* not there: the judge refuses it */
                goto out;
            }
        for (uint32_t k = o->n_reads; k < nr; k++) {
            np_st *x = &st[refs[k]];
            if (!x->on_dev) {
                x->on_dev = true;
                dev += x->bytes;
            }
        }
        if (dev > peak)
            peak = dev;
        double start = now;
        for (uint32_t k = 0; k < nr; k++) {
            const np_st *x = &st[refs[k]];
            double d = k < o->n_reads ? x->h2d_end : np_done(x);
            if (d > start)
                start = d;
        }
        now = start + o->duration_us;
        /* the after point: the store of retained initial: host data after
         * its last write and its free_device after its last access, in
         * storage order; then the implicit frees */
        np = 0;
        for (uint32_t k = 0; k < nr; k++) {
            np_st *x = &st[refs[k]];
            if (!x->host || !x->retained || x->mark == i ||
                (x->last_write != i && x->last_op != i))
                continue;
            x->mark = i; /* read and written: once */
            if (plan_reserve((void **)&pt, &cap_pt, np, sizeof(*pt)) < 0)
                goto out;
            pt[np++] = refs[k];
        }
        if (np > 1)
            qsort(pt, np, sizeof(*pt), u32_cmp);
        for (size_t q = 0; q < np; q++) {
            np_st *x = &st[pt[q]];
            if (x->last_write == i) /* store after the last write */
                x->d2h_end = plan_engine_copy(&t->link, eng, 1, x->bytes,
                                              now, x->h2d_end, NULL);
            /* its free_device: released when its copies are done */
            if (x->last_op == i && (r = np_release(&rel, x, now, &dev)) < 0)
                goto out;
        }
        for (uint32_t k = 0; k < nr; k++) {
            np_st *x = &st[refs[k]];
            if (x->on_dev && !x->retained && x->last_op == i &&
                (r = np_release(&rel, x, now, &dev)) < 0)
                goto out;
        }
    }
    *ret_peak = peak;
    r = 0;
out:
    HO_FREE_ALL(st, pt, rel.v);
    return r;
}

int plan_no_offload_peak(const plan_trace *t, uint64_t *ret_peak)
{
    plan_schedule *s = NULL;
    plan_metrics m;
    plan_violation v;
    int r = plan_none_peak(t, ret_peak);
    if (r != HO_E_INTERNAL)
        return r;
    /* the walk found what the judge refuses: the judge says what */
    if ((r = plan_none(t, UINT64_MAX, &s)) < 0)
        return r;
    /* the none schedule is valid for every finished trace */
    r = plan_simulate(t, s, &m, &v, NULL) < 0 ? HO_E_INTERNAL : 0;
    *ret_peak = m.peak_device_bytes;
    plan_schedule_free(s);
    return r;
}

/* --------------------------------------------------------------- emitter
 * seed-greedy and ms-distance describe their offloads as events; stores
 * of data whose host copy is already current are dropped (so the output
 * is valid under the model: a second store of the same version would come
 * after the device copy was freed), then the events are ordered by point
 * and, within a point, store < free_device < free_host < prefetch. */

enum { EV_STORE = 0, EV_FREE_DEVICE, EV_FREE_HOST, EV_PREFETCH };

typedef struct bl_ev {
    uint64_t point;   /* op * 2 + when */
    uint32_t cls;     /* EV_* */
    uint32_t storage;
} bl_ev;

typedef struct bl_list {
    bl_ev *v;
    size_t n, cap;
} bl_list;

static int ev_push(bl_list *l, uint32_t op, plan_when when, uint32_t cls,
                   uint32_t storage)
{
    if (plan_reserve((void **)&l->v, &l->cap, l->n, sizeof(*l->v)) < 0)
        return -ENOMEM;
    l->v[l->n++] = (bl_ev){(uint64_t)op * 2 + (uint64_t)when, cls, storage};
    return 0;
}

/* By (storage, point, class) and by (point, class, storage). */
/* (a1, a2, a3) against (b1, b2, b3), lexicographic. */
static int cmp_keys(uint64_t a1, uint64_t b1, uint64_t a2, uint64_t b2,
                    uint64_t a3, uint64_t b3)
{
    int c = plan_cmp_u64(a1, b1);
    if (!c)
        c = plan_cmp_u64(a2, b2);
    return c ? c : plan_cmp_u64(a3, b3);
}

static int ev_cmp_storage(const void *x, const void *y)
{
    const bl_ev *a = x, *b = y;
    return cmp_keys(a->storage, b->storage, a->point, b->point, a->cls,
                    b->cls);
}

static int ev_cmp_point(const void *x, const void *y)
{
    const bl_ev *a = x, *b = y;
    return cmp_keys(a->point, b->point, a->cls, b->cls, a->storage,
                    b->storage);
}

/* Drop redundant stores (and free_host of storages without a host copy),
 * then build the schedule.  Consumes l. */
static int ev_finish(bl_list *l, const plan_trace *t, const char *planner,
                     uint64_t budget, plan_schedule **ret_schedule)
{
    static const uint8_t kinds[4] = {PLAN_ACT_STORE, PLAN_ACT_FREE_DEVICE,
                                     PLAN_ACT_FREE_HOST, PLAN_ACT_PREFETCH};
    plan_schedule *s = NULL;
    int r = 0;

    if (l->n)
        qsort(l->v, l->n, sizeof(*l->v), ev_cmp_storage);
    size_t out = 0;
    for (size_t i = 0; i < l->n;) {
        uint32_t st = l->v[i].storage;
        const plan_access *acc = t->acc + t->acc_start[st];
        uint32_t na = t->acc_start[st + 1] - t->acc_start[st], k = 0;
        /* host_ver: version held on the host, UINT32_MAX for none */
        uint32_t ver = 0, host_ver = t->storages[st].initial == PLAN_INIT_HOST
                                         ? 0 : UINT32_MAX;
        for (; i < l->n && l->v[i].storage == st; i++) {
            bl_ev e = l->v[i];
            /* version at this point: writes by ops before it */
            while (k < na && (uint64_t)acc[k].op * 2 + 1 <= e.point) {
                if (acc[k].flags & PLAN_ACC_WRITE)
                    ver++;
                k++;
            }
            if (e.cls == EV_STORE) {
                if (host_ver == ver)
                    continue;
                host_ver = ver;
            } else if (e.cls == EV_FREE_HOST && host_ver == UINT32_MAX) {
                continue;
            }
            l->v[out++] = e;
        }
    }
    l->n = out;
    if (l->n)
        qsort(l->v, l->n, sizeof(*l->v), ev_cmp_point);
    s = plan_schedule_new(planner, budget);
    if (!s) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < l->n && r == 0; i++)
        r = plan_schedule_push(s, t, (uint32_t)(l->v[i].point >> 1),
                               (plan_when)(l->v[i].point & 1),
                               kinds[l->v[i].cls], l->v[i].storage);
    if (r == 0) {
        *ret_schedule = s;
        s = NULL;
    }
out:
    plan_schedule_free(s);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
    return r;
}

/* The forced actions of `none` (see forced_actions) as events. */
static int forced_event(void *ctx, const plan_trace *t, uint32_t op,
                        plan_when when, plan_act_kind kind, uint32_t st)
{
    (void)t;
    return ev_push(ctx, op, when,
                   kind == PLAN_ACT_PREFETCH ? EV_PREFETCH
                   : kind == PLAN_ACT_STORE  ? EV_STORE
                                             : EV_FREE_DEVICE,
                   st);
}

/* The residency of the `none` schedule per op (what the seed planner
 * calls resident_bytes[op]): a storage counts from its allocation (step
 * start for `initial: device`, else its first access) to its last access,
 * or to the last op when it is retained on the device. */
static int none_residency(const plan_trace *t, int64_t **ret_value)
{
    uint32_t n = t->n_ops;
    int64_t *lv = calloc((size_t)n + 1, sizeof(*lv));
    if (!lv)
        return -ENOMEM;
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *st = &t->storages[s];
        uint32_t a0 = t->acc_start[s], a1 = t->acc_start[s + 1], from, to;
        if (a0 == a1) {
            if (!plan_untouched_span(st, n, &from, &to))
                continue;
        } else {
            from = st->initial == PLAN_INIT_DEVICE ? 0 : t->acc[a0].op;
            to = st->retained && st->initial != PLAN_INIT_HOST
                     ? n - 1
                     : t->acc[a1 - 1].op;
        }
        lv[from] += (int64_t)st->bytes;
        lv[to + 1] -= (int64_t)st->bytes;
    }
    for (uint32_t i = 1; i <= n; i++)
        lv[i] += lv[i - 1];
    *ret_value = lv;
    return 0;
}

/* ----------------------------------------------------------- seed-greedy
 * Hyper-Parallel's GreedyResidencyPlanner (seed 003 §4.4, PLANNER.md §5),
 * faults included: op counts instead of durations, H2D right before the
 * consumer, no check of the result, O(candidates x ops). */

typedef struct sg_cand {
    uint64_t bytes;
    uint32_t storage;
    uint32_t release; /* gap start: access op */
    uint32_t end;     /* consuming access op */
    uint32_t copy;    /* latest write at or before release, else first access */
} sg_cand;

static int sg_cmp(const void *x, const void *y)
{
    const sg_cand *a = x, *b = y;
    uint32_t da = a->end - a->release, db = b->end - b->release;
    if (da != db)
        return da > db ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    if (a->release != b->release) /* -release descending */
        return a->release < b->release ? -1 : 1;
    return a->storage < b->storage ? -1 : (a->storage > b->storage);
}

int plan_seed_greedy(const plan_trace *t, uint64_t budget,
                     plan_schedule **ret_schedule)
{
    int64_t *res = NULL;
    sg_cand *c = NULL;
    uint8_t *taken_storage = NULL;
    bl_list l = {0};
    size_t nc = 0;
    int r;

    r = none_residency(t, &res);
    if (r < 0)
        return r;
    r = -ENOMEM;
    c = malloc((t->n_refs ? t->n_refs : 1) * sizeof(*c));
    taken_storage = calloc(t->n_storages ? t->n_storages : 1, 1);
    if (!c || !taken_storage)
        goto out;
    /* 3. candidates: adjacent accesses with at least one op between */
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_access *acc = t->acc + t->acc_start[s];
        uint32_t na = t->acc_start[s + 1] - t->acc_start[s];
        uint32_t copy = na ? acc[0].op : 0;
        if (t->storages[s].pinned)
            continue; /* never leaves the device: not a candidate */
        for (uint32_t k = 0; k + 1 < na; k++) {
            if (acc[k].flags & PLAN_ACC_WRITE)
                copy = acc[k].op;
            if (acc[k + 1].op - acc[k].op < 2)
                continue;
            c[nc++] = (sg_cand){t->storages[s].bytes, s, acc[k].op,
                                acc[k + 1].op, copy};
        }
    }
    /* 4. by (distance, size, -release) descending */
    qsort(c, nc, sizeof(*c), sg_cmp);
    /* 5. walk while the resident curve's maximum exceeds the budget */
    uint64_t over = 0;
    for (uint32_t i = 0; i < t->n_ops; i++)
        over += (uint64_t)res[i] > budget;
    for (size_t k = 0; k < nc && over > 0; k++) {
        const sg_cand *x = &c[k];
        bool hit = false;
        for (uint32_t i = x->release + 1; i < x->end && !hit; i++)
            hit = (uint64_t)res[i] > budget;
        if (!hit)
            continue;
        for (uint32_t i = x->release + 1; i < x->end; i++) {
            bool was = (uint64_t)res[i] > budget;
            res[i] -= (int64_t)x->bytes;
            if (was && (uint64_t)res[i] <= budget)
                over--;
        }
        /* 6. COPY_D2H after copy_start, RELEASE_DEVICE after the gap
         * start, COPY_H2D before the consuming op */
        if ((r = ev_push(&l, x->copy, PLAN_AFTER, EV_STORE, x->storage)) < 0 ||
            (r = ev_push(&l, x->release, PLAN_AFTER, EV_FREE_DEVICE,
                         x->storage)) < 0 ||
            (r = ev_push(&l, x->end, PLAN_BEFORE, EV_PREFETCH, x->storage)) <
                0)
            goto out;
        taken_storage[x->storage] = 1;
    }
    /* 7. forced actions; host copies of offloaded, non-retained storages
     * are released after their last access */
    for (uint32_t s = 0; s < t->n_storages; s++) {
        if ((r = forced_actions(t, s, forced_event, &l)) < 0)
            goto out;
        if (taken_storage[s] && !t->storages[s].retained &&
            (r = ev_push(&l, plan_last_access(t, s), PLAN_AFTER, EV_FREE_HOST,
                         s)) < 0)
            goto out;
    }
    r = ev_finish(&l, t, "seed-greedy", budget, ret_schedule);
out:
    HO_FREE_ALL(l.v, res, c, taken_storage);
    return r;
}

/* ----------------------------------------------------------- ms-distance
 * MindSpore's DistanceBaseHyperOffloadStrategy (seed 000 §2.3-2.6): an
 * output whose next user is more than select_distance ops after its
 * producer is copied to the host right after the producer and brought
 * back prefetch_distance ops ahead of that user; OffloadInfoFilterByNumber
 * keeps the first select_num of them in execution order (the order the
 * strategy visits the producers).  Budget-blind by design. */

typedef struct ms_cand {
    uint32_t producer, user, storage;
} ms_cand;

static int ms_cmp(const void *x, const void *y)
{
    const ms_cand *a = x, *b = y;
    if (a->producer != b->producer)
        return a->producer < b->producer ? -1 : 1;
    return a->storage < b->storage ? -1 : (a->storage > b->storage);
}

int plan_ms_distance(const plan_trace *t, uint64_t budget,
                     const plan_options *opt, plan_schedule **ret_schedule)
{
    uint32_t sd = opt && opt->select_distance ? opt->select_distance : 100;
    uint32_t sn = opt && opt->select_num ? opt->select_num : 100;
    uint32_t pd = opt && opt->prefetch_distance ? opt->prefetch_distance : 50;
    ms_cand *c = NULL;
    bl_list l = {0};
    size_t nc = 0;
    int r = -ENOMEM;

    c = malloc((t->n_refs ? t->n_refs : 1) * sizeof(*c));
    if (!c)
        goto out;
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_access *acc = t->acc + t->acc_start[s];
        uint32_t na = t->acc_start[s + 1] - t->acc_start[s];
        if (t->storages[s].pinned)
            continue;
        for (uint32_t k = 0; k + 1 < na; k++)
            if ((acc[k].flags & PLAN_ACC_WRITE) &&
                (acc[k + 1].flags & PLAN_ACC_READ) &&
                acc[k + 1].op - acc[k].op > sd)
                c[nc++] = (ms_cand){acc[k].op, acc[k + 1].op, s};
    }
    qsort(c, nc, sizeof(*c), ms_cmp);
    if (nc > sn)
        nc = sn;
    for (size_t k = 0; k < nc; k++) {
        uint32_t at = c[k].user > pd ? c[k].user - pd : 0;
        if (at <= c[k].producer)
            at = c[k].producer + 1;
        if ((r = ev_push(&l, c[k].producer, PLAN_AFTER, EV_STORE,
                         c[k].storage)) < 0 ||
            (r = ev_push(&l, c[k].producer, PLAN_AFTER, EV_FREE_DEVICE,
                         c[k].storage)) < 0 ||
            (r = ev_push(&l, at, PLAN_BEFORE, EV_PREFETCH, c[k].storage)) < 0)
            goto out;
    }
    for (uint32_t s = 0; s < t->n_storages; s++)
        if ((r = forced_actions(t, s, forced_event, &l)) < 0)
            goto out;
    r = ev_finish(&l, t, "ms-distance", budget, ret_schedule);
out:
    free(l.v);
    free(c);
    return r;
}

/* ---------------------------------------------------------- reactive-lru
 * A runtime without a plan, written down as the schedule it would follow:
 * before each op, while the storages resident plus those the op brings in
 * exceed the budget, evict the least recently used storage the op does
 * not need (store it first when the host has no current copy); then fetch
 * what the op reads and is not resident.  Pinned storages are never
 * evicted.  At step end, retained `initial: host` data goes back to the
 * host and other retained data comes back to the device. */

typedef struct lru_ent {
    int64_t last; /* last use (op), -1 before the step */
    uint32_t s;
} lru_ent;

static bool lru_less(const lru_ent *a, const lru_ent *b)
{
    return a->last != b->last ? a->last < b->last : a->s < b->s;
}

PLAN_GROWING_HEAP_DEFINE(lru_heap, lru_ent, lru_less)

/* The state of the reactive-LRU run. */
typedef struct lru_run {
    const plan_trace *t;
    uint64_t budget;
    plan_schedule *s;
    uint8_t *res, *cur;  /* resident; host copy current */
    int64_t *last;       /* last use (op), -1 before the step */
    uint32_t *mark;      /* op that last counted the storage */
    lru_heap h;
    uint64_t bytes;      /* resident bytes, as the runtime counts them */
} lru_run;

/* Step start: what is on device, every unpinned storage in the LRU. */
static int lru_start(lru_run *x)
{
    const plan_trace *t = x->t;
    for (uint32_t i = 0; i < t->n_storages; i++) {
        const plan_storage *st = &t->storages[i];
        bool accessed = t->acc_start[i] != t->acc_start[i + 1];
        x->last[i] = -1;
        x->cur[i] = st->initial == PLAN_INIT_HOST;
        if (st->initial == PLAN_INIT_DEVICE && (accessed || st->retained)) {
            x->res[i] = 1;
            x->bytes += st->bytes;
            if (!st->pinned && lru_heap_push(&x->h, (lru_ent){-1, i}) < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

/* Before op i: while over budget, evict the least recently used storages
 * the op does not need (store first if the host copy is not current). */
static int lru_evict(lru_run *x, uint32_t i, uint64_t incoming)
{
    const plan_trace *t = x->t;
    int r = 0;
    while (x->bytes + incoming > x->budget && x->h.n > 0 && r == 0) {
        lru_ent e = lru_heap_pop(&x->h);
        if (!x->res[e.s] || x->last[e.s] != e.last)
            continue; /* stale entry */
        if (x->mark[e.s] == i)
            continue; /* needed now: pushed again below */
        if (!x->cur[e.s]) {
            r = plan_schedule_push(x->s, t, i, PLAN_BEFORE, PLAN_ACT_STORE,
                                   e.s);
            x->cur[e.s] = 1;
        }
        if (r == 0)
            r = plan_schedule_push(x->s, t, i, PLAN_BEFORE,
                                   PLAN_ACT_FREE_DEVICE, e.s);
        x->res[e.s] = 0;
        x->bytes -= t->storages[e.s].bytes;
    }
    return r;
}

/* Op i: evict, fetch on demand what it reads, account its writes, then
 * refresh the LRU (and drop what the model frees after its last use). */
static int lru_op(lru_run *x, uint32_t i)
{
    const plan_trace *t = x->t;
    const plan_op *o = &t->ops[i];
    const uint32_t *ref = t->refs + o->first_ref;
    uint32_t nr = o->n_reads + o->n_writes;
    uint64_t incoming = 0;
    int r;

    for (uint32_t k = 0; k < nr; k++) {
        if (x->mark[ref[k]] == i)
            continue;
        x->mark[ref[k]] = i;
        if (!x->res[ref[k]])
            incoming += t->storages[ref[k]].bytes;
    }
    if ((r = lru_evict(x, i, incoming)) < 0)
        return r;
    for (uint32_t k = 0; k < o->n_reads; k++) {
        uint32_t s = ref[k];
        if (x->res[s])
            continue;
        if ((r = plan_schedule_push(x->s, t, i, PLAN_BEFORE,
                                    PLAN_ACT_PREFETCH, s)) < 0)
            return r;
        x->res[s] = 1;
        x->bytes += t->storages[s].bytes;
    }
    for (uint32_t k = o->n_reads; k < nr; k++) {
        uint32_t s = ref[k];
        if (!x->res[s]) { /* allocated by the write */
            x->res[s] = 1;
            x->bytes += t->storages[s].bytes;
        }
        x->cur[s] = 0;
    }
    for (uint32_t k = 0; k < nr; k++) {
        uint32_t s = ref[k];
        if (x->last[s] == (int64_t)i)
            continue;
        x->last[s] = i;
        const plan_storage *st = &t->storages[s];
        if (!st->retained && plan_last_access(t, s) == i) {
            x->res[s] = 0; /* freed implicitly by the model */
            x->bytes -= st->bytes;
        } else if (!st->pinned && (r = lru_heap_push(&x->h, (lru_ent){i, s})) < 0) {
            return r;
        }
    }
    return 0;
}

/* Step end: retained data back where the next step expects it. */
static int lru_end(lru_run *x)
{
    const plan_trace *t = x->t;
    uint32_t end = t->n_ops - 1;
    int r = 0;
    for (uint32_t s = 0; s < t->n_storages && r == 0; s++) {
        const plan_storage *st = &t->storages[s];
        if (!st->retained || st->initial != PLAN_INIT_HOST || !x->res[s])
            continue;
        if (!x->cur[s])
            r = plan_schedule_push(x->s, t, end, PLAN_AFTER, PLAN_ACT_STORE,
                                   s);
        if (r == 0)
            r = plan_schedule_push(x->s, t, end, PLAN_AFTER,
                                   PLAN_ACT_FREE_DEVICE, s);
    }
    for (uint32_t s = 0; s < t->n_storages && r == 0; s++) {
        const plan_storage *st = &t->storages[s];
        if (st->retained && st->initial != PLAN_INIT_HOST && !x->res[s])
            r = plan_schedule_push(x->s, t, end, PLAN_AFTER,
                                   PLAN_ACT_PREFETCH, s);
    }
    return r;
}

int plan_reactive_lru(const plan_trace *t, uint64_t budget,
                      plan_schedule **ret_schedule)
{
    const uint32_t ns = t->n_storages ? t->n_storages : 1;
    lru_run x = {.t = t, .budget = budget};
    int r = -ENOMEM;

    x.s = plan_schedule_new("reactive-lru", budget);
    x.res = calloc(ns, 1);
    x.cur = calloc(ns, 1);
    x.last = malloc(ns * sizeof(*x.last));
    x.mark = malloc(ns * sizeof(*x.mark));
    if (!x.s || !x.res || !x.cur || !x.last || !x.mark)
        goto out;
    memset(x.mark, 0xff, ns * sizeof(*x.mark));
    if ((r = lru_start(&x)) < 0)
        goto out;
    for (uint32_t i = 0; i < t->n_ops && r == 0; i++)
        r = lru_op(&x, i);
    if (r == 0)
        r = lru_end(&x);
    if (r == 0) {
        *ret_schedule = x.s;
        x.s = NULL;
    }
out:
    plan_schedule_free(x.s);
    HO_FREE_ALL(x.res, x.cur, x.last, x.mark, x.h.v);
    return r;
}
