/*
 * daemon/authz.h - who may make admin requests.
 *
 * A peer is an admin when its uid is 0, or when the configured admin group
 * (config row server.admin_group, "hyperoffload-admin" in the shipped
 * units) is its primary gid or one of its supplementary groups.  The group
 * is resolved by name at start and on every reload (srv_authz_resolve);
 * membership is looked up again on every admin request
 * (srv_authz_is_admin), so a peer removed from the group fails from its
 * next request on, on a connection it already holds.  Base module: no
 * libuv, no daemon state; unit tests link it alone.
 */
#ifndef HO_DAEMON_AUTHZ_H
#define HO_DAEMON_AUTHZ_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct srv_authz {
    bool group_valid; /* the admin group exists */
    gid_t group_gid;
} srv_authz;

/* Resolve the admin group `name` (NULL or "": only root is admin).
 * 0, or -ENOENT when the group does not exist (a is then root-only; the
 * caller logs).  a is always left in a defined state. */
int srv_authz_resolve(srv_authz *a, const char *name);

/* True when (uid, gid) may make admin requests now: uid 0, primary gid
 * the admin group, or the user's group list (getgrouplist, read afresh)
 * holding it. */
bool srv_authz_is_admin(const srv_authz *a, uid_t uid, gid_t gid);

#endif
