/*
 * tiers/flash.c - the flash tier: one preallocated file, aligned extents,
 * O_DIRECT I/O in large chunks with a bounce buffer for unaligned callers,
 * buffered I/O (fdatasync + drop from the page cache) where O_DIRECT is
 * refused or pointless.
 */
#include "tiers/flash.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <stdint.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "tiers/extent.h"
#include "hyperoffload/errors.h"
#include "proto/errfmt.h"
#include "proto/mem.h"

/* Chunk, bounce-buffer, pipeline, alignment and capacity bounds:
 * TIER_FLASH_* in tiers/tier_limits.h. */

struct tier_flash {
    char *path;
    int fd;              /* I/O: lock_fd, or the O_DIRECT descriptor */
    int lock_fd;         /* first descriptor: holds the flock (and the
                            record lock that names us to a second opener) */
    bool created;        /* this tier created the file */
    bool remove_at_close;
    bool punched;        /* a freed range was punched out: allocations
                            reserve their blocks again */
    uint32_t discard_delay_ms;
    struct flash_freed { /* freed, not yet discarded, oldest first */
        uint64_t off, len, at_ms;
    } *freed;
    size_t n_freed, cap_freed;
    bool direct;
    uint64_t align;
    uint64_t capacity;
    tier_extents *ext;
    char detail[TIER_DETAIL_LEN];
};

static bool is_pow2(uint64_t v)
{
    return v && (v & (v - 1)) == 0;
}

static uint64_t read_sysfs_u64(const char *path)
{
    FILE *f = fopen(path, "re");
    unsigned long long v = 0;

    if (!f)
        return 0;
    if (fscanf(f, "%llu", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

/* max(4096, what the kernel says direct I/O needs on this file). */
static uint64_t dio_align(int fd, const struct stat *st)
{
    uint64_t a = TIER_FLASH_MIN_ALIGN, lbs = 0;
    struct statx sx;
    char p[128];

    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
        (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align) {
        lbs = sx.stx_dio_offset_align;
        if (sx.stx_dio_mem_align > lbs)
            lbs = sx.stx_dio_mem_align;
    } else {
        /* Logical block size of the filesystem's device (a partition's
         * queue/ lives in its parent). */
        snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/queue/logical_block_size",
                 major(st->st_dev), minor(st->st_dev));
        lbs = read_sysfs_u64(p);
        if (!lbs) {
            snprintf(p, sizeof(p),
                     "/sys/dev/block/%u:%u/../queue/logical_block_size",
                     major(st->st_dev), minor(st->st_dev));
            lbs = read_sysfs_u64(p);
        }
    }
    if (is_pow2(lbs) && lbs > a && lbs <= TIER_FLASH_MAX_ALIGN)
        a = lbs;
    return a;
}

static int do_fallocate(int fd, uint64_t len)
{
    int r;

    do {
        r = fallocate(fd, 0, 0, (off_t)len);
    } while (r != 0 && errno == EINTR);
    if (r == 0)
        return 0;
    if (errno == EOPNOTSUPP) {
        /* Filesystems without fallocate: glibc writes the blocks. */
        r = posix_fallocate(fd, 0, (off_t)len);
        return -r;
    }
    return -errno;
}

/* Try O_DIRECT: open a second descriptor and read the first block.  0 and
 * *ret_fd on success, -EINVAL when the filesystem refuses (at open or at
 * the first I/O), another -errno otherwise. */
static int open_direct(const char *path, uint64_t align, int *ret_fd)
{
    void *buf = NULL;
    ssize_t r;
    int fd, rc;

    fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    rc = posix_memalign(&buf, align, align);
    if (rc != 0) {
        close(fd);
        return -rc;
    }
    do {
        r = pread(fd, buf, align, 0);
    } while (r < 0 && errno == EINTR);
    rc = r < 0 ? -errno : 0;
    free(buf);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    *ret_fd = fd;
    return 0;
}

/* The pid of the process holding the record lock of a locked flash file
 * (see flash_lock), 0 when none is visible. */
static long flash_lock_holder(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0,
                       .l_len = 1};
    if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
        return 0;
    return fl.l_pid > 0 ? (long)fl.l_pid : 0;
}

/* Lock the file for this tier alone: an exclusive flock on fd, taken
 * before anything is written, so that a second opener (another daemon
 * given the same path) fails instead of overwriting our extents.  0, or
 * -EBUSY with the holder's pid in err when another open file holds it
 * (the pid comes from the record lock flash_lock_name takes), -1 with err
 * for other failures. */
static int flash_lock(int fd, const char *path, char *err, size_t errlen)
{
    int r;
    do
        r = flock(fd, LOCK_EX | LOCK_NB);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return 0;
    if (errno != EWOULDBLOCK)
        return ho_errf(err, errlen, -1, "cannot lock flash file %s: %s",
                       path, strerror(errno));
    long pid = flash_lock_holder(fd);
    if (pid)
        return ho_errf(err, errlen, -EBUSY, "flash file %s is in use by "
                       "another process (pid %ld holds its lock)", path, pid);
    return ho_errf(err, errlen, -EBUSY, "flash file %s is in use by another "
                   "process (it holds the file's lock)", path);
}

/* After the flock: a record lock on the first byte, which no descriptor
 * of ours closes until tier_flash_close (so it is taken once the O_DIRECT
 * probe is done), only so that F_GETLK can name our pid to a second
 * opener.  Best effort: the flock is the lock. */
static void flash_lock_name(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0,
                       .l_len = 1};
    (void)fcntl(fd, F_SETLK, &fl);
}

/* Step 1 of tier_flash_open: create the file (mode 0600), or open the
 * one that is there (*ret_created says which), and lock it (flash_lock).
 * 0 with *ret_fd, or negative (-EBUSY: locked by another process, -1
 * otherwise) with the sentence in err. */
static int flash_open_file(const char *path, int *ret_fd, bool *ret_created,
                           char *err, size_t errlen)
{
    bool created = false;
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        created = true;
    else if (errno == EEXIST)
        fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return ho_errf(err, errlen, -1, "cannot open flash file %s: %s",
                       path, strerror(errno));
    int rc = flash_lock(fd, path, err, errlen);
    if (rc < 0) {
        close(fd);
        if (created)
            unlink(path);
        return rc;
    }
    *ret_fd = fd;
    *ret_created = created;
    return 0;
}

/* Step 2: make sure the filesystem can hold `cap` bytes of the file (what
 * the file still lacks against f_bavail), then fallocate them: this grows
 * a smaller file, fills holes and keeps the data of a reused one (a larger
 * file is not shrunk; only its first cap bytes are used).  0 or -1 with
 * the sentence in err. */
static int flash_preallocate(int fd, const char *path, uint64_t cap,
                             const struct stat *st, const struct statvfs *svfs,
                             char *err, size_t errlen)
{
    uint64_t have = (uint64_t)st->st_blocks * 512;
    uint64_t need = cap > have ? cap - have : 0;
    uint64_t avail = (uint64_t)svfs->f_bavail * (uint64_t)svfs->f_frsize;
    if (need > avail)
        return ho_errf(err, errlen, -1,
                       "flash file %s needs %llu more bytes for %llu bytes "
                       "of capacity, the filesystem has %llu bytes "
                       "available", path, (unsigned long long)need,
                       (unsigned long long)cap, (unsigned long long)avail);
    int r = do_fallocate(fd, cap);
    if (r < 0)
        return ho_errf(err, errlen, -1,
                       "cannot preallocate %llu bytes for flash file %s: %s "
                       "(%llu bytes available)", (unsigned long long)cap,
                       path, strerror(-r), (unsigned long long)avail);
    return 0;
}

/* Step 3: pick the I/O mode and say it in f->detail: buffered when the
 * configuration says so or the filesystem is memory-backed, else O_DIRECT
 * when the filesystem takes it (f->fd becomes a second, O_DIRECT
 * descriptor; f->lock_fd stays open), buffered when it refuses (f->fd is
 * f->lock_fd).  0 or -1 with the sentence in err. */
static int flash_choose_io(tier_flash *f, const tier_flash_config *cfg,
                           const struct statfs *sfs, char *err,
                           size_t errlen)
{
    int dfd = -1;

    f->fd = f->lock_fd;
    if (!cfg->direct) {
        snprintf(f->detail, sizeof(f->detail),
                 "buffered: O_DIRECT disabled by configuration");
        return 0;
    }
    if (sfs->f_type == TMPFS_MAGIC || sfs->f_type == RAMFS_MAGIC) {
        /* Newer kernels accept O_DIRECT on tmpfs, but the data stays in
         * memory either way: say what it is. */
        snprintf(f->detail, sizeof(f->detail),
                 "buffered: memory-backed filesystem (tmpfs), O_DIRECT not "
                 "used");
        return 0;
    }
    int r = open_direct(cfg->path, f->align, &dfd);
    if (r == -EINVAL) {
        snprintf(f->detail, sizeof(f->detail),
                 "buffered: O_DIRECT refused (%s)", strerror(EINVAL));
        return 0;
    }
    if (r < 0)
        return ho_errf(err, errlen, -1, "cannot open flash file %s with "
                       "O_DIRECT: %s", cfg->path, strerror(-r));
    f->fd = dfd;
    f->direct = true;
    snprintf(f->detail, sizeof(f->detail), "O_DIRECT");
    return 0;
}

int tier_flash_open(const tier_flash_config *cfg, tier_flash **ret,
                    char *err, size_t errlen)
{
    tier_flash *f = NULL;
    bool created = false;
    struct stat st;
    struct statfs sfs;
    struct statvfs svfs;
    uint64_t cap;
    int rc = HO_E_BAD_CONFIG, fd = -1;

    if (!cfg || !ret || !cfg->path || !cfg->path[0]) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "no flash path configured");
    }
    if (strlen(cfg->path) >= PATH_MAX) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "flash path is longer than %d bytes", PATH_MAX);
    }
    if (cfg->capacity == 0 || cfg->capacity > TIER_FLASH_MAX_CAPACITY) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "flash capacity %llu is out of range (1..%llu)",
                (unsigned long long)cfg->capacity,
                (unsigned long long)TIER_FLASH_MAX_CAPACITY);
    }
    f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(cfg->path))) {
        ho_errf(err, errlen, 0, "out of memory");
        rc = -ENOMEM;
        goto fail;
    }
    f->fd = -1;
    f->lock_fd = -1;
    rc = flash_open_file(cfg->path, &fd, &created, err, errlen);
    if (rc < 0) {
        rc = rc == -EBUSY ? -EBUSY : HO_E_BAD_CONFIG;
        free(f->path);
        free(f);
        return rc;
    }
    rc = HO_E_BAD_CONFIG;
    if (fstat(fd, &st) != 0 || fstatfs(fd, &sfs) != 0 ||
        fstatvfs(fd, &svfs) != 0) {
        ho_errf(err, errlen, 0, "cannot stat flash file %s: %s", cfg->path,
                strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        ho_errf(err, errlen, 0, "flash path %s is not a regular file",
                cfg->path);
        goto fail;
    }
    f->align = dio_align(fd, &st);
    cap = cfg->capacity & ~(f->align - 1);
    if (cap == 0) {
        ho_errf(err, errlen, 0, "flash capacity %llu is below the alignment %llu",
                (unsigned long long)cfg->capacity,
                (unsigned long long)f->align);
        goto fail;
    }
    f->lock_fd = fd;
    if (flash_preallocate(fd, cfg->path, cap, &st, &svfs, err, errlen) < 0 ||
        flash_choose_io(f, cfg, &sfs, err, errlen) < 0)
        goto fail;
    flash_lock_name(f->lock_fd);
    f->ext = tier_extents_new(cap, f->align);
    if (!f->ext) {
        ho_errf(err, errlen, 0, "out of memory");
        rc = -ENOMEM;
        goto fail;
    }
    f->capacity = cap;
    f->created = created;
    f->remove_at_close = cfg->remove_at_close;
    f->discard_delay_ms = cfg->discard_delay_ms;
    *ret = f;
    return 0;
fail:
    if (f && f->fd >= 0 && f->fd != fd)
        close(f->fd);
    if (fd >= 0)
        close(fd);
    if (created)
        unlink(cfg->path);
    if (f)
        HO_FREE_ALL(f->path, f);
    return rc;
}

static int flash_discard(tier_flash *f, uint64_t off, uint64_t len);

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* [off, off + len) is allocated again: no pending discard may touch it
 * (it is about to hold new data).  0, or -ENOMEM (splitting an entry). */
static int freed_forget(tier_flash *f, uint64_t off, uint64_t len)
{
    uint64_t end = off + len;
    size_t i = 0;
    while (i < f->n_freed) {
        struct flash_freed *e = &f->freed[i];
        uint64_t eend = e->off + e->len;
        if (eend <= off || e->off >= end) {
            i++;
        } else if (e->off < off && eend > end) { /* split around it */
            if (ho_grow((void **)&f->freed, &f->cap_freed, f->n_freed + 1,
                        sizeof(*f->freed), 16, SIZE_MAX / 2) < 0)
                return -ENOMEM;
            e = &f->freed[i];
            memmove(e + 2, e + 1, (f->n_freed - i - 1) * sizeof(*e));
            e[1] = (struct flash_freed){end, eend - end, e->at_ms};
            e->len = off - e->off;
            f->n_freed++;
            i += 2;
        } else if (e->off < off) {
            e->len = off - e->off;
            i++;
        } else if (eend > end) {
            e->len = eend - end;
            e->off = end;
            i++;
        } else {
            memmove(e, e + 1, (f->n_freed - i - 1) * sizeof(*e));
            f->n_freed--;
        }
    }
    return 0;
}

uint64_t tier_flash_discard_due(tier_flash *f, uint64_t max_bytes, bool all)
{
    uint64_t now = mono_ms(), done = 0;
    size_t k = 0;
    while (k < f->n_freed && (!max_bytes || done < max_bytes)) {
        const struct flash_freed *e = &f->freed[k];
        if (!all && now - e->at_ms < f->discard_delay_ms)
            break; /* oldest first: the rest are younger */
        (void)flash_discard(f, e->off, e->len);
        done += e->len;
        k++;
    }
    if (k) {
        memmove(f->freed, f->freed + k,
                (f->n_freed - k) * sizeof(*f->freed));
        f->n_freed -= k;
    }
    return done;
}

uint64_t tier_flash_discard_pending(const tier_flash *f)
{
    uint64_t n = 0;
    for (size_t i = 0; i < f->n_freed; i++)
        n += f->freed[i].len;
    return n;
}

tier_flash *tier_flash_close(tier_flash *f)
{
    if (!f)
        return NULL;
    if (!f->remove_at_close) /* the data stays: the freed ranges go */
        (void)tier_flash_discard_due(f, 0, true);
    if (f->fd != f->lock_fd)
        close(f->fd);
    if (f->remove_at_close) {
        /* Still locked: no other daemon can have taken the file. */
        if (!f->created || unlink(f->path) != 0)
            (void)ftruncate(f->lock_fd, 0);
    }
    close(f->lock_fd); /* releases the lock: last */
    tier_extents_free(f->ext);
    HO_FREE_ALL(f->freed, f->path, f);
    return NULL;
}

int tier_flash_alloc(tier_flash *f, uint64_t len, uint64_t *ret_off,
                     uint64_t *ret_len)
{
    uint64_t off = 0, alen = 0;
    int rc = tier_extents_alloc(f->ext, len, &off, &alen);
    if (rc < 0)
        return rc;
    if (f->n_freed && freed_forget(f, off, alen) < 0) {
        tier_extents_release(f->ext, off, alen);
        return -ENOMEM;
    }
    /* A range punched out by an earlier release has no blocks: take them
     * back now, so that a full filesystem fails here and not mid-spill. */
    if (f->punched) {
        int r;
        do
            r = fallocate(f->lock_fd, 0, (off_t)off, (off_t)alen);
        while (r < 0 && errno == EINTR);
        if (r < 0 && errno != EOPNOTSUPP) {
            rc = -errno;
            tier_extents_release(f->ext, off, alen);
            return rc;
        }
    }
    *ret_off = off;
    if (ret_len) /* tier_extents_alloc's rule: may be NULL */
        *ret_len = alen;
    return 0;
}

static int write_full(int fd, const uint8_t *p, uint64_t len, uint64_t off);

/* Overwrite [off, off + len) with zeros (len aligned): the discard of a
 * filesystem that cannot punch holes. */
static int flash_zero(tier_flash *f, uint64_t off, uint64_t len)
{
    uint64_t size = len < TIER_FLASH_BOUNCE ? len : TIER_FLASH_BOUNCE;
    void *z = NULL;
    if (posix_memalign(&z, f->align, size) != 0)
        return -ENOMEM;
    memset(z, 0, size);
    int rc = 0;
    while (len > 0 && rc == 0) {
        uint64_t n = len < size ? len : size;
        rc = write_full(f->fd, z, n, off);
        off += n;
        len -= n;
    }
    free(z);
    if (rc == 0 && !f->direct && fdatasync(f->fd) != 0)
        rc = -errno;
    return rc;
}

/* Discard a freed extent's data: punch it out of the file (the size
 * stays; it reads as zeros and its blocks go back to the filesystem),
 * or overwrite it with zeros where the filesystem cannot punch. */
static int flash_discard(tier_flash *f, uint64_t off, uint64_t len)
{
    int r;
    do
        r = fallocate(f->lock_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      (off_t)off, (off_t)len);
    while (r < 0 && errno == EINTR);
    if (r == 0) {
        f->punched = true;
        return 0;
    }
    if (errno != EOPNOTSUPP && errno != ENOSYS)
        return -errno;
    return flash_zero(f, off, len);
}

int tier_flash_release(tier_flash *f, uint64_t off, uint64_t len)
{
    uint64_t alen = tier_extents_lookup(f->ext, off);
    int rc = tier_extents_release(f->ext, off, len);
    if (rc == 0 && alen) { /* the extent is free either way */
        if (f->discard_delay_ms &&
            ho_grow((void **)&f->freed, &f->cap_freed, f->n_freed + 1,
                    sizeof(*f->freed), 16, SIZE_MAX / 2) == 0)
            f->freed[f->n_freed++] =
                (struct flash_freed){off, alen, mono_ms()};
        else
            (void)flash_discard(f, off, alen);
    }
    return rc;
}

/* ---- I/O -------------------------------------------------------------------- */

/* Move all of [p, p+len) at file offset off with pwrite (write) or pread,
 * in chunks of at most TIER_FLASH_CHUNK; EINTR and short transfers are
 * retried, a transfer of 0 bytes (end of file on a read) is -EIO. */
static int io_full(int fd, uint8_t *p, uint64_t len, uint64_t off, bool write)
{
    while (len > 0) {
        size_t n = len > TIER_FLASH_CHUNK ? TIER_FLASH_CHUNK : (size_t)len;
        ssize_t k = write ? pwrite(fd, p, n, (off_t)off)
                          : pread(fd, p, n, (off_t)off);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (k == 0)
            return -EIO;
        p += k;
        off += (uint64_t)k;
        len -= (uint64_t)k;
    }
    return 0;
}

static int write_full(int fd, const uint8_t *p, uint64_t len, uint64_t off)
{
    return io_full(fd, (uint8_t *)p, len, off, true);
}

static int read_full(int fd, uint8_t *p, uint64_t len, uint64_t off)
{
    return io_full(fd, p, len, off, false);
}

/* len rounded up to the tier's alignment (check_range made sure it
 * does not overflow). */
static uint64_t padded(const tier_flash *f, uint64_t len)
{
    return (len + f->align - 1) & ~(f->align - 1);
}

/* off aligned, [off, off + len rounded up) inside the file. */
static int check_range(const tier_flash *f, uint64_t off, uint64_t len)
{
    uint64_t plen;

    if (len == 0 || off % f->align != 0)
        return HO_E_INVALID_SIZE;
    if (!tier_align_up(len, f->align, &plen))
        return HO_E_INVALID_SIZE;
    if (off > f->capacity || plen > f->capacity - off)
        return HO_E_INVALID_SIZE;
    return 0;
}

static void *bounce_new(const tier_flash *f, uint64_t plen, uint64_t *ret_size)
{
    uint64_t size = plen < TIER_FLASH_BOUNCE ? plen : TIER_FLASH_BOUNCE;
    void *b = NULL;

    if (posix_memalign(&b, f->align, size) != 0)
        return NULL;
    *ret_size = size;
    return b;
}

/* O_DIRECT transfer of len bytes from or to an unaligned buffer (or of an
 * unaligned tail) through an aligned bounce buffer: a write copies the
 * data in and zero-pads the end, a read copies only buf[0, len) out. */
static int io_bounced(const tier_flash *f, uint64_t off, uint8_t *p,
                      uint64_t len, bool write)
{
    uint64_t plen = padded(f, len), size;
    uint8_t *b = bounce_new(f, plen, &size);
    int rc = 0;

    if (!b)
        return -ENOMEM;
    while (plen > 0 && rc == 0) {
        uint64_t n = plen < size ? plen : size;
        uint64_t data = len < n ? len : n;
        if (write) {
            memcpy(b, p, data);
            if (data < n)
                memset(b + data, 0, n - data);
            rc = write_full(f->fd, b, n, off);
        } else {
            rc = read_full(f->fd, b, n, off);
            if (rc == 0)
                memcpy(p, b, data);
        }
        p += data;
        len -= data;
        off += n;
        plen -= n;
    }
    free(b);
    return rc;
}

/* tier_flash_write (write) and tier_flash_read. */
static int flash_io(tier_flash *f, uint64_t off, uint8_t *p, uint64_t len,
                    bool write)
{
    int rc = check_range(f, off, len);

    if (rc < 0)
        return rc;
    if (!f->direct) {
        rc = io_full(f->fd, p, len, off, write);
        if (write && rc == 0 && fdatasync(f->fd) != 0)
            rc = -errno;
        /* Written back now (or read), so the data can leave the cache. */
        (void)posix_fadvise(f->fd, (off_t)off, (off_t)len,
                            POSIX_FADV_DONTNEED);
        return rc;
    }
    if ((uintptr_t)p % f->align == 0) {
        uint64_t head = len & ~(f->align - 1);
        if (head)
            rc = io_full(f->fd, p, head, off, write);
        if (rc == 0 && head < len)
            rc = io_bounced(f, off + head, p + head, len - head, write);
        return rc;
    }
    return io_bounced(f, off, p, len, write);
}

int tier_flash_write(tier_flash *f, uint64_t off, const void *buf,
                     uint64_t len)
{
    /* The buffer is only read: flash_io writes through p only on reads. */
    return flash_io(f, off, (uint8_t *)buf, len, true);
}

int tier_flash_read(tier_flash *f, uint64_t off, void *buf, uint64_t len)
{
    return flash_io(f, off, buf, len, false);
}

/* ---- fd transfers: a two-stage pipeline --------------------------------------- *
 * The flash side (O_DIRECT or buffered I/O on the tier's file) runs on the
 * caller's thread, the copy side (pread/pwrite on the other fd) on a
 * helper thread; TIER_FLASH_PIPE_BUFS aligned bounce buffers of
 * TIER_FLASH_PIPE_CHUNK bytes pass between them.  Chunk k holds bytes
 * [k*C, min((k+1)*C, len)) of the transfer; on flash the last one is
 * padded to the alignment (zeros on write). */

struct pipe {
    tier_flash *f;
    uint64_t off;           /* flash offset */
    int fd;                 /* the other side */
    uint64_t fd_off;
    uint64_t len, chunk, nchunks;
    bool spill;             /* fd -> flash (else flash -> fd) */
    uint8_t *buf[TIER_FLASH_PIPE_BUFS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t produced, consumed; /* chunks */
    int err;                /* first error; stops both stages */
};

static uint64_t pipe_data(const struct pipe *p, uint64_t k)
{
    uint64_t start = k * p->chunk;
    return p->len - start < p->chunk ? p->len - start : p->chunk;
}

/* Producer: the fd side for a spill, the flash side for a fill. */
static int pipe_produce(struct pipe *p, uint64_t k, uint8_t *b)
{
    uint64_t data = pipe_data(p, k), start = k * p->chunk;
    uint64_t plen = padded(p->f, data);
    int rc;

    if (p->spill) {
        rc = read_full(p->fd, b, data, p->fd_off + start);
        if (rc == 0 && plen > data)
            memset(b + data, 0, plen - data);
        return rc;
    }
    return read_full(p->f->fd, b, p->f->direct ? plen : data,
                     p->off + start);
}

static int pipe_consume(struct pipe *p, uint64_t k, const uint8_t *b)
{
    uint64_t data = pipe_data(p, k), start = k * p->chunk;
    uint64_t plen = padded(p->f, data);

    if (p->spill)
        return write_full(p->f->fd, b, p->f->direct ? plen : data,
                          p->off + start);
    return write_full(p->fd, b, data, p->fd_off + start);
}

/* Run one stage of the pipeline over every chunk: the producer fills
 * buffer k % TIER_FLASH_PIPE_BUFS once the consumer has freed it, the
 * consumer drains it once the producer has filled it.  The first error of
 * either stage stops both. */
static void pipe_run_stage(struct pipe *p, bool producer)
{
    uint64_t k;

    for (k = 0; k < p->nchunks; k++) {
        int rc;
        pthread_mutex_lock(&p->mu);
        while ((producer ? p->produced - p->consumed == TIER_FLASH_PIPE_BUFS
                         : p->consumed == p->produced) &&
               !p->err)
            pthread_cond_wait(&p->cv, &p->mu);
        rc = p->err;
        pthread_mutex_unlock(&p->mu);
        if (rc)
            return;
        uint8_t *b = p->buf[k % TIER_FLASH_PIPE_BUFS];
        rc = producer ? pipe_produce(p, k, b) : pipe_consume(p, k, b);
        pthread_mutex_lock(&p->mu);
        if (rc && !p->err)
            p->err = rc;
        else if (!rc)
            (*(producer ? &p->produced : &p->consumed))++;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (rc)
            return;
    }
}

/* The helper thread runs the copy side. */
static void *pipe_helper(void *arg)
{
    struct pipe *p = arg;

    pipe_run_stage(p, p->spill); /* a spill produces from the fd */
    return NULL;
}

static int pipe_transfer(tier_flash *f, uint64_t off, int fd, uint64_t fd_off,
                         uint64_t len, bool spill)
{
    struct pipe p;
    pthread_t helper;
    uint64_t plen, bufsize, nbufs, i;
    int rc = check_range(f, off, len);

    if (rc < 0)
        return rc;
    if (fd < 0 || fd_off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - fd_off)
        return -EINVAL;
    p = (struct pipe){.f = f, .off = off, .fd = fd, .fd_off = fd_off,
                      .len = len, .spill = spill,
                      /* a multiple of any alignment we accept */
                      .chunk = TIER_FLASH_PIPE_CHUNK};
    p.nchunks = (len + p.chunk - 1) / p.chunk;
    plen = padded(f, len);
    bufsize = plen < p.chunk ? plen : p.chunk;
    nbufs = p.nchunks < TIER_FLASH_PIPE_BUFS ? p.nchunks : TIER_FLASH_PIPE_BUFS;
    for (i = 0; i < nbufs; i++) {
        void *b = NULL;
        if (posix_memalign(&b, f->align, bufsize) != 0) {
            rc = -ENOMEM;
            goto out;
        }
        p.buf[i] = b;
    }

    if (p.nchunks == 1) {
        /* one chunk: nothing to overlap */
        rc = pipe_produce(&p, 0, p.buf[0]);
        if (rc == 0)
            rc = pipe_consume(&p, 0, p.buf[0]);
    } else {
        pthread_mutex_init(&p.mu, NULL);
        pthread_cond_init(&p.cv, NULL);
        rc = -pthread_create(&helper, NULL, pipe_helper, &p);
        if (rc == 0) {
            pipe_run_stage(&p, !spill);
            pthread_join(helper, NULL);
            rc = p.err;
        }
        pthread_cond_destroy(&p.cv);
        pthread_mutex_destroy(&p.mu);
    }
    if (!f->direct) {
        if (spill && rc == 0 && fdatasync(f->fd) != 0)
            rc = -errno;
        (void)posix_fadvise(f->fd, (off_t)off, (off_t)len,
                            POSIX_FADV_DONTNEED);
    }
out:
    for (i = 0; i < TIER_FLASH_PIPE_BUFS; i++)
        free(p.buf[i]);
    return rc;
}

int tier_flash_write_fd(tier_flash *f, uint64_t off, int src_fd,
                        uint64_t src_off, uint64_t len)
{
    return pipe_transfer(f, off, src_fd, src_off, len, true);
}

int tier_flash_read_fd(tier_flash *f, uint64_t off, int dst_fd,
                       uint64_t dst_off, uint64_t len)
{
    return pipe_transfer(f, off, dst_fd, dst_off, len, false);
}

void tier_flash_stats_get(const tier_flash *f, tier_flash_stats *ret)
{
    tier_extents_stats es;

    tier_extents_stats_get(f->ext, &es);
    memset(ret, 0, sizeof(*ret));
    ret->capacity = es.capacity;
    ret->used = es.used;
    ret->free = es.free;
    ret->largest_free = es.largest_free;
    ret->extents = es.allocations;
    ret->fragmentation = es.fragmentation;
    ret->direct_io = f->direct;
    ret->align = f->align;
    snprintf(ret->path, sizeof(ret->path), "%s", f->path);
    snprintf(ret->detail, sizeof(ret->detail), "%s", f->detail);
}
