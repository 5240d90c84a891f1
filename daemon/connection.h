/*
 * daemon/connection.h - one client connection: its output queue, framing
 * of what it reads, descriptor passing, the send / reply / event helpers,
 * and closing.  What a payload means is the server's business
 * (srv_conn_hooks); this module only moves frames.
 *
 * Output ordering.  Every frame goes through the connection's pending
 * queue, in order.  A frame without a descriptor is handed to uv_write()
 * as soon as it reaches the head.  A frame that carries descriptors (one
 * SCM_RIGHTS message with all of them, in the caller's order) waits at
 * the head until libuv's write queue is empty (all earlier bytes are in
 * the kernel), then goes out with sendmsg(SCM_RIGHTS) directly on the
 * socket; a short write hands the remainder to uv_write().  When sendmsg
 * would block, a short timer retries.  So descriptors always arrive with
 * the first byte of their own frame and frames never interleave.
 *
 * Lifetime.  srv_conn_new allocates the connection; it is freed in the
 * close callback of its last handle, after srv_conn_close (or
 * srv_conn_abort before it was linked).  While linked it is in d->conns
 * and d->conn_ids.
 *
 * States (c->state):
 *   (new)     -> HANDSHAKE  [srv_conn_new]
 *   HANDSHAKE -> READY      [server: Welcome sent]
 *   HANDSHAKE, READY -> FLUSHING  [srv_conn_finish: end of stream, fatal
 *                                  error, drain end]
 *   any       -> CLOSING    [srv_conn_close: write/read error, flushed,
 *                            flush deadline, output cap; srv_conn_abort]
 */
#ifndef HO_DAEMON_CONNECTION_H
#define HO_DAEMON_CONNECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "daemon/state.h"
#include "proto/frame.h"

typedef enum srv_conn_state {
    SRV_CONN_HANDSHAKE,  /* waiting for Hello */
    SRV_CONN_READY,      /* requests are served */
    SRV_CONN_FLUSHING,   /* no more reads; closes when output is written */
    SRV_CONN_CLOSING,    /* uv_close called; freed in the close callback */
} srv_conn_state;

typedef struct srv_out_frame srv_out_frame;

/* What the module above does with a connection's input (server.c). */
typedef struct srv_conn_hooks {
    /* One complete frame's payload (len > 0, malloc'ed).  The hook may
     * close or finish c.  It returns SRV_PAYLOAD_DONE (the connection
     * frees the payload and reads on) or SRV_PAYLOAD_KEPT: the hook owns
     * the payload and c is paused -- no more of its input is read or
     * handled, the rest of the bytes already received is kept -- until
     * srv_conn_resume(c) (a big request handled off the loop, in order). */
    int (*payload)(srv_conn *c, uint8_t *payload, size_t len);
    /* c stops serving requests (srv_conn_finish or srv_conn_close): let
     * go of what hangs on it (its session).  May be called more than
     * once; the later calls find nothing to do. */
    void (*closing)(srv_conn *c);
} srv_conn_hooks;

struct srv_conn {
    uv_pipe_t pipe;              /* first: handle->data is the conn */
    uv_timer_t timer;            /* fd-send retry and flush deadline */
    srv_daemon *d;
    const srv_conn_hooks *hooks; /* static storage of the caller */
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
    uint64_t queued_bytes;       /* pending + handed to libuv, unwritten
                                    (counted in d->output_bytes too) */
    uint32_t partial_held;       /* reader.cap counted in d->partial_bytes */
    uint64_t accepted_ms;        /* uv_now at srv_conn_new */
    uint64_t frame_start_ms;     /* first byte of the frame being read, 0
                                    between frames */
    uint64_t last_request_ms;    /* last complete frame (accept before) */
    uint64_t flush_deadline;     /* uv_now() ms, SRV_CONN_FLUSHING */
    int handles_open;
    bool timer_armed;
    srv_session *session;        /* NULL until Register (sessions.c) */
    uint64_t requests;
    char name[SRV_MAX_NAME + 1]; /* Hello.client_name */
    bool paused;                 /* a payload hook kept its frame */
    uint8_t *backlog;            /* bytes received after that frame */
    size_t backlog_len;
    void *prepared;              /* the server's work on a kept frame,
                                    for the handler it dispatches to */
    srv_conn *prev, *next;       /* d->conns */
};

/* A new connection of d (state HANDSHAKE, next connection id, handshake
 * frame limit, max_frame from the config): its pipe and timer handles are
 * initialised on d's loop, nothing is accepted or linked yet.  NULL when
 * out of memory. */
srv_conn *srv_conn_new(srv_daemon *d, const srv_conn_hooks *hooks);
/* Close a connection that was never linked (accept failed): its handles
 * are closed and it is freed in their close callbacks. */
void srv_conn_abort(srv_conn *c);
/* List c in d->conns and d->conn_ids.  0 or -ENOMEM (not listed). */
int srv_conn_link(srv_conn *c);
/* Start reading: complete frames go to hooks->payload.  0 or a libuv
 * error (the caller closes). */
int srv_conn_start_reading(srv_conn *c);
/* The hook's values (srv_conn_hooks.payload). */
#define SRV_PAYLOAD_DONE 0
#define SRV_PAYLOAD_KEPT 1
/* End a pause (SRV_PAYLOAD_KEPT): the kept bytes are handled, then
 * reading goes on (unless the connection ended or paused again). */
void srv_conn_resume(srv_conn *c);

/* Close now: reclaim everything (hooks->closing first), discard unsent
 * output.  No-op when already closing. */
void srv_conn_close(srv_conn *c);
/* Stop reading, call hooks->closing, close once queued output is written
 * (bounded by SRV_FLUSH_TIMEOUT_MS).  No-op when flushing or closing. */
void srv_conn_finish(srv_conn *c);
/* Reply with a connection-fatal Error{code, message} (logged at info),
 * then srv_conn_finish. */
void srv_conn_fatal(srv_conn *c, uint64_t rid, int code, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));

/* As srv_conn_fatal with the sentence msg, not logged (the caller logs,
 * rate-limited). */
void srv_conn_refuse(srv_conn *c, int code, const char *msg);

/* Queue a frame to the peer; fd >= 0 is dup'ed and passed with
 * SCM_RIGHTS on the frame's first byte.  env->version is set to the
 * connection's version.  A frame above the peer's max_frame is replaced
 * by an Error (sent without descriptors).  Returns 0, or a negative code
 * when the connection is not writable (closing) or was dropped for
 * exceeding max_output, -errno when a descriptor cannot be dup'ed.
 * Frames leave in the order they were queued. */
int srv_conn_send(srv_conn *c, Hyperoffload__Envelope *env, int fd);
/* As srv_conn_send with n_fds (0..SRV_SEND_FDS_MAX) descriptors, all
 * dup'ed and passed in one SCM_RIGHTS message on the frame's first byte,
 * in the order of fds[] (the receiver gets them in that order).  -EINVAL
 * for a bad count, -EBADF for a negative descriptor. */
int srv_conn_send_fds(srv_conn *c, Hyperoffload__Envelope *env,
                      const int *fds, int n_fds);
/* Send `body`, a message of kind `kind` (HYPEROFFLOAD__ENVELOPE__BODY_*,
 * of the type that kind names), as the reply to request rid, with n_fds
 * descriptors as srv_conn_send_fds (fds may be NULL when n_fds is 0).
 * Returns what srv_conn_send_fds returns. */
int srv_conn_reply(srv_conn *c, uint64_t rid,
                   Hyperoffload__Envelope__BodyCase kind, void *body,
                   const int *fds, int n_fds);
/* Error{code, message} reply with request_id (logged at debug). */
void srv_reply_error(srv_conn *c, uint64_t request_id, int code,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void srv_reply_ok(srv_conn *c, uint64_t request_id);
/* Push Event{kind, message} (request_id 0) to a READY connection. */
void srv_conn_event(srv_conn *c, Hyperoffload__EventKind kind,
                    const char *message);
/* A peer accepted on fd but not served (no connection made for it: the
 * daemon is out of descriptors): one Error{code, msg} frame is sent
 * without blocking, best effort, and fd is closed. */
void srv_conn_refuse_raw(int fd, int code, const char *msg);
/* The linked connection with this id, or NULL (it closed). */
srv_conn *srv_conn_find(srv_daemon *d, uint64_t id);

#endif
