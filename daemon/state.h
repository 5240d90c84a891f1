/*
 * daemon/state.h - the daemon's shared state (struct srv_daemon), and the
 * order of its modules.
 *
 * Module order.  Each module has one header and may call only the modules
 * before it; a lower module that must tell a higher one something takes a
 * callback (as libuv requests do) or a hook the higher one registers.
 * tests/daemon/test_layering.c checks that no .c file calls a function
 * declared in the header of a later module.
 *
 *   srv_limits.h    every fixed bound (no code)
 *   list.h          intrusive list macros (no functions)
 *   log.h           the log (stderr / journal)               } base: no
 *   idmap.h         id -> pointer map                        } libuv, no
 *   quota.h         quota store (persisted file)             } tiers; unit
 *   dirs.h          directories the daemon creates           } tests link
 *   config.h        settings: rows, file, flags              } them alone
 *   authz.h         who is admin (looked up per request)     }
 *   counters.h      event counters the metrics read          }
 *   topology.h      the node description (config, sysfs)     }
 *   state.h         this struct (no functions)
 *   connection.h    a connection: output queue, framing, fd passing,
 *                   send / reply / event helpers, closing
 *   mover.h         worker jobs: the in-flight count, DDR <-> flash moves
 *   links.h         the link region: host-backend copy pacing
 *   sessions.h      sessions, arenas, extents, quota checks, extent moves
 *   planning.h      PlanRequest, plan cache and queue
 *   staging.h       StageRequest, replays, control region, staging
 *   arbitrate.h     node workload, re-planning, what-if admission
 *   residency.h     RegionRegister / RegionsRequest (region headers)
 *   pstore.h        the shared prefix store (publish, map, TTL, LRU)
 *   handlers.h      register / alloc / free / move / stats requests
 *   admin.h         status / clients / quota requests
 *   metrics.h       MetricsRequest, Prometheus text, the textfile
 *   dispatch.h      the request table: body kind -> checks -> handler
 *   server.h        listener, accept, handshake, payload checks
 *   notify.h        sd_notify READY / STATUS / STOPPING / WATCHDOG
 *   daemon.h        startup, signals, drain, reload, teardown (main.c)
 *
 * Upward news travels by callbacks and hooks:
 *   connection -> server    srv_conn_hooks (payload, closing)
 *   mover -> daemon         d->on_works_drained (last worker job ended
 *                           while draining)
 *   sessions -> staging     d->on_session_drop (a session is going)
 *   planning -> staging     srv_plan_answered_fn (given to
 *                           srv_planning_new)
 *   mover -> its callers    srv_move_cb (a move completed)
 *
 * Errors.  Every daemon function that can fail returns 0 or a negative
 * code (-errno or HO_E_*, hyperoffload/errors.h) and, where a sentence
 * helps, writes it into a caller's buffer passed as (char *err, size_t
 * errlen), written with ho_errf (proto/errfmt.h): the style of every
 * layer below (tiers, planner, proto), so messages pass through without
 * copying between two kinds of buffer.  Callers size their buffers
 * SRV_ERR_MAX.  Only the loop-side callers log or reply; nothing below
 * them does.
 *
 * Threads.  Everything here runs on the loop thread except the bodies of
 * worker jobs (flash I/O, planning), which touch only what their job owns.
 */
#ifndef HO_DAEMON_STATE_H
#define HO_DAEMON_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <uv.h>

#include "daemon/authz.h"
#include "daemon/config.h"
#include "daemon/counters.h"
#include "daemon/idmap.h"
#include "daemon/srv_limits.h"
#include "daemon/quota.h"
#include "hyperoffload/paths.h"
#include "tiers/ddr.h"
#include "tiers/flash.h"
#include "tiers/hbm.h"

typedef struct srv_daemon srv_daemon;
typedef struct srv_conn srv_conn;              /* connection.h */
typedef struct srv_session srv_session;        /* sessions.h */
typedef struct srv_arena_ref srv_arena_ref;    /* sessions.h */
typedef struct srv_planning srv_planning;      /* planning.h */
typedef struct srv_plan_memo srv_plan_memo;    /* staging.c */
typedef struct srv_pentry srv_pentry;          /* pstore.c */
typedef struct srv_pmap srv_pmap;              /* pstore.c */
typedef struct srv_pgroup srv_pgroup;          /* pstore.c */
typedef struct srv_region srv_region;          /* residency.c */

/* The prefix store (pstore.c): entries, the sessions' map references and
 * the counters `hoctl store` shows. */
typedef struct srv_pstore_state {
    srv_pentry *entries;
    srv_pgroup *groups;    /* store memory per (uid, job) */
    srv_pmap *maps;
    uint32_t n_entries, n_maps;
    uint64_t bytes, published_bytes;
    uint64_t lookups, hits, evictions, expired;
    uv_timer_t ttl_timer;  /* fires at the next idle entry's expiry
                              (unref'd: never keeps the loop alive) */
} srv_pstore_state;
typedef struct srv_arbiter srv_arbiter;        /* arbitrate.h */
typedef struct srv_topology srv_topology;      /* topology.h */
typedef struct srv_links srv_links;            /* links.h */

/* Throughput of one flash direction, measured over busy periods: from the
 * moment a first move starts while none is in flight to the moment the
 * last one finishes, bytes / wall time.  Concurrent moves are counted
 * once (per-move timings would under-count their aggregate), and a period
 * of at least SRV_METER_MIN_BYTES updates a moving average (mover.c). */
typedef struct srv_flash_meter {
    uint32_t in_flight;
    uint64_t bytes;              /* moved in the current busy period */
    struct timespec since;       /* start of the current busy period */
    uint64_t total_bytes;        /* moved by every move that succeeded */
    double busy_s;               /* busy periods that ended, summed */
} srv_flash_meter;

struct srv_daemon {
    uv_loop_t loop;
    srv_config cfg;
    srv_cmdline cmdline;         /* kept for SIGHUP reloads */
    uint64_t start_ms;           /* uv_now at start */

    /* tiers and stores (daemon.c opens and closes them) */
    int state_lock_fd;           /* flock of <state_dir>/hyperoffloadd.lock,
                                    -1 before open_state */
    tier_ddr *ddr;
    uint32_t n_flash;
    uint32_t discard_next;   /* server.c: the file the sweep discards first */
    tier_flash *flash[SRV_MAX_FLASH];
    tier_hbm *hbm;
    srv_quota *quota;
    srv_planning *planning;
    srv_arbiter *arbiter;        /* node workload (arbitrate.c) */
    /* the node (topology.c: built at start from the settings; the node
     * of the arbiter) and the link region handed to sessions (links.c) */
    srv_topology *topology;
    srv_links *links;

    /* listener (server.c): accept4 on listen_fd when uv_poll says it is
     * readable, so that EMFILE/ENFILE are seen (libuv's own accept drops
     * them silently) */
    uv_poll_t listener;
    int listen_fd;               /* -1 when not listening */
    int spare_fd;                /* /dev/null, closed to accept-and-refuse
                                    a peer when out of descriptors; -1 */
    uv_timer_t accept_timer;     /* resumes accepting after a pause */
    bool listening;
    /* descriptors (daemon.c raises the limit, server.c rations it) */
    uint64_t fd_limit;           /* soft RLIMIT_NOFILE after raising it */
    uint64_t accept_fd_errors;   /* accept failed with EMFILE / ENFILE */
    uint64_t fd_refusals;        /* sessions refused for want of fds */
    bool fd_short;               /* refusing now (logged once per spell) */
    bool socket_created;         /* we bound it: remove it at exit */
    dev_t socket_dev;
    ino_t socket_ino;
    char socket_path[HO_SOCKET_PATH_MAX + 1];
    srv_authz authz; /* the admin group, resolved at start and reload */

    /* connections (connection.c) */
    uint8_t read_buf[SRV_READ_BUF]; /* shared by all reads (loop thread) */
    uint64_t output_bytes;       /* queued replies, all connections */
    uint64_t partial_bytes;      /* buffers of partly received frames */
    uint64_t buffered_peak;      /* highest output + partial bytes since
                                    the last malloc_trim (server.c; the
                                    sweep counts memo_bytes in too) */
    uint64_t slot_log_ms[SRV_REFUSE_N];   /* server.c: a slot refusal
                                             last logged, by reason */
    uint64_t slot_unlogged[SRV_REFUSE_N]; /* refused since, not logged */
    uv_timer_t sweep_timer;      /* server.c: timeouts, every second */
    srv_conn *conns;
    uint32_t n_conns;
    srv_idmap conn_ids;
    uint64_t next_conn_id;

    /* sessions (sessions.c) */
    srv_session *sessions;
    uint32_t n_sessions;
    uint64_t next_session_id;
    srv_arena_ref *arenas;
    srv_idmap extents;           /* extent id -> srv_extent (owned ones) */
    uint64_t next_extent_id;
    /* Hook: called by srv_session_drop before it frees the session's
     * extents, so that the modules above can let go of what they hang on
     * a session (staging: its replay and plan).  Set at startup. */
    void (*on_session_drop)(srv_daemon *d, srv_session *s);

    /* plans sessions keep for StageRequest (staging.c): one list, most
     * recently used first, bounded by [planning] retained_per_session and
     * retained_total */
    srv_plan_memo *memos, *memos_tail;
    uint64_t memo_bytes;
    uint32_t n_memos;
    /* DDR reservations (staging.c): the host-copy limits granted to
     * sessions outside every DDR quota (s->ddr_limit), summed; with the
     * DDR quotas' limits it never exceeds [ddr] capacity */
    uint64_t ddr_granted;

    /* residency (residency.c: registered regions; pstore.c: the store) */
    srv_region *regions;
    uint32_t n_regions;
    srv_pstore_state pstore;

    /* worker jobs (mover.c counts them) */
    uint32_t works_in_flight;    /* moves + plans on worker threads */
    /* Hook: called by srv_work_end when the last job ended while
     * draining.  Set at startup (daemon.c: finish the drain). */
    void (*on_works_drained)(srv_daemon *d);
    double flash_read_gbps;      /* observed flash bandwidth, used by
                                    staging plans (srv_flash_meter) */
    double flash_write_gbps;
    srv_flash_meter flash_meter[2]; /* [0] fills (read), [1] spills/writes */

    /* metrics (counters.h: bumped by every module; metrics.c reads them
     * and writes the textfile on metrics_timer) */
    srv_counters counters;
    uv_timer_t metrics_timer;
    bool metrics_writing;        /* a textfile write is on a worker */
    bool metrics_failing;        /* the last write failed (logged) */
    char *metrics_path;          /* the textfile being written (owned) */

    /* process (daemon.c, notify.c) */
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

#endif
