/*
 * client/residency/residency_region.c - regions of blocks and the
 * residency policy (hyperoffload/residency.h, docs/residency.md).
 *
 * Device memory: one allocation of slots * block_bytes on the region's
 * device, carved into slots.  Host copies: one extent of the session's
 * arena (or a private mapping for a local region), block i at
 * host + i * block_bytes, except store blocks, whose host copy is the
 * store's range of the arena.  Copies run on two engines of the device
 * backend (H2D fills, D2H write-backs); a fill of a block depends on its
 * last write-back, a slot drained by a write-back is reused only once the
 * D2H ticket completed.  Nothing here makes a system call except the
 * backends' own wake-ups and waits.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "client/residency/residency_internal.h"
#include "proto/region_shm.h"

static int bad(ho_region *r, uint32_t b)
{
    if (b >= r->cfg.max_blocks || !(r->b[b].flags & HRES_USED))
        return HRES_FAIL(r, HO_E_INVALID_SIZE, "block %" PRIu32 " is not a "
                         "live block of the region", b);
    return 0;
}

static void stall_add(ho_region *r, ho_res_stall cause, uint64_t t0)
{
    uint64_t ns = hob_now_ns() - t0;
    r->st.stall_ns[cause] += ns;
    r->st.stall_total_ns += ns;
    r->step_stall += ns;
}

/* ----------------------------------------------------------- host copies */

#define HRES_CHUNK_DEFAULT (4ull << 20)

static uint8_t *host_of(const ho_region *r, uint32_t b)
{
    uint64_t bb = r->cfg.block_bytes;
    if (!r->chunks)
        return r->host + (uint64_t)b * bb;
    return r->chunks[b / r->chunk_blocks].host +
           (uint64_t)(b % r->chunk_blocks) * bb;
}

/* Every copy submitted has completed (before a chunk's pages move). */
static int quiesce_all(ho_region *r)
{
    int rc = 0;
    if (r->h2d_last)
        rc = r->ops->wait(r->h2d, r->h2d_last);
    if (rc == 0 && r->d2h_last)
        rc = r->ops->wait(r->d2h, r->d2h_last);
    if (rc < 0)
        return HRES_FAIL(r, rc, "a copy of the region failed");
    return 0;
}

/* The least recently used chunk in DDR that may go, other than `except`;
 * HRES_NONE when none. */
static uint32_t chunk_coldest(const ho_region *r, uint32_t except)
{
    uint32_t best = HRES_NONE;
    for (uint32_t k = 0; k < r->n_chunks; k++) {
        const hres_chunk *ch = &r->chunks[k];
        if (k == except || !ch->extent_id || ch->flash || ch->hold)
            continue;
        if (best == HRES_NONE || ch->lru < r->chunks[best].lru)
            best = k;
    }
    return best;
}

static int client_fail(ho_region *r, int rc, const char *what, uint32_t k)
{
    char e[256];
    return HRES_FAIL(r, rc, "%s chunk %" PRIu32 " of the region's host "
                     "copies: %s", what, k, ho_last_error(r->c, e, sizeof e));
}

static int chunk_spill(ho_region *r, uint32_t k)
{
    int rc = quiesce_all(r);
    if (rc < 0)
        return rc;
    rc = ho_extent_spill(r->c, r->chunks[k].extent_id, NULL);
    if (rc < 0)
        return client_fail(r, rc, "spilling", k);
    r->chunks[k].flash = true;
    r->st.spills++;
    r->st.bytes_flash += r->chunks[k].bytes;
    return 0;
}

static bool ddr_short(int rc)
{
    return rc == HO_E_QUOTA || rc == HO_E_TIER_FULL;
}

/* Bring chunk k back from flash, spilling the coldest while DDR is
 * short. */
static int chunk_load(ho_region *r, uint32_t k)
{
    for (;;) {
        int rc = ho_extent_fill(r->c, r->chunks[k].extent_id, NULL);
        if (rc == 0)
            break;
        uint32_t v = ddr_short(rc) ? chunk_coldest(r, k) : HRES_NONE;
        if (v == HRES_NONE)
            return client_fail(r, rc, "filling", k);
        if ((rc = chunk_spill(r, v)) < 0)
            return rc;
    }
    r->chunks[k].flash = false;
    r->st.unspills++;
    r->st.bytes_flash += r->chunks[k].bytes;
    return 0;
}

int hres_host_ready(ho_region *r, uint32_t b)
{
    if (!r->chunks || (r->b[b].flags & HRES_STORE))
        return 0;
    hres_chunk *ch = &r->chunks[b / r->chunk_blocks];
    ch->lru = ++r->tick;
    if (!ch->flash)
        return 0;
    uint64_t t0 = hob_now_ns();
    int rc = chunk_load(r, b / r->chunk_blocks);
    stall_add(r, HO_STALL_FLASH, t0);
    return rc;
}

/* The session region's host copies: chunk extents, the coldest spilled
 * while the session's DDR is short; then the statistics header. */
static int chunks_new(ho_region *r)
{
    uint64_t bb = r->cfg.block_bytes;
    uint32_t nb = r->cfg.max_blocks;
    uint64_t cb = r->cfg.host_chunk_bytes ? r->cfg.host_chunk_bytes
                                          : HRES_CHUNK_DEFAULT;
    uint64_t per = cb / bb;
    if (per == 0)
        per = 1;
    if (per > nb)
        per = nb;
    r->chunk_blocks = (uint32_t)per;
    r->n_chunks = (uint32_t)((nb + per - 1) / per);
    r->chunks = calloc(r->n_chunks, sizeof(hres_chunk));
    if (!r->chunks)
        return HRES_FAIL(r, -ENOMEM, "out of memory");
    ho_extent x;
    int rc = ho_extent_alloc(r->c, HO_REGION_SHM_BYTES, &x);
    if (rc < 0) {
        char e[256];
        return HRES_FAIL(r, rc, "the region's statistics header: %s",
                         ho_last_error(r->c, e, sizeof e));
    }
    r->extent_id = x.id;
    r->shm = x.ptr;
    for (uint32_t k = 0; k < r->n_chunks; k++) {
        uint32_t n = k + 1 < r->n_chunks ? r->chunk_blocks
                                         : nb - k * r->chunk_blocks;
        hres_chunk *ch = &r->chunks[k];
        ch->bytes = (uint64_t)n * bb;
        for (;;) {
            rc = ho_extent_alloc(r->c, ch->bytes, &x);
            if (rc == 0)
                break;
            uint32_t v = ddr_short(rc) ? chunk_coldest(r, k) : HRES_NONE;
            if (v == HRES_NONE) {
                char e[256];
                return HRES_FAIL(r, rc, "the region's host copies (%" PRIu64
                                 " bytes of DDR, chunk %" PRIu32 " of %"
                                 PRIu32 "): %s", r->host_bytes, k,
                                 r->n_chunks,
                                 ho_last_error(r->c, e, sizeof e));
            }
            if ((rc = chunk_spill(r, v)) < 0)
                return rc;
        }
        ch->extent_id = x.id;
        ch->host = x.ptr;
        ch->lru = ++r->tick;
        if (r->ops->host_register)
            (void)r->ops->host_register(r->dev->st, ch->host, ch->bytes);
    }
    return 0;
}

/* ----------------------------------------------------------- slots */

static void slot_put(ho_region *r, uint32_t s)
{
    r->slot_owner[s] = HRES_NONE;
    r->free_slots[r->n_free++] = s;
    r->held--;
}

/* Reclaim drained slots whose write-back completed (wait: the oldest one
 * even when it has not, as a stall). */
static int drain_reap(ho_region *r, bool wait)
{
    while (r->drain_n) {
        uint32_t i = r->drain_head;
        uint64_t t = r->drain_t[i];
        if (r->ops->completed(r->d2h) < t) {
            if (!wait)
                return 0;
            uint64_t t0 = hob_now_ns();
            int rc = r->ops->wait(r->d2h, t);
            stall_add(r, HO_STALL_WRITEBACK, t0);
            if (rc < 0)
                return HRES_FAIL(r, rc, "a write-back of the region failed");
            wait = false;
        }
        slot_put(r, r->drain[i]);
        r->drain_head = (i + 1) % r->n_slots;
        r->drain_n--;
    }
    return 0;
}

/* Fills that completed: their blocks are resident. */
static void incoming_reap(ho_region *r)
{
    uint64_t done = r->ops->completed(r->h2d);
    for (uint32_t i = 0; i < r->n_incoming;) {
        hres_blk *x = &r->b[r->incoming[i]];
        if (x->h2d <= done) {
            x->h2d = 0;
            r->incoming[i] = r->incoming[--r->n_incoming];
        } else {
            i++;
        }
    }
}

/* May block b leave the device now, for a block needed at step `before`?
 * A prefetch or the background write-back takes no block needed before
 * `before` or inside the prefetch window; an access (demand) may take any
 * announced block that is not in use, the furthest announced first, so
 * that it never fails while a block could go. */
static bool evictable(const ho_region *r, const hres_blk *x, uint64_t before,
                      bool demand)
{
    if (x->pins || (x->flags & HRES_TOUCHED) || x->h2d)
        return false;
    if (r->cfg.policy == HO_RES_LRU)
        return true;
    if (x->need == HO_STEP_NEVER)
        return true;
    /* announced: only if its use comes after the one we make room for and
     * is outside the prefetch window */
    if (demand)
        return true; /* last resort: furthest need first (victim) */
    return x->need > before && x->need > r->step + r->cfg.prefetch_window;
}

static bool is_dirty(const hres_blk *x)
{
    return (x->flags & HRES_DIRTY) || !(x->flags & HRES_HOST_VALID);
}

/* Victim: released first, then unannounced (LRU), then the furthest
 * announced use (Belady).  A demand (someone waits for the slot) takes
 * first the blocks a prefetch could take too (not needed soon), clean
 * before dirty (a drop frees the slot at once, a write-back would be
 * waited for behind the D2H queue), and only then, furthest first, a
 * block needed soon.  HRES_NONE when none may go. */
static uint32_t victim(const ho_region *r, uint64_t before, bool demand)
{
    uint32_t best = HRES_NONE;
    int best_cls = -1;
    uint64_t best_key = 0;
    for (uint32_t s = 0; s < r->n_slots; s++) {
        uint32_t b = r->slot_owner[s];
        if (b == HRES_NONE)
            continue;
        const hres_blk *x = &r->b[b];
        if (x->slot != s || !evictable(r, x, before, demand))
            continue;
        int cls;
        uint64_t key; /* larger is a better victim */
        if (r->cfg.policy == HO_RES_LRU) {
            cls = 1;
            key = UINT64_MAX - x->lru;
        } else if (x->flags & HRES_RELEASED) {
            cls = 3;
            key = UINT64_MAX - x->lru;
        } else if (x->need == HO_STEP_NEVER) {
            cls = 2;
            key = UINT64_MAX - x->lru;
        } else {
            cls = 1;
            key = x->need;
        }
        if (demand && r->cfg.policy != HO_RES_LRU &&
            evictable(r, x, before, false))
            cls += is_dirty(x) ? 4 : 8; /* not needed soon: first */
        if (cls > best_cls || (cls == best_cls && key > best_key)) {
            best = b;
            best_cls = cls;
            best_key = key;
        }
    }
    return best;
}

/* Take block b off the device: write back when dirty (the slot drains),
 * drop when clean. */
static int evict(ho_region *r, uint32_t b)
{
    hres_blk *x = &r->b[b];
    uint32_t s = x->slot;
    uint64_t bb = r->cfg.block_bytes;
    r->st.evictions++;
    x->slot = HRES_NONE;
    x->flags &= ~HRES_PREFETCHED;
    if (x->need != HO_STEP_NEVER && !(x->flags & HRES_WANTED)) {
        /* announced, resident when it was: wanted again */
        x->flags |= HRES_WANTED;
        r->want[r->n_want++] = b;
    }
    if (is_dirty(x)) {
        uint64_t t = 0;
        int rc = hres_host_ready(r, b);
        if (rc < 0) {
            x->slot = s;
            return rc;
        }
        rc = r->ops->submit(r->d2h, HOB_D2H, x->host,
                                r->dbase + (uint64_t)s * bb, bb, NULL, 0,
                                NULL, &t);
        if (rc < 0) {
            x->slot = s;
            return HRES_FAIL(r, rc, "the write-back of block %" PRIu32
                             " could not be queued", b);
        }
        x->d2h = t;
        r->d2h_last = t;
        x->flags = (x->flags & ~HRES_DIRTY) | HRES_HOST_VALID;
        uint32_t i = (r->drain_head + r->drain_n) % r->n_slots;
        r->drain[i] = s;
        r->drain_t[i] = t;
        r->drain_n++;
        r->st.writebacks++;
        r->st.bytes_d2h += bb;
    } else {
        slot_put(r, s);
        r->st.drops++;
    }
    return 0;
}

/* A free slot for a block needed at step `before`.  may_stall (an access):
 * wait for write-backs and fills in flight when nothing else frees a slot.
 * A slot whose block is being written back is handed over at once with
 * *ret_dep, the D2H ticket the next fill into it must wait for (the copy
 * engines order it; nobody blocks).  Returns the slot, or HRES_NONE with
 * *ret_rc = 0 when none can be had (prefetch: later), or < 0. */
static uint32_t slot_get(ho_region *r, uint64_t before, bool may_stall,
                         uint64_t *ret_dep, int *ret_rc)
{
    *ret_rc = 0;
    *ret_dep = 0;
    for (;;) {
        int rc = drain_reap(r, false);
        if (rc < 0) {
            *ret_rc = rc;
            return HRES_NONE;
        }
        if (r->held < r->high && r->n_free) {
            uint32_t s = r->free_slots[--r->n_free];
            r->held++;
            return s;
        }
        incoming_reap(r);
        uint32_t v = victim(r, before, may_stall);
        if (v != HRES_NONE && may_stall && r->drain_n &&
            r->cfg.policy != HO_RES_LRU && is_dirty(&r->b[v])) {
            /* the oldest write-back in flight ends before a new one
             * queued behind it: wait for that slot instead */
            rc = drain_reap(r, true);
            if (rc < 0) {
                *ret_rc = rc;
                return HRES_NONE;
            }
            continue;
        }
        if (v != HRES_NONE) {
            uint32_t s = r->b[v].slot;
            uint32_t dn = r->drain_n;
            rc = evict(r, v);
            if (rc < 0) {
                *ret_rc = rc;
                return HRES_NONE;
            }
            if (r->drain_n == dn)
                continue; /* dropped clean: the slot is free */
            r->drain_n--; /* the write-back's slot, taken from the tail */
            *ret_dep = r->drain_t[(r->drain_head + r->drain_n) % r->n_slots];
            return s;
        }
        if (r->drain_n && may_stall) {
            rc = drain_reap(r, true);
            if (rc < 0) {
                *ret_rc = rc;
                return HRES_NONE;
            }
            continue;
        }
        if (r->n_incoming && may_stall) {
            /* prefetches hold the rest: let them land, then choose */
            uint64_t t0 = hob_now_ns();
            rc = r->ops->wait(r->h2d, r->b[r->incoming[0]].h2d);
            stall_add(r, HO_STALL_LATE, t0);
            if (rc < 0) {
                *ret_rc = HRES_FAIL(r, rc, "a fill of the region failed");
                return HRES_NONE;
            }
            incoming_reap(r);
            continue;
        }
        if (may_stall)
            *ret_rc = HRES_FAIL(r, HO_E_DEVICE, "every device slot of the "
                                "region under the high watermark (%" PRIu32
                                ") is held by blocks that may not be "
                                "evicted (pinned or in use this step)",
                                r->high);
        return HRES_NONE;
    }
}

static void place(ho_region *r, uint32_t b, uint32_t s)
{
    r->b[b].slot = s;
    r->slot_owner[s] = b;
    if (r->held > r->st.device_peak)
        r->st.device_peak = r->held;
}

/* Queue the fill of block b into slot s, after D2H ticket slot_dep (the
 * slot's write-back) and the block's own last write-back. */
static int fill(ho_region *r, uint32_t b, uint32_t s, uint64_t slot_dep)
{
    hres_blk *x = &r->b[b];
    uint64_t bb = r->cfg.block_bytes;
    int rc = hres_host_ready(r, b);
    if (rc < 0) {
        slot_put(r, s);
        return rc;
    }
    uint64_t need = x->d2h > slot_dep ? x->d2h : slot_dep;
    bool dep = need && r->ops->completed(r->d2h) < need;
    uint64_t t = 0;
    rc = r->ops->submit(r->h2d, HOB_H2D, r->dbase + (uint64_t)s * bb,
                        x->host, bb, dep ? r->d2h : NULL,
                        dep ? need : 0, NULL, &t);
    if (rc < 0) {
        slot_put(r, s);
        return HRES_FAIL(r, rc, "the fill of block %" PRIu32 " could not be "
                         "queued", b);
    }
    place(r, b, s);
    x->h2d = t;
    r->h2d_last = t;
    r->incoming[r->n_incoming++] = b;
    r->st.bytes_h2d += bb;
    return 0;
}

static const ho_region *sort_r;
static int by_need(const void *a, const void *b)
{
    uint64_t x = sort_r->b[*(const uint32_t *)a].need;
    uint64_t y = sort_r->b[*(const uint32_t *)b].need;
    return x < y ? -1 : x > y;
}

/* Prefetch what is due: blocks of the want list (announced, not resident)
 * needed within the window, soonest first. */
static int prefetch_due(ho_region *r)
{
    if (r->cfg.policy == HO_RES_LRU)
        return 0;
    uint64_t horizon = r->step + r->cfg.prefetch_window;
    uint32_t w = 0;
    for (uint32_t i = 0; i < r->n_want; i++) {
        uint32_t b = r->want[i];
        hres_blk *x = &r->b[b];
        if ((x->flags & HRES_USED) && x->slot == HRES_NONE &&
            x->need != HO_STEP_NEVER)
            r->want[w++] = b;
        else
            x->flags &= ~HRES_WANTED;
    }
    r->n_want = w;
    sort_r = r;
    qsort(r->want, r->n_want, sizeof(uint32_t), by_need);
    for (uint32_t i = 0; i < r->n_want; i++) {
        uint32_t b = r->want[i];
        uint64_t when = r->b[b].need;
        if (when > horizon)
            break;
        if (r->b[b].slot != HRES_NONE)
            continue;
        int rc = 0;
        uint64_t dep = 0;
        uint32_t s = slot_get(r, when, false, &dep, &rc);
        if (rc < 0)
            return rc;
        if (s == HRES_NONE)
            return 0; /* no room now: the access will stall or a later
                         step will find room */
        rc = fill(r, b, s, dep);
        if (rc < 0)
            return rc;
        r->b[b].flags |= HRES_PREFETCHED;
        r->st.prefetches++;
    }
    return 0;
}

/* Background write-back down to the low watermark (not in LRU mode). */
static int writeback_to_low(ho_region *r)
{
    if (r->cfg.policy == HO_RES_LRU)
        return 0;
    while (r->held - r->drain_n > r->low) {
        uint32_t v = victim(r, HO_STEP_NEVER, false);
        if (v == HRES_NONE)
            return 0;
        int rc = evict(r, v);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ----------------------------------------------------------- public */

int ho_region_new(ho_client *c, ho_device *dev, const ho_region_config *cfg,
                  ho_region **ret)
{
    if (!dev || !cfg || !ret)
        return hor_fail(c, -EINVAL, "ho_region_new needs a device, a "
                        "configuration and a result pointer");
    ho_region_config k = *cfg;
    if (!k.high_pct)
        k.high_pct = 100;
    if (!k.low_pct)
        k.low_pct = 80;
    if (!k.prefetch_window)
        k.prefetch_window = 2;
    if (k.block_bytes == 0 || k.block_bytes > HO_RES_BLOCK_MAX ||
        k.block_bytes % 64 || k.max_blocks == 0 ||
        k.max_blocks > HO_RES_BLOCKS_MAX || k.high_pct > 100 ||
        k.low_pct > k.high_pct || k.prefetch_window > 1024 ||
        (k.policy != HO_RES_HINTS && k.policy != HO_RES_LRU))
        return hor_fail(c, HO_E_INVALID_SIZE, "a region needs a block size "
                        "in (0, 1 GiB] that is a multiple of 64, 1..2^24 "
                        "blocks, watermarks low <= high <= 100%% and a "
                        "known policy");
    uint64_t slots = k.device_budget / k.block_bytes;
    uint32_t high = (uint32_t)(slots * k.high_pct / 100);
    if (slots < 2 || slots > HO_RES_BLOCKS_MAX || high < 2)
        return hor_fail(c, HO_E_INVALID_SIZE, "a device budget of %" PRIu64
                        " bytes holds %" PRIu64 " blocks of %" PRIu64
                        " bytes; a region needs 2..2^24 under its high "
                        "watermark", k.device_budget, slots, k.block_bytes);
    ho_region *r = calloc(1, sizeof(*r));
    if (!r)
        return hor_fail(c, -ENOMEM, "out of memory");
    r->c = c;
    r->dev = dev;
    r->ops = dev->ops;
    r->cfg = k;
    r->n_slots = (uint32_t)slots;
    r->high = high;
    r->low = (uint32_t)(slots * k.low_pct / 100);
    r->extent_id = 0;
    uint32_t nb = k.max_blocks;
    r->slot_owner = malloc(sizeof(uint32_t) * r->n_slots);
    r->free_slots = malloc(sizeof(uint32_t) * r->n_slots);
    r->drain = malloc(sizeof(uint32_t) * r->n_slots);
    r->drain_t = malloc(sizeof(uint64_t) * r->n_slots);
    r->b = calloc(nb, sizeof(hres_blk));
    r->free_blocks = malloc(sizeof(uint32_t) * nb);
    r->incoming = malloc(sizeof(uint32_t) * r->n_slots);
    r->want = malloc(sizeof(uint32_t) * nb);
    r->maps = calloc(nb, sizeof(hres_map));
    int rc = -ENOMEM;
    if (!r->slot_owner || !r->free_slots || !r->drain || !r->drain_t ||
        !r->b || !r->free_blocks || !r->incoming || !r->maps || !r->want) {
        hor_fail(c, rc, "out of memory");
        goto fail;
    }
    for (uint32_t s = 0; s < r->n_slots; s++) {
        r->slot_owner[s] = HRES_NONE;
        r->free_slots[r->n_free++] = r->n_slots - 1 - s;
    }
    for (uint32_t b = 0; b < nb; b++) {
        r->free_blocks[r->n_free_blocks++] = nb - 1 - b;
        r->b[b].slot = HRES_NONE;
        r->b[b].map = HRES_NONE;
        r->b[b].need = HO_STEP_NEVER;
    }
    char err[256];
    rc = hor_dev_reserve(dev, 1);
    if (rc == 0)
        rc = hor_dev_alloc(dev, slots * k.block_bytes, &r->dblock,
                           (void **)&r->dbase);
    if (rc < 0) {
        hor_fail(c, rc, "the region's device memory (%" PRIu64 " bytes) "
                 "cannot be had: %s", slots * k.block_bytes,
                 ho_runtime_last_error());
        r->dbase = NULL;
        goto fail;
    }
    rc = r->ops->engine_new(dev->st, HOR_ENGINE_DEPTH, &r->h2d, err,
                            sizeof(err));
    if (rc == 0)
        rc = r->ops->engine_new(dev->st, HOR_ENGINE_DEPTH, &r->d2h, err,
                                sizeof(err));
    if (rc < 0) {
        hor_fail(c, rc, "the region's copy engines: %s", err);
        goto fail;
    }
    r->host_bytes = (uint64_t)nb * k.block_bytes;
    if (c) {
        rc = chunks_new(r);
        if (rc < 0)
            goto fail;
    } else {
        void *p = mmap(NULL, r->host_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            rc = -errno;
            hor_fail(c, rc, "the region's local host copies (%" PRIu64
                     " bytes) cannot be mapped", r->host_bytes);
            goto fail;
        }
        r->host = p;
    }
    if (r->host && r->ops->host_register)
        (void)r->ops->host_register(dev->st, r->host, r->host_bytes);
    for (uint32_t b = 0; b < nb; b++)
        r->b[b].host = host_of(r, b);
    r->st.slots = r->n_slots;
    r->st.high = r->high;
    r->st.low = r->low;
    r->st.host_bytes = r->host_bytes;
    if (c) {
        rc = hres_region_register(r, k.name);
        if (rc < 0)
            goto fail;
    }
    *ret = r;
    return 0;
fail:
    ho_region_free(r);
    return rc;
}

ho_region *ho_region_free(ho_region *r)
{
    if (!r)
        return NULL;
    /* engines first: no copy reads a store mapping once it is gone */
    if (r->h2d)
        r->ops->engine_free(r->h2d);
    if (r->d2h)
        r->ops->engine_free(r->d2h);
    for (uint32_t m = 0; m < r->n_maps; m++)
        if (r->maps && r->maps[m].used)
            hres_store_unmap(r, m);
    if (r->dbase)
        hor_dev_free_block(r->dev, r->dblock);
    if (r->host) {
        if (r->ops->host_unregister)
            r->ops->host_unregister(r->dev->st, r->host);
        munmap(r->host, r->host_bytes);
    }
    for (uint32_t k = 0; r->chunks && k < r->n_chunks; k++) {
        if (!r->chunks[k].extent_id)
            continue;
        if (r->ops->host_unregister)
            r->ops->host_unregister(r->dev->st, r->chunks[k].host);
        (void)ho_extent_free(r->c, r->chunks[k].extent_id);
    }
    if (r->extent_id)
        (void)ho_extent_free(r->c, r->extent_id);
    free(r->chunks);
    free(r->slot_owner);
    free(r->free_slots);
    free(r->drain);
    free(r->drain_t);
    free(r->b);
    free(r->free_blocks);
    free(r->incoming);
    free(r->want);
    free(r->maps);
    free(r);
    return NULL;
}

static int block_take(ho_region *r, uint32_t *ret)
{
    if (!r->n_free_blocks)
        return HRES_FAIL(r, HO_E_QUOTA, "the region's %" PRIu32 " blocks "
                         "are all live", r->cfg.max_blocks);
    uint32_t b = r->free_blocks[--r->n_free_blocks];
    hres_blk *x = &r->b[b];
    x->flags = HRES_USED | (x->flags & HRES_WANTED); /* list entry */
    x->pins = 0;
    x->need = HO_STEP_NEVER;
    x->lru = ++r->tick;
    x->h2d = x->d2h = 0;
    x->map = HRES_NONE;
    x->host = host_of(r, b);
    r->st.live_blocks++;
    *ret = b;
    return 0;
}

int ho_block_alloc(ho_region *r, uint32_t *ret_block)
{
    if (!r || !ret_block)
        return hor_fail(NULL, -EINVAL, "ho_block_alloc needs a region");
    uint32_t b = HRES_NONE;
    int rc = block_take(r, &b);
    if (rc < 0)
        return rc;
    uint64_t dep = 0;
    uint32_t s = slot_get(r, r->step, true, &dep, &rc);
    if (s == HRES_NONE) {
        r->b[b].flags &= HRES_WANTED;
        r->free_blocks[r->n_free_blocks++] = b;
        r->st.live_blocks--;
        return rc;
    }
    if (dep && r->ops->completed(r->d2h) < dep) {
        /* the caller writes the slot next: its old block must be out */
        uint64_t t0 = hob_now_ns();
        rc = r->ops->wait(r->d2h, dep);
        stall_add(r, HO_STALL_WRITEBACK, t0);
        if (rc < 0)
            return HRES_FAIL(r, rc, "a write-back of the region failed");
    }
    place(r, b, s);
    r->b[b].flags |= HRES_DIRTY | HRES_TOUCHED;
    *ret_block = b;
    return 0;
}

int hres_block_new_store(ho_region *r, uint8_t *host, uint32_t map,
                         uint32_t *ret_block)
{
    uint32_t b = HRES_NONE;
    int rc = block_take(r, &b);
    if (rc < 0)
        return rc;
    r->b[b].flags |= HRES_STORE | HRES_HOST_VALID;
    r->b[b].host = host;
    r->b[b].map = map;
    r->st.store_blocks++;
    *ret_block = b;
    return 0;
}

/* Wait for block b's copies in flight. */
static int quiesce(ho_region *r, uint32_t b)
{
    hres_blk *x = &r->b[b];
    int rc = 0;
    if (x->h2d)
        rc = r->ops->wait(r->h2d, x->h2d);
    if (rc == 0 && x->d2h)
        rc = r->ops->wait(r->d2h, x->d2h);
    if (rc < 0)
        return HRES_FAIL(r, rc, "a copy of block %" PRIu32 " failed", b);
    incoming_reap(r);
    return 0;
}

int ho_block_free(ho_region *r, uint32_t block)
{
    if (!r)
        return hor_fail(NULL, -EINVAL, "ho_block_free needs a region");
    int rc = bad(r, block);
    if (rc == 0)
        rc = quiesce(r, block);
    if (rc < 0)
        return rc;
    hres_blk *x = &r->b[block];
    if (x->slot != HRES_NONE)
        slot_put(r, x->slot);
    if (x->flags & HRES_STORE) {
        r->st.store_blocks--;
        hres_map *m = &r->maps[x->map];
        if (--m->blocks == 0)
            hres_store_unmap(r, x->map);
    }
    x->slot = HRES_NONE;
    x->flags &= HRES_WANTED; /* it stays on the want list until compacted */
    x->need = HO_STEP_NEVER;
    r->free_blocks[r->n_free_blocks++] = block;
    r->st.live_blocks--;
    return 0;
}

/* Make block b resident now (for access or pin). */
static int make_resident(ho_region *r, uint32_t b)
{
    hres_blk *x = &r->b[b];
    r->st.accesses++;
    if (x->slot != HRES_NONE) {
        if (x->h2d) {
            if (r->ops->completed(r->h2d) < x->h2d) {
                uint64_t t0 = hob_now_ns();
                int rc = r->ops->wait(r->h2d, x->h2d);
                stall_add(r, HO_STALL_LATE, t0);
                r->st.late++;
                if (rc < 0)
                    return HRES_FAIL(r, rc, "the fill of block %" PRIu32
                                     " failed", b);
            }
            incoming_reap(r);
        }
        r->st.hits++;
        if (x->flags & HRES_PREFETCHED)
            r->st.prefetch_hits++;
        x->flags &= ~HRES_PREFETCHED;
        return 0;
    }
    r->st.misses++;
    uint64_t t0 = hob_now_ns();
    int rc = 0;
    uint64_t dep = 0;
    uint32_t s = slot_get(r, r->step, true, &dep, &rc);
    if (s == HRES_NONE) {
        stall_add(r, HO_STALL_MISS, t0);
        return rc;
    }
    rc = fill(r, b, s, dep);
    if (rc == 0) {
        rc = r->ops->wait(r->h2d, x->h2d);
        if (rc < 0)
            rc = HRES_FAIL(r, rc, "the fill of block %" PRIu32 " failed", b);
        incoming_reap(r);
    }
    stall_add(r, HO_STALL_MISS, t0);
    return rc;
}

static void touched(ho_region *r, uint32_t b, int write)
{
    hres_blk *x = &r->b[b];
    x->flags |= HRES_TOUCHED;
    x->flags &= ~HRES_RELEASED;
    if (write)
        x->flags |= HRES_DIRTY;
    x->lru = ++r->tick;
    if (x->need <= r->step)
        x->need = HO_STEP_NEVER;
}

int ho_block_access(ho_region *r, uint32_t block, int write, void **ret_ptr)
{
    if (!r || !ret_ptr)
        return hor_fail(NULL, -EINVAL, "ho_block_access needs a region and "
                        "a result pointer");
    int rc = bad(r, block);
    if (rc < 0)
        return rc;
    if (write && (r->b[block].flags & HRES_STORE))
        return HRES_FAIL(r, HO_E_STATE, "block %" PRIu32 " is mapped from "
                         "the prefix store and is read-only", block);
    rc = make_resident(r, block);
    if (rc < 0)
        return rc;
    touched(r, block, write);
    *ret_ptr = r->dbase + (uint64_t)r->b[block].slot * r->cfg.block_bytes;
    return 0;
}

int ho_region_fetch(ho_region *r, const uint32_t *blocks, size_t n)
{
    if (!r || (n && !blocks))
        return hor_fail(NULL, -EINVAL, "ho_region_fetch needs a region and "
                        "blocks");
    for (size_t i = 0; i < n; i++) {
        int rc = bad(r, blocks[i]);
        if (rc < 0)
            return rc;
    }
    /* in use this step from now on: no fill below takes one of them */
    for (size_t i = 0; i < n; i++)
        r->b[blocks[i]].flags |= HRES_TOUCHED;
    uint64_t t0 = hob_now_ns(), last = 0;
    bool missed = false;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        hres_blk *x = &r->b[blocks[i]];
        if (x->slot == HRES_NONE) {
            uint64_t dep = 0;
            uint32_t s = slot_get(r, r->step, true, &dep, &rc);
            if (s == HRES_NONE)
                break;
            rc = fill(r, blocks[i], s, dep);
            if (rc < 0)
                break;
            r->st.misses++;
            missed = true;
        } else if (x->h2d && r->ops->completed(r->h2d) < x->h2d) {
            r->st.late++;
        }
        if (x->h2d > last)
            last = x->h2d;
    }
    if (rc == 0 && last && r->ops->completed(r->h2d) < last) {
        rc = r->ops->wait(r->h2d, last);
        if (rc < 0)
            rc = HRES_FAIL(r, rc, "a fill of the region failed");
        stall_add(r, missed ? HO_STALL_MISS : HO_STALL_LATE, t0);
    }
    incoming_reap(r);
    return rc;
}

int ho_region_need(ho_region *r, const uint32_t *blocks, size_t n,
                   uint64_t step)
{
    if (!r || (n && !blocks))
        return hor_fail(NULL, -EINVAL, "ho_region_need needs a region and "
                        "blocks");
    for (size_t i = 0; i < n; i++) {
        int rc = bad(r, blocks[i]);
        if (rc < 0)
            return rc;
    }
    if (r->cfg.policy == HO_RES_LRU)
        return 0;
    for (size_t i = 0; i < n; i++) {
        hres_blk *x = &r->b[blocks[i]];
        if (x->need == HO_STEP_NEVER || x->need <= r->step || step < x->need)
            x->need = step;
        x->flags &= ~HRES_RELEASED;
        if (x->slot == HRES_NONE && !(x->flags & HRES_WANTED)) {
            x->flags |= HRES_WANTED;
            r->want[r->n_want++] = blocks[i];
        }
    }
    return prefetch_due(r);
}

int ho_region_release_hint(ho_region *r, const uint32_t *blocks, size_t n)
{
    if (!r || (n && !blocks))
        return hor_fail(NULL, -EINVAL, "ho_region_release_hint needs a "
                        "region and blocks");
    for (size_t i = 0; i < n; i++) {
        int rc = bad(r, blocks[i]);
        if (rc < 0)
            return rc;
    }
    if (r->cfg.policy == HO_RES_LRU)
        return 0;
    for (size_t i = 0; i < n; i++) {
        r->b[blocks[i]].flags |= HRES_RELEASED;
        r->b[blocks[i]].need = HO_STEP_NEVER;
    }
    return 0;
}

int ho_block_pin(ho_region *r, uint32_t block, void **ret_ptr)
{
    if (!r)
        return hor_fail(NULL, -EINVAL, "ho_block_pin needs a region");
    int rc = bad(r, block);
    if (rc == 0)
        rc = make_resident(r, block);
    if (rc < 0)
        return rc;
    r->b[block].pins++;
    r->b[block].lru = ++r->tick;
    if (ret_ptr)
        *ret_ptr = r->dbase +
                   (uint64_t)r->b[block].slot * r->cfg.block_bytes;
    return 0;
}

int ho_block_unpin(ho_region *r, uint32_t block)
{
    if (!r)
        return hor_fail(NULL, -EINVAL, "ho_block_unpin needs a region");
    int rc = bad(r, block);
    if (rc < 0)
        return rc;
    if (!r->b[block].pins)
        return HRES_FAIL(r, HO_E_STATE, "block %" PRIu32 " is not pinned",
                         block);
    r->b[block].pins--;
    return 0;
}

ho_tier ho_block_where(const ho_region *r, uint32_t block)
{
    if (!r || block >= r->cfg.max_blocks ||
        !(r->b[block].flags & HRES_USED))
        return HO_TIER_NONE;
    return r->b[block].slot != HRES_NONE ? HO_TIER_HBM : HO_TIER_DDR;
}

int ho_region_step(ho_region *r, uint64_t *ret_stall_ns)
{
    if (!r)
        return hor_fail(NULL, -EINVAL, "ho_region_step needs a region");
    for (uint32_t s = 0; s < r->n_slots; s++) {
        uint32_t b = r->slot_owner[s];
        if (b != HRES_NONE)
            r->b[b].flags &= ~HRES_TOUCHED;
    }
    for (uint32_t b = 0; b < r->cfg.max_blocks; b++)
        if (r->b[b].need <= r->step)
            r->b[b].need = HO_STEP_NEVER; /* announced, never used */
    r->st.steps++;
    r->st.last_step_stall_ns = r->step_stall;
    if (ret_stall_ns)
        *ret_stall_ns = r->step_stall;
    r->step_stall = 0;
    r->step++;
    incoming_reap(r);
    int rc = drain_reap(r, false);
    if (rc == 0)
        rc = writeback_to_low(r);
    if (rc == 0)
        rc = prefetch_due(r);
    hres_shm_publish(r);
    return rc;
}

uint64_t ho_region_steps(const ho_region *r)
{
    return r ? r->step : 0;
}

void ho_region_get_stats(const ho_region *r, ho_region_stats *ret)
{
    if (!r || !ret)
        return;
    *ret = r->st;
    ret->device_blocks = r->held;
    ret->draining = r->drain_n;
    ret->chunks = r->n_chunks;
    ret->chunks_flash = 0;
    for (uint32_t k = 0; r->chunks && k < r->n_chunks; k++)
        ret->chunks_flash += r->chunks[k].flash;
}

int hres_sync_host(ho_region *r, const uint32_t *blocks, size_t n)
{
    uint64_t t0 = hob_now_ns();
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        hres_blk *x = &r->b[blocks[i]];
        if (x->slot == HRES_NONE || !(x->flags & HRES_DIRTY))
            continue;
        uint64_t bb = r->cfg.block_bytes;
        int rc = hres_host_ready(r, blocks[i]);
        if (rc < 0)
            return rc;
        rc = r->ops->submit(r->d2h, HOB_D2H, x->host,
                                r->dbase + (uint64_t)x->slot * bb, bb, NULL,
                                0, NULL, &last);
        if (rc < 0)
            return HRES_FAIL(r, rc, "the write-back of block %" PRIu32
                             " could not be queued", blocks[i]);
        x->d2h = last;
        r->d2h_last = last;
        x->flags = (x->flags & ~HRES_DIRTY) | HRES_HOST_VALID;
        r->st.writebacks++;
        r->st.bytes_d2h += bb;
    }
    for (size_t i = 0; i < n; i++) {
        hres_blk *x = &r->b[blocks[i]];
        if (x->d2h > last)
            last = x->d2h;
    }
    if (last) {
        int rc = r->ops->wait(r->d2h, last);
        if (rc < 0)
            return HRES_FAIL(r, rc, "a write-back of the region failed");
    }
    stall_add(r, HO_STALL_STORE, t0);
    return 0;
}
