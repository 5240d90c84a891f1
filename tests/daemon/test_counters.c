/* tests/daemon/test_counters.c - daemon/counters.c: errors counted by
 * code (every HO_E_* row, errno values, the rest), admissions, the job
 * table and its overflow row. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/counters.h"

static srv_counters *fresh(void)
{
    srv_counters *k = calloc(1, sizeof(*k));
    ck_assert_ptr_nonnull(k);
    return k;
}

START_TEST(errors_by_code)
{
    srv_counters *k = fresh();
    /* every row of HO_ERROR_MAP has a slot of its own */
#define ROW(name, code, text)                                             \
    srv_count_error(k, code);                                             \
    ck_assert_uint_eq(srv_count_errors(k, code), 1);                      \
    memset(k->errors_ho, 0, sizeof(k->errors_ho));
    HO_ERROR_MAP(ROW)
#undef ROW
    srv_count_error(k, HO_E_QUOTA);
    srv_count_error(k, HO_E_QUOTA);
    srv_count_error(k, HO_E_PROTOCOL);
    srv_count_error(k, HO_E_INTERNAL);
    srv_count_error(k, -EINVAL);
    srv_count_error(k, -999);          /* errno beyond the table */
    srv_count_error(k, -5000);         /* neither: not counted */
    srv_count_error(k, 0);
    ck_assert_uint_eq(srv_count_errors(k, HO_E_QUOTA), 2);
    ck_assert_uint_eq(srv_count_errors(k, HO_E_PROTOCOL), 1);
    ck_assert_uint_eq(srv_count_errors(k, HO_E_INTERNAL), 1);
    ck_assert_uint_eq(srv_count_errors(k, HO_E_BUDGET), 0);
    ck_assert_uint_eq(srv_count_errors(k, -EINVAL), 1);
    ck_assert_uint_eq(k->errors_errno[0], 1);
    ck_assert_uint_eq(srv_count_errors(k, -5000), 0);
    uint64_t sum = 0;
    for (int i = 0; i < SRV_COUNT_HO_CODES; i++)
        sum += k->errors_ho[i];
    ck_assert_uint_eq(sum, 4);
    free(k);
}
END_TEST

START_TEST(admissions)
{
    srv_counters *k = fresh();
    srv_count_admission(k, SRV_ADMIT_ALLOC, 0);
    srv_count_admission(k, SRV_ADMIT_ALLOC, HO_E_QUOTA);
    srv_count_admission(k, SRV_ADMIT_STAGE, 1);
    srv_count_admission(k, SRV_ADMIT_N, 0);   /* ignored */
    ck_assert_uint_eq(k->admitted[SRV_ADMIT_ALLOC], 1);
    ck_assert_uint_eq(k->refused[SRV_ADMIT_ALLOC], 1);
    ck_assert_uint_eq(k->admitted[SRV_ADMIT_STAGE], 1);
    ck_assert_str_eq(srv_admit_kind_name(SRV_ADMIT_REGISTER), "register");
    ck_assert_str_eq(srv_admit_kind_name(SRV_ADMIT_N), "unknown");
    free(k);
}
END_TEST

START_TEST(jobs_and_overflow)
{
    srv_counters *k = fresh();
    Hyperoffload__RuntimeInfo ri = HYPEROFFLOAD__RUNTIME_INFO__INIT;
    ri.steps = 3;
    ri.h2d_bytes = 100;
    ri.stall_us = 2e6;
    srv_count_replay_end(k, "train", &ri);
    srv_count_replay_end(k, "train", &ri);
    srv_job_totals *t = srv_count_job(k, "train");
    ck_assert_uint_eq(k->n_jobs, 1);
    ck_assert_uint_eq(t->replays, 2);
    ck_assert_uint_eq(t->steps, 6);
    ck_assert_uint_eq(t->h2d_bytes, 200);
    ck_assert(t->stall_s > 3.99 && t->stall_s < 4.01);
    char name[32];
    for (int i = 1; i < SRV_METRICS_JOBS_MAX; i++) {
        snprintf(name, sizeof(name), "job%d", i);
        ck_assert_ptr_ne(srv_count_job(k, name), &k->other);
    }
    ck_assert_uint_eq(k->n_jobs, SRV_METRICS_JOBS_MAX);
    /* full: new jobs add up in the overflow row, known ones still hit */
    ck_assert_ptr_eq(srv_count_job(k, "late"), &k->other);
    ck_assert_ptr_eq(srv_count_job(k, "train"), t);
    srv_count_replay_end(k, "later", &ri);
    ck_assert_uint_eq(k->other.replays, 1);
    free(k);
}
END_TEST

int main(void)
{
    TCase *t = tcase_create("counters");
    tcase_add_test(t, errors_by_code);
    tcase_add_test(t, admissions);
    tcase_add_test(t, jobs_and_overflow);
    Suite *s = suite_create("daemon_counters");
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(NULL);
    srunner_add_suite(r, s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
