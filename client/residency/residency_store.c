/*
 * client/residency/residency_store.c - what a region asks of the daemon
 * (hyperoffload/residency.h, docs/residency.md): RegionRegister of its
 * statistics header once, and the prefix store requests (publish, map,
 * unmap).  None of these is on the per-block path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/admin_call.h"
#include "client/client_internal.h"
#include "client/residency/residency_internal.h"
#include "proto/frame.h"
#include "proto/region_shm.h"

static uint64_t raw_id(uint64_t id)
{
    return id & ((1ull << HOC_EPOCH_SHIFT) - 1);
}

int hres_region_register(ho_region *r, const char *name)
{
    ho_region_shm *h = (ho_region_shm *)r->shm;
    atomic_store_explicit(&h->magic, HO_REGION_SHM_MAGIC,
                          memory_order_release);
    hres_shm_publish(r);
    Hyperoffload__RegionRegister req = HYPEROFFLOAD__REGION_REGISTER__INIT;
    req.extent_id = raw_id(r->extent_id);
    req.offset = 0; /* the header has an extent of its own */
    req.name = (char *)(name ? name : "region");
    HOC_ENVELOPE(env, REGION_REGISTER, region_register, &req);
    Hyperoffload__Envelope *reply = NULL;
    int rc = hoc_call_expect(r->c, &env, HYPEROFFLOAD__ENVELOPE__BODY_OK,
                             &reply, NULL);
    ho_frame_envelope_free(reply);
    return rc;
}

static uint64_t host_flash_bytes(const ho_region *r)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < r->n_chunks; k++)
        n += r->chunks[k].flash ? r->chunks[k].bytes : 0;
    return n;
}

void hres_shm_publish(ho_region *r)
{
    if (!r->shm)
        return;
    ho_region_shm *h = (ho_region_shm *)r->shm;
    ho_region_stats st;
    ho_region_get_stats(r, &st);
    uint64_t v[HO_RSHM_N] = {
        [HO_RSHM_BLOCK_BYTES] = r->cfg.block_bytes,
        [HO_RSHM_SLOTS] = st.slots, [HO_RSHM_HIGH] = st.high,
        [HO_RSHM_LOW] = st.low, [HO_RSHM_DEVICE_BLOCKS] = st.device_blocks,
        [HO_RSHM_DEVICE_PEAK] = st.device_peak,
        [HO_RSHM_LIVE_BLOCKS] = st.live_blocks,
        [HO_RSHM_STORE_BLOCKS] = st.store_blocks, [HO_RSHM_STEPS] = st.steps,
        [HO_RSHM_HITS] = st.hits, [HO_RSHM_MISSES] = st.misses,
        [HO_RSHM_EVICTIONS] = st.evictions,
        [HO_RSHM_WRITEBACKS] = st.writebacks,
        [HO_RSHM_BYTES_H2D] = st.bytes_h2d, [HO_RSHM_BYTES_D2H] = st.bytes_d2h,
        [HO_RSHM_STALL_NS] = st.stall_total_ns,
        [HO_RSHM_HOST_BYTES] = st.host_bytes,
        [HO_RSHM_PREFETCHES] = st.prefetches,
        [HO_RSHM_BYTES_FLASH] = st.bytes_flash,
        [HO_RSHM_HOST_FLASH_BYTES] = r->chunks && st.chunks_flash
                                         ? host_flash_bytes(r) : 0,
    };
    for (int i = 0; i < HO_RSHM_N; i++)
        atomic_store_explicit(&h->v[i], v[i], memory_order_relaxed);
}

static int need_client(ho_region *r, const char *what, const char *key)
{
    if (!r)
        return hor_fail(NULL, -EINVAL, "%s needs a region", what);
    if (!r->c)
        return HRES_FAIL(r, HO_E_UNSUPPORTED, "%s needs a region of a "
                         "session (this one is local)", what);
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > HO_RES_KEY_MAX)
        return HRES_FAIL(r, -EINVAL, "a prefix store key has 1..%d bytes",
                         HO_RES_KEY_MAX);
    return 0;
}

int ho_region_publish(ho_region *r, const char *key, const uint32_t *blocks,
                      size_t n, uint32_t ttl_ms)
{
    int rc = need_client(r, "ho_region_publish", key);
    if (rc < 0)
        return rc;
    if (n == 0 || !blocks)
        return HRES_FAIL(r, -EINVAL, "publish needs at least one block");
    if (n > HO_RES_PUBLISH_MAX)
        return HRES_FAIL(r, HO_E_INVALID_SIZE, "publish takes at most %d "
                         "blocks", HO_RES_PUBLISH_MAX);
    for (size_t i = 0; i < n; i++) {
        if (blocks[i] >= r->cfg.max_blocks ||
            !(r->b[blocks[i]].flags & HRES_USED) ||
            (r->b[blocks[i]].flags & HRES_STORE))
            return HRES_FAIL(r, -EINVAL, "block %" PRIu32 " is not a live "
                             "block of the region's own", blocks[i]);
    }
    /* the blocks' chunks in DDR and held there until the daemon copied
     * them */
    uint64_t *offs = malloc(2 * n * sizeof(uint64_t)), *ids = offs + n;
    if (!offs)
        return HRES_FAIL(r, -ENOMEM, "out of memory");
    bool called = false;
    size_t held = 0;
    for (; held < n; held++) {
        rc = hres_host_ready(r, blocks[held]);
        if (rc < 0)
            break;
        r->chunks[blocks[held] / r->chunk_blocks].hold++;
    }
    if (rc == 0)
        rc = hres_sync_host(r, blocks, n);
    if (rc == 0) {
        for (size_t i = 0; i < n; i++) {
            const hres_chunk *ch = &r->chunks[blocks[i] / r->chunk_blocks];
            offs[i] = (uint64_t)(blocks[i] % r->chunk_blocks) *
                      r->cfg.block_bytes;
            ids[i] = raw_id(ch->extent_id);
        }
        Hyperoffload__PublishRequest req = HYPEROFFLOAD__PUBLISH_REQUEST__INIT;
        req.key = (char *)key;
        req.extent_id = ids[0];
        req.n_offsets = n;
        req.offsets = offs;
        req.n_extent_ids = n;
        req.extent_ids = ids;
        req.block_bytes = r->cfg.block_bytes;
        req.ttl_ms = ttl_ms;
        HOC_ENVELOPE(env, PUBLISH_REQUEST, publish_request, &req);
        Hyperoffload__Envelope *reply = NULL;
        rc = hoc_call_expect(r->c, &env, HYPEROFFLOAD__ENVELOPE__BODY_OK,
                             &reply, NULL);
        ho_frame_envelope_free(reply);
        called = true;
    }
    for (size_t i = 0; i < held; i++)
        r->chunks[blocks[i] / r->chunk_blocks].hold--;
    free(offs);
    if (rc < 0 && called) {
        char e[256];
        return hor_fail(r->c, rc, "%s", ho_last_error(r->c, e, sizeof(e)));
    }
    return rc;
}

static int send_unmap(ho_region *r, const char *key)
{
    Hyperoffload__UnmapPrefixRequest req =
        HYPEROFFLOAD__UNMAP_PREFIX_REQUEST__INIT;
    req.key = (char *)key;
    HOC_ENVELOPE(env, UNMAP_PREFIX_REQUEST, unmap_prefix_request, &req);
    Hyperoffload__Envelope *reply = NULL;
    int rc = hoc_call_expect(r->c, &env, HYPEROFFLOAD__ENVELOPE__BODY_OK,
                             &reply, NULL);
    ho_frame_envelope_free(reply);
    return rc;
}

int ho_region_map_prefix(ho_region *r, const char *key, uint32_t *ret_blocks,
                         size_t max, size_t *ret_n)
{
    int rc = need_client(r, "ho_region_map_prefix", key);
    if (rc < 0)
        return rc;
    if (!ret_blocks || !ret_n)
        return HRES_FAIL(r, -EINVAL, "ho_region_map_prefix needs result "
                         "pointers");
    Hyperoffload__MapPrefixRequest req = HYPEROFFLOAD__MAP_PREFIX_REQUEST__INIT;
    req.key = (char *)key;
    HOC_ENVELOPE(env, MAP_PREFIX_REQUEST, map_prefix_request, &req);
    Hyperoffload__Envelope *reply = NULL;
    int fd = -1;
    unsigned nfd = 0;
    rc = hoc_call_expect_fds(r->c, &env,
                             HYPEROFFLOAD__ENVELOPE__BODY_MAP_PREFIX_REPLY,
                             &reply, &fd, 1, &nfd);
    if (rc < 0) {
        char e[256];
        return hor_fail(r->c, rc, "%s", ho_last_error(r->c, e, sizeof(e)));
    }
    const Hyperoffload__MapPrefixReply *m = reply->map_prefix_reply;
    uint64_t off = m ? m->offset : 0, len = m ? m->length : 0;
    uint64_t bb = m ? m->block_bytes : 0;
    ho_frame_envelope_free(reply);
    /* the store's memory comes as a read-only descriptor: the mapping is
     * PROT_READ, and the kernel refuses to make it writable */
    struct stat sb;
    long page = sysconf(_SC_PAGESIZE);
    bool ok = nfd == 1 && fd >= 0 && fstat(fd, &sb) == 0 && m &&
              sb.st_size > 0 && off <= (uint64_t)sb.st_size &&
              len <= (uint64_t)sb.st_size - off && bb && len % bb == 0 &&
              off % (uint64_t)page == 0;
    if (!ok)
        rc = HRES_FAIL(r, HO_E_PROTOCOL, "the map reply for %s names no "
                       "range of a store descriptor (%u descriptors, range "
                       "%" PRIu64 "+%" PRIu64 ", blocks of %" PRIu64 ")",
                       key, nfd, off, len, bb);
    else if (bb != r->cfg.block_bytes || len / bb > max ||
             len / bb > r->n_free_blocks)
        rc = HRES_FAIL(r, HO_E_INVALID_SIZE, "prefix %s holds %" PRIu64
                       " blocks of %" PRIu64 " bytes; the region has blocks "
                       "of %" PRIu64 " and room for %zu", key, bb ? len / bb
                       : 0, bb, r->cfg.block_bytes,
                       max < r->n_free_blocks ? max : r->n_free_blocks);
    uint8_t *base = NULL;
    if (rc == 0) {
        void *p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd,
                       (off_t)off);
        if (p == MAP_FAILED)
            rc = HRES_FAIL(r, -errno, "prefix %s: mapping the store's "
                           "range read-only: %s", key, strerror(errno));
        else
            base = p;
    }
    if (fd >= 0)
        close(fd);
    uint32_t mi = HRES_NONE;
    for (uint32_t i = 0; rc == 0 && i < r->cfg.max_blocks; i++)
        if (!r->maps[i].used) {
            mi = i;
            break;
        }
    if (rc == 0 && mi == HRES_NONE)
        rc = HRES_FAIL(r, HO_E_QUOTA, "the region maps too many prefixes");
    if (rc < 0) {
        if (base)
            munmap(base, (size_t)len);
        (void)send_unmap(r, key);
        return rc;
    }
    hres_map *hm = &r->maps[mi];
    snprintf(hm->key, sizeof(hm->key), "%s", key);
    hm->used = true;
    hm->blocks = (uint32_t)(len / bb);
    hm->base = base;
    hm->len = len;
    if (mi >= r->n_maps)
        r->n_maps = mi + 1;
    for (uint32_t i = 0; i < hm->blocks; i++)
        (void)hres_block_new_store(r, base + (uint64_t)i * bb, mi,
                                   &ret_blocks[i]);
    *ret_n = hm->blocks;
    return 0;
}

void hres_store_unmap(ho_region *r, uint32_t m)
{
    if (!r->maps[m].used)
        return;
    r->maps[m].used = false;
    if (r->maps[m].base)
        munmap(r->maps[m].base, (size_t)r->maps[m].len);
    r->maps[m].base = NULL;
    if (r->c)
        (void)send_unmap(r, r->maps[m].key);
}
