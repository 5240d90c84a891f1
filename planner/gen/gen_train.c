/*
 * planner/gen/gen_train.c - one training step of a decoder-only transformer
 * (PLANNER.md §6, docs/formats.md "Training generator").
 *
 * For each micro-batch: input, embedding, per layer [RMSNorm, QKV, flash
 * attention, output projection, residual, RMSNorm, gated (SwiGLU) or GELU
 * MLP, residual], final norm, LM head, loss; then the backward pass in
 * reverse order.  Weight gradients are written by the first micro-batch's
 * backward and read+written (accumulated) by the later ones.  After the
 * last micro-batch an Adam update per parameter tensor, if asked.
 *
 * Saved activations per layer (elements of the token count T = seq x mbs):
 * layer input x, norm output, Q, K, V, attention output, softmax
 * log-sum-exp (fp32, per head), mid residual, norm output, and the MLP's
 * two (GELU) or three (SwiGLU) ffn-wide tensors:
 * (6 + 2 kv/h + 3 ffn/h) T h elements, 32 T h bytes for LLaMA-2-7B in
 * bf16, in line with the ~34 s b h of workloads/README.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/gen/gen_private.h"
#include "proto/errfmt.h"
#include "hyperoffload/errors.h"

/* One parameter tensor and what belongs to it. */
typedef struct tparam {
    char name[24];
    uint64_t elems;
    uint32_t p, g, m, v, master; /* storage indices (master: PLAN_NONE) */
} tparam;

/* Indices into the parameter table of one layer. */
enum {
    LP_NORM1, LP_WQ, LP_WK, LP_WV, LP_WO, LP_NORM2,
    LP_W1, /* gate (SwiGLU) / fc (GELU) */
    LP_W2, /* up (SwiGLU) / proj (GELU) */
    LP_W3, /* down (SwiGLU) */
    LP__COUNT
};

/* Saved forward activations of one layer (storage indices). */
typedef struct tsaved {
    uint32_t x, a, q, k, v, o, lse, xm, mn, f1, f2, f3;
} tsaved;

typedef struct tgen {
    const plan_gen_train_cfg *c;
    plan_gen_b b;
    tparam *params;
    uint32_t n_params;
    uint32_t embed, fnorm, head; /* parameter indices */
    tsaved *saved;               /* per layer, current micro-batch */
    uint64_t T;                  /* tokens per micro-batch */
    uint64_t kv;                 /* kv_heads * head_dim */
    uint64_t d;                  /* dtype bytes */
    uint64_t act_h, act_kv, act_f, lse, logits, tok;
} tgen;

static uint32_t lparam(const tgen *g, uint32_t layer, uint32_t which)
{
    return layer * LP__COUNT + which;
}

static int check_cfg(const plan_gen_train_cfg *c, char *err, size_t errlen)
{
    int r;

    if (err && errlen)
        err[0] = '\0';
    if ((r = plan_gen_check_model(&c->model, err, errlen)) < 0)
        return r;
    if ((r = plan_gen_check_range("seq", c->seq, 1, 1u << 22, err,
                                  errlen)) < 0 ||
        (r = plan_gen_check_range("micro_batch", c->micro_batch, 1, 65536,
                                  err, errlen)) < 0 ||
        (r = plan_gen_check_range("n_micro", c->n_micro, 1, 65536, err,
                                  errlen)) < 0 ||
        (r = plan_gen_check_dtype(c->dtype_bytes, err, errlen)) < 0)
        return r;
    return plan_gen_check_device(&c->device, err, errlen);
}

/* Sizes, with overflow and limit checks. */
static int sizes(tgen *g, char *err, size_t errlen)
{
    const plan_gen_train_cfg *c = g->c;
    const plan_model *m = &c->model;
    const uint64_t max = PLAN_MAX_STORAGE_BYTES;
    uint64_t ops, storages;

    g->d = c->dtype_bytes;
    g->kv = (uint64_t)m->kv_heads * (m->hidden / m->heads);
    if (!plan_gen_mul(c->seq, c->micro_batch, UINT32_MAX, &g->T) ||
        !plan_gen_mul(g->T, (uint64_t)m->hidden * g->d, max, &g->act_h) ||
        !plan_gen_mul(g->T, g->kv * g->d, max, &g->act_kv) ||
        !plan_gen_mul(g->T, (uint64_t)m->ffn * g->d, max, &g->act_f) ||
        !plan_gen_mul(g->T, (uint64_t)m->heads * 4u, max, &g->lse) ||
        !plan_gen_mul(g->T, (uint64_t)m->vocab * g->d, max, &g->logits) ||
        !plan_gen_mul(g->T, 8u, max, &g->tok) ||
        (uint64_t)m->vocab * m->hidden * 4u > max ||
        (uint64_t)m->hidden * m->ffn * 4u > max)
        return ho_errf(err, errlen, -E2BIG, "a tensor would exceed "
                             "%llu bytes", PLAN_MAX_STORAGE_BYTES);
    /* Generous upper bounds on what the step adds. */
    ops = (uint64_t)c->n_micro * (20u * m->layers + 20u) +
          (uint64_t)m->layers * LP__COUNT + 3u;
    storages = (uint64_t)c->n_micro * (40u * m->layers + 20u) +
               5u * ((uint64_t)m->layers * LP__COUNT + 3u);
    return plan_gen_check_size(ops, storages, err, errlen);
}

static void add_param(tgen *g, const char *name, uint64_t elems)
{
    const plan_gen_train_cfg *c = g->c;
    tparam *p = &g->params[g->n_params++];
    plan_initial pi = c->params_on_host ? PLAN_INIT_HOST : PLAN_INIT_DEVICE;
    plan_initial oi = c->optimizer_on_host ? PLAN_INIT_HOST
                                           : PLAN_INIT_DEVICE;

    snprintf(p->name, sizeof p->name, "%s", name);
    p->elems = elems;
    p->p = plan_gen_storage_movable(&g->b, elems * g->d, PLAN_KIND_PARAM,
                                    pi, c->params_movable);
    /* Gradients are consumed by the optimizer inside the step; without it
     * they are the step's output and stay. */
    p->g = plan_gen_storage(&g->b, elems * g->d, PLAN_KIND_GRAD,
                            PLAN_INIT_NONE, !c->optimizer_step);
    p->m = plan_gen_storage_movable(&g->b, elems * 4u, PLAN_KIND_OPTIMIZER,
                                    oi, c->optimizer_movable);
    p->v = plan_gen_storage_movable(&g->b, elems * 4u, PLAN_KIND_OPTIMIZER,
                                    oi, c->optimizer_movable);
    /* An fp32 master copy only when the weights are narrower. */
    p->master = g->d < 4 ? plan_gen_storage_movable(&g->b, elems * 4u,
                                                    PLAN_KIND_OPTIMIZER, oi,
                                                    c->optimizer_movable)
                         : PLAN_NONE;
}

static void make_params(tgen *g)
{
    const plan_model *m = &g->c->model;
    const uint64_t h = m->hidden, f = m->ffn;
    /* LayerNorm (GELU models) has a bias next to its weight. */
    const uint64_t norm = m->swiglu ? h : 2 * h;
    char n[24];

    for (uint32_t l = 0; l < m->layers; l++) {
        snprintf(n, sizeof n, "l%u.norm1", l);
        add_param(g, n, norm);
        snprintf(n, sizeof n, "l%u.wq", l);
        add_param(g, n, h * h);
        snprintf(n, sizeof n, "l%u.wk", l);
        add_param(g, n, h * g->kv);
        snprintf(n, sizeof n, "l%u.wv", l);
        add_param(g, n, h * g->kv);
        snprintf(n, sizeof n, "l%u.wo", l);
        add_param(g, n, h * h);
        snprintf(n, sizeof n, "l%u.norm2", l);
        add_param(g, n, norm);
        snprintf(n, sizeof n, m->swiglu ? "l%u.w_gate" : "l%u.w_fc", l);
        add_param(g, n, h * f);
        if (m->swiglu) {
            snprintf(n, sizeof n, "l%u.w_up", l);
            add_param(g, n, h * f);
            snprintf(n, sizeof n, "l%u.w_down", l);
            add_param(g, n, f * h);
        } else {
            snprintf(n, sizeof n, "l%u.w_proj", l);
            add_param(g, n, f * h);
            g->n_params++; /* LP_W3 unused: keep the table regular */
            g->params[g->n_params - 1].elems = 0;
        }
    }
    g->embed = g->n_params;
    add_param(g, "embed", (uint64_t)m->vocab * h);
    g->fnorm = g->n_params;
    add_param(g, "final_norm", norm);
    g->head = g->n_params;
    add_param(g, "head", (uint64_t)m->vocab * h);
}

/* Queue the weight of parameter i as read. */
static void use_weight(tgen *g, uint32_t i)
{
    plan_gen_read(&g->b, g->params[i].p);
}

/* Queue parameter i's gradient as written, and read too when a later
 * micro-batch accumulates into it. */
static void grad_out(tgen *g, uint32_t i, uint32_t mb)
{
    if (mb > 0)
        plan_gen_read(&g->b, g->params[i].g);
    plan_gen_write(&g->b, g->params[i].g);
}




static double pbytes(const tgen *g, uint32_t i)
{
    return (double)g->params[i].elems * (double)g->d;
}

/* The step's dimensions as doubles, for durations and byte counts. */
typedef struct tdim {
    double T, h, f, kv, V;  /* tokens, hidden, ffn, kv width, vocab */
    double ah, akv, af;     /* activation bytes: hidden, kv, ffn wide */
    double attn;            /* causal flash attention forward FLOPs: QK^T
                               and PV over half the score matrix */
} tdim;

static tdim tdims(const tgen *g)
{
    const plan_model *m = &g->c->model;
    tdim d = {(double)g->T, m->hidden, m->ffn, (double)g->kv, m->vocab,
              (double)g->act_h, (double)g->act_kv, (double)g->act_f,
              2.0 * (double)g->c->micro_batch * (double)g->c->seq *
                  (double)g->c->seq * m->hidden};
    return d;
}

/* Embedding lookup: the first layer's input. */
static uint32_t fwd_embed(tgen *g, uint32_t mb, uint32_t tok)
{
    const tdim d = tdims(g);
    uint32_t x;

    x = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, tok);
    use_weight(g, g->embed);
    plan_gen_write(&g->b, x);
    plan_gen_op(&g->b, gen_mem(&g->b, 2 * d.ah), "mb%u.embed.fwd", mb);
    return x;
}

/* Layer l's attention half, input x: norm1, QKV, attention, output
 * projection, residual; the saved activations in g->saved[l].  Returns
 * the residual sum (the MLP half's input). */
static uint32_t fwd_attention(tgen *g, uint32_t mb, uint32_t l, uint32_t x)
{
    const tdim d = tdims(g);
    tsaved *s = &g->saved[l];
    uint32_t p;

    s->x = x;
    s->a = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, x);
    use_weight(g, lparam(g, l, LP_NORM1));
    plan_gen_write(&g->b, s->a);
    plan_gen_op(&g->b, gen_mem(&g->b, 2 * d.ah),
                "mb%u.l%u.norm1.fwd", mb, l);

    s->q = gen_act(&g->b, g->act_h);
    s->k = gen_act(&g->b, g->act_kv);
    s->v = gen_act(&g->b, g->act_kv);
    plan_gen_read(&g->b, s->a);
    use_weight(g, lparam(g, l, LP_WQ));
    use_weight(g, lparam(g, l, LP_WK));
    use_weight(g, lparam(g, l, LP_WV));
    plan_gen_write(&g->b, s->q);
    plan_gen_write(&g->b, s->k);
    plan_gen_write(&g->b, s->v);
    plan_gen_op(&g->b, gen_mm(&g->b, 2 * d.T * d.h * (d.h + 2 * d.kv),
                              2 * d.ah + 2 * d.akv +
                              pbytes(g, lparam(g, l, LP_WQ)) +
                              2 * pbytes(g, lparam(g, l, LP_WK))),
                "mb%u.l%u.qkv.fwd", mb, l);

    s->o = gen_act(&g->b, g->act_h);
    s->lse = gen_act(&g->b, g->lse);
    plan_gen_read(&g->b, s->q);
    plan_gen_read(&g->b, s->k);
    plan_gen_read(&g->b, s->v);
    plan_gen_write(&g->b, s->o);
    plan_gen_write(&g->b, s->lse);
    plan_gen_op(&g->b, plan_gen_time(g->b.dev, d.attn,
                                     2 * d.ah + 2 * d.akv, PLAN_GEN_ATTN_EFF),
                "mb%u.l%u.attn.fwd", mb, l);

    p = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, s->o);
    use_weight(g, lparam(g, l, LP_WO));
    plan_gen_write(&g->b, p);
    plan_gen_op(&g->b, gen_mm(&g->b, 2 * d.T * d.h * d.h,
                              2 * d.ah + pbytes(g, lparam(g, l, LP_WO))),
                "mb%u.l%u.wo.fwd", mb, l);

    s->xm = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, x);
    plan_gen_read(&g->b, p);
    plan_gen_write(&g->b, s->xm);
    plan_gen_op(&g->b, gen_mem(&g->b, 3 * d.ah), "mb%u.l%u.res1.fwd", mb, l);
    return s->xm;
}

/* Layer l's MLP half: norm2, SwiGLU or GELU MLP, residual.  Returns the
 * layer's output. */
static uint32_t fwd_mlp(tgen *g, uint32_t mb, uint32_t l)
{
    const plan_model *m = &g->c->model;
    const tdim d = tdims(g);
    tsaved *s = &g->saved[l];
    uint32_t mo, xn;

    s->mn = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, s->xm);
    use_weight(g, lparam(g, l, LP_NORM2));
    plan_gen_write(&g->b, s->mn);
    plan_gen_op(&g->b, gen_mem(&g->b, 2 * d.ah),
                "mb%u.l%u.norm2.fwd", mb, l);

    mo = gen_act(&g->b, g->act_h);
    if (m->swiglu) {
        s->f1 = gen_act(&g->b, g->act_f);
        s->f2 = gen_act(&g->b, g->act_f);
        plan_gen_read(&g->b, s->mn);
        use_weight(g, lparam(g, l, LP_W1));
        use_weight(g, lparam(g, l, LP_W2));
        plan_gen_write(&g->b, s->f1);
        plan_gen_write(&g->b, s->f2);
        plan_gen_op(&g->b, gen_mm(&g->b, 4 * d.T * d.h * d.f,
                                  d.ah + 2 * d.af +
                                  2 * pbytes(g, lparam(g, l, LP_W1))),
                    "mb%u.l%u.gate_up.fwd", mb, l);
        s->f3 = gen_act(&g->b, g->act_f);
        plan_gen_read(&g->b, s->f1);
        plan_gen_read(&g->b, s->f2);
        plan_gen_write(&g->b, s->f3);
        plan_gen_op(&g->b, gen_mem(&g->b, 3 * d.af),
                    "mb%u.l%u.swiglu.fwd", mb, l);
        plan_gen_read(&g->b, s->f3);
        use_weight(g, lparam(g, l, LP_W3));
        plan_gen_write(&g->b, mo);
        plan_gen_op(&g->b,
                    gen_mm(&g->b, 2 * d.T * d.h * d.f,
                           d.af + d.ah + pbytes(g, lparam(g, l, LP_W3))),
                    "mb%u.l%u.down.fwd", mb, l);
    } else {
        s->f1 = gen_act(&g->b, g->act_f);
        plan_gen_read(&g->b, s->mn);
        use_weight(g, lparam(g, l, LP_W1));
        plan_gen_write(&g->b, s->f1);
        plan_gen_op(&g->b,
                    gen_mm(&g->b, 2 * d.T * d.h * d.f,
                           d.ah + d.af + pbytes(g, lparam(g, l, LP_W1))),
                    "mb%u.l%u.fc.fwd", mb, l);
        s->f2 = gen_act(&g->b, g->act_f);
        plan_gen_read(&g->b, s->f1);
        plan_gen_write(&g->b, s->f2);
        plan_gen_op(&g->b, gen_mem(&g->b, 2 * d.af),
                    "mb%u.l%u.gelu.fwd", mb, l);
        s->f3 = PLAN_NONE;
        plan_gen_read(&g->b, s->f2);
        use_weight(g, lparam(g, l, LP_W2));
        plan_gen_write(&g->b, mo);
        plan_gen_op(&g->b,
                    gen_mm(&g->b, 2 * d.T * d.h * d.f,
                           d.af + d.ah + pbytes(g, lparam(g, l, LP_W2))),
                    "mb%u.l%u.proj.fwd", mb, l);
    }

    xn = gen_new(&g->b, g->act_h, s->xm, mo);
    plan_gen_op(&g->b, gen_mem(&g->b, 3 * d.ah), "mb%u.l%u.res2.fwd", mb, l);
    return xn;
}

/* Final norm, LM head and loss over the last layer's output x. */
static void fwd_head(tgen *g, uint32_t mb, uint32_t tok, uint32_t x,
                     uint32_t *ret_fn, uint32_t *ret_lg, uint32_t *ret_loss)
{
    const tdim d = tdims(g);
    uint32_t fn, lg, loss;

    fn = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, x);
    use_weight(g, g->fnorm);
    plan_gen_write(&g->b, fn);
    plan_gen_op(&g->b, gen_mem(&g->b, 2 * d.ah), "mb%u.final_norm.fwd", mb);

    lg = gen_act(&g->b, g->logits);
    plan_gen_read(&g->b, fn);
    use_weight(g, g->head);
    plan_gen_write(&g->b, lg);
    plan_gen_op(&g->b, gen_mm(&g->b, 2 * d.T * d.h * d.V,
                              d.ah + (double)g->logits + pbytes(g, g->head)),
                "mb%u.head.fwd", mb);

    loss = plan_gen_storage(&g->b, 4, PLAN_KIND_OTHER, PLAN_INIT_NONE, false);
    plan_gen_read(&g->b, lg);
    plan_gen_read(&g->b, tok);
    plan_gen_write(&g->b, loss);
    plan_gen_op(&g->b, gen_mem(&g->b, (double)g->logits), "mb%u.loss.fwd", mb);
    *ret_fn = fn;
    *ret_lg = lg;
    *ret_loss = loss;
}

static void forward(tgen *g, uint32_t mb, uint32_t tok, uint32_t *ret_x,
                    uint32_t *ret_fn, uint32_t *ret_lg, uint32_t *ret_loss)
{
    uint32_t x = fwd_embed(g, mb, tok);

    for (uint32_t l = 0; l < g->c->model.layers; l++) {
        fwd_attention(g, mb, l, x);
        x = fwd_mlp(g, mb, l);
    }
    fwd_head(g, mb, tok, x, ret_fn, ret_lg, ret_loss);
    *ret_x = x;
}

/* Loss, LM head and final norm backward; returns the gradient of the
 * last layer's output. */
static uint32_t bwd_head(tgen *g, uint32_t mb, uint32_t tok, uint32_t xL,
                         uint32_t fn, uint32_t lg, uint32_t loss)
{
    const tdim d = tdims(g);
    uint32_t dlg, dfn, dx;

    dlg = gen_act(&g->b, g->logits);
    plan_gen_read(&g->b, lg);
    plan_gen_read(&g->b, tok);
    plan_gen_read(&g->b, loss);
    plan_gen_write(&g->b, dlg);
    plan_gen_op(&g->b, gen_mem(&g->b, 2 * (double)g->logits),
                "mb%u.loss.bwd", mb);

    dfn = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, dlg);
    plan_gen_read(&g->b, fn);
    use_weight(g, g->head);
    grad_out(g, g->head, mb);
    plan_gen_write(&g->b, dfn);
    plan_gen_op(&g->b, gen_mm(&g->b, 4 * d.T * d.h * d.V,
                              2 * (double)g->logits + 2 * d.ah +
                              2 * pbytes(g, g->head)),
                "mb%u.head.bwd", mb);

    dx = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, dfn);
    plan_gen_read(&g->b, xL);
    use_weight(g, g->fnorm);
    grad_out(g, g->fnorm, mb);
    plan_gen_write(&g->b, dx);
    plan_gen_op(&g->b, gen_mem(&g->b, 3 * d.ah), "mb%u.final_norm.bwd", mb);
    return dx;
}

/* Layer l's MLP backward from the output gradient dx; returns the
 * gradient of the MLP's input (norm2's output). */
static uint32_t bwd_mlp(tgen *g, uint32_t mb, uint32_t l, uint32_t dx)
{
    const plan_model *m = &g->c->model;
    const tdim d = tdims(g);
    const tsaved *s = &g->saved[l];
    uint32_t dh, dm;

    /* the MLP's output projection: down (SwiGLU) or proj (GELU) */
    const uint32_t wout = lparam(g, l, m->swiglu ? LP_W3 : LP_W2);
    dh = gen_act(&g->b, g->act_f);
    plan_gen_read(&g->b, dx);
    plan_gen_read(&g->b, m->swiglu ? s->f3 : s->f2);
    use_weight(g, wout);
    grad_out(g, wout, mb);
    plan_gen_write(&g->b, dh);
    plan_gen_op(&g->b, gen_mm(&g->b, 4 * d.T * d.h * d.f,
                              2 * d.af + 2 * d.ah + 2 * pbytes(g, wout)),
                m->swiglu ? "mb%u.l%u.down.bwd" : "mb%u.l%u.proj.bwd", mb, l);
    if (m->swiglu) {
        uint32_t dg = gen_act(&g->b, g->act_f);
        uint32_t du = gen_act(&g->b, g->act_f);
        plan_gen_read(&g->b, dh);
        plan_gen_read(&g->b, s->f1);
        plan_gen_read(&g->b, s->f2);
        plan_gen_write(&g->b, dg);
        plan_gen_write(&g->b, du);
        plan_gen_op(&g->b, gen_mem(&g->b, 5 * d.af),
                    "mb%u.l%u.swiglu.bwd", mb, l);
        dm = gen_act(&g->b, g->act_h);
        plan_gen_read(&g->b, dg);
        plan_gen_read(&g->b, du);
        plan_gen_read(&g->b, s->mn);
        use_weight(g, lparam(g, l, LP_W1));
        use_weight(g, lparam(g, l, LP_W2));
        grad_out(g, lparam(g, l, LP_W1), mb);
        grad_out(g, lparam(g, l, LP_W2), mb);
        plan_gen_write(&g->b, dm);
        plan_gen_op(&g->b, gen_mm(&g->b, 8 * d.T * d.h * d.f,
                                  2 * d.af + 2 * d.ah +
                                  4 * pbytes(g, lparam(g, l, LP_W1))),
                    "mb%u.l%u.gate_up.bwd", mb, l);
    } else {
        uint32_t dg = gen_act(&g->b, g->act_f);
        plan_gen_read(&g->b, dh);
        plan_gen_read(&g->b, s->f1);
        plan_gen_write(&g->b, dg);
        plan_gen_op(&g->b, gen_mem(&g->b, 3 * d.af),
                    "mb%u.l%u.gelu.bwd", mb, l);
        dm = gen_act(&g->b, g->act_h);
        plan_gen_read(&g->b, dg);
        plan_gen_read(&g->b, s->mn);
        use_weight(g, lparam(g, l, LP_W1));
        grad_out(g, lparam(g, l, LP_W1), mb);
        plan_gen_write(&g->b, dm);
        plan_gen_op(&g->b, gen_mm(&g->b, 4 * d.T * d.h * d.f, d.af + 2 * d.ah +
                                  2 * pbytes(g, lparam(g, l, LP_W1))),
                    "mb%u.l%u.fc.bwd", mb, l);
    }
    return dm;
}

/* Layer l's norm2, attention and norm1 backward, with the residual
 * branches' gradients; returns the gradient of the layer's input. */
static uint32_t bwd_attention(tgen *g, uint32_t mb, uint32_t l, uint32_t dx,
                              uint32_t dm)
{
    const tdim d = tdims(g);
    const tsaved *s = &g->saved[l];
    uint32_t dxm, dob, dq, dk, dv, da, dxl;

    /* norm backward plus the residual branch's gradient dx */
    dxm = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, dm);
    plan_gen_read(&g->b, s->xm);
    plan_gen_read(&g->b, dx);
    use_weight(g, lparam(g, l, LP_NORM2));
    grad_out(g, lparam(g, l, LP_NORM2), mb);
    plan_gen_write(&g->b, dxm);
    plan_gen_op(&g->b, gen_mem(&g->b, 4 * d.ah),
                "mb%u.l%u.norm2.bwd", mb, l);

    dob = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, dxm);
    plan_gen_read(&g->b, s->o);
    use_weight(g, lparam(g, l, LP_WO));
    grad_out(g, lparam(g, l, LP_WO), mb);
    plan_gen_write(&g->b, dob);
    plan_gen_op(&g->b, gen_mm(&g->b, 4 * d.T * d.h * d.h, 3 * d.ah +
                              2 * pbytes(g, lparam(g, l, LP_WO))),
                "mb%u.l%u.wo.bwd", mb, l);

    dq = gen_act(&g->b, g->act_h);
    dk = gen_act(&g->b, g->act_kv);
    dv = gen_act(&g->b, g->act_kv);
    plan_gen_read(&g->b, dob);
    plan_gen_read(&g->b, s->q);
    plan_gen_read(&g->b, s->k);
    plan_gen_read(&g->b, s->v);
    plan_gen_read(&g->b, s->o);
    plan_gen_read(&g->b, s->lse);
    plan_gen_write(&g->b, dq);
    plan_gen_write(&g->b, dk);
    plan_gen_write(&g->b, dv);
    plan_gen_op(&g->b, plan_gen_time(g->b.dev, 2.5 * d.attn,
                                     5 * d.ah + 4 * d.akv, PLAN_GEN_ATTN_EFF),
                "mb%u.l%u.attn.bwd", mb, l);

    da = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, dq);
    plan_gen_read(&g->b, dk);
    plan_gen_read(&g->b, dv);
    plan_gen_read(&g->b, s->a);
    use_weight(g, lparam(g, l, LP_WQ));
    use_weight(g, lparam(g, l, LP_WK));
    use_weight(g, lparam(g, l, LP_WV));
    grad_out(g, lparam(g, l, LP_WQ), mb);
    grad_out(g, lparam(g, l, LP_WK), mb);
    grad_out(g, lparam(g, l, LP_WV), mb);
    plan_gen_write(&g->b, da);
    plan_gen_op(&g->b, gen_mm(&g->b, 4 * d.T * d.h * (d.h + 2 * d.kv),
                              3 * d.ah + 2 * d.akv +
                              2 * (pbytes(g, lparam(g, l, LP_WQ)) +
                                   2 * pbytes(g, lparam(g, l, LP_WK)))),
                "mb%u.l%u.qkv.bwd", mb, l);

    dxl = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, da);
    plan_gen_read(&g->b, s->x);
    plan_gen_read(&g->b, dxm);
    use_weight(g, lparam(g, l, LP_NORM1));
    grad_out(g, lparam(g, l, LP_NORM1), mb);
    plan_gen_write(&g->b, dxl);
    plan_gen_op(&g->b, gen_mem(&g->b, 4 * d.ah),
                "mb%u.l%u.norm1.bwd", mb, l);
    return dxl;
}

static void backward(tgen *g, uint32_t mb, uint32_t tok, uint32_t xL,
                     uint32_t fn, uint32_t lg, uint32_t loss)
{
    const tdim d = tdims(g);
    uint32_t dx = bwd_head(g, mb, tok, xL, fn, lg, loss);

    for (uint32_t l = g->c->model.layers; l-- > 0;)
        dx = bwd_attention(g, mb, l, dx, bwd_mlp(g, mb, l, dx));
    /* scatter-add into the embedding gradient (zeroed by the first) */
    plan_gen_read(&g->b, dx);
    plan_gen_read(&g->b, tok);
    grad_out(g, g->embed, mb);
    plan_gen_op(&g->b,
                gen_mem(&g->b, 2 * d.ah + (mb == 0 ? pbytes(g, g->embed) : 0)),
                "mb%u.embed.bwd", mb);
}

static void optimizer(tgen *g)
{
    for (uint32_t i = 0; i < g->n_params; i++) {
        const tparam *p = &g->params[i];
        double n = (double)p->elems, d = (double)g->d;
        double state = p->master != PLAN_NONE ? 12.0 : 8.0;

        if (p->elems == 0)
            continue;
        plan_gen_read(&g->b, p->g);
        plan_gen_read(&g->b, p->p);
        plan_gen_read(&g->b, p->m);
        plan_gen_read(&g->b, p->v);
        if (p->master != PLAN_NONE)
            plan_gen_read(&g->b, p->master);
        plan_gen_write(&g->b, p->p);
        plan_gen_write(&g->b, p->m);
        plan_gen_write(&g->b, p->v);
        if (p->master != PLAN_NONE)
            plan_gen_write(&g->b, p->master);
        /* ~12 flops per element; memory-bound: read g, p and the state,
         * write p and the state */
        plan_gen_op(&g->b, plan_gen_time(&g->c->device, 12.0 * n,
                                         n * (3 * d + 2 * state),
                                         PLAN_GEN_MATMUL_EFF),
                    "opt.%s", p->name);
    }
}

int plan_gen_train(const plan_gen_train_cfg *cfg, plan_trace **ret_trace,
                   char *err, size_t errlen)
{
    tgen g = {.c = cfg};
    plan_link link;
    char name[PLAN_MAX_NAME];
    uint32_t n_params;
    int r;

    if ((r = check_cfg(cfg, err, errlen)) < 0 ||
        (r = sizes(&g, err, errlen)) < 0)
        return r;
    n_params = cfg->model.layers * LP__COUNT + 3u;
    g.params = calloc(n_params, sizeof *g.params);
    g.saved = calloc(cfg->model.layers, sizeof *g.saved);
    if (!g.params || !g.saved) {
        r = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    snprintf(name, sizeof name, "%s-train-s%u-b%u-m%u%s",
             cfg->model.name[0] ? cfg->model.name : "custom", cfg->seq,
             cfg->micro_batch, cfg->n_micro,
             cfg->optimizer_step ? "" : "-noopt");
    link = plan_gen_link(&cfg->device);
    plan_gen_begin(&g.b, name, &link, err, errlen);
    g.b.dev = &cfg->device;
    make_params(&g);
    for (uint32_t mb = 0; mb < cfg->n_micro && g.b.rc == 0; mb++) {
        uint32_t tok, x, fn, lg, loss;
        /* token ids and labels (int32), loaded for this micro-batch */
        tok = plan_gen_storage(&g.b, g.tok, PLAN_KIND_OTHER, PLAN_INIT_NONE,
                               false);
        plan_gen_write(&g.b, tok);
        plan_gen_op(&g.b, gen_mem(&g.b, (double)g.tok), "mb%u.input", mb);
        forward(&g, mb, tok, &x, &fn, &lg, &loss);
        backward(&g, mb, tok, x, fn, lg, loss);
    }
    if (cfg->optimizer_step)
        optimizer(&g);
    r = plan_gen_finish(&g.b, ret_trace);
out:
    free(g.params);
    free(g.saved);
    return r;
}
