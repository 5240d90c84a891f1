/*
 * daemon/mover.c - worker-job accounting, and moves of arena ranges
 * between DDR and flash on worker threads, page work included (see
 * mover.h).
 *
 * A move is cut into chunks of SRV_MOVE_CHUNK bytes, served by up to
 * SRV_MOVE_PARTS_MAX parts (each a uv_work_t on a libuv worker; part k
 * takes the k-th contiguous run of chunks), so several flash requests are
 * in flight and the page work of one part overlaps the I/O of others:
 *   SPILL  per chunk: write it to flash, then drop its pages (munlock +
 *          punch: ~45-70 ms per 256 MiB that do not get faster with more
 *          threads, but run while other chunks are written).  Once a
 *          write failed, no further chunk is dropped, and the chunks that
 *          were are read back from flash (recovery phase) before the
 *          failure is reported: a failed spill leaves the data in DDR.
 *   WRITE  per part: write its range to flash (the pages stay).
 *   FILL   per part: read its range into the memfd (one fd transfer, which
 *          pipelines its own chunks; pwrite allocates the pages directly),
 *          then mlock it when the pool locks.
 *   DROP   per part: drop its range's pages.
 * The loop only starts phases and reports the result; bookkeeping (pool
 * charge, extent state) stays with the caller on the loop thread.
 *
 * Ownership: the move object is allocated here and freed after the
 * completion callback; the caller keeps the arena alive until then.
 */
#include "daemon/mover.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/log.h"

typedef struct move_part {
    uv_work_t req;
    struct srv_move *m;
    uint32_t index;          /* part k takes the k-th contiguous run of
                                ceil(n_chunks / n_parts) chunks */
    int rc;
    int lock_rc;
    struct timespec t0, t1;
} move_part;

typedef enum move_phase { PHASE_MAIN, PHASE_RECOVER } move_phase;

struct srv_move {
    srv_move_args a;
    srv_daemon *d;
    srv_move_cb *cb;
    void *ctx;
    tier_arena *arena;
    uint8_t *base;
    int memfd;
    bool lock;               /* fill: mlock the pages afterwards */
    bool spill_fd;           /* write through the memfd (bounce buffers) */
    move_phase phase;
    uint32_t n_chunks;
    uint8_t *dropped;        /* SPILL: chunk pages dropped (owned) */
    atomic_int failed;       /* SPILL: a write failed, stop dropping */
    uint32_t n_parts, left;
    int rc;
    struct timespec t0, t1;  /* span of the main phase over the parts */
    move_part parts[SRV_MOVE_PARTS_MAX];
};

/* ------------------------------------------------------------ jobs */

void srv_work_begin(srv_daemon *d)
{
    d->works_in_flight++;
}

void srv_work_end(srv_daemon *d)
{
    d->works_in_flight--;
    if (d->draining && d->works_in_flight == 0 && d->on_works_drained)
        d->on_works_drained(d);
}

/* ------------------------------------------------------------ moves */

static double ts_us(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e6 +
           (double)(b->tv_nsec - a->tv_nsec) / 1e3;
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec ||
           (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static int write_chunk(struct srv_move *m, uint64_t off, uint64_t foff,
                       uint64_t len)
{
    if (m->spill_fd)
        return tier_flash_write_fd(m->a.flash, foff, m->memfd, off, len);
    return tier_flash_write(m->a.flash, foff, m->base + off, len);
}

static int read_chunk(struct srv_move *m, uint64_t off, uint64_t foff,
                      uint64_t len)
{
    if (m->memfd >= 0)
        return tier_flash_read_fd(m->a.flash, foff, m->memfd, off, len);
    return tier_flash_read(m->a.flash, foff, m->base + off, len);
}

/* Part p's chunks: [first, end) of the move's chunks, contiguous. */
static void part_chunks(const struct srv_move *m, const move_part *p,
                        uint32_t *ret_first, uint32_t *ret_end)
{
    uint32_t per = (m->n_chunks + m->n_parts - 1) / m->n_parts;
    uint64_t f = (uint64_t)p->index * per, e = f + per;
    *ret_first = f < m->n_chunks ? (uint32_t)f : m->n_chunks;
    *ret_end = e < m->n_chunks ? (uint32_t)e : m->n_chunks;
}

/* WRITE, FILL or DROP of the chunks [first, end) in one call over their
 * range: the fd transfers pipeline their chunks internally. */
static int part_whole(struct srv_move *m, move_part *p, uint32_t first,
                      uint32_t end)
{
    uint64_t rel = (uint64_t)first * SRV_MOVE_CHUNK;
    uint64_t rel_end = (uint64_t)end * SRV_MOVE_CHUNK;
    if (rel_end > m->a.len)
        rel_end = m->a.len;
    uint64_t off = m->a.off + rel, foff = m->a.flash_off + rel;
    uint64_t len = rel_end - rel;
    int rc;
    switch (m->a.kind) {
    case SRV_MOVE_WRITE:
        return write_chunk(m, off, foff, len);
    case SRV_MOVE_FILL:
        rc = read_chunk(m, off, foff, len);
        if (rc == 0 && m->lock)
            p->lock_rc = tier_arena_pages_lock(m->arena, off, len);
        return rc;
    default:
        return tier_arena_pages_drop(m->arena, off, len);
    }
}

/* One chunk of a SPILL: write it, then drop its pages while the other
 * parts write theirs -- unless a write failed somewhere; in the recovery
 * phase, read back a chunk whose pages were dropped. */
static int spill_chunk(struct srv_move *m, uint32_t c)
{
    uint64_t rel = (uint64_t)c * SRV_MOVE_CHUNK;
    uint64_t len = m->a.len - rel < SRV_MOVE_CHUNK ? m->a.len - rel
                                                   : SRV_MOVE_CHUNK;
    uint64_t off = m->a.off + rel, foff = m->a.flash_off + rel;
    if (m->phase == PHASE_RECOVER)
        return m->dropped[c] ? read_chunk(m, off, foff, len) : 0;
    int rc = write_chunk(m, off, foff, len);
    if (rc < 0) {
        atomic_store(&m->failed, 1);
    } else if (!atomic_load(&m->failed)) {
        rc = tier_arena_pages_drop(m->arena, off, len);
        if (rc == 0)
            m->dropped[c] = 1;
        else
            atomic_store(&m->failed, 1);
    }
    return rc;
}

static void part_work(uv_work_t *req)
{
    move_part *p = req->data;
    struct srv_move *m = p->m;
    uint32_t first, end;
    part_chunks(m, p, &first, &end);
    clock_gettime(CLOCK_MONOTONIC, &p->t0);
    if (first < end && m->phase == PHASE_MAIN &&
        m->a.kind != SRV_MOVE_SPILL) {
        p->rc = part_whole(m, p, first, end);
    } else {
        for (uint32_t c = first; c < end; c++) {
            int rc = spill_chunk(m, c);
            if (rc < 0) {
                if (p->rc == 0)
                    p->rc = rc;
                break;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &p->t1);
}

static int start_phase(struct srv_move *m);

static void meter_start(srv_daemon *d, bool fill)
{
    srv_flash_meter *mt = &d->flash_meter[fill ? 0 : 1];
    if (mt->in_flight++ == 0) {
        mt->bytes = 0;
        clock_gettime(CLOCK_MONOTONIC, &mt->since);
    }
}

static void meter_stop(srv_daemon *d, bool fill, uint64_t bytes)
{
    srv_flash_meter *mt = &d->flash_meter[fill ? 0 : 1];
    struct timespec now;
    mt->bytes += bytes;
    mt->total_bytes += bytes;
    if (mt->in_flight == 0 || --mt->in_flight > 0)
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double us = ts_us(&mt->since, &now);
    mt->busy_s += us / 1e6;
    if (mt->bytes >= SRV_METER_MIN_BYTES && us > 0) {
        double *avg = fill ? &d->flash_read_gbps : &d->flash_write_gbps;
        *avg = 0.7 * *avg + 0.3 * ((double)mt->bytes / us / 1e3);
    }
}

static void finish(struct srv_move *m)
{
    srv_daemon *d = m->d;
    double us = m->t0.tv_sec ? ts_us(&m->t0, &m->t1) : 0;
    srv_debug("move %d of %llu bytes, %u chunks in %u parts: %.1f ms%s",
              (int)m->a.kind, (unsigned long long)m->a.len, m->n_chunks,
              m->n_parts, us / 1e3, m->rc ? " (failed)" : "");
    /* Learn the flash bandwidth (staging plans use it). */
    if (m->a.kind != SRV_MOVE_DROP)
        meter_stop(d, m->a.kind == SRV_MOVE_FILL,
                   m->rc == 0 ? m->a.len : 0);
    m->cb(d, m->ctx, m->rc, us);
    free(m->dropped);
    free(m);
    srv_work_end(d);
}

static void part_after(uv_work_t *req, int status)
{
    move_part *p = req->data;
    struct srv_move *m = p->m;
    if (status < 0 && p->rc == 0)
        p->rc = status;
    if (m->phase == PHASE_MAIN) {
        if (p->rc < 0 && m->rc == 0)
            m->rc = p->rc;
        if (p->lock_rc < 0)
            tier_arena_lock_refused(m->arena, p->lock_rc);
        if (ts_before(&p->t0, &m->t0) || m->t0.tv_sec == 0)
            m->t0 = p->t0;
        if (ts_before(&m->t1, &p->t1))
            m->t1 = p->t1;
    } else if (p->rc < 0) {
        srv_err("spill of arena range %llu+%llu failed and its data could "
                "not be read back from flash: %s; the range is lost",
                (unsigned long long)m->a.off, (unsigned long long)m->a.len,
                ho_strerror(p->rc));
    }
    if (--m->left > 0)
        return;
    if (m->phase == PHASE_MAIN && m->rc < 0 && m->a.kind == SRV_MOVE_SPILL) {
        bool any = false;
        for (uint32_t c = 0; c < m->n_chunks && !any; c++)
            any = m->dropped[c] != 0;
        if (any) {
            m->phase = PHASE_RECOVER;
            if (start_phase(m) == 0)
                return;
        }
    }
    finish(m);
}

static int start_phase(struct srv_move *m)
{
    uint32_t n = m->n_chunks < SRV_MOVE_PARTS_MAX ? m->n_chunks
                                                  : SRV_MOVE_PARTS_MAX;
    if (m->a.parts_max && n > m->a.parts_max)
        n = m->a.parts_max;
    uint32_t debug_max = m->d->cfg.debug_move_parts;
    if (debug_max && n > debug_max)
        n = debug_max;
    if (n == 0)
        n = 1;
    m->n_parts = n;
    m->left = n;
    for (uint32_t k = 0; k < n; k++) {
        move_part *p = &m->parts[k];
        memset(p, 0, sizeof(*p));
        p->m = m;
        p->index = k;
        p->req.data = p;
    }
    for (uint32_t k = 0; k < n; k++) {
        int rc = uv_queue_work(&m->d->loop, &m->parts[k].req, part_work,
                               part_after);
        if (rc < 0) {
            /* Cannot happen with valid arguments. */
            if (k == 0)
                return HO_E_INTERNAL;
            if (m->rc == 0)
                m->rc = HO_E_INTERNAL;
            m->left = k;      /* the chunks of the other parts are not
                                 moved: the move reports failure */
            return 0;
        }
    }
    return 0;
}

int srv_move_start(srv_daemon *d, const srv_move_args *args, srv_move_cb *cb,
                   void *ctx)
{
    if (!args->len || (args->kind != SRV_MOVE_DROP && !args->flash))
        return -EINVAL;
    struct srv_move *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->a = *args;
    m->d = d;
    m->cb = cb;
    m->ctx = ctx;
    m->arena = args->arena;
    m->base = tier_arena_base(m->arena);
    uint64_t chunks = (args->len + SRV_MOVE_CHUNK - 1) / SRV_MOVE_CHUNK;
    if (chunks > UINT32_MAX) {
        free(m);
        return -EINVAL;
    }
    m->n_chunks = (uint32_t)chunks;
    if (args->kind == SRV_MOVE_SPILL) {
        m->dropped = calloc(m->n_chunks, 1);
        if (!m->dropped) {
            free(m);
            return -ENOMEM;
        }
    }
    /* Fills write through the memfd (cheaper than faulting zeroed pages
     * in); huge-page arenas take no write(2) and fill through the
     * mapping, their pages populated by tier_arena_restore. */
    m->memfd = d->cfg.ddr_hugepages ? -1 : tier_arena_fd(m->arena);
    m->lock = args->kind == SRV_MOVE_FILL && m->memfd >= 0 &&
              tier_arena_locking(m->arena);
    m->spill_fd = m->memfd >= 0 && d->cfg.debug_spill_via_fd;
    m->phase = PHASE_MAIN;
    int rc = start_phase(m);
    if (rc < 0) {
        free(m->dropped);
        free(m);
        return rc;
    }
    srv_work_begin(d);
    if (args->kind != SRV_MOVE_DROP)
        meter_start(d, args->kind == SRV_MOVE_FILL);
    return 0;
}
