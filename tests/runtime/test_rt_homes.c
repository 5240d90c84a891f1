/*
 * tests/runtime/test_rt_homes.c - the replay engine on the host backend
 * with the schedule's `wait` action and the homes of movable storages
 * (PLANNER.md §2-§3): a hand-made training-like step whose parameters live
 * on host between steps (one handed over as a device buffer, one written
 * to its host copy), whose optimizer state the trace starts on host but
 * the schedule keeps on device, and whose stores are followed by `wait`s
 * so that their memory is back before the next prefetch allocates.  Real
 * bytes are checked on every read of every step and between steps; the
 * copy log shows that a wait really held the next action back.  The same
 * actions without the homes are refused: the schedule only holds with
 * them.
 */
#include "tests/runtime/rt_fw.h"

static char dir[512];

static void setup(void)
{
    rt_tmpdir(dir, sizeof dir);
}

static void teardown(void)
{
    rt_rmdir(dir);
}

/* Storage ids. */
enum {
    P0 = 1, /* param, initial device, movable: home host (bound buffer) */
    P1 = 2, /* param, initial device, movable: home host (write_host) */
    M = 3,  /* optimizer, initial host, movable: home device */
    X = 4,  /* input, initial device, not retained */
    A = 5,  /* activation */
    W = 6,  /* param, initial device, retained, not movable */
    Y = 7,  /* param, initial host, retained, not movable */
    N_ST = 7
};

typedef struct homes_case {
    plan_trace *pt;
    ho_trace *t;
    ho_plan *p;          /* with homes and waits */
    ho_plan *no_homes;   /* the same actions, no homes */
    uint64_t budget;
    uint64_t bytes;
    plan_metrics m;      /* the judge's figures for p */
    size_t n_waits;      /* wait actions per step */
    size_t n_copies;     /* prefetches and stores per step */
} homes_case;

static uint32_t idx(const plan_trace *t, uint64_t id)
{
    uint32_t i = plan_trace_find(t, id);
    ck_assert_uint_ne(i, PLAN_NONE);
    return i;
}

static plan_trace *homes_trace(uint64_t bytes)
{
    plan_link link = {.h2d_gbps = 2.0, .d2h_gbps = 2.0, .latency_us = 5.0,
                      .duplex = true};
    plan_trace *t = plan_trace_new("homes", &link);
    ck_assert_ptr_nonnull(t);
    const struct {
        uint64_t id;
        uint8_t kind, initial;
        bool retained, movable;
    } sp[N_ST] = {
        {P0, PLAN_KIND_PARAM, PLAN_INIT_DEVICE, true, true},
        {P1, PLAN_KIND_PARAM, PLAN_INIT_DEVICE, true, true},
        {M, PLAN_KIND_OPTIMIZER, PLAN_INIT_HOST, true, true},
        {X, PLAN_KIND_OTHER, PLAN_INIT_DEVICE, false, false},
        {A, PLAN_KIND_ACTIVATION, PLAN_INIT_NONE, false, false},
        {W, PLAN_KIND_PARAM, PLAN_INIT_DEVICE, true, false},
        {Y, PLAN_KIND_PARAM, PLAN_INIT_HOST, true, false},
    };
    char err[256] = "";
    for (int i = 0; i < N_ST; i++) {
        plan_storage s = {.id = sp[i].id, .bytes = bytes, .kind = sp[i].kind,
                          .initial = sp[i].initial,
                          .retained = sp[i].retained,
                          .movable = sp[i].movable};
        ck_assert_msg(plan_trace_add_storage(t, &s, NULL, err, sizeof err) ==
                      0, "%s", err);
    }
    /* op 0 f0: X, P0 -> A; op 1 f1: A, P1 -> A; op 2 upd0: A, P0, M ->
     * P0, M; op 3 upd1: A, P1, W, Y -> P1, W. */
    const uint64_t r0[] = {X, P0}, w0[] = {A};
    const uint64_t r1[] = {A, P1}, w1[] = {A};
    const uint64_t r2[] = {A, P0, M}, w2[] = {P0, M};
    const uint64_t r3[] = {A, P1, W, Y}, w3[] = {P1, W};
    const struct {
        const char *name;
        const uint64_t *r, *w;
        uint32_t nr, nw;
    } ops[] = {{"f0", r0, w0, 2, 1}, {"f1", r1, w1, 2, 1},
               {"upd0", r2, w2, 3, 2}, {"upd1", r3, w3, 4, 2}};
    for (size_t o = 0; o < 4; o++) {
        uint32_t ri[4], wi[2];
        for (uint32_t k = 0; k < ops[o].nr; k++)
            ri[k] = idx(t, ops[o].r[k]);
        for (uint32_t k = 0; k < ops[o].nw; k++)
            wi[k] = idx(t, ops[o].w[k]);
        ck_assert_int_eq(plan_trace_add_op(t, ops[o].name, 800.0, ri,
                                           ops[o].nr, wi, ops[o].nw, err,
                                           sizeof err), 0);
    }
    ck_assert_msg(plan_trace_finish(t, err, sizeof err) == 0, "%s", err);
    return t;
}

/* The schedule: P0 and P1 live on host, M on device.  Each store of a
 * parameter is followed by a wait, so its memory is back before the next
 * prefetch (of Y) allocates. */
static plan_schedule *homes_schedule(uint64_t budget, bool homes,
                                     size_t *ret_waits, size_t *ret_copies)
{
    const struct {
        uint32_t op;
        uint8_t when, kind;
        uint64_t id;
    } a[] = {
        {0, PLAN_BEFORE, PLAN_ACT_PREFETCH, P0},
        {0, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, P0},
        {1, PLAN_BEFORE, PLAN_ACT_PREFETCH, P1},
        {2, PLAN_BEFORE, PLAN_ACT_PREFETCH, P0},
        {2, PLAN_AFTER, PLAN_ACT_STORE, P0},
        {2, PLAN_AFTER, PLAN_ACT_WAIT, P0},
        {2, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, P0},
        {2, PLAN_AFTER, PLAN_ACT_PREFETCH, Y},
        {3, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, Y},
        {3, PLAN_AFTER, PLAN_ACT_STORE, P1},
        {3, PLAN_AFTER, PLAN_ACT_WAIT, P1},
        {3, PLAN_AFTER, PLAN_ACT_FREE_DEVICE, P1},
    };
    plan_schedule *s = plan_schedule_new("hand", budget);
    ck_assert_ptr_nonnull(s);
    size_t waits = 0, copies = 0;
    for (size_t k = 0; k < sizeof(a) / sizeof(a[0]); k++) {
        ck_assert_int_eq(plan_schedule_push_id(s, a[k].op, a[k].when,
                                               a[k].kind, a[k].id), 0);
        waits += a[k].kind == PLAN_ACT_WAIT;
        copies += a[k].kind == PLAN_ACT_PREFETCH ||
                  a[k].kind == PLAN_ACT_STORE;
    }
    if (homes) {
        ck_assert_int_eq(plan_schedule_push_home_id(s, P0, PLAN_HOME_HOST), 0);
        ck_assert_int_eq(plan_schedule_push_home_id(s, P1, PLAN_HOME_HOST), 0);
        ck_assert_int_eq(plan_schedule_push_home_id(s, M, PLAN_HOME_DEVICE),
                         0);
    }
    if (ret_waits)
        *ret_waits = waits;
    if (ret_copies)
        *ret_copies = copies;
    return s;
}

static ho_plan *load_schedule(homes_case *k, plan_schedule *s,
                              const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    rt_write_schedule(s, path);
    ho_plan *p = NULL;
    ck_assert_msg(ho_plan_load(k->t, path, &p) == 0, "ho_plan_load: %s",
                  ho_runtime_last_error());
    return p;
}

static void case_make(homes_case *k)
{
    memset(k, 0, sizeof(*k));
    k->bytes = rt_valgrind() ? 64 * 1024 : 1024 * 1024;
    k->pt = homes_trace(k->bytes);
    char path[600];
    snprintf(path, sizeof path, "%s/homes.json", dir);
    rt_write_trace(k->pt, path);
    ck_assert_int_eq(ho_trace_load(path, &k->t), 0);

    /* The budget is the judge's peak with the homes and waits. */
    plan_schedule *s = homes_schedule(UINT64_MAX / 2, true, &k->n_waits,
                                     &k->n_copies);
    char err[256] = "";
    ck_assert_msg(plan_schedule_bind(s, k->pt, err, sizeof err) == 0, "%s",
                  err);
    plan_violation v;
    memset(&v, 0, sizeof v);
    ck_assert_msg(plan_simulate(k->pt, s, &k->m, &v, NULL) == 0,
                  "the hand schedule is invalid: %s", v.message);
    k->budget = k->m.peak_device_bytes;
    plan_schedule_free(s);
    /* At most five storages on device at once: the wait after op 2 frees
     * P0 before Y is fetched (without it the peak would be six). */
    ck_assert_uint_eq(k->budget, 5 * k->bytes);

    s = homes_schedule(k->budget, true, NULL, NULL);
    k->p = load_schedule(k, s, "with-homes");
    plan_schedule_free(s);
    s = homes_schedule(k->budget, false, NULL, NULL);
    k->no_homes = load_schedule(k, s, "no-homes");
    plan_schedule_free(s);
}

static void case_free(homes_case *k)
{
    ho_plan_free(k->p);
    ho_plan_free(k->no_homes);
    ho_trace_free(k->t);
    plan_trace_free(k->pt);
}

/* Storage i holds version f->ver[i] wherever it lives. */
static void check_content(rt_fw *f, uint64_t id)
{
    uint32_t i = idx(f->pt, id);
    uint64_t b = f->pt->storages[i].bytes;
    ck_assert_int_eq(ho_storage_read(f->r, id, f->buf, b), 0);
    ck_assert_msg(rt_check(f->buf, b, rt_seed(id, f->ver[i])),
                  "storage %llu does not hold version %llu",
                  (unsigned long long)id, (unsigned long long)f->ver[i]);
}

/* The first step's content: P0 through a bound device buffer (moved to
 * its home, host), P1 and Y into their host copies, M (home device,
 * though the trace starts it on host) through ho_storage_write_host into
 * its device buffer, W through its device buffer. */
static void first_inputs(rt_fw *f, ho_device *dev)
{
    ho_replay *r = f->r;
    uint64_t b = f->pt->storages[0].bytes;
    /* Installed at home: the host-homed parameters are not on device,
     * the device-homed optimizer state is. */
    ck_assert_ptr_null(ho_storage_ptr(r, P0));
    ck_assert_ptr_null(ho_storage_ptr(r, P1));
    ck_assert_ptr_nonnull(ho_storage_ptr(r, M));
    ck_assert_ptr_nonnull(ho_storage_ptr(r, W));

    uint64_t used = ho_device_used(dev);
    void *buf = NULL;
    ck_assert_int_eq(ho_device_alloc(dev, b, &buf), 0);
    f->ver[idx(f->pt, P0)] = 1;
    rt_fill(f->buf, b, rt_seed(P0, 1));
    ck_assert_int_eq(ho_device_write(dev, buf, f->buf, b), 0);
    int rc = ho_storage_bind(r, P0, buf, b);
    ck_assert_msg(rc == 0, "bind P0: %s", ho_runtime_last_error());
    /* Moved home: the buffer is gone, the content is on host. */
    ck_assert_uint_eq(ho_device_used(dev), used);
    ck_assert_ptr_null(ho_storage_ptr(r, P0));
    check_content(f, P0);

    const uint64_t host_ids[] = {P1, M, Y};
    for (size_t k = 0; k < 3; k++) {
        uint32_t i = idx(f->pt, host_ids[k]);
        f->ver[i] = 1;
        rt_fill(f->buf, b, rt_seed(host_ids[k], 1));
        rc = ho_storage_write_host(r, host_ids[k], f->buf, b);
        ck_assert_msg(rc == 0, "write_host %llu: %s",
                      (unsigned long long)host_ids[k],
                      ho_runtime_last_error());
        check_content(f, host_ids[k]);
    }
    ck_assert_ptr_null(ho_storage_ptr(r, P1));
    f->ver[idx(f->pt, W)] = 1;
    rt_fw_put(f, idx(f->pt, W));
}

START_TEST(homes_and_waits_replayed)
{
    homes_case k;
    case_make(&k);
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, k.budget, &dev), 0);

    /* Without the homes the same actions break the model (P0 would be on
     * device already at its first prefetch): refused at install. */
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, k.no_homes, NULL, &r),
                     HO_E_BAD_SCHEDULE);
    ck_assert_ptr_null(r);

    int rc = ho_replay_new(NULL, dev, k.t, k.p, NULL, &r);
    ck_assert_msg(rc == 0, "replay_new: %s", ho_runtime_last_error());
    size_t copies = k.n_copies;
    ck_assert_int_eq(ho_replay_record_copies(r, (uint32_t)copies + 4), 0);
    ho_copy_record *rec = calloc(copies + 4, sizeof(*rec));
    ck_assert_ptr_nonnull(rec);

    rt_fw f;
    rt_fw_init(&f, r, dev, k.pt);
    first_inputs(&f, dev);
    unsigned steps = rt_valgrind() ? 2 : 5;
    for (unsigned st = 1; st <= steps; st++) {
        ho_step_info info;
        rt_fw_step(&f, 0, &info);
        ck_assert_uint_eq(info.step, st);
        ck_assert_uint_le(info.peak_device_bytes, k.budget);
        ck_assert_uint_eq(info.h2d_bytes, k.m.h2d_bytes);
        ck_assert_uint_eq(info.d2h_bytes, k.m.d2h_bytes);
        ck_assert_uint_eq(info.waits, k.n_waits);
        ck_assert(info.wait_us >= 0 && info.wait_us <= info.exposed_us);

        /* The wait after op 2 held the prefetch of Y until P0's store
         * was complete. */
        size_t n = 0;
        ck_assert_int_eq(ho_step_copies(r, rec, copies + 4, &n), 0);
        ck_assert_uint_eq(n, copies);
        const ho_copy_record *store_p0 = NULL, *fetch_y = NULL;
        for (size_t i = 0; i < n; i++) {
            if (rec[i].storage_id == P0 && rec[i].dir == HO_COPY_D2H)
                store_p0 = &rec[i];
            if (rec[i].storage_id == Y && rec[i].dir == HO_COPY_H2D)
                fetch_y = &rec[i];
        }
        ck_assert_ptr_nonnull(store_p0);
        ck_assert_ptr_nonnull(fetch_y);
        ck_assert_int_ge(store_p0->end_ns, 0);
        ck_assert_int_ge(fetch_y->issue_ns, store_p0->end_ns);

        /* Between steps every storage is at its home, with the content of
         * its last write. */
        ck_assert_ptr_null(ho_storage_ptr(r, P0));
        ck_assert_ptr_null(ho_storage_ptr(r, P1));
        ck_assert_ptr_null(ho_storage_ptr(r, Y));
        ck_assert_ptr_nonnull(ho_storage_ptr(r, M));
        ck_assert_ptr_nonnull(ho_storage_ptr(r, W));
        const uint64_t kept[] = {P0, P1, M, W, Y};
        for (size_t i = 0; i < 5; i++)
            check_content(&f, kept[i]);
        ck_assert_uint_eq(f.ver[idx(k.pt, P0)], 1 + st);
        ck_assert_uint_eq(f.ver[idx(k.pt, M)], 1 + st);
    }
    ck_assert_uint_eq(f.bad_reads, 0);
    /* 11 reads a step, all verified. */
    ck_assert_uint_ge(f.reads_checked, 11u * steps);
    rt_fw_done(&f);
    free(rec);
    ck_assert_ptr_null(ho_replay_free(r));
    ck_assert_uint_eq(ho_device_used(dev), 0);
    ho_device_close(dev);
    case_free(&k);
}
END_TEST

/* A step that diverges (op 2 skipped) falls back to no offload; its end
 * puts every storage back at its home (the parameter op 3 wrote stored
 * back to host), and the next steps run the plan again on the right
 * bytes. */
START_TEST(homes_after_divergence)
{
    homes_case k;
    case_make(&k);
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, 8 * k.bytes, &dev), 0);
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, k.p, NULL, &r), 0);
    rt_fw f;
    rt_fw_init(&f, r, dev, k.pt);
    first_inputs(&f, dev);
    rt_fw_step(&f, 0, NULL);

    rt_fw_inputs(&f, 0);
    ck_assert_int_eq(ho_step_begin(r), 0);
    for (uint32_t op = 0; op < 2; op++) {
        ck_assert_int_eq(ho_op_begin(r, op), 0);
        ck_assert_int_eq(rt_fw_compute(&f, op), 0);
        ck_assert_int_eq(ho_op_end(r, op), 0);
    }
    ck_assert_int_eq(ho_op_begin(r, 3), HO_E_DIVERGED);
    /* the op that runs, without offload: everything on device */
    ck_assert_int_eq(ho_op_begin(r, 3), 0);
    ck_assert_int_eq(rt_fw_compute(&f, 3), 0);
    ck_assert_int_eq(ho_op_end(r, 3), 0);
    ho_step_info info;
    ck_assert_int_eq(ho_step_end(r, &info), 0);
    ck_assert_int_eq(info.diverged, 1);
    ck_assert_ptr_null(ho_storage_ptr(r, P0));
    ck_assert_ptr_null(ho_storage_ptr(r, P1));
    ck_assert_ptr_nonnull(ho_storage_ptr(r, M));
    const uint64_t kept[] = {P0, P1, M, W, Y};
    for (size_t i = 0; i < 5; i++)
        check_content(&f, kept[i]);

    for (unsigned st = 0; st < 2; st++) {
        rt_fw_step(&f, 0, &info);
        ck_assert_int_eq(info.diverged, 0);
        ck_assert_uint_eq(info.waits, k.n_waits);
        for (size_t i = 0; i < 5; i++)
            check_content(&f, kept[i]);
    }
    ck_assert_uint_eq(f.bad_reads, 0);
    rt_fw_done(&f);
    ck_assert_ptr_null(ho_replay_free(r));
    ho_device_close(dev);
    case_free(&k);
}
END_TEST

/* Storages not moved by the schedule keep the trace's rules: a host-homed
 * storage takes no buffer it would not move, and write_host of a storage
 * that starts on device (no home change) is refused. */
START_TEST(homes_api_rules)
{
    homes_case k;
    case_make(&k);
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, 8 * k.bytes, &dev), 0);
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, k.p, NULL, &r), 0);
    uint8_t *b = calloc(1, k.bytes);
    ck_assert_ptr_nonnull(b);
    /* W starts on device, its home unchanged: no host copy to write. */
    ck_assert_int_eq(ho_storage_write_host(r, W, b, k.bytes), HO_E_STATE);
    /* Y starts on host (not movable): it takes no device buffer. */
    void *buf = NULL;
    ck_assert_int_eq(ho_device_alloc(dev, k.bytes, &buf), 0);
    ck_assert_int_eq(ho_storage_bind(r, Y, buf, k.bytes), HO_E_STATE);
    ck_assert_int_eq(ho_device_free(dev, buf), 0);
    /* Inside a step nothing moves home. */
    ck_assert_int_eq(ho_step_begin(r), 0);
    ck_assert_int_eq(ho_storage_write_host(r, M, b, k.bytes), HO_E_STATE);
    ck_assert_int_eq(ho_storage_write_host(r, P1, b, k.bytes), HO_E_STATE);
    ho_step_info info;
    ck_assert_int_eq(ho_step_end(r, &info), HO_E_DIVERGED);
    free(b);
    ck_assert_ptr_null(ho_replay_free(r));
    ho_device_close(dev);
    case_free(&k);
}
END_TEST

/* A trace recorded through the API with HO_STORAGE_MOVABLE is the same
 * trace (hash, movable marks) as the planner's, so its plans fit it; a
 * movable storage that cannot be (initial: none) is refused. */
START_TEST(movable_recorded)
{
    homes_case k;
    case_make(&k);
    ho_link link = {.h2d_gbps = k.pt->link.h2d_gbps,
                    .d2h_gbps = k.pt->link.d2h_gbps,
                    .latency_us = k.pt->link.latency_us, .duplex = 1};
    ho_trace *t = NULL;
    ck_assert_int_eq(ho_trace_new(k.pt->name, &link, &t), 0);
    for (uint32_t i = 0; i < k.pt->n_storages; i++) {
        const plan_storage *s = &k.pt->storages[i];
        unsigned flags = (s->retained ? HO_STORAGE_RETAINED : 0u) |
                         (s->movable ? HO_STORAGE_MOVABLE : 0u);
        ck_assert_int_eq(ho_trace_add_storage(t, s->id, s->bytes,
                                              (ho_storage_kind)s->kind,
                                              (ho_initial)s->initial, flags),
                         0);
    }
    ck_assert_int_lt(ho_trace_add_storage(t, 99, 64, HO_KIND_ACTIVATION,
                                          HO_INITIAL_NONE,
                                          HO_STORAGE_RETAINED |
                                              HO_STORAGE_MOVABLE), 0);
    for (uint32_t o = 0; o < k.pt->n_ops; o++) {
        const plan_op *op = &k.pt->ops[o];
        uint64_t ids[8];
        for (uint32_t j = 0; j < op->n_reads + op->n_writes; j++)
            ids[j] = k.pt->storages[k.pt->refs[op->first_ref + j]].id;
        ck_assert_int_eq(ho_trace_add_op(t, plan_op_name(k.pt, o),
                                         op->duration_us, ids, op->n_reads,
                                         ids + op->n_reads, op->n_writes),
                         0);
    }
    char path[600];
    snprintf(path, sizeof path, "%s/recorded.json", dir);
    ck_assert_int_eq(ho_trace_save(t, path), 0);
    plan_trace *back = NULL;
    char err[256] = "";
    ck_assert_msg(plan_trace_read_json(path, &back, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_uint_eq(plan_trace_hash(back), plan_trace_hash(k.pt));
    ck_assert(back->storages[idx(back, P0)].movable);
    ck_assert(!back->storages[idx(back, W)].movable);
    plan_trace_free(back);
    ho_trace_free(t);
    case_free(&k);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_homes");
    TCase *tc = tcase_create("homes");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, rt_valgrind() ? 600 : 60);
    tcase_add_test(tc, homes_and_waits_replayed);
    tcase_add_test(tc, homes_after_divergence);
    tcase_add_test(tc, homes_api_rules);
    tcase_add_test(tc, movable_recorded);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
