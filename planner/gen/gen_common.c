/*
 * planner/gen/gen_common.c - the trace builder and cost helpers shared by the
 * workload generators (gen_private.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "planner/gen/gen_private.h"
#include "proto/errfmt.h"
#include "hyperoffload/errors.h"

void plan_gen_begin(plan_gen_b *b, const char *name, const plan_link *link,
                    char *err, size_t errlen)
{
    b->t = plan_trace_new(name, link);
    b->reads = malloc(sizeof *b->reads * PLAN_MAX_OP_REFS);
    b->writes = malloc(sizeof *b->writes * PLAN_MAX_OP_REFS);
    b->n_reads = b->n_writes = 0;
    b->dev = NULL;
    b->err = err;
    b->errlen = errlen;
    b->rc = b->t && b->reads && b->writes
                ? 0
                : ho_errf(err, errlen, -ENOMEM, "out of memory");
}

static uint32_t add_storage(plan_gen_b *b, uint64_t bytes, plan_kind kind,
                            plan_initial initial, bool retained, bool movable)
{
    plan_storage s = {0};
    uint32_t ix = 0;
    int r;

    if (b->rc < 0)
        return 0;
    s.id = b->t->n_storages;
    s.bytes = bytes;
    s.kind = (uint8_t)kind;
    s.initial = (uint8_t)initial;
    s.retained = retained;
    s.movable = movable;
    r = plan_trace_add_storage(b->t, &s, &ix, b->err, b->errlen);
    if (r < 0) {
        b->rc = r;
        return 0;
    }
    return ix;
}

uint32_t plan_gen_storage(plan_gen_b *b, uint64_t bytes, plan_kind kind,
                          plan_initial initial, bool retained)
{
    return add_storage(b, bytes, kind, initial, retained, false);
}

uint32_t plan_gen_storage_movable(plan_gen_b *b, uint64_t bytes,
                                  plan_kind kind, plan_initial initial,
                                  bool movable)
{
    return add_storage(b, bytes, kind, initial, true, movable);
}

/* Queue storage s in list[*n] (the reads or the writes of the next op). */
static void queue(plan_gen_b *b, uint32_t *list, uint32_t *n, uint32_t s,
                  const char *what)
{
    if (b->rc < 0)
        return;
    if (*n >= PLAN_MAX_OP_REFS) {
        b->rc = ho_errf(b->err, b->errlen, HO_E_INTERNAL,
                        "generator: too many %s in one op", what);
        return;
    }
    list[(*n)++] = s;
}

void plan_gen_read(plan_gen_b *b, uint32_t s)
{
    queue(b, b->reads, &b->n_reads, s, "reads");
}

void plan_gen_write(plan_gen_b *b, uint32_t s)
{
    queue(b, b->writes, &b->n_writes, s, "writes");
}

void plan_gen_op(plan_gen_b *b, double duration_us, const char *fmt, ...)
{
    char name[PLAN_MAX_NAME];
    va_list ap;
    int r;

    if (b->rc < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    r = plan_trace_add_op(b->t, name, duration_us, b->reads, b->n_reads,
                          b->writes, b->n_writes, b->err, b->errlen);
    b->n_reads = b->n_writes = 0;
    if (r < 0)
        b->rc = r;
}

int plan_gen_finish(plan_gen_b *b, plan_trace **ret_trace)
{
    int r = b->rc;

    free(b->reads);
    free(b->writes);
    b->reads = b->writes = NULL;
    if (r == 0)
        r = plan_trace_finish(b->t, b->err, b->errlen);
    if (r < 0) {
        plan_trace_free(b->t);
        b->t = NULL;
        return r;
    }
    *ret_trace = b->t;
    b->t = NULL;
    return 0;
}

double plan_gen_time(const plan_device *d, double flops, double bytes,
                     double flop_eff)
{
    double tc = flops / (d->tflops * 1e6 * flop_eff);        /* us */
    double tm = bytes / (d->hbm_gbps * 1e3 * PLAN_GEN_HBM_EFF); /* us */
    return PLAN_GEN_OP_OVERHEAD_US + (tc > tm ? tc : tm);
}

int plan_gen_check_model(const plan_model *m, char *err, size_t errlen)
{
    if (m->layers < 1 || m->layers > 1024)
        return ho_errf(err, errlen, -EINVAL,
                             "layers must be in [1, 1024], got %u",
                             m->layers);
    if (m->hidden < 1 || m->hidden > (1u << 20))
        return ho_errf(err, errlen, -EINVAL,
                             "hidden must be in [1, 1048576], got %u",
                             m->hidden);
    if (m->heads < 1 || m->hidden % m->heads != 0)
        return ho_errf(err, errlen, -EINVAL, "heads (%u) must divide "
                             "hidden (%u)", m->heads, m->hidden);
    if (m->kv_heads < 1 || m->kv_heads > m->heads ||
        m->heads % m->kv_heads != 0)
        return ho_errf(err, errlen, -EINVAL, "kv_heads (%u) must "
                             "divide heads (%u)", m->kv_heads, m->heads);
    if (m->ffn < 1 || m->ffn > (1u << 22))
        return ho_errf(err, errlen, -EINVAL,
                             "ffn must be in [1, 4194304], got %u", m->ffn);
    if (m->vocab < 1 || m->vocab > (1u << 24))
        return ho_errf(err, errlen, -EINVAL,
                             "vocab must be in [1, 16777216], got %u",
                             m->vocab);
    return 0;
}

int plan_gen_check_device(const plan_device *d, char *err, size_t errlen)
{
    if (!(isfinite(d->tflops) && d->tflops > 0 && d->tflops <= 1e6))
        return ho_errf(err, errlen, -EINVAL, "device: tflops must be "
                             "in (0, 1e6], got %g", d->tflops);
    if (!(isfinite(d->hbm_gbps) && d->hbm_gbps > 0 && d->hbm_gbps <= 1e6))
        return ho_errf(err, errlen, -EINVAL, "device: hbm_gbps must "
                             "be in (0, 1e6], got %g", d->hbm_gbps);
    if (!(isfinite(d->link_gbps) && d->link_gbps > 0 &&
          d->link_gbps <= PLAN_FMT_MAX_GBPS))
        return ho_errf(err, errlen, -EINVAL, "device: link_gbps must "
                             "be in (0, 1e6], got %g", d->link_gbps);
    if (!(isfinite(d->link_latency_us) && d->link_latency_us >= 0 &&
          d->link_latency_us <= PLAN_FMT_MAX_LATENCY_US))
        return ho_errf(err, errlen, -EINVAL, "device: link latency "
                             "must be in [0, 1e9] us, got %g",
                             d->link_latency_us);
    return 0;
}

plan_link plan_gen_link(const plan_device *d)
{
    plan_link l;
    l.h2d_gbps = d->link_gbps;
    l.d2h_gbps = d->link_gbps;
    l.latency_us = d->link_latency_us;
    l.duplex = true;
    return l;
}

bool plan_gen_mul(uint64_t a, uint64_t b, uint64_t max, uint64_t *ret_value)
{
    uint64_t p;
    if (__builtin_mul_overflow(a, b, &p) || p > max)
        return false;
    *ret_value = p;
    return true;
}

int plan_gen_check_size(uint64_t ops, uint64_t storages, char *err,
                        size_t errlen)
{
    if (ops > PLAN_MAX_OPS || storages > PLAN_MAX_STORAGES)
        return ho_errf(err, errlen, -E2BIG, "the step would have about "
                       "%llu ops and %llu storages (limits %u, %u)",
                       (unsigned long long)ops,
                       (unsigned long long)storages, PLAN_MAX_OPS,
                       PLAN_MAX_STORAGES);
    return 0;
}

int plan_gen_check_range(const char *name, uint32_t v, uint32_t lo,
                         uint32_t hi, char *err, size_t errlen)
{
    if (v < lo || v > hi)
        return ho_errf(err, errlen, -EINVAL, "%s must be in [%u, %u], got %u",
                       name, lo, hi, v);
    return 0;
}

int plan_gen_check_dtype(uint32_t dtype_bytes, char *err, size_t errlen)
{
    if (dtype_bytes != 1 && dtype_bytes != 2 && dtype_bytes != 4)
        return ho_errf(err, errlen, -EINVAL,
                       "dtype_bytes must be 1, 2 or 4, got %u", dtype_bytes);
    return 0;
}
