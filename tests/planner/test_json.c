/*
 * tests/planner/test_json.c - the JSON trace and schedule formats
 * (planner/json.c): round trips byte for byte, defaults, and every class
 * of malformed input rejected with the place named.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"
#include "tests/planner/plan_test_util.h"

static char err[512];

static plan_trace *parse_ok(const char *text)
{
    plan_trace *t = NULL;
    int r = plan_trace_parse_json(text, strlen(text), &t, err, sizeof err);
    ck_assert_msg(r == 0, "parse failed (%d): %s", r, err);
    ck_assert(t->finished);
    return t;
}

/* Parse must fail with `code` and a message containing `want`. */
static void trace_bad(const char *text, const char *want)
{
    plan_trace *t = NULL;
    int r;
    err[0] = 0;
    r = plan_trace_parse_json(text, strlen(text), &t, err, sizeof err);
    ck_assert_msg(r == HO_E_BAD_TRACE, "expected HO_E_BAD_TRACE for %s, "
                  "got %d (%s)", want, r, err);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"",
                  err, want);
}

static void schedule_bad(const char *text, const char *want)
{
    plan_schedule *s = NULL;
    int r;
    err[0] = 0;
    r = plan_schedule_parse_json(text, strlen(text), &s, err, sizeof err);
    ck_assert_msg(r == HO_E_BAD_SCHEDULE, "expected HO_E_BAD_SCHEDULE for "
                  "%s, got %d (%s)", want, r, err);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"",
                  err, want);
}

#define HDR "{\"format\": \"hyperoffload-trace\", \"version\": 1, " \
            "\"name\": \"t\", \"link\": {\"h2d_gbps\": 28, \"d2h_gbps\": 28}, "

/* A small valid trace used as the base of the malformed variants. */
static const char good[] =
    HDR "\"storages\": [{\"id\": 3, \"bytes\": 100}, "
        "{\"id\": 7, \"bytes\": 200, \"kind\": \"param\", "
        "\"initial\": \"device\", \"retained\": true}], "
    "\"ops\": [{\"name\": \"a\", \"duration_us\": 1.5, \"writes\": [3]}, "
    "{\"name\": \"b\", \"duration_us\": 2, \"reads\": [3, 7]}]}";

START_TEST(defaults_and_values)
{
    plan_trace *t = parse_ok(good);
    ck_assert_str_eq(t->name, "t");
    ck_assert_uint_eq(t->n_storages, 2);
    ck_assert_uint_eq(t->n_ops, 2);
    /* link defaults */
    ck_assert(t->link.h2d_gbps == 28.0);
    ck_assert(t->link.latency_us == 0.0);
    ck_assert(t->link.duplex);
    /* storage defaults: kind other, initial none, not retained/pinned */
    ck_assert_uint_eq(t->storages[0].id, 3);
    ck_assert_uint_eq(t->storages[0].kind, PLAN_KIND_OTHER);
    ck_assert_uint_eq(t->storages[0].initial, PLAN_INIT_NONE);
    ck_assert(!t->storages[0].retained);
    ck_assert(!t->storages[0].pinned);
    ck_assert_uint_eq(t->storages[1].kind, PLAN_KIND_PARAM);
    ck_assert_uint_eq(t->storages[1].initial, PLAN_INIT_DEVICE);
    ck_assert(t->storages[1].retained);
    /* ops: ids resolved to indices */
    ck_assert(t->ops[0].duration_us == 1.5);
    ck_assert_uint_eq(t->ops[1].n_reads, 2);
    ck_assert_uint_eq(t->refs[t->ops[1].first_ref + 1], 1);
    ck_assert_str_eq(plan_op_name(t, 1), "b");
    plan_trace_free(t);

    /* op without name, reads or writes */
    t = parse_ok(HDR "\"storages\": [], \"ops\": [{\"duration_us\": 0}]}");
    ck_assert_str_eq(plan_op_name(t, 0), "");
    ck_assert_uint_eq(t->ops[0].n_reads + t->ops[0].n_writes, 0);
    plan_trace_free(t);
}
END_TEST

START_TEST(malformed_trace)
{
    trace_bad(HDR "\"storages\": [{\"id\": 3, \"bytes\": 100}], \"ops\": ["
              "{\"duration_us\": 1, \"writes\": [3]}, "
              "{\"duration_us\": 1, \"reads\": [3, 99]}]}",
              "ops[1].reads[1]: unknown storage id 99");
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 1}, {\"id\": 2, "
              "\"bytes\": 1}, {\"id\": 3, \"bytes\": 1}, {\"id\": 4, "
              "\"bytes\": -5}], \"ops\": [{\"duration_us\": 1}]}",
              "storages[3].bytes: must be a positive integer, got -5");
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 0}], "
              "\"ops\": [{\"duration_us\": 1}]}",
              "storages[0].bytes: must be a positive integer, got 0");
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 1.5}], "
              "\"ops\": [{\"duration_us\": 1}]}",
              "storages[0].bytes: must be a positive integer, got 1.5");
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 1125899906842625}],"
              " \"ops\": [{\"duration_us\": 1}]}",
              "storages[0].bytes: must be at most 1125899906842624");
    trace_bad(HDR "\"storages\": [{\"id\": 5, \"bytes\": 1}, {\"id\": 6, "
              "\"bytes\": 1}, {\"id\": 7, \"bytes\": 1}, {\"id\": 8, "
              "\"bytes\": 1}, {\"id\": 9, \"bytes\": 1}, {\"id\": 7, "
              "\"bytes\": 1}], \"ops\": [{\"duration_us\": 1}]}",
              "storages[5].id: duplicate id 7 (first at storages[2])");
    trace_bad(HDR "\"storages\": [{\"id\": -1, \"bytes\": 1}], "
              "\"ops\": [{\"duration_us\": 1}]}",
              "storages[0].id: must be a non-negative integer, got -1");
    trace_bad(HDR "\"storages\": [{\"id\": \"x\", \"bytes\": 1}], "
              "\"ops\": [{\"duration_us\": 1}]}",
              "storages[0].id: must be a non-negative integer, got \"x\"");
    trace_bad(HDR "\"storages\": [{\"bytes\": 1}], "
              "\"ops\": [{\"duration_us\": 1}]}",
              "storages[0].id: missing required field");
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 1, \"retaind\": "
              "true}], \"ops\": [{\"duration_us\": 1}]}",
              "storages[0].retaind: unknown field");
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 1, \"kind\": "
              "\"weights\"}], \"ops\": [{\"duration_us\": 1}]}",
              "storages[0].kind: unknown value \"weights\"");
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 1, \"initial\": "
              "\"disk\"}], \"ops\": [{\"duration_us\": 1}]}",
              "storages[0].initial: unknown value \"disk\"");
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 1, \"pinned\": 1}],"
              " \"ops\": [{\"duration_us\": 1}]}",
              "storages[0].pinned: must be true or false, got 1");
    trace_bad(HDR "\"storages\": [], \"ops\": [{\"name\": \"x\"}]}",
              "ops[0].duration_us: missing required field");
    trace_bad(HDR "\"storages\": [], \"ops\": [{\"duration_us\": -1}]}",
              "ops[0].duration_us: must be a non-negative number, got -1");
    trace_bad(HDR "\"storages\": [], \"ops\": [{\"duration_us\": 1, "
              "\"reads\": 3}]}",
              "ops[0].reads: must be an array, got 3");
    trace_bad(HDR "\"storages\": [], \"ops\": [{\"duration_us\": 1, "
              "\"name\": 3}]}",
              "ops[0].name: must be a string, got 3");
    trace_bad(HDR "\"storages\": [], \"ops\": []}",
              "ops: a trace needs at least one op");
    trace_bad(HDR "\"storages\": [], \"ops\": [3]}",
              "ops[0]: must be an object, got 3");
    trace_bad(HDR "\"storages\": []}", "ops: missing required field");
    trace_bad(HDR "\"storages\": [], \"ops\": [{\"duration_us\": 1}], "
              "\"extra\": 1}", "extra: unknown field");
    /* initial: none read before any write (plan_trace_finish) */
    trace_bad(HDR "\"storages\": [{\"id\": 4, \"bytes\": 1}], \"ops\": ["
              "{\"name\": \"first\", \"duration_us\": 1, \"reads\": [4]}]}",
              "reads storage id 4");
    /* link */
    trace_bad("{\"format\": \"hyperoffload-trace\", \"version\": 1, "
              "\"storages\": [], \"ops\": [{\"duration_us\": 1}]}",
              "link: missing required field");
    trace_bad("{\"format\": \"hyperoffload-trace\", \"version\": 1, "
              "\"link\": {\"h2d_gbps\": 0, \"d2h_gbps\": 1}, "
              "\"storages\": [], \"ops\": [{\"duration_us\": 1}]}",
              "link.h2d_gbps: must be a positive number, got 0");
    trace_bad("{\"format\": \"hyperoffload-trace\", \"version\": 1, "
              "\"link\": {\"h2d_gbps\": 1}, "
              "\"storages\": [], \"ops\": [{\"duration_us\": 1}]}",
              "link.d2h_gbps: missing required field");
    /* header */
    trace_bad("{\"format\": \"hyperoffload-schedule\", \"version\": 1}",
              "format: expected \"hyperoffload-trace\", got "
              "\"hyperoffload-schedule\"");
    trace_bad("{\"version\": 1}", "format: missing required field");
    trace_bad("{\"format\": \"hyperoffload-trace\", \"version\": 2}",
              "version: unsupported version 2");
    trace_bad("{\"format\": \"hyperoffload-trace\", \"version\": \"1\"}",
              "version: must be an integer, got \"1\"");
    trace_bad("[1, 2]", "expected a JSON object at the top level");
    /* syntax: line and column from jansson */
    trace_bad("{\n  \"format\": \"hyperoffload-trace\",\n  \"version\": 1,"
              "\n  \"storages\": [\n", "invalid JSON at line 5");
    trace_bad("{\"format\": \"hyperoffload-trace\" \"version\": 1}",
              "invalid JSON at line 1, column");
    trace_bad("", "invalid JSON at line");
    /* ids beyond int64 */
    trace_bad(HDR "\"storages\": [{\"id\": 9223372036854775808, \"bytes\": "
              "1}], \"ops\": [{\"duration_us\": 1}]}",
              "invalid JSON at line 1");
    /* duplicate keys */
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"id\": 2, \"bytes\": 1}], "
              "\"ops\": [{\"duration_us\": 1}]}", "duplicate object key");
}
END_TEST

/* Largest id (INT64_MAX) is accepted and written back. */
START_TEST(id_range)
{
    const char *text = HDR "\"storages\": [{\"id\": 9223372036854775807, "
                           "\"bytes\": 1}], \"ops\": [{\"duration_us\": 1, "
                           "\"writes\": [9223372036854775807]}]}";
    plan_trace *t = parse_ok(text), *t2;
    char *out;
    ck_assert_uint_eq(t->storages[0].id, 9223372036854775807ull);
    out = tu_trace_json(t);
    ck_assert_ptr_nonnull(strstr(out, "\"id\": 9223372036854775807,"));
    t2 = parse_ok(out);
    ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(t2));
    free(out);
    plan_trace_free(t2);
    /* an id above int64 cannot be written */
    t->storages[0].id = 9223372036854775808ull;
    {
        FILE *f = fopen("/dev/null", "w");
        ck_assert_int_eq(plan_trace_write_json(t, f), -ERANGE);
        fclose(f);
    }
    plan_trace_free(t);
}
END_TEST

static void roundtrip_trace(const plan_trace *t)
{
    char *a = tu_trace_json(t), *b;
    plan_trace *t2 = parse_ok(a);
    b = tu_trace_json(t2);
    ck_assert_msg(strcmp(a, b) == 0, "JSON round trip differs");
    ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(t2));
    ck_assert_uint_eq(t2->n_ops, t->n_ops);
    ck_assert_uint_eq(t2->n_storages, t->n_storages);
    for (uint32_t i = 0; i < t->n_ops; i++)
        ck_assert_msg(t->ops[i].duration_us == t2->ops[i].duration_us,
                      "op %u duration %.17g != %.17g", i,
                      t->ops[i].duration_us, t2->ops[i].duration_us);
    free(a);
    free(b);
    plan_trace_free(t2);
}

START_TEST(roundtrip_generated)
{
    plan_gen_train_cfg c;
    plan_gen_decode_cfg d;
    plan_trace *t = NULL;

    memset(&c, 0, sizeof c);
    c.model = *plan_model_find("qwen2.5-0.5b");
    c.device = *plan_device_find("910b");
    c.seq = 512;
    c.micro_batch = 1;
    c.n_micro = 2;
    c.dtype_bytes = 2;
    c.optimizer_step = true;
    c.optimizer_on_host = true;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), 0);
    roundtrip_trace(t);
    plan_trace_free(t);

    memset(&d, 0, sizeof d);
    d.model = *plan_model_find("llama3-8b");
    d.device = *plan_device_find("h200");
    d.prompt = 300;
    d.tokens = 4;
    d.batch = 2;
    d.dtype_bytes = 2;
    d.kv_block = 128;
    ck_assert_int_eq(plan_gen_decode(&d, &t, err, sizeof err), 0);
    roundtrip_trace(t);
    plan_trace_free(t);
}
END_TEST

START_TEST(roundtrip_random)
{
    for (uint64_t seed = 1; seed <= 5; seed++) {
        plan_gen_random_cfg c = {.seed = seed, .n_ops = 300,
                                 .n_storages = 120, .max_refs_per_op = 5,
                                 .p_initial_device = 0.1,
                                 .p_initial_host = 0.1, .p_retained = 0.1,
                                 .p_pinned = 0.05};
        plan_trace *t = NULL;
        ck_assert_int_eq(plan_gen_random(&c, &t, err, sizeof err), 0);
        /* awkward doubles must survive too */
        t->ops[0].duration_us = 0.1;
        t->ops[1].duration_us = 1.0 / 3.0;
        t->ops[2].duration_us = 1e-300;
        t->ops[3].duration_us = 123456789.123456789;
        t->ops[4].duration_us = 5e11;
        t->ops[5].duration_us = -0.0;
        t->link.latency_us = 2.0 / 7.0;
        t->link.h2d_gbps = 28.000000000000004;
        roundtrip_trace(t);
        plan_trace_free(t);
    }
}
END_TEST

START_TEST(names_escaped)
{
    plan_link l = {1, 1, 0, false};
    plan_trace *t = plan_trace_new("q\"uote\\back\nnl", &l), *t2;
    plan_storage s = {.id = 0, .bytes = 1};
    uint32_t ix;
    char *out;

    ck_assert_int_eq(plan_trace_add_storage(t, &s, &ix, err, sizeof err), 0);
    ck_assert_int_eq(plan_trace_add_op(t, "tab\there \x01 \xc3\xa9", 1.0,
                                       NULL, 0, &ix, 1, err, sizeof err), 0);
    ck_assert_int_eq(plan_trace_finish(t, err, sizeof err), 0);
    out = tu_trace_json(t);
    t2 = parse_ok(out);
    ck_assert_str_eq(t2->name, t->name);
    ck_assert_str_eq(plan_op_name(t2, 0), plan_op_name(t, 0));
    ck_assert(!t2->link.duplex);
    free(out);
    plan_trace_free(t2);
    plan_trace_free(t);
}
END_TEST

START_TEST(schedule_roundtrip)
{
    plan_schedule *s = plan_schedule_new("hoplan", 21474836480ull), *s2;
    char *a, *b;

    ck_assert_int_eq(plan_schedule_push_id(s, 12, PLAN_AFTER, PLAN_ACT_STORE,
                                           7), 0);
    ck_assert_int_eq(plan_schedule_push_id(s, 13, PLAN_AFTER,
                                           PLAN_ACT_FREE_DEVICE, 7), 0);
    ck_assert_int_eq(plan_schedule_push_id(s, 40, PLAN_BEFORE,
                                           PLAN_ACT_PREFETCH, 7), 0);
    ck_assert_int_eq(plan_schedule_push_id(s, 41, PLAN_BEFORE,
                                           PLAN_ACT_FREE_HOST, 7), 0);
    /* no predicted yet */
    a = tu_schedule_json(s);
    ck_assert_ptr_null(strstr(a, "predicted"));
    ck_assert_int_eq(plan_schedule_parse_json(a, strlen(a), &s2, err,
                                              sizeof err), 0);
    ck_assert(!s2->has_predicted);
    b = tu_schedule_json(s2);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    plan_schedule_free(s2);

    s->has_predicted = true;
    s->predicted.peak_device_bytes = 123456789012ull;
    s->predicted.peak_host_bytes = 1;
    s->predicted.compute_us = 0.1 + 0.2;
    s->predicted.step_time_us = 1e7 / 3.0;
    s->predicted.exposed_us = -1e-9;
    s->predicted.h2d_bytes = 9223372036854775807ull;
    s->predicted.d2h_bytes = 0;
    a = tu_schedule_json(s);
    ck_assert_int_eq(plan_schedule_parse_json(a, strlen(a), &s2, err,
                                              sizeof err), 0);
    ck_assert(s2->has_predicted);
    ck_assert_str_eq(s2->planner, "hoplan");
    ck_assert_uint_eq(s2->budget_bytes, 21474836480ull);
    ck_assert_uint_eq(s2->n_actions, 4);
    ck_assert_uint_eq(s2->actions[2].op, 40);
    ck_assert_uint_eq(s2->actions[2].kind, PLAN_ACT_PREFETCH);
    ck_assert_uint_eq(s2->actions[2].when, PLAN_BEFORE);
    ck_assert_uint_eq(s2->actions[2].storage_id, 7);
    ck_assert_uint_eq(s2->actions[2].storage, PLAN_NONE); /* not bound */
    ck_assert(memcmp(&s2->predicted, &s->predicted, sizeof s->predicted)
              == 0);
    b = tu_schedule_json(s2);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    plan_schedule_free(s2);
    plan_schedule_free(s);
}
END_TEST

#define SHDR "{\"format\": \"hyperoffload-schedule\", \"version\": 1, "

/* movable storages, wait actions and homes: read, written (movable and
 * homes only when set), read back byte-identical; bad values named. */
START_TEST(movable_wait_homes)
{
    const char *text =
        HDR "\"storages\": [{\"id\": 3, \"bytes\": 100, \"initial\": "
            "\"device\", \"retained\": true, \"movable\": true}, "
            "{\"id\": 4, \"bytes\": 100, \"movable\": false}], "
        "\"ops\": [{\"duration_us\": 1, \"reads\": [3], \"writes\": [4]}]}";
    plan_trace *t = parse_ok(text), *t2;
    char *a, *b;

    ck_assert(t->storages[0].movable);
    ck_assert(!t->storages[1].movable);
    a = tu_trace_json(t);
    ck_assert_ptr_nonnull(strstr(a, "\"pinned\": false, \"movable\": true}"));
    ck_assert_ptr_null(strstr(a, "\"movable\": false"));
    t2 = parse_ok(a);
    b = tu_trace_json(t2);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    plan_trace_free(t2);
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 1, \"movable\": "
              "true}], \"ops\": [{\"duration_us\": 1}]}",
              "storages[0]: storage id 1: movable needs retained and "
              "initial device or host");
    trace_bad(HDR "\"storages\": [{\"id\": 1, \"bytes\": 1, \"movable\": "
              "1}], \"ops\": [{\"duration_us\": 1}]}",
              "storages[0].movable: must be true or false, got 1");

    plan_schedule *s = plan_schedule_new("hoplan", 5), *s2 = NULL;
    ck_assert_int_eq(plan_schedule_push_id(s, 0, PLAN_BEFORE, PLAN_ACT_WAIT,
                                           3), 0);
    a = tu_schedule_json(s);
    ck_assert_ptr_nonnull(strstr(a, "\"kind\": \"wait\""));
    ck_assert_ptr_null(strstr(a, "homes"));
    free(a);
    ck_assert_int_eq(plan_schedule_set_home(s, t, 0, PLAN_HOME_HOST), 0);
    a = tu_schedule_json(s);
    ck_assert_ptr_nonnull(strstr(a, "\n  ],\n  \"homes\": [\n    "
                                    "{\"storage\": 3, \"home\": \"host\"}"
                                    "\n  ]\n}\n"));
    ck_assert_int_eq(plan_schedule_parse_json(a, strlen(a), &s2, err,
                                              sizeof err), 0);
    ck_assert_uint_eq(s2->n_homes, 1);
    ck_assert_uint_eq(s2->homes[0].storage_id, 3);
    ck_assert_uint_eq(s2->homes[0].storage, PLAN_NONE);
    ck_assert_uint_eq(s2->homes[0].home, PLAN_HOME_HOST);
    ck_assert_uint_eq(s2->actions[0].kind, PLAN_ACT_WAIT);
    b = tu_schedule_json(s2);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(plan_schedule_bind(s2, t, err, sizeof err), 0);
    free(a);
    free(b);
    plan_schedule_free(s2);
    plan_schedule_free(s);
    plan_trace_free(t);

    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [], \"homes\": "
                 "[{\"storage\": 3, \"home\": \"disk\"}]}",
                 "homes[0].home: unknown value \"disk\" (expected device or "
                 "host)");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [], \"homes\": "
                 "[{\"home\": \"host\"}]}",
                 "homes[0].storage: missing required field");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [], \"homes\": "
                 "[{\"storage\": 3, \"home\": \"host\", \"x\": 1}]}",
                 "homes[0].x: unknown field");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [], \"homes\": "
                 "{}}", "homes: must be an array, got an object");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [{\"op\": 1, "
                 "\"when\": \"after\", \"kind\": \"waits\", \"storage\": "
                 "1}]}", "actions[0].kind: unknown value \"waits\" (expected "
                 "prefetch, store, free_device, free_host or wait)");
}
END_TEST

START_TEST(malformed_schedule)
{
    plan_schedule *s = NULL;
    const char *ok = SHDR "\"budget_bytes\": 10, \"actions\": []}";

    /* planner optional (""), no predicted */
    ck_assert_int_eq(plan_schedule_parse_json(ok, strlen(ok), &s, err,
                                              sizeof err), 0);
    ck_assert_str_eq(s->planner, "");
    ck_assert(!s->has_predicted);
    plan_schedule_free(s);

    schedule_bad(SHDR "\"actions\": []}",
                 "budget_bytes: missing required field");
    schedule_bad(SHDR "\"budget_bytes\": -1, \"actions\": []}",
                 "budget_bytes: must be a non-negative integer, got -1");
    schedule_bad(SHDR "\"budget_bytes\": 1}",
                 "actions: missing required field");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [{\"op\": 1, "
                 "\"when\": \"during\", \"kind\": \"store\", \"storage\": "
                 "1}]}", "actions[0].when: unknown value \"during\"");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [{\"op\": 1, "
                 "\"when\": \"after\", \"kind\": \"store\", \"storage\": "
                 "1}, {\"op\": 1, \"when\": \"after\", \"kind\": \"evict\","
                 " \"storage\": 1}]}",
                 "actions[1].kind: unknown value \"evict\"");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [{\"op\": -3, "
                 "\"when\": \"after\", \"kind\": \"store\", \"storage\": "
                 "1}]}", "actions[0].op: must be an op index");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [{\"op\": 3, "
                 "\"when\": \"after\", \"kind\": \"store\"}]}",
                 "actions[0].storage: missing required field");
    schedule_bad(SHDR "\"planner\": \"a-planner-name-that-is-far-too-long\", "
                 "\"budget_bytes\": 1, \"actions\": []}",
                 "planner: longer than 31 bytes");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [], \"predicted\": "
                 "{\"peak_device_bytes\": 0, \"peak_host_bytes\": 0, "
                 "\"compute_us\": 0, \"step_time_us\": 0, \"h2d_bytes\": 0, "
                 "\"d2h_bytes\": 0}}",
                 "predicted.exposed_us: missing required field");
    schedule_bad("{\"format\": \"hyperoffload-trace\", \"version\": 1}",
                 "format: expected \"hyperoffload-schedule\", got "
                 "\"hyperoffload-trace\"");
    schedule_bad(SHDR "\"budget_bytes\": 1, \"actions\": [", "invalid JSON "
                 "at line 1");
    schedule_bad("{\"format\": \"hyperoffload-schedule\", \"version\": 3}",
                 "version: unsupported version 3");
}
END_TEST

START_TEST(files)
{
    char path[] = "/tmp/ho-test-json-XXXXXX";
    plan_trace *t = NULL, *t2 = NULL;
    char *text;
    size_t half;
    FILE *f;
    int fd, r;

    ck_assert_int_eq(plan_trace_read_json("/nonexistent/x.json", &t, err,
                                          sizeof err), -ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.json"));
    ck_assert_int_eq(plan_trace_read_file("/nonexistent/x.json", &t, err,
                                          sizeof err), -ENOENT);

    t = parse_ok(good);
    text = tu_trace_json(t);
    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    f = fdopen(fd, "w");
    ck_assert_int_eq(plan_trace_write_json(t, f), 0);
    fclose(f);
    ck_assert_int_eq(plan_trace_read_json(path, &t2, err, sizeof err), 0);
    ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(t2));
    plan_trace_free(t2);
    t2 = NULL;
    ck_assert_int_eq(plan_trace_read_file(path, &t2, err, sizeof err), 0);
    ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(t2));
    plan_trace_free(t2);
    t2 = NULL;

    /* truncated file: error with line and column, nothing returned */
    half = strlen(text) / 2;
    ck_assert_int_eq(truncate(path, (off_t)half), 0);
    r = plan_trace_read_file(path, &t2, err, sizeof err);
    ck_assert_int_eq(r, HO_E_BAD_TRACE);
    ck_assert_ptr_null(t2);
    ck_assert_ptr_nonnull(strstr(err, "invalid JSON at line"));
    ck_assert_ptr_nonnull(strstr(err, "column"));
    unlink(path);
    free(text);
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_json");
    TCase *tc = tcase_create("json");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, defaults_and_values);
    tcase_add_test(tc, malformed_trace);
    tcase_add_test(tc, id_range);
    tcase_add_test(tc, roundtrip_generated);
    tcase_add_test(tc, roundtrip_random);
    tcase_add_test(tc, names_escaped);
    tcase_add_test(tc, schedule_roundtrip);
    tcase_add_test(tc, malformed_schedule);
    tcase_add_test(tc, movable_wait_homes);
    tcase_add_test(tc, files);
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
