/*
 * tests/integration/test_tiers.c - the real daemon, library and hoctl:
 * spill to flash and fill back byte-exact with the bytes visibly moving
 * between the tiers in `hoctl status --json`; quotas set with hoctl refuse
 * allocations and moves, change nothing, and survive a daemon restart; a
 * client killed with SIGKILL mid-session has its DDR and flash extents
 * reclaimed while another client's data stays intact.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/itest.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

/* ------------------------------------------------------------ spill/fill */

START_TEST(test_spill_fill_roundtrip)
{
    static const uint64_t sizes[] = {4096, 3 * 4096 + 17, 100 * KiB + 1,
                                     MiB + 5, 8 * MiB, 32 * MiB};
    enum { N = sizeof(sizes) / sizeof(sizes[0]) };
    ho_harness *h = ho_harness_start_args(NULL);
    const char *sock = ho_harness_socket(h);
    ho_client *c = it_client(sock, NULL);
    ho_extent e[N];
    uint64_t ddr0, flash0, ddr, flash;
    unsigned n = ho_harness_under_valgrind() ? N - 1 : N;

    it_used(sock, &ddr0, &flash0);
    for (unsigned i = 0; i < n; i++) {
        ck_assert_int_eq(ho_extent_alloc(c, sizes[i], &e[i]), 0);
        ck_assert_uint_eq(e[i].length % 4096, 0);
        ck_assert_uint_ge(e[i].length, sizes[i]);
        it_fill(e[i].ptr, sizes[i], 100 + i);
    }
    uint64_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += e[i].length;
    it_used(sock, &ddr, &flash);
    ck_assert_uint_eq(ddr, ddr0 + total);
    ck_assert_uint_eq(flash, flash0);

    /* one at a time: the bytes leave DDR for flash and come back */
    for (unsigned i = 0; i < n; i++) {
        uint64_t d0, f0, d1, f1;
        ho_move_result m;
        ho_usage u0, u1;
        it_used(sock, &d0, &f0);
        ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, &u0), 0);
        ck_assert_int_eq(ho_extent_spill(c, e[i].id, &m), 0);
        ck_assert_int_eq(m.residency, HO_TIER_FLASH);
        ck_assert_uint_ge(m.bytes, sizes[i]);
        it_used(sock, &d1, &f1);
        ck_assert_uint_eq(d1, d0 - e[i].length);
        ck_assert_uint_ge(f1, f0 + e[i].length);
        ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, &u1), 0);
        ck_assert_uint_eq(u1.ddr_bytes, u0.ddr_bytes - e[i].length);
        ck_assert_uint_eq(u1.flash_bytes - u0.flash_bytes, f1 - f0);
        ck_assert_uint_eq(u1.extents, u0.extents);

        ck_assert_int_eq(ho_extent_fill(c, e[i].id, &m), 0);
        ck_assert_int_eq(m.residency, HO_TIER_DDR);
        ck_assert_msg(it_check(e[i].ptr, sizes[i], 100 + i),
                      "extent of %llu bytes differs after spill+fill",
                      (unsigned long long)sizes[i]);
        it_used(sock, &d1, &f1);
        ck_assert_uint_eq(d1, d0);
        ck_assert_uint_eq(f1, f0);
    }

    /* all out, then all back in reverse order */
    for (unsigned i = 0; i < n; i++)
        ck_assert_int_eq(ho_extent_spill(c, e[i].id, NULL), 0);
    it_used(sock, &ddr, &flash);
    ck_assert_uint_eq(ddr, ddr0);
    ck_assert_uint_ge(flash, flash0 + total);
    for (unsigned i = n; i-- > 0;) {
        ck_assert_int_eq(ho_extent_fill(c, e[i].id, NULL), 0);
        ck_assert(it_check(e[i].ptr, sizes[i], 100 + i));
    }
    it_used(sock, &ddr, &flash);
    ck_assert_uint_eq(ddr, ddr0 + total);
    ck_assert_uint_eq(flash, flash0);

    /* rewrite after a fill, spill again: the new bytes come back */
    it_fill(e[2].ptr, sizes[2], 7777);
    ck_assert_int_eq(ho_extent_spill(c, e[2].id, NULL), 0);
    ck_assert_int_eq(ho_extent_fill(c, e[2].id, NULL), 0);
    ck_assert(it_check(e[2].ptr, sizes[2], 7777));

    /* free a spilled extent: flash is released too */
    ck_assert_int_eq(ho_extent_spill(c, e[0].id, NULL), 0);
    for (unsigned i = 0; i < n; i++)
        ck_assert_int_eq(ho_extent_free(c, e[i].id), 0);
    it_used(sock, &ddr, &flash);
    ck_assert_uint_eq(ddr, ddr0);
    ck_assert_uint_eq(flash, flash0);
    it_close(c);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

/* ------------------------------------------------------------ quota */

static json_t *quota_get(const char *sock, const char *kind, const char *who,
                         const char *tier)
{
    const char *args[] = {"--socket", sock, "--json", "quota", "get",
                          kind,       who,  "--tier", tier,    NULL};
    char *out = NULL;
    int rc = it_hoctl(&out, args);
    ck_assert_msg(rc == 0, "hoctl quota get %s %s: exit %d", kind, who, rc);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    free(out);
    ck_assert_ptr_nonnull(j);
    return j;
}

static uint64_t quota_limit(const char *sock, const char *kind,
                            const char *who, const char *tier)
{
    json_t *j = quota_get(sock, kind, who, tier);
    json_t *q = json_array_get(json_object_get(j, "quotas"), 0);
    uint64_t v = q ? (uint64_t)json_integer_value(json_object_get(q, "limit"))
                   : 0;
    json_decref(j);
    return v;
}

static void ddr_flash(ho_client *c, uint64_t *d, uint64_t *f, uint64_t *n)
{
    ho_usage u;
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, &u), 0);
    *d = u.ddr_bytes;
    *f = u.flash_bytes;
    *n = u.extents;
}

START_TEST(test_quota)
{
    ho_harness *h = ho_harness_start_args(NULL);
    const char *sock = ho_harness_socket(h);
    char uid[32];
    snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
    uint64_t d0, f0, n0, d1, f1, n1, dd0, ff0, dd1, ff1;
    ho_extent e, x;

    const char *set_uid[] = {"--socket", sock, "quota", "set", "--uid", uid,
                             "--tier", "ddr", "1M", NULL};
    ck_assert_int_eq(it_hoctl(NULL, set_uid), 0);
    ck_assert_uint_eq(quota_limit(sock, "--uid", uid, "ddr"), MiB);

    ho_client *c = it_client(sock, "job-quota");
    ddr_flash(c, &d0, &f0, &n0);
    it_used(sock, &dd0, &ff0);
    ck_assert_int_eq(ho_extent_alloc(c, 2 * MiB, &x), HO_E_QUOTA);
    ddr_flash(c, &d1, &f1, &n1);
    it_used(sock, &dd1, &ff1);
    ck_assert_uint_eq(d1, d0);
    ck_assert_uint_eq(n1, n0);
    ck_assert_uint_eq(dd1, dd0); /* nothing allocated anywhere */
    ck_assert_uint_eq(ff1, ff0);

    ck_assert_int_eq(ho_extent_alloc(c, 512 * KiB, &e), 0);
    it_fill(e.ptr, e.length, 31);
    ck_assert_int_eq(ho_extent_alloc(c, 768 * KiB, &x), HO_E_QUOTA);
    ck_assert_int_eq(ho_extent_alloc(c, 512 * KiB, &x), 0); /* exactly 1M */
    ck_assert_int_eq(ho_extent_free(c, x.id), 0);

    /* a job quota on flash refuses the spill; the extent stays in DDR */
    const char *set_job[] = {"--socket", sock, "quota", "set", "--job",
                             "job-quota", "--tier", "flash", "256K", NULL};
    ck_assert_int_eq(it_hoctl(NULL, set_job), 0);
    ddr_flash(c, &d0, &f0, &n0);
    ck_assert_int_eq(ho_extent_spill(c, e.id, NULL), HO_E_QUOTA);
    ddr_flash(c, &d1, &f1, &n1);
    ck_assert_uint_eq(d1, d0);
    ck_assert_uint_eq(f1, f0);
    ck_assert(it_check(e.ptr, e.length, 31));

    /* `quota list` shows both, with current use */
    const char *list[] = {"--socket", sock, "--json", "quota", "list", NULL};
    char *out = NULL;
    ck_assert_int_eq(it_hoctl(&out, list), 0);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    free(out);
    ck_assert_ptr_nonnull(j);
    json_t *qs = json_object_get(j, "quotas");
    ck_assert_uint_eq(json_array_size(qs), 2);
    size_t i;
    json_t *q;
    int seen_uid = 0, seen_job = 0;
    json_array_foreach(qs, i, q)
    {
        const char *subject = json_string_value(json_object_get(q, "subject"));
        ck_assert_ptr_nonnull(subject);
        if (strcmp(subject, "uid") == 0) {
            seen_uid = 1;
            ck_assert_int_eq(json_integer_value(json_object_get(q, "used")),
                             (json_int_t)e.length);
        } else {
            seen_job = 1;
            ck_assert_str_eq(json_string_value(json_object_get(q, "job")),
                             "job-quota");
        }
    }
    ck_assert(seen_uid && seen_job);
    json_decref(j);

    /* quotas persist across a restart */
    it_close(c);
    ck_assert_int_eq(ho_harness_stop(h), 0);
    char err[4096];
    ck_assert_msg(ho_harness_restart(h, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(quota_limit(sock, "--uid", uid, "ddr"), MiB);
    ck_assert_uint_eq(quota_limit(sock, "--job", "job-quota", "flash"),
                      256 * KiB);
    c = it_client(sock, "job-quota");
    ck_assert_int_eq(ho_extent_alloc(c, 2 * MiB, &x), HO_E_QUOTA);

    /* clearing lifts the limit */
    const char *clr[] = {"--socket", sock, "quota", "clear", "--uid", uid,
                         "--tier", "ddr", NULL};
    ck_assert_int_eq(it_hoctl(NULL, clr), 0);
    ck_assert_uint_eq(quota_limit(sock, "--uid", uid, "ddr"), 0);
    ck_assert_int_eq(ho_extent_alloc(c, 2 * MiB, &x), 0);
    ck_assert_int_eq(ho_extent_free(c, x.id), 0);
    it_close(c);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

/* ------------------------------------------------------------ SIGKILL */

typedef struct victim_arg {
    const char *sock;
    int ready_fd;
} victim_arg;

typedef struct spill_job {
    ho_client *c;
    uint64_t id;
} spill_job;

static void *spill_thread(void *p)
{
    spill_job *j = p;
    ho_extent_spill(j->c, j->id, NULL);
    return NULL;
}

/* Child: a client with extents in DDR and on flash and a spill in flight,
 * then it waits to be killed. */
static int victim(void *p)
{
    const victim_arg *a = p;
    ho_client *c = NULL;
    if (ho_connect(a->sock, "victim", &c) != 0 ||
        ho_register(c, NULL, 1, 16 * MiB) != 0)
        return 10;
    static const uint64_t sizes[] = {64 * KiB, MiB, 3 * MiB, 5 * MiB};
    ho_extent e[4];
    for (int i = 0; i < 4; i++) {
        if (ho_extent_alloc(c, sizes[i], &e[i]) != 0)
            return 11;
        it_fill(e[i].ptr, sizes[i], 500 + (uint64_t)i);
    }
    if (ho_extent_spill(c, e[1].id, NULL) != 0 ||
        ho_extent_spill(c, e[3].id, NULL) != 0)
        return 12;
    ho_extent big;
    if (ho_extent_alloc(c, 32 * MiB, &big) != 0)
        return 13;
    memset(big.ptr, 0x5a, 32 * MiB);
    /* start a large spill and get killed while it may be in flight */
    static spill_job job;
    job.c = c;
    job.id = big.id;
    pthread_t t;
    if (pthread_create(&t, NULL, spill_thread, &job) != 0)
        return 14;
    char r = 'R';
    if (write(a->ready_fd, &r, 1) != 1)
        return 15;
    for (;;)
        pause();
}

START_TEST(test_sigkill_reclaims)
{
    ho_harness *h = ho_harness_start_args(NULL);
    const char *sock = ho_harness_socket(h);
    ho_client *s = it_client(sock, NULL);
    ho_extent s1, s2;
    ck_assert_int_eq(ho_extent_alloc(s, MiB, &s1), 0);
    ck_assert_int_eq(ho_extent_alloc(s, 2 * MiB + 3, &s2), 0);
    it_fill(s1.ptr, MiB, 11);
    it_fill(s2.ptr, 2 * MiB + 3, 12);
    ck_assert_int_eq(ho_extent_spill(s, s2.id, NULL), 0);
    uint64_t ddr_b, flash_b;
    it_used(sock, &ddr_b, &flash_b);

    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    victim_arg a = {.sock = sock, .ready_fd = pfd[1]};
    pid_t pid = it_spawn(victim, &a);
    close(pfd[1]);
    char r = 0;
    ck_assert_int_eq(read(pfd[0], &r, 1), 1);
    close(pfd[0]);
    ck_assert_int_eq(r, 'R');

    uint64_t ddr_v, flash_v;
    it_used(sock, &ddr_v, &flash_v);
    ck_assert_uint_gt(ddr_v, ddr_b);
    ck_assert_uint_gt(flash_v, flash_b);
    json_t *st = it_status(sock);
    json_t *dev1 = json_array_get(json_object_get(st, "devices"), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(dev1, "granted")),
                     (json_int_t)(16 * MiB));
    json_decref(st);

    kill(pid, SIGKILL);
    ck_assert_int_eq(it_wait(pid), 128 + SIGKILL);

    uint64_t d, f;
    int back = it_wait_used(sock, ddr_b, flash_b, 20000, &d, &f);
    ck_assert_msg(back, "after SIGKILL: DDR used %llu (survivor %llu), flash "
                        "used %llu (survivor %llu)",
                  (unsigned long long)d, (unsigned long long)ddr_b,
                  (unsigned long long)f, (unsigned long long)flash_b);
    st = it_status(sock);
    dev1 = json_array_get(json_object_get(st, "devices"), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(dev1, "granted")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "clients")), 1);
    json_decref(st);

    /* the survivor's bytes are intact, in DDR and on flash */
    ck_assert(it_check(s1.ptr, MiB, 11));
    ck_assert_int_eq(ho_extent_fill(s, s2.id, NULL), 0);
    ck_assert(it_check(s2.ptr, 2 * MiB + 3, 12));
    it_close(s);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

static Suite *tiers_suite(void)
{
    Suite *s = suite_create("integration_tiers");
    TCase *tc = tcase_create("daemon");
    tcase_set_timeout(tc, ho_harness_under_valgrind() ? 1200 : 120);
    tcase_add_test(tc, test_spill_fill_roundtrip);
    tcase_add_test(tc, test_quota);
    tcase_add_test(tc, test_sigkill_reclaims);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tiers_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
