/*
 * planner/bound/bound_impl.h - private to planner/bound/: the relaxed model
 * of a trace that both bounds use (bound_model.c), the closed form
 * (bound_cf.c) and the LP (bound_lp.c).  docs/bound.md explains every
 * field in terms of PLANNER.md §3.
 */
#ifndef HO_PLANNER_BOUND_IMPL_H
#define HO_PLANNER_BOUND_IMPL_H

#include "planner/bound/bound.h"

/* bd_part.rel: where the store (D2H) of the part's data may start. */
#define BD_CLEAN (-2) /* no store needed: a current host copy exists */
#define BD_T0 (-1)    /* version 0 of initial: device data: from t = 0 */
/* bd_part.dl: the deadline of the prefetch (H2D) that must follow. */
#define BD_NOH2D (-1) /* none: the data is not needed on device again */
/* dl == n_ops: step end (retained device-homed data). */

#define BD_MAND_D 1u /* the store is forced (final version of host-homed
                        data written in the step) */
#define BD_MAND_H 2u /* the prefetch is forced (first read of initial:
                        host data) */

/* bd_part.home: which home the part assumes (docs/bound.md §2.3). */
#define BD_HOME_GIVEN 0  /* not movable: the home its initial gives */
#define BD_HOME_EITHER 1 /* movable, relaxed over both homes part by part
                            (closed form only; in bd_model.parts) */
#define BD_HOME_HOST 2   /* movable, as if homed on host (LP only; in
                            bd_model.mparts) */
#define BD_HOME_DEV 3    /* movable, as if homed on device (LP only) */

/* A stretch of one storage's life during which the schedule may keep it
 * off the device: it covers the memory checkpoints at ops from..to (its
 * state at the start of those ops).  Off at a checkpoint c means: its
 * store (unless rel == BD_CLEAN) completed after the release and before
 * S_c, and its prefetch (unless dl == BD_NOH2D) runs after S_c and
 * completes before S_dl (or step end). */
typedef struct bd_part {
    uint64_t bytes;
    uint64_t mand_bytes; /* forced copy volume this part carries (once per
                            storage), 0 for most */
    int32_t from, to;    /* from > to: covers no op (kept for mand_bytes) */
    int32_t rel;         /* BD_CLEAN, BD_T0 or the op whose write made
                            the version (the store runs after E_rel) */
    int32_t dl;          /* BD_NOH2D, a consumer op, or n_ops */
    uint32_t sid;        /* storage index */
    uint8_t mand;        /* BD_MAND_* */
    uint8_t home;        /* BD_HOME_* */
} bd_part;

typedef struct bd_model {
    const plan_trace *t;
    plan_link link;
    uint32_t n;            /* ops */
    double *pre;           /* n + 1: compute before op i (us) */
    uint64_t *fixed;       /* n: bytes that must be on device at S_i */
    uint64_t *live;        /* n: fixed + every part covering i (for a
                              movable storage: every op where it is live
                              and not accessed, off for free or not) */
    uint64_t t0_bytes;     /* on device at t = 0 */
    uint64_t floor_bytes;  /* max(t0_bytes, max fixed) */
    uint32_t floor_op;     /* PLAN_NONE for t = 0 */
    bd_part *parts;        /* not movable, and movable relaxed
                              (BD_HOME_EITHER): the closed form's view */
    size_t n_parts, cap_parts;
    bd_part *mparts;       /* movable storages once per home, storage by
                              storage (BD_HOME_HOST then BD_HOME_DEV): the
                              LP couples the two by a home fraction */
    size_t n_mparts, cap_mparts;
    double mand_h2d_us, mand_d2h_us; /* forced copies, for notes */
} bd_model;

int bd_model_init(bd_model *m, const plan_trace *t, const plan_link *link);
void bd_model_done(bd_model *m);

/* Per-byte copy time (us) without latency, and latency (us). */
static inline double bd_us_per_byte(const plan_link *l, int d2h)
{
    return 1.0 / ((d2h ? l->d2h_gbps : l->h2d_gbps) * 1e3);
}

/* Memory checkpoints: at most k ops (all when k >= n), increasing; in each
 * of k chunks of roughly equal compute, the op where the no-offload live
 * bytes are largest.  Independent of budget and link.  *ret malloc'ed. */
int bd_checkpoints(const bd_model *m, uint32_t k, uint32_t **ret,
                   uint32_t *ret_n);

/* Closed form over the given checkpoints (plus the forced copies). */
int bd_closed_form(const bd_model *m, uint64_t budget, const uint32_t *ck,
                   uint32_t nck, double *ret_us);

typedef struct bd_lp_in {
    const bd_model *m;
    uint64_t budget;
    uint32_t max_checkpoints, max_cells;
    uint32_t time_limit_ms, iteration_limit;
} bd_lp_in;

typedef struct bd_lp_out {
    double bound_us;
    plan_bound_lp_status status;
    uint32_t checkpoints, rows, cols, iterations;
    uint64_t nonzeros;
    char note[160];
} bd_lp_out;

int bd_lp(const bd_lp_in *in, bd_lp_out *out);

#endif
