/*
 * client/runtime_internal.h - what the runtime files of libhyperoffload
 * share (hyperoffload/runtime.h is the public contract; docs/runtime.md the
 * design).  Hidden symbols carry the prefix hor_.
 *
 * Files:
 *   runtime_trace.c    ho_trace_*: a wrapper around the planner's plan_trace;
 *                      the thread-local error sentence (hor_fail)
 *   runtime_plan.c     ho_plan_*: PlanRequest to the daemon, schedule files
 *   runtime_device.c   ho_device_*: backend selection, byte accounting and
 *                      the device-memory allocator shared by the backends
 *   backend_host.c     "host" backend: pre-faulted region, memcpy threads
 *   backend_cuda.c     "cuda" backend: libcudart through dlopen
 *   runtime_control.c  StageRequest, the control region and its slots
 *   runtime_replay.c   ho_replay_new/free: checks, per-op index, storages
 *   runtime_engine.c   the hooks (step/op begin/end) and step statistics
 *
 * Errors: every runtime call that fails records one sentence in a
 * thread-local buffer (ho_runtime_last_error()); calls that have a client
 * also record it as the client's last error.
 */
#ifndef HO_CLIENT_RUNTIME_INTERNAL_H
#define HO_CLIENT_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "client_internal.h"
#include "hyperoffload/runtime.h"
#include "plan.h"

#define HOR_ERRLEN 512u

/* runtime_trace.c ------------------------------------------------------- */

struct ho_trace {
    plan_trace *pt;  /* owned */
};

/* Record a sentence (printf-style) as this thread's runtime error, and as
 * the last error of `c` when c is not NULL; returns `code`. */
int hor_fail(ho_client *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Finish the trace (derive its access lists) when it is not finished yet.
 * HO_E_BAD_TRACE with the planner's sentence recorded. */
int hor_trace_finish(const ho_trace *t);

/* runtime_plan.c -------------------------------------------------------- */

struct ho_plan {
    plan_schedule *s;        /* owned; bound to the trace it was made for */
    uint64_t trace_hash;     /* plan_trace_hash of that trace */
    uint64_t daemon_hash;    /* the hash the daemon keyed the plan by, or 0
                                for a schedule loaded from a file */
    ho_plan_info info;
};

#endif
