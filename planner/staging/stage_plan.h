/*
 * planner/staging/stage_plan.h - the daemon's flash staging planner (pure
 * computation, like the rest of planner/).  Library ho_plan_stage;
 * planner/staging/.
 */
#ifndef HO_PLANNER_STAGING_STAGE_PLAN_H
#define HO_PLANNER_STAGING_STAGE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ staging
 * (planner/staging/stage_plan.c; the daemon's flash staging,
 * docs/runtime.md).  Pure computation like the rest of this library.
 *
 * A replay keeps one host copy ("slot") per storage its schedule stores or
 * that starts on host.  When the slots do not all fit in the DDR the
 * session may use, some live on flash part of the step.  The staging plan
 * says, per position in the step, which slots the daemon brings into DDR
 * and which it sends to flash, such that the DDR-resident slots never
 * exceed the limit (under the nominal op times of plan_simulate) and every
 * prefetch and store of the schedule finds its slot in DDR from its issue
 * to the end of its copy.  Positions: pos = 2*op + when (PLAN_BEFORE=0,
 * PLAN_AFTER=1), 0 .. 2*n_ops-1.  The plan is cyclic: the residency at step
 * end equals the one at step start (start_in_ddr). */

typedef enum plan_stage_kind {
    PLAN_STAGE_FILL = 0,  /* into DDR, reading the flash copy (live data) */
    PLAN_STAGE_ALLOC,     /* into DDR without reading: the data is about to
                             be overwritten by a store, or there is none */
    PLAN_STAGE_WRITE,     /* write the DDR copy to flash, keep it in DDR */
    PLAN_STAGE_EVICT,     /* out of DDR; `keep`: the data is needed later
                             (write it first unless the flash copy is
                             current), else it is dropped without I/O */
    PLAN_STAGE__COUNT
} plan_stage_kind;

const char *plan_stage_kind_name(plan_stage_kind k); /* "fill", ... */

typedef struct plan_stage_event {
    uint32_t pos;        /* 2*op + when */
    uint32_t slot;       /* index into the input's slots */
    uint8_t kind;        /* plan_stage_kind */
    uint8_t keep;        /* EVICT only */
} plan_stage_event;

typedef struct plan_staging_input {
    const plan_trace *trace;      /* finished */
    const plan_schedule *sched;   /* bound to trace, valid (plan_simulate) */
    const uint32_t *slot_storage; /* n_slots storage indices, distinct */
    const uint64_t *slot_bytes;   /* n_slots DDR bytes of each copy (> 0) */
    uint32_t n_slots;             /* <= trace->n_storages */
    uint64_t ddr_limit;           /* bytes of slots allowed in DDR at once */
    double flash_read_gbps;       /* > 0: fills */
    double flash_write_gbps;      /* > 0: spills */
    double flash_latency_us;      /* >= 0, per transfer */
} plan_staging_input;

typedef struct plan_staging {
    uint32_t n_slots, n_ops;
    uint64_t total_bytes;         /* sum of slot_bytes */
    uint64_t ddr_limit;
    uint8_t *start_in_ddr;        /* n_slots flags: in DDR at step start
                                     (and so at step end), owned */
    uint32_t n_events;
    plan_stage_event *events;     /* sorted by pos, stable; owned */
    uint64_t *milestones;         /* (n_ops + 63) / 64 words; bit op is set
                                     when an event has pos 2*op or
                                     2*op - 1 (op 0: pos 0 or 2*n_ops - 1);
                                     owned */
    uint32_t n_milestones;
    uint32_t n_actions;           /* events that move data or pages:
                                     FILL, WRITE, EVICT (per step) */
    uint64_t peak_ddr_bytes;      /* nominal peak of slots in DDR */
    uint64_t flash_read_bytes;    /* nominal per step */
    uint64_t flash_write_bytes;   /* nominal per step (upper bound: an
                                     EVICT with keep of a clean copy moves
                                     nothing) */
    double exposed_us;            /* nominal time the flash I/O is not
                                     hidden (0 when nothing is staged) */
    uint32_t promoted;            /* slots kept in DDR across the step
                                     boundary although they start on host */
    uint64_t *pos_ddr;            /* 2*n_ops: bytes of slots the plan has in
                                     DDR after the events of each position
                                     (each <= ddr_limit); owned, NULL when
                                     nothing is staged */
    double *op_start_us;          /* n_ops + 1: nominal start of each op
                                     (plan_simulate of the schedule), the
                                     last entry the end of the last op;
                                     owned, NULL when nothing is staged */
} plan_staging;

/* Compute the staging plan.  With sum(slot_bytes) <= ddr_limit: every slot
 * starts in DDR, no event, no milestone.  Otherwise the derived problem
 * (slots as storages, the schedule's store copies as writes and its
 * prefetch copies as reads, over the ops that each copy spans; the limit
 * as budget; flash as the link) is planned with hoplan -- see
 * docs/runtime.md for the method.  Errors: -EINVAL (bad input, message),
 * HO_E_BAD_SCHEDULE (the schedule does not simulate, or reads a host copy
 * it never wrote), -E2BIG (the derived trace exceeds the planner's
 * limits), -ENOMEM, HO_E_INFEASIBLE when no plan meets the limit: the
 * message gives the figures (the bytes of slots one op needs at once, or
 * the smallest limit the planner meets) and *ret_min_limit (may be NULL)
 * the smallest feasible limit.  On success *ret_plan is owned by the caller
 * (plan_staging_free). */
int plan_staging_make(const plan_staging_input *in, plan_staging **ret_plan,
                      uint64_t *ret_min_limit, char *err, size_t errlen);
/* Accepts NULL; returns NULL. */
plan_staging *plan_staging_free(plan_staging *p);

#ifdef __cplusplus
}
#endif
#endif
