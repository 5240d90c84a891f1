/* daemon/dispatch.c - the request table (see dispatch.h). */
#include "daemon/dispatch.h"

#include "daemon/admin.h"
#include "daemon/arbitrate.h"
#include "daemon/authz.h"
#include "daemon/connection.h"
#include "daemon/handlers.h"
#include "daemon/metrics.h"
#include "daemon/planning.h"
#include "daemon/pstore.h"
#include "daemon/residency.h"
#include "daemon/staging.h"
#include "proto/errfmt.h"

/* Table entries call the modules' typed handlers. */
#define BODY_HANDLER(name, type, fn)                                      \
    static void name(srv_daemon *d, srv_conn *c, uint64_t rid,            \
                     const void *body)                                    \
    {                                                                     \
        fn(d, c, rid, (const type *)body);                                \
    }
#define EMPTY_HANDLER(name, fn)                                           \
    static void name(srv_daemon *d, srv_conn *c, uint64_t rid,            \
                     const void *body)                                    \
    {                                                                     \
        (void)body;                                                       \
        fn(d, c, rid);                                                    \
    }

BODY_HANDLER(on_register, Hyperoffload__RegisterRequest, srv_handle_register)
BODY_HANDLER(on_alloc, Hyperoffload__AllocRequest, srv_handle_alloc)
BODY_HANDLER(on_free, Hyperoffload__FreeRequest, srv_handle_free_request)
BODY_HANDLER(on_move, Hyperoffload__MoveRequest, srv_handle_move)
EMPTY_HANDLER(on_stats, srv_handle_stats)
EMPTY_HANDLER(on_status, srv_handle_status)
EMPTY_HANDLER(on_clients, srv_handle_clients)
BODY_HANDLER(on_quota, Hyperoffload__QuotaRequest, srv_handle_quota)
EMPTY_HANDLER(on_metrics, srv_handle_metrics)
BODY_HANDLER(on_node, Hyperoffload__NodeRequest, srv_handle_node)
BODY_HANDLER(on_plan, Hyperoffload__PlanRequest, srv_handle_plan)
BODY_HANDLER(on_stage, Hyperoffload__StageRequest, srv_handle_stage)
BODY_HANDLER(on_publish, Hyperoffload__PublishRequest, srv_handle_publish)
BODY_HANDLER(on_map_prefix, Hyperoffload__MapPrefixRequest,
             srv_handle_map_prefix)
BODY_HANDLER(on_unmap_prefix, Hyperoffload__UnmapPrefixRequest,
             srv_handle_unmap_prefix)
BODY_HANDLER(on_region_register, Hyperoffload__RegionRegister,
             srv_handle_region_register)
EMPTY_HANDLER(on_regions, srv_handle_regions)
EMPTY_HANDLER(on_store, srv_handle_store)
BODY_HANDLER(on_admit, Hyperoffload__AdmitRequest, srv_handle_admit)
BODY_HANDLER(on_plan_fetch, Hyperoffload__PlanFetchRequest,
             srv_handle_plan_fetch)
BODY_HANDLER(on_plan_switched, Hyperoffload__PlanSwitched,
             srv_handle_plan_switched)

#define SESSION true
#define ADMIN true
#define REQUEST(kind, field, msg, refused_as, session, admin, fn)         \
    {                                                                     \
        .body = HYPEROFFLOAD__ENVELOPE__BODY_##kind, .name = msg,         \
        .what = refused_as,                                               \
        .body_off = offsetof(Hyperoffload__Envelope, field),              \
        .needs_session = session, .needs_admin = admin, .handle = fn,     \
    }

static const srv_request_kind requests[] = {
    REQUEST(REGISTER_REQUEST, register_request, "RegisterRequest",
            "RegisterRequest", false, false, on_register),
    REQUEST(ALLOC_REQUEST, alloc_request, "AllocRequest", "alloc", SESSION,
            false, on_alloc),
    REQUEST(FREE_REQUEST, free_request, "FreeRequest", "free", SESSION,
            false, on_free),
    REQUEST(MOVE_REQUEST, move_request, "MoveRequest", "move", SESSION,
            false, on_move),
    REQUEST(STATS_REQUEST, stats_request, "StatsRequest", "StatsRequest",
            false, false, on_stats),
    REQUEST(STATUS_REQUEST, status_request, "StatusRequest", "StatusRequest",
            false, ADMIN, on_status),
    REQUEST(CLIENTS_REQUEST, clients_request, "ClientsRequest",
            "ClientsRequest", false, ADMIN, on_clients),
    REQUEST(QUOTA_REQUEST, quota_request, "QuotaRequest", "QuotaRequest",
            false, ADMIN, on_quota),
    REQUEST(PLAN_REQUEST, plan_request, "PlanRequest", "PlanRequest",
            SESSION, false, on_plan),
    REQUEST(STAGE_REQUEST, stage_request, "StageRequest", "StageRequest",
            SESSION, false, on_stage),
    REQUEST(PUBLISH_REQUEST, publish_request, "PublishRequest",
            "PublishRequest", SESSION, false, on_publish),
    REQUEST(MAP_PREFIX_REQUEST, map_prefix_request, "MapPrefixRequest",
            "MapPrefixRequest", SESSION, false, on_map_prefix),
    REQUEST(UNMAP_PREFIX_REQUEST, unmap_prefix_request, "UnmapPrefixRequest",
            "UnmapPrefixRequest", SESSION, false, on_unmap_prefix),
    REQUEST(REGION_REGISTER, region_register, "RegionRegister",
            "RegionRegister", SESSION, false, on_region_register),
    REQUEST(REGIONS_REQUEST, regions_request, "RegionsRequest",
            "RegionsRequest", false, false, on_regions),
    REQUEST(STORE_REQUEST, store_request, "StoreRequest", "StoreRequest",
            false, false, on_store),
    REQUEST(ADMIT_REQUEST, admit_request, "AdmitRequest", "AdmitRequest",
            false, false, on_admit),
    REQUEST(PLAN_FETCH_REQUEST, plan_fetch_request, "PlanFetchRequest",
            "PlanFetchRequest", SESSION, false, on_plan_fetch),
    REQUEST(PLAN_SWITCHED, plan_switched, "PlanSwitched", "PlanSwitched",
            SESSION, false, on_plan_switched),
    REQUEST(METRICS_REQUEST, metrics_request, "MetricsRequest",
            "MetricsRequest", false, ADMIN, on_metrics),
    REQUEST(NODE_REQUEST, node_request, "NodeRequest", "NodeRequest", false,
            false, on_node),
};
#define N_REQUESTS (sizeof(requests) / sizeof(requests[0]))

static const srv_request_kind *kind_of(Hyperoffload__Envelope__BodyCase b)
{
    for (size_t i = 0; i < N_REQUESTS; i++)
        if (requests[i].body == b)
            return &requests[i];
    return NULL;
}

static const void *body_of(const srv_request_kind *k,
                           const Hyperoffload__Envelope *env)
{
    return *(const void *const *)(const void *)((const char *)env +
                                                k->body_off);
}

static int refuse_non_admin(const srv_daemon *d, const srv_conn *c,
                            const srv_request_kind *k, char *err,
                            size_t errlen)
{
    if (d->cfg.admin_group && d->cfg.admin_group[0])
        return ho_errf(err, errlen, HO_E_PERMISSION,
                       "%s needs an admin peer (uid 0 or group %s); uid %u "
                       "is neither", k->what, d->cfg.admin_group,
                       (unsigned)c->uid);
    return ho_errf(err, errlen, HO_E_PERMISSION,
                   "%s needs an admin peer (uid 0); uid %u is not", k->what,
                   (unsigned)c->uid);
}

int srv_request_admit(const srv_daemon *d, const srv_conn *c,
                      const Hyperoffload__Envelope *env,
                      const srv_request_kind **ret_kind, char *err,
                      size_t errlen)
{
    const srv_request_kind *k = kind_of(env->body_case);
    if (!k)
        return ho_errf(err, errlen, HO_E_UNSUPPORTED,
                       "request type %d is not supported by this daemon",
                       (int)env->body_case);
    if (!body_of(k, env))
        return ho_errf(err, errlen, HO_E_PROTOCOL,
                       "the envelope's %s body is missing", k->name);
    if (k->needs_admin && !srv_authz_is_admin(&d->authz, c->uid, c->gid))
        return refuse_non_admin(d, c, k, err, errlen);
    if (k->needs_session && !c->session)
        return ho_errf(err, errlen, HO_E_NOT_REGISTERED,
                       "%s needs a registered session (send RegisterRequest "
                       "first)", k->what);
    *ret_kind = k;
    return 0;
}

void srv_dispatch(srv_daemon *d, srv_conn *c,
                  const Hyperoffload__Envelope *env)
{
    char err[SRV_ERR_MAX];
    const srv_request_kind *k = NULL;
    int rc = srv_request_admit(d, c, env, &k, err, sizeof(err));
    if (rc < 0) {
        srv_reply_error(c, env->request_id, rc, "%s", err);
        return;
    }
    k->handle(d, c, env->request_id, body_of(k, env));
}
