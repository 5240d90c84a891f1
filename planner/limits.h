/*
 * planner/limits.h - every bound the planner library puts on a trace, a
 * schedule and the files that carry them, in one place.  The readers
 * (planner/io/) and the builders (planner/ir.c) check them; docs/formats.md
 * lists them for users.  A bound exists so that a hostile or broken input
 * fails with a clear error instead of exhausting memory or overflowing a
 * counter; each line says why it is that number.
 */
#ifndef HO_PLANNER_LIMITS_H
#define HO_PLANNER_LIMITS_H

#include <stdint.h>

/* Ops per trace: 33.5 M, 30x the 1M-op scale target; indices are uint32. */
#define PLAN_MAX_OPS (1u << 25)
/* Storages per trace: 16.7 M, 64x the 250k-storage scale target. */
#define PLAN_MAX_STORAGES (1u << 24)
/* Read + write entries over the whole trace: 268 M, so that the access
 * arrays (12 bytes an entry) stay below ~3 GiB. */
#define PLAN_MAX_REFS (1u << 28)
/* Reads + writes of one op: far above any real kernel's operand count. */
#define PLAN_MAX_OP_REFS 65536u
/* One storage: 1 PiB, above any device's memory by three orders. */
#define PLAN_MAX_STORAGE_BYTES (1ull << 50)
/* Sum of all storage bytes of one trace (checked by plan_trace_finish):
 * headroom so that counters of device bytes, which may briefly count a
 * storage twice, cannot overflow. */
#define PLAN_MAX_TOTAL_BYTES (1ull << 60)
/* Op / trace name bytes including the NUL: names are labels, not data. */
#define PLAN_MAX_NAME 256u
/* Actions per schedule: a few per access, PLAN_MAX_REFS of them at most. */
#define PLAN_MAX_ACTIONS (1u << 28)
/* Home entries per schedule: at most one per storage. */
#define PLAN_MAX_HOMES PLAN_MAX_STORAGES

/* Largest trace or schedule file either reader accepts (bytes); the
 * in-memory form of a parsed document is a small multiple of this. */
#define PLAN_FMT_MAX_FILE (2ull << 30)
/* Ids, byte counts and budgets must fit in int64 (JSON integers as
 * jansson reads them). */
#define PLAN_FMT_MAX_ID ((uint64_t)INT64_MAX)
#define PLAN_FMT_MAX_U64 ((uint64_t)INT64_MAX)
/* One op's duration: 10^12 us = 11.6 days, beyond any step. */
#define PLAN_FMT_MAX_DURATION_US 1e12
/* A link direction: 1 PB/s, far above any link, so that copy times stay
 * representable. */
#define PLAN_FMT_MAX_GBPS 1e6
/* A link's latency: 1000 s. */
#define PLAN_FMT_MAX_LATENCY_US 1e9
/* Planner name (plan_schedule.planner holds it with its NUL). */
#define PLAN_FMT_MAX_PLANNER 31u
/* Op or trace name (strlen): PLAN_MAX_NAME with room for the NUL. */
#define PLAN_FMT_MAX_NAME (PLAN_MAX_NAME - 1u)

#endif
