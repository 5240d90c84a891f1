/*
 * daemon/notify.h - systemd notifications: READY=1, STATUS=, STOPPING=1,
 * RELOADING=1 and WATCHDOG=1 pings at half the interval systemd asks
 * for.  All of it is a no-op when NOTIFY_SOCKET is not set.  Only reads
 * the daemon's state.
 */
#ifndef HO_DAEMON_NOTIFY_H
#define HO_DAEMON_NOTIFY_H

#include <stdbool.h>

#include "daemon/state.h"

void srv_notify_ready(srv_daemon *d);
void srv_notify_stopping(void);
void srv_notify_reloading(bool start);
/* Start the status timer (under systemd) and apply the watchdog. */
void srv_notify_start(srv_daemon *d);
/* Start/stop the watchdog pings per cfg.watchdog (startup, reload). */
void srv_notify_apply(srv_daemon *d);
/* Send STATUS= when the status line changed. */
void srv_notify_update_status(srv_daemon *d);

#endif
