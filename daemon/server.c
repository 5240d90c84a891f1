/*
 * daemon/server.c - the listening socket, accepting connections, the
 * handshake and the checks of a payload before dispatch (see server.h).
 */
#include "daemon/server.h"

#include "hyperoffload/version.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon/authz.h"
#include "daemon/connection.h"
#include "daemon/dirs.h"
#include "daemon/dispatch.h"
#include "daemon/log.h"
#include "daemon/mover.h"
#include "daemon/planning.h"
#include "daemon/sessions.h"
#include "proto/errfmt.h"

/* ------------------------------------------------------------ handshake */

static void handle_hello(srv_conn *c, const Hyperoffload__Envelope *env)
{
    srv_daemon *d = c->d;
    const Hyperoffload__Hello *h = env->hello;
    uint32_t lo = h->min_version, hi = h->max_version;
    if (lo > hi || hi < HO_PROTO_MIN_VERSION || lo > HO_PROTO_VERSION) {
        srv_conn_fatal(c, env->request_id, HO_E_VERSION,
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
    c->state = SRV_CONN_READY;
    srv_debug("connection %llu: hello from '%s' (pid %d, uid %u), version %u",
              (unsigned long long)c->id, c->name, (int)c->pid,
              (unsigned)c->uid, c->version);
    srv_conn_reply(c, env->request_id, HYPEROFFLOAD__ENVELOPE__BODY_WELCOME,
                   &w, NULL, 0);
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

/* The checks of a request on a READY connection before dispatch: a body
 * (or an unknown field, a newer protocol's body), not Hello, not a
 * daemon's message, the negotiated version, not draining.  Returns true
 * when the request was answered (or the connection ended) here. */
static bool refuse_request(srv_conn *c, const Hyperoffload__Envelope *env)
{
    uint64_t rid = env->request_id;
    if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY__NOT_SET) {
        if (env->base.n_unknown_fields > 0)
            srv_reply_error(c, rid, HO_E_UNSUPPORTED,
                            "the request body (field %u) is not supported by "
                            "this daemon (protocol %u)",
                            (unsigned)env->base.unknown_fields[0].tag,
                            c->version);
        else
            srv_conn_fatal(c, rid, HO_E_PROTOCOL, "the envelope has no body");
        return true;
    }
    if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY_HELLO) {
        srv_conn_fatal(c, rid, HO_E_PROTOCOL, "Hello after the handshake");
        return true;
    }
    if (daemon_only(env->body_case)) {
        srv_conn_fatal(c, rid, HO_E_PROTOCOL,
                       "message type %d is sent by the daemon, not by "
                       "clients", (int)env->body_case);
        return true;
    }
    if (env->version != c->version) {
        srv_reply_error(c, rid, HO_E_VERSION,
                        "the message is written in protocol version %u; this "
                        "connection negotiated version %u",
                        env->version, c->version);
        return true;
    }
    if (c->d->draining) {
        srv_reply_error(c, rid, HO_E_SHUTTING_DOWN,
                        "the daemon is shutting down");
        return true;
    }
    return false;
}

/* A decoded request on a READY connection, or the handshake's Hello. */
static void handle_envelope(srv_conn *c, const Hyperoffload__Envelope *env)
{
    if (c->state == SRV_CONN_HANDSHAKE) {
        if (env->body_case != HYPEROFFLOAD__ENVELOPE__BODY_HELLO)
            srv_conn_fatal(c, env->request_id, HO_E_PROTOCOL,
                           "expected Hello as the first message");
        else
            handle_hello(c, env);
    } else {
        c->requests++;
        if (!refuse_request(c, env))
            srv_dispatch(c->d, c, env);
    }
}

/* A big frame decoded on a worker (SRV_OFFLOOP_FRAME). */
typedef struct big_frame {
    uv_work_t req;
    srv_daemon *d;
    uint64_t conn_id;
    uint8_t *payload; /* freed on the worker once decoded */
    size_t len;
    Hyperoffload__Envelope *env;
    bool has_plan;
    srv_plan_prepared plan;
} big_frame;

static void big_work(uv_work_t *w)
{
    big_frame *b = w->data;
    b->env = hyperoffload__envelope__unpack(NULL, b->len, b->payload);
    free(b->payload);
    b->payload = NULL;
    if (b->env &&
        b->env->body_case == HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST &&
        b->env->plan_request) {
        srv_plan_prepare(b->env->plan_request, &b->plan);
        b->has_plan = true;
    }
}

/* The decoded envelope and what the plan's reader left freed on a worker
 * too: a 10^6-op trace is millions of allocations, whose free() would
 * stall the loop for 0.1-1 s (issue 10 item 4). */
static void big_free_work(uv_work_t *w)
{
    big_frame *b = w->data;
    if (b->env)
        hyperoffload__envelope__free_unpacked(b->env, NULL);
    b->env = NULL;
    if (b->has_plan)
        srv_plan_prepared_done(&b->plan);
    b->has_plan = false;
}

static void big_free_after(uv_work_t *w, int status)
{
    (void)status;
    big_frame *b = w->data;
    srv_daemon *d = b->d;
    big_free_work(w); /* cancelled: nothing was freed yet */
    free(b->payload);
    free(b);
    srv_work_end(d);
}

static void big_after(uv_work_t *w, int status)
{
    big_frame *b = w->data;
    srv_daemon *d = b->d;
    srv_conn *c = srv_conn_find(d, b->conn_id);
    if (c && c->state == SRV_CONN_READY) {
        if (status < 0 || !b->env) {
            srv_conn_fatal(c, 0, HO_E_PROTOCOL,
                           "a frame of %zu bytes does not decode as an "
                           "Envelope", b->len);
        } else {
            c->prepared = b->has_plan ? &b->plan : NULL;
            handle_envelope(c, b->env);
            c->prepared = NULL;
        }
    }
    if (c)
        srv_conn_resume(c);
    /* Still one worker job (srv_work_begin at the decode) until freed. */
    if ((b->env || b->has_plan) &&
        uv_queue_work(&d->loop, &b->req, big_free_work, big_free_after) == 0)
        return;
    big_free_after(w, 0);
}

/* One complete payload (srv_conn_hooks.payload): a big one on a READY
 * connection goes to a worker (the connection pauses until big_after),
 * the others are decoded and handled here. */
static int handle_payload(srv_conn *c, uint8_t *payload, size_t len)
{
    if (c->state == SRV_CONN_READY && len >= SRV_OFFLOOP_FRAME) {
        big_frame *b = calloc(1, sizeof(*b));
        if (b) {
            b->req.data = b;
            b->d = c->d;
            b->conn_id = c->id;
            b->payload = payload;
            b->len = len;
            if (uv_queue_work(&c->d->loop, &b->req, big_work, big_after) ==
                0) {
                srv_work_begin(c->d);
                return SRV_PAYLOAD_KEPT;
            }
            free(b);
        }
        /* no worker: decode here, as small frames are */
    }
    Hyperoffload__Envelope *env =
        hyperoffload__envelope__unpack(NULL, len, payload);
    if (!env) {
        srv_conn_fatal(c, 0, HO_E_PROTOCOL,
                       "a frame of %zu bytes does not decode as an Envelope",
                       len);
        return SRV_PAYLOAD_DONE;
    }
    handle_envelope(c, env);
    hyperoffload__envelope__free_unpacked(env, NULL);
    return SRV_PAYLOAD_DONE;
}

/* ------------------------------------------------------------ accepting */

static void conn_closing(srv_conn *c)
{
    if (c->session) {
        srv_session_drop(c->d, c->session);
        c->session = NULL;
    }
}

static const srv_conn_hooks conn_hooks = {
    .payload = handle_payload,
    .closing = conn_closing,
};

/* The peer's uid, gid, pid of an accepted socket (SO_PEERCRED).  0 or
 * -1 (logged). */
static int peer_cred(int fd, struct ucred *ret)
{
    socklen_t cl = sizeof(*ret);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, ret, &cl) < 0) {
        srv_warn("accept: cannot read the peer's credentials: %s",
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ descriptors */

/* Descriptors open in the process: /proc/self/fd counted (the directory's
 * own descriptor left out), or the limit itself when even that cannot be
 * opened for want of descriptors; without /proc, an estimate from the
 * connections. */
static uint64_t fds_open(srv_daemon *d)
{
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) {
        if (errno == EMFILE || errno == ENFILE)
            return d->fd_limit;
        return (uint64_t)d->n_conns * SRV_FD_PER_SESSION +
               SRV_FD_DAEMON_RESERVE;
    }
    uint64_t n = 0;
    struct dirent *e;
    while ((e = readdir(dir)))
        if (e->d_name[0] != '.')
            n++;
    closedir(dir);
    return n ? n - 1 : 0;
}

/* Before a new connection is served: are enough descriptors left for it
 * (srv_limits.h, "Descriptors")?  Counting costs a directory read, so it
 * is skipped while the connections are far from the limit, and done at
 * most once per peer: *open is the count once made (0: not yet). */
static bool fds_left_for(srv_daemon *d, bool admin, uint64_t *open)
{
    uint64_t need = admin ? 1 + SRV_FD_DAEMON_RESERVE
                          : SRV_FD_PER_SESSION + SRV_FD_ADMIN_RESERVE +
                                SRV_FD_DAEMON_RESERVE;
    uint64_t guess = (uint64_t)d->n_conns * SRV_FD_PER_SESSION +
                     SRV_FD_DAEMON_RESERVE;
    if (2 * (guess + need) < d->fd_limit)
        return true;
    if (!*open)
        *open = fds_open(d);
    return *open + need <= d->fd_limit;
}

/* A peer (accepted on fd, no connection made for it) refused for want of
 * descriptors: counted, logged once per spell (with the first peer), told
 * the reason, and its descriptor closed at once, so that a burst of
 * refused peers does not itself hold descriptors. */
static void refuse_for_fds(srv_daemon *d, int fd, const struct ucred *cr,
                           bool admin, uint64_t open)
{
    d->fd_refusals++;
    if (!d->fd_short)
        srv_warn("descriptors: %llu of the limit of %llu are open; refusing "
                 "new %s connections (first: pid %d, uid %u) until some "
                 "close", (unsigned long long)open,
                 (unsigned long long)d->fd_limit,
                 admin ? "admin" : "non-admin", (int)cr->pid,
                 (unsigned)cr->uid);
    d->fd_short = true;
    char msg[256];
    snprintf(msg, sizeof(msg), "the daemon is short of file descriptors "
             "(%llu of its limit of %llu are open, the rest is kept for "
             "%s); try again later", (unsigned long long)open,
             (unsigned long long)d->fd_limit,
             admin ? "its own work" : "admins and its own work");
    srv_debug("accept: pid %d, uid %u refused: %s", (int)cr->pid,
              (unsigned)cr->uid, msg);
    srv_conn_refuse_raw(fd, -EMFILE, msg);
}

/* The spare descriptor, taken (again) so that the next EMFILE can be
 * answered. */
static void take_spare(srv_daemon *d)
{
    if (d->spare_fd < 0)
        d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void on_accept_resume(uv_timer_t *t);

/* accept4 failed with EMFILE / ENFILE: counted and logged; the spare
 * descriptor is given up to accept the peer, tell it why and close it,
 * then taken back.  Without a spare, accepting pauses for
 * SRV_ACCEPT_PAUSE_MS (the listener would wake the loop at once again). */
static void accept_out_of_fds(srv_daemon *d, int e)
{
    d->accept_fd_errors++;
    if (!d->fd_short || d->accept_fd_errors == 1)
        srv_warn("accept: %s (%llu descriptors allowed); refusing "
                 "connections until some close", strerror(e),
                 (unsigned long long)d->fd_limit);
    d->fd_short = true;
    if (d->spare_fd >= 0) {
        close(d->spare_fd);
        d->spare_fd = -1;
        int fd = accept4(d->listen_fd, NULL, NULL,
                         SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0)
            srv_conn_refuse_raw(fd, -EMFILE, "the daemon is out of file "
                                "descriptors; try again later");
        take_spare(d);
        if (fd >= 0 && d->spare_fd >= 0)
            return;
    }
    uv_poll_stop(&d->listener);
    uv_timer_start(&d->accept_timer, on_accept_resume, SRV_ACCEPT_PAUSE_MS,
                   0);
}

/* ------------------------------------------------------------ timeouts */

/* Close c with the reason when one of its timeouts passed: no Hello
 * within handshake_timeout, a frame not complete read_timeout after its
 * first byte (a peer trickling a large frame), silent for idle_timeout
 * without a session.  Counted; srv_conn_fatal logs it once with the
 * peer. */
static void check_timeouts(srv_conn *c, uint64_t now)
{
    const srv_config *cfg = &c->d->cfg;
    if (c->state != SRV_CONN_HANDSHAKE && c->state != SRV_CONN_READY)
        return;
    uint64_t hs = (uint64_t)cfg->handshake_timeout_s * 1000;
    uint64_t rd = (uint64_t)cfg->read_timeout_s * 1000;
    uint64_t idle = (uint64_t)cfg->idle_timeout_s * 1000;
    if (c->state == SRV_CONN_HANDSHAKE && now - c->accepted_ms >= hs) {
        srv_conn_fatal(c, 0, -ETIMEDOUT, "no Hello within %u s of "
                       "connecting (handshake_timeout)",
                       cfg->handshake_timeout_s);
    } else if (c->frame_start_ms && now - c->frame_start_ms >= rd) {
        srv_conn_fatal(c, 0, -ETIMEDOUT, "a frame of %u bytes was not "
                       "complete %u s after its first byte (%u received; "
                       "read_timeout)", c->reader.need, cfg->read_timeout_s,
                       c->reader.have);
    } else if (idle && c->state == SRV_CONN_READY && !c->session &&
               !c->frame_start_ms && now - c->last_request_ms >= idle) {
        srv_conn_fatal(c, 0, -ETIMEDOUT, "no request for %u s and no "
                       "session (idle_timeout)", cfg->idle_timeout_s);
    }
}

/* Every SRV_SWEEP_MS: the timeouts, the flash discards that are due, and
 * the heap handed back to the
 * system once the buffers of peers (queued output, partial frames) have
 * shrunk by SRV_TRIM_MIN from their peak: glibc keeps freed heap, and an
 * attack's peak would otherwise stay in the RSS. */
static void on_sweep(uv_timer_t *t)
{
    srv_daemon *d = t->data;
    uint64_t now = uv_now(&d->loop);
    srv_conn *c = d->conns;
    while (c) {
        srv_conn *next = c->next;
        check_timeouts(c, now);
        c = next;
    }
    /* freed flash ranges past their delay, a bounded amount per sweep in
     * all, the files taking turns to go first */
    uint64_t left = SRV_DISCARD_PER_SWEEP;
    for (uint32_t k = 0; k < d->n_flash && left > 0; k++) {
        uint32_t i = (d->discard_next + k) % d->n_flash;
        uint64_t done = tier_flash_discard_due(d->flash[i], left, false);
        left = done < left ? left - done : 0;
    }
    if (d->n_flash)
        d->discard_next = (d->discard_next + 1) % d->n_flash;
    /* Peers' buffers and the plans sessions keep (freed with a session:
     * retained plans are as large as their traces). */
    uint64_t held = d->output_bytes + d->partial_bytes + d->memo_bytes;
    if (held > d->buffered_peak)
        d->buffered_peak = held;
    if (d->buffered_peak >= held + SRV_TRIM_MIN) {
        malloc_trim(0);
        d->buffered_peak = held;
    }
}

/* ------------------------------------------------------------ accepting */

/* The reason a new connection c (linked) may not have a slot, or -1:
 * max_connections for everyone, for non-admins also max_connections_per_uid
 * of their uid and the admin reserve (the last admin_reserve slots of
 * max_connections, at most an eighth of them).  Only connections that
 * serve (HANDSHAKE, READY) count: refused ones flushing their Error do
 * not.  *ret_n is what the limit counted (connections, of the uid). */
static int slot_refusal(srv_conn *c, uint32_t *ret_limit, uint32_t *ret_n)
{
    srv_daemon *d = c->d;
    const srv_config *cfg = &d->cfg;
    uint32_t live = 0, same_uid = 0;
    for (srv_conn *o = d->conns; o; o = o->next) {
        if (o->state != SRV_CONN_HANDSHAKE && o->state != SRV_CONN_READY)
            continue;
        live++;
        if (o->uid == c->uid && !o->admin)
            same_uid++;
    }
    *ret_n = live - 1;
    if (live > cfg->max_connections) {
        *ret_limit = cfg->max_connections;
        return SRV_REFUSE_MAX_CONNECTIONS;
    }
    if (c->admin)
        return -1;
    uint32_t kept = cfg->admin_reserve < cfg->max_connections / 8
                        ? cfg->admin_reserve
                        : cfg->max_connections / 8;
    if (live > cfg->max_connections - kept) {
        *ret_limit = kept;
        return SRV_REFUSE_ADMIN_RESERVE;
    }
    if (same_uid > cfg->max_connections_per_uid) {
        *ret_limit = cfg->max_connections_per_uid;
        *ret_n = same_uid - 1;
        return SRV_REFUSE_PER_UID;
    }
    return -1;
}

/* Refuse c (linked) when it may not have a slot: an Error{EAGAIN}
 * naming the setting, counted by reason, logged as a warning with the
 * peer (at most one line per reason per SRV_SLOT_LOG_MS, which counts the
 * ones left unlogged; each one at debug).  True when refused. */
static bool refuse_connection(srv_daemon *d, srv_conn *c)
{
    uint32_t limit = 0, n = 0;
    int why = slot_refusal(c, &limit, &n);
    if (why < 0)
        return false;
    d->counters.conn_refusals[why]++;
    char msg[256];
    if (why == SRV_REFUSE_PER_UID)
        snprintf(msg, sizeof(msg), "uid %u holds %u connections, the most "
                 "one user may (max_connections_per_uid); close some first",
                 (unsigned)c->uid, n);
    else if (why == SRV_REFUSE_ADMIN_RESERVE)
        snprintf(msg, sizeof(msg), "the daemon serves %u connections, the "
                 "most it takes from non-admin peers (max_connections %u, "
                 "%u kept for admins: admin_reserve); try again later", n,
                 d->cfg.max_connections, limit);
    else
        snprintf(msg, sizeof(msg), "the daemon serves its maximum of %u "
                 "connections (max_connections); try again later", limit);
    uint64_t now = uv_now(&d->loop);
    if (!d->slot_log_ms[why] ||
        now - d->slot_log_ms[why] >= SRV_SLOT_LOG_MS) {
        char more[96] = "";
        if (d->slot_unlogged[why])
            snprintf(more, sizeof(more), " (and %llu more refused since the "
                     "last such line)",
                     (unsigned long long)d->slot_unlogged[why]);
        srv_warn("connection %llu (pid %d, uid %u) refused: %s%s",
                 (unsigned long long)c->id, (int)c->pid, (unsigned)c->uid,
                 msg, more);
        d->slot_log_ms[why] = now ? now : 1;
        d->slot_unlogged[why] = 0;
    } else {
        d->slot_unlogged[why]++;
    }
    srv_conn_refuse(c, -EAGAIN, msg);
    return true;
}

/* Serve a connection accepted on fd (owned from here on): refused at
 * once when too few descriptors are left for it (the admin lookup only
 * when that matters), else a connection made, linked and read. */
static void serve_accepted(srv_daemon *d, int fd)
{
    struct ucred cr;
    if (peer_cred(fd, &cr) < 0) {
        close(fd);
        return;
    }
    uint64_t open = 0;
    int admin = -1; /* not looked up yet */
    if (!fds_left_for(d, false, &open)) {
        admin = srv_authz_is_admin(&d->authz, cr.uid, cr.gid);
        if (!admin || !fds_left_for(d, true, &open)) {
            refuse_for_fds(d, fd, &cr, admin, open);
            return;
        }
    }
    if (d->fd_short) {
        srv_notice("descriptors: accepting connections again (%llu "
                   "refused, %llu accept errors so far)",
                   (unsigned long long)d->fd_refusals,
                   (unsigned long long)d->accept_fd_errors);
        d->fd_short = false;
    }
    srv_conn *c = srv_conn_new(d, &conn_hooks);
    if (!c) {
        srv_err("accept: out of memory");
        close(fd);
        return;
    }
    int rc = uv_pipe_open(&c->pipe, fd);
    if (rc < 0) {
        srv_warn("accept: %s", uv_strerror(rc));
        close(fd);
        srv_conn_abort(c);
        return;
    }
    c->uid = cr.uid;
    c->gid = cr.gid;
    c->pid = cr.pid;
    c->admin = admin >= 0 ? admin
                          : srv_authz_is_admin(&d->authz, cr.uid, cr.gid);
    if (srv_conn_link(c) < 0) {
        srv_err("accept: out of memory");
        srv_conn_abort(c);
        return;
    }
    srv_debug("connection %llu accepted (pid %d, uid %u, gid %u%s)",
              (unsigned long long)c->id, (int)c->pid, (unsigned)c->uid,
              (unsigned)c->gid, c->admin ? ", admin" : "");

    if (refuse_connection(d, c))
        return;
    if (d->draining) {
        srv_conn_fatal(c, 0, HO_E_SHUTTING_DOWN,
                       "the daemon is shutting down");
        return;
    }
    rc = srv_conn_start_reading(c);
    if (rc < 0) {
        srv_warn("connection %llu: read: %s", (unsigned long long)c->id,
                 uv_strerror(rc));
        srv_conn_close(c);
    }
}

static void on_listen_readable(uv_poll_t *p, int status, int events)
{
    srv_daemon *d = p->data;
    (void)events;
    if (status < 0) {
        srv_warn("accept: %s", uv_strerror(status));
        return;
    }
    for (int i = 0; i < SRV_ACCEPT_BATCH && d->listening; i++) {
        int fd = accept4(d->listen_fd, NULL, NULL,
                         SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            serve_accepted(d, fd);
            continue;
        }
        int e = errno;
        if (e == EINTR || e == ECONNABORTED)
            continue;
        if (e == EAGAIN || e == EWOULDBLOCK)
            return;
        if (e == EMFILE || e == ENFILE) {
            accept_out_of_fds(d, e);
            if (!uv_is_active((uv_handle_t *)&d->listener))
                return;
            continue;
        }
        srv_warn("accept: %s", strerror(e));
        return;
    }
}

static void on_accept_resume(uv_timer_t *t)
{
    srv_daemon *d = t->data;
    if (!d->listening)
        return;
    take_spare(d);
    uv_poll_start(&d->listener, UV_READABLE, on_listen_readable);
}

/* ------------------------------------------------------------ admin peers */

void srv_server_resolve_admin_group(srv_daemon *d)
{
    const char *name = d->cfg.admin_group;
    if (srv_authz_resolve(&d->authz, name) < 0)
        srv_warn("admin group '%s' does not exist: only root is admin", name);
}

/* ------------------------------------------------------------ listening */

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
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "systemd passed %d "
                       "descriptor(s) but none is a listening Unix stream "
                       "socket", n);
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

/* A socket file already at the path: replace it when nobody listens on
 * it; refuse a live one (-EADDRINUSE) or a non-socket (-EEXIST). */
static int replace_stale_socket(const char *path,
                                const struct sockaddr_un *sa,
                                const struct stat *st, char *err,
                                size_t errlen)
{
    if (!S_ISSOCK(st->st_mode))
        return ho_errf(err, errlen, -EEXIST, "%s exists and is not a socket; "
                       "refusing to replace it", path);
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0)
        return ho_errf(err, errlen, -errno, "socket: %s", strerror(errno));
    int live = connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
    int cerr = errno;
    close(probe);
    if (live)
        return ho_errf(err, errlen, -EADDRINUSE,
                       "another daemon is already listening on %s", path);
    if (cerr != ECONNREFUSED && cerr != ENOENT)
        return ho_errf(err, errlen, -cerr, "cannot probe the existing socket "
                       "%s: %s", path, strerror(cerr));
    srv_notice("replacing stale socket %s (nobody listens on it)", path);
    if (unlink(path) < 0 && errno != ENOENT)
        return ho_errf(err, errlen, -errno, "cannot remove stale socket %s: "
                       "%s", path, strerror(errno));
    return 0;
}

/* Bind and listen on sa, the file created private and then opened up to
 * cfg.socket_mode (never more open than asked, even briefly); *ret_st is
 * the file's identity. */
static int bind_listen(srv_daemon *d, const struct sockaddr_un *sa,
                       int *ret_fd, struct stat *ret_st, char *err,
                       size_t errlen)
{
    const char *path = sa->sun_path;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return ho_errf(err, errlen, -errno, "socket: %s", strerror(errno));
    mode_t old = umask(0177);
    int rc = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));
    int berr = errno;
    umask(old);
    if (rc < 0) {
        close(fd);
        return ho_errf(err, errlen, -berr, "cannot bind %s: %s", path,
                       strerror(berr));
    }
    if (chmod(path, d->cfg.socket_mode) < 0 || lstat(path, ret_st) < 0 ||
        listen(fd, SOMAXCONN) < 0) {
        rc = ho_errf(err, errlen, -errno, "cannot set up %s: %s", path,
                     strerror(errno));
        close(fd);
        unlink(path);
        return rc;
    }
    *ret_fd = fd;
    return 0;
}

static int bind_socket(srv_daemon *d, int *ret_fd, char *err, size_t errlen)
{
    const char *path = d->cfg.socket;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path))
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "socket path %s is too long", path);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int rc = srv_mkdir_parent(path, 0755);
    if (rc < 0)
        return ho_errf(err, errlen, rc, "cannot create the directory of %s: "
                       "%s", path, strerror(-rc));
    struct stat st;
    if (lstat(path, &st) == 0) {
        rc = replace_stale_socket(path, &sa, &st, err, errlen);
        if (rc < 0)
            return rc;
    }
    int fd = -1;
    rc = bind_listen(d, &sa, &fd, &st, err, errlen);
    if (rc < 0)
        return rc;
    d->socket_created = true;
    d->socket_dev = st.st_dev;
    d->socket_ino = st.st_ino;
    snprintf(d->socket_path, sizeof(d->socket_path), "%s", path);
    *ret_fd = fd;
    return 0;
}

/* The listening socket (its poll handle stopped or never started) and
 * the spare descriptor. */
static void close_listen_fds(srv_daemon *d)
{
    if (d->listen_fd >= 0)
        close(d->listen_fd);
    if (d->spare_fd >= 0)
        close(d->spare_fd);
    d->listen_fd = d->spare_fd = -1;
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
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    d->listen_fd = fd;
    d->spare_fd = -1;
    take_spare(d);
    uv_timer_init(&d->loop, &d->accept_timer);
    d->accept_timer.data = d;
    uv_timer_init(&d->loop, &d->sweep_timer);
    d->sweep_timer.data = d;
    uv_timer_start(&d->sweep_timer, on_sweep, SRV_SWEEP_MS, SRV_SWEEP_MS);
    rc = uv_poll_init(&d->loop, &d->listener, fd);
    if (rc == 0) {
        d->listener.data = d;
        rc = uv_poll_start(&d->listener, UV_READABLE, on_listen_readable);
        if (rc < 0)
            uv_close((uv_handle_t *)&d->listener, NULL);
    }
    if (rc < 0) {
        ho_errf(err, errlen, 0, "cannot listen on %s: %s", d->socket_path,
                uv_strerror(rc));
        uv_close((uv_handle_t *)&d->accept_timer, NULL);
        uv_close((uv_handle_t *)&d->sweep_timer, NULL);
        close_listen_fds(d);
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
    uv_poll_stop(&d->listener);
    uv_close((uv_handle_t *)&d->listener, NULL);
    uv_close((uv_handle_t *)&d->accept_timer, NULL);
    uv_close((uv_handle_t *)&d->sweep_timer, NULL);
    close_listen_fds(d);
    remove_socket(d);
}

void srv_server_close_all(srv_daemon *d)
{
    srv_server_stop_listening(d);
    srv_conn *c = d->conns;
    while (c) {
        srv_conn *next = c->next;
        srv_conn_finish(c);
        c = next;
    }
}
