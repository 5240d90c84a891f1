/*
 * bench/server/bench_server.c - hyperoffloadd through its socket, measured
 * with the real client library.
 *
 *   bench_server [--socket PATH] [--repeats N] [--requests N]
 *                [--clients N] [--big SIZE] [--dir DIR]
 *
 * Without --socket it starts its own daemon (hyperoffloadd next to this
 * binary, or $HO_DAEMON) in a temporary directory under --dir (default
 * <build>/tmp, i.e. next to bin/), with its flash file there, and stops it
 * at the end.  With --socket it uses a running daemon and finds the flash
 * file from the daemon's tier name ("flash:/path").
 *
 * Prints one table; every figure is the median over --repeats runs, and the
 * baselines are measured in the same run:
 *   - latency p50/p99 and throughput of a cheap request (Stats) and of an
 *     alloc+free pair (4 KiB), with 1 client and with --clients concurrent
 *     clients (separate connections, one thread each);
 *   - DDR alloc and free rates through the daemon (64 KiB extents);
 *   - spill and fill bandwidth of one --big extent (default 256 MiB)
 *     next to a plain O_DIRECT sequential write / read of the same size in
 *     8 MiB chunks, in the directory of the daemon's flash file, and the
 *     ratio (target >= 70%).
 * Bandwidths are in GB/s (10^9 bytes per second).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hyperoffload/client.h"

#define MAX_CLIENTS 256
#define MAX_REPEATS 101
#define IO_CHUNK (8u << 20)

typedef struct opts {
    const char *socket;
    const char *dir;
    unsigned repeats;
    unsigned requests;
    unsigned clients;
    unsigned ddr_ops;
    uint64_t big;
} opts;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static pid_t daemon_pid = -1;
static char tmpdir[PATH_MAX];

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* Stop our daemon (if any) and remove its directory. */
static void cleanup(void)
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

static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("bench_server: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    cleanup();
    exit(1);
}

static void check(ho_client *c, int rc, const char *what)
{
    if (rc == 0)
        return;
    char msg[512] = "";
    if (c)
        ho_last_error(c, msg, sizeof(msg));
    die("%s: %s (%s) %s", what, ho_strerror(rc), ho_err_name(rc), msg);
}

/* snprintf that dies instead of truncating a path. */
static void fmt_path(char *buf, size_t len, const char *fmt, const char *a)
{
    int n = snprintf(buf, len, fmt, a);
    if (n < 0 || (size_t)n >= len)
        die("path too long: %s", a);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(double), cmp_double);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static double median(double *v, size_t n)
{
    return percentile(v, n, 0.5);
}

/* ------------------------------------------------------------ own daemon */

static const char *daemon_path(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("HO_DAEMON");
    if (env && *env)
        return env;
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
    if (n <= 0)
        die("cannot find my own binary: %s", strerror(errno));
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    snprintf(slash + 1, 32, "hyperoffloadd");
    return path;
}

static void default_dir(char *buf, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char tmp[PATH_MAX];
            fmt_path(tmp, sizeof(tmp), "%s/../tmp", exe);
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

static int try_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    close(fd);
    return rc;
}

static void start_daemon(const opts *o, char *sock, size_t socklen)
{
    char base[PATH_MAX];
    if (o->dir)
        snprintf(base, sizeof(base), "%s", o->dir);
    else
        default_dir(base, sizeof(base));
    fmt_path(tmpdir, sizeof(tmpdir), "%s/bench-server-XXXXXX", base);
    if (!mkdtemp(tmpdir)) {
        tmpdir[0] = '\0';
        die("mkdtemp in %s: %s", base, strerror(errno));
    }
    fmt_path(sock, socklen, "%s/hod.sock", tmpdir);
    if (strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        die("socket path %s is too long; use --dir", sock);

    uint64_t ddr = o->big + (512ull << 20);
    uint64_t flash = o->big + (512ull << 20);
    char a_sock[PATH_MAX + 16], a_state[PATH_MAX + 16], a_flash[PATH_MAX + 16];
    char a_ddr[64], a_fcap[64];
    fmt_path(a_sock, sizeof(a_sock), "--socket=%s", sock);
    fmt_path(a_state, sizeof(a_state), "--state-dir=%s/state", tmpdir);
    fmt_path(a_flash, sizeof(a_flash), "--flash-paths=%s/flash0", tmpdir);
    snprintf(a_ddr, sizeof(a_ddr), "--ddr-capacity=%llu",
             (unsigned long long)ddr);
    snprintf(a_fcap, sizeof(a_fcap), "--flash-capacity=%llu",
             (unsigned long long)flash);
    const char *path = daemon_path();
    const char *argv[] = {path, a_sock, a_state, a_flash, a_ddr, a_fcap,
                          "--log-level=warning", NULL};
    char log[PATH_MAX + 16];
    fmt_path(log, sizeof(log), "%s/daemon.log", tmpdir);

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
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
            die("%s exited during start (status %d); see %s", path,
                WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), log);
        }
        if (try_connect(sock) == 0)
            return;
        usleep(10000);
    }
    die("%s did not accept on %s within 30 s", path, sock);
}

static int stop_daemon(void)
{
    if (daemon_pid <= 0)
        return 0;
    kill(daemon_pid, SIGTERM);
    int st = 0;
    waitpid(daemon_pid, &st, 0);
    daemon_pid = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ------------------------------------------------------------ requests */

typedef enum { REQ_STATS, REQ_ALLOC_FREE } req_kind;

typedef struct lat_worker {
    ho_client *c;
    req_kind kind;
    unsigned n;
    double *lat;          /* n latencies, seconds */
    pthread_barrier_t *start;
    double t_end;
    int rc;
} lat_worker;

static int one_request(ho_client *c, req_kind kind)
{
    if (kind == REQ_STATS) {
        ho_usage u;
        return ho_stats(c, NULL, 0, NULL, &u);
    }
    ho_extent e;
    int rc = ho_extent_alloc(c, 4096, &e);
    if (rc == 0)
        rc = ho_extent_free(c, e.id);
    return rc;
}

static void *lat_main(void *p)
{
    lat_worker *w = p;
    for (unsigned i = 0; i < 50 && w->rc == 0; i++) /* warm up */
        w->rc = one_request(w->c, w->kind);
    pthread_barrier_wait(w->start);
    for (unsigned i = 0; i < w->n && w->rc == 0; i++) {
        double t0 = now_s();
        w->rc = one_request(w->c, w->kind);
        w->lat[i] = now_s() - t0;
    }
    w->t_end = now_s();
    return NULL;
}

typedef struct lat_result {
    double p50_us, p99_us, rate;
} lat_result;

/* One repeat: `nclients` threads, each with its own connection, each doing
 * `n` requests; latency percentiles over all requests, throughput = all
 * requests / wall time from the common start to the last finish. */
static lat_result latency_run(ho_client **cs, unsigned nclients, unsigned n,
                              req_kind kind)
{
    lat_worker w[MAX_CLIENTS];
    pthread_t th[MAX_CLIENTS];
    pthread_barrier_t start;
    double *all = malloc(sizeof(double) * n * nclients);
    if (!all)
        die("out of memory");
    pthread_barrier_init(&start, NULL, nclients + 1);
    for (unsigned i = 0; i < nclients; i++) {
        w[i] = (lat_worker){.c = cs[i], .kind = kind, .n = n,
                            .lat = all + (size_t)i * n, .start = &start};
        if (pthread_create(&th[i], NULL, lat_main, &w[i]) != 0)
            die("pthread_create failed");
    }
    pthread_barrier_wait(&start);
    double t0 = now_s(), t_end = t0;
    for (unsigned i = 0; i < nclients; i++) {
        pthread_join(th[i], NULL);
        check(cs[i], w[i].rc, kind == REQ_STATS ? "stats" : "alloc+free");
        if (w[i].t_end > t_end)
            t_end = w[i].t_end;
    }
    pthread_barrier_destroy(&start);
    size_t total = (size_t)n * nclients;
    lat_result r = {
        .p50_us = percentile(all, total, 0.50) * 1e6,
        .p99_us = percentile(all, total, 0.99) * 1e6,
        .rate = (double)total / (t_end - t0),
    };
    free(all);
    return r;
}

static lat_result latency(ho_client **cs, unsigned nclients, unsigned n,
                          req_kind kind, unsigned repeats)
{
    double p50[MAX_REPEATS], p99[MAX_REPEATS], rate[MAX_REPEATS];
    for (unsigned r = 0; r < repeats; r++) {
        lat_result x = latency_run(cs, nclients, n, kind);
        p50[r] = x.p50_us;
        p99[r] = x.p99_us;
        rate[r] = x.rate;
    }
    return (lat_result){median(p50, repeats), median(p99, repeats),
                        median(rate, repeats)};
}

/* ------------------------------------------------------------ DDR rate */

static void ddr_rates(ho_client *c, unsigned nops, unsigned repeats,
                      double *ret_alloc, double *ret_free)
{
    double ra[MAX_REPEATS], rf[MAX_REPEATS];
    ho_extent *e = calloc(nops, sizeof(*e));
    if (!e)
        die("out of memory");
    for (unsigned r = 0; r < repeats; r++) {
        double t0 = now_s();
        for (unsigned i = 0; i < nops; i++)
            check(c, ho_extent_alloc(c, 64 * 1024, &e[i]), "alloc");
        double t1 = now_s();
        for (unsigned i = 0; i < nops; i++)
            check(c, ho_extent_free(c, e[i].id), "free");
        double t2 = now_s();
        ra[r] = nops / (t1 - t0);
        rf[r] = nops / (t2 - t1);
    }
    free(e);
    *ret_alloc = median(ra, repeats);
    *ret_free = median(rf, repeats);
}

/* ------------------------------------------------------------ bandwidth */

static void spill_fill(ho_client *c, uint64_t big, unsigned repeats,
                       double *ret_spill, double *ret_fill,
                       double *ret_spill_io, double *ret_fill_io)
{
    double s[MAX_REPEATS], f[MAX_REPEATS], si[MAX_REPEATS], fi[MAX_REPEATS];
    ho_extent e;
    check(c, ho_extent_alloc(c, big, &e), "alloc of the large extent");
    for (uint64_t i = 0; i < big; i += 8)
        *(uint64_t *)((uint8_t *)e.ptr + i) = i * 0x9E3779B97F4A7C15ull;
    for (unsigned r = 0; r < repeats; r++) {
        ho_move_result m;
        double t0 = now_s();
        check(c, ho_extent_spill(c, e.id, &m), "spill");
        double t1 = now_s();
        s[r] = (double)big / (t1 - t0) / 1e9;
        si[r] = m.duration_us > 0 ? (double)big / m.duration_us / 1e3 : 0;
        t0 = now_s();
        check(c, ho_extent_fill(c, e.id, &m), "fill");
        t1 = now_s();
        f[r] = (double)big / (t1 - t0) / 1e9;
        fi[r] = m.duration_us > 0 ? (double)big / m.duration_us / 1e3 : 0;
    }
    if (*(uint64_t *)((uint8_t *)e.ptr + 8 * 12345) !=
        8 * 12345 * 0x9E3779B97F4A7C15ull)
        die("the large extent changed across spill/fill");
    check(c, ho_extent_free(c, e.id), "free");
    *ret_spill = median(s, repeats);
    *ret_fill = median(f, repeats);
    *ret_spill_io = median(si, repeats);
    *ret_fill_io = median(fi, repeats);
}

/* Plain O_DIRECT sequential write then read of `big` bytes in IO_CHUNK
 * pieces, in `dir`, into a preallocated file; medians over repeats. */
static int odirect_baseline(const char *dir, uint64_t big, unsigned repeats,
                            double *ret_w, double *ret_r, double *ret_rfresh,
                            char *why, size_t whylen)
{
    char path[PATH_MAX + 32];
    fmt_path(path, sizeof(path), "%s/bench-odirect-XXXXXX", dir);
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
    if (posix_fallocate(fd, 0, (off_t)big) != 0) {
        close(fd);
        snprintf(why, whylen, "fallocate of %llu bytes failed",
                 (unsigned long long)big);
        return -1;
    }
    uint8_t *buf = mmap(NULL, big, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        close(fd);
        snprintf(why, whylen, "mmap: %s", strerror(errno));
        return -1;
    }
    for (uint64_t i = 0; i < big; i += 8)
        *(uint64_t *)(buf + i) = i * 0x9E3779B97F4A7C15ull;
    double w[MAX_REPEATS], r[MAX_REPEATS], rf[MAX_REPEATS];
    int rc = 0;
    for (unsigned k = 0; k < repeats && rc == 0; k++) {
        double t0 = now_s();
        for (uint64_t off = 0; off < big && rc == 0;) {
            size_t n = big - off < IO_CHUNK ? (size_t)(big - off) : IO_CHUNK;
            ssize_t x = pwrite(fd, buf + off, n, (off_t)off);
            if (x <= 0)
                rc = -1;
            else
                off += (uint64_t)x;
        }
        double t1 = now_s();
        for (uint64_t off = 0; off < big && rc == 0;) {
            size_t n = big - off < IO_CHUNK ? (size_t)(big - off) : IO_CHUNK;
            ssize_t x = pread(fd, buf + off, n, (off_t)off);
            if (x <= 0)
                rc = -1;
            else
                off += (uint64_t)x;
        }
        double t2 = now_s();
        /* again into pages the kernel must allocate first, as a fill's
         * destination in the pool is (its DDR pages were released) */
        madvise(buf, big, MADV_DONTNEED);
        double t3 = now_s();
        for (uint64_t off = 0; off < big && rc == 0;) {
            size_t n = big - off < IO_CHUNK ? (size_t)(big - off) : IO_CHUNK;
            ssize_t x = pread(fd, buf + off, n, (off_t)off);
            if (x <= 0)
                rc = -1;
            else
                off += (uint64_t)x;
        }
        double t4 = now_s();
        w[k] = (double)big / (t1 - t0) / 1e9;
        r[k] = (double)big / (t2 - t1) / 1e9;
        rf[k] = (double)big / (t4 - t3) / 1e9;
    }
    if (rc < 0)
        snprintf(why, whylen, "O_DIRECT I/O failed: %s", strerror(errno));
    munmap(buf, big);
    close(fd);
    if (rc == 0) {
        *ret_w = median(w, repeats);
        *ret_r = median(r, repeats);
        *ret_rfresh = median(rf, repeats);
    }
    return rc;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
    fputs("usage: bench_server [--socket PATH] [--repeats N] [--requests N]\n"
          "                    [--clients N] [--ddr-ops N] [--big SIZE] "
          "[--dir DIR]\n",
          stderr);
    exit(2);
}

static unsigned parse_count(const char *s, unsigned lo, unsigned hi)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < lo || v > hi) {
        fprintf(stderr, "bench_server: '%s' is not a number in [%u, %u]\n",
                s, lo, hi);
        exit(2);
    }
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    opts o = {.repeats = 5, .requests = 4000, .clients = 16,
              .ddr_ops = 2000, .big = 256ull << 20};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (strcmp(a, "--socket") == 0)
            o.socket = v;
        else if (strcmp(a, "--dir") == 0)
            o.dir = v;
        else if (strcmp(a, "--repeats") == 0)
            o.repeats = parse_count(v, 1, MAX_REPEATS);
        else if (strcmp(a, "--requests") == 0)
            o.requests = parse_count(v, 10, 10000000);
        else if (strcmp(a, "--clients") == 0)
            o.clients = parse_count(v, 2, MAX_CLIENTS);
        else if (strcmp(a, "--ddr-ops") == 0)
            o.ddr_ops = parse_count(v, 10, 1000000);
        else if (strcmp(a, "--big") == 0) {
            if (ho_size_parse(v, &o.big) < 0 || o.big < (1u << 20) ||
                o.big % 4096 || o.big > (64ull << 30)) {
                fprintf(stderr, "bench_server: --big %s: need 1 MiB..64 GiB, "
                                "4 KiB aligned\n", v);
                return 2;
            }
        } else
            usage();
        i++;
    }
    signal(SIGPIPE, SIG_IGN);

    char sock[PATH_MAX];
    if (o.socket)
        snprintf(sock, sizeof(sock), "%s", o.socket);
    else
        start_daemon(&o, sock, sizeof(sock));

    /* connections: 1 + clients, all registered (own arenas) */
    unsigned ncl = o.clients;
    ho_client *cs[MAX_CLIENTS];
    for (unsigned i = 0; i < ncl; i++) {
        char name[32];
        snprintf(name, sizeof(name), "bench-%u", i);
        check(NULL, ho_connect(sock, name, &cs[i]), "connect");
        check(cs[i], ho_register(cs[i], NULL, -1, 0), "register");
    }
    ho_client *c = cs[0];

    ho_tier_stats tiers[8];
    size_t nt = 0;
    check(c, ho_stats(c, tiers, 8, &nt, NULL), "stats");
    const char *flash_path = NULL, *flash_detail = "";
    uint64_t ddr_cap = 0;
    for (size_t i = 0; i < nt && i < 8; i++) {
        if (tiers[i].tier == HO_TIER_FLASH && !flash_path) {
            flash_path = strncmp(tiers[i].name, "flash:", 6) == 0
                             ? tiers[i].name + 6
                             : NULL;
            flash_detail = tiers[i].detail;
        }
        if (tiers[i].tier == HO_TIER_DDR)
            ddr_cap = tiers[i].capacity;
    }
    char a[32];
    printf("bench_server: hyperoffloadd %s at %s (%s)\n",
           ho_server_version(c), sock, o.socket ? "running daemon"
                                                 : "own daemon");
    printf("DDR pool %s; flash file %s [%s]\n",
           ho_size_format(ddr_cap, a, sizeof(a)),
           flash_path ? flash_path : "?", flash_detail);
    printf("figures are medians of %u repeats; %u requests per client per "
           "repeat\n\n", o.repeats, o.requests);
    fflush(stdout);

    /* latency and throughput */
    unsigned per16 = o.requests / ncl > 100 ? o.requests / ncl : 100;
    lat_result s1 = latency(cs, 1, o.requests, REQ_STATS, o.repeats);
    lat_result sN = latency(cs, ncl, per16, REQ_STATS, o.repeats);
    lat_result a1 = latency(cs, 1, o.requests, REQ_ALLOC_FREE, o.repeats);
    lat_result aN = latency(cs, ncl, per16, REQ_ALLOC_FREE, o.repeats);
    printf("%-30s %8s %10s %10s %14s\n", "request over the socket",
           "clients", "p50 (us)", "p99 (us)", "throughput/s");
    printf("%-30s %8u %10.1f %10.1f %14.0f\n", "stats", 1u, s1.p50_us,
           s1.p99_us, s1.rate);
    printf("%-30s %8u %10.1f %10.1f %14.0f\n", "stats", ncl, sN.p50_us,
           sN.p99_us, sN.rate);
    printf("%-30s %8u %10.1f %10.1f %14.0f\n", "alloc+free pair (4 KiB)", 1u,
           a1.p50_us, a1.p99_us, a1.rate);
    printf("%-30s %8u %10.1f %10.1f %14.0f\n", "alloc+free pair (4 KiB)", ncl,
           aN.p50_us, aN.p99_us, aN.rate);
    fflush(stdout);

    double ra, rf;
    ddr_rates(c, o.ddr_ops, o.repeats, &ra, &rf);
    printf("\n%-30s %14s\n", "DDR through the daemon", "ops/s");
    printf("%-30s %14.0f\n", "alloc (64 KiB, 1 client)", ra);
    printf("%-30s %14.0f\n", "free (1 client)", rf);
    fflush(stdout);

    /* the other connections are not needed any more */
    for (unsigned i = 1; i < ncl; i++)
        ho_close(cs[i]);

    double sp, fl, spi, fli, bw = 0, br = 0, brf = 0;
    spill_fill(c, o.big, o.repeats, &sp, &fl, &spi, &fli);
    char why[512] = "";
    int base_rc = -1;
    if (flash_path) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", flash_path);
        char *slash = strrchr(dir, '/');
        if (slash == dir)
            slash[1] = '\0';
        else if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof(dir), ".");
        base_rc = odirect_baseline(dir, o.big, o.repeats, &bw, &br, &brf,
                                   why, sizeof(why));
    } else {
        snprintf(why, sizeof(why), "flash path unknown");
    }
    printf("\n%-30s %12s %12s %12s %8s\n",
           ho_size_format(o.big, a, sizeof(a)), "daemon GB/s", "(I/O only)",
           "O_DIRECT GB/s", "ratio");
    if (base_rc == 0) {
        printf("%-30s %12.2f %12.2f %12.2f %7.0f%%\n", "spill (DDR -> flash)",
               sp, spi, bw, 100.0 * sp / bw);
        printf("%-30s %12.2f %12.2f %12.2f %7.0f%%\n", "fill (flash -> DDR)",
               fl, fli, br, 100.0 * fl / br);
    } else {
        printf("%-30s %12.2f %12.2f %12s %8s\n", "spill (DDR -> flash)", sp,
               spi, "-", "-");
        printf("%-30s %12.2f %12.2f %12s %8s\n", "fill (flash -> DDR)", fl,
               fli, "-", "-");
        printf("(no O_DIRECT baseline: %s)\n", why);
    }
    printf("(daemon GB/s: client-observed round trip; I/O only: the "
           "daemon's worker time;\n O_DIRECT: pwrite/pread of %u MiB chunks "
           "into a preallocated file in the same directory)\n",
           IO_CHUNK >> 20);
    if (base_rc == 0)
        printf("(reference: O_DIRECT read into freshly allocated pages, as a "
               "fill's are: %.2f GB/s)\n", brf);

    ho_close(c);
    int st = stop_daemon();
    cleanup();
    if (st != 0) {
        fprintf(stderr, "bench_server: the daemon exited with %d\n", st);
        return 1;
    }
    return 0;
}
