/* tests/daemon/test_lifecycle.c - signals and restarts: SIGTERM drains and
 * exits 0 removing the socket; SIGHUP with a broken config keeps the old
 * one; SIGHUP applies reloadable settings; stale sockets are replaced, a
 * live daemon on the socket is a fatal error; quotas persist across
 * restarts and a corrupt quota file stops the start naming the line; a
 * second daemon on the same state directory or flash file refuses to
 * start. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/daemon/rawclient.h"

#define MiB (1ull << 20)

static void stop_ok(ho_harness *h)
{
    int st = ho_harness_free(h);
    ck_assert_msg(st == 0, "daemon exit status %d", st);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

START_TEST(sigterm_drains_and_removes_socket)
{
    ho_harness *h = ho_harness_start_args(NULL);
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_register(fd, "", 0, MiB, &r, NULL), 0);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_alloc(fd, MiB, &r), 0);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(access(ho_harness_socket(h), F_OK), 0);

    ck_assert_int_eq(ho_harness_signal(h, SIGTERM), 0);
    /* The client hears about it, then the connection ends. */
    ck_assert_int_eq(rc_recv(fd, &r, NULL, RC_TIMEOUT_MS), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_EVENT);
    ck_assert_int_eq(r->event->kind,
                     HYPEROFFLOAD__EVENT_KIND__EVENT_SHUTTING_DOWN);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_wait_closed(fd, RC_TIMEOUT_MS), 1);
    close(fd);
    int st = -1;
    for (int i = 0; i < 3000 && (st = ho_harness_poll_exit(h)) == -1; i++)
        sleep_ms(10);
    ck_assert_int_eq(st, 0);
    ck_assert_int_eq(access(ho_harness_socket(h), F_OK), -1);
    ck_assert(ho_harness_wait_log(h, "SIGTERM: shutting down", 1000));
    /* The flash file it created went with it (spilled data is gone). */
    char flash0[PATH_MAX + 16];
    snprintf(flash0, sizeof(flash0), "%s/flash0", ho_harness_dir(h));
    ck_assert_int_eq(access(flash0, F_OK), -1);
    ck_assert_int_eq(ho_harness_free(h), -2); /* already stopped */

    /* ... unless told to keep it. */
    static const char *const keep[] = {"--flash-persist", NULL};
    h = ho_harness_start_args(keep);
    snprintf(flash0, sizeof(flash0), "%s/flash0", ho_harness_dir(h));
    ck_assert_int_eq(ho_harness_stop(h), 0);
    struct stat fst;
    ck_assert_int_eq(stat(flash0, &fst), 0);
    ck_assert_int_eq(fst.st_size, 512 * MiB);
    ck_assert_int_eq(ho_harness_free(h), -2);
}
END_TEST

START_TEST(sighup_keeps_old_config_on_error_and_applies_new)
{
    ho_harness_opts o = {.config_text = "[server]\n"
                                        "max_extents_per_session = 100\n"};
    char err[4096];
    ho_harness *h = ho_harness_start(&o, err, sizeof(err));
    ck_assert_msg(h != NULL, "%s", err);
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_register(fd, "", -1, 0, &r, NULL), 0);
    ho_frame_envelope_free(r);

    /* Broken: unknown key.  The reason is logged, the old config stays. */
    ck_assert_int_eq(ho_harness_write_config(h, "[server]\n"
                                                "max_extents_per_session = 1\n"
                                                "bogus = 1\n"), 0);
    ck_assert_int_eq(ho_harness_sighup(h), 0);
    ck_assert(ho_harness_wait_log(h, "reload failed, keeping the running "
                                     "configuration", 10000));
    ck_assert(ho_harness_wait_log(h, "hyperoffloadd.conf:3: unknown key "
                                     "'bogus' in section [server]", 1000));
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(rc_alloc(fd, 4096, &r), 0);
        ck_assert_int_eq(r->body_case,
                         HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REPLY);
        ho_frame_envelope_free(r);
    }
    /* Valid: a reloadable setting applies, a restart-only one is kept and
     * logged. */
    ck_assert_int_eq(ho_harness_write_config(h, "[server]\n"
                                                "max_extents_per_session = 3\n"
                                                "[ddr]\nlock = no\n"),
                     0);
    ck_assert_int_eq(ho_harness_sighup(h), 0);
    ck_assert(ho_harness_wait_log(h, "configuration reloaded", 10000));
    ck_assert(ho_harness_wait_log(h, "ddr.lock changed from 'yes' to 'no': "
                                     "needs a restart; keeping 'yes'", 1000));
    ck_assert(ho_harness_wait_log(h, "server.max_extents_per_session changed "
                                     "from '100' to '3'", 1000));
    ck_assert_int_eq(rc_alloc(fd, 4096, &r), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_QUOTA);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_stats(fd, &r), 0);
    ck_assert_uint_eq(r->stats_reply->tiers[0]->capacity, 256 * MiB);
    ho_frame_envelope_free(r);
    close(fd);
    stop_ok(h);
}
END_TEST

/* SIGHUP while the config path names a FIFO (nobody writing) or a device:
 * the reload is refused at once with the reason, the loop keeps serving
 * and SIGTERM still stops the daemon (issue 10: the FIFO wedged it). */
START_TEST(sighup_on_fifo_config_does_not_block)
{
    ho_harness_opts o = {.config_text = "[server]\n"
                                        "max_extents_per_session = 100\n"};
    char err[4096];
    ho_harness *h = ho_harness_start(&o, err, sizeof(err));
    ck_assert_msg(h != NULL, "%s", err);
    const char *conf = ho_harness_config_path(h);
    ck_assert_int_eq(unlink(conf), 0);
    ck_assert_int_eq(mkfifo(conf, 0600), 0);
    ck_assert_int_eq(ho_harness_sighup(h), 0);
    ck_assert(ho_harness_wait_log(h, "is a FIFO; a config file must be a "
                                     "regular file", 10000));
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_status(fd, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY);
    ho_frame_envelope_free(r);
    close(fd);
    ck_assert_int_eq(unlink(conf), 0);
    ck_assert_int_eq(symlink("/dev/zero", conf), 0);
    ck_assert_int_eq(ho_harness_sighup(h), 0);
    ck_assert(ho_harness_wait_log(h, "is a character device", 10000));
    stop_ok(h);
}
END_TEST

/* Run the daemon binary directly (not through the harness); returns the
 * exit status and the output in *out. */
static int run_daemon(const char *const *args, char **out, const char *dir)
{
    char outpath[PATH_MAX + 16];
    snprintf(outpath, sizeof(outpath), "%s/second.log", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        const char *argv[16];
        int n = 0;
        argv[n++] = ho_harness_daemon_path();
        for (int i = 0; args[i] && n < 15; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    /* A daemon that wrongly starts would run forever: bound the wait. */
    for (int i = 0; i < 3000; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            break;
        if (i == 2999) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
        }
        sleep_ms(10);
    }
    FILE *f = fopen(outpath, "r");
    *out = calloc(1, 65536);
    if (f) {
        size_t n = fread(*out, 1, 65535, f);
        (*out)[n] = '\0';
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Start a second daemon beside h's (16 MiB of DDR and flash) with
 * "--socket=<sock>", "--state-dir=<state>", "--flash-paths=<flash>";
 * its exit status, its output in *out (caller frees). */
static int second_daemon(const ho_harness *h, const char *sock,
                         const char *state, const char *flash, char **out)
{
    char s[PATH_MAX + 32], st[PATH_MAX + 32], fl[PATH_MAX + 32];
    snprintf(s, sizeof(s), "--socket=%s", sock);
    snprintf(st, sizeof(st), "--state-dir=%s", state);
    snprintf(fl, sizeof(fl), "--flash-paths=%s", flash);
    const char *args[] = {s, st, fl, "--ddr-capacity=16M",
                          "--flash-capacity=16M", NULL};
    return run_daemon(args, out, ho_harness_dir(h));
}

START_TEST(stale_socket_replaced_live_socket_refused)
{
    ho_harness *h = ho_harness_start_args(NULL);
    ck_assert_int_eq(ho_harness_kill9(h), 0);
    ck_assert_int_eq(access(ho_harness_socket(h), F_OK), 0); /* stale */
    char err[4096];
    ck_assert_msg(ho_harness_restart(h, err, sizeof(err)) == 0, "%s", err);
    ck_assert(ho_harness_wait_log(h, "replacing stale socket", 1000));
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);

    /* A second daemon on the same socket refuses to start. */
    char state[PATH_MAX + 32], flash[PATH_MAX + 32];
    snprintf(state, sizeof(state), "%s/state2", ho_harness_dir(h));
    snprintf(flash, sizeof(flash), "%s/flash2", ho_harness_dir(h));
    char *out = NULL;
    ck_assert_int_eq(second_daemon(h, ho_harness_socket(h), state, flash,
                                   &out), 1);
    ck_assert_msg(strstr(out, "another daemon is already listening on"),
                  "%s", out);
    free(out);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_stats(fd, &r), 0); /* the first one is unharmed */
    ho_frame_envelope_free(r);
    close(fd);

    /* A path that is not a socket is never replaced. */
    char notsock[PATH_MAX + 16];
    snprintf(notsock, sizeof(notsock), "%s/regular", ho_harness_dir(h));
    FILE *f = fopen(notsock, "w");
    fputs("precious", f);
    fclose(f);
    ck_assert_int_eq(second_daemon(h, notsock, state, flash, &out), 1);
    ck_assert_msg(strstr(out, "exists and is not a socket"), "%s", out);
    free(out);
    ck_assert_int_eq(access(notsock, F_OK), 0);
    stop_ok(h);
}
END_TEST

/* A second daemon on the state directory or on a flash file of a running
 * one refuses to start before it writes anything, naming the first one's
 * pid and the path; the first one keeps serving. */
START_TEST(second_daemon_on_state_dir_or_flash_file_refused)
{
    ho_harness *h = ho_harness_start_args(NULL);
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    char flash0[PATH_MAX + 16], pidtext[64];
    snprintf(flash0, sizeof(flash0), "%s/flash0", ho_harness_dir(h));
    struct stat st0;
    ck_assert_int_eq(stat(flash0, &st0), 0);
    snprintf(pidtext, sizeof(pidtext), "(pid %d ", (int)ho_harness_pid(h));

    char sock[PATH_MAX + 32], flash[PATH_MAX + 32], state2[PATH_MAX + 32];
    snprintf(sock, sizeof(sock), "%s/second.sock", ho_harness_dir(h));
    snprintf(flash, sizeof(flash), "%s/flash2", ho_harness_dir(h));
    snprintf(state2, sizeof(state2), "%s/state2", ho_harness_dir(h));
    /* Same state directory, a flash file of its own. */
    char *out = NULL;
    ck_assert_int_eq(second_daemon(h, sock, ho_harness_state_dir(h), flash,
                                   &out), 1);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof(want), "%s/hyperoffloadd.lock",
             ho_harness_state_dir(h));
    ck_assert_msg(strstr(out, "is in use by another hyperoffloadd"), "%s",
                  out);
    ck_assert_msg(strstr(out, pidtext) && strstr(out, want), "%s", out);
    free(out);
    /* Refused before its flash file was created. */
    snprintf(want, sizeof(want), "%s/flash2", ho_harness_dir(h));
    ck_assert_int_eq(access(want, F_OK), -1);

    /* A state directory of its own, the first one's flash file (the
     * corruption of issue 10: both would spill into the same extents). */
    ck_assert_int_eq(second_daemon(h, sock, state2, flash0, &out), 1);
    snprintf(want, sizeof(want), "flash file %s is in use by another "
             "process", flash0);
    ck_assert_msg(strstr(out, want) && strstr(out, pidtext), "%s", out);
    free(out);
    struct stat st1;
    ck_assert_int_eq(stat(flash0, &st1), 0);
    ck_assert_uint_eq(st1.st_size, st0.st_size);
    ck_assert_uint_eq(st1.st_ino, st0.st_ino);
    /* The second one's socket never appeared; the first one serves. */
    snprintf(want, sizeof(want), "%s/second.sock", ho_harness_dir(h));
    ck_assert_int_eq(access(want, F_OK), -1);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_status(fd, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY);
    ho_frame_envelope_free(r);
    close(fd);
    /* Once the first one stopped, the lock is free again. */
    ck_assert_int_eq(ho_harness_stop(h), 0);
    char err[4096];
    ck_assert_msg(ho_harness_restart(h, err, sizeof(err)) == 0, "%s", err);
    stop_ok(h);
}
END_TEST

START_TEST(quotas_persist_and_corrupt_file_stops_start)
{
    ho_harness *h = ho_harness_start_args(NULL);
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_quota(fd, HYPEROFFLOAD__QUOTA_OP__QUOTA_SET,
                              HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_JOB,
                              0, "train", HYPEROFFLOAD__TIER__TIER_HBM,
                              3 * MiB, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY);
    ho_frame_envelope_free(r);
    close(fd);
    ck_assert_int_eq(ho_harness_stop(h), 0);

    char err[4096];
    ck_assert_msg(ho_harness_restart(h, err, sizeof(err)) == 0, "%s", err);
    fd = rc_open(ho_harness_socket(h));
    ck_assert_int_eq(rc_quota(fd, HYPEROFFLOAD__QUOTA_OP__QUOTA_GET,
                              HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_JOB,
                              0, "train", HYPEROFFLOAD__TIER__TIER_HBM, 0, &r),
                     0);
    ck_assert_uint_eq(r->quota_reply->entries[0]->limit, 3 * MiB);
    ho_frame_envelope_free(r);
    /* ... and is enforced at register. */
    int c = rc_open(ho_harness_socket(h));
    ck_assert_int_eq(rc_register(c, "train", 0, 4 * MiB, &r, NULL), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_QUOTA);
    ck_assert_ptr_nonnull(strstr(rc_error_message(r), "job train"));
    ho_frame_envelope_free(r);
    close(c);
    close(fd);
    ck_assert_int_eq(ho_harness_stop(h), 0);

    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/quotas", ho_harness_state_dir(h));
    FILE *f = fopen(path, "a");
    ck_assert_ptr_nonnull(f);
    fputs("uid many ddr 1\n", f);
    fclose(f);
    ck_assert_int_eq(ho_harness_restart(h, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "quotas:4: 'many' is not a uid"), "%s", err);
    ck_assert_int_eq(ho_harness_free(h), -2);
}
END_TEST


/* Receive notify datagrams until one contains `want` (or timeout).  The
 * matching text is appended to acc. */
static int notify_wait(int sock, const char *want, char *acc, size_t acclen,
                       int timeout_ms)
{
    if (ho_harness_under_valgrind())
        timeout_ms *= 10;
    for (int waited = 0; waited < timeout_ms; waited += 50) {
        struct pollfd p = {.fd = sock, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        char buf[1024];
        ssize_t n = recv(sock, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        size_t l = strlen(acc);
        snprintf(acc + l, acclen - l, "%s\n--\n", buf);
        if (strstr(buf, want))
            return 1;
    }
    return 0;
}

START_TEST(sd_notify_ready_watchdog_stopping)
{
    char dir[PATH_MAX];
    const char *b = getenv("HO_BUILD_DIR");
    snprintf(dir, sizeof(dir), "%s/honotify-XXXXXX", b && *b ? b : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char envn[sizeof(path) + 32];
    snprintf(path, sizeof(path), "%.90s/notify", dir);
    int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    ck_assert_int_eq(bind(sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
    snprintf(envn, sizeof(envn), "NOTIFY_SOCKET=%s", path);
    const char *env[] = {envn, "WATCHDOG_USEC=200000", NULL};
    ho_harness_opts o = {.env = env};
    char err[4096];
    ho_harness *h = ho_harness_start(&o, err, sizeof(err));
    ck_assert_msg(h != NULL, "%s", err);
    static char acc[65536];
    acc[0] = '\0';
    ck_assert_msg(notify_wait(sock, "READY=1", acc, sizeof(acc), 5000), "%s",
                  acc);
    char mainpid[64];
    snprintf(mainpid, sizeof(mainpid), "MAINPID=%d", (int)ho_harness_pid(h));
    ck_assert_msg(strstr(acc, mainpid), "%s", acc);
    ck_assert_msg(strstr(acc, "STATUS=0 clients"), "%s", acc);
    /* Pings at half the interval (100 ms). */
    acc[0] = '\0';
    ck_assert(notify_wait(sock, "WATCHDOG=1", acc, sizeof(acc), 2000));
    ck_assert(notify_wait(sock, "WATCHDOG=1", acc, sizeof(acc), 2000));
    ck_assert(ho_harness_wait_log(h, "watchdog: pinging systemd every 100 ms",
                                  1000));
    /* Reload is bracketed by RELOADING=1 ... READY=1. */
    ck_assert_int_eq(ho_harness_sighup(h), 0);
    ck_assert_msg(notify_wait(sock, "RELOADING=1", acc, sizeof(acc), 5000),
                  "%s", acc);
    ck_assert_int_eq(ho_harness_signal(h, SIGTERM), 0);
    ck_assert_msg(notify_wait(sock, "STOPPING=1", acc, sizeof(acc), 5000),
                  "%s", acc);
    int st = -1;
    for (int i = 0; i < 3000 && (st = ho_harness_poll_exit(h)) == -1; i++)
        sleep_ms(10);
    ck_assert_int_eq(st, 0);
    ho_harness_free(h);
    close(sock);
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(socket_passed_by_systemd)
{
    ho_harness_opts o = {.systemd_socket = 1};
    char err[4096];
    ho_harness *h = ho_harness_start(&o, err, sizeof(err));
    ck_assert_msg(h != NULL, "%s", err);
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    ck_assert(ho_harness_wait_log(h, "(socket from systemd)", 5000));
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_status(fd, &r), 0);
    ck_assert_str_eq(r->status_reply->socket_path, ho_harness_socket(h));
    ho_frame_envelope_free(r);
    close(fd);
    ck_assert_int_eq(ho_harness_stop(h), 0);
    /* systemd owns that socket file: the daemon leaves it. */
    ck_assert_int_eq(access(ho_harness_socket(h), F_OK), 0);
    ho_harness_free(h);
}
END_TEST


/* SIGTERM while a spill runs: the move finishes and is answered, then the
 * connection closes and the daemon exits 0. */
START_TEST(sigterm_lets_moves_finish)
{
    ho_harness *h = ho_harness_start_args(NULL);
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_register(fd, "", -1, 0, &r, NULL), 0);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_alloc(fd, 128 * MiB, &r), 0);
    uint64_t x = r->alloc_reply->extent_id;
    ho_frame_envelope_free(r);
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__MoveRequest mr = HYPEROFFLOAD__MOVE_REQUEST__INIT;
    mr.extent_id = x;
    mr.direction = HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL;
    env.version = 1;
    env.request_id = 99;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REQUEST;
    env.move_request = &mr;
    ck_assert_int_eq(rc_send(fd, &env), 0);
    ck_assert(ho_harness_wait_log(h, "spill of 134217728 bytes started",
                                  5000));
    ck_assert_int_eq(ho_harness_signal(h, SIGTERM), 0);
    int got_reply = 0, got_event = 0;
    for (;;) {
        int rc = rc_recv(fd, &r, NULL, RC_TIMEOUT_MS);
        if (rc == HO_E_DISCONNECTED)
            break;
        ck_assert_int_eq(rc, 0);
        if (r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_EVENT)
            got_event++;
        else if (r->request_id == 99) {
            ck_assert_msg(r->body_case ==
                              HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REPLY,
                          "%s", rc_error_message(r));
            ck_assert_int_eq(r->move_reply->residency,
                             HYPEROFFLOAD__TIER__TIER_FLASH);
            got_reply++;
        }
        ho_frame_envelope_free(r);
    }
    ck_assert_int_eq(got_reply, 1);
    ck_assert_int_eq(got_event, 1);
    close(fd);
    int st = -1;
    for (int i = 0; i < 6000 && (st = ho_harness_poll_exit(h)) == -1; i++)
        sleep_ms(10);
    ck_assert_int_eq(st, 0);
    ho_harness_free(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_lifecycle");
    TCase *t = tcase_create("lifecycle");
    tcase_set_timeout(t, ho_harness_under_valgrind() ? 900 : 90);
    tcase_add_test(t, sigterm_drains_and_removes_socket);
    tcase_add_test(t, sigterm_lets_moves_finish);
    tcase_add_test(t, sighup_keeps_old_config_on_error_and_applies_new);
    tcase_add_test(t, sighup_on_fifo_config_does_not_block);
    tcase_add_test(t, stale_socket_replaced_live_socket_refused);
    tcase_add_test(t, quotas_persist_and_corrupt_file_stops_start);
    tcase_add_test(t, second_daemon_on_state_dir_or_flash_file_refused);
    tcase_add_test(t, sd_notify_ready_watchdog_stopping);
    tcase_add_test(t, socket_passed_by_systemd);
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
