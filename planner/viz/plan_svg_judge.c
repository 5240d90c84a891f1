/* planner/viz/plan_svg_judge.c - see plan_svg.h: figures filled from
 * plan_simulate, the staging plan and the node judge. */
#include "planner/viz/plan_svg.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "planner/viz/plan_svg_impl.h"

/* Per op of a schedule: bit 0 a `wait` before it, bit 1 one after it. */
static uint8_t *wait_flags(const plan_trace *t, const plan_schedule *s)
{
    uint8_t *w = calloc(t->n_ops ? t->n_ops : 1, 1);
    if (!w)
        return NULL;
    for (size_t i = 0; i < s->n_actions; i++) {
        const plan_action *a = &s->actions[i];
        if (a->kind == PLAN_ACT_WAIT && a->op < t->n_ops)
            w[a->op] |= a->when == PLAN_AFTER ? 2 : 1;
    }
    return w;
}

/* The compute lane of one client: ops, and the gaps before them as stalls
 * (and waits, where the schedule waits at that point). */
typedef struct op_track {
    plan_svg *f;
    int g;
    const uint8_t *wf;
    uint32_t n_ops;
    double prev_end;     /* end of the previous op, or the step's start */
    uint32_t prev_op;    /* PLAN_NONE at step start */
} op_track;

static void track_op(op_track *k, uint32_t op, double start, double end)
{
    if (op == 0)
        k->prev_op = PLAN_NONE;
    bool waited = (k->wf[op] & 1) ||
                  (k->prev_op != PLAN_NONE && (k->wf[k->prev_op] & 2));
    if (start > k->prev_end)
        plan_svg_stall(k->f, k->g, PLAN_SVG_STALL, k->prev_end, start);
    if (waited)
        plan_svg_wait(k->f, k->g, k->prev_end, start);
    plan_svg_op(k->f, k->g, start, end);
    k->prev_end = end;
    k->prev_op = op;
}

/* The step ended at t: copies still running stalled it. */
static void track_end(op_track *k, double t)
{
    if (t > k->prev_end)
        plan_svg_stall(k->f, k->g, PLAN_SVG_STALL, k->prev_end, t);
    if (k->prev_op != PLAN_NONE && (k->wf[k->prev_op] & 2))
        plan_svg_wait(k->f, k->g, k->prev_end, t > k->prev_end ? t
                                                              : k->prev_end);
}

/* ------------------------------------------------------------ simulate */

typedef struct sim_ctx {
    op_track k;
    int layer;
} sim_ctx;

static void sim_dev(void *ctx, double t, uint64_t bytes)
{
    sim_ctx *x = ctx;
    plan_svg_mem(x->k.f, x->k.g, x->layer, t, bytes);
}

static void sim_copy(void *ctx, int dir, uint32_t storage, double start,
                     double end, uint64_t bytes)
{
    sim_ctx *x = ctx;
    (void)storage;
    plan_svg_copy(x->k.f, x->k.g, dir ? PLAN_SVG_D2H : PLAN_SVG_H2D,
                  x->layer, start, end, bytes);
}

static void sim_op(void *ctx, uint32_t op, double start, double end)
{
    sim_ctx *x = ctx;
    track_op(&x->k, op, start, end);
}

int plan_svg_add_simulated(plan_svg *f, int g, int layer, const plan_trace *t,
                           const plan_schedule *s, plan_metrics *ret_metrics)
{
    sim_ctx x;
    plan_sim_observer obs = {&x, sim_dev, sim_copy, NULL};
    plan_metrics m;
    plan_violation v;
    int r;

    memset(&x, 0, sizeof x);
    x.k.f = f;
    x.k.g = g;
    x.k.n_ops = t->n_ops;
    x.k.prev_op = PLAN_NONE;
    x.layer = layer ? 1 : 0;
    x.k.wf = wait_flags(t, s);
    if (!x.k.wf)
        return -ENOMEM;
    /* the model next to a measured run: its memory and copies only */
    if (layer == 0)
        obs.op = sim_op;
    memset(&m, 0, sizeof m);
    r = plan_simulate(t, s, &m, &v, &obs);
    if (layer == 0)
        track_end(&x.k, m.step_time_us);
    plan_svg_mem_end(f, g, x.layer, m.step_time_us);
    free((void *)x.k.wf);
    if (ret_metrics)
        *ret_metrics = m;
    return r;
}

/* ------------------------------------------------------------ staging */

void plan_svg_add_staging(plan_svg *f, int g, const plan_staging *p,
                          const uint64_t *slot_bytes, double read_gbps,
                          double write_gbps, double latency_us)
{
    double free_at[2] = {0, 0};
    if (!p || !p->op_start_us || !slot_bytes || p->n_ops == 0)
        return;
    for (uint32_t i = 0; i < p->n_events; i++) {
        const plan_stage_event *e = &p->events[i];
        int out;
        if (e->kind == PLAN_STAGE_FILL)
            out = 0;
        else if (e->kind == PLAN_STAGE_WRITE)
            out = 1; /* an EVICT follows the WRITE that made flash current */
        else
            continue;
        if (e->slot >= p->n_slots)
            continue;
        uint32_t op = e->pos / 2;
        if (op >= p->n_ops)
            op = p->n_ops - 1;
        double t = p->op_start_us[op + (e->pos & 1)];
        double gbps = out ? write_gbps : read_gbps;
        double dur = latency_us + (double)slot_bytes[e->slot] /
                                      ((gbps > 0 ? gbps : 1) * 1e3);
        /* one flash device: its copies one after another per direction */
        double start = t > free_at[out] ? t : free_at[out];
        free_at[out] = start + dur;
        plan_svg_copy(f, g, out ? PLAN_SVG_FLASH_OUT : PLAN_SVG_FLASH_IN, 0,
                      start, start + dur, slot_bytes[e->slot]);
    }
}

/* ------------------------------------------------------------ node */

typedef struct node_client {
    op_track k;
    double w0, w1;        /* its last step */
    bool pend;            /* a device-bytes value before w0 */
    uint64_t pend_bytes;
    bool mem_started, seen;
    double end;           /* end of its last step */
    uint32_t dev;         /* device index */
    double rate[2];
} node_client;

typedef struct node_ctx {
    plan_svg *f;
    const plan_node *node;
    node_client *c;
    uint32_t n;
    int *link_g;          /* per node link: its figure row group */
    double *link_rate;    /* per node link and dir: current sum */
} node_ctx;

static bool in_win(const node_client *c, double t)
{
    return t >= c->w0 && t <= c->w1;
}

static void nd_dev(void *ctx, uint32_t ci, double t, uint64_t bytes)
{
    node_ctx *x = ctx;
    node_client *c = &x->c[ci];
    if (t < c->w0) {
        c->pend = true;
        c->pend_bytes = bytes;
        return;
    }
    if (t > c->w1)
        return;
    if (!c->mem_started && c->pend)
        plan_svg_mem(x->f, c->k.g, 0, c->w0, c->pend_bytes);
    c->mem_started = true;
    plan_svg_mem(x->f, c->k.g, 0, t, bytes);
}

static void nd_copy(void *ctx, uint32_t ci, int dir, uint32_t storage,
                    double start, double end, uint64_t bytes)
{
    node_ctx *x = ctx;
    node_client *c = &x->c[ci];
    (void)storage;
    if (end < c->w0 || start > c->w1)
        return;
    plan_svg_copy(x->f, c->k.g, dir ? PLAN_SVG_D2H : PLAN_SVG_H2D, 0, start,
                  end, bytes);
}

static void nd_rate(void *ctx, uint32_t ci, int dir, double t, double rate)
{
    node_ctx *x = ctx;
    node_client *c = &x->c[ci];
    double d = rate - c->rate[dir];
    c->rate[dir] = rate;
    uint32_t l = x->node->devices[c->dev].parent;
    for (uint32_t hop = 0; l != PLAN_NONE && l < x->node->n_links &&
                           hop <= PLAN_NODE_MAX_DEPTH; hop++) {
        double *sum = &x->link_rate[2 * l + dir];
        *sum += d;
        if (*sum < 1e-12)
            *sum = 0;
        plan_svg_link_rate(x->f, x->link_g[l], dir, t, *sum);
        l = x->node->links[l].parent;
    }
}

static void nd_op(void *ctx, uint32_t ci, uint32_t op, double start,
                  double end)
{
    node_ctx *x = ctx;
    node_client *c = &x->c[ci];
    if (!c->seen) {
        /* the first op drawn: nothing before it is known */
        c->k.prev_end = start;
        c->seen = true;
    }
    if (!in_win(c, start))
        return;
    track_op(&c->k, op, start, end);
}

static void nd_alloc(void *ctx, uint32_t ci, double t0, double t1)
{
    node_ctx *x = ctx;
    node_client *c = &x->c[ci];
    if (t1 < c->w0 || t0 > c->w1)
        return;
    plan_svg_stall(x->f, c->k.g, PLAN_SVG_ALLOC, t0, t1);
}

void plan_svg_node_window(const plan_node_result *res, double *ret_t0,
                          double *ret_t1)
{
    double t0 = HUGE_VAL, t1 = -HUGE_VAL;
    for (uint32_t i = 0; res && i < res->n_clients; i++) {
        const plan_node_client_fig *c = &res->clients[i];
        double e = c->start_us + c->step_time_us;
        if (c->start_us < t0)
            t0 = c->start_us;
        if (e > t1)
            t1 = e;
        if (c->end_us > t1)
            t1 = c->end_us;
    }
    if (!(t1 > t0)) {
        t0 = 0;
        t1 = 1;
    }
    *ret_t0 = t0;
    *ret_t1 = t1;
}

int plan_svg_add_node(plan_svg *f, const plan_node *node,
                      const plan_node_input *in, uint32_t n,
                      const plan_node_opts *opt, const plan_node_result *res)
{
    node_ctx x;
    plan_node_observer obs = {&x, nd_dev, nd_copy, nd_rate, nd_op, nd_alloc};
    plan_node_result *again = NULL;
    plan_node_violation v;
    int r = 0;

    if (!res || res->n_clients != n)
        return -EINVAL;
    memset(&x, 0, sizeof x);
    x.f = f;
    x.node = node;
    x.n = n;
    x.c = calloc(n ? n : 1, sizeof *x.c);
    x.link_g = calloc(node->n_links ? node->n_links : 1, sizeof *x.link_g);
    x.link_rate = calloc(2 * (node->n_links ? node->n_links : 1),
                         sizeof *x.link_rate);
    if (!x.c || !x.link_g || !x.link_rate) {
        r = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < n && r == 0; i++) {
        const plan_node_client_fig *cf = &res->clients[i];
        const plan_node_device *d = &node->devices[in[i].device];
        node_client *c = &x.c[i];
        char label[600], note[512];
        snprintf(label, sizeof label, "%s (device %u %s)",
                 in[i].name ? in[i].name : "client", d->id, d->name);
        snprintf(note, sizeof note, "step %.1f ms, compute %.1f ms, exposed "
                 "%.1f ms, alloc wait %.1f ms, slowdown %.3f",
                 cf->step_time_us / 1e3, cf->compute_us / 1e3,
                 cf->exposed_us / 1e3, cf->alloc_wait_us / 1e3,
                 cf->slowdown);
        c->k.f = f;
        c->k.g = plan_svg_group(f, label, in[i].budget_bytes, 0);
        if (c->k.g == -ENOMEM) {
            r = -ENOMEM;
            break;
        }
        plan_svg_group_note(f, c->k.g, note);
        c->k.n_ops = in[i].trace->n_ops;
        c->k.prev_op = PLAN_NONE;
        c->k.wf = wait_flags(in[i].trace, in[i].schedule);
        if (!c->k.wf) {
            r = -ENOMEM;
            break;
        }
        /* everything in the window: the link rows show all of it */
        plan_svg_node_window(res, &c->w0, &c->w1);
        c->end = cf->start_us + cf->step_time_us;
        c->dev = in[i].device;
    }
    for (uint32_t l = 0; l < node->n_links && r == 0; l++) {
        const plan_node_link *L = &node->links[l];
        char label[300];
        snprintf(label, sizeof label, "%s", L->name);
        x.link_g[l] = plan_svg_link(f, label, L->h2d_gbps * 1e3,
                                    L->d2h_gbps * 1e3, L->duplex);
        if (x.link_g[l] == -ENOMEM)
            r = -ENOMEM;
    }
    if (r == 0)
        r = plan_node_judge_observed(node, in, n, opt, &obs, &again, &v);
    for (uint32_t i = 0; r == 0 && i < n; i++) {
        /* the last step's end: copies draining, a sync group's barrier */
        track_end(&x.c[i].k, x.c[i].end);
        plan_svg_mem_end(f, x.c[i].k.g, 0, x.c[i].end);
    }
out:
    plan_node_result_free(again);
    for (uint32_t i = 0; x.c && i < n; i++)
        free((void *)x.c[i].k.wf);
    free(x.c);
    free(x.link_g);
    free(x.link_rate);
    return r;
}

/* ------------------------------------------------------------ one plan */

/* The host copies the daemon would keep for s (docs/runtime.md): every
 * storage the schedule stores or that starts on host. */
static int staging_slots(const plan_trace *t, const plan_schedule *s,
                         uint32_t **ret_st, uint64_t **ret_b,
                         uint32_t *ret_n)
{
    uint8_t *init = malloc(t->n_storages ? t->n_storages : 1);
    uint8_t *want = calloc(t->n_storages ? t->n_storages : 1, 1);
    uint32_t *st = NULL;
    uint64_t *b = NULL;
    uint32_t n = 0;
    int r;

    if (!init || !want) {
        r = -ENOMEM;
        goto out;
    }
    r = plan_schedule_initials(t, s, init);
    if (r < 0)
        goto out;
    for (uint32_t i = 0; i < t->n_storages; i++)
        want[i] = init[i] == PLAN_INIT_HOST;
    for (size_t i = 0; i < s->n_actions; i++)
        if (s->actions[i].kind == PLAN_ACT_STORE &&
            s->actions[i].storage < t->n_storages)
            want[s->actions[i].storage] = 1;
    st = malloc(sizeof *st * (t->n_storages ? t->n_storages : 1));
    b = malloc(sizeof *b * (t->n_storages ? t->n_storages : 1));
    if (!st || !b) {
        r = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < t->n_storages; i++)
        if (want[i]) {
            st[n] = i;
            b[n++] = t->storages[i].bytes;
        }
    *ret_st = st;
    *ret_b = b;
    *ret_n = n;
    st = NULL;
    b = NULL;
    r = 0;
out:
    free(init);
    free(want);
    free(st);
    free(b);
    return r;
}

int plan_svg_plan_write(FILE *out, const plan_trace *t,
                        const plan_schedule *s, const plan_svg_plan_opts *o)
{
    plan_svg_plan_opts def = {0};
    plan_metrics m;
    plan_violation v;
    plan_staging *sp = NULL;
    uint32_t *slot_st = NULL, n_slots = 0;
    uint64_t *slot_b = NULL;
    plan_trace_summary sm;
    char title[400], sub[1100], b1[32], b2[32], b3[32], b4[32], stage[400];
    plan_svg *f = NULL;
    int g, r;

    if (!o)
        o = &def;
    memset(&m, 0, sizeof m);
    /* the time axis is the step's: judge once without a picture */
    r = plan_simulate(t, s, &m, &v, NULL);
    if (r < 0 && r != HO_E_BAD_SCHEDULE)
        return r;
    if (plan_trace_summarize(t, &sm) < 0)
        memset(&sm, 0, sizeof sm);
    stage[0] = 0;
    if (o->ddr_limit > 0 && r == 0) {
        int q = staging_slots(t, s, &slot_st, &slot_b, &n_slots);
        if (q == 0) {
            plan_staging_input in = {t, s, slot_st, slot_b, n_slots,
                                     o->ddr_limit,
                                     o->flash_read_gbps > 0
                                         ? o->flash_read_gbps : 6.0,
                                     o->flash_write_gbps > 0
                                         ? o->flash_write_gbps : 4.0,
                                     o->flash_latency_us};
            char err[256] = "";
            q = plan_staging_make(&in, &sp, NULL, err, sizeof err);
            if (q < 0)
                snprintf(stage, sizeof stage, "; flash staging for DDR %s: "
                         "%s", plan_svg_iec((double)o->ddr_limit, b1,
                                            sizeof b1),
                         err[0] ? err : "failed");
            else
                snprintf(stage, sizeof stage, "; flash staging within DDR "
                         "%s: %s in, %s out", plan_svg_iec(
                             (double)o->ddr_limit, b1, sizeof b1),
                         plan_svg_iec((double)sp->flash_read_bytes, b2,
                                      sizeof b2),
                         plan_svg_iec((double)sp->flash_write_bytes, b3,
                                      sizeof b3));
        }
    }
    snprintf(title, sizeof title, "%s: %s plan for a budget of %s",
             o->title ? o->title : t->name, s->planner,
             plan_svg_iec((double)s->budget_bytes, b1, sizeof b1));
    snprintf(sub, sizeof sub, "peak %s, step %.3f ms, compute %.3f ms, "
             "exposed %.3f ms; H2D %s, D2H %s; link %.1f/%.1f GB/s%s%s%s",
             plan_svg_iec((double)m.peak_device_bytes, b1, sizeof b1),
             m.step_time_us / 1e3, m.compute_us / 1e3, m.exposed_us / 1e3,
             plan_svg_iec((double)m.h2d_bytes, b2, sizeof b2),
             plan_svg_iec((double)m.d2h_bytes, b3, sizeof b3),
             t->link.h2d_gbps, t->link.d2h_gbps,
             r == 0 ? "" : "; INVALID: ", r == 0 ? "" : v.message, stage);
    f = plan_svg_new(title, sub, 0, m.step_time_us);
    if (!f) {
        r = -ENOMEM;
        goto out;
    }
    plan_svg_series_names(f, "device memory (execution model)", NULL);
    snprintf(title, sizeof title, "%s (%u ops, %u storages)", t->name,
             t->n_ops, t->n_storages);
    g = plan_svg_group(f, title, s->budget_bytes, sm.no_offload_peak);
    if (g < 0) {
        r = g;
        goto out;
    }
    snprintf(sub, sizeof sub, "%zu actions, peak host %s", s->n_actions,
             plan_svg_iec((double)m.peak_host_bytes, b4, sizeof b4));
    plan_svg_group_note(f, g, sub);
    plan_svg_add_simulated(f, g, 0, t, s, NULL);
    if (sp)
        plan_svg_add_staging(f, g, sp, slot_b,
                             o->flash_read_gbps > 0 ? o->flash_read_gbps : 6.0,
                             o->flash_write_gbps > 0 ? o->flash_write_gbps
                                                     : 4.0,
                             o->flash_latency_us);
    r = plan_svg_write(f, out);
out:
    plan_svg_free(f);
    plan_staging_free(sp);
    free(slot_st);
    free(slot_b);
    return r;
}

typedef struct plan_args {
    const plan_trace *t;
    const plan_schedule *s;
    const plan_svg_plan_opts *o;
} plan_args;

static int write_plan(const void *arg, FILE *out)
{
    const plan_args *a = arg;
    return plan_svg_plan_write(out, a->t, a->s, a->o);
}

int plan_svg_plan_file(const char *path, const plan_trace *t,
                       const plan_schedule *s, const plan_svg_plan_opts *o)
{
    plan_args a = {t, s, o};
    return plan_svg_to_file(path, write_plan, &a);
}
