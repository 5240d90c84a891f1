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

/* The options with the defaults filled in. */
static plan_options with_defaults(const plan_options *opt)
{
    static const plan_options defaults = {NULL, 100, 100, 50};
    plan_options o = opt ? *opt : defaults;
    if (!o.planner)
        o.planner = "hoplan";
    if (o.select_distance == 0)
        o.select_distance = defaults.select_distance;
    if (o.select_num == 0)
        o.select_num = defaults.select_num;
    if (o.prefetch_distance == 0)
        o.prefetch_distance = defaults.prefetch_distance;
    return o;
}

/* Run the planner named by o->planner. */
static int dispatch(const plan_trace *t, uint64_t budget,
                    const plan_options *o, plan_schedule **ret_schedule,
                    plan_result *res)
{
    const char *p = o->planner;
    if (strcmp(p, "hoplan") == 0)
        return plan_hoplan(t, budget, ret_schedule, res);
    if (strcmp(p, "none") == 0)
        return plan_none(t, budget, ret_schedule);
    if (strcmp(p, "seed-greedy") == 0)
        return plan_seed_greedy(t, budget, ret_schedule);
    if (strcmp(p, "ms-distance") == 0)
        return plan_ms_distance(t, budget, o, ret_schedule);
    if (strcmp(p, "reactive-lru") == 0)
        return plan_reactive_lru(t, budget, ret_schedule);
    if (strcmp(p, "oracle") == 0)
        return plan_oracle(t, budget, ret_schedule, res);
    return ho_errf(res->message, sizeof(res->message), -EINVAL,
                   "unknown planner '%s'", p);
}

/* Judge s: the metrics come from a run without the budget (timing does
 * not depend on it); an invalid schedule, or a hoplan one over budget, is
 * an internal error.  On success s carries the budget and predicted. */
static int judge(const plan_trace *t, uint64_t budget, const char *planner,
                 plan_schedule *s, plan_result *res)
{
    plan_schedule unlimited = *s;
    plan_metrics m;
    plan_violation v;
    /* hoplan judged its result with plan_simulate at this budget already
     * (it keeps only schedules that fit): the same run again would give
     * the same figures */
    if (strcmp(planner, "hoplan") == 0 && s->has_predicted &&
        s->budget_bytes == budget && s->predicted.peak_device_bytes <= budget)
        return 0;
    unlimited.budget_bytes = UINT64_MAX;
    if (plan_simulate(t, &unlimited, &m, &v, NULL) < 0)
        return ho_errf(res->message, sizeof(res->message), HO_E_INTERNAL,
                       "%s produced an invalid schedule: %s", planner,
                       v.message);
    if (strcmp(planner, "hoplan") == 0 && m.peak_device_bytes > budget)
        return ho_errf(res->message, sizeof(res->message), HO_E_INTERNAL,
                       "hoplan exceeded its budget (%llu > %llu)",
                       (unsigned long long)m.peak_device_bytes,
                       (unsigned long long)budget);
    s->budget_bytes = budget;
    s->has_predicted = true;
    s->predicted = m;
    return 0;
}

int plan_make(const plan_trace *t, uint64_t budget, const plan_options *opt,
              plan_schedule **ret_schedule, plan_result *result)
{
    plan_trace_summary sm;
    plan_result res;
    plan_schedule *s = NULL;
    int r;

    memset(&res, 0, sizeof(res));
    if (!t || !ret_schedule)
        return -EINVAL;
    double t0 = now_ms();
    plan_options o = with_defaults(opt);
    if (!t->finished) {
        r = ho_errf(res.message, sizeof(res.message), -EINVAL,
                    "trace is not finished");
        goto out;
    }
    /* hoplan reports the no-offload peak and the largest working set
     * itself (it needs both) */
    if (strcmp(o.planner, "hoplan") != 0) {
        if ((r = plan_trace_summarize(t, &sm)) < 0)
            goto out;
        res.no_offload_peak = sm.no_offload_peak;
        res.working_set_bound = sm.max_op_working_set;
    }
    if ((r = dispatch(t, budget, &o, &s, &res)) < 0 ||
        (r = judge(t, budget, o.planner, s, &res)) < 0)
        goto out;
    *ret_schedule = s;
    s = NULL;
out:
    res.planning_ms = now_ms() - t0;
    plan_schedule_free(s);
    if (result)
        *result = res;
    return r;
}
