/*
 * daemon/links.h - the link region (proto/links.h): built once at startup
 * from the node (topology.h) when [node] pace_links is on, handed to every
 * session with its RegisterReply, cleaned of a session's slots when the
 * session goes.  The clients do the rest: their host-backend copies claim
 * slots and pace themselves to their fair share of the node's links
 * (client/backends/backend_pace.c); the daemon is never asked.
 *
 * Ownership: srv_links (d->links) owns the memfd and its mapping; freed
 * with srv_links_free (accepts NULL).  Loop thread only.
 */
#ifndef HO_DAEMON_LINKS_H
#define HO_DAEMON_LINKS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/state.h"
#include "planner/node/node.h"
#include "proto/links.h"

/* The region of node n: a sealed memfd (size fixed, F_SEAL_SHRINK |
 * F_SEAL_GROW | F_SEAL_SEAL), mapped read-write by the daemon.  0 and
 * *ret; -errno (memfd_create, mmap) or -E2BIG (more devices or capacities
 * than proto/proto_limits.h allows) with err. */
int srv_links_new(const plan_node *n, srv_links **ret, char *err,
                  size_t errlen);
srv_links *srv_links_free(srv_links *l);

/* The descriptor to pass (owned by l) and the bytes to map. */
int srv_links_fd(const srv_links *l);
uint64_t srv_links_size(const srv_links *l);
/* The region itself (the daemon's mapping). */
ho_links_header *srv_links_header(const srv_links *l);

/* Free every slot claimed by session `session_id` (a client that died
 * mid-copy); the number freed.  seq is bumped when any was. */
uint32_t srv_links_release_owner(srv_links *l, uint64_t session_id);

/* Fill `buf` (`size` bytes, zeroed by the caller) with node n's layout:
 * header, routes, free slots.  The bytes the layout needs, or 0 when it
 * does not fit proto/proto_limits.h's bounds.  For tests and for
 * srv_links_new; pure. */
uint64_t srv_links_layout(const plan_node *n, void *buf, uint64_t size);

#endif
