/* tests/daemon/test_staging_run.c - flash staging carried out by the real
 * daemon, driven by a simulated client in this process: it maps its arena
 * and the control region, follows the schedule op by op (writing the op
 * index into the region and signalling the eventfd at milestone ops), and
 * does each copy of the schedule on the host copies with the slot
 * protocol of proto/control.h (CAS DDR -> CLIENT, bump the version after a
 * store, urgent + futex wait when a slot is not in DDR).  Checks:
 *   - with a DDR quota below the host copies' total, the daemon spills and
 *     fills (flash counters move, slots are seen out of DDR), every copy
 *     finds its slot (data checked byte for byte after spill/fill round
 *     trips), and the DDR it charges never exceeds the quota;
 *   - the urgent path: slots out of DDR brought back on demand, others
 *     evicted to make room, contents intact;
 *   - a session killed while moves run is cleaned up (pool and flash
 *     empty, daemon healthy). */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/control.h"
#include "tests/harness.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/staging/stage_plan.h"
#include "proto/plan.pb-c.h"
#include "tests/daemon/rawclient.h"

#define MiB (1ull << 20)
#define ARENA_MAP (256 * MiB) /* harness default DDR capacity */

static ho_harness *h;

static void start(void)
{
    h = ho_harness_start_args(NULL);
}

static void stop(void)
{
    if (getenv("STG_KEEPLOG")) {
        char *log = ho_harness_log(h);
        FILE *f = fopen(getenv("STG_KEEPLOG"), "a");
        if (f && log)
            fputs(log, f);
        if (f)
            fclose(f);
        free(log);
    }
    int st = ho_harness_free(h);
    h = NULL;
    ck_assert_msg(st == 0, "daemon exit status %d", st);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ workload */

/* A training-like step over `layers` layers: forward reads parameter P_i
 * (on host) and writes activation A_i; backward reads A_i and P_i; the
 * optimizer updates state O_i (on host) in place.  Parameters and states
 * start on host and are retained; with a small budget the activations go
 * to host too. */
static plan_trace *make_trace(uint32_t layers, uint64_t unit)
{
    plan_link link = {.h2d_gbps = 8, .d2h_gbps = 8, .latency_us = 10,
                      .duplex = true};
    plan_trace *t = plan_trace_new("staging-run", &link);
    char err[256];
    uint32_t P = 0, A = layers, O = 2 * layers;
    for (uint32_t i = 0; i < layers; i++) {
        plan_storage p = {.id = 100 + i, .bytes = unit,
                          .kind = PLAN_KIND_PARAM,
                          .initial = PLAN_INIT_HOST, .retained = true};
        ck_assert_int_eq(plan_trace_add_storage(t, &p, NULL, err,
                                                sizeof(err)), 0);
    }
    for (uint32_t i = 0; i < layers; i++) {
        plan_storage a = {.id = 200 + i, .bytes = unit + 4096 * i,
                          .kind = PLAN_KIND_ACTIVATION,
                          .initial = PLAN_INIT_NONE};
        ck_assert_int_eq(plan_trace_add_storage(t, &a, NULL, err,
                                                sizeof(err)), 0);
    }
    for (uint32_t i = 0; i < layers; i++) {
        plan_storage o = {.id = 300 + i, .bytes = unit / 2,
                          .kind = PLAN_KIND_OPTIMIZER,
                          .initial = PLAN_INIT_HOST, .retained = true};
        ck_assert_int_eq(plan_trace_add_storage(t, &o, NULL, err,
                                                sizeof(err)), 0);
    }
    for (uint32_t i = 0; i < layers; i++) {
        uint32_t r = P + i, w = A + i;
        ck_assert_int_eq(plan_trace_add_op(t, "fwd", 1500, &r, 1, &w, 1, err,
                                           sizeof(err)), 0);
    }
    for (uint32_t i = layers; i-- > 0;) {
        uint32_t r[2] = {A + i, P + i};
        ck_assert_int_eq(plan_trace_add_op(t, "bwd", 2500, r, 2, NULL, 0, err,
                                           sizeof(err)), 0);
    }
    for (uint32_t i = 0; i < layers; i++) {
        uint32_t o = O + i;
        ck_assert_int_eq(plan_trace_add_op(t, "opt", 800, &o, 1, &o, 1, err,
                                           sizeof(err)), 0);
    }
    ck_assert_int_eq(plan_trace_finish(t, err, sizeof(err)), 0);
    return t;
}

typedef struct setup {
    plan_trace *t;
    Hyperoffload__Trace *msg;
    plan_schedule *s;
    uint64_t budget, hash;
    uint32_t n_slots;
    uint32_t *slot_of;       /* storage index -> slot, UINT32_MAX */
    uint32_t *storage_of;    /* slot -> storage index */
    Hyperoffload__StageSlot *ss;
    Hyperoffload__StageSlot **ssp;
    uint64_t total;          /* aligned */
} setup;

static void setup_init(setup *S, uint32_t layers, uint64_t unit)
{
    memset(S, 0, sizeof(*S));
    S->t = make_trace(layers, unit);
    uint8_t *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(plan_trace_to_pb(S->t, &buf, &len), 0);
    S->msg = hyperoffload__trace__unpack(NULL, len, buf);
    free(buf);
    plan_trace_summary sm;
    ck_assert_int_eq(plan_trace_summarize(S->t, &sm), 0);
    plan_result res;
    S->budget = sm.no_offload_peak / 2;
    int rc = plan_make(S->t, S->budget, NULL, &S->s, &res);
    if (rc == HO_E_INFEASIBLE) {
        S->budget = res.min_budget;
        rc = plan_make(S->t, S->budget, NULL, &S->s, &res);
    }
    ck_assert_msg(rc == 0, "%s", res.message);
    S->hash = plan_trace_hash(S->t);
    uint32_t n = S->t->n_storages;
    S->slot_of = malloc(n * sizeof(uint32_t));
    S->storage_of = malloc(n * sizeof(uint32_t));
    S->ss = calloc(n, sizeof(*S->ss));
    S->ssp = calloc(n, sizeof(*S->ssp));
    uint8_t *need = calloc(n, 1);
    for (uint32_t i = 0; i < n; i++)
        need[i] = S->t->storages[i].initial == PLAN_INIT_HOST;
    for (size_t k = 0; k < S->s->n_actions; k++)
        if (S->s->actions[k].kind == PLAN_ACT_STORE)
            need[S->s->actions[k].storage] = 1;
    for (uint32_t i = 0; i < n; i++) {
        S->slot_of[i] = UINT32_MAX;
        if (!need[i])
            continue;
        uint32_t k = S->n_slots++;
        S->slot_of[i] = k;
        S->storage_of[k] = i;
        hyperoffload__stage_slot__init(&S->ss[k]);
        S->ss[k].storage_id = S->t->storages[i].id;
        S->ss[k].bytes = S->t->storages[i].bytes;
        S->ssp[k] = &S->ss[k];
        S->total += (S->t->storages[i].bytes + 4095) & ~4095ull;
    }
    free(need);
}

/* The smallest DDR limit the daemon's staging plan meets for this setup
 * (the daemon plans with the same library and, before it has seen a move,
 * these flash figures). */
static uint64_t min_limit(const setup *S)
{
    uint32_t *st = malloc(S->n_slots * sizeof(uint32_t));
    uint64_t *by = malloc(S->n_slots * sizeof(uint64_t));
    for (uint32_t k = 0; k < S->n_slots; k++) {
        st[k] = S->storage_of[k];
        by[k] = (S->t->storages[st[k]].bytes + 4095) & ~4095ull;
    }
    plan_staging_input in = {.trace = S->t, .sched = S->s,
                             .slot_storage = st, .slot_bytes = by,
                             .n_slots = S->n_slots, .ddr_limit = 1,
                             .flash_read_gbps = 1.0, .flash_write_gbps = 1.5,
                             .flash_latency_us = 1000};
    plan_staging *p = NULL;
    uint64_t min = 0;
    char err[512];
    ck_assert_int_eq(plan_staging_make(&in, &p, &min, err, sizeof(err)),
                     HO_E_INFEASIBLE);
    free(st);
    free(by);
    return min;
}

static void setup_done(setup *S)
{
    plan_schedule_free(S->s);
    plan_trace_free(S->t);
    hyperoffload__trace__free_unpacked(S->msg, NULL);
    free(S->slot_of);
    free(S->storage_of);
    free(S->ss);
    free(S->ssp);
}

/* ------------------------------------------------------------ client */

typedef struct sim {
    const setup *S;
    int fd;
    uint8_t *arena;
    ho_ctl_header *hdr;
    ho_ctl_slot *cs;
    uint64_t ctl_size;
    int efd;
    uint64_t limit;
    uint64_t *tag;           /* per slot: content last written, 0 zeros */
    uint64_t copies, waits, wait_ns, max_ddr, out_seen;
    uint64_t wait_by_state[8];
} sim;

static void set_job_quota(const char *job, uint64_t bytes)
{
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_quota(fd, HYPEROFFLOAD__QUOTA_OP__QUOTA_SET,
                              HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_JOB,
                              0, job, HYPEROFFLOAD__TIER__TIER_DDR, bytes, &r),
                     0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY,
                  "%s", rc_error_message(r));
    ho_frame_envelope_free(r);
    close(fd);
}

/* Register (with the arena), plan and stage; the simulated client is
 * ready for its first step. */
static void sim_open(sim *c, const setup *S, const char *job,
                     uint64_t ddr_limit)
{
    memset(c, 0, sizeof(*c));
    c->S = S;
    c->fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(c->fd, 0);
    Hyperoffload__Envelope *r = NULL;
    int arena = -1;
    ck_assert_int_eq(rc_register(c->fd, job, 0, S->budget, &r, &arena), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY);
    ho_frame_envelope_free(r);
    c->arena = mmap(NULL, ARENA_MAP, PROT_READ | PROT_WRITE, MAP_SHARED,
                    arena, 0);
    ck_assert_ptr_ne(c->arena, MAP_FAILED);
    close(arena);

    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__PlanRequest pr = HYPEROFFLOAD__PLAN_REQUEST__INIT;
    pr.trace = S->msg;
    pr.planner = "";
    pr.budget = S->budget;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST;
    env.plan_request = &pr;
    ck_assert_int_eq(rc_call(c->fd, &env, &r, NULL), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REPLY,
                  "%s", rc_error_message(r));
    ck_assert_uint_eq(r->plan_reply->schedule->n_actions, S->s->n_actions);
    ho_frame_envelope_free(r);

    Hyperoffload__Envelope env2 = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__StageRequest sr = HYPEROFFLOAD__STAGE_REQUEST__INIT;
    sr.trace_hash = S->hash;
    sr.budget = S->budget;
    sr.planner = "";
    sr.slots = S->ssp;
    sr.n_slots = S->n_slots;
    sr.ddr_limit = ddr_limit;
    env2.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REQUEST;
    env2.stage_request = &sr;
    int fds[4], nfd = 0;
    ck_assert_int_eq(rc_call_fds(c->fd, &env2, &r, fds, 4, &nfd), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REPLY,
                  "%s", rc_error_message(r));
    ck_assert_int_eq(nfd, 2);
    c->limit = r->stage_reply->ddr_limit;
    c->ctl_size = r->stage_reply->control_size;
    ck_assert_uint_eq(r->stage_reply->staged_bytes, S->total);
    ho_frame_envelope_free(r);
    c->hdr = mmap(NULL, c->ctl_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                  fds[0], 0);
    ck_assert_ptr_ne(c->hdr, MAP_FAILED);
    close(fds[0]);
    c->efd = fds[1];
    c->cs = ho_ctl_slots(c->hdr);
    c->tag = calloc(S->n_slots, sizeof(uint64_t));
}

static void sim_close(sim *c)
{
    munmap(c->hdr, c->ctl_size);
    munmap(c->arena, ARENA_MAP);
    close(c->efd);
    close(c->fd);
    free(c->tag);
}

static void signal_daemon(sim *c)
{
    uint64_t one = 1;
    ck_assert_int_eq(write(c->efd, &one, sizeof(one)), (ssize_t)sizeof(one));
}

static void check_ddr(sim *c)
{
    uint64_t d = atomic_load(&c->hdr->ddr_bytes);
    if (d > c->max_ddr)
        c->max_ddr = d;
    ck_assert_msg(d <= c->limit, "the daemon holds %llu bytes of host copies "
                  "in DDR, above the limit %llu", (unsigned long long)d,
                  (unsigned long long)c->limit);
}

/* CAS the slot DDR -> CLIENT; when it is elsewhere, ask the daemon. */
static void acquire(sim *c, uint32_t k)
{
    ho_ctl_slot *s = &c->cs[k];
    uint64_t t0 = now_ns();
    bool waited = false;
    int timeout_s = ho_harness_under_valgrind() ? 300 : 30;
    for (;;) {
        uint32_t seq = atomic_load(&c->hdr->seq);
        uint32_t want = HO_SLOT_DDR;
        if (atomic_compare_exchange_strong(&s->state, &want, HO_SLOT_CLIENT))
            break;
        ck_assert_uint_ne(want, HO_SLOT_CLIENT);
        if (want != HO_SLOT_DDR)
            c->out_seen++;
        if (!waited && want < 8)
            c->wait_by_state[want]++;
        if (!waited && getenv("STG_WAITS"))
            fprintf(stderr, "wait: step %llu op %u slot %u state %u\n",
                    (unsigned long long)atomic_load(&c->hdr->step),
                    atomic_load(&c->hdr->op), k, want);
        waited = true;
        atomic_store(&c->hdr->urgent, k + 1);
        signal_daemon(c);
        struct timespec ts = {0, 20 * 1000 * 1000};
        syscall(SYS_futex, (uint32_t *)&c->hdr->seq, FUTEX_WAIT, seq, &ts,
                NULL, 0);
        ck_assert_msg(now_ns() - t0 < (uint64_t)timeout_s * 1000000000ull,
                      "slot %u (state %u) not brought to DDR in %d s", k,
                      atomic_load(&s->state), timeout_s);
    }
    uint32_t u = k + 1;
    atomic_compare_exchange_strong(&c->hdr->urgent, &u, 0);
    if (waited) {
        c->waits++;
        c->wait_ns += now_ns() - t0;
    }
    check_ddr(c);
}

static void release(sim *c, uint32_t k, bool stored)
{
    if (stored)
        atomic_fetch_add(&c->cs[k].version, 1);
    uint32_t want = HO_SLOT_CLIENT;
    ck_assert(atomic_compare_exchange_strong(&c->cs[k].state, &want,
                                             HO_SLOT_DDR));
}

static uint64_t word(uint64_t tag, uint64_t i)
{
    return tag ? tag ^ (i * 0x9e3779b97f4a7c15ull) : 0;
}

static void write_copy(sim *c, uint32_t k, uint64_t tag)
{
    uint64_t *p = (uint64_t *)(void *)(c->arena + c->cs[k].offset);
    uint64_t n = c->cs[k].length / 8;
    for (uint64_t i = 0; i < n; i++)
        p[i] = word(tag, i);
    c->tag[k] = tag;
}

static void check_copy(sim *c, uint32_t k)
{
    const uint64_t *p = (const uint64_t *)(void *)(c->arena +
                                                   c->cs[k].offset);
    uint64_t n = c->cs[k].length / 8;
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != word(c->tag[k], i))
            ck_abort_msg("host copy %u (storage %llu): word %llu is %016llx, "
                         "expected %016llx", k,
                         (unsigned long long)c->cs[k].storage_id,
                         (unsigned long long)i, (unsigned long long)p[i],
                         (unsigned long long)word(c->tag[k], i));
}

/* Initial content of the host copies that start on host. */
static void write_initial(sim *c)
{
    const setup *S = c->S;
    for (uint32_t k = 0; k < S->n_slots; k++) {
        if (S->t->storages[S->storage_of[k]].initial != PLAN_INIT_HOST)
            continue;
        acquire(c, k);
        write_copy(c, k, 0x1000000000000000ull | (k + 1));
        release(c, k, true);
    }
}

/* One step of the schedule, in (scaled) real time. */
static void run_step(sim *c, uint64_t step, double time_scale)
{
    const setup *S = c->S;
    const plan_trace *t = S->t;
    size_t a = 0;
    for (uint32_t op = 0; op < t->n_ops; op++) {
        atomic_store(&c->hdr->op, op);
        if (ho_ctl_is_milestone(c->hdr, op))
            signal_daemon(c);
        for (int when = 0; when < 2; when++) {
            if (when == 1)
                usleep((useconds_t)(t->ops[op].duration_us * time_scale));
            for (; a < S->s->n_actions && S->s->actions[a].op == op &&
                   S->s->actions[a].when == when;
                 a++) {
                const plan_action *ac = &S->s->actions[a];
                uint32_t k = S->slot_of[ac->storage];
                if (k == UINT32_MAX || (ac->kind != PLAN_ACT_STORE &&
                                        ac->kind != PLAN_ACT_PREFETCH))
                    continue;
                acquire(c, k);
                if (ac->kind == PLAN_ACT_STORE)
                    write_copy(c, k, ((uint64_t)(k + 1) << 40) |
                                         (step << 20) | (op + 1));
                else
                    check_copy(c, k);
                release(c, k, ac->kind == PLAN_ACT_STORE);
                c->copies++;
            }
        }
        check_ddr(c);
    }
    atomic_store(&c->hdr->op, HO_CTL_IDLE);
    atomic_fetch_add(&c->hdr->step, 1);
}

static void session_usage(int fd, uint64_t *ddr, uint64_t *flash)
{
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_stats(fd, &r), 0);
    ck_assert_ptr_nonnull(r->stats_reply->session);
    *ddr = r->stats_reply->session->ddr_bytes;
    *flash = r->stats_reply->session->flash_bytes;
    ho_frame_envelope_free(r);
}

/* The ClientsReply entry of the (only) session with a replay. */
static Hyperoffload__Envelope *clients(const Hyperoffload__ClientInfo **ret)
{
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__ClientsRequest cr = HYPEROFFLOAD__CLIENTS_REQUEST__INIT;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REQUEST;
    env.clients_request = &cr;
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_call(fd, &env, &r, NULL), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REPLY,
                  "%s", rc_error_message(r));
    close(fd);
    *ret = NULL;
    for (size_t i = 0; i < r->clients_reply->n_clients; i++)
        if (r->clients_reply->clients[i]->runtime)
            *ret = r->clients_reply->clients[i];
    return r;
}

/* Run hoctl clients [--json] and return its output (malloc'ed). */
static char *hoctl_clients(bool json)
{
    const char *bd = getenv("HO_BUILD_DIR");
    ck_assert_ptr_nonnull(bd);
    char cmd[PATH_MAX * 2 + 64];
    snprintf(cmd, sizeof(cmd), "%s/bin/hoctl --socket %s clients%s", bd,
             ho_harness_socket(h), json ? " --json" : "");
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0)
        n += got;
    buf[n] = 0;
    ck_assert_int_eq(pclose(p), 0);
    return buf;
}

/* ------------------------------------------------------------ tests */

START_TEST(quota_below_total_spills_and_fills)
{
    setup S;
    bool vg = ho_harness_under_valgrind();
    setup_init(&S, vg ? 4 : 6, 2 * MiB);
    uint64_t quota = S.total * 45 / 100;
    set_job_quota("stg-run", quota);
    sim c;
    sim_open(&c, &S, "stg-run", 0);
    /* The daemon took the quota as the limit. */
    ck_assert_uint_eq(c.limit, quota);

    write_initial(&c);
    int steps = vg ? 2 : 4;
    for (int s = 0; s < steps; s++) {
        run_step(&c, (uint64_t)s, vg ? 4.0 : 1.0);
        uint64_t ddr = 0, flash = 0;
        session_usage(c.fd, &ddr, &flash);
        ck_assert_uint_le(ddr, quota);
        usleep(20000);
    }
    /* Settle: the step-end events run on the timer; wait for the moves. */
    for (int i = 0; i < 1000; i++) {
        bool moving = false;
        for (uint32_t k = 0; k < S.n_slots; k++) {
            uint32_t st = atomic_load(&c.cs[k].state);
            moving |= st == HO_SLOT_SPILLING || st == HO_SLOT_FILLING;
        }
        if (!moving && i > 10)
            break;
        usleep(10000);
    }
    check_ddr(&c);
    uint64_t out = atomic_load(&c.hdr->flash_out_bytes);
    uint64_t in = atomic_load(&c.hdr->flash_in_bytes);
    ck_assert_msg(out > 0 && in > 0, "flash out %llu, in %llu",
                  (unsigned long long)out, (unsigned long long)in);
    /* Every copy's bytes are somewhere: in DDR or on flash. */
    uint64_t on_ddr = 0, on_flash = 0;
    for (uint32_t k = 0; k < S.n_slots; k++) {
        uint32_t st = atomic_load(&c.cs[k].state);
        uint64_t len = (c.cs[k].length + 4095) & ~4095ull;
        if (st == HO_SLOT_DDR)
            on_ddr += len;
        else if (st == HO_SLOT_FLASH)
            on_flash += len;
    }
    ck_assert_uint_le(on_ddr, quota);
    ck_assert_uint_gt(on_flash, 0);
    ck_assert_uint_eq(atomic_load(&c.hdr->ddr_bytes), on_ddr);
    ck_assert_uint_eq(atomic_load(&c.hdr->flash_bytes), on_flash);
    /* Visibility: ClientsReply.runtime and `hoctl clients` show it. */
    const Hyperoffload__ClientInfo *ci = NULL;
    Hyperoffload__Envelope *cr = clients(&ci);
    ck_assert_ptr_nonnull(ci);
    ck_assert_uint_eq(ci->runtime->steps, (uint64_t)steps);
    ck_assert_uint_eq(ci->runtime->current_op, UINT32_MAX);
    ck_assert_uint_eq(ci->runtime->ops_per_step, S.t->n_ops);
    ck_assert_uint_eq(ci->runtime->flash_out_bytes,
                      atomic_load(&c.hdr->flash_out_bytes));
    ck_assert_uint_eq(ci->runtime->flash_in_bytes,
                      atomic_load(&c.hdr->flash_in_bytes));
    ck_assert_uint_eq(ci->runtime->host_copies_ddr, on_ddr);
    ck_assert_uint_eq(ci->runtime->host_copies_flash, on_flash);
    ck_assert_uint_le(ci->usage->ddr_bytes, quota);
    ho_frame_envelope_free(cr);
    char *js = hoctl_clients(true);
    char want[96];
    snprintf(want, sizeof(want), "\"steps\": %d", steps);
    ck_assert_msg(strstr(js, want), "%s", js);
    snprintf(want, sizeof(want), "\"flash_in_bytes\": %llu",
             (unsigned long long)in);
    ck_assert_msg(strstr(js, want), "%s", js);
    ck_assert_msg(strstr(js, "\"current_op\": null"), "%s", js);
    free(js);
    js = hoctl_clients(false);
    ck_assert_msg(strstr(js, "replays:") && strstr(js, "FROM_FLASH"), "%s",
                  js);
    snprintf(want, sizeof(want), "idle/%u", S.t->n_ops);
    ck_assert_msg(strstr(js, want), "%s", js);
    if (getenv("STG_SHOW"))
        fputs(js, stderr);
    free(js);

    /* The data of the copies that start on host (the next step starts
     * from them) survived every round trip: read each once more.  (The
     * activations' copies are dead after their last prefetch: the daemon
     * drops them.) */
    for (uint32_t k = 0; k < S.n_slots; k++) {
        if (S.t->storages[S.storage_of[k]].initial != PLAN_INIT_HOST)
            continue;
        acquire(&c, k);
        check_copy(&c, k);
        release(&c, k, false);
    }
    fprintf(stderr, "staging run: %u host copies, %.1f MiB, limit %.1f MiB: "
            "%llu copies, %llu waited (%.1f ms), %llu found out of DDR, "
            "flash out %.1f MiB in %.1f MiB, peak DDR %.1f MiB\n",
            S.n_slots, (double)S.total / MiB, (double)quota / MiB,
            (unsigned long long)c.copies, (unsigned long long)c.waits,
            (double)c.wait_ns / 1e6, (unsigned long long)c.out_seen,
            (double)out / MiB, (double)in / MiB, (double)c.max_ddr / MiB);
    fprintf(stderr, "  waits by state found: absent %llu spilling %llu flash "
            "%llu filling %llu\n",
            (unsigned long long)c.wait_by_state[HO_SLOT_ABSENT],
            (unsigned long long)c.wait_by_state[HO_SLOT_SPILLING],
            (unsigned long long)c.wait_by_state[HO_SLOT_FLASH],
            (unsigned long long)c.wait_by_state[HO_SLOT_FILLING]);
    sim_close(&c);
    setup_done(&S);
}
END_TEST

START_TEST(urgent_requests_round_trip)
{
    setup S;
    setup_init(&S, 4, 2 * MiB);
    /* As little room as the plan allows: most copies leave for flash. */
    uint64_t limit = min_limit(&S);
    ck_assert_uint_lt(limit, S.total / 2);
    sim c;
    sim_open(&c, &S, "", limit);
    ck_assert_uint_eq(c.limit, limit);
    /* Write every copy (urgent for those out of DDR), then read each back:
     * the ones spilled meanwhile are filled on demand. */
    for (uint32_t k = 0; k < S.n_slots; k++) {
        acquire(&c, k);
        write_copy(&c, k, 0x2000000000000000ull | (k + 7));
        release(&c, k, true);
    }
    ck_assert_uint_gt(c.waits, 0);
    for (int round = 0; round < 2; round++)
        for (uint32_t k = 0; k < S.n_slots; k++) {
            acquire(&c, k);
            check_copy(&c, k);
            release(&c, k, false);
        }
    uint64_t out = atomic_load(&c.hdr->flash_out_bytes);
    uint64_t in = atomic_load(&c.hdr->flash_in_bytes);
    ck_assert_uint_gt(out, 0);
    ck_assert_uint_gt(in, 0);
    check_ddr(&c);
    /* A client that holds a slot keeps it: the daemon never takes it. */
    acquire(&c, 0);
    for (uint32_t k = 1; k < S.n_slots; k++) {
        acquire(&c, k);
        release(&c, k, false);
    }
    ck_assert_uint_eq(atomic_load(&c.cs[0].state), HO_SLOT_CLIENT);
    check_copy(&c, 0);
    release(&c, 0, false);
    sim_close(&c);
    setup_done(&S);
}
END_TEST

START_TEST(session_killed_mid_move)
{
    setup S;
    setup_init(&S, 4, 16 * MiB);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* The child: fill every host copy with a small limit so that the
         * daemon spills while it goes, then die without warning. */
        sim c;
        sim_open(&c, &S, "", min_limit(&S));
        for (uint32_t k = 0; k < S.n_slots; k++) {
            acquire(&c, k);
            write_copy(&c, k, 0x3000000000000000ull | k);
            release(&c, k, true);
        }
        raise(SIGKILL);
        _exit(1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* Everything comes back once the moves in flight have ended. */
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    uint64_t ddr = 1, flash = 1;
    for (int i = 0; i < 500 && (ddr || flash); i++) {
        Hyperoffload__Envelope *r = NULL;
        ck_assert_int_eq(rc_stats(fd, &r), 0);
        ddr = rc_tier_used(r->stats_reply->tiers, r->stats_reply->n_tiers,
                           HYPEROFFLOAD__TIER__TIER_DDR);
        flash = rc_tier_used(r->stats_reply->tiers, r->stats_reply->n_tiers,
                             HYPEROFFLOAD__TIER__TIER_FLASH);
        ho_frame_envelope_free(r);
        if (ddr || flash)
            usleep(20000);
    }
    ck_assert_uint_eq(ddr, 0);
    ck_assert_uint_eq(flash, 0);
    close(fd);
    /* The daemon still serves a new replay. */
    sim c;
    sim_open(&c, &S, "", 0);
    acquire(&c, 0);
    release(&c, 0, false);
    sim_close(&c);
    setup_done(&S);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("daemon_staging_run");
    TCase *t = tcase_create("run");
    tcase_add_checked_fixture(t, start, stop);
    tcase_set_timeout(t, ho_harness_under_valgrind() ? 1200 : 120);
    tcase_add_test(t, quota_below_total_spills_and_fills);
    tcase_add_test(t, urgent_requests_round_trip);
    tcase_add_test(t, session_killed_mid_move);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
