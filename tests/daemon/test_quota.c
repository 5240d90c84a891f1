/* tests/daemon/test_quota.c - daemon/quota.c: persistence, reload,
 * atomicity, corrupt files, validation. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "daemon/quota.h"

static char dir[PATH_MAX];
static char path[PATH_MAX + 16];

static void setup(void)
{
    const char *b = getenv("HO_BUILD_DIR");
    snprintf(dir, sizeof(dir), "%s/hoquota-XXXXXX", b && *b ? b : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/quotas", dir);
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

static char *slurp(const char *p)
{
    FILE *f = fopen(p, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static srv_quota_entry uid_entry(uint32_t uid, srv_tier tier, uint64_t limit)
{
    srv_quota_entry e;
    memset(&e, 0, sizeof(e));
    e.kind = SRV_SUBJECT_UID;
    e.uid = uid;
    e.tier = tier;
    e.limit = limit;
    return e;
}

static srv_quota_entry job_entry(const char *job, srv_tier tier,
                                 uint64_t limit)
{
    srv_quota_entry e;
    memset(&e, 0, sizeof(e));
    e.kind = SRV_SUBJECT_JOB;
    snprintf(e.job, sizeof(e.job), "%s", job);
    e.tier = tier;
    e.limit = limit;
    return e;
}

START_TEST(missing_file_is_empty)
{
    srv_quota *q = NULL;
    char err[256];
    ck_assert_int_eq(srv_quota_open(path, &q, err, sizeof(err)), 0);
    ck_assert_uint_eq(srv_quota_count(q), 0);
    ck_assert_uint_eq(srv_quota_limit(q, SRV_SUBJECT_UID, 1000, NULL,
                                      SRV_TIER_DDR), 0);
    ck_assert_int_eq(access(path, F_OK), -1); /* nothing written yet */
    srv_quota_free(q);
}
END_TEST

START_TEST(persist_and_reload)
{
    srv_quota *q = NULL;
    char err[256] = "";
    ck_assert_int_eq(srv_quota_open(path, &q, err, sizeof(err)), 0);
    srv_quota_entry a = uid_entry(1000, SRV_TIER_DDR, 2ull << 30);
    srv_quota_entry b = job_entry("train-7b", SRV_TIER_FLASH, 1ull << 40);
    srv_quota_entry c = uid_entry(1000, SRV_TIER_HBM, 12345);
    ck_assert_int_eq(srv_quota_set(q, &a, err, sizeof(err)), 0);
    ck_assert_int_eq(srv_quota_set(q, &b, err, sizeof(err)), 0);
    ck_assert_int_eq(srv_quota_set(q, &c, err, sizeof(err)), 0);
    /* Replace keeps the count. */
    a.limit = 3ull << 30;
    ck_assert_int_eq(srv_quota_set(q, &a, err, sizeof(err)), 0);
    ck_assert_uint_eq(srv_quota_count(q), 3);
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "uid 1000 ddr 3221225472\n"));
    ck_assert_ptr_nonnull(strstr(text, "job train-7b flash 1099511627776\n"));
    ck_assert_ptr_nonnull(strstr(text, "uid 1000 hbm 12345\n"));
    free(text);
    srv_quota_free(q);

    q = NULL;
    ck_assert_int_eq(srv_quota_open(path, &q, err, sizeof(err)), 0);
    ck_assert_uint_eq(srv_quota_count(q), 3);
    ck_assert_uint_eq(srv_quota_limit(q, SRV_SUBJECT_UID, 1000, NULL,
                                      SRV_TIER_DDR), 3ull << 30);
    ck_assert_uint_eq(srv_quota_limit(q, SRV_SUBJECT_JOB, 0, "train-7b",
                                      SRV_TIER_FLASH), 1ull << 40);
    ck_assert_uint_eq(srv_quota_limit(q, SRV_SUBJECT_JOB, 0, "train-7b",
                                      SRV_TIER_DDR), 0);
    ck_assert_uint_eq(srv_quota_limit(q, SRV_SUBJECT_UID, 1001, NULL,
                                      SRV_TIER_DDR), 0);
    /* Insertion order is kept. */
    ck_assert_int_eq(srv_quota_at(q, 1)->kind, SRV_SUBJECT_JOB);
    ck_assert_str_eq(srv_quota_at(q, 1)->job, "train-7b");

    ck_assert_int_eq(srv_quota_clear(q, SRV_SUBJECT_JOB, 0, "train-7b",
                                     SRV_TIER_FLASH, err, sizeof(err)), 1);
    ck_assert_int_eq(srv_quota_clear(q, SRV_SUBJECT_JOB, 0, "train-7b",
                                     SRV_TIER_FLASH, err, sizeof(err)), 0);
    srv_quota_free(q);
    q = NULL;
    ck_assert_int_eq(srv_quota_open(path, &q, err, sizeof(err)), 0);
    ck_assert_uint_eq(srv_quota_count(q), 2);
    ck_assert_uint_eq(srv_quota_limit(q, SRV_SUBJECT_JOB, 0, "train-7b",
                                      SRV_TIER_FLASH), 0);
    srv_quota_free(q);
    /* No temporary file is left behind. */
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    ck_assert_int_eq(access(tmp, F_OK), -1);
}
END_TEST

/* A write that cannot happen changes neither the file nor the store. */
START_TEST(failed_write_changes_nothing)
{
    srv_quota *q = NULL;
    char err[256] = "";
    ck_assert_int_eq(srv_quota_open(path, &q, err, sizeof(err)), 0);
    srv_quota_entry a = uid_entry(7, SRV_TIER_DDR, 4096);
    ck_assert_int_eq(srv_quota_set(q, &a, err, sizeof(err)), 0);
    char *before = slurp(path);
    ck_assert_ptr_nonnull(before);

    /* The temporary file's name is taken by a directory: open() fails. */
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    srv_quota_entry b = uid_entry(8, SRV_TIER_DDR, 8192);
    err[0] = '\0';
    ck_assert_int_eq(srv_quota_set(q, &b, err, sizeof(err)), -EISDIR);
    ck_assert_ptr_nonnull(strstr(err, "quotas.tmp"));
    a.limit = 1;
    ck_assert_int_lt(srv_quota_set(q, &a, err, sizeof(err)), 0);
    ck_assert_int_lt(srv_quota_clear(q, SRV_SUBJECT_UID, 7, NULL,
                                     SRV_TIER_DDR, err, sizeof(err)), 0);
    ck_assert_uint_eq(srv_quota_count(q), 1);
    ck_assert_uint_eq(srv_quota_limit(q, SRV_SUBJECT_UID, 7, NULL,
                                      SRV_TIER_DDR), 4096);
    ck_assert_uint_eq(srv_quota_limit(q, SRV_SUBJECT_UID, 8, NULL,
                                      SRV_TIER_DDR), 0);
    char *after = slurp(path);
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    rmdir(tmp);
    /* Works again once the obstacle is gone. */
    ck_assert_int_eq(srv_quota_set(q, &b, err, sizeof(err)), 0);
    ck_assert_uint_eq(srv_quota_count(q), 2);
    srv_quota_free(q);
}
END_TEST

START_TEST(invalid_entries)
{
    srv_quota *q = NULL;
    char err[256] = "";
    ck_assert_int_eq(srv_quota_open(path, &q, err, sizeof(err)), 0);
    srv_quota_entry e = uid_entry(1, SRV_TIER_DDR, 0);
    ck_assert_int_eq(srv_quota_set(q, &e, err, sizeof(err)),
                     HO_E_INVALID_SIZE);
    e = uid_entry(1, (srv_tier)9, 10);
    ck_assert_int_eq(srv_quota_set(q, &e, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "tier 9"));
    e = job_entry("has space", SRV_TIER_DDR, 10);
    ck_assert_int_eq(srv_quota_set(q, &e, err, sizeof(err)), -EINVAL);
    e = job_entry("", SRV_TIER_DDR, 10);
    ck_assert_int_eq(srv_quota_set(q, &e, err, sizeof(err)), -EINVAL);
    ck_assert_uint_eq(srv_quota_count(q), 0);
    ck_assert(srv_quota_job_valid("a"));
    ck_assert(!srv_quota_job_valid("tab\there"));
    char longjob[SRV_JOB_MAX + 2];
    memset(longjob, 'j', sizeof(longjob) - 1);
    longjob[sizeof(longjob) - 1] = '\0';
    ck_assert(!srv_quota_job_valid(longjob));
    longjob[SRV_JOB_MAX] = '\0';
    ck_assert(srv_quota_job_valid(longjob));
    srv_quota_free(q);
}
END_TEST

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static const char *open_fails(const char *text)
{
    static char err[512];
    write_file(text);
    srv_quota *q = NULL;
    err[0] = '\0';
    ck_assert_int_eq(srv_quota_open(path, &q, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_ptr_null(q);
    return err;
}

START_TEST(corrupt_file_names_the_line)
{
    char want[PATH_MAX + 64];
    const char *e = open_fails("# header\nuid 1 ddr 10\nuid x ddr 10\n");
    snprintf(want, sizeof(want), "%s:3: 'x' is not a uid", path);
    ck_assert_msg(strstr(e, want), "%s", e);
    e = open_fails("uid 1 disk 10\n");
    ck_assert_ptr_nonnull(strstr(e, "quotas:1: 'disk' is not a tier"));
    e = open_fails("\n\nuid 1 ddr 0\n");
    ck_assert_ptr_nonnull(strstr(e, "quotas:3: '0' is not a limit"));
    e = open_fails("uid 1 ddr 10 extra\n");
    ck_assert_ptr_nonnull(strstr(e, "quotas:1: expected"));
    e = open_fails("group 1 ddr 10\n");
    ck_assert_ptr_nonnull(strstr(e, "neither 'uid' nor 'job'"));
    e = open_fails("uid 1 ddr 10\nuid 1 ddr 20\n");
    ck_assert_ptr_nonnull(strstr(e, "quotas:2: duplicate entry"));
    e = open_fails("uid 1 ddr 99999999999999999999999\n");
    ck_assert_ptr_nonnull(strstr(e, "is not a limit"));
    /* Too many entries. */
    char *big = malloc((SRV_QUOTA_MAX_ENTRIES + 2) * 32);
    ck_assert_ptr_nonnull(big);
    size_t off = 0;
    for (int i = 0; i <= SRV_QUOTA_MAX_ENTRIES; i++)
        off += (size_t)sprintf(big + off, "uid %d ddr 4096\n", i);
    e = open_fails(big);
    ck_assert_ptr_nonnull(strstr(e, "more than 4096 entries"));
    free(big);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_quota");
    TCase *t = tcase_create("store");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, missing_file_is_empty);
    tcase_add_test(t, persist_and_reload);
    tcase_add_test(t, failed_write_changes_nothing);
    tcase_add_test(t, invalid_entries);
    tcase_add_test(t, corrupt_file_names_the_line);
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
