/*
 * bench/server/bench_server.c - hyperoffloadd through its socket, measured
 * with the real client library.
 *
 *   bench_server [--socket PATH] [--repeats N] [--requests N]
 *                [--clients N] [--big SIZE] [--dir DIR]
 *                [--upload-ops N]
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
 *   - another client's Stats p50/p99/max round trip while 4 clients each
 *     upload a --upload-ops (default 1,000,000) op trace in PlanRequests
 *     over and over (a planner name the daemon refuses once it has read
 *     the trace, so each upload costs the daemon its full decode; issue
 *     10 item 4), next to the idle figure;
 *   - DDR alloc and free rates through the daemon (64 KiB extents);
 *   - spill and fill bandwidth of one --big extent (default 256 MiB)
 *     next to a plain O_DIRECT sequential write / read of the same size in
 *     8 MiB chunks, in the directory of the daemon's flash file, and the
 *     ratio (target >= 70%).
 * Bandwidths are in GB/s (10^9 bytes per second).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/common/bench_util.h"
#include "hyperoffload/client.h"
#include "hyperoffload/runtime.h"

#define MAX_CLIENTS 256

typedef struct opts {
    const char *socket;
    const char *dir;
    unsigned repeats;
    unsigned requests;
    unsigned clients;
    unsigned ddr_ops;
    unsigned upload_ops;
    uint64_t big;
} opts;

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
        double t0 = bench_now();
        w->rc = one_request(w->c, w->kind);
        w->lat[i] = bench_now() - t0;
    }
    w->t_end = bench_now();
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
        bench_die("out of memory");
    pthread_barrier_init(&start, NULL, nclients + 1);
    for (unsigned i = 0; i < nclients; i++) {
        w[i] = (lat_worker){.c = cs[i], .kind = kind, .n = n,
                            .lat = all + (size_t)i * n, .start = &start};
        if (pthread_create(&th[i], NULL, lat_main, &w[i]) != 0)
            bench_die("pthread_create failed");
    }
    pthread_barrier_wait(&start);
    double t0 = bench_now(), t_end = t0;
    for (unsigned i = 0; i < nclients; i++) {
        pthread_join(th[i], NULL);
        bench_check(cs[i], w[i].rc,
                    kind == REQ_STATS ? "stats" : "alloc+free");
        if (w[i].t_end > t_end)
            t_end = w[i].t_end;
    }
    pthread_barrier_destroy(&start);
    size_t total = (size_t)n * nclients;
    lat_result r = {
        .p50_us = bench_percentile(all, total, 0.50) * 1e6,
        .p99_us = bench_percentile(all, total, 0.99) * 1e6,
        .rate = (double)total / (t_end - t0),
    };
    free(all);
    return r;
}

static lat_result latency(ho_client **cs, unsigned nclients, unsigned n,
                          req_kind kind, unsigned repeats)
{
    double p50[BENCH_MAX_REPEATS], p99[BENCH_MAX_REPEATS],
        rate[BENCH_MAX_REPEATS];
    for (unsigned r = 0; r < repeats; r++) {
        lat_result x = latency_run(cs, nclients, n, kind);
        p50[r] = x.p50_us;
        p99[r] = x.p99_us;
        rate[r] = x.rate;
    }
    return (lat_result){bench_median(p50, repeats),
                        bench_median(p99, repeats),
                        bench_median(rate, repeats)};
}

/* ------------------------------------------------------------ uploads */

#define UPLOADERS 4

/* A trace of n ops over n/4 device storages of 4-64 KiB, each op reading
 * two and writing one (through the public API). */
static ho_trace *upload_trace(unsigned n)
{
    ho_link link = {1.0, 1.0, 5.0, 1};
    ho_trace *t = NULL;
    uint64_t nst = n / 4 > 2 ? n / 4 : 2;
    if (ho_trace_new("upload", &link, &t) < 0)
        bench_die("ho_trace_new failed");
    for (uint64_t i = 0; i < nst; i++)
        if (ho_trace_add_storage(t, i + 1, 4096 * (1 + i % 16),
                                 HO_KIND_ACTIVATION, HO_INITIAL_DEVICE,
                                 0) < 0)
            bench_die("ho_trace_add_storage failed");
    for (uint64_t k = 0; k < n; k++) {
        uint64_t rd[2] = {1 + k % nst, 1 + (k * 7 + 3) % nst};
        uint64_t wr = 1 + (k * 13 + 5) % nst;
        if (ho_trace_add_op(t, "op", 10.0, rd, 2, &wr, 1) < 0)
            bench_die("ho_trace_add_op failed");
    }
    return t;
}

typedef struct uploader {
    ho_client *c;
    const ho_trace *t;
    atomic_int *stop;
    unsigned done;
    int rc;                /* the last refusal's code (expected: one) */
} uploader;

static void *upload_main(void *p)
{
    uploader *u = p;
    while (!atomic_load(u->stop)) {
        ho_plan *pl = NULL;
        u->rc = ho_plan_request(u->c, u->t, 1ull << 30, "no-such-planner",
                                &pl);
        ho_plan_free(pl);
        if (u->rc == HO_E_DISCONNECTED)
            break;
        u->done++;
    }
    return NULL;
}

/* The probe's Stats round trips (p50, p99, max in us) while UPLOADERS
 * clients upload t; each uploader gets at least 2 uploads in (or 120 s). */
static void upload_probe(const char *sock, ho_client *probe,
                         const ho_trace *t, double *ret_p50,
                         double *ret_p99, double *ret_max,
                         unsigned *ret_uploads)
{
    uploader u[UPLOADERS];
    pthread_t th[UPLOADERS];
    atomic_int stop;
    atomic_init(&stop, 0);
    for (unsigned i = 0; i < UPLOADERS; i++) {
        u[i] = (uploader){.t = t, .stop = &stop};
        char name[32];
        snprintf(name, sizeof(name), "bench-up-%u", i);
        bench_check(NULL, ho_connect(sock, name, &u[i].c), "connect");
        bench_check(u[i].c, ho_register(u[i].c, NULL, -1, 0), "register");
    }
    size_t cap = 1u << 20, n = 0;
    double *lat = malloc(sizeof(double) * cap);
    if (!lat)
        bench_die("out of memory");
    for (unsigned i = 0; i < UPLOADERS; i++)
        if (pthread_create(&th[i], NULL, upload_main, &u[i]) != 0)
            bench_die("pthread_create failed");
    double t0 = bench_now();
    for (;;) {
        unsigned least = UINT32_MAX;
        for (unsigned i = 0; i < UPLOADERS; i++)
            if (u[i].done < least)
                least = u[i].done;
        if (least >= 2 || bench_now() - t0 > 120 || n == cap)
            break;
        double a = bench_now();
        ho_usage us;
        bench_check(probe, ho_stats(probe, NULL, 0, NULL, &us), "stats");
        lat[n++] = bench_now() - a;
    }
    atomic_store(&stop, 1);
    unsigned uploads = 0;
    for (unsigned i = 0; i < UPLOADERS; i++) {
        pthread_join(th[i], NULL);
        uploads += u[i].done;
        if (u[i].rc == HO_E_DISCONNECTED)
            bench_check(u[i].c, u[i].rc, "plan request (upload)");
        ho_close(u[i].c);
    }
    double mx = 0;
    for (size_t i = 0; i < n; i++)
        if (lat[i] > mx)
            mx = lat[i];
    *ret_p50 = n ? bench_percentile(lat, n, 0.50) * 1e6 : 0;
    *ret_p99 = n ? bench_percentile(lat, n, 0.99) * 1e6 : 0;
    *ret_max = mx * 1e6;
    *ret_uploads = uploads;
    free(lat);
}

/* ------------------------------------------------------------ DDR rate */

static void ddr_rates(ho_client *c, unsigned nops, unsigned repeats,
                      double *ret_alloc, double *ret_free)
{
    double ra[BENCH_MAX_REPEATS], rf[BENCH_MAX_REPEATS];
    ho_extent *e = calloc(nops, sizeof(*e));
    if (!e)
        bench_die("out of memory");
    for (unsigned r = 0; r < repeats; r++) {
        double t0 = bench_now();
        for (unsigned i = 0; i < nops; i++)
            bench_check(c, ho_extent_alloc(c, 64 * 1024, &e[i]), "alloc");
        double t1 = bench_now();
        for (unsigned i = 0; i < nops; i++)
            bench_check(c, ho_extent_free(c, e[i].id), "free");
        double t2 = bench_now();
        ra[r] = nops / (t1 - t0);
        rf[r] = nops / (t2 - t1);
    }
    free(e);
    *ret_alloc = bench_median(ra, repeats);
    *ret_free = bench_median(rf, repeats);
}

/* ------------------------------------------------------------ bandwidth */

static void spill_fill(ho_client *c, uint64_t big, unsigned repeats,
                       double *ret_spill, double *ret_fill,
                       double *ret_spill_io, double *ret_fill_io)
{
    double s[BENCH_MAX_REPEATS], f[BENCH_MAX_REPEATS], si[BENCH_MAX_REPEATS],
        fi[BENCH_MAX_REPEATS];
    ho_extent e;
    bench_check(c, ho_extent_alloc(c, big, &e), "alloc of the large extent");
    for (uint64_t i = 0; i < big; i += 8)
        *(uint64_t *)((uint8_t *)e.ptr + i) = i * 0x9E3779B97F4A7C15ull;
    for (unsigned r = 0; r < repeats; r++) {
        ho_move_result m;
        double t0 = bench_now();
        bench_check(c, ho_extent_spill(c, e.id, &m), "spill");
        double t1 = bench_now();
        s[r] = (double)big / (t1 - t0) / 1e9;
        si[r] = m.duration_us > 0 ? (double)big / m.duration_us / 1e3 : 0;
        t0 = bench_now();
        bench_check(c, ho_extent_fill(c, e.id, &m), "fill");
        t1 = bench_now();
        f[r] = (double)big / (t1 - t0) / 1e9;
        fi[r] = m.duration_us > 0 ? (double)big / m.duration_us / 1e3 : 0;
    }
    if (*(uint64_t *)((uint8_t *)e.ptr + 8 * 12345) !=
        8 * 12345 * 0x9E3779B97F4A7C15ull)
        bench_die("the large extent changed across spill/fill");
    bench_check(c, ho_extent_free(c, e.id), "free");
    *ret_spill = bench_median(s, repeats);
    *ret_fill = bench_median(f, repeats);
    *ret_spill_io = bench_median(si, repeats);
    *ret_fill_io = bench_median(fi, repeats);
}

/* Plain O_DIRECT sequential write then read of `big` bytes in
 * BENCH_IO_CHUNK pieces, in `dir`, into a preallocated file, then the read
 * again into pages the kernel must allocate first; medians over repeats.
 * 0, or -1 with the reason in why. */
static int odirect_baseline(const char *dir, uint64_t big, unsigned repeats,
                            double *ret_w, double *ret_r, double *ret_rfresh,
                            char *why, size_t whylen)
{
    int fd = bench_odirect_open(dir, big, why, whylen);
    if (fd < 0)
        return -1;
    uint8_t *buf = mmap(NULL, big, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        close(fd);
        snprintf(why, whylen, "mmap: %s", strerror(errno));
        return -1;
    }
    for (uint64_t i = 0; i < big; i += 8)
        *(uint64_t *)(buf + i) = i * 0x9E3779B97F4A7C15ull;
    double w[BENCH_MAX_REPEATS], r[BENCH_MAX_REPEATS], rf[BENCH_MAX_REPEATS];
    int rc = 0;
    for (unsigned k = 0; k < repeats && rc == 0; k++) {
        rc = bench_odirect_io(fd, buf, big, 1, &w[k]);
        if (rc == 0)
            rc = bench_odirect_io(fd, buf, big, 0, &r[k]);
        /* again into pages the kernel must allocate first, as a fill's
         * destination in the pool is (its DDR pages were released) */
        madvise(buf, big, MADV_DONTNEED);
        if (rc == 0)
            rc = bench_odirect_io(fd, buf, big, 0, &rf[k]);
    }
    if (rc < 0)
        snprintf(why, whylen, "O_DIRECT I/O failed: %s", strerror(errno));
    munmap(buf, big);
    close(fd);
    if (rc == 0) {
        *ret_w = bench_median(w, repeats);
        *ret_r = bench_median(r, repeats);
        *ret_rfresh = bench_median(rf, repeats);
    }
    return rc;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
    fputs("usage: bench_server [--socket PATH] [--repeats N] [--requests N]\n"
          "                    [--clients N] [--ddr-ops N] [--big SIZE] "
          "[--dir DIR]\n"
          "                    [--upload-ops N (0: no upload figure)]\n",
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
              .ddr_ops = 2000, .upload_ops = 1000000,
              .big = 256ull << 20};
    bench_set_prog("bench_server");
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
            o.repeats = parse_count(v, 1, BENCH_MAX_REPEATS);
        else if (strcmp(a, "--requests") == 0)
            o.requests = parse_count(v, 10, 10000000);
        else if (strcmp(a, "--clients") == 0)
            o.clients = parse_count(v, 2, MAX_CLIENTS);
        else if (strcmp(a, "--ddr-ops") == 0)
            o.ddr_ops = parse_count(v, 10, 1000000);
        else if (strcmp(a, "--upload-ops") == 0)
            o.upload_ops = parse_count(v, 0, 4000000);
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
    if (o.socket) {
        snprintf(sock, sizeof(sock), "%s", o.socket);
    } else {
        bench_daemon_opts d = {.dir = o.dir, .name = "bench-server",
                               .ddr = o.big + (512ull << 20),
                               .flash = o.big + (512ull << 20)};
        bench_start_daemon(&d, sock, sizeof(sock));
    }

    /* connections: 1 + clients, all registered (own arenas) */
    unsigned ncl = o.clients;
    ho_client *cs[MAX_CLIENTS];
    for (unsigned i = 0; i < ncl; i++) {
        char name[32];
        snprintf(name, sizeof(name), "bench-%u", i);
        bench_check(NULL, ho_connect(sock, name, &cs[i]), "connect");
        bench_check(cs[i], ho_register(cs[i], NULL, -1, 0), "register");
    }
    ho_client *c = cs[0];

    ho_tier_stats tiers[8];
    size_t nt = 0;
    bench_check(c, ho_stats(c, tiers, 8, &nt, NULL), "stats");
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

    if (o.upload_ops) {
        ho_trace *t = upload_trace(o.upload_ops);
        ho_plan *pl = NULL; /* finishes t once, before the threads share it */
        int prc = ho_plan_request(c, t, 1ull << 30, "no-such-planner", &pl);
        ho_plan_free(pl);
        if (prc == HO_E_DISCONNECTED || prc == HO_E_FRAME_TOO_LARGE)
            bench_check(c, prc, "plan request (upload)");
        double p50, p99, mx;
        unsigned ups;
        upload_probe(sock, c, t, &p50, &p99, &mx, &ups);
        ho_trace_free(t);
        printf("%-30s %8s %10.1f %10.1f %14s\n",
               "stats, idle (as above)", "1", s1.p50_us, s1.p99_us, "");
        printf("%-30s %8s %10.1f %10.1f %11.0f us\n",
               "stats during 4 uploads", "1", p50, p99, mx);
        printf("(%u PlanRequests of a %u-op trace from %d clients while "
               "the probe ran; last column: its slowest round trip)\n",
               ups, o.upload_ops, UPLOADERS);
        fflush(stdout);
    }

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
    char dir[PATH_MAX];
    if (flash_path && bench_parent_dir(flash_path, dir, sizeof(dir)) == 0) {
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
           BENCH_IO_CHUNK >> 20);
    if (base_rc == 0)
        printf("(reference: O_DIRECT read into freshly allocated pages, as a "
               "fill's are: %.2f GB/s)\n", brf);

    ho_close(c);
    int st = bench_stop_daemon();
    bench_cleanup();
    if (st != 0) {
        fprintf(stderr, "bench_server: the daemon exited with %d\n", st);
        return 1;
    }
    return 0;
}
