/*
 * tests/runtime/test_rt_replay.c - the replay engine on the host backend,
 * without a daemon (local host copies): content-checked steps of generated
 * traces under a budget below the no-offload peak, broken schedules
 * refused at install and caught at run time, divergence and its fallback,
 * the host backend's hard capacity, the storage registry, the copy log
 * (ho_replay_record_copies / ho_step_copies) against the schedule.
 *
 * Linked against the library's objects for the hidden test hook
 * hor_test_skip_check.
 */
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include "tests/runtime/rt_copylog.h"
#include "tests/runtime/rt_fw.h"
#include "client/runtime/runtime_internal.h"

static char dir[512];

static void setup(void)
{
    rt_tmpdir(dir, sizeof dir);
    hor_test_skip_check = 0;
}

static void teardown(void)
{
    hor_test_skip_check = 0;
    rt_rmdir(dir);
}

/* A generated trace, written and loaded through the API. */
typedef struct rt_case {
    plan_trace *pt;
    ho_trace *t;
    uint64_t budget;
    plan_schedule *s;   /* hoplan's schedule for budget */
    ho_plan *p;
} rt_case;

static void case_make(rt_case *k, uint64_t seed, int duplex)
{
    int vg = rt_valgrind();
    memset(k, 0, sizeof(*k));
    k->pt = rt_gen(seed, vg ? 50 : 160, vg ? 18 : 48, 4096, vg ? 16384 : 65536);
    k->pt->link.duplex = duplex != 0;
    /* Slow link: copies are long against the ops, so the plan overlaps. */
    k->pt->link.h2d_gbps = k->pt->link.d2h_gbps = 2.0;
    char path[600];
    snprintf(path, sizeof path, "%s/t%llu.json", dir,
             (unsigned long long)seed);
    rt_write_trace(k->pt, path);
    ck_assert_int_eq(ho_trace_load(path, &k->t), 0);
    plan_trace_free(k->pt);
    char err[256];
    ck_assert_int_eq(plan_trace_read_json(path, &k->pt, err, sizeof err), 0);
    k->budget = rt_budget(k->pt);
    plan_result res;
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(plan_make(k->pt, k->budget, NULL, &k->s, &res), 0);
    snprintf(path, sizeof path, "%s/s%llu.json", dir,
             (unsigned long long)seed);
    rt_write_schedule(k->s, path);
    ck_assert_int_eq(ho_plan_load(k->t, path, &k->p), 0);
}

static void case_free(rt_case *k)
{
    ho_plan_free(k->p);
    plan_schedule_free(k->s);
    ho_trace_free(k->t);
    plan_trace_free(k->pt);
}

/* Write a schedule made of k->s's actions with edits (a predicate drops
 * actions; an extra action is inserted at its point) and load it. */
static ho_plan *edited(rt_case *k, size_t drop, const plan_action *extra)
{
    plan_schedule *e = plan_schedule_new("hand-edited", k->budget);
    for (size_t i = 0; i < k->s->n_actions; i++) {
        const plan_action *a = &k->s->actions[i];
        if (i == drop)
            continue;
        ck_assert_int_eq(plan_schedule_push_id(e, a->op, a->when, a->kind,
                                               a->storage_id), 0);
    }
    if (extra)
        ck_assert_int_eq(plan_schedule_push_id(e, extra->op, extra->when,
                                               extra->kind,
                                               extra->storage_id), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/edited.json", dir);
    rt_write_schedule(e, path);
    plan_schedule_free(e);
    ho_plan *p = NULL;
    ck_assert_int_eq(ho_plan_load(k->t, path, &p), 0);
    return p;
}

/* ------------------------------------------------------------ content */

static void run_content(uint64_t seed, int duplex)
{
    rt_case k;
    case_make(&k, seed, duplex);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(k.pt, &sm), 0);
    ck_assert_uint_lt(k.budget, sm.no_offload_peak);
    ck_assert_uint_gt(k.s->predicted.h2d_bytes + k.s->predicted.d2h_bytes,
                      0);

    /* The device holds exactly the budget: the plan must fit it. */
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, k.budget, &dev), 0);
    ck_assert_str_eq(ho_device_backend(dev), "host");
    ho_replay *r = NULL;
    int rc = ho_replay_new(NULL, dev, k.t, k.p, NULL, &r);
    ck_assert_msg(rc == 0, "replay_new: %s", ho_runtime_last_error());

    rt_fw f;
    rt_fw_init(&f, r, dev, k.pt);
    unsigned steps = rt_valgrind() ? 2 : 4;
    for (unsigned st = 1; st <= steps; st++) {
        ho_step_info info;
        rt_fw_step(&f, st == 1, &info);
        ck_assert_uint_eq(info.step, st);
        ck_assert_uint_le(info.peak_device_bytes, k.budget);
        ck_assert_uint_eq(info.h2d_bytes, k.s->predicted.h2d_bytes);
        ck_assert_uint_eq(info.d2h_bytes, k.s->predicted.d2h_bytes);
        ck_assert(info.wall_us > 0);
        ck_assert(info.exposed_us >= 0 && info.exposed_us <= info.wall_us);
        ck_assert_double_eq(info.stall_us, 0);
        ho_step_info again;
        ck_assert_int_eq(ho_step_stats(r, st, &again), 0);
        ck_assert_uint_eq(again.h2d_bytes, info.h2d_bytes);
        ck_assert_int_eq(ho_step_stats(r, 0, &again), 0);
        ck_assert_uint_eq(again.step, st);
    }
    ck_assert_uint_eq(f.bad_reads, 0);
    ck_assert_uint_gt(f.reads_checked, k.pt->n_ops / 2);
    ho_step_info none;
    ck_assert_int_eq(ho_step_stats(r, steps + 1, &none), -ENOENT);

    /* Retained storages that a step starts with hold the content of
     * their last write (`initial: none` ones start each step anew). */
    for (uint32_t i = 0; i < k.pt->n_storages; i++) {
        const plan_storage *s = &k.pt->storages[i];
        if (!s->retained || !f.ver[i] || s->initial == PLAN_INIT_NONE)
            continue;
        ck_assert_int_eq(ho_storage_read(r, s->id, f.buf, s->bytes), 0);
        ck_assert_msg(rt_check(f.buf, s->bytes, rt_seed(s->id, f.ver[i])),
                      "retained storage %llu lost its content",
                      (unsigned long long)s->id);
    }
    rt_fw_done(&f);
    ck_assert_ptr_null(ho_replay_free(r));
    ck_assert_uint_eq(ho_device_used(dev), 0);
    ck_assert_uint_le(ho_device_peak(dev), k.budget);
    ho_device_close(dev);
    case_free(&k);
}

START_TEST(replay_content_duplex)
{
    unsigned n = rt_valgrind() ? 1 : 4;
    for (unsigned i = 0; i < n; i++)
        run_content(11 + i, 1);
}
END_TEST

START_TEST(replay_content_simplex)
{
    unsigned n = rt_valgrind() ? 1 : 3;
    for (unsigned i = 0; i < n; i++)
        run_content(31 + i, 0);
}
END_TEST

/* ------------------------------------------------------------ copy log */

static void run_copy_log(uint64_t seed, int duplex)
{
    rt_case k;
    case_make(&k, seed, duplex);
    size_t copies = rt_sched_copies(k.pt, k.s, NULL);
    ck_assert_uint_gt(copies, 2);
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, k.budget, &dev), 0);
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, k.p, NULL, &r), 0);
    ho_copy_record *rec = calloc(copies + 8, sizeof(*rec));
    ck_assert_ptr_nonnull(rec);
    size_t n = 99;
    ho_copy_log_info li;

    /* Off: nothing to read. */
    ck_assert_int_eq(ho_step_copies(r, rec, copies, &n), HO_E_STATE);
    ck_assert_int_eq(ho_step_copies_info(r, &li), HO_E_STATE);
    ck_assert_int_eq(ho_replay_record_copies(r, HO_COPY_LOG_MAX + 1),
                     HO_E_INVALID_SIZE);
    ck_assert_int_eq(ho_replay_record_copies(r, (uint32_t)copies + 8), 0);
    ck_assert_int_eq(ho_step_copies(r, rec, copies, &n), -ENOENT);
    ck_assert_int_eq(ho_step_copies(r, NULL, 1, &n), -EINVAL);

    rt_fw f;
    rt_fw_init(&f, r, dev, k.pt);
    unsigned steps = rt_valgrind() ? 2 : 3;
    for (unsigned st = 1; st <= steps; st++) {
        ho_step_info info;
        rt_fw_step(&f, st == 1, &info);
        n = 0;
        ck_assert_int_eq(ho_step_copies(r, rec, copies + 8, &n), 0);
        rt_check_copies(k.pt, k.s, rec, n, &info, duplex);
        ck_assert_int_eq(ho_step_copies_info(r, &li), 0);
        ck_assert_uint_eq(li.step, st);
        ck_assert_uint_eq(li.records, copies);
        ck_assert_uint_eq(li.dropped, 0);
        ck_assert_uint_eq(li.max_records, copies + 8);
    }

    /* A smaller buffer gets the first records and the full count. */
    ho_copy_record few[2];
    ck_assert_int_eq(ho_step_copies(r, few, 2, &n), 0);
    ck_assert_uint_eq(n, copies);
    ck_assert_int_eq(memcmp(few, rec, sizeof(few)), 0);
    ck_assert_int_eq(ho_step_copies(r, NULL, 0, &n), 0);
    ck_assert_uint_eq(n, copies);

    /* Inside a step: the log's size is fixed, and the records are still
     * those of the last completed step. */
    rt_fw_inputs(&f, 0);
    ck_assert_int_eq(ho_step_begin(r), 0);
    ck_assert_int_eq(ho_replay_record_copies(r, 4), HO_E_STATE);
    for (uint32_t op = 0; op < k.pt->n_ops / 2; op++) {
        ck_assert_int_eq(ho_op_begin(r, op), 0);
        ck_assert_int_eq(rt_fw_compute(&f, op), 0);
        ck_assert_int_eq(ho_op_end(r, op), 0);
    }
    ck_assert_int_eq(ho_step_copies_info(r, &li), 0);
    ck_assert_uint_eq(li.step, steps);
    ho_copy_record *again = calloc(copies, sizeof(*again));
    ck_assert_ptr_nonnull(again);
    ck_assert_int_eq(ho_step_copies(r, again, copies, &n), 0);
    ck_assert_uint_eq(n, copies);
    ck_assert_int_eq(memcmp(again, rec, copies * sizeof(*rec)), 0);
    for (uint32_t op = k.pt->n_ops / 2; op < k.pt->n_ops; op++) {
        ck_assert_int_eq(ho_op_begin(r, op), 0);
        ck_assert_int_eq(rt_fw_compute(&f, op), 0);
        ck_assert_int_eq(ho_op_end(r, op), 0);
    }
    ho_step_info info;
    ck_assert_int_eq(ho_step_end(r, &info), 0);
    ck_assert_int_eq(ho_step_copies(r, rec, copies, &n), 0);
    rt_check_copies(k.pt, k.s, rec, n, &info, duplex);
    free(again);

    /* A log smaller than the step: the first copies, the rest counted. */
    ck_assert_int_eq(ho_replay_record_copies(r, 3), 0);
    ck_assert_int_eq(ho_step_copies(r, rec, copies, &n), -ENOENT);
    rt_fw_step(&f, 0, &info);
    ck_assert_int_eq(ho_step_copies(r, rec, copies, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(ho_step_copies_info(r, &li), 0);
    ck_assert_uint_eq(li.records, 3);
    ck_assert_uint_eq(li.dropped, copies - 3);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_ge(rec[i].end_ns, rec[i].start_ns);

    /* Off again: the hooks run as before, nothing is kept. */
    ck_assert_int_eq(ho_replay_record_copies(r, 0), 0);
    rt_fw_step(&f, 0, &info);
    ck_assert_int_eq(ho_step_copies(r, rec, copies, &n), HO_E_STATE);
    ck_assert_uint_eq(f.bad_reads, 0);

    /* On when the replay is freed: the log goes with it. */
    ck_assert_int_eq(ho_replay_record_copies(r, 16), 0);
    rt_fw_step(&f, 0, &info);
    rt_fw_done(&f);
    free(rec);
    ck_assert_ptr_null(ho_replay_free(r));
    ck_assert_uint_eq(ho_device_used(dev), 0);
    ho_device_close(dev);
    case_free(&k);
}

START_TEST(copy_log_duplex)
{
    unsigned n = rt_valgrind() ? 1 : 3;
    for (unsigned i = 0; i < n; i++)
        run_copy_log(81 + i, 1);
}
END_TEST

START_TEST(copy_log_simplex)
{
    unsigned n = rt_valgrind() ? 1 : 2;
    for (unsigned i = 0; i < n; i++)
        run_copy_log(91 + i, 0);
}
END_TEST

/* ------------------------------------------------------------ broken */

/* Index of the first prefetch whose removal breaks the schedule. */
static size_t a_prefetch(const rt_case *k)
{
    for (size_t i = 0; i < k->s->n_actions; i++)
        if (k->s->actions[i].kind == PLAN_ACT_PREFETCH)
            return i;
    ck_abort_msg("the plan has no prefetch");
    return 0;
}

/* The first op after point (op, when) that reads storage index s. */
static uint32_t next_reader(const plan_trace *t, uint32_t s, uint32_t op)
{
    for (uint32_t a = t->acc_start[s]; a < t->acc_start[s + 1]; a++)
        if (t->acc[a].op >= op && (t->acc[a].flags & PLAN_ACC_READ))
            return t->acc[a].op;
    return PLAN_NONE;
}

/* A free_device appended to the `before` actions of an op that reads
 * the storage (in the middle of the step): the storage is on device there
 * in the valid schedule, so the action itself is valid and the read is
 * what breaks. */
static plan_action free_before_read(const rt_case *k)
{
    for (uint32_t op = k->pt->n_ops / 3; op < k->pt->n_ops; op++) {
        const plan_op *o = &k->pt->ops[op];
        if (o->n_reads == 0)
            continue;
        plan_action a = {
            .storage_id = k->pt->storages[k->pt->refs[o->first_ref]].id,
            .op = op,
            .when = PLAN_BEFORE,
            .kind = PLAN_ACT_FREE_DEVICE};
        return a;
    }
    ck_abort_msg("no op reads anything");
    plan_action none = {0};
    return none;
}

START_TEST(broken_schedule_refused)
{
    rt_case k;
    case_make(&k, 51, 1);
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, k.budget, &dev), 0);
    char want[64];

    /* A prefetch removed: refused, naming the storage. */
    size_t pi = a_prefetch(&k);
    const plan_action *pa = &k.s->actions[pi];
    ho_plan *p = edited(&k, pi, NULL);
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, p, NULL, &r),
                     HO_E_BAD_SCHEDULE);
    ck_assert_ptr_null(r);
    snprintf(want, sizeof want, "storage %llu",
             (unsigned long long)pa->storage_id);
    ck_assert_msg(strstr(ho_runtime_last_error(), want) &&
                      strstr(ho_runtime_last_error(), "op"),
                  "message: %s", ho_runtime_last_error());
    ho_plan_free(p);

    /* A free_device right before a read. */
    plan_action fa = free_before_read(&k);
    p = edited(&k, SIZE_MAX, &fa);
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, p, NULL, &r),
                     HO_E_BAD_SCHEDULE);
    snprintf(want, sizeof want, "storage %llu",
             (unsigned long long)fa.storage_id);
    ck_assert_msg(strstr(ho_runtime_last_error(), want),
                  "message: %s", ho_runtime_last_error());
    ho_plan_free(p);

    /* A plan whose peak is above the device's capacity. */
    ho_device *small = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, k.budget / 2, &small), 0);
    ck_assert_int_eq(ho_replay_new(NULL, small, k.t, k.p, NULL, &r),
                     HO_E_DEVICE);
    ho_device_close(small);

    ck_assert_uint_eq(ho_device_used(dev), 0);
    ho_device_close(dev);
    case_free(&k);
}
END_TEST

/* Run a step of a broken replay (install check bypassed): the op reading
 * the data that is not on device fails before it runs, every earlier read
 * verified.  Returns the op that failed. */
static uint32_t run_broken(rt_case *k, ho_plan *p, uint64_t storage_id,
                           uint32_t expect_op)
{
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, k->budget * 2, &dev), 0);
    hor_test_skip_check = 1;
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k->t, p, NULL, &r), 0);
    hor_test_skip_check = 0;
    rt_fw f;
    rt_fw_init(&f, r, dev, k->pt);
    rt_fw_inputs(&f, 1);
    ck_assert_int_eq(ho_step_begin(r), 0);
    uint32_t failed = PLAN_NONE;
    for (uint32_t op = 0; op < k->pt->n_ops; op++) {
        int rc = ho_op_begin(r, op);
        if (rc < 0) {
            ck_assert_int_eq(rc, HO_E_BAD_SCHEDULE);
            failed = op;
            break;
        }
        ck_assert_msg(rt_fw_compute(&f, op) == 0, "op %u read wrong bytes",
                      op);
        ck_assert_int_eq(ho_op_end(r, op), 0);
    }
    ck_assert_uint_eq(failed, expect_op);
    char want[64];
    snprintf(want, sizeof want, "storage %llu",
             (unsigned long long)storage_id);
    ck_assert_msg(strstr(ho_runtime_last_error(), want),
                  "message: %s", ho_runtime_last_error());
    snprintf(want, sizeof want, "op %u", expect_op);
    ck_assert_msg(strstr(ho_runtime_last_error(), want),
                  "message: %s", ho_runtime_last_error());
    /* The error is sticky for the step; the step still ends cleanly. */
    ck_assert_int_eq(ho_op_begin(r, expect_op), HO_E_BAD_SCHEDULE);
    ck_assert_int_eq(ho_op_end(r, expect_op), HO_E_BAD_SCHEDULE);
    ho_step_info info;
    ck_assert_int_eq(ho_step_end(r, &info), HO_E_BAD_SCHEDULE);
    ck_assert_uint_eq(f.bad_reads, 0);
    rt_fw_done(&f);
    ho_replay_free(r);
    ck_assert_uint_eq(ho_device_used(dev), 0);
    ho_device_close(dev);
    return failed;
}

START_TEST(broken_schedule_caught_at_run_time)
{
    rt_case k;
    case_make(&k, 52, 1);

    /* Missing prefetch. */
    size_t pi = a_prefetch(&k);
    plan_action pa = k.s->actions[pi];
    uint32_t reader = next_reader(k.pt, pa.storage,
                                  pa.when == PLAN_BEFORE ? pa.op : pa.op + 1);
    ck_assert_uint_ne(reader, PLAN_NONE);
    ho_plan *p = edited(&k, pi, NULL);
    run_broken(&k, p, pa.storage_id, reader);
    ho_plan_free(p);

    /* free_device before a read. */
    plan_action fa = free_before_read(&k);
    p = edited(&k, SIZE_MAX, &fa);
    run_broken(&k, p, fa.storage_id, fa.op);
    ho_plan_free(p);
    case_free(&k);
}
END_TEST

/* ------------------------------------------------------------ divergence */

START_TEST(divergence_falls_back)
{
    rt_case k;
    case_make(&k, 61, 1);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(k.pt, &sm), 0);
    /* Room for no offload: the fallback needs it. */
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, sm.total_bytes, &dev), 0);
    ho_replay_opts opts = {.verify_ops = 1};
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, k.p, &opts, &r), 0);
    rt_fw f;
    rt_fw_init(&f, r, dev, k.pt);
    uint32_t mid = k.pt->n_ops / 2;

    for (int kind = 0; kind < 3; kind++) {
        /* A normal step first. */
        ho_step_info info;
        rt_fw_step(&f, kind == 0, &info);
        ck_assert_uint_eq(info.h2d_bytes, k.s->predicted.h2d_bytes);

        /* Then one that diverges at op `mid`. */
        rt_fw_inputs(&f, 0);
        ck_assert_int_eq(ho_step_begin(r), 0);
        for (uint32_t op = 0; op < k.pt->n_ops; op++) {
            int rc;
            if (op == mid && kind == 0) {
                /* An op the trace does not expect here. */
                rc = ho_op_begin(r, mid + 1);
                ck_assert_int_eq(rc, HO_E_DIVERGED);
                ck_assert_ptr_nonnull(strstr(ho_runtime_last_error(),
                                             "op"));
            } else if (op == mid && kind == 1) {
                /* A storage of another size than traced. */
                const plan_op *o = &k.pt->ops[op];
                uint32_t si = o->n_reads + o->n_writes
                                  ? k.pt->refs[o->first_ref]
                                  : 0;
                const plan_storage *ps = &k.pt->storages[si];
                ck_assert_int_eq(ho_storage_check(r, ps->id, ps->bytes), 0);
                rc = ho_storage_check(r, ps->id, ps->bytes + 8);
                ck_assert_int_eq(rc, HO_E_DIVERGED);
            } else if (op == mid && kind == 2) {
                /* ho_op_check: the right sets pass, a storage the op
                 * does not read diverges. */
                const plan_op *o = &k.pt->ops[op];
                const uint32_t *ref = k.pt->refs + o->first_ref;
                uint64_t ids[64];
                ck_assert_uint_lt(o->n_reads + o->n_writes, 64);
                for (uint32_t q = 0; q < o->n_reads + o->n_writes; q++)
                    ids[q] = k.pt->storages[ref[q]].id;
                ck_assert_int_eq(ho_op_check(r, op, ids, o->n_reads,
                                             ids + o->n_reads, o->n_writes),
                                 0);
                uint32_t other = 0;
                for (;; other++) {
                    uint32_t q = 0;
                    while (q < o->n_reads && ref[q] != other)
                        q++;
                    if (q == o->n_reads)
                        break;
                }
                uint64_t bogus = k.pt->storages[other].id;
                rc = ho_op_check(r, op, &bogus, 1, ids + o->n_reads,
                                 o->n_writes);
                ck_assert_int_eq(rc, HO_E_DIVERGED);
            }
            rc = ho_op_begin(r, op);
            ck_assert_msg(rc == 0, "fallback op %u: %s", op,
                          ho_runtime_last_error());
            /* No offload: the data is on device and correct. */
            ck_assert_msg(rt_fw_compute(&f, op) == 0,
                          "fallback op %u read wrong bytes", op);
            ck_assert_int_eq(ho_op_end(r, op), 0);
        }
        ck_assert_int_eq(ho_step_end(r, &info), 0);
        ck_assert_int_eq(info.diverged, 1);
        ck_assert_uint_eq(info.ops, mid);
        ck_assert_uint_eq(f.bad_reads, 0);
    }
    /* And the next step replays normally again. */
    ho_step_info info;
    rt_fw_step(&f, 0, &info);
    ck_assert_uint_eq(info.h2d_bytes, k.s->predicted.h2d_bytes);
    ck_assert_uint_eq(info.d2h_bytes, k.s->predicted.d2h_bytes);

    /* A step that ends early diverges too. */
    rt_fw_inputs(&f, 0);
    ck_assert_int_eq(ho_step_begin(r), 0);
    ck_assert_int_eq(ho_op_begin(r, 0), 0);
    rt_fw_compute(&f, 0);
    ck_assert_int_eq(ho_op_end(r, 0), 0);
    ck_assert_int_eq(ho_step_end(r, &info), HO_E_DIVERGED);
    ck_assert_int_eq(info.diverged, 1);
    rt_fw_step(&f, 0, &info);

    rt_fw_done(&f);
    ho_replay_free(r);
    ck_assert_uint_eq(ho_device_used(dev), 0);
    ho_device_close(dev);
    case_free(&k);
}
END_TEST

/* ------------------------------------------------------------ devices */

START_TEST(host_capacity_is_hard)
{
    ho_device *d = NULL;
    ck_assert_int_eq(ho_device_open("nope", 0, 1 << 20, &d), -EINVAL);
    ck_assert_int_eq(ho_device_open("host", 0, 0, &d), HO_E_INVALID_SIZE);
    ck_assert_ptr_null(ho_device_unavailable_reason("host"));
    ck_assert_ptr_nonnull(ho_device_unavailable_reason("nope"));

    ck_assert_int_eq(ho_device_open("host", 0, 1 << 20, &d), 0);
    void *a = NULL, *b = NULL, *c = NULL;
    ck_assert_int_eq(ho_device_alloc(d, 512 << 10, &a), 0);
    ck_assert_int_eq(ho_device_alloc(d, 512 << 10, &b), 0);
    ck_assert_uint_eq(ho_device_used(d), 1 << 20);
    /* One byte over the capacity fails hard. */
    ck_assert_int_eq(ho_device_alloc(d, 1, &c), HO_E_DEVICE);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(strstr(ho_runtime_last_error(), "capacity"));
    ck_assert_int_eq(ho_device_alloc(d, 0, &c), HO_E_INVALID_SIZE);
    /* The memory is usable and the buffers do not overlap. */
    memset(a, 0xa5, 512 << 10);
    memset(b, 0x5a, 512 << 10);
    uint8_t probe[4];
    ck_assert_int_eq(ho_device_read(d, probe, (uint8_t *)a + 100, 4), 0);
    ck_assert_uint_eq(probe[0], 0xa5);
    ck_assert_int_eq(ho_device_write(d, b, "xyzw", 4), 0);
    ck_assert_int_eq(memcmp(b, "xyzw", 4), 0);
    ck_assert_int_eq(ho_device_write(d, probe, "x", 1), -EINVAL);
    ck_assert_int_eq(ho_device_free(d, a), 0);
    ck_assert_int_eq(ho_device_free(d, a), -EINVAL);
    ck_assert_int_eq(ho_device_alloc(d, 300 << 10, &a), 0);
    ck_assert_int_eq(ho_device_alloc(d, 200 << 10, &c), 0);
    ck_assert_int_eq(ho_device_alloc(d, 100 << 10, &c), HO_E_DEVICE);
    ck_assert_uint_eq(ho_device_peak(d), 1 << 20);
    ck_assert_int_eq(ho_device_free(d, NULL), 0);

    /* Many small allocations and frees in a shuffled order coalesce back
     * into one region. */
    ck_assert_int_eq(ho_device_free(d, a), 0);
    ck_assert_int_eq(ho_device_free(d, b), 0);
    ck_assert_int_eq(ho_device_free(d, c), 0);
    ck_assert_uint_eq(ho_device_used(d), 0);
    enum { N = 200 };
    void *v[N];
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(ho_device_alloc(d, 1000 + (uint64_t)i * 37, &v[i]),
                         0);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(ho_device_free(d, v[(i * 7) % N]), 0);
    ck_assert_uint_eq(ho_device_used(d), 0);
    ck_assert_int_eq(ho_device_alloc(d, 1 << 20, &a), 0);
    ck_assert_int_eq(ho_device_free(d, a), 0);
    ck_assert_ptr_null(ho_device_close(d));
    ck_assert_ptr_null(ho_device_close(NULL));
}
END_TEST

START_TEST(capacity_overrun_at_run_time)
{
    /* With the install check bypassed, a plan for a larger budget on a
     * smaller device fails hard at the allocation, never silently. */
    rt_case k;
    case_make(&k, 71, 1);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(k.pt, &sm), 0);
    uint64_t cap = sm.max_op_working_set - 1;
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, cap, &dev), 0);
    hor_test_skip_check = 1;
    ho_replay *r = NULL;
    int rc = ho_replay_new(NULL, dev, k.t, k.p, NULL, &r);
    hor_test_skip_check = 0;
    if (rc == 0) {
        rt_fw f;
        rt_fw_init(&f, r, dev, k.pt);
        rt_fw_inputs(&f, 1);
        ck_assert_int_eq(ho_step_begin(r), 0);
        for (uint32_t op = 0; op < k.pt->n_ops && rc == 0; op++) {
            rc = ho_op_begin(r, op);
            if (rc == 0) {
                ck_assert_int_eq(rt_fw_compute(&f, op), 0);
                rc = ho_op_end(r, op);
            }
        }
        ck_assert_int_eq(ho_step_end(r, NULL), HO_E_DEVICE);
        rt_fw_done(&f);
        ho_replay_free(r);
    }
    ck_assert_int_eq(rc, HO_E_DEVICE);
    ck_assert_ptr_nonnull(strstr(ho_runtime_last_error(), "capacity"));
    ck_assert_uint_le(ho_device_peak(dev), cap);
    ho_device_close(dev);
    case_free(&k);
}
END_TEST

START_TEST(storage_registry)
{
    rt_case k;
    case_make(&k, 81, 1);
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, k.budget * 2, &dev), 0);
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, k.p, NULL, &r), 0);
    ho_replay *r2 = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, k.p, NULL, &r2),
                     HO_E_BUSY);

    /* A device storage takes a buffer of the application. */
    uint32_t s;
    for (s = 0; s < k.pt->n_storages; s++)
        if (k.pt->storages[s].initial == PLAN_INIT_DEVICE &&
            k.pt->storages[s].retained)
            break;
    ck_assert_uint_lt(s, k.pt->n_storages);
    const plan_storage *ps = &k.pt->storages[s];
    uint64_t used = ho_device_used(dev);
    void *mine = NULL;
    ck_assert_int_eq(ho_device_alloc(dev, ps->bytes, &mine), 0);
    ck_assert_int_eq(ho_storage_bind(r, ps->id, mine, ps->bytes + 1),
                     HO_E_DIVERGED);
    ck_assert_int_eq(ho_storage_bind(r, ps->id, (uint8_t *)mine + 256,
                                     ps->bytes), -EINVAL);
    ck_assert_int_eq(ho_storage_bind(r, ps->id, mine, ps->bytes), 0);
    ck_assert_ptr_eq(ho_storage_ptr(r, ps->id), mine);
    ck_assert_uint_eq(ho_device_used(dev), used); /* the old one went */
    ck_assert_int_eq(ho_storage_check(r, ps->id, ps->bytes), 0);
    ck_assert_int_eq(ho_storage_check(r, ps->id, 1), HO_E_DIVERGED);
    ck_assert_int_eq(ho_storage_check(r, 424242, 1), -ENOENT);
    ck_assert_ptr_null(ho_storage_ptr(r, 424242));

    /* The replay runs with the bound buffer and frees it at the end. */
    rt_fw f;
    rt_fw_init(&f, r, dev, k.pt);
    rt_fw_step(&f, 1, NULL);
    ck_assert_uint_eq(f.bad_reads, 0);
    ck_assert_int_eq(ho_storage_read(r, ps->id, f.buf, ps->bytes), 0);
    ck_assert(rt_check(f.buf, ps->bytes, rt_seed(ps->id, f.ver[s])));
    ck_assert_int_eq(ho_storage_read(r, ps->id, f.buf, ps->bytes - 1),
                     HO_E_INVALID_SIZE);
    /* Hooks outside a step are refused. */
    ck_assert_int_eq(ho_op_begin(r, 0), HO_E_STATE);
    ck_assert_int_eq(ho_step_end(r, NULL), HO_E_STATE);
    ck_assert_int_eq(ho_step_begin(r), 0);
    ck_assert_int_eq(ho_step_begin(r), HO_E_STATE);
    ck_assert_int_eq(ho_storage_bind(r, ps->id, mine, ps->bytes),
                     HO_E_STATE);
    ck_assert_int_eq(ho_step_end(r, NULL), HO_E_DIVERGED);
    rt_fw_done(&f);
    ho_replay_free(r);
    ck_assert_uint_eq(ho_device_used(dev), 0);
    ho_device_close(dev);
    case_free(&k);
}
END_TEST

/* ------------------------------------------------------------ control */

/* Plays the daemon's half of the control region for a local replay: reads
 * the eventfd, and when `urgent` names a slot in FLASH, brings it to DDR,
 * bumps seq and wakes the client. */
typedef struct fake_daemon {
    ho_ctl_header *h;
    int efd;
    pthread_t th;
    atomic_int stop;
    atomic_ulong signals, served;
} fake_daemon;

static void *fake_daemon_main(void *arg)
{
    fake_daemon *d = arg;
    while (!atomic_load(&d->stop)) {
        struct pollfd pfd = {.fd = d->efd, .events = POLLIN};
        if (poll(&pfd, 1, 20) <= 0)
            continue;
        uint64_t v;
        if (read(d->efd, &v, sizeof v) == (ssize_t)sizeof v)
            atomic_fetch_add(&d->signals, v);
        uint32_t u = atomic_load(&d->h->urgent);
        if (u == 0 || u > d->h->n_slots)
            continue;
        ho_ctl_slot *sl = &ho_ctl_slots(d->h)[u - 1];
        uint32_t want = HO_SLOT_FLASH;
        if (atomic_compare_exchange_strong(&sl->state, &want, HO_SLOT_DDR)) {
            atomic_fetch_add(&d->served, 1);
            atomic_fetch_add(&d->h->seq, 1);
            syscall(SYS_futex, (uint32_t *)&d->h->seq, FUTEX_WAKE, INT32_MAX,
                    NULL, NULL, 0);
        }
    }
    return NULL;
}

START_TEST(control_region_protocol)
{
    rt_case k;
    case_make(&k, 91, 1);
    ho_device *dev = NULL;
    ck_assert_int_eq(ho_device_open("host", 0, k.budget, &dev), 0);
    ho_replay *r = NULL;
    ck_assert_int_eq(ho_replay_new(NULL, dev, k.t, k.p, NULL, &r), 0);
    ho_ctl_header *h = r->ctl.h;
    ck_assert_uint_eq(h->magic, HO_CTL_MAGIC);
    ck_assert_uint_eq(h->n_ops, k.pt->n_ops);
    ck_assert_uint_eq(atomic_load(&h->op), HO_CTL_IDLE);

    /* Stand in for the daemon: an eventfd and a thread. */
    fake_daemon fd;
    memset(&fd, 0, sizeof fd);
    fd.h = h;
    fd.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ck_assert_int_ge(fd.efd, 0);
    r->ctl.efd = dup(fd.efd);
    ck_assert_int_ge(r->ctl.efd, 0);
    ck_assert_int_eq(pthread_create(&fd.th, NULL, fake_daemon_main, &fd), 0);

    /* Milestones at ops 3 and 7: the client signals exactly there. */
    uint64_t *ms = (uint64_t *)(void *)((uint8_t *)h + h->milestones_offset);
    ms[0] |= (1ull << 3) | (1ull << 7);
    rt_fw f;
    rt_fw_init(&f, r, dev, k.pt);
    ho_step_info info;
    rt_fw_step(&f, 1, &info);
    for (int i = 0; i < 500 && atomic_load(&fd.signals) < 2; i++)
        usleep(2000);
    ck_assert_uint_eq(atomic_load(&fd.signals), 2);
    ck_assert_uint_eq(atomic_load(&h->step), 1);
    ck_assert_uint_eq(atomic_load(&h->op), HO_CTL_IDLE);
    ck_assert_uint_eq(atomic_load(&h->ops_done), k.pt->n_ops);
    ck_assert_uint_eq(atomic_load(&h->h2d_bytes), info.h2d_bytes);
    ck_assert_uint_eq(atomic_load(&h->d2h_bytes), info.d2h_bytes);
    ck_assert_uint_eq(atomic_load(&h->peak_device_bytes),
                      info.peak_device_bytes);
    ck_assert_double_eq(info.stall_us, 0);
    /* Every slot is back in DDR, stored ones carry a version. */
    uint64_t versions = 0;
    for (uint32_t i = 0; i < h->n_slots; i++) {
        ck_assert_uint_eq(atomic_load(&r->ctl.slots[i].state), HO_SLOT_DDR);
        versions += atomic_load(&r->ctl.slots[i].version);
    }
    ck_assert_uint_gt(versions, 0);

    /* Every host copy "on flash": each first copy of a slot in the next
     * step waits for the daemon, counted as stall, data still right. */
    for (uint32_t i = 0; i < h->n_slots; i++)
        atomic_store(&r->ctl.slots[i].state, HO_SLOT_FLASH);
    ms[0] = 0;
    rt_fw_step(&f, 0, &info);
    ck_assert_uint_eq(f.bad_reads, 0);
    ck_assert_uint_gt(atomic_load(&fd.served), 0);
    ck_assert(info.stall_us > 0);
    ck_assert(info.exposed_us >= info.stall_us);
    ck_assert_uint_eq(atomic_load(&h->urgent), 0);
    ck_assert_uint_gt(atomic_load(&h->stall_ns), 0);

    atomic_store(&fd.stop, 1);
    pthread_join(fd.th, NULL);
    close(fd.efd);
    rt_fw_done(&f);
    ho_replay_free(r);
    ho_device_close(dev);
    case_free(&k);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_replay");
    TCase *tc = tcase_create("replay");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, rt_valgrind() ? 900 : 120);
    tcase_add_test(tc, replay_content_duplex);
    tcase_add_test(tc, replay_content_simplex);
    tcase_add_test(tc, copy_log_duplex);
    tcase_add_test(tc, copy_log_simplex);
    tcase_add_test(tc, broken_schedule_refused);
    tcase_add_test(tc, broken_schedule_caught_at_run_time);
    tcase_add_test(tc, divergence_falls_back);
    tcase_add_test(tc, host_capacity_is_hard);
    tcase_add_test(tc, capacity_overrun_at_run_time);
    tcase_add_test(tc, storage_registry);
    tcase_add_test(tc, control_region_protocol);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
