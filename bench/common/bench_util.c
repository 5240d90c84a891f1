/*
 * bench/common/bench_util.c - see bench_util.h.
 */
#include "bench/common/bench_util.h"

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

#include "hyperoffload/errors.h"
#include "hyperoffload/runtime.h"

static const char *prog = "bench";
static pid_t daemon_pid = -1;
static char tmpdir[PATH_MAX];

void bench_set_prog(const char *name)
{
    prog = name;
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_percentile(double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(double), cmp_double);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

/* ------------------------------------------------------------ dying */

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void bench_cleanup(void)
{
    if (daemon_pid > 0) {
        kill(daemon_pid, SIGKILL);
        waitpid(daemon_pid, NULL, 0);
        daemon_pid = -1;
    }
    if (tmpdir[0]) {
        nftw(tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
        tmpdir[0] = '\0';
    }
}

void bench_die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    bench_cleanup();
    exit(1);
}

void bench_check(ho_client *c, int rc, const char *what)
{
    if (rc == 0)
        return;
    char msg[512] = "";
    if (c)
        ho_last_error(c, msg, sizeof(msg));
    const char *why = msg[0] ? msg : ho_runtime_last_error();
    bench_die("%s: %s (%s)%s%s", what, ho_strerror(rc), ho_err_name(rc),
              why[0] ? ": " : "", why);
}

/* snprintf that dies instead of truncating a path. */
static void fmt_path(char *buf, size_t len, const char *fmt, const char *a)
{
    int n = snprintf(buf, len, fmt, a);
    if (n < 0 || (size_t)n >= len)
        bench_die("path too long: %s", a);
}

/* ------------------------------------------------------------ own daemon */

void bench_default_dir(char *buf, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char tmp[PATH_MAX + 8];
            snprintf(tmp, sizeof(tmp), "%s/../tmp", exe);
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

/* $HO_DAEMON, or hyperoffloadd next to this binary (static buffer). */
static const char *daemon_path(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("HO_DAEMON");
    if (env && *env)
        return env;
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
    if (n <= 0)
        bench_die("cannot find my own binary: %s", strerror(errno));
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, 32, "hyperoffloadd");
    return path;
}

/* Copy the last 4 KiB (at most) of file `path` to stderr: the daemon's
 * log, before bench_die() removes it with its directory.  1 when it
 * printed something, else 0. */
static int show_log(const char *path)
{
    char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof(buf) ? end - (off_t)sizeof(buf) : 0;
    ssize_t n = pread(fd, buf, sizeof(buf), from);
    close(fd);
    if (n > 0) {
        fflush(stdout);
        fwrite(buf, 1, (size_t)n, stderr);
        if (buf[n - 1] != '\n')
            fputc('\n', stderr);
    }
    return n > 0;
}

static int try_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    close(fd);
    return rc;
}

void bench_start_daemon(const bench_daemon_opts *o, char *sock,
                        size_t socklen)
{
    char base[PATH_MAX];
    if (o->dir)
        fmt_path(base, sizeof(base), "%s", o->dir);
    else
        bench_default_dir(base, sizeof(base));
    int n = snprintf(tmpdir, sizeof(tmpdir), "%s/%s-XXXXXX", base, o->name);
    if (n < 0 || (size_t)n >= sizeof(tmpdir)) {
        tmpdir[0] = '\0';
        bench_die("path too long: %s", base);
    }
    if (!mkdtemp(tmpdir)) {
        tmpdir[0] = '\0';
        bench_die("mkdtemp in %s: %s", base, strerror(errno));
    }
    fmt_path(sock, socklen, "%s/hod.sock", tmpdir);
    if (strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        bench_die("socket path %s is too long; use --dir", sock);

    char a_sock[PATH_MAX + 16], a_state[PATH_MAX + 16], a_flash[PATH_MAX + 16];
    char a_ddr[64], a_fcap[64], a_dev[64], a_hbm[64];
    fmt_path(a_sock, sizeof(a_sock), "--socket=%s", sock);
    fmt_path(a_state, sizeof(a_state), "--state-dir=%s/state", tmpdir);
    fmt_path(a_flash, sizeof(a_flash), "--flash-paths=%s/flash0", tmpdir);
    snprintf(a_ddr, sizeof(a_ddr), "--ddr-capacity=%llu",
             (unsigned long long)o->ddr);
    snprintf(a_fcap, sizeof(a_fcap), "--flash-capacity=%llu",
             (unsigned long long)o->flash);
    snprintf(a_dev, sizeof(a_dev), "--devices=%u", o->devices);
    snprintf(a_hbm, sizeof(a_hbm), "--hbm-capacity=%llu",
             (unsigned long long)o->hbm);
    const char *path = daemon_path();
    const char *argv[10];
    size_t argc = 0;
    argv[argc++] = path;
    argv[argc++] = a_sock;
    argv[argc++] = a_state;
    argv[argc++] = a_flash;
    argv[argc++] = a_ddr;
    argv[argc++] = a_fcap;
    if (o->devices) {
        argv[argc++] = a_dev;
        argv[argc++] = a_hbm;
    }
    argv[argc++] = "--log-level=warning";
    argv[argc] = NULL;
    char log[PATH_MAX + 16];
    fmt_path(log, sizeof(log), "%s/daemon.log", tmpdir);

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        bench_die("fork: %s", strerror(errno));
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
    daemon_pid = pid;
    for (int i = 0; i < 3000; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            daemon_pid = -1;
            int shown = show_log(log);
            bench_die("%s exited during start (status %d)%s", path,
                      WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
                      shown ? "; its log above" : "");
        }
        if (try_connect(sock) == 0)
            return;
        usleep(10000);
    }
    int shown = show_log(log);
    bench_die("%s did not accept on %s within 30 s%s", path, sock,
              shown ? "; its log above" : "");
}

const char *bench_daemon_dir(void)
{
    return tmpdir;
}

int bench_stop_daemon(void)
{
    if (daemon_pid <= 0)
        return 0;
    kill(daemon_pid, SIGTERM);
    int st = 0;
    waitpid(daemon_pid, &st, 0);
    daemon_pid = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ------------------------------------------------------------ O_DIRECT */

int bench_parent_dir(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    int n;
    if (!slash)
        n = snprintf(buf, len, ".");
    else if (slash == path)
        n = snprintf(buf, len, "/");
    else
        n = snprintf(buf, len, "%.*s", (int)(slash - path), path);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int bench_odirect_open(const char *dir, uint64_t size, char *why,
                       size_t whylen)
{
    char path[PATH_MAX + 32];
    int n = snprintf(path, sizeof(path), "%s/bench-odirect-XXXXXX", dir);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        snprintf(why, whylen, "path too long: %s", dir);
        return -1;
    }
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(why, whylen, "mkstemp: %s", strerror(errno));
        return -1;
    }
    close(fd);
    fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
    unlink(path);
    if (fd < 0) {
        snprintf(why, whylen, "O_DIRECT refused: %s", strerror(errno));
        return -1;
    }
    int rc = posix_fallocate(fd, 0, (off_t)size);
    if (rc != 0) {
        close(fd);
        snprintf(why, whylen, "fallocate of %llu bytes failed: %s",
                 (unsigned long long)size, strerror(rc));
        return -1;
    }
    return fd;
}

int bench_odirect_io(int fd, void *buf, uint64_t len, int is_write,
                     double *ret_gbps)
{
    uint8_t *p = buf;
    double t0 = bench_now();
    for (uint64_t off = 0; off < len;) {
        size_t n = len - off < BENCH_IO_CHUNK ? (size_t)(len - off)
                                              : BENCH_IO_CHUNK;
        ssize_t x = is_write ? pwrite(fd, p + off, n, (off_t)off)
                             : pread(fd, p + off, n, (off_t)off);
        if (x <= 0)
            return -1;
        off += (uint64_t)x;
    }
    *ret_gbps = (double)len / (bench_now() - t0) / 1e9;
    return 0;
}
