/*
 * hyperoffload/size.h - byte sizes as people write them, the one rule
 * shared by libhyperoffload, hoctl and hyperoffloadd (config and flags).
 * Implemented in proto/size.c.  C and C++ compatible.
 */
#ifndef HYPEROFFLOAD_SIZE_H
#define HYPEROFFLOAD_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "hyperoffload/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Format `bytes` with IEC units into buf[0..len): "512 B", "4.0 KiB",
 * "1.5 GiB" (one decimal from KiB up, rounded to nearest).  Truncates to
 * fit; returns buf ("" when len is 0 it returns buf untouched; NULL buf
 * returns NULL). */
HO_EXPORT char *ho_size_format(uint64_t bytes, char *buf, size_t len);

/* Parse a size: a decimal number with an optional fraction and an
 * optional IEC unit, case-insensitive, optionally separated by spaces:
 * "4096", "4k", "4K", "4KiB", "4Ki", "1.5G", "2 GiB", "10B"; units K M G T
 * P E are powers of 1024.  SI spellings such as "2GB" are rejected to
 * avoid ambiguity.  A fraction is truncated to whole bytes.  Returns 0 and
 * sets *ret, -EINVAL (empty, negative, junk, unknown unit) or -ERANGE
 * (above UINT64_MAX); *ret is untouched on failure. */
HO_EXPORT int ho_size_parse(const char *s, uint64_t *ret);

#ifdef __cplusplus
}
#endif
#endif
