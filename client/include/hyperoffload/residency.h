/*
 * hyperoffload/residency.h - residency requests: regions of fixed-size
 * blocks (a paged KV cache) whose use is announced only a few steps ahead,
 * kept on device between two watermarks by the library, with host copies in
 * the session's DDR arena and a shared prefix store in the daemon.
 *
 * A region belongs to one session (or to no session: a "local" region, host
 * copies in process memory, for tests and offline runs) and to one device
 * (hyperoffload/runtime.h: "host" or "cuda" backend).  It holds up to
 * max_blocks blocks of block_bytes each; each block has a host copy (one
 * extent of the session's arena, allocated once at ho_region_new, so no
 * socket round trip happens per block) and, while resident, a device slot
 * carved from one device allocation of device_budget bytes.
 *
 * Policy (client side, on the device's copy engines, no system call on the
 * hot path except the copy engines' own wake-ups):
 *   - device use (slots held, including blocks being written back) never
 *     exceeds the high watermark; at every ho_region_step the library
 *     writes back / drops blocks in the background until use is at most
 *     the low watermark (pipelined write-back);
 *   - victims: blocks marked with ho_region_release_hint first, then blocks
 *     with no announced use (least recently used first), then the blocks
 *     whose announced use is furthest (Belady with hints).  Never a pinned
 *     block, a block touched in the current step, a block in flight, or a
 *     block needed within the prefetch window;
 *   - only dirty blocks (written on device since their host copy was made)
 *     are copied back; clean ones are dropped;
 *   - ho_region_need(blocks, step) prefetches the blocks once `step` is
 *     within prefetch_window steps, evicting only blocks needed later;
 *   - every wait is a stall, counted with its cause (ho_region_stats).
 * HO_RES_LRU is the reactive baseline: hints and needs are ignored (no
 * prefetch, no background write-back), victims are least recently used.
 *
 * Host copies under DDR pressure (a region of a session): the host copies
 * are extents of host_chunk_bytes; when the session's DDR (its quotas or
 * the pool) holds no more, the least recently used chunk is spilled to
 * flash by the daemon (ho_extent_spill), and brought back (ho_extent_fill,
 * spilling the next coldest) when a block of it is filled, written back
 * or published; the wait is a stall of cause HO_STALL_FLASH.  So a region
 * may hold more host copies than its DDR limit.
 *
 * Prefix store: ho_region_publish copies blocks into the daemon's store
 * under a content key (e.g. a hash of the token prefix).  Other sessions
 * of the same uid and job (they share the arena) map them with
 * ho_region_map_prefix: the blocks of the mapping read the store's copy
 * (read-only: writing one is HO_E_STATE, and the copy is a PROT_READ
 * mapping of a read-only descriptor of the daemon's store memory, so the
 * kernel refuses writes too); the daemon counts references and
 * keeps an entry while it is mapped, after its publisher has gone (up to
 * ttl_ms once unreferenced), and evicts unreferenced entries LRU within
 * the job's store limit.  An entry is never visible from another job or
 * uid (lookups are per arena).
 *
 * Ownership: a region is owned by its creator and released with
 * ho_region_free, which must come before ho_device_close and ho_close of
 * its device and client.  Device pointers returned by ho_block_access stay
 * valid until the next ho_region_step (the block cannot be evicted before)
 * or while the block is pinned.
 * Threading: one thread drives a region (like a replay); different regions
 * may be used from different threads with different devices.
 * Errors as everywhere in the library: 0 or a negative code, the sentence
 * in ho_runtime_last_error() (and ho_last_error() of the client).
 */
#ifndef HYPEROFFLOAD_RESIDENCY_H
#define HYPEROFFLOAD_RESIDENCY_H

#include <stddef.h>
#include <stdint.h>

#include "hyperoffload/client.h"
#include "hyperoffload/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ho_region ho_region;

typedef enum ho_res_policy {
    HO_RES_HINTS = 0,  /* watermarks, Belady with hints, prefetch */
    HO_RES_LRU = 1,    /* reactive: LRU eviction on demand only */
} ho_res_policy;

#define HO_BLOCK_NONE UINT32_MAX
#define HO_STEP_NEVER UINT64_MAX

typedef struct ho_region_config {
    uint64_t block_bytes;     /* > 0, at most HO_RES_BLOCK_MAX */
    uint32_t max_blocks;      /* blocks live at once (host copies), > 0 */
    uint64_t device_budget;   /* device bytes: budget / block_bytes slots */
    uint32_t high_pct;        /* high watermark, % of slots (0: 100) */
    uint32_t low_pct;         /* low watermark, % of slots (0: 80) */
    ho_res_policy policy;
    uint32_t prefetch_window; /* steps ahead a need is prefetched (0: 2) */
    const char *name;         /* shown by `hoctl regions` (NULL: "region") */
    uint64_t host_chunk_bytes; /* host copies of a session's region: one
                                  extent per chunk of this many bytes
                                  (rounded down to whole blocks, at least
                                  one; 0: 4 MiB), the unit spilled to flash
                                  under DDR pressure */
} ho_region_config;

#define HO_RES_BLOCK_MAX (1ull << 30)
#define HO_RES_BLOCKS_MAX (1u << 24)

/* Stall causes (ho_region_stats.stall_ns[]). */
typedef enum ho_res_stall {
    HO_STALL_MISS = 0,      /* block not on device when accessed */
    HO_STALL_LATE = 1,      /* its prefetch was still in flight */
    HO_STALL_WRITEBACK = 2, /* a slot was freed only by a write-back */
    HO_STALL_STORE = 3,     /* publish: host copies brought up to date */
    HO_STALL_FLASH = 4,     /* a host copy's chunk brought back from flash
                               (and the coldest spilled to make room) */
    HO_STALL_N = 5
} ho_res_stall;

typedef struct ho_region_stats {
    uint64_t steps, accesses, hits;
    uint64_t misses;  /* blocks fetched on demand (access, fetch) */
    uint64_t late;
    uint64_t stall_ns[HO_STALL_N];
    uint64_t stall_total_ns;
    uint64_t last_step_stall_ns;  /* stall of the last completed step */
    uint64_t prefetches, prefetch_hits;  /* issued; used while resident */
    uint64_t evictions, writebacks, drops;
    uint64_t bytes_h2d, bytes_d2h;
    uint32_t slots, high, low;          /* device slots, watermarks */
    uint32_t device_blocks;             /* slots held now */
    uint32_t draining;                  /* of which being written back */
    uint32_t device_peak;               /* max slots held (<= high) */
    uint32_t live_blocks, store_blocks; /* allocated; mapped from store */
    uint64_t host_bytes;                /* host copies (DDR and flash) */
    uint32_t chunks, chunks_flash;      /* host copy chunks; on flash now */
    uint64_t spills, unspills;          /* chunks moved to / from flash */
    uint64_t bytes_flash;               /* bytes moved to and from flash */
} ho_region_stats;

/* A region of cfg->max_blocks blocks on dev.  c: the session whose arena
 * holds the host copies (one extent of max_blocks * block_bytes), or NULL
 * for a local region.  HO_E_INVALID_SIZE for a bad configuration (sizes,
 * fewer than 2 slots, low > high), HO_E_DEVICE when the device cannot hold
 * the budget, the daemon's HO_E_QUOTA / HO_E_TIER_FULL for the host
 * copies. */
HO_EXPORT int ho_region_new(ho_client *c, ho_device *dev,
                            const ho_region_config *cfg, ho_region **ret);
/* Waits for the copies in flight, releases device memory, host copies and
 * store mappings.  NULL ok; returns NULL. */
HO_EXPORT ho_region *ho_region_free(ho_region *r);

/* A new block, resident and dirty (its bytes are undefined until written;
 * may evict).  HO_E_QUOTA when max_blocks are live. */
HO_EXPORT int ho_block_alloc(ho_region *r, uint32_t *ret_block);
/* Free a block (waits for its copies in flight). */
HO_EXPORT int ho_block_free(ho_region *r, uint32_t block);
/* Make the block resident now (stalling if it is not), mark it used in
 * this step, dirty when `write`; *ret_ptr: its device address, valid until
 * the next ho_region_step.  HO_E_STATE when writing a store block,
 * HO_E_DEVICE when every slot under the high watermark is held by blocks
 * that may not be evicted. */
HO_EXPORT int ho_block_access(ho_region *r, uint32_t block, int write,
                              void **ret_ptr);
/* These blocks are used in the current step: the missing ones are
 * fetched together (every fill queued, then one wait: a swap-in of a
 * whole sequence), those whose prefetch is in flight waited for; all are
 * then in use until the next ho_region_step, as after ho_block_access.
 * The wait is a stall (HO_STALL_MISS when a block had to be fetched,
 * HO_STALL_LATE when only prefetches were waited for).  Works under both
 * policies (the reactive baseline's swap-in).  HO_E_DEVICE as for
 * ho_block_access. */
HO_EXPORT int ho_region_fetch(ho_region *r, const uint32_t *blocks,
                              size_t n);
/* These blocks will be accessed at step `step` (ho_region_steps()
 * numbering): prefetched once the step is within the window. */
HO_EXPORT int ho_region_need(ho_region *r, const uint32_t *blocks, size_t n,
                             uint64_t step);
/* These blocks are not needed soon: first to go. */
HO_EXPORT int ho_region_release_hint(ho_region *r, const uint32_t *blocks,
                                     size_t n);
/* Pin (resident, never evicted; counted) / unpin. */
HO_EXPORT int ho_block_pin(ho_region *r, uint32_t block, void **ret_ptr);
HO_EXPORT int ho_block_unpin(ho_region *r, uint32_t block);
/* Where the block's current data is: HO_TIER_HBM (on device), HO_TIER_DDR
 * (host copy only), HO_TIER_NONE (not a live block). */
HO_EXPORT ho_tier ho_block_where(const ho_region *r, uint32_t block);
/* End the current step: touched blocks become evictable, background
 * write-back down to the low watermark, prefetches due.  Returns the
 * stall of the step that ended (ns) in *ret_stall_ns (may be NULL). */
HO_EXPORT int ho_region_step(ho_region *r, uint64_t *ret_stall_ns);
/* The current step number (0 before the first ho_region_step). */
HO_EXPORT uint64_t ho_region_steps(const ho_region *r);
HO_EXPORT void ho_region_get_stats(const ho_region *r, ho_region_stats *ret);

/* Publish blocks[0..n) under `key` (at most HO_RES_KEY_MAX bytes) in the
 * daemon's prefix store (their host copies are brought up to date first):
 * -EEXIST when the key exists (nothing changes), HO_E_QUOTA beyond the
 * job's store limit, HO_E_UNSUPPORTED for a local region.  ttl_ms: how
 * long the entry outlives its last reference (0: the daemon's default). */
HO_EXPORT int ho_region_publish(ho_region *r, const char *key,
                                const uint32_t *blocks, size_t n,
                                uint32_t ttl_ms);
/* Map the entry `key` as up to max read-only blocks of this region (the
 * store's copy is their host copy); *ret_n blocks are written to
 * ret_blocks.  -ENOENT when no entry of this job has the key,
 * HO_E_INVALID_SIZE when its block size differs or max is too small.
 * The mapping holds one reference until every block of it is freed. */
HO_EXPORT int ho_region_map_prefix(ho_region *r, const char *key,
                                   uint32_t *ret_blocks, size_t max,
                                   size_t *ret_n);
#define HO_RES_KEY_MAX 128
#define HO_RES_PUBLISH_MAX 4096 /* blocks per publish */

#ifdef __cplusplus
}
#endif
#endif
