/*
 * client/transport.c - libhyperoffload's connection: socket path
 * resolution, connect, frame I/O with descriptor passing, and matching of
 * replies to requests across threads.
 *
 * Reading is done by whichever waiting thread finds nobody else reading
 * (leader/follower): it reads one frame at a time without holding `mu`,
 * then hands the reply to its waiter under `mu` and wakes everyone.  A
 * thread whose own reply arrived stops reading; another waiter takes over.
 */
#include "client/client_internal.h"
#include "proto/errfmt.h"

#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* ----------------------------------------------------------- socket path */

static int copy_path(const char *src, char *buf, size_t len)
{
    size_t n = strlen(src);
    if (n > HO_SOCKET_PATH_MAX || n >= len) {
        buf[0] = '\0';
        return -ENAMETOOLONG;
    }
    memcpy(buf, src, n + 1);
    return 0;
}

HO_EXPORT int ho_socket_path(const char *explicit_path, char *buf,
                             size_t len)
{
    if (!buf || len == 0)
        return -EINVAL;
    if (explicit_path && explicit_path[0])
        return copy_path(explicit_path, buf, len);
    const char *env = getenv(HO_SOCKET_ENV);
    if (env && env[0])
        return copy_path(env, buf, len);
    struct stat st;
    if (stat(HO_SOCKET_LOCAL, &st) == 0)
        return copy_path(HO_SOCKET_LOCAL, buf, len);
    return copy_path(HO_SOCKET_SYSTEM, buf, len);
}

int hoc_socket_connect(const char *path)
{
    struct sockaddr_un sa;
    size_t n = strlen(path);
    if (n == 0)
        return -EINVAL;
    if (n >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, n + 1);

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    for (;;) {
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
        if (errno == EINTR)
            continue;
        if (errno == EISCONN) /* a connect interrupted earlier completed */
            return fd;
        int err = -errno;
        close(fd);
        return err;
    }
}

/* ----------------------------------------------------------- errors */

static void vset_error(ho_client *c, const char *fmt, va_list ap)
{
    vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
}

int hoc_fail(ho_client *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&c->mu);
    vset_error(c, fmt, ap);
    pthread_mutex_unlock(&c->mu);
    va_end(ap);
    return code;
}

/* With mu held: make the connection unusable and complete every waiter
 * with `err`. */
static void kill_locked(ho_client *c, int err)
{
    if (!c->dead) {
        c->dead = HO_E_DISCONNECTED;
        shutdown(c->fd, SHUT_RDWR);
        if (err == HO_E_DISCONNECTED && c->conn_err < 0) {
            /* The daemon said why before it closed: that code and
             * sentence. */
            err = c->conn_err;
            snprintf(c->last_error, sizeof(c->last_error), "%s",
                     c->conn_err_msg);
        } else if (err == HO_E_DISCONNECTED)
            snprintf(c->last_error, sizeof(c->last_error),
                     "connection to the daemon at %s lost%s%s",
                     c->socket_path, c->read_why[0] ? "; " : "",
                     c->read_why);
        else
            snprintf(c->last_error, sizeof(c->last_error),
                     "connection to the daemon at %s closed: %s%s%s",
                     c->socket_path, ho_strerror(err),
                     c->read_why[0] ? ": " : "", c->read_why);
    }
    for (hoc_pending *p = c->pending; p; p = p->next) {
        if (!p->done) {
            p->err = err;
            p->done = true;
        }
    }
    pthread_cond_broadcast(&c->cv);
}

void hoc_kill(ho_client *c, int err)
{
    pthread_mutex_lock(&c->mu);
    kill_locked(c, err);
    pthread_mutex_unlock(&c->mu);
}

/* ----------------------------------------------------------- init / done */

int hoc_transport_init(ho_client *c, int fd, uint32_t recv_limit)
{
    c->rbuf = malloc(HOC_RBUF_SIZE);
    if (!c->rbuf)
        return -ENOMEM;
    if (pthread_mutex_init(&c->mu, NULL) != 0)
        goto fail_buf;
    if (pthread_mutex_init(&c->wmu, NULL) != 0)
        goto fail_mu;
    if (pthread_cond_init(&c->cv, NULL) != 0)
        goto fail_wmu;
    c->fd = fd;
    c->next_request_id = 0;
    c->send_limit = HO_FRAME_LIMIT_HANDSHAKE;
    ho_frame_reader_init(&c->reader, recv_limit);
    atomic_init(&c->shutting_down, 0);
    return 0;

fail_wmu:
    pthread_mutex_destroy(&c->wmu);
fail_mu:
    pthread_mutex_destroy(&c->mu);
fail_buf:
    free(c->rbuf);
    c->rbuf = NULL;
    return -ENOMEM;
}

void hoc_transport_done(ho_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    for (unsigned i = 0; i < c->fdq_len; i++)
        close(c->fdq[i]);
    c->fdq_len = 0;
    ho_frame_reader_done(&c->reader);
    free(c->rbuf);
    c->rbuf = NULL;
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->wmu);
    pthread_mutex_destroy(&c->mu);
}

void hoc_transport_set_limits(ho_client *c, uint32_t recv_limit,
                              uint32_t send_limit)
{
    pthread_mutex_lock(&c->mu);
    ho_frame_reader_set_limit(&c->reader, recv_limit);
    c->send_limit = send_limit;
    pthread_mutex_unlock(&c->mu);
}

/* ----------------------------------------------------------- I/O */

static int send_all(int fd, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
                return HO_E_DISCONNECTED;
            return -errno;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* After a failed send the peer has closed: what it sent before is still
 * readable, then EOF; a peer that closed only its reading side is given
 * this long before the connection counts as lost. */
#define HOC_DRAIN_MS 2000

/* Receive more bytes into rbuf (which must be empty) and queue any
 * descriptors that came with them.  Reader context.  Returns 0 or a
 * connection-fatal code. */
static int recv_more(ho_client *c, char *why, size_t whylen)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * HOC_MAX_FDS_PER_MSG)];
        struct cmsghdr align;
    } ctrl;
    struct iovec iov = {.iov_base = c->rbuf, .iov_len = HOC_RBUF_SIZE};
    struct msghdr msg;
    ssize_t n;

    if (c->send_broken) {
        struct pollfd pf = {.fd = c->fd, .events = POLLIN};
        int pr;
        while ((pr = poll(&pf, 1, HOC_DRAIN_MS)) < 0 && errno == EINTR)
            ;
        if (pr == 0)
            return HO_E_DISCONNECTED;
    }
    for (;;) {
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctrl.buf;
        msg.msg_controllen = sizeof(ctrl.buf);
        n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC);
        if (n >= 0 || errno != EINTR)
            break;
    }
    if (n < 0) {
        if (errno == ECONNRESET || errno == EPIPE || errno == ENOTCONN)
            return HO_E_DISCONNECTED;
        return -errno;
    }

    int rc = 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm;
         cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfd; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (c->fdq_len < HOC_MAX_FDS) {
                c->fdq[c->fdq_len++] = fd;
            } else {
                close(fd);
                rc = ho_errf(why, whylen, HO_E_PROTOCOL,
                             "more than %u descriptors pending", HOC_MAX_FDS);
            }
        }
    }
    if (msg.msg_flags & MSG_CTRUNC)
        rc = ho_errf(why, whylen, HO_E_PROTOCOL, "ancillary data truncated");
    if (rc < 0)
        return rc;
    if (n == 0)
        return HO_E_DISCONNECTED;
    c->rbuf_off = 0;
    c->rbuf_end = (size_t)n;
    return 0;
}

/* How many descriptors does this reply announce?  A RegisterReply carries
 * the arena memfd when arena.fd_attached; a StageReply with a control
 * region carries its memfd and an eventfd; a MapPrefixReply with
 * fd_attached the prefix store's read-only descriptor. */
static unsigned wanted_fds(const Hyperoffload__Envelope *env)
{
    if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY &&
        env->register_reply && env->register_reply->arena) {
        /* the arena's, then the link region's (proto/links.h) */
        const Hyperoffload__RegisterReply *r = env->register_reply;
        if (!r->arena->fd_attached)
            return 0;
        return r->links && r->links->fd_attached ? 2 : 1;
    }
    if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY &&
        env->stage_reply && env->stage_reply->control_size > 0)
        return 2;
    /* the prefix store's memory, read-only */
    if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY_MAP_PREFIX_REPLY &&
        env->map_prefix_reply && env->map_prefix_reply->fd_attached)
        return 1;
    return 0;
}

static void close_fds(const int *fds, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Decode a complete payload (freed here) and take the descriptors it
 * announces off the queue into ret_fds.  Reader context.  0, or
 * HO_E_PROTOCOL with the reason in why (undecodable, or descriptors that
 * did not arrive). */
static int take_envelope(ho_client *c, uint8_t *payload, size_t plen,
                         Hyperoffload__Envelope **ret_env, int *ret_fds,
                         unsigned *ret_nfds, char *why, size_t whylen)
{
    Hyperoffload__Envelope *env =
        hyperoffload__envelope__unpack(NULL, plen, payload);
    free(payload);
    if (!env)
        return ho_errf(why, whylen, HO_E_PROTOCOL,
                       "undecodable frame of %zu bytes", plen);
    unsigned want = wanted_fds(env);
    if (want > HOC_MAX_FDS_PER_REPLY || c->fdq_len < want) {
        ho_frame_envelope_free(env);
        if (want == 1)
            return ho_errf(why, whylen, HO_E_PROTOCOL, "a reply announces a "
                           "descriptor that did not arrive");
        return ho_errf(why, whylen, HO_E_PROTOCOL, "a reply announces %u "
                       "descriptors that did not arrive (%u did)", want,
                       c->fdq_len);
    }
    for (unsigned i = 0; i < want; i++)
        ret_fds[i] = c->fdq[i];
    memmove(c->fdq, c->fdq + want, (c->fdq_len - want) * sizeof(int));
    c->fdq_len -= want;
    *ret_env = env;
    *ret_nfds = want;
    return 0;
}

/* Read one envelope: feed the frame reader from rbuf, receiving more when
 * it is empty.  Reader context, mu not held.  On success *ret_env is set;
 * a body this library does not know decodes with body_case NOT_SET.
 * ret_fds[0..*ret_nfds) are the descriptors the envelope announced (at
 * most HOC_MAX_FDS_PER_REPLY).  Returns 0 or a connection-fatal code. */
static int read_envelope(ho_client *c, Hyperoffload__Envelope **ret_env,
                         int *ret_fds, unsigned *ret_nfds, char *why,
                         size_t whylen)
{
    for (;;) {
        if (c->rbuf_off == c->rbuf_end) {
            int rc = recv_more(c, why, whylen);
            if (rc < 0)
                return rc;
            continue;
        }
        size_t used = 0, plen = 0;
        uint8_t *payload = NULL;
        int rc = ho_frame_reader_feed(&c->reader, c->rbuf + c->rbuf_off,
                                      c->rbuf_end - c->rbuf_off, &used,
                                      &payload, &plen);
        c->rbuf_off += used;
        if (rc == HO_E_FRAME_TOO_LARGE)
            return ho_errf(why, whylen, rc, "reply of %u bytes exceeds the "
                           "limit %u", ho_frame_header_len(c->reader.hdr),
                           c->reader.limit);
        if (rc == HO_E_PROTOCOL)
            return ho_errf(why, whylen, rc, "zero-length frame");
        if (rc < 0)
            return rc;
        if (rc == 1)
            return take_envelope(c, payload, plen, ret_env, ret_fds,
                                 ret_nfds, why, whylen);
    }
}

/* With mu held: hand an envelope to its waiter, or consume an event. */
static void dispatch_locked(ho_client *c, Hyperoffload__Envelope *env,
                            const int *fds, unsigned nfds)
{
    if (env->request_id == 0) {
        if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY_EVENT &&
            env->event &&
            env->event->kind == HYPEROFFLOAD__EVENT_KIND__EVENT_SHUTTING_DOWN)
            atomic_store(&c->shutting_down, 1);
        else if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY_ERROR &&
                 env->error) {
            /* A connection-level error (the close follows): keep its code
             * and sentence for the waiters. */
            int code = ho_frame_error_code(env->error);
            const char *m = env->error->message && env->error->message[0]
                                ? env->error->message
                                : ho_strerror(code < 0 ? code
                                                       : HO_E_INTERNAL);
            c->conn_err = code < 0 ? code : HO_E_INTERNAL;
            snprintf(c->conn_err_msg, sizeof(c->conn_err_msg), "%s", m);
            snprintf(c->read_why, sizeof(c->read_why), "daemon said: %s", m);
        }
        goto drop;
    }
    for (hoc_pending *p = c->pending; p; p = p->next) {
        if (p->request_id == env->request_id && !p->done) {
            if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY__NOT_SET) {
                p->err = HO_E_PROTOCOL; /* a reply kind we cannot read */
                p->done = true;
                goto drop;
            }
            p->reply = env;
            memcpy(p->fds, fds, nfds * sizeof(int));
            p->nfds = nfds;
            p->done = true;
            return;
        }
    }
drop:
    /* A reply nobody waits for (cannot happen with a correct daemon). */
    close_fds(fds, nfds);
    ho_frame_envelope_free(env);
}

static void unlink_locked(ho_client *c, hoc_pending *p)
{
    for (hoc_pending **pp = &c->pending; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            return;
        }
    }
}

/* Step 1 of a call: give req a request id and version, and put the
 * waiter on the pending list (before anything is sent, so that its reply
 * finds it).  *ret_send_limit is the frame limit to send under.  0, or the
 * code a dead connection returns. */
static int enqueue_request(ho_client *c, Hyperoffload__Envelope *req,
                           hoc_pending *p, uint32_t *ret_send_limit)
{
    pthread_mutex_lock(&c->mu);
    if (c->dead || (c->reconnecting &&
                    !pthread_equal(c->rc_thread, pthread_self()))) {
        int rc = c->dead ? c->dead : HO_E_DISCONNECTED;
        if (!c->dead)
            snprintf(c->last_error, sizeof(c->last_error),
                     "the client is reconnecting to the daemon at %s",
                     c->socket_path);
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    p->request_id = ++c->next_request_id;
    *ret_send_limit = c->send_limit;
    req->version = c->version ? c->version : HO_PROTO_VERSION;
    req->request_id = p->request_id;
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

/* Step 2: encode req as one frame within send_limit.  On failure the
 * waiter leaves the pending list and the sentence is the last error
 * (nothing was sent: the connection stays usable). */
static int encode_request(ho_client *c, const Hyperoffload__Envelope *req,
                          hoc_pending *p, uint32_t send_limit,
                          uint8_t **ret_frame, size_t *ret_len)
{
    uint8_t *frame = NULL;
    size_t flen = 0;
    int rc = ho_frame_encode(req, &frame, &flen);
    if (rc == 0 && flen - HO_FRAME_HEADER > send_limit) {
        free(frame);
        frame = NULL;
        rc = HO_E_FRAME_TOO_LARGE;
    }
    if (rc < 0) {
        pthread_mutex_lock(&c->mu);
        unlink_locked(c, p);
        snprintf(c->last_error, sizeof(c->last_error),
                 rc == HO_E_FRAME_TOO_LARGE
                     ? "request of %zu bytes exceeds the frame limit %u"
                     : "cannot encode a request of %zu bytes (limit %u)",
                 flen, send_limit);
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    *ret_frame = frame;
    *ret_len = flen;
    return 0;
}

/* Step 3, with mu held: wait until p is done.  Whichever waiter finds
 * nobody reading becomes the reader (leader/follower): it reads one
 * envelope without mu, then dispatches it to its waiter under mu and
 * wakes everyone; a read failure kills the connection, which completes
 * every waiter. */
static void wait_reply_locked(ho_client *c, hoc_pending *p)
{
    while (!p->done) {
        if (c->reader_busy) {
            pthread_cond_wait(&c->cv, &c->mu);
            continue;
        }
        c->reader_busy = true;
        pthread_mutex_unlock(&c->mu);
        Hyperoffload__Envelope *env = NULL;
        int fds[HOC_MAX_FDS_PER_REPLY];
        unsigned nfds = 0;
        char why[sizeof(c->read_why)] = "";
        int rrc = read_envelope(c, &env, fds, &nfds, why, sizeof(why));
        pthread_mutex_lock(&c->mu);
        c->reader_busy = false;
        if (why[0])
            memcpy(c->read_why, why, sizeof(why));
        if (rrc < 0)
            kill_locked(c, rrc);
        else
            dispatch_locked(c, env, fds, nfds);
        pthread_cond_broadcast(&c->cv);
    }
}

/* Step 4, with mu held (released here): an Error reply becomes its code
 * with its sentence as the last error (reply and descriptors freed). */
static int error_reply_unlock(ho_client *c, hoc_pending *p)
{
    const Hyperoffload__Error *e = p->reply->error;
    int rc = e ? ho_frame_error_code(e) : HO_E_PROTOCOL;
    if (rc >= 0)
        rc = HO_E_INTERNAL;
    snprintf(c->last_error, sizeof(c->last_error), "%s",
             e && e->message && e->message[0] ? e->message
                                              : ho_strerror(rc));
    pthread_mutex_unlock(&c->mu);
    close_fds(p->fds, p->nfds);
    ho_frame_envelope_free(p->reply);
    return rc;
}

/* Steps: enqueue, encode, send (a partial frame leaves the stream
 * unusable: the connection dies), wait for the reply, hand it over. */
static int call_once(ho_client *c, Hyperoffload__Envelope *req,
                     Hyperoffload__Envelope **ret_reply, int *ret_fds,
                     unsigned max_fds, unsigned *ret_nfds)
{
    hoc_pending p = {.nfds = 0};
    uint8_t *frame = NULL;
    size_t flen = 0;
    uint32_t send_limit = 0;
    int rc;

    if ((rc = enqueue_request(c, req, &p, &send_limit)) < 0 ||
        (rc = encode_request(c, req, &p, send_limit, &frame, &flen)) < 0)
        return rc;

    pthread_mutex_lock(&c->wmu);
    rc = send_all(c->fd, frame, flen);
    pthread_mutex_unlock(&c->wmu);
    free(frame);

    pthread_mutex_lock(&c->mu);
    if (rc == HO_E_DISCONNECTED)
        c->send_broken = true; /* read what the daemon said first */
    else if (rc < 0)
        kill_locked(c, rc);
    wait_reply_locked(c, &p);
    unlink_locked(c, &p);
    if (p.err) {
        rc = p.err;
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    if (p.reply->body_case == HYPEROFFLOAD__ENVELOPE__BODY_ERROR)
        return error_reply_unlock(c, &p);
    pthread_mutex_unlock(&c->mu);

    *ret_reply = p.reply;
    unsigned keep = p.nfds < max_fds ? p.nfds : max_fds;
    for (unsigned i = 0; i < keep; i++)
        ret_fds[i] = p.fds[i];
    close_fds(p.fds + keep, p.nfds - keep);
    if (ret_nfds)
        *ret_nfds = keep;
    return 0;
}

/* Requests that mean the same on a fresh session (no extent, replay or
 * registration of the old one in them): sent again after a reconnect. */
static bool same_on_new_session(Hyperoffload__Envelope__BodyCase b)
{
    switch (b) {
    case HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST:
    case HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST:
    case HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REQUEST:
    case HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REQUEST:
    case HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REQUEST:
    case HYPEROFFLOAD__ENVELOPE__BODY_METRICS_REQUEST:
    case HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST:
        return true;
    default:
        return false;
    }
}

/* call_once, and with reconnect on, when the connection was lost: a
 * reconnect, then the request once more when it means the same on the new
 * session, else HO_E_DISCONNECTED saying what was lost. */
int hoc_call_fds(ho_client *c, Hyperoffload__Envelope *req,
                 Hyperoffload__Envelope **ret_reply, int *ret_fds,
                 unsigned max_fds, unsigned *ret_nfds)
{
    int rc = call_once(c, req, ret_reply, ret_fds, max_fds, ret_nfds);
    pthread_mutex_lock(&c->mu);
    bool lost = c->dead && c->rc_attempts && !c->reconnecting &&
                (rc == HO_E_DISCONNECTED || rc == HO_E_SHUTTING_DOWN);
    pthread_mutex_unlock(&c->mu);
    if (!lost || hoc_reconnect(c) < 0)
        return rc;
    if (!same_on_new_session(req->body_case))
        return hoc_fail(c, HO_E_DISCONNECTED,
                        "the connection to the daemon was lost; the client "
                        "reconnected (reconnect %u, session %llu), but this "
                        "request needed the previous session's extents, "
                        "replay or registration, which are gone",
                        c->reconnects,
                        (unsigned long long)atomic_load(&c->session_id));
    return call_once(c, req, ret_reply, ret_fds, max_fds, ret_nfds);
}

static const char *body_name(Hyperoffload__Envelope__BodyCase b)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(
            &hyperoffload__envelope__descriptor, (unsigned)b);
    return f ? f->name : "nothing";
}

int hoc_call_expect_fds(ho_client *c, Hyperoffload__Envelope *req,
                        Hyperoffload__Envelope__BodyCase want,
                        Hyperoffload__Envelope **ret_reply, int *ret_fds,
                        unsigned max_fds, unsigned *ret_nfds)
{
    Hyperoffload__Envelope *reply = NULL;
    int fds[HOC_MAX_FDS_PER_REPLY];
    unsigned nfds = 0;
    if (max_fds > HOC_MAX_FDS_PER_REPLY)
        max_fds = HOC_MAX_FDS_PER_REPLY;
    int rc = hoc_call_fds(c, req, &reply, fds, max_fds, &nfds);
    if (rc < 0)
        return rc;
    if (reply->body_case != want) {
        Hyperoffload__Envelope__BodyCase got = reply->body_case;
        close_fds(fds, nfds);
        ho_frame_envelope_free(reply);
        return hoc_fail(c, HO_E_PROTOCOL,
                        "daemon answered %s with %s instead of %s",
                        body_name(req->body_case), body_name(got),
                        body_name(want));
    }
    *ret_reply = reply;
    for (unsigned i = 0; i < nfds; i++)
        ret_fds[i] = fds[i];
    if (ret_nfds)
        *ret_nfds = nfds;
    return 0;
}

int hoc_call_expect(ho_client *c, Hyperoffload__Envelope *req,
                    Hyperoffload__Envelope__BodyCase want,
                    Hyperoffload__Envelope **ret_reply, int *ret_fd)
{
    int fd = -1;
    unsigned n = 0;
    int rc = hoc_call_expect_fds(c, req, want, ret_reply, &fd,
                                 ret_fd ? 1 : 0, &n);
    if (rc == 0 && ret_fd)
        *ret_fd = n ? fd : -1;
    return rc;
}

int hoc_peer_gone(ho_client *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLRDHUP};
    if (c->dead)
        return 1;
    if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        return 1;
    return 0;
}
