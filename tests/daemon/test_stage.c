/* tests/daemon/test_stage.c - StageRequest against the real daemon: the
 * reply carries the control region memfd and the eventfd, both usable;
 * the control region describes the host copies the reply lists; each bad
 * field gets its specific code and allocates nothing; a second request
 * replaces the first; closing the session frees everything. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/control.h"
#include "tests/harness.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"
#include "proto/plan.pb-c.h"
#include "tests/daemon/rawclient.h"

#define MiB (1ull << 20)

static ho_harness *h;

static void start(void)
{
    h = ho_harness_start_args(NULL);
}

static void stop(void)
{
    int st = ho_harness_free(h);
    h = NULL;
    ck_assert_msg(st == 0, "daemon exit status %d", st);
}

/* A trace, the plan the daemon will compute for it (computed locally with
 * the same library), and the host copies that plan needs. */
typedef struct fixture {
    plan_trace *t;
    Hyperoffload__Trace *msg;
    plan_schedule *sched;
    uint64_t budget, hash;
    uint32_t n_slots;
    Hyperoffload__StageSlot slot_store[256];
    Hyperoffload__StageSlot *slots[256];
} fixture;

static void fixture_init(fixture *f, uint64_t seed)
{
    memset(f, 0, sizeof(*f));
    plan_gen_random_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.seed = seed;
    cfg.n_ops = 80;
    cfg.n_storages = 30;
    cfg.max_refs_per_op = 3;
    cfg.min_bytes = MiB / 4;
    cfg.max_bytes = MiB;
    cfg.p_initial_device = 0.2;
    cfg.p_initial_host = 0.25;
    cfg.p_retained = 0.2;
    cfg.p_pinned = 0.0;
    char err[256];
    ck_assert_msg(plan_gen_random(&cfg, &f->t, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_int_eq(plan_trace_finish(f->t, err, sizeof(err)), 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(plan_trace_to_pb(f->t, &buf, &len), 0);
    f->msg = hyperoffload__trace__unpack(NULL, len, buf);
    ck_assert_ptr_nonnull(f->msg);
    free(buf);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(f->t, &sm), 0);
    plan_result res;
    /* Find a budget the planner meets that makes it store something. */
    for (int pct = 70; pct <= 100; pct += 5) {
        f->budget = sm.no_offload_peak * (uint64_t)pct / 100;
        if (plan_make(f->t, f->budget, NULL, &f->sched, &res) == 0)
            break;
        f->sched = NULL;
    }
    ck_assert_ptr_nonnull(f->sched);
    f->hash = plan_trace_hash(f->t);
    uint8_t *need = calloc(f->t->n_storages, 1);
    for (uint32_t i = 0; i < f->t->n_storages; i++)
        need[i] = f->t->storages[i].initial == PLAN_INIT_HOST;
    for (size_t k = 0; k < f->sched->n_actions; k++)
        if (f->sched->actions[k].kind == PLAN_ACT_STORE)
            need[f->sched->actions[k].storage] = 1;
    for (uint32_t i = 0; i < f->t->n_storages; i++) {
        if (!need[i])
            continue;
        ck_assert_uint_lt(f->n_slots, 256);
        Hyperoffload__StageSlot *s = &f->slot_store[f->n_slots];
        hyperoffload__stage_slot__init(s);
        s->storage_id = f->t->storages[i].id;
        s->bytes = f->t->storages[i].bytes;
        f->slots[f->n_slots++] = s;
    }
    free(need);
    ck_assert_uint_ge(f->n_slots, 3);
}

static void fixture_done(fixture *f)
{
    plan_schedule_free(f->sched);
    plan_trace_free(f->t);
    hyperoffload__trace__free_unpacked(f->msg, NULL);
}

static int open_registered(uint64_t budget, int *ret_arena)
{
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_register(fd, "", 0, budget, &r, ret_arena), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY);
    ho_frame_envelope_free(r);
    return fd;
}

static void plan(int fd, fixture *f)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__PlanRequest pr = HYPEROFFLOAD__PLAN_REQUEST__INIT;
    pr.trace = f->msg;
    pr.planner = "";
    pr.budget = f->budget;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST;
    env.plan_request = &pr;
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_call(fd, &env, &r, NULL), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY,
                  "%s", rc_error_message(r));
    ck_assert_uint_eq(r->plan_reply->trace_hash, f->hash);
    ck_assert_uint_eq(r->plan_reply->schedule->n_actions, f->sched->n_actions);
    ho_frame_envelope_free(r);
}

/* StageRequest with the given slots; fds[0..1] receive the descriptors. */
static int stage(int fd, uint64_t hash, uint64_t budget, const char *planner,
                 Hyperoffload__StageSlot **slots, size_t n, uint64_t limit,
                 Hyperoffload__Envelope **ret, int *fds, int *n_fds)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__StageRequest sr = HYPEROFFLOAD__STAGE_REQUEST__INIT;
    sr.trace_hash = hash;
    sr.budget = budget;
    sr.planner = (char *)(planner ? planner : "");
    sr.slots = slots;
    sr.n_slots = n;
    sr.ddr_limit = limit;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REQUEST;
    env.stage_request = &sr;
    return rc_call_fds(fd, &env, ret, fds, 4, n_fds);
}

static void session_usage(int fd, uint64_t *ddr, uint64_t *extents)
{
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_stats(fd, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY);
    ck_assert_ptr_nonnull(r->stats_reply->session);
    *ddr = r->stats_reply->session->ddr_bytes;
    *extents = r->stats_reply->session->extents;
    ho_frame_envelope_free(r);
}

static uint64_t pool_used(void)
{
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_stats(fd, &r), 0);
    uint64_t used = rc_tier_used(r->stats_reply->tiers,
                                 r->stats_reply->n_tiers,
                                 HYPEROFFLOAD__TIER__TIER_DDR);
    ho_frame_envelope_free(r);
    close(fd);
    return used;
}

START_TEST(stage_installs_and_passes_both_fds)
{
    fixture f;
    fixture_init(&f, 5);
    int arena = -1;
    int fd = open_registered(f.budget, &arena);
    ck_assert_int_ge(arena, 0);
    plan(fd, &f);

    Hyperoffload__Envelope *r = NULL;
    int fds[4], n_fds = 0;
    ck_assert_int_eq(stage(fd, f.hash, f.budget, "hoplan", f.slots,
                           f.n_slots, 0, &r, fds, &n_fds), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY,
                  "%s", rc_error_message(r));
    ck_assert_int_eq(n_fds, 2);
    const Hyperoffload__StageReply *sr = r->stage_reply;
    ck_assert_uint_eq(sr->n_extents, f.n_slots);
    uint64_t total = 0;
    for (size_t i = 0; i < sr->n_extents; i++) {
        ck_assert_uint_eq(sr->extents[i]->storage_id, f.slots[i]->storage_id);
        ck_assert_uint_ge(sr->extents[i]->length, f.slots[i]->bytes);
        ck_assert_uint_eq(sr->extents[i]->offset % 4096, 0);
        total += sr->extents[i]->length;
    }
    ck_assert_uint_eq(sr->staged_bytes, total);
    ck_assert_uint_ge(sr->ddr_limit, total);
    ck_assert_uint_eq(sr->stage_actions, 0);
    ck_assert_uint_eq(sr->milestones, 0);

    /* The control region: sealed, of the announced size, mappable, and
     * describing exactly the reply's extents. */
    struct stat sb;
    ck_assert_int_eq(fstat(fds[0], &sb), 0);
    ck_assert_uint_eq((uint64_t)sb.st_size, sr->control_size);
    int seals = fcntl(fds[0], F_GET_SEALS);
    ck_assert_int_eq(seals & (F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL),
                     F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
    ck_assert_int_eq(ftruncate(fds[0], (off_t)sr->control_size * 2), -1);
    ho_ctl_header *hd = mmap(NULL, sr->control_size, PROT_READ | PROT_WRITE,
                             MAP_SHARED, fds[0], 0);
    ck_assert_ptr_ne(hd, MAP_FAILED);
    ck_assert_uint_eq(hd->magic, HO_CTL_MAGIC);
    ck_assert_uint_eq(hd->version, HO_CTL_VERSION);
    ck_assert_uint_eq(hd->header_bytes, sizeof(ho_ctl_header));
    ck_assert_uint_eq(hd->n_slots, f.n_slots);
    ck_assert_uint_eq(hd->n_ops, f.t->n_ops);
    ck_assert_uint_eq(hd->total_bytes, sr->control_size);
    ck_assert_uint_le(hd->slots_offset + hd->n_slots * sizeof(ho_ctl_slot),
                      hd->milestones_offset);
    ck_assert_uint_le(hd->milestones_offset + (hd->n_ops + 63) / 64 * 8,
                      sr->control_size);
    ck_assert_uint_eq(atomic_load(&hd->op), HO_CTL_IDLE);
    ck_assert_uint_eq(atomic_load(&hd->ddr_bytes), total);
    ck_assert_uint_eq(atomic_load(&hd->flash_bytes), 0);
    ho_ctl_slot *cs = ho_ctl_slots(hd);
    for (uint32_t i = 0; i < hd->n_slots; i++) {
        ck_assert_uint_eq(cs[i].storage_id, sr->extents[i]->storage_id);
        ck_assert_uint_eq(cs[i].extent_id, sr->extents[i]->extent_id);
        ck_assert_uint_eq(cs[i].offset, sr->extents[i]->offset);
        ck_assert_uint_eq(cs[i].length, f.slots[i]->bytes);
        ck_assert_uint_eq(atomic_load(&cs[i].state), HO_SLOT_DDR);
        ck_assert_uint_eq(atomic_load(&cs[i].version), 0);
    }
    for (uint32_t op = 0; op < hd->n_ops; op++)
        ck_assert(!ho_ctl_is_milestone(hd, op));

    /* The eventfd: an eventfd the client may write (and the daemon
     * survives being signalled). */
    char link[64], target[128];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fds[1]);
    ssize_t tl = readlink(link, target, sizeof(target) - 1);
    ck_assert_int_gt(tl, 0);
    target[tl] = 0;
    ck_assert_msg(strstr(target, "eventfd"), "fd is %s", target);
    uint64_t one = 1;
    ck_assert_int_eq(write(fds[1], &one, sizeof(one)), (ssize_t)sizeof(one));

    /* The host copies are usable through the arena mapping. */
    Hyperoffload__Envelope *reg = NULL;
    (void)reg;
    uint8_t *base = mmap(NULL, 256 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED,
                         arena, 0);
    ck_assert_ptr_ne(base, MAP_FAILED);
    for (size_t i = 0; i < sr->n_extents; i++)
        memset(base + sr->extents[i]->offset, (int)i + 1,
               f.slots[i]->bytes);
    for (size_t i = 0; i < sr->n_extents; i++)
        ck_assert_uint_eq(base[sr->extents[i]->offset + f.slots[i]->bytes - 1],
                          (uint8_t)(i + 1));

    /* Accounting: the session holds exactly the host copies. */
    uint64_t ddr = 0, ext = 0;
    session_usage(fd, &ddr, &ext);
    ck_assert_uint_eq(ddr, total);
    ck_assert_uint_eq(ext, f.n_slots);

    /* Host copies cannot be freed or moved by hand. */
    Hyperoffload__Envelope *e2 = NULL;
    ck_assert_int_eq(rc_free(fd, sr->extents[0]->extent_id, &e2), 0);
    ck_assert_int_eq(rc_error_code(e2), HO_E_STATE);
    ho_frame_envelope_free(e2);
    ck_assert_int_eq(rc_move(fd, sr->extents[0]->extent_id,
                             HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL, &e2),
                     0);
    ck_assert_int_eq(rc_error_code(e2), HO_E_STATE);
    ho_frame_envelope_free(e2);

    /* A second StageRequest replaces the first: one set of copies, and the
     * first region is revoked (flag set, no slot left in DDR) before its
     * copies' pages go, so a client still using it cannot read them. */
    ck_assert_uint_eq(atomic_load(&hd->revoked), 0);
    int fds2[4], n2 = 0;
    Hyperoffload__Envelope *r2 = NULL;
    ck_assert_int_eq(stage(fd, f.hash, f.budget, "", f.slots, f.n_slots, 0,
                           &r2, fds2, &n2), 0);
    ck_assert_msg(r2->body_case == HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY,
                  "%s", rc_error_message(r2));
    ck_assert_int_eq(n2, 2);
    session_usage(fd, &ddr, &ext);
    ck_assert_uint_eq(ddr, total);
    ck_assert_uint_eq(ext, f.n_slots);
    ck_assert_uint_ne(r2->stage_reply->extents[0]->extent_id,
                      sr->extents[0]->extent_id);
    ck_assert_uint_eq(atomic_load(&hd->revoked), 1);
    for (uint32_t i = 0; i < hd->n_slots; i++)
        ck_assert_uint_eq(atomic_load(&cs[i].state), HO_SLOT_ABSENT);
    ho_frame_envelope_free(r2);
    for (int i = 0; i < n2; i++)
        close(fds2[i]);

    /* Closing the session frees every copy (the pool is empty again). */
    ck_assert_uint_eq(pool_used(), total);
    munmap(base, 256 * MiB);
    close(arena);
    close(fd);
    for (int i = 0; i < 200 && pool_used() != 0; i++)
        usleep(20000);
    ck_assert_uint_eq(pool_used(), 0);
    munmap(hd, sr->control_size);
    for (int i = 0; i < n_fds; i++)
        close(fds[i]);
    ho_frame_envelope_free(r);
    fixture_done(&f);
}
END_TEST

/* Expect an Error with `code` and a message containing `needle`; no
 * descriptor; nothing allocated. */
static void expect_refused(int fd, fixture *f, uint64_t hash, uint64_t budget,
                           const char *planner,
                           Hyperoffload__StageSlot **slots, size_t n,
                           int code, const char *needle)
{
    Hyperoffload__Envelope *r = NULL;
    int fds[4], n_fds = 0;
    ck_assert_int_eq(stage(fd, hash, budget, planner, slots, n, 0, &r, fds,
                           &n_fds), 0);
    ck_assert_msg(rc_error_code(r) == code, "expected %s, got %s: %s",
                  ho_err_name(code), ho_err_name(rc_error_code(r)),
                  rc_error_message(r));
    ck_assert_msg(strstr(rc_error_message(r), needle), "'%s' lacks '%s'",
                  rc_error_message(r), needle);
    ck_assert_int_eq(n_fds, 0);
    ho_frame_envelope_free(r);
    uint64_t ddr = 1, ext = 1;
    session_usage(fd, &ddr, &ext);
    ck_assert_uint_eq(ddr, 0);
    ck_assert_uint_eq(ext, 0);
    (void)f;
}

START_TEST(each_bad_field_has_its_code)
{
    fixture f;
    fixture_init(&f, 9);
    int fd = open_registered(f.budget, NULL);
    char idbuf[64];

    /* No plan yet. */
    expect_refused(fd, &f, f.hash, f.budget, "", f.slots, f.n_slots,
                   HO_E_NO_PLAN, "PlanRequest first");
    plan(fd, &f);
    /* Not the most recent plan: hash, budget, planner. */
    expect_refused(fd, &f, f.hash ^ 1, f.budget, "", f.slots, f.n_slots,
                   HO_E_NO_PLAN, "most recent plan");
    expect_refused(fd, &f, f.hash, f.budget + 4096, "", f.slots, f.n_slots,
                   HO_E_NO_PLAN, "most recent plan");
    expect_refused(fd, &f, f.hash, f.budget, "none", f.slots, f.n_slots,
                   HO_E_NO_PLAN, "'none'");

    Hyperoffload__StageSlot *slots[260];
    Hyperoffload__StageSlot extra;
    memcpy(slots, f.slots, f.n_slots * sizeof(*slots));

    /* Unknown storage. */
    hyperoffload__stage_slot__init(&extra);
    extra.storage_id = 987654321;
    extra.bytes = MiB;
    slots[1] = &extra;
    expect_refused(fd, &f, f.hash, f.budget, "", slots, f.n_slots, -ENOENT,
                   "987654321");
    /* A storage that needs no host copy. */
    uint32_t plain = PLAN_NONE;
    for (uint32_t i = 0; i < f.t->n_storages && plain == PLAN_NONE; i++) {
        bool listed = false;
        for (uint32_t k = 0; k < f.n_slots; k++)
            if (f.slots[k]->storage_id == f.t->storages[i].id)
                listed = true;
        if (!listed)
            plain = i;
    }
    ck_assert_uint_ne(plain, PLAN_NONE);
    extra.storage_id = f.t->storages[plain].id;
    extra.bytes = f.t->storages[plain].bytes;
    snprintf(idbuf, sizeof(idbuf), "storage %llu needs no host copy",
             (unsigned long long)extra.storage_id);
    expect_refused(fd, &f, f.hash, f.budget, "", slots, f.n_slots, -EINVAL,
                   idbuf);
    /* Wrong size. */
    extra = *f.slots[1];
    extra.bytes += 1;
    expect_refused(fd, &f, f.hash, f.budget, "", slots, f.n_slots,
                   HO_E_INVALID_SIZE, "in the trace");
    /* Duplicate. */
    slots[1] = f.slots[0];
    expect_refused(fd, &f, f.hash, f.budget, "", slots, f.n_slots, -EEXIST,
                   "listed twice");
    /* Missing. */
    memcpy(slots, f.slots, f.n_slots * sizeof(*slots));
    snprintf(idbuf, sizeof(idbuf), "storage %llu needs a host copy",
             (unsigned long long)f.slots[f.n_slots - 1]->storage_id);
    expect_refused(fd, &f, f.hash, f.budget, "", slots, f.n_slots - 1,
                   -ENODATA, idbuf);
    /* Too many. */
    for (uint32_t i = 0; i < f.t->n_storages + 1 && i < 260; i++)
        slots[i] = f.slots[0];
    expect_refused(fd, &f, f.hash, f.budget, "", slots, f.t->n_storages + 1,
                   -E2BIG, "slots");

    /* A DDR limit below what one op's host copies need at once: refused
     * with the figures (the harness has a flash tier). */
    {
        Hyperoffload__Envelope *r = NULL;
        int fds[4], n_fds = 0;
        ck_assert_int_eq(stage(fd, f.hash, f.budget, "", f.slots, f.n_slots,
                               4096, &r, fds, &n_fds), 0);
        ck_assert_msg(rc_error_code(r) == HO_E_INFEASIBLE, "%s: %s",
                      ho_err_name(rc_error_code(r)), rc_error_message(r));
        ck_assert_msg(strstr(rc_error_message(r), "4096 bytes"), "%s",
                      rc_error_message(r));
        ck_assert_int_eq(n_fds, 0);
        ho_frame_envelope_free(r);
        uint64_t ddr = 1, ext = 1;
        session_usage(fd, &ddr, &ext);
        ck_assert_uint_eq(ddr, 0);
        ck_assert_uint_eq(ext, 0);
    }

    /* And the right request still works afterwards. */
    Hyperoffload__Envelope *r = NULL;
    int fds[4], n_fds = 0;
    ck_assert_int_eq(stage(fd, f.hash, f.budget, "hoplan", f.slots,
                           f.n_slots, 0, &r, fds, &n_fds), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY,
                  "%s", rc_error_message(r));
    ck_assert_int_eq(n_fds, 2);
    for (int i = 0; i < n_fds; i++)
        close(fds[i]);
    ho_frame_envelope_free(r);
    close(fd);

    /* Before Register. */
    fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(stage(fd, f.hash, f.budget, "", f.slots, f.n_slots, 0,
                           &r, fds, &n_fds), 0);
    ck_assert_int_eq(rc_error_code(r), HO_E_NOT_REGISTERED);
    ho_frame_envelope_free(r);
    close(fd);
    fixture_done(&f);
}
END_TEST

/* Retained plans bounded ([planning] retained_per_session 64K,
 * retained_total 96K): a session that plans many traces keeps at most its
 * share, the least recently used dropped (counted); a StageRequest for a
 * dropped plan is HO_E_NO_PLAN with a sentence, one for a kept plan is
 * served; a second session's plans push the total out, never past it. */
#define N_TRACES 10
static void start_small(void)
{
    static const char *const args[] = {"--retained-per-session=64K",
                                       "--retained-total=96K", NULL};
    h = ho_harness_start_args(args);
}

static void plan_many(int fd, fixture *fs, uint64_t seed0)
{
    for (int i = 0; i < N_TRACES; i++) {
        fixture_init(&fs[i], seed0 + (uint64_t)i);
        plan(fd, &fs[i]);
        long long bytes = rc_metric(fd, "hyperoffload_retained_plan_bytes");
        ck_assert_int_gt(bytes, 0);
        ck_assert_int_le(bytes, 96 << 10);
    }
}

START_TEST(retained_plans_are_bounded)
{
    static fixture a[N_TRACES], b[N_TRACES];
    int fa = open_registered(64ull << 20, NULL);
    plan_many(fa, a, 100);
    long long kept = rc_metric(fa, "hyperoffload_retained_plans");
    long long bytes = rc_metric(fa, "hyperoffload_retained_plan_bytes");
    ck_assert_int_ge(kept, 1);
    ck_assert_int_lt(kept, N_TRACES);
    ck_assert_int_le(bytes, 64 << 10);
    ck_assert_int_eq(rc_metric(fa, "hyperoffload_retained_plan_evictions_"
                                   "total"), N_TRACES - kept);

    /* The first plan was dropped: a clear refusal, the daemon serves on. */
    expect_refused(fa, &a[0], a[0].hash, a[0].budget, "", a[0].slots,
                   a[0].n_slots, HO_E_NO_PLAN, "retained_per_session");
    /* The last one is kept: staged. */
    fixture *l = &a[N_TRACES - 1];
    Hyperoffload__Envelope *r = NULL;
    int fds[4], n_fds = 0;
    ck_assert_int_eq(stage(fa, l->hash, l->budget, "", l->slots, l->n_slots,
                           0, &r, fds, &n_fds), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY,
                  "%s", rc_error_message(r));
    ho_frame_envelope_free(r);
    for (int i = 0; i < n_fds; i++)
        close(fds[i]);

    /* A second session: the total stays within retained_total. */
    int fb = open_registered(64ull << 20, NULL);
    plan_many(fb, b, 200);
    ck_assert_int_le(rc_metric(fb, "hyperoffload_retained_plan_bytes"),
                     96 << 10);
    ck_assert_int_gt(rc_metric(fb, "hyperoffload_retained_plan_evictions_"
                                   "total"), N_TRACES - kept);
    close(fb);
    close(fa);
    for (int i = 0; i < N_TRACES; i++) {
        fixture_done(&a[i]);
        fixture_done(&b[i]);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_stage");
    TCase *t = tcase_create("stage");
    tcase_add_checked_fixture(t, start, stop);
    tcase_set_timeout(t, ho_harness_under_valgrind() ? 900 : 120);
    tcase_add_test(t, stage_installs_and_passes_both_fds);
    tcase_add_test(t, each_bad_field_has_its_code);
    suite_add_tcase(s, t);
    TCase *t2 = tcase_create("retained");
    tcase_add_checked_fixture(t2, start_small, stop);
    tcase_set_timeout(t2, ho_harness_under_valgrind() ? 900 : 120);
    tcase_add_test(t2, retained_plans_are_bounded);
    suite_add_tcase(s, t2);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
