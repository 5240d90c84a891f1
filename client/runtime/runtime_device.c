/*
 * client/runtime/runtime_device.c - device backends behind one interface
 * (ho_device_*): backend selection, the byte accounting that makes the
 * capacity a hard limit, and the allocator that places allocations in the
 * backend's device region.
 *
 * Accounting counts the bytes asked for, exactly as the planner's model
 * does, so a plan that fits its budget fits a device of that capacity;
 * placement rounds to HOB_ALIGN inside a region larger than the capacity
 * (capacity + min(capacity, 1 GiB) + 1 MiB), so fragmentation does not
 * turn a correct plan into a failure.
 *
 * A device is used by one thread at a time (the replay's, or the
 * application's between steps).
 */
#include "client/runtime/runtime_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const hob_ops *find_backend(const char *name)
{
    if (!name || strcmp(name, "host") == 0)
        return &hob_host_ops;
    if (strcmp(name, "cuda") == 0)
        return &hob_cuda_ops;
    return NULL;
}

/* ----------------------------------------------------------- allocator */

/* The (first level, second level) size class of `units` alignment units. */
static void tl_map(uint64_t units, uint32_t *ret_fl, uint32_t *ret_sl)
{
    if (units < HOR_TL_SL) {
        *ret_fl = 0;
        *ret_sl = (uint32_t)units;
        return;
    }
    uint32_t f = 63u - (uint32_t)__builtin_clzll(units);
    *ret_sl = (uint32_t)(units >> (f - HOR_TL_SL_LOG2)) ^ HOR_TL_SL;
    *ret_fl = f - HOR_TL_SL_LOG2 + 1;
}

static void tl_insert(hor_alloc *a, uint32_t i)
{
    hor_block *b = &a->b[i];
    uint32_t fl, sl;
    tl_map(b->size / HOB_ALIGN, &fl, &sl);
    b->state = HOR_BLK_FREE;
    b->free_prev = HOR_NONE;
    b->free_next = a->heads[fl][sl];
    if (b->free_next != HOR_NONE)
        a->b[b->free_next].free_prev = i;
    a->heads[fl][sl] = i;
    a->fl_bitmap |= 1ull << fl;
    a->sl_bitmap[fl] |= 1u << sl;
}

static void tl_remove(hor_alloc *a, uint32_t i)
{
    hor_block *b = &a->b[i];
    uint32_t fl, sl;
    tl_map(b->size / HOB_ALIGN, &fl, &sl);
    if (b->free_prev != HOR_NONE)
        a->b[b->free_prev].free_next = b->free_next;
    else
        a->heads[fl][sl] = b->free_next;
    if (b->free_next != HOR_NONE)
        a->b[b->free_next].free_prev = b->free_prev;
    if (a->heads[fl][sl] == HOR_NONE) {
        a->sl_bitmap[fl] &= ~(1u << sl);
        if (!a->sl_bitmap[fl])
            a->fl_bitmap &= ~(1ull << fl);
    }
}

/* A free block of at least `units` alignment units, or HOR_NONE. */
static uint32_t tl_find(const hor_alloc *a, uint64_t units)
{
    uint32_t fl, sl;
    if (units >= HOR_TL_SL) {
        uint32_t f = 63u - (uint32_t)__builtin_clzll(units);
        units += (1ull << (f - HOR_TL_SL_LOG2)) - 1; /* round up a class */
    }
    tl_map(units, &fl, &sl);
    if (fl >= HOR_TL_FL)
        return HOR_NONE;
    uint32_t slm = sl < 32 ? a->sl_bitmap[fl] & (~0u << sl) : 0;
    if (!slm) {
        uint64_t flm = fl + 1 < 64 ? a->fl_bitmap & (~0ull << (fl + 1)) : 0;
        if (!flm)
            return HOR_NONE;
        fl = (uint32_t)__builtin_ctzll(flm);
        slm = a->sl_bitmap[fl];
    }
    return a->heads[fl][__builtin_ctz(slm)];
}

static int alloc_init(hor_alloc *a, uint64_t size)
{
    memset(a, 0, sizeof(*a));
    for (uint32_t f = 0; f < HOR_TL_FL; f++)
        for (uint32_t s = 0; s < HOR_TL_SL; s++)
            a->heads[f][s] = HOR_NONE;
    a->b = calloc(HOR_DEV_INITIAL_BLOCKS, sizeof(*a->b));
    a->spare = malloc(HOR_DEV_INITIAL_BLOCKS * sizeof(*a->spare));
    if (!a->b || !a->spare) {
        free(a->b);
        free(a->spare);
        return -ENOMEM;
    }
    a->cap = HOR_DEV_INITIAL_BLOCKS;
    for (uint32_t i = HOR_DEV_INITIAL_BLOCKS; i-- > 1;)
        a->spare[a->nspare++] = i;
    hor_block *b = &a->b[0];
    b->off = 0;
    b->size = size / HOB_ALIGN * HOB_ALIGN;
    b->phys_prev = b->phys_next = HOR_NONE;
    tl_insert(a, 0);
    return 0;
}

static void alloc_done(hor_alloc *a)
{
    free(a->b);
    free(a->spare);
    a->b = NULL;
    a->spare = NULL;
}

int hor_dev_reserve(ho_device *d, uint32_t n)
{
    hor_alloc *a = &d->a;
    /* Each allocation splits at most one block. */
    if (a->nspare >= n)
        return 0;
    uint64_t want = (uint64_t)a->cap + (n - a->nspare);
    if (want < (uint64_t)a->cap * 2)
        want = (uint64_t)a->cap * 2;
    if (want >= HOR_NONE)
        return -ENOMEM;
    hor_block *b = realloc(a->b, want * sizeof(*b));
    if (!b)
        return -ENOMEM;
    a->b = b;
    uint32_t *sp = realloc(a->spare, want * sizeof(*sp));
    if (!sp)
        return -ENOMEM;
    a->spare = sp;
    memset(a->b + a->cap, 0, (want - a->cap) * sizeof(*b));
    for (uint64_t i = want; i-- > a->cap;)
        a->spare[a->nspare++] = (uint32_t)i;
    a->cap = (uint32_t)want;
    return 0;
}

int hor_dev_alloc(ho_device *d, uint64_t bytes, uint32_t *ret_block,
                  void **ret_ptr)
{
    hor_alloc *a = &d->a;
    if (bytes == 0 || bytes > d->capacity - d->used)
        return hor_fail(NULL, HO_E_DEVICE, "device capacity of %llu bytes "
                        "exceeded: %llu in use, %llu more asked for",
                        (unsigned long long)d->capacity,
                        (unsigned long long)d->used,
                        (unsigned long long)bytes);
    uint64_t units = (bytes + HOB_ALIGN - 1) / HOB_ALIGN;
    uint32_t i = tl_find(a, units);
    if (i == HOR_NONE)
        return hor_fail(NULL, HO_E_DEVICE, "device region fragmented: no "
                        "hole of %llu bytes (%llu of %llu in use)",
                        (unsigned long long)bytes,
                        (unsigned long long)d->used,
                        (unsigned long long)d->capacity);
    tl_remove(a, i);
    uint64_t need = units * HOB_ALIGN;
    if (a->b[i].size - need >= HOB_ALIGN && a->nspare > 0) {
        uint32_t j = a->spare[--a->nspare];
        hor_block *nb = &a->b[j];
        nb->off = a->b[i].off + need;
        nb->size = a->b[i].size - need;
        nb->phys_prev = i;
        nb->phys_next = a->b[i].phys_next;
        if (nb->phys_next != HOR_NONE)
            a->b[nb->phys_next].phys_prev = j;
        a->b[i].phys_next = j;
        a->b[i].size = need;
        tl_insert(a, j);
    }
    hor_block *b = &a->b[i];
    b->state = HOR_BLK_USED;
    b->req = bytes;
    a->live++;
    d->used += bytes;
    if (d->used > d->peak)
        d->peak = d->used;
    if (d->used > d->mark_peak)
        d->mark_peak = d->used;
    *ret_block = i;
    *ret_ptr = d->base + b->off;
    return 0;
}

/* Merge block j into its physical predecessor i (both free, unlinked). */
static void absorb(hor_alloc *a, uint32_t i, uint32_t j)
{
    hor_block *bi = &a->b[i], *bj = &a->b[j];
    bi->size += bj->size;
    bi->phys_next = bj->phys_next;
    if (bj->phys_next != HOR_NONE)
        a->b[bj->phys_next].phys_prev = i;
    bj->state = HOR_BLK_SPARE;
    a->spare[a->nspare++] = j;
}

void hor_dev_free_block(ho_device *d, uint32_t i)
{
    hor_alloc *a = &d->a;
    hor_block *b = &a->b[i];
    d->used -= b->req;
    a->live--;
    b->req = 0;
    uint32_t n = b->phys_next;
    if (n != HOR_NONE && a->b[n].state == HOR_BLK_FREE) {
        tl_remove(a, n);
        absorb(a, i, n);
    }
    uint32_t p = a->b[i].phys_prev;
    if (p != HOR_NONE && a->b[p].state == HOR_BLK_FREE) {
        tl_remove(a, p);
        absorb(a, p, i);
        i = p;
    }
    tl_insert(a, i);
}

uint32_t hor_dev_find(const ho_device *d, const void *ptr)
{
    const uint8_t *p = ptr;
    if (!p || p < d->base || p >= d->base + d->region)
        return HOR_NONE;
    uint64_t off = (uint64_t)(p - d->base);
    for (uint32_t i = 0; i < d->a.cap; i++)
        if (d->a.b[i].state == HOR_BLK_USED && d->a.b[i].off == off)
            return i;
    return HOR_NONE;
}

/* ----------------------------------------------------------- public */

HO_EXPORT const char *ho_device_unavailable_reason(const char *backend)
{
    const hob_ops *ops = find_backend(backend);
    if (!ops)
        return "unknown device backend (known: host, cuda)";
    return ops->unavailable();
}

HO_EXPORT int ho_device_open(const char *backend, int index,
                             uint64_t capacity, ho_device **ret)
{
    char err[HOR_DETAIL_LEN] = "";
    ho_device *d = NULL;
    int rc;

    if (!ret)
        return -EINVAL;
    const hob_ops *ops = find_backend(backend);
    if (!ops)
        return hor_fail(NULL, -EINVAL, "unknown device backend '%.40s' "
                        "(known: host, cuda)", backend);
    const char *why = ops->unavailable();
    if (why)
        return hor_fail(NULL, HO_E_UNSUPPORTED, "backend %s: %s", ops->name,
                        why);
    if (index < 0)
        return hor_fail(NULL, -EINVAL, "device index %d", index);
    if (capacity == 0 || capacity > PLAN_MAX_STORAGE_BYTES)
        return hor_fail(NULL, HO_E_INVALID_SIZE, "device capacity %llu is "
                        "0 or above %llu", (unsigned long long)capacity,
                        (unsigned long long)PLAN_MAX_STORAGE_BYTES);
    uint64_t slack = capacity < HOR_DEV_SLACK_MAX ? capacity
                                                  : HOR_DEV_SLACK_MAX;
    uint64_t region = capacity + slack + HOR_DEV_SLACK_FIXED;

    d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->ops = ops;
    d->capacity = capacity;
    rc = ops->open(index, region, &d->st, err, sizeof(err));
    if (rc < 0) {
        hor_fail(NULL, rc, "backend %s, device %d: %s", ops->name, index,
                 err[0] ? err : ho_strerror(rc));
        goto fail;
    }
    ops->region(d->st, &d->base, &d->region);
    rc = alloc_init(&d->a, d->region);
    if (rc < 0)
        goto fail;
    *ret = d;
    return 0;
fail:
    ho_device_close(d);
    return rc;
}

HO_EXPORT ho_device *ho_device_close(ho_device *d)
{
    if (!d)
        return NULL;
    d->st = d->ops->close(d->st);
    alloc_done(&d->a);
    free(d);
    return NULL;
}

HO_EXPORT const char *ho_device_backend(const ho_device *d)
{
    return d ? d->ops->name : "";
}

HO_EXPORT int ho_device_alloc(ho_device *d, uint64_t bytes, void **ret)
{
    uint32_t blk;
    void *p;
    if (!d || !ret)
        return -EINVAL;
    if (bytes == 0)
        return hor_fail(NULL, HO_E_INVALID_SIZE, "device allocation of 0 "
                        "bytes");
    int rc = hor_dev_reserve(d, 1);
    if (rc < 0)
        return rc;
    rc = hor_dev_alloc(d, bytes, &blk, &p);
    if (rc < 0)
        return rc;
    *ret = p;
    return 0;
}

HO_EXPORT int ho_device_free(ho_device *d, void *ptr)
{
    if (!d)
        return -EINVAL;
    if (!ptr)
        return 0;
    uint32_t blk = hor_dev_find(d, ptr);
    if (blk == HOR_NONE)
        return hor_fail(NULL, -EINVAL, "%p is not an allocation of this "
                        "device", ptr);
    hor_dev_free_block(d, blk);
    return 0;
}

/* Is [p, p+n) inside the device region? */
static bool in_region(const ho_device *d, const void *ptr, uint64_t n)
{
    const uint8_t *p = ptr;
    return p >= d->base && p <= d->base + d->region &&
           n <= (uint64_t)(d->base + d->region - p);
}

/* A synchronous copy of `bytes` between host memory and the device range
 * at `dev_ptr` (dst for HOB_H2D, src for HOB_D2H), after checking that
 * the range lies in the device's region. */
static int device_copy(ho_device *d, hob_dir dir, void *dst, const void *src,
                       const void *dev_ptr, uint64_t bytes)
{
    if (!in_region(d, dev_ptr, bytes))
        return hor_fail(NULL, -EINVAL, "device range %p+%llu is outside "
                        "the device's memory", dev_ptr,
                        (unsigned long long)bytes);
    if (bytes == 0)
        return 0;
    int rc = d->ops->copy_sync(d->st, dir, dst, src, bytes);
    if (rc < 0)
        return hor_fail(NULL, rc, "synchronous copy %s the device failed",
                        dir == HOB_H2D ? "to" : "from");
    return 0;
}

HO_EXPORT int ho_device_write(ho_device *d, void *dst, const void *src,
                              uint64_t bytes)
{
    if (!d || (!src && bytes))
        return -EINVAL;
    return device_copy(d, HOB_H2D, dst, src, dst, bytes);
}

HO_EXPORT int ho_device_read(ho_device *d, void *dst, const void *src,
                             uint64_t bytes)
{
    if (!d || (!dst && bytes))
        return -EINVAL;
    return device_copy(d, HOB_D2H, dst, src, src, bytes);
}

HO_EXPORT uint64_t ho_device_used(const ho_device *d)
{
    return d ? d->used : 0;
}

HO_EXPORT uint64_t ho_device_peak(const ho_device *d)
{
    return d ? d->peak : 0;
}

HO_EXPORT int ho_device_set_stream(ho_device *d, void *stream)
{
    if (!d)
        return -EINVAL;
    if (d->ops->set_compute_stream)
        d->ops->set_compute_stream(d->st, stream);
    return 0;
}
