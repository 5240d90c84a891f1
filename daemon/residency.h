/*
 * daemon/residency.h - residency regions seen from the daemon
 * (docs/residency.md): a session registers a region's statistics header,
 * which lives in its own host-copy extent (proto/region_shm.h), and
 * RegionsRequest (`hoctl regions`) reads the headers.  The host copies
 * themselves are ordinary extents of the session: charged to its DDR,
 * under its quotas, freed with the session (the lease).
 *
 * Ownership: d->regions owns the records; a record names its extent by id
 * and is dropped with its session (srv_residency_session_gone) or when its
 * extent is gone (checked at every read).  Loop thread only.
 */
#ifndef HO_DAEMON_RESIDENCY_H
#define HO_DAEMON_RESIDENCY_H

#include "daemon/sessions.h"
#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

void srv_handle_region_register(srv_daemon *d, srv_conn *c, uint64_t rid,
                                const Hyperoffload__RegionRegister *req);
/* RegionsRequest: an admin sees every region, another peer its uid's. */
void srv_handle_regions(srv_daemon *d, srv_conn *c, uint64_t rid);
void srv_residency_session_gone(srv_daemon *d, srv_session *s);
void srv_residency_free(srv_daemon *d);

#endif
