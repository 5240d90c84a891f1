/*
 * planner/bound/bound.c - plan_exposure_bound: the hard memory floors,
 * the closed form, the LP, and the larger of the two.
 */
#include "planner/bound/bound_impl.h"
#include "planner/plan_enum.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"

static const char *const mode_names[PLAN_BOUND__COUNT] = {"off", "fast",
                                                          "full"};

PLAN_ENUM_NAMES(plan_bound_mode, plan_bound_mode_name, plan_bound_mode_parse,
                mode_names, PLAN_BOUND__COUNT)

const char *plan_bound_lp_status_name(plan_bound_lp_status s)
{
    switch (s) {
    case PLAN_BOUND_LP_NOT_RUN:
        return "not run";
    case PLAN_BOUND_LP_OPTIMAL:
        return "optimal";
    case PLAN_BOUND_LP_LIMIT:
        return "limit";
    case PLAN_BOUND_LP_FAILED:
        return "failed";
    }
    return "?";
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool link_ok(const plan_link *l)
{
    return isfinite(l->h2d_gbps) && l->h2d_gbps > 0 &&
           isfinite(l->d2h_gbps) && l->d2h_gbps > 0 &&
           isfinite(l->latency_us) && l->latency_us >= 0;
}

int plan_exposure_bound(const plan_trace *t, uint64_t budget,
                        const plan_link *link, const plan_bound_options *opt,
                        plan_bound_result *ret, char *err, size_t errlen)
{
    plan_bound_options o = {PLAN_BOUND_FAST, 0, 0, 0, 0, 0};
    plan_bound_result res;
    bd_model m;
    uint32_t *ck = NULL, nck = 0;
    double t0 = now_ms();
    int r;

    if (!t || !t->finished || !ret)
        return ho_errf(err, errlen, -EINVAL,
                       "plan_exposure_bound: a finished trace is needed");
    if (opt)
        o = *opt;
    if ((unsigned)o.mode >= PLAN_BOUND__COUNT)
        return ho_errf(err, errlen, -EINVAL, "bound mode %d unknown",
                       (int)o.mode);
    if (!link)
        link = &t->link;
    if (!link_ok(link))
        return ho_errf(err, errlen, -EINVAL,
                       "bound: link bandwidths must be positive and finite, "
                       "latency >= 0");
    bool full = o.mode == PLAN_BOUND_FULL;
    if (!o.time_limit_ms)
        o.time_limit_ms = full ? 20000 : 300;
    if (!o.max_checkpoints)
        o.max_checkpoints = full ? 256 : 48;
    if (!o.max_cells)
        o.max_cells = full ? 200000 : 8000;
    if (!o.lp_max_ops)
        o.lp_max_ops = full ? 4000000 : 200000;

    memset(&res, 0, sizeof(res));
    res.mode = o.mode;
    res.source = "none";
    res.floor_op = PLAN_NONE;
    res.time_limit_ms = o.time_limit_ms;
    res.iteration_limit = o.iteration_limit;
    if (o.mode == PLAN_BOUND_OFF) {
        snprintf(res.note, sizeof(res.note), "bound off");
        *ret = res;
        return 0;
    }

    r = bd_model_init(&m, t, link);
    if (r < 0)
        return ho_errf(err, errlen, r, "bound: out of memory");
    res.floor_bytes = m.floor_bytes;
    res.floor_op = m.floor_op;
    if (m.floor_bytes > budget) {
        res.infeasible = true;
        res.bound_us = res.closed_form_us = INFINITY;
        res.source = "memory floor";
        if (m.floor_op == PLAN_NONE)
            snprintf(res.note, sizeof(res.note),
                     "no valid schedule: %llu bytes are on device at step "
                     "start",
                     (unsigned long long)m.floor_bytes);
        else
            snprintf(res.note, sizeof(res.note),
                     "no valid schedule: op %u needs %llu bytes on device "
                     "(its operands and the pinned data live there)",
                     m.floor_op, (unsigned long long)m.floor_bytes);
        goto done;
    }

    /* Closed form at up to 256 checkpoints, fewer on large traces so that
     * its cost stays ~ 1.5e7 part visits (fast; 4x that in full). */
    {
        double work = 1.5e7 / ((double)m.n_parts + 1.0);
        uint32_t k = work > 256 ? 256 : work < 8 ? 8 : (uint32_t)work;
        if (full)
            k = k * 4 > m.n ? m.n : k * 4;
        if ((r = bd_checkpoints(&m, k, &ck, &nck)) < 0 ||
            (r = bd_closed_form(&m, budget, ck, nck, &res.closed_form_us)) <
                0) {
            bd_model_done(&m);
            free(ck);
            return ho_errf(err, errlen, r, "bound: out of memory");
        }
        free(ck);
        ck = NULL;
    }
    res.bound_us = res.closed_form_us;
    res.source = "closed form";

    if (m.n > o.lp_max_ops) {
        snprintf(res.note, sizeof(res.note),
                 "LP skipped: %u ops > %u in %s mode (closed form only)",
                 m.n, o.lp_max_ops, plan_bound_mode_name(o.mode));
    } else {
        bd_lp_in in = {&m, budget, o.max_checkpoints, o.max_cells,
                       o.time_limit_ms, o.iteration_limit};
        bd_lp_out lo;
        double l0 = now_ms();
        r = bd_lp(&in, &lo);
        res.lp_ms = now_ms() - l0;
        if (r < 0) {
            bd_model_done(&m);
            return ho_errf(err, errlen, r, "bound: LP: out of memory");
        }
        res.lp_us = lo.bound_us;
        res.lp_status = lo.status;
        res.checkpoints = lo.checkpoints;
        res.ops_per_segment =
            lo.checkpoints ? (double)m.n / (lo.checkpoints + 1.0) : 0;
        res.lp_rows = lo.rows;
        res.lp_cols = lo.cols;
        res.lp_nonzeros = lo.nonzeros;
        res.lp_iterations = lo.iterations;
        memcpy(res.note, lo.note, sizeof(res.note));
        if (lo.status != PLAN_BOUND_LP_NOT_RUN &&
            res.lp_us > res.bound_us) {
            res.bound_us = res.lp_us;
            res.source = lo.status == PLAN_BOUND_LP_OPTIMAL ? "lp"
                                                            : "lp (limit)";
        }
    }
done:
    bd_model_done(&m);
    res.total_ms = now_ms() - t0;
    *ret = res;
    return 0;
}
