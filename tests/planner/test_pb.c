/*
 * tests/planner/test_pb.c - the protobuf trace and schedule forms
 * (planner/pb.c): JSON -> protobuf -> JSON byte-identical on generated and
 * random traces, format detection by plan_*_read_file, and malformed
 * messages rejected with the place named.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"
#include "tests/planner/plan_test_util.h"
#include "proto/plan.pb-c.h"

static char err[512];

/* JSON text -> trace -> pb -> trace -> JSON text must be identical. */
static void trace_lossless(const plan_trace *t)
{
    char *a = tu_trace_json(t), *b;
    plan_trace *t1 = NULL, *t2 = NULL;
    uint8_t *pb = NULL;
    size_t len = 0;

    ck_assert_int_eq(plan_trace_parse_json(a, strlen(a), &t1, err,
                                           sizeof err), 0);
    ck_assert_int_eq(plan_trace_to_pb(t1, &pb, &len), 0);
    ck_assert_uint_gt(len, 0);
    ck_assert_msg(plan_trace_from_pb(pb, len, &t2, err, sizeof err) == 0,
                  "from_pb: %s", err);
    ck_assert(t2->finished);
    b = tu_trace_json(t2);
    ck_assert_msg(strcmp(a, b) == 0, "JSON -> pb -> JSON differs");
    ck_assert_uint_eq(plan_trace_hash(t1), plan_trace_hash(t2));
    free(a);
    free(b);
    free(pb);
    plan_trace_free(t1);
    plan_trace_free(t2);
}

static void schedule_lossless(const plan_schedule *s)
{
    char *a = tu_schedule_json(s), *b;
    plan_schedule *s1 = NULL, *s2 = NULL;
    uint8_t *pb = NULL;
    size_t len = 0;

    ck_assert_int_eq(plan_schedule_parse_json(a, strlen(a), &s1, err,
                                              sizeof err), 0);
    ck_assert_int_eq(plan_schedule_to_pb(s1, &pb, &len), 0);
    ck_assert_msg(plan_schedule_from_pb(pb, len, &s2, err, sizeof err) == 0,
                  "from_pb: %s", err);
    b = tu_schedule_json(s2);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(s1->has_predicted, s2->has_predicted);
    free(a);
    free(b);
    free(pb);
    plan_schedule_free(s1);
    plan_schedule_free(s2);
}

START_TEST(generated_traces)
{
    plan_gen_train_cfg c;
    plan_gen_decode_cfg d;
    plan_trace *t = NULL;

    memset(&c, 0, sizeof c);
    c.model = *plan_model_find("qwen2.5-0.5b");
    c.model.layers = 4;
    c.device = *plan_device_find("a100");
    c.seq = 1024;
    c.micro_batch = 2;
    c.n_micro = 2;
    c.dtype_bytes = 2;
    c.params_on_host = true;
    c.optimizer_step = true;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), 0);
    trace_lossless(t);
    plan_trace_free(t);

    c.model = *plan_model_find("gpt3-175b");
    c.model.layers = 2;
    c.dtype_bytes = 4;
    c.optimizer_step = false;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), 0);
    trace_lossless(t);
    plan_trace_free(t);

    memset(&d, 0, sizeof d);
    d.model = *plan_model_find("llama2-7b");
    d.model.layers = 3;
    d.device = *plan_device_find("910c");
    d.prompt = 1000;
    d.tokens = 5;
    d.batch = 4;
    d.dtype_bytes = 2;
    d.kv_block = 256;
    ck_assert_int_eq(plan_gen_decode(&d, &t, err, sizeof err), 0);
    trace_lossless(t);
    plan_trace_free(t);
}
END_TEST

START_TEST(random_traces)
{
    for (uint64_t seed = 10; seed < 16; seed++) {
        plan_gen_random_cfg c = {.seed = seed, .n_ops = 500,
                                 .n_storages = 200, .max_refs_per_op = 7,
                                 .min_bytes = 1, .max_bytes = 1ull << 40,
                                 .p_initial_device = 0.2,
                                 .p_initial_host = 0.2, .p_retained = 0.3,
                                 .p_pinned = 0.1};
        plan_trace *t = NULL;
        ck_assert_int_eq(plan_gen_random(&c, &t, err, sizeof err), 0);
        t->ops[0].duration_us = 0.1;
        t->ops[1].duration_us = 2.0 / 3.0;
        t->link.duplex = false;
        t->link.latency_us = 0.0;
        trace_lossless(t);
        plan_trace_free(t);
    }
}
END_TEST

START_TEST(schedules)
{
    plan_schedule *s = plan_schedule_new("seed-greedy", 0);
    /* empty, no predicted: has_predicted stays false */
    schedule_lossless(s);
    for (uint32_t i = 0; i < 100; i++)
        ck_assert_int_eq(plan_schedule_push_id(s, i * 3, (plan_when)(i & 1),
                                               (plan_act_kind)(i % 4),
                                               1000 + i * 17), 0);
    schedule_lossless(s);
    /* predicted all zero must still be carried as present */
    s->has_predicted = true;
    schedule_lossless(s);
    s->predicted.peak_device_bytes = 1ull << 40;
    s->predicted.compute_us = 1.0 / 3.0;
    s->predicted.step_time_us = 12345.678901234;
    s->predicted.exposed_us = 12345.678901234 - 1.0 / 3.0;
    s->predicted.h2d_bytes = 77;
    s->budget_bytes = 9223372036854775807ull;
    schedule_lossless(s);
    /* wait actions and homes */
    ck_assert_int_eq(plan_schedule_push_id(s, 7, PLAN_BEFORE, PLAN_ACT_WAIT,
                                           1017), 0);
    ck_assert_int_eq(plan_schedule_push_home_id(s, 1000, PLAN_HOME_HOST), 0);
    ck_assert_int_eq(plan_schedule_push_home_id(s, 1017, PLAN_HOME_DEVICE),
                     0);
    schedule_lossless(s);
    plan_schedule_free(s);
}
END_TEST

/* movable storages survive JSON -> pb -> JSON */
START_TEST(movable_trace)
{
    plan_trace *t = tu_trace(NULL);
    tu_st_movable(t, 5, 100, PLAN_INIT_DEVICE);
    tu_st_movable(t, 6, 100, PLAN_INIT_HOST);
    tu_st(t, 7, 100, PLAN_INIT_DEVICE, true, false);
    tu_op(t, 1, TU_R(5, 6, 7), TU_NONE);
    tu_finish(t);
    trace_lossless(t);
    plan_trace_free(t);
}
END_TEST

/* Pack a hand-built Trace message and expect the reader to reject it. */
static void pb_trace_bad(const Hyperoffload__Trace *m, const char *want)
{
    size_t len = hyperoffload__trace__get_packed_size(m);
    uint8_t *buf = malloc(len ? len : 1);
    plan_trace *t = NULL;
    int r;

    hyperoffload__trace__pack(m, buf);
    err[0] = 0;
    r = plan_trace_from_pb(buf, len, &t, err, sizeof err);
    ck_assert_msg(r == HO_E_BAD_TRACE, "want HO_E_BAD_TRACE for %s, got %d "
                  "(%s)", want, r, err);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"",
                  err, want);
    free(buf);
}

START_TEST(malformed_trace)
{
    Hyperoffload__Trace m = HYPEROFFLOAD__TRACE__INIT;
    Hyperoffload__Link link = HYPEROFFLOAD__LINK__INIT;
    Hyperoffload__Storage s0 = HYPEROFFLOAD__STORAGE__INIT;
    Hyperoffload__Storage s1 = HYPEROFFLOAD__STORAGE__INIT;
    Hyperoffload__Storage *sp[2] = {&s0, &s1};
    Hyperoffload__Op o0 = HYPEROFFLOAD__OP__INIT;
    Hyperoffload__Op *op[1] = {&o0};
    uint64_t writes[1] = {5}, reads[2] = {5, 99};
    uint8_t junk[] = {0x0a, 0xff, 0xff, 0x01, 0x02};
    plan_trace *t = NULL;

    m.format = (char *)"hyperoffload-trace";
    m.version = 1;
    m.name = (char *)"x";
    link.h2d_gbps = 10;
    link.d2h_gbps = 10;
    m.link = &link;
    s0.id = 5;
    s0.bytes = 10;
    s1.id = 6;
    s1.bytes = 10;
    s1.initial = HYPEROFFLOAD__STORAGE_INITIAL__STORAGE_INITIAL_DEVICE;
    m.n_storages = 2;
    m.storages = sp;
    o0.duration_us = 1;
    o0.n_writes = 1;
    o0.writes = writes;
    m.n_ops = 1;
    m.ops = op;

    /* the base message is valid */
    {
        size_t len = hyperoffload__trace__get_packed_size(&m);
        uint8_t *buf = malloc(len);
        hyperoffload__trace__pack(&m, buf);
        ck_assert_int_eq(plan_trace_from_pb(buf, len, &t, err, sizeof err),
                         0);
        ck_assert_uint_eq(t->n_storages, 2);
        plan_trace_free(t);
        t = NULL;
        /* truncated */
        ck_assert_int_eq(plan_trace_from_pb(buf, len - 3, &t, err,
                                            sizeof err), HO_E_BAD_TRACE);
        ck_assert_ptr_nonnull(strstr(err, "protobuf"));
        free(buf);
    }
    ck_assert_int_eq(plan_trace_from_pb(junk, sizeof junk, &t, err,
                                        sizeof err), HO_E_BAD_TRACE);

    m.format = (char *)"hyperoffload-schedule";
    pb_trace_bad(&m, "format: expected \"hyperoffload-trace\", got "
                     "\"hyperoffload-schedule\"");
    m.format = (char *)"hyperoffload-trace";
    m.version = 2;
    pb_trace_bad(&m, "version: unsupported version 2");
    m.version = 1;

    m.link = NULL;
    pb_trace_bad(&m, "link: missing required field");
    m.link = &link;
    link.d2h_gbps = -1;
    pb_trace_bad(&m, "link.d2h_gbps: must be");
    link.d2h_gbps = 10;

    s1.id = 5;
    pb_trace_bad(&m, "storages[1].id: duplicate id 5 (first at storages[0])");
    s1.id = 1ull << 63;
    pb_trace_bad(&m, "storages[1].id: must be at most 9223372036854775807");
    s1.id = 6;
    s1.bytes = 0;
    pb_trace_bad(&m, "storages[1].bytes: must be a positive integer");
    s1.bytes = 10;
    s1.kind = (Hyperoffload__StorageKind)9;
    pb_trace_bad(&m, "storages[1].kind: unknown value 9");
    s1.kind = HYPEROFFLOAD__STORAGE_KIND__STORAGE_KIND_PARAM;

    o0.n_reads = 2;
    o0.reads = reads;
    pb_trace_bad(&m, "ops[0].reads[1]: unknown storage id 99");
    o0.n_reads = 0;

    m.n_ops = 0;
    pb_trace_bad(&m, "ops: a trace needs at least one op");
    m.n_ops = 1;
    o0.duration_us = -2;
    pb_trace_bad(&m, "ops[0].duration_us: must be a non-negative number");
    o0.duration_us = 1;
    o0.name = (char *)"bad \xff utf8";
    pb_trace_bad(&m, "ops[0].name: not valid UTF-8");
    o0.name = (char *)"";
    s0.movable = true; /* not retained */
    pb_trace_bad(&m, "storages[0]: storage id 5: movable needs retained");
}
END_TEST

START_TEST(malformed_schedule)
{
    Hyperoffload__Schedule m = HYPEROFFLOAD__SCHEDULE__INIT;
    Hyperoffload__Action a0 = HYPEROFFLOAD__ACTION__INIT;
    Hyperoffload__Action *ap[1] = {&a0};
    plan_schedule *s = NULL;
    uint8_t buf[256];
    size_t len;

    m.format = (char *)"hyperoffload-schedule";
    m.version = 1;
    m.n_actions = 1;
    m.actions = ap;
    a0.kind = (Hyperoffload__ActionKind)7;
    len = hyperoffload__schedule__pack(&m, buf);
    ck_assert_int_eq(plan_schedule_from_pb(buf, len, &s, err, sizeof err),
                     HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(err, "actions[0].kind: unknown value 7"));
    a0.kind = HYPEROFFLOAD__ACTION_KIND__ACTION_KIND_STORE;
    {
        Hyperoffload__HomeEntry h = HYPEROFFLOAD__HOME_ENTRY__INIT;
        Hyperoffload__HomeEntry *hp[1] = {&h};
        h.storage = 4;
        h.home = (Hyperoffload__Home)2;
        m.n_homes = 1;
        m.homes = hp;
        len = hyperoffload__schedule__pack(&m, buf);
        ck_assert_int_eq(plan_schedule_from_pb(buf, len, &s, err,
                                               sizeof err),
                         HO_E_BAD_SCHEDULE);
        ck_assert_ptr_nonnull(strstr(err, "homes[0].home: unknown value 2"));
        m.n_homes = 0;
        m.homes = NULL;
    }
    m.has_predicted = true;
    len = hyperoffload__schedule__pack(&m, buf);
    ck_assert_int_eq(plan_schedule_from_pb(buf, len, &s, err, sizeof err),
                     HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(err, "predicted"));
    m.has_predicted = false;
    m.version = 0;
    len = hyperoffload__schedule__pack(&m, buf);
    ck_assert_int_eq(plan_schedule_from_pb(buf, len, &s, err, sizeof err),
                     HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(err, "version: unsupported version 0"));
    m.version = 1;
    len = hyperoffload__schedule__pack(&m, buf);
    ck_assert_int_eq(plan_schedule_from_pb(buf, len, &s, err, sizeof err), 0);
    ck_assert_uint_eq(s->n_actions, 1);
    ck_assert_uint_eq(s->actions[0].kind, PLAN_ACT_STORE);
    plan_schedule_free(s);
}
END_TEST

/* plan_*_read_file tells the formats apart. */
START_TEST(read_file_detects)
{
    char tp[] = "/tmp/ho-test-pb-XXXXXX", sp[] = "/tmp/ho-test-pb-XXXXXX";
    plan_gen_random_cfg c = {.seed = 3, .n_ops = 50, .n_storages = 20};
    plan_trace *t = NULL, *t2 = NULL;
    plan_schedule *s = plan_schedule_new("none", 5), *s2 = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    FILE *f;
    int fd;

    ck_assert_int_eq(plan_gen_random(&c, &t, err, sizeof err), 0);
    ck_assert_int_eq(plan_trace_to_pb(t, &buf, &len), 0);
    fd = mkstemp(tp);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
    ck_assert_msg(plan_trace_read_file(tp, &t2, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(t2));
    plan_trace_free(t2);
    t2 = NULL;
    /* a protobuf trace is not a schedule */
    ck_assert_int_eq(plan_schedule_read_file(tp, &s2, err, sizeof err),
                     HO_E_BAD_SCHEDULE);
    /* (its link field has the wire type of budget_bytes) */
    ck_assert_ptr_nonnull(strstr(err, "not a valid hyperoffload.Schedule"));
    /* JSON form of the same trace, with leading whitespace */
    f = fopen(tp, "w");
    fputs(" \n\t", f);
    ck_assert_int_eq(plan_trace_write_json(t, f), 0);
    fclose(f);
    ck_assert_int_eq(plan_trace_read_file(tp, &t2, err, sizeof err), 0);
    ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(t2));
    plan_trace_free(t2);

    ck_assert_int_eq(plan_schedule_push_id(s, 1, PLAN_AFTER, PLAN_ACT_STORE,
                                           1000), 0);
    ck_assert_int_eq(plan_schedule_to_pb(s, &buf, &len), 0);
    fd = mkstemp(sp);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
    ck_assert_int_eq(plan_schedule_read_file(sp, &s2, err, sizeof err), 0);
    ck_assert_str_eq(s2->planner, "none");
    ck_assert_uint_eq(s2->budget_bytes, 5);
    ck_assert_uint_eq(s2->n_actions, 1);
    ck_assert_uint_eq(s2->actions[0].storage_id, 1000);
    plan_schedule_free(s2);

    unlink(tp);
    unlink(sp);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_pb");
    TCase *tc = tcase_create("pb");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, generated_traces);
    tcase_add_test(tc, random_traces);
    tcase_add_test(tc, schedules);
    tcase_add_test(tc, movable_trace);
    tcase_add_test(tc, malformed_trace);
    tcase_add_test(tc, malformed_schedule);
    tcase_add_test(tc, read_file_detects);
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
