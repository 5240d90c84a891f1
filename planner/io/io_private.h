/*
 * planner/io/io_private.h - helpers shared by the trace/schedule readers
 * and writers (plan_json.c, plan_pb.c).  Private to planner/io/.
 *
 * Both formats carry exactly the same information (PLANNER.md §1-§2) and
 * apply the same bounds (planner/plan_limits.h), so that JSON and protobuf
 * agree on what is acceptable.
 */
#ifndef HO_PLANNER_IO_IO_PRIVATE_H
#define HO_PLANNER_IO_IO_PRIVATE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner/plan.h"
#include "planner/io/plan_io.h"

#define PLAN_FMT_TRACE "hyperoffload-trace"
#define PLAN_FMT_SCHEDULE "hyperoffload-schedule"
#define PLAN_FMT_VERSION 1

#include "proto/errfmt.h"

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
