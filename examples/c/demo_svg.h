/*
 * examples/c/demo_svg.h - the demo's pictures, drawn by planner/viz/
 * (plan_svg.h) like every other picture of the project:
 *
 *   - a client's drawn step as one row group: device memory measured
 *     (ho_device_used at every hook) against the budget, with the model's
 *     curve dashed; the copies the runtime made (its copy log) on the H2D
 *     and D2H lanes with the model's copies thin under them; where the
 *     hooks waited for a copy (compute stalled) and for a flash fill;
 *   - the job's picture: one group per client of the job, from the
 *     picture data each client saved (demo_svg_save), and the job's
 *     per-step chart of exposed and stall time per client.
 *
 * Picture data is a small text file (one line per point, copy or step;
 * format in demo_svg.c), so that processes of one job can be drawn
 * together by ho-demo-picture.
 *
 * Ownership: a demo_svg_data is filled by the caller (arrays it owns)
 * unless it came from demo_svg_load (then demo_svg_data_free releases it).
 */
#ifndef HO_DEMO_SVG_H
#define HO_DEMO_SVG_H

#include <stddef.h>
#include <stdint.h>

#include "planner/viz/plan_svg.h"

/* A point of a device-bytes curve: bytes allocated from t_us on. */
typedef struct demo_point {
    double t_us;
    uint64_t bytes;
} demo_point;

/* One copy: dir 0 = H2D, 1 = D2H, times from the step's start.  For the
 * copies made (0 for the model's): wait_us, how long the hooks blocked
 * waiting for it to complete (ending where it ends); stall_us, how long
 * its issue waited for the daemon to bring its host copy in from flash
 * (ending at issue_us). */
typedef struct demo_transfer {
    double start_us, end_us;
    uint64_t bytes;
    int dir;
    double wait_us;
    double issue_us, stall_us;
} demo_transfer;

/* A replayed step's figures (the step chart). */
typedef struct demo_step {
    uint64_t step;
    double exposed_us, stall_us;
} demo_step;

typedef struct demo_svg_data {
    char name[64];                  /* the client: "client0" */
    char title[160];
    char subtitle[320];
    uint64_t budget;
    uint64_t no_offload_peak;       /* drawn as a dashed line when > 0 */
    uint64_t flash_in, flash_out;   /* the drawn step's staging bytes */
    const demo_point *measured;     /* samples of ho_device_used() */
    size_t n_measured;
    double measured_end_us;         /* wall time of the measured step */
    const demo_point *predicted;    /* the model's curve (plan_simulate) */
    size_t n_predicted;
    double predicted_end_us;        /* the model's step time */
    const demo_transfer *copies;    /* copy log of the drawn step */
    size_t n_copies;
    int have_copies;                /* 0: no copy log (lanes say so) */
    const demo_transfer *transfers; /* the model's copies */
    size_t n_transfers;
    const demo_step *steps;         /* every replayed step */
    size_t n_steps;
    void *owned;                    /* demo_svg_load's arrays */
} demo_svg_data;

/* Add d as one row group of f (whose time axis is the step's). */
void demo_svg_add(plan_svg *f, const demo_svg_data *d);
/* One client's picture at path.  0 or -errno. */
int demo_svg_write(const char *path, const demo_svg_data *d);

/* Picture data: save d at path (created or truncated); load it back. */
int demo_svg_save(const char *path, const demo_svg_data *d);
/* Append the steps to a saved file (after demo_svg_save; d's steps). */
int demo_svg_save_steps(const char *path, const demo_step *steps, size_t n);
int demo_svg_load(const char *path, demo_svg_data *ret, char *err,
                  size_t errlen);
void demo_svg_data_free(demo_svg_data *d);

/* The job's picture (one group per client, in the order given) at
 * job_svg and its step chart at steps_svg (either may be NULL).  0 or
 * -errno. */
int demo_svg_job(const char *job, const demo_svg_data *clients, size_t n,
                 const char *job_svg, const char *steps_svg);

#endif
