/*
 * planner/gen/gen_decode.c - one inference decode step: `tokens` new tokens
 * for a batch of `batch` sequences whose prompt (`prompt` tokens) is
 * already in the KV cache (PLANNER.md §6, docs/formats.md).
 *
 * The KV cache of each layer is a list of blocks of kv_block tokens (K and
 * V of every sequence of the batch): the prompt's blocks are on device at
 * the start, new blocks are created when a token crosses a block boundary,
 * and all are retained (the cache outlives the step).  Per generated token
 * and layer: norm, QKV projection, append of the new K/V into the current
 * block (read-modify-write unless the block is new), attention reading
 * every block of the layer, output projection, residual, norm, MLP,
 * residual; per token: embedding, final norm, LM head, sampling into the
 * token buffer the next embedding reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/gen/gen_private.h"
#include "proto/errfmt.h"
#include "hyperoffload/errors.h"

enum {
    DW_NORM1, DW_WQ, DW_WK, DW_WV, DW_WO, DW_NORM2, DW_W1, DW_W2, DW_W3,
    DW__COUNT
};

typedef struct dgen {
    const plan_gen_decode_cfg *c;
    plan_gen_b b;
    uint32_t *w;          /* weight storage per (layer, DW_*) */
    uint64_t *wbytes;
    uint32_t embed, fnorm, head, tok;
    uint32_t *blocks;     /* [layer * max_blocks + i], PLAN_NONE = absent */
    uint32_t max_blocks;
    uint64_t kv, block_bytes;
    uint64_t act_h, act_kv2, act_f, logits;
} dgen;

static int check_cfg(const plan_gen_decode_cfg *c, char *err, size_t errlen)
{
    int r;

    if (err && errlen)
        err[0] = '\0';
    if ((r = plan_gen_check_model(&c->model, err, errlen)) < 0 ||
        (r = plan_gen_check_device(&c->device, err, errlen)) < 0)
        return r;
    if (c->prompt > (1u << 24))
        return ho_errf(err, errlen, -EINVAL, "prompt must be at most "
                             "16777216 tokens, got %u", c->prompt);
    if ((r = plan_gen_check_range("tokens", c->tokens, 1, 1u << 20, err,
                                  errlen)) < 0 ||
        (r = plan_gen_check_range("batch", c->batch, 1, 65536, err,
                                  errlen)) < 0 ||
        (r = plan_gen_check_range("kv_block", c->kv_block, 1, 1u << 24, err,
                                  errlen)) < 0)
        return r;
    return plan_gen_check_dtype(c->dtype_bytes, err, errlen);
}

static int sizes(dgen *g, char *err, size_t errlen)
{
    const plan_gen_decode_cfg *c = g->c;
    const plan_model *m = &c->model;
    const uint64_t max = PLAN_MAX_STORAGE_BYTES, d = c->dtype_bytes;
    uint64_t total = (uint64_t)c->prompt + c->tokens, ops, storages;

    g->kv = (uint64_t)m->kv_heads * (m->hidden / m->heads);
    g->max_blocks = (uint32_t)((total + c->kv_block - 1) / c->kv_block);
    if (g->max_blocks > PLAN_MAX_OP_REFS - 2u)
        return ho_errf(err, errlen, -E2BIG, "%u KV blocks per layer "
                             "(attention reads them all; at most %u)",
                             g->max_blocks, PLAN_MAX_OP_REFS - 2u);
    if (!plan_gen_mul(c->batch, (uint64_t)m->hidden * d, max, &g->act_h) ||
        !plan_gen_mul(c->batch, 2u * g->kv * d, max, &g->act_kv2) ||
        !plan_gen_mul(c->batch, (uint64_t)m->ffn * d, max, &g->act_f) ||
        !plan_gen_mul(c->batch, (uint64_t)m->vocab * d, max, &g->logits) ||
        !plan_gen_mul(c->kv_block, g->act_kv2, max, &g->block_bytes) ||
        (uint64_t)m->vocab * m->hidden * d > max ||
        (uint64_t)m->hidden * m->ffn * d > max)
        return ho_errf(err, errlen, -E2BIG, "a tensor would exceed "
                             "%llu bytes", PLAN_MAX_STORAGE_BYTES);
    ops = (uint64_t)c->tokens * (12u * m->layers + 5u);
    storages = (uint64_t)c->tokens * (14u * m->layers + 5u) +
               (uint64_t)m->layers * (DW__COUNT + g->max_blocks) + 4u;
    return plan_gen_check_size(ops, storages, err, errlen);
}

static uint32_t weight(dgen *g, uint64_t elems, uint64_t *ret_bytes)
{
    uint64_t bytes = elems * g->c->dtype_bytes;
    if (ret_bytes)
        *ret_bytes = bytes;
    return plan_gen_storage(&g->b, bytes, PLAN_KIND_PARAM, PLAN_INIT_DEVICE,
                            true);
}

static void make_weights(dgen *g)
{
    const plan_model *m = &g->c->model;
    const uint64_t h = m->hidden, f = m->ffn;
    const uint64_t norm = m->swiglu ? h : 2 * h;
    const uint64_t elems[DW__COUNT] = {norm, h * h, h * g->kv, h * g->kv,
                                       h * h, norm, h * f, f * h,
                                       m->swiglu ? f * h : 0};

    for (uint32_t l = 0; l < m->layers; l++)
        for (uint32_t k = 0; k < DW__COUNT; k++) {
            uint32_t i = l * DW__COUNT + k;
            g->w[i] = elems[k] ? weight(g, elems[k], &g->wbytes[i])
                               : PLAN_NONE;
        }
    g->embed = weight(g, (uint64_t)m->vocab * h, NULL);
    g->fnorm = weight(g, norm, NULL);
    g->head = weight(g, (uint64_t)m->vocab * h, NULL);
}




/* Layer l's attention half for token t at position pos, input x: norm1,
 * QKV, the new K/V appended to the current KV block (created when the
 * token starts a block), attention over every block so far, output
 * projection, residual.  Returns the residual sum. */
static uint32_t dec_attention(dgen *g, uint32_t t, uint32_t l, uint64_t pos,
                              uint32_t x)
{
    const double B = g->c->batch, h = g->c->model.hidden;
    const double kv = (double)g->kv, ah = (double)g->act_h;
    const uint32_t *w = g->w + (size_t)l * DW__COUNT;
    const uint64_t *wb = g->wbytes + (size_t)l * DW__COUNT;
    uint32_t *blocks = g->blocks + (size_t)l * g->max_blocks;
    uint32_t blk = (uint32_t)(pos / g->c->kv_block);
    uint32_t a, q, kvn, o, p, xm;
    bool fresh = blocks[blk] == PLAN_NONE;
    double kv_bytes;

    a = gen_new(&g->b, g->act_h, x, w[DW_NORM1]);
    plan_gen_op(&g->b, gen_mem(&g->b, 2 * ah), "t%u.l%u.norm1", t, l);

    q = gen_act(&g->b, g->act_h);
    kvn = gen_act(&g->b, g->act_kv2);
    plan_gen_read(&g->b, a);
    plan_gen_read(&g->b, w[DW_WQ]);
    plan_gen_read(&g->b, w[DW_WK]);
    plan_gen_read(&g->b, w[DW_WV]);
    plan_gen_write(&g->b, q);
    plan_gen_write(&g->b, kvn);
    plan_gen_op(&g->b, gen_mm(&g->b, 2 * B * h * (h + 2 * kv),
                              (double)(wb[DW_WQ] + wb[DW_WK] + wb[DW_WV]) +
                              2 * ah + (double)g->act_kv2),
                "t%u.l%u.qkv", t, l);

    if (fresh)
        blocks[blk] = plan_gen_storage(&g->b, g->block_bytes, PLAN_KIND_KV,
                                       PLAN_INIT_NONE, true);
    plan_gen_read(&g->b, kvn);
    if (!fresh)
        plan_gen_read(&g->b, blocks[blk]);
    plan_gen_write(&g->b, blocks[blk]);
    plan_gen_op(&g->b, gen_mem(&g->b, 2 * (double)g->act_kv2),
                "t%u.l%u.kv_append", t, l);

    o = gen_act(&g->b, g->act_h);
    plan_gen_read(&g->b, q);
    for (uint32_t i = 0; i <= blk; i++)
        plan_gen_read(&g->b, blocks[i]);
    plan_gen_write(&g->b, o);
    kv_bytes = (double)(pos + 1) * (double)g->act_kv2;
    plan_gen_op(&g->b, plan_gen_time(&g->c->device, 4 * B * (double)(pos + 1)
                                     * h, kv_bytes + 2 * ah,
                                     PLAN_GEN_ATTN_EFF),
                "t%u.l%u.attn", t, l);

    p = gen_new(&g->b, g->act_h, o, w[DW_WO]);
    plan_gen_op(&g->b,
                gen_mm(&g->b, 2 * B * h * h, (double)wb[DW_WO] + 2 * ah),
                "t%u.l%u.wo", t, l);

    xm = gen_new(&g->b, g->act_h, x, p);
    plan_gen_op(&g->b, gen_mem(&g->b, 3 * ah), "t%u.l%u.res1", t, l);

    return xm;
}

/* Layer l's MLP half, input xm: norm2, SwiGLU or GELU MLP, residual.
 * Returns the layer's output. */
static uint32_t dec_mlp(dgen *g, uint32_t t, uint32_t l, uint32_t xm)
{
    const plan_model *m = &g->c->model;
    const double B = g->c->batch, h = m->hidden, f = m->ffn;
    const double ah = (double)g->act_h, af = (double)g->act_f;
    const uint32_t *w = g->w + (size_t)l * DW__COUNT;
    const uint64_t *wb = g->wbytes + (size_t)l * DW__COUNT;
    uint32_t mn, f1, f2 = PLAN_NONE, f3, mo, xn;

    mn = gen_new(&g->b, g->act_h, xm, w[DW_NORM2]);
    plan_gen_op(&g->b, gen_mem(&g->b, 2 * ah), "t%u.l%u.norm2", t, l);

    f1 = gen_act(&g->b, g->act_f);
    if (m->swiglu)
        f2 = gen_act(&g->b, g->act_f);
    plan_gen_read(&g->b, mn);
    plan_gen_read(&g->b, w[DW_W1]);
    if (m->swiglu)
        plan_gen_read(&g->b, w[DW_W2]);
    plan_gen_write(&g->b, f1);
    if (m->swiglu)
        plan_gen_write(&g->b, f2);
    plan_gen_op(&g->b,
                gen_mm(&g->b, (m->swiglu ? 4 : 2) * B * h * f,
                       (double)(wb[DW_W1] + (m->swiglu ? wb[DW_W2] : 0)) + ah +
                       (m->swiglu ? 2 : 1) * af),
                m->swiglu ? "t%u.l%u.gate_up" : "t%u.l%u.fc", t, l);

    f3 = gen_act(&g->b, g->act_f);
    plan_gen_read(&g->b, f1);
    if (m->swiglu)
        plan_gen_read(&g->b, f2);
    plan_gen_write(&g->b, f3);
    plan_gen_op(&g->b, gen_mem(&g->b, (m->swiglu ? 3 : 2) * af),
                m->swiglu ? "t%u.l%u.swiglu" : "t%u.l%u.gelu", t, l);

    mo = gen_new(&g->b, g->act_h, f3, m->swiglu ? w[DW_W3] : w[DW_W2]);
    plan_gen_op(&g->b,
                gen_mm(&g->b, 2 * B * h * f,
                       (double)(m->swiglu ? wb[DW_W3] : wb[DW_W2]) + af + ah),
                m->swiglu ? "t%u.l%u.down" : "t%u.l%u.proj", t, l);

    xn = gen_new(&g->b, g->act_h, xm, mo);
    plan_gen_op(&g->b, gen_mem(&g->b, 3 * ah), "t%u.l%u.res2", t, l);
    return xn;
}

int plan_gen_decode(const plan_gen_decode_cfg *cfg, plan_trace **ret_trace,
                    char *err, size_t errlen)
{
    const plan_model *m = &cfg->model;
    dgen g = {.c = cfg};
    plan_link link;
    char name[PLAN_MAX_NAME];
    size_t nw, nb;
    int r;

    if ((r = check_cfg(cfg, err, errlen)) < 0 ||
        (r = sizes(&g, err, errlen)) < 0)
        return r;
    nw = (size_t)m->layers * DW__COUNT;
    nb = (size_t)m->layers * g.max_blocks;
    g.w = calloc(nw, sizeof *g.w);
    g.wbytes = calloc(nw, sizeof *g.wbytes);
    g.blocks = malloc(nb * sizeof *g.blocks);
    if (!g.w || !g.wbytes || !g.blocks) {
        r = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    snprintf(name, sizeof name, "%s-decode-p%u-t%u-b%u",
             m->name[0] ? m->name : "custom", cfg->prompt, cfg->tokens,
             cfg->batch);
    link = plan_gen_link(&cfg->device);
    plan_gen_begin(&g.b, name, &link, err, errlen);
    g.b.dev = &cfg->device;
    make_weights(&g);
    /* the next input token of every sequence (int32), kept across steps */
    g.tok = plan_gen_storage(&g.b, (uint64_t)cfg->batch * 4u,
                             PLAN_KIND_OTHER, PLAN_INIT_DEVICE, true);
    /* the prompt's blocks are on device at the start, movable: the plan
     * may keep old blocks on the host between steps (the blocks this step
     * creates start as initial: none and cannot be) */
    for (uint32_t l = 0; l < m->layers; l++)
        for (uint32_t i = 0; i < g.max_blocks; i++)
            g.blocks[(size_t)l * g.max_blocks + i] =
                (uint64_t)i * cfg->kv_block < cfg->prompt
                    ? plan_gen_storage_movable(&g.b, g.block_bytes,
                                               PLAN_KIND_KV,
                                               PLAN_INIT_DEVICE, true)
                    : PLAN_NONE;
    for (uint32_t t = 0; t < cfg->tokens && g.b.rc == 0; t++) {
        uint64_t pos = (uint64_t)cfg->prompt + t;
        uint32_t x, fn, lg;

        x = gen_act(&g.b, g.act_h);
        plan_gen_read(&g.b, g.tok);
        plan_gen_read(&g.b, g.embed);
        plan_gen_write(&g.b, x);
        plan_gen_op(&g.b, gen_mem(&g.b, 2 * (double)g.act_h), "t%u.embed", t);
        for (uint32_t l = 0; l < m->layers; l++)
            x = dec_mlp(&g, t, l, dec_attention(&g, t, l, pos, x));
        fn = gen_act(&g.b, g.act_h);
        plan_gen_read(&g.b, x);
        plan_gen_read(&g.b, g.fnorm);
        plan_gen_write(&g.b, fn);
        plan_gen_op(&g.b, gen_mem(&g.b, 2 * (double)g.act_h),
                    "t%u.final_norm", t);
        lg = gen_act(&g.b, g.logits);
        plan_gen_read(&g.b, fn);
        plan_gen_read(&g.b, g.head);
        plan_gen_write(&g.b, lg);
        plan_gen_op(&g.b,
                    gen_mm(&g.b, 2.0 * cfg->batch * m->hidden * m->vocab,
                           1.0 * m->vocab * m->hidden * cfg->dtype_bytes +
                           (double)g.logits + (double)g.act_h),
                    "t%u.head", t);
        plan_gen_read(&g.b, lg);
        plan_gen_write(&g.b, g.tok);
        plan_gen_op(&g.b, gen_mem(&g.b, (double)g.logits), "t%u.sample", t);
    }
    r = plan_gen_finish(&g.b, ret_trace);
out:
    free(g.w);
    free(g.wbytes);
    free(g.blocks);
    return r;
}
