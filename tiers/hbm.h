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

#include "tiers/limits.h" /* TIER_HBM_DEVICES_MAX, _GRANTS_MAX, _NAME_LEN */

typedef struct tier_hbm tier_hbm;

typedef struct tier_hbm_device {
    char name[TIER_HBM_NAME_LEN]; /* "emu0", "cuda:0", ... */
    uint64_t capacity;
    uint64_t reserve;     /* kept back from grants (runtime, fragmentation) */
} tier_hbm_device;

typedef struct tier_hbm_grant_info {
    uint64_t owner;       /* session id */
    uint64_t bytes;
} tier_hbm_grant_info;

/* Table of n devices (copied; device index = position in devs), no
 * grants.  n may be 0.  NULL on OOM or bad arguments: n above
 * TIER_HBM_DEVICES_MAX, devs NULL with n > 0, a reserve above its
 * capacity, a name empty or not NUL-terminated within its 32 bytes, two
 * devices with the same name.  The caller owns the table (tier_hbm_free,
 * which accepts NULL and returns NULL). */
tier_hbm *tier_hbm_new(const tier_hbm_device *devs, uint32_t n);
tier_hbm *tier_hbm_free(tier_hbm *h);

uint32_t tier_hbm_count(const tier_hbm *h);
/* The device's entry (owned by the table), NULL when dev >= count. */
const tier_hbm_device *tier_hbm_device_get(const tier_hbm *h, uint32_t dev);

/* Grant `bytes` on `dev` to `owner` (replaces the owner's existing grant on
 * that device, keeping its place in the grant order).  Admitted when the
 * other owners' grants + bytes <= capacity - reserve.  HO_E_UNKNOWN_DEVICE,
 * HO_E_INVALID_SIZE (0), HO_E_BUDGET when it does not fit or the device
 * already has TIER_HBM_GRANTS_MAX other grants, -ENOMEM; state unchanged
 * on failure (a refused replacement keeps the old grant). */
int tier_hbm_grant(tier_hbm *h, uint32_t dev, uint64_t owner,
                   uint64_t bytes);
/* Drop the owner's grant on dev (0 also when none).  HO_E_UNKNOWN_DEVICE. */
int tier_hbm_release(tier_hbm *h, uint32_t dev, uint64_t owner);
/* Drop the owner's grants on every device (session gone); returns how many
 * were dropped. */
uint32_t tier_hbm_release_owner(tier_hbm *h, uint64_t owner);

/* Sum of grants on dev (0 for an unknown device). */
uint64_t tier_hbm_granted(const tier_hbm *h, uint32_t dev);
/* The owner's grant on dev, 0 when none or unknown device. */
uint64_t tier_hbm_granted_to(const tier_hbm *h, uint32_t dev,
                             uint64_t owner);
/* Copy up to `max` grants of dev into out (grant order); returns how many
 * exist (0 for an unknown device).  out may be NULL when max is 0. */
uint32_t tier_hbm_grants(const tier_hbm *h, uint32_t dev,
                         tier_hbm_grant_info *out, uint32_t max);

#endif
