/*
 * tiers/ddr.h - the host DDR pool.
 *
 * The pool is one capacity budget shared by the node.  Memory is handed out
 * from arenas: one memfd per owner (a session, or a job of one uid), so a
 * client can only ever map memory that holds its own data.  Each arena has a
 * fixed size (the pool capacity): its memfd is created at that size
 * (sparse: no memory until a page is touched) and sealed against any size
 * change, and the daemon and the client map it MAP_SHARED once.  Pages are
 * placed on the configured NUMA node (mbind on the shared mapping sets the
 * file's policy) and mlocked when the daemon may.  Freed and spilled ranges are returned to the kernel
 * with FALLOC_FL_PUNCH_HOLE, so resident memory tracks `used`.
 *
 * Not thread-safe: the daemon's loop thread calls everything here, except
 * the functions marked "worker-safe" below.  Worker threads read/write
 * memory through tier_arena_base() or the memfd (tier_arena_fd with
 * pread/pwrite, e.g. tier_flash_write_fd/read_fd) and do the expensive
 * page work (tier_arena_pages_drop / tier_arena_pages_lock); the fd and
 * the mapping stay valid until tier_arena_free, and the caller keeps the
 * arena alive (and the range allocated) while a worker uses it.
 *
 * An allocation of an arena is in one of two states, kept in its extent
 * tag; RESIDENT is charged to the pool (`used`), EVICTED keeps only its
 * offsets (its pages are punched out, they read as zeros):
 *   (none)   -> RESIDENT  [tier_arena_alloc]
 *   (none)   -> EVICTED   [tier_arena_reserve]
 *   RESIDENT -> EVICTED   [tier_arena_evict; or tier_arena_pages_drop on a
 *                          worker, then tier_arena_mark_evicted]
 *   EVICTED  -> RESIDENT  [tier_arena_restore, tier_arena_restore_unlocked
 *                          (then tier_arena_lock once the data is in)]
 *   RESIDENT -> (none)    [tier_arena_release, tier_arena_free]
 *   EVICTED  -> (none)    [tier_arena_release, tier_arena_free]
 * Any other request (evict or lock an EVICTED one, restore a RESIDENT one)
 * is HO_E_STATE and changes nothing.
 */
#ifndef HO_TIERS_DDR_H
#define HO_TIERS_DDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tiers/limits.h" /* TIER_ARENA_SPACE_MAX, TIER_DDR_*, TIER_DETAIL_LEN */

typedef struct tier_ddr tier_ddr;
typedef struct tier_arena tier_arena;

typedef struct tier_ddr_config {
    uint64_t capacity;   /* bytes of DDR the pool may hold */
    uint64_t align;      /* extent alignment, power of two >= 4096 */
    int numa_node;       /* -1: no binding */
    bool lock;           /* try to mlock pages */
    bool hugepages;      /* MFD_HUGETLB arenas (capacity/align 2 MiB) */
    uint64_t arena_space;/* offset space (= map size) of every arena: what
                            one owner may reserve, DDR-resident or evicted
                            to flash.  0: the capacity.  Rounded down to
                            align; at least the capacity, at most
                            TIER_ARENA_SPACE_MAX.  Virtual only: memory is
                            charged by `used`.  Ignored with hugepages
                            (their mapping reserves real pages). */
} tier_ddr_config;

typedef struct tier_ddr_stats {
    uint64_t capacity;
    uint64_t used;            /* bytes charged (live, DDR-resident extents) */
    uint64_t committed;       /* sum of the arenas' allocation high-water
                                 marks (2 MiB steps) */
    uint64_t largest_free;    /* capacity - used, bounded by the largest
                                 free block of any arena's offset space
                                 (not bounded when there is no arena) */
    double fragmentation;     /* 1 - largest_free / (capacity - used);
                                 0 when the pool is full */
    uint64_t extents;         /* live allocations, evicted ones included */
    uint32_t arenas;
    bool locked;              /* pages are being mlocked */
    int numa_node;            /* -1 when not bound */
    char detail[TIER_DETAIL_LEN]; /* "<numa>; <lock>", e.g. "bound to NUMA
                                 node 0; mlock refused: Operation not
                                 permitted (RLIMIT_MEMLOCK 8 MiB)" */
} tier_ddr_stats;

/* Create the pool.  capacity is rounded down to align.  HO_E_BAD_CONFIG
 * with a message in err when: align is not a power of two >= 4096 (with
 * hugepages: not a multiple of 2 MiB), the rounded capacity is 0, the NUMA
 * node does not exist, or the capacity exceeds the memory of the bound
 * node (numa_node_size64) or of the host (sysinfo) -- the message gives
 * both figures -- or, with hugepages, the 2 MiB huge pages configured
 * (nr_hugepages of the node or the host).  -ENOMEM.  When NUMA is unavailable the pool is created
 * unbound and stats.detail says so.  With cfg->lock, tries mlock once on a
 * scratch page and records a refusal in stats.detail (locked=false).
 * On success *ret owns the pool (tier_ddr_free); *ret is untouched on
 * failure. */
int tier_ddr_new(const tier_ddr_config *cfg, tier_ddr **ret, char *err,
                 size_t errlen);
/* Free the pool.  All arenas should be gone; any left are freed as by
 * tier_arena_free (their pointers die with the pool).  NULL ok; NULL. */
tier_ddr *tier_ddr_free(tier_ddr *d);

/* New arena for an owner (name only for diagnostics: it appears, made of
 * [A-Za-z0-9._:@-], in the memfd name "hyperoffload-arena-<id>-<owner>").
 * The memfd is created (MFD_CLOEXEC|MFD_ALLOW_SEALING, MFD_HUGETLB with
 * hugepages), sized to map_size (= pool capacity; sparse), sealed
 * F_SEAL_GROW|F_SEAL_SHRINK|F_SEAL_SEAL, mapped MAP_SHARED|MAP_NORESERVE
 * over map_size and bound to the NUMA node (a failing mbind is recorded
 * in stats.detail, the pool then stays unbound).  A client that maps the
 * fd can touch at most map_size bytes of it; touching a hole or an
 * evicted range allocates memory the pool does not charge (bounded by
 * map_size; cgroup memory accounting of the daemon is the backstop).  Arena ids start at 1 and are never reused by the
 * pool.  NULL on failure with the reason in err. The arena is owned by the
 * caller and released with tier_arena_free(), which also frees all of its
 * extents. */
tier_arena *tier_arena_new(tier_ddr *d, const char *owner, char *err,
                           size_t errlen);
/* Punch the whole file (memory returns to the kernel even while clients
 * still map it), unmap, close the memfd, uncharge the pool for the
 * arena's resident extents.  NULL ok; returns NULL. */
tier_arena *tier_arena_free(tier_arena *a);

uint64_t tier_arena_id(const tier_arena *a);   /* >= 1, unique per pool */
int tier_arena_fd(const tier_arena *a);        /* memfd, owned by arena */
uint64_t tier_arena_map_size(const tier_arena *a); /* = pool capacity */
uint8_t *tier_arena_base(const tier_arena *a); /* daemon's mapping */

/* Allocate `len` bytes (rounded to align) in the arena, charging the pool.
 * HO_E_INVALID_SIZE (0, overflow), HO_E_TOO_LARGE (> capacity),
 * HO_E_TIER_FULL (pool budget or the arena's offset space); state
 * unchanged on failure.  Placement as tier_extents_alloc.
 * The range reads as zeros (holes); while locking it is mlocked (and so
 * populated) -- the first refusal turns locking off for the pool and is
 * recorded in stats.detail, the allocation still succeeds. */
int tier_arena_alloc(tier_arena *a, uint64_t len, uint64_t *ret_off,
                     uint64_t *ret_len);
/* As tier_arena_alloc, but the allocation starts evicted: its offsets are
 * reserved, the pool is not charged (so never HO_E_TIER_FULL for the
 * budget, only for the arena's offset space) and the range reads as
 * zeros.  For a staged host copy that is not in DDR yet: bring it in with
 * tier_arena_restore*. */
int tier_arena_reserve(tier_arena *a, uint64_t len, uint64_t *ret_off,
                       uint64_t *ret_len);
/* Free an allocation (len as requested or rounded), resident or evicted:
 * munlock and punch its pages out, uncharge the pool if resident.
 * HO_E_UNKNOWN_EXTENT (unchanged), -errno from fallocate (unchanged). */
int tier_arena_release(tier_arena *a, uint64_t off, uint64_t len);

/* For spill: the allocation stays reserved in the arena's offset space but
 * its pages are munlocked and punched out (they read as zeros) and the
 * pool is uncharged.  HO_E_UNKNOWN_EXTENT, HO_E_STATE when already
 * evicted, -errno from fallocate; state unchanged on failure. */
int tier_arena_evict(tier_arena *a, uint64_t off, uint64_t len);
/* For fill: charge the pool again for an evicted allocation (pages are
 * faulted in by the writer; mlocked -- populated with zeros -- while
 * locking).  HO_E_TIER_FULL when the pool is full, HO_E_UNKNOWN_EXTENT,
 * HO_E_STATE when not evicted; state unchanged on failure. */
int tier_arena_restore(tier_arena *a, uint64_t off, uint64_t len);
/* As tier_arena_restore, but the range is not mlocked (so not populated
 * either).  For a fill that writes the pages through the memfd
 * (tier_flash_read_fd): populating them first would allocate and zero
 * every page only for the fill to overwrite it.  Call tier_arena_lock once
 * the data is in. */
int tier_arena_restore_unlocked(tier_arena *a, uint64_t off, uint64_t len);
/* mlock the allocation's range while the pool is locking (this maps the
 * file's pages into the daemon's mapping and populates holes); a refusal
 * is recorded in stats.detail as for alloc and the call still succeeds.
 * 0 when locking is off or was refused.  HO_E_UNKNOWN_EXTENT, HO_E_STATE
 * when evicted. */
int tier_arena_lock(tier_arena *a, uint64_t off, uint64_t len);

/* ---- page work off the loop thread ----
 * Evicting or filling a large range costs tens of milliseconds of system
 * calls (munlock + punch: ~30-60 ms per 256 MiB; mlock populates).  The
 * split below lets a worker thread do them while the loop keeps the
 * bookkeeping:
 *   spill/evict:  worker tier_arena_pages_drop, then loop
 *                 tier_arena_mark_evicted (uncharge once the pages are gone);
 *   fill:         loop tier_arena_restore_unlocked (charge), worker writes
 *                 the data then tier_arena_pages_lock when
 *                 tier_arena_locking() said so at the start (a refusal is
 *                 reported back with tier_arena_lock_refused on the loop).
 * The range may be any sub-range [off, off+len) of an allocation, so large
 * ranges can be split across several workers. */

/* Worker-safe: munlock (when the pool was configured to lock) and punch
 * [off, off+len) out of the memfd; the pages read as zeros afterwards.
 * Changes no pool state.  0, -EINVAL (range outside the mapping), -errno
 * from fallocate. */
int tier_arena_pages_drop(const tier_arena *a, uint64_t off, uint64_t len);
/* Worker-safe: mlock [off, off+len) of the daemon's mapping (populating
 * holes).  Changes no pool state.  0, -EINVAL, -errno (ENOMEM/EPERM: the
 * caller reports it with tier_arena_lock_refused). */
int tier_arena_pages_lock(const tier_arena *a, uint64_t off, uint64_t len);
/* Loop: true while the pool locks pages (configured and never refused). */
bool tier_arena_locking(const tier_arena *a);
/* Loop: record a refusal (-errno) from tier_arena_pages_lock: locking
 * stops for the pool and stats.detail says why (as a refusal inside
 * tier_arena_alloc would). */
void tier_arena_lock_refused(tier_arena *a, int err);
/* Loop: the allocation's pages were dropped (tier_arena_pages_drop over
 * its whole range): mark it evicted and uncharge the pool, as
 * tier_arena_evict does without the system calls.  HO_E_UNKNOWN_EXTENT,
 * HO_E_STATE when already evicted. */
int tier_arena_mark_evicted(tier_arena *a, uint64_t off, uint64_t len);

/* 1 when the allocation is evicted, 0 when resident, HO_E_UNKNOWN_EXTENT. */
int tier_arena_is_evicted(const tier_arena *a, uint64_t off, uint64_t len);

typedef struct tier_arena_stats {
    uint64_t resident;      /* bytes charged to the pool by this arena */
    uint64_t reserved;      /* bytes of live allocations, evicted included */
    uint64_t committed;     /* allocation high-water mark (2 MiB steps) */
    uint64_t extents;       /* live allocations */
    uint64_t largest_free;  /* largest free block of the offset space */
} tier_arena_stats;

void tier_arena_stats_get(const tier_arena *a, tier_arena_stats *ret);

/* Fill *ret (every field, see tier_ddr_stats); O(number of arenas). */
void tier_ddr_stats_get(const tier_ddr *d, tier_ddr_stats *ret);

#endif
