/*
 * planner/node/node_ir.c - building and checking a node description and a
 * workload in memory (NODE.md §1-§2); the JSON readers (node_json.c) go
 * through these builders, so both paths apply the same checks and give the
 * same messages ("links[2].parent: unknown link \"sw9\"").
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/node/node.h"
#include "proto/errfmt.h"
#include "proto/mem.h"

/* Room for one more element in *arr (n used, capacity *cap): doubles
 * from 8 through ho_grow.  The new element's address (element n), or NULL
 * with the sentence (out of memory). */
static void *room(void **arr, uint32_t *cap, uint32_t n, size_t elem,
                  char *err, size_t errlen)
{
    size_t c = *cap;
    if (ho_grow(arr, &c, (size_t)n + 1, elem, 8, UINT32_MAX) < 0) {
        ho_errf(err, errlen, -ENOMEM, "out of memory");
        return NULL;
    }
    *cap = (uint32_t)c;
    return (char *)*arr + (size_t)n * elem;
}

/* "<place>.name: duplicate <what> "<name>" (first at <what>s[i])". */
static int dup_name(const char *place, const char *what, const char *name,
                    uint32_t i, char *err, size_t errlen)
{
    return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                   "%s.name: duplicate %s \"%s\" (first at %ss[%u])", place,
                   what, name, what, i);
}

static char *dup_str(const char *s)
{
    size_t n;
    char *d;

    if (!s)
        return NULL;
    n = strlen(s);
    d = malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

/* Text field place.key: 1..max bytes ("must be a non-empty <what>"). */
static int check_text(const char *place, const char *key, const char *s,
                      const char *what, unsigned max, char *err,
                      size_t errlen)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.%s: must be a non-empty %s", place, key, what);
    if (n > max)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.%s: longer than %u bytes", place, key, max);
    return 0;
}

/* A name: 1..PLAN_NODE_MAX_NAME bytes. */
static int check_name(const char *place, const char *key, const char *s,
                      char *err, size_t errlen)
{
    return check_text(place, key, s, "string", PLAN_NODE_MAX_NAME, err,
                      errlen);
}

static int check_gbps(const char *place, const char *key, double v,
                      char *err, size_t errlen)
{
    if (!isfinite(v) || v <= 0.0)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.%s: must be a positive number, got %g", place, key,
                       v);
    if (v > PLAN_FMT_MAX_GBPS)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.%s: must be at most %g, got %g", place, key,
                       PLAN_FMT_MAX_GBPS, v);
    return 0;
}

/* ------------------------------------------------------------------ node */

plan_node *plan_node_new(void)
{
    return calloc(1, sizeof(plan_node));
}

plan_node *plan_node_free(plan_node *n)
{
    if (!n)
        return NULL;
    for (uint32_t i = 0; i < n->n_links; i++) {
        free(n->links[i].name);
        free(n->links[i].parent_name);
    }
    for (uint32_t i = 0; i < n->n_devices; i++) {
        free(n->devices[i].name);
        free(n->devices[i].parent_name);
    }
    free(n->links);
    free(n->devices);
    free(n);
    return NULL;
}

uint32_t plan_node_link_index(const plan_node *n, const char *name)
{
    for (uint32_t i = 0; i < n->n_links; i++)
        if (strcmp(n->links[i].name, name) == 0)
            return i;
    return PLAN_NONE;
}

uint32_t plan_node_device_index(const plan_node *n, uint32_t id)
{
    for (uint32_t i = 0; i < n->n_devices; i++)
        if (n->devices[i].id == id)
            return i;
    return PLAN_NONE;
}

int plan_node_add_link(plan_node *n, const char *name, const char *parent,
                       double h2d_gbps, double d2h_gbps, bool duplex,
                       char *err, size_t errlen)
{
    char place[32];
    plan_node_link *l;
    uint32_t prev;
    int k;

    if (!n)
        return -EINVAL;
    snprintf(place, sizeof place, "links[%u]", n->n_links);
    if (n->n_links >= PLAN_NODE_MAX_LINKS)
        return ho_errf(err, errlen, -E2BIG, "more than %u links",
                       PLAN_NODE_MAX_LINKS);
    if ((k = check_name(place, "name", name, err, errlen)) < 0 ||
        (parent && (k = check_name(place, "parent", parent, err, errlen)) <
                       0) ||
        (k = check_gbps(place, "h2d_gbps", h2d_gbps, err, errlen)) < 0 ||
        (k = check_gbps(place, "d2h_gbps", d2h_gbps, err, errlen)) < 0)
        return k;
    prev = plan_node_link_index(n, name);
    if (prev != PLAN_NONE)
        return dup_name(place, "link", name, prev, err, errlen);
    l = room((void **)&n->links, &n->cap_links, n->n_links, sizeof(*l), err,
             errlen);
    if (!l)
        return -ENOMEM;
    memset(l, 0, sizeof(*l));
    l->name = dup_str(name);
    l->parent_name = dup_str(parent);
    if (!l->name || (parent && !l->parent_name)) {
        free(l->name);
        free(l->parent_name);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    l->parent = PLAN_NONE;
    l->h2d_gbps = h2d_gbps + 0.0;
    l->d2h_gbps = d2h_gbps + 0.0;
    l->duplex = duplex;
    n->n_links++;
    n->finished = false;
    return 0;
}

int plan_node_add_device(plan_node *n, const plan_node_device *d, char *err,
                         size_t errlen)
{
    char place[32];
    plan_node_device *x;
    int k;

    if (!n || !d)
        return -EINVAL;
    snprintf(place, sizeof place, "devices[%u]", n->n_devices);
    if (n->n_devices >= PLAN_NODE_MAX_DEVICES)
        return ho_errf(err, errlen, -E2BIG, "more than %u devices",
                       PLAN_NODE_MAX_DEVICES);
    if ((k = check_name(place, "name", d->name, err, errlen)) < 0 ||
        (d->parent_name &&
         (k = check_name(place, "parent", d->parent_name, err, errlen)) <
             0) ||
        (k = check_gbps(place, "h2d_gbps", d->h2d_gbps, err, errlen)) < 0 ||
        (k = check_gbps(place, "d2h_gbps", d->d2h_gbps, err, errlen)) < 0)
        return k;
    if (d->id > PLAN_NODE_MAX_DEVICE_ID)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.id: must be at most %u, got %u", place,
                       PLAN_NODE_MAX_DEVICE_ID, d->id);
    if (d->hbm_bytes == 0 || d->hbm_bytes > PLAN_NODE_MAX_BYTES)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.hbm_bytes: must be a positive integer", place);
    if (d->reserve_bytes >= d->hbm_bytes)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.reserve_bytes: %llu leaves nothing of hbm_bytes "
                       "%llu", place, (unsigned long long)d->reserve_bytes,
                       (unsigned long long)d->hbm_bytes);
    if (!isfinite(d->latency_us) || d->latency_us < 0.0 ||
        d->latency_us > PLAN_FMT_MAX_LATENCY_US)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.latency_us: must be a number in [0, %g], got %g",
                       place, PLAN_FMT_MAX_LATENCY_US, d->latency_us);
    for (uint32_t i = 0; i < n->n_devices; i++) {
        if (n->devices[i].id == d->id)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "%s.id: duplicate device id %u (first at "
                           "devices[%u])", place, d->id, i);
        if (strcmp(n->devices[i].name, d->name) == 0)
            return dup_name(place, "device", d->name, i, err, errlen);
    }
    x = room((void **)&n->devices, &n->cap_devices, n->n_devices,
             sizeof(*x), err, errlen);
    if (!x)
        return -ENOMEM;
    *x = *d;
    x->name = dup_str(d->name);
    x->parent_name = dup_str(d->parent_name);
    if (!x->name || (d->parent_name && !x->parent_name)) {
        free(x->name);
        free(x->parent_name);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    x->parent = PLAN_NONE;
    x->h2d_gbps += 0.0;
    x->d2h_gbps += 0.0;
    x->latency_us += 0.0;
    n->n_devices++;
    n->finished = false;
    return 0;
}

int plan_node_finish(plan_node *n, char *err, size_t errlen)
{
    uint32_t root = PLAN_NONE;
    uint8_t *state = NULL; /* 0 unvisited, 1 on the current walk, 2 done */
    uint32_t *walk = NULL;
    int r = 0;

    if (!n)
        return -EINVAL;
    if (n->finished)
        return 0;
    if (n->n_devices == 0)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "devices: a node needs at least one device");
    /* Parents by name. */
    for (uint32_t i = 0; i < n->n_links; i++) {
        plan_node_link *l = &n->links[i];
        if (!l->parent_name) {
            if (root != PLAN_NONE)
                return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                               "links[%u]: a second root link \"%s\" (no "
                               "parent); the root is links[%u] \"%s\"",
                               i, l->name, root, n->links[root].name);
            root = i;
            l->parent = PLAN_NONE;
            continue;
        }
        l->parent = plan_node_link_index(n, l->parent_name);
        if (l->parent == PLAN_NONE)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "links[%u].parent: unknown link \"%s\"", i,
                           l->parent_name);
        if (l->parent == i)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "links[%u].parent: link \"%s\" is its own parent",
                           i, l->name);
    }
    /* No root with links means a cycle: the walk below names it. */
    /* Cycles and depth: walk up from each link, marking the walk. */
    state = calloc(n->n_links ? n->n_links : 1, 1);
    walk = malloc((n->n_links ? n->n_links : 1) * sizeof(*walk));
    if (!state || !walk) {
        r = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < n->n_links; i++) {
        uint32_t len = 0, j = i;
        while (j != PLAN_NONE && state[j] == 0) {
            state[j] = 1;
            walk[len++] = j;
            j = n->links[j].parent;
        }
        if (j != PLAN_NONE && state[j] == 1) {
            /* j is on this walk: the cycle is from j back to j. */
            char msg[384];
            size_t off = 0;
            uint32_t k = 0;
            while (walk[k] != j)
                k++;
            msg[0] = '\0';
            for (uint32_t m = k; m < len && off < sizeof msg - 64; m++)
                off += (size_t)snprintf(msg + off, sizeof msg - off,
                                        "%s -> ", n->links[walk[m]].name);
            snprintf(msg + off, sizeof msg - off, "%s", n->links[j].name);
            r = ho_errf(err, errlen, HO_E_BAD_CONFIG,
                        "links[%u].parent: cycle %s (these links have no "
                        "path to the root)", j, msg);
            goto out;
        }
        /* Depths from the top of the walk down. */
        uint32_t base = j == PLAN_NONE ? 0 : n->links[j].depth + 1;
        for (uint32_t m = len; m-- > 0;) {
            n->links[walk[m]].depth = base++;
            state[walk[m]] = 2;
            if (n->links[walk[m]].depth + 1 > PLAN_NODE_MAX_DEPTH) {
                r = ho_errf(err, errlen, HO_E_BAD_CONFIG,
                            "links[%u]: more than %u links between it and "
                            "the root", walk[m], PLAN_NODE_MAX_DEPTH);
                goto out;
            }
        }
    }
    for (uint32_t i = 0; i < n->n_devices; i++) {
        plan_node_device *d = &n->devices[i];
        if (!d->parent_name) {
            if (n->n_links > 0) {
                r = ho_errf(err, errlen, HO_E_BAD_CONFIG,
                            "devices[%u].parent: missing: device \"%s\" "
                            "has no path to the root link \"%s\"", i,
                            d->name, n->links[root].name);
                goto out;
            }
            d->parent = PLAN_NONE;
            continue;
        }
        d->parent = plan_node_link_index(n, d->parent_name);
        if (d->parent == PLAN_NONE) {
            r = ho_errf(err, errlen, HO_E_BAD_CONFIG,
                        "devices[%u].parent: unknown link \"%s\"", i,
                        d->parent_name);
            goto out;
        }
    }
    n->finished = true;
out:
    free(state);
    free(walk);
    return r;
}

/* ------------------------------------------------------------------ workload */

plan_workload *plan_workload_new(const char *dir)
{
    plan_workload *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->dir = dup_str(dir && dir[0] ? dir : ".");
    if (!w->dir) {
        free(w);
        return NULL;
    }
    return w;
}

static void client_done(plan_wl_client *c)
{
    HO_FREE_ALL(c->name, c->job, c->trace, c->schedule, c->sync);
}

plan_workload *plan_workload_free(plan_workload *w)
{
    if (!w)
        return NULL;
    for (uint32_t i = 0; i < w->n_clients; i++)
        client_done(&w->clients[i]);
    free(w->clients);
    free(w->dir);
    free(w);
    return NULL;
}

/* A path: 1..PLAN_NODE_MAX_PATH bytes. */
static int check_path(const char *place, const char *key, const char *s,
                      char *err, size_t errlen)
{
    return check_text(place, key, s, "path", PLAN_NODE_MAX_PATH, err,
                      errlen);
}

int plan_workload_add_client(plan_workload *w, const plan_wl_client *c,
                             char *err, size_t errlen)
{
    char place[32];
    plan_wl_client *x;
    int k;

    if (!w || !c)
        return -EINVAL;
    snprintf(place, sizeof place, "clients[%u]", w->n_clients);
    if (w->n_clients >= PLAN_NODE_MAX_CLIENTS)
        return ho_errf(err, errlen, -E2BIG, "more than %u clients",
                       PLAN_NODE_MAX_CLIENTS);
    if ((k = check_name(place, "name", c->name, err, errlen)) < 0 ||
        (c->job && (k = check_name(place, "job", c->job, err, errlen)) < 0) ||
        (c->sync && (k = check_name(place, "sync", c->sync, err, errlen)) <
                        0) ||
        (k = check_path(place, "trace", c->trace, err, errlen)) < 0 ||
        (c->schedule &&
         (k = check_path(place, "schedule", c->schedule, err, errlen)) < 0))
        return k;
    if (c->device > PLAN_NODE_MAX_DEVICE_ID)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.device: must be at most %u, got %u", place,
                       PLAN_NODE_MAX_DEVICE_ID, c->device);
    if (!isfinite(c->weight) || c->weight <= 0.0 ||
        c->weight > PLAN_NODE_MAX_WEIGHT)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.weight: must be a number in (0, %g], got %g",
                       place, PLAN_NODE_MAX_WEIGHT, c->weight);
    if (c->has_max_slowdown &&
        (!isfinite(c->max_slowdown) || c->max_slowdown < 1.0 ||
         c->max_slowdown > PLAN_NODE_MAX_SLOWDOWN))
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.max_slowdown: must be a number in [1, %g], got %g",
                       place, PLAN_NODE_MAX_SLOWDOWN, c->max_slowdown);
    if ((c->has_planned_h2d &&
         (k = check_gbps(place, "planned_h2d_gbps", c->planned_h2d_gbps, err,
                         errlen)) < 0) ||
        (c->has_planned_d2h &&
         (k = check_gbps(place, "planned_d2h_gbps", c->planned_d2h_gbps, err,
                         errlen)) < 0))
        return k;
    if ((c->has_budget && c->budget_bytes > PLAN_NODE_MAX_BYTES) ||
        (c->has_ddr_limit && c->ddr_limit_bytes > PLAN_NODE_MAX_BYTES))
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s: a byte figure above %llu", place,
                       (unsigned long long)PLAN_NODE_MAX_BYTES);
    if (c->has_predicted &&
        (!isfinite(c->predicted.step_time_us) ||
         !isfinite(c->predicted.exposed_us) ||
         !isfinite(c->predicted.alloc_wait_us)))
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "%s.predicted: figures must be finite", place);
    for (uint32_t i = 0; i < w->n_clients; i++)
        if (strcmp(w->clients[i].name, c->name) == 0)
            return dup_name(place, "client", c->name, i, err, errlen);
    x = room((void **)&w->clients, &w->cap_clients, w->n_clients,
             sizeof(*x), err, errlen);
    if (!x)
        return -ENOMEM;
    *x = *c;
    x->name = dup_str(c->name);
    x->job = dup_str(c->job);
    x->trace = dup_str(c->trace);
    x->schedule = dup_str(c->schedule);
    x->sync = dup_str(c->sync);
    if (!x->name || !x->trace || (c->job && !x->job) ||
        (c->schedule && !x->schedule) || (c->sync && !x->sync)) {
        client_done(x);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    x->weight += 0.0;
    w->n_clients++;
    return 0;
}

char *plan_workload_path(const plan_workload *w, const char *rel)
{
    size_t dl, rl;
    char *p;

    if (!rel)
        return NULL;
    if (rel[0] == '/' || !w->dir || strcmp(w->dir, ".") == 0)
        return dup_str(rel);
    dl = strlen(w->dir);
    rl = strlen(rel);
    p = malloc(dl + rl + 2);
    if (!p)
        return NULL;
    memcpy(p, w->dir, dl);
    p[dl] = '/';
    memcpy(p + dl + 1, rel, rl + 1);
    return p;
}
