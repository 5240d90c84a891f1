/*
 * client/backends/backend_cuda.c - the "cuda" device backend.  libcudart
 * is loaded with dlopen at run time (libcudart.so, then .so.13, .so.12,
 * .so.11), so the library has no build-time CUDA dependency and runs
 * without a GPU (the backend then reports why it is unavailable).
 *
 * Device memory: one cudaMalloc'ed region, carved by the generic layer
 * (byte accounting and the capacity limit there).  Copies: one
 * non-blocking stream per engine, cudaMemcpyAsync, and one event per copy
 * in a ring of `depth` events; a ticket's completion is its event's.  A
 * dependency on another engine's ticket is cudaStreamWaitEvent on that
 * copy's event.  A D2H waits (on the device, cudaStreamWaitEvent) for an
 * event recorded on the compute stream at submit, so a store never reads a
 * buffer a kernel is still writing.  The compute fence is a second ring of
 * events recorded on the compute stream.  The mapped pool is registered
 * with cudaHostRegister so that copies from and to it run at link speed.
 *
 * Ownership: the state owns the region, the compute events and the host
 * registrations (undone at close); an engine owns its stream and events.
 *
 * Copy times (the replay's copy log, hob_times): while timing is on
 * (cuda_timing) a timed copy is bracketed by two timing events recorded
 * on its stream, right after the dependency waits and right after the
 * cudaMemcpyAsync.  At ho_step_begin the replay calls cuda_epoch, which
 * records a reference event on the (idle) stream and reads the host clock
 * just before.  When the copy's completion is detected (completed/wait),
 * its times are the host time of the reference plus cudaEventElapsedTime
 * from the reference to each timing event: device timestamps mapped onto
 * the host's CLOCK_MONOTONIC at the step's start.  The mapping is early by
 * the reference event's launch latency (microseconds), so a start is
 * raised to the copy's issue time and an end to its start where that
 * shows; elapsed times are floats of milliseconds (sub-microsecond within
 * a step).
 * cudart symbols are looked up once (pthread_once) and the library stays
 * loaded for the life of the process.
 */
#include "client/backends/backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"

/* The subset of the CUDA runtime API used here, with its ABI: enums are
 * ints, streams and events are pointers. */
typedef int cuerr;
typedef void *custream;
typedef void *cuevent;
#define CU_SUCCESS 0
#define CU_NOT_READY 600
#define CU_MEMCPY_H2D 1
#define CU_MEMCPY_D2H 2
#define CU_STREAM_NON_BLOCKING 0x01u
#define CU_EVENT_DISABLE_TIMING 0x02u
#define CU_HOST_REGISTER_PORTABLE 0x01u
#define CU_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712

static struct cudart {
    void *lib;
    char reason[HOB_CUDA_REASON_LEN];
    cuerr (*GetDeviceCount)(int *);
    cuerr (*SetDevice)(int);
    const char *(*GetErrorString)(cuerr);
    cuerr (*Malloc)(void **, size_t);
    cuerr (*Free)(void *);
    cuerr (*Memcpy)(void *, const void *, size_t, int);
    cuerr (*MemcpyAsync)(void *, const void *, size_t, int, custream);
    cuerr (*StreamCreateWithFlags)(custream *, unsigned);
    cuerr (*StreamDestroy)(custream);
    cuerr (*StreamSynchronize)(custream);
    cuerr (*StreamWaitEvent)(custream, cuevent, unsigned);
    cuerr (*EventCreateWithFlags)(cuevent *, unsigned);
    cuerr (*EventDestroy)(cuevent);
    cuerr (*EventRecord)(cuevent, custream);
    cuerr (*EventQuery)(cuevent);
    cuerr (*EventSynchronize)(cuevent);
    cuerr (*EventElapsedTime)(float *, cuevent, cuevent);
    cuerr (*HostRegister)(void *, size_t, unsigned);
    cuerr (*HostUnregister)(void *);
} cu;

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

#define LOAD(name)                                                        \
    do {                                                                  \
        *(void **)&cu.name = dlsym(cu.lib, "cuda" #name);                 \
        if (!cu.name) {                                                   \
            snprintf(cu.reason, sizeof(cu.reason),                        \
                     "libcudart lacks cuda" #name);                       \
            return;                                                       \
        }                                                                 \
    } while (0)

static void cu_load(void)
{
    static const char *const names[] = {"libcudart.so", "libcudart.so.13",
                                        "libcudart.so.12", "libcudart.so.11"};
    char last[160] = "";
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !cu.lib; i++) {
        cu.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!cu.lib) {
            const char *e = dlerror();
            snprintf(last, sizeof(last), "%s", e ? e : "not found");
        }
    }
    if (!cu.lib) {
        snprintf(cu.reason, sizeof(cu.reason),
                 "libcudart not found (tried libcudart.so, .so.13, .so.12, "
                 ".so.11; last: %.150s)", last);
        return;
    }
    LOAD(GetDeviceCount);
    LOAD(SetDevice);
    LOAD(GetErrorString);
    LOAD(Malloc);
    LOAD(Free);
    LOAD(Memcpy);
    LOAD(MemcpyAsync);
    LOAD(StreamCreateWithFlags);
    LOAD(StreamDestroy);
    LOAD(StreamSynchronize);
    LOAD(StreamWaitEvent);
    LOAD(EventCreateWithFlags);
    LOAD(EventDestroy);
    LOAD(EventRecord);
    LOAD(EventQuery);
    LOAD(EventSynchronize);
    LOAD(EventElapsedTime);
    LOAD(HostRegister);
    LOAD(HostUnregister);
    int n = 0;
    cuerr e = cu.GetDeviceCount(&n);
    if (e != CU_SUCCESS)
        snprintf(cu.reason, sizeof(cu.reason), "no usable CUDA device: %s",
                 cu.GetErrorString(e));
    else if (n <= 0)
        snprintf(cu.reason, sizeof(cu.reason), "no CUDA device present");
}

static const char *cuda_unavailable(void)
{
    pthread_once(&cu_once, cu_load);
    return cu.reason[0] ? cu.reason : NULL;
}

static int cu_fail(cuerr e, char *err, size_t errlen, const char *what)
{
    return ho_errf(err, errlen, HO_E_DEVICE, "%s: %s", what,
                   cu.GetErrorString(e));
}

/* Create n events without timing (ev[] zeroed, so that the caller's
 * cleanup destroys exactly those created).  0 or HO_E_DEVICE with the
 * sentence in err. */
static int cu_events_new(cuevent *ev, uint32_t n, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < n; i++) {
        cuerr e = cu.EventCreateWithFlags(&ev[i], CU_EVENT_DISABLE_TIMING);
        if (e != CU_SUCCESS)
            return cu_fail(e, err, errlen, "cudaEventCreateWithFlags");
    }
    return 0;
}

/* ----------------------------------------------------------- state */

typedef struct cuda_state {
    int dev;
    uint8_t *base;
    uint64_t size;
    custream compute;       /* the application's stream (NULL: legacy) */
    cuevent cev[HOB_CUDA_COMPUTE_DEPTH];
    uint64_t cmarks, cdone;
    void *reg[HOB_CUDA_MAX_REG];     /* registered host ranges */
    unsigned nreg;
} cuda_state;

struct hob_engine {
    cuda_state *st;
    custream stream;
    cuevent *ev;            /* depth events, owned */
    uint32_t depth, mask;
    uint64_t submitted, done;
    /* copy timing, while `timed` (cuda_timing) */
    bool timed;
    cuevent *tev;           /* 2 * depth timing events (start, end per
                               ring slot), owned */
    hob_times **tms;        /* depth: where a slot's times go, NULL: not
                               timed; owned (the pointers are borrowed) */
    cuevent ref;            /* reference event of the epoch, owned */
    uint64_t ref_ns;        /* host clock when ref was recorded */
};

static uint64_t ref_plus(const hob_engine *e, cuevent ev, bool *ok)
{
    float ms = 0;
    if (cu.EventElapsedTime(&ms, e->ref, ev) != CU_SUCCESS) {
        *ok = false;
        return 0;
    }
    return e->ref_ns + (ms > 0 ? (uint64_t)((double)ms * 1e6) : 0);
}

/* The copy in ring slot i is complete: report its times, if timed. */
static void times_fill(hob_engine *e, uint32_t i)
{
    if (!e->tms || !e->tms[i])
        return;
    hob_times *tm = e->tms[i];
    e->tms[i] = NULL;
    bool ok = true;
    uint64_t a = ref_plus(e, e->tev[2 * (size_t)i], &ok);
    uint64_t b = ref_plus(e, e->tev[2 * (size_t)i + 1], &ok);
    if (ok) {
        /* The reference's launch latency makes the mapping early. */
        tm->start_ns = a > tm->issue_ns ? a : tm->issue_ns;
        tm->end_ns = b > tm->start_ns ? b : tm->start_ns;
    }
}

static void *cuda_close(void *state)
{
    cuda_state *st = state;
    if (!st)
        return NULL;
    if (st->compute || st->base)
        cu.StreamSynchronize(st->compute);
    for (unsigned i = 0; i < st->nreg; i++)
        cu.HostUnregister(st->reg[i]);
    for (unsigned i = 0; i < HOB_CUDA_COMPUTE_DEPTH; i++)
        if (st->cev[i])
            cu.EventDestroy(st->cev[i]);
    if (st->base)
        cu.Free(st->base);
    free(st);
    return NULL;
}

static int cuda_open(int index, uint64_t region_bytes, void **ret_state,
                     char *err, size_t errlen)
{
    const char *why = cuda_unavailable();
    if (why)
        return ho_errf(err, errlen, HO_E_UNSUPPORTED, "%s", why);
    if (region_bytes == 0 || region_bytes > SIZE_MAX)
        return ho_errf(err, errlen, HO_E_INVALID_SIZE,
                       "device region of %llu bytes",
                       (unsigned long long)region_bytes);
    cuda_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    int rc;
    cuerr e = cu.SetDevice(index);
    if (e != CU_SUCCESS) {
        rc = cu_fail(e, err, errlen, "cudaSetDevice");
        goto fail;
    }
    st->dev = index;
    void *p = NULL;
    e = cu.Malloc(&p, (size_t)region_bytes);
    if (e != CU_SUCCESS) {
        rc = cu_fail(e, err, errlen, "cudaMalloc of the device region");
        goto fail;
    }
    st->base = p;
    st->size = region_bytes;
    rc = cu_events_new(st->cev, HOB_CUDA_COMPUTE_DEPTH, err, errlen);
    if (rc < 0)
        goto fail;
    *ret_state = st;
    return 0;
fail:
    cuda_close(st);
    return rc;
}

static void cuda_region(void *state, uint8_t **ret_base, uint64_t *ret_size)
{
    cuda_state *st = state;
    *ret_base = st->base;
    *ret_size = st->size;
}

static int cuda_copy_sync(void *state, hob_dir dir, void *dst,
                          const void *src, uint64_t n)
{
    cuda_state *st = state;
    cuerr e = cu.StreamSynchronize(st->compute);
    if (e == CU_SUCCESS)
        e = cu.Memcpy(dst, src, (size_t)n,
                      dir == HOB_H2D ? CU_MEMCPY_H2D : CU_MEMCPY_D2H);
    return e == CU_SUCCESS ? 0 : HO_E_DEVICE;
}

static int cuda_register(void *state, void *base, uint64_t len)
{
    cuda_state *st = state;
    if (st->nreg == HOB_CUDA_MAX_REG)
        return -ENOSPC;
    cuerr e = cu.HostRegister(base, (size_t)len, CU_HOST_REGISTER_PORTABLE);
    if (e == CU_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
        return 0; /* someone else pinned it: copies are fast anyway */
    if (e != CU_SUCCESS)
        return HO_E_DEVICE;
    st->reg[st->nreg++] = base;
    return 0;
}

static void cuda_unregister(void *state, void *base)
{
    cuda_state *st = state;
    for (unsigned i = 0; i < st->nreg; i++) {
        if (st->reg[i] == base) {
            cu.HostUnregister(base);
            st->reg[i] = st->reg[--st->nreg];
            return;
        }
    }
}

/* ----------------------------------------------------------- engines */

static uint64_t cuda_completed(hob_engine *e)
{
    while (e->done < e->submitted) {
        cuerr r = cu.EventQuery(e->ev[e->done & e->mask]);
        if (r != CU_SUCCESS)
            break; /* not ready, or failed: wait() reports failures */
        times_fill(e, (uint32_t)(e->done & e->mask));
        e->done++;
    }
    return e->done;
}

static int cuda_wait(hob_engine *e, uint64_t t)
{
    while (e->done < t && e->done < e->submitted) {
        cuerr r = cu.EventSynchronize(e->ev[e->done & e->mask]);
        if (r != CU_SUCCESS)
            return HO_E_DEVICE;
        times_fill(e, (uint32_t)(e->done & e->mask));
        e->done++;
    }
    return 0;
}

static void timing_release(hob_engine *e)
{
    for (size_t i = 0; e->tev && i < 2 * (size_t)e->depth; i++)
        if (e->tev[i])
            cu.EventDestroy(e->tev[i]);
    if (e->ref)
        cu.EventDestroy(e->ref);
    free(e->tev);
    free(e->tms);
    e->tev = NULL;
    e->tms = NULL;
    e->ref = NULL;
    e->timed = false;
}

static int cuda_timing(hob_engine *e, int on)
{
    if (e->stream)
        cu.StreamSynchronize(e->stream);
    if (!on) {
        timing_release(e);
        return 0;
    }
    if (e->timed)
        return 0;
    e->tev = calloc(2 * (size_t)e->depth, sizeof(*e->tev));
    e->tms = calloc(e->depth, sizeof(*e->tms));
    if (!e->tev || !e->tms) {
        timing_release(e);
        return -ENOMEM;
    }
    cuerr r = cu.EventCreateWithFlags(&e->ref, 0);
    for (size_t i = 0; r == CU_SUCCESS && i < 2 * (size_t)e->depth; i++)
        r = cu.EventCreateWithFlags(&e->tev[i], 0);
    if (r != CU_SUCCESS) {
        timing_release(e);
        return HO_E_DEVICE;
    }
    e->timed = true;
    return 0;
}

static int cuda_epoch(hob_engine *e)
{
    if (!e->timed)
        return 0;
    e->ref_ns = hob_now_ns();
    return cu.EventRecord(e->ref, e->stream) == CU_SUCCESS ? 0
                                                           : HO_E_DEVICE;
}

static hob_engine *cuda_engine_free(hob_engine *e)
{
    if (!e)
        return NULL;
    if (e->stream)
        cu.StreamSynchronize(e->stream);
    timing_release(e);
    for (uint32_t i = 0; i < e->depth; i++)
        if (e->ev && e->ev[i])
            cu.EventDestroy(e->ev[i]);
    if (e->stream)
        cu.StreamDestroy(e->stream);
    free(e->ev);
    free(e);
    return NULL;
}

static int cuda_engine_new(void *state, uint32_t depth, hob_engine **ret,
                           char *err, size_t errlen)
{
    cuda_state *st = state;
    int rc = hob_check_depth(depth, HOB_CUDA_DEPTH_MAX, err, errlen);
    if (rc < 0)
        return rc;
    hob_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->st = st;
    e->depth = depth;
    e->mask = depth - 1;
    e->ev = calloc(depth, sizeof(*e->ev));
    if (!e->ev) {
        rc = -ENOMEM;
        goto fail;
    }
    cuerr r = cu.SetDevice(st->dev);
    if (r == CU_SUCCESS)
        r = cu.StreamCreateWithFlags(&e->stream, CU_STREAM_NON_BLOCKING);
    if (r != CU_SUCCESS) {
        rc = cu_fail(r, err, errlen, "cudaStreamCreateWithFlags");
        goto fail;
    }
    rc = cu_events_new(e->ev, depth, err, errlen);
    if (rc < 0)
        goto fail;
    *ret = e;
    return 0;
fail:
    cuda_engine_free(e);
    return rc;
}

static int cuda_compute_mark(void *state, uint64_t *ret_ticket);

static int cuda_submit(hob_engine *e, hob_dir dir, void *dst,
                       const void *src, uint64_t n, hob_engine *dep,
                       uint64_t dep_ticket, hob_times *tm,
                       uint64_t *ret_ticket)
{
    cuda_state *st = e->st;
    uint32_t i;
    uint64_t h = e->submitted;
    int rc;
    if (h - cuda_completed(e) >= e->depth) {
        rc = cuda_wait(e, h - e->depth + 1);
        if (rc < 0)
            return rc;
    }
    cuerr r = CU_SUCCESS;
    if (dir == HOB_D2H) {
        /* The data may still be being written by a kernel. */
        uint64_t m;
        rc = cuda_compute_mark(st, &m);
        if (rc < 0)
            return rc;
        r = cu.StreamWaitEvent(e->stream, st->cev[(m - 1) % HOB_CUDA_COMPUTE_DEPTH],
                               0);
    }
    if (r == CU_SUCCESS && dep && dep != e && cuda_completed(dep) < dep_ticket)
        r = cu.StreamWaitEvent(e->stream, dep->ev[(dep_ticket - 1) & dep->mask],
                               0);
    i = (uint32_t)(h & e->mask);
    if (!e->timed)
        tm = NULL;
    if (r == CU_SUCCESS && tm)
        r = cu.EventRecord(e->tev[2 * (size_t)i], e->stream);
    if (r == CU_SUCCESS)
        r = cu.MemcpyAsync(dst, src, (size_t)n,
                           dir == HOB_H2D ? CU_MEMCPY_H2D : CU_MEMCPY_D2H,
                           e->stream);
    if (r == CU_SUCCESS && tm)
        r = cu.EventRecord(e->tev[2 * (size_t)i + 1], e->stream);
    if (r == CU_SUCCESS)
        r = cu.EventRecord(e->ev[i], e->stream);
    if (r != CU_SUCCESS)
        return HO_E_DEVICE;
    if (e->timed)
        e->tms[i] = tm;
    e->submitted = h + 1;
    *ret_ticket = h + 1;
    return 0;
}

/* ----------------------------------------------------------- compute */

static uint64_t cuda_compute_completed(void *state)
{
    cuda_state *st = state;
    while (st->cdone < st->cmarks) {
        if (cu.EventQuery(st->cev[st->cdone % HOB_CUDA_COMPUTE_DEPTH]) != CU_SUCCESS)
            break;
        st->cdone++;
    }
    return st->cdone;
}

static int cuda_compute_wait(void *state, uint64_t t)
{
    cuda_state *st = state;
    while (st->cdone < t && st->cdone < st->cmarks) {
        if (cu.EventSynchronize(st->cev[st->cdone % HOB_CUDA_COMPUTE_DEPTH]) !=
            CU_SUCCESS)
            return HO_E_DEVICE;
        st->cdone++;
    }
    return 0;
}

static int cuda_compute_mark(void *state, uint64_t *ret_ticket)
{
    cuda_state *st = state;
    uint64_t h = st->cmarks;
    if (h - cuda_compute_completed(st) >= HOB_CUDA_COMPUTE_DEPTH) {
        int rc = cuda_compute_wait(st, h - HOB_CUDA_COMPUTE_DEPTH + 1);
        if (rc < 0)
            return rc;
    }
    if (cu.EventRecord(st->cev[h % HOB_CUDA_COMPUTE_DEPTH], st->compute) !=
        CU_SUCCESS)
        return HO_E_DEVICE;
    st->cmarks = h + 1;
    *ret_ticket = h + 1;
    return 0;
}

static void cuda_set_compute_stream(void *state, void *stream)
{
    cuda_state *st = state;
    st->compute = stream;
}

const hob_ops hob_cuda_ops = {
    .name = "cuda",
    .unavailable = cuda_unavailable,
    .open = cuda_open,
    .close = cuda_close,
    .region = cuda_region,
    .copy_sync = cuda_copy_sync,
    .host_register = cuda_register,
    .host_unregister = cuda_unregister,
    .engine_new = cuda_engine_new,
    .engine_free = cuda_engine_free,
    .submit = cuda_submit,
    .completed = cuda_completed,
    .wait = cuda_wait,
    .compute_mark = cuda_compute_mark,
    .compute_completed = cuda_compute_completed,
    .compute_wait = cuda_compute_wait,
    .set_compute_stream = cuda_set_compute_stream,
    .timing = cuda_timing,
    .epoch = cuda_epoch,
};
