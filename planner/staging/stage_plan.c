/*
 * planner/staging.c - the staging plan of a replay's host copies between
 * DDR and flash (plan.h, "staging"; docs/runtime.md).
 *
 * Method.
 *  1. Simulate the schedule (plan_simulate) to get the nominal end time of
 *     every op and the start/end of every copy.
 *  2. Each copy of a storage that has a slot is a *use* of the slot: from
 *     the op at whose point it is issued (before or after op i: op i, as
 *     the daemon learns of progress when an op begins) to the op during
 *     which it completes.  A store's use writes
 *     the slot, a prefetch's use reads it.
 *  3. The derived trace: one storage per slot (bytes = the slot's DDR
 *     bytes), the same ops with duration end(i) - end(i-1) (so the derived
 *     clock follows the real one, stalls included), each op reading or
 *     writing the slots whose uses cover it (both when a prefetch and a
 *     store overlap, but for the first access of a slot whose data starts
 *     in the step: write), link =
 *     flash (h2d = read, d2h = write, one engine).  Slots of `initial:
 *     host` storages carry data across the step boundary: derived
 *     `initial: host, retained` (on flash at the boundary) or, when
 *     promoted, `initial: device, retained` (kept in DDR across it).  The
 *     other slots are `initial: none`, not retained: their data lives from
 *     a store to its prefetches inside the step.
 *  4. hoplan plans the derived trace for budget = the DDR limit: its
 *     prefetches are fills, stores are writes to flash, free_device (and
 *     the implicit free after a slot's last use) evictions, the
 *     allocations of writes fills without reading.  The result is
 *     budget-exact under the derived model, i.e. the DDR limit holds under
 *     nominal times, and every use finds its slot in DDR.  The derived
 *     model's end-of-step rules make the plan cyclic.
 *  5. Promotion: the first plan puts every boundary slot on flash at the
 *     boundary.  Slots whose wrap-around gap (last use to step end, step
 *     start to first use) fits under the limit on that plan's DDR curve are
 *     then kept in DDR across the boundary (shortest gaps first), and the
 *     derived trace is planned again; the second plan is taken when it is
 *     feasible and moves fewer flash bytes.
 *  6. Events: walking the chosen derived schedule as the model executes it
 *     gives, per position, the slots that come in (FILL / ALLOC), are
 *     written (WRITE) and go out (EVICT, `keep` when the slot's next use is
 *     a read or it crosses the boundary).  Milestones are the ops at whose
 *     begin an event is due.
 */
#include "planner/plan_impl.h"
#include "planner/staging/stage_plan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"

#define STG_PROMOTE_WORK_MAX 50000000ull /* boundary slots x curve points */

const char *plan_stage_kind_name(plan_stage_kind k)
{
    static const char *const names[PLAN_STAGE__COUNT] = {"fill", "alloc",
                                                         "write", "evict"};
    return (unsigned)k < PLAN_STAGE__COUNT ? names[k] : "?";
}

void plan_staging_free(plan_staging *p)
{
    if (!p)
        return;
    free(p->start_in_ddr);
    free(p->events);
    free(p->milestones);
    free(p->pos_ddr);
    free(p->op_start_us);
    free(p);
}

/* ------------------------------------------------------------ simulation */

typedef struct xfer {
    double start, end;
    uint32_t storage;
} xfer;

typedef struct sim_rec {
    double *op_end;          /* n_ops */
    xfer *x;                 /* transfers in issue order */
    size_t n_x, cap_x;
    int oom;
    /* DDR curve of a derived plan: (t, bytes) after each change */
    double *ct;
    uint64_t *cb;
    size_t n_c, cap_c;
} sim_rec;

static void rec_op(void *ctx, uint32_t op, double start, double end)
{
    sim_rec *r = ctx;
    (void)start;
    r->op_end[op] = end;
}

static void rec_xfer(void *ctx, int dir, uint32_t storage, double start,
                     double end, uint64_t bytes)
{
    sim_rec *r = ctx;
    (void)dir;
    (void)bytes;
    if (r->oom)
        return;
    if (r->n_x == r->cap_x) {
        size_t nc = r->cap_x ? r->cap_x * 2 : 256;
        xfer *nx = realloc(r->x, nc * sizeof(*nx));
        if (!nx) {
            r->oom = 1;
            return;
        }
        r->x = nx;
        r->cap_x = nc;
    }
    r->x[r->n_x++] = (xfer){start, end, storage};
}

static void rec_dev(void *ctx, double t, uint64_t bytes)
{
    sim_rec *r = ctx;
    if (r->oom)
        return;
    if (r->n_c == r->cap_c) {
        size_t nc = r->cap_c ? r->cap_c * 2 : 256;
        double *nt = realloc(r->ct, nc * sizeof(*nt));
        if (!nt) {
            r->oom = 1;
            return;
        }
        r->ct = nt;
        uint64_t *nb = realloc(r->cb, nc * sizeof(*nb));
        if (!nb) {
            r->oom = 1;
            return;
        }
        r->cb = nb;
        r->cap_c = nc;
    }
    r->ct[r->n_c] = t;
    r->cb[r->n_c] = bytes;
    r->n_c++;
}

/* ------------------------------------------------------------ uses */

typedef struct use {
    uint32_t slot;
    uint32_t a, b;           /* ops covered, a <= b */
    bool write;
} use;

/* First op j >= a whose end is >= t (the op during which t falls). */
static uint32_t op_at(const double *op_end, uint32_t n, uint32_t a, double t)
{
    uint32_t lo = a, hi = n - 1;
    if (op_end[hi] < t)
        return hi;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (op_end[mid] >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* ------------------------------------------------------------ derived */

/* Build the derived trace.  boundary[k]: the slot crosses the step
 * boundary; device[k]: and stays in DDR across it. */
static int build_derived(const plan_staging_input *in, const double *op_end,
                         const use *uses, size_t n_uses,
                         const uint8_t *boundary, const uint8_t *device,
                         plan_trace **ret, char *err, size_t errlen)
{
    const plan_trace *t = in->trace;
    uint32_t n = t->n_ops;
    plan_link link = {.h2d_gbps = in->flash_read_gbps,
                      .d2h_gbps = in->flash_write_gbps,
                      .latency_us = in->flash_latency_us,
                      .duplex = false};
    plan_trace *d = plan_trace_new("staging", &link);
    uint32_t *cnt = NULL, *start = NULL, *ref = NULL, *rd = NULL, *wr = NULL;
    uint32_t *mark = NULL;
    int rc = -ENOMEM;
    if (!d)
        goto out;
    for (uint32_t k = 0; k < in->n_slots; k++) {
        plan_storage s = {.id = k, .bytes = in->slot_bytes[k],
                          .kind = PLAN_KIND_OTHER,
                          .initial = !boundary[k] ? PLAN_INIT_NONE
                                     : device[k] ? PLAN_INIT_DEVICE
                                                 : PLAN_INIT_HOST,
                          .retained = boundary[k] != 0,
                          .pinned = false};
        rc = plan_trace_add_storage(d, &s, NULL, err, errlen);
        if (rc < 0)
            goto out;
    }
    /* CSR of (op -> slot refs), the write flag in the top bit. */
    cnt = calloc((size_t)n + 1, sizeof(*cnt));
    if (!cnt)
        goto out;
    uint64_t total = 0;
    for (size_t u = 0; u < n_uses; u++) {
        total += (uint64_t)uses[u].b - uses[u].a + 1;
        if (total > PLAN_MAX_REFS) {
            rc = ho_errf(err, errlen, -E2BIG, "the staging problem has "
                           "more than %u slot uses over ops", PLAN_MAX_REFS);
            goto out;
        }
        for (uint32_t i = uses[u].a; i <= uses[u].b; i++)
            cnt[i]++;
    }
    start = malloc(((size_t)n + 1) * sizeof(*start));
    ref = malloc((total ? total : 1) * sizeof(*ref));
    mark = malloc((in->n_slots ? in->n_slots : 1) * sizeof(*mark));
    if (!start || !ref || !mark)
        goto out;
    start[0] = 0;
    for (uint32_t i = 0; i < n; i++)
        start[i + 1] = start[i] + cnt[i];
    memset(cnt, 0, ((size_t)n + 1) * sizeof(*cnt));
    for (size_t u = 0; u < n_uses; u++)
        for (uint32_t i = uses[u].a; i <= uses[u].b; i++)
            ref[start[i] + cnt[i]++] =
                uses[u].slot | (uses[u].write ? 0x80000000u : 0);
    uint32_t max_op = 0;
    for (uint32_t i = 0; i < n; i++)
        if (cnt[i] > max_op)
            max_op = cnt[i];
    if (max_op > PLAN_MAX_OP_REFS) {
        rc = ho_errf(err, errlen, -E2BIG, "an op overlaps %u copies of "
                       "host copies, above %u", max_op, PLAN_MAX_OP_REFS);
        goto out;
    }
    rd = malloc((max_op ? max_op : 1) * sizeof(*rd));
    wr = malloc((max_op ? max_op : 1) * sizeof(*wr));
    if (!rd || !wr)
        goto out;
    /* mark[k]: 1 read, 2 write in the current op; 4: the slot was
     * accessed by an earlier op */
    memset(mark, 0, (in->n_slots ? in->n_slots : 1) * sizeof(*mark));
    double prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nr = 0, nw = 0;
        for (uint32_t k = start[i]; k < start[i + 1]; k++) {
            uint32_t sl = ref[k] & 0x7fffffffu;
            mark[sl] |= (ref[k] & 0x80000000u) ? 2u : 1u;
        }
        for (uint32_t k = start[i]; k < start[i + 1]; k++) {
            uint32_t sl = ref[k] & 0x7fffffffu;
            uint32_t f = mark[sl];
            if (!(f & 3u))
                continue;
            /* A prefetch and a store overlapping in one op: the op reads
             * the copy (it must hold its data) and writes it -- except
             * at the first access of a copy whose data starts in this
             * step, where there is nothing to read yet. */
            bool first_in_step = !(f & 4u) && !boundary[sl];
            if ((f & 1u) && !((f & 2u) && first_in_step))
                rd[nr++] = sl;
            if (f & 2u)
                wr[nw++] = sl;
            mark[sl] = 4u;
        }
        double dur = op_end[i] - prev;
        if (!(dur >= 0))
            dur = 0;
        prev = op_end[i];
        rc = plan_trace_add_op(d, plan_op_name(t, i), dur, rd, nr, wr, nw,
                               err, errlen);
        if (rc < 0)
            goto out;
    }
    rc = plan_trace_finish(d, err, errlen);
    if (rc < 0) {
        /* A host copy read before any write in the step. */
        rc = HO_E_BAD_SCHEDULE;
        goto out;
    }
    *ret = d;
    d = NULL;
    rc = 0;
out:
    plan_trace_free(d);
    free(cnt);
    free(start);
    free(ref);
    free(rd);
    free(wr);
    free(mark);
    return rc;
}

/* ------------------------------------------------------------ events */

typedef struct ev_vec {
    plan_stage_event *v;
    uint32_t n, cap;
} ev_vec;

static int ev_push(ev_vec *e, uint32_t pos, uint32_t slot, int kind,
                   int keep)
{
    if (e->n == e->cap) {
        uint32_t nc = e->cap ? e->cap * 2 : 64;
        if (nc < e->cap)
            return -E2BIG;
        plan_stage_event *nv = realloc(e->v, (size_t)nc * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        e->v = nv;
        e->cap = nc;
    }
    e->v[e->n++] = (plan_stage_event){pos, slot, (uint8_t)kind,
                                      (uint8_t)keep};
    return 0;
}

/* Is slot k's data needed from op `from` on (its next access there is a
 * read, or it has none left and crosses the step boundary)? */
static bool live_from(const plan_trace *d, uint32_t k, uint32_t from)
{
    for (uint32_t a = d->acc_start[k]; a < d->acc_start[k + 1]; a++) {
        if (d->acc[a].op < from)
            continue;
        return (d->acc[a].flags & PLAN_ACC_WRITE) == 0;
    }
    return d->storages[k].retained;
}

/* Walk the derived schedule as the model executes it. */
static int make_events(const plan_trace *d, const plan_schedule *s,
                       plan_staging *p)
{
    ev_vec e = {0};
    uint32_t n = d->n_ops;
    uint8_t *on = calloc(d->n_storages ? d->n_storages : 1, 1);
    int rc = -ENOMEM;
    if (!on)
        goto fail;
    for (uint32_t k = 0; k < d->n_storages; k++)
        on[k] = d->storages[k].initial == PLAN_INIT_DEVICE;
    size_t ai = 0;
    for (uint32_t i = 0; i < n; i++) {
        const plan_op *o = &d->ops[i];
        const uint32_t *reads = d->refs + o->first_ref;
        const uint32_t *writes = reads + o->n_reads;
        for (int w = 0; w < 2; w++) {
            uint32_t pos = 2 * i + (uint32_t)w;
            for (; ai < s->n_actions && s->actions[ai].op == i &&
                   s->actions[ai].when == w;
                 ai++) {
                const plan_action *a = &s->actions[ai];
                uint32_t k = a->storage;
                switch (a->kind) {
                case PLAN_ACT_PREFETCH:
                    rc = ev_push(&e, pos, k, PLAN_STAGE_FILL, 0);
                    on[k] = 1;
                    break;
                case PLAN_ACT_STORE:
                    rc = ev_push(&e, pos, k, PLAN_STAGE_WRITE, 0);
                    break;
                case PLAN_ACT_FREE_DEVICE:
                    rc = ev_push(&e, pos, k, PLAN_STAGE_EVICT,
                                 live_from(d, k, i + (uint32_t)w) ? 1 : 0);
                    on[k] = 0;
                    break;
                default:
                    rc = 0;
                    break;
                }
                if (rc < 0)
                    goto fail;
            }
            if (w == 0) {
                /* writes of slots not in DDR allocate them */
                for (uint32_t q = 0; q < o->n_writes; q++)
                    if (!on[writes[q]]) {
                        rc = ev_push(&e, pos, writes[q], PLAN_STAGE_ALLOC, 0);
                        if (rc < 0)
                            goto fail;
                        on[writes[q]] = 1;
                    }
            }
        }
        /* implicit frees after the last access of non-retained slots */
        for (uint32_t q = 0; q < o->n_reads + o->n_writes; q++) {
            uint32_t k = reads[q];
            if (!on[k] || d->storages[k].retained ||
                plan_last_access(d, k) != i)
                continue;
            rc = ev_push(&e, 2 * i + 1, k, PLAN_STAGE_EVICT, 0);
            if (rc < 0)
                goto fail;
            on[k] = 0;
        }
    }
    free(on);
    p->events = e.v;
    p->n_events = e.n;
    return 0;
fail:
    free(on);
    free(e.v);
    return rc;
}

/* ------------------------------------------------------------ promotion */

/* Max of the curve over [t0, t1] (the value in force at t0 included). */
static uint64_t curve_max(const sim_rec *r, const uint64_t *add, double t0,
                          double t1)
{
    uint64_t m = 0;
    for (size_t i = 0; i < r->n_c; i++) {
        double ts = r->ct[i];
        double te = i + 1 < r->n_c ? r->ct[i + 1] : INFINITY;
        if (te <= t0 || ts > t1)
            continue;
        uint64_t v = r->cb[i] + add[i];
        if (v > m)
            m = v;
    }
    return m;
}

static void curve_add(const sim_rec *r, uint64_t *add, double t0, double t1,
                      uint64_t bytes)
{
    for (size_t i = 0; i < r->n_c; i++) {
        double ts = r->ct[i];
        double te = i + 1 < r->n_c ? r->ct[i + 1] : INFINITY;
        if (te <= t0 || ts > t1)
            continue;
        add[i] += bytes;
    }
}

typedef struct wrap {
    uint32_t slot;
    double head_end;     /* step start .. first use */
    double tail_start;   /* last use .. step end */
    double len;
} wrap;

static int wrap_cmp(const void *a, const void *b)
{
    const wrap *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* ------------------------------------------------------------ main */

/* Plan the derived trace; on success *ret_s and metrics.  The DDR curve
 * goes to rec when not NULL. */
static int plan_derived(const plan_trace *d, uint64_t limit,
                        plan_schedule **ret_s, plan_metrics *ret_m,
                        plan_result *res, sim_rec *curve)
{
    plan_options opt = {.planner = "hoplan"};
    plan_schedule *s = NULL;
    memset(res, 0, sizeof(*res));
    int rc = plan_make(d, limit, &opt, &s, res);
    if (rc < 0)
        return rc;
    plan_violation v;
    plan_sim_observer obs = {.ctx = curve, .device_bytes = rec_dev};
    rc = plan_simulate(d, s, ret_m, &v, curve ? &obs : NULL);
    if (rc == 0 && curve && curve->oom)
        rc = -ENOMEM;
    if (rc < 0) {
        plan_schedule_free(s);
        return rc == HO_E_BAD_SCHEDULE ? HO_E_INTERNAL : rc;
    }
    *ret_s = s;
    return 0;
}

int plan_staging_make(const plan_staging_input *in, plan_staging **ret,
                      uint64_t *ret_min_limit, char *err, size_t errlen)
{
    const plan_trace *t = in ? in->trace : NULL;
    plan_staging *p = NULL;
    sim_rec rec;
    use *uses = NULL;
    uint32_t *slot_of = NULL;
    uint8_t *boundary = NULL, *device = NULL, *init = NULL;
    uint64_t *add = NULL;
    wrap *wraps = NULL;
    plan_trace *dB = NULL, *dA = NULL;
    plan_schedule *sB = NULL, *sA = NULL;
    size_t n_uses = 0;
    int rc;

    memset(&rec, 0, sizeof(rec));
    if (!in || !t || !t->finished || !in->sched || !ret ||
        (in->n_slots && (!in->slot_storage || !in->slot_bytes)))
        return ho_errf(err, errlen, -EINVAL, "missing input");
    if (in->n_slots > t->n_storages)
        return ho_errf(err, errlen, -EINVAL, "%u slots for %u storages",
                         in->n_slots, t->n_storages);
    if (!(in->flash_read_gbps > 0) || !(in->flash_write_gbps > 0) ||
        !(in->flash_latency_us >= 0) || !isfinite(in->flash_read_gbps) ||
        !isfinite(in->flash_write_gbps) || !isfinite(in->flash_latency_us))
        return ho_errf(err, errlen, -EINVAL, "flash bandwidths must be "
                         "positive and the latency non-negative");

    p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->n_slots = in->n_slots;
    p->n_ops = t->n_ops;
    p->ddr_limit = in->ddr_limit;
    p->start_in_ddr = calloc(in->n_slots ? in->n_slots : 1, 1);
    p->milestones = calloc(((size_t)t->n_ops + 63) / 64 + 1, 8);
    slot_of = malloc((t->n_storages ? t->n_storages : 1) * sizeof(*slot_of));
    init = malloc(t->n_storages ? t->n_storages : 1);
    if (!p->start_in_ddr || !p->milestones || !slot_of || !init) {
        rc = -ENOMEM;
        goto fail;
    }
    /* the schedule's homes decide what starts (and ends) on host */
    rc = plan_schedule_initials(t, in->sched, init);
    if (rc < 0) {
        ho_errf(err, errlen, rc, "the schedule's homes are not bound to "
                "the trace");
        goto fail;
    }
    for (uint32_t i = 0; i < t->n_storages; i++)
        slot_of[i] = PLAN_NONE;
    for (uint32_t k = 0; k < in->n_slots; k++) {
        uint32_t si = in->slot_storage[k];
        if (si >= t->n_storages || slot_of[si] != PLAN_NONE ||
            in->slot_bytes[k] == 0 ||
            in->slot_bytes[k] > PLAN_MAX_STORAGE_BYTES) {
            rc = ho_errf(err, errlen, -EINVAL, "slot %u: bad storage index "
                           "%u or size", k, si);
            goto fail;
        }
        slot_of[si] = k;
        p->total_bytes += in->slot_bytes[k];
    }

    /* Everything fits: no staging. */
    if (p->total_bytes <= in->ddr_limit) {
        memset(p->start_in_ddr, 1, in->n_slots);
        p->peak_ddr_bytes = p->total_bytes;
        goto done;
    }

    /* 1. nominal times */
    rec.op_end = calloc(t->n_ops ? t->n_ops : 1, sizeof(double));
    if (!rec.op_end) {
        rc = -ENOMEM;
        goto fail;
    }
    plan_metrics m;
    plan_violation v;
    plan_sim_observer obs = {.ctx = &rec, .op = rec_op,
                             .transfer = rec_xfer};
    rc = plan_simulate(t, in->sched, &m, &v, &obs);
    if (rc == 0 && rec.oom)
        rc = -ENOMEM;
    if (rc < 0) {
        if (rc == HO_E_BAD_SCHEDULE)
            ho_errf(err, errlen, rc, "the schedule is invalid: %s",
                      v.message);
        goto fail;
    }

    /* 2. uses */
    uses = malloc((rec.n_x ? rec.n_x : 1) * sizeof(*uses));
    boundary = calloc(in->n_slots ? in->n_slots : 1, 1);
    device = calloc(in->n_slots ? in->n_slots : 1, 1);
    if (!uses || !boundary || !device) {
        rc = -ENOMEM;
        goto fail;
    }
    size_t xi = 0;
    for (size_t ai = 0; ai < in->sched->n_actions; ai++) {
        const plan_action *a = &in->sched->actions[ai];
        if (a->kind != PLAN_ACT_PREFETCH && a->kind != PLAN_ACT_STORE)
            continue;
        if (xi >= rec.n_x || rec.x[xi].storage != a->storage) {
            rc = ho_errf(err, errlen, HO_E_INTERNAL, "copy %zu does not "
                           "match the simulator's transfers", ai);
            goto fail;
        }
        const xfer *x = &rec.x[xi++];
        uint32_t k = slot_of[a->storage];
        if (k == PLAN_NONE) {
            if (a->kind == PLAN_ACT_STORE ||
                init[a->storage] == PLAN_INIT_HOST) {
                rc = ho_errf(err, errlen, -EINVAL, "storage %llu needs a "
                               "host copy but has no slot",
                               (unsigned long long)a->storage_id);
                goto fail;
            }
            continue;
        }
        /* From the op of the action's point, after-actions included: the
         * daemon acts when the client enters an op, so a copy issued after
         * op i needs its slot ready when op i begins. */
        uint32_t first = a->op;
        uint32_t last = op_at(rec.op_end, t->n_ops, first, x->end);
        uses[n_uses++] = (use){k, first, last, a->kind == PLAN_ACT_STORE};
    }
    for (uint32_t k = 0; k < in->n_slots; k++)
        boundary[k] = init[in->slot_storage[k]] == PLAN_INIT_HOST;

    /* 3-4. plan B: boundary slots on flash at the boundary */
    rc = build_derived(in, rec.op_end, uses, n_uses, boundary, device, &dB,
                       err, errlen);
    if (rc < 0)
        goto fail;
    plan_result res;
    plan_metrics mB, mA;
    sim_rec curve;
    memset(&curve, 0, sizeof(curve));
    rc = plan_derived(dB, in->ddr_limit, &sB, &mB, &res, &curve);
    if (rc == HO_E_INFEASIBLE) {
        plan_trace_summary sm;
        uint64_t need = res.min_budget;
        if (plan_trace_summarize(dB, &sm) == 0 &&
            sm.max_op_working_set > in->ddr_limit) {
            uint32_t op = sm.max_op_working_set_op;
            ho_errf(err, errlen, rc, "the host copies op %u ('%.60s') "
                      "uses at once take %llu bytes, above the DDR limit of "
                      "%llu bytes (%llu bytes of host copies in all)", op,
                      plan_op_name(t, op),
                      (unsigned long long)sm.max_op_working_set,
                      (unsigned long long)in->ddr_limit,
                      (unsigned long long)p->total_bytes);
            if (need < sm.max_op_working_set)
                need = sm.max_op_working_set;
        } else {
            ho_errf(err, errlen, rc, "no staging plan keeps the host "
                      "copies within the DDR limit of %llu bytes (%llu bytes "
                      "in all); the smallest limit it meets is %llu bytes",
                      (unsigned long long)in->ddr_limit,
                      (unsigned long long)p->total_bytes,
                      (unsigned long long)need);
        }
        if (ret_min_limit)
            *ret_min_limit = need;
        free(curve.ct);
        free(curve.cb);
        goto fail;
    }
    if (rc < 0) {
        free(curve.ct);
        free(curve.cb);
        if (!err || !err[0] || rc == -ENOMEM)
            ho_errf(err, errlen, rc, "planning the staging failed: %s",
                      ho_strerror(rc));
        goto fail;
    }

    /* 5. promotion */
    const plan_trace *dt = dB;
    const plan_schedule *chosen = sB;
    plan_metrics cm = mB;
    uint32_t n_wrap = 0;
    wraps = malloc((in->n_slots ? in->n_slots : 1) * sizeof(*wraps));
    add = calloc(curve.n_c ? curve.n_c : 1, sizeof(*add));
    if (!wraps || !add) {
        free(curve.ct);
        free(curve.cb);
        rc = -ENOMEM;
        goto fail;
    }
    double step_end = mB.step_time_us;
    for (uint32_t k = 0; k < in->n_slots; k++) {
        if (!boundary[k] || dB->acc_start[k] == dB->acc_start[k + 1])
            continue;
        uint32_t f = plan_first_access(dB, k), l = plan_last_access(dB, k);
        double head = f ? rec.op_end[f - 1] : 0;
        double tail = rec.op_end[l];
        wraps[n_wrap++] = (wrap){k, head, tail, head + (step_end - tail)};
    }
    uint32_t promoted = 0;
    if (n_wrap && (uint64_t)n_wrap * curve.n_c <= STG_PROMOTE_WORK_MAX) {
        qsort(wraps, n_wrap, sizeof(*wraps), wrap_cmp);
        for (uint32_t w = 0; w < n_wrap; w++) {
            uint64_t b = in->slot_bytes[wraps[w].slot];
            uint64_t m1 = curve_max(&curve, add, 0, wraps[w].head_end);
            uint64_t m2 = curve_max(&curve, add, wraps[w].tail_start,
                                    INFINITY);
            if (m1 + b > in->ddr_limit || m2 + b > in->ddr_limit)
                continue;
            curve_add(&curve, add, 0, wraps[w].head_end, b);
            curve_add(&curve, add, wraps[w].tail_start, INFINITY, b);
            device[wraps[w].slot] = 1;
            promoted++;
        }
    }
    free(curve.ct);
    free(curve.cb);
    if (promoted) {
        rc = build_derived(in, rec.op_end, uses, n_uses, boundary, device,
                           &dA, err, errlen);
        if (rc < 0)
            goto fail;
        rc = plan_derived(dA, in->ddr_limit, &sA, &mA, &res, NULL);
        if (rc == 0 && mA.h2d_bytes + mA.d2h_bytes <
                           mB.h2d_bytes + mB.d2h_bytes) {
            dt = dA;
            chosen = sA;
            cm = mA;
            p->promoted = promoted;
        } else if (rc < 0 && rc != HO_E_INFEASIBLE) {
            goto fail;
        }
        if (err && errlen)
            err[0] = 0;
    }

    /* 6. events and figures */
    rc = make_events(dt, chosen, p);
    if (rc < 0)
        goto fail;
    for (uint32_t k = 0; k < in->n_slots; k++)
        p->start_in_ddr[k] = dt->storages[k].initial == PLAN_INIT_DEVICE;
    /* residency per position, and the nominal op times */
    p->pos_ddr = malloc((size_t)2 * t->n_ops * sizeof(uint64_t));
    p->op_start_us = malloc(((size_t)t->n_ops + 1) * sizeof(double));
    if (!p->pos_ddr || !p->op_start_us) {
        rc = -ENOMEM;
        goto fail;
    }
    {
        uint64_t cur = 0;
        for (uint32_t k = 0; k < in->n_slots; k++)
            if (p->start_in_ddr[k])
                cur += in->slot_bytes[k];
        uint32_t e = 0;
        for (uint32_t q = 0; q < 2 * t->n_ops; q++) {
            for (; e < p->n_events && p->events[e].pos == q; e++) {
                const plan_stage_event *ev = &p->events[e];
                if (ev->kind == PLAN_STAGE_FILL ||
                    ev->kind == PLAN_STAGE_ALLOC)
                    cur += in->slot_bytes[ev->slot];
                else if (ev->kind == PLAN_STAGE_EVICT)
                    cur -= in->slot_bytes[ev->slot];
            }
            p->pos_ddr[q] = cur;
        }
        for (uint32_t i = 0; i < t->n_ops; i++)
            p->op_start_us[i] = i ? rec.op_end[i - 1] : 0;
        p->op_start_us[t->n_ops] = rec.op_end[t->n_ops - 1];
    }
    p->peak_ddr_bytes = cm.peak_device_bytes;
    p->flash_read_bytes = cm.h2d_bytes;
    p->flash_write_bytes = cm.d2h_bytes;
    for (uint32_t e = 0; e < p->n_events; e++) {
        const plan_stage_event *ev = &p->events[e];
        if (ev->kind != PLAN_STAGE_ALLOC)
            p->n_actions++;
        uint32_t op = ev->pos / 2 + (ev->pos & 1u);
        if (op >= t->n_ops)
            op = 0;
        p->milestones[op >> 6] |= 1ull << (op & 63);
    }
    for (uint32_t op = 0; op < t->n_ops; op++)
        if ((p->milestones[op >> 6] >> (op & 63)) & 1u)
            p->n_milestones++;
    p->exposed_us = cm.exposed_us;

done:
    plan_schedule_free(sA);
    plan_schedule_free(sB);
    plan_trace_free(dA);
    plan_trace_free(dB);
    free(wraps);
    free(add);
    free(uses);
    free(boundary);
    free(device);
    free(slot_of);
    free(init);
    free(rec.op_end);
    free(rec.x);
    *ret = p;
    return 0;
fail:
    plan_schedule_free(sA);
    plan_schedule_free(sB);
    plan_trace_free(dA);
    plan_trace_free(dB);
    free(wraps);
    free(add);
    free(uses);
    free(boundary);
    free(device);
    free(slot_of);
    free(init);
    free(rec.op_end);
    free(rec.x);
    plan_staging_free(p);
    return rc;
}
