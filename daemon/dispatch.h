/*
 * daemon/dispatch.h - the request table: every request a client may send
 * on a READY connection, as one row (body kind, name, needs a session,
 * needs an admin peer, handler).  The server has checked the envelope's
 * version and that the daemon is not draining.
 *
 * Answers, in this order: a body kind no row names is HO_E_UNSUPPORTED; a
 * row's body kind whose message is missing HO_E_PROTOCOL; a non-admin
 * peer on an admin row HO_E_PERMISSION; no session on a session row
 * HO_E_NOT_REGISTERED; else the handler answers.  Each refusal is an
 * Error reply to the request; the connection stays open.
 */
#ifndef HO_DAEMON_DISPATCH_H
#define HO_DAEMON_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

/* A handler: body is the envelope's message of the row's kind (never
 * NULL). */
typedef void srv_request_fn(srv_daemon *d, srv_conn *c, uint64_t rid,
                            const void *body);

typedef struct srv_request_kind {
    Hyperoffload__Envelope__BodyCase body;
    const char *name;            /* message name, "AllocRequest" */
    const char *what;            /* as refusals name it ("alloc") */
    size_t body_off;             /* the message pointer in the envelope */
    bool needs_session;
    bool needs_admin;
    srv_request_fn *handle;
} srv_request_kind;

/* Decide whether request env of peer c may run (the checks above).  0 with
 * *ret_kind set to its row, or the code of the Error reply with its
 * sentence in err (*ret_kind untouched). */
int srv_request_admit(const srv_daemon *d, const srv_conn *c,
                      const Hyperoffload__Envelope *env,
                      const srv_request_kind **ret_kind, char *err,
                      size_t errlen);
/* Admit and run the request, or send the refusal. */
void srv_dispatch(srv_daemon *d, srv_conn *c,
                  const Hyperoffload__Envelope *env);

#endif
