/*
 * planner/node/node_load.c - a workload file's traces and schedules
 * loaded and bound, as the judge's inputs (plan_wl_run).  Clients that
 * name the same trace path share one loaded trace, and those that also
 * name the same schedule path share one loaded schedule.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/io/plan_io.h"
#include "planner/node/node.h"
#include "proto/errfmt.h"
#include "proto/mem.h"

plan_wl_run *plan_wl_run_free(plan_wl_run *r)
{
    if (!r)
        return NULL;
    for (uint32_t i = 0; i < r->n; i++) {
        bool shared = false;
        for (uint32_t j = 0; j < i && !shared; j++)
            shared = r->traces[j] == r->traces[i];
        if (!shared)
            plan_trace_free(r->traces[i]);
        shared = false;
        for (uint32_t j = 0; j < i && !shared; j++)
            shared = r->schedules[j] == r->schedules[i];
        if (!shared)
            plan_schedule_free(r->schedules[i]);
    }
    HO_FREE_ALL(r->in, r->traces, r->schedules, r->groups, r);
    return NULL;
}

/* Client i's trace (into *ret_trace) or schedule (into *ret_sched, then
 * bound to `trace`) from the workload's file `file`.  0, or the error
 * with "clients[i] (name): <what> <path>: ..." in err. */
static int load_file(const plan_workload *w, uint32_t i, const char *what,
                     const char *file, plan_trace **ret_trace,
                     plan_schedule **ret_sched, const plan_trace *trace,
                     char *err, size_t errlen)
{
    char ferr[384];
    char *path = plan_workload_path(w, file);
    int k;

    if (!path)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    ferr[0] = '\0';
    if (ret_trace) {
        k = plan_trace_read_file(path, ret_trace, ferr, sizeof ferr);
    } else {
        k = plan_schedule_read_file(path, ret_sched, ferr, sizeof ferr);
        if (k == 0)
            k = plan_schedule_bind(*ret_sched, trace, ferr, sizeof ferr);
    }
    if (k < 0)
        ho_errf(err, errlen, k, "clients[%u] (%s): %s %s: %s", i,
                w->clients[i].name, what, path,
                ferr[0] ? ferr : ho_strerror(k));
    free(path);
    return k;
}

int plan_wl_run_load(const plan_node *node, const plan_workload *w,
                     plan_wl_run **ret, char *err, size_t errlen)
{
    plan_wl_run *run;
    int k = 0;

    if (!node || !w || !node->finished)
        return -EINVAL;
    run = calloc(1, sizeof(*run));
    if (!run)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    uint32_t n = w->n_clients;
    run->in = ho_calloc(n, sizeof(*run->in));
    run->traces = ho_calloc(n, sizeof(*run->traces));
    run->schedules = ho_calloc(n, sizeof(*run->schedules));
    run->groups = ho_calloc(n, sizeof(*run->groups));
    if (!run->in || !run->traces || !run->schedules || !run->groups) {
        plan_wl_run_free(run);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    /* Check everything cheap before reading any file. */
    for (uint32_t i = 0; i < n; i++) {
        const plan_wl_client *c = &w->clients[i];
        uint32_t dev = plan_node_device_index(node, c->device);
        if (dev == PLAN_NONE) {
            k = ho_errf(err, errlen, HO_E_BAD_CONFIG,
                        "clients[%u].device: no device %u in the node", i,
                        c->device);
            goto fail;
        }
        if (!c->schedule) {
            k = ho_errf(err, errlen, HO_E_BAD_CONFIG,
                        "clients[%u].schedule: client \"%s\" has no "
                        "schedule to judge", i, c->name);
            goto fail;
        }
        run->in[i].name = c->name;
        run->in[i].device = dev;
        run->in[i].weight = c->weight;
        run->in[i].sync = PLAN_NONE;
        if (c->sync) {
            uint32_t g = 0;
            while (g < run->n_groups && strcmp(run->groups[g], c->sync) != 0)
                g++;
            if (g == run->n_groups)
                run->groups[run->n_groups++] = c->sync;
            run->in[i].sync = g;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        const plan_wl_client *c = &w->clients[i];
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(w->clients[j].trace, c->trace) == 0) {
                run->traces[i] = run->traces[j];
                break;
            }
        run->n = i + 1; /* what plan_wl_run_free must release */
        if (!run->traces[i] &&
            (k = load_file(w, i, "trace", c->trace, &run->traces[i], NULL,
                           NULL, err, errlen)) < 0)
            goto fail;
        for (uint32_t j = 0; j < i && !run->schedules[i]; j++)
            if (run->traces[j] == run->traces[i] &&
                strcmp(w->clients[j].schedule, c->schedule) == 0)
                run->schedules[i] = run->schedules[j];
        if (run->schedules[i])
            goto bound;
        if ((k = load_file(w, i, "schedule", c->schedule, NULL,
                           &run->schedules[i], run->traces[i], err,
                           errlen)) < 0)
            goto fail;
    bound:
        run->in[i].trace = run->traces[i];
        run->in[i].schedule = run->schedules[i];
        run->in[i].budget_bytes =
            c->has_budget ? c->budget_bytes : run->schedules[i]->budget_bytes;
    }
    run->n = n;
    *ret = run;
    return 0;
fail:
    plan_wl_run_free(run);
    return k;
}
