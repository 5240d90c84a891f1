/*
 * tests/daemon/rc_trace.h - a random trace as a PlanRequest's protobuf
 * body, for tests that send big PlanRequests to the real daemon
 * (test_limits, tests/stress/test_responsive).  Header-only; the test
 * links ho_planner.
 */
#ifndef HO_TESTS_RC_TRACE_H
#define HO_TESTS_RC_TRACE_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "planner/gen/gen.h"
#include "planner/io/plan_io.h"
#include "proto/plan.pb-c.h"

/* A random trace of n ops over n/4 storages of 4 KiB..max_bytes, up to
 * `refs` storages an op, as a Trace message (free_unpacked by the caller);
 * its no-offload peak (a budget it fits without moving anything) in
 * *ret_peak when not NULL. */
static inline Hyperoffload__Trace *rc_random_trace(uint64_t seed, uint32_t n,
                                                   uint32_t refs,
                                                   uint64_t max_bytes,
                                                   uint64_t *ret_peak)
{
    plan_gen_random_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.seed = seed;
    cfg.n_ops = n;
    cfg.n_storages = n / 4;
    cfg.max_refs_per_op = refs;
    cfg.min_bytes = 4096;
    cfg.max_bytes = max_bytes;
    cfg.p_initial_device = 0.2;
    cfg.p_initial_host = 0.1;
    cfg.p_retained = 0.2;
    char err[256];
    plan_trace *t = NULL;
    ck_assert_msg(plan_gen_random(&cfg, &t, err, sizeof(err)) == 0, "%s",
                  err);
    if (ret_peak) {
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        *ret_peak = sm.no_offload_peak;
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(plan_trace_to_pb(t, &buf, &len), 0);
    Hyperoffload__Trace *pb = hyperoffload__trace__unpack(NULL, len, buf);
    ck_assert_ptr_nonnull(pb);
    free(buf);
    plan_trace_free(t);
    return pb;
}

#endif
