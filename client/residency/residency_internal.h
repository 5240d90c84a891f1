/*
 * client/residency/residency_internal.h - what the residency files of
 * libhyperoffload share (hyperoffload/residency.h is the contract,
 * docs/residency.md the design).  Hidden symbols carry the prefix hres_.
 *
 *   residency_region.c  regions, blocks, the policy on the copy engines
 *   residency_store.c   the prefix store requests (publish, map, unmap)
 *
 * Block states (struct hres_blk), each changed only by the region's
 * thread:
 *   free                  -> resident dirty   [ho_block_alloc]
 *   resident              -> host             [evict: clean drop, or a
 *                                              write-back D2H whose slot
 *                                              drains when it completes]
 *   host                  -> incoming         [prefetch: H2D issued]
 *   incoming              -> resident         [the H2D ticket completed]
 *   host                  -> resident         [access: synchronous fill]
 *   any                   -> free             [ho_block_free]
 */
#ifndef HO_CLIENT_RESIDENCY_INTERNAL_H
#define HO_CLIENT_RESIDENCY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "client/runtime/runtime_internal.h"
#include "hyperoffload/residency.h"

#define HRES_NONE UINT32_MAX

enum {
    HRES_USED = 1u << 0,       /* a live block */
    HRES_HOST_VALID = 1u << 1, /* the host copy holds the data */
    HRES_DIRTY = 1u << 2,      /* device copy newer than the host copy */
    HRES_STORE = 1u << 3,      /* read-only, host copy in the store */
    HRES_TOUCHED = 1u << 4,    /* accessed in the current step */
    HRES_RELEASED = 1u << 5,   /* release_hint given since last use */
    HRES_PREFETCHED = 1u << 6, /* brought in by a prefetch, not yet used */
    HRES_WANTED = 1u << 7,     /* on the want list */
};

typedef struct hres_blk {
    uint32_t slot;         /* device slot or HRES_NONE */
    uint32_t flags;
    uint32_t pins;
    uint32_t map;          /* store mapping index or HRES_NONE */
    uint64_t need;         /* announced step, HO_STEP_NEVER when none */
    uint64_t lru;          /* tick of the last access */
    uint64_t h2d;          /* ticket of the fill in flight, 0 when none */
    uint64_t d2h;          /* ticket of its last write-back */
    uint8_t *host;         /* host copy */
} hres_blk;

/* One extent of a session region's host copies (blocks
 * [k * chunk_blocks, (k + 1) * chunk_blocks)). */
typedef struct hres_chunk {
    uint64_t extent_id;
    uint8_t *host;         /* its address in the arena mapping */
    uint64_t bytes;
    uint64_t lru;          /* tick of its last host use */
    uint32_t hold;         /* > 0: may not be spilled (a publish) */
    bool flash;            /* spilled: its bytes are on flash */
} hres_chunk;

/* A store entry mapped into the region. */
typedef struct hres_map {
    char key[HO_RES_KEY_MAX + 1];
    uint32_t blocks;       /* blocks of the mapping still live */
    bool used;
    uint8_t *base;         /* the entry, mapped PROT_READ from the store's
                              read-only descriptor (munmap at unmap) */
    uint64_t len;
} hres_map;

struct ho_region {
    ho_client *c;          /* NULL: local */
    ho_device *dev;
    const hob_ops *ops;
    ho_region_config cfg;
    hob_engine *h2d, *d2h;
    uint8_t *dbase;        /* device allocation: slots */
    uint32_t dblock;       /* its hor_dev block */
    uint32_t n_slots, high, low;
    uint32_t *slot_owner;  /* block or HRES_NONE */
    uint32_t *free_slots;  /* stack */
    uint32_t n_free;
    uint32_t *drain;       /* slots being written back (FIFO ring) */
    uint64_t *drain_t;     /* their D2H tickets */
    uint32_t drain_head, drain_n;
    uint32_t held;         /* slots held (resident + incoming + drain) */
    hres_blk *b;           /* max_blocks */
    uint32_t *free_blocks; /* stack of unused block ids */
    uint32_t n_free_blocks;
    uint32_t *incoming;    /* blocks with a fill in flight */
    uint32_t n_incoming;
    uint32_t *want;        /* announced blocks not resident (may hold
                              stale entries: prefetch_due compacts it) */
    uint32_t n_want;
    uint8_t *host;         /* host copies of a local region (a private
                              mapping), NULL for a session's region */
    hres_chunk *chunks;    /* a session's region: its host copy extents */
    uint32_t n_chunks, chunk_blocks;
    uint64_t h2d_last, d2h_last; /* last tickets submitted */
    uint8_t *shm;          /* statistics header (proto/region_shm.h), an
                              extent of its own, NULL when local */
    uint64_t host_bytes;
    uint64_t extent_id;    /* the header's extent, 0 when local */
    hres_map *maps;
    uint32_t n_maps;
    uint64_t step, tick;
    uint64_t step_stall;   /* stall of the current step so far */
    ho_region_stats st;
};

/* Record the sentence (as hor_fail, with the region's client). */
#define HRES_FAIL(r, code, ...) hor_fail((r)->c, (code), __VA_ARGS__)

/* Bring the host copies of blocks[0..n) up to date (synchronous write-back
 * of dirty resident ones), counted as HO_STALL_STORE.  0 or the device's
 * code. */
int hres_sync_host(ho_region *r, const uint32_t *blocks, size_t n);
/* A new block whose host copy is `host` (a store range), read-only, clean
 * and not resident, of mapping `map`.  HO_E_QUOTA when max_blocks are
 * live. */
int hres_block_new_store(ho_region *r, uint8_t *host, uint32_t map,
                         uint32_t *ret_block);
/* The chunk of block b's host copy in DDR (brought back from flash when
 * spilled, a stall of cause HO_STALL_FLASH), marked used.  0 or < 0. */
int hres_host_ready(ho_region *r, uint32_t b);
/* residency_store.c: drop the region's reference on mapping m (its last
 * block was freed, or the region goes).  Best effort. */
void hres_store_unmap(ho_region *r, uint32_t m);
/* Register the region's statistics header with the daemon (once, at
 * ho_region_new) / copy the statistics into it (every step). */
int hres_region_register(ho_region *r, const char *name);
void hres_shm_publish(ho_region *r);

#endif
