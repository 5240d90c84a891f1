/* hoctl/output.c - see output.h. */
#include "hoctl/output.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libsmartcols.h>

#include "hoctl/hoctl.h"
#include "hyperoffload/errors.h"
#include "hyperoffload/size.h"

/* ---------------------------------------------------------- usage errors */

int hoctl_usage(const char *hint, const char *fmt, ...)
{
    va_list ap;
    fputs("hoctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (hint)
        fputs(hint, stderr);
    fputc('\n', stderr);
    return HOCTL_EXIT_USAGE;
}

/* ------------------------------------------------------ figures as text */

const char *hoctl_fmt_size(uint64_t bytes, hoctl_fmt buf)
{
    return ho_size_format(bytes, buf, HOCTL_FMT_LEN);
}

const char *hoctl_fmt_u64(uint64_t v, hoctl_fmt buf)
{
    snprintf(buf, HOCTL_FMT_LEN, "%llu", (unsigned long long)v);
    return buf;
}

const char *hoctl_fmt_age(double s, hoctl_fmt buf)
{
    unsigned long long t = s > 0 ? (unsigned long long)s : 0;
    if (s < 60)
        snprintf(buf, HOCTL_FMT_LEN, "%.1fs", s > 0 ? s : 0.0);
    else if (t < 3600)
        snprintf(buf, HOCTL_FMT_LEN, "%llum %02llus", t / 60, t % 60);
    else if (t < 86400)
        snprintf(buf, HOCTL_FMT_LEN, "%lluh %02llum", t / 3600, t / 60 % 60);
    else
        snprintf(buf, HOCTL_FMT_LEN, "%llud %02lluh", t / 86400,
                 t / 3600 % 24);
    return buf;
}

const char *hoctl_fmt_us(double us, hoctl_fmt buf)
{
    double a = fabs(us);
    if (a >= 1e6)
        snprintf(buf, HOCTL_FMT_LEN, "%.3f s", us / 1e6);
    else if (a >= 1e3)
        snprintf(buf, HOCTL_FMT_LEN, "%.3f ms", us / 1e3);
    else
        snprintf(buf, HOCTL_FMT_LEN, "%.1f us", us);
    return buf;
}

/* ---------------------------------------------------------------- fields */

void hoctl_field(const char *label, const char *fmt, ...)
{
    va_list ap;
    printf("%-19s", label);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

void hoctl_field_size(const char *label, uint64_t bytes)
{
    hoctl_fmt b;
    hoctl_field(label, "%s", hoctl_fmt_size(bytes, b));
}

void hoctl_field_bytes(const char *label, uint64_t bytes)
{
    hoctl_fmt b;
    hoctl_field(label, "%s (%llu B)", hoctl_fmt_size(bytes, b),
                (unsigned long long)bytes);
}

void hoctl_field_us(const char *label, double us)
{
    hoctl_fmt b;
    hoctl_field(label, "%s", hoctl_fmt_us(us, b));
}

/* ---------------------------------------------------------------- tables */

void hoctl_table_init(hoctl_table *t, unsigned ncols)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols;
}

void hoctl_table_row(hoctl_table *t, ...)
{
    if (t->oom)
        return;
    if (t->nrows == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 16;
        void *p = realloc(t->cells, ncap * sizeof(*t->cells));
        if (!p) {
            t->oom = true;
            return;
        }
        t->cells = p;
        t->cap = ncap;
    }
    va_list ap;
    va_start(ap, t);
    for (unsigned i = 0; i < t->ncols; i++) {
        const char *s = va_arg(ap, const char *);
        snprintf(t->cells[t->nrows][i], HOCTL_TABLE_CELL, "%s", s ? s : "");
    }
    va_end(ap);
    t->nrows++;
}

void hoctl_table_done(hoctl_table *t)
{
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

void hoctl_table_print(hoctl_table *t, const char *indent)
{
    size_t width[HOCTL_TABLE_MAX_COLS] = {0};
    for (size_t r = 0; r < t->nrows; r++)
        for (unsigned i = 0; i < t->ncols; i++) {
            size_t n = strlen(t->cells[r][i]);
            if (n > width[i])
                width[i] = n;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        fputs(indent, stdout);
        for (unsigned i = 0; i < t->ncols; i++) {
            if (i + 1 == t->ncols)
                printf("%s", t->cells[r][i]);
            else
                printf("%-*s  ", (int)width[i], t->cells[r][i]);
        }
        putchar('\n');
    }
    hoctl_table_done(t);
}

/* ------------------------------------------------------------------ JSON */

json_t *hoctl_json_root(void)
{
    json_t *o = json_object();
    if (o)
        json_object_set_new(o, "schema", json_integer(HOCTL_JSON_SCHEMA));
    return o;
}

json_t *hoctl_json_u64(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

json_t *hoctl_json_str(const char *s)
{
    return json_string(s ? s : "");
}

bool hoctl_json_compact;
static bool json_emitted; /* a document went out since capture began */

json_t *hoctl_json_real(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *hoctl_json_us(double us)
{
    if (!isfinite(us) || us < 0 || us >= 9.2e18)
        return json_null();
    return json_integer((json_int_t)llround(us));
}

/* The shortest %.Ng that reads back as v, with ".0" when it would read
 * as an integer. */
static void real_text(double v, char *buf, size_t n)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strpbrk(buf, ".eEn"))
        strncat(buf, ".0", n - strlen(buf) - 1);
}

/* Write `v` with reals in their shortest form (jansson prints 17 digits):
 * containers here, scalars through jansson's own encoder. */
static int emit_value(const json_t *v, FILE *f, int depth)
{
    const char *nl = hoctl_json_compact ? "" : "\n";
    int ind = hoctl_json_compact ? 0 : 2 * (depth + 1);
    if (json_is_real(v)) {
        char buf[40];
        if (!isfinite(json_real_value(v)))
            return fputs("null", f) < 0 ? -1 : 0;
        real_text(json_real_value(v), buf, sizeof(buf));
        return fputs(buf, f) < 0 ? -1 : 0;
    }
    if (json_is_object(v) && json_object_size(v) > 0) {
        const char *k;
        json_t *x;
        size_t i = 0;
        fputc('{', f);
        json_object_foreach((json_t *)v, k, x)
        {
            json_t *key = json_string(k);
            char *ks = key ? json_dumps(key, JSON_ENCODE_ANY) : NULL;
            json_decref(key);
            if (!ks)
                return -1;
            fprintf(f, "%s%s%*s%s:%s", i++ ? "," : "", nl, ind, "", ks,
                    hoctl_json_compact ? "" : " ");
            free(ks);
            if (emit_value(x, f, depth + 1) < 0)
                return -1;
        }
        fprintf(f, "%s%*s}", nl, ind - (hoctl_json_compact ? 0 : 2), "");
        return 0;
    }
    if (json_is_array(v) && json_array_size(v) > 0) {
        size_t i;
        json_t *x;
        fputc('[', f);
        json_array_foreach(v, i, x)
        {
            fprintf(f, "%s%s%*s", i ? "," : "", nl, ind, "");
            if (emit_value(x, f, depth + 1) < 0)
                return -1;
        }
        fprintf(f, "%s%*s]", nl, ind - (hoctl_json_compact ? 0 : 2), "");
        return 0;
    }
    char *t = json_dumps(v, JSON_ENCODE_ANY);
    if (!t)
        return -1;
    int rc = fputs(t, f) < 0 ? -1 : 0;
    free(t);
    return rc;
}

int hoctl_json_emit(json_t *o)
{
    if (!o) {
        fputs("hoctl: out of memory\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    int rc = emit_value(o, stdout, 0);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
    json_emitted = true;
    if (rc != 0) {
        fputs("hoctl: cannot write JSON\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    return HOCTL_EXIT_OK;
}

/* ------------------------------------------------------- error documents */

static int saved_stderr = -1;
static FILE *captured;
static int cause_code;
static bool have_cause;

int hoctl_capture_begin(void)
{
    json_emitted = false;
    have_cause = false;
    fflush(stderr);
    captured = tmpfile();
    if (!captured)
        return -errno;
    saved_stderr = dup(STDERR_FILENO);
    if (saved_stderr < 0 || dup2(fileno(captured), STDERR_FILENO) < 0) {
        int e = -errno;
        if (saved_stderr >= 0)
            close(saved_stderr);
        saved_stderr = -1;
        fclose(captured);
        captured = NULL;
        return e;
    }
    return 0;
}

void hoctl_note_cause(int code)
{
    cause_code = code;
    have_cause = code != 0;
}

const char *hoctl_exit_name(int rc)
{
    switch (rc) {
    case HOCTL_EXIT_OK: return "ok";
    case HOCTL_EXIT_FAILED: return "failed";
    case HOCTL_EXIT_USAGE: return "usage";
    case HOCTL_EXIT_NOT_READY: return "not_ready";
    case HOCTL_EXIT_NOT_FOUND: return "not_found";
    case HOCTL_EXIT_DEGRADED: return "degraded";
    case HOCTL_EXIT_UNREACHABLE: return "unreachable";
    case HOCTL_EXIT_PERMISSION: return "permission";
    default: return "failed";
    }
}

json_t *hoctl_json_error(int exit_rc, int cause, const char *message)
{
    json_t *e = json_object();
    json_object_set_new(e, "code", json_integer(exit_rc));
    json_object_set_new(e, "name", json_string(hoctl_exit_name(exit_rc)));
    json_object_set_new(e, "message",
                        json_string(message && message[0]
                                        ? message
                                        : hoctl_exit_name(exit_rc)));
    if (cause)
        json_object_set_new(e, "cause", json_string(ho_err_name(cause)));
    return e;
}

/* The captured text `t` as one sentence (malloc'ed, NULL on OOM): its
 * "hoctl: " lines (all lines when there are none: a usage text is not the
 * reason), "hoctl: " dropped, joined with "; ", trailing blanks trimmed.
 * `t` is cut into lines in place. */
static char *one_sentence(char *t)
{
    size_t len = strlen(t);
    char *out = malloc(2 * len + 1), *w = out;
    if (!out)
        return NULL;
    bool tagged = strncmp(t, "hoctl: ", 7) == 0 || strstr(t, "\nhoctl: ");
    for (char *line = t; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, "hoctl: ", 7) == 0)
            line += 7;
        else if (tagged)
            line += strlen(line); /* skipped */
        size_t n = strlen(line);
        while (n && isspace((unsigned char)line[n - 1]))
            n--;
        if (n) {
            if (w != out) {
                memcpy(w, "; ", 2);
                w += 2;
            }
            memcpy(w, line, n);
            w += n;
        }
        line = nl ? nl + 1 : NULL;
    }
    *w = '\0';
    return out;
}

int hoctl_capture_end(int rc)
{
    if (!captured)
        return rc;
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    saved_stderr = -1;
    long n = ftell(captured);
    char *text = NULL;
    if (n > 0 && n < (1L << 20) && fseek(captured, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)n + 1)) != NULL) {
        size_t got = fread(text, 1, (size_t)n, captured);
        text[got] = '\0';
        fwrite(text, 1, got, stderr);
    }
    fclose(captured);
    captured = NULL;
    if (rc != 0 && !json_emitted) {
        json_t *o = hoctl_json_root();
        char *msg = text ? one_sentence(text) : NULL;
        json_object_set_new(o, "error",
                            hoctl_json_error(rc, have_cause ? cause_code : 0,
                                             msg));
        free(msg);
        hoctl_json_emit(o);
    }
    free(text);
    return rc;
}

/* ---------------------------------------------------------------- sheets */

void hoctl_sheet_init(hoctl_sheet *s, const hoctl_col *cols, unsigned ncols)
{
    memset(s, 0, sizeof(*s));
    s->cols = cols;
    s->ncols = ncols < HOCTL_SHEET_MAX_COLS ? ncols : HOCTL_SHEET_MAX_COLS;
}

void hoctl_sheet_row(hoctl_sheet *s)
{
    if (s->oom)
        return;
    if (s->nrows == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 8;
        void *p = realloc(s->cells, ncap * s->ncols * sizeof(hoctl_cell));
        if (!p) {
            s->oom = true;
            return;
        }
        s->cells = p;
        s->cap = ncap;
    }
    memset(&s->cells[s->nrows * s->ncols], 0, s->ncols * sizeof(hoctl_cell));
    s->nrows++;
}

/* The last row's cell `col`, or NULL when there is none. */
static hoctl_cell *last_cell(hoctl_sheet *s, unsigned col)
{
    if (s->oom || s->nrows == 0 || col >= s->ncols)
        return NULL;
    return &s->cells[(s->nrows - 1) * s->ncols + col];
}

void hoctl_set_str(hoctl_sheet *s, unsigned col, const char *v)
{
    hoctl_cell *c = last_cell(s, col);
    if (!c || !v)
        return;
    free(c->set ? c->v.s : NULL);
    c->v.s = strdup(v);
    c->set = c->v.s != NULL;
    s->oom |= !c->set;
}

void hoctl_set_u64(hoctl_sheet *s, unsigned col, uint64_t v)
{
    hoctl_cell *c = last_cell(s, col);
    if (c) {
        c->v.u = v;
        c->set = true;
    }
}

void hoctl_set_i64(hoctl_sheet *s, unsigned col, int64_t v)
{
    hoctl_cell *c = last_cell(s, col);
    if (c) {
        c->v.i = v;
        c->set = true;
    }
}

void hoctl_set_real(hoctl_sheet *s, unsigned col, double v)
{
    hoctl_cell *c = last_cell(s, col);
    if (c && isfinite(v)) {
        c->v.d = v;
        c->set = true;
    }
}

void hoctl_set_bool(hoctl_sheet *s, unsigned col, bool v)
{
    hoctl_cell *c = last_cell(s, col);
    if (c) {
        c->v.b = v;
        c->set = true;
    }
}

void hoctl_sheet_done(hoctl_sheet *s)
{
    for (size_t r = 0; r < s->nrows; r++)
        for (unsigned i = 0; i < s->ncols; i++) {
            hoctl_cell *c = &s->cells[r * s->ncols + i];
            if (c->set && s->cols[i].type == HOCTL_T_STR)
                free(c->v.s);
        }
    free(s->cells);
    s->cells = NULL;
    s->nrows = s->cap = 0;
}

static int find_col(const hoctl_sheet *s, const char *name, size_t n)
{
    for (unsigned i = 0; i < s->ncols; i++)
        if ((strlen(s->cols[i].name) == n &&
             strncasecmp(s->cols[i].name, name, n) == 0) ||
            (strlen(s->cols[i].key) == n &&
             strncasecmp(s->cols[i].key, name, n) == 0))
            return (int)i;
    return -1;
}

static void add_defaults(const hoctl_sheet *s, bool table, hoctl_view *v)
{
    for (unsigned i = 0; i < s->ncols; i++)
        if (!table || !s->cols[i].hidden)
            v->idx[v->n++] = i;
}

int hoctl_sheet_view(const hoctl_sheet *s, const char *spec, bool table,
                     hoctl_view *ret)
{
    ret->n = 0;
    if (!spec) {
        add_defaults(s, table, ret);
        return 0;
    }
    if (strcasecmp(spec, "all") == 0) {
        add_defaults(s, false, ret);
        return 0;
    }
    if (spec[0] == '+') {
        add_defaults(s, true, ret);
        spec++;
    }
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ",");
        int i = find_col(s, p, n);
        if (i < 0) {
            char valid[HOCTL_SHEET_MAX_COLS * 24] = "";
            for (unsigned k = 0; k < s->ncols; k++) {
                strncat(valid, k ? ", " : "",
                        sizeof(valid) - strlen(valid) - 1);
                strncat(valid, s->cols[k].name,
                        sizeof(valid) - strlen(valid) - 1);
            }
            return hoctl_usage_error("-o: unknown column '%.*s'; valid "
                                     "columns: %s", (int)(n > 64 ? 64 : n),
                                     p, valid);
        }
        bool dup = false;
        for (unsigned k = 0; k < ret->n; k++)
            dup |= ret->idx[k] == (unsigned)i;
        if (!dup && ret->n < HOCTL_SHEET_MAX_COLS)
            ret->idx[ret->n++] = (unsigned)i;
        p += n;
        if (*p == ',')
            p++;
    }
    if (ret->n == 0)
        return hoctl_usage_error("-o: no columns given");
    return 0;
}

static const hoctl_cell *cell_at(const hoctl_sheet *s, size_t r, unsigned c)
{
    return &s->cells[r * s->ncols + c];
}

/* The cell as table text into buf (or a pointer to its string). */
static const char *cell_text(const hoctl_sheet *s, size_t r, unsigned c,
                             hoctl_fmt buf)
{
    const hoctl_cell *x = cell_at(s, r, c);
    if (!x->set)
        return "-";
    switch (s->cols[c].type) {
    case HOCTL_T_STR: return x->v.s[0] ? x->v.s : "-";
    case HOCTL_T_BYTES: return hoctl_fmt_size(x->v.u, buf);
    case HOCTL_T_US: return hoctl_fmt_us((double)x->v.u, buf);
    case HOCTL_T_AGE: return hoctl_fmt_age((double)x->v.u / 1e6, buf);
    case HOCTL_T_INT:
        snprintf(buf, HOCTL_FMT_LEN, "%lld", (long long)x->v.i);
        return buf;
    case HOCTL_T_REAL:
        snprintf(buf, HOCTL_FMT_LEN, "%g", x->v.d);
        return buf;
    case HOCTL_T_PCT:
        snprintf(buf, HOCTL_FMT_LEN, "%.1f%%", x->v.d * 100.0);
        return buf;
    case HOCTL_T_BOOL: return x->v.b ? "yes" : "no";
    }
    return "?";
}

/* The cell as a raw CSV / machine value. */
static const char *cell_raw(const hoctl_sheet *s, size_t r, unsigned c,
                            char *buf, size_t n)
{
    const hoctl_cell *x = cell_at(s, r, c);
    if (!x->set)
        return "";
    switch (s->cols[c].type) {
    case HOCTL_T_STR: return x->v.s;
    case HOCTL_T_BYTES:
    case HOCTL_T_US:
    case HOCTL_T_AGE:
        snprintf(buf, n, "%llu", (unsigned long long)x->v.u);
        return buf;
    case HOCTL_T_INT:
        snprintf(buf, n, "%lld", (long long)x->v.i);
        return buf;
    case HOCTL_T_REAL:
    case HOCTL_T_PCT:
        real_text(x->v.d, buf, n);
        return buf;
    case HOCTL_T_BOOL: return x->v.b ? "true" : "false";
    }
    return "";
}

/* Through libsmartcols (the library behind lsblk): two spaces between
 * columns, numbers right-aligned, the header first.  On a terminal the
 * text columns marked to truncate (paths, details) give way so that the
 * table fits its width; into a pipe or file nothing is cut. */
void hoctl_sheet_table(const hoctl_sheet *s, const hoctl_view *v)
{
    struct libscols_table *tb = scols_new_table();
    hoctl_fmt b;
    bool ok = tb && scols_table_set_column_separator(tb, "  ") == 0;
    for (unsigned k = 0; ok && k < v->n; k++) {
        const hoctl_col *c = &s->cols[v->idx[k]];
        int fl = 0;
        if (c->type != HOCTL_T_STR && c->type != HOCTL_T_BOOL)
            fl |= SCOLS_FL_RIGHT;
        else if (k + 1 == v->n)
            fl |= SCOLS_FL_TRUNC;
        ok = scols_table_new_column(tb, c->name, 0, fl) != NULL;
    }
    for (size_t r = 0; ok && r < s->nrows; r++) {
        struct libscols_line *ln = scols_table_new_line(tb, NULL);
        for (unsigned k = 0; ln && k < v->n; k++)
            if (scols_line_set_data(ln, k, cell_text(s, r, v->idx[k], b)) < 0)
                ln = NULL;
        ok = ln != NULL;
    }
    if (ok)
        scols_print_table(tb);
    else
        fputs("hoctl: out of memory\n", stderr);
    scols_unref_table(tb);
}

static void csv_field(const char *t)
{
    if (!strpbrk(t, ",\"\r\n")) {
        fputs(t, stdout);
        return;
    }
    putchar('"');
    for (; *t; t++) {
        if (*t == '"')
            putchar('"');
        putchar(*t);
    }
    putchar('"');
}

void hoctl_sheet_csv(const hoctl_sheet *s, const hoctl_view *v)
{
    char buf[64];
    for (size_t r = 0; r <= s->nrows; r++) {
        for (unsigned k = 0; k < v->n; k++) {
            unsigned c = v->idx[k];
            if (k)
                putchar(',');
            csv_field(r == 0 ? s->cols[c].key
                             : cell_raw(s, r - 1, c, buf, sizeof(buf)));
        }
        fputs("\r\n", stdout);
    }
}

json_t *hoctl_cell_json(const hoctl_sheet *s, size_t r, unsigned c)
{
    const hoctl_cell *x = cell_at(s, r, c);
    if (!x->set)
        return json_null();
    switch (s->cols[c].type) {
    case HOCTL_T_STR: return json_string(x->v.s);
    case HOCTL_T_BYTES:
    case HOCTL_T_US:
    case HOCTL_T_AGE: return hoctl_json_u64(x->v.u);
    case HOCTL_T_INT: return json_integer(x->v.i);
    case HOCTL_T_REAL:
    case HOCTL_T_PCT: return json_real(x->v.d);
    case HOCTL_T_BOOL: return json_boolean(x->v.b);
    }
    return json_null();
}

json_t *hoctl_sheet_json(const hoctl_sheet *s, const hoctl_view *v)
{
    json_t *a = json_array();
    for (size_t r = 0; a && r < s->nrows; r++) {
        json_t *o = json_object();
        for (unsigned k = 0; o && k < v->n; k++)
            json_object_set_new(o, s->cols[v->idx[k]].key,
                                hoctl_cell_json(s, r, v->idx[k]));
        json_array_append_new(a, o);
    }
    return a;
}
