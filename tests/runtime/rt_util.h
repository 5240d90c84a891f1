/*
 * tests/runtime/rt_util.h - helpers shared by the runtime tests: scratch
 * files, small generated traces written as JSON and loaded through the
 * public API, deterministic content.  Everything is static; each test
 * includes it once.
 */
#ifndef HO_TESTS_RT_UTIL_H
#define HO_TESTS_RT_UTIL_H

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hyperoffload/runtime.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"

/* 1 when the *.valgrind variant runs us. */
static inline int rt_valgrind(void)
{
    const char *v = getenv("HO_UNDER_VALGRIND");
    return v && strcmp(v, "1") == 0;
}

/* A fresh scratch directory under $HO_BUILD_DIR/tmp (or TMPDIR). */
static inline void rt_tmpdir(char *buf, size_t len)
{
    const char *b = getenv("HO_BUILD_DIR");
    char base[420];
    if (b && *b) {
        snprintf(base, sizeof base, "%s/tmp", b);
        mkdir(base, 0755);
    } else {
        snprintf(base, sizeof base, "%s", getenv("TMPDIR") ? getenv("TMPDIR")
                                                         : "/tmp");
    }
    int n = snprintf(buf, len, "%.400s/rt-XXXXXX", base);
    ck_assert(n > 0 && (size_t)n < len);
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

static inline void rt_rmdir(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Write a planner trace as JSON to path. */
static inline void rt_write_trace(const plan_trace *t, const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(plan_trace_write_json(t, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

static inline void rt_write_schedule(const plan_schedule *s,
                                     const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(plan_schedule_write_json(s, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

/* A small random trace: n_ops ops over n_storages storages of 4..64 KiB
 * (shrunk under valgrind by the caller through the sizes). */
static inline plan_trace *rt_gen(uint64_t seed, uint32_t n_ops,
                                 uint32_t n_storages, uint64_t min_bytes,
                                 uint64_t max_bytes)
{
    plan_gen_random_cfg cfg = {
        .seed = seed,
        .n_ops = n_ops,
        .n_storages = n_storages,
        .max_refs_per_op = 4,
        .min_bytes = min_bytes,
        .max_bytes = max_bytes,
        .p_initial_device = 0.2,
        .p_initial_host = 0.15,
        .p_retained = 0.3,
        .p_pinned = 0.05,
    };
    plan_trace *t = NULL;
    char err[256] = "";
    int rc = plan_gen_random(&cfg, &t, err, sizeof err);
    ck_assert_msg(rc == 0, "plan_gen_random: %s", err);
    return t;
}

/* A budget hoplan can meet that is below the trace's no-offload peak: the
 * middle between the largest single-op working set and that peak, or
 * hoplan's smallest feasible budget when the middle is infeasible. */
static inline uint64_t rt_budget(const plan_trace *t)
{
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    uint64_t b = sm.max_op_working_set +
                 (sm.no_offload_peak - sm.max_op_working_set) / 2;
    plan_schedule *s = NULL;
    plan_result res;
    memset(&res, 0, sizeof res);
    int rc = plan_make(t, b, NULL, &s, &res);
    if (rc == HO_E_INFEASIBLE)
        b = res.min_budget;
    else
        ck_assert_int_eq(rc, 0);
    plan_schedule_free(s);
    ck_assert_msg(b < sm.no_offload_peak, "no budget below the peak");
    return b;
}

/* Deterministic content of storage `id` at version `ver`: 8-byte words of
 * a xorshift stream seeded by (id, ver). */
static inline uint64_t rt_seed(uint64_t id, uint64_t ver)
{
    return (id + 1) * 0x9e3779b97f4a7c15ull ^ (ver + 7) * 0xbf58476d1ce4e5b9ull;
}

static inline void rt_fill(void *p, uint64_t len, uint64_t seed)
{
    uint64_t x = seed | 1;
    uint8_t *b = p;
    uint64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t v = x * 0x2545f4914f6cdd1dull;
        memcpy(b + i, &v, 8);
    }
    for (; i < len; i++)
        b[i] = (uint8_t)(seed >> (i % 8 * 8));
}

/* 1 when p holds rt_fill(seed), else 0. */
static inline int rt_check(const void *p, uint64_t len, uint64_t seed)
{
    uint64_t x = seed | 1;
    const uint8_t *b = p;
    uint64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t v = x * 0x2545f4914f6cdd1dull, w;
        memcpy(&w, b + i, 8);
        if (v != w)
            return 0;
    }
    for (; i < len; i++)
        if (b[i] != (uint8_t)(seed >> (i % 8 * 8)))
            return 0;
    return 1;
}

#endif
