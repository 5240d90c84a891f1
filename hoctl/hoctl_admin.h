/*
 * client/hoctl_admin.h - hoctl helpers shared by hoctl.c and
 * hoctl_admin.c (beyond the command table of hoctl.h).
 */
#ifndef HO_CLIENT_HOCTL_ADMIN_H
#define HO_CLIENT_HOCTL_ADMIN_H

#include "hoctl/hoctl.h"

/* `hoctl version`: hoctl's and the library's version, then the daemon's
 * (server version, protocol) when it is reachable.  Exit code as hoctl.h;
 * unreachable is 69 after the local versions are printed. */
int hoctl_cmd_version(const hoctl_globals *g, int argc, char **argv);

/* Per-noun help text for the daemon nouns (status, clients, quota,
 * version) on stdout; returns 1 when `noun` is one of them, else 0. */
int hoctl_admin_help(const char *noun);

/* The exit code for a library / daemon error code (hoctl.h table):
 * permission 77, unknown subject 4, draining 3, disconnected 69, other 1. */
int hoctl_exit_for(int code);

#endif
