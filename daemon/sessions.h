/*
 * daemon/sessions.h - sessions, their arenas and extents, quota checks,
 * and moves of extents between DDR and flash.
 *
 * Ownership: a session is owned by its connection (c->session) and listed
 * in d->sessions; it owns its extents (list + d->extents index) and holds
 * one reference on its arena.  A move in flight holds the extent and one
 * more arena reference (srv_extent_start_move); when the session is
 * dropped during the move the extent is orphaned (owner = NULL, out of
 * the index) and the move's completion frees it and its tier resources.
 *
 * Extent states (x->state) and the function that performs each change.
 * A client's extents (sessions.c):
 *   (new)     -> DDR        [srv_extent_alloc]
 *   DDR       -> SPILLING   [srv_extent_move: prepare_spill]
 *   SPILLING  -> FLASH      [spill_finished: written, pages uncharged]
 *   SPILLING  -> DDR        [spill_finished: write or uncharge failed;
 *                            unprepare: the move did not start]
 *   FLASH     -> FILLING    [srv_extent_move: prepare_fill]
 *   FILLING   -> DDR        [fill_finished: read]
 *   FILLING   -> FLASH      [fill_finished: read failed; unprepare]
 * A replay's host copies (staging.c, x->staged):
 *   (new)     -> DDR/ABSENT [srv_extent_alloc_staged (alloc_slots)]
 *   DDR       -> SPILLING   [evict: spill or drop; reconcile: write]
 *   SPILLING  -> FLASH      [slot_evicted: spilled, or dropped with a
 *                            current flash copy]
 *   SPILLING  -> ABSENT     [slot_evicted: dropped, data dead]
 *   SPILLING  -> DDR        [slot_evicted: failed; slot_written]
 *   FLASH     -> FILLING    [bring_in: read]
 *   FLASH/ABSENT -> DDR     [bring_in: nothing to read]
 *   FILLING   -> DDR        [slot_filled]
 *   FILLING   -> FLASH      [slot_filled: read failed]
 * Leaving:
 *   DDR/FLASH/ABSENT -> (freed)  [srv_extent_free_by_id, srv_extent_discard,
 *                                 srv_session_drop: dispose_extent]
 *   SPILLING/FILLING -> (orphan, owner NULL)  [srv_extent_discard,
 *                                 srv_session_drop]
 *   (orphan)  -> (freed)    [orphan_moved; staging's mv_finished:
 *                            srv_extent_free_orphan]
 * Usage: DDR is charged in DDR, SPILLING and FILLING (a move charges both
 * tiers while it runs), flash while flash_held.
 *
 * Every function below that can fail returns 0 or the negative code of
 * docs/protocol.md and, on failure, one sentence in err for the Error
 * reply; a failed call changes nothing.
 */
#ifndef HO_DAEMON_SESSIONS_H
#define HO_DAEMON_SESSIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/mover.h"
#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

typedef struct srv_extent srv_extent;
typedef struct srv_stage srv_stage;            /* staging.h */

typedef enum srv_ext_state {
    SRV_EXT_DDR,
    SRV_EXT_FLASH,
    SRV_EXT_SPILLING,
    SRV_EXT_FILLING,
    SRV_EXT_ABSENT,   /* staged host copy: offsets reserved, no pages
                         charged, no data (neither DDR nor flash usage) */
} srv_ext_state;

/* An arena and who uses it: one per session with an empty job, one per
 * (uid, job) otherwise.  refs = sessions using it + moves in flight. */
struct srv_arena_ref {
    tier_arena *arena;           /* owned */
    uint32_t uid;
    char job[SRV_JOB_MAX + 1];   /* "" for a session's own arena */
    uint32_t refs;
    srv_arena_ref *prev, *next;  /* d->arenas */
};

struct srv_extent {
    uint64_t id;
    srv_session *owner;          /* NULL once orphaned by a dropped session */
    srv_arena_ref *arena;
    uint64_t off, len;           /* arena offset, aligned length */
    srv_ext_state state;
    uint32_t flash_idx;          /* valid while on or moving to/from flash */
    uint64_t flash_off, flash_len;
    bool flash_held;             /* [flash_off, +flash_len) of flash_idx is
                                    allocated to this extent (counted in
                                    the owner's usage.flash) */
    bool staged;                 /* a replay's host copy (staging.c owns
                                    its moves; Free/Move requests refuse) */
    srv_extent *prev, *next;     /* owner's list */
};

typedef struct srv_usage {
    uint64_t ddr, flash, hbm, extents;
} srv_usage;

struct srv_session {
    uint64_t id;
    srv_conn *conn;
    char name[SRV_MAX_NAME + 1];
    char job[SRV_JOB_MAX + 1];
    uint32_t uid, gid, pid;
    int32_t device;              /* -1 none */
    uint64_t hbm_granted;
    srv_usage usage;             /* ddr/flash include moves in flight */
    uint64_t alloc_bytes;        /* AllocRequests granted, bytes (metrics) */
    uint64_t registered_ms;      /* uv_now() at register */
    srv_arena_ref *arena;
    srv_extent *extents;         /* list head */
    uint64_t plan_bytes;         /* of the plans kept for StageRequest
                                    (d->memos, staging.c) */
    srv_stage *stage;            /* installed replay, NULL when none; the
                                    session holds one reference
                                    (staging.c) */
    bool stage_pending;          /* a StageRequest is being planned */
    /* Its DDR reservation for host copies (staging.c's ledger): taken
     * from its quota's reservation or the unreserved pool, split fairly
     * among the sessions that stage (docs/runtime.md). */
    uint64_t ddr_need;           /* bytes of its host copies; 0: none */
    uint64_t ddr_min;            /* the least limit it can run with */
    uint64_t ddr_limit;          /* granted (reserved) now */
    uint64_t ddr_pin;            /* srv_stage_set_ddr_limit; 0: fair */
    uint64_t ddr_total;          /* bytes of the host copies its replay
                                    stages (asked or installed); 0: none */
    double flash_weight;         /* srv_stage_set_flash_weight (the node
                                    arbiter's weight); 0: 1 */
    srv_session *prev, *next;    /* d->sessions */
};

/* ------------------------------------------------------------ quotas */

/* Usage of a quota subject on a tier, summed over live sessions. */
uint64_t srv_subject_usage(srv_daemon *d, srv_subject_kind kind,
                           uint32_t uid, const char *job, srv_tier tier);
/* A quota that is set, and its subject's usage now. */
typedef struct srv_quota_use {
    srv_subject_kind kind;
    uint64_t limit, used;
} srv_quota_use;
/* The quotas set for uid and (when not empty) job on tier, uid first:
 * returns how many of ret_uses[0..2) were filled. */
int srv_quota_uses(srv_daemon *d, uint32_t uid, const char *job,
                   srv_tier tier, srv_quota_use ret_uses[2]);
/* Check the quotas of uid and job for `more` bytes on tier.  0 or
 * HO_E_QUOTA with the message in err. */
int srv_quota_check(srv_daemon *d, uint32_t uid, const char *job,
                    srv_tier tier, uint64_t more, char *err, size_t errlen);

/* ------------------------------------------------------------ sessions */

/* Turn connection c into a session: checks, in this order, that c has no
 * session (HO_E_ALREADY), the job name (-EINVAL), the client name
 * (-EINVAL), the device (HO_E_UNKNOWN_DEVICE for < -1 or >= count), a
 * budget without a device (HO_E_BUDGET), the HBM quotas of uid and job
 * (HO_E_QUOTA) and the device's free HBM (HO_E_BUDGET); then takes the
 * arena (shared per (uid, non-empty job), else new; -ENOMEM) and the
 * grant.  The session is owned by c (c->session) and listed in
 * d->sessions; *ret_s points to it. */
int srv_session_register(srv_daemon *d, srv_conn *c,
                         const Hyperoffload__RegisterRequest *req,
                         srv_session **ret_s, char *err, size_t errlen);
/* Drop a session at once (its connection is closing): d->on_session_drop
 * first (the replay lets go), then free its idle extents in DDR and
 * flash, orphan those with a move in flight (the move frees them when it
 * completes), release its HBM grant and its arena reference (the arena is
 * destroyed with the last one), unlink and free the session, clear
 * s->conn->session. */
void srv_session_drop(srv_daemon *d, srv_session *s);

/* ------------------------------------------------------------ arenas */

/* Drop one reference on an arena (session or move); the arena is
 * destroyed with the last one. */
void srv_arena_unref(srv_daemon *d, srv_arena_ref *r);

/* ------------------------------------------------------------ extents */

/* Allocate `bytes` (rounded up to the alignment) in the session's arena:
 * HO_E_INVALID_SIZE (0), HO_E_TOO_LARGE (> pool capacity), HO_E_QUOTA
 * (max_extents_per_session, or the DDR quota of uid/job), HO_E_TIER_FULL,
 * -ENOMEM.  The extent is owned by the session; *ret_x points to it. */
int srv_extent_alloc(srv_daemon *d, srv_session *s, uint64_t bytes,
                     srv_extent **ret_x, char *err, size_t errlen);
/* As srv_extent_alloc for a replay's host copy (x->staged set, so Free
 * and Move requests refuse it): resident=true charges DDR (quota and pool
 * as srv_extent_alloc); resident=false only reserves the arena offsets
 * (state SRV_EXT_ABSENT: no DDR/flash usage, no quota check; the extent
 * count limit still applies).  Owned by the session like any extent. */
int srv_extent_alloc_staged(srv_daemon *d, srv_session *s, uint64_t bytes,
                            bool resident, srv_extent **ret_x, char *err,
                            size_t errlen);
/* Free an extent whose owner is gone (owner NULL, out of every list),
 * once its move has completed: its flash range (if held) and its arena
 * range (charged or evicted). */
void srv_extent_free_orphan(srv_daemon *d, srv_extent *x);
/* Remove extent x from session s now (index, list, usage): an idle one is
 * freed with its DDR/flash resources; one with a move in flight is
 * orphaned (owner = NULL) and freed by the move when it completes. */
void srv_extent_discard(srv_daemon *d, srv_session *s, srv_extent *x);
/* Free extent `id` of the session wherever it lives.  HO_E_UNKNOWN_EXTENT
 * (not the session's), HO_E_BUSY (move in flight).  Returns 0 when done
 * (the caller answers), 1 when a large range's pages are released on a
 * worker first: the Ok reply to `request_id` is then sent when that is
 * done, so a client that got its reply sees the extent gone from every
 * figure. */
int srv_extent_free_by_id(srv_daemon *d, srv_session *s, uint64_t id,
                          uint64_t request_id, char *err, size_t errlen);
/* Start a move of extent `id` (dir: HYPEROFFLOAD__MOVE_DIRECTION_*).  On
 * 0 the I/O runs on a worker and the MoveReply or Error (request_id) is
 * sent to the session's connection when it completes.  Errors now:
 * -EINVAL (direction), HO_E_UNKNOWN_EXTENT, HO_E_BUSY, HO_E_STATE (spill
 * of a flash extent, fill of a DDR one), HO_E_UNSUPPORTED (no flash),
 * HO_E_QUOTA, HO_E_TIER_FULL, HO_E_TOO_LARGE. */
int srv_extent_move(srv_daemon *d, srv_session *s, uint64_t id, int dir,
                    uint64_t request_id, char *err, size_t errlen);
/* Start a mover job (kind) over extent x's arena range and, unless kind is
 * SRV_MOVE_DROP, its flash range.  On 0 one more reference on x->arena is
 * held for the move: cb must drop it (srv_arena_unref, with the arena
 * saved before x may be freed) once it no longer touches the range.  The
 * mover's codes on failure (nothing held then). */
int srv_extent_start_move(srv_daemon *d, srv_extent *x, srv_move_kind kind,
                          srv_move_cb *cb, void *ctx);
/* Allocate a flash range of x->len for extent x in the first flash file
 * with room (x->flash_idx/off/len, flash_held set; usage is the caller's).
 * HO_E_TIER_FULL (some file would fit it but none has room now),
 * HO_E_TOO_LARGE (larger than every file), other tier codes; the message
 * in err. */
int srv_flash_alloc(srv_daemon *d, srv_extent *x, char *err, size_t errlen);
/* Give x's flash range back when it holds one (flash_held cleared; usage
 * is the caller's). */
void srv_flash_release(srv_daemon *d, srv_extent *x);

#endif
