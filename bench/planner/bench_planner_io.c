/*
 * bench/planner/bench_planner_io.c - what reading and writing traces and
 * schedules costs next to planning, on the 1,000,000-op / 250,000-storage
 * random trace of bench_planner (seed 7; `hoctl trace gen random` makes
 * the same one) or a trace file given with --trace.
 *
 * Per format (JSON, protobuf): the trace written to a file and read back
 * the way `hoctl plan` reads it (plan_trace_read_file), its hash checked
 * equal to the original's; the trace planned once with hoplan (--planner)
 * at --budget percent of its no-offload peak; the schedule written and
 * read back (plan_schedule_read_file, bound and checked equal).  Times are
 * CPU seconds of the process (--wall: wall clock) of the one run each (the
 * median of --repeats runs for the I/O); max RSS is the process's
 * high-water mark (getrusage), printed after the step that reached it.
 *
 * usage: bench_planner_io [--trace FILE] [--budget PCT] [--planner P]
 *                         [--repeats N] [--dir DIR] [--no-plan] [--wall]
 *                         [--format json|pb]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "planner/gen/gen.h"
#include "planner/io/plan_io.h"
#include "planner/plan.h"

/* Seconds of the process's CPU time (--wall: of the wall clock).  CPU
 * time is the default: on a shared machine it is what the code costs. */
static clockid_t clk = CLOCK_PROCESS_CPUTIME_ID;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double maxrss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static void die(const char *what, int rc, const char *err)
{
    fprintf(stderr, "bench_planner_io: %s: %s%s%s\n", what, ho_strerror(rc),
            err && *err ? ": " : "", err ? err : "");
    exit(1);
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* Write the trace (pb or JSON) to path; seconds. */
static double write_trace(const plan_trace *t, const char *path, int pb)
{
    double t0 = now_s();
    FILE *f = fopen(path, "wb");
    if (!f)
        die(path, -errno, NULL);
    int rc;
    if (pb) {
        uint8_t *buf = NULL;
        size_t len = 0;
        rc = plan_trace_to_pb(t, &buf, &len);
        if (rc == 0 && fwrite(buf, 1, len, f) != len)
            rc = -EIO;
        free(buf);
    } else {
        rc = plan_trace_write_json(t, f);
    }
    if (fclose(f) != 0 && rc == 0)
        rc = -EIO;
    if (rc < 0)
        die("writing the trace", rc, NULL);
    return now_s() - t0;
}

static double write_schedule(const plan_schedule *s, const char *path, int pb)
{
    double t0 = now_s();
    FILE *f = fopen(path, "wb");
    if (!f)
        die(path, -errno, NULL);
    int rc;
    if (pb) {
        uint8_t *buf = NULL;
        size_t len = 0;
        rc = plan_schedule_to_pb(s, &buf, &len);
        if (rc == 0 && fwrite(buf, 1, len, f) != len)
            rc = -EIO;
        free(buf);
    } else {
        rc = plan_schedule_write_json(s, f);
    }
    if (fclose(f) != 0 && rc == 0)
        rc = -EIO;
    if (rc < 0)
        die("writing the schedule", rc, NULL);
    return now_s() - t0;
}

static int same_schedule(const plan_schedule *a, const plan_schedule *b)
{
    if (a->n_actions != b->n_actions || a->n_homes != b->n_homes)
        return 0;
    for (size_t k = 0; k < a->n_actions; k++)
        if (a->actions[k].op != b->actions[k].op ||
            a->actions[k].when != b->actions[k].when ||
            a->actions[k].kind != b->actions[k].kind ||
            a->actions[k].storage_id != b->actions[k].storage_id)
            return 0;
    for (size_t k = 0; k < a->n_homes; k++)
        if (a->homes[k].storage_id != b->homes[k].storage_id ||
            a->homes[k].home != b->homes[k].home)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    const char *trace = NULL, *planner = "hoplan", *dir = NULL;
    double pct = 50;
    int repeats = 3, plan = 1, only = -1; /* only: 0 JSON, 1 protobuf */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--trace") && i + 1 < argc)
            trace = argv[++i];
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
            pct = atof(argv[++i]);
        else if (!strcmp(argv[i], "--planner") && i + 1 < argc)
            planner = argv[++i];
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--no-plan"))
            plan = 0;
        else if (!strcmp(argv[i], "--format") && i + 1 < argc)
            only = !strcmp(argv[++i], "pb") ? 1 : 0;
        else if (!strcmp(argv[i], "--wall"))
            clk = CLOCK_MONOTONIC;
        else {
            fprintf(stderr, "usage: bench_planner_io [--trace FILE] "
                    "[--budget PCT] [--planner P] [--repeats N] [--dir DIR] "
                    "[--no-plan] [--wall] [--format json|pb]\n");
            return 2;
        }
    }
    if (repeats < 1 || repeats > 50 || pct <= 0 || pct > 100) {
        fprintf(stderr, "bench_planner_io: --repeats 1..50, --budget "
                "0..100\n");
        return 2;
    }
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/bench-io-XXXXXX",
             dir ? dir : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpl))
        die("mkdtemp", -errno, tmpl);

    char err[512] = "";
    plan_trace *t = NULL;
    double t0 = now_s();
    int rc;
    if (trace) {
        rc = plan_trace_read_file(trace, &t, err, sizeof err);
        if (rc < 0)
            die(trace, rc, err);
    } else {
        plan_gen_random_cfg c;
        memset(&c, 0, sizeof c);
        c.seed = 7;
        c.n_ops = 1000000;
        c.n_storages = 250000;
        c.p_initial_device = 0.1;
        c.p_initial_host = 0.1;
        c.p_retained = 0.2;
        c.p_pinned = 0.05;
        rc = plan_gen_random(&c, &t, err, sizeof err);
        if (rc < 0)
            die("gen random", rc, err);
    }
    printf("trace %s: %u ops, %u storages, %llu refs (%s %.2f s, max RSS "
           "%.0f MiB)\n", t->name, t->n_ops, t->n_storages,
           (unsigned long long)t->n_refs, trace ? "read" : "generated",
           now_s() - t0, maxrss_mib());
    uint64_t hash = plan_trace_hash(t);

    plan_schedule *s = NULL;
    if (plan) {
        plan_trace_summary sm;
        if ((rc = plan_trace_summarize(t, &sm)) < 0)
            die("summarize", rc, NULL);
        uint64_t budget = (uint64_t)((double)sm.no_offload_peak * pct / 100);
        plan_options o;
        memset(&o, 0, sizeof o);
        o.planner = planner;
        plan_result res;
        memset(&res, 0, sizeof res);
        t0 = now_s();
        rc = plan_make(t, budget, &o, &s, &res);
        double dt = now_s() - t0;
        if (rc < 0)
            die("plan_make", rc, res.message);
        printf("plan %s at %.0f%%: %.2f s (planning_ms %.0f), %zu actions, "
               "%zu homes, max RSS %.0f MiB\n", planner, pct, dt,
               res.planning_ms, s->n_actions, s->n_homes, maxrss_mib());
    }

    printf("\n%s seconds\n%-9s %10s %10s %10s %12s %12s %10s\n",
           clk == CLOCK_MONOTONIC ? "wall" : "CPU", "format", "trace MB",
           "write s", "read s", "sched MB", "s write s", "s read s");
    for (int pb = 0; pb < 2; pb++) {
        if (only >= 0 && pb != only)
            continue;
        char tp[600], sp[600];
        snprintf(tp, sizeof tp, "%s/trace.%s", tmpl, pb ? "pb" : "json");
        snprintf(sp, sizeof sp, "%s/schedule.%s", tmpl, pb ? "pb" : "json");
        double w[50], r[50], sw[50], sr[50];
        for (int k = 0; k < repeats; k++) {
            w[k] = write_trace(t, tp, pb);
            plan_trace *back = NULL;
            t0 = now_s();
            rc = plan_trace_read_file(tp, &back, err, sizeof err);
            r[k] = now_s() - t0;
            if (rc < 0)
                die(tp, rc, err);
            if (plan_trace_hash(back) != hash)
                die("the trace read back differs", HO_E_INTERNAL, tp);
            plan_trace_free(back);
            sw[k] = sr[k] = 0;
            if (!s)
                continue;
            sw[k] = write_schedule(s, sp, pb);
            plan_schedule *sb = NULL;
            t0 = now_s();
            rc = plan_schedule_read_file(sp, &sb, err, sizeof err);
            if (rc == 0)
                rc = plan_schedule_bind(sb, t, err, sizeof err);
            sr[k] = now_s() - t0;
            if (rc < 0)
                die(sp, rc, err);
            if (!same_schedule(s, sb))
                die("the schedule read back differs", HO_E_INTERNAL, sp);
            plan_schedule_free(sb);
        }
        printf("%-9s %10.1f %10.3f %10.3f %12.1f %12.3f %10.3f\n",
               pb ? "protobuf" : "JSON", (double)file_size(tp) / 1e6,
               median(w, repeats), median(r, repeats),
               s ? (double)file_size(sp) / 1e6 : 0.0, median(sw, repeats),
               median(sr, repeats));
        unlink(tp);
        unlink(sp);
    }
    printf("max RSS %.0f MiB\n", maxrss_mib());
    rmdir(tmpl);
    plan_schedule_free(s);
    plan_trace_free(t);
    return 0;
}
