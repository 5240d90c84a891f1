/*
 * planner/bound/bound_model.c - the relaxed view of a trace that the
 * closed form and the LP share (docs/bound.md §2): per op the bytes that
 * must be on device, and the "parts" - stretches of a storage's life it
 * may spend off the device, each with the window of the store it needs
 * before and the prefetch it needs after.  One pass over the access lists,
 * O(ops + accesses).
 */
#include "planner/bound/bound_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/plan_impl.h"
#include "proto/mem.h"

/* Movable storages (PLANNER.md §1): the schedule chooses the home, so
 * the model must admit both (docs/bound.md §2.3). */
static inline bool bd_movable(const plan_storage *s)
{
    return s->movable && s->retained &&
           (s->initial == PLAN_INIT_DEVICE || s->initial == PLAN_INIT_HOST);
}

/* Append a part: to m->parts, or to m->mparts for the per-home versions
 * of a movable storage (home BD_HOME_HOST / BD_HOME_DEV). */
static int push_part(bd_model *m, uint8_t home, uint32_t sid, uint64_t bytes,
                     int64_t from, int64_t to, int32_t rel, int32_t dl,
                     uint8_t mand, uint64_t mand_bytes)
{
    if (home == BD_HOME_GIVEN && rel == BD_CLEAN && dl == BD_NOH2D &&
        mand_bytes == 0)
        return 0; /* off for free: no copy needed, never counted (kept for a
                     movable storage: its live bytes count it) */
    if (from > to && mand_bytes == 0)
        return 0; /* covers no checkpoint and forces nothing */
    bool mp = home == BD_HOME_HOST || home == BD_HOME_DEV;
    bd_part **arr = mp ? &m->mparts : &m->parts;
    size_t *np = mp ? &m->n_mparts : &m->n_parts;
    size_t *cp = mp ? &m->cap_mparts : &m->cap_parts;
    if (*np == *cp) {
        size_t cap = *cp ? *cp * 2 : 1024;
        bd_part *p = realloc(*arr, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        *arr = p;
        *cp = cap;
    }
    if (from > to) {
        from = 1;
        to = 0;
    }
    (*arr)[(*np)++] = (bd_part){bytes, mand_bytes, (int32_t)from, (int32_t)to,
                                rel, dl, sid, mand, home};
    return 0;
}

/* Add bytes to a difference array over [from, to] (inclusive). */
static void diff_add(int64_t *d, int64_t from, int64_t to, uint64_t bytes)
{
    if (from > to || !d)
        return;
    d[from] += (int64_t)bytes;
    d[to + 1] -= (int64_t)bytes;
}

/* The parts of storage s with home `home`: BD_HOME_GIVEN (not movable),
 * BD_HOME_EITHER (movable, each part at the cheaper of the two homes), or
 * one home of a movable storage (BD_HOME_HOST, BD_HOME_DEV: judged as if
 * initial were host or device, PLANNER.md §3 "Homes").  dfix / dlive (the
 * fixed and live bytes, difference arrays) are accumulated when not NULL:
 * once per storage, by the GIVEN or EITHER call. */
static int storage_parts(bd_model *m, uint32_t s, uint8_t home, int64_t *dfix,
                         int64_t *dlive)
{
    const plan_trace *t = m->t;
    const plan_storage *st = &t->storages[s];
    const plan_access *acc = t->acc + t->acc_start[s];
    uint32_t na = t->acc_start[s + 1] - t->acc_start[s];
    int64_t n = m->n;
    bool mov = home == BD_HOME_EITHER;
    bool given = home == BD_HOME_GIVEN;
    bool dev0 = home == BD_HOME_DEV ||
                (given && st->initial == PLAN_INIT_DEVICE);
    bool host_home = home == BD_HOME_HOST ||
                     (given && st->initial == PLAN_INIT_HOST);
    uint64_t b = st->bytes;
    int r;

    if (na == 0) {
        /* Never accessed: only retained initial: device data is on device
         * (all step); it may be stored, freed and brought back.  Host-homed
         * movable data stays off for free. */
        if (!st->retained)
            return 0;
        if (dev0 || mov)
            diff_add(dlive, 0, n - 1, b);
        if (given && dev0)
            m->t0_bytes += b;
        if (dev0)
            return push_part(m, home, s, b, 0, n - 1, BD_T0, (int32_t)n, 0,
                             0);
        if (mov || home == BD_HOME_HOST)
            return push_part(m, home, s, b, 0, n - 1, BD_CLEAN, BD_NOH2D, 0,
                             0);
        return 0;
    }
    if (given && dev0)
        m->t0_bytes += b;
    if (dfix)
        for (uint32_t k = 0; k < na; k++) {
            dfix[acc[k].op] += (int64_t)b;
            dfix[acc[k].op + 1] -= (int64_t)b;
            dlive[acc[k].op] += (int64_t)b;
            dlive[acc[k].op + 1] -= (int64_t)b;
        }
    int64_t a0 = acc[0].op;
    bool first_reads = (acc[0].flags & PLAN_ACC_READ) != 0;
    int32_t last_write = -1;
    for (uint32_t k = 0; k < na; k++)
        if (acc[k].flags & PLAN_ACC_WRITE)
            last_write = (int32_t)acc[k].op;

    /* Leading stretch: ops 0 .. a0-1. */
    if (dev0) {
        if (st->pinned) {
            /* cannot leave before its last access (movable and homed on
             * device: no part, so the LP keeps it on; the dlive of its
             * EITHER call counts it) */
            diff_add(dfix, 0, a0 - 1, b);
            diff_add(dlive, 0, a0 - 1, b);
        } else if (first_reads) {
            diff_add(dlive, 0, a0 - 1, b);
            if ((r = push_part(m, home, s, b, 0, a0 - 1, BD_T0, (int32_t)a0,
                               0, 0)))
                return r;
        } /* else: overwritten before read: freed at t = 0 for free */
    } else if (host_home && first_reads) {
        /* Not on device until prefetched; the prefetch is forced. */
        diff_add(dlive, 0, a0 - 1, b);
        if ((r = push_part(m, home, s, b, 0, a0 - 1, BD_CLEAN, (int32_t)a0,
                           BD_MAND_H, b)))
            return r;
    } else if (mov && first_reads) {
        /* Either home: host (not there until prefetched) or device (there
         * from t = 0, no copy needed).  Relaxed: off costs the prefetch
         * only, no store. */
        diff_add(dlive, 0, a0 - 1, b);
        if ((r = push_part(m, home, s, b, 0, a0 - 1, BD_CLEAN, (int32_t)a0,
                           0, 0)))
            return r;
    }

    /* Gaps between accesses. */
    int32_t w = -1; /* op of the latest write so far, -1: version 0 */
    for (uint32_t k = 0; k + 1 < na; k++) {
        int64_t a = acc[k].op, nb = acc[k + 1].op;
        if (acc[k].flags & PLAN_ACC_WRITE)
            w = (int32_t)a;
        if (nb - a < 2)
            continue;
        if (st->pinned) {
            diff_add(dfix, a + 1, nb - 1, b);
            diff_add(dlive, a + 1, nb - 1, b);
            continue;
        }
        if (!(acc[k + 1].flags & PLAN_ACC_READ))
            continue; /* next access overwrites: dead data, free */
        int32_t rel = w >= 0 ? w : dev0 ? BD_T0 : BD_CLEAN;
        uint8_t mand = host_home && st->retained && w >= 0 && w == last_write
                           ? BD_MAND_D
                           : 0;
        diff_add(dlive, a + 1, nb - 1, b);
        if ((r = push_part(m, home, s, b, a + 1, nb - 1, rel, (int32_t)nb,
                           mand, 0)))
            return r;
    }
    if (acc[na - 1].flags & PLAN_ACC_WRITE)
        w = (int32_t)acc[na - 1].op;

    /* Trailing stretch: ops z+1 .. n-1, only for retained data (the rest
     * is freed implicitly after its last access). */
    if (!st->retained)
        return 0;
    int64_t z = acc[na - 1].op;
    int32_t rel = w >= 0 ? w : dev0 ? BD_T0 : BD_CLEAN;
    if (mov) {
        /* Either home; relaxed: off needs the store, never the prefetch
         * (unwritten: off for free, host-homed). */
        diff_add(dlive, z + 1, n - 1, b);
        return push_part(m, home, s, b, z + 1, n - 1, rel, BD_NOH2D, 0, 0);
    }
    if (host_home) {
        /* Must end off the device with a current host copy: the store of
         * a written final version is forced. */
        if (rel != BD_CLEAN)
            diff_add(dlive, z + 1, n - 1, b);
        return push_part(m, home, s, b, z + 1, n - 1, rel, BD_NOH2D,
                         rel >= 0 ? BD_MAND_D : 0, rel >= 0 ? b : 0);
    }
    /* Device-homed: on device at step end. */
    diff_add(dlive, z + 1, n - 1, b);
    return push_part(m, home, s, b, z + 1, n - 1, rel, (int32_t)n, 0, 0);
}

static int model_storage(bd_model *m, uint32_t s, int64_t *dfix,
                         int64_t *dlive)
{
    int r;
    if (!bd_movable(&m->t->storages[s]))
        return storage_parts(m, s, BD_HOME_GIVEN, dfix, dlive);
    if ((r = storage_parts(m, s, BD_HOME_EITHER, dfix, dlive)) < 0 ||
        (r = storage_parts(m, s, BD_HOME_HOST, NULL, NULL)) < 0)
        return r;
    return storage_parts(m, s, BD_HOME_DEV, NULL, NULL);
}

int bd_model_init(bd_model *m, const plan_trace *t, const plan_link *link)
{
    int64_t *dfix = NULL, *dlive = NULL;
    uint32_t n = t->n_ops;
    int r = -ENOMEM;

    memset(m, 0, sizeof(*m));
    m->t = t;
    m->link = *link;
    m->n = n;
    m->pre = malloc(((size_t)n + 1) * sizeof(*m->pre));
    m->fixed = malloc((size_t)n * sizeof(*m->fixed));
    m->live = malloc((size_t)n * sizeof(*m->live));
    dfix = calloc((size_t)n + 1, sizeof(*dfix));
    dlive = calloc((size_t)n + 1, sizeof(*dlive));
    if (!m->pre || !m->fixed || !m->live || !dfix || !dlive)
        goto out;
    m->pre[0] = 0;
    for (uint32_t i = 0; i < n; i++)
        m->pre[i + 1] = m->pre[i] + t->ops[i].duration_us;
    for (uint32_t s = 0; s < t->n_storages; s++)
        if ((r = model_storage(m, s, dfix, dlive)) < 0)
            goto out;
    int64_t f = 0, l = 0;
    m->floor_bytes = m->t0_bytes;
    m->floor_op = PLAN_NONE;
    for (uint32_t i = 0; i < n; i++) {
        f += dfix[i];
        l += dlive[i];
        m->fixed[i] = (uint64_t)f;
        m->live[i] = (uint64_t)l;
        if ((uint64_t)f > m->floor_bytes) {
            m->floor_bytes = (uint64_t)f;
            m->floor_op = i;
        }
    }
    for (size_t k = 0; k < m->n_parts; k++) {
        const bd_part *p = &m->parts[k];
        if (p->mand & BD_MAND_H)
            m->mand_h2d_us += plan_copy_us(link, 0, p->mand_bytes);
        else if (p->mand_bytes)
            m->mand_d2h_us += plan_copy_us(link, 1, p->mand_bytes);
    }
    r = 0;
out:
    free(dfix);
    free(dlive);
    if (r < 0)
        bd_model_done(m);
    return r;
}

void bd_model_done(bd_model *m)
{
    HO_FREE_ALL(m->pre, m->fixed, m->live, m->parts, m->mparts);
    memset(m, 0, sizeof(*m));
}

int bd_checkpoints(const bd_model *m, uint32_t k, uint32_t **ret,
                   uint32_t *ret_n)
{
    uint32_t n = m->n;
    uint32_t *ck;
    if (k == 0)
        k = 1;
    if (k >= n) {
        ck = malloc((size_t)n * sizeof(*ck));
        if (!ck)
            return -ENOMEM;
        for (uint32_t i = 0; i < n; i++)
            ck[i] = i;
        *ret = ck;
        *ret_n = n;
        return 0;
    }
    ck = malloc((size_t)k * sizeof(*ck));
    if (!ck)
        return -ENOMEM;
    /* Chunk weight: compute, plus a quarter of the mean op so that runs of
     * zero-duration ops still spread the checkpoints. */
    double total = m->pre[n];
    double extra = total > 0 ? 0.25 * total / n : 1.0;
    double wsum = total + extra * n;
    uint32_t nck = 0, i = 0;
    for (uint32_t c = 0; c < k && i < n; c++) {
        double end = wsum * (double)(c + 1) / (double)k;
        uint32_t best = i;
        do {
            if (m->live[i] > m->live[best])
                best = i;
            i++;
        } while (i < n && (c + 1 == k ||
                           m->pre[i] + extra * (double)i < end));
        ck[nck++] = best;
    }
    *ret = ck;
    *ret_n = nck;
    return 0;
}
