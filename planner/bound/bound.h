/*
 * planner/bound/bound.h - a lower bound on the exposed time of every valid
 * schedule of a trace (library ho_plan_bound, planner/bound/).
 *
 * plan_exposure_bound() returns a number B such that every schedule that
 * is valid under PLANNER.md §3 (with docs/execution-model.md) and whose
 * peak device bytes stay within `budget` has exposed_us >= B, on the given
 * link.  B is the larger of two sound bounds:
 *
 *  - a closed form, always computed, O((ops + accesses) * checkpoints):
 *    mandatory copies (initial: host data read, host-homed data written)
 *    against the compute around them, and at a few memory checkpoints the
 *    bytes that must be off the device, hence copied out before and back
 *    after, against the compute there;
 *  - an LP relaxation over op segments (GLPK's dual simplex), with copy
 *    engine time, memory at checkpoints, the windows in which each byte's
 *    store and prefetch can run, and stall variables.  The bound taken is
 *    a Lagrangian (dual) value computed from the solver's row duals over a
 *    box that contains every schedule's image, so it is sound whether the
 *    solver finished, stopped at its limit, or drifted numerically.
 *
 * docs/bound.md gives the relaxation and the proof.  Pure computation: no
 * threads, no logging, no global state of its own (GLPK's environment is
 * per thread).
 */
#ifndef HO_PLANNER_BOUND_BOUND_H
#define HO_PLANNER_BOUND_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum plan_bound_mode {
    PLAN_BOUND_OFF = 0, /* nothing computed (result says so) */
    PLAN_BOUND_FAST,    /* closed form + coarse LP, short limit (default) */
    PLAN_BOUND_FULL,    /* closed form + fine LP, long limit */
    PLAN_BOUND__COUNT
} plan_bound_mode;

const char *plan_bound_mode_name(plan_bound_mode m); /* "off", "fast", "full" */
int plan_bound_mode_parse(const char *s, plan_bound_mode *ret); /* -EINVAL */

typedef struct plan_bound_options {
    plan_bound_mode mode;
    /* 0: the mode's default.  Wall-clock limit of the LP solver (ms);
     * fast 300, full 20000. */
    uint32_t time_limit_ms;
    /* 0: none.  Simplex iteration limit (deterministic, unlike the time
     * limit: for tests and reproducible figures). */
    uint32_t iteration_limit;
    /* 0: the mode's default.  Most memory checkpoints (= LP segments);
     * fast 48, full 256.  Fewer are used when the LP would exceed
     * max_cells. */
    uint32_t max_checkpoints;
    /* 0: the mode's default.  Most (key, checkpoint) cells of the LP;
     * fast 8000, full 200000. */
    uint32_t max_cells;
    /* Above this many ops the LP is skipped (closed form only); 0: the
     * mode's default (fast 200000, full 4000000). */
    uint32_t lp_max_ops;
} plan_bound_options;

typedef enum plan_bound_lp_status {
    PLAN_BOUND_LP_NOT_RUN = 0, /* mode off, skipped for size, or nothing
                                  for it to bound (no memory pressure and
                                  no forced copies) */
    PLAN_BOUND_LP_OPTIMAL,     /* solved; lp_us is the LP optimum (up to
                                  rounding) */
    PLAN_BOUND_LP_LIMIT,       /* time or iteration limit: lp_us is the dual
                                  value reached, still a valid bound */
    PLAN_BOUND_LP_FAILED,      /* the solver gave up (numerics); lp_us is
                                  from its last duals, or 0 */
} plan_bound_lp_status;

const char *plan_bound_lp_status_name(plan_bound_lp_status s);

typedef struct plan_bound_result {
    plan_bound_mode mode;
    /* No valid schedule exists at this budget: the t = 0 total or the
     * bytes some op needs on the device exceed it (floor_bytes, at
     * floor_op; PLAN_NONE for step start).  bound_us is then INFINITY. */
    bool infeasible;
    uint64_t floor_bytes;      /* the largest hard memory floor found */
    uint32_t floor_op;
    double bound_us;           /* max(closed_form_us, lp_us); 0 for off */
    double closed_form_us;
    double lp_us;              /* 0 when not run */
    plan_bound_lp_status lp_status;
    const char *source;        /* "closed form", "lp", "lp (limit)",
                                  "none" (static string) */
    /* What the LP used. */
    uint32_t checkpoints;      /* memory checkpoints = segments - 1 */
    double ops_per_segment;    /* n_ops / (checkpoints + 1) */
    uint32_t time_limit_ms;
    uint32_t iteration_limit;
    uint32_t lp_rows, lp_cols;
    uint64_t lp_nonzeros;
    uint32_t lp_iterations;
    double lp_ms;              /* building and solving the LP */
    double total_ms;           /* the whole call */
    char note[160];            /* why the LP was skipped / limited */
} plan_bound_result;

/* The lower bound on exposed_us of every valid schedule of `t` (finished)
 * with peak <= budget, on `link` (NULL: t->link).  opt NULL: fast mode
 * with its defaults.  Returns 0 and fills *ret (also when infeasible:
 * ret->infeasible, bound INFINITY); -EINVAL for bad arguments (a link
 * that is not positive and finite), -ENOMEM, with a message in err.
 * Monotone: never larger for a larger budget or faster link when the LP
 * reaches its optimum (the closed form always is). */
int plan_exposure_bound(const plan_trace *t, uint64_t budget,
                        const plan_link *link, const plan_bound_options *opt,
                        plan_bound_result *ret, char *err, size_t errlen);

/* Release what the LP solver keeps for the calling thread (GLPK's
 * environment, created on a thread's first LP).  A thread that computed
 * bounds calls it before it ends, or the environment is lost with the
 * thread (the daemon's plan workers call it after each bound); harmless
 * when there is none.  The next bound on the thread creates it again. */
void plan_bound_thread_done(void);

#ifdef __cplusplus
}
#endif
#endif
