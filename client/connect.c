/*
 * client/connect.c - handshake, Welcome facts, session registration and
 * the mapping of the session's DDR arena.
 */
#include "client/backends/backend.h"
#include "client/client_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Let go of the link region this session attached (its pacer). */
static void unpace(ho_client *c)
{
    if (c->pace_token)
        hob_pace_detach(c->paced_device, c->pace_token);
    c->pace_token = NULL;
    c->paced_device = -1;
}

/* Attach the link region of a RegisterReply (the frame's second
 * descriptor) for the host backend's copies of device r->device.
 * Consumes fd.  A region that does not check out is refused like a bad
 * arena. */
static int attach_links(ho_client *c, const Hyperoffload__RegisterReply *r,
                        int fd)
{
    unpace(c);
    const Hyperoffload__LinkRegion *l = r->links;
    int rc = 0;
    if (l && l->fd_attached && fd < 0)
        rc = hoc_fail(c, HO_E_PROTOCOL,
                      "register reply announces a link region without its "
                      "descriptor");
    else if (l && l->fd_attached && r->device >= 0) {
        char err[HOC_ERRLEN];
        rc = hob_pace_attach(r->device, fd, l->map_size, l->device_index,
                             l->weight, r->session_id, &c->pace_token, err,
                             sizeof(err));
        if (rc < 0)
            hoc_fail(c, rc, "%s", err);
        else
            c->paced_device = r->device;
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Why the calling thread's last ho_connect failed after the socket was
 * connected (the daemon's sentence, or the library's): ho_last_error(NULL). */
static _Thread_local char connect_error[HOC_ERRLEN];

/* Release everything a client holds; accepts a half-built client whose
 * transport was initialised. */
static void client_destroy(ho_client *c)
{
    unpace(c);
    if (c->pool)
        munmap(c->pool, (size_t)c->pool_size);
    c->pool = NULL;
    for (unsigned i = 0; i < HOC_OLD_POOLS; i++)
        if (c->old[i].p)
            munmap(c->old[i].p, (size_t)c->old[i].size);
    memset(c->old, 0, sizeof(c->old));
    for (size_t i = 0; i < c->ncaps; i++)
        free(c->caps[i]);
    c->ncaps = 0;
    free(c->node_admit_pb);
    hoc_transport_done(c);
    free(c);
}

static int take_welcome(ho_client *c, const Hyperoffload__Welcome *w)
{
    if (w->version < HO_PROTO_MIN_VERSION || w->version > HO_PROTO_VERSION)
        return hoc_fail(c, HO_E_VERSION,
                        "daemon chose protocol version %u, this library "
                        "speaks %u..%u",
                        w->version, HO_PROTO_MIN_VERSION, HO_PROTO_VERSION);
    uint32_t max_frame = w->max_frame ? w->max_frame : HO_FRAME_LIMIT_DEFAULT;
    if (max_frame < HO_FRAME_LIMIT_HANDSHAKE)
        max_frame = HO_FRAME_LIMIT_HANDSHAKE;
    if (max_frame > HO_FRAME_LIMIT_MAX)
        max_frame = HO_FRAME_LIMIT_MAX;

    c->version = w->version;
    c->connection_id = w->connection_id;
    c->max_frame = max_frame;
    c->admin = w->admin;
    c->uid = w->uid;
    c->gid = w->gid;
    c->pid = w->pid;
    snprintf(c->server_version, sizeof(c->server_version), "%s",
             w->server_version ? w->server_version : "");
    for (size_t i = 0; i < w->n_capabilities && c->ncaps < HOC_MAX_CAPS;
         i++) {
        const char *cap = w->capabilities[i] ? w->capabilities[i] : "";
        c->caps[c->ncaps] = strndup(cap, HOC_MAX_CAP_LEN);
        if (!c->caps[c->ncaps])
            return -ENOMEM;
        c->ncaps++;
    }
    hoc_transport_set_limits(c, max_frame, max_frame);
    return 0;
}

/* Hello, then the Welcome's facts taken. */
static int handshake(ho_client *c)
{
    Hyperoffload__Envelope *reply = NULL;
    Hyperoffload__Hello hello = HYPEROFFLOAD__HELLO__INIT;
    hello.min_version = HO_PROTO_MIN_VERSION;
    hello.max_version = HO_PROTO_VERSION;
    hello.client_name = c->client_name;
    hello.pid = (uint32_t)getpid();
    hello.device = -1;
    HOC_ENVELOPE(env, HELLO, hello, &hello);

    int rc = hoc_call_expect(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_WELCOME,
                             &reply, NULL);
    if (rc == 0)
        rc = reply->welcome ? take_welcome(c, reply->welcome)
                            : HO_E_PROTOCOL;
    ho_frame_envelope_free(reply);
    return rc;
}

HO_EXPORT int ho_connect(const char *socket_path, const char *client_name,
                         ho_client **ret_client)
{
    char path[HO_SOCKET_PATH_MAX + 1];
    const char *name = client_name ? client_name : "libhyperoffload";
    ho_client *c = NULL;
    int rc;

    if (!ret_client)
        return -EINVAL;
    connect_error[0] = '\0';
    if (strlen(name) > HO_CLIENT_MAX_NAME)
        return HO_E_INVALID_SIZE;
    rc = ho_socket_path(socket_path, path, sizeof(path));
    if (rc < 0)
        return rc;
    int fd = hoc_socket_connect(path);
    if (fd < 0)
        return fd;

    c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return -ENOMEM;
    }
    rc = hoc_transport_init(c, fd, HO_FRAME_LIMIT_HANDSHAKE);
    if (rc < 0) {
        close(fd);
        free(c);
        return rc;
    }
    memcpy(c->socket_path, path, sizeof(path));
    snprintf(c->client_name, sizeof(c->client_name), "%s", name);
    c->device = -1;
    atomic_init(&c->session_id, 0);

    rc = handshake(c);
    if (rc < 0)
        goto fail;
    *ret_client = c;
    return 0;

fail:
    pthread_mutex_lock(&c->mu);
    snprintf(connect_error, sizeof(connect_error), "%s", c->last_error);
    pthread_mutex_unlock(&c->mu);
    client_destroy(c);
    return rc;
}

HO_EXPORT ho_client *ho_close(ho_client *c)
{
    if (c) {
        /* Say goodbye by closing: the daemon drops the session. */
        client_destroy(c);
    }
    return NULL;
}

/* ----------------------------------------------------------- Welcome facts */

HO_EXPORT uint64_t ho_connection_id(const ho_client *c)
{
    return c->connection_id;
}

HO_EXPORT uint32_t ho_protocol_version(const ho_client *c)
{
    return c->version;
}

HO_EXPORT const char *ho_server_version(const ho_client *c)
{
    return c->server_version;
}

HO_EXPORT uint32_t ho_max_frame(const ho_client *c)
{
    return c->max_frame;
}

HO_EXPORT int ho_is_admin(const ho_client *c)
{
    return c->admin ? 1 : 0;
}

HO_EXPORT void ho_peer_identity(const ho_client *c, uint32_t *ret_uid,
                                uint32_t *ret_gid, uint32_t *ret_pid)
{
    if (ret_uid)
        *ret_uid = c->uid;
    if (ret_gid)
        *ret_gid = c->gid;
    if (ret_pid)
        *ret_pid = c->pid;
}

HO_EXPORT const char *ho_capability(const ho_client *c, size_t i)
{
    return i < c->ncaps ? c->caps[i] : NULL;
}

HO_EXPORT int ho_has_capability(const ho_client *c, const char *name)
{
    if (!name)
        return 0;
    for (size_t i = 0; i < c->ncaps; i++)
        if (strcmp(c->caps[i], name) == 0)
            return 1;
    return 0;
}

HO_EXPORT const char *ho_socket(const ho_client *c)
{
    return c->socket_path;
}

HO_EXPORT int ho_shutting_down(const ho_client *c)
{
    return atomic_load(&((ho_client *)c)->shutting_down) ? 1 : 0;
}

HO_EXPORT const char *ho_last_error(ho_client *c, char *buf, size_t len)
{
    if (!buf || len == 0)
        return "";
    if (!c) {
        snprintf(buf, len, "%s", connect_error);
        return buf;
    }
    pthread_mutex_lock(&c->mu);
    snprintf(buf, len, "%s", c->last_error);
    pthread_mutex_unlock(&c->mu);
    return buf;
}

/* ----------------------------------------------------------- session */

static void set_register_state(ho_client *c, int state)
{
    pthread_mutex_lock(&c->mu);
    c->register_state = state;
    pthread_mutex_unlock(&c->mu);
}

/* Validate the reply and map the arena.  Consumes `fd`. */
static int map_arena(ho_client *c, const Hyperoffload__RegisterReply *r,
                     int fd)
{
    const Hyperoffload__ArenaInfo *a = r->arena;
    long page = sysconf(_SC_PAGESIZE);
    int rc;

    if (!a || !a->fd_attached || fd < 0) {
        rc = hoc_fail(c, HO_E_PROTOCOL,
                      "register reply carries no arena descriptor");
        goto out;
    }
    if (r->session_id == 0) {
        rc = hoc_fail(c, HO_E_PROTOCOL, "register reply has session id 0");
        goto out;
    }
    if (a->map_size == 0 || a->map_size > HO_CLIENT_MAX_POOL_MAP ||
        a->map_size > SIZE_MAX || a->map_size % (uint64_t)page != 0) {
        rc = hoc_fail(c, HO_E_PROTOCOL,
                      "arena map size %llu is 0, unaligned or above %llu",
                      (unsigned long long)a->map_size,
                      (unsigned long long)HO_CLIENT_MAX_POOL_MAP);
        goto out;
    }
    void *p = mmap(NULL, (size_t)a->map_size, PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        rc = -errno;
        hoc_fail(c, rc, "cannot map arena %llu (%llu bytes): %s",
                 (unsigned long long)a->arena_id,
                 (unsigned long long)a->map_size, strerror(-rc));
        goto out;
    }
    c->pool = p;
    c->pool_size = a->map_size;
    c->arena_id = a->arena_id;
    c->ddr_alignment = r->ddr_alignment ? r->ddr_alignment : 4096;
    c->device = r->device;
    c->hbm_granted = r->hbm_granted;
    rc = 0;
out:
    if (fd >= 0)
        close(fd); /* the mapping keeps the memory alive */
    return rc;
}

HO_EXPORT int ho_register(ho_client *c, const char *job, int device,
                          uint64_t hbm_budget)
{
    Hyperoffload__Envelope *reply = NULL;
    int fds[2] = {-1, -1};
    unsigned nfds = 0;
    int rc;

    if (job && strlen(job) > HO_CLIENT_MAX_NAME)
        return hoc_fail(c, HO_E_INVALID_SIZE,
                        "job name longer than %d bytes", HO_CLIENT_MAX_NAME);
    pthread_mutex_lock(&c->mu);
    if (c->register_state != 0) {
        snprintf(c->last_error, sizeof(c->last_error),
                 "this connection is already registered (session %llu)",
                 (unsigned long long)atomic_load(&c->session_id));
        pthread_mutex_unlock(&c->mu);
        return HO_E_ALREADY;
    }
    c->register_state = 1;
    pthread_mutex_unlock(&c->mu);

    Hyperoffload__RegisterRequest req = HYPEROFFLOAD__REGISTER_REQUEST__INIT;
    req.job = (char *)(job ? job : "");
    req.device = device;
    req.hbm_budget = hbm_budget;
    req.client_name = c->client_name;
    req.weight = c->node_weight;
    req.max_slowdown = c->node_max_slowdown;
    req.sync = c->node_sync;
    if (c->node_admit_pb && c->node_max_slowdown > 0)
        req.admit_trace = hyperoffload__trace__unpack(NULL, c->node_admit_len,
                                                      c->node_admit_pb);
    HOC_ENVELOPE(env, REGISTER_REQUEST, register_request, &req);

    rc = hoc_call_expect_fds(c, &env,
                             HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY,
                             &reply, fds, 2, &nfds);
    if (req.admit_trace)
        hyperoffload__trace__free_unpacked(req.admit_trace, NULL);
    if (rc < 0) {
        set_register_state(c, 0);
        return rc;
    }
    int fd = fds[0];
    rc = reply->register_reply ? map_arena(c, reply->register_reply, fd)
                               : hoc_fail(c, HO_E_PROTOCOL,
                                          "empty register reply");
    if (rc == 0)
        rc = attach_links(c, reply->register_reply, fds[1]);
    else if (fds[1] >= 0)
        close(fds[1]);
    if (rc < 0) {
        if (!reply->register_reply && fd >= 0)
            close(fd);
        /* The daemon holds a session we cannot use: drop the connection
         * so it is reclaimed. */
        char why[HOC_ERRLEN];
        ho_last_error(c, why, sizeof(why));
        hoc_kill(c, HO_E_DISCONNECTED);
        hoc_fail(c, rc, "%s (connection closed)", why);
        ho_frame_envelope_free(reply);
        return rc;
    }
    uint64_t sid = reply->register_reply->session_id;
    ho_frame_envelope_free(reply);
    snprintf(c->reg_job, sizeof(c->reg_job), "%s", job ? job : "");
    c->reg_device = device;
    c->reg_budget = hbm_budget;
    c->reg_wanted = true;
    atomic_store(&c->session_id, sid);
    set_register_state(c, 2);
    return 0;
}

/* ----------------------------------------------------------- reconnect */

HO_EXPORT void ho_set_reconnect(ho_client *c, unsigned max_attempts,
                                unsigned max_wait_ms)
{
    pthread_mutex_lock(&c->mu);
    c->rc_attempts = max_attempts;
    c->rc_wait_ms = max_wait_ms;
    pthread_mutex_unlock(&c->mu);
}

uint64_t hoc_epoch(ho_client *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t e = c->epoch;
    pthread_mutex_unlock(&c->mu);
    return e;
}

HO_EXPORT unsigned ho_reconnects(const ho_client *c)
{
    pthread_mutex_lock(&((ho_client *)c)->mu);
    unsigned n = c->reconnects;
    pthread_mutex_unlock(&((ho_client *)c)->mu);
    return n;
}

/* The transport made ready for a new connection on fd: the old socket
 * closed, reader and descriptor queue emptied, handshake limits. */
static void transport_renew(ho_client *c, int fd)
{
    pthread_mutex_lock(&c->mu);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = fd;
    ho_frame_reader_done(&c->reader);
    ho_frame_reader_init(&c->reader, HO_FRAME_LIMIT_HANDSHAKE);
    c->rbuf_off = c->rbuf_end = 0;
    for (unsigned i = 0; i < c->fdq_len; i++)
        close(c->fdq[i]);
    c->fdq_len = 0;
    c->send_limit = HO_FRAME_LIMIT_HANDSHAKE;
    c->dead = 0;
    c->conn_err = 0;
    c->conn_err_msg[0] = '\0';
    c->send_broken = false;
    c->read_why[0] = '\0';
    atomic_store(&c->shutting_down, 0);
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < c->ncaps; i++)
        free(c->caps[i]);
    c->ncaps = 0;
}

/* An earlier session's range let go of: its pages replaced by anonymous
 * memory (stale pointers read zeros instead of faulting), the range kept
 * reserved; unmapped when that fails.  Under mu. */
static void blank_pool(struct hoc_old_pool *o)
{
    void *p = mmap(o->p, (size_t)o->size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
        munmap(o->p, (size_t)o->size);
        memset(o, 0, sizeof(*o));
    }
    o->users = 0;
}

/* The old session's pool range set aside (under mu): kept intact while
 * replays staged on it have yet to re-stage (their host copies are there),
 * else blanked; the oldest entry is unmapped when all are taken. */
static void retire_pool(ho_client *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->pool) {
        struct hoc_old_pool *o = NULL;
        for (unsigned i = 0; i < HOC_OLD_POOLS && !o; i++)
            if (!c->old[i].p)
                o = &c->old[i];
        for (unsigned i = 0; i < HOC_OLD_POOLS && !o; i++)
            if (c->old[i].users == 0)
                o = &c->old[i];
        if (!o) {
            o = &c->old[0];
            for (unsigned i = 1; i < HOC_OLD_POOLS; i++)
                if (c->old[i].epoch < o->epoch)
                    o = &c->old[i];
        }
        if (o->p)
            munmap(o->p, (size_t)o->size);
        o->p = c->pool;
        o->size = c->pool_size;
        o->epoch = c->epoch;
        o->users = c->staged;
        if (!o->users)
            blank_pool(o);
    }
    c->staged = 0;
    c->pool = NULL;
    c->pool_size = 0;
    pthread_mutex_unlock(&c->mu);
}

uint8_t *hoc_pool_hold(ho_client *c, uint64_t *ret_epoch)
{
    pthread_mutex_lock(&c->mu);
    uint8_t *p = atomic_load(&c->session_id) ? c->pool : NULL;
    if (p)
        c->staged++;
    *ret_epoch = c->epoch;
    pthread_mutex_unlock(&c->mu);
    return p;
}

void hoc_pool_put(ho_client *c, uint64_t epoch)
{
    pthread_mutex_lock(&c->mu);
    if (epoch == c->epoch) {
        if (c->staged)
            c->staged--;
    } else {
        for (unsigned i = 0; i < HOC_OLD_POOLS; i++) {
            struct hoc_old_pool *o = &c->old[i];
            if (o->p && o->epoch == epoch && o->users && --o->users == 0)
                blank_pool(o);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

const uint8_t *hoc_old_pool(ho_client *c, uint64_t epoch,
                            uint64_t *ret_size)
{
    const uint8_t *p = NULL;
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < HOC_OLD_POOLS && !p; i++)
        if (c->old[i].p && c->old[i].epoch == epoch && c->old[i].users) {
            p = c->old[i].p;
            *ret_size = c->old[i].size;
        }
    pthread_mutex_unlock(&c->mu);
    return p;
}

int hoc_reconnect_on(ho_client *c)
{
    pthread_mutex_lock(&c->mu);
    int on = c->rc_attempts > 0;
    pthread_mutex_unlock(&c->mu);
    return on;
}

/* One attempt on a connected fd: handshake, re-register. */
static int fresh_session(ho_client *c, int fd)
{
    transport_renew(c, fd);
    int rc = handshake(c);
    if (rc < 0)
        return rc;
    if (!c->reg_wanted)
        return 0;
    retire_pool(c);
    atomic_store(&c->session_id, 0);
    set_register_state(c, 0);
    char job[sizeof(c->reg_job)];
    memcpy(job, c->reg_job, sizeof(job));
    return ho_register(c, job[0] ? job : NULL, c->reg_device, c->reg_budget);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int hoc_reconnect(ho_client *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->reconnecting || !c->dead || c->pending || c->reader_busy) {
        int rc = !c->dead && !c->reconnecting ? 0 : HO_E_DISCONNECTED;
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    c->reconnecting = true;
    c->rc_thread = pthread_self();
    unsigned attempts = c->rc_attempts, cap = c->rc_wait_ms;
    char lost[HOC_ERRLEN];
    snprintf(lost, sizeof(lost), "%s", c->last_error);
    pthread_mutex_unlock(&c->mu);

    unsigned wait = HOC_RECONNECT_FIRST_MS < cap ? HOC_RECONNECT_FIRST_MS
                                                 : cap;
    int rc = HO_E_DISCONNECTED;
    char why[HOC_ERRLEN] = "";
    for (unsigned i = 0; i < attempts; i++) {
        if (i) {
            sleep_ms(wait);
            wait = wait > cap / 2 ? cap : wait * 2;
        }
        int fd = hoc_socket_connect(c->socket_path);
        if (fd < 0) {
            rc = fd;
            snprintf(why, sizeof(why), "%s", strerror(-fd));
            continue;
        }
        rc = fresh_session(c, fd);
        if (rc == 0)
            break;
        ho_last_error(c, why, sizeof(why));
        hoc_kill(c, HO_E_DISCONNECTED);
    }
    pthread_mutex_lock(&c->mu);
    c->reconnecting = false;
    if (rc == 0) {
        c->reconnects++;
        c->epoch++;
    } else {
        if (!c->dead)
            c->dead = HO_E_DISCONNECTED;
        snprintf(c->last_error, sizeof(c->last_error),
                 "%.200s; %u reconnect attempt%s failed (last: %.200s)",
                 lost, attempts, attempts == 1 ? "" : "s", why);
    }
    pthread_mutex_unlock(&c->mu);
    return rc == 0 ? 0 : HO_E_DISCONNECTED;
}

HO_EXPORT uint64_t ho_session_id(const ho_client *c)
{
    return atomic_load(&((ho_client *)c)->session_id);
}

static bool registered(const ho_client *c)
{
    return ho_session_id(c) != 0;
}

HO_EXPORT uint64_t ho_hbm_granted(const ho_client *c)
{
    return registered(c) ? c->hbm_granted : 0;
}

HO_EXPORT int ho_session_device(const ho_client *c)
{
    return registered(c) ? c->device : -1;
}

HO_EXPORT void *ho_pool_base(const ho_client *c)
{
    return registered(c) ? c->pool : NULL;
}

HO_EXPORT uint64_t ho_pool_size(const ho_client *c)
{
    return registered(c) ? c->pool_size : 0;
}

HO_EXPORT uint64_t ho_pool_arena_id(const ho_client *c)
{
    return registered(c) ? c->arena_id : 0;
}

HO_EXPORT uint64_t ho_pool_alignment(const ho_client *c)
{
    return registered(c) ? c->ddr_alignment : 0;
}

HO_EXPORT int ho_set_node_options(ho_client *c, double weight,
                                  double max_slowdown, int sync)
{
    if (!c || !(weight >= 0) || !(max_slowdown == 0 || max_slowdown >= 1))
        return -EINVAL;
    c->node_weight = weight;
    c->node_max_slowdown = max_slowdown;
    c->node_sync = sync != 0;
    return 0;
}
