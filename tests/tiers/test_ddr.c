/*
 * tests/tiers/test_ddr.c - the DDR pool: memfd arenas shared with another
 * process, seals, growth, evict/restore, budget errors, NUMA binding and
 * mlock reporting.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <numa.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tiers/ddr.h"
#include "hyperoffload/errors.h"

#define MiB (1ULL << 20)
#define CAP (64 * MiB)

static tier_ddr *new_pool(uint64_t cap, bool lock, int node)
{
    tier_ddr_config cfg = {.capacity = cap, .align = 4096,
                           .numa_node = node, .lock = lock};
    tier_ddr *d = NULL;
    char err[256] = "";
    int rc = tier_ddr_new(&cfg, &d, err, sizeof(err));

    ck_assert_msg(rc == 0, "tier_ddr_new: %d %s", rc, err);
    ck_assert_ptr_nonnull(d);
    return d;
}

static tier_arena *new_arena(tier_ddr *d, const char *owner)
{
    char err[256] = "";
    tier_arena *a = tier_arena_new(d, owner, err, sizeof(err));

    ck_assert_msg(a != NULL, "tier_arena_new: %s", err);
    return a;
}

static uint64_t file_blocks_bytes(int fd)
{
    struct stat st;

    ck_assert_int_eq(fstat(fd, &st), 0);
    return (uint64_t)st.st_blocks * 512;
}

static uint64_t file_size(int fd)
{
    struct stat st;

    ck_assert_int_eq(fstat(fd, &st), 0);
    return (uint64_t)st.st_size;
}

static int stats_same(const tier_ddr_stats *a, const tier_ddr_stats *b)
{
    return a->capacity == b->capacity && a->used == b->used &&
           a->committed == b->committed &&
           a->largest_free == b->largest_free &&
           a->fragmentation == b->fragmentation &&
           a->extents == b->extents && a->arenas == b->arenas &&
           a->locked == b->locked && a->numa_node == b->numa_node;
}

static void fill(uint8_t *p, uint64_t len, uint8_t seed)
{
    uint64_t i;

    for (i = 0; i < len; i++)
        p[i] = (uint8_t)(seed + i * 7 + (i >> 12));
}

static int check_fill(const uint8_t *p, uint64_t len, uint8_t seed)
{
    uint64_t i;

    for (i = 0; i < len; i++)
        if (p[i] != (uint8_t)(seed + i * 7 + (i >> 12)))
            return 0;
    return 1;
}

static int all_zero(const uint8_t *p, uint64_t len)
{
    uint64_t i;

    for (i = 0; i < len; i++)
        if (p[i])
            return 0;
    return 1;
}

/* ---- configuration ---------------------------------------------------------- */

START_TEST(test_bad_config)
{
    tier_ddr_config cfg = {.capacity = CAP, .align = 4096, .numa_node = -1};
    tier_ddr *d = (tier_ddr *)0x1;
    char err[256], want[64];
    struct sysinfo si;
    uint64_t ram;

    cfg.align = 1000;
    ck_assert_int_eq(tier_ddr_new(&cfg, &d, err, sizeof(err)), HO_E_BAD_CONFIG);
    ck_assert_ptr_eq(d, (tier_ddr *)0x1);
    cfg.align = 2048;
    ck_assert_int_eq(tier_ddr_new(&cfg, &d, err, sizeof(err)), HO_E_BAD_CONFIG);
    cfg.align = 4096;
    cfg.capacity = 4095;
    ck_assert_int_eq(tier_ddr_new(&cfg, &d, err, sizeof(err)), HO_E_BAD_CONFIG);
    ck_assert_ptr_nonnull(strstr(err, "4095"));
    cfg.capacity = CAP;
    cfg.hugepages = true;
    ck_assert_int_eq(tier_ddr_new(&cfg, &d, err, sizeof(err)), HO_E_BAD_CONFIG);
    ck_assert_ptr_nonnull(strstr(err, "2 MiB"));
    /* huge pages: only as many as are configured on this host */
    cfg.align = 2 * MiB;
    {
        FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/"
                        "nr_hugepages", "r");
        unsigned long long nr = 0;
        if (f) {
            if (fscanf(f, "%llu", &nr) != 1)
                nr = 0;
            fclose(f);
        }
        cfg.capacity = (nr + 1) * 2 * MiB;
        err[0] = '\0';
        ck_assert_int_eq(tier_ddr_new(&cfg, &d, err, sizeof(err)),
                         HO_E_BAD_CONFIG);
        ck_assert_msg(strstr(err, "huge pages") != NULL, "message: %s", err);
        snprintf(want, sizeof(want), "%llu", nr * 2 * MiB);
        ck_assert_msg(strstr(err, want) != NULL, "message: %s", err);
    }
    cfg.align = 4096;
    cfg.capacity = CAP;
    cfg.hugepages = false;
    cfg.numa_node = -2;
    ck_assert_int_eq(tier_ddr_new(&cfg, &d, err, sizeof(err)), HO_E_BAD_CONFIG);
    cfg.numa_node = -1;

    /* above the host's RAM: both figures in the message */
    ck_assert_int_eq(sysinfo(&si), 0);
    ram = (uint64_t)si.totalram * si.mem_unit;
    cfg.capacity = ram + (1ULL << 30);
    err[0] = '\0';
    ck_assert_int_eq(tier_ddr_new(&cfg, &d, err, sizeof(err)), HO_E_BAD_CONFIG);
    snprintf(want, sizeof(want), "%llu", (unsigned long long)cfg.capacity);
    ck_assert_msg(strstr(err, want) != NULL, "message: %s", err);
    snprintf(want, sizeof(want), "%llu", (unsigned long long)ram);
    ck_assert_msg(strstr(err, want) != NULL, "message: %s", err);
    ck_assert_ptr_eq(d, (tier_ddr *)0x1);

    /* a node that does not exist */
    if (numa_available() >= 0) {
        cfg.capacity = CAP;
        cfg.numa_node = numa_max_node() + 1;
        ck_assert_int_eq(tier_ddr_new(&cfg, &d, err, sizeof(err)),
                         HO_E_BAD_CONFIG);
        ck_assert_msg(strstr(err, "does not exist") != NULL, "message: %s", err);
    }
    ck_assert_ptr_null(tier_ddr_free(NULL));
    ck_assert_ptr_null(tier_arena_free(NULL));
}
END_TEST

/* ---- sharing with another process ------------------------------------------ */

static int send_fd(int sock, int fd)
{
    char byte = 'F';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = u.buf,
                         .msg_controllen = sizeof(u.buf)};
    struct cmsghdr *c;

    memset(&u, 0, sizeof(u));
    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = u.buf,
                         .msg_controllen = sizeof(u.buf)};
    struct cmsghdr *c;
    int fd;

    if (recvmsg(sock, &msg, 0) != 1)
        return -1;
    c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        return -1;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

/* The child _exits with the parent's pool still live; keeping the
 * pointers in globals makes it "still reachable" for valgrind's leak check
 * in the child (freeing it there would punch the shared file). */
static tier_ddr *volatile child_keep_pool;
static tier_arena *volatile child_keep_arena;

START_TEST(test_fd_shared_with_other_process)
{
    tier_ddr *d = new_pool(CAP, false, -1);
    tier_arena *a = new_arena(d, "job/one");
    uint64_t off, len, pad;
    uint8_t *base = tier_arena_base(a);
    int sv[2], status;
    pid_t pid;

    /* an allocation away from offset 0 */
    ck_assert_int_eq(tier_arena_alloc(a, 3 * MiB, &pad, &len), 0);
    ck_assert_int_eq(tier_arena_alloc(a, 2 * MiB + 100, &off, &len), 0);
    ck_assert_uint_eq(off, 3 * MiB);
    ck_assert_uint_eq(len, 2 * MiB + 4096);
    fill(base + off, MiB, 0x11);

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* child: gets the fd only through SCM_RIGHTS (its inherited copy
         * is CLOEXEC but still open, so close that to be sure) */
        int fd, ok;
        uint8_t *m;
        child_keep_pool = d;
        child_keep_arena = a;
        close(tier_arena_fd(a));
        close(sv[0]);
        fd = recv_fd(sv[1]);
        if (fd < 0)
            _exit(2);
        m = mmap(NULL, tier_arena_map_size(a), PROT_READ | PROT_WRITE,
                 MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
            _exit(3);
        ok = check_fill(m + off, MiB, 0x11);
        fill(m + off + MiB, MiB, 0x22); /* answer in the second MiB */
        munmap(m, tier_arena_map_size(a));
        _exit(ok ? 0 : 4);
    }
    close(sv[1]);
    ck_assert_int_eq(send_fd(sv[0], tier_arena_fd(a)), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    close(sv[0]);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child status %d", status);
    ck_assert(check_fill(base + off + MiB, MiB, 0x22));
    ck_assert(check_fill(base + off, MiB, 0x11));
    tier_arena_free(a);
    tier_ddr_free(d);
}
END_TEST

START_TEST(test_seals)
{
    tier_ddr *d = new_pool(CAP, false, -1);
    tier_arena *a = new_arena(d, "seals");
    uint64_t off, len, size;
    int seals, fd = tier_arena_fd(a);

    ck_assert_int_eq(tier_arena_alloc(a, 3 * MiB, &off, &len), 0);
    seals = fcntl(fd, F_GET_SEALS);
    ck_assert_int_ge(seals, 0);
    ck_assert_int_eq(seals & (F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL),
                     F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
    ck_assert_int_eq(seals & F_SEAL_WRITE, 0);
    /* The file has its full map size from the start, and keeps it: a
     * client holding the fd can neither grow nor shrink it. */
    size = file_size(fd);
    ck_assert_uint_eq(size, tier_arena_map_size(a));
    errno = 0;
    ck_assert_int_ne(ftruncate(fd, (off_t)(size - 4096)), 0);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_ne(ftruncate(fd, 0), 0);
    errno = 0;
    ck_assert_int_ne(ftruncate(fd, (off_t)(size + 4096)), 0);
    ck_assert_int_eq(errno, EPERM);
    errno = 0;
    ck_assert_int_ne(fallocate(fd, 0, (off_t)size, 4096), 0);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_ne(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), 0);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_uint_eq(file_size(fd), size);
    /* CLOEXEC */
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    tier_arena_free(a);
    tier_ddr_free(d);
}
END_TEST

START_TEST(test_growth)
{
    tier_ddr *d = new_pool(CAP, false, -1);
    tier_arena *a = new_arena(d, "growth");
    tier_ddr_stats st;
    uint64_t offs[300], lens[300], prev = 0, hw = 0;
    int fd = tier_arena_fd(a), i, n = 0, grew = 0;

    ck_assert_uint_eq(file_size(fd), tier_arena_map_size(a));
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.committed, 0);
    for (i = 0; i < 300; i++) {
        uint64_t want = 4096 + (uint64_t)(i % 37) * 5000;
        int rc = tier_arena_alloc(a, want, &offs[n], &lens[n]);
        uint64_t size;
        if (rc == HO_E_TIER_FULL)
            break;
        ck_assert_int_eq(rc, 0);
        if (offs[n] + lens[n] > hw)
            hw = offs[n] + lens[n];
        memset(tier_arena_base(a) + offs[n], 0x5a, lens[n]); /* no SIGBUS */
        /* committed: the high-water mark in 2 MiB steps */
        tier_ddr_stats_get(d, &st);
        size = st.committed;
        ck_assert_uint_eq(file_size(fd), tier_arena_map_size(a));
        ck_assert_uint_ge(size, hw);
        ck_assert_uint_lt(size - hw, 2 * MiB); /* grows in 2 MiB steps */
        ck_assert_uint_eq(size % (2 * MiB), 0);
        ck_assert_uint_ge(size, prev);
        grew += size > prev;
        prev = size;
        n++;
    }
    ck_assert_int_eq(n, 300);
    ck_assert_int_gt(grew, 10);
    /* resident memory follows used: file blocks == used bytes */
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(file_blocks_bytes(fd), st.used);
    for (i = 0; i < n; i += 2)
        ck_assert_int_eq(tier_arena_release(a, offs[i], lens[i]), 0);
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(file_blocks_bytes(fd), st.used);
    ck_assert_uint_eq(st.committed, prev); /* never shrinks */
    ck_assert_uint_eq(file_size(fd), tier_arena_map_size(a));
    tier_arena_free(a);
    tier_ddr_free(d);
}
END_TEST

START_TEST(test_evict_restore)
{
    tier_ddr *d = new_pool(CAP, false, -1);
    tier_arena *a = new_arena(d, "evict");
    uint8_t *base = tier_arena_base(a);
    tier_ddr_stats st;
    uint64_t off, len, keep, klen;
    int fd = tier_arena_fd(a);

    ck_assert_int_eq(tier_arena_alloc(a, MiB, &keep, &klen), 0);
    ck_assert_int_eq(tier_arena_alloc(a, 4 * MiB, &off, &len), 0);
    fill(base + keep, klen, 1);
    fill(base + off, len, 2);
    ck_assert_uint_eq(file_blocks_bytes(fd), 5 * MiB);
    ck_assert_int_eq(tier_arena_is_evicted(a, off, len), 0);

    ck_assert_int_eq(tier_arena_evict(a, off, len), 0);
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.used, MiB);
    ck_assert_uint_eq(st.extents, 2);
    ck_assert_uint_eq(file_blocks_bytes(fd), MiB); /* pages punched */
    ck_assert_int_eq(tier_arena_is_evicted(a, off, len), 1);
    ck_assert_int_eq(tier_arena_evict(a, off, len), HO_E_STATE);
    ck_assert_int_eq(tier_arena_restore(a, keep, klen), HO_E_STATE);
    ck_assert(all_zero(base + off, len));
    ck_assert(check_fill(base + keep, klen, 1));
    /* the offset stays reserved: a new allocation goes elsewhere */
    {
        uint64_t o2, l2;
        ck_assert_int_eq(tier_arena_alloc(a, 4 * MiB, &o2, &l2), 0);
        ck_assert_uint_ne(o2, off);
        ck_assert_int_eq(tier_arena_release(a, o2, l2), 0);
    }

    ck_assert_int_eq(tier_arena_restore(a, off, len), 0);
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.used, 5 * MiB);
    ck_assert_int_eq(tier_arena_is_evicted(a, off, len), 0);
    ck_assert(all_zero(base + off, len));
    fill(base + off, len, 3);
    ck_assert(check_fill(base + off, len, 3));

    /* releasing an evicted allocation does not uncharge twice */
    ck_assert_int_eq(tier_arena_evict(a, off, len), 0);
    ck_assert_int_eq(tier_arena_release(a, off, len), 0);
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.used, MiB);
    ck_assert_uint_eq(st.extents, 1);
    ck_assert_int_eq(tier_arena_restore(a, off, len), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_arena_evict(a, off, len), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_arena_is_evicted(a, off, len), HO_E_UNKNOWN_EXTENT);
    tier_arena_free(a);
    tier_ddr_free(d);
}
END_TEST

START_TEST(test_full_and_too_large)
{
    tier_ddr *d = new_pool(CAP, false, -1);
    tier_arena *a = new_arena(d, "a"), *b;
    tier_ddr_stats before, after;
    uint64_t off = 7, len = 7, big, blen, o2, l2;

    ck_assert_int_eq(tier_arena_alloc(a, 0, &off, &len), HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_arena_alloc(a, UINT64_MAX, &off, &len),
                     HO_E_INVALID_SIZE);
    ck_assert_int_eq(tier_arena_alloc(a, CAP + 1, &off, &len), HO_E_TOO_LARGE);
    ck_assert_int_eq(tier_arena_alloc(a, 40 * MiB, &big, &blen), 0);
    tier_ddr_stats_get(d, &before);
    ck_assert_int_eq(tier_arena_alloc(a, 30 * MiB, &off, &len), HO_E_TIER_FULL);
    ck_assert_int_eq(tier_arena_alloc(a, CAP, &off, &len), HO_E_TIER_FULL);
    ck_assert_int_eq(tier_arena_alloc(a, CAP * 2, &off, &len), HO_E_TOO_LARGE);
    tier_ddr_stats_get(d, &after);
    ck_assert(stats_same(&before, &after));
    ck_assert_uint_eq(off, 7);
    ck_assert_uint_eq(len, 7);
    tier_ddr_stats_get(d, &after);
    ck_assert_uint_eq(after.committed, 40 * MiB);

    /* evicted: the pool has room, arena a's offset space does not */
    ck_assert_int_eq(tier_arena_evict(a, big, blen), 0);
    tier_ddr_stats_get(d, &after);
    ck_assert_uint_eq(after.largest_free, 24 * MiB);
    ck_assert_int_eq(tier_arena_alloc(a, 30 * MiB, &off, &len), HO_E_TIER_FULL);
    b = new_arena(d, "b");
    tier_ddr_stats_get(d, &after);
    ck_assert_uint_eq(after.largest_free, CAP);
    ck_assert(after.fragmentation == 0.0);
    ck_assert_int_eq(tier_arena_alloc(b, 30 * MiB, &o2, &l2), 0);

    /* restore does not fit now: HO_E_TIER_FULL, nothing changes */
    tier_ddr_stats_get(d, &before);
    ck_assert_int_eq(tier_arena_restore(a, big, blen), HO_E_TIER_FULL);
    tier_ddr_stats_get(d, &after);
    ck_assert(stats_same(&before, &after));
    ck_assert_int_eq(tier_arena_is_evicted(a, big, blen), 1);
    ck_assert_int_eq(tier_arena_release(b, o2, l2), 0);
    ck_assert_int_eq(tier_arena_restore(a, big, blen), 0);

    /* bad releases leave everything as it was */
    tier_ddr_stats_get(d, &before);
    ck_assert_int_eq(tier_arena_release(a, big + 4096, 4096), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_arena_release(a, big, blen + 4096), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_arena_release(a, big, 0), HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_arena_release(b, big, blen), HO_E_UNKNOWN_EXTENT);
    tier_ddr_stats_get(d, &after);
    ck_assert(stats_same(&before, &after));
    tier_arena_free(b);
    tier_arena_free(a);
    tier_ddr_free(d);
}
END_TEST

START_TEST(test_release_all)
{
    tier_ddr *d = new_pool(CAP, false, -1);
    tier_arena *a = new_arena(d, "all");
    tier_ddr_stats st;
    uint64_t offs[128], lens[128], sum = 0;
    int i, n = 0, fd = tier_arena_fd(a);

    for (i = 0; i < 128; i++) {
        if (tier_arena_alloc(a, 1 + (uint64_t)i * 3001, &offs[n], &lens[n]) != 0)
            break;
        memset(tier_arena_base(a) + offs[n], 0xee, lens[n]);
        sum += lens[n++];
    }
    ck_assert_int_eq(n, 128);
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.used, sum);
    ck_assert_uint_eq(st.extents, 128);
    ck_assert_uint_eq(file_blocks_bytes(fd), sum);
    for (i = n - 1; i >= 0; i -= 3)
        ck_assert_int_eq(tier_arena_evict(a, offs[i], lens[i]), 0);
    for (i = 0; i < n; i++)
        ck_assert_int_eq(tier_arena_release(a, offs[i], lens[i]), 0);
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.used, 0);
    ck_assert_uint_eq(st.extents, 0);
    ck_assert_uint_eq(st.largest_free, CAP);
    ck_assert_uint_eq(file_blocks_bytes(fd), 0);
    {
        tier_arena_stats as;
        tier_arena_stats_get(a, &as);
        ck_assert_uint_eq(as.resident, 0);
        ck_assert_uint_eq(as.reserved, 0);
        ck_assert_uint_eq(as.largest_free, CAP);
    }

    /* freeing an arena with live extents uncharges the pool */
    ck_assert_int_eq(tier_arena_alloc(a, 5 * MiB, &offs[0], &lens[0]), 0);
    tier_arena_free(a);
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.used, 0);
    ck_assert_uint_eq(st.arenas, 0);
    ck_assert_uint_eq(st.committed, 0);
    tier_ddr_free(d);
}
END_TEST

START_TEST(test_two_arenas)
{
    tier_ddr *d = new_pool(CAP, false, -1);
    tier_arena *a = new_arena(d, "x"), *b = new_arena(d, "y");
    struct stat sa, sb;
    tier_ddr_stats st;
    uint64_t oa, ob, len;

    ck_assert_uint_ne(tier_arena_id(a), tier_arena_id(b));
    ck_assert_uint_gt(tier_arena_id(a), 0);
    ck_assert_int_ne(tier_arena_fd(a), tier_arena_fd(b));
    ck_assert_int_eq(fstat(tier_arena_fd(a), &sa), 0);
    ck_assert_int_eq(fstat(tier_arena_fd(b), &sb), 0);
    ck_assert(sa.st_ino != sb.st_ino || sa.st_dev != sb.st_dev);
    ck_assert_uint_eq(tier_arena_map_size(a), CAP);

    ck_assert_int_eq(tier_arena_alloc(a, MiB, &oa, &len), 0);
    ck_assert_int_eq(tier_arena_alloc(b, MiB, &ob, &len), 0);
    ck_assert_uint_eq(oa, ob);
    fill(tier_arena_base(a) + oa, MiB, 9);
    ck_assert(all_zero(tier_arena_base(b) + ob, MiB));
    fill(tier_arena_base(b) + ob, MiB, 10);
    ck_assert(check_fill(tier_arena_base(a) + oa, MiB, 9));
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.arenas, 2);
    ck_assert_uint_eq(st.used, 2 * MiB);
    ck_assert_uint_eq(st.committed, 4 * MiB);
    ck_assert_uint_eq(st.extents, 2);
    tier_arena_free(a);
    /* tier_ddr_free frees the remaining arena too (no leak under valgrind) */
    tier_ddr_free(d);
}
END_TEST

START_TEST(test_fragmentation_stats)
{
    tier_ddr *d = new_pool(CAP, false, -1);
    tier_arena *a = new_arena(d, "frag");
    tier_ddr_stats st;
    uint64_t o[3], len;
    double want;
    int i;

    for (i = 0; i < 3; i++)
        ck_assert_int_eq(tier_arena_alloc(a, MiB, &o[i], &len), 0);
    ck_assert_int_eq(tier_arena_release(a, o[1], MiB), 0);
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.used, 2 * MiB);
    ck_assert_uint_eq(st.largest_free, CAP - 3 * MiB);
    want = 1.0 - (double)(CAP - 3 * MiB) / (double)(CAP - 2 * MiB);
    ck_assert(st.fragmentation == want);
    ck_assert(st.fragmentation > 0.0);
    tier_arena_free(a);
    tier_ddr_free(d);
}
END_TEST

/* ---- NUMA ------------------------------------------------------------------------ */

START_TEST(test_numa)
{
    tier_ddr_stats st;
    tier_ddr *d;
    tier_arena *a;
    uint64_t off, len;

    if (numa_available() < 0) {
        d = new_pool(CAP, false, 0);
        tier_ddr_stats_get(d, &st);
        ck_assert_int_eq(st.numa_node, -1);
        ck_assert_ptr_nonnull(strstr(st.detail, "NUMA unavailable"));
        tier_ddr_free(d);
        return;
    }
    d = new_pool(CAP, false, 0);
    a = new_arena(d, "numa");
    ck_assert_int_eq(tier_arena_alloc(a, MiB, &off, &len), 0);
    memset(tier_arena_base(a) + off, 1, len);
    tier_ddr_stats_get(d, &st);
    ck_assert_int_eq(st.numa_node, 0);
    ck_assert_msg(strstr(st.detail, "bound to NUMA node 0") != NULL,
                  "detail: %s", st.detail);
    {
        /* the mapping carries the bind policy */
        int mode = -1;
        unsigned long mask[1024 / (8 * sizeof(unsigned long))];
        memset(mask, 0, sizeof(mask));
        ck_assert_int_eq(get_mempolicy(&mode, mask, 1024 + 1,
                                       tier_arena_base(a) + off, MPOL_F_ADDR),
                         0);
        ck_assert_int_eq(mode, MPOL_BIND);
        ck_assert_uint_eq(mask[0] & 1, 1);
    }
    tier_arena_free(a);
    tier_ddr_free(d);

    /* capacity above the node's memory: the node's figure in the message */
    {
        tier_ddr_config cfg = {.align = 4096, .numa_node = 0};
        long long node = numa_node_size64(0, NULL);
        char err[256] = "", want[32];
        ck_assert_int_gt(node, 0);
        cfg.capacity = (uint64_t)node + (1ULL << 30);
        ck_assert_int_eq(tier_ddr_new(&cfg, &d, err, sizeof(err)),
                         HO_E_BAD_CONFIG);
        snprintf(want, sizeof(want), "%lld", node);
        ck_assert_msg(strstr(err, want) && strstr(err, "NUMA node 0"),
                      "message: %s", err);
    }

    /* no node configured: unbound, and the detail says so */
    d = new_pool(CAP, false, -1);
    tier_ddr_stats_get(d, &st);
    ck_assert_int_eq(st.numa_node, -1);
    ck_assert_ptr_nonnull(strstr(st.detail, "no NUMA binding"));
    tier_ddr_free(d);
}
END_TEST

/* ---- mlock ----------------------------------------------------------------------- */

static uint64_t vm_locked_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long v = 0;

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmLck: %llu kB", &v) == 1)
            break;
    fclose(f);
    return v;
}

static int have_cap_ipc_lock(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct c[2];

    if (syscall(SYS_capget, &h, c) != 0)
        return 0;
    return (c[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1;
}

static int drop_cap_ipc_lock(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct c[2];

    if (syscall(SYS_capget, &h, c) != 0)
        return -1;
    c[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    c[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
    return (int)syscall(SYS_capset, &h, c);
}

START_TEST(test_lock_privileged)
{
    tier_ddr *d;
    tier_arena *a;
    tier_ddr_stats st;
    uint64_t off, len, before;

    if (!have_cap_ipc_lock()) {
        /* Not privileged: mlock of 32 MiB must be refused and reported. */
        d = new_pool(CAP, true, -1);
        a = new_arena(d, "lock");
        ck_assert_int_eq(tier_arena_alloc(a, 32 * MiB, &off, &len), 0);
        tier_ddr_stats_get(d, &st);
        ck_assert(!st.locked);
        ck_assert_ptr_nonnull(strstr(st.detail, "RLIMIT_MEMLOCK"));
        tier_arena_free(a);
        tier_ddr_free(d);
        return;
    }
    before = vm_locked_kib();
    d = new_pool(CAP, true, -1);
    a = new_arena(d, "lock");
    ck_assert_int_eq(tier_arena_alloc(a, 16 * MiB, &off, &len), 0);
    tier_ddr_stats_get(d, &st);
    ck_assert_msg(st.locked, "detail: %s", st.detail);
    ck_assert_ptr_nonnull(strstr(st.detail, "pages locked"));
    ck_assert_uint_ge(vm_locked_kib(), before + 16 * 1024);
    /* populated by mlock: resident before anyone touched it */
    ck_assert_uint_eq(file_blocks_bytes(tier_arena_fd(a)), 16 * MiB);
    ck_assert_int_eq(tier_arena_evict(a, off, len), 0);
    ck_assert_uint_lt(vm_locked_kib(), before + 1024);
    ck_assert_uint_eq(file_blocks_bytes(tier_arena_fd(a)), 0);
    ck_assert_int_eq(tier_arena_restore(a, off, len), 0);
    ck_assert_uint_ge(vm_locked_kib(), before + 16 * 1024);

    /* fill through the memfd: restore without populating, lock after */
    ck_assert_int_eq(tier_arena_evict(a, off, len), 0);
    ck_assert_int_eq(tier_arena_lock(a, off, len), HO_E_STATE);
    ck_assert_int_eq(tier_arena_restore_unlocked(a, off, len), 0);
    ck_assert_int_eq(tier_arena_restore_unlocked(a, off, len), HO_E_STATE);
    ck_assert_uint_lt(vm_locked_kib(), before + 1024);
    ck_assert_uint_eq(file_blocks_bytes(tier_arena_fd(a)), 0);
    {
        uint8_t *buf = malloc(len);
        ck_assert_ptr_nonnull(buf);
        fill(buf, len, 42);
        ck_assert_int_eq(pwrite(tier_arena_fd(a), buf, len, (off_t)off),
                         (ssize_t)len);
        free(buf);
    }
    ck_assert_int_eq(tier_arena_lock(a, off, len), 0);
    ck_assert_uint_ge(vm_locked_kib(), before + 16 * 1024);
    ck_assert(check_fill(tier_arena_base(a) + off, len, 42));
    ck_assert_int_eq(tier_arena_lock(a, off + 4096, 4096), HO_E_UNKNOWN_EXTENT);
    tier_ddr_stats_get(d, &st);
    ck_assert_uint_eq(st.used, 16 * MiB);
    ck_assert(st.locked);

    ck_assert_int_eq(tier_arena_release(a, off, len), 0);
    ck_assert_uint_lt(vm_locked_kib(), before + 1024);
    tier_arena_free(a);
    tier_ddr_free(d);
}
END_TEST

START_TEST(test_restore_unlocked_without_locking)
{
    tier_ddr *d = new_pool(CAP, false, -1);
    tier_arena *a = new_arena(d, "nolock"), *b;
    tier_ddr_stats before, after;
    uint64_t off, len, o2, l2, vm0 = vm_locked_kib();

    ck_assert_int_eq(tier_arena_alloc(a, 40 * MiB, &off, &len), 0);
    ck_assert_int_eq(tier_arena_lock(a, off, len), 0); /* locking is off */
    ck_assert_uint_lt(vm_locked_kib(), vm0 + 1024);
    ck_assert_int_eq(tier_arena_evict(a, off, len), 0);
    b = new_arena(d, "other");
    ck_assert_int_eq(tier_arena_alloc(b, 30 * MiB, &o2, &l2), 0);
    /* no room: HO_E_TIER_FULL, nothing changes */
    tier_ddr_stats_get(d, &before);
    ck_assert_int_eq(tier_arena_restore_unlocked(a, off, len), HO_E_TIER_FULL);
    tier_ddr_stats_get(d, &after);
    ck_assert(stats_same(&before, &after));
    ck_assert_int_eq(tier_arena_is_evicted(a, off, len), 1);
    ck_assert_int_eq(tier_arena_restore_unlocked(a, off + 4096, 4096),
                     HO_E_UNKNOWN_EXTENT);
    ck_assert_int_eq(tier_arena_release(b, o2, l2), 0);
    tier_arena_free(b);
    ck_assert_int_eq(tier_arena_restore_unlocked(a, off, len), 0);
    tier_ddr_stats_get(d, &after);
    ck_assert_uint_eq(after.used, 40 * MiB);
    ck_assert_uint_eq(file_blocks_bytes(tier_arena_fd(a)), 0); /* not populated */
    tier_arena_free(a);
    tier_ddr_free(d);
}
END_TEST

/* In a child without CAP_IPC_LOCK and with RLIMIT_MEMLOCK lowered, the
 * pool reports the refusal.  limit 0: the probe in tier_ddr_new fails;
 * 256 KiB: the probe passes and the first big allocation is refused. */
static void lock_refused_child(rlim_t limit, const char *want_limit)
{
    int pfd[2], status;
    pid_t pid;
    char buf[512] = "";
    ssize_t n;

    ck_assert_int_eq(pipe(pfd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit rl = {.rlim_cur = limit, .rlim_max = limit};
        tier_ddr_config cfg = {.capacity = CAP, .align = 4096,
                               .numa_node = -1, .lock = true};
        tier_ddr *d = NULL;
        tier_arena *a;
        tier_ddr_stats st, st0;
        uint64_t off, len;
        char err[256];
        int code = 0;

        close(pfd[0]);
        if (have_cap_ipc_lock() && drop_cap_ipc_lock() != 0)
            _exit(10);
        if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
            _exit(11);
        if (tier_ddr_new(&cfg, &d, err, sizeof(err)) != 0)
            _exit(12);
        tier_ddr_stats_get(d, &st0);
        a = tier_arena_new(d, "refused", err, sizeof(err));
        if (!a)
            _exit(13);
        if (tier_arena_alloc(a, 4 * MiB, &off, &len) != 0)
            code = 14; /* the allocation itself must still succeed */
        memset(tier_arena_base(a) + off, 3, len);
        tier_ddr_stats_get(d, &st);
        if (st.locked)
            code = 15;
        if (limit == 0 && st0.locked)
            code = 16; /* probe must have seen it already */
        if (limit > 0 && !st0.locked)
            code = 17; /* the probe page fits under the limit */
        if (write(pfd[1], st.detail, strlen(st.detail)) < 0)
            code = 18;
        tier_arena_free(a);
        tier_ddr_free(d);
        _exit(code);
    }
    close(pfd[1]);
    n = read(pfd[0], buf, sizeof(buf) - 1);
    close(pfd[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child status %d (exit %d) detail '%s'", status,
                  WEXITSTATUS(status), buf);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    ck_assert_msg(strstr(buf, "mlock refused") && strstr(buf, want_limit),
                  "detail: %s", buf);
}

START_TEST(test_lock_refused_rlimit)
{
    lock_refused_child(256 * 1024, "RLIMIT_MEMLOCK 256 KiB");
    lock_refused_child(0, "RLIMIT_MEMLOCK 0 bytes");
}
END_TEST

static Suite *ddr_suite(void)
{
    Suite *s = suite_create("ddr");
    TCase *tc = tcase_create("ddr");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_bad_config);
    tcase_add_test(tc, test_fd_shared_with_other_process);
    tcase_add_test(tc, test_seals);
    tcase_add_test(tc, test_growth);
    tcase_add_test(tc, test_evict_restore);
    tcase_add_test(tc, test_full_and_too_large);
    tcase_add_test(tc, test_release_all);
    tcase_add_test(tc, test_two_arenas);
    tcase_add_test(tc, test_fragmentation_stats);
    tcase_add_test(tc, test_numa);
    tcase_add_test(tc, test_lock_privileged);
    tcase_add_test(tc, test_lock_refused_rlimit);
    tcase_add_test(tc, test_restore_unlocked_without_locking);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ddr_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
