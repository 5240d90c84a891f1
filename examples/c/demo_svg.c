/* examples/c/demo_svg.c - see demo_svg.h. */
#include "examples/c/demo_svg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Canvas geometry (pixels). */
#define W 1200.0
#define H 676.0
#define PX0 100.0  /* plot left */
#define PX1 1160.0 /* plot right */
#define PY0 80.0   /* plot top */
#define PY1 420.0  /* plot bottom (0 bytes) */
#define LANE_H2D 440.0 /* copies made, H2D; the model's lane under it */
#define LANE_D2H 487.0 /* copies made, D2H; the model's lane under it */
#define LANE_H 24.0
#define MODEL_GAP 2.0  /* between a lane and its model lane */
#define MODEL_H 9.0
#define WAIT_H 5.0     /* the red "waited for" mark, top of the lane */
#define LANES_END (LANE_D2H + LANE_H + MODEL_GAP + MODEL_H)
#define AXIS_Y 570.0 /* axis title; tick labels 20 px above */
#define LEG0 100.0   /* legend columns */
#define LEG1 440.0
#define LEG2 780.0

typedef struct scale {
    double tmax_us;
    double ymax;
} scale;

static double sx(const scale *s, double t_us)
{
    double x = PX0 + (PX1 - PX0) * (t_us / s->tmax_us);
    return x < PX0 ? PX0 : x > PX1 ? PX1 : x;
}

static double sy(const scale *s, uint64_t bytes)
{
    return PY1 - (PY1 - PY0) * ((double)bytes / s->ymax);
}

/* "512 MiB", "1.5 GiB" */
static const char *iec(double bytes, char *buf, size_t len)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (bytes >= 1024.0 && i < 4) {
        bytes /= 1024.0;
        i++;
    }
    if (i == 0 || bytes >= 100.0 || fabs(bytes - round(bytes)) < 0.05)
        snprintf(buf, len, "%.0f %s", bytes, u[i]);
    else
        snprintf(buf, len, "%.1f %s", bytes, u[i]);
    return buf;
}

/* XML-escape s into f. */
static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A "nice" tick step (1, 2 or 5 times a power of `base`) for about n
 * ticks over `range`. */
static double tick_step(double range, int n, double base)
{
    double raw = range / n, p = 1.0, best;
    while (p * base <= raw)
        p *= base;
    while (p > raw && p > 1e-9)
        p /= base;
    best = p;
    if (2 * p <= raw)
        best = 2 * p;
    if (5 * p <= raw)
        best = 5 * p;
    if (10 * p <= raw)
        best = 10 * p;
    return best > 0 ? best : 1.0;
}

/* A step curve as an SVG path: the value holds from each point's time to
 * the next one's, and the last one until end_us. */
static void step_path(FILE *f, const scale *s, const demo_point *p, size_t n,
                      double end_us, const char *style)
{
    if (n == 0)
        return;
    fprintf(f, "<path %s d=\"M%.1f %.1f", style, sx(s, p[0].t_us),
            sy(s, p[0].bytes));
    for (size_t i = 1; i < n; i++) {
        double x = sx(s, p[i].t_us);
        fprintf(f, " H%.1f V%.1f", x, sy(s, p[i].bytes));
    }
    fprintf(f, " H%.1f\"/>\n", sx(s, end_us > p[n - 1].t_us ? end_us
                                                            : p[n - 1].t_us));
}

static uint64_t curve_max(const demo_point *p, size_t n)
{
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i].bytes > m)
            m = p[i].bytes;
    return m;
}

static void hline(FILE *f, const scale *s, uint64_t bytes, const char *color,
                  const char *dash, const char *label)
{
    char b[32];
    double y = sy(s, bytes);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"%s\" stroke-width=\"1.5\"%s%s%s/>\n", PX0, y, PX1, y,
            color, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
            dash ? "\"" : "");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" "
            "text-anchor=\"end\">", PX1 - 4, y - 4, color);
    esc(f, label);
    fprintf(f, " %s</text>\n", iec((double)bytes, b, sizeof b));
}

/* A "the hooks waited here" mark over [t0_us, t1_us), at least 1 px. */
static void mark(FILE *f, const scale *s, double t0_us, double t1_us,
                 double y, const char *color)
{
    double x1 = sx(s, t1_us), x0 = sx(s, t0_us);
    if (x1 - x0 < 1.0)
        x0 = x1 - 1.0;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"%s\"/>\n", x0, y, x1 - x0, WAIT_H, color);
}

static int write_body(FILE *f, const demo_svg_data *d)
{
    scale s;
    char b[32];
    uint64_t ymax = d->budget;
    double step, m_bytes[2] = {0, 0}, p_bytes[2] = {0, 0};
    double wait_us = 0, stall_us = 0;

    s.tmax_us = d->measured_end_us > d->predicted_end_us
                    ? d->measured_end_us
                    : d->predicted_end_us;
    if (!(s.tmax_us > 0))
        s.tmax_us = 1;
    if (d->no_offload_peak > ymax)
        ymax = d->no_offload_peak;
    if (curve_max(d->measured, d->n_measured) > ymax)
        ymax = curve_max(d->measured, d->n_measured);
    if (curve_max(d->predicted, d->n_predicted) > ymax)
        ymax = curve_max(d->predicted, d->n_predicted);
    s.ymax = ymax > 0 ? (double)ymax * 1.08 : 1.0;

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    fputs("<text x=\"100\" y=\"30\" font-size=\"17\" font-weight=\"bold\">",
          f);
    esc(f, d->title);
    fputs("</text>\n<text x=\"100\" y=\"52\" fill=\"#444\">", f);
    esc(f, d->subtitle);
    fputs("</text>\n", f);

    /* y grid and labels */
    step = tick_step(s.ymax, 6, 2.0);
    for (double v = 0; v <= s.ymax; v += step) {
        double y = sy(&s, (uint64_t)v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#e6e6e6\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"end\" fill=\"#444\">%s</text>\n", PX0, y, PX1,
                y, PX0 - 6, y + 4, iec(v, b, sizeof b));
    }
    /* x grid (ms) */
    step = tick_step(s.tmax_us / 1000.0, 10, 10.0);
    for (double v = 0; v * 1000.0 <= s.tmax_us * 1.0001; v += step) {
        double x = sx(&s, v * 1000.0);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#eeeeee\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\" fill=\"#444\">%g</text>\n", x, PY0,
                x, LANES_END, x, AXIS_Y - 18, v);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time in "
            "the step (ms)</text>\n", (PX0 + PX1) / 2, AXIS_Y);
    fprintf(f, "<text x=\"20\" y=\"%.1f\" transform=\"rotate(-90 20 %.1f)\" "
            "text-anchor=\"middle\">device memory</text>\n", (PY0 + PY1) / 2,
            (PY0 + PY1) / 2);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"#888\"/>\n", PX0, PY0, PX1 - PX0,
            PY1 - PY0);

    /* curves */
    step_path(f, &s, d->predicted, d->n_predicted, d->predicted_end_us,
              "fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.5\" "
              "stroke-dasharray=\"5 3\"");
    step_path(f, &s, d->measured, d->n_measured, d->measured_end_us,
              "fill=\"none\" stroke=\"#16a34a\" stroke-width=\"1.8\"");
    if (d->no_offload_peak > 0)
        hline(f, &s, d->no_offload_peak, "#888888", "2 4",
              "no-offload peak");
    hline(f, &s, d->budget, "#d62728", NULL, "budget");

    /* copy lanes: what the runtime did, the model's under each */
    {
        static const double lane_y[2] = {LANE_H2D, LANE_D2H};
        static const char *const lane_name[2] = {"H2D", "D2H"};
        for (int k = 0; k < 2; k++) {
            double y = lane_y[k], my = y + LANE_H + MODEL_GAP;
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s"
                    "</text>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                    "font-size=\"9\" fill=\"#777\">model</text>\n", PX0 - 6,
                    y + LANE_H / 2 + 4, lane_name[k], PX0 - 6,
                    my + MODEL_H - 1);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\" fill=\"#f4f4f4\"/>\n<rect x=\"%.1f\" "
                    "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                    "fill=\"#f9f9f9\"/>\n", PX0, y, PX1 - PX0, LANE_H, PX0,
                    my, PX1 - PX0, MODEL_H);
            if (!d->have_copies)
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#999\">no "
                        "copy log</text>\n", PX0 + 6, y + LANE_H / 2 + 4);
        }
        for (size_t i = 0; i < d->n_transfers; i++) {
            const demo_transfer *t = &d->transfers[i];
            double x0 = sx(&s, t->start_us), x1 = sx(&s, t->end_us);
            if (x1 - x0 < 0.6)
                x1 = x0 + 0.6;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\" fill=\"%s\"/>\n", x0,
                    lane_y[t->dir != 0] + LANE_H + MODEL_GAP, x1 - x0,
                    MODEL_H, t->dir == 0 ? "#9ecae1" : "#fdc48e");
            p_bytes[t->dir != 0] += (double)t->bytes;
        }
        /* The copies made; a hairline between wide neighbours, so that
         * copies back to back on one engine stay apart. */
        for (size_t i = 0; d->have_copies && i < d->n_copies; i++) {
            const demo_transfer *t = &d->copies[i];
            double x0 = sx(&s, t->start_us), x1 = sx(&s, t->end_us);
            if (x1 - x0 < 0.6)
                x1 = x0 + 0.6;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\" fill=\"%s\"%s/>\n", x0,
                    lane_y[t->dir != 0], x1 - x0, LANE_H,
                    t->dir == 0 ? "#1f77b4" : "#ff7f0e",
                    x1 - x0 >= 4 ? " stroke=\"white\" stroke-width=\"0.5\""
                                 : "");
            m_bytes[t->dir != 0] += (double)t->bytes;
            wait_us += t->wait_us;
            stall_us += t->stall_us;
        }
        /* Where the hooks blocked: for a copy until it completed (the
         * mark ends at its end), for a flash fill until the copy could be
         * issued (the mark ends at its issue). */
        for (size_t i = 0; d->have_copies && i < d->n_copies; i++) {
            const demo_transfer *t = &d->copies[i];
            double y = lane_y[t->dir != 0] - 1;
            if (t->wait_us > 0)
                mark(f, &s, t->end_us - t->wait_us, t->end_us, y,
                     "#d62728");
            if (t->stall_us > 0)
                mark(f, &s, t->issue_us - t->stall_us, t->issue_us, y,
                     "#7e22ce");
        }
    }

    /* legend: three columns */
    {
        double y = AXIS_Y + 30;
        char b2[32];
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
                "stroke=\"#16a34a\" stroke-width=\"2\"/><text x=\"%.0f\" "
                "y=\"%.1f\">measured (ho_device_used at every hook)</text>\n",
                LEG0, y, LEG0 + 30, y, LEG0 + 36, y + 4);
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
                "stroke=\"#1f5fbf\" stroke-width=\"1.5\" "
                "stroke-dasharray=\"5 3\"/><text x=\"%.0f\" y=\"%.1f\">"
                "predicted by the execution model</text>\n", LEG1, y,
                LEG1 + 30, y, LEG1 + 36, y + 4);
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
                "stroke=\"#d62728\" stroke-width=\"1.5\"/><text x=\"%.0f\" "
                "y=\"%.1f\">HBM budget</text>\n", LEG2, y, LEG2 + 30, y,
                LEG2 + 36, y + 4);
        y += 22;
        if (d->have_copies) {
            fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"30\" "
                    "height=\"12\" fill=\"#1f77b4\"/><text x=\"%.0f\" "
                    "y=\"%.1f\">H2D copies made (copy log, %s)</text>\n",
                    LEG0, y - 6, LEG0 + 36, y + 4,
                    iec(m_bytes[0], b, sizeof b));
            fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"30\" "
                    "height=\"12\" fill=\"#ff7f0e\"/><text x=\"%.0f\" "
                    "y=\"%.1f\">D2H copies made (copy log, %s)</text>\n",
                    LEG1, y - 6, LEG1 + 36, y + 4,
                    iec(m_bytes[1], b2, sizeof b2));
            fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"14\" "
                    "height=\"%.0f\" fill=\"#d62728\"/><rect x=\"%.0f\" "
                    "y=\"%.1f\" width=\"14\" height=\"%.0f\" "
                    "fill=\"#7e22ce\"/><text x=\"%.0f\" y=\"%.1f\">hooks "
                    "waited: for the copy %.1f ms, for flash %.1f ms</text>\n",
                    LEG2, y - WAIT_H / 2, WAIT_H, LEG2 + 16, y - WAIT_H / 2,
                    WAIT_H, LEG2 + 36, y + 4, wait_us / 1000.0,
                    stall_us / 1000.0);
        } else {
            fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" fill=\"#777\">copies "
                    "made: no copy log for this step</text>\n", LEG0, y + 4);
        }
        y += 22;
        fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"30\" height=\"%.0f\" "
                "fill=\"#9ecae1\"/><text x=\"%.0f\" y=\"%.1f\">H2D copies of "
                "the model (thin lane, %s)</text>\n", LEG0, y - MODEL_H / 2,
                MODEL_H, LEG0 + 36, y + 4, iec(p_bytes[0], b, sizeof b));
        fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"30\" height=\"%.0f\" "
                "fill=\"#fdc48e\"/><text x=\"%.0f\" y=\"%.1f\">D2H copies of "
                "the model (thin lane, %s)</text>\n", LEG1, y - MODEL_H / 2,
                MODEL_H, LEG1 + 36, y + 4, iec(p_bytes[1], b2, sizeof b2));
    }
    fputs("</svg>\n", f);
    return ferror(f) ? -EIO : 0;
}

int demo_svg_write(const char *path, const demo_svg_data *d)
{
    FILE *f = fopen(path, "w");
    int r;

    if (!f)
        return -errno;
    r = write_body(f, d);
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    if (r < 0)
        unlink(path);
    return r;
}
