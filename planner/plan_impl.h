/*
 * planner/plan_impl.h - private helpers shared by the planner's own .c
 * files (ir.c, simulate.c, hoplan*.c, baselines.c, oracle.c, make.c) and
 * its sub-libraries (staging/, node/).  Not installed, not for other
 * modules: everything public is in plan.h.
 */
#ifndef HO_PLANNER_PLAN_IMPL_H
#define HO_PLANNER_PLAN_IMPL_H

#include "planner/plan.h"

#include <errno.h>
#include <stdarg.h>

#include "proto/errfmt.h"

/* The peak device bytes plan_simulate gives plan_none's schedule, without
 * building or judging it (baselines.c).  0, -ENOMEM, HO_E_INTERNAL where
 * `none` would not be valid (then ask the judge). */
int plan_none_peak(const plan_trace *t, uint64_t *ret_peak);
/* The no-offload peak: plan_none_peak, or the judge's for plan_none when
 * the walk refuses (0, -ENOMEM, HO_E_INTERNAL: `none` invalid). */
int plan_no_offload_peak(const plan_trace *t, uint64_t *ret_peak);

/* Stable sort of s->actions by (op, when); list order kept within a point.
 * 0 or -ENOMEM. */
int plan_schedule_sort(plan_schedule *s);

/* Make room in the array *arr (n elements of `elem` bytes, capacity
 * *cap) for one more; the capacity doubles (from 16).  0 or -ENOMEM. */
int plan_reserve(void **arr, size_t *cap, size_t n, size_t elem);

/* -1, 0, 1 as a < b, a == b, a > b: for comparators that chain keys
 * (`int c = plan_cmp_u64(..); if (!c) c = plan_cmp_u64(..);`). */
static inline int plan_cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

/* The first index i in [lo, hi) with a[i] >= t (a nondecreasing), hi
 * when none. */
static inline uint32_t plan_first_ge(const double *a, uint32_t lo,
                                     uint32_t hi, double t)
{
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid] >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* A binary min-heap in an array v of *n elements of type T, ordered by
 * less(const T *, const T *).  PLAN_HEAP_DEFINE(name, T, N, less) defines
 * name_insert(v, n, x), which adds x (the caller has made room for one
 * more), and name_remove(v, n), which takes out and returns the least
 * (*n > 0); N is the count's type.  One algorithm for every queue of the
 * planner (the judges' releases and timers, the LRU baseline), so that
 * ties pop in the same order everywhere. */
#define PLAN_HEAP_DEFINE(name, T, N, less)                                  \
    static inline void name##_insert(T *v, N *n, T x)                      \
    {                                                                       \
        N i = (*n)++;                                                       \
        while (i > 0) {                                                     \
            N p = (i - 1) / 2;                                              \
            if (!less(&x, &v[p]))                                           \
                break;                                                      \
            v[i] = v[p];                                                    \
            i = p;                                                          \
        }                                                                   \
        v[i] = x;                                                           \
    }                                                                       \
    static inline T name##_remove(T *v, N *n)                              \
    {                                                                       \
        T top = v[0], last = v[--(*n)];                                     \
        N i = 0;                                                            \
        for (;;) {                                                          \
            N c = 2 * i + 1;                                                \
            if (c >= *n)                                                    \
                break;                                                      \
            if (c + 1 < *n && less(&v[c + 1], &v[c]))                       \
                c++;                                                        \
            if (!less(&v[c], &last))                                        \
                break;                                                      \
            v[i] = v[c];                                                    \
            i = c;                                                          \
        }                                                                   \
        if (*n > 0)                                                         \
            v[i] = last;                                                    \
        return top;                                                         \
    }

/* A storage no op accesses is resident for the whole step, ops
 * [0, n - 1], when it starts on the device and is retained (true, span
 * set); otherwise it is never resident (false). */
static inline bool plan_untouched_span(const plan_storage *st, uint32_t n,
                                       uint32_t *ret_from, uint32_t *ret_to)
{
    if (st->initial != PLAN_INIT_DEVICE || !st->retained)
        return false;
    *ret_from = 0;
    *ret_to = n - 1;
    return true;
}

/* The same heap on an array that grows: PLAN_GROWING_HEAP_DEFINE(name,
 * T, less) defines the type `name` {T *v; size_t n, cap;} (zeroed: empty;
 * the owner frees v), name_push(h, x) (0 or -ENOMEM) and name_pop(h). */
#define PLAN_GROWING_HEAP_DEFINE(name, T, less)                             \
    typedef struct name {                                                   \
        T *v;                                                               \
        size_t n, cap;                                                      \
    } name;                                                                 \
    PLAN_HEAP_DEFINE(name, T, size_t, less)                                 \
    static inline int name##_push(name *h, T x)                            \
    {                                                                       \
        if (plan_reserve((void **)&h->v, &h->cap, h->n, sizeof(T)) < 0)     \
            return -ENOMEM;                                                 \
        name##_insert(h->v, &h->n, x);                                      \
        return 0;                                                           \
    }                                                                       \
    static inline T name##_pop(name *h)                                     \
    {                                                                       \
        return name##_remove(h->v, &h->n);                                  \
    }

/* A release of device or host memory at time t: the judges' queues
 * (simulate.c, plan_none_peak), the earliest first. */
typedef struct plan_rel {
    double t;
    uint64_t bytes;
} plan_rel;

static inline bool plan_rel_less(const plan_rel *a, const plan_rel *b)
{
    return a->t < b->t;
}
PLAN_GROWING_HEAP_DEFINE(plan_rheap, plan_rel, plan_rel_less)

/* Copy duration in microseconds of `bytes` over a link direction. */
static inline double plan_copy_us(const plan_link *l, int d2h, uint64_t bytes)
{
    double gbps = d2h ? l->d2h_gbps : l->h2d_gbps;
    return l->latency_us + (double)bytes / (gbps * 1e3);
}

/* PLANNER.md §3's FIFO copy engines: a copy of `bytes` in direction d2h
 * issued at t, whose data is ready at dep, starts (*ret_start, may be
 * NULL) when its engine (one per direction on a duplex link, one shared
 * otherwise; eng_free[2]) is free; returns its end and books the engine
 * until then.  The judge and
 * hoplan's forward planner both go through it, so they cannot drift. */
static inline double plan_engine_copy(const plan_link *l, double *eng_free,
                                      int d2h, uint64_t bytes, double t,
                                      double dep, double *ret_start)
{
    int e = l->duplex ? d2h : 0;
    double start = t;
    if (eng_free[e] > start)
        start = eng_free[e];
    if (dep > start)
        start = dep;
    if (ret_start)
        *ret_start = start;
    eng_free[e] = start + plan_copy_us(l, d2h, bytes);
    return eng_free[e];
}

/* Storage index accessors on a finished trace. */
static inline uint32_t plan_first_access(const plan_trace *t, uint32_t s)
{
    return t->acc_start[s] == t->acc_start[s + 1] ? PLAN_NONE
                                                  : t->acc[t->acc_start[s]].op;
}
static inline uint32_t plan_last_access(const plan_trace *t, uint32_t s)
{
    return t->acc_start[s] == t->acc_start[s + 1]
               ? PLAN_NONE
               : t->acc[t->acc_start[s + 1] - 1].op;
}

/* Bytes op `op` needs on device: its distinct reads and writes.
 * `mark` is a caller array of n_storages uint32, all != op on entry for
 * the storages of op (e.g. filled with PLAN_NONE once and reused for ops
 * in increasing order). */
uint64_t plan_op_working_set(const plan_trace *t, uint32_t op, uint32_t *mark);

/* Baselines (baselines.c).  Each returns 0 and a new schedule (owned by
 * the caller) or a negative code; the schedule is sorted and bound. */
int plan_none(const plan_trace *t, uint64_t budget, plan_schedule **ret_schedule);
int plan_seed_greedy(const plan_trace *t, uint64_t budget,
                     plan_schedule **ret_schedule);
int plan_ms_distance(const plan_trace *t, uint64_t budget,
                     const plan_options *opt, plan_schedule **ret_schedule);
int plan_reactive_lru(const plan_trace *t, uint64_t budget,
                      plan_schedule **ret_schedule);

/* hoplan (hoplan*.c): plan for `budget`; HO_E_INFEASIBLE with
 * result->min_budget and result->message when it cannot meet it.  Sets
 * result->no_offload_peak (from its own `none` simulation). */
int plan_hoplan(const plan_trace *t, uint64_t budget, plan_schedule **ret_schedule,
                plan_result *result);

/* oracle (oracle.c): HO_E_UNSUPPORTED above 20 candidate gaps. */
int plan_oracle(const plan_trace *t, uint64_t budget, plan_schedule **ret_schedule,
                plan_result *result);

#endif
