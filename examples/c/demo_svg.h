/*
 * examples/c/demo_svg.h - the demo client's picture: device memory over one
 * step against the budget, measured and predicted, with the copies drawn on
 * two lanes (H2D, D2H): the ones the runtime really made, and under each
 * lane the execution model's, thin and light, so that both can be
 * compared.  Plain SVG, no dependencies.
 *
 * Ownership: a demo_svg_data is filled by the caller (arrays it owns);
 * demo_svg_write() only reads it.
 */
#ifndef HO_DEMO_SVG_H
#define HO_DEMO_SVG_H

#include <stddef.h>
#include <stdint.h>

/* A point of a device-bytes curve: bytes allocated from t_us on. */
typedef struct demo_point {
    double t_us;
    uint64_t bytes;
} demo_point;

/* One copy: dir 0 = H2D, 1 = D2H, times from the step's start.  For the
 * copies made (0 for the model's): wait_us, how long the hooks blocked
 * waiting for it to complete, drawn as a red mark ending where it ends;
 * stall_us, how long its issue waited for the daemon to bring its host
 * copy in from flash, drawn as a purple mark ending at issue_us. */
typedef struct demo_transfer {
    double start_us, end_us;
    uint64_t bytes;
    int dir;
    double wait_us;
    double issue_us, stall_us;
} demo_transfer;

typedef struct demo_svg_data {
    char title[160];
    char subtitle[320];
    uint64_t budget;
    uint64_t no_offload_peak;       /* drawn as a dashed line when > 0 */
    const demo_point *measured;     /* samples of ho_device_used() */
    size_t n_measured;
    double measured_end_us;         /* wall time of the measured step */
    const demo_point *predicted;    /* the model's curve (plan_simulate) */
    size_t n_predicted;
    double predicted_end_us;        /* the model's step time */
    /* The copies the runtime really made (its copy log, ho_step_copies),
     * drawn on the H2D and D2H lanes, and the model's copies
     * (plan_simulate), drawn as a thin light lane under each. */
    const demo_transfer *copies;
    size_t n_copies;
    int have_copies;                /* 0: no copy log (lanes say so) */
    const demo_transfer *transfers; /* the model's copies */
    size_t n_transfers;
} demo_svg_data;

/* Write the picture to `path` (created or truncated).  Returns 0 or
 * -errno (the file is removed again on a write error). */
int demo_svg_write(const char *path, const demo_svg_data *d);

#endif
