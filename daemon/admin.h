/*
 * daemon/admin.h - admin requests: Status, Clients, Quota.  Each builds
 * and sends its reply (or an Error); the dispatcher (dispatch.c) has
 * checked that the peer is admin.
 */
#ifndef HO_DAEMON_ADMIN_H
#define HO_DAEMON_ADMIN_H

#include <stdint.h>

#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

void srv_handle_status(srv_daemon *d, srv_conn *c, uint64_t rid);
void srv_handle_clients(srv_daemon *d, srv_conn *c, uint64_t rid);
void srv_handle_quota(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__QuotaRequest *req);
/* NodeRequest (any peer): the node description (topology.h) as NODE.md
 * §1's JSON; with `workload` (admin peers only) also the workload the
 * arbiter last planned (srv_arb_workload). */
void srv_handle_node(srv_daemon *d, srv_conn *c, uint64_t rid,
                     const Hyperoffload__NodeRequest *req);

#endif
