/* tests/daemon/test_protocol.c - the real daemon against raw frames:
 * handshake and version negotiation, connection-fatal errors (garbage,
 * oversized length, truncated frame, wrong version, unexpected messages)
 * that leave other connections working, unknown bodies, requests before
 * Register. */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/daemon/rawclient.h"

static ho_harness *h;

static void start(void)
{
    h = ho_harness_start_args(NULL);
}

static void stop(void)
{
    int st = ho_harness_free(h);
    h = NULL;
    ck_assert_msg(st == 0, "daemon exit status %d", st);
}

/* The healthy connection still answers a Stats request. */
static void assert_healthy(int fd)
{
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_stats(fd, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY);
    ck_assert_uint_ge(r->stats_reply->n_tiers, 2);
    ho_frame_envelope_free(r);
}

/* Read one Error with `code`, check its message contains `text`, then
 * check the daemon closed the connection. */
static void expect_fatal(int fd, int code, const char *text)
{
    Hyperoffload__Envelope *r = NULL;
    int rc = rc_recv(fd, &r, NULL, RC_TIMEOUT_MS);
    ck_assert_msg(rc == 0, "no reply: %d", rc);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_ERROR);
    ck_assert_int_eq(rc_error_code(r), code);
    ck_assert_msg(strstr(rc_error_message(r), text), "message '%s' lacks '%s'",
                  rc_error_message(r), text);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_wait_closed(fd, RC_TIMEOUT_MS), 1);
    close(fd);
}

static bool has_cap(const Hyperoffload__Welcome *w, const char *cap)
{
    for (size_t i = 0; i < w->n_capabilities; i++)
        if (strcmp(w->capabilities[i], cap) == 0)
            return true;
    return false;
}

START_TEST(handshake_and_version_negotiation)
{
    int fd = rc_connect(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_hello(fd, 1, 1, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_WELCOME);
    const Hyperoffload__Welcome *w = r->welcome;
    ck_assert_uint_eq(w->version, 1);
    ck_assert_uint_eq(r->version, 1);
    ck_assert_str_eq(w->server_version, "0.1.0");
    ck_assert_uint_eq(w->max_frame, 64u << 20);
    ck_assert_uint_gt(w->connection_id, 0);
    ck_assert_uint_eq(w->uid, (uint32_t)getuid());
    ck_assert_uint_eq(w->gid, (uint32_t)getgid());
    ck_assert_uint_eq(w->pid, (uint32_t)getpid());
    ck_assert(w->admin == (getuid() == 0));
    ck_assert(has_cap(w, "ddr"));
    ck_assert(has_cap(w, "flash"));
    ck_assert(has_cap(w, "hbm"));
    ck_assert(has_cap(w, "admin") == (getuid() == 0));
    uint64_t first_id = w->connection_id;
    ho_frame_envelope_free(r);

    /* A wider client range settles on the highest common version. */
    int fd2 = rc_connect(ho_harness_socket(h));
    ck_assert_int_eq(rc_hello(fd2, 0, 7, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_WELCOME);
    ck_assert_uint_eq(r->welcome->version, 1);
    ck_assert_uint_gt(r->welcome->connection_id, first_id);
    ho_frame_envelope_free(r);
    assert_healthy(fd2);
    close(fd2);

    /* No overlap, and an inverted range: HO_E_VERSION, closed. */
    int fd3 = rc_connect(ho_harness_socket(h));
    Hyperoffload__Envelope hello = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__Hello hl = HYPEROFFLOAD__HELLO__INIT;
    hl.min_version = 2;
    hl.max_version = 3;
    hello.version = 2;
    hello.request_id = 5;
    hello.body_case = HYPEROFFLOAD__ENVELOPE__BODY_HELLO;
    hello.hello = &hl;
    ck_assert_int_eq(rc_send(fd3, &hello), 0);
    expect_fatal(fd3, HO_E_VERSION, "client speaks 2..3, daemon speaks 1..1");
    int fd4 = rc_connect(ho_harness_socket(h));
    hl.min_version = 1;
    hl.max_version = 0;
    ck_assert_int_eq(rc_send(fd4, &hello), 0);
    expect_fatal(fd4, HO_E_VERSION, "client speaks 1..0");
    assert_healthy(fd);
    close(fd);
}
END_TEST

START_TEST(garbage_and_bad_lengths_close_only_that_connection)
{
    int healthy = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(healthy, 0);
    uint8_t frame[4 + 16];

    /* Garbage payload before the handshake. */
    int fd = rc_connect(ho_harness_socket(h));
    ho_frame_header_put(frame, 16);
    memset(frame + 4, 0xff, 16);
    ck_assert_int_eq(rc_send_raw(fd, frame, sizeof(frame)), 0);
    expect_fatal(fd, HO_E_PROTOCOL, "does not decode as an Envelope");
    assert_healthy(healthy);

    /* Garbage after the handshake. */
    fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(rc_send_raw(fd, frame, sizeof(frame)), 0);
    expect_fatal(fd, HO_E_PROTOCOL, "does not decode as an Envelope");
    assert_healthy(healthy);

    /* Oversized length before the handshake: 64 KiB limit; the payload is
     * never sent, the daemon must answer from the header alone. */
    fd = rc_connect(ho_harness_socket(h));
    ho_frame_header_put(frame, 70000);
    ck_assert_int_eq(rc_send_raw(fd, frame, 4), 0);
    expect_fatal(fd, HO_E_FRAME_TOO_LARGE,
                 "frame of 70000 bytes is above the limit of 65536 bytes");
    assert_healthy(healthy);

    /* Oversized after the handshake: max_frame (64 MiB). */
    fd = rc_open(ho_harness_socket(h));
    ho_frame_header_put(frame, (64u << 20) + 1);
    ck_assert_int_eq(rc_send_raw(fd, frame, 4), 0);
    expect_fatal(fd, HO_E_FRAME_TOO_LARGE, "above the limit of 67108864");
    fd = rc_open(ho_harness_socket(h));
    ho_frame_header_put(frame, 0xffffffffu);
    ck_assert_int_eq(rc_send_raw(fd, frame, 4), 0);
    expect_fatal(fd, HO_E_FRAME_TOO_LARGE, "4294967295 bytes");
    assert_healthy(healthy);

    /* Zero length. */
    fd = rc_open(ho_harness_socket(h));
    ho_frame_header_put(frame, 0);
    ck_assert_int_eq(rc_send_raw(fd, frame, 4), 0);
    expect_fatal(fd, HO_E_PROTOCOL, "zero-length frame");
    assert_healthy(healthy);
    close(healthy);
}
END_TEST

START_TEST(truncated_frame_at_end_of_stream)
{
    int healthy = rc_open(ho_harness_socket(h));
    uint8_t frame[4 + 10];
    int fd = rc_open(ho_harness_socket(h));
    ho_frame_header_put(frame, 100);
    memset(frame + 4, 0, 10);
    ck_assert_int_eq(rc_send_raw(fd, frame, sizeof(frame)), 0);
    ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
    expect_fatal(fd, HO_E_PROTOCOL, "truncated frame: 10 of 100 bytes");

    fd = rc_connect(ho_harness_socket(h));
    ck_assert_int_eq(rc_send_raw(fd, frame, 2), 0);
    ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
    expect_fatal(fd, HO_E_PROTOCOL, "truncated frame: 2 of 4 header bytes");

    /* A clean half-close gets no error, just the end. */
    fd = rc_open(ho_harness_socket(h));
    ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
    ck_assert_int_eq(rc_wait_closed(fd, RC_TIMEOUT_MS), 1);
    close(fd);
    assert_healthy(healthy);
    close(healthy);
}
END_TEST

static int send_body(int fd, uint32_t version, uint64_t rid,
                     Hyperoffload__Envelope__BodyCase body, void *msg)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    env.version = version;
    env.request_id = rid;
    env.body_case = body;
    /* The oneof shares storage: any member pointer will do. */
    env.hello = msg;
    return rc_send(fd, &env);
}

START_TEST(unexpected_messages_are_fatal)
{
    int healthy = rc_open(ho_harness_socket(h));
    Hyperoffload__StatsRequest sr = HYPEROFFLOAD__STATS_REQUEST__INIT;
    Hyperoffload__Hello hl = HYPEROFFLOAD__HELLO__INIT;
    Hyperoffload__Ok ok = HYPEROFFLOAD__OK__INIT;
    hl.min_version = hl.max_version = 1;

    int fd = rc_connect(ho_harness_socket(h));
    ck_assert_int_eq(send_body(fd, 1, 9,
                               HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST, &sr),
                     0);
    expect_fatal(fd, HO_E_PROTOCOL, "expected Hello as the first message");

    fd = rc_open(ho_harness_socket(h));
    ck_assert_int_eq(send_body(fd, 1, 9, HYPEROFFLOAD__ENVELOPE__BODY_HELLO,
                               &hl), 0);
    expect_fatal(fd, HO_E_PROTOCOL, "Hello after the handshake");

    fd = rc_open(ho_harness_socket(h));
    ck_assert_int_eq(send_body(fd, 1, 9, HYPEROFFLOAD__ENVELOPE__BODY_OK, &ok),
                     0);
    expect_fatal(fd, HO_E_PROTOCOL, "sent by the daemon");

    /* An envelope with no body at all. */
    fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    env.version = 1;
    env.request_id = 3;
    ck_assert_int_eq(rc_send(fd, &env), 0);
    expect_fatal(fd, HO_E_PROTOCOL, "no body");
    assert_healthy(healthy);
    close(healthy);
}
END_TEST

START_TEST(unknown_body_and_wrong_message_version_keep_connection)
{
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    /* Envelope{version 1, request_id 77} + field 63 (length-delimited,
     * empty): a body this daemon does not know (63 stays unused: 48-56
     * are the residency messages). */
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    env.version = 1;
    env.request_id = 77;
    size_t n = hyperoffload__envelope__get_packed_size(&env);
    uint8_t buf[64];
    hyperoffload__envelope__pack(&env, buf + 4);
    buf[4 + n] = (uint8_t)(0x80 | ((63 << 3 | 2) & 0x7f));
    buf[4 + n + 1] = (uint8_t)((63 << 3 | 2) >> 7);
    buf[4 + n + 2] = 0;
    ho_frame_header_put(buf, (uint32_t)(n + 3));
    ck_assert_int_eq(rc_send_raw(fd, buf, 4 + n + 3), 0);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_recv(fd, &r, NULL, RC_TIMEOUT_MS), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_UNSUPPORTED);
    ck_assert_uint_eq(r->request_id, 77);
    ck_assert_ptr_nonnull(strstr(rc_error_message(r), "field 63"));
    ho_frame_envelope_free(r);
    assert_healthy(fd);

    /* A request written in another protocol version: HO_E_VERSION, open. */
    Hyperoffload__StatsRequest sr = HYPEROFFLOAD__STATS_REQUEST__INIT;
    ck_assert_int_eq(send_body(fd, 2, 78,
                               HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST, &sr),
                     0);
    ck_assert_int_eq(rc_recv(fd, &r, NULL, RC_TIMEOUT_MS), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_VERSION);
    ck_assert_uint_eq(r->request_id, 78);
    ho_frame_envelope_free(r);
    assert_healthy(fd);
    close(fd);
}
END_TEST

START_TEST(requests_before_register)
{
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_alloc(fd, 4096, &r), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_NOT_REGISTERED);
    ck_assert_ptr_nonnull(strstr(rc_error_message(r), "RegisterRequest"));
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_free(fd, 1, &r), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_NOT_REGISTERED);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_move(fd, 1, 1, &r), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_NOT_REGISTERED);
    ho_frame_envelope_free(r);
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__PlanRequest pr = HYPEROFFLOAD__PLAN_REQUEST__INIT;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST;
    env.plan_request = &pr;
    ck_assert_int_eq(rc_call(fd, &env, &r, NULL), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_NOT_REGISTERED);
    ho_frame_envelope_free(r);
    /* Stats works unregistered, without a session part. */
    ck_assert_int_eq(rc_stats(fd, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY);
    ck_assert_ptr_null(r->stats_reply->session);
    ck_assert_uint_eq(rc_tier_used(r->stats_reply->tiers,
                                   r->stats_reply->n_tiers,
                                   HYPEROFFLOAD__TIER__TIER_DDR), 0);
    ho_frame_envelope_free(r);
    close(fd);
}
END_TEST


/* A frame carrying a descriptor (RegisterReply) behind megabytes of queued
 * replies: every frame arrives whole and in order, exactly one descriptor
 * arrives, with the register reply, and it is the arena memfd. */
START_TEST(fd_passing_keeps_frame_order)
{
    int fd = rc_open(ho_harness_socket(h));
    uint32_t n = ho_harness_under_valgrind() ? 3000 : 20000;
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__StatsRequest sr = HYPEROFFLOAD__STATS_REQUEST__INIT;
    Hyperoffload__RegisterRequest rr = HYPEROFFLOAD__REGISTER_REQUEST__INIT;
    rr.device = -1;
    env.version = 1;
    size_t cap = 64u << 20, len = 0;
    uint8_t *all = malloc(cap);
    ck_assert_ptr_nonnull(all);
    for (uint32_t i = 1; i <= n + 50; i++) {
        env.request_id = i;
        if (i == n + 1) {
            env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REQUEST;
            env.register_request = &rr;
        } else {
            env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST;
            env.stats_request = &sr;
        }
        uint8_t *one;
        size_t l;
        ck_assert_int_eq(ho_frame_encode(&env, &one, &l), 0);
        ck_assert(len + l <= cap);
        memcpy(all + len, one, l);
        len += l;
        free(one);
    }
    ck_assert_int_eq(rc_send_raw(fd, all, len), 0);
    free(all);
    int fds = 0;
    for (uint32_t i = 1; i <= n + 50; i++) {
        Hyperoffload__Envelope *r = NULL;
        int xfd = -1;
        ck_assert_int_eq(rc_recv(fd, &r, &xfd, RC_TIMEOUT_MS), 0);
        ck_assert_uint_eq(r->request_id, i);
        if (i == n + 1) {
            ck_assert_int_eq(r->body_case,
                             HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY);
            ck_assert(r->register_reply->arena->fd_attached);
        } else {
            ck_assert_int_eq(r->body_case,
                             HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY);
        }
        if (xfd >= 0) {
            /* recvmsg may glue the tail of the previous frame to the
             * first byte of the one the descriptor belongs to. */
            ck_assert_msg(i == n + 1 || i == n, "descriptor with frame %u", i);
            char link[64], target[256];
            snprintf(link, sizeof(link), "/proc/self/fd/%d", xfd);
            ssize_t tl = readlink(link, target, sizeof(target) - 1);
            ck_assert_int_gt(tl, 0);
            target[tl] = '\0';
            ck_assert_msg(strncmp(target, "/memfd:", 7) == 0, "%s", target);
            close(xfd);
            fds++;
        }
        ho_frame_envelope_free(r);
    }
    ck_assert_int_eq(fds, 1);
    ck_assert(ho_harness_wait_log(h, "descriptor frame waits for", 2000));
    close(fd);
}
END_TEST


/* Random and mutated frames on many connections: every one ends with the
 * daemon closing it, the daemon keeps serving, and it exits cleanly (the
 * sanitizer and valgrind runs check its memory on these paths). */
START_TEST(random_bytes_never_hurt_the_daemon)
{
    int healthy = rc_open(ho_harness_socket(h));
    unsigned seed = 12345;
    int rounds = ho_harness_under_valgrind() ? 40 : 400;
    /* A valid request to mutate. */
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__RegisterRequest rr = HYPEROFFLOAD__REGISTER_REQUEST__INIT;
    rr.job = "fuzz";
    rr.device = 0;
    rr.hbm_budget = 4096;
    env.version = 1;
    env.request_id = 5;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REQUEST;
    env.register_request = &rr;
    uint8_t *valid;
    size_t vlen;
    ck_assert_int_eq(ho_frame_encode(&env, &valid, &vlen), 0);
    for (int i = 0; i < rounds; i++) {
        int mode = (int)(rand_r(&seed) % 3);
        int fd = mode == 0 ? rc_connect(ho_harness_socket(h))
                           : rc_open(ho_harness_socket(h));
        ck_assert_int_ge(fd, 0);
        uint8_t buf[512];
        size_t len;
        if (mode == 2) {
            /* A valid frame with a few bytes of its payload flipped. */
            memcpy(buf, valid, vlen);
            len = vlen;
            int flips = 1 + (int)(rand_r(&seed) % 4);
            for (int k = 0; k < flips; k++)
                buf[4 + rand_r(&seed) % (vlen - 4)] ^=
                    (uint8_t)(1 + rand_r(&seed) % 255);
        } else {
            len = 1 + rand_r(&seed) % (sizeof(buf) - 1);
            for (size_t k = 0; k < len; k++)
                buf[k] = (uint8_t)rand_r(&seed);
            if (rand_r(&seed) % 2 && len > 4)
                ho_frame_header_put(buf, (uint32_t)(rand_r(&seed) % (len - 3)));
        }
        rc_send_raw(fd, buf, len); /* may fail once the daemon closed */
        shutdown(fd, SHUT_WR);
        /* Drain whatever comes back until the daemon closes. */
        int closed = 0;
        for (int k = 0; k < 100 && !closed; k++) {
            Hyperoffload__Envelope *r = NULL;
            int rc = rc_recv(fd, &r, NULL, RC_TIMEOUT_MS);
            if (rc == 0) {
                ho_frame_envelope_free(r);
                continue;
            }
            ck_assert_msg(rc == HO_E_DISCONNECTED, "round %d: %d", i, rc);
            closed = 1;
        }
        ck_assert_msg(closed, "round %d: never closed", i);
        close(fd);
    }
    free(valid);
    assert_healthy(healthy);
    close(healthy);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_protocol");
    TCase *t = tcase_create("protocol");
    tcase_add_checked_fixture(t, start, stop);
    tcase_set_timeout(t, ho_harness_under_valgrind() ? 600 : 60);
    tcase_add_test(t, handshake_and_version_negotiation);
    tcase_add_test(t, garbage_and_bad_lengths_close_only_that_connection);
    tcase_add_test(t, truncated_frame_at_end_of_stream);
    tcase_add_test(t, unexpected_messages_are_fatal);
    tcase_add_test(t, unknown_body_and_wrong_message_version_keep_connection);
    tcase_add_test(t, requests_before_register);
    tcase_add_test(t, fd_passing_keeps_frame_order);
    tcase_add_test(t, random_bytes_never_hurt_the_daemon);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
