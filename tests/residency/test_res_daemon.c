/*
 * tests/residency/test_res_daemon.c - regions and the prefix store against
 * the real daemon (tests/harness.h): host copies are an extent of the
 * session's arena and come back at once when the server process is
 * SIGKILLed; its published prefix blocks stay readable, exact, by another
 * server of the job that maps them; a peer of another uid (setuid nobody)
 * or of another job never finds them; `hoctl regions` data reaches the
 * daemon through the region's header; a mapped prefix is read-only by
 * the kernel (r--s mapping of a read-only descriptor: mprotect to write
 * fails, a write faults); an entry kept after its session goes when its
 * TTL passes, on the daemon's timer.
 */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hyperoffload/residency.h"
#include "tests/check_main.h"
#include "tests/harness.h"

#define BB 65536u
#define NBLK 4u

static void pattern(uint8_t *p, uint32_t i)
{
    for (uint32_t k = 0; k < BB; k++)
        p[k] = (uint8_t)(k * 7 + i * 13 + 1);
}

static uint64_t ddr_used(const char *sock)
{
    ho_client *c = NULL;
    ck_assert_int_eq(ho_connect(sock, "probe", &c), 0);
    ho_tier_stats t[8];
    size_t n = 0;
    ck_assert_int_eq(ho_stats(c, t, 8, &n, NULL), 0);
    uint64_t used = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        if (t[i].tier == HO_TIER_DDR)
            used = t[i].used;
    ho_close(c);
    return used;
}

/* The mapping of the job's prefix store memory in this process (from
 * /proc/self/maps: the memfd's name has "-store-"); its permissions. */
static uint8_t *store_mapping(uint64_t *ret_len, char perms[5])
{
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    uint8_t *at = NULL;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char pm[5] = "";
        if (!strstr(line, "-store-") ||
            sscanf(line, "%lx-%lx %4s", &lo, &hi, pm) != 3)
            continue;
        at = (uint8_t *)lo;
        *ret_len = hi - lo;
        memcpy(perms, pm, 5);
        break;
    }
    fclose(f);
    return at;
}

/* The kernel, not the library, keeps a mapped prefix read-only: the
 * mapping is r--s, it cannot be made writable, and a write through it
 * faults. */
static void check_store_read_only(void)
{
    uint64_t len = 0;
    char perms[5] = "";
    uint8_t *m = store_mapping(&len, perms);
    ck_assert_msg(m != NULL, "no mapping of the prefix store memory");
    ck_assert_str_eq(perms, "r--s");
    uint8_t want[BB];
    pattern(want, 0);
    ck_assert(memcmp(m, want, BB) == 0); /* it is the published data */
    errno = 0;
    ck_assert_int_eq(mprotect(m, len, PROT_READ | PROT_WRITE), -1);
    ck_assert_int_eq(errno, EACCES);
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        /* the kernel's own answer, not a sanitizer's SEGV handler */
        signal(SIGSEGV, SIG_DFL);
        ((volatile uint8_t *)m)[0] ^= 1;
        _exit(0); /* the write went through */
    }
    int st = 0;
    ck_assert_int_eq(waitpid(p, &st, 0), p);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
                  "a write to the store mapping did not fault");
    ck_assert(memcmp(m, want, BB) == 0);
}

/* The publisher: a region of job j, NBLK blocks written and published
 * under `key`, then it tells the parent and waits to be killed. */
static void publisher(const char *sock, int fd)
{
    ho_client *c = NULL;
    ho_device *dev = NULL;
    ho_region *r = NULL;
    if (ho_connect(sock, "publisher", &c) || ho_register(c, "j", -1, 0) ||
        ho_device_open("host", 0, 1 << 20, &dev))
        _exit(10);
    ho_region_config cfg = {.block_bytes = BB, .max_blocks = 64,
                            .device_budget = 8 * BB, .name = "pub"};
    if (ho_region_new(c, dev, &cfg, &r))
        _exit(11);
    uint32_t b[NBLK];
    uint8_t buf[BB];
    for (uint32_t i = 0; i < NBLK; i++) {
        void *p;
        if (ho_block_alloc(r, &b[i]) || ho_block_access(r, b[i], 1, &p))
            _exit(12);
        pattern(buf, i);
        ho_device_write(dev, p, buf, BB);
    }
    if (ho_region_step(r, NULL) || ho_region_publish(r, "k", b, NBLK, 60000))
        _exit(13);
    if (ho_region_publish(r, "k", b, NBLK, 0) != -EEXIST)
        _exit(14);
    char ok = 1;
    if (write(fd, &ok, 1) != 1)
        _exit(15);
    pause();
    _exit(0);
}

/* Another peer: uid (>= 0: setuid to it first), job; it must not find
 * the key.  Exit 0 when the map is refused with -ENOENT. */
static int outsider(const char *sock, int uid, const char *job)
{
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) ||
                         setuid((uid_t)uid)))
            _exit(20);
        ho_client *c = NULL;
        ho_device *dev = NULL;
        ho_region *r = NULL;
        int crc = ho_connect(sock, "outsider", &c);
        if (crc)
            _exit(crc == -EACCES ? 25 : crc == -ENOENT ? 26 : 21);
        if (ho_register(c, job, -1, 0) ||
            ho_device_open("host", 0, 1 << 20, &dev))
            _exit(22);
        ho_region_config cfg = {.block_bytes = BB, .max_blocks = 16,
                                .device_budget = 4 * BB};
        if (ho_region_new(c, dev, &cfg, &r))
            _exit(23);
        uint32_t b[NBLK];
        size_t n = 0;
        int rc = ho_region_map_prefix(r, "k", b, NBLK, &n);
        ho_region_free(r);
        ho_device_close(dev);
        ho_close(c);
        _exit(rc == -ENOENT ? 0 : 24);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(p, &st, 0), p);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

START_TEST(kill_and_share)
{
    /* a socket other uids may reach (the outsider below) */
    const char *args[] = {"--socket-mode=0666", NULL};
    ho_harness *h = ho_harness_start_args(args);
    ck_assert_ptr_nonnull(h);
    const char *sock = ho_harness_socket(h);
    uint64_t before = ddr_used(sock);
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pub = fork();
    ck_assert_int_ge(pub, 0);
    if (pub == 0) {
        close(pfd[0]);
        publisher(sock, pfd[1]);
    }
    close(pfd[1]);
    char ok = 0;
    ck_assert_int_eq(read(pfd[0], &ok, 1), 1);
    uint64_t with = ddr_used(sock);
    /* host copies (64 blocks + header) and the store entry */
    ck_assert_uint_ge(with, before + 64 * BB + NBLK * BB);

    /* the reader: same uid and job, a region of two slots, so every
     * access after the first two refills from the store's host copy */
    ho_client *c = NULL;
    ho_device *dev = NULL;
    ho_region *r = NULL;
    ck_assert_int_eq(ho_connect(sock, "reader", &c), 0);
    ck_assert_int_eq(ho_register(c, "j", -1, 0), 0);
    ck_assert_int_eq(ho_device_open("host", 0, 1 << 20, &dev), 0);
    ho_region_config cfg = {.block_bytes = BB, .max_blocks = 16,
                            .device_budget = 2 * BB, .name = "reader"};
    ck_assert_int_eq(ho_region_new(c, dev, &cfg, &r), 0);
    uint32_t b[NBLK];
    size_t n = 0;
    int mrc = ho_region_map_prefix(r, "k", b, NBLK, &n);
    if (mrc != 0)
        kill(pub, SIGKILL); /* no orphan left in pause() */
    ck_assert_msg(mrc == 0, "map_prefix: %d %s", mrc, ho_runtime_last_error());
    ck_assert_uint_eq(n, NBLK);
    void *p;
    ck_assert_int_eq(ho_block_access(r, b[0], 1, &p), HO_E_STATE);
    check_store_read_only();
    with = ddr_used(sock); /* the reader's region included */

    /* SIGKILL the publisher: its region's DDR is back at once */
    ck_assert_int_eq(kill(pub, SIGKILL), 0);
    int st;
    ck_assert_int_eq(waitpid(pub, &st, 0), pub);
    uint64_t after = 0;
    for (int i = 0; i < 200; i++) {
        after = ddr_used(sock);
        if (after < with - 64 * BB)
            break;
        usleep(10000);
    }
    ck_assert_uint_le(after, with - 64 * BB);
    /* ... while the store entry it published, referenced by the reader,
     * is still charged (and its memory mapped here) */
    ck_assert_uint_ge(after, before + NBLK * BB);
    uint64_t slen = 0;
    char sperm[5];
    ck_assert_ptr_nonnull(store_mapping(&slen, sperm));

    /* the published blocks are still there and exact, twice round */
    uint8_t want[BB], got[BB];
    for (int round = 0; round < 2; round++)
        for (uint32_t i = 0; i < NBLK; i++) {
            ck_assert_int_eq(ho_block_access(r, b[i], 0, &p), 0);
            ck_assert_int_eq(ho_device_read(dev, got, p, BB), 0);
            pattern(want, i);
            ck_assert_msg(memcmp(got, want, BB) == 0, "block %u differs", i);
            ck_assert_int_eq(ho_region_step(r, NULL), 0);
        }
    ho_region_stats rs;
    ho_region_get_stats(r, &rs);
    ck_assert_uint_ge(rs.misses, 6);
    ck_assert_uint_eq(rs.store_blocks, NBLK);

    /* never found from another job of this uid, nor from another uid
     * with the same job name */
    ck_assert_int_eq(outsider(sock, -1, "other"), 0);
    if (getuid() == 0)
        ck_assert_int_eq(outsider(sock, 65534, "j"), 0);

    ho_region_free(r);
    ho_device_close(dev);
    ho_close(c);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

/* hoctl from the build the daemon comes from: exit status. */
static int hoctl_run(const char *sock, const char *const *words)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", ho_harness_daemon_path());
    char *slash = strrchr(path, '/');
    ck_assert_ptr_nonnull(slash);
    snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "hoctl");
    const char *argv[16] = {path, "--socket", sock};
    int n = 3;
    for (; words[n - 3] && n < 15; n++)
        argv[n] = words[n - 3];
    argv[n] = NULL;
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        execv(path, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(p, &st, 0), p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* hoctl's standard output (up to n - 1 bytes) into buf; exit status. */
static int hoctl_capture(const char *sock, const char *const *words,
                         char *buf, size_t n)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    int saved = dup(1);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fd[1], 1), 0);
    close(fd[1]);
    int rc = hoctl_run(sock, words);
    ck_assert_int_ge(dup2(saved, 1), 0);
    close(saved);
    size_t got = 0;
    ssize_t k;
    while (got + 1 < n && (k = read(fd[0], buf + got, n - 1 - got)) > 0)
        got += (size_t)k;
    buf[got] = 0;
    close(fd[0]);
    return rc;
}

/* The number after "key": in a JSON text (0 when absent). */
static uint64_t json_u64(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

/* A daemon, a 1 MiB DDR quota on job `job`, a client registered in it
 * and a 1 MiB host device (the caller frees all four). */
typedef struct quota_job {
    ho_harness *h;
    const char *sock;
    ho_client *c;
    ho_device *dev;
} quota_job;

static void quota_job_start(quota_job *q, const char *job)
{
    q->h = ho_harness_start_args(NULL);
    ck_assert_ptr_nonnull(q->h);
    q->sock = ho_harness_socket(q->h);
    const char *set[] = {"quota", "set", "--job", job, "--tier", "ddr", "1M",
                         NULL};
    ck_assert_int_eq(hoctl_run(q->sock, set), 0);
    q->c = NULL;
    q->dev = NULL;
    ck_assert_int_eq(ho_connect(q->sock, job, &q->c), 0);
    ck_assert_int_eq(ho_register(q->c, job, -1, 0), 0);
    ck_assert_int_eq(ho_device_open("host", 0, 1 << 20, &q->dev), 0);
}

static void quota_job_end(quota_job *q)
{
    ho_device_close(q->dev);
    ho_close(q->c);
    ck_assert_int_eq(ho_harness_free(q->h), 0);
}

/* The job's DDR quota bounds the host copies and the store. */
START_TEST(quota_under_pressure)
{
    if (getuid() != 0)
        return; /* quota set needs an admin peer; tests run as root */
    quota_job q;
    quota_job_start(&q, "q");
    ho_client *c = q.c;
    ho_device *dev = q.dev;
    ho_region *r = NULL;
    /* 32 blocks of 64 KiB = 2 MiB of host copies: over the quota, so
     * the coldest chunks go to flash */
    ho_region_config cfg = {.block_bytes = BB, .max_blocks = 32,
                            .device_budget = 4 * BB,
                            .host_chunk_bytes = 4 * BB};
    ck_assert_int_eq(ho_region_new(c, dev, &cfg, &r), 0);
    ho_region_stats rs;
    ho_region_get_stats(r, &rs);
    ck_assert_uint_gt(rs.spills, 0);
    ck_assert_uint_gt(rs.chunks_flash, 0);
    ho_usage u;
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, &u), 0);
    ck_assert_uint_le(u.ddr_bytes, 1u << 20);
    ck_assert_uint_gt(u.flash_bytes, 0);
    r = ho_region_free(r);
    /* 8 blocks fit; publishing all 8 would take the quota past 1 MiB */
    cfg.max_blocks = 8;
    ck_assert_int_eq(ho_region_new(c, dev, &cfg, &r), 0);
    uint32_t b[8];
    void *p;
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(ho_block_alloc(r, &b[i]), 0);
        ck_assert_int_eq(ho_block_access(r, b[i], 1, &p), 0);
        if (i % 3 == 2)
            ck_assert_int_eq(ho_region_step(r, NULL), 0);
    }
    ck_assert_int_eq(ho_region_publish(r, "big", b, 8, 0), HO_E_QUOTA);
    ck_assert_int_eq(ho_region_publish(r, "small", b, 2, 0), 0);
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, &u), 0);
    ck_assert_uint_le(u.ddr_bytes, 1u << 20);
    ho_region_free(r);
    quota_job_end(&q);
}
END_TEST

/* A region whose host copies are twice the job's DDR quota: the coldest
 * chunks are spilled to flash and brought back on need; every block
 * stays exact through any number of rounds, the DDR used stays under the
 * quota, and a publish spanning chunks (some brought back from flash)
 * maps back exact. */
START_TEST(flash_spill_exact)
{
    if (getuid() != 0)
        return; /* quota set needs an admin peer; tests run as root */
    quota_job q;
    quota_job_start(&q, "f");
    const char *sock = q.sock;
    ho_client *c = q.c;
    ho_device *dev = q.dev;
    ho_region *r = NULL;
    enum { N = 32 };
    ho_region_config cfg = {.block_bytes = BB, .max_blocks = N + 8,
                            .device_budget = 4 * BB, .low_pct = 50,
                            .host_chunk_bytes = 2 * BB};
    ck_assert_int_eq(ho_region_new(c, dev, &cfg, &r), 0);
    uint32_t b[N];
    uint8_t buf[BB], got[BB];
    void *p;
    for (uint32_t i = 0; i < N; i++) {
        ck_assert_int_eq(ho_block_alloc(r, &b[i]), 0);
        ck_assert_int_eq(ho_block_access(r, b[i], 1, &p), 0);
        pattern(buf, i);
        ck_assert_int_eq(ho_device_write(dev, p, buf, BB), 0);
        ck_assert_int_eq(ho_region_step(r, NULL), 0);
    }
    ho_usage u;
    uint64_t rng = 12345;
    for (int round = 0; round < 4 * N; round++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t i = (uint32_t)((rng >> 33) % N);
        int write = (rng >> 13) % 4 == 0;
        ck_assert_int_eq(ho_block_access(r, b[i], write, &p), 0);
        ck_assert_int_eq(ho_device_read(dev, got, p, BB), 0);
        pattern(buf, i); /* a write access marks it dirty: written back */
        ck_assert_msg(memcmp(got, buf, BB) == 0, "block %u differs (round "
                      "%d)", i, round);
        ck_assert_int_eq(ho_region_step(r, NULL), 0);
        ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, &u), 0);
        ck_assert_uint_le(u.ddr_bytes, 1u << 20);
    }
    ho_region_stats rs;
    ho_region_get_stats(r, &rs);
    ck_assert_uint_gt(rs.spills, 0);
    ck_assert_uint_gt(rs.unspills, 0);
    ck_assert_uint_gt(rs.bytes_flash, 0);
    ck_assert_uint_gt(rs.stall_ns[HO_STALL_FLASH], 0);
    /* hoctl regions shows it: bytes moved to and from flash, host copies
     * on flash now */
    static char out[65536];
    const char *regions[] = {"regions", "--json", NULL};
    ck_assert_int_eq(hoctl_capture(sock, regions, out, sizeof out), 0);
    ck_assert_msg(json_u64(out, "flash_bytes") == rs.bytes_flash,
                  "hoctl regions: %s", out);
    ck_assert_uint_gt(json_u64(out, "host_flash_bytes"), 0);
    /* a prefix over four chunks (some on flash), published and mapped
     * back; the store needs room beside the region: a larger quota */
    ck_assert_uint_gt(rs.chunks_flash, 0);
    const char *more[] = {"quota", "set", "--job", "f", "--tier", "ddr",
                          "3M", NULL};
    ck_assert_int_eq(hoctl_run(sock, more), 0);
    uint32_t pre[4] = {b[0], b[9], b[17], b[30]};
    ck_assert_int_eq(ho_region_publish(r, "spanning", pre, 4, 0), 0);
    uint32_t m[4];
    size_t n = 0;
    ck_assert_int_eq(ho_region_map_prefix(r, "spanning", m, 4, &n), 0);
    ck_assert_uint_eq(n, 4);
    const uint32_t idx[4] = {0, 9, 17, 30};
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(ho_block_access(r, m[k], 0, &p), 0);
        ck_assert_int_eq(ho_device_read(dev, got, p, BB), 0);
        pattern(buf, idx[k]);
        ck_assert_msg(memcmp(got, buf, BB) == 0, "store block %d", k);
        ck_assert_int_eq(ho_region_step(r, NULL), 0);
    }
    ho_region_free(r);
    quota_job_end(&q);
}
END_TEST

static uint64_t ddr_used_by(ho_client *c)
{
    ho_tier_stats t[8];
    size_t n = 0;
    ck_assert_int_eq(ho_stats(c, t, 8, &n, NULL), 0);
    for (size_t i = 0; i < n && i < 8; i++)
        if (t[i].tier == HO_TIER_DDR)
            return t[i].used;
    return 0;
}

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* An entry kept after its publisher's session ended goes when its TTL
 * passes, on the daemon's timer: the probe below keeps one connection
 * and sends only Stats requests (no store request, no session ends after
 * the publisher's), and sees the DDR come back. */
START_TEST(ttl_expiry_on_timer)
{
    ho_harness *h = ho_harness_start_args(NULL);
    ck_assert_ptr_nonnull(h);
    const char *sock = ho_harness_socket(h);
    ho_client *probe = NULL;
    ck_assert_int_eq(ho_connect(sock, "probe", &probe), 0);
    uint64_t base = ddr_used_by(probe);

    ho_client *c = NULL;
    ho_device *dev = NULL;
    ho_region *r = NULL;
    ck_assert_int_eq(ho_connect(sock, "pub", &c), 0);
    ck_assert_int_eq(ho_register(c, "t", -1, 0), 0);
    ck_assert_int_eq(ho_device_open("host", 0, 1 << 20, &dev), 0);
    ho_region_config cfg = {.block_bytes = BB, .max_blocks = 8,
                            .device_budget = 4 * BB};
    ck_assert_int_eq(ho_region_new(c, dev, &cfg, &r), 0);
    uint32_t b[NBLK];
    void *p;
    for (uint32_t i = 0; i < NBLK; i++) {
        ck_assert_int_eq(ho_block_alloc(r, &b[i]), 0);
        ck_assert_int_eq(ho_block_access(r, b[i], 1, &p), 0);
    }
    const uint32_t ttl = 1500;
    uint64_t t0 = ms_now();
    ck_assert_int_eq(ho_region_publish(r, "ttl", b, NBLK, ttl), 0);
    ho_region_free(r);
    ho_device_close(dev);
    ho_close(c);
    /* the session's region is gone, the entry stays (until t0 + ttl) */
    uint64_t used = 0;
    for (int i = 0; i < 100; i++) {
        used = ddr_used_by(probe);
        if (used < base + 8 * BB)
            break;
        usleep(5000);
    }
    ck_assert_uint_lt(ms_now() - t0, ttl); /* still inside the TTL */
    ck_assert_uint_ge(used, base + NBLK * BB);
    ck_assert_uint_lt(used, base + 8 * BB);
    /* nothing else happens until the TTL has passed */
    while (ms_now() - t0 < ttl + 500)
        usleep(50000);
    used = ddr_used_by(probe);
    ck_assert_uint_le(used, base);
    ho_close(probe);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("residency_daemon");
    TCase *tc = tcase_create("residency_daemon");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, kill_and_share);
    tcase_add_test(tc, quota_under_pressure);
    tcase_add_test(tc, ttl_expiry_on_timer);
    tcase_add_test(tc, flash_spill_exact);
    suite_add_tcase(s, tc);
    return ho_check_run(s, false);
}
