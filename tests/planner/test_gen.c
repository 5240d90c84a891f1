/*
 * tests/planner/test_gen.c - built-in workloads and the trace generators
 * (planner/workloads.c, gen_train.c, gen_decode.c, gen_random.c): memory
 * totals against workloads/README.md, structure, well-formedness and
 * determinism.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/plan.h"
#include "planner/gen/gen.h"
#include "tests/planner/plan_test_util.h"

static char err[512];

static bool under_valgrind(void)
{
    const char *v = getenv("HO_UNDER_VALGRIND");
    return v && *v && strcmp(v, "0") != 0;
}

/* Independent of plan_trace_finish's own check: the first access of every
 * `initial: none` storage writes it and does not read it. */
static void assert_well_formed(const plan_trace *t)
{
    uint32_t *first = malloc(sizeof *first * (t->n_storages + 1u));
    uint8_t *flags = calloc(t->n_storages + 1u, 1);
    ck_assert(t->finished);
    for (uint32_t s = 0; s < t->n_storages; s++)
        first[s] = UINT32_MAX;
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *o = &t->ops[i];
        for (uint32_t k = 0; k < o->n_reads + o->n_writes; k++) {
            uint32_t s = t->refs[o->first_ref + k];
            ck_assert_uint_lt(s, t->n_storages);
            if (first[s] == UINT32_MAX)
                first[s] = i;
            if (first[s] == i)
                flags[s] |= k < o->n_reads ? 1 : 2;
        }
    }
    for (uint32_t s = 0; s < t->n_storages; s++) {
        if (t->storages[s].initial != PLAN_INIT_NONE || first[s] == UINT32_MAX)
            continue;
        ck_assert_msg(flags[s] == 2, "storage id %llu (initial none) first "
                      "accessed by op %u with flags %u",
                      (unsigned long long)t->storages[s].id, first[s],
                      flags[s]);
    }
    free(first);
    free(flags);
}

static uint64_t bytes_of_kind(const plan_trace *t, plan_kind k)
{
    uint64_t sum = 0;
    for (uint32_t s = 0; s < t->n_storages; s++)
        if (t->storages[s].kind == k)
            sum += t->storages[s].bytes;
    return sum;
}

static bool name_has_prefix(const plan_trace *t, uint32_t op, const char *p)
{
    return strncmp(plan_op_name(t, op), p, strlen(p)) == 0;
}

START_TEST(workload_tables)
{
    const plan_model *m = plan_model_find("llama3-8b");
    const plan_device *d = plan_device_find("h200");
    int n = 0;

    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(m->layers, 32);
    ck_assert_uint_eq(m->kv_heads, 8);
    ck_assert_uint_eq(m->ffn, 14336);
    ck_assert_uint_eq(m->vocab, 128256);
    ck_assert(m->swiglu);
    ck_assert(!plan_model_find("gpt3-175b")->swiglu);
    ck_assert_uint_eq(plan_model_find("qwen2.5-0.5b")->hidden, 896);
    ck_assert_ptr_nonnull(d);
    ck_assert(d->tflops == 989.0 && d->hbm_gbps == 4800.0);
    ck_assert(d->link_gbps == 55.0 && d->link_latency_us == 10.0);
    ck_assert(plan_device_find("910b")->link_gbps == 28.0);
    ck_assert(plan_device_find("910b")->hbm_gib == 64.0);
    ck_assert_ptr_null(plan_model_find("llama2-7B"));
    ck_assert_ptr_null(plan_model_find(NULL));
    ck_assert_ptr_null(plan_device_find("tpu"));
    for (const plan_model *p = plan_models; p->name[0]; p++)
        n++;
    ck_assert_int_eq(n, 7);
    n = 0;
    for (const plan_device *p = plan_devices; p->name[0]; p++)
        n++;
    ck_assert_int_eq(n, 4);
}
END_TEST

static plan_gen_train_cfg llama7b(uint32_t n_micro)
{
    plan_gen_train_cfg c;
    memset(&c, 0, sizeof c);
    c.model = *plan_model_find("llama2-7b");
    c.device = *plan_device_find("910b");
    c.seq = 4096;
    c.micro_batch = 1;
    c.n_micro = n_micro;
    c.dtype_bytes = 2;
    c.optimizer_step = true;
    return c;
}

START_TEST(train_totals)
{
    plan_gen_train_cfg c = llama7b(2);
    plan_trace *t = NULL;
    const uint64_t params = 6738415616ull; /* LLaMA-2-7B parameter count */
    uint64_t saved = 0, T = 4096, h = 4096;
    uint32_t n_opt = 0, n_param = 0;

    ck_assert_msg(plan_gen_train(&c, &t, err, sizeof err) == 0, "%s", err);
    assert_well_formed(t);
    ck_assert(t->link.h2d_gbps == 28.0 && t->link.d2h_gbps == 28.0);
    ck_assert(t->link.latency_us == 15.0 && t->link.duplex);
    /* 13.5 GB of bf16 weights, as many of gradients, 12 B/param of Adam */
    ck_assert_uint_eq(bytes_of_kind(t, PLAN_KIND_PARAM), 2 * params);
    ck_assert_uint_eq(bytes_of_kind(t, PLAN_KIND_GRAD), 2 * params);
    ck_assert_uint_eq(bytes_of_kind(t, PLAN_KIND_OPTIMIZER), 12 * params);
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *st = &t->storages[s];
        if (st->kind == PLAN_KIND_PARAM) {
            n_param++;
            ck_assert_uint_eq(st->initial, PLAN_INIT_DEVICE);
            ck_assert(st->retained);
        } else if (st->kind == PLAN_KIND_OPTIMIZER) {
            ck_assert_uint_eq(st->initial, PLAN_INIT_DEVICE);
            ck_assert(st->retained);
        } else if (st->kind == PLAN_KIND_GRAD) {
            ck_assert_uint_eq(st->initial, PLAN_INIT_NONE);
            ck_assert(!st->retained);
        } else if (st->kind == PLAN_KIND_ACTIVATION) {
            ck_assert(!st->retained);
        }
    }
    ck_assert_uint_eq(n_param, 32 * 9 + 3);
    for (uint32_t i = 0; i < t->n_ops; i++)
        if (name_has_prefix(t, i, "opt."))
            n_opt++;
    ck_assert_uint_eq(n_opt, n_param);

    /* Saved activations of one layer: written by its forward ops, read by
     * its backward ops (same micro-batch): ~34 s b h bytes in bf16. */
    for (uint32_t s = 0; s < t->n_storages; s++) {
        bool fwd = false, bwd = false;
        if (t->storages[s].kind != PLAN_KIND_ACTIVATION)
            continue;
        for (uint32_t a = t->acc_start[s]; a < t->acc_start[s + 1]; a++) {
            uint32_t op = t->acc[a].op;
            if (name_has_prefix(t, op, "mb0.l7.") &&
                (t->acc[a].flags & PLAN_ACC_WRITE) &&
                strstr(plan_op_name(t, op), ".fwd"))
                fwd = true;
            if (name_has_prefix(t, op, "mb0.l7.") &&
                strstr(plan_op_name(t, op), ".bwd"))
                bwd = true;
        }
        if (fwd && bwd)
            saved += t->storages[s].bytes;
    }
    /* layer 7's own input x is written by layer 6: add it */
    saved += T * h * 2;
    ck_assert_msg(saved >= 28 * T * h && saved <= 36 * T * h,
                  "saved activations per layer %.1f s b h",
                  (double)saved / (double)(T * h));
    plan_trace_free(t);
}
END_TEST

START_TEST(train_structure)
{
    plan_gen_train_cfg c = llama7b(3);
    plan_trace *t = NULL;
    plan_trace_summary sm;
    uint32_t g;

    c.model.layers = 4;
    c.params_on_host = true;
    c.optimizer_on_host = true;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), 0);
    assert_well_formed(t);
    /* gradient of layer 0's wq: written (not read) by micro-batch 0,
     * read and written by 1 and 2, read by the optimizer */
    g = PLAN_NONE;
    for (uint32_t s = 0; s < t->n_storages && g == PLAN_NONE; s++)
        if (t->storages[s].kind == PLAN_KIND_GRAD)
            g = s;
    ck_assert_uint_ne(g, PLAN_NONE);
    ck_assert_uint_eq(t->acc_start[g + 1] - t->acc_start[g], 4);
    ck_assert_uint_eq(t->acc[t->acc_start[g]].flags, PLAN_ACC_WRITE);
    ck_assert(name_has_prefix(t, t->acc[t->acc_start[g]].op, "mb0."));
    ck_assert_uint_eq(t->acc[t->acc_start[g] + 1].flags,
                      PLAN_ACC_READ | PLAN_ACC_WRITE);
    ck_assert(name_has_prefix(t, t->acc[t->acc_start[g] + 2].op, "mb2."));
    ck_assert(name_has_prefix(t, t->acc[t->acc_start[g] + 3].op, "opt."));
    ck_assert_uint_eq(t->acc[t->acc_start[g] + 3].flags, PLAN_ACC_READ);
    for (uint32_t s = 0; s < t->n_storages; s++)
        if (t->storages[s].kind == PLAN_KIND_PARAM ||
            t->storages[s].kind == PLAN_KIND_OPTIMIZER)
            ck_assert_uint_eq(t->storages[s].initial, PLAN_INIT_HOST);
    /* the last op is an optimizer update */
    ck_assert(name_has_prefix(t, t->n_ops - 1, "opt."));
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    ck_assert_uint_gt(sm.no_offload_peak, 0);
    plan_trace_free(t);

    /* without the optimizer step the gradients are the step's output */
    c.optimizer_step = false;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), 0);
    for (uint32_t i = 0; i < t->n_ops; i++)
        ck_assert(!name_has_prefix(t, i, "opt."));
    for (uint32_t s = 0; s < t->n_storages; s++)
        if (t->storages[s].kind == PLAN_KIND_GRAD)
            ck_assert(t->storages[s].retained);
    plan_trace_free(t);

    /* GELU model, fp32: no master copy (m and v only) */
    memset(&c, 0, sizeof c);
    c.model = *plan_model_find("gpt3-175b");
    c.model.layers = 2;
    c.model.hidden = 1024;
    c.model.heads = 16;
    c.model.kv_heads = 16;
    c.model.ffn = 4096;
    c.device = *plan_device_find("a100");
    c.seq = 256;
    c.micro_batch = 2;
    c.n_micro = 1;
    c.dtype_bytes = 4;
    c.optimizer_step = true;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), 0);
    assert_well_formed(t);
    ck_assert_uint_eq(bytes_of_kind(t, PLAN_KIND_OPTIMIZER),
                      2 * bytes_of_kind(t, PLAN_KIND_PARAM));
    plan_trace_free(t);
}
END_TEST

START_TEST(train_durations)
{
    plan_gen_train_cfg c = llama7b(4);
    plan_trace *t = NULL;
    double compute = 0, head = 0;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), 0);
    for (uint32_t i = 0; i < t->n_ops; i++) {
        compute += t->ops[i].duration_us;
        if (strcmp(plan_op_name(t, i), "mb0.head.fwd") == 0)
            head = t->ops[i].duration_us;
    }
    /* 6 N T flops per micro-batch at 60% of 313 TFLOP/s is 3.5 s for 4
     * micro-batches; attention and memory-bound ops add some */
    ck_assert_msg(compute > 3.5e6 && compute < 6e6, "compute %.0f us",
                  compute);
    /* LM head: 2 T h V flops at 0.6 x 313 TFLOP/s, plus 2 us overhead */
    ck_assert_msg(head > 5710.0 && head < 5730.0, "head %.2f us", head);
    plan_trace_free(t);
}
END_TEST

START_TEST(train_deterministic)
{
    plan_gen_train_cfg c = llama7b(2);
    plan_trace *a = NULL, *b = NULL;
    char *ja, *jb;
    c.model.layers = 3;
    ck_assert_int_eq(plan_gen_train(&c, &a, err, sizeof err), 0);
    ck_assert_int_eq(plan_gen_train(&c, &b, err, sizeof err), 0);
    ja = tu_trace_json(a);
    jb = tu_trace_json(b);
    ck_assert_str_eq(ja, jb);
    ck_assert_uint_eq(plan_trace_hash(a), plan_trace_hash(b));
    free(ja);
    free(jb);
    plan_trace_free(a);
    plan_trace_free(b);
}
END_TEST

START_TEST(train_bad_config)
{
    plan_gen_train_cfg c = llama7b(1);
    plan_trace *t = NULL;
    c.model.heads = 30; /* does not divide 4096 */
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "heads"));
    c = llama7b(1);
    c.dtype_bytes = 3;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), -EINVAL);
    c = llama7b(1);
    c.device.tflops = 0;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), -EINVAL);
    c = llama7b(65536);
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), -E2BIG);
    ck_assert_ptr_null(t);
}
END_TEST

static plan_gen_decode_cfg decode_cfg(const char *model)
{
    plan_gen_decode_cfg d;
    memset(&d, 0, sizeof d);
    d.model = *plan_model_find(model);
    d.device = *plan_device_find("910b");
    d.prompt = 4096;
    d.tokens = 64;
    d.batch = 8;
    d.dtype_bytes = 2;
    d.kv_block = 256;
    return d;
}

START_TEST(decode_kv)
{
    static const struct {
        const char *model;
        uint64_t per_token; /* workloads/README.md */
    } cases[] = {{"llama2-7b", 512 * 1024}, {"llama3-8b", 128 * 1024}};

    for (size_t k = 0; k < 2; k++) {
        plan_gen_decode_cfg d = decode_cfg(cases[k].model);
        plan_trace *t = NULL;
        uint32_t blocks = (4096 + 64 + 255) / 256; /* 17 per layer */
        uint32_t n_kv = 0, n_init = 0, attn = PLAN_NONE;

        if (under_valgrind())
            d.tokens = 8, blocks = 17; /* 4104 tokens still need 17 */
        ck_assert_int_eq(plan_gen_decode(&d, &t, err, sizeof err), 0);
        assert_well_formed(t);
        ck_assert_uint_eq(bytes_of_kind(t, PLAN_KIND_KV),
                          (uint64_t)blocks * 256 * d.batch *
                              cases[k].per_token);
        for (uint32_t s = 0; s < t->n_storages; s++) {
            if (t->storages[s].kind != PLAN_KIND_KV)
                continue;
            n_kv++;
            ck_assert(t->storages[s].retained);
            if (t->storages[s].initial == PLAN_INIT_DEVICE)
                n_init++;
            /* the prompt's blocks are movable, the step's new ones (initial
             * none) cannot be */
            ck_assert_int_eq(t->storages[s].movable,
                             t->storages[s].initial == PLAN_INIT_DEVICE);
        }
        ck_assert_uint_eq(n_kv, 32 * blocks);
        ck_assert_uint_eq(n_init, 32 * 16); /* the prompt's 16 blocks */
        /* the last token's attention reads all 17 blocks of its layer */
        for (uint32_t i = t->n_ops; i-- > 0 && attn == PLAN_NONE;)
            if (strstr(plan_op_name(t, i), ".l31.attn"))
                attn = i;
        ck_assert_uint_ne(attn, PLAN_NONE);
        {
            uint32_t kvr = 0;
            const plan_op *o = &t->ops[attn];
            for (uint32_t r = 0; r < o->n_reads; r++)
                if (t->storages[t->refs[o->first_ref + r]].kind ==
                    PLAN_KIND_KV)
                    kvr++;
            ck_assert_uint_eq(kvr, blocks);
        }
        ck_assert_uint_eq(bytes_of_kind(t, PLAN_KIND_PARAM),
                          cases[k].per_token == 512 * 1024
                              ? 2 * 6738415616ull
                              : 2 * 8030261248ull);
        plan_trace_free(t);
    }
}
END_TEST

/* params_movable / optimizer_movable mark exactly those storages; the
 * random generator's p_movable only retained, initial device/host ones
 * and leaves traces without it unchanged. */
START_TEST(movable_flags)
{
    plan_gen_train_cfg c;
    plan_trace *t = NULL, *u = NULL;

    memset(&c, 0, sizeof c);
    c.model = *plan_model_find("qwen2.5-0.5b");
    c.model.layers = 2;
    c.device = *plan_device_find("a100");
    c.seq = 256;
    c.micro_batch = 1;
    c.n_micro = 2;
    c.dtype_bytes = 2;
    c.optimizer_step = true;
    c.optimizer_on_host = true;
    for (int f = 0; f < 4; f++) {
        c.params_movable = f & 1;
        c.optimizer_movable = (f & 2) != 0;
        ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), 0);
        uint32_t np = 0, no = 0;
        for (uint32_t s = 0; s < t->n_storages; s++) {
            const plan_storage *st = &t->storages[s];
            if (!st->movable)
                continue;
            ck_assert(st->kind == PLAN_KIND_PARAM ||
                      st->kind == PLAN_KIND_OPTIMIZER);
            np += st->kind == PLAN_KIND_PARAM;
            no += st->kind == PLAN_KIND_OPTIMIZER;
        }
        plan_trace_summary sm;
        ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
        ck_assert_uint_eq(np, c.params_movable
                                  ? sm.count_by_kind[PLAN_KIND_PARAM] : 0);
        ck_assert_uint_eq(no, c.optimizer_movable
                                  ? sm.count_by_kind[PLAN_KIND_OPTIMIZER]
                                  : 0);
        ck_assert_uint_eq(sm.n_movable, np + no);
        plan_trace_free(t);
    }

    plan_gen_random_cfg r = {.seed = 5, .n_ops = 3000, .n_storages = 800,
                             .p_initial_device = 0.2, .p_initial_host = 0.2,
                             .p_retained = 0.4, .p_pinned = 0.02};
    ck_assert_int_eq(plan_gen_random(&r, &t, err, sizeof err), 0);
    r.p_movable = 0.5;
    ck_assert_int_eq(plan_gen_random(&r, &u, err, sizeof err), 0);
    uint32_t n = 0, eligible = 0;
    for (uint32_t s = 0; s < t->n_storages; s++) {
        ck_assert(!t->storages[s].movable);
        const plan_storage *st = &u->storages[s];
        eligible += st->retained && st->initial != PLAN_INIT_NONE;
        if (st->movable) {
            n++;
            ck_assert(st->retained && st->initial != PLAN_INIT_NONE);
        }
    }
    ck_assert_uint_gt(n, eligible / 4);
    ck_assert_uint_lt(n, eligible * 3 / 4);
    plan_trace_free(t);
    plan_trace_free(u);
    r.p_movable = 1.5;
    ck_assert_int_eq(plan_gen_random(&r, &t, err, sizeof err), -EINVAL);
}
END_TEST

START_TEST(decode_deterministic)
{
    plan_gen_decode_cfg d = decode_cfg("qwen2.5-0.5b");
    plan_trace *a = NULL, *b = NULL;
    d.tokens = 6;
    d.prompt = 0; /* no prompt: the first token creates every block */
    ck_assert_int_eq(plan_gen_decode(&d, &a, err, sizeof err), 0);
    ck_assert_int_eq(plan_gen_decode(&d, &b, err, sizeof err), 0);
    assert_well_formed(a);
    ck_assert_uint_eq(plan_trace_hash(a), plan_trace_hash(b));
    plan_trace_free(a);
    plan_trace_free(b);
    d.kv_block = 0;
    ck_assert_int_eq(plan_gen_decode(&d, &a, err, sizeof err), -EINVAL);
}
END_TEST

START_TEST(random_properties)
{
    plan_gen_random_cfg c = {.seed = 42, .n_ops = 20000, .n_storages = 5000,
                             .max_refs_per_op = 6, .min_bytes = 4096,
                             .max_bytes = 64 << 20, .p_initial_device = 0.1,
                             .p_initial_host = 0.05, .p_retained = 0.1,
                             .p_pinned = 0.02};
    plan_trace *t = NULL, *t2 = NULL;
    uint32_t hot = 0, long_gap = 0, short_lived = 0, pinned = 0, host = 0;
    uint32_t device = 0, retained = 0;

    ck_assert_int_eq(plan_gen_random(&c, &t, err, sizeof err), 0);
    assert_well_formed(t);
    ck_assert_uint_eq(t->n_ops, 20000);
    ck_assert_uint_eq(t->n_storages, 5000);
    for (uint32_t i = 0; i < t->n_ops; i++)
        ck_assert_uint_le(t->ops[i].n_reads + t->ops[i].n_writes, 6);
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *st = &t->storages[s];
        uint32_t n = t->acc_start[s + 1] - t->acc_start[s];
        ck_assert_uint_ge(st->bytes, 4096);
        ck_assert_uint_le(st->bytes, 64 << 20);
        pinned += st->pinned;
        retained += st->retained;
        host += st->initial == PLAN_INIT_HOST;
        device += st->initial == PLAN_INIT_DEVICE;
        if (n >= 20)
            hot++;
        if (n >= 2) {
            uint32_t a0 = t->acc_start[s];
            uint32_t span = t->acc[a0 + n - 1].op - t->acc[a0].op;
            if (span <= 32)
                short_lived++;
            for (uint32_t a = a0 + 1; a < a0 + n; a++)
                if (t->acc[a].op - t->acc[a - 1].op >= t->n_ops / 4) {
                    long_gap++;
                    break;
                }
        }
    }
    /* the mixture is there */
    ck_assert_uint_gt(hot, 10);
    ck_assert_uint_gt(long_gap, 10);
    ck_assert_msg(short_lived > 1000, "short-lived %u", short_lived);
    ck_assert_uint_gt(pinned, 20);
    ck_assert_uint_gt(retained, 200);
    ck_assert_uint_gt(host, 100);
    ck_assert_uint_gt(device, 200);

    /* deterministic for a seed, different for another */
    ck_assert_int_eq(plan_gen_random(&c, &t2, err, sizeof err), 0);
    ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(t2));
    plan_trace_free(t2);
    c.seed = 43;
    ck_assert_int_eq(plan_gen_random(&c, &t2, err, sizeof err), 0);
    ck_assert_uint_ne(plan_trace_hash(t), plan_trace_hash(t2));
    plan_trace_free(t2);
    plan_trace_free(t);

    /* impossible configurations */
    c.n_storages = 10;
    c.n_ops = 1;
    ck_assert_int_eq(plan_gen_random(&c, &t, err, sizeof err), -EINVAL);
    c.n_ops = 100;
    c.p_initial_device = 0.7;
    c.p_initial_host = 0.7;
    ck_assert_int_eq(plan_gen_random(&c, &t, err, sizeof err), -EINVAL);
}
END_TEST

/* The scale trace of PLANNER.md §4.5: 1,000,000 ops, 250,000 storages
 * (smaller under valgrind, same checks). */
START_TEST(random_scale)
{
    uint32_t ops = under_valgrind() ? 40000 : 1000000;
    uint32_t sts = under_valgrind() ? 10000 : 250000;
    plan_gen_random_cfg c = {.seed = 7, .n_ops = ops, .n_storages = sts,
                             .max_refs_per_op = 6, .p_initial_device = 0.1,
                             .p_initial_host = 0.05, .p_retained = 0.1,
                             .p_pinned = 0.01};
    plan_trace *t = NULL;
    uint32_t never = 0;
    ck_assert_int_eq(plan_gen_random(&c, &t, err, sizeof err), 0);
    ck_assert_uint_eq(t->n_ops, ops);
    ck_assert_uint_eq(t->n_storages, sts);
    assert_well_formed(t);
    for (uint32_t s = 0; s < t->n_storages; s++)
        if (t->storages[s].initial == PLAN_INIT_NONE &&
            t->acc_start[s] == t->acc_start[s + 1])
            never++;
    ck_assert_uint_eq(never, 0); /* every none storage is born */
    ck_assert_uint_gt(t->n_refs, (uint64_t)ops * 2);
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_gen");
    TCase *tc = tcase_create("gen");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, workload_tables);
    tcase_add_test(tc, train_totals);
    tcase_add_test(tc, train_structure);
    tcase_add_test(tc, train_durations);
    tcase_add_test(tc, train_deterministic);
    tcase_add_test(tc, train_bad_config);
    tcase_add_test(tc, decode_kv);
    tcase_add_test(tc, decode_deterministic);
    tcase_add_test(tc, movable_flags);
    tcase_add_test(tc, random_properties);
    tcase_add_test(tc, random_scale);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
