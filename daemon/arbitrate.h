/*
 * daemon/arbitrate.h - the node arbiter in the daemon (NODE.md §4-5,
 * docs/node.md "Re-planning and admission").
 *
 * The node workload is every session with a trace: the trace, budget and
 * planner of its latest answered PlanRequest, its device, job, weight and
 * max_slowdown (RegisterRequest).  A session entering the workload (its
 * first plan, or a plan of another trace or budget) or leaving it (its
 * connection closes) starts an arbitration (plan_node_arbitrate with the
 * node judge) on a worker thread, never on the loop; one runs at a time,
 * and a change during one starts another after it.
 *
 * Grants.  Each session has the grant it runs under (budget, planned
 * bandwidth, DDR limit, the prediction) and, after an arbitration, a
 * target.  Shrinks first: a session whose target lowers any part of its
 * grant is told at once (EVENT_PLAN_READY with the target, and
 * header.plan_epoch in its control region); a session whose target only
 * grows is told only once no shrinking session still waits to confirm
 * (PlanSwitched, sent by the library after it switched at a step
 * boundary, or the session leaving, or having no replay).  So the sum of
 * the grants on a device, a link or the DDR pool never exceeds what the
 * arbiter planned for one of the two workloads.
 *
 * What-if admission (AdmitRequest): the workload plus the newcomer,
 * arbitrated and judged without admitting it; the reply compares every
 * client's prediction with the current one.  RegisterRequest with
 * max_slowdown and admit_trace runs the same prediction first and refuses
 * with its reasons (HO_E_BUDGET) when a limit or a capacity breaks.
 *
 * The node is the daemon's (daemon/topology.h); a session's device is its
 * node device (srv_topology_device).
 */
#ifndef HO_DAEMON_ARBITRATE_H
#define HO_DAEMON_ARBITRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

struct plan_trace;
typedef struct srv_arbiter srv_arbiter;

/* New arbiter state for d.  0 or -ENOMEM with err. */
int srv_arb_new(srv_daemon *d, srv_arbiter **ret, char *err, size_t errlen);
/* Free it (no job may run: after the loop ended).  Accepts NULL. */
srv_arbiter *srv_arb_free(srv_arbiter *a);

/* planning's srv_plan_answered_fn (registered at startup): the session's
 * workload entry takes a copy of the trace when it changed, then the
 * plan goes to staging (srv_stage_remember_plan takes the trace). */
void srv_arb_plan_answered(srv_daemon *d, srv_session *s,
                           struct plan_trace *trace, const uint8_t *sched,
                           size_t sched_len, uint64_t hash, uint64_t budget,
                           const char *planner);
/* d->on_session_drop: staging lets go (srv_stage_session_gone), then the
 * session leaves the workload (a re-plan when it was in it). */
void srv_arb_session_gone(srv_daemon *d, srv_session *s);
/* The weight and max_slowdown of a registering session (handlers.c). */
void srv_arb_session_registered(srv_daemon *d, srv_session *s,
                                double weight, double max_slowdown,
                                bool sync);

/* ClientInfo.arb of session s: false when s is not in the workload. */
bool srv_arb_client_info(srv_daemon *d, srv_session *s,
                         Hyperoffload__ArbInfo *ret);

/* PlanFetchRequest / PlanSwitched of a registered session. */
void srv_handle_plan_fetch(srv_daemon *d, srv_conn *c, uint64_t rid,
                           const Hyperoffload__PlanFetchRequest *req);
void srv_handle_plan_switched(srv_daemon *d, srv_conn *c, uint64_t rid,
                              const Hyperoffload__PlanSwitched *req);

/* AdmitRequest (any peer): the AdmitReply is sent when the prediction is
 * done (on a worker). */
void srv_handle_admit(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__AdmitRequest *req);

/* Registration behind an admission check: predicts for `req`
 * (admit_trace, device, hbm_budget, job, weight, max_slowdown) and calls
 * `done` on the loop with 0 (admissible) or HO_E_BUDGET and the reasons,
 * or another code; the request is copied.  `done` is not called when the
 * connection went away meanwhile.  0, or a code now (nothing queued). */
typedef void srv_arb_admitted_fn(srv_daemon *d, srv_conn *c, uint64_t rid,
                                 const Hyperoffload__RegisterRequest *req,
                                 int rc, const char *why);
int srv_arb_admit_register(srv_daemon *d, srv_conn *c, uint64_t rid,
                           const Hyperoffload__RegisterRequest *req,
                           srv_arb_admitted_fn *done, char *err,
                           size_t errlen);

/* NodeRequest.workload: the workload the last applied re-plan arbitrated
 * (NODE.md §2 with §4's fields, the names of the sessions as the
 * arbiter's "name#session"), the node it was judged on, and the traces
 * and schedules it names as packed protobuf (hoctl writes them as JSON
 * beside the workload) into nr; the sessions may have left since.
 * Nothing set before the first re-plan.  The fields set borrow the
 * arbiter's buffers until the next loop turn: reply at once, then
 * srv_arb_workload_release(nr) (also after a failure).  0, -ENOMEM, or
 * HO_E_TOO_LARGE when the reply would be above max_frame. */
int srv_arb_workload(srv_daemon *d, Hyperoffload__NodeReply *nr, char *err,
                     size_t errlen);
void srv_arb_workload_release(Hyperoffload__NodeReply *nr);

#endif
