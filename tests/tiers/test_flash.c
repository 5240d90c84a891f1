/*
 * tests/tiers/test_flash.c - the flash tier: byte-exact I/O with O_DIRECT
 * on a real disk (under $HO_BUILD_DIR), buffered on /dev/shm and where
 * O_DIRECT is refused, file reuse, space errors, allocator errors and
 * concurrent I/O from several threads.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tiers/flash.h"
#include "hyperoffload/errors.h"

#define MiB (1ULL << 20)

/* ---- fault injection: a filesystem that refuses O_DIRECT ------------------- *
 * The tier (linked statically into this test) calls open(); this definition
 * takes precedence over libc's and fails O_DIRECT opens with EINVAL while
 * refuse_direct is set, as overlay/FUSE filesystems (and tmpfs before 6.6)
 * do.  Everything else goes straight to the system call. */
static volatile int refuse_direct;

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;

    if (flags & (O_CREAT | __O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if ((flags & O_DIRECT) && refuse_direct) {
        errno = EINVAL;
        return -1;
    }
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/* ---- helpers ----------------------------------------------------------------- */

static int under_valgrind(void)
{
    const char *v = getenv("HO_UNDER_VALGRIND");
    return v && *v && strcmp(v, "0") != 0;
}

static char test_dir[512];

/* A directory on the build tree's (real disk) filesystem. */
static void setup_dir(void)
{
    const char *b = getenv("HO_BUILD_DIR");

    snprintf(test_dir, sizeof(test_dir), "%s/tiers-flash-test-%d",
             b && *b ? b : ".", (int)getpid());
    ck_assert_int_eq(mkdir(test_dir, 0700) == 0 || errno == EEXIST, 1);
}

static void path_in(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static tier_flash *open_flash(const char *path, uint64_t cap, bool direct)
{
    tier_flash_config cfg = {.path = path, .capacity = cap, .direct = direct};
    tier_flash *f = NULL;
    char err[512] = "";
    int rc = tier_flash_open(&cfg, &f, err, sizeof(err));

    ck_assert_msg(rc == 0, "tier_flash_open(%s): %d %s", path, rc, err);
    return f;
}

static void pattern(uint8_t *p, uint64_t len, uint32_t seed)
{
    uint64_t i;
    uint32_t x = seed * 2654435761u + 1;

    for (i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

static void *xalloc_aligned(uint64_t len)
{
    void *p = NULL;

    ck_assert_int_eq(posix_memalign(&p, 4096, len), 0);
    return p;
}

/* Write `len` bytes from a buffer at `wmis` bytes past page alignment into
 * a new extent, read back into one at `rmis`, compare, and check that the
 * read did not touch the guard bytes around buf[0, len).  Returns the
 * extent's offset (the extent stays allocated). */
static uint64_t roundtrip(tier_flash *f, uint64_t len, unsigned wmis,
                          unsigned rmis, uint32_t seed)
{
    uint8_t *w = xalloc_aligned(len + 8192), *r = xalloc_aligned(len + 8192);
    uint64_t off, alen, i;
    int rc;

    ck_assert_int_eq(tier_flash_alloc(f, len, &off, &alen), 0);
    pattern(w + wmis, len, seed);
    memset(r, 0xcc, len + 8192);
    rc = tier_flash_write(f, off, w + wmis, len);
    ck_assert_msg(rc == 0, "write len %llu mis %u: %d",
                  (unsigned long long)len, wmis, rc);
    rc = tier_flash_read(f, off, r + rmis, len);
    ck_assert_msg(rc == 0, "read len %llu mis %u: %d",
                  (unsigned long long)len, rmis, rc);
    ck_assert_msg(memcmp(w + wmis, r + rmis, len) == 0,
                  "data differs: len %llu wmis %u rmis %u",
                  (unsigned long long)len, wmis, rmis);
    for (i = 0; i < rmis; i++)
        ck_assert_uint_eq(r[i], 0xcc);
    for (i = rmis + len; i < len + 8192; i++)
        ck_assert_uint_eq(r[i], 0xcc);
    free(w);
    free(r);
    return off;
}

static const uint64_t lens_full[] = {
    1, 100, 511, 512, 4095, 4096, 4097, 8191, 65536 + 3, 1 * MiB,
    3 * MiB + 17, 8 * MiB, 8 * MiB + 4096, 9 * MiB + 5, 17 * MiB - 1,
};
static const uint64_t lens_small[] = {1, 4095, 4096, 4097, 65536 + 3,
                                      9 * MiB + 5};
/* (write buffer, read buffer) bytes past page alignment */
static const unsigned mis[][2] = {{0, 0}, {1, 0}, {0, 3}, {512, 2048},
                                  {4095, 1}};
#define N_MIS (sizeof(mis) / sizeof(mis[0]))

/* Many lengths x alignments, each extent written then read back; then
 * every extent is read again and compared, so a write (or its zero
 * padding) that spilled into a neighbour is caught. */
static void exercise(tier_flash *f)
{
    const uint64_t *lens = under_valgrind() ? lens_small : lens_full;
    size_t nl = under_valgrind() ? sizeof(lens_small) / sizeof(lens_small[0])
                                 : sizeof(lens_full) / sizeof(lens_full[0]);
    struct {
        uint64_t off, len;
        uint32_t seed;
    } done[sizeof(lens_full) / sizeof(lens_full[0]) * N_MIS];
    size_t i, k, n = 0;
    tier_flash_stats st;

    for (i = 0; i < nl; i++) {
        for (k = 0; k < N_MIS; k++) {
            done[n].len = lens[i];
            done[n].seed = (uint32_t)(i * 10 + k + 1);
            done[n].off = roundtrip(f, lens[i], mis[k][0], mis[k][1],
                                    done[n].seed);
            n++;
        }
    }
    for (i = 0; i < n; i++) {
        uint8_t *w = xalloc_aligned(done[i].len);
        uint8_t *r = xalloc_aligned(done[i].len + 1);
        pattern(w, done[i].len, done[i].seed);
        ck_assert_int_eq(tier_flash_read(f, done[i].off, r + (i & 1),
                                         done[i].len), 0);
        ck_assert_msg(memcmp(w, r + (i & 1), done[i].len) == 0,
                      "extent %zu (len %llu) clobbered", i,
                      (unsigned long long)done[i].len);
        free(w);
        free(r);
    }
    tier_flash_stats_get(f, &st);
    ck_assert_uint_eq(st.extents, n);
}

static uint64_t exercise_bytes(void)
{
    /* enough capacity for everything exercise() allocates (~231 MiB) */
    return 256 * MiB;
}

/* ---- tests ------------------------------------------------------------------- */

START_TEST(test_direct_on_disk)
{
    char path[600];
    tier_flash *f;
    tier_flash_stats st;

    setup_dir();
    path_in(path, sizeof(path), test_dir, "direct.img");
    f = open_flash(path, exercise_bytes(), true);
    tier_flash_stats_get(f, &st);
    ck_assert_msg(st.direct_io, "detail: %s", st.detail);
    ck_assert_str_eq(st.detail, "O_DIRECT");
    ck_assert_uint_ge(st.align, 4096);
    ck_assert_uint_eq(st.align & (st.align - 1), 0);
    ck_assert_str_eq(st.path, path);
    ck_assert_uint_eq(st.capacity, exercise_bytes());
    {
        struct stat s;
        ck_assert_int_eq(stat(path, &s), 0);
        ck_assert_uint_eq((uint64_t)s.st_size, exercise_bytes());
        /* preallocated, not sparse */
        ck_assert_uint_ge((uint64_t)s.st_blocks * 512, exercise_bytes());
    }
    exercise(f);
    tier_flash_close(f);
    ck_assert_int_eq(unlink(path), 0);
    rmdir(test_dir);
}
END_TEST

START_TEST(test_buffered_on_shm)
{
    char path[128];
    tier_flash *f;
    tier_flash_stats st;

    snprintf(path, sizeof(path), "/dev/shm/ho-tiers-test-flash-%d.img",
             (int)getpid());
    unlink(path);
    f = open_flash(path, exercise_bytes(), true);
    tier_flash_stats_get(f, &st);
    ck_assert(!st.direct_io);
    ck_assert_msg(strncmp(st.detail, "buffered: ", 10) == 0, "detail: %s",
                  st.detail);
    ck_assert_uint_eq(st.align, 4096);
    exercise(f);
    tier_flash_close(f);
    ck_assert_int_eq(unlink(path), 0);
}
END_TEST

START_TEST(test_direct_refused_falls_back)
{
    char path[600];
    tier_flash *f;
    tier_flash_stats st;

    setup_dir();
    path_in(path, sizeof(path), test_dir, "refused.img");
    refuse_direct = 1;
    f = open_flash(path, exercise_bytes(), true);
    refuse_direct = 0;
    tier_flash_stats_get(f, &st);
    ck_assert(!st.direct_io);
    ck_assert_str_eq(st.detail, "buffered: O_DIRECT refused (Invalid argument)");
    exercise(f);
    tier_flash_close(f);

    /* direct = false: buffered by configuration */
    f = open_flash(path, exercise_bytes(), false);
    tier_flash_stats_get(f, &st);
    ck_assert(!st.direct_io);
    ck_assert_ptr_nonnull(strstr(st.detail, "disabled by configuration"));
    tier_flash_close(f);
    ck_assert_int_eq(unlink(path), 0);
    rmdir(test_dir);
}
END_TEST

START_TEST(test_reuse_keeps_data)
{
    char path[600];
    tier_flash *f;
    tier_flash_stats st;
    uint64_t off, len, off2;
    uint8_t *w = xalloc_aligned(MiB), *r = xalloc_aligned(MiB);
    struct stat s;

    setup_dir();
    path_in(path, sizeof(path), test_dir, "reuse.img");
    f = open_flash(path, 16 * MiB, true);
    ck_assert_int_eq(tier_flash_alloc(f, 5 * MiB, &off, &len), 0);
    ck_assert_int_eq(tier_flash_alloc(f, MiB, &off2, &len), 0);
    ck_assert_uint_eq(off2, 5 * MiB);
    pattern(w, MiB, 77);
    ck_assert_int_eq(tier_flash_write(f, off2, w, MiB), 0);
    tier_flash_close(f);

    /* same size: reused as is */
    f = open_flash(path, 16 * MiB, true);
    memset(r, 0, MiB);
    ck_assert_int_eq(tier_flash_read(f, off2, r, MiB), 0);
    ck_assert(memcmp(w, r, MiB) == 0);
    tier_flash_stats_get(f, &st);
    ck_assert_uint_eq(st.used, 0); /* extents are not persistent */
    tier_flash_close(f);

    /* larger: grown, data kept */
    f = open_flash(path, 32 * MiB, true);
    ck_assert_int_eq(stat(path, &s), 0);
    ck_assert_uint_eq((uint64_t)s.st_size, 32 * MiB);
    ck_assert_uint_ge((uint64_t)s.st_blocks * 512, 32 * MiB);
    memset(r, 0, MiB);
    ck_assert_int_eq(tier_flash_read(f, off2, r, MiB), 0);
    ck_assert(memcmp(w, r, MiB) == 0);
    tier_flash_close(f);

    /* smaller: not shrunk, only the capacity is used */
    f = open_flash(path, 8 * MiB, true);
    ck_assert_int_eq(stat(path, &s), 0);
    ck_assert_uint_eq((uint64_t)s.st_size, 32 * MiB);
    tier_flash_stats_get(f, &st);
    ck_assert_uint_eq(st.capacity, 8 * MiB);
    ck_assert_int_eq(tier_flash_read(f, off2, r, MiB), 0);
    ck_assert(memcmp(w, r, MiB) == 0);
    ck_assert_int_eq(tier_flash_read(f, 8 * MiB, r, 4096), HO_E_INVALID_SIZE);
    tier_flash_close(f);

    /* capacity not a multiple of the alignment: rounded down */
    f = open_flash(path, 8 * MiB + 100, true);
    tier_flash_stats_get(f, &st);
    ck_assert_uint_eq(st.capacity, 8 * MiB);
    tier_flash_close(f);

    ck_assert_int_eq(unlink(path), 0);
    rmdir(test_dir);
    free(w);
    free(r);
}
END_TEST

START_TEST(test_bad_config)
{
    char path[600], err[512], want[64];
    tier_flash_config cfg = {.direct = true};
    tier_flash *f = (tier_flash *)0x1;
    struct statvfs sv;
    uint64_t avail;
    int fd;

    setup_dir();
    path_in(path, sizeof(path), test_dir, "huge.img");
    ck_assert_int_eq(statvfs(test_dir, &sv), 0);
    avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    cfg.path = path;
    cfg.capacity = avail + (1ULL << 40);
    err[0] = '\0';
    ck_assert_int_eq(tier_flash_open(&cfg, &f, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_ptr_eq(f, (tier_flash *)0x1);
    snprintf(want, sizeof(want), "%llu", (unsigned long long)cfg.capacity);
    ck_assert_msg(strstr(err, want) && strstr(err, "available"), "message: %s",
                  err);
    ck_assert_int_eq(access(path, F_OK), -1); /* not left behind */

    /* an existing file is kept on failure */
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(tier_flash_open(&cfg, &f, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_int_eq(access(path, F_OK), 0);
    ck_assert_int_eq(unlink(path), 0);

    cfg.capacity = 0;
    ck_assert_int_eq(tier_flash_open(&cfg, &f, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    cfg.capacity = 100; /* below the alignment */
    ck_assert_int_eq(tier_flash_open(&cfg, &f, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_int_eq(access(path, F_OK), -1);
    cfg.capacity = MiB;
    cfg.path = "/nonexistent-dir-for-ho-tests/flash.img";
    ck_assert_int_eq(tier_flash_open(&cfg, &f, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_ptr_nonnull(strstr(err, "nonexistent-dir-for-ho-tests"));
    cfg.path = test_dir; /* a directory */
    ck_assert_int_eq(tier_flash_open(&cfg, &f, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    cfg.path = "";
    ck_assert_int_eq(tier_flash_open(&cfg, &f, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_int_eq(tier_flash_open(NULL, &f, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_ptr_eq(f, (tier_flash *)0x1);
    ck_assert_ptr_null(tier_flash_close(NULL));
    rmdir(test_dir);
}
END_TEST

START_TEST(test_alloc_and_range_errors)
{
    char path[600];
    tier_flash *f;
    tier_flash_stats st;
    uint64_t off = 7, len = 7, a, b;
    uint8_t *buf = xalloc_aligned(8192);

    memset(buf, 0x5a, 8192);
    setup_dir();
    path_in(path, sizeof(path), test_dir, "errors.img");
    f = open_flash(path, 4 * MiB, true);
    ck_assert_int_eq(tier_flash_alloc(f, 0, &off, &len), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_alloc(f, UINT64_MAX, &off, &len),
                     HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_alloc(f, 4 * MiB + 1, &off, &len),
                     HO_E_TOO_LARGE);
    ck_assert_uint_eq(off, 7);
    ck_assert_int_eq(tier_flash_alloc(f, 100, &a, &len), 0);
    ck_assert_uint_eq(len, 4096);
    ck_assert_int_eq(tier_flash_alloc(f, 4 * MiB - 4096, &b, &len), 0);
    ck_assert_int_eq(tier_flash_alloc(f, 1, &off, &len), HO_E_TIER_FULL);
    tier_flash_stats_get(f, &st);
    ck_assert_uint_eq(st.free, 0);
    ck_assert_uint_eq(st.extents, 2);
    ck_assert_int_eq(tier_flash_release(f, a + 4096, 4096), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_flash_release(f, a, 8192), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_flash_release(f, a, 100), 0);
    ck_assert_int_eq(tier_flash_release(f, a, 100), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_flash_release(f, b, 4 * MiB - 4096), 0);
    tier_flash_stats_get(f, &st);
    ck_assert_uint_eq(st.used, 0);
    ck_assert_uint_eq(st.largest_free, 4 * MiB);

    /* I/O outside the file or unaligned */
    ck_assert_int_eq(tier_flash_write(f, 0, buf, 0), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_write(f, 100, buf, 4096), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_write(f, 4 * MiB, buf, 1), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_write(f, 4 * MiB - 4096, buf, 4097),
                     HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_read(f, 8 * MiB, buf, 1), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_read(f, 0, buf, UINT64_MAX), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_write(f, 4 * MiB - 4096, buf, 4096), 0);
    tier_flash_close(f);
    ck_assert_int_eq(unlink(path), 0);
    rmdir(test_dir);
    free(buf);
}
END_TEST

/* Freed extents are discarded (issue 10): the range reads as zeros and
 * its blocks go back to the filesystem, a new extent gets them back; the
 * file is locked against a second opener; remove_at_close removes a file
 * the tier created and truncates one it found. */
static void discard_on(const char *path, bool direct)
{
    const uint64_t len = 4 * MiB;
    tier_flash_config cfg = {.path = path, .capacity = 16 * MiB,
                             .direct = direct, .remove_at_close = true};
    tier_flash *f = NULL, *g = NULL;
    char err[512] = "";
    struct stat st;
    uint64_t off, alen, blocks;
    uint8_t *w = xalloc_aligned(len), *r = xalloc_aligned(len);

    ck_assert_msg(tier_flash_open(&cfg, &f, err, sizeof(err)) == 0, "%s", err);
    /* A second opener of the same file is refused. */
    ck_assert_int_eq(tier_flash_open(&cfg, &g, err, sizeof(err)), -EBUSY);
    ck_assert_msg(strstr(err, "is in use by another process"), "%s", err);
    ck_assert_ptr_null(g);

    ck_assert_int_eq(tier_flash_alloc(f, len, &off, &alen), 0);
    pattern(w, len, 7);
    ck_assert_int_eq(tier_flash_write(f, off, w, len), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    blocks = (uint64_t)st.st_blocks;
    ck_assert_int_eq(tier_flash_release(f, off, alen), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_size, 16 * MiB);
    ck_assert_msg((uint64_t)st.st_blocks + len / 512 <= blocks,
                  "st_blocks %llu -> %llu", (unsigned long long)blocks,
                  (unsigned long long)st.st_blocks);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    memset(r, 0xcc, len);
    ck_assert_int_eq(pread(fd, r, len, (off_t)off), (ssize_t)len);
    close(fd);
    for (uint64_t i = 0; i < len; i++)
        ck_assert_msg(r[i] == 0, "byte %llu of the freed extent is %u",
                      (unsigned long long)i, r[i]);
    /* A new extent has its blocks again, and works. */
    ck_assert_int_eq(tier_flash_alloc(f, len, &off, &alen), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_ge((uint64_t)st.st_blocks, blocks);
    ck_assert_int_eq(tier_flash_write(f, off, w, len), 0);
    ck_assert_int_eq(tier_flash_read(f, off, r, len), 0);
    ck_assert_int_eq(memcmp(w, r, len), 0);
    tier_flash_close(f);
    ck_assert_int_eq(access(path, F_OK), -1); /* created here: removed */

    /* A file the tier found is truncated instead. */
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_msg(tier_flash_open(&cfg, &f, err, sizeof(err)) == 0, "%s", err);
    tier_flash_close(f);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    ck_assert_int_eq(unlink(path), 0);
    free(w);
    free(r);
}

/* With a discard delay, a freed extent keeps its blocks (and is reused
 * without a punch) until tier_flash_discard_due finds its delay passed;
 * allocated again first, it is never punched; then it reads zeros. */
START_TEST(test_discard_delayed)
{
    char path[600];
    const uint64_t len = 4 * MiB;
    setup_dir();
    path_in(path, sizeof(path), test_dir, "delayed.img");
    tier_flash_config cfg = {.path = path, .capacity = 16 * MiB,
                             .direct = true, .remove_at_close = true,
                             .discard_delay_ms = 200};
    tier_flash *f = NULL;
    char err[512] = "";
    struct stat st;
    uint64_t off, alen, off2, alen2, blocks;
    uint8_t *w = xalloc_aligned(len), *r = xalloc_aligned(len);
    ck_assert_msg(tier_flash_open(&cfg, &f, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(tier_flash_alloc(f, len, &off, &alen), 0);
    pattern(w, len, 9);
    ck_assert_int_eq(tier_flash_write(f, off, w, len), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    blocks = (uint64_t)st.st_blocks;
    ck_assert_int_eq(tier_flash_release(f, off, alen), 0);
    ck_assert_uint_eq(tier_flash_discard_pending(f), alen);
    ck_assert_uint_eq(tier_flash_discard_due(f, 0, false), 0); /* too soon */
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_blocks, blocks); /* blocks kept */
    /* allocated again: no longer pending, never punched under new data */
    ck_assert_int_eq(tier_flash_alloc(f, len, &off2, &alen2), 0);
    ck_assert_uint_eq(off2, off);
    ck_assert_uint_eq(tier_flash_discard_pending(f), 0);
    pattern(w, len, 10);
    ck_assert_int_eq(tier_flash_write(f, off2, w, len), 0);
    usleep(250 * 1000);
    ck_assert_uint_eq(tier_flash_discard_due(f, 0, false), 0);
    ck_assert_int_eq(tier_flash_read(f, off2, r, len), 0);
    ck_assert_int_eq(memcmp(w, r, len), 0);
    /* freed and left alone past the delay: punched, reads zeros */
    ck_assert_int_eq(tier_flash_release(f, off2, alen2), 0);
    usleep(250 * 1000);
    ck_assert_uint_eq(tier_flash_discard_due(f, 0, false), alen2);
    ck_assert_uint_eq(tier_flash_discard_pending(f), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_msg((uint64_t)st.st_blocks + len / 512 <= blocks,
                  "st_blocks %llu -> %llu", (unsigned long long)blocks,
                  (unsigned long long)st.st_blocks);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, r, len, (off_t)off2), (ssize_t)len);
    close(fd);
    for (uint64_t i = 0; i < len; i++)
        ck_assert_msg(r[i] == 0, "byte %llu is %u", (unsigned long long)i,
                      r[i]);
    /* part of a pending range allocated: only the rest is punched later */
    ck_assert_int_eq(tier_flash_alloc(f, 8 * MiB, &off, &alen), 0);
    ck_assert_int_eq(tier_flash_release(f, off, alen), 0);
    ck_assert_int_eq(tier_flash_alloc(f, MiB, &off2, &alen2), 0);
    ck_assert_uint_eq(tier_flash_discard_pending(f), alen - alen2);
    ck_assert_uint_eq(tier_flash_discard_due(f, 0, true), alen - alen2);
    tier_flash_close(f);
    free(w);
    free(r);
    rmdir(test_dir);
}
END_TEST

START_TEST(test_release_discards)
{
    char path[600];

    setup_dir();
    path_in(path, sizeof(path), test_dir, "discard.img");
    discard_on(path, true);
    rmdir(test_dir);
    snprintf(path, sizeof(path), "/dev/shm/ho-discard-%d", (int)getpid());
    discard_on(path, false);
}
END_TEST

struct worker {
    tier_flash *f;
    uint64_t off[8], len[8];
    int n;
    uint32_t seed;
    int rc;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    int rounds = under_valgrind() ? 2 : 6, r, i;

    for (r = 0; r < rounds && w->rc == 0; r++) {
        for (i = 0; i < w->n && w->rc == 0; i++) {
            uint8_t *b = malloc(w->len[i] + 1), *c = malloc(w->len[i] + 1);
            uint32_t seed = w->seed * 131 + (uint32_t)(r * 8 + i);
            if (!b || !c) {
                w->rc = -ENOMEM;
            } else {
                /* unaligned on purpose half the time */
                uint8_t *src = b + (i & 1), *dst = c + (r & 1);
                pattern(src, w->len[i], seed);
                w->rc = tier_flash_write(w->f, w->off[i], src, w->len[i]);
                if (w->rc == 0)
                    w->rc = tier_flash_read(w->f, w->off[i], dst, w->len[i]);
                if (w->rc == 0 && memcmp(src, dst, w->len[i]) != 0)
                    w->rc = -1;
            }
            free(b);
            free(c);
        }
    }
    return NULL;
}

static void threads_on(const char *path)
{
    tier_flash *f = open_flash(path, 64 * MiB, true);
    struct worker w[4];
    pthread_t t[4];
    int i, k;

    for (i = 0; i < 4; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].f = f;
        w[i].seed = (uint32_t)i + 1;
        w[i].n = 8;
        for (k = 0; k < 8; k++) {
            w[i].len[k] = 4096 * (uint64_t)(1 + (i * 8 + k) % 5) * 97 + (uint64_t)k;
            ck_assert_int_eq(tier_flash_alloc(f, w[i].len[k], &w[i].off[k],
                                              NULL), 0);
        }
    }
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    for (i = 0; i < 4; i++)
        ck_assert_msg(w[i].rc == 0, "worker %d: %d", i, w[i].rc);
    tier_flash_close(f);
    ck_assert_int_eq(unlink(path), 0);
}

START_TEST(test_threads)
{
    char path[600];

    setup_dir();
    path_in(path, sizeof(path), test_dir, "threads.img");
    threads_on(path);
    snprintf(path, sizeof(path), "/dev/shm/ho-tiers-test-threads-%d.img",
             (int)getpid());
    unlink(path);
    threads_on(path);
    rmdir(test_dir);
}
END_TEST

/* ---- fd transfers -------------------------------------------------------------- */

static int memfd_with(uint64_t size, uint32_t seed)
{
    int fd = memfd_create("ho-test-src", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    uint8_t *b = malloc(size);

    ck_assert_int_ge(fd, 0);
    ck_assert_ptr_nonnull(b);
    pattern(b, size, seed);
    ck_assert_int_eq(pwrite(fd, b, size, 0), (ssize_t)size);
    free(b);
    return fd;
}

/* flash_write_fd from a memfd, check with flash_read (pointer) and with
 * flash_read_fd into another memfd at an odd offset (guards around). */
static void fd_roundtrip(tier_flash *f, uint64_t len, uint64_t src_off,
                         uint64_t dst_off)
{
    uint64_t off, alen, total = src_off + len;
    int src = memfd_with(total, (uint32_t)(len + src_off));
    int dst = memfd_create("ho-test-dst", MFD_CLOEXEC);
    uint8_t *want = malloc(len), *got = malloc(len + 2);
    uint8_t guard[2];

    ck_assert_int_ge(dst, 0);
    ck_assert_int_eq(pread(src, want, len, (off_t)src_off), (ssize_t)len);
    ck_assert_int_eq(tier_flash_alloc(f, len, &off, &alen), 0);
    ck_assert_int_eq(tier_flash_write_fd(f, off, src, src_off, len), 0);
    memset(got, 0, len);
    ck_assert_int_eq(tier_flash_read(f, off, got, len), 0);
    ck_assert_msg(memcmp(got, want, len) == 0, "write_fd len %llu differs",
                  (unsigned long long)len);

    /* destination: 0xcc everywhere, the range overwritten exactly */
    {
        uint64_t dsize = dst_off + len + 1, i;
        uint8_t *cc = malloc(dsize);
        memset(cc, 0xcc, dsize);
        ck_assert_int_eq(pwrite(dst, cc, dsize, 0), (ssize_t)dsize);
        free(cc);
        ck_assert_int_eq(tier_flash_read_fd(f, off, dst, dst_off, len), 0);
        ck_assert_int_eq(pread(dst, got, len, (off_t)dst_off), (ssize_t)len);
        ck_assert_msg(memcmp(got, want, len) == 0, "read_fd len %llu differs",
                      (unsigned long long)len);
        ck_assert_int_eq(pread(dst, guard, 1, (off_t)(dst_off + len)), 1);
        ck_assert_uint_eq(guard[0], 0xcc);
        if (dst_off) {
            ck_assert_int_eq(pread(dst, guard, 1, (off_t)(dst_off - 1)), 1);
            ck_assert_uint_eq(guard[0], 0xcc);
        }
        i = (uint64_t)lseek(dst, 0, SEEK_CUR);
        ck_assert_uint_eq(i, 0); /* file offset untouched */
    }
    ck_assert_int_eq(tier_flash_release(f, off, alen), 0);
    close(src);
    close(dst);
    free(want);
    free(got);
}

static void fd_exercise(tier_flash *f)
{
    static const uint64_t lens[] = {1, 4095, 4096, 4 * MiB, 4 * MiB + 1,
                                    13 * MiB + 5, 24 * MiB};
    static const uint64_t offs[][2] = {{0, 0}, {4096, 1}, {12345, 8191}};
    size_t i, k, nl = sizeof(lens) / sizeof(lens[0]);

    if (under_valgrind())
        nl = 6;
    for (i = 0; i < nl; i++)
        for (k = 0; k < sizeof(offs) / sizeof(offs[0]); k++)
            fd_roundtrip(f, lens[i], offs[k][0], offs[k][1]);
}

START_TEST(test_fd_transfers)
{
    char path[600];
    tier_flash *f;
    tier_flash_stats st;

    setup_dir();
    path_in(path, sizeof(path), test_dir, "fd.img");
    f = open_flash(path, 64 * MiB, true);
    tier_flash_stats_get(f, &st);
    ck_assert(st.direct_io);
    fd_exercise(f);
    tier_flash_close(f);
    ck_assert_int_eq(unlink(path), 0);

    snprintf(path, sizeof(path), "/dev/shm/ho-tiers-test-fd-%d.img",
             (int)getpid());
    unlink(path);
    f = open_flash(path, 64 * MiB, true);
    tier_flash_stats_get(f, &st);
    ck_assert(!st.direct_io);
    fd_exercise(f);
    tier_flash_close(f);
    ck_assert_int_eq(unlink(path), 0);
    rmdir(test_dir);
}
END_TEST

START_TEST(test_fd_transfer_errors)
{
    char path[600];
    tier_flash *f;
    uint64_t off, alen;
    int src, dst, ro;

    setup_dir();
    path_in(path, sizeof(path), test_dir, "fderr.img");
    f = open_flash(path, 64 * MiB, true);
    ck_assert_int_eq(tier_flash_alloc(f, 16 * MiB, &off, &alen), 0);
    src = memfd_with(6 * MiB, 5);

    ck_assert_int_eq(tier_flash_write_fd(f, off, -1, 0, MiB), -EINVAL);
    ck_assert_int_eq(tier_flash_read_fd(f, off, -1, 0, MiB), -EINVAL);
    ck_assert_int_eq(tier_flash_write_fd(f, off + 1, src, 0, MiB),
                     HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_write_fd(f, off, src, 0, 0), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_write_fd(f, 64 * MiB, src, 0, 1),
                     HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_flash_write_fd(f, off, src, UINT64_MAX - 10, MiB),
                     -EINVAL);
    /* the source ends inside the range: chunk 1 hits end of file, the
     * flash side must stop and report it (one chunk, then several) */
    ck_assert_int_eq(tier_flash_write_fd(f, off, src, 5 * MiB, 2 * MiB), -EIO);
    ck_assert_int_eq(tier_flash_write_fd(f, off, src, 0, 16 * MiB), -EIO);
    /* destination refuses writes: a read-only fd, then a memfd that may
     * not grow past 6 MiB (fails in the helper thread, mid-pipeline) */
    ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(ro, 0);
    ck_assert_int_eq(tier_flash_read_fd(f, off, ro, 0, MiB), -EBADF);
    close(ro);
    dst = memfd_with(6 * MiB, 6);
    ck_assert_int_eq(fcntl(dst, F_ADD_SEALS, F_SEAL_GROW), 0);
    ck_assert_int_eq(tier_flash_read_fd(f, off, dst, 0, 16 * MiB), -EPERM);
    ck_assert_int_eq(tier_flash_read_fd(f, off, dst, 0, 6 * MiB), 0);
    close(dst);
    close(src);
    tier_flash_close(f);
    ck_assert_int_eq(unlink(path), 0);
    rmdir(test_dir);
}
END_TEST

static Suite *flash_suite(void)
{
    Suite *s = suite_create("flash");
    TCase *tc = tcase_create("flash");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_direct_on_disk);
    tcase_add_test(tc, test_buffered_on_shm);
    tcase_add_test(tc, test_direct_refused_falls_back);
    tcase_add_test(tc, test_reuse_keeps_data);
    tcase_add_test(tc, test_bad_config);
    tcase_add_test(tc, test_alloc_and_range_errors);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_release_discards);
    tcase_add_test(tc, test_discard_delayed);
    tcase_add_test(tc, test_fd_transfers);
    tcase_add_test(tc, test_fd_transfer_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(flash_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
