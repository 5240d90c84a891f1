/*
 * hyperoffload/runtime.h - trace, plan and replay: the part of
 * libhyperoffload that makes plans move real bytes.  Design:
 * docs/runtime.md.
 *
 * A job (one process per device):
 *   1. opens a device backend (ho_device_open: "host" or "cuda");
 *   2. records its first step as a trace (ho_trace_*), or loads one;
 *   3. asks the daemon for a plan for its HBM grant (ho_plan_request) --
 *      or loads a schedule it already has (ho_plan_load);
 *   4. creates a replay (ho_replay_new): the daemon allocates the host
 *      copies of the plan in the session's DDR arena (staging them to flash
 *      when the DDR quota or the pool is short) and shares a control region
 *      with the client;
 *   5. runs every later step through the per-op hooks (ho_step_begin,
 *      ho_op_begin/ho_op_end or the batched ho_ops_run, ho_step_end): the
 *      hooks execute the schedule's actions -- prefetch (H2D from the pool),
 *      store (D2H into the pool), free_device, free_host, wait (a
 *      deliberate stall until a storage's copies are done) -- with copies on
 *      the backend's copy engines, waiting only where the execution model
 *      (docs/execution-model.md) waits.
 *
 * Device memory for the trace's storages is owned by the replay: it is
 * allocated from the backend when the model allocates (initial: device
 * storages at ho_replay_new, writes of absent storages at ho_op_begin,
 * prefetches at their issue) and the current address of a storage is
 * ho_storage_ptr().  ho_storage_bind() lets the application hand over a
 * buffer it allocated with ho_device_alloc() instead (e.g. parameters it
 * loaded), which the replay then owns.
 *
 * Errors are negative codes (hyperoffload/errors.h).  A replay that
 * diverges from the trace (an unexpected op index, a storage of another
 * size) returns HO_E_DIVERGED, brings every storage back to the device and
 * executes no further action in that step ("no offload" fallback); the next
 * ho_step_begin starts clean.  A schedule that would break the model
 * (reading data that is not on device, going over the budget) is refused
 * by ho_replay_new (it is checked with the planner's simulator) and, should
 * it happen at run time anyway, stops the step with HO_E_BAD_SCHEDULE
 * before any wrong byte is read.
 *
 * Thread safety: a replay is driven by one thread (the framework's compute
 * thread); its copy engines run on their own threads or streams.  Traces
 * and plans are plain objects: one thread at a time.
 */
#ifndef HYPEROFFLOAD_RUNTIME_H
#define HYPEROFFLOAD_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "hyperoffload/client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- errors */

/* The sentence that came with the last failed runtime call (ho_trace_*,
 * ho_plan_*, ho_device_*, ho_replay_*, ho_storage_*, the hooks) on the
 * calling thread, e.g. the validator's "storage 7 not on device with its
 * latest version at op 12"; "" before any failure.  Thread-local storage
 * owned by the library, overwritten by the next failure on this thread.
 * Calls that take a client also record it there (ho_last_error()). */
HO_EXPORT const char *ho_runtime_last_error(void);

/* ------------------------------------------------------------- devices */

typedef struct ho_device ho_device;

/* Open a device backend.
 *   backend: "host" (device memory emulated in process memory, copies are
 *            memcpy on copy threads; runs anywhere) or "cuda" (libcudart
 *            loaded with dlopen at run time; cudaMalloc, cudaHostRegister
 *            of the mapped pool, cudaMemcpyAsync on dedicated copy streams,
 *            events).
 *   index:   device index (cuda), ignored by host.
 *   capacity: hard limit of device bytes this process may hold; an
 *            allocation beyond it fails with HO_E_DEVICE (never silently
 *            succeeds), so a wrong plan is caught.
 * HO_E_UNSUPPORTED when the backend cannot run here (no libcudart, no GPU:
 * the message of ho_device_unavailable_reason() says which). */
HO_EXPORT int ho_device_open(const char *backend, int index,
                             uint64_t capacity, ho_device **ret);
HO_EXPORT ho_device *ho_device_close(ho_device *dev); /* NULL ok; NULL */
HO_EXPORT const char *ho_device_backend(const ho_device *dev);
/* Why `backend` cannot be opened here, or NULL when it can (static). */
HO_EXPORT const char *ho_device_unavailable_reason(const char *backend);

/* Allocate / free device memory outside a replay (e.g. for
 * ho_storage_bind).  Counted against the capacity. */
HO_EXPORT int ho_device_alloc(ho_device *dev, uint64_t bytes, void **ret);
HO_EXPORT int ho_device_free(ho_device *dev, void *ptr);
/* Synchronous copies for setup and checks (host backend: memcpy). */
HO_EXPORT int ho_device_write(ho_device *dev, void *dst, const void *src,
                              uint64_t bytes);
HO_EXPORT int ho_device_read(ho_device *dev, void *dst, const void *src,
                             uint64_t bytes);
/* cuda: the stream the application computes on (a cudaStream_t; NULL,
 * the default, is the legacy default stream).  Stores start only after
 * the work enqueued on it before them, and device memory a replay frees is
 * reused only once that stream has passed the free.  host: no effect. */
HO_EXPORT int ho_device_set_stream(ho_device *dev, void *stream);
/* Bytes currently allocated and the maximum since open. */
HO_EXPORT uint64_t ho_device_used(const ho_device *dev);
HO_EXPORT uint64_t ho_device_peak(const ho_device *dev);

/* ------------------------------------------------------------- traces */

typedef struct ho_trace ho_trace;

typedef enum ho_storage_kind {
    HO_KIND_ACTIVATION = 0,
    HO_KIND_PARAM,
    HO_KIND_GRAD,
    HO_KIND_OPTIMIZER,
    HO_KIND_KV,
    HO_KIND_OTHER
} ho_storage_kind;

typedef enum ho_initial {
    HO_INITIAL_NONE = 0,
    HO_INITIAL_DEVICE,
    HO_INITIAL_HOST
} ho_initial;

#define HO_STORAGE_RETAINED 1u
#define HO_STORAGE_PINNED 2u
#define HO_STORAGE_MOVABLE 4u /* retained, initial device or host: the plan
                                 may choose its home between steps */

typedef struct ho_link {
    double h2d_gbps, d2h_gbps, latency_us;
    int duplex;
} ho_link;

/* A new empty trace (PLANNER.md §1).  link NULL: 25 GB/s each way, 10 us
 * latency, duplex.  The trace becomes read-only ("finished") the first
 * time it is saved, planned or replayed: adding to it then is
 * HO_E_STATE. */
HO_EXPORT int ho_trace_new(const char *name, const ho_link *link,
                           ho_trace **ret);
HO_EXPORT int ho_trace_add_storage(ho_trace *t, uint64_t id, uint64_t bytes,
                                   ho_storage_kind kind, ho_initial initial,
                                   unsigned flags);
HO_EXPORT int ho_trace_add_op(ho_trace *t, const char *name,
                              double duration_us, const uint64_t *reads,
                              uint32_t n_reads, const uint64_t *writes,
                              uint32_t n_writes);
/* Load a trace file (JSON or protobuf), or save one (JSON). */
HO_EXPORT int ho_trace_load(const char *path, ho_trace **ret);
HO_EXPORT int ho_trace_save(const ho_trace *t, const char *path);
HO_EXPORT uint32_t ho_trace_ops(const ho_trace *t);
HO_EXPORT ho_trace *ho_trace_free(ho_trace *t);

/* ------------------------------------------------------------- plans */

typedef struct ho_plan ho_plan;

typedef struct ho_plan_info {
    char planner[32];
    uint64_t budget_bytes;
    uint64_t no_offload_peak;
    uint64_t min_budget;          /* smallest budget the planner can meet */
    uint64_t peak_device_bytes;   /* predicted by the model */
    uint64_t peak_host_bytes;
    double compute_us, step_time_us, exposed_us;
    uint64_t h2d_bytes, d2h_bytes;
    double planning_ms;
    int cached;                   /* 1 when the daemon answered from cache */
    uint64_t actions;
} ho_plan_info;

/* Ask the daemon for a plan of trace `t` (PlanRequest).  budget 0 means the
 * session's HBM grant; planner NULL means the daemon's default (hoplan).
 * HO_E_INFEASIBLE with the smallest feasible budget in ho_last_error(). */
HO_EXPORT int ho_plan_request(ho_client *c, const ho_trace *t,
                              uint64_t budget, const char *planner,
                              ho_plan **ret);
/* Load a schedule file for trace `t` (offline plans, tests).  The schedule
 * is not trusted: ho_replay_new checks it. */
HO_EXPORT int ho_plan_load(const ho_trace *t, const char *schedule_path,
                           ho_plan **ret);
HO_EXPORT void ho_plan_get_info(const ho_plan *p, ho_plan_info *ret);
/* Write the plan's schedule as JSON (PLANNER.md §2), e.g. for a framework
 * hook written in another language. */
HO_EXPORT int ho_plan_save(const ho_plan *p, const char *path);
HO_EXPORT ho_plan *ho_plan_free(ho_plan *p);
/* With max_slowdown set (ho_set_node_options), the next ho_register()
 * sends trace t (copied now; NULL: none) and the daemon registers the
 * session only when its what-if prediction keeps every client within its
 * max_slowdown and every capacity (else HO_E_BUDGET naming the clients
 * and figures).  0, -EINVAL, or the trace's encoding error. */
HO_EXPORT int ho_set_admission_trace(ho_client *c, const ho_trace *t);

/* ------------------------------------------------------------- replay */

typedef struct ho_replay ho_replay;

typedef struct ho_replay_opts {
    uint64_t ddr_limit;   /* bytes of staged host copies allowed in DDR;
                             0: the daemon decides (quota, pool) */
    int verify_ops;       /* 1: ho_op_check verifies storages per op */
} ho_replay_opts;

/* Per-step figures (ho_step_end, ho_step_stats). */
typedef struct ho_step_info {
    uint64_t step;                /* 1-based step number */
    uint32_t ops;                 /* ops executed with the plan */
    int diverged;                 /* 1 when the step fell back */
    double wall_us;               /* ho_step_begin .. ho_step_end */
    double exposed_us;            /* time the hooks waited for copies */
    double stall_us;              /* part of it waiting for flash fills */
    uint64_t h2d_bytes, d2h_bytes;
    uint64_t flash_in_bytes;      /* filled from flash by the daemon */
    uint64_t flash_out_bytes;     /* spilled to flash by the daemon */
    uint64_t peak_device_bytes;   /* measured on the backend */
    uint64_t ddr_bytes, flash_bytes; /* host copies' residency at the end */
    double wait_us;               /* part of exposed_us: the schedule's
                                     `wait` actions (deliberate stalls) */
    uint64_t waits;               /* `wait` actions executed */
} ho_step_info;

/* Create a replay of plan `p` for trace `t` on device `dev`, for the
 * registered client `c`.  Checks the schedule with the simulator
 * (HO_E_BAD_SCHEDULE naming op and storage), asks the daemon for the host
 * copies and the control region (StageRequest), allocates the initial
 * device storages.  The replay borrows c, dev, t and p: they must outlive
 * it.
 * With a client, p must be a plan the session keeps (same trace, budget
 * and planner as one of its recent ho_plan_requests, or that plan saved
 * and loaded again; docs/protocol.md bounds how many), else the daemon
 * answers HO_E_NO_PLAN.  c may be NULL: a
 * local replay, for offline plans and tests -- the host copies then live
 * in a private pre-faulted mapping of this process, nothing is staged to
 * flash and the control region is private.  One replay per device at a
 * time (HO_E_BUSY); a plan whose predicted peak exceeds the device's
 * capacity is refused with HO_E_DEVICE. */
HO_EXPORT int ho_replay_new(ho_client *c, ho_device *dev, const ho_trace *t,
                            const ho_plan *p, const ho_replay_opts *opts,
                            ho_replay **ret);
HO_EXPORT ho_replay *ho_replay_free(ho_replay *r);

/* Hand a device buffer (from ho_device_alloc, `bytes` = the storage's
 * size) to the replay for storage `id`, before the first step: for
 * `initial: device` storages whose content the application provides.  A
 * movable one whose home in the schedule is host is moved there: the
 * buffer's content goes to its host copy and the buffer is freed.
 * HO_E_DIVERGED for a size that differs from the trace.  Between steps
 * only (HO_E_STATE inside one, or for a storage that does not start on
 * device); the buffer it replaces is freed. */
HO_EXPORT int ho_storage_bind(ho_replay *r, uint64_t storage_id, void *ptr,
                              uint64_t bytes);
/* Check that storage `id` has `bytes` bytes, as the traced one had (a
 * framework hook calls it for the tensors an op touches).  A different
 * size (or an id the trace lacks) inside a step is a divergence: the step
 * falls back to no offload and HO_E_DIVERGED is returned; between steps
 * it is HO_E_DIVERGED (-ENOENT for an unknown id) with no other effect. */
HO_EXPORT int ho_storage_check(ho_replay *r, uint64_t storage_id,
                               uint64_t bytes);
/* The storage's current device address, NULL when it is not on device.
 * Valid until the next hook call. */
HO_EXPORT void *ho_storage_ptr(ho_replay *r, uint64_t storage_id);
/* Write initial content of an `initial: host` storage into its host copy
 * (between steps; fills from flash as needed).  A movable one whose home
 * in the schedule is device is written to its device buffer instead. */
HO_EXPORT int ho_storage_write_host(ho_replay *r, uint64_t storage_id,
                                    const void *src, uint64_t bytes);
/* Read a storage's current content wherever it lives (checks, tests). */
HO_EXPORT int ho_storage_read(ho_replay *r, uint64_t storage_id, void *dst,
                              uint64_t bytes);

HO_EXPORT int ho_step_begin(ho_replay *r);
/* Op `op` is about to run: before-actions, allocation of its writes, and
 * the waits of the model.  Afterwards every storage it reads or writes is
 * on device at ho_storage_ptr(). */
HO_EXPORT int ho_op_begin(ho_replay *r, uint32_t op);
/* Optional check that op `op` touches exactly these storages. */
HO_EXPORT int ho_op_check(ho_replay *r, uint32_t op, const uint64_t *reads,
                          uint32_t n_reads, const uint64_t *writes,
                          uint32_t n_writes);
/* Op `op` has finished: after-actions and implicit frees. */
HO_EXPORT int ho_op_end(ho_replay *r, uint32_t op);

/* Batched form: for op = first .. first+count-1: ho_op_begin, fn(ctx, op),
 * ho_op_end.  Stops at the first error (of a hook, or fn's non-zero
 * return, which is passed through). */
typedef int (*ho_op_fn)(void *ctx, uint32_t op);
HO_EXPORT int ho_ops_run(ho_replay *r, uint32_t first, uint32_t count,
                         ho_op_fn fn, void *ctx);

/* End of the step: waits for every copy, checks the end-of-step state,
 * publishes and returns the step's figures (ret may be NULL).  Then it
 * restores the state the model has at the start of a step (storages that
 * start on device are allocated again, host copies of storages that start
 * on host are current), so the application can write the next step's
 * inputs (ho_storage_ptr, ho_storage_write_host) before ho_step_begin.
 * A step that diverged in a hook ends with 0 and ret->diverged = 1; one
 * that ends early (fewer ops than traced) returns HO_E_DIVERGED; a step
 * stopped by HO_E_BAD_SCHEDULE or HO_E_DEVICE returns that code. */
HO_EXPORT int ho_step_end(ho_replay *r, ho_step_info *ret);
/* Figures of step `step` (1-based; 0 = the most recent one).  The replay
 * keeps the figures of its last HO_STEP_HISTORY steps; older ones are
 * -ENOENT. */
#define HO_STEP_HISTORY 1024
HO_EXPORT int ho_step_stats(const ho_replay *r, uint64_t step,
                            ho_step_info *ret);

/* Re-staging after a reconnect (ho_set_reconnect on the replay's client):
 * when the daemon went away under a replay, the next ho_step_begin (or
 * ho_storage_write_host / ho_storage_read between steps, or the end of a
 * step the loss broke) stages it again on the new session: the plan is
 * asked for again (it must come out the same, else HO_E_DISCONNECTED
 * saying so), and every host copy the replay still needs is carried over
 * -- from the old session's pool where it was in DDR, else from its
 * device copy.  A host copy in neither place (it was on the old daemon's
 * flash or moving) is lost: a prefetch of it fails with HO_E_DISCONNECTED
 * naming the storage until it is written again (ho_storage_write_host, or
 * a store of new content).  Every wait is bounded by the reconnect's
 * attempts; a failed re-staging leaves the replay as it was, and the next
 * call tries again.  Returns how many times r was re-staged; *ret_copied
 * and *ret_lost (each may be NULL) the host copies carried over and lost
 * in all. */
HO_EXPORT unsigned ho_replay_restages(const ho_replay *r,
                                      uint64_t *ret_copied,
                                      uint64_t *ret_lost);

/* ------------------------------------------------------------- copy log */

/* The copies a step really made, as the copy engines ran them (opt-in).
 * One record per prefetch (H2D) and store (D2H) the schedule issued in
 * the step, in issue order.  Synchronous copies outside the engines (the
 * fallback of a diverged step, the end-of-step restoration after one,
 * ho_storage_* calls) are not recorded.
 *
 * Times are nanoseconds from the step's ho_step_begin, on the host's
 * CLOCK_MONOTONIC:
 *   issue_ns  the hook handed the copy to its engine (after the host copy
 *             was brought into DDR, which is stall_ns);
 *   start_ns  the copy began moving bytes: after every earlier copy of its
 *             engine and the copy it depends on (a prefetch waits for the
 *             storage's pending store and vice versa);
 *   end_ns    the copy completed.
 * host backend: the copy thread reads the clock right before and right
 * after its memcpy.  cuda backend: timing events recorded on the copy
 * stream around the cudaMemcpyAsync, converted when the hooks see the copy
 * complete: cudaEventElapsedTime from a reference event recorded on the
 * idle copy stream in ho_step_begin, added to the host clock read when
 * that reference was recorded (device timestamps mapped onto the host's
 * at the step's start; the reference's launch latency, microseconds,
 * makes them early: start_ns is raised to issue_ns, and end_ns to
 * start_ns, where that shows).
 * Always issue_ns <= start_ns <= end_ns <= the step's wall time, except
 * -1 in start_ns and end_ns when the backend did not report the copy
 * (it failed: the step then failed too).
 *
 * Copies on one engine run one at a time, in issue order: on a duplex
 * link prefetches use engine 0 and stores engine 1, otherwise both use
 * engine 0. */
typedef enum ho_copy_dir {
    HO_COPY_H2D = 0,              /* prefetch: host copy -> device */
    HO_COPY_D2H = 1               /* store: device -> host copy */
} ho_copy_dir;

typedef struct ho_copy_record {
    uint64_t storage_id;
    uint64_t bytes;
    uint32_t op;                  /* the op at whose point it was issued */
    uint8_t when;                 /* 0: before that op, 1: after it */
    uint8_t dir;                  /* ho_copy_dir */
    uint8_t engine;               /* copy engine, 0 or 1 (see above) */
    uint8_t reserved;
    int64_t issue_ns, start_ns, end_ns;
    uint64_t wait_ns;             /* the hooks blocked waiting for this copy
                                     to complete: an op reading or writing
                                     its storage, device memory it held, a
                                     full queue, the step's end (exposed) */
    uint64_t stall_ns;            /* its issue waited for the daemon to
                                     bring the host copy into DDR (flash) */
} ho_copy_record;

/* Largest max_records ho_replay_record_copies accepts. */
#define HO_COPY_LOG_MAX (1u << 22)

/* Turn the copy log on with room for `max_records` records per step, or
 * off (0).  Between steps only (HO_E_STATE inside one); every step that
 * begins afterwards is recorded.  This call allocates the log (two
 * buffers of max_records: the step in progress and the last completed
 * one) and prepares the backend's timing (cuda: timing events); the hooks
 * then only fill preallocated records: no allocation, lock or system call
 * (the host clock is read through the vDSO).  Copies beyond max_records
 * in a step are not recorded, only counted (ho_copy_log_info.dropped).
 * Turning it on again with any size discards the records kept so far;
 * off frees them.  HO_E_INVALID_SIZE above HO_COPY_LOG_MAX, -ENOMEM, or
 * HO_E_DEVICE (then the log is off).  The log lives as long as the
 * replay (ho_replay_free releases it). */
HO_EXPORT int ho_replay_record_copies(ho_replay *r, uint32_t max_records);

/* The records of the most recent step that completed (ho_step_end
 * returned) with the log on: the first min(max, n) are copied to out (out
 * may be NULL when max is 0) and *ret_n is n, the number the step has
 * (call again with a larger buffer when n > max).  Inside a step it is
 * still the previous step.  HO_E_STATE when the log is off, -ENOENT when
 * no step has completed since it was turned on.  Like every hook: call it
 * from the thread that drives the replay (the records belong to the
 * replay; out is the caller's). */
HO_EXPORT int ho_step_copies(const ho_replay *r, ho_copy_record *out,
                             size_t max, size_t *ret_n);

typedef struct ho_copy_log_info {
    uint64_t step;                /* the step the records are of */
    uint64_t records;             /* n of ho_step_copies */
    uint64_t dropped;             /* copies of that step beyond the log */
    uint32_t max_records;         /* the log's size */
} ho_copy_log_info;

/* Figures of the records ho_step_copies returns now; errors as there. */
HO_EXPORT int ho_step_copies_info(const ho_replay *r,
                                  ho_copy_log_info *ret);

#ifdef __cplusplus
}
#endif
#endif
