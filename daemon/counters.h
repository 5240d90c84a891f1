/*
 * daemon/counters.h - the daemon's event counters: what the metrics
 * (metrics.h, higher up) cannot read back from the state itself --
 * errors replied by code, admission decisions, quota refusals by tier,
 * plan cache hits and misses, plans made, and the totals of jobs whose
 * sessions or replays have ended.
 *
 * A base module (no libuv, no tiers): every module above bumps these
 * through plain fields of d->counters (`d->counters.plan_cache_hits++`)
 * or the small functions below, none of which calls anything; only
 * metrics.c reads them.  Loop thread only.  Counters only grow.
 */
#ifndef HO_DAEMON_COUNTERS_H
#define HO_DAEMON_COUNTERS_H

#include <stdint.h>

#include "daemon/quota.h"
#include "daemon/srv_limits.h"
#include "hyperoffload/errors.h"
#include "proto/hyperoffload.pb-c.h"

/* The requests whose admission is counted. */
typedef enum srv_admit_kind {
    SRV_ADMIT_REGISTER,          /* a session and its HBM grant */
    SRV_ADMIT_ALLOC,             /* DDR extents */
    SRV_ADMIT_MOVE,              /* extent spills and fills */
    SRV_ADMIT_STAGE,             /* replays (host copies) */
    SRV_ADMIT_N,
} srv_admit_kind;

/* Why a connection was refused at accept for want of a slot (server.c). */
typedef enum srv_conn_refusal {
    SRV_REFUSE_MAX_CONNECTIONS,  /* max_connections reached (admins too) */
    SRV_REFUSE_PER_UID,          /* the uid holds max_connections_per_uid */
    SRV_REFUSE_ADMIN_RESERVE,    /* only the admin reserve is left */
    SRV_REFUSE_N,
} srv_conn_refusal;

#define SRV_COUNT_HO_ROW(name, code, text) +1
/* Rows of HO_ERROR_MAP (HO_E_* codes, -1000 downwards without gaps). */
#define SRV_COUNT_HO_CODES (0 HO_ERROR_MAP(SRV_COUNT_HO_ROW))

/* What ended sessions and replays of one job did (sums). */
typedef struct srv_job_totals {
    char job[SRV_JOB_MAX + 1];   /* "" for sessions without a job */
    uint64_t sessions;           /* sessions ended */
    uint64_t alloc_bytes;        /* bytes of extents allocated */
    uint64_t replays;            /* replays ended */
    uint64_t steps;              /* replayed steps */
    uint64_t h2d_bytes, d2h_bytes;
    uint64_t flash_out_bytes, flash_in_bytes;
    double stall_s;              /* waiting for a host copy (flash) */
    double exposed_s;            /* transfers not hidden behind compute */
} srv_job_totals;

typedef struct srv_counters {
    /* Error replies sent, by code: HO_E_* by row, -errno by value
     * ([0]: errno values >= SRV_METRICS_ERRNO_MAX). */
    uint64_t errors_ho[SRV_COUNT_HO_CODES];
    uint64_t errors_errno[SRV_METRICS_ERRNO_MAX];
    uint64_t admitted[SRV_ADMIT_N];
    uint64_t refused[SRV_ADMIT_N];
    uint64_t quota_refusals[4];  /* by srv_tier (1..3) */
    uint64_t conn_refusals[SRV_REFUSE_N]; /* by srv_conn_refusal */
    uint64_t plan_cache_hits;    /* PlanReplies answered from the cache */
    uint64_t plan_cache_misses;  /* PlanRequests queued for a planner */
    uint64_t plan_cache_evictions; /* entries dropped: cache_entries or
                                      cache_bytes */
    uint64_t retained_evictions; /* session plans dropped (staging.c):
                                    retained_per_session / _total */
    uint64_t ddr_limit_changes;  /* installed replays' DDR limits changed
                                    by the reservation ledger (staging.c) */
    uint64_t stage_wait_failures; /* client waits for a host copy given
                                     up after [ddr] stage_wait */
    uint64_t plans_ok;           /* plans made by a worker: a schedule */
    uint64_t plans_failed;       /* ... an error (HO_E_INFEASIBLE etc.) */
    uint64_t textfile_writes, textfile_failures;
    /* Ended sessions and replays by job; jobs past SRV_METRICS_JOBS_MAX
     * add up in `other`. */
    srv_job_totals jobs[SRV_METRICS_JOBS_MAX];
    uint32_t n_jobs;
    srv_job_totals other;
} srv_counters;

/* An error reply with `code` (< 0) was sent. */
void srv_count_error(srv_counters *k, int code);
/* Error replies sent so far with `code`. */
uint64_t srv_count_errors(const srv_counters *k, int code);
/* A request of `kind` was admitted (rc >= 0) or refused (rc < 0). */
void srv_count_admission(srv_counters *k, srv_admit_kind kind, int rc);
/* "register", "alloc", "move", "stage". */
const char *srv_admit_kind_name(srv_admit_kind kind);
/* "max_connections", "max_connections_per_uid", "admin_reserve" (the
 * setting that refused; a metrics label). */
const char *srv_conn_refusal_name(srv_conn_refusal why);
/* The totals row of `job` (added when new; `other` when the table is
 * full).  Never NULL. */
srv_job_totals *srv_count_job(srv_counters *k, const char *job);
/* A replay of a session of `job` ended with the region's figures `ri`. */
void srv_count_replay_end(srv_counters *k, const char *job,
                          const Hyperoffload__RuntimeInfo *ri);

#endif
