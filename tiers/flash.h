/*
 * tiers/flash.h - the flash tier: one preallocated file per path.
 *
 * The file is created (or reused) at the configured size with fallocate and
 * opened with O_DIRECT; when the filesystem refuses O_DIRECT (tmpfs, some
 * overlay filesystems) it falls back to buffered I/O followed by
 * fdatasync and says so in stats.detail.  Extents are aligned to the
 * device's logical block size (at least 4096).
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

typedef struct tier_flash tier_flash;

typedef struct tier_flash_config {
    const char *path;     /* file to create/reuse */
    uint64_t capacity;    /* bytes, rounded down to alignment */
    bool direct;          /* try O_DIRECT (default true) */
} tier_flash_config;

typedef struct tier_flash_stats {
    uint64_t capacity, used, free, largest_free, extents;
    double fragmentation;
    bool direct_io;
    uint64_t align;
    char path[256];
    char detail[160];     /* "O_DIRECT" or "buffered: O_DIRECT refused (…)" */
} tier_flash_stats;

/* Open or create the file, fallocate it.  HO_E_BAD_CONFIG with a message
 * when the path cannot be created or the filesystem lacks the space. */
int tier_flash_open(const tier_flash_config *cfg, tier_flash **ret,
                    char *err, size_t errlen);
tier_flash *tier_flash_close(tier_flash *f); /* keeps the file; NULL ok */

int tier_flash_alloc(tier_flash *f, uint64_t len, uint64_t *ret_off,
                     uint64_t *ret_len);
int tier_flash_release(tier_flash *f, uint64_t off, uint64_t len);

/* Write/read `len` bytes at flash offset `off`.  `buf` should be
 * page-aligned for O_DIRECT (a bounce buffer is used otherwise); len is
 * padded to the alignment inside the extent.  Blocking; -errno on I/O
 * failure (-ENOSPC, -EIO). */
int tier_flash_write(tier_flash *f, uint64_t off, const void *buf,
                     uint64_t len);
int tier_flash_read(tier_flash *f, uint64_t off, void *buf, uint64_t len);

void tier_flash_stats_get(const tier_flash *f, tier_flash_stats *ret);

#endif
