/*
 * client/backends/backend_host.c - the "host" device backend: device
 * memory is a pre-faulted anonymous region of this process, copies are
 * memcpy on copy threads (one per engine).  Runs anywhere; it is what
 * tests, benchmarks and GPU-less machines use, and it fails exactly where
 * a real device would (the capacity is enforced by the generic layer).
 *
 * Engine: a ring of `depth` copy descriptors.  The replay thread (single
 * producer) fills the slot of ticket head+1 and publishes head; the copy
 * thread (single consumer) copies and publishes `done`.  Neither side
 * takes a lock.  An idle copy thread spins for up to 20 us (on machines
 * with enough CPUs), then sleeps on the futex word `wake`; the producer makes the wake-up system call
 * only when the thread announced that it sleeps.  A waiter spins briefly
 * (same condition), then sleeps on `done_seq`, which the copy thread bumps and wakes only
 * when someone announced waiting.  The announcements and the re-checks are
 * sequentially consistent, so no wake-up is lost.
 *
 * Copy times (hob_times): the copy thread reads the clock right before
 * and right after the memcpy (after the dependency wait), and writes them
 * before it publishes `done`, so they are visible to whoever sees the
 * ticket complete.
 *
 * Ownership: the state owns the region (munmap at close); an engine owns
 * its ring and thread (joined by engine_free after the queue drained).
 */
#include "client/backends/backend.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"

/* Spinning pays only when every busy thread has a core of its own: the
 * replay thread and the copy threads.  With fewer CPUs a spinning thread
 * takes the core the thread it waits for needs, so nobody spins. */
#define SPIN_MIN_CPUS 4
#define SPIN_IDLE_NS 20000u  /* an idle copy thread stays awake this long */
#define SPIN_WAIT 1000u      /* pause rounds a waiter spins before sleeping */

typedef struct host_state {
    uint8_t *base;
    uint64_t size;
    int index;                  /* the device index: its link pacing */
} host_state;

typedef struct copy_desc {
    void *dst;
    const void *src;
    uint64_t n;
    hob_engine *dep;
    uint64_t dep_ticket;
    hob_times *tm;              /* NULL: not timed */
    hob_dir dir;
} copy_desc;

struct hob_engine {
    host_state *st;
    uint32_t depth, mask;
    uint32_t spin_idle_ns, spin_wait;  /* 0 on small machines */
    copy_desc *ring;            /* owned */
    pthread_t thread;
    uint64_t submitted;         /* producer's copy of head */

    _Alignas(64) _Atomic uint64_t head;  /* tickets submitted */
    _Atomic uint32_t wake;               /* futex: wakes the copy thread */
    _Atomic uint32_t sleeping;
    _Atomic uint32_t stop;

    _Alignas(64) _Atomic uint64_t done;  /* tickets completed */
    _Atomic uint32_t done_seq;           /* futex: wakes waiters */
    _Atomic uint32_t waiters;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, NULL,
            NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int n)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL,
            0);
}

/* ----------------------------------------------------------- state */

static const char *host_unavailable(void)
{
    return NULL;
}

static int host_open(int index, uint64_t region_bytes, void **ret_state,
                     char *err, size_t errlen)
{
    long page = sysconf(_SC_PAGESIZE);
    if (region_bytes == 0 || region_bytes > SIZE_MAX - (uint64_t)page)
        return ho_errf(err, errlen, HO_E_INVALID_SIZE,
                       "device region of %llu bytes",
                       (unsigned long long)region_bytes);
    uint64_t size = (region_bytes + (uint64_t)page - 1) &
                    ~((uint64_t)page - 1);
    host_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    /* Pre-faulted: copies into device memory never pay first-touch page
     * faults, as on a real device. */
    void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
        int rc = -errno;
        free(st);
        return ho_errf(err, errlen, rc, "cannot map %llu bytes of emulated "
                       "device memory: %s", (unsigned long long)size,
                       strerror(-rc));
    }
    st->base = p;
    st->size = size;
    st->index = index;
    *ret_state = st;
    return 0;
}

static void *host_close(void *state)
{
    host_state *st = state;
    if (!st)
        return NULL;
    munmap(st->base, (size_t)st->size);
    free(st);
    return NULL;
}

static void host_region(void *state, uint8_t **ret_base, uint64_t *ret_size)
{
    host_state *st = state;
    *ret_base = st->base;
    *ret_size = st->size;
}

static int host_copy_sync(void *state, hob_dir dir, void *dst,
                          const void *src, uint64_t n)
{
    (void)state;
    (void)dir;
    memcpy(dst, src, (size_t)n);
    return 0;
}

/* ----------------------------------------------------------- engines */

static uint64_t host_completed(hob_engine *e)
{
    return atomic_load_explicit(&e->done, memory_order_acquire);
}

static int host_wait(hob_engine *e, uint64_t t)
{
    if (host_completed(e) >= t)
        return 0;
    for (unsigned i = 0; i < e->spin_wait; i++) {
        cpu_relax();
        if (host_completed(e) >= t)
            return 0;
    }
    atomic_fetch_add(&e->waiters, 1);
    for (;;) {
        uint32_t seq = atomic_load(&e->done_seq);
        if (atomic_load(&e->done) >= t)
            break;
        futex_wait(&e->done_seq, seq);
    }
    atomic_fetch_sub(&e->waiters, 1);
    return 0;
}

static void *copy_thread(void *arg)
{
    hob_engine *e = arg;
    uint64_t done = 0;
    for (;;) {
        uint64_t head = atomic_load_explicit(&e->head, memory_order_acquire);
        if (done < head) {
            const copy_desc *d = &e->ring[done & e->mask];
            if (d->dep)
                host_wait(d->dep, d->dep_ticket);
            hob_times *tm = d->tm;
            if (tm)
                tm->start_ns = hob_now_ns();
            /* at the fair share of the node's links (backend_pace.c) */
            hob_paced_copy(e->st->index, d->dir, d->dst, d->src, d->n);
            if (tm)
                tm->end_ns = hob_now_ns();
            done++;
            atomic_store(&e->done, done);
            if (atomic_load(&e->waiters)) {
                atomic_fetch_add(&e->done_seq, 1);
                futex_wake(&e->done_seq, INT_MAX);
            }
            continue;
        }
        if (atomic_load(&e->stop))
            break;
        /* Copies tend to come in bursts: stay awake a little while. */
        bool more = false;
        uint64_t t0 = e->spin_idle_ns ? hob_now_ns() : 0;
        for (unsigned i = 1; !more && e->spin_idle_ns; i++) {
            cpu_relax();
            more = atomic_load_explicit(&e->head, memory_order_relaxed) !=
                       done ||
                   atomic_load_explicit(&e->stop, memory_order_relaxed);
            if (i % 64 == 0 && hob_now_ns() - t0 > e->spin_idle_ns)
                break;
        }
        if (more)
            continue;
        uint32_t w = atomic_load(&e->wake);
        atomic_store(&e->sleeping, 1);
        if (atomic_load(&e->head) == done && !atomic_load(&e->stop))
            futex_wait(&e->wake, w);
        atomic_store(&e->sleeping, 0);
    }
    return NULL;
}

static void kick(hob_engine *e)
{
    if (atomic_load(&e->sleeping)) {
        atomic_fetch_add(&e->wake, 1);
        futex_wake(&e->wake, 1);
    }
}

static int host_engine_new(void *state, uint32_t depth, hob_engine **ret,
                           char *err, size_t errlen)
{
    int rc = hob_check_depth(depth, HOB_HOST_DEPTH_MAX, err, errlen);
    if (rc < 0)
        return rc;
    hob_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->st = state;
    e->depth = depth;
    e->mask = depth - 1;
    if (sysconf(_SC_NPROCESSORS_ONLN) >= SPIN_MIN_CPUS) {
        e->spin_idle_ns = SPIN_IDLE_NS;
        e->spin_wait = SPIN_WAIT;
    }
    e->ring = calloc(depth, sizeof(*e->ring));
    if (!e->ring) {
        free(e);
        return -ENOMEM;
    }
    rc = pthread_create(&e->thread, NULL, copy_thread, e);
    if (rc != 0) {
        free(e->ring);
        free(e);
        return ho_errf(err, errlen, -rc, "cannot start a copy thread: %s",
                       strerror(rc));
    }
    *ret = e;
    return 0;
}

static hob_engine *host_engine_free(hob_engine *e)
{
    if (!e)
        return NULL;
    atomic_store(&e->stop, 1);
    atomic_fetch_add(&e->wake, 1);
    futex_wake(&e->wake, 1);
    pthread_join(e->thread, NULL);
    free(e->ring);
    free(e);
    return NULL;
}

static int host_submit(hob_engine *e, hob_dir dir, void *dst,
                       const void *src, uint64_t n, hob_engine *dep,
                       uint64_t dep_ticket, hob_times *tm,
                       uint64_t *ret_ticket)
{
    uint64_t h = e->submitted;
    if (h - host_completed(e) >= e->depth)
        host_wait(e, h - e->depth + 1);
    copy_desc *d = &e->ring[h & e->mask];
    d->dst = dst;
    d->src = src;
    d->n = n;
    /* A dependency on this engine itself holds by FIFO order. */
    d->dep = dep && dep != e && host_completed(dep) < dep_ticket ? dep
                                                                 : NULL;
    d->dep_ticket = dep_ticket;
    d->tm = tm;
    d->dir = dir;
    e->submitted = h + 1;
    atomic_store(&e->head, h + 1);
    kick(e);
    *ret_ticket = h + 1;
    return 0;
}

/* Ops run synchronously in the hooks: every compute fence is complete. */
static int host_compute_mark(void *state, uint64_t *ret_ticket)
{
    (void)state;
    *ret_ticket = 0;
    return 0;
}

static uint64_t host_compute_completed(void *state)
{
    (void)state;
    return UINT64_MAX;
}

static int host_compute_wait(void *state, uint64_t t)
{
    (void)state;
    (void)t;
    return 0;
}

const hob_ops hob_host_ops = {
    .name = "host",
    .unavailable = host_unavailable,
    .open = host_open,
    .close = host_close,
    .region = host_region,
    .copy_sync = host_copy_sync,
    .host_register = NULL, /* host memory needs no registering */
    .host_unregister = NULL,
    .engine_new = host_engine_new,
    .engine_free = host_engine_free,
    .submit = host_submit,
    .completed = host_completed,
    .wait = host_wait,
    .compute_mark = host_compute_mark,
    .compute_completed = host_compute_completed,
    .compute_wait = host_compute_wait,
    .set_compute_stream = NULL, /* no streams */
    .timing = NULL, /* tm costs two clock reads: always honoured */
    .epoch = NULL,
};
