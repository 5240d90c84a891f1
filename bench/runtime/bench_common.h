/*
 * bench/runtime/bench_common.h - what bench_runtime and ho-gpu-check
 * share beyond bench_util.h (timing, medians, a daemon of their own): the
 * bandwidth traces whose replays move large storages through the pool.
 * Everything is static; each program includes it once.
 */
#ifndef HO_BENCH_RUNTIME_COMMON_H
#define HO_BENCH_RUNTIME_COMMON_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/common/bench_util.h"
#include "hyperoffload/runtime.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"

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
        bench_die("at most 256 storages per direction");
    bench_check(NULL, ho_trace_new("bandwidth", &link, &t), "trace");
    for (unsigned i = 0; i < n; i++) {
        hid[i] = BR_H_ID + i;
        did[i] = BR_D_ID + i;
        if (mode != BR_D2H)
            bench_check(NULL, ho_trace_add_storage(t, hid[i], big,
                                                   HO_KIND_ACTIVATION,
                                                   HO_INITIAL_HOST, 0),
                        "storage");
        if (mode == BR_D2H || mode == BR_BOTH)
            bench_check(NULL, ho_trace_add_storage(t, did[i], big,
                                                   HO_KIND_OPTIMIZER,
                                                   HO_INITIAL_HOST,
                                                   HO_STORAGE_RETAINED),
                        "storage");
    }
    if (mode == BR_H2D) {
        bench_check(NULL, ho_trace_add_op(t, "read", 1000, hid, n, NULL, 0),
                    "op");
    } else if (mode == BR_SEQ) {
        for (unsigned i = 0; i < n; i++)
            bench_check(NULL, ho_trace_add_op(t, "read", 1000, &hid[i], 1,
                                              NULL, 0), "op");
    } else if (mode == BR_D2H) {
        bench_check(NULL, ho_trace_add_op(t, "write", 1000, NULL, 0, did, n),
                    "op");
    } else {
        bench_check(NULL, ho_trace_add_op(t, "write", 1000, NULL, 0, did, n),
                    "op");
        bench_check(NULL, ho_trace_add_op(t, "read", 1000, hid, n, NULL, 0),
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
            bench_check(NULL, ho_storage_write_host(r, BR_H_ID + i, buf, big),
                        "write_host");
        if (mode == BR_D2H || mode == BR_BOTH)
            bench_check(NULL, ho_storage_write_host(r, BR_D_ID + i, buf, big),
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
        t0 = bench_now();
        bench_check(NULL, ho_step_begin(r), "step begin");
        for (uint32_t op = 0; op < n; op++) {
            bench_check(NULL, ho_op_begin(r, op), "op");
            bench_check(NULL, ho_op_end(r, op), "op end");
        }
        bench_check(NULL, ho_step_end(r, NULL), "step end");
        return bench_now() - t0;
    }
    bench_check(NULL, ho_step_begin(r), "step begin");
    if (mode == BR_H2D) {
        t0 = bench_now();
        bench_check(NULL, ho_op_begin(r, 0), "op 0");
        t1 = bench_now();
        bench_check(NULL, ho_op_end(r, 0), "op 0 end");
        bench_check(NULL, ho_step_end(r, NULL), "step end");
        return t1 - t0;
    }
    bench_check(NULL, ho_op_begin(r, 0), "op 0");
    t0 = bench_now();
    bench_check(NULL, ho_op_end(r, 0), "op 0 end");
    if (mode == BR_BOTH) {
        bench_check(NULL, ho_op_begin(r, 1), "op 1");
        bench_check(NULL, ho_op_end(r, 1), "op 1 end");
    }
    ho_step_info info;
    bench_check(NULL, ho_step_end(r, &info), "step end");
    t1 = bench_now();
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
    bench_check(NULL, ho_trace_save(t, tpath), "save trace");
    plan_trace *pt = NULL;
    if (plan_trace_read_json(tpath, &pt, err, sizeof(err)) < 0)
        bench_die("%s", err);
    plan_options opt = {.planner = planner};
    plan_schedule *s = NULL;
    plan_result res;
    memset(&res, 0, sizeof(res));
    int rc = plan_make(pt, budget, &opt, &s, &res);
    if (rc < 0)
        bench_die("planning with %s: %s", planner, res.message);
    FILE *f = fopen(spath, "w");
    if (!f || plan_schedule_write_json(s, f) < 0 || fclose(f) != 0)
        bench_die("cannot write %s", spath);
    ho_plan *p = NULL;
    bench_check(NULL, ho_plan_load(t, spath, &p), "load plan");
    unlink(tpath);
    unlink(spath);
    plan_schedule_free(s);
    plan_trace_free(pt);
    return p;
}

#endif
