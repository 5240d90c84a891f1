/* daemon/counters.c - see counters.h. */
#include "daemon/counters.h"

#include <stdio.h>
#include <string.h>

/* The slot of `code`, or NULL for codes that are neither. */
static uint64_t *error_slot(srv_counters *k, int code)
{
    if (code <= HO_E_PROTOCOL && code > HO_E_PROTOCOL - SRV_COUNT_HO_CODES)
        return &k->errors_ho[HO_E_PROTOCOL - code];
    if (code < 0 && code > -1000)
        return &k->errors_errno[-code < SRV_METRICS_ERRNO_MAX ? -code : 0];
    return NULL;
}

void srv_count_error(srv_counters *k, int code)
{
    uint64_t *slot = error_slot(k, code);
    if (slot)
        (*slot)++;
}

uint64_t srv_count_errors(const srv_counters *k, int code)
{
    uint64_t *slot = error_slot((srv_counters *)k, code);
    return slot ? *slot : 0;
}

void srv_count_admission(srv_counters *k, srv_admit_kind kind, int rc)
{
    if ((unsigned)kind >= SRV_ADMIT_N)
        return;
    if (rc < 0)
        k->refused[kind]++;
    else
        k->admitted[kind]++;
}

const char *srv_admit_kind_name(srv_admit_kind kind)
{
    static const char *const names[SRV_ADMIT_N] = {"register", "alloc",
                                                   "move", "stage"};
    return (unsigned)kind < SRV_ADMIT_N ? names[kind] : "unknown";
}

const char *srv_conn_refusal_name(srv_conn_refusal why)
{
    static const char *const names[SRV_REFUSE_N] = {
        "max_connections", "max_connections_per_uid", "admin_reserve"};
    return (unsigned)why < SRV_REFUSE_N ? names[why] : "unknown";
}

const char *srv_conn_drop_name(srv_conn_drop why)
{
    static const char *const names[SRV_DROP_N] = {
        "max_partial_frames", "handshake_timeout", "read_timeout",
        "idle_timeout", "max_output", "max_output_total"};
    return (unsigned)why < SRV_DROP_N ? names[why] : "unknown";
}

srv_job_totals *srv_count_job(srv_counters *k, const char *job)
{
    for (uint32_t i = 0; i < k->n_jobs; i++)
        if (strcmp(k->jobs[i].job, job) == 0)
            return &k->jobs[i];
    if (k->n_jobs == SRV_METRICS_JOBS_MAX)
        return &k->other;
    srv_job_totals *t = &k->jobs[k->n_jobs++];
    memset(t, 0, sizeof(*t));
    snprintf(t->job, sizeof(t->job), "%s", job);
    return t;
}

void srv_count_replay_end(srv_counters *k, const char *job,
                          const Hyperoffload__RuntimeInfo *ri)
{
    srv_job_totals *t = srv_count_job(k, job);
    t->replays++;
    t->steps += ri->steps;
    t->h2d_bytes += ri->h2d_bytes;
    t->d2h_bytes += ri->d2h_bytes;
    t->flash_out_bytes += ri->flash_out_bytes;
    t->flash_in_bytes += ri->flash_in_bytes;
    t->stall_s += ri->stall_us / 1e6;
    t->exposed_s += ri->exposed_us / 1e6;
}
