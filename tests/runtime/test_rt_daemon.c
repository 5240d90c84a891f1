/*
 * tests/runtime/test_rt_daemon.c - the runtime against the real daemon
 * (tests/harness.h) through the shared library: PlanRequest (plans,
 * cache, infeasible budgets), replays with host copies in the session's
 * arena and the shared control region, step statistics.
 */
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

static ho_client *client(uint64_t budget)
{
    ho_client *c = NULL;
    ck_assert_int_eq(ho_connect(ho_harness_socket(h), "rt-test", &c), 0);
    ck_assert_int_eq(ho_register(c, NULL, 0, budget), 0);
    return c;
}

/* A generated trace written to dir and loaded through the API; the
 * planner's copy is returned in *ret_pt when asked. */
static ho_trace *gen_trace(uint64_t seed, plan_trace **ret_pt)
{
    int vg = rt_valgrind();
    plan_trace *pt = rt_gen(seed, vg ? 40 : 120, vg ? 16 : 40, 4096,
                            vg ? 16384 : 65536);
    char path[600];
    snprintf(path, sizeof path, "%s/trace-%llu.json", dir,
             (unsigned long long)seed);
    rt_write_trace(pt, path);
    ho_trace *t = NULL;
    ck_assert_int_eq(ho_trace_load(path, &t), 0);
    if (ret_pt)
        *ret_pt = pt;
    else
        plan_trace_free(pt);
    return t;
}

START_TEST(plan_request)
{
    plan_trace *pt = NULL;
    ho_trace *t = gen_trace(1, &pt);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(pt, &sm), 0);
    uint64_t budget = rt_budget(pt);

    ho_client *c = client(budget);
    ho_plan *p = NULL;
    ck_assert_int_eq(ho_plan_request(c, t, 0, NULL, &p), 0);
    ho_plan_info info;
    ho_plan_get_info(p, &info);
    ck_assert_str_eq(info.planner, "hoplan");
    ck_assert_uint_eq(info.budget_bytes, budget);
    ck_assert_uint_le(info.peak_device_bytes, budget);
    ck_assert_uint_eq(info.no_offload_peak, sm.no_offload_peak);
    ck_assert_uint_gt(info.h2d_bytes + info.d2h_bytes, 0);
    ck_assert_int_eq(info.cached, 0);

    /* The same request again comes from the cache, same schedule. */
    ho_plan *q = NULL;
    ck_assert_int_eq(ho_plan_request(c, t, 0, NULL, &q), 0);
    ho_plan_info i2;
    ho_plan_get_info(q, &i2);
    ck_assert_int_eq(i2.cached, 1);
    ck_assert_uint_eq(i2.actions, info.actions);
    ho_plan_free(q);

    /* Another planner by name. */
    ck_assert_int_eq(ho_plan_request(c, t, sm.no_offload_peak, "none", &q),
                     0);
    ho_plan_get_info(q, &i2);
    ck_assert_str_eq(i2.planner, "none");
    ho_plan_free(q);

    /* An infeasible budget names the smallest feasible one. */
    ck_assert_int_eq(ho_plan_request(c, t, 1024, NULL, &q),
                     HO_E_INFEASIBLE);
    char why[512];
    ho_last_error(c, why, sizeof why);
    ck_assert_ptr_nonnull(strstr(why, "smallest feasible budget"));
    ck_assert_ptr_nonnull(strstr(ho_runtime_last_error(),
                                 "smallest feasible budget"));

    /* The plan saves as a schedule file that loads back. */
    char spath[600];
    snprintf(spath, sizeof spath, "%s/s.json", dir);
    ck_assert_int_eq(ho_plan_save(p, spath), 0);
    ck_assert_int_eq(ho_plan_load(t, spath, &q), 0);
    ho_plan_get_info(q, &i2);
    ck_assert_uint_eq(i2.actions, info.actions);
    ck_assert_uint_eq(i2.h2d_bytes, info.h2d_bytes);
    ho_plan_free(q);

    ho_plan_free(p);
    ho_close(c);
    ho_trace_free(t);
    plan_trace_free(pt);
}
END_TEST

/* A replay installed with the daemon: host copies in the session's
 * arena, the control region shared, content checked over several steps. */
START_TEST(replay_with_daemon)
{
    plan_trace *pt = NULL;
    ho_trace *t = gen_trace(7, &pt);
    uint64_t budget = rt_budget(pt);
    ho_client *c = client(budget);
    ho_plan *p = NULL;
    ck_assert_int_eq(ho_plan_request(c, t, 0, NULL, &p), 0);
    ho_plan_info info;
    ho_plan_get_info(p, &info);
    ck_assert_uint_gt(info.h2d_bytes + info.d2h_bytes, 0);

    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, budget, &dev), 0);
    ho_replay *r = NULL;
    int rc = ho_replay_new(c, dev, t, p, NULL, &r);
    char why[512];
    ck_assert_msg(rc == 0, "replay_new: %s (%s)", ho_err_name(rc),
                  ho_last_error(c, why, sizeof why));

    /* The host copies are extents of this session. */
    ho_usage u;
    ck_assert_int_eq(ho_stats(c, NULL, 0, NULL, &u), 0);
    ck_assert_uint_gt(u.ddr_bytes, 0);
    ck_assert_uint_gt(u.extents, 0);

    rt_fw f;
    rt_fw_init(&f, r, dev, pt);
    unsigned steps = rt_valgrind() ? 2 : 3;
    for (unsigned st = 1; st <= steps; st++) {
        ho_step_info si;
        rt_fw_step(&f, st == 1, &si);
        ck_assert_uint_eq(si.h2d_bytes, info.h2d_bytes);
        ck_assert_uint_eq(si.d2h_bytes, info.d2h_bytes);
        ck_assert_uint_le(si.peak_device_bytes, budget);
        ck_assert_uint_eq(si.flash_in_bytes, 0);
        ck_assert_uint_eq(si.flash_out_bytes, 0);
        ck_assert_uint_gt(si.ddr_bytes, 0);
        ck_assert_uint_eq(si.flash_bytes, 0);
    }
    ck_assert_uint_eq(f.bad_reads, 0);
    rt_fw_done(&f);
    ho_replay_free(r);
    ck_assert_uint_eq(ho_device_used(dev), 0);
    ho_device_close(dev);

    /* The plan saved and loaded again is the session's plan: the daemon
     * stages it again (replacing the previous host copies). */
    char spath[600];
    snprintf(spath, sizeof spath, "%s/s.json", dir);
    ck_assert_int_eq(ho_plan_save(p, spath), 0);
    ho_plan *q = NULL;
    ck_assert_int_eq(ho_plan_load(t, spath, &q), 0);
    ck_assert_int_eq(ho_device_open("host", 0, budget, &dev), 0);
    ck_assert_int_eq(ho_replay_new(c, dev, t, q, NULL, &r), 0);
    ho_replay_free(r);
    ho_plan_free(q);

    /* Another schedule (here: another planner's name) is not the
     * session's plan: the daemon refuses to stage it; a local replay (no
     * client) takes it. */
    plan_schedule *ps = NULL;
    char err[256];
    ck_assert_int_eq(plan_schedule_read_json(spath, &ps, err, sizeof err), 0);
    snprintf(ps->planner, sizeof ps->planner, "hand");
    rt_write_schedule(ps, spath);
    plan_schedule_free(ps);
    ck_assert_int_eq(ho_plan_load(t, spath, &q), 0);
    ck_assert_int_eq(ho_replay_new(c, dev, t, q, NULL, &r), HO_E_NO_PLAN);
    ck_assert_ptr_nonnull(strstr(ho_runtime_last_error(), "plan"));
    ck_assert_int_eq(ho_replay_new(NULL, dev, t, q, NULL, &r), 0);
    ho_replay_free(r);
    ck_assert_uint_eq(ho_device_used(dev), 0);
    ho_device_close(dev);
    ho_plan_free(q);

    ho_plan_free(p);
    ho_close(c);
    ho_trace_free(t);
    plan_trace_free(pt);
}
END_TEST

/* Host copies beyond the DDR limit: the daemon stages them to flash and
 * brings them back when the client needs them (urgent + futex on the
 * control region when it is late); the data survives the round trips.
 * The host-resident storages are inputs read once per step, one after the
 * other; an accumulator on device is written by every op. */
static ho_trace *staged_trace(unsigned n, uint64_t bytes, plan_trace **ret_pt)
{
    return rt_staged_trace(dir, n, bytes, false, ret_pt);
}

/* Plan t on c's session, replay `steps` steps staged to flash (every read
 * verified, data coming back from flash), free it all. */
static void staged_replay(ho_client *c, ho_trace *t, const plan_trace *pt,
                          unsigned n, uint64_t bytes, unsigned steps)
{
    const uint64_t budget = 2 * bytes + 4096;
    ho_plan *p = NULL;
    ck_assert_int_eq(ho_plan_request(c, t, budget, NULL, &p), 0);
    ho_plan_info info;
    ho_plan_get_info(p, &info);
    ck_assert_uint_eq(info.h2d_bytes, n * bytes);
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, budget, &dev), 0);
    ho_replay_opts ro = {.ddr_limit = n / 2 * bytes};
    ho_replay *r = NULL;
    int rc = ho_replay_new(c, dev, t, p, &ro, &r);
    char why[512];
    ck_assert_msg(rc == 0, "replay_new: %s (%s)", ho_err_name(rc),
                  ho_last_error(c, why, sizeof why));
    rt_fw f;
    rt_fw_init(&f, r, dev, pt);
    uint64_t flash_in = 0;
    for (unsigned st = 1; st <= steps; st++) {
        ho_step_info si;
        rt_fw_step(&f, st == 1, &si);
        ck_assert_uint_eq(si.h2d_bytes, n * bytes);
        flash_in += si.flash_in_bytes;
    }
    ck_assert_uint_eq(f.bad_reads, 0);
    if (steps > 1)
        ck_assert_uint_gt(flash_in, 0);
    rt_fw_done(&f);
    ho_replay_free(r);
    ho_device_close(dev);
    ho_plan_free(p);
}

START_TEST(replay_staged_to_flash)
{
    const unsigned n = 8;
    const uint64_t bytes = 64 << 10;
    plan_trace *pt = NULL;
    ho_trace *t = staged_trace(n, bytes, &pt);
    ho_client *c = client(2 * bytes + 4096);
    staged_replay(c, t, pt, n, bytes, 3);
    ho_close(c);
    ho_trace_free(t);
    plan_trace_free(pt);
}
END_TEST

/* With the library's reconnect on, a daemon restarted under a replay: the
 * client reconnects and registers again on its next call, and the plan
 * and replay made anew on the new session run (ho_set_reconnect). */
START_TEST(replay_again_after_reconnect)
{
    const unsigned n = 8;
    const uint64_t bytes = 64 << 10;
    plan_trace *pt = NULL;
    ho_trace *t = staged_trace(n, bytes, &pt);
    ho_client *c = client(2 * bytes + 4096);
    ho_set_reconnect(c, 5, 400);
    staged_replay(c, t, pt, n, bytes, 2);
    char err[512];
    ck_assert_int_eq(ho_harness_kill9(h), 0);
    ck_assert_msg(ho_harness_restart(h, err, sizeof err) == 0, "%s", err);
    ho_tier_stats ts[8];
    size_t nt = 0;
    ck_assert_int_eq(ho_stats(c, ts, 8, &nt, NULL), 0);
    ck_assert_uint_eq(ho_reconnects(c), 1);
    ck_assert_uint_eq(ho_hbm_granted(c), 2 * bytes + 4096);
    staged_replay(c, t, pt, n, bytes, 3);
    ho_close(c);
    ho_trace_free(t);
    plan_trace_free(pt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_daemon");
    TCase *tc = tcase_create("daemon");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, rt_valgrind() ? 600 : 60);
    tcase_add_test(tc, plan_request);
    tcase_add_test(tc, replay_with_daemon);
    tcase_add_test(tc, replay_staged_to_flash);
    tcase_add_test(tc, replay_again_after_reconnect);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
