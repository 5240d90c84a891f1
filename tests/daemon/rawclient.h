/*
 * tests/daemon/rawclient.h - a tiny blocking client that speaks raw frames
 * (proto/frame.h) to the daemon, for protocol-level tests.  Every receive
 * has a timeout so a test never hangs on a daemon that does not answer.
 */
#ifndef HO_TESTS_RAWCLIENT_H
#define HO_TESTS_RAWCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/frame.h"

#define RC_TIMEOUT_MS 10000

/* Connect to a Unix socket path.  fd or -errno. */
int rc_connect(const char *path);
/* Write all bytes (MSG_NOSIGNAL).  0 or -errno. */
int rc_send_raw(int fd, const void *buf, size_t len);
/* Encode and send one envelope.  0 or negative. */
int rc_send(int fd, Hyperoffload__Envelope *env);
/* Receive one frame (timeout in ms, scaled under valgrind).  On success
 * *ret is the decoded envelope (free with ho_frame_envelope_free) and, when
 * ret_fd is not NULL, *ret_fd the descriptor that came with it or -1.
 * Returns 0, HO_E_DISCONNECTED at end of stream / reset, -ETIMEDOUT,
 * HO_E_PROTOCOL for an undecodable frame. */
int rc_recv(int fd, Hyperoffload__Envelope **ret, int *ret_fd,
            int timeout_ms);
/* Like rc_recv, keeping up to `max` descriptors of the frame in fds[]
 * (arrival order; *ret_n how many; the others are closed).  On failure
 * no descriptor is kept. */
int rc_recv_fds(int fd, Hyperoffload__Envelope **ret, int *fds, int max,
                int *ret_n, int timeout_ms);
/* Like rc_recv but skips pushed events (request_id 0, body event). */
int rc_recv_reply(int fd, Hyperoffload__Envelope **ret, int *ret_fd);
/* 1 when the peer closed (EOF or reset) within the timeout, 0 when data
 * arrived instead, -ETIMEDOUT. Reads and discards nothing else. */
int rc_wait_closed(int fd, int timeout_ms);

/* Hello{min,max} and wait for the reply (Welcome or Error). */
int rc_hello(int fd, uint32_t min_version, uint32_t max_version,
             Hyperoffload__Envelope **ret);
/* Connect + Hello{1,1} + Welcome; fd or negative (test helper). */
int rc_open(const char *path);

/* Send a request body (env->body_case and the body pointer set by the
 * caller; version and request_id are filled) and receive its reply. */
int rc_call(int fd, Hyperoffload__Envelope *env,
            Hyperoffload__Envelope **ret, int *ret_fd);

/* rc_call keeping up to `max` descriptors of the reply (rc_recv_fds). */
int rc_call_fds(int fd, Hyperoffload__Envelope *env,
                Hyperoffload__Envelope **ret, int *fds, int max, int *ret_n);

/* Error code of a reply as a negative value (0 when not an Error). */
int rc_error_code(const Hyperoffload__Envelope *env);
const char *rc_error_message(const Hyperoffload__Envelope *env);

/* Shortcuts returning the reply (caller frees). */
int rc_register(int fd, const char *job, int32_t device, uint64_t budget,
                Hyperoffload__Envelope **ret, int *ret_memfd);
int rc_alloc(int fd, uint64_t bytes, Hyperoffload__Envelope **ret);
int rc_free(int fd, uint64_t extent, Hyperoffload__Envelope **ret);
int rc_move(int fd, uint64_t extent, int dir, Hyperoffload__Envelope **ret);
int rc_stats(int fd, Hyperoffload__Envelope **ret);
int rc_status(int fd, Hyperoffload__Envelope **ret);
/* The value of the sample line that starts with `series` ("name" or
 * "name{labels}") and a space in the daemon's metrics (MetricsRequest),
 * or -1 (no reply, no such sample). */
long long rc_metric(int fd, const char *series);
int rc_quota(int fd, int op, int kind, uint32_t uid, const char *job,
             int tier, uint64_t limit, Hyperoffload__Envelope **ret);

/* Used bytes of the first tier of the given kind in a Stats/Status reply
 * (UINT64_MAX when absent). */
uint64_t rc_tier_used(Hyperoffload__TierStats **tiers, size_t n, int tier);

#endif
