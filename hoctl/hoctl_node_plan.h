/*
 * hoctl/hoctl_node_plan.h - `hoctl node plan` (hoctl_node_plan.c): plan
 * every client of a workload with a strategy, judge the node, draw it.
 */
#ifndef HO_HOCTL_HOCTL_NODE_PLAN_H
#define HO_HOCTL_HOCTL_NODE_PLAN_H

#include "hoctl/hoctl.h"
#include "planner/node/node.h"
#include "planner/plan.h"

/* argv after "node plan". */
int hoctl_cmd_node_plan(const hoctl_globals *g, int argc, char **argv);

/* Write DIR/name as JSON: the trace t, else the schedule s, else the
 * workload w (`node plan --out`, `node workload --out`).  0 or -errno. */
int hoctl_node_write_json(const char *dir, const char *name,
                          const plan_trace *t, const plan_schedule *s,
                          const plan_workload *w);

#endif
