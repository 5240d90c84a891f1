/*
 * planner/bound/bound_cf.c - the closed-form bound (docs/bound.md §4):
 *
 *  1. Forced copies: the prefetches of initial: host data read in the step
 *     must all finish before their first reader starts, the stores of
 *     written host-homed data after their last writer ends; what the
 *     compute before (after) cannot hide is stall.  A prefix of the first
 *     kind and a suffix of the second lie in disjoint stretches of time,
 *     so their stalls add.
 *  2. Memory at a checkpoint op i: at S_i at least need = live(i) - budget
 *     bytes are off the device.  Whichever bytes they are, at least
 *     need - clean - cap(release < w) of them were stored inside
 *     [E_w, S_i], and at least need - noh2d - cap(deadline > b) of them
 *     are prefetched inside [E_i, S_b] (off at S_i: issued "after i" at
 *     the earliest); the engine time that takes beyond the compute of
 *     those windows is stall of ops w+1..i and of ops i+1..b.
 *  3. Terms over disjoint op ranges bound different stalls: the largest
 *     sum of such terms (weighted interval scheduling).
 * Movable storages enter uncoupled (BD_HOME_EITHER parts): each part at
 * the cheaper of its two homes.
 *
 * Cost O(ops + parts * checkpoints).
 */
#include "planner/bound/bound_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/plan_impl.h"
#include "proto/mem.h"

/* Counting sort of part indices by a key in [0, nkeys): stable, O(P + n).
 * rank(p) gives the key. */
static int csort(const bd_model *m, uint32_t *ord, size_t nkeys, bool by_rel)
{
    size_t np = m->n_parts;
    uint32_t *cnt = calloc(nkeys + 1, sizeof(*cnt));
    if (!cnt)
        return -ENOMEM;
    /* rel in [-2, n): key rel + 2 ascending; dl in [-1, n]: key n - dl
     * (descending deadline, step end first) */
    for (size_t k = 0; k < np; k++) {
        const bd_part *p = &m->parts[k];
        size_t key = by_rel ? (size_t)(p->rel + 2)
                            : (size_t)((int64_t)m->n - p->dl);
        cnt[key + 1]++;
    }
    for (size_t i = 0; i < nkeys; i++)
        cnt[i + 1] += cnt[i];
    for (size_t k = 0; k < np; k++) {
        const bd_part *p = &m->parts[k];
        size_t key = by_rel ? (size_t)(p->rel + 2)
                            : (size_t)((int64_t)m->n - p->dl);
        ord[cnt[key]++] = (uint32_t)k;
    }
    free(cnt);
    return 0;
}

/* 1. forced copies */
static int forced(const bd_model *m, double *ret)
{
    uint32_t n = m->n;
    double *hsum = calloc((size_t)n + 1, sizeof(double));
    double *dsum = calloc((size_t)n + 1, sizeof(double));
    if (!hsum || !dsum) {
        free(hsum);
        free(dsum);
        return -ENOMEM;
    }
    double all = 0;
    for (size_t k = 0; k < m->n_parts; k++) {
        const bd_part *p = &m->parts[k];
        if (!p->mand_bytes)
            continue;
        if (p->mand & BD_MAND_H) {
            double us = plan_copy_us(&m->link, 0, p->mand_bytes);
            hsum[p->dl] += us;
            all += us;
        } else {
            double us = plan_copy_us(&m->link, 1, p->mand_bytes);
            dsum[p->rel] += us;
            all += us;
        }
    }
    /* hv(b) = sum of forced prefetches due by S_b - compute before b;
     * dv(w) = sum of forced stores released at or after E_w - compute
     * after w.  best = max over b <= w of hv+(b) + dv+(w). */
    double best = 0, cum = 0, hmax = 0;
    double *hpre = malloc(((size_t)n + 1) * sizeof(double));
    if (!hpre) {
        free(hsum);
        free(dsum);
        return -ENOMEM;
    }
    for (uint32_t b = 0; b < n; b++) {
        cum += hsum[b];
        double v = cum - m->pre[b];
        if (v > hmax)
            hmax = v;
        hpre[b] = hmax;
    }
    cum = 0;
    for (uint32_t w = n; w-- > 0;) {
        cum += dsum[w];
        double v = cum - (m->pre[n] - m->pre[w + 1]);
        if (v < 0)
            v = 0;
        if (v + hpre[w] > best)
            best = v + hpre[w];
    }
    if (hmax > best)
        best = hmax;
    if (!m->link.duplex && all - m->pre[n] > best)
        best = all - m->pre[n];
    free(hpre);
    free(hsum);
    free(dsum);
    *ret = best;
    return 0;
}

/* The parts ord[*k..] in a row with the same key (deadline when by_dl,
 * else release) `key`: the bytes of those that cover op i go into *cum;
 * *k is left on the last of them. */
static void add_group(const bd_model *m, const uint32_t *ord, size_t np,
                      size_t *k, bool by_dl, int32_t key, int32_t i,
                      double *cum)
{
    for (; *k < np; (*k)++) {
        const bd_part *q = &m->parts[ord[*k]];
        if ((by_dl ? q->dl : q->rel) != key) {
            (*k)--;
            break;
        }
        if (q->from <= i && q->to >= i)
            *cum += (double)q->bytes;
    }
}

/* A term of the memory bound: at least `us` of stall among the stalls of
 * ops lo..hi (op n standing for the tail after the last op). */
typedef struct cf_iv {
    int32_t lo, hi;
    double us;
} cf_iv;

static int iv_cmp(const void *a, const void *b)
{
    const cf_iv *p = a, *q = b;
    return (p->hi > q->hi) - (p->hi < q->hi);
}

static int iv_push(cf_iv **iv, size_t *n, size_t *cap, int32_t lo,
                   int32_t hi, double us)
{
    if (ho_grow((void **)iv, cap, *n + 1, sizeof(**iv), 256, SIZE_MAX) < 0)
        return -ENOMEM;
    (*iv)[(*n)++] = (cf_iv){lo, hi, us};
    return 0;
}

/* One checkpoint's terms of one side, widest range first (nested): keep
 * only those larger than every narrower one (the others never help a
 * disjoint sum).  Returns how many are kept, compacted in place. */
static size_t iv_keep_useful(cf_iv *iv, size_t n)
{
    size_t w = n; /* kept ones gather at the end: w > k while reading k */
    double best = 0;
    for (size_t k = n; k-- > 0;)
        if (iv[k].us > best) {
            best = iv[k].us;
            iv[--w] = iv[k];
        }
    if (w > 0 && w < n) /* (iv may be NULL when n is 0) */
        memmove(iv, iv + w, (n - w) * sizeof(*iv));
    return n - w;
}

/* The largest sum of terms over pairwise disjoint op ranges (weighted
 * interval scheduling): the stalls they bound are different stalls. */
static double max_disjoint(cf_iv *iv, size_t n)
{
    if (n == 0)
        return 0;
    qsort(iv, n, sizeof(*iv), iv_cmp);
    double *f = malloc((n + 1) * sizeof(*f));
    if (!f) { /* fall back to the best single term */
        double b = 0;
        for (size_t k = 0; k < n; k++)
            b = iv[k].us > b ? iv[k].us : b;
        return b;
    }
    f[0] = 0;
    for (size_t k = 0; k < n; k++) {
        /* f[q]: best over the first q terms; the last term ending before
         * iv[k].lo */
        size_t lo = 0, hi = k;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (iv[mid].hi < iv[k].lo)
                lo = mid + 1;
            else
                hi = mid;
        }
        double take = iv[k].us + f[lo];
        f[k + 1] = take > f[k] ? take : f[k];
    }
    double r = f[n];
    free(f);
    return r;
}

int bd_closed_form(const bd_model *m, uint64_t budget, const uint32_t *ck,
                   uint32_t nck, double *ret_us)
{
    double best = 0;
    uint32_t *ord_r = NULL, *ord_d = NULL;
    size_t np = m->n_parts;
    int r = forced(m, &best);
    if (r < 0)
        return r;
    bool any = false;
    for (uint32_t c = 0; c < nck && !any; c++)
        any = m->live[ck[c]] > budget;
    if (!any || np == 0) {
        *ret_us = best;
        return 0;
    }
    if (np > UINT32_MAX)
        return -E2BIG;
    ord_r = malloc(np * sizeof(*ord_r));
    ord_d = malloc(np * sizeof(*ord_d));
    if (!ord_r || !ord_d) {
        free(ord_r);
        free(ord_d);
        return -ENOMEM;
    }
    for (size_t k = 0; k < np; k++)
        ord_r[k] = ord_d[k] = (uint32_t)k;
    if ((r = csort(m, ord_r, (size_t)m->n + 2, true)) < 0 ||
        (r = csort(m, ord_d, (size_t)m->n + 2, false)) < 0) {
        free(ord_r);
        free(ord_d);
        return r;
    }

    cf_iv *iv = NULL;
    size_t niv = 0, cap_iv = 0;
    const double upb_d = bd_us_per_byte(&m->link, 1);
    const double upb_h = bd_us_per_byte(&m->link, 0);
    const double *pre = m->pre;
    const int32_t n = (int32_t)m->n;
    for (uint32_t c = 0; c < nck; c++) {
        int32_t i = (int32_t)ck[c];
        if (m->live[i] <= budget)
            continue;
        double need = (double)(m->live[i] - budget);
        /* D side: clean bytes first, then by release, earliest first. */
        double clean = 0, noh = 0;
        for (size_t k = 0; k < np; k++) {
            const bd_part *p = &m->parts[k];
            if (p->from > i || p->to < i)
                continue;
            if (p->rel == BD_CLEAN)
                clean += (double)p->bytes;
            if (p->dl == BD_NOH2D)
                noh += (double)p->bytes;
        }
        size_t d0 = niv;
        double req = need - clean, cum = 0;
        for (size_t k = 0; k < np && req > cum; k++) {
            const bd_part *p = &m->parts[ord_r[k]];
            if (p->rel == BD_CLEAN || p->from > i || p->to < i)
                continue;
            /* first part of this release value: evaluate the window */
            double window = pre[i] - (p->rel == BD_T0 ? 0 : pre[p->rel + 1]);
            double v = (req - cum) * upb_d - window;
            if (v > 0 && (r = iv_push(&iv, &niv, &cap_iv,
                                      p->rel == BD_T0 ? 0 : p->rel + 1, i,
                                      v)) < 0)
                goto out;
            /* add every covering part of this release */
            add_group(m, ord_r, np, &k, false, p->rel, i, &cum);
        }
        niv = d0 + iv_keep_useful(iv + d0, niv - d0);
        size_t h0 = niv;
        req = need - noh;
        cum = 0;
        for (size_t k = 0; k < np && req > cum; k++) {
            const bd_part *p = &m->parts[ord_d[k]];
            if (p->dl == BD_NOH2D || p->from > i || p->to < i)
                continue;
            /* off at S_i: the prefetch is issued at "after i" (E_i) or
             * later */
            double window = (p->dl >= n ? pre[n] : pre[p->dl]) - pre[i + 1];
            double v = (req - cum) * upb_h - window;
            if (v > 0 && (r = iv_push(&iv, &niv, &cap_iv, i + 1,
                                      p->dl >= n ? n : p->dl, v)) < 0)
                goto out;
            add_group(m, ord_d, np, &k, true, p->dl, i, &cum);
        }
        niv = h0 + iv_keep_useful(iv + h0, niv - h0);
    }
    /* Terms of different checkpoints (and the D and H terms of one) over
     * disjoint op ranges bound different stalls: they add. */
    double chain = max_disjoint(iv, niv);
    if (chain > best)
        best = chain;
    r = 0;
out:
    free(iv);
    if (r < 0) {
        free(ord_r);
        free(ord_d);
        return r;
    }
    free(ord_r);
    free(ord_d);
    *ret_us = best;
    return 0;
}
