/*
 * client/backends/backend.h - the interface every device backend implements
 * ("host": backend_host.c, "cuda": backend_cuda.c), and what the generic
 * device layer (runtime_device.c) and the replay engine use of it.
 *
 * A backend provides
 *   - one region of device memory, fixed at open, which the generic layer
 *     carves into allocations (byte accounting and the capacity limit are
 *     generic, so both backends fail the same way when a plan is wrong);
 *   - synchronous copies for setup and checks;
 *   - registration of host memory (the mapped pool) for fast copies;
 *   - copy engines: FIFO queues of asynchronous copies.  Each copy gets a
 *     ticket, the engine's sequence number (1, 2, ...); an engine completes
 *     its copies in ticket order, so "ticket T done" means every copy up to
 *     T is done.  A copy may depend on a ticket of another engine (it
 *     starts only after that one completed), which is how "a prefetch
 *     waits for the storage's pending store" holds across engines;
 *   - a compute fence: a ticket that completes once the device work the
 *     application enqueued before the mark is done (host: ops run
 *     synchronously in the hooks, so every mark is complete at once; cuda:
 *     an event recorded on the compute stream).  Device memory is released
 *     only after the compute fence taken at its free completes, and a D2H
 *     copy starts only after the compute work enqueued before it.
 *
 * Threading: engine_submit, completed, wait and compute_* are called by
 * one thread (the replay's); a backend's own threads (host copy threads)
 * are internal.  Nothing here allocates memory or makes a system call on
 * the submit/completed path unless it must wake a sleeping copy thread or
 * the engine's queue is full.
 *
 * Errors: 0 or a negative code; open/engine_new describe a failure in
 * err[0..errlen) with ho_errf (proto/errfmt.h): the caller's-buffer style
 * of every layer below the library, whose calls record the sentence as
 * the client's or the thread's last error (hoc_fail, hor_fail).
 */
#ifndef HO_CLIENT_BACKEND_H
#define HO_CLIENT_BACKEND_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "client/client_limits.h" /* HOB_ALIGN, HOB_*_DEPTH_MAX, HOB_CUDA_* */
#include "proto/errfmt.h"

typedef struct hob_engine hob_engine;

typedef enum hob_dir {
    HOB_H2D = 0,  /* host (pool) -> device */
    HOB_D2H = 1,  /* device -> host (pool) */
} hob_dir;

/* Where an engine reports when a copy really ran (the replay's copy
 * log), in CLOCK_MONOTONIC nanoseconds.  issue_ns is the submitter's: when
 * it issued the copy.  start_ns (the copy began moving bytes, after its
 * dependencies and every earlier copy of its engine) and end_ns (it
 * completed) are the backend's, written before the copy's ticket is
 * published complete, so the submitter may read them once completed() or
 * wait() has reported that ticket; left untouched when the copy failed.
 * Host clock reads are reported as read; a backend that maps a device
 * clock onto the host's raises start to issue_ns and end to start where
 * the mapping error shows. */
typedef struct hob_times {
    uint64_t issue_ns, start_ns, end_ns;
} hob_times;

/* Every allocation in the device region is aligned to HOB_ALIGN bytes
 * (client/client_limits.h). */

typedef struct hob_ops {
    const char *name;

    /* Why this backend cannot be opened here, or NULL when it can.  May
     * probe (dlopen) the first time; the answer is static. */
    const char *(*unavailable)(void);

    /* Open device `index` with a region of at least `region_bytes` bytes of
     * device memory (the generic layer asks for the capacity plus room
     * against fragmentation).  *ret_state is the backend's state, released
     * with close().  Host: the region is pre-faulted process memory; cuda:
     * one cudaMalloc.  HO_E_UNSUPPORTED when the backend cannot run here,
     * HO_E_DEVICE / -ENOMEM when the region cannot be had. */
    int (*open)(int index, uint64_t region_bytes, void **ret_state,
                char *err, size_t errlen);
    /* Release the state (and the region).  NULL ok; returns NULL. */
    void *(*close)(void *st);

    /* The device region: its first byte (a device address) and size. */
    void (*region)(void *st, uint8_t **ret_base, uint64_t *ret_size);

    /* Synchronous copy of n bytes (dir: HOB_H2D dst is device memory,
     * HOB_D2H src is).  Waits for earlier compute work (cuda). */
    int (*copy_sync)(void *st, hob_dir dir, void *dst, const void *src,
                     uint64_t n);

    /* Register / unregister host memory used as copy source or target
     * (cuda: cudaHostRegister, so copies run at full link speed).
     * unregister accepts a base that was never registered.  Both NULL
     * where registering has no effect (host). */
    int (*host_register)(void *st, void *base, uint64_t len);
    void (*host_unregister)(void *st, void *base);

    /* A new copy engine with room for `depth` copies in flight (depth is a
     * power of two >= 2); engines of one state are independent FIFOs. */
    int (*engine_new)(void *st, uint32_t depth, hob_engine **ret,
                      char *err, size_t errlen);
    /* Waits for the engine's copies, then frees it.  NULL ok; returns
     * NULL. */
    hob_engine *(*engine_free)(hob_engine *e);

    /* Queue a copy of n bytes on e; it starts after every earlier copy of
     * e and, when dep is not NULL, after dep's ticket dep_ticket.  A D2H
     * also starts after the compute work enqueued so far.  *ret_ticket is
     * its ticket.  Blocks while e has `depth` copies in flight.
     * tm: NULL, or where the copy's times are written (see hob_times); it
     * must stay valid until the ticket is reported complete.  A backend
     * with a `timing` op fills it only while timing is on. */
    int (*submit)(hob_engine *e, hob_dir dir, void *dst, const void *src,
                  uint64_t n, hob_engine *dep, uint64_t dep_ticket,
                  hob_times *tm, uint64_t *ret_ticket);
    /* Highest ticket of e known to be complete (non-blocking). */
    uint64_t (*completed)(hob_engine *e);
    /* Block until ticket t of e is complete.  0, or HO_E_DEVICE when the
     * copy failed (cuda error). */
    int (*wait)(hob_engine *e, uint64_t t);

    /* Compute fence (see above): mark returns a ticket; completed and
     * wait as for engines. */
    int (*compute_mark)(void *st, uint64_t *ret_ticket);
    uint64_t (*compute_completed)(void *st);
    int (*compute_wait)(void *st, uint64_t t);

    /* Set the stream the application computes on (cuda: a cudaStream_t;
     * NULL for the legacy default stream).  NULL where streams have no
     * meaning (host). */
    void (*set_compute_stream)(void *st, void *stream);

    /* Copy timing, for backends whose timestamps cost something (cuda:
     * timing events); NULL where submit's tm is always filled (host: two
     * clock reads on the copy thread).  timing(e, 1) prepares e (allocates
     * what it needs; no copy may be in flight), timing(e, 0) releases it.
     * epoch(e) is called when the log's step begins, with no copy of e in
     * flight: the reference the next copies' times are measured from. */
    int (*timing)(hob_engine *e, int on);
    int (*epoch)(hob_engine *e);
} hob_ops;

extern const hob_ops hob_host_ops;
extern const hob_ops hob_cuda_ops;

/* ----------------------------------------------------------- link pacing
 * (backend_pace.c, proto/links.h): the host backend emulates the node's
 * links.  A session on device `device` attaches the daemon's link region
 * (fd, map_size: RegisterReply.links; node_device its device in the
 * region; owner its session id); every copy of the host backend's engines
 * of that device index is then paced to its weighted max-min fair share
 * of the node's links, given every other active copy on the node.  The
 * cuda backend leaves pacing to the hardware. */

/* Map and check the region (fd stays the caller's); replaces the pacer of
 * `device`.  0 and *ret_token (for detach; NULL when device is beyond
 * HOB_PACE_MAX_DEVICES: not paced), or HO_E_PROTOCOL / -errno with err. */
int hob_pace_attach(int device, int fd, uint64_t map_size,
                    uint32_t node_device, double weight, uint64_t owner,
                    const void **ret_token, char *err, size_t errlen);
/* Drop the pacer of `device` when it is `token`'s (NULL: whichever),
 * after the copies using it ended. */
void hob_pace_detach(int device, const void *token);
bool hob_pace_attached(int device);
/* memcpy of n bytes paced as a copy of `device` in direction dir (a plain
 * memcpy when no region is attached for it). */
void hob_paced_copy(int device, hob_dir dir, void *dst, const void *src,
                    uint64_t n);
/* The fair rate (bytes/µs) of active slot `mine` of region h, given every
 * active slot (NODE.md §3 rule 2's progressive filling). */
struct ho_links_header;
double hob_pace_rate(struct ho_links_header *h, uint32_t mine);

/* CLOCK_MONOTONIC in nanoseconds: the clock of hob_times (and of the
 * replay's figures, hor_now_ns). */
static inline uint64_t hob_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The engine_new depth rule of every backend: a power of two in
 * [2, max] (max a power of two, HOB_*_DEPTH_MAX).  0, or -EINVAL with
 * the sentence in err. */
static inline int hob_check_depth(uint32_t depth, uint32_t max, char *err,
                                  size_t errlen)
{
    if (depth < 2 || (depth & (depth - 1)) || depth > max)
        return ho_errf(err, errlen, -EINVAL, "engine depth %u is not a power "
                       "of two in [2, 2^%d]", depth, __builtin_ctz(max));
    return 0;
}

#endif
