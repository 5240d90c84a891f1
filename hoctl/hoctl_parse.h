/*
 * hoctl/hoctl_parse.h - strict parsing of the sizes hoctl is given
 * (quota limits, plan budgets, generator sizes).
 *
 * ho_size_parse (hyperoffload/size.h) is the project's grammar: digits,
 * an optional fraction, an optional IEC unit.  hoctl adds what a command
 * line needs: a fraction of a byte ("1.5" without a unit) is refused, as
 * is anything over `max`, each with a reason for the user.
 */
#ifndef HO_HOCTL_HOCTL_PARSE_H
#define HO_HOCTL_HOCTL_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The largest quota limit: JSON integers and the daemon's accounting are
 * signed 64-bit (8 EiB - 1 B); the tier capacity check comes after. */
#define HOCTL_QUOTA_MAX ((uint64_t)INT64_MAX)

/* Parse `s` into *ret.  0, or -EINVAL / -ERANGE with the reason in why
 * ("'1.5' is a fraction of a byte: ..."). */
int hoctl_size_parse(const char *s, uint64_t max, uint64_t *ret, char *why,
                     size_t whylen);

#endif
