/*
 * hoctl/hoctl_admit.c - `hoctl admit`: the daemon's what-if admission
 * (AdmitRequest, docs/node.md "Re-planning and admission"): the node
 * arbiter and the node judge predict, without admitting it, a newcomer's
 * step time and exposure and the change for every running client.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hoctl/hoctl.h"
#include "hoctl/hoctl_daemon.h"
#include "hoctl/hoctl_parse.h"
#include "hoctl/output.h"
#include "planner/io/plan_io.h"
#include "proto/frame.h"

static const char admit_usage[] =
    "usage: hoctl admit --trace T --device D [--budget B] [--job J] "
    "[--weight W]\n"
    "                   [--max-slowdown X] [--name N] [--json]\n"
    "Predict, without admitting, the step time and exposure of a client "
    "with trace T\non device D and the change for every running client "
    "(node arbiter + node\njudge).  Exit 0 when admissible, 1 when not "
    "(the reasons are printed).\n";

typedef struct admit_args {
    const char *trace, *job, *name;
    int device;
    uint64_t budget;
    double weight, max_slowdown;
} admit_args;

static int parse_real(const char *opt, const char *s, double lo, double *ret)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !*s || !isfinite(v) || v < lo)
        return hoctl_usage_error("admit: %s: expected a number >= %g, got "
                                 "'%s'", opt, lo, s);
    *ret = v;
    return 0;
}

static int parse_args(int argc, char **argv, admit_args *a)
{
    static const struct option opts[] = {
        {"trace", required_argument, NULL, 't'},
        {"device", required_argument, NULL, 'd'},
        {"budget", required_argument, NULL, 'b'},
        {"job", required_argument, NULL, 'j'},
        {"weight", required_argument, NULL, 'w'},
        {"max-slowdown", required_argument, NULL, 'x'},
        {"name", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    char why[160];
    double dev = -1;
    optind = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
        int r = 0;
        switch (ch) {
        case 't': a->trace = optarg; break;
        case 'j': a->job = optarg; break;
        case 'n': a->name = optarg; break;
        case 'd':
            r = parse_real("--device", optarg, 0, &dev);
            if (r == 0 && (dev != floor(dev) || dev > 1e6))
                r = hoctl_usage_error("admit: --device: expected a device "
                                      "index, got '%s'", optarg);
            break;
        case 'b':
            if (hoctl_size_parse(optarg, HOCTL_QUOTA_MAX, &a->budget, why,
                                 sizeof(why)) < 0)
                r = hoctl_usage_error("admit: --budget: %s", why);
            break;
        case 'w':
            r = parse_real("--weight", optarg, 1e-6, &a->weight);
            break;
        case 'x':
            r = parse_real("--max-slowdown", optarg, 1, &a->max_slowdown);
            break;
        default:
            r = hoctl_usage_error("admit: unknown or incomplete option "
                                  "'%s'", argv[optind - 2]);
        }
        if (r)
            return r;
    }
    if (optind - 1 < argc)
        return hoctl_usage_error("admit: unexpected argument '%s'",
                                 argv[optind - 1]);
    if (!a->trace || dev < 0)
        return hoctl_usage_error("admit needs --trace T and --device D");
    a->device = (int)dev;
    return 0;
}

enum {
    AD_ID, AD_NAME, AD_DEVICE, AD_BUDGET, AD_COMPUTE, AD_STEP_BEFORE,
    AD_STEP_AFTER, AD_EXP_BEFORE, AD_EXP_AFTER, AD_WAIT, AD_H2D, AD_DDR,
    AD_SLOWDOWN, AD_MAX, AD_OK, AD_N
};
static const hoctl_col admit_cols[AD_N] = {
    [AD_ID] = {"ID", "session_id", HOCTL_T_INT, false},
    [AD_NAME] = {"NAME", "name", HOCTL_T_STR, false},
    [AD_DEVICE] = {"DEVICE", "device", HOCTL_T_INT, false},
    [AD_BUDGET] = {"BUDGET", "budget_bytes", HOCTL_T_BYTES, false},
    [AD_COMPUTE] = {"COMPUTE", "compute_us", HOCTL_T_US, false},
    [AD_STEP_BEFORE] = {"STEP_NOW", "before_step_us", HOCTL_T_US, false},
    [AD_STEP_AFTER] = {"STEP_AFTER", "after_step_us", HOCTL_T_US, false},
    [AD_EXP_BEFORE] = {"EXPOSED_NOW", "before_exposed_us", HOCTL_T_US, false},
    [AD_EXP_AFTER] = {"EXPOSED_AFTER", "after_exposed_us", HOCTL_T_US,
                      false},
    [AD_WAIT] = {"ALLOC_WAIT", "after_alloc_wait_us", HOCTL_T_US, false},
    [AD_H2D] = {"H2D_GBPS", "after_h2d_gbps", HOCTL_T_REAL, false},
    [AD_DDR] = {"DDR_LIMIT", "after_ddr_limit_bytes", HOCTL_T_BYTES, false},
    [AD_SLOWDOWN] = {"SLOWDOWN", "slowdown", HOCTL_T_REAL, false},
    [AD_MAX] = {"MAX_SLOWDOWN", "max_slowdown", HOCTL_T_REAL, false},
    [AD_OK] = {"OK", "ok", HOCTL_T_BOOL, false},
};

static void set_us(hoctl_sheet *sh, unsigned col, double us)
{
    if (isfinite(us) && us >= 0 && us < 9.2e18)
        hoctl_set_u64(sh, col, (uint64_t)llround(us));
}

static int print_admit(const hoctl_globals *g, const Hyperoffload__AdmitReply *r)
{
    hoctl_sheet sh;
    hoctl_view v;
    hoctl_sheet_init(&sh, admit_cols, AD_N);
    for (size_t i = 0; i < r->n_rows; i++) {
        const Hyperoffload__AdmitRow *w = r->rows[i];
        hoctl_sheet_row(&sh);
        if (w->session_id)
            hoctl_set_i64(&sh, AD_ID, (int64_t)w->session_id);
        hoctl_set_str(&sh, AD_NAME, w->name);
        hoctl_set_i64(&sh, AD_DEVICE, w->device);
        hoctl_set_u64(&sh, AD_BUDGET, w->budget);
        set_us(&sh, AD_COMPUTE, w->compute_us);
        if (w->session_id && w->before_step_us > 0) {
            set_us(&sh, AD_STEP_BEFORE, w->before_step_us);
            set_us(&sh, AD_EXP_BEFORE, w->before_exposed_us);
        }
        set_us(&sh, AD_STEP_AFTER, w->after_step_us);
        set_us(&sh, AD_EXP_AFTER, w->after_exposed_us);
        set_us(&sh, AD_WAIT, w->after_alloc_wait_us);
        hoctl_set_real(&sh, AD_H2D, w->after_h2d_gbps);
        hoctl_set_u64(&sh, AD_DDR, w->after_ddr_limit);
        hoctl_set_real(&sh, AD_SLOWDOWN, w->compute_us > 0
                                             ? w->after_step_us / w->compute_us
                                             : 1.0);
        if (w->max_slowdown > 0)
            hoctl_set_real(&sh, AD_MAX, w->max_slowdown);
        hoctl_set_bool(&sh, AD_OK, w->ok);
    }
    int rc = hoctl_sheet_view(&sh, NULL, !g->json, &v);
    if (rc == 0 && g->json) {
        json_t *o = hoctl_json_root();
        json_object_set_new(o, "admissible", json_boolean(r->admissible));
        json_object_set_new(o, "strategy", json_string(r->strategy ? r->strategy : ""));
        json_object_set_new(o, "weighted_exposed_before_us",
                            json_real(r->weighted_exposed_before_us));
        json_object_set_new(o, "weighted_exposed_after_us",
                            json_real(r->weighted_exposed_after_us));
        json_object_set_new(o, "arbitration_ms", json_real(r->arbitration_ms));
        json_t *rs = json_array();
        for (size_t i = 0; i < r->n_reasons; i++)
            json_array_append_new(rs, json_string(r->reasons[i]));
        json_object_set_new(o, "reasons", rs);
        json_object_set_new(o, "clients", hoctl_sheet_json(&sh, &v));
        rc = hoctl_json_emit(o);
    } else if (rc == 0) {
        if (sh.nrows)
            hoctl_sheet_table(&sh, &v);
        printf("\nnode: weighted exposed %.3f ms now, %.3f ms with the "
               "newcomer (%s, %.1f ms)\n", r->weighted_exposed_before_us / 1e3,
               r->weighted_exposed_after_us / 1e3,
               r->strategy ? r->strategy : "", r->arbitration_ms);
        printf("%s\n", r->admissible ? "admissible" : "not admissible:");
        for (size_t i = 0; i < r->n_reasons; i++)
            printf("  %s\n", r->reasons[i]);
    }
    hoctl_sheet_done(&sh);
    if (rc == 0 && !r->admissible)
        rc = HOCTL_EXIT_FAILED;
    return rc;
}

int hoctl_cmd_admit(const hoctl_globals *g, int argc, char **argv)
{
    if (argc == 1 && strcmp(argv[0], "help") == 0) {
        fputs(admit_usage, stdout);
        return HOCTL_EXIT_OK;
    }
    admit_args a;
    memset(&a, 0, sizeof(a));
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    char err[512] = "";
    plan_trace *t = NULL;
    int r = plan_trace_read_file(a.trace, &t, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "hoctl: cannot read %s: %s\n", a.trace,
                err[0] ? err : ho_strerror(r));
        return r == -ENOENT ? HOCTL_EXIT_NOT_FOUND : HOCTL_EXIT_FAILED;
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    r = plan_trace_to_pb(t, &buf, &len);
    plan_trace_free(t);
    Hyperoffload__Trace *pt =
        r == 0 ? hyperoffload__trace__unpack(NULL, len, buf) : NULL;
    free(buf);
    if (!pt) {
        fprintf(stderr, "hoctl: admit: cannot encode %s\n", a.trace);
        return HOCTL_EXIT_FAILED;
    }
    Hyperoffload__AdmitRequest req = HYPEROFFLOAD__ADMIT_REQUEST__INIT;
    req.trace = pt;
    req.device = a.device;
    req.budget = a.budget;
    req.job = (char *)(a.job ? a.job : "");
    req.name = (char *)(a.name ? a.name : "newcomer");
    req.weight = a.weight;
    req.max_slowdown = a.max_slowdown;
    HOC_ENVELOPE(env, ADMIT_REQUEST, admit_request, &req);
    ho_client *c = NULL;
    Hyperoffload__Envelope *reply = NULL;
    rc = hoctl_open_client(g, &c);
    if (rc == 0)
        rc = hoctl_request(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_ADMIT_REPLY,
                           &reply);
    if (rc == 0)
        rc = reply->admit_reply ? print_admit(g, reply->admit_reply)
                                : HOCTL_EXIT_FAILED;
    ho_frame_envelope_free(reply);
    ho_close(c);
    hyperoffload__trace__free_unpacked(pt, NULL);
    return rc;
}
