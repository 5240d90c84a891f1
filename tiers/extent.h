/*
 * tiers/extent.h - extent allocator over an abstract offset space
 * [0, capacity).  Used by every tier: DDR arenas, flash files, HBM tables.
 *
 * Best-fit with immediate coalescing of neighbouring free blocks; every
 * operation is O(log n) in the number of free blocks.  Not thread-safe: one
 * owner (the daemon's loop thread) calls it.
 */
#ifndef HO_TIERS_EXTENT_H
#define HO_TIERS_EXTENT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tier_extents tier_extents;

/* Round len up to align (a power of two) into *ret; false (and *ret
 * untouched) when that overflows.  The one rounding rule of every tier. */
static inline bool tier_align_up(uint64_t len, uint64_t align, uint64_t *ret)
{
    if (len > UINT64_MAX - (align - 1))
        return false;
    *ret = (len + align - 1) & ~(align - 1);
    return true;
}

typedef struct tier_extents_stats {
    uint64_t capacity;
    uint64_t used;           /* bytes in live allocations (aligned sizes) */
    uint64_t free;           /* capacity - used */
    uint64_t largest_free;   /* largest single free block */
    uint64_t free_blocks;    /* number of free blocks */
    uint64_t allocations;    /* live allocations */
    double fragmentation;    /* 1 - largest_free / free; 0 when free == 0 */
} tier_extents_stats;

/* New allocator.  `align` is a power of two >= 1; sizes are rounded up to
 * it and offsets are multiples of it.  capacity is rounded down to align
 * (it may end up 0: every alloc is then HO_E_TOO_LARGE).  Returns NULL on
 * OOM or bad arguments (align 0 or not a power of two).  The caller owns
 * the allocator and frees it with tier_extents_free(). */
tier_extents *tier_extents_new(uint64_t capacity, uint64_t align);
tier_extents *tier_extents_free(tier_extents *ea); /* accepts NULL; NULL */

/* Allocate `len` bytes (rounded up to align).  On success *ret_off is set
 * and the rounded length is returned through *ret_len (may be NULL).
 * HO_E_INVALID_SIZE for len == 0 or overflow, HO_E_TOO_LARGE when len >
 * capacity, HO_E_TIER_FULL when no free block is large enough, -ENOMEM.
 * Placement: the smallest free block that fits, the lowest offset among
 * blocks of that size; the allocation takes the start of that block.  On
 * failure nothing changes and the outputs are untouched.  The new
 * allocation's tag is 0. */
int tier_extents_alloc(tier_extents *ea, uint64_t len, uint64_t *ret_off,
                       uint64_t *ret_len);

/* Release [off, off+len) previously returned by alloc (len as requested or
 * as rounded: any len that rounds up to the allocation's length).  The
 * block is merged with free neighbours.  HO_E_UNKNOWN_EXTENT if it is not a
 * live allocation (unknown offset, len 0 or of another rounded length,
 * released already); the allocator is unchanged then. */
int tier_extents_release(tier_extents *ea, uint64_t off, uint64_t len);

/* Length (rounded) of the live allocation starting at off, 0 if none. */
uint64_t tier_extents_lookup(const tier_extents *ea, uint64_t off);

/* A 32-bit word the owner keeps with each live allocation (e.g. a state
 * flag); 0 after alloc.  set: HO_E_UNKNOWN_EXTENT when no live allocation
 * starts at off.  get: same error, *ret_tag untouched then. */
int tier_extents_set_tag(tier_extents *ea, uint64_t off, uint32_t tag);
int tier_extents_get_tag(const tier_extents *ea, uint64_t off,
                         uint32_t *ret_tag);

/* Fill *ret (see tier_extents_stats); O(log n). */
void tier_extents_stats_get(const tier_extents *ea, tier_extents_stats *ret);

/* Highest end offset of any live allocation (0 when empty). */
uint64_t tier_extents_high_water(const tier_extents *ea);

#endif
