/*
 * planner/io/plan_io.h - reading and writing traces and schedules: the JSON
 * forms of PLANNER.md §1-§2 and the protobuf forms of proto/plan.proto
 * (library ho_plan_io; planner/io/).
 */
#ifndef HO_PLANNER_IO_PLAN_IO_H
#define HO_PLANNER_IO_PLAN_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ formats
 */

/* JSON (PLANNER.md §1-§2).  Readers return HO_E_BAD_TRACE /
 * HO_E_BAD_SCHEDULE with a message naming the place ("ops[12].reads[1]:
 * unknown storage id 99"), -ENOENT/-EIO for the file.  A trace read is
 * finished.  A schedule read is not bound (ids only). */
int plan_trace_read_json(const char *path, plan_trace **ret_trace, char *err,
                         size_t errlen);
int plan_trace_parse_json(const char *buf, size_t len, plan_trace **ret_trace,
                          char *err, size_t errlen);
int plan_trace_write_json(const plan_trace *t, FILE *out);
int plan_schedule_read_json(const char *path, plan_schedule **ret_schedule,
                            char *err, size_t errlen);
int plan_schedule_parse_json(const char *buf, size_t len,
                             plan_schedule **ret_schedule, char *err,
                             size_t errlen);
int plan_schedule_write_json(const plan_schedule *s, FILE *out);

/* Protobuf (proto/plan.proto), lossless against JSON.  *ret_buf is
 * malloc'ed, owned by the caller. */
int plan_trace_to_pb(const plan_trace *t, uint8_t **ret_buf, size_t *ret_len);
int plan_trace_from_pb(const uint8_t *buf, size_t len, plan_trace **ret_trace,
                       char *err, size_t errlen);
int plan_schedule_to_pb(const plan_schedule *s, uint8_t **ret_buf,
                        size_t *ret_len);
int plan_schedule_from_pb(const uint8_t *buf, size_t len,
                          plan_schedule **ret_schedule, char *err,
                          size_t errlen);

/* Read a file in either format (JSON when it starts with '{' after
 * whitespace, protobuf otherwise). */
int plan_trace_read_file(const char *path, plan_trace **ret_trace, char *err,
                         size_t errlen);
int plan_schedule_read_file(const char *path, plan_schedule **ret_schedule,
                            char *err, size_t errlen);

/* The shortest "%.{p}g" (p <= 17) that reads back as exactly v; whole
 * numbers below 10^15 as integers; -0 as 0.  buf holds >= 32 bytes;
 * returns the length.  Every planner JSON writer prints doubles so. */
size_t plan_fmt_double(char *buf, double v);

#ifdef __cplusplus
}
#endif
#endif
