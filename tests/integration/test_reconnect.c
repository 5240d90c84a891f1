/* tests/integration/test_reconnect.c - the library's opt-in reconnect
 * (ho_set_reconnect, client/connect.c) against a real daemon that is
 * SIGKILLed and started again on the same socket: with reconnect on, the
 * next ho_stats works, the client is registered again (same job, device,
 * budget; a new empty session), ho_reconnects is 1, an extent from before
 * fails with HO_E_DISCONNECTED and a sentence, a new alloc works and its
 * memory is usable; with reconnect off the call fails with
 * HO_E_DISCONNECTED.  A daemon that stays away exhausts the bounded
 * attempts: HO_E_DISCONNECTED naming them. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tests/check_main.h"
#include "tests/integration/itest.h"

static ho_harness *h;

/* ho_stats: 0 with some tiers, or its error. */
static int stats(ho_client *c)
{
    ho_tier_stats ts[8];
    size_t n = 0;
    int rc = ho_stats(c, ts, 8, &n, NULL);
    return rc == 0 && n == 0 ? -1 : rc;
}

static void restart(void)
{
    char err[512];
    ck_assert_int_eq(ho_harness_kill9(h), 0);
    ck_assert_msg(ho_harness_restart(h, err, sizeof(err)) == 0, "%s", err);
}

START_TEST(reconnect_after_daemon_restart)
{
    h = ho_harness_start_args(NULL);
    const char *sock = ho_harness_socket(h);
    ho_client *on = NULL, *off = NULL;
    ck_assert_int_eq(ho_connect(sock, "reconnecting", &on), 0);
    ck_assert_int_eq(ho_connect(sock, "not-reconnecting", &off), 0);
    ho_set_reconnect(on, 5, 400);
    ck_assert_int_eq(ho_register(on, "rjob", 0, 4 << 20), 0);
    ck_assert_int_eq(ho_register(off, NULL, -1, 0), 0);
    uint64_t sid = ho_session_id(on);
    ho_extent old;
    ck_assert_int_eq(ho_extent_alloc(on, 1 << 20, &old), 0);
    it_fill(old.ptr, 1 << 20, 7);
    ck_assert_int_eq(stats(on), 0);
    ck_assert_uint_eq(ho_reconnects(on), 0);

    restart();

    char why[256];
    ck_assert_int_eq(stats(on), 0);
    ck_assert_uint_eq(ho_reconnects(on), 1);
    ck_assert_uint_ne(ho_session_id(on), 0);
    ck_assert_uint_eq(ho_hbm_granted(on), 4 << 20);
    ck_assert_int_eq(ho_session_device(on), 0);
    (void)sid;
    /* The old extent went with the old session: refused once asked. */
    ck_assert_int_eq(ho_extent_free(on, old.id), HO_E_DISCONNECTED);
    ck_assert_ptr_nonnull(strstr(ho_last_error(on, why, sizeof(why)),
                                 "before the client reconnected"));
    ck_assert_int_eq(ho_extent_spill(on, old.id, NULL), HO_E_DISCONNECTED);
    ho_extent x;
    ck_assert_int_eq(ho_extent_alloc(on, 1 << 20, &x), 0);
    it_fill(x.ptr, 1 << 20, 9);
    ck_assert_int_eq(it_check(x.ptr, 1 << 20, 9), 1);
    ck_assert_int_eq(ho_extent_free(on, x.id), 0);
    ck_assert_uint_eq(ho_reconnects(on), 1);

    /* Reconnect off: the lost connection is reported. */
    ck_assert_int_eq(stats(off), HO_E_DISCONNECTED);
    ck_assert_int_eq(stats(off), HO_E_DISCONNECTED);

    /* A call that needed the old session, when it is the one that finds
     * the daemon restarted: HO_E_DISCONNECTED once, then calls work. */
    ck_assert_int_eq(ho_extent_alloc(on, 4096, &x), 0);
    restart();
    ck_assert_int_eq(ho_extent_free(on, x.id), HO_E_DISCONNECTED);
    ck_assert_ptr_nonnull(strstr(ho_last_error(on, why, sizeof(why)),
                                 "previous session"));
    ck_assert_uint_eq(ho_reconnects(on), 2);
    ck_assert_int_eq(stats(on), 0);

    /* The daemon stays away: bounded attempts, then HO_E_DISCONNECTED. */
    ck_assert_int_eq(ho_harness_kill9(h), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(stats(on), HO_E_DISCONNECTED);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) +
               (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(s < 5.0, "reconnect attempts took %.1f s", s);
    ck_assert_ptr_nonnull(strstr(ho_last_error(on, why, sizeof(why)),
                                 "5 reconnect attempts failed"));
    ck_assert_uint_eq(ho_reconnects(on), 2);

    ho_close(on);
    ho_close(off);
    ho_harness_free(h);
}
END_TEST

int main(void)
{
    return ho_check_run_one("reconnect", reconnect_after_daemon_restart, 120);
}
