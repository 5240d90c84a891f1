/*
 * planner/hoplan_model.c - hoplan's model of a trace (nominal times, the
 * `none` residency per boundary, candidate gaps with their ideal windows,
 * versions, the working-set lower bound) and the transfer placement that
 * turns a selection of gaps into a schedule judged by plan_simulate.
 * docs/planner.md describes the algorithm; hoplan_impl.h the vocabulary.
 *
 * Ownership: hp_model owns its arrays (hp_model_done); hp_place owns its
 * schedule and arrays (hp_place_done).  Scratch memory of a placement is
 * allocated and released inside hp_place_loop.
 */
#include "planner/hoplan_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "proto/mem.h"



/* --------------------------------------------------------------- maxtree
 * Recursive segment tree over [0, n) in Euler-tour layout (2n - 1 nodes):
 * the children of node x covering [l, r] are x + 1 ([l, mid]) and
 * x + 2 (mid - l + 1) ([mid + 1, r]). */

static void mt_build(hp_maxtree *tr, uint32_t x, uint32_t l, uint32_t r,
                     const int64_t *lv)
{
    tr->lz[x] = 0;
    if (l == r) {
        tr->mx[x] = lv[l];
        return;
    }
    uint32_t mid = l + (r - l) / 2, rc = x + 2 * (mid - l + 1);
    mt_build(tr, x + 1, l, mid, lv);
    mt_build(tr, rc, mid + 1, r, lv);
    tr->mx[x] = tr->mx[x + 1] > tr->mx[rc] ? tr->mx[x + 1] : tr->mx[rc];
}

int hp_maxtree_init(hp_maxtree *tr, const int64_t *lv, uint32_t n)
{
    memset(tr, 0, sizeof(*tr));
    if (n == 0)
        return -EINVAL;
    size_t nodes = 2 * (size_t)n - 1;
    tr->mx = malloc(nodes * sizeof(*tr->mx));
    tr->lz = malloc(nodes * sizeof(*tr->lz));
    if (!tr->mx || !tr->lz) {
        hp_maxtree_done(tr);
        return -ENOMEM;
    }
    tr->n = n;
    mt_build(tr, 0, 0, n - 1, lv);
    return 0;
}

void hp_maxtree_done(hp_maxtree *tr)
{
    free(tr->mx);
    free(tr->lz);
    tr->mx = tr->lz = NULL;
    tr->n = 0;
}

static void mt_add(hp_maxtree *tr, uint32_t x, uint32_t l, uint32_t r,
                   uint32_t ql, uint32_t qr, int64_t d)
{
    if (ql <= l && r <= qr) {
        tr->mx[x] += d;
        tr->lz[x] += d;
        return;
    }
    uint32_t mid = l + (r - l) / 2, rc = x + 2 * (mid - l + 1);
    if (ql <= mid)
        mt_add(tr, x + 1, l, mid, ql, qr, d);
    if (qr > mid)
        mt_add(tr, rc, mid + 1, r, ql, qr, d);
    int64_t a = tr->mx[x + 1], b = tr->mx[rc];
    tr->mx[x] = (a > b ? a : b) + tr->lz[x];
}

void hp_maxtree_add(hp_maxtree *tr, uint32_t l, uint32_t r, int64_t d)
{
    if (l > r || r >= tr->n || d == 0)
        return;
    mt_add(tr, 0, 0, tr->n - 1, l, r, d);
}

static int64_t mt_max(const hp_maxtree *tr, uint32_t x, uint32_t l,
                      uint32_t r, uint32_t ql, uint32_t qr)
{
    if (ql <= l && r <= qr)
        return tr->mx[x];
    uint32_t mid = l + (r - l) / 2, rc = x + 2 * (mid - l + 1);
    int64_t best = INT64_MIN;
    if (ql <= mid) {
        int64_t v = mt_max(tr, x + 1, l, mid, ql, qr);
        if (v > best)
            best = v;
    }
    if (qr > mid) {
        int64_t v = mt_max(tr, rc, mid + 1, r, ql, qr);
        if (v > best)
            best = v;
    }
    return best + tr->lz[x];
}

int64_t hp_maxtree_max(hp_maxtree *tr, uint32_t l, uint32_t r)
{
    if (l > r || r >= tr->n)
        return INT64_MIN;
    return mt_max(tr, 0, 0, tr->n - 1, l, r);
}

/* Smallest (largest when `last`) index in [ql, qr] with value > thr;
 * acc: lazy adds above x. */
static uint32_t mt_find_gt(const hp_maxtree *tr, uint32_t x, uint32_t l,
                           uint32_t r, uint32_t ql, uint32_t qr, int64_t thr,
                           int64_t acc, bool last)
{
    if (qr < l || r < ql || tr->mx[x] + acc <= thr)
        return PLAN_NONE;
    if (l == r)
        return l;
    uint32_t mid = l + (r - l) / 2, rc = x + 2 * (mid - l + 1);
    acc += tr->lz[x];
    /* the near half first: left for the first, right for the last */
    uint32_t i = last ? mt_find_gt(tr, rc, mid + 1, r, ql, qr, thr, acc, last)
                      : mt_find_gt(tr, x + 1, l, mid, ql, qr, thr, acc, last);
    if (i != PLAN_NONE)
        return i;
    return last ? mt_find_gt(tr, x + 1, l, mid, ql, qr, thr, acc, last)
                : mt_find_gt(tr, rc, mid + 1, r, ql, qr, thr, acc, last);
}

uint32_t hp_maxtree_first_gt(hp_maxtree *tr, uint32_t l, uint32_t r,
                             int64_t thr)
{
    if (l > r || r >= tr->n)
        return PLAN_NONE;
    return mt_find_gt(tr, 0, 0, tr->n - 1, l, r, thr, 0, false);
}

uint32_t hp_maxtree_last_gt(hp_maxtree *tr, uint32_t l, uint32_t r,
                            int64_t thr)
{
    if (l > r || r >= tr->n)
        return PLAN_NONE;
    return mt_find_gt(tr, 0, 0, tr->n - 1, l, r, thr, 0, true);
}

/* ---------------------------------------------------------------- model */

/* Galloping searches: the answer is usually a few boundaries from the
 * starting point, and the timeline is large. */
uint32_t hp_first_at_or_after(const double *T, uint32_t n, uint32_t from,
                              double t)
{
    if (from >= n || T[from] >= t)
        return from < n ? from : n;
    uint32_t lo = from, step = 1, hi; /* T[lo] < t */
    for (;;) {
        hi = lo + step;
        if (hi >= n || hi < lo) {
            hi = n;
            break;
        }
        if (T[hi] >= t)
            break;
        lo = hi;
        step *= 2;
    }
    /* answer in (lo, hi] */
    return plan_first_ge(T, lo + 1, hi, t);
}

/* Largest j in [lo, hi] with T[j] <= t, PLAN_NONE if T[lo] > t. */
static uint32_t last_at_or_before(const double *T, uint32_t lo, uint32_t hi,
                                  double t)
{
    if (lo > hi || T[lo] > t)
        return PLAN_NONE;
    if (T[hi] <= t)
        return hi;
    uint32_t top = hi, step = 1, bot; /* T[top] > t */
    for (;;) {
        if (top - lo <= step) {
            bot = lo;
            break;
        }
        bot = top - step;
        if (T[bot] <= t)
            break;
        top = bot;
        step *= 2;
    }
    /* T[bot] <= t < T[top]: answer in [bot, top) */
    while (top - bot > 1) {
        uint32_t mid = bot + (top - bot) / 2;
        if (T[mid] <= t)
            bot = mid;
        else
            top = mid;
    }
    return bot;
}

static int push_gap(hp_model *m, const hp_gap *g)
{
    if (m->n_gaps == m->cap_gaps) {
        uint64_t cap = m->cap_gaps ? (uint64_t)m->cap_gaps * 2 : 1024;
        if (cap > UINT32_MAX - 1)
            return -E2BIG;
        hp_gap *p = realloc(m->gaps, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        m->gaps = p;
        m->cap_gaps = (uint32_t)cap;
    }
    m->gaps[m->n_gaps++] = *g;
    return 0;
}

/* Version (s, its rank) whose data was last written by op w (PLAN_NONE
 * for the data present at step start); *cur caches the entry of the
 * current version of s.  Returns the entry index or PLAN_NONE on OOM. */
static uint32_t get_ver(hp_model *m, uint32_t s, uint32_t w, uint32_t *cur)
{
    if (*cur != PLAN_NONE)
        return *cur;
    if (m->n_vers == m->cap_vers) {
        uint64_t cap = m->cap_vers ? (uint64_t)m->cap_vers * 2 : 1024;
        if (cap > UINT32_MAX - 1)
            return PLAN_NONE;
        hp_ver *p = realloc(m->vers, cap * sizeof(*p));
        if (!p)
            return PLAN_NONE;
        m->vers = p;
        m->cap_vers = (uint32_t)cap;
    }
    const plan_trace *t = m->t;
    hp_ver *v = &m->vers[m->n_vers];
    v->storage = s;
    v->rho = w == PLAN_NONE ? 0 : w + 1;
    v->d2h_us = plan_copy_us(&t->link, 1, t->storages[s].bytes);
    v->g0 = m->n_gaps;
    v->g1 = m->n_gaps;
    *cur = m->n_vers++;
    return *cur;
}

void hp_gap_ideal(const hp_model *m, const double *T, const hp_gap *gp,
                  hp_win *w)
{
    const uint32_t n = m->n;
    uint32_t fb = hp_gap_fb(gp);
    double r = T[fb];
    memset(w, 0, sizeof(*w));
    if (gp->ver != PLAN_NONE) {
        const hp_ver *v = &m->vers[gp->ver];
        if (T[v->rho] + v->d2h_us > r)
            r = T[v->rho] + v->d2h_us;
    }
    w->a = hp_first_at_or_after(T, n, fb, r);
    if (gp->type == HP_LIVE || gp->type == HP_LEAD_HOST) {
        uint32_t q = gp->q;
        double ch = plan_copy_us(&m->t->link, 0, hp_bytes(m, gp));
        double D = T[q < n ? q : n];
        uint32_t qmax = q < n ? q : n - 1;
        uint32_t j = fb <= qmax ? last_at_or_before(T, fb, qmax, D - ch)
                                : PLAN_NONE;
        w->h2d_us = ch;
        if (gp->type == HP_LEAD_HOST)
            w->a = 0;
        if (j != PLAN_NONE && (j > w->a || gp->type == HP_LEAD_HOST)) {
            w->z = j;
        } else {
            double stall = T[qmax] + ch - D;
            w->z = qmax;
            w->exposed = true;
            w->stall_us = stall > 0 ? stall : 0;
        }
    } else if (gp->type == HP_DEAD) {
        w->z = gp->q;
    } else {
        w->z = n;
    }
}

/* Add a gap of storage s and compute its ideal window on m->T. */
static int add_gap(hp_model *m, uint32_t s, uint8_t type, uint32_t f,
                   uint32_t q, uint32_t ver, bool forced)
{
    hp_gap g = {.storage = s, .type = type, .f = f, .q = q, .ver = ver,
                .forced = forced};
    hp_win w;
    hp_gap_ideal(m, m->T, &g, &w);
    g.a = w.a;
    g.z = w.z;
    g.exposed = w.exposed;
    g.cost_us = (float)(w.h2d_us + w.stall_us);
    g.stall_us = (float)w.stall_us;
    if (ver != PLAN_NONE)
        m->vers[ver].g1 = m->n_gaps + 1;
    return push_gap(m, &g);
}

void hp_model_done(hp_model *m)
{
    if (!m)
        return;
    HO_FREE_ALL(m->T, m->base, m->gaps, m->vers, m->cand, m->forced);
    memset(m, 0, sizeof(*m));
}

/* Observer: boundary i+1 is the end of op i. */
static void tl_op(void *ctx, uint32_t op, double start, double end)
{
    double *T = ctx;
    (void)start;
    T[op + 1] = end;
}

int hp_timeline_none(const plan_trace *t, double *T, uint64_t *ret_peak)
{
    plan_schedule *s = NULL;
    plan_metrics mt;
    plan_violation v;
    plan_sim_observer obs = {T, NULL, NULL, tl_op};
    int r = plan_none(t, UINT64_MAX, &s);
    if (r < 0)
        return r;
    T[0] = 0;
    r = plan_simulate(t, s, &mt, &v, &obs);
    plan_schedule_free(s);
    if (ret_peak)
        *ret_peak = mt.peak_device_bytes;
    return r == -ENOMEM ? r : (r < 0 ? HO_E_INTERNAL : 0);
}

/* Gaps of one storage (see hoplan_impl.h for the kinds). */
static int storage_gaps(hp_model *m, uint32_t s)
{
    const plan_trace *t = m->t;
    const plan_storage *st = &t->storages[s];
    const plan_access *acc = t->acc + t->acc_start[s];
    uint32_t na = t->acc_start[s + 1] - t->acc_start[s];
    uint32_t n = m->n, cur = PLAN_NONE, w = PLAN_NONE;
    int r = 0;

    if (na == 0) {
        /* Retained device data nobody touches may sit on the host. */
        if (st->initial == PLAN_INIT_DEVICE && st->retained && !st->pinned) {
            uint32_t v = get_ver(m, s, PLAN_NONE, &cur);
            if (v == PLAN_NONE)
                return -ENOMEM;
            r = add_gap(m, s, HP_LIVE, HP_START, n, v, false);
        }
        return r;
    }
    if (st->initial == PLAN_INIT_DEVICE && !st->pinned) {
        if (acc[0].flags == PLAN_ACC_WRITE) {
            r = add_gap(m, s, HP_DEAD, HP_START, acc[0].op, PLAN_NONE, false);
        } else {
            uint32_t v = get_ver(m, s, PLAN_NONE, &cur);
            if (v == PLAN_NONE)
                return -ENOMEM;
            r = add_gap(m, s, HP_LIVE, HP_START, acc[0].op, v, false);
        }
    } else if (st->initial == PLAN_INIT_HOST &&
               (acc[0].flags & PLAN_ACC_READ)) {
        r = add_gap(m, s, HP_LEAD_HOST, HP_START, acc[0].op, PLAN_NONE, true);
    }
    for (uint32_t k = 0; k < na && r == 0; k++) {
        if (acc[k].flags & PLAN_ACC_WRITE) {
            w = acc[k].op;
            cur = PLAN_NONE; /* a new version */
        }
        if (k + 1 == na || st->pinned || acc[k + 1].op <= acc[k].op + 1)
            continue;
        if (acc[k + 1].flags == PLAN_ACC_WRITE) {
            r = add_gap(m, s, HP_DEAD, acc[k].op, acc[k + 1].op, PLAN_NONE,
                        false);
            continue;
        }
        uint32_t v = PLAN_NONE;
        if (!(st->initial == PLAN_INIT_HOST && w == PLAN_NONE)) {
            v = get_ver(m, s, w, &cur);
            if (v == PLAN_NONE)
                return -ENOMEM;
        }
        r = add_gap(m, s, HP_LIVE, acc[k].op, acc[k + 1].op, v, false);
    }
    if (r < 0 || !st->retained)
        return r;
    uint32_t last = acc[na - 1].op;
    bool trail_host = st->initial == PLAN_INIT_HOST;
    if (!trail_host && (st->pinned || last + 1 >= n))
        return 0;
    uint32_t v = PLAN_NONE;
    if (!(trail_host && w == PLAN_NONE)) {
        v = get_ver(m, s, w, &cur);
        if (v == PLAN_NONE)
            return -ENOMEM;
    }
    return add_gap(m, s, trail_host ? HP_TRAIL_HOST : HP_LIVE, last, n, v,
                   trail_host);
}

/* Lower bound on any feasible budget: at boundary i the device holds op
 * i's reads and writes, the pinned storages live across i, and the data
 * op i-1 wrote that is needed later (a copy of it cannot have completed
 * by the time op i's memory is allocated); at t = 0 every initially
 * resident storage. */
static int lower_bound(hp_model *m)
{
    const plan_trace *t = m->t;
    const uint32_t n = m->n;
    int64_t *lv = calloc((size_t)n + 1, sizeof(*lv));
    uint32_t *mark = malloc((t->n_storages ? t->n_storages : 1) *
                            sizeof(*mark));
    if (!lv || !mark) {
        free(lv);
        free(mark);
        return -ENOMEM;
    }
    memset(mark, 0xff, (t->n_storages ? t->n_storages : 1) * sizeof(*mark));
    /* pinned spans and just-written live data (difference array) */
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *st = &t->storages[s];
        const plan_access *acc = t->acc + t->acc_start[s];
        uint32_t na = t->acc_start[s + 1] - t->acc_start[s];
        int64_t b = (int64_t)st->bytes;
        if (na == 0)
            continue;
        if (st->pinned) {
            uint32_t from = st->initial == PLAN_INIT_DEVICE ? 0 : acc[0].op;
            lv[from] += b;
            lv[acc[na - 1].op + 1] -= b;
            continue;
        }
        for (uint32_t k = 0; k < na; k++) {
            uint32_t o = acc[k].op;
            if (!(acc[k].flags & PLAN_ACC_WRITE) || o + 1 >= n)
                continue;
            bool live = k + 1 < na ? (acc[k + 1].op != o + 1 &&
                                      (acc[k + 1].flags & PLAN_ACC_READ))
                                   : st->retained;
            if (live) {
                lv[o + 1] += b;
                lv[o + 2] -= b;
            }
        }
    }
    for (uint32_t i = 1; i <= n; i++)
        lv[i] += lv[i - 1];
    m->lb = m->p0;
    m->lb_op = PLAN_NONE;
    for (uint32_t i = 0; i < n; i++) {
        const plan_op *o = &t->ops[i];
        const uint32_t *ref = t->refs + o->first_ref;
        int64_t ws = lv[i];
        for (uint32_t k = 0; k < o->n_reads + o->n_writes; k++) {
            uint32_t s = ref[k];
            if (mark[s] == i || t->storages[s].pinned)
                continue;
            mark[s] = i;
            ws += (int64_t)t->storages[s].bytes;
        }
        if ((uint64_t)ws > m->lb) {
            m->lb = (uint64_t)ws;
            m->lb_op = i;
        }
    }
    free(lv);
    free(mark);
    return 0;
}

int hp_model_init(hp_model *m, const plan_trace *t)
{
    int r = -ENOMEM;
    memset(m, 0, sizeof(*m));
    if (!t || !t->finished || t->n_ops == 0)
        return -EINVAL;
    const uint32_t n = t->n_ops;
    m->t = t;
    m->n = n;
    m->T = malloc(((size_t)n + 1) * sizeof(*m->T));
    m->base = calloc((size_t)n + 1, sizeof(*m->base));
    if (!m->T || !m->base)
        goto fail;
    r = hp_timeline_none(t, m->T, &m->none_peak);
    if (r < 0)
        goto fail;
    r = -ENOMEM;

    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *st = &t->storages[s];
        uint32_t a0 = t->acc_start[s], a1 = t->acc_start[s + 1];
        int64_t b = (int64_t)st->bytes;
        uint32_t from, to;
        if (a0 == a1) {
            if (!plan_untouched_span(st, n, &from, &to))
                continue;
        } else {
            if (st->initial == PLAN_INIT_DEVICE)
                from = 0;
            else if (st->initial == PLAN_INIT_HOST &&
                     (t->acc[a0].flags & PLAN_ACC_READ))
                from = 0; /* the forced leading gap removes the head */
            else
                from = t->acc[a0].op;
            to = st->retained ? n - 1 : t->acc[a1 - 1].op;
        }
        if (st->initial == PLAN_INIT_DEVICE)
            m->p0 += st->bytes;
        m->base[from] += b;
        m->base[to + 1] -= b;
        r = storage_gaps(m, s);
        if (r < 0)
            goto fail;
    }
    for (uint32_t i = 1; i < n; i++)
        m->base[i] += m->base[i - 1];

    r = -ENOMEM;
    uint32_t nc = 0, nf = 0;
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        if (m->gaps[g].forced)
            nf++;
        else if (m->gaps[g].a < m->gaps[g].z)
            nc++;
    }
    m->cand = malloc((nc ? nc : 1) * sizeof(*m->cand));
    m->forced = malloc((nf ? nf : 1) * sizeof(*m->forced));
    if (!m->cand || !m->forced)
        goto fail;
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        if (m->gaps[g].forced)
            m->forced[m->n_forced++] = g;
        else if (m->gaps[g].a < m->gaps[g].z)
            m->cand[m->n_cand++] = g;
    }
    r = lower_bound(m);
    if (r < 0)
        goto fail;
    return 0;
fail:
    hp_model_done(m);
    return r;
}


/* ------------------------------------------------------------ placement */

void hp_place_done(hp_place *p)
{
    if (!p)
        return;
    plan_schedule_free(p->sched);
    HO_FREE_ALL(p->over, p->wa, p->wz, p->vcomp, p->times, p->xfer);
    memset(p, 0, sizeof(*p));
}

/* Min-heap of stores keyed by (needed-by boundary, must-issue-by
 * boundary, rho, version). */
typedef struct vkey {
    uint32_t key, hard, rho, v;
} vkey;

static bool vkey_less(const vkey *a, const vkey *b)
{
    if (a->key != b->key)
        return a->key < b->key;
    if (a->hard != b->hard)
        return a->hard < b->hard;
    if (a->rho != b->rho)
        return a->rho < b->rho;
    return a->v < b->v;
}

static void vheap_push(vkey *h, uint32_t *n, vkey k)
{
    uint32_t i = (*n)++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!vkey_less(&k, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = k;
}

static vkey vheap_pop(vkey *h, uint32_t *n)
{
    vkey top = h[0], last = h[--*n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && vkey_less(&h[c + 1], &h[c]))
            c++;
        if (!vkey_less(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = last;
    return top;
}

/* One action to emit, ordered by (point, cls, key, storage). */
typedef struct emit {
    uint64_t point; /* op * 2 + when */
    uint32_t cls;   /* 0 store, 1 free_device, 2 free_host, 3 prefetch */
    uint32_t key;
    uint32_t storage;
} emit;

static int emit_cmp(const void *x, const void *y)
{
    const emit *a = x, *b = y;
    int c = plan_cmp_u64(a->point, b->point);
    if (!c)
        c = plan_cmp_u64(a->cls, b->cls);
    if (!c)
        c = plan_cmp_u64(a->key, b->key);
    return c ? c : plan_cmp_u64(a->storage, b->storage);
}

/* The action point of boundary i: before op 0, else after op i - 1. */
static uint64_t boundary_point(uint32_t i)
{
    return i == 0 ? 0 : (uint64_t)(i - 1) * 2 + 1;
}

/* Observer of the judge: per-boundary maximum of the device bytes right
 * after an allocation, boundary times, copies. */
typedef struct sim_obs {
    hp_place *p;
    uint32_t n, cur;
    uint64_t last;
    size_t cap_xfer;
} sim_obs;

static void obs_bytes(void *ctx, double t_us, uint64_t bytes)
{
    sim_obs *o = ctx;
    (void)t_us;
    if (bytes > o->last) {
        uint32_t i = o->cur < o->n ? o->cur : o->n - 1;
        if ((int64_t)bytes > o->p->over[i])
            o->p->over[i] = (int64_t)bytes;
    }
    o->last = bytes;
}

static void obs_op(void *ctx, uint32_t op, double s, double e)
{
    sim_obs *o = ctx;
    (void)s;
    o->cur = op + 1;
    o->p->times[op + 1] = e;
}

static void obs_xfer(void *ctx, int dir, uint32_t storage, double s, double e,
                     uint64_t bytes)
{
    sim_obs *o = ctx;
    (void)storage;
    (void)bytes;
    if (o->p->n_xfer < o->cap_xfer) {
        double *x = o->p->xfer + 3 * o->p->n_xfer++;
        x[0] = dir;
        x[1] = s;
        x[2] = e;
    }
}

typedef struct scratch {
    int64_t *lv;      /* n + 1: level differences, then levels */
    int64_t *lvl;     /* n: levels with the ideal windows */
    uint8_t *vneed;   /* n_vers: some included gap needs this store */
    uint32_t *key, *hard, *iss, *seq; /* n_vers */
    uint32_t *vorder; /* n_vers, by rho */
    uint32_t *cnt;    /* n + 2 */
    vkey *heap;       /* n_vers */
    double *dbusy;    /* 2 n_vers: planned store intervals */
    uint32_t *pf;     /* n_gaps: prefetching gaps */
    uint32_t *pj;     /* n_gaps: prefetch boundary */
    uint32_t *fp;     /* n_gaps: free boundary */
    uint32_t *ga, *gz;/* n_gaps: ideal windows on this timeline */
    double *ls;       /* n_gaps: latest start of the prefetch */
    uint8_t *host;    /* n_storages: gets a host copy */
    emit *em;
} scratch;

static void scratch_done(scratch *x)
{
    HO_FREE_ALL(x->lv, x->lvl, x->vneed, x->key, x->hard, x->iss, x->seq,
                x->vorder, x->cnt, x->heap, x->dbusy, x->pf, x->pj, x->fp,
                x->ga, x->gz, x->ls, x->host, x->em);
    memset(x, 0, sizeof(*x));
}

static int scratch_init(scratch *x, const hp_model *m)
{
    size_t nv = m->n_vers ? m->n_vers : 1, ng = m->n_gaps ? m->n_gaps : 1;
    memset(x, 0, sizeof(*x));
    x->lv = malloc(((size_t)m->n + 1) * sizeof(*x->lv));
    x->lvl = malloc(((size_t)m->n + 1) * sizeof(*x->lvl));
    x->vneed = malloc(nv);
    x->key = malloc(nv * sizeof(*x->key));
    x->hard = malloc(nv * sizeof(*x->hard));
    x->iss = malloc(nv * sizeof(*x->iss));
    x->seq = malloc(nv * sizeof(*x->seq));
    x->vorder = malloc(nv * sizeof(*x->vorder));
    x->cnt = malloc(((size_t)m->n + 2) * sizeof(*x->cnt));
    x->heap = malloc(nv * sizeof(*x->heap));
    x->dbusy = malloc(2 * nv * sizeof(*x->dbusy));
    x->pf = malloc(ng * sizeof(*x->pf));
    x->pj = malloc(ng * sizeof(*x->pj));
    x->fp = malloc(ng * sizeof(*x->fp));
    x->ga = malloc(ng * sizeof(*x->ga));
    x->gz = malloc(ng * sizeof(*x->gz));
    x->ls = malloc(ng * sizeof(*x->ls));
    x->host = malloc(m->t->n_storages ? m->t->n_storages : 1);
    if (!x->lv || !x->lvl || !x->vneed || !x->key || !x->hard || !x->iss ||
        !x->seq || !x->vorder || !x->cnt || !x->heap || !x->dbusy ||
        !x->pf || !x->pj || !x->fp || !x->ga || !x->gz || !x->ls ||
        !x->host) {
        scratch_done(x);
        return -ENOMEM;
    }
    return 0;
}

static inline bool included(const hp_model *m, const uint8_t *sel, uint32_t g)
{
    return m->gaps[g].forced || (sel && sel[g]);
}

static void range_add(int64_t *diff, uint32_t l, uint32_t r_excl, int64_t d)
{
    if (l >= r_excl)
        return;
    diff[l] += d;
    diff[r_excl] -= d;
}

/* Stores: the one needed earliest first (needed: the first boundary of
 * its gaps' windows over the budget while no store has completed), each
 * issued as soon as its data is written and the engine is about to be
 * idle, at the latest when it is needed or when its first prefetch must
 * go.  Fills x->iss/seq/dbusy and p->vcomp; returns the number of
 * stores. */
static uint32_t place_stores(const hp_model *m, const uint8_t *sel,
                             const double *T, scratch *x, hp_place *p,
                             hp_maxtree *tr, uint64_t budget)
{
    const uint32_t n = m->n;
    memset(x->vneed, 0, m->n_vers ? m->n_vers : 1);
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        const hp_gap *gp = &m->gaps[g];
        if (gp->ver == PLAN_NONE || !included(m, sel, g))
            continue;
        uint32_t a = x->ga[g], z = x->gz[g];
        uint32_t need = z < n ? z : n;
        if (a < z) {
            uint32_t i = hp_maxtree_first_gt(tr, a, z - 1, (int64_t)budget);
            if (i != PLAN_NONE)
                need = i;
        }
        uint32_t hard = gp->type == HP_LIVE ? (gp->q < n ? gp->q : n - 1) : n;
        uint32_t v = gp->ver;
        if (need > hard)
            need = hard;
        if (!x->vneed[v] || need < x->key[v])
            x->key[v] = need;
        if (!x->vneed[v] || hard < x->hard[v])
            x->hard[v] = hard;
        x->vneed[v] = 1;
    }
    memset(x->cnt, 0, ((size_t)n + 2) * sizeof(*x->cnt));
    for (uint32_t v = 0; v < m->n_vers; v++) {
        p->vcomp[v] = -1;
        if (x->vneed[v])
            x->cnt[m->vers[v].rho + 1]++;
    }
    for (uint32_t i = 0; i <= n; i++)
        x->cnt[i + 1] += x->cnt[i];
    uint32_t nv = x->cnt[n + 1];
    for (uint32_t v = 0; v < m->n_vers; v++)
        if (x->vneed[v])
            x->vorder[x->cnt[m->vers[v].rho]++] = v;
    uint32_t hn = 0, vi = 0, seq = 0;
    double eng = 0;
    for (uint32_t i = 0; i <= n; i++) {
        while (vi < nv && m->vers[x->vorder[vi]].rho == i) {
            uint32_t v = x->vorder[vi++];
            vheap_push(x->heap, &hn,
                       (vkey){x->key[v], x->hard[v], m->vers[v].rho, v});
        }
        double tnext = i < n ? T[i + 1] : INFINITY;
        while (hn > 0 && (x->heap[0].key <= i || eng <= tnext)) {
            vkey k = vheap_pop(x->heap, &hn);
            double st = eng > T[i] ? eng : T[i];
            eng = st + m->vers[k.v].d2h_us;
            x->iss[k.v] = i;
            x->dbusy[2 * seq] = st;
            x->dbusy[2 * seq + 1] = eng;
            x->seq[k.v] = seq++;
            p->vcomp[k.v] = eng;
        }
    }
    return seq;
}

/* Prefetches: latest starts on the serialised engine (latest consumer
 * first), then issue points in consumer order: at the latest start, no
 * earlier than memory allows, never before an earlier consumer's (FIFO).
 * Returns the number of prefetches, x->pf in consumer order. */
static uint32_t place_prefetches(const hp_model *m, const uint8_t *sel,
                                 const double *T, scratch *x, hp_place *p,
                                 hp_maxtree *tr, uint64_t budget,
                                 uint32_t nd)
{
    const plan_trace *t = m->t;
    const uint32_t n = m->n;
    uint32_t npf = 0;
    memset(x->cnt, 0, ((size_t)n + 2) * sizeof(*x->cnt));
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        const hp_gap *gp = &m->gaps[g];
        if ((gp->type == HP_LIVE || gp->type == HP_LEAD_HOST) &&
            included(m, sel, g)) {
            x->cnt[gp->q + 1]++;
            npf++;
        }
    }
    for (uint32_t i = 0; i <= n; i++)
        x->cnt[i + 1] += x->cnt[i];
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        const hp_gap *gp = &m->gaps[g];
        if ((gp->type == HP_LIVE || gp->type == HP_LEAD_HOST) &&
            included(m, sel, g))
            x->pf[x->cnt[gp->q]++] = g;
    }
    double U = INFINITY;
    int64_t pd = (int64_t)nd - 1; /* planned stores, backwards */
    for (uint32_t k = npf; k-- > 0;) {
        uint32_t g = x->pf[k];
        const hp_gap *gp = &m->gaps[g];
        double ch = plan_copy_us(&t->link, 0, hp_bytes(m, gp));
        double fin = T[gp->q < n ? gp->q : n];
        if (U < fin)
            fin = U;
        if (!t->link.duplex) {
            while (pd >= 0) {
                if (x->dbusy[2 * pd] >= fin) {
                    pd--;
                    continue;
                }
                if (x->dbusy[2 * pd + 1] <= fin - ch)
                    break;
                fin = x->dbusy[2 * pd];
                pd--;
            }
        }
        x->ls[g] = fin - ch;
        U = fin - ch;
    }
    uint32_t jprev = 0;
    for (uint32_t k = 0; k < npf; k++) {
        uint32_t g = x->pf[k];
        const hp_gap *gp = &m->gaps[g];
        uint64_t b = hp_bytes(m, gp);
        uint32_t qmax = gp->q < n ? gp->q : n - 1, lo = x->fp[g];
        if (lo < jprev)
            lo = jprev;
        if (lo > qmax)
            lo = qmax;
        uint32_t j = last_at_or_before(T, lo, qmax, x->ls[g]);
        if (j == PLAN_NONE)
            j = lo;
        uint32_t z = p->wz[g];
        if (j < z) { /* bringing it back early must fit */
            uint32_t i = hp_maxtree_last_gt(tr, j, z - 1,
                                            (int64_t)budget - (int64_t)b);
            if (i != PLAN_NONE)
                j = i + 1;
        }
        if (j < qmax) { /* bringing it back later may be what fits */
            uint32_t i = hp_maxtree_last_gt(tr, j > z ? j : z, qmax - 1,
                                            (int64_t)budget);
            if (i != PLAN_NONE && i + 1 > j)
                j = i + 1;
        }
        if (j > qmax)
            j = qmax;
        if (j < z)
            hp_maxtree_add(tr, j, z - 1, (int64_t)b);
        else if (j > z)
            hp_maxtree_add(tr, z, j - 1, -(int64_t)b);
        p->wz[g] = j;
        x->pj[g] = j;
        jprev = j;
    }
    return npf;
}

/* The actions, sorted; a new schedule in *ret_schedule. */
static int emit_schedule(const hp_model *m, const uint8_t *sel, scratch *x,
                         uint32_t npf, const char *planner, uint64_t budget,
                         plan_schedule **ret_schedule)
{
    static const uint8_t kinds[4] = {PLAN_ACT_STORE, PLAN_ACT_FREE_DEVICE,
                                     PLAN_ACT_FREE_HOST, PLAN_ACT_PREFETCH};
    const plan_trace *t = m->t;
    size_t ne = 0, cap = (size_t)m->n_vers + 2 * (size_t)m->n_gaps +
                         t->n_storages;
    int r = 0;
    x->em = malloc((cap ? cap : 1) * sizeof(*x->em));
    if (!x->em)
        return -ENOMEM;
    for (uint32_t v = 0; v < m->n_vers; v++)
        if (x->vneed[v])
            x->em[ne++] = (emit){boundary_point(x->iss[v]), 0, x->seq[v],
                                 m->vers[v].storage};
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        const hp_gap *gp = &m->gaps[g];
        if (!included(m, sel, g) || gp->type == HP_LEAD_HOST)
            continue;
        x->em[ne++] = (emit){boundary_point(x->fp[g]), 1, gp->storage,
                             gp->storage};
    }
    for (uint32_t k = 0; k < npf; k++)
        x->em[ne++] = (emit){(uint64_t)x->pj[x->pf[k]] * 2, 3, k,
                             m->gaps[x->pf[k]].storage};
    /* host copies of data the step does not keep are dropped after its
     * last access */
    memset(x->host, 0, t->n_storages ? t->n_storages : 1);
    for (uint32_t v = 0; v < m->n_vers; v++)
        if (x->vneed[v])
            x->host[m->vers[v].storage] = 1;
    for (uint32_t st = 0; st < t->n_storages; st++) {
        const plan_storage *sto = &t->storages[st];
        if (sto->retained || t->acc_start[st] == t->acc_start[st + 1] ||
            !(x->host[st] || sto->initial == PLAN_INIT_HOST))
            continue;
        x->em[ne++] = (emit){(uint64_t)plan_last_access(t, st) * 2 + 1, 2,
                             st, st};
    }
    qsort(x->em, ne, sizeof(*x->em), emit_cmp);
    plan_schedule *sched = plan_schedule_new(planner, budget);
    if (!sched) {
        r = -ENOMEM;
        goto out;
    }
    sched->actions = malloc((ne ? ne : 1) * sizeof(*sched->actions));
    if (!sched->actions) {
        plan_schedule_free(sched);
        r = -ENOMEM;
        goto out;
    }
    sched->cap_actions = ne ? ne : 1;
    for (size_t k = 0; k < ne && r == 0; k++) {
        const emit *e = &x->em[k];
        r = plan_schedule_push(sched, t, (uint32_t)(e->point >> 1),
                               (plan_when)(e->point & 1), kinds[e->cls],
                               e->storage);
    }
    if (r < 0)
        plan_schedule_free(sched);
    else
        *ret_schedule = sched;
out:
    free(x->em);
    x->em = NULL;
    return r;
}

/* One placement on timeline T with corrections `corr` (n, may be NULL).
 * Fills p's schedule, windows and simulation results. */
static int place_once(const hp_model *m, const uint8_t *sel, uint64_t budget,
                      const int64_t *corr, const double *T,
                      const char *planner, scratch *x, hp_place *p)
{
    const plan_trace *t = m->t;
    const uint32_t n = m->n;
    hp_maxtree tr = {0};
    int r;

    /* 1. levels with the ideal windows */
    int64_t *lv = x->lv;
    memset(lv, 0, ((size_t)n + 1) * sizeof(*lv));
    memset(x->lvl, 0, ((size_t)n + 1) * sizeof(*x->lvl));
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        const hp_gap *gp = &m->gaps[g];
        hp_win w;
        if (!included(m, sel, g))
            continue;
        hp_gap_ideal(m, T, gp, &w);
        x->ga[g] = w.a;
        x->gz[g] = w.z;
        p->wa[g] = w.a;
        p->wz[g] = w.z > w.a ? w.z : w.a;
        range_add(lv, w.a, w.z, -(int64_t)hp_bytes(m, gp));
        if (gp->ver == PLAN_NONE) /* needs no store */
            range_add(x->lvl, w.a, w.z, -(int64_t)hp_bytes(m, gp));
    }
    /* x->lvl: the levels before any store completes; a store is needed
     * from the first boundary of its window over the budget there */
    int64_t run = 0;
    for (uint32_t i = 0; i < n; i++) {
        run += x->lvl[i];
        x->lvl[i] = m->base[i] + run + (corr ? corr[i] : 0);
    }

    /* 2. stores */
    r = hp_maxtree_init(&tr, x->lvl, n);
    if (r < 0)
        return r;
    uint32_t nd = place_stores(m, sel, T, x, p, &tr, budget);
    hp_maxtree_done(&tr);

    /* 3. free points; windows start when the stores complete */
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        const hp_gap *gp = &m->gaps[g];
        if (!included(m, sel, g))
            continue;
        uint32_t fb = hp_gap_fb(gp);
        x->fp[g] = fb;
        if (gp->ver == PLAN_NONE)
            continue;
        if (x->iss[gp->ver] > fb)
            x->fp[g] = x->iss[gp->ver];
        double rt = p->vcomp[gp->ver];
        if (T[x->fp[g]] > rt)
            rt = T[x->fp[g]];
        uint32_t a = hp_first_at_or_after(T, n, x->fp[g], rt);
        if (a > p->wa[g]) {
            uint32_t a2 = a < x->gz[g] ? a : x->gz[g];
            range_add(lv, x->ga[g], a2, (int64_t)hp_bytes(m, gp));
            p->wa[g] = a;
            if (p->wz[g] < a)
                p->wz[g] = a;
        }
    }
    run = 0;
    for (uint32_t i = 0; i < n; i++) {
        run += lv[i];
        lv[i] = m->base[i] + run + (corr ? corr[i] : 0);
    }

    /* 4. prefetches */
    r = hp_maxtree_init(&tr, lv, n);
    if (r < 0)
        return r;
    uint32_t npf = place_prefetches(m, sel, T, x, p, &tr, budget, nd);
    hp_maxtree_done(&tr);

    /* 5. emit */
    plan_schedule *sched = NULL;
    r = emit_schedule(m, sel, x, npf, planner, budget, &sched);
    if (r < 0)
        return r;

    /* 6. judge */
    sim_obs so = {p, n, 0, 0, 2 * (size_t)sched->n_actions};
    plan_sim_observer obs = {&so, obs_bytes, obs_xfer, obs_op};
    for (uint32_t i = 0; i < n; i++)
        p->over[i] = 0;
    free(p->xfer);
    p->n_xfer = 0;
    p->xfer = malloc((so.cap_xfer ? so.cap_xfer : 1) * 3 * sizeof(double));
    if (!p->xfer) {
        plan_schedule_free(sched);
        return -ENOMEM;
    }
    p->times[0] = 0;
    sched->budget_bytes = UINT64_MAX;
    r = plan_simulate(t, sched, &p->metrics, &p->violation, &obs);
    sched->budget_bytes = budget;
    if (r == -ENOMEM) {
        plan_schedule_free(sched);
        return r;
    }
    p->valid = r == 0;
    p->fits = p->valid && p->metrics.peak_device_bytes <= budget;
    for (uint32_t i = 0; i < n; i++) {
        int64_t o = p->over[i] - (int64_t)budget;
        p->over[i] = o > 0 ? o : 0;
    }
    plan_schedule_free(p->sched);
    p->sched = sched;
    return 0;
}

int hp_place_loop(const hp_model *m, const uint8_t *sel, uint64_t budget,
                  const char *planner, hp_place *p)
{
    scratch x;
    int64_t *corr = NULL;
    double *T = NULL;
    int r;
    size_t ng = m->n_gaps ? m->n_gaps : 1, nv = m->n_vers ? m->n_vers : 1;
    size_t tb = ((size_t)m->n + 1) * sizeof(double);

    p->over = calloc(m->n, sizeof(*p->over));
    p->wa = malloc(ng * sizeof(*p->wa));
    p->wz = malloc(ng * sizeof(*p->wz));
    p->vcomp = malloc(nv * sizeof(*p->vcomp));
    p->times = malloc(tb);
    corr = calloc(m->n, sizeof(*corr));
    T = malloc(tb);
    if (!p->over || !p->wa || !p->wz || !p->vcomp || !p->times || !corr ||
        !T) {
        free(corr);
        free(T);
        return -ENOMEM;
    }
    memcpy(T, m->T, tb);
    r = scratch_init(&x, m);
    if (r < 0) {
        free(corr);
        free(T);
        return r;
    }
    for (int it = 0; it < HP_PLACE_ITERS; it++) {
        r = place_once(m, sel, budget, it ? corr : NULL, T, planner, &x, p);
        if (r < 0)
            break;
        if (!p->valid) {
            r = HO_E_INTERNAL;
            break;
        }
        if (p->fits) {
            break;
        }
        for (uint32_t i = 0; i < m->n; i++)
            corr[i] += p->over[i];
        memcpy(T, p->times, tb); /* the stalls it caused shift the times */
    }
    scratch_done(&x);
    free(corr);
    free(T);
    return r;
}
