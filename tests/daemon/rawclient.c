/* tests/daemon/rawclient.c - see rawclient.h. */
#include "tests/daemon/rawclient.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/harness.h"

static uint64_t next_rid = 1;

static int scale(int ms)
{
    return ho_harness_under_valgrind() ? ms * 10 : ms;
}

int rc_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

int rc_send_raw(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int rc_send(int fd, Hyperoffload__Envelope *env)
{
    uint8_t *buf;
    size_t len;
    int rc = ho_frame_encode(env, &buf, &len);
    if (rc < 0)
        return rc;
    rc = rc_send_raw(fd, buf, len);
    free(buf);
    return rc;
}

/* Descriptors received with a frame: kept up to max, others closed. */
typedef struct fd_sink {
    int *fds;
    int max, n;
} fd_sink;

/* Read exactly len bytes; collect passed descriptors into sink (NULL:
 * close them). */
static int read_full(int fd, uint8_t *buf, size_t len, fd_sink *sink,
                     int timeout_ms)
{
    size_t got = 0;
    while (got < len) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, timeout_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            return -ETIMEDOUT;
        union {
            char b[CMSG_SPACE(sizeof(int) * 8)];
            struct cmsghdr align;
        } u;
        struct iovec iov = {.iov_base = buf + got, .iov_len = len - got};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = u.b,
                             .msg_controllen = sizeof(u.b)};
        ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == ECONNRESET ? HO_E_DISCONNECTED : -errno;
        }
        if (n == 0)
            return HO_E_DISCONNECTED;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm;
             cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                continue;
            int nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < nfd; i++) {
                int x;
                memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                if (sink && sink->n < sink->max)
                    sink->fds[sink->n++] = x;
                else
                    close(x);
            }
        }
        got += (size_t)n;
    }
    return 0;
}

static int recv_frame(int fd, Hyperoffload__Envelope **ret, fd_sink *sink,
                      int timeout_ms)
{
    uint8_t hdr[4];
    int to = scale(timeout_ms);
    int rc = read_full(fd, hdr, 4, sink, to);
    if (rc < 0)
        return rc;
    uint32_t n = ho_frame_header_len(hdr);
    if (n == 0 || n > HO_FRAME_LIMIT_MAX)
        return HO_E_PROTOCOL;
    uint8_t *buf = malloc(n);
    if (!buf)
        return -ENOMEM;
    rc = read_full(fd, buf, n, sink, to);
    if (rc == 0)
        rc = ho_frame_decode(buf, n, ret);
    free(buf);
    return rc;
}

int rc_recv(int fd, Hyperoffload__Envelope **ret, int *ret_fd,
            int timeout_ms)
{
    if (ret_fd)
        *ret_fd = -1;
    fd_sink sink = {.fds = ret_fd, .max = ret_fd ? 1 : 0, .n = 0};
    return recv_frame(fd, ret, &sink, timeout_ms);
}

int rc_recv_fds(int fd, Hyperoffload__Envelope **ret, int *fds, int max,
                int *ret_n, int timeout_ms)
{
    fd_sink sink = {.fds = fds, .max = max, .n = 0};
    int rc = recv_frame(fd, ret, &sink, timeout_ms);
    *ret_n = sink.n;
    if (rc < 0) {
        for (int i = 0; i < sink.n; i++)
            close(fds[i]);
        *ret_n = 0;
    }
    return rc;
}

int rc_recv_reply(int fd, Hyperoffload__Envelope **ret, int *ret_fd)
{
    for (;;) {
        int rc = rc_recv(fd, ret, ret_fd, RC_TIMEOUT_MS);
        if (rc < 0)
            return rc;
        if ((*ret)->body_case == HYPEROFFLOAD__ENVELOPE__BODY_EVENT &&
            (*ret)->request_id == 0) {
            ho_frame_envelope_free(*ret);
            continue;
        }
        return 0;
    }
}

int rc_wait_closed(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int pr;
    do
        pr = poll(&p, 1, scale(timeout_ms));
    while (pr < 0 && errno == EINTR);
    if (pr == 0)
        return -ETIMEDOUT;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
        return 1;
    return 0;
}

int rc_hello(int fd, uint32_t min_version, uint32_t max_version,
             Hyperoffload__Envelope **ret)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__Hello h = HYPEROFFLOAD__HELLO__INIT;
    h.min_version = min_version;
    h.max_version = max_version;
    h.client_name = "rawclient";
    h.pid = (uint32_t)getpid();
    h.device = -1;
    env.version = HO_PROTO_VERSION;
    env.request_id = next_rid++;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    int rc = rc_send(fd, &env);
    if (rc < 0)
        return rc;
    return rc_recv(fd, ret, NULL, RC_TIMEOUT_MS);
}

int rc_open(const char *path)
{
    int fd = rc_connect(path);
    if (fd < 0)
        return fd;
    Hyperoffload__Envelope *w = NULL;
    int rc = rc_hello(fd, 1, 1, &w);
    if (rc == 0 && w->body_case != HYPEROFFLOAD__ENVELOPE__BODY_WELCOME)
        rc = rc_error_code(w) ? rc_error_code(w) : HO_E_PROTOCOL;
    ho_frame_envelope_free(w);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int rc_call(int fd, Hyperoffload__Envelope *env, Hyperoffload__Envelope **ret,
            int *ret_fd)
{
    env->version = HO_PROTO_VERSION;
    env->request_id = next_rid++;
    int rc = rc_send(fd, env);
    if (rc < 0)
        return rc;
    rc = rc_recv_reply(fd, ret, ret_fd);
    if (rc == 0 && (*ret)->request_id != env->request_id) {
        ho_frame_envelope_free(*ret);
        *ret = NULL;
        return HO_E_PROTOCOL;
    }
    return rc;
}

int rc_call_fds(int fd, Hyperoffload__Envelope *env,
                Hyperoffload__Envelope **ret, int *fds, int max, int *ret_n)
{
    env->version = HO_PROTO_VERSION;
    env->request_id = next_rid++;
    *ret_n = 0;
    int rc = rc_send(fd, env);
    if (rc < 0)
        return rc;
    for (;;) {
        rc = rc_recv_fds(fd, ret, fds, max, ret_n, RC_TIMEOUT_MS);
        if (rc < 0)
            return rc;
        if ((*ret)->body_case == HYPEROFFLOAD__ENVELOPE__BODY_EVENT &&
            (*ret)->request_id == 0) {
            ho_frame_envelope_free(*ret);
            for (int i = 0; i < *ret_n; i++)
                close(fds[i]);
            *ret_n = 0;
            continue;
        }
        break;
    }
    if ((*ret)->request_id != env->request_id) {
        ho_frame_envelope_free(*ret);
        *ret = NULL;
        for (int i = 0; i < *ret_n; i++)
            close(fds[i]);
        *ret_n = 0;
        return HO_E_PROTOCOL;
    }
    return 0;
}

int rc_error_code(const Hyperoffload__Envelope *env)
{
    if (!env || env->body_case != HYPEROFFLOAD__ENVELOPE__BODY_ERROR)
        return 0;
    return ho_frame_error_code(env->error);
}

const char *rc_error_message(const Hyperoffload__Envelope *env)
{
    if (!env || env->body_case != HYPEROFFLOAD__ENVELOPE__BODY_ERROR ||
        !env->error->message)
        return "";
    return env->error->message;
}

int rc_register(int fd, const char *job, int32_t device, uint64_t budget,
                Hyperoffload__Envelope **ret, int *ret_memfd)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__RegisterRequest r = HYPEROFFLOAD__REGISTER_REQUEST__INIT;
    r.job = (char *)(job ? job : "");
    r.device = device;
    r.hbm_budget = budget;
    r.client_name = "rawclient";
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REQUEST;
    env.register_request = &r;
    return rc_call(fd, &env, ret, ret_memfd);
}

int rc_alloc(int fd, uint64_t bytes, Hyperoffload__Envelope **ret)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__AllocRequest r = HYPEROFFLOAD__ALLOC_REQUEST__INIT;
    r.bytes = bytes;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST;
    env.alloc_request = &r;
    return rc_call(fd, &env, ret, NULL);
}

int rc_free(int fd, uint64_t extent, Hyperoffload__Envelope **ret)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__FreeRequest r = HYPEROFFLOAD__FREE_REQUEST__INIT;
    r.extent_id = extent;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_FREE_REQUEST;
    env.free_request = &r;
    return rc_call(fd, &env, ret, NULL);
}

int rc_move(int fd, uint64_t extent, int dir, Hyperoffload__Envelope **ret)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__MoveRequest r = HYPEROFFLOAD__MOVE_REQUEST__INIT;
    r.extent_id = extent;
    r.direction = (Hyperoffload__MoveDirection)dir;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REQUEST;
    env.move_request = &r;
    return rc_call(fd, &env, ret, NULL);
}

int rc_stats(int fd, Hyperoffload__Envelope **ret)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__StatsRequest r = HYPEROFFLOAD__STATS_REQUEST__INIT;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST;
    env.stats_request = &r;
    return rc_call(fd, &env, ret, NULL);
}

int rc_status(int fd, Hyperoffload__Envelope **ret)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__StatusRequest r = HYPEROFFLOAD__STATUS_REQUEST__INIT;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &r;
    return rc_call(fd, &env, ret, NULL);
}

int rc_quota(int fd, int op, int kind, uint32_t uid, const char *job,
             int tier, uint64_t limit, Hyperoffload__Envelope **ret)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__QuotaRequest r = HYPEROFFLOAD__QUOTA_REQUEST__INIT;
    Hyperoffload__QuotaEntry e = HYPEROFFLOAD__QUOTA_ENTRY__INIT;
    e.kind = (Hyperoffload__QuotaSubjectKind)kind;
    e.uid = uid;
    e.job = (char *)(job ? job : "");
    e.tier = (Hyperoffload__Tier)tier;
    e.limit = limit;
    r.op = (Hyperoffload__QuotaOp)op;
    r.entry = &e;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REQUEST;
    env.quota_request = &r;
    return rc_call(fd, &env, ret, NULL);
}

uint64_t rc_tier_used(Hyperoffload__TierStats **tiers, size_t n, int tier)
{
    for (size_t i = 0; i < n; i++)
        if ((int)tiers[i]->tier == tier)
            return tiers[i]->used;
    return UINT64_MAX;
}

long long rc_metric(int fd, const char *series)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__MetricsRequest mr = HYPEROFFLOAD__METRICS_REQUEST__INIT;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_METRICS_REQUEST;
    env.metrics_request = &mr;
    Hyperoffload__Envelope *r = NULL;
    if (rc_call(fd, &env, &r, NULL) != 0 ||
        r->body_case != HYPEROFFLOAD__ENVELOPE__BODY_METRICS_REPLY) {
        ho_frame_envelope_free(r);
        return -1;
    }
    long long v = -1;
    size_t n = strlen(series);
    for (const char *p = r->metrics_reply->text; p && *p;) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ') {
            v = atoll(p + n + 1);
            break;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    ho_frame_envelope_free(r);
    return v;
}
