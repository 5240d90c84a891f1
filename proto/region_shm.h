/*
 * proto/region_shm.h - the statistics header of a residency region
 * (hyperoffload/residency.h), in shared memory: an extent of
 * HO_REGION_SHM_BYTES of the region's session, apart from its host-copy
 * chunks.  The client writes it at every
 * ho_region_step (relaxed atomic stores of plain counters); the daemon
 * reads it for RegionsRequest (`hoctl regions`) after RegionRegister.
 * Nothing in it is trusted: the daemon only copies numbers out (a client
 * that scribbles on it misreports its own region, nothing else).
 */
#ifndef HO_PROTO_REGION_SHM_H
#define HO_PROTO_REGION_SHM_H

#include <stdatomic.h>
#include <stdint.h>

#define HO_REGION_SHM_MAGIC 0x314e4f4947455248ull /* "HREGION1" */
#define HO_REGION_SHM_BYTES 4096u

/* Field indices of ho_region_shm.v[]. */
enum ho_region_shm_field {
    HO_RSHM_BLOCK_BYTES, HO_RSHM_SLOTS, HO_RSHM_HIGH, HO_RSHM_LOW,
    HO_RSHM_DEVICE_BLOCKS, HO_RSHM_DEVICE_PEAK, HO_RSHM_LIVE_BLOCKS,
    HO_RSHM_STORE_BLOCKS, HO_RSHM_STEPS, HO_RSHM_HITS, HO_RSHM_MISSES,
    HO_RSHM_EVICTIONS, HO_RSHM_WRITEBACKS, HO_RSHM_BYTES_H2D,
    HO_RSHM_BYTES_D2H, HO_RSHM_STALL_NS, HO_RSHM_HOST_BYTES,
    HO_RSHM_PREFETCHES, HO_RSHM_BYTES_FLASH, HO_RSHM_HOST_FLASH_BYTES,
    HO_RSHM_N
};

typedef struct ho_region_shm {
    _Atomic uint64_t magic;
    _Atomic uint64_t v[HO_RSHM_N];
} ho_region_shm;

_Static_assert(sizeof(ho_region_shm) <= HO_REGION_SHM_BYTES,
               "the region header fits its page");

#endif
