/* tests/daemon/test_sessions.c - sessions, extents, moves, quotas, admin
 * rights, limits and reclaiming, against the real daemon with raw frames. */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/daemon/rawclient.h"

#define MiB (1ull << 20)

static ho_harness *start(const char *const *args)
{
    return ho_harness_start_args(args);
}

static void stop(ho_harness *h)
{
    int st = ho_harness_free(h);
    ck_assert_msg(st == 0, "daemon exit status %d", st);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static Hyperoffload__Envelope *status(int fd)
{
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_status(fd, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY);
    return r;
}

static uint64_t used(int fd, int tier)
{
    Hyperoffload__Envelope *r = status(fd);
    uint64_t u = rc_tier_used(r->status_reply->tiers, r->status_reply->n_tiers,
                              tier);
    ho_frame_envelope_free(r);
    return u;
}

/* Poll Status until DDR and flash use are both `want` (connection close
 * is processed asynchronously).  Returns 1 when reached. */
static int wait_used(int fd, uint64_t ddr, uint64_t flash, uint32_t clients)
{
    for (int i = 0; i < (ho_harness_under_valgrind() ? 1000 : 250); i++) {
        Hyperoffload__Envelope *r = status(fd);
        Hyperoffload__StatusReply *s = r->status_reply;
        int ok = rc_tier_used(s->tiers, s->n_tiers,
                              HYPEROFFLOAD__TIER__TIER_DDR) == ddr &&
                 rc_tier_used(s->tiers, s->n_tiers,
                              HYPEROFFLOAD__TIER__TIER_FLASH) == flash &&
                 s->clients == clients;
        ho_frame_envelope_free(r);
        if (ok)
            return 1;
        sleep_ms(20);
    }
    return 0;
}

static uint64_t expect_alloc(int fd, uint64_t bytes, uint64_t *ret_off)
{
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_alloc(fd, bytes, &r), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REPLY,
                  "alloc %llu: %s", (unsigned long long)bytes,
                  rc_error_message(r));
    uint64_t id = r->alloc_reply->extent_id;
    if (ret_off)
        *ret_off = r->alloc_reply->offset;
    ho_frame_envelope_free(r);
    return id;
}

static void expect_error(Hyperoffload__Envelope *r, int code, const char *text)
{
    ck_assert_msg(rc_error_code(r) == code, "got %d (%s), want %d",
                  rc_error_code(r), rc_error_message(r), code);
    if (text)
        ck_assert_msg(strstr(rc_error_message(r), text), "'%s' lacks '%s'",
                      rc_error_message(r), text);
    ho_frame_envelope_free(r);
}

static void expect_move(int fd, uint64_t id, int dir, int residency)
{
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_move(fd, id, dir, &r), 0);
    ck_assert_msg(r->body_case == HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REPLY,
                  "move: %s", rc_error_message(r));
    ck_assert_uint_eq(r->move_reply->extent_id, id);
    ck_assert_int_eq(r->move_reply->residency, residency);
    ho_frame_envelope_free(r);
}

START_TEST(register_errors_grant_nothing)
{
    ho_harness *h = start(NULL);
    int fd = rc_open(ho_harness_socket(h));
    int admin = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = NULL;
    int memfd = -1;

    ck_assert_int_eq(rc_register(fd, "", 2, 0, &r, &memfd), 0);
    expect_error(r, HO_E_UNKNOWN_DEVICE, "device 2 is not configured");
    ck_assert_int_eq(memfd, -1);
    ck_assert_int_eq(rc_register(fd, "", -2, 0, &r, NULL), 0);
    expect_error(r, HO_E_UNKNOWN_DEVICE, "device -2");
    ck_assert_int_eq(rc_register(fd, "", 0, 2ull << 30, &r, NULL), 0);
    expect_error(r, HO_E_BUDGET, "free on device 0");
    ck_assert_int_eq(rc_register(fd, "", 0, 2ull << 30, &r, NULL), 0);
    expect_error(r, HO_E_BUDGET, "(1073741824 bytes) free");
    ck_assert_int_eq(rc_register(fd, "", -1, MiB, &r, NULL), 0);
    expect_error(r, HO_E_BUDGET, "needs a device");
    ck_assert_int_eq(rc_register(fd, "bad job", -1, 0, &r, NULL), 0);
    expect_error(r, -EINVAL, "job name");

    /* Nothing was granted or created. */
    Hyperoffload__Envelope *st = status(admin);
    ck_assert_uint_eq(st->status_reply->clients, 0);
    ck_assert_uint_eq(st->status_reply->n_devices, 2);
    ck_assert_uint_eq(st->status_reply->devices[0]->granted, 0);
    ck_assert_uint_eq(st->status_reply->devices[0]->n_grants, 0);
    ho_frame_envelope_free(st);

    /* A good one: fd attached, mapping size, grant visible. */
    ck_assert_int_eq(rc_register(fd, "", 0, 512 * MiB, &r, &memfd), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY);
    Hyperoffload__RegisterReply *rr = r->register_reply;
    ck_assert_uint_gt(rr->session_id, 0);
    ck_assert_uint_eq(rr->hbm_granted, 512 * MiB);
    ck_assert_int_eq(rr->device, 0);
    ck_assert_ptr_nonnull(rr->arena);
    ck_assert(rr->arena->fd_attached);
    /* the arena spans DDR and flash: 256 MiB pool + 512 MiB flash file */
    ck_assert_uint_eq(rr->arena->map_size, 768 * MiB);
    ck_assert_uint_eq(rr->ddr_alignment, 4096);
    ck_assert_int_ge(memfd, 0);
    uint64_t sid = rr->session_id;
    ho_frame_envelope_free(r);
    close(memfd);
    ck_assert_int_eq(rc_register(fd, "", 0, MiB, &r, NULL), 0);
    expect_error(r, HO_E_ALREADY, "already has session");

    /* Only 512 MiB left on device 0. */
    int fd2 = rc_open(ho_harness_socket(h));
    ck_assert_int_eq(rc_register(fd2, "", 0, 600 * MiB, &r, NULL), 0);
    expect_error(r, HO_E_BUDGET, "512.0 MiB");
    st = status(admin);
    ck_assert_uint_eq(st->status_reply->clients, 1);
    ck_assert_uint_eq(st->status_reply->devices[0]->granted, 512 * MiB);
    ck_assert_uint_eq(st->status_reply->devices[0]->n_grants, 1);
    ck_assert_uint_eq(st->status_reply->devices[0]->grants[0]->session_id,
                      sid);
    ho_frame_envelope_free(st);

    /* Closing the first session releases its grant. */
    close(fd);
    ck_assert(wait_used(admin, 0, 0, 0));
    ck_assert_int_eq(rc_register(fd2, "", 0, 1024 * MiB, &r, NULL), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY);
    ho_frame_envelope_free(r);
    close(fd2);
    close(admin);
    stop(h);
}
END_TEST

START_TEST(alloc_free_move_roundtrip)
{
    ho_harness *h = start(NULL);
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = NULL;
    int memfd = -1;
    ck_assert_int_eq(rc_register(fd, "", -1, 0, &r, &memfd), 0);
    uint64_t map_size = r->register_reply->arena->map_size;
    ho_frame_envelope_free(r);
    ck_assert_int_ge(memfd, 0);
    uint8_t *base = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                         memfd, 0);
    ck_assert_ptr_ne(base, MAP_FAILED);

    ck_assert_int_eq(rc_alloc(fd, 0, &r), 0);
    expect_error(r, HO_E_INVALID_SIZE, "0 bytes");
    ck_assert_int_eq(rc_alloc(fd, 300 * MiB, &r), 0);
    expect_error(r, HO_E_TOO_LARGE, "exceeds the DDR pool capacity 256.0 MiB");
    ck_assert_int_eq(rc_alloc(fd, UINT64_MAX, &r), 0);
    expect_error(r, HO_E_TOO_LARGE, NULL);

    ck_assert_int_eq(rc_alloc(fd, 10000, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REPLY);
    uint64_t id = r->alloc_reply->extent_id, off = r->alloc_reply->offset;
    ck_assert_uint_eq(r->alloc_reply->length, 12288);
    ck_assert_uint_eq(off % 4096, 0);
    ho_frame_envelope_free(r);
    for (size_t i = 0; i < 10000; i++)
        ck_assert_uint_eq(base[off + i], 0); /* zero-filled */
    for (size_t i = 0; i < 10000; i++)
        base[off + i] = (uint8_t)(i * 7 + 3);

    expect_move(fd, id, HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL,
                HYPEROFFLOAD__TIER__TIER_FLASH);
    ck_assert_int_eq(rc_stats(fd, &r), 0);
    ck_assert_uint_eq(r->stats_reply->session->ddr_bytes, 0);
    ck_assert_uint_eq(r->stats_reply->session->flash_bytes, 12288);
    ck_assert_uint_eq(r->stats_reply->session->extents, 1);
    ck_assert_uint_eq(rc_tier_used(r->stats_reply->tiers,
                                   r->stats_reply->n_tiers,
                                   HYPEROFFLOAD__TIER__TIER_DDR), 0);
    ck_assert_uint_ge(rc_tier_used(r->stats_reply->tiers,
                                   r->stats_reply->n_tiers,
                                   HYPEROFFLOAD__TIER__TIER_FLASH), 12288);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_move(fd, id, HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL,
                             &r), 0);
    expect_error(r, HO_E_STATE, "is on flash");
    expect_move(fd, id, HYPEROFFLOAD__MOVE_DIRECTION__MOVE_FILL,
                HYPEROFFLOAD__TIER__TIER_DDR);
    for (size_t i = 0; i < 10000; i++)
        ck_assert_uint_eq(base[off + i], (uint8_t)(i * 7 + 3));
    ck_assert_int_eq(rc_move(fd, id, HYPEROFFLOAD__MOVE_DIRECTION__MOVE_FILL,
                             &r), 0);
    expect_error(r, HO_E_STATE, "is in DDR");
    ck_assert_int_eq(rc_move(fd, id, 0, &r), 0);
    expect_error(r, -EINVAL, "direction 0");
    ck_assert_int_eq(rc_move(fd, id + 1000, 1, &r), 0);
    expect_error(r, HO_E_UNKNOWN_EXTENT, NULL);

    /* Pool full: 200 MiB + 100 MiB does not fit 256 MiB. */
    uint64_t big = expect_alloc(fd, 200 * MiB, NULL);
    ck_assert_int_eq(rc_alloc(fd, 100 * MiB, &r), 0);
    expect_error(r, HO_E_TIER_FULL, "no room for 100.0 MiB in the DDR pool");
    ck_assert_int_eq(rc_free(fd, big, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_OK);
    ho_frame_envelope_free(r);

    ck_assert_int_eq(rc_free(fd, id, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_OK);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_free(fd, id, &r), 0);
    expect_error(r, HO_E_UNKNOWN_EXTENT, "does not belong");
    ck_assert_uint_eq(used(fd, HYPEROFFLOAD__TIER__TIER_DDR), 0);
    ck_assert_uint_eq(used(fd, HYPEROFFLOAD__TIER__TIER_FLASH), 0);
    munmap(base, map_size);
    close(memfd);
    close(fd);
    stop(h);
}
END_TEST

START_TEST(jobs_share_arenas_per_uid)
{
    ho_harness *h = start(NULL);
    uint64_t ids[4];
    int fds[4];
    const char *jobs[4] = {"j", "j", "k", ""};
    for (int i = 0; i < 4; i++) {
        fds[i] = rc_open(ho_harness_socket(h));
        Hyperoffload__Envelope *r = NULL;
        int memfd = -1;
        ck_assert_int_eq(rc_register(fds[i], jobs[i], -1, 0, &r, &memfd), 0);
        ck_assert_int_eq(r->body_case,
                         HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY);
        ids[i] = r->register_reply->arena->arena_id;
        ho_frame_envelope_free(r);
        close(memfd);
    }
    ck_assert_uint_eq(ids[0], ids[1]);
    ck_assert_uint_ne(ids[0], ids[2]);
    ck_assert_uint_ne(ids[0], ids[3]);
    ck_assert_uint_ne(ids[2], ids[3]);
    /* An extent of one rank is not the other rank's to free. */
    uint64_t x = expect_alloc(fds[0], 4096, NULL);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_free(fds[1], x, &r), 0);
    expect_error(r, HO_E_UNKNOWN_EXTENT, NULL);
    for (int i = 0; i < 4; i++)
        close(fds[i]);
    stop(h);
}
END_TEST

START_TEST(admin_requests_need_admin)
{
    static const char *const args[] = {"--socket-mode=0666", NULL};
    ho_harness *h = start(args);
    if (getuid() != 0) {
        /* Not root: this process itself is the non-admin peer. */
        int fd = rc_open(ho_harness_socket(h));
        Hyperoffload__Envelope *r = NULL;
        ck_assert_int_eq(rc_status(fd, &r), 0);
        expect_error(r, HO_E_PERMISSION, NULL);
        close(fd);
        stop(h);
        return;
    }
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char sock[256];
        snprintf(sock, sizeof(sock), "%s", ho_harness_socket(h));
        ho_harness_forget(h);
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
            setuid(65534) != 0)
            _exit(10);
        int fd = rc_open(sock);
        if (fd < 0)
            _exit(11);
        Hyperoffload__Envelope *r = NULL;
        if (rc_status(fd, &r) != 0 || rc_error_code(r) != HO_E_PERMISSION ||
            !strstr(rc_error_message(r), "uid 65534"))
            _exit(12);
        ho_frame_envelope_free(r);
        Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
        Hyperoffload__ClientsRequest cr = HYPEROFFLOAD__CLIENTS_REQUEST__INIT;
        env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REQUEST;
        env.clients_request = &cr;
        if (rc_call(fd, &env, &r, NULL) != 0 ||
            rc_error_code(r) != HO_E_PERMISSION)
            _exit(13);
        ho_frame_envelope_free(r);
        if (rc_quota(fd, HYPEROFFLOAD__QUOTA_OP__QUOTA_SET, 0, 65534, NULL,
                     HYPEROFFLOAD__TIER__TIER_DDR, 1 << 30, &r) != 0 ||
            rc_error_code(r) != HO_E_PERMISSION)
            _exit(14);
        ho_frame_envelope_free(r);
        if (rc_stats(fd, &r) != 0 ||
            r->body_case != HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY)
            _exit(15);
        ho_frame_envelope_free(r);
        /* A non-admin can still register and see its identity. */
        if (rc_register(fd, "", -1, 0, &r, NULL) != 0 ||
            r->body_case != HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY)
            _exit(16);
        ho_frame_envelope_free(r);
        close(fd);
        _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "non-admin child failed at step %d", WEXITSTATUS(st));
    /* The daemon saw uid 65534 in its quota-free listing of clients... and
     * root still gets Status. */
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = status(fd);
    ho_frame_envelope_free(r);
    close(fd);
    stop(h);
}
END_TEST


/* Membership of admin_group makes a peer admin (here: nobody's primary
 * group). */
START_TEST(admin_group_member_is_admin)
{
    struct group *g = getgrgid(65534);
    if (getuid() != 0 || !g) {
        fprintf(stderr, "admin_group_member_is_admin: needs root and gid "
                        "65534; skipped\n");
        return;
    }
    char flag[300];
    snprintf(flag, sizeof(flag), "--admin-group=%s", g->gr_name);
    const char *const args[] = {"--socket-mode=0666", flag, NULL};
    ho_harness *h = start(args);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char sock[256];
        snprintf(sock, sizeof(sock), "%s", ho_harness_socket(h));
        ho_harness_forget(h);
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
            setuid(65534) != 0)
            _exit(10);
        int fd = rc_connect(sock);
        Hyperoffload__Envelope *r = NULL;
        if (fd < 0 || rc_hello(fd, 1, 1, &r) != 0 ||
            r->body_case != HYPEROFFLOAD__ENVELOPE__BODY_WELCOME ||
            !r->welcome->admin)
            _exit(11);
        ho_frame_envelope_free(r);
        if (rc_status(fd, &r) != 0 ||
            r->body_case != HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY)
            _exit(12);
        ho_frame_envelope_free(r);
        close(fd);
        _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "group-admin child failed at step %d", WEXITSTATUS(st));
    stop(h);
}
END_TEST

START_TEST(quotas_enforced_listed_and_evented)
{
    ho_harness *h = start(NULL);
    int admin = rc_open(ho_harness_socket(h));
    int fd = rc_open(ho_harness_socket(h));
    uint32_t me = (uint32_t)getuid();
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_register(fd, "jobq", -1, 0, &r, NULL), 0);
    ho_frame_envelope_free(r);

    ck_assert_int_eq(rc_quota(admin, HYPEROFFLOAD__QUOTA_OP__QUOTA_SET,
                              HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID,
                              me, NULL, HYPEROFFLOAD__TIER__TIER_DDR, MiB, &r),
                     0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY);
    ck_assert_uint_eq(r->quota_reply->n_entries, 1);
    ck_assert_uint_eq(r->quota_reply->entries[0]->limit, MiB);
    ho_frame_envelope_free(r);
    /* The session affected gets an event. */
    ck_assert_int_eq(rc_recv(fd, &r, NULL, RC_TIMEOUT_MS), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_EVENT);
    ck_assert_int_eq(r->event->kind,
                     HYPEROFFLOAD__EVENT_KIND__EVENT_QUOTA_CHANGED);
    ck_assert_uint_eq(r->request_id, 0);
    ho_frame_envelope_free(r);

    ck_assert_int_eq(rc_alloc(fd, 2 * MiB, &r), 0);
    expect_error(r, HO_E_QUOTA, "ddr quota of uid");
    expect_alloc(fd, 512 * 1024, NULL);
    ck_assert_int_eq(rc_alloc(fd, 600 * 1024, &r), 0);
    expect_error(r, HO_E_QUOTA, "512.0 KiB in use");
    ck_assert_uint_eq(used(admin, HYPEROFFLOAD__TIER__TIER_DDR), 512 * 1024);

    /* Job quota on flash: spill refused. */
    ck_assert_int_eq(rc_quota(admin, HYPEROFFLOAD__QUOTA_OP__QUOTA_SET,
                              HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_JOB,
                              0, "jobq", HYPEROFFLOAD__TIER__TIER_FLASH, 4096,
                              &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY);
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_stats(fd, &r), 0); /* skips the pushed event */
    ho_frame_envelope_free(r);
    ck_assert_int_eq(rc_quota(admin, HYPEROFFLOAD__QUOTA_OP__QUOTA_LIST, 0, 0,
                              NULL, 0, 0, &r), 0);
    ck_assert_uint_eq(r->quota_reply->n_entries, 2);
    ck_assert_uint_eq(r->quota_reply->entries[0]->used, 512 * 1024);
    ho_frame_envelope_free(r);

    /* GET of an unset quota: limit 0. */
    ck_assert_int_eq(rc_quota(admin, HYPEROFFLOAD__QUOTA_OP__QUOTA_GET, 0,
                              me + 1, NULL, HYPEROFFLOAD__TIER__TIER_HBM, 0,
                              &r), 0);
    ck_assert_uint_eq(r->quota_reply->n_entries, 1);
    ck_assert_uint_eq(r->quota_reply->entries[0]->limit, 0);
    ho_frame_envelope_free(r);
    /* Invalid requests change nothing. */
    ck_assert_int_eq(rc_quota(admin, HYPEROFFLOAD__QUOTA_OP__QUOTA_SET, 0, me,
                              NULL, HYPEROFFLOAD__TIER__TIER_DDR, 0, &r), 0);
    expect_error(r, HO_E_INVALID_SIZE, NULL);
    ck_assert_int_eq(rc_quota(admin, HYPEROFFLOAD__QUOTA_OP__QUOTA_SET, 0, me,
                              NULL, HYPEROFFLOAD__TIER__TIER_NONE, 5, &r), 0);
    expect_error(r, -EINVAL, "tier 0");
    ck_assert_int_eq(rc_quota(admin, HYPEROFFLOAD__QUOTA_OP__QUOTA_SET, 1, 0,
                              "", HYPEROFFLOAD__TIER__TIER_DDR, 5, &r), 0);
    expect_error(r, -EINVAL, "job name");
    ck_assert_int_eq(rc_quota(admin, HYPEROFFLOAD__QUOTA_OP__QUOTA_GET, 0, me,
                              NULL, HYPEROFFLOAD__TIER__TIER_DDR, 0, &r), 0);
    ck_assert_uint_eq(r->quota_reply->entries[0]->limit, MiB);
    ho_frame_envelope_free(r);

    /* Clear lifts it. */
    ck_assert_int_eq(rc_quota(admin, HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR, 0,
                              me, NULL, HYPEROFFLOAD__TIER__TIER_DDR, 0, &r),
                     0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY);
    ho_frame_envelope_free(r);
    expect_alloc(fd, 2 * MiB, NULL);
    close(fd);
    close(admin);
    stop(h);
}
END_TEST

START_TEST(closing_reclaims_everything)
{
    ho_harness *h = start(NULL);
    int admin = rc_open(ho_harness_socket(h));
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_register(fd, "", 1, 64 * MiB, &r, NULL), 0);
    ho_frame_envelope_free(r);
    uint64_t a = expect_alloc(fd, MiB, NULL);
    expect_alloc(fd, MiB, NULL);
    expect_alloc(fd, MiB, NULL);
    expect_move(fd, a, HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL,
                HYPEROFFLOAD__TIER__TIER_FLASH);
    ck_assert_uint_eq(used(admin, HYPEROFFLOAD__TIER__TIER_DDR), 2 * MiB);
    ck_assert_uint_ge(used(admin, HYPEROFFLOAD__TIER__TIER_FLASH), MiB);
    close(fd);
    ck_assert(wait_used(admin, 0, 0, 0));
    Hyperoffload__Envelope *st = status(admin);
    ck_assert_uint_eq(st->status_reply->devices[1]->granted, 0);
    ho_frame_envelope_free(st);

    /* A session that goes away with a move in flight. */
    for (int round = 0; round < 3; round++) {
        fd = rc_open(ho_harness_socket(h));
        ck_assert_int_eq(rc_register(fd, "", -1, 0, &r, NULL), 0);
        ho_frame_envelope_free(r);
        uint64_t x = expect_alloc(fd, 32 * MiB, NULL);
        Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
        Hyperoffload__MoveRequest mr = HYPEROFFLOAD__MOVE_REQUEST__INIT;
        mr.extent_id = x;
        mr.direction = HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL;
        env.version = 1;
        env.request_id = 4242;
        env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REQUEST;
        env.move_request = &mr;
        ck_assert_int_eq(rc_send(fd, &env), 0);
        close(fd); /* without waiting for the reply */
        ck_assert(wait_used(admin, 0, 0, 0));
    }
    close(admin);
    stop(h);
}
END_TEST

START_TEST(connection_and_extent_limits)
{
    static const char *const args[] = {"--max-connections=2",
                                       "--admin-reserve=0",
                                       "--max-extents=2", NULL};
    ho_harness *h = start(args);
    int a = rc_open(ho_harness_socket(h));
    int b = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(a, 0);
    ck_assert_int_ge(b, 0);
    int c = rc_connect(ho_harness_socket(h));
    ck_assert_int_ge(c, 0);
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_recv(c, &r, NULL, RC_TIMEOUT_MS), 0);
    expect_error(r, -EAGAIN, "max_connections");
    ck_assert_int_eq(rc_wait_closed(c, RC_TIMEOUT_MS), 1);
    close(c);

    ck_assert_int_eq(rc_register(a, "", -1, 0, &r, NULL), 0);
    ho_frame_envelope_free(r);
    expect_alloc(a, 4096, NULL);
    uint64_t x = expect_alloc(a, 4096, NULL);
    ck_assert_int_eq(rc_alloc(a, 4096, &r), 0);
    expect_error(r, HO_E_QUOTA, "max_extents_per_session 2");
    ck_assert_int_eq(rc_free(a, x, &r), 0);
    ho_frame_envelope_free(r);
    expect_alloc(a, 4096, NULL);
    close(a);
    close(b);
    stop(h);
}
END_TEST

START_TEST(slow_reader_is_dropped)
{
    static const char *const args[] = {"--max-frame=64K", "--max-output=1M",
                                       NULL};
    ho_harness *h = start(args);
    int healthy = rc_open(ho_harness_socket(h));
    int fd = rc_open(ho_harness_socket(h));
    /* Many Stats requests, never reading a reply. */
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__StatsRequest sr = HYPEROFFLOAD__STATS_REQUEST__INIT;
    env.version = 1;
    env.request_id = 1;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST;
    env.stats_request = &sr;
    uint8_t *one;
    size_t len;
    ck_assert_int_eq(ho_frame_encode(&env, &one, &len), 0);
    size_t n = 20000;
    uint8_t *all = malloc(n * len);
    for (size_t i = 0; i < n; i++)
        memcpy(all + i * len, one, len);
    free(one);
    rc_send_raw(fd, all, n * len); /* may fail once the daemon drops us */
    free(all);
    ck_assert(ho_harness_wait_log(h, "above max_output", 10000));
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_stats(healthy, &r), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY);
    ho_frame_envelope_free(r);
    close(fd);
    close(healthy);
    stop(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_sessions");
    TCase *t = tcase_create("sessions");
    tcase_set_timeout(t, ho_harness_under_valgrind() ? 900 : 90);
    tcase_add_test(t, register_errors_grant_nothing);
    tcase_add_test(t, alloc_free_move_roundtrip);
    tcase_add_test(t, jobs_share_arenas_per_uid);
    tcase_add_test(t, admin_requests_need_admin);
    tcase_add_test(t, admin_group_member_is_admin);
    tcase_add_test(t, quotas_enforced_listed_and_evented);
    tcase_add_test(t, closing_reclaims_everything);
    tcase_add_test(t, connection_and_extent_limits);
    tcase_add_test(t, slow_reader_is_dropped);
    suite_add_tcase(s, t);
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
