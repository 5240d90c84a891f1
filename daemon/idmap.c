/* daemon/idmap.c - see idmap.h. */
#include "daemon/idmap.h"

#include <errno.h>
#include <stdlib.h>

static size_t slot_of(uint64_t id, size_t cap)
{
    /* splitmix64 finaliser: counters are dense, spread them. */
    id ^= id >> 30;
    id *= 0xbf58476d1ce4e5b9ull;
    id ^= id >> 27;
    id *= 0x94d049bb133111ebull;
    id ^= id >> 31;
    return (size_t)id & (cap - 1);
}

void srv_idmap_init(srv_idmap *m)
{
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->count = 0;
}

void srv_idmap_done(srv_idmap *m)
{
    free(m->keys);
    free(m->vals);
    srv_idmap_init(m);
}

static int grow(srv_idmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    if (ncap < m->cap || ncap > SIZE_MAX / sizeof(void *))
        return -ENOMEM;
    uint64_t *nk = calloc(ncap, sizeof(*nk));
    void **nv = calloc(ncap, sizeof(*nv));
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t s = slot_of(m->keys[i], ncap);
        while (nk[s])
            s = (s + 1) & (ncap - 1);
        nk[s] = m->keys[i];
        nv[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

int srv_idmap_put(srv_idmap *m, uint64_t id, void *val)
{
    if (!id)
        return -EINVAL;
    if ((m->count + 1) * 4 > m->cap * 3) {
        int rc = grow(m);
        if (rc < 0)
            return rc;
    }
    size_t s = slot_of(id, m->cap);
    while (m->keys[s] && m->keys[s] != id)
        s = (s + 1) & (m->cap - 1);
    if (!m->keys[s])
        m->count++;
    m->keys[s] = id;
    m->vals[s] = val;
    return 0;
}

void *srv_idmap_get(const srv_idmap *m, uint64_t id)
{
    if (!id || !m->cap)
        return NULL;
    size_t s = slot_of(id, m->cap);
    while (m->keys[s]) {
        if (m->keys[s] == id)
            return m->vals[s];
        s = (s + 1) & (m->cap - 1);
    }
    return NULL;
}

void *srv_idmap_del(srv_idmap *m, uint64_t id)
{
    if (!id || !m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    size_t s = slot_of(id, m->cap);
    while (m->keys[s] && m->keys[s] != id)
        s = (s + 1) & mask;
    if (!m->keys[s])
        return NULL;
    void *val = m->vals[s];
    /* Backward-shift: pull later entries of the probe run into the hole. */
    size_t hole = s, j = s;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->keys[j])
            break;
        size_t home = slot_of(m->keys[j], m->cap);
        /* Move j into the hole unless its home lies in (hole, j]. */
        int in_range = hole <= j ? (home > hole && home <= j)
                                 : (home > hole || home <= j);
        if (in_range)
            continue;
        m->keys[hole] = m->keys[j];
        m->vals[hole] = m->vals[j];
        hole = j;
    }
    m->keys[hole] = 0;
    m->vals[hole] = NULL;
    m->count--;
    return val;
}
