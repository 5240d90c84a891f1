/*
 * tiers/hbm.h - per-device HBM budget table.
 *
 * The daemon never touches device memory: clients own it.  This table says
 * how much each client may use on each device.  A grant is admitted only if
 * the sum of grants plus the device's reserve fits its capacity.
 * Not thread-safe (loop thread).
 */
#ifndef HO_TIERS_HBM_H
#define HO_TIERS_HBM_H

#include <stddef.h>
#include <stdint.h>

typedef struct tier_hbm tier_hbm;

typedef struct tier_hbm_device {
    char name[32];        /* "emu0", "cuda:0", ... */
    uint64_t capacity;
    uint64_t reserve;     /* kept back from grants (runtime, fragmentation) */
} tier_hbm_device;

typedef struct tier_hbm_grant {
    uint64_t owner;       /* session id */
    uint64_t bytes;
} tier_hbm_grant;

tier_hbm *tier_hbm_new(const tier_hbm_device *devs, uint32_t n);
tier_hbm *tier_hbm_free(tier_hbm *h);

uint32_t tier_hbm_count(const tier_hbm *h);
const tier_hbm_device *tier_hbm_device_get(const tier_hbm *h, uint32_t dev);

/* Grant `bytes` on `dev` to `owner` (replaces the owner's existing grant on
 * that device).  HO_E_UNKNOWN_DEVICE, HO_E_INVALID_SIZE (0),
 * HO_E_BUDGET when it does not fit (state unchanged). */
int tier_hbm_grant(tier_hbm *h, uint32_t dev, uint64_t owner,
                   uint64_t bytes);
/* Drop the owner's grant on dev (0 also when none). */
int tier_hbm_release(tier_hbm *h, uint32_t dev, uint64_t owner);

uint64_t tier_hbm_granted(const tier_hbm *h, uint32_t dev);
/* Copy up to `max` grants of dev into out; returns how many exist. */
uint32_t tier_hbm_grants(const tier_hbm *h, uint32_t dev,
                         tier_hbm_grant *out, uint32_t max);

#endif
