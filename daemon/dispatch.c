/* daemon/dispatch.c - requests to their handlers (see dispatch.h). */
#include "daemon/dispatch.h"

#include "daemon/admin.h"
#include "daemon/connection.h"
#include "daemon/handlers.h"
#include "daemon/planning.h"
#include "daemon/staging.h"

static bool need_session(srv_conn *c, uint64_t rid, const char *what)
{
    if (c->session)
        return true;
    srv_reply_error(c, rid, HO_E_NOT_REGISTERED,
                    "%s needs a registered session (send RegisterRequest "
                    "first)", what);
    return false;
}

static bool need_admin(srv_daemon *d, srv_conn *c, uint64_t rid,
                       const char *what)
{
    if (c->admin)
        return true;
    if (d->cfg.admin_group[0])
        srv_reply_error(c, rid, HO_E_PERMISSION,
                        "%s needs an admin peer (uid 0 or group %s); uid %u "
                        "is neither", what, d->cfg.admin_group,
                        (unsigned)c->uid);
    else
        srv_reply_error(c, rid, HO_E_PERMISSION,
                        "%s needs an admin peer (uid 0); uid %u is not",
                        what, (unsigned)c->uid);
    return false;
}

void srv_dispatch(srv_daemon *d, srv_conn *c,
                  const Hyperoffload__Envelope *env)
{
    uint64_t rid = env->request_id;
    switch (env->body_case) {
    case HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REQUEST:
        if (env->register_request)
            srv_handle_register(d, c, rid, env->register_request);
        return;
    case HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REQUEST:
        if (env->alloc_request && need_session(c, rid, "alloc"))
            srv_handle_alloc(d, c, rid, env->alloc_request);
        return;
    case HYPEROFFLOAD__ENVELOPE__BODY_FREE_REQUEST:
        if (env->free_request && need_session(c, rid, "free"))
            srv_handle_free(d, c, rid, env->free_request);
        return;
    case HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REQUEST:
        if (env->move_request && need_session(c, rid, "move"))
            srv_handle_move(d, c, rid, env->move_request);
        return;
    case HYPEROFFLOAD__ENVELOPE__BODY_STATS_REQUEST:
        srv_handle_stats(d, c, rid);
        return;
    case HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REQUEST:
        if (need_admin(d, c, rid, "StatusRequest"))
            srv_handle_status(d, c, rid);
        return;
    case HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REQUEST:
        if (need_admin(d, c, rid, "ClientsRequest"))
            srv_handle_clients(d, c, rid);
        return;
    case HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REQUEST:
        if (need_admin(d, c, rid, "QuotaRequest") && env->quota_request)
            srv_handle_quota(d, c, rid, env->quota_request);
        return;
    case HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST:
        if (!need_session(c, rid, "PlanRequest"))
            return;
        if (env->plan_request)
            srv_handle_plan(d, c, rid, env->plan_request);
        return;
    case HYPEROFFLOAD__ENVELOPE__BODY_STAGE_REQUEST:
        if (!need_session(c, rid, "StageRequest"))
            return;
        if (env->stage_request)
            srv_handle_stage(d, c, rid, env->stage_request);
        return;
    default:
        srv_reply_error(c, rid, HO_E_UNSUPPORTED,
                        "request type %d is not supported by this daemon",
                        (int)env->body_case);
        return;
    }
}
