/*
 * proto/frame.h - framing of protocol messages.
 *
 * A frame is a 4-byte big-endian payload length followed by one serialised
 * hyperoffload.Envelope.  Lengths are checked against a limit before any
 * payload memory is allocated.  Used by the daemon (non-blocking, fed by
 * libuv reads) and by the client library (blocking socket reads).
 */
#ifndef HO_PROTO_FRAME_H
#define HO_PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto/hyperoffload.pb-c.h"
#include "proto/proto_limits.h"
#include "hyperoffload/errors.h"

#define HO_PROTO_VERSION 1u          /* the version this build speaks */
#define HO_PROTO_MIN_VERSION 1u      /* oldest version this build accepts */
#define HO_FRAME_HEADER 4u           /* big-endian payload length */
/* Frame size limits: HO_FRAME_LIMIT_HANDSHAKE, _DEFAULT, _MAX in
 * proto/proto_limits.h. */

/* Serialise `env` into a new malloc'ed buffer holding header + payload.
 * On success *ret_buf (owned by the caller, free()) and *ret_len are set.
 * Returns 0, -ENOMEM, or HO_E_FRAME_TOO_LARGE if the payload is above
 * HO_FRAME_LIMIT_MAX. */
int ho_frame_encode(const Hyperoffload__Envelope *env, uint8_t **ret_buf,
                    size_t *ret_len);

/* Decode one payload (without header).  On success *ret_env is owned by the
 * caller and released with ho_frame_envelope_free().  Returns 0, or
 * HO_E_PROTOCOL when the bytes are not a valid Envelope or no body is set. */
int ho_frame_decode(const uint8_t *payload, size_t len,
                    Hyperoffload__Envelope **ret_env);

/* Free a decoded envelope (ho_frame_decode, hoc_call).  NULL ok; returns
 * NULL, so that `env = ho_frame_envelope_free(env);` leaves no dangling
 * pointer. */
Hyperoffload__Envelope *ho_frame_envelope_free(Hyperoffload__Envelope *env);

/* Read the big-endian length from a 4-byte header. */
static inline uint32_t ho_frame_header_len(const uint8_t hdr[4])
{
    return ((uint32_t)hdr[0] << 24) | ((uint32_t)hdr[1] << 16) |
           ((uint32_t)hdr[2] << 8) | (uint32_t)hdr[3];
}

static inline void ho_frame_header_put(uint8_t hdr[4], uint32_t len)
{
    hdr[0] = (uint8_t)(len >> 24);
    hdr[1] = (uint8_t)(len >> 16);
    hdr[2] = (uint8_t)(len >> 8);
    hdr[3] = (uint8_t)len;
}

/*
 * Incremental reader for a byte stream.  Feed it whatever arrived; it
 * returns complete payloads one at a time.  The limit may be raised after
 * the handshake with ho_frame_reader_set_limit().
 */
typedef struct ho_frame_reader {
    uint8_t hdr[HO_FRAME_HEADER];
    uint32_t hdr_have;
    uint32_t limit;
    uint8_t *buf;     /* payload being assembled, owned by the reader */
    uint32_t cap;     /* bytes allocated for buf: grows with `have` (from
                         HO_FRAME_READ_FIRST, doubling) up to `need` */
    uint32_t need;    /* payload length announced by the header */
    uint32_t have;
} ho_frame_reader;

/* An embedded reader: init sets it up empty with `limit`, done frees a
 * partial payload (the reader may be init'ed again). */
void ho_frame_reader_init(ho_frame_reader *r, uint32_t limit);
void ho_frame_reader_done(ho_frame_reader *r);
void ho_frame_reader_set_limit(ho_frame_reader *r, uint32_t limit);

/* Consume bytes from data[0..len).  *ret_consumed is set to how many were
 * used (on every return, errors included).
 * Returns 1 and hands over a complete payload in *ret_payload and *ret_len
 * (caller frees it), 0 when more bytes are needed (all of `len` consumed),
 * HO_E_FRAME_TOO_LARGE when a header announces more than the limit, or
 * HO_E_PROTOCOL for a zero-length frame.  After an error the reader must
 * not be fed again.  Call repeatedly while it returns 1 and bytes remain. */
int ho_frame_reader_feed(ho_frame_reader *r, const uint8_t *data, size_t len,
                         size_t *ret_consumed, uint8_t **ret_payload,
                         size_t *ret_len);

/* True when the reader holds a partial frame (used to report a truncated
 * frame when the peer closes). */
int ho_frame_reader_partial(const ho_frame_reader *r);

/* Fill `env` as an Error reply. `code` is a negative HO_E_xxx or -errno value;
 * `msg` must outlive the envelope's use.  `err` is caller storage. */
void ho_frame_set_error(Hyperoffload__Envelope *env, Hyperoffload__Error *err,
                        uint64_t request_id, int code, const char *msg);

/* Convert the wire code of an Error message back to the negative code. */
static inline int ho_frame_error_code(const Hyperoffload__Error *e)
{
    return e->code ? -(int)e->code : HO_E_INTERNAL;
}

#endif
