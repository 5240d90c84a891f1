/*
 * daemon/mover.h - worker jobs: the count of jobs on libuv worker threads
 * (moves, plans, staging plans), which a drain waits for; and moves of
 * arena ranges between DDR and flash on those threads, page work
 * included.
 *
 * A move of the arena range [off, off+len) between DDR and the flash
 * range at flash_off runs in up to SRV_MOVE_PARTS_MAX parts:
 *   SRV_MOVE_SPILL  write to flash, then drop the pages (munlock+punch)
 *                   -- only when every write succeeded;
 *   SRV_MOVE_WRITE  write to flash, the pages stay;
 *   SRV_MOVE_FILL   read from flash into the range (through the memfd,
 *                   which allocates the pages), then mlock it when the
 *                   pool locks (a refusal is recorded, not an error);
 *   SRV_MOVE_DROP   drop the pages only (flash unused, may be NULL).
 * The caller does the bookkeeping on the loop: charge before a fill
 * (tier_arena_restore_unlocked), tier_arena_mark_evicted after a spill or
 * drop, extent states.  The caller keeps the arena and the flash range
 * alive until its callback has run (sessions.c holds an arena reference
 * for that, srv_extent_start_move).
 */
#ifndef HO_DAEMON_MOVER_H
#define HO_DAEMON_MOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/state.h"

/* ------------------------------------------------------------ jobs */

/* A job was queued on a worker (d->works_in_flight + 1). */
void srv_work_begin(srv_daemon *d);
/* A job's after-work callback ran on the loop (d->works_in_flight - 1);
 * when it was the last one while draining, d->on_works_drained runs. */
void srv_work_end(srv_daemon *d);

/* ------------------------------------------------------------ moves */

typedef enum srv_move_kind {
    SRV_MOVE_SPILL,
    SRV_MOVE_WRITE,
    SRV_MOVE_FILL,
    SRV_MOVE_DROP,
} srv_move_kind;

typedef struct srv_move_args {
    srv_move_kind kind;
    tier_arena *arena;
    uint64_t off, len;
    tier_flash *flash;
    uint64_t flash_off;
    uint32_t parts_max;          /* 0: SRV_MOVE_PARTS_MAX */
} srv_move_args;

/* Completion of a move, on the loop: rc 0 or the first part's -errno
 * (-EIO, -ENOSPC...), io_us the span of the flash I/O phase. */
typedef void srv_move_cb(srv_daemon *d, void *ctx, int rc, double io_us);

/* Start a move.  It counts as a worker job (srv_work_begin) until cb has
 * run.  Returns 0, -EINVAL, -ENOMEM, HO_E_INTERNAL; on failure cb is not
 * called.  Two hidden settings, for measurements, change how it runs:
 * cfg.debug_spill_via_fd (spills write through the memfd with bounce
 * buffers instead of O_DIRECT from the mapping) and cfg.debug_move_parts
 * (fewer than SRV_MOVE_PARTS_MAX parts). */
int srv_move_start(srv_daemon *d, const srv_move_args *args, srv_move_cb *cb,
                   void *ctx);

#endif
