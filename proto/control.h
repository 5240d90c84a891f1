/*
 * proto/control.h - the shared control region between a replaying client
 * and hyperoffloadd (docs/runtime.md).
 *
 * The daemon creates it (a sealed memfd) when a session installs a replay
 * (StageRequest) and passes it, together with an eventfd, in the
 * StageReply frame.  Both processes map it MAP_SHARED.  Everything after
 * the immutable layout fields is accessed with C11 atomics only (lock-free
 * on every supported target); no locks are shared across processes.
 *
 * Who writes what:
 *   client:  header.step, header.op, header.urgent, the client counters,
 *            slot.state transitions DDR <-> CLIENT, slot.version,
 *            slot.dropped;
 *   daemon:  slot.state transitions to/from SPILLING, FLASH, FILLING,
 *            ABSENT, the daemon counters, header.seq (bumped, then
 *            FUTEX_WAKE, after every state change a client may wait for).
 *
 * The daemon never trusts the region: every index and state it reads is
 * bounds-checked, and a client that corrupts its own region harms only
 * itself (its slots map only its own arena).
 */
#ifndef HO_PROTO_CONTROL_H
#define HO_PROTO_CONTROL_H

#include <stdatomic.h>
#include <stdint.h>

#include "proto/proto_limits.h" /* HO_CTL_MAX_SLOTS, HO_CTL_MAX_OPS */

#define HO_CTL_MAGIC 0x31304c5443304f48ull /* "HO0CTL01" little-endian */
#define HO_CTL_VERSION 1u
#define HO_CTL_IDLE UINT32_MAX   /* header.op between steps */
#define HO_CTL_WHY_MAX 512u      /* header.wait_why, with its NUL */

/* Residency of a staged host copy. */
enum ho_slot_state {
    HO_SLOT_ABSENT = 0,  /* no DDR pages charged, no valid data */
    HO_SLOT_DDR = 1,     /* in DDR (charged); data valid iff version > 0 */
    HO_SLOT_CLIENT = 2,  /* in DDR, the client is copying to/from it */
    HO_SLOT_SPILLING = 3,/* daemon writing it to flash */
    HO_SLOT_FLASH = 4,   /* valid data on flash only */
    HO_SLOT_FILLING = 5, /* daemon reading it back from flash */
};

typedef struct ho_ctl_slot {
    /* immutable after creation */
    uint64_t storage_id;
    uint64_t extent_id;
    uint64_t offset;     /* in the session's arena mapping */
    uint64_t length;
    /* shared state */
    _Atomic uint32_t state;    /* enum ho_slot_state */
    _Atomic uint32_t dropped;  /* client: data no longer needed */
    _Atomic uint64_t version;  /* client: bumped when a store completes */
} ho_ctl_slot;

typedef struct ho_ctl_header {
    /* immutable layout */
    uint64_t magic;
    uint32_t version;
    uint32_t header_bytes;       /* sizeof(ho_ctl_header) */
    uint32_t n_slots;
    uint32_t n_ops;              /* ops per step */
    uint64_t slots_offset;       /* ho_ctl_slot[n_slots] */
    uint64_t milestones_offset;  /* bitmap, n_ops bits, uint64_t words */
    uint64_t total_bytes;        /* size of the region */

    /* client -> daemon */
    _Alignas(64) _Atomic uint64_t step;  /* steps completed */
    _Atomic uint32_t op;                 /* op in progress, or HO_CTL_IDLE */
    _Atomic uint32_t urgent;             /* slot + 1 the client waits for */
    _Atomic uint64_t ops_done;
    _Atomic uint64_t h2d_bytes, d2h_bytes;
    _Atomic uint64_t exposed_ns, stall_ns;
    _Atomic uint64_t peak_device_bytes;

    /* daemon -> client */
    _Alignas(64) _Atomic uint32_t seq;   /* futex word */
    /* Nonzero once the daemon has let go of this replay (the session was
     * dropped, the replay replaced, or the daemon is stopping): from then
     * on no slot state is maintained and the host copies' pages may be
     * released at any moment, so a copy from the pool that ends after the
     * flag is seen cannot be trusted.  Set before any page is dropped. */
    _Atomic uint32_t revoked;
    _Atomic uint64_t flash_out_bytes, flash_in_bytes;
    _Atomic uint64_t ddr_bytes, flash_bytes; /* staged copies' residency */
    /* The node arbiter has a new plan for this session (epoch of the
     * arbitration, daemon/arbitrate.h): the replay fetches it
     * (PlanFetchRequest) and switches at its next step boundary; 0: none. */
    _Atomic uint64_t plan_epoch;
    /* A wait the daemon gave up on ([ddr] stage_wait): wait_why (a NUL-
     * terminated sentence naming what the slot waited for) and wait_slot
     * (slot + 1) are written first, then wait_error (an HO_E_* code,
     * release order); cleared when the client no longer waits. */
    _Atomic uint32_t wait_slot;
    _Atomic int32_t wait_error;
    char wait_why[HO_CTL_WHY_MAX];
} ho_ctl_header;

static inline ho_ctl_slot *ho_ctl_slots(ho_ctl_header *h)
{
    return (ho_ctl_slot *)((uint8_t *)h + h->slots_offset);
}

static inline const uint64_t *ho_ctl_milestones(const ho_ctl_header *h)
{
    return (const uint64_t *)((const uint8_t *)h + h->milestones_offset);
}

static inline int ho_ctl_is_milestone(const ho_ctl_header *h, uint32_t op)
{
    return (int)((ho_ctl_milestones(h)[op >> 6] >> (op & 63)) & 1u);
}

#endif
