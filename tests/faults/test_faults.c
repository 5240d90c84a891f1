/*
 * tests/faults/test_faults.c - faults under a real daemon (issue 10): the
 * daemon keeps serving everyone else, reports a precise reason, and no
 * other client's data is harmed.
 *   killed_mid_move   a client SIGKILLed while its 64 MiB spill is in
 *                     flight: another client's spilled and resident data
 *                     stay exact, the dead session's DDR and flash come
 *                     back once its move ends, status answers throughout;
 *   truncated_flash   the flash file truncated behind the daemon's back:
 *                     filling an extent whose bytes are gone fails with
 *                     -EIO and a reason, the daemon stays up, another
 *                     client's DDR data is exact, and freeing the broken
 *                     extent returns its space;
 *   enospc            (root: a 16 MiB tmpfs) the filesystem under the
 *                     flash file fills up: a spill fails with -ENOSPC and
 *                     the extent stays in DDR, unchanged; another client's
 *                     extent already on flash fills back exact.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/check_main.h"
#include "tests/integration/itest.h"

#define MiB (1ull << 20)

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* An extent of len bytes of c, filled with it_fill(seed). */
static ho_extent filled(ho_client *c, size_t len, uint64_t seed)
{
    ho_extent e;
    ck_assert_int_eq(ho_extent_alloc(c, len, &e), 0);
    it_fill(e.ptr, len, seed);
    return e;
}

/* ---------------------------------------------------- killed mid-move */

typedef struct mover_arg {
    const char *sock;
    int ready_wfd;
} mover_arg;

static int mover_child(void *p)
{
    const mover_arg *a = p;
    ho_client *c = NULL;
    if (ho_connect(a->sock, "victim", &c) != 0 ||
        ho_register(c, "victim", -1, 0) != 0)
        return 10;
    ho_extent e;
    if (ho_extent_alloc(c, 64 * MiB, &e) != 0)
        return 11;
    it_fill(e.ptr, 64 * MiB, 77);
    char b = 1;
    if (write(a->ready_wfd, &b, 1) != 1)
        return 12;
    ho_move_result m;
    ho_extent_spill(c, e.id, &m); /* killed somewhere in here */
    pause();
    return 0;
}

START_TEST(killed_mid_move)
{
    ho_harness *h = ho_harness_start_args(NULL);
    const char *sock = ho_harness_socket(h);
    ho_client *keep = it_client(sock, "keep");
    ho_extent on_flash = filled(keep, 8 * MiB, 1);
    ho_extent in_ddr = filled(keep, 4 * MiB, 2);
    ho_move_result m;
    ck_assert_int_eq(ho_extent_spill(keep, on_flash.id, &m), 0);
    uint64_t ddr0, flash0;
    it_used(sock, &ddr0, &flash0);

    for (int round = 0; round < 3; round++) {
        int ready[2];
        ck_assert_int_eq(pipe(ready), 0);
        mover_arg a = {sock, ready[1]};
        pid_t pid = it_spawn(mover_child, &a);
        close(ready[1]);
        char b = 0;
        ck_assert_int_eq(read(ready[0], &b, 1), 1);
        close(ready[0]);
        sleep_ms(round); /* 0, 1, 2 ms into the spill */
        kill(pid, SIGKILL);
        ck_assert_int_eq(it_wait(pid), 128 + SIGKILL);
        /* the daemon answers at once, and gets back to the survivor's use */
        json_t *st = it_status(sock);
        ck_assert_ptr_nonnull(st);
        json_decref(st);
        uint64_t d = 0, f = 0;
        ck_assert_msg(it_wait_used(sock, ddr0, flash0, 10000, &d, &f),
                      "round %d: used ddr %llu flash %llu, expected %llu "
                      "%llu", round, (unsigned long long)d,
                      (unsigned long long)f, (unsigned long long)ddr0,
                      (unsigned long long)flash0);
    }
    ck_assert(it_check(in_ddr.ptr, 4 * MiB, 2));
    ck_assert_int_eq(ho_extent_fill(keep, on_flash.id, &m), 0);
    ck_assert(it_check(on_flash.ptr, 8 * MiB, 1));
    it_close(keep);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

/* ---------------------------------------------------- truncated flash */

START_TEST(truncated_flash)
{
    ho_harness *h = ho_harness_start_args(NULL);
    const char *sock = ho_harness_socket(h);
    char flash[4096];
    snprintf(flash, sizeof flash, "%s/flash0", ho_harness_dir(h));
    ho_client *a = it_client(sock, "a"), *b = it_client(sock, "b");
    ho_extent ea = filled(a, 4 * MiB, 3), eb = filled(b, 4 * MiB, 4);
    ho_move_result m;
    ck_assert_int_eq(ho_extent_spill(a, ea.id, &m), 0);
    ck_assert_int_eq(truncate(flash, 0), 0); /* behind the daemon's back */
    int rc = ho_extent_fill(a, ea.id, &m);
    ck_assert_msg(rc == -EIO, "fill after truncation: %d", rc);
    char msg[512];
    ho_last_error(a, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "flash") != NULL, "reason: %s", msg);
    /* the others are unharmed and served */
    ck_assert(it_check(eb.ptr, 4 * MiB, 4));
    json_t *st = it_status(sock);
    ck_assert_ptr_nonnull(st);
    json_decref(st);
    ho_extent e2;
    ck_assert_int_eq(ho_extent_alloc(b, MiB, &e2), 0);
    ck_assert_int_eq(ho_extent_free(b, e2.id), 0);
    /* the broken extent can be freed, and its flash space comes back */
    ck_assert_int_eq(ho_extent_free(a, ea.id), 0);
    it_close(a);
    it_close(b);
    ck_assert(it_wait_used(sock, 0, 0, 10000, NULL, NULL));
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

/* -------------------------------------------------------------- ENOSPC */

static char mnt[4096];

static void umount_tmpfs(void)
{
    if (mnt[0]) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "umount '%s' 2>/dev/null", mnt);
        if (system(cmd) != 0)
            fprintf(stderr, "test_faults: umount %s failed\n", mnt);
        rmdir(mnt);
        mnt[0] = 0;
    }
}

/* Fill the filesystem of `dir` to the last block with a file `hog`. */
static void fill_up(const char *hog)
{
    int fd = open(hog, O_WRONLY | O_CREAT | O_APPEND, 0600);
    ck_assert_int_ge(fd, 0);
    static char buf[64 * 1024];
    memset(buf, 0x5a, sizeof buf);
    for (;;) {
        ssize_t w = write(fd, buf, sizeof buf);
        if (w <= 0) {
            ck_assert_int_eq(errno, ENOSPC);
            break;
        }
    }
    for (;;) { /* the last partial block */
        if (write(fd, buf, 512) <= 0)
            break;
    }
    close(fd);
}

START_TEST(enospc)
{
    const char *b = getenv("HO_BUILD_DIR");
    if (b && *b)
        snprintf(mnt, sizeof mnt, "%s/tmp/faults-tmpfs-%ld", b,
                 (long)getpid());
    else
        snprintf(mnt, sizeof mnt, "/tmp/faults-tmpfs-%ld", (long)getpid());
    ck_assert_msg(mkdir(mnt, 0700) == 0 || errno == EEXIST, "mkdir %s: %s",
                  mnt, strerror(errno));
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=16m tmpfs '%s'", mnt);
    if (system(cmd) != 0) {
        rmdir(mnt);
        mnt[0] = 0;
        ck_abort_msg("mount tmpfs failed (root is needed)");
    }
    atexit(umount_tmpfs);
    char fp[4200], hog[4200];
    snprintf(fp, sizeof fp, "--flash-paths=%s/flash0", mnt);
    snprintf(hog, sizeof hog, "%s/hog", mnt);
    const char *args[] = {fp, "--flash-capacity=8M", "--flash-direct=no",
                          "--flash-discard-delay=0", NULL};
    ho_harness *h = ho_harness_start_args(args);
    const char *sock = ho_harness_socket(h);
    ho_client *a = it_client(sock, "a"), *c = it_client(sock, "c");
    ho_extent ec = filled(c, 2 * MiB, 5);
    ho_move_result m;
    ck_assert_int_eq(ho_extent_spill(c, ec.id, &m), 0);
    /* a spill and a free give flash space back to the filesystem (punched
     * hole); a hog takes the filesystem to its last block */
    ho_extent e1 = filled(a, 4 * MiB, 6);
    ck_assert_int_eq(ho_extent_spill(a, e1.id, &m), 0);
    ck_assert_int_eq(ho_extent_free(a, e1.id), 0);
    fill_up(hog);
    ho_extent ea = filled(a, 4 * MiB, 7);
    int rc = ho_extent_spill(a, ea.id, &m);
    ck_assert_msg(rc == -ENOSPC, "spill on a full filesystem: %d", rc);
    char msg[512];
    ho_last_error(a, msg, sizeof msg);
    fprintf(stderr, "test_faults: ENOSPC reason: %s\n", msg);
    /* nothing lost: the extent is still in DDR, unchanged, usable */
    ck_assert(it_check(ea.ptr, 4 * MiB, 7));
    ck_assert_int_eq(ho_extent_free(a, ea.id), 0);
    /* another client's data on flash fills back exact */
    ck_assert_int_eq(ho_extent_fill(c, ec.id, &m), 0);
    ck_assert(it_check(ec.ptr, 2 * MiB, 5));
    unlink(hog);
    /* with space again, spills work */
    ck_assert_int_eq(ho_extent_spill(c, ec.id, &m), 0);
    ck_assert_int_eq(ho_extent_fill(c, ec.id, &m), 0);
    ck_assert(it_check(ec.ptr, 2 * MiB, 5));
    it_close(a);
    it_close(c);
    ck_assert_int_eq(ho_harness_free(h), 0);
    umount_tmpfs();
}
END_TEST

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (only && strcmp(only, "enospc") == 0 && geteuid() != 0) {
        fprintf(stderr, "test_faults enospc: needs root (tmpfs mount)\n");
        return 77;
    }
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, ho_harness_under_valgrind() ? 1200 : 120);
    if (!only || strcmp(only, "move") == 0) {
        tcase_add_test(tc, killed_mid_move);
        tcase_add_test(tc, truncated_flash);
    }
    if (only && strcmp(only, "enospc") == 0)
        tcase_add_test(tc, enospc);
    suite_add_tcase(s, tc);
    return ho_check_run(s, true);
}
