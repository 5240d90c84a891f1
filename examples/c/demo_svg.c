/* examples/c/demo_svg.c - see demo_svg.h.
 *
 * Picture data (demo_svg_save / demo_svg_load), one record per line,
 * fields separated by one space, numbers in C notation:
 *
 *   hyperoffload-demo-picture 1
 *   name NAME                      (no spaces)
 *   title TEXT...                  (the rest of the line)
 *   subtitle TEXT...
 *   budget BYTES
 *   reference BYTES                (no-offload peak)
 *   flash IN_BYTES OUT_BYTES
 *   end MEASURED_END_US PREDICTED_END_US HAVE_COPIES
 *   m T_US BYTES                   (measured curve)
 *   p T_US BYTES                   (the model's curve)
 *   c DIR START END BYTES WAIT ISSUE STALL   (a copy made)
 *   x DIR START END BYTES          (a copy of the model)
 *   s STEP EXPOSED_US STALL_US     (a replayed step)
 */
#include "examples/c/demo_svg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "hyperoffload-demo-picture 1"
/* Records of one kind in a file: far above a demo step's. */
#define MAX_RECORDS (1u << 22)

void demo_svg_add(plan_svg *f, const demo_svg_data *d)
{
    char note[256], b1[32], b2[32];
    int g = plan_svg_group(f, d->name[0] ? d->name : d->title, d->budget,
                           d->no_offload_peak);
    if (g < 0)
        return;
    plan_svg_group_note(f, g, d->subtitle);
    for (size_t i = 0; i < d->n_measured; i++)
        plan_svg_mem(f, g, 0, d->measured[i].t_us, d->measured[i].bytes);
    plan_svg_mem_end(f, g, 0, d->measured_end_us);
    for (size_t i = 0; i < d->n_predicted; i++)
        plan_svg_mem(f, g, 1, d->predicted[i].t_us, d->predicted[i].bytes);
    plan_svg_mem_end(f, g, 1, d->predicted_end_us);
    for (size_t i = 0; i < d->n_transfers; i++) {
        const demo_transfer *t = &d->transfers[i];
        plan_svg_copy(f, g, t->dir ? PLAN_SVG_D2H : PLAN_SVG_H2D, 1,
                      t->start_us, t->end_us, t->bytes);
    }
    for (size_t i = 0; d->have_copies && i < d->n_copies; i++) {
        const demo_transfer *t = &d->copies[i];
        plan_svg_copy(f, g, t->dir ? PLAN_SVG_D2H : PLAN_SVG_H2D, 0,
                      t->start_us, t->end_us, t->bytes);
        /* the hooks blocked for it: compute stalled until it completed */
        if (t->wait_us > 0)
            plan_svg_stall(f, g, PLAN_SVG_STALL, t->end_us - t->wait_us,
                           t->end_us);
        if (t->stall_us > 0)
            plan_svg_stall(f, g, PLAN_SVG_FLASH, t->issue_us - t->stall_us,
                           t->issue_us);
    }
    if (!d->have_copies) {
        plan_svg_lane_note(f, g, PLAN_SVG_H2D, "no copy log for this step");
        plan_svg_lane_note(f, g, PLAN_SVG_D2H, "no copy log for this step");
    }
    snprintf(note, sizeof note, "the daemon staged %s from flash in this "
             "step (its copies are not in the client's log; waits for them "
             "are the purple marks)", plan_svg_iec((double)d->flash_in, b1,
                                                   sizeof b1));
    plan_svg_lane_note(f, g, PLAN_SVG_FLASH_IN, note);
    snprintf(note, sizeof note, "the daemon staged %s to flash in this step",
             plan_svg_iec((double)d->flash_out, b2, sizeof b2));
    plan_svg_lane_note(f, g, PLAN_SVG_FLASH_OUT, note);
}

static double step_end(const demo_svg_data *d)
{
    double e = d->measured_end_us > d->predicted_end_us ? d->measured_end_us
                                                        : d->predicted_end_us;
    return e > 0 ? e : 1;
}

static plan_svg *new_fig(const char *title, const char *subtitle, double end)
{
    plan_svg *f = plan_svg_new(title, subtitle, 0, end);
    if (f)
        plan_svg_series_names(f, "measured (ho_device_used at every hook)",
                              "the execution model's prediction");
    return f;
}

int demo_svg_write(const char *path, const demo_svg_data *d)
{
    plan_svg *f = new_fig(d->title, d->subtitle, step_end(d));
    int r;
    if (!f)
        return -ENOMEM;
    demo_svg_add(f, d);
    r = plan_svg_write_file(f, path);
    plan_svg_free(f);
    return r;
}

int demo_svg_job(const char *job, const demo_svg_data *c, size_t n,
                 const char *job_svg, const char *steps_svg)
{
    char title[256], sub[256];
    double end = 1;
    int r = 0;

    for (size_t i = 0; i < n; i++)
        if (step_end(&c[i]) > end)
            end = step_end(&c[i]);
    if (job_svg) {
        snprintf(title, sizeof title, "job %s: device memory over one "
                 "replayed step, %zu clients", job, n);
        snprintf(sub, sizeof sub, "each client's drawn step from its "
                 "ho_step_begin; measured (filled) against the model "
                 "(dashed), copies made and the model's (thin)");
        plan_svg *f = new_fig(title, sub, end);
        if (!f)
            return -ENOMEM;
        for (size_t i = 0; i < n; i++)
            demo_svg_add(f, &c[i]);
        r = plan_svg_write_file(f, job_svg);
        plan_svg_free(f);
        if (r < 0)
            return r;
    }
    if (steps_svg) {
        const char *names[PLAN_SVG_MAX_STEP_SERIES];
        const double *ex[PLAN_SVG_MAX_STEP_SERIES], *st[PLAN_SVG_MAX_STEP_SERIES];
        double *buf;
        size_t ns = n < PLAN_SVG_MAX_STEP_SERIES ? n : PLAN_SVG_MAX_STEP_SERIES;
        size_t nsteps = 0;
        uint64_t first = UINT64_MAX;
        for (size_t i = 0; i < ns; i++) {
            for (size_t k = 0; k < c[i].n_steps; k++)
                if (c[i].steps[k].step < first)
                    first = c[i].steps[k].step;
        }
        if (first == UINT64_MAX)
            first = 0;
        for (size_t i = 0; i < ns; i++)
            for (size_t k = 0; k < c[i].n_steps; k++)
                if (c[i].steps[k].step - first + 1 > nsteps)
                    nsteps = c[i].steps[k].step - first + 1;
        if (nsteps > MAX_RECORDS)
            nsteps = MAX_RECORDS;
        buf = calloc(2 * ns * (nsteps ? nsteps : 1), sizeof *buf);
        if (!buf)
            return -ENOMEM;
        for (size_t i = 0; i < ns; i++) {
            double *e = buf + 2 * i * nsteps, *s = e + nsteps;
            /* a step run twice (reconnect) counts as its last run */
            for (size_t k = 0; k < c[i].n_steps; k++) {
                uint64_t j = c[i].steps[k].step - first;
                if (j < nsteps) {
                    e[j] = c[i].steps[k].exposed_us;
                    s[j] = c[i].steps[k].stall_us;
                }
            }
            names[i] = c[i].name;
            ex[i] = e;
            st[i] = s;
        }
        snprintf(title, sizeof title, "job %s: exposed and stall time per "
                 "replayed step", job);
        plan_svg_steps ch = {title, "exposed: time the hooks waited for "
                             "copies; stall: the part waiting for host "
                             "copies coming back from flash",
                             (uint32_t)ns, names, (uint32_t)nsteps, first,
                             ex, st};
        r = plan_svg_steps_write_file(&ch, steps_svg);
        free(buf);
    }
    return r;
}

/* ------------------------------------------------------------ data */

int demo_svg_save(const char *path, const demo_svg_data *d)
{
    FILE *f = fopen(path, "w");
    int r = 0;
    if (!f)
        return -errno;
    fprintf(f, MAGIC "\nname %s\ntitle %s\nsubtitle %s\nbudget %llu\n"
            "reference %llu\nflash %llu %llu\nend %.17g %.17g %d\n",
            d->name[0] ? d->name : "client", d->title, d->subtitle,
            (unsigned long long)d->budget,
            (unsigned long long)d->no_offload_peak,
            (unsigned long long)d->flash_in, (unsigned long long)d->flash_out,
            d->measured_end_us, d->predicted_end_us, d->have_copies);
    for (size_t i = 0; i < d->n_measured; i++)
        fprintf(f, "m %.17g %llu\n", d->measured[i].t_us,
                (unsigned long long)d->measured[i].bytes);
    for (size_t i = 0; i < d->n_predicted; i++)
        fprintf(f, "p %.17g %llu\n", d->predicted[i].t_us,
                (unsigned long long)d->predicted[i].bytes);
    for (size_t i = 0; d->have_copies && i < d->n_copies; i++) {
        const demo_transfer *t = &d->copies[i];
        fprintf(f, "c %d %.17g %.17g %llu %.17g %.17g %.17g\n", t->dir,
                t->start_us, t->end_us, (unsigned long long)t->bytes,
                t->wait_us, t->issue_us, t->stall_us);
    }
    for (size_t i = 0; i < d->n_transfers; i++) {
        const demo_transfer *t = &d->transfers[i];
        fprintf(f, "x %d %.17g %.17g %llu\n", t->dir, t->start_us,
                t->end_us, (unsigned long long)t->bytes);
    }
    for (size_t i = 0; i < d->n_steps; i++)
        fprintf(f, "s %llu %.17g %.17g\n",
                (unsigned long long)d->steps[i].step, d->steps[i].exposed_us,
                d->steps[i].stall_us);
    if (ferror(f))
        r = -EIO;
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    return r;
}

int demo_svg_save_steps(const char *path, const demo_step *steps, size_t n)
{
    FILE *f = fopen(path, "a");
    int r = 0;
    if (!f)
        return -errno;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "s %llu %.17g %.17g\n", (unsigned long long)steps[i].step,
                steps[i].exposed_us, steps[i].stall_us);
    if (ferror(f))
        r = -EIO;
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    return r;
}

void demo_svg_data_free(demo_svg_data *d)
{
    if (d) {
        free(d->owned);
        memset(d, 0, sizeof *d);
    }
}

static void text_field(char *dst, size_t len, const char *src)
{
    size_t n = strcspn(src, "\n");
    if (n >= len)
        n = len - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

int demo_svg_load(const char *path, demo_svg_data *d, char *err,
                  size_t errlen)
{
    char line[1024];
    unsigned long lineno = 0;
    FILE *f = fopen(path, "r");
    int r = 0;

    memset(d, 0, sizeof *d);
    if (!f) {
        r = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return r;
    }
    size_t lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    rewind(f);
    if (lines > MAX_RECORDS) {
        snprintf(err, errlen, "%s: more than %u records", path, MAX_RECORDS);
        fclose(f);
        return -E2BIG;
    }
    /* points, copies, steps in one allocation (d->owned): each array
     * room for every line */
    size_t k = lines ? lines : 1;
    char *block = calloc(k, 2 * sizeof(demo_point) +
                                2 * sizeof(demo_transfer) + sizeof(demo_step));
    if (!block) {
        fclose(f);
        return -ENOMEM;
    }
    d->owned = block;
    demo_point *m = (demo_point *)block, *p = m + k;
    demo_transfer *c = (demo_transfer *)(p + k), *x = c + k;
    demo_step *st = (demo_step *)(x + k);
    d->measured = m;
    d->predicted = p;
    d->copies = c;
    d->transfers = x;
    d->steps = st;
    while (r == 0 && lineno < lines && fgets(line, sizeof line, f)) {
        unsigned long long a = 0, b = 0;
        double t0 = 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0;
        int dir = 0, ok = 1, hc = 0;
        lineno++;
        if (lineno == 1) {
            ok = strncmp(line, MAGIC, strlen(MAGIC)) == 0;
        } else if (strncmp(line, "name ", 5) == 0) {
            text_field(d->name, sizeof d->name, line + 5);
        } else if (strncmp(line, "title ", 6) == 0) {
            text_field(d->title, sizeof d->title, line + 6);
        } else if (strncmp(line, "subtitle ", 9) == 0) {
            text_field(d->subtitle, sizeof d->subtitle, line + 9);
        } else if (sscanf(line, "budget %llu", &a) == 1) {
            d->budget = a;
        } else if (sscanf(line, "reference %llu", &a) == 1) {
            d->no_offload_peak = a;
        } else if (sscanf(line, "flash %llu %llu", &a, &b) == 2) {
            d->flash_in = a;
            d->flash_out = b;
        } else if (sscanf(line, "end %lf %lf %d", &t0, &t1, &hc) == 3) {
            d->measured_end_us = t0;
            d->predicted_end_us = t1;
            d->have_copies = hc != 0;
        } else if (line[0] == 'm' || line[0] == 'p') {
            ok = sscanf(line + 1, "%lf %llu", &t0, &a) == 2;
            if (ok && line[0] == 'm')
                m[d->n_measured++] = (demo_point){t0, a};
            else if (ok)
                p[d->n_predicted++] = (demo_point){t0, a};
        } else if (line[0] == 'c') {
            ok = sscanf(line + 1, "%d %lf %lf %llu %lf %lf %lf", &dir, &t0,
                        &t1, &a, &t2, &t3, &t4) == 7;
            if (ok)
                c[d->n_copies++] = (demo_transfer){t0, t1, a, dir != 0, t2, t3,
                                                t4};
        } else if (line[0] == 'x') {
            ok = sscanf(line + 1, "%d %lf %lf %llu", &dir, &t0, &t1, &a) == 4;
            if (ok)
                x[d->n_transfers++] = (demo_transfer){t0, t1, a, dir != 0, 0, t0,
                                                0};
        } else if (line[0] == 's') {
            ok = sscanf(line + 1, "%llu %lf %lf", &a, &t0, &t1) == 3;
            if (ok)
                st[d->n_steps++] = (demo_step){a, t0, t1};
        } else {
            ok = 0;
        }
        if (!ok || !isfinite(t0) || !isfinite(t1)) {
            snprintf(err, errlen, "%s:%lu: not a picture record", path,
                     lineno);
            r = -EINVAL;
        }
    }
    if (r == 0 && lineno == 0) {
        snprintf(err, errlen, "%s: empty", path);
        r = -EINVAL;
    }
    fclose(f);
    if (r < 0)
        demo_svg_data_free(d);
    return r;
}
