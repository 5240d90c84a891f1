/*
 * tiers/ddr.h - the host DDR pool.
 *
 * The pool is one capacity budget shared by the node.  Memory is handed out
 * from arenas: one memfd per owner (a session, or a job of one uid), so a
 * client can only ever map memory that holds its own data.  Each arena has a
 * fixed virtual size (the pool capacity) that the daemon and the client map
 * MAP_SHARED once; the memfd file is grown with ftruncate as allocations
 * need (sealed against shrinking), pages are placed on the configured NUMA
 * node (mbind on the shared mapping sets the file's policy) and mlocked
 * when the daemon may.  Freed and spilled ranges are returned to the kernel
 * with FALLOC_FL_PUNCH_HOLE, so resident memory tracks `used`.
 *
 * Not thread-safe: the daemon's loop thread calls everything here.  Worker
 * threads only read/write memory through tier_arena_base().
 */
#ifndef HO_TIERS_DDR_H
#define HO_TIERS_DDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tier_ddr tier_ddr;
typedef struct tier_arena tier_arena;

typedef struct tier_ddr_config {
    uint64_t capacity;   /* bytes of DDR the pool may hold */
    uint64_t align;      /* extent alignment, power of two >= 4096 */
    int numa_node;       /* -1: no binding */
    bool lock;           /* try to mlock pages */
    bool hugepages;      /* MFD_HUGETLB arenas (capacity/align 2 MiB) */
} tier_ddr_config;

typedef struct tier_ddr_stats {
    uint64_t capacity;
    uint64_t used;            /* bytes charged (live, DDR-resident extents) */
    uint64_t committed;       /* sum of arena file sizes */
    uint64_t largest_free;    /* capacity - used bounded by arena space */
    double fragmentation;     /* over all arenas' committed space */
    uint64_t extents;
    uint32_t arenas;
    bool locked;              /* pages are being mlocked */
    int numa_node;            /* -1 when not bound */
    char detail[160];         /* e.g. "mlock refused: Operation not
                                 permitted (RLIMIT_MEMLOCK 8 MiB)" */
} tier_ddr_stats;

/* Create the pool.  Checks capacity against the node's memory (numa or
 * sysinfo) and fails with HO_E_BAD_CONFIG and a message when it cannot be
 * met.  Tries mlock once and records why not in stats.detail. */
int tier_ddr_new(const tier_ddr_config *cfg, tier_ddr **ret, char *err,
                 size_t errlen);
tier_ddr *tier_ddr_free(tier_ddr *d); /* all arenas must be gone; NULL ok */

/* New arena for an owner (name only for diagnostics).  NULL on failure
 * with the reason in err. The arena is owned by the caller and released
 * with tier_arena_free(), which also frees all of its extents. */
tier_arena *tier_arena_new(tier_ddr *d, const char *owner, char *err,
                           size_t errlen);
tier_arena *tier_arena_free(tier_arena *a);

uint64_t tier_arena_id(const tier_arena *a);
int tier_arena_fd(const tier_arena *a);        /* memfd, owned by arena */
uint64_t tier_arena_map_size(const tier_arena *a);
uint8_t *tier_arena_base(const tier_arena *a); /* daemon's mapping */

/* Allocate `len` bytes (rounded to align) in the arena, charging the pool.
 * HO_E_INVALID_SIZE, HO_E_TOO_LARGE (> capacity), HO_E_TIER_FULL. */
int tier_arena_alloc(tier_arena *a, uint64_t len, uint64_t *ret_off,
                     uint64_t *ret_len);
/* Free an allocation: punches the pages out, uncharges the pool. */
int tier_arena_release(tier_arena *a, uint64_t off, uint64_t len);

/* For spill: the allocation stays reserved in the arena's offset space but
 * its pages are punched out and the pool is uncharged. */
int tier_arena_evict(tier_arena *a, uint64_t off, uint64_t len);
/* For fill: charge the pool again for an evicted allocation (pages are
 * faulted in by the writer).  HO_E_TIER_FULL when the pool is full. */
int tier_arena_restore(tier_arena *a, uint64_t off, uint64_t len);

void tier_ddr_stats_get(const tier_ddr *d, tier_ddr_stats *ret);

#endif
