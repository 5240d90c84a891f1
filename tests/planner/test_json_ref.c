/*
 * tests/planner/test_json_ref.c - the streaming JSON readers
 * (planner/io/plan_json.c on json_lex.c) against a reference reader built
 * here the plain way: jansson's tree (the reader the streaming one
 * replaced), then the IR's own API.  On generated traces (training with
 * movable parameters and optimizer state, decode with a movable KV cache,
 * random ones with movable storages) and schedules with waits and homes,
 * both give the same trace (plan_trace_hash, name) and the same schedule,
 * also when the document is laid out differently (compact, indented, keys
 * sorted, ops before storages) -- the streaming reader must not depend on
 * the layout our writer happens to use.  A syntax error anywhere in a
 * large document is reported at the byte that breaks it: the line and
 * column jansson names (ours counts columns from 0, jansson from 1).  The
 * ops' fast path (an op as our writer prints it, read without tokens)
 * answers as the general reader does, at its edges too.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hyperoffload/errors.h"
#include "planner/gen/gen.h"
#include "planner/io/plan_io.h"
#include "planner/plan.h"
#include "tests/planner/plan_test_util.h"

static char err[512];

/* ------------------------------------------------------------ reference */

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    ck_assert_msg(json_is_number(v), "%s: not a number", k);
    return json_number_value(v);
}

static uint64_t uint_of(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    ck_assert_msg(json_is_integer(v), "%s: not an integer", k);
    return (uint64_t)json_integer_value(v);
}

static bool flag(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return v && json_is_true(v); /* optional, default false */
}

static const char *str(json_t *o, const char *k, const char *dflt)
{
    json_t *v = json_object_get(o, k);
    if (!v)
        return dflt;
    ck_assert_msg(json_is_string(v), "%s: not a string", k);
    return json_string_value(v);
}

/* The ids of an op's reads or writes as storage indices. */
static uint32_t refs_of(const plan_trace *t, json_t *op, const char *k,
                        uint32_t *idx)
{
    json_t *a = json_object_get(op, k);
    if (!a)
        return 0;
    size_t n = json_array_size(a);
    ck_assert_uint_le(n, PLAN_MAX_OP_REFS);
    for (size_t j = 0; j < n; j++) {
        uint64_t id = (uint64_t)json_integer_value(json_array_get(a, j));
        idx[j] = plan_trace_find(t, id);
        ck_assert_uint_ne(idx[j], PLAN_NONE);
    }
    return (uint32_t)n;
}

static plan_trace *ref_trace(json_t *root)
{
    json_t *l = json_object_get(root, "link");
    plan_link link = {.h2d_gbps = num(l, "h2d_gbps"),
                      .d2h_gbps = num(l, "d2h_gbps"),
                      .latency_us = num(l, "latency_us"),
                      .duplex = json_is_true(json_object_get(l, "duplex"))};
    plan_trace *t = plan_trace_new(str(root, "name", ""), &link);
    ck_assert_ptr_nonnull(t);
    json_t *sa = json_object_get(root, "storages");
    for (size_t i = 0; i < json_array_size(sa); i++) {
        json_t *o = json_array_get(sa, i);
        plan_kind kind = PLAN_KIND_OTHER;
        plan_initial init = PLAN_INIT_NONE;
        ck_assert_int_eq(plan_kind_parse(str(o, "kind", "other"), &kind), 0);
        ck_assert_int_eq(plan_initial_parse(str(o, "initial", "none"), &init),
                         0);
        plan_storage s = {.id = uint_of(o, "id"), .bytes = uint_of(o, "bytes"),
                          .kind = (uint8_t)kind, .initial = (uint8_t)init,
                          .retained = flag(o, "retained"),
                          .pinned = flag(o, "pinned"),
                          .movable = flag(o, "movable")};
        ck_assert_msg(plan_trace_add_storage(t, &s, NULL, err, sizeof err) ==
                      0, "%s", err);
    }
    json_t *oa = json_object_get(root, "ops");
    uint32_t *idx = malloc(sizeof(uint32_t) * 2 * PLAN_MAX_OP_REFS);
    ck_assert_ptr_nonnull(idx);
    for (size_t i = 0; i < json_array_size(oa); i++) {
        json_t *o = json_array_get(oa, i);
        uint32_t nr = refs_of(t, o, "reads", idx);
        uint32_t nw = refs_of(t, o, "writes", idx + nr);
        ck_assert_int_eq(plan_trace_add_op(t, str(o, "name", ""),
                                           num(o, "duration_us"), idx, nr,
                                           idx + nr, nw, err, sizeof err), 0);
    }
    free(idx);
    ck_assert_msg(plan_trace_finish(t, err, sizeof err) == 0, "%s", err);
    return t;
}

static plan_schedule *ref_schedule(json_t *root)
{
    plan_schedule *s = plan_schedule_new(str(root, "planner", ""),
                                         uint_of(root, "budget_bytes"));
    ck_assert_ptr_nonnull(s);
    json_t *aa = json_object_get(root, "actions");
    for (size_t i = 0; i < json_array_size(aa); i++) {
        json_t *a = json_array_get(aa, i);
        plan_act_kind kind;
        ck_assert_int_eq(plan_act_parse(str(a, "kind", ""), &kind), 0);
        const char *w = str(a, "when", "");
        ck_assert(!strcmp(w, "before") || !strcmp(w, "after"));
        ck_assert_int_eq(plan_schedule_push_id(s, (uint32_t)uint_of(a, "op"),
                                               strcmp(w, "before") == 0
                                                   ? PLAN_BEFORE
                                                   : PLAN_AFTER,
                                               kind, uint_of(a, "storage")),
                         0);
    }
    json_t *ha = json_object_get(root, "homes");
    for (size_t i = 0; i < json_array_size(ha); i++) {
        json_t *h = json_array_get(ha, i);
        plan_home home;
        ck_assert_int_eq(plan_home_parse(str(h, "home", ""), &home), 0);
        ck_assert_int_eq(plan_schedule_push_home_id(s, uint_of(h, "storage"),
                                                    home), 0);
    }
    return s;
}

/* ------------------------------------------------------------ layouts */

/* The same document with its top-level keys in reverse order (ops
 * before storages, link after them). */
static json_t *reversed(json_t *root)
{
    const char *keys[32];
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        ck_assert_uint_lt(n, 32);
        keys[n++] = k;
    }
    json_t *r = json_object();
    while (n--)
        json_object_set(r, keys[n], json_object_get(root, keys[n]));
    return r;
}

/* Every layout of `text`: itself, compact, indented with keys sorted,
 * keys reversed.  Each malloc'ed, NULL-terminated list. */
static void layouts(const char *text, char **out)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    ck_assert_msg(root, "jansson: %s", je.text);
    json_t *rev = reversed(root);
    out[0] = strdup(text);
    out[1] = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
    out[2] = json_dumps(root, JSON_INDENT(5) | JSON_SORT_KEYS |
                                  JSON_REAL_PRECISION(17));
    out[3] = json_dumps(rev, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    out[4] = NULL;
    for (int i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(out[i]);
    json_decref(rev);
    json_decref(root);
}

static void same_as_reference(const plan_trace *orig)
{
    char *text = tu_trace_json(orig);
    char *docs[5];
    layouts(text, docs);
    for (int d = 0; docs[d]; d++) {
        plan_trace *t = NULL;
        int r = plan_trace_parse_json(docs[d], strlen(docs[d]), &t, err,
                                      sizeof err);
        ck_assert_msg(r == 0, "layout %d: %s", d, err);
        json_error_t je;
        json_t *root = json_loads(docs[d], JSON_REJECT_DUPLICATES, &je);
        ck_assert_ptr_nonnull(root);
        plan_trace *ref = ref_trace(root);
        json_decref(root);
        ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(ref));
        ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(orig));
        ck_assert_str_eq(t->name, ref->name);
        ck_assert_uint_eq(t->n_refs, ref->n_refs);
        plan_trace_free(ref);
        plan_trace_free(t);
        free(docs[d]);
    }
    free(text);
}

START_TEST(traces_as_reference)
{
    plan_gen_train_cfg c;
    memset(&c, 0, sizeof c);
    c.model = *plan_model_find("qwen2.5-0.5b");
    c.device = *plan_device_find("910b");
    c.seq = 256;
    c.micro_batch = 1;
    c.n_micro = 2;
    c.dtype_bytes = 2;
    c.optimizer_step = true;
    c.params_movable = true;
    c.optimizer_movable = true;
    plan_trace *t = NULL;
    ck_assert_int_eq(plan_gen_train(&c, &t, err, sizeof err), 0);
    uint32_t movable = 0;
    for (uint32_t i = 0; i < t->n_storages; i++)
        movable += t->storages[i].movable;
    ck_assert_uint_gt(movable, 0);
    same_as_reference(t);
    plan_trace_free(t);

    plan_gen_decode_cfg d;
    memset(&d, 0, sizeof d);
    d.model = *plan_model_find("llama3-8b");
    d.device = *plan_device_find("h200");
    d.prompt = 300;
    d.tokens = 3;
    d.batch = 2;
    d.dtype_bytes = 2;
    d.kv_block = 128;
    ck_assert_int_eq(plan_gen_decode(&d, &t, err, sizeof err), 0);
    same_as_reference(t);
    plan_trace_free(t);

    unsigned n = tu_iters(6);
    for (uint64_t seed = 1; seed <= n; seed++) {
        plan_gen_random_cfg rc = {.seed = seed, .n_ops = 400,
                                  .n_storages = 150, .max_refs_per_op = 6,
                                  .p_initial_device = 0.2,
                                  .p_initial_host = 0.2, .p_retained = 0.3,
                                  .p_pinned = 0.05, .p_movable = 0.5};
        ck_assert_int_eq(plan_gen_random(&rc, &t, err, sizeof err), 0);
        t->ops[1].duration_us = 1.0 / 3.0;
        t->link.latency_us = 2.0 / 7.0;
        same_as_reference(t);
        plan_trace_free(t);
    }
}
END_TEST

START_TEST(schedules_as_reference)
{
    plan_gen_random_cfg rc = {.seed = 5, .n_ops = 200, .n_storages = 80,
                              .max_refs_per_op = 4, .p_initial_device = 0.3,
                              .p_initial_host = 0.2, .p_retained = 0.4,
                              .p_movable = 0.6};
    plan_trace *t = NULL;
    ck_assert_int_eq(plan_gen_random(&rc, &t, err, sizeof err), 0);
    plan_schedule *s = plan_schedule_new("hand", 123456789);
    const plan_act_kind kinds[] = {PLAN_ACT_PREFETCH, PLAN_ACT_STORE,
                                   PLAN_ACT_FREE_DEVICE, PLAN_ACT_FREE_HOST,
                                   PLAN_ACT_WAIT};
    for (uint32_t k = 0; k < 500; k++)
        tu_act(s, (uint32_t)(tu_rand() % t->n_ops),
               tu_rand() % 2 ? PLAN_BEFORE : PLAN_AFTER, kinds[k % 5],
               t->storages[tu_rand() % t->n_storages].id);
    size_t homes = 0;
    for (uint32_t i = 0; i < t->n_storages; i++)
        if (t->storages[i].movable) {
            ck_assert_int_eq(plan_schedule_set_home(s, t, i, i % 2
                                                        ? PLAN_HOME_HOST
                                                        : PLAN_HOME_DEVICE),
                             0);
            homes++;
        }
    ck_assert_uint_gt(homes, 2);
    s->has_predicted = true;
    s->predicted.exposed_us = 1.0 / 7.0;
    char *text = tu_schedule_json(s);
    char *docs[5];
    layouts(text, docs);
    for (int d = 0; docs[d]; d++) {
        plan_schedule *got = NULL;
        int r = plan_schedule_parse_json(docs[d], strlen(docs[d]), &got, err,
                                         sizeof err);
        ck_assert_msg(r == 0, "layout %d: %s", d, err);
        json_error_t je;
        json_t *root = json_loads(docs[d], JSON_REJECT_DUPLICATES, &je);
        plan_schedule *ref = ref_schedule(root);
        json_decref(root);
        ck_assert_str_eq(got->planner, ref->planner);
        ck_assert_uint_eq(got->budget_bytes, ref->budget_bytes);
        ck_assert_uint_eq(got->n_actions, ref->n_actions);
        ck_assert_uint_eq(got->n_actions, s->n_actions);
        for (size_t k = 0; k < got->n_actions; k++) {
            ck_assert_uint_eq(got->actions[k].op, ref->actions[k].op);
            ck_assert_uint_eq(got->actions[k].when, ref->actions[k].when);
            ck_assert_uint_eq(got->actions[k].kind, ref->actions[k].kind);
            ck_assert_uint_eq(got->actions[k].storage_id,
                              ref->actions[k].storage_id);
        }
        ck_assert_uint_eq(got->n_homes, homes);
        ck_assert_uint_eq(got->n_homes, ref->n_homes);
        for (size_t k = 0; k < got->n_homes; k++) {
            ck_assert_uint_eq(got->homes[k].storage_id,
                              ref->homes[k].storage_id);
            ck_assert_uint_eq(got->homes[k].home, ref->homes[k].home);
        }
        ck_assert(got->has_predicted);
        ck_assert_double_eq(got->predicted.exposed_us, 1.0 / 7.0);
        plan_schedule_free(ref);
        plan_schedule_free(got);
        free(docs[d]);
    }
    free(text);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* --------------------------------------------------------- positions */

/* Break the document at byte `at` with `bad` and compare the position
 * both readers name. */
static void position_as_jansson(const char *text, size_t at, char bad,
                                bool schedule)
{
    size_t len = strlen(text);
    char *b = strdup(text);
    ck_assert_ptr_nonnull(b);
    b[at] = bad;
    json_error_t je;
    json_t *root = json_loadb(b, len, JSON_REJECT_DUPLICATES, &je);
    ck_assert_msg(root == NULL, "jansson accepts the broken document");
    int r;
    if (schedule) {
        plan_schedule *s = NULL;
        r = plan_schedule_parse_json(b, len, &s, err, sizeof err);
        ck_assert_ptr_null(s);
    } else {
        plan_trace *t = NULL;
        r = plan_trace_parse_json(b, len, &t, err, sizeof err);
        ck_assert_ptr_null(t);
    }
    ck_assert_int_eq(r, schedule ? HO_E_BAD_SCHEDULE : HO_E_BAD_TRACE);
    /* The byte we broke: its line (1-based) and column (0-based, as ours
     * counts; jansson counts columns from 1). */
    int line = 1, col = 0;
    for (size_t i = 0; i < at; i++) {
        col++;
        if (text[i] == '\n') {
            line++;
            col = 0;
        }
    }
    char want[64];
    snprintf(want, sizeof want, "invalid JSON at line %d, column %d:", line,
             col);
    ck_assert_msg(strstr(err, want) != NULL, "byte %zu ('%c'): want %s, "
                  "ours: %s", at, bad, want, err);
    ck_assert_msg(je.line == line && je.column == col + 1, "byte %zu ('%c'): "
                  "jansson at line %d, column %d (%s), ours: %s", at, bad,
                  je.line, je.column, je.text, err);
    free(b);
}

START_TEST(positions_as_jansson)
{
    plan_gen_random_cfg rc = {.seed = 3, .n_ops = 3000, .n_storages = 700,
                              .max_refs_per_op = 5, .p_initial_device = 0.2,
                              .p_initial_host = 0.1, .p_retained = 0.2,
                              .p_movable = 0.3};
    plan_trace *t = NULL;
    ck_assert_int_eq(plan_gen_random(&rc, &t, err, sizeof err), 0);
    char *text = tu_trace_json(t);
    size_t len = strlen(text);
    /* Structural bytes deep inside the document: a ':' becomes ';', a ','
     * becomes ':', a '[' becomes '(' -- each a syntax error right there. */
    const char from[] = ":,[", to[] = ";:(";
    unsigned n = tu_iters(60), done = 0;
    while (done < n) {
        size_t at = (size_t)(tu_rand() % len);
        const char *f = memchr(from, text[at], 3);
        if (!f || !text[at])
            continue;
        position_as_jansson(text, at, to[f - from], false);
        done++;
    }
    free(text);

    plan_schedule *s = plan_schedule_new("hand", 1000);
    for (uint32_t k = 0; k < 400; k++)
        tu_act(s, k % t->n_ops, k % 2 ? PLAN_AFTER : PLAN_BEFORE,
               k % 3 ? PLAN_ACT_WAIT : PLAN_ACT_STORE,
               t->storages[k % t->n_storages].id);
    text = tu_schedule_json(s);
    len = strlen(text);
    done = 0;
    while (done < n) {
        size_t at = (size_t)(tu_rand() % len);
        const char *f = memchr(from, text[at], 3);
        if (!f || !text[at])
            continue;
        position_as_jansson(text, at, to[f - from], true);
        done++;
    }
    free(text);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

/* ------------------------------------------------------- fast path */

/* The trace text with the line of ops[k] replaced by `line` (its comma
 * kept).  malloc'ed. */
static char *with_op_line(const char *text, uint32_t k, const char *line)
{
    const char *ops = strstr(text, "\"ops\": [\n");
    ck_assert_ptr_nonnull(ops);
    const char *p = strchr(ops, '\n') + 1;
    for (uint32_t i = 0; i < k; i++)
        p = strchr(p, '\n') + 1;
    const char *e = strchr(p, '\n');
    bool comma = e[-1] == ',';
    size_t n = strlen(text) + strlen(line) + 8;
    char *out = malloc(n);
    ck_assert_ptr_nonnull(out);
    snprintf(out, n, "%.*s    %s%s%s", (int)(p - text), text, line,
             comma ? "," : "", e);
    return out;
}

/* Our layout (the ops' fast path) and a compact one (the general reader
 * only) of the same document give the same answer: the same trace, or
 * the same error sentence. */
static void fast_as_general(const char *text)
{
    char e1[512] = "", e2[512] = "";
    plan_trace *t1 = NULL, *t2 = NULL;
    int r1 = plan_trace_parse_json(text, strlen(text), &t1, e1, sizeof e1);
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    ck_assert_msg(root, "not JSON: %s", je.text);
    char *compact = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(root);
    int r2 = plan_trace_parse_json(compact, strlen(compact), &t2, e2,
                                   sizeof e2);
    ck_assert_msg(r1 == r2 && strcmp(e1, e2) == 0, "fast path: %d %s; "
                  "general: %d %s", r1, e1, r2, e2);
    if (r1 == 0)
        ck_assert_uint_eq(plan_trace_hash(t1), plan_trace_hash(t2));
    plan_trace_free(t1);
    plan_trace_free(t2);
    free(compact);
}

START_TEST(fast_path_edges)
{
    plan_gen_random_cfg rc = {.seed = 11, .n_ops = 40, .n_storages = 12,
                              .max_refs_per_op = 3, .p_initial_device = 0.5,
                              .p_initial_host = 0.3, .p_retained = 0.2};
    plan_trace *t = NULL;
    ck_assert_int_eq(plan_gen_random(&rc, &t, err, sizeof err), 0);
    char *text = tu_trace_json(t);
    char id0[32], id1[32];
    /* storages that start with data: any op may read them */
    uint32_t a = PLAN_NONE, b = PLAN_NONE;
    for (uint32_t i = 0; i < t->n_storages; i++)
        if (t->storages[i].initial != PLAN_INIT_NONE)
            a == PLAN_NONE ? (void)(a = i) : (void)(b = b == PLAN_NONE ? i : b);
    ck_assert(a != PLAN_NONE && b != PLAN_NONE);
    snprintf(id0, sizeof id0, "%llu", (unsigned long long)t->storages[a].id);
    snprintf(id1, sizeof id1, "%llu", (unsigned long long)t->storages[b].id);
    char longname[300];
    memset(longname, 'n', sizeof longname);
    const char *fmt[] = {
        /* accepted by both paths */
        "{\"name\": \"x\", \"duration_us\": 0, \"reads\": [%s], "
        "\"writes\": [%s]}",
        "{\"name\": \"\", \"duration_us\": 0.125, \"reads\": [%s, %s], "
        "\"writes\": []}",
        "{\"name\": \"caf\\u00e9\", \"duration_us\": 1e3, \"reads\": "
        "[%s], \"writes\": [%s]}",
        "{\"name\": \"caf\xc3\xa9\", \"duration_us\": 0.12345678901234567, "
        "\"reads\": [%s], \"writes\": [%s]}",
        "{\"name\": \"d\", \"duration_us\": 7, \"reads\": [%s, %s], "
        "\"writes\": [%s, %s]}",
        "{\"duration_us\": 7, \"name\": \"swapped\", \"reads\": [%s], "
        "\"writes\": [%s]}",
        "{\"name\": \"w\", \"duration_us\": 7, \"reads\": [%s],  "
        "\"writes\": [%s]}",
        /* refused by both, with one sentence */
        "{\"name\": \"u\", \"duration_us\": 1, \"reads\": [987654321], "
        "\"writes\": [%s]}",
        "{\"name\": \"v\", \"duration_us\": -1, \"reads\": [%s], "
        "\"writes\": [%s]}",
        "{\"name\": \"v\", \"duration_us\": 1e300, \"reads\": [%s], "
        "\"writes\": [%s]}",
        "{\"name\": \"i\", \"duration_us\": 1, \"reads\": "
        "[999999999999999999], \"writes\": [%s]}",
        "{\"name\": \"k\", \"duration_us\": 1, \"reads\": [%s], "
        "\"writes\": [%s], \"extra\": 1}",
        "{\"name\": \"s\", \"duration_us\": \"1\", \"reads\": [%s], "
        "\"writes\": [%s]}",
    };
    for (size_t f = 0; f < sizeof fmt / sizeof fmt[0]; f++) {
        char line[600];
        snprintf(line, sizeof line, fmt[f], id0, id1, id0, id1);
        for (uint32_t k = 0; k < t->n_ops; k += 13) {
            char *doc = with_op_line(text, k, line);
            fast_as_general(doc);
            free(doc);
        }
    }
    /* names at the limit and one byte over */
    for (size_t n = PLAN_FMT_MAX_NAME; n <= PLAN_FMT_MAX_NAME + 1; n++) {
        char line[700];
        snprintf(line, sizeof line, "{\"name\": \"%.*s\", \"duration_us\": 1, "
                 "\"reads\": [%s], \"writes\": []}", (int)n, longname, id0);
        char *doc = with_op_line(text, 3, line);
        fast_as_general(doc);
        free(doc);
    }
    fast_as_general(text);
    free(text);
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("json_ref");
    TCase *tc = tcase_create("ref");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, traces_as_reference);
    tcase_add_test(tc, schedules_as_reference);
    tcase_add_test(tc, positions_as_jansson);
    tcase_add_test(tc, fast_path_edges);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
