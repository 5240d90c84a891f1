/*
 * planner/ir.c - the planner's in-memory trace and schedule (plan.h,
 * "trace" and "schedule" sections): construction, the id -> index hash,
 * validation and derivation of per-storage access lists, the content hash,
 * the summary, and the name tables of the enums.
 *
 * Ownership: a plan_trace owns its name, storages, ops, refs, names, the
 * derived acc_start/acc arrays and the id index; a plan_schedule owns its
 * actions.  Both are released by their *_free.
 */
#include "planner/plan_impl.h"
#include "planner/plan_enum.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "proto/mem.h"

/* ------------------------------------------------------------------ misc */

/* ho_grow (doubling from 16) for the IR's 64-bit capacities. */
static int grow(void **arr, uint64_t *cap, uint64_t need, size_t elem,
                uint64_t limit)
{
    size_t c = (size_t)*cap;
    int r = ho_grow(arr, &c, (size_t)need, elem, 16, (size_t)limit);
    if (r == 0)
        *cap = c;
    return r;
}

/* Room for element n (one more) in an array with a size_t capacity, at
 * most `limit` elements.  0, -ENOMEM or -E2BIG. */
static int reserve(void **arr, size_t *cap, size_t n, size_t elem,
                   uint64_t limit)
{
    if (n < *cap)
        return 0;
    uint64_t c = *cap;
    int r = grow(arr, &c, (uint64_t)n + 1, elem, limit);
    if (r < 0)
        return r;
    *cap = (size_t)c;
    return 0;
}

/* Append the elem bytes at x to the array *arr (*n elements, capacity
 * *cap, at most `limit`).  0, -ENOMEM or -E2BIG. */
static int append(void **arr, size_t *cap, size_t *n, const void *x,
                  size_t elem, uint64_t limit)
{
    int r = reserve(arr, cap, *n, elem, limit);
    if (r < 0)
        return r;
    memcpy((char *)*arr + *n * elem, x, elem);
    (*n)++;
    return 0;
}

int plan_reserve(void **arr, size_t *cap, size_t n, size_t elem)
{
    return reserve(arr, cap, n, elem, SIZE_MAX / elem) < 0 ? -ENOMEM : 0;
}

/* ------------------------------------------------------------------ names */

static const char *const kind_names[PLAN_KIND__COUNT] = {
    "activation", "param", "grad", "optimizer", "kv", "other",
};
static const char *const initial_names[PLAN_INIT__COUNT] = {
    "none", "device", "host",
};
static const char *const act_names[PLAN_ACT__COUNT] = {
    "prefetch", "store", "free_device", "free_host", "wait",
};
static const char *const home_names[2] = {"device", "host"};

int plan_name_index(const char *s, const char *const *names, unsigned n,
                    unsigned *ret_value)
{
    if (!s)
        return -EINVAL;
    for (unsigned i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *ret_value = i;
            return 0;
        }
    }
    return -EINVAL;
}

PLAN_ENUM_NAMES(plan_kind, plan_kind_name, plan_kind_parse, kind_names,
                PLAN_KIND__COUNT)
PLAN_ENUM_NAMES(plan_initial, plan_initial_name, plan_initial_parse,
                initial_names, PLAN_INIT__COUNT)
PLAN_ENUM_NAMES(plan_act_kind, plan_act_name, plan_act_parse, act_names,
                PLAN_ACT__COUNT)
PLAN_ENUM_NAMES(plan_home, plan_home_name, plan_home_parse, home_names, 2u)

/* ------------------------------------------------------------------ id index
 *
 * While the ids are an arithmetic progression (id = base + index * stride,
 * stride > 0: what every generator and the capture write) an id's index
 * is computed, with no table and no memory access.  The first id that
 * breaks the progression builds the table: open addressing with linear
 * probing; slots hold storage indices (or PLAN_NONE) and the key is read
 * back from t->storages[index].id, so a slot costs 4 bytes.  Load factor
 * <= 1/2. */

typedef struct id_index {
    bool affine;       /* ids so far are base + i * stride */
    uint64_t base, stride;
    uint32_t *slot;    /* the table once !affine */
    uint32_t mask;     /* capacity - 1, capacity a power of two */
} id_index;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static uint32_t index_lookup(const plan_trace *t, uint64_t id)
{
    const id_index *ix = t->id_index;
    if (!ix || t->n_storages == 0)
        return PLAN_NONE;
    if (ix->affine) {
        if (id < ix->base)
            return PLAN_NONE;
        uint64_t d = id - ix->base;
        if (ix->stride == 0) /* one storage */
            return d == 0 ? 0 : PLAN_NONE;
        uint64_t q = ix->stride == 1 ? d : d / ix->stride;
        if (q * ix->stride != d || q >= t->n_storages)
            return PLAN_NONE;
        return (uint32_t)q;
    }
    for (uint32_t h = (uint32_t)mix64(id) & ix->mask;; h = (h + 1) & ix->mask) {
        uint32_t v = ix->slot[h];
        if (v == PLAN_NONE || t->storages[v].id == id)
            return v;
    }
}

static void index_put(const plan_trace *t, id_index *ix, uint32_t v)
{
    uint32_t h = (uint32_t)mix64(t->storages[v].id) & ix->mask;
    while (ix->slot[h] != PLAN_NONE)
        h = (h + 1) & ix->mask;
    ix->slot[h] = v;
}

/* Does id extend the progression as storage n_storages? */
static bool extends(const plan_trace *t, const id_index *ix, uint64_t id)
{
    uint32_t n = t->n_storages;
    if (n == 0)
        return true;
    if (n == 1)
        return id > ix->base;
    return id > ix->base && (id - ix->base) % ix->stride == 0 &&
           (id - ix->base) / ix->stride == n;
}

/* Make room for storage n_storages with id `id`; 0 or -ENOMEM. */
static int index_reserve(plan_trace *t, uint64_t id)
{
    id_index *ix = t->id_index;
    if (!ix) {
        ix = calloc(1, sizeof(*ix));
        if (!ix)
            return -ENOMEM;
        ix->affine = true;
        t->id_index = ix;
    }
    if (ix->affine && extends(t, ix, id))
        return 0;
    uint64_t need = ((uint64_t)t->n_storages + 1) * 2;
    if (!ix->affine && need <= (uint64_t)ix->mask + 1)
        return 0;
    uint64_t cap = 64;
    while (cap < need)
        cap *= 2;
    uint32_t *slot = malloc(cap * sizeof(*slot));
    if (!slot)
        return -ENOMEM;
    free(ix->slot);
    ix->slot = slot;
    ix->mask = (uint32_t)(cap - 1);
    ix->affine = false;
    memset(slot, 0xff, cap * sizeof(*slot));
    for (uint32_t i = 0; i < t->n_storages; i++)
        index_put(t, ix, i);
    return 0;
}

/* Storage idx (the last added) joins the index. */
static void index_add(plan_trace *t, uint32_t idx)
{
    id_index *ix = t->id_index;
    if (!ix->affine) {
        index_put(t, ix, idx);
        return;
    }
    if (idx == 0)
        ix->base = t->storages[0].id;
    else if (idx == 1)
        ix->stride = t->storages[1].id - ix->base;
}

/* ------------------------------------------------------------------ trace */

/* Length of s cut to at most max bytes, not inside a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return n;
}

plan_trace *plan_trace_new(const char *name, const plan_link *link)
{
    plan_trace *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    if (!name)
        name = "";
    size_t n = utf8_cut(name, PLAN_MAX_NAME - 1);
    t->name = malloc(n + 1);
    if (!t->name)
        goto fail;
    memcpy(t->name, name, n);
    t->name[n] = 0;
    if (link)
        t->link = *link;
    return t;
fail:
    plan_trace_free(t);
    return NULL;
}

static void free_derived(plan_trace *t)
{
    free(t->acc_start);
    free(t->acc);
    t->acc_start = NULL;
    t->acc = NULL;
    t->finished = false;
}

plan_trace *plan_trace_free(plan_trace *t)
{
    if (!t)
        return NULL;
    id_index *ix = t->id_index;
    if (ix)
        free(ix->slot);
    free(ix);
    free_derived(t);
    HO_FREE_ALL(t->name, t->storages, t->ops, t->refs, t->names, t);
    return NULL;
}

int plan_trace_add_storage(plan_trace *t, const plan_storage *s,
                           uint32_t *ret_index, char *err, size_t errlen)
{
    if (!t || !s)
        return -EINVAL;
    if (t->finished)
        return ho_errf(err, errlen, HO_E_STATE,
                         "trace is finished; storages cannot be added");
    if (s->bytes == 0 || s->bytes > PLAN_MAX_STORAGE_BYTES)
        return ho_errf(err, errlen, -EINVAL,
                         "storage id %llu: bytes %llu out of range (1..%llu)",
                         (unsigned long long)s->id,
                         (unsigned long long)s->bytes,
                         (unsigned long long)PLAN_MAX_STORAGE_BYTES);
    if (s->kind >= PLAN_KIND__COUNT || s->initial >= PLAN_INIT__COUNT)
        return ho_errf(err, errlen, -EINVAL,
                         "storage id %llu: bad kind %u or initial %u",
                         (unsigned long long)s->id, s->kind, s->initial);
    if (index_lookup(t, s->id) != PLAN_NONE)
        return ho_errf(err, errlen, HO_E_BAD_TRACE,
                         "duplicate storage id %llu",
                         (unsigned long long)s->id);
    if (s->movable && (!s->retained || s->initial == PLAN_INIT_NONE))
        return ho_errf(err, errlen, HO_E_BAD_TRACE,
                       "storage id %llu: movable needs retained and initial "
                       "device or host",
                       (unsigned long long)s->id);
    if (t->n_storages >= PLAN_MAX_STORAGES)
        return ho_errf(err, errlen, -E2BIG, "more than %u storages",
                         PLAN_MAX_STORAGES);
    uint64_t cap = t->cap_storages;
    int r = grow((void **)&t->storages, &cap, (uint64_t)t->n_storages + 1,
                 sizeof(*t->storages), PLAN_MAX_STORAGES);
    t->cap_storages = (uint32_t)cap;
    if (r == 0)
        r = index_reserve(t, s->id);
    if (r < 0)
        return ho_errf(err, errlen, r, "out of memory adding storage");
    uint32_t idx = t->n_storages++;
    t->storages[idx] = *s;
    index_add(t, idx);
    if (ret_index)
        *ret_index = idx;
    return 0;
}

int plan_trace_add_op(plan_trace *t, const char *name, double duration_us,
                      const uint32_t *reads, uint32_t n_reads,
                      const uint32_t *writes, uint32_t n_writes,
                      char *err, size_t errlen)
{
    if (!t)
        return -EINVAL;
    if (t->finished)
        return ho_errf(err, errlen, HO_E_STATE,
                         "trace is finished; ops cannot be added");
    uint32_t op = t->n_ops;
    if (!name)
        name = "";
    size_t nlen = strnlen(name, PLAN_MAX_NAME);
    if (nlen >= PLAN_MAX_NAME)
        return ho_errf(err, errlen, -EINVAL,
                         "ops[%u]: name longer than %u bytes", op,
                         PLAN_MAX_NAME - 1);
    if (!(duration_us >= 0) || !isfinite(duration_us))
        return ho_errf(err, errlen, -EINVAL,
                         "ops[%u] '%s': duration_us must be finite and >= 0",
                         op, name);
    if ((n_reads && !reads) || (n_writes && !writes))
        return -EINVAL;
    if ((uint64_t)n_reads + n_writes > PLAN_MAX_OP_REFS)
        return ho_errf(err, errlen, -E2BIG,
                         "ops[%u] '%s': more than %u reads+writes", op, name,
                         PLAN_MAX_OP_REFS);
    for (uint32_t i = 0; i < n_reads + n_writes; i++) {
        uint32_t s = i < n_reads ? reads[i] : writes[i - n_reads];
        if (s >= t->n_storages)
            return ho_errf(err, errlen, -EINVAL,
                             "ops[%u] '%s': %s[%u]: storage index %u out of "
                             "range (%u storages)",
                             op, name, i < n_reads ? "reads" : "writes",
                             i < n_reads ? i : i - n_reads, s, t->n_storages);
    }
    if (op >= PLAN_MAX_OPS)
        return ho_errf(err, errlen, -E2BIG, "more than %u ops", PLAN_MAX_OPS);
    uint64_t nrefs = (uint64_t)n_reads + n_writes;
    if (t->n_refs + nrefs > PLAN_MAX_REFS)
        return ho_errf(err, errlen, -E2BIG, "more than %u refs in total",
                         PLAN_MAX_REFS);
    if (t->names_len + nlen + 1 > UINT32_MAX)
        return ho_errf(err, errlen, -E2BIG, "op names exceed 4 GiB");

    uint64_t cap = t->cap_ops;
    int r = grow((void **)&t->ops, &cap, (uint64_t)op + 1, sizeof(*t->ops),
                 PLAN_MAX_OPS);
    t->cap_ops = (uint32_t)cap;
    if (r == 0)
        r = grow((void **)&t->refs, &t->cap_refs, t->n_refs + nrefs,
                 sizeof(*t->refs), PLAN_MAX_REFS);
    if (r == 0) {
        uint64_t ncap = t->names_cap;
        r = grow((void **)&t->names, &ncap, t->names_len + nlen + 1, 1,
                 UINT32_MAX);
        t->names_cap = (size_t)ncap;
    }
    if (r < 0)
        return ho_errf(err, errlen, r, "out of memory adding op %u", op);

    plan_op *o = &t->ops[op];
    o->duration_us = duration_us;
    o->name = (uint32_t)t->names_len;
    o->n_reads = n_reads;
    o->n_writes = n_writes;
    o->first_ref = t->n_refs;
    memcpy(t->names + t->names_len, name, nlen);
    t->names[t->names_len + nlen] = 0;
    t->names_len += nlen + 1;
    if (n_reads)
        memcpy(t->refs + t->n_refs, reads, n_reads * sizeof(*reads));
    if (n_writes)
        memcpy(t->refs + t->n_refs + n_reads, writes,
               n_writes * sizeof(*writes));
    t->n_refs += nrefs;
    t->n_ops++;
    return 0;
}

uint32_t plan_trace_find(const plan_trace *t, uint64_t id)
{
    return t ? index_lookup(t, id) : PLAN_NONE;
}

static int check_link(const plan_link *l, char *err, size_t errlen)
{
    if (!(l->h2d_gbps > 0) || !isfinite(l->h2d_gbps))
        return ho_errf(err, errlen, HO_E_BAD_TRACE,
                         "link.h2d_gbps must be finite and > 0");
    if (!(l->d2h_gbps > 0) || !isfinite(l->d2h_gbps))
        return ho_errf(err, errlen, HO_E_BAD_TRACE,
                         "link.d2h_gbps must be finite and > 0");
    if (!(l->latency_us >= 0) || !isfinite(l->latency_us))
        return ho_errf(err, errlen, HO_E_BAD_TRACE,
                         "link.latency_us must be finite and >= 0");
    return 0;
}

/* Remove duplicates inside each op's reads and inside its writes (first
 * occurrence kept), compacting t->refs in place.  mark: n_storages words,
 * scratch. */
/* Drop repeated refs inside one op's reads and inside its writes, and
 * count the accesses of each storage on the way (acc_start[s + 1]: one
 * per op that reads or writes s, also when it does both; the total in
 * *ret_n) -- one pass over the refs for both.  mark: n_storages words of
 * 0xff; stamp 2i marks a read of op i, 2i + 1 a write (a storage written
 * by op i whose mark is 2i was read by it: the same access). */
static void dedup_refs(plan_trace *t, uint32_t *mark, uint64_t *ret_n)
{
    uint64_t out = 0, n_acc = 0;
    uint32_t *count = t->acc_start + 1;
    for (uint32_t i = 0; i < t->n_ops; i++) {
        plan_op *o = &t->ops[i];
        uint64_t in = o->first_ref;
        o->first_ref = out;
        for (int w = 0; w < 2; w++) {
            uint32_t n = w ? o->n_writes : o->n_reads, kept = 0;
            /* Distinct stamps for the read and write passes of op i. */
            uint32_t stamp = i * 2u + (uint32_t)w;
            for (uint32_t k = 0; k < n; k++) {
                uint32_t s = t->refs[in + k];
                uint32_t m = mark[s];
                if (m == stamp)
                    continue;
                mark[s] = stamp;
                t->refs[out++] = s;
                kept++;
                if (!w || m != stamp - 1) {
                    count[s]++;
                    n_acc++;
                }
            }
            in += n;
            if (w)
                o->n_writes = kept;
            else
                o->n_reads = kept;
        }
    }
    t->n_refs = out;
    for (uint32_t s = 0; s < t->n_storages; s++)
        t->acc_start[s + 1] += t->acc_start[s];
    *ret_n = n_acc;
}

static int check_total_bytes(const plan_trace *t, char *err, size_t errlen)
{
    uint64_t total = 0;
    for (uint32_t s = 0; s < t->n_storages; s++) {
        total += t->storages[s].bytes; /* each <= 2^50, n <= 2^24: no wrap */
        if (total > PLAN_MAX_TOTAL_BYTES)
            return ho_errf(err, errlen, HO_E_BAD_TRACE,
                           "total storage bytes exceed %llu",
                           (unsigned long long)PLAN_MAX_TOTAL_BYTES);
    }
    return 0;
}

/* Fill t->acc in op order; a write of a storage also read by the op sets
 * the write flag on the read's entry.  An initial:none storage must be
 * written by an earlier op before it is read (reading it in the op that
 * first writes it reads uninitialised data).  fill: n_storages zeros. */
static int fill_accesses(plan_trace *t, uint32_t *fill, char *err,
                         size_t errlen)
{
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *o = &t->ops[i];
        const uint32_t *ref = t->refs + o->first_ref;
        for (uint32_t k = 0; k < o->n_reads + o->n_writes; k++) {
            uint32_t s = ref[k];
            uint32_t flag = k < o->n_reads ? PLAN_ACC_READ : PLAN_ACC_WRITE;
            uint32_t pos = t->acc_start[s] + fill[s];
            if (fill[s] > 0 && t->acc[pos - 1].op == i) {
                t->acc[pos - 1].flags |= flag;
                continue;
            }
            if (flag == PLAN_ACC_READ && fill[s] == 0 &&
                t->storages[s].initial == PLAN_INIT_NONE)
                return ho_errf(err, errlen, HO_E_BAD_TRACE,
                               "ops[%u] '%s': reads storage id %llu "
                               "(initial: none) before any op writes it",
                               i, plan_op_name(t, i),
                               (unsigned long long)t->storages[s].id);
            t->acc[pos].op = i;
            t->acc[pos].flags = flag;
            fill[s]++;
        }
    }
    return 0;
}

/* Retained initial:none data must be created by some op. */
static int check_retained_created(const plan_trace *t, char *err,
                                  size_t errlen)
{
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *st = &t->storages[s];
        if (st->initial == PLAN_INIT_NONE && st->retained &&
            t->acc_start[s] == t->acc_start[s + 1])
            return ho_errf(err, errlen, HO_E_BAD_TRACE,
                           "storage id %llu is retained and initial: none "
                           "but no op writes it",
                           (unsigned long long)st->id);
    }
    return 0;
}

int plan_trace_finish(plan_trace *t, char *err, size_t errlen)
{
    uint32_t *mark = NULL, *fill = NULL;
    uint64_t n_acc;
    int r;

    if (!t)
        return -EINVAL;
    if (t->finished)
        return 0;
    if (t->n_ops == 0)
        return ho_errf(err, errlen, HO_E_BAD_TRACE, "trace has no ops");
    if ((r = check_link(&t->link, err, errlen)) < 0 ||
        (r = check_total_bytes(t, err, errlen)) < 0)
        return r;

    /* Ops that touch nothing leave no refs: give the array a slot all the
     * same, so that `t->refs + o->first_ref` is never NULL + 0 (undefined
     * behaviour) here or in any reader of a finished trace. */
    if (!t->refs &&
        (r = grow((void **)&t->refs, &t->cap_refs, 1, sizeof(*t->refs),
                  PLAN_MAX_REFS)) < 0)
        return ho_errf(err, errlen, r, "out of memory finishing the trace");
    size_t ns = t->n_storages ? t->n_storages : 1;
    /* Stamps are op*2+w < 2^26, so 0xffffffff never matches. */
    mark = malloc(ns * sizeof(*mark));
    t->acc_start = calloc((size_t)t->n_storages + 1, sizeof(*t->acc_start));
    if (!mark || !t->acc_start)
        goto oom;
    memset(mark, 0xff, ns * sizeof(*mark));
    dedup_refs(t, mark, &n_acc);
    t->acc = malloc((n_acc ? n_acc : 1) * sizeof(*t->acc));
    fill = calloc(ns, sizeof(*fill));
    if (!t->acc || !fill)
        goto oom;
    if ((r = fill_accesses(t, fill, err, errlen)) < 0 ||
        (r = check_retained_created(t, err, errlen)) < 0)
        goto fail;
    free(mark);
    free(fill);
    t->finished = true;
    return 0;
oom:
    r = ho_errf(err, errlen, -ENOMEM, "out of memory finishing the trace");
fail:
    free(mark);
    free(fill);
    free_derived(t);
    return r;
}

/* ------------------------------------------------------------------ hash */

typedef struct hasher {
    uint64_t h;
} hasher;

static void hash_u64(hasher *hs, uint64_t v)
{
    hs->h = mix64(hs->h ^ (v + 0x9e3779b97f4a7c15ull));
}

static void hash_double(hasher *hs, double d)
{
    uint64_t v;
    if (d == 0)
        d = 0; /* -0.0 and 0.0 hash alike */
    memcpy(&v, &d, sizeof(v));
    hash_u64(hs, v);
}

static void hash_str(hasher *hs, const char *s)
{
    uint64_t w = 0;
    size_t n = 0;
    for (; *s; s++, n++) {
        w = (w << 8) | (unsigned char)*s;
        if ((n & 7) == 7) {
            hash_u64(hs, w);
            w = 0;
        }
    }
    hash_u64(hs, w);
    hash_u64(hs, n);
}

uint64_t plan_trace_hash(const plan_trace *t)
{
    hasher hs = {0x484f5452414345ull}; /* "HOTRACE" */
    if (!t)
        return 0;
    hash_double(&hs, t->link.h2d_gbps);
    hash_double(&hs, t->link.d2h_gbps);
    hash_double(&hs, t->link.latency_us);
    hash_u64(&hs, t->link.duplex);
    hash_u64(&hs, t->n_storages);
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *st = &t->storages[s];
        hash_u64(&hs, st->id);
        hash_u64(&hs, st->bytes);
        hash_u64(&hs, (uint64_t)st->kind | (uint64_t)st->initial << 8 |
                          (uint64_t)st->retained << 16 |
                          (uint64_t)st->pinned << 24 |
                          (uint64_t)st->movable << 32);
    }
    hash_u64(&hs, t->n_ops);
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *o = &t->ops[i];
        hash_double(&hs, o->duration_us);
        hash_str(&hs, plan_op_name(t, i));
        hash_u64(&hs, (uint64_t)o->n_reads << 32 | o->n_writes);
        for (uint32_t k = 0; k < o->n_reads + o->n_writes; k++)
            hash_u64(&hs, t->storages[t->refs[o->first_ref + k]].id);
    }
    return hs.h;
}

/* ------------------------------------------------------------------ summary */

uint64_t plan_op_working_set(const plan_trace *t, uint32_t op, uint32_t *mark)
{
    const plan_op *o = &t->ops[op];
    const uint32_t *ref = t->refs + o->first_ref;
    uint64_t sum = 0;
    for (uint32_t k = 0; k < o->n_reads + o->n_writes; k++) {
        if (mark[ref[k]] == op)
            continue;
        mark[ref[k]] = op;
        sum += t->storages[ref[k]].bytes;
    }
    return sum;
}

int plan_trace_summarize(const plan_trace *t, plan_trace_summary *ret_summary)
{
    plan_trace_summary sm;
    uint32_t *mark = NULL;
    int r;

    if (!t || !ret_summary)
        return -EINVAL;
    if (!t->finished)
        return HO_E_STATE;
    memset(&sm, 0, sizeof(sm));
    sm.n_ops = t->n_ops;
    sm.n_storages = t->n_storages;
    sm.n_refs = t->n_refs;
    sm.max_op_working_set_op = PLAN_NONE;
    for (uint32_t s = 0; s < t->n_storages; s++) {
        const plan_storage *st = &t->storages[s];
        sm.bytes_by_kind[st->kind] += st->bytes;
        sm.count_by_kind[st->kind]++;
        sm.total_bytes += st->bytes;
        if (st->movable) {
            sm.n_movable++;
            sm.movable_bytes += st->bytes;
        }
    }
    mark = malloc((t->n_storages ? t->n_storages : 1) * sizeof(*mark));
    if (!mark)
        return -ENOMEM;
    memset(mark, 0xff, (t->n_storages ? t->n_storages : 1) * sizeof(*mark));
    for (uint32_t i = 0; i < t->n_ops; i++) {
        sm.compute_us += t->ops[i].duration_us;
        uint64_t ws = plan_op_working_set(t, i, mark);
        if (sm.max_op_working_set_op == PLAN_NONE || ws > sm.max_op_working_set) {
            sm.max_op_working_set = ws;
            sm.max_op_working_set_op = i;
        }
    }
    free(mark);
    if ((r = plan_no_offload_peak(t, &sm.no_offload_peak)) == 0)
        *ret_summary = sm;
    return r;
}

/* ------------------------------------------------------------------ schedule */

plan_schedule *plan_schedule_new(const char *planner, uint64_t budget)
{
    plan_schedule *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    if (planner) {
        size_t n = utf8_cut(planner, sizeof(s->planner) - 1);
        memcpy(s->planner, planner, n);
        s->planner[n] = 0;
    }
    s->budget_bytes = budget;
    return s;
}

plan_schedule *plan_schedule_free(plan_schedule *s)
{
    if (s)
        HO_FREE_ALL(s->actions, s->homes, s);
    return NULL;
}

static int push_action(plan_schedule *s, const plan_action *a)
{
    if (!s || a->when > PLAN_AFTER || a->kind >= PLAN_ACT__COUNT)
        return -EINVAL;
    return append((void **)&s->actions, &s->cap_actions, &s->n_actions, a,
                  sizeof(*a), PLAN_MAX_ACTIONS);
}

int plan_schedule_push(plan_schedule *s, const plan_trace *t, uint32_t op,
                       plan_when when, plan_act_kind kind, uint32_t storage)
{
    if (!t || storage >= t->n_storages)
        return -EINVAL;
    return plan_schedule_push_ix(s, op, when, kind, storage,
                                 t->storages[storage].id);
}

int plan_schedule_push_ix(plan_schedule *s, uint32_t op, plan_when when,
                          plan_act_kind kind, uint32_t storage,
                          uint64_t storage_id)
{
    plan_action a = {.storage_id = storage_id,
                     .storage = storage,
                     .op = op,
                     .when = (uint8_t)when,
                     .kind = (uint8_t)kind};
    return push_action(s, &a);
}

int plan_schedule_push_id(plan_schedule *s, uint32_t op, plan_when when,
                          plan_act_kind kind, uint64_t storage_id)
{
    return plan_schedule_push_ix(s, op, when, kind, PLAN_NONE, storage_id);
}

static inline uint64_t point_key(const plan_action *a)
{
    return (uint64_t)a->op << 1 | (a->when & 1u);
}

int plan_schedule_sort(plan_schedule *s)
{
    size_t n = s->n_actions;
    size_t i;
    for (i = 1; i < n; i++)
        if (point_key(&s->actions[i - 1]) > point_key(&s->actions[i]))
            break;
    if (i >= n)
        return 0; /* already sorted: the usual case */
    /* Bottom-up merge sort (stable). */
    plan_action *tmp = malloc(n * sizeof(*tmp));
    if (!tmp)
        return -ENOMEM;
    plan_action *src = s->actions, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = point_key(&src[b]) < point_key(&src[a]) ? src[b++]
                                                                   : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        plan_action *x = src;
        src = dst;
        dst = x;
    }
    if (src != s->actions)
        memcpy(s->actions, src, n * sizeof(*tmp));
    free(tmp);
    return 0;
}

static int push_home(plan_schedule *s, const plan_home_entry *h)
{
    return append((void **)&s->homes, &s->cap_homes, &s->n_homes, h,
                  sizeof(*h), PLAN_MAX_HOMES);
}

int plan_schedule_set_home(plan_schedule *s, const plan_trace *t,
                           uint32_t storage, plan_home home)
{
    if (!s || !t || storage >= t->n_storages || (unsigned)home > 1 ||
        !t->storages[storage].movable)
        return -EINVAL;
    plan_home_entry h = {.storage_id = t->storages[storage].id,
                         .storage = storage,
                         .home = (uint8_t)home};
    for (size_t i = 0; i < s->n_homes; i++) {
        if (s->homes[i].storage_id == h.storage_id) {
            s->homes[i] = h;
            return 0;
        }
    }
    return push_home(s, &h);
}

int plan_schedule_push_home_id(plan_schedule *s, uint64_t storage_id,
                               plan_home home)
{
    if (!s || (unsigned)home > 1)
        return -EINVAL;
    plan_home_entry h = {.storage_id = storage_id,
                         .storage = PLAN_NONE,
                         .home = (uint8_t)home};
    return push_home(s, &h);
}

int plan_schedule_initials(const plan_trace *t, const plan_schedule *s,
                           uint8_t *ret_initial)
{
    if (!t || !ret_initial)
        return -EINVAL;
    size_t nh = s ? s->n_homes : 0;
    for (size_t i = 0; i < nh; i++) {
        const plan_home_entry *h = &s->homes[i];
        if (h->storage >= t->n_storages ||
            t->storages[h->storage].id != h->storage_id ||
            !t->storages[h->storage].movable || h->home > PLAN_HOME_HOST)
            return HO_E_BAD_SCHEDULE;
    }
    for (uint32_t i = 0; i < t->n_storages; i++)
        ret_initial[i] = t->storages[i].initial;
    for (size_t i = 0; i < nh; i++) {
        const plan_home_entry *h = &s->homes[i];
        ret_initial[h->storage] = h->home == PLAN_HOME_HOST
                                      ? PLAN_INIT_HOST
                                      : PLAN_INIT_DEVICE;
    }
    return 0;
}

/* Resolve and check the home entries: known, movable, one per storage. */
static int bind_homes(plan_schedule *s, const plan_trace *t, char *err,
                      size_t errlen)
{
    uint32_t *first = NULL;
    int r = 0;

    if (s->n_homes == 0)
        return 0;
    first = malloc((t->n_storages ? t->n_storages : 1) * sizeof(*first));
    if (!first)
        return ho_errf(err, errlen, -ENOMEM, "out of memory binding homes");
    memset(first, 0xff, (t->n_storages ? t->n_storages : 1) * sizeof(*first));
    for (size_t i = 0; i < s->n_homes; i++) {
        plan_home_entry *h = &s->homes[i];
        uint32_t idx = plan_trace_find(t, h->storage_id);
        if (idx == PLAN_NONE) {
            r = ho_errf(err, errlen, HO_E_BAD_SCHEDULE,
                        "homes[%zu]: unknown storage id %llu", i,
                        (unsigned long long)h->storage_id);
            break;
        }
        if (!t->storages[idx].movable) {
            r = ho_errf(err, errlen, HO_E_BAD_SCHEDULE,
                        "homes[%zu]: storage id %llu is not movable", i,
                        (unsigned long long)h->storage_id);
            break;
        }
        if (h->home > PLAN_HOME_HOST) {
            r = ho_errf(err, errlen, HO_E_BAD_SCHEDULE,
                        "homes[%zu]: bad home %u", i, h->home);
            break;
        }
        if (first[idx] != PLAN_NONE) {
            r = ho_errf(err, errlen, HO_E_BAD_SCHEDULE,
                        "homes[%zu]: duplicate storage id %llu (first at "
                        "homes[%u])",
                        i, (unsigned long long)h->storage_id, first[idx]);
            break;
        }
        first[idx] = (uint32_t)i;
        h->storage = idx;
    }
    free(first);
    return r;
}

int plan_schedule_bind(plan_schedule *s, const plan_trace *t, char *err,
                       size_t errlen)
{
    if (!s || !t)
        return -EINVAL;
    for (size_t i = 0; i < s->n_actions; i++) {
        plan_action *a = &s->actions[i];
        uint32_t idx = plan_trace_find(t, a->storage_id);
        if (idx == PLAN_NONE)
            return ho_errf(err, errlen, HO_E_BAD_SCHEDULE,
                             "actions[%zu]: unknown storage id %llu", i,
                             (unsigned long long)a->storage_id);
        if (a->op >= t->n_ops)
            return ho_errf(err, errlen, HO_E_BAD_SCHEDULE,
                             "actions[%zu]: op %u out of range (trace has %u "
                             "ops)",
                             i, a->op, t->n_ops);
        if (a->when > PLAN_AFTER || a->kind >= PLAN_ACT__COUNT)
            return ho_errf(err, errlen, HO_E_BAD_SCHEDULE,
                             "actions[%zu]: bad when %u or kind %u", i,
                             a->when, a->kind);
        a->storage = idx;
    }
    int r = bind_homes(s, t, err, errlen);
    if (r < 0)
        return r;
    r = plan_schedule_sort(s);
    if (r < 0)
        return ho_errf(err, errlen, r, "out of memory sorting actions");
    return 0;
}
