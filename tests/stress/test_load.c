/*
 * tests/stress/test_load.c - 1,000 clients at once against one real daemon
 * (label load: `scripts/test --load`).  50 processes each open 20
 * connections, register a session on each and do alloc / write / verify /
 * free cycles on all of them; when every one of the 1,000 sessions is up
 * the test checks, while they are all connected, that `hoctl status`
 * answers within 1 s and counts 1,000 clients; then all close.  Every
 * client must finish with 0 errors, and afterwards the daemon shows zero
 * DDR used, zero extents and zero clients.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/check_main.h"
#include "tests/integration/itest.h"

#define NPROC 50
#define PER_PROC 20
#define CYCLES 10

typedef struct load_arg {
    const char *sock;
    unsigned index;
    int ready_wfd;  /* one byte when all of this process's sessions are up */
    int go_fd;      /* EOF: close and exit */
    int go_wfd;
} load_arg;

static int load_child(void *p)
{
    const load_arg *a = p;
    close(a->go_wfd);
    static ho_client *cs[PER_PROC];
    int rc = 0;
    unsigned n = 0;
    for (; n < PER_PROC; n++) {
        char name[32];
        snprintf(name, sizeof(name), "load-%u-%u", a->index, n);
        if (ho_connect(a->sock, name, &cs[n]) != 0) {
            rc = 10;
            break;
        }
        if (ho_register(cs[n], "load", -1, 0) != 0) {
            rc = 11;
            n++;
            break;
        }
    }
    for (unsigned i = 0; rc == 0 && i < CYCLES; i++)
        for (unsigned k = 0; rc == 0 && k < n; k++) {
            uint64_t bytes = 4096u * (1 + (a->index + k + i) % 8);
            uint64_t seed = ((uint64_t)a->index << 40) | (k << 20) | i;
            ho_extent e;
            if (ho_extent_alloc(cs[k], bytes, &e) != 0) {
                rc = 20;
                break;
            }
            it_fill(e.ptr, bytes, seed);
            if (!it_check(e.ptr, bytes, seed))
                rc = 21;
            if (ho_extent_free(cs[k], e.id) != 0)
                rc = 22;
        }
    char b = rc == 0 ? 1 : 0;
    if (write(a->ready_wfd, &b, 1) != 1 && rc == 0)
        rc = 30;
    char go;
    if (read(a->go_fd, &go, 1) != 0 && rc == 0)
        rc = 31;
    for (unsigned k = 0; k < n; k++) {
        ho_usage u;
        if (rc == 0 && (ho_stats(cs[k], NULL, 0, NULL, &u) != 0 ||
                        u.ddr_bytes != 0 || u.extents != 0))
            rc = 40;
        ho_close(cs[k]);
    }
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_int_t clients_of(const char *sock, double *ret_s)
{
    double t0 = now_s();
    json_t *st = it_status(sock);
    *ret_s = now_s() - t0;
    ck_assert_ptr_nonnull(st);
    json_int_t n = json_integer_value(json_object_get(st, "clients"));
    json_decref(st);
    return n;
}

START_TEST(thousand_clients)
{
    const char *args[] = {"--max-connections=1100",
                          "--max-connections-per-uid=1100",
                          "--ddr-capacity=2G", "--log-level=info", NULL};
    ho_harness *h = ho_harness_start_args(args);
    const char *sock = ho_harness_socket(h);
    int ready[2], go[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    static pid_t pids[NPROC];
    static load_arg la[NPROC];
    double t0 = now_s();
    for (unsigned i = 0; i < NPROC; i++) {
        la[i] = (load_arg){.sock = sock, .index = i, .ready_wfd = ready[1],
                           .go_fd = go[0], .go_wfd = go[1]};
        pids[i] = it_spawn(load_child, &la[i]);
    }
    close(ready[1]);
    close(go[0]);
    unsigned ok = 0, got = 0;
    for (; got < NPROC; got++) {
        char b;
        if (read(ready[0], &b, 1) != 1)
            break;
        ok += b == 1;
    }
    double up_s = now_s() - t0;
    ck_assert_uint_eq(got, NPROC);
    ck_assert_msg(ok == NPROC, "%u of %u processes failed to bring up "
                  "their sessions", NPROC - ok, NPROC);
    double status_s = 0;
    json_int_t n = clients_of(sock, &status_s);
    fprintf(stderr, "load: %u sessions up in %.2f s; hoctl status with "
            "all connected: %.3f s, clients %lld\n", NPROC * PER_PROC, up_s,
            status_s, (long long)n);
    ck_assert_int_eq(n, NPROC * PER_PROC);
    ck_assert_msg(status_s < 1.0, "hoctl status took %.3f s", status_s);
    close(go[1]); /* everyone closes now */
    unsigned failed = 0;
    int first = 0;
    for (unsigned i = 0; i < NPROC; i++) {
        int rc = it_wait(pids[i]);
        if (rc != 0 && !failed++)
            first = rc;
    }
    ck_assert_msg(failed == 0, "%u of %u processes failed (first exit %d)",
                  failed, NPROC, first);
    int gone = 0;
    for (int k = 0; k < 200 && !gone; k++) {
        json_t *st = it_status(sock);
        ck_assert_ptr_nonnull(st);
        uint64_t used = 1, extents = 1;
        ck_assert_int_eq(it_tier(st, "ddr", &used, &extents, NULL), 0);
        gone = used == 0 && extents == 0 &&
               json_integer_value(json_object_get(st, "clients")) == 0;
        json_decref(st);
        if (!gone)
            usleep(50000);
    }
    ck_assert_msg(gone, "DDR use, extents or clients left after all closed");
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

int main(void)
{
    return ho_check_run_one("load", thousand_clients, 600);
}
