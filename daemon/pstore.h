/*
 * daemon/pstore.h - the shared prefix store (docs/residency.md): blocks
 * published under a content key, mapped read-only by other sessions of the
 * same uid and job, reference-counted, kept for a TTL once unreferenced,
 * evicted LRU within the job's limit, never visible from another arena.
 *
 * Ownership: d->pstore owns the entries; each entry holds one reference on
 * its arena (the arena outlives its sessions while the entry lives) and a
 * range of it (tier_arena_alloc: charged to the pool like any extent, so
 * `hoctl status` shows it).  Sessions hold map references (srv_pmap),
 * dropped at UnmapPrefixRequest or when the session goes
 * (srv_pstore_session_gone, called from d->on_session_drop).
 *
 * Entry life:
 *   (new)       -> referenced 0, idle   [PublishRequest: bytes copied]
 *   idle        -> mapped               [MapPrefixRequest]
 *   mapped      -> idle                 [last unmap / session end]
 *   idle        -> (freed)              [TTL passed (swept at every store
 *                                        request and session end), LRU
 *                                        eviction for a publish over the
 *                                        job's limit, daemon exit]
 * Loop thread only.
 */
#ifndef HO_DAEMON_PSTORE_H
#define HO_DAEMON_PSTORE_H

#include "daemon/sessions.h"
#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

void srv_handle_publish(srv_daemon *d, srv_conn *c, uint64_t rid,
                        const Hyperoffload__PublishRequest *req);
void srv_handle_map_prefix(srv_daemon *d, srv_conn *c, uint64_t rid,
                           const Hyperoffload__MapPrefixRequest *req);
void srv_handle_unmap_prefix(srv_daemon *d, srv_conn *c, uint64_t rid,
                             const Hyperoffload__UnmapPrefixRequest *req);
/* StoreRequest: an admin sees every entry, another peer those of its uid. */
void srv_handle_store(srv_daemon *d, srv_conn *c, uint64_t rid);
/* The session is going: drop its map references, sweep expired entries. */
void srv_pstore_session_gone(srv_daemon *d, srv_session *s);
/* Daemon exit: free every entry (and its arena reference). */
void srv_pstore_free(srv_daemon *d);

#endif
