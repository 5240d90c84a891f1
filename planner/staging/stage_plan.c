/*
 * planner/staging/stage_plan.c - the staging plan of a replay's host
 * copies between DDR and flash (stage_plan.h; docs/runtime.md).
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
#include "proto/mem.h"

#define STG_PROMOTE_WORK_MAX 50000000ull /* boundary slots x curve points */

const char *plan_stage_kind_name(plan_stage_kind k)
{
    static const char *const names[PLAN_STAGE__COUNT] = {"fill", "alloc",
                                                         "write", "evict"};
    return (unsigned)k < PLAN_STAGE__COUNT ? names[k] : "?";
}

plan_staging *plan_staging_free(plan_staging *p)
{
    if (!p)
        return NULL;
    HO_FREE_ALL(p->start_in_ddr, p->events, p->milestones, p->pos_ddr,
                p->op_start_us, p);
    return NULL;
}

/* ------------------------------------------------------------ simulation */

typedef struct xfer {
    double start, end;
    uint32_t storage;
} xfer;

typedef struct curve_pt {
    double t;
    uint64_t bytes;
} curve_pt;

typedef struct sim_rec {
    double *op_end;          /* n_ops */
    xfer *x;                 /* transfers in issue order */
    size_t n_x, cap_x;
    int oom;
    /* DDR curve of a derived plan: (t, bytes) after each change */
    curve_pt *c;
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
    if (plan_reserve((void **)&r->x, &r->cap_x, r->n_x, sizeof(*r->x)) < 0) {
        r->oom = 1;
        return;
    }
    r->x[r->n_x++] = (xfer){start, end, storage};
}

static void rec_dev(void *ctx, double t, uint64_t bytes)
{
    sim_rec *r = ctx;
    if (r->oom)
        return;
    if (plan_reserve((void **)&r->c, &r->cap_c, r->n_c, sizeof(*r->c)) < 0) {
        r->oom = 1;
        return;
    }
    r->c[r->n_c++] = (curve_pt){t, bytes};
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
    if (op_end[n - 1] < t)
        return n - 1;
    return plan_first_ge(op_end, a, n - 1, t);
}

/* ------------------------------------------------------------ derived */

/* Uses by op in CSR form: op i covers ref[start[i] .. start[i+1]), slot
 * indices with the write flag in the top bit. */
typedef struct op_uses {
    uint32_t *start;         /* n_ops + 1 */
    uint32_t *ref;
    uint32_t max_op;         /* most uses covering one op */
} op_uses;

static void op_uses_done(op_uses *u)
{
    free(u->start);
    free(u->ref);
}

static int uses_by_op(const use *uses, size_t n_uses, uint32_t n,
                      op_uses *ret_u, char *err, size_t errlen)
{
    op_uses u = {NULL, NULL, 0};
    uint32_t *cnt = calloc((size_t)n + 1, sizeof(*cnt));
    uint64_t total = 0;
    int rc = -ENOMEM;

    if (!cnt)
        return -ENOMEM;
    for (size_t k = 0; k < n_uses; k++) {
        total += (uint64_t)uses[k].b - uses[k].a + 1;
        if (total > PLAN_MAX_REFS) {
            rc = ho_errf(err, errlen, -E2BIG, "the staging problem has "
                         "more than %u slot uses over ops", PLAN_MAX_REFS);
            goto fail;
        }
        for (uint32_t i = uses[k].a; i <= uses[k].b; i++)
            cnt[i]++;
    }
    u.start = malloc(((size_t)n + 1) * sizeof(*u.start));
    u.ref = malloc((total ? total : 1) * sizeof(*u.ref));
    if (!u.start || !u.ref)
        goto fail;
    u.start[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        u.start[i + 1] = u.start[i] + cnt[i];
        if (cnt[i] > u.max_op)
            u.max_op = cnt[i];
    }
    if (u.max_op > PLAN_MAX_OP_REFS) {
        rc = ho_errf(err, errlen, -E2BIG, "an op overlaps %u copies of "
                     "host copies, above %u", u.max_op, PLAN_MAX_OP_REFS);
        goto fail;
    }
    memset(cnt, 0, ((size_t)n + 1) * sizeof(*cnt));
    for (size_t k = 0; k < n_uses; k++)
        for (uint32_t i = uses[k].a; i <= uses[k].b; i++)
            u.ref[u.start[i] + cnt[i]++] =
                uses[k].slot | (uses[k].write ? 0x80000000u : 0);
    free(cnt);
    *ret_u = u;
    return 0;
fail:
    free(cnt);
    op_uses_done(&u);
    return rc;
}

/* The derived ops: op i reads or writes the slots whose uses cover it,
 * with the duration of op i in the real step (stalls included). */
static int derived_ops(plan_trace *d, const plan_trace *t,
                       const double *op_end, const op_uses *u,
                       const uint8_t *boundary, uint32_t n_slots, char *err,
                       size_t errlen)
{
    uint32_t *rd = malloc((u->max_op ? u->max_op : 1) * sizeof(*rd));
    uint32_t *wr = malloc((u->max_op ? u->max_op : 1) * sizeof(*wr));
    /* mark[k]: 1 read, 2 write in the current op; 4: the slot was
     * accessed by an earlier op */
    uint32_t *mark = calloc(n_slots ? n_slots : 1, sizeof(*mark));
    double prev = 0;
    int rc = -ENOMEM;

    if (!rd || !wr || !mark)
        goto out;
    for (uint32_t i = 0; i < t->n_ops; i++) {
        uint32_t nr = 0, nw = 0;
        for (uint32_t k = u->start[i]; k < u->start[i + 1]; k++)
            mark[u->ref[k] & 0x7fffffffu] |=
                (u->ref[k] & 0x80000000u) ? 2u : 1u;
        for (uint32_t k = u->start[i]; k < u->start[i + 1]; k++) {
            uint32_t sl = u->ref[k] & 0x7fffffffu;
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
    rc = 0;
out:
    free(rd);
    free(wr);
    free(mark);
    return rc;
}

/* Build the derived trace.  boundary[k]: the slot crosses the step
 * boundary; device[k]: and stays in DDR across it. */
static int build_derived(const plan_staging_input *in, const double *op_end,
                         const use *uses, size_t n_uses,
                         const uint8_t *boundary, const uint8_t *device,
                         plan_trace **ret_trace, char *err, size_t errlen)
{
    plan_link link = {.h2d_gbps = in->flash_read_gbps,
                      .d2h_gbps = in->flash_write_gbps,
                      .latency_us = in->flash_latency_us,
                      .duplex = false};
    plan_trace *d = plan_trace_new("staging", &link);
    op_uses u = {NULL, NULL, 0};
    int rc = -ENOMEM;

    if (!d)
        goto out;
    for (uint32_t k = 0; k < in->n_slots; k++) {
        plan_storage s = {.id = k, .bytes = in->slot_bytes[k],
                          .kind = PLAN_KIND_OTHER,
                          .initial = !boundary[k] ? PLAN_INIT_NONE
                                     : device[k] ? PLAN_INIT_DEVICE
                                                 : PLAN_INIT_HOST,
                          .retained = boundary[k] != 0};
        if ((rc = plan_trace_add_storage(d, &s, NULL, err, errlen)) < 0)
            goto out;
    }
    if ((rc = uses_by_op(uses, n_uses, in->trace->n_ops, &u, err,
                         errlen)) < 0 ||
        (rc = derived_ops(d, in->trace, op_end, &u, boundary, in->n_slots,
                          err, errlen)) < 0)
        goto out;
    if (plan_trace_finish(d, err, errlen) < 0) {
        /* A host copy read before any write in the step. */
        rc = HO_E_BAD_SCHEDULE;
        goto out;
    }
    *ret_trace = d;
    d = NULL;
    rc = 0;
out:
    plan_trace_free(d);
    op_uses_done(&u);
    return rc;
}

/* ------------------------------------------------------------ events */

typedef struct ev_vec {
    plan_stage_event *v;
    size_t n, cap;
} ev_vec;

static int ev_push(ev_vec *e, uint32_t pos, uint32_t slot, int kind,
                   int keep)
{
    if (e->n >= UINT32_MAX)
        return -E2BIG;
    if (plan_reserve((void **)&e->v, &e->cap, e->n, sizeof(*e->v)) < 0)
        return -ENOMEM;
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
    p->n_events = (uint32_t)e.n;
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
        double ts = r->c[i].t;
        double te = i + 1 < r->n_c ? r->c[i + 1].t : INFINITY;
        if (te <= t0 || ts > t1)
            continue;
        uint64_t v = r->c[i].bytes + add[i];
        if (v > m)
            m = v;
    }
    return m;
}

static void curve_add(const sim_rec *r, uint64_t *add, double t0, double t1,
                      uint64_t bytes)
{
    for (size_t i = 0; i < r->n_c; i++) {
        double ts = r->c[i].t;
        double te = i + 1 < r->n_c ? r->c[i + 1].t : INFINITY;
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

/* The state of one plan_staging_make call: inputs, the result being
 * built, and the scratch of the steps (released by stg_done). */
typedef struct stg {
    const plan_staging_input *in;
    const plan_trace *t;
    char *err;
    size_t errlen;
    plan_staging *p;          /* the result; handed over on success */
    uint32_t *slot_of;        /* storage index -> slot, or PLAN_NONE */
    uint8_t *init;            /* effective initials (the schedule's homes) */
    sim_rec rec;              /* nominal op ends and copies (step 1) */
    use *uses;                /* step 2 */
    size_t n_uses;
    uint8_t *boundary;        /* slot crosses the step boundary */
    uint8_t *device;          /* ... and stays in DDR across it (step 5) */
    plan_trace *dB, *dA;      /* derived traces: boundary on flash, promoted */
    plan_schedule *sB, *sA;   /* their hoplan schedules */
    plan_metrics mB;
    sim_rec curve;            /* plan B's DDR curve (promotion) */
} stg;

static void stg_done(stg *x)
{
    plan_schedule_free(x->sA);
    plan_schedule_free(x->sB);
    plan_trace_free(x->dA);
    plan_trace_free(x->dB);
    HO_FREE_ALL(x->uses, x->boundary, x->device, x->slot_of, x->init,
                x->rec.op_end, x->rec.x, x->curve.c);
    plan_staging_free(x->p);
}

static int check_input(const plan_staging_input *in, char *err,
                       size_t errlen)
{
    const plan_trace *t = in ? in->trace : NULL;
    if (!in || !t || !t->finished || !in->sched ||
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
    return 0;
}

/* The result's arrays, the slot of each storage, the total, the
 * effective initials. */
static int map_slots(stg *x)
{
    const plan_staging_input *in = x->in;
    const plan_trace *t = x->t;
    plan_staging *p = calloc(1, sizeof(*p));

    if (!p)
        return -ENOMEM;
    x->p = p;
    p->n_slots = in->n_slots;
    p->n_ops = t->n_ops;
    p->ddr_limit = in->ddr_limit;
    p->start_in_ddr = calloc(in->n_slots ? in->n_slots : 1, 1);
    p->milestones = calloc(((size_t)t->n_ops + 63) / 64 + 1, 8);
    x->slot_of = malloc((t->n_storages ? t->n_storages : 1) *
                        sizeof(*x->slot_of));
    x->init = malloc(t->n_storages ? t->n_storages : 1);
    if (!p->start_in_ddr || !p->milestones || !x->slot_of || !x->init)
        return -ENOMEM;
    /* the schedule's homes decide what starts (and ends) on host */
    int rc = plan_schedule_initials(t, in->sched, x->init);
    if (rc < 0)
        return ho_errf(x->err, x->errlen, rc, "the schedule's homes are "
                       "not bound to the trace");
    for (uint32_t i = 0; i < t->n_storages; i++)
        x->slot_of[i] = PLAN_NONE;
    for (uint32_t k = 0; k < in->n_slots; k++) {
        uint32_t si = in->slot_storage[k];
        if (si >= t->n_storages || x->slot_of[si] != PLAN_NONE ||
            in->slot_bytes[k] == 0 ||
            in->slot_bytes[k] > PLAN_MAX_STORAGE_BYTES)
            return ho_errf(x->err, x->errlen, -EINVAL, "slot %u: bad "
                           "storage index %u or size", k, si);
        x->slot_of[si] = k;
        p->total_bytes += in->slot_bytes[k];
    }
    return 0;
}

/* Step 1: nominal times of the ops and of the copies. */
static int nominal_times(stg *x)
{
    const plan_trace *t = x->t;
    plan_metrics m;
    plan_violation v;
    plan_sim_observer obs = {.ctx = &x->rec, .op = rec_op,
                             .transfer = rec_xfer};

    x->rec.op_end = calloc(t->n_ops ? t->n_ops : 1, sizeof(double));
    if (!x->rec.op_end)
        return -ENOMEM;
    int rc = plan_simulate(t, x->in->sched, &m, &v, &obs);
    if (rc == 0 && x->rec.oom)
        rc = -ENOMEM;
    if (rc == HO_E_BAD_SCHEDULE)
        ho_errf(x->err, x->errlen, rc, "the schedule is invalid: %s",
                v.message);
    return rc;
}

/* Step 2: each copy of a storage with a slot is a use of the slot; the
 * slots of host-started storages cross the step boundary. */
static int collect_uses(stg *x)
{
    const plan_staging_input *in = x->in;
    const plan_trace *t = x->t;
    size_t xi = 0;

    x->uses = malloc((x->rec.n_x ? x->rec.n_x : 1) * sizeof(*x->uses));
    x->boundary = calloc(in->n_slots ? in->n_slots : 1, 1);
    x->device = calloc(in->n_slots ? in->n_slots : 1, 1);
    if (!x->uses || !x->boundary || !x->device)
        return -ENOMEM;
    for (size_t ai = 0; ai < in->sched->n_actions; ai++) {
        const plan_action *a = &in->sched->actions[ai];
        if (a->kind != PLAN_ACT_PREFETCH && a->kind != PLAN_ACT_STORE)
            continue;
        if (xi >= x->rec.n_x || x->rec.x[xi].storage != a->storage)
            return ho_errf(x->err, x->errlen, HO_E_INTERNAL, "copy %zu "
                           "does not match the simulator's transfers", ai);
        const xfer *c = &x->rec.x[xi++];
        uint32_t k = x->slot_of[a->storage];
        if (k == PLAN_NONE) {
            if (a->kind == PLAN_ACT_STORE ||
                x->init[a->storage] == PLAN_INIT_HOST)
                return ho_errf(x->err, x->errlen, -EINVAL, "storage %llu "
                               "needs a host copy but has no slot",
                               (unsigned long long)a->storage_id);
            continue;
        }
        /* From the op of the action's point, after-actions included: the
         * daemon acts when the client enters an op, so a copy issued after
         * op i needs its slot ready when op i begins. */
        uint32_t first = a->op;
        uint32_t last = op_at(x->rec.op_end, t->n_ops, first, c->end);
        x->uses[x->n_uses++] = (use){k, first, last,
                                     a->kind == PLAN_ACT_STORE};
    }
    for (uint32_t k = 0; k < in->n_slots; k++)
        x->boundary[k] = x->init[in->slot_storage[k]] == PLAN_INIT_HOST;
    return 0;
}

/* The message (and *ret_min_limit) when plan B is infeasible. */
static void explain_infeasible(stg *x, const plan_result *res,
                               uint64_t *ret_min_limit)
{
    const plan_staging_input *in = x->in;
    plan_trace_summary sm;
    uint64_t need = res->min_budget;
    int rc = HO_E_INFEASIBLE;

    if (plan_trace_summarize(x->dB, &sm) == 0 &&
        sm.max_op_working_set > in->ddr_limit) {
        uint32_t op = sm.max_op_working_set_op;
        ho_errf(x->err, x->errlen, rc, "the host copies op %u ('%.60s') "
                "uses at once take %llu bytes, above the DDR limit of %llu "
                "bytes (%llu bytes of host copies in all)", op,
                plan_op_name(x->t, op),
                (unsigned long long)sm.max_op_working_set,
                (unsigned long long)in->ddr_limit,
                (unsigned long long)x->p->total_bytes);
        if (need < sm.max_op_working_set)
            need = sm.max_op_working_set;
    } else {
        ho_errf(x->err, x->errlen, rc, "no staging plan keeps the host "
                "copies within the DDR limit of %llu bytes (%llu bytes in "
                "all); the smallest limit it meets is %llu bytes",
                (unsigned long long)in->ddr_limit,
                (unsigned long long)x->p->total_bytes,
                (unsigned long long)need);
    }
    if (ret_min_limit)
        *ret_min_limit = need;
}

/* Steps 3-4: plan B, every boundary slot on flash at the boundary. */
static int plan_boundary_on_flash(stg *x, uint64_t *ret_min_limit)
{
    plan_result res;
    int rc = build_derived(x->in, x->rec.op_end, x->uses, x->n_uses,
                           x->boundary, x->device, &x->dB, x->err,
                           x->errlen);
    if (rc < 0)
        return rc;
    rc = plan_derived(x->dB, x->in->ddr_limit, &x->sB, &x->mB, &res,
                      &x->curve);
    if (rc == HO_E_INFEASIBLE)
        explain_infeasible(x, &res, ret_min_limit);
    else if (rc < 0 && (!x->err || !x->err[0] || rc == -ENOMEM))
        ho_errf(x->err, x->errlen, rc, "planning the staging failed: %s",
                ho_strerror(rc));
    return rc;
}

/* Step 5: keep the boundary slots whose wrap-around gap fits under the
 * limit on plan B's curve in DDR (shortest gaps first); plan again and
 * take that plan when it moves fewer flash bytes.  *dt, *chosen, *cm: the
 * plan taken. */
static int promote(stg *x, const plan_trace **dt,
                   const plan_schedule **chosen, plan_metrics *cm)
{
    const plan_staging_input *in = x->in;
    const sim_rec *curve = &x->curve;
    wrap *wraps = malloc((in->n_slots ? in->n_slots : 1) * sizeof(*wraps));
    uint64_t *add = calloc(curve->n_c ? curve->n_c : 1, sizeof(*add));
    uint32_t n_wrap = 0, promoted = 0;
    int rc = 0;

    *dt = x->dB;
    *chosen = x->sB;
    *cm = x->mB;
    if (!wraps || !add) {
        rc = -ENOMEM;
        goto out;
    }
    double step_end = x->mB.step_time_us;
    for (uint32_t k = 0; k < in->n_slots; k++) {
        if (!x->boundary[k] || x->dB->acc_start[k] == x->dB->acc_start[k + 1])
            continue;
        uint32_t f = plan_first_access(x->dB, k);
        uint32_t l = plan_last_access(x->dB, k);
        double head = f ? x->rec.op_end[f - 1] : 0;
        double tail = x->rec.op_end[l];
        wraps[n_wrap++] = (wrap){k, head, tail, head + (step_end - tail)};
    }
    if (n_wrap && (uint64_t)n_wrap * curve->n_c <= STG_PROMOTE_WORK_MAX) {
        qsort(wraps, n_wrap, sizeof(*wraps), wrap_cmp);
        for (uint32_t w = 0; w < n_wrap; w++) {
            uint64_t b = in->slot_bytes[wraps[w].slot];
            uint64_t m1 = curve_max(curve, add, 0, wraps[w].head_end);
            uint64_t m2 = curve_max(curve, add, wraps[w].tail_start,
                                    INFINITY);
            if (m1 + b > in->ddr_limit || m2 + b > in->ddr_limit)
                continue;
            curve_add(curve, add, 0, wraps[w].head_end, b);
            curve_add(curve, add, wraps[w].tail_start, INFINITY, b);
            x->device[wraps[w].slot] = 1;
            promoted++;
        }
    }
    if (!promoted)
        goto out;
    rc = build_derived(in, x->rec.op_end, x->uses, x->n_uses, x->boundary,
                       x->device, &x->dA, x->err, x->errlen);
    if (rc < 0)
        goto out;
    plan_result res;
    plan_metrics mA;
    rc = plan_derived(x->dA, in->ddr_limit, &x->sA, &mA, &res, NULL);
    if (rc == 0 && mA.h2d_bytes + mA.d2h_bytes <
                       x->mB.h2d_bytes + x->mB.d2h_bytes) {
        *dt = x->dA;
        *chosen = x->sA;
        *cm = mA;
        x->p->promoted = promoted;
    }
    if (rc == HO_E_INFEASIBLE || rc == 0) {
        rc = 0;
        if (x->err && x->errlen)
            x->err[0] = 0;
    }
out:
    free(wraps);
    free(add);
    return rc;
}

/* Step 6: events, the residency per position, the nominal op times and
 * the figures of the plan taken. */
static int fill_result(stg *x, const plan_trace *dt,
                       const plan_schedule *chosen, const plan_metrics *cm)
{
    const plan_staging_input *in = x->in;
    const plan_trace *t = x->t;
    plan_staging *p = x->p;
    int rc = make_events(dt, chosen, p);

    if (rc < 0)
        return rc;
    for (uint32_t k = 0; k < in->n_slots; k++)
        p->start_in_ddr[k] = dt->storages[k].initial == PLAN_INIT_DEVICE;
    p->pos_ddr = malloc((size_t)2 * t->n_ops * sizeof(uint64_t));
    p->op_start_us = malloc(((size_t)t->n_ops + 1) * sizeof(double));
    if (!p->pos_ddr || !p->op_start_us)
        return -ENOMEM;
    uint64_t cur = 0;
    for (uint32_t k = 0; k < in->n_slots; k++)
        if (p->start_in_ddr[k])
            cur += in->slot_bytes[k];
    uint32_t e = 0;
    for (uint32_t q = 0; q < 2 * t->n_ops; q++) {
        for (; e < p->n_events && p->events[e].pos == q; e++) {
            const plan_stage_event *ev = &p->events[e];
            if (ev->kind == PLAN_STAGE_FILL || ev->kind == PLAN_STAGE_ALLOC)
                cur += in->slot_bytes[ev->slot];
            else if (ev->kind == PLAN_STAGE_EVICT)
                cur -= in->slot_bytes[ev->slot];
        }
        p->pos_ddr[q] = cur;
    }
    for (uint32_t i = 0; i < t->n_ops; i++)
        p->op_start_us[i] = i ? x->rec.op_end[i - 1] : 0;
    p->op_start_us[t->n_ops] = x->rec.op_end[t->n_ops - 1];
    p->peak_ddr_bytes = cm->peak_device_bytes;
    p->flash_read_bytes = cm->h2d_bytes;
    p->flash_write_bytes = cm->d2h_bytes;
    for (e = 0; e < p->n_events; e++) {
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
    p->exposed_us = cm->exposed_us;
    return 0;
}

int plan_staging_make(const plan_staging_input *in, plan_staging **ret_plan,
                      uint64_t *ret_min_limit, char *err, size_t errlen)
{
    stg x;
    const plan_trace *dt;
    const plan_schedule *chosen;
    plan_metrics cm;
    int rc = check_input(in, err, errlen);

    if (rc < 0)
        return rc;
    if (!ret_plan)
        return ho_errf(err, errlen, -EINVAL, "missing input");
    memset(&x, 0, sizeof(x));
    x.in = in;
    x.t = in->trace;
    x.err = err;
    x.errlen = errlen;
    if ((rc = map_slots(&x)) < 0)
        goto out;
    if (x.p->total_bytes <= in->ddr_limit) {
        /* everything fits: no staging */
        memset(x.p->start_in_ddr, 1, in->n_slots);
        x.p->peak_ddr_bytes = x.p->total_bytes;
    } else if ((rc = nominal_times(&x)) < 0 ||
               (rc = collect_uses(&x)) < 0 ||
               (rc = plan_boundary_on_flash(&x, ret_min_limit)) < 0 ||
               (rc = promote(&x, &dt, &chosen, &cm)) < 0 ||
               (rc = fill_result(&x, dt, chosen, &cm)) < 0) {
        goto out;
    }
    *ret_plan = x.p;
    x.p = NULL;
out:
    stg_done(&x);
    return rc;
}
