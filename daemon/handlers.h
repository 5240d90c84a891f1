/*
 * daemon/handlers.h - the session and extent requests of a READY
 * connection: Register, Alloc, Free, Move, Stats.  Validation and state
 * changes live in sessions.c; these turn protobuf requests into calls and
 * results into replies.  The dispatcher (dispatch.c) has checked the
 * session and admin requirements of each request.
 */
#ifndef HO_DAEMON_HANDLERS_H
#define HO_DAEMON_HANDLERS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/state.h"
#include "proto/hyperoffload.pb-c.h"

void srv_handle_register(srv_daemon *d, srv_conn *c, uint64_t rid,
                         const Hyperoffload__RegisterRequest *req);
void srv_handle_alloc(srv_daemon *d, srv_conn *c, uint64_t rid,
                      const Hyperoffload__AllocRequest *req);
/* The Ok reply may follow later (srv_extent_free_by_id returned 1). */
void srv_handle_free_request(srv_daemon *d, srv_conn *c, uint64_t rid,
                             const Hyperoffload__FreeRequest *req);
/* The MoveReply follows when the I/O completes. */
void srv_handle_move(srv_daemon *d, srv_conn *c, uint64_t rid,
                     const Hyperoffload__MoveRequest *req);
void srv_handle_stats(srv_daemon *d, srv_conn *c, uint64_t rid);

/* The usage figures of session s, as sent in Stats and Clients replies. */
void srv_session_usage_fill(const srv_session *s,
                            Hyperoffload__SessionUsage *ret_u);
/* TierStats of every tier, for Stats and Status replies.  Allocates
 * *ret_tiers (array of pointers into one block): free with free(). */
int srv_tier_stats(srv_daemon *d, Hyperoffload__TierStats ***ret_tiers,
                   size_t *ret_n);

#endif
