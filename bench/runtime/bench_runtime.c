/*
 * bench/runtime/bench_runtime.c - the runtime measured: replay overhead
 * per op, prefetch/store bandwidth through the pool, flash spill/fill
 * through the daemon; each next to its baseline, measured in the same run.
 *
 *   bench_runtime [--socket PATH] [--dir DIR] [--repeats N] [--ops N]
 *                 [--big SIZE] [--count N] [--flash-big SIZE]
 *
 * Without --socket it starts its own hyperoffloadd (next to this binary,
 * or $HO_DAEMON) in a temporary directory under --dir (default <build>/tmp)
 * and stops it at the end.  Every figure is the median over --repeats
 * (default 5) runs after one warm-up; a measurement and its baseline
 * alternate within each repeat, so that both see the same machine (the
 * runs share CPUs with whatever else runs).  Host backend throughout.
 *
 * 1. Replay overhead per op (target < 2 us):
 *    - an op with no actions: --ops (100000) ops that read one resident
 *      storage, planner "none" (no actions); a local replay and one
 *      installed with the daemon (shared control region);
 *    - the average over a real plan: a generated trace of 20000 ops and
 *      2000 storages of 4..64 KiB planned by hoplan (through the daemon)
 *      below its no-offload peak; overhead = (step wall - time waiting
 *      for copies) / ops, the framework's compute being empty;
 *    - next to a socket round trip per op: one Stats request to the
 *      daemon per op.
 * 2. Bandwidth through the pool (target >= 80% of memcpy): --count (4)
 *    storages of --big (64 MiB) per direction, host copies in the
 *    session's arena; H2D alone, D2H alone, both engines at once; next to
 *    plain memcpy of the same sizes between the same kinds of memory (a
 *    pool extent and a host-backend device buffer; one thread per
 *    direction), each replay step paired with the memcpy pass after it.
 * 3. Flash: spill and fill of a --flash-big (256 MiB) extent through the
 *    daemon next to O_DIRECT write/read of the same size in 8 MiB chunks
 *    in the flash file's directory; and whether a replay whose host copies
 *    exceed its DDR limit can be staged to flash.
 * GB/s are 10^9 bytes per second.
 */
#include <pthread.h>
#include <sys/mman.h>

#include "bench/runtime/bench_common.h"

typedef struct opts {
    const char *socket;
    const char *dir;
    unsigned repeats;
    unsigned ops;
    uint64_t big;
    unsigned count;
    uint64_t flash_big;
} opts;

static char work[PATH_MAX];

/* ------------------------------------------------------------ overhead */

static ho_trace *empty_trace(unsigned n_ops)
{
    ho_trace *t = NULL;
    bench_check(NULL, ho_trace_new("empty-ops", NULL, &t), "trace");
    bench_check(NULL, ho_trace_add_storage(t, 1, 4096, HO_KIND_PARAM,
                                           HO_INITIAL_DEVICE,
                                           HO_STORAGE_RETAINED), "storage");
    uint64_t r = 1;
    for (unsigned i = 0; i < n_ops; i++)
        bench_check(NULL, ho_trace_add_op(t, "op", 1.0, &r, 1, NULL, 0), "op");
    return t;
}

/* Median ns per op of whole steps of `r` (hooks only, no compute). */
static double per_op_ns(ho_replay *r, unsigned n_ops, unsigned repeats)
{
    double v[BENCH_MAX_REPEATS];
    for (unsigned k = 0; k <= repeats; k++) {
        double t0 = bench_now();
        bench_check(NULL, ho_step_begin(r), "step begin");
        for (uint32_t op = 0; op < n_ops; op++) {
            if (ho_op_begin(r, op) < 0 || ho_op_end(r, op) < 0)
                bench_die("op %u: %s", op, ho_runtime_last_error());
        }
        bench_check(NULL, ho_step_end(r, NULL), "step end");
        double t1 = bench_now();
        if (k > 0)
            v[k - 1] = (t1 - t0) * 1e9 / n_ops;
    }
    return bench_median(v, repeats);
}

static void overhead_empty(ho_client *c, const opts *o, double *ret_local,
                           double *ret_daemon)
{
    ho_trace *t = empty_trace(o->ops);
    ho_device *dev = NULL;
    bench_check(NULL, ho_device_open("host", 0, 1 << 20, &dev), "device");

    ho_plan *p = br_local_plan(t, 1 << 20, "none", work);
    ho_replay *r = NULL;
    bench_check(NULL, ho_replay_new(NULL, dev, t, p, NULL, &r),
                "local replay");
    *ret_local = per_op_ns(r, o->ops, o->repeats);
    ho_replay_free(r);
    ho_plan_free(p);

    bench_check(c, ho_plan_request(c, t, 1 << 20, "none", &p), "plan");
    bench_check(c, ho_replay_new(c, dev, t, p, NULL, &r), "daemon replay");
    *ret_daemon = per_op_ns(r, o->ops, o->repeats);
    ho_replay_free(r);
    ho_plan_free(p);
    ho_device_close(dev);
    ho_trace_free(t);
}

typedef struct real_result {
    uint32_t ops, storages;
    uint64_t actions, budget, no_offload_peak, h2d, d2h;
    double overhead_ns, wall_ms, exposed_ms, predicted_exposed_ms;
} real_result;

static void overhead_real(ho_client *c, const opts *o, real_result *res)
{
    plan_gen_random_cfg cfg = {
        .seed = 42, .n_ops = 20000, .n_storages = 2000,
        .max_refs_per_op = 4, .min_bytes = 4096, .max_bytes = 65536,
        .p_initial_device = 0.2, .p_initial_host = 0.1, .p_retained = 0.3,
        .p_pinned = 0.02};
    plan_trace *pt = NULL;
    char err[256], path[PATH_MAX + 32];
    if (plan_gen_random(&cfg, &pt, err, sizeof(err)) < 0)
        bench_die("generator: %s", err);
    snprintf(path, sizeof(path), "%s/real-trace.json", work);
    FILE *f = fopen(path, "w");
    if (!f || plan_trace_write_json(pt, f) < 0 || fclose(f) != 0)
        bench_die("cannot write %s", path);
    plan_trace_summary sm;
    if (plan_trace_summarize(pt, &sm) < 0)
        bench_die("summary");
    uint64_t budget = sm.max_op_working_set +
                      (sm.no_offload_peak - sm.max_op_working_set) / 2;
    plan_schedule *s = NULL;
    plan_result pr;
    memset(&pr, 0, sizeof(pr));
    if (plan_make(pt, budget, NULL, &s, &pr) == HO_E_INFEASIBLE)
        budget = pr.min_budget;
    plan_schedule_free(s);
    plan_trace_free(pt);

    ho_trace *t = NULL;
    bench_check(NULL, ho_trace_load(path, &t), "load trace");
    unlink(path);
    ho_plan *p = NULL;
    bench_check(c, ho_plan_request(c, t, budget, NULL, &p), "plan");
    ho_plan_info info;
    ho_plan_get_info(p, &info);
    ho_device *dev = NULL;
    bench_check(NULL, ho_device_open("host", 0, budget, &dev), "device");
    ho_replay *r = NULL;
    bench_check(c, ho_replay_new(c, dev, t, p, NULL, &r), "replay");
    double ov[BENCH_MAX_REPEATS], wall[BENCH_MAX_REPEATS],
        exp[BENCH_MAX_REPEATS];
    uint32_t n_ops = ho_trace_ops(t);
    for (unsigned k = 0; k <= o->repeats; k++) {
        ho_step_info si;
        bench_check(NULL, ho_step_begin(r), "step begin");
        for (uint32_t op = 0; op < n_ops; op++)
            if (ho_op_begin(r, op) < 0 || ho_op_end(r, op) < 0)
                bench_die("op %u: %s", op, ho_runtime_last_error());
        bench_check(NULL, ho_step_end(r, &si), "step end");
        if (si.h2d_bytes != info.h2d_bytes || si.d2h_bytes != info.d2h_bytes)
            bench_die("the step moved %llu/%llu bytes, the plan %llu/%llu",
                      (unsigned long long)si.h2d_bytes,
                      (unsigned long long)si.d2h_bytes,
                      (unsigned long long)info.h2d_bytes,
                      (unsigned long long)info.d2h_bytes);
        if (k == 0)
            continue;
        ov[k - 1] = (si.wall_us - si.exposed_us) * 1e3 / n_ops;
        wall[k - 1] = si.wall_us / 1e3;
        exp[k - 1] = si.exposed_us / 1e3;
    }
    res->ops = n_ops;
    res->storages = cfg.n_storages;
    res->actions = info.actions;
    res->budget = budget;
    res->no_offload_peak = info.no_offload_peak;
    res->h2d = info.h2d_bytes;
    res->d2h = info.d2h_bytes;
    res->overhead_ns = bench_median(ov, o->repeats);
    res->wall_ms = bench_median(wall, o->repeats);
    res->exposed_ms = bench_median(exp, o->repeats);
    res->predicted_exposed_ms = info.exposed_us / 1e3;
    ho_replay_free(r);
    ho_device_close(dev);
    ho_plan_free(p);
    ho_trace_free(t);
}

static double stats_rtt_us(ho_client *c, const opts *o)
{
    double v[BENCH_MAX_REPEATS];
    unsigned n = o->ops / 5 ? o->ops / 5 : 1;
    for (unsigned k = 0; k <= o->repeats; k++) {
        double t0 = bench_now();
        for (unsigned i = 0; i < n; i++)
            bench_check(c, ho_stats(c, NULL, 0, NULL, NULL), "stats");
        double t1 = bench_now();
        if (k > 0)
            v[k - 1] = (t1 - t0) * 1e6 / n;
    }
    return bench_median(v, o->repeats);
}

/* ------------------------------------------------------------ bandwidth */

typedef struct mc_job {
    uint8_t *src, *dst;
    unsigned n;
    uint64_t big;
    pthread_barrier_t *go;
    double secs;
} mc_job;

static void *mc_main(void *arg)
{
    mc_job *j = arg;
    pthread_barrier_wait(j->go);
    double t0 = bench_now();
    for (unsigned i = 0; i < j->n; i++)
        memcpy(j->dst + (uint64_t)i * j->big, j->src + (uint64_t)i * j->big,
               (size_t)j->big);
    j->secs = bench_now() - t0;
    return NULL;
}

static uint8_t *prefaulted(uint64_t len)
{
    void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        bench_die("mmap of %llu bytes: %s", (unsigned long long)len,
                  strerror(errno));
    memset(p, 0x11, (size_t)len);
    return p;
}

/* One memcpy pass of `count` x `big` by `threads` threads at once: thread
 * i copies src[i] -> dst[i]; aggregate GB/s. */
static double memcpy_pass(const opts *o, unsigned threads, uint8_t *src[2],
                          uint8_t *dst[2])
{
    uint64_t per = (uint64_t)o->count * o->big;
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, threads);
    mc_job j[2];
    pthread_t th[2];
    for (unsigned i = 0; i < threads; i++) {
        j[i] = (mc_job){src[i], dst[i], o->count, o->big, &go, 0};
        pthread_create(&th[i], NULL, mc_main, &j[i]);
    }
    double worst = 0;
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        if (j[i].secs > worst)
            worst = j[i].secs;
    }
    pthread_barrier_destroy(&go);
    return (double)(per * threads) / worst / 1e9;
}

/* Bandwidth of replay steps of `mode` and of memcpy of the same sizes
 * (one thread per direction), measured alternately in each repeat so that
 * both see the same machine; medians into *ret_pool and *ret_memcpy. */
static void replay_bw(ho_client *c, const opts *o, int mode, double *ret_pool,
                      double *ret_memcpy, double *ret_ratio)
{
    unsigned n = o->count;
    uint64_t per_set = (uint64_t)n * o->big;
    uint64_t cap = mode == BR_BOTH ? 2 * per_set : per_set;
    ho_trace *t = br_bw_trace(mode, n, o->big);
    ho_plan *p = NULL;
    bench_check(c, ho_plan_request(c, t, cap, "none", &p), "plan");
    ho_device *dev = NULL;
    bench_check(NULL, ho_device_open("host", 0, cap, &dev), "device");
    ho_replay *r = NULL;
    bench_check(c, ho_replay_new(c, dev, t, p, NULL, &r), "replay");
    void *buf = malloc(o->big);
    if (!buf)
        bench_die("out of memory");
    memset(buf, 0x5a, o->big);
    br_touch(r, mode, n, o->big, buf);
    free(buf);
    /* The baseline copies between the same kinds of memory the replay
     * copies between -- an extent of the session's pool and a buffer of a
     * host-backend device -- with plain memcpy and nothing else: H2D pool
     * -> device, D2H device -> pool, both at once on two threads. */
    unsigned threads = mode == BR_BOTH ? 2 : 1;
    ho_device *bdev = NULL;
    bench_check(NULL, ho_device_open("host", 0, per_set * threads, &bdev),
                "baseline device");
    ho_extent ext[2];
    uint8_t *src[2], *dst[2];
    for (unsigned i = 0; i < threads; i++) {
        void *dbuf = NULL;
        bench_check(c, ho_extent_alloc(c, per_set, &ext[i]),
                    "baseline extent");
        bench_check(NULL, ho_device_alloc(bdev, per_set, &dbuf),
                    "baseline device buffer");
        memset(ext[i].ptr, 0x11, per_set);
        memset(dbuf, 0x22, per_set);
        bool h2d = mode == BR_H2D || (mode == BR_BOTH && i == 0);
        src[i] = h2d ? ext[i].ptr : dbuf;
        dst[i] = h2d ? dbuf : ext[i].ptr;
    }
    /* A sample takes tens of milliseconds, so take at least 11 of them;
     * the ratio is the median of the per-sample ratios (each replay step
     * next to the memcpy pass right after it), robust to the load drifting
     * over the run. */
    unsigned samples = o->repeats < 11 ? 11 : o->repeats;
    if (samples > BENCH_MAX_REPEATS)
        samples = BENCH_MAX_REPEATS;
    double v[BENCH_MAX_REPEATS], m[BENCH_MAX_REPEATS], q[BENCH_MAX_REPEATS];
    uint64_t bytes = mode == BR_BOTH ? 2 * per_set : per_set;
    for (unsigned k = 0; k <= samples; k++) {
        double s = br_bw_step(r, mode, n);
        double mc = memcpy_pass(o, threads, src, dst);
        if (k > 0) {
            v[k - 1] = (double)bytes / s / 1e9;
            m[k - 1] = mc;
            q[k - 1] = v[k - 1] / mc;
        }
    }
    for (unsigned i = 0; i < threads; i++)
        bench_check(c, ho_extent_free(c, ext[i].id), "baseline free");
    ho_device_close(bdev);
    ho_replay_free(r);
    ho_device_close(dev);
    ho_plan_free(p);
    ho_trace_free(t);
    *ret_pool = bench_median(v, samples);
    *ret_memcpy = bench_median(m, samples);
    *ret_ratio = bench_median(q, samples);
}

/* ------------------------------------------------------------ flash */

/* Spill and fill of a flash_big extent through the daemon and, when fd >=
 * 0, an O_DIRECT pass in the flash file's directory, alternately in each
 * repeat; medians (GB/s). */
static void flash_bw(ho_client *c, const opts *o, int fd, double *ret_spill,
                     double *ret_fill, double *ret_w, double *ret_r)
{
    double s[BENCH_MAX_REPEATS], f[BENCH_MAX_REPEATS], w[BENCH_MAX_REPEATS],
        r[BENCH_MAX_REPEATS];
    ho_extent e;
    bench_check(c, ho_extent_alloc(c, o->flash_big, &e), "extent alloc");
    memset(e.ptr, 0x3c, (size_t)o->flash_big);
    uint8_t *buf = fd >= 0 ? prefaulted(o->flash_big) : NULL;
    for (unsigned k = 0; k < o->repeats; k++) {
        double t0 = bench_now();
        bench_check(c, ho_extent_spill(c, e.id, NULL), "spill");
        double t1 = bench_now();
        bench_check(c, ho_extent_fill(c, e.id, NULL), "fill");
        double t2 = bench_now();
        s[k] = (double)o->flash_big / (t1 - t0) / 1e9;
        f[k] = (double)o->flash_big / (t2 - t1) / 1e9;
        if (fd >= 0 &&
            (bench_odirect_io(fd, buf, o->flash_big, 1, &w[k]) < 0 ||
             bench_odirect_io(fd, buf, o->flash_big, 0, &r[k]) < 0))
            bench_die("O_DIRECT I/O failed: %s", strerror(errno));
    }
    if (((uint8_t *)e.ptr)[o->flash_big / 2] != 0x3c)
        bench_die("the extent changed across spill and fill");
    bench_check(c, ho_extent_free(c, e.id), "extent free");
    if (buf)
        munmap(buf, o->flash_big);
    *ret_spill = bench_median(s, o->repeats);
    *ret_fill = bench_median(f, o->repeats);
    *ret_w = fd >= 0 ? bench_median(w, o->repeats) : 0;
    *ret_r = fd >= 0 ? bench_median(r, o->repeats) : 0;
}

/* The flash file's directory, from the daemon's tier name. */
static int flash_dir(ho_client *c, char *buf, size_t len)
{
    ho_tier_stats ts[8];
    size_t n = 0;
    if (ho_stats(c, ts, 8, &n, NULL) < 0)
        return -1;
    for (size_t i = 0; i < n && i < 8; i++) {
        if (ts[i].tier == HO_TIER_FLASH &&
            strncmp(ts[i].name, "flash:", 6) == 0) {
            return bench_parent_dir(ts[i].name + 6, buf, len);
        }
    }
    return -1;
}

/* Try a replay whose host copies exceed its DDR limit (the daemon must
 * stage them to flash); one step; figures into why. */
static void staged_replay(ho_client *c, const opts *o, char *out,
                          size_t outlen)
{
    unsigned n = o->count;
    uint64_t per_set = (uint64_t)n * o->big;
    ho_trace *t = br_bw_trace(BR_SEQ, n, o->big);
    ho_plan *p = NULL;
    bench_check(c, ho_plan_request(c, t, o->big, "none", &p), "plan");
    ho_device *dev = NULL;
    bench_check(NULL, ho_device_open("host", 0, o->big, &dev), "device");
    ho_replay_opts ro = {.ddr_limit = per_set / 2};
    ho_replay *r = NULL;
    int rc = ho_replay_new(c, dev, t, p, &ro, &r);
    if (rc < 0) {
        char why[512];
        snprintf(out, outlen, "not available: %s (%s)", ho_err_name(rc),
                 ho_last_error(c, why, sizeof(why)));
    } else {
        double v[BENCH_MAX_REPEATS];
        ho_step_info si = {0};
        for (unsigned k = 0; k <= o->repeats; k++) {
            double s = br_bw_step(r, BR_SEQ, n);
            ho_step_stats(r, 0, &si);
            if (k > 0)
                v[k - 1] = (double)per_set / s / 1e9;
        }
        snprintf(out, outlen, "DDR limit %llu MiB for %llu MiB of host "
                 "copies read one after the other: %.2f GB/s per step, last "
                 "step flash in %llu MiB, out %llu MiB, stall %.1f ms",
                 (unsigned long long)(per_set / 2 >> 20),
                 (unsigned long long)(per_set >> 20),
                 bench_median(v, o->repeats),
                 (unsigned long long)(si.flash_in_bytes >> 20),
                 (unsigned long long)(si.flash_out_bytes >> 20),
                 si.stall_us / 1e3);
        ho_replay_free(r);
    }
    ho_device_close(dev);
    ho_plan_free(p);
    ho_trace_free(t);
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr, "usage: bench_runtime [--socket PATH] [--dir DIR] "
            "[--repeats N] [--ops N] [--big SIZE] [--count N] "
            "[--flash-big SIZE]\n");
    exit(2);
}

static uint64_t parse_size(const char *s)
{
    uint64_t v;
    if (!s || ho_size_parse(s, &v) < 0 || v == 0)
        usage();
    return v;
}

static unsigned parse_count(const char *s, unsigned lo, unsigned hi)
{
    char *end;
    unsigned long v = s ? strtoul(s, &end, 10) : 0;
    if (!s || *end || v < lo || v > hi)
        usage();
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    opts o = {.repeats = 5, .ops = 100000, .big = 64ull << 20, .count = 4,
              .flash_big = 256ull << 20};
    bench_set_prog("bench_runtime");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--socket"))
            o.socket = v, i++;
        else if (!strcmp(a, "--dir"))
            o.dir = v, i++;
        else if (!strcmp(a, "--repeats"))
            o.repeats = parse_count(v, 1, BENCH_MAX_REPEATS - 1), i++;
        else if (!strcmp(a, "--ops"))
            o.ops = parse_count(v, 100, 10000000), i++;
        else if (!strcmp(a, "--big"))
            o.big = parse_size(v), i++;
        else if (!strcmp(a, "--count"))
            o.count = parse_count(v, 1, 256), i++;
        else if (!strcmp(a, "--flash-big"))
            o.flash_big = parse_size(v), i++;
        else
            usage();
        if (i >= argc)
            usage();
    }
    if (o.big % 4096 || o.flash_big % 4096)
        bench_die("sizes must be multiples of 4 KiB");

    char sock[PATH_MAX];
    uint64_t sets = 2ull * o.count * o.big;
    if (o.socket) {
        snprintf(sock, sizeof(sock), "%s", o.socket);
    } else {
        bench_daemon_opts d = {
            .dir = o.dir, .name = "bench-runtime",
            .ddr = 2 * sets + o.flash_big + (512ull << 20),
            .flash = 2 * o.flash_big + sets + (512ull << 20),
            .devices = 1, .hbm = 2 * sets + (1ull << 30)};
        bench_start_daemon(&d, sock, sizeof(sock));
    }
    if (o.dir)
        snprintf(work, sizeof(work), "%s", o.dir);
    else if (bench_daemon_dir()[0])
        snprintf(work, sizeof(work), "%s", bench_daemon_dir());
    else
        bench_default_dir(work, sizeof(work));

    ho_client *c = NULL;
    bench_check(NULL, ho_connect(sock, "bench_runtime", &c), "connect");
    bench_check(c, ho_register(c, "bench", 0, sets), "register");

    printf("bench_runtime: host backend, median of %u repeats after a "
           "warm-up\n\n", o.repeats);

    double local_ns, daemon_ns;
    overhead_empty(c, &o, &local_ns, &daemon_ns);
    real_result rr;
    overhead_real(c, &o, &rr);
    double rtt = stats_rtt_us(c, &o);
    printf("1. replay overhead per op (target < 2 us)\n");
    printf("   %-52s %10.3f us\n", "op without actions, local replay",
           local_ns / 1e3);
    printf("   %-52s %10.3f us\n",
           "op without actions, daemon replay (control region)",
           daemon_ns / 1e3);
    printf("   %-52s %10.3f us\n", "real plan, average (wall - waits) / ops",
           rr.overhead_ns / 1e3);
    printf("   %-52s %10.3f us\n", "socket round trip per op (Stats request)",
           rtt);
    printf("   real plan: %u ops, %u storages, %llu actions, budget %llu "
           "KiB (no-offload peak %llu KiB), H2D %llu KiB + D2H %llu KiB per "
           "step;\n   step wall %.2f ms, waiting for copies %.2f ms (the "
           "model, with its op durations: %.2f ms exposed)\n\n",
           rr.ops, rr.storages, (unsigned long long)rr.actions,
           (unsigned long long)(rr.budget >> 10),
           (unsigned long long)(rr.no_offload_peak >> 10),
           (unsigned long long)(rr.h2d >> 10),
           (unsigned long long)(rr.d2h >> 10), rr.wall_ms, rr.exposed_ms,
           rr.predicted_exposed_ms);

    double h2d, d2h, both, mc_h2d, mc_d2h, mc2;
    double q_h2d, q_d2h, q2;
    replay_bw(c, &o, BR_H2D, &h2d, &mc_h2d, &q_h2d);
    replay_bw(c, &o, BR_D2H, &d2h, &mc_d2h, &q_d2h);
    replay_bw(c, &o, BR_BOTH, &both, &mc2, &q2);
    printf("2. bandwidth through the pool, %u x %llu MiB per direction "
           "(target >= 80%% of memcpy)\n", o.count,
           (unsigned long long)(o.big >> 20));
    printf("   %-28s %10s %12s %8s\n", "", "pool GB/s", "memcpy GB/s",
           "ratio");
    printf("   %-28s %10.2f %12.2f %7.0f%%\n", "prefetch (H2D engine)", h2d,
           mc_h2d, 100 * q_h2d);
    printf("   %-28s %10.2f %12.2f %7.0f%%\n", "store (D2H engine)", d2h,
           mc_d2h, 100 * q_d2h);
    printf("   %-28s %10.2f %12.2f %7.0f%%\n", "both engines (aggregate)",
           both, mc2, 100 * q2);
    printf("   (medians of at least 11 samples; memcpy: the same sizes between "
           "a pool extent and a\n    host-backend device buffer, one thread "
           "per direction, right after each replay\n    step; ratio: median of "
           "the per-sample ratios)\n\n");

    double sp, fi, ow = 0, orr = 0;
    char fdir[PATH_MAX], why[256] = "";
    int ofd = flash_dir(c, fdir, sizeof(fdir)) == 0
                  ? bench_odirect_open(fdir, o.flash_big, why, sizeof(why))
                  : (snprintf(why, sizeof(why), "flash tier not found"), -1);
    flash_bw(c, &o, ofd, &sp, &fi, &ow, &orr);
    if (ofd >= 0)
        close(ofd);
    int orc = ofd >= 0 ? 0 : -1;
    printf("3. flash through the daemon, %llu MiB\n",
           (unsigned long long)(o.flash_big >> 20));
    printf("   %-28s %10s %12s %8s\n", "", "daemon GB/s", "O_DIRECT GB/s",
           "ratio");
    if (orc == 0) {
        printf("   %-28s %10.2f %12.2f %7.0f%%\n", "spill (write)", sp, ow,
               100 * sp / ow);
        printf("   %-28s %10.2f %12.2f %7.0f%%\n", "fill (read)", fi, orr,
               100 * fi / orr);
    } else {
        printf("   spill %.2f GB/s, fill %.2f GB/s (no O_DIRECT baseline: "
               "%s)\n", sp, fi, why);
    }
    char staged[512];
    staged_replay(c, &o, staged, sizeof(staged));
    printf("   staged replay: %s\n", staged);

    ho_close(c);
    bench_stop_daemon();
    bench_cleanup();
    return 0;
}
