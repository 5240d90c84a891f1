/*
 * tests/runtime/test_rt_plan.c - traces and plans through the public API
 * (no daemon): building, finishing, saving and loading traces; loading,
 * describing and saving schedules.  ho_plan_request is exercised against
 * the real daemon in test_rt_daemon.c.
 */
#include "tests/runtime/rt_util.h"

static char dir[512];

static void setup(void)
{
    rt_tmpdir(dir, sizeof dir);
}

static void teardown(void)
{
    rt_rmdir(dir);
}

static const ho_link link1 = {1.0, 1.0, 0.0, 1};

/* Three storages, four ops: a (param, device, retained), b (activation),
 * c (host, retained). */
static ho_trace *small_trace(void)
{
    ho_trace *t = NULL;
    ck_assert_int_eq(ho_trace_new("small", &link1, &t), 0);
    ck_assert_int_eq(ho_trace_add_storage(t, 10, 4096, HO_KIND_PARAM,
                                          HO_INITIAL_DEVICE,
                                          HO_STORAGE_RETAINED), 0);
    ck_assert_int_eq(ho_trace_add_storage(t, 11, 8192, HO_KIND_ACTIVATION,
                                          HO_INITIAL_NONE, 0), 0);
    ck_assert_int_eq(ho_trace_add_storage(t, 12, 4096, HO_KIND_OPTIMIZER,
                                          HO_INITIAL_HOST,
                                          HO_STORAGE_RETAINED), 0);
    uint64_t r0[] = {10}, w0[] = {11};
    ck_assert_int_eq(ho_trace_add_op(t, "fwd", 10.0, r0, 1, w0, 1), 0);
    ck_assert_int_eq(ho_trace_add_op(t, "mid", 50.0, NULL, 0, NULL, 0), 0);
    uint64_t r2[] = {11, 10};
    ck_assert_int_eq(ho_trace_add_op(t, "bwd", 10.0, r2, 2, NULL, 0), 0);
    uint64_t rw3[] = {12};
    ck_assert_int_eq(ho_trace_add_op(t, "opt", 5.0, rw3, 1, rw3, 1), 0);
    return t;
}

START_TEST(trace_build_save_load)
{
    ho_trace *t = small_trace();
    ck_assert_uint_eq(ho_trace_ops(t), 4);

    /* Unknown ids and bad arguments are refused with a sentence. */
    uint64_t bad[] = {99};
    ck_assert_int_eq(ho_trace_add_op(t, "x", 1.0, bad, 1, NULL, 0),
                     HO_E_BAD_TRACE);
    ck_assert_ptr_nonnull(strstr(ho_runtime_last_error(), "99"));
    ck_assert_int_eq(ho_trace_add_op(t, "x", -1.0, NULL, 0, NULL, 0),
                     -EINVAL);
    ck_assert_int_eq(ho_trace_add_storage(t, 10, 1, HO_KIND_PARAM,
                                          HO_INITIAL_NONE, 0),
                     HO_E_BAD_TRACE);
    ck_assert_int_eq(ho_trace_add_storage(t, 13, 0, HO_KIND_PARAM,
                                          HO_INITIAL_NONE, 0),
                     HO_E_INVALID_SIZE);
    ck_assert_int_eq(ho_trace_add_storage(t, 13, 1, HO_KIND_PARAM,
                                          HO_INITIAL_NONE, 8), -EINVAL);
    ck_assert_uint_eq(ho_trace_ops(t), 4);

    char path[600];
    snprintf(path, sizeof path, "%s/t.json", dir);
    ck_assert_int_eq(ho_trace_save(t, path), 0);
    /* Saved means finished: no more additions. */
    ck_assert_int_eq(ho_trace_add_op(t, "late", 1.0, NULL, 0, NULL, 0),
                     HO_E_STATE);

    ho_trace *u = NULL;
    ck_assert_int_eq(ho_trace_load(path, &u), 0);
    ck_assert_uint_eq(ho_trace_ops(u), 4);
    ho_trace_free(u);

    ck_assert_int_eq(ho_trace_load("/nonexistent/t.json", &u), -ENOENT);
    ck_assert_ptr_null(ho_trace_free(t));
    ck_assert_ptr_null(ho_trace_free(NULL));
}
END_TEST

START_TEST(trace_invalid)
{
    ho_trace *t = NULL;
    ho_link bad = {0.0, 1.0, 0.0, 1};
    ck_assert_int_eq(ho_trace_new("x", &bad, &t), -EINVAL);
    ck_assert_ptr_null(t);
    /* A read of an `initial: none` storage before its first write is a
     * bad trace, reported when the trace is finished (saved). */
    ck_assert_int_eq(ho_trace_new(NULL, NULL, &t), 0);
    ck_assert_int_eq(ho_trace_add_storage(t, 1, 64, HO_KIND_ACTIVATION,
                                          HO_INITIAL_NONE, 0), 0);
    uint64_t r[] = {1};
    ck_assert_int_eq(ho_trace_add_op(t, "reads-too-early", 1.0, r, 1, NULL,
                                     0), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/bad.json", dir);
    ck_assert_int_eq(ho_trace_save(t, path), HO_E_BAD_TRACE);
    ck_assert_int_eq(access(path, F_OK), -1);
    ho_trace_free(t);

    /* Garbage files. */
    FILE *f = fopen(path, "w");
    fputs("{\"format\": \"nope\"}", f);
    fclose(f);
    ck_assert_int_eq(ho_trace_load(path, &t), HO_E_BAD_TRACE);
    ck_assert_str_ne(ho_runtime_last_error(), "");
}
END_TEST

START_TEST(plan_load_info_save)
{
    ho_trace *t = small_trace();
    char tpath[600], spath[600], s2path[600];
    snprintf(tpath, sizeof tpath, "%s/t.json", dir);
    snprintf(spath, sizeof spath, "%s/s.json", dir);
    snprintf(s2path, sizeof s2path, "%s/s2.json", dir);
    ck_assert_int_eq(ho_trace_save(t, tpath), 0);

    /* Plan it with the planner library for 12 KiB: a (4K) + b (8K) do not
     * fit together with c (4K) at op 3 unless something moves. */
    plan_trace *pt = NULL;
    char err[256];
    ck_assert_int_eq(plan_trace_read_json(tpath, &pt, err, sizeof err), 0);
    plan_schedule *s = NULL;
    plan_result res;
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(plan_make(pt, 12288, NULL, &s, &res), 0);
    rt_write_schedule(s, spath);

    ho_plan *p = NULL;
    ck_assert_int_eq(ho_plan_load(t, spath, &p), 0);
    ho_plan_info info;
    ho_plan_get_info(p, &info);
    ck_assert_str_eq(info.planner, "hoplan");
    ck_assert_uint_eq(info.budget_bytes, 12288);
    ck_assert_uint_eq(info.actions, s->n_actions);
    ck_assert_uint_le(info.peak_device_bytes, 12288);
    ck_assert_uint_eq(info.h2d_bytes, s->predicted.h2d_bytes);
    ck_assert_uint_eq(info.d2h_bytes, s->predicted.d2h_bytes);
    ck_assert_uint_eq(info.no_offload_peak, res.no_offload_peak);
    ck_assert_int_eq(info.cached, 0);

    /* Save and load again: same figures. */
    ck_assert_int_eq(ho_plan_save(p, s2path), 0);
    ho_plan *q = NULL;
    ck_assert_int_eq(ho_plan_load(t, s2path, &q), 0);
    ho_plan_info i2;
    ho_plan_get_info(q, &i2);
    ck_assert_uint_eq(i2.actions, info.actions);
    ck_assert_uint_eq(i2.h2d_bytes, info.h2d_bytes);
    ck_assert_double_eq_tol(i2.step_time_us, info.step_time_us, 1e-6);
    ho_plan_free(q);

    /* A schedule naming a storage the trace lacks is refused. */
    plan_schedule *bad = plan_schedule_new("hand", 12288);
    ck_assert_int_eq(plan_schedule_push_id(bad, 0, PLAN_AFTER,
                                           PLAN_ACT_STORE, 77), 0);
    rt_write_schedule(bad, s2path);
    ck_assert_int_eq(ho_plan_load(t, s2path, &q), HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(ho_runtime_last_error(), "77"));
    plan_schedule_free(bad);

    ck_assert_ptr_null(ho_plan_free(p));
    ck_assert_ptr_null(ho_plan_free(NULL));
    plan_schedule_free(s);
    plan_trace_free(pt);
    ho_trace_free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_plan");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, trace_build_save_load);
    tcase_add_test(tc, trace_invalid);
    tcase_add_test(tc, plan_load_info_save);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
