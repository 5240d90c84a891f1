/*
 * hoctl/hoctl_node.c - `hoctl node`, offline (no daemon) but for `show`
 * without --node:
 *
 *   hoctl node show [--node N.json] [--json]
 *       the node description as a tree; --json exports it as NODE.md §1's
 *       JSON (hyperoffload-node), exactly what the reader accepts; without
 *       --node the daemon's node (NodeRequest: its config sections, sysfs
 *       discovery or the emulated default, daemon/topology.h)
 *   hoctl node workload --out DIR [--json]
 *       the daemon's last planned workload (hoctl_node_workload.c)
 *   hoctl node check --node N.json --workload W.json [--steps K] [--json]
 *       run the node judge (NODE.md §3, docs/node.md) on the workload and
 *       print per client, per device and for the node its figures (of the
 *       last of K steps, default 3); --json: one object with "schema": 1,
 *       bytes as integers and times in microseconds
 *
 * Exit codes as in hoctl.h: 0 valid, 1 invalid workload (the reason names
 * the client, op and cause) or unreadable file, 2 usage, 4 file not found.
 * A workload whose clients carry `predicted` figures (an arbiter's output)
 * must match the judge to 0.1%, else exit 1.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "hoctl/hoctl.h"
#include "hoctl/hoctl_daemon.h"
#include "hoctl/hoctl_node.h"
#include "hoctl/hoctl_node_plan.h"
#include "hoctl/hoctl_node_workload.h"
#include "hoctl/output.h"
#include "hyperoffload/errors.h"
#include "planner/node/node.h"
#include "proto/frame.h"

#define ERRLEN 512



static int read_failure(int r, const char *what, const char *err)
{
    fprintf(stderr, "hoctl: cannot read %s: %s\n", what,
            err[0] ? err : ho_strerror(r));
    return r == -ENOENT ? HOCTL_EXIT_NOT_FOUND : HOCTL_EXIT_FAILED;
}

/* --name VALUE / --name=VALUE options; no positionals. */
typedef struct nopt {
    const char *name;
    const char **value;
} nopt;

static int parse_opts(const char *cmd, int argc, char **argv,
                      const nopt *opts)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *eq;
        const nopt *o;
        size_t n;
        if (strcmp(a, "--") == 0)
            continue; /* nothing positional follows: only options end */
        if (strncmp(a, "--", 2) != 0)
            return hoctl_usage_error("%s: unexpected argument '%s'", cmd, a);
        a += 2;
        eq = strchr(a, '=');
        n = eq ? (size_t)(eq - a) : strlen(a);
        for (o = opts; o->name; o++)
            if (strlen(o->name) == n && strncmp(o->name, a, n) == 0)
                break;
        if (!o->name)
            return hoctl_usage_error("%s: unknown option '--%.*s'", cmd, (int)n,
                               a);
        if (eq) {
            *o->value = eq + 1;
        } else {
            if (i + 1 >= argc)
                return hoctl_usage_error("%s: --%s needs a value", cmd, o->name);
            *o->value = argv[++i];
        }
    }
    return HOCTL_EXIT_OK;
}

/* ------------------------------------------------------------ tree */

static void print_gbps(FILE *f, double h2d, double d2h, bool duplex)
{
    fprintf(f, "H2D %g GB/s, D2H %g GB/s, %s", h2d, d2h,
            duplex ? "duplex" : "one capacity for both directions");
}

static void print_subtree(FILE *f, const plan_node *n, uint32_t link,
                          char *prefix, size_t plen, size_t cap);

static void print_device(FILE *f, const plan_node *n, uint32_t d,
                         const char *prefix, bool last)
{
    const plan_node_device *x = &n->devices[d];
    hoctl_fmt b1, b2;
    fprintf(f, "%s%s%s (device %u): HBM %s", prefix,
            last ? "`-- " : "|-- ", x->name,
            x->id, hoctl_fmt_size(x->hbm_bytes, b1));
    if (x->reserve_bytes)
        fprintf(f, " (reserve %s)", hoctl_fmt_size(x->reserve_bytes, b2));
    fputs("; ", f);
    fprintf(f, "H2D %g GB/s, D2H %g GB/s, latency %g us, %s\n", x->h2d_gbps,
            x->d2h_gbps, x->latency_us,
            x->duplex ? "duplex" : "one engine for both directions");
}

/* Children of `link` (links first, then devices), in file order. */
static void print_subtree(FILE *f, const plan_node *n, uint32_t link,
                          char *prefix, size_t plen, size_t cap)
{
    uint32_t total = 0, seen = 0;
    for (uint32_t i = 0; i < n->n_links; i++)
        total += n->links[i].parent == link && i != link;
    for (uint32_t i = 0; i < n->n_devices; i++)
        total += n->devices[i].parent == link;
    for (uint32_t i = 0; i < n->n_links; i++) {
        const plan_node_link *l = &n->links[i];
        if (l->parent != link || i == link)
            continue;
        bool last = ++seen == total;
        fprintf(f, "%s%s%s: ", prefix, last ? "`-- " : "|-- ", l->name);
        print_gbps(f, l->h2d_gbps, l->d2h_gbps, l->duplex);
        fputc('\n', f);
        if (plen + 5 < cap) {
            memcpy(prefix + plen, last ? "    " : "|   ", 5);
            print_subtree(f, n, i, prefix, plen + 4, cap);
            prefix[plen] = '\0';
        }
    }
    for (uint32_t i = 0; i < n->n_devices; i++) {
        if (n->devices[i].parent != link)
            continue;
        bool last = ++seen == total;
        print_device(f, n, i, prefix, last);
    }
}

void hoctl_node_fig_json(json_t *x, const plan_node_client_fig *f)
{
    json_object_set_new(x, "compute_us", json_real(f->compute_us));
    json_object_set_new(x, "step_time_us", json_real(f->step_time_us));
    json_object_set_new(x, "exposed_us", json_real(f->exposed_us));
    json_object_set_new(x, "alloc_wait_us", json_real(f->alloc_wait_us));
    json_object_set_new(x, "slowdown", json_real(f->slowdown));
    json_object_set_new(x, "h2d_bytes", hoctl_json_u64(f->h2d_bytes));
    json_object_set_new(x, "d2h_bytes", hoctl_json_u64(f->d2h_bytes));
}

json_t *hoctl_node_totals_json(const plan_node_result *r)
{
    return json_pack("{s:f, s:f, s:f}", "weighted_exposed_us",
                     r->weighted_exposed_us, "max_slowdown", r->max_slowdown,
                     "alloc_wait_us", r->alloc_wait_us);
}

void hoctl_node_print_tree(FILE *f, const plan_node *n)
{
    char prefix[4 * (PLAN_NODE_MAX_DEPTH + 2) + 1];
    hoctl_fmt b1, b2;

    prefix[0] = '\0';
    for (uint32_t i = 0; i < n->n_links; i++) {
        const plan_node_link *l = &n->links[i];
        if (l->parent != PLAN_NONE)
            continue;
        fprintf(f, "%s: ", l->name);
        print_gbps(f, l->h2d_gbps, l->d2h_gbps, l->duplex);
        fputc('\n', f);
        print_subtree(f, n, i, prefix, 0, sizeof prefix);
    }
    if (n->n_links == 0) {
        fputs("host (no links)\n", f);
        print_subtree(f, n, PLAN_NONE, prefix, 0, sizeof prefix);
    }
    fprintf(f, "DDR %s", hoctl_fmt_size(n->ddr_bytes, b1));
    if (n->has_flash)
        fprintf(f, "; flash %s, read %g GB/s, write %g GB/s",
                hoctl_fmt_size(n->flash.bytes, b2), n->flash.read_gbps,
                n->flash.write_gbps);
    fputc('\n', f);
}

static const char node_usage[] =
    "usage: hoctl node show [--node N.json] [--json]\n"
    "       hoctl node check --node N.json --workload W.json [--steps K] "
    "[--json]\n"
    "       hoctl node plan --node N.json --workload W.json [--strategy "
    "independent] [--out DIR] [--svg FILE] [--json]\n"
    "       hoctl node workload --out DIR [--json]\n"
    "show: the node as a tree (--json: its hyperoffload-node JSON); without\n"
    "--node, the daemon's node.\n"
    "check: the node judge on the workload (NODE.md §3, docs/node.md):\n"
    "every client runs its schedule for K steps (default 3) with the\n"
    "others; figures of the last step.  Exit 0 valid, 1 invalid.\n"
    "workload: the workload the daemon's arbiter last planned, with its\n"
    "node, traces and schedules, written to DIR for node check.\n";

/* `node show` of the daemon's node: its JSON as sent (--json), or read
 * back and printed as a tree with where it came from. */
int hoctl_node_request(const hoctl_globals *g, bool workload,
                       Hyperoffload__Envelope **ret_reply)
{
    ho_client *c = NULL;
    Hyperoffload__NodeRequest req = HYPEROFFLOAD__NODE_REQUEST__INIT;
    req.workload = workload;
    HOC_ENVELOPE(env, NODE_REQUEST, node_request, &req);
    int rc = hoctl_open_client(g, &c);
    if (rc)
        return rc;
    rc = hoctl_request(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_NODE_REPLY,
                       ret_reply);
    ho_close(c);
    return rc;
}

static int node_show_daemon(const hoctl_globals *g)
{
    Hyperoffload__Envelope *reply = NULL;
    int rc = hoctl_node_request(g, false, &reply);
    if (rc)
        return rc;
    const Hyperoffload__NodeReply *nr = reply->node_reply;
    const char *json = nr && nr->node_json ? nr->node_json : "";
    plan_node *n = NULL;
    char err[ERRLEN] = "";
    if (!json[0]) {
        fprintf(stderr, "hoctl: the daemon budgets no device: it has no "
                "node description\n");
        rc = HOCTL_EXIT_FAILED;
    } else if (plan_node_parse_json(json, strlen(json), &n, err,
                                    sizeof err) < 0) {
        fprintf(stderr, "hoctl: the daemon's node description does not "
                "read back: %s\n", err);
        rc = HOCTL_EXIT_FAILED;
    } else if (g->json) {
        fputs(json, stdout);
    } else {
        printf("node of the daemon (from %s%s%s; host-backend pacing %s)\n",
               nr->source, nr->note && nr->note[0] ? ": " : "",
               nr->note ? nr->note : "", nr->pacing ? "on" : "off");
        hoctl_node_print_tree(stdout, n);
    }
    plan_node_free(n);
    ho_frame_envelope_free(reply);
    return rc;
}

static int node_show(const hoctl_globals *g, int argc, char **argv)
{
    const char *npath = NULL;
    const nopt opts[] = {{"node", &npath}, {NULL, NULL}};
    plan_node *n = NULL;
    char err[ERRLEN] = "";
    int r, rc;

    if ((r = parse_opts("node show", argc, argv, opts)) != 0)
        return r;
    if (!npath)
        return node_show_daemon(g);
    r = plan_node_read_json(npath, &n, err, sizeof err);
    if (r < 0)
        return read_failure(r, npath, err);
    if (g->json) {
        rc = plan_node_write_json(n, stdout) == 0 ? HOCTL_EXIT_OK
                                                  : HOCTL_EXIT_FAILED;
    } else {
        hoctl_node_print_tree(stdout, n);
        rc = HOCTL_EXIT_OK;
    }
    plan_node_free(n);
    return rc;
}

/* ------------------------------------------------------------ check */

static bool close_enough(double a, double b, double scale)
{
    return fabs(a - b) <= 1e-3 * fmax(fmax(fabs(a), fabs(b)), scale) ||
           fabs(a - b) <= 1e-3;
}

/* The first predicted figure of client i that differs from the judge's. */
static const char *predicted_mismatch(const plan_wl_client *c,
                                      const plan_node_client_fig *f)
{
    if (!c->has_predicted)
        return NULL;
    if (!close_enough(c->predicted.step_time_us, f->step_time_us, 1))
        return "step_time_us";
    if (!close_enough(c->predicted.exposed_us, f->exposed_us,
                      f->step_time_us))
        return "exposed_us";
    if (!close_enough(c->predicted.alloc_wait_us, f->alloc_wait_us,
                      f->step_time_us))
        return "alloc_wait_us";
    return NULL;
}

static json_t *violation_json(const plan_wl_run *run,
                              const plan_node_violation *v)
{
    json_t *o = json_object();
    bool has_c = v->client != PLAN_NONE && v->client < run->n;
    const plan_trace *t = has_c ? run->in[v->client].trace : NULL;
    bool has_op = t && v->op != PLAN_NONE && v->op < t->n_ops;
    json_object_set_new(o, "client", has_c ? json_string(run->in[v->client]
                                                             .name)
                                           : json_null());
    json_object_set_new(o, "client_index",
                        has_c ? json_integer(v->client) : json_null());
    json_object_set_new(o, "step", v->step == PLAN_NONE
                                       ? json_null()
                                       : json_integer(v->step));
    json_object_set_new(o, "op", has_op ? json_integer(v->op) : json_null());
    json_object_set_new(o, "op_name", has_op ? json_string(plan_op_name(
                                                   t, v->op))
                                             : json_null());
    json_object_set_new(o, "storage", v->storage_id == UINT64_MAX
                                          ? json_null()
                                          : hoctl_json_u64(v->storage_id));
    json_object_set_new(o, "message", json_string(v->message));
    return o;
}

static json_t *result_json(const plan_node *n, const plan_workload *w,
                           const plan_wl_run *run, const plan_node_result *r,
                           const double *judge_ms, bool *ret_match)
{
    json_t *o = hoctl_json_root(), *cl = json_array(), *dv = json_array();
    bool all = true;

    if (!o || !cl || !dv) {
        json_decref(o);
        json_decref(cl);
        json_decref(dv);
        return NULL;
    }
    json_object_set_new(o, "valid", json_true());
    json_object_set_new(o, "steps", json_integer(r->steps));
    for (uint32_t i = 0; i < r->n_clients; i++) {
        const plan_node_client_fig *f = &r->clients[i];
        const plan_wl_client *c = &w->clients[i];
        const char *mm = predicted_mismatch(c, f);
        json_t *x = json_object();
        all = all && !mm;
        json_object_set_new(x, "name", json_string(c->name));
        json_object_set_new(x, "job", c->job ? json_string(c->job)
                                             : json_null());
        json_object_set_new(x, "device", json_integer(c->device));
        json_object_set_new(x, "weight", json_real(c->weight));
        json_object_set_new(x, "sync", c->sync ? json_string(c->sync)
                                               : json_null());
        json_object_set_new(x, "budget_bytes",
                            hoctl_json_u64(run->in[i].budget_bytes));
        hoctl_node_fig_json(x, f);
        json_object_set_new(x, "peak_device_bytes",
                            hoctl_json_u64(f->peak_device_bytes));
        json_object_set_new(x, "peak_host_bytes",
                            hoctl_json_u64(f->peak_host_bytes));
        json_object_set_new(x, "start_us", json_real(f->start_us));
        json_object_set_new(x, "end_us", json_real(f->end_us));
        json_object_set_new(x, "predicted_matches",
                            c->has_predicted ? json_boolean(!mm)
                                             : json_null());
        json_array_append_new(cl, x);
    }
    for (uint32_t d = 0; d < r->n_devices; d++) {
        json_t *x = json_object();
        json_object_set_new(x, "id", json_integer(n->devices[d].id));
        json_object_set_new(x, "name", json_string(n->devices[d].name));
        json_object_set_new(x, "clients",
                            json_integer(r->devices[d].n_clients));
        json_object_set_new(x, "peak_bytes",
                            hoctl_json_u64(r->devices[d].peak_bytes));
        json_object_set_new(x, "capacity_bytes",
                            hoctl_json_u64(r->devices[d].capacity_bytes));
        json_array_append_new(dv, x);
    }
    json_object_set_new(o, "clients", cl);
    json_object_set_new(o, "devices", dv);
    json_t *node = hoctl_node_totals_json(r);
    if (node)
        json_object_set_new(node, "end_us", json_real(r->end_us));
    json_object_set_new(o, "node", node);
    json_object_set_new(
        o, "stats",
        json_pack("{s:o, s:o, s:o, s:o}", "copies", hoctl_json_u64(r->n_copies),
                  "rate_updates", hoctl_json_u64(r->n_rate_updates), "judge_us",
                  hoctl_json_us(judge_ms[0] * 1e3), "judge_cpu_us",
                  hoctl_json_us(judge_ms[1] * 1e3)));
    *ret_match = all;
    return o;
}

static void print_result(const plan_node *n, const plan_workload *w,
                         const plan_wl_run *run, const plan_node_result *r,
                         const double *judge_ms)
{
    hoctl_table t;
    hoctl_fmt b[12];

    printf("%u clients on %u devices, %u steps; figures of the last step\n",
           r->n_clients, r->n_devices, r->steps);
    hoctl_table_init(&t, 13);
    hoctl_table_row(&t, "CLIENT", "DEVICE", "WEIGHT", "SYNC", "COMPUTE",
                    "STEP TIME", "EXPOSED", "ALLOC WAIT", "SLOWDOWN", "H2D",
                    "D2H", "PEAK HBM", "BUDGET");
    for (uint32_t i = 0; i < r->n_clients; i++) {
        const plan_node_client_fig *f = &r->clients[i];
        const plan_wl_client *c = &w->clients[i];
        snprintf(b[0], sizeof b[0], "%g", c->weight);
        snprintf(b[1], sizeof b[1], "%.3f", f->slowdown);
        hoctl_table_row(&t, c->name, hoctl_fmt_u64(c->device, b[2]), b[0],
                        c->sync ? c->sync : "-",
                        hoctl_fmt_us(f->compute_us, b[3]),
                        hoctl_fmt_us(f->step_time_us, b[4]),
                        hoctl_fmt_us(f->exposed_us, b[5]),
                        hoctl_fmt_us(f->alloc_wait_us, b[6]), b[1],
                        hoctl_fmt_size(f->h2d_bytes, b[7]),
                        hoctl_fmt_size(f->d2h_bytes, b[8]),
                        hoctl_fmt_size(f->peak_device_bytes, b[9]),
                        hoctl_fmt_size(run->in[i].budget_bytes, b[10]));
    }
    hoctl_table_print(&t, "");
    for (uint32_t i = 0; i < r->n_clients; i++) {
        const char *mm = predicted_mismatch(&w->clients[i], &r->clients[i]);
        if (mm)
            printf("%s: predicted %s differs from the judge's\n",
                   w->clients[i].name, mm);
    }
    putchar('\n');
    hoctl_table_init(&t, 5);
    hoctl_table_row(&t, "DEVICE", "ID", "CLIENTS", "PEAK HBM", "CAPACITY");
    for (uint32_t d = 0; d < r->n_devices; d++)
        hoctl_table_row(&t, n->devices[d].name,
                        hoctl_fmt_u64(n->devices[d].id, b[0]),
                        hoctl_fmt_u64(r->devices[d].n_clients, b[1]),
                        hoctl_fmt_size(r->devices[d].peak_bytes, b[2]),
                        hoctl_fmt_size(r->devices[d].capacity_bytes, b[3]));
    hoctl_table_print(&t, "");
    putchar('\n');
    hoctl_field("weighted exposed", "%s",
                hoctl_fmt_us(r->weighted_exposed_us, b[0]));
    hoctl_field("max slowdown", "%.3f", r->max_slowdown);
    hoctl_field("alloc wait", "%s", hoctl_fmt_us(r->alloc_wait_us, b[1]));
    hoctl_field("judge", "%llu copies, %llu rate updates, %.1f ms (%.1f ms "
                "CPU)", (unsigned long long)r->n_copies,
                (unsigned long long)r->n_rate_updates, judge_ms[0],
                judge_ms[1]);
}

static int node_check(const hoctl_globals *g, int argc, char **argv)
{
    const char *npath = NULL, *wpath = NULL, *steps = NULL;
    const nopt opts[] = {{"node", &npath},
                         {"workload", &wpath},
                         {"steps", &steps},
                         {NULL, NULL}};
    plan_node *n = NULL;
    plan_workload *w = NULL;
    plan_wl_run *run = NULL;
    plan_node_result *res = NULL;
    plan_node_violation v;
    plan_node_opts o = {0};
    char err[ERRLEN] = "";
    int r, rc = HOCTL_EXIT_FAILED;

    if ((r = parse_opts("node check", argc, argv, opts)) != 0)
        return r;
    if (!npath || !wpath)
        return hoctl_usage_error("usage: hoctl node check --node N.json "
                           "--workload W.json [--steps K] [--json]");
    if (steps) {
        char *end;
        unsigned long k;
        errno = 0;
        k = strtoul(steps, &end, 10);
        if (errno || *end || !*steps || steps[0] == '-' || k < 1 ||
            k > PLAN_NODE_MAX_STEPS)
            return hoctl_usage_error("--steps: expected an integer in [1, %u], "
                               "got '%s'", PLAN_NODE_MAX_STEPS, steps);
        o.steps = (uint32_t)k;
    }
    r = plan_node_read_json(npath, &n, err, sizeof err);
    if (r < 0)
        return read_failure(r, npath, err);
    r = plan_workload_read_json(wpath, &w, err, sizeof err);
    if (r < 0) {
        rc = read_failure(r, wpath, err);
        goto out;
    }
    r = plan_wl_run_load(n, w, &run, err, sizeof err);
    if (r < 0) {
        if (g->json) {
            json_t *j = hoctl_json_root();
            json_object_set_new(j, "valid", json_false());
            json_object_set_new(
                j, "error",
                hoctl_json_error(r == -ENOENT ? HOCTL_EXIT_NOT_FOUND
                                              : HOCTL_EXIT_FAILED,
                                 r, err[0] ? err : ho_strerror(r)));
            hoctl_json_emit(j);
        }
        fprintf(stderr, "hoctl: node check: %s\n",
                err[0] ? err : ho_strerror(r));
        rc = r == -ENOENT ? HOCTL_EXIT_NOT_FOUND : HOCTL_EXIT_FAILED;
        goto out;
    }
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    r = plan_node_judge(n, run->in, run->n, &o, &res, &v);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms[2] = {(double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                        (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
                    (double)(c1.tv_sec - c0.tv_sec) * 1e3 +
                        (double)(c1.tv_nsec - c0.tv_nsec) / 1e6};
    if (r == HO_E_BAD_SCHEDULE) {
        if (g->json) {
            json_t *j = hoctl_json_root();
            json_object_set_new(j, "valid", json_false());
            json_object_set_new(j, "violation", violation_json(run, &v));
            hoctl_json_emit(j);
        }
        fprintf(stderr, "hoctl: node check: workload invalid: %s\n",
                v.message);
        goto out;
    }
    if (r < 0) {
        fprintf(stderr, "hoctl: node check: %s\n", ho_strerror(r));
        goto out;
    }
    if (g->json) {
        bool match = true;
        rc = hoctl_json_emit(result_json(n, w, run, res, ms, &match));
        if (rc == HOCTL_EXIT_OK && !match) {
            fputs("hoctl: node check: predicted figures differ from the "
                  "judge's\n", stderr);
            rc = HOCTL_EXIT_FAILED;
        }
    } else {
        print_result(n, w, run, res, ms);
        rc = HOCTL_EXIT_OK;
        for (uint32_t i = 0; i < res->n_clients; i++)
            if (predicted_mismatch(&w->clients[i], &res->clients[i]))
                rc = HOCTL_EXIT_FAILED;
    }
out:
    plan_node_result_free(res);
    plan_wl_run_free(run);
    plan_workload_free(w);
    plan_node_free(n);
    return rc;
}

int hoctl_cmd_node(const hoctl_globals *g, int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "help") == 0) {
        fputs(node_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? hoctl_usage_error("node needs a verb: show or check")
                        : HOCTL_EXIT_OK;
    }
    if (strcmp(argv[0], "show") == 0)
        return node_show(g, argc - 1, argv + 1);
    if (strcmp(argv[0], "check") == 0)
        return node_check(g, argc - 1, argv + 1);
    if (strcmp(argv[0], "plan") == 0)
        return hoctl_cmd_node_plan(g, argc - 1, argv + 1);
    if (strcmp(argv[0], "workload") == 0)
        return hoctl_cmd_node_workload(g, argc - 1, argv + 1);
    hoctl_usage_error("node: unknown verb '%s'", argv[0]);
    fputs(node_usage, stderr);
    return HOCTL_EXIT_USAGE;
}
