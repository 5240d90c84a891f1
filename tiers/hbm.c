/*
 * tiers/hbm.c - per-device HBM budget table.  Grants of a device live in a
 * small array in grant order (a device has a handful of sessions; lookups
 * are linear).
 */
#include "tiers/hbm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"

struct hbm_dev {
    tier_hbm_device info;
    uint64_t granted;        /* sum of grants */
    tier_hbm_grant_info *grants;  /* owned; grant order */
    uint32_t n, cap;
};

struct tier_hbm {
    uint32_t n;
    struct hbm_dev *devs;    /* owned */
};

tier_hbm *tier_hbm_new(const tier_hbm_device *devs, uint32_t n)
{
    tier_hbm *h;
    uint32_t i, j;

    if (n > TIER_HBM_DEVICES_MAX || (n > 0 && !devs))
        return NULL;
    for (i = 0; i < n; i++) {
        if (devs[i].reserve > devs[i].capacity ||
            strnlen(devs[i].name, sizeof(devs[i].name)) == 0 ||
            strnlen(devs[i].name, sizeof(devs[i].name)) == sizeof(devs[i].name))
            return NULL;
        for (j = 0; j < i; j++)
            if (strcmp(devs[i].name, devs[j].name) == 0)
                return NULL;
    }
    h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    if (n > 0) {
        h->devs = calloc(n, sizeof(*h->devs));
        if (!h->devs)
            goto fail;
    }
    for (i = 0; i < n; i++)
        h->devs[i].info = devs[i];
    h->n = n;
    return h;
fail:
    free(h);
    return NULL;
}

tier_hbm *tier_hbm_free(tier_hbm *h)
{
    uint32_t i;

    if (!h)
        return NULL;
    for (i = 0; i < h->n; i++)
        free(h->devs[i].grants);
    free(h->devs);
    free(h);
    return NULL;
}

uint32_t tier_hbm_count(const tier_hbm *h)
{
    return h->n;
}

const tier_hbm_device *tier_hbm_device_get(const tier_hbm *h, uint32_t dev)
{
    return dev < h->n ? &h->devs[dev].info : NULL;
}

static int64_t find_grant(const struct hbm_dev *d, uint64_t owner)
{
    uint32_t i;

    for (i = 0; i < d->n; i++)
        if (d->grants[i].owner == owner)
            return i;
    return -1;
}

int tier_hbm_grant(tier_hbm *h, uint32_t dev, uint64_t owner,
                   uint64_t bytes)
{
    struct hbm_dev *d;
    uint64_t limit, others;
    int64_t k;

    if (dev >= h->n)
        return HO_E_UNKNOWN_DEVICE;
    if (bytes == 0)
        return HO_E_INVALID_SIZE;
    d = &h->devs[dev];
    k = find_grant(d, owner);
    others = d->granted - (k >= 0 ? d->grants[k].bytes : 0);
    limit = d->info.capacity - d->info.reserve;
    /* others <= limit always holds, so this cannot wrap */
    if (bytes > limit - others)
        return HO_E_BUDGET;
    if (k < 0) {
        if (d->n >= TIER_HBM_GRANTS_MAX)
            return HO_E_BUDGET;
        if (d->n == d->cap) {
            uint32_t ncap = d->cap ? 2 * d->cap : 8;
            tier_hbm_grant_info *g = realloc(d->grants, ncap * sizeof(*g));
            if (!g)
                return -ENOMEM;
            d->grants = g;
            d->cap = ncap;
        }
        k = d->n++;
        d->grants[k].owner = owner;
    }
    d->grants[k].bytes = bytes;
    d->granted = others + bytes;
    return 0;
}

int tier_hbm_release(tier_hbm *h, uint32_t dev, uint64_t owner)
{
    struct hbm_dev *d;
    int64_t k;

    if (dev >= h->n)
        return HO_E_UNKNOWN_DEVICE;
    d = &h->devs[dev];
    k = find_grant(d, owner);
    if (k < 0)
        return 0;
    d->granted -= d->grants[k].bytes;
    memmove(&d->grants[k], &d->grants[k + 1],
            (d->n - (uint32_t)k - 1) * sizeof(*d->grants));
    d->n--;
    return 0;
}

uint32_t tier_hbm_release_owner(tier_hbm *h, uint64_t owner)
{
    uint32_t i, dropped = 0;

    for (i = 0; i < h->n; i++) {
        if (find_grant(&h->devs[i], owner) >= 0) {
            (void)tier_hbm_release(h, i, owner);
            dropped++;
        }
    }
    return dropped;
}

uint64_t tier_hbm_granted(const tier_hbm *h, uint32_t dev)
{
    return dev < h->n ? h->devs[dev].granted : 0;
}

uint64_t tier_hbm_granted_to(const tier_hbm *h, uint32_t dev, uint64_t owner)
{
    int64_t k;

    if (dev >= h->n)
        return 0;
    k = find_grant(&h->devs[dev], owner);
    return k >= 0 ? h->devs[dev].grants[k].bytes : 0;
}

uint32_t tier_hbm_grants(const tier_hbm *h, uint32_t dev,
                         tier_hbm_grant_info *out, uint32_t max)
{
    const struct hbm_dev *d;
    uint32_t n;

    if (dev >= h->n)
        return 0;
    d = &h->devs[dev];
    n = d->n < max ? d->n : max;
    if (n > 0)
        memcpy(out, d->grants, n * sizeof(*out));
    return d->n;
}
