/* proto/frame.c - see frame.h. */
#include "proto/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"

int ho_frame_encode(const Hyperoffload__Envelope *env, uint8_t **ret_buf,
                    size_t *ret_len)
{
    size_t n = hyperoffload__envelope__get_packed_size(env);
    if (n > HO_FRAME_LIMIT_MAX)
        return HO_E_FRAME_TOO_LARGE;
    uint8_t *buf = malloc(HO_FRAME_HEADER + n);
    if (!buf)
        return -ENOMEM;
    size_t packed = hyperoffload__envelope__pack(env, buf + HO_FRAME_HEADER);
    if (packed != n) {
        free(buf);
        return HO_E_INTERNAL;
    }
    ho_frame_header_put(buf, (uint32_t)n);
    *ret_buf = buf;
    *ret_len = HO_FRAME_HEADER + n;
    return 0;
}

int ho_frame_decode(const uint8_t *payload, size_t len,
                    Hyperoffload__Envelope **ret_env)
{
    Hyperoffload__Envelope *env =
        hyperoffload__envelope__unpack(NULL, len, payload);
    if (!env)
        return HO_E_PROTOCOL;
    if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY__NOT_SET) {
        hyperoffload__envelope__free_unpacked(env, NULL);
        return HO_E_PROTOCOL;
    }
    *ret_env = env;
    return 0;
}

Hyperoffload__Envelope *ho_frame_envelope_free(Hyperoffload__Envelope *env)
{
    if (env)
        hyperoffload__envelope__free_unpacked(env, NULL);
    return NULL;
}

void ho_frame_reader_init(ho_frame_reader *r, uint32_t limit)
{
    memset(r, 0, sizeof(*r));
    r->limit = limit;
}

void ho_frame_reader_done(ho_frame_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->hdr_have = r->need = r->have = r->cap = 0;
}

void ho_frame_reader_set_limit(ho_frame_reader *r, uint32_t limit)
{
    r->limit = limit;
}

int ho_frame_reader_partial(const ho_frame_reader *r)
{
    return r->hdr_have > 0;
}

int ho_frame_reader_feed(ho_frame_reader *r, const uint8_t *data, size_t len,
                         size_t *ret_consumed, uint8_t **ret_payload,
                         size_t *ret_len)
{
    size_t used = 0;

    while (used < len) {
        if (r->hdr_have < HO_FRAME_HEADER) {
            size_t take = HO_FRAME_HEADER - r->hdr_have;
            if (take > len - used)
                take = len - used;
            memcpy(r->hdr + r->hdr_have, data + used, take);
            r->hdr_have += (uint32_t)take;
            used += take;
            if (r->hdr_have < HO_FRAME_HEADER)
                break;
            uint32_t n = ho_frame_header_len(r->hdr);
            if (n == 0) {
                *ret_consumed = used;
                return HO_E_PROTOCOL;
            }
            if (n > r->limit) {
                *ret_consumed = used;
                return HO_E_FRAME_TOO_LARGE;
            }
            r->need = n;
            r->have = 0;
            r->cap = 0;
        }
        size_t take = r->need - r->have;
        if (take > len - used)
            take = len - used;
        if (take == 0)
            break; /* the header ended the data: no buffer yet */
        if (r->have + take > r->cap) {
            /* Grow with what arrived: doubling, at least what is needed
             * now, at most the announced length. */
            uint64_t cap = r->cap ? 2ull * r->cap : HO_FRAME_READ_FIRST;
            if (cap < r->have + take)
                cap = r->have + take;
            if (cap > r->need)
                cap = r->need;
            uint8_t *nb = realloc(r->buf, (size_t)cap);
            if (!nb) {
                *ret_consumed = used;
                return -ENOMEM;
            }
            r->buf = nb;
            r->cap = (uint32_t)cap;
        }
        memcpy(r->buf + r->have, data + used, take);
        r->have += (uint32_t)take;
        used += take;
        if (r->have == r->need) {
            *ret_payload = r->buf;
            *ret_len = r->need;
            r->buf = NULL;
            r->hdr_have = r->need = r->have = r->cap = 0;
            *ret_consumed = used;
            return 1;
        }
    }
    *ret_consumed = used;
    return 0;
}

void ho_frame_set_error(Hyperoffload__Envelope *env, Hyperoffload__Error *err,
                        uint64_t request_id, int code, const char *msg)
{
    hyperoffload__envelope__init(env);
    hyperoffload__error__init(err);
    err->code = code < 0 ? (uint32_t)(-code) : (uint32_t)(-HO_E_INTERNAL);
    err->message = (char *)msg;
    env->version = HO_PROTO_VERSION;
    env->request_id = request_id;
    env->body_case = HYPEROFFLOAD__ENVELOPE__BODY_ERROR;
    env->error = err;
}
