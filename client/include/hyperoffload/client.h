/*
 * hyperoffload/client.h - libhyperoffload, the client library of the
 * HyperOffload node memory-tiering daemon (hyperoffloadd).
 *
 * A client connects to the daemon's Unix socket (ho_connect), optionally
 * registers a session (ho_register: job, device, HBM budget), which maps the
 * session's DDR arena into this process, and then allocates extents in the
 * pool (ho_extent_alloc), writes and reads them through ordinary pointers,
 * spills them to flash and fills them back (ho_extent_spill/fill), and
 * reads tier statistics (ho_stats).  The wire protocol is docs/protocol.md.
 *
 * Errors: every fallible function returns 0 (or a documented non-negative
 * value) on success and a negative code on failure: a negative errno value
 * or one of the HO_E_* codes of hyperoffload/errors.h.  ho_strerror() and
 * ho_err_name() describe any code; ho_last_error() returns the sentence
 * that came with the last failure (the daemon's Error message, or the
 * library's own description of a local failure).  The library never logs
 * and never raises SIGPIPE (it writes with MSG_NOSIGNAL).
 *
 * A lost daemon (crash, restart, SIGKILL) makes the call that notices it
 * and every later call on that client return HO_E_DISCONNECTED.  The pool
 * mapping of a registered client stays mapped until ho_close() (touching
 * it does not fault), but its contents are not preserved: a daemon that
 * drops a connection frees that session's extents.  Reconnect with a new
 * ho_connect(), or let the library do it (ho_set_reconnect).
 *
 * Thread safety: one ho_client may be used from several threads at once.
 * Requests from different threads are in flight together on the one
 * connection; each thread waits for its own reply, matched by request id
 * (one of the waiting threads reads the socket for all of them).  Events
 * pushed by the daemon (request id 0) are consumed by whichever thread is
 * reading.  ho_close() must not run concurrently with any other call on the
 * same client.  Different clients are independent.  After fork() the child
 * must not use a client created by the parent (it may ho_close() it).
 *
 * Ownership: an ho_client is owned by the caller of ho_connect() and
 * released with ho_close().  Extent memory is owned by the daemon and stays
 * valid (in the client's mapping) until ho_extent_free() or ho_close().
 * Strings returned by accessors are owned by the client and live until
 * ho_close().
 *
 * This header is C (C99 or later) and C++ compatible.
 */
#ifndef HYPEROFFLOAD_CLIENT_H
#define HYPEROFFLOAD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "hyperoffload/errors.h"
#include "hyperoffload/paths.h"
#include "hyperoffload/size.h"
#include "hyperoffload/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HO_CLIENT_VERSION_MAJOR HO_VERSION_MAJOR
#define HO_CLIENT_VERSION_MINOR HO_VERSION_MINOR
#define HO_CLIENT_VERSION_PATCH HO_VERSION_PATCH

/* Limits the library enforces on what the daemon sends. */
#define HO_CLIENT_MAX_POOL_MAP (1ull << 44)  /* 16 TiB arena mapping */
#define HO_CLIENT_MAX_NAME 255               /* client/job name bytes */

typedef struct ho_client ho_client;

/* Where an extent lives (values equal the protocol's Tier enum). */
typedef enum ho_tier {
    HO_TIER_NONE = 0,
    HO_TIER_DDR = 1,
    HO_TIER_FLASH = 2,
    HO_TIER_HBM = 3
} ho_tier;

/* An extent of the DDR pool, as returned by ho_extent_alloc().  `ptr` is
 * the extent's first byte in this process's mapping of the arena
 * (ho_pool_base() + offset); it may be read and written while the extent is
 * in DDR and must not be touched while it is spilled. */
typedef struct ho_extent {
    uint64_t id;        /* daemon's extent id, unique per session */
    uint64_t arena_id;  /* arena the extent lives in */
    uint64_t offset;    /* offset in the arena mapping */
    uint64_t length;    /* bytes reserved: request rounded up to alignment */
    void *ptr;          /* ho_pool_base() + offset */
} ho_extent;

/* Outcome of a spill or fill (MoveReply). */
typedef struct ho_move_result {
    ho_tier residency;  /* where the extent lives now */
    uint64_t bytes;     /* bytes moved */
    double duration_us; /* I/O time on the daemon's worker thread */
} ho_move_result;

/* One tier of the node (TierStats). */
typedef struct ho_tier_stats {
    ho_tier tier;
    char name[128];        /* "ddr", "flash:/path", ... (truncated) */
    uint64_t capacity;
    uint64_t used;
    uint64_t free;
    uint64_t largest_free;
    double fragmentation;  /* 1 - largest_free/free, 0 when free == 0 */
    uint64_t extents;      /* live allocations */
    uint64_t committed;    /* DDR: bytes of arena files; flash: file size */
    char detail[160];      /* "mlocked, numa node 0", "O_DIRECT", ... */
} ho_tier_stats;

/* The calling session's own usage (SessionUsage). */
typedef struct ho_usage {
    uint64_t ddr_bytes;
    uint64_t flash_bytes;
    uint64_t extents;
    uint64_t hbm_granted;
} ho_usage;

/* ------------------------------------------------------------- library */

/* The library's version, "0.1.0".  Static string, never NULL. */
HO_EXPORT const char *ho_version(void);

/* ------------------------------------------------------------- connection */

/* Resolve the daemon's socket path into buf[0..len):
 *   1. `explicit_path` when it is non-NULL and non-empty;
 *   2. else the environment variable HO_SOCKET when set and non-empty;
 *   3. else HO_SOCKET_LOCAL ("./.hyperoffload/hyperoffloadd.sock") when a
 *      file exists at that path (relative to the current directory);
 *   4. else HO_SOCKET_SYSTEM ("/run/hyperoffload/hyperoffloadd.sock").
 * Returns 0, -EINVAL when buf is NULL or len is 0, or -ENAMETOOLONG when
 * the chosen path is longer than HO_SOCKET_PATH_MAX or does not fit in len
 * (buf is then left as an empty string).  Allocates nothing. */
HO_EXPORT int ho_socket_path(const char *explicit_path, char *buf,
                             size_t len);

/* Connect to the daemon at `socket_path` (resolved with ho_socket_path(),
 * so NULL picks the default) and perform the handshake: send Hello
 * (protocol versions [1, 1], `client_name` (NULL: "libhyperoffload"; at
 * most HO_CLIENT_MAX_NAME bytes, else HO_E_INVALID_SIZE), this pid) and
 * wait for Welcome.  Until Welcome, replies are limited to 64 KiB; after,
 * to the Welcome's max_frame (clamped to [64 KiB, 1 GiB]).
 * On success *ret_client is a new client owned by the caller (free it
 * with ho_close()).  On failure *ret_client is untouched, nothing is left
 * allocated, and the code is: -ENOENT / -ECONNREFUSED / -EACCES / other
 * -errno from socket(2)/connect(2); -ENAMETOOLONG; HO_E_VERSION (no
 * common protocol version); HO_E_PROTOCOL (daemon sent something else than
 * Welcome or garbage); HO_E_DISCONNECTED (daemon closed the connection);
 * the code of an Error reply (also when the daemon refuses the connection
 * with an Error and closes it, e.g. -EAGAIN at its connection limit);
 * -ENOMEM.  ho_last_error(NULL, ...) gives the sentence of the calling
 * thread's last failed ho_connect ("" when it failed before any reply). */
HO_EXPORT int ho_connect(const char *socket_path, const char *client_name,
                         ho_client **ret_client);

/* Close the connection (the daemon drops the session and frees all of its
 * extents), unmap the pool, and free the client.  Accepts NULL.  Returns
 * NULL.  Must not be called while another thread uses the client. */
HO_EXPORT ho_client *ho_close(ho_client *c);

/* Facts from the Welcome; valid until ho_close(). */
HO_EXPORT uint64_t ho_connection_id(const ho_client *c);
HO_EXPORT uint32_t ho_protocol_version(const ho_client *c);
HO_EXPORT const char *ho_server_version(const ho_client *c); /* "0.1.0" */
HO_EXPORT uint32_t ho_max_frame(const ho_client *c);         /* bytes */
/* 1 when the daemon treats this peer as admin (root or group
 * hyperoffload), else 0. */
HO_EXPORT int ho_is_admin(const ho_client *c);
/* Identity the daemon saw (SO_PEERCRED); any pointer may be NULL. */
HO_EXPORT void ho_peer_identity(const ho_client *c, uint32_t *ret_uid,
                                uint32_t *ret_gid, uint32_t *ret_pid);
/* The i-th capability announced by the daemon ("ddr", "flash", "hbm",
 * "plan", "admin", ...), or NULL when i is past the end. */
HO_EXPORT const char *ho_capability(const ho_client *c, size_t i);
/* 1 when the daemon announced capability `name`, else 0. */
HO_EXPORT int ho_has_capability(const ho_client *c, const char *name);
/* The socket path this client connected to. */
HO_EXPORT const char *ho_socket(const ho_client *c);
/* 1 once the daemon announced it is draining (EVENT_SHUTTING_DOWN was
 * received), else 0. */
HO_EXPORT int ho_shutting_down(const ho_client *c);

/* Copy the sentence that came with the last failed call on this client
 * (the daemon's Error message, or a library description of a local
 * failure such as a disconnection) into buf[0..len), NUL-terminated and
 * truncated as needed; "" when nothing failed yet.  With several threads
 * the sentence belongs to whichever call failed last.  c NULL: the
 * calling thread's last failed ho_connect.  When the daemon closes the
 * connection after an Error (request id 0), the failing call returns that
 * Error's code and this its sentence.  Returns buf (or "" when buf is NULL
 * or len is 0). */
HO_EXPORT const char *ho_last_error(ho_client *c, char *buf, size_t len);

/* Reconnect, opt-in (off by default: max_attempts 0).  With it on, a call
 * that finds the connection lost (HO_E_DISCONNECTED, the daemon gone or
 * restarted) connects again: up to max_attempts attempts, waiting 50 ms
 * after the first failed one, doubling up to max_wait_ms; then the
 * handshake and, for a registered client, ho_register with the same job,
 * device and budget: a NEW, empty session, whose pool is mapped at a new
 * address (ho_pool_base changes; the old range reads as zeros once no
 * replay staged on it still needs it, see below).  The call
 * itself is then sent again when it means the same on the new session
 * (alloc, stats, plan, admin requests) and returns its result; one that
 * needed the old session (free, spill or fill of an extent, a replay, a
 * registration) returns HO_E_DISCONNECTED with a sentence saying so, as
 * does every later free / spill / fill of an extent from before.  When
 * every attempt fails the call returns HO_E_DISCONNECTED and the next
 * call tries again.  A reconnect runs while no other request is in
 * flight on the client; calls of other threads during it return
 * HO_E_DISCONNECTED.  Installed replays (hyperoffload/runtime.h) are
 * staged again on the new session at their next step
 * (ho_replay_restages): the old pool stays mapped, intact, until each of
 * them has carried its host copies over or was freed. */
HO_EXPORT void ho_set_reconnect(ho_client *c, unsigned max_attempts,
                                unsigned max_wait_ms);
/* Reconnects done so far on this client (ho_set_reconnect). */
HO_EXPORT unsigned ho_reconnects(const ho_client *c);

/* ------------------------------------------------------------- session */

/* Register this connection as a client session (RegisterRequest).
 *   job: ranks of one job of one uid share an arena and can map each
 *        other's extents; NULL or "" gives the session an arena of its
 *        own.  At most HO_CLIENT_MAX_NAME bytes (HO_E_INVALID_SIZE).
 *   device: accelerator index, -1 for none.
 *   hbm_budget: bytes of HBM requested on `device`, 0 for no grant.
 * On success the session's arena memfd (received with SCM_RIGHTS) is
 * mapped MAP_SHARED once (ho_pool_base/ho_pool_size) and the descriptor is
 * closed.  Errors: HO_E_ALREADY (already registered, or a registration is
 * in progress on another thread); the daemon's HO_E_UNKNOWN_DEVICE,
 * HO_E_BUDGET, HO_E_QUOTA...; HO_E_PROTOCOL when the reply lacks the arena
 * or its descriptor, or the map size is 0, unaligned or above
 * HO_CLIENT_MAX_POOL_MAP; -errno from mmap(2).  When the mapping fails
 * after the daemon accepted the session, the connection is closed (the
 * daemon drops the session) and later calls return HO_E_DISCONNECTED. */
HO_EXPORT int ho_register(ho_client *c, const char *job, int device,
                          uint64_t hbm_budget);

/* Node arbitration options sent by the next ho_register()
 * (docs/node.md "Re-planning and admission"): weight on contended links
 * (0: 1), max_slowdown (0: none, else >= 1), sync: a rank of a
 * synchronous job (the sessions of its job start every step together).
 * 0 or -EINVAL. */
HO_EXPORT int ho_set_node_options(ho_client *c, double weight,
                                  double max_slowdown, int sync);

/* The session id, or 0 before a successful ho_register(). */
HO_EXPORT uint64_t ho_session_id(const ho_client *c);
/* HBM granted at registration (bytes), 0 when none / not registered. */
HO_EXPORT uint64_t ho_hbm_granted(const ho_client *c);
/* Device index of the session, -1 when none / not registered. */
HO_EXPORT int ho_session_device(const ho_client *c);
/* The mapped arena: base address, mapped size, arena id and extent
 * alignment; NULL / 0 before registration. */
HO_EXPORT void *ho_pool_base(const ho_client *c);
HO_EXPORT uint64_t ho_pool_size(const ho_client *c);
HO_EXPORT uint64_t ho_pool_arena_id(const ho_client *c);
HO_EXPORT uint64_t ho_pool_alignment(const ho_client *c);

/* ------------------------------------------------------------- extents */

/* Allocate `bytes` of DDR in the session's arena (AllocRequest).  On
 * success fills *ret_extent (ptr points into this process's mapping; the
 * memory reads as zeros on first use).  Errors (the daemon's):
 * HO_E_INVALID_SIZE (0), HO_E_TOO_LARGE (above the pool capacity),
 * HO_E_QUOTA, HO_E_TIER_FULL, HO_E_NOT_REGISTERED; HO_E_PROTOCOL when the
 * reply names another arena or a range outside the mapping (the extent is
 * then freed again).  *ret_extent is untouched on failure. */
HO_EXPORT int ho_extent_alloc(ho_client *c, uint64_t bytes,
                              ho_extent *ret_extent);

/* Free an extent (FreeRequest).  HO_E_UNKNOWN_EXTENT when this session
 * does not own `extent_id`, HO_E_BUSY while a move of it is in flight. */
HO_EXPORT int ho_extent_free(ho_client *c, uint64_t extent_id);

/* Spill an extent from DDR to flash and wait until the data is written
 * (MoveRequest MOVE_SPILL).  The range must not be touched until it is
 * filled back.  `ret` (may be NULL) receives the outcome.  Errors:
 * HO_E_UNKNOWN_EXTENT, HO_E_STATE (not in DDR), HO_E_BUSY, HO_E_TIER_FULL,
 * HO_E_QUOTA, -EIO / -ENOSPC (the extent stays in DDR, unchanged). */
HO_EXPORT int ho_extent_spill(ho_client *c, uint64_t extent_id,
                              ho_move_result *ret);

/* Fill a spilled extent back into DDR at the same offset and wait until
 * the bytes are in place (MoveRequest MOVE_FILL); afterwards they are
 * exactly those spilled.  Errors: HO_E_UNKNOWN_EXTENT, HO_E_STATE (not on
 * flash), HO_E_BUSY, HO_E_TIER_FULL, HO_E_QUOTA, -EIO. */
HO_EXPORT int ho_extent_fill(ho_client *c, uint64_t extent_id,
                             ho_move_result *ret);

/* ------------------------------------------------------------- statistics */

/* Read tier statistics (StatsRequest; any peer, registered or not).
 * Copies up to `max_tiers` tiers into `tiers` (may be NULL when max_tiers
 * is 0) and sets *ret_ntiers (may be NULL) to the number of tiers the
 * daemon reported (which may exceed max_tiers).  *ret_usage (may be NULL)
 * receives the session's own usage (zeros when not registered).
 * Outputs are untouched on failure. */
HO_EXPORT int ho_stats(ho_client *c, ho_tier_stats *tiers, size_t max_tiers,
                       size_t *ret_ntiers, ho_usage *ret_usage);

/* Name of a tier: "none", "ddr", "flash", "hbm"; "unknown" otherwise. */
HO_EXPORT const char *ho_tier_name(ho_tier t);

#ifdef __cplusplus
}
#endif
#endif
