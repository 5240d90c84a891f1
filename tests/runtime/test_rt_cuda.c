/*
 * tests/runtime/test_rt_cuda.c - the "cuda" backend.  Where no GPU (or no
 * libcudart) is present the test checks that the backend says so
 * (HO_E_UNSUPPORTED with the reason), prints the reason and exits with 77,
 * which CTest reports as "skipped" (SKIP_RETURN_CODE), never as passed.
 * With a GPU: device memory, synchronous copies, the capacity limit and a
 * content-checked replay (through ho_device_read/write only) whose copy
 * log (timing events) must match the schedule and the step's figures.
 */
#include "tests/runtime/rt_copylog.h"
#include "tests/runtime/rt_fw.h"

#define SKIP 77

START_TEST(cuda_device)
{
    ho_device *d = NULL;
    ck_assert_int_eq(ho_device_open("cuda", 0, 64 << 20, &d), 0);
    ck_assert_str_eq(ho_device_backend(d), "cuda");
    void *a = NULL, *b = NULL;
    ck_assert_int_eq(ho_device_alloc(d, 32 << 20, &a), 0);
    ck_assert_int_eq(ho_device_alloc(d, 32 << 20, &b), 0);
    ck_assert_int_eq(ho_device_alloc(d, 1, &b), HO_E_DEVICE);
    uint8_t *h = malloc(1 << 20), *g = malloc(1 << 20);
    rt_fill(h, 1 << 20, 5);
    ck_assert_int_eq(ho_device_write(d, a, h, 1 << 20), 0);
    ck_assert_int_eq(ho_device_read(d, g, a, 1 << 20), 0);
    ck_assert(rt_check(g, 1 << 20, 5));
    free(h);
    free(g);
    ck_assert_int_eq(ho_device_free(d, a), 0);
    ho_device_close(d);
}
END_TEST

START_TEST(cuda_replay)
{
    plan_trace *pt = rt_gen(3, 120, 40, 4096, 1 << 20);
    uint64_t budget = rt_budget(pt);
    char dir[512], path[600];
    rt_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.json", dir);
    rt_write_trace(pt, path);
    ho_trace *t = NULL;
    ck_assert_int_eq(ho_trace_load(path, &t), 0);
    plan_schedule *s = NULL;
    plan_result res;
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(plan_make(pt, budget, NULL, &s, &res), 0);
    snprintf(path, sizeof path, "%s/s.json", dir);
    rt_write_schedule(s, path);
    ho_plan *p = NULL;
    ck_assert_int_eq(ho_plan_load(t, path, &p), 0);
    ho_device *d = NULL;
    ck_assert_int_eq(ho_device_open("cuda", 0, budget, &d), 0);
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, d, t, p, NULL, &r), 0);
    size_t copies = rt_sched_copies(pt, s, NULL);
    ho_copy_record *rec = calloc(copies + 1, sizeof(*rec));
    ck_assert_ptr_nonnull(rec);
    rt_fw f;
    rt_fw_init(&f, r, d, pt);
    for (int st = 1; st <= 4; st++) {
        /* Steps 2 and 3 with the copy log. */
        if (st == 2)
            ck_assert_int_eq(ho_replay_record_copies(r, (uint32_t)copies),
                             0);
        if (st == 4)
            ck_assert_int_eq(ho_replay_record_copies(r, 0), 0);
        ho_step_info info;
        rt_fw_step(&f, st == 1, &info);
        ck_assert_uint_le(info.peak_device_bytes, budget);
        ck_assert_uint_eq(info.h2d_bytes, s->predicted.h2d_bytes);
        ck_assert_uint_eq(info.d2h_bytes, s->predicted.d2h_bytes);
        size_t n = 0;
        if (st == 2 || st == 3) {
            ck_assert_int_eq(ho_step_copies(r, rec, copies, &n), 0);
            rt_check_copies(pt, s, rec, n, &info, pt->link.duplex);
        } else {
            ck_assert_int_lt(ho_step_copies(r, rec, copies, &n), 0);
        }
    }
    free(rec);
    ck_assert_uint_eq(f.bad_reads, 0);
    rt_fw_done(&f);
    ho_replay_free(r);
    ho_device_close(d);
    ho_plan_free(p);
    plan_schedule_free(s);
    ho_trace_free(t);
    plan_trace_free(pt);
    rt_rmdir(dir);
}
END_TEST

int main(void)
{
    const char *why = ho_device_unavailable_reason("cuda");
    if (why) {
        /* The backend must refuse to open, with that reason. */
        ho_device *d = NULL;
        int rc = ho_device_open("cuda", 0, 1 << 20, &d);
        if (rc != HO_E_UNSUPPORTED || d ||
            !strstr(ho_runtime_last_error(), why)) {
            fprintf(stderr, "FAIL: cuda unavailable (%s) but open gave %s: "
                    "%s\n", why, ho_err_name(rc), ho_runtime_last_error());
            return 1;
        }
        printf("SKIPPED: the cuda backend cannot run here: %s\n", why);
        return SKIP;
    }
    Suite *s = suite_create("runtime_cuda");
    TCase *tc = tcase_create("cuda");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cuda_device);
    tcase_add_test(tc, cuda_replay);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
