/*
 * daemon/connection.c - a connection's output queue, framing, descriptor
 * passing and closing (see connection.h).
 */
#include "daemon/connection.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/list.h"
#include "daemon/log.h"

struct srv_out_frame {
    uv_write_t req;
    srv_conn *c;
    uint8_t *buf;
    size_t len;
    size_t off;          /* bytes already sent by sendmsg */
    int n_fds;           /* descriptors to pass, 0 none */
    int fds[SRV_SEND_FDS_MAX]; /* owned (dup'ed) */
    bool waited;         /* logged that it waits for the write queue */
    srv_out_frame *next;
};

static void conn_flush(srv_conn *c);

/* Buffers grew: keep their peak for the sweep's malloc_trim (server.c). */
static void note_buffered(srv_daemon *d)
{
    uint64_t now = d->output_bytes + d->partial_bytes;
    if (now > d->buffered_peak)
        d->buffered_peak = now;
}

/* c's queued output shrank by n bytes (written, sent or discarded). */
static void queued_sub(srv_conn *c, uint64_t n)
{
    c->queued_bytes -= n;
    c->d->output_bytes -= n;
}

/* ------------------------------------------------------------ frames */

/* Free a frame, closing the descriptors it still owns.  Accepts NULL;
 * returns NULL. */
static srv_out_frame *frame_free(srv_out_frame *f)
{
    if (!f)
        return NULL;
    for (int i = 0; i < f->n_fds; i++)
        close(f->fds[i]);
    free(f->buf);
    free(f);
    return NULL;
}

static void on_close(uv_handle_t *h)
{
    srv_conn *c = h->data;
    if (--c->handles_open > 0)
        return;
    ho_frame_reader_done(&c->reader);
    free(c->backlog);
    free(c);
}

static void arm_timer(srv_conn *c, uint64_t ms);

static void on_timer(uv_timer_t *t)
{
    srv_conn *c = t->data;
    c->timer_armed = false;
    if (c->state == SRV_CONN_CLOSING)
        return;
    conn_flush(c);
    if (c->state == SRV_CONN_FLUSHING) {
        if (c->queued_bytes == 0 && !c->pend_head) {
            srv_conn_close(c);
            return;
        }
        if (uv_now(&c->d->loop) >= c->flush_deadline) {
            srv_debug("connection %llu: peer did not read its last replies "
                      "in time; closing", (unsigned long long)c->id);
            srv_conn_close(c);
            return;
        }
        arm_timer(c, SRV_FLUSH_POLL_MS);
    }
}

static void arm_timer(srv_conn *c, uint64_t ms)
{
    if (c->timer_armed || c->state == SRV_CONN_CLOSING)
        return;
    c->timer_armed = true;
    uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void on_write(uv_write_t *req, int status)
{
    srv_out_frame *f = req->data;
    srv_conn *c = f->c;
    queued_sub(c, f->len - f->off);
    frame_free(f);
    if (c->state == SRV_CONN_CLOSING)
        return;
    if (status < 0) {
        srv_debug("connection %llu: write failed: %s",
                  (unsigned long long)c->id, uv_strerror(status));
        srv_conn_close(c);
        return;
    }
    conn_flush(c);
    if (c->state == SRV_CONN_FLUSHING && c->queued_bytes == 0 &&
        !c->pend_head)
        srv_conn_close(c);
}

/* Send f (head of the queue, carrying a descriptor) with sendmsg.
 * Returns 1 when sent (completely or with the rest handed to libuv),
 * 0 when the socket would block, -1 when the connection was closed. */
static int send_with_fd(srv_conn *c, srv_out_frame *f)
{
    uv_os_fd_t sock;
    if (uv_fileno((uv_handle_t *)&c->pipe, &sock) < 0) {
        srv_conn_close(c);
        return -1;
    }
    struct iovec iov = {.iov_base = f->buf, .iov_len = f->len};
    union {
        char buf[CMSG_SPACE(sizeof(int) * SRV_SEND_FDS_MAX)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof(u));
    size_t fd_bytes = sizeof(int) * (size_t)f->n_fds;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = u.buf,
                         .msg_controllen = CMSG_SPACE(fd_bytes)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(fd_bytes);
    memcpy(CMSG_DATA(cm), f->fds, fd_bytes);
    ssize_t n;
    do
        n = sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            return 0;
        srv_debug("connection %llu: sendmsg: %s", (unsigned long long)c->id,
                  strerror(errno));
        srv_conn_close(c);
        return -1;
    }
    for (int i = 0; i < f->n_fds; i++)
        close(f->fds[i]);
    f->n_fds = 0;
    f->off = (size_t)n;
    queued_sub(c, (uint64_t)n);
    return 1;
}

static void conn_flush(srv_conn *c)
{
    while (c->pend_head && (c->state == SRV_CONN_READY ||
                            c->state == SRV_CONN_HANDSHAKE ||
                            c->state == SRV_CONN_FLUSHING)) {
        srv_out_frame *f = c->pend_head;
        if (f->n_fds > 0) {
            size_t queued =
                uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe);
            if (queued > 0) {
                if (!f->waited)
                    srv_debug("connection %llu: descriptor frame waits for "
                              "%zu queued bytes", (unsigned long long)c->id,
                              queued);
                f->waited = true;
                return; /* on_write calls us again */
            }
            int r = send_with_fd(c, f);
            if (r < 0)
                return;
            if (r == 0) {
                arm_timer(c, SRV_FD_RETRY_MS);
                return;
            }
        }
        c->pend_head = f->next;
        if (!c->pend_head)
            c->pend_tail = NULL;
        if (f->off == f->len) {
            frame_free(f);
            continue;
        }
        uv_buf_t b = uv_buf_init((char *)f->buf + f->off,
                                 (unsigned)(f->len - f->off));
        f->req.data = f;
        int rc = uv_write(&f->req, (uv_stream_t *)&c->pipe, &b, 1, on_write);
        if (rc < 0) {
            queued_sub(c, f->len - f->off);
            frame_free(f);
            srv_debug("connection %llu: write: %s", (unsigned long long)c->id,
                      uv_strerror(rc));
            srv_conn_close(c);
            return;
        }
    }
}

int srv_conn_send(srv_conn *c, Hyperoffload__Envelope *env, int fd)
{
    return srv_conn_send_fds(c, env, &fd, fd >= 0 ? 1 : 0);
}

/* Encode env for c (version set).  A frame above the peer's limit, or one
 * that does not encode, is replaced by an Error saying so; *ret_replaced
 * tells (the Error carries no descriptors).  0 or -ENOMEM. */
static int encode_for(srv_conn *c, Hyperoffload__Envelope *env,
                      uint8_t **ret_buf, size_t *ret_len, bool *ret_replaced)
{
    env->version = c->version ? c->version : HO_PROTO_VERSION;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = ho_frame_encode(env, &buf, &len);
    uint32_t limit = c->version ? c->max_frame : HO_FRAME_LIMIT_HANDSHAKE;
    if (rc == 0 && len - HO_FRAME_HEADER > limit) {
        free(buf);
        buf = NULL;
        rc = HO_E_FRAME_TOO_LARGE;
    }
    *ret_replaced = rc < 0;
    if (rc < 0) {
        /* The reply itself cannot go out: say so instead. */
        char msg[160];
        snprintf(msg, sizeof(msg), "the reply does not fit the frame limit "
                 "of %u bytes", limit);
        Hyperoffload__Envelope e;
        Hyperoffload__Error er;
        ho_frame_set_error(&e, &er, env->request_id, rc, msg);
        e.version = env->version;
        if (ho_frame_encode(&e, &buf, &len) < 0)
            return -ENOMEM;
    }
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

/* A frame owning buf, with dup's of fds[0..n_fds).  NULL with *ret_rc
 * (-ENOMEM, -errno of the dup) on failure; buf is freed then too. */
static srv_out_frame *frame_new(srv_conn *c, uint8_t *buf, size_t len,
                                const int *fds, int n_fds, int *ret_rc)
{
    srv_out_frame *f = calloc(1, sizeof(*f));
    if (!f) {
        free(buf);
        *ret_rc = -ENOMEM;
        return NULL;
    }
    f->c = c;
    f->buf = buf;
    f->len = len;
    for (int i = 0; i < n_fds; i++) {
        f->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        if (f->fds[i] < 0) {
            *ret_rc = -errno;
            /* closes the ones dup'ed so far, frees buf */
            return frame_free(f);
        }
        f->n_fds = i + 1;
    }
    return f;
}

/* Drop x for its queued output (it does not read): logged with the peer
 * and the cap it passed, counted. */
static void drop_for_output(srv_conn *x, srv_conn_drop why,
                            const char *what, uint64_t cap)
{
    char a[32], b[32];
    x->d->counters.conn_drops[why]++;
    srv_warn("connection %llu (pid %d, uid %u): dropped: %s of replies "
             "queued, above %s %s (the peer does not read)",
             (unsigned long long)x->id, (int)x->pid, (unsigned)x->uid,
             ho_size_format(x->queued_bytes, a, sizeof(a)), what,
             ho_size_format(cap, b, sizeof(b)));
    srv_conn_close(x);
}

/* The linked connection with the most queued output. */
static srv_conn *largest_queue(srv_daemon *d)
{
    srv_conn *big = NULL;
    for (srv_conn *x = d->conns; x; x = x->next)
        if (!big || x->queued_bytes > big->queued_bytes)
            big = x;
    return big;
}

/* Append f to c's pending queue; drop c when its output passes
 * max_output, and the connections with the most queued while all of them
 * together pass max_output_total.  0, or HO_E_DISCONNECTED when c was
 * dropped. */
static int enqueue(srv_conn *c, srv_out_frame *f)
{
    srv_daemon *d = c->d;
    c->queued_bytes += f->len;
    d->output_bytes += f->len;
    note_buffered(d);
    if (c->pend_tail)
        c->pend_tail->next = f;
    else
        c->pend_head = f;
    c->pend_tail = f;
    if (c->queued_bytes > d->cfg.max_output) {
        drop_for_output(c, SRV_DROP_OUTPUT, "max_output",
                        d->cfg.max_output);
        return HO_E_DISCONNECTED;
    }
    while (d->output_bytes > d->cfg.max_output_total) {
        srv_conn *big = largest_queue(d);
        if (!big || big->queued_bytes == 0)
            break; /* only closing connections' writes remain */
        drop_for_output(big, SRV_DROP_OUTPUT_TOTAL,
                        "max_output_total (all connections)",
                        d->cfg.max_output_total);
        if (big == c)
            return HO_E_DISCONNECTED;
    }
    return 0;
}

int srv_conn_send_fds(srv_conn *c, Hyperoffload__Envelope *env,
                      const int *fds, int n_fds)
{
    if (n_fds < 0 || n_fds > SRV_SEND_FDS_MAX)
        return -EINVAL;
    for (int i = 0; i < n_fds; i++)
        if (fds[i] < 0)
            return -EBADF;
    if (c->state == SRV_CONN_CLOSING)
        return HO_E_DISCONNECTED;
    uint8_t *buf = NULL;
    size_t len = 0;
    bool replaced = false;
    int rc = encode_for(c, env, &buf, &len, &replaced);
    if (rc < 0)
        return rc;
    srv_out_frame *f = frame_new(c, buf, len, fds, replaced ? 0 : n_fds, &rc);
    if (!f)
        return rc;
    rc = enqueue(c, f);
    if (rc < 0)
        return rc;
    conn_flush(c);
    return 0;
}

int srv_conn_reply(srv_conn *c, uint64_t rid,
                   Hyperoffload__Envelope__BodyCase kind, void *body,
                   const int *fds, int n_fds)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    env.request_id = rid;
    env.body_case = kind;
    /* The body is a oneof: every member shares this storage. */
    env.hello = body;
    return srv_conn_send_fds(c, &env, fds, n_fds);
}

void srv_reply_error(srv_conn *c, uint64_t request_id, int code,
                     const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    Hyperoffload__Envelope env;
    Hyperoffload__Error er;
    ho_frame_set_error(&env, &er, request_id, code, msg);
    srv_debug("connection %llu: request %llu: %s: %s",
              (unsigned long long)c->id, (unsigned long long)request_id,
              ho_err_name(code), msg);
    srv_count_error(&c->d->counters, code);
    srv_conn_send(c, &env, -1);
}

void srv_reply_ok(srv_conn *c, uint64_t request_id)
{
    Hyperoffload__Ok ok = HYPEROFFLOAD__OK__INIT;
    srv_conn_reply(c, request_id, HYPEROFFLOAD__ENVELOPE__BODY_OK, &ok, NULL,
                   0);
}

void srv_conn_event(srv_conn *c, Hyperoffload__EventKind kind,
                    const char *message)
{
    if (c->state != SRV_CONN_READY)
        return;
    Hyperoffload__Event ev = HYPEROFFLOAD__EVENT__INIT;
    ev.kind = kind;
    ev.message = (char *)message;
    srv_conn_reply(c, 0, HYPEROFFLOAD__ENVELOPE__BODY_EVENT, &ev, NULL, 0);
}

void srv_conn_refuse_raw(int fd, int code, const char *msg)
{
    Hyperoffload__Envelope env;
    Hyperoffload__Error er;
    ho_frame_set_error(&env, &er, 0, code, msg);
    env.version = HO_PROTO_VERSION;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (ho_frame_encode(&env, &buf, &len) == 0) {
        ssize_t n = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)n; /* best effort: the peer may be gone or not reading */
        free(buf);
    }
    close(fd);
}

srv_conn *srv_conn_find(srv_daemon *d, uint64_t id)
{
    return srv_idmap_get(&d->conn_ids, id);
}

/* ------------------------------------------------------------ closing */

static void unlink_conn(srv_conn *c)
{
    srv_daemon *d = c->d;
    if (srv_idmap_del(&d->conn_ids, c->id)) {
        SRV_LIST_UNLINK(d->conns, c);
        d->n_conns--;
    }
}

static void hook_closing(srv_conn *c)
{
    if (c->hooks && c->hooks->closing)
        c->hooks->closing(c);
}

static void close_handles(srv_conn *c)
{
    uv_close((uv_handle_t *)&c->timer, on_close);
    uv_close((uv_handle_t *)&c->pipe, on_close);
}

void srv_conn_close(srv_conn *c)
{
    if (c->state == SRV_CONN_CLOSING)
        return;
    srv_debug("connection %llu closed", (unsigned long long)c->id);
    c->state = SRV_CONN_CLOSING;
    hook_closing(c);
    unlink_conn(c);
    while (c->pend_head) {
        srv_out_frame *f = c->pend_head;
        c->pend_head = f->next;
        queued_sub(c, f->len - f->off);
        frame_free(f);
    }
    c->pend_tail = NULL;
    /* The partial frame goes now (not in the close callback), so that the
     * total is right at once. */
    c->d->partial_bytes -= c->partial_held;
    c->partial_held = 0;
    ho_frame_reader_done(&c->reader);
    close_handles(c);
}

void srv_conn_abort(srv_conn *c)
{
    c->state = SRV_CONN_CLOSING;
    close_handles(c);
}

void srv_conn_finish(srv_conn *c)
{
    if (c->state == SRV_CONN_CLOSING || c->state == SRV_CONN_FLUSHING)
        return;
    uv_read_stop((uv_stream_t *)&c->pipe);
    hook_closing(c);
    c->state = SRV_CONN_FLUSHING;
    if (c->queued_bytes == 0 && !c->pend_head) {
        srv_conn_close(c);
        return;
    }
    c->flush_deadline = uv_now(&c->d->loop) + SRV_FLUSH_TIMEOUT_MS;
    arm_timer(c, SRV_FLUSH_POLL_MS);
}

static void send_fatal(srv_conn *c, uint64_t rid, int code, const char *msg)
{
    Hyperoffload__Envelope env;
    Hyperoffload__Error er;
    ho_frame_set_error(&env, &er, rid, code, msg);
    srv_count_error(&c->d->counters, code);
    srv_conn_send(c, &env, -1);
    srv_conn_finish(c);
}

void srv_conn_fatal(srv_conn *c, uint64_t rid, int code, const char *fmt,
                    ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    srv_info("connection %llu (pid %d, uid %u): %s; closing",
             (unsigned long long)c->id, (int)c->pid, (unsigned)c->uid, msg);
    send_fatal(c, rid, code, msg);
}

void srv_conn_refuse(srv_conn *c, int code, const char *msg)
{
    srv_debug("connection %llu (pid %d, uid %u): %s; closing",
              (unsigned long long)c->id, (int)c->pid, (unsigned)c->uid, msg);
    send_fatal(c, 0, code, msg);
}

/* ------------------------------------------------------------ reading */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    srv_conn *c = h->data;
    (void)suggested;
    *buf = uv_buf_init((char *)c->d->read_buf, sizeof(c->d->read_buf));
}

/* End of stream: a frame cut short is a protocol error, else the
 * connection finishes. */
static void on_eof(srv_conn *c)
{
    const ho_frame_reader *r = &c->reader;
    if (!ho_frame_reader_partial(r)) {
        srv_debug("connection %llu: end of stream", (unsigned long long)c->id);
        srv_conn_finish(c);
    } else if (r->hdr_have < HO_FRAME_HEADER) {
        srv_conn_fatal(c, 0, HO_E_PROTOCOL,
                       "truncated frame: %u of %u header bytes", r->hdr_have,
                       HO_FRAME_HEADER);
    } else {
        srv_conn_fatal(c, 0, HO_E_PROTOCOL, "truncated frame: %u of %u bytes",
                       r->have, r->need);
    }
}

/* Count what the reader now holds for c in d->partial_bytes; false (and
 * the connection finished with the reason) when all peers together pass
 * max_partial_frames. */
static bool account_partial(srv_conn *c)
{
    srv_daemon *d = c->d;
    uint32_t held = c->reader.cap;
    d->partial_bytes += held;
    d->partial_bytes -= c->partial_held;
    c->partial_held = held;
    note_buffered(d);
    if (d->partial_bytes <= d->cfg.max_partial ||
        c->state == SRV_CONN_FLUSHING || c->state == SRV_CONN_CLOSING)
        return true;
    char a[32], b[32];
    d->counters.conn_drops[SRV_DROP_PARTIAL]++;
    srv_conn_fatal(c, 0, HO_E_FRAME_TOO_LARGE,
                   "the daemon holds %s of partly received frames from all "
                   "peers, above max_partial_frames %s; this frame (%u of "
                   "%u bytes received) is refused",
                   ho_size_format(d->partial_bytes, a, sizeof(a)),
                   ho_size_format(d->cfg.max_partial, b, sizeof(b)),
                   c->reader.have, c->reader.need);
    /* The connection reads no more: let go of its partial frame now. */
    d->partial_bytes -= c->partial_held;
    c->partial_held = 0;
    ho_frame_reader_done(&c->reader);
    return false;
}

/* The frame reader refused a frame (rc < 0): fatal. */
static void frame_refused(srv_conn *c, int rc)
{
    uint32_t announced = ho_frame_header_len(c->reader.hdr);
    if (rc == HO_E_FRAME_TOO_LARGE)
        srv_conn_fatal(c, 0, HO_E_FRAME_TOO_LARGE,
                       "frame of %u bytes is above the limit of %u bytes",
                       announced, c->reader.limit);
    else if (rc == HO_E_PROTOCOL)
        srv_conn_fatal(c, 0, HO_E_PROTOCOL, "zero-length frame");
    else
        srv_conn_fatal(c, 0, rc, "cannot receive a frame of %u bytes: %s",
                       announced, ho_strerror(rc));
}

static void feed(srv_conn *c, const uint8_t *p, size_t left);

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    srv_conn *c = s->data;
    if (nread == UV_EOF) {
        on_eof(c);
        return;
    }
    if (nread < 0) {
        srv_debug("connection %llu: read: %s", (unsigned long long)c->id,
                  uv_strerror((int)nread));
        srv_conn_close(c);
        return;
    }
    feed(c, (const uint8_t *)buf->base, (size_t)nread);
}

/* Feed bytes to the frame reader; each complete payload goes to the hook,
 * which may end the connection (the loop then stops) or keep the payload
 * (the connection pauses: the rest is copied into its backlog). */
static void feed(srv_conn *c, const uint8_t *p, size_t left)
{
    uint64_t now = uv_now(&c->d->loop);
    while (left > 0 && (c->state == SRV_CONN_HANDSHAKE ||
                        c->state == SRV_CONN_READY)) {
        size_t used = 0;
        uint8_t *payload = NULL;
        size_t plen = 0;
        if (!c->frame_start_ms)
            c->frame_start_ms = now;
        int rc = ho_frame_reader_feed(&c->reader, p, left, &used, &payload,
                                      &plen);
        p += used;
        left -= used;
        if (rc == 1)
            c->frame_start_ms = 0;
        if (!account_partial(c)) { /* refused: the connection finishes */
            free(payload);
            break;
        }
        if (rc == 0)
            break;
        if (rc < 0) {
            frame_refused(c, rc);
            break;
        }
        c->last_request_ms = now;
        if (c->hooks->payload(c, payload, plen) == SRV_PAYLOAD_KEPT) {
            uv_read_stop((uv_stream_t *)&c->pipe);
            c->paused = true;
            if (left > 0) {
                uint8_t *b = malloc(left);
                if (!b) {
                    srv_conn_fatal(c, 0, -ENOMEM, "out of memory");
                    return;
                }
                memcpy(b, p, left);
                c->backlog = b;
                c->backlog_len = left;
            }
            return;
        }
        free(payload);
    }
    if (!ho_frame_reader_partial(&c->reader))
        c->frame_start_ms = 0;
}

void srv_conn_resume(srv_conn *c)
{
    c->paused = false;
    uint8_t *b = c->backlog;
    size_t n = c->backlog_len;
    c->backlog = NULL;
    c->backlog_len = 0;
    if (b)
        feed(c, b, n);
    free(b);
    if (!c->paused && (c->state == SRV_CONN_HANDSHAKE ||
                       c->state == SRV_CONN_READY)) {
        int rc = srv_conn_start_reading(c);
        if (rc < 0) {
            srv_warn("connection %llu: read: %s", (unsigned long long)c->id,
                     uv_strerror(rc));
            srv_conn_close(c);
        }
    }
}

/* ------------------------------------------------------------ creating */

srv_conn *srv_conn_new(srv_daemon *d, const srv_conn_hooks *hooks)
{
    srv_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->d = d;
    c->hooks = hooks;
    c->state = SRV_CONN_HANDSHAKE;
    uv_pipe_init(&d->loop, &c->pipe, 0);
    c->pipe.data = c;
    c->handles_open = 1;
    uv_timer_init(&d->loop, &c->timer);
    c->timer.data = c;
    c->handles_open = 2;
    ho_frame_reader_init(&c->reader, HO_FRAME_LIMIT_HANDSHAKE);
    c->max_frame = (uint32_t)d->cfg.max_frame;
    c->id = ++d->next_conn_id;
    c->accepted_ms = c->last_request_ms = uv_now(&d->loop);
    return c;
}

int srv_conn_link(srv_conn *c)
{
    srv_daemon *d = c->d;
    if (srv_idmap_put(&d->conn_ids, c->id, c) < 0)
        return -ENOMEM;
    SRV_LIST_PUSH(d->conns, c);
    d->n_conns++;
    return 0;
}

int srv_conn_start_reading(srv_conn *c)
{
    return uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}
