/*
 * examples/c/demo_svg.h - the demo client's picture: device memory over one
 * step against the budget, measured and predicted, with the transfers drawn
 * on two lanes (H2D, D2H).  Plain SVG, no dependencies.
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

/* One copy: dir 0 = H2D, 1 = D2H. */
typedef struct demo_transfer {
    double start_us, end_us;
    uint64_t bytes;
    int dir;
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
    const demo_transfer *transfers; /* the model's copies */
    size_t n_transfers;
    const char *transfer_source;    /* "predicted" or "measured" */
} demo_svg_data;

/* Write the picture to `path` (created or truncated).  Returns 0 or
 * -errno (the file is removed again on a write error). */
int demo_svg_write(const char *path, const demo_svg_data *d);

#endif
