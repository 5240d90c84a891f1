/*
 * tests/runtime/rt_fw.h - a fake framework for replay tests: it runs the
 * ops of a planner trace through the hooks and acts like the model's
 * compute, through the device API only (ho_device_read / ho_device_write),
 * so it works on every backend.  Every write fills the storage with
 * content that is a function of (storage id, version); every read
 * verifies the content the last write produced.  Versions are the
 * framework's own count, independent of the runtime's.
 */
#ifndef HO_TESTS_RT_FW_H
#define HO_TESTS_RT_FW_H

#include <stdbool.h>

#include "tests/runtime/rt_util.h"

typedef struct rt_fw {
    ho_replay *r;
    ho_device *dev;
    const plan_trace *pt;
    uint64_t *ver;     /* per storage index: version of its content */
    uint8_t *buf;      /* scratch of the largest storage */
    uint64_t reads_checked;
    uint64_t bad_reads;
} rt_fw;

static inline void rt_fw_init(rt_fw *f, ho_replay *r, ho_device *dev,
                              const plan_trace *pt)
{
    memset(f, 0, sizeof(*f));
    f->r = r;
    f->dev = dev;
    f->pt = pt;
    f->ver = calloc(pt->n_storages + 1, sizeof(*f->ver));
    uint64_t max = 1;
    for (uint32_t i = 0; i < pt->n_storages; i++)
        if (pt->storages[i].bytes > max)
            max = pt->storages[i].bytes;
    f->buf = malloc(max);
    ck_assert(f->ver && f->buf);
}

static inline void rt_fw_done(rt_fw *f)
{
    free(f->ver);
    free(f->buf);
    f->ver = NULL;
    f->buf = NULL;
}

/* Write content version ver[i] of storage index i to the device. */
static inline void rt_fw_put(rt_fw *f, uint32_t i)
{
    const plan_storage *s = &f->pt->storages[i];
    void *p = ho_storage_ptr(f->r, s->id);
    ck_assert_msg(p != NULL, "storage %llu not on device for a write",
                  (unsigned long long)s->id);
    rt_fill(f->buf, s->bytes, rt_seed(s->id, f->ver[i]));
    ck_assert_int_eq(ho_device_write(f->dev, p, f->buf, s->bytes), 0);
}

/* Verify storage index i on the device holds version ver[i]; returns 1
 * when it does. */
static inline int rt_fw_check(rt_fw *f, uint32_t i)
{
    const plan_storage *s = &f->pt->storages[i];
    void *p = ho_storage_ptr(f->r, s->id);
    if (!p)
        return 0;
    ck_assert_int_eq(ho_device_read(f->dev, f->buf, p, s->bytes), 0);
    f->reads_checked++;
    return rt_check(f->buf, s->bytes, rt_seed(s->id, f->ver[i]));
}

/* Between steps: content of the storages a step starts with -- all of
 * them before the first step (`first`), and the fresh inputs (those that
 * are not retained) before every later one.  Device ones are written
 * through their buffers, host ones with ho_storage_write_host. */
static inline int rt_fw_inputs_rc(rt_fw *f, int first)
{
    for (uint32_t i = 0; i < f->pt->n_storages; i++) {
        const plan_storage *s = &f->pt->storages[i];
        if (!first && s->retained)
            continue;
        if (s->initial == PLAN_INIT_DEVICE && ho_storage_ptr(f->r, s->id)) {
            f->ver[i]++;
            rt_fw_put(f, i);
        } else if (s->initial == PLAN_INIT_HOST) {
            rt_fill(f->buf, s->bytes, rt_seed(s->id, f->ver[i] + 1));
            int rc = ho_storage_write_host(f->r, s->id, f->buf, s->bytes);
            if (rc < 0)
                return rc;
            f->ver[i]++;
        }
    }
    return 0;
}

/* rt_fw_inputs_rc, every write required to succeed. */
static inline void rt_fw_inputs(rt_fw *f, int first)
{
    int rc = rt_fw_inputs_rc(f, first);
    ck_assert_msg(rc == 0, "write_host: %s", ho_runtime_last_error());
}

/* The op's compute: verify every read, then write new content into every
 * write.  Returns 0, or 1 when a read found wrong bytes (counted). */
static inline int rt_fw_compute(rt_fw *f, uint32_t op)
{
    const plan_op *o = &f->pt->ops[op];
    const uint32_t *ref = f->pt->refs + o->first_ref;
    int bad = 0;
    for (uint32_t k = 0; k < o->n_reads; k++) {
        if (!rt_fw_check(f, ref[k])) {
            f->bad_reads++;
            bad = 1;
        }
    }
    for (uint32_t k = o->n_reads; k < o->n_reads + o->n_writes; k++) {
        f->ver[ref[k]]++;
        rt_fw_put(f, ref[k]);
    }
    return bad;
}

static inline int rt_fw_op_fn(void *ctx, uint32_t op)
{
    return rt_fw_compute(ctx, op) ? -EIO : 0;
}

/* One whole step through the hooks, with its inputs written first; every
 * hook must succeed and every read must verify.  *ret (may be NULL) gets
 * the step's figures. */
static inline void rt_fw_step(rt_fw *f, int first, ho_step_info *ret)
{
    rt_fw_inputs(f, first);
    ck_assert_int_eq(ho_step_begin(f->r), 0);
    for (uint32_t op = 0; op < f->pt->n_ops; op++) {
        int rc = ho_op_begin(f->r, op);
        ck_assert_msg(rc == 0, "op %u: %s: %s", op, ho_err_name(rc),
                      ho_runtime_last_error());
        ck_assert_msg(rt_fw_compute(f, op) == 0, "op %u read wrong bytes",
                      op);
        rc = ho_op_end(f->r, op);
        ck_assert_msg(rc == 0, "op %u end: %s: %s", op, ho_err_name(rc),
                      ho_runtime_last_error());
    }
    ho_step_info info;
    int rc = ho_step_end(f->r, &info);
    ck_assert_msg(rc == 0, "step end: %s: %s", ho_err_name(rc),
                  ho_runtime_last_error());
    ck_assert_int_eq(info.diverged, 0);
    ck_assert_uint_eq(info.ops, f->pt->n_ops);
    if (ret)
        *ret = info;
}

/* A trace of n host storages 100.. of `bytes`, read one per op into a
 * retained device accumulator 99 (a DDR limit of half of them makes the
 * daemon stage host copies to flash); with `state`, a retained storage 98
 * of `bytes` that starts on host is read and written by the last op (the
 * plan stores it back: between steps its only copy is on host).  Saved
 * in dir; *ret_pt is the planner's copy. */
static inline ho_trace *rt_staged_trace(const char *dir, unsigned n,
                                        uint64_t bytes, bool state,
                                        plan_trace **ret_pt)
{
    ho_link link = {1.0, 1.0, 5.0, 1};
    ho_trace *t = NULL;
    ck_assert_int_eq(ho_trace_new("staged", &link, &t), 0);
    for (unsigned i = 0; i < n; i++)
        ck_assert_int_eq(ho_trace_add_storage(t, 100 + i, bytes,
                                              HO_KIND_OTHER, HO_INITIAL_HOST,
                                              0), 0);
    ck_assert_int_eq(ho_trace_add_storage(t, 99, 4096, HO_KIND_GRAD,
                                          HO_INITIAL_DEVICE,
                                          HO_STORAGE_RETAINED), 0);
    if (state)
        ck_assert_int_eq(ho_trace_add_storage(t, 98, bytes, HO_KIND_OTHER,
                                              HO_INITIAL_HOST,
                                              HO_STORAGE_RETAINED), 0);
    for (unsigned k = 0; k < n; k++) {
        uint64_t rd[3] = {100 + k, 99, 98}, wr[2] = {99, 98};
        unsigned last = state && k == n - 1;
        ck_assert_int_eq(ho_trace_add_op(t, "accumulate", 200.0, rd,
                                         2 + last, wr, 1 + last), 0);
    }
    char path[1024], err[256];
    snprintf(path, sizeof path, "%.900s/staged.json", dir);
    ck_assert_int_eq(ho_trace_save(t, path), 0);
    ck_assert_int_eq(plan_trace_read_json(path, ret_pt, err, sizeof err), 0);
    return t;
}

#endif
