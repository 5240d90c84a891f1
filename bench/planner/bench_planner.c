/*
 * bench/planner/bench_planner.c - every planner on the evaluation
 * workloads of PLANNER.md §6, with the lower bound (planner/bound/bound.h)
 * beside each exposure:
 *
 *   bench_planner [--captured FILE] [--repeats N] [--no-large]
 *                 [--large-all] [--hoctl PATH] [--scratch DIR]
 *                 [--large-repeats N]
 *
 * Traces: LLaMA-2-7B and LLaMA-3-8B training steps (plan_gen_train, seq
 * 32768, 910b profile) with parameters and optimizer state on the device,
 * and the same with both `movable`; a LLaMA-3-8B decode step with a
 * growing, movable KV cache; a captured PyTorch step (default
 * examples/pytorch/traces/transformer_step.json, skipped with a note when
 * absent).  Each at budgets of 90/70/50/40/30% of its no-offload peak and
 * hoplan's minimum at each link (plan_result.min_budget), the link at full,
 * half and quarter bandwidth.  Per planner: whether its schedule is valid and
 * within the budget, its peak (% of the no-offload peak), exposed time, the
 * bound (fast mode, the one `hoctl plan` prints), exposed / bound, bytes moved
 * and planning time (median of --repeats at full bandwidth, one run at half and
 * quarter).  All planners are printed at full bandwidth; at half and quarter,
 * hoplan and the best baseline within the budget.  Then per trace the budget
 * curve (planner/curve.h) against the points planned one by one.
 *
 * The 1,000,000-op / 250,000-storage random trace (`hoctl trace gen
 * random --seed 7 --ops 1000000 --storages 250000`, written once into
 * --scratch as protobuf and JSON): planning core in this process
 * (plan_make on the trace read from protobuf), and `hoctl plan --budget
 * 70%` end to end from protobuf and from JSON (wall time, CPU time and
 * peak RSS of the child; medians of --large-repeats with --bound off, one
 * run with the default bound).
 *
 * Every point also judges an independent just-in-time witness
 * (jit_schedule: movable data homed on the host, everything else stored,
 * freed and prefetched around each gap, waits so that memory is back
 * before each allocation), the row "jit-witness".
 *
 * Summary: median exposed / bound of hoplan over the transformer traces at
 * 50% and at the minimum; "infeasible" answers where a valid schedule is
 * known (the witness, a planner named "constructive" when the build has
 * one, or any baseline within the budget);
 * monotonicity violations of hoplan along the budget and bandwidth sweeps;
 * hoplan over budget or worse than a baseline within budget; exposure
 * where the bound is 0 and the link has slack.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "planner/bound/bound.h"
#include "planner/curve.h"
#include "planner/gen/gen.h"
#include "planner/io/plan_io.h"
#include "planner/plan.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define N_BUDGETS 6  /* 90 70 50 40 30 % and the minimum */
#define N_LINKS 3    /* full, half, quarter */
#define MAX_PLANNERS 8
#define MAX_RATIOS 256

static const double fractions[N_BUDGETS - 1] = {0.9, 0.7, 0.5, 0.4, 0.3};
static const double link_scale[N_LINKS] = {1.0, 0.5, 0.25};
static const char *const link_name[N_LINKS] = {"full", "half", "quarter"};

/* What the summary collects. */
typedef struct summary {
    double r50[MAX_RATIOS], rmin[MAX_RATIOS];
    int n50, nmin, inf50, infmin; /* inf: bound 0, exposed > 0 */
    double r50_full[MAX_RATIOS], rmin_full[MAX_RATIOS];
    int n50_full, nmin_full;
    int infeasible_known_valid, infeasible_total;
    int mono_budget, mono_bw, mono_checked;
    int hoplan_over, hoplan_worse, hoplan_ok;
    int slack_exposed;
    bool have_constructive;
} summary;

static summary S;

/* One planner's outcome at one point. */
typedef struct outcome {
    int rc;          /* plan_make's */
    bool valid, fits;
    plan_metrics m;
    double ms;       /* median planning time */
    uint64_t min_budget;
    size_t actions;
} outcome;

static void run_planner(const plan_trace *t, const char *planner,
                        uint64_t budget, int repeats, outcome *o)
{
    double ms[16];
    plan_schedule *s = NULL;
    plan_result res;
    memset(o, 0, sizeof(*o));
    if (repeats > 16)
        repeats = 16;
    int done = 0;
    for (int k = 0; k < repeats; k++) {
        plan_options po = {planner, 0, 0, 0};
        plan_schedule_free(s);
        s = NULL;
        double t0 = now_ms();
        o->rc = plan_make(t, budget, &po, &s, &res);
        ms[done++] = now_ms() - t0;
        if (o->rc < 0)
            break;
    }
    o->ms = median(ms, done);
    o->min_budget = res.min_budget;
    if (o->rc == 0) {
        plan_violation v;
        plan_schedule copy = *s;
        copy.budget_bytes = UINT64_MAX;
        o->valid = plan_simulate(t, &copy, &o->m, &v, NULL) == 0;
        o->fits = o->valid && o->m.peak_device_bytes <= budget;
        o->actions = s->n_actions;
    }
    plan_schedule_free(s);
}

static void fmt_ratio(char *buf, size_t n, double exposed, double bound)
{
    if (bound > 0)
        snprintf(buf, n, "%.2f", exposed / bound);
    else
        snprintf(buf, n, "%s", exposed > 0 ? "inf" : "1.00");
}

static void print_outcome(const char *planner, const outcome *o,
                          uint64_t peak, const plan_bound_result *b)
{
    if (o->rc < 0) {
        char why[64];
        if (o->rc == HO_E_INFEASIBLE && o->min_budget)
            snprintf(why, sizeof why, "infeasible: meets %.1f%%",
                     100.0 * (double)o->min_budget / (double)peak);
        else if (o->rc == HO_E_UNSUPPORTED)
            snprintf(why, sizeof why, "n/a: more than 20 candidate gaps");
        else
            snprintf(why, sizeof why, "%s", ho_err_name(o->rc));
        printf("   %-16s %-8s %7s %11s %11s %7s %9s %9.1f  %s\n", planner,
               "-", "-", "-", "-", "-", "-", o->ms, why);
        return;
    }
    /* exposed / bound only for a schedule within the budget */
    char ratio[16] = "-", bound[24] = "-";
    if (o->fits && !b->infeasible)
        fmt_ratio(ratio, sizeof ratio, o->m.exposed_us, b->bound_us);
    if (!b->infeasible)
        snprintf(bound, sizeof bound, "%.1f", b->bound_us / 1e3);
    printf("   %-16s %-8s %6.1f%% %11.1f %11s %7s %9.2f %9.1f\n", planner,
           !o->valid ? "INVALID" : o->fits ? "ok" : "over",
           100.0 * (double)o->m.peak_device_bytes / (double)peak,
           o->m.exposed_us / 1e3, bound, ratio,
           (double)(o->m.h2d_bytes + o->m.d2h_bytes) / 1e9, o->ms);
}

/* ------------------------------------------- the just-in-time witness */

/* An independent feasibility witness (not hoplan's): every movable
 * storage homed on the host; every other unpinned storage stored (when
 * its host copy is stale) and freed after each access followed by a gap,
 * and prefetched right before its next read; retained device-homed data
 * brought back after the last op; before every op that allocates, a wait
 * for each storage freed behind a store since the last such op, so that
 * its memory is back first.  Valid by construction up to the budget;
 * plan_simulate decides.  0 and *ret (bound, not judged), or negative. */
typedef struct jit_act {
    uint32_t op, storage;
    uint8_t when, kind;
} jit_act;

static int jit_add(jit_act **v, size_t *n, size_t *cap, uint32_t op,
                   plan_when when, plan_act_kind kind, uint32_t st)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 1024;
        jit_act *g = realloc(*v, nc * sizeof(*g));
        if (!g)
            return -ENOMEM;
        *v = g;
        *cap = nc;
    }
    (*v)[(*n)++] = (jit_act){op, st, (uint8_t)when, (uint8_t)kind};
    return 0;
}

static int jit_schedule(const plan_trace *t, uint64_t budget,
                        plan_schedule **ret)
{
    jit_act *v = NULL;
    size_t n = 0, cap = 0;
    int r = 0;
    uint32_t last = t->n_ops - 1;
    plan_schedule *s = plan_schedule_new("jit", budget);
    /* per op: 1 when it allocates (a prefetch before it or a write) */
    uint8_t *alloc = calloc(t->n_ops, 1);
    /* per op: stores whose frees follow it, as (op, storage) in v */
    if (!s || !alloc) {
        r = -ENOMEM;
        goto out;
    }
    for (uint32_t st = 0; st < t->n_storages && r == 0; st++) {
        const plan_storage *sto = &t->storages[st];
        uint32_t a0 = t->acc_start[st], a1 = t->acc_start[st + 1];
        if (sto->pinned || a0 == a1)
            continue;
        bool host_home = sto->movable || sto->initial == PLAN_INIT_HOST;
        if (sto->movable)
            r = plan_schedule_set_home(s, t, st, PLAN_HOME_HOST);
        bool current = host_home; /* host copy holds the latest version */
        for (uint32_t k = a0; k < a1 && r == 0; k++) {
            const plan_access *ac = &t->acc[k];
            if (ac->flags & PLAN_ACC_WRITE)
                alloc[ac->op] = 1;
            if (k == a0 && (ac->flags & PLAN_ACC_READ) && host_home) {
                r = jit_add(&v, &n, &cap, ac->op, PLAN_BEFORE,
                            PLAN_ACT_PREFETCH, st);
                alloc[ac->op] = 1;
            }
            if (ac->flags & PLAN_ACC_WRITE)
                current = false;
            bool has_next = k + 1 < a1;
            const plan_access *nx = has_next ? &t->acc[k + 1] : NULL;
            bool gap = has_next ? nx->op > ac->op + 1 : ac->op < last;
            if (!gap || r)
                continue;
            bool need = has_next ? (nx->flags & PLAN_ACC_READ) != 0
                                 : sto->retained;
            if (!has_next && !sto->retained)
                continue; /* freed implicitly after its last access */
            if (need && !current) {
                r = jit_add(&v, &n, &cap, ac->op, PLAN_AFTER,
                            PLAN_ACT_STORE, st);
                current = true;
            }
            if (r == 0)
                r = jit_add(&v, &n, &cap, ac->op, PLAN_AFTER,
                            PLAN_ACT_FREE_DEVICE, st);
            if (r == 0 && has_next && need) {
                r = jit_add(&v, &n, &cap, nx->op, PLAN_BEFORE,
                            PLAN_ACT_PREFETCH, st);
                alloc[nx->op] = 1;
            } else if (r == 0 && !has_next && !host_home) {
                /* device-homed retained data is back at step end */
                r = jit_add(&v, &n, &cap, last, PLAN_AFTER,
                            PLAN_ACT_PREFETCH, st);
            }
        }
    }
    /* the waits, before everything else at their point (bind sorts
     * stably by op and when) */
    {
        uint32_t *pend = NULL;
        size_t np = 0, cp = 0;
        /* the frees that follow a store, by op */
        size_t *by_op = calloc((size_t)t->n_ops + 1, sizeof(*by_op));
        size_t *idx = n ? malloc(n * sizeof(*idx)) : NULL;
        if (!by_op || (n && !idx))
            r = -ENOMEM;
        for (size_t i = 0; i < n && r == 0; i++)
            if (v[i].kind == PLAN_ACT_STORE)
                by_op[v[i].op + 1]++;
        for (uint32_t o = 0; o < t->n_ops && r == 0; o++)
            by_op[o + 1] += by_op[o];
        size_t *fill = r == 0 ? calloc((size_t)t->n_ops, sizeof(*fill))
                              : NULL;
        if (r == 0 && !fill)
            r = -ENOMEM;
        for (size_t i = 0; i < n && r == 0; i++)
            if (v[i].kind == PLAN_ACT_STORE)
                idx[by_op[v[i].op] + fill[v[i].op]++] = i;
        for (uint32_t o = 0; o < t->n_ops && r == 0; o++) {
            if (alloc[o])
                for (size_t k = 0; k < np && r == 0; k++)
                    r = plan_schedule_push(s, t, o, PLAN_BEFORE,
                                           PLAN_ACT_WAIT, pend[k]);
            if (alloc[o])
                np = 0;
            for (size_t k = by_op[o]; k < by_op[o + 1] && r == 0; k++) {
                if (np == cp) {
                    size_t nc = cp ? cp * 2 : 256;
                    uint32_t *g = realloc(pend, nc * sizeof(*g));
                    if (!g) {
                        r = -ENOMEM;
                        break;
                    }
                    pend = g;
                    cp = nc;
                }
                pend[np++] = v[idx[k]].storage;
            }
        }
        free(fill);
        free(idx);
        free(by_op);
        free(pend);
    }
    for (size_t i = 0; i < n && r == 0; i++)
        r = plan_schedule_push(s, t, v[i].op, (plan_when)v[i].when,
                               (plan_act_kind)v[i].kind, v[i].storage);
    char err[256];
    if (r == 0)
        r = plan_schedule_bind(s, t, err, sizeof err);
out:
    free(v);
    free(alloc);
    if (r < 0) {
        plan_schedule_free(s);
        return r;
    }
    *ret = s;
    return 0;
}

/* The witness judged within `budget`: true when valid. */
static bool jit_valid(const plan_trace *t, uint64_t budget,
                      plan_metrics *ret)
{
    plan_schedule *s = NULL;
    plan_violation v;
    bool ok = jit_schedule(t, budget, &s) == 0 &&
              plan_simulate(t, s, ret, &v, NULL) == 0;
    plan_schedule_free(s);
    return ok;
}

typedef struct trace_row {
    const char *name;
    plan_trace *t;
    bool transformer;
} trace_row;

/* The link could carry hoplan's traffic during the compute. */
static bool link_has_slack(const plan_link *l, const plan_metrics *m)
{
    double h = (double)m->h2d_bytes / (l->h2d_gbps * 1e3);
    double d = (double)m->d2h_bytes / (l->d2h_gbps * 1e3);
    return l->duplex ? h <= m->compute_us && d <= m->compute_us
                     : h + d <= m->compute_us;
}

static void push(double *v, int *n, double x)
{
    if (*n < MAX_RATIOS)
        v[(*n)++] = x;
}

static void run_trace(const trace_row *rw, int repeats)
{
    plan_trace_summary sm;
    if (plan_trace_summarize(rw->t, &sm) < 0) {
        printf("%s: cannot summarize\n", rw->name);
        return;
    }
    printf("\n%s: %u ops, %u storages (%u movable), compute %.1f ms, "
           "no-offload peak %.2f GB, largest op working set %.2f GB\n",
           rw->name, sm.n_ops, sm.n_storages, sm.n_movable,
           sm.compute_us / 1e3, (double)sm.no_offload_peak / 1e9,
           (double)sm.max_op_working_set / 1e9);
    uint64_t budgets[N_BUDGETS];
    for (int b = 0; b < N_BUDGETS - 1; b++)
        budgets[b] = (uint64_t)((double)sm.no_offload_peak * fractions[b]);
    double hexp[N_LINKS][N_BUDGETS];
    for (int l = 0; l < N_LINKS; l++) {
        plan_trace view = *rw->t; /* read-only view with a slower link */
        view.link.h2d_gbps *= link_scale[l];
        view.link.d2h_gbps *= link_scale[l];
        /* hoplan's minimum at this link: min_budget of a plan at 30%
         * (always filled by the new hoplan) or of an infeasible 1-byte
         * plan */
        {
            outcome o;
            run_planner(&view, "hoplan", budgets[N_BUDGETS - 2], 1, &o);
            if (!o.min_budget)
                run_planner(&view, "hoplan", 1, 1, &o);
            budgets[N_BUDGETS - 1] = o.min_budget ? o.min_budget
                                                  : sm.max_op_working_set;
        }
        for (int b = 0; b < N_BUDGETS; b++) {
            uint64_t budget = budgets[b];
            plan_bound_result br;
            plan_bound_options bo;
            memset(&bo, 0, sizeof bo);
            bo.mode = PLAN_BOUND_FAST;
            char err[256];
            if (plan_exposure_bound(&view, budget, NULL, &bo, &br, err,
                                    sizeof err) < 0) {
                printf("  bound failed: %s\n", err);
                memset(&br, 0, sizeof br);
            }
            char bdesc[200];
            if (br.infeasible)
                snprintf(bdesc, sizeof bdesc, "none (%s)", br.note);
            else
                snprintf(bdesc, sizeof bdesc, "%.1f ms (%s, %.0f ms)",
                         br.bound_us / 1e3, br.source ? br.source : "none",
                         br.total_ms);
            printf("  link %s (%.1f GB/s), budget %s%.1f%% (%.2f GB); bound "
                   "%s\n", link_name[l], view.link.h2d_gbps,
                   b == N_BUDGETS - 1 ? "min " : "",
                   100.0 * (double)budget / (double)sm.no_offload_peak,
                   (double)budget / 1e9, bdesc);
            if (l == 0 && b == 0)
                printf("   %-16s %-8s %7s %11s %11s %7s %9s %9s\n",
                       "planner", "result", "peak", "exposed ms", "bound ms",
                       "exp/bnd", "moved GB", "plan ms");
            outcome oc[MAX_PLANNERS];
            int best = -1, hi = -1, ci = -1;
            bool any_valid_baseline = false;
            int np = 0;
            for (int p = 0; plan_planner_names[p] && np < MAX_PLANNERS;
                 p++, np++) {
                const char *name = plan_planner_names[p];
                bool is_h = strcmp(name, "hoplan") == 0;
                bool is_c = strcmp(name, "constructive") == 0;
                run_planner(&view, name, budget,
                            l == 0 ? (is_h ? repeats : 1) : 1, &oc[p]);
                if (is_h)
                    hi = p;
                else if (is_c)
                    ci = p;
                else if (oc[p].fits) {
                    any_valid_baseline = true;
                    if (best < 0 ||
                        oc[p].m.exposed_us < oc[best].m.exposed_us)
                        best = p;
                }
                if (l == 0)
                    print_outcome(name, &oc[p], sm.no_offload_peak, &br);
            }
            /* the independent just-in-time witness */
            outcome jo;
            memset(&jo, 0, sizeof jo);
            double j0 = now_ms();
            jo.valid = jo.fits = jit_valid(&view, budget, &jo.m);
            jo.ms = now_ms() - j0;
            if (l > 0) {
                print_outcome("hoplan", &oc[hi], sm.no_offload_peak, &br);
                if (best >= 0) {
                    char nm[32];
                    snprintf(nm, sizeof nm, "best:%s",
                             plan_planner_names[best]);
                    print_outcome(nm, &oc[best], sm.no_offload_peak, &br);
                }
            }
            if (jo.fits)
                print_outcome("jit-witness", &jo, sm.no_offload_peak, &br);
            else
                printf("   %-16s %-8s\n", "jit-witness", "over");
            /* the summary */
            const outcome *h = &oc[hi];
            hexp[l][b] = h->fits ? h->m.exposed_us : INFINITY;
            if (h->rc == HO_E_INFEASIBLE) {
                S.infeasible_total++;
                bool known = (ci >= 0 && oc[ci].fits) || jo.fits ||
                             any_valid_baseline;
                S.infeasible_known_valid += known;
            }
            if (h->rc == 0 && !h->fits)
                S.hoplan_over++;
            if (h->fits) {
                S.hoplan_ok++;
                if (best >= 0 &&
                    oc[best].m.exposed_us < h->m.exposed_us * (1 - 1e-9))
                    S.hoplan_worse++;
                if (!br.infeasible && br.bound_us == 0 &&
                    h->m.exposed_us > 0 &&
                    link_has_slack(&view.link, &h->m)) {
                    S.slack_exposed++;
                    printf("   ! hoplan exposes %.3f ms where the bound is 0 "
                           "and the link has slack\n",
                           h->m.exposed_us / 1e3);
                }
            }
            if (rw->transformer && h->fits && !br.infeasible &&
                (b == 2 || b == N_BUDGETS - 1)) {
                bool b50 = b == 2;
                if (br.bound_us > 0 || h->m.exposed_us == 0) {
                    double r = br.bound_us > 0
                                   ? h->m.exposed_us / br.bound_us : 1.0;
                    if (b50) {
                        push(S.r50, &S.n50, r);
                        if (l == 0)
                            push(S.r50_full, &S.n50_full, r);
                    } else {
                        push(S.rmin, &S.nmin, r);
                        if (l == 0)
                            push(S.rmin_full, &S.nmin_full, r);
                    }
                } else if (b50) {
                    S.inf50++;
                } else {
                    S.infmin++;
                }
            }
        }
    }
    /* monotonicity of hoplan along the sweeps (the fixed fractions, in
     * decreasing order): a larger budget or a faster link never exposes
     * more (an infeasible point counts as infinite exposure) */
    int vb = 0, vw = 0;
    for (int l = 0; l < N_LINKS; l++)
        for (int b = 1; b < N_BUDGETS - 1; b++) { /* b tighter than b-1 */
            S.mono_checked++;
            if (hexp[l][b - 1] > hexp[l][b] * (1 + 1e-9) + 1e-6)
                vb++;
        }
    for (int b = 0; b < N_BUDGETS - 1; b++)
        for (int l = 1; l < N_LINKS; l++) { /* l slower than l - 1 */
            S.mono_checked++;
            if (hexp[l - 1][b] > hexp[l][b] * (1 + 1e-9) + 1e-6)
                vw++;
        }
    S.mono_budget += vb;
    S.mono_bw += vw;
    /* the curve API on the fixed fractions, full link */
    double t0 = now_ms();
    plan_curve *c = NULL;
    char err[256];
    int r = plan_curve_budgets(rw->t, budgets, N_BUDGETS - 1, NULL, &c, err,
                               sizeof err);
    double cms = now_ms() - t0;
    if (r < 0) {
        printf("  curve: %s\n", err);
    } else {
        printf("  budget curve (planner/curve.h, full link): %s, %u of %d "
               "planned, %u kept an earlier point's schedule, %.0f ms; "
               "hoplan alone: %d monotonicity violation(s) along budgets, "
               "%d along bandwidth\n",
               c->monotone ? "monotone" : "NOT monotone", c->plans_made,
               N_BUDGETS - 1, c->reused, cms, vb, vw);
        printf("  curve exposed ms at 90/70/50/40/30%%:");
        for (int b = 0; b < N_BUDGETS - 1; b++) {
            const plan_curve_point *p = &c->points[b];
            if (p->rc == 0)
                printf(" %.1f", p->m.exposed_us / 1e3);
            else
                printf(" -");
        }
        printf("\n");
    }
    plan_curve_free(c);
}

/* ------------------------------------------------------- the large row */

/* Run argv, wait; wall ms, peak RSS (MiB) and CPU ms (user + system) of
 * the child.  0 or -1. */
static double child_cpu_ms; /* of the last run_child */

static int run_child(char *const argv[], double *ret_ms, double *ret_rss,
                     const char *out_path)
{
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        FILE *f = freopen(out_path ? out_path : "/dev/null", "w", stdout);
        (void)f;
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0)
        return -1;
    *ret_ms = now_ms() - t0;
    *ret_rss = (double)ru.ru_maxrss / 1024.0;
    child_cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static double json_number(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    char *p = strstr(buf, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* The trace files pb and js, written by `hoctl trace gen random` unless
 * they exist.  0 or -1 (said why). */
static int large_files(const char *hoctl, const char *pb, const char *js)
{
    struct stat stt;
    char *gen[] = {(char *)hoctl, "trace", "gen", "random", "--seed", "7",
                   "--ops", "1000000", "--storages", "250000", "--out",
                   NULL, NULL};
    double ms, rss;
    for (int k = 0; k < 2; k++) {
        const char *p = k ? js : pb;
        if (stat(p, &stt) == 0 && stt.st_size > 0)
            continue;
        gen[11] = (char *)p;
        if (run_child(gen, &ms, &rss, NULL) < 0) {
            printf("\n(cannot run %s trace gen random: the 1,000,000-op "
                   "rows are skipped)\n", hoctl);
            return -1;
        }
    }
    return 0;
}

static void large_e2e(const char *hoctl, const char *dir, const char *pb,
                      const char *js, int reps)
{
    char out[512];
    snprintf(out, sizeof out, "%s/random1m.out.json", dir);
    printf("\n1,000,000 ops / 250,000 storages end to end: `hoctl --json "
           "plan --trace T --budget 70%% --bound B` (median of %d with "
           "--bound off, 1 run with fast; RSS = peak of the hoctl "
           "process)\n", reps);
    printf("   %-8s %-10s %10s %10s %10s %10s %10s %9s\n", "from", "bound",
           "wall ms", "CPU ms", "plan ms", "bound ms", "exposed ms",
           "RSS MiB");
    for (int k = 0; k < 2; k++)
        for (int bm = 0; bm < 2; bm++) {
            char *argv[] = {(char *)hoctl, "--json", "plan", "--trace",
                            (char *)(k ? js : pb), "--budget", "70%",
                            "--bound", bm ? "fast" : "off", NULL};
            double w[16], rs[16], pl[16], bd[16], cpu[16];
            int n = 0;
            double exposed = NAN;
            for (int r = 0; r < (bm ? 1 : reps) && r < 16; r++) {
                if (run_child(argv, &w[n], &rs[n], out) < 0) {
                    printf("   %-8s %-10s failed (see %s)\n",
                           k ? "JSON" : "protobuf", argv[8], out);
                    break;
                }
                cpu[n] = child_cpu_ms;
                pl[n] = json_number(out, "planning_us") / 1e3;
                bd[n] = bm ? json_number(out, "bound_ms") : 0;
                exposed = json_number(out, "exposed_us");
                n++;
            }
            if (n == 0)
                continue;
            printf("   %-8s %-10s %10.0f %10.0f %10.0f %10.0f %10.1f %9.0f\n",
                   k ? "JSON" : "protobuf", argv[8], median(w, n),
                   median(cpu, n), median(pl, n), median(bd, n),
                   exposed / 1e3, median(rs, n));
        }
}

/* ----------------------------------------------------------- traces */

static plan_trace *train(const char *model, uint32_t seq, bool movable)
{
    plan_gen_train_cfg c;
    char err[256];
    plan_trace *t = NULL;
    memset(&c, 0, sizeof c);
    c.model = *plan_model_find(model);
    c.device = *plan_device_find("910b");
    c.seq = seq;
    c.micro_batch = 1;
    c.n_micro = 1;
    c.dtype_bytes = 2;
    c.optimizer_step = true;
    c.params_movable = movable;
    c.optimizer_movable = movable;
    if (plan_gen_train(&c, &t, err, sizeof err) < 0) {
        fprintf(stderr, "gen %s: %s\n", model, err);
        exit(1);
    }
    return t;
}

static plan_trace *decode(void)
{
    plan_gen_decode_cfg c;
    char err[256];
    plan_trace *t = NULL;
    memset(&c, 0, sizeof c);
    c.model = *plan_model_find("llama3-8b");
    c.device = *plan_device_find("910b");
    c.prompt = 8192;
    c.tokens = 8;
    c.batch = 32;
    c.dtype_bytes = 2;
    c.kv_block = 256;
    if (plan_gen_decode(&c, &t, err, sizeof err) < 0) {
        fprintf(stderr, "gen decode: %s\n", err);
        exit(1);
    }
    return t;
}

static void print_summary(void)
{
    printf("\nsummary (hoplan; bound = fast mode):\n");
    double a = median(S.r50, S.n50), b = median(S.rmin, S.nmin);
    double af = median(S.r50_full, S.n50_full),
           bf = median(S.rmin_full, S.nmin_full);
    printf("  median exposed / bound over the transformer traces: at 50%% "
           "%.2f (%d points, all links; %.2f at full link), at the minimum "
           "%.2f (%d points; %.2f at full link); points with bound 0 but "
           "exposure > 0: %d at 50%%, %d at the minimum\n",
           a, S.n50, af, b, S.nmin, bf, S.inf50, S.infmin);
    printf("  'infeasible' where a valid schedule is known (the "
           "just-in-time witness%s or a baseline within the budget): %d of "
           "%d infeasible answers\n",
           S.have_constructive ? ", the \"constructive\" planner" : "",
           S.infeasible_known_valid, S.infeasible_total);
    printf("  monotonicity violations: %d along budgets, %d along bandwidth "
           "(%d pairs checked)\n", S.mono_budget, S.mono_bw, S.mono_checked);
    printf("  hoplan over budget: %d; worse than a baseline within budget: "
           "%d of %d valid points; exposed > 0 where the bound is 0 and the "
           "link has slack: %d\n", S.hoplan_over, S.hoplan_worse,
           S.hoplan_ok, S.slack_exposed);
}

int main(int argc, char **argv)
{
    const char *captured = "examples/pytorch/traces/transformer_step.json";
    const char *hoctl = NULL, *scratch = ".hyperoffload/bench";
    int repeats = 3, large_repeats = 3;
    bool large = true, large_all = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--captured") == 0 && i + 1 < argc)
            captured = argv[++i];
        else if (strcmp(argv[i], "--hoctl") == 0 && i + 1 < argc)
            hoctl = argv[++i];
        else if (strcmp(argv[i], "--scratch") == 0 && i + 1 < argc)
            scratch = argv[++i];
        else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
            if (repeats < 1 || repeats > 16)
                repeats = 3;
        } else if (strcmp(argv[i], "--large-repeats") == 0 && i + 1 < argc) {
            large_repeats = atoi(argv[++i]);
            if (large_repeats < 1 || large_repeats > 16)
                large_repeats = 3;
        } else if (strcmp(argv[i], "--no-large") == 0) {
            large = false;
        } else if (strcmp(argv[i], "--large-all") == 0) {
            large_all = true;
        } else {
            fprintf(stderr, "usage: %s [--captured FILE] [--repeats N] "
                            "[--no-large] [--large-all] [--hoctl PATH] "
                            "[--scratch DIR] [--large-repeats N]\n",
                    argv[0]);
            return 2;
        }
    }
    char hbuf[1024];
    if (!hoctl) { /* next to this program (build/bin) */
        const char *slash = strrchr(argv[0], '/');
        snprintf(hbuf, sizeof hbuf, "%.*shoctl",
                 slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
        hoctl = hbuf;
    }
    for (int p = 0; plan_planner_names[p]; p++)
        if (strcmp(plan_planner_names[p], "constructive") == 0)
            S.have_constructive = true;
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t_start = now_ms();
    printf("bench_planner: peak = %% of the no-offload peak; exposed = step "
           "time - compute; bound = lower bound on any valid schedule's "
           "exposed time (fast); moved = H2D + D2H; plan ms = median of %d "
           "at full link, 1 run otherwise\n",
           repeats);

    trace_row rows[8];
    int nr = 0;
    static const char *const models[2] = {"llama2-7b", "llama3-8b"};
    static char names[4][128];
    for (int k = 0; k < 4; k++) {
        bool mv = k & 1;
        snprintf(names[k], sizeof names[k], "%s train, seq 32768, params "
                 "and optimizer %s (910b)", models[k / 2],
                 mv ? "movable" : "on device, not movable");
        rows[nr++] = (trace_row){names[k], train(models[k / 2], 32768, mv),
                                 true};
    }
    rows[nr++] = (trace_row){"llama3-8b decode, prompt 8192, 8 tokens, "
                             "batch 32, KV cache movable (910b)",
                             decode(), false};
    char err[256];
    plan_trace *ct = NULL;
    if (plan_trace_read_file(captured, &ct, err, sizeof err) == 0 &&
        plan_trace_finish(ct, err, sizeof err) == 0)
        rows[nr++] = (trace_row){"captured PyTorch step", ct, false};
    else
        printf("\nnote: captured trace %s not read (%s): row skipped; "
               "write one with examples/pytorch/capture_example.py --out "
               "FILE and pass --captured FILE\n",
               captured, err);
    for (int i = 0; i < nr; i++) {
        run_trace(&rows[i], repeats);
        plan_trace_free(rows[i].t);
    }
    print_summary();
    char pb[512], js[512];
    snprintf(pb, sizeof pb, "%s/random1m.pb", scratch);
    snprintf(js, sizeof js, "%s/random1m.json", scratch);
    mkdir(".hyperoffload", 0755);
    mkdir(scratch, 0755);
    if (large && large_files(hoctl, pb, js) == 0) {
        plan_trace *t = NULL;
        double t0 = now_ms();
        if (plan_trace_read_file(pb, &t, err, sizeof err) < 0 ||
            plan_trace_finish(t, err, sizeof err) < 0) {
            fprintf(stderr, "%s: %s\n", pb, err);
            return 1;
        }
        double read_ms = now_ms() - t0;
        plan_trace_summary sm;
        if (plan_trace_summarize(t, &sm) == 0) {
            uint64_t budget = (uint64_t)((double)sm.no_offload_peak * 0.7);
            printf("\n`hoctl trace gen random --seed 7 --ops 1000000 "
                   "--storages 250000` (read from protobuf in %.0f ms), "
                   "budget 70%%, planning core in this process (plan_make, "
                   "median of %d for hoplan):\n", read_ms, large_repeats);
            printf("   %-16s %-8s %7s %11s %11s %7s %9s %9s\n", "planner",
                   "result", "peak", "exposed ms", "bound ms", "exp/bnd",
                   "moved GB", "plan ms");
            plan_bound_result br;
            plan_bound_options bo;
            memset(&bo, 0, sizeof bo);
            bo.mode = PLAN_BOUND_FAST;
            if (plan_exposure_bound(t, budget, NULL, &bo, &br, err,
                                    sizeof err) < 0)
                memset(&br, 0, sizeof br);
            for (int p = 0; plan_planner_names[p]; p++) {
                const char *name = plan_planner_names[p];
                if (strcmp(name, "oracle") == 0)
                    continue;
                if (strcmp(name, "seed-greedy") == 0 && !large_all) {
                    printf("   %-16s skipped: O(candidates x ops), a minute "
                           "here (--large-all runs it)\n", name);
                    continue;
                }
                outcome o;
                run_planner(t, name, budget,
                            strcmp(name, "hoplan") == 0 ? large_repeats : 1,
                            &o);
                print_outcome(name, &o, sm.no_offload_peak, &br);
            }
            printf("   bound (fast): %.1f ms, %s, %.0f ms to compute\n",
                   br.bound_us / 1e3, br.source ? br.source : "none",
                   br.total_ms);
        }
        plan_trace_free(t);
        large_e2e(hoctl, scratch, pb, js, large_repeats);
    }
    printf("\nbench_planner: %.0f s in all\n", (now_ms() - t_start) / 1e3);
    return 0;
}
