/*
 * planner/gen/gen.h - trace generators: transformer training steps, decode
 * with a growing KV cache, random traces; the built-in model and device
 * tables (../shared/workloads/).  Library ho_plan_gen; planner/gen/.
 */
#ifndef HO_PLANNER_GEN_GEN_H
#define HO_PLANNER_GEN_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ workloads */

typedef struct plan_model {
    char name[32];
    uint32_t layers, hidden, heads, kv_heads, ffn, vocab;
    bool swiglu;
} plan_model;

typedef struct plan_device {
    char name[32];
    double tflops, hbm_gib, hbm_gbps, link_gbps, link_latency_us;
} plan_device;

/* Built-in copies of ../shared/workloads/{models,devices}.json. */
const plan_model *plan_model_find(const char *name);
const plan_device *plan_device_find(const char *name);
extern const plan_model plan_models[];   /* terminated by name[0] == 0 */
extern const plan_device plan_devices[];

typedef struct plan_gen_train_cfg {
    plan_model model;
    plan_device device;
    uint32_t seq;            /* tokens per sequence */
    uint32_t micro_batch;    /* sequences per micro-batch */
    uint32_t n_micro;        /* micro-batches (gradient accumulation) */
    uint32_t dtype_bytes;    /* 2 for bf16 */
    bool params_on_host;     /* parameters initial: host */
    bool optimizer_on_host;  /* optimizer state initial: host */
    bool optimizer_step;     /* include the optimizer update ops */
    bool params_movable;     /* parameters movable (PLANNER.md §1) */
    bool optimizer_movable;  /* optimizer state (m, v, master) movable */
} plan_gen_train_cfg;

/* Decoder-only transformer training step (forward, backward per micro-
 * batch, gradient accumulation, optimizer update) with durations from
 * FLOPs and the device profile. */
int plan_gen_train(const plan_gen_train_cfg *cfg, plan_trace **ret_trace,
                   char *err, size_t errlen);

typedef struct plan_gen_decode_cfg {
    plan_model model;
    plan_device device;
    uint32_t prompt;         /* prompt tokens already in the KV cache */
    uint32_t tokens;         /* tokens generated in the step */
    uint32_t batch;
    uint32_t dtype_bytes;
    uint32_t kv_block;       /* tokens per KV block storage */
} plan_gen_decode_cfg;

/* Inference decode with a KV cache that grows by blocks. */
int plan_gen_decode(const plan_gen_decode_cfg *cfg, plan_trace **ret_trace,
                    char *err, size_t errlen);

typedef struct plan_gen_random_cfg {
    uint64_t seed;
    uint32_t n_ops;
    uint32_t n_storages;
    uint32_t max_refs_per_op;
    uint64_t min_bytes, max_bytes;
    double p_initial_device, p_initial_host, p_retained, p_pinned;
    double p_movable;        /* of a retained, initial device/host storage
                                (drawn only when > 0: traces without it
                                are as before) */
} plan_gen_random_cfg;

/* Random but well-formed trace, for property tests and scale benchmarks. */
int plan_gen_random(const plan_gen_random_cfg *cfg, plan_trace **ret_trace,
                    char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
