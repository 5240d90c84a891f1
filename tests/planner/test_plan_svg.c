/* tests/planner/test_plan_svg.c - planner/viz (plan_svg.h): sizes,
 * escaping, bounds, wait markers, the judges' helpers, the step chart. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/node/node.h"
#include "planner/plan.h"
#include "planner/viz/plan_svg.h"

/* The picture as a string (owned by the caller). */
static char *render(plan_svg *f)
{
    FILE *t = tmpfile();
    long n;
    char *s;
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(plan_svg_write(f, t), 0);
    n = ftell(t);
    ck_assert_int_gt(n, 0);
    rewind(t);
    s = calloc(1, (size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, t), (size_t)n);
    fclose(t);
    return s;
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* width/height as declared by the <svg> element */
static void declared(const char *s, int *w, int *h)
{
    const char *p = strstr(s, "<svg ");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sscanf(strstr(p, "width=") + 7, "%d", w), 1);
    ck_assert_int_eq(sscanf(strstr(p, "height=") + 8, "%d", h), 1);
}

START_TEST(test_empty_and_escaped)
{
    plan_svg *f = plan_svg_new("a <b> & \"c\"", "sub", 0, 0);
    int w, h, dw, dh;
    char *s;
    ck_assert_ptr_nonnull(f);
    plan_svg_size(f, &w, &h);
    ck_assert_int_eq(w, PLAN_SVG_WIDTH);
    ck_assert_int_eq(h, PLAN_SVG_HEAD + PLAN_SVG_FOOT);
    s = render(f);
    declared(s, &dw, &dh);
    ck_assert_int_eq(dw, w);
    ck_assert_int_eq(dh, h);
    ck_assert_ptr_nonnull(strstr(s, "a &lt;b&gt; &amp; &quot;c&quot;"));
    ck_assert_ptr_null(strstr(s, "<b>"));
    ck_assert_ptr_nonnull(strstr(s, "</svg>\n"));
    free(s);
    ck_assert_ptr_null(plan_svg_free(f));
    ck_assert_ptr_null(plan_svg_free(NULL));
}
END_TEST

START_TEST(test_sizes_and_limits)
{
    plan_svg *f = plan_svg_new("t", "s", 0, 1000);
    int w, h, g = 0;
    char *s;
    for (uint32_t i = 0; i < PLAN_SVG_MAX_GROUPS; i++)
        ck_assert_int_eq(plan_svg_group(f, "c", 100, 0), (int)i);
    g = plan_svg_group(f, "one too many", 100, 0);
    ck_assert_int_eq(g, -E2BIG);
    /* events for a group left out are ignored */
    plan_svg_mem(f, g, 0, 10, 5);
    plan_svg_copy(f, g, PLAN_SVG_H2D, 0, 1, 2, 3);
    plan_svg_wait(f, g, 1, 2);
    ck_assert_int_eq(plan_svg_link(f, "dup", 1e3, 1e3, 1), 0);
    ck_assert_int_eq(plan_svg_link(f, "one way", 1e3, 1e3, 0), 1);
    plan_svg_size(f, &w, &h);
    ck_assert_int_eq(h, PLAN_SVG_HEAD + PLAN_SVG_FOOT +
                            (int)PLAN_SVG_MAX_GROUPS *
                                (PLAN_SVG_GROUP_HEAD + PLAN_SVG_MEM_H_SMALL +
                                 PLAN_SVG_GROUP_LANES_H + PLAN_SVG_GROUP_GAP) +
                            PLAN_SVG_LINK_HEAD + 3 * PLAN_SVG_LINK_ROW_H);
    s = render(f);
    ck_assert_ptr_nonnull(strstr(s, "1 more clients and 0 more links not "
                                    "drawn"));
    ck_assert_uint_eq(count(s, "class=\"link\""), 3);
    free(s);
    plan_svg_free(f);
}
END_TEST

START_TEST(test_bounded)
{
    /* a million ops, copies, stalls and waits draw a bounded file */
    plan_svg *f = plan_svg_new("big", "", 0, 1e6);
    int g = plan_svg_group(f, "c", 1 << 20, 2 << 20);
    char *s;
    unsigned seed = 7;
    for (uint32_t i = 0; i < 1000000; i++) {
        double t = i;
        seed = seed * 1103515245u + 12345u;
        plan_svg_op(f, g, t, t + 0.5);
        plan_svg_mem(f, g, 0, t, (seed >> 8) & 0xfffff);
        plan_svg_copy(f, g, (plan_svg_lane)(i % PLAN_SVG_LANE__COUNT), i & 1,
                      t, t + (seed % 50), 4096);
        if (i % 3 == 0)
            plan_svg_stall(f, g, PLAN_SVG_STALL, t + 0.5, t + 1);
        if (i % 5 == 0)
            plan_svg_wait(f, g, t + 0.5, t + 0.7);
    }
    s = render(f);
    ck_assert_uint_lt(strlen(s), 1500000);
    /* the waits of neighbouring columns share a marker: one per 7 px */
    ck_assert_uint_le(count(s, "class=\"wait\""), PLAN_SVG_COLS / 7 + 1);
    ck_assert_uint_ge(count(s, "class=\"wait\""), PLAN_SVG_COLS / 8);
    free(s);
    plan_svg_free(f);
}
END_TEST

START_TEST(test_wait_markers)
{
    plan_svg *f = plan_svg_new("w", "", 0, 1e6);
    int g = plan_svg_group(f, "c", 100, 0);
    char *s;
    /* three waits far apart, one of them instantaneous: three markers of
     * PLAN_SVG_MARK_W px each, two bars */
    plan_svg_wait(f, g, 1e5, 1e5 + 1);
    plan_svg_wait(f, g, 5e5, 5e5);
    plan_svg_wait(f, g, 9e5, 9e5 + 3e4);
    s = render(f);
    ck_assert_uint_eq(count(s, "class=\"wait\""), 3);
    ck_assert_uint_eq(count(s, "class=\"wait-time\""), 2);
    {
        const char *p = strstr(s, "class=\"wait\" points=\"");
        double x0, y0, x1, y1, x2, y2, x3, y3;
        ck_assert_int_eq(sscanf(p + 21, "%lf,%lf %lf,%lf %lf,%lf %lf,%lf",
                                &x0, &y0, &x1, &y1, &x2, &y2, &x3, &y3), 8);
        ck_assert_double_eq_tol(x1 - x3, PLAN_SVG_MARK_W, 1e-6);
    }
    ck_assert_ptr_nonnull(strstr(s, "3 waits"));
    free(s);
    plan_svg_free(f);
}
END_TEST

/* s0 written by op 0, stored, waited for, freed; s1 written by op 1;
 * op 2 reads both after a prefetch of s0 (exposed). */
static plan_trace *wait_trace(plan_schedule **ret_s)
{
    plan_link link = {1.0, 1.0, 10.0, true};
    plan_trace *t = plan_trace_new("wait", &link);
    plan_storage st = {1, 8u << 20, PLAN_KIND_ACTIVATION, PLAN_INIT_NONE,
                       false, false, false};
    uint32_t a, b, rd[2];
    char err[256];
    ck_assert_int_eq(plan_trace_add_storage(t, &st, &a, err, sizeof err), 0);
    st.id = 2;
    ck_assert_int_eq(plan_trace_add_storage(t, &st, &b, err, sizeof err), 0);
    ck_assert_int_eq(plan_trace_add_op(t, "w0", 1000, NULL, 0, &a, 1, err,
                                       sizeof err), 0);
    ck_assert_int_eq(plan_trace_add_op(t, "w1", 1000, NULL, 0, &b, 1, err,
                                       sizeof err), 0);
    rd[0] = a;
    rd[1] = b;
    ck_assert_int_eq(plan_trace_add_op(t, "r", 1000, rd, 2, NULL, 0, err,
                                       sizeof err), 0);
    ck_assert_int_eq(plan_trace_finish(t, err, sizeof err), 0);
    plan_schedule *s = plan_schedule_new("by-hand", 16u << 20);
    ck_assert_int_eq(plan_schedule_push(s, t, 0, PLAN_AFTER, PLAN_ACT_STORE,
                                        a), 0);
    ck_assert_int_eq(plan_schedule_push(s, t, 0, PLAN_AFTER, PLAN_ACT_WAIT,
                                        a), 0);
    ck_assert_int_eq(plan_schedule_push(s, t, 0, PLAN_AFTER,
                                        PLAN_ACT_FREE_DEVICE, a), 0);
    ck_assert_int_eq(plan_schedule_push(s, t, 2, PLAN_BEFORE,
                                        PLAN_ACT_PREFETCH, a), 0);
    ck_assert_int_eq(plan_schedule_bind(s, t, err, sizeof err), 0);
    *ret_s = s;
    return t;
}

START_TEST(test_simulated)
{
    plan_schedule *s;
    plan_trace *t = wait_trace(&s);
    plan_metrics m, ref;
    plan_violation v;
    ck_assert_int_eq(plan_simulate(t, s, &ref, &v, NULL), 0);
    plan_svg *f = plan_svg_new("sim", "", 0, ref.step_time_us);
    int g = plan_svg_group(f, "c", s->budget_bytes, 0);
    ck_assert_int_eq(plan_svg_add_simulated(f, g, 0, t, s, &m), 0);
    ck_assert_double_eq(m.step_time_us, ref.step_time_us);
    ck_assert_uint_eq(m.h2d_bytes, ref.h2d_bytes);
    char *out = render(f);
    /* the wait after op 0 and the prefetch before op 2 both stall */
    ck_assert_uint_eq(count(out, "class=\"wait\""), 1);
    ck_assert_uint_ge(count(out, "class=\"stall\""), 2);
    ck_assert_ptr_nonnull(strstr(out, "1 waits"));
    free(out);
    plan_svg_free(f);
    /* the one-call form, to a FILE */
    FILE *tf = tmpfile();
    ck_assert_int_eq(plan_svg_plan_write(tf, t, s, NULL), 0);
    ck_assert_int_gt(ftell(tf), 1000);
    fclose(tf);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_node)
{
    plan_schedule *s;
    plan_trace *t = wait_trace(&s);
    plan_node *n = plan_node_new();
    plan_node_device d = {0, (char *)"npu0", NULL, 0, 1u << 30, 0, 1.0, 1.0, 10.0,
                          true};
    char err[256];
    ck_assert_int_eq(plan_node_add_link(n, "host", NULL, 1.5, 1.5, false,
                                        err, sizeof err), 0);
    d.parent_name = (char *)"host";
    ck_assert_int_eq(plan_node_add_device(n, &d, err, sizeof err), 0);
    d.id = 1;
    d.name = (char *)"npu1";
    ck_assert_int_eq(plan_node_add_device(n, &d, err, sizeof err), 0);
    ck_assert_int_eq(plan_node_finish(n, err, sizeof err), 0);
    plan_node_input in[2] = {
        {"a", t, s, 0, s->budget_bytes, 1.0, PLAN_NONE},
        {"b", t, s, 1, s->budget_bytes, 1.0, PLAN_NONE}};
    plan_node_result *res = NULL;
    plan_node_violation v;
    ck_assert_int_eq(plan_node_judge(n, in, 2, NULL, &res, &v), 0);
    double t0, t1;
    plan_svg_node_window(res, &t0, &t1);
    ck_assert_double_le(t0, res->clients[0].start_us);
    ck_assert_double_ge(t1, res->clients[1].end_us);
    plan_svg *f = plan_svg_new("node", "", t0, t1);
    ck_assert_int_eq(plan_svg_add_node(f, n, in, 2, NULL, res), 0);
    char *out = render(f);
    int w, h;
    declared(out, &w, &h);
    ck_assert_int_eq(h, PLAN_SVG_HEAD + PLAN_SVG_FOOT +
                            2 * (PLAN_SVG_GROUP_HEAD + PLAN_SVG_MEM_H_SMALL +
                                 PLAN_SVG_GROUP_LANES_H + PLAN_SVG_GROUP_GAP) +
                            PLAN_SVG_LINK_HEAD + PLAN_SVG_LINK_ROW_H);
    ck_assert_uint_eq(count(out, "class=\"group\""), 2);
    /* one shared row for the simplex link; both clients' copies cross it
     * at once, so it is full at times */
    ck_assert_uint_eq(count(out, "class=\"link\""), 1);
    ck_assert_ptr_nonnull(strstr(out, "host H2D+D2H"));
    ck_assert_ptr_nonnull(strstr(out, "peak 100%"));
    ck_assert_uint_eq(count(out, "class=\"wait\""), 2);
    free(out);
    plan_svg_free(f);
    plan_node_result_free(res);
    plan_node_free(n);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_steps_chart)
{
    enum { N = 500 };
    static double e0[N], s0[N], e1[N], s1[N];
    for (int k = 0; k < N; k++) {
        e0[k] = 1000 + k;
        s0[k] = k;
        e1[k] = 2000;
        s1[k] = 0;
    }
    const char *names[] = {"c0", "c<1>"};
    const double *ex[] = {e0, e1}, *st[] = {s0, s1};
    plan_svg_steps c = {"steps", "", 2, names, N, 2, ex, st};
    FILE *tf = tmpfile();
    ck_assert_int_eq(plan_svg_steps_write(&c, tf), 0);
    long n = ftell(tf);
    rewind(tf);
    char *s = calloc(1, (size_t)n + 1);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, tf), (size_t)n);
    fclose(tf);
    int w, h;
    declared(s, &w, &h);
    ck_assert_int_eq(w, PLAN_SVG_WIDTH);
    ck_assert_int_eq(h, PLAN_SVG_STEPS_H);
    /* 500 steps averaged into 200 bars per client; c1 never stalls */
    ck_assert_uint_eq(count(s, "class=\"step-exposed\""),
                      2 * PLAN_SVG_MAX_STEP_BARS);
    ck_assert_uint_eq(count(s, "class=\"step-stall\""),
                      PLAN_SVG_MAX_STEP_BARS);
    ck_assert_ptr_nonnull(strstr(s, "c&lt;1&gt;"));
    free(s);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {test_empty_and_escaped, test_sizes_and_limits,
                                  test_bounded, test_wait_markers,
                                  test_simulated, test_node, test_steps_chart};
    Suite *suite = suite_create("plan_svg");
    TCase *tc = tcase_create("plan_svg");
    SRunner *runner;
    int n_failed;

    tcase_set_timeout(tc, 120);
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++)
        tcase_add_test(tc, tests[i]);
    suite_add_tcase(suite, tc);
    runner = srunner_create(suite);
    srunner_run_all(runner, CK_NORMAL);
    n_failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return n_failed == 0 ? 0 : 1;
}
