/*
 * daemon/daemon.h - the daemon's shared state and the interfaces between
 * its modules:
 *
 *   main.c      command line -> srv_daemon_new / srv_daemon_run
 *   daemon.c    startup, tiers, signals (drain, reload), teardown
 *   server.c    listening socket, connections, framing, output queues,
 *               fd passing, handshake
 *   handlers.c  session/extent/move/stats requests
 *   session.c   sessions, arenas, extents, move requests
 *   mover.c     DDR <-> flash moves of arena ranges on worker threads,
 *               page work included
 *   admin.c     status, clients, quota requests
 *   quota.c     quota store (no libuv)
 *   planning.c  plan requests, plan cache
 *   staging.c   StageRequest: host copies of a replay, control region,
 *               eventfd, staging to flash (docs/runtime.md)
 *   notify.c    sd_notify READY/STATUS/STOPPING/WATCHDOG
 *   config.c    settings; log.c the log
 *
 * Everything here runs on the loop thread except the bodies of worker
 * jobs (flash I/O, planning), which touch only what their job owns.
 */
#ifndef HO_DAEMON_DAEMON_H
#define HO_DAEMON_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <uv.h>

#include "daemon/config.h"
#include "proto/frame.h"
#include "daemon/idmap.h"
#include "daemon/quota.h"

#include "tiers/ddr.h"
#include "tiers/flash.h"
#include "tiers/hbm.h"

#define SRV_MAX_NAME 128           /* client_name bytes */
#define SRV_FLUSH_TIMEOUT_MS 5000  /* closing connection: drain replies */

typedef struct srv_daemon srv_daemon;

/* Throughput of one flash direction, measured over busy periods: from the
 * moment a first move starts while none is in flight to the moment the
 * last one finishes, bytes / wall time.  Concurrent moves are counted
 * once (per-move timings would under-count their aggregate), and a period
 * of at least SRV_METER_MIN_BYTES updates a moving average. */
typedef struct srv_flash_meter {
    uint32_t in_flight;
    uint64_t bytes;              /* moved in the current busy period */
    struct timespec since;       /* start of the current busy period */
} srv_flash_meter;
#define SRV_METER_MIN_BYTES (4ull << 20)
typedef struct srv_conn srv_conn;
typedef struct srv_session srv_session;
typedef struct srv_extent srv_extent;
typedef struct srv_arena_ref srv_arena_ref;
typedef struct srv_planning srv_planning;
typedef struct srv_plan_memo srv_plan_memo;
typedef struct srv_stage srv_stage;
struct plan_trace;

/* ------------------------------------------------------------ connections */

typedef enum srv_conn_state {
    SRV_CONN_HANDSHAKE,  /* waiting for Hello */
    SRV_CONN_READY,      /* requests are served */
    SRV_CONN_FLUSHING,   /* no more reads; closes when output is written */
    SRV_CONN_CLOSING,    /* uv_close called; freed in the close callback */
} srv_conn_state;

typedef struct srv_out_frame srv_out_frame;

struct srv_conn {
    uv_pipe_t pipe;              /* first: handle->data is the conn */
    uv_timer_t timer;            /* fd-send retry and flush deadline */
    srv_daemon *d;
    uint64_t id;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    bool admin;
    srv_conn_state state;
    uint32_t version;            /* negotiated, 0 before Welcome */
    uint32_t max_frame;          /* limit after the handshake */
    ho_frame_reader reader;
    srv_out_frame *pend_head;    /* frames not yet handed to libuv */
    srv_out_frame *pend_tail;
    uint64_t queued_bytes;       /* pending + handed to libuv, unwritten */
    uint64_t flush_deadline;     /* uv_now() ms, SRV_CONN_FLUSHING */
    int handles_open;
    bool timer_armed;
    srv_session *session;        /* NULL until Register */
    uint64_t requests;
    char name[SRV_MAX_NAME + 1]; /* Hello.client_name */
    srv_conn *prev, *next;       /* d->conns */
};

/* ------------------------------------------------------------ sessions */

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
    uint64_t registered_ms;      /* uv_now() at register */
    srv_arena_ref *arena;
    srv_extent *extents;         /* list head */
    srv_plan_memo *plan;         /* most recent successful PlanReply,
                                    owned (staging.c) */
    srv_stage *stage;            /* installed replay, NULL when none; the
                                    session holds one reference
                                    (staging.c) */
    bool stage_pending;          /* a StageRequest is being planned */
    srv_session *prev, *next;    /* d->sessions */
};

/* ------------------------------------------------------------ daemon */

struct srv_daemon {
    uv_loop_t loop;
    srv_config cfg;
    srv_cmdline cmdline;         /* kept for SIGHUP reloads */
    uint64_t start_ms;           /* uv_now at start */

    tier_ddr *ddr;
    uint32_t n_flash;
    tier_flash *flash[SRV_MAX_FLASH];
    tier_hbm *hbm;
    srv_quota *quota;
    srv_planning *planning;

    /* server */
    uv_pipe_t listener;
    bool listening;
    bool socket_created;         /* we bound it: remove it at exit */
    dev_t socket_dev;
    ino_t socket_ino;
    char socket_path[108];
    uint8_t read_buf[65536];     /* shared by all reads (loop thread) */

    srv_conn *conns;
    uint32_t n_conns;
    srv_idmap conn_ids;
    uint64_t next_conn_id;

    srv_session *sessions;
    uint32_t n_sessions;
    uint64_t next_session_id;
    srv_arena_ref *arenas;
    srv_idmap extents;           /* extent id -> srv_extent (owned ones) */
    uint64_t next_extent_id;

    bool admin_gid_valid;
    gid_t admin_gid;

    uint32_t works_in_flight;    /* moves + plans on worker threads */
    double flash_read_gbps;      /* observed flash bandwidth, used by
                                    staging plans (srv_flash_meter) */
    double flash_write_gbps;
    srv_flash_meter flash_meter[2]; /* [0] fills (read), [1] spills/writes */
    bool draining;
    bool finishing;
    int exit_code;

    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t drain_timer;
    uv_timer_t status_timer;
    uv_timer_t watchdog_timer;
    bool watchdog_running;
    char last_status[256];
};

/* daemon.c */
/* Build the daemon from a command line already turned into a config
 * (cfg is moved into the daemon).  On failure err says why and the daemon
 * is not created.  The daemon is owned by the caller: srv_daemon_free. */
int srv_daemon_new(srv_config *cfg, const srv_cmdline *cl, srv_daemon **ret,
                   char *err, size_t errlen);
/* Run until drained; returns the process exit code. */
int srv_daemon_run(srv_daemon *d);
srv_daemon *srv_daemon_free(srv_daemon *d);
/* Called when a worker job completes; finishes a drain when it was the
 * last one. */
void srv_daemon_work_done(srv_daemon *d);
/* Is (uid, gid) an admin peer (uid 0, or member of cfg.admin_group)? */
bool srv_daemon_is_admin(srv_daemon *d, uid_t uid, gid_t gid);
/* Re-resolve cfg.admin_group (startup and reload). */
void srv_daemon_resolve_admin_group(srv_daemon *d);

/* server.c */
/* Listen on the socket systemd passed (sd_listen_fds_with_names; the one
 * named "hyperoffloadd" or the first Unix stream socket), else on
 * cfg.socket: parent directories created, a stale socket (connect
 * refused) replaced, a live one (-EADDRINUSE) or a non-socket (-EEXIST)
 * refused, mode cfg.socket_mode.  0 or negative with err. */
int srv_server_listen(srv_daemon *d, char *err, size_t errlen);
/* Close the listener and remove the socket file if we created it and it
 * is still ours (same device and inode). */
void srv_server_stop_listening(srv_daemon *d);
/* Close the listener and every connection (drain end). */
void srv_server_close_all(srv_daemon *d);
/* Queue a frame to the peer; fd >= 0 is dup'ed and passed with
 * SCM_RIGHTS on the frame's first byte.  env->version is set to the
 * connection's version.  A frame above the peer's max_frame is replaced
 * by an Error (sent without descriptors).  Returns 0, or a negative code
 * when the connection is not writable (closing) or was dropped for
 * exceeding max_output, -errno when a descriptor cannot be dup'ed.
 * Frames leave in the order they were queued. */
int srv_conn_send(srv_conn *c, Hyperoffload__Envelope *env, int fd);
#define SRV_SEND_FDS_MAX 4
/* As srv_conn_send with n_fds (0..SRV_SEND_FDS_MAX) descriptors, all
 * dup'ed and passed in one SCM_RIGHTS message on the frame's first byte,
 * in the order of fds[] (the receiver gets them in that order).  -EINVAL
 * for a bad count, -EBADF for a negative descriptor. */
int srv_conn_send_fds(srv_conn *c, Hyperoffload__Envelope *env,
                      const int *fds, int n_fds);
/* Error{code, message} reply with request_id. */
void srv_reply_error(srv_conn *c, uint64_t request_id, int code,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void srv_reply_ok(srv_conn *c, uint64_t request_id);
/* Push Event{kind, message} (request_id 0). */
void srv_conn_event(srv_conn *c, Hyperoffload__EventKind kind,
                    const char *message);
srv_conn *srv_conn_find(srv_daemon *d, uint64_t id);

/* handlers.c: a request on a READY connection (version already checked). */
void srv_handle_request(srv_daemon *d, srv_conn *c,
                        const Hyperoffload__Envelope *env);
/* TierStats of every tier, for Stats and Status replies.  Allocates
 * *ret_tiers (array of pointers into one block): free with free(). */
int srv_tier_stats(srv_daemon *d, Hyperoffload__TierStats ***ret_tiers,
                   size_t *ret_n);

/* session.c.  Every function below returns 0 or the negative code of
 * docs/protocol.md and, on failure, one sentence in e->msg for the Error
 * reply; a failed call changes nothing. */
typedef struct srv_errbuf {
    char msg[512];
} srv_errbuf;
/* Write the sentence of a failure into e (session.c). */
void srv_errf(srv_errbuf *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A size for a message ("1.5 GiB"), in caller storage of 32 bytes. */
static inline const char *srv_sz(uint64_t v, char buf[32])
{
    return ho_size_format(v, buf, 32);
}

/* Turn connection c into a session: checks, in this order, that c has no
 * session (HO_E_ALREADY), the job name (-EINVAL), the client name
 * (-EINVAL), the device (HO_E_UNKNOWN_DEVICE for < -1 or >= count), a
 * budget without a device (HO_E_BUDGET), the HBM quotas of uid and job
 * (HO_E_QUOTA) and the device's free HBM (HO_E_BUDGET); then takes the
 * arena (shared per (uid, non-empty job), else new; -ENOMEM) and the
 * grant.  The session is owned by c (c->session) and listed in
 * d->sessions; *ret points to it. */
int srv_session_register(srv_daemon *d, srv_conn *c,
                         const Hyperoffload__RegisterRequest *req,
                         srv_session **ret, srv_errbuf *e);
/* Drop a session at once (its connection is closing): free its idle
 * extents in DDR and flash, orphan those with a move in flight (the move
 * frees them when it completes), release its HBM grant and its arena
 * reference (the arena is destroyed with the last one), unlink and free
 * the session, clear s->conn->session. */
void srv_session_drop(srv_daemon *d, srv_session *s);
/* Allocate `bytes` (rounded up to the alignment) in the session's arena:
 * HO_E_INVALID_SIZE (0), HO_E_TOO_LARGE (> pool capacity), HO_E_QUOTA
 * (max_extents_per_session, or the DDR quota of uid/job), HO_E_TIER_FULL,
 * -ENOMEM.  The extent is owned by the session; *ret points to it. */
int srv_extent_alloc(srv_daemon *d, srv_session *s, uint64_t bytes,
                     srv_extent **ret, srv_errbuf *e);
/* As srv_extent_alloc for a replay's host copy (x->staged set, so Free
 * and Move requests refuse it): resident=true charges DDR (quota and pool
 * as srv_extent_alloc); resident=false only reserves the arena offsets
 * (state SRV_EXT_ABSENT: no DDR/flash usage, no quota check; the extent
 * count limit still applies).  Owned by the session like any extent. */
int srv_extent_alloc_staged(srv_daemon *d, srv_session *s, uint64_t bytes,
                            bool resident, srv_extent **ret, srv_errbuf *e);
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
int srv_extent_free(srv_daemon *d, srv_session *s, uint64_t id,
                    uint64_t request_id, srv_errbuf *e);
/* Start a move of extent `id` (dir: HYPEROFFLOAD__MOVE_DIRECTION_*).  On
 * 0 the I/O runs on a worker and the MoveReply or Error (request_id) is
 * sent to the session's connection when it completes.  Errors now:
 * -EINVAL (direction), HO_E_UNKNOWN_EXTENT, HO_E_BUSY, HO_E_STATE (spill
 * of a flash extent, fill of a DDR one), HO_E_UNSUPPORTED (no flash),
 * HO_E_QUOTA, HO_E_TIER_FULL, HO_E_TOO_LARGE. */
int srv_extent_move(srv_daemon *d, srv_session *s, uint64_t id, int dir,
                    uint64_t request_id, srv_errbuf *e);
/* Allocate a flash range of x->len for extent x in the first flash file
 * with room (x->flash_idx/off/len, flash_held set; usage is the caller's).
 * HO_E_TIER_FULL (some file would fit it but none has room now),
 * HO_E_TOO_LARGE (larger than every file), other tier codes; the message
 * in e. */
int srv_flash_alloc(srv_daemon *d, srv_extent *x, srv_errbuf *e);
/* Usage of a quota subject on a tier, summed over live sessions. */
uint64_t srv_subject_usage(srv_daemon *d, srv_subject_kind kind,
                           uint32_t uid, const char *job, srv_tier tier);
/* Check the quotas of uid and job for `more` bytes on tier.  0 or
 * HO_E_QUOTA with the message in e. */
int srv_quota_check(srv_daemon *d, uint32_t uid, const char *job,
                    srv_tier tier, uint64_t more, srv_errbuf *e);

/* Drop one reference on an arena (session or move); the arena is
 * destroyed with the last one. */
void srv_arena_unref(srv_daemon *d, srv_arena_ref *r);

/* mover.c.  A move of the arena range [off, off+len) between DDR and the
 * flash range at flash_off, run on libuv worker threads in up to
 * SRV_MOVE_PARTS_MAX parts, system calls and page work included:
 *   SRV_MOVE_SPILL  write to flash, then drop the pages (munlock+punch)
 *                   -- only when every write succeeded;
 *   SRV_MOVE_WRITE  write to flash, the pages stay;
 *   SRV_MOVE_FILL   read from flash into the range (through the memfd,
 *                   which allocates the pages), then mlock it when the
 *                   pool locks (a refusal is recorded, not an error);
 *   SRV_MOVE_DROP   drop the pages only (flash unused, may be NULL).
 * The caller does the bookkeeping on the loop: charge before a fill
 * (tier_arena_restore_unlocked), tier_arena_mark_evicted after a spill or
 * drop, extent states.  The mover holds a reference on the arena and
 * counts in d->works_in_flight until done(d, ctx, rc, io_us) has run on
 * the loop: rc 0 or the first part's -errno (-EIO, -ENOSPC...), io_us the
 * span of the flash I/O phase.  The caller must keep the flash range
 * allocated until then.  Returns 0, -EINVAL, -ENOMEM, HO_E_INTERNAL; on
 * failure done is not called. */
#define SRV_MOVE_PARTS_MAX 4
/* Extents at least this large drop their pages on a worker when freed. */
#define SRV_ASYNC_RELEASE_MIN (1ull << 20)
typedef enum srv_move_kind {
    SRV_MOVE_SPILL,
    SRV_MOVE_WRITE,
    SRV_MOVE_FILL,
    SRV_MOVE_DROP,
} srv_move_kind;
typedef struct srv_move_args {
    srv_move_kind kind;
    srv_arena_ref *arena;
    uint64_t off, len;
    tier_flash *flash;
    uint64_t flash_off;
    uint32_t parts_max;          /* 0: SRV_MOVE_PARTS_MAX */
} srv_move_args;
typedef void (*srv_move_done_fn)(srv_daemon *d, void *ctx, int rc,
                                 double io_us);
#define SRV_FLASH_READ_GBPS 1.0   /* before any move was observed */
#define SRV_FLASH_WRITE_GBPS 1.5
int srv_move_start(srv_daemon *d, const srv_move_args *args,
                   srv_move_done_fn done, void *ctx);
/* Spill through the memfd with bounce buffers instead of O_DIRECT from the
 * mapping (set once at startup; HO_SPILL_VIA_FD=1, for measurements). */
extern bool srv_move_spill_via_fd;
/* Lower SRV_MOVE_PARTS_MAX (0: no override; HO_MOVE_PARTS=N at startup,
 * for measurements). */
extern uint32_t srv_move_parts_max;

/* admin.c: build and send the reply (or an Error) for an admin peer. */
void srv_handle_status(srv_daemon *d, srv_conn *c, uint64_t rid);
void srv_handle_clients(srv_daemon *d, srv_conn *c, uint64_t rid);
void srv_handle_quota(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__QuotaRequest *req);

/* planning.c.  The planning state (cache, queue) is owned by the daemon
 * (d->planning); new returns 0 or -ENOMEM, free accepts NULL. */
int srv_planning_new(srv_daemon *d, srv_planning **ret, char *err,
                     size_t errlen);
srv_planning *srv_planning_free(srv_planning *p);
/* Apply a new cache size (reload). */
void srv_planning_configure(srv_planning *p, uint32_t cache_entries);
/* Answer queued (not started) plans with HO_E_SHUTTING_DOWN. */
void srv_planning_drain(srv_planning *p);
/* PlanRequest of a registered session: validates planner, budget and
 * trace, answers from the cache or queues the plan; the PlanReply/Error is
 * sent when it is done (dropped if the session went away). */
void srv_handle_plan(srv_daemon *d, srv_conn *c, uint64_t rid,
                     const Hyperoffload__PlanRequest *req);

/* staging.c: replays (docs/runtime.md). */
/* Remember the plan just answered to session s as its most recent one:
 * takes ownership of `trace` (finished, freed on every path) and decodes
 * the packed schedule (hyperoffload.Schedule).  `budget` and `planner`
 * are the resolved ones (never 0 / "").  A previous memo is replaced.
 * On failure (OOM, undecodable) the session keeps no plan. */
void srv_stage_remember_plan(srv_daemon *d, srv_session *s,
                             struct plan_trace *trace, const uint8_t *sched,
                             size_t sched_len, uint64_t hash,
                             uint64_t budget, const char *planner);
/* StageRequest of a registered session (see docs/protocol.md): replies
 * StageReply with the control region memfd and the eventfd attached, or
 * an Error; a failed request leaves the installed replay as it was. */
void srv_handle_stage(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__StageRequest *req);
/* The session is being dropped: stop its replay (close the eventfd watch,
 * leave its host copies in s->extents for the caller to free) and free
 * its plan memo.  No-op without either. */
void srv_stage_session_gone(srv_daemon *d, srv_session *s);
/* Fill *ri from the session's control region; false when the session has
 * no replay (*ri untouched). */
bool srv_stage_runtime_info(srv_session *s, Hyperoffload__RuntimeInfo *ri);

/* notify.c: sd_notify messages (no-ops without NOTIFY_SOCKET). */
void srv_notify_ready(srv_daemon *d);
void srv_notify_stopping(void);
void srv_notify_reloading(bool start);
/* Start/stop the watchdog and status timers per cfg. */
void srv_notify_start(srv_daemon *d);
void srv_notify_apply(srv_daemon *d);
void srv_notify_update_status(srv_daemon *d);

#endif
