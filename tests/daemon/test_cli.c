/* tests/daemon/test_cli.c - the hyperoffloadd binary's command line:
 * --check-config on good and bad files, --help, --version, flag errors.
 * No daemon is started. */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

static char dir[PATH_MAX];

static void setup(void)
{
    const char *b = getenv("HO_BUILD_DIR");
    snprintf(dir, sizeof(dir), "%s/hocli-XXXXXX", b && *b ? b : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

static const char *conf(const char *name, const char *text)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Run the daemon binary with args; stdout+stderr into *out (malloc'ed).
 * Returns the exit status. */
static int run(char **out, const char *a1, const char *a2, const char *a3,
               const char *a4)
{
    char outpath[PATH_MAX + 16];
    snprintf(outpath, sizeof(outpath), "%s/out.txt", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        /* Relative default paths must not land in the source tree. */
        if (chdir(dir) != 0)
            _exit(126);
        const char *argv[] = {ho_harness_daemon_path(), a1, a2, a3, a4, NULL};
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    FILE *f = fopen(outpath, "r");
    ck_assert_ptr_nonnull(f);
    *out = calloc(1, 65536);
    size_t n = fread(*out, 1, 65535, f);
    (*out)[n] = '\0';
    fclose(f);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

START_TEST(check_config_good)
{
    const char *p = conf("good.conf", "[ddr]\ncapacity = 2G\n[devices]\n"
                                      "count = 4\nhbm_capacity = 64G\n");
    char *out = NULL;
    ck_assert_int_eq(run(&out, "--check-config", "--config", p, NULL), 0);
    ck_assert_msg(strstr(out, "configuration OK"), "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "good.conf"));
    free(out);
    /* Flags alone, no file. */
    ck_assert_int_eq(run(&out, "--check-config", "--ddr-capacity=8M", NULL,
                         NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "embedded default"));
    free(out);
    /* A valid file does not start anything: no socket, no state dir. */
    char sock[PATH_MAX + 64];
    snprintf(sock, sizeof(sock), "%s/.hyperoffload", dir);
    ck_assert_int_eq(access(sock, F_OK), -1);
}
END_TEST

START_TEST(check_config_bad)
{
    const char *p = conf("bad.conf", "[ddr]\n\ncapacity = 99T\n");
    char *out = NULL;
    ck_assert_int_eq(run(&out, "--check-config", "--config", p, NULL), 1);
    ck_assert_msg(strstr(out, "bad.conf:3: [ddr] capacity: '99T' is above "
                              "the maximum 64T"), "%s", out);
    free(out);
    p = conf("bad2.conf", "[flash]\ncapacity = 1G\nsize = 2G\n");
    ck_assert_int_eq(run(&out, "--check-config", "--config", p, NULL), 1);
    ck_assert_msg(strstr(out, "bad2.conf:3: unknown key 'size' in section "
                              "[flash]"), "%s", out);
    free(out);
    p = conf("bad3.conf", "[devices]\ncount = 3\nhbm_capacity = 1G,2G\n");
    ck_assert_int_eq(run(&out, "--check-config", "--config", p, NULL), 1);
    ck_assert_msg(strstr(out, "hbm_capacity has 2 values"), "%s", out);
    free(out);
    ck_assert_int_eq(run(&out, "--check-config", "--config",
                         "/nonexistent/x.conf", NULL), 1);
    ck_assert_msg(strstr(out, "/nonexistent/x.conf: No such file"), "%s",
                  out);
    free(out);
    /* A flag overriding a good file with a bad value. */
    p = conf("good.conf", "[ddr]\ncapacity = 2G\n");
    ck_assert_int_eq(run(&out, "--check-config", "--config", p,
                         "--ddr-alignment=12K"), 1);
    ck_assert_msg(strstr(out, "alignment 12K is not a power of two"), "%s",
                  out);
    free(out);
}
END_TEST

START_TEST(help_version_usage)
{
    char *out = NULL;
    ck_assert_int_eq(run(&out, "--help", NULL, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "--ddr-capacity SIZE"));
    ck_assert_ptr_nonnull(strstr(out, "--flash-paths"));
    ck_assert_ptr_nonnull(strstr(out, "--check-config"));
    free(out);
    ck_assert_int_eq(run(&out, "--version", NULL, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "hyperoffloadd 0.1.0"));
    free(out);
    ck_assert_int_eq(run(&out, "--no-such-flag", NULL, NULL, NULL), 2);
    ck_assert_ptr_nonnull(strstr(out, "unknown option '--no-such-flag'"));
    free(out);
    ck_assert_int_eq(run(&out, "--print-config", "--ddr-capacity", "3G",
                         NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "\n[ddr]\n"));
    ck_assert_ptr_nonnull(strstr(out, "\ncapacity = 3G\n"));
    free(out);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_cli");
    TCase *t = tcase_create("cli");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, check_config_good);
    tcase_add_test(t, check_config_bad);
    tcase_add_test(t, help_version_usage);
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
