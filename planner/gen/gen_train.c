/*
 * planner/gen_train.c - one training step of a decoder-only transformer
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

    if ((r = plan_gen_check_model(&c->model, err, errlen)) < 0)
        return r;
    if (c->seq < 1 || c->seq > (1u << 22))
        return ho_errf(err, errlen, -EINVAL,
                             "seq must be in [1, 4194304], got %u", c->seq);
    if (c->micro_batch < 1 || c->micro_batch > 65536)
        return ho_errf(err, errlen, -EINVAL, "micro_batch must be in "
                             "[1, 65536], got %u", c->micro_batch);
    if (c->n_micro < 1 || c->n_micro > 65536)
        return ho_errf(err, errlen, -EINVAL, "n_micro must be in "
                             "[1, 65536], got %u", c->n_micro);
    if (c->dtype_bytes != 1 && c->dtype_bytes != 2 && c->dtype_bytes != 4)
        return ho_errf(err, errlen, -EINVAL,
                             "dtype_bytes must be 1, 2 or 4, got %u",
                             c->dtype_bytes);
    if ((r = plan_gen_check_device(&c->device, err, errlen)) < 0)
        return r;
    return 0;
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
    if (ops > PLAN_MAX_OPS || storages > PLAN_MAX_STORAGES)
        return ho_errf(err, errlen, -E2BIG, "the step would have about "
                             "%llu ops and %llu storages (limits %u, %u)",
                             (unsigned long long)ops,
                             (unsigned long long)storages, PLAN_MAX_OPS,
                             PLAN_MAX_STORAGES);
    return 0;
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
    p->p = plan_gen_storage(&g->b, elems * g->d, PLAN_KIND_PARAM, pi, true);
    /* Gradients are consumed by the optimizer inside the step; without it
     * they are the step's output and stay. */
    p->g = plan_gen_storage(&g->b, elems * g->d, PLAN_KIND_GRAD,
                            PLAN_INIT_NONE, !c->optimizer_step);
    p->m = plan_gen_storage(&g->b, elems * 4u, PLAN_KIND_OPTIMIZER, oi, true);
    p->v = plan_gen_storage(&g->b, elems * 4u, PLAN_KIND_OPTIMIZER, oi, true);
    /* An fp32 master copy only when the weights are narrower. */
    p->master = g->d < 4 ? plan_gen_storage(&g->b, elems * 4u,
                                            PLAN_KIND_OPTIMIZER, oi, true)
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

static uint32_t act(tgen *g, uint64_t bytes)
{
    return plan_gen_storage(&g->b, bytes, PLAN_KIND_ACTIVATION,
                            PLAN_INIT_NONE, false);
}

static double mm(const tgen *g, double flops, double bytes)
{
    return plan_gen_time(&g->c->device, flops, bytes, PLAN_GEN_MATMUL_EFF);
}

static double mem(const tgen *g, double bytes)
{
    return plan_gen_time(&g->c->device, 0.0, bytes, PLAN_GEN_MATMUL_EFF);
}

static double pbytes(const tgen *g, uint32_t i)
{
    return (double)g->params[i].elems * (double)g->d;
}

static void forward(tgen *g, uint32_t mb, uint32_t tok, uint32_t *ret_x,
                    uint32_t *ret_fn, uint32_t *ret_lg, uint32_t *ret_loss)
{
    const plan_model *m = &g->c->model;
    const double T = (double)g->T, h = m->hidden, f = m->ffn;
    const double kv = (double)g->kv, V = m->vocab;
    const double ah = (double)g->act_h, akv = (double)g->act_kv;
    const double af = (double)g->act_f;
    /* causal flash attention: QK^T and PV over half the score matrix */
    const double attn_flops = 2.0 * (double)g->c->micro_batch *
                              (double)g->c->seq * (double)g->c->seq * h;
    uint32_t x, fn, lg, loss;

    x = act(g, g->act_h);
    plan_gen_read(&g->b, tok);
    use_weight(g, g->embed);
    plan_gen_write(&g->b, x);
    plan_gen_op(&g->b, mem(g, 2 * ah), "mb%u.embed.fwd", mb);

    for (uint32_t l = 0; l < m->layers; l++) {
        tsaved *s = &g->saved[l];
        uint32_t p, mo, xn;

        s->x = x;
        s->a = act(g, g->act_h);
        plan_gen_read(&g->b, x);
        use_weight(g, lparam(g, l, LP_NORM1));
        plan_gen_write(&g->b, s->a);
        plan_gen_op(&g->b, mem(g, 2 * ah), "mb%u.l%u.norm1.fwd", mb, l);

        s->q = act(g, g->act_h);
        s->k = act(g, g->act_kv);
        s->v = act(g, g->act_kv);
        plan_gen_read(&g->b, s->a);
        use_weight(g, lparam(g, l, LP_WQ));
        use_weight(g, lparam(g, l, LP_WK));
        use_weight(g, lparam(g, l, LP_WV));
        plan_gen_write(&g->b, s->q);
        plan_gen_write(&g->b, s->k);
        plan_gen_write(&g->b, s->v);
        plan_gen_op(&g->b, mm(g, 2 * T * h * (h + 2 * kv),
                              2 * ah + 2 * akv + pbytes(g, lparam(g, l, LP_WQ))
                              + 2 * pbytes(g, lparam(g, l, LP_WK))),
                    "mb%u.l%u.qkv.fwd", mb, l);

        s->o = act(g, g->act_h);
        s->lse = act(g, g->lse);
        plan_gen_read(&g->b, s->q);
        plan_gen_read(&g->b, s->k);
        plan_gen_read(&g->b, s->v);
        plan_gen_write(&g->b, s->o);
        plan_gen_write(&g->b, s->lse);
        plan_gen_op(&g->b, plan_gen_time(&g->c->device, attn_flops,
                                         2 * ah + 2 * akv, PLAN_GEN_ATTN_EFF),
                    "mb%u.l%u.attn.fwd", mb, l);

        p = act(g, g->act_h);
        plan_gen_read(&g->b, s->o);
        use_weight(g, lparam(g, l, LP_WO));
        plan_gen_write(&g->b, p);
        plan_gen_op(&g->b, mm(g, 2 * T * h * h,
                              2 * ah + pbytes(g, lparam(g, l, LP_WO))),
                    "mb%u.l%u.wo.fwd", mb, l);

        s->xm = act(g, g->act_h);
        plan_gen_read(&g->b, x);
        plan_gen_read(&g->b, p);
        plan_gen_write(&g->b, s->xm);
        plan_gen_op(&g->b, mem(g, 3 * ah), "mb%u.l%u.res1.fwd", mb, l);

        s->mn = act(g, g->act_h);
        plan_gen_read(&g->b, s->xm);
        use_weight(g, lparam(g, l, LP_NORM2));
        plan_gen_write(&g->b, s->mn);
        plan_gen_op(&g->b, mem(g, 2 * ah), "mb%u.l%u.norm2.fwd", mb, l);

        mo = act(g, g->act_h);
        if (m->swiglu) {
            s->f1 = act(g, g->act_f);
            s->f2 = act(g, g->act_f);
            plan_gen_read(&g->b, s->mn);
            use_weight(g, lparam(g, l, LP_W1));
            use_weight(g, lparam(g, l, LP_W2));
            plan_gen_write(&g->b, s->f1);
            plan_gen_write(&g->b, s->f2);
            plan_gen_op(&g->b, mm(g, 4 * T * h * f,
                                  ah + 2 * af +
                                  2 * pbytes(g, lparam(g, l, LP_W1))),
                        "mb%u.l%u.gate_up.fwd", mb, l);
            s->f3 = act(g, g->act_f);
            plan_gen_read(&g->b, s->f1);
            plan_gen_read(&g->b, s->f2);
            plan_gen_write(&g->b, s->f3);
            plan_gen_op(&g->b, mem(g, 3 * af), "mb%u.l%u.swiglu.fwd", mb, l);
            plan_gen_read(&g->b, s->f3);
            use_weight(g, lparam(g, l, LP_W3));
            plan_gen_write(&g->b, mo);
            plan_gen_op(&g->b, mm(g, 2 * T * h * f,
                                  af + ah + pbytes(g, lparam(g, l, LP_W3))),
                        "mb%u.l%u.down.fwd", mb, l);
        } else {
            s->f1 = act(g, g->act_f);
            plan_gen_read(&g->b, s->mn);
            use_weight(g, lparam(g, l, LP_W1));
            plan_gen_write(&g->b, s->f1);
            plan_gen_op(&g->b, mm(g, 2 * T * h * f,
                                  ah + af + pbytes(g, lparam(g, l, LP_W1))),
                        "mb%u.l%u.fc.fwd", mb, l);
            s->f2 = act(g, g->act_f);
            plan_gen_read(&g->b, s->f1);
            plan_gen_write(&g->b, s->f2);
            plan_gen_op(&g->b, mem(g, 2 * af), "mb%u.l%u.gelu.fwd", mb, l);
            s->f3 = PLAN_NONE;
            plan_gen_read(&g->b, s->f2);
            use_weight(g, lparam(g, l, LP_W2));
            plan_gen_write(&g->b, mo);
            plan_gen_op(&g->b, mm(g, 2 * T * h * f,
                                  af + ah + pbytes(g, lparam(g, l, LP_W2))),
                        "mb%u.l%u.proj.fwd", mb, l);
        }

        xn = act(g, g->act_h);
        plan_gen_read(&g->b, s->xm);
        plan_gen_read(&g->b, mo);
        plan_gen_write(&g->b, xn);
        plan_gen_op(&g->b, mem(g, 3 * ah), "mb%u.l%u.res2.fwd", mb, l);
        x = xn;
    }

    fn = act(g, g->act_h);
    plan_gen_read(&g->b, x);
    use_weight(g, g->fnorm);
    plan_gen_write(&g->b, fn);
    plan_gen_op(&g->b, mem(g, 2 * ah), "mb%u.final_norm.fwd", mb);

    lg = act(g, g->logits);
    plan_gen_read(&g->b, fn);
    use_weight(g, g->head);
    plan_gen_write(&g->b, lg);
    plan_gen_op(&g->b, mm(g, 2 * T * h * V,
                          ah + (double)g->logits + pbytes(g, g->head)),
                "mb%u.head.fwd", mb);

    loss = plan_gen_storage(&g->b, 4, PLAN_KIND_OTHER, PLAN_INIT_NONE, false);
    plan_gen_read(&g->b, lg);
    plan_gen_read(&g->b, tok);
    plan_gen_write(&g->b, loss);
    plan_gen_op(&g->b, mem(g, (double)g->logits), "mb%u.loss.fwd", mb);

    *ret_x = x;
    *ret_fn = fn;
    *ret_lg = lg;
    *ret_loss = loss;
}

static void backward(tgen *g, uint32_t mb, uint32_t tok, uint32_t xL,
                     uint32_t fn, uint32_t lg, uint32_t loss)
{
    const plan_model *m = &g->c->model;
    const double T = (double)g->T, h = m->hidden, f = m->ffn;
    const double kv = (double)g->kv, V = m->vocab;
    const double ah = (double)g->act_h, akv = (double)g->act_kv;
    const double af = (double)g->act_f;
    /* flash attention backward: recomputes the scores, 5 matmuls vs 2 */
    const double attn_flops = 2.5 * 2.0 * (double)g->c->micro_batch *
                              (double)g->c->seq * (double)g->c->seq * h;
    uint32_t dlg, dfn, dx;

    dlg = act(g, g->logits);
    plan_gen_read(&g->b, lg);
    plan_gen_read(&g->b, tok);
    plan_gen_read(&g->b, loss);
    plan_gen_write(&g->b, dlg);
    plan_gen_op(&g->b, mem(g, 2 * (double)g->logits), "mb%u.loss.bwd", mb);

    dfn = act(g, g->act_h);
    plan_gen_read(&g->b, dlg);
    plan_gen_read(&g->b, fn);
    use_weight(g, g->head);
    grad_out(g, g->head, mb);
    plan_gen_write(&g->b, dfn);
    plan_gen_op(&g->b, mm(g, 4 * T * h * V, 2 * (double)g->logits + 2 * ah +
                          2 * pbytes(g, g->head)), "mb%u.head.bwd", mb);

    dx = act(g, g->act_h);
    plan_gen_read(&g->b, dfn);
    plan_gen_read(&g->b, xL);
    use_weight(g, g->fnorm);
    grad_out(g, g->fnorm, mb);
    plan_gen_write(&g->b, dx);
    plan_gen_op(&g->b, mem(g, 3 * ah), "mb%u.final_norm.bwd", mb);

    for (uint32_t l = m->layers; l-- > 0;) {
        const tsaved *s = &g->saved[l];
        uint32_t dh, dm, dxm, dob, dq, dk, dv, da, dxl;

        dh = act(g, g->act_f);
        plan_gen_read(&g->b, dx);
        if (m->swiglu) {
            plan_gen_read(&g->b, s->f3);
            use_weight(g, lparam(g, l, LP_W3));
            grad_out(g, lparam(g, l, LP_W3), mb);
            plan_gen_write(&g->b, dh);
            plan_gen_op(&g->b, mm(g, 4 * T * h * f, 2 * af + 2 * ah +
                                  2 * pbytes(g, lparam(g, l, LP_W3))),
                        "mb%u.l%u.down.bwd", mb, l);
            uint32_t dg = act(g, g->act_f), du = act(g, g->act_f);
            plan_gen_read(&g->b, dh);
            plan_gen_read(&g->b, s->f1);
            plan_gen_read(&g->b, s->f2);
            plan_gen_write(&g->b, dg);
            plan_gen_write(&g->b, du);
            plan_gen_op(&g->b, mem(g, 5 * af), "mb%u.l%u.swiglu.bwd", mb, l);
            dm = act(g, g->act_h);
            plan_gen_read(&g->b, dg);
            plan_gen_read(&g->b, du);
            plan_gen_read(&g->b, s->mn);
            use_weight(g, lparam(g, l, LP_W1));
            use_weight(g, lparam(g, l, LP_W2));
            grad_out(g, lparam(g, l, LP_W1), mb);
            grad_out(g, lparam(g, l, LP_W2), mb);
            plan_gen_write(&g->b, dm);
            plan_gen_op(&g->b, mm(g, 8 * T * h * f, 2 * af + 2 * ah +
                                  4 * pbytes(g, lparam(g, l, LP_W1))),
                        "mb%u.l%u.gate_up.bwd", mb, l);
        } else {
            plan_gen_read(&g->b, s->f2);
            use_weight(g, lparam(g, l, LP_W2));
            grad_out(g, lparam(g, l, LP_W2), mb);
            plan_gen_write(&g->b, dh);
            plan_gen_op(&g->b, mm(g, 4 * T * h * f, 2 * af + 2 * ah +
                                  2 * pbytes(g, lparam(g, l, LP_W2))),
                        "mb%u.l%u.proj.bwd", mb, l);
            uint32_t dg = act(g, g->act_f);
            plan_gen_read(&g->b, dh);
            plan_gen_read(&g->b, s->f1);
            plan_gen_write(&g->b, dg);
            plan_gen_op(&g->b, mem(g, 3 * af), "mb%u.l%u.gelu.bwd", mb, l);
            dm = act(g, g->act_h);
            plan_gen_read(&g->b, dg);
            plan_gen_read(&g->b, s->mn);
            use_weight(g, lparam(g, l, LP_W1));
            grad_out(g, lparam(g, l, LP_W1), mb);
            plan_gen_write(&g->b, dm);
            plan_gen_op(&g->b, mm(g, 4 * T * h * f, af + 2 * ah +
                                  2 * pbytes(g, lparam(g, l, LP_W1))),
                        "mb%u.l%u.fc.bwd", mb, l);
        }

        /* norm backward plus the residual branch's gradient dx */
        dxm = act(g, g->act_h);
        plan_gen_read(&g->b, dm);
        plan_gen_read(&g->b, s->xm);
        plan_gen_read(&g->b, dx);
        use_weight(g, lparam(g, l, LP_NORM2));
        grad_out(g, lparam(g, l, LP_NORM2), mb);
        plan_gen_write(&g->b, dxm);
        plan_gen_op(&g->b, mem(g, 4 * ah), "mb%u.l%u.norm2.bwd", mb, l);

        dob = act(g, g->act_h);
        plan_gen_read(&g->b, dxm);
        plan_gen_read(&g->b, s->o);
        use_weight(g, lparam(g, l, LP_WO));
        grad_out(g, lparam(g, l, LP_WO), mb);
        plan_gen_write(&g->b, dob);
        plan_gen_op(&g->b, mm(g, 4 * T * h * h, 3 * ah +
                              2 * pbytes(g, lparam(g, l, LP_WO))),
                    "mb%u.l%u.wo.bwd", mb, l);

        dq = act(g, g->act_h);
        dk = act(g, g->act_kv);
        dv = act(g, g->act_kv);
        plan_gen_read(&g->b, dob);
        plan_gen_read(&g->b, s->q);
        plan_gen_read(&g->b, s->k);
        plan_gen_read(&g->b, s->v);
        plan_gen_read(&g->b, s->o);
        plan_gen_read(&g->b, s->lse);
        plan_gen_write(&g->b, dq);
        plan_gen_write(&g->b, dk);
        plan_gen_write(&g->b, dv);
        plan_gen_op(&g->b, plan_gen_time(&g->c->device, attn_flops,
                                         5 * ah + 4 * akv, PLAN_GEN_ATTN_EFF),
                    "mb%u.l%u.attn.bwd", mb, l);

        da = act(g, g->act_h);
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
        plan_gen_op(&g->b, mm(g, 4 * T * h * (h + 2 * kv),
                              3 * ah + 2 * akv +
                              2 * (pbytes(g, lparam(g, l, LP_WQ)) +
                                   2 * pbytes(g, lparam(g, l, LP_WK)))),
                    "mb%u.l%u.qkv.bwd", mb, l);

        dxl = act(g, g->act_h);
        plan_gen_read(&g->b, da);
        plan_gen_read(&g->b, s->x);
        plan_gen_read(&g->b, dxm);
        use_weight(g, lparam(g, l, LP_NORM1));
        grad_out(g, lparam(g, l, LP_NORM1), mb);
        plan_gen_write(&g->b, dxl);
        plan_gen_op(&g->b, mem(g, 4 * ah), "mb%u.l%u.norm1.bwd", mb, l);
        dx = dxl;
    }

    /* scatter-add into the embedding gradient (zeroed by the first) */
    plan_gen_read(&g->b, dx);
    plan_gen_read(&g->b, tok);
    grad_out(g, g->embed, mb);
    plan_gen_op(&g->b, mem(g, 2 * ah + (mb == 0 ? pbytes(g, g->embed) : 0)),
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

int plan_gen_train(const plan_gen_train_cfg *cfg, plan_trace **ret,
                   char *err, size_t errlen)
{
    tgen g;
    plan_link link;
    char name[PLAN_MAX_NAME];
    uint32_t n_params;
    int r;

    if (err && errlen)
        err[0] = '\0';
    if ((r = check_cfg(cfg, err, errlen)) < 0)
        return r;
    memset(&g, 0, sizeof g);
    g.c = cfg;
    if ((r = sizes(&g, err, errlen)) < 0)
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
    make_params(&g);
    for (uint32_t mb = 0; mb < cfg->n_micro && g.b.rc == 0; mb++) {
        uint32_t tok, x, fn, lg, loss;
        /* token ids and labels (int32), loaded for this micro-batch */
        tok = plan_gen_storage(&g.b, g.tok, PLAN_KIND_OTHER, PLAN_INIT_NONE,
                               false);
        plan_gen_write(&g.b, tok);
        plan_gen_op(&g.b, mem(&g, (double)g.tok), "mb%u.input", mb);
        forward(&g, mb, tok, &x, &fn, &lg, &loss);
        backward(&g, mb, tok, x, fn, lg, loss);
    }
    if (cfg->optimizer_step)
        optimizer(&g);
    r = plan_gen_done(&g.b, ret);
out:
    free(g.params);
    free(g.saved);
    return r;
}
