/*
 * tests/runtime/test_rt_restage.c - replays re-staged after the library
 * reconnected to a restarted daemon (issue 10 item 7, runtime_restage.c),
 * against the real daemon, SIGKILLed and started again on its socket:
 *   carried_over   one replay, host copies in DDR: the next call stages it
 *                  on the new session and every host copy is carried over
 *                  -- a retained storage whose only copy is on host reads
 *                  back exact in the steps after;
 *   copies_lost    host copies staged to flash (a DDR limit of two copies)
 *                  are lost with the daemon: the step that prefetches one
 *                  fails with HO_E_DISCONNECTED naming it, within a second,
 *                  and once the inputs are written again the replay runs;
 *   under_load     4 clients replaying in threads, the daemon killed while
 *                  they step and started again: each reconnects, re-stages
 *                  and runs 8 more steps with every read verified; no
 *                  client hangs (each thread joined within 60 s).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "tests/check_main.h"
#include "tests/harness.h"
#include "tests/runtime/rt_fw.h"

static ho_harness *h;
static char dir[512];

static void setup(void)
{
    h = ho_harness_start_args(NULL);
    rt_tmpdir(dir, sizeof dir);
}

static void teardown(void)
{
    rt_rmdir(dir);
    ck_assert_int_eq(ho_harness_free(h), 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void kill_and_restart(void)
{
    char err[512];
    ck_assert_int_eq(ho_harness_kill9(h), 0);
    ck_assert_msg(ho_harness_restart(h, err, sizeof err) == 0, "%s", err);
}

/* One client with its replay of the staged trace (n inputs of `bytes`,
 * with the retained host `state` when asked) under a DDR limit. */
typedef struct job {
    ho_client *c;
    ho_trace *t;
    plan_trace *pt;
    ho_plan *p;
    ho_device *dev;
    ho_replay *r;
    rt_fw f;
    char dir[600];
} job;

static void job_start(job *j, const char *name, unsigned n, uint64_t bytes,
                      bool state, uint64_t ddr_limit)
{
    memset(j, 0, sizeof(*j));
    snprintf(j->dir, sizeof j->dir, "%s/%s", dir, name);
    ck_assert_int_eq(mkdir(j->dir, 0700), 0);
    j->t = rt_staged_trace(j->dir, n, bytes, state, &j->pt);
    const uint64_t budget = 2 * bytes + 4096;
    ck_assert_int_eq(ho_connect(ho_harness_socket(h), name, &j->c), 0);
    ho_set_reconnect(j->c, 20, 500);
    ck_assert_int_eq(ho_register(j->c, name, 0, budget), 0);
    ck_assert_int_eq(ho_plan_request(j->c, j->t, budget, NULL, &j->p), 0);
    ck_assert_int_eq(ho_device_open("host", 0, budget, &j->dev), 0);
    ho_replay_opts ro = {.ddr_limit = ddr_limit};
    int rc = ho_replay_new(j->c, j->dev, j->t, j->p, &ro, &j->r);
    char why[512];
    ck_assert_msg(rc == 0, "replay_new: %s (%s)", ho_err_name(rc),
                  ho_last_error(j->c, why, sizeof why));
    rt_fw_init(&j->f, j->r, j->dev, j->pt);
}

static void job_done(job *j)
{
    rt_fw_done(&j->f);
    ho_replay_free(j->r);
    ho_device_close(j->dev);
    ho_plan_free(j->p);
    ho_close(j->c);
    ho_trace_free(j->t);
    plan_trace_free(j->pt);
    char path[700];
    snprintf(path, sizeof path, "%s/staged.json", j->dir);
    unlink(path);
    rmdir(j->dir);
}

/* One step that may meet the daemon's death: inputs (unless `no_inputs`),
 * begin, every op verified, end.  0, or the first error (the step ended;
 * its sentence in why). */
static int try_step(job *j, int first, bool no_inputs, char *why,
                    size_t len)
{
    rt_fw *f = &j->f;
    int rc = no_inputs ? 0 : rt_fw_inputs_rc(f, first);
    if (rc == 0)
        rc = ho_step_begin(j->r);
    if (rc < 0) {
        snprintf(why, len, "%s", ho_runtime_last_error());
        return rc;
    }
    for (uint32_t op = 0; op < j->pt->n_ops && rc == 0; op++) {
        rc = ho_op_begin(j->r, op);
        if (rc == 0) {
            rt_fw_compute(f, op); /* counts wrong bytes in bad_reads */
            rc = ho_op_end(j->r, op);
        }
        if (rc < 0)
            snprintf(why, len, "op %u: %s", op, ho_runtime_last_error());
    }
    int erc = ho_step_end(j->r, NULL);
    if (rc == 0 && erc < 0)
        snprintf(why, len, "step end: %s", ho_runtime_last_error());
    return rc < 0 ? rc : erc;
}

START_TEST(carried_over)
{
    const unsigned n = 4;
    const uint64_t bytes = 64 << 10;
    job j;
    job_start(&j, "carry", n, bytes, true, 0);
    for (int s = 1; s <= 2; s++)
        rt_fw_step(&j.f, s == 1, NULL);
    kill_and_restart();
    /* The first write of the next inputs re-stages the replay. */
    for (int s = 0; s < 3; s++)
        rt_fw_step(&j.f, 0, NULL);
    uint64_t copied = 0, lost = 0;
    ck_assert_uint_eq(ho_replay_restages(j.r, &copied, &lost), 1);
    ck_assert_uint_eq(ho_reconnects(j.c), 1);
    /* Every host copy was in DDR: the n inputs and the state. */
    ck_assert_uint_eq(copied, n + 1);
    ck_assert_uint_eq(lost, 0);
    ck_assert_uint_eq(j.f.bad_reads, 0);
    ck_assert_uint_gt(j.f.reads_checked, 0);
    job_done(&j);
}
END_TEST

START_TEST(copies_lost)
{
    const unsigned n = 8;
    const uint64_t bytes = 64 << 10;
    job j;
    job_start(&j, "lost", n, bytes, false, 2 * bytes);
    ho_step_info si;
    uint64_t flash = 0;
    for (int s = 1; s <= 3; s++) {
        rt_fw_step(&j.f, s == 1, &si);
        flash += si.flash_out_bytes;
    }
    ck_assert_uint_gt(flash, 0); /* copies did go to flash */
    /* The next inputs written: the daemon stages all but two to flash. */
    rt_fw_inputs(&j.f, 0);
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    kill_and_restart();
    char why[512] = "";
    double t0 = now_s();
    int rc = try_step(&j, 0, true, why, sizeof why);
    double dt = now_s() - t0;
    uint64_t copied = 0, lost = 0;
    ck_assert_uint_eq(ho_replay_restages(j.r, &copied, &lost), 1);
    fprintf(stderr, "restage lost: %llu carried over, %llu lost, step: "
            "%s (%.2f s)\n", (unsigned long long)copied,
            (unsigned long long)lost, rc ? why : "ok", dt);
    ck_assert_uint_eq(copied + lost, n);
    ck_assert_uint_ge(lost, 1);
    ck_assert_msg(rc == HO_E_DISCONNECTED && strstr(why, "was lost with "
                  "the daemon that went away"), "%s: %s", ho_err_name(rc),
                  why);
    ck_assert_msg(dt < 5.0, "the step took %.2f s", dt);
    ck_assert_uint_eq(j.f.bad_reads, 0);
    /* Inputs written again: the replay runs on. */
    for (int s = 0; s < 2; s++)
        rt_fw_step(&j.f, 0, NULL);
    ck_assert_uint_eq(j.f.bad_reads, 0);
    ck_assert_uint_eq(ho_replay_restages(j.r, NULL, NULL), 1);
    job_done(&j);
}
END_TEST

/* ------------------------------------------------------------ under load */

enum { CLIENTS = 4, AFTER = 8 };

typedef struct worker {
    job j;
    pthread_t th;
    atomic_int steps;      /* steps that succeeded */
    atomic_int killed;     /* set by the main thread once restarted */
    int failed, after;     /* steps that failed; good ones after restart */
    atomic_int done;
    char why[512];
} worker;

static void *work(void *p)
{
    worker *w = p;
    char why[512];
    int first = 1;
    /* Bounded: at most AFTER + 40 steps after the restart. */
    for (int tries = 0; w->after < AFTER && tries < 400; tries++) {
        bool killed = atomic_load(&w->killed);
        int rc = try_step(&w->j, first, false, why, sizeof why);
        if (rc == 0) {
            first = 0;
            atomic_fetch_add(&w->steps, 1);
            if (killed)
                w->after++;
        } else {
            w->failed++;
            snprintf(w->why, sizeof w->why, "%s: %.400s", ho_err_name(rc),
                     why);
            ck_assert_msg(w->failed <= 40, "too many failed steps: %s",
                          w->why);
        }
    }
    atomic_store(&w->done, 1);
    return NULL;
}

START_TEST(under_load)
{
    const unsigned n = 6;
    const uint64_t bytes = 64 << 10;
    static worker w[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        char name[32];
        snprintf(name, sizeof name, "load%d", i);
        job_start(&w[i].j, name, n, bytes, false, n / 2 * bytes);
    }
    for (int i = 0; i < CLIENTS; i++)
        ck_assert_int_eq(pthread_create(&w[i].th, NULL, work, &w[i]), 0);
    /* Every client is stepping: kill the daemon under them. */
    double t0 = now_s();
    for (int i = 0; i < CLIENTS; i++)
        while (atomic_load(&w[i].steps) < 3) {
            ck_assert_msg(now_s() - t0 < 30, "client %d: %d steps", i,
                          atomic_load(&w[i].steps));
            usleep(1000);
        }
    kill_and_restart();
    for (int i = 0; i < CLIENTS; i++)
        atomic_store(&w[i].killed, 1);
    for (int i = 0; i < CLIENTS; i++) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 60;
        int rc = pthread_timedjoin_np(w[i].th, NULL, &dl);
        ck_assert_msg(rc == 0, "client %d hangs (%d steps)", i,
                      atomic_load(&w[i].steps));
    }
    for (int i = 0; i < CLIENTS; i++) {
        uint64_t copied = 0, lost = 0;
        unsigned rs = ho_replay_restages(w[i].j.r, &copied, &lost);
        fprintf(stderr, "client %d: %d steps, %d failed (%s), restaged %u "
                "(%llu carried over, %llu lost), %u reconnects\n", i,
                atomic_load(&w[i].steps), w[i].failed, w[i].why, rs,
                (unsigned long long)copied, (unsigned long long)lost,
                ho_reconnects(w[i].j.c));
        ck_assert_int_eq(w[i].after, AFTER);
        ck_assert_uint_eq(rs, 1);
        ck_assert_uint_eq(ho_reconnects(w[i].j.c), 1);
        ck_assert_uint_eq(w[i].j.f.bad_reads, 0);
        job_done(&w[i].j);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_restage");
    TCase *tc = tcase_create("restage");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, rt_valgrind() ? 900 : 120);
    tcase_add_test(tc, carried_over);
    tcase_add_test(tc, copies_lost);
    tcase_add_test(tc, under_load);
    suite_add_tcase(s, tc);
    return ho_check_run(s, true);
}
