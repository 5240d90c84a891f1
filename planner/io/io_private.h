/*
 * planner/io/io_private.h - what the trace/schedule readers and writers
 * (plan_json.c, plan_pb.c) share: file reading, UTF-8 checks, a buffered
 * text writer, the shortest round-trip form of a double, and the reader's
 * error record with the checks and builders both formats run, so that
 * JSON and protobuf accept the same documents and explain a fault with
 * the same sentence (PLANNER.md §1-§2, bounds in planner/plan_limits.h).
 * Private to planner/io/.
 */
#ifndef HO_PLANNER_IO_IO_PRIVATE_H
#define HO_PLANNER_IO_IO_PRIVATE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "proto/errfmt.h"

#define PLAN_FMT_TRACE "hyperoffload-trace"
#define PLAN_FMT_SCHEDULE "hyperoffload-schedule"
#define PLAN_FMT_VERSION 1

/* Read the whole file `path` into a new NUL-terminated buffer (*ret_buf,
 * malloc'ed, owned by the caller; *ret_len excludes the NUL).  -ENOENT,
 * -EACCES, -EIO ... (-errno) with "path: reason" in err; -EFBIG when the
 * file is larger than PLAN_FMT_MAX_FILE; -ENOMEM. */
int plan_fmt_slurp(const char *path, char **ret_buf, size_t *ret_len,
                   char *err, size_t errlen);

/* Read the file `path` and parse it into *ret_trace (ret_schedule NULL)
 * or *ret_schedule: as JSON, or, when any_format, as JSON when it looks
 * like JSON (plan_fmt_looks_json) and as protobuf otherwise. */
int plan_fmt_load(const char *path, bool any_format, plan_trace **ret_trace,
                  plan_schedule **ret_schedule, char *err, size_t errlen);

/* Length of the well-formed UTF-8 sequence at p (a lead byte >= 0x80),
 * 0 when there is none (overlong, surrogate, beyond U+10FFFF, cut). */
size_t plan_fmt_utf8_seq(const unsigned char *p, const unsigned char *end);

/* True when buf[0..len) is well-formed UTF-8 without NUL bytes (what a
 * JSON string can carry once escaped). */
bool plan_fmt_utf8_ok(const char *buf, size_t len);

/* True when `buf` starts with '{' after JSON whitespace, or is empty /
 * all whitespace (the JSON reader then explains the problem). */
bool plan_fmt_looks_json(const char *buf, size_t len);

/* What both writers refuse (-EINVAL: a name that is not UTF-8 or too long;
 * -ERANGE: an id, budget or figure above PLAN_FMT_MAX_*): what we write
 * must read back. */
int plan_fmt_check_trace(const plan_trace *t);
int plan_fmt_check_schedule(const plan_schedule *s);

/* ------------------------------------------------------------ writing */

/* plan_fmt_double (the shortest round-trip form of a double) is in
 * plan_io.h: the node writer prints numbers the same way. */

/* Text output through a large buffer (one fwrite per 1 MiB). */
typedef struct plan_wbuf {
    FILE *f;
    char *buf;
    size_t n, cap;
    int rc;           /* first error: -ENOMEM or -EIO */
} plan_wbuf;

void plan_wbuf_init(plan_wbuf *w, FILE *f);
void plan_wbuf_put(plan_wbuf *w, const char *s, size_t n);
void plan_wbuf_puts(plan_wbuf *w, const char *s);
void plan_wbuf_u64(plan_wbuf *w, uint64_t v);
void plan_wbuf_double(plan_wbuf *w, double v);
/* A JSON string literal of UTF-8 s (escapes ", \, control characters). */
void plan_wbuf_str(plan_wbuf *w, const char *s);
/* Write out what is left, fflush; 0, -ENOMEM or -EIO.  Releases w. */
int plan_wbuf_done(plan_wbuf *w);

/* ------------------------------------------------------------ reading
 *
 * A reader records the first error in the order the format defines (the
 * document's header, its top-level keys, then each array's entries in
 * order ...), whatever the order it meets them in: every error carries a
 * precedence key, RD_KEY(stage, index), and only a smaller key replaces
 * the one recorded.  A fatal error (syntax, corrupt message, no memory)
 * ends the read at once and wins over everything. */

typedef struct plan_rd {
    char *err;        /* the caller's message buffer */
    size_t errlen;
    int code;         /* HO_E_BAD_TRACE or HO_E_BAD_SCHEDULE */
    int rc;           /* 0, or the recorded error's code */
    uint64_t key;     /* its precedence */
} plan_rd;

#define RD_KEY(stage, index) ((uint64_t)(stage) << 40 | (uint64_t)(index))

/* Would an error with this key replace the recorded one? */
static inline bool plan_rd_worth(const plan_rd *r, uint64_t key)
{
    return r->rc == 0 || key < r->key;
}

/* Record "place.field: message" (or "place: ..." / "field: ...") with
 * code r->code under `key`.  Returns the code (< 0). */
int plan_rd_fail(plan_rd *r, uint64_t key, const char *place,
                 const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Record `msg` as it is, with `code` (e.g. -ENOMEM). */
int plan_rd_set(plan_rd *r, uint64_t key, int code, const char *msg);
/* Start a read of a `len`-byte document: the record set up, err cleared;
 * -EFBIG ("<what>: larger than ... bytes") above PLAN_FMT_MAX_FILE. */
int plan_rd_begin(plan_rd *r, int code, char *err, size_t errlen,
                  size_t len, const char *what);

/* Range checks with the formats' sentences: an integer in [min, max]
 * ("must be <what>, got V" / "must be at most MAX, got V"), a finite
 * double in [min, max] (min excluded when min_open), a name of at most
 * max bytes of UTF-8.  `got` is how the value is written in the message.
 * 0 or the recorded code. */
int plan_rd_uint(plan_rd *r, uint64_t key, const char *place,
                 const char *field, uint64_t v, uint64_t min, uint64_t max,
                 const char *what);
int plan_rd_double(plan_rd *r, uint64_t key, const char *place,
                   const char *field, double v, const char *got,
                   double min, bool min_open, double max, const char *what);
/* The condition plan_rd_double checks, for callers that format `got`
 * only on failure. */
static inline bool plan_rd_double_ok(double v, double min, bool min_open,
                                     double max)
{
    return v >= min && !(min_open && v == min) && v <= max &&
           v - v == 0; /* finite */
}
/* "arr[i]" into buf (>= 48 bytes), without printf. */
void plan_rd_place(char *buf, const char *arr, size_t i);
int plan_rd_name(plan_rd *r, uint64_t key, const char *place,
                 const char *field, const char *s, size_t len, size_t max);

/* Builders shared by the readers, each checking what the format says:
 * storages[i] (a duplicate id names the first one; plan_trace_add_storage
 * errors such as a bad `movable` are prefixed with the place); ops[i]
 * (an unknown id names reads[j] / writes[j]; *total_refs counts the
 * trace's references); actions[i] and homes[i] by storage id. */
int plan_rd_storage(plan_rd *r, uint64_t key, plan_trace *t, size_t i,
                    const plan_storage *s);
/* ids[0..n) of ops[i].field ("reads" / "writes") into storage indices. */
int plan_rd_resolve(plan_rd *r, uint64_t key, const plan_trace *t, size_t i,
                    const char *field, const uint64_t *ids, uint32_t n,
                    uint32_t *idx);
/* Add ops[i] with resolved references idx[0 .. n_reads + n_writes). */
int plan_rd_op(plan_rd *r, uint64_t key, plan_trace *t, size_t i,
               const char *name, double duration_us, const uint32_t *idx,
               uint32_t n_reads, uint32_t n_writes, uint64_t *total_refs);
int plan_rd_action(plan_rd *r, uint64_t key, plan_schedule *s, size_t i,
                   uint32_t op, plan_when when, plan_act_kind kind,
                   uint64_t storage_id);
int plan_rd_home(plan_rd *r, uint64_t key, plan_schedule *s, size_t i,
                 uint64_t storage_id, plan_home home);

/* Set a trace's name (copied, at most PLAN_FMT_MAX_NAME bytes, valid
 * UTF-8 already checked).  0 or -ENOMEM. */
int plan_rd_trace_name(plan_trace *t, const char *name, size_t len);

#endif
