/*
 * client/admin_call.h - the one private entry point of libhyperoffload that
 * hoctl uses: send a request envelope and wait for its reply, for the admin
 * requests that have no public wrapper (Status, Clients, Quota).  Hidden in
 * the shared library; hoctl links the library's objects statically.
 */
#ifndef HO_CLIENT_ADMIN_CALL_H
#define HO_CLIENT_ADMIN_CALL_H

#include "hyperoffload/client.h"
#include "proto/hyperoffload.pb-c.h"

/* Send `req` (request_id assigned here) and wait for the reply with the
 * same id (hoc_call_fds in client_internal.h).  The reply must have body
 * `want`: an Error reply returns its code (its sentence in ho_last_error),
 * another body HO_E_PROTOCOL (the connection stays usable).  On 0
 * *ret_reply is the reply, owned by the caller (ho_frame_envelope_free in
 * proto/frame.h), and *ret_fd (may be NULL) a descriptor that came with
 * it or -1. */
int hoc_call_expect(ho_client *c, Hyperoffload__Envelope *req,
                    Hyperoffload__Envelope__BodyCase want,
                    Hyperoffload__Envelope **ret_reply, int *ret_fd);

/* Declare the stack envelope `env` around the request message at `req`,
 * as body BODY (HYPEROFFLOAD__ENVELOPE__BODY_##BODY) in the Envelope's
 * oneof field `field` -- the three lines every request starts with:
 *   HOC_ENVELOPE(env, FREE_REQUEST, free_request, &req);  */
#define HOC_ENVELOPE(env, BODY, field, req)                                \
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;             \
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_##BODY;                   \
    env.field = (req)

#endif
