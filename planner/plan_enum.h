/*
 * planner/plan_enum.h - the one way the planner's libraries give an enum
 * its spelling: a table of names indexed by value, and PLAN_ENUM_NAMES,
 * which defines the `name` function ("?" out of range) and the `parse`
 * function (0, or -EINVAL for NULL or an unknown spelling) from it.
 * Internal to the planner libraries (ir.c, bound/, node/).
 */
#ifndef HO_PLANNER_PLAN_ENUM_H
#define HO_PLANNER_PLAN_ENUM_H

/* Index of `s` in names[0..n): 0 and *ret_value, or -EINVAL (ir.c). */
int plan_name_index(const char *s, const char *const *names, unsigned n,
                    unsigned *ret_value);

#define PLAN_ENUM_NAMES(type, name_fn, parse_fn, table, count)               \
    const char *name_fn(type v)                                              \
    {                                                                        \
        return (unsigned)v < (count) ? table[v] : "?";                       \
    }                                                                        \
    int parse_fn(const char *s, type *ret_value)                             \
    {                                                                        \
        unsigned v;                                                          \
        int r = plan_name_index(s, table, (count), &v);                      \
        if (r == 0)                                                          \
            *ret_value = (type)v;                                            \
        return r;                                                            \
    }

#endif
