/* daemon/links.c - the link region (see links.h). */
#include "daemon/links.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto/errfmt.h"

struct srv_links {
    int fd;
    uint64_t size;
    ho_links_header *h;     /* the daemon's mapping */
};

/* Capacity index of link l / device d in direction dir: two per element,
 * one when it is not duplex (both directions fill the same). */
static uint32_t cap_of(uint32_t base, bool duplex, int dir)
{
    return base * 2 + (duplex ? (uint32_t)dir : 0);
}

static uint64_t align64(uint64_t v)
{
    return (v + 63) & ~(uint64_t)63;
}

uint64_t srv_links_layout(const plan_node *n, void *buf, uint64_t size)
{
    uint64_t n_caps = 2ull * ((uint64_t)n->n_links + n->n_devices);
    if (n->n_devices > HO_LINKS_MAX_DEVICES || n_caps > HO_LINKS_MAX_CAPS)
        return 0;
    uint32_t n_routes = n->n_devices * 2;
    uint64_t routes_off = align64(sizeof(ho_links_header));
    uint64_t slots_off =
        align64(routes_off + (uint64_t)n_routes * sizeof(ho_links_route));
    uint64_t need = slots_off + HO_LINKS_MAX_SLOTS * sizeof(ho_links_slot);
    long page = sysconf(_SC_PAGESIZE);
    need = (need + (uint64_t)page - 1) & ~((uint64_t)page - 1);
    if (need > HO_LINKS_MAX_MAP)
        return 0;
    if (!buf || size < need)
        return need;
    ho_links_header *h = buf;
    h->magic = HO_LINKS_MAGIC;
    h->version = HO_LINKS_VERSION;
    h->n_caps = (uint32_t)n_caps;
    h->n_routes = n_routes;
    h->n_slots = HO_LINKS_MAX_SLOTS;
    h->routes_off = routes_off;
    h->slots_off = slots_off;
    h->size = need;
    atomic_store(&h->seq, 0);
    ho_links_route *routes = ho_links_routes(h);
    for (uint32_t d = 0; d < n->n_devices; d++) {
        const plan_node_device *x = &n->devices[d];
        for (int dir = 0; dir < 2; dir++) {
            ho_links_route *r = &routes[d * 2 + (uint32_t)dir];
            double g = dir ? x->d2h_gbps : x->h2d_gbps;
            r->latency_us = x->latency_us;
            r->hop[0].cap = cap_of(n->n_links + d, x->duplex, dir);
            r->hop[0].coef = 1.0 / (g * 1e3);
            r->alone_rate = g * 1e3;
            r->n_hops = 1;
            for (uint32_t l = x->parent; l != PLAN_NONE && l < n->n_links &&
                                         r->n_hops < HO_LINKS_MAX_HOPS;
                 l = n->links[l].parent) {
                const plan_node_link *k = &n->links[l];
                double lg = dir ? k->d2h_gbps : k->h2d_gbps;
                ho_links_hop *hp = &r->hop[r->n_hops++];
                hp->cap = cap_of(l, k->duplex, dir);
                hp->coef = 1.0 / (lg * 1e3);
                if (lg * 1e3 < r->alone_rate)
                    r->alone_rate = lg * 1e3;
            }
        }
    }
    return need;
}

int srv_links_new(const plan_node *n, srv_links **ret, char *err,
                  size_t errlen)
{
    uint64_t need = srv_links_layout(n, NULL, 0);
    if (need == 0)
        return ho_errf(err, errlen, -E2BIG, "the link region: %u devices and "
                       "%u links are more than it holds (%u devices, %u "
                       "capacities)", n->n_devices, n->n_links,
                       HO_LINKS_MAX_DEVICES, HO_LINKS_MAX_CAPS);
    srv_links *l = calloc(1, sizeof(*l));
    if (!l)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    l->fd = memfd_create("hyperoffload-links", MFD_CLOEXEC |
                                               MFD_ALLOW_SEALING);
    int rc = 0;
    if (l->fd < 0 || ftruncate(l->fd, (off_t)need) < 0) {
        rc = -errno;
        ho_errf(err, errlen, rc, "the link region: %s", strerror(-rc));
        goto fail;
    }
    void *p = mmap(NULL, (size_t)need, PROT_READ | PROT_WRITE, MAP_SHARED,
                   l->fd, 0);
    if (p == MAP_FAILED) {
        rc = -errno;
        ho_errf(err, errlen, rc, "the link region: mmap: %s", strerror(-rc));
        goto fail;
    }
    l->h = p;
    l->size = need;
    srv_links_layout(n, p, need);
    if (fcntl(l->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
                                      F_SEAL_SEAL) < 0) {
        rc = -errno;
        ho_errf(err, errlen, rc, "the link region: sealing: %s",
                strerror(-rc));
        goto fail;
    }
    *ret = l;
    return 0;
fail:
    srv_links_free(l);
    return rc;
}

srv_links *srv_links_free(srv_links *l)
{
    if (!l)
        return NULL;
    if (l->h)
        munmap(l->h, (size_t)l->size);
    if (l->fd >= 0)
        close(l->fd);
    free(l);
    return NULL;
}

int srv_links_fd(const srv_links *l)
{
    return l->fd;
}

uint64_t srv_links_size(const srv_links *l)
{
    return l->size;
}

ho_links_header *srv_links_header(const srv_links *l)
{
    return l->h;
}

uint32_t srv_links_release_owner(srv_links *l, uint64_t session_id)
{
    if (!l || session_id == 0)
        return 0;
    ho_links_slot *s = ho_links_slots(l->h);
    uint32_t freed = 0;
    for (uint32_t i = 0; i < HO_LINKS_MAX_SLOTS; i++) {
        if (atomic_load(&s[i].state) == HO_LINKS_FREE ||
            atomic_load(&s[i].owner) != session_id)
            continue;
        atomic_store(&s[i].owner, 0);
        atomic_store(&s[i].state, HO_LINKS_FREE);
        freed++;
    }
    if (freed)
        atomic_fetch_add(&l->h->seq, 1);
    return freed;
}
