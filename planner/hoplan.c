/*
 * planner/hoplan.c - hoplan: benefit-driven gap selection (PLANNER.md §4),
 * the selection/placement rounds, the fallbacks and the search for the
 * smallest budget it can meet.  The model and the transfer placement are
 * in hoplan_model.c; docs/planner.md explains the whole algorithm.
 *
 * Selection: every boundary's level (bytes on device) is kept in a
 * segment tree that also knows, per range, how many boundaries are over
 * the budget and by how much in total ("kinetic": levels only decrease
 * during a selection, so each boundary leaves the over-budget set once).
 * A candidate gap's benefit is the over-budget area it would remove
 * (boundaries x bytes, each boundary counting at most the gap's bytes),
 * its cost the transfer time it adds (H2D, its store unless a selected
 * gap of the same data already pays for it, and the stall when its
 * prefetch cannot be hidden).  A lazy greedy on benefit/cost (a bucket
 * queue, benefits re-evaluated on pop) picks gaps until no boundary is
 * over.
 *
 * Ownership: everything allocated here is released before returning,
 * except the schedule handed to the caller.
 */
#include "planner/hoplan_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "proto/mem.h"

/* --------------------------------------------------------- kinetic tree */

#define KT_BLOCK 8u /* levels per leaf: fewer nodes, fewer cache misses */

typedef struct knode {
    int64_t mx;     /* max level */
    int64_t mn;     /* min level among those > B (INT64_MAX if none) */
    int64_t lz;     /* pending add for the children (leaf: its levels) */
    double sum;     /* sum of (level - B) over levels > B */
    uint32_t cnt;   /* levels > B */
} knode;

typedef struct ktree {
    uint32_t n, nb; /* levels, leaf blocks */
    int64_t B;      /* the budget */
    knode *v;       /* 2 nb - 1 nodes over the blocks */
    int64_t *val;   /* n levels, without their leaf's pending add */
} ktree;

typedef struct kq {
    int64_t mx;
    uint32_t cnt;
    double sum;
} kq;

/* Summary of block b from its levels (after folding in the leaf's add). */
static void kt_leaf(ktree *k, uint32_t x, uint32_t b)
{
    knode *nd = &k->v[x];
    uint32_t lo = b * KT_BLOCK;
    uint32_t hi = lo + KT_BLOCK < k->n ? lo + KT_BLOCK : k->n;
    int64_t *val = k->val;
    if (nd->lz) {
        for (uint32_t i = lo; i < hi; i++)
            val[i] += nd->lz;
        nd->lz = 0;
    }
    nd->mx = INT64_MIN;
    nd->mn = INT64_MAX;
    nd->cnt = 0;
    nd->sum = 0;
    for (uint32_t i = lo; i < hi; i++) {
        int64_t v = val[i];
        if (v > nd->mx)
            nd->mx = v;
        if (v > k->B) {
            if (v < nd->mn)
                nd->mn = v;
            nd->cnt++;
            nd->sum += (double)(v - k->B);
        }
    }
}

static void kt_pull(ktree *k, uint32_t x, uint32_t lc, uint32_t rc)
{
    knode *nd = &k->v[x];
    const knode *a = &k->v[lc], *b = &k->v[rc];
    nd->mx = a->mx > b->mx ? a->mx : b->mx;
    nd->mn = a->mn < b->mn ? a->mn : b->mn;
    nd->cnt = a->cnt + b->cnt;
    nd->sum = a->sum + b->sum;
}

static void kt_apply(ktree *k, uint32_t x, int64_t d)
{
    knode *nd = &k->v[x];
    nd->mx += d;
    if (nd->cnt) {
        nd->mn += d;
        nd->sum += (double)d * nd->cnt;
    }
    nd->lz += d;
}

static void kt_push(ktree *k, uint32_t x, uint32_t lc, uint32_t rc)
{
    if (k->v[x].lz) {
        kt_apply(k, lc, k->v[x].lz);
        kt_apply(k, rc, k->v[x].lz);
        k->v[x].lz = 0;
    }
}

static void kt_build(ktree *k, uint32_t x, uint32_t l, uint32_t r)
{
    k->v[x].lz = 0;
    if (l == r) {
        kt_leaf(k, x, l);
        return;
    }
    uint32_t mid = l + (r - l) / 2, rc = x + 2 * (mid - l + 1);
    kt_build(k, x + 1, l, mid);
    kt_build(k, rc, mid + 1, r);
    kt_pull(k, x, x + 1, rc);
}

static void kt_done(ktree *k)
{
    free(k->v);
    free(k->val);
    memset(k, 0, sizeof(*k));
}

static int kt_init(ktree *k, const int64_t *lv, uint32_t n, int64_t B)
{
    memset(k, 0, sizeof(*k));
    k->nb = (n + KT_BLOCK - 1) / KT_BLOCK;
    k->v = malloc((2 * (size_t)k->nb - 1) * sizeof(*k->v));
    k->val = malloc((size_t)n * sizeof(*k->val));
    if (!k->v || !k->val) {
        kt_done(k);
        return -ENOMEM;
    }
    memcpy(k->val, lv, (size_t)n * sizeof(*lv));
    k->n = n;
    k->B = B;
    kt_build(k, 0, 0, k->nb - 1);
    return 0;
}

static inline int64_t kt_max(const ktree *k)
{
    return k->v[0].mx;
}

/* Add d <= 0 to the levels [ql, qr]; node x covers blocks [l, r]. */
static void kt_sub(ktree *k, uint32_t x, uint32_t l, uint32_t r, uint32_t ql,
                   uint32_t qr, int64_t d)
{
    uint32_t el = l * KT_BLOCK, er = (r + 1) * KT_BLOCK - 1;
    if (qr < el || er < ql)
        return;
    if (ql <= el && er <= qr && (k->v[x].cnt == 0 || k->v[x].mn + d > k->B)) {
        kt_apply(k, x, d);
        return;
    }
    if (l == r) {
        knode *nd = &k->v[x];
        uint32_t lo = el > ql ? el : ql, hi = er < qr ? er : qr;
        if (hi >= k->n)
            hi = k->n - 1;
        for (uint32_t i = lo; i <= hi; i++)
            k->val[i] += d;
        (void)nd;
        kt_leaf(k, x, l);
        return;
    }
    uint32_t mid = l + (r - l) / 2, rc = x + 2 * (mid - l + 1);
    kt_push(k, x, x + 1, rc);
    kt_sub(k, x + 1, l, mid, ql, qr, d);
    kt_sub(k, rc, mid + 1, r, ql, qr, d);
    kt_pull(k, x, x + 1, rc);
}

/* Levels [ql, qr]: max, count over the budget, excess sum.  Read-only:
 * acc sums the pending adds above a node (they keep every count valid: an
 * add is only left pending where no level crosses the budget).  Without
 * recursion: it is on the hot path of the selection. */
typedef struct kframe {
    uint32_t x, l, r;
    int64_t acc;
} kframe;

static void kt_range(const ktree *k, uint32_t ql, uint32_t qr, kq *out)
{
    kframe st[128];
    int sp = 0;
    out->mx = INT64_MIN;
    out->cnt = 0;
    out->sum = 0;
    st[sp++] = (kframe){0, 0, k->nb - 1, 0};
    while (sp > 0) {
        uint32_t x = st[--sp].x, l = st[sp].l, r = st[sp].r;
        int64_t acc = st[sp].acc;
        uint32_t el = l * KT_BLOCK, er = (r + 1) * KT_BLOCK - 1;
        if (qr < el || er < ql)
            continue;
        const knode *nd = &k->v[x];
        if (ql <= el && er <= qr) {
            if (nd->mx + acc > out->mx)
                out->mx = nd->mx + acc;
            out->cnt += nd->cnt;
            out->sum += nd->sum + (double)acc * nd->cnt;
            continue;
        }
        acc += nd->lz;
        if (l == r) {
            uint32_t lo = el > ql ? el : ql, hi = er < qr ? er : qr;
            if (hi >= k->n)
                hi = k->n - 1;
            for (uint32_t i = lo; i <= hi; i++) {
                int64_t v = k->val[i] + acc;
                if (v > out->mx)
                    out->mx = v;
                if (v > k->B) {
                    out->cnt++;
                    out->sum += (double)(v - k->B);
                }
            }
            continue;
        }
        uint32_t mid = l + (r - l) / 2, rc = x + 2 * (mid - l + 1);
        st[sp++] = (kframe){rc, mid + 1, r, acc};
        st[sp++] = (kframe){x + 1, l, mid, acc};
    }
}

static void kt_subr(ktree *k, uint32_t ql, uint32_t qr, int64_t d)
{
    kt_sub(k, 0, 0, k->nb - 1, ql, qr, d);
}

/* First level index in [ql, qr] over the budget, PLAN_NONE. */
static uint32_t kt_first_over_rec(const ktree *k, uint32_t x, uint32_t l,
                                  uint32_t r, uint32_t ql, uint32_t qr,
                                  int64_t acc)
{
    uint32_t el = l * KT_BLOCK, er = (r + 1) * KT_BLOCK - 1;
    if (qr < el || er < ql || k->v[x].cnt == 0)
        return PLAN_NONE;
    if (l == r) {
        uint32_t lo = el > ql ? el : ql, hi = er < qr ? er : qr;
        if (hi >= k->n)
            hi = k->n - 1;
        acc += k->v[x].lz;
        for (uint32_t i = lo; i <= hi; i++)
            if (k->val[i] + acc > k->B)
                return i;
        return PLAN_NONE;
    }
    uint32_t mid = l + (r - l) / 2, rc = x + 2 * (mid - l + 1);
    acc += k->v[x].lz;
    uint32_t i = kt_first_over_rec(k, x + 1, l, mid, ql, qr, acc);
    if (i != PLAN_NONE)
        return i;
    return kt_first_over_rec(k, rc, mid + 1, r, ql, qr, acc);
}

static uint32_t kt_first_over(const ktree *k, uint32_t ql, uint32_t qr)
{
    return kt_first_over_rec(k, 0, 0, k->nb - 1, ql, qr, 0);
}

/* ----------------------------------------------------------------- heap */

/* The candidates, by key, in a bucket queue: bucket b holds the keys in
 * [2^(b/HP_BUCKETS_PER_2X), 2^((b+1)/HP_BUCKETS_PER_2X)) (about 15% wide,
 * the tolerance of the lazy greedy), each bucket a stack.  Push and pop
 * are O(1); the order is deterministic. */
#define HP_BUCKETS_PER_2X 5
#define HP_BUCKET_MIN (-100 * HP_BUCKETS_PER_2X) /* keys below: bucket 0 */
#define HP_NBUCKETS (300 * HP_BUCKETS_PER_2X)

typedef struct bucket {
    uint32_t *v;
    uint32_t n, cap;
} bucket;

typedef struct bqueue {
    bucket b[HP_NBUCKETS];
    int top;    /* no entry above this bucket */
    size_t n;   /* entries */
} bqueue;

static int bucket_of(double key)
{
    if (!(key > 0))
        return 0;
    if (key > 1e90)
        return HP_NBUCKETS - 1;
    int e = (int)floor(log2(key) * HP_BUCKETS_PER_2X) - HP_BUCKET_MIN;
    return e < 0 ? 0 : e >= HP_NBUCKETS ? HP_NBUCKETS - 1 : e;
}

static int bq_push(bqueue *q, double key, uint32_t g)
{
    int i = bucket_of(key);
    bucket *b = &q->b[i];
    if (b->n == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2 : 64;
        uint32_t *v = realloc(b->v, (size_t)cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = g;
    q->n++;
    if (i > q->top)
        q->top = i;
    return 0;
}

/* Pop from the best non-empty bucket; *ret_bucket its index. */
static bool bq_pop(bqueue *q, uint32_t *ret_value, int *ret_bucket)
{
    while (q->top >= 0 && q->b[q->top].n == 0)
        q->top--;
    if (q->top < 0)
        return false;
    *ret_value = q->b[q->top].v[--q->b[q->top].n];
    *ret_bucket = q->top;
    q->n--;
    return true;
}

static void bq_done(bqueue *q)
{
    for (int i = 0; i < HP_NBUCKETS; i++)
        free(q->b[i].v);
    free(q);
}

/* -------------------------------------------------------------- capacity
 * A fluid model of a copy engine for the selection: each op offers its
 * duration of engine time, minus what the transfers already placed use.
 * A store consumes time forward from the boundary where its data is
 * written, a prefetch backward from its consumer; where it ends gives the
 * start (store) or end (prefetch) of the gap's window.  A Fenwick tree
 * over the remaining time finds where a copy ends in O(log n), and
 * "next/previous op with time left" pointers make consuming amortised
 * O(1) per op. */

#define CAP_EPS 1e-9

typedef struct cap {
    uint32_t n, top;  /* top: highest power of two <= n */
    double *rem;      /* n: time left per op */
    double *fw;       /* n + 1: Fenwick tree of rem */
    uint32_t *nx;     /* n + 1: union-find to the next op with time left */
    uint32_t *pv;     /* n + 1: same backwards, shifted by one (0: none) */
} cap;

static void cap_done(cap *c)
{
    HO_FREE_ALL(c->rem, c->fw, c->nx, c->pv);
    memset(c, 0, sizeof(*c));
}

static int cap_alloc(cap *c, uint32_t n)
{
    memset(c, 0, sizeof(*c));
    c->n = n;
    c->rem = malloc((size_t)n * sizeof(*c->rem));
    c->fw = malloc(((size_t)n + 1) * sizeof(*c->fw));
    c->nx = malloc(((size_t)n + 1) * sizeof(*c->nx));
    c->pv = malloc(((size_t)n + 1) * sizeof(*c->pv));
    if (!c->rem || !c->fw || !c->nx || !c->pv) {
        cap_done(c);
        return -ENOMEM;
    }
    c->top = 1;
    while (c->top * 2 <= n)
        c->top *= 2;
    return 0;
}

/* Rebuild the Fenwick tree and the pointers from c->rem. */
static void cap_build(cap *c)
{
    uint32_t n = c->n;
    c->fw[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (c->rem[i] < CAP_EPS)
            c->rem[i] = 0;
        c->fw[i + 1] = c->rem[i];
    }
    for (uint32_t i = 1; i <= n; i++) {
        uint32_t j = i + (i & -i);
        if (j <= n)
            c->fw[j] += c->fw[i];
    }
    for (uint32_t i = 0; i < n; i++)
        c->nx[i] = c->rem[i] > 0 ? i : i + 1;
    c->nx[n] = n;
    c->pv[0] = 0;
    for (uint32_t i = 0; i < n; i++)
        c->pv[i + 1] = c->rem[i] > 0 ? i + 1 : i;
}

static void fw_add(cap *c, uint32_t i, double d)
{
    for (uint32_t k = i + 1; k <= c->n; k += k & -k)
        c->fw[k] += d;
}

static double fw_prefix(const cap *c, uint32_t i) /* sum of rem[0..i] */
{
    double s = 0;
    for (uint32_t k = i + 1; k > 0; k -= k & -k)
        s += c->fw[k];
    return s;
}

/* Smallest y with prefix(y) >= target (strict: > target); n if none. */
static uint32_t fw_search(const cap *c, double target, bool strict)
{
    uint32_t pos = 0;
    for (uint32_t step = c->top; step; step >>= 1) {
        uint32_t nxt = pos + step;
        if (nxt <= c->n &&
            (strict ? c->fw[nxt] <= target : c->fw[nxt] < target)) {
            pos = nxt;
            target -= c->fw[nxt];
        }
    }
    return pos;
}

/* Root of i in the union-find array uf, compressing the path. */
static uint32_t uf_find(uint32_t *uf, uint32_t i)
{
    uint32_t r = i;
    while (uf[r] != r)
        r = uf[r];
    while (uf[i] != r) {
        uint32_t k = uf[i];
        uf[i] = r;
        i = k;
    }
    return r;
}

static uint32_t find_nx(cap *c, uint32_t i)
{
    return uf_find(c->nx, i);
}

static uint32_t find_pv(cap *c, uint32_t i) /* shifted index */
{
    return uf_find(c->pv, i);
}

/* Op where a copy of length L started at boundary x ends; PLAN_NONE when
 * the step has not that much engine time left after x. */
static uint32_t cap_fwd_end(const cap *c, uint32_t x, double L)
{
    if (x >= c->n)
        return PLAN_NONE;
    double base = x ? fw_prefix(c, x - 1) : 0;
    uint32_t y = fw_search(c, base + L - CAP_EPS, false);
    return y < c->n ? y : PLAN_NONE;
}

/* Op where a copy of length L that must end by the end of op qe starts. */
static uint32_t cap_bwd_start(const cap *c, int64_t qe, double L)
{
    if (qe < 0)
        return PLAN_NONE;
    double target = fw_prefix(c, (uint32_t)qe) - L;
    if (target < -CAP_EPS)
        return PLAN_NONE;
    uint32_t z = fw_search(c, target + CAP_EPS, true);
    return z <= (uint32_t)qe ? z : (uint32_t)qe;
}

static void cap_take(cap *c, uint32_t o, double take)
{
    c->rem[o] -= take;
    fw_add(c, o, -take);
    if (c->rem[o] < CAP_EPS) {
        fw_add(c, o, -c->rem[o]);
        c->rem[o] = 0;
        c->nx[o] = o + 1;
        c->pv[o + 1] = o;
    }
}

/* Consume L forward from boundary x; returns the op where it ended or
 * PLAN_NONE when the step ran out of engine time. */
static uint32_t cap_fwd_take(cap *c, uint32_t x, double L)
{
    uint32_t o = x < c->n ? find_nx(c, x) : c->n, last = PLAN_NONE;
    while (L > CAP_EPS && o < c->n) {
        double take = c->rem[o] < L ? c->rem[o] : L;
        cap_take(c, o, take);
        L -= take;
        last = o;
        o = find_nx(c, o);
    }
    return L > CAP_EPS ? PLAN_NONE : last;
}

/* Consume L backward from the end of op qe. */
static void cap_bwd_take(cap *c, int64_t qe, double L)
{
    if (qe < 0)
        return;
    uint32_t o1 = find_pv(c, (uint32_t)qe + 1); /* op + 1, 0: none */
    while (L > CAP_EPS && o1 > 0) {
        uint32_t o = o1 - 1;
        double take = c->rem[o] < L ? c->rem[o] : L;
        cap_take(c, o, take);
        L -= take;
        o1 = find_pv(c, o1);
    }
}

/* Remove the time of copies [s, e) from the ops they overlap. */
static void cap_busy(cap *c, const double *T, double s, double e)
{
    uint32_t n = c->n;
    uint32_t i = hp_first_at_or_after(T, n, 0, s);
    if (i > 0 && (i == n || T[i] > s))
        i--;
    for (; i < n && T[i] < e; i++) {
        double lo = T[i] > s ? T[i] : s;
        double hi = T[i + 1] < e ? T[i + 1] : e;
        if (hi > lo)
            c->rem[i] -= hi - lo;
    }
}

/* ---------------------------------------------------------------- state */

typedef struct hstate {
    const hp_model *m;
    uint64_t budget;
    uint8_t *sel;    /* n_gaps */
    uint8_t *paid;   /* n_vers: some included gap needs this store */
    uint32_t *vready;/* n_vers: first boundary after its store completes */
    uint32_t *cwa, *cwz; /* n_gaps: windows believed for included gaps */
    int64_t *corr;   /* n: corrections learned from simulations */
    int64_t *lv;     /* n + 1: scratch */
    uint32_t *order; /* selected gaps */
    uint32_t n_order;
    uint32_t fail_op;/* an over-budget boundary when selection failed */
    cap cd, ch;      /* D2H and H2D engine time (ch unused when shared) */
    cap *eh;         /* the H2D engine: &ch, or &cd on a shared engine */
    const double *T; /* boundary times this round assumes */
    bool relaxed;    /* engines oversubscribed: windows as if idle */
    hp_win *iw;      /* n_gaps: ideal windows on T */
    uint8_t *ext;    /* n_gaps: window extended to the consumer */
} hstate;

typedef struct gwin {
    uint32_t a, z;
    double cost;
    bool hidden;     /* its prefetch fits the engine before the consumer */
    uint32_t need;   /* unpaid store: boundary it should complete by */
    double avail;    /* unpaid store: engine time found before `need` */
    bool over;       /* unpaid store: no engine time left in the step */
    bool again;      /* paid store moved earlier for this gap */
} gwin;

/* Where the store of version v, needed complete by boundary `need`, can
 * complete: just in time (consuming the engine backwards from `need`,
 * leaving earlier time to data needed earlier) when the engine has the
 * time between the write and `need`, else as soon as possible after.
 * Returns the first boundary after completion; *avail: engine time it
 * finds before `need`. */
static uint32_t store_ready(const hstate *h, const hp_ver *v, uint32_t need,
                            double *avail)
{
    const cap *c = &h->cd;
    double before = 0;
    if (need > v->rho)
        before = fw_prefix(c, need - 1) -
                 (v->rho ? fw_prefix(c, v->rho - 1) : 0);
    *avail = before;
    if (before >= v->d2h_us - CAP_EPS)
        return need;
    uint32_t y = cap_fwd_end(c, need > v->rho ? need : v->rho,
                             v->d2h_us - before);
    return y == PLAN_NONE ? h->m->n : y + 1;
}

/* The window and cost of gap g under the current engine load and levels. */
static gwin gap_window(hstate *h, ktree *k, uint32_t g)
{
    const hp_model *m = h->m;
    const hp_gap *gp = &m->gaps[g];
    const uint32_t n = m->n;
    hp_win iw = h->iw[g];
    gwin w = {hp_gap_fb(gp), 0, 1e-3, false, PLAN_NONE, 0, false, false};
    uint32_t qm = gp->q < n ? gp->q : n - 1;
    uint32_t zmax = gp->type == HP_DEAD         ? gp->q
                    : gp->type == HP_TRAIL_HOST ? n
                                                : qm;
    if (gp->ver != PLAN_NONE) {
        const hp_ver *v = &m->vers[gp->ver];
        uint32_t ready;
        if (h->paid[gp->ver]) {
            /* already stored, maybe too late for this gap: the store can
             * move earlier (its engine time is reserved again) */
            ready = h->vready[gp->ver];
            uint32_t need = PLAN_NONE;
            if (k && iw.a < zmax && ready > iw.a)
                need = kt_first_over(k, iw.a, zmax - 1);
            if (need != PLAN_NONE && need < ready) {
                double avail;
                uint32_t r2 = store_ready(h, v, need, &avail);
                if (r2 < ready) {
                    ready = r2;
                    w.need = need;
                    w.avail = avail;
                    w.again = true;
                }
            }
        } else {
            uint32_t need = PLAN_NONE;
            if (k && iw.a < zmax)
                need = kt_first_over(k, iw.a, zmax - 1);
            if (need == PLAN_NONE)
                need = iw.a; /* nothing over budget: as soon as possible */
            ready = store_ready(h, v, need, &w.avail);
            w.need = need;
            w.cost += v->d2h_us;
            if (h->relaxed && ready > iw.a) {
                /* The engine is oversubscribed: the step will stall and
                 * stretch; assume the uncontended window, at a price. */
                ready = iw.a;
                w.over = true;
                w.cost += v->d2h_us;
            }
        }
        if (ready > w.a)
            w.a = ready;
    }
    if (gp->type == HP_DEAD || gp->type == HP_TRAIL_HOST) {
        w.z = zmax;
        return w;
    }
    /* The prefetch is assumed where it would go on an idle engine: when
     * the engine is busier, the placement issues it no earlier than
     * memory allows and the consumer waits; that wait is costed here. */
    double c = iw.h2d_us;
    uint32_t z = cap_bwd_start(h->eh, (int64_t)(gp->q < n ? gp->q : n) - 1,
                               c);
    w.z = iw.z;
    if (gp->type == HP_LEAD_HOST)
        w.a = 0;
    if (!iw.exposed && z != PLAN_NONE) {
        w.hidden = true;
        w.cost += c;
    } else {
        w.cost += c + (iw.stall_us > 0 ? iw.stall_us : c);
    }
    return w;
}

/* Reserve the engine time of gap g as its window was just evaluated. */
static void gap_reserve(hstate *h, uint32_t g, const gwin *w)
{
    const hp_model *m = h->m;
    const hp_gap *gp = &m->gaps[g];
    const uint32_t n = m->n;
    if (gp->ver != PLAN_NONE && (!h->paid[gp->ver] || w->again)) {
        const hp_ver *v = &m->vers[gp->ver];
        uint32_t ready = w->need;
        if (w->over) {
            cap_fwd_take(&h->cd, v->rho, v->d2h_us); /* whatever is left */
            ready = w->a;
        } else if (w->avail >= v->d2h_us - CAP_EPS) {
            cap_bwd_take(&h->cd, (int64_t)w->need - 1, v->d2h_us);
        } else {
            cap_bwd_take(&h->cd, (int64_t)w->need - 1, w->avail);
            uint32_t y = cap_fwd_take(&h->cd,
                                      w->need > v->rho ? w->need : v->rho,
                                      v->d2h_us - w->avail);
            ready = y == PLAN_NONE ? n : y + 1;
        }
        if (!h->paid[gp->ver] || ready < h->vready[gp->ver])
            h->vready[gp->ver] = ready;
        h->paid[gp->ver] = 1;
    }
    if (w->hidden)
        cap_bwd_take(h->eh, (int64_t)(gp->q < n ? gp->q : n) - 1,
                     plan_copy_us(&m->t->link, 0, hp_bytes(m, &m->gaps[g])));
}

/* Lazy re-evaluation of an entry popped from bucket `top` with its new
 * key: 1 when it is dropped (key 0) or goes back to the queue (its key
 * fell to a lower bucket), 0 when it is still in the top bucket and may
 * be taken, -ENOMEM. */
static int requeue(bqueue *q, double key, uint32_t g, int top)
{
    if (key <= 0)
        return 1;
    if (bucket_of(key) < top)
        return bq_push(q, key, g) < 0 ? -ENOMEM : 1;
    return 0;
}

/* The area above the budget over ops [a, z) that a gap of b bytes can
 * take off: all of the excess when no level exceeds the budget by more
 * than b, else at most b per op over it.  false when the window is empty
 * or no level in it is over the budget. */
static bool window_area(const ktree *k, uint32_t a, uint32_t z, double b,
                        double *ret_area)
{
    if (a >= z)
        return false;
    kq q;
    kt_range(k, a, z - 1, &q);
    if (q.cnt == 0)
        return false;
    if ((double)(q.mx - k->B) <= b)
        *ret_area = q.sum;
    else
        *ret_area = b * q.cnt < q.sum ? b * q.cnt : q.sum;
    return true;
}

/* An upper bound of gap_key: the ideal window, the store unpaid only if
 * it is. */
static double gap_bound(const hstate *h, const ktree *k, uint32_t g)
{
    const hp_model *m = h->m;
    const hp_gap *gp = &m->gaps[g];
    const hp_win *iw = &h->iw[g];
    const uint32_t n = m->n;
    uint32_t a = iw->a, z = gp->type == HP_DEAD       ? gp->q
                            : gp->type == HP_TRAIL_HOST ? n
                                                        : iw->z;
    if (gp->ver != PLAN_NONE && h->paid[gp->ver] &&
        h->vready[gp->ver] > a && h->vready[gp->ver] <= iw->a)
        a = h->vready[gp->ver];
    double area;
    if (!window_area(k, a, z, (double)hp_bytes(m, gp), &area))
        return 0;
    double cost = 1e-3;
    if (gp->type != HP_DEAD && gp->type != HP_TRAIL_HOST)
        cost += iw->h2d_us + (iw->exposed ? iw->stall_us : 0);
    if (gp->ver != PLAN_NONE && !h->paid[gp->ver])
        cost += m->vers[gp->ver].d2h_us;
    return area / cost;
}

static double gap_key(hstate *h, ktree *k, uint32_t g, gwin *ret_win)
{
    gwin w = gap_window(h, k, g);
    if (ret_win)
        *ret_win = w;
    double area;
    if (!window_area(k, w.a, w.z, (double)hp_bytes(h->m, &h->m->gaps[g]),
                     &area))
        return 0;
    return area / w.cost;
}

/* Levels with the corrections and the windows of every included gap. */
static void current_levels(hstate *h)
{
    const hp_model *m = h->m;
    int64_t *lv = h->lv;
    memset(lv, 0, ((size_t)m->n + 1) * sizeof(*lv));
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        if (!m->gaps[g].forced && !h->sel[g])
            continue;
        if (h->cwa[g] < h->cwz[g]) {
            int64_t b = (int64_t)hp_bytes(m, &m->gaps[g]);
            lv[h->cwa[g]] -= b;
            lv[h->cwz[g]] += b;
        }
    }
    int64_t run = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        run += lv[i];
        lv[i] = m->base[i] + run + h->corr[i];
    }
}

/* Engine time and store readiness before a round: from the last placement
 * when there is one, else the durations minus the forced transfers. */
static void setup_round(hstate *h, const hp_place *last)
{
    const hp_model *m = h->m;
    const uint32_t n = m->n;
    const bool shared = !m->t->link.duplex;
    h->eh = shared ? &h->cd : &h->ch;
    h->T = last ? last->times : m->T;
    h->relaxed = false;
    memset(h->ext, 0, m->n_gaps ? m->n_gaps : 1);
    for (uint32_t c = 0; c < m->n_cand; c++) {
        uint32_t g = m->cand[c];
        const hp_gap *gp = &m->gaps[g];
        if (h->T != m->T) {
            hp_gap_ideal(m, h->T, gp, &h->iw[g]);
            continue;
        }
        /* the model computed these on m->T */
        hp_win *w = &h->iw[g];
        w->a = gp->a;
        w->z = gp->z;
        w->exposed = gp->exposed;
        w->h2d_us = gp->type == HP_DEAD
                        ? 0
                        : plan_copy_us(&m->t->link, 0, hp_bytes(m, gp));
        w->stall_us = gp->exposed ? gp->stall_us : 0;
    }
    for (uint32_t c = 0; c < m->n_forced; c++)
        hp_gap_ideal(m, h->T, &m->gaps[m->forced[c]],
                     &h->iw[m->forced[c]]);
    for (uint32_t i = 0; i < n; i++) {
        h->cd.rem[i] = h->T[i + 1] - h->T[i];
        h->ch.rem[i] = h->T[i + 1] - h->T[i];
    }
    memset(h->paid, 0, m->n_vers ? m->n_vers : 1);
    for (uint32_t v = 0; v < m->n_vers; v++)
        h->vready[v] = PLAN_NONE;
    if (last) {
        for (size_t k = 0; k < last->n_xfer; k++) {
            const double *x = last->xfer + 3 * k;
            cap_busy(x[0] > 0 ? &h->cd : h->eh, h->T, x[1], x[2]);
        }
        cap_build(&h->cd);
        cap_build(&h->ch);
        for (uint32_t v = 0; v < m->n_vers; v++) {
            if (last->vcomp[v] < 0)
                continue;
            h->paid[v] = 1;
            h->vready[v] = hp_first_at_or_after(h->T, n, 0, last->vcomp[v]);
        }
        return;
    }
    cap_build(&h->cd);
    cap_build(&h->ch);
    for (uint32_t k = 0; k < m->n_forced; k++) {
        uint32_t g = m->forced[k];
        gwin w = gap_window(h, NULL, g);
        gap_reserve(h, g, &w);
        h->cwa[g] = w.a;
        h->cwz[g] = w.z > w.a ? w.z : w.a;
    }
}

#define EXT_BIT 0x80000000u /* heap entry: extend a gap's window */

static inline bool is_included(const hstate *h, uint32_t g)
{
    return h->m->gaps[g].forced || h->sel[g];
}

/* Key of delaying the prefetch of included gap g up to its consumer: its
 * window grows to [cwz, consumer), the consumer may stall (the placement
 * issues the prefetch no earlier than memory allows). */
static double ext_key(const hstate *h, const ktree *k, uint32_t g,
                      uint32_t *ra, uint32_t *rz)
{
    const hp_model *m = h->m;
    const hp_gap *gp = &m->gaps[g];
    const uint32_t n = m->n;
    if ((gp->type != HP_LIVE && gp->type != HP_LEAD_HOST) || h->ext[g] ||
        !is_included(h, g))
        return 0;
    uint32_t qm = gp->q < n ? gp->q : n - 1;
    uint32_t a = h->cwz[g] > h->cwa[g] ? h->cwz[g] : h->cwa[g];
    double area;
    if (!window_area(k, a, qm, (double)hp_bytes(m, gp), &area))
        return 0;
    double stall = h->T[qm] + h->iw[g].h2d_us - h->T[gp->q < n ? gp->q : n];
    *ra = a;
    *rz = qm;
    return area / (1e-3 + (stall > 0 ? stall : 0));
}

/* Optimistic keys for every useful candidate: its widest window, its
 * cheapest cost (levels only drop, engines only fill); and the extension
 * of every included gap.  0 or -ENOMEM. */
static int fill_queue(hstate *h, const ktree *k, bqueue *q,
                      const uint32_t *cnt0, const double *sx0)
{
    const hp_model *m = h->m;
    const uint32_t n = m->n;
    /* in reverse: buckets are stacks, so on equal keys earlier gaps go
     * first */
    for (uint32_t c = m->n_cand; c-- > 0;) {
        uint32_t g = m->cand[c];
        const hp_gap *gp = &m->gaps[g];
        if (h->sel[g])
            continue;
        const hp_win iw = h->iw[g];
        uint32_t z = gp->type == HP_DEAD ? gp->q
                                         : (gp->q < n ? gp->q : n - 1);
        if (iw.a >= z)
            continue;
        uint32_t over = cnt0[z] - cnt0[iw.a];
        if (over == 0)
            continue;
        double b = (double)hp_bytes(m, gp), sx = sx0[z] - sx0[iw.a];
        double area = b * over < sx ? b * over : sx;
        double cost = 1e-3 + (gp->type == HP_DEAD ? 0 : iw.h2d_us);
        if (gp->ver != PLAN_NONE && !h->paid[gp->ver])
            cost += m->vers[gp->ver].d2h_us; /* re-pushed when paid */
        if (bq_push(q, area / cost, g) < 0)
            return -ENOMEM;
    }
    for (uint32_t g = m->n_gaps; g-- > 0;) {
        uint32_t ea, ez;
        double key = ext_key(h, k, g, &ea, &ez);
        if (key > 0 && bq_push(q, key, g | EXT_BIT) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Select more gaps until no boundary is over the budget.  0, -ENOMEM, or
 * HO_E_INFEASIBLE when the candidates run out. */
static int select_gaps(hstate *h)
{
    const hp_model *m = h->m;
    const uint32_t n = m->n;
    const int64_t B = (int64_t)h->budget;
    ktree k;
    bqueue *q = NULL;
    uint32_t *cnt0 = NULL;
    double *sx0 = NULL;
    int r;

    current_levels(h);
    r = kt_init(&k, h->lv, n, B);
    if (r < 0)
        return r;
    if (kt_max(&k) <= B)
        goto out;
    r = -ENOMEM;
    q = calloc(1, sizeof(*q));
    cnt0 = malloc(((size_t)n + 1) * sizeof(*cnt0));
    sx0 = malloc(((size_t)n + 1) * sizeof(*sx0));
    if (!q || !cnt0 || !sx0)
        goto out;
    q->top = -1;
    cnt0[0] = 0;
    sx0[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        bool over = h->lv[i] > B;
        cnt0[i + 1] = cnt0[i] + over;
        sx0[i + 1] = sx0[i] + (over ? (double)(h->lv[i] - B) : 0.0);
    }
    r = fill_queue(h, &k, q, cnt0, sx0);
    if (r < 0)
        goto out;

    /* Lazy greedy: an entry popped from the best bucket is re-evaluated
     * (a cheap bound first); it is taken if it stays in that bucket, else
     * it goes back to the bucket of its new key. */
    while (kt_max(&k) > B) {
        uint32_t g;
        int top, st;
        if (!bq_pop(q, &g, &top)) {
            if (!h->relaxed) {
                /* Nothing fits the engines any more: the step will
                 * stall.  Go on with windows as if the engines were idle;
                 * the next round sees the stretched timeline. */
                h->relaxed = true;
                r = fill_queue(h, &k, q, cnt0, sx0);
                if (r < 0)
                    break;
                continue;
            }
            /* locate an over-budget boundary for the message */
            h->fail_op = kt_first_over(&k, 0, n - 1);
            r = HO_E_INFEASIBLE;
            break;
        }
        if (g & EXT_BIT) {
            uint32_t eg = g & ~EXT_BIT, ea, ez;
            double key = ext_key(h, &k, eg, &ea, &ez);
            if ((st = requeue(q, key, g, top)) > 0)
                continue;
            if (st < 0) {
                r = st;
                break;
            }
            kt_subr(&k, ea, ez - 1, -(int64_t)hp_bytes(m, &m->gaps[eg]));
            h->cwz[eg] = ez;
            h->ext[eg] = 1;
            continue;
        }
        if (h->sel[g])
            continue;
        /* a cheap bound first, then the key itself */
        gwin w;
        if ((st = requeue(q, gap_bound(h, &k, g), g, top)) == 0)
            st = requeue(q, gap_key(h, &k, g, &w), g, top);
        if (st > 0)
            continue;
        if (st < 0) {
            r = st;
            break;
        }
        const hp_gap *gp = &m->gaps[g];
        bool newly_paid = gp->ver != PLAN_NONE && !h->paid[gp->ver];
        gap_reserve(h, g, &w);
        h->sel[g] = 1;
        h->cwa[g] = w.a;
        h->cwz[g] = w.z;
        h->order[h->n_order++] = g;
        kt_subr(&k, w.a, w.z - 1, -(int64_t)hp_bytes(m, gp));
        {
            uint32_t ea, ez;
            double ek = ext_key(h, &k, g, &ea, &ez);
            if (ek > 0 && (r = bq_push(q, ek, g | EXT_BIT)) < 0)
                break;
        }
        if (newly_paid) {
            /* the rest of this data's gaps became cheaper */
            const hp_ver *v = &m->vers[gp->ver];
            for (uint32_t o = v->g0; o < v->g1 && r == 0; o++) {
                const hp_gap *og = &m->gaps[o];
                if (o == g || h->sel[o] || og->forced || og->a >= og->z ||
                    og->ver != gp->ver)
                    continue;
                double ok = gap_key(h, &k, o, NULL);
                if (ok > 0)
                    r = bq_push(q, ok, o);
            }
            if (r < 0)
                break;
        }
    }
out:
    kt_done(&k);
    if (q)
        bq_done(q);
    free(cnt0);
    free(sx0);
    return r;
}

static int cmp_prune(const void *x, const void *y, void *ctx);

/* Drop selected gaps that the budget no longer needs, the most expensive
 * first.  0 or -ENOMEM. */
static int prune(hstate *h)
{
    const hp_model *m = h->m;
    const int64_t B = (int64_t)h->budget;
    hp_maxtree tr;
    uint32_t *list;
    uint32_t nl = 0;
    int r;

    current_levels(h);
    r = hp_maxtree_init(&tr, h->lv, m->n);
    if (r < 0)
        return r;
    list = malloc((h->n_order ? h->n_order : 1) * sizeof(*list));
    if (!list) {
        hp_maxtree_done(&tr);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < h->n_order; i++)
        if (h->sel[h->order[i]])
            list[nl++] = h->order[i];
    qsort_r(list, nl, sizeof(*list), cmp_prune, (void *)m);
    for (uint32_t i = 0; i < nl; i++) {
        uint32_t g = list[i];
        uint32_t a = h->cwa[g], z = h->cwz[g];
        int64_t b = (int64_t)hp_bytes(m, &m->gaps[g]);
        if (a < z && hp_maxtree_max(&tr, a, z - 1) + b > B)
            continue;
        h->sel[g] = 0;
        if (a < z)
            hp_maxtree_add(&tr, a, z - 1, b);
    }
    /* keep `order` to the selected gaps */
    uint32_t k = 0;
    for (uint32_t i = 0; i < h->n_order; i++)
        if (h->sel[h->order[i]])
            h->order[k++] = h->order[i];
    h->n_order = k;
    free(list);
    hp_maxtree_done(&tr);
    return 0;
}

static int cmp_prune(const void *x, const void *y, void *ctx)
{
    const hp_model *m = ctx;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    const hp_gap *ga = &m->gaps[a], *gb = &m->gaps[b];
    double ca = ga->cost_us, cb = gb->cost_us;
    if (ga->ver != PLAN_NONE)
        ca += m->vers[ga->ver].d2h_us;
    if (gb->ver != PLAN_NONE)
        cb += m->vers[gb->ver].d2h_us;
    if (ca != cb)
        return ca > cb ? -1 : 1;
    return a < b ? 1 : (a > b ? -1 : 0); /* later selections first */
}

static void hstate_done(hstate *h)
{
    cap_done(&h->cd);
    cap_done(&h->ch);
    HO_FREE_ALL(h->ext, h->iw, h->vready, h->sel, h->paid, h->cwa, h->cwz,
                h->corr, h->lv, h->order);
}

static int hstate_init(hstate *h, const hp_model *m, uint64_t budget)
{
    size_t ng = m->n_gaps ? m->n_gaps : 1;
    memset(h, 0, sizeof(*h));
    h->m = m;
    h->budget = budget;
    h->sel = calloc(ng, 1);
    h->paid = calloc(m->n_vers ? m->n_vers : 1, 1);
    h->cwa = malloc(ng * sizeof(*h->cwa));
    h->cwz = malloc(ng * sizeof(*h->cwz));
    h->corr = calloc(m->n, sizeof(*h->corr));
    h->lv = malloc(((size_t)m->n + 1) * sizeof(*h->lv));
    h->order = malloc(ng * sizeof(*h->order));
    h->vready = malloc((m->n_vers ? m->n_vers : 1) * sizeof(*h->vready));
    h->iw = malloc(ng * sizeof(*h->iw));
    h->ext = calloc(ng, 1);
    if (!h->iw || !h->ext || !h->sel || !h->paid || !h->cwa || !h->cwz ||
        !h->corr || !h->lv ||
        !h->order || !h->vready || cap_alloc(&h->cd, m->n) < 0 ||
        cap_alloc(&h->ch, m->n) < 0) {
        hstate_done(h);
        return -ENOMEM;
    }
    for (uint32_t g = 0; g < m->n_gaps; g++) {
        h->cwa[g] = m->gaps[g].a;
        h->cwz[g] = m->gaps[g].z;
    }
    h->fail_op = PLAN_NONE;
    return 0;
}

/* -------------------------------------------------------------- attempt */

typedef struct attempt {
    plan_schedule *sched; /* owned, when ok */
    uint32_t fail_op;     /* an over-budget boundary, PLAN_NONE if unknown */
} attempt;

/* Try to plan for `budget`.  0 with a->sched, HO_E_INFEASIBLE, or another
 * negative code. */
static int try_budget(const hp_model *m, uint64_t budget, attempt *a)
{
    hstate h;
    hp_place p, last;
    bool have_last = false;
    int r;

    memset(a, 0, sizeof(*a));
    memset(&last, 0, sizeof(last));
    a->fail_op = PLAN_NONE;
    if (budget < m->lb)
        return HO_E_INFEASIBLE;
    r = hstate_init(&h, m, budget);
    if (r < 0)
        return r;
    for (int round = 0; round < HP_MAX_ROUNDS; round++) {
        setup_round(&h, have_last ? &last : NULL);
        r = select_gaps(&h);
        if (r == HO_E_INFEASIBLE) {
            a->fail_op = h.fail_op;
            break;
        }
        if (r == 0)
            r = prune(&h);
        if (r < 0)
            goto out;
        memset(&p, 0, sizeof(p));
        r = hp_place_loop(m, h.sel, budget, "hoplan", &p);
        if (r < 0) {
            hp_place_done(&p);
            goto out;
        }
        if (p.fits) {
            a->sched = p.sched;
            p.sched = NULL;
            hp_place_done(&p);
            goto out;
        }
        bool any = false;
        int64_t maxover = 0;
        for (uint32_t i = 0; i < m->n; i++) {
            if (p.over[i] > 0 && a->fail_op == PLAN_NONE)
                a->fail_op = i;
            h.corr[i] += p.over[i];
            any |= p.over[i] > 0;
            if (p.over[i] > maxover)
                maxover = p.over[i];
        }
        /* Local corrections first; when they do not converge, select for
         * a lower target everywhere (the placement keeps the real one). */
        if (round >= 1)
            h.budget = h.budget > (uint64_t)maxover ? h.budget - maxover : 0;
        for (uint32_t g = 0; g < m->n_gaps; g++) {
            if (m->gaps[g].forced || h.sel[g]) {
                h.cwa[g] = p.wa[g];
                h.cwz[g] = p.wz[g];
            }
        }
        hp_place_done(&last);
        last = p;
        have_last = true;
        if (!any)
            break; /* cannot happen: not fitting means some overshoot */
    }
    /* Fallbacks: nothing optional; every candidate over an over-budget
     * boundary (the step stalls and stretches, giving the stores time).
     * No "take every candidate": the forward planner degrades better. */
    current_levels(&h); /* corrections included */
    for (int fb = 0; fb < 2; fb++) {
        memset(h.sel, 0, m->n_gaps ? m->n_gaps : 1);
        for (uint32_t c = 0; fb > 0 && c < m->n_cand; c++) {
            const hp_gap *gp = &m->gaps[m->cand[c]];
            bool useful = false;
            for (uint32_t i = gp->a; i < gp->z && !useful; i++)
                useful = h.lv[i] > (int64_t)budget;
            h.sel[m->cand[c]] = useful;
        }
        memset(&p, 0, sizeof(p));
        r = hp_place_loop(m, h.sel, budget, "hoplan", &p);
        if (r == 0 && p.fits) {
            a->sched = p.sched;
            p.sched = NULL;
        }
        hp_place_done(&p);
        if (r < 0 || a->sched)
            goto out;
    }
    r = HO_E_INFEASIBLE;
out:
    hp_place_done(&last);
    hstate_done(&h);
    return r;
}

/* ------------------------------------------------------------ portfolio
 * hoplan judges several plans with plan_simulate and returns the best
 * that fits (least exposed time, then fewest bytes moved): the gap
 * selection above (traces up to HP_BIG_OPS ops), the forward planner of
 * hoplan_fs.c in a few variants and under a few choices of homes, the
 * constructive just-in-time plan at the smallest budget it meets (so
 * every budget at or above min_budget succeeds), and the baselines
 * (small traces), which keeps hoplan never worse than any of them. */

#define HP_BIG_OPS 200000u   /* above: only the linear-time passes */
#define HP_SMALL_OPS 50000u  /* up to: the baselines too */
#define HP_LADDER 16u        /* rungs of the budget ladder */

typedef struct pbest {
    const plan_trace *t;
    uint64_t budget;
    plan_schedule *s;   /* owned */
    plan_metrics m;
    int n_judged;
    unsigned n_kept;    /* times a better schedule was kept */
    unsigned repair;    /* 0, or the most re-judgements of a repair */
} pbest;

static bool metrics_better(const plan_metrics *a, const plan_metrics *b)
{
    double tol = 1e-9 * (b->step_time_us > 1 ? b->step_time_us : 1);
    if (a->exposed_us < b->exposed_us - tol)
        return true;
    if (a->exposed_us > b->exposed_us + tol)
        return false;
    return a->h2d_bytes + a->d2h_bytes < b->h2d_bytes + b->d2h_bytes;
}

/* Insert a `wait` on storage index st at action position pos (its point:
 * that of the action there, or `op`/`when` at the end).  0 or -ENOMEM. */
static int insert_wait(plan_schedule *s, const plan_trace *t, size_t pos,
                       uint32_t op, plan_when when, uint32_t st)
{
    if (plan_reserve((void **)&s->actions, &s->cap_actions, s->n_actions,
                     sizeof(*s->actions)) < 0)
        return -ENOMEM;
    memmove(&s->actions[pos + 1], &s->actions[pos],
            (s->n_actions - pos) * sizeof(*s->actions));
    s->actions[pos] = (plan_action){t->storages[st].id, st, op,
                                    (uint8_t)when, PLAN_ACT_WAIT};
    s->n_actions++;
    return 0;
}

/* Repair a schedule that goes over its budget by deliberate stalls: at
 * the first allocation over budget, a `wait` on the storage freed most
 * recently before it (its memory comes back when its copies end), then
 * on the next-most-recent while the same allocation still overshoots;
 * judged again after each.  A placement that was right but for some
 * early allocations is kept instead of restarting from scratch.  0 with
 * *ret_ok when it now fits, 0 when it gave up (limit reached or nothing
 * left to wait on), -ENOMEM. */
static int repair_by_waits(const plan_trace *t, plan_schedule *s,
                           unsigned limit, plan_metrics *mt, bool *ret_ok)
{
    plan_violation v;
    size_t last_pos = SIZE_MAX, back = 0;
    *ret_ok = false;
    for (unsigned it = 0; it < limit; it++) {
        int r = plan_simulate(t, s, mt, &v, NULL);
        if (r == 0) {
            *ret_ok = true;
            return 0;
        }
        if (r == -ENOMEM)
            return r;
        if (strncmp(v.message, "over budget at op", 17) != 0 ||
            v.op == PLAN_NONE)
            return 0; /* invalid otherwise: not ours to repair */
        /* where the allocation happens: its action, or the op's start
         * (after the op's before-actions) for its new writes */
        size_t pos = v.action;
        uint32_t op = v.op;
        plan_when when = PLAN_BEFORE;
        if (pos == SIZE_MAX || pos >= s->n_actions) {
            pos = 0;
            while (pos < s->n_actions &&
                   (s->actions[pos].op < op ||
                    (s->actions[pos].op == op &&
                     s->actions[pos].when == PLAN_BEFORE)))
                pos++;
        } else {
            op = s->actions[pos].op;
            when = (plan_when)s->actions[pos].when;
        }
        back = pos == last_pos ? back + 1 : 0;
        last_pos = pos;
        /* the back-th most recent free_device before pos */
        size_t k = pos, seen = 0;
        uint32_t st = PLAN_NONE;
        while (k-- > 0) {
            const plan_action *a = &s->actions[k];
            if (a->kind != PLAN_ACT_FREE_DEVICE)
                continue;
            if (seen++ == back) {
                st = a->storage;
                break;
            }
        }
        if (st == PLAN_NONE)
            return 0;
        if ((r = insert_wait(s, t, pos, op, when, st)) < 0)
            return r;
        last_pos = pos + 1; /* the allocation moved one down */
    }
    return 0;
}

/* Judge s (owned, taken) for pb->budget; keep it if it fits and is the
 * best so far; one over budget is first repaired by waits when pb allows
 * it.  0 or -ENOMEM. */
static int consider(pbest *pb, plan_schedule *s)
{
    plan_metrics mt;
    plan_violation v;
    if (!s)
        return 0;
    s->budget_bytes = pb->budget;
    snprintf(s->planner, sizeof(s->planner), "hoplan");
    int r = plan_simulate(pb->t, s, &mt, &v, NULL);
    pb->n_judged++;
    if (r == HO_E_BAD_SCHEDULE && pb->repair &&
        strncmp(v.message, "over budget at op", 17) == 0) {
        bool ok = false;
        if ((r = repair_by_waits(pb->t, s, pb->repair, &mt, &ok)) < 0) {
            plan_schedule_free(s);
            return r;
        }
        r = ok ? 0 : HO_E_BAD_SCHEDULE;
    }
    if (r == -ENOMEM) {
        plan_schedule_free(s);
        return r;
    }
    if (r == 0 && (!pb->s || metrics_better(&mt, &pb->m))) {
        plan_schedule_free(pb->s);
        s->has_predicted = true;
        s->predicted = mt;
        pb->s = s;
        pb->m = mt;
        pb->n_kept++;
        return 0;
    }
    plan_schedule_free(s);
    return 0;
}

/* The forward planner under `init`, planned on pt (pb's trace, or it with
 * a slower link) for `budget`, judged by pb.  0 or -ENOMEM. */
static int consider_fs_on(pbest *pb, const plan_trace *pt,
                          const uint8_t *init, uint64_t budget,
                          const hp_fs_opts *o)
{
    plan_schedule *s = NULL;
    int r = hp_fs_plan(pt, init, budget, o, &s, NULL);
    if (r == HO_E_INFEASIBLE)
        r = 0;
    else if (r == 0)
        r = consider(pb, s);
    if (r < 0 || !o->lookahead || o->edf ||
        (pb->s && pb->m.exposed_us <= 0))
        return r;
    /* the same with the backlog-aware lookahead (unless the best plan so
     * far exposes nothing: it could only save bytes) */
    hp_fs_opts oe = *o;
    oe.edf = true;
    oe.record_hint = NULL;
    s = NULL;
    r = hp_fs_plan(pt, init, budget, &oe, &s, NULL);
    if (r == HO_E_INFEASIBLE)
        return 0;
    if (r < 0)
        return r;
    return consider(pb, s);
}

/* The margin of a movable storage s (accessed) homed on the host: the
 * time it is idle across the step boundary (after its last access,
 * before its first) less its copies (the prefetch before its first read,
 * the store after its last write). */
static double home_idle_margin(const plan_trace *t, const double *P,
                               uint32_t s)
{
    const plan_storage *sto = &t->storages[s];
    uint32_t a0 = t->acc_start[s], a1 = t->acc_start[s + 1];
    uint32_t f = t->acc[a0].op, l = t->acc[a1 - 1].op;
    bool written = false;
    for (uint32_t k = a0; k < a1 && !written; k++)
        written = (t->acc[k].flags & PLAN_ACC_WRITE) != 0;
    double cost = 0;
    if (t->acc[a0].flags & PLAN_ACC_READ)
        cost += plan_copy_us(&t->link, 0, sto->bytes);
    if (written)
        cost += plan_copy_us(&t->link, 1, sto->bytes);
    return (P[t->n_ops] - P[l + 1]) + P[f] - cost;
}

/* A copy of s takes no longer than twice the link's latency: what it
 * frees is small against what its copies cost on the FIFO engines, where
 * many such copies queue (a step's small optimizer states and counters,
 * each stored after the last optimizer op, serialise at the step's end). */
static bool latency_bound(const plan_trace *t, uint32_t s)
{
    const plan_link *l = &t->link;
    return l->latency_us > 0 &&
           plan_copy_us(l, 0, t->storages[s].bytes) <= 2 * l->latency_us &&
           plan_copy_us(l, 1, t->storages[s].bytes) <= 2 * l->latency_us;
}

/* Homes by benefit: a movable storage lives on the host when its idle
 * time hides its copies (home_idle_margin >= 0) and they are not
 * latency-bound; one the step never touches, always. */
static void homes_by_benefit(const plan_trace *t, const double *P,
                             uint8_t *init)
{
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *sto = &t->storages[s];
        if (!sto->movable)
            continue;
        if (t->acc_start[s] == t->acc_start[s + 1])
            init[s] = PLAN_INIT_HOST;
        else
            init[s] = home_idle_margin(t, P, s) >= 0 && !latency_bound(t, s)
                          ? PLAN_INIT_HOST
                          : sto->initial;
    }
}

/* The forward planner under the homes `home`, planned on `pt` (the trace,
 * or it with a slower link) for `budget` and judged by pb: at level 2
 * every variant; then (every level) the store-hint passes: a first pass
 * records which writes its evictions had to store, the next ones store
 * those right after the
 * write (and the data on device at t = 0 before op 0), so that copy-outs
 * run from the start instead of when memory is short (level 2: three
 * passes of four variants, level 1: two of two, level 0 -- the largest
 * traces -- two of one).  `hint`: scratch of na entries.
 * 0 or -ENOMEM. */
static int fs_homes_plan(pbest *pb, const plan_trace *pt,
                         const uint8_t *home, uint64_t budget, uint64_t maxws,
                         int level, uint32_t *hint, size_t na)
{
    const hp_fs_opts variants[] = {
        {.lookahead = true},
        {.lookahead = true, .defer_busy = true},
        {.lookahead = true, .eager_store = true},
        {.lookahead = true, .eager_prefetch = true, .reserve = maxws},
        {.jit = true},
        {.lookahead = true, .clean_first = true, .defer_busy = true},
    };
    int n_var = level == 2 ? (int)(sizeof variants / sizeof *variants) : 0;
    int r = 0;
    for (int v = 0; v < n_var && r >= 0; v++)
        r = consider_fs_on(pb, pt, home, budget, &variants[v]);
    memset(hint, 0, (na ? na : 1) * sizeof(*hint));
    if (level == 0) {
        /* the largest traces: the two passes by the forward planner's own
         * step time (it follows the judge's model), the better judged
         * first and the other only if that one does not fit */
        hp_fs_opts o0 = {.lookahead = true, .defer_busy = true, .edf = true};
        plan_schedule *s0 = NULL, *s1 = NULL;
        double e0 = 0, e1 = 0;
        o0.record_hint = hint;
        o0.ret_step_us = &e0;
        r = hp_fs_plan(pt, home, budget, &o0, &s0, NULL);
        if (r == 0) {
            hp_fs_opts o1 = {.lookahead = true, .defer_busy = true,
                             .edf = true};
            o1.store_hint = hint;
            o1.ret_step_us = &e1;
            r = hp_fs_plan(pt, home, budget, &o1, &s1, NULL);
            if (r == HO_E_INFEASIBLE)
                r = 0;
        }
        if (r == HO_E_INFEASIBLE)
            r = 0;
        if (r < 0) {
            plan_schedule_free(s0);
            plan_schedule_free(s1);
            return r;
        }
        if (s1 && e1 < e0) {
            plan_schedule *x = s0;
            s0 = s1;
            s1 = x;
        }
        unsigned kept = pb->n_kept;
        if (s0 && (r = consider(pb, s0)) < 0) {
            plan_schedule_free(s1);
            return r;
        }
        if (pb->n_kept == kept && s1)
            return consider(pb, s1);
        plan_schedule_free(s1);
        return 0;
    }
    int passes = level == 2 ? 3 : 2;
    for (int pass = 0; pass < passes && r >= 0; pass++) {
        hp_fs_opts ho[4] = {
            {.lookahead = true, .defer_busy = true},
            {.lookahead = true, .eager_prefetch = true, .reserve = maxws},
            {.lookahead = true},
            {.lookahead = true, .defer_busy = true, .clean_first = true},
        };
        int nh = pass == 0 ? 1 : level == 2 ? 4 : level == 1 ? 2 : 1;
        for (int v = 0; v < nh && r >= 0; v++) {
            ho[v].store_hint = pass ? hint : NULL;
            ho[v].record_hint = v == 0 ? hint : NULL;
            r = consider_fs_on(pb, pt, home, budget, &ho[v]);
        }
    }
    return r;
}

typedef struct hf_key {
    double slack;
    uint32_t s;
} hf_key;

/* What a judged run exposes of the homes: per storage the end of its
 * latest D2H copy and of its first H2D copy, the end of the last op, and
 * the storages a stalled op waited for. */
typedef struct tail_obs {
    const plan_trace *t;
    uint8_t *home;      /* the run's effective initials; set to device */
    double *d2h_end, *h2d_first;
    double prev_end, last_op_end;
    double compute;     /* of the ops before the current one */
    bool head;          /* trim the first prefetches too */
    int changed;
} tail_obs;

static void tail_transfer(void *ctx, int dir, uint32_t storage,
                          double start_us, double end_us, uint64_t bytes)
{
    tail_obs *o = ctx;
    (void)start_us;
    (void)bytes;
    if (dir == 1 && end_us > o->d2h_end[storage])
        o->d2h_end[storage] = end_us;
    if (dir == 0 && o->h2d_first[storage] < 0)
        o->h2d_first[storage] = end_us;
}

/* Op `op` waited (it starts after the op before it ended) for the first
 * prefetch of host-homed movable data it reads first, and the compute of
 * the ops before it is shorter than that copy: nothing can hide it (the
 * step starts with that data on the host), so it goes to the device
 * home.  (Waits behind a busy link are left to the planner.) */
static void tail_op(void *ctx, uint32_t op, double start_us, double end_us)
{
    tail_obs *o = ctx;
    const plan_trace *t = o->t;
    const plan_op *p = &t->ops[op];
    if (o->head && start_us > o->prev_end * (1 + 1e-12))
        for (uint32_t k = 0; k < p->n_reads; k++) {
            uint32_t s = t->refs[p->first_ref + k];
            if (t->storages[s].movable && o->home[s] == PLAN_INIT_HOST &&
                plan_first_access(t, s) == op &&
                o->h2d_first[s] >= start_us * (1 - 1e-12) &&
                o->compute < plan_copy_us(&t->link, 0, t->storages[s].bytes)) {
                o->home[s] = PLAN_INIT_DEVICE;
                o->changed = 1;
            }
        }
    o->prev_end = end_us;
    o->compute += p->duration_us;
    if (op + 1 == t->n_ops)
        o->last_op_end = end_us;
}

/* The homes of schedule s (judged on t) with the movable data homed on
 * the host that it exposes moved to the device (in *out): the data whose
 * store still runs when the last op has ended -- the optimizer sweep's
 * state, written last, queues on the D2H engine past the compute -- and
 * with `head`, the data whose first prefetch a stalled op waited for
 * (read early in the step, with too little compute before it to hide the
 * copy).  1 when it changed anything, 0 when not, -ENOMEM. */
static int homes_trim_exposed(const plan_trace *t, const plan_schedule *s,
                              bool head, uint8_t *out)
{
    const size_t ns = t->n_storages ? t->n_storages : 1;
    tail_obs o = {t, out, calloc(ns, sizeof(double)),
                  malloc(ns * sizeof(double)), 0, 0, 0, head, 0};
    plan_sim_observer obs = {&o, NULL, tail_transfer, tail_op};
    plan_metrics m;
    plan_violation v;
    int r = -ENOMEM;
    if (!o.d2h_end || !o.h2d_first)
        goto out;
    for (size_t q = 0; q < ns; q++)
        o.h2d_first[q] = -1;
    if ((r = plan_schedule_initials(t, s, out)) < 0)
        goto out;
    if ((r = plan_simulate(t, s, &m, &v, &obs)) == -ENOMEM)
        goto out;
    for (uint32_t q = 0; q < t->n_storages; q++)
        if (t->storages[q].movable && out[q] == PLAN_INIT_HOST &&
            o.d2h_end[q] > o.last_op_end) {
            out[q] = PLAN_INIT_DEVICE;
            o.changed = 1;
        }
    r = o.changed;
out:
    HO_FREE_ALL(o.d2h_end, o.h2d_first);
    return r;
}

static int hf_cmp(const void *a, const void *b)
{
    const hf_key *x = a, *y = b;
    if (x->slack != y->slack)
        return x->slack > y->slack ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

/* Homes that fit: the trace's initials, with movable data that starts on
 * the device moved to the host -- the largest idle slack across the step
 * boundary first (data the step never touches before all), the same
 * benefit rule as homes_by_benefit -- until what is on device at t = 0
 * leaves `target` bytes or less.  0 or -ENOMEM. */
static int homes_fit(const plan_trace *t, const double *P, uint64_t target,
                     uint8_t *init)
{
    uint64_t p0 = 0;
    uint32_t nk = 0;
    hf_key *k = malloc((t->n_storages ? t->n_storages : 1) * sizeof(*k));
    if (!k)
        return -ENOMEM;
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *sto = &t->storages[s];
        init[s] = sto->initial;
        uint32_t a0 = t->acc_start[s], a1 = t->acc_start[s + 1];
        if (sto->initial != PLAN_INIT_DEVICE || (a0 == a1 && !sto->retained))
            continue;
        p0 += sto->bytes;
        if (!sto->movable)
            continue;
        /* per byte: which bytes leave first; the latency-bound ones
         * (latency_bound) last */
        double slack = a0 == a1 ? 1e300
                       : latency_bound(t, s)
                           ? -1e300
                           : home_idle_margin(t, P, s) /
                                 (double)(sto->bytes ? sto->bytes : 1);
        k[nk++] = (hf_key){slack, s};
    }
    qsort(k, nk, sizeof(*k), hf_cmp);
    for (uint32_t q = 0; q < nk && p0 > target; q++) {
        init[k[q].s] = PLAN_INIT_HOST;
        p0 -= t->storages[k[q].s].bytes;
    }
    free(k);
    return 0;
}

/* The smallest budget the constructive plan meets (all movable data on
 * the host): the floor itself when it is met there (it always should
 * be), else a binary search up to the `none` peak (a plan met at a
 * budget is met at every larger one, so the search is sound).  The
 * schedule met there in *ret_schedule.  0, HO_E_INFEASIBLE, -ENOMEM. */
static int min_budget_search(const plan_trace *t, const uint8_t *init_host,
                             uint64_t floor, uint64_t none_peak,
                             uint64_t *ret_min, plan_schedule **ret_schedule)
{
    static const hp_fs_opts jit = {.jit = true};
    pbest pb = {.t = t};
    uint64_t lo = floor, hi = none_peak > floor ? none_peak : floor;
    int r;
    /* probe the floor, then (if needed) search (lo - 1, hi] */
    for (int probe = 0; probe < 70; probe++) {
        uint64_t mid = probe == 0 ? lo : lo + (hi - lo) / 2;
        pb.budget = mid;
        if ((r = consider_fs_on(&pb, t, init_host, mid, &jit)) < 0)
            goto fail;
        if (pb.s) {
            hi = mid;
            plan_schedule_free(*ret_schedule);
            *ret_schedule = pb.s;
            pb.s = NULL;
            if (probe == 0)
                break;
        } else {
            lo = mid + 1;
        }
        if (lo >= hi)
            break;
    }
    if (!*ret_schedule)
        return HO_E_INFEASIBLE;
    *ret_min = hi;
    return 0;
fail:
    plan_schedule_free(pb.s);
    return r;
}

/* Whether the homes h are among the n in homes already. */
static bool homes_seen(const uint8_t *const *homes, int n, const uint8_t *h,
                       size_t ns)
{
    for (int e = 0; e < n; e++)
        if (memcmp(homes[e], h, ns) == 0)
            return true;
    return false;
}

static void infeasible_message(const plan_trace *t, uint64_t budget,
                               uint64_t floor, uint32_t floor_op, uint64_t p0,
                               uint64_t min_budget, plan_result *res)
{
    char where[160];
    if (floor_op == PLAN_NONE || budget < p0)
        snprintf(where, sizeof where, "at step start (%llu bytes of "
                 "initial: device data that is not movable)",
                 (unsigned long long)p0);
    else if (floor_op >= t->n_ops)
        snprintf(where, sizeof where, "at step end (retained data that is "
                 "not movable)");
    else
        snprintf(where, sizeof where, "at op %u '%s' (its reads, writes and "
                 "the pinned data live across it)", floor_op,
                 plan_op_name(t, floor_op));
    ho_errf(res->message, sizeof(res->message), HO_E_INFEASIBLE,
            "budget %llu is infeasible: lower bound (any schedule) %llu "
            "bytes %s; smallest budget hoplan meets %llu",
            (unsigned long long)budget, (unsigned long long)floor, where,
            (unsigned long long)min_budget);
}

int plan_hoplan(const plan_trace *t, uint64_t budget,
                plan_schedule **ret_schedule, plan_result *result)
{
    plan_result scratch;
    plan_schedule *floor_plan = NULL;
    uint8_t *init0 = NULL, *init_host = NULL, *init_rule = NULL;
    uint8_t *init_fit = NULL;
    double *P = NULL;
    pbest pb = {.t = t, .budget = budget};
    uint64_t floor = 0, none_peak = 0, min_budget = 0, p0 = 0, maxws = 0;
    uint32_t floor_op = PLAN_NONE;
    const uint32_t ns = t->n_storages ? t->n_storages : 1, n = t->n_ops;
    bool any_movable = false;
    int r;

    if (!result)
        result = &scratch;
    if ((r = hp_device_floor(t, &floor, &floor_op, &p0, &maxws)) < 0 ||
        (r = plan_no_offload_peak(t, &none_peak)) < 0)
        goto out;
    result->no_offload_peak = none_peak;
    result->device_floor = floor;
    result->working_set_bound = maxws;
    r = -ENOMEM;
    init0 = malloc(ns);
    init_host = malloc(ns);
    init_rule = malloc(ns);
    init_fit = malloc(6 * (size_t)ns);
    P = malloc(((size_t)n + 1) * sizeof(*P));
    if (!init0 || !init_host || !init_rule || !init_fit || !P)
        goto out;
    P[0] = 0;
    for (uint32_t i = 0; i < n; i++)
        P[i + 1] = P[i] + t->ops[i].duration_us;
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *sto = &t->storages[s];
        init0[s] = sto->initial;
        init_host[s] = sto->movable ? PLAN_INIT_HOST : sto->initial;
        any_movable |= sto->movable;
    }
    memcpy(init_rule, init0, ns);
    homes_by_benefit(t, P, init_rule);

    /* feasibility: the constructive plan, and the smallest budget.  Above
     * HP_BIG_OPS the constructive plan is taken to meet the floor by the
     * argument of docs/planner.md §3.5 (the smaller traces confirm it with
     * the judge on every call, and test_hoplan_props asserts it), and it
     * is built and judged only when nothing else fits; should it fail
     * then, the judged search below corrects min_budget. */
    bool defer_floor = false;
    if (n > HP_BIG_OPS) {
        min_budget = floor;
        defer_floor = true;
        r = 0;
    } else {
        r = min_budget_search(t, init_host, floor, none_peak, &min_budget,
                              &floor_plan);
    }
    if (r == HO_E_INFEASIBLE) {
        min_budget = none_peak; /* `none` always meets its own peak */
        r = 0;
    }
    if (r < 0)
        goto out;
    result->min_budget = min_budget;
    if (budget < floor) {
        r = HO_E_INFEASIBLE; /* no schedule at all: a sound bound */
        infeasible_message(t, budget, floor, floor_op, p0, min_budget, result);
        goto out;
    }
    if (budget >= none_peak) {
        plan_schedule *none = NULL; /* consider() takes it */
        if ((r = plan_none(t, UINT64_MAX, &none)) < 0 ||
            (r = consider(&pb, none)) < 0)
            goto out;
    }
    if (!defer_floor) {
        if (floor_plan && (r = consider(&pb, floor_plan)) < 0) {
            floor_plan = NULL;
            goto out;
        }
        floor_plan = NULL;
    }

    /* the forward planner, in its variants, under each choice of homes */
    /* homes: the trace's, all on the host, by benefit, and the fitted
     * ones (room for one and two of the largest working sets, half the
     * budget); duplicates are skipped */
    const uint8_t *homes[9] = {init0, init_host, init_rule, NULL, NULL, NULL,
                              NULL, NULL, NULL};
    int n_homes = !any_movable ? 1 : n > HP_BIG_OPS ? 2 : 3;
    if (any_movable) {
        /* what the step adds on top of its start, without offload */
        uint64_t start0 = 0;
        for (uint32_t q = 0; q < t->n_storages; q++) {
            const plan_storage *sto = &t->storages[q];
            if (sto->initial == PLAN_INIT_DEVICE &&
                (sto->retained || t->acc_start[q] != t->acc_start[q + 1]))
                start0 += sto->bytes;
        }
        uint64_t grow = none_peak > start0 ? none_peak - start0 : 0;
        if (grow < maxws)
            grow = maxws;
        const uint64_t targets[4] = {
            budget > grow ? budget - grow : 0,
            budget > maxws ? budget - maxws : 0,
            budget > 2 * maxws ? budget - 2 * maxws : 0, budget / 2};
        for (int q = 0; q < (n > HP_BIG_OPS ? 1 : 4); q++) {
            uint8_t *h = init_fit + (size_t)q * ns;
            if ((r = homes_fit(t, P, targets[q], h)) < 0)
                goto out;
            if (!homes_seen(homes, n_homes, h, ns))
                homes[n_homes++] = h;
        }
    }
    /* each choice of homes at the budget; then, for monotonicity, the
     * best of them at the rungs of a fixed ladder (min_budget to the
     * `none` peak, in HP_LADDER steps) below the budget -- a plan met at
     * a smaller budget is met at this one -- and for a slower link (1/2,
     * 1/4, 1/8), judged on this one */
    {
        size_t na = (size_t)t->acc_start[t->n_storages] + t->n_storages;
        uint32_t *hint = calloc(na ? na : 1, sizeof(*hint));
        int level = n > HP_BIG_OPS ? 0 : 2, best_h = 0;
        if (!hint) {
            r = -ENOMEM;
            goto out;
        }
        for (int h = 0; h < n_homes && r >= 0; h++) {
            unsigned kept = pb.n_kept;
            r = fs_homes_plan(&pb, t, homes[h], budget, maxws, level, hint,
                              na);
            if (pb.n_kept != kept)
                best_h = h;
        }
        /* the homes that won, without the host homes their plan exposes
         * (homes_trim_exposed): at its end, then at its start too */
        for (int q = 0; q < 2 && any_movable && n <= HP_BIG_OPS && r >= 0 &&
                        pb.s && pb.m.exposed_us > 0;
             q++) {
            uint8_t *trim = init_fit + (size_t)(4 + q) * ns;
            if ((r = homes_trim_exposed(t, pb.s, q == 1, trim)) <= 0 ||
                homes_seen(homes, n_homes, trim, ns))
                continue;
            unsigned kept = pb.n_kept;
            homes[n_homes] = trim;
            r = fs_homes_plan(&pb, t, trim, budget, maxws, level, hint, na);
            if (pb.n_kept != kept)
                best_h = n_homes;
            n_homes++;
        }
        if (n <= HP_BIG_OPS && r >= 0) {
            uint64_t lo = min_budget, hi = none_peak > lo ? none_peak : lo;
            for (uint32_t k = 0; k <= HP_LADDER && r >= 0; k++) {
                uint64_t rung =
                    lo + (uint64_t)((double)(hi - lo) * k / HP_LADDER);
                if (rung >= budget)
                    break;
                r = fs_homes_plan(&pb, t, homes[best_h], rung, maxws, 1, hint,
                              na);
            }
            plan_trace slow = *t;
            for (int k = 1; k <= 3 && r >= 0; k++) {
                slow.link.h2d_gbps = t->link.h2d_gbps / (1 << k);
                slow.link.d2h_gbps = t->link.d2h_gbps / (1 << k);
                r = fs_homes_plan(&pb, &slow, homes[best_h], budget, maxws, 1,
                              hint, na);
            }
        }
        free(hint);
        if (r < 0)
            goto out;
    }

    /* the gap selection, and the baselines; their schedules that go over
     * the budget are repaired by waits (a bounded number of judgements,
     * fewer on larger traces) */
    pb.repair = n <= 5000u ? 256u : n <= HP_SMALL_OPS ? 24u : 0u;
    if (n <= HP_BIG_OPS) {
        hp_model m;
        attempt a;
        if ((r = hp_model_init(&m, t)) < 0)
            goto out;
        r = try_budget(&m, budget, &a);
        hp_model_done(&m);
        if (r == 0 && (r = consider(&pb, a.sched)) < 0)
            goto out;
        if (r < 0 && r != HO_E_INFEASIBLE)
            goto out;
    }
    if (n <= HP_SMALL_OPS) {
        static const plan_options bo = {NULL, 100, 100, 50};
        plan_schedule *s = NULL;
        if ((r = plan_seed_greedy(t, budget, &s)) < 0 ||
            (r = consider(&pb, s)) < 0)
            goto out;
        s = NULL;
        if ((r = plan_ms_distance(t, budget, &bo, &s)) < 0 ||
            (r = consider(&pb, s)) < 0)
            goto out;
        s = NULL;
        if ((r = plan_reactive_lru(t, budget, &s)) < 0 ||
            (r = consider(&pb, s)) < 0)
            goto out;
    }
    pb.repair = 0;
    if (!pb.s && defer_floor) {
        /* the deferred constructive plan, built and judged now */
        static const hp_fs_opts jit = {.jit = true};
        r = hp_fs_plan(t, init_host, floor, &jit, &floor_plan, NULL);
        if (r == 0) {
            r = consider(&pb, floor_plan);
            floor_plan = NULL;
        } else if (r == HO_E_INFEASIBLE) {
            r = 0;
        }
        if (r == 0 && !pb.s) {
            /* the argument did not hold here: the judge's search says */
            r = min_budget_search(t, init_host, floor, none_peak,
                                  &min_budget, &floor_plan);
            if (r == HO_E_INFEASIBLE) {
                min_budget = none_peak;
                r = 0;
            }
            result->min_budget = min_budget;
            if (r == 0 && floor_plan && min_budget <= budget) {
                r = consider(&pb, floor_plan);
                floor_plan = NULL;
            }
        }
        if (r < 0)
            goto out;
    }
    if (!pb.s) {
        /* cannot happen at or above min_budget: the floor plan fits */
        r = HO_E_INFEASIBLE;
        infeasible_message(t, budget, floor, floor_op, p0, min_budget, result);
        goto out;
    }
    if (budget < result->min_budget)
        result->min_budget = budget; /* met here after all */
    *ret_schedule = pb.s;
    pb.s = NULL;
    r = 0;
out:
    plan_schedule_free(pb.s);
    plan_schedule_free(floor_plan);
    HO_FREE_ALL(init0, init_host, init_rule, init_fit, P);
    return r;
}
