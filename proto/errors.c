/* proto/errors.c - ho_strerror() and ho_err_name() for every code of
 * hyperoffload/errors.h (generated from HO_ERROR_MAP) and negative errno
 * values; ho_errf(), the one sentence formatter (proto/errfmt.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"

struct ho_err_row {
    int code;
    const char *name;
    const char *text;
};

static const struct ho_err_row ho_err_table[] = {
    {HO_OK, "HO_OK", "success"},
#define HO__ERROR_ROW(name, code, text) {code, "HO_E_" #name, text},
    HO_ERROR_MAP(HO__ERROR_ROW)
#undef HO__ERROR_ROW
};

static const struct ho_err_row *ho_err_find(int code)
{
    for (size_t i = 0; i < sizeof(ho_err_table) / sizeof(ho_err_table[0]); i++)
        if (ho_err_table[i].code == code)
            return &ho_err_table[i];
    return NULL;
}

HO_EXPORT const char *ho_strerror(int code)
{
    const struct ho_err_row *row = ho_err_find(code);
    if (row)
        return row->text;
    if (code < 0 && code > -1000)
        return strerror(-code); /* glibc: static text for known errno */
    return "unknown error";
}

HO_EXPORT const char *ho_err_name(int code)
{
    const struct ho_err_row *row = ho_err_find(code);
    if (row)
        return row->name;
    if (code < 0 && code > -1000) {
        const char *n = strerrorname_np(-code);
        if (n)
            return n;
    }
    return "HO_E_UNKNOWN";
}

int ho_verrf(char *err, size_t errlen, int code, const char *fmt, va_list ap)
{
    if (err && errlen > 0)
        vsnprintf(err, errlen, fmt, ap);
    return code;
}

int ho_errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ho_verrf(err, errlen, code, fmt, ap);
    va_end(ap);
    return code;
}
