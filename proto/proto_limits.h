/*
 * proto/proto_limits.h - every bound the wire protocol and the control region
 * put on a size, in one place.  Both ends check them before they allocate
 * or index anything a peer sent: the daemon (daemon/server.c,
 * daemon/staging.c) and the client library (client/transport.c,
 * client/connect.c, client/runtime/).  docs/protocol.md lists them for
 * users.  Each line says why it is that number.
 *
 * Bounds that are part of the public API live in the public headers and
 * are not repeated here: HO_SOCKET_PATH_MAX (hyperoffload/paths.h: what
 * sockaddr_un holds), HO_CLIENT_MAX_NAME and HO_CLIENT_MAX_POOL_MAP
 * (hyperoffload/client.h: the Hello/Register names and the arena mapping a
 * client accepts), HO_STEP_HISTORY and HO_COPY_LOG_MAX
 * (hyperoffload/runtime.h).  The library's own bounds are in
 * client/client_limits.h, the tiers' in tiers/tier_limits.h, the planner's in
 * planner/plan_limits.h.
 */
#ifndef HO_PROTO_LIMITS_H
#define HO_PROTO_LIMITS_H

/* ---- frames (proto/frame.h) ---- */

/* Largest payload either side accepts before Welcome: Hello and Welcome
 * are a few hundred bytes (a name of at most HO_CLIENT_MAX_NAME bytes,
 * capabilities), so 64 KiB is ample and bounds what a peer that has not
 * even shaken hands can make the other side allocate. */
#define HO_FRAME_LIMIT_HANDSHAKE (64u * 1024u)
/* max_frame after Welcome unless configured: a PlanRequest carries a
 * whole trace as protobuf, ~80 bytes an op (llama3-70b training step:
 * 2172 ops in 172 KB), so 64 MiB carries ~800k ops while one connection's
 * read buffer stays small. */
#define HO_FRAME_LIMIT_DEFAULT (64u << 20)
/* The configured max_frame's upper bound, and the largest frame
 * ho_frame_encode writes: 1 GiB (~13 M ops of trace) is a quarter of what
 * the 4-byte length header can announce, so no length arithmetic near it
 * overflows a uint32. */
#define HO_FRAME_LIMIT_MAX (1u << 30)
/* First allocation for an incoming frame's payload; the buffer then grows
 * (doubling) as bytes arrive, never on the announced length alone, so a
 * peer that announces a large frame and sends little holds little. */
#define HO_FRAME_READ_FIRST (64u * 1024u)

/* ---- control region (proto/control.h) ---- */

/* Host copies (slots) of one replay: 4 M slots of 48 bytes is a 192 MiB
 * region, a quarter of PLAN_MAX_STORAGES and far above any real step
 * (llama3-70b training: 5.6 k storages). */
#define HO_CTL_MAX_SLOTS (1u << 22)
/* Ops per step of a replay: the planner's PLAN_MAX_OPS, so that any trace
 * the planner accepts can be replayed; the milestone bitmap is then at
 * most 4 MiB. */
#define HO_CTL_MAX_OPS (1u << 25)

/* ---- link region (proto/links.h) ---- */

/* Devices of the region: the daemon's SRV_MAX_DEVICES with room. */
#define HO_LINKS_MAX_DEVICES 256u
/* Hops of one route: the device's own capacity plus at most 32 links up
 * to the root (the planner's PLAN_NODE_MAX_DEPTH) plus the root. */
#define HO_LINKS_MAX_HOPS 34u
/* Capacities: two per link and per device (one per direction). */
#define HO_LINKS_MAX_CAPS 2048u
/* Copies in flight node-wide: each engine runs one at a time, a few
 * engines per client, tens of clients. */
#define HO_LINKS_MAX_SLOTS 1024u
/* The largest region: 512 routes of 568 bytes + 1024 slots of 24 bytes
 * + the header, rounded; a client refuses a map size above it. */
#define HO_LINKS_MAX_MAP (1u << 20)

#endif
