/*
 * hoctl/hoctl_node_workload.c - `hoctl node workload --out DIR [--json]`:
 * the workload the daemon's arbiter last planned, exported so that the
 * node judge (`hoctl node check`) or any implementation of NODE.md §3 can
 * run it (NodeRequest with workload, an admin request):
 *
 *   DIR/node.json       the node it was judged on (NODE.md §1; the
 *                       daemon's node with each device's figures no wider
 *                       than its clients' trace links)
 *   DIR/workload.json   NODE.md §2 with §4's fields (budget_bytes,
 *                       planned_h2d_gbps / planned_d2h_gbps,
 *                       ddr_limit_bytes, predicted)
 *   DIR/<i>-<name>.trace.json, DIR/<i>-<name>.schedule.json
 *
 * Prints where it wrote what (--json: one object with the epoch, the
 * paths and per client its name, session id and predicted figures).
 * Exit 0; 1 when the daemon has not planned a workload yet (no re-plan
 * ran) or a file cannot be written; 4 when DIR's parent does not exist.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "hoctl/hoctl.h"
#include "hoctl/hoctl_node.h"
#include "hoctl/hoctl_node_plan.h"
#include "hoctl/hoctl_node_workload.h"
#include "hoctl/output.h"
#include "hyperoffload/errors.h"
#include "planner/io/plan_io.h"
#include "planner/node/node.h"
#include "proto/errfmt.h"
#include "proto/frame.h"

#define ERRLEN 512

static const char usage[] =
    "usage: hoctl node workload --out DIR [--json]\n"
    "the workload the daemon's arbiter last planned, written as\n"
    "DIR/node.json, DIR/workload.json and the traces and schedules it\n"
    "names (run it with hoctl node check --node DIR/node.json --workload\n"
    "DIR/workload.json).\n";

static int write_text(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return -ENAMETOOLONG;
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    int r = fputs(text, f) < 0 ? -EIO : 0;
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    return r;
}

/* A daemon-sent file name: one plain component, nothing to climb out of
 * DIR with. */
static bool plain_name(const char *s)
{
    return s && s[0] && s[0] != '.' && !strchr(s, '/') &&
           strlen(s) < NAME_MAX;
}

/* File `name` with packed `data`: a trace (*.trace.json) or a schedule
 * (*.schedule.json), written as JSON. */
static int write_file(const char *dir, const char *name,
                      const ProtobufCBinaryData *data, char *err,
                      size_t errlen)
{
    size_t n = strlen(name);
    bool trace = n > 11 && strcmp(name + n - 11, ".trace.json") == 0;
    bool sched = n > 14 && strcmp(name + n - 14, ".schedule.json") == 0;
    plan_trace *t = NULL;
    plan_schedule *s = NULL;
    int r;

    if (!plain_name(name) || (!trace && !sched))
        return ho_errf(err, errlen, HO_E_PROTOCOL, "the daemon names a "
                       "file '%.64s' that is neither a trace nor a schedule",
                       name);
    r = trace ? plan_trace_from_pb(data->data, data->len, &t, err, errlen)
              : plan_schedule_from_pb(data->data, data->len, &s, err,
                                      errlen);
    if (r < 0)
        return r;
    r = hoctl_node_write_json(dir, name, t, s, NULL);
    if (r < 0)
        ho_errf(err, errlen, r, "%s/%s: %s", dir, name, ho_strerror(r));
    plan_trace_free(t);
    plan_schedule_free(s);
    return r;
}

/* Session id of an arbiter's client name "name#id" (0: none). */
static uint64_t session_of(const char *name)
{
    const char *h = strrchr(name, '#');
    return h ? strtoull(h + 1, NULL, 10) : 0;
}

static int report(const hoctl_globals *g, const char *dir,
                  const Hyperoffload__NodeReply *nr, const plan_workload *w)
{
    if (!g->json) {
        printf("workload of arbitration epoch %" PRIu64 " (%u clients) "
               "written to %s: node.json, workload.json, %zu traces and "
               "schedules\n", nr->workload_epoch, w->n_clients, dir,
               nr->n_file_names);
        for (uint32_t i = 0; i < w->n_clients; i++) {
            const plan_wl_client *c = &w->clients[i];
            printf("  %s: device %u, budget %" PRIu64 " bytes, predicted "
                   "step %.1f us, exposed %.1f us\n", c->name, c->device,
                   c->budget_bytes, c->predicted.step_time_us,
                   c->predicted.exposed_us);
        }
        printf("check it: hoctl node check --node %s/node.json --workload "
               "%s/workload.json\n", dir, dir);
        return HOCTL_EXIT_OK;
    }
    json_t *o = hoctl_json_root(), *cl = json_array();
    char p1[PATH_MAX], p2[PATH_MAX];
    snprintf(p1, sizeof p1, "%s/node.json", dir);
    snprintf(p2, sizeof p2, "%s/workload.json", dir);
    if (!o || !cl) {
        json_decref(o);
        json_decref(cl);
        return HOCTL_EXIT_FAILED;
    }
    json_object_set_new(o, "epoch", hoctl_json_u64(nr->workload_epoch));
    json_object_set_new(o, "node", json_string(p1));
    json_object_set_new(o, "workload", json_string(p2));
    for (uint32_t i = 0; i < w->n_clients; i++) {
        const plan_wl_client *c = &w->clients[i];
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(c->name));
        json_object_set_new(x, "session_id",
                            hoctl_json_u64(session_of(c->name)));
        json_object_set_new(x, "device", json_integer(c->device));
        json_object_set_new(x, "budget_bytes",
                            hoctl_json_u64(c->budget_bytes));
        json_object_set_new(x, "predicted_step_us",
                            json_real(c->predicted.step_time_us));
        json_object_set_new(x, "predicted_exposed_us",
                            json_real(c->predicted.exposed_us));
        json_object_set_new(x, "trace", json_string(c->trace));
        json_object_set_new(x, "schedule", json_string(c->schedule));
        json_array_append_new(cl, x);
    }
    json_object_set_new(o, "clients", cl);
    return hoctl_json_emit(o);
}

int hoctl_cmd_node_workload(const hoctl_globals *g, int argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strncmp(argv[i], "--out=", 6) == 0)
            dir = argv[i] + 6;
        else if (strcmp(argv[i], "help") == 0 || strcmp(argv[i], "--help")
                                                     == 0) {
            fputs(usage, stdout);
            return HOCTL_EXIT_OK;
        } else {
            fputs(usage, stderr);
            return hoctl_usage_error("node workload: unexpected argument "
                                     "'%s'", argv[i]);
        }
    }
    if (!dir || !dir[0]) {
        fputs(usage, stderr);
        return hoctl_usage_error("node workload: --out DIR is required");
    }

    Hyperoffload__Envelope *reply = NULL;
    int rc = hoctl_node_request(g, true, &reply);
    if (rc)
        return rc;
    const Hyperoffload__NodeReply *nr = reply->node_reply;
    plan_workload *w = NULL;
    plan_node *n = NULL;
    char err[ERRLEN] = "";
    int r = 0;
    rc = HOCTL_EXIT_FAILED;
    if (!nr || !nr->workload_json || !nr->workload_json[0]) {
        fputs("hoctl: node workload: the daemon's arbiter has not planned "
              "a workload yet (no session has a plan)\n", stderr);
        goto out;
    }
    if (nr->n_file_names != nr->n_file_data) {
        fprintf(stderr, "hoctl: node workload: the daemon sent %zu file "
                "names for %zu files\n", nr->n_file_names, nr->n_file_data);
        goto out;
    }
    /* read back before writing: what we write is what the readers take */
    r = plan_node_parse_json(nr->planned_node_json,
                             strlen(nr->planned_node_json), &n, err,
                             sizeof err);
    if (r == 0)
        r = plan_workload_parse_json(nr->workload_json,
                                     strlen(nr->workload_json), dir, &w, err,
                                     sizeof err);
    if (r < 0) {
        fprintf(stderr, "hoctl: node workload: the daemon's workload does "
                "not read back: %s\n", err);
        goto out;
    }
    if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
        r = -errno;
        fprintf(stderr, "hoctl: node workload: mkdir %s: %s\n", dir,
                strerror(errno));
        rc = r == -ENOENT ? HOCTL_EXIT_NOT_FOUND : HOCTL_EXIT_FAILED;
        goto out;
    }
    for (size_t i = 0; r == 0 && i < nr->n_file_names; i++)
        r = write_file(dir, nr->file_names[i], &nr->file_data[i], err,
                       sizeof err);
    if (r == 0 && (r = write_text(dir, "node.json",
                                  nr->planned_node_json)) < 0)
        snprintf(err, sizeof err, "%s/node.json: %s", dir, ho_strerror(r));
    if (r == 0 && (r = write_text(dir, "workload.json",
                                  nr->workload_json)) < 0)
        snprintf(err, sizeof err, "%s/workload.json: %s", dir,
                 ho_strerror(r));
    if (r < 0) {
        fprintf(stderr, "hoctl: node workload: %s\n", err);
        goto out;
    }
    rc = report(g, dir, nr, w);
out:
    plan_workload_free(w);
    plan_node_free(n);
    ho_frame_envelope_free(reply);
    return rc;
}
