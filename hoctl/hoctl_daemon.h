/*
 * hoctl/hoctl_daemon.h - talking to hyperoffloadd from a hoctl noun, the
 * same way for every noun (hoctl_admin.c implements these): connect and
 * request, printing why on failure (the daemon's own sentence when it
 * gave one, e.g. at its connection limit), noting the library's code for
 * the --json error document, and mapping it to hoctl's exit codes.
 */
#ifndef HO_HOCTL_HOCTL_DAEMON_H
#define HO_HOCTL_HOCTL_DAEMON_H

#include "client/admin_call.h"
#include "hoctl/hoctl.h"

/* Connect to the socket of `g` as "hoctl".  0, or the exit code (> 0:
 * 69 unreachable, 77 permission, 3 shutting down) with the reason
 * printed. */
int hoctl_open_client(const hoctl_globals *g, ho_client **ret);

/* Send `env` and expect a `want` reply in *ret (the caller frees it with
 * ho_frame_envelope_free).  0, or the exit code (> 0) with the daemon's
 * sentence printed. */
int hoctl_request(ho_client *c, Hyperoffload__Envelope *env,
                  Hyperoffload__Envelope__BodyCase want,
                  Hyperoffload__Envelope **ret);

#endif
