/*
 * examples/c/demo_picture.c - ho-demo-picture: the job's pictures from the
 * picture data its clients saved (ho-demo-client --picture-data):
 *
 *   ho-demo-picture --job NAME [--svg JOB.svg] [--steps-svg STEPS.svg]
 *                   DATA...
 *
 * JOB.svg: one row group per client (device memory against the budget,
 * measured and the model's, copies made and the model's, waits for copies
 * and for flash); STEPS.svg: exposed and stall time per replayed step and
 * client.  Exit 0, 1 on an unreadable file or a failed write, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/c/demo_svg.h"

#define PROG "ho-demo-picture"
#define MAX_CLIENTS 64

int main(int argc, char **argv)
{
    const char *job = NULL, *svg = NULL, *steps = NULL;
    const char *files[MAX_CLIENTS];
    demo_svg_data d[MAX_CLIENTS];
    size_t n = 0;
    char err[512];
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        const char **opt = strcmp(argv[i], "--job") == 0 ? &job
                           : strcmp(argv[i], "--svg") == 0 ? &svg
                           : strcmp(argv[i], "--steps-svg") == 0 ? &steps
                                                                  : NULL;
        if (opt) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: %s needs a value\n", PROG, argv[i]);
                return 2;
            }
            *opt = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "%s: unknown option %s\nusage: %s --job NAME "
                    "[--svg JOB.svg] [--steps-svg STEPS.svg] DATA...\n", PROG,
                    argv[i], PROG);
            return 2;
        } else if (n == MAX_CLIENTS) {
            fprintf(stderr, "%s: at most %d clients\n", PROG, MAX_CLIENTS);
            return 2;
        } else {
            files[n++] = argv[i];
        }
    }
    if (!job || n == 0 || (!svg && !steps)) {
        fprintf(stderr, "usage: %s --job NAME [--svg JOB.svg] [--steps-svg "
                "STEPS.svg] DATA...\n", PROG);
        return 2;
    }
    for (size_t i = 0; i < n; i++) {
        err[0] = 0;
        if (demo_svg_load(files[i], &d[i], err, sizeof err) < 0) {
            fprintf(stderr, "%s: %s\n", PROG, err);
            for (size_t k = 0; k < i; k++)
                demo_svg_data_free(&d[k]);
            return 1;
        }
    }
    int r = demo_svg_job(job, d, n, svg, steps);
    if (r < 0) {
        fprintf(stderr, "%s: writing the pictures: %s\n", PROG, strerror(-r));
        rc = 1;
    }
    for (size_t i = 0; i < n; i++)
        demo_svg_data_free(&d[i]);
    if (rc == 0) {
        if (svg)
            printf("job picture %s (%zu clients)\n", svg, n);
        if (steps)
            printf("step chart  %s\n", steps);
    }
    return rc;
}
