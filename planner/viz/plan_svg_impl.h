/*
 * planner/viz/plan_svg_impl.h - pieces shared by the files of ho_plan_viz
 * (not installed, not for other folders).
 */
#ifndef HO_PLANNER_VIZ_PLAN_SVG_IMPL_H
#define HO_PLANNER_VIZ_PLAN_SVG_IMPL_H

#include <stdio.h>

/* A "nice" tick step (1, 2 or 5 times a power of ten) for about n ticks
 * over range. */
double plan_svg_tick_step(double range, int n);
/* The unit labels of a time span: s, ms or us, and its size in µs. */
void plan_svg_time_unit(double span_us, double *ret_div,
                        const char **ret_name);
/* The XML prolog, the <svg> element of w x h, a white background, the
 * title and subtitle lines. */
void plan_svg_header(FILE *out, int w, int h, const char *title,
                     const char *subtitle);

/* Write through `write(arg, FILE *)` to path (created or truncated,
 * removed again on error).  0 or -errno / write's code. */
int plan_svg_to_file(const char *path, int (*write)(const void *, FILE *),
                     const void *arg);

#endif
