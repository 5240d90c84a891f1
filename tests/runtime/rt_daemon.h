/*
 * tests/runtime/rt_daemon.h - the fixture of the runtime tests against the
 * real daemon (test_rt_daemon, test_rt_restage): one daemon (h) and one
 * scratch directory (dir) per test, made by setup and removed by teardown
 * (tcase_add_checked_fixture).  Included once, by the test's one file.
 */
#ifndef HO_TESTS_RT_DAEMON_H
#define HO_TESTS_RT_DAEMON_H

#include "tests/harness.h"
#include "tests/runtime/rt_fw.h"

static ho_harness *h;
static char dir[512];

static void setup(void)
{
    h = ho_harness_start_args(NULL);
    rt_tmpdir(dir, sizeof dir);
}

static void teardown(void)
{
    rt_rmdir(dir);
    ck_assert_int_eq(ho_harness_free(h), 0);
}

#endif
