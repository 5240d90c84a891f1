/* planner/viz/plan_svg_steps.c - see plan_svg.h: the per-step chart of
 * exposed and stall time. */
#include "planner/viz/plan_svg.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "planner/viz/plan_svg_impl.h"

#define SX0 110.0
#define SX1 1160.0
#define SY0 80.0
#define SY1 360.0

static const char *const light[] = {"#fdae6b", "#9ecae1", "#a1d99b",
                                    "#bcbddc", "#fdd0a2", "#c6dbef",
                                    "#c7e9c0", "#dadaeb"};
static const char *const dark[] = {"#d94801", "#2171b5", "#238b45",
                                   "#6a51a3", "#e6550d", "#4292c6",
                                   "#41ab5d", "#807dba"};
#define NPAL 8

/* The mean of a's entries [k0, k1). */
static double mean(const double *a, uint32_t k0, uint32_t k1)
{
    double s = 0;
    for (uint32_t k = k0; k < k1; k++)
        s += isfinite(a[k]) && a[k] > 0 ? a[k] : 0;
    return k1 > k0 ? s / (k1 - k0) : 0;
}

int plan_svg_steps_write(const plan_svg_steps *c, FILE *out)
{
    uint32_t ns = c->n_series < PLAN_SVG_MAX_STEP_SERIES
                      ? c->n_series : PLAN_SVG_MAX_STEP_SERIES;
    uint32_t nb = c->n_steps < PLAN_SVG_MAX_STEP_BARS
                      ? c->n_steps : PLAN_SVG_MAX_STEP_BARS;
    double ymax = 0, div, step;
    const char *unit;

    plan_svg_header(out, PLAN_SVG_WIDTH, PLAN_SVG_STEPS_H, c->title,
                    c->subtitle);
    /* bar b covers steps [b * n / nb, (b + 1) * n / nb) */
    for (uint32_t i = 0; i < ns; i++)
        for (uint32_t b = 0; b < nb; b++) {
            uint32_t k0 = (uint32_t)((uint64_t)b * c->n_steps / nb);
            uint32_t k1 = (uint32_t)((uint64_t)(b + 1) * c->n_steps / nb);
            double e = mean(c->exposed_us[i], k0, k1);
            double s = mean(c->stall_us[i], k0, k1);
            if (e > ymax)
                ymax = e;
            if (s > ymax)
                ymax = s;
        }
    ymax = ymax > 0 ? ymax * 1.1 : 1.0;
    plan_svg_time_unit(ymax, &div, &unit);
    step = plan_svg_tick_step(ymax / div, 6);
    fprintf(out, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
            "fill=\"#fbfbfb\" stroke=\"#999\"/>\n", SX0, SY0, SX1 - SX0,
            SY1 - SY0);
    for (double v = 0; v * div <= ymax; v += step) {
        double y = SY1 - (SY1 - SY0) * (v * div / ymax);
        fprintf(out, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
                "stroke=\"#e6e6e6\"/>\n<text x=\"%.0f\" y=\"%.1f\" "
                "text-anchor=\"end\" fill=\"#444\">%g</text>\n", SX0, y, SX1,
                y, SX0 - 6, y + 4, v);
    }
    fprintf(out, "<text x=\"30\" y=\"%.0f\" transform=\"rotate(-90 30 %.0f)\" "
            "text-anchor=\"middle\">per step (%s)</text>\n", (SY0 + SY1) / 2,
            (SY0 + SY1) / 2, unit);
    if (nb > 0 && ns > 0) {
        double slot = (SX1 - SX0) / nb;
        double bw = slot * 0.8 / ns;
        uint32_t every = nb > 20 ? (nb + 19) / 20 : 1;
        for (uint32_t b = 0; b < nb; b++) {
            uint32_t k0 = (uint32_t)((uint64_t)b * c->n_steps / nb);
            uint32_t k1 = (uint32_t)((uint64_t)(b + 1) * c->n_steps / nb);
            for (uint32_t i = 0; i < ns; i++) {
                double e = mean(c->exposed_us[i], k0, k1);
                double s = mean(c->stall_us[i], k0, k1);
                double x = SX0 + b * slot + slot * 0.1 + i * bw;
                double he = (SY1 - SY0) * (e / ymax);
                double hs = (SY1 - SY0) * (s / ymax);
                /* exposed, at least a hairline so a zero shows as zero */
                fprintf(out, "<rect class=\"step-exposed\" x=\"%.1f\" "
                        "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                        "fill=\"%s\"/>\n", x, SY1 - he, bw, he,
                        light[i % NPAL]);
                if (hs > 0)
                    fprintf(out, "<rect class=\"step-stall\" x=\"%.1f\" "
                            "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                            "fill=\"%s\"/>\n", x + bw * 0.2, SY1 - hs,
                            bw * 0.6, hs, dark[i % NPAL]);
            }
            if (b % every == 0) {
                uint64_t first = c->first_step + k0;
                fprintf(out, "<text x=\"%.1f\" y=\"%.0f\" "
                        "text-anchor=\"middle\" fill=\"#444\">%llu%s</text>\n",
                        SX0 + (b + 0.5) * slot, SY1 + 16,
                        (unsigned long long)first, k1 - k0 > 1 ? "+" : "");
            }
        }
    }
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">step%s"
            "</text>\n", (SX0 + SX1) / 2, SY1 + 36,
            c->n_steps > nb ? " (bars: means over consecutive steps)" : "");
    for (uint32_t i = 0; i < ns; i++) {
        double x = SX0 + (i % 4) * 260, y = SY1 + 62 + (i / 4) * 20;
        fprintf(out, "<rect x=\"%.0f\" y=\"%.0f\" width=\"20\" height=\"10\" "
                "fill=\"%s\"/><rect x=\"%.0f\" y=\"%.0f\" width=\"8\" "
                "height=\"10\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">",
                x, y - 9, light[i % NPAL], x + 24, y - 9, dark[i % NPAL],
                x + 38, y);
        plan_svg_escape(out, c->names && c->names[i] ? c->names[i] : "");
        fputs(": exposed, of it stall</text>\n", out);
    }
    fputs("</svg>\n", out);
    return ferror(out) ? -EIO : 0;
}

static int write_chart(const void *c, FILE *out)
{
    return plan_svg_steps_write(c, out);
}

int plan_svg_steps_write_file(const plan_svg_steps *c, const char *path)
{
    return plan_svg_to_file(path, write_chart, c);
}
