/*
 * tests/daemon/test_dispatch.c - the request table (daemon/dispatch.c):
 * which answer each kind of request gets before its handler runs.
 *
 * A request whose body kind is set but whose message is missing cannot
 * come off the wire (protobuf-c packs a NULL message as no body at all,
 * which the server answers as a fatal "the envelope has no body":
 * test_protocol.c); it can come from code inside the daemon, and the
 * table answers it with HO_E_PROTOCOL instead of dropping it.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/connection.h"
#include "daemon/dispatch.h"
#include "hyperoffload/errors.h"

static srv_daemon *d;
static srv_conn c;
static char group[] = "hyperoffload";

static void setup(void)
{
    d = calloc(1, sizeof(*d));
    ck_assert_ptr_nonnull(d);
    d->cfg.admin_group = group;
    memset(&c, 0, sizeof(c));
    c.d = d;
    c.uid = 1000;
    c.state = SRV_CONN_READY;
}

static void teardown(void)
{
    free(d);
}

static int admit(Hyperoffload__Envelope__BodyCase body, void *msg,
                 const srv_request_kind **k, char *err)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    env.version = 1;
    env.request_id = 7;
    env.body_case = body;
    env.hello = msg;   /* the oneof shares storage */
    err[0] = '\0';
    return srv_request_admit(d, &c, &env, k, err, 512);
}

static const Hyperoffload__Envelope__BodyCase client_requests[] = {
    HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REQUEST,
    HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST,
    HYPEROFFLOAD__ENVELOPE__BODY_FREE_REQUEST,
    HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REQUEST,
    HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST,
    HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REQUEST,
    HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REQUEST,
    HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REQUEST,
    HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST,
    HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REQUEST,
};
#define N_CLIENT ((int)(sizeof(client_requests) / sizeof(client_requests[0])))

/* A missing message is a protocol error for every request, before the
 * session and admin checks (even for a registered admin peer). */
START_TEST(missing_body_is_a_protocol_error)
{
    char err[512];
    for (int pass = 0; pass < 2; pass++) {
        c.uid = pass == 1 ? 0 : 1000; /* uid 0 is admin */
        c.session = pass == 1 ? (srv_session *)(void *)&c : NULL;
        for (int i = 0; i < N_CLIENT; i++) {
            const srv_request_kind *k = NULL;
            ck_assert_int_eq(admit(client_requests[i], NULL, &k, err),
                             HO_E_PROTOCOL);
            ck_assert_ptr_null(k);
            ck_assert_msg(strstr(err, "body is missing") != NULL, "%s", err);
        }
    }
    ck_assert_int_eq(admit(HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST, NULL,
                           &(const srv_request_kind *){NULL}, err),
                     HO_E_PROTOCOL);
    ck_assert_str_eq(err, "the envelope's AllocRequest body is missing");
}
END_TEST

START_TEST(unknown_kind_is_unsupported)
{
    char err[512];
    Hyperoffload__Ok ok = HYPEROFFLOAD__OK__INIT;
    const srv_request_kind *k = NULL;
    ck_assert_int_eq(admit((Hyperoffload__Envelope__BodyCase)999, &ok, &k,
                           err), HO_E_UNSUPPORTED);
    ck_assert_str_eq(err, "request type 999 is not supported by this daemon");
    ck_assert_ptr_null(k);
}
END_TEST

/* The refusal sentences are the ones clients have always seen. */
START_TEST(session_and_admin_rows)
{
    char err[512];
    Hyperoffload__AllocRequest ar = HYPEROFFLOAD__ALLOC_REQUEST__INIT;
    Hyperoffload__PlanRequest pr = HYPEROFFLOAD__PLAN_REQUEST__INIT;
    Hyperoffload__StatusRequest st = HYPEROFFLOAD__STATUS_REQUEST__INIT;
    Hyperoffload__StatsRequest sr = HYPEROFFLOAD__STATS_REQUEST__INIT;
    const srv_request_kind *k = NULL;
    ck_assert_int_eq(admit(HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST, &ar,
                           &k, err), HO_E_NOT_REGISTERED);
    ck_assert_str_eq(err, "alloc needs a registered session (send "
                          "RegisterRequest first)");
    ck_assert_int_eq(admit(HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST, &pr,
                           &k, err), HO_E_NOT_REGISTERED);
    ck_assert_ptr_nonnull(strstr(err, "PlanRequest needs"));
    ck_assert_int_eq(admit(HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REQUEST, &st,
                           &k, err), HO_E_PERMISSION);
    ck_assert_str_eq(err, "StatusRequest needs an admin peer (uid 0 or group "
                          "hyperoffload); uid 1000 is neither");
    d->cfg.admin_group[0] = '\0';
    ck_assert_int_eq(admit(HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REQUEST, &st,
                           &k, err), HO_E_PERMISSION);
    ck_assert_str_eq(err, "StatusRequest needs an admin peer (uid 0); uid "
                          "1000 is not");
    memcpy(group, "hyperoffload", sizeof(group));
    ck_assert_ptr_null(k);

    /* Stats needs neither. */
    ck_assert_int_eq(admit(HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST, &sr,
                           &k, err), 0);
    ck_assert_ptr_nonnull(k);
    ck_assert_str_eq(k->name, "StatsRequest");
    ck_assert(!k->needs_session && !k->needs_admin);

    /* Registered admin: admitted, with the row of its kind. */
    c.uid = 0; /* admin: checked per request, from the uid */
    c.session = (srv_session *)(void *)&c;
    k = NULL;
    ck_assert_int_eq(admit(HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST, &ar,
                           &k, err), 0);
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(k->body, HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST);
    ck_assert(k->needs_session && !k->needs_admin && k->handle);
    ck_assert_int_eq(admit(HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REQUEST, &st,
                           &k, err), 0);
    ck_assert(k->needs_admin);
}
END_TEST

/* Every client request has a row; daemon-only bodies have none. */
START_TEST(every_request_has_a_row)
{
    char err[512];
    Hyperoffload__Ok ok = HYPEROFFLOAD__OK__INIT;
    c.uid = 0;
    c.session = (srv_session *)(void *)&c;
    for (int i = 0; i < N_CLIENT; i++) {
        const srv_request_kind *k = NULL;
        /* any message will do: the table does not look inside */
        ck_assert_int_eq(admit(client_requests[i], &ok, &k, err), 0);
        ck_assert_ptr_nonnull(k);
        ck_assert_int_eq(k->body, client_requests[i]);
    }
    const srv_request_kind *k = NULL;
    ck_assert_int_eq(admit(HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY, &ok,
                           &k, err), HO_E_UNSUPPORTED);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_dispatch");
    TCase *t = tcase_create("table");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, missing_body_is_a_protocol_error);
    tcase_add_test(t, unknown_kind_is_unsupported);
    tcase_add_test(t, session_and_admin_rows);
    tcase_add_test(t, every_request_has_a_row);
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
