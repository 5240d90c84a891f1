/*
 * client/runtime/runtime_replay.c - creating and destroying replays, and the
 * storage registry (ho_storage_*).
 *
 * ho_replay_new checks the schedule with the planner's simulator against
 * the trace and the plan's budget (the validator's sentence names op and
 * storage), builds the per-op index the hooks use (actions by point,
 * implicit frees by op), places every storage at its home (the schedule's
 * for movable storages), gives every storage that the schedule stores or
 * that starts on host a host copy (slot), installs the replay with the
 * daemon (or locally), starts the copy engines and allocates the storages
 * that start on device.
 *
 * Ownership: the replay owns its arrays, engines, copy log, control region
 * mapping and every device buffer of its storages (including buffers
 * handed over with ho_storage_bind); it borrows client, device, trace and
 * plan.
 */
#include "client/runtime/runtime_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mem.h"

int hor_test_skip_check = 0;

/* A copy of the plan's schedule bound to t (the plan may have been made
 * for another object holding the same trace). */
static int bound_copy(ho_replay *r, plan_schedule **ret)
{
    const plan_schedule *src = r->p->s;
    char err[HOR_DETAIL_LEN] = "";
    plan_schedule *s = plan_schedule_new(src->planner, src->budget_bytes);
    if (!s)
        return -ENOMEM;
    for (size_t k = 0; k < src->n_actions; k++) {
        const plan_action *a = &src->actions[k];
        int rc = plan_schedule_push_id(s, a->op, (plan_when)a->when,
                                       (plan_act_kind)a->kind, a->storage_id);
        if (rc < 0) {
            plan_schedule_free(s);
            return rc;
        }
    }
    for (size_t k = 0; k < src->n_homes; k++) {
        int rc = plan_schedule_push_home_id(s, src->homes[k].storage_id,
                                            (plan_home)src->homes[k].home);
        if (rc < 0) {
            plan_schedule_free(s);
            return rc;
        }
    }
    int rc = plan_schedule_bind(s, r->pt, err, sizeof(err));
    if (rc < 0) {
        plan_schedule_free(s);
        return hor_fail(r->c, rc, "schedule refused: %s", err);
    }
    *ret = s;
    return 0;
}

static int check(ho_replay *r, const plan_schedule *s)
{
    plan_metrics m;
    plan_violation v;
    memset(&v, 0, sizeof(v));
    int rc = plan_simulate(r->pt, s, &m, &v, NULL);
    if (rc == HO_E_BAD_SCHEDULE && !hor_test_skip_check)
        return hor_fail(r->c, rc, "schedule refused by the validator: %s",
                        v.message[0] ? v.message : "invalid");
    if (rc < 0 && rc != HO_E_BAD_SCHEDULE)
        return hor_fail(r->c, rc, "cannot simulate the schedule: %s",
                        ho_strerror(rc));
    if (m.peak_device_bytes > r->dev->capacity && !hor_test_skip_check)
        return hor_fail(r->c, HO_E_DEVICE, "the schedule needs %llu bytes "
                        "of device memory at its peak; the device's "
                        "capacity is %llu",
                        (unsigned long long)m.peak_device_bytes,
                        (unsigned long long)r->dev->capacity);
    return 0;
}

/* Actions by point, implicit frees by op, slots.  Each storage starts
 * the step at its home: the schedule's for movable storages it places
 * (plan_schedule_initials), else the trace's `initial`. */
static int build_index(ho_replay *r, const plan_schedule *s)
{
    const plan_trace *t = r->pt;
    uint64_t npts = (uint64_t)r->n_ops * 2;
    if (s->n_actions > UINT32_MAX - 1)
        return -E2BIG;
    uint8_t *init = malloc(r->n_st ? r->n_st : 1);
    if (!init)
        return -ENOMEM;
    int rc = plan_schedule_initials(t, s, init);
    if (rc < 0) {
        free(init);
        return hor_fail(r->c, rc, "the schedule's homes do not fit the "
                        "trace (a home for a storage that is not movable)");
    }
    r->act_off = calloc(npts + 1, sizeof(*r->act_off));
    r->acts = calloc(s->n_actions ? s->n_actions : 1, sizeof(*r->acts));
    r->free_off = calloc((size_t)r->n_ops + 1, sizeof(*r->free_off));
    r->frees = calloc(r->n_st ? r->n_st : 1, sizeof(*r->frees));
    r->mark = calloc(r->n_st ? r->n_st : 1, sizeof(*r->mark));
    r->st = calloc(r->n_st ? r->n_st : 1, sizeof(*r->st));
    if (!r->act_off || !r->acts || !r->free_off || !r->frees || !r->mark ||
        !r->st) {
        free(init);
        return -ENOMEM;
    }

    for (size_t k = 0; k < s->n_actions; k++)
        r->act_off[s->actions[k].op * 2u + s->actions[k].when + 1]++;
    for (uint64_t p = 0; p < npts; p++)
        r->act_off[p + 1] += r->act_off[p];
    /* Bound schedules are sorted stably by point: fill in order. */
    for (size_t k = 0; k < s->n_actions; k++) {
        r->acts[k].st = s->actions[k].storage;
        r->acts[k].kind = s->actions[k].kind;
    }

    for (uint32_t i = 0; i < r->n_st; i++) {
        const plan_storage *ps = &t->storages[i];
        hor_storage *st = &r->st[i];
        st->id = ps->id;
        st->bytes = ps->bytes;
        st->initial = init[i];
        st->trace_initial = ps->initial;
        st->retained = ps->retained;
        st->ptr = NULL;
        st->blk = HOR_NONE;
        st->slot = HOR_NONE;
        st->accessed = t->acc_start[i + 1] > t->acc_start[i];
        st->host_valid = init[i] == PLAN_INIT_HOST;
        if (!ps->retained && st->accessed)
            r->free_off[t->acc[t->acc_start[i + 1] - 1].op + 1]++;
    }
    free(init);
    for (uint32_t o = 0; o < r->n_ops; o++)
        r->free_off[o + 1] += r->free_off[o];
    uint32_t *fill = calloc((size_t)r->n_ops + 1, sizeof(*fill));
    if (!fill)
        return -ENOMEM;
    for (uint32_t i = 0; i < r->n_st; i++) {
        if (r->st[i].retained || !r->st[i].accessed)
            continue;
        uint32_t last = t->acc[t->acc_start[i + 1] - 1].op;
        r->frees[r->free_off[last] + fill[last]++] = i;
    }
    free(fill);

    /* A host copy for what starts on host (its home, for a movable
     * storage) or is ever stored. */
    for (size_t k = 0; k < s->n_actions; k++)
        if (s->actions[k].kind == PLAN_ACT_STORE)
            r->st[s->actions[k].storage].slot = 0;
    r->n_slots = 0;
    for (uint32_t i = 0; i < r->n_st; i++)
        if (r->st[i].initial == PLAN_INIT_HOST || r->st[i].slot == 0)
            r->st[i].slot = r->n_slots++;
        else
            r->st[i].slot = HOR_NONE;
    if (r->n_slots > HO_CTL_MAX_SLOTS)
        return hor_fail(r->c, -E2BIG, "%u host copies, at most %u",
                        r->n_slots, HO_CTL_MAX_SLOTS);
    return 0;
}

static int start_engines(ho_replay *r)
{
    char err[HOR_DETAIL_LEN] = "";
    r->n_eng = r->pt->link.duplex ? 2 : 1;
    for (unsigned k = 0; k < r->n_eng; k++) {
        hor_engine *x = &r->eng[k];
        x->cap = HOR_ENGINE_DEPTH;
        x->mask = HOR_ENGINE_DEPTH - 1;
        x->q = calloc(x->cap, sizeof(*x->q));
        if (!x->q)
            return -ENOMEM;
        int rc = r->ops->engine_new(r->bst, HOR_ENGINE_DEPTH, &x->e, err,
                                    sizeof(err));
        if (rc < 0)
            return hor_fail(r->c, rc, "cannot start copy engine %u: %s", k,
                            err);
    }
    r->h2d = &r->eng[0];
    r->d2h = &r->eng[r->n_eng - 1];
    return 0;
}

/* The schedule checked and indexed: a copy bound to this trace, simulated
 * against the budget and the device, turned into the per-op index. */
static int index_schedule(ho_replay *r)
{
    plan_schedule *s = NULL;
    int rc = bound_copy(r, &s);
    if (rc == 0)
        rc = check(r, s);
    if (rc == 0)
        rc = build_index(r, s);
    plan_schedule_free(s);
    return rc;
}

/* The storages on device at t = 0 (never-accessed, non-retained ones are
 * never allocated). */
static int alloc_initial(ho_replay *r)
{
    for (uint32_t i = 0; i < r->n_st; i++) {
        hor_storage *st = &r->st[i];
        if (st->initial != PLAN_INIT_DEVICE || !(st->retained || st->accessed))
            continue;
        int rc = hor_dev_alloc(r->dev, st->bytes, &st->blk, &st->ptr);
        if (rc < 0) {
            char why[HOR_ERRLEN];
            snprintf(why, sizeof(why), "%s", ho_runtime_last_error());
            return hor_fail(r->c, rc, "allocating storage %llu at step "
                            "start: %s", (unsigned long long)st->id, why);
        }
        st->dev_valid = true;
    }
    return 0;
}

/* Steps: the arguments checked; the schedule indexed; the release list,
 * history and allocator descriptors; the copy engines; the control region
 * (StageRequest, or local); the storages that start on device. */
HO_EXPORT int ho_replay_new(ho_client *c, ho_device *dev, const ho_trace *t,
                            const ho_plan *p, const ho_replay_opts *opts,
                            ho_replay **ret)
{
    ho_replay *r = NULL;
    int rc;

    if (!dev || !t || !p || !ret)
        return -EINVAL;
    if (dev->owner)
        return hor_fail(c, HO_E_BUSY, "the device is used by another replay");
    rc = hor_trace_finish(t);
    if (rc < 0)
        return c ? hor_fail(c, rc, "%s", ho_runtime_last_error()) : rc;
    if (t->pt->n_ops > HO_CTL_MAX_OPS)
        return hor_fail(c, -E2BIG, "%u ops per step, at most %u",
                        t->pt->n_ops, HO_CTL_MAX_OPS);
    if (plan_trace_hash(t->pt) != p->trace_hash)
        return hor_fail(c, HO_E_BAD_SCHEDULE, "the plan was made for another "
                        "trace than '%s'", t->pt->name);
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->c = c;
    r->dev = dev;
    r->t = t;
    r->pt = t->pt;
    r->p = p;
    if (opts)
        r->opts = *opts;
    r->ops = dev->ops;
    r->bst = dev->st;
    r->n_ops = t->pt->n_ops;
    r->n_st = t->pt->n_storages;
    r->ctl.efd = -1;
    r->log.last = -1;

    rc = index_schedule(r);
    if (rc < 0)
        goto fail;
    r->cap_rel = HOR_RELEASES(r->n_st);
    r->rel = calloc(r->cap_rel, sizeof(*r->rel));
    r->hist = calloc(HO_STEP_HISTORY, sizeof(*r->hist));
    if (!r->rel || !r->hist) {
        rc = -ENOMEM;
        goto fail;
    }
    rc = hor_dev_reserve(dev, HOR_RELEASES(r->n_st));
    if (rc < 0)
        goto fail;
    rc = start_engines(r);
    if (rc < 0)
        goto fail;
    rc = hor_ctl_init(r);
    if (rc < 0)
        goto fail;
    rc = alloc_initial(r);
    if (rc < 0)
        goto fail;
    dev->owner = r;
    *ret = r;
    return 0;
fail:
    ho_replay_free(r);
    return rc;
}

HO_EXPORT ho_replay *ho_replay_free(ho_replay *r)
{
    if (!r)
        return NULL;
    if (r->eng[0].e)
        hor_drain(r);
    hor_log_done(r);
    if (r->st)
        for (uint32_t i = 0; i < r->n_st; i++)
            if (r->st[i].ptr)
                hor_storage_drop_device(r, &r->st[i]);
    for (unsigned k = 0; k < 2; k++) {
        r->eng[k].e = r->ops->engine_free(r->eng[k].e);
        free(r->eng[k].q);
    }
    hor_ctl_done(r);
    if (r->dev->owner == r)
        r->dev->owner = NULL;
    ho_plan_free(r->own_plan);
    HO_FREE_ALL(r->st, r->act_off, r->acts, r->free_off, r->frees, r->mark,
                r->rel, r->hist, r);
    return NULL;
}

/* ----------------------------------------------------------- storages */

static hor_storage *find(ho_replay *r, uint64_t id)
{
    uint32_t i = plan_trace_find(r->pt, id);
    return i == PLAN_NONE ? NULL : &r->st[i];
}

/* find() for the calls between steps: -ENOENT with the sentence recorded
 * when the trace has no such storage. */
static int find_or_fail(ho_replay *r, uint64_t id, hor_storage **ret)
{
    hor_storage *s = find(r, id);
    if (!s)
        return hor_fail(r->c, -ENOENT, "storage %llu is not in the trace",
                        (unsigned long long)id);
    *ret = s;
    return 0;
}

/* The application's buffer has the storage's size, else
 * HO_E_INVALID_SIZE with the sentence recorded. */
static int check_size(ho_replay *r, const hor_storage *s, uint64_t bytes)
{
    if (bytes != s->bytes)
        return hor_fail(r->c, HO_E_INVALID_SIZE, "storage %llu has %llu "
                        "bytes, not %llu", (unsigned long long)s->id,
                        (unsigned long long)s->bytes,
                        (unsigned long long)bytes);
    return 0;
}

HO_EXPORT void *ho_storage_ptr(ho_replay *r, uint64_t storage_id)
{
    if (!r)
        return NULL;
    hor_storage *s = find(r, storage_id);
    return s ? s->ptr : NULL;
}

HO_EXPORT int ho_storage_check(ho_replay *r, uint64_t storage_id,
                               uint64_t bytes)
{
    if (!r)
        return -EINVAL;
    hor_storage *s = find(r, storage_id);
    if (!s)
        return r->in_step ? hor_diverge(r, "storage %llu is not in the "
                                        "trace", (unsigned long long)
                                        storage_id)
                          : hor_fail(r->c, -ENOENT, "storage %llu is not "
                                     "in the trace",
                                     (unsigned long long)storage_id);
    if (bytes == s->bytes)
        return 0;
    if (r->in_step)
        return hor_diverge(r, "storage %llu has %llu bytes, the trace says "
                           "%llu", (unsigned long long)storage_id,
                           (unsigned long long)bytes,
                           (unsigned long long)s->bytes);
    return hor_fail(r->c, HO_E_DIVERGED, "storage %llu has %llu bytes, the "
                    "trace says %llu", (unsigned long long)storage_id,
                    (unsigned long long)bytes, (unsigned long long)s->bytes);
}

/* Write `bytes` of content into s's host copy: from the application's
 * memory, or (`src_dev`) from a device buffer.  A new version that the
 * host copy holds; the caller has drained. */
static int host_copy_put(ho_replay *r, hor_storage *s, const void *src,
                         uint64_t bytes, bool src_dev)
{
    uint64_t stall = 0;
    int rc = hor_slot_acquire(r, s->slot, &stall);
    if (rc < 0)
        return rc;
    uint8_t *dst = hor_slot_ptr(r, s->slot);
    if (src_dev)
        rc = r->ops->copy_sync(r->bst, HOB_D2H, dst, src, bytes);
    else
        memcpy(dst, src, (size_t)bytes);
    hor_slot_release(r, s->slot, rc == 0);
    if (rc < 0)
        return hor_fail(r->c, rc, "storage %llu: copying its content to its "
                        "host copy failed", (unsigned long long)s->id);
    atomic_store(&r->ctl.slots[s->slot].dropped, 0);
    s->version++;
    s->host_valid = true;
    s->lost = false;
    s->host_version = s->version;
    return 0;
}

/* A movable storage the trace starts on device whose home is host: the
 * buffer's content moves to its host copy (its home) and the buffer is
 * freed -- the replay owns it once bound. */
static int bind_home_host(ho_replay *r, hor_storage *s, void *ptr,
                          uint32_t blk)
{
    int rc = host_copy_put(r, s, ptr, s->bytes, true);
    if (rc < 0)
        return rc;
    hor_dev_free_block(r->dev, blk);
    return 0;
}

HO_EXPORT int ho_storage_bind(ho_replay *r, uint64_t storage_id, void *ptr,
                              uint64_t bytes)
{
    if (!r || !ptr)
        return -EINVAL;
    int rc = ho_storage_check(r, storage_id, bytes);
    if (rc < 0)
        return rc;
    hor_storage *s = find(r, storage_id);
    if (r->in_step)
        return hor_fail(r->c, HO_E_STATE, "storage %llu: bind between "
                        "steps, not inside one",
                        (unsigned long long)storage_id);
    bool to_host = s->initial == PLAN_INIT_HOST &&
                   s->trace_initial == PLAN_INIT_DEVICE;
    if (s->initial != PLAN_INIT_DEVICE && !to_host)
        return hor_fail(r->c, HO_E_STATE, "storage %llu does not start on "
                        "device: only `initial: device` storages take a "
                        "buffer", (unsigned long long)storage_id);
    if (s->ptr == ptr)
        return 0;
    uint32_t blk = hor_dev_find(r->dev, ptr);
    if (blk == HOR_NONE || r->dev->a.b[blk].req != bytes)
        return hor_fail(r->c, -EINVAL, "storage %llu: %p is not a %llu-byte "
                        "allocation of this device (ho_device_alloc)",
                        (unsigned long long)storage_id, ptr,
                        (unsigned long long)bytes);
    for (uint32_t i = 0; i < r->n_st; i++)
        if (r->st[i].blk == blk)
            return hor_fail(r->c, -EBUSY, "storage %llu: %p already belongs "
                            "to storage %llu", (unsigned long long)storage_id,
                            ptr, (unsigned long long)r->st[i].id);
    rc = hor_drain(r);
    if (rc < 0)
        return rc;
    if (to_host)
        return bind_home_host(r, s, ptr, blk);
    if (s->ptr)
        hor_storage_drop_device(r, s);
    s->ptr = ptr;
    s->blk = blk;
    s->dev_valid = true;
    r->has_bound = true;
    return 0;
}

HO_EXPORT int ho_storage_write_host(ho_replay *r, uint64_t storage_id,
                                    const void *src, uint64_t bytes)
{
    hor_storage *s = NULL;
    int rc;
    if (!r || (!src && bytes))
        return -EINVAL;
    if ((rc = find_or_fail(r, storage_id, &s)) < 0)
        return rc;
    /* A movable storage the trace starts on host whose home is device:
     * the content goes to its home, the device buffer. */
    bool to_dev = s->initial == PLAN_INIT_DEVICE &&
                  s->trace_initial == PLAN_INIT_HOST && s->ptr;
    if (!to_dev && (s->initial != PLAN_INIT_HOST || s->slot == HOR_NONE))
        return hor_fail(r->c, HO_E_STATE, "storage %llu does not start on "
                        "host", (unsigned long long)storage_id);
    if ((rc = check_size(r, s, bytes)) < 0)
        return rc;
    if (r->in_step || (s->ptr && !to_dev))
        return hor_fail(r->c, HO_E_STATE, "storage %llu: its host copy is "
                        "written between steps", (unsigned long long)
                        storage_id);
    rc = hor_drain(r);
    if (rc < 0 || (rc = hor_restage_if_due(r)) < 0)
        return rc;
    if (!to_dev)
        return host_copy_put(r, s, src, bytes, false);
    rc = r->ops->copy_sync(r->bst, HOB_H2D, s->ptr, src, bytes);
    if (rc < 0)
        return hor_fail(r->c, rc, "storage %llu: writing its content to its "
                        "home on device failed", (unsigned long long)
                        storage_id);
    s->version++;
    s->dev_valid = true;
    s->lost = false;
    return 0;
}

HO_EXPORT int ho_storage_read(ho_replay *r, uint64_t storage_id, void *dst,
                              uint64_t bytes)
{
    hor_storage *s = NULL;
    int rc;
    if (!r || (!dst && bytes))
        return -EINVAL;
    if ((rc = find_or_fail(r, storage_id, &s)) < 0 ||
        (rc = check_size(r, s, bytes)) < 0)
        return rc;
    bool on_dev = s->ptr && s->dev_valid;
    bool on_host = s->host_valid && s->host_version == s->version;
    if (!on_dev && !on_host)
        return hor_fail(r->c, -ENODATA, "storage %llu holds no data now",
                        (unsigned long long)storage_id);
    /* Let its copies land first (rare: checks and tests). */
    if (r->h2d->head > r->h2d->tail || r->d2h->head > r->d2h->tail) {
        hor_engine *x = r->h2d;
        if (s->h2d && x->done < s->h2d)
            rc = r->ops->wait(x->e, s->h2d);
        x = r->d2h;
        if (rc == 0 && s->d2h && x->done < s->d2h)
            rc = r->ops->wait(x->e, s->d2h);
        if (rc < 0)
            return hor_fail(r->c, rc, "a copy of storage %llu failed",
                            (unsigned long long)storage_id);
    }
    if (on_dev) {
        rc = r->ops->copy_sync(r->bst, HOB_D2H, dst, s->ptr, bytes);
        if (rc < 0)
            return hor_fail(r->c, rc, "reading storage %llu from the device "
                            "failed", (unsigned long long)storage_id);
        return 0;
    }
    if (!r->in_step && (rc = hor_restage_if_due(r)) < 0)
        return rc;
    if (s->lost)
        return hor_fail(r->c, HO_E_DISCONNECTED, "storage %llu's host copy "
                        "was lost with the daemon that went away",
                        (unsigned long long)storage_id);
    uint64_t stall = 0;
    rc = hor_slot_acquire(r, s->slot, &stall);
    if (rc < 0)
        return rc;
    memcpy(dst, hor_slot_ptr(r, s->slot), (size_t)bytes);
    hor_slot_release(r, s->slot, false);
    return 0;
}

/* ----------------------------------------------------------- re-plan */

/* The data of every storage that holds some, copied out of r
 * (heap buffers, n_st entries, NULL where none). */
static int save_data(ho_replay *r, void ***ret)
{
    void **buf = calloc(r->n_st ? r->n_st : 1, sizeof(*buf));
    if (!buf)
        return -ENOMEM;
    for (uint32_t i = 0; i < r->n_st; i++) {
        hor_storage *s = &r->st[i];
        bool on_dev = s->ptr && s->dev_valid;
        bool on_host = s->host_valid && s->host_version == s->version;
        if (!on_dev && !on_host)
            continue; /* (inputs the application wrote for the next
                         step count too) */
        buf[i] = malloc(s->bytes ? s->bytes : 1);
        int rc = buf[i] ? ho_storage_read(r, s->id, buf[i], s->bytes)
                        : -ENOMEM;
        if (rc < 0) {
            for (uint32_t k = 0; k <= i; k++)
                free(buf[k]);
            free(buf);
            return rc;
        }
    }
    *ret = buf;
    return 0;
}

/* Put the saved data into replay n where its plan starts each storage. */
static int load_data(ho_replay *n, void **buf)
{
    for (uint32_t i = 0; i < n->n_st; i++) {
        hor_storage *s = &n->st[i];
        if (!buf[i])
            continue;
        int rc = 0;
        if (s->initial == PLAN_INIT_HOST && s->slot != HOR_NONE) {
            rc = ho_storage_write_host(n, s->id, buf[i], s->bytes);
        } else if (s->ptr) {
            rc = ho_device_write(n->dev, s->ptr, buf[i], s->bytes);
            if (rc == 0) {
                s->version++;
                s->dev_valid = true;
            }
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

static void free_saved(void **buf, uint32_t n)
{
    if (!buf)
        return;
    for (uint32_t i = 0; i < n; i++)
        free(buf[i]);
    free(buf);
}

int hor_replay_switch(ho_replay *r)
{
    if (!r->c || !r->ctl.h || r->in_step || r->has_bound)
        return 0;
    uint64_t epoch = atomic_load(&r->ctl.h->plan_epoch);
    if (epoch == 0 || epoch == r->plan_epoch)
        return 0;
    ho_plan *np = NULL;
    uint64_t ddr = 0;
    uint64_t posted = epoch;
    int rc = hor_plan_fetch(r->c, r->t, &epoch, &np, &ddr);
    if (rc == HO_E_BUSY)
        return 0; /* it waits for others to shrink: next boundary */
    r->plan_epoch = posted; /* acted on, whatever comes of it */
    if (rc < 0)
        return rc;
    void **saved = NULL;
    rc = hor_drain(r);
    if (rc == 0)
        rc = save_data(r, &saved);
    if (rc < 0) {
        ho_plan_free(np);
        return rc;
    }
    /* the old plan's device memory goes first: the new one may need it */
    for (uint32_t i = 0; i < r->n_st; i++)
        if (r->st[i].ptr)
            hor_storage_drop_device(r, &r->st[i]);
    r->dev->owner = NULL;
    /* the grant bounds the DDR limit; the application's own stays when
     * it is tighter */
    ho_replay_opts o = r->opts;
    if (ddr && (!o.ddr_limit || ddr < o.ddr_limit))
        o.ddr_limit = ddr;
    ho_replay *n = NULL;
    rc = ho_replay_new(r->c, r->dev, r->t, np, &o, &n);
    if (rc == 0)
        rc = load_data(n, saved);
    if (rc < 0) {
        char why[HOR_ERRLEN];
        snprintf(why, sizeof(why), "%s", ho_runtime_last_error());
        ho_replay_free(n);
        ho_plan_free(np);
        r->dev->owner = r;
        /* back to the old plan's start state */
        int brc = alloc_initial(r);
        if (brc == 0)
            brc = load_data(r, saved);
        free_saved(saved, r->n_st);
        if (brc < 0)
            r->failed = brc;
        return hor_fail(r->c, rc, "switching to the node arbiter's plan of "
                        "epoch %llu failed: %s", (unsigned long long)epoch,
                        why);
    }
    free_saved(saved, r->n_st);
    /* n takes r's place (the application holds r): r's own parts go, n's
     * move in, with what counts steps and totals kept */
    n->step = r->step;
    n->tot_h2d = r->tot_h2d;
    n->tot_d2h = r->tot_d2h;
    n->tot_exposed = r->tot_exposed;
    n->tot_stall = r->tot_stall;
    n->tot_ops = r->tot_ops;
    n->restages = r->restages;
    n->restage_copied = r->restage_copied;
    n->restage_lost = r->restage_lost;
    ho_step_info *hist = n->hist;
    n->hist = r->hist;
    n->n_hist = r->n_hist;
    r->hist = hist;
    r->n_hist = 0;
    /* the copy log (on or off, and the last step's records) stays */
    hor_copylog log = n->log;
    n->log = r->log;
    r->log = log;
    n->own_plan = np;
    n->plan_epoch = posted;
    n->switches = r->switches + 1;
    n->restages = r->restages; /* runtime_restage.c */
    n->restage_copied = r->restage_copied;
    n->restage_lost = r->restage_lost;
    for (uint32_t i = 0; i < n->n_st && i < r->n_st; i++)
        if (r->st[i].lost && !n->st[i].dev_valid) { /* same trace */
            n->st[i].lost = true;
            n->st[i].host_valid = false;
        }
    n->dev->owner = NULL;
    ho_replay tmp = *r;
    ho_replay *old = malloc(sizeof(*old));
    if (!old) {
        /* cannot free r's parts through a shell: free them in place */
        ho_replay_free(n);
        return hor_fail(r->c, -ENOMEM, "out of memory switching plans");
    }
    *old = tmp;
    *r = *n;
    free(n);
    r->h2d = &r->eng[0];
    r->d2h = &r->eng[r->n_eng - 1];
    old->dev = r->dev;
    old->dev->owner = old;
    ho_replay_free(old); /* drops dev->owner */
    r->dev->owner = r;
    atomic_store(&r->ctl.h->step, r->step);
    rc = hor_plan_switched(r->c, epoch);
    if (rc < 0)
        return hor_fail(r->c, rc, "the daemon did not take the switch to "
                        "epoch %llu", (unsigned long long)epoch);
    return 0;
}
