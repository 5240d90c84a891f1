/* proto/size.c - ho_size_format() and ho_size_parse(), see
 * hyperoffload/size.h.  Part of ho_proto so that the daemon, the library
 * and hoctl share one rule. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hyperoffload/size.h"

HO_EXPORT char *ho_size_format(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB",
                                        "TiB", "PiB", "EiB"};
    if (!buf || len == 0)
        return buf;
    if (bytes < 1024) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    unsigned u = 0;
    double v = (double)bytes / 1024.0;
    /* Move up while the value, rounded to one decimal, reaches 1024. */
    while (u + 1 < sizeof(units) / sizeof(units[0]) && v >= 1023.95) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

static const char *skip_spaces(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

HO_EXPORT int ho_size_parse(const char *s, uint64_t *ret)
{
    uint64_t whole = 0, frac = 0, frac_scale = 1;
    bool digits = false;
    unsigned shift = 0;

    if (!s || !ret)
        return -EINVAL;
    const char *p = skip_spaces(s);
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10)
            return -ERANGE;
        whole = whole * 10 + d;
        digits = true;
    }
    if (*p == '.') {
        p++;
        for (; isdigit((unsigned char)*p); p++) {
            digits = true;
            if (frac_scale < 1000000000000000000ull) { /* 18 digits kept */
                frac = frac * 10 + (unsigned)(*p - '0');
                frac_scale *= 10;
            }
        }
    }
    if (!digits)
        return -EINVAL;
    p = skip_spaces(p);

    switch (toupper((unsigned char)*p)) {
    case '\0':
        break;
    case 'B':
        p++;
        break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    case 'P': shift = 50; break;
    case 'E': shift = 60; break;
    default:
        return -EINVAL;
    }
    if (shift) {
        p++;
        if (*p == 'i' || *p == 'I') {
            p++;
            if (*p == 'B' || *p == 'b')
                p++;
        } else if (*p == 'B' || *p == 'b') {
            return -EINVAL; /* "GB": SI or IEC?  Refuse to guess. */
        }
    }
    p = skip_spaces(p);
    if (*p != '\0')
        return -EINVAL;

    if (shift && whole > (UINT64_MAX >> shift))
        return -ERANGE;
    uint64_t v = whole << shift;
    unsigned __int128 f = ((unsigned __int128)frac << shift) / frac_scale;
    if (f > UINT64_MAX - v)
        return -ERANGE;
    *ret = v + (uint64_t)f;
    return 0;
}
