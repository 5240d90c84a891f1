/*
 * daemon/staging.h - replays: StageRequest, the host copies of a plan,
 * the control region shared with the client, the eventfd, and staging
 * host copies between DDR and flash when they do not all fit in the DDR
 * the session may use (docs/runtime.md, proto/control.h).
 *
 * Stage-slot states (the region's ho_ctl_slot.state, HO_SLOT_*) as the
 * daemon drives them, with the function that performs each change (the
 * host copy's extent state follows, see sessions.h):
 *   (install) -> DDR or ABSENT   [publish_slots: as allocated]
 *   DDR       -> SPILLING [evict: compare-and-swap; a CLIENT slot waits]
 *   SPILLING  -> DDR      [evict: no flash room or no move after the
 *                          claim; slot_evicted: the move failed]
 *   SPILLING  -> FLASH    [slot_evicted: data on flash]
 *   SPILLING  -> ABSENT   [slot_evicted: data dropped]
 *   FLASH     -> FILLING  [bring_in: read]
 *   FILLING   -> FLASH    [bring_in: the move did not start;
 *                          slot_filled: the read failed]
 *   FILLING   -> DDR      [slot_filled]
 *   FLASH/ABSENT -> DDR   [bring_in: nothing to read]
 * and by the client, never by the daemon:
 *   DDR <-> CLIENT        [the client's copy in or out, by CAS]
 * A WRITE (reconcile) leaves the slot DDR: the copy stays usable while its
 * flash copy is written.  Every change a client may wait for bumps `seq`
 * and wakes its futex (wake).
 *
 * Two of its functions are hooks of lower modules, registered at startup
 * (daemon.c): srv_stage_remember_plan (planning's srv_plan_answered_fn)
 * and srv_stage_session_gone (d->on_session_drop).
 */
#ifndef HO_DAEMON_STAGING_H
#define HO_DAEMON_STAGING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

struct plan_trace;

/* Remember the plan just answered to session s, as its most recently
 * used (srv_plan_answered_fn): takes ownership of `trace` (finished, freed
 * on every path) and decodes the packed schedule (hyperoffload.Schedule).
 * A plan of the same trace, budget and planner is replaced; the least
 * recently used plans are dropped past [planning] retained_per_session
 * (this session's) and retained_total (everyone's), each drop counted; a
 * plan larger than either is not kept.  On failure (OOM, undecodable) it
 * is not kept. */
void srv_stage_remember_plan(srv_daemon *d, srv_session *s,
                             struct plan_trace *trace, const uint8_t *sched,
                             size_t sched_len, uint64_t hash,
                             uint64_t budget, const char *planner);
/* Apply lowered [planning] retained_* settings (after a reload). */
void srv_stage_trim_plans(srv_daemon *d);
/* StageRequest of a registered session (see docs/protocol.md): replies
 * StageReply with the control region memfd and the eventfd attached, or
 * an Error; a failed request leaves the installed replay as it was. */
void srv_handle_stage(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__StageRequest *req);
/* The session is being dropped (d->on_session_drop): stop its replay
 * (close the eventfd watch, leave its host copies in s->extents for the
 * caller to free) and free its plan memo.  No-op without either. */
void srv_stage_session_gone(srv_daemon *d, srv_session *s);
/* Fill *ret_info from the session's control region; false when the
 * session has no replay (*ret_info untouched). */
bool srv_stage_runtime_info(srv_session *s,
                            Hyperoffload__RuntimeInfo *ret_info);

/* Post `epoch` in the session's control region (header.plan_epoch) and
 * wake the replay: the node arbiter has a new plan for it
 * (daemon/arbitrate.h).  false when the session has no replay. */
bool srv_stage_post_plan_epoch(srv_session *s, uint64_t epoch);

/* DDR reservations (docs/runtime.md).  Re-split the host-copy limits of
 * every session that stages (s->ddr_need > 0) over the DDR quotas'
 * reservations and the unreserved pool, and apply them: lowered limits
 * first (those replays start evicting towards theirs), then raised ones.
 * Called when a session stages or leaves and after a DDR quota changes.
 * On failure (the members' minimums no longer fit: HO_E_TIER_FULL for
 * the unreserved pool, HO_E_QUOTA for a quota's reservation, with the
 * sentence) nothing changes. */
int srv_stage_rebalance(srv_daemon *d, char *err, size_t errlen);
/* Pin the session's host-copy DDR limit to `limit` bytes (0: back to the
 * fair share) and re-split: the arbiter's way to hand out DDR limits.  A
 * pin is kept within [its minimum, what its copies take].  Errors as
 * srv_stage_rebalance (the pin is dropped again then). */
int srv_stage_set_ddr_limit(srv_daemon *d, srv_session *s, uint64_t limit,
                            char *err, size_t errlen);
/* Flash bandwidth: the sessions that stage through flash (host copies
 * above their DDR limit) share it in proportion to weight x the bytes
 * above their limit (docs/runtime.md "Flash bandwidth").  The node
 * arbiter sets a session's weight (0 or out of (0, 1e6]: back to 1);
 * every installed replay whose share moved by more than
 * SRV_STAGE_SHARE_SLACK gets a new staging plan, as when the DDR limits
 * are re-split. */
void srv_stage_set_flash_weight(srv_daemon *d, srv_session *s,
                                double weight);
/* The session's share now (0: it stages nothing through flash). */
double srv_stage_flash_share(const srv_daemon *d, const srv_session *s);
/* Bytes of the pool reserved now: the DDR quotas' limits plus the limits
 * granted to sessions outside every DDR quota (<= [ddr] capacity unless
 * persisted quotas alone exceed it). */
uint64_t srv_stage_ddr_reserved(const srv_daemon *d);
/* A plain extent (AllocRequest) of `bytes` for session s takes DDR that
 * no reservation holds: 0, or HO_E_TIER_FULL with the figures when it
 * would eat into the DDR quotas' or the host copies' reservations.  A
 * session under a DDR quota draws on that quota's reservation (checked
 * by srv_quota_check) and always passes. */
int srv_stage_plain_room(srv_daemon *d, const srv_session *s, uint64_t bytes,
                         char *err, size_t errlen);

/* The shared regions of a session's replay (metrics). */
typedef struct srv_stage_sizes {
    uint64_t control_bytes;      /* the control region's size */
    uint32_t host_copies;        /* staged host copies (slots) */
    uint64_t host_copy_bytes;    /* their aligned sizes, summed */
} srv_stage_sizes;
/* Fill *ret_sizes; false when the session has no replay. */
bool srv_stage_regions(const srv_session *s, srv_stage_sizes *ret_sizes);

#endif
