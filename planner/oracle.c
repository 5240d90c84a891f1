/*
 * planner/oracle.c - exhaustive gap selection for small traces (PLANNER.md
 * §6): every subset of hoplan's candidate gaps (at most 20 of them) is
 * placed with hoplan's own transfer placement (hp_place_loop) and judged
 * by plan_simulate; the `none` schedule is judged too.  The best schedule
 * has the least exposed time within the budget, then the fewest bytes
 * moved, then the lowest subset number.  Since hoplan's output is always
 * one of these schedules, hoplan can never beat the oracle; the distance
 * between the two is the cost of hoplan's greedy selection.
 *
 * Ownership: the returned schedule belongs to the caller.
 */
#include "planner/hoplan_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"

#define ORACLE_MAX_CANDIDATES 20u

/* Is (e1, b1) strictly better than (e2, b2)? */
static bool better(const plan_metrics *x, const plan_metrics *y)
{
    if (x->exposed_us != y->exposed_us)
        return x->exposed_us < y->exposed_us;
    return x->h2d_bytes + x->d2h_bytes < y->h2d_bytes + y->d2h_bytes;
}

int plan_oracle(const plan_trace *t, uint64_t budget, plan_schedule **ret_schedule,
                plan_result *result)
{
    hp_model m;
    uint8_t *sel = NULL;
    plan_schedule *best = NULL;
    plan_metrics best_m;
    uint64_t min_peak = UINT64_MAX;
    int r;

    r = hp_model_init(&m, t);
    if (r < 0)
        return r;
    if (m.n_cand > ORACLE_MAX_CANDIDATES) {
        r = HO_E_UNSUPPORTED;
        if (result)
            ho_errf(result->message, sizeof(result->message), r,
                      "the oracle enumerates at most %u candidate gaps; this "
                      "trace has %u",
                      ORACLE_MAX_CANDIDATES, m.n_cand);
        goto out;
    }
    sel = calloc(m.n_gaps ? m.n_gaps : 1, 1);
    if (!sel) {
        r = -ENOMEM;
        goto out;
    }
    memset(&best_m, 0, sizeof(best_m));

    /* The `none` schedule, which hoplan falls back to. */
    r = plan_none(t, budget, &best);
    if (r < 0)
        goto out;
    plan_violation v;
    r = plan_simulate(t, best, &best_m, &v, NULL);
    if (best_m.peak_device_bytes < min_peak)
        min_peak = best_m.peak_device_bytes;
    if (r < 0) {
        plan_schedule_free(best);
        best = NULL;
    } else {
        snprintf(best->planner, sizeof(best->planner), "oracle");
    }

    for (uint32_t mask = 0; mask < (1u << m.n_cand); mask++) {
        hp_place p;
        for (uint32_t c = 0; c < m.n_cand; c++)
            sel[m.cand[c]] = (mask >> c) & 1u;
        memset(&p, 0, sizeof(p));
        r = hp_place_loop(&m, sel, budget, "oracle", &p);
        if (r < 0) {
            hp_place_done(&p);
            goto out;
        }
        if (p.valid && p.metrics.peak_device_bytes < min_peak)
            min_peak = p.metrics.peak_device_bytes;
        if (p.fits && (!best || better(&p.metrics, &best_m))) {
            plan_schedule_free(best);
            best = p.sched;
            best_m = p.metrics;
            p.sched = NULL;
        }
        hp_place_done(&p);
    }
    if (!best) {
        r = HO_E_INFEASIBLE;
        if (result) {
            result->min_budget = min_peak;
            ho_errf(result->message, sizeof(result->message), r,
                      "no subset of the %u candidate gaps fits %llu bytes; "
                      "the smallest peak seen is %llu",
                      m.n_cand, (unsigned long long)budget,
                      (unsigned long long)min_peak);
        }
        goto out;
    }
    best->budget_bytes = budget;
    *ret_schedule = best;
    best = NULL;
    r = 0;
out:
    plan_schedule_free(best);
    free(sel);
    hp_model_done(&m);
    return r;
}
