/*
 * planner/baselines.c - the baselines of PLANNER.md §5 on the planner IR:
 * none, seed-greedy, ms-distance and reactive-lru.  Each builds a new
 * schedule (owned by the caller), sorted by point and bound to the trace;
 * plan_make judges it with plan_simulate.
 */
#include "plan_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"

/* ------------------------------------------------------------------ none */

/* The actions that the trace forces whatever the budget: an `initial: host`
 * storage is prefetched before its first access when that access reads it;
 * when it is retained, it is stored after its last write (if any op writes
 * it) and freed from the device after its last access, so that the step
 * ends as it started.  Every other storage is left to the model's implicit
 * rules. */
static int push_forced(plan_schedule *s, const plan_trace *t, uint32_t st)
{
    const plan_storage *sto = &t->storages[st];
    uint32_t a0 = t->acc_start[st], a1 = t->acc_start[st + 1];
    int r = 0;
    if (sto->initial != PLAN_INIT_HOST || a0 == a1)
        return 0;
    if (t->acc[a0].flags & PLAN_ACC_READ)
        r = plan_schedule_push(s, t, t->acc[a0].op, PLAN_BEFORE,
                               PLAN_ACT_PREFETCH, st);
    if (r < 0 || !sto->retained)
        return r;
    for (uint32_t k = a1; k-- > a0;) {
        if (t->acc[k].flags & PLAN_ACC_WRITE) {
            r = plan_schedule_push(s, t, t->acc[k].op, PLAN_AFTER,
                                   PLAN_ACT_STORE, st);
            break;
        }
    }
    if (r == 0)
        r = plan_schedule_push(s, t, t->acc[a1 - 1].op, PLAN_AFTER,
                               PLAN_ACT_FREE_DEVICE, st);
    return r;
}

int plan_none(const plan_trace *t, uint64_t budget, plan_schedule **ret)
{
    plan_schedule *s = plan_schedule_new("none", budget);
    int r = 0;
    if (!s)
        return -ENOMEM;
    for (uint32_t st = 0; st < t->n_storages && r == 0; st++)
        r = push_forced(s, t, st);
    if (r == 0)
        r = plan_schedule_sort(s);
    if (r < 0) {
        plan_schedule_free(s);
        return r;
    }
    *ret = s;
    return 0;
}
