/*
 * planner/hoplan_impl.h - hoplan's private model, shared by hoplan.c (gap
 * selection), hoplan_model.c (the model and the transfer placement) and
 * oracle.c (exhaustive selection).  Not for other modules.
 *
 * Vocabulary (docs/planner.md has the whole story):
 * - boundary i: the instant just before op i runs, where its `before`
 *   actions run and its written storages are allocated; every device
 *   allocation of a schedule made by hoplan happens at a boundary, so the
 *   peak of a schedule is the largest "level" over the boundaries.
 * - nominal time: T[i] = sum of the durations of ops 0..i-1 (no stalls).
 * - gap: a period where a storage may (or must) be off the device: freed
 *   after an access (or before op 0), brought back by a prefetch before a
 *   later access (LIVE), re-created by a later write-only access (DEAD),
 *   or left on the host at step end (TRAIL_HOST, forced for retained
 *   `initial: host` data).  LEAD_HOST is the forced leading gap of
 *   `initial: host` data first read by the step: only its prefetch.
 * - version: the data of a storage between two writes; a store of it
 *   serves every selected gap of that version.
 * - window [a, z): the boundaries where a gap removes its bytes from the
 *   device (after its free has completed, before its prefetch is issued).
 *
 * Ownership: hp_model owns every array in it (hp_model_free).  Placement
 * results (hp_place) own their schedule and arrays (hp_place_done).
 */
#ifndef HO_PLANNER_HOPLAN_IMPL_H
#define HO_PLANNER_HOPLAN_IMPL_H

#include "planner/plan_impl.h"

#define HP_START UINT32_MAX /* gap freed "before op 0" */
#define HP_MAX_ROUNDS 8     /* selection rounds of hoplan */
#define HP_PLACE_ITERS 3    /* placement iterations per selection */

enum hp_gap_type {
    HP_LIVE = 0,   /* store (unless the host copy is current), free, prefetch */
    HP_DEAD,       /* free; the next access only writes: no copy at all */
    HP_TRAIL_HOST, /* forced: store (unless current), free after last access */
    HP_LEAD_HOST,  /* forced: prefetch before the first (reading) access */
};

typedef struct hp_gap {
    uint32_t storage;
    uint32_t f;     /* freed after op f, or HP_START (before op 0) */
    uint32_t q;     /* LIVE/LEAD_HOST: the consumer op, n_ops = step end;
                       DEAD: the writing op; TRAIL_HOST: n_ops */
    uint32_t ver;   /* index in hp_model.vers of the version it needs on
                       the host, PLAN_NONE when no store is needed */
    uint32_t a, z;  /* ideal window [a, z), empty when a >= z */
    uint8_t type;   /* hp_gap_type */
    uint8_t forced; /* always part of the schedule */
    uint8_t exposed;/* its prefetch cannot be hidden even alone */
    float cost_us;  /* H2D time (+ stall when exposed); 0 for DEAD */
    float stall_us; /* the consumer's stall when exposed */
} hp_gap;

typedef struct hp_ver {
    uint32_t storage;
    uint32_t rho;   /* earliest issue boundary of its store (0: before op
                       0; i > 0: after op i-1) */
    uint32_t g0, g1;/* its gaps: gaps[g0 .. g1) */
    double d2h_us;  /* copy time */
} hp_ver;

typedef struct hp_model {
    const plan_trace *t;
    uint32_t n;          /* ops (= boundaries) */
    double *T;           /* n + 1 boundary times of the `none` schedule:
                            T[0] = 0, T[i] = end of op i - 1 */
    int64_t *base;       /* n: level of the `none`-like residency */
    uint64_t none_peak;  /* peak of the `none` schedule */
    uint64_t p0;         /* bytes on device at t = 0 */
    uint64_t lb;         /* no budget below this is feasible */
    uint32_t lb_op;      /* where lb is reached (PLAN_NONE: step start) */
    hp_gap *gaps;
    uint32_t n_gaps, cap_gaps;
    hp_ver *vers;
    uint32_t n_vers, cap_vers;
    uint32_t *cand;      /* optional gaps worth selecting (nonempty window) */
    uint32_t n_cand;
    uint32_t *forced;    /* forced gaps */
    uint32_t n_forced;
} hp_model;

/* Build the model of a finished trace.  0, -ENOMEM, HO_E_BAD_TRACE. */
int hp_model_init(hp_model *m, const plan_trace *t);
void hp_model_done(hp_model *m);

static inline uint64_t hp_bytes(const hp_model *m, const hp_gap *g)
{
    return m->t->storages[g->storage].bytes;
}

static inline uint32_t hp_gap_fb(const hp_gap *g)
{
    return g->f == HP_START ? 0 : g->f + 1; /* its free's boundary */
}

/* First i in [from, n] with T[i] >= t (n if none). */
uint32_t hp_first_at_or_after(const double *T, uint32_t n, uint32_t from,
                              double t);

/* Boundary times of the `none` schedule (T: n_ops + 1 entries) and its
 * peak (ret_peak may be NULL). */
int hp_timeline_none(const plan_trace *t, double *T, uint64_t *ret_peak);

/* The window of a gap on timeline T if its transfers had the engines to
 * themselves: the store issued right after the write, the prefetch as
 * late as it can complete before the consumer (else right before it:
 * exposed, the consumer stalls stall_us). */
typedef struct hp_win {
    uint32_t a, z;
    bool exposed;
    double h2d_us, stall_us;
} hp_win;
void hp_gap_ideal(const hp_model *m, const double *T, const hp_gap *gp,
                  hp_win *w);

/* Result of placing a selection. */
typedef struct hp_place {
    plan_schedule *sched;   /* owned; NULL when placement failed */
    plan_metrics metrics;   /* simulated, without budget */
    bool valid;             /* valid under the model (budget aside) */
    bool fits;              /* valid and peak <= budget */
    int64_t *over;          /* n: simulated overshoot per boundary (>= 0) */
    uint32_t *wa, *wz;      /* n_gaps: placed windows [wa, wz) of the
                               gaps that were placed */
    double *vcomp;          /* n_vers: simulated completion of each store,
                               -1 for versions not stored */
    double *times;          /* n + 1: simulated boundary times */
    double *xfer;           /* simulated copies: (dir, start, end) triples,
                               dir 0 = H2D, 1 = D2H */
    size_t n_xfer;
    plan_violation violation;
} hp_place;

void hp_place_done(hp_place *p);

/* Place the gaps sel[g] != 0 plus the forced ones for `budget`: stores
 * earliest-deadline-first as soon as their data is written, prefetches as
 * late as the serialised engine allows and no earlier than memory allows,
 * up to HP_PLACE_ITERS times with corrections learned from plan_simulate.
 * A pure function of (model, sel, budget): the oracle relies on it.
 * Fills *p (which must be zeroed); 0 or -ENOMEM / HO_E_INTERNAL. */
int hp_place_loop(const hp_model *m, const uint8_t *sel, uint64_t budget,
                  const char *planner, hp_place *p);

/* ------------------------------------------------------------------ forward
 * The forward-simulation planner (hoplan_fs.c). */
typedef struct hp_fs_opts {
    bool jit;            /* evict after every use, no lookahead: the
                            constructive feasibility plan */
    bool lookahead;      /* prefetch due reads ahead of their op */
    bool eager_store;    /* store written data while the engine idles */
    bool eager_prefetch; /* prefetch early while memory is plentiful */
    uint64_t reserve;    /* eager_prefetch leaves this much free */
    bool clean_first;    /* evict clean data (no store needed) first */
    bool defer_busy;     /* no prefetch ahead while the engine is busy
                            through the op */
    bool edf;            /* lookahead counts the backlog: a miss is due
                            when the misses in deadline order, queued
                            on the FIFO engine from the next boundary,
                            would make one of them late */
    const uint32_t *store_hint; /* per access of t->acc, then per storage
                                   (may be NULL): nonzero where an earlier
                                   pass stored on eviction the data of
                                   that write (or, at n_acc + s, s's data
                                   at t = 0); it is stored right after the
                                   write (before op 0, in the order of
                                   the earlier evictions) */
    uint32_t *record_hint;      /* the same, recorded (may be NULL): the
                                   eviction's sequence number + 1 */
    double *ret_step_us;        /* (may be NULL) the planner's own step
                                   time for the plan: the judge's model */
} hp_fs_opts;

/* Plan `t` under the effective initials `init` (movable storages whose
 * init differs from the trace get a home entry) for `budget`.  0 and a
 * new schedule (bound, sorted, not yet judged), HO_E_INFEASIBLE with
 * *ret_fail_op (may be NULL) where memory could not be made, -ENOMEM. */
int hp_fs_plan(const plan_trace *t, const uint8_t *init, uint64_t budget,
               const hp_fs_opts *o, plan_schedule **ret_schedule,
               uint32_t *ret_fail_op);

/* A sound lower bound on the peak of any schedule of t: the largest of
 * the non-movable `initial: device` data at t = 0, the non-movable
 * retained data at step end, and per op its working set plus the pinned
 * data live across it.  *ret_op: the op (n_ops: step end, PLAN_NONE:
 * step start); *ret_p0 (may be NULL): the first of those (the data on
 * device at t = 0 whatever the schedule); *ret_maxws (may be NULL): the
 * largest op working set.  0 or -ENOMEM. */
int hp_device_floor(const plan_trace *t, uint64_t *ret_floor,
                    uint32_t *ret_op, uint64_t *ret_p0, uint64_t *ret_maxws);

/* ------------------------------------------------------------------ trees
 * hp_maxtree: range add, range max, "last index > threshold" search. */
typedef struct hp_maxtree {
    uint32_t n;
    int64_t *mx, *lz; /* 2n - 1 nodes, Euler-tour layout */
} hp_maxtree;

int hp_maxtree_init(hp_maxtree *tr, const int64_t *lv, uint32_t n);
void hp_maxtree_done(hp_maxtree *tr);
void hp_maxtree_add(hp_maxtree *tr, uint32_t l, uint32_t r, int64_t d);
int64_t hp_maxtree_max(hp_maxtree *tr, uint32_t l, uint32_t r);
/* Smallest i in [l, r] with level > thr, or PLAN_NONE. */
uint32_t hp_maxtree_first_gt(hp_maxtree *tr, uint32_t l, uint32_t r,
                             int64_t thr);
/* Largest i in [l, r] with level > thr, or PLAN_NONE. */
uint32_t hp_maxtree_last_gt(hp_maxtree *tr, uint32_t l, uint32_t r,
                            int64_t thr);

#endif
