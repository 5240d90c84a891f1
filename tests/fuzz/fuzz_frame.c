/*
 * tests/fuzz/fuzz_frame.c - libFuzzer target: bytes from a peer as the
 * daemon reads them.  The input's first byte gives the size of the
 * pieces (1..256 bytes, as reads split a stream) in which the rest is fed
 * to a frame reader (proto/frame.h), first under the handshake limit,
 * then under the default one; every complete payload is
 * decoded as an Envelope and encoded again, and a PlanRequest's trace
 * goes through the planner's protobuf reader and plan_trace_finish as the
 * daemon's does (daemon/planning.c).  Crashes, leaks and undefined
 * behaviour are the findings.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "planner/io/plan_io.h"
#include "planner/plan.h"
#include "proto/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A PlanRequest's trace as the daemon reads it: packed again, read,
 * finished. */
static void plan_request_trace(const Hyperoffload__Trace *pb)
{
    size_t n = hyperoffload__trace__get_packed_size(pb);
    uint8_t *packed = malloc(n + 1);
    if (!packed)
        return;
    hyperoffload__trace__pack(pb, packed);
    plan_trace *t = NULL;
    char why[256];
    if (plan_trace_from_pb(packed, n, &t, why, sizeof(why)) == 0)
        (void)plan_trace_finish(t, why, sizeof(why));
    plan_trace_free(t);
    free(packed);
}

static void payload(const uint8_t *p, size_t len)
{
    Hyperoffload__Envelope *env = NULL;
    if (ho_frame_decode(p, len, &env) < 0)
        return;
    uint8_t *again = NULL;
    size_t again_len = 0;
    if (ho_frame_encode(env, &again, &again_len) == 0)
        free(again);
    if (env->body_case == HYPEROFFLOAD__ENVELOPE__BODY_PLAN_REQUEST &&
        env->plan_request->trace)
        plan_request_trace(env->plan_request->trace);
    ho_frame_envelope_free(env);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t piece = 1 + (size_t)data[0];
    ho_frame_reader r;
    ho_frame_reader_init(&r, HO_FRAME_LIMIT_HANDSHAKE);
    int frames = 0;
    for (size_t at = 1; at < size;) {
        size_t left = size - at < piece ? size - at : piece;
        const uint8_t *p = data + at;
        at += left;
        while (left > 0) {
            size_t used = 0, plen = 0;
            uint8_t *pl = NULL;
            int rc = ho_frame_reader_feed(&r, p, left, &used, &pl, &plen);
            p += used;
            left -= used;
            if (rc < 0)
                goto out;
            if (rc == 0)
                break;
            payload(pl, plen);
            free(pl);
            if (++frames == 1) /* after the "handshake" */
                ho_frame_reader_set_limit(&r, HO_FRAME_LIMIT_DEFAULT);
        }
    }
out:
    ho_frame_reader_done(&r);
    return 0;
}
