/*
 * hoctl/hoctl_node_workload.h - `hoctl node workload --out DIR [--json]`
 * (hoctl_node_workload.c): the workload the daemon's arbiter last
 * planned, with its node, traces and schedules, written for the node
 * judge.
 */
#ifndef HO_HOCTL_HOCTL_NODE_WORKLOAD_H
#define HO_HOCTL_HOCTL_NODE_WORKLOAD_H

#include "hoctl/hoctl.h"

/* argv after "node workload". */
int hoctl_cmd_node_workload(const hoctl_globals *g, int argc, char **argv);

#endif
