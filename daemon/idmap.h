/*
 * daemon/idmap.h - map from a non-zero 64-bit id to a pointer.
 *
 * Open addressing with linear probing and backward-shift deletion; the
 * table doubles when 3/4 full.  Used for connections and extents, whose
 * ids come from counters and are never 0.  The map stores the pointers but
 * owns nothing they point to.  Not thread-safe (loop thread).
 */
#ifndef HO_DAEMON_IDMAP_H
#define HO_DAEMON_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct srv_idmap {
    uint64_t *keys;     /* 0 = empty slot */
    void **vals;
    size_t cap;         /* power of two, or 0 before the first insert */
    size_t count;
} srv_idmap;

void srv_idmap_init(srv_idmap *m);
void srv_idmap_done(srv_idmap *m);   /* frees the table, not the values */

/* Insert or replace.  0, -EINVAL for id 0, -ENOMEM (map unchanged). */
int srv_idmap_put(srv_idmap *m, uint64_t id, void *val);
void *srv_idmap_get(const srv_idmap *m, uint64_t id); /* NULL if absent */
/* Remove; returns the value or NULL if absent. */
void *srv_idmap_del(srv_idmap *m, uint64_t id);

#endif
