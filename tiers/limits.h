/*
 * tiers/limits.h - every bound the tiers put on a size or a count, in one
 * place: what a pool, an arena, a flash file, one transfer and the HBM
 * table may hold.  The constructors (tier_ddr_new, tier_arena_new,
 * tier_flash_open, tier_hbm_new) and the transfer calls check them; the
 * daemon's configuration ranges (daemon/config.c) stay inside them.  Each
 * line says why it is that number.
 *
 * Bounds of the wire are in proto/limits.h; the extent allocator
 * (tiers/extent.h) has none of its own: its offset space is whatever a
 * tier gives it.
 */
#ifndef HO_TIERS_LIMITS_H
#define HO_TIERS_LIMITS_H

#include <stdint.h>

/* ---- DDR pool and arenas (tiers/ddr.h) ---- */

/* Smallest extent alignment: the page, the unit that mlock, mbind and
 * FALLOC_FL_PUNCH_HOLE work in. */
#define TIER_DDR_MIN_ALIGN 4096u
/* Largest pool capacity: offsets and lengths go through off_t (fallocate,
 * ftruncate), so they must fit in int64. */
#define TIER_DDR_MAX_CAPACITY ((uint64_t)INT64_MAX)
/* Offset space (= mapping size) of one arena: the DDR pool plus the
 * flash an owner may spill to.  64 TiB is half of x86-64's 128 TiB user
 * address space: the daemon maps every arena over it, so any larger
 * figure could not be mapped at all (the mapping is virtual,
 * MAP_NORESERVE; memory is charged by `used`). */
#define TIER_ARENA_SPACE_MAX (1ull << 46)
/* Arenas per pool: each holds a memfd and a mapping of the daemon.  64 Ki
 * is the order of the default vm.max_map_count (65530) and of a usual hard
 * RLIMIT_NOFILE, beyond which creation would fail anyway; the bound makes
 * it fail first, with a clear sentence. */
#define TIER_DDR_ARENAS_MAX 65536u
/* Bytes of an arena's owner name kept (with the NUL) for its memfd name
 * "hyperoffload-arena-<id>-<owner>": memfd names are cut at 249 bytes,
 * and 47 characters identify a session or a job. */
#define TIER_DDR_OWNER_MAX 48u
/* NUMA nodes the mbind mask can name: the daemon's numa_node setting
 * goes up to 1023, Linux's default MAX_NUMNODES is 1024. */
#define TIER_DDR_NUMA_NODES_MAX 1024

/* ---- flash (tiers/flash.h) ---- */

/* Extent alignment, at least: the page (buffered I/O and the memfd side
 * of fd transfers work in pages). */
#define TIER_FLASH_MIN_ALIGN 4096ull
/* Largest direct-I/O alignment taken from the kernel (a larger figure is
 * ignored and 4096 used): it must divide TIER_FLASH_PIPE_CHUNK, and no
 * block device has larger blocks. */
#define TIER_FLASH_MAX_ALIGN (1ull << 20)
/* Largest flash capacity: 1 EiB, far above any device, so that offset +
 * padded length can never overflow off_t. */
#define TIER_FLASH_MAX_CAPACITY (1ull << 60)
/* One pwrite/pread moves at most this much.  Measured with bench_tiers on
 * ext4/virtio: 4 MiB and up reach the device's bandwidth; 8 MiB keeps the
 * number of syscalls per GiB small without holding huge bios. */
#define TIER_FLASH_CHUNK (8ull << 20)
/* Bounce buffer for unaligned callers, allocated per call: bounds the
 * memory one tier_flash_write/read takes. */
#define TIER_FLASH_BOUNCE (4ull << 20)
/* fd transfers: chunk of the two-stage pipeline (a multiple of any
 * accepted alignment) and number of bounce buffers in flight, so one
 * transfer holds at most 12 MiB; three buffers let the copy of one chunk
 * overlap the flash I/O of the next with one to spare. */
#define TIER_FLASH_PIPE_CHUNK (4ull << 20)
#define TIER_FLASH_PIPE_BUFS 3
/* Bytes of the configured path shown in tier_flash_stats.path. */
#define TIER_FLASH_PATH_SHOWN 256

/* ---- every tier ---- */

/* The detail line of a tier's statistics (with the NUL): two clauses of
 * up to ~70 characters ("bound to NUMA node 0; mlock refused: ...").
 * It travels in TierStats.detail. */
#define TIER_DETAIL_LEN 160

/* ---- HBM table (tiers/hbm.h) ---- */

/* Devices per table: a node has at most a few dozen accelerators; 256
 * keeps the per-device arrays tiny. */
#define TIER_HBM_DEVICES_MAX 256
/* Grants per device: one per session using it; the daemon's
 * max_connections default (1024) fits four times over. */
#define TIER_HBM_GRANTS_MAX 4096
/* Bytes of a device name, with the NUL ("emu0", "cuda:0", ...). */
#define TIER_HBM_NAME_LEN 32

#endif
