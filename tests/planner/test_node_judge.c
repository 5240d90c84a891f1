/*
 * tests/planner/test_node_judge.c - the node judge (planner/node/) on
 * small workloads computed by hand: shared links, weights, duplex false,
 * memory back-pressure, a device shared by two clients, sync groups, an
 * invalid workload.
 *
 * Unless said otherwise: every figure is 1 GB/s = 1000 B/us, latency 0,
 * so a copy of b bytes alone takes b / 1000 us; the root link "host" is
 * wide (100 GB/s) and never binds.
 */
#include "tests/planner/node_test_util.h"

/* Storage 1 (1000 B, initial host) prefetched before op0, which reads it
 * for 1 us.  Alone: copy 0..1, op 1..2. */
static plan_trace *prefetch_trace(uint64_t bytes, plan_schedule **ret_s)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, bytes, PLAN_INIT_HOST, false, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_finish(t);
    *ret_s = tu_sched(bytes);
    tu_act(*ret_s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    return t;
}

/* host (100) -> sw (1 GB/s, duplex as given) -> dev0, dev1 (1 GB/s). */
static plan_node *switch_node(bool sw_duplex, double sw_h2d, double sw_d2h)
{
    plan_node *n = plan_node_new();
    ck_assert_ptr_nonnull(n);
    nu_link(n, "host", NULL, 100, 100, true);
    nu_link(n, "sw", "host", sw_h2d, sw_d2h, sw_duplex);
    nu_dev(n, 0, "sw", 1000000, 1, 1, 0, true);
    nu_dev(n, 1, "sw", 1000000, 1, 1, 0, true);
    nu_finish(n);
    return n;
}

START_TEST(test_shared_link_halves_rates)
{
    plan_node *n = switch_node(true, 1, 1);
    plan_schedule *s0, *s1;
    plan_trace *t0 = prefetch_trace(1000, &s0);
    plan_trace *t1 = prefetch_trace(1000, &s1);
    plan_node_input in[2] = {nu_in("a", t0, s0, 0, 1000, 1, PLAN_NONE),
                             nu_in("b", t1, s1, 1, 1000, 1, PLAN_NONE)};

    /* Alone: 2 us a step. */
    plan_node_result *r = nu_judge(n, in, 1, 3);
    NU_EQ(r->clients[0].step_time_us, 2);
    NU_EQ(r->clients[0].exposed_us, 1);
    plan_node_result_free(r);

    /* Together: each copy at 500 B/us, 0..2; op 2..3. */
    r = nu_judge(n, in, 2, 3);
    for (int i = 0; i < 2; i++) {
        const plan_node_client_fig *f = &r->clients[i];
        NU_EQ(f->step_time_us, 3);
        NU_EQ(f->exposed_us, 2);
        NU_EQ(f->compute_us, 1);
        NU_EQ(f->alloc_wait_us, 0);
        NU_EQ(f->start_us, 6); /* third step */
        NU_EQ(f->slowdown, 3);
        ck_assert_uint_eq(f->h2d_bytes, 1000);
        ck_assert_uint_eq(f->d2h_bytes, 0);
        ck_assert_uint_eq(f->peak_device_bytes, 1000);
        ck_assert_uint_eq(f->peak_host_bytes, 1000);
        ck_assert_uint_eq(r->devices[i].peak_bytes, 1000);
    }
    NU_EQ(r->weighted_exposed_us, 4);
    NU_EQ(r->max_slowdown, 3);
    ck_assert_uint_eq(r->n_copies, 6);
    plan_node_result_free(r);

    plan_schedule_free(s0);
    plan_schedule_free(s1);
    plan_trace_free(t0);
    plan_trace_free(t1);
    plan_node_free(n);
}
END_TEST

START_TEST(test_weights_one_and_three)
{
    plan_node *n = switch_node(true, 1, 1);
    plan_schedule *s0, *s1;
    plan_trace *t0 = prefetch_trace(3000, &s0);
    plan_trace *t1 = prefetch_trace(3000, &s1);
    plan_node_input in[2] = {nu_in("w1", t0, s0, 0, 3000, 1, PLAN_NONE),
                             nu_in("w3", t1, s1, 1, 3000, 3, PLAN_NONE)};
    /* w3 at 750 B/us: done at 4; w1 at 250 B/us moves 1000 B by then, the
     * other 2000 at its device's 1000 B/us: done at 6. */
    plan_node_result *r = nu_judge(n, in, 2, 1);
    NU_EQ(r->clients[1].step_time_us, 5);
    NU_EQ(r->clients[1].exposed_us, 4);
    NU_EQ(r->clients[0].step_time_us, 7);
    NU_EQ(r->clients[0].exposed_us, 6);
    NU_EQ(r->weighted_exposed_us, 1 * 6 + 3 * 4);
    NU_EQ(r->max_slowdown, 7);
    ck_assert_uint_eq(r->n_rate_updates, 2);
    plan_node_result_free(r);
    plan_schedule_free(s0);
    plan_schedule_free(s1);
    plan_trace_free(t0);
    plan_trace_free(t1);
    plan_node_free(n);
}
END_TEST

/* Storage 1 (1000 B, initial device, retained) stored before op0, which
 * writes it for 1 us (so it waits for the D2H). */
static plan_trace *store_trace(plan_schedule **ret_s)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_DEVICE, true, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_finish(t);
    *ret_s = tu_sched(1000);
    tu_act(*ret_s, 0, PLAN_BEFORE, PLAN_ACT_STORE, 1);
    return t;
}

START_TEST(test_duplex_false_link)
{
    plan_schedule *s0, *s1;
    plan_trace *t0 = prefetch_trace(1000, &s0);
    plan_trace *t1 = store_trace(&s1);
    plan_node_input in[2] = {nu_in("h2d", t0, s0, 0, 1000, 1, PLAN_NONE),
                             nu_in("d2h", t1, s1, 1, 1000, 1, PLAN_NONE)};
    /* duplex: both directions at 1000 B/us; steps of 2 us */
    plan_node *n = switch_node(true, 1, 1);
    plan_node_result *r = nu_judge(n, in, 2, 1);
    NU_EQ(r->clients[0].step_time_us, 2);
    NU_EQ(r->clients[1].step_time_us, 2);
    plan_node_result_free(r);
    plan_node_free(n);
    /* one capacity for both: 500 B/us each, copies done at 2 */
    n = switch_node(false, 1, 1);
    r = nu_judge(n, in, 2, 1);
    NU_EQ(r->clients[0].step_time_us, 3);
    NU_EQ(r->clients[1].step_time_us, 3);
    ck_assert_uint_eq(r->clients[1].d2h_bytes, 1000);
    plan_node_result_free(r);
    plan_node_free(n);
    /* H2D 1 GB/s, D2H 0.5 GB/s sharing one capacity: r/1000 + r/500 <= 1
     * with equal rates, r = 333.3 B/us: copies done at 3 */
    n = switch_node(false, 1, 0.5);
    r = nu_judge(n, in, 2, 1);
    NU_EQ(r->clients[0].step_time_us, 4);
    NU_EQ(r->clients[1].step_time_us, 4);
    plan_node_result_free(r);
    plan_node_free(n);
    plan_schedule_free(s0);
    plan_schedule_free(s1);
    plan_trace_free(t0);
    plan_trace_free(t1);
}
END_TEST

START_TEST(test_duplex_false_device_one_engine)
{
    /* One client on a device with one engine: its prefetch and store
     * queue on it (0..1, 1..2), as plan_simulate with duplex false. */
    plan_node *n = plan_node_new();
    nu_link(n, "host", NULL, 100, 100, true);
    nu_dev(n, 0, "host", 1000000, 1, 1, 0, false);
    nu_finish(n);
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_HOST, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_DEVICE, true, false);
    tu_op(t, 1, TU_R(1), TU_R(2));
    tu_finish(t);
    plan_schedule *s = tu_sched(2000);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 1);
    tu_act(s, 0, PLAN_BEFORE, PLAN_ACT_STORE, 2);
    plan_node_input in = nu_in("one", t, s, 0, 2000, 1, PLAN_NONE);
    plan_node_result *r = nu_judge(n, &in, 1, 1);
    NU_EQ(r->clients[0].step_time_us, 3);
    plan_node_result_free(r);
    plan_schedule_free(s);
    plan_trace_free(t);
    plan_node_free(n);
}
END_TEST

/* Client "a": storage 1 (1000 B, initial device) read by op0, stored and
 * freed after it; op1 (1 us, no storage); op2 writes storage 2 (1000 B).
 * Budget 1000: alone the store is done at 2, when op2 allocates. */
static plan_trace *pressure_trace(plan_schedule **ret_s)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_DEVICE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_op(t, 1, TU_NONE, TU_R(2));
    tu_finish(t);
    *ret_s = tu_sched(1000);
    tu_act(*ret_s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(*ret_s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    return t;
}

/* Client "b": storage 1 stored after op0 (1 us), then two more 1 us ops. */
static plan_trace *storer_trace(plan_schedule **ret_s)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_DEVICE, false, false);
    tu_op(t, 1, TU_R(1), TU_NONE);
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_op(t, 1, TU_NONE, TU_NONE);
    tu_finish(t);
    *ret_s = tu_sched(1000);
    tu_act(*ret_s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    return t;
}

START_TEST(test_back_pressure)
{
    plan_node *n = switch_node(true, 1, 1);
    plan_schedule *s0, *s1;
    plan_trace *t0 = pressure_trace(&s0);
    plan_trace *t1 = storer_trace(&s1);
    plan_node_input in[2] = {nu_in("a", t0, s0, 0, 1000, 1, PLAN_NONE),
                             nu_in("b", t1, s1, 1, 1000, 1, PLAN_NONE)};
    plan_node_result *r = nu_judge(n, in, 1, 1);
    NU_EQ(r->clients[0].step_time_us, 3);
    NU_EQ(r->clients[0].alloc_wait_us, 0);
    plan_node_result_free(r);
    /* Both D2H from 1 at 500 B/us, done at 3: a's free_device returns its
     * memory at 3, so op2's allocation (at 2) waits 1 us; op2 3..4. */
    r = nu_judge(n, in, 2, 1);
    NU_EQ(r->clients[0].alloc_wait_us, 1);
    NU_EQ(r->clients[0].step_time_us, 4);
    NU_EQ(r->clients[0].exposed_us, 1);
    ck_assert_uint_eq(r->clients[0].peak_device_bytes, 1000);
    NU_EQ(r->clients[1].alloc_wait_us, 0);
    NU_EQ(r->clients[1].step_time_us, 3);
    NU_EQ(r->alloc_wait_us, 1);
    plan_node_result_free(r);
    plan_schedule_free(s0);
    plan_schedule_free(s1);
    plan_trace_free(t0);
    plan_trace_free(t1);
    plan_node_free(n);
}
END_TEST

START_TEST(test_wait_and_homes)
{
    /* "a" stores storage 1 after op0 and waits for it before op1 (1 us,
     * no storage).  Alone: store 1..2, op1 2..3.  With "b" storing on the
     * same switch at 1: both at 500 B/us, done at 3; op1 3..4. */
    plan_node *n = switch_node(true, 1, 1);
    plan_trace *t0 = tu_trace(NULL);
    tu_st(t0, 1, 1000, PLAN_INIT_DEVICE, true, false);
    tu_op(t0, 1, TU_R(1), TU_NONE);
    tu_op(t0, 1, TU_NONE, TU_NONE);
    tu_finish(t0);
    plan_schedule *s0 = tu_sched(1000), *s1;
    tu_act(s0, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(s0, 1, PLAN_BEFORE, PLAN_ACT_WAIT, 1);
    plan_trace *t1 = storer_trace(&s1);
    plan_node_input in[2] = {nu_in("a", t0, s0, 0, 1000, 1, PLAN_NONE),
                             nu_in("b", t1, s1, 1, 1000, 1, PLAN_NONE)};
    plan_node_result *r = nu_judge(n, in, 1, 3);
    NU_EQ(r->clients[0].step_time_us, 3);
    NU_EQ(r->clients[0].exposed_us, 1);
    plan_node_result_free(r);
    r = nu_judge(n, in, 2, 1);
    NU_EQ(r->clients[0].step_time_us, 4);
    NU_EQ(r->clients[0].exposed_us, 2);
    NU_EQ(r->clients[0].alloc_wait_us, 0);
    plan_node_result_free(r);

    /* A movable storage homed on the host: only a host copy at t = 0;
     * prefetched (0..1), read by op0 (1..2), freed after. */
    plan_trace *t2 = tu_trace(NULL);
    plan_storage st = {9, 1000, PLAN_KIND_PARAM, PLAN_INIT_DEVICE, true,
                       false, true};
    ck_assert_int_eq(plan_trace_add_storage(t2, &st, NULL, tu_err,
                                            sizeof tu_err), 0);
    tu_op(t2, 1, TU_R(9), TU_NONE);
    tu_finish(t2);
    plan_schedule *s2 = tu_sched(1000);
    tu_act(s2, 0, PLAN_BEFORE, PLAN_ACT_PREFETCH, 9);
    tu_act(s2, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 9);
    ck_assert_int_eq(plan_schedule_set_home(s2, t2, 0, PLAN_HOME_HOST), 0);
    plan_node_input in2 = nu_in("homed", t2, s2, 0, 1000, 1, PLAN_NONE);
    r = nu_judge(n, &in2, 1, 3);
    NU_EQ(r->clients[0].step_time_us, 2);
    ck_assert_uint_eq(r->clients[0].peak_host_bytes, 1000);
    ck_assert_uint_eq(r->clients[0].peak_device_bytes, 1000);
    ck_assert_uint_eq(r->clients[0].h2d_bytes, 1000);
    plan_node_result_free(r);
    /* the same schedule with the storage homed on the device is invalid
     * alone (prefetch of a storage already on device) */
    ck_assert_int_eq(plan_schedule_set_home(s2, t2, 0, PLAN_HOME_DEVICE), 0);
    plan_node_violation v;
    ck_assert_int_eq(plan_node_judge(n, &in2, 1, NULL, &r, &v),
                     HO_E_BAD_SCHEDULE);
    ck_assert_ptr_nonnull(strstr(v.message, "invalid alone"));

    plan_schedule_free(s0);
    plan_schedule_free(s1);
    plan_schedule_free(s2);
    plan_trace_free(t0);
    plan_trace_free(t1);
    plan_trace_free(t2);
    plan_node_free(n);
}
END_TEST

/* op0 writes storage 1 (stored and freed after op0), op1 writes storage
 * 2; 1000 B each, 1 us each.  Alone, budget 2000: peak 2000. */
static plan_trace *share_trace(plan_schedule **ret_s)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_NONE, TU_R(2));
    tu_finish(t);
    *ret_s = tu_sched(2000);
    tu_act(*ret_s, 0, PLAN_AFTER, PLAN_ACT_STORE, 1);
    tu_act(*ret_s, 0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, 1);
    return t;
}

START_TEST(test_device_shared_over_hbm)
{
    plan_node *n = plan_node_new();
    nu_link(n, "host", NULL, 100, 100, true);
    nu_dev(n, 0, "host", 2500, 1, 1, 0, true);
    nu_finish(n);
    plan_schedule *s0, *s1;
    plan_trace *t0 = share_trace(&s0);
    plan_trace *t1 = share_trace(&s1);
    plan_node_input in[2] = {nu_in("x", t0, s0, 0, 2000, 1, PLAN_NONE),
                             nu_in("y", t1, s1, 0, 2000, 1, PLAN_NONE)};
    /* t=0: both write storage 1 (2000 on the device).  t=1: both store it
     * on the one D2H engine (x 1..2, y 2..3) and want storage 2: 3000 >
     * 2500, both wait.  x's memory returns at 2 (x allocates, waited 1),
     * y's at 3 (waited 2). */
    plan_node_result *r = nu_judge(n, in, 2, 1);
    NU_EQ(r->clients[0].alloc_wait_us, 1);
    NU_EQ(r->clients[0].step_time_us, 3);
    NU_EQ(r->clients[1].alloc_wait_us, 2);
    NU_EQ(r->clients[1].step_time_us, 4);
    ck_assert_uint_eq(r->clients[0].peak_device_bytes, 1000);
    ck_assert_uint_eq(r->clients[1].peak_device_bytes, 1000);
    ck_assert_uint_eq(r->devices[0].peak_bytes, 2000);
    ck_assert_uint_eq(r->devices[0].capacity_bytes, 2500);
    ck_assert_uint_eq(r->devices[0].n_clients, 2);
    plan_node_result_free(r);
    plan_schedule_free(s0);
    plan_schedule_free(s1);
    plan_trace_free(t0);
    plan_trace_free(t1);
    plan_node_free(n);
}
END_TEST

static plan_trace *compute_trace(double us, plan_schedule **ret_s)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, us, TU_NONE, TU_R(1));
    tu_finish(t);
    *ret_s = tu_sched(1000);
    return t;
}

START_TEST(test_sync_group_slow_member)
{
    plan_node *n = plan_node_new();
    nu_link(n, "host", NULL, 100, 100, true);
    nu_dev(n, 0, "host", 1000000, 1, 1, 0, true);
    nu_dev(n, 1, "host", 1000000, 1, 1, 0, true);
    nu_dev(n, 2, "host", 1000000, 1, 1, 0, true);
    nu_finish(n);
    plan_schedule *s[3];
    plan_trace *t[3] = {compute_trace(1, &s[0]), compute_trace(3, &s[1]),
                        compute_trace(2, &s[2])};
    plan_node_input in[3] = {nu_in("fast", t[0], s[0], 0, 1000, 2, 0),
                             nu_in("slow", t[1], s[1], 1, 1000, 1, 0),
                             nu_in("free", t[2], s[2], 2, 1000, 1, PLAN_NONE)};
    /* The group's steps take 3 us (0..3, 3..6, 6..9); the free client's
     * 2 us (4..6 is its third). */
    plan_node_result *r = nu_judge(n, in, 3, 3);
    NU_EQ(r->clients[0].step_time_us, 3);
    NU_EQ(r->clients[0].exposed_us, 2);
    NU_EQ(r->clients[0].start_us, 6);
    NU_EQ(r->clients[0].end_us, 7);
    NU_EQ(r->clients[1].step_time_us, 3);
    NU_EQ(r->clients[1].exposed_us, 0);
    NU_EQ(r->clients[1].start_us, 6);
    NU_EQ(r->clients[2].step_time_us, 2);
    NU_EQ(r->clients[2].start_us, 4);
    NU_EQ(r->weighted_exposed_us, 2 * 2);
    NU_EQ(r->max_slowdown, 3);
    NU_EQ(r->end_us, 9);
    plan_node_result_free(r);
    for (int i = 0; i < 3; i++) {
        plan_schedule_free(s[i]);
        plan_trace_free(t[i]);
    }
    plan_node_free(n);
}
END_TEST

/* op0 writes 1; op1 reads 1, writes 2: 2000 B live in op1. */
static plan_trace *chain_trace(plan_schedule **ret_s)
{
    plan_trace *t = tu_trace(NULL);
    tu_st(t, 1, 1000, PLAN_INIT_NONE, false, false);
    tu_st(t, 2, 1000, PLAN_INIT_NONE, false, false);
    tu_op(t, 1, TU_NONE, TU_R(1));
    tu_op(t, 1, TU_R(1), TU_R(2));
    tu_finish(t);
    *ret_s = tu_sched(2000);
    return t;
}

START_TEST(test_invalid_nothing_pending)
{
    plan_node *n = plan_node_new();
    nu_link(n, "host", NULL, 100, 100, true);
    nu_dev(n, 0, "host", 2000, 1, 1, 0, true);
    nu_finish(n);
    plan_schedule *s0, *s1;
    plan_trace *t0 = chain_trace(&s0);
    plan_trace *t1 = chain_trace(&s1);
    plan_node_input in[2] = {nu_in("a", t0, s0, 0, 2000, 1, PLAN_NONE),
                             nu_in("b", t1, s1, 0, 2000, 1, PLAN_NONE)};
    plan_node_result *r = NULL;
    plan_node_violation v;
    /* Each alone is fine; together at t=1 both want 1000 B more of a full
     * device, and no release is pending. */
    ck_assert_int_eq(plan_node_judge(n, in, 2, NULL, &r, &v),
                     HO_E_BAD_SCHEDULE);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(v.code, HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(v.client, 0);
    ck_assert_uint_eq(v.step, 0);
    ck_assert_uint_eq(v.op, 1);
    ck_assert_uint_eq(v.storage_id, 2);
    ck_assert_ptr_nonnull(strstr(v.message, "client \"a\""));
    ck_assert_ptr_nonnull(strstr(v.message, "op 1"));
    ck_assert_ptr_nonnull(strstr(v.message, "full"));
    ck_assert_ptr_nonnull(strstr(v.message, "no release pending"));

    /* A schedule over its budget alone is refused before running. */
    in[1].budget_bytes = 1999;
    ck_assert_int_eq(plan_node_judge(n, in, 2, NULL, &r, &v),
                     HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(v.client, 1);
    ck_assert_uint_eq(v.step, PLAN_NONE);
    ck_assert_ptr_nonnull(strstr(v.message, "invalid alone"));
    ck_assert_ptr_nonnull(strstr(v.message, "over budget"));

    /* The initial allocation of a second client that does not fit. */
    plan_trace *t2 = tu_trace(NULL);
    tu_st(t2, 5, 1500, PLAN_INIT_DEVICE, true, false);
    tu_op(t2, 1, TU_R(5), TU_NONE);
    tu_finish(t2);
    plan_schedule *s2 = tu_sched(1500);
    plan_node_input in2[2] = {nu_in("p", t2, s2, 0, 1500, 1, PLAN_NONE),
                              nu_in("q", t2, s2, 0, 1500, 1, PLAN_NONE)};
    ck_assert_int_eq(plan_node_judge(n, in2, 2, NULL, &r, &v),
                     HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(v.client, 1);
    ck_assert_ptr_nonnull(strstr(v.message, "step start"));

    /* bad input */
    in2[0].device = 9;
    ck_assert_int_eq(plan_node_judge(n, in2, 2, NULL, &r, &v), -EINVAL);
    in2[0].device = 0;
    in2[0].weight = 0;
    ck_assert_int_eq(plan_node_judge(n, in2, 2, NULL, &r, &v), -EINVAL);

    plan_schedule_free(s0);
    plan_schedule_free(s1);
    plan_schedule_free(s2);
    plan_trace_free(t0);
    plan_trace_free(t1);
    plan_trace_free(t2);
    plan_node_free(n);
}
END_TEST

START_TEST(test_latency_and_no_clients)
{
    /* Latency is spent moving nothing: two copies of 1000 B with 5 us
     * latency on a shared 1 GB/s switch.  Both move from 5 at 500 B/us:
     * done at 7; op 7..8. */
    plan_node *n = plan_node_new();
    nu_link(n, "host", NULL, 100, 100, true);
    nu_link(n, "sw", "host", 1, 1, true);
    nu_dev(n, 0, "sw", 1000000, 1, 1, 5, true);
    nu_dev(n, 1, "sw", 1000000, 1, 1, 5, true);
    nu_finish(n);
    plan_schedule *s0, *s1;
    plan_trace *t0 = prefetch_trace(1000, &s0);
    plan_trace *t1 = prefetch_trace(1000, &s1);
    plan_node_input in[2] = {nu_in("a", t0, s0, 0, 1000, 1, PLAN_NONE),
                             nu_in("b", t1, s1, 1, 1000, 1, PLAN_NONE)};
    plan_node_result *r = nu_judge(n, in, 2, 1);
    NU_EQ(r->clients[0].step_time_us, 8);
    NU_EQ(r->clients[1].step_time_us, 8);
    plan_node_result_free(r);
    /* no clients: nothing happens, figures zero */
    r = nu_judge(n, NULL, 0, 3);
    ck_assert_uint_eq(r->n_clients, 0);
    NU_EQ(r->weighted_exposed_us, 0);
    NU_EQ(r->max_slowdown, 1);
    plan_node_result_free(r);
    plan_schedule_free(s0);
    plan_schedule_free(s1);
    plan_trace_free(t0);
    plan_trace_free(t1);
    plan_node_free(n);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("node_judge");
    TCase *tc = tcase_create("judge");
    tcase_add_test(tc, test_shared_link_halves_rates);
    tcase_add_test(tc, test_weights_one_and_three);
    tcase_add_test(tc, test_duplex_false_link);
    tcase_add_test(tc, test_duplex_false_device_one_engine);
    tcase_add_test(tc, test_back_pressure);
    tcase_add_test(tc, test_wait_and_homes);
    tcase_add_test(tc, test_device_shared_over_hbm);
    tcase_add_test(tc, test_sync_group_slow_member);
    tcase_add_test(tc, test_invalid_nothing_pending);
    tcase_add_test(tc, test_latency_and_no_clients);
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
