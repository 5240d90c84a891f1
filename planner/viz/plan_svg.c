/* planner/viz/plan_svg.c - see plan_svg.h: the figure, its binning into
 * pixel columns, and the SVG writer. */
#include "planner/viz/plan_svg.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planner/viz/plan_svg_impl.h"

#define NCOL PLAN_SVG_COLS
#define X0 ((double)PLAN_SVG_PLOT_X)
#define X1 ((double)(PLAN_SVG_PLOT_X + PLAN_SVG_COLS))

/* Lane geometry inside a group's lanes (offsets from the lanes' top). */
#define L_COMPUTE 4.0
#define L_COMPUTE_H 14.0
#define L_WAITS 22.0
#define L_WAITS_H 14.0
#define L_COPY0 42.0   /* first copy lane */
#define L_COPY_STEP 26.0
#define L_COPY_H 15.0
#define L_MODEL_GAP 1.5
#define L_MODEL_H 6.0

static const char *const lane_names[PLAN_SVG_LANE__COUNT] = {
    "H2D", "D2H", "flash in", "flash out"};
static const char *const lane_colors[PLAN_SVG_LANE__COUNT][2] = {
    {"#1f77b4", "#9ecae1"}, {"#ff7f0e", "#fdc48e"},
    {"#0f766e", "#99d5cd"}, {"#a16207", "#e8cf8e"}};
static const char *const stall_class[PLAN_SVG_STALL__COUNT] = {
    "stall", "alloc-wait", "flash-stall"};
static const char *const stall_color[PLAN_SVG_STALL__COUNT] = {
    "#d62728", "#ea580c", "#7e22ce"};
#define WAIT_COLOR "#c026d3"

/* ------------------------------------------------------------ pieces */

const char *plan_svg_iec(double bytes, char *buf, size_t len)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (bytes >= 1024.0 && i < 5) {
        bytes /= 1024.0;
        i++;
    }
    if (i == 0 || bytes >= 100.0 || fabs(bytes - round(bytes)) < 0.05)
        snprintf(buf, len, "%.0f %s", bytes, u[i]);
    else
        snprintf(buf, len, "%.1f %s", bytes, u[i]);
    return buf;
}

void plan_svg_escape(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default:
            /* control characters are not XML */
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, out);
        }
    }
}

double plan_svg_tick_step(double range, int n)
{
    double raw = range / n, p = 1.0, best;
    if (!(raw > 0) || !isfinite(raw))
        return 1.0;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw && p > 1e-12)
        p /= 10;
    best = p;
    if (2 * p <= raw)
        best = 2 * p;
    if (5 * p <= raw)
        best = 5 * p;
    if (10 * p <= raw)
        best = 10 * p;
    return best > 0 ? best : 1.0;
}

void plan_svg_time_unit(double span_us, double *ret_div, const char **ret_name)
{
    if (span_us >= 2e6) {
        *ret_div = 1e6;
        *ret_name = "s";
    } else if (span_us >= 2e3) {
        *ret_div = 1e3;
        *ret_name = "ms";
    } else {
        *ret_div = 1.0;
        *ret_name = "us";
    }
}

void plan_svg_header(FILE *out, int w, int h, const char *title,
                     const char *subtitle)
{
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
            "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
            "fill=\"white\"/>\n", w, h, w, h);
    fputs("<text x=\"20\" y=\"28\" font-size=\"17\" font-weight=\"bold\">",
          out);
    plan_svg_escape(out, title);
    fputs("</text>\n<text x=\"20\" y=\"48\" fill=\"#444\">", out);
    plan_svg_escape(out, subtitle);
    fputs("</text>\n", out);
}

/* ------------------------------------------------------------ figure */

typedef struct mseries {
    double cur_t;
    uint64_t cur;
    bool started, any;
    double *hi, *lo;  /* per column; hi < 0: no value */
} mseries;

typedef struct vgroup {
    char *label, *note;
    char *lane_note[PLAN_SVG_LANE__COUNT];
    uint64_t budget, reference;
    mseries mem[2];
    double *busy[PLAN_SVG_LANE__COUNT][2];  /* µs per column */
    uint64_t bytes[PLAN_SVG_LANE__COUNT][2];
    uint64_t n_copies[PLAN_SVG_LANE__COUNT][2];
    double *compute;
    double *stall[PLAN_SVG_STALL__COUNT];
    double stall_total[PLAN_SVG_STALL__COUNT];
    uint32_t *waits;       /* wait markers per column */
    double *wait_busy;
    uint64_t n_waits;
    double wait_total;
    double *block;         /* one allocation for every array above */
} vgroup;

typedef struct vlink {
    char *label;
    double cap[2];
    int duplex;
    double cur_t[2], cur[2];
    bool started[2];
    double *util[2];       /* fraction x µs per column; row 1 unused when
                              not duplex */
    double peak;           /* largest utilisation seen (fraction) */
} vlink;

struct plan_svg {
    char *title, *subtitle;
    char *series[2];
    double t0, t1, us_per_col;
    vgroup g[PLAN_SVG_MAX_GROUPS];
    uint32_t n_g, left_out_g;
    vlink l[PLAN_SVG_MAX_LINK_ROWS];
    uint32_t n_l, left_out_l;
};

/* A copy of s ("" for NULL). */
static char *sdup(const char *s)
{
    return strdup(s ? s : "");
}

plan_svg *plan_svg_new(const char *title, const char *subtitle, double t0_us,
                       double t1_us)
{
    plan_svg *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->title = sdup(title);
    f->subtitle = sdup(subtitle);
    f->series[0] = sdup("device memory");
    f->series[1] = sdup("second curve");
    if (!f->title || !f->subtitle || !f->series[0] || !f->series[1])
        return plan_svg_free(f);
    if (!isfinite(t0_us))
        t0_us = 0;
    if (!isfinite(t1_us) || !(t1_us > t0_us))
        t1_us = t0_us + 1.0;
    f->t0 = t0_us;
    f->t1 = t1_us;
    f->us_per_col = (t1_us - t0_us) / NCOL;
    return f;
}

static void group_release(vgroup *g)
{
    char **strs[] = {&g->label, &g->note, &g->lane_note[0], &g->lane_note[1],
                     &g->lane_note[2], &g->lane_note[3]};
    for (size_t k = 0; k < sizeof strs / sizeof *strs; k++)
        free(*strs[k]);
    free(g->block);
    free(g->waits);
}

plan_svg *plan_svg_free(plan_svg *f)
{
    if (f) {
        uint32_t i;
        for (i = 0; i < f->n_g; i++)
            group_release(&f->g[i]);
        for (i = 0; i < f->n_l; i++) {
            free(f->l[i].util[0]);
            free(f->l[i].label);
        }
        free(f->series[0]);
        free(f->series[1]);
        free(f->subtitle);
        free(f->title);
        free(f);
    }
    return NULL;
}

void plan_svg_series_names(plan_svg *f, const char *s0, const char *s1)
{
    const char *s[2] = {s0, s1};
    for (int i = 0; i < 2; i++) {
        char *d = s[i] ? sdup(s[i]) : NULL;
        if (d) {
            free(f->series[i]);
            f->series[i] = d;
        }
    }
}

/* n rows already, at most max: true (and one more left out) when full. */
static bool full(uint32_t n, uint32_t max, uint32_t *left_out)
{
    if (n < max)
        return false;
    (*left_out)++;
    return true;
}

/* Arrays of doubles per column in one block. */
#define G_ARRAYS (4 + 2 * PLAN_SVG_LANE__COUNT + 1 + PLAN_SVG_STALL__COUNT + 1)

int plan_svg_group(plan_svg *f, const char *label, uint64_t budget,
                   uint64_t reference)
{
    vgroup *g;
    double *b;
    size_t k = 0;

    if (full(f->n_g, PLAN_SVG_MAX_GROUPS, &f->left_out_g))
        return -E2BIG;
    g = &f->g[f->n_g];
    memset(g, 0, sizeof *g);
    g->label = sdup(label);
    g->block = b = calloc((size_t)G_ARRAYS * NCOL, sizeof(double));
    g->waits = calloc(NCOL, sizeof(uint32_t));
    if (!g->label || !b || !g->waits) {
        group_release(g);
        return -ENOMEM;
    }
    g->budget = budget;
    g->reference = reference;
    for (int s = 0; s < 2; s++) {
        g->mem[s].hi = b + NCOL * k++;
        g->mem[s].lo = b + NCOL * k++;
        for (int c = 0; c < NCOL; c++)
            g->mem[s].hi[c] = -1;
    }
    for (int l = 0; l < PLAN_SVG_LANE__COUNT; l++)
        for (int y = 0; y < 2; y++)
            g->busy[l][y] = b + NCOL * k++;
    g->compute = b + NCOL * k++;
    for (int s = 0; s < PLAN_SVG_STALL__COUNT; s++)
        g->stall[s] = b + NCOL * k++;
    g->wait_busy = b + NCOL * k++;
    return (int)f->n_g++;
}

void plan_svg_group_note(plan_svg *f, int g, const char *note)
{
    if (g < 0 || (uint32_t)g >= f->n_g)
        return;
    char *d = sdup(note);
    if (d) {
        free(f->g[g].note);
        f->g[g].note = d;
    }
}

static vgroup *grp(plan_svg *f, int g)
{
    return g >= 0 && (uint32_t)g < f->n_g ? &f->g[g] : NULL;
}

void plan_svg_lane_note(plan_svg *f, int g, plan_svg_lane lane,
                        const char *note)
{
    vgroup *G = grp(f, g);
    if (!G || (unsigned)lane >= PLAN_SVG_LANE__COUNT)
        return;
    char *d = sdup(note);
    if (d) {
        free(G->lane_note[lane]);
        G->lane_note[lane] = d;
    }
}

/* Column of time t, clamped to [0, NCOL - 1]. */
static int col(const plan_svg *f, double t)
{
    double c = (t - f->t0) / f->us_per_col;
    if (!(c >= 0))
        return 0;
    if (c >= NCOL - 1)
        return NCOL - 1;
    return (int)c;
}

/* Add the overlap of [a, b) with each column to arr (scaled by w). */
static void span_add(const plan_svg *f, double *arr, double a, double b,
                     double w)
{
    if (a < f->t0)
        a = f->t0;
    if (b > f->t1)
        b = f->t1;
    if (!(b > a))
        return;
    int c0 = col(f, a), c1 = col(f, b);
    for (int c = c0; c <= c1; c++) {
        double cs = f->t0 + c * f->us_per_col, ce = cs + f->us_per_col;
        double lo = a > cs ? a : cs, hi = b < ce ? b : ce;
        if (hi > lo)
            arr[c] += (hi - lo) * w;
    }
}

/* The step value v holds over [a, b]: every column it touches. */
static void mem_fill(const plan_svg *f, mseries *m, double a, double b,
                     uint64_t v)
{
    if (b < f->t0 || a > f->t1)
        return;
    int c0 = col(f, a), c1 = col(f, b);
    for (int c = c0; c <= c1; c++) {
        if (m->hi[c] < 0) {
            m->hi[c] = m->lo[c] = (double)v;
        } else {
            if ((double)v > m->hi[c])
                m->hi[c] = (double)v;
            if ((double)v < m->lo[c])
                m->lo[c] = (double)v;
        }
    }
    m->any = true;
}

void plan_svg_mem(plan_svg *f, int g, int series, double t_us, uint64_t bytes)
{
    vgroup *G = grp(f, g);
    if (!G || series < 0 || series > 1 || !isfinite(t_us))
        return;
    mseries *m = &G->mem[series];
    if (m->started && t_us < m->cur_t)
        t_us = m->cur_t;
    if (m->started)
        mem_fill(f, m, m->cur_t, t_us, m->cur);
    m->started = true;
    m->cur_t = t_us;
    m->cur = bytes;
    if (t_us >= f->t0 && t_us <= f->t1)
        mem_fill(f, m, t_us, t_us, bytes);
}

void plan_svg_mem_end(plan_svg *f, int g, int series, double t_us)
{
    vgroup *G = grp(f, g);
    if (!G || series < 0 || series > 1 || !G->mem[series].started ||
        !isfinite(t_us))
        return;
    mseries *m = &G->mem[series];
    if (t_us > m->cur_t) {
        mem_fill(f, m, m->cur_t, t_us, m->cur);
        m->cur_t = t_us;
    }
}

void plan_svg_copy(plan_svg *f, int g, plan_svg_lane lane, int layer,
                   double start_us, double end_us, uint64_t bytes)
{
    vgroup *G = grp(f, g);
    if (!G || (unsigned)lane >= PLAN_SVG_LANE__COUNT || layer < 0 ||
        layer > 1)
        return;
    if (end_us < f->t0 || start_us > f->t1)
        return;
    G->bytes[lane][layer] += bytes;
    G->n_copies[lane][layer]++;
    span_add(f, G->busy[lane][layer], start_us, end_us, 1.0);
    if (!(end_us > start_us)) /* an instant copy still shows */
        G->busy[lane][layer][col(f, start_us)] += f->us_per_col * 0.25;
}

void plan_svg_op(plan_svg *f, int g, double start_us, double end_us)
{
    vgroup *G = grp(f, g);
    if (G)
        span_add(f, G->compute, start_us, end_us, 1.0);
}

void plan_svg_stall(plan_svg *f, int g, plan_svg_stall_kind kind, double t0_us,
                    double t1_us)
{
    vgroup *G = grp(f, g);
    if (!G || (unsigned)kind >= PLAN_SVG_STALL__COUNT || !(t1_us > t0_us) ||
        t1_us < f->t0 || t0_us > f->t1)
        return;
    span_add(f, G->stall[kind], t0_us, t1_us, 1.0);
    G->stall_total[kind] += (t1_us < f->t1 ? t1_us : f->t1) -
                            (t0_us > f->t0 ? t0_us : f->t0);
    /* a stall shorter than the clamp still marks its column */
    if (G->stall[kind][col(f, t0_us)] <= 0)
        G->stall[kind][col(f, t0_us)] = 1e-9;
}

void plan_svg_wait(plan_svg *f, int g, double t0_us, double t1_us)
{
    vgroup *G = grp(f, g);
    if (!G || !isfinite(t0_us) || t0_us < f->t0 || t0_us > f->t1)
        return;
    G->waits[col(f, t0_us)]++;
    G->n_waits++;
    if (t1_us > t0_us) {
        span_add(f, G->wait_busy, t0_us, t1_us, 1.0);
        G->wait_total += (t1_us < f->t1 ? t1_us : f->t1) - t0_us;
    }
}

int plan_svg_link(plan_svg *f, const char *label, double h2d_cap,
                  double d2h_cap, int duplex)
{
    vlink *L;
    if (full(f->n_l, PLAN_SVG_MAX_LINK_ROWS, &f->left_out_l))
        return -E2BIG;
    L = &f->l[f->n_l];
    memset(L, 0, sizeof *L);
    L->util[0] = calloc(2 * NCOL, sizeof(double));
    L->label = L->util[0] ? sdup(label) : NULL;
    if (!L->label) {
        free(L->util[0]);
        return -ENOMEM;
    }
    L->util[1] = L->util[0] + NCOL;
    L->cap[0] = h2d_cap > 0 ? h2d_cap : 1;
    L->cap[1] = d2h_cap > 0 ? d2h_cap : 1;
    L->duplex = duplex != 0;
    return (int)f->n_l++;
}

void plan_svg_link_rate(plan_svg *f, int l, int dir, double t_us, double rate)
{
    if (l < 0 || (uint32_t)l >= f->n_l || dir < 0 || dir > 1 ||
        !isfinite(t_us))
        return;
    vlink *L = &f->l[l];
    if (L->started[dir] && t_us < L->cur_t[dir])
        t_us = L->cur_t[dir];
    if (L->started[dir] && L->cur[dir] > 0) {
        double frac = L->cur[dir] / L->cap[dir];
        span_add(f, L->util[L->duplex ? dir : 0], L->cur_t[dir], t_us, frac);
    }
    L->started[dir] = true;
    L->cur_t[dir] = t_us;
    L->cur[dir] = rate > 0 ? rate : 0;
    /* the peak of the row: both directions together on a shared link */
    double u = L->duplex ? L->cur[dir] / L->cap[dir]
                         : L->cur[0] / L->cap[0] + L->cur[1] / L->cap[1];
    if (u > L->peak && t_us >= f->t0 && t_us <= f->t1)
        L->peak = u;
}

static int mem_h(const plan_svg *f)
{
    return f->n_g <= 1 ? PLAN_SVG_MEM_H : PLAN_SVG_MEM_H_SMALL;
}

static int link_rows(const plan_svg *f)
{
    int r = 0;
    for (uint32_t i = 0; i < f->n_l; i++)
        r += f->l[i].duplex ? 2 : 1;
    return r;
}

void plan_svg_size(const plan_svg *f, int *ret_w, int *ret_h)
{
    int h = PLAN_SVG_HEAD + PLAN_SVG_FOOT;
    h += (int)f->n_g * (PLAN_SVG_GROUP_HEAD + mem_h(f) +
                        PLAN_SVG_GROUP_LANES_H + PLAN_SVG_GROUP_GAP);
    if (f->n_l)
        h += PLAN_SVG_LINK_HEAD + link_rows(f) * PLAN_SVG_LINK_ROW_H;
    *ret_w = PLAN_SVG_WIDTH;
    *ret_h = h;
}

/* ------------------------------------------------------------ writer */

static double cx(int c)
{
    return X0 + c;
}

/* Runs of columns whose quantized level (0 = nothing) is equal, drawn as
 * rects of height h at y; level n of `levels` is opacity n / levels.
 * Columns with a level get at least min_w px (a run is widened to the
 * right, within the plot). */
/* The level of value v in 0 .. levels (0: nothing; anything else at
 * least 1). */
static int level(double v, double full, int levels)
{
    int lv;
    if (!(v > 0))
        return 0;
    lv = (int)ceil(v / full * levels);
    return lv < 1 ? 1 : lv > levels ? levels : lv;
}

static void draw_runs(FILE *out, const double *v, double full, int levels,
                      double y, double h, const char *color,
                      const char *cls, double min_w)
{
    int c = 0;
    while (c < NCOL) {
        int lv = level(v[c], full, levels);
        int e = c + 1;
        while (e < NCOL && level(v[e], full, levels) == lv)
            e++;
        if (lv > 0) {
            double x = cx(c), w = e - c;
            if (w < min_w) {
                w = min_w;
                if (x + w > X1)
                    x = X1 - w;
            }
            fprintf(out, "<rect%s%s%s x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\" fill=\"%s\"", cls ? " class=\"" : "",
                    cls ? cls : "", cls ? "\"" : "", x, y, w, h, color);
            if (lv < levels)
                fprintf(out, " fill-opacity=\"%.2f\"",
                        0.25 + 0.75 * lv / levels);
            fputs("/>\n", out);
        }
        c = e;
    }
}

static void lane_bg(FILE *out, double y, double h, const char *name,
                    int font)
{
    fprintf(out, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
            "fill=\"#f4f4f4\"/>\n", X0, y, NCOL, h);
    if (name)
        fprintf(out, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" "
                "font-size=\"%d\" fill=\"#333\">%s</text>\n", X0 - 6,
                y + h / 2 + 4, font, name);
}

static void time_grid(const plan_svg *f, FILE *out, double y0, double y1)
{
    double div;
    const char *unit;
    double span = f->t1 - f->t0;
    plan_svg_time_unit(span, &div, &unit);
    double step = plan_svg_tick_step(span / div, 10);
    for (double v = 0; v * div <= span * 1.0001; v += step) {
        double x = X0 + NCOL * (v * div / span);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#e8e8e8\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\" fill=\"#444\">%g</text>\n", x, y0, x,
                y1, x, y0 - 6, v);
    }
}

static void draw_mem(const plan_svg *f, FILE *out, const vgroup *G, double y,
                     double h)
{
    char b[32];
    double ymax = (double)G->budget;
    if ((double)G->reference > ymax)
        ymax = (double)G->reference;
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < NCOL; c++)
            if (G->mem[s].hi[c] > ymax)
                ymax = G->mem[s].hi[c];
    ymax = ymax > 0 ? ymax * 1.08 : 1.0;
#define SY(v) (y + h - h * ((v) / ymax))
    fprintf(out, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
            "fill=\"#fbfbfb\" stroke=\"#999\"/>\n", X0, y, NCOL, h);
    /* y ticks in powers of two */
    {
        double raw = ymax / (h > 150 ? 6 : 3), p = 1;
        while (p * 2 <= raw)
            p *= 2;
        for (double v = p; v < ymax; v += p) {
            fprintf(out, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" "
                    "y2=\"%.1f\" stroke=\"#ececec\"/>\n<text x=\"%.0f\" "
                    "y=\"%.1f\" text-anchor=\"end\" fill=\"#555\" "
                    "font-size=\"10\">%s</text>\n", X0, SY(v), X1, SY(v),
                    X0 - 6, SY(v) + 3, plan_svg_iec(v, b, sizeof b));
        }
    }
    /* where compute stalled: a light band over the panel */
    draw_runs(out, G->stall[PLAN_SVG_STALL], f->us_per_col, 1, y, h,
              "#d62728\" fill-opacity=\"0.07", NULL, 2);
    /* series 0: filled step area of each column's maximum */
    if (G->mem[0].any) {
        const mseries *m = &G->mem[0];
        fprintf(out, "<path class=\"mem\" fill=\"#cfe0f5\" stroke=\"#1f5fbf\""
                " stroke-width=\"1.2\" d=\"M%.0f %.1f", X0, y + h);
        for (int c = 0; c < NCOL; c++) {
            double v = m->hi[c] < 0 ? 0 : m->hi[c];
            fprintf(out, "V%.1fH%.0f", SY(v), cx(c + 1));
        }
        fprintf(out, "V%.1fZ\"/>\n", y + h);
    }
    if (G->mem[1].any) {
        const mseries *m = &G->mem[1];
        int started = 0;
        fputs("<path class=\"mem\" fill=\"none\" stroke=\"#15803d\" "
              "stroke-width=\"1.5\" stroke-dasharray=\"5 3\" d=\"", out);
        for (int c = 0; c < NCOL; c++) {
            if (m->hi[c] < 0) {
                started = 0;
                continue;
            }
            if (!started)
                fprintf(out, "M%.0f %.1f", cx(c), SY(m->hi[c]));
            else
                fprintf(out, "V%.1f", SY(m->hi[c]));
            fprintf(out, "H%.0f", cx(c + 1));
            started = 1;
        }
        fputs("\"/>\n", out);
    }
    if (G->reference > 0) {
        double ry = SY((double)G->reference);
        /* its label on the left when the budget's would cover it */
        bool left = G->budget > 0 && fabs(ry - SY((double)G->budget)) < 12;
        fprintf(out, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
                "stroke=\"#777\" stroke-dasharray=\"2 4\"/>\n<text "
                "x=\"%.0f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"#777\" "
                "font-size=\"10\">no-offload peak %s</text>\n", X0, ry, X1,
                ry, left ? X0 + 4 : X1 - 4, ry - 3, left ? "start" : "end",
                plan_svg_iec((double)G->reference, b, sizeof b));
    }
    if (G->budget > 0) {
        double by = SY((double)G->budget);
        fprintf(out, "<line class=\"budget\" x1=\"%.0f\" y1=\"%.1f\" "
                "x2=\"%.0f\" y2=\"%.1f\" stroke=\"#d62728\" "
                "stroke-width=\"1.5\"/>\n<text x=\"%.0f\" y=\"%.1f\" "
                "text-anchor=\"end\" fill=\"#d62728\" font-size=\"10\">"
                "budget %s</text>\n", X0, by, X1, by, X1 - 4, by - 3,
                plan_svg_iec((double)G->budget, b, sizeof b));
    }
#undef SY
}

static void draw_waits(const plan_svg *f, FILE *out, const vgroup *G,
                       double y)
{
    /* bars over the time waited */
    draw_runs(out, G->wait_busy, f->us_per_col, 1, y + L_WAITS_H - 4, 4,
              WAIT_COLOR, "wait-time", 2);
    /* a diamond per column with waits, at least PLAN_SVG_MARK_W wide;
     * neighbours closer than a marker share one */
    double last_x = -1e9;
    for (int c = 0; c < NCOL; c++) {
        if (!G->waits[c])
            continue;
        double x = cx(c) + 0.5, r = PLAN_SVG_MARK_W / 2.0;
        if (x - last_x < PLAN_SVG_MARK_W)
            continue;
        if (x - r < X0)
            x = X0 + r;
        if (x + r > X1)
            x = X1 - r;
        fprintf(out, "<polygon class=\"wait\" points=\"%.1f,%.1f %.1f,%.1f "
                "%.1f,%.1f %.1f,%.1f\" fill=\"" WAIT_COLOR "\"/>\n", x, y,
                x + r, y + 5, x, y + 10, x - r, y + 5);
        last_x = x;
    }
}

/* A duration in the unit the time axis would use for it. */
static void fmt_us(double us, char *buf, size_t len)
{
    double div;
    const char *unit;
    plan_svg_time_unit(us * 2, &div, &unit);
    snprintf(buf, len, "%.*f %s", div > 1e3 ? 3 : 1, us / div, unit);
}

static double draw_group(const plan_svg *f, FILE *out, const vgroup *G,
                         double y)
{
    char b1[32], b2[32], b3[32];
    double mh = mem_h(f);

    fputs("<g class=\"group\">\n", out);
    fprintf(out, "<text x=\"20\" y=\"%.1f\" font-weight=\"bold\">",
            y + 13);
    plan_svg_escape(out, G->label);
    fprintf(out, "</text>\n<text x=\"20\" y=\"%.1f\" fill=\"#444\" "
            "font-size=\"11\">", y + 28);
    if (G->note) {
        plan_svg_escape(out, G->note);
        fputs("; ", out);
    }
    fmt_us(G->stall_total[PLAN_SVG_STALL], b1, sizeof b1);
    fmt_us(G->wait_total, b2, sizeof b2);
    fprintf(out, "drawn: compute stalled %s, %llu waits (%s)", b1,
            (unsigned long long)G->n_waits, b2);
    if (G->stall_total[PLAN_SVG_ALLOC] > 0) {
        fmt_us(G->stall_total[PLAN_SVG_ALLOC], b3, sizeof b3);
        fprintf(out, "; allocations waited %s", b3);
    }
    if (G->stall_total[PLAN_SVG_FLASH] > 0) {
        fmt_us(G->stall_total[PLAN_SVG_FLASH], b3, sizeof b3);
        fprintf(out, "; flash stalls %s", b3);
    }
    fputs("</text>\n", out);
    y += PLAN_SVG_GROUP_HEAD;
    draw_mem(f, out, G, y, mh);
    y += mh;

    /* compute lane: ops by busy fraction, stalls over them at full height */
    lane_bg(out, y + L_COMPUTE, L_COMPUTE_H, "compute", 11);
    draw_runs(out, G->compute, f->us_per_col, 4, y + L_COMPUTE, L_COMPUTE_H,
              "#6b7280", NULL, 0);
    for (int k = 0; k < PLAN_SVG_STALL__COUNT; k++)
        draw_runs(out, G->stall[k], f->us_per_col, 1, y + L_COMPUTE,
                  L_COMPUTE_H, stall_color[k], stall_class[k], 2);
    lane_bg(out, y + L_WAITS, L_WAITS_H, "waits", 11);
    if (G->n_waits == 0)
        fprintf(out, "<text x=\"%.0f\" y=\"%.1f\" fill=\"#999\" "
                "font-size=\"10\">no waits</text>\n", X0 + 4,
                y + L_WAITS + 10);
    draw_waits(f, out, G, y + L_WAITS + 2);
    for (int l = 0; l < PLAN_SVG_LANE__COUNT; l++) {
        double ly = y + L_COPY0 + l * L_COPY_STEP;
        bool model = G->n_copies[l][1] > 0 || G->n_copies[l][0] == 0;
        lane_bg(out, ly, L_COPY_H, lane_names[l], 11);
        if (G->n_copies[l][1] > 0) {
            lane_bg(out, ly + L_COPY_H + L_MODEL_GAP, L_MODEL_H, "model", 8);
            draw_runs(out, G->busy[l][1], f->us_per_col, 4,
                      ly + L_COPY_H + L_MODEL_GAP, L_MODEL_H,
                      lane_colors[l][1], NULL, 0);
        }
        if (G->lane_note[l] ||
            (G->n_copies[l][0] == 0 && G->n_copies[l][1] == 0)) {
            fprintf(out, "<text x=\"%.0f\" y=\"%.1f\" fill=\"#777\" "
                    "font-size=\"10\">", X0 + 4, ly + 11);
            plan_svg_escape(out, G->lane_note[l] ? G->lane_note[l]
                                 : l >= PLAN_SVG_FLASH_IN ? "no flash staging"
                                                          : "no copies");
            fputs("</text>\n", out);
        }
        draw_runs(out, G->busy[l][0], f->us_per_col, 4, ly, L_COPY_H,
                  lane_colors[l][0], NULL, 0);
        (void)model;
        if (G->n_copies[l][0] || G->n_copies[l][1]) {
            fprintf(out, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\" "
                    "fill=\"#555\">%s</text>\n", X1 + 4, ly + 11,
                    plan_svg_iec((double)(G->n_copies[l][0]
                                              ? G->bytes[l][0]
                                              : G->bytes[l][1]),
                                 b1, sizeof b1));
        }
    }
    fputs("</g>\n", out);
    return y + PLAN_SVG_GROUP_LANES_H + PLAN_SVG_GROUP_GAP;
}

static double draw_links(const plan_svg *f, FILE *out, double y)
{
    if (!f->n_l)
        return y;
    fprintf(out, "<text x=\"20\" y=\"%.1f\" font-weight=\"bold\">shared links"
            "</text><text x=\"%.0f\" y=\"%.1f\" fill=\"#444\" "
            "font-size=\"11\">utilisation of each link's capacity (column "
            "height: the column's mean; 100%% = full)</text>\n", y + 18, X0,
            y + 18);
    y += PLAN_SVG_LINK_HEAD;
    for (uint32_t i = 0; i < f->n_l; i++) {
        const vlink *L = &f->l[i];
        for (int d = 0; d < (L->duplex ? 2 : 1); d++) {
            double h = PLAN_SVG_LINK_ROW_H - 8;
            char name[320];
            snprintf(name, sizeof name, "%s %s", L->label,
                     L->duplex ? (d ? "D2H" : "H2D") : "H2D+D2H");
            fputs("<g class=\"link\">\n", out);
            fprintf(out, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%d\" "
                    "height=\"%.1f\" fill=\"#f4f4f4\"/>\n<text x=\"%.0f\" "
                    "y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">", X0, y,
                    NCOL, h, X0 - 6, y + h / 2 + 4);
            plan_svg_escape(out, name);
            fputs("</text>\n", out);
            const char *color = !L->duplex ? "#7c3aed" : d ? "#ff7f0e"
                                                           : "#1f77b4";
            /* columns of equal height (1 px) merged */
            int c = 0;
            while (c < NCOL) {
                double u = L->util[d][c] / f->us_per_col;
                int px = (int)lround((u > 1 ? 1 : u) * h);
                int e = c + 1;
                while (e < NCOL) {
                    double u2 = L->util[d][e] / f->us_per_col;
                    if ((int)lround((u2 > 1 ? 1 : u2) * h) != px)
                        break;
                    e++;
                }
                if (px > 0)
                    fprintf(out, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%d\" "
                            "height=\"%d\" fill=\"%s\"/>\n", cx(c),
                            y + h - px, e - c, px, color);
                c = e;
            }
            fprintf(out, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\" "
                    "fill=\"#555\">peak %.0f%%</text>\n</g>\n", X1 + 4,
                    y + h / 2 + 4, L->peak * 100);
            y += PLAN_SVG_LINK_ROW_H;
        }
    }
    return y;
}

static void legend_rect(FILE *out, double x, double y, const char *color,
                        const char *text)
{
    fprintf(out, "<rect x=\"%.0f\" y=\"%.1f\" width=\"24\" height=\"10\" "
            "fill=\"%s\"/><text x=\"%.0f\" y=\"%.1f\">%s</text>\n", x, y - 9,
            color, x + 30, y, text);
}

static void draw_foot(const plan_svg *f, FILE *out, double y)
{
    double div;
    const char *unit;
    bool s1 = false, model = false;
    plan_svg_time_unit(f->t1 - f->t0, &div, &unit);
    for (uint32_t i = 0; i < f->n_g; i++) {
        s1 |= f->g[i].mem[1].any;
        for (int l = 0; l < PLAN_SVG_LANE__COUNT; l++)
            model |= f->g[i].n_copies[l][1] > 0;
    }
    fprintf(out, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\">time "
            "(%s) from %.6g us</text>\n", X0 + NCOL / 2.0, y + 16, unit,
            f->t0);
    y += 40;
    fprintf(out, "<rect x=\"20\" y=\"%.1f\" width=\"24\" height=\"10\" "
            "fill=\"#cfe0f5\" stroke=\"#1f5fbf\"/><text x=\"50\" y=\"%.1f\">",
            y - 9, y);
    plan_svg_escape(out, f->series[0]);
    fputs("</text>\n", out);
    if (s1) {
        fprintf(out, "<line x1=\"420\" y1=\"%.1f\" x2=\"444\" y2=\"%.1f\" "
                "stroke=\"#15803d\" stroke-width=\"1.5\" "
                "stroke-dasharray=\"5 3\"/><text x=\"450\" y=\"%.1f\">", y - 4,
                y - 4, y);
        plan_svg_escape(out, f->series[1]);
        fputs("</text>\n", out);
    }
    fprintf(out, "<line x1=\"800\" y1=\"%.1f\" x2=\"824\" y2=\"%.1f\" "
            "stroke=\"#d62728\" stroke-width=\"1.5\"/><text x=\"830\" "
            "y=\"%.1f\">HBM budget</text>\n", y - 4, y - 4, y);
    fprintf(out, "<line x1=\"940\" y1=\"%.1f\" x2=\"964\" y2=\"%.1f\" "
            "stroke=\"#777\" stroke-dasharray=\"2 4\"/><text x=\"970\" "
            "y=\"%.1f\">no-offload peak</text>\n", y - 4, y - 4, y);
    y += 22;
    legend_rect(out, 20, y, "#6b7280", "ops (shade: busy part)");
    legend_rect(out, 240, y, "#d62728", "compute stalled");
    legend_rect(out, 420, y, "#ea580c", "allocation waited");
    legend_rect(out, 600, y, "#7e22ce", "waited for flash");
    fprintf(out, "<polygon points=\"792,%.1f 795.5,%.1f 792,%.1f 788.5,%.1f\" "
            "fill=\"" WAIT_COLOR "\"/><text x=\"810\" y=\"%.1f\">wait action "
            "(bar under it: time waited)</text>\n", y - 10, y - 5, y, y - 5, y);
    y += 22;
    legend_rect(out, 20, y, "#1f77b4", "H2D");
    legend_rect(out, 110, y, "#ff7f0e", "D2H");
    legend_rect(out, 200, y, "#0f766e", "flash in");
    legend_rect(out, 310, y, "#a16207", "flash out");
    if (model)
        fprintf(out, "<text x=\"420\" y=\"%.1f\" fill=\"#555\">thin lanes "
                "under a copy lane: the execution model's copies</text>\n",
                y);
    if (f->left_out_g || f->left_out_l)
        fprintf(out, "<text x=\"820\" y=\"%.1f\" fill=\"#b91c1c\">%u more "
                "clients and %u more links not drawn</text>\n", y,
                f->left_out_g, f->left_out_l);
}

int plan_svg_write(plan_svg *f, FILE *out)
{
    int w, h;
    double y = PLAN_SVG_HEAD;

    plan_svg_size(f, &w, &h);
    plan_svg_header(out, w, h, f->title, f->subtitle);
    {
        double div;
        const char *unit;
        plan_svg_time_unit(f->t1 - f->t0, &div, &unit);
        fprintf(out, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"end\" "
                "fill=\"#444\">%s</text>\n", X0 - 6, PLAN_SVG_HEAD - 12,
                unit);
    }
    time_grid(f, out, PLAN_SVG_HEAD - 10, h - PLAN_SVG_FOOT);
    for (uint32_t i = 0; i < f->n_g; i++)
        y = draw_group(f, out, &f->g[i], y);
    y = draw_links(f, out, y);
    draw_foot(f, out, h - PLAN_SVG_FOOT);
    fputs("</svg>\n", out);
    return ferror(out) ? -EIO : 0;
}

int plan_svg_to_file(const char *path, int (*write)(const void *, FILE *),
                     const void *arg)
{
    FILE *out = fopen(path, "w");
    int r;
    if (!out)
        return -errno;
    r = write(arg, out);
    if (fclose(out) != 0 && r == 0)
        r = -errno;
    if (r < 0)
        unlink(path);
    return r;
}

static int write_fig(const void *f, FILE *out)
{
    return plan_svg_write((plan_svg *)f, out);
}

int plan_svg_write_file(plan_svg *f, const char *path)
{
    return plan_svg_to_file(path, write_fig, f);
}
