/*
 * tiers/flash.h - the flash tier: one preallocated file per path.
 *
 * The file is created (or reused) at the configured size with fallocate and
 * opened with O_DIRECT; when the filesystem refuses O_DIRECT (EINVAL at open
 * or at a probe read: some overlay or FUSE filesystems, tmpfs before Linux
 * 6.6) it falls back to buffered I/O followed by fdatasync and
 * POSIX_FADV_DONTNEED, and says so in stats.detail.  A memory-backed
 * filesystem (tmpfs, ramfs) always gets buffered I/O: newer kernels accept
 * O_DIRECT there, but the data stays in RAM either way.  Extents are
 * aligned to max(4096, the direct-I/O alignment the kernel reports for the
 * file (statx STATX_DIOALIGN) or the device's logical block size).
 *
 * Allocation (tier_flash_alloc/release/stats) is for the loop thread only;
 * tier_flash_write/read are thread-safe (pwrite/pread) and meant for worker
 * threads.
 */
#ifndef HO_TIERS_FLASH_H
#define HO_TIERS_FLASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tiers/tier_limits.h" /* TIER_FLASH_*, TIER_DETAIL_LEN */

typedef struct tier_flash tier_flash;

typedef struct tier_flash_config {
    const char *path;     /* file to create/reuse */
    uint64_t capacity;    /* bytes, rounded down to alignment */
    bool direct;          /* try O_DIRECT (default true) */
    bool remove_at_close; /* tier_flash_close removes the file if this
                             tier created it, else truncates it to 0 */
    uint32_t discard_delay_ms; /* a freed extent is discarded (punched
                             out) this long after its release, by
                             tier_flash_discard_due, unless allocated
                             again first (then it is overwritten); 0:
                             discarded at release */
} tier_flash_config;

typedef struct tier_flash_stats {
    uint64_t capacity, used, free, largest_free, extents;
    double fragmentation;
    bool direct_io;
    uint64_t align;
    char path[TIER_FLASH_PATH_SHOWN];
    char detail[TIER_DETAIL_LEN]; /* "O_DIRECT", "buffered: O_DIRECT refused
                             (Invalid argument)", "buffered: memory-backed
                             filesystem (tmpfs), O_DIRECT not used" or
                             "buffered: O_DIRECT disabled by configuration" */
} tier_flash_stats;

/* Open or create the file (mode 0600, O_CLOEXEC), fallocate [0, capacity)
 * -- a smaller file grows, holes are filled, data of a reused file is kept,
 * a larger file is not shrunk (only its first capacity bytes are used).
 * capacity is rounded down to the alignment.  HO_E_BAD_CONFIG with a
 * message in err when: the path is empty or cannot be opened/created, is
 * not a regular file, capacity is 0 after rounding or above 2^60, the
 * filesystem lacks the space (message gives the bytes needed and the bytes
 * available, statvfs f_bavail), fallocate fails.  A file this call created
 * is removed again on failure.  The file is locked (exclusive flock,
 * taken before anything is written, held until tier_flash_close): a file
 * another process holds is -EBUSY, err naming the path and the holder's
 * pid.  -ENOMEM.  On success *ret owns the tier
 * (tier_flash_close); untouched on failure. */
int tier_flash_open(const tier_flash_config *cfg, tier_flash **ret,
                    char *err, size_t errlen);
/* Close the tier; keeps the file and its data unless the config said
 * remove_at_close.  NULL ok. */
tier_flash *tier_flash_close(tier_flash *f);

/* Extents of the file, as tier_extents_alloc/release with the tier's
 * alignment (same errors).  Loop thread only.  Release discards the
 * extent's data: fallocate(PUNCH_HOLE | KEEP_SIZE), so the range reads as
 * zeros and its blocks return to the filesystem, or an overwrite with
 * zeros where the filesystem cannot punch.  Once a range was punched,
 * alloc fallocates the new extent's blocks again (a full filesystem is
 * then -ENOSPC from alloc, the allocator unchanged, instead of a failed
 * spill later). */
int tier_flash_alloc(tier_flash *f, uint64_t len, uint64_t *ret_off,
                     uint64_t *ret_len);
int tier_flash_release(tier_flash *f, uint64_t off, uint64_t len);
/* Discard the freed ranges whose delay has passed (all of them when
 * `all`), at most `max_bytes` (0: no limit); returns the bytes discarded.
 * The caller runs it now and then (the daemon: every second). */
uint64_t tier_flash_discard_due(tier_flash *f, uint64_t max_bytes, bool all);
/* Bytes freed and not yet discarded. */
uint64_t tier_flash_discard_pending(const tier_flash *f);

/* Write/read `len` bytes at flash offset `off`.  `buf` should be aligned to
 * stats.align (page-aligned is enough for 4096) for O_DIRECT: an aligned
 * buffer goes straight to the file in chunks of 8 MiB, an unaligned buffer
 * or an unaligned tail goes through a bounce buffer (up to 4 MiB, allocated
 * per call).  len is padded to the alignment inside the extent: a write may
 * write zeros up to the padded end, a read touches only buf[0, len).  off
 * must be aligned and [off, off + padded len) inside the capacity, else
 * HO_E_INVALID_SIZE (len 0 too); the extent allocator is not consulted
 * (so the calls need no lock).  EINTR and short transfers are retried.
 * Buffered mode: the write is followed by fdatasync and both calls drop the
 * range from the page cache.  Blocking; thread-safe; -errno on I/O failure
 * (-ENOSPC, -EIO; end of file inside the range is -EIO), -ENOMEM; after a
 * failed write the range's content is undefined. */
int tier_flash_write(tier_flash *f, uint64_t off, const void *buf,
                     uint64_t len);
int tier_flash_read(tier_flash *f, uint64_t off, void *buf, uint64_t len);

/* The same transfers between flash and a file descriptor -- meant for a
 * DDR arena's memfd (tier_arena_fd, arena offset): the range of src_fd /
 * dst_fd is copied with pread/pwrite through aligned bounce buffers, so no
 * page of it is faulted into or pinned in the caller's address space (for
 * a memfd, pwrite allocates the file's pages directly, far cheaper than
 * faulting them in through a mapping).  Chunks of 4 MiB; the copy of one
 * chunk overlaps the flash I/O of the next (a helper thread per call when
 * len spans several chunks; three bounce buffers of up to 4 MiB).  Range
 * rules and errors as tier_flash_write/read, plus -EINVAL for a negative
 * fd or a range past 2^63; the fd range must lie inside its file (end of
 * file inside it: -EIO).  On failure part of the destination may have been
 * written.  Blocking; thread-safe; does not move the fd's file offset. */
int tier_flash_write_fd(tier_flash *f, uint64_t off, int src_fd,
                        uint64_t src_off, uint64_t len);
int tier_flash_read_fd(tier_flash *f, uint64_t off, int dst_fd,
                       uint64_t dst_off, uint64_t len);

/* Fill *ret: the extent allocator's figures, the I/O mode and alignment,
 * the path (truncated to 255 bytes) and the detail line.  Loop thread. */
void tier_flash_stats_get(const tier_flash *f, tier_flash_stats *ret);

#endif
