/*
 * daemon/srv_limits.h - every fixed bound and size of hyperoffloadd, in one
 * place, each with the reason for its number.
 *
 * Bounds an administrator may change are settings (daemon/config.c rows,
 * with their own ranges); what is here is compiled in.  The bounds of the
 * wire (frame sizes, control region) are proto/proto_limits.h's, the socket
 * path's HO_SOCKET_PATH_MAX (hyperoffload/paths.h); they are used, not
 * repeated, here.  A bound on
 * something a client controls exists so that a misbehaving client fails
 * with a clear error instead of exhausting the daemon (docs/admin.md,
 * "Limits", lists the ones a user meets).
 */
#ifndef HO_DAEMON_LIMITS_H
#define HO_DAEMON_LIMITS_H

/* ------------------------------------------------------------ errors */

/* Bytes of an error sentence buffer (`char err[SRV_ERR_MAX]`, the one
 * error-buffer style of the daemon, daemon/state.h): room for the longest
 * sentence the daemon writes (a quota refusal naming a 128-byte job and
 * three sizes) with margin. */
#define SRV_ERR_MAX 512

/* ------------------------------------------------------------ names */

/* Bytes of a client name (Hello / RegisterRequest client_name): a label
 * for `hoctl clients`, as long as a job name. */
#define SRV_MAX_NAME 128
/* Bytes of a job name (without NUL): room for a scheduler's job id plus a
 * rank suffix; also the quota file's field. */
#define SRV_JOB_MAX 128
/* Bytes of a device name including the NUL (tier_hbm_device.name is the
 * same size): "npu0"-style names with room to spare. */
#define SRV_DEVICE_NAME 32
/* Bytes of a planner name including the NUL: the longest built-in name
 * ("reactive-lru") with room; plan cache keys and plan memos store it. */
#define SRV_PLANNER_NAME_MAX 32

/* ------------------------------------------------------------ config */

/* Flash files: one per device of a node, with room (each is a tier file
 * with its own allocator; the list is scanned on every spill). */
#define SRV_MAX_FLASH 16
/* Devices whose HBM is budgeted: above any node's accelerator count. */
#define SRV_MAX_DEVICES 64
/* [link NAME] sections of the node description (daemon/topology.h): a
 * node has a root and a few switches per socket; sysfs discovery adds one
 * per PCIe switch with a CUDA device below it. */
#define SRV_MAX_LINKS 64
/* Bytes of a link name including the NUL ("switch-0000:85:00.0" fits). */
#define SRV_LINK_NAME 48
/* Link figures in GB/s (10^9 bytes/s), as the node description's. */
#define SRV_MAX_GBPS 1e6
/* Bytes of a config file: a real one is a few KiB (every setting with its
 * comment is under 8 KiB); bounds what a typo in --config (a disk image, a
 * log) can make the daemon read and hold, and how long a SIGHUP reload,
 * which reads on the event loop, can keep it (1 MiB parses in a few ms).
 * Only regular files are read at all (daemon/config.h). */
#define SRV_MAX_CONFIG_FILE (1u << 20)
/* Bytes of one config line: a flash list of 16 long paths fits. */
#define SRV_MAX_CONFIG_LINE 4096
/* Setting flags on one command line: every setting a few times over. */
#define SRV_CMDLINE_SETTINGS_MAX 128

/* ------------------------------------------------------------ state */

/* The lock file in the state directory: flock'ed exclusively by the
 * running daemon and holding its pid, so that a second daemon on the same
 * state directory refuses to start and names the first (daemon/dirs.h). */
#define SRV_STATE_LOCK_NAME "hyperoffloadd.lock"

/* ------------------------------------------------------------ quotas */

/* Entries of the quota store: a uid and a job limit per tier for over a
 * thousand subjects; every check scans the list. */
#define SRV_QUOTA_MAX_ENTRIES 4096

/* ------------------------------------------------------------ connections */

/* Bytes of the read buffer all connections share (loop thread): one
 * syscall reads several small frames; larger frames take several reads. */
#define SRV_READ_BUF (64u << 10)
/* Frames of at least this many bytes are decoded on a worker (and a
 * PlanRequest's trace read and hashed there), the connection paused
 * meanwhile so its requests stay in order: a 256 KiB envelope decodes in
 * well under a millisecond on the loop, a trace of 10^5-10^6 ops takes
 * 0.1-2 s, which every other client would wait out.  What the handler
 * leaves of it (the decoded envelope, the reader's trace) is freed on a
 * worker as well: millions of allocations, 0.1-1 s of free(). */
#define SRV_OFFLOOP_FRAME (256u << 10)
/* Bytes by which the peers' buffers (queued output, partial frames) must
 * have shrunk from their peak for the sweep to hand freed heap back to
 * the system (malloc_trim): an attack's peak does not stay in the RSS,
 * and ordinary traffic does not pay for trims. */
#define SRV_TRIM_MIN (4ull << 20)
/* Bytes of freed flash ranges the sweep discards (punches out) at most
 * per sweep, all flash files together, starting with the next file each
 * time ([flash] discard_delay): a punch of 64 MiB takes some 15-20 ms of
 * the loop on ext4, so a burst of frees is spread out rather than
 * stalling every client at once, however many files there are.  It stays
 * on the loop: the freed ranges are back in the allocator at release, and
 * a worker punching one that a spill was just given would destroy the
 * spill's data; a range is re-allocated, and forgotten by the discard
 * list, on the loop only. */
#define SRV_DISCARD_PER_SWEEP (64ull << 20)
/* Period of the sweep that enforces handshake_timeout, read_timeout and
 * idle_timeout (settings in seconds: a second's resolution is enough). */
#define SRV_SWEEP_MS 1000
/* A closing connection gets this long to read its last replies (the
 * final Error of a fatal protocol error, say) before it is closed. */
#define SRV_FLUSH_TIMEOUT_MS 5000
/* Period of the flush check while a closing connection drains. */
#define SRV_FLUSH_POLL_MS 50
/* Retry delay when sendmsg of a descriptor frame would block: short, the
 * peer is reading. */
#define SRV_FD_RETRY_MS 2
/* Descriptors passed with one frame: StageReply passes two (control
 * region, eventfd), RegisterReply one (the arena). */
#define SRV_SEND_FDS_MAX 4
/* Descriptors.  The daemon raises its soft RLIMIT_NOFILE to the hard
 * limit at start and rations what it has (server.c): a new non-admin
 * connection is refused with a reason while fewer than SRV_FD_PER_SESSION
 * + SRV_FD_ADMIN_RESERVE + SRV_FD_DAEMON_RESERVE descriptors are left, an
 * admin one while fewer than 1 + SRV_FD_DAEMON_RESERVE are, so that root's
 * `hoctl status` still answers when users have taken the rest, and the
 * daemon's own work (flash I/O, reloads, quota writes, descriptors dup'ed
 * for replies) never meets EMFILE.
 * A session holds up to four: its socket, its arena's memfd, a replay's
 * control region and eventfd. */
#define SRV_FD_PER_SESSION 4
/* Admin connections only: a status or quota call needs one each. */
#define SRV_FD_ADMIN_RESERVE 16
/* The daemon's own: worker jobs, SIGHUP reading the config, the quota
 * file, the journal, the descriptors queued frames carry. */
#define SRV_FD_DAEMON_RESERVE 32
/* Connections accepted per wake-up of the listener: a burst of clients
 * does not hold up replies to the connected ones. */
#define SRV_ACCEPT_BATCH 64
/* Pause of accept when out of descriptors and the spare one could not be
 * had back (accept would fail at once again: no busy loop). */
#define SRV_ACCEPT_PAUSE_MS 100
/* At most one log line per this many ms, per reason, for connections
 * refused a slot (max_connections, max_connections_per_uid,
 * admin_reserve); the line
 * counts those left unlogged since the previous one: a flood of refused
 * peers does not flood the journal. */
#define SRV_SLOT_LOG_MS 10000
/* Supplementary groups of a peer looked at for admin membership; a user
 * in more groups is judged by the first ones (getgrouplist order). */
#define SRV_PEER_GROUPS_MAX 256
/* Bytes of the getpwuid_r / getgrnam_r buffer: a large group's member
 * list fits. */
#define SRV_PWBUF_BYTES 16384

/* ------------------------------------------------------------ moves */

/* Worker parts of one move: enough flash requests in flight to fill an
 * NVMe queue's throughput, and page work of one part overlapping the I/O
 * of the others; more only contend on the device. */
#define SRV_MOVE_PARTS_MAX 4
/* A move's chunk: a multiple of any O_DIRECT alignment, large enough that
 * per-request cost vanishes, small enough that a spill drops pages while
 * other chunks are still written. */
#define SRV_MOVE_CHUNK (16ull << 20)
/* Extents at least this large drop their pages on a worker when freed:
 * munlock + punch of a large range costs tens of milliseconds, too long
 * for the loop; smaller ones are cheaper than a worker round trip. */
#define SRV_ASYNC_RELEASE_MIN (1ull << 20)
/* A busy period of a flash direction moving at least this much updates
 * the bandwidth average (smaller periods measure latency, not bandwidth). */
#define SRV_METER_MIN_BYTES (4ull << 20)
/* Flash bandwidth assumed before any move was observed (GB/s): a modest
 * NVMe drive, so early staging plans are not over-optimistic. */
#define SRV_FLASH_READ_GBPS 1.0
#define SRV_FLASH_WRITE_GBPS 1.5

/* ------------------------------------------------------------ planning */

/* Plans queued or running per session: a client pipelines a few budgets;
 * more is a loop. */
#define SRV_PLAN_MAX_INFLIGHT 4
/* Plans on worker threads at once: flash moves share the thread pool and
 * must always find free workers (UV_THREADPOOL_SIZE is 8). */
#define SRV_PLAN_RUNNING 2
/* Plans waiting for a worker, all sessions: bounds the queue's memory
 * (each holds its trace). */
#define SRV_PLAN_QUEUE 256
/* Ops of all the traces one node arbitration (daemon/arbitrate.c) plans
 * and judges together: its worker holds every trace, the candidates'
 * schedules and the judge's state at once (tens of MB at this size), so a
 * larger node workload is not re-planned (logged) and admission queries
 * over it are refused (HO_E_TOO_LARGE). */
#define SRV_ARB_MAX_OPS 65536u

/* ------------------------------------------------------------ replays */

/* Moves in flight per replay: enough to overlap a spill with fills,
 * without one replay taking every worker. */
#define SRV_STAGE_MOVES_MAX 3
/* Re-check period while staging work waits (room, a move slot). */
#define SRV_STAGE_TIMER_MS 5
/* Flash request latency the staging planner assumes (us). */
#define SRV_STAGE_FLASH_LATENCY_US 1000.0
/* A staging plan is made again when its session's flash share moved by
 * more than this fraction of itself (staging.c, flash_share). */
#define SRV_STAGE_SHARE_SLACK 0.10
/* Fills are started up to this long (nominal) ahead of the plan when the
 * DDR limit allows. */
#define SRV_STAGE_LOOKAHEAD_US 5000.0
/* Events looked at per lookahead pass: bounds the loop's work per
 * wake-up. */
#define SRV_STAGE_LOOKAHEAD_EVENTS 256

/* ------------------------------------------------------------ metrics */

/* Jobs whose ended sessions' totals are kept for the metrics (a job is a
 * label value: more would be unbounded cardinality); the totals of later
 * jobs add up under one overflow row (counters.h). */
#define SRV_METRICS_JOBS_MAX 256
/* errno values counted one by one in the error counters (Linux's are
 * below 134); larger ones count as one "other" row. */
#define SRV_METRICS_ERRNO_MAX 134
/* Textfile write period bounds (seconds): node_exporter's scrape is
 * typically 15 s; an hour is as rare as still makes sense. */
#define SRV_METRICS_INTERVAL_MAX 3600

/* ------------------------------------------------------------ process */

/* libuv worker threads (UV_THREADPOOL_SIZE, unless the environment sets
 * it): more than libuv's default of 4 keeps moves flowing while plans run
 * (SRV_PLAN_RUNNING of them). */
#define SRV_UV_THREADS "8"
/* ------------------------------------------------------------ residency */

/* Prefix store (pstore.c): key bytes (= HO_RES_KEY_MAX), one entry's
 * bytes, the share of the DDR pool one job's store may hold (1/4), the
 * TTL of an unreferenced entry (default / most a client may ask), the map
 * references held at once over all sessions. */
#define SRV_PSTORE_KEY_MAX 128
#define SRV_PSTORE_ENTRY_MAX (256ull << 20)
#define SRV_PSTORE_SHARE 4u
#define SRV_PSTORE_TTL_MS 30000u
#define SRV_PSTORE_TTL_MAX_MS 3600000u
#define SRV_PSTORE_MAPS_MAX 65536u
/* Regions one session may register (residency.c). */
#define SRV_REGIONS_PER_SESSION 16u

/* STATUS= line refresh under systemd. */
#define SRV_STATUS_PERIOD_MS 2000

#endif
