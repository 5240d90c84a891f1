/*
 * client/client_internal.h - what the files of libhyperoffload share
 * (hidden symbols, not exported from libhyperoffload.so).  hoctl sees only
 * client/admin_call.h.
 *
 * Files:
 *   transport.c  socket path, connect, frame I/O, descriptor queue, request
 *                and reply matching across threads (hoc_call_fds), errors
 *   connect.c    handshake (ho_connect/ho_close), Welcome facts, register
 *                and the pool mapping, last error
 *   pool.c       DDR extents: alloc / free / spill / fill
 *   stats.c      tier statistics
 *   version.c    the library version
 *
 * Locking: `mu` protects the request list, the reader hand-off, `dead`,
 * `last_error` and the registration state; `wmu` serialises writes to the
 * socket so frames never interleave.  The reader state (rbuf, frame reader,
 * descriptor queue) belongs to whichever thread holds `reader_busy`.
 * Welcome facts are written once in ho_connect() before the client is
 * handed out; session facts are written once by ho_register() and
 * published through the atomic `session_id`.
 */
#ifndef HO_CLIENT_INTERNAL_H
#define HO_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/frame.h"
#include "hyperoffload/client.h"
#include "client/admin_call.h"
#include "client/client_limits.h" /* HOC_*: buffers, descriptors, capabilities */

/* One request waiting for its reply; lives on the caller's stack. */
typedef struct hoc_pending {
    uint64_t request_id;
    Hyperoffload__Envelope *reply;  /* owned by the waiter once done */
    int fds[HOC_MAX_FDS_PER_REPLY]; /* descriptors that came with it */
    unsigned nfds;
    int err;                        /* transport failure, 0 if none */
    bool done;
    struct hoc_pending *next;
} hoc_pending;

struct ho_client {
    /* node arbitration options for ho_register (ho_set_node_options) */
    double node_weight, node_max_slowdown;
    bool node_sync;
    uint8_t *node_admit_pb;      /* packed Trace for admission, owned */
    size_t node_admit_len;
    int fd;
    char socket_path[HO_SOCKET_PATH_MAX + 1];
    char client_name[HO_CLIENT_MAX_NAME + 1];

    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t wmu;
    bool reader_busy;
    int dead;                  /* 0, or the code every new call returns */
    uint64_t next_request_id;
    hoc_pending *pending;      /* requests in flight */
    char last_error[HOC_ERRLEN];

    /* reader state: owned by the thread holding reader_busy */
    ho_frame_reader reader;
    uint8_t *rbuf;             /* HOC_RBUF_SIZE bytes */
    size_t rbuf_off, rbuf_end;
    int fdq[HOC_MAX_FDS];      /* received descriptors, arrival order */
    unsigned fdq_len;

    char read_why[HOC_READ_WHY_LEN]; /* detail of a read failure (under mu) */
    /* The daemon's connection-level Error (request id 0) before it closes:
     * its code (0: none) and sentence, which the waiters get instead of
     * HO_E_DISCONNECTED (under mu). */
    int conn_err;
    char conn_err_msg[HOC_ERRLEN];
    /* A send found the peer gone: reads drain what it sent before, with a
     * bounded wait (set under mu before the reader looks). */
    bool send_broken;

    uint32_t send_limit;       /* largest frame payload we may send */
    atomic_int shutting_down;

    /* Welcome */
    uint64_t connection_id;
    uint32_t version;
    uint32_t max_frame;
    bool admin;
    uint32_t uid, gid, pid;
    char server_version[HOC_SERVER_VERSION_LEN];
    char *caps[HOC_MAX_CAPS];  /* owned */
    size_t ncaps;

    /* session */
    int register_state;        /* 0 none, 1 in progress, 2 done (under mu) */
    atomic_uint_fast64_t session_id;
    uint64_t arena_id;
    uint8_t *pool;             /* MAP_SHARED mapping, owned */
    uint64_t pool_size;
    uint64_t ddr_alignment;
    int device;
    uint64_t hbm_granted;
    /* link pacing of the host backend (backend_pace.c): the device whose
     * pacer this session attached, -1 none, and its token */
    int paced_device;
    const void *pace_token;

    /* reconnect (ho_set_reconnect, connect.c) */
    unsigned rc_attempts;      /* 0: off */
    unsigned rc_wait_ms;       /* longest wait between attempts */
    unsigned reconnects;       /* done so far */
    uint64_t epoch;            /* == reconnects: tags extent ids (pool.c) */
    bool reconnecting;         /* under mu; only rc_thread calls then */
    pthread_t rc_thread;
    bool reg_wanted;           /* ho_register succeeded once: every
                                  reconnect registers again */
    char reg_job[HO_CLIENT_MAX_NAME + 1]; /* what ho_register asked */
    int reg_device;
    uint64_t reg_budget;
    /* Earlier sessions' pool ranges (owned, under mu): intact while
     * `users` replays staged on them have not re-staged (the daemon that
     * died no longer touches them; their host copies are read there),
     * then replaced by anonymous memory and kept reserved so that a new
     * mapping never lands on a range a stale pointer still names. */
    struct hoc_old_pool {
        uint8_t *p;            /* NULL: entry unused */
        uint64_t size;
        uint64_t epoch;        /* the epoch that session had */
        unsigned users;        /* replays staged on it, 0: blanked */
    } old[HOC_OLD_POOLS];
    unsigned staged;           /* replays staged on the current pool */
};

/* transport.c ----------------------------------------------------------- */

/* Connect a SOCK_STREAM socket to `path` (close-on-exec).  Returns the
 * descriptor (>= 0) or -errno. */
int hoc_socket_connect(const char *path);

/* Prepare the transport parts of a zero-initialised client for `fd`
 * (mutexes, read buffer, frame reader limited to `recv_limit`).  Returns
 * 0 or -ENOMEM; on failure nothing is left to undo. */
int hoc_transport_init(ho_client *c, int fd, uint32_t recv_limit);
/* 1 when the daemon's end of the connection is gone (hang-up or error seen
 * by a zero-timeout poll; consumes nothing, safe from any thread), else 0.
 * For waits that do not involve the socket, e.g. on the control region. */
int hoc_peer_gone(ho_client *c);
/* Close the socket and every queued descriptor, free the read buffer,
 * destroy mutexes.  Safe on a client whose init succeeded. */
void hoc_transport_done(ho_client *c);

/* Send `req` (its version and request_id are overwritten) and wait for
 * the reply with the same request id.  On success returns 0, *ret_reply is
 * the decoded reply (owned by the caller, ho_frame_envelope_free()) and
 * ret_fds[0..*ret_nfds) (ret_nfds may be NULL) the descriptors that came
 * with it, in the order sent, owned by the caller; descriptors beyond
 * `max_fds` are closed.  ret_fds may be NULL when max_fds is 0.  An Error
 * reply is not a success: its message is stored as the last error, the
 * reply is freed and its negative code returned.  Transport failures:
 * HO_E_DISCONNECTED (peer closed, reset, or the client is already dead),
 * HO_E_FRAME_TOO_LARGE (request above the send limit: nothing sent, the
 * connection stays usable; or a reply above the receive limit: the
 * connection is closed), HO_E_PROTOCOL (undecodable reply, excess
 * descriptors: the connection is closed), -ENOMEM.  Outputs untouched on
 * failure.  hoc_call_expect (client/admin_call.h) and hoc_call_expect_fds
 * add the check of the reply's body. */
int hoc_call_fds(ho_client *c, Hyperoffload__Envelope *req,
                 Hyperoffload__Envelope **ret_reply, int *ret_fds,
                 unsigned max_fds, unsigned *ret_nfds);

/* Record a library sentence as the last error (printf-style) and return
 * `code`, for `return hoc_fail(c, code, "...", ...)`. */
int hoc_fail(ho_client *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Mark the connection dead (every later call gets HO_E_DISCONNECTED),
 * shut the socket down, and wake waiters with `err`. */
void hoc_kill(ho_client *c, int err);

/* Raise the receive limit after the handshake (reader must be idle). */
void hoc_transport_set_limits(ho_client *c, uint32_t recv_limit,
                              uint32_t send_limit);

/* hoc_call_fds() with the body check of hoc_call_expect(). */
int hoc_call_expect_fds(ho_client *c, Hyperoffload__Envelope *req,
                        Hyperoffload__Envelope__BodyCase want,
                        Hyperoffload__Envelope **ret_reply, int *ret_fds,
                        unsigned max_fds, unsigned *ret_nfds);

/* connect.c ------------------------------------------------------------- */

/* After a call failed with HO_E_DISCONNECTED on a client with reconnect
 * on (ho_set_reconnect): connect again (bounded attempts with backoff),
 * handshake, and re-register with the same job, device and budget when
 * the client was registered (a new, empty session; the old pool range is
 * replaced by anonymous memory).  0 when the client is connected again
 * (also when another thread did it), else HO_E_DISCONNECTED with the
 * sentence as the last error.  Refused while other requests are in
 * flight or a reconnect is under way. */
int hoc_reconnect(ho_client *c);

/* Reconnects so far (c->epoch, read under mu): a replay staged at
 * another value belongs to a session that is gone. */
uint64_t hoc_epoch(ho_client *c);
/* 1 when reconnect is on (ho_set_reconnect with attempts), else 0. */
int hoc_reconnect_on(ho_client *c);
/* A replay stages on the current session's pool: its base (NULL when not
 * registered) and the epoch in *ret_epoch, read together; the pool is kept
 * intact for it past a reconnect until hoc_pool_put(c, epoch). */
uint8_t *hoc_pool_hold(ho_client *c, uint64_t *ret_epoch);
/* The replay that held the pool of `epoch` lets go (freed, or re-staged
 * on a newer session): an earlier session's pool nobody holds any more is
 * replaced by anonymous memory. */
void hoc_pool_put(ho_client *c, uint64_t epoch);
/* The intact pool of an earlier session `epoch` that the caller holds
 * (hoc_pool_hold), and its size in *ret_size; NULL when it is gone (more
 * than HOC_OLD_POOLS reconnects since). */
const uint8_t *hoc_old_pool(ho_client *c, uint64_t epoch,
                            uint64_t *ret_size);

/* stats.c --------------------------------------------------------------- */

/* Copy a TierStats into the public struct (strings truncated). */
void hoc_tier_stats_copy(ho_tier_stats *dst,
                         const Hyperoffload__TierStats *src);

#endif
