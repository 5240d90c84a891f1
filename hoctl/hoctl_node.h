/*
 * hoctl/hoctl_node.h - `hoctl node`: the node description and the node
 * judge, offline (hoctl_node.c).
 *
 *   hoctl node show --node N.json [--json]
 *   hoctl node check --node N.json --workload W.json [--steps K] [--json]
 *
 * The tree printer is separate so that the daemon-backed `node show`
 * (the node the daemon describes) can print the same tree.
 */
#ifndef HO_HOCTL_HOCTL_NODE_H
#define HO_HOCTL_HOCTL_NODE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "hoctl/hoctl.h"
#include "planner/node/node.h"
#include "proto/hyperoffload.pb-c.h"

int hoctl_cmd_node(const hoctl_globals *g, int argc, char **argv);

/* NodeRequest to the daemon (workload: with the last planned workload,
 * hoctl_node_workload.c): 0 and *ret_reply (ho_frame_envelope_free), or
 * the exit code with the reason printed. */
int hoctl_node_request(const hoctl_globals *g, bool workload,
                       Hyperoffload__Envelope **ret_reply);

/* Print node `n` (finished) as a tree on f: links from the root down,
 * each device under its parent link, then DDR and flash. */
void hoctl_node_print_tree(FILE *f, const plan_node *n);

/* A client's judged figures into JSON object x (node check, node plan):
 * compute_us, step_time_us, exposed_us, alloc_wait_us, slowdown,
 * h2d_bytes, d2h_bytes. */
void hoctl_node_fig_json(json_t *x, const plan_node_client_fig *f);

/* The node totals of `r` as a new JSON object (node check adds end_us,
 * node plan writes it as is): weighted_exposed_us, max_slowdown,
 * alloc_wait_us; NULL when out of memory. */
json_t *hoctl_node_totals_json(const plan_node_result *r);

#endif
