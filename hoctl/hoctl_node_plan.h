/*
 * hoctl/hoctl_node_plan.h - `hoctl node plan` (hoctl_node_plan.c): plan
 * every client of a workload with a strategy, judge the node, draw it.
 */
#ifndef HO_HOCTL_HOCTL_NODE_PLAN_H
#define HO_HOCTL_HOCTL_NODE_PLAN_H

#include "hoctl/hoctl.h"

/* argv after "node plan". */
int hoctl_cmd_node_plan(const hoctl_globals *g, int argc, char **argv);

#endif
