/*
 * hoctl/output.h - everything hoctl prints, in one place: usage errors,
 * sizes and durations, aligned tables, "label  value" fields and JSON
 * documents.  hoctl_admin.c (daemon nouns) and hoctl_plan.c (offline
 * nouns) print only through these, so both look and read alike:
 *
 *   human output  IEC sizes ("1.5 GiB", hyperoffload/size.h), aligned
 *                 tables whose first row is the header, fields with the
 *                 value at column 20;
 *   --json        one object per command, "schema": HOCTL_JSON_SCHEMA
 *                 first, raw byte counts (clamped to INT64_MAX), reals
 *                 with 17 significant digits, indented by 2.
 *
 * Errors go to stderr as "hoctl: <sentence>".
 */
#ifndef HO_HOCTL_OUTPUT_H
#define HO_HOCTL_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------- usage errors */

/* Print "hoctl: <fmt>" on stderr, then `hint` (NULL: none) and a newline;
 * returns HOCTL_EXIT_USAGE.  Called through the two macros below. */
int hoctl_usage(const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* hoctl_usage_error(fmt, ...): the sentence alone (the offline nouns,
 * which print their own usage); hoctl_usage_error_help(fmt, ...): followed
 * by " (try hoctl --help)" (the daemon nouns and the noun dispatch). */
#define hoctl_usage_error(...) hoctl_usage(NULL, __VA_ARGS__)
#define hoctl_usage_error_help(...)                                        \
    hoctl_usage(" (try hoctl --help)", __VA_ARGS__)

/* ------------------------------------------------------ figures as text */

/* A buffer for one formatted figure. */
#define HOCTL_FMT_LEN 32
typedef char hoctl_fmt[HOCTL_FMT_LEN];

/* The formatters write into buf and return it. */
/* IEC size: "512 B", "1.5 GiB" (ho_size_format). */
const char *hoctl_fmt_size(uint64_t bytes, hoctl_fmt buf);
/* Decimal integer. */
const char *hoctl_fmt_u64(uint64_t v, hoctl_fmt buf);
/* An age or uptime in seconds: "12.3s", "4m 05s", "3h 02m", "2d 07h". */
const char *hoctl_fmt_age(double seconds, hoctl_fmt buf);
/* A model duration in microseconds: "812.5 us", "12.300 ms", "3.520 s". */
const char *hoctl_fmt_us(double us, hoctl_fmt buf);

/* ---------------------------------------------------------------- fields */

/* "label" padded to 19 columns, then printf(fmt, ...), then a newline. */
void hoctl_field(const char *label, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Field helpers for the common values: an IEC size, an IEC size with the
 * exact byte count ("70.3 GiB (75473193779 B)"), a duration in us. */
void hoctl_field_size(const char *label, uint64_t bytes);
void hoctl_field_bytes(const char *label, uint64_t bytes);
void hoctl_field_us(const char *label, double us);

/* ---------------------------------------------------------------- tables */

#define HOCTL_TABLE_MAX_COLS 14
#define HOCTL_TABLE_CELL 192 /* bytes of a cell, with the NUL */

/* An aligned text table built row by row; the first row is the header.
 * Embedded (on the caller's stack): hoctl_table_init, rows, then
 * hoctl_table_print (which also releases it) or hoctl_table_done. */
typedef struct hoctl_table {
    unsigned ncols;
    size_t nrows, cap;
    char (*cells)[HOCTL_TABLE_MAX_COLS][HOCTL_TABLE_CELL];
    bool oom; /* a row could not be stored: later rows are dropped */
} hoctl_table;

void hoctl_table_init(hoctl_table *t, unsigned ncols);
/* Append one row: exactly ncols `const char *` arguments (NULL prints as
 * empty); cells are truncated to HOCTL_TABLE_CELL - 1 bytes. */
void hoctl_table_row(hoctl_table *t, ...);
/* Print every row on stdout (columns two spaces apart, the last one not
 * padded, each line after `indent`), then release the table. */
void hoctl_table_print(hoctl_table *t, const char *indent);
/* Release the rows (the table may be init'ed again). */
void hoctl_table_done(hoctl_table *t);

/* ------------------------------------------------------------------ JSON */

/* A new object holding "schema": HOCTL_JSON_SCHEMA (NULL on OOM). */
json_t *hoctl_json_root(void);
/* An integer from a uint64 (clamped to INT64_MAX). */
json_t *hoctl_json_u64(uint64_t v);
/* A string; NULL becomes "". */
json_t *hoctl_json_str(const char *s);
/* Print `o` on stdout followed by a newline and release it.
 * HOCTL_EXIT_OK, or HOCTL_EXIT_FAILED with a sentence on stderr when o is
 * NULL (out of memory) or cannot be written. */
int hoctl_json_emit(json_t *o);

#endif
