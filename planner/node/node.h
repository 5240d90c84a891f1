/*
 * planner/node/node.h - the node as a whole (library ho_plan_node): the
 * node description and the workload of ../shared/design/NODE.md §1-§2,
 * their JSON forms, and the node judge of §3 (plan_node_judge), beside
 * plan_simulate.  Open cases of §3 are fixed in docs/node.md.
 *
 * Pure computation like the rest of planner/: no sockets, threads or
 * logging; every fallible call returns 0 or a negative code
 * (hyperoffload/errors.h) and, where a message helps, fills a caller
 * buffer (err, errlen).  Node and workload files that do not follow the
 * format fail with HO_E_BAD_CONFIG and a message naming the place
 * ("links[2].parent: unknown link \"sw9\""); a workload that the judge
 * finds invalid fails with HO_E_BAD_SCHEDULE and a plan_node_violation
 * naming the client, op and cause.
 *
 * Ownership: plan_node, plan_workload, plan_wl_run and plan_node_result
 * are heap objects released with their *_free (which accepts NULL).
 */
#ifndef HO_PLANNER_NODE_NODE_H
#define HO_PLANNER_NODE_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ limits */

/* Links and devices of one node: a SuperNode host has tens of each. */
#define PLAN_NODE_MAX_LINKS 1024u
#define PLAN_NODE_MAX_DEVICES 1024u
/* Links from a device up to the root: PCIe trees are a few levels deep;
 * bounds the per-copy path the judge keeps. */
#define PLAN_NODE_MAX_DEPTH 32u
/* Device ids: small integers (an accelerator index). */
#define PLAN_NODE_MAX_DEVICE_ID 1000000u
/* Clients of one workload: several per device at most. */
#define PLAN_NODE_MAX_CLIENTS 4096u
/* Link, device, client, job and sync names (strlen). */
#define PLAN_NODE_MAX_NAME 255u
/* trace / schedule paths (strlen), as PATH_MAX. */
#define PLAN_NODE_MAX_PATH 4095u
/* Node and workload files are small: 16 MiB is far above 4096 clients. */
#define PLAN_NODE_MAX_FILE (16ull << 20)
/* A client's weight: positive, at most 10^6 (a ratio, not a rate). */
#define PLAN_NODE_MAX_WEIGHT 1e6
/* max_slowdown: at least 1, at most 10^6. */
#define PLAN_NODE_MAX_SLOWDOWN 1e6
/* Steps the judge runs (K). */
#define PLAN_NODE_DEFAULT_STEPS 3u
#define PLAN_NODE_MAX_STEPS 1000u
/* Byte figures (HBM, reserve, DDR, flash, budgets, DDR limits) fit in
 * int64 as jansson reads them; gbps and latency bounds are the trace's
 * (PLAN_FMT_MAX_GBPS, PLAN_FMT_MAX_LATENCY_US). */
#define PLAN_NODE_MAX_BYTES ((uint64_t)INT64_MAX)

/* ------------------------------------------------------------------ node */

typedef struct plan_node_link {
    char *name;          /* unique among links */
    char *parent_name;   /* NULL for the root */
    uint32_t parent;     /* link index, PLAN_NONE for the root (finish) */
    uint32_t depth;      /* links from this one to the root, 0 = root */
    double h2d_gbps;     /* > 0 */
    double d2h_gbps;     /* > 0 */
    bool duplex;         /* false: one capacity for both directions */
} plan_node_link;

typedef struct plan_node_device {
    uint32_t id;           /* unique, <= PLAN_NODE_MAX_DEVICE_ID */
    char *name;            /* unique among devices */
    char *parent_name;     /* NULL only when the node has no links */
    uint32_t parent;       /* link index, PLAN_NONE when no links (finish) */
    uint64_t hbm_bytes;    /* > 0 */
    uint64_t reserve_bytes; /* < hbm_bytes */
    double h2d_gbps, d2h_gbps; /* its own link (DMA engines), > 0 */
    double latency_us;     /* >= 0 */
    bool duplex;           /* false: one copy engine for both directions */
} plan_node_device;

typedef struct plan_node_flash {
    uint64_t bytes;
    double read_gbps, write_gbps;
} plan_node_flash;

typedef struct plan_node {
    uint32_t n_links, cap_links;
    plan_node_link *links;
    uint32_t n_devices, cap_devices;
    plan_node_device *devices;
    uint64_t ddr_bytes;
    bool has_flash;
    plan_node_flash flash;
    bool finished;        /* plan_node_finish succeeded */
} plan_node;

/* A new, empty node (ddr_bytes 0, no flash).  NULL on OOM. */
plan_node *plan_node_new(void);
plan_node *plan_node_free(plan_node *n);

/* Append a link / device; names and parent names are copied (parent NULL:
 * the root link, or a device of a node without links).  Figures are
 * checked (HO_E_BAD_CONFIG naming "links[i].field" / "devices[i].field"),
 * names against duplicates; -E2BIG at the limit, -ENOMEM. */
int plan_node_add_link(plan_node *n, const char *name, const char *parent,
                       double h2d_gbps, double d2h_gbps, bool duplex,
                       char *err, size_t errlen);
int plan_node_add_device(plan_node *n, const plan_node_device *d,
                         char *err, size_t errlen);

/* Resolve parents and check the tree: at least one device; exactly one
 * root link when there are links; every parent names a link
 * ("links[2].parent: unknown link \"sw9\""); no cycles
 * ("links[1].parent: cycle sw1 -> sw2 -> sw1"); depth within
 * PLAN_NODE_MAX_DEPTH; every device has a parent when the node has
 * links.  HO_E_BAD_CONFIG.  Idempotent. */
int plan_node_finish(plan_node *n, char *err, size_t errlen);

/* Device index by id, link index by name; PLAN_NONE when absent. */
uint32_t plan_node_device_index(const plan_node *n, uint32_t id);
uint32_t plan_node_link_index(const plan_node *n, const char *name);

/* JSON (NODE.md §1).  The reader is strict (unknown fields, missing
 * required ones, bad figures: HO_E_BAD_CONFIG naming the place) and
 * returns a finished node.  The writer emits the same JSON with a fixed
 * key order; what it writes reads back identical. */
int plan_node_parse_json(const char *buf, size_t len, plan_node **ret,
                         char *err, size_t errlen);
int plan_node_read_json(const char *path, plan_node **ret, char *err,
                        size_t errlen);
int plan_node_write_json(const plan_node *n, FILE *out);

/* ------------------------------------------------------------------ workload */

typedef struct plan_wl_predicted {
    double step_time_us, exposed_us, alloc_wait_us;
} plan_wl_predicted;

typedef struct plan_wl_client {
    char *name;           /* unique */
    char *job;            /* NULL when absent */
    uint32_t device;      /* device id (not index) */
    char *trace;          /* path as written: relative to the file */
    char *schedule;       /* NULL when absent */
    bool has_budget;
    uint64_t budget_bytes;
    double weight;        /* > 0, default 1 */
    char *sync;           /* NULL: free running */
    bool has_max_slowdown;
    double max_slowdown;  /* >= 1 */
    /* The arbiter's output (NODE.md §4); each optional. */
    bool has_planned_h2d;
    double planned_h2d_gbps;
    bool has_planned_d2h;
    double planned_d2h_gbps;
    bool has_ddr_limit;
    uint64_t ddr_limit_bytes;
    bool has_predicted;
    plan_wl_predicted predicted;
} plan_wl_client;

typedef struct plan_workload {
    char *dir;            /* directory relative paths are taken from */
    uint32_t n_clients, cap_clients;
    plan_wl_client *clients;
} plan_workload;

/* A new, empty workload whose relative paths are taken from `dir` (copied;
 * NULL: "."). NULL on OOM. */
plan_workload *plan_workload_new(const char *dir);
plan_workload *plan_workload_free(plan_workload *w);

/* Append a client: every string is copied, figures are checked
 * (HO_E_BAD_CONFIG naming "clients[i].field"), the name against
 * duplicates.  -E2BIG at the limit, -ENOMEM. */
int plan_workload_add_client(plan_workload *w, const plan_wl_client *c,
                             char *err, size_t errlen);

/* JSON (NODE.md §2 and the arbiter's fields of §4).  Strict like the node
 * reader.  `dir` is the directory paths are relative to (the reader of a
 * file uses the file's own directory). */
int plan_workload_parse_json(const char *buf, size_t len, const char *dir,
                             plan_workload **ret, char *err, size_t errlen);
int plan_workload_read_json(const char *path, plan_workload **ret,
                            char *err, size_t errlen);
int plan_workload_write_json(const plan_workload *w, FILE *out);

/* The file stem of client i named `name` in a written workload: "i-" and
 * the name with every character but [A-Za-z0-9._-] as '_', cut to fit
 * buf (len > 0; what hoctl node plan --out and the daemon's export name
 * their traces and schedules by). */
void plan_workload_file_stem(char *buf, size_t len, uint32_t i,
                             const char *name);

/* The path `rel` (a client's trace or schedule) as seen from the current
 * directory: rel itself when absolute, else w->dir + "/" + rel.  Returns a
 * new string (NULL on OOM). */
char *plan_workload_path(const plan_workload *w, const char *rel);

/* ------------------------------------------------------------------ judge */

/* One client as the judge sees it. */
typedef struct plan_node_input {
    const char *name;                /* for messages; may be NULL */
    const plan_trace *trace;         /* finished */
    const plan_schedule *schedule;   /* bound to trace */
    uint32_t device;                 /* index into node->devices */
    uint64_t budget_bytes;
    double weight;                   /* > 0 */
    uint32_t sync;                   /* group number < n, PLAN_NONE: free */
} plan_node_input;

typedef struct plan_node_opts {
    uint32_t steps;                  /* K; 0 = PLAN_NODE_DEFAULT_STEPS */
} plan_node_opts;

/* Figures of one client, from the last step (NODE.md §3.5). */
typedef struct plan_node_client_fig {
    double compute_us;
    double step_time_us;   /* sync member: group start to group end */
    double exposed_us;     /* step_time - compute */
    double alloc_wait_us;
    double slowdown;       /* step_time / compute (1 when compute is 0) */
    double start_us, end_us; /* the last step in node time (end: its own) */
    uint64_t h2d_bytes, d2h_bytes;
    uint64_t peak_device_bytes, peak_host_bytes;
} plan_node_client_fig;

typedef struct plan_node_device_fig {
    uint64_t peak_bytes;      /* peak of the sum of its clients' bytes */
    uint64_t capacity_bytes;  /* hbm_bytes - reserve_bytes */
    uint32_t n_clients;
} plan_node_device_fig;

typedef struct plan_node_result {
    uint32_t steps, n_clients, n_devices;
    plan_node_client_fig *clients;   /* n_clients, in input order */
    plan_node_device_fig *devices;   /* n_devices, in node order */
    double weighted_exposed_us;      /* sum of weight * exposed */
    double max_slowdown;             /* max step_time / compute */
    double alloc_wait_us;            /* sum over clients */
    double end_us;                   /* node time when the last step ended */
    uint64_t n_copies;               /* copies simulated, all steps */
    uint64_t n_rate_updates;         /* fair-share computations */
} plan_node_result;

plan_node_result *plan_node_result_free(plan_node_result *r);

/* Optional observer of a judge run, for pictures (planner/viz/).  Times
 * are node time in µs, as plan_node_client_fig's start_us and end_us;
 * every step is reported, in time order.  Callbacks may be NULL. */
typedef struct plan_node_observer {
    void *ctx;
    /* client ci's device bytes are `bytes` from t on */
    void (*device_bytes)(void *ctx, uint32_t ci, double t_us,
                         uint64_t bytes);
    /* a copy of client ci completed: dir 0 H2D, 1 D2H; started on its
     * engine at start (latency included) */
    void (*transfer)(void *ctx, uint32_t ci, int dir, uint32_t storage,
                     double start_us, double end_us, uint64_t bytes);
    /* client ci's copy in direction dir moves at `rate` bytes/µs from t
     * on (0: none moving; a client has at most one per direction) */
    void (*rate)(void *ctx, uint32_t ci, int dir, double t_us, double rate);
    /* op of client ci ran from start to end */
    void (*op)(void *ctx, uint32_t ci, uint32_t op, double start_us,
               double end_us);
    /* an allocation of client ci waited from t0 to t1 */
    void (*alloc_wait)(void *ctx, uint32_t ci, double t0_us, double t1_us);
} plan_node_observer;

typedef struct plan_node_violation {
    int code;              /* HO_E_BAD_SCHEDULE or 0 */
    uint32_t client;       /* input index, PLAN_NONE when none */
    uint32_t step;         /* 0-based step, PLAN_NONE when alone */
    uint32_t op;           /* op index, PLAN_NONE when none / step end */
    uint64_t storage_id;   /* UINT64_MAX when none */
    char message[448];     /* names the client, the op and the cause */
} plan_node_violation;

/* Run NODE.md §3 (with docs/node.md) on `n` clients of `node` (finished)
 * for opt->steps steps (opt may be NULL).  First each client's schedule
 * must be valid and within its budget_bytes under plan_simulate alone;
 * then the clients run together.  Returns 0 and *ret (a new result) when
 * the workload is valid; HO_E_BAD_SCHEDULE with *ret_violation when it is
 * not (then *ret is not set); -EINVAL for bad input (unfinished node or
 * trace, device index out of range, weight not positive), -ENOMEM.
 * ret_violation may be NULL.  Deterministic. */
int plan_node_judge(const plan_node *node, const plan_node_input *in,
                    uint32_t n, const plan_node_opts *opt,
                    plan_node_result **ret, plan_node_violation *ret_violation);
/* plan_node_judge with an observer (obs may be NULL). */
int plan_node_judge_observed(const plan_node *node, const plan_node_input *in,
                             uint32_t n, const plan_node_opts *opt,
                             const plan_node_observer *obs,
                             plan_node_result **ret,
                             plan_node_violation *ret_violation);

/* A workload with its traces and schedules loaded, ready for the judge. */
typedef struct plan_wl_run {
    uint32_t n;
    plan_node_input *in;        /* n, in workload order */
    plan_trace **traces;        /* n; clients with one path share one */
    plan_schedule **schedules;  /* n, bound; shared like traces */
    uint32_t n_groups;
    char **groups;              /* sync names, by group number (borrowed) */
} plan_wl_run;

/* Check `w` against `node` (every device id exists: "clients[2].device:
 * no device 7 in the node"; every client has a schedule) and load each
 * trace and schedule (paths through plan_workload_path, either format).
 * A client without budget_bytes takes its schedule's.  HO_E_BAD_CONFIG
 * for the workload, the readers' codes (message prefixed with
 * "clients[i] (name): ") for the files. */
int plan_wl_run_load(const plan_node *node, const plan_workload *w,
                     plan_wl_run **ret, char *err, size_t errlen);
plan_wl_run *plan_wl_run_free(plan_wl_run *r);

#ifdef __cplusplus
}
#endif
#endif
