/*
 * examples/c/replay_demo.c - HyperOffload's main job (ho-demo-client): one
 * training process of one emulated device that replays a planned step
 * with real bytes.
 *
 *   1. connect to hyperoffloadd and register (job, device d, HBM budget);
 *   2. generate a decoder-only transformer training step (planner/'s
 *      generator, with a device profile whose op durations are milliseconds
 *      and whose link bandwidth is what the host backend's copies reach
 *      here) or load a trace file;
 *   3. step 1 runs without offload on process memory and is recorded with
 *      ho_trace_* (every op fills what it writes and checks what it reads);
 *   4. ho_plan_request for the session's grant; ho_device_open("host") with
 *      capacity = budget (a wrong plan fails hard); ho_replay_new;
 *   5. steps 2..N+1 through the hooks: each op fills the storages it writes
 *      with content that is a function of (storage id, step, version),
 *      verifies every storage it reads byte for byte, and waits out the rest
 *      of its trace duration so that compute takes real time;
 *   6. prints the per-step table (ho_step_stats), the plan's figures and a
 *      summary, writes a picture of device memory over one step (SVG) with
 *      the copies the runtime made in that step (its copy log,
 *      ho_replay_record_copies) next to the model's, and exits non-zero on
 *      any mismatch or error.
 *
 * When the daemon goes away (HO_E_DISCONNECTED) and --reconnect is given,
 * the client reconnects, registers again, re-plans, restores its retained
 * state from the last completed step (the content function is its
 * checkpoint) and continues.  --pause-at lets tests stop it (SIGSTOP) at an
 * exact op of an exact step.
 *
 * Usage: ho-demo-client --help.  Links the public library and the planner
 * library (generator; execution model for the picture's predicted curve).
 */
#include <hyperoffload/client.h>
#include <hyperoffload/runtime.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "examples/c/demo_svg.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"

#define PROG "ho-demo-client"
#define MAX_STEPS 100000u
#define MAX_STORAGE_BYTES (1ull << 34) /* 16 GiB: this is a demo */
#define CONTENT_K 0x9E3779B97F4A7C15ull

/* ------------------------------------------------------------ options */

typedef struct demo_opts {
    const char *socket, *job, *trace_path, *svg_path, *planner, *backend;
    const char *save_trace;  /* --save-trace: the traced step, as JSON */
    const char *picture_path;  /* --picture-data: for ho-demo-picture */
    int device;
    uint64_t budget;        /* 0: budget_ratio x no-offload peak */
    double budget_ratio;
    uint32_t steps;         /* replayed steps after the traced one */
    uint32_t svg_step;      /* job step drawn; 0: the last */
    plan_gen_train_cfg gen;
    double link_gbps;       /* 0: measure */
    double link_share;
    double latency_us;
    uint64_t ddr_limit;
    double weight, max_slowdown; /* node arbitration (0: defaults) */
    int sync;               /* a rank of a synchronous job */
    uint64_t pause_step;    /* 0: never */
    uint32_t pause_op;
    double reconnect_s;     /* 0: a lost daemon is fatal */
    int check_ops;
    int measure_link;       /* only print the copy rate and exit */
} demo_opts;

/* Content version of a storage: the step and the write within the step
 * that produced what it holds (0, 0: the initial content). */
typedef struct ver {
    uint64_t step;
    uint64_t n;
} ver;

typedef struct demo {
    demo_opts o;
    char name[32];             /* "client0" */
    plan_trace *pt;            /* the program: owned */
    uint64_t *ids;             /* storage id per pt->refs entry; owned */
    uint32_t *last_op;         /* per storage, PLAN_NONE if never used */
    ver *cur, *saved;          /* per storage; owned */
    uint8_t *scratch;          /* max storage bytes: initial content, and
                                  every fill/check on a device that is not
                                  host-addressable; owned */
    uint64_t max_bytes;
    int direct;                /* device memory is host-addressable */

    ho_trace *ht;              /* recorded in step 1; owned */
    ho_client *c;              /* owned */
    ho_device *dev;            /* owned */
    ho_plan *plan;             /* owned */
    ho_replay *r;              /* owned */
    ho_plan_info info;
    uint64_t budget, model_peak, step1_peak;
    double step1_wall_us;
    double copy_gbps;          /* measured, 0 when not measured */
    uint64_t session_id;

    ho_step_info *steps;       /* per replayed step; owned */
    uint32_t n_steps;
    ho_usage usage;            /* session usage after the last step */
    uint64_t checks, checked_bytes;
    double overrun_us;         /* replayed compute past its duration */
    double hook_us;            /* time inside the hooks, replayed steps */
    double slack_us;           /* waits that ended after their deadline */
    int reconnects;
    int mismatch;

    demo_point *meas;          /* samples of the current step; owned */
    size_t n_meas, cap_meas;
    demo_point *pred;          /* the model's curve; owned */
    size_t n_pred, cap_pred;
    demo_transfer *xfer;       /* the model's copies; owned */
    size_t n_xfer, cap_xfer;
    ho_copy_record *rec;       /* the drawn step's copy log; owned */
    demo_transfer *made;       /* the copies it made, drawn; owned */
    size_t n_made;
    int have_made;
    double pred_end_us;
    int svg_written;
} demo;

/* ------------------------------------------------------------ helpers */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Wait until the monotonic clock reads t_us: sleep until SPIN_US before
 * it, then spin.  Sleeping leaves the CPUs to the copy threads and to the
 * other client; the short spin keeps the wake-up latency of a sleep (tens
 * to hundreds of microseconds on a VM) out of every op's duration.
 * Returns how late it returned (us). */
#define SPIN_US 300.0
static double wait_until(double t_us)
{
    struct timespec ts;
    double wake = t_us - SPIN_US, s = floor(wake / 1e6), now;

    if (now_us() < wake) {
        ts.tv_sec = (time_t)s;
        ts.tv_nsec = (long)((wake - s * 1e6) * 1e3);
        if (ts.tv_nsec >= 1000000000L)
            ts.tv_nsec = 999999999L;
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
               EINTR)
            ;
    }
    while ((now = now_us()) < t_us)
        ;
    return now - t_us;
}

static const char *iec(uint64_t bytes, char *buf, size_t len)
{
    return ho_size_format(bytes, buf, len);
}

/* "3.214 s", "12.3 ms", "812 us" */
static const char *dur(double us, char *buf, size_t len)
{
    double a = fabs(us);
    if (a >= 1e6)
        snprintf(buf, len, "%.3f s", us / 1e6);
    else if (a >= 1e3)
        snprintf(buf, len, "%.1f ms", us / 1e3);
    else
        snprintf(buf, len, "%.0f us", us);
    return buf;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *p;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 256;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / elem)
        return -ENOMEM;
    p = realloc(*arr, ncap * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* Print a failure of `what` with the library's sentence: the client's
 * (ho_last_error) for a client call, the runtime's (ho_runtime_last_error,
 * this thread) for a runtime call. */
static int say_failure(demo *d, const char *what, int rc, int runtime)
{
    char msg[512] = "";
    if (runtime)
        snprintf(msg, sizeof msg, "%s", ho_runtime_last_error());
    if (!msg[0] && d->c)
        ho_last_error(d->c, msg, sizeof msg);
    fprintf(stderr, "%s: %s: %s: %s (%s)%s%s\n", PROG, d->name, what,
            ho_strerror(rc), ho_err_name(rc), msg[0] ? ": " : "", msg);
    return rc;
}

/* A failure of this program itself (no library sentence). */
static int local_failure(demo *d, const char *what, int rc)
{
    fprintf(stderr, "%s: %s: %s: %s\n", PROG, d->name, what,
            ho_strerror(rc));
    return rc;
}

static int report(demo *d, const char *what, int rc)
{
    return say_failure(d, what, rc, 0);
}

static int rreport(demo *d, const char *what, int rc)
{
    return say_failure(d, what, rc, 1);
}

/* ------------------------------------------------------------ content */

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The content of storage `id` after write `v.n` of step `v.step` is the
 * 64-bit word sequence seed + i*K (little-endian bytes; the last word cut
 * to the storage's size): a function of (id, step, version) that also
 * catches shifted, truncated or swapped data. */
static uint64_t content_seed(uint64_t id, ver v)
{
    return mix64(mix64(mix64(id) ^ v.step) ^ (v.n * 0xD6E8FEB86659FD93ull));
}

static void content_fill(uint8_t *p, uint64_t bytes, uint64_t seed)
{
    uint64_t n = bytes / 8, v;

    if (((uintptr_t)p & 7) == 0) {
        uint64_t *w = (uint64_t *)(void *)p;
        for (uint64_t i = 0; i < n; i++)
            w[i] = seed + i * CONTENT_K;
    } else {
        for (uint64_t i = 0; i < n; i++) {
            v = seed + i * CONTENT_K;
            memcpy(p + 8 * i, &v, 8);
        }
    }
    v = seed + n * CONTENT_K;
    memcpy(p + 8 * n, &v, bytes % 8);
}

/* 1 when p holds the content of `seed`; else 0 with the first differing
 * byte's offset in *ret_off. */
static int content_check(const uint8_t *p, uint64_t bytes, uint64_t seed,
                         uint64_t *ret_off)
{
    const uint64_t n = bytes / 8, chunk = 4096;
    uint8_t tail[8];
    uint64_t v;

    for (uint64_t c0 = 0; c0 < n; c0 += chunk) {
        uint64_t c1 = c0 + chunk < n ? c0 + chunk : n, acc = 0;
        if (((uintptr_t)p & 7) == 0) {
            const uint64_t *w = (const uint64_t *)(const void *)p;
            for (uint64_t i = c0; i < c1; i++)
                acc |= w[i] ^ (seed + i * CONTENT_K);
        } else {
            for (uint64_t i = c0; i < c1; i++) {
                memcpy(&v, p + 8 * i, 8);
                acc |= v ^ (seed + i * CONTENT_K);
            }
        }
        if (acc) {
            for (uint64_t i = c0; i < c1; i++) {
                v = seed + i * CONTENT_K;
                for (unsigned b = 0; b < 8; b++)
                    if (p[8 * i + b] != ((const uint8_t *)&v)[b]) {
                        *ret_off = 8 * i + b;
                        return 0;
                    }
            }
        }
    }
    v = seed + n * CONTENT_K;
    memcpy(tail, &v, 8);
    for (unsigned b = 0; b < bytes % 8; b++)
        if (p[8 * n + b] != tail[b]) {
            *ret_off = 8 * n + b;
            return 0;
        }
    return 1;
}

/* ------------------------------------------------------------ the program */

static int build_program(demo *d)
{
    char err[512] = "";
    plan_trace_summary sm;
    int r;

    if (d->o.trace_path)
        r = plan_trace_read_file(d->o.trace_path, &d->pt, err, sizeof err);
    else
        r = plan_gen_train(&d->o.gen, &d->pt, err, sizeof err);
    if (r < 0) {
        fprintf(stderr, "%s: %s: %s: %s\n", PROG, d->name,
                d->o.trace_path ? d->o.trace_path : "trace generator",
                err[0] ? err : ho_strerror(r));
        return r;
    }
    r = plan_trace_summarize(d->pt, &sm);
    if (r < 0)
        return local_failure(d, "summarizing the trace", r);
    d->model_peak = sm.no_offload_peak;

    d->ids = malloc(sizeof *d->ids * (d->pt->n_refs ? d->pt->n_refs : 1));
    d->last_op = malloc(sizeof *d->last_op * (d->pt->n_storages + 1));
    d->cur = calloc(d->pt->n_storages + 1, sizeof *d->cur);
    d->saved = calloc(d->pt->n_storages + 1, sizeof *d->saved);
    if (!d->ids || !d->last_op || !d->cur || !d->saved)
        return local_failure(d, "allocating the program", -ENOMEM);
    for (uint64_t i = 0; i < d->pt->n_refs; i++)
        d->ids[i] = d->pt->storages[d->pt->refs[i]].id;
    d->max_bytes = 0;
    for (uint32_t s = 0; s < d->pt->n_storages; s++) {
        uint32_t a0 = d->pt->acc_start[s], a1 = d->pt->acc_start[s + 1];
        d->last_op[s] = a1 > a0 ? d->pt->acc[a1 - 1].op : PLAN_NONE;
        if (d->pt->storages[s].bytes > d->max_bytes)
            d->max_bytes = d->pt->storages[s].bytes;
    }
    if (d->max_bytes > MAX_STORAGE_BYTES) {
        fprintf(stderr, "%s: %s: a storage of %" PRIu64 " bytes is above "
                "this demo's limit of %llu\n", PROG, d->name, d->max_bytes,
                MAX_STORAGE_BYTES);
        return -E2BIG;
    }
    return 0;
}

static const uint64_t *op_reads(const demo *d, uint32_t op)
{
    return d->ids + d->pt->ops[op].first_ref;
}

static const uint64_t *op_writes(const demo *d, uint32_t op)
{
    return d->ids + d->pt->ops[op].first_ref + d->pt->ops[op].n_reads;
}

static void bump(ver *v, uint64_t step)
{
    v->n = v->step == step ? v->n + 1 : 1;
    v->step = step;
}

/* What the word at byte offset `off` (8-aligned) of a storage holds:
 * some storage's content of some (step, write), zeros, or unknown. */
static void describe_found(const demo *d, const uint8_t *p, uint64_t bytes,
                           uint64_t off, uint64_t step, char *buf,
                           size_t len)
{
    uint64_t w = 0, i = off / 8, seed;
    int zero = 1;

    if (off + 8 > bytes) {
        snprintf(buf, len, "a partial last word");
        return;
    }
    memcpy(&w, p + off, 8);
    for (uint64_t k = off; k < off + 8 && k < bytes; k++)
        zero &= p[k] == 0;
    if (zero) {
        snprintf(buf, len, "zeros");
        return;
    }
    seed = w - i * CONTENT_K;
    for (uint32_t s = 0; s < d->pt->n_storages; s++)
        for (uint64_t st = 0; st <= step; st++)
            for (uint64_t n = 0; n <= 16; n++) {
                ver v = {st, n};
                if ((st == 0) != (n == 0))
                    continue;
                if (content_seed(d->pt->storages[s].id, v) == seed) {
                    snprintf(buf, len, "the content of storage %" PRIu64
                             " step %" PRIu64 " write %" PRIu64,
                             d->pt->storages[s].id, st, n);
                    return;
                }
            }
    snprintf(buf, len, "unknown bytes (0x%016" PRIx64 ")", w);
}

static int mismatch(demo *d, uint64_t step, uint32_t op, uint32_t s,
                    const uint8_t *p, uint64_t off)
{
    char found[160];

    describe_found(d, p, d->pt->storages[s].bytes, off & ~7ull, step, found,
                   sizeof found);
    fprintf(stderr, "%s: %s: DATA MISMATCH in step %" PRIu64 ", op %u (%s): "
            "storage %" PRIu64 " (%" PRIu64 " bytes, %s, initial %s) differs "
            "at byte %" PRIu64 " from the content of step %" PRIu64 " write "
            "%" PRIu64 "; it holds %s\n", PROG, d->name, step, op,
            plan_op_name(d->pt, op), d->pt->storages[s].id,
            d->pt->storages[s].bytes,
            plan_kind_name((plan_kind)d->pt->storages[s].kind),
            plan_initial_name((plan_initial)d->pt->storages[s].initial), off,
            d->cur[s].step, d->cur[s].n, found);
    d->mismatch = 1;
    return HO_E_INTERNAL;
}

/* Step 1: no offload.  Every storage lives in process memory; device bytes
 * are counted as a framework without offload holds them (from the step's
 * start or the first access to after the last, retained ones to the end;
 * `initial: host` ones only while used).  Records the trace. */
static int traced_step(demo *d)
{
    const plan_trace *t = d->pt;
    uint8_t **buf = calloc(t->n_storages + 1, sizeof *buf);
    uint8_t *on_dev = calloc(t->n_storages + 1, 1);
    ho_link link = {t->link.h2d_gbps, t->link.d2h_gbps, t->link.latency_us,
                    t->link.duplex};
    uint64_t used = 0, peak = 0, off;
    double t_step;
    int r = 0;

    if (!buf || !on_dev) {
        r = local_failure(d, "step 1", -ENOMEM);
        goto done;
    }
    r = ho_trace_new(t->name, &link, &d->ht);
    if (r < 0) {
        rreport(d, "ho_trace_new", r);
        goto done;
    }
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *ps = &t->storages[s];
        unsigned flags = (ps->retained ? HO_STORAGE_RETAINED : 0u) |
                         (ps->pinned ? HO_STORAGE_PINNED : 0u) |
                         (ps->movable ? HO_STORAGE_MOVABLE : 0u);
        r = ho_trace_add_storage(d->ht, ps->id, ps->bytes,
                                 (ho_storage_kind)ps->kind,
                                 (ho_initial)ps->initial, flags);
        if (r < 0) {
            rreport(d, "ho_trace_add_storage", r);
            goto done;
        }
        if (ps->initial != PLAN_INIT_NONE) {
            buf[s] = aligned_alloc(64, (ps->bytes + 63) & ~63ull);
            if (!buf[s]) {
                r = local_failure(d, "step 1: allocating", -ENOMEM);
                goto done;
            }
            content_fill(buf[s], ps->bytes, content_seed(ps->id, d->cur[s]));
            if (ps->initial == PLAN_INIT_DEVICE) {
                on_dev[s] = 1;
                used += ps->bytes;
            }
        }
    }
    peak = used;
    t_step = now_us();
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *op = &t->ops[i];
        const uint32_t *refs = t->refs + op->first_ref;
        double t0 = now_us();

        for (uint32_t k = 0; k < op->n_reads + op->n_writes; k++) {
            uint32_t s = refs[k];
            if (!buf[s]) {
                uint64_t b = t->storages[s].bytes;
                buf[s] = aligned_alloc(64, (b + 63) & ~63ull);
                if (!buf[s]) {
                    r = local_failure(d, "step 1: allocating", -ENOMEM);
                    goto done;
                }
            }
            if (!on_dev[s]) {
                on_dev[s] = 1;
                used += t->storages[s].bytes;
            }
        }
        if (used > peak)
            peak = used;
        for (uint32_t k = 0; k < op->n_reads; k++) {
            uint32_t s = refs[k];
            if (!content_check(buf[s], t->storages[s].bytes,
                               content_seed(t->storages[s].id, d->cur[s]),
                               &off)) {
                r = mismatch(d, 1, i, s, buf[s], off);
                goto done;
            }
            d->checks++;
            d->checked_bytes += t->storages[s].bytes;
        }
        for (uint32_t k = op->n_reads; k < op->n_reads + op->n_writes; k++) {
            uint32_t s = refs[k];
            bump(&d->cur[s], 1);
            content_fill(buf[s], t->storages[s].bytes,
                         content_seed(t->storages[s].id, d->cur[s]));
        }
        r = ho_trace_add_op(d->ht, plan_op_name(t, i), op->duration_us,
                            op_reads(d, i), op->n_reads, op_writes(d, i),
                            op->n_writes);
        if (r < 0) {
            rreport(d, "ho_trace_add_op", r);
            goto done;
        }
        wait_until(t0 + op->duration_us);
        /* implicit frees after the last access */
        for (uint32_t k = 0; k < op->n_reads + op->n_writes; k++) {
            uint32_t s = refs[k];
            const plan_storage *ps = &t->storages[s];
            if (d->last_op[s] != i || !on_dev[s])
                continue;
            if (ps->retained && ps->initial != PLAN_INIT_HOST)
                continue;
            on_dev[s] = 0;
            used -= ps->bytes;
            if (!ps->retained) {
                free(buf[s]);
                buf[s] = NULL;
            }
        }
    }
    d->step1_wall_us = now_us() - t_step;
    d->step1_peak = peak;
    if (d->o.save_trace && (r = ho_trace_save(d->ht, d->o.save_trace)) < 0)
        rreport(d, "ho_trace_save", r);
done:
    if (buf)
        for (uint32_t s = 0; s < t->n_storages; s++)
            free(buf[s]);
    free(buf);
    free(on_dev);
    return r;
}

/* ------------------------------------------------------------ prediction */

static void obs_bytes(void *ctx, double t_us, uint64_t bytes)
{
    demo *d = ctx;
    if (d->n_pred > 0 && d->pred[d->n_pred - 1].t_us == t_us) {
        d->pred[d->n_pred - 1].bytes = bytes;
        return;
    }
    if (grow((void **)&d->pred, &d->cap_pred, d->n_pred + 1,
             sizeof *d->pred) == 0)
        d->pred[d->n_pred++] = (demo_point){t_us, bytes};
}

static void obs_transfer(void *ctx, int dir, uint32_t storage,
                         double start_us, double end_us, uint64_t bytes)
{
    demo *d = ctx;
    (void)storage;
    if (grow((void **)&d->xfer, &d->cap_xfer, d->n_xfer + 1,
             sizeof *d->xfer) == 0)
        d->xfer[d->n_xfer++] =
            (demo_transfer){start_us, end_us, bytes, dir, 0.0, start_us, 0.0};
}

/* The model's device curve and copies for the plan: ho_plan_save, read
 * back with the planner library, plan_simulate with an observer. */
static int predict(demo *d)
{
    char err[512] = "", tpath[4096];
    plan_schedule *s = NULL;
    plan_metrics m;
    plan_violation v;
    plan_sim_observer obs = {d, obs_bytes, obs_transfer, NULL};
    const char *tmp = getenv("TMPDIR");
    int fd, r;

    snprintf(tpath, sizeof tpath, "%s/ho-demo-schedule-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    fd = mkstemp(tpath);
    if (fd < 0)
        return local_failure(d, "temporary schedule file", -errno);
    close(fd);
    r = ho_plan_save(d->plan, tpath);
    if (r < 0) {
        rreport(d, "ho_plan_save", r);
        goto done;
    }
    r = plan_schedule_read_file(tpath, &s, err, sizeof err);
    if (r == 0)
        r = plan_schedule_bind(s, d->pt, err, sizeof err);
    if (r < 0) {
        fprintf(stderr, "%s: %s: reading the plan back: %s\n", PROG,
                d->name, err[0] ? err : ho_strerror(r));
        goto done;
    }
    d->n_pred = d->n_xfer = 0;
    obs_bytes(d, 0.0, 0);
    r = plan_simulate(d->pt, s, &m, &v, &obs);
    if (r < 0) {
        fprintf(stderr, "%s: %s: the plan fails the execution model: %s\n",
                PROG, d->name, v.message);
        goto done;
    }
    d->pred_end_us = m.step_time_us;
done:
    plan_schedule_free(s);
    unlink(tpath);
    return r;
}

/* ------------------------------------------------------------ session */

/* Give every storage that holds data at the start of a step (initial
 * device or host) the content the last completed step left in it. */
static int upload(demo *d)
{
    const plan_trace *t = d->pt;
    int r;

    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *ps = &t->storages[s];
        uint64_t seed = content_seed(ps->id, d->cur[s]);

        if (ps->initial == PLAN_INIT_HOST) {
            content_fill(d->scratch, ps->bytes, seed);
            r = ho_storage_write_host(d->r, ps->id, d->scratch, ps->bytes);
            if (r < 0)
                return rreport(d, "ho_storage_write_host", r);
        } else if (ps->initial == PLAN_INIT_DEVICE) {
            void *p = ho_storage_ptr(d->r, ps->id);
            if (!p) {
                fprintf(stderr, "%s: %s: storage %" PRIu64 " (initial: "
                        "device) is not on device after ho_replay_new\n",
                        PROG, d->name, ps->id);
                return HO_E_INTERNAL;
            }
            if (d->direct) {
                content_fill(p, ps->bytes, seed);
            } else {
                content_fill(d->scratch, ps->bytes, seed);
                r = ho_device_write(d->dev, p, d->scratch, ps->bytes);
                if (r < 0)
                    return rreport(d, "ho_device_write", r);
            }
        }
    }
    return 0;
}

static void session_close(demo *d)
{
    d->r = ho_replay_free(d->r);
    d->plan = ho_plan_free(d->plan);
    d->c = ho_close(d->c);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* A failure that a daemon (re)starting explains: retry it. */
static int is_transient(int rc)
{
    return rc == -ENOENT || rc == -ECONNREFUSED || rc == -ECONNRESET ||
           rc == -EPIPE || rc == HO_E_DISCONNECTED ||
           rc == HO_E_SHUTTING_DOWN;
}

/* Connect, register, plan, create the replay and upload the state; quiet
 * about transient failures when `quiet`. */
static int session_try(demo *d, int quiet)
{
    ho_replay_opts ro = {d->o.ddr_limit, d->o.check_ops};
    char cname[64];
    int r;

    snprintf(cname, sizeof cname, "%s-%d", PROG, d->o.device);
    r = ho_connect(d->o.socket, cname, &d->c);
    if (r < 0) {
        if (!quiet || !is_transient(r))
            fprintf(stderr, "%s: %s: cannot connect to hyperoffloadd: %s "
                    "(%s)\n", PROG, d->name, ho_strerror(r), ho_err_name(r));
        return r;
    }
    r = ho_set_node_options(d->c, d->o.weight, d->o.max_slowdown, d->o.sync);
    if (r == 0 && d->o.max_slowdown > 0)
        r = ho_set_admission_trace(d->c, d->ht);
    if (r == 0)
        r = ho_register(d->c, d->o.job, d->o.device, d->budget);
    if (r < 0)
        return quiet && is_transient(r) ? r : report(d, "ho_register", r);
    d->session_id = ho_session_id(d->c);
    r = ho_plan_request(d->c, d->ht, 0, d->o.planner, &d->plan);
    if (r < 0)
        return quiet && is_transient(r) ? r
                                        : rreport(d, "ho_plan_request", r);
    ho_plan_get_info(d->plan, &d->info);
    r = ho_replay_new(d->c, d->dev, d->ht, d->plan, &ro, &d->r);
    if (r < 0)
        return quiet && is_transient(r) ? r : rreport(d, "ho_replay_new", r);
    return upload(d);
}

/* session_try, retrying transient failures for `retry_s` seconds. */
static int session_open(demo *d, double retry_s)
{
    double deadline = now_us() + retry_s * 1e6;
    int r;

    for (;;) {
        int last = now_us() >= deadline;
        r = session_try(d, !last);
        if (r == 0 || last || !is_transient(r))
            return r;
        session_close(d);
        sleep_ms(100);
    }
}

/* ------------------------------------------------------------ replay */

static void sample(demo *d, double t_step)
{
    if (d->n_meas < d->cap_meas)
        d->meas[d->n_meas++] =
            (demo_point){now_us() - t_step, ho_device_used(d->dev)};
}

/* Verify what op i reads and fill what it writes, on device. */
static int touch(demo *d, uint64_t step, uint32_t i)
{
    const plan_trace *t = d->pt;
    const plan_op *op = &t->ops[i];
    const uint32_t *refs = t->refs + op->first_ref;
    uint64_t off;
    int r;

    for (uint32_t k = 0; k < op->n_reads + op->n_writes; k++) {
        uint32_t s = refs[k];
        const plan_storage *ps = &t->storages[s];
        uint8_t *p = ho_storage_ptr(d->r, ps->id);
        uint64_t seed;

        if (!p) {
            fprintf(stderr, "%s: %s: step %" PRIu64 ", op %u (%s): storage "
                    "%" PRIu64 " is not on device after ho_op_begin\n", PROG,
                    d->name, step, i, plan_op_name(t, i), ps->id);
            return HO_E_INTERNAL;
        }
        if (k < op->n_reads) {
            const uint8_t *q = p;
            seed = content_seed(ps->id, d->cur[s]);
            if (!d->direct) {
                r = ho_device_read(d->dev, d->scratch, p, ps->bytes);
                if (r < 0)
                    return rreport(d, "ho_device_read", r);
                q = d->scratch;
            }
            if (!content_check(q, ps->bytes, seed, &off))
                return mismatch(d, step, i, s, q, off);
            d->checks++;
            d->checked_bytes += ps->bytes;
        } else {
            bump(&d->cur[s], step);
            seed = content_seed(ps->id, d->cur[s]);
            if (d->direct) {
                content_fill(p, ps->bytes, seed);
            } else {
                content_fill(d->scratch, ps->bytes, seed);
                r = ho_device_write(d->dev, p, d->scratch, ps->bytes);
                if (r < 0)
                    return rreport(d, "ho_device_write", r);
            }
        }
    }
    return 0;
}

static int is_lost(int rc)
{
    return rc == HO_E_DISCONNECTED || rc == HO_E_SHUTTING_DOWN;
}

/* One replayed step.  *ret_where names the failing call. */
static int replay_step(demo *d, uint64_t step, const char **ret_where)
{
    const plan_trace *t = d->pt;
    double t_step, th, hook = 0, late;
    ho_step_info si;
    int r;

    d->n_meas = 0;
    *ret_where = "ho_step_begin";
    r = ho_step_begin(d->r);
    if (r < 0)
        return r;
    t_step = now_us();
    sample(d, t_step);
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *op = &t->ops[i];
        double t0;

        if (d->o.pause_step == step && d->o.pause_op == i) {
            d->o.pause_step = 0; /* once: not again when a step is redone */
            printf("%s: step %" PRIu64 ": pausing before op %u (SIGSTOP)\n",
                   d->name, step, i);
            fflush(stdout);
            raise(SIGSTOP);
            printf("%s: step %" PRIu64 ": resumed\n", d->name, step);
        }
        *ret_where = "ho_op_begin";
        sample(d, t_step);
        th = now_us();
        r = ho_op_begin(d->r, i);
        if (r < 0)
            return r;
        if (d->o.check_ops) {
            *ret_where = "ho_op_check";
            r = ho_op_check(d->r, i, op_reads(d, i), op->n_reads,
                            op_writes(d, i), op->n_writes);
            if (r < 0)
                return r;
        }
        t0 = now_us();
        hook += t0 - th;
        sample(d, t_step);
        *ret_where = "the op's data";
        r = touch(d, step, i);
        if (r < 0)
            return r;
        late = now_us() - (t0 + op->duration_us);
        if (late > 0)
            d->overrun_us += late;
        else
            d->slack_us += wait_until(t0 + op->duration_us);
        *ret_where = "ho_op_end";
        th = now_us();
        r = ho_op_end(d->r, i);
        if (r < 0)
            return r;
        hook += now_us() - th;
        sample(d, t_step);
    }
    *ret_where = "ho_step_end";
    th = now_us();
    r = ho_step_end(d->r, &si);
    if (r < 0)
        return r;
    hook += now_us() - th;
    d->hook_us += hook;
    sample(d, t_step);
    *ret_where = "ho_step_stats";
    r = ho_step_stats(d->r, 0, &si);
    if (r < 0)
        return r;
    si.step = step; /* the job's numbering (the replay's restarts) */
    d->steps[d->n_steps++] = si;
    /* One round trip per step: the session's tier usage, and a daemon
     * that went away is noticed here at the latest. */
    *ret_where = "ho_stats";
    return ho_stats(d->c, NULL, 0, NULL, &d->usage);
}

/* The replay records the copies it makes in the drawn step (its copy
 * log): room for every copy of the plan (a copy is one of its actions). */
static int log_on(demo *d)
{
    uint64_t n = d->info.actions + 16;
    int r = ho_replay_record_copies(d->r, n > HO_COPY_LOG_MAX
                                              ? HO_COPY_LOG_MAX
                                              : (uint32_t)n);
    return r < 0 ? rreport(d, "ho_replay_record_copies", r) : 0;
}

/* The copies the drawn step made, from the copy log, as the picture's
 * bars; then the log is turned off.  Times are from the step's
 * ho_step_begin, the measured curve's from its return (a microsecond
 * later at most). */
static int log_collect(demo *d)
{
    size_t n = 0;
    int r = ho_step_copies(d->r, NULL, 0, &n);

    d->have_made = 0;
    d->n_made = 0;
    if (r < 0)
        return rreport(d, "ho_step_copies", r);
    free(d->rec);
    free(d->made);
    d->rec = calloc(n ? n : 1, sizeof *d->rec);
    d->made = calloc(n ? n : 1, sizeof *d->made);
    if (!d->rec || !d->made)
        return local_failure(d, "allocating the copy log", -ENOMEM);
    r = ho_step_copies(d->r, d->rec, n, &n);
    if (r < 0)
        return rreport(d, "ho_step_copies", r);
    for (size_t i = 0; i < n; i++) {
        const ho_copy_record *c = &d->rec[i];
        if (c->end_ns < 0)
            continue; /* not reported: the copy failed */
        d->made[d->n_made++] = (demo_transfer){
            (double)c->start_ns / 1e3, (double)c->end_ns / 1e3, c->bytes,
            c->dir == HO_COPY_H2D ? 0 : 1, (double)c->wait_ns / 1e3,
            (double)c->issue_ns / 1e3, (double)c->stall_ns / 1e3};
    }
    d->have_made = 1;
    r = ho_replay_record_copies(d->r, 0);
    return r < 0 ? rreport(d, "ho_replay_record_copies", r) : 0;
}

static int write_picture(demo *d, uint64_t step)
{
    demo_svg_data sd;
    const ho_step_info *si = &d->steps[d->n_steps - 1];
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    int r;

    memset(&sd, 0, sizeof sd);
    snprintf(sd.name, sizeof sd.name, "%s", d->name);
    sd.flash_in = si->flash_in_bytes;
    sd.flash_out = si->flash_out_bytes;
    snprintf(sd.title, sizeof sd.title, "%s (device %d): device memory over "
             "step %" PRIu64 " of %s", d->name, d->o.device, step,
             d->pt->name);
    snprintf(sd.subtitle, sizeof sd.subtitle, "budget %s, no-offload peak %s,"
             " measured peak %s; %s plan, link %.1f GB/s per direction; "
             "H2D %s, D2H %s", iec(d->budget, b1, sizeof b1),
             iec(d->model_peak, b2, sizeof b2),
             iec(si->peak_device_bytes, b3, sizeof b3), d->info.planner,
             d->pt->link.h2d_gbps, iec(si->h2d_bytes, b4, sizeof b4),
             iec(si->d2h_bytes, b5, sizeof b5));
    sd.budget = d->budget;
    sd.no_offload_peak = d->model_peak;
    sd.measured = d->meas;
    sd.n_measured = d->n_meas;
    sd.measured_end_us = d->n_meas ? d->meas[d->n_meas - 1].t_us : 0;
    sd.predicted = d->pred;
    sd.n_predicted = d->n_pred;
    sd.predicted_end_us = d->pred_end_us;
    sd.transfers = d->xfer;
    sd.n_transfers = d->n_xfer;
    r = log_collect(d);
    if (r < 0)
        return r;
    sd.copies = d->made;
    sd.n_copies = d->n_made;
    sd.have_copies = d->have_made;
    r = d->o.svg_path ? demo_svg_write(d->o.svg_path, &sd) : 0;
    if (r < 0) {
        fprintf(stderr, "%s: %s: writing %s: %s\n", PROG, d->name,
                d->o.svg_path, strerror(-r));
        return r;
    }
    r = d->o.picture_path ? demo_svg_save(d->o.picture_path, &sd) : 0;
    if (r < 0) {
        fprintf(stderr, "%s: %s: writing %s: %s\n", PROG, d->name,
                d->o.picture_path, strerror(-r));
        return r;
    }
    d->svg_written = 1;
    return 0;
}

static void print_step_line(const demo *d, const ho_step_info *si)
{
    char a[32], b[32], c[32], e[32], f[32], g[32], h[32], k[32];
    printf("%s: step %" PRIu64 ": %s, exposed %s, stall %s, H2D %s, D2H %s, "
           "flash in %s out %s, peak %s: verified\n", d->name, si->step,
           dur(si->wall_us, a, sizeof a), dur(si->exposed_us, b, sizeof b),
           dur(si->stall_us, c, sizeof c), iec(si->h2d_bytes, e, sizeof e),
           iec(si->d2h_bytes, f, sizeof f),
           iec(si->flash_in_bytes, g, sizeof g),
           iec(si->flash_out_bytes, h, sizeof h),
           iec(si->peak_device_bytes, k, sizeof k));
}

static int run(demo *d)
{
    uint64_t last = d->o.steps + 1;
    int r;

    for (uint64_t step = 2; step <= last; step++) {
        const char *where = "";
        uint32_t done_before = d->n_steps;
        int drawn = (d->o.svg_path || d->o.picture_path) &&
                    step == (d->o.svg_step ? d->o.svg_step : last);

        memcpy(d->saved, d->cur, sizeof *d->cur * d->pt->n_storages);
        if (drawn) {
            r = log_on(d);
            if (r < 0)
                return r;
        }
        r = replay_step(d, step, &where);
        if (d->n_steps > done_before)
            print_step_line(d, &d->steps[d->n_steps - 1]);
        if (r == 0) {
            if (drawn) {
                r = write_picture(d, step);
                if (r < 0)
                    return r;
            }
            continue;
        }
        if (d->mismatch || !is_lost(r) || d->o.reconnect_s <= 0)
            return d->mismatch ? r : rreport(d, where, r);
        /* The daemon went away.  A step that completed keeps its data;
         * one cut short starts again from the state it started with. */
        {
            char msg[512] = "";
            int completed = d->n_steps > done_before;
            snprintf(msg, sizeof msg, "%s", ho_runtime_last_error());
            if (!msg[0] || strcmp(where, "ho_stats") == 0)
                ho_last_error(d->c, msg, sizeof msg);
            printf("%s: step %" PRIu64 ": %s: %s (%s)%s%s; reconnecting\n",
                   d->name, step, where, ho_strerror(r), ho_err_name(r),
                   msg[0] ? ": " : "", msg);
            if (!completed) {
                memcpy(d->cur, d->saved, sizeof *d->cur * d->pt->n_storages);
                step--;
            }
        }
        session_close(d);
        if (ho_device_used(d->dev) != 0) {
            fprintf(stderr, "%s: %s: %" PRIu64 " device bytes still "
                    "allocated after ho_replay_free\n", PROG, d->name,
                    ho_device_used(d->dev));
            return HO_E_INTERNAL;
        }
        r = session_open(d, d->o.reconnect_s);
        if (r < 0)
            return r;
        d->reconnects++;
        printf("%s: reconnected: session %" PRIu64 ", re-planned (%s, %.1f "
               "ms), retained state restored from the last completed step\n",
               d->name, d->session_id, d->info.planner, d->info.planning_ms);
        if (d->o.svg_path || d->o.picture_path) {
            r = predict(d);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ report */

static void print_report(demo *d)
{
    char a[32], b[32], c[32], e[32];
    uint64_t peak = 0, h2d = 0, d2h = 0, fin = 0, fout = 0;
    double wall = 0, exposed = 0, stall = 0;
    uint32_t n = d->n_steps;

    printf("\n%s: per step (step 1 traced without offload; steps 2..%u "
           "replayed with the plan)\n", d->name, d->o.steps + 1);
    printf("  %4s %10s %10s %10s %10s %10s %10s %10s %10s\n", "step", "wall",
           "exposed", "stall", "H2D", "D2H", "flash in", "flash out",
           "peak");
    printf("  %4d %10s %10s %10s %10s %10s %10s %10s %10s\n", 1,
           dur(d->step1_wall_us, a, sizeof a), "-", "-", "-", "-", "-", "-",
           iec(d->step1_peak, b, sizeof b));
    for (uint32_t i = 0; i < n; i++) {
        const ho_step_info *si = &d->steps[i];
        char f1[32], f2[32], f3[32], f4[32], f5[32];
        printf("  %4" PRIu64 " %10s %10s %10s %10s %10s %10s %10s %10s\n",
               si->step, dur(si->wall_us, a, sizeof a),
               dur(si->exposed_us, b, sizeof b),
               dur(si->stall_us, c, sizeof c),
               iec(si->h2d_bytes, f1, sizeof f1),
               iec(si->d2h_bytes, f2, sizeof f2),
               iec(si->flash_in_bytes, f3, sizeof f3),
               iec(si->flash_out_bytes, f4, sizeof f4),
               iec(si->peak_device_bytes, f5, sizeof f5));
        if (si->peak_device_bytes > peak)
            peak = si->peak_device_bytes;
        h2d += si->h2d_bytes;
        d2h += si->d2h_bytes;
        fin += si->flash_in_bytes;
        fout += si->flash_out_bytes;
        wall += si->wall_us;
        exposed += si->exposed_us;
        stall += si->stall_us;
    }
    if (n == 0)
        n = 1;
    printf("\n%s: summary (device %d, job %s, session %" PRIu64 ", %s "
           "backend)\n", d->name, d->o.device, d->o.job, d->session_id,
           ho_device_backend(d->dev));
    printf("  %-22s %s (%u layers, hidden %u, seq %u x %u, %u micro-batches;"
           " %u ops, %u storages)\n", "trace", d->pt->name,
           d->o.gen.model.layers, d->o.gen.model.hidden, d->o.gen.seq,
           d->o.gen.micro_batch, d->o.gen.n_micro, d->pt->n_ops,
           d->pt->n_storages);
    if (d->copy_gbps > 0)
        printf("  %-22s %.2f GB/s per direction (host backend copies "
               "measured %.2f GB/s, x %.2f)\n", "link in the trace",
               d->pt->link.h2d_gbps, d->copy_gbps, d->o.link_share);
    else
        printf("  %-22s %.2f GB/s per direction\n", "link in the trace",
               d->pt->link.h2d_gbps);
    printf("  %-22s %s (HBM grant; device capacity)\n", "budget",
           iec(d->budget, a, sizeof a));
    printf("  %-22s %s (model; step 1 measured %s)\n", "no-offload peak",
           iec(d->model_peak, a, sizeof a), iec(d->step1_peak, b, sizeof b));
    printf("  %-22s %s (max of replayed steps; model %s)\n", "measured peak",
           iec(peak, a, sizeof a), iec(d->info.peak_device_bytes, b, sizeof b));
    printf("  %-22s %s / %s per step (model %s / %s)\n", "bytes H2D / D2H",
           iec(h2d / n, a, sizeof a), iec(d2h / n, b, sizeof b),
           iec(d->info.h2d_bytes, c, sizeof c),
           iec(d->info.d2h_bytes, e, sizeof e));
    printf("  %-22s %s / %s per step (%s / %s in all)\n",
           "bytes to / from flash", iec(fout / n, a, sizeof a),
           iec(fin / n, b, sizeof b), iec(fout, c, sizeof c),
           iec(fin, e, sizeof e));
    printf("  %-22s DDR %s, flash %s (session usage after the last step)\n",
           "host copies", iec(d->usage.ddr_bytes, a, sizeof a),
           iec(d->usage.flash_bytes, b, sizeof b));
    printf("  %-22s %s per step (model %s); stall %s per step\n",
           "exposed", dur(exposed / n, a, sizeof a),
           dur(d->info.exposed_us, b, sizeof b), dur(stall / n, c, sizeof c));
    printf("  %-22s %s per step (compute %s; model %s)\n", "step time",
           dur(wall / n, a, sizeof a), dur(d->info.compute_us, b, sizeof b),
           dur(d->info.step_time_us, c, sizeof c));
    printf("  %-22s %.2f ms (%s, %" PRIu64 " actions%s)\n", "planning time",
           d->info.planning_ms, d->info.planner, d->info.actions,
           d->info.cached ? ", from the daemon's cache" : "");
    {
        double over = (d->hook_us - exposed) / n;
        if (over < 0)
            over = 0;
        printf("  %-22s %s per step in the hooks besides the waits (%.0f us "
               "per op)\n", "runtime overhead", dur(over, a, sizeof a),
               over / (d->pt->n_ops ? d->pt->n_ops : 1));
    }
    printf("  %-22s %s per step (wake-ups after an op's end: this "
           "machine's scheduling)\n", "late wake-ups",
           dur(d->slack_us / n, a, sizeof a));
    if (d->overrun_us > 1000)
        printf("  %-22s %s per step (filling and checking took longer than "
               "some ops' durations)\n", "compute overrun",
               dur(d->overrun_us / n, a, sizeof a));
    if (d->reconnects)
        printf("  %-22s %d (daemon lost; re-planned, state restored)\n",
               "reconnects", d->reconnects);
    printf("  %-22s %" PRIu64 " reads of %s checked byte for byte over %u "
           "steps\n", "data verified", d->checks,
           iec(d->checked_bytes, a, sizeof a), d->n_steps + 1);
    if (d->svg_written && d->o.svg_path)
        printf("  %-22s %s\n", "picture", d->o.svg_path);
    if (d->svg_written && d->o.picture_path)
        printf("  %-22s %s\n", "picture data", d->o.picture_path);
    printf("%s: result device=%d budget=%" PRIu64 " no_offload_peak=%" PRIu64
           " peak=%" PRIu64 " h2d=%" PRIu64 " d2h=%" PRIu64 " flash_out=%"
           PRIu64 " flash_in=%" PRIu64 " steps=%u checks=%" PRIu64
           " reconnects=%d verified=1\n", PROG, d->o.device, d->budget,
           d->model_peak, peak, h2d, d2h, fout, fin, d->n_steps + 1,
           d->checks, d->reconnects);
}

/* ------------------------------------------------------------ setup */

/* Bytes per second of a synchronous host-backend copy (the memcpy the
 * copy threads do), best of five, in GB/s; 0 on failure. */
static double measure_copy(demo *d)
{
    uint64_t len = 64ull << 20;
    void *dst = NULL;
    uint8_t *src;
    double best = 0;

    if (len > d->budget / 2)
        len = d->budget / 2;
    len &= ~((64ull << 10) - 1);
    if (len == 0)
        return 0;
    src = malloc(len);
    if (!src)
        return 0;
    memset(src, 0x5a, len);
    if (ho_device_alloc(d->dev, len, &dst) == 0) {
        for (int i = 0; i < 6; i++) {
            double t0 = now_us(), gbps;
            if (ho_device_write(d->dev, dst, src, len) < 0)
                break;
            gbps = (double)len / ((now_us() - t0) * 1e3);
            if (i > 0 && gbps > best)
                best = gbps;
        }
        ho_device_free(d->dev, dst);
    }
    free(src);
    return best;
}

static int setup(demo *d)
{
    char a[32], b[32];
    int r;

    r = build_program(d);
    if (r < 0)
        return r;
    if (d->o.budget)
        d->budget = d->o.budget;
    else
        d->budget = (uint64_t)ceil((double)d->model_peak * d->o.budget_ratio /
                                   1048576.0) * 1048576ull;
    if (d->budget == 0) {
        fprintf(stderr, "%s: %s: the budget is 0\n", PROG, d->name);
        return -EINVAL;
    }
    r = ho_device_open(d->o.backend, d->o.device, d->budget, &d->dev);
    if (r < 0) {
        const char *why = ho_device_unavailable_reason(d->o.backend);
        fprintf(stderr, "%s: %s: ho_device_open(%s): %s%s%s\n", PROG,
                d->name, d->o.backend, ho_strerror(r), why ? ": " : "",
                why ? why : "");
        return r;
    }
    d->direct = strcmp(ho_device_backend(d->dev), "host") == 0;
    /* initial content and, for a device that is not host-addressable,
     * every fill and check go through this buffer */
    d->scratch = aligned_alloc(64, (d->max_bytes + 63) & ~63ull);
    if (!d->scratch)
        return local_failure(d, "scratch buffer", -ENOMEM);
    if (!d->o.trace_path) {
        if (d->o.link_gbps > 0) {
            d->pt->link.h2d_gbps = d->pt->link.d2h_gbps = d->o.link_gbps;
        } else {
            d->copy_gbps = measure_copy(d);
            if (d->copy_gbps <= 0) {
                fprintf(stderr, "%s: %s: cannot measure the host backend's "
                        "copy bandwidth\n", PROG, d->name);
                return HO_E_DEVICE;
            }
            d->pt->link.h2d_gbps = d->pt->link.d2h_gbps =
                floor(d->copy_gbps * d->o.link_share * 10.0) / 10.0;
            if (d->pt->link.h2d_gbps < 0.1)
                d->pt->link.h2d_gbps = d->pt->link.d2h_gbps = 0.1;
        }
        d->pt->link.latency_us = d->o.latency_us;
    }
    printf("%s: %s, %u ops, %u storages; budget %s, no-offload peak %s; "
           "link %.1f GB/s\n", d->name, d->pt->name, d->pt->n_ops,
           d->pt->n_storages, iec(d->budget, a, sizeof a),
           iec(d->model_peak, b, sizeof b), d->pt->link.h2d_gbps);
    return 0;
}

/* ------------------------------------------------------------ main */

static const char usage_text[] =
"usage: " PROG " [OPTIONS]\n"
"  --socket PATH        daemon socket (default: the library's rule)\n"
"  --device D           emulated device index (default 0)\n"
"  --job NAME           job name (default demo)\n"
"  --budget SIZE        HBM budget (default: --budget-ratio x no-offload "
"peak)\n"
"  --budget-ratio R     (default 0.5)\n"
"  --steps N            replayed steps after the traced one (default 4)\n"
"  --trace FILE         load this trace instead of generating one\n"
"  --layers N --hidden H --heads A --kv-heads K --ffn F --vocab V\n"
"  --seq S --mbs B --micro N     model and batch (default: 8 layers, hidden "
"256,\n"
"                       4 heads, ffn 768, vocab 4096, seq 4096, 1 x 2)\n"
"  --tflops T --hbm-gbps G       device profile of the op durations "
"(default 2, 4)\n"
"  --link-gbps G        link in the trace (default: measured copy rate x "
"--link-share)\n"
"  --link-share F       (default 0.5)\n"
"  --latency-us U       link latency (default 20)\n"
"  --params device|host --optimizer device|host   (default host, host)\n"
"  --planner NAME       (default: the daemon's)\n"
"  --ddr-limit SIZE     staged host copies allowed in DDR (default: the "
"daemon decides)\n"
"  --backend host|cuda  device backend (default host)\n"
"  --svg PATH           write the picture there\n"
"  --picture-data PATH  save the drawn step and every step's figures for\n"
"                       ho-demo-picture (the job's picture)\n"
"  --svg-step N         job step drawn (default: the last)\n"
"  --reconnect SECONDS  on a lost daemon, reconnect for that long and "
"continue\n"
"  --pause-at STEP:OP   stop (SIGSTOP) before op OP of job step STEP\n"
"  --no-op-check        skip ho_op_check\n"
"  --weight W --max-slowdown X --sync   node arbitration (docs/node.md)\n"
"  --save-trace PATH    save the traced step there (JSON)\n"
"  --measure-link       print the host backend's copy rate (GB/s) and exit\n";

static int parse_double(const char *s, double lo, double hi, double *ret)
{
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return -EINVAL;
    *ret = v;
    return 0;
}

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *ret)
{
    char *end;
    unsigned long long v;
    errno = 0;
    if (*s == '-' || *s == '+')
        return -EINVAL;
    v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -EINVAL;
    *ret = (uint32_t)v;
    return 0;
}

static int parse_args(int argc, char **argv, demo_opts *o)
{
    enum { O_SOCKET = 256, O_DEVICE, O_JOB, O_BUDGET, O_RATIO, O_STEPS,
           O_TRACE, O_LAYERS, O_HIDDEN, O_HEADS, O_KV, O_FFN, O_VOCAB,
           O_SEQ, O_MBS, O_MICRO, O_TFLOPS, O_HBM, O_LINK, O_SHARE, O_LAT,
           O_PARAMS, O_OPTIM, O_PLANNER, O_DDR, O_BACKEND, O_SVG, O_PICDATA, O_SVGSTEP,
           O_RECONNECT, O_PAUSE, O_NOCHECK, O_MEASURE, O_WEIGHT, O_MAXSLOW,
           O_SYNC, O_SAVETRACE, O_HELP };
    static const struct option lo[] = {
        {"socket", 1, 0, O_SOCKET}, {"device", 1, 0, O_DEVICE},
        {"job", 1, 0, O_JOB}, {"budget", 1, 0, O_BUDGET},
        {"budget-ratio", 1, 0, O_RATIO}, {"steps", 1, 0, O_STEPS},
        {"trace", 1, 0, O_TRACE}, {"layers", 1, 0, O_LAYERS},
        {"hidden", 1, 0, O_HIDDEN}, {"heads", 1, 0, O_HEADS},
        {"kv-heads", 1, 0, O_KV}, {"ffn", 1, 0, O_FFN},
        {"vocab", 1, 0, O_VOCAB}, {"seq", 1, 0, O_SEQ}, {"mbs", 1, 0, O_MBS},
        {"micro", 1, 0, O_MICRO}, {"tflops", 1, 0, O_TFLOPS},
        {"hbm-gbps", 1, 0, O_HBM}, {"link-gbps", 1, 0, O_LINK},
        {"link-share", 1, 0, O_SHARE}, {"latency-us", 1, 0, O_LAT},
        {"params", 1, 0, O_PARAMS}, {"optimizer", 1, 0, O_OPTIM},
        {"planner", 1, 0, O_PLANNER}, {"ddr-limit", 1, 0, O_DDR},
        {"backend", 1, 0, O_BACKEND}, {"svg", 1, 0, O_SVG},
        {"picture-data", 1, 0, O_PICDATA},
        {"svg-step", 1, 0, O_SVGSTEP}, {"reconnect", 1, 0, O_RECONNECT},
        {"pause-at", 1, 0, O_PAUSE}, {"no-op-check", 0, 0, O_NOCHECK},
        {"measure-link", 0, 0, O_MEASURE}, {"help", 0, 0, O_HELP},
        {"weight", 1, 0, O_WEIGHT}, {"max-slowdown", 1, 0, O_MAXSLOW},
        {"sync", 0, 0, O_SYNC}, {"save-trace", 1, 0, O_SAVETRACE},
        {0, 0, 0, 0}};
    plan_model *m = &o->gen.model;
    uint32_t kv = 0;
    int c, bad = 0;

    memset(o, 0, sizeof *o);
    o->job = "demo";
    o->backend = "host";
    o->budget_ratio = 0.5;
    o->steps = 4;
    o->link_share = 0.5;
    o->latency_us = 20;
    o->check_ops = 1;
    snprintf(m->name, sizeof m->name, "demo");
    m->layers = 8;
    m->hidden = 256;
    m->heads = 4;
    m->ffn = 768;
    m->vocab = 4096;
    m->swiglu = true;
    o->gen.seq = 4096;
    o->gen.micro_batch = 1;
    o->gen.n_micro = 2;
    o->gen.dtype_bytes = 2;
    o->gen.params_on_host = true;
    o->gen.optimizer_on_host = true;
    o->gen.optimizer_step = true;
    snprintf(o->gen.device.name, sizeof o->gen.device.name, "demo");
    o->gen.device.tflops = 2;
    o->gen.device.hbm_gbps = 4;
    o->gen.device.hbm_gib = 1;
    o->gen.device.link_gbps = 4;
    o->gen.device.link_latency_us = 20;

    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        uint32_t u = 0;
        switch (c) {
        case O_SOCKET: o->socket = optarg; break;
        case O_DEVICE:
            bad |= parse_u32(optarg, 0, 63, &u) < 0;
            o->device = (int)u;
            break;
        case O_JOB: o->job = optarg; break;
        case O_BUDGET:
            bad |= ho_size_parse(optarg, &o->budget) < 0 || o->budget == 0;
            break;
        case O_RATIO:
            bad |= parse_double(optarg, 0.01, 4, &o->budget_ratio) < 0;
            break;
        case O_STEPS: bad |= parse_u32(optarg, 1, MAX_STEPS, &o->steps) < 0;
            break;
        case O_TRACE: o->trace_path = optarg; break;
        case O_LAYERS: bad |= parse_u32(optarg, 1, 1024, &m->layers) < 0;
            break;
        case O_HIDDEN: bad |= parse_u32(optarg, 1, 1u << 20, &m->hidden) < 0;
            break;
        case O_HEADS: bad |= parse_u32(optarg, 1, 1u << 20, &m->heads) < 0;
            break;
        case O_KV: bad |= parse_u32(optarg, 1, 1u << 20, &kv) < 0; break;
        case O_FFN: bad |= parse_u32(optarg, 1, 1u << 22, &m->ffn) < 0;
            break;
        case O_VOCAB: bad |= parse_u32(optarg, 1, 1u << 24, &m->vocab) < 0;
            break;
        case O_SEQ: bad |= parse_u32(optarg, 1, 1u << 22, &o->gen.seq) < 0;
            break;
        case O_MBS:
            bad |= parse_u32(optarg, 1, 65536, &o->gen.micro_batch) < 0;
            break;
        case O_MICRO:
            bad |= parse_u32(optarg, 1, 65536, &o->gen.n_micro) < 0;
            break;
        case O_TFLOPS:
            bad |= parse_double(optarg, 1e-6, 1e6, &o->gen.device.tflops) < 0;
            break;
        case O_HBM:
            bad |= parse_double(optarg, 1e-6, 1e6, &o->gen.device.hbm_gbps) <
                   0;
            break;
        case O_LINK: bad |= parse_double(optarg, 1e-3, 1e6, &o->link_gbps) < 0;
            break;
        case O_SHARE:
            bad |= parse_double(optarg, 0.01, 1, &o->link_share) < 0;
            break;
        case O_LAT: bad |= parse_double(optarg, 0, 1e6, &o->latency_us) < 0;
            break;
        case O_PARAMS:
        case O_OPTIM: {
            bool host = strcmp(optarg, "host") == 0;
            bad |= !host && strcmp(optarg, "device") != 0;
            if (c == O_PARAMS)
                o->gen.params_on_host = host;
            else
                o->gen.optimizer_on_host = host;
            break;
        }
        case O_PLANNER: o->planner = optarg; break;
        case O_DDR: bad |= ho_size_parse(optarg, &o->ddr_limit) < 0; break;
        case O_WEIGHT: bad |= parse_double(optarg, 1e-6, 1e6, &o->weight) < 0;
            break;
        case O_MAXSLOW:
            bad |= parse_double(optarg, 1, 1e6, &o->max_slowdown) < 0;
            break;
        case O_SYNC: o->sync = 1; break;
        case O_SAVETRACE: o->save_trace = optarg; break;
        case O_BACKEND: o->backend = optarg; break;
        case O_SVG: o->svg_path = optarg; break;
        case O_PICDATA: o->picture_path = optarg; break;
        case O_SVGSTEP:
            bad |= parse_u32(optarg, 2, MAX_STEPS + 1, &o->svg_step) < 0;
            break;
        case O_RECONNECT:
            bad |= parse_double(optarg, 0, 3600, &o->reconnect_s) < 0;
            break;
        case O_PAUSE: {
            char *colon = strchr(optarg, ':');
            if (!colon) {
                bad = 1;
                break;
            }
            *colon = '\0';
            bad |= parse_u32(optarg, 2, MAX_STEPS + 1, &u) < 0 ||
                   parse_u32(colon + 1, 0, PLAN_MAX_OPS, &o->pause_op) < 0;
            o->pause_step = u;
            break;
        }
        case O_NOCHECK: o->check_ops = 0; break;
        case O_MEASURE: o->measure_link = 1; break;
        case O_HELP:
        case 'h': fputs(usage_text, stdout); exit(0);
        default: return -EINVAL;
        }
        if (bad) {
            fprintf(stderr, "%s: bad value for --%s: '%s'\n", PROG,
                    lo[c - O_SOCKET].name, optarg ? optarg : "");
            return -EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", PROG, argv[optind]);
        return -EINVAL;
    }
    m->kv_heads = kv ? kv : m->heads;
    if (o->svg_step > o->steps + 1) {
        fprintf(stderr, "%s: --svg-step %u is after the last step %u\n", PROG,
                o->svg_step, o->steps + 1);
        return -EINVAL;
    }
    return 0;
}

static void demo_done(demo *d)
{
    session_close(d);
    d->dev = ho_device_close(d->dev);
    d->ht = ho_trace_free(d->ht);
    plan_trace_free(d->pt);
    free(d->ids);
    free(d->last_op);
    free(d->cur);
    free(d->saved);
    free(d->scratch);
    free(d->steps);
    free(d->meas);
    free(d->pred);
    free(d->xfer);
    free(d->rec);
    free(d->made);
}

int main(int argc, char **argv)
{
    demo d;
    char a[32], b[32];
    int r;

    memset(&d, 0, sizeof d);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse_args(argc, argv, &d.o) < 0) {
        fputs(usage_text, stderr);
        return 2;
    }
    snprintf(d.name, sizeof d.name, "client%d", d.o.device);
    if (d.o.measure_link) {
        d.budget = 256ull << 20;
        r = ho_device_open(d.o.backend, d.o.device, d.budget, &d.dev);
        if (r < 0) {
            local_failure(&d, "ho_device_open", r);
        } else {
            double gbps = measure_copy(&d);
            if (gbps > 0)
                printf("%.2f\n", gbps);
            else
                r = local_failure(&d, "measuring the copy rate", HO_E_DEVICE);
        }
        goto out;
    }
    r = setup(&d);
    if (r < 0)
        goto out;
    d.steps = calloc(d.o.steps, sizeof *d.steps);
    d.cap_meas = 3 * (size_t)d.pt->n_ops + 4;
    d.meas = malloc(sizeof *d.meas * d.cap_meas);
    if (!d.steps || !d.meas) {
        r = local_failure(&d, "allocating", -ENOMEM);
        goto out;
    }

    r = traced_step(&d);
    if (r < 0)
        goto out;
    printf("%s: step 1: traced without offload in %s, device peak %s: "
           "verified\n", d.name, dur(d.step1_wall_us, a, sizeof a),
           iec(d.step1_peak, b, sizeof b));

    r = session_open(&d, 0);
    if (r < 0)
        goto out;
    printf("%s: session %" PRIu64 " on device %d; plan: %s, %" PRIu64
           " actions, %.2f ms%s\n", d.name, d.session_id, d.o.device,
           d.info.planner, d.info.actions, d.info.planning_ms,
           d.info.cached ? " (cached)" : "");
    if (d.o.svg_path || d.o.picture_path) {
        r = predict(&d);
        if (r < 0)
            goto out;
    }
    r = run(&d);
    if (r < 0)
        goto out;
    if (d.o.picture_path && d.svg_written) {
        /* every replayed step, for the job's step chart */
        demo_step *st = calloc(d.n_steps ? d.n_steps : 1, sizeof *st);
        if (!st) {
            r = local_failure(&d, "the step chart", -ENOMEM);
            goto out;
        }
        for (uint32_t i = 0; i < d.n_steps; i++)
            st[i] = (demo_step){d.steps[i].step, d.steps[i].exposed_us,
                                d.steps[i].stall_us};
        r = demo_svg_save_steps(d.o.picture_path, st, d.n_steps);
        free(st);
        if (r < 0) {
            fprintf(stderr, "%s: %s: writing %s: %s\n", PROG, d.name,
                    d.o.picture_path, strerror(-r));
            goto out;
        }
    }
    print_report(&d);
out:
    if (r < 0)
        fprintf(stderr, "%s: %s: FAILED%s\n", PROG, d.name,
                d.mismatch ? " (data mismatch)" : "");
    demo_done(&d);
    return r < 0 ? 1 : 0;
}
