/*
 * planner/node/node_arbiter.c - the node arbiter (node_arbiter.h; the rules
 * in docs/node.md "The arbiter").
 *
 * Steps of plan_node_arbitrate:
 *   1. capacities: every link and every device's engines, per direction
 *      (one capacity for both when not duplex: a D2H byte counts
 *      h2d/d2h of an H2D byte, as in the node judge), and each client's
 *      path over them (its device, then each link up to the root);
 *   2. candidates: `independent` (what it sees alone: its device's
 *      figures capped by the links above it; the device's free
 *      capacity split equally among its unfixed clients), `equal-share`
 *      (each capacity split equally among the clients crossing it),
 *      `arbiter` (budgets on the curves at the equal-share bandwidth,
 *      then demands and max-min shares, then budgets again at the shares);
 *   3. each candidate planned (one schedule per client) and judged by
 *      plan_node_judge; the asked one, or for `arbiter` the best, kept;
 *   4. DDR limits split from the judged host peaks.
 * Planning one client for a bandwidth uses a read-only view of its trace
 * with another link (the arrays are shared; nothing is written), so curves
 * cost no copies.  Planner outcomes are memoised by (trace hash, budget,
 * bandwidth), and within a call the schedules too: clients planned at the
 * same point, in any candidate, share one.
 */
#include "planner/node/node_arbiter.h"

#include "planner/plan_enum.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"
#include "proto/mem.h"

static const char *const strategy_names[PLAN_ARB__COUNT] = {
    "arbiter", "independent", "equal-share"};

PLAN_ENUM_NAMES(plan_arb_strategy, plan_arb_strategy_name,
                plan_arb_strategy_parse, strategy_names, PLAN_ARB__COUNT)

/* ------------------------------------------------------------- the state */

enum { H2D = 0, D2H = 1 };

typedef struct arb_path {
    uint32_t n;
    uint32_t cons[PLAN_NODE_MAX_DEPTH + 1];
    double coef[PLAN_NODE_MAX_DEPTH + 1]; /* capacity units per byte/us */
} arb_path;

typedef struct arb_memo {
    uint64_t hash, budget;
    double h2d, d2h;
    const char *planner;    /* static names: compared by content */
    int rc;
    double exposed_us;
    uint64_t min_budget;
} arb_memo;

struct plan_arb_cache {
    arb_memo *memo;
    size_t n, cap;
};

plan_arb_cache *plan_arb_cache_new(void)
{
    return calloc(1, sizeof(plan_arb_cache));
}

plan_arb_cache *plan_arb_cache_free(plan_arb_cache *c)
{
    if (c)
        free(c->memo);
    free(c);
    return NULL;
}

size_t plan_arb_cache_size(const plan_arb_cache *c)
{
    return c ? c->n : 0;
}

/* One candidate's per-client figures before planning. */
typedef struct arb_plan {
    uint64_t *budget;
    double *h2d, *d2h;
} arb_plan;

typedef struct arb {
    const plan_node *node;
    const plan_arb_client *c;
    uint32_t n;
    plan_options popt;
    uint32_t points, steps;
    uint64_t *hash;         /* n */
    double *compute_us;     /* n */
    uint32_t n_cons;
    double *cons_cap;       /* bytes/us */
    arb_path *path;         /* n * 2 (client, direction) */
    double *full;           /* n * 2: GB/s a client sees alone: its
                               device's figure capped by every link above */
    plan_arb_cache own;     /* when the caller gives none */
    plan_arb_cache *cache;
    struct arb_sched {      /* schedules planned in this call, by point:
                               clients and candidates at the same point
                               share one (planning is deterministic) */
        uint64_t hash, budget;
        double h2d, d2h;
        plan_schedule *s;   /* owned */
    } *pool;
    size_t n_pool, cap_pool;
    uint32_t plans_made;
    char *err;
    size_t errlen;
} arb;

static double gbps_to_bpus(double g)
{
    return g * 1e3;
}

static const char *client_name(const arb *A, uint32_t i, char *buf,
                               size_t len)
{
    if (A->c[i].name)
        return A->c[i].name;
    snprintf(buf, len, "clients[%u]", i);
    return buf;
}

/* Step 1: capacities and paths.  Capacity of element e (links first, then
 * devices) at cons_base[e] (duplex: H2D there, D2H next). */
static int build_paths(arb *A)
{
    const plan_node *N = A->node;
    uint32_t ne = N->n_links + N->n_devices;
    uint32_t *base = calloc(ne, sizeof(*base));
    A->cons_cap = calloc((size_t)ne * 2, sizeof(*A->cons_cap));
    A->path = calloc((size_t)A->n * 2, sizeof(*A->path));
    if (!base || !A->cons_cap || !A->path) {
        free(base);
        return -ENOMEM;
    }
    uint32_t k = 0;
    for (uint32_t e = 0; e < ne; e++) {
        bool duplex;
        double h, d;
        if (e < N->n_links) {
            duplex = N->links[e].duplex;
            h = N->links[e].h2d_gbps;
            d = N->links[e].d2h_gbps;
        } else {
            const plan_node_device *dv = &N->devices[e - N->n_links];
            duplex = dv->duplex;
            h = dv->h2d_gbps;
            d = dv->d2h_gbps;
        }
        base[e] = k;
        A->cons_cap[k++] = gbps_to_bpus(h);
        if (duplex)
            A->cons_cap[k++] = gbps_to_bpus(d);
    }
    A->n_cons = k;
    for (uint32_t i = 0; i < A->n; i++) {
        const plan_node_device *dv = &N->devices[A->c[i].device];
        for (int dir = 0; dir < 2; dir++) {
            arb_path *p = &A->path[i * 2 + (uint32_t)dir];
            uint32_t e = N->n_links + A->c[i].device;
            bool duplex = dv->duplex;
            double h = dv->h2d_gbps, d = dv->d2h_gbps;
            for (;;) {
                p->cons[p->n] = base[e] + (duplex && dir == D2H ? 1u : 0u);
                p->coef[p->n] = duplex || dir == H2D ? 1.0 : h / d;
                p->n++;
                uint32_t up = e < N->n_links ? N->links[e].parent
                                             : dv->parent;
                if (up == PLAN_NONE || p->n > PLAN_NODE_MAX_DEPTH)
                    break;
                e = up;
                duplex = N->links[e].duplex;
                h = N->links[e].h2d_gbps;
                d = N->links[e].d2h_gbps;
            }
        }
    }
    free(base);
    A->full = malloc((size_t)A->n * 2 * sizeof(*A->full));
    if (!A->full)
        return -ENOMEM;
    for (uint32_t f = 0; f < A->n * 2; f++) {
        const arb_path *p = &A->path[f];
        double r = HUGE_VAL;
        for (uint32_t j = 0; j < p->n; j++)
            if (A->cons_cap[p->cons[j]] / p->coef[j] < r)
                r = A->cons_cap[p->cons[j]] / p->coef[j];
        A->full[f] = r / 1e3;
    }
    return 0;
}

/* -------------------------------------------------------------- planning */

/* Plan client i at (budget, h2d, d2h) GB/s.  Every outcome is memoised
 * (the cache keeps its figures); with ret_sched the schedule is wanted
 * too: one already planned at this point in this call is shared (it stays
 * in A->pool, which owns it).  0, HO_E_INFEASIBLE (*ret_min_budget set
 * when the planner knows it), or another code. */
static int plan_point(arb *A, uint32_t i, uint64_t budget, double h2d,
                      double d2h, const plan_schedule **ret_sched,
                      double *ret_exposed, uint64_t *ret_min_budget)
{
    plan_arb_cache *C = A->cache;
    if (ret_sched)
        for (size_t m = 0; m < A->n_pool; m++) {
            const struct arb_sched *e = &A->pool[m];
            if (e->hash == A->hash[i] && e->budget == budget &&
                e->h2d == h2d && e->d2h == d2h) {
                *ret_sched = e->s;
                *ret_exposed = e->s->predicted.exposed_us;
                return 0;
            }
        }
    else
        for (size_t m = C->n; m-- > 0;) {
            const arb_memo *e = &C->memo[m];
            if (e->hash == A->hash[i] && e->budget == budget &&
                e->h2d == h2d && e->d2h == d2h &&
                strcmp(e->planner, A->popt.planner) == 0) {
                *ret_exposed = e->exposed_us;
                if (ret_min_budget)
                    *ret_min_budget = e->min_budget;
                return e->rc;
            }
        }
    const plan_node_device *dv = &A->node->devices[A->c[i].device];
    plan_trace view = *A->c[i].trace; /* read-only view, another link */
    view.link.h2d_gbps = h2d;
    view.link.d2h_gbps = d2h;
    view.link.latency_us = dv->latency_us;
    view.link.duplex = dv->duplex;
    plan_schedule *s = NULL;
    plan_result res;
    memset(&res, 0, sizeof(res));
    int rc = plan_make(&view, budget, &A->popt, &s, &res);
    A->plans_made++;
    double exposed = HUGE_VAL;
    if (rc == 0 && s->has_predicted &&
        s->predicted.peak_device_bytes <= budget)
        exposed = s->predicted.exposed_us;
    else if (rc == 0)
        rc = HO_E_INFEASIBLE; /* a baseline over budget */
    if (rc != 0 && rc != HO_E_INFEASIBLE) {
        plan_schedule_free(s);
        char nb[32];
        return ho_errf(A->err, A->errlen, rc, "%s: planning failed: %s",
                       client_name(A, i, nb, sizeof(nb)),
                       res.message[0] ? res.message : "planner error");
    }
    if (ret_sched && rc == 0) {
        if (ho_grow((void **)&A->pool, &A->cap_pool, A->n_pool + 1,
                    sizeof(*A->pool), 16, SIZE_MAX / 2) < 0) {
            plan_schedule_free(s);
            return -ENOMEM;
        }
        A->pool[A->n_pool++] = (struct arb_sched){
            .hash = A->hash[i], .budget = budget, .h2d = h2d, .d2h = d2h,
            .s = s};
        *ret_sched = s;
    } else {
        plan_schedule_free(s);
        if (ret_sched)
            *ret_sched = NULL;
    }
    {
        if (C->n >= PLAN_ARB_CACHE_MAX) { /* drop the oldest half */
            size_t keep = C->n / 2;
            memmove(C->memo, C->memo + (C->n - keep),
                    keep * sizeof(*C->memo));
            C->n = keep;
        }
        if (ho_grow((void **)&C->memo, &C->cap, C->n + 1, sizeof(*C->memo),
                    64, PLAN_ARB_CACHE_MAX) < 0)
            return -ENOMEM;
        C->memo[C->n++] = (arb_memo){
            .hash = A->hash[i], .budget = budget, .h2d = h2d, .d2h = d2h,
            .planner = A->popt.planner, .rc = rc, .exposed_us = exposed,
            .min_budget = res.min_budget};
    }
    *ret_exposed = exposed;
    if (ret_min_budget)
        *ret_min_budget = res.min_budget;
    return rc;
}

/* Exposure of client i at (budget, bandwidth); HUGE_VAL when infeasible.
 * Negative on a planner error (the message is set). */
static int exposure(arb *A, uint32_t i, uint64_t budget, double h2d,
                    double d2h, double *ret)
{
    int rc = plan_point(A, i, budget, h2d, d2h, NULL, ret, NULL);
    return rc == HO_E_INFEASIBLE ? 0 : rc;
}

/* ---------------------------------------------------------------- budgets */

/* Fixed budgets must fit their device; returns the free capacity of
 * device d after them in *ret_avail. */
static int device_avail(arb *A, uint32_t d, uint64_t *ret_avail,
                        uint32_t *ret_unfixed)
{
    const plan_node_device *dv = &A->node->devices[d];
    uint64_t cap = dv->hbm_bytes - dv->reserve_bytes, fixed = 0;
    uint32_t unfixed = 0;
    for (uint32_t i = 0; i < A->n; i++) {
        if (A->c[i].device != d)
            continue;
        if (A->c[i].has_budget)
            fixed += A->c[i].budget_bytes;
        else
            unfixed++;
    }
    if (fixed > cap)
        return ho_errf(A->err, A->errlen, HO_E_INFEASIBLE,
                       "device %s: fixed budgets total %llu B, above its "
                       "capacity of %llu B (hbm_bytes - reserve_bytes)",
                       dv->name, (unsigned long long)fixed,
                       (unsigned long long)cap);
    if (unfixed > 0 && fixed == cap)
        return ho_errf(A->err, A->errlen, HO_E_INFEASIBLE,
                       "device %s: fixed budgets take all of its %llu B; "
                       "%u client(s) without a budget get nothing",
                       dv->name, (unsigned long long)cap, unfixed);
    *ret_avail = cap - fixed;
    *ret_unfixed = unfixed;
    return 0;
}

/* independent and equal-share: the free capacity split equally. */
static int budgets_equal(arb *A, uint64_t *budget)
{
    for (uint32_t d = 0; d < A->node->n_devices; d++) {
        uint64_t avail;
        uint32_t unfixed;
        int rc = device_avail(A, d, &avail, &unfixed);
        if (rc < 0)
            return rc;
        for (uint32_t i = 0; i < A->n; i++)
            if (A->c[i].device == d)
                budget[i] = A->c[i].has_budget ? A->c[i].budget_bytes
                                               : avail / unfixed;
    }
    return 0;
}

/* Smallest number of quanta q at which client i is feasible (> K when
 * none is), jumping to the planner's own minimum when it reports one. */
static int min_quanta(arb *A, uint32_t i, uint64_t q, uint32_t K,
                      const double *h2d, const double *d2h,
                      uint32_t *ret_k)
{
    uint32_t k = 1;
    while (k <= K) {
        double e;
        uint64_t minb = 0;
        int rc = plan_point(A, i, q * k, h2d[i], d2h[i], NULL, &e, &minb);
        if (rc == 0)
            break;
        if (rc != HO_E_INFEASIBLE)
            return rc;
        uint64_t jump = minb > q * k ? (minb + q - 1) / q : k + 1;
        k = jump > K ? K + 1 : (uint32_t)(jump > k ? jump : k + 1);
    }
    *ret_k = k;
    return 0;
}

/* arbiter: on each device, quanta go one (or up to 4, to see past a
 * plateau) at a time to the client whose weighted exposure falls most
 * per quantum; leftovers stay unallocated. */
static int budgets_marginal(arb *A, const double *h2d, const double *d2h,
                            uint64_t *budget)
{
    uint32_t *k = calloc(A->n, sizeof(*k));
    if (!k)
        return -ENOMEM;
    int rc = 0;
    for (uint32_t d = 0; d < A->node->n_devices && rc == 0; d++) {
        uint64_t avail;
        uint32_t unfixed;
        if ((rc = device_avail(A, d, &avail, &unfixed)) < 0)
            break;
        for (uint32_t i = 0; i < A->n; i++)
            if (A->c[i].device == d && A->c[i].has_budget)
                budget[i] = A->c[i].budget_bytes;
        if (unfixed == 0)
            continue;
        uint64_t K = (uint64_t)A->points * unfixed;
        if (K > PLAN_ARB_MAX_QUANTA)
            K = PLAN_ARB_MAX_QUANTA;
        if (K > avail)
            K = avail;
        uint64_t q = avail / K;
        uint64_t used = 0;
        for (uint32_t i = 0; i < A->n && rc == 0; i++) {
            if (A->c[i].device != d || A->c[i].has_budget)
                continue;
            rc = min_quanta(A, i, q, (uint32_t)K, h2d, d2h, &k[i]);
            used += k[i];
        }
        if (rc < 0)
            break;
        if (used > K) {
            char list[512] = "", nb[32];
            size_t off = 0;
            for (uint32_t i = 0; i < A->n; i++)
                if (A->c[i].device == d && !A->c[i].has_budget &&
                    off < sizeof(list))
                    off += (size_t)snprintf(
                        list + off, sizeof(list) - off, "%s%s %s",
                        off ? ", " : "", client_name(A, i, nb, sizeof(nb)),
                        k[i] > K ? "infeasible"
                                 : "feasible from its share");
            rc = ho_errf(A->err, A->errlen, HO_E_INFEASIBLE,
                         "device %s: its %llu B cannot hold every client "
                         "at a feasible budget (%s)",
                         A->node->devices[d].name,
                         (unsigned long long)avail, list);
            break;
        }
        uint64_t left = K - used;
        while (left > 0 && rc == 0) {
            double best = 0;
            uint32_t bi = PLAN_NONE, bj = 0;
            for (uint32_t i = 0; i < A->n && rc == 0; i++) {
                if (A->c[i].device != d || A->c[i].has_budget)
                    continue;
                double e0, e1;
                if ((rc = exposure(A, i, q * k[i], h2d[i], d2h[i], &e0)))
                    break;
                if (e0 <= 0)
                    continue;
                for (uint32_t j = 1; j <= 4 && j <= left; j++) {
                    if ((rc = exposure(A, i, q * (k[i] + j), h2d[i],
                                       d2h[i], &e1)))
                        break;
                    double g = A->c[i].weight * (e0 - e1) / j;
                    if (g > best * (1 + 1e-9) + 1e-9) {
                        best = g;
                        bi = i;
                        bj = j;
                    }
                }
            }
            if (rc < 0 || bi == PLAN_NONE)
                break;
            k[bi] += bj;
            left -= bj;
        }
        for (uint32_t i = 0; i < A->n; i++)
            if (A->c[i].device == d && !A->c[i].has_budget)
                budget[i] = q * k[i];
    }
    free(k);
    return rc;
}

/* -------------------------------------------------------------- bandwidth */

static double device_full(const arb *A, uint32_t i, int dir)
{
    return A->full[i * 2 + (uint32_t)dir];
}

/* independent: each client what it sees alone. */
static void bw_full(const arb *A, double *h2d, double *d2h)
{
    for (uint32_t i = 0; i < A->n; i++) {
        h2d[i] = device_full(A, i, H2D);
        d2h[i] = device_full(A, i, D2H);
    }
}

/* equal-share: each capacity split equally among the clients crossing it;
 * a client is planned for the least of its shares along its path (and
 * never above its device's figure). */
static int bw_equal(const arb *A, double *h2d, double *d2h)
{
    uint32_t *cnt = calloc(A->n_cons, sizeof(*cnt));
    uint32_t *seen = calloc(A->n_cons, sizeof(*seen));
    if (!cnt || !seen) {
        free(cnt);
        free(seen);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < A->n; i++)
        for (int dir = 0; dir < 2; dir++) {
            const arb_path *p = &A->path[i * 2 + (uint32_t)dir];
            for (uint32_t k = 0; k < p->n; k++)
                if (seen[p->cons[k]] != i + 1) { /* count a client once */
                    seen[p->cons[k]] = i + 1;
                    cnt[p->cons[k]]++;
                }
        }
    for (uint32_t i = 0; i < A->n; i++)
        for (int dir = 0; dir < 2; dir++) {
            const arb_path *p = &A->path[i * 2 + (uint32_t)dir];
            double r = gbps_to_bpus(device_full(A, i, dir));
            for (uint32_t k = 0; k < p->n; k++) {
                double share =
                    A->cons_cap[p->cons[k]] / cnt[p->cons[k]] / p->coef[k];
                if (share < r)
                    r = share;
            }
            (dir == H2D ? h2d : d2h)[i] = r / 1e3;
        }
    free(cnt);
    free(seen);
    return 0;
}

/* arbiter: weighted max-min fair shares with demands.  Client i runs at a
 * fraction a_i of what it sees alone in both directions; its load on a
 * capacity is a_i times its full rate there (both directions add on a
 * capacity they share).  Every a_i rises as weight * t until it reaches
 * its demand or a capacity it crosses is full (progressive filling). */
static int bw_maxmin(const arb *A, const double *demand, double *h2d,
                     double *d2h)
{
    double *resid = malloc(A->n_cons * sizeof(*resid));
    double *wsum = malloc(A->n_cons * sizeof(*wsum));
    double *a = calloc(A->n, sizeof(*a));
    bool *frozen = calloc(A->n, sizeof(*frozen));
    if (!resid || !wsum || !a || !frozen) {
        free(resid);
        free(wsum);
        free(a);
        free(frozen);
        return -ENOMEM;
    }
    memcpy(resid, A->cons_cap, A->n_cons * sizeof(*resid));
    uint32_t active = A->n;
    for (int round = 0; active > 0 && round < (int)(A->n + A->n_cons + 1);
         round++) {
        for (uint32_t k = 0; k < A->n_cons; k++)
            wsum[k] = 0;
        for (uint32_t i = 0; i < A->n; i++) {
            if (frozen[i])
                continue;
            for (int dir = 0; dir < 2; dir++) {
                const arb_path *p = &A->path[i * 2 + (uint32_t)dir];
                double full = gbps_to_bpus(device_full(A, i, dir));
                for (uint32_t k = 0; k < p->n; k++)
                    wsum[p->cons[k]] += A->c[i].weight * full * p->coef[k];
            }
        }
        double dt = HUGE_VAL;
        for (uint32_t k = 0; k < A->n_cons; k++)
            if (wsum[k] > 0 && resid[k] / wsum[k] < dt)
                dt = resid[k] / wsum[k];
        for (uint32_t i = 0; i < A->n; i++)
            if (!frozen[i] && (demand[i] - a[i]) / A->c[i].weight < dt)
                dt = (demand[i] - a[i]) / A->c[i].weight;
        if (dt < 0)
            dt = 0;
        for (uint32_t i = 0; i < A->n; i++) {
            if (frozen[i])
                continue;
            double da = A->c[i].weight * dt;
            a[i] += da;
            for (int dir = 0; dir < 2; dir++) {
                const arb_path *p = &A->path[i * 2 + (uint32_t)dir];
                double full = gbps_to_bpus(device_full(A, i, dir));
                for (uint32_t k = 0; k < p->n; k++)
                    resid[p->cons[k]] -= da * full * p->coef[k];
            }
        }
        for (uint32_t i = 0; i < A->n; i++) {
            if (frozen[i])
                continue;
            bool stop = a[i] >= demand[i] * (1 - 1e-12);
            for (int dir = 0; dir < 2 && !stop; dir++) {
                const arb_path *p = &A->path[i * 2 + (uint32_t)dir];
                for (uint32_t k = 0; k < p->n && !stop; k++)
                    stop = resid[p->cons[k]] <=
                           1e-9 * A->cons_cap[p->cons[k]];
            }
            if (stop) {
                frozen[i] = true;
                active--;
            }
        }
    }
    for (uint32_t i = 0; i < A->n; i++) {
        double f = a[i] > 1e-6 ? (a[i] < 1 ? a[i] : 1) : 1e-6;
        h2d[i] = f * device_full(A, i, H2D);
        d2h[i] = f * device_full(A, i, D2H);
    }
    free(resid);
    free(wsum);
    free(a);
    free(frozen);
    return 0;
}

/* Demand of client i at its budget: the least fraction of its device's
 * figures (in eighths) whose exposure is within a tolerance of the full
 * figures' (binary search: exposure falls as bandwidth grows). */
static int demand_of(arb *A, uint32_t i, uint64_t budget, double *ret)
{
    double fh = device_full(A, i, H2D), fd = device_full(A, i, D2H), e1;
    int rc = exposure(A, i, budget, fh, fd, &e1);
    if (rc < 0)
        return rc;
    *ret = 1;
    if (!isfinite(e1))
        return 0;
    double tol = fmax(1.0, 1e-3 * A->compute_us[i]);
    int lo = 1, hi = 8; /* eighths; hi is known good */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        double e;
        if ((rc = exposure(A, i, budget, fh * mid / 8, fd * mid / 8, &e)))
            return rc;
        if (e <= e1 + tol)
            hi = mid;
        else
            lo = mid + 1;
    }
    *ret = hi / 8.0;
    return 0;
}

/* ------------------------------------------------------------ candidates */

static int candidate(arb *A, plan_arb_strategy s, arb_plan *P)
{
    int rc;
    switch (s) {
    case PLAN_ARB_INDEPENDENT:
        bw_full(A, P->h2d, P->d2h);
        return budgets_equal(A, P->budget);
    case PLAN_ARB_EQUAL_SHARE:
        if ((rc = bw_equal(A, P->h2d, P->d2h)) < 0)
            return rc;
        return budgets_equal(A, P->budget);
    case PLAN_ARB_ARBITER:
    default:
        break;
    }
    double *demand = malloc(A->n * sizeof(*demand));
    if (!demand)
        return -ENOMEM;
    rc = bw_equal(A, P->h2d, P->d2h);
    if (rc == 0)
        rc = budgets_marginal(A, P->h2d, P->d2h, P->budget);
    for (uint32_t i = 0; i < A->n && rc == 0; i++)
        rc = demand_of(A, i, P->budget[i], &demand[i]);
    if (rc == 0)
        rc = bw_maxmin(A, demand, P->h2d, P->d2h);
    if (rc == 0)
        rc = budgets_marginal(A, P->h2d, P->d2h, P->budget);
    free(demand);
    return rc;
}

/* Plan and judge one candidate.  On success the schedules are in scheds
 * (borrowed from A->pool) and *ret_judged is set; an invalid candidate
 * returns 0 with o->valid false and o->why. */
static int judge_candidate(arb *A, const arb_plan *P, plan_arb_outcome *o,
                           const plan_schedule **scheds,
                           plan_node_result **ret_judged)
{
    o->tried = true;
    o->valid = false;
    *ret_judged = NULL;
    for (uint32_t i = 0; i < A->n; i++) {
        double e;
        int rc = plan_point(A, i, P->budget[i], P->h2d[i], P->d2h[i],
                            &scheds[i], &e, NULL);
        if (rc == HO_E_INFEASIBLE) {
            char nb[32];
            snprintf(o->why, sizeof(o->why),
                     "%s: no schedule within %llu B at %.3g/%.3g GB/s",
                     client_name(A, i, nb, sizeof(nb)),
                     (unsigned long long)P->budget[i], P->h2d[i],
                     P->d2h[i]);
            return 0;
        }
        if (rc < 0)
            return rc;
    }
    plan_node_input *in = calloc(A->n, sizeof(*in));
    if (!in)
        return -ENOMEM;
    for (uint32_t i = 0; i < A->n; i++)
        in[i] = (plan_node_input){
            .name = A->c[i].name, .trace = A->c[i].trace,
            .schedule = scheds[i], .device = A->c[i].device,
            .budget_bytes = P->budget[i], .weight = A->c[i].weight,
            .sync = A->c[i].sync};
    plan_node_opts nopt = {.steps = A->steps};
    plan_node_violation v;
    memset(&v, 0, sizeof(v));
    plan_node_result *r = NULL;
    int rc = plan_node_judge(A->node, in, A->n, &nopt, &r, &v);
    free(in);
    if (rc == HO_E_BAD_SCHEDULE) {
        snprintf(o->why, sizeof(o->why), "node judge: %s", v.message);
        return 0;
    }
    if (rc < 0)
        return ho_errf(A->err, A->errlen, rc, "node judge failed");
    o->valid = true;
    o->weighted_exposed_us = r->weighted_exposed_us;
    o->max_slowdown = r->max_slowdown;
    o->alloc_wait_us = r->alloc_wait_us;
    o->bytes_moved = 0;
    for (uint32_t i = 0; i < A->n; i++)
        o->bytes_moved += r->clients[i].h2d_bytes + r->clients[i].d2h_bytes;
    *ret_judged = r;
    return 0;
}

/* a better than b: valid; no allocation wait; lower weighted exposure
 * (relative 1e-9); fewer bytes. */
static bool better(const plan_arb_outcome *a, const plan_arb_outcome *b)
{
    if (a->valid != b->valid)
        return a->valid;
    if ((a->alloc_wait_us > 0) != (b->alloc_wait_us > 0))
        return a->alloc_wait_us <= 0;
    double tol = 1e-9 * fmax(1.0, fmax(a->weighted_exposed_us,
                                       b->weighted_exposed_us));
    if (a->weighted_exposed_us < b->weighted_exposed_us - tol)
        return true;
    if (a->weighted_exposed_us > b->weighted_exposed_us + tol)
        return false;
    return a->bytes_moved < b->bytes_moved;
}

/* DDR limits from the judged host peaks: each its need plus a weighted
 * share of the rest; when the needs exceed the pool, in proportion to
 * need (the rest is staged on flash). */
static void ddr_limits(const arb *A, const plan_node_result *r,
                       plan_arb_choice *ch)
{
    double need = 0, w = 0;
    for (uint32_t i = 0; i < A->n; i++) {
        need += (double)r->clients[i].peak_host_bytes;
        w += A->c[i].weight;
    }
    double pool = (double)A->node->ddr_bytes;
    for (uint32_t i = 0; i < A->n; i++) {
        double ni = (double)r->clients[i].peak_host_bytes, v;
        if (pool <= 0)
            v = ni;
        else if (need <= pool)
            v = ni + (pool - need) * A->c[i].weight / w;
        else
            v = pool * (need > 0 ? ni / need : 0);
        ch[i].ddr_limit_bytes = (uint64_t)v;
    }
}

/* ------------------------------------------------------------------- API */

plan_arb_result *plan_arb_result_free(plan_arb_result *r)
{
    if (!r)
        return NULL;
    for (size_t i = 0; i < r->n_schedules; i++)
        plan_schedule_free(r->schedules[i]);
    free(r->schedules);
    free(r->clients);
    plan_node_result_free(r->judged);
    free(r);
    return NULL;
}

static int check_input(const plan_node *node, const plan_arb_client *c,
                       uint32_t n, char *err, size_t errlen)
{
    if (!node || !node->finished)
        return ho_errf(err, errlen, -EINVAL, "the node is not finished");
    if (n == 0 || n > PLAN_NODE_MAX_CLIENTS)
        return ho_errf(err, errlen, -EINVAL,
                       "%u clients: 1 to %u are accepted", n,
                       PLAN_NODE_MAX_CLIENTS);
    for (uint32_t i = 0; i < n; i++) {
        if (!c[i].trace || !c[i].trace->finished)
            return ho_errf(err, errlen, -EINVAL,
                           "clients[%u]: trace missing or not finished", i);
        if (c[i].device >= node->n_devices)
            return ho_errf(err, errlen, -EINVAL,
                           "clients[%u]: device index %u out of range", i,
                           c[i].device);
        if (!(c[i].weight > 0))
            return ho_errf(err, errlen, -EINVAL,
                           "clients[%u]: weight must be positive", i);
        if (c[i].sync != PLAN_NONE && c[i].sync >= n)
            return ho_errf(err, errlen, -EINVAL,
                           "clients[%u]: sync group %u out of range", i,
                           c[i].sync);
    }
    return 0;
}

static void arb_done(arb *A)
{
    free(A->hash);
    free(A->compute_us);
    free(A->cons_cap);
    free(A->path);
    free(A->full);
    free(A->own.memo);
    for (size_t i = 0; i < A->n_pool; i++)
        plan_schedule_free(A->pool[i].s);
    free(A->pool);
}

int plan_node_arbitrate(const plan_node *node, const plan_arb_client *c,
                        uint32_t n, plan_arb_strategy s,
                        const plan_arb_opts *opts, plan_arb_result **ret,
                        char *err, size_t errlen)
{
    int rc = check_input(node, c, n, err, errlen);
    if (rc < 0)
        return rc;
    if ((unsigned)s >= PLAN_ARB__COUNT)
        return ho_errf(err, errlen, -EINVAL, "unknown strategy %d", (int)s);
    arb A = {.node = node, .c = c, .n = n, .err = err, .errlen = errlen};
    A.popt.planner = NULL; /* one of plan_planner_names: the cache keeps it */
    for (size_t k = 0; plan_planner_names[k]; k++)
        if (strcmp(plan_planner_names[k],
                   opts && opts->planner ? opts->planner : "hoplan") == 0)
            A.popt.planner = plan_planner_names[k];
    if (!A.popt.planner)
        return ho_errf(err, errlen, -EINVAL, "unknown planner '%s'",
                       opts->planner);
    A.points = opts && opts->points ? opts->points : PLAN_ARB_DEFAULT_POINTS;
    if (A.points > PLAN_ARB_MAX_POINTS)
        A.points = PLAN_ARB_MAX_POINTS;
    A.steps = opts ? opts->steps : 0;
    A.cache = opts && opts->cache ? opts->cache : &A.own;
    A.hash = calloc(n, sizeof(*A.hash));
    A.compute_us = calloc(n, sizeof(*A.compute_us));
    plan_arb_result *R = calloc(1, sizeof(*R));
    uint64_t *buf_b = calloc((size_t)n * PLAN_ARB__COUNT, sizeof(*buf_b));
    double *buf_h = calloc((size_t)n * PLAN_ARB__COUNT * 2, sizeof(*buf_h));
    const plan_schedule **best_s = NULL, **try_s = NULL;
    plan_node_result *best_r = NULL;
    if (!A.hash || !A.compute_us || !R || !buf_b || !buf_h) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        A.hash[i] = plan_trace_hash(c[i].trace);
        for (uint32_t o = 0; o < c[i].trace->n_ops; o++)
            A.compute_us[i] += c[i].trace->ops[o].duration_us;
    }
    if ((rc = build_paths(&A)) < 0)
        goto out;
    R->asked = s;
    int best = -1;
    for (int k = 0; k < PLAN_ARB__COUNT; k++) {
        if (s != PLAN_ARB_ARBITER && k != (int)s)
            continue;
        arb_plan P = {.budget = buf_b + (size_t)k * n,
                      .h2d = buf_h + (size_t)k * 2 * n,
                      .d2h = buf_h + (size_t)k * 2 * n + n};
        rc = candidate(&A, (plan_arb_strategy)k, &P);
        plan_arb_outcome *o = &R->outcomes[k];
        if (rc == HO_E_INFEASIBLE && s == PLAN_ARB_ARBITER &&
            k != PLAN_ARB_ARBITER) {
            /* a baseline that cannot be planned is only a lost candidate */
            o->tried = true;
            snprintf(o->why, sizeof(o->why), "%s", err);
            continue;
        }
        if (rc < 0)
            goto out;
        try_s = calloc(n, sizeof(*try_s));
        if (!try_s) {
            rc = -ENOMEM;
            goto out;
        }
        plan_node_result *r = NULL;
        if ((rc = judge_candidate(&A, &P, o, try_s, &r)) < 0)
            goto out;
        /* The arbiter's shares also planned for less than they give (3/4,
         * 1/2): a plan made for a slower link leaves more slack to the
         * rates contention really gives; the judge keeps the best. */
        for (int v = 1; k == PLAN_ARB_ARBITER && o->valid && v <= 2; v++) {
            const double f = v == 1 ? 0.75 : 0.5;
            double *qh = malloc(2 * (size_t)n * sizeof(*qh));
            const plan_schedule **qs = calloc(n, sizeof(*qs));
            if (!qh || !qs) {
                free(qh);
                free(qs);
                plan_node_result_free(r);
                rc = -ENOMEM;
                goto out;
            }
            arb_plan Q = {.budget = P.budget, .h2d = qh, .d2h = qh + n};
            for (uint32_t i = 0; i < n; i++) {
                Q.h2d[i] = P.h2d[i] * f;
                Q.d2h[i] = P.d2h[i] * f;
            }
            plan_arb_outcome oq;
            memset(&oq, 0, sizeof(oq));
            plan_node_result *rq = NULL;
            if ((rc = judge_candidate(&A, &Q, &oq, qs, &rq)) < 0) {
                free(qh);
                free(qs);
                plan_node_result_free(r);
                goto out;
            }
            if (oq.valid && better(&oq, o)) {
                memcpy(P.h2d, Q.h2d, n * sizeof(*P.h2d));
                memcpy(P.d2h, Q.d2h, n * sizeof(*P.d2h));
                *o = oq;
                free(try_s);
                plan_node_result_free(r);
                try_s = qs;
                r = rq;
            } else {
                free(qs);
                plan_node_result_free(rq);
            }
            free(qh);
        }
        if (o->valid && (best < 0 || better(o, &R->outcomes[best]))) {
            free(best_s);
            plan_node_result_free(best_r);
            best_s = try_s;
            best_r = r;
            best = k;
        } else {
            free(try_s);
            plan_node_result_free(r);
        }
        try_s = NULL;
    }
    if (best < 0) {
        const plan_arb_outcome *o = &R->outcomes[s == PLAN_ARB_ARBITER
                                                     ? PLAN_ARB_ARBITER
                                                     : s];
        rc = ho_errf(err, errlen, o->why[0] ? HO_E_BAD_SCHEDULE
                                            : HO_E_INFEASIBLE,
                     "no valid plan for the node: %s",
                     o->why[0] ? o->why : "every candidate failed");
        goto out;
    }
    R->chosen = (plan_arb_strategy)best;
    R->n = n;
    R->clients = calloc(n, sizeof(*R->clients));
    R->schedules = calloc(A.n_pool ? A.n_pool : 1, sizeof(*R->schedules));
    if (!R->clients || !R->schedules) {
        rc = -ENOMEM;
        goto out;
    }
    /* the result keeps the chosen candidate's schedules, the rest go */
    for (size_t m = 0; m < A.n_pool; m++) {
        bool used = false;
        for (uint32_t i = 0; i < n && !used; i++)
            used = best_s[i] == A.pool[m].s;
        if (used) {
            R->schedules[R->n_schedules++] = A.pool[m].s;
            A.pool[m].s = NULL;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        plan_arb_choice *ch = &R->clients[i];
        ch->budget_bytes = buf_b[(size_t)best * n + i];
        ch->h2d_gbps = buf_h[(size_t)best * 2 * n + i];
        ch->d2h_gbps = buf_h[(size_t)best * 2 * n + n + i];
        ch->schedule = best_s[i];
        ch->predicted = (plan_wl_predicted){
            .step_time_us = best_r->clients[i].step_time_us,
            .exposed_us = best_r->clients[i].exposed_us,
            .alloc_wait_us = best_r->clients[i].alloc_wait_us};
    }
    ddr_limits(&A, best_r, R->clients);
    R->judged = best_r;
    best_r = NULL;
    R->plans_made = A.plans_made;
    *ret = R;
    R = NULL;
    rc = 0;
out:
    free(best_s);
    free(try_s);
    plan_node_result_free(best_r);
    plan_arb_result_free(R);
    free(buf_b);
    free(buf_h);
    arb_done(&A);
    return rc;
}
