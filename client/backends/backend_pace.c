/*
 * client/backends/backend_pace.c - link pacing for the host backend
 * (proto/links.h, docs/runtime.md "Link pacing").
 *
 * A session registered on device D attaches the daemon's link region for
 * D (hob_pace_attach, from ho_register); the host backend's copy threads
 * of device D then run every copy through hob_paced_copy: claim a slot
 * (route, weight), compute the copy's rate -- the weighted max-min fair
 * allocation over every active slot's route, by progressive filling, as
 * the node judge does (NODE.md §3 rule 2) -- and memcpy in chunks, each
 * ending no earlier than the rate allows (absolute deadlines, so sleeping
 * late never accumulates).  The rate is recomputed whenever the region's
 * seq moved (a copy anywhere on the node started or ended).  Without a
 * region for the device a copy is a plain memcpy.
 *
 * Lifetime: the registry holds one pacer per device index; a copy takes
 * a reference (users) while it runs, and detaching waits for the users to
 * leave before unmapping, so a copy never touches an unmapped region.
 */
#include "client/backends/backend.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"
#include "proto/links.h"

typedef struct hob_pacer {
    ho_links_header *h;    /* this process's mapping */
    uint64_t size;
    uint32_t node_device;  /* route index base / 2 */
    _Atomic uint64_t weight; /* the double's bits: the next copies' */
    uint64_t owner;        /* session id */
    uint64_t token;        /* unique per attach (an address may recur) */
    _Atomic uint32_t users;
} hob_pacer;

static _Atomic(hob_pacer *) pacers[HOB_PACE_MAX_DEVICES];
static _Atomic uint64_t next_token = 1;

/* ----------------------------------------------------------- the region */

/* The region as the daemon wrote it: layout inside its size, every route
 * within bounds. */
static int check_region(const ho_links_header *h, uint64_t size,
                        uint32_t node_device, char *err, size_t errlen)
{
    if (size < sizeof(*h) || h->magic != HO_LINKS_MAGIC ||
        h->version != HO_LINKS_VERSION || h->size != size)
        return ho_errf(err, errlen, HO_E_PROTOCOL, "link region: bad header "
                       "(magic, version or size)");
    if (h->n_caps == 0 || h->n_caps > HO_LINKS_MAX_CAPS ||
        h->n_routes > 2 * HO_LINKS_MAX_DEVICES ||
        h->n_slots == 0 || h->n_slots > HO_LINKS_MAX_SLOTS ||
        h->routes_off < sizeof(*h) ||
        h->routes_off + (uint64_t)h->n_routes * sizeof(ho_links_route) >
            h->slots_off ||
        h->slots_off + (uint64_t)h->n_slots * sizeof(ho_links_slot) > size)
        return ho_errf(err, errlen, HO_E_PROTOCOL, "link region: layout "
                       "outside its %llu bytes", (unsigned long long)size);
    if ((uint64_t)node_device * 2 + 1 >= h->n_routes)
        return ho_errf(err, errlen, HO_E_PROTOCOL, "link region: device %u "
                       "has no route (%u routes)", node_device, h->n_routes);
    const ho_links_route *r = ho_links_routes((ho_links_header *)h);
    for (uint32_t i = 0; i < h->n_routes; i++) {
        if (r[i].n_hops == 0 || r[i].n_hops > HO_LINKS_MAX_HOPS ||
            !(r[i].alone_rate > 0) || !(r[i].latency_us >= 0) ||
            r[i].latency_us > 1e9)
            return ho_errf(err, errlen, HO_E_PROTOCOL, "link region: route "
                           "%u is malformed", i);
        for (uint32_t k = 0; k < r[i].n_hops; k++)
            if (r[i].hop[k].cap >= h->n_caps || !(r[i].hop[k].coef > 0) ||
                !isfinite(r[i].hop[k].coef))
                return ho_errf(err, errlen, HO_E_PROTOCOL, "link region: "
                               "route %u hop %u is malformed", i, k);
    }
    return 0;
}

/* Free a pacer no longer installed (NULL: nothing), once the copies
 * using it are done. */
static void pacer_free(hob_pacer *x)
{
    if (!x)
        return;
    while (atomic_load(&x->users)) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    munmap(x->h, (size_t)x->size);
    free(x);
}

int hob_pace_attach(int device, int fd, uint64_t map_size,
                    uint32_t node_device, double weight, uint64_t owner,
                    uint64_t *ret_token, char *err, size_t errlen)
{
    *ret_token = 0;
    if (device < 0 || device >= (int)HOB_PACE_MAX_DEVICES)
        return 0;   /* beyond the registry: copies are not paced */
    if (map_size == 0 || map_size > HO_LINKS_MAX_MAP)
        return ho_errf(err, errlen, HO_E_PROTOCOL, "link region of %llu "
                       "bytes (at most %u)", (unsigned long long)map_size,
                       HO_LINKS_MAX_MAP);
    if (!(weight > 0) || weight > 1e6)
        weight = 1;
    void *p = mmap(NULL, (size_t)map_size, PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return ho_errf(err, errlen, -errno, "cannot map the link region: %s",
                       strerror(errno));
    int rc = check_region(p, map_size, node_device, err, errlen);
    hob_pacer *x = rc == 0 ? calloc(1, sizeof(*x)) : NULL;
    if (!x) {
        munmap(p, (size_t)map_size);
        return rc < 0 ? rc : ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    x->h = p;
    x->size = map_size;
    x->node_device = node_device;
    uint64_t wb;
    memcpy(&wb, &weight, sizeof(wb));
    atomic_store(&x->weight, wb);
    x->owner = owner;
    x->token = atomic_fetch_add(&next_token, 1);
    *ret_token = x->token;
    /* one exchange: two sessions of this process attaching the same
     * device at once each free only the pacer they replaced */
    pacer_free(atomic_exchange(&pacers[device], x));
    return 0;
}

void hob_pace_detach(int device, uint64_t token)
{
    if (device < 0 || device >= (int)HOB_PACE_MAX_DEVICES)
        return;
    hob_pacer *x = atomic_load(&pacers[device]);
    if (!x || (token && token != x->token) ||
        !atomic_compare_exchange_strong(&pacers[device], &x, NULL))
        return;
    pacer_free(x);
}

void hob_pace_set_weight(int device, double weight)
{
    if (device < 0 || device >= (int)HOB_PACE_MAX_DEVICES ||
        !(weight > 0) || weight > 1e6)
        return;
    /* under the registry's reference, as a copy takes it */
    hob_pacer *x = atomic_load(&pacers[device]);
    if (!x)
        return;
    atomic_fetch_add(&x->users, 1);
    if (atomic_load(&pacers[device]) == x) {
        uint64_t wb;
        memcpy(&wb, &weight, sizeof(wb));
        atomic_store(&x->weight, wb);
    }
    atomic_fetch_sub(&x->users, 1);
}

bool hob_pace_attached(int device)
{
    return device >= 0 && device < (int)HOB_PACE_MAX_DEVICES &&
           atomic_load(&pacers[device]) != NULL;
}

/* ----------------------------------------------------------- fair rates */

static double weight_of(uint64_t bits)
{
    double w;
    memcpy(&w, &bits, sizeof(w));
    return w > 0 && w <= 1e6 ? w : 1;
}

/* The weighted max-min fair rate (bytes/µs) of active slot `mine`, by
 * progressive filling over every active slot's route: all rates rise as
 * weight x lambda until a capacity on their route is full. */
double hob_pace_rate(ho_links_header *h, uint32_t mine)
{
    ho_links_slot *slots = ho_links_slots(h);
    const ho_links_route *routes = ho_links_routes(h);
    uint32_t route[HO_LINKS_MAX_SLOTS];
    double w[HO_LINKS_MAX_SLOTS];
    bool frozen[HO_LINKS_MAX_SLOTS];
    double rem[HO_LINKS_MAX_CAPS], load[HO_LINKS_MAX_CAPS];
    uint32_t n = 0, me = UINT32_MAX;
    for (uint32_t i = 0; i < h->n_slots; i++) {
        if (atomic_load_explicit(&slots[i].state, memory_order_acquire) !=
            HO_LINKS_ACTIVE)
            continue;
        uint32_t r = atomic_load_explicit(&slots[i].route,
                                          memory_order_relaxed);
        if (r >= h->n_routes)
            continue;
        if (i == mine)
            me = n;
        route[n] = r;
        w[n] = weight_of(atomic_load_explicit(&slots[i].weight,
                                              memory_order_relaxed));
        frozen[n] = false;
        n++;
    }
    if (me == UINT32_MAX)
        return 0;
    for (uint32_t c = 0; c < h->n_caps; c++)
        rem[c] = 1;
    double lambda = 0;
    for (uint32_t round = 0; round <= h->n_caps; round++) {
        memset(load, 0, sizeof(double) * h->n_caps);
        for (uint32_t f = 0; f < n; f++) {
            if (frozen[f])
                continue;
            const ho_links_route *r = &routes[route[f]];
            for (uint32_t k = 0; k < r->n_hops; k++)
                load[r->hop[k].cap] += w[f] * r->hop[k].coef;
        }
        double step = HUGE_VAL;
        for (uint32_t c = 0; c < h->n_caps; c++)
            if (load[c] > 0 && rem[c] / load[c] < step)
                step = rem[c] / load[c];
        if (!isfinite(step))
            break;
        lambda += step;
        for (uint32_t c = 0; c < h->n_caps; c++)
            rem[c] -= load[c] * step;
        /* freeze every copy that crosses a full capacity */
        for (uint32_t f = 0; f < n; f++) {
            if (frozen[f])
                continue;
            const ho_links_route *r = &routes[route[f]];
            for (uint32_t k = 0; k < r->n_hops && !frozen[f]; k++)
                if (load[r->hop[k].cap] > 0 && rem[r->hop[k].cap] <= 1e-12)
                    frozen[f] = true;
        }
        if (frozen[me])
            return w[me] * lambda;
    }
    return w[me] * lambda > 0 ? w[me] * lambda : routes[route[me]].alone_rate;
}

/* ----------------------------------------------------------- copies */

/* Until CLOCK_MONOTONIC reaches ns: sleeping, but the last
 * HOB_PACE_SPIN_NS spun, since a sleep overshoots by tens of µs (a
 * device's 10 µs latency would become 60). */
static void sleep_until(uint64_t ns)
{
    uint64_t now = hob_now_ns();
    if (ns > now + HOB_PACE_SPIN_NS) {
        uint64_t wake = ns - HOB_PACE_SPIN_NS;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000ull),
                              .tv_nsec = (long)(wake % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
               EINTR)
            ;
    }
    while (hob_now_ns() < ns)
        ;
}

/* A free slot, claimed (CLAIMED), or UINT32_MAX when all are taken. */
static uint32_t claim(ho_links_header *h)
{
    ho_links_slot *s = ho_links_slots(h);
    uint32_t start = (uint32_t)getpid() % h->n_slots;
    for (uint32_t k = 0; k < h->n_slots; k++) {
        uint32_t i = (start + k) % h->n_slots;
        uint32_t want = HO_LINKS_FREE;
        if (atomic_compare_exchange_strong(&s[i].state, &want,
                                           HO_LINKS_CLAIMED))
            return i;
    }
    return UINT32_MAX;
}

void hob_paced_copy(int device, hob_dir dir, void *dst, const void *src,
                    uint64_t n)
{
    hob_pacer *x = device >= 0 && device < (int)HOB_PACE_MAX_DEVICES
                       ? atomic_load(&pacers[device]) : NULL;
    if (x) {
        atomic_fetch_add(&x->users, 1);
        if (atomic_load(&pacers[device]) != x) {   /* detached meanwhile */
            atomic_fetch_sub(&x->users, 1);
            x = NULL;
        }
    }
    if (!x) {
        memcpy(dst, src, (size_t)n);
        return;
    }
    ho_links_header *h = x->h;
    ho_links_slot *s = ho_links_slots(h);
    uint32_t r = x->node_device * 2 + (dir == HOB_D2H ? 1u : 0u);
    const ho_links_route *route = &ho_links_routes(h)[r];
    uint32_t slot = claim(h);
    uint64_t t = hob_now_ns();
    if (route->latency_us > 0)   /* moves nothing for its latency */
        sleep_until(t + (uint64_t)(route->latency_us * 1e3));
    if (slot != UINT32_MAX) {
        atomic_store(&s[slot].route, r);
        atomic_store(&s[slot].weight, atomic_load(&x->weight));
        atomic_store(&s[slot].owner, x->owner);
        atomic_store_explicit(&s[slot].state, HO_LINKS_ACTIVE,
                              memory_order_release);
        atomic_fetch_add(&h->seq, 1);
    }
    uint64_t seq = atomic_load(&h->seq);
    double rate = slot != UINT32_MAX ? hob_pace_rate(h, slot)
                                     : route->alone_rate;
    if (!(rate > 0))
        rate = route->alone_rate;
    uint64_t anchor_ns = hob_now_ns(), anchor_b = 0, done = 0;
    while (done < n) {
        uint64_t c = n - done < HOB_PACE_CHUNK ? n - done : HOB_PACE_CHUNK;
        memcpy((char *)dst + done, (const char *)src + done, (size_t)c);
        done += c;
        uint64_t now_seq = atomic_load(&h->seq);
        if (now_seq != seq && slot != UINT32_MAX) {
            /* re-anchor where the old rate had got to, then the new one */
            anchor_ns += (uint64_t)((double)(done - c - anchor_b) / rate *
                                    1e3);
            anchor_b = done - c;
            seq = now_seq;
            double nr = hob_pace_rate(h, slot);
            rate = nr > 0 ? nr : route->alone_rate;
        }
        sleep_until(anchor_ns +
                    (uint64_t)((double)(done - anchor_b) / rate * 1e3));
    }
    if (slot != UINT32_MAX) {
        atomic_store(&s[slot].owner, 0);
        atomic_store_explicit(&s[slot].state, HO_LINKS_FREE,
                              memory_order_release);
        atomic_fetch_add(&h->seq, 1);
    }
    atomic_fetch_sub(&x->users, 1);
}
