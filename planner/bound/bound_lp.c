/*
 * planner/bound/bound_lp.c - the LP relaxation (docs/bound.md §3), built
 * from the parts of bound_model.c and solved with GLPK's dual simplex.
 *
 * Checkpoints c_1 < ... < c_K cut the step into segments 0..K: segment 0
 * is [0, S_c1), segment q is [S_cq, S_c(q+1)), segment K ends at step end.
 * Segment q lasts C_q (its compute) + W_q (its stalls), and
 * sum W_q = exposed_us: the objective.
 *
 * Variables (bytes in MiB, time in ms, every one boxed):
 *   W_q            stall in segment q, [0, U]
 *   D_{P,q}        store volume of pool P (parts whose store may start in
 *                  segment R_P) in segment q >= R_P
 *   H_{P,q}        prefetch volume of pool P (parts whose prefetch must end
 *                  in segment B_P) in segment q <= B_P
 *   X_{k,j}        bytes of key k (a store pool, a prefetch pool, and for
 *                  movable data a home group and home) off the device at
 *                  checkpoint j, [0, cap]
 *   Y_g            bytes of home group g homed on host, [0, bytes_g]
 * Rows:
 *   engine q       copy time in segment q <= C_q + W_q (per engine)
 *   edge rows      a pool's copy time inside its first (last) segment <=
 *                  the compute there after its earliest release (before
 *                  its latest deadline) + W
 *   cover          sum_{q<j} D_{P,q} >= sum_k X_{k,j} over keys of P
 *                  (stored before S_cj); sum_{q>=j} H_{P,q} >= sum X
 *                  (prefetched after S_cj)
 *   memory j       sum_k X_{k,j} >= live(c_j) - budget
 *   forced         sum_q D_{P,q} (H_{P,q}) >= the pool's forced bytes
 *                  (+ the Y_g of the home groups forcing copies into P)
 *   late j         data off at S_cj is prefetched from E_cj on: the cells
 *                  at j whose deadline is in segment j take <= the compute
 *                  after op c_j (to the deadline) + W_j
 *   home (g, j)    host-version cells of g <= Y_g, device-version cells
 *                  <= bytes_g - Y_g, both <= g's live bytes there.
 * The bound is the Lagrangian value of the solver's row duals over the box
 * (computed here in long double), valid for any duals.
 */
#include "planner/bound/bound_impl.h"

#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hyperoffload/errors.h"
#include "proto/mem.h"

#define MIB 1048576.0

typedef struct pool {
    int32_t seg;        /* R (D) or B (H) */
    int32_t lo, hi;     /* segments with a variable, lo > hi: unused */
    uint64_t vol;       /* bytes of all parts */
    uint64_t mand;      /* forced bytes */
    uint64_t maxb;      /* largest part */
    bool full;          /* some part may use the whole edge segment */
    bool mvar;          /* forced bytes also from home groups (Y) */
    int frow;           /* the forced-volume row, 0: none */
    double cpart;       /* else: the most edge-segment time a copy has */
    int col0;           /* first column (1-based) */
    int erow;           /* H pool: its late-edge row at segment seg, 0:
                           none yet */
    int *cover;         /* cover row per segment index - lo, 0: none */
} pool;

typedef struct cell {
    uint32_t key;
    int32_t j;
    double cap; /* MiB */
    int col;
} cell;

typedef struct ev {
    uint32_t key;
    int32_t j;
    int64_t bytes;
} ev;

typedef struct keyent {
    int32_t dp, hp; /* pool indices, -1: none */
    int32_t tag;    /* 0: not movable; else 1 + 2 g + (home device) for
                       the parts of home group g */
} keyent;

/* A home group: movable storages whose host-homed versions force their
 * prefetch into the same pool and their store into the same pool.  Y_g
 * (MiB, [0, bytes]) is how much of them is homed on host. */
typedef struct hgroup {
    int32_t fh, fd; /* forced H / D pool index, -1: none */
    uint64_t bytes;
    int ycol;
    /* coupling rows at the checkpoint being built */
    int32_t stamp;
    int hrow, drow, jrow;
    bool has_h, has_d;
    double chost; /* MiB of its host-version cells there */
} hgroup;

typedef struct lp {
    const bd_model *m;
    uint32_t K;
    uint64_t budget;
    const uint32_t *ck;
    uint32_t *segof;
    pool *dp, *hp; /* 2 * (K + 1) each, index seg * 2 + mand */
    keyent *keys;
    uint32_t n_keys, cap_keys;
    hgroup *groups;
    uint32_t n_groups;
    int32_t *gmap; /* (K + 2)^2: (forced H seg + 1, forced D seg + 1) ->
                      group + 1 */
    uint32_t *kh; /* key hash: slots of key index + 1 */
    uint32_t kh_cap;
    ev *evs;
    size_t n_evs, cap_evs;
    cell *cells;
    size_t n_cells;
    /* matrix */
    int *ia, *ja;
    double *ar;
    size_t nnz, cap_nnz;
    int n_rows, n_cols;
    /* rows: type (GLP_LO / GLP_UP) and bound; columns: bounds, cost */
    int *rtype;
    double *rb;
    size_t cap_rows;
    double *clo, *chi, *cobj;
    size_t cap_cols;
} lp;

/* One argument pair of grow_all: the array (its address) and its element
 * size. */
#define LP_ARR(p) (void **)&(p), sizeof(*(p))

/* Room for `need` elements in each of n parallel arrays (n LP_ARR pairs)
 * that share the capacity *cap: each doubles from 256 through ho_grow to
 * the same new capacity.  0 or -ENOMEM (*cap unchanged). */
static int grow_all(size_t *cap, size_t need, int n, ...)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap;
    int rc = 0;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n && rc == 0; i++) {
        void **arr = va_arg(ap, void **);
        size_t elem = va_arg(ap, size_t);
        c = *cap;
        rc = ho_grow(arr, &c, need, elem, 256, SIZE_MAX) < 0 ? -ENOMEM : 0;
    }
    va_end(ap);
    if (rc == 0)
        *cap = c;
    return rc;
}

static int add_row(lp *x, int type, double b)
{
    if (grow_all(&x->cap_rows, (size_t)x->n_rows + 2, 2, LP_ARR(x->rtype),
                 LP_ARR(x->rb)) < 0)
        return -ENOMEM;
    x->n_rows++;
    x->rtype[x->n_rows] = type;
    x->rb[x->n_rows] = b;
    return x->n_rows;
}

static int add_col(lp *x, double lo, double hi, double obj)
{
    if (grow_all(&x->cap_cols, (size_t)x->n_cols + 2, 3, LP_ARR(x->clo),
                 LP_ARR(x->chi), LP_ARR(x->cobj)) < 0)
        return -ENOMEM;
    x->n_cols++;
    x->clo[x->n_cols] = lo;
    x->chi[x->n_cols] = hi > lo ? hi : lo;
    x->cobj[x->n_cols] = obj;
    return x->n_cols;
}

static int add_nz(lp *x, int row, int col, double v)
{
    if (grow_all(&x->cap_nnz, x->nnz + 2, 3, LP_ARR(x->ia), LP_ARR(x->ja),
                 LP_ARR(x->ar)) < 0)
        return -ENOMEM;
    x->nnz++;
    x->ia[x->nnz] = row;
    x->ja[x->nnz] = col;
    x->ar[x->nnz] = v;
    return 0;
}

static uint32_t key_hash(int32_t dp, int32_t hp, int32_t tag, uint32_t cap)
{
    uint64_t v = ((uint64_t)(uint32_t)dp << 32) | (uint32_t)hp;
    v ^= (uint64_t)(uint32_t)tag * 0xc2b2ae3d27d4eb4full;
    return (uint32_t)((v * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static uint32_t key_get(lp *x, int32_t dp, int32_t hp, int32_t tag, int *err)
{
    if (x->kh_cap == 0 || (x->n_keys + 1) * 2 > x->kh_cap) {
        uint32_t cap = x->kh_cap ? x->kh_cap * 2 : 1024;
        uint32_t *h = calloc(cap, sizeof(*h));
        if (!h) {
            *err = -ENOMEM;
            return 0;
        }
        for (uint32_t k = 0; k < x->n_keys; k++) {
            uint32_t s = key_hash(x->keys[k].dp, x->keys[k].hp,
                                  x->keys[k].tag, cap);
            while (h[s])
                s = (s + 1) & (cap - 1);
            h[s] = k + 1;
        }
        free(x->kh);
        x->kh = h;
        x->kh_cap = cap;
    }
    uint32_t s = key_hash(dp, hp, tag, x->kh_cap);
    while (x->kh[s]) {
        const keyent *e = &x->keys[x->kh[s] - 1];
        if (e->dp == dp && e->hp == hp && e->tag == tag)
            return x->kh[s] - 1;
        s = (s + 1) & (x->kh_cap - 1);
    }
    size_t capk = x->cap_keys;
    if (grow_all(&capk, (size_t)x->n_keys + 1, 1, LP_ARR(x->keys)) < 0) {
        *err = -ENOMEM;
        return 0;
    }
    x->cap_keys = (uint32_t)capk;
    x->keys[x->n_keys] = (keyent){dp, hp, tag};
    x->kh[s] = x->n_keys + 1;
    return x->n_keys++;
}

static int push_ev(lp *x, uint32_t key, int32_t j, int64_t bytes)
{
    if (grow_all(&x->cap_evs, x->n_evs + 1, 1, LP_ARR(x->evs)) < 0)
        return -ENOMEM;
    x->evs[x->n_evs++] = (ev){key, j, bytes};
    return 0;
}

/* (a1, a2) against (b1, b2), lexicographic: -1, 0 or 1. */
static int cmp2(int64_t a1, int64_t a2, int64_t b1, int64_t b2)
{
    if (a1 != b1)
        return a1 < b1 ? -1 : 1;
    return (a2 > b2) - (a2 < b2);
}

/* Events by key, then segment. */
static int ev_cmp(const void *a, const void *b)
{
    const ev *p = a, *q = b;
    return cmp2(p->key, p->j, q->key, q->j);
}

/* Cells by segment, then key. */
static int cell_cmp(const void *a, const void *b)
{
    const cell *p = a, *q = b;
    return cmp2(p->j, p->key, q->j, q->key);
}

/* One span of the sweep over the sorted events: key `key` from segment j
 * up to (not including) next, with `sum` bytes live on it. */
typedef struct ev_span {
    uint32_t key;
    int32_t j, next;
    int64_t sum;
} ev_span;

/* The span that starts at event *e (advanced past it); sp->sum carries
 * the running total across the spans of one key and restarts at a new
 * key.  false after the last event. */
static bool ev_sweep(const lp *x, size_t *e, ev_span *sp)
{
    size_t i = *e;
    if (i >= x->n_evs)
        return false;
    uint32_t key = x->evs[i].key;
    int32_t j = x->evs[i].j;
    if (i == 0 || x->evs[i - 1].key != key)
        sp->sum = 0;
    while (i < x->n_evs && x->evs[i].key == key && x->evs[i].j == j)
        sp->sum += x->evs[i++].bytes;
    sp->key = key;
    sp->j = j;
    sp->next = i < x->n_evs && x->evs[i].key == key ? x->evs[i].j : j;
    *e = i;
    return true;
}

static void lp_reset(lp *x)
{
    free(x->segof);
    if (x->dp)
        for (uint32_t i = 0; i < 2 * (x->K + 1); i++)
            free(x->dp[i].cover);
    if (x->hp)
        for (uint32_t i = 0; i < 2 * (x->K + 1); i++)
            free(x->hp[i].cover);
    HO_FREE_ALL(x->dp, x->hp, x->keys, x->kh, x->evs, x->cells, x->ia, x->ja,
                x->ar, x->rtype, x->rb, x->clo, x->chi, x->cobj, x->groups,
                x->gmap);
    const bd_model *m = x->m;
    memset(x, 0, sizeof(*x));
    x->m = m;
}

static inline uint32_t seg_first(const lp *x, uint32_t q)
{
    return q == 0 ? 0 : x->ck[q - 1];
}
static inline uint32_t seg_end(const lp *x, uint32_t q)
{
    return q < x->K ? x->ck[q] : x->m->n;
}

/* Part p joins pool P: its bytes, the largest part, how much of the
 * edge segment a copy may use (all of it when full, else c), and its
 * forced bytes when `forced`. */
static void pool_add(pool *P, const bd_part *p, bool full, double c,
                     bool forced)
{
    P->vol += p->bytes;
    if (p->bytes > P->maxb)
        P->maxb = p->bytes;
    if (full)
        P->full = true;
    else if (c > P->cpart)
        P->cpart = c;
    if (forced)
        P->mand += p->mand_bytes;
}

/* The prefetch (deadline) segment of a part with deadline dl: *full when
 * a copy may use all of it, else *c is the compute there before dl. */
static uint32_t h_seg(const lp *x, int32_t dl, bool *full, double *c)
{
    const uint32_t n = x->m->n;
    *full = false;
    *c = 0;
    if ((uint32_t)dl >= n) {
        *full = true;
        return x->K;
    }
    uint32_t b = (uint32_t)dl, sb = x->segof[b];
    if (sb >= 1 && x->ck[sb - 1] == b) {
        *full = true;
        return sb - 1;
    }
    *c = x->m->pre[b] - x->m->pre[seg_first(x, sb)];
    return sb;
}

/* Part p into its pools, and the events of its coverage under key
 * (its pools, tag).  forced: its forced bytes are constant (not movable);
 * a movable host-homed part's forced bytes are its group's Y instead. */
static int layout_part(lp *x, const bd_part *p, int32_t tag, bool forced)
{
    const double *pre = x->m->pre;
    const uint32_t K = x->K;
    int err = 0;
    int32_t jlo = 1, jhi = 0;
    if (p->from <= p->to) {
        jlo = p->from == 0 ? 1 : (int32_t)x->segof[p->from - 1] + 1;
        jhi = (int32_t)x->segof[p->to];
    }
    int32_t di = -1, hi = -1;
    if (p->rel != BD_CLEAN) {
        uint32_t R = p->rel == BD_T0 ? 0 : x->segof[p->rel];
        bool mand = (p->mand & BD_MAND_D) != 0;
        pool *P = &x->dp[R * 2 + mand];
        di = (int32_t)(R * 2 + mand);
        bool full = p->rel == BD_T0;
        pool_add(P, p, full, full ? 0 : pre[seg_end(x, R)] - pre[p->rel + 1],
                 forced && !(p->mand & BD_MAND_H));
        if (mand) {
            P->lo = (int32_t)R;
            P->hi = (int32_t)K;
        }
    }
    if (p->dl != BD_NOH2D) {
        bool full;
        double c;
        uint32_t B = h_seg(x, p->dl, &full, &c);
        bool mand = (p->mand & BD_MAND_H) != 0;
        pool *P = &x->hp[B * 2 + mand];
        hi = (int32_t)(B * 2 + mand);
        pool_add(P, p, full, c, forced && mand);
        if (mand) {
            P->lo = 0;
            P->hi = (int32_t)B;
        }
    }
    /* a movable host-homed part off for free (no pools) still has cells:
     * they count against its group's Y */
    if (jlo > jhi || (di < 0 && hi < 0 && tag == 0))
        return 0;
    uint32_t key = key_get(x, di, hi, tag, &err);
    if (err < 0)
        return err;
    if (push_ev(x, key, jlo, (int64_t)p->bytes) < 0 ||
        push_ev(x, key, jhi + 1, -(int64_t)p->bytes) < 0)
        return -ENOMEM;
    return 0;
}

/* Pools, keys and the events of their coverage, for checkpoints ck[0..K).
 * Counts the cells in *ret_cells. */
static int lp_layout(lp *x, const uint32_t *ck, uint32_t K, uint64_t budget,
                     size_t *ret_cells)
{
    const bd_model *m = x->m;
    const uint32_t n = m->n;
    int err = 0;
    x->K = K;
    x->ck = ck;
    x->budget = budget;
    x->segof = malloc((size_t)n * sizeof(*x->segof));
    x->dp = calloc(2 * ((size_t)K + 1), sizeof(pool));
    x->hp = calloc(2 * ((size_t)K + 1), sizeof(pool));
    if (!x->segof || !x->dp || !x->hp)
        return -ENOMEM;
    for (uint32_t i = 0, j = 0; i < n; i++) {
        while (j < K && ck[j] <= i)
            j++;
        x->segof[i] = j;
    }
    for (uint32_t i = 0; i < 2 * (K + 1); i++) {
        x->dp[i] = (pool){.seg = (int32_t)(i / 2), .lo = INT32_MAX,
                          .hi = -1, .cpart = -1};
        x->hp[i] = (pool){.seg = (int32_t)(i / 2), .lo = INT32_MAX,
                          .hi = -1, .cpart = -1};
    }
    for (size_t k = 0; k < m->n_parts; k++)
        if (m->parts[k].home != BD_HOME_EITHER && /* the closed form's */
            (err = layout_part(x, &m->parts[k], 0, true)) < 0)
            return err;
    /* Movable storages: both home versions, tagged with the home group
     * (docs/bound.md §2.3); the group is the pair of pools the host-homed
     * version forces its copies into. */
    if (m->n_mparts) {
        x->gmap = calloc(((size_t)K + 2) * ((size_t)K + 2), sizeof(int32_t));
        if (!x->gmap)
            return -ENOMEM;
    }
    uint32_t cap_groups = 0;
    for (size_t k0 = 0; k0 < m->n_mparts;) {
        uint32_t sid = m->mparts[k0].sid;
        size_t k1 = k0;
        int32_t fh = -1, fd = -1;
        for (; k1 < m->n_mparts && m->mparts[k1].sid == sid; k1++) {
            const bd_part *p = &m->mparts[k1];
            if (p->home != BD_HOME_HOST || !p->mand_bytes)
                continue;
            if (p->mand & BD_MAND_H) {
                bool full;
                double c;
                fh = (int32_t)(h_seg(x, p->dl, &full, &c) * 2 + 1);
            } else {
                fd = (int32_t)(x->segof[p->rel] * 2 + 1);
            }
        }
        size_t gi = (size_t)(fh < 0 ? 0 : fh / 2 + 1) * (K + 2) +
                    (size_t)(fd < 0 ? 0 : fd / 2 + 1);
        if (!x->gmap[gi]) {
            if (x->n_groups == cap_groups) {
                size_t c = cap_groups;
                if (grow_all(&c, (size_t)cap_groups + 1, 1,
                             LP_ARR(x->groups)) < 0)
                    return -ENOMEM;
                cap_groups = (uint32_t)c;
            }
            x->groups[x->n_groups] = (hgroup){.fh = fh, .fd = fd, .stamp = -1};
            if (fh >= 0)
                x->hp[fh].mvar = true;
            if (fd >= 0)
                x->dp[fd].mvar = true;
            x->gmap[gi] = (int32_t)++x->n_groups;
        }
        uint32_t g = (uint32_t)x->gmap[gi] - 1;
        x->groups[g].bytes += m->t->storages[sid].bytes;
        for (size_t k = k0; k < k1; k++) {
            const bd_part *p = &m->mparts[k];
            int32_t tag = (int32_t)(1 + 2 * g + (p->home == BD_HOME_DEV));
            if ((err = layout_part(x, p, tag, false)) < 0)
                return err;
        }
        k0 = k1;
    }
    if (x->n_evs)
        qsort(x->evs, x->n_evs, sizeof(ev), ev_cmp);
    size_t cells = 0;
    ev_span sp = {0};
    for (size_t e = 0; ev_sweep(x, &e, &sp);)
        if (sp.sum > 0) /* all of them, whatever the budget, so that
                           the checkpoints chosen do not depend on it */
            cells += (size_t)(sp.next - sp.j);
    *ret_cells = cells;
    return 0;
}

static int lp_cells(lp *x, size_t n_cells)
{
    x->cells = malloc((n_cells ? n_cells : 1) * sizeof(cell));
    if (!x->cells)
        return -ENOMEM;
    ev_span sp = {0};
    for (size_t e = 0; ev_sweep(x, &e, &sp);) {
        if (sp.sum <= 0)
            continue;
        const keyent *k = &x->keys[sp.key];
        for (int32_t q = sp.j; q < sp.next; q++) {
            if (x->m->live[x->ck[q - 1]] <= x->budget)
                continue; /* no memory row: the cell is idle */
            x->cells[x->n_cells++] =
                (cell){sp.key, q, (double)sp.sum / MIB, 0};
            if (k->dp >= 0) {
                pool *P = &x->dp[k->dp];
                P->lo = P->seg;
                if (q - 1 > P->hi)
                    P->hi = q - 1;
            }
            if (k->hp >= 0) {
                pool *P = &x->hp[k->hp];
                P->hi = P->seg;
                if (q < P->lo)
                    P->lo = q;
            }
        }
    }
    if (x->n_cells)
        qsort(x->cells, x->n_cells, sizeof(cell), cell_cmp);
    return 0;
}

static double pool_coef(const bd_model *m, const pool *P, int d2h)
{
    double gbps = d2h ? m->link.d2h_gbps : m->link.h2d_gbps;
    double c = MIB / (gbps * 1e6);
    if (P->maxb)
        c += m->link.latency_us / 1e3 * (MIB / (double)P->maxb);
    return c;
}

/* Build rows, columns and matrix.  Returns the number of memory rows. */
/* Cell column `col` into the cover row of pool P at segment q (-1); the
 * row, made on first use, sums P's columns of segments a..b.  0 or
 * -ENOMEM. */
static int cover_add(lp *x, pool *P, int32_t q, int32_t a, int32_t b,
                     int col)
{
    int r, *slot = &P->cover[q - P->lo];
    if (!*slot) {
        if ((*slot = add_row(x, GLP_LO, 0)) < 0)
            return -ENOMEM;
        for (int32_t u = a; u <= b; u++)
            if ((r = add_nz(x, *slot, P->col0 + (u - P->lo), 1)) < 0)
                return r;
    }
    return add_nz(x, *slot, col, -1);
}

/* The pools that have variables (lo <= hi), device side (*ret_side 0)
 * first, then host side (1); *it is the cursor, from 0.  NULL after the
 * last. */
static pool *next_pool(lp *x, uint32_t *it, int *ret_side)
{
    const uint32_t NP = 2 * (x->K + 1);
    while (*it < 2 * NP) {
        uint32_t i = (*it)++;
        pool *P = i < NP ? &x->dp[i] : &x->hp[i - NP];
        if (P->lo <= P->hi) {
            *ret_side = i < NP ? 0 : 1;
            return P;
        }
    }
    return NULL;
}

/* The home coupling rows for the cells c0..c1 of one checkpoint: per
 * group g with cells there, host-version cells <= Y_g, device-version
 * cells <= bytes_g - Y_g, and both together <= the host version's cover
 * (every byte of g live there) when that is less than bytes_g. */
static int couple_rows(lp *x, size_t c0, size_t c1)
{
    int32_t j = x->cells[c0].j;
    int r;
    for (size_t c = c0; c < c1; c++) {
        int32_t tag = x->keys[x->cells[c].key].tag;
        if (!tag)
            continue;
        hgroup *G = &x->groups[(tag - 1) / 2];
        if (G->stamp != j) {
            G->stamp = j;
            G->hrow = G->drow = G->jrow = 0;
            G->has_h = G->has_d = false;
            G->chost = 0;
        }
        if ((tag - 1) % 2 == 0) {
            G->has_h = true;
            G->chost += x->cells[c].cap;
        } else {
            G->has_d = true;
        }
    }
    for (size_t c = c0; c < c1; c++) {
        int32_t tag = x->keys[x->cells[c].key].tag;
        if (!tag)
            continue;
        hgroup *G = &x->groups[(tag - 1) / 2];
        bool dev = (tag - 1) % 2 == 1;
        int *row = dev ? &G->drow : &G->hrow;
        if (!*row) {
            double gb = (double)G->bytes / MIB;
            if ((*row = add_row(x, GLP_UP, dev ? gb : 0)) < 0 ||
                (r = add_nz(x, *row, G->ycol, dev ? 1 : -1)) < 0)
                return -ENOMEM;
            if (G->has_h && G->has_d && !G->jrow &&
                G->chost < gb * (1 - 1e-12) &&
                (G->jrow = add_row(x, GLP_UP, G->chost)) < 0)
                return -ENOMEM;
        }
        if ((r = add_nz(x, *row, x->cells[c].col, 1)) < 0 ||
            (G->jrow && (r = add_nz(x, G->jrow, x->cells[c].col, 1)) < 0))
            return r;
    }
    return 0;
}

/* Late-edge rows for the cells c0..c1 of checkpoint j (op c = c_j): data
 * off the device at S_c is prefetched by an action issued at a later
 * point - "after c" at E_c at the earliest - so the parts off at c whose
 * deadline lies in segment j (which starts at S_c) are copied inside
 * [E_c, their deadline]: their copy time <= the compute of ops c+1 ..
 * deadline-1 + W_j.  One row per such prefetch pool (when its deadline is
 * inside the segment) and one for all of them together (the segment's
 * compute after op c). */
static int late_rows(lp *x, size_t c0, size_t c1)
{
    const bd_model *m = x->m;
    int32_t j = x->cells[c0].j;
    uint32_t c = x->ck[j - 1];
    double dc = m->t->ops[c].duration_us;
    double C = m->pre[seg_end(x, (uint32_t)j)] - m->pre[c];
    int total = 0, r;
    for (size_t e = c0; e < c1; e++) {
        const keyent *k = &x->keys[x->cells[e].key];
        if (k->hp < 0 || x->hp[k->hp].seg != j)
            continue;
        pool *H = &x->hp[k->hp];
        double coef = pool_coef(m, H, 0);
        if (!total) {
            if ((total = add_row(x, GLP_UP, (C - dc > 0 ? C - dc : 0) / 1e3)) <
                    0 ||
                (r = add_nz(x, total, j + 1, -1)) < 0)
                return -ENOMEM;
        }
        if ((r = add_nz(x, total, x->cells[e].col, coef)) < 0)
            return r;
        if (H->full || H->cpart < 0 || H->cpart >= C * (1 - 1e-12))
            continue;
        if (!H->erow) {
            double avail = H->cpart - dc;
            if ((H->erow = add_row(x, GLP_UP, (avail > 0 ? avail : 0) / 1e3)) <
                    0 ||
                (r = add_nz(x, H->erow, j + 1, -1)) < 0)
                return -ENOMEM;
        }
        if ((r = add_nz(x, H->erow, x->cells[e].col, coef)) < 0)
            return r;
    }
    return 0;
}

static int lp_build(lp *x, uint64_t budget)
{
    const bd_model *m = x->m;
    const uint32_t K = x->K;
    const uint32_t NP = 2 * (K + 1);
    const double *pre = m->pre;
    int r;

    /* Stall columns first, with U = every copy at once + 1 ms. */
    double U = 1;
    for (uint32_t i = 0; i < NP; i++) {
        if (x->dp[i].lo <= x->dp[i].hi)
            U += pool_coef(m, &x->dp[i], 1) * (double)x->dp[i].vol / MIB;
        if (x->hp[i].lo <= x->hp[i].hi)
            U += pool_coef(m, &x->hp[i], 0) * (double)x->hp[i].vol / MIB;
    }
    for (uint32_t q = 0; q <= K; q++)
        if (add_col(x, 0, U, 1) < 0)
            return -ENOMEM;
    /* Pool columns: the copy volume of the pool in each segment lo..hi. */
    pool *P;
    int side;
    for (uint32_t it = 0; (P = next_pool(x, &it, &side));) {
        double vol = (double)P->vol / MIB;
        P->col0 = x->n_cols + 1;
        for (int32_t q = P->lo; q <= P->hi; q++)
            if (add_col(x, 0, vol, 0) < 0)
                return -ENOMEM;
        P->cover = calloc((size_t)(P->hi - P->lo + 2), sizeof(int));
        if (!P->cover)
            return -ENOMEM;
    }
    /* Cell columns. */
    for (size_t c = 0; c < x->n_cells; c++) {
        int col = add_col(x, 0, x->cells[c].cap, 0);
        if (col < 0)
            return -ENOMEM;
        x->cells[c].col = col;
    }
    /* Home columns: Y_g, MiB of group g homed on host. */
    for (uint32_t g = 0; g < x->n_groups; g++)
        if ((x->groups[g].ycol =
                 add_col(x, 0, (double)x->groups[g].bytes / MIB, 0)) < 0)
            return -ENOMEM;
    /* Engine rows: D2H engine (or the shared one), then H2D. */
    bool duplex = m->link.duplex;
    for (int eng = 0; eng < (duplex ? 2 : 1); eng++) {
        for (uint32_t q = 0; q <= K; q++) {
            double C = pre[seg_end(x, q)] - pre[seg_first(x, q)];
            int row = 0;
            int32_t qq = (int32_t)q;
            for (uint32_t it = 0; (P = next_pool(x, &it, &side));) {
                if ((duplex && side != eng) || qq < P->lo || qq > P->hi)
                    continue;
                if (!row && (row = add_row(x, GLP_UP, C / 1e3)) < 0)
                    return -ENOMEM;
                if ((r = add_nz(x, row, P->col0 + (qq - P->lo),
                                pool_coef(m, P, side == 0))) < 0)
                    return r;
            }
            if (row && (r = add_nz(x, row, (int)q + 1, -1)) < 0)
                return r;
        }
    }
    /* Edge-segment rows and forced volumes. */
    for (uint32_t it = 0; (P = next_pool(x, &it, &side));) {
        int32_t s = P->seg;
        double C = pre[seg_end(x, (uint32_t)s)] -
                   pre[seg_first(x, (uint32_t)s)];
        if (!P->full && P->cpart >= 0 && P->cpart < C * (1 - 1e-12)) {
            int row = add_row(x, GLP_UP, P->cpart / 1e3);
            if (row < 0)
                return -ENOMEM;
            /* D: its copies in segment R (= lo); H: in B (= hi) */
            int col = P->col0 + (side == 0 ? 0 : P->hi - P->lo);
            if ((r = add_nz(x, row, col, pool_coef(m, P, side == 0))) < 0 ||
                (r = add_nz(x, row, s + 1, -1)) < 0)
                return r;
        }
        if (P->mand || P->mvar) {
            int row = add_row(x, GLP_LO, (double)P->mand / MIB);
            if (row < 0)
                return -ENOMEM;
            P->frow = row;
            for (int32_t q = P->lo; q <= P->hi; q++)
                if ((r = add_nz(x, row, P->col0 + (q - P->lo), 1)) < 0)
                    return r;
        }
    }
    /* ... plus what the groups homed on host force: - Y_g. */
    for (uint32_t g = 0; g < x->n_groups; g++) {
        const hgroup *G = &x->groups[g];
        int hr = G->fh >= 0 ? x->hp[G->fh].frow : 0;
        int dr = G->fd >= 0 ? x->dp[G->fd].frow : 0;
        if ((hr && (r = add_nz(x, hr, G->ycol, -1)) < 0) ||
            (dr && (r = add_nz(x, dr, G->ycol, -1)) < 0))
            return r;
    }
    /* Cover and memory rows, checkpoint by checkpoint. */
    int n_mem = 0;
    for (size_t c0 = 0; c0 < x->n_cells;) {
        int32_t j = x->cells[c0].j;
        size_t c1 = c0;
        while (c1 < x->n_cells && x->cells[c1].j == j)
            c1++;
        for (size_t c = c0; c < c1; c++) {
            const keyent *k = &x->keys[x->cells[c].key];
            int col = x->cells[c].col;
            if (k->dp >= 0) {
                pool *D = &x->dp[k->dp];
                /* stored by the end of segment j-1 */
                if ((r = cover_add(x, D, j - 1, D->lo, j - 1, col)) < 0)
                    return r;
            }
            if (k->hp >= 0) {
                pool *H = &x->hp[k->hp];
                /* prefetched from segment j on */
                if ((r = cover_add(x, H, j, j, H->hi, col)) < 0)
                    return r;
            }
        }
        if ((r = couple_rows(x, c0, c1)) < 0 ||
            (r = late_rows(x, c0, c1)) < 0)
            return r;
        uint32_t op = x->ck[j - 1];
        if (m->live[op] > budget) {
            int row = add_row(x, GLP_LO, (double)(m->live[op] - budget) / MIB);
            if (row < 0)
                return -ENOMEM;
            for (size_t c = c0; c < c1; c++)
                if ((r = add_nz(x, row, x->cells[c].col, 1)) < 0)
                    return r;
            n_mem++;
        }
        c0 = c1;
    }
    return n_mem;
}

/* Lagrangian value of duals y (1-based, n_rows) over the column box. */
static double lagrangian(const lp *x, const double *y)
{
    long double val = 0, mag = 0;
    long double *d = calloc((size_t)x->n_cols + 1, sizeof(long double));
    double *yy = malloc(((size_t)x->n_rows + 1) * sizeof(double));
    if (!d || !yy) {
        free(d);
        free(yy);
        return 0;
    }
    for (int i = 1; i <= x->n_rows; i++) {
        double v = y[i];
        if (!isfinite(v) || (x->rtype[i] == GLP_LO && v < 0) ||
            (x->rtype[i] == GLP_UP && v > 0))
            v = 0;
        yy[i] = v;
        val += (long double)v * x->rb[i];
        mag += fabsl((long double)v * x->rb[i]);
    }
    for (int j = 1; j <= x->n_cols; j++)
        d[j] = x->cobj[j];
    for (size_t e = 1; e <= x->nnz; e++)
        d[x->ja[e]] -= (long double)yy[x->ia[e]] * x->ar[e];
    for (int j = 1; j <= x->n_cols; j++) {
        long double t = d[j] >= 0 ? d[j] * x->clo[j] : d[j] * x->chi[j];
        val += t;
        mag += fabsl(t);
    }
    free(d);
    free(yy);
    /* Rounding slack: the sum above is exact to ~1e-18 relative per term;
     * take off far more than that. */
    val -= mag * 1e-9L + 1e-12L;
    return (double)val;
}

/* One LP at (at most) K checkpoints, with the given limits. */
static int lp_once(const bd_lp_in *in, uint32_t K, uint32_t time_ms,
                   bd_lp_out *out)
{
    const bd_model *m = in->m;
    uint32_t *ck = NULL, nck = 0;
    lp x;
    int r = 0;

    memset(out, 0, sizeof(*out));
    memset(&x, 0, sizeof(x));
    x.m = m;
    if (K > m->n)
        K = m->n;
    size_t cells = 0;
    for (int tries = 0;; tries++) {
        free(ck);
        ck = NULL;
        if ((r = bd_checkpoints(m, K, &ck, &nck)) < 0)
            goto out;
        lp_reset(&x);
        if ((r = lp_layout(&x, ck, nck, in->budget, &cells)) < 0)
            goto out;
        if (cells <= in->max_cells)
            break;
        if (nck <= 4 || tries >= 8) {
            snprintf(out->note, sizeof(out->note),
                     "LP skipped: %zu cells at %u checkpoints exceed the "
                     "limit %u",
                     cells, nck, in->max_cells);
            out->status = PLAN_BOUND_LP_NOT_RUN;
            goto out;
        }
        double f = 0.9 * (double)in->max_cells / (double)cells;
        if (f > 0.7)
            f = 0.7;
        K = (uint32_t)((double)nck * f);
        if (K < 4)
            K = 4;
    }
    out->checkpoints = nck;
    if ((r = lp_cells(&x, cells)) < 0) /* at most that many */
        goto out;
    int n_mem = lp_build(&x, in->budget);
    if (n_mem < 0) {
        r = n_mem;
        goto out;
    }
    bool forced = false;
    for (uint32_t i = 0; i < 2 * (x.K + 1); i++)
        forced = forced || x.dp[i].mand || x.hp[i].mand;
    out->rows = (uint32_t)x.n_rows;
    out->cols = (uint32_t)x.n_cols;
    out->nonzeros = x.nnz;
    if (n_mem == 0 && !forced) {
        snprintf(out->note, sizeof(out->note),
                 "LP not needed: no checkpoint over budget, no forced copy");
        out->status = PLAN_BOUND_LP_NOT_RUN;
        goto out;
    }
    if (x.n_rows == 0 || x.n_cols == 0 || x.nnz == 0 ||
        x.nnz > (size_t)INT32_MAX - 1) {
        out->status = PLAN_BOUND_LP_NOT_RUN;
        snprintf(out->note, sizeof(out->note), "LP empty or too large");
        goto out;
    }

    int term = glp_term_out(GLP_OFF);
    glp_prob *P = glp_create_prob();
    glp_set_obj_dir(P, GLP_MIN);
    glp_add_rows(P, x.n_rows);
    glp_add_cols(P, x.n_cols);
    for (int i = 1; i <= x.n_rows; i++)
        glp_set_row_bnds(P, i, x.rtype[i], x.rb[i], x.rb[i]);
    for (int j = 1; j <= x.n_cols; j++) {
        glp_set_col_bnds(P, j, x.chi[j] > x.clo[j] ? GLP_DB : GLP_FX,
                         x.clo[j], x.chi[j]);
        glp_set_obj_coef(P, j, x.cobj[j]);
    }
    glp_load_matrix(P, (int)x.nnz, x.ia, x.ja, x.ar);
    glp_scale_prob(P, GLP_SF_AUTO);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.meth = GLP_DUAL;

    parm.presolve = GLP_OFF;
    parm.tm_lim = time_ms ? (int)time_ms : 1;
    if (in->iteration_limit)
        parm.it_lim = (int)in->iteration_limit;
    int rc = glp_simplex(P, &parm);
    int st = glp_get_status(P);
    out->iterations = (uint32_t)glp_get_it_cnt(P);
    double *y = malloc(((size_t)x.n_rows + 1) * sizeof(double));
    if (!y) {
        glp_delete_prob(P);
        r = -ENOMEM;
        goto out;
    }
    for (int i = 1; i <= x.n_rows; i++)
        y[i] = glp_get_row_dual(P, i);
    glp_delete_prob(P);
    glp_term_out(term);
    double lb = lagrangian(&x, y);
    free(y);
    out->bound_us = lb > 0 ? lb * 1e3 : 0;
    if (rc == 0 && st == GLP_OPT)
        out->status = PLAN_BOUND_LP_OPTIMAL;
    else if (rc == GLP_ETMLIM || rc == GLP_EITLIM) {
        out->status = PLAN_BOUND_LP_LIMIT;
        snprintf(out->note, sizeof(out->note),
                 "LP stopped at its %s limit after %u iterations: the dual "
                 "value reached is used",
                 rc == GLP_ETMLIM ? "time" : "iteration", out->iterations);
    } else {
        out->status = PLAN_BOUND_LP_FAILED;
        snprintf(out->note, sizeof(out->note),
                 "GLPK simplex ended with code %d, status %d: its last duals "
                 "are used",
                 rc, st);
    }
out:
    lp_reset(&x);
    free(ck);
    return r;
}

static double lp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Progressive refinement: 16, 32, 64, ... checkpoints up to the maximum,
 * while the time limit lasts; every pass gives a valid bound, the largest
 * is kept.  A coarse pass costs little and guards against a fine one that
 * stops at its limit with a weak dual value. */
int bd_lp(const bd_lp_in *in, bd_lp_out *out)
{
    uint32_t kmax = in->max_checkpoints < in->m->n ? in->max_checkpoints
                                                    : in->m->n;
    double t0 = lp_now_ms();
    bool have = false;
    memset(out, 0, sizeof(*out));
    for (uint32_t K = kmax < 16 ? kmax : 16;; K = K * 2 > kmax ? kmax : K * 2) {
        double left = (double)in->time_limit_ms - (lp_now_ms() - t0);
        if (have && left < 1)
            break;
        bd_lp_out o;
        int r = lp_once(in, K, left < 1 ? 1 : (uint32_t)left, &o);
        if (r < 0)
            return r;
        if (!have || o.status == PLAN_BOUND_LP_NOT_RUN ||
            o.bound_us >= out->bound_us) {
            uint32_t it = out->iterations;
            *out = o;
            out->iterations += it;
        } else {
            out->iterations += o.iterations;
            if (o.status == PLAN_BOUND_LP_LIMIT)
                snprintf(out->note, sizeof(out->note),
                         "the LP at %u checkpoints stopped at its limit "
                         "below this one's value",
                         o.checkpoints);
        }
        have = true;
        if (o.status == PLAN_BOUND_LP_NOT_RUN || o.status != PLAN_BOUND_LP_OPTIMAL ||
            K >= kmax || o.checkpoints < K)
            break;
    }
    return 0;
}

void plan_bound_thread_done(void)
{
    glp_free_env(); /* 1 (nothing done) when the thread has none */
}
