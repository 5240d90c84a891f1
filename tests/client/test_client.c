/*
 * tests/client/test_client.c - libhyperoffload without a daemon: socket
 * path resolution, size formatting/parsing, and the protocol engine against
 * a scripted fake server (a thread serving a Unix socket in a temporary
 * directory): handshake, version refusal, errors with their sentence,
 * descriptor passing and the pool mapping, reply matching across threads
 * with out-of-order replies and interleaved events, unknown bodies, frame
 * limits, replies outside the mapping, and a lost daemon.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/client_internal.h"
#include "proto/frame.h"
#include "hyperoffload/client.h"

static int under_valgrind(void)
{
    const char *v = getenv("HO_UNDER_VALGRIND");
    return v && strcmp(v, "1") == 0;
}

/* ------------------------------------------------------------ temp dirs */

static void make_tmpdir(char *buf, size_t len)
{
    const char *base = getenv("HO_BUILD_DIR");
    char parent[200];
    if (base) {
        snprintf(parent, sizeof(parent), "%s/tmp", base);
        mkdir(parent, 0755);
    } else {
        snprintf(parent, sizeof(parent), "%s",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    }
    snprintf(buf, len, "%s/hoc-XXXXXX", parent);
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

/* ------------------------------------------------------------ fake server */

typedef struct fake fake;
typedef void (*fake_script)(fake *f, int fd);

struct fake {
    char dir[256];
    char path[300];
    int lfd;
    pthread_t thread;
    fake_script script;
    uint32_t max_frame;  /* announced in Welcome */
    /* observations, checked by the test after fake_stop() */
    int ok;              /* script reached its end with expectations met */
    char fail[256];      /* first expectation that did not hold */
    uint64_t u64;        /* script-specific value */
    int joined;
};

#define EXPECT(f, cond)                                                    \
    do {                                                                   \
        if (!(cond) && !(f)->fail[0])                                      \
            snprintf((f)->fail, sizeof((f)->fail), "%s:%d: %s", __FILE__,  \
                     __LINE__, #cond);                                     \
    } while (0)

static int read_full(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static Hyperoffload__Envelope *srv_recv(int fd)
{
    uint8_t hdr[4];
    if (read_full(fd, hdr, 4) < 0)
        return NULL;
    uint32_t n = ho_frame_header_len(hdr);
    if (n == 0 || n > (1u << 20))
        return NULL;
    uint8_t *buf = malloc(n);
    if (!buf)
        return NULL;
    Hyperoffload__Envelope *env = NULL;
    if (read_full(fd, buf, n) == 0 && ho_frame_decode(buf, n, &env) < 0)
        env = NULL;
    free(buf);
    return env;
}

/* Send an envelope; with pass_fd >= 0 the descriptor rides on the frame's
 * first byte as SCM_RIGHTS. */
static int srv_send(int fd, Hyperoffload__Envelope *env, uint64_t rid,
                    int pass_fd)
{
    uint8_t *buf;
    size_t len;
    env->version = 1;
    env->request_id = rid;
    if (ho_frame_encode(env, &buf, &len) < 0)
        return -1;
    int rc;
    if (pass_fd < 0) {
        rc = write_full(fd, buf, len);
    } else {
        union {
            char b[CMSG_SPACE(sizeof(int))];
            struct cmsghdr a;
        } ctrl;
        memset(&ctrl, 0, sizeof(ctrl));
        struct iovec iov = {.iov_base = buf, .iov_len = 1};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = ctrl.b,
                             .msg_controllen = sizeof(ctrl.b)};
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
        rc = sendmsg(fd, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
        if (rc == 0)
            rc = write_full(fd, buf + 1, len - 1);
    }
    free(buf);
    return rc;
}

static void srv_send_ok(int fd, uint64_t rid)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__Ok ok = HYPEROFFLOAD__OK__INIT;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_OK;
    env.ok = &ok;
    srv_send(fd, &env, rid, -1);
}

static void srv_send_error(int fd, uint64_t rid, int code, const char *msg)
{
    Hyperoffload__Envelope env;
    Hyperoffload__Error err;
    ho_frame_set_error(&env, &err, rid, code, msg);
    srv_send(fd, &env, rid, -1);
}

static void srv_send_event(int fd, Hyperoffload__EventKind kind)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__Event ev = HYPEROFFLOAD__EVENT__INIT;
    ev.kind = kind;
    ev.message = "event";
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_EVENT;
    env.event = &ev;
    srv_send(fd, &env, 0, -1);
}

/* Read Hello, answer Welcome.  Returns 0 when the Hello was well formed. */
static int srv_handshake(fake *f, int fd)
{
    Hyperoffload__Envelope *h = srv_recv(fd);
    if (!h)
        return -1;
    EXPECT(f, h->body_case == HYPEROFFLOAD__ENVELOPE__BODY_HELLO);
    EXPECT(f, h->request_id != 0);
    if (h->body_case == HYPEROFFLOAD__ENVELOPE__BODY_HELLO) {
        EXPECT(f, h->hello->min_version == 1 && h->hello->max_version == 1);
        EXPECT(f, h->hello->pid == (uint32_t)getpid());
    }
    static char *caps[] = {"ddr", "flash", "hbm"};
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__Welcome w = HYPEROFFLOAD__WELCOME__INIT;
    w.version = 1;
    w.connection_id = 77;
    w.server_version = "9.8.7";
    w.capabilities = caps;
    w.n_capabilities = 3;
    w.max_frame = f->max_frame;
    w.admin = true;
    w.uid = 1234;
    w.gid = 5678;
    w.pid = 91011;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_WELCOME;
    env.welcome = &w;
    int rc = srv_send(fd, &env, h->request_id, -1);
    ho_frame_envelope_free(h);
    return rc;
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    int fd;
    do {
        fd = accept(f->lfd, NULL, NULL);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        snprintf(f->fail, sizeof(f->fail), "accept: %s", strerror(errno));
        return NULL;
    }
    f->script(f, fd);
    close(fd);
    return NULL;
}

static fake *fake_start(fake_script script)
{
    fake *f = calloc(1, sizeof(*f));
    ck_assert_ptr_nonnull(f);
    make_tmpdir(f->dir, sizeof(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/fake.sock", f->dir);
    f->script = script;
    f->max_frame = 1u << 20;
    f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(f->lfd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    ck_assert_uint_lt(strlen(f->path), sizeof(sa.sun_path));
    strcpy(sa.sun_path, f->path);
    ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(f->lfd, 4), 0);
    ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
    return f;
}

/* Wait for the script to finish (idempotent). */
static void fake_join(fake *f)
{
    if (!f->joined)
        pthread_join(f->thread, NULL);
    f->joined = 1;
}

/* Join the script and release everything; fails the test when the script
 * saw something it did not expect.  Returns the script's u64 and, through
 * ret_ok (may be NULL), whether it reached its end. */
static uint64_t fake_stop(fake *f, int *ret_ok)
{
    fake_join(f);
    close(f->lfd);
    unlink(f->path);
    rmdir(f->dir);
    char fail[256];
    snprintf(fail, sizeof(fail), "%s", f->fail);
    uint64_t v = f->u64;
    if (ret_ok)
        *ret_ok = f->ok;
    free(f);
    ck_assert_msg(fail[0] == '\0', "fake server: %s", fail);
    return v;
}

/* ------------------------------------------------------------ path tests */

START_TEST(test_socket_path)
{
    char buf[HO_SOCKET_PATH_MAX + 1], dir[256], cwd[1024];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    make_tmpdir(dir, sizeof(dir));
    ck_assert_int_eq(chdir(dir), 0);
    unsetenv(HO_SOCKET_ENV);

    /* no local socket: the system path */
    ck_assert_int_eq(ho_socket_path(NULL, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, HO_SOCKET_SYSTEM);
    ck_assert_int_eq(ho_socket_path("", buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, HO_SOCKET_SYSTEM);

    /* a local socket file takes precedence over the system path */
    ck_assert_int_eq(mkdir(".hyperoffload", 0755), 0);
    FILE *fp = fopen(".hyperoffload/hyperoffloadd.sock", "w");
    ck_assert_ptr_nonnull(fp);
    fclose(fp);
    ck_assert_int_eq(ho_socket_path(NULL, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, HO_SOCKET_LOCAL);

    /* HO_SOCKET beats the local file; an empty HO_SOCKET is ignored */
    setenv(HO_SOCKET_ENV, "/tmp/env.sock", 1);
    ck_assert_int_eq(ho_socket_path(NULL, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "/tmp/env.sock");
    setenv(HO_SOCKET_ENV, "", 1);
    ck_assert_int_eq(ho_socket_path(NULL, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, HO_SOCKET_LOCAL);

    /* the explicit argument beats everything */
    setenv(HO_SOCKET_ENV, "/tmp/env.sock", 1);
    ck_assert_int_eq(ho_socket_path("/x/arg.sock", buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "/x/arg.sock");

    /* limits */
    char longp[200];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    longp[0] = '/';
    ck_assert_int_eq(ho_socket_path(longp, buf, sizeof(buf)), -ENAMETOOLONG);
    ck_assert_str_eq(buf, "");
    longp[HO_SOCKET_PATH_MAX] = '\0'; /* exactly the maximum fits */
    ck_assert_int_eq(ho_socket_path(longp, buf, sizeof(buf)), 0);
    ck_assert_uint_eq(strlen(buf), HO_SOCKET_PATH_MAX);
    char small[8];
    ck_assert_int_eq(ho_socket_path("/x/arg.sock", small, sizeof(small)),
                     -ENAMETOOLONG);
    ck_assert_int_eq(ho_socket_path("/x", NULL, 10), -EINVAL);
    ck_assert_int_eq(ho_socket_path("/x", buf, 0), -EINVAL);
    unsetenv(HO_SOCKET_ENV);

    /* connecting to the missing system default fails with -errno, and
     * nothing is allocated */
    ho_client *c = (ho_client *)0x1;
    ck_assert_int_eq(ho_connect(dir, NULL, &c), -ECONNREFUSED);
    ck_assert_ptr_eq(c, (ho_client *)0x1);
    char missing[300];
    snprintf(missing, sizeof(missing), "%s/none.sock", dir);
    ck_assert_int_eq(ho_connect(missing, NULL, &c), -ENOENT);
    longp[HO_SOCKET_PATH_MAX] = 'a'; /* one byte too long again */
    ck_assert_int_eq(ho_connect(longp, NULL, &c), -ENAMETOOLONG);
    ck_assert_int_eq(ho_connect(missing, NULL, NULL), -EINVAL);

    unlink(".hyperoffload/hyperoffloadd.sock");
    rmdir(".hyperoffload");
    ck_assert_int_eq(chdir(cwd), 0);
    rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------ sizes */

START_TEST(test_size_format)
{
    static const struct {
        uint64_t v;
        const char *s;
    } rows[] = {
        {0, "0 B"},
        {1, "1 B"},
        {1023, "1023 B"},
        {1024, "1.0 KiB"},
        {1536, "1.5 KiB"},
        {4096, "4.0 KiB"},
        {1048575, "1.0 MiB"}, /* 1023.999 KiB rounds up to the next unit */
        {1048576, "1.0 MiB"},
        {3u << 29, "1.5 GiB"},
        {2ull << 30, "2.0 GiB"},
        {(1ull << 40) + (1ull << 39), "1.5 TiB"},
        {UINT64_MAX, "16.0 EiB"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        ck_assert_str_eq(ho_size_format(rows[i].v, buf, sizeof(buf)),
                         rows[i].s);
    char tiny[4];
    ck_assert_str_eq(ho_size_format(3u << 29, tiny, sizeof(tiny)), "1.5");
    ck_assert_ptr_null(ho_size_format(1, NULL, 4));
}
END_TEST

START_TEST(test_size_parse)
{
    static const struct {
        const char *s;
        int rc;
        uint64_t v;
    } rows[] = {
        {"0", 0, 0},
        {"4096", 0, 4096},
        {"  4096  ", 0, 4096},
        {"10B", 0, 10},
        {"10 b", 0, 10},
        {"4k", 0, 4096},
        {"4K", 0, 4096},
        {"4Ki", 0, 4096},
        {"4KiB", 0, 4096},
        {"4kib", 0, 4096},
        {"512M", 0, 512ull << 20},
        {"2G", 0, 2ull << 30},
        {"2 GiB", 0, 2ull << 30},
        {"1.5G", 0, 3ull << 29},
        {"1.5GiB", 0, 3ull << 29},
        {".5K", 0, 512},
        {"1.", 0, 1},
        {"0.1K", 0, 102}, /* 102.4 truncated */
        {"1T", 0, 1ull << 40},
        {"1P", 0, 1ull << 50},
        {"15E", 0, 15ull << 60},
        {"16E", -ERANGE, 0},
        {"18446744073709551615", 0, UINT64_MAX},
        {"18446744073709551616", -ERANGE, 0},
        {"15.99999999999999999999E", 0, 0}, /* checked below: no overflow */
        {"", -EINVAL, 0},
        {"   ", -EINVAL, 0},
        {"-1", -EINVAL, 0},
        {"+1", -EINVAL, 0},
        {"G", -EINVAL, 0},
        {".", -EINVAL, 0},
        {"2GB", -EINVAL, 0},
        {"2KB", -EINVAL, 0},
        {"2X", -EINVAL, 0},
        {"2 G i", -EINVAL, 0},
        {"2GiBx", -EINVAL, 0},
        {"1e3", -EINVAL, 0},
        {"0x10", -EINVAL, 0},
        {"1,5G", -EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        uint64_t v = 0xdeadbeef;
        int rc = ho_size_parse(rows[i].s, &v);
        ck_assert_msg(rc == rows[i].rc, "'%s': rc %d, expected %d",
                      rows[i].s, rc, rows[i].rc);
        if (rc < 0)
            ck_assert_uint_eq(v, 0xdeadbeef); /* untouched on failure */
        else if (strncmp(rows[i].s, "15.9", 4) == 0)
            ck_assert(v > (15ull << 60) && v > UINT64_MAX - (1ull << 60));
        else
            ck_assert_msg(v == rows[i].v, "'%s': %llu, expected %llu",
                          rows[i].s, (unsigned long long)v,
                          (unsigned long long)rows[i].v);
    }
    uint64_t v;
    ck_assert_int_eq(ho_size_parse(NULL, &v), -EINVAL);
    ck_assert_int_eq(ho_size_parse("1", NULL), -EINVAL);

    /* formatting then parsing returns a value within the display precision */
    char buf[32];
    ck_assert_int_eq(ho_size_parse(ho_size_format(3u << 29, buf, 32), &v), 0);
    ck_assert_uint_eq(v, 3u << 29);
    ck_assert_str_eq(ho_version(), "0.1.0");
    ck_assert_str_eq(ho_tier_name(HO_TIER_FLASH), "flash");
    ck_assert_str_eq(ho_tier_name((ho_tier)9), "unknown");
}
END_TEST

/* ------------------------------------------------------------ handshake */

static void script_handshake_only(fake *f, int fd)
{
    if (srv_handshake(f, fd) < 0) {
        EXPECT(f, !"handshake");
        return;
    }
    /* a stats request from an unregistered client */
    Hyperoffload__Envelope *r = srv_recv(fd);
    EXPECT(f, r && r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST);
    if (r) {
        Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
        Hyperoffload__StatsReply s = HYPEROFFLOAD__STATS_REPLY__INIT;
        Hyperoffload__TierStats t1 = HYPEROFFLOAD__TIER_STATS__INIT;
        Hyperoffload__TierStats t2 = HYPEROFFLOAD__TIER_STATS__INIT;
        Hyperoffload__TierStats *ts[] = {&t1, &t2};
        t1.tier = HYPEROFFLOAD__TIER__TIER_DDR;
        t1.name = "ddr";
        t1.capacity = 1u << 30;
        t1.used = 4096;
        t1.free = (1u << 30) - 4096;
        t1.fragmentation = 0.25;
        t1.extents = 1;
        t1.detail = "numa node 0";
        t2.tier = HYPEROFFLOAD__TIER__TIER_FLASH;
        t2.name = "flash:/x";
        t2.capacity = 2u << 30;
        s.tiers = ts;
        s.n_tiers = 2;
        env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY;
        env.stats_reply = &s;
        srv_send(fd, &env, r->request_id, -1);
        ho_frame_envelope_free(r);
    }
    /* wait for the client to close */
    char b;
    EXPECT(f, read(fd, &b, 1) == 0);
    f->ok = 1;
}

START_TEST(test_handshake)
{
    fake *f = fake_start(script_handshake_only);
    f->max_frame = 100; /* below the handshake limit: clamped up */
    ho_client *c = NULL;
    ck_assert_int_eq(ho_connect(f->path, "unit", &c), 0);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(ho_connection_id(c), 77);
    ck_assert_uint_eq(ho_protocol_version(c), 1);
    ck_assert_str_eq(ho_server_version(c), "9.8.7");
    ck_assert_uint_eq(ho_max_frame(c), HO_FRAME_LIMIT_HANDSHAKE);
    ck_assert_int_eq(ho_is_admin(c), 1);
    uint32_t uid = 0, gid = 0, pid = 0;
    ho_peer_identity(c, &uid, &gid, &pid);
    ck_assert_uint_eq(uid, 1234);
    ck_assert_uint_eq(gid, 5678);
    ck_assert_uint_eq(pid, 91011);
    ho_peer_identity(c, NULL, NULL, NULL);
    ck_assert_str_eq(ho_capability(c, 0), "ddr");
    ck_assert_str_eq(ho_capability(c, 2), "hbm");
    ck_assert_ptr_null(ho_capability(c, 3));
    ck_assert_int_eq(ho_has_capability(c, "flash"), 1);
    ck_assert_int_eq(ho_has_capability(c, "plan"), 0);
    ck_assert_int_eq(ho_has_capability(c, NULL), 0);
    ck_assert_str_eq(ho_socket(c), f->path);
    ck_assert_uint_eq(ho_session_id(c), 0);
    ck_assert_ptr_null(ho_pool_base(c));
    ck_assert_uint_eq(ho_pool_size(c), 0);
    ck_assert_int_eq(ho_session_device(c), -1);
    ck_assert_int_eq(ho_shutting_down(c), 0);
    char msg[64];
    ck_assert_str_eq(ho_last_error(c, msg, sizeof(msg)), "");

    ho_tier_stats ts[1];
    size_t n = 0;
    ho_usage u = {.ddr_bytes = 99};
    ck_assert_int_eq(ho_stats(c, ts, 1, &n, &u), 0);
    ck_assert_uint_eq(n, 2); /* reports all, copies what fits */
    ck_assert_int_eq(ts[0].tier, HO_TIER_DDR);
    ck_assert_str_eq(ts[0].name, "ddr");
    ck_assert_uint_eq(ts[0].capacity, 1u << 30);
    ck_assert_uint_eq(ts[0].used, 4096);
    ck_assert_double_eq(ts[0].fragmentation, 0.25);
    ck_assert_str_eq(ts[0].detail, "numa node 0");
    ck_assert_uint_eq(u.ddr_bytes, 0); /* no session usage in the reply */
    ck_assert_int_eq(ho_stats(c, NULL, 1, &n, &u), -EINVAL);
    ck_assert_ptr_null(ho_close(c));
    ck_assert_ptr_null(ho_close(NULL));
    { int ok = 0; fake_stop(f, &ok); ck_assert_int_eq(ok, 1); }
}
END_TEST

static void script_version_refused(fake *f, int fd)
{
    Hyperoffload__Envelope *h = srv_recv(fd);
    EXPECT(f, h != NULL);
    srv_send_error(fd, h ? h->request_id : 0, HO_E_VERSION,
                   "client speaks 1..1, daemon speaks 2..3");
    ho_frame_envelope_free(h);
}

START_TEST(test_version_refused)
{
    fake *f = fake_start(script_version_refused);
    ho_client *c = NULL;
    ck_assert_int_eq(ho_connect(f->path, "unit", &c), HO_E_VERSION);
    ck_assert_ptr_null(c);
    fake_stop(f, NULL);
}
END_TEST

static void script_bad_welcome_version(fake *f, int fd)
{
    Hyperoffload__Envelope *h = srv_recv(fd);
    EXPECT(f, h != NULL);
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__Welcome w = HYPEROFFLOAD__WELCOME__INIT;
    w.version = 5; /* outside what the client offered */
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_WELCOME;
    env.welcome = &w;
    srv_send(fd, &env, h ? h->request_id : 0, -1);
    ho_frame_envelope_free(h);
}

static void script_close_at_once(fake *f, int fd)
{
    (void)f;
    (void)fd; /* fake_main closes */
}

static void script_garbage(fake *f, int fd)
{
    Hyperoffload__Envelope *h = srv_recv(fd);
    EXPECT(f, h != NULL);
    ho_frame_envelope_free(h);
    static const uint8_t junk[] = {0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff};
    write_full(fd, junk, sizeof(junk));
}

static void script_reply_not_welcome(fake *f, int fd)
{
    Hyperoffload__Envelope *h = srv_recv(fd);
    EXPECT(f, h != NULL);
    srv_send_ok(fd, h ? h->request_id : 0);
    ho_frame_envelope_free(h);
}

START_TEST(test_handshake_failures)
{
    ho_client *c = NULL;
    fake *f = fake_start(script_bad_welcome_version);
    ck_assert_int_eq(ho_connect(f->path, NULL, &c), HO_E_VERSION);
    fake_stop(f, NULL);
    f = fake_start(script_close_at_once);
    ck_assert_int_eq(ho_connect(f->path, NULL, &c), HO_E_DISCONNECTED);
    fake_stop(f, NULL);
    f = fake_start(script_garbage);
    ck_assert_int_eq(ho_connect(f->path, NULL, &c), HO_E_PROTOCOL);
    fake_stop(f, NULL);
    f = fake_start(script_reply_not_welcome);
    ck_assert_int_eq(ho_connect(f->path, NULL, &c), HO_E_PROTOCOL);
    fake_stop(f, NULL);
    ck_assert_ptr_null(c);

    char name[HO_CLIENT_MAX_NAME + 2];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    ck_assert_int_eq(ho_connect("/nonexistent.sock", name, &c),
                     HO_E_INVALID_SIZE);
}
END_TEST

/* ------------------------------------------------------------ register */

#define ARENA_SIZE (1u << 20)

static void reply_register(fake *f, int fd, uint64_t rid, uint8_t **ret_map,
                           bool send_fd)
{
    int mfd = memfd_create("fake-arena", MFD_CLOEXEC);
    EXPECT(f, mfd >= 0);
    EXPECT(f, ftruncate(mfd, ARENA_SIZE) == 0);
    uint8_t *map = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                        mfd, 0);
    EXPECT(f, map != MAP_FAILED);
    memset(map + 8192, 0xA5, 4096);

    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__RegisterReply rr = HYPEROFFLOAD__REGISTER_REPLY__INIT;
    Hyperoffload__ArenaInfo ai = HYPEROFFLOAD__ARENA_INFO__INIT;
    ai.arena_id = 7;
    ai.map_size = ARENA_SIZE;
    ai.fd_attached = true;
    ai.numa_node = -1;
    rr.session_id = 42;
    rr.device = 1;
    rr.hbm_granted = 1u << 30;
    rr.arena = &ai;
    rr.ddr_alignment = 4096;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY;
    env.register_reply = &rr;
    srv_send(fd, &env, rid, send_fd ? mfd : -1);
    close(mfd);
    *ret_map = map;
}

static void reply_alloc(int fd, uint64_t rid, uint64_t id, uint64_t arena,
                        uint64_t off, uint64_t len)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__AllocReply a = HYPEROFFLOAD__ALLOC_REPLY__INIT;
    a.extent_id = id;
    a.arena_id = arena;
    a.offset = off;
    a.length = len;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REPLY;
    env.alloc_reply = &a;
    srv_send(fd, &env, rid, -1);
}

static void script_register(fake *f, int fd)
{
    uint8_t *map = NULL;
    if (srv_handshake(f, fd) < 0)
        return;
    Hyperoffload__Envelope *r = srv_recv(fd);
    EXPECT(f, r && r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REQUEST);
    if (!r || !r->register_request)
        return;
    EXPECT(f, strcmp(r->register_request->job, "jobA") == 0);
    EXPECT(f, r->register_request->device == 1);
    EXPECT(f, r->register_request->hbm_budget == (1u << 30));
    EXPECT(f, strcmp(r->register_request->client_name, "unit") == 0);
    reply_register(f, fd, r->request_id, &map, true);
    ho_frame_envelope_free(r);

    /* alloc: a good reply */
    r = srv_recv(fd);
    EXPECT(f, r && r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST);
    if (r) {
        EXPECT(f, r->alloc_request->bytes == 5000);
        reply_alloc(fd, r->request_id, 5, 7, 8192, 8192);
        ho_frame_envelope_free(r);
    }
    /* alloc: a reply naming another arena -> the client frees it */
    r = srv_recv(fd);
    EXPECT(f, r && r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST);
    if (r) {
        reply_alloc(fd, r->request_id, 6, 8, 0, 4096);
        ho_frame_envelope_free(r);
    }
    r = srv_recv(fd);
    EXPECT(f, r && r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_FREE_REQUEST &&
                  r->free_request->extent_id == 6);
    if (r) {
        srv_send_ok(fd, r->request_id);
        ho_frame_envelope_free(r);
    }
    /* alloc: a range past the end of the mapping -> freed too */
    r = srv_recv(fd);
    if (r) {
        reply_alloc(fd, r->request_id, 9, 7, ARENA_SIZE - 4096, 8192);
        ho_frame_envelope_free(r);
    }
    r = srv_recv(fd);
    EXPECT(f, r && r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_FREE_REQUEST &&
                  r->free_request->extent_id == 9);
    if (r) {
        srv_send_ok(fd, r->request_id);
        ho_frame_envelope_free(r);
    }
    /* free of extent 5: by now the client wrote its bytes */
    r = srv_recv(fd);
    EXPECT(f, r && r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_FREE_REQUEST);
    if (r) {
        EXPECT(f, r->free_request->extent_id == 5);
        EXPECT(f, map && map[8192] == 0x11 && map[8192 + 4999] == 0x22);
        srv_send_error(fd, r->request_id, HO_E_BUSY,
                       "extent 5 has a move in flight");
        ho_frame_envelope_free(r);
    }
    /* spill and fill */
    for (int k = 0; k < 2; k++) {
        r = srv_recv(fd);
        EXPECT(f, r && r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REQUEST);
        if (!r)
            break;
        Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
        Hyperoffload__MoveReply m = HYPEROFFLOAD__MOVE_REPLY__INIT;
        m.extent_id = r->move_request->extent_id;
        m.residency = r->move_request->direction ==
                              HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL
                          ? HYPEROFFLOAD__TIER__TIER_FLASH
                          : HYPEROFFLOAD__TIER__TIER_DDR;
        m.bytes = 8192;
        m.duration_us = 12.5;
        env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REPLY;
        env.move_reply = &m;
        srv_send(fd, &env, r->request_id, -1);
        ho_frame_envelope_free(r);
    }
    /* a move reply for the wrong extent */
    r = srv_recv(fd);
    if (r) {
        Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
        Hyperoffload__MoveReply m = HYPEROFFLOAD__MOVE_REPLY__INIT;
        m.extent_id = 999;
        m.residency = HYPEROFFLOAD__TIER__TIER_FLASH;
        env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REPLY;
        env.move_reply = &m;
        srv_send(fd, &env, r->request_id, -1);
        ho_frame_envelope_free(r);
    }
    char b;
    EXPECT(f, read(fd, &b, 1) == 0);
    if (map && map != MAP_FAILED)
        munmap(map, ARENA_SIZE);
    f->ok = 1;
}

START_TEST(test_register_and_extents)
{
    fake *f = fake_start(script_register);
    ho_client *c = NULL;
    char msg[512];
    ck_assert_int_eq(ho_connect(f->path, "unit", &c), 0);
    ck_assert_int_eq(ho_register(c, "jobA", 1, 1u << 30), 0);
    ck_assert_uint_eq(ho_session_id(c), 42);
    ck_assert_int_eq(ho_session_device(c), 1);
    ck_assert_uint_eq(ho_hbm_granted(c), 1u << 30);
    ck_assert_uint_eq(ho_pool_size(c), ARENA_SIZE);
    ck_assert_uint_eq(ho_pool_arena_id(c), 7);
    ck_assert_uint_eq(ho_pool_alignment(c), 4096);
    uint8_t *base = ho_pool_base(c);
    ck_assert_ptr_nonnull(base);
    /* the mapping shows what the server wrote through its own mapping */
    ck_assert_uint_eq(base[8192], 0xA5);
    ck_assert_uint_eq(base[8192 + 4095], 0xA5);
    /* a second registration is refused locally */
    ck_assert_int_eq(ho_register(c, "jobA", 1, 0), HO_E_ALREADY);
    ck_assert_str_eq(ho_last_error(c, msg, sizeof(msg)),
                     "this connection is already registered (session 42)");

    ho_extent e = {0};
    ck_assert_int_eq(ho_extent_alloc(c, 5000, &e), 0);
    ck_assert_uint_eq(e.id, 5);
    ck_assert_uint_eq(e.arena_id, 7);
    ck_assert_uint_eq(e.offset, 8192);
    ck_assert_uint_eq(e.length, 8192);
    ck_assert_ptr_eq(e.ptr, base + 8192);
    ho_extent bad = {.id = 12345};
    ck_assert_int_eq(ho_extent_alloc(c, 4096, &bad), HO_E_PROTOCOL);
    ck_assert_uint_eq(bad.id, 12345); /* untouched */
    ck_assert_int_eq(ho_extent_alloc(c, 4096, &bad), HO_E_PROTOCOL);
    ck_assert_uint_eq(bad.id, 12345);
    memset(e.ptr, 0x11, 4999);
    ((uint8_t *)e.ptr)[4999] = 0x22;
    ck_assert_int_eq(ho_extent_free(c, 5), HO_E_BUSY);
    ck_assert_str_eq(ho_last_error(c, msg, sizeof(msg)),
                     "extent 5 has a move in flight");
    char tiny[6];
    ck_assert_str_eq(ho_last_error(c, tiny, sizeof(tiny)), "exten");
    ck_assert_str_eq(ho_last_error(c, NULL, 0), "");

    ho_move_result m = {0};
    ck_assert_int_eq(ho_extent_spill(c, 5, &m), 0);
    ck_assert_int_eq(m.residency, HO_TIER_FLASH);
    ck_assert_uint_eq(m.bytes, 8192);
    ck_assert_double_eq(m.duration_us, 12.5);
    ck_assert_int_eq(ho_extent_fill(c, 5, NULL), 0);
    ck_assert_int_eq(ho_extent_spill(c, 5, &m), HO_E_PROTOCOL);
    ho_close(c);
    { int ok = 0; fake_stop(f, &ok); ck_assert_int_eq(ok, 1); }
}
END_TEST

static void script_register_no_fd(fake *f, int fd)
{
    uint8_t *map = NULL;
    if (srv_handshake(f, fd) < 0)
        return;
    Hyperoffload__Envelope *r = srv_recv(fd);
    if (!r)
        return;
    reply_register(f, fd, r->request_id, &map, false);
    ho_frame_envelope_free(r);
    /* the client must drop the connection */
    char b;
    EXPECT(f, read(fd, &b, 1) == 0);
    if (map && map != MAP_FAILED)
        munmap(map, ARENA_SIZE);
}

START_TEST(test_register_without_fd)
{
    fake *f = fake_start(script_register_no_fd);
    ho_client *c = NULL;
    char msg[512];
    ck_assert_int_eq(ho_connect(f->path, "unit", &c), 0);
    ck_assert_int_eq(ho_register(c, "", -1, 0), HO_E_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(ho_last_error(c, msg, sizeof(msg)),
                                 "descriptor that did not arrive"));
    ck_assert_uint_eq(ho_session_id(c), 0);
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, NULL), HO_E_DISCONNECTED);
    ho_close(c);
    fake_stop(f, NULL);
}
END_TEST

/* ------------------------------------------------------------ concurrency */

/* Serve MoveRequests: batch whatever has arrived, answer the batch in
 * reverse order with an event in between; reply bytes = 3 * extent id. */
static void script_concurrent(fake *f, int fd)
{
    if (srv_handshake(f, fd) < 0)
        return;
    Hyperoffload__Envelope *batch[64];
    uint64_t served = 0;
    for (;;) {
        size_t n = 0;
        Hyperoffload__Envelope *r = srv_recv(fd);
        if (!r)
            break;
        batch[n++] = r;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        while (n < 64 && poll(&p, 1, 1) == 1 && (p.revents & POLLIN)) {
            r = srv_recv(fd);
            if (!r)
                break;
            batch[n++] = r;
        }
        srv_send_event(fd, HYPEROFFLOAD__EVENT_KIND__EVENT_QUOTA_CHANGED);
        while (n > 0) {
            r = batch[--n];
            EXPECT(f, r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REQUEST);
            Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
            Hyperoffload__MoveReply m = HYPEROFFLOAD__MOVE_REPLY__INIT;
            m.extent_id = r->move_request->extent_id;
            m.residency = HYPEROFFLOAD__TIER__TIER_FLASH;
            m.bytes = 3 * m.extent_id;
            env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REPLY;
            env.move_reply = &m;
            srv_send(fd, &env, r->request_id, -1);
            ho_frame_envelope_free(r);
            served++;
        }
    }
    f->u64 = served;
    f->ok = 1;
}

typedef struct worker {
    ho_client *c;
    unsigned index, iterations;
    unsigned failures;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (unsigned i = 0; i < w->iterations; i++) {
        uint64_t id = (uint64_t)w->index * 1000000u + i + 1;
        ho_move_result m = {0};
        if (ho_extent_spill(w->c, id, &m) != 0 || m.bytes != 3 * id)
            w->failures++;
    }
    return NULL;
}

START_TEST(test_concurrent_replies)
{
    enum { THREADS = 8 };
    unsigned iters = under_valgrind() ? 40 : 400;
    fake *f = fake_start(script_concurrent);
    ho_client *c = NULL;
    ck_assert_int_eq(ho_connect(f->path, "unit", &c), 0);
    pthread_t th[THREADS];
    worker w[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (worker){.c = c, .index = i, .iterations = iters};
        ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    unsigned failures = 0;
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        failures += w[i].failures;
    }
    ho_close(c);
    int ok = 0;
    uint64_t served = fake_stop(f, &ok);
    ck_assert_int_eq(ok, 1);
    ck_assert_uint_eq(failures, 0);
    ck_assert_uint_eq(served, (uint64_t)THREADS * iters);
}
END_TEST

/* ------------------------------------------------------------ events etc. */

static void script_events(fake *f, int fd)
{
    if (srv_handshake(f, fd) < 0)
        return;
    Hyperoffload__Envelope *r = srv_recv(fd);
    if (!r)
        return;
    /* an envelope with an unknown body field (40, reserved for later) and
     * request id 0: must be ignored */
    static const uint8_t unknown[] = {0, 0, 0, 5, 0x08, 0x01, 0xC2, 0x02, 0x00};
    write_full(fd, unknown, sizeof(unknown));
    srv_send_event(fd, HYPEROFFLOAD__EVENT_KIND__EVENT_SHUTTING_DOWN);
    /* a reply to nobody: dropped */
    srv_send_ok(fd, 987654);
    srv_send_error(fd, r->request_id, HO_E_SHUTTING_DOWN,
                   "the daemon is draining");
    ho_frame_envelope_free(r);
    /* the next request gets an unknown body kind as its reply */
    r = srv_recv(fd);
    if (!r)
        return;
    uint8_t unk_reply[16] = {0, 0, 0, 7, 0x08, 0x01, 0x10,
                             (uint8_t)r->request_id, 0xC2, 0x02, 0x00};
    EXPECT(f, r->request_id < 128);
    write_full(fd, unk_reply, 11);
    ho_frame_envelope_free(r);
    /* then a frame longer than max_frame: the client must give up */
    r = srv_recv(fd);
    if (!r)
        return;
    uint8_t hdr[4];
    ho_frame_header_put(hdr, f->max_frame + 1);
    write_full(fd, hdr, 4);
    ho_frame_envelope_free(r);
    char b;
    EXPECT(f, read(fd, &b, 1) == 0);
    f->ok = 1;
}

START_TEST(test_events_and_limits)
{
    fake *f = fake_start(script_events);
    f->max_frame = HO_FRAME_LIMIT_HANDSHAKE;
    ho_client *c = NULL;
    char msg[512];
    ck_assert_int_eq(ho_connect(f->path, "unit", &c), 0);
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, NULL), HO_E_SHUTTING_DOWN);
    ck_assert_str_eq(ho_last_error(c, msg, sizeof(msg)),
                     "the daemon is draining");
    ck_assert_int_eq(ho_shutting_down(c), 1);
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, NULL), HO_E_PROTOCOL);
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, NULL), HO_E_FRAME_TOO_LARGE);
    ck_assert_ptr_nonnull(strstr(ho_last_error(c, msg, sizeof(msg)),
                                 "frame larger"));
    ck_assert_int_eq(ho_extent_free(c, 1), HO_E_DISCONNECTED);
    ho_close(c);
    { int ok = 0; fake_stop(f, &ok); ck_assert_int_eq(ok, 1); }
}
END_TEST

/* ------------------------------------------------------------ lost daemon */

static void script_die_mid_request(fake *f, int fd)
{
    if (srv_handshake(f, fd) < 0)
        return;
    Hyperoffload__Envelope *r = srv_recv(fd);
    EXPECT(f, r != NULL);
    ho_frame_envelope_free(r);
    f->ok = 1; /* close without answering */
}

START_TEST(test_lost_daemon)
{
    fake *f = fake_start(script_die_mid_request);
    ho_client *c = NULL;
    char msg[256];
    ck_assert_int_eq(ho_connect(f->path, "unit", &c), 0);
    ck_assert_int_eq(ho_extent_spill(c, 1, NULL), HO_E_DISCONNECTED);
    ck_assert_ptr_nonnull(strstr(ho_last_error(c, msg, sizeof(msg)),
                                 "lost"));
    /* every later call says so too, without SIGPIPE */
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, NULL), HO_E_DISCONNECTED);
        ho_extent e;
        ck_assert_int_eq(ho_extent_alloc(c, 4096, &e), HO_E_DISCONNECTED);
        ck_assert_int_eq(ho_register(c, NULL, -1, 0), HO_E_DISCONNECTED);
    }
    ho_close(c);
    { int ok = 0; fake_stop(f, &ok); ck_assert_int_eq(ok, 1); }
}
END_TEST

static void script_fatal_error(fake *f, int fd)
{
    if (srv_handshake(f, fd) < 0)
        return;
    Hyperoffload__Envelope *r = srv_recv(fd);
    EXPECT(f, r != NULL);
    ho_frame_envelope_free(r);
    /* a connection-level error the daemon could not tie to a request */
    srv_send_error(fd, 0, HO_E_PROTOCOL, "garbage on the wire");
    f->ok = 1;
}

START_TEST(test_fatal_error_sentence)
{
    fake *f = fake_start(script_fatal_error);
    ho_client *c = NULL;
    char msg[512];
    ck_assert_int_eq(ho_connect(f->path, "unit", &c), 0);
    /* the call in flight gets the daemon's code and sentence (not
     * HO_E_DISCONNECTED), later calls the dead connection's code */
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, NULL), HO_E_PROTOCOL);
    ck_assert_str_eq(ho_last_error(c, msg, sizeof(msg)),
                     "garbage on the wire");
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, NULL), HO_E_DISCONNECTED);
    ho_close(c);
    {
        int ok = 0;
        fake_stop(f, &ok);
        ck_assert_int_eq(ok, 1);
    }
}
END_TEST

static void script_close_after_handshake(fake *f, int fd)
{
    srv_handshake(f, fd);
    f->ok = 1;
}

START_TEST(test_send_to_closed_peer)
{
    /* The peer is gone before we send: MSG_NOSIGNAL keeps us alive. */
    signal(SIGPIPE, SIG_DFL);
    fake *f = fake_start(script_close_after_handshake);
    ho_client *c = NULL;
    ck_assert_int_eq(ho_connect(f->path, "unit", &c), 0);
    fake_join(f);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(ho_extent_free(c, 1), HO_E_DISCONNECTED);
    ho_close(c);
    { int ok = 0; fake_stop(f, &ok); ck_assert_int_eq(ok, 1); }
}
END_TEST

static Suite *client_suite(void)
{
    Suite *s = suite_create("client");
    TCase *tc = tcase_create("offline");
    tcase_add_test(tc, test_socket_path);
    tcase_add_test(tc, test_size_format);
    tcase_add_test(tc, test_size_parse);
    suite_add_tcase(s, tc);
    tc = tcase_create("fake_server");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_handshake);
    tcase_add_test(tc, test_version_refused);
    tcase_add_test(tc, test_handshake_failures);
    tcase_add_test(tc, test_register_and_extents);
    tcase_add_test(tc, test_register_without_fd);
    tcase_add_test(tc, test_concurrent_replies);
    tcase_add_test(tc, test_events_and_limits);
    tcase_add_test(tc, test_lost_daemon);
    tcase_add_test(tc, test_send_to_closed_peer);
    tcase_add_test(tc, test_fatal_error_sentence);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(client_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
