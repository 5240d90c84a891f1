/*
 * client/client_limits.h - every bound libhyperoffload puts on a size, a count or
 * a wait, in one place: the connection (HOC_, client/transport.c,
 * client/connect.c), the replay runtime (HOR_, client/runtime/) and the
 * device backends (HOB_, client/backends/).  Everything a daemon sends is
 * checked against these (or against proto/proto_limits.h) before it is used.
 * Each line says why it is that number.
 *
 * Bounds that are part of the public API stay in the public headers:
 * HO_CLIENT_MAX_NAME (client and job names) and HO_CLIENT_MAX_POOL_MAP
 * (the arena mapping a client accepts) in hyperoffload/client.h,
 * HO_SOCKET_PATH_MAX in hyperoffload/paths.h, HO_STEP_HISTORY and
 * HO_COPY_LOG_MAX in hyperoffload/runtime.h.  Frame and control-region
 * bounds shared with the daemon are in proto/proto_limits.h; a trace's and a
 * schedule's in planner/plan_limits.h.
 */
#ifndef HO_CLIENT_LIMITS_H
#define HO_CLIENT_LIMITS_H

/* ---- connection (client/transport.c, client/connect.c) ---- */

/* Bytes one recvmsg reads: the handshake limit, so a Welcome arrives in
 * one call; larger replies are assembled by the frame reader. */
#define HOC_RBUF_SIZE (64u * 1024u)
/* Descriptors queued before their replies are read: a reply carries at
 * most HOC_MAX_FDS_PER_REPLY, and only a few requests of one client are
 * in flight at once; more is a misbehaving daemon (HO_E_PROTOCOL). */
#define HOC_MAX_FDS 8u
/* Descriptors one recvmsg accepts: the kernel never merges the
 * descriptors of two messages, so two would do; four leaves room. */
#define HOC_MAX_FDS_PER_MSG 4u
/* Descriptors one reply may carry: StageReply's control region and
 * eventfd (RegisterReply carries one, the arena). */
#define HOC_MAX_FDS_PER_REPLY 2u
/* Capabilities kept from Welcome, and the bytes of each: the daemon
 * announces a handful of short words. */
#define HOC_MAX_CAPS 64u
#define HOC_MAX_CAP_LEN 64u
/* Bytes of the daemon's version string kept (with the NUL). */
#define HOC_SERVER_VERSION_LEN 64
/* A client's last-error sentence (with the NUL): a daemon sentence plus
 * our context fits; hoctl prints it from a buffer of the same size. */
#define HOC_ERRLEN 512u
/* Detail of a read failure, kept until the connection's death is
 * reported ("reply of N bytes exceeds the limit M", "daemon said: ..."). */
#define HOC_READ_WHY_LEN 160

/* ---- replay runtime (client/runtime/) ---- */

/* The runtime's thread-local error sentence (with the NUL). */
#define HOR_ERRLEN 512u
/* A lower layer's sentence (planner, backend) that a runtime sentence
 * quotes: half of HOR_ERRLEN, so the quote never crowds out the
 * context. */
#define HOR_DETAIL_LEN 256
/* Copies in flight per copy engine: the planner places a few prefetches
 * and stores per op, so 4096 never throttles a real schedule; a full
 * engine makes issue() wait for its oldest copy.  A power of two (ring). */
#define HOR_ENGINE_DEPTH 4096u
/* Room for pending device releases (when it is full, a release first
 * waits for the oldest) and the allocator descriptors a replay reserves
 * ahead (the hot path never allocates; an allocation splits at most one
 * block): a storage holds one block and may leave one release pending
 * besides, so two per storage of the trace, plus 64 of slack. */
#define HOR_RELEASES(n_storages) (2u * (n_storages) + 64u)
/* Device region: the capacity plus min(capacity, 1 GiB) plus 1 MiB, so
 * that HOB_ALIGN rounding and fragmentation never turn a plan that fits
 * its budget into a failure (accounting counts the bytes asked for). */
#define HOR_DEV_SLACK_MAX (1ull << 30)
#define HOR_DEV_SLACK_FIXED (1ull << 20)
/* Allocator block descriptors allocated at open (more come from
 * hor_dev_reserve before a replay starts). */
#define HOR_DEV_INITIAL_BLOCKS 256u
/* Largest control region the client maps: the layout for HO_CTL_MAX_SLOTS
 * slots and HO_CTL_MAX_OPS ops is ~196 MiB; 4 GiB refuses only a
 * nonsensical StageReply.control_size. */
#define HOR_CTL_MAX_BYTES (1ull << 32)
/* A copy waiting for a slot the daemon is bringing back from flash
 * sleeps on the futex this long between re-checks (a lost wake-up costs
 * at most this) ... */
#define HOR_URGENT_POLL_NS 50000000ull
/* ... and gives up after this long: a fill of any real host copy takes
 * seconds, two minutes means the daemon will not answer. */
#define HOR_URGENT_GIVE_UP_NS 120000000000ull
/* Alignment of the host copies of a local replay (no daemon): the page,
 * as the daemon's arena extents. */
#define HOR_LOCAL_SLOT_ALIGN 4096u

/* ---- device backends (client/backends/) ---- */

/* Alignment of every allocation in the device region: what cudaMalloc
 * guarantees, so both backends place buffers alike. */
#define HOB_ALIGN 256u
/* Link pacing (backend_pace.c): device indices with a pacer (above the
 * daemon's SRV_MAX_DEVICES), and the bytes a paced copy moves between
 * two deadlines: 256 KiB is ~16 µs at 16 GB/s, far above a sleep's
 * overshoot once the deadlines are absolute. */
#define HOB_PACE_MAX_DEVICES 256u
#define HOB_PACE_CHUNK (256u * 1024u)
/* The end of a paced wait that is spun rather than slept: about a
 * sleep's overshoot. */
#define HOB_PACE_SPIN_NS 60000u
/* Largest engine depth a backend accepts (a sanity bound: the runtime
 * asks for HOR_ENGINE_DEPTH): host, a ring of 48-byte descriptors;
 * cuda, one event per entry (events are a scarcer resource). */
#define HOB_HOST_DEPTH_MAX (1u << 24)
#define HOB_CUDA_DEPTH_MAX (1u << 20)
/* cuda: host ranges registered at once: one per replay (its host copies'
 * span), and a device runs one replay at a time; 16 leaves room. */
#define HOB_CUDA_MAX_REG 16u
/* cuda: compute fences outstanding (a ring of events): one per device
 * release and one per store of a step's ops in flight; a full ring waits
 * for its oldest fence. */
#define HOB_CUDA_COMPUTE_DEPTH 1024u
/* cuda: bytes of the sentence saying why the backend is unavailable. */
#define HOB_CUDA_REASON_LEN 256

/* Reconnect (ho_set_reconnect): the first wait between attempts, doubled
 * after each failed one up to the caller's max_wait_ms. */
#define HOC_RECONNECT_FIRST_MS 50u
/* Extent ids handed out after a reconnect carry the reconnect count in
 * their top 16 bits (pool.c): an id of an earlier session is recognised
 * and refused with HO_E_DISCONNECTED; the daemon's ids stay far below
 * 2^48. */
#define HOC_EPOCH_SHIFT 48
/* Pools of earlier sessions kept mapped after reconnects (connect.c): one
 * that replays staged on it still need (their host copies are copied to
 * the new session when they re-stage) stays intact, the others are
 * replaced by anonymous memory; past this many the oldest is unmapped. */
#define HOC_OLD_POOLS 4u

#endif
