/*
 * tests/tiers/test_hbm.c - the HBM budget table: grants that fit and are
 * refused, replacement, release, unknown devices, the reserve.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tiers/hbm.h"
#include "hyperoffload/errors.h"

#define GiB (1ULL << 30)

static tier_hbm *two_devices(void)
{
    tier_hbm_device d[2];
    tier_hbm *h;

    memset(d, 0, sizeof(d));
    strcpy(d[0].name, "emu0");
    d[0].capacity = 16 * GiB;
    d[0].reserve = 1 * GiB;
    strcpy(d[1].name, "emu1");
    d[1].capacity = 8 * GiB;
    d[1].reserve = 0;
    h = tier_hbm_new(d, 2);
    ck_assert_ptr_nonnull(h);
    return h;
}

START_TEST(test_new_and_devices)
{
    tier_hbm_device d[3];
    tier_hbm *h = two_devices();
    const tier_hbm_device *e;

    ck_assert_uint_eq(tier_hbm_count(h), 2);
    e = tier_hbm_device_get(h, 1);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(e->name, "emu1");
    ck_assert_uint_eq(e->capacity, 8 * GiB);
    ck_assert_ptr_null(tier_hbm_device_get(h, 2));
    ck_assert_ptr_null(tier_hbm_free(h));
    ck_assert_ptr_null(tier_hbm_free(NULL));

    /* empty table */
    h = tier_hbm_new(NULL, 0);
    ck_assert_ptr_nonnull(h);
    ck_assert_uint_eq(tier_hbm_count(h), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 1, 1), HO_E_UNKNOWN_DEVICE);
    tier_hbm_free(h);

    /* bad tables */
    memset(d, 0, sizeof(d));
    strcpy(d[0].name, "a");
    d[0].capacity = 10;
    d[0].reserve = 11;
    ck_assert_ptr_null(tier_hbm_new(d, 1));   /* reserve > capacity */
    d[0].reserve = 10;
    strcpy(d[1].name, "a");
    ck_assert_ptr_null(tier_hbm_new(d, 2));   /* duplicate name */
    strcpy(d[1].name, "");
    ck_assert_ptr_null(tier_hbm_new(d, 2));   /* empty name */
    memset(d[1].name, 'x', sizeof(d[1].name));
    ck_assert_ptr_null(tier_hbm_new(d, 2));   /* not terminated */
    ck_assert_ptr_null(tier_hbm_new(NULL, 1));
    ck_assert_ptr_null(tier_hbm_new(d, TIER_HBM_DEVICES_MAX + 1));
    /* reserve == capacity: valid, nothing grantable */
    h = tier_hbm_new(d, 1);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 1, 1), HO_E_BUDGET);
    tier_hbm_free(h);
}
END_TEST

START_TEST(test_fit_and_refuse)
{
    tier_hbm *h = two_devices();
    tier_hbm_grant_info g[4];

    /* emu0 grantable: 16 - 1 = 15 GiB */
    ck_assert_int_eq(tier_hbm_grant(h, 0, 100, 10 * GiB), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 200, 5 * GiB), 0);
    ck_assert_uint_eq(tier_hbm_granted(h, 0), 15 * GiB);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 300, 1), HO_E_BUDGET);
    ck_assert_uint_eq(tier_hbm_granted(h, 0), 15 * GiB);
    ck_assert_uint_eq(tier_hbm_grants(h, 0, g, 4), 2);
    ck_assert_uint_eq(g[0].owner, 100);
    ck_assert_uint_eq(g[0].bytes, 10 * GiB);
    ck_assert_uint_eq(g[1].owner, 200);

    /* devices are independent: emu1 has all 8 GiB */
    ck_assert_int_eq(tier_hbm_grant(h, 1, 300, 8 * GiB), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 1, 400, 1), HO_E_BUDGET);
    ck_assert_uint_eq(tier_hbm_granted(h, 1), 8 * GiB);

    /* sizes */
    ck_assert_int_eq(tier_hbm_grant(h, 1, 400, 0), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 500, UINT64_MAX), HO_E_BUDGET);
    ck_assert_uint_eq(tier_hbm_grants(h, 1, NULL, 0), 1);
    tier_hbm_free(h);
}
END_TEST

START_TEST(test_replace)
{
    tier_hbm *h = two_devices();
    tier_hbm_grant_info g[4];

    ck_assert_int_eq(tier_hbm_grant(h, 0, 1, 6 * GiB), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 2, 6 * GiB), 0);
    /* owner 1 grows to 9 GiB: 9 + 6 = 15 fits exactly */
    ck_assert_int_eq(tier_hbm_grant(h, 0, 1, 9 * GiB), 0);
    ck_assert_uint_eq(tier_hbm_granted(h, 0), 15 * GiB);
    ck_assert_uint_eq(tier_hbm_granted_to(h, 0, 1), 9 * GiB);
    /* growing past the budget is refused and keeps the old grant */
    ck_assert_int_eq(tier_hbm_grant(h, 0, 1, 9 * GiB + 1), HO_E_BUDGET);
    ck_assert_uint_eq(tier_hbm_granted_to(h, 0, 1), 9 * GiB);
    ck_assert_uint_eq(tier_hbm_granted(h, 0), 15 * GiB);
    /* shrinking makes room for someone else */
    ck_assert_int_eq(tier_hbm_grant(h, 0, 1, 2 * GiB), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 3, 7 * GiB), 0);
    ck_assert_uint_eq(tier_hbm_grants(h, 0, g, 4), 3);
    ck_assert_uint_eq(g[0].owner, 1); /* replacement keeps its place */
    ck_assert_uint_eq(g[0].bytes, 2 * GiB);
    ck_assert_uint_eq(g[2].owner, 3);
    /* only `max` entries are copied */
    memset(g, 0xff, sizeof(g));
    ck_assert_uint_eq(tier_hbm_grants(h, 0, g, 1), 3);
    ck_assert_uint_eq(g[0].owner, 1);
    ck_assert_uint_eq(g[1].owner, UINT64_MAX);
    tier_hbm_free(h);
}
END_TEST

START_TEST(test_release)
{
    tier_hbm *h = two_devices();
    tier_hbm_grant_info g[4];

    ck_assert_int_eq(tier_hbm_grant(h, 0, 1, 5 * GiB), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 2, 5 * GiB), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 3, 5 * GiB), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 1, 2, 1 * GiB), 0);
    ck_assert_int_eq(tier_hbm_release(h, 0, 2), 0);
    ck_assert_uint_eq(tier_hbm_granted(h, 0), 10 * GiB);
    ck_assert_uint_eq(tier_hbm_grants(h, 0, g, 4), 2);
    ck_assert_uint_eq(g[0].owner, 1);
    ck_assert_uint_eq(g[1].owner, 3);
    ck_assert_uint_eq(tier_hbm_granted(h, 1), 1 * GiB); /* other device */
    ck_assert_int_eq(tier_hbm_release(h, 0, 2), 0);    /* none: still 0 */
    ck_assert_int_eq(tier_hbm_release(h, 0, 99), 0);
    ck_assert_uint_eq(tier_hbm_granted(h, 0), 10 * GiB);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 4, 5 * GiB), 0); /* room again */

    /* a session going away drops its grants everywhere */
    ck_assert_int_eq(tier_hbm_grant(h, 1, 1, 2 * GiB), 0);
    ck_assert_uint_eq(tier_hbm_release_owner(h, 1), 2);
    ck_assert_uint_eq(tier_hbm_granted_to(h, 0, 1), 0);
    ck_assert_uint_eq(tier_hbm_granted_to(h, 1, 1), 0);
    ck_assert_uint_eq(tier_hbm_granted(h, 0), 10 * GiB);
    ck_assert_uint_eq(tier_hbm_granted(h, 1), 1 * GiB);
    ck_assert_uint_eq(tier_hbm_release_owner(h, 1), 0);
    tier_hbm_free(h);
}
END_TEST

START_TEST(test_unknown_device)
{
    tier_hbm *h = two_devices();
    tier_hbm_grant_info g[1];

    ck_assert_int_eq(tier_hbm_grant(h, 2, 1, GiB), HO_E_UNKNOWN_DEVICE);
    ck_assert_int_eq(tier_hbm_grant(h, UINT32_MAX, 1, GiB), HO_E_UNKNOWN_DEVICE);
    ck_assert_int_eq(tier_hbm_release(h, 2, 1), HO_E_UNKNOWN_DEVICE);
    ck_assert_uint_eq(tier_hbm_granted(h, 2), 0);
    ck_assert_uint_eq(tier_hbm_granted_to(h, 2, 1), 0);
    ck_assert_uint_eq(tier_hbm_grants(h, 2, g, 1), 0);
    tier_hbm_free(h);
}
END_TEST

START_TEST(test_reserve)
{
    tier_hbm_device d;
    tier_hbm *h;

    memset(&d, 0, sizeof(d));
    strcpy(d.name, "cuda:0");
    d.capacity = 80 * GiB;
    d.reserve = 6 * GiB;
    h = tier_hbm_new(&d, 1);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 1, 74 * GiB + 1), HO_E_BUDGET);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 1, 74 * GiB), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 2, 1), HO_E_BUDGET);
    ck_assert_uint_eq(tier_hbm_granted(h, 0), 74 * GiB);
    tier_hbm_free(h);
}
END_TEST

START_TEST(test_many_grants)
{
    tier_hbm_device d;
    tier_hbm *h;
    uint64_t i;

    memset(&d, 0, sizeof(d));
    strcpy(d.name, "emu0");
    d.capacity = UINT64_MAX;
    h = tier_hbm_new(&d, 1);
    for (i = 0; i < TIER_HBM_GRANTS_MAX; i++)
        ck_assert_int_eq(tier_hbm_grant(h, 0, i, 1), 0);
    ck_assert_int_eq(tier_hbm_grant(h, 0, i, 1), HO_E_BUDGET);
    ck_assert_int_eq(tier_hbm_grant(h, 0, 5, 7), 0); /* replace still works */
    ck_assert_uint_eq(tier_hbm_granted(h, 0), TIER_HBM_GRANTS_MAX + 6);
    ck_assert_uint_eq(tier_hbm_grants(h, 0, NULL, 0), TIER_HBM_GRANTS_MAX);
    tier_hbm_free(h);
}
END_TEST

static Suite *hbm_suite(void)
{
    Suite *s = suite_create("hbm");
    TCase *tc = tcase_create("hbm");

    tcase_add_test(tc, test_new_and_devices);
    tcase_add_test(tc, test_fit_and_refuse);
    tcase_add_test(tc, test_replace);
    tcase_add_test(tc, test_release);
    tcase_add_test(tc, test_unknown_device);
    tcase_add_test(tc, test_reserve);
    tcase_add_test(tc, test_many_grants);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hbm_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
