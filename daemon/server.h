/*
 * daemon/server.h - the listening socket, accepting connections (peer
 * credentials, admin, connection limit), the handshake, and the checks a
 * payload passes before it is dispatched (dispatch.h).
 */
#ifndef HO_DAEMON_SERVER_H
#define HO_DAEMON_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "daemon/state.h"

/* Listen on the socket systemd passed (sd_listen_fds_with_names; the one
 * named "hyperoffloadd" or the first Unix stream socket), else on
 * cfg.socket: parent directories created, a stale socket (connect
 * refused) replaced, a live one (-EADDRINUSE) or a non-socket (-EEXIST)
 * refused, mode cfg.socket_mode.  0 or negative with err. */
int srv_server_listen(srv_daemon *d, char *err, size_t errlen);
/* Close the listener and remove the socket file if we created it and it
 * is still ours (same device and inode). */
void srv_server_stop_listening(srv_daemon *d);
/* Close the listener and finish every connection (drain end). */
void srv_server_close_all(srv_daemon *d);
/* Re-resolve cfg.admin_group (startup and reload); a missing group is
 * logged and leaves only root admin. */
void srv_server_resolve_admin_group(srv_daemon *d);

#endif
