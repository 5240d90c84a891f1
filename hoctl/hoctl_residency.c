/*
 * hoctl/hoctl_residency.c - `hoctl regions` (residency regions: blocks per
 * tier, hit rates, evictions, bytes moved) and `hoctl store` (the prefix
 * store: entries, references, hit rate), docs/residency.md.  An admin sees
 * every uid's; another peer its own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "client/admin_call.h"
#include "hoctl/hoctl.h"
#include "hoctl/hoctl_daemon.h"
#include "hoctl/output.h"
#include "proto/frame.h"

static int query(const hoctl_globals *g, Hyperoffload__Envelope *env,
                 Hyperoffload__Envelope__BodyCase want,
                 Hyperoffload__Envelope **ret, ho_client **ret_c)
{
    int rc = hoctl_open_client(g, ret_c);
    if (rc)
        return rc;
    rc = hoctl_request(*ret_c, env, want, ret);
    if (rc) {
        ho_close(*ret_c);
        *ret_c = NULL;
    }
    return rc;
}

static double pct(uint64_t a, uint64_t b)
{
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

int hoctl_cmd_regions(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0)
        return hoctl_usage_error_help("regions takes no arguments ('%s')",
                                      argv[0]);
    Hyperoffload__RegionsRequest req = HYPEROFFLOAD__REGIONS_REQUEST__INIT;
    HOC_ENVELOPE(env, REGIONS_REQUEST, regions_request, &req);
    Hyperoffload__Envelope *reply = NULL;
    ho_client *c = NULL;
    int rc = query(g, &env, HYPEROFFLOAD__ENVELOPE__BODY_REGIONS_REPLY,
                   &reply, &c);
    if (rc)
        return rc;
    const Hyperoffload__RegionsReply *r = reply->regions_reply;
    size_t n = r ? r->n_regions : 0;
    if (g->format == HOCTL_FMT_JSON) {
        json_t *o = hoctl_json_root(), *arr = json_array();
        for (size_t i = 0; i < n; i++) {
            const Hyperoffload__RegionInfo *x = r->regions[i];
            json_t *e = json_object();
            json_object_set_new(e, "session", hoctl_json_u64(x->session_id));
            json_object_set_new(e, "uid", hoctl_json_u64(x->uid));
            json_object_set_new(e, "job", hoctl_json_str(x->job));
            json_object_set_new(e, "name", hoctl_json_str(x->name));
            json_object_set_new(e, "block_bytes",
                                hoctl_json_u64(x->block_bytes));
            json_object_set_new(e, "slots", hoctl_json_u64(x->slots));
            json_object_set_new(e, "high", hoctl_json_u64(x->high));
            json_object_set_new(e, "low", hoctl_json_u64(x->low));
            json_object_set_new(e, "device_blocks",
                                hoctl_json_u64(x->device_blocks));
            json_object_set_new(e, "device_peak",
                                hoctl_json_u64(x->device_peak));
            json_object_set_new(e, "live_blocks",
                                hoctl_json_u64(x->live_blocks));
            json_object_set_new(e, "store_blocks",
                                hoctl_json_u64(x->store_blocks));
            json_object_set_new(e, "steps", hoctl_json_u64(x->steps));
            json_object_set_new(e, "hits", hoctl_json_u64(x->hits));
            json_object_set_new(e, "misses", hoctl_json_u64(x->misses));
            json_object_set_new(e, "prefetches",
                                hoctl_json_u64(x->prefetches));
            json_object_set_new(e, "evictions", hoctl_json_u64(x->evictions));
            json_object_set_new(e, "writebacks",
                                hoctl_json_u64(x->writebacks));
            json_object_set_new(e, "h2d_bytes", hoctl_json_u64(x->bytes_h2d));
            json_object_set_new(e, "d2h_bytes", hoctl_json_u64(x->bytes_d2h));
            json_object_set_new(e, "host_bytes",
                                hoctl_json_u64(x->host_bytes));
            json_object_set_new(e, "stall_us", json_real(x->stall_us));
            json_object_set_new(e, "flash_bytes",
                                hoctl_json_u64(x->bytes_flash));
            json_object_set_new(e, "host_flash_bytes",
                                hoctl_json_u64(x->host_flash_bytes));
            json_array_append_new(arr, e);
        }
        json_object_set_new(o, "regions", arr);
        rc = hoctl_json_emit(o);
    } else if (n == 0) {
        puts("no residency regions");
    } else {
        printf("%-8s %-5s %-10s %-10s %6s %11s %7s %7s %7s %6s %9s %9s "
               "%9s %9s %9s %10s\n", "SESSION", "UID", "JOB", "NAME",
               "BLOCK", "DEV/HI/LO", "PEAK", "LIVE", "STORE", "HIT%",
               "EVICT", "H2D_MB", "D2H_MB", "FLASH_MB", "ON_FL_MB",
               "STALL_MS");
        for (size_t i = 0; i < n; i++) {
            const Hyperoffload__RegionInfo *x = r->regions[i];
            char wm[40];
            snprintf(wm, sizeof wm, "%u/%u/%u", x->device_blocks, x->high,
                     x->low);
            printf("%-8" PRIu64 " %-5u %-10.10s %-10.10s %5" PRIu64 "K %11s "
                   "%7u %7u %7u %6.1f %9" PRIu64 " %9.1f %9.1f %9.1f %9.1f "
                   "%10.1f\n",
                   x->session_id, x->uid, x->job, x->name,
                   x->block_bytes >> 10, wm, x->device_peak, x->live_blocks,
                   x->store_blocks, pct(x->hits, x->hits + x->misses),
                   x->evictions, (double)x->bytes_h2d / 1e6,
                   (double)x->bytes_d2h / 1e6, (double)x->bytes_flash / 1e6,
                   (double)x->host_flash_bytes / 1e6, x->stall_us / 1e3);
        }
    }
    ho_frame_envelope_free(reply);
    ho_close(c);
    return rc;
}

int hoctl_cmd_store(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0)
        return hoctl_usage_error_help("store takes no arguments ('%s')",
                                      argv[0]);
    Hyperoffload__StoreRequest req = HYPEROFFLOAD__STORE_REQUEST__INIT;
    HOC_ENVELOPE(env, STORE_REQUEST, store_request, &req);
    Hyperoffload__Envelope *reply = NULL;
    ho_client *c = NULL;
    int rc = query(g, &env, HYPEROFFLOAD__ENVELOPE__BODY_STORE_REPLY, &reply,
                   &c);
    if (rc)
        return rc;
    const Hyperoffload__StoreReply *r = reply->store_reply;
    size_t n = r ? r->n_entries : 0;
    if (!r) {
        rc = HOCTL_EXIT_FAILED;
    } else if (g->format == HOCTL_FMT_JSON) {
        json_t *o = hoctl_json_root(), *arr = json_array();
        for (size_t i = 0; i < n; i++) {
            const Hyperoffload__StoreEntry *x = r->entries[i];
            json_t *e = json_object();
            json_object_set_new(e, "key", hoctl_json_str(x->key));
            json_object_set_new(e, "uid", hoctl_json_u64(x->uid));
            json_object_set_new(e, "job", hoctl_json_str(x->job));
            json_object_set_new(e, "bytes", hoctl_json_u64(x->bytes));
            json_object_set_new(e, "block_bytes",
                                hoctl_json_u64(x->block_bytes));
            json_object_set_new(e, "refs", hoctl_json_u64(x->refs));
            json_object_set_new(e, "maps", hoctl_json_u64(x->maps));
            json_object_set_new(e, "idle_s", json_real(x->idle_s));
            json_object_set_new(e, "ttl_ms", hoctl_json_u64(x->ttl_ms));
            json_array_append_new(arr, e);
        }
        json_object_set_new(o, "entries", arr);
        json_object_set_new(o, "lookups", hoctl_json_u64(r->lookups));
        json_object_set_new(o, "hits", hoctl_json_u64(r->hits));
        json_object_set_new(o, "evictions", hoctl_json_u64(r->evictions));
        json_object_set_new(o, "expired", hoctl_json_u64(r->expired));
        json_object_set_new(o, "bytes", hoctl_json_u64(r->bytes));
        rc = hoctl_json_emit(o);
    } else {
        printf("prefix store: %zu entries, %.1f MB, %" PRIu64 " lookups, %"
               PRIu64 " hits (%.1f%%), %" PRIu64 " evicted (LRU), %" PRIu64
               " expired (TTL)\n", n, (double)r->bytes / 1e6, r->lookups,
               r->hits, pct(r->hits, r->lookups), r->evictions, r->expired);
        if (n)
            printf("%-40s %-5s %-10s %9s %5s %6s %8s %8s\n", "KEY", "UID",
                   "JOB", "KB", "REFS", "MAPS", "IDLE_S", "TTL_S");
        for (size_t i = 0; i < n; i++) {
            const Hyperoffload__StoreEntry *x = r->entries[i];
            printf("%-40.40s %-5u %-10.10s %9" PRIu64 " %5u %6" PRIu64
                   " %8.1f %8.1f\n", x->key, x->uid, x->job, x->bytes >> 10,
                   x->refs, x->maps, x->idle_s, x->ttl_ms / 1e3);
        }
    }
    ho_frame_envelope_free(reply);
    ho_close(c);
    return rc;
}
