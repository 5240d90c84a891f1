/* tests/daemon/test_limits.c - the daemon under resource exhaustion
 * (issue 10), on the real daemon and real sockets: out of descriptors (a
 * low RLIMIT_NOFILE, many clients of another uid), every client gets a
 * session or an Error with the reason, root's status still answers, the
 * daemon stays up. */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/daemon/rawclient.h"

#define NOBODY 65534

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A wrapper script that starts the real daemon with RLIMIT_NOFILE soft
 * `soft`, hard `hard` (the harness execs it in the daemon's place: same
 * process, same pid).  Returns its path (static); the caller sets
 * HO_DAEMON to it. */
static const char *rlimit_wrapper(int soft, int hard)
{
    static char dir[PATH_MAX], path[PATH_MAX + 16];
    const char *b = getenv("HO_BUILD_DIR");
    snprintf(dir, sizeof(dir), "%s/holim-XXXXXX", b && *b ? b : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/hod", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "#!/bin/sh\nulimit -Sn %d && ulimit -Hn %d || exit 126\n"
               "exec '%s' \"$@\"\n", soft, hard, ho_harness_daemon_path());
    fclose(f);
    ck_assert_int_eq(chmod(path, 0755), 0);
    return path;
}

static void rm_wrapper(const char *path)
{
    unlink(path);
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    rmdir(dir);
}

/* A daemon reachable by uid NOBODY (socket 0666, directory 0755). */
static ho_harness *start_open(const char *daemon_path)
{
    static const char *const args[] = {"--socket-mode=0666", NULL};
    ho_harness_opts o = {.args = args};
    char err[4096];
    if (daemon_path)
        setenv("HO_DAEMON", daemon_path, 1);
    ho_harness *h = ho_harness_start(&o, err, sizeof(err));
    unsetenv("HO_DAEMON");
    ck_assert_msg(h != NULL, "%s", err);
    ck_assert_int_eq(chmod(ho_harness_dir(h), 0755), 0);
    return h;
}

/* Root's status round trip on a new connection: its time in ms, or -1
 * when it did not answer with a StatusReply. */
static long long root_status_ms(const ho_harness *h)
{
    long long t0 = now_ms();
    int fd = rc_open(ho_harness_socket(h));
    if (fd < 0)
        return -1;
    Hyperoffload__Envelope *r = NULL;
    int rc = rc_status(fd, &r);
    int ok = rc == 0 && r->body_case ==
                            HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY;
    ho_frame_envelope_free(r);
    close(fd);
    return ok ? now_ms() - t0 : -1;
}

/* What happened to the clients of one uid (counted in a child). */
typedef struct outcome {
    int registered;    /* Welcome + RegisterReply */
    int refused_fds;   /* Error -EMFILE naming the descriptors */
    int other_error;   /* another Error, with a message */
    int silent;        /* reset, timeout, nothing said */
} outcome;

/* One client of uid NOBODY: connect, Hello, Register; the socket is kept
 * open (in fds) while registered. */
static void one_client(const char *sock, outcome *o, int *ret_fd)
{
    *ret_fd = -1;
    int fd = rc_connect(sock);
    if (fd < 0) {
        o->silent++;
        return;
    }
    Hyperoffload__Envelope *r = NULL;
    int rc = rc_hello(fd, 1, 1, &r);
    if (rc == 0 && r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_WELCOME) {
        ho_frame_envelope_free(r);
        r = NULL;
        rc = rc_register(fd, "", -1, 0, &r, NULL);
    } else if (rc < 0 && rc != -ETIMEDOUT) {
        /* The Hello may have met a closed socket: the Error waits. */
        rc = rc_recv(fd, &r, NULL, RC_TIMEOUT_MS);
    }
    if (rc < 0) {
        o->silent++;
    } else if (r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY) {
        o->registered++;
        *ret_fd = fd;
        fd = -1;
    } else if (rc_error_code(r) == -EMFILE &&
               strstr(rc_error_message(r), "file descriptors")) {
        o->refused_fds++;
    } else if (rc_error_code(r) != 0 && *rc_error_message(r)) {
        o->other_error++;
    } else {
        o->silent++;
    }
    ho_frame_envelope_free(r);
    if (fd >= 0)
        close(fd);
}

/* A low descriptor limit (soft 64, hard 160: the daemon raises the soft
 * one) and 200 clients of another uid: the daemon serves what fits, tells
 * every other client why, stays up, and root's status answers within 1 s
 * while the clients hold their sessions; once they are gone it accepts
 * again. */
START_TEST(out_of_descriptors_refuses_with_reason_root_served)
{
    const char *wrapper = rlimit_wrapper(64, 160);
    ho_harness *h = start_open(wrapper);
    ck_assert(ho_harness_wait_log(h, "descriptors: soft limit raised from "
                                     "64 to 160", 5000));
    int report[2], go[2];
    ck_assert_int_eq(pipe(report), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(report[0]);
        close(go[1]);
        if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 ||
            setuid(NOBODY) != 0)
            _exit(3);
        static int fds[200];
        outcome o = {0};
        for (int i = 0; i < 200; i++)
            one_client(ho_harness_socket(h), &o, &fds[i]);
        if (write(report[1], &o, sizeof(o)) != (ssize_t)sizeof(o))
            _exit(4);
        char c;
        if (read(go[0], &c, 1) < 0)
            _exit(5);
        ho_harness_forget(h);
        _exit(0); /* closes every session */
    }
    close(report[1]);
    close(go[0]);
    outcome o;
    ck_assert_int_eq(read(report[0], &o, sizeof(o)), (ssize_t)sizeof(o));
    /* Held sessions: root is still served, quickly. */
    long long ms = root_status_ms(h);
    ck_assert_msg(ms >= 0 && ms < 1000, "root status: %lld ms", ms);
    ck_assert_int_eq(ho_harness_poll_exit(h), -1);
    ck_assert_msg(o.registered >= 10 && o.refused_fds >= 1 &&
                      o.silent == 0 &&
                      o.registered + o.refused_fds + o.other_error == 200,
                  "registered %d, refused for fds %d, other errors %d, "
                  "silent %d", o.registered, o.refused_fds, o.other_error,
                  o.silent);
    ck_assert(ho_harness_wait_log(h, "refusing new non-admin connections "
                                     "(first: pid", 1000));
    ck_assert_int_eq(write(go[1], "x", 1), 1);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    close(report[0]);
    close(go[1]);
    /* The sessions are gone: new connections are served again. */
    ms = root_status_ms(h);
    ck_assert_msg(ms >= 0 && ms < 1000, "root status: %lld ms", ms);
    ck_assert(ho_harness_wait_log(h, "accepting connections again", 5000));
    int rc = ho_harness_free(h);
    ck_assert_msg(rc == 0, "daemon exit status %d", rc);
    rm_wrapper(wrapper);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_limits");
    TCase *t = tcase_create("limits");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, out_of_descriptors_refuses_with_reason_root_served);
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
