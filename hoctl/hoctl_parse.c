/* hoctl/hoctl_parse.c - see hoctl_parse.h. */
#include "hoctl/hoctl_parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "hyperoffload/size.h"

int hoctl_size_parse(const char *s, uint64_t max, uint64_t *ret, char *why,
                     size_t whylen)
{
    const char *p = s;
    bool frac = false;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '-' || *p == '+') {
        snprintf(why, whylen, "'%s' is not a size: no sign allowed (e.g. "
                 "2G, 512MiB, 4096)", s);
        return -EINVAL;
    }
    while (isdigit((unsigned char)*p) || *p == '.')
        frac |= *p++ == '.';
    while (*p == ' ' || *p == '\t')
        p++;
    if (frac && (*p == '\0' || ((*p == 'B' || *p == 'b') && p[1] == '\0'))) {
        snprintf(why, whylen, "'%s' is a fraction of a byte: give a whole "
                 "number of bytes or a unit (1.5K, 1.5G)", s);
        return -EINVAL;
    }
    int rc = ho_size_parse(s, ret);
    if (rc == -ERANGE) {
        snprintf(why, whylen, "'%s' is too large (over 16 EiB)", s);
        return -ERANGE;
    }
    if (rc < 0) {
        snprintf(why, whylen, "'%s' is not a size (e.g. 2G, 512MiB, 4096)",
                 s);
        return -EINVAL;
    }
    if (*ret > max) {
        snprintf(why, whylen, "'%s' is over the limit of %llu B", s,
                 (unsigned long long)max);
        return -ERANGE;
    }
    return 0;
}
