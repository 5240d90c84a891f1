/*
 * daemon/authz.c - the admin check (authz.h).
 */
#include "daemon/authz.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stddef.h>

#include "daemon/srv_limits.h"

int srv_authz_resolve(srv_authz *a, const char *name)
{
    a->group_valid = false;
    a->group_gid = (gid_t)-1;
    if (!name || !*name)
        return 0;
    struct group gr, *res = NULL;
    char buf[SRV_PWBUF_BYTES];
    if (getgrnam_r(name, &gr, buf, sizeof(buf), &res) != 0 || !res)
        return -ENOENT;
    a->group_gid = res->gr_gid;
    a->group_valid = true;
    return 0;
}

bool srv_authz_is_admin(const srv_authz *a, uid_t uid, gid_t gid)
{
    if (uid == 0)
        return true;
    if (!a->group_valid)
        return false;
    if (gid == a->group_gid)
        return true;
    struct passwd pw, *res = NULL;
    char buf[SRV_PWBUF_BYTES];
    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
        return false;
    gid_t groups[SRV_PEER_GROUPS_MAX];
    int n = (int)(sizeof(groups) / sizeof(groups[0]));
    if (getgrouplist(res->pw_name, res->pw_gid, groups, &n) < 0)
        n = (int)(sizeof(groups) / sizeof(groups[0])); /* the first ones */
    for (int i = 0; i < n; i++)
        if (groups[i] == a->group_gid)
            return true;
    return false;
}
