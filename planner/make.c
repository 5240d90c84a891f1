/*
 * planner/make.c - plan_make(): dispatch by planner name, fill the result
 * (no-offload peak, single-op working-set bound, planning time) and the
 * schedule's `predicted` figures from plan_simulate.
 */
#include "planner/plan_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hyperoffload/errors.h"

const char *const plan_planner_names[] = {
    "hoplan", "none", "seed-greedy", "ms-distance", "reactive-lru", "oracle",
    NULL,
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int plan_make(const plan_trace *t, uint64_t budget, const plan_options *opt,
              plan_schedule **ret, plan_result *result)
{
    static const plan_options defaults = {NULL, 100, 100, 50};
    plan_trace_summary sm;
    plan_result res;
    plan_schedule *s = NULL;
    int r;

    memset(&res, 0, sizeof(res));
    if (!t || !ret)
        return -EINVAL;
    double t0 = now_ms();
    if (!t->finished) {
        r = ho_errf(res.message, sizeof(res.message), -EINVAL,
                      "trace is not finished");
        goto out;
    }
    plan_options o = opt ? *opt : defaults;
    if (!o.planner)
        o.planner = "hoplan";
    if (o.select_distance == 0)
        o.select_distance = defaults.select_distance;
    if (o.select_num == 0)
        o.select_num = defaults.select_num;
    if (o.prefetch_distance == 0)
        o.prefetch_distance = defaults.prefetch_distance;

    bool is_hoplan = strcmp(o.planner, "hoplan") == 0;
    /* hoplan simulates `none` itself and reports its peak */
    r = plan_summarize_core(t, &sm, !is_hoplan);
    if (r < 0)
        goto out;
    res.no_offload_peak = sm.no_offload_peak;
    res.working_set_bound = sm.max_op_working_set;

    if (is_hoplan)
        r = plan_hoplan(t, budget, &s, &res);
    else if (strcmp(o.planner, "none") == 0)
        r = plan_none(t, budget, &s);
    else if (strcmp(o.planner, "seed-greedy") == 0)
        r = plan_seed_greedy(t, budget, &s);
    else if (strcmp(o.planner, "ms-distance") == 0)
        r = plan_ms_distance(t, budget, &o, &s);
    else if (strcmp(o.planner, "reactive-lru") == 0)
        r = plan_reactive_lru(t, budget, &s);
    else if (strcmp(o.planner, "oracle") == 0)
        r = plan_oracle(t, budget, &s, &res);
    else
        r = ho_errf(res.message, sizeof(res.message), -EINVAL,
                      "unknown planner '%s'", o.planner);
    if (r < 0)
        goto out;

    /* Judge it: metrics come from a run without the budget (timing does
     * not depend on it), the budget is checked against its peak. */
    plan_schedule unlimited = *s;
    plan_metrics m;
    plan_violation v;
    unlimited.budget_bytes = UINT64_MAX;
    r = plan_simulate(t, &unlimited, &m, &v, NULL);
    if (r < 0) {
        r = ho_errf(res.message, sizeof(res.message), HO_E_INTERNAL,
                      "%s produced an invalid schedule: %s", o.planner,
                      v.message);
        goto out;
    }
    if (strcmp(o.planner, "hoplan") == 0 && m.peak_device_bytes > budget) {
        r = ho_errf(res.message, sizeof(res.message), HO_E_INTERNAL,
                      "hoplan exceeded its budget (%llu > %llu)",
                      (unsigned long long)m.peak_device_bytes,
                      (unsigned long long)budget);
        goto out;
    }
    s->budget_bytes = budget;
    s->has_predicted = true;
    s->predicted = m;
    *ret = s;
    s = NULL;
out:
    res.planning_ms = now_ms() - t0;
    plan_schedule_free(s);
    if (result)
        *result = res;
    return r;
}
