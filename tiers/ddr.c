/*
 * tiers/ddr.c - the host DDR pool: memfd arenas charged against one budget.
 *
 * Each arena is a memfd mapped once by the daemon with
 * MAP_SHARED|MAP_NORESERVE over the whole pool capacity; an extent
 * allocator hands out offsets inside it.  The file is created at that full
 * size (sparse: a hole costs no memory until a page is touched) and sealed
 * against growing, shrinking and further sealing, so a client holding the
 * fd can never change its size: what it can touch is bounded by the map
 * size.  `committed` reports the allocator's high-water mark in
 * DDR_GROW_STEP steps.  Freed and evicted ranges are munlocked and punched
 * out, so the pages the kernel holds follow `used`.
 *
 * The extent tag of an allocation records whether it is evicted
 * (DDR_TAG_EVICTED): evicted allocations keep their offsets but are not
 * charged to the pool.
 */
#include "tiers/ddr.h"

#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "tiers/extent.h"
#include "hyperoffload/errors.h"
#include "proto/errfmt.h"

/* Limits (arenas, owner names, NUMA nodes, capacity, alignment) are in
 * tiers/tier_limits.h. */
#define DDR_GROW_STEP (2ULL << 20) /* committed granularity; a huge page */
#define DDR_HUGE_PAGE (2ULL << 20) /* MFD_HUGETLB's default page size */
#define DDR_TAG_EVICTED 1u         /* extent tag: allocation is evicted */

struct tier_arena {
    tier_ddr *ddr;
    tier_arena *prev, *next;
    uint64_t id;
    char owner[TIER_DDR_OWNER_MAX];
    int fd;
    uint8_t *base;
    uint64_t map_size;
    uint64_t hwm;       /* allocator high-water mark, DDR_GROW_STEP
                           steps (committed) */
    uint64_t resident;  /* bytes of this arena charged to the pool */
    tier_extents *ext;
};

struct tier_ddr {
    uint64_t capacity, align;
    uint64_t arena_space; /* map size of every arena */
    int numa_node;      /* configured node, -1 none */
    bool lock, hugepages;
    bool numa_ok;       /* binding arenas to numa_node */
    bool lock_ok;       /* still mlocking (no refusal seen) */
    uint64_t used;
    uint64_t next_id;
    uint32_t narenas;
    tier_arena *arenas;
    char numa_detail[72];
    char lock_detail[72];
};

/* "8 MiB", "64 KiB", "12345 bytes", "unlimited" */
static void fmt_limit(char *buf, size_t n, rlim_t v)
{
    if (v == RLIM_INFINITY)
        snprintf(buf, n, "unlimited");
    else if (v >= (1ULL << 30) && v % (1ULL << 30) == 0)
        snprintf(buf, n, "%llu GiB", (unsigned long long)(v >> 30));
    else if (v >= (1ULL << 20) && v % (1ULL << 20) == 0)
        snprintf(buf, n, "%llu MiB", (unsigned long long)(v >> 20));
    else if (v >= 1024 && v % 1024 == 0)
        snprintf(buf, n, "%llu KiB", (unsigned long long)(v >> 10));
    else
        snprintf(buf, n, "%llu bytes", (unsigned long long)v);
}

/* mlock/munlock as system calls: AddressSanitizer turns the libc calls
 * into no-ops that report success, which would make a sanitizer build
 * claim pages are locked when they are not. */
static int sys_mlock(const void *p, size_t len)
{
    return (int)syscall(SYS_mlock, p, len);
}

static int sys_munlock(const void *p, size_t len)
{
    return (int)syscall(SYS_munlock, p, len);
}

/* First mlock refusal: remember why, stop locking. */
static void lock_refused(tier_ddr *d, int err)
{
    struct rlimit rl;
    char lim[32] = "unknown";

    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
        fmt_limit(lim, sizeof(lim), rl.rlim_cur);
    snprintf(d->lock_detail, sizeof(d->lock_detail),
             "mlock refused: %s (RLIMIT_MEMLOCK %s)", strerror(err), lim);
    d->lock_ok = false;
}

/* mlock (and so populate) [p, p+len) while locking is on. */
static void lock_range(tier_ddr *d, uint8_t *p, uint64_t len)
{
    if (!d->lock_ok)
        return;
    if (sys_mlock(p, len) != 0)
        lock_refused(d, errno);
}

static void unlock_range(const tier_ddr *d, uint8_t *p, uint64_t len)
{
    /* Ranges locked before a refusal stay locked until freed, so unlock
     * whenever locking was configured.  A failure (ENOMEM from a VMA split
     * at the map-count limit) only leaves the pages pinned until the punch
     * frees them. */
    if (d->lock)
        (void)sys_munlock(p, len);
}

static int punch(int fd, uint64_t off, uint64_t len)
{
    int r;

    do {
        r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      (off_t)off, (off_t)len);
    } while (r != 0 && errno == EINTR);
    return r == 0 ? 0 : -errno;
}

/* Bytes of memory the pool may not exceed: the bound node or all RAM. */
static int node_memory(int node, bool use_numa, uint64_t *ret, char *what,
                       size_t whatlen)
{
    if (use_numa) {
        long long sz = numa_node_size64(node, NULL);
        if (sz > 0) {
            *ret = (uint64_t)sz;
            snprintf(what, whatlen, "NUMA node %d", node);
            return 0;
        }
    }
    {
        struct sysinfo si;
        if (sysinfo(&si) != 0)
            return -errno;
        *ret = (uint64_t)si.totalram * (uint64_t)si.mem_unit;
        snprintf(what, whatlen, "this host");
    }
    return 0;
}

/* Bytes of 2 MiB huge pages configured (on the node when bound). */
static uint64_t huge_memory(int node, bool use_numa)
{
    char path[128];
    unsigned long long n = 0;
    FILE *f;

    if (use_numa)
        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/"
                 "hugepages/hugepages-2048kB/nr_hugepages", node);
    else
        snprintf(path, sizeof(path),
                 "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages");
    f = fopen(path, "re");
    if (!f)
        return 0;
    if (fscanf(f, "%llu", &n) != 1)
        n = 0;
    fclose(f);
    return (uint64_t)n * DDR_HUGE_PAGE;
}

/* What tier_ddr_new derives from a configuration it accepts. */
typedef struct ddr_plan {
    uint64_t capacity;     /* rounded down to the alignment */
    uint64_t arena_space;  /* every arena's offset space */
    bool use_numa;         /* bind to cfg->numa_node */
} ddr_plan;

/* Step 1 of tier_ddr_new: check cfg against the alignment rules, the
 * limits and the memory (and huge pages) of the node or host.  0 with
 * *ret filled, or HO_E_BAD_CONFIG with the sentence in err. */
static int ddr_check_config(const tier_ddr_config *cfg, ddr_plan *ret,
                            char *err, size_t errlen)
{
    uint64_t cap, mem = 0;
    bool use_numa = false;
    char what[32];
    int rc;

    if (cfg->align < TIER_DDR_MIN_ALIGN ||
        (cfg->align & (cfg->align - 1)) != 0) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "DDR align %llu is not a power of two >= %u",
                       (unsigned long long)cfg->align, TIER_DDR_MIN_ALIGN);
    }
    if (cfg->hugepages && cfg->align % DDR_HUGE_PAGE != 0) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                "DDR align %llu must be a multiple of 2 MiB with huge pages",
                (unsigned long long)cfg->align);
    }
    cap = cfg->capacity & ~(cfg->align - 1);
    if (cap == 0) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "DDR capacity %llu is below the alignment %llu",
                (unsigned long long)cfg->capacity,
                (unsigned long long)cfg->align);
    }
    if (cap > TIER_DDR_MAX_CAPACITY) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "DDR capacity %llu is too large",
                (unsigned long long)cap);
    }
    if (cfg->numa_node < -1 || cfg->numa_node >= TIER_DDR_NUMA_NODES_MAX) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "NUMA node %d is out of range", cfg->numa_node);
    }
    if (cfg->numa_node >= 0 && numa_available() >= 0) {
        if (cfg->numa_node > numa_max_node()) {
            return ho_errf(err, errlen, HO_E_BAD_CONFIG, "NUMA node %d does not exist (highest is %d)",
                    cfg->numa_node, numa_max_node());
        }
        use_numa = true;
    }
    rc = node_memory(cfg->numa_node, use_numa, &mem, what, sizeof(what));
    if (rc < 0) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "cannot read the memory size: %s",
                strerror(-rc));
    }
    if (cap > mem) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                "DDR capacity %llu bytes exceeds the %llu bytes of memory of %s",
                (unsigned long long)cap, (unsigned long long)mem, what);
    }
    if (cfg->hugepages) {
        /* Huge pages come from the reserved pool only (MAP_NORESERVE
         * would turn a shortfall into SIGBUS at first touch). */
        uint64_t huge = huge_memory(cfg->numa_node, use_numa);
        if (cap > huge) {
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                    "DDR capacity %llu bytes exceeds the %llu bytes of 2 MiB "
                    "huge pages configured on %s",
                    (unsigned long long)cap, (unsigned long long)huge, what);
        }
    }

    /* Huge-page arenas reserve their whole mapping from the huge-page
     * pool, so their space stays the capacity. */
    uint64_t space = cfg->arena_space && !cfg->hugepages
                         ? cfg->arena_space & ~(cfg->align - 1)
                         : cap;
    if (space < cap || space > TIER_ARENA_SPACE_MAX) {
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "arena space %llu must be between the DDR "
                "capacity %llu and %llu",
                (unsigned long long)cfg->arena_space, (unsigned long long)cap,
                (unsigned long long)TIER_ARENA_SPACE_MAX);
    }
    ret->capacity = cap;
    ret->arena_space = space;
    ret->use_numa = use_numa;
    return 0;
}

/* Step 2 of tier_ddr_new: probe mlock once on a scratch page, so the
 * daemon can report at start whether locking works at all (a later
 * refusal is recorded the same way). */
static void ddr_probe_lock(tier_ddr *d)
{
    long pg = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    d->lock_ok = true;
    if (p == MAP_FAILED) {
        lock_refused(d, errno);
        return;
    }
    if (sys_mlock(p, (size_t)pg) != 0) {
        lock_refused(d, errno);
    } else {
        sys_munlock(p, (size_t)pg);
        snprintf(d->lock_detail, sizeof(d->lock_detail), "pages locked");
    }
    munmap(p, (size_t)pg);
}

int tier_ddr_new(const tier_ddr_config *cfg, tier_ddr **ret, char *err,
                 size_t errlen)
{
    ddr_plan plan = {0};
    tier_ddr *d;
    int rc;

    if (!cfg || !ret)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "no configuration");
    rc = ddr_check_config(cfg, &plan, err, errlen);
    if (rc < 0)
        return rc;
    d = calloc(1, sizeof(*d));
    if (!d)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    d->capacity = plan.capacity;
    d->arena_space = plan.arena_space;
    d->align = cfg->align;
    d->numa_node = cfg->numa_node;
    d->lock = cfg->lock;
    d->hugepages = cfg->hugepages;
    d->numa_ok = plan.use_numa;
    d->next_id = 1;
    if (cfg->numa_node < 0)
        snprintf(d->numa_detail, sizeof(d->numa_detail),
                 "no NUMA binding configured");
    else if (!plan.use_numa)
        snprintf(d->numa_detail, sizeof(d->numa_detail),
                 "NUMA unavailable: node %d not bound", cfg->numa_node);
    else
        snprintf(d->numa_detail, sizeof(d->numa_detail),
                 "bound to NUMA node %d", cfg->numa_node);
    if (cfg->lock)
        ddr_probe_lock(d);
    else
        snprintf(d->lock_detail, sizeof(d->lock_detail),
                 "locking not configured");
    *ret = d;
    return 0;
}

tier_ddr *tier_ddr_free(tier_ddr *d)
{
    if (!d)
        return NULL;
    while (d->arenas)
        tier_arena_free(d->arenas);
    free(d);
    return NULL;
}

/* memfd names show up in /proc/<pid>/fd and maps: keep them readable. */
static void sanitize_owner(char *dst, size_t n, const char *src)
{
    size_t i;

    for (i = 0; src && src[i] && i + 1 < n; i++) {
        char c = src[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                  c == '.' || c == ':' || c == '@';
        dst[i] = ok ? c : '_';
    }
    dst[i] = '\0';
}

static int bind_node(tier_ddr *d, void *base, uint64_t len)
{
    unsigned long mask[TIER_DDR_NUMA_NODES_MAX / (8 * sizeof(unsigned long))];
    int node = d->numa_node;

    memset(mask, 0, sizeof(mask));
    mask[node / (8 * sizeof(unsigned long))] |=
        1UL << (node % (8 * sizeof(unsigned long)));
    /* On a shared mapping this sets the shmem file's shared policy, so
     * the pages faulted through the clients' mappings land there too. */
    if (mbind(base, len, MPOL_BIND, mask, TIER_DDR_NUMA_NODES_MAX + 1, 0) != 0)
        return -errno;
    return 0;
}

/* Step 1 of tier_arena_new: the memfd, at its full size (sparse), then
 * sealed against any size change by anyone: shrinking would pull pages
 * from under the clients' mappings, growing would let a client map and
 * touch more than the pool charges.  0 or -1 with the sentence in err. */
static int arena_open_memfd(tier_arena *a, char *err, size_t errlen)
{
    unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
    char name[96];

    snprintf(name, sizeof(name), "hyperoffload-arena-%llu-%s",
             (unsigned long long)a->id, a->owner);
    if (a->ddr->hugepages)
        flags |= MFD_HUGETLB;
    a->fd = memfd_create(name, flags);
    if (a->fd < 0)
        return ho_errf(err, errlen, -1, "memfd_create: %s", strerror(errno));
    if (ftruncate(a->fd, (off_t)a->map_size) != 0)
        return ho_errf(err, errlen, -1, "sizing the arena to %llu bytes: %s",
                       (unsigned long long)a->map_size, strerror(errno));
    if (fcntl(a->fd, F_ADD_SEALS,
              F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
        return ho_errf(err, errlen, -1, "sealing the arena: %s",
                       strerror(errno));
    return 0;
}

/* Step 2 of tier_arena_new: the daemon's shared mapping, bound to the NUMA
 * node (a failing mbind turns binding off for the pool and says why in
 * stats.detail), and a check that the file has the size it was given.
 * 0 or -1 with the sentence in err. */
static int arena_map(tier_arena *a, char *err, size_t errlen)
{
    tier_ddr *d = a->ddr;
    struct stat st;

    a->base = mmap(NULL, a->map_size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_NORESERVE, a->fd, 0);
    if (a->base == MAP_FAILED)
        return ho_errf(err, errlen, -1, "mmap of %llu bytes: %s",
                       (unsigned long long)a->map_size, strerror(errno));
    if (d->numa_ok) {
        int rc = bind_node(d, a->base, a->map_size);
        if (rc < 0) {
            /* Stop trying: stats then say why the pool is not bound. */
            snprintf(d->numa_detail, sizeof(d->numa_detail),
                     "mbind to NUMA node %d failed: %s; not bound",
                     d->numa_node, strerror(-rc));
            d->numa_ok = false;
        }
    }
    if (fstat(a->fd, &st) != 0 || (uint64_t)st.st_size != a->map_size)
        return ho_errf(err, errlen, -1, "the arena file is not %llu bytes "
                       "after sizing", (unsigned long long)a->map_size);
    return 0;
}

tier_arena *tier_arena_new(tier_ddr *d, const char *owner, char *err,
                           size_t errlen)
{
    tier_arena *a;

    if (d->narenas >= TIER_DDR_ARENAS_MAX) {
        ho_errf(err, errlen, 0, "too many arenas (%u)", d->narenas);
        return NULL;
    }
    a = calloc(1, sizeof(*a));
    if (!a) {
        ho_errf(err, errlen, 0, "out of memory");
        return NULL;
    }
    a->fd = -1;
    a->base = MAP_FAILED;
    a->ddr = d;
    a->id = d->next_id;
    a->map_size = d->arena_space;
    sanitize_owner(a->owner, sizeof(a->owner), owner);
    if (arena_open_memfd(a, err, errlen) < 0 || arena_map(a, err, errlen) < 0)
        goto fail;
    a->ext = tier_extents_new(a->map_size, d->align);
    if (!a->ext) {
        ho_errf(err, errlen, 0, "out of memory");
        goto fail;
    }
    d->next_id++;
    a->next = d->arenas;
    if (d->arenas)
        d->arenas->prev = a;
    d->arenas = a;
    d->narenas++;
    return a;
fail:
    if (a->base != MAP_FAILED)
        munmap(a->base, a->map_size);
    if (a->fd >= 0)
        close(a->fd);
    free(a);
    return NULL;
}

tier_arena *tier_arena_free(tier_arena *a)
{
    tier_ddr *d;

    if (!a)
        return NULL;
    d = a->ddr;
    /* Clients may still map the file: punch it so the memory goes back to
     * the kernel now, not when the last client unmaps. */
    if (a->hwm > 0)
        (void)punch(a->fd, 0, a->hwm);
    munmap(a->base, a->map_size);
    close(a->fd);
    tier_extents_free(a->ext);
    d->used -= a->resident; /* its extents die with it */
    if (a->prev)
        a->prev->next = a->next;
    else
        d->arenas = a->next;
    if (a->next)
        a->next->prev = a->prev;
    d->narenas--;
    free(a);
    return NULL;
}

uint64_t tier_arena_id(const tier_arena *a)
{
    return a->id;
}

int tier_arena_fd(const tier_arena *a)
{
    return a->fd;
}

uint64_t tier_arena_map_size(const tier_arena *a)
{
    return a->map_size;
}

uint8_t *tier_arena_base(const tier_arena *a)
{
    return a->base;
}

void tier_arena_stats_get(const tier_arena *a, tier_arena_stats *ret)
{
    tier_extents_stats es;

    tier_extents_stats_get(a->ext, &es);
    ret->resident = a->resident;
    ret->reserved = es.used;
    ret->committed = a->hwm;
    ret->extents = es.allocations;
    ret->largest_free = es.largest_free;
}

/* ---- the state of an allocation ----
 * The transitions (tiers/ddr.h lists them with their functions) change
 * two things together: the extent tag (DDR_TAG_EVICTED or 0) and the
 * pool's charge (d->used, a->resident).  These helpers keep them in step. */

static void charge(tier_arena *a, uint64_t alen)
{
    a->ddr->used += alen;
    a->resident += alen;
}

static void uncharge(tier_arena *a, uint64_t alen)
{
    a->ddr->used -= alen;
    a->resident -= alen;
}

/* RESIDENT -> EVICTED bookkeeping (the pages are gone already). */
static void become_evicted(tier_arena *a, uint64_t off, uint64_t alen)
{
    (void)tier_extents_set_tag(a->ext, off, DDR_TAG_EVICTED);
    uncharge(a, alen);
}

/* Allocate offsets for len bytes; charge (and lock) them when `charge`,
 * else tag the allocation evicted. */
static int alloc_range(tier_arena *a, uint64_t len, bool charge_it,
                       uint64_t *ret_off, uint64_t *ret_len)
{
    tier_ddr *d = a->ddr;
    uint64_t rlen, off, alen, end;
    int rc;

    if (len == 0 || !tier_align_up(len, d->align, &rlen))
        return HO_E_INVALID_SIZE;
    if (rlen > d->capacity)
        return HO_E_TOO_LARGE;
    if (charge_it && rlen > d->capacity - d->used)
        return HO_E_TIER_FULL;
    rc = tier_extents_alloc(a->ext, rlen, &off, &alen);
    if (rc < 0)
        return rc;
    end = off + alen;
    if (end > a->hwm) {
        uint64_t hwm = (end + DDR_GROW_STEP - 1) & ~(DDR_GROW_STEP - 1);
        a->hwm = hwm < a->map_size ? hwm : a->map_size;
    }
    if (charge_it) {
        lock_range(d, a->base + off, alen);
        charge(a, alen);
    } else {
        (void)tier_extents_set_tag(a->ext, off, DDR_TAG_EVICTED);
    }
    *ret_off = off;
    if (ret_len)
        *ret_len = alen;
    return 0;
}

int tier_arena_alloc(tier_arena *a, uint64_t len, uint64_t *ret_off,
                     uint64_t *ret_len)
{
    return alloc_range(a, len, true, ret_off, ret_len);
}

int tier_arena_reserve(tier_arena *a, uint64_t len, uint64_t *ret_off,
                       uint64_t *ret_len)
{
    return alloc_range(a, len, false, ret_off, ret_len);
}

/* The live allocation [off, off+len): its rounded length into *ret_len;
 * 0 when resident, 1 when evicted, HO_E_UNKNOWN_EXTENT. */
static int find_alloc(const tier_arena *a, uint64_t off, uint64_t len,
                      uint64_t *ret_len)
{
    uint64_t rlen, alen;
    uint32_t tag = 0;

    if (len == 0 || !tier_align_up(len, a->ddr->align, &rlen))
        return HO_E_UNKNOWN_EXTENT;
    alen = tier_extents_lookup(a->ext, off);
    if (alen == 0 || alen != rlen)
        return HO_E_UNKNOWN_EXTENT;
    if (tier_extents_get_tag(a->ext, off, &tag) < 0)
        return HO_E_UNKNOWN_EXTENT;
    *ret_len = alen;
    return (tag & DDR_TAG_EVICTED) != 0;
}

/* The live, resident allocation [off, off+len): its rounded length.
 * HO_E_UNKNOWN_EXTENT, HO_E_STATE when it is evicted. */
static int find_resident(const tier_arena *a, uint64_t off, uint64_t len,
                         uint64_t *ret_len)
{
    uint64_t alen;
    int rc = find_alloc(a, off, len, &alen);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return HO_E_STATE;
    *ret_len = alen;
    return 0;
}

int tier_arena_release(tier_arena *a, uint64_t off, uint64_t len)
{
    uint64_t alen;
    int rc = find_alloc(a, off, len, &alen);

    if (rc < 0)
        return rc;
    if (rc == 0) { /* resident: its pages go back */
        unlock_range(a->ddr, a->base + off, alen);
        rc = punch(a->fd, off, alen);
        if (rc < 0)
            return rc;
        uncharge(a, alen);
    }
    return tier_extents_release(a->ext, off, alen);
}

/* What may be done to a live, resident allocation. */
typedef enum resident_op {
    RES_EVICT,        /* drop its pages here, then mark it evicted */
    RES_MARK_EVICTED, /* its pages were dropped elsewhere: mark it */
    RES_LOCK,         /* lock its pages */
} resident_op;

/* op on the live, resident allocation [off, off+len).  0,
 * HO_E_UNKNOWN_EXTENT, HO_E_STATE (evicted) or the punch's error (the
 * pages then stay locked and resident). */
static int on_resident(tier_arena *a, uint64_t off, uint64_t len,
                       resident_op op)
{
    uint64_t alen;
    int rc = find_resident(a, off, len, &alen);

    if (rc < 0)
        return rc;
    if (op == RES_LOCK) {
        lock_range(a->ddr, a->base + off, alen);
        return 0;
    }
    if (op == RES_EVICT) {
        unlock_range(a->ddr, a->base + off, alen);
        rc = punch(a->fd, off, alen);
        if (rc < 0) {
            lock_range(a->ddr, a->base + off, alen);
            return rc;
        }
    }
    become_evicted(a, off, alen);
    return 0;
}

int tier_arena_evict(tier_arena *a, uint64_t off, uint64_t len)
{
    return on_resident(a, off, len, RES_EVICT);
}

static int restore(tier_arena *a, uint64_t off, uint64_t len, bool lock)
{
    tier_ddr *d = a->ddr;
    uint64_t alen;
    int rc = find_alloc(a, off, len, &alen);

    if (rc < 0)
        return rc;
    if (rc == 0) /* resident */
        return HO_E_STATE;
    if (alen > d->capacity - d->used)
        return HO_E_TIER_FULL;
    (void)tier_extents_set_tag(a->ext, off, 0);
    if (lock)
        lock_range(d, a->base + off, alen);
    charge(a, alen);
    return 0;
}

int tier_arena_restore(tier_arena *a, uint64_t off, uint64_t len)
{
    return restore(a, off, len, true);
}

int tier_arena_restore_unlocked(tier_arena *a, uint64_t off, uint64_t len)
{
    return restore(a, off, len, false);
}

int tier_arena_lock(tier_arena *a, uint64_t off, uint64_t len)
{
    return on_resident(a, off, len, RES_LOCK);
}

/* ---- page work that may run on worker threads ---- */

/* [off, off+len) is a non-empty range inside the arena's mapping. */
static bool in_mapping(const tier_arena *a, uint64_t off, uint64_t len)
{
    return len > 0 && off <= a->map_size && len <= a->map_size - off;
}

int tier_arena_pages_drop(const tier_arena *a, uint64_t off, uint64_t len)
{
    if (!in_mapping(a, off, len))
        return -EINVAL;
    unlock_range(a->ddr, a->base + off, len);
    return punch(a->fd, off, len);
}

int tier_arena_pages_lock(const tier_arena *a, uint64_t off, uint64_t len)
{
    if (!in_mapping(a, off, len))
        return -EINVAL;
    return sys_mlock(a->base + off, len) == 0 ? 0 : -errno;
}

bool tier_arena_locking(const tier_arena *a)
{
    return a->ddr->lock_ok;
}

void tier_arena_lock_refused(tier_arena *a, int err)
{
    if (a->ddr->lock_ok && err < 0)
        lock_refused(a->ddr, -err);
}

int tier_arena_mark_evicted(tier_arena *a, uint64_t off, uint64_t len)
{
    return on_resident(a, off, len, RES_MARK_EVICTED);
}

int tier_arena_is_evicted(const tier_arena *a, uint64_t off, uint64_t len)
{
    uint64_t alen;

    return find_alloc(a, off, len, &alen);
}

void tier_ddr_stats_get(const tier_ddr *d, tier_ddr_stats *ret)
{
    const tier_arena *a;
    uint64_t largest_block = 0, extents = 0, committed = 0;

    memset(ret, 0, sizeof(*ret));
    for (a = d->arenas; a; a = a->next) {
        tier_extents_stats es;
        tier_extents_stats_get(a->ext, &es);
        if (es.largest_free > largest_block)
            largest_block = es.largest_free;
        extents += es.allocations;
        committed += a->hwm;
    }
    ret->capacity = d->capacity;
    ret->used = d->used;
    ret->committed = committed;
    ret->largest_free = d->capacity - d->used;
    /* A new arena would offer the whole free budget in one block. */
    if (d->arenas && largest_block < ret->largest_free)
        ret->largest_free = largest_block;
    ret->fragmentation = d->capacity == d->used
        ? 0.0
        : 1.0 - (double)ret->largest_free / (double)(d->capacity - d->used);
    ret->extents = extents;
    ret->arenas = d->narenas;
    ret->locked = d->lock && d->lock_ok;
    ret->numa_node = d->numa_ok ? d->numa_node : -1;
    snprintf(ret->detail, sizeof(ret->detail), "%s; %s", d->numa_detail,
             d->lock_detail);
}
