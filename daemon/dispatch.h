/*
 * daemon/dispatch.h - requests of a READY connection (version checked,
 * not draining) to their handlers.
 */
#ifndef HO_DAEMON_DISPATCH_H
#define HO_DAEMON_DISPATCH_H

#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

void srv_dispatch(srv_daemon *d, srv_conn *c,
                  const Hyperoffload__Envelope *env);

#endif
