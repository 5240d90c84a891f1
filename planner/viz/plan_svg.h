/*
 * planner/viz/plan_svg.h - pictures of plans (library ho_plan_viz): plain
 * SVG text written to a FILE* (or a file), no dependencies, no sockets.
 *
 * A figure is a time axis [t0, t1) (model time, microseconds) and row
 * groups stacked under each other, then optional link rows:
 *
 *   - a group (one client): device memory over time against its budget
 *     (series 0 filled, series 1 a dashed line: the model's curve next to
 *     a measured one), then its lanes: compute (ops, stalls in red), waits
 *     (a magenta diamond per wait, at least PLAN_SVG_MARK_W px wide, and
 *     bars over the time they waited), H2D, D2H, flash in, flash out, each
 *     copy lane with a thin "model" lane under it when layer-1 copies were
 *     added (the model's copies next to the ones a runtime made);
 *   - a link row (a link or switch of a node): its utilisation over time
 *     per direction (one row for both directions of a link that is not
 *     duplex), as column heights against its capacity.
 *
 * Every event is binned on arrival into PLAN_SVG_COLS pixel columns, so a
 * figure's memory and its file's size are bounded by columns x rows
 * whatever the number of ops and copies (a 1M-op trace draws a file of a
 * few hundred KiB): a column shows the maximum of a memory curve, the
 * busy fraction of a lane, whether anything stalled or waited in it.
 *
 * The size of a picture is fixed by its rows (plan_svg_size):
 *   width  = PLAN_SVG_WIDTH
 *   height = HEAD + Σ groups (GROUP_HEAD + mem_h + GROUP_LANES_H + GROUP_GAP)
 *            + (links ? LINK_HEAD + rows × LINK_ROW_H : 0) + FOOT
 * with the constants below; mem_h is PLAN_SVG_MEM_H for a figure of one
 * group, PLAN_SVG_MEM_H_SMALL for more.
 *
 * Marker elements carry a class, for tests and stylesheets: "wait" (the
 * diamonds), "stall" (red compute-lane marks), "alloc-wait", "flash-stall",
 * "budget", "mem", "link".
 *
 * Helpers fill a figure from the project's judges: plan_svg_add_simulated
 * (plan_simulate of a trace and schedule: the model's picture of one
 * plan), plan_svg_add_staging (the daemon's flash staging plan of it),
 * plan_svg_add_node (the node judge of NODE.md §3: one group per client and
 * a row per link).  plan_svg_steps_write draws a per-step chart of exposed
 * and stall time for several clients.
 *
 * Ownership: a plan_svg is created by plan_svg_new and released with
 * plan_svg_free (accepts NULL); strings passed in are copied.
 */
#ifndef HO_PLANNER_VIZ_PLAN_SVG_H
#define HO_PLANNER_VIZ_PLAN_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "planner/plan.h"
#include "planner/node/node.h"
#include "planner/staging/stage_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Geometry (pixels). */
#define PLAN_SVG_WIDTH 1200
#define PLAN_SVG_PLOT_X 140   /* plot left */
#define PLAN_SVG_COLS 1000    /* plot width = columns */
#define PLAN_SVG_HEAD 96      /* title, subtitle, time axis labels */
#define PLAN_SVG_GROUP_HEAD 34 /* a group's label and note lines */
#define PLAN_SVG_MEM_H 260    /* memory panel of a one-group figure */
#define PLAN_SVG_MEM_H_SMALL 110
#define PLAN_SVG_GROUP_LANES_H 150 /* lanes of a group */
#define PLAN_SVG_GROUP_GAP 28
#define PLAN_SVG_LINK_HEAD 30
#define PLAN_SVG_LINK_ROW_H 34
#define PLAN_SVG_FOOT 110     /* axis title and legend */
#define PLAN_SVG_MARK_W 7     /* smallest on-screen width of a wait marker */

/* At most this many groups and link rows are drawn; more are counted and
 * the picture says how many were left out. */
#define PLAN_SVG_MAX_GROUPS 64u
#define PLAN_SVG_MAX_LINK_ROWS 64u
/* Steps of a step chart: more are averaged into this many bars. */
#define PLAN_SVG_MAX_STEP_BARS 200u
#define PLAN_SVG_MAX_STEP_SERIES 8u

typedef enum plan_svg_lane {
    PLAN_SVG_H2D = 0,
    PLAN_SVG_D2H,
    PLAN_SVG_FLASH_IN,   /* flash -> DDR (staging fill) */
    PLAN_SVG_FLASH_OUT,  /* DDR -> flash (staging write) */
    PLAN_SVG_LANE__COUNT
} plan_svg_lane;

typedef enum plan_svg_stall {
    PLAN_SVG_STALL = 0,  /* compute waited (exposed transfer time) */
    PLAN_SVG_ALLOC,      /* an allocation waited for memory (node judge) */
    PLAN_SVG_FLASH,      /* a copy's issue waited for flash (runtime) */
    PLAN_SVG_STALL__COUNT
} plan_svg_stall_kind;

typedef struct plan_svg plan_svg;

/* A figure over [t0_us, t1_us) (t1 > t0, else 1 µs wide).  NULL on OOM. */
plan_svg *plan_svg_new(const char *title, const char *subtitle, double t0_us,
                       double t1_us);
plan_svg *plan_svg_free(plan_svg *f);

/* A row group: label, budget (0: none drawn), an optional dashed
 * reference line (no-offload peak; 0: none).  Returns the group's number,
 * or -E2BIG past PLAN_SVG_MAX_GROUPS (then events for it are ignored:
 * pass the negative number on, every call accepts it), -ENOMEM. */
int plan_svg_group(plan_svg *f, const char *label, uint64_t budget,
                   uint64_t reference);
/* One line of figures printed under the group's label (copied). */
void plan_svg_group_note(plan_svg *f, int g, const char *note);
/* A note written on a lane (instead of "no copies" / "no flash staging"
 * when it is empty), e.g. what a runtime did not log. */
void plan_svg_lane_note(plan_svg *f, int g, plan_svg_lane lane,
                        const char *note);
/* Names of the two memory series in the legend ("model", "measured"). */
void plan_svg_series_names(plan_svg *f, const char *s0, const char *s1);

/* Device bytes of series 0 or 1 from t_us on (a step curve; points in
 * time order, an earlier one is taken at the latest time seen). */
void plan_svg_mem(plan_svg *f, int g, int series, double t_us,
                  uint64_t bytes);
/* End the step curves of group g at t_us (their last value holds until
 * there); without it they end at the last point. */
void plan_svg_mem_end(plan_svg *f, int g, int series, double t_us);
/* A copy on a lane; layer 0 the copies made (or the model's when nothing
 * else is drawn), layer 1 the model's, drawn thin under the lane. */
void plan_svg_copy(plan_svg *f, int g, plan_svg_lane lane, int layer,
                   double start_us, double end_us, uint64_t bytes);
/* An op ran (compute lane). */
void plan_svg_op(plan_svg *f, int g, double start_us, double end_us);
/* Time something waited, drawn at full size (at least 2 px). */
void plan_svg_stall(plan_svg *f, int g, plan_svg_stall_kind kind, double t0_us,
                    double t1_us);
/* A wait: a marker at t0_us (at least PLAN_SVG_MARK_W px), and a bar over
 * [t0_us, t1_us) when it lasted. */
void plan_svg_wait(plan_svg *f, int g, double t0_us, double t1_us);

/* A link row group: one row per direction (one row when !duplex);
 * capacities in bytes/µs (GB/s × 1e3).  Returns its number or -E2BIG /
 * -ENOMEM like plan_svg_group. */
int plan_svg_link(plan_svg *f, const char *label, double h2d_cap,
                  double d2h_cap, int duplex);
/* The link's rate in direction dir (0 H2D, 1 D2H) is `rate` bytes/µs from
 * t_us on (a step function; in time order). */
void plan_svg_link_rate(plan_svg *f, int l, int dir, double t_us,
                        double rate);

/* Width and height the picture will have. */
void plan_svg_size(const plan_svg *f, int *ret_w, int *ret_h);

/* Write the picture.  0 or -EIO. */
int plan_svg_write(plan_svg *f, FILE *out);
/* Write it to path (created or truncated; removed on error); 0 or -errno. */
int plan_svg_write_file(plan_svg *f, const char *path);

/* ------------------------------------------------------------ from judges */

/* Judge `s` on `t` with plan_simulate and add what it computes to group g:
 * device memory (series 0), the model's copies on H2D and D2H (`layer`),
 * ops, stalls (every gap in which compute waits: before an op, and at the
 * end for copies still running), and every `wait` action of the schedule
 * as a marker over the time its point waited.  ret_metrics (may be NULL)
 * gets the figures.  Returns plan_simulate's code (the picture shows as
 * far as it ran). */
int plan_svg_add_simulated(plan_svg *f, int g, int layer, const plan_trace *t,
                           const plan_schedule *s, plan_metrics *ret_metrics);

/* The flash staging plan `p` of schedule s on t (plan_staging_make) as
 * copies on the flash lanes of group g: fills and writes at their
 * positions' nominal times (p->op_start_us), latency + bytes / gbps long,
 * one after another per direction (one flash device);
 * slot_bytes as given to plan_staging_make.  Nothing when p stages
 * nothing. */
void plan_svg_add_staging(plan_svg *f, int g, const plan_staging *p,
                          const uint64_t *slot_bytes, double read_gbps,
                          double write_gbps, double latency_us);

/* The node judge's picture of n clients of `node`: one group per client
 * (memory against its budget, its copies, ops, stalls, allocation waits,
 * waits; its figures of the last step in the note) and one link row group
 * per link of the node, over the window of plan_svg_node_window (the
 * figure should have been made with it): everything every client did in
 * it, so that the link rows add up.  `res` is a result of plan_node_judge
 * on the same input and options; the judge is run again with an
 * observer.  in[i].name labels the groups.  Returns the judge's code. */
int plan_svg_add_node(plan_svg *f, const plan_node *node,
                      const plan_node_input *in, uint32_t n,
                      const plan_node_opts *opt, const plan_node_result *res);
/* The window plan_svg_add_node draws: [min start, max end] of the last
 * step over the clients of res. */
void plan_svg_node_window(const plan_node_result *res, double *ret_t0,
                          double *ret_t1);

/* The picture of one plan, in one call: s judged on t (plan_simulate) in
 * a one-group figure with the trace's no-offload peak, and, when
 * ddr_limit > 0, the daemon's flash staging plan of its host copies
 * within that much DDR (plan_staging_make; flash figures default to 6
 * GB/s read, 4 GB/s write).  An invalid schedule is drawn as far as it
 * runs, with the violation in the subtitle.  0, -EIO, -ENOMEM (the file
 * form: -errno, and the file removed on error). */
typedef struct plan_svg_plan_opts {
    const char *title;       /* NULL: the trace's name */
    uint64_t ddr_limit;      /* 0: no staging lanes */
    double flash_read_gbps, flash_write_gbps, flash_latency_us;
} plan_svg_plan_opts;
int plan_svg_plan_write(FILE *out, const plan_trace *t,
                        const plan_schedule *s, const plan_svg_plan_opts *o);
int plan_svg_plan_file(const char *path, const plan_trace *t,
                       const plan_schedule *s, const plan_svg_plan_opts *o);

/* ------------------------------------------------------------ step chart */

/* Per step, for n_series clients, exposed and stall time (µs), as grouped
 * bars (exposed, with its stall part darker) over steps first_step ..
 * first_step + n_steps - 1.  exposed[i][k] is client i's step k. */
typedef struct plan_svg_steps {
    const char *title;
    const char *subtitle;
    uint32_t n_series;          /* <= PLAN_SVG_MAX_STEP_SERIES */
    const char *const *names;   /* n_series labels */
    uint32_t n_steps;
    uint64_t first_step;
    const double *const *exposed_us;
    const double *const *stall_us;
} plan_svg_steps;

/* Size of the step chart: PLAN_SVG_WIDTH x PLAN_SVG_STEPS_H. */
#define PLAN_SVG_STEPS_H 460
int plan_svg_steps_write(const plan_svg_steps *c, FILE *out);
int plan_svg_steps_write_file(const plan_svg_steps *c, const char *path);

/* ------------------------------------------------------------ pieces */

/* "512 MiB", "1.5 GiB" into buf. */
const char *plan_svg_iec(double bytes, char *buf, size_t len);
/* XML-escaped s into out. */
void plan_svg_escape(FILE *out, const char *s);

#ifdef __cplusplus
}
#endif
#endif
