/*
 * client/stats.c - tier statistics and the session's own usage.
 */
#include "client/client_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

HO_EXPORT const char *ho_tier_name(ho_tier t)
{
    switch (t) {
    case HO_TIER_NONE:
        return "none";
    case HO_TIER_DDR:
        return "ddr";
    case HO_TIER_FLASH:
        return "flash";
    case HO_TIER_HBM:
        return "hbm";
    }
    return "unknown";
}

void hoc_tier_stats_copy(ho_tier_stats *dst, const Hyperoffload__TierStats *src)
{
    *dst = (ho_tier_stats){
        .tier = (ho_tier)src->tier, .capacity = src->capacity,
        .used = src->used, .free = src->free,
        .largest_free = src->largest_free,
        .fragmentation = src->fragmentation, .extents = src->extents,
        .committed = src->committed,
    };
    snprintf(dst->name, sizeof(dst->name), "%s", src->name ? src->name : "");
    snprintf(dst->detail, sizeof(dst->detail), "%s",
             src->detail ? src->detail : "");
}

HO_EXPORT int ho_stats(ho_client *c, ho_tier_stats *tiers, size_t max_tiers,
                       size_t *ret_ntiers, ho_usage *ret_usage)
{
    Hyperoffload__StatsRequest req = HYPEROFFLOAD__STATS_REQUEST__INIT;
    Hyperoffload__Envelope *reply = NULL;

    if (max_tiers > 0 && !tiers)
        return -EINVAL;
    HOC_ENVELOPE(env, STATS_REQUEST, stats_request, &req);
    int rc = hoc_call_expect(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_STATS_REPLY,
                             &reply, NULL);
    if (rc < 0)
        return rc;
    const Hyperoffload__StatsReply *s = reply->stats_reply;
    size_t n = s ? s->n_tiers : 0;
    for (size_t i = 0; i < n && i < max_tiers; i++) {
        if (s->tiers[i])
            hoc_tier_stats_copy(&tiers[i], s->tiers[i]);
        else
            memset(&tiers[i], 0, sizeof(tiers[i]));
    }
    if (ret_ntiers)
        *ret_ntiers = n;
    if (ret_usage) {
        const Hyperoffload__SessionUsage *u = s ? s->session : NULL;
        ho_usage out = {0};
        if (u) {
            out.ddr_bytes = u->ddr_bytes;
            out.flash_bytes = u->flash_bytes;
            out.extents = u->extents;
            out.hbm_granted = u->hbm_granted;
        }
        *ret_usage = out;
    }
    ho_frame_envelope_free(reply);
    return 0;
}
