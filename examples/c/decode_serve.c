/*
 * examples/c/decode_serve.c - ho-decode-serve: an inference server's decode
 * loop over a paged KV cache held in a residency region
 * (hyperoffload/residency.h), with real bytes (docs/residency.md).
 *
 * Workload (generated here, deterministic from --seed): requests arrive
 * with Poisson gaps (--rate per step); each has a shared prefix of
 * --prefix-tokens tokens from one of --prefixes groups, a private prompt
 * of 64..192 tokens and 32..96 output tokens.  KV bytes per token come
 * from the model profile (--kv-token-bytes, scripts compute it from
 * ../shared/workloads/models.json: 2 * layers * kv_heads * head_dim * 2).
 * Every token's slice of a block is filled with a pattern of (stream,
 * position); every block read by a step is checked (the first 8 words and
 * the last word of every token slice in it), and any mismatch fails the
 * run.
 *
 * Serving: up to --max-running sequences are admitted (host copies bound
 * them); each step runs a micro-batch of --batch of them, round robin, and
 * appends one token to each; the device budget holds fewer blocks than
 * the running sequences' KV.  Policies (--policy):
 *   hints  this library's policy: after each step the server announces the
 *          step at which every running sequence runs next (need), so the
 *          region prefetches the next micro-batch during this step's
 *          compute and evicts the furthest one, with background
 *          write-back down to the low watermark;
 *   lru    reactive swap (vLLM's swap space): no hints; when its turn
 *          comes a sequence is swapped in whole (ho_region_fetch: every
 *          missing block's copy queued, one wait), LRU victims written
 *          back on demand;
 *   none   no offload: a request is admitted only when its whole KV
 *          (prompt + output) fits on device; the others wait.
 * Compute per step: reading every block of the micro-batch (the check)
 * plus --step-us of device time (the rest of the model; a sleep).
 *
 * With --socket the region's host copies are an extent of the session's
 * DDR arena; --store maps shared prefixes from the daemon's prefix store
 * (publishing those it had to compute).  Prints one line of key=value
 * figures; --trace FILE writes "step device_blocks high low" per step.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hyperoffload/residency.h"

#define MAX_BLOCKS_SEQ 64

typedef struct seq {
    uint32_t id, group;
    uint32_t prefix_tokens, prompt, output, done; /* tokens */
    uint32_t len;                 /* tokens in the cache */
    uint32_t nb;
    uint32_t blk[MAX_BLOCKS_SEQ];
    uint32_t n_store;             /* leading blocks from the store */
    uint64_t arrival;
    int state;                    /* 0 waiting, 1 running, 2 done */
} seq;

static struct {
    const char *policy, *socket, *job, *name, *trace;
    uint32_t requests, block_tokens, max_running, batch, prefixes,
        prefix_tokens, step_us, pause_at, window, prefills;
    uint64_t kv_token, budget, seed;
    double rate;
    int store;
} o = {
    .policy = "hints", .job = "decode", .name = "decode", .requests = 64,
    .block_tokens = 16, .max_running = 32, .batch = 8, .prefixes = 4,
    .prefix_tokens = 64, .step_us = 400, .prefills = 1, .kv_token = 12288,
    .budget = 48ull << 20, .seed = 1, .rate = 0.5,
};

static uint64_t rs;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static uint64_t word(uint64_t stream, uint64_t pos, uint64_t i)
{
    uint64_t x = stream * 0x9e3779b97f4a7c15ull ^ (pos << 20) ^ i;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 29);
}

/* stream of a token: the group's prefix or the sequence's own */
static uint64_t stream_of(const seq *s, uint32_t pos)
{
    return pos < s->prefix_tokens ? 1000000u + s->group : s->id;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "ho-decode-serve: %s: %s (%s)\n", what,
            ho_strerror(rc), ho_runtime_last_error());
    exit(1);
}

/* The rest of the model's step: device work, which leaves the host's
 * cores to the copy engines (a sleep, not a spin). */
static void compute_us(uint32_t us)
{
    struct timespec ts = {.tv_sec = us / 1000000,
                          .tv_nsec = (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static ho_region *R;
static uint64_t verified_blocks, bad_blocks;

static void write_token(seq *s, uint32_t pos)
{
    uint32_t bi = pos / o.block_tokens;
    void *p;
    int rc = ho_block_access(R, s->blk[bi], 1, &p);
    if (rc < 0)
        die("write access", rc);
    uint64_t *w = (uint64_t *)((uint8_t *)p + (uint64_t)(pos %
                                                         o.block_tokens) *
                               o.kv_token);
    uint64_t st = stream_of(s, pos);
    for (uint64_t i = 0; i < o.kv_token / 8; i++)
        w[i] = word(st, pos, i);
}

static void check_block(seq *s, uint32_t bi)
{
    void *p;
    int rc = ho_block_access(R, s->blk[bi], 0, &p);
    if (rc < 0)
        die("read access", rc);
    uint32_t first = bi * o.block_tokens;
    uint32_t last = first + o.block_tokens;
    if (last > s->len)
        last = s->len;
    uint64_t n = o.kv_token / 8;
    for (uint32_t pos = first; pos < last; pos++) {
        const uint64_t *w = (const uint64_t *)((const uint8_t *)p +
                                               (uint64_t)(pos - first) *
                                                   o.kv_token);
        uint64_t st = stream_of(s, pos);
        int ok = w[n - 1] == word(st, pos, n - 1);
        for (uint64_t i = 0; i < 8 && i < n; i++)
            ok &= w[i] == word(st, pos, i);
        if (!ok) {
            bad_blocks++;
            fprintf(stderr, "ho-decode-serve: MISMATCH seq %u block %u "
                    "token %u\n", s->id, bi, pos);
            exit(3);
        }
    }
    verified_blocks++;
}

static uint64_t store_hits, store_lookups, published;

static void prefix_key(char *k, size_t n, uint32_t g)
{
    snprintf(k, n, "kv:prefix%u:%ut:%" PRIu64 "B", g, o.prefix_tokens,
             o.kv_token);
}

/* Blocks for the sequence's prompt, written in the current step (one
 * region step per server step, so that the steps the hints announce are
 * the steps the sequences run at); 0, or -1 when the region is full. */
static int prefill(seq *s)
{
    uint32_t pre_blocks = s->prefix_tokens / o.block_tokens;
    s->nb = 0;
    s->n_store = 0;
    char key[HO_RES_KEY_MAX + 1];
    prefix_key(key, sizeof key, s->group);
    if (o.store && pre_blocks) {
        size_t got = 0;
        store_lookups++;
        int rc = ho_region_map_prefix(R, key, s->blk, MAX_BLOCKS_SEQ, &got);
        if (rc == 0) {
            store_hits++;
            s->nb = s->n_store = (uint32_t)got;
        } else if (rc != -ENOENT && rc != HO_E_QUOTA) {
            die("map prefix", rc);
        }
    }
    uint32_t need = (s->prompt + o.block_tokens - 1) / o.block_tokens;
    while (s->nb < need) {
        int rc = ho_block_alloc(R, &s->blk[s->nb]);
        if (rc == HO_E_QUOTA) {
            for (uint32_t i = 0; i < s->nb; i++)
                ho_block_free(R, s->blk[i]);
            s->nb = 0;
            return -1;
        }
        if (rc < 0)
            die("block alloc", rc);
        s->nb++;
    }
    uint32_t from = s->n_store ? s->n_store * o.block_tokens : 0;
    for (uint32_t pos = from; pos < s->prompt; pos++)
        write_token(s, pos);
    s->len = s->prompt;
    if (o.store && pre_blocks && !s->n_store) {
        int rc = ho_region_publish(R, key, s->blk, pre_blocks, 0);
        if (rc == 0)
            published++;
        else if (rc != -EEXIST && rc != HO_E_QUOTA)
            die("publish", rc);
    }
    return 0;
}

static int cmp64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--policy")) o.policy = v;
        else if (!strcmp(k, "--socket")) o.socket = v;
        else if (!strcmp(k, "--job")) o.job = v;
        else if (!strcmp(k, "--name")) o.name = v;
        else if (!strcmp(k, "--trace")) o.trace = v;
        else if (!strcmp(k, "--requests")) o.requests = (uint32_t)atoi(v);
        else if (!strcmp(k, "--block-tokens")) o.block_tokens = (uint32_t)atoi(v);
        else if (!strcmp(k, "--max-running")) o.max_running = (uint32_t)atoi(v);
        else if (!strcmp(k, "--batch")) o.batch = (uint32_t)atoi(v);
        else if (!strcmp(k, "--prefixes")) o.prefixes = (uint32_t)atoi(v);
        else if (!strcmp(k, "--prefix-tokens")) o.prefix_tokens = (uint32_t)atoi(v);
        else if (!strcmp(k, "--step-us")) o.step_us = (uint32_t)atoi(v);
        else if (!strcmp(k, "--window")) o.window = (uint32_t)atoi(v);
        else if (!strcmp(k, "--prefills")) o.prefills = (uint32_t)atoi(v);
        else if (!strcmp(k, "--pause-at")) o.pause_at = (uint32_t)atoi(v);
        else if (!strcmp(k, "--kv-token-bytes")) o.kv_token = strtoull(v, NULL, 0);
        else if (!strcmp(k, "--budget")) o.budget = strtoull(v, NULL, 0);
        else if (!strcmp(k, "--seed")) o.seed = strtoull(v, NULL, 0);
        else if (!strcmp(k, "--rate")) o.rate = atof(v);
        else if (!strcmp(k, "--store")) o.store = atoi(v);
        else {
            fprintf(stderr, "ho-decode-serve: unknown option %s\n", k);
            return 2;
        }
    }
    int none = !strcmp(o.policy, "none");
    ho_res_policy pol = !strcmp(o.policy, "lru") ? HO_RES_LRU : HO_RES_HINTS;
    if (o.kv_token % 64 || o.kv_token < 64 || o.block_tokens == 0 ||
        o.prefix_tokens % o.block_tokens || o.batch == 0 || o.prefixes == 0 ||
        o.prefills == 0) {
        fprintf(stderr, "ho-decode-serve: bad sizes\n");
        return 2;
    }
    uint64_t bb = o.kv_token * o.block_tokens;

    /* the request stream */
    rs = o.seed * 2654435761u + 7;
    seq *q = calloc(o.requests, sizeof(seq));
    double t = 0;
    for (uint32_t i = 0; i < o.requests; i++) {
        t += -log(1.0 - (double)(rnd() % 1000000) / 1e6) / o.rate;
        q[i].id = i + 1;
        q[i].group = (uint32_t)(rnd() % o.prefixes);
        q[i].prefix_tokens = o.prefix_tokens;
        q[i].prompt = o.prefix_tokens + 64 + (uint32_t)(rnd() % 129);
        q[i].output = 32 + (uint32_t)(rnd() % 65);
        q[i].arrival = (uint64_t)t;
        if ((q[i].prompt + q[i].output) / o.block_tokens + 1 >= MAX_BLOCKS_SEQ)
            q[i].output = MAX_BLOCKS_SEQ * o.block_tokens - q[i].prompt - 2 *
                          o.block_tokens;
    }

    ho_client *c = NULL;
    int rc;
    if (o.socket) {
        if ((rc = ho_connect(o.socket, o.name, &c)) < 0)
            die("connect", rc);
        if ((rc = ho_register(c, o.job, -1, 0)) < 0)
            die("register", rc);
    }
    ho_device *dev = NULL;
    if ((rc = ho_device_open("host", 0, o.budget + bb, &dev)) < 0)
        die("device", rc);
    uint32_t per_seq = MAX_BLOCKS_SEQ;
    ho_region_config cfg = {
        .block_bytes = bb,
        .max_blocks = o.max_running * per_seq,
        .device_budget = o.budget, .high_pct = 100,
        .low_pct = none ? 100 : 85, .policy = pol, .prefetch_window = o.window ? o.window : 1,
        .name = o.name,
    };
    if ((rc = ho_region_new(c, dev, &cfg, &R)) < 0)
        die("region", rc);
    ho_region_stats st;
    ho_region_get_stats(R, &st);
    FILE *tr = o.trace ? fopen(o.trace, "w") : NULL;
    uint64_t prev_ns[HO_STALL_N] = {0}, prev_miss = 0, prev_late = 0;

    seq **run = calloc(o.max_running, sizeof(seq *));
    seq **order = calloc(o.max_running, sizeof(seq *));
    uint32_t nrun = 0, next_req = 0, finished = 0;
    uint64_t reserved = 0; /* none: blocks reserved by running sequences */
    uint64_t tokens = 0, step = 0, waited = 0;
    uint64_t kv_peak = 0; /* blocks of the running sequences' KV, max */
    uint64_t cap_steps = 1u << 20;
    uint64_t *stalls = calloc(cap_steps, sizeof(uint64_t));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (finished < o.requests) {
        /* admit arrivals: --prefills per step at most, their prompt
         * written in this step (its blocks are in use until it ends) */
        uint32_t admitted = 0;
        uint64_t pre_touched = 0;
        while (next_req < o.requests && q[next_req].arrival <= step &&
               nrun < o.max_running && admitted < o.prefills) {
            seq *s = &q[next_req];
            uint64_t want = (s->prompt + s->output) / o.block_tokens + 1;
            if (none && reserved + want > st.slots) {
                waited++;
                break;
            }
            if (prefill(s) < 0)
                break;
            admitted++;
            pre_touched += s->nb - s->n_store;
            reserved += want;
            s->state = 1;
            run[nrun++] = s;
            next_req++;
        }
        if (o.pause_at && step == o.pause_at) {
            printf("paused step=%" PRIu64 "\n", step);
            fflush(stdout);
            raise(SIGSTOP);
        }
        uint64_t kv_now = 0;
        for (uint32_t k = 0; k < nrun; k++)
            kv_now += run[k]->nb;
        if (kv_now > kv_peak)
            kv_peak = kv_now;
        /* one micro-batch: the first nb of the running list */
        /* (the same batch under every policy: a step computes --batch
         * sequences in --step-us) */
        uint32_t nb = o.batch < nrun ? o.batch : nrun;
        /* a batch's blocks (and one new block each) must fit under the
         * high watermark: a smaller batch when they would not */
        uint32_t fit = 0;
        uint64_t sum = pre_touched;
        while (fit < nb && sum + run[fit]->nb + 1 <= st.high)
            sum += run[fit++]->nb + 1;
        nb = fit;
        /* swap in the batch's sequences, whole (what is not on device
         * yet is fetched together; under hints it was prefetched) */
        for (uint32_t k = 0; k < nb; k++)
            if ((rc = ho_region_fetch(R, run[k]->blk, run[k]->nb)) < 0)
                die("fetch", rc);
        for (uint32_t k = 0; k < nb; k++) {
            seq *s = run[k];
            for (uint32_t b = 0; b < s->nb; b++)
                check_block(s, b);
            if (s->len % o.block_tokens == 0) {
                if ((rc = ho_block_alloc(R, &s->blk[s->nb])) < 0)
                    die("block alloc (decode)", rc);
                s->nb++;
            }
            write_token(s, s->len);
            s->len++;
            s->done++;
            tokens++;
        }
        /* hints, given before this step's compute so that the copies
         * overlap it: when each running sequence runs next (the batch
         * that just ran goes to the back) */
        if (pol == HO_RES_HINTS && !none && nrun) {
            /* positions in the running list as it will be after this
             * step's finished sequences leave it */
            uint32_t pos = 0;
            for (uint32_t k = 0; k < nrun; k++) {
                seq *s = run[(nb + k) % nrun];
                if (s->done >= s->output)
                    continue;
                uint64_t when = ho_region_steps(R) + 1 + pos++ / o.batch;
                if ((rc = ho_region_need(R, s->blk, s->nb, when)) < 0)
                    die("need", rc);
            }
        }
        compute_us(o.step_us);
        /* retire finished sequences; the batch that ran goes to the back
         * (round robin) */
        uint32_t w = 0;
        for (uint32_t k = 0; k < nrun; k++) {
            seq *s = run[(nb + k) % nrun];
            if (s->done >= s->output) {
                for (uint32_t b = 0; b < s->nb; b++)
                    if ((rc = ho_block_free(R, s->blk[b])) < 0)
                        die("block free", rc);
                reserved -= (s->prompt + s->output) / o.block_tokens + 1;
                s->state = 2;
                finished++;
            } else {
                order[w++] = s;
            }
        }
        memcpy(run, order, w * sizeof(seq *));
        nrun = w;
        uint64_t stall = 0;
        if ((rc = ho_region_step(R, &stall)) < 0)
            die("step", rc);
        if (step < cap_steps)
            stalls[step] = stall;
        ho_region_get_stats(R, &st);
        if (st.device_blocks > st.high) {
            fprintf(stderr, "ho-decode-serve: watermark exceeded\n");
            return 4;
        }
        if (tr) {
            fprintf(tr, "%" PRIu64 " %u %u %u %" PRIu64, step,
                    st.device_blocks, st.high, st.low, stall);
            for (int k = 0; k < HO_STALL_N; k++) {
                fprintf(tr, " %" PRIu64, st.stall_ns[k] - prev_ns[k]);
                prev_ns[k] = st.stall_ns[k];
            }
            fprintf(tr, " %" PRIu64 " %" PRIu64 " %u\n",
                    st.misses - prev_miss, st.late - prev_late, nb);
            prev_miss = st.misses;
            prev_late = st.late;
        }
        step++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    uint64_t n = step < cap_steps ? step : cap_steps;
    qsort(stalls, n, sizeof(uint64_t), cmp64);
    ho_region_get_stats(R, &st);
    uint64_t ddr = 0;
    if (c) {
        ho_usage u;
        if (ho_stats(c, NULL, 0, NULL, &u) == 0)
            ddr = u.ddr_bytes;
    } else {
        ddr = st.host_bytes;
    }
    printf("policy=%s tokens=%" PRIu64 " steps=%" PRIu64 " wall_s=%.3f "
           "tokens_per_s=%.1f stall_p50_us=%.1f stall_p99_us=%.1f "
           "stall_total_ms=%.1f h2d_mb=%.1f d2h_mb=%.1f flash_mb=%.1f "
           "ddr_mb=%.1f device_peak=%u high=%u low=%u slots=%u "
           "kv_peak_blocks=%" PRIu64 " "
           "misses=%" PRIu64 " prefetches=%" PRIu64 " evictions=%" PRIu64
           " writebacks=%" PRIu64 " waited=%" PRIu64 " verified_blocks=%"
           PRIu64 " bad_blocks=%" PRIu64 " store_lookups=%" PRIu64
           " store_hits=%" PRIu64 " published=%" PRIu64 "\n",
           o.policy, tokens, step, wall, (double)tokens / wall,
           n ? (double)stalls[n / 2] / 1e3 : 0.0,
           n ? (double)stalls[(n * 99) / 100] / 1e3 : 0.0,
           (double)st.stall_total_ns / 1e6, (double)st.bytes_h2d / 1e6,
           (double)st.bytes_d2h / 1e6, (double)st.bytes_flash / 1e6,
           (double)ddr / 1e6, st.device_peak,
           st.high, st.low, st.slots, kv_peak, st.misses, st.prefetches, st.evictions,
           st.writebacks, waited, verified_blocks, bad_blocks, store_lookups,
           store_hits, published);
    if (tr)
        fclose(tr);
    ho_region_free(R);
    ho_device_close(dev);
    ho_close(c);
    free(q);
    free(run);
    free(order);
    free(stalls);
    return bad_blocks ? 3 : 0;
}
