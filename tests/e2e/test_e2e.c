/*
 * tests/e2e/test_e2e.c - the main job end to end: the real daemon
 * (tests/harness.h), the real library, real ho-demo-client processes
 * (examples/c/replay_demo.c: trace, plan, replay with every byte checked)
 * and the real hoctl.
 *
 *   two_clients_flash   a smaller twin of scripts/demo: two clients of one
 *                       job under a DDR quota that forces flash staging;
 *                       data verified, budgets met, flash bytes > 0, the
 *                       picture written, everything reclaimed at the end.
 *   client_killed       one client SIGKILLed mid-step (stopped at an exact
 *                       op first): the daemon reclaims its session and its
 *                       memory (hoctl status/clients), the other client
 *                       continues and verifies its data.
 *   daemon_crash /      the daemon SIGKILLed (or stopped with SIGTERM) and
 *   daemon_stop         restarted under two replaying clients: they see
 *                       HO_E_DISCONNECTED, reconnect, re-plan and continue
 *                       with verified data.
 *   tight_ddr           one client whose DDR limit keeps most of its host
 *                       copies on flash: every byte still verifies.
 *   two_jobs_small_pool two jobs, no quotas, a DDR pool smaller than their
 *                       host copies: the daemon splits it into
 *                       reservations (the limits never add up to more than
 *                       the pool, sampled through hoctl all along), both
 *                       stage to flash and verify their data, no wait
 *                       runs into its bound.
 *   quota_overcommit    DDR quotas are reservations: one that does not fit
 *                       beside the others is refused; persisted ones that
 *                       no longer fit are reported at start.
 *   wait_bounded        a client whose host copies cannot make room (its
 *                       job's flash quota is spent) fails after [ddr]
 *                       stage_wait with a sentence naming the flash quota,
 *                       not after the library's two minutes.
 *
 * Under valgrind (HO_UNDER_VALGRIND=1) the clients run under valgrind too
 * (exit status 99 on an error), with the same models and steps (a step of
 * the small model costs about a second there); every check stays.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/itest.h"

#define JOB "e2e"
#define DDR_QUOTA "24M" /* the job's: below its clients' host copies */
#define DDR_LIMIT "12M" /* each client's share of it */
#define PAUSE_OP "40" /* an op in the middle of every test trace's step */

/* ------------------------------------------------------------ helpers */

static int vg(void)
{
    return ho_harness_under_valgrind();
}

static const char *client_path(void)
{
    static char path[4096];
    const char *b = getenv("HO_BUILD_DIR");
    snprintf(path, sizeof path, "%s/bin/ho-demo-client", b && *b ? b : ".");
    return path;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* The daemon for these tests: the harness's small defaults and this job's
 * DDR quota (persisted in the state directory, so it survives restarts). */
static ho_harness *start_daemon(const char *ddr_quota)
{
    ho_harness *h = ho_harness_start_args(NULL);
    const char *args[] = {"--socket", ho_harness_socket(h), "quota", "set",
                          "--job", JOB, "--tier", "ddr", ddr_quota, NULL};
    char *out = NULL;
    int rc = it_hoctl(&out, args);
    ck_assert_msg(rc == 0, "hoctl quota set: exit %d: %s", rc, out);
    free(out);
    return h;
}

/* Models of the tests (ho-demo-client's generator options).  SMALL: a step
 * takes about half a second here, ~110 ops, storages from 4 bytes to
 * ~1 MiB, ~30 MiB of host copies per client; minimum DDR limit ~9 MiB.
 * TINY: ~6.4 MiB of host copies; a DDR limit of 4 MiB keeps most of them
 * on flash. */
static const char *const SMALL[] = {
    "--layers", "2", "--hidden", "256", "--heads", "4", "--ffn", "512",
    "--vocab", "1024", "--seq", "256", "--mbs", "2", "--micro", "2",
    "--tflops", "0.05", "--hbm-gbps", "1", "--link-gbps", "1",
    "--budget-ratio", "0.6", NULL};
static const char *const TINY[] = {
    "--layers", "2", "--hidden", "128", "--heads", "4", "--ffn", "256",
    "--vocab", "512", "--seq", "64", "--mbs", "2", "--micro", "2",
    "--tflops", "0.05", "--hbm-gbps", "1", "--link-gbps", "1",
    "--budget-ratio", "0.6", NULL};

/* Start ho-demo-client for `device` with `model`, its output in
 * <harness dir>/client<device>.log; extra arguments NULL-terminated.
 * Under valgrind the client runs under valgrind too. */
static pid_t start_client(ho_harness *h, int device, const char *steps,
                          const char *const *model, const char *ddr_limit,
                          const char *const *extra)
{
    const char *argv[80];
    char dev[16], logp[4096];
    int n = 0;
    pid_t pid;

    snprintf(dev, sizeof dev, "%d", device);
    snprintf(logp, sizeof logp, "%s/client%d.log", ho_harness_dir(h),
             device);
    if (vg()) {
        argv[n++] = "valgrind";
        argv[n++] = "--error-exitcode=99";
        argv[n++] = "--leak-check=full";
        argv[n++] = "--errors-for-leak-kinds=definite";
        argv[n++] = "--quiet";
    }
    argv[n++] = client_path();
    argv[n++] = "--socket";
    argv[n++] = ho_harness_socket(h);
    argv[n++] = "--device";
    argv[n++] = dev;
    argv[n++] = "--job";
    argv[n++] = JOB;
    argv[n++] = "--steps";
    argv[n++] = steps;
    if (ddr_limit) {         /* NULL: the daemon's reservation decides */
        argv[n++] = "--ddr-limit";
        argv[n++] = ddr_limit;
    }
    for (; *model && n < 60; model++)
        argv[n++] = *model;
    for (; extra && *extra && n < 78; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;

    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* never outlive the test (a stopped client would stay forever) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* The client's output so far (malloc'ed, never NULL). */
static char *client_log(ho_harness *h, int device)
{
    char p[4096];
    FILE *f;
    char *buf;
    long len;

    snprintf(p, sizeof p, "%s/client%d.log", ho_harness_dir(h), device);
    f = fopen(p, "r");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)(len > 0 ? len : 0) + 1);
    ck_assert_ptr_nonnull(buf);
    len = (long)fread(buf, 1, (size_t)(len > 0 ? len : 0), f);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

/* Wait for a child to exit (status, 128+signal). */
static int wait_exit(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* Wait until a child stops (its --pause-at); fails the test when it exits
 * instead, showing its output. */
static void wait_stopped(ho_harness *h, pid_t pid, int device)
{
    int st;
    while (waitpid(pid, &st, WUNTRACED) < 0)
        ck_assert_int_eq(errno, EINTR);
    if (!WIFSTOPPED(st)) {
        char *log = client_log(h, device);
        ck_abort_msg("client %d ended (status 0x%x) before its pause:\n%s",
                     device, st, log);
    }
}

/* The figures of the client's "result" line. */
typedef struct result {
    uint64_t budget, no_offload_peak, peak, h2d, d2h, flash_out, flash_in;
    uint64_t steps, checks, reconnects, verified;
} result;

static uint64_t field(const char *line, const char *key)
{
    char k[64];
    const char *p;
    snprintf(k, sizeof k, " %s=", key);
    p = strstr(line, k);
    ck_assert_msg(p != NULL, "no %s in '%s'", key, line);
    return strtoull(p + strlen(k), NULL, 10);
}

/* Check that the client exited 0 and reported verified data; parse its
 * result line. */
static result client_result(ho_harness *h, int device, int status)
{
    char *log = client_log(h, device);
    const char *line = strstr(log, "ho-demo-client: result ");
    char *nl;
    result r;

    ck_assert_msg(status == 0, "client %d exited with %d:\n%s", device,
                  status, log);
    ck_assert_msg(line != NULL, "client %d printed no result:\n%s", device,
                  log);
    ck_assert_ptr_null(strstr(log, "MISMATCH"));
    nl = strchr(line, '\n');
    if (nl)
        *nl = '\0';
    r.budget = field(line, "budget");
    r.no_offload_peak = field(line, "no_offload_peak");
    r.peak = field(line, "peak");
    r.h2d = field(line, "h2d");
    r.d2h = field(line, "d2h");
    r.flash_out = field(line, "flash_out");
    r.flash_in = field(line, "flash_in");
    r.steps = field(line, "steps");
    r.checks = field(line, "checks");
    r.reconnects = field(line, "reconnects");
    r.verified = field(line, "verified");
    free(log);
    return r;
}

/* What every replaying client must show: its data verified, the budget
 * below the no-offload peak and met, bytes moved both ways. */
static void check_offloaded(const result *r, uint64_t steps)
{
    ck_assert_uint_eq(r->verified, 1);
    ck_assert_uint_eq(r->steps, steps);
    ck_assert_uint_gt(r->checks, 0);
    ck_assert_uint_lt(r->budget, r->no_offload_peak);
    ck_assert_uint_gt(r->peak, 0);
    ck_assert_uint_le(r->peak, r->budget);
    ck_assert_uint_gt(r->h2d, 0);
    ck_assert_uint_gt(r->d2h, 0);
}

/* Sessions listed by `hoctl --json clients` (-1 on failure). */
static int n_sessions(const char *sock)
{
    const char *args[] = {"--socket", sock, "--json", "clients", NULL};
    char *out = NULL;
    json_t *j = NULL;
    int n = -1;

    if (it_hoctl(&out, args) == 0) {
        json_error_t e;
        j = json_loads(out, 0, &e);
        if (j && json_is_array(json_object_get(j, "clients")))
            n = (int)json_array_size(json_object_get(j, "clients"));
    }
    json_decref(j);
    free(out);
    return n;
}

static uint64_t used_total(const char *sock)
{
    uint64_t ddr = 0, flash = 0;
    it_used(sock, &ddr, &flash);
    return ddr + flash;
}

/* ------------------------------------------------------------ tests */

START_TEST(test_two_clients_flash)
{
    ho_harness *h = start_daemon(DDR_QUOTA);
    const char *sock = ho_harness_socket(h);
    const char *steps = "3";
    char svg[4096];
    const char *extra0[] = {"--svg", svg, NULL};
    pid_t p0, p1;
    result r0, r1;
    struct stat st;
    char *pic;

    snprintf(svg, sizeof svg, "%s/client0.svg", ho_harness_dir(h));
    p0 = start_client(h, 0, steps, SMALL, DDR_LIMIT, extra0);
    p1 = start_client(h, 1, steps, SMALL, DDR_LIMIT, NULL);
    r0 = client_result(h, 0, wait_exit(p0));
    r1 = client_result(h, 1, wait_exit(p1));
    check_offloaded(&r0, (uint64_t)atoi(steps) + 1);
    check_offloaded(&r1, (uint64_t)atoi(steps) + 1);
    /* the job's host copies did not fit its DDR quota: flash was used */
    ck_assert_uint_gt(r0.flash_out + r1.flash_out, 0);
    ck_assert_uint_gt(r0.flash_in + r1.flash_in, 0);
    ck_assert_uint_eq(r0.reconnects + r1.reconnects, 0);

    /* the picture: an SVG with the budget line and both transfer lanes */
    ck_assert_int_eq(stat(svg, &st), 0);
    ck_assert_int_gt(st.st_size, 1000);
    {
        FILE *f = fopen(svg, "r");
        ck_assert_ptr_nonnull(f);
        pic = calloc(1, (size_t)st.st_size + 1);
        ck_assert_ptr_nonnull(pic);
        ck_assert_uint_eq(fread(pic, 1, (size_t)st.st_size, f),
                          (size_t)st.st_size);
        fclose(f);
    }
    ck_assert_ptr_nonnull(strstr(pic, "<svg"));
    ck_assert_ptr_nonnull(strstr(pic, "</svg>"));
    ck_assert_ptr_nonnull(strstr(pic, "HBM budget"));
    ck_assert_ptr_nonnull(strstr(pic, ">H2D<"));
    ck_assert_ptr_nonnull(strstr(pic, ">D2H<"));
    free(pic);

    /* both sessions are gone and every byte is back */
    ck_assert_int_eq(it_wait_used(sock, 0, 0, 10000, NULL, NULL), 1);
    ck_assert_int_eq(n_sessions(sock), 0);
    ck_assert_int_eq(ho_harness_stop(h), 0);
    ho_harness_free(h);
}
END_TEST

START_TEST(test_client_killed)
{
    ho_harness *h = start_daemon(DDR_QUOTA);
    const char *sock = ho_harness_socket(h);
    const char *steps = "3";
    const char *pause0[] = {"--pause-at", "3:" PAUSE_OP, NULL};
    const char *pause1[] = {"--pause-at", "2:" PAUSE_OP, NULL};
    uint64_t both, one = 0;
    pid_t p0, p1;
    result r1;
    int n = -1;

    p0 = start_client(h, 0, steps, SMALL, DDR_LIMIT, pause0);
    p1 = start_client(h, 1, steps, SMALL, DDR_LIMIT, pause1);
    wait_stopped(h, p0, 0);
    wait_stopped(h, p1, 1);

    /* both replay: two sessions holding host copies */
    ck_assert_int_eq(n_sessions(sock), 2);
    both = used_total(sock);
    ck_assert_uint_gt(both, 0);

    /* client 0 dies mid-step (copies may be in flight) */
    ck_assert_int_eq(kill(p0, SIGKILL), 0);
    ck_assert_int_eq(wait_exit(p0), 128 + SIGKILL);
    for (int i = 0; i < (vg() ? 600 : 200); i++) {
        n = n_sessions(sock);
        one = used_total(sock);
        if (n == 1 && one < both)
            break;
        sleep_ms(50);
    }
    ck_assert_int_eq(n, 1);
    ck_assert_uint_lt(one, both);  /* the dead session's memory reclaimed */
    ck_assert_uint_gt(one, 0);     /* the live one keeps its host copies */

    /* client 1 continues unaffected */
    ck_assert_int_eq(kill(p1, SIGCONT), 0);
    r1 = client_result(h, 1, wait_exit(p1));
    check_offloaded(&r1, (uint64_t)atoi(steps) + 1);
    ck_assert_uint_eq(r1.reconnects, 0);

    ck_assert_int_eq(it_wait_used(sock, 0, 0, 10000, NULL, NULL), 1);
    ck_assert_int_eq(n_sessions(sock), 0);
    ck_assert_int_eq(ho_harness_stop(h), 0);
    ho_harness_free(h);
}
END_TEST

/* The daemon goes away under two clients stopped mid-step and comes back;
 * crash: SIGKILL, else SIGTERM (drain). */
static void daemon_restart(int crash)
{
    ho_harness *h = start_daemon(DDR_QUOTA);
    const char *sock = ho_harness_socket(h);
    const char *steps = "3";
    const char *extra[] = {"--pause-at", "2:" PAUSE_OP, "--reconnect",
                           vg() ? "300" : "60", NULL};
    char err[1024] = "";
    pid_t p[2];
    result r[2];

    p[0] = start_client(h, 0, steps, SMALL, DDR_LIMIT, extra);
    p[1] = start_client(h, 1, steps, SMALL, DDR_LIMIT, extra);
    wait_stopped(h, p[0], 0);
    wait_stopped(h, p[1], 1);

    if (crash)
        ck_assert_int_eq(ho_harness_kill9(h), 0);
    else
        ck_assert_int_eq(ho_harness_stop(h), 0);
    ck_assert_msg(ho_harness_restart(h, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(n_sessions(sock), 0);

    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(kill(p[i], SIGCONT), 0);
    for (int i = 0; i < 2; i++) {
        char *log;
        r[i] = client_result(h, i, wait_exit(p[i]));
        check_offloaded(&r[i], (uint64_t)atoi(steps) + 1);
        ck_assert_uint_eq(r[i].reconnects, 1);
        log = client_log(h, i);
        ck_assert_msg(strstr(log, "HO_E_DISCONNECTED") ||
                      (!crash && strstr(log, "HO_E_SHUTTING_DOWN")),
                      "client %d did not report the lost daemon:\n%s", i,
                      log);
        ck_assert_ptr_nonnull(strstr(log, "reconnected"));
        free(log);
    }

    ck_assert_int_eq(it_wait_used(sock, 0, 0, 10000, NULL, NULL), 1);
    ck_assert_int_eq(ho_harness_stop(h), 0);
    ho_harness_free(h);
}

START_TEST(test_daemon_crash)
{
    daemon_restart(1);
}
END_TEST

START_TEST(test_daemon_stop)
{
    daemon_restart(0);
}
END_TEST

/* Most host copies on flash: one client whose DDR limit (4 MiB) is well
 * below its host copies (~6.4 MiB), including the `initial: host`
 * parameters and optimizer state it writes with ho_storage_write_host()
 * before the first step.  Every byte must still verify. */
START_TEST(test_tight_ddr)
{
    ho_harness *h = start_daemon(DDR_QUOTA);
    const char *sock = ho_harness_socket(h);
    pid_t p0;
    result r0;

    p0 = start_client(h, 0, "2", TINY, "4M", NULL);
    r0 = client_result(h, 0, wait_exit(p0));
    check_offloaded(&r0, 3);
    ck_assert_uint_gt(r0.flash_out, 0);
    ck_assert_uint_gt(r0.flash_in, 0);

    ck_assert_int_eq(it_wait_used(sock, 0, 0, 10000, NULL, NULL), 1);
    ck_assert_int_eq(ho_harness_stop(h), 0);
    ho_harness_free(h);
}
END_TEST

/* One sample of the DDR reservations: the sum of the replays' host-copy
 * limits (hoctl clients), how many replays have one, and the reserved
 * bytes hoctl status reports.  0, or -1 when hoctl failed. */
static int ddr_limits(const char *sock, uint64_t *ret_sum, int *ret_n,
                      uint64_t *ret_reserved)
{
    const char *args[] = {"--socket", sock, "--json", "clients", NULL};
    char *out = NULL;
    json_error_t e;
    json_t *j = NULL, *st;
    int rc = -1;

    *ret_sum = 0;
    *ret_n = 0;
    if (it_hoctl(&out, args) == 0 && (j = json_loads(out, 0, &e))) {
        json_t *cl = json_object_get(j, "clients"), *c;
        size_t i;
        json_array_foreach(cl, i, c) {
            json_t *lim = json_object_get(json_object_get(c, "runtime"),
                                          "ddr_limit_bytes");
            if (json_is_integer(lim) && json_integer_value(lim) > 0) {
                *ret_sum += (uint64_t)json_integer_value(lim);
                (*ret_n)++;
            }
        }
        rc = 0;
    }
    json_decref(j);
    free(out);
    st = it_status(sock);
    if (!st)
        return -1;
    *ret_reserved = (uint64_t)json_integer_value(
        json_object_get(st, "ddr_reserved_bytes"));
    json_decref(st);
    return rc;
}

#define SMALL_POOL (40ull << 20) /* below two SMALL clients' ~60 MiB */

START_TEST(test_two_jobs_small_pool)
{
    const char *args[] = {"--ddr-capacity=40M", NULL};
    ho_harness *h = ho_harness_start_args(args);
    const char *sock = ho_harness_socket(h);
    const char *job0[] = {"--job", "pool-a", NULL};
    const char *job1[] = {"--job", "pool-b", NULL};
    int both = 0, samples = 0, st0 = -1, st1 = -1;
    pid_t p0, p1;
    result r0, r1;
    char *log;

    p0 = start_client(h, 0, "3", SMALL, NULL, job0);
    p1 = start_client(h, 1, "3", SMALL, NULL, job1);
    while (st0 < 0 || st1 < 0) {
        uint64_t sum, reserved;
        int n, ws;
        if (st0 < 0 && waitpid(p0, &ws, WNOHANG) == p0)
            st0 = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
        if (st1 < 0 && waitpid(p1, &ws, WNOHANG) == p1)
            st1 = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
        if (ddr_limits(sock, &sum, &n, &reserved) == 0) {
            samples++;
            ck_assert_msg(sum <= SMALL_POOL && reserved <= SMALL_POOL,
                          "the replays' DDR limits add up to %" PRIu64
                          " bytes (%d replays), %" PRIu64 " reserved: "
                          "more than the %llu-byte pool", sum, n, reserved,
                          SMALL_POOL);
            both += n == 2;
        }
        sleep_ms(50);
    }
    r0 = client_result(h, 0, st0);
    r1 = client_result(h, 1, st1);
    check_offloaded(&r0, 4);
    check_offloaded(&r1, 4);
    /* both ran at once, and the pool did not hold both jobs' copies */
    ck_assert_int_gt(samples, 0);
    ck_assert_int_gt(both, 0);
    ck_assert_uint_gt(r0.flash_out + r1.flash_out, 0);
    log = ho_harness_log(h);
    ck_assert_ptr_null(strstr(log, "failed after"));
    ck_assert_ptr_nonnull(strstr(log, "(reservations re-split)"));
    free(log);

    ck_assert_int_eq(it_wait_used(sock, 0, 0, 10000, NULL, NULL), 1);
    ck_assert_int_eq(ho_harness_stop(h), 0);
    ho_harness_free(h);
}
END_TEST

/* hoctl quota set ... --tier ddr SIZE on the daemon: its exit status,
 * stdout and stderr into *ret_msg (malloc'ed). */
static int ddr_quota_set(const char *sock, const char *job,
                         const char *size, char **ret_msg)
{
    const char *args[] = {"--socket", sock, "quota", "set", "--job", job,
                          "--tier", "ddr", size, NULL};
    char *out = NULL, *err = NULL;
    int rc = it_hoctl_as(-1, &out, &err, args);
    size_t n = (out ? strlen(out) : 0) + (err ? strlen(err) : 0) + 1;
    *ret_msg = calloc(1, n);
    ck_assert_ptr_nonnull(*ret_msg);
    snprintf(*ret_msg, n, "%s%s", out ? out : "", err ? err : "");
    free(out);
    free(err);
    return rc;
}

START_TEST(test_quota_overcommit)
{
    const char *args[] = {"--ddr-capacity=64M", NULL};
    ho_harness *h = ho_harness_start_args(args);
    const char *sock = ho_harness_socket(h);
    char err[1024] = "", *msg, path[4096];
    json_t *st;
    FILE *f;

    ck_assert_int_eq(ddr_quota_set(sock, "job-a", "60M", &msg), 0);
    free(msg);
    /* 60M more does not fit beside job-a's 60M in 64M: refused */
    ck_assert_int_ne(ddr_quota_set(sock, "job-b", "60M", &msg), 0);
    ck_assert_msg(strstr(msg, "cannot be honoured") &&
                  strstr(msg, "4.0 MiB left"), "%s", msg);
    free(msg);
    /* what is left fits; then the pool is fully reserved */
    ck_assert_int_eq(ddr_quota_set(sock, "job-b", "4M", &msg), 0);
    free(msg);
    ck_assert_int_ne(ddr_quota_set(sock, "job-c", "4K", &msg), 0);
    free(msg);
    /* raising job-a's own quota counts its old limit as free */
    ck_assert_int_eq(ddr_quota_set(sock, "job-b", "2M", &msg), 0);
    free(msg);
    ck_assert_int_eq(ddr_quota_set(sock, "job-a", "62M", &msg), 0);
    free(msg);
    st = it_status(sock);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         st, "ddr_quota_reserved_bytes")), 64ll << 20);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         st, "ddr_reserved_bytes")), 64ll << 20);
    json_decref(st);

    /* persisted quotas that no longer fit (edited by hand) are reported
     * at start */
    ck_assert_int_eq(ho_harness_stop(h), 0);
    snprintf(path, sizeof path, "%s/quotas", ho_harness_state_dir(h));
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "job job-a ddr 62914560\njob job-b ddr 62914560\n");
    fclose(f);
    ck_assert_msg(ho_harness_restart(h, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(ho_harness_wait_log(h, "cannot all be honoured", 5000),
                     1);
    ck_assert_int_eq(ho_harness_stop(h), 0);
    ho_harness_free(h);
}
END_TEST

START_TEST(test_wait_bounded)
{
    const char *args[] = {"--ddr-stage-wait=2", NULL};
    ho_harness *h = ho_harness_start_args(args);
    const char *sock = ho_harness_socket(h);
    const char *qargs[] = {"--socket", sock, "quota", "set", "--job", JOB,
                           "--tier", "flash", "1M", NULL};
    struct timespec t0, t1;
    char *log;
    double s;
    pid_t p0;
    int rc;

    ck_assert_int_eq(it_hoctl(NULL, qargs), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    p0 = start_client(h, 0, "2", TINY, "4M", NULL);
    rc = wait_exit(p0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s = (double)(t1.tv_sec - t0.tv_sec) +
        (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    log = client_log(h, 0);
    ck_assert_msg(rc != 0, "the client did not fail:\n%s", log);
    ck_assert_msg(strstr(log, "did not come into DDR: the daemon gave up "
                              "after") &&
                  strstr(log, "HO_E_QUOTA") &&
                  strstr(log, "flash quota of job " JOB),
                  "the client's failure does not name the flash quota:\n%s",
                  log);
    /* the daemon's bound, well before the library's 120 s */
    ck_assert_msg(s < (vg() ? 110.0 : 60.0), "the client failed after "
                  "%.1f s", s);
    free(log);
    ck_assert_int_eq(it_wait_used(sock, 0, 0, 10000, NULL, NULL), 1);
    ck_assert_int_eq(ho_harness_stop(h), 0);
    ho_harness_free(h);
}
END_TEST

static Suite *e2e_suite(void)
{
    Suite *s = suite_create("e2e");
    TCase *tc = tcase_create("main job");
    tcase_set_timeout(tc, vg() ? 3000 : 300);
    tcase_add_test(tc, test_two_clients_flash);
    tcase_add_test(tc, test_client_killed);
    tcase_add_test(tc, test_daemon_crash);
    tcase_add_test(tc, test_daemon_stop);
    tcase_add_test(tc, test_tight_ddr);
    suite_add_tcase(s, tc);
    tc = tcase_create("reservations");
    tcase_set_timeout(tc, vg() ? 3000 : 300);
    tcase_add_test(tc, test_two_jobs_small_pool);
    tcase_add_test(tc, test_quota_overcommit);
    tcase_add_test(tc, test_wait_bounded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(e2e_suite());
    int failed;

    /* a client killed by the test must not take the test with it */
    signal(SIGPIPE, SIG_IGN);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
