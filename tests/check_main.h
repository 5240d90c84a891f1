/*
 * tests/check_main.h - the end of every check(3) test program: run the
 * suite and turn its failures into the exit status.
 *     return ho_check_run(s, false);   (true: CK_NOFORK, for tests that
 *                                       keep state across cases or fork
 *                                       children of their own)
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

#endif
