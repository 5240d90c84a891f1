/*
 * planner/gen/gen_private.h - a small trace builder and the config
 * checks shared by the workload generators (gen_train.c, gen_decode.c,
 * gen_random.c).  Private to planner/gen/.
 *
 * The builder keeps a sticky error: once a call fails, every later call is
 * a no-op and plan_gen_finish() returns the first error, so generator code
 * reads as a plain sequence of storages and ops.
 */
#ifndef HO_PLANNER_GEN_PRIVATE_H
#define HO_PLANNER_GEN_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner/plan.h"
#include "planner/gen/gen.h"


/* Performance assumptions for durations (docs/formats.md). */
#define PLAN_GEN_MATMUL_EFF 0.6  /* fraction of peak TFLOP/s for GEMMs */
#define PLAN_GEN_ATTN_EFF 0.45   /* flash attention, forward and backward */
#define PLAN_GEN_HBM_EFF 0.7     /* fraction of HBM GB/s, memory-bound ops */
#define PLAN_GEN_OP_OVERHEAD_US 2.0 /* launch/dispatch cost of every op */

typedef struct plan_gen_b {
    plan_trace *t;          /* owned until plan_gen_finish hands it over */
    uint32_t *reads, *writes; /* PLAN_MAX_OP_REFS each, owned */
    uint32_t n_reads, n_writes;
    const plan_device *dev; /* for gen_mm / gen_mem; set by the generator */
    char *err;
    size_t errlen;
    int rc;                 /* first error, sticky */
} plan_gen_b;

/* Start a trace named `name` with `link`.  On OOM, rc is -ENOMEM.
 * plan_gen_finish must be called afterwards in every case. */
void plan_gen_begin(plan_gen_b *b, const char *name, const plan_link *link,
                    char *err, size_t errlen);

/* Add a storage with id = its index; returns the index (0 after an
 * error, which is then sticky). */
uint32_t plan_gen_storage(plan_gen_b *b, uint64_t bytes, plan_kind kind,
                          plan_initial initial, bool retained);
/* The same, retained, with `movable` set (initial device or host). */
uint32_t plan_gen_storage_movable(plan_gen_b *b, uint64_t bytes,
                                  plan_kind kind, plan_initial initial,
                                  bool movable);

/* Queue a read / write of storage index s for the next op. */
void plan_gen_read(plan_gen_b *b, uint32_t s);
void plan_gen_write(plan_gen_b *b, uint32_t s);

/* Emit the op with the queued references, then clear them. */
void plan_gen_op(plan_gen_b *b, double duration_us, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Finish the trace and release the builder: on success *ret_trace owns the
 * trace and 0 is returned; otherwise the trace is freed and the first
 * error is returned (message in err). */
int plan_gen_finish(plan_gen_b *b, plan_trace **ret_trace);

/* Roofline duration of an op on device d: overhead + max(flops at
 * flop_eff of peak, bytes at PLAN_GEN_HBM_EFF of HBM bandwidth). */
double plan_gen_time(const plan_device *d, double flops, double bytes,
                     double flop_eff);

/* An activation (initial none, not retained) of `bytes`. */
static inline uint32_t gen_act(plan_gen_b *b, uint64_t bytes)
{
    return plan_gen_storage(b, bytes, PLAN_KIND_ACTIVATION, PLAN_INIT_NONE,
                            false);
}

/* A new activation of `bytes` that the next op writes, reading r1 and r2
 * (r2 PLAN_NONE: r1 only); returns its index. */
static inline uint32_t gen_new(plan_gen_b *b, uint64_t bytes, uint32_t r1,
                               uint32_t r2)
{
    uint32_t a = gen_act(b, bytes);
    plan_gen_read(b, r1);
    if (r2 != PLAN_NONE)
        plan_gen_read(b, r2);
    plan_gen_write(b, a);
    return a;
}

/* Duration of a GEMM / of a memory-bound op on the builder's device. */
static inline double gen_mm(const plan_gen_b *b, double flops, double bytes)
{
    return plan_gen_time(b->dev, flops, bytes, PLAN_GEN_MATMUL_EFF);
}

static inline double gen_mem(const plan_gen_b *b, double bytes)
{
    return plan_gen_time(b->dev, 0.0, bytes, PLAN_GEN_MATMUL_EFF);
}

/* Validate a model's dimensions (what both transformer generators need).
 * 0 or -EINVAL + message. */
int plan_gen_check_model(const plan_model *m, char *err, size_t errlen);

/* Validate a device profile (finite, positive).  0 or -EINVAL + message. */
int plan_gen_check_device(const plan_device *d, char *err, size_t errlen);

/* The link of a device profile: h2d = d2h = link_gbps, duplex. */
plan_link plan_gen_link(const plan_device *d);

/* a * b into *ret_value unless it overflows or exceeds max (then false). */
bool plan_gen_mul(uint64_t a, uint64_t b, uint64_t max, uint64_t *ret_value);

/* 0 when lo <= v <= hi, else -EINVAL: "<name> must be in [lo, hi], got
 * v". */
int plan_gen_check_range(const char *name, uint32_t v, uint32_t lo,
                         uint32_t hi, char *err, size_t errlen);
/* 0 when dtype_bytes is 1, 2 or 4, else -EINVAL with the sentence. */
int plan_gen_check_dtype(uint32_t dtype_bytes, char *err, size_t errlen);

/* 0 when a step of about `ops` ops and `storages` storages fits the IR's
 * limits, else -E2BIG with the sentence every generator writes. */
int plan_gen_check_size(uint64_t ops, uint64_t storages, char *err,
                        size_t errlen);

#endif
