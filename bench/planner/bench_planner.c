/*
 * bench/planner/bench_planner.c - every planner on the evaluation
 * workloads of PLANNER.md §6, one table:
 *
 *   bench_planner [--captured FILE] [--repeats N] [--no-large]
 *
 * Rows: LLaMA-2-7B, LLaMA-3-8B and LLaMA-65B training steps (plan_gen_train,
 * 910b profile) at 90%, 70% and 50% of the no-offload peak; a captured
 * PyTorch trace (default examples/pytorch/traces/transformer_step.json,
 * skipped with a note when absent) at the same budgets; a 1,000,000-op,
 * 250,000-storage random trace at 70%.  Per planner: whether its schedule
 * is valid and within the budget, its peak (% of the no-offload peak), its
 * exposed transfer time, the bytes it moves and its planning time (median
 * of --repeats runs, one run for the large trace).  Per transformer row:
 * hoplan's exposed time as a % of seed-greedy's, and whether the link
 * could carry hoplan's traffic during the compute.
 *
 * Planning time is wall time of plan_make (which includes the summary and
 * the final check by plan_simulate) on this process's thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hyperoffload/errors.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct row {
    const char *name;
    plan_trace *t;
    double fractions[3];
    int n_fractions;
    int repeats;
    bool transformer;
} row;

/* One planner at one budget: prints a line, returns the schedule's
 * metrics through *ret (valid when the return is 0). */
static int run_planner(const plan_trace *t, const char *planner,
                       uint64_t budget, uint64_t peak, int repeats,
                       plan_metrics *ret)
{
    double ms[16];
    plan_schedule *s = NULL;
    plan_result res;
    int r = 0;
    if (repeats > 16)
        repeats = 16;
    for (int k = 0; k < repeats; k++) {
        plan_options o = {planner, 0, 0, 0};
        plan_schedule_free(s);
        s = NULL;
        double t0 = now_ms();
        r = plan_make(t, budget, &o, &s, &res);
        ms[k] = now_ms() - t0;
        if (r < 0)
            break;
    }
    int done = r < 0 ? 1 : repeats;
    qsort(ms, (size_t)done, sizeof(double), cmp_double);
    double med = ms[done / 2];
    if (r < 0) {
        char why[64];
        if (r == HO_E_INFEASIBLE && res.min_budget)
            snprintf(why, sizeof why, "infeasible: meets %.1f%%",
                     100.0 * (double)res.min_budget / (double)peak);
        else if (r == HO_E_UNSUPPORTED)
            snprintf(why, sizeof why, "n/a: more than 20 candidate gaps");
        else
            snprintf(why, sizeof why, "%s", ho_err_name(r));
        printf("  %-13s %-10s %7s %12s %10s %9s %10.1f  %s\n", planner, "-",
               "-", "-", "-", "-", med, why);
        return r;
    }
    plan_metrics m;
    plan_violation v;
    plan_schedule copy = *s;
    copy.budget_bytes = UINT64_MAX;
    bool valid = plan_simulate(t, &copy, &m, &v, NULL) == 0;
    bool fits = valid && m.peak_device_bytes <= budget;
    printf("  %-13s %-10s %6.1f%% %12.1f %10.2f %9zu %10.1f\n", planner,
           !valid ? "INVALID" : fits ? "ok" : "over",
           100.0 * (double)m.peak_device_bytes / (double)peak,
           m.exposed_us / 1e3,
           (double)(m.h2d_bytes + m.d2h_bytes) / 1e9, s->n_actions, med);
    plan_schedule_free(s);
    *ret = m;
    return fits ? 0 : HO_E_BAD_SCHEDULE;
}

static void run_row(const row *rw)
{
    plan_trace_summary sm;
    if (plan_trace_summarize(rw->t, &sm) < 0) {
        printf("%s: cannot summarize\n", rw->name);
        return;
    }
    printf("\n%s: %u ops, %u storages, compute %.1f ms, no-offload peak "
           "%.2f GB, largest op working set %.2f GB\n",
           rw->name, sm.n_ops, sm.n_storages, sm.compute_us / 1e3,
           (double)sm.no_offload_peak / 1e9,
           (double)sm.max_op_working_set / 1e9);
    for (int f = 0; f < rw->n_fractions; f++) {
        uint64_t budget =
            (uint64_t)((double)sm.no_offload_peak * rw->fractions[f]);
        printf(" budget %.0f%% (%.2f GB)\n", rw->fractions[f] * 100,
               (double)budget / 1e9);
        printf("  %-13s %-10s %7s %12s %10s %9s %10s\n", "planner", "result",
               "peak", "exposed ms", "moved GB", "actions", "plan ms");
        plan_metrics mh, mg;
        memset(&mh, 0, sizeof mh);
        memset(&mg, 0, sizeof mg);
        int rh = -1, rg = -1;
        for (int p = 0; plan_planner_names[p]; p++) {
            const char *name = plan_planner_names[p];
            plan_metrics m;
            memset(&m, 0, sizeof m);
            int reps = rw->repeats;
            if (strcmp(name, "seed-greedy") == 0 && sm.n_ops > 100000)
                reps = 1;
            int r = run_planner(rw->t, name, budget, sm.no_offload_peak,
                                reps, &m);
            if (strcmp(name, "hoplan") == 0) {
                rh = r;
                mh = m;
            } else if (strcmp(name, "seed-greedy") == 0) {
                rg = r == HO_E_BAD_SCHEDULE ? 0 : r;
                mg = m;
            }
        }
        if (rw->transformer && rh == 0 && rg == 0) {
            const plan_link *l = &rw->t->link;
            double h = (double)mh.h2d_bytes / (l->h2d_gbps * 1e3);
            double d = (double)mh.d2h_bytes / (l->d2h_gbps * 1e3);
            bool carry = l->duplex ? (h <= mh.compute_us && d <= mh.compute_us)
                                   : h + d <= mh.compute_us;
            if (mg.exposed_us > 0)
                printf("  hoplan exposed = %.1f%% of seed-greedy's; ",
                       100.0 * mh.exposed_us / mg.exposed_us);
            else
                printf("  seed-greedy exposed nothing; ");
            printf("link could carry hoplan's traffic during compute: %s "
                   "(H2D %.0f ms, D2H %.0f ms, compute %.0f ms)\n",
                   carry ? "yes" : "no", h / 1e3, d / 1e3,
                   mh.compute_us / 1e3);
        }
    }
}

static plan_trace *train(const char *model, uint32_t seq, uint32_t n_micro,
                         bool params_host, bool opt_host)
{
    plan_gen_train_cfg c;
    char err[256];
    plan_trace *t = NULL;
    memset(&c, 0, sizeof c);
    c.model = *plan_model_find(model);
    c.device = *plan_device_find("910b");
    c.seq = seq;
    c.micro_batch = 1;
    c.n_micro = n_micro;
    c.dtype_bytes = 2;
    c.params_on_host = params_host;
    c.optimizer_on_host = opt_host;
    c.optimizer_step = true;
    if (plan_gen_train(&c, &t, err, sizeof err) < 0) {
        fprintf(stderr, "gen %s: %s\n", model, err);
        exit(1);
    }
    return t;
}

int main(int argc, char **argv)
{
    const char *captured = "examples/pytorch/traces/transformer_step.json";
    int repeats = 3;
    bool large = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--captured") == 0 && i + 1 < argc)
            captured = argv[++i];
        else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
            if (repeats < 1 || repeats > 16)
                repeats = 3;
        }
        else if (strcmp(argv[i], "--no-large") == 0)
            large = false;
        else {
            fprintf(stderr, "usage: %s [--captured FILE] [--repeats N] "
                            "[--no-large]\n",
                    argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("bench_planner: peak = %% of the no-offload peak; exposed = step "
           "time - compute; moved = H2D + D2H; plan ms = median of %d "
           "(1 for the large trace)\n",
           repeats);

    row rows[5];
    int nr = 0;
    rows[nr++] = (row){"llama2-7b train, seq 32768, 1 micro-batch, all state "
                       "on device (910b)",
                       train("llama2-7b", 32768, 1, false, false),
                       {0.9, 0.7, 0.5}, 3, repeats, true};
    rows[nr++] = (row){"llama3-8b train, seq 32768, 1 micro-batch, all state "
                       "on device (910b)",
                       train("llama3-8b", 32768, 1, false, false),
                       {0.9, 0.7, 0.5}, 3, repeats, true};
    rows[nr++] = (row){"llama-65b train, seq 8192, 1 micro-batch, optimizer "
                       "state on host (910b)",
                       train("llama-65b", 8192, 1, false, true),
                       {0.9, 0.7, 0.5}, 3, repeats, true};
    char err[256];
    plan_trace *ct = NULL;
    if (plan_trace_read_file(captured, &ct, err, sizeof err) == 0)
        rows[nr++] = (row){"captured PyTorch step", ct, {0.9, 0.7, 0.5}, 3,
                           repeats, true};
    else
        printf("\nnote: captured trace %s not read (%s): row skipped; "
               "write one with examples/pytorch/capture_example.py --out "
               "FILE and pass --captured FILE\n",
               captured, err);
    if (large) {
        plan_gen_random_cfg c;
        memset(&c, 0, sizeof c);
        c.seed = 7;
        c.n_ops = 1000000;
        c.n_storages = 250000;
        c.p_initial_device = 0.1;
        c.p_initial_host = 0.1;
        c.p_retained = 0.2;
        c.p_pinned = 0.05;
        plan_trace *t = NULL;
        if (plan_gen_random(&c, &t, err, sizeof err) < 0) {
            fprintf(stderr, "gen random: %s\n", err);
            return 1;
        }
        rows[nr++] = (row){"random, 1,000,000 ops, 250,000 storages (seed 7)",
                           t, {0.7, 0, 0}, 1, 1, false};
    }
    for (int i = 0; i < nr; i++) {
        run_row(&rows[i]);
        plan_trace_free(rows[i].t);
    }
    return 0;
}
