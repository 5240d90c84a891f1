/*
 * tests/planner/test_ir.c - the planner IR (planner/ir.c): building
 * traces, the id index, validation with messages naming the place,
 * access lists, duplicate merging, the content hash, the summary, the
 * name tables, schedules (push, bind, stable sort).
 */
#include "tests/planner/plan_test_util.h"
#include "planner/plan_impl.h"

START_TEST(test_names_and_parsers)
{
    plan_kind k;
    plan_initial i;
    plan_act_kind a;
    for (int x = 0; x < PLAN_KIND__COUNT; x++) {
        ck_assert_int_eq(plan_kind_parse(plan_kind_name((plan_kind)x), &k), 0);
        ck_assert_int_eq(k, x);
    }
    for (int x = 0; x < PLAN_INIT__COUNT; x++) {
        ck_assert_int_eq(
            plan_initial_parse(plan_initial_name((plan_initial)x), &i), 0);
        ck_assert_int_eq(i, x);
    }
    for (int x = 0; x < PLAN_ACT__COUNT; x++) {
        ck_assert_int_eq(plan_act_parse(plan_act_name((plan_act_kind)x), &a),
                         0);
        ck_assert_int_eq(a, x);
    }
    ck_assert_str_eq(plan_kind_name(PLAN_KIND_OPTIMIZER), "optimizer");
    ck_assert_str_eq(plan_initial_name(PLAN_INIT_HOST), "host");
    ck_assert_str_eq(plan_act_name(PLAN_ACT_FREE_DEVICE), "free_device");
    ck_assert_int_eq(plan_kind_parse("weights", &k), -EINVAL);
    ck_assert_int_eq(plan_initial_parse(NULL, &i), -EINVAL);
    ck_assert_int_eq(plan_act_parse("evict", &a), -EINVAL);
    ck_assert_str_eq(plan_kind_name((plan_kind)99), "?");
    ck_assert_str_eq(plan_act_name(PLAN_ACT_WAIT), "wait");
    plan_home h;
    ck_assert_int_eq(plan_home_parse("host", &h), 0);
    ck_assert_int_eq(h, PLAN_HOME_HOST);
    ck_assert_int_eq(plan_home_parse("device", &h), 0);
    ck_assert_int_eq(h, PLAN_HOME_DEVICE);
    ck_assert_int_eq(plan_home_parse("flash", &h), -EINVAL);
    ck_assert_str_eq(plan_home_name(PLAN_HOME_HOST), "host");
    ck_assert_str_eq(plan_home_name((plan_home)5), "?");
}
END_TEST

/* movable: only retained storages with initial device or host; it is
 * part of the content hash and counted by the summary. */
START_TEST(test_movable)
{
    plan_trace *t = tu_trace(NULL);
    plan_storage s = {7, 10, PLAN_KIND_KV, PLAN_INIT_DEVICE, false, false,
                      true};
    ck_assert_int_eq(plan_trace_add_storage(t, &s, NULL, tu_err,
                                            sizeof tu_err),
                     HO_E_BAD_TRACE);
    ck_assert_str_eq(tu_err, "storage id 7: movable needs retained and "
                             "initial device or host");
    s.retained = true;
    s.initial = PLAN_INIT_NONE;
    ck_assert_int_eq(plan_trace_add_storage(t, &s, NULL, NULL, 0),
                     HO_E_BAD_TRACE);
    s.initial = PLAN_INIT_HOST;
    ck_assert_int_eq(plan_trace_add_storage(t, &s, NULL, NULL, 0), 0);
    s.id = 8;
    s.initial = PLAN_INIT_DEVICE;
    ck_assert_int_eq(plan_trace_add_storage(t, &s, NULL, NULL, 0), 0);
    tu_op(t, 1, TU_R(7, 8), TU_NONE);
    tu_finish(t);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    ck_assert_uint_eq(sm.n_movable, 2);
    ck_assert_uint_eq(sm.movable_bytes, 20);
    /* the same trace without the marks hashes differently */
    plan_trace *u = tu_trace(NULL);
    tu_st(u, 7, 10, PLAN_INIT_HOST, true, false);
    tu_st(u, 8, 10, PLAN_INIT_DEVICE, true, false);
    u->storages[0].kind = u->storages[1].kind = PLAN_KIND_KV;
    tu_op(u, 1, TU_R(7, 8), TU_NONE);
    tu_finish(u);
    ck_assert_uint_ne(plan_trace_hash(t), plan_trace_hash(u));
    u->storages[0].movable = u->storages[1].movable = true;
    ck_assert_uint_eq(plan_trace_hash(t), plan_trace_hash(u));
    plan_trace_free(t);
    plan_trace_free(u);
}
END_TEST

START_TEST(test_find_and_limits)
{
    plan_trace *t = tu_trace(NULL);
    /* ids arbitrary, found by hash across growth */
    for (uint64_t id = 0; id < 5000; id++)
        ck_assert_uint_eq(tu_st(t, id * 7919 + 3, 1 + id, PLAN_INIT_NONE,
                                false, false),
                          id);
    for (uint64_t id = 0; id < 5000; id++)
        ck_assert_uint_eq(plan_trace_find(t, id * 7919 + 3), id);
    ck_assert_uint_eq(plan_trace_find(t, 4), PLAN_NONE);
    plan_storage s = {3, 10, 0, 0, false, false, false};
    ck_assert_int_eq(plan_trace_add_storage(t, &s, NULL, tu_err,
                                            sizeof tu_err),
                     HO_E_BAD_TRACE);
    ck_assert_ptr_nonnull(strstr(tu_err, "duplicate storage id 3"));
    s.id = 1;
    s.bytes = 0;
    ck_assert_int_eq(plan_trace_add_storage(t, &s, NULL, NULL, 0), -EINVAL);
    s.bytes = PLAN_MAX_STORAGE_BYTES + 1;
    ck_assert_int_eq(plan_trace_add_storage(t, &s, NULL, NULL, 0), -EINVAL);
    s.bytes = 1;
    s.kind = PLAN_KIND__COUNT;
    ck_assert_int_eq(plan_trace_add_storage(t, &s, NULL, NULL, 0), -EINVAL);
    uint32_t bad = 5000, ok = 0;
    ck_assert_int_eq(plan_trace_add_op(t, "x", 1, &bad, 1, NULL, 0, tu_err,
                                       sizeof tu_err),
                     -EINVAL);
    ck_assert_ptr_nonnull(strstr(tu_err, "out of range"));
    ck_assert_int_eq(plan_trace_add_op(t, "x", NAN, NULL, 0, &ok, 1, NULL, 0),
                     -EINVAL);
    ck_assert_int_eq(plan_trace_add_op(t, "x", -1, NULL, 0, &ok, 1, NULL, 0),
                     -EINVAL);
    char longname[PLAN_MAX_NAME + 8];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    ck_assert_int_eq(plan_trace_add_op(t, longname, 1, NULL, 0, &ok, 1, NULL,
                                       0),
                     -EINVAL);
    ck_assert_uint_eq(t->n_ops, 0);
    plan_trace_free(t);
    plan_trace_free(NULL);
}
END_TEST

/* The id index computes indices while the ids are an arithmetic
 * progression and falls back to its table when one breaks it; both find
 * every id and nothing else. */
START_TEST(test_find_affine_and_not)
{
    for (int c = 0; c < 4; c++) {
        plan_trace *t = tu_trace(NULL);
        uint64_t ids[3000];
        for (uint32_t i = 0; i < 3000; i++) {
            ids[i] = 1000 + 3ull * i;
            if (c == 1 && i == 2000)
                ids[i] = 7; /* below the base */
            if (c == 2 && i >= 1)
                ids[i] = tu_rand() >> 1;
            if (c == 3 && i == 1)
                ids[i] = 999; /* a negative stride */
            if (plan_trace_find(t, ids[i]) != PLAN_NONE) {
                ids[i] = ids[i] * 2 + 1; /* a random repeat: avoid it */
                ck_assert_uint_eq(plan_trace_find(t, ids[i]), PLAN_NONE);
            }
            ck_assert_uint_eq(tu_st(t, ids[i], 8, PLAN_INIT_NONE, false,
                                    false), i);
        }
        for (uint32_t i = 0; i < 3000; i++)
            ck_assert_uint_eq(plan_trace_find(t, ids[i]), i);
        if (c == 0) {
            ck_assert_uint_eq(plan_trace_find(t, 1001), PLAN_NONE);
            ck_assert_uint_eq(plan_trace_find(t, 997), PLAN_NONE);
            ck_assert_uint_eq(plan_trace_find(t, 1000 + 3ull * 3000),
                              PLAN_NONE);
        }
        plan_storage dup = {ids[1500], 1, 0, 0, false, false, false};
        ck_assert_int_eq(plan_trace_add_storage(t, &dup, NULL, NULL, 0),
                         HO_E_BAD_TRACE);
        plan_trace_free(t);
    }
}
END_TEST

START_TEST(test_finish_validation_messages)
{
    plan_trace *t = tu_trace(NULL);
    ck_assert_int_eq(plan_trace_finish(t, tu_err, sizeof tu_err),
                     HO_E_BAD_TRACE);
    ck_assert_ptr_nonnull(strstr(tu_err, "no ops"));
    tu_st(t, 7, 10, PLAN_INIT_NONE, false, false);
    tu_st(t, 8, 10, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(7));
    tu_op(t, 1, TU_R(7, 8), TU_NONE); /* 8 never written */
    ck_assert_int_eq(plan_trace_finish(t, tu_err, sizeof tu_err),
                     HO_E_BAD_TRACE);
    ck_assert_ptr_nonnull(strstr(tu_err, "ops[1] 'op1'"));
    ck_assert_ptr_nonnull(strstr(tu_err, "storage id 8"));
    ck_assert(!t->finished);
    plan_trace_free(t);

    /* read and written by the same op without an earlier write */
    t = tu_trace(NULL);
    tu_st(t, 1, 10, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_R(1), TU_R(1));
    ck_assert_int_eq(plan_trace_finish(t, tu_err, sizeof tu_err),
                     HO_E_BAD_TRACE);
    plan_trace_free(t);

    /* retained data nobody creates */
    t = tu_trace(NULL);
    tu_st(t, 1, 10, PLAN_INIT_NONE, true, false);
    tu_op(t, 1, TU_NONE, TU_NONE);
    ck_assert_int_eq(plan_trace_finish(t, tu_err, sizeof tu_err),
                     HO_E_BAD_TRACE);
    ck_assert_ptr_nonnull(strstr(tu_err, "storage id 1"));
    plan_trace_free(t);

    /* a bad link */
    plan_link l = {0, 1, 0, true};
    t = tu_trace(&l);
    tu_st(t, 1, 10, PLAN_INIT_DEVICE, false, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    ck_assert_int_eq(plan_trace_finish(t, tu_err, sizeof tu_err),
                     HO_E_BAD_TRACE);
    ck_assert_ptr_nonnull(strstr(tu_err, "h2d_gbps"));
    plan_trace_free(t);
}
END_TEST

START_TEST(test_access_lists_and_dedup)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 10, 100, PLAN_INIT_DEVICE, false, false);
    tu_st(t, 20, 200, PLAN_INIT_NONE, false, false);
    tu_st(t, 30, 300, PLAN_INIT_HOST, false, false); /* never used */
    tu_op(t, 1, TU_R(10, 10), TU_R(20, 20));     /* duplicates */
    tu_op(t, 1, TU_R(20, 10), TU_R(10));          /* read and write */
    tu_op(t, 1, TU_R(20), TU_NONE);
    tu_finish(t);
    ck_assert_uint_eq(t->ops[0].n_reads, 1);
    ck_assert_uint_eq(t->ops[0].n_writes, 1);
    ck_assert_uint_eq(t->n_refs, 2 + 3 + 1);
    uint32_t s10 = plan_trace_find(t, 10), s20 = plan_trace_find(t, 20);
    uint32_t s30 = plan_trace_find(t, 30);
    ck_assert_uint_eq(t->acc_start[s10 + 1] - t->acc_start[s10], 2);
    const plan_access *a = t->acc + t->acc_start[s10];
    ck_assert_uint_eq(a[0].op, 0);
    ck_assert_uint_eq(a[0].flags, PLAN_ACC_READ);
    ck_assert_uint_eq(a[1].op, 1);
    ck_assert_uint_eq(a[1].flags, PLAN_ACC_READ | PLAN_ACC_WRITE);
    ck_assert_uint_eq(t->acc_start[s20 + 1] - t->acc_start[s20], 3);
    ck_assert_uint_eq(t->acc[t->acc_start[s20]].flags, PLAN_ACC_WRITE);
    ck_assert_uint_eq(t->acc_start[s30 + 1], t->acc_start[s30]);
    /* finish is idempotent; adding after finish is refused */
    ck_assert_int_eq(plan_trace_finish(t, NULL, 0), 0);
    plan_storage s = {99, 1, 0, 0, false, false, false};
    ck_assert_int_eq(plan_trace_add_storage(t, &s, NULL, NULL, 0),
                     HO_E_STATE);
    ck_assert_str_eq(plan_op_name(t, 2), "op2");
    plan_trace_free(t);
}
END_TEST

/* Ops that touch nothing: the trace has no refs at all (t->refs NULL
 * until finish).  Finishing, summing a working set and simulating it
 * must not do pointer arithmetic on NULL (issue 10; clang's UBSan reports
 * "applying zero offset to null pointer" in planner/ir.c and
 * planner/simulate.c before the fix; the clang build of tests/fuzz runs
 * this trace too, corpus/frame/hello-plan-ops-without-refs). */
START_TEST(test_ops_without_refs)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 4096, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_op(t, 2, TU_NONE, TU_NONE);
    ck_assert_ptr_null(t->refs);
    tu_finish(t);
    ck_assert_uint_eq(t->n_refs, 0);
    ck_assert_ptr_nonnull(t->refs);
    uint32_t mark[1] = {PLAN_NONE};
    ck_assert_uint_eq(plan_op_working_set(t, 1, mark), 0);
    /* The empty schedule runs it: nothing to move. */
    plan_metrics m;
    plan_violation v;
    plan_schedule *empty = tu_sched(1ull << 30);
    ck_assert_int_eq(tu_sim(t, empty, &m, &v), 0);
    ck_assert_uint_eq(m.peak_device_bytes, 0); /* on the host, untouched */
    plan_trace_free(t);
    plan_schedule_free(empty);
}
END_TEST

static plan_trace *hash_trace(const char *name, double d, uint64_t bytes)
{
    plan_trace *t = plan_trace_new(name, &tu_link_fast);
    tu_st(t, 1, bytes, PLAN_INIT_NONE, false, false);
    tu_op(t, d, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    return t;
}

START_TEST(test_hash)
{
    plan_trace *a = hash_trace("a", 1.5, 100), *b = hash_trace("b", 1.5, 100);
    plan_trace *c = hash_trace("a", 1.25, 100), *d = hash_trace("a", 1.5, 101);
    ck_assert_uint_eq(plan_trace_hash(a), plan_trace_hash(b)); /* not name */
    ck_assert_uint_ne(plan_trace_hash(a), plan_trace_hash(c));
    ck_assert_uint_ne(plan_trace_hash(a), plan_trace_hash(d));
    plan_trace_free(a);
    plan_trace_free(b);
    plan_trace_free(c);
    plan_trace_free(d);
}
END_TEST

START_TEST(test_summary)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 100, PLAN_INIT_DEVICE, true, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 3, 50, PLAN_INIT_HOST, true, false);
    tu_op(t, 2, TU_R(1), TU_R(2));
    tu_op(t, 3, TU_R(2, 3), TU_R(3));
    tu_op(t, 4, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(t, &sm), 0);
    ck_assert_uint_eq(sm.n_ops, 3);
    ck_assert_uint_eq(sm.n_storages, 3);
    ck_assert_uint_eq(sm.total_bytes, 1150);
    ck_assert_uint_eq(sm.bytes_by_kind[PLAN_KIND_ACTIVATION], 1150);
    ck_assert_uint_eq(sm.count_by_kind[PLAN_KIND_ACTIVATION], 3);
    ck_assert(tu_close(sm.compute_us, 9));
    /* op0 needs 1 and 2 (1100), op1 2 and 3 (1050); 1 is resident all
     * along: peak 1150 during op1 */
    ck_assert_uint_eq(sm.max_op_working_set, 1100);
    ck_assert_uint_eq(sm.max_op_working_set_op, 0);
    ck_assert_uint_eq(sm.no_offload_peak, 1150);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_schedule_push_bind_sort)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 11, 10, PLAN_INIT_NONE, false, false);
    tu_st(t, 12, 10, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(11, 12));
    tu_op(t, 1, TU_R(11, 12), TU_NONE);
    tu_finish(t);
    plan_schedule *s = plan_schedule_new("a-planner-name-that-is-far-too-"
                                         "long-to-keep",
                                         77);
    ck_assert_uint_eq(strlen(s->planner), sizeof(s->planner) - 1);
    ck_assert_uint_eq(s->budget_bytes, 77);
    /* listed out of point order; same point keeps list order */
    tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_PREFETCH, 12);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 12);
    tu_act(s, 1, PLAN_BEFORE, PLAN_ACT_PREFETCH, 11);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 12);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 11);
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 11);
    ck_assert_uint_eq(s->actions[0].storage, PLAN_NONE);
    ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err), 0);
    static const struct {
        uint32_t op;
        uint8_t when, kind;
        uint64_t id;
    } want[] = {
        {0, PLAN_AFTER, PLAN_ACT_STORE, 12},
        {0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 12},
        {0, PLAN_AFTER, PLAN_ACT_STORE, 11},
        {0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 11},
        {1, PLAN_BEFORE, PLAN_ACT_PREFETCH, 12},
        {1, PLAN_BEFORE, PLAN_ACT_PREFETCH, 11},
    };
    for (size_t i = 0; i < 6; i++) {
        ck_assert_uint_eq(s->actions[i].op, want[i].op);
        ck_assert_uint_eq(s->actions[i].when, want[i].when);
        ck_assert_uint_eq(s->actions[i].kind, want[i].kind);
        ck_assert_uint_eq(s->actions[i].storage_id, want[i].id);
        ck_assert_uint_eq(s->actions[i].storage,
                          plan_trace_find(t, want[i].id));
    }
    plan_metrics m;
    plan_violation v;
    s->budget_bytes = UINT64_MAX;
    ck_assert_int_eq(plan_simulate(t, s, &m, &v, NULL), 0);
    /* unknown id and op out of range are named */
    tu_act(s, 0, PLAN_AFTER, PLAN_ACT_STORE, 99);
    ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err),
                     HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(tu_err, "actions[6]"));
    ck_assert_ptr_nonnull(strstr(tu_err, "99"));
    s->actions[6].storage_id = 11;
    s->actions[6].op = 2;
    ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err),
                     HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(tu_err, "out of range"));
    ck_assert_int_eq(plan_schedule_push(s, t, 0, PLAN_AFTER, PLAN_ACT_STORE,
                                        5),
                     -EINVAL);
    plan_schedule_free(s);
    plan_schedule_free(NULL);
    plan_trace_free(t);
}
END_TEST

START_TEST(test_large_sort_stable)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 10, PLAN_INIT_DEVICE, true, false);
    for (int i = 0; i < 300; i++)
        tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    plan_schedule *s = tu_sched(UINT64_MAX);
    /* 3000 actions in reverse op order, 10 per point tagged by kind */
    for (int op = 299; op >= 0; op--)
        for (int k = 0; k < 10; k++)
            tu_act(s, (uint32_t)op, (plan_when)(k & 1),
                   (plan_act_kind)(k % 4), 1);
    ck_assert_int_eq(plan_schedule_bind(s, t, tu_err, sizeof tu_err), 0);
    for (size_t i = 1; i < s->n_actions; i++) {
        const plan_action *a = &s->actions[i - 1], *b = &s->actions[i];
        ck_assert(a->op < b->op || (a->op == b->op && a->when <= b->when));
    }
    /* within a point the list order is kept: kinds 0,2,0 before, 1,3,1 ... */
    ck_assert_uint_eq(s->actions[0].kind, 0);
    ck_assert_uint_eq(s->actions[1].kind, 2);
    ck_assert_uint_eq(s->actions[2].kind, 0);
    ck_assert_uint_eq(s->actions[5].kind, 1);
    ck_assert_uint_eq(s->actions[6].kind, 3);
    plan_schedule_free(s);
    plan_trace_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("planner_ir");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_names_and_parsers);
    tcase_add_test(tc, test_find_and_limits);
    tcase_add_test(tc, test_movable);
    tcase_add_test(tc, test_find_affine_and_not);
    tcase_add_test(tc, test_finish_validation_messages);
    tcase_add_test(tc, test_access_lists_and_dedup);
    tcase_add_test(tc, test_ops_without_refs);
    tcase_add_test(tc, test_hash);
    tcase_add_test(tc, test_summary);
    tcase_add_test(tc, test_schedule_push_bind_sort);
    tcase_add_test(tc, test_large_sort_stable);
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
