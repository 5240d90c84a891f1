/* tests/proto/test_errors.c - the HO_E_* numbers are wire ABI (an Error
 * carries -code): pin every one, and check that the name and message
 * tables generated from HO_ERROR_MAP cover each code. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"

static const struct {
    int code;
    int value;
    const char *name;
} pinned[] = {
    {HO_E_PROTOCOL, -1000, "HO_E_PROTOCOL"},
    {HO_E_VERSION, -1001, "HO_E_VERSION"},
    {HO_E_FRAME_TOO_LARGE, -1002, "HO_E_FRAME_TOO_LARGE"},
    {HO_E_NOT_REGISTERED, -1003, "HO_E_NOT_REGISTERED"},
    {HO_E_UNKNOWN_SESSION, -1004, "HO_E_UNKNOWN_SESSION"},
    {HO_E_UNKNOWN_EXTENT, -1005, "HO_E_UNKNOWN_EXTENT"},
    {HO_E_UNKNOWN_DEVICE, -1006, "HO_E_UNKNOWN_DEVICE"},
    {HO_E_QUOTA, -1007, "HO_E_QUOTA"},
    {HO_E_TIER_FULL, -1008, "HO_E_TIER_FULL"},
    {HO_E_TOO_LARGE, -1009, "HO_E_TOO_LARGE"},
    {HO_E_BUDGET, -1010, "HO_E_BUDGET"},
    {HO_E_PERMISSION, -1011, "HO_E_PERMISSION"},
    {HO_E_INFEASIBLE, -1012, "HO_E_INFEASIBLE"},
    {HO_E_BAD_TRACE, -1013, "HO_E_BAD_TRACE"},
    {HO_E_BAD_SCHEDULE, -1014, "HO_E_BAD_SCHEDULE"},
    {HO_E_BAD_CONFIG, -1015, "HO_E_BAD_CONFIG"},
    {HO_E_INVALID_SIZE, -1016, "HO_E_INVALID_SIZE"},
    {HO_E_STATE, -1017, "HO_E_STATE"},
    {HO_E_BUSY, -1018, "HO_E_BUSY"},
    {HO_E_ALREADY, -1019, "HO_E_ALREADY"},
    {HO_E_SHUTTING_DOWN, -1020, "HO_E_SHUTTING_DOWN"},
    {HO_E_DISCONNECTED, -1021, "HO_E_DISCONNECTED"},
    {HO_E_DIVERGED, -1022, "HO_E_DIVERGED"},
    {HO_E_NO_PLAN, -1023, "HO_E_NO_PLAN"},
    {HO_E_DEVICE, -1024, "HO_E_DEVICE"},
    {HO_E_UNSUPPORTED, -1025, "HO_E_UNSUPPORTED"},
    {HO_E_INTERNAL, -1026, "HO_E_INTERNAL"},
};
#define N_PINNED (sizeof(pinned) / sizeof(pinned[0]))

START_TEST(numbers_are_pinned)
{
    for (size_t i = 0; i < N_PINNED; i++) {
        ck_assert_int_eq(pinned[i].code, pinned[i].value);
        ck_assert_str_eq(ho_err_name(pinned[i].code), pinned[i].name);
        ck_assert_str_ne(ho_strerror(pinned[i].code), "unknown error");
    }
}
END_TEST

/* Every row of the list is pinned above: a new code is appended to both. */
START_TEST(list_has_no_unpinned_row)
{
    size_t n = 0;
#define COUNT_ROW(name, code, text) n++;
    HO_ERROR_MAP(COUNT_ROW)
#undef COUNT_ROW
    ck_assert_uint_eq(n, N_PINNED);
}
END_TEST

START_TEST(errno_and_unknown_codes)
{
    ck_assert_str_eq(ho_err_name(-ENOMEM), "ENOMEM");
    ck_assert_str_eq(ho_strerror(-ENOENT), strerror(ENOENT));
    ck_assert_str_eq(ho_err_name(-5000), "HO_E_UNKNOWN");
    ck_assert_str_eq(ho_strerror(-5000), "unknown error");
    ck_assert_str_eq(ho_err_name(HO_OK), "HO_OK");
}
END_TEST

START_TEST(errf_formats_and_returns_code)
{
    char buf[16];
    ck_assert_int_eq(ho_errf(buf, sizeof buf, -EINVAL, "bad %d", 42), -EINVAL);
    ck_assert_str_eq(buf, "bad 42");
    ck_assert_int_eq(ho_errf(buf, sizeof buf, 7, "%s", "a sentence too long"), 7);
    ck_assert_uint_eq(strlen(buf), sizeof buf - 1); /* truncated, terminated */
    ck_assert_int_eq(ho_errf(NULL, 0, HO_E_STATE, "ignored"), HO_E_STATE);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_errors");
    TCase *tc = tcase_create("errors");
    tcase_add_test(tc, numbers_are_pinned);
    tcase_add_test(tc, list_has_no_unpinned_row);
    tcase_add_test(tc, errno_and_unknown_codes);
    tcase_add_test(tc, errf_formats_and_returns_code);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
