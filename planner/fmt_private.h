/*
 * planner/fmt_private.h - helpers shared by the trace/schedule readers and
 * writers (json.c, pb.c).  Private to planner/; not part of plan.h.
 *
 * Both formats carry exactly the same information (PLANNER.md §1-§2) and
 * apply the same bounds, listed here so that JSON and protobuf agree on
 * what is acceptable (docs/formats.md lists them for users).
 */
#ifndef HO_PLANNER_FMT_PRIVATE_H
#define HO_PLANNER_FMT_PRIVATE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define PLAN_FMT_TRACE "hyperoffload-trace"
#define PLAN_FMT_SCHEDULE "hyperoffload-schedule"
#define PLAN_FMT_VERSION 1

/* Largest file either reader accepts (bytes); the in-memory form of a
 * parsed document is a small multiple of this. */
#define PLAN_FMT_MAX_FILE (2ull << 30)
/* Ids, byte counts and budgets must fit in int64 (jansson's integer). */
#define PLAN_FMT_MAX_ID ((uint64_t)INT64_MAX)
#define PLAN_FMT_MAX_U64 ((uint64_t)INT64_MAX)
/* Bounds on the doubles of a trace. */
#define PLAN_FMT_MAX_DURATION_US 1e12 /* 11.6 days per op */
#define PLAN_FMT_MAX_GBPS 1e6
#define PLAN_FMT_MAX_LATENCY_US 1e9
/* Longest planner name (plan_schedule.planner holds it with its NUL). */
#define PLAN_FMT_MAX_PLANNER 31u
/* Longest op or trace name (strlen), PLAN_MAX_NAME with room for NUL. */
#define PLAN_FMT_MAX_NAME (PLAN_MAX_NAME - 1u)

/* Format a message into err (NULL or errlen 0: nothing).  Returns code. */
int plan_fmt_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Read the whole file `path` into a new NUL-terminated buffer (*ret_buf,
 * malloc'ed, owned by the caller; *ret_len excludes the NUL).  -ENOENT,
 * -EACCES, -EIO ... (-errno) with "path: reason" in err; -EFBIG when the
 * file is larger than PLAN_FMT_MAX_FILE; -ENOMEM. */
int plan_fmt_slurp(const char *path, char **ret_buf, size_t *ret_len,
                   char *err, size_t errlen);

/* True when buf[0..len) is well-formed UTF-8 without NUL bytes (what a
 * JSON string can carry once escaped). */
bool plan_fmt_utf8_ok(const char *buf, size_t len);

/* True when `buf` starts with '{' after JSON whitespace, or is empty /
 * all whitespace (the JSON reader then explains the problem). */
bool plan_fmt_looks_json(const char *buf, size_t len);

#endif
