/*
 * client/pool.c - DDR extents of the session's pool: alloc, free, spill to
 * flash, fill back.
 */
#include "client/client_internal.h"

#include <string.h>

/* The id the caller sees: the daemon's, tagged with the reconnect count
 * (HOC_EPOCH_SHIFT); unchanged until the first reconnect. */
static uint64_t tag_id(const ho_client *c, uint64_t id)
{
    return id | ((c->epoch & 0xffff) << HOC_EPOCH_SHIFT);
}

/* The daemon's id of a caller's id, or HO_E_DISCONNECTED when it is an
 * extent of a session before a reconnect (its data went with it). */
static int untag_id(ho_client *c, uint64_t id, uint64_t *ret_id)
{
    uint64_t epoch = id >> HOC_EPOCH_SHIFT;
    if (epoch != (c->epoch & 0xffff))
        return hoc_fail(c, HO_E_DISCONNECTED,
                        "extent %llu belongs to the session before the "
                        "client reconnected to the daemon (%u reconnect%s "
                        "so far); it and its data are gone",
                        (unsigned long long)(id & ((1ull << HOC_EPOCH_SHIFT)
                                                   - 1)),
                        c->reconnects, c->reconnects == 1 ? "" : "s");
    *ret_id = id & ((1ull << HOC_EPOCH_SHIFT) - 1);
    return 0;
}

static int send_free(ho_client *c, uint64_t extent_id)
{
    Hyperoffload__FreeRequest req = HYPEROFFLOAD__FREE_REQUEST__INIT;
    Hyperoffload__Envelope *reply = NULL;

    req.extent_id = extent_id;
    HOC_ENVELOPE(env, FREE_REQUEST, free_request, &req);
    int rc = hoc_call_expect(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_OK,
                             &reply, NULL);
    ho_frame_envelope_free(reply);
    return rc;
}

HO_EXPORT int ho_extent_alloc(ho_client *c, uint64_t bytes,
                              ho_extent *ret_extent)
{
    Hyperoffload__AllocRequest req = HYPEROFFLOAD__ALLOC_REQUEST__INIT;
    Hyperoffload__Envelope *reply = NULL;

    req.bytes = bytes;
    HOC_ENVELOPE(env, ALLOC_REQUEST, alloc_request, &req);
    int rc = hoc_call_expect(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_ALLOC_REPLY,
                             &reply, NULL);
    if (rc < 0)
        return rc;

    const Hyperoffload__AllocReply *a = reply->alloc_reply;
    uint64_t id = a ? a->extent_id : 0;
    uint64_t pool_size = ho_pool_size(c); /* 0 when not registered */
    if (!a || a->arena_id != ho_pool_arena_id(c) || a->length < bytes ||
        a->offset > pool_size || a->length > pool_size - a->offset) {
        rc = hoc_fail(c, HO_E_PROTOCOL,
                      "alloc reply for extent %llu names arena %llu range "
                      "[%llu, +%llu) outside this session's mapping",
                      (unsigned long long)id,
                      (unsigned long long)(a ? a->arena_id : 0),
                      (unsigned long long)(a ? a->offset : 0),
                      (unsigned long long)(a ? a->length : 0));
        ho_frame_envelope_free(reply);
        if (id)
            send_free(c, id); /* do not leak it in the daemon */
        return rc;
    }
    ho_extent e = {
        .id = tag_id(c, a->extent_id),
        .arena_id = a->arena_id,
        .offset = a->offset,
        .length = a->length,
        .ptr = (uint8_t *)ho_pool_base(c) + a->offset,
    };
    ho_frame_envelope_free(reply);
    *ret_extent = e;
    return 0;
}

HO_EXPORT int ho_extent_free(ho_client *c, uint64_t extent_id)
{
    uint64_t id = 0;
    int rc = untag_id(c, extent_id, &id);
    return rc < 0 ? rc : send_free(c, id);
}

static int move(ho_client *c, uint64_t extent_id,
                Hyperoffload__MoveDirection dir, ho_move_result *ret)
{
    Hyperoffload__MoveRequest req = HYPEROFFLOAD__MOVE_REQUEST__INIT;
    Hyperoffload__Envelope *reply = NULL;

    int rc = untag_id(c, extent_id, &extent_id);
    if (rc < 0)
        return rc;
    req.extent_id = extent_id;
    req.direction = dir;
    HOC_ENVELOPE(env, MOVE_REQUEST, move_request, &req);
    rc = hoc_call_expect(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_MOVE_REPLY,
                             &reply, NULL);
    if (rc < 0)
        return rc;
    const Hyperoffload__MoveReply *m = reply->move_reply;
    Hyperoffload__Tier want = dir == HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL
                                  ? HYPEROFFLOAD__TIER__TIER_FLASH
                                  : HYPEROFFLOAD__TIER__TIER_DDR;
    if (!m || m->extent_id != extent_id || m->residency != want) {
        rc = hoc_fail(c, HO_E_PROTOCOL,
                      "move reply for extent %llu says extent %llu in tier "
                      "%d, expected %s",
                      (unsigned long long)extent_id,
                      (unsigned long long)(m ? m->extent_id : 0),
                      m ? (int)m->residency : -1,
                      ho_tier_name((ho_tier)want));
        ho_frame_envelope_free(reply);
        return rc;
    }
    if (ret) {
        ret->residency = (ho_tier)m->residency;
        ret->bytes = m->bytes;
        ret->duration_us = m->duration_us;
    }
    ho_frame_envelope_free(reply);
    return 0;
}

HO_EXPORT int ho_extent_spill(ho_client *c, uint64_t extent_id,
                              ho_move_result *ret)
{
    return move(c, extent_id, HYPEROFFLOAD__MOVE_DIRECTION__MOVE_SPILL, ret);
}

HO_EXPORT int ho_extent_fill(ho_client *c, uint64_t extent_id,
                             ho_move_result *ret)
{
    return move(c, extent_id, HYPEROFFLOAD__MOVE_DIRECTION__MOVE_FILL, ret);
}
