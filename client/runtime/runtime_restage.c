/*
 * client/runtime/runtime_restage.c - a replay staged again after the
 * library reconnected to a daemon that was restarted (issue 10 item 7:
 * reconnect "re-registers and re-stages").
 *
 * The daemon that died took its session with it: the control region, the
 * staging plan and the host copies on flash.  What the client still has:
 * the device copies, and the old session's pool mapping, which connect.c
 * keeps intact for every replay staged on it (the memfd lives as long as
 * the mapping does), so a host copy whose slot was in DDR (or in a client
 * copy) when the daemon went away is still there.  Re-staging, between
 * steps only: drain, ask for the plan again on the new session (this call
 * reconnects when the connection is still the dead one), insist on the
 * same schedule, StageRequest, then copy each host copy the replay still
 * needs into its new slot -- from the old pool, else from the device copy
 * when that holds the same version -- and mark the others lost.  The old
 * region and pool are let go of last.
 */
#include "client/runtime/runtime_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The same actions and homes, in the same order (the daemon stages what
 * its own copy of the plan says, the replay runs r->p's). */
static bool same_schedule(const plan_schedule *a, const plan_schedule *b)
{
    if (a->n_actions != b->n_actions || a->n_homes != b->n_homes ||
        a->budget_bytes != b->budget_bytes)
        return false;
    for (size_t i = 0; i < a->n_actions; i++) {
        const plan_action *x = &a->actions[i], *y = &b->actions[i];
        if (x->storage_id != y->storage_id || x->op != y->op ||
            x->when != y->when || x->kind != y->kind)
            return false;
    }
    for (size_t i = 0; i < a->n_homes; i++)
        if (a->homes[i].storage_id != b->homes[i].storage_id ||
            a->homes[i].home != b->homes[i].home)
            return false;
    return true;
}

/* Step 1: the plan on the new session; its key in *ret_hash. */
static int plan_again(ho_replay *r, uint64_t *ret_hash)
{
    const plan_schedule *s = r->p->s;
    ho_plan *np = NULL;
    int rc = ho_plan_request(r->c, r->t, s->budget_bytes, s->planner, &np);
    if (rc < 0) {
        char why[HOR_ERRLEN];
        snprintf(why, sizeof(why), "%s", ho_runtime_last_error());
        return hor_fail(r->c, rc, "the daemon went away under the replay; "
                        "re-staging it failed asking for its plan again: "
                        "%s", why);
    }
    bool same = same_schedule(np->s, s);
    size_t n = np->s->n_actions;
    *ret_hash = np->daemon_hash;
    ho_plan_free(np);
    if (!same)
        return hor_fail(r->c, HO_E_DISCONNECTED, "the daemon went away "
                        "under the replay, and the daemon now serving "
                        "planned trace '%s' differently (%zu actions, the "
                        "replay's plan has %zu): make a new plan and "
                        "replay", r->pt->name, n, s->n_actions);
    return 0;
}

/* Step 3: storage s's host copy from the old region `o` (pool `op`, NULL
 * when gone) into its new slot, or from the device; else lost.  Returns
 * 1 when copied, 0 when nothing was needed or it is lost (*lost counts),
 * or a copy's error. */
static int carry_over(ho_replay *r, hor_storage *s, const hor_ctl *o,
                      const uint8_t *op, uint64_t op_size, unsigned *lost)
{
    uint32_t i = s->slot;
    ho_ctl_slot *was = &o->slots[i], *now = &r->ctl.slots[i];
    atomic_store(&now->version, atomic_load(&was->version));
    atomic_store(&now->dropped, atomic_load(&was->dropped));
    if (!s->host_valid || s->host_version != s->version)
        return 0; /* nothing the replay needs is in it */
    uint32_t st = atomic_load(&was->state);
    bool intact = op && (st == HO_SLOT_DDR || st == HO_SLOT_CLIENT) &&
                  was->offset <= op_size && s->bytes <= op_size - was->offset;
    bool on_dev = s->ptr && s->dev_valid;
    if (!intact && !on_dev) {
        s->host_valid = false;
        s->lost = true;
        (*lost)++;
        return 0;
    }
    uint64_t stall = 0;
    int rc = hor_slot_acquire(r, i, &stall);
    if (rc < 0)
        return rc;
    if (intact)
        memcpy(hor_slot_ptr(r, i), op + was->offset, (size_t)s->bytes);
    else
        rc = r->ops->copy_sync(r->bst, HOB_D2H, hor_slot_ptr(r, i), s->ptr,
                               s->bytes);
    hor_slot_release(r, i, false);
    if (rc < 0)
        return hor_fail(r->c, rc, "re-staging: copying storage %llu's host "
                        "copy from the device failed",
                        (unsigned long long)s->id);
    return 1;
}

static int restage(ho_replay *r)
{
    ho_client *c = r->c;
    int rc = hor_drain(r);
    if (rc < 0)
        return rc;
    uint64_t hash = 0;
    if ((rc = plan_again(r, &hash)) < 0)
        return rc;
    if (hoc_epoch(c) == r->epoch && !hoc_peer_gone(c))
        return 0; /* the same session after all: nothing to do */

    /* Step 2: a new region on the new session; the old one kept aside. */
    hor_ctl o = r->ctl;
    uint64_t o_epoch = r->epoch, o_hash = r->stage_hash;
    if (o.registered)
        r->ops->host_unregister(r->bst, o.registered);
    o.registered = NULL;
    memset(&r->ctl, 0, sizeof(r->ctl));
    r->stage_hash = hash;
    rc = hor_ctl_init(r);
    if (rc < 0) {
        char why[HOR_ERRLEN];
        snprintf(why, sizeof(why), "%s", ho_runtime_last_error());
        hor_ctl_done(r);
        r->ctl = o;
        r->epoch = o_epoch;
        r->stage_hash = o_hash;
        return hor_fail(c, rc, "the daemon went away under the replay; "
                        "staging it on the new session failed: %s", why);
    }

    /* Step 3: the host copies it still needs. */
    uint64_t pool_size = 0;
    const uint8_t *op = o.h && !atomic_load(&o.h->revoked)
                            ? hoc_old_pool(c, o_epoch, &pool_size)
                            : NULL;
    unsigned copied = 0, lost = 0;
    for (uint32_t k = 0; k < r->n_st && rc >= 0; k++)
        if (r->st[k].slot != HOR_NONE) {
            rc = carry_over(r, &r->st[k], &o, op, pool_size, &lost);
            copied += rc > 0;
        }
    atomic_store(&r->ctl.h->step, r->step);
    atomic_store(&r->ctl.h->h2d_bytes, r->tot_h2d);
    atomic_store(&r->ctl.h->d2h_bytes, r->tot_d2h);
    hor_ctl_release(r, &o, o_epoch);
    if (rc < 0)
        return rc; /* staged anew; the copy that failed is named */
    r->restages++;
    r->plan_epoch = 0; /* the new daemon counts its arbitrations anew */
    r->restage_copied += copied;
    r->restage_lost += lost;
    return 0;
}

int hor_restage_if_due(ho_replay *r)
{
    if (!r->c || r->ctl.efd < 0 || !hoc_reconnect_on(r->c))
        return 0;
    if (hoc_epoch(r->c) == r->epoch && !hoc_peer_gone(r->c))
        return 0;
    return restage(r);
}

HO_EXPORT unsigned ho_replay_restages(const ho_replay *r,
                                      uint64_t *ret_copied,
                                      uint64_t *ret_lost)
{
    if (ret_copied)
        *ret_copied = r ? r->restage_copied : 0;
    if (ret_lost)
        *ret_lost = r ? r->restage_lost : 0;
    return r ? r->restages : 0;
}
