/*
 * hoctl/hoctl_node_plan.c - `hoctl node plan`, offline (no daemon):
 *
 *   hoctl node plan --node N.json --workload W.json [--strategy independent]
 *                   [--steps K] [--out DIR] [--svg FILE] [--json]
 *
 * Plans every client of the workload with a strategy, judges the whole
 * node with the node judge (NODE.md §3, docs/node.md) and prints, per
 * client, its exposed time planned alone and on the node (with the
 * allocation waits and the slowdown), and the node's totals.
 *
 * Strategies (plan_arb_strategy, planner/node/node_arbiter.h; the rules
 * in docs/node.md "The arbiter"):
 *   arbiter      (default) budgets by marginal benefit on each client's
 *                exposure curve, bandwidth by weighted max-min shares
 *                capped at each client's demand; the baselines are judged
 *                beside it and the best of the three is returned;
 *   independent  each client alone at its device's figures (capped by the
 *                links above it): the daemon before arbitration;
 *   equal-share  every shared capacity split equally among its clients.
 * The three candidates' judged figures are printed side by side.
 *
 * --out DIR writes DIR/workload.json (NODE.md §2 with the arbiter's fields:
 * budget_bytes, planned_h2d_gbps/planned_d2h_gbps, ddr_limit_bytes,
 * predicted as the judge computes them) and beside it each client's trace
 * and schedule, so that `hoctl node check --node N.json
 * --workload DIR/workload.json` judges exactly this and matches.  --svg
 * draws the judged node (planner/viz/plan_svg.h).
 *
 * Exit codes: 0 planned and valid; 1 a client infeasible at its budget,
 * the node invalid, or a write failed; 2 usage; 4 a missing file.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "hoctl/hoctl.h"
#include "hoctl/hoctl_node.h"
#include "hoctl/hoctl_node_plan.h"
#include "hoctl/output.h"
#include "hyperoffload/errors.h"
#include "planner/io/plan_io.h"
#include "planner/node/node.h"
#include "planner/node/node_arbiter.h"
#include "planner/viz/plan_svg.h"

#define ERRLEN 512

static const char node_plan_usage[] =
    "usage: hoctl node plan --node N.json --workload W.json "
    "[--strategy arbiter|independent|equal-share]\n"
    "                       [--steps K] [--out DIR] [--svg FILE] [--json]\n";

/* One client: its trace as read, its figures alone. */
typedef struct np_client {
    plan_trace *t;          /* owned */
    plan_metrics alone;     /* plan_simulate's figures of its schedule */
    char file[64];          /* file stem in --out */
} np_client;

typedef struct np_args {
    const char *npath, *wpath, *strategy, *steps, *out, *svg;
} np_args;

static int parse_args(int argc, char **argv, np_args *a)
{
    static const char *const names[] = {"node", "workload", "strategy",
                                        "steps", "out", "svg"};
    const char **vals[] = {&a->npath, &a->wpath, &a->strategy, &a->steps,
                           &a->out, &a->svg};
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i], *eq;
        size_t n, k;
        if (strncmp(s, "--", 2) != 0)
            return hoctl_usage_error("node plan: unexpected argument '%s'",
                                     s);
        s += 2;
        eq = strchr(s, '=');
        n = eq ? (size_t)(eq - s) : strlen(s);
        for (k = 0; k < sizeof names / sizeof *names; k++)
            if (strlen(names[k]) == n && strncmp(names[k], s, n) == 0)
                break;
        if (k == sizeof names / sizeof *names)
            return hoctl_usage_error("node plan: unknown option '--%.*s'",
                                     (int)n, s);
        if (eq) {
            *vals[k] = eq + 1;
        } else {
            if (i + 1 >= argc)
                return hoctl_usage_error("node plan: --%s needs a value",
                                         names[k]);
            *vals[k] = argv[++i];
        }
    }
    if (!a->npath || !a->wpath) {
        fputs(node_plan_usage, stderr);
        return HOCTL_EXIT_USAGE;
    }
    return HOCTL_EXIT_OK;
}

/* Read client i's trace and name its files.  0, or the exit code with
 * the reason printed. */
static int load_client(const plan_workload *w, uint32_t i, np_client *c)
{
    const plan_wl_client *wc = &w->clients[i];
    char err[ERRLEN] = "", *path = plan_workload_path(w, wc->trace);
    int r;

    if (!path) {
        fputs("hoctl: node plan: out of memory\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    r = plan_trace_read_file(path, &c->t, err, sizeof err);
    if (r < 0) {
        fprintf(stderr, "hoctl: node plan: clients[%u] (%s): trace %s: %s\n",
                i, wc->name, path, err[0] ? err : ho_strerror(r));
        free(path);
        return r == -ENOENT ? HOCTL_EXIT_NOT_FOUND : HOCTL_EXIT_FAILED;
    }
    free(path);
    plan_workload_file_stem(c->file, sizeof c->file, i, wc->name);
    return HOCTL_EXIT_OK;
}

int hoctl_node_write_json(const char *dir, const char *name,
                          const plan_trace *t, const plan_schedule *s,
                          const plan_workload *w)
{
    char path[PATH_MAX];
    FILE *f;
    int r;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return -ENAMETOOLONG;
    f = fopen(path, "w");
    if (!f)
        return -errno;
    r = t ? plan_trace_write_json(t, f)
          : s ? plan_schedule_write_json(s, f) : plan_workload_write_json(w, f);
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    return r < 0 ? r : 0;
}

/* --out DIR: the traces, schedules and workload.json. */
static int write_out(const char *dir, const plan_workload *w,
                     const np_client *c, const plan_arb_result *R)
{
    plan_workload *o = plan_workload_new(dir);
    char err[ERRLEN] = "", tname[96], sname[96];
    int r = 0;

    if (!o)
        return -ENOMEM;
    if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
        r = -errno;
        fprintf(stderr, "hoctl: node plan: mkdir %s: %s\n", dir,
                ho_strerror(r));
        goto out;
    }
    for (uint32_t i = 0; i < w->n_clients && r == 0; i++) {
        plan_wl_client wc = w->clients[i];
        snprintf(tname, sizeof tname, "%s.trace.json", c[i].file);
        snprintf(sname, sizeof sname, "%s.schedule.json", c[i].file);
        if ((r = hoctl_node_write_json(dir, tname, c[i].t, NULL, NULL)) < 0 ||
            (r = hoctl_node_write_json(dir, sname, NULL, R->clients[i].schedule,
                                 NULL)) < 0) {
            fprintf(stderr, "hoctl: node plan: writing %s/%s: %s\n", dir,
                    tname, ho_strerror(r));
            break;
        }
        wc.trace = tname;
        wc.schedule = sname;
        wc.has_budget = true;
        wc.budget_bytes = R->clients[i].budget_bytes;
        wc.has_planned_h2d = wc.has_planned_d2h = true;
        wc.planned_h2d_gbps = R->clients[i].h2d_gbps;
        wc.planned_d2h_gbps = R->clients[i].d2h_gbps;
        wc.has_ddr_limit = true;
        wc.ddr_limit_bytes = R->clients[i].ddr_limit_bytes;
        wc.has_predicted = true;
        wc.predicted = R->clients[i].predicted;
        r = plan_workload_add_client(o, &wc, err, sizeof err);
        if (r < 0)
            fprintf(stderr, "hoctl: node plan: %s\n",
                    err[0] ? err : ho_strerror(r));
    }
    if (r == 0 && (r = hoctl_node_write_json(dir, "workload.json", NULL, NULL,
                                       o)) < 0)
        fprintf(stderr, "hoctl: node plan: writing %s/workload.json: %s\n",
                dir, ho_strerror(r));
out:
    plan_workload_free(o);
    return r;
}

static int draw(const char *path, const plan_node *n, const plan_workload *w,
                const plan_node_input *in, const plan_node_opts *o,
                const plan_node_result *res, const char *strategy)
{
    double t0, t1;
    char title[256], sub[256];
    hoctl_fmt b1;
    int r;

    plan_svg_node_window(res, &t0, &t1);
    snprintf(title, sizeof title, "node plan (%s): %u clients on %u "
             "devices, %u links", strategy, w->n_clients, n->n_devices,
             n->n_links);
    snprintf(sub, sizeof sub, "node judge, last of %u steps: weighted "
             "exposed %s, max slowdown %.3f, alloc wait %.1f ms",
             res->steps, hoctl_fmt_us(res->weighted_exposed_us, b1),
             res->max_slowdown, res->alloc_wait_us / 1e3);
    plan_svg *f = plan_svg_new(title, sub, t0, t1);
    if (!f)
        return -ENOMEM;
    plan_svg_series_names(f, "device memory of the client (node judge)",
                          NULL);
    r = plan_svg_add_node(f, n, in, w->n_clients, o, res);
    if (r == 0)
        r = plan_svg_write_file(f, path);
    plan_svg_free(f);
    return r;
}

static void print_text(const plan_workload *w, const np_client *c,
                       const plan_arb_result *R)
{
    const plan_node_result *res = R->judged;
    hoctl_table t;
    hoctl_fmt b[10];
    char bw[64], sd[32];

    printf("strategy %s", plan_arb_strategy_name(R->asked));
    if (R->chosen != R->asked)
        printf(" (the best candidate was %s)",
               plan_arb_strategy_name(R->chosen));
    printf(": %u clients, judged together (last of %u steps), %u plans "
           "made\n", w->n_clients, res->steps, R->plans_made);
    hoctl_table_init(&t, 11);
    hoctl_table_row(&t, "CLIENT", "DEVICE", "BUDGET", "PLANNED GB/s",
                    "DDR LIMIT", "EXPOSED ALONE", "STEP TIME", "EXPOSED",
                    "ALLOC WAIT", "SLOWDOWN", "H2D");
    for (uint32_t i = 0; i < w->n_clients; i++) {
        const plan_node_client_fig *f = &res->clients[i];
        const plan_arb_choice *ch = &R->clients[i];
        snprintf(bw, sizeof bw, "%.3g/%.3g", ch->h2d_gbps, ch->d2h_gbps);
        snprintf(sd, sizeof sd, "%.3f", f->slowdown);
        hoctl_table_row(&t, w->clients[i].name,
                        hoctl_fmt_u64(w->clients[i].device, b[0]),
                        hoctl_fmt_size(ch->budget_bytes, b[1]), bw,
                        hoctl_fmt_size(ch->ddr_limit_bytes, b[7]),
                        hoctl_fmt_us(c[i].alone.exposed_us, b[2]),
                        hoctl_fmt_us(f->step_time_us, b[3]),
                        hoctl_fmt_us(f->exposed_us, b[4]),
                        hoctl_fmt_us(f->alloc_wait_us, b[5]), sd,
                        hoctl_fmt_size(f->h2d_bytes, b[6]));
    }
    hoctl_table_print(&t, "");
    putchar('\n');
    hoctl_table_init(&t, 5);
    hoctl_table_row(&t, "CANDIDATE", "WEIGHTED EXPOSED", "MAX SLOWDOWN",
                    "ALLOC WAIT", "MOVED/STEP");
    for (int k = 0; k < PLAN_ARB__COUNT; k++) {
        const plan_arb_outcome *o = &R->outcomes[k];
        char sl[32];
        if (!o->tried)
            continue;
        if (!o->valid) {
            hoctl_table_row(&t, plan_arb_strategy_name((plan_arb_strategy)k),
                            "no valid plan", o->why, "", "");
            continue;
        }
        snprintf(sl, sizeof sl, "%.3f", o->max_slowdown);
        hoctl_table_row(&t, plan_arb_strategy_name((plan_arb_strategy)k),
                        hoctl_fmt_us(o->weighted_exposed_us, b[0]), sl,
                        hoctl_fmt_us(o->alloc_wait_us, b[1]),
                        hoctl_fmt_size(o->bytes_moved, b[2]));
    }
    hoctl_table_print(&t, "");
    putchar('\n');
    hoctl_field("weighted exposed", "%s",
                hoctl_fmt_us(res->weighted_exposed_us, b[0]));
    hoctl_field("max slowdown", "%.3f", res->max_slowdown);
    hoctl_field("alloc wait", "%s", hoctl_fmt_us(res->alloc_wait_us, b[1]));
}

static int print_json(const plan_workload *w, const np_client *c,
                      const plan_arb_result *R, const np_args *a)
{
    const plan_node_result *res = R->judged;
    json_t *o = hoctl_json_root(), *cl = json_array();
    if (!o || !cl) {
        json_decref(o);
        json_decref(cl);
        return hoctl_json_emit(NULL);
    }
    json_object_set_new(o, "valid", json_true());
    json_object_set_new(o, "strategy",
                        json_string(plan_arb_strategy_name(R->asked)));
    json_object_set_new(o, "chosen",
                        json_string(plan_arb_strategy_name(R->chosen)));
    json_object_set_new(o, "plans_made", json_integer(R->plans_made));
    json_object_set_new(o, "steps", json_integer(res->steps));
    for (uint32_t i = 0; i < w->n_clients; i++) {
        const plan_node_client_fig *f = &res->clients[i];
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(w->clients[i].name));
        json_object_set_new(x, "device", json_integer(w->clients[i].device));
        json_object_set_new(x, "budget_bytes",
                            hoctl_json_u64(R->clients[i].budget_bytes));
        json_object_set_new(x, "planned_h2d_gbps",
                            json_real(R->clients[i].h2d_gbps));
        json_object_set_new(x, "planned_d2h_gbps",
                            json_real(R->clients[i].d2h_gbps));
        json_object_set_new(x, "ddr_limit_bytes",
                            hoctl_json_u64(R->clients[i].ddr_limit_bytes));
        json_object_set_new(x, "alone_step_time_us",
                            json_real(c[i].alone.step_time_us));
        json_object_set_new(x, "alone_exposed_us",
                            json_real(c[i].alone.exposed_us));
        hoctl_node_fig_json(x, f);
        json_object_set_new(
            x, "actions", hoctl_json_u64(R->clients[i].schedule->n_actions));
        json_array_append_new(cl, x);
    }
    json_object_set_new(o, "clients", cl);
    json_t *cand = json_object();
    for (int k = 0; cand && k < PLAN_ARB__COUNT; k++) {
        const plan_arb_outcome *oc = &R->outcomes[k];
        if (!oc->tried)
            continue;
        json_t *y = oc->valid
                        ? json_pack("{s:b, s:f, s:f, s:f, s:I}", "valid", 1,
                                    "weighted_exposed_us",
                                    oc->weighted_exposed_us, "max_slowdown",
                                    oc->max_slowdown, "alloc_wait_us",
                                    oc->alloc_wait_us, "bytes_moved",
                                    (json_int_t)oc->bytes_moved)
                        : json_pack("{s:b, s:s}", "valid", 0, "reason",
                                    oc->why);
        json_object_set_new(cand, plan_arb_strategy_name((plan_arb_strategy)k),
                            y);
    }
    json_object_set_new(o, "candidates", cand ? cand : json_null());
    json_object_set_new(o, "node", hoctl_node_totals_json(res));
    json_object_set_new(o, "out", a->out ? json_string(a->out) : json_null());
    json_object_set_new(o, "svg", a->svg ? json_string(a->svg) : json_null());
    return hoctl_json_emit(o);
}

int hoctl_cmd_node_plan(const hoctl_globals *g, int argc, char **argv)
{
    np_args a;
    plan_node *n = NULL;
    plan_workload *w = NULL;
    np_client *c = NULL;
    plan_arb_client *ac = NULL;
    plan_node_input *in = NULL;
    char **groups = NULL;
    uint32_t n_groups = 0;
    plan_arb_result *R = NULL;
    plan_node_opts o = {0};
    plan_arb_opts ao = {0};
    char err[ERRLEN] = "";
    plan_arb_strategy st = PLAN_ARB_ARBITER;
    int r, rc = HOCTL_EXIT_FAILED;

    if (argc == 1 && strcmp(argv[0], "help") == 0) {
        fputs(node_plan_usage, stdout);
        return HOCTL_EXIT_OK;
    }
    memset(&a, 0, sizeof a);
    if ((r = parse_args(argc, argv, &a)) != 0)
        return r;
    if (a.strategy && plan_arb_strategy_parse(a.strategy, &st) < 0)
        return hoctl_usage_error("node plan: --strategy: expected arbiter, "
                                 "independent or equal-share, got '%s'",
                                 a.strategy);
    if (a.steps) {
        char *end;
        unsigned long k;
        errno = 0;
        k = strtoul(a.steps, &end, 10);
        if (errno || *end || !*a.steps || a.steps[0] == '-' || k < 1 ||
            k > PLAN_NODE_MAX_STEPS)
            return hoctl_usage_error("--steps: expected an integer in [1, "
                                     "%u], got '%s'", PLAN_NODE_MAX_STEPS,
                                     a.steps);
        o.steps = (uint32_t)k;
    }
    ao.steps = o.steps;
    r = plan_node_read_json(a.npath, &n, err, sizeof err);
    if (r < 0) {
        fprintf(stderr, "hoctl: cannot read %s: %s\n", a.npath,
                err[0] ? err : ho_strerror(r));
        return r == -ENOENT ? HOCTL_EXIT_NOT_FOUND : HOCTL_EXIT_FAILED;
    }
    r = plan_workload_read_json(a.wpath, &w, err, sizeof err);
    if (r < 0) {
        fprintf(stderr, "hoctl: cannot read %s: %s\n", a.wpath,
                err[0] ? err : ho_strerror(r));
        rc = r == -ENOENT ? HOCTL_EXIT_NOT_FOUND : HOCTL_EXIT_FAILED;
        goto out;
    }
    size_t cnt = w->n_clients ? w->n_clients : 1;
    c = calloc(cnt, sizeof *c);
    ac = calloc(cnt, sizeof *ac);
    in = calloc(cnt, sizeof *in);
    groups = calloc(cnt, sizeof *groups);
    if (!c || !ac || !in || !groups) {
        fputs("hoctl: node plan: out of memory\n", stderr);
        goto out;
    }
    for (uint32_t i = 0; i < w->n_clients; i++) {
        const plan_wl_client *wc = &w->clients[i];
        uint32_t d = plan_node_device_index(n, wc->device);
        if (d == PLAN_NONE) {
            fprintf(stderr, "hoctl: node plan: clients[%u].device: no "
                    "device %u in the node\n", i, wc->device);
            goto out;
        }
        if ((rc = load_client(w, i, &c[i])) != HOCTL_EXIT_OK)
            goto out;
        rc = HOCTL_EXIT_FAILED;
        uint32_t sync = PLAN_NONE;
        if (wc->sync) {
            uint32_t k = 0;
            while (k < n_groups && strcmp(groups[k], wc->sync) != 0)
                k++;
            if (k == n_groups)
                groups[n_groups++] = wc->sync;
            sync = k;
        }
        ac[i] = (plan_arb_client){
            .name = wc->name, .trace = c[i].t, .device = d,
            .has_budget = wc->has_budget, .budget_bytes = wc->budget_bytes,
            .weight = wc->weight, .sync = sync};
    }
    r = plan_node_arbitrate(n, ac, w->n_clients, st, &ao, &R, err,
                            sizeof err);
    if (r < 0) {
        fprintf(stderr, "hoctl: node plan: %s\n",
                err[0] ? err : ho_strerror(r));
        goto out;
    }
    for (uint32_t i = 0; i < w->n_clients; i++) {
        plan_violation v;
        in[i] = (plan_node_input){
            .name = ac[i].name, .trace = c[i].t,
            .schedule = R->clients[i].schedule, .device = ac[i].device,
            .budget_bytes = R->clients[i].budget_bytes,
            .weight = ac[i].weight, .sync = ac[i].sync};
        if (plan_simulate(c[i].t, R->clients[i].schedule, &c[i].alone, &v,
                          NULL) < 0) {
            fprintf(stderr, "hoctl: node plan: client \"%s\": the plan does "
                    "not hold alone: %s\n", ac[i].name, v.message);
            goto out;
        }
    }
    if (a.out && write_out(a.out, w, c, R) < 0)
        goto out;
    if (a.svg && (r = draw(a.svg, n, w, in, &o, R->judged,
                           plan_arb_strategy_name(R->chosen))) < 0) {
        fprintf(stderr, "hoctl: node plan: writing %s: %s\n", a.svg,
                ho_strerror(r));
        goto out;
    }
    if (g->json) {
        rc = print_json(w, c, R, &a);
    } else {
        print_text(w, c, R);
        if (a.out)
            hoctl_field("workload", "%s/workload.json", a.out);
        if (a.svg)
            hoctl_field("picture", "%s", a.svg);
        rc = HOCTL_EXIT_OK;
    }
out:
    plan_arb_result_free(R);
    for (uint32_t i = 0; c && w && i < w->n_clients; i++)
        plan_trace_free(c[i].t);
    free(c);
    free(ac);
    free(in);
    free(groups);
    plan_workload_free(w);
    plan_node_free(n);
    return rc;
}
