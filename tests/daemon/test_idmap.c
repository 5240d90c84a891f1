/* tests/daemon/test_idmap.c - daemon/idmap.c against a plain array model:
 * random puts, gets and deletes (with backward-shift deletion and growth),
 * plus the edge cases. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/idmap.h"

#define KEYS 4096

START_TEST(edge_cases)
{
    srv_idmap m;
    srv_idmap_init(&m);
    int x;
    ck_assert_ptr_null(srv_idmap_get(&m, 1));
    ck_assert_ptr_null(srv_idmap_del(&m, 1));
    ck_assert_int_eq(srv_idmap_put(&m, 0, &x), -EINVAL);
    ck_assert_int_eq(srv_idmap_put(&m, 5, &x), 0);
    ck_assert_int_eq(srv_idmap_put(&m, 5, &m), 0); /* replace */
    ck_assert_uint_eq(m.count, 1);
    ck_assert_ptr_eq(srv_idmap_get(&m, 5), &m);
    ck_assert_ptr_eq(srv_idmap_del(&m, 5), &m);
    ck_assert_uint_eq(m.count, 0);
    ck_assert_ptr_null(srv_idmap_get(&m, 5));
    srv_idmap_done(&m);
    srv_idmap_done(&m); /* twice is fine */
}
END_TEST

START_TEST(random_against_model)
{
    int iters = getenv("HO_UNDER_VALGRIND") ? 20000 : 300000;
    static void *model[KEYS + 1];
    srv_idmap m;
    srv_idmap_init(&m);
    unsigned seed = 42;
    size_t count = 0;
    for (int i = 0; i < iters; i++) {
        /* Keys from a small range collide a lot; some are far apart. */
        uint64_t k = 1 + rand_r(&seed) % KEYS;
        uint64_t key = k % 7 == 0 ? k << 40 : k;
        int op = (int)(rand_r(&seed) % 10);
        if (op < 5) {
            void *v = (void *)(uintptr_t)(i + 1);
            ck_assert_int_eq(srv_idmap_put(&m, key, v), 0);
            if (!model[k])
                count++;
            model[k] = v;
        } else if (op < 8) {
            ck_assert_ptr_eq(srv_idmap_del(&m, key), model[k]);
            if (model[k])
                count--;
            model[k] = NULL;
        } else {
            ck_assert_ptr_eq(srv_idmap_get(&m, key), model[k]);
        }
        ck_assert_uint_eq(m.count, count);
        if (i % 5000 == 0)
            for (uint64_t j = 1; j <= KEYS; j++)
                ck_assert_ptr_eq(srv_idmap_get(&m, j % 7 == 0 ? j << 40 : j),
                                 model[j]);
    }
    srv_idmap_done(&m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_idmap");
    TCase *t = tcase_create("idmap");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, edge_cases);
    tcase_add_test(t, random_against_model);
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
