/* daemon/metrics.c - the Prometheus text of the daemon (see metrics.h and
 * docs/metrics.md, which lists every family written here). */
#include "daemon/metrics.h"

#include "hyperoffload/version.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/connection.h"
#include "daemon/handlers.h"
#include "daemon/log.h"
#include "daemon/planning.h"
#include "daemon/mover.h"
#include "daemon/sessions.h"
#include "daemon/staging.h"
#include "proto/errfmt.h"
#include "proto/frame.h"

#define P "hyperoffload_"

/* ------------------------------------------------------------ text */

typedef struct mbuf {
    char *p;
    size_t len, cap;
    bool oom;
} mbuf;

static void put(mbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(mbuf *b, const char *fmt, ...)
{
    for (;;) {
        if (b->oom)
            return;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL,
                          b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if (b->p && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 16384;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

/* s with `\` and newline escaped, and `"` too when quote (label values);
 * HELP text escapes only the first two (format 0.0.4). */
static void put_escaped(mbuf *b, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            put(b, "\\\\");
        else if (*s == '\n')
            put(b, "\\n");
        else if (*s == '"' && quote)
            put(b, "\\\"");
        else
            put(b, "%c", *s);
    }
}

static void family(mbuf *b, const char *name, const char *type,
                   const char *help)
{
    put(b, "# HELP %s ", name);
    put_escaped(b, help, false);
    put(b, "\n# TYPE %s %s\n", name, type);
}

/* A label set: up to 3 pairs, values escaped when the sample is written. */
typedef struct labels {
    int n;
    const char *k[3];
    const char *v[3];
} labels;

static labels L0(void) { return (labels){0}; }
static labels L1(const char *k, const char *v)
{
    return (labels){1, {k}, {v}};
}
static labels L2(labels l, const char *k, const char *v)
{
    if (l.n < 3) {
        l.k[l.n] = k;
        l.v[l.n++] = v;
    }
    return l;
}

static void put_labels(mbuf *b, const char *name, labels l)
{
    put(b, "%s", name);
    if (l.n == 0)
        return;
    put(b, "{");
    for (int i = 0; i < l.n; i++) {
        put(b, "%s%s=\"", i ? "," : "", l.k[i]);
        put_escaped(b, l.v[i] ? l.v[i] : "", true);
        put(b, "\"");
    }
    put(b, "}");
}

static void su(mbuf *b, const char *name, labels l, uint64_t v)
{
    put_labels(b, name, l);
    put(b, " %" PRIu64 "\n", v);
}

static void sd(mbuf *b, const char *name, labels l, double v)
{
    put_labels(b, name, l);
    put(b, " %.15g\n", v);
}

/* A family with one unlabelled sample. */
static void one_u(mbuf *b, const char *name, const char *type,
                  const char *help, uint64_t v)
{
    family(b, name, type, help);
    su(b, name, L0(), v);
}

static void one_d(mbuf *b, const char *name, const char *type,
                  const char *help, double v)
{
    family(b, name, type, help);
    sd(b, name, L0(), v);
}

/* ------------------------------------------------------------ process */

static void process_metrics(srv_daemon *d, mbuf *b)
{
    char proto[16];
    snprintf(proto, sizeof(proto), "%u", HO_PROTO_VERSION);
    family(b, P "build_info", "gauge",
           "Always 1; the labels name the daemon's release and protocol.");
    su(b, P "build_info",
       L2(L1("version", HO_VERSION_STRING), "protocol", proto), 1);
    double up = (double)(uv_now(&d->loop) - d->start_ms) / 1000.0;
    one_d(b, P "uptime_seconds", "gauge", "Seconds since the daemon started.",
          up);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    one_d(b, P "start_time_seconds", "gauge",
          "Unix time at which the daemon started.",
          (double)now.tv_sec + (double)now.tv_nsec / 1e9 - up);
    one_u(b, P "connections", "gauge", "Connections open now.", d->n_conns);
    one_u(b, P "connections_total", "counter", "Connections accepted.",
          d->next_conn_id);
    family(b, P "connection_refusals_total", "counter",
           "Connections refused at accept for want of a slot, by the "
           "setting that refused them.");
    for (int i = 0; i < SRV_REFUSE_N; i++)
        su(b, P "connection_refusals_total",
           L1("limit", srv_conn_refusal_name((srv_conn_refusal)i)),
           d->counters.conn_refusals[i]);
    one_u(b, P "sessions", "gauge", "Registered sessions now.",
          d->n_sessions);
    one_u(b, P "sessions_total", "counter", "Sessions registered.",
          d->next_session_id);
    one_u(b, P "worker_jobs", "gauge",
          "Moves, plans and textfile writes on worker threads now.",
          d->works_in_flight);
    one_u(b, P "draining", "gauge",
          "1 while the daemon is shutting down, else 0.", d->draining);
}

/* ------------------------------------------------------------ tiers */

static const char *tier_word(Hyperoffload__Tier t)
{
    return t == HYPEROFFLOAD__TIER__TIER_DDR     ? "ddr"
           : t == HYPEROFFLOAD__TIER__TIER_FLASH ? "flash"
                                                 : "hbm";
}

#define TIER_FAMILY(fam, help, field)                                     \
    do {                                                                  \
        family(b, P fam, "gauge", help);                                  \
        for (size_t i = 0; i < n; i++)                                    \
            su(b, P fam, L2(L1("tier", tier_word(ts[i]->tier)), "name",   \
                            ts[i]->name), ts[i]->field);                  \
    } while (0)

static int tier_metrics(srv_daemon *d, mbuf *b)
{
    Hyperoffload__TierStats **ts = NULL;
    size_t n = 0;
    if (srv_tier_stats(d, &ts, &n) < 0)
        return -ENOMEM;
    TIER_FAMILY("tier_capacity_bytes",
                "Bytes a tier holds (hbm: one row per device).", capacity);
    TIER_FAMILY("tier_used_bytes",
                "Bytes of a tier in use (hbm: budgets granted).", used);
    family(b, P "tier_reserved_bytes", "gauge",
           "Bytes of a tier kept back from grants (hbm reserve; the only "
           "tier with one).");
    for (uint32_t i = 0; i < tier_hbm_count(d->hbm); i++) {
        const tier_hbm_device *dev = tier_hbm_device_get(d->hbm, i);
        char name[TIER_HBM_NAME_LEN + 8];
        snprintf(name, sizeof(name), "hbm:%s", dev->name);
        su(b, P "tier_reserved_bytes", L2(L1("tier", "hbm"), "name", name),
           dev->reserve);
    }
    TIER_FAMILY("tier_free_bytes", "Bytes of a tier not in use.", free);
    TIER_FAMILY("tier_largest_free_bytes",
                "The largest free range of a tier, bytes.", largest_free);
    TIER_FAMILY("tier_extents", "Live allocations in a tier.", extents);
    TIER_FAMILY("tier_committed_bytes",
                "Bytes backing a tier (DDR: arena files; flash: file size).",
                committed);
    free(ts);
    return 0;
}

static void device_metrics(srv_daemon *d, mbuf *b)
{
    uint32_t n = tier_hbm_count(d->hbm);
    char idx[SRV_MAX_DEVICES][12];
    for (uint32_t i = 0; i < n && i < SRV_MAX_DEVICES; i++)
        snprintf(idx[i], sizeof(idx[i]), "%u", i);
    if (n > SRV_MAX_DEVICES)
        n = SRV_MAX_DEVICES;
    static const char *const names[3] = {P "device_hbm_capacity_bytes",
                                         P "device_hbm_reserved_bytes",
                                         P "device_hbm_granted_bytes"};
    static const char *const helps[3] = {
        "HBM bytes of a device the daemon budgets.",
        "HBM bytes of a device kept back from grants.",
        "HBM bytes of a device granted to sessions as budgets."};
    for (int f = 0; f < 3; f++) {
        family(b, names[f], "gauge", helps[f]);
        for (uint32_t i = 0; i < n; i++) {
            const tier_hbm_device *dev = tier_hbm_device_get(d->hbm, i);
            uint64_t v = f == 0   ? dev->capacity
                         : f == 1 ? dev->reserve
                                  : tier_hbm_granted(d->hbm, i);
            su(b, names[f], L2(L1("device", idx[i]), "name", dev->name), v);
        }
    }
}

/* ------------------------------------------------------------ sessions */

/* A session's figures as the session families print them. */
typedef struct sess_fig {
    bool replay;
    Hyperoffload__RuntimeInfo ri;
} sess_fig;

static sess_fig session_fig(srv_session *s)
{
    sess_fig f;
    memset(&f, 0, sizeof(f));
    hyperoffload__runtime_info__init(&f.ri);
    f.replay = srv_stage_runtime_info(s, &f.ri);
    return f;
}

static labels session_labels(const srv_session *s, char *id, size_t idlen)
{
    snprintf(id, idlen, "%" PRIu64, s->id);
    return L2(L2(L1("session", id), "client", s->name), "ho_job", s->job);
}

typedef enum sess_field {
    SF_DDR, SF_FLASH, SF_EXTENTS, SF_HBM, SF_ALLOC, SF_STEPS, SF_N,
} sess_field;

static uint64_t sess_value(const srv_session *s, const sess_fig *f,
                           sess_field k)
{
    switch (k) {
    case SF_DDR: return s->usage.ddr;
    case SF_FLASH: return s->usage.flash;
    case SF_EXTENTS: return s->usage.extents;
    case SF_HBM: return s->hbm_granted;
    case SF_ALLOC: return s->alloc_bytes;
    case SF_STEPS: return f->ri.steps;
    default: return 0;
    }
}

static const struct {
    const char *name, *type, *help;
} sess_rows[SF_N] = {
    {P "session_ddr_bytes", "gauge",
     "DDR bytes a session holds (extents and host copies, moves included)."},
    {P "session_flash_bytes", "gauge", "Flash bytes a session holds."},
    {P "session_extents", "gauge", "Extents a session holds."},
    {P "session_hbm_granted_bytes", "gauge",
     "HBM budget granted to a session."},
    {P "session_allocated_bytes_total", "counter",
     "Bytes of extents allocated by a session (AllocRequests granted)."},
    {P "session_replay_steps_total", "counter",
     "Steps a session's current replay has completed (client-reported)."},
};

/* The four directions of moved bytes of a RuntimeInfo or job totals. */
static const char *const dirs[4] = {"h2d", "d2h", "to_flash", "from_flash"};
static const char *const causes[2] = {"host_copy_wait", "exposed_transfer"};

static void session_metrics(srv_daemon *d, mbuf *b)
{
    char id[24];
    for (int k = 0; k < SF_N; k++) {
        family(b, sess_rows[k].name, sess_rows[k].type, sess_rows[k].help);
        for (srv_session *s = d->sessions; s; s = s->next) {
            sess_fig f = session_fig(s);
            su(b, sess_rows[k].name, session_labels(s, id, sizeof(id)),
               sess_value(s, &f, (sess_field)k));
        }
    }
    family(b, P "session_moved_bytes_total", "counter",
           "Bytes a session's current replay moved: h2d/d2h (client-reported "
           "copies), to_flash/from_flash (the daemon's staging).");
    for (srv_session *s = d->sessions; s; s = s->next) {
        sess_fig f = session_fig(s);
        uint64_t v[4] = {f.ri.h2d_bytes, f.ri.d2h_bytes, f.ri.flash_out_bytes,
                         f.ri.flash_in_bytes};
        for (int i = 0; i < 4; i++)
            su(b, P "session_moved_bytes_total",
               L2(session_labels(s, id, sizeof(id)), "direction", dirs[i]),
               v[i]);
    }
    family(b, P "session_stall_seconds_total", "counter",
           "Seconds a session's current replay stalled, by cause: waiting for "
           "a host copy the daemon brings back (host_copy_wait), transfers "
           "not hidden behind compute (exposed_transfer).");
    for (srv_session *s = d->sessions; s; s = s->next) {
        sess_fig f = session_fig(s);
        double v[2] = {f.ri.stall_us / 1e6, f.ri.exposed_us / 1e6};
        for (int i = 0; i < 2; i++)
            sd(b, P "session_stall_seconds_total",
               L2(session_labels(s, id, sizeof(id)), "cause", causes[i]),
               v[i]);
    }
    family(b, P "session_host_copy_bytes", "gauge",
           "Bytes of a session's staged host copies, by where they are.");
    for (srv_session *s = d->sessions; s; s = s->next) {
        sess_fig f = session_fig(s);
        su(b, P "session_host_copy_bytes",
           L2(session_labels(s, id, sizeof(id)), "where", "ddr"),
           f.ri.host_copies_ddr);
        su(b, P "session_host_copy_bytes",
           L2(session_labels(s, id, sizeof(id)), "where", "flash"),
           f.ri.host_copies_flash);
    }
}

/* ------------------------------------------------------------ jobs */

typedef struct job_row {
    const char *job;
    srv_job_totals t;            /* ended + live */
    uint64_t live, ddr, flash;
} job_row;

static job_row *job_find(job_row *rows, size_t *n, const char *job)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(rows[i].job, job) == 0)
            return &rows[i];
    job_row *r = &rows[(*n)++];
    memset(r, 0, sizeof(*r));
    r->job = job;
    return r;
}

static void job_add(srv_job_totals *t, const srv_job_totals *u)
{
    t->sessions += u->sessions;
    t->alloc_bytes += u->alloc_bytes;
    t->replays += u->replays;
    t->steps += u->steps;
    t->h2d_bytes += u->h2d_bytes;
    t->d2h_bytes += u->d2h_bytes;
    t->flash_out_bytes += u->flash_out_bytes;
    t->flash_in_bytes += u->flash_in_bytes;
    t->stall_s += u->stall_s;
    t->exposed_s += u->exposed_s;
}

/* Every job with ended or live sessions: *ret_rows (free()), *ret_n. */
static int job_rows(srv_daemon *d, job_row **ret_rows, size_t *ret_n)
{
    const srv_counters *k = &d->counters;
    job_row *rows = calloc(k->n_jobs + 1 + d->n_sessions, sizeof(*rows));
    if (!rows)
        return -ENOMEM;
    size_t n = 0;
    for (uint32_t i = 0; i < k->n_jobs; i++)
        job_add(&job_find(rows, &n, k->jobs[i].job)->t, &k->jobs[i]);
    if (k->other.sessions || k->other.replays)
        job_add(&job_find(rows, &n, "(other)")->t, &k->other);
    for (srv_session *s = d->sessions; s; s = s->next) {
        job_row *r = job_find(rows, &n, s->job);
        sess_fig f = session_fig(s);
        srv_job_totals live = {
            .alloc_bytes = s->alloc_bytes, .steps = f.ri.steps,
            .h2d_bytes = f.ri.h2d_bytes, .d2h_bytes = f.ri.d2h_bytes,
            .flash_out_bytes = f.ri.flash_out_bytes,
            .flash_in_bytes = f.ri.flash_in_bytes,
            .stall_s = f.ri.stall_us / 1e6,
            .exposed_s = f.ri.exposed_us / 1e6};
        job_add(&r->t, &live);
        r->live++;
        r->ddr += s->usage.ddr;
        r->flash += s->usage.flash;
    }
    *ret_rows = rows;
    *ret_n = n;
    return 0;
}

static int job_metrics(srv_daemon *d, mbuf *b, uint64_t ret_link[2])
{
    job_row *rows = NULL;
    size_t n = 0;
    if (job_rows(d, &rows, &n) < 0)
        return -ENOMEM;
    static const struct {
        const char *name, *type, *help;
    } gauges[] = {
        {P "job_sessions", "gauge", "Live sessions of a job."},
        {P "job_ddr_bytes", "gauge", "DDR bytes the live sessions of a job "
                                     "hold."},
        {P "job_flash_bytes", "gauge", "Flash bytes the live sessions of a "
                                       "job hold."},
        {P "job_sessions_ended_total", "counter", "Sessions of a job that "
                                                  "ended."},
        {P "job_allocated_bytes_total", "counter",
         "Bytes of extents allocated by a job's sessions, ended or live."},
        {P "job_replays_ended_total", "counter",
         "Replays of a job's sessions that ended (or were replaced)."},
        {P "job_replay_steps_total", "counter",
         "Steps replayed by a job's sessions, ended or live."},
    };
    for (size_t f = 0; f < sizeof(gauges) / sizeof(gauges[0]); f++) {
        family(b, gauges[f].name, gauges[f].type, gauges[f].help);
        for (size_t i = 0; i < n; i++) {
            const job_row *r = &rows[i];
            uint64_t v[] = {r->live, r->ddr, r->flash, r->t.sessions,
                            r->t.alloc_bytes, r->t.replays, r->t.steps};
            su(b, gauges[f].name, L1("ho_job", r->job), v[f]);
        }
    }
    family(b, P "job_moved_bytes_total", "counter",
           "Bytes moved by a job's replays, ended or live, by direction.");
    ret_link[0] = ret_link[1] = 0;
    for (size_t i = 0; i < n; i++) {
        const srv_job_totals *t = &rows[i].t;
        uint64_t v[4] = {t->h2d_bytes, t->d2h_bytes, t->flash_out_bytes,
                         t->flash_in_bytes};
        for (int k = 0; k < 4; k++)
            su(b, P "job_moved_bytes_total",
               L2(L1("ho_job", rows[i].job), "direction", dirs[k]), v[k]);
        ret_link[0] += t->h2d_bytes;
        ret_link[1] += t->d2h_bytes;
    }
    family(b, P "job_stall_seconds_total", "counter",
           "Seconds a job's replays stalled, ended or live, by cause.");
    for (size_t i = 0; i < n; i++) {
        double v[2] = {rows[i].t.stall_s, rows[i].t.exposed_s};
        for (int k = 0; k < 2; k++)
            sd(b, P "job_stall_seconds_total",
               L2(L1("ho_job", rows[i].job), "cause", causes[k]), v[k]);
    }
    free(rows);
    return 0;
}

/* ------------------------------------------------------------ links */

static double meter_busy(const srv_flash_meter *m)
{
    double s = m->busy_s;
    if (m->in_flight) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        s += (double)(now.tv_sec - m->since.tv_sec) +
             (double)(now.tv_nsec - m->since.tv_nsec) / 1e9;
    }
    return s;
}

static void link_metrics(srv_daemon *d, mbuf *b, const uint64_t host[2])
{
    /* flash_meter[0]: fills (flash -> DDR), [1]: spills and writes. */
    family(b, P "link_moved_bytes_total", "counter",
           "Bytes moved over a link: ddr_to_flash / flash_to_ddr (the "
           "daemon's moves), h2d / d2h (replays' copies, client-reported).");
    su(b, P "link_moved_bytes_total", L1("link", "ddr_to_flash"),
       d->flash_meter[1].total_bytes);
    su(b, P "link_moved_bytes_total", L1("link", "flash_to_ddr"),
       d->flash_meter[0].total_bytes);
    su(b, P "link_moved_bytes_total", L1("link", "h2d"), host[0]);
    su(b, P "link_moved_bytes_total", L1("link", "d2h"), host[1]);
    family(b, P "link_busy_seconds_total", "counter",
           "Seconds a flash link had at least one move in flight.");
    sd(b, P "link_busy_seconds_total", L1("link", "ddr_to_flash"),
       meter_busy(&d->flash_meter[1]));
    sd(b, P "link_busy_seconds_total", L1("link", "flash_to_ddr"),
       meter_busy(&d->flash_meter[0]));
    family(b, P "link_bandwidth_bytes_per_second", "gauge",
           "Flash bandwidth the daemon has measured (staging plans use it).");
    sd(b, P "link_bandwidth_bytes_per_second", L1("link", "ddr_to_flash"),
       d->flash_write_gbps * 1e9);
    sd(b, P "link_bandwidth_bytes_per_second", L1("link", "flash_to_ddr"),
       d->flash_read_gbps * 1e9);
}

/* ------------------------------------------------------------ regions */

static void region_metrics(srv_daemon *d, mbuf *b)
{
    uint64_t ctl = 0, ctl_bytes = 0, copies = 0, copy_bytes = 0;
    for (srv_session *s = d->sessions; s; s = s->next) {
        srv_stage_sizes z;
        if (!srv_stage_regions(s, &z))
            continue;
        ctl++;
        ctl_bytes += z.control_bytes;
        copies += z.host_copies;
        copy_bytes += z.host_copy_bytes;
    }
    family(b, P "regions", "gauge",
           "Shared regions now: control (one per replay, shared with its "
           "client), host_copy (staged host copies of replays).");
    su(b, P "regions", L1("kind", "control"), ctl);
    su(b, P "regions", L1("kind", "host_copy"), copies);
    family(b, P "region_bytes", "gauge", "Bytes of the shared regions.");
    su(b, P "region_bytes", L1("kind", "control"), ctl_bytes);
    su(b, P "region_bytes", L1("kind", "host_copy"), copy_bytes);
}

/* ------------------------------------------------------------ events */

static void event_metrics(srv_daemon *d, mbuf *b)
{
    const srv_counters *k = &d->counters;
    one_u(b, P "plan_cache_hits_total", "counter",
          "PlanRequests answered from the plan cache.", k->plan_cache_hits);
    one_u(b, P "plan_cache_misses_total", "counter",
          "PlanRequests queued for a planner (not in the cache).",
          k->plan_cache_misses);
    one_u(b, P "plan_cache_bytes", "gauge",
          "Bytes of packed schedules in the plan cache now.",
          srv_planning_cache_bytes(d->planning));
    one_u(b, P "plan_cache_evictions_total", "counter",
          "Plan cache entries dropped (cache_entries or cache_bytes).",
          k->plan_cache_evictions);
    one_u(b, P "retained_plan_bytes", "gauge",
          "Bytes of plans sessions keep for StageRequest now.",
          d->memo_bytes);
    one_u(b, P "retained_plans", "gauge",
          "Plans sessions keep for StageRequest now.", d->n_memos);
    one_u(b, P "retained_plan_evictions_total", "counter",
          "Plans sessions kept that were dropped or not kept "
          "(retained_per_session or retained_total).",
          k->retained_evictions);
    one_u(b, P "ddr_reserved_bytes", "gauge",
          "Bytes of the DDR pool reserved now: DDR quotas' limits plus the "
          "host-copy limits granted to sessions outside every DDR quota.",
          srv_stage_ddr_reserved(d));
    one_u(b, P "ddr_limit_changes_total", "counter",
          "Host-copy DDR limits of installed replays changed by the "
          "reservation ledger (a session came, went, or was re-split).",
          k->ddr_limit_changes);
    one_u(b, P "stage_wait_failures_total", "counter",
          "Client waits for a host copy the daemon gave up on after [ddr] "
          "stage_wait (the client's copy fails, naming the resource).",
          k->stage_wait_failures);
    family(b, P "plans_total", "counter",
           "Plans made on worker threads, by result.");
    su(b, P "plans_total", L1("result", "ok"), k->plans_ok);
    su(b, P "plans_total", L1("result", "failed"), k->plans_failed);

    family(b, P "admission_decisions_total", "counter",
           "Admission decisions on requests that take resources.");
    for (int i = 0; i < SRV_ADMIT_N; i++) {
        const char *r = srv_admit_kind_name((srv_admit_kind)i);
        su(b, P "admission_decisions_total",
           L2(L1("request", r), "decision", "admitted"), k->admitted[i]);
        su(b, P "admission_decisions_total",
           L2(L1("request", r), "decision", "refused"), k->refused[i]);
    }
    family(b, P "quota_refusals_total", "counter",
           "Requests refused because a uid or job quota would be exceeded.");
    for (int t = SRV_TIER_DDR; t <= SRV_TIER_HBM; t++)
        su(b, P "quota_refusals_total", L1("tier", srv_tier_name(t)),
           k->quota_refusals[t]);

    family(b, P "errors_total", "counter",
           "Error replies sent, by code (HO_E_* names, errno names).");
#define ERROR_ROW(name, code, text)                                       \
    su(b, P "errors_total", L1("code", "HO_E_" #name),                    \
       srv_count_errors(k, code));
    HO_ERROR_MAP(ERROR_ROW)
#undef ERROR_ROW
    /* errno values by name; those without one (and beyond the table) add
     * up as "other", so no two samples share a label set. */
    uint64_t other = k->errors_errno[0];
    for (int e = 1; e < SRV_METRICS_ERRNO_MAX; e++) {
        const char *name = ho_err_name(-e);
        if (strncmp(name, "HO_E_", 5) == 0)
            other += k->errors_errno[e];
        else if (k->errors_errno[e])
            su(b, P "errors_total", L1("code", name), k->errors_errno[e]);
    }
    if (other)
        su(b, P "errors_total", L1("code", "other"), other);

    family(b, P "textfile_writes_total", "counter",
           "Writes of the metrics textfile, by result.");
    su(b, P "textfile_writes_total", L1("result", "ok"), k->textfile_writes);
    su(b, P "textfile_writes_total", L1("result", "failed"),
       k->textfile_failures);
}

int srv_metrics_render(srv_daemon *d, char **ret_text, size_t *ret_len)
{
    mbuf b = {0};
    uint64_t host[2] = {0, 0};
    process_metrics(d, &b);
    int rc = tier_metrics(d, &b);
    device_metrics(d, &b);
    session_metrics(d, &b);
    if (rc == 0)
        rc = job_metrics(d, &b, host);
    link_metrics(d, &b, host);
    region_metrics(d, &b);
    event_metrics(d, &b);
    if (rc < 0 || b.oom || !b.p) {
        free(b.p);
        return -ENOMEM;
    }
    *ret_text = b.p;
    *ret_len = b.len;
    return 0;
}

/* ------------------------------------------------------------ request */

void srv_handle_metrics(srv_daemon *d, srv_conn *c, uint64_t rid)
{
    char *text = NULL;
    size_t len = 0;
    if (srv_metrics_render(d, &text, &len) < 0) {
        srv_reply_error(c, rid, -ENOMEM, "out of memory");
        return;
    }
    Hyperoffload__MetricsReply mr = HYPEROFFLOAD__METRICS_REPLY__INIT;
    mr.text = text;
    mr.content_type = SRV_METRICS_CONTENT_TYPE;
    srv_conn_reply(c, rid, HYPEROFFLOAD__ENVELOPE__BODY_METRICS_REPLY, &mr,
                   NULL, 0);
    free(text);
}

/* ------------------------------------------------------------ textfile */

typedef struct tf_job {
    uv_work_t req;
    srv_daemon *d;
    char *text;
    size_t len;
    char *path;
    int rc;
    char err[SRV_ERR_MAX];
} tf_job;

static void tf_job_free(tf_job *j)
{
    free(j->text);
    free(j->path);
    free(j);
}

/* Write j->text to j->path atomically: "<path>.tmp" (node_exporter reads
 * only *.prom), fsync, rename.  On a worker thread. */
static void tf_work(uv_work_t *req)
{
    tf_job *j = req->data;
    size_t pl = strlen(j->path);
    char *tmp = malloc(pl + 5);
    if (!tmp) {
        j->rc = ho_errf(j->err, sizeof(j->err), -ENOMEM, "out of memory");
        return;
    }
    memcpy(tmp, j->path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        j->rc = ho_errf(j->err, sizeof(j->err), -errno, "cannot create %s: "
                        "%s", tmp, strerror(errno));
        free(tmp);
        return;
    }
    size_t off = 0;
    while (off < j->len) {
        ssize_t w = write(fd, j->text + off, j->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            j->rc = ho_errf(j->err, sizeof(j->err), w < 0 ? -errno : -EIO,
                            "cannot write %s: %s", tmp,
                            w < 0 ? strerror(errno) : "short write");
            break;
        }
        off += (size_t)w;
    }
    if (j->rc == 0 && fsync(fd) < 0)
        j->rc = ho_errf(j->err, sizeof(j->err), -errno, "fsync %s: %s", tmp,
                        strerror(errno));
    if (close(fd) < 0 && j->rc == 0)
        j->rc = ho_errf(j->err, sizeof(j->err), -errno, "close %s: %s", tmp,
                        strerror(errno));
    if (j->rc == 0 && rename(tmp, j->path) < 0)
        j->rc = ho_errf(j->err, sizeof(j->err), -errno, "rename %s to %s: "
                        "%s", tmp, j->path, strerror(errno));
    if (j->rc < 0)
        unlink(tmp);
    free(tmp);
}

static void tf_after(uv_work_t *req, int status)
{
    tf_job *j = req->data;
    srv_daemon *d = j->d;
    if (status < 0 && j->rc == 0)
        j->rc = ho_errf(j->err, sizeof(j->err), HO_E_INTERNAL,
                        "write cancelled");
    d->metrics_writing = false;
    /* The textfile moved (reload) while this write ran: no stale copy. */
    if (j->rc == 0 && (!d->metrics_path || strcmp(d->metrics_path,
                                                   j->path) != 0))
        unlink(j->path);
    if (j->rc == 0) {
        d->counters.textfile_writes++;
    } else {
        /* Logged once per run of failures, not every interval. */
        if (!d->metrics_failing)
            srv_log_s(SRV_LOG_WARNING, 0, NULL, j->rc,
                      "metrics textfile: %s", j->err);
        d->counters.textfile_failures++;
    }
    d->metrics_failing = j->rc < 0;
    tf_job_free(j);
    srv_work_end(d);
}

static void tf_write(srv_daemon *d)
{
    const char *path = d->metrics_path;
    if (!path || d->metrics_writing || d->draining)
        return;
    tf_job *j = calloc(1, sizeof(*j));
    if (!j)
        return;
    j->d = d;
    j->req.data = j;
    j->path = strdup(path);
    if (!j->path || srv_metrics_render(d, &j->text, &j->len) < 0) {
        tf_job_free(j);
        return;
    }
    if (uv_queue_work(&d->loop, &j->req, tf_work, tf_after) < 0) {
        tf_job_free(j);
        return;
    }
    d->metrics_writing = true;
    srv_work_begin(d);
}

static void on_metrics_timer(uv_timer_t *t)
{
    tf_write(t->data);
}

void srv_metrics_configure(srv_daemon *d)
{
    if (!d->metrics_timer.loop) {
        uv_timer_init(&d->loop, &d->metrics_timer);
        d->metrics_timer.data = d;
    }
    uv_timer_stop(&d->metrics_timer);
    const char *path = d->cfg.metrics_textfile;
    if (!path || !path[0])
        path = NULL;
    /* A textfile that is no longer configured goes (node_exporter would
     * export its last figures for ever). */
    if (d->metrics_path && (!path || strcmp(path, d->metrics_path) != 0)) {
        if (unlink(d->metrics_path) < 0 && errno != ENOENT)
            srv_warn("cannot remove the metrics textfile %s: %s",
                     d->metrics_path, strerror(errno));
        free(d->metrics_path);
        d->metrics_path = NULL;
    }
    if (!path)
        return;
    if (!d->metrics_path && !(d->metrics_path = strdup(path))) {
        srv_err("metrics textfile %s: out of memory", path);
        return;
    }
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".prom") != 0)
        srv_warn("metrics textfile %s does not end in .prom: node_exporter's "
                 "textfile collector will not read it", path);
    uint64_t ms = (uint64_t)d->cfg.metrics_interval * 1000;
    uv_timer_start(&d->metrics_timer, on_metrics_timer, 0, ms);
    srv_info("metrics: writing %s every %u s", path, d->cfg.metrics_interval);
}

void srv_metrics_stop(srv_daemon *d)
{
    uv_handle_t *h = (uv_handle_t *)&d->metrics_timer;
    if (h->loop && !uv_is_closing(h))
        uv_close(h, NULL);
    if (d->metrics_path && unlink(d->metrics_path) < 0 && errno != ENOENT)
        srv_warn("cannot remove the metrics textfile %s: %s",
                 d->metrics_path, strerror(errno));
    free(d->metrics_path);
    d->metrics_path = NULL;
}
