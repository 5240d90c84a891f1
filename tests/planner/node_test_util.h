/*
 * tests/planner/node_test_util.h - helpers of the node-judge tests
 * (test_node_judge, test_node_equiv, test_node_format): small nodes built
 * by hand, one client's input, running the judge.  Everything is static;
 * each test includes it once, after plan_test_util.h.
 */
#ifndef HO_TESTS_NODE_TEST_UTIL_H
#define HO_TESTS_NODE_TEST_UTIL_H

#include "tests/planner/plan_test_util.h"
#include "planner/node/node.h"

/* 1 GB/s = 1000 B/us: copy times are easy by hand. */
static inline void nu_link(plan_node *n, const char *name,
                           const char *parent, double h2d, double d2h,
                           bool duplex)
{
    int r = plan_node_add_link(n, name, parent, h2d, d2h, duplex, tu_err,
                               sizeof tu_err);
    ck_assert_msg(r == 0, "add_link %s: %s", name, tu_err);
}

static inline void nu_dev(plan_node *n, uint32_t id, const char *parent,
                          uint64_t hbm, double h2d, double d2h, double lat,
                          bool duplex)
{
    char name[32];
    plan_node_device d;
    memset(&d, 0, sizeof d);
    snprintf(name, sizeof name, "dev%u", id);
    d.id = id;
    d.name = name;
    d.parent_name = (char *)parent;
    d.hbm_bytes = hbm;
    d.h2d_gbps = h2d;
    d.d2h_gbps = d2h;
    d.latency_us = lat;
    d.duplex = duplex;
    int r = plan_node_add_device(n, &d, tu_err, sizeof tu_err);
    ck_assert_msg(r == 0, "add_device %u: %s", id, tu_err);
}

static inline void nu_finish(plan_node *n)
{
    int r = plan_node_finish(n, tu_err, sizeof tu_err);
    ck_assert_msg(r == 0, "finish: %s", tu_err);
}

static inline plan_node_input nu_in(const char *name, const plan_trace *t,
                                    plan_schedule *s, uint32_t dev,
                                    uint64_t budget, double weight,
                                    uint32_t sync)
{
    plan_node_input in;
    int r = plan_schedule_bind(s, t, tu_err, sizeof tu_err);
    ck_assert_msg(r == 0, "bind: %s", tu_err);
    in.name = name;
    in.trace = t;
    in.schedule = s;
    in.device = dev;
    in.budget_bytes = budget;
    in.weight = weight;
    in.sync = sync;
    return in;
}

/* Judge; asserts validity and returns the result. */
static inline plan_node_result *nu_judge(const plan_node *n,
                                         const plan_node_input *in,
                                         uint32_t count, uint32_t steps)
{
    plan_node_opts o = {steps};
    plan_node_result *res = NULL;
    plan_node_violation v;
    int r = plan_node_judge(n, in, count, &o, &res, &v);
    ck_assert_msg(r == 0, "judge: %d %s", r, v.message);
    ck_assert_ptr_nonnull(res);
    return res;
}

#define NU_EQ(a, b) ck_assert_msg(tu_close((a), (b)), "%s = %.17g, want %.17g", \
                                  #a, (double)(a), (double)(b))

#endif
