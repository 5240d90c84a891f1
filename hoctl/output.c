/* hoctl/output.c - see output.h. */
#include "hoctl/output.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hoctl/hoctl.h"
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

int hoctl_json_emit(json_t *o)
{
    if (!o) {
        fputs("hoctl: out of memory\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    putchar('\n');
    json_decref(o);
    if (rc != 0) {
        fputs("hoctl: cannot write JSON\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    return HOCTL_EXIT_OK;
}
