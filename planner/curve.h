/*
 * planner/curve.h - one trace planned at many budgets or many link
 * bandwidths (library ho_plan, planner/curve.c): the exposure curves the
 * node arbiter and `hoctl plan --curve` read.
 *
 * Monotone by construction.  Points are visited from the tightest (the
 * smallest budget, the slowest link) to the loosest.  At each point the
 * planner runs (unless the previous point already reached the best any
 * schedule can: nothing exposed and no more bytes moved than the trace
 * forces), and every schedule planned at an earlier point is judged again
 * at this one with plan_simulate (at the point's budget and link); the
 * best valid one is kept (least exposed, then fewest bytes, then the
 * earliest point's).  A schedule within a budget is within every larger
 * one with the same timing, so along budgets the exposure of the points
 * kept never rises.  Along bandwidths a schedule judged at a faster link
 * runs no later (the judge is a max-plus system in copy durations), but
 * its peak may move, so it is judged, not assumed; `monotone` says
 * whether the curve came out non-increasing (docs/planner.md "Curves").
 *
 * Pure computation, deterministic; the caller owns the curve.
 */
#ifndef HO_PLANNER_CURVE_H
#define HO_PLANNER_CURVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most points of one curve: the arbiter samples 16-64; each point may
 * keep a schedule as large as the trace's. */
#define PLAN_CURVE_MAX_POINTS 256u
/* Bandwidth scales accepted (the point's link = the trace's x scale). */
#define PLAN_CURVE_MIN_SCALE 1e-6
#define PLAN_CURVE_MAX_SCALE 1e6

typedef enum plan_curve_axis {
    PLAN_CURVE_BUDGET = 0,    /* budgets vary, the trace's link */
    PLAN_CURVE_BANDWIDTH,     /* link bandwidths vary, one budget */
    PLAN_CURVE__COUNT
} plan_curve_axis;

const char *plan_curve_axis_name(plan_curve_axis a); /* "budget", ... */
int plan_curve_axis_parse(const char *s, plan_curve_axis *ret); /* -EINVAL */

typedef struct plan_curve_point {
    uint64_t budget;       /* bytes */
    double scale;          /* link bandwidth x the trace's (1 for budget) */
    plan_link link;        /* the point's link */
    /* 0: `s` is a schedule valid within `budget` on `link`, its figures
     * (judged here) in `m`; HO_E_INFEASIBLE: no schedule planned at this
     * point or before is (s NULL, m zero). */
    int rc;
    plan_metrics m;
    plan_schedule *s;      /* owned by the curve; budget_bytes = budget,
                              predicted = m */
    uint32_t from;         /* input index of the point whose planning gave
                              s (itself, or an earlier point's schedule
                              that was better here); PLAN_NONE when rc */
    bool planned;          /* the planner ran at this point */
    int planner_rc;        /* what it returned (0, HO_E_INFEASIBLE, ...) */
    uint64_t min_budget;   /* the planner's smallest budget (at this link) */
    uint64_t device_floor; /* the planner's device floor (0: unknown) */
    double planning_ms;    /* the planner's time at this point */
    double judge_ms;       /* re-judging earlier schedules here */
    char message[256];     /* the planner's, when it failed */
} plan_curve_point;

typedef struct plan_curve {
    plan_curve_axis axis;
    char planner[32];
    uint32_t n_points;
    plan_curve_point *points; /* in the caller's order */
    uint64_t no_offload_peak;
    uint32_t plans_made;      /* planner runs (< n_points when skipped) */
    uint32_t reused;          /* points whose kept schedule came from an
                                 earlier point */
    bool monotone;            /* exposure non-increasing from tight to
                                 loose over the feasible points, and no
                                 feasible point followed by an infeasible
                                 one */
    double total_ms;
} plan_curve;

/* Plan `t` (finished) with opt->planner (NULL: hoplan) at each of
 * budgets[0..n) on t's link.  0 and *ret (points in input order); -EINVAL
 * for n == 0 or above PLAN_CURVE_MAX_POINTS, a zero budget or a trace not
 * finished; -ENOMEM; a planner's error other than HO_E_INFEASIBLE (the
 * message names the point).  Infeasible points are not errors. */
int plan_curve_budgets(const plan_trace *t, const uint64_t *budgets,
                       uint32_t n, const plan_options *opt,
                       plan_curve **ret, char *err, size_t errlen);

/* The same at one budget for each link scales[0..n): the point's H2D and
 * D2H bandwidths are t's times the scale (latency and duplex t's).
 * -EINVAL also for a scale outside [PLAN_CURVE_MIN_SCALE,
 * PLAN_CURVE_MAX_SCALE] or not finite. */
int plan_curve_bandwidths(const plan_trace *t, uint64_t budget,
                          const double *scales, uint32_t n,
                          const plan_options *opt, plan_curve **ret,
                          char *err, size_t errlen);

/* Release a curve and its schedules; accepts NULL; returns NULL. */
plan_curve *plan_curve_free(plan_curve *c);

#ifdef __cplusplus
}
#endif
#endif
