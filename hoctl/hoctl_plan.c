/*
 * hoctl/hoctl_plan.c - hoctl's offline planning tools (no daemon):
 *
 *   hoctl trace gen train|decode|random [OPTIONS] [--out T]
 *   hoctl trace show T
 *   hoctl trace convert IN OUT [--to json|pb]
 *   hoctl schedule convert IN OUT [--to json|pb]
 *   hoctl schedule check --trace T --schedule S [--svg F]
 *   hoctl plan --trace T --budget B [--planner P] [--out S] [--svg F]
 *              [--bound off|fast|full] [--daemon]
 *   hoctl plan --trace T --curve budget|bandwidth [--points N |
 *              --budgets a,b,c | --scales a,b,c] [--budget B]
 *
 * Every command also takes the global --json (one JSON object with
 * "schema": 1 and raw numbers on stdout).  Traces and schedules are read in
 * either format (planner/plan.h detects it); written as protobuf when the
 * file name ends in ".pb" or --to pb is given, as JSON otherwise ("-" is
 * stdout, JSON only).  Exit codes as in hoctl.h: 0 ok, 1 failed (bad file,
 * invalid schedule, infeasible budget), 2 usage, 4 file not found.
 * Everything is printed through hoctl/output.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hoctl/hoctl.h"
#include "hoctl/hoctl_curve.h"
#include "hoctl/hoctl_plan_daemon.h"
#include "hoctl/output.h"
#include "hoctl/hoctl_parse.h"
#include "hyperoffload/errors.h"
#include "hyperoffload/size.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "planner/gen/gen.h"
#include "planner/viz/plan_svg.h"

#define ERRLEN 512

/* ------------------------------------------------------------ helpers */

/* Exit code for a failure to read a file. */
static int read_failure(int r, const char *what, const char *err)
{
    fprintf(stderr, "hoctl: cannot read %s: %s\n", what,
            err[0] ? err : ho_strerror(r));
    return r == -ENOENT ? HOCTL_EXIT_NOT_FOUND : HOCTL_EXIT_FAILED;
}

/* --------------------------------------------------------- option parsing */

typedef struct opt {
    const char *name;   /* without the leading "--" */
    bool has_arg;
    const char **value; /* has_arg: where the argument goes */
    bool *flag;         /* !has_arg: set to true */
} opt;

#define OPT_END {NULL, false, NULL, NULL}

/* Parse argv into options (--name VALUE, --name=VALUE, --flag) and up to
 * max_pos positional words.  HOCTL_EXIT_OK or a usage error. */
static int parse_opts(const char *cmd, int argc, char **argv, const opt *opts,
                      const char **pos, int max_pos, int *ret_npos)
{
    int npos = 0;

    bool options = true; /* until `--` */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const opt *o;
        const char *eq;
        size_t n;

        if (options && strcmp(a, "--") == 0) {
            options = false;
            continue;
        }
        if (!options || strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (npos >= max_pos)
                return hoctl_usage_error("%s: unexpected argument '%s'", cmd,
                                         a);
            pos[npos++] = a;
            continue;
        }
        a += 2;
        eq = strchr(a, '=');
        n = eq ? (size_t)(eq - a) : strlen(a);
        for (o = opts; o->name; o++)
            if (strlen(o->name) == n && strncmp(o->name, a, n) == 0)
                break;
        if (!o->name)
            return hoctl_usage_error("%s: unknown option '--%.*s'", cmd,
                                     (int)n, a);
        if (!o->has_arg) {
            if (eq)
                return hoctl_usage_error("%s: --%s takes no value", cmd,
                                         o->name);
            *o->flag = true;
        } else if (eq) {
            *o->value = eq + 1;
        } else {
            if (i + 1 >= argc)
                return hoctl_usage_error("%s: --%s needs a value", cmd,
                                         o->name);
            *o->value = argv[++i];
        }
    }
    *ret_npos = npos;
    return HOCTL_EXIT_OK;
}

static int parse_u64(const char *opt_name, const char *s, uint64_t min,
                     uint64_t max, uint64_t *ret)
{
    char *end;
    unsigned long long v;

    errno = 0;
    if (!s || !*s || *s == '-' || *s == '+')
        goto bad;
    v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        goto bad;
    *ret = v;
    return 0;
bad:
    hoctl_usage_error("--%s: expected an integer in [%llu, %llu], got '%s'",
                      opt_name, (unsigned long long)min,
                      (unsigned long long)max, s ? s : "");
    return -EINVAL;
}

static int parse_u32(const char *opt_name, const char *s, uint32_t min,
                     uint32_t max, uint32_t *ret)
{
    uint64_t v;
    int r = parse_u64(opt_name, s, min, max, &v);
    if (r == 0)
        *ret = (uint32_t)v;
    return r;
}

/* An optional u32 option: 0 when absent (*ret keeps its default). */
static int parse_u32_opt(const char *opt_name, const char *s, uint32_t min,
                         uint32_t max, uint32_t *ret)
{
    return s ? parse_u32(opt_name, s, min, max, ret) : 0;
}

static int parse_prob(const char *opt_name, const char *s, double *ret)
{
    char *end;
    double v;

    if (!s)
        return 0; /* absent: the default stays */
    errno = 0;
    v = *s ? strtod(s, &end) : NAN;
    if (!*s || errno || *end || !(v >= 0.0 && v <= 1.0)) {
        hoctl_usage_error("--%s: expected a probability in [0, 1], got '%s'",
                          opt_name, s);
        return -EINVAL;
    }
    *ret = v;
    return 0;
}

/* Output format: --to wins, else the extension (.pb protobuf, JSON
 * otherwise).  1 = protobuf, 0 = JSON, -1 = bad --to. */
static int want_pb(const char *path, const char *to)
{
    size_t n = strlen(path);
    if (to) {
        if (strcmp(to, "pb") == 0)
            return 1;
        if (strcmp(to, "json") == 0)
            return 0;
        return -1;
    }
    return n > 3 && strcmp(path + n - 3, ".pb") == 0;
}

/* Write a trace (or schedule) to path in JSON or protobuf; message on
 * failure.  0 or negative. */
static int write_out(const char *path, bool pb, const plan_trace *t,
                     const plan_schedule *s)
{
    FILE *f;
    int r;

    if (strcmp(path, "-") == 0) {
        if (pb) {
            fputs("hoctl: protobuf is not written to stdout\n", stderr);
            return -EINVAL;
        }
        r = t ? plan_trace_write_json(t, stdout)
              : plan_schedule_write_json(s, stdout);
        if (r < 0)
            fprintf(stderr, "hoctl: writing to stdout: %s\n",
                    ho_strerror(r));
        return r;
    }
    f = fopen(path, "wb");
    if (!f) {
        r = -errno;
        fprintf(stderr, "hoctl: %s: %s\n", path, strerror(-r));
        return r;
    }
    if (pb) {
        uint8_t *buf = NULL;
        size_t len = 0;
        r = t ? plan_trace_to_pb(t, &buf, &len)
              : plan_schedule_to_pb(s, &buf, &len);
        if (r == 0 && fwrite(buf, 1, len, f) != len)
            r = -EIO;
        free(buf);
    } else {
        r = t ? plan_trace_write_json(t, f) : plan_schedule_write_json(s, f);
    }
    if (fclose(f) != 0 && r == 0)
        r = -EIO;
    if (r < 0)
        fprintf(stderr, "hoctl: writing %s: %s\n", path, ho_strerror(r));
    return r;
}

/* ------------------------------------------------------------ trace gen */

static const char trace_usage[] =
    "usage: hoctl trace gen train (--model M | --layers N --hidden H "
    "--heads A [--kv-heads K]\n"
    "                              --ffn F --vocab V [--gelu]) [--seq S] "
    "[--mbs B] [--micro N]\n"
    "                             [--device D] "
    "[--params device|host|movable]\n"
    "                             [--optimizer device|host|movable] "
    "[--no-optimizer-step]\n"
    "                             [--dtype bf16|fp16|fp32] [--out T]\n"
    "       hoctl trace gen decode (--model M | dims) [--prompt P] "
    "[--tokens N] [--batch B]\n"
    "                              [--kv-block K] [--device D] [--dtype ...] "
    "[--out T]\n"
    "       hoctl trace gen random [--seed S] --ops N --storages M "
    "[--max-refs R]\n"
    "                              [--min-bytes SIZE] [--max-bytes SIZE] "
    "[--p-device P] [--p-host P]\n"
    "                              [--p-retained P] [--p-pinned P] "
    "[--out T]\n"
    "       hoctl trace show T\n"
    "       hoctl trace convert IN OUT [--to json|pb]\n"
    "Models: llama2-7b llama2-13b llama3-8b llama3-70b llama-65b "
    "qwen2.5-0.5b gpt3-175b\n"
    "Devices: 910b 910c h200 a100.  Without --out the trace goes to stdout "
    "(JSON).\n"
    "train and decode also take --tflops F --hbm-gbps G --link-gbps G "
    "--latency-us U,\n"
    "each overriding that figure of the --device profile (a custom "
    "device).\n";

/* Model from --model and/or explicit dimensions (which override). */
typedef struct model_args {
    const char *model, *layers, *hidden, *heads, *kv_heads, *ffn, *vocab;
    bool gelu;
} model_args;

/* The option rows of model_args `ma` (train and decode take them all). */
#define MODEL_OPTS(ma)                                                     \
    {"model", true, &(ma).model, NULL},                                    \
    {"layers", true, &(ma).layers, NULL},                                  \
    {"hidden", true, &(ma).hidden, NULL},                                  \
    {"heads", true, &(ma).heads, NULL},                                    \
    {"kv-heads", true, &(ma).kv_heads, NULL},                              \
    {"ffn", true, &(ma).ffn, NULL},                                        \
    {"vocab", true, &(ma).vocab, NULL},                                    \
    {"gelu", false, NULL, &(ma).gelu}

static int resolve_model(const model_args *a, plan_model *ret)
{
    plan_model m;
    memset(&m, 0, sizeof m);
    if (a->model) {
        const plan_model *f = plan_model_find(a->model);
        if (!f)
            return hoctl_usage_error("unknown model '%s' (see hoctl trace "
                                     "help)", a->model);
        m = *f;
    } else {
        if (!a->layers || !a->hidden || !a->heads || !a->ffn || !a->vocab)
            return hoctl_usage_error("give --model, or --layers --hidden "
                                     "--heads --ffn --vocab");
        m.swiglu = true;
    }
    if (parse_u32_opt("layers", a->layers, 1, 1024, &m.layers) ||
        parse_u32_opt("hidden", a->hidden, 1, 1u << 20, &m.hidden) ||
        parse_u32_opt("heads", a->heads, 1, 1u << 20, &m.heads) ||
        parse_u32_opt("kv-heads", a->kv_heads, 1, 1u << 20, &m.kv_heads) ||
        parse_u32_opt("ffn", a->ffn, 1, 1u << 22, &m.ffn) ||
        parse_u32_opt("vocab", a->vocab, 1, 1u << 24, &m.vocab))
        return HOCTL_EXIT_USAGE;
    if (!a->model && !a->kv_heads)
        m.kv_heads = m.heads;
    if (a->gelu)
        m.swiglu = false;
    /* a model changed by explicit dimensions is no longer that model */
    if (!a->model || a->layers || a->hidden || a->heads || a->kv_heads ||
        a->ffn || a->vocab || a->gelu)
        snprintf(m.name, sizeof m.name, "custom");
    *ret = m;
    return HOCTL_EXIT_OK;
}

/* Explicit device-profile figures (--tflops --hbm-gbps --link-gbps
 * --latency-us), each overriding the named profile's. */
typedef struct profile_args {
    const char *tflops, *hbm_gbps, *link_gbps, *latency_us;
} profile_args;

/* The option rows of profile_args `pa`. */
#define PROFILE_OPTS(pa)                                                   \
    {"tflops", true, &(pa).tflops, NULL},                                  \
    {"hbm-gbps", true, &(pa).hbm_gbps, NULL},                              \
    {"link-gbps", true, &(pa).link_gbps, NULL},                            \
    {"latency-us", true, &(pa).latency_us, NULL}

/* A finite number in (lo, hi] (or [0, hi] when lo < 0); 0 when s is NULL
 * (*ret keeps its default). */
static int parse_figure(const char *opt_name, const char *s, double lo,
                        double hi, double *ret)
{
    char *end;
    double v;

    if (!s)
        return 0;
    errno = 0;
    v = *s ? strtod(s, &end) : NAN;
    if (!*s || errno || *end || !isfinite(v) || v > hi ||
        (lo < 0 ? v < 0 : v <= lo)) {
        hoctl_usage_error("--%s: expected a number in %s%g, %g], got '%s'",
                          opt_name, lo < 0 ? "[" : "(", lo < 0 ? 0.0 : lo,
                          hi, s);
        return -EINVAL;
    }
    *ret = v;
    return 0;
}

static int resolve_device(const char *name, const profile_args *pa,
                          plan_device *ret)
{
    const plan_device *d = plan_device_find(name ? name : "910b");
    plan_device dev;

    if (!d)
        return hoctl_usage_error("unknown device '%s' (910b, 910c, h200, "
                                 "a100)", name);
    dev = *d;
    if (parse_figure("tflops", pa->tflops, 0, 1e6, &dev.tflops) ||
        parse_figure("hbm-gbps", pa->hbm_gbps, 0, 1e6, &dev.hbm_gbps) ||
        parse_figure("link-gbps", pa->link_gbps, 0, 1e6, &dev.link_gbps) ||
        parse_figure("latency-us", pa->latency_us, -1, 1e9,
                     &dev.link_latency_us))
        return HOCTL_EXIT_USAGE;
    if (pa->tflops || pa->hbm_gbps || pa->link_gbps || pa->latency_us)
        snprintf(dev.name, sizeof dev.name, "custom");
    *ret = dev;
    return HOCTL_EXIT_OK;
}

static int resolve_dtype(const char *s, uint32_t *ret)
{
    if (!s || strcmp(s, "bf16") == 0 || strcmp(s, "fp16") == 0)
        *ret = 2;
    else if (strcmp(s, "fp32") == 0)
        *ret = 4;
    else
        return hoctl_usage_error("--dtype: expected bf16, fp16 or fp32, got "
                                 "'%s'", s);
    return HOCTL_EXIT_OK;
}

/* device (initial: device), host (initial: host), or movable (initial:
 * device and `movable`: the plan chooses its home, PLANNER.md §1). */
static int resolve_place(const char *opt_name, const char *s,
                         bool *ret_on_host, bool *ret_movable)
{
    *ret_movable = false;
    if (!s || strcmp(s, "device") == 0) {
        *ret_on_host = false;
    } else if (strcmp(s, "host") == 0) {
        *ret_on_host = true;
    } else if (strcmp(s, "movable") == 0) {
        *ret_on_host = false;
        *ret_movable = true;
    } else {
        return hoctl_usage_error("--%s: expected device, host or movable, "
                                 "got '%s'", opt_name, s);
    }
    return HOCTL_EXIT_OK;
}

/* What train and decode share: the model, the device profile and its
 * overrides, the data type. */
typedef struct gen_common {
    model_args ma;
    profile_args pa;
    const char *device, *dtype;
} gen_common;

/* The option rows of gen_common `gc`. */
#define COMMON_OPTS(gc)                                                    \
    MODEL_OPTS((gc).ma), PROFILE_OPTS((gc).pa),                            \
    {"device", true, &(gc).device, NULL},                                  \
    {"dtype", true, &(gc).dtype, NULL}

static int resolve_common(const gen_common *gc, plan_model *ret_model,
                          plan_device *ret_device, uint32_t *ret_dtype_bytes)
{
    int r;
    if ((r = resolve_model(&gc->ma, ret_model)) != 0 ||
        (r = resolve_device(gc->device, &gc->pa, ret_device)) != 0 ||
        (r = resolve_dtype(gc->dtype, ret_dtype_bytes)) != 0)
        return r;
    return HOCTL_EXIT_OK;
}

/* A generator refused its configuration (or failed): say why. */
static int gen_failed(const char *kind, int r, const char *err)
{
    fprintf(stderr, "hoctl: trace gen %s: %s\n", kind,
            err[0] ? err : ho_strerror(r));
    return r == -EINVAL ? HOCTL_EXIT_USAGE : HOCTL_EXIT_FAILED;
}

/* Write the generated trace and report it; frees t. */
static int finish_gen(const hoctl_globals *g, plan_trace *t, const char *out,
                      const char *to)
{
    const char *path = out ? out : "-";
    int pb = want_pb(path, to), r;

    if (pb < 0) {
        plan_trace_free(t);
        return hoctl_usage_error("--to: expected json or pb, got '%s'", to);
    }
    r = write_out(path, pb, t, NULL);
    if (r == 0 && strcmp(path, "-") != 0) {
        if (g->json) {
            json_t *o = hoctl_json_root();
            if (o) {
                json_object_set_new(o, "name", hoctl_json_str(t->name));
                json_object_set_new(o, "out", hoctl_json_str(path));
                json_object_set_new(o, "ops", json_integer(t->n_ops));
                json_object_set_new(o, "storages",
                                    json_integer(t->n_storages));
                json_object_set_new(o, "refs", json_integer(t->n_refs));
            }
            r = hoctl_json_emit(o) == HOCTL_EXIT_OK ? 0 : -EIO;
        } else {
            printf("wrote %s: %s, %u ops, %u storages\n", path, t->name,
                   t->n_ops, t->n_storages);
        }
    }
    plan_trace_free(t);
    return r == 0 ? HOCTL_EXIT_OK : HOCTL_EXIT_FAILED;
}

static int gen_train(const hoctl_globals *g, int argc, char **argv)
{
    gen_common gc = {0};
    const char *seq = NULL, *mbs = NULL, *micro = NULL;
    const char *params = NULL, *optim = NULL, *out = NULL, *to = NULL;
    bool no_step = false;
    const opt opts[] = {
        COMMON_OPTS(gc),
        {"seq", true, &seq, NULL}, {"mbs", true, &mbs, NULL},
        {"micro", true, &micro, NULL},
        {"params", true, &params, NULL}, {"optimizer", true, &optim, NULL},
        {"no-optimizer-step", false, NULL, &no_step},
        {"out", true, &out, NULL}, {"to", true, &to, NULL},
        OPT_END};
    plan_gen_train_cfg c;
    plan_trace *t = NULL;
    char err[ERRLEN] = "";
    int npos, r;

    memset(&c, 0, sizeof c);
    if ((r = parse_opts("trace gen train", argc, argv, opts, NULL, 0,
                        &npos)) != 0 ||
        (r = resolve_common(&gc, &c.model, &c.device, &c.dtype_bytes)) != 0 ||
        (r = resolve_place("params", params, &c.params_on_host,
                           &c.params_movable)) != 0 ||
        (r = resolve_place("optimizer", optim, &c.optimizer_on_host,
                           &c.optimizer_movable)) != 0)
        return r;
    c.seq = 4096;
    c.micro_batch = 1;
    c.n_micro = 1;
    if (parse_u32_opt("seq", seq, 1, 1u << 22, &c.seq) ||
        parse_u32_opt("mbs", mbs, 1, 65536, &c.micro_batch) ||
        parse_u32_opt("micro", micro, 1, 65536, &c.n_micro))
        return HOCTL_EXIT_USAGE;
    c.optimizer_step = !no_step;
    r = plan_gen_train(&c, &t, err, sizeof err);
    if (r < 0)
        return gen_failed("train", r, err);
    return finish_gen(g, t, out, to);
}

static int gen_decode(const hoctl_globals *g, int argc, char **argv)
{
    gen_common gc = {0};
    const char *prompt = NULL, *tokens = NULL, *batch = NULL, *block = NULL;
    const char *out = NULL, *to = NULL;
    const opt opts[] = {
        COMMON_OPTS(gc),
        {"prompt", true, &prompt, NULL}, {"tokens", true, &tokens, NULL},
        {"batch", true, &batch, NULL}, {"kv-block", true, &block, NULL},
        {"out", true, &out, NULL}, {"to", true, &to, NULL},
        OPT_END};
    plan_gen_decode_cfg c;
    plan_trace *t = NULL;
    char err[ERRLEN] = "";
    int npos, r;

    memset(&c, 0, sizeof c);
    if ((r = parse_opts("trace gen decode", argc, argv, opts, NULL, 0,
                        &npos)) != 0 ||
        (r = resolve_common(&gc, &c.model, &c.device, &c.dtype_bytes)) != 0)
        return r;
    c.prompt = 4096;
    c.tokens = 64;
    c.batch = 1;
    c.kv_block = 256;
    if (parse_u32_opt("prompt", prompt, 0, 1u << 24, &c.prompt) ||
        parse_u32_opt("tokens", tokens, 1, 1u << 20, &c.tokens) ||
        parse_u32_opt("batch", batch, 1, 65536, &c.batch) ||
        parse_u32_opt("kv-block", block, 1, 1u << 24, &c.kv_block))
        return HOCTL_EXIT_USAGE;
    r = plan_gen_decode(&c, &t, err, sizeof err);
    if (r < 0)
        return gen_failed("decode", r, err);
    return finish_gen(g, t, out, to);
}

/* An optional positive size (--min-bytes, --max-bytes); 0 when absent. */
static int parse_size_opt(const char *opt_name, const char *s, uint64_t *ret)
{
    char why[160];
    if (s && hoctl_size_parse(s, UINT64_MAX, ret, why, sizeof(why)) < 0)
        return hoctl_usage_error("--%s: %s", opt_name, why);
    if (s && *ret == 0)
        return hoctl_usage_error("--%s: expected a positive size, got '%s'",
                                 opt_name, s);
    return 0;
}

static int gen_random(const hoctl_globals *g, int argc, char **argv)
{
    const char *seed = NULL, *ops = NULL, *storages = NULL, *refs = NULL;
    const char *minb = NULL, *maxb = NULL, *pdev = NULL, *phost = NULL;
    const char *pret = NULL, *ppin = NULL, *out = NULL, *to = NULL;
    const opt opts[] = {
        {"seed", true, &seed, NULL}, {"ops", true, &ops, NULL},
        {"storages", true, &storages, NULL}, {"max-refs", true, &refs, NULL},
        {"min-bytes", true, &minb, NULL}, {"max-bytes", true, &maxb, NULL},
        {"p-device", true, &pdev, NULL}, {"p-host", true, &phost, NULL},
        {"p-retained", true, &pret, NULL}, {"p-pinned", true, &ppin, NULL},
        {"out", true, &out, NULL}, {"to", true, &to, NULL},
        OPT_END};
    plan_gen_random_cfg c = {.seed = 0, .max_refs_per_op = 6,
                             .min_bytes = 4096, .max_bytes = 64ull << 20,
                             .p_initial_device = 0.1, .p_initial_host = 0.05,
                             .p_retained = 0.1, .p_pinned = 0.01};
    plan_trace *t = NULL;
    char err[ERRLEN] = "";
    int npos, r;

    if ((r = parse_opts("trace gen random", argc, argv, opts, NULL, 0,
                        &npos)) != 0)
        return r;
    if (!ops || !storages)
        return hoctl_usage_error("trace gen random: --ops and --storages "
                                 "are required");
    if ((seed && parse_u64("seed", seed, 0, UINT64_MAX, &c.seed)) ||
        parse_u32("ops", ops, 1, PLAN_MAX_OPS, &c.n_ops) ||
        parse_u32("storages", storages, 1, PLAN_MAX_STORAGES,
                  &c.n_storages) ||
        parse_u32_opt("max-refs", refs, 1, PLAN_MAX_OP_REFS,
                      &c.max_refs_per_op) ||
        parse_prob("p-device", pdev, &c.p_initial_device) ||
        parse_prob("p-host", phost, &c.p_initial_host) ||
        parse_prob("p-retained", pret, &c.p_retained) ||
        parse_prob("p-pinned", ppin, &c.p_pinned))
        return HOCTL_EXIT_USAGE;
    if ((r = parse_size_opt("min-bytes", minb, &c.min_bytes)) != 0 ||
        (r = parse_size_opt("max-bytes", maxb, &c.max_bytes)) != 0)
        return r;
    r = plan_gen_random(&c, &t, err, sizeof err);
    if (r < 0)
        return gen_failed("random", r, err);
    return finish_gen(g, t, out, to);
}

/* ------------------------------------------------------------ trace show */

static int trace_show_json(const plan_trace *t, const plan_trace_summary *sm,
                           uint64_t accesses, const char *wsname)
{
    json_t *o = hoctl_json_root(), *bk = json_object(), *ck = json_object();
    json_t *link = json_pack("{s:f, s:f, s:f, s:b}", "h2d_gbps",
                             t->link.h2d_gbps, "d2h_gbps", t->link.d2h_gbps,
                             "latency_us", t->link.latency_us, "duplex",
                             t->link.duplex);
    for (int k = 0; k < PLAN_KIND__COUNT; k++) {
        json_object_set_new(bk, plan_kind_name((plan_kind)k),
                            hoctl_json_u64(sm->bytes_by_kind[k]));
        json_object_set_new(ck, plan_kind_name((plan_kind)k),
                            json_integer(sm->count_by_kind[k]));
    }
    json_object_set_new(o, "name", json_string(t->name));
    json_object_set_new(o, "ops", json_integer(sm->n_ops));
    json_object_set_new(o, "storages", json_integer(sm->n_storages));
    json_object_set_new(o, "refs", hoctl_json_u64(sm->n_refs));
    json_object_set_new(o, "accesses", hoctl_json_u64(accesses));
    json_object_set_new(o, "link", link);
    json_object_set_new(o, "total_bytes", hoctl_json_u64(sm->total_bytes));
    json_object_set_new(o, "bytes_by_kind", bk);
    json_object_set_new(o, "count_by_kind", ck);
    json_object_set_new(o, "compute_us", json_real(sm->compute_us));
    json_object_set_new(o, "no_offload_peak",
                        hoctl_json_u64(sm->no_offload_peak));
    json_object_set_new(o, "max_op_working_set",
                        hoctl_json_u64(sm->max_op_working_set));
    json_object_set_new(o, "max_op_working_set_op",
                        sm->max_op_working_set_op == PLAN_NONE
                            ? json_null()
                            : json_integer(sm->max_op_working_set_op));
    json_object_set_new(o, "max_op_working_set_name", json_string(wsname));
    json_object_set_new(o, "hash", json_sprintf("%016llx",
                        (unsigned long long)plan_trace_hash(t)));
    return hoctl_json_emit(o);
}

static void trace_show_text(const plan_trace *t, const plan_trace_summary *sm,
                            uint64_t accesses, const char *wsname)
{
    hoctl_fmt b;
    hoctl_field("trace", "%s", t->name);
    hoctl_field("ops", "%u", sm->n_ops);
    hoctl_field("storages", "%u", sm->n_storages);
    hoctl_field("accesses", "%llu (%llu references)",
                (unsigned long long)accesses, (unsigned long long)sm->n_refs);
    hoctl_field("link", "H2D %g GB/s, D2H %g GB/s, latency %g us, %s",
                t->link.h2d_gbps, t->link.d2h_gbps, t->link.latency_us,
                t->link.duplex ? "duplex" : "one engine");
    hoctl_field_size("total bytes", sm->total_bytes);
    hoctl_field_us("compute", sm->compute_us);
    hoctl_field_size("no-offload peak", sm->no_offload_peak);
    hoctl_field("largest op", "%s (op %u %s)",
                hoctl_fmt_size(sm->max_op_working_set, b),
                sm->max_op_working_set_op, wsname);
    hoctl_field("by kind", "%-10s %8s %12s", "", "count", "bytes");
    for (int k = 0; k < PLAN_KIND__COUNT; k++)
        hoctl_field("", "%-10s %8u %12s", plan_kind_name((plan_kind)k),
                    sm->count_by_kind[k],
                    hoctl_fmt_size(sm->bytes_by_kind[k], b));
}

static int trace_show(const hoctl_globals *g, int argc, char **argv)
{
    const opt opts[] = {OPT_END};
    const char *pos[1];
    plan_trace *t = NULL;
    plan_trace_summary sm;
    char err[ERRLEN] = "";
    int npos, r, rc = HOCTL_EXIT_OK;

    if ((r = parse_opts("trace show", argc, argv, opts, pos, 1, &npos)) != 0)
        return r;
    if (npos != 1)
        return hoctl_usage_error("usage: hoctl trace show T");
    r = plan_trace_read_file(pos[0], &t, err, sizeof err);
    if (r < 0)
        return read_failure(r, pos[0], err);
    r = plan_trace_summarize(t, &sm);
    if (r < 0) {
        fprintf(stderr, "hoctl: summarizing %s: %s\n", pos[0],
                ho_strerror(r));
        plan_trace_free(t);
        return HOCTL_EXIT_FAILED;
    }
    uint64_t accesses = t->acc_start[t->n_storages];
    const char *wsname = sm.max_op_working_set_op != PLAN_NONE
                             ? plan_op_name(t, sm.max_op_working_set_op)
                             : "";
    if (g->json)
        rc = trace_show_json(t, &sm, accesses, wsname);
    else
        trace_show_text(t, &sm, accesses, wsname);
    plan_trace_free(t);
    return rc;
}

/* ------------------------------------------------------------ convert */

static int convert(const hoctl_globals *g, const char *noun, int argc,
                   char **argv)
{
    const char *to = NULL;
    const opt opts[] = {{"to", true, &to, NULL}, OPT_END};
    const char *pos[2];
    char err[ERRLEN] = "", cmd[32];
    bool trace = strcmp(noun, "trace") == 0;
    plan_trace *t = NULL;
    plan_schedule *s = NULL;
    int npos, pb, r;

    snprintf(cmd, sizeof cmd, "%s convert", noun);
    if ((r = parse_opts(cmd, argc, argv, opts, pos, 2, &npos)) != 0)
        return r;
    if (npos != 2)
        return hoctl_usage_error("usage: hoctl %s convert IN OUT [--to "
                                 "json|pb]", noun);
    pb = want_pb(pos[1], to);
    if (pb < 0)
        return hoctl_usage_error("--to: expected json or pb, got '%s'", to);
    r = trace ? plan_trace_read_file(pos[0], &t, err, sizeof err)
              : plan_schedule_read_file(pos[0], &s, err, sizeof err);
    if (r < 0)
        return read_failure(r, pos[0], err);
    r = write_out(pos[1], pb, t, s);
    if (r == 0 && g->json && strcmp(pos[1], "-") != 0) {
        json_t *o = hoctl_json_root();
        json_object_set_new(o, "in", hoctl_json_str(pos[0]));
        json_object_set_new(o, "out", hoctl_json_str(pos[1]));
        json_object_set_new(o, "format", json_string(pb ? "pb" : "json"));
        r = hoctl_json_emit(o) == HOCTL_EXIT_OK ? 0 : -EIO;
    }
    plan_trace_free(t);
    plan_schedule_free(s);
    return r == 0 ? HOCTL_EXIT_OK : HOCTL_EXIT_FAILED;
}

/* ------------------------------------------------------------ check/plan */

static json_t *metrics_json(const plan_metrics *m)
{
    return json_pack("{s:o, s:o, s:f, s:f, s:f, s:o, s:o}",
                     "peak_device_bytes", hoctl_json_u64(m->peak_device_bytes),
                     "peak_host_bytes", hoctl_json_u64(m->peak_host_bytes),
                     "compute_us", m->compute_us, "step_time_us",
                     m->step_time_us, "exposed_us", m->exposed_us,
                     "h2d_bytes", hoctl_json_u64(m->h2d_bytes), "d2h_bytes",
                     hoctl_json_u64(m->d2h_bytes));
}

static void print_metrics(const plan_metrics *m)
{
    hoctl_field_bytes("peak device", m->peak_device_bytes);
    hoctl_field_size("peak host", m->peak_host_bytes);
    hoctl_field_us("compute", m->compute_us);
    hoctl_field_us("step time", m->step_time_us);
    hoctl_field_us("exposed", m->exposed_us);
    hoctl_field_size("H2D", m->h2d_bytes);
    hoctl_field_size("D2H", m->d2h_bytes);
}

static json_t *violation_json(const plan_trace *t, const plan_violation *v)
{
    json_t *o = json_object();
    bool has_op = v->op != PLAN_NONE && v->op < t->n_ops;
    json_object_set_new(o, "op", has_op ? json_integer(v->op) : json_null());
    json_object_set_new(o, "op_name",
                        has_op ? json_string(plan_op_name(t, v->op))
                               : json_null());
    json_object_set_new(o, "storage", v->storage_id == UINT64_MAX
                                          ? json_null()
                                          : hoctl_json_u64(v->storage_id));
    json_object_set_new(o, "action", v->action == SIZE_MAX
                                         ? json_null()
                                         : hoctl_json_u64(v->action));
    json_object_set_new(o, "message", json_string(v->message));
    return o;
}

static void print_violation(const plan_trace *t, const plan_violation *v)
{
    if (v->op != PLAN_NONE && v->op < t->n_ops)
        printf("invalid: op %u (%s)", v->op, plan_op_name(t, v->op));
    else
        printf("invalid: at step end");
    if (v->storage_id != UINT64_MAX)
        printf(", storage %llu", (unsigned long long)v->storage_id);
    printf(": %s\n", v->message);
}

/* Relative difference within 0.1% (absolute slack for tiny values). */
static bool close_enough(double a, double b)
{
    double d = fabs(a - b), m = fmax(fabs(a), fabs(b));
    return d <= 1e-3 * m || d <= 1e-3;
}

/* Name the first predicted figure that disagrees with m, or NULL. */
static const char *predicted_mismatch(const plan_metrics *p,
                                      const plan_metrics *m)
{
    if (!close_enough((double)p->peak_device_bytes,
                      (double)m->peak_device_bytes))
        return "peak_device_bytes";
    if (!close_enough((double)p->peak_host_bytes, (double)m->peak_host_bytes))
        return "peak_host_bytes";
    if (!close_enough(p->compute_us, m->compute_us))
        return "compute_us";
    if (!close_enough(p->step_time_us, m->step_time_us))
        return "step_time_us";
    /* exposed is a difference of two large figures: judge it against the
     * step time */
    if (fabs(p->exposed_us - m->exposed_us) > 1e-3 * fmax(m->step_time_us,
                                                          1.0))
        return "exposed_us";
    if (!close_enough((double)p->h2d_bytes, (double)m->h2d_bytes))
        return "h2d_bytes";
    if (!close_enough((double)p->d2h_bytes, (double)m->d2h_bytes))
        return "d2h_bytes";
    return NULL;
}

/* What `schedule check` found: the simulation's code r (0 valid), its
 * metrics and violation, and the first predicted figure that disagrees. */
typedef struct check_result {
    int r;
    plan_metrics m;
    plan_violation v;
    const char *mismatch;
} check_result;

static int check_report_json(const plan_trace *t, const plan_schedule *s,
                             const check_result *k)
{
    json_t *o = hoctl_json_root();
    json_object_set_new(o, "valid", json_boolean(k->r == 0));
    json_object_set_new(o, "planner", json_string(s->planner));
    json_object_set_new(o, "budget_bytes", hoctl_json_u64(s->budget_bytes));
    json_object_set_new(o, "actions", hoctl_json_u64(s->n_actions));
    json_object_set_new(o, "metrics", metrics_json(&k->m));
    json_object_set_new(o, "violation",
                        k->r == 0 ? json_null() : violation_json(t, &k->v));
    json_object_set_new(o, "predicted_matches",
                        !s->has_predicted || k->r != 0
                            ? json_null()
                            : json_boolean(k->mismatch == NULL));
    return hoctl_json_emit(o);
}

static void check_report_text(const plan_trace *t, const plan_schedule *s,
                              const check_result *k)
{
    if (k->r != 0) {
        print_violation(t, &k->v);
        return;
    }
    printf("valid\n");
    hoctl_field_bytes("budget", s->budget_bytes);
    print_metrics(&k->m);
    if (k->mismatch)
        printf("predicted figures do not match the simulation (%s)\n",
               k->mismatch);
}

/* Read the trace and the schedule and bind them; 0, or the exit code with
 * the reason printed (nothing left to free then). */
static int check_load(const char *tpath, const char *spath,
                      plan_trace **ret_t, plan_schedule **ret_s)
{
    plan_trace *t = NULL;
    plan_schedule *s = NULL;
    char err[ERRLEN] = "";
    int r = plan_trace_read_file(tpath, &t, err, sizeof err);
    if (r < 0)
        return read_failure(r, tpath, err);
    r = plan_schedule_read_file(spath, &s, err, sizeof err);
    if (r < 0) {
        plan_trace_free(t);
        return read_failure(r, spath, err);
    }
    r = plan_schedule_bind(s, t, err, sizeof err);
    if (r < 0) {
        fprintf(stderr, "hoctl: %s does not fit %s: %s\n", spath, tpath,
                err[0] ? err : ho_strerror(r));
        plan_trace_free(t);
        plan_schedule_free(s);
        return HOCTL_EXIT_FAILED;
    }
    *ret_t = t;
    *ret_s = s;
    return 0;
}

static int schedule_check(const hoctl_globals *g, int argc, char **argv)
{
    const char *tpath = NULL, *spath = NULL, *svg = NULL;
    const opt opts[] = {{"trace", true, &tpath, NULL},
                        {"schedule", true, &spath, NULL},
                        {"svg", true, &svg, NULL}, OPT_END};
    plan_trace *t = NULL;
    plan_schedule *s = NULL;
    check_result k;
    int npos, r, rc;

    if ((r = parse_opts("schedule check", argc, argv, opts, NULL, 0,
                        &npos)) != 0)
        return r;
    if (!tpath || !spath)
        return hoctl_usage_error("usage: hoctl schedule check --trace T "
                                 "--schedule S [--svg FILE]");
    if ((rc = check_load(tpath, spath, &t, &s)) != 0)
        return rc;
    memset(&k, 0, sizeof k);
    k.r = plan_simulate(t, s, &k.m, &k.v, NULL);
    if (k.r == 0 && s->has_predicted)
        k.mismatch = predicted_mismatch(&s->predicted, &k.m);
    rc = k.r == 0 && !k.mismatch ? HOCTL_EXIT_OK : HOCTL_EXIT_FAILED;
    if (svg && (r = plan_svg_plan_file(svg, t, s, NULL)) < 0) {
        fprintf(stderr, "hoctl: writing %s: %s\n", svg, ho_strerror(r));
        rc = HOCTL_EXIT_FAILED;
    }
    if (g->json) {
        if (check_report_json(t, s, &k) != HOCTL_EXIT_OK)
            rc = HOCTL_EXIT_FAILED;
    } else {
        check_report_text(t, s, &k);
    }
    plan_trace_free(t);
    plan_schedule_free(s);
    return rc;
}

static const char schedule_usage[] =
    "usage: hoctl schedule check --trace T --schedule S [--svg FILE]\n"
    "       hoctl schedule convert IN OUT [--to json|pb]\n";

/* ------------------------------------------------------------ plan */

static const char plan_usage[] =
    "usage: hoctl plan --trace T --budget B [--planner P] [--out S]\n"
    "                  [--bound off|fast|full] [--daemon] "
    "[--select-distance N]\n"
    "                  [--select-num N] [--prefetch-distance N] "
    "[--svg FILE [--svg-ddr-limit SIZE]]\n"
    "       hoctl plan --trace T --curve budget [--points N | "
    "--budgets B1,B2,...]\n"
    "       hoctl plan --trace T --curve bandwidth --budget B "
    "[--points N | --scales S1,S2,...]\n"
    "                  [--planner P] [--bound off|fast|full]\n"
    "--bound: the lower bound on exposed time printed next to it (default "
    "fast).\n"
    "--daemon: ask hyperoffloadd (PlanRequest, --socket) instead of "
    "planning here.\n"
    "--curve: plan at --points N budgets (k/N of the no-offload peak) or "
    "link\n"
    "bandwidths (k/N of the trace's), or at the listed ones; monotone by\n"
    "construction.\n"
    "B: bytes with an IEC unit (4096, 512K, 1.5GiB, 2G; K M G T P E = 1024^n;\n"
    "\"2GB\" is refused as ambiguous) or a percentage of the trace's\n"
    "no-offload peak (70%).\n";

static void print_planners(FILE *f)
{
    fputs("planners:", f);
    for (const char *const *p = plan_planner_names; *p; p++)
        fprintf(f, " %s", *p);
    fputc('\n', f);
}

/* The command line of `hoctl plan`. */
typedef struct plan_args {
    const char *tpath, *bstr, *out;
    const char *svg;   /* --svg: the plan's picture */
    plan_svg_plan_opts svg_o; /* --svg-ddr-limit: its flash staging */
    bool pb;           /* write --out as protobuf */
    bool percent;      /* bstr is a percentage of the no-offload peak */
    uint64_t budget;   /* bytes, when !percent */
    plan_options po;
    plan_bound_mode bound;
    bool daemon;       /* --daemon: PlanRequest to hyperoffloadd */
    hoctl_curve_args curve; /* curve.axis set: --curve */
} plan_args;

static bool planner_known(const char *name)
{
    for (const char *const *pn = plan_planner_names; *pn; pn++)
        if (strcmp(*pn, name) == 0)
            return true;
    return false;
}

/* Step 1: options, planner name, the planners' tuning knobs, --to, the
 * budget's syntax.  0, or the exit code with the reason printed. */
static int plan_parse(int argc, char **argv, plan_args *a)
{
    const char *planner = NULL, *to = NULL;
    const char *sd = NULL, *sn = NULL, *pd = NULL, *ddr = NULL;
    const char *bound = NULL;
    const opt opts[] = {{"trace", true, &a->tpath, NULL},
                        {"bound", true, &bound, NULL},
                        {"daemon", false, NULL, &a->daemon},
                        {"curve", true, &a->curve.axis, NULL},
                        {"points", true, &a->curve.points, NULL},
                        {"budgets", true, &a->curve.budgets, NULL},
                        {"scales", true, &a->curve.scales, NULL},
                        {"svg", true, &a->svg, NULL},
                        {"svg-ddr-limit", true, &ddr, NULL},
                        {"budget", true, &a->bstr, NULL},
                        {"planner", true, &planner, NULL},
                        {"out", true, &a->out, NULL},
                        {"to", true, &to, NULL},
                        {"select-distance", true, &sd, NULL},
                        {"select-num", true, &sn, NULL},
                        {"prefetch-distance", true, &pd, NULL},
                        OPT_END};
    int npos, r;

    if ((r = parse_opts("plan", argc, argv, opts, NULL, 0, &npos)) != 0)
        return r;
    a->bound = PLAN_BOUND_FAST;
    if (bound && plan_bound_mode_parse(bound, &a->bound) < 0)
        return hoctl_usage_error("--bound: expected off, fast or full, got "
                                 "'%s'", bound);
    if (!a->curve.axis && (a->curve.points || a->curve.budgets ||
                           a->curve.scales))
        return hoctl_usage_error("--points, --budgets and --scales go with "
                                 "--curve");
    if (a->curve.axis && a->daemon)
        return hoctl_usage_error("--curve plans here; --daemon is for one "
                                 "plan");
    if (a->curve.axis && (a->out || a->svg))
        return hoctl_usage_error("--curve prints a table: --out and --svg "
                                 "are for one plan");
    if (!a->tpath || (!a->bstr && !a->curve.axis)) {
        fputs(plan_usage, stderr);
        print_planners(stderr);
        return HOCTL_EXIT_USAGE;
    }
    a->po.planner = planner ? planner : "hoplan";
    if (!planner_known(a->po.planner)) {
        hoctl_usage_error("plan: unknown planner '%s'", a->po.planner);
        print_planners(stderr);
        return HOCTL_EXIT_USAGE;
    }
    if (parse_u32_opt("select-distance", sd, 1, UINT32_MAX,
                      &a->po.select_distance) ||
        parse_u32_opt("select-num", sn, 1, UINT32_MAX, &a->po.select_num) ||
        parse_u32_opt("prefetch-distance", pd, 1, UINT32_MAX,
                      &a->po.prefetch_distance))
        return HOCTL_EXIT_USAGE;
    if (a->out) {
        int pb = want_pb(a->out, to);
        if (pb < 0)
            return hoctl_usage_error("--to: expected json or pb, got '%s'",
                                     to);
        a->pb = pb == 1;
    }
    if (ddr && ho_size_parse(ddr, &a->svg_o.ddr_limit) < 0)
        return hoctl_usage_error("--svg-ddr-limit: expected a size, got "
                                 "'%s'", ddr);
    a->curve.po = a->po;
    a->curve.bound = a->bound;
    if (!a->bstr)
        return 0;
    size_t blen = strlen(a->bstr);
    a->percent = blen > 0 && a->bstr[blen - 1] == '%';
    /* a size is checked now, a percentage once the peak is known */
    if (!a->percent && hoctl_budget_resolve("budget", a->bstr, 0,
                                            &a->budget) != 0)
        return HOCTL_EXIT_USAGE;
    return 0;
}

/* Step 2: the budget in bytes; a percentage is of the trace's no-offload
 * peak (sm).  0, or the exit code with the reason printed. */
static int plan_budget(plan_args *a, const plan_trace_summary *sm)
{
    if (!a->percent)
        return 0;
    return hoctl_budget_resolve("budget", a->bstr, sm->no_offload_peak,
                                &a->budget);
}

/* A byte count that 0 means "not computed" for: null then. */
static json_t *opt_bytes(uint64_t v)
{
    return v ? hoctl_json_u64(v) : json_null();
}

/* Step 3a: the budget is below what the planner can meet: the JSON
 * document (with --json) and, always, the sentence on stderr. */
static void plan_report_infeasible(const hoctl_globals *g, const plan_args *a,
                                   const plan_result *res,
                                   const plan_bound_result *bound)
{
    hoctl_fmt b1, b2, b3, b4;
    if (g->json) {
        json_t *o = hoctl_json_root();
        json_object_set_new(o, "feasible", json_false());
        json_object_set_new(o, "planner", json_string(a->po.planner));
        json_object_set_new(o, "budget_bytes", hoctl_json_u64(a->budget));
        json_object_set_new(o, "min_budget", opt_bytes(res->min_budget));
        json_object_set_new(o, "device_floor", opt_bytes(res->device_floor));
        json_object_set_new(o, "working_set_bound",
                            hoctl_json_u64(res->working_set_bound));
        json_object_set_new(o, "no_offload_peak",
                            hoctl_json_u64(res->no_offload_peak));
        json_object_set_new(o, "bound", hoctl_bound_json(bound));
        json_object_set_new(o, "error",
                            hoctl_json_error(HOCTL_EXIT_FAILED,
                                             HO_E_INFEASIBLE, res->message));
        hoctl_json_emit(o);
    }
    fprintf(stderr, "budget %s (%llu B) is infeasible for %s; smallest "
            "feasible budget is %s (%llu B) (largest single-op working "
            "set %s)\n", hoctl_fmt_size(a->budget, b1),
            (unsigned long long)a->budget, a->po.planner,
            hoctl_fmt_size(res->min_budget, b2),
            (unsigned long long)res->min_budget,
            hoctl_fmt_size(res->working_set_bound, b3));
    if (res->device_floor)
        fprintf(stderr, "lower bound: no schedule fits below %s (%llu B) "
                "(bytes that must be on the device at the worst op)\n",
                hoctl_fmt_size(res->device_floor, b4),
                (unsigned long long)res->device_floor);
    if (bound->mode != PLAN_BOUND_OFF && bound->infeasible)
        fprintf(stderr, "lower bound (%s): %s\n",
                plan_bound_mode_name(bound->mode),
                bound->note[0] ? bound->note : "no valid schedule: below "
                                               "the memory floor");
}

/* The schedule made, judged against the budget: plan_simulate's code r
 * (0: within it) and the violation when not. */
typedef struct plan_outcome {
    const plan_schedule *s;
    plan_result res;
    int r;
    plan_violation v;
    plan_bound_result bound;
} plan_outcome;

/* Step 3b: the plan as JSON; the exit code of the write. */
static int plan_report_json(const plan_args *a, const plan_trace *t,
                            const plan_outcome *p)
{
    json_t *o = hoctl_json_root();
    json_object_set_new(o, "feasible", json_true());
    json_object_set_new(o, "valid", json_boolean(p->r == 0));
    json_object_set_new(o, "planner", json_string(a->po.planner));
    json_object_set_new(o, "budget_bytes", hoctl_json_u64(a->budget));
    json_object_set_new(o, "no_offload_peak",
                        hoctl_json_u64(p->res.no_offload_peak));
    json_object_set_new(o, "working_set_bound",
                        hoctl_json_u64(p->res.working_set_bound));
    json_object_set_new(o, "min_budget", opt_bytes(p->res.min_budget));
    json_object_set_new(o, "device_floor", opt_bytes(p->res.device_floor));
    json_object_set_new(o, "metrics", metrics_json(&p->s->predicted));
    json_object_set_new(o, "bound", hoctl_bound_json(&p->bound));
    json_object_set_new(o, "violation",
                        p->r == 0 ? json_null() : violation_json(t, &p->v));
    json_object_set_new(o, "actions", hoctl_json_u64(p->s->n_actions));
    json_object_set_new(o, "planning_us",
                        hoctl_json_us(p->res.planning_ms * 1e3));
    json_object_set_new(o, "out", a->out ? json_string(a->out) : json_null());
    return hoctl_json_emit(o);
}

/* Step 3b: the plan for a human. */
static void plan_report_text(const plan_args *a, const plan_trace *t,
                             const plan_outcome *p)
{
    const plan_metrics *m = &p->s->predicted;
    hoctl_field("planner", "%s", a->po.planner);
    hoctl_field_bytes("budget", a->budget);
    hoctl_field_bytes("no-offload peak", p->res.no_offload_peak);
    hoctl_field_bytes("planned peak", m->peak_device_bytes);
    hoctl_field_us("compute", m->compute_us);
    hoctl_field_us("step time", m->step_time_us);
    hoctl_field_us("exposed", m->exposed_us);
    hoctl_bound_print(&p->bound, m->exposed_us);
    hoctl_field_size("H2D", m->h2d_bytes);
    hoctl_field_size("D2H", m->d2h_bytes);
    hoctl_field_size("peak host", m->peak_host_bytes);
    if (p->res.min_budget)
        hoctl_field_bytes("min budget", p->res.min_budget);
    if (p->res.device_floor)
        hoctl_field_bytes("device floor", p->res.device_floor);
    hoctl_field("actions", "%zu", p->s->n_actions);
    hoctl_field("planning time", "%.1f ms", p->res.planning_ms);
    if (a->out)
        hoctl_field("schedule", "%s", a->out);
    if (p->r < 0)
        print_violation(t, &p->v);
}

/* `hoctl plan`: parse, read and summarize the trace, resolve the budget,
 * plan, judge the schedule against the budget (baselines may exceed it),
 * write it (--out), report. */
int hoctl_cmd_plan(const hoctl_globals *g, int argc, char **argv)
{
    plan_args a;
    plan_outcome p;
    plan_trace *t = NULL;
    plan_schedule *s = NULL;
    plan_trace_summary sm;
    plan_metrics m;
    char err[ERRLEN] = "";
    int r, rc = HOCTL_EXIT_FAILED;

    if (argc == 1 && strcmp(argv[0], "help") == 0) {
        fputs(plan_usage, stdout);
        print_planners(stdout);
        return HOCTL_EXIT_OK;
    }
    memset(&a, 0, sizeof a);
    if ((r = plan_parse(argc, argv, &a)) != 0)
        return r;
    r = plan_trace_read_file(a.tpath, &t, err, sizeof err);
    if (r < 0)
        return read_failure(r, a.tpath, err);
    r = plan_trace_summarize(t, &sm);
    if (r < 0) {
        fprintf(stderr, "hoctl: summarizing %s: %s\n", a.tpath,
                ho_strerror(r));
        goto out;
    }
    if ((r = plan_budget(&a, &sm)) != 0) {
        rc = r;
        goto out;
    }
    if (a.curve.axis) {
        a.curve.budget = a.budget;
        a.curve.have_budget = a.bstr != NULL;
        rc = hoctl_plan_curve(g, t, &sm, &a.curve);
        goto out;
    }

    memset(&p, 0, sizeof p);
    if (a.daemon) {
        bool cached = false;
        rc = hoctl_plan_daemon(g, t, a.budget, a.po.planner, a.bound, &s,
                               &p.res, &p.bound, &cached);
        if (rc != 0)
            goto out;
        rc = HOCTL_EXIT_FAILED;
        r = 0;
    } else {
        r = plan_make(t, a.budget, &a.po, &s, &p.res);
    }
    if (!a.daemon && (r == 0 || r == HO_E_INFEASIBLE) &&
        (rc = hoctl_bound_compute(t, a.budget, NULL, a.bound, &p.bound)) !=
            0)
        goto out;
    rc = HOCTL_EXIT_FAILED;
    if (r == HO_E_INFEASIBLE) {
        plan_report_infeasible(g, &a, &p.res, &p.bound);
        goto out;
    }
    if (r < 0) {
        fprintf(stderr, "hoctl: plan (%s): %s\n", a.po.planner,
                p.res.message[0] ? p.res.message : ho_strerror(r));
        goto out;
    }
    p.s = s;
    p.r = plan_simulate(t, s, &m, &p.v, NULL);
    if (a.out && write_out(a.out, a.pb, NULL, s) < 0)
        goto out;
    if (a.svg && (r = plan_svg_plan_file(a.svg, t, s, &a.svg_o)) < 0) {
        fprintf(stderr, "hoctl: writing %s: %s\n", a.svg, ho_strerror(r));
        goto out;
    }
    rc = p.r == 0 ? HOCTL_EXIT_OK : HOCTL_EXIT_FAILED;
    if (g->json) {
        if (plan_report_json(&a, t, &p) != HOCTL_EXIT_OK)
            rc = HOCTL_EXIT_FAILED;
    } else {
        plan_report_text(&a, t, &p);
    }
out:
    plan_trace_free(t);
    plan_schedule_free(s);
    return rc;
}

/* ------------------------------------------------------------ nouns */

int hoctl_cmd_trace(const hoctl_globals *g, int argc, char **argv)
{
    if (argc < 1) {
        fputs(trace_usage, stderr);
        return hoctl_usage_error("trace needs a verb: gen, show or convert");
    }
    if (strcmp(argv[0], "help") == 0) {
        fputs(trace_usage, stdout);
        return HOCTL_EXIT_OK;
    }
    if (strcmp(argv[0], "gen") == 0) {
        if (argc < 2) {
            fputs(trace_usage, stderr);
            return hoctl_usage_error("trace gen needs a generator: train, "
                                     "decode or random");
        }
        if (strcmp(argv[1], "train") == 0)
            return gen_train(g, argc - 2, argv + 2);
        if (strcmp(argv[1], "decode") == 0)
            return gen_decode(g, argc - 2, argv + 2);
        if (strcmp(argv[1], "random") == 0)
            return gen_random(g, argc - 2, argv + 2);
        return hoctl_usage_error("trace gen: unknown generator '%s' (train, "
                                 "decode, random)", argv[1]);
    }
    if (strcmp(argv[0], "show") == 0)
        return trace_show(g, argc - 1, argv + 1);
    if (strcmp(argv[0], "convert") == 0)
        return convert(g, "trace", argc - 1, argv + 1);
    fputs(trace_usage, stderr);
    return hoctl_usage_error("trace: unknown verb '%s'", argv[0]);
}

int hoctl_cmd_schedule(const hoctl_globals *g, int argc, char **argv)
{
    if (argc < 1) {
        fputs(schedule_usage, stderr);
        return hoctl_usage_error("schedule needs a verb: check or convert");
    }
    if (strcmp(argv[0], "help") == 0) {
        fputs(schedule_usage, stdout);
        return HOCTL_EXIT_OK;
    }
    if (strcmp(argv[0], "check") == 0)
        return schedule_check(g, argc - 1, argv + 1);
    if (strcmp(argv[0], "convert") == 0)
        return convert(g, "schedule", argc - 1, argv + 1);
    fputs(schedule_usage, stderr);
    return hoctl_usage_error("schedule: unknown verb '%s'", argv[0]);
}
