/*
 * tests/planner/test_node_format.c - `hyperoffload-node` and
 * `hyperoffload-workload` version 1 (NODE.md §1, §2 and the arbiter's
 * fields of §4): round trips, strict validation with messages naming the
 * place, paths relative to the workload file, loading a workload for the
 * judge.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "tests/planner/node_test_util.h"

static const char node_doc[] =
    "{\"format\": \"hyperoffload-node\", \"version\": 1,\n"
    " \"links\": [\n"
    "  {\"name\": \"host\", \"h2d_gbps\": 64.0, \"d2h_gbps\": 64.0,"
    " \"duplex\": true},\n"
    "  {\"name\": \"sw0\", \"parent\": \"host\", \"h2d_gbps\": 32.0,"
    " \"d2h_gbps\": 32.0, \"duplex\": true},\n"
    "  {\"name\": \"sw1\", \"parent\": \"host\", \"h2d_gbps\": 0.1,"
    " \"d2h_gbps\": 3.3, \"duplex\": false}],\n"
    " \"devices\": [\n"
    "  {\"id\": 0, \"name\": \"npu0\", \"hbm_bytes\": 68719476736,"
    " \"reserve_bytes\": 0, \"h2d_gbps\": 28.0, \"d2h_gbps\": 28.0,"
    " \"latency_us\": 15.0, \"duplex\": true, \"parent\": \"sw0\"},\n"
    "  {\"id\": 7, \"name\": \"npu7\", \"hbm_bytes\": 1000,"
    " \"reserve_bytes\": 10, \"h2d_gbps\": 1, \"d2h_gbps\": 2,"
    " \"duplex\": false, \"parent\": \"sw1\"}],\n"
    " \"ddr_bytes\": 1099511627776,\n"
    " \"flash\": {\"bytes\": 8796093022208, \"read_gbps\": 6.0,"
    " \"write_gbps\": 4.0}}\n";

static char *node_text(const plan_node *n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(plan_node_write_json(n, f), 0);
    fclose(f);
    return buf;
}

static char *workload_text(const plan_workload *w)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(plan_workload_write_json(w, f), 0);
    fclose(f);
    return buf;
}

START_TEST(test_node_round_trip)
{
    plan_node *n = NULL, *m = NULL;
    ck_assert_int_eq(plan_node_parse_json(node_doc, strlen(node_doc), &n,
                                          tu_err, sizeof tu_err), 0);
    ck_assert_uint_eq(n->n_links, 3);
    ck_assert_uint_eq(n->n_devices, 2);
    ck_assert_uint_eq(n->links[1].parent, 0);
    ck_assert_uint_eq(n->links[2].depth, 1);
    ck_assert(!n->links[2].duplex);
    ck_assert_uint_eq(n->devices[1].id, 7);
    ck_assert_uint_eq(n->devices[1].parent, 2);
    ck_assert_uint_eq(n->devices[1].reserve_bytes, 10);
    ck_assert(!n->devices[1].duplex);
    ck_assert(n->devices[1].latency_us == 0);
    ck_assert(n->has_flash);
    ck_assert_uint_eq(n->flash.bytes, 8796093022208ull);
    ck_assert_uint_eq(plan_node_device_index(n, 7), 1);
    ck_assert_uint_eq(plan_node_device_index(n, 3), PLAN_NONE);
    char *a = node_text(n);
    ck_assert_int_eq(plan_node_parse_json(a, strlen(a), &m, tu_err,
                                          sizeof tu_err), 0);
    char *b = node_text(m);
    ck_assert_str_eq(a, b);
    ck_assert(m->links[2].h2d_gbps == 0.1 && m->links[2].d2h_gbps == 3.3);
    free(a);
    free(b);
    plan_node_free(n);
    plan_node_free(m);
    ck_assert_ptr_null(plan_node_free(NULL));
}
END_TEST

/* Parse `doc`, expect HO_E_BAD_CONFIG with `want` in the message. */
static void node_bad(const char *doc, const char *want)
{
    plan_node *n = NULL;
    int r = plan_node_parse_json(doc, strlen(doc), &n, tu_err, sizeof tu_err);
    ck_assert_msg(r == HO_E_BAD_CONFIG, "%s: %d %s", want, r, tu_err);
    ck_assert_msg(strstr(tu_err, want), "want \"%s\", got \"%s\"", want,
                  tu_err);
    ck_assert_ptr_null(n);
}

#define HDR "{\"format\": \"hyperoffload-node\", \"version\": 1, "
#define DEV(id, name, parent)                                                \
    "{\"id\": " #id ", \"name\": \"" name "\", \"hbm_bytes\": 100000, "         \
    "\"h2d_gbps\": 1, \"d2h_gbps\": 1, \"parent\": \"" parent "\"}"
#define LINK(name, parent)                                                   \
    "{\"name\": \"" name "\", \"parent\": \"" parent "\", \"h2d_gbps\": 1, " \
    "\"d2h_gbps\": 1}"
#define ROOT(name) "{\"name\": \"" name "\", \"h2d_gbps\": 1, \"d2h_gbps\": 1}"

START_TEST(test_node_validation)
{
    node_bad(HDR "\"links\": [" ROOT("host") ", " LINK("sw0", "host") ", "
             LINK("sw1", "sw9") "], \"devices\": [" DEV(0, "d", "sw0")
             "], \"ddr_bytes\": 1}",
             "links[2].parent: unknown link \"sw9\"");
    node_bad(HDR "\"links\": [" ROOT("host") ", " LINK("a", "b") ", "
             LINK("b", "c") ", " LINK("c", "a") "], \"devices\": ["
             DEV(0, "d", "host") "], \"ddr_bytes\": 1}",
             "cycle a -> b -> c -> a");
    node_bad(HDR "\"links\": [" LINK("a", "b") ", " LINK("b", "a")
             "], \"devices\": [" DEV(0, "d", "a") "], \"ddr_bytes\": 1}",
             "no path to the root");
    node_bad(HDR "\"links\": [" ROOT("host") ", " LINK("x", "x")
             "], \"devices\": [" DEV(0, "d", "x") "], \"ddr_bytes\": 1}",
             "links[1].parent: link \"x\" is its own parent");
    node_bad(HDR "\"links\": [" ROOT("host") ", " ROOT("h2")
             "], \"devices\": [" DEV(0, "d", "host") "], \"ddr_bytes\": 1}",
             "links[1]: a second root link \"h2\"");
    node_bad(HDR "\"links\": [" ROOT("host") ", " ROOT("host")
             "], \"devices\": [" DEV(0, "d", "host") "], \"ddr_bytes\": 1}",
             "links[1].name: duplicate link \"host\"");
    node_bad(HDR "\"links\": [" ROOT("host") "], \"devices\": ["
             DEV(0, "d", "host") ", " DEV(0, "e", "host")
             "], \"ddr_bytes\": 1}",
             "devices[1].id: duplicate device id 0");
    node_bad(HDR "\"links\": [" ROOT("host") "], \"devices\": ["
             DEV(0, "d", "host") ", " DEV(1, "d", "host")
             "], \"ddr_bytes\": 1}",
             "devices[1].name: duplicate device \"d\"");
    node_bad(HDR "\"links\": [" ROOT("host") "], \"devices\": ["
             DEV(0, "d", "nope") "], \"ddr_bytes\": 1}",
             "devices[0].parent: unknown link \"nope\"");
    node_bad(HDR "\"links\": [" ROOT("host") "], \"devices\": [{\"id\": 0, "
             "\"name\": \"d\", \"hbm_bytes\": 100, \"h2d_gbps\": 1, "
             "\"d2h_gbps\": 1}], \"ddr_bytes\": 1}",
             "devices[0].parent: missing");
    node_bad(HDR "\"links\": [" ROOT("host") "], \"devices\": [{\"id\": 0, "
             "\"name\": \"d\", \"hbm_bytes\": 100, \"h2d_gbps\": 0, "
             "\"d2h_gbps\": 1, \"parent\": \"host\"}], \"ddr_bytes\": 1}",
             "devices[0].h2d_gbps: must be greater than 0");
    node_bad(HDR "\"links\": [" ROOT("host") "], \"devices\": [{\"id\": 0, "
             "\"name\": \"d\", \"hbm_bytes\": 100, \"reserve_bytes\": 100, "
             "\"h2d_gbps\": 1, \"d2h_gbps\": 1, \"parent\": \"host\"}], "
             "\"ddr_bytes\": 1}",
             "devices[0].reserve_bytes: 100 leaves nothing");
    node_bad(HDR "\"links\": [" ROOT("host") "], \"devices\": [{\"id\": 0, "
             "\"name\": \"d\", \"hbm_bytes\": 100, \"latency_us\": -1, "
             "\"h2d_gbps\": 1, \"d2h_gbps\": 1, \"parent\": \"host\"}], "
             "\"ddr_bytes\": 1}",
             "devices[0].latency_us: must be at least 0");
    node_bad(HDR "\"links\": [{\"name\": \"host\", \"h2d_gbps\": \"fast\", "
             "\"d2h_gbps\": 1}], \"devices\": [" DEV(0, "d", "host")
             "], \"ddr_bytes\": 1}",
             "links[0].h2d_gbps: must be a number, got \"fast\"");
    node_bad(HDR "\"links\": [" ROOT("host") "], \"devices\": ["
             DEV(0, "d", "host") "], \"ddr_bytes\": 1, \"colour\": 1}",
             "colour: unknown field");
    node_bad(HDR "\"devices\": [], \"ddr_bytes\": 1}",
             "devices: a node needs at least one device");
    node_bad(HDR "\"devices\": [" DEV(0, "d", "host") "]}",
             "ddr_bytes: missing required field");
    node_bad("{\"format\": \"hyperoffload-workload\", \"version\": 1}",
             "format: expected \"hyperoffload-node\"");
    node_bad(HDR "\"devices\": [" DEV(0, "d", "host") "], \"ddr_bytes\": "
             "1, \"flash\": {\"bytes\": 1, \"read_gbps\": 1}}",
             "flash.write_gbps: missing required field");
    node_bad("{\"format\": \"hyperoffload-node\", \"version\": 2}",
             "version: unsupported version 2");
    node_bad("{\"format\": ", "invalid JSON");

    /* A node without links: devices hang off the host directly. */
    plan_node *n = NULL;
    const char *flat = HDR "\"devices\": [{\"id\": 3, \"name\": \"d\", "
                           "\"hbm_bytes\": 100, \"h2d_gbps\": 1, "
                           "\"d2h_gbps\": 1}], \"ddr_bytes\": 1}";
    ck_assert_int_eq(plan_node_parse_json(flat, strlen(flat), &n, tu_err,
                                          sizeof tu_err), 0);
    ck_assert_uint_eq(n->devices[0].parent, PLAN_NONE);
    plan_node_free(n);

    /* Depth bound. */
    n = plan_node_new();
    nu_link(n, "l0", NULL, 1, 1, true);
    char name[16], parent[16];
    for (unsigned i = 1; i <= PLAN_NODE_MAX_DEPTH; i++) {
        snprintf(name, sizeof name, "l%u", i);
        snprintf(parent, sizeof parent, "l%u", i - 1);
        nu_link(n, name, parent, 1, 1, true);
    }
    nu_dev(n, 0, name, 100, 1, 1, 0, true);
    ck_assert_int_eq(plan_node_finish(n, tu_err, sizeof tu_err),
                     HO_E_BAD_CONFIG);
    ck_assert_ptr_nonnull(strstr(tu_err, "links between it and the root"));
    plan_node_free(n);
}
END_TEST

static const char wl_doc[] =
    "{\"format\": \"hyperoffload-workload\", \"version\": 1,\n"
    " \"clients\": [\n"
    "  {\"name\": \"train-r0\", \"job\": \"train\", \"device\": 0,"
    " \"trace\": \"r0.trace.json\", \"schedule\": \"r0.schedule.json\","
    " \"budget_bytes\": 34359738368, \"weight\": 1.0, \"sync\": \"train\","
    " \"max_slowdown\": 1.10},\n"
    "  {\"name\": \"serve\", \"device\": 7, \"trace\": \"/abs/s.json\","
    " \"weight\": 4, \"planned_h2d_gbps\": 12.5, \"planned_d2h_gbps\": 3,"
    " \"ddr_limit_bytes\": 1073741824, \"predicted\": {\"step_time_us\":"
    " 1234.5, \"exposed_us\": 34.5, \"alloc_wait_us\": 0}}]}\n";

START_TEST(test_workload_round_trip)
{
    plan_workload *w = NULL, *x = NULL;
    ck_assert_int_eq(plan_workload_parse_json(wl_doc, strlen(wl_doc), "dir",
                                              &w, tu_err, sizeof tu_err), 0);
    ck_assert_uint_eq(w->n_clients, 2);
    const plan_wl_client *a = &w->clients[0], *b = &w->clients[1];
    ck_assert_str_eq(a->name, "train-r0");
    ck_assert_str_eq(a->job, "train");
    ck_assert_str_eq(a->sync, "train");
    ck_assert(a->has_budget && a->budget_bytes == 34359738368ull);
    ck_assert(a->has_max_slowdown && a->max_slowdown == 1.10);
    ck_assert(!a->has_planned_h2d && !a->has_predicted && !a->has_ddr_limit);
    ck_assert_ptr_null(b->job);
    ck_assert_ptr_null(b->sync);
    ck_assert_ptr_null(b->schedule);
    ck_assert(!b->has_budget);
    ck_assert(b->weight == 4);
    ck_assert(b->has_planned_h2d && b->planned_h2d_gbps == 12.5);
    ck_assert(b->has_planned_d2h && b->planned_d2h_gbps == 3);
    ck_assert(b->has_ddr_limit && b->ddr_limit_bytes == 1073741824ull);
    ck_assert(b->has_predicted && b->predicted.step_time_us == 1234.5 &&
              b->predicted.exposed_us == 34.5);
    char *p = plan_workload_path(w, a->trace);
    ck_assert_str_eq(p, "dir/r0.trace.json");
    free(p);
    p = plan_workload_path(w, b->trace);
    ck_assert_str_eq(p, "/abs/s.json");
    free(p);
    char *t1 = workload_text(w);
    ck_assert_int_eq(plan_workload_parse_json(t1, strlen(t1), "dir", &x,
                                              tu_err, sizeof tu_err), 0);
    char *t2 = workload_text(x);
    ck_assert_str_eq(t1, t2);
    free(t1);
    free(t2);
    plan_workload_free(w);
    plan_workload_free(x);
}
END_TEST

static void wl_bad(const char *clients, const char *want)
{
    char doc[2048];
    plan_workload *w = NULL;
    snprintf(doc, sizeof doc,
             "{\"format\": \"hyperoffload-workload\", \"version\": 1, "
             "\"clients\": [%s]}", clients);
    int r = plan_workload_parse_json(doc, strlen(doc), ".", &w, tu_err,
                                     sizeof tu_err);
    ck_assert_msg(r == HO_E_BAD_CONFIG, "%s: %d %s", want, r, tu_err);
    ck_assert_msg(strstr(tu_err, want), "want \"%s\", got \"%s\"", want,
                  tu_err);
    ck_assert_ptr_null(w);
}

START_TEST(test_workload_validation)
{
    wl_bad("{\"name\": \"a\", \"device\": 0, \"trace\": \"t\"}, "
           "{\"name\": \"a\", \"device\": 1, \"trace\": \"t\"}",
           "clients[1].name: duplicate client \"a\"");
    wl_bad("{\"name\": \"a\", \"device\": 0, \"trace\": \"t\", "
           "\"weight\": 0}", "clients[0].weight: must be greater than 0");
    wl_bad("{\"name\": \"a\", \"device\": 0, \"trace\": \"t\", "
           "\"max_slowdown\": 0.5}",
           "clients[0].max_slowdown: must be at least 1");
    wl_bad("{\"name\": \"a\", \"device\": -1, \"trace\": \"t\"}",
           "clients[0].device: must be at least 0");
    wl_bad("{\"name\": \"a\", \"device\": 0}",
           "clients[0].trace: missing required field");
    wl_bad("{\"name\": \"a\", \"device\": 0, \"trace\": \"\"}",
           "clients[0].trace: must not be empty");
    wl_bad("{\"name\": \"a\", \"device\": 0, \"trace\": \"t\", "
           "\"budget_bytes\": 1.5}",
           "clients[0].budget_bytes: must be an integer");
    wl_bad("{\"name\": \"a\", \"device\": 0, \"trace\": \"t\", "
           "\"predicted\": {\"step_time_us\": 1}}",
           "clients[0].predicted.exposed_us: missing required field");
    wl_bad("{\"name\": \"a\", \"device\": 0, \"trace\": \"t\", "
           "\"speed\": 1}", "clients[0].speed: unknown field");
    wl_bad("{\"name\": \"a\", \"device\": 0, \"trace\": \"t\", "
           "\"planned_h2d_gbps\": -2}",
           "clients[0].planned_h2d_gbps: must be greater than 0");
}
END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(test_load_relative_paths_and_judge)
{
    char dir[] = "/tmp/ho-node-XXXXXX", path[700], sub[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/w", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);

    /* trace and schedule beside the workload, in w/ */
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(1000);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    char *tt = tu_trace_json(t), *st = tu_schedule_json(s);
    snprintf(path, sizeof path, "%s/t.json", sub);
    write_file(path, tt);
    snprintf(path, sizeof path, "%s/s.json", sub);
    write_file(path, st);
    free(tt);
    free(st);
    snprintf(path, sizeof path, "%s/node.json", dir);
    write_file(path,
               HDR "\"links\": [" ROOT("host") ", " LINK("sw", "host")
               "], \"devices\": [" DEV(0, "a", "sw") ", " DEV(1, "b", "sw")
               "], \"ddr_bytes\": 1}");
    plan_node *n = NULL;
    ck_assert_int_eq(plan_node_read_json(path, &n, tu_err, sizeof tu_err), 0);
    snprintf(path, sizeof path, "%s/w/workload.json", dir);
    write_file(path,
               "{\"format\": \"hyperoffload-workload\", \"version\": 1, "
               "\"clients\": ["
               "{\"name\": \"x\", \"device\": 1, \"trace\": \"t.json\", "
               "\"schedule\": \"s.json\"},"
               "{\"name\": \"y\", \"device\": 0, \"trace\": \"t.json\", "
               "\"schedule\": \"s.json\", \"budget_bytes\": 5000, "
               "\"sync\": \"g\"}]}");
    plan_workload *w = NULL;
    ck_assert_int_eq(plan_workload_read_json(path, &w, tu_err, sizeof tu_err),
                     0);
    ck_assert_str_eq(w->dir, sub);
    plan_wl_run *run = NULL;
    ck_assert_int_eq(plan_wl_run_load(n, w, &run, tu_err, sizeof tu_err), 0);
    ck_assert_uint_eq(run->n, 2);
    ck_assert_ptr_eq(run->traces[0], run->traces[1]); /* shared */
    ck_assert_uint_eq(run->in[0].device, 1);
    ck_assert_uint_eq(run->in[0].budget_bytes, 1000); /* the schedule's */
    ck_assert_uint_eq(run->in[1].budget_bytes, 5000);
    ck_assert_uint_eq(run->in[0].sync, PLAN_NONE);
    ck_assert_uint_eq(run->in[1].sync, 0);
    ck_assert_uint_eq(run->n_groups, 1);
    ck_assert_str_eq(run->groups[0], "g");
    /* two prefetches of 1000 B share sw (1 GB/s): 2 us each, op 1 us */
    plan_node_result *r = nu_judge(n, run->in, run->n, 1);
    NU_EQ(r->clients[0].step_time_us, 3);
    NU_EQ(r->clients[1].step_time_us, 3);
    plan_node_result_free(r);
    plan_wl_run_free(run);
    plan_workload_free(w);

    /* an unknown device, a missing schedule, a missing file */
    const char *bad[][2] = {
        {"{\"name\": \"x\", \"device\": 5, \"trace\": \"t.json\", "
         "\"schedule\": \"s.json\"}",
         "clients[0].device: no device 5 in the node"},
        {"{\"name\": \"x\", \"device\": 0, \"trace\": \"t.json\"}",
         "clients[0].schedule: client \"x\" has no schedule"},
        {"{\"name\": \"x\", \"device\": 0, \"trace\": \"t.json\", "
         "\"schedule\": \"nope.json\"}",
         "clients[0] (x): schedule"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char doc[1024];
        snprintf(doc, sizeof doc,
                 "{\"format\": \"hyperoffload-workload\", \"version\": 1, "
                 "\"clients\": [%s]}", bad[i][0]);
        ck_assert_int_eq(plan_workload_parse_json(doc, strlen(doc), sub, &w,
                                                  tu_err, sizeof tu_err), 0);
        run = NULL;
        ck_assert_int_lt(plan_wl_run_load(n, w, &run, tu_err, sizeof tu_err),
                         0);
        ck_assert_ptr_null(run);
        ck_assert_msg(strstr(tu_err, bad[i][1]), "want %s, got %s",
                      bad[i][1], tu_err);
        plan_workload_free(w);
    }

    plan_node_free(n);
    plan_schedule_free(s);
    plan_trace_free(t);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(path), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("node_format");
    TCase *tc = tcase_create("format");
    tcase_add_test(tc, test_node_round_trip);
    tcase_add_test(tc, test_node_validation);
    tcase_add_test(tc, test_workload_round_trip);
    tcase_add_test(tc, test_workload_validation);
    tcase_add_test(tc, test_load_relative_paths_and_judge);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
