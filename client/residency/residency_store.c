/*
 * client/residency/residency_store.c - the prefix store requests of a
 * region (hyperoffload/residency.h): publish, map, unmap.
 */
#include <errno.h>
#include <string.h>

#include "client/residency/residency_internal.h"

int ho_region_publish(ho_region *r, const char *key, const uint32_t *blocks,
                      size_t n, uint32_t ttl_ms)
{
    (void)key; (void)blocks; (void)n; (void)ttl_ms;
    if (!r)
        return hor_fail(NULL, -EINVAL, "ho_region_publish needs a region");
    return HRES_FAIL(r, HO_E_UNSUPPORTED, "the prefix store is not there yet");
}

int ho_region_map_prefix(ho_region *r, const char *key, uint32_t *ret_blocks,
                         size_t max, size_t *ret_n)
{
    (void)key; (void)ret_blocks; (void)max; (void)ret_n;
    if (!r)
        return hor_fail(NULL, -EINVAL, "ho_region_map_prefix needs a region");
    return HRES_FAIL(r, HO_E_UNSUPPORTED, "the prefix store is not there yet");
}

void hres_store_unmap(ho_region *r, uint32_t m)
{
    r->maps[m].used = false;
}
