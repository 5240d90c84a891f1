/*
 * planner/curve.c - plan_curve_budgets / plan_curve_bandwidths (curve.h):
 * the points visited tightest first, each planned (or skipped once the
 * optimum is reached) and compared with the schedules of the earlier
 * points judged there; the best kept.
 */
#include "planner/curve.h"

#include "planner/plan_enum.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"

static const char *const axis_names[PLAN_CURVE__COUNT] = {"budget",
                                                          "bandwidth"};

PLAN_ENUM_NAMES(plan_curve_axis, plan_curve_axis_name, plan_curve_axis_parse,
                axis_names, PLAN_CURVE__COUNT)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

plan_curve *plan_curve_free(plan_curve *c)
{
    if (!c)
        return NULL;
    for (uint32_t i = 0; i < c->n_points; i++)
        plan_schedule_free(c->points[i].s);
    free(c->points);
    free(c);
    return NULL;
}

/* A malloc'ed copy of n elements (NULL for n == 0 or on OOM). */
static void *dup_array(const void *src, size_t n, size_t elem)
{
    void *d = n ? malloc(n * elem) : NULL;
    if (d)
        memcpy(d, src, n * elem);
    return d;
}

/* A deep copy of s with another budget and predicted figures; NULL on
 * OOM. */
static plan_schedule *clone_at(const plan_schedule *s, uint64_t budget,
                               const plan_metrics *m)
{
    plan_schedule *c = plan_schedule_new(s->planner, budget);
    if (!c)
        return NULL;
    c->actions = dup_array(s->actions, s->n_actions, sizeof(*s->actions));
    c->homes = dup_array(s->homes, s->n_homes, sizeof(*s->homes));
    if ((s->n_actions && !c->actions) || (s->n_homes && !c->homes))
        return plan_schedule_free(c);
    c->n_actions = c->cap_actions = s->n_actions;
    c->n_homes = c->cap_homes = s->n_homes;
    c->has_predicted = true;
    c->predicted = *m;
    return c;
}

/* Valid within `budget` on view's link: 0 and *m. */
static int judge_at(const plan_trace *view, const plan_schedule *s,
                    uint64_t budget, plan_metrics *m)
{
    plan_schedule c = *s;
    plan_violation v;
    c.budget_bytes = budget;
    return plan_simulate(view, &c, m, &v, NULL);
}

/* a strictly better than b: less exposed, then fewer bytes moved. */
static bool better(const plan_metrics *a, const plan_metrics *b)
{
    if (a->exposed_us != b->exposed_us)
        return a->exposed_us < b->exposed_us;
    return a->h2d_bytes + a->d2h_bytes < b->h2d_bytes + b->d2h_bytes;
}

/* Input order sorted by the axis value (stable). */
typedef struct order_key {
    double v;
    uint32_t i;
} order_key;

static int cmp_key(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Schedules the planner returned, in visiting order (owned). */
typedef struct cand {
    plan_schedule *s;
    uint32_t origin; /* input index */
    bool valid;      /* budget axis: valid on the trace's link at any
                        budget, with these figures (they do not depend on
                        the budget) */
    plan_metrics m;
} cand;

typedef struct curve_ctx {
    const plan_trace *t;
    plan_options opt;
    plan_curve *c;
    cand *cands;
    uint32_t n_cands;
    uint64_t forced_bytes; /* bytes `none` moves (no movable storages) */
    bool have_forced;
    char *err;
    size_t errlen;
} curve_ctx;

/* Nothing better than m exists: nothing exposed and no more bytes than
 * any valid schedule must move (the `none` schedule's, when no storage is
 * movable; 0 otherwise). */
static int at_optimum(curve_ctx *X, const plan_metrics *m, bool *ret)
{
    *ret = false;
    if (m->exposed_us > 0)
        return 0;
    uint64_t moved = m->h2d_bytes + m->d2h_bytes;
    if (moved == 0) {
        *ret = true;
        return 0;
    }
    if (!X->have_forced) {
        plan_trace_summary sm;
        int r = plan_trace_summarize(X->t, &sm);
        if (r < 0)
            return r;
        X->have_forced = true;
        X->forced_bytes = 0;
        if (sm.n_movable == 0) {
            plan_options o = X->opt;
            o.planner = "none";
            plan_schedule *s = NULL;
            plan_result res;
            r = plan_make(X->t, UINT64_MAX, &o, &s, &res);
            if (r == 0)
                X->forced_bytes = s->predicted.h2d_bytes +
                                  s->predicted.d2h_bytes;
            plan_schedule_free(s);
            if (r < 0 && r != HO_E_INFEASIBLE)
                return r;
        }
    }
    *ret = moved <= X->forced_bytes;
    return 0;
}

/* Point `pi` (input index) at `view`: plan unless `prev` (the point
 * visited before, or NULL) is already optimal, then keep the best of the
 * new schedule and the earlier ones judged here. */
static int visit(curve_ctx *X, uint32_t pi, const plan_trace *view,
                 const plan_curve_point *prev)
{
    plan_curve_point *p = &X->c->points[pi];
    bool skip = false;
    int r;
    if (prev && prev->rc == 0 && (r = at_optimum(X, &prev->m, &skip)) < 0)
        return r;
    if (!skip) {
        plan_schedule *s = NULL;
        plan_result res;
        memset(&res, 0, sizeof(res));
        r = plan_make(view, p->budget, &X->opt, &s, &res);
        X->c->plans_made++;
        p->planned = true;
        p->planner_rc = r;
        p->planning_ms = res.planning_ms;
        p->min_budget = res.min_budget;
        p->device_floor = res.device_floor;
        if (!X->c->no_offload_peak)
            X->c->no_offload_peak = res.no_offload_peak;
        memcpy(p->message, res.message, sizeof(p->message));
        if (r < 0 && r != HO_E_INFEASIBLE)
            return ho_errf(X->err, X->errlen, r, "curve point %u (budget "
                           "%llu B, link x%g): %s", pi,
                           (unsigned long long)p->budget, p->scale,
                           res.message[0] ? res.message
                                          : ho_strerror(r));
        if (r == 0) {
            cand *cd = &X->cands[X->n_cands++];
            *cd = (cand){s, pi, false, {0}};
            if (X->c->axis == PLAN_CURVE_BUDGET)
                cd->valid = judge_at(view, s, UINT64_MAX, &cd->m) == 0;
        } else
            plan_schedule_free(s);
    }
    /* The best valid schedule here, earliest origin first on ties. */
    double t0 = now_ms();
    const cand *best = NULL;
    plan_metrics bm;
    memset(&bm, 0, sizeof(bm));
    for (uint32_t k = 0; k < X->n_cands; k++) {
        const cand *cd = &X->cands[k];
        plan_metrics m;
        if (X->c->axis == PLAN_CURVE_BUDGET) {
            /* the same link: the figures are the candidate's own, only
             * the budget test differs */
            if (!cd->valid || cd->m.peak_device_bytes > p->budget)
                continue;
            m = cd->m;
        } else if (judge_at(view, cd->s, p->budget, &m) != 0) {
            continue;
        }
        if (!best || better(&m, &bm)) {
            best = cd;
            bm = m;
        }
    }
    p->judge_ms = now_ms() - t0;
    if (!best) {
        p->rc = HO_E_INFEASIBLE;
        p->from = PLAN_NONE;
        return 0;
    }
    p->s = clone_at(best->s, p->budget, &bm);
    if (!p->s)
        return ho_errf(X->err, X->errlen, -ENOMEM, "out of memory");
    p->rc = 0;
    p->m = bm;
    p->from = best->origin;
    X->c->reused += best->origin != pi;
    return 0;
}

/* The common driver: points already hold budget, scale and link. */
static int run_curve(const plan_trace *t, plan_curve *c,
                     const plan_options *opt, char *err, size_t errlen)
{
    double t0 = now_ms();
    order_key *ord = calloc(c->n_points, sizeof(*ord));
    curve_ctx X;
    memset(&X, 0, sizeof(X));
    X.t = t;
    if (opt)
        X.opt = *opt;
    if (!X.opt.planner)
        X.opt.planner = "hoplan";
    snprintf(c->planner, sizeof(c->planner), "%s", X.opt.planner);
    X.c = c;
    X.err = err;
    X.errlen = errlen;
    X.cands = calloc(c->n_points, sizeof(*X.cands));
    int r = 0;
    if (!ord || !X.cands) {
        r = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < c->n_points; i++)
        ord[i] = (order_key){c->axis == PLAN_CURVE_BUDGET
                                 ? (double)c->points[i].budget
                                 : c->points[i].scale,
                             i};
    qsort(ord, c->n_points, sizeof(*ord), cmp_key);
    const plan_curve_point *prev = NULL;
    for (uint32_t k = 0; k < c->n_points && r == 0; k++) {
        plan_curve_point *p = &c->points[ord[k].i];
        plan_trace view = *t; /* read-only view with the point's link */
        view.link = p->link;
        r = visit(&X, ord[k].i, &view, prev);
        prev = p;
    }
    /* Monotone: exposure non-increasing over the visiting order, and no
     * infeasible point after a feasible one. */
    c->monotone = true;
    const plan_curve_point *last = NULL;
    for (uint32_t k = 0; k < c->n_points && r == 0; k++) {
        const plan_curve_point *p = &c->points[ord[k].i];
        if (p->rc != 0) {
            if (last)
                c->monotone = false;
            continue;
        }
        if (last && p->m.exposed_us > last->m.exposed_us)
            c->monotone = false;
        last = p;
    }
out:
    for (uint32_t k = 0; k < X.n_cands; k++)
        plan_schedule_free(X.cands[k].s);
    free(X.cands);
    free(ord);
    c->total_ms = now_ms() - t0;
    return r;
}

static int curve_new(const plan_trace *t, plan_curve_axis axis, uint32_t n,
                     plan_curve **ret, char *err, size_t errlen)
{
    if (!t || !t->finished || !ret)
        return ho_errf(err, errlen, -EINVAL,
                       "curve: a finished trace is needed");
    if (n == 0 || n > PLAN_CURVE_MAX_POINTS)
        return ho_errf(err, errlen, -EINVAL, "curve: %u points; between 1 "
                       "and %u are allowed", n, PLAN_CURVE_MAX_POINTS);
    plan_curve *c = calloc(1, sizeof(*c));
    if (c)
        c->points = calloc(n, sizeof(*c->points));
    if (!c || !c->points) {
        free(c);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    c->axis = axis;
    c->n_points = n;
    *ret = c;
    return 0;
}

/* Run and hand over, or free. */
static int finish(const plan_trace *t, plan_curve *c, const plan_options *opt,
                  plan_curve **ret, char *err, size_t errlen)
{
    int r = run_curve(t, c, opt, err, errlen);
    if (r < 0) {
        plan_curve_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int plan_curve_budgets(const plan_trace *t, const uint64_t *budgets,
                       uint32_t n, const plan_options *opt,
                       plan_curve **ret, char *err, size_t errlen)
{
    plan_curve *c = NULL;
    int r = curve_new(t, PLAN_CURVE_BUDGET, n, &c, err, errlen);
    if (r < 0)
        return r;
    for (uint32_t i = 0; i < n; i++) {
        if (!budgets || budgets[i] == 0) {
            plan_curve_free(c);
            return ho_errf(err, errlen, -EINVAL,
                           "curve: budget %u is 0", i);
        }
        c->points[i].budget = budgets[i];
        c->points[i].scale = 1.0;
        c->points[i].link = t->link;
    }
    return finish(t, c, opt, ret, err, errlen);
}

int plan_curve_bandwidths(const plan_trace *t, uint64_t budget,
                          const double *scales, uint32_t n,
                          const plan_options *opt, plan_curve **ret,
                          char *err, size_t errlen)
{
    plan_curve *c = NULL;
    if (budget == 0)
        return ho_errf(err, errlen, -EINVAL, "curve: the budget is 0");
    int r = curve_new(t, PLAN_CURVE_BANDWIDTH, n, &c, err, errlen);
    if (r < 0)
        return r;
    for (uint32_t i = 0; i < n; i++) {
        double s = scales ? scales[i] : NAN;
        if (!isfinite(s) || s < PLAN_CURVE_MIN_SCALE ||
            s > PLAN_CURVE_MAX_SCALE) {
            plan_curve_free(c);
            return ho_errf(err, errlen, -EINVAL, "curve: bandwidth scale %u "
                           "(%g) is outside [%g, %g]", i, s,
                           PLAN_CURVE_MIN_SCALE, PLAN_CURVE_MAX_SCALE);
        }
        plan_curve_point *p = &c->points[i];
        p->budget = budget;
        p->scale = s;
        p->link = t->link;
        p->link.h2d_gbps *= s;
        p->link.d2h_gbps *= s;
    }
    return finish(t, c, opt, ret, err, errlen);
}
