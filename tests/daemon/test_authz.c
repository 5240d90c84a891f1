/* tests/daemon/test_authz.c - admin rights are looked up on every admin
 * request (daemon/authz.h): a user in the admin group gets StatusRequest
 * answered; once removed from the group (gpasswd -d), or once a reload
 * (SIGHUP) set admin_group = "" (issue 10 problem 4 as reported: the old
 * connection of a former member then set a 4 KiB DDR quota on uid 0), the
 * very next StatusRequest and QuotaRequest on the SAME connection are
 * refused with HO_E_PERMISSION, while its non-admin requests keep working.
 * Needs root to create the user and group (CTest reports it skipped
 * otherwise, exit 77). */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
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

static char group[32], user[32];

static int run(const char *fmt, const char *a, const char *b)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), fmt, a, b);
    return system(cmd);
}

static void cleanup(void)
{
    run("userdel %s%s >/dev/null 2>&1", user, "");
    run("groupdel %s%s >/dev/null 2>&1", group, "");
}

/* The child: become `user`, ask Status, tell the parent, wait, ask again
 * on the same connection.  Exit 0 when the first is answered and the
 * second refused with HO_E_PERMISSION naming `why`, a quota on uid 0
 * refused too, and Stats still answered. */
static int child(const char *sock, const char *why, int tell, int hear)
{
    struct passwd *pw = getpwnam(user);
    if (!pw)
        return 10;
    if (initgroups(user, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
        setuid(pw->pw_uid) < 0)
        return 11;
    int fd = rc_open(sock);
    if (fd < 0)
        return 12;
    Hyperoffload__Envelope *r = NULL;
    if (rc_status(fd, &r) != 0 ||
        r->body_case != HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY)
        return 13;
    ho_frame_envelope_free(r);
    char b = 1;
    if (write(tell, &b, 1) != 1 || read(hear, &b, 1) != 1)
        return 14;
    r = NULL;
    int rc = rc_status(fd, &r);
    int code = r ? rc_error_code(r) : rc;
    if (code != HO_E_PERMISSION) {
        fprintf(stderr, "second status: rc %d code %d\n", rc, code);
        return 15;
    }
    if (!strstr(rc_error_message(r), why)) {
        fprintf(stderr, "second status: '%s'\n", rc_error_message(r));
        return 16;
    }
    ho_frame_envelope_free(r);
    r = NULL;
    rc = rc_quota(fd, HYPEROFFLOAD__QUOTA_OP__QUOTA_SET,
                  HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID, 0, "",
                  HYPEROFFLOAD__TIER__TIER_DDR, 4096, &r);
    code = r ? rc_error_code(r) : rc;
    if (code != HO_E_PERMISSION) {
        fprintf(stderr, "quota on uid 0: rc %d code %d\n", rc, code);
        return 18;
    }
    ho_frame_envelope_free(r);
    if (rc_stats(fd, &r) != 0 ||
        r->body_case != HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY)
        return 17;
    ho_frame_envelope_free(r);
    close(fd);
    return 0;
}

/* A member of the admin group is served, then loses the rights on the
 * connection it holds: by leaving the group, or by a reload that empties
 * admin_group. */
static void revoked(bool by_reload)
{
    snprintf(group, sizeof(group), "hoadm%ld", (long)getpid());
    snprintf(user, sizeof(user), "houser%ld", (long)getpid());
    atexit(cleanup);
    cleanup(); /* the other case's, in this process */
    ck_assert_int_eq(run("groupadd %s%s", group, ""), 0);
    ck_assert_int_eq(run("useradd -M -N -g nogroup -s /usr/sbin/nologin "
                         "-G %s %s", group, user), 0);

    char conf[128];
    snprintf(conf, sizeof(conf), "[server]\nadmin_group = %s\n", group);
    const char *args[] = {"--socket-mode=0666", NULL};
    ho_harness_opts o = {.args = args, .config_text = conf};
    char err[4096];
    ho_harness *h = ho_harness_start(&o, err, sizeof(err));
    ck_assert_msg(h != NULL, "%s", err);
    ck_assert_int_eq(chmod(ho_harness_dir(h), 0711), 0);

    int up[2], down[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(down), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(child(ho_harness_socket(h),
                    by_reload ? "needs an admin peer (uid 0);" : group,
                    up[1], down[0]));
    char b = 0;
    ck_assert_int_eq(read(up[0], &b, 1), 1); /* first status answered */
    if (by_reload) {
        ck_assert_int_eq(ho_harness_write_config(h, "[server]\n"
                                                    "admin_group = \"\"\n"),
                         0);
        ck_assert_int_eq(ho_harness_sighup(h), 0);
        ck_assert(ho_harness_wait_log(h, "configuration reloaded", 10000));
    } else {
        ck_assert_int_eq(run("gpasswd -d %s %s >/dev/null", user, group), 0);
    }
    ck_assert_int_eq(write(down[1], &b, 1), 1);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "child status %d (see child())", st);
    ck_assert_int_eq(ho_harness_free(h), 0);
    cleanup();
}

START_TEST(removed_from_group_fails_next_request)
{
    revoked(false);
}
END_TEST

START_TEST(admin_group_emptied_by_reload_fails_next_request)
{
    revoked(true);
}
END_TEST

int main(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "test_authz: needs root (user and group creation)\n");
        return 77;
    }
    Suite *s = suite_create("authz");
    TCase *tc = tcase_create("authz");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, removed_from_group_fails_next_request);
    tcase_add_test(tc, admin_group_emptied_by_reload_fails_next_request);
    suite_add_tcase(s, tc);
    return ho_check_run(s, true);
}
