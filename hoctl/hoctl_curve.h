/*
 * hoctl/hoctl_curve.h - what `hoctl plan` adds around a plan
 * (hoctl_curve.c): the lower bound on exposed time printed next to the
 * exposed time (--bound), and `--curve budget|bandwidth` (one trace
 * planned at many points, planner/curve.h).
 */
#ifndef HO_HOCTL_HOCTL_CURVE_H
#define HO_HOCTL_HOCTL_CURVE_H

#include <jansson.h>

#include "hoctl/hoctl.h"
#include "planner/bound/bound.h"
#include "planner/plan.h"

/* --OPT's budget `s`: a size, or a percentage of `peak` (70%).  0, or
 * the usage exit code with the reason printed. */
int hoctl_budget_resolve(const char *opt_name, const char *s, uint64_t peak,
                         uint64_t *ret);

/* The bound's text lines after `exposed` (docs/bound.md §1): "bound" and
 * "exposed / bound"; nothing for mode off. */
void hoctl_bound_print(const plan_bound_result *b, double exposed_us);
/* Its JSON object (docs/cli-schema.json "bound"); null for mode off. */
json_t *hoctl_bound_json(const plan_bound_result *b);
/* Compute it (mode off: a result saying so); 0, or the exit code with a
 * sentence on stderr. */
int hoctl_bound_compute(const plan_trace *t, uint64_t budget,
                        const plan_link *link, plan_bound_mode mode,
                        plan_bound_result *ret);

/* `hoctl plan --curve AXIS`: the command line's pieces. */
typedef struct hoctl_curve_args {
    const char *axis;      /* "budget" or "bandwidth" */
    const char *points;    /* --points N (NULL: 10 budgets, 4 links) */
    const char *budgets;   /* --budgets a,b,c: sizes or percentages */
    const char *scales;    /* --scales a,b,c: fractions or percentages */
    uint64_t budget;       /* bandwidth: the budget (bytes, resolved) */
    bool have_budget;
    plan_bound_mode bound; /* per point */
    plan_options po;
} hoctl_curve_args;

/* Plan t (finished; sm its summary) along the curve and print the table
 * or the JSON document.  Exit code. */
int hoctl_plan_curve(const hoctl_globals *g, const plan_trace *t,
                     const plan_trace_summary *sm,
                     const hoctl_curve_args *a);

#endif
