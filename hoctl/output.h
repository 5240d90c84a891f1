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
 *                 first, raw byte counts (clamped to INT64_MAX), durations
 *                 in integer microseconds, reals in their shortest
 *                 round-trip form, indented by 2 (one line per document
 *                 under --watch); docs/cli-schema.json describes them all.
 *
 * Tabular output is a "sheet": typed columns (string, bytes, us, age,
 * integer, real, percentage, bool) filled once per row; the same sheet
 * prints as an aligned table (libsmartcols; IEC sizes, "-" for absent
 * cells, a last text column cut to a terminal's width), CSV (raw
 * values) or a JSON array of objects (raw values, null for absent cells),
 * with `-o COL,...` selecting the columns.
 *
 * Errors go to stderr as "hoctl: <sentence>".  With --json a command runs
 * inside hoctl_capture_begin/end: what it writes to stderr is kept, and
 * when it fails without printing a document, one error document
 * {"schema", "error": {"code", "name", "message"[, "cause"]}} is printed
 * on stdout (the sentences still reach stderr).
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
/* Print `o` on stdout followed by a newline and release it (reals in
 * their shortest round-trip form; one line when hoctl_json_compact).
 * HOCTL_EXIT_OK, or HOCTL_EXIT_FAILED with a sentence on stderr when o is
 * NULL (out of memory) or cannot be written. */
int hoctl_json_emit(json_t *o);

/* One document per line (--watch): set before the first emit. */
extern bool hoctl_json_compact;

/* A real for JSON: null when not finite. */
json_t *hoctl_json_real(double v);
/* Microseconds from a double (model times, seconds * 1e6 ...): rounded to
 * the nearest integer, null when not finite or negative. */
json_t *hoctl_json_us(double us);

/* ------------------------------------------------------- error documents */

/* Start capturing stderr for one command run (JSON mode).  0, or -errno
 * when it cannot (then nothing is captured and end does nothing). */
int hoctl_capture_begin(void);
/* Stop capturing: copy what was captured to the real stderr and, when
 * rc != 0 and no document was emitted since begin, emit an error document
 * for exit status rc.  Returns rc. */
int hoctl_capture_end(int rc);
/* The library / daemon error code behind the failure being reported
 * (ho_err_name names it in the error document's "cause"). */
void hoctl_note_cause(int code);
/* An error object {"code": exit_rc, "name", "message"[, "cause"]} for
 * documents that report a failure themselves (cause 0: none). */
json_t *hoctl_json_error(int exit_rc, int cause, const char *message);
/* The symbolic name of an exit status ("usage", "unreachable", ...). */
const char *hoctl_exit_name(int rc);

/* ---------------------------------------------------------------- sheets */

typedef enum hoctl_type {
    HOCTL_T_STR,   /* text; JSON string */
    HOCTL_T_BYTES, /* IEC size; JSON integer bytes */
    HOCTL_T_US,    /* duration "12.300 ms"; JSON integer microseconds */
    HOCTL_T_AGE,   /* age "4m 05s"; JSON integer microseconds */
    HOCTL_T_INT,   /* decimal; JSON integer */
    HOCTL_T_REAL,  /* %g; JSON shortest round-trip real */
    HOCTL_T_PCT,   /* a fraction shown as "12.5%"; JSON real in [0, 1] */
    HOCTL_T_BOOL,  /* yes/no; JSON true/false */
} hoctl_type;

typedef struct hoctl_col {
    const char *name; /* header and -o name ("LARGEST"), one word */
    const char *key;  /* JSON key and CSV header ("largest_free") */
    hoctl_type type;
    bool hidden;      /* not in the default table (-o / JSON / CSV) */
} hoctl_col;

#define HOCTL_SHEET_MAX_COLS 24

typedef struct hoctl_cell {
    bool set; /* false: absent ("-", null, empty) */
    union {
        char *s;
        int64_t i;
        uint64_t u;
        double d;
        bool b;
    } v;
} hoctl_cell;

/* Rows of typed cells; embedded on the caller's stack: init, row + set
 * per row, print / json, done. */
typedef struct hoctl_sheet {
    const hoctl_col *cols;
    unsigned ncols;
    size_t nrows, cap;
    hoctl_cell *cells; /* nrows * ncols */
    bool oom;          /* a row or string could not be stored */
} hoctl_sheet;

void hoctl_sheet_init(hoctl_sheet *s, const hoctl_col *cols, unsigned ncols);
/* Append a row of absent cells; the setters fill the last row. */
void hoctl_sheet_row(hoctl_sheet *s);
void hoctl_set_str(hoctl_sheet *s, unsigned col, const char *v); /* copied */
void hoctl_set_u64(hoctl_sheet *s, unsigned col, uint64_t v);
void hoctl_set_i64(hoctl_sheet *s, unsigned col, int64_t v);
void hoctl_set_real(hoctl_sheet *s, unsigned col, double v);
void hoctl_set_bool(hoctl_sheet *s, unsigned col, bool v);
void hoctl_sheet_done(hoctl_sheet *s);

/* The columns to show, in order. */
typedef struct hoctl_view {
    unsigned n;
    unsigned idx[HOCTL_SHEET_MAX_COLS];
} hoctl_view;

/* Columns from `spec` (-o): "COL,COL" (case-insensitive, name or key),
 * "+COL,..." (the defaults and these), "all".  NULL: the default table
 * columns when `table`, else every column.  0, or a usage error that
 * lists the valid names. */
int hoctl_sheet_view(const hoctl_sheet *s, const char *spec, bool table,
                     hoctl_view *ret);
/* Aligned table on stdout (header first, numbers right-aligned). */
void hoctl_sheet_table(const hoctl_sheet *s, const hoctl_view *v);
/* CSV on stdout (RFC 4180 quoting, JSON keys as header, raw values). */
void hoctl_sheet_csv(const hoctl_sheet *s, const hoctl_view *v);
/* A JSON array with one object per row (NULL on OOM). */
json_t *hoctl_sheet_json(const hoctl_sheet *s, const hoctl_view *v);
/* The JSON value of one cell. */
json_t *hoctl_cell_json(const hoctl_sheet *s, size_t row, unsigned col);

#endif
