/*
 * tests/check_main.h - the end of every check(3) test program: run the
 * suite and turn its failures into the exit status.
 *     return ho_check_run(s, false);   (true: CK_NOFORK, for tests that
 *                                       keep state across cases or fork
 *                                       children of their own)
 * or, for a program of one test (suite and case both named `name`):
 *     return ho_check_run_one("load", thousand_clients, 600);
 */
#ifndef HO_TESTS_CHECK_MAIN_H
#define HO_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>

static inline int ho_check_run(Suite *s, bool nofork)
{
    SRunner *sr = srunner_create(s);
    if (nofork)
        srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static inline int ho_check_run_one(const char *name, const TTest *test,
                                   int timeout_s)
{
    Suite *s = suite_create(name);
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout_s);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
    return ho_check_run(s, false);
}

#endif
