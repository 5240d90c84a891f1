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
 * Strategies (node_strategy; NODE.md §4 names the baselines):
 *   independent  each client planned alone by hoplan at its budget (the
 *                workload's budget_bytes, else an equal split of its
 *                device's capacity among the device's clients) and with
 *                the bandwidth it would see alone: its device's figures
 *                capped by every link on its path (latency and duplex its
 *                device's).  What the daemon does before arbitration.
 * The arbiter of NODE.md §4 is a later strategy of this enum.
 *
 * --out DIR writes DIR/workload.json (NODE.md §2 with the arbiter's fields:
 * budget_bytes, planned_h2d_gbps/planned_d2h_gbps, predicted as the judge
 * computes them) and beside it each client's trace (with the link it was
 * planned for) and schedule, so that `hoctl node check --node N.json
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
#include "planner/viz/plan_svg.h"

#define ERRLEN 512

typedef enum node_strategy {
    NODE_STRATEGY_INDEPENDENT = 0,
    NODE_STRATEGY__COUNT
} node_strategy;

static const char *const strategy_names[NODE_STRATEGY__COUNT] = {
    "independent"};

static const char node_plan_usage[] =
    "usage: hoctl node plan --node N.json --workload W.json "
    "[--strategy independent]\n"
    "                       [--steps K] [--out DIR] [--svg FILE] [--json]\n";

/* One client as planned. */
typedef struct np_client {
    plan_trace *t;          /* owned; its link is the planned one */
    plan_schedule *s;       /* owned */
    plan_metrics alone;     /* plan_simulate's figures */
    uint64_t budget;
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

/* The bandwidth a client of device d sees alone: its own figure capped by
 * every link up to the root. */
static void alone_link(const plan_node *n, uint32_t d, plan_link *ret)
{
    const plan_node_device *dv = &n->devices[d];
    ret->h2d_gbps = dv->h2d_gbps;
    ret->d2h_gbps = dv->d2h_gbps;
    ret->latency_us = dv->latency_us;
    ret->duplex = dv->duplex;
    for (uint32_t l = dv->parent, hop = 0;
         l != PLAN_NONE && l < n->n_links && hop <= PLAN_NODE_MAX_DEPTH;
         l = n->links[l].parent, hop++) {
        if (n->links[l].h2d_gbps < ret->h2d_gbps)
            ret->h2d_gbps = n->links[l].h2d_gbps;
        if (n->links[l].d2h_gbps < ret->d2h_gbps)
            ret->d2h_gbps = n->links[l].d2h_gbps;
    }
}

/* Plan client i alone (strategy independent). 0, or the exit code with
 * the reason printed. */
static int plan_alone(const plan_node *n, const plan_workload *w, uint32_t i,
                      uint32_t d, np_client *c)
{
    const plan_wl_client *wc = &w->clients[i];
    char err[ERRLEN] = "", *path = plan_workload_path(w, wc->trace);
    plan_options po = {"hoplan", 0, 0, 0};
    plan_result res;
    plan_violation v;
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
    alone_link(n, d, &c->t->link);
    if (!wc->has_budget) {
        /* an equal split of the device's capacity */
        const plan_node_device *dv = &n->devices[d];
        uint32_t on = 0;
        for (uint32_t k = 0; k < w->n_clients; k++)
            on += w->clients[k].device == dv->id;
        c->budget = (dv->hbm_bytes - dv->reserve_bytes) / (on ? on : 1);
    } else {
        c->budget = wc->budget_bytes;
    }
    memset(&res, 0, sizeof res);
    r = plan_make(c->t, c->budget, &po, &c->s, &res);
    if (r == HO_E_INFEASIBLE) {
        hoctl_fmt b1, b2;
        fprintf(stderr, "hoctl: node plan: client \"%s\": budget %s is "
                "infeasible for hoplan; smallest feasible budget is %s\n",
                wc->name, hoctl_fmt_size(c->budget, b1),
                hoctl_fmt_size(res.min_budget, b2));
        return HOCTL_EXIT_FAILED;
    }
    if (r < 0) {
        fprintf(stderr, "hoctl: node plan: client \"%s\": %s\n", wc->name,
                res.message[0] ? res.message : ho_strerror(r));
        return HOCTL_EXIT_FAILED;
    }
    r = plan_simulate(c->t, c->s, &c->alone, &v, NULL);
    if (r < 0) {
        fprintf(stderr, "hoctl: node plan: client \"%s\": the plan does not "
                "hold alone: %s\n", wc->name, v.message);
        return HOCTL_EXIT_FAILED;
    }
    /* a file stem: the index and the name's safe characters */
    int k = snprintf(c->file, sizeof c->file, "%u-", i);
    for (const char *p = wc->name; *p && k < (int)sizeof c->file - 1; p++)
        c->file[k++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                               (*p >= '0' && *p <= '9') || *p == '-' ||
                               *p == '_' || *p == '.'
                           ? *p
                           : '_';
    c->file[k] = 0;
    return HOCTL_EXIT_OK;
}

static int write_json_file(const char *dir, const char *name,
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
                     const np_client *c, const plan_node_result *res)
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
        if ((r = write_json_file(dir, tname, c[i].t, NULL, NULL)) < 0 ||
            (r = write_json_file(dir, sname, NULL, c[i].s, NULL)) < 0) {
            fprintf(stderr, "hoctl: node plan: writing %s/%s: %s\n", dir,
                    tname, ho_strerror(r));
            break;
        }
        wc.trace = tname;
        wc.schedule = sname;
        wc.has_budget = true;
        wc.budget_bytes = c[i].budget;
        wc.has_planned_h2d = wc.has_planned_d2h = true;
        wc.planned_h2d_gbps = c[i].t->link.h2d_gbps;
        wc.planned_d2h_gbps = c[i].t->link.d2h_gbps;
        wc.has_predicted = true;
        wc.predicted.step_time_us = res->clients[i].step_time_us;
        wc.predicted.exposed_us = res->clients[i].exposed_us;
        wc.predicted.alloc_wait_us = res->clients[i].alloc_wait_us;
        r = plan_workload_add_client(o, &wc, err, sizeof err);
        if (r < 0)
            fprintf(stderr, "hoctl: node plan: %s\n",
                    err[0] ? err : ho_strerror(r));
    }
    if (r == 0 && (r = write_json_file(dir, "workload.json", NULL, NULL,
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
                       const plan_node_result *res, const char *strategy)
{
    hoctl_table t;
    hoctl_fmt b[10];
    char bw[64], sd[32];

    printf("strategy %s: %u clients planned alone by hoplan, judged "
           "together (last of %u steps)\n", strategy, w->n_clients,
           res->steps);
    hoctl_table_init(&t, 10);
    hoctl_table_row(&t, "CLIENT", "DEVICE", "BUDGET", "PLANNED GB/s",
                    "EXPOSED ALONE", "STEP TIME", "EXPOSED", "ALLOC WAIT",
                    "SLOWDOWN", "H2D");
    for (uint32_t i = 0; i < w->n_clients; i++) {
        const plan_node_client_fig *f = &res->clients[i];
        snprintf(bw, sizeof bw, "%g/%g", c[i].t->link.h2d_gbps,
                 c[i].t->link.d2h_gbps);
        snprintf(sd, sizeof sd, "%.3f", f->slowdown);
        hoctl_table_row(&t, w->clients[i].name,
                        hoctl_fmt_u64(w->clients[i].device, b[0]),
                        hoctl_fmt_size(c[i].budget, b[1]), bw,
                        hoctl_fmt_us(c[i].alone.exposed_us, b[2]),
                        hoctl_fmt_us(f->step_time_us, b[3]),
                        hoctl_fmt_us(f->exposed_us, b[4]),
                        hoctl_fmt_us(f->alloc_wait_us, b[5]), sd,
                        hoctl_fmt_size(f->h2d_bytes, b[6]));
    }
    hoctl_table_print(&t, "");
    putchar('\n');
    hoctl_field("weighted exposed", "%s",
                hoctl_fmt_us(res->weighted_exposed_us, b[0]));
    hoctl_field("max slowdown", "%.3f", res->max_slowdown);
    hoctl_field("alloc wait", "%s", hoctl_fmt_us(res->alloc_wait_us, b[1]));
}

static int print_json(const plan_workload *w, const np_client *c,
                      const plan_node_result *res, const np_args *a,
                      const char *strategy)
{
    json_t *o = hoctl_json_root(), *cl = json_array();
    if (!o || !cl) {
        json_decref(o);
        json_decref(cl);
        return hoctl_json_emit(NULL);
    }
    json_object_set_new(o, "valid", json_true());
    json_object_set_new(o, "strategy", json_string(strategy));
    json_object_set_new(o, "steps", json_integer(res->steps));
    for (uint32_t i = 0; i < w->n_clients; i++) {
        const plan_node_client_fig *f = &res->clients[i];
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(w->clients[i].name));
        json_object_set_new(x, "device", json_integer(w->clients[i].device));
        json_object_set_new(x, "budget_bytes", hoctl_json_u64(c[i].budget));
        json_object_set_new(x, "planned_h2d_gbps",
                            json_real(c[i].t->link.h2d_gbps));
        json_object_set_new(x, "planned_d2h_gbps",
                            json_real(c[i].t->link.d2h_gbps));
        json_object_set_new(x, "alone_step_time_us",
                            json_real(c[i].alone.step_time_us));
        json_object_set_new(x, "alone_exposed_us",
                            json_real(c[i].alone.exposed_us));
        json_object_set_new(x, "compute_us", json_real(f->compute_us));
        json_object_set_new(x, "step_time_us", json_real(f->step_time_us));
        json_object_set_new(x, "exposed_us", json_real(f->exposed_us));
        json_object_set_new(x, "alloc_wait_us", json_real(f->alloc_wait_us));
        json_object_set_new(x, "slowdown", json_real(f->slowdown));
        json_object_set_new(x, "h2d_bytes", hoctl_json_u64(f->h2d_bytes));
        json_object_set_new(x, "d2h_bytes", hoctl_json_u64(f->d2h_bytes));
        json_object_set_new(x, "actions", hoctl_json_u64(c[i].s->n_actions));
        json_array_append_new(cl, x);
    }
    json_object_set_new(o, "clients", cl);
    json_object_set_new(
        o, "node",
        json_pack("{s:f, s:f, s:f}", "weighted_exposed_us",
                  res->weighted_exposed_us, "max_slowdown",
                  res->max_slowdown, "alloc_wait_us", res->alloc_wait_us));
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
    plan_node_input *in = NULL;
    char **groups = NULL;
    uint32_t n_groups = 0;
    plan_node_result *res = NULL;
    plan_node_violation v;
    plan_node_opts o = {0};
    char err[ERRLEN] = "";
    node_strategy st = NODE_STRATEGY_INDEPENDENT;
    int r, rc = HOCTL_EXIT_FAILED;

    if (argc == 1 && strcmp(argv[0], "help") == 0) {
        fputs(node_plan_usage, stdout);
        return HOCTL_EXIT_OK;
    }
    memset(&a, 0, sizeof a);
    if ((r = parse_args(argc, argv, &a)) != 0)
        return r;
    if (a.strategy) {
        for (st = 0; st < NODE_STRATEGY__COUNT; st++)
            if (strcmp(a.strategy, strategy_names[st]) == 0)
                break;
        if (st == NODE_STRATEGY__COUNT)
            return hoctl_usage_error("node plan: --strategy: expected "
                                     "independent, got '%s' (the arbiter "
                                     "of NODE.md §4 is not implemented)",
                                     a.strategy);
    }
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
    c = calloc(w->n_clients ? w->n_clients : 1, sizeof *c);
    in = calloc(w->n_clients ? w->n_clients : 1, sizeof *in);
    groups = calloc(w->n_clients ? w->n_clients : 1, sizeof *groups);
    if (!c || !in || !groups) {
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
        if ((rc = plan_alone(n, w, i, d, &c[i])) != HOCTL_EXIT_OK)
            goto out;
        rc = HOCTL_EXIT_FAILED;
        in[i].name = wc->name;
        in[i].trace = c[i].t;
        in[i].schedule = c[i].s;
        in[i].device = d;
        in[i].budget_bytes = c[i].budget;
        in[i].weight = wc->weight;
        in[i].sync = PLAN_NONE;
        if (wc->sync) {
            uint32_t k = 0;
            while (k < n_groups && strcmp(groups[k], wc->sync) != 0)
                k++;
            if (k == n_groups)
                groups[n_groups++] = wc->sync;
            in[i].sync = k;
        }
    }
    r = plan_node_judge(n, in, w->n_clients, &o, &res, &v);
    if (r == HO_E_BAD_SCHEDULE) {
        fprintf(stderr, "hoctl: node plan: the node is invalid with these "
                "plans: %s\n", v.message);
        goto out;
    }
    if (r < 0) {
        fprintf(stderr, "hoctl: node plan: %s\n", ho_strerror(r));
        goto out;
    }
    if (a.out && write_out(a.out, w, c, res) < 0)
        goto out;
    if (a.svg && (r = draw(a.svg, n, w, in, &o, res,
                           strategy_names[st])) < 0) {
        fprintf(stderr, "hoctl: node plan: writing %s: %s\n", a.svg,
                ho_strerror(r));
        goto out;
    }
    if (g->json) {
        rc = print_json(w, c, res, &a, strategy_names[st]);
    } else {
        print_text(w, c, res, strategy_names[st]);
        if (a.out)
            hoctl_field("workload", "%s/workload.json", a.out);
        if (a.svg)
            hoctl_field("picture", "%s", a.svg);
        rc = HOCTL_EXIT_OK;
    }
out:
    plan_node_result_free(res);
    for (uint32_t i = 0; c && w && i < w->n_clients; i++) {
        plan_trace_free(c[i].t);
        plan_schedule_free(c[i].s);
    }
    free(c);
    free(in);
    free(groups);
    plan_workload_free(w);
    plan_node_free(n);
    return rc;
}
