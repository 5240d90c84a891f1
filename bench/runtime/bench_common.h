/*
 * bench/runtime/bench_common.h - what bench_runtime and ho-gpu-check
 * share: timing, medians, a daemon of their own, and the bandwidth traces
 * whose replays move large storages through the pool.  Everything is
 * static; each program includes it once.
 */
#ifndef HO_BENCH_RUNTIME_COMMON_H
#define HO_BENCH_RUNTIME_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hyperoffload/runtime.h"
#include "plan.h"

#define BR_MAX_REPEATS 101

static const char *br_prog = "bench";
static pid_t br_daemon = -1;
static char br_tmpdir[PATH_MAX];

static double br_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int br_rm(const char *path, const struct stat *st, int flag,
                 struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void br_cleanup(void)
{
    if (br_daemon > 0) {
        kill(br_daemon, SIGKILL);
        waitpid(br_daemon, NULL, 0);
        br_daemon = -1;
    }
    if (br_tmpdir[0]) {
        nftw(br_tmpdir, br_rm, 8, FTW_DEPTH | FTW_PHYS);
        br_tmpdir[0] = '\0';
    }
}

static void br_die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void br_die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", br_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    br_cleanup();
    exit(1);
}

/* Die with the runtime's (or the client's) sentence unless rc == 0. */
static void br_check(ho_client *c, int rc, const char *what)
{
    if (rc == 0)
        return;
    char msg[512] = "";
    if (c)
        ho_last_error(c, msg, sizeof(msg));
    br_die("%s: %s (%s): %s", what, ho_strerror(rc), ho_err_name(rc),
           msg[0] ? msg : ho_runtime_last_error());
}

static int br_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double br_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(double), br_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* <dir of this binary>/../tmp, or /var/tmp. */
static void br_default_dir(char *buf, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char tmp[PATH_MAX + 8];
            snprintf(tmp, sizeof(tmp), "%.*s/../tmp", PATH_MAX - 16, exe);
            mkdir(tmp, 0755);
            char *real = realpath(tmp, NULL);
            if (real && strlen(real) < len && access(real, W_OK) == 0) {
                memcpy(buf, real, strlen(real) + 1);
                free(real);
                return;
            }
            free(real);
        }
    }
    snprintf(buf, len, "/var/tmp");
}

/* Start hyperoffloadd (next to this binary, or $HO_DAEMON) in a fresh
 * directory under `dir` with the given capacities; *sock receives its
 * socket path.  The flash file lives in that directory. */
static __attribute__((unused)) void
br_start_daemon(const char *dir, uint64_t ddr, uint64_t flash,
                uint64_t hbm, char *sock, size_t socklen)
{
    char base[PATH_MAX], path[PATH_MAX];
    if (dir)
        snprintf(base, sizeof(base), "%s", dir);
    else
        br_default_dir(base, sizeof(base));
    snprintf(br_tmpdir, sizeof(br_tmpdir), "%.*s/bench-runtime-XXXXXX",
             PATH_MAX - 32, base);
    if (!mkdtemp(br_tmpdir)) {
        br_tmpdir[0] = '\0';
        br_die("mkdtemp in %s: %s", base, strerror(errno));
    }
    snprintf(sock, socklen, "%.*s/hod.sock", PATH_MAX - 16, br_tmpdir);
    if (strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        br_die("socket path %s is too long; use --dir", sock);
    const char *env = getenv("HO_DAEMON");
    if (env && *env) {
        snprintf(path, sizeof(path), "%s", env);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
        if (n <= 0)
            br_die("cannot find my own binary");
        path[n] = '\0';
        snprintf(strrchr(path, '/') + 1, 32, "hyperoffloadd");
    }
    char a_sock[PATH_MAX + 16], a_state[PATH_MAX + 32],
        a_flash[PATH_MAX + 32], a_ddr[64], a_fcap[64], a_hbm[64],
        log[PATH_MAX + 16];
    snprintf(a_sock, sizeof(a_sock), "--socket=%s", sock);
    snprintf(a_state, sizeof(a_state), "--state-dir=%s/state", br_tmpdir);
    snprintf(a_flash, sizeof(a_flash), "--flash-paths=%s/flash0", br_tmpdir);
    snprintf(a_ddr, sizeof(a_ddr), "--ddr-capacity=%llu",
             (unsigned long long)ddr);
    snprintf(a_fcap, sizeof(a_fcap), "--flash-capacity=%llu",
             (unsigned long long)flash);
    snprintf(a_hbm, sizeof(a_hbm), "--hbm-capacity=%llu",
             (unsigned long long)hbm);
    snprintf(log, sizeof(log), "%s/daemon.log", br_tmpdir);
    const char *argv[] = {path,    a_sock,      a_state, a_flash,
                          a_ddr,   a_fcap,      "--devices=1", a_hbm,
                          "--log-level=warning", NULL};
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        br_die("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        unsetenv("NOTIFY_SOCKET");
        execv(path, (char *const *)argv);
        _exit(127);
    }
    br_daemon = pid;
    for (int i = 0; i < 3000; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            br_daemon = -1;
            br_die("%s exited during start; see %s", path, log);
        }
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
        int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        close(fd);
        if (rc == 0)
            return;
        usleep(10000);
    }
    br_die("%s did not accept on %s within 30 s", path, sock);
}

/* ------------------------------------------------------------ bandwidth */

/* Bandwidth traces: `n` storages of `big` bytes per direction.
 *   BR_H2D:  H0..Hn-1 start on host, op 0 reads them all: the planner
 *            "none" prefetches them before op 0.
 *   BR_D2H:  D0..Dn-1 start on host (retained), op 0 writes them all:
 *            "none" stores them after op 0 (and frees them).
 *   BR_BOTH: both sets; op 0 writes the D set, op 1 reads the H set, so
 *            the stores after op 0 and the prefetches before op 1 run on
 *            the two engines at once.
 *   BR_SEQ:  the H set, op i reads Hi: one storage on device at a time,
 *            which lets the daemon stage the others on flash. */
enum br_mode { BR_H2D = 0, BR_D2H = 1, BR_BOTH = 2, BR_SEQ = 3 };

#define BR_H_ID 1000u
#define BR_D_ID 2000u

static ho_trace *br_bw_trace(int mode, unsigned n, uint64_t big)
{
    ho_link link = {.h2d_gbps = 25, .d2h_gbps = 25, .latency_us = 10,
                    .duplex = 1};
    ho_trace *t = NULL;
    uint64_t hid[256], did[256];
    if (n > 256)
        br_die("at most 256 storages per direction");
    br_check(NULL, ho_trace_new("bandwidth", &link, &t), "trace");
    for (unsigned i = 0; i < n; i++) {
        hid[i] = BR_H_ID + i;
        did[i] = BR_D_ID + i;
        if (mode != BR_D2H)
            br_check(NULL, ho_trace_add_storage(t, hid[i], big,
                                                HO_KIND_ACTIVATION,
                                                HO_INITIAL_HOST, 0),
                     "storage");
        if (mode == BR_D2H || mode == BR_BOTH)
            br_check(NULL, ho_trace_add_storage(t, did[i], big,
                                                HO_KIND_OPTIMIZER,
                                                HO_INITIAL_HOST,
                                                HO_STORAGE_RETAINED),
                     "storage");
    }
    if (mode == BR_H2D) {
        br_check(NULL, ho_trace_add_op(t, "read", 1000, hid, n, NULL, 0),
                 "op");
    } else if (mode == BR_SEQ) {
        for (unsigned i = 0; i < n; i++)
            br_check(NULL, ho_trace_add_op(t, "read", 1000, &hid[i], 1, NULL,
                                           0), "op");
    } else if (mode == BR_D2H) {
        br_check(NULL, ho_trace_add_op(t, "write", 1000, NULL, 0, did, n),
                 "op");
    } else {
        br_check(NULL, ho_trace_add_op(t, "write", 1000, NULL, 0, did, n),
                 "op");
        br_check(NULL, ho_trace_add_op(t, "read", 1000, hid, n, NULL, 0),
                 "op");
    }
    return t;
}

/* Write every host copy once, so that their pages exist. */
static void br_touch(ho_replay *r, int mode, unsigned n, uint64_t big,
                     void *buf)
{
    for (unsigned i = 0; i < n; i++) {
        if (mode != BR_D2H)
            br_check(NULL, ho_storage_write_host(r, BR_H_ID + i, buf, big),
                     "write_host");
        if (mode == BR_D2H || mode == BR_BOTH)
            br_check(NULL, ho_storage_write_host(r, BR_D_ID + i, buf, big),
                     "write_host");
    }
}

/* One step of a bandwidth replay of n storages per direction; returns
 * the seconds of the copies: from issuing them to their completion (see
 * br_bw_trace; BR_SEQ: the whole step). */
static double br_bw_step(ho_replay *r, int mode, unsigned n)
{
    double t0, t1;
    if (mode == BR_SEQ) {
        t0 = br_now();
        br_check(NULL, ho_step_begin(r), "step begin");
        for (uint32_t op = 0; op < n; op++) {
            br_check(NULL, ho_op_begin(r, op), "op");
            br_check(NULL, ho_op_end(r, op), "op end");
        }
        br_check(NULL, ho_step_end(r, NULL), "step end");
        return br_now() - t0;
    }
    br_check(NULL, ho_step_begin(r), "step begin");
    if (mode == BR_H2D) {
        t0 = br_now();
        br_check(NULL, ho_op_begin(r, 0), "op 0");
        t1 = br_now();
        br_check(NULL, ho_op_end(r, 0), "op 0 end");
        br_check(NULL, ho_step_end(r, NULL), "step end");
        return t1 - t0;
    }
    br_check(NULL, ho_op_begin(r, 0), "op 0");
    t0 = br_now();
    br_check(NULL, ho_op_end(r, 0), "op 0 end");
    if (mode == BR_BOTH) {
        br_check(NULL, ho_op_begin(r, 1), "op 1");
        br_check(NULL, ho_op_end(r, 1), "op 1 end");
    }
    ho_step_info info;
    br_check(NULL, ho_step_end(r, &info), "step end");
    t1 = br_now();
    return t1 - t0;
}

/* A schedule of planner `planner` for t, made here (no daemon) and
 * loaded through the API. */
static ho_plan *br_local_plan(ho_trace *t, uint64_t budget,
                              const char *planner, const char *dir)
{
    char tpath[PATH_MAX + 32], spath[PATH_MAX + 32], err[256];
    snprintf(tpath, sizeof(tpath), "%s/bench-trace.json", dir);
    snprintf(spath, sizeof(spath), "%s/bench-schedule.json", dir);
    br_check(NULL, ho_trace_save(t, tpath), "save trace");
    plan_trace *pt = NULL;
    if (plan_trace_read_json(tpath, &pt, err, sizeof(err)) < 0)
        br_die("%s", err);
    plan_options opt = {.planner = planner};
    plan_schedule *s = NULL;
    plan_result res;
    memset(&res, 0, sizeof(res));
    int rc = plan_make(pt, budget, &opt, &s, &res);
    if (rc < 0)
        br_die("planning with %s: %s", planner, res.message);
    FILE *f = fopen(spath, "w");
    if (!f || plan_schedule_write_json(s, f) < 0 || fclose(f) != 0)
        br_die("cannot write %s", spath);
    ho_plan *p = NULL;
    br_check(NULL, ho_plan_load(t, spath, &p), "load plan");
    unlink(tpath);
    unlink(spath);
    plan_schedule_free(s);
    plan_trace_free(pt);
    return p;
}

#endif
