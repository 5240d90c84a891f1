/*
 * daemon/daemon.h - the daemon as a whole: startup (state directory,
 * quotas, tiers, planning, signals, socket), signals (SIGTERM/SIGINT
 * drain, SIGHUP reload) and teardown.  main.c is its only user.
 */
#ifndef HO_DAEMON_DAEMON_H
#define HO_DAEMON_DAEMON_H

#include <stddef.h>

#include "daemon/config.h"
#include "daemon/state.h"

/* Build the daemon from a command line already turned into a config
 * (cfg is moved into the daemon, also on failure).  On failure err says
 * why and the daemon is not created.  The daemon is owned by the caller:
 * srv_daemon_free. */
int srv_daemon_new(srv_config *cfg, const srv_cmdline *cl,
                   srv_daemon **ret_d, char *err, size_t errlen);
/* Run until drained; returns the process exit code. */
int srv_daemon_run(srv_daemon *d);
/* Close everything and free d.  Accepts NULL; returns NULL. */
srv_daemon *srv_daemon_free(srv_daemon *d);

#endif
