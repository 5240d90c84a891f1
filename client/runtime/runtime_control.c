/*
 * client/runtime/runtime_control.c - the client half of the control region
 * (proto/control.h, docs/runtime.md): installing a replay with the daemon
 * (StageRequest / StageReply with the region's memfd and an eventfd),
 * checking and mapping the region, the local stand-in for replays without
 * a daemon, and the slot protocol of client copies.
 *
 * Slot protocol: a slot's state moves DDR -> CLIENT when the first copy
 * that uses it is issued and CLIENT -> DDR when the last one completed
 * (busy[] counts them; the replay thread alone touches it), both by
 * compare-and-swap, so a daemon spill never races a client copy.  A store
 * clears `dropped` when issued and bumps the slot's version on
 * completion; free_host sets `dropped`.  A slot that is not in DDR when a copy needs it makes
 * the client set `urgent` (slot + 1), write the eventfd and sleep on the
 * header's `seq` futex until the daemon has brought it back; the time is
 * stall.
 *
 * Nothing from the daemon is trusted: sizes, offsets and the layout are
 * checked against the trace, the request and the mapping before use.
 */
#include "client/runtime/runtime_internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proto/mem.h"

/* ----------------------------------------------------------- layout */

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

/* Byte offsets of the standard layout (the daemon uses the same). */
static void layout(uint32_t n_slots, uint32_t n_ops, uint64_t *ret_slots_off,
                   uint64_t *ret_ms_off, uint64_t *ret_total)
{
    uint64_t hdr = align_up(sizeof(ho_ctl_header), 64);
    uint64_t ms = align_up(hdr + (uint64_t)n_slots * sizeof(ho_ctl_slot), 64);
    *ret_slots_off = hdr;
    *ret_ms_off = ms;
    *ret_total = ms + ((uint64_t)n_ops + 63) / 64 * 8;
}

/* ----------------------------------------------------------- local */

static int local_setup(ho_replay *r)
{
    hor_ctl *x = &r->ctl;
    uint64_t slots_off, ms_off, total;
    layout(r->n_slots, r->n_ops, &slots_off, &ms_off, &total);
    total = align_up(total, 64);
    ho_ctl_header *h = aligned_alloc(64, (size_t)total);
    if (!h)
        return -ENOMEM;
    memset(h, 0, (size_t)total);
    h->magic = HO_CTL_MAGIC;
    h->version = HO_CTL_VERSION;
    h->header_bytes = (uint32_t)sizeof(*h);
    h->n_slots = r->n_slots;
    h->n_ops = r->n_ops;
    h->slots_offset = slots_off;
    h->milestones_offset = ms_off;
    h->total_bytes = total;
    atomic_store(&h->op, HO_CTL_IDLE);
    x->h = h;
    x->slots = ho_ctl_slots(h);
    x->ms = ho_ctl_milestones(h);

    /* One private, pre-faulted mapping for every host copy. */
    uint64_t off = 0;
    for (uint32_t i = 0; i < r->n_st; i++) {
        const hor_storage *s = &r->st[i];
        if (s->slot == HOR_NONE)
            continue;
        ho_ctl_slot *sl = &x->slots[s->slot];
        sl->storage_id = s->id;
        sl->extent_id = (uint64_t)s->slot + 1;
        sl->offset = off;
        sl->length = s->bytes;
        atomic_store(&sl->state, HO_SLOT_DDR);
        uint64_t len = align_up(s->bytes, HOR_LOCAL_SLOT_ALIGN);
        if (off > UINT64_MAX - len)
            return -EOVERFLOW;
        off += len;
    }
    x->staged_bytes = off;
    atomic_store(&h->ddr_bytes, off);
    if (off > 0) {
        if (off > SIZE_MAX)
            return -ENOMEM;
        void *p = mmap(NULL, (size_t)off, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED)
            return hor_fail(NULL, -errno, "cannot map %llu bytes of host "
                            "copies: %s", (unsigned long long)off,
                            strerror(errno));
        x->pool = p;
        x->pool_bytes = off;
    }
    return 0;
}

/* ----------------------------------------------------------- daemon */

static int check_region(ho_replay *r, const Hyperoffload__StageReply *sr,
                        ho_ctl_header *h, uint64_t size)
{
    ho_client *c = r->c;
    uint64_t slots_off = h->slots_offset, ms_off = h->milestones_offset;
    if (h->magic != HO_CTL_MAGIC || h->version != HO_CTL_VERSION ||
        h->header_bytes != sizeof(ho_ctl_header))
        return hor_fail(c, HO_E_PROTOCOL, "control region: magic, version "
                        "or header size %u do not match this library (%zu)",
                        h->header_bytes, sizeof(ho_ctl_header));
    if (h->n_slots != r->n_slots || h->n_ops != r->n_ops ||
        h->total_bytes > size)
        return hor_fail(c, HO_E_PROTOCOL, "control region describes %u "
                        "slots and %u ops in %llu bytes; the replay has %u "
                        "slots and %u ops in a %llu-byte mapping",
                        h->n_slots, h->n_ops,
                        (unsigned long long)h->total_bytes, r->n_slots,
                        r->n_ops, (unsigned long long)size);
    uint64_t slots_b = (uint64_t)r->n_slots * sizeof(ho_ctl_slot);
    uint64_t ms_b = ((uint64_t)r->n_ops + 63) / 64 * 8;
    if (slots_off % 8 || ms_off % 8 || slots_off < sizeof(ho_ctl_header) ||
        slots_off > size || slots_b > size - slots_off || ms_off > size ||
        ms_b > size - ms_off ||
        (ms_off < slots_off + slots_b && slots_off < ms_off + ms_b))
        return hor_fail(c, HO_E_PROTOCOL, "control region layout out of "
                        "bounds (slots at %llu, milestones at %llu, %llu "
                        "bytes)", (unsigned long long)slots_off,
                        (unsigned long long)ms_off,
                        (unsigned long long)size);
    ho_ctl_slot *slots = ho_ctl_slots(h);
    uint64_t pool = ho_pool_size(c);
    for (uint32_t i = 0; i < r->n_slots; i++) {
        const Hyperoffload__StageExtent *e = sr->extents[i];
        const ho_ctl_slot *sl = &slots[i];
        uint32_t k = HOR_NONE;
        for (uint32_t s = 0; s < r->n_st && k == HOR_NONE; s++)
            if (r->st[s].slot == i)
                k = s;
        if (!e || k == HOR_NONE || e->storage_id != r->st[k].id ||
            sl->storage_id != e->storage_id || sl->offset != e->offset ||
            sl->length != r->st[k].bytes || e->length < r->st[k].bytes ||
            e->offset > pool || e->length > pool - e->offset)
            return hor_fail(c, HO_E_PROTOCOL, "host copy %u (storage "
                            "%llu): the daemon's extent or slot does not "
                            "match the request or lies outside the pool",
                            i, k == HOR_NONE ? 0ull
                                             : (unsigned long long)r->st[k].id);
    }
    return 0;
}

/* Step 1 of daemon_setup: one StageSlot per host copy, in slot order
 * (*ret_ss holds them, *ret_ssp points at them; both owned by the
 * caller).  0 or -ENOMEM. */
static int stage_slots(const ho_replay *r, Hyperoffload__StageSlot **ret_ss,
                       Hyperoffload__StageSlot ***ret_ssp)
{
    Hyperoffload__StageSlot *ss = ho_calloc(r->n_slots, sizeof(*ss));
    Hyperoffload__StageSlot **ssp = ho_calloc(r->n_slots, sizeof(*ssp));
    if (!ss || !ssp) {
        HO_FREE_ALL(ss, ssp);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < r->n_st; i++) {
        const hor_storage *s = &r->st[i];
        if (s->slot == HOR_NONE)
            continue;
        hyperoffload__stage_slot__init(&ss[s->slot]);
        ss[s->slot].storage_id = s->id;
        ss[s->slot].bytes = s->bytes;
        ssp[s->slot] = &ss[s->slot];
    }
    *ret_ss = ss;
    *ret_ssp = ssp;
    return 0;
}

/* Step 2 of daemon_setup: check the StageReply's shape, map its control
 * region (fds[0]) and check the region against the replay. */
static int map_region(ho_replay *r, const Hyperoffload__StageReply *sr,
                      const int *fds, unsigned nfds)
{
    ho_client *c = r->c;
    hor_ctl *x = &r->ctl;
    if (!sr || nfds != 2 || sr->n_extents != r->n_slots ||
        sr->control_size < sizeof(ho_ctl_header) ||
        sr->control_size > HOR_CTL_MAX_BYTES)
        return hor_fail(c, HO_E_PROTOCOL, "stage reply: %zu extents for %u "
                        "slots, %u descriptors, control region of %llu bytes",
                        sr ? sr->n_extents : 0, r->n_slots, nfds,
                        sr ? (unsigned long long)sr->control_size : 0ull);
    struct stat stb;
    if (fstat(fds[0], &stb) != 0 || (uint64_t)stb.st_size < sr->control_size)
        return hor_fail(c, HO_E_PROTOCOL, "the control region's file is "
                        "smaller than the %llu bytes announced",
                        (unsigned long long)sr->control_size);
    void *p = mmap(NULL, (size_t)sr->control_size, PROT_READ | PROT_WRITE,
                   MAP_SHARED, fds[0], 0);
    if (p == MAP_FAILED) {
        int rc = -errno;
        return hor_fail(c, rc, "cannot map the control region: %s",
                        strerror(-rc));
    }
    x->h = p;
    x->map_bytes = sr->control_size;
    return check_region(r, sr, x->h, sr->control_size);
}

/* The replay installed with the daemon: StageRequest (the slots, the
 * plan's key, budget and planner, the DDR limit), StageReply with the
 * control region's memfd and an eventfd, the region mapped and checked. */
static int daemon_setup(ho_replay *r)
{
    ho_client *c = r->c;
    hor_ctl *x = &r->ctl;
    Hyperoffload__StageRequest req = HYPEROFFLOAD__STAGE_REQUEST__INIT;
    Hyperoffload__Envelope *reply = NULL;
    Hyperoffload__StageSlot *ss = NULL, **ssp = NULL;
    int fds[2] = {-1, -1};
    unsigned nfds = 0;
    int rc;

    if (!ho_pool_base(c))
        return hor_fail(c, HO_E_NOT_REGISTERED, "a replay with the daemon "
                        "needs a registered session (ho_register)");
    rc = stage_slots(r, &ss, &ssp);
    if (rc < 0)
        return rc;
    req.trace_hash = r->stage_hash    ? r->stage_hash
                     : r->p->daemon_hash ? r->p->daemon_hash
                                         : r->p->trace_hash;
    req.budget = r->p->s->budget_bytes;
    req.planner = (char *)r->p->s->planner;
    req.n_slots = r->n_slots;
    req.slots = ssp;
    req.ddr_limit = r->opts.ddr_limit;
    HOC_ENVELOPE(env, STAGE_REQUEST, stage_request, &req);
    rc = hoc_call_expect_fds(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY,
                             &reply, fds, 2, &nfds);
    if (rc < 0) {
        char why[HOC_ERRLEN];
        hor_fail(NULL, rc, "%s", ho_last_error(c, why, sizeof(why)));
        goto out;
    }
    const Hyperoffload__StageReply *sr = reply->stage_reply;
    rc = map_region(r, sr, fds, nfds);
    if (rc < 0)
        goto out;
    x->slots = ho_ctl_slots(x->h);
    x->ms = ho_ctl_milestones(x->h);
    /* The pool and the epoch it belongs to, kept for this replay. */
    x->pool = hoc_pool_hold(c, &r->epoch);
    x->held = x->pool != NULL;
    if (!x->pool) {
        rc = hor_fail(c, HO_E_DISCONNECTED, "the connection to the daemon "
                      "was lost while the replay was being staged");
        goto out;
    }
    x->efd = fds[1];
    fds[1] = -1;
    x->staged_bytes = sr->staged_bytes;
    x->stage_actions = sr->stage_actions;
    x->milestones = sr->milestones;
out:
    if (fds[0] >= 0)
        close(fds[0]); /* the mapping keeps the region */
    if (fds[1] >= 0)
        close(fds[1]);
    ho_frame_envelope_free(reply);
    free(ss);
    free(ssp);
    return rc;
}

/* Register the host copies' span with the backend when they never leave
 * DDR (a pinned page the daemon spills and punches out would no longer be
 * the page the process sees). */
static void register_pool(ho_replay *r)
{
    hor_ctl *x = &r->ctl;
    if (r->n_slots == 0 || x->stage_actions != 0 || !r->ops->host_register)
        return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < r->n_slots; i++) {
        uint64_t o = x->slots[i].offset, l = x->slots[i].length;
        if (o < lo)
            lo = o;
        if (o + l > hi)
            hi = o + l;
    }
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    lo &= ~(page - 1);
    hi = align_up(hi, page);
    if (r->ops->host_register(r->bst, x->pool + lo, hi - lo) == 0)
        x->registered = x->pool + lo;
    /* Not fatal: copies from pageable memory are slower, not wrong. */
}

int hor_ctl_init(ho_replay *r)
{
    hor_ctl *x = &r->ctl;
    x->efd = -1;
    x->n_slots = r->n_slots;
    x->busy = ho_calloc(r->n_slots, sizeof(*x->busy));
    if (!x->busy)
        return -ENOMEM;
    int rc = r->c ? daemon_setup(r) : local_setup(r);
    if (rc < 0)
        return rc;
    /* Host copies that start on host hold valid data (zeros until
     * ho_storage_write_host). */
    for (uint32_t i = 0; i < r->n_st; i++)
        if (r->st[i].slot != HOR_NONE && r->st[i].initial == PLAN_INIT_HOST)
            atomic_store(&x->slots[r->st[i].slot].version, 1);
    register_pool(r);
    return 0;
}

void hor_ctl_done(ho_replay *r)
{
    hor_ctl_release(r, &r->ctl, r->epoch);
}

void hor_ctl_release(ho_replay *r, hor_ctl *x, uint64_t epoch)
{
    if (x->held)
        hoc_pool_put(r->c, epoch);
    x->held = false;
    if (x->registered)
        r->ops->host_unregister(r->bst, x->registered);
    x->registered = NULL;
    if (x->h) {
        atomic_store(&x->h->op, HO_CTL_IDLE);
        if (x->map_bytes)
            munmap(x->h, (size_t)x->map_bytes);
        else
            free(x->h);
    }
    x->h = NULL;
    if (x->pool_bytes)
        munmap(x->pool, (size_t)x->pool_bytes);
    x->pool = NULL;
    x->pool_bytes = 0;
    if (x->efd >= 0)
        close(x->efd);
    x->efd = -1;
    free(x->busy);
    x->busy = NULL;
}

/* ----------------------------------------------------------- slots */

void hor_ctl_signal(hor_ctl *x)
{
    uint64_t one = 1;
    /* EAGAIN (counter full) still leaves the daemon a wake-up pending. */
    if (write(x->efd, &one, sizeof(one)) < 0) {
    }
}

int hor_slot_acquire(ho_replay *r, uint32_t i, uint64_t *ret_stall_ns)
{
    hor_ctl *x = &r->ctl;
    ho_ctl_slot *sl = &x->slots[i];
    if (x->h && atomic_load(&x->h->revoked))
        return hor_fail(r->c, HO_E_DISCONNECTED, "the daemon let go of this "
                        "replay's host copies (session dropped or daemon "
                        "stopping): storage %llu (slot %u) cannot be used",
                        (unsigned long long)sl->storage_id, i);
    if (x->busy[i]++ > 0) {
        *ret_stall_ns = 0;
        return 0;
    }
    uint32_t want = HO_SLOT_DDR;
    if (atomic_compare_exchange_strong(&sl->state, &want, HO_SLOT_CLIENT)) {
        *ret_stall_ns = 0;
        return 0;
    }
    if (x->efd < 0) {
        x->busy[i]--;
        return hor_fail(r->c, HO_E_STATE, "host copy of storage %llu is in "
                        "state %u, not in DDR", (unsigned long long)
                        sl->storage_id, want);
    }
    /* Not in DDR: ask the daemon for it and sleep until it moved. */
    uint64_t t0 = hor_now_ns(), t = t0;
    for (;;) {
        uint32_t seq = atomic_load(&x->h->seq);
        want = HO_SLOT_DDR;
        if (atomic_compare_exchange_strong(&sl->state, &want,
                                           HO_SLOT_CLIENT))
            break;
        if (r->c && (hoc_peer_gone(r->c) || hoc_epoch(r->c) != r->epoch)) {
            /* The daemon died or restarted (the client may have
             * reconnected since: a new session, without this replay):
             * nothing will ever move this slot again.  Say so now instead
             * of waiting out the timeout. */
            x->busy[i]--;
            return hor_fail(r->c, HO_E_DISCONNECTED, "the daemon went away "
                            "while storage %llu (slot %u) waited to come "
                            "back from flash", (unsigned long long)
                            sl->storage_id, i);
        }
        int32_t gave_up = atomic_load_explicit(&x->h->wait_error,
                                               memory_order_acquire);
        if (gave_up < 0 && atomic_load(&x->h->wait_slot) == i + 1) {
            /* The daemon's bound ([ddr] stage_wait) ran out: it says
             * what the copy waited for. */
            char why[HO_CTL_WHY_MAX];
            memcpy(why, x->h->wait_why, sizeof(why));
            why[sizeof(why) - 1] = '\0';
            x->busy[i]--;
            uint32_t u = i + 1;
            atomic_compare_exchange_strong(&x->h->urgent, &u, 0);
            return hor_fail(r->c, gave_up, "host copy of storage %llu (slot "
                            "%u) did not come into DDR: %s",
                            (unsigned long long)sl->storage_id, i, why);
        }
        if (want == HO_SLOT_CLIENT || t - t0 > HOR_URGENT_GIVE_UP_NS) {
            x->busy[i]--;
            uint32_t u = i + 1;
            atomic_compare_exchange_strong(&x->h->urgent, &u, 0);
            return hor_fail(r->c, HO_E_STATE, "host copy of storage %llu "
                            "(slot %u) %s", (unsigned long long)
                            sl->storage_id, i,
                            want == HO_SLOT_CLIENT
                                ? "is marked in use by another client copy"
                                : "was not brought back to DDR by the "
                                  "daemon within 120 s, and the daemon "
                                  "reported no reason (it should give up "
                                  "first, after [ddr] stage_wait)");
        }
        atomic_store(&x->h->urgent, i + 1);
        hor_ctl_signal(x);
        struct timespec ts = {0, (long)HOR_URGENT_POLL_NS};
        /* Shared futex: the daemon bumps seq in its own mapping. */
        syscall(SYS_futex, (uint32_t *)&x->h->seq, FUTEX_WAIT, seq, &ts,
                NULL, 0);
        t = hor_now_ns();
    }
    uint32_t u = i + 1;
    atomic_compare_exchange_strong(&x->h->urgent, &u, 0);
    *ret_stall_ns = hor_now_ns() - t0;
    return 0;
}

bool hor_ctl_revoked(const ho_replay *r)
{
    return r->ctl.h && atomic_load(&r->ctl.h->revoked);
}

void hor_slot_release(ho_replay *r, uint32_t i, bool stored)
{
    hor_ctl *x = &r->ctl;
    ho_ctl_slot *sl = &x->slots[i];
    if (stored)
        atomic_fetch_add_explicit(&sl->version, 1, memory_order_release);
    if (--x->busy[i] == 0) {
        uint32_t want = HO_SLOT_CLIENT;
        atomic_compare_exchange_strong(&sl->state, &want, HO_SLOT_DDR);
    }
}
