/*
 * hoctl/hoctl_curve.c - the lower bound next to a plan's exposed time and
 * `hoctl plan --curve budget|bandwidth` (hoctl_curve.h).
 */
#include "hoctl/hoctl_curve.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hoctl/hoctl_parse.h"
#include "hoctl/output.h"
#include "hyperoffload/errors.h"
#include "planner/curve.h"

/* ------------------------------------------------------------ budgets */

int hoctl_budget_resolve(const char *opt_name, const char *s, uint64_t peak,
                         uint64_t *ret)
{
    size_t len = s ? strlen(s) : 0;
    char why[160];
    if (len == 0)
        return hoctl_usage_error("--%s: expected a size (20GiB, "
                                 "21474836480) or a percentage (70%%)",
                                 opt_name);
    if (s[len - 1] != '%') {
        if (hoctl_size_parse(s, (uint64_t)INT64_MAX, ret, why,
                             sizeof(why)) < 0)
            return hoctl_usage_error("--%s: %s, or a percentage (70%%)",
                                     opt_name, why);
        return 0;
    }
    char *end;
    errno = 0;
    double pct = strtod(s, &end);
    if (errno || end != s + len - 1 || end == s || !(pct >= 0 && pct <= 1000))
        return hoctl_usage_error("--%s: expected a percentage in [0, 1000], "
                                 "got '%s'", opt_name, s);
    *ret = (uint64_t)((long double)peak * pct / 100.0L);
    return 0;
}

/* -------------------------------------------------------------- bound */

int hoctl_bound_compute(const plan_trace *t, uint64_t budget,
                        const plan_link *link, plan_bound_mode mode,
                        plan_bound_result *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->mode = mode;
    ret->source = "none";
    if (mode == PLAN_BOUND_OFF)
        return 0;
    plan_bound_options o;
    memset(&o, 0, sizeof(o));
    o.mode = mode;
    char err[256] = "";
    int r = plan_exposure_bound(t, budget, link, &o, ret, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "hoctl: the lower bound failed: %s\n",
                err[0] ? err : ho_strerror(r));
        return HOCTL_EXIT_FAILED;
    }
    return 0;
}

void hoctl_bound_print(const plan_bound_result *b, double exposed_us)
{
    hoctl_fmt f;
    if (b->mode == PLAN_BOUND_OFF)
        return;
    if (b->infeasible) {
        hoctl_field("bound", "none: %s",
                    b->note[0] ? b->note : "no valid schedule: below the "
                                           "memory floor");
        return;
    }
    hoctl_field("bound", "%s (%s, %s: %u checkpoints, ~%.0f ops/segment, "
                "limit %u ms; %.2f s)%s", hoctl_fmt_us(b->bound_us, f),
                b->source ? b->source : "none", plan_bound_mode_name(b->mode),
                b->checkpoints, b->ops_per_segment, b->time_limit_ms,
                b->total_ms / 1e3,
                b->lp_status == PLAN_BOUND_LP_LIMIT
                    ? ", lp stopped at its limit" : "");
    if (b->note[0])
        hoctl_field("", "%s", b->note);
    if (b->bound_us > 0)
        hoctl_field("exposed / bound", "%.2f", exposed_us / b->bound_us);
    else
        hoctl_field("exposed / bound", "%s", exposed_us > 0 ? "-" : "1.00");
}

json_t *hoctl_bound_json(const plan_bound_result *b)
{
    if (b->mode == PLAN_BOUND_OFF)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "mode", json_string(plan_bound_mode_name(b->mode)));
    json_object_set_new(o, "exposed_lower_bound_us",
                        b->infeasible ? json_null()
                                      : hoctl_json_real(b->bound_us));
    json_object_set_new(o, "source", hoctl_json_str(b->source));
    json_object_set_new(o, "closed_form_us",
                        hoctl_json_real(b->closed_form_us));
    json_object_set_new(o, "lp_us", hoctl_json_real(b->lp_us));
    json_object_set_new(o, "lp_status", json_string(
                            plan_bound_lp_status_name(b->lp_status)));
    json_object_set_new(o, "checkpoints", json_integer(b->checkpoints));
    json_object_set_new(o, "ops_per_segment",
                        hoctl_json_real(b->ops_per_segment));
    json_object_set_new(o, "time_limit_ms", json_integer(b->time_limit_ms));
    json_object_set_new(o, "bound_ms", hoctl_json_real(b->total_ms));
    json_object_set_new(o, "infeasible", json_boolean(b->infeasible));
    json_object_set_new(o, "floor_bytes", hoctl_json_u64(b->floor_bytes));
    json_object_set_new(o, "note", json_string(b->note));
    return o;
}

/* -------------------------------------------------------------- curve */

/* Comma-separated items of s into out[0..max): each through `one`.  The
 * count, or -1 after a usage error. */
typedef int item_fn(const char *opt_name, const char *item, void *ctx,
                    uint32_t i);

static int split_list(const char *opt_name, const char *s, item_fn *one,
                      void *ctx)
{
    char item[64];
    uint32_t n = 0;
    const char *p = s;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == 0 || len >= sizeof(item)) {
            hoctl_usage_error("--%s: expected a comma-separated list, got "
                              "'%s'", opt_name, s);
            return -1;
        }
        if (n >= PLAN_CURVE_MAX_POINTS) {
            hoctl_usage_error("--%s: at most %u points", opt_name,
                              PLAN_CURVE_MAX_POINTS);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = 0;
        if (one(opt_name, item, ctx, n) != 0)
            return -1;
        n++;
        if (!c)
            break;
        p = c + 1;
    }
    return (int)n;
}

typedef struct budget_ctx {
    uint64_t peak;
    uint64_t *out;
} budget_ctx;

static int one_budget(const char *opt_name, const char *item, void *ctx,
                      uint32_t i)
{
    budget_ctx *b = ctx;
    if (hoctl_budget_resolve(opt_name, item, b->peak, &b->out[i]) != 0)
        return -1;
    if (b->out[i] == 0)
        return hoctl_usage_error("--%s: budget '%s' is 0 bytes", opt_name,
                                 item);
    return 0;
}

static int one_scale(const char *opt_name, const char *item, void *ctx,
                     uint32_t i)
{
    double *out = ctx;
    size_t len = strlen(item);
    bool pct = item[len - 1] == '%';
    char *end;
    errno = 0;
    double v = strtod(item, &end);
    if (errno || end != item + len - (pct ? 1 : 0) || end == item)
        v = NAN;
    if (pct)
        v /= 100.0;
    if (!isfinite(v) || v < PLAN_CURVE_MIN_SCALE || v > PLAN_CURVE_MAX_SCALE)
        return hoctl_usage_error("--%s: expected a fraction of the trace's "
                                 "link (0.5) or a percentage (50%%) in "
                                 "[%g, %g], got '%s'", opt_name,
                                 PLAN_CURVE_MIN_SCALE, PLAN_CURVE_MAX_SCALE,
                                 item);
    out[i] = v;
    return 0;
}

/* The curve's points from the command line: budgets (axis budget) or
 * scales.  n, or -1 after a usage error. */
static int curve_points(const hoctl_curve_args *a, plan_curve_axis axis,
                        const plan_trace_summary *sm, uint64_t *budgets,
                        double *scales)
{
    const char *list = axis == PLAN_CURVE_BUDGET ? a->budgets : a->scales;
    const char *other = axis == PLAN_CURVE_BUDGET ? a->scales : a->budgets;
    if (other) {
        hoctl_usage_error("--curve %s takes %s, not %s",
                          plan_curve_axis_name(axis),
                          axis == PLAN_CURVE_BUDGET ? "--budgets"
                                                    : "--scales",
                          axis == PLAN_CURVE_BUDGET ? "--scales"
                                                    : "--budgets");
        return -1;
    }
    if (list && a->points) {
        hoctl_usage_error("--points and --%s exclude each other",
                          axis == PLAN_CURVE_BUDGET ? "budgets" : "scales");
        return -1;
    }
    if (list) {
        if (axis == PLAN_CURVE_BUDGET) {
            budget_ctx b = {sm->no_offload_peak, budgets};
            return split_list("budgets", list, one_budget, &b);
        }
        return split_list("scales", list, one_scale, scales);
    }
    uint32_t n = axis == PLAN_CURVE_BUDGET ? 10 : 4;
    if (a->points) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(a->points, &end, 10);
        if (errno || *end || end == a->points || a->points[0] == '-' ||
            v < 1 || v > PLAN_CURVE_MAX_POINTS) {
            hoctl_usage_error("--points: expected an integer in [1, %u], "
                              "got '%s'", PLAN_CURVE_MAX_POINTS, a->points);
            return -1;
        }
        n = (uint32_t)v;
    }
    /* k/n of the no-offload peak, or of the trace's link, k = 1..n */
    for (uint32_t k = 1; k <= n; k++) {
        if (axis == PLAN_CURVE_BUDGET)
            budgets[k - 1] = (uint64_t)((long double)sm->no_offload_peak *
                                        k / n);
        else
            scales[k - 1] = (double)k / n;
        if (axis == PLAN_CURVE_BUDGET && budgets[k - 1] == 0)
            budgets[k - 1] = 1;
    }
    return (int)n;
}

static json_t *point_json(const plan_curve_point *p,
                          const plan_bound_result *b)
{
    json_t *o = json_object();
    json_object_set_new(o, "budget_bytes", hoctl_json_u64(p->budget));
    json_object_set_new(o, "scale", hoctl_json_real(p->scale));
    json_object_set_new(o, "h2d_gbps", hoctl_json_real(p->link.h2d_gbps));
    json_object_set_new(o, "d2h_gbps", hoctl_json_real(p->link.d2h_gbps));
    json_object_set_new(o, "feasible", json_boolean(p->rc == 0));
    json_object_set_new(o, "exposed_us",
                        p->rc == 0 ? hoctl_json_real(p->m.exposed_us)
                                   : json_null());
    json_object_set_new(o, "h2d_bytes", p->rc == 0 ? hoctl_json_u64(
                                            p->m.h2d_bytes) : json_null());
    json_object_set_new(o, "d2h_bytes", p->rc == 0 ? hoctl_json_u64(
                                            p->m.d2h_bytes) : json_null());
    json_object_set_new(o, "peak_device_bytes",
                        p->rc == 0 ? hoctl_json_u64(p->m.peak_device_bytes)
                                   : json_null());
    json_object_set_new(o, "actions", p->rc == 0 ? hoctl_json_u64(
                                          p->s->n_actions) : json_null());
    json_object_set_new(o, "from", p->rc == 0 ? json_integer(p->from)
                                              : json_null());
    json_object_set_new(o, "planned", json_boolean(p->planned));
    json_object_set_new(o, "planner_result",
                        json_string(!p->planned ? "skipped"
                                    : p->planner_rc == 0 ? "ok"
                                    : ho_err_name(p->planner_rc)));
    json_object_set_new(o, "min_budget", p->min_budget
                                             ? hoctl_json_u64(p->min_budget)
                                             : json_null());
    json_object_set_new(o, "device_floor",
                        p->device_floor ? hoctl_json_u64(p->device_floor)
                                        : json_null());
    json_object_set_new(o, "planning_us", hoctl_json_us(p->planning_ms * 1e3));
    json_object_set_new(o, "bound", hoctl_bound_json(b));
    return o;
}

static int curve_json(const plan_curve *c, const plan_bound_result *bounds)
{
    json_t *o = hoctl_json_root();
    json_object_set_new(o, "axis", json_string(plan_curve_axis_name(c->axis)));
    json_object_set_new(o, "planner", json_string(c->planner));
    json_object_set_new(o, "no_offload_peak",
                        hoctl_json_u64(c->no_offload_peak));
    json_object_set_new(o, "monotone", json_boolean(c->monotone));
    json_object_set_new(o, "plans_made", json_integer(c->plans_made));
    json_object_set_new(o, "reused", json_integer(c->reused));
    json_object_set_new(o, "total_us", hoctl_json_us(c->total_ms * 1e3));
    json_t *pts = json_array();
    for (uint32_t i = 0; i < c->n_points; i++)
        json_array_append_new(pts, point_json(&c->points[i], &bounds[i]));
    json_object_set_new(o, "points", pts);
    return hoctl_json_emit(o);
}

static void curve_text(const plan_curve *c, const plan_bound_result *bounds)
{
    hoctl_table tb;
    hoctl_table_init(&tb, 9);
    hoctl_table_row(&tb, "BUDGET", "LINK", "EXPOSED", "BOUND", "MOVED",
                    "PEAK", "FROM", "PLANNER", "PLAN MS");
    for (uint32_t i = 0; i < c->n_points; i++) {
        const plan_curve_point *p = &c->points[i];
        const plan_bound_result *b = &bounds[i];
        hoctl_fmt fb, fe, fbo, fm, fp;
        char link[48], from[16], ms[24];
        snprintf(link, sizeof(link), "%.4g GB/s", p->link.h2d_gbps);
        snprintf(from, sizeof(from), "%u", p->from);
        snprintf(ms, sizeof(ms), "%.1f", p->planning_ms);
        const char *bound = "-";
        if (b->mode != PLAN_BOUND_OFF)
            bound = b->infeasible ? "none" : hoctl_fmt_us(b->bound_us, fbo);
        hoctl_table_row(
            &tb, hoctl_fmt_size(p->budget, fb), link,
            p->rc == 0 ? hoctl_fmt_us(p->m.exposed_us, fe) : "infeasible",
            bound,
            p->rc == 0 ? hoctl_fmt_size(p->m.h2d_bytes + p->m.d2h_bytes, fm)
                       : "-",
            p->rc == 0 ? hoctl_fmt_size(p->m.peak_device_bytes, fp) : "-",
            p->rc == 0 ? from : "-",
            !p->planned ? "skipped"
                        : p->planner_rc == 0 ? "ok"
                                             : ho_err_name(p->planner_rc),
            p->planned ? ms : "-");
    }
    hoctl_table_print(&tb, "");
    printf("%s curve of %s: %u points, %u planned, %u kept an earlier "
           "point's schedule, %s, %.2f s\n", plan_curve_axis_name(c->axis),
           c->planner, c->n_points, c->plans_made, c->reused,
           c->monotone ? "monotone" : "NOT monotone", c->total_ms / 1e3);
}

int hoctl_plan_curve(const hoctl_globals *g, const plan_trace *t,
                     const plan_trace_summary *sm,
                     const hoctl_curve_args *a)
{
    plan_curve_axis axis;
    if (plan_curve_axis_parse(a->axis, &axis) < 0)
        return hoctl_usage_error("--curve: expected budget or bandwidth, "
                                 "got '%s'", a->axis);
    if (axis == PLAN_CURVE_BANDWIDTH && !a->have_budget)
        return hoctl_usage_error("--curve bandwidth needs --budget");
    if (axis == PLAN_CURVE_BUDGET && a->have_budget)
        return hoctl_usage_error("--curve budget takes its budgets from "
                                 "--points or --budgets, not --budget");
    uint64_t *budgets = calloc(PLAN_CURVE_MAX_POINTS, sizeof(*budgets));
    double *scales = calloc(PLAN_CURVE_MAX_POINTS, sizeof(*scales));
    plan_bound_result *bounds = NULL;
    plan_curve *c = NULL;
    int rc = HOCTL_EXIT_FAILED;
    if (!budgets || !scales) {
        fputs("hoctl: out of memory\n", stderr);
        goto out;
    }
    int n = curve_points(a, axis, sm, budgets, scales);
    if (n < 0) {
        rc = HOCTL_EXIT_USAGE;
        goto out;
    }
    char err[512] = "";
    int r = axis == PLAN_CURVE_BUDGET
                ? plan_curve_budgets(t, budgets, (uint32_t)n, &a->po, &c,
                                     err, sizeof(err))
                : plan_curve_bandwidths(t, a->budget, scales, (uint32_t)n,
                                        &a->po, &c, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "hoctl: plan --curve: %s\n",
                err[0] ? err : ho_strerror(r));
        goto out;
    }
    bounds = calloc((size_t)n, sizeof(*bounds));
    if (!bounds) {
        fputs("hoctl: out of memory\n", stderr);
        goto out;
    }
    for (int i = 0; i < n; i++)
        if ((r = hoctl_bound_compute(t, c->points[i].budget,
                                     &c->points[i].link, a->bound,
                                     &bounds[i])) != 0)
            goto out;
    if (g->json) {
        rc = curve_json(c, bounds);
    } else {
        curve_text(c, bounds);
        rc = HOCTL_EXIT_OK;
    }
out:
    plan_curve_free(c);
    free(bounds);
    free(budgets);
    free(scales);
    return rc;
}
