/*
 * daemon/planning.h - PlanRequest: validate the trace, plan on a worker
 * thread (with the lower bound on exposed time of PlanRequest.bound,
 * planner/bound/bound.h, computed there too), cache results by (trace
 * hash, budget, planner, bound mode).
 *
 * The cache is an LRU list bounded by entries (config planning.
 * cache_entries) and by [planning] cache_bytes of packed schedules.  It
 * stores successes and HO_E_INFEASIBLE results (with their message and
 * min_budget), both deterministic for a given key.  Each session may have
 * SRV_PLAN_MAX_INFLIGHT plans queued or running; more are HO_E_BUSY.  At
 * most SRV_PLAN_RUNNING plans occupy libuv worker threads at once (the
 * others wait in a FIFO of at most SRV_PLAN_QUEUE), so that flash moves,
 * which share the thread pool, are never starved by long plans.
 *
 * The planning state (cache, queue) is owned by the daemon (d->planning).
 */
#ifndef HO_DAEMON_PLANNING_H
#define HO_DAEMON_PLANNING_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

struct plan_trace;

/* A successful plan was just answered to session s (from the cache or a
 * worker): the callee takes ownership of `trace` (finished; it frees it on
 * every path) and may keep a copy of the packed schedule (valid during the
 * call).  `budget` and `planner` are the resolved ones (never 0 / "").
 * Registered by the module above that remembers plans (staging.c). */
typedef void srv_plan_answered_fn(srv_daemon *d, srv_session *s,
                                  struct plan_trace *trace,
                                  const uint8_t *sched, size_t sched_len,
                                  uint64_t hash, uint64_t budget,
                                  const char *planner);

/* New planning state for d; `answered` is called for every successful
 * plan answered to a live session.  0 or -ENOMEM with err. */
int srv_planning_new(srv_daemon *d, srv_plan_answered_fn *answered,
                     srv_planning **ret_p, char *err, size_t errlen);
/* Free the cache and the queued plans.  Accepts NULL; returns NULL. */
srv_planning *srv_planning_free(srv_planning *p);
/* Apply a new cache size (reload). */
void srv_planning_configure(srv_planning *p, uint32_t cache_entries);
/* Bytes of packed schedules in the cache now (at most [planning]
 * cache_bytes); 0 for NULL. */
uint64_t srv_planning_cache_bytes(const srv_planning *p);
/* Answer queued (not started) plans with HO_E_SHUTTING_DOWN. */
void srv_planning_drain(srv_planning *p);
/* PlanRequest of a registered session: validates planner, budget and
 * trace, answers from the cache or queues the plan; the PlanReply/Error is
 * sent when it is done (dropped if the session went away). */
void srv_handle_plan(srv_daemon *d, srv_conn *c, uint64_t rid,
                     const Hyperoffload__PlanRequest *req);

/* A PlanRequest's trace read off the loop (server.c does it on a worker
 * for big frames, docs/protocol.md): the planner's trace and its hash, or
 * why it is invalid.  srv_handle_plan takes the trace when c->prepared
 * points at one, so the trace is read and hashed once, not on the loop. */
typedef struct srv_plan_prepared {
    struct plan_trace *trace; /* owned; NULL once srv_handle_plan took it */
    uint64_t hash;
    int rc;                   /* 0, or the reader's code (err says why) */
    char err[2 * SRV_ERR_MAX];
} srv_plan_prepared;
/* Thread-safe: touches nothing of the daemon. */
void srv_plan_prepare(const Hyperoffload__PlanRequest *req,
                      srv_plan_prepared *ret);
/* Free what it still owns (the trace); the struct is the caller's. */
void srv_plan_prepared_done(srv_plan_prepared *p);

#endif
