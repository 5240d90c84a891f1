/*
 * planner/node/node_arbiter.h - the node arbiter (NODE.md §4): one plan for
 * every client of a node.  Given the node and its clients (trace, device,
 * fixed budget or none, weight, sync group), it chooses each client's HBM
 * budget, the bandwidth it is planned for (its guaranteed share of every
 * capacity on its path), its DDR limit and its schedule, and judges the
 * whole workload with the node judge (plan_node_judge), whose figures are
 * the prediction.  Part of ho_plan_node; pure like the rest of planner/.
 *
 * Strategies (docs/node.md "The arbiter" has the rules in full):
 *   independent  every client planned alone with what it would see alone
 *                (its device's figures capped by every link above it):
 *                the daemon before arbitration (a baseline);
 *   equal-share  every shared capacity (a link, a device's engines)
 *                split equally among the clients that cross it (a
 *                baseline);
 *   arbiter      budgets by marginal benefit on each client's sampled
 *                exposure-against-budget curve, bandwidth by weighted
 *                max-min fair shares capped at each client's demand (the
 *                least bandwidth that hides what its full link hides),
 *                both repeated once at the bandwidth granted; the three
 *                candidates are judged and the best one is returned
 *                (lowest weighted exposure with no allocation wait; ties:
 *                fewer bytes moved), so the arbiter is never worse than
 *                either baseline as the node judge measures it.
 *
 * Ownership: plan_arb_result is a heap object released with
 * plan_arb_result_free (accepts NULL), owning its schedules (clients
 * planned at the same point share one) and judged
 * result.  The inputs are borrowed for the call only.
 */
#ifndef HO_PLANNER_NODE_NODE_ARBITER_H
#define HO_PLANNER_NODE_NODE_ARBITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner/node/node.h"
#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum plan_arb_strategy {
    PLAN_ARB_ARBITER = 0,
    PLAN_ARB_INDEPENDENT,
    PLAN_ARB_EQUAL_SHARE,
    PLAN_ARB__COUNT
} plan_arb_strategy;

/* "arbiter", "independent", "equal-share". */
const char *plan_arb_strategy_name(plan_arb_strategy s);
/* 0, or -EINVAL for an unknown name. */
int plan_arb_strategy_parse(const char *s, plan_arb_strategy *ret);

/* Budget curve samples per client and device (the grid is this many
 * quanta per unfixed client of the device, at most PLAN_ARB_MAX_QUANTA in
 * all): more is finer and slower. */
#define PLAN_ARB_DEFAULT_POINTS 8u
#define PLAN_ARB_MAX_POINTS 64u
#define PLAN_ARB_MAX_QUANTA 256u

typedef struct plan_arb_client {
    const char *name;          /* for messages; may be NULL */
    const plan_trace *trace;   /* finished */
    uint32_t device;           /* index into node->devices */
    bool has_budget;           /* a fixed budget: kept, or refused */
    uint64_t budget_bytes;
    double weight;             /* > 0 */
    uint32_t sync;             /* group number < n, PLAN_NONE: free */
} plan_arb_client;

/* Curve samples kept across calls (planner outcomes by trace hash, budget
 * and bandwidth): a caller that arbitrates the same clients again (a
 * re-plan, an admission query) pays only for what changed.  Owned by the
 * caller; not thread-safe; grows without bound only up to
 * PLAN_ARB_CACHE_MAX entries, then the oldest half is dropped. */
typedef struct plan_arb_cache plan_arb_cache;
#define PLAN_ARB_CACHE_MAX 65536u
plan_arb_cache *plan_arb_cache_new(void);
plan_arb_cache *plan_arb_cache_free(plan_arb_cache *c);
size_t plan_arb_cache_size(const plan_arb_cache *c);

typedef struct plan_arb_opts {
    const char *planner;       /* NULL: hoplan */
    plan_arb_cache *cache;     /* NULL: samples live for this call only */
    uint32_t steps;            /* node judge K; 0: PLAN_NODE_DEFAULT_STEPS */
    uint32_t points;           /* 0: PLAN_ARB_DEFAULT_POINTS */
} plan_arb_opts;

/* What the arbiter chose for one client (NODE.md §4's output fields). */
typedef struct plan_arb_choice {
    uint64_t budget_bytes;
    double h2d_gbps, d2h_gbps;  /* the bandwidth it was planned for (at
                                   most what it sees alone) */
    uint64_t ddr_limit_bytes;
    const plan_schedule *schedule; /* in the result's schedules: clients
                                   planned alike share one */
    plan_wl_predicted predicted; /* the node judge's figures */
} plan_arb_choice;

/* One candidate as the node judge measured it. */
typedef struct plan_arb_outcome {
    bool tried;                 /* computed in this call */
    bool valid;                 /* planned and judged valid */
    double weighted_exposed_us;
    double max_slowdown;
    double alloc_wait_us;
    uint64_t bytes_moved;       /* H2D + D2H per step, all clients */
    char why[512];              /* when not valid */
} plan_arb_outcome;

typedef struct plan_arb_result {
    plan_arb_strategy asked;    /* what the caller asked for */
    plan_arb_strategy chosen;   /* whose plan this is (asked, or for
                                   `arbiter` the best candidate) */
    uint32_t n;
    plan_arb_choice *clients;   /* n, in input order */
    plan_node_result *judged;   /* the chosen workload, judged; owned */
    plan_schedule **schedules;  /* the distinct schedules of clients[],
                                   owned */
    size_t n_schedules;
    plan_arb_outcome outcomes[PLAN_ARB__COUNT];
    uint32_t plans_made;        /* planner calls, curves included */
} plan_arb_result;

plan_arb_result *plan_arb_result_free(plan_arb_result *r);

/* Plan the n clients of `node` (finished) with strategy `s` (opts may be
 * NULL).  0 and *ret (a new result); HO_E_INFEASIBLE when fixed budgets
 * over-commit a device or a client cannot be planned at any budget the
 * device leaves it (the message names the device and the clients, with
 * their smallest budgets); HO_E_BAD_SCHEDULE when no candidate is judged
 * valid (the judge's reason); -EINVAL for bad input (unfinished node or
 * trace, device out of range, weight not positive), -ENOMEM.
 * Deterministic. */
int plan_node_arbitrate(const plan_node *node, const plan_arb_client *c,
                        uint32_t n, plan_arb_strategy s,
                        const plan_arb_opts *opts, plan_arb_result **ret,
                        char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
