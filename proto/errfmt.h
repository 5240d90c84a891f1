/*
 * proto/errfmt.h - the one way the project writes an error sentence.
 *
 * Every layer below the daemon's boundary reports a failure as a return
 * code (0 or negative: -errno or HO_E_*, hyperoffload/errors.h) plus, where
 * a sentence helps, text in a caller's buffer (`char *err, size_t errlen`;
 * err may be NULL or errlen 0 when the caller does not want it).  The
 * daemon keeps that style too, and logs once at its boundary; libraries
 * never log: the caller decides.
 */
#ifndef HO_PROTO_ERRFMT_H
#define HO_PROTO_ERRFMT_H

#include <stdarg.h>
#include <stddef.h>

/* printf `fmt` into err[0..errlen) (truncated, always NUL-terminated when
 * errlen > 0; nothing when err is NULL or errlen 0).  Returns `code`, so
 * that a failure reads `return ho_errf(err, errlen, -EINVAL, "...", x);`. */
int ho_errf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int ho_verrf(char *err, size_t errlen, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

#endif
