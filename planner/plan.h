/*
 * planner/plan.h - HyperOffload's residency planner (pure computation).
 *
 * The contract is ../shared/design/PLANNER.md: a trace of one step of one
 * client, a schedule of prefetch/store/free actions, the execution model
 * that judges a schedule (plan_simulate), and the planners (hoplan and the
 * baselines).  This library has no sockets, no threads of its own and does
 * no logging: every fallible call returns 0 or a negative code
 * (hyperoffload/errors.h) and, where a message helps, fills a caller buffer.
 *
 * Indices vs ids: in memory, ops and storages are addressed by their index
 * (uint32_t).  The trace's own storage ids (arbitrary uint64) are kept in
 * plan_storage.id and are what the JSON and protobuf forms carry.
 *
 * Ownership: plan_trace_* and plan_schedule_* objects are heap objects owned
 * by whoever received them from a *_new / *_read / plan_make call and are
 * released with the matching *_free (which accepts NULL).
 */
#ifndef HO_PLANNER_PLAN_H
#define HO_PLANNER_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "planner/plan_limits.h"

#ifdef __cplusplus
extern "C" {
#endif


#define PLAN_NONE UINT32_MAX /* "no index" */

/* ------------------------------------------------------------------ trace */

typedef enum plan_kind {
    PLAN_KIND_ACTIVATION = 0,
    PLAN_KIND_PARAM,
    PLAN_KIND_GRAD,
    PLAN_KIND_OPTIMIZER,
    PLAN_KIND_KV,
    PLAN_KIND_OTHER,
    PLAN_KIND__COUNT
} plan_kind;

typedef enum plan_initial {
    PLAN_INIT_NONE = 0,   /* created by its first write */
    PLAN_INIT_DEVICE,     /* on device at step start */
    PLAN_INIT_HOST,       /* only a host copy at step start */
    PLAN_INIT__COUNT
} plan_initial;

const char *plan_kind_name(plan_kind k);       /* "activation", ... */
const char *plan_initial_name(plan_initial i); /* "none", "device", "host" */
int plan_kind_parse(const char *s, plan_kind *ret_kind);       /* 0 / -EINVAL */
int plan_initial_parse(const char *s, plan_initial *ret_initial); /* 0 / -EINVAL */

typedef struct plan_storage {
    uint64_t id;      /* the trace's id, unique */
    uint64_t bytes;   /* > 0, <= PLAN_MAX_STORAGE_BYTES */
    uint8_t kind;     /* plan_kind */
    uint8_t initial;  /* plan_initial */
    bool retained;
    bool pinned;
    bool movable;     /* the schedule may choose its home between steps
                         (plan_schedule.homes); only with retained and
                         initial device or host, else HO_E_BAD_TRACE */
} plan_storage;

typedef struct plan_link {
    double h2d_gbps;   /* 10^9 bytes/s, > 0 */
    double d2h_gbps;
    double latency_us; /* >= 0 */
    bool duplex;       /* separate H2D and D2H engines */
} plan_link;

typedef struct plan_op {
    double duration_us;  /* >= 0 */
    uint32_t name;       /* offset of a NUL-terminated name in trace->names */
    uint32_t n_reads;
    uint32_t n_writes;
    uint64_t first_ref;  /* trace->refs[first_ref ..+n_reads] are reads,
                            then n_writes writes (storage indices) */
} plan_op;

/* One access of a storage, derived by plan_trace_finish().  A storage that
 * an op both reads and writes has one entry with both flags. */
#define PLAN_ACC_READ 1u
#define PLAN_ACC_WRITE 2u
typedef struct plan_access {
    uint32_t op;
    uint32_t flags;
} plan_access;

typedef struct plan_trace {
    char *name;                 /* owned; never NULL after new */
    plan_link link;
    uint32_t n_storages, cap_storages;
    plan_storage *storages;
    uint32_t n_ops, cap_ops;
    plan_op *ops;
    uint64_t n_refs, cap_refs;
    uint32_t *refs;             /* storage indices */
    char *names;                /* op names, NUL-separated */
    size_t names_len, names_cap;

    /* Derived by plan_trace_finish(); read-only afterwards. */
    bool finished;
    uint32_t *acc_start;        /* n_storages + 1 offsets into acc */
    plan_access *acc;           /* accesses per storage, by op order */
    void *id_index;             /* private: id -> index hash */
} plan_trace;

/* A new, empty trace with the given name (copied) and link.  NULL on OOM. */
plan_trace *plan_trace_new(const char *name, const plan_link *link);
/* Release a trace; accepts NULL; returns NULL (t = plan_trace_free(t)). */
plan_trace *plan_trace_free(plan_trace *t);

/* Append a storage.  Returns its index in *ret_index (may be NULL).
 * -EINVAL for bytes == 0 or above the limit, bad kind/initial;
 * HO_E_BAD_TRACE for a duplicate id or a `movable` storage that is not
 * retained with initial device or host (message names it); -E2BIG at the
 * limit. */
int plan_trace_add_storage(plan_trace *t, const plan_storage *s,
                           uint32_t *ret_index, char *err, size_t errlen);

/* Append an op.  reads/writes are storage *indices* already added.
 * -EINVAL for a negative/NaN duration or an index out of range. */
int plan_trace_add_op(plan_trace *t, const char *name, double duration_us,
                      const uint32_t *reads, uint32_t n_reads,
                      const uint32_t *writes, uint32_t n_writes,
                      char *err, size_t errlen);

/* Look up a storage index by id (works before and after finish).
 * Returns PLAN_NONE when absent. */
uint32_t plan_trace_find(const plan_trace *t, uint64_t id);

/* Validate and derive the access lists.  Checks: at least one op; every
 * `initial: none` storage is written before it is first read (the message
 * names op and storage); duplicates inside one op's reads or writes are
 * merged.  Storages never accessed are allowed.  HO_E_BAD_TRACE with a
 * message naming the place.  Idempotent. */
int plan_trace_finish(plan_trace *t, char *err, size_t errlen);

static inline const char *plan_op_name(const plan_trace *t, uint32_t op)
{
    return t->names + t->ops[op].name;
}

/* Stable 64-bit hash of the trace content (not of its name). */
uint64_t plan_trace_hash(const plan_trace *t);

/* Summary used by `hoctl trace show` and by planners. */
typedef struct plan_trace_summary {
    uint32_t n_ops, n_storages;
    uint64_t n_refs;
    uint64_t bytes_by_kind[PLAN_KIND__COUNT];
    uint32_t count_by_kind[PLAN_KIND__COUNT];
    uint64_t total_bytes;
    double compute_us;
    uint32_t n_movable;             /* storages marked movable */
    uint64_t movable_bytes;         /* and their bytes */
    uint64_t no_offload_peak;       /* peak of the `none` schedule */
    uint64_t max_op_working_set;    /* largest bytes any single op needs */
    uint32_t max_op_working_set_op;
} plan_trace_summary;
int plan_trace_summarize(const plan_trace *t, plan_trace_summary *ret_summary);

/* ------------------------------------------------------------------ schedule */

typedef enum plan_act_kind {
    PLAN_ACT_PREFETCH = 0,
    PLAN_ACT_STORE,
    PLAN_ACT_FREE_DEVICE,
    PLAN_ACT_FREE_HOST,
    PLAN_ACT_WAIT,        /* the point's clock moves to the completion of
                             the storage's in-flight copies (PLANNER.md §3,
                             docs/execution-model.md rule 13) */
    PLAN_ACT__COUNT
} plan_act_kind;

typedef enum plan_when { PLAN_BEFORE = 0, PLAN_AFTER = 1 } plan_when;

const char *plan_act_name(plan_act_kind k); /* "prefetch", ... */
int plan_act_parse(const char *s, plan_act_kind *ret_kind);

typedef struct plan_action {
    uint64_t storage_id; /* authoritative (serialised) */
    uint32_t storage;    /* index into the trace, or PLAN_NONE until
                            plan_schedule_bind() */
    uint32_t op;
    uint8_t when;        /* plan_when */
    uint8_t kind;        /* plan_act_kind */
} plan_action;

typedef struct plan_metrics {
    uint64_t peak_device_bytes;
    uint64_t peak_host_bytes;
    double compute_us;
    double step_time_us;
    double exposed_us;
    uint64_t h2d_bytes;
    uint64_t d2h_bytes;
} plan_metrics;

/* Where a movable storage lives between steps (PLANNER.md §2-§3): judged
 * as if its `initial` were device or host. */
typedef enum plan_home { PLAN_HOME_DEVICE = 0, PLAN_HOME_HOST = 1 } plan_home;

const char *plan_home_name(plan_home h);             /* "device", "host" */
int plan_home_parse(const char *s, plan_home *ret_home);  /* 0 / -EINVAL */

typedef struct plan_home_entry {
    uint64_t storage_id; /* authoritative (serialised) */
    uint32_t storage;    /* index into the trace, or PLAN_NONE until
                            plan_schedule_bind() */
    uint8_t home;        /* plan_home */
} plan_home_entry;

typedef struct plan_schedule {
    char planner[32];
    uint64_t budget_bytes;
    size_t n_actions, cap_actions;
    plan_action *actions;  /* in execution order (stable by op, when) */
    bool has_predicted;
    plan_metrics predicted;
    /* Homes chosen for movable storages; every storage without an entry
     * keeps the home its `initial` gives.  At most one entry per storage
     * (checked by plan_schedule_bind), kept in the order they were set. */
    size_t n_homes, cap_homes;
    plan_home_entry *homes;
} plan_schedule;

plan_schedule *plan_schedule_new(const char *planner, uint64_t budget);
/* Release a schedule; accepts NULL; returns NULL. */
plan_schedule *plan_schedule_free(plan_schedule *s);
/* Append; -ENOMEM, -E2BIG. `storage` is an index of `t` (t may be NULL if
 * the caller fills storage_id itself through plan_schedule_push_id). */
int plan_schedule_push(plan_schedule *s, const plan_trace *t, uint32_t op,
                       plan_when when, plan_act_kind kind, uint32_t storage);
int plan_schedule_push_id(plan_schedule *s, uint32_t op, plan_when when,
                          plan_act_kind kind, uint64_t storage_id);
/* Append with both the index and the id known (the caller's: unchecked,
 * for planners that keep the ids beside their own state). */
int plan_schedule_push_ix(plan_schedule *s, uint32_t op, plan_when when,
                          plan_act_kind kind, uint32_t storage,
                          uint64_t storage_id);
/* Set the home of movable storage `storage` (an index of `t`), replacing
 * an earlier entry of the same storage (O(n_homes)).  -EINVAL for a bad
 * index or home or a storage that is not movable; -ENOMEM, -E2BIG. */
int plan_schedule_set_home(plan_schedule *s, const plan_trace *t,
                           uint32_t storage, plan_home home);
/* Append a home entry by storage id, unchecked until plan_schedule_bind
 * (what the readers use).  -EINVAL for a bad home; -ENOMEM, -E2BIG. */
int plan_schedule_push_home_id(plan_schedule *s, uint64_t storage_id,
                               plan_home home);
/* The effective `initial` of every storage of `t` under the homes of `s`
 * (bound to t; s may be NULL): PLAN_INIT_HOST for a movable storage whose
 * home is host, PLAN_INIT_DEVICE for one whose home is device, else the
 * trace's.  ret_initial holds t->n_storages entries (plan_initial).
 * 0, -EINVAL, or HO_E_BAD_SCHEDULE when an entry is not bound to t or
 * names a storage that is not movable (ret_initial then untouched). */
int plan_schedule_initials(const plan_trace *t, const plan_schedule *s,
                           uint8_t *ret_initial);
/* Resolve storage ids to indices of `t`, and stable-sort by (op, when).
 * HO_E_BAD_SCHEDULE naming the action for an unknown id or op index, or
 * the home entry ("homes[2]: ...") for an unknown id, a storage that is
 * not movable, a bad home or a second entry of the same storage. */
int plan_schedule_bind(plan_schedule *s, const plan_trace *t, char *err,
                       size_t errlen);

/* ------------------------------------------------------------------ judge */

typedef struct plan_violation {
    int code;            /* HO_E_BAD_SCHEDULE or 0 */
    uint32_t op;         /* op index, PLAN_NONE for "at step end" */
    uint64_t storage_id; /* offending storage id (UINT64_MAX if none) */
    size_t action;       /* index of the offending action, SIZE_MAX if none */
    char message[256];
} plan_violation;

/* Optional observer for pictures and tests.  Callbacks may be NULL. */
typedef struct plan_sim_observer {
    void *ctx;
    /* device bytes allocated change at time t (after applying the change) */
    void (*device_bytes)(void *ctx, double t_us, uint64_t bytes);
    /* a copy: dir 0 = H2D, 1 = D2H */
    void (*transfer)(void *ctx, int dir, uint32_t storage, double start_us,
                     double end_us, uint64_t bytes);
    /* op i ran from start to end */
    void (*op)(void *ctx, uint32_t op, double start_us, double end_us);
} plan_sim_observer;

/* Run the execution model of PLANNER.md §3 exactly.  The schedule must be
 * bound to `t` (plan_schedule_bind).  Returns 0 and fills *ret_metrics when
 * the schedule is valid *and* peak_device_bytes <= s->budget_bytes;
 * otherwise HO_E_BAD_SCHEDULE with the first violation in *ret_violation
 * (metrics are still filled as far as computed).  obs may be NULL. */
int plan_simulate(const plan_trace *t, const plan_schedule *s,
                  plan_metrics *ret_metrics, plan_violation *ret_violation,
                  const plan_sim_observer *obs);

/* ------------------------------------------------------------------ planners */

typedef struct plan_options {
    const char *planner;        /* NULL or "hoplan"; see plan_planner_names */
    uint32_t select_distance;   /* ms-distance, default 100 */
    uint32_t select_num;        /* ms-distance, default 100 */
    uint32_t prefetch_distance; /* ms-distance, default 50 */
} plan_options;

typedef struct plan_result {
    uint64_t no_offload_peak;
    uint64_t working_set_bound; /* largest single-op working set */
    uint64_t min_budget;        /* smallest budget this planner can meet
                                   (hoplan fills it always, also on
                                   success; 0 from the others) */
    uint64_t device_floor;      /* hoplan: a sound lower bound on the peak
                                   of any schedule (what must be on device
                                   at the worst op, step start or end) */
    double planning_ms;
    char message[256];          /* why, when infeasible or failing */
} plan_result;

/* Names of the available planners, NULL-terminated:
 * "hoplan", "none", "seed-greedy", "ms-distance", "reactive-lru", "oracle". */
extern const char *const plan_planner_names[];

/* Plan `t` (finished) for `budget` bytes of device memory.  On success a
 * new schedule with `predicted` filled from plan_simulate.  hoplan returns
 * HO_E_INFEASIBLE (and result->min_budget) when it cannot meet the budget;
 * baselines return their schedule even when it goes over budget (the
 * caller sees it through plan_simulate), and fail only on bad input.
 * -EINVAL for an unknown planner name.  Deterministic. */
int plan_make(const plan_trace *t, uint64_t budget, const plan_options *opt,
              plan_schedule **ret_schedule, plan_result *result);

#ifdef __cplusplus
}
#endif
#endif
