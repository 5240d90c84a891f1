/*
 * tests/integration/test_stress.c - 64 client processes, each doing 1,000
 * alloc / write / verify / free cycles against one real daemon at the same
 * time, complete without error, and `hoctl status --json` shows zero DDR
 * use afterwards.  Under valgrind (the daemon runs under valgrind too) the
 * counts shrink to 8 processes x 50 cycles; the checks stay.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/itest.h"

typedef struct stress_arg {
    const char *sock;
    unsigned index, cycles;
    int go_fd, go_wfd;
} stress_arg;

/* One client process.  Exit 0, or a code naming the failed step. */
static int stress_child(void *p)
{
    const stress_arg *a = p;
    char go;
    close(a->go_wfd); /* else the start signal (EOF) never comes */
    if (read(a->go_fd, &go, 1) != 0)
        return 9;
    ho_client *c = NULL;
    char name[32];
    snprintf(name, sizeof(name), "stress-%u", a->index);
    if (ho_connect(a->sock, name, &c) != 0)
        return 10;
    int rc = 0;
    if (ho_register(c, NULL, -1, 0) != 0) {
        rc = 11;
        goto out;
    }
    uint64_t rnd = 0x9E3779B97F4A7C15ull * (a->index + 1);
    for (unsigned i = 0; i < a->cycles; i++) {
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        uint64_t bytes = 4096 * (1 + rnd % 16) - (rnd >> 32) % 4096;
        uint64_t seed = ((uint64_t)a->index << 32) | i;
        ho_extent e;
        if (ho_extent_alloc(c, bytes, &e) != 0) {
            rc = 20;
            break;
        }
        if (e.length < bytes || e.offset % 4096 != 0) {
            rc = 21;
            break;
        }
        it_fill(e.ptr, bytes, seed);
        if (!it_check(e.ptr, bytes, seed)) {
            rc = 22;
            break;
        }
        if (ho_extent_free(c, e.id) != 0) {
            rc = 23;
            break;
        }
    }
    if (rc == 0) {
        ho_usage u;
        if (ho_stats(c, NULL, 0, NULL, &u) != 0 || u.ddr_bytes != 0 ||
            u.extents != 0)
            rc = 30;
    }
out:
    ho_close(c);
    return rc;
}

START_TEST(test_64_clients_1000_cycles)
{
    unsigned nproc = ho_harness_under_valgrind() ? 8 : 64;
    unsigned cycles = ho_harness_under_valgrind() ? 50 : 1000;
    ho_harness *h = ho_harness_start_args(NULL);
    const char *sock = ho_harness_socket(h);

    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    /* static: a forked child must not hold heap blocks it cannot free */
    static pid_t pids[64];
    static stress_arg args[64];
    for (unsigned i = 0; i < nproc; i++) {
        args[i] = (stress_arg){.sock = sock, .index = i, .cycles = cycles,
                               .go_fd = go[0], .go_wfd = go[1]};
        pids[i] = it_spawn(stress_child, &args[i]);
    }
    close(go[0]);
    close(go[1]); /* everyone starts now */
    unsigned failed = 0;
    int first_rc = 0;
    for (unsigned i = 0; i < nproc; i++) {
        int rc = it_wait(pids[i]);
        if (rc != 0) {
            failed++;
            if (!first_rc)
                first_rc = rc;
        }
    }
    ck_assert_msg(failed == 0, "%u of %u clients failed (first exit %d)",
                  failed, nproc, first_rc);

    json_t *st = it_status(sock);
    ck_assert_ptr_nonnull(st);
    uint64_t used = 1, extents = 1;
    ck_assert_int_eq(it_tier(st, "ddr", &used, &extents, NULL), 0);
    json_decref(st);
    ck_assert_uint_eq(used, 0);
    ck_assert_uint_eq(extents, 0);
    /* and every session is gone once the daemon saw the connections close */
    int gone = 0;
    for (int k = 0; k < 200 && !gone; k++) {
        st = it_status(sock);
        ck_assert_ptr_nonnull(st);
        gone = json_integer_value(json_object_get(st, "clients")) == 0;
        json_decref(st);
        if (!gone)
            usleep(50000);
    }
    ck_assert(gone);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("integration_stress");
    TCase *tc = tcase_create("daemon");
    tcase_set_timeout(tc, ho_harness_under_valgrind() ? 3000 : 300);
    tcase_add_test(tc, test_64_clients_1000_cycles);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
