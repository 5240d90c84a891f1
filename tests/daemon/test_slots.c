/* tests/daemon/test_slots.c - connection slots per uid and the admin
 * reserve (issue 10 item 2, server.c "slots"), against a real daemon:
 * children that setuid to non-admin uids (65534, 65533, 65532) open
 * connections through a world-writable socket.  One uid past
 * max_connections_per_uid is refused with EAGAIN naming that setting;
 * once only the admin reserve is left, any non-admin is refused naming
 * admin_reserve; root (an admin) still connects, `hoctl status` and its
 * StatusRequest are answered; the refusals are counted by reason in the
 * metrics and logged with the peer's uid.  Needs root (setuid); exit 77 otherwise. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check_main.h"
#include "hyperoffload/errors.h"
#include "tests/daemon/rawclient.h"
#include "tests/harness.h"

#define PER_UID 14
#define MAX_CONNS 32
#define RESERVE 4 /* at most an eighth of MAX_CONNS */

/* Open one more connection and expect the daemon's refusal: 0 when it is
 * Error{-EAGAIN} whose sentence names `setting`. */
static int expect_refused(const char *sock, const char *setting)
{
    int fd = rc_connect(sock);
    if (fd < 0)
        return 1;
    Hyperoffload__Envelope *r = NULL;
    int rc = rc_recv(fd, &r, NULL, 5000);
    int ok = rc == 0 && rc_error_code(r) == -EAGAIN &&
             strstr(rc_error_message(r), setting);
    if (!ok)
        fprintf(stderr, "expected a refusal naming %s: rc %d, code %d, "
                "'%s'\n", setting, rc, r ? rc_error_code(r) : 0,
                r ? rc_error_message(r) : "");
    if (r)
        ho_frame_envelope_free(r);
    int closed = rc_wait_closed(fd, 5000);
    close(fd);
    return ok && closed == 1 ? 0 : 2;
}

/* A child as `uid`: opens `n` connections (Hello answered), then, when
 * `refuse` is set, expects the next to be refused naming it; tells the
 * parent (one byte: 0 ok, else the failing step) and holds its
 * connections until the parent closes `hear`. */
static int child(const char *sock, uid_t uid, int n, const char *refuse,
                 int tell, int hear)
{
    unsigned char st = 0;
    int fds[PER_UID + 1];
    if (setgid(65534) < 0 || setuid(uid) < 0)
        st = 10;
    for (int i = 0; i < n && !st; i++) {
        fds[i] = rc_open(sock);
        if (fds[i] < 0)
            st = (unsigned char)(20 + i);
    }
    if (!st && refuse && expect_refused(sock, refuse))
        st = 30;
    if (write(tell, &st, 1) != 1)
        return 1;
    char b;
    while (read(hear, &b, 1) > 0)
        ;
    return 0;
}

typedef struct kid {
    pid_t pid;
    int hear_w; /* closed by the parent: the child lets go */
} kid;

/* The parent's open hear_w ends: a new child closes them, else an
 * earlier child would never see its end closed. */
static int held[8];
static int n_held;

static unsigned char spawn(kid *k, const char *sock, uid_t uid, int n,
                           const char *refuse)
{
    int up[2], down[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(down), 0);
    k->pid = fork();
    ck_assert_int_ge(k->pid, 0);
    if (k->pid == 0) {
        close(up[0]);
        close(down[1]);
        for (int i = 0; i < n_held; i++)
            close(held[i]);
        _exit(child(sock, uid, n, refuse, up[1], down[0]));
    }
    close(up[1]);
    close(down[0]);
    k->hear_w = down[1];
    ck_assert_int_lt(n_held, 8);
    held[n_held++] = down[1];
    unsigned char st = 99;
    ck_assert_int_eq(read(up[0], &st, 1), 1);
    close(up[0]);
    return st;
}

static void reap(kid *k)
{
    for (int i = 0; i < n_held; i++)
        if (held[i] == k->hear_w)
            held[i--] = held[--n_held];
    close(k->hear_w);
    int st = 0;
    ck_assert_int_eq(waitpid(k->pid, &st, 0), k->pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

START_TEST(per_uid_and_admin_reserve)
{
    char a1[64], a2[64], a3[64];
    snprintf(a1, sizeof(a1), "--max-connections=%d", MAX_CONNS);
    snprintf(a2, sizeof(a2), "--max-connections-per-uid=%d", PER_UID);
    snprintf(a3, sizeof(a3), "--admin-reserve=%d", RESERVE);
    const char *args[] = {a1, a2, a3, "--socket-mode=0666", NULL};
    ho_harness *h = ho_harness_start_args(args);
    ck_assert_int_eq(chmod(ho_harness_dir(h), 0711), 0);
    const char *sock = ho_harness_socket(h);

    /* uid 65534 takes its PER_UID and is refused the next. */
    kid k1, k2, k3;
    ck_assert_int_eq(spawn(&k1, sock, 65534, PER_UID,
                           "max_connections_per_uid"), 0);
    /* uid 65533 takes as many: MAX_CONNS - RESERVE are held by
     * non-admins now; uid 65532's first is refused for the reserve. */
    ck_assert_int_eq(spawn(&k2, sock, 65533, PER_UID, NULL), 0);
    ck_assert_int_eq(spawn(&k3, sock, 65532, 0, "admin_reserve"), 0);

    /* Every non-admin slot is taken: root's `hoctl status` answers. */
    const char *bd = getenv("HO_BUILD_DIR");
    ck_assert_ptr_nonnull(bd);
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s/bin/hoctl --socket %s status "
             ">/dev/null", bd, sock);
    ck_assert_int_eq(system(cmd), 0);

    /* root (admin) gets the reserve: status answered, up to
     * max_connections in all, then refused naming max_connections. */
    int mine[RESERVE];
    mine[0] = rc_open(sock);
    ck_assert_int_ge(mine[0], 0);
    /* hoctl's connection closed in the daemon's view too */
    for (int tries = 0; rc_metric(mine[0], "hyperoffload_connections") !=
                        2 * PER_UID + 1; tries++) {
        ck_assert_int_lt(tries, 100);
        usleep(20 * 1000);
    }
    for (int i = 1; i < RESERVE; i++) {
        mine[i] = rc_open(sock);
        ck_assert_int_ge(mine[i], 0);
    }
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_status(mine[0], &r), 0);
    ck_assert_int_eq(r->body_case,
                     HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(expect_refused(sock, "max_connections"), 0);

    ck_assert_int_eq(
        rc_metric(mine[0], "hyperoffload_connection_refusals_total{limit=\""
                        "max_connections_per_uid\"}"), 1);
    ck_assert_int_eq(
        rc_metric(mine[0], "hyperoffload_connection_refusals_total{limit=\""
                        "admin_reserve\"}"), 1);
    ck_assert_int_eq(
        rc_metric(mine[0], "hyperoffload_connection_refusals_total{limit=\""
                        "max_connections\"}"), 1);

    /* uid 65534's connections and root's gone: 65534 may connect
     * again (root's would leave it only the reserve). */
    reap(&k1);
    reap(&k3);
    for (int i = 0; i < RESERVE; i++)
        close(mine[i]);
    for (int tries = 0; tries < 50; tries++) {
        kid k4;
        unsigned char st = spawn(&k4, sock, 65534, 1, NULL);
        reap(&k4);
        if (st == 0)
            break;
        ck_assert_int_lt(tries, 49);
        usleep(100 * 1000); /* the daemon sees the closes */
    }
    reap(&k2);

    char *log = ho_harness_log(h);
    ck_assert_ptr_nonnull(strstr(log, "uid 65534) refused: uid 65534 "
                                      "holds 14 connections"));
    ck_assert_ptr_nonnull(strstr(log, "uid 65532) refused"));
    free(log);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

int main(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "test_slots: needs root (setuid to other uids)\n");
        return 77;
    }
    Suite *s = suite_create("slots");
    TCase *tc = tcase_create("slots");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, per_uid_and_admin_reserve);
    suite_add_tcase(s, tc);
    return ho_check_run(s, true);
}
