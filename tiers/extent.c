/*
 * tiers/extent.c - best-fit extent allocator with coalescing.
 *
 * Every block of the offset space [0, capacity) is either free or a live
 * allocation.  Three AVL trees index them:
 *   free_by_off   free blocks by offset (neighbour lookup for coalescing)
 *   free_by_size  free blocks by (length, offset) (best fit, lowest offset)
 *   live          live allocations by offset (exact release and lookup)
 * A free block is in the first two trees at once (two embedded links); a
 * live allocation only in the third.  Free blocks never touch: release
 * merges a block with both neighbours, so every operation is O(log n).
 *
 * The trees are intrusive and recursive (height <= 1.44 log2 n, so the
 * recursion is shallow).  Keys are unique in each tree.
 */
#include "tiers/extent.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "hyperoffload/errors.h"

struct ext_node {
    struct ext_node *l, *r;
    int h;
};

struct ext_blk {
    struct ext_node by_off;  /* free_by_off or live */
    struct ext_node by_size; /* free_by_size (free blocks only) */
    uint64_t off, len;
    uint32_t tag;            /* live allocations: caller's tag */
};

struct tier_extents {
    uint64_t capacity, align;
    uint64_t used;
    uint64_t nfree, nlive;
    struct ext_node *free_by_off, *free_by_size, *live;
};

typedef int (*ext_cmp_fn)(const struct ext_node *a, const struct ext_node *b);

#define BLK_OF_OFF(n) \
    ((struct ext_blk *)((char *)(n) - offsetof(struct ext_blk, by_off)))
#define BLK_OF_SIZE(n) \
    ((struct ext_blk *)((char *)(n) - offsetof(struct ext_blk, by_size)))
#define CBLK_OF_OFF(n) \
    ((const struct ext_blk *)((const char *)(n) - offsetof(struct ext_blk, by_off)))
#define CBLK_OF_SIZE(n) \
    ((const struct ext_blk *)((const char *)(n) - offsetof(struct ext_blk, by_size)))

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

static int cmp_by_off(const struct ext_node *a, const struct ext_node *b)
{
    return cmp_u64(CBLK_OF_OFF(a)->off, CBLK_OF_OFF(b)->off);
}

static int cmp_by_size(const struct ext_node *a, const struct ext_node *b)
{
    const struct ext_blk *x = CBLK_OF_SIZE(a), *y = CBLK_OF_SIZE(b);
    int c = cmp_u64(x->len, y->len);
    return c ? c : cmp_u64(x->off, y->off);
}

/* ---- AVL ---------------------------------------------------------------- */

static int avl_h(const struct ext_node *n)
{
    return n ? n->h : 0;
}

static void avl_fix(struct ext_node *n)
{
    int hl = avl_h(n->l), hr = avl_h(n->r);
    n->h = 1 + (hl > hr ? hl : hr);
}

/* Rotate n right (its left child comes up) or left (its right child
 * does); returns the subtree's new root. */
static struct ext_node *avl_rot(struct ext_node *n, bool right)
{
    struct ext_node *c = right ? n->l : n->r;
    if (right) {
        n->l = c->r;
        c->r = n;
    } else {
        n->r = c->l;
        c->l = n;
    }
    avl_fix(n);
    avl_fix(c);
    return c;
}

static struct ext_node *avl_balance(struct ext_node *n)
{
    int bf;

    avl_fix(n);
    bf = avl_h(n->l) - avl_h(n->r);
    if (bf > 1) {
        if (avl_h(n->l->l) < avl_h(n->l->r))
            n->l = avl_rot(n->l, false);
        return avl_rot(n, true);
    }
    if (bf < -1) {
        if (avl_h(n->r->r) < avl_h(n->r->l))
            n->r = avl_rot(n->r, true);
        return avl_rot(n, false);
    }
    return n;
}

static struct ext_node *avl_insert(struct ext_node *root, struct ext_node *n,
                                   ext_cmp_fn cmp)
{
    if (!root) {
        n->l = n->r = NULL;
        n->h = 1;
        return n;
    }
    if (cmp(n, root) < 0)
        root->l = avl_insert(root->l, n, cmp);
    else
        root->r = avl_insert(root->r, n, cmp);
    return avl_balance(root);
}

static struct ext_node *avl_remove_min(struct ext_node *root,
                                       struct ext_node **ret_min)
{
    if (!root->l) {
        *ret_min = root;
        return root->r;
    }
    root->l = avl_remove_min(root->l, ret_min);
    return avl_balance(root);
}

/* Remove node n (which must be in the tree) and return the new root. */
static struct ext_node *avl_remove(struct ext_node *root, struct ext_node *n,
                                   ext_cmp_fn cmp)
{
    int c;

    if (!root)
        return NULL;
    c = cmp(n, root);
    if (c < 0) {
        root->l = avl_remove(root->l, n, cmp);
    } else if (c > 0) {
        root->r = avl_remove(root->r, n, cmp);
    } else {
        struct ext_node *l = root->l, *r = root->r, *m;
        if (!r)
            return l;
        r = avl_remove_min(r, &m);
        m->l = l;
        m->r = r;
        return avl_balance(m);
    }
    return avl_balance(root);
}

static struct ext_node *avl_max(struct ext_node *n)
{
    if (!n)
        return NULL;
    while (n->r)
        n = n->r;
    return n;
}

/* ---- blocks --------------------------------------------------------------- */

/* Node of the block at exactly `off` in an offset-keyed tree, or NULL. */
static struct ext_blk *find_off(struct ext_node *n, uint64_t off)
{
    while (n) {
        struct ext_blk *b = BLK_OF_OFF(n);
        if (off == b->off)
            return b;
        n = off < b->off ? n->l : n->r;
    }
    return NULL;
}

/* The free block nearest to `off` on one side: the largest offset below
 * it (below) or the smallest above it (!below), or NULL. */
static struct ext_blk *free_neighbour(const tier_extents *ea, uint64_t off,
                                      bool below)
{
    struct ext_node *n = ea->free_by_off;
    struct ext_blk *best = NULL;

    while (n) {
        struct ext_blk *b = BLK_OF_OFF(n);
        if (below ? b->off < off : b->off > off) {
            best = b;
            n = below ? n->r : n->l; /* look for a nearer one */
        } else {
            n = below ? n->l : n->r;
        }
    }
    return best;
}

/* Smallest free block of length >= len (lowest offset among equals). */
static struct ext_blk *best_fit(const tier_extents *ea, uint64_t len)
{
    struct ext_node *n = ea->free_by_size;
    struct ext_blk *best = NULL;

    while (n) {
        struct ext_blk *b = BLK_OF_SIZE(n);
        if (b->len >= len) {
            best = b;
            n = n->l;
        } else {
            n = n->r;
        }
    }
    return best;
}

static void free_insert(tier_extents *ea, struct ext_blk *b)
{
    ea->free_by_off = avl_insert(ea->free_by_off, &b->by_off, cmp_by_off);
    ea->free_by_size = avl_insert(ea->free_by_size, &b->by_size, cmp_by_size);
    ea->nfree++;
}

static void free_remove(tier_extents *ea, struct ext_blk *b)
{
    ea->free_by_off = avl_remove(ea->free_by_off, &b->by_off, cmp_by_off);
    ea->free_by_size = avl_remove(ea->free_by_size, &b->by_size, cmp_by_size);
    ea->nfree--;
}

/* Give free block b the range [off, off+len) that keeps it between the
 * same neighbours: its offset order is unchanged, only its size key
 * moves. */
static void free_reshape(tier_extents *ea, struct ext_blk *b, uint64_t off,
                         uint64_t len)
{
    ea->free_by_size = avl_remove(ea->free_by_size, &b->by_size, cmp_by_size);
    b->off = off;
    b->len = len;
    ea->free_by_size = avl_insert(ea->free_by_size, &b->by_size, cmp_by_size);
}

static void destroy_tree(struct ext_node *n)
{
    if (!n)
        return;
    destroy_tree(n->l);
    destroy_tree(n->r);
    free(BLK_OF_OFF(n));
}

/* ---- API ------------------------------------------------------------------ */

tier_extents *tier_extents_new(uint64_t capacity, uint64_t align)
{
    tier_extents *ea;

    if (align == 0 || (align & (align - 1)) != 0)
        return NULL;
    ea = calloc(1, sizeof(*ea));
    if (!ea)
        return NULL;
    ea->align = align;
    ea->capacity = capacity & ~(align - 1);
    if (ea->capacity > 0) {
        struct ext_blk *b = calloc(1, sizeof(*b));
        if (!b)
            goto fail;
        b->off = 0;
        b->len = ea->capacity;
        free_insert(ea, b);
    }
    return ea;
fail:
    free(ea);
    return NULL;
}

tier_extents *tier_extents_free(tier_extents *ea)
{
    if (!ea)
        return NULL;
    destroy_tree(ea->free_by_off);
    destroy_tree(ea->live);
    free(ea);
    return NULL;
}

int tier_extents_alloc(tier_extents *ea, uint64_t len, uint64_t *ret_off,
                       uint64_t *ret_len)
{
    uint64_t rlen;
    struct ext_blk *b, *a;

    if (len == 0 || !tier_align_up(len, ea->align, &rlen))
        return HO_E_INVALID_SIZE;
    if (rlen > ea->capacity)
        return HO_E_TOO_LARGE;
    b = best_fit(ea, rlen);
    if (!b)
        return HO_E_TIER_FULL;

    if (b->len == rlen) {
        /* Exact fit: the free block becomes the allocation. */
        free_remove(ea, b);
        a = b;
    } else {
        a = calloc(1, sizeof(*a));
        if (!a)
            return -ENOMEM;
        a->off = b->off;
        a->len = rlen;
        /* Shrinking from the front keeps b between the same neighbours. */
        free_reshape(ea, b, b->off + rlen, b->len - rlen);
    }
    a->tag = 0;
    ea->live = avl_insert(ea->live, &a->by_off, cmp_by_off);
    ea->nlive++;
    ea->used += rlen;
    *ret_off = a->off;
    if (ret_len)
        *ret_len = rlen;
    return 0;
}

/* The live allocation at off if len (requested or rounded) matches it. */
static struct ext_blk *live_match(const tier_extents *ea, uint64_t off,
                                  uint64_t len)
{
    struct ext_blk *a;
    uint64_t rlen;

    if (len == 0 || !tier_align_up(len, ea->align, &rlen))
        return NULL;
    a = find_off(ea->live, off);
    if (!a || a->len != rlen)
        return NULL;
    return a;
}

int tier_extents_release(tier_extents *ea, uint64_t off, uint64_t len)
{
    struct ext_blk *a, *p, *s;
    int join_p, join_s;

    a = live_match(ea, off, len);
    if (!a)
        return HO_E_UNKNOWN_EXTENT;

    ea->live = avl_remove(ea->live, &a->by_off, cmp_by_off);
    ea->nlive--;
    ea->used -= a->len;

    p = free_neighbour(ea, a->off, true);
    s = free_neighbour(ea, a->off, false);
    join_p = p && p->off + p->len == a->off;
    join_s = s && a->off + a->len == s->off;

    if (join_p && join_s) {
        free_remove(ea, s);
        free_reshape(ea, p, p->off, p->len + a->len + s->len);
        free(s);
        free(a);
    } else if (join_p) {
        free_reshape(ea, p, p->off, p->len + a->len);
        free(a);
    } else if (join_s) {
        /* s grows to the front. */
        free_reshape(ea, s, a->off, s->len + a->len);
        free(a);
    } else {
        free_insert(ea, a);
    }
    return 0;
}

uint64_t tier_extents_lookup(const tier_extents *ea, uint64_t off)
{
    const struct ext_blk *a = find_off(ea->live, off);
    return a ? a->len : 0;
}

int tier_extents_set_tag(tier_extents *ea, uint64_t off, uint32_t tag)
{
    struct ext_blk *a = find_off(ea->live, off);

    if (!a)
        return HO_E_UNKNOWN_EXTENT;
    a->tag = tag;
    return 0;
}

int tier_extents_get_tag(const tier_extents *ea, uint64_t off,
                         uint32_t *ret_tag)
{
    const struct ext_blk *a = find_off(ea->live, off);

    if (!a)
        return HO_E_UNKNOWN_EXTENT;
    *ret_tag = a->tag;
    return 0;
}

void tier_extents_stats_get(const tier_extents *ea, tier_extents_stats *ret)
{
    struct ext_node *m = avl_max(ea->free_by_size);

    ret->capacity = ea->capacity;
    ret->used = ea->used;
    ret->free = ea->capacity - ea->used;
    ret->largest_free = m ? BLK_OF_SIZE(m)->len : 0;
    ret->free_blocks = ea->nfree;
    ret->allocations = ea->nlive;
    ret->fragmentation = ret->free == 0
        ? 0.0
        : 1.0 - (double)ret->largest_free / (double)ret->free;
}

uint64_t tier_extents_high_water(const tier_extents *ea)
{
    struct ext_node *m = avl_max(ea->live);

    if (!m)
        return 0;
    return BLK_OF_OFF(m)->off + BLK_OF_OFF(m)->len;
}
