/*
 * daemon/server.c - the listening socket and connections: framing, the
 * handshake, protocol errors, output queues and fd passing.
 *
 * Output ordering.  Every frame goes through the connection's pending
 * queue, in order.  A frame without a descriptor is handed to uv_write()
 * as soon as it reaches the head.  A frame that carries descriptors (one
 * SCM_RIGHTS message with all of them, in the caller's order) waits
 * at the head until libuv's write queue is empty (all earlier bytes are in
 * the kernel), then goes out with sendmsg(SCM_RIGHTS) directly on the
 * socket; a short write hands the remainder to uv_write().  When sendmsg
 * would block, a short timer retries.  So descriptors always arrive with
 * the first byte of their own frame and frames never interleave.
 */
#include "hyperoffload/version.h"
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

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

static void conn_close(srv_conn *c);
static void conn_finish(srv_conn *c);
static void conn_flush(srv_conn *c);

/* ------------------------------------------------------------ frames */

static void frame_free(srv_out_frame *f)
{
    for (int i = 0; i < f->n_fds; i++)
        close(f->fds[i]);
    free(f->buf);
    free(f);
}

static void on_close(uv_handle_t *h)
{
    srv_conn *c = h->data;
    if (--c->handles_open > 0)
        return;
    ho_frame_reader_done(&c->reader);
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
            conn_close(c);
            return;
        }
        if (uv_now(&c->d->loop) >= c->flush_deadline) {
            srv_debug("connection %llu: peer did not read its last replies "
                      "in time; closing", (unsigned long long)c->id);
            conn_close(c);
            return;
        }
        arm_timer(c, 50);
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
    c->queued_bytes -= f->len - f->off;
    frame_free(f);
    if (c->state == SRV_CONN_CLOSING)
        return;
    if (status < 0) {
        srv_debug("connection %llu: write failed: %s",
                  (unsigned long long)c->id, uv_strerror(status));
        conn_close(c);
        return;
    }
    conn_flush(c);
    if (c->state == SRV_CONN_FLUSHING && c->queued_bytes == 0 &&
        !c->pend_head)
        conn_close(c);
}

/* Send f (head of the queue, carrying a descriptor) with sendmsg.
 * Returns 1 when sent (completely or with the rest handed to libuv),
 * 0 when the socket would block, -1 when the connection was closed. */
static int send_with_fd(srv_conn *c, srv_out_frame *f)
{
    uv_os_fd_t sock;
    if (uv_fileno((uv_handle_t *)&c->pipe, &sock) < 0) {
        conn_close(c);
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
        conn_close(c);
        return -1;
    }
    for (int i = 0; i < f->n_fds; i++)
        close(f->fds[i]);
    f->n_fds = 0;
    f->off = (size_t)n;
    c->queued_bytes -= (uint64_t)n;
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
                arm_timer(c, 2);
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
            c->queued_bytes -= f->len - f->off;
            frame_free(f);
            srv_debug("connection %llu: write: %s", (unsigned long long)c->id,
                      uv_strerror(rc));
            conn_close(c);
            return;
        }
    }
}

int srv_conn_send(srv_conn *c, Hyperoffload__Envelope *env, int fd)
{
    return srv_conn_send_fds(c, env, &fd, fd >= 0 ? 1 : 0);
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
        n_fds = 0;
    }
    srv_out_frame *f = calloc(1, sizeof(*f));
    if (!f) {
        free(buf);
        return -ENOMEM;
    }
    f->c = c;
    f->buf = buf;
    f->len = len;
    for (int i = 0; i < n_fds; i++) {
        f->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        if (f->fds[i] < 0) {
            rc = -errno;
            frame_free(f);   /* closes the ones dup'ed so far, frees buf */
            return rc;
        }
        f->n_fds = i + 1;
    }
    c->queued_bytes += len;
    if (c->pend_tail)
        c->pend_tail->next = f;
    else
        c->pend_head = f;
    c->pend_tail = f;
    uint64_t cap = c->d->cfg.max_output;
    if (c->queued_bytes > cap) {
        char a[32], b[32];
        srv_warn("connection %llu (pid %d, uid %u): dropped: %s of replies "
                 "queued, above max_output %s (the peer does not read)",
                 (unsigned long long)c->id, (int)c->pid, (unsigned)c->uid,
                 ho_size_format(c->queued_bytes, a, sizeof(a)),
                 ho_size_format(cap, b, sizeof(b)));
        conn_close(c);
        return HO_E_DISCONNECTED;
    }
    conn_flush(c);
    return 0;
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
    srv_conn_send(c, &env, -1);
}

void srv_reply_ok(srv_conn *c, uint64_t request_id)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__Ok ok = HYPEROFFLOAD__OK__INIT;
    env.request_id = request_id;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_OK;
    env.ok = &ok;
    srv_conn_send(c, &env, -1);
}

void srv_conn_event(srv_conn *c, Hyperoffload__EventKind kind,
                    const char *message)
{
    if (c->state != SRV_CONN_READY)
        return;
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__Event ev = HYPEROFFLOAD__EVENT__INIT;
    ev.kind = kind;
    ev.message = (char *)message;
    env.request_id = 0;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_EVENT;
    env.event = &ev;
    srv_conn_send(c, &env, -1);
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
        if (c->prev)
            c->prev->next = c->next;
        else
            d->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
        c->prev = c->next = NULL;
        d->n_conns--;
    }
}

static void drop_session(srv_conn *c)
{
    if (c->session) {
        srv_session_drop(c->d, c->session);
        c->session = NULL;
    }
}

/* Close now: reclaim everything, discard unsent output. */
static void conn_close(srv_conn *c)
{
    if (c->state == SRV_CONN_CLOSING)
        return;
    srv_debug("connection %llu closed", (unsigned long long)c->id);
    c->state = SRV_CONN_CLOSING;
    drop_session(c);
    unlink_conn(c);
    while (c->pend_head) {
        srv_out_frame *f = c->pend_head;
        c->pend_head = f->next;
        c->queued_bytes -= f->len - f->off;
        frame_free(f);
    }
    c->pend_tail = NULL;
    uv_close((uv_handle_t *)&c->timer, on_close);
    uv_close((uv_handle_t *)&c->pipe, on_close);
}

/* Stop reading, drop the session, close once queued output is written
 * (bounded by SRV_FLUSH_TIMEOUT_MS). */
static void conn_finish(srv_conn *c)
{
    if (c->state == SRV_CONN_CLOSING || c->state == SRV_CONN_FLUSHING)
        return;
    uv_read_stop((uv_stream_t *)&c->pipe);
    drop_session(c);
    c->state = SRV_CONN_FLUSHING;
    if (c->queued_bytes == 0 && !c->pend_head) {
        conn_close(c);
        return;
    }
    c->flush_deadline = uv_now(&c->d->loop) + SRV_FLUSH_TIMEOUT_MS;
    arm_timer(c, 50);
}

/* Reply with a connection-fatal error, then close after it is written. */
static void conn_fatal(srv_conn *c, uint64_t rid, int code, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
static void conn_fatal(srv_conn *c, uint64_t rid, int code, const char *fmt,
                       ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    srv_info("connection %llu (pid %d, uid %u): %s; closing",
             (unsigned long long)c->id, (int)c->pid, (unsigned)c->uid, msg);
    Hyperoffload__Envelope env;
    Hyperoffload__Error er;
    ho_frame_set_error(&env, &er, rid, code, msg);
    srv_conn_send(c, &env, -1);
    conn_finish(c);
}

/* ------------------------------------------------------------ handshake */

static void handle_hello(srv_conn *c, const Hyperoffload__Envelope *env)
{
    srv_daemon *d = c->d;
    const Hyperoffload__Hello *h = env->hello;
    uint32_t lo = h->min_version, hi = h->max_version;
    if (lo > hi || hi < HO_PROTO_MIN_VERSION || lo > HO_PROTO_VERSION) {
        conn_fatal(c, env->request_id, HO_E_VERSION,
                   "client speaks %u..%u, daemon speaks %u..%u", lo, hi,
                   HO_PROTO_MIN_VERSION, HO_PROTO_VERSION);
        return;
    }
    c->version = hi < HO_PROTO_VERSION ? hi : HO_PROTO_VERSION;
    if (h->client_name) {
        snprintf(c->name, sizeof(c->name), "%s", h->client_name);
        for (char *p = c->name; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
    }
    char *caps[6];
    size_t n_caps = 0;
    caps[n_caps++] = "ddr";
    if (d->n_flash)
        caps[n_caps++] = "flash";
    if (tier_hbm_count(d->hbm))
        caps[n_caps++] = "hbm";
    caps[n_caps++] = "plan";
    if (c->admin)
        caps[n_caps++] = "admin";
    Hyperoffload__Envelope out = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__Welcome w = HYPEROFFLOAD__WELCOME__INIT;
    w.version = c->version;
    w.connection_id = c->id;
    w.server_version = HO_VERSION_STRING;
    w.n_capabilities = n_caps;
    w.capabilities = caps;
    w.max_frame = c->max_frame;
    w.admin = c->admin;
    w.uid = (uint32_t)c->uid;
    w.gid = (uint32_t)c->gid;
    w.pid = (uint32_t)c->pid;
    out.request_id = env->request_id;
    out.body_case = HYPEROFFLOAD__ENVELOPE__BODY_WELCOME;
    out.welcome = &w;
    c->state = SRV_CONN_READY;
    srv_debug("connection %llu: hello from '%s' (pid %d, uid %u), version %u",
              (unsigned long long)c->id, c->name, (int)c->pid,
              (unsigned)c->uid, c->version);
    srv_conn_send(c, &out, -1);
    ho_frame_reader_set_limit(&c->reader, c->max_frame);
}

static bool daemon_only(Hyperoffload__Envelope__BodyCase b)
{
    switch (b) {
    case HYPEROFFLOAD__ENVELOPE__BODY_WELCOME:
    case HYPEROFFLOAD__ENVELOPE__BODY_ERROR:
    case HYPEROFFLOAD__ENVELOPE__BODY_OK:
    case HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY:
    case HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REPLY:
    case HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REPLY:
    case HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY:
    case HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY:
    case HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REPLY:
    case HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY:
    case HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY:
    case HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY:
    case HYPEROFFLOAD__ENVELOPE__BODY_EVENT:
        return true;
    default:
        return false;
    }
}

/* One complete payload. */
static void handle_payload(srv_conn *c, const uint8_t *payload, size_t len)
{
    srv_daemon *d = c->d;
    Hyperoffload__Envelope *env =
        hyperoffload__envelope__unpack(NULL, len, payload);
    if (!env) {
        conn_fatal(c, 0, HO_E_PROTOCOL,
                   "a frame of %zu bytes does not decode as an Envelope", len);
        return;
    }
    uint64_t rid = env->request_id;
    if (c->state == SRV_CONN_HANDSHAKE) {
        if (env->body_case != HYPEROFFLOAD__ENVELOPE__BODY_HELLO)
            conn_fatal(c, rid, HO_E_PROTOCOL,
                       "expected Hello as the first message");
        else
            handle_hello(c, env);
        goto out;
    }
    c->requests++;
    if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY__NOT_SET) {
        if (env->base.n_unknown_fields > 0)
            srv_reply_error(c, rid, HO_E_UNSUPPORTED,
                            "the request body (field %u) is not supported by "
                            "this daemon (protocol %u)",
                            (unsigned)env->base.unknown_fields[0].tag,
                            c->version);
        else
            conn_fatal(c, rid, HO_E_PROTOCOL, "the envelope has no body");
        goto out;
    }
    if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY_HELLO) {
        conn_fatal(c, rid, HO_E_PROTOCOL, "Hello after the handshake");
        goto out;
    }
    if (daemon_only(env->body_case)) {
        conn_fatal(c, rid, HO_E_PROTOCOL,
                   "message type %d is sent by the daemon, not by clients",
                   (int)env->body_case);
        goto out;
    }
    if (env->version != c->version) {
        srv_reply_error(c, rid, HO_E_VERSION,
                        "the message is written in protocol version %u; this "
                        "connection negotiated version %u",
                        env->version, c->version);
        goto out;
    }
    if (d->draining) {
        srv_reply_error(c, rid, HO_E_SHUTTING_DOWN,
                        "the daemon is shutting down");
        goto out;
    }
    srv_handle_request(d, c, env);
out:
    hyperoffload__envelope__free_unpacked(env, NULL);
}

/* ------------------------------------------------------------ reading */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    srv_conn *c = h->data;
    *buf = uv_buf_init((char *)c->d->read_buf, sizeof(c->d->read_buf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    srv_conn *c = s->data;
    if (nread == UV_EOF) {
        if (ho_frame_reader_partial(&c->reader)) {
            const ho_frame_reader *r = &c->reader;
            if (r->hdr_have < HO_FRAME_HEADER)
                conn_fatal(c, 0, HO_E_PROTOCOL,
                           "truncated frame: %u of %u header bytes",
                           r->hdr_have, HO_FRAME_HEADER);
            else
                conn_fatal(c, 0, HO_E_PROTOCOL,
                           "truncated frame: %u of %u bytes", r->have,
                           r->need);
        } else {
            srv_debug("connection %llu: end of stream",
                      (unsigned long long)c->id);
            conn_finish(c);
        }
        return;
    }
    if (nread < 0) {
        srv_debug("connection %llu: read: %s", (unsigned long long)c->id,
                  uv_strerror((int)nread));
        conn_close(c);
        return;
    }
    const uint8_t *p = (const uint8_t *)buf->base;
    size_t left = (size_t)nread;
    while (left > 0 && (c->state == SRV_CONN_HANDSHAKE ||
                        c->state == SRV_CONN_READY)) {
        size_t used = 0;
        uint8_t *payload = NULL;
        size_t plen = 0;
        int rc = ho_frame_reader_feed(&c->reader, p, left, &used, &payload,
                                      &plen);
        p += used;
        left -= used;
        if (rc == 1) {
            handle_payload(c, payload, plen);
            free(payload);
            continue;
        }
        if (rc == 0)
            break;
        uint32_t announced = ho_frame_header_len(c->reader.hdr);
        if (rc == HO_E_FRAME_TOO_LARGE)
            conn_fatal(c, 0, HO_E_FRAME_TOO_LARGE,
                       "frame of %u bytes is above the limit of %u bytes",
                       announced, c->reader.limit);
        else if (rc == HO_E_PROTOCOL)
            conn_fatal(c, 0, HO_E_PROTOCOL, "zero-length frame");
        else
            conn_fatal(c, 0, rc, "cannot receive a frame of %u bytes: %s",
                       announced, ho_strerror(rc));
        break;
    }
}

/* ------------------------------------------------------------ accepting */

static void on_connection(uv_stream_t *server, int status)
{
    srv_daemon *d = server->data;
    if (status < 0) {
        srv_warn("accept: %s", uv_strerror(status));
        return;
    }
    srv_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        srv_err("accept: out of memory");
        return;
    }
    c->d = d;
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
    c->state = SRV_CONN_HANDSHAKE;

    int rc = uv_accept(server, (uv_stream_t *)&c->pipe);
    if (rc < 0) {
        srv_warn("accept: %s", uv_strerror(rc));
        c->state = SRV_CONN_CLOSING;
        uv_close((uv_handle_t *)&c->timer, on_close);
        uv_close((uv_handle_t *)&c->pipe, on_close);
        return;
    }
    uv_os_fd_t fd;
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
        srv_warn("accept: cannot read the peer's credentials: %s",
                 strerror(errno));
        c->state = SRV_CONN_CLOSING;
        uv_close((uv_handle_t *)&c->timer, on_close);
        uv_close((uv_handle_t *)&c->pipe, on_close);
        return;
    }
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->pid = cred.pid;
    c->admin = srv_daemon_is_admin(d, cred.uid, cred.gid);

    if (srv_idmap_put(&d->conn_ids, c->id, c) < 0) {
        srv_err("accept: out of memory");
        c->state = SRV_CONN_CLOSING;
        uv_close((uv_handle_t *)&c->timer, on_close);
        uv_close((uv_handle_t *)&c->pipe, on_close);
        return;
    }
    c->next = d->conns;
    if (d->conns)
        d->conns->prev = c;
    d->conns = c;
    d->n_conns++;
    srv_debug("connection %llu accepted (pid %d, uid %u, gid %u%s)",
              (unsigned long long)c->id, (int)c->pid, (unsigned)c->uid,
              (unsigned)c->gid, c->admin ? ", admin" : "");

    if (d->n_conns > d->cfg.max_connections) {
        conn_fatal(c, 0, -EAGAIN,
                   "the daemon serves its maximum of %u connections "
                   "(max_connections); try again later",
                   d->cfg.max_connections);
        return;
    }
    if (d->draining) {
        conn_fatal(c, 0, HO_E_SHUTTING_DOWN, "the daemon is shutting down");
        return;
    }
    rc = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
    if (rc < 0) {
        srv_warn("connection %llu: read: %s", (unsigned long long)c->id,
                 uv_strerror(rc));
        conn_close(c);
    }
}

/* ------------------------------------------------------------ listening */

static int make_parent_dir(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* Socket passed by systemd: the first Unix stream socket, preferring the
 * one named "hyperoffloadd" (FileDescriptorName=). */
static int systemd_socket(srv_daemon *d, int *ret_fd, char *err,
                          size_t errlen)
{
    char **names = NULL;
    int n = sd_listen_fds_with_names(1, &names);
    if (n <= 0) {
        free(names);
        return n < 0 ? n : 0;
    }
    int pick = -1;
    for (int i = 0; i < n; i++) {
        int fd = SD_LISTEN_FDS_START + i;
        if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
            continue;
        if (pick < 0 || (names && names[i] &&
                         strcmp(names[i], "hyperoffloadd") == 0))
            pick = fd;
    }
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    if (pick < 0) {
        snprintf(err, errlen, "systemd passed %d descriptor(s) but none is a "
                 "listening Unix stream socket", n);
        return HO_E_BAD_CONFIG;
    }
    /* Close the descriptors we do not use. */
    for (int i = 0; i < n; i++)
        if (SD_LISTEN_FDS_START + i != pick)
            close(SD_LISTEN_FDS_START + i);
    fcntl(pick, F_SETFD, FD_CLOEXEC);
    struct sockaddr_un sa;
    socklen_t sl = sizeof(sa);
    memset(&sa, 0, sizeof(sa));
    if (getsockname(pick, (struct sockaddr *)&sa, &sl) == 0 &&
        sa.sun_path[0])
        snprintf(d->socket_path, sizeof(d->socket_path), "%s", sa.sun_path);
    else
        snprintf(d->socket_path, sizeof(d->socket_path), "(systemd socket)");
    *ret_fd = pick;
    return 1;
}

static int bind_socket(srv_daemon *d, int *ret_fd, char *err, size_t errlen)
{
    const char *path = d->cfg.socket;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "socket path %s is too long", path);
        return HO_E_BAD_CONFIG;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int rc = make_parent_dir(path);
    if (rc < 0) {
        snprintf(err, errlen, "cannot create the directory of %s: %s", path,
                 strerror(-rc));
        return rc;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "%s exists and is not a socket; refusing to "
                     "replace it", path);
            return -EEXIST;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe < 0) {
            rc = -errno;
            snprintf(err, errlen, "socket: %s", strerror(errno));
            return rc;
        }
        int live = connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        int cerr = errno;
        close(probe);
        if (live) {
            snprintf(err, errlen, "another daemon is already listening on %s",
                     path);
            return -EADDRINUSE;
        }
        if (cerr != ECONNREFUSED && cerr != ENOENT) {
            snprintf(err, errlen, "cannot probe the existing socket %s: %s",
                     path, strerror(cerr));
            return -cerr;
        }
        srv_notice("replacing stale socket %s (nobody listens on it)", path);
        if (unlink(path) < 0 && errno != ENOENT) {
            rc = -errno;
            snprintf(err, errlen, "cannot remove stale socket %s: %s", path,
                     strerror(errno));
            return rc;
        }
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        rc = -errno;
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return rc;
    }
    /* Create the file with no access for others, then open it up to the
     * configured mode: never more open than asked, even briefly. */
    mode_t old = umask(0177);
    rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    int berr = errno;
    umask(old);
    if (rc < 0) {
        close(fd);
        snprintf(err, errlen, "cannot bind %s: %s", path, strerror(berr));
        return -berr;
    }
    if (chmod(path, d->cfg.socket_mode) < 0 || lstat(path, &st) < 0 ||
        listen(fd, SOMAXCONN) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot set up %s: %s", path, strerror(errno));
        close(fd);
        unlink(path);
        return rc;
    }
    d->socket_created = true;
    d->socket_dev = st.st_dev;
    d->socket_ino = st.st_ino;
    snprintf(d->socket_path, sizeof(d->socket_path), "%s", path);
    *ret_fd = fd;
    return 0;
}

int srv_server_listen(srv_daemon *d, char *err, size_t errlen)
{
    int fd = -1;
    int rc = systemd_socket(d, &fd, err, errlen);
    if (rc < 0)
        return rc;
    bool from_systemd = rc == 1;
    if (!from_systemd) {
        rc = bind_socket(d, &fd, err, errlen);
        if (rc < 0)
            return rc;
    }
    uv_pipe_init(&d->loop, &d->listener, 0);
    d->listener.data = d;
    rc = uv_pipe_open(&d->listener, fd);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&d->listener, SOMAXCONN, on_connection);
    if (rc < 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", d->socket_path,
                 uv_strerror(rc));
        uv_close((uv_handle_t *)&d->listener, NULL);
        if (d->socket_created)
            unlink(d->socket_path);
        d->socket_created = false;
        return HO_E_INTERNAL;
    }
    d->listening = true;
    srv_info("listening on %s%s", d->socket_path,
             from_systemd ? " (socket from systemd)" : "");
    return 0;
}

/* Remove the socket file if it is still the one we created. */
static void remove_socket(srv_daemon *d)
{
    if (!d->socket_created)
        return;
    struct stat st;
    if (lstat(d->socket_path, &st) == 0 && st.st_dev == d->socket_dev &&
        st.st_ino == d->socket_ino)
        unlink(d->socket_path);
    d->socket_created = false;
}

void srv_server_stop_listening(srv_daemon *d)
{
    if (!d->listening)
        return;
    d->listening = false;
    uv_close((uv_handle_t *)&d->listener, NULL);
    remove_socket(d);
}

void srv_server_close_all(srv_daemon *d)
{
    srv_server_stop_listening(d);
    srv_conn *c = d->conns;
    while (c) {
        srv_conn *next = c->next;
        conn_finish(c);
        c = next;
    }
}
