/*
 * planner/gen/workloads.c - built-in copies of ../shared/workloads/models.json
 * and devices.json (public model configurations and planning assumptions
 * for devices).  tests/planner/test_gen.c checks them against the files.
 */
#include <string.h>

#include "planner/plan.h"
#include "planner/gen/gen.h"

const plan_model plan_models[] = {
    /* name        layers hidden heads kv  ffn    vocab   swiglu */
    {"llama2-7b",     32,  4096,  32,  32, 11008,  32000, true},
    {"llama2-13b",    40,  5120,  40,  40, 13824,  32000, true},
    {"llama3-8b",     32,  4096,  32,   8, 14336, 128256, true},
    {"llama3-70b",    80,  8192,  64,   8, 28672, 128256, true},
    {"llama-65b",     80,  8192,  64,  64, 22016,  32000, true},
    {"qwen2.5-0.5b",  24,   896,  14,   2,  4864, 151936, true},
    {"gpt3-175b",     96, 12288,  96,  96, 49152,  50257, false},
    {"", 0, 0, 0, 0, 0, 0, false},
};

const plan_device plan_devices[] = {
    /* name   TFLOP/s HBM GiB HBM GB/s link GB/s latency us */
    {"910b",   313.0,   64.0, 1600.0,   28.0, 15.0},
    {"910c",   752.0,  128.0, 3200.0,   56.0, 15.0},
    {"h200",   989.0,  141.0, 4800.0,   55.0, 10.0},
    {"a100",   312.0,   80.0, 2039.0,   25.0, 10.0},
    {"", 0, 0, 0, 0, 0},
};

/* The entry of a table (entries of `size` bytes, each starting with its
 * name, ended by an empty name) whose name is exactly `name`; NULL when
 * absent. */
static const void *find_named(const void *table, size_t size,
                              const char *name)
{
    if (!name)
        return NULL;
    for (const char *e = table; e[0]; e += size)
        if (strcmp(e, name) == 0)
            return e;
    return NULL;
}

const plan_model *plan_model_find(const char *name)
{
    return find_named(plan_models, sizeof(plan_model), name);
}

const plan_device *plan_device_find(const char *name)
{
    return find_named(plan_devices, sizeof(plan_device), name);
}
