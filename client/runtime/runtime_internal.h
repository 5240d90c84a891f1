/*
 * client/runtime/runtime_internal.h - what the runtime files of
 * libhyperoffload share (hyperoffload/runtime.h is the public contract;
 * docs/runtime.md the design).  Hidden symbols carry the prefix hor_.
 *
 * Files:
 *   runtime_trace.c    ho_trace_*: a wrapper around the planner's plan_trace;
 *                      the thread-local error sentence (hor_fail)
 *   runtime_plan.c     ho_plan_*: PlanRequest to the daemon, schedule files
 *   runtime_device.c   ho_device_*: backend selection, byte accounting and
 *                      the device-memory allocator shared by the backends
 *   backend_host.c     "host" backend: pre-faulted region, memcpy threads
 *   backend_cuda.c     "cuda" backend: libcudart through dlopen
 *   runtime_control.c  StageRequest, the control region and its slots
 *   runtime_replay.c   ho_replay_new/free: checks, per-op index, storages
 *   runtime_engine.c   the hooks (step/op begin/end) and step statistics
 *
 * Errors: every runtime call that fails records one sentence in a
 * thread-local buffer (ho_runtime_last_error()); calls that have a client
 * also record it as the client's last error.
 *
 * Host-copy slots (proto/control.h, enum ho_slot_state): the replay side
 * of the state machine.  The replay thread alone performs these
 * transitions, each by compare-and-swap on slot.state so that it never
 * races the daemon; busy[i] (hor_ctl) counts the copies using slot i:
 *
 *   DDR    -> CLIENT  [hor_slot_acquire]  the first copy that uses the slot
 *                      (busy 0 -> 1): issue() for prefetches and stores,
 *                      and the synchronous copies of bring_back,
 *                      store_back (runtime_engine.c), ho_storage_write_host
 *                      and ho_storage_read (runtime_replay.c).  While the
 *                      slot is in another state the CAS fails: the replay
 *                      sets header.urgent = i + 1, signals the daemon
 *                      (hor_ctl_signal) and sleeps on the header.seq futex
 *                      until the daemon has brought it to DDR (stall);
 *                      HO_E_STATE after HOR_URGENT_GIVE_UP_NS or when it
 *                      finds CLIENT, HO_E_DISCONNECTED when the daemon is
 *                      gone -- the state is unchanged then.
 *   CLIENT -> DDR     [hor_slot_release]  the last copy is complete
 *                      (busy 1 -> 0): retire() for asynchronous copies,
 *                      right after a synchronous one, and in issue() when
 *                      the submit fails.
 *   (start)   DDR     [local_setup] for a local replay; with a daemon the
 *                      daemon creates the region and moves the slots.
 *
 * The daemon's transitions (DDR -> SPILLING -> FLASH -> FILLING -> DDR,
 * and ABSENT) are written down in daemon/; the replay never moves a slot
 * out of any state but DDR and CLIENT.  The other client-written fields:
 *   version += 1   [hor_slot_release(stored)] a store completed (retire()
 *                   of a D2H, store_back, ho_storage_write_host); 1 at
 *                   start for `initial: host` slots [hor_ctl_init];
 *   dropped = 0    [act_store when issued, ho_storage_write_host];
 *   dropped = 1    [act_free_host, drop_host_copy in normalize()].
 */
#ifndef HO_CLIENT_RUNTIME_INTERNAL_H
#define HO_CLIENT_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "client/backends/backend.h"
#include "client/client_internal.h"
#include "client/client_limits.h" /* HOR_*: sentences, engine depth, waits */
#include "proto/control.h"
#include "hyperoffload/runtime.h"
#include "planner/plan.h"

/* runtime_trace.c ------------------------------------------------------- */

struct ho_trace {
    plan_trace *pt;  /* owned */
};

/* Record a sentence (printf-style) as this thread's runtime error, and as
 * the last error of `c` when c is not NULL; returns `code`. */
int hor_fail(ho_client *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Write `obj` with `writer` to a temporary file renamed over `path`
 * (runtime_trace.c); errors as hor_fail. */
int hor_write_file(const char *path, const char *what,
                   int (*writer)(FILE *f, const void *obj), const void *obj);

/* Finish the trace (derive its access lists) when it is not finished yet.
 * HO_E_BAD_TRACE with the planner's sentence recorded. */
int hor_trace_finish(const ho_trace *t);

/* runtime_device.c ------------------------------------------------------ */

#define HOR_NONE UINT32_MAX

/* One block of the device region (allocator metadata lives here, never in
 * device memory). */
typedef struct hor_block {
    uint64_t off, size;          /* bytes from the region base, aligned */
    uint64_t req;                /* bytes asked for (used blocks) */
    uint32_t phys_prev, phys_next;
    uint32_t free_prev, free_next;
    uint8_t state;               /* HOR_BLK_* */
} hor_block;

#define HOR_TL_FL 64u
#define HOR_TL_SL_LOG2 4u
#define HOR_TL_SL (1u << HOR_TL_SL_LOG2)

/* Two-level segregated fit allocator over [0, size) of the region: O(1)
 * allocate and free, good fit, immediate coalescing.  Block descriptors
 * come from a spare stack filled ahead of time (hor_dev_reserve), so the
 * hot path never allocates. */
typedef struct hor_alloc {
    hor_block *b;                /* owned, cap descriptors */
    uint32_t cap;
    uint32_t *spare;             /* owned, indices of unused descriptors */
    uint32_t nspare;
    uint64_t fl_bitmap;
    uint32_t sl_bitmap[HOR_TL_FL];
    uint32_t heads[HOR_TL_FL][HOR_TL_SL];
    uint32_t live;               /* used blocks */
} hor_alloc;

#define HOR_BLK_SPARE 0
#define HOR_BLK_FREE 1
#define HOR_BLK_USED 2

struct ho_device {
    const hob_ops *ops;
    void *st;                    /* backend state, owned */
    uint8_t *base;               /* region (device addresses) */
    uint64_t region;
    uint64_t capacity;           /* hard limit of allocated bytes */
    uint64_t used, peak;         /* bytes asked for: now, max since open */
    uint64_t mark_peak;          /* max since hor_dev_mark_peak */
    hor_alloc a;
    ho_replay *owner;            /* the replay using the device, if any */
};

/* Allocate `bytes` (> 0) of device memory: the block index and address.
 * HO_E_DEVICE with a sentence when the capacity would be exceeded or the
 * region has no hole large enough; nothing is changed then.  No system
 * call, no malloc. */
int hor_dev_alloc(ho_device *d, uint64_t bytes, uint32_t *ret_block,
                  void **ret_ptr);
/* Return a used block. */
void hor_dev_free_block(ho_device *d, uint32_t block);
/* The used block that starts at ptr, or HOR_NONE (O(blocks)). */
uint32_t hor_dev_find(const ho_device *d, const void *ptr);
/* Make sure `n` more allocations can be made without allocating
 * descriptors.  0 or -ENOMEM. */
int hor_dev_reserve(ho_device *d, uint32_t n);
/* Restart the peak measured by mark_peak at the current use. */
static inline void hor_dev_mark_peak(ho_device *d)
{
    d->mark_peak = d->used;
}

/* runtime_plan.c -------------------------------------------------------- */

struct ho_plan {
    plan_schedule *s;        /* owned; bound to the trace it was made for */
    uint64_t trace_hash;     /* plan_trace_hash of that trace */
    uint64_t daemon_hash;    /* the hash the daemon keyed the plan by, or 0
                                for a schedule loaded from a file */
    ho_plan_info info;
};

/* The node arbiter's plan for this session (PlanFetchRequest of
 * *io_epoch, docs/node.md): a new plan bound to t, the DDR limit granted
 * with it (0: none) and in *io_epoch the epoch it is of (the latest, when
 * a re-plan came meanwhile).  Codes as ho_plan_request. */
int hor_plan_fetch(ho_client *c, const ho_trace *t, uint64_t *io_epoch,
                   ho_plan **ret, uint64_t *ret_ddr_limit);
/* Tell the daemon the replay switched to the plan of `epoch`. */
int hor_plan_switched(ho_client *c, uint64_t epoch);

/* runtime_control.c ----------------------------------------------------- */

/* The control region and the host copies, seen from the replay.  With a
 * client they come from the daemon (StageRequest): the region is the
 * daemon's memfd mapped MAP_SHARED and the host copies are extents of the
 * session's arena.  Without a client ("local" replay, for offline plans
 * and tests) the replay makes both itself: a heap region laid out the same
 * way, every slot in DDR, and one pre-faulted private mapping for the host
 * copies. */
typedef struct hor_ctl {
    ho_ctl_header *h;        /* the region (mapping, or owned heap) */
    uint64_t map_bytes;      /* mapping size; 0 for a local region */
    ho_ctl_slot *slots;
    const uint64_t *ms;      /* milestone bitmap */
    int efd;                 /* eventfd to the daemon, -1 when local */
    uint8_t *pool;           /* host copies: slot offsets are from here */
    uint64_t pool_bytes;     /* local pool mapping size (owned), else 0 */
    uint32_t n_slots;
    uint32_t *busy;          /* copies in flight per slot (owned) */
    void *registered;        /* host range registered with the backend */
    bool held;               /* pool held (hoc_pool_hold) for the replay */
    uint64_t staged_bytes;   /* sum of host copies */
    uint32_t stage_actions, milestones;
} hor_ctl;

/* Set up r->ctl for the replay's slots (r->st[i].slot assigned, r->n_slots
 * set): StageRequest to the daemon when r->c is not NULL, else a local
 * region.  Registers the host copies with the backend when they never
 * leave DDR.  Sets each slot's initial version.  0, or the daemon's code /
 * HO_E_PROTOCOL / -errno with the sentence recorded. */
int hor_ctl_init(ho_replay *r);
/* Undo hor_ctl_init (unmap, close, unregister, free).  Safe on a zeroed
 * or half set-up ctl (efd must be -1 when not opened). */
void hor_ctl_done(ho_replay *r);
/* hor_ctl_done for a ctl `x` of r staged at `epoch` (r->ctl, or one that
 * re-staging replaced). */
void hor_ctl_release(ho_replay *r, hor_ctl *x, uint64_t epoch);
/* A copy is about to use slot i: the first one moves it DDR -> CLIENT,
 * waiting for the daemon (urgent, eventfd, futex on seq) while it is not
 * in DDR.  0 with *ret_stall_ns the time it waited (0 when the slot was
 * in DDR or already in use by this replay); HO_E_STATE when the daemon
 * does not bring it to DDR (the sentence says which slot),
 * HO_E_DISCONNECTED when the daemon is gone; *ret_stall_ns untouched
 * then. */
int hor_slot_acquire(ho_replay *r, uint32_t i, uint64_t *ret_stall_ns);
/* The copy that used slot i is complete: the last one moves it CLIENT ->
 * DDR; `stored` bumps the slot's version first. */
void hor_slot_release(ho_replay *r, uint32_t i, bool stored);
/* True once the daemon has revoked the control region (header.revoked):
 * a prefetch from the pool completed after that cannot be trusted. */
bool hor_ctl_revoked(const ho_replay *r);
/* Wake the daemon through the eventfd (milestone ops, urgent slots);
 * a full counter still leaves a wake-up pending.  efd must be open. */
void hor_ctl_signal(hor_ctl *x);
/* Address of slot i's host copy in this process. */
static inline uint8_t *hor_slot_ptr(const ho_replay *r, uint32_t i);

/* runtime_restage.c ----------------------------------------------------- */

/* A replay staged with a daemon that went away, when the client's
 * reconnect is on (ho_set_reconnect): between steps (no copy in flight),
 * stage it again on the new session -- the plan asked for again (the call
 * that reconnects), the same schedule required, a StageRequest, and every
 * host copy the replay still needs copied over from the old pool (intact
 * where its slot was in DDR) or from the device; one that is in neither
 * place is marked lost (a prefetch of it fails with HO_E_DISCONNECTED
 * naming it until it is written again).  0 when nothing was due or the
 * replay now runs on the new session, else the code with the sentence
 * recorded (the replay stays as it was: the next call tries again). */
int hor_restage_if_due(ho_replay *r);

/* runtime_replay.c / runtime_engine.c ----------------------------------- */

/* Runtime state of one storage of the trace. */
typedef struct hor_storage {
    uint64_t id, bytes;
    void *ptr;               /* device address, NULL when not on device */
    uint32_t blk;            /* device block, HOR_NONE when not on device */
    uint32_t slot;           /* host copy's slot, HOR_NONE when none */
    uint64_t version;        /* data version, bumped by every write */
    uint64_t host_version;   /* version the host copy holds */
    uint64_t h2d, d2h;       /* tickets of its latest copies, 0: none */
    uint8_t initial;         /* plan_initial at step start: the trace's,
                                or the schedule's home (movable ones) */
    uint8_t trace_initial;   /* the trace's own `initial` */
    bool retained;
    bool accessed;           /* some op reads or writes it */
    bool dev_valid;          /* the device copy holds `version` */
    bool host_valid;         /* a host copy exists (maybe stale) */
    bool lost;               /* its host copy was lost with a daemon that
                                went away (runtime_restage.c): a prefetch
                                fails until it is written again */
} hor_storage;

typedef struct hor_act {
    uint32_t st;             /* storage index */
    uint8_t kind;            /* plan_act_kind */
} hor_act;

/* A copy in flight, until the replay sees it complete (retire). */
typedef struct hor_inflight {
    uint64_t ticket;
    uint32_t slot;
    uint32_t rec;            /* its copy-log record, HOR_NONE: none */
    bool store;
} hor_inflight;

/* One record of the copy log (ho_copy_record before the times are made
 * relative to the step's start).  The replay thread fills it at issue and
 * adds waits; the backend writes tm (host: from the copy thread) before
 * it publishes the copy complete, and the record is read only after the
 * step drained. */
typedef struct hor_copy_rec {
    uint64_t storage_id, bytes;
    hob_times tm;            /* CLOCK_MONOTONIC: issue_ns set at issue,
                                start and end by the backend (0: not
                                reported) */
    uint64_t wait_ns, stall_ns;
    uint32_t op;
    uint8_t when, dir, engine;
} hor_copy_rec;

/* The copy log (ho_replay_record_copies): two buffers, the step being
 * recorded (w) and the last completed one (last).  Only the replay thread
 * hands out records, so the index is a plain counter. */
typedef struct hor_copylog {
    hor_copy_rec *buf[2];    /* owned, max records each */
    uint32_t max;            /* 0: the log is off */
    unsigned w;              /* buffer of the step in progress */
    int last;                /* buffer of the last completed step, -1 */
    bool active;             /* the step in progress is recorded */
    uint64_t n[2], dropped[2], step[2], t0[2];
} hor_copylog;

typedef struct hor_engine {
    hob_engine *e;           /* owned (backend) */
    uint64_t done;           /* highest ticket known complete */
    hor_inflight *q;         /* owned ring of `cap` entries */
    uint32_t cap, mask;
    uint64_t head, tail;     /* q[tail..head) in flight */
} hor_engine;

/* Device memory freed by the schedule, held until its copies and the
 * compute work before the free are complete. */
typedef struct hor_release {
    uint32_t blk;
    uint64_t h2d, d2h, cmp;  /* tickets to wait for, 0: none */
} hor_release;

struct ho_replay {
    ho_client *c;            /* borrowed, NULL for a local replay */
    uint64_t epoch;          /* c's reconnects when it was staged: after
                                one the daemon's side of it is gone */
    uint64_t stage_hash;     /* the plan's key on the session it is staged
                                on when re-staged (else 0: the plan's) */
    unsigned restages;       /* re-staged on a new session so far */
    uint64_t restage_copied, restage_lost; /* host copies carried over and
                                              lost by them */
    ho_device *dev;          /* borrowed */
    const ho_trace *t;       /* borrowed */
    const plan_trace *pt;
    const ho_plan *p;        /* borrowed */
    ho_replay_opts opts;
    uint32_t n_ops, n_st, n_slots;
    hor_storage *st;         /* owned, n_st */
    uint32_t *act_off;       /* owned, 2*n_ops+1: actions of point p are
                                acts[act_off[p] .. act_off[p+1]) */
    hor_act *acts;           /* owned */
    uint32_t *free_off;      /* owned, n_ops+1: implicit frees after op */
    uint32_t *frees;         /* owned */
    uint32_t *mark;          /* owned, n_st stamps for ho_op_check */
    uint32_t stamp;
    hor_engine eng[2];
    unsigned n_eng;
    hor_engine *h2d, *d2h;   /* eng[0], and eng[1] or eng[0] */
    const hob_ops *ops;
    void *bst;               /* backend state */
    hor_release *rel;        /* owned */
    uint32_t n_rel, cap_rel;
    hor_ctl ctl;

    /* step state */
    uint64_t step;           /* steps begun */
    uint32_t next_op, cur_op;
    bool in_step, in_op, diverged;
    int failed;              /* sticky error of the step, 0 if none */
    uint64_t t0_ns;
    uint64_t exposed_ns, stall_ns, h2d_bytes, d2h_bytes, ops_done;
    uint64_t wait_ns, waits; /* the schedule's `wait` actions */
    uint64_t alloc_waits;
    uint64_t flash_in0, flash_out0;
    /* totals published in the control region */
    uint64_t tot_h2d, tot_d2h, tot_exposed, tot_stall, tot_ops;

    ho_step_info *hist;      /* owned ring of HO_STEP_HISTORY */
    uint64_t n_hist;         /* steps recorded */

    hor_copylog log;         /* the copy log, off unless asked for */

    /* node re-planning (hor_replay_switch) */
    ho_plan *own_plan;       /* the arbiter's plan switched to, owned */
    uint64_t plan_epoch;     /* the arbiter's epoch last acted on */
    uint64_t switches;       /* plans switched to */
    bool has_bound;          /* ho_storage_bind was used: no switch */
};

/* runtime_replay.c: between steps, when the daemon posted a newer plan
 * epoch in the control region: fetch the arbiter's plan, carry every
 * storage's data over to a replay of it, confirm (PlanSwitched).
 * 0 when there was nothing to do or the switch is done; a negative code
 * when it failed (the replay then runs on as it was when it could keep
 * its old plan, and the error is recorded). */
int hor_replay_switch(ho_replay *r);

/* Test hook (hidden): when non-zero, ho_replay_new does not refuse a
 * schedule the simulator rejects, so that run-time checks can be tested. */
extern int hor_test_skip_check;

static inline uint8_t *hor_slot_ptr(const ho_replay *r, uint32_t i)
{
    return r->ctl.pool + r->ctl.slots[i].offset;
}

/* The runtime's clock: the backends' (CLOCK_MONOTONIC ns), so copy-log
 * times and step figures compare. */
static inline uint64_t hor_now_ns(void)
{
    return hob_now_ns();
}

/* runtime_engine.c: wait for every copy and release (step end, teardown,
 * fallback).  0 or HO_E_DEVICE. */
int hor_drain(ho_replay *r);
/* The replay diverged from the trace (the sentence says how): drain,
 * bring host-resident data back to the device, run the rest of the step
 * without offload.  Returns HO_E_DIVERGED, or the code of a failure to
 * fall back (then sticky for the step). */
int hor_diverge(ho_replay *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Free the device copy of storage s now (no copy may be in flight). */
void hor_storage_drop_device(ho_replay *r, hor_storage *s);
/* Destroy the embedded copy log r->log: timing off, buffers freed, the log
 * left off and empty (ho_replay_free, and ho_replay_record_copies before
 * it arms a new one; no copy may be in flight). */
void hor_log_done(ho_replay *r);

#endif
