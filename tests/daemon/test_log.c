/* tests/daemon/test_log.c - daemon/log.c: journal priority prefixes when
 * JOURNAL_STREAM names stderr, timestamps otherwise, level filtering. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/log.h"

/* Run the logging in a child with stderr redirected to a file; returns
 * what it wrote.  journal: set JOURNAL_STREAM to the file's dev:ino (1),
 * to another file (2), or unset (0). */
static char *log_in_child(int journal, int level)
{
    char path[PATH_MAX];
    const char *b = getenv("HO_BUILD_DIR");
    snprintf(path, sizeof(path), "%s/holog-XXXXXX", b && *b ? b : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd, 2);
        struct stat st;
        fstat(2, &st);
        char js[64];
        snprintf(js, sizeof(js), "%llu:%llu",
                 (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino + (journal == 2 ? 1 : 0));
        if (journal)
            setenv("JOURNAL_STREAM", js, 1);
        else
            unsetenv("JOURNAL_STREAM");
        srv_log_init(level);
        srv_err("boom %d", 1);
        srv_warn("careful");
        srv_info("two\nlines");
        srv_debug("hidden unless debug");
        _exit(srv_log_journal() ? 7 : 8);
    }
    int st;
    waitpid(pid, &st, 0);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), journal == 1 ? 7 : 8);
    char *buf = calloc(1, 4096);
    ssize_t n = pread(fd, buf, 4095, 0);
    ck_assert_int_gt(n, 0);
    close(fd);
    unlink(path);
    return buf;
}

START_TEST(journal_prefixes)
{
    char *out = log_in_child(1, SRV_LOG_INFO);
    ck_assert_str_eq(out, "<3>boom 1\n<4>careful\n<6>two lines\n");
    free(out);
    out = log_in_child(1, SRV_LOG_DEBUG);
    ck_assert_ptr_nonnull(strstr(out, "<7>hidden unless debug\n"));
    free(out);
}
END_TEST

START_TEST(timestamps_otherwise)
{
    for (int j = 0; j <= 2; j += 2) {
        char *out = log_in_child(j, SRV_LOG_WARNING);
        regex_t re;
        ck_assert_int_eq(regcomp(&re,
                                 "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
                                 "[0-9]{2}\\.[0-9]{3} error: boom 1\n"
                                 "[0-9-]{10}T[0-9:.]{12} warning: careful\n$",
                                 REG_EXTENDED), 0);
        ck_assert_msg(regexec(&re, out, 0, NULL, 0) == 0, "'%s'", out);
        regfree(&re);
        free(out);
    }
}
END_TEST

START_TEST(level_names)
{
    int l = 0;
    ck_assert_int_eq(srv_log_level_parse("warn", &l), 0);
    ck_assert_int_eq(l, SRV_LOG_WARNING);
    ck_assert_int_eq(srv_log_level_parse("DEBUG", &l), 0);
    ck_assert_int_eq(l, SRV_LOG_DEBUG);
    ck_assert_int_eq(srv_log_level_parse("loud", &l), -EINVAL);
    ck_assert_str_eq(srv_log_level_name(SRV_LOG_NOTICE), "notice");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_log");
    TCase *t = tcase_create("log");
    tcase_add_test(t, journal_prefixes);
    tcase_add_test(t, timestamps_otherwise);
    tcase_add_test(t, level_names);
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
