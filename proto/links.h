/*
 * proto/links.h - the link region: how the host backend emulates the
 * node's links (NODE.md §3 rule 2) across processes (docs/runtime.md
 * "Link pacing").
 *
 * The daemon creates it once at startup from its node description
 * (daemon/links.c): a sealed memfd holding, per device and direction, the
 * route of a copy (the device's own capacity, then every link up to the
 * root), and a table of copy slots.  It passes the descriptor with every
 * RegisterReply (LinkRegion).  A client's host-backend copy thread claims
 * a slot for each copy it runs (its route and weight), computes its rate
 * locally -- the weighted max-min fair allocation over every active
 * slot's route, by progressive filling (ho_links_rate, in the client) --
 * paces its memcpy to that rate, recomputing whenever the region's `seq`
 * moves, and frees the slot when the copy completes.  No socket round
 * trip: the only shared state is this region, accessed with C11 atomics.
 *
 * Capacities are normalised: each is 1, and a hop's `coef` is the part
 * of it one byte/µs of the copy uses (1 / the figure in bytes/µs; a
 * capacity shared by both directions, `duplex: false`, has one coef per
 * direction, as the node judge counts it).  Who writes what:
 *   daemon:  everything before the slots, once, before sealing; a slot's
 *            state back to FREE when its owner's session is gone;
 *   clients: their slots (state, route, weight, owner), seq.
 * The daemon never trusts the slots: it only frees those whose owner is
 * gone.  A client that corrupts the region harms only the pacing of
 * emulated copies (a real device paces itself).
 */
#ifndef HO_PROTO_LINKS_H
#define HO_PROTO_LINKS_H

#include <stdatomic.h>
#include <stdint.h>

#include "proto/proto_limits.h" /* HO_LINKS_MAX_* */

#define HO_LINKS_MAGIC 0x31304b4e4c304f48ull /* "HO0LNK01" little-endian */
#define HO_LINKS_VERSION 1u

/* Slot states. */
enum ho_links_slot_state {
    HO_LINKS_FREE = 0,
    HO_LINKS_CLAIMED = 1,  /* a client is filling it in */
    HO_LINKS_ACTIVE = 2,   /* a copy moving bytes on `route` */
};

typedef struct ho_links_hop {
    uint32_t cap;          /* capacity index < n_caps */
    uint32_t pad;
    double coef;           /* capacity used per byte/µs */
} ho_links_hop;

/* The route of one (device, direction): route index device * 2 + dir
 * (dir 0 H2D, 1 D2H). */
typedef struct ho_links_route {
    uint32_t n_hops;       /* <= HO_LINKS_MAX_HOPS */
    uint32_t pad;
    double latency_us;     /* the device's copy latency */
    double alone_rate;     /* bytes/µs of a copy alone on it */
    ho_links_hop hop[HO_LINKS_MAX_HOPS];
} ho_links_route;

typedef struct ho_links_slot {
    _Atomic uint32_t state;     /* enum ho_links_slot_state */
    _Atomic uint32_t route;     /* route index */
    _Atomic uint64_t weight;    /* the double's bits (weight > 0) */
    _Atomic uint64_t owner;     /* session id of the claimer */
} ho_links_slot;

typedef struct ho_links_header {
    /* immutable layout, written by the daemon before sealing */
    uint64_t magic;
    uint32_t version;
    uint32_t n_caps;       /* <= HO_LINKS_MAX_CAPS */
    uint32_t n_routes;     /* 2 x devices, <= 2 x HO_LINKS_MAX_DEVICES */
    uint32_t n_slots;      /* <= HO_LINKS_MAX_SLOTS */
    uint64_t routes_off;   /* offset of ho_links_route[n_routes] */
    uint64_t slots_off;    /* offset of ho_links_slot[n_slots] */
    uint64_t size;         /* bytes of the region */
    /* shared: bumped after every slot change (claims and frees) */
    _Alignas(64) _Atomic uint64_t seq;
} ho_links_header;

static inline ho_links_route *ho_links_routes(ho_links_header *h)
{
    return (ho_links_route *)(void *)((char *)h + h->routes_off);
}

static inline ho_links_slot *ho_links_slots(ho_links_header *h)
{
    return (ho_links_slot *)(void *)((char *)h + h->slots_off);
}

#endif
