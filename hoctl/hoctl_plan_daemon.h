/*
 * hoctl/hoctl_plan_daemon.h - `hoctl plan --daemon` (hoctl_plan_daemon.c):
 * the same plan asked of hyperoffloadd (PlanRequest with the bound mode)
 * instead of planned in-process; the reply turned back into what the
 * local path produces, so that both print alike.
 */
#ifndef HO_HOCTL_HOCTL_PLAN_DAEMON_H
#define HO_HOCTL_HOCTL_PLAN_DAEMON_H

#include <stdbool.h>

#include "hoctl/hoctl.h"
#include "planner/bound/bound.h"
#include "planner/plan.h"

/* Register a session on g's socket (no HBM grant: the budget is given),
 * send PlanRequest{t, planner, budget, bound}, and fill *ret_s (the
 * daemon's schedule, bound to t; owned by the caller), *res (no-offload
 * peak, min_budget, device_floor, planning_ms) and *b (mode off when the
 * reply carries none), *ret_cached.  0, or the exit code with the
 * daemon's sentence printed (an infeasible budget is the daemon's
 * HO_E_INFEASIBLE error). */
int hoctl_plan_daemon(const hoctl_globals *g, const plan_trace *t,
                      uint64_t budget, const char *planner,
                      plan_bound_mode bound, plan_schedule **ret_s,
                      plan_result *res, plan_bound_result *b,
                      bool *ret_cached);

#endif
