/*
 * planner/gen/gen_random.c - random, well-formed traces for property tests and
 * scale benchmarks (docs/formats.md "Random generator").
 *
 * Storages fall into four classes: transient (picked only while recent, so
 * short-lived), saved (picked again uniformly later: long gaps), hot (read
 * by many ops, like parameters) and other.  `initial: none` storages are
 * born, spread evenly over the ops, by a write of the op at their birth;
 * only born (or initially present) storages are ever picked, so every
 * `initial: none` storage is written before it is read.  Integer-only
 * arithmetic on a xoshiro256** stream: the same configuration gives the
 * same trace on every machine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/gen/gen_private.h"
#include "proto/errfmt.h"
#include "hyperoffload/errors.h"
#include "proto/mem.h"

#define RECENT 16u /* deepest look back at recent births */
#define ID_BASE 1000u
#define ID_STRIDE 3u

enum { C_TRANSIENT, C_SAVED, C_HOT, C_OTHER };

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return res;
}

static void seed_rng(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) { /* splitmix64 */
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        r->s[i] = z ^ (z >> 31);
    }
}

/* Uniform in [0, n), n > 0 (Lemire's multiply-shift, bias < 2^-32). */
static uint64_t below(rng *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)next(r) * n) >> 64);
}

/* True with probability p (resolution 2^-32). */
static bool chance(rng *r, double p)
{
    return (double)(next(r) >> 32) < p * 4294967296.0;
}

/* Log-uniform-ish in [lo, hi]: a power-of-two bucket, then uniform. */
static uint64_t log_uniform(rng *r, uint64_t lo, uint64_t hi)
{
    int elo = 63 - __builtin_clzll(lo), ehi = 63 - __builtin_clzll(hi);
    int e = elo + (int)below(r, (uint64_t)(ehi - elo + 1));
    uint64_t a = 1ull << e, b = e >= 63 ? UINT64_MAX : (2ull << e) - 1;
    if (a < lo)
        a = lo;
    if (b > hi)
        b = hi;
    return a + below(r, b - a + 1);
}

static int check_cfg(plan_gen_random_cfg *c, char *err, size_t errlen)
{
    if (c->max_refs_per_op == 0)
        c->max_refs_per_op = 6;
    if (c->min_bytes == 0)
        c->min_bytes = 4096;
    if (c->max_bytes == 0)
        c->max_bytes = 64ull << 20;
    if (c->n_ops < 1 || c->n_ops > PLAN_MAX_OPS)
        return ho_errf(err, errlen, -EINVAL, "ops must be in [1, %u], "
                             "got %u", PLAN_MAX_OPS, c->n_ops);
    if (c->n_storages < 1 || c->n_storages > PLAN_MAX_STORAGES)
        return ho_errf(err, errlen, -EINVAL, "storages must be in "
                             "[1, %u], got %u", PLAN_MAX_STORAGES,
                             c->n_storages);
    if (c->max_refs_per_op > PLAN_MAX_OP_REFS)
        return ho_errf(err, errlen, -EINVAL, "max_refs_per_op must be "
                             "at most %u, got %u", PLAN_MAX_OP_REFS,
                             c->max_refs_per_op);
    if ((uint64_t)c->max_refs_per_op * c->n_ops > PLAN_MAX_REFS)
        return ho_errf(err, errlen, -E2BIG, "ops x max_refs_per_op "
                             "exceeds %u references", PLAN_MAX_REFS);
    if (c->min_bytes > c->max_bytes || c->max_bytes > PLAN_MAX_STORAGE_BYTES)
        return ho_errf(err, errlen, -EINVAL, "need 0 < min_bytes <= "
                             "max_bytes <= %llu", PLAN_MAX_STORAGE_BYTES);
    if (!(c->p_initial_device >= 0 && c->p_initial_host >= 0 &&
          c->p_initial_device + c->p_initial_host <= 1.0 &&
          c->p_retained >= 0 && c->p_retained <= 1.0 && c->p_pinned >= 0 &&
          c->p_pinned <= 1.0 && c->p_movable >= 0 && c->p_movable <= 1.0))
        return ho_errf(err, errlen, -EINVAL, "probabilities must be in "
                             "[0, 1] with p_initial_device + p_initial_host "
                             "<= 1");
    /* births are spread evenly: each op must have room for its births */
    if ((c->n_storages + (uint64_t)c->n_ops - 1) / c->n_ops >
        c->max_refs_per_op)
        return ho_errf(err, errlen, -EINVAL, "%u storages over %u ops "
                             "need more than %u references per op",
                             c->n_storages, c->n_ops, c->max_refs_per_op);
    return 0;
}

/* The state of one random trace being generated. */
typedef struct rgen {
    plan_gen_random_cfg c;
    plan_gen_b b;
    rng r;
    uint8_t *cls;              /* class of each storage (C_*) */
    uint32_t *born;            /* initial:none storages, in birth order */
    uint32_t *longl, *hot;     /* pick lists: long-lived, hot */
    uint32_t *stamp;           /* op + 1 of the last reference */
    uint32_t n_none, n_born, n_long, n_hot, next_none, none_rank;
} rgen;

/* Storage i: its class, size, initial, flags and kind. */
static void random_storage(rgen *x, uint32_t i)
{
    const plan_gen_random_cfg *c = &x->c;
    plan_storage s = {0};
    uint64_t u = below(&x->r, 100);

    x->cls[i] = u < 55 ? C_TRANSIENT : u < 80 ? C_SAVED : u < 90 ? C_HOT
                                                                  : C_OTHER;
    s.id = ID_BASE + (uint64_t)i * ID_STRIDE;
    s.bytes = log_uniform(&x->r, c->min_bytes, c->max_bytes);
    if (chance(&x->r, c->p_initial_device))
        s.initial = PLAN_INIT_DEVICE;
    else if (chance(&x->r, c->p_initial_device + c->p_initial_host < 1.0
                               ? c->p_initial_host /
                                     (1.0 - c->p_initial_device)
                               : 1.0))
        s.initial = PLAN_INIT_HOST;
    else
        s.initial = PLAN_INIT_NONE;
    s.retained = chance(&x->r, c->p_retained);
    s.pinned = chance(&x->r, c->p_pinned);
    if (c->p_movable > 0 && s.retained && s.initial != PLAN_INIT_NONE)
        s.movable = chance(&x->r, c->p_movable);
    s.kind = x->cls[i] == C_HOT ? PLAN_KIND_PARAM
             : s.initial == PLAN_INIT_HOST ? PLAN_KIND_OPTIMIZER
             : x->cls[i] == C_OTHER
                 ? (uint8_t)(PLAN_KIND_GRAD + below(&x->r, 4))
                 : PLAN_KIND_ACTIVATION;
    if (s.kind > PLAN_KIND_OTHER)
        s.kind = PLAN_KIND_OTHER;
    if (s.initial == PLAN_INIT_NONE) {
        x->n_none++;
    } else {
        /* present from the start: pickable at once */
        if (x->cls[i] == C_HOT)
            x->hot[x->n_hot++] = i;
        else
            x->longl[x->n_long++] = i;
    }
    x->b.rc = plan_trace_add_storage(x->b.t, &s, NULL, x->b.err,
                                     x->b.errlen);
}

/* The births of op `op`: initial:none storages, rank * n_ops / n_none,
 * each written by it.  Returns how many. */
static uint32_t op_births(rgen *x, uint32_t op)
{
    uint32_t births = 0;
    while (x->none_rank < x->n_none &&
           (uint64_t)x->none_rank * x->c.n_ops / x->n_none == op) {
        while (x->b.t->storages[x->next_none].initial != PLAN_INIT_NONE)
            x->next_none++;
        plan_gen_write(&x->b, x->next_none);
        x->stamp[x->next_none] = op + 1;
        x->born[x->n_born++] = x->next_none;
        x->next_none++;
        x->none_rank++;
        births++;
    }
    return births;
}

/* One pick: a recently born storage, a long-lived or a hot one; into
 * *ret_s, false when the chosen list had nothing. */
static bool pick(rgen *x, uint32_t births, uint32_t *ret_s)
{
    uint64_t u = below(&x->r, 100);
    uint32_t recent = x->n_born - births;

    if (u < 45 || u >= 95) { /* recently born (before this op) */
        /* geometric: the latest birth half the time, the one before a
         * quarter, ... so these die young */
        uint32_t back = (uint32_t)__builtin_ctzll(next(&x->r) |
                                                  (1ull << RECENT));
        if (back >= recent)
            return false;
        *ret_s = x->born[recent - 1 - back];
    } else if (u < 75) {     /* anything long-lived */
        if (!x->n_long)
            return false;
        *ret_s = x->longl[below(&x->r, x->n_long)];
    } else {                 /* hot */
        if (!x->n_hot)
            return false;
        *ret_s = x->hot[below(&x->r, x->n_hot)];
    }
    return true;
}

/* Up to max_refs_per_op - births more references of op `op`. */
static void op_references(rgen *x, uint32_t op, uint32_t births)
{
    uint32_t extra = x->c.max_refs_per_op > births
                         ? (uint32_t)below(&x->r, x->c.max_refs_per_op -
                                                      births + 1)
                         : 0;
    /* each pick attempt uses up at least one of the `extra` refs, so the
     * loop ends even when nothing can be picked */
    for (uint32_t e = 0; e < extra;) {
        uint32_t s = 0;
        if (!pick(x, births, &s) || x->stamp[s] == op + 1) {
            e++;
            continue;
        }
        x->stamp[s] = op + 1;
        /* read (80%), read+write (13%, two references), write (7%) */
        uint64_t u = below(&x->r, 100);
        if (u >= 80 && u < 93 && extra - e < 2)
            u = 0;
        if (u < 93) {
            plan_gen_read(&x->b, s);
            e++;
        }
        if (u >= 80) {
            plan_gen_write(&x->b, s);
            e++;
        }
    }
    /* this op's newborns join the pick lists for later ops */
    for (uint32_t i = x->n_born - births; i < x->n_born; i++) {
        uint32_t s = x->born[i];
        if (x->cls[s] == C_HOT)
            x->hot[x->n_hot++] = s;
        else if (x->cls[s] != C_TRANSIENT)
            x->longl[x->n_long++] = s;
    }
}

/* 0.25-512 us, log-spread; one op in a hundred ten times longer. */
static double op_duration(rgen *x)
{
    uint32_t ex = (uint32_t)below(&x->r, 11);
    double d = (double)((1u << ex) + below(&x->r, 1u << ex)) / 4.0;
    if (below(&x->r, 100) == 0)
        d *= 10.0;
    return d;
}

int plan_gen_random(const plan_gen_random_cfg *cfg, plan_trace **ret_trace,
                    char *err, size_t errlen)
{
    plan_link link = {16.0, 16.0, 10.0, true};
    char name[PLAN_MAX_NAME];
    rgen x;
    int k;

    if (err && errlen)
        err[0] = '\0';
    memset(&x, 0, sizeof x);
    x.c = *cfg;
    if ((k = check_cfg(&x.c, err, errlen)) < 0)
        return k;
    seed_rng(&x.r, x.c.seed);
    snprintf(name, sizeof name, "random-s%llu-o%u-st%u",
             (unsigned long long)x.c.seed, x.c.n_ops, x.c.n_storages);
    plan_gen_begin(&x.b, name, &link, err, errlen);
    x.cls = malloc(x.c.n_storages);
    x.born = malloc(sizeof *x.born * x.c.n_storages);
    x.longl = malloc(sizeof *x.longl * x.c.n_storages);
    x.hot = malloc(sizeof *x.hot * x.c.n_storages);
    x.stamp = calloc(x.c.n_storages, sizeof *x.stamp);
    if (!x.cls || !x.born || !x.longl || !x.hot || !x.stamp) {
        x.b.rc = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < x.c.n_storages && x.b.rc == 0; i++)
        random_storage(&x, i);
    for (uint32_t op = 0; op < x.c.n_ops && x.b.rc == 0; op++) {
        op_references(&x, op, op_births(&x, op));
        plan_gen_op(&x.b, op_duration(&x), "op%u", op);
    }
out:
    HO_FREE_ALL(x.cls, x.born, x.longl, x.hot, x.stamp);
    return plan_gen_finish(&x.b, ret_trace);
}
