/*
 * bench/tiers/bench_tiers.c - speed of the tiers, next to baselines
 * measured in the same run and interleaved with the measured path.
 *
 *   bench_tiers [--dir D] [--size N[K|M|G]] [--repeats N] [--chunk-scan]
 *
 * Figures (each the median of --repeats runs, min and max beside it):
 *   - extent allocator alone, and DDR arena alloc/free with mlock off and
 *     on (random sizes 4 KiB..256 KiB, 256 live extents);
 *   - memcpy of --size bytes;
 *   - plain O_DIRECT sequential write/read of --size bytes in --dir
 *     (posix_memalign buffer, pwrite/pread loop in 8 MiB chunks, file
 *     preallocated like the flash file) against spill and fill of an
 *     arena extent of the same size, with the ratio:
 *       spill = tier_flash_write from tier_arena_base + tier_arena_evict
 *               ("ptr"), or tier_flash_write_fd from tier_arena_fd +
 *               tier_arena_evict ("fd");
 *       fill  = tier_arena_restore + tier_flash_read into the arena
 *               ("ptr"), or tier_arena_restore_unlocked +
 *               tier_flash_read_fd into the memfd + tier_arena_lock ("fd");
 *     each on a pool with mlock off and on.  Before each spill on the
 *     unlocked pool the benchmark's own page-table entries of the extent
 *     are dropped (MADV_DONTNEED, untimed), as in the daemon, where
 *     clients write the data through their own mappings.  The flash file and the plain
 *     file are both O_DIRECT, so the page cache plays no part; the data
 *     that comes back is checked (untimed).
 * --chunk-scan adds plain O_DIRECT bandwidth per chunk size (1..64 MiB),
 * which is how the flash tier's chunk size was chosen.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "tiers/ddr.h"
#include "tiers/extent.h"
#include "hyperoffload/size.h"
#include "tiers/flash.h"
#include "hyperoffload/errors.h"

#define MiB (1ULL << 20)
#define MAX_REPEATS 101
#define PLAIN_CHUNK (8 * MiB)

struct figure {
    const char *name;
    const char *unit;
    double scale; /* printed value = raw / scale */
    double v[MAX_REPEATS];
    int n;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(const struct figure *f, double *ret_min,
                        double *ret_max)
{
    double s[MAX_REPEATS];

    memcpy(s, f->v, (size_t)f->n * sizeof(double));
    qsort(s, (size_t)f->n, sizeof(double), cmp_double);
    *ret_min = s[0];
    *ret_max = s[f->n - 1];
    return f->n % 2 ? s[f->n / 2] : (s[f->n / 2 - 1] + s[f->n / 2]) / 2;
}

static void add(struct figure *f, double v)
{
    if (f->n < MAX_REPEATS)
        f->v[f->n++] = v;
}

static void print_row(const struct figure *f, const char *note)
{
    double lo, hi, med = median_of(f, &lo, &hi);

    printf("%-50s %9.2f %9.2f %9.2f  %-7s %s\n", f->name, med / f->scale,
           lo / f->scale, hi / f->scale, f->unit, note ? note : "");
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_tiers: %s: %s\n", what, ho_strerror(rc));
    exit(1);
}

static uint64_t rng(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* ---- alloc/free rate ------------------------------------------------------ */

#define WINDOW 256

/* ops/s of alloc+free on an allocator (arena NULL) or an arena. */
static double alloc_rate(tier_extents *ea, tier_arena *a, uint64_t nops,
                         uint64_t seed)
{
    uint64_t off[WINDOW], len[WINDOW], rs = seed | 1, ops = 0;
    int live = 0, rc;
    double t0, t1;

    t0 = now_s();
    while (ops < nops) {
        if (live < WINDOW && (live == 0 || (rng(&rs) & 1))) {
            uint64_t want = 4096 * (1 + rng(&rs) % 64);
            rc = ea ? tier_extents_alloc(ea, want, &off[live], &len[live])
                    : tier_arena_alloc(a, want, &off[live], &len[live]);
            if (rc < 0)
                die("alloc", rc);
            live++;
        } else {
            int k = (int)(rng(&rs) % (uint64_t)live);
            rc = ea ? tier_extents_release(ea, off[k], len[k])
                    : tier_arena_release(a, off[k], len[k]);
            if (rc < 0)
                die("release", rc);
            off[k] = off[--live];
            len[k] = len[live];
        }
        ops++;
    }
    t1 = now_s();
    while (live > 0) {
        live--;
        rc = ea ? tier_extents_release(ea, off[live], len[live])
                : tier_arena_release(a, off[live], len[live]);
        if (rc < 0)
            die("release", rc);
    }
    return (double)ops / (t1 - t0);
}

/* ---- plain O_DIRECT -------------------------------------------------------- */

static double plain_io(int fd, uint8_t *buf, uint64_t size, uint64_t chunk,
                       bool write)
{
    uint64_t done = 0;
    double t0 = now_s();

    while (done < size) {
        size_t n = size - done < chunk ? (size_t)(size - done) : (size_t)chunk;
        ssize_t r = write ? pwrite(fd, buf + done, n, (off_t)done)
                          : pread(fd, buf + done, n, (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            fprintf(stderr, "bench_tiers: plain %s: %s\n",
                    write ? "pwrite" : "pread",
                    r < 0 ? strerror(errno) : "short transfer");
            exit(1);
        }
        done += (uint64_t)r;
    }
    return (double)size / (now_s() - t0);
}

/* ---- options ------------------------------------------------------------------ */

static int parse_size(const char *s, uint64_t *ret)
{
    return ho_size_parse(s, ret) < 0 ? -1 : 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_tiers [--dir D] [--size N[K|M|G]] [--repeats N] "
            "[--chunk-scan]\n"
            "  --dir D       directory for the flash and plain files "
            "(default ./bench-tiers.d)\n"
            "  --size N      bytes per I/O figure (default 256M)\n"
            "  --repeats N   runs per figure, median reported (default 5)\n"
            "  --chunk-scan  also: plain O_DIRECT bandwidth per chunk size\n");
    exit(2);
}

/* Files are removed on every exit, failed runs included. */
static char cleanup_flash[4096], cleanup_plain[4096], cleanup_dir[4096];

static void cleanup(void)
{
    if (cleanup_flash[0])
        unlink(cleanup_flash);
    if (cleanup_plain[0])
        unlink(cleanup_plain);
    if (cleanup_dir[0])
        rmdir(cleanup_dir);
}

int main(int argc, char **argv)
{
    const char *dir = "./bench-tiers.d";
    uint64_t size = 256 * MiB;
    int repeats = 5, i, r, rc;
    bool chunk_scan = false, made_dir = false;
    char flash_path[4096], plain_path[4096], err[512];
    struct sysinfo si;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            if (parse_size(argv[++i], &size) < 0)
                usage();
        } else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--chunk-scan")) {
            chunk_scan = true;
        } else {
            usage();
        }
    }
    if (repeats < 1 || repeats > MAX_REPEATS) {
        fprintf(stderr, "bench_tiers: --repeats must be 1..%d\n", MAX_REPEATS);
        return 2;
    }
    size = (size + 4095) & ~4095ULL;
    if (size < MiB || size > (64ULL << 30)) {
        fprintf(stderr, "bench_tiers: --size must be 1 MiB..64 GiB\n");
        return 2;
    }
    /* memcpy src+dst, plain buffer, four arena extents: 7 x size */
    if (sysinfo(&si) == 0 &&
        7 * size > (uint64_t)si.totalram * si.mem_unit / 10 * 8) {
        fprintf(stderr, "bench_tiers: --size %llu needs 7x that in RAM\n",
                (unsigned long long)size);
        return 2;
    }
    if (mkdir(dir, 0700) == 0) {
        made_dir = true;
    } else if (errno != EEXIST) {
        fprintf(stderr, "bench_tiers: mkdir %s: %s\n", dir, strerror(errno));
        return 1;
    }
    snprintf(flash_path, sizeof(flash_path), "%s/bench-flash.img", dir);
    snprintf(plain_path, sizeof(plain_path), "%s/bench-plain.img", dir);
    snprintf(cleanup_flash, sizeof(cleanup_flash), "%s", flash_path);
    snprintf(cleanup_plain, sizeof(cleanup_plain), "%s", plain_path);
    if (made_dir)
        snprintf(cleanup_dir, sizeof(cleanup_dir), "%s", dir);
    atexit(cleanup);

    /* ---- setup ---- */
    tier_flash *fl = NULL;
    tier_flash_config fc = {.path = flash_path, .capacity = 4 * size + MiB,
                            .direct = true};
    tier_flash_stats fst;
    rc = tier_flash_open(&fc, &fl, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "bench_tiers: flash: %s\n", err);
        return 1;
    }
    tier_flash_stats_get(fl, &fst);

    /* variant v: pool v / 2 (mlock off, on), path v % 2 (ptr, fd) */
    enum { NV = 4 };
    tier_ddr *pool[2] = {NULL, NULL};
    tier_arena *arena[2] = {NULL, NULL};
    uint64_t aoff[NV], alen[NV], foff[NV], flen[NV];
    for (i = 0; i < 2; i++) {
        tier_ddr_config dc = {.capacity = 2 * size + 64 * MiB, .align = 4096,
                              .numa_node = -1, .lock = i == 1};
        rc = tier_ddr_new(&dc, &pool[i], err, sizeof(err));
        if (rc < 0) {
            fprintf(stderr, "bench_tiers: ddr: %s\n", err);
            return 1;
        }
        arena[i] = tier_arena_new(pool[i], "bench", err, sizeof(err));
        if (!arena[i]) {
            fprintf(stderr, "bench_tiers: arena: %s\n", err);
            return 1;
        }
    }
    tier_ddr_stats dst;
    tier_ddr_stats_get(pool[1], &dst);

    uint8_t *src = NULL, *dst_buf = NULL, *plain = NULL;
    if (posix_memalign((void **)&src, 4096, size) ||
        posix_memalign((void **)&dst_buf, 4096, size) ||
        posix_memalign((void **)&plain, 4096, size)) {
        fprintf(stderr, "bench_tiers: out of memory\n");
        return 1;
    }
    for (uint64_t k = 0; k < size; k += 8)
        *(uint64_t *)(src + k) = k * 0x9E3779B97F4A7C15ULL;
    memset(dst_buf, 0, size);
    memcpy(plain, src, size);

    int pfd = open(plain_path, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
    if (pfd < 0) {
        fprintf(stderr, "bench_tiers: %s: O_DIRECT: %s (choose a --dir on a "
                "disk filesystem)\n", plain_path, strerror(errno));
        return 1;
    }
    if (fallocate(pfd, 0, 0, (off_t)size) != 0) {
        fprintf(stderr, "bench_tiers: fallocate %s: %s\n", plain_path,
                strerror(errno));
        return 1;
    }

    for (i = 0; i < NV; i++) {
        tier_arena *a = arena[i / 2];
        rc = tier_arena_alloc(a, size, &aoff[i], &alen[i]);
        if (rc < 0)
            die("arena alloc", rc);
        rc = tier_flash_alloc(fl, size, &foff[i], &flen[i]);
        if (rc < 0)
            die("flash alloc", rc);
        memcpy(tier_arena_base(a) + aoff[i], src, size);
        /* warm-up (untimed): every block of the flash file written once */
        rc = tier_flash_write(fl, foff[i], tier_arena_base(a) + aoff[i], size);
        if (rc < 0)
            die("flash write", rc);
    }
    plain_io(pfd, plain, size, PLAIN_CHUNK, true);

    printf("bench_tiers: size %llu MiB, %d repeats (median, min, max), "
           "dir %s\n", (unsigned long long)(size >> 20), repeats, dir);
    printf("  flash: %s, align %llu; DDR pool with mlock: %s\n", fst.detail,
           (unsigned long long)fst.align, dst.detail);
    printf("  plain baseline: O_DIRECT pwrite/pread, %llu MiB chunks, same "
           "directory, preallocated file\n\n",
           (unsigned long long)(PLAIN_CHUNK >> 20));

    /* ---- alloc/free rates ---- */
    struct figure f_ext = {.name = "extent allocator alone: alloc/free",
                           .unit = "Mops/s", .scale = 1e6};
    struct figure f_off = {.name = "DDR arena alloc/free, mlock off",
                           .unit = "kops/s", .scale = 1e3};
    struct figure f_on = {.name = "DDR arena alloc/free, mlock on",
                          .unit = "kops/s", .scale = 1e3};
    {
        tier_ddr *rp[2];
        tier_arena *ra[2];
        for (i = 0; i < 2; i++) {
            tier_ddr_config dc = {.capacity = 1ULL << 30, .align = 4096,
                                  .numa_node = -1, .lock = i == 1};
            if (tier_ddr_new(&dc, &rp[i], err, sizeof(err)) < 0 ||
                !(ra[i] = tier_arena_new(rp[i], "rate", err, sizeof(err)))) {
                fprintf(stderr, "bench_tiers: %s\n", err);
                return 1;
            }
        }
        for (r = 0; r < repeats; r++) {
            tier_extents *ea = tier_extents_new(1ULL << 30, 4096);
            add(&f_ext, alloc_rate(ea, NULL, 1000000, 11 + (uint64_t)r));
            tier_extents_free(ea);
            add(&f_off, alloc_rate(NULL, ra[0], 40000, 11 + (uint64_t)r));
            add(&f_on, alloc_rate(NULL, ra[1], 40000, 11 + (uint64_t)r));
        }
        for (i = 0; i < 2; i++) {
            tier_arena_free(ra[i]);
            tier_ddr_free(rp[i]);
        }
    }

    /* ---- bandwidths, interleaved ---- */
    static const char *const spill_names[NV] = {
        "spill ptr: flash_write + evict, mlock off",
        "spill fd: flash_write_fd + evict, mlock off",
        "spill ptr: flash_write + evict, mlock on",
        "spill fd: flash_write_fd + evict, mlock on"};
    static const char *const fill_names[NV] = {
        "fill ptr: restore + flash_read, mlock off",
        "fill fd: restore_unl. + read_fd + lock, mlock off",
        "fill ptr: restore + flash_read, mlock on",
        "fill fd: restore_unl. + read_fd + lock, mlock on"};
    struct figure f_memcpy = {.name = "memcpy", .unit = "GB/s", .scale = 1e9};
    struct figure f_pw = {.name = "plain O_DIRECT write", .unit = "GB/s",
                          .scale = 1e9};
    struct figure f_pr = {.name = "plain O_DIRECT read", .unit = "GB/s",
                          .scale = 1e9};
    struct figure f_sp[NV], f_fi[NV];
    memset(f_sp, 0, sizeof(f_sp));
    memset(f_fi, 0, sizeof(f_fi));
    for (i = 0; i < NV; i++) {
        f_sp[i].name = spill_names[i];
        f_fi[i].name = fill_names[i];
        f_sp[i].unit = f_fi[i].unit = "GB/s";
        f_sp[i].scale = f_fi[i].scale = 1e9;
    }

    for (r = 0; r < repeats; r++) {
        double t0 = now_s();
        memcpy(dst_buf, src, size);
        add(&f_memcpy, (double)size / (now_s() - t0));

        add(&f_pw, plain_io(pfd, plain, size, PLAIN_CHUNK, true));
        for (i = 0; i < NV; i++) {
            tier_arena *a = arena[i / 2];
            /* As in the daemon, where the client wrote the data through
             * its own mapping: drop this process's page-table entries
             * (the pages stay in the memfd).  Untimed.  Not on the mlock
             * pool: there the daemon's mapping holds the pages locked. */
            if (i / 2 == 0 &&
                madvise(tier_arena_base(a) + aoff[i], size, MADV_DONTNEED)) {
                perror("bench_tiers: madvise");
                return 1;
            }
            t0 = now_s();
            if (i % 2 == 0)
                rc = tier_flash_write(fl, foff[i], tier_arena_base(a) + aoff[i],
                                      size);
            else
                rc = tier_flash_write_fd(fl, foff[i], tier_arena_fd(a),
                                         aoff[i], size);
            if (rc == 0)
                rc = tier_arena_evict(a, aoff[i], alen[i]);
            if (rc < 0)
                die("spill", rc);
            add(&f_sp[i], (double)size / (now_s() - t0));
        }
        add(&f_pr, plain_io(pfd, plain, size, PLAIN_CHUNK, false));
        for (i = 0; i < NV; i++) {
            tier_arena *a = arena[i / 2];
            uint8_t *p = tier_arena_base(a) + aoff[i];
            t0 = now_s();
            if (i % 2 == 0) {
                rc = tier_arena_restore(a, aoff[i], alen[i]);
                if (rc == 0)
                    rc = tier_flash_read(fl, foff[i], p, size);
            } else {
                /* pages allocated by the fill's pwrite, locked after */
                rc = tier_arena_restore_unlocked(a, aoff[i], alen[i]);
                if (rc == 0)
                    rc = tier_flash_read_fd(fl, foff[i], tier_arena_fd(a),
                                            aoff[i], size);
                if (rc == 0)
                    rc = tier_arena_lock(a, aoff[i], alen[i]);
            }
            if (rc < 0)
                die("fill", rc);
            add(&f_fi[i], (double)size / (now_s() - t0));
            if (memcmp(p, src, size) != 0) { /* untimed check */
                fprintf(stderr, "bench_tiers: fill returned wrong data\n");
                return 1;
            }
        }
        if (memcmp(plain, src, size) != 0 || memcmp(dst_buf, src, size) != 0) {
            fprintf(stderr, "bench_tiers: baseline returned wrong data\n");
            return 1;
        }
    }

    printf("%-50s %9s %9s %9s  %-7s %s\n", "figure", "median", "min", "max",
           "unit", "note");
    print_row(&f_ext, "random 4-256 KiB, 256 live");
    print_row(&f_off, "same pattern on a memfd arena");
    print_row(&f_on, "mlock populates each extent");
    print_row(&f_memcpy, NULL);
    {
        double lo, hi, pw = median_of(&f_pw, &lo, &hi);
        double pr = median_of(&f_pr, &lo, &hi);
        char note[64];
        print_row(&f_pw, "baseline");
        for (i = 0; i < NV; i++) {
            snprintf(note, sizeof(note), "%.0f%% of plain write",
                     100.0 * median_of(&f_sp[i], &lo, &hi) / pw);
            print_row(&f_sp[i], note);
        }
        print_row(&f_pr, "baseline");
        for (i = 0; i < NV; i++) {
            snprintf(note, sizeof(note), "%.0f%% of plain read",
                     100.0 * median_of(&f_fi[i], &lo, &hi) / pr);
            print_row(&f_fi[i], note);
        }
    }

    /* ---- chunk scan ---- */
    if (chunk_scan) {
        static const uint64_t chunks[] = {1, 2, 4, 8, 16, 32, 64};
        enum { NC = sizeof(chunks) / sizeof(chunks[0]) };
        struct figure w[NC], rd[NC];
        char names[2][NC][48];
        memset(w, 0, sizeof(w));
        memset(rd, 0, sizeof(rd));
        for (int c = 0; c < NC; c++) {
            snprintf(names[0][c], sizeof(names[0][c]),
                     "plain O_DIRECT write, %llu MiB chunks",
                     (unsigned long long)chunks[c]);
            snprintf(names[1][c], sizeof(names[1][c]),
                     "plain O_DIRECT read, %llu MiB chunks",
                     (unsigned long long)chunks[c]);
            w[c].name = names[0][c];
            rd[c].name = names[1][c];
            w[c].unit = rd[c].unit = "GB/s";
            w[c].scale = rd[c].scale = 1e9;
        }
        for (r = 0; r < repeats; r++)
            for (int c = 0; c < NC; c++) {
                add(&w[c], plain_io(pfd, plain, size, chunks[c] * MiB, true));
                add(&rd[c], plain_io(pfd, plain, size, chunks[c] * MiB, false));
            }
        printf("\n");
        for (int c = 0; c < NC; c++)
            print_row(&w[c], NULL);
        for (int c = 0; c < NC; c++)
            print_row(&rd[c], NULL);
    }

    /* ---- cleanup (files: atexit) ---- */
    close(pfd);
    for (i = 0; i < 2; i++) {
        tier_arena_free(arena[i]);
        tier_ddr_free(pool[i]);
    }
    tier_flash_close(fl);
    free(src);
    free(dst_buf);
    free(plain);
    return 0;
}
