/*
 * hoctl/hoctl_admin.c - hoctl commands that talk to the daemon: status,
 * clients, quota, version.  The admin requests without a public wrapper
 * go through the library's one raw entry point (client/admin_call.h);
 * everything is printed through hoctl/output.h: aligned human tables with
 * IEC sizes, or one JSON object ("schema": 1, raw byte counts).
 */
#include <errno.h>
#include <math.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/admin_call.h"
#include "hoctl/hoctl_daemon.h"
#include "proto/frame.h"
#include "hoctl/hoctl.h"
#include "hoctl/output.h"
#include "hoctl/hoctl_parse.h"

/* ----------------------------------------------------------- requests */

/* The exit code for a library / daemon error code (hoctl.h table):
 * permission 77, unknown subject 4, draining 3, disconnected 69, other 1. */
static int exit_for(int code)
{
    switch (code) {
    case 0:
        return HOCTL_EXIT_OK;
    case HO_E_PERMISSION:
    case -EACCES:
    case -EPERM:
        return HOCTL_EXIT_PERMISSION;
    case HO_E_UNKNOWN_SESSION:
    case HO_E_UNKNOWN_EXTENT:
    case HO_E_UNKNOWN_DEVICE:
        return HOCTL_EXIT_NOT_FOUND;
    case HO_E_SHUTTING_DOWN:
        return HOCTL_EXIT_NOT_READY;
    case HO_E_DISCONNECTED:
        return HOCTL_EXIT_UNREACHABLE;
    default:
        return HOCTL_EXIT_FAILED;
    }
}

/* Why hyperoffloadd at `path` cannot be reached (the result of
 * ho_socket_path or ho_connect, rc < 0): print it (the daemon's sentence
 * when it refused the connection with one) and return the exit code: 77
 * for a refused permission, 3 while it shuts down, else 69. */
static int unreachable(const char *path, int rc)
{
    char why[512];
    hoctl_note_cause(rc);
    ho_last_error(NULL, why, sizeof(why));
    fprintf(stderr, "hoctl: cannot reach hyperoffloadd at %s: %s\n", path,
            why[0] ? why : ho_strerror(rc));
    if (rc == -EACCES || rc == -EPERM || rc == HO_E_PERMISSION)
        return HOCTL_EXIT_PERMISSION;
    return rc == HO_E_SHUTTING_DOWN ? HOCTL_EXIT_NOT_READY
                                    : HOCTL_EXIT_UNREACHABLE;
}

int hoctl_open_client(const hoctl_globals *g, ho_client **ret)
{
    char path[HO_SOCKET_PATH_MAX + 1];
    int rc = ho_socket_path(g->socket, path, sizeof(path));
    if (rc == 0)
        rc = ho_connect(path, "hoctl", ret);
    if (rc == 0)
        return 0;
    return unreachable(path[0] ? path : "(socket path too long)", rc);
}

int hoctl_request(ho_client *c, Hyperoffload__Envelope *env,
                  Hyperoffload__Envelope__BodyCase want,
                  Hyperoffload__Envelope **ret)
{
    int rc = hoc_call_expect(c, env, want, ret, NULL);
    if (rc == 0)
        return 0;
    hoctl_note_cause(rc);
    char msg[512];
    ho_last_error(c, msg, sizeof(msg));
    fprintf(stderr, "hoctl: %s (%s)\n", msg[0] ? msg : ho_strerror(rc),
            ho_err_name(rc));
    return exit_for(rc);
}

/* One admin request without arguments (Status, Clients): connect, send
 * `env` (its body set by the caller), print the reply with `print`
 * (HOCTL_EXIT_FAILED when the reply lacks its body), close. */
typedef int (*print_fn)(const hoctl_globals *g,
                        const Hyperoffload__Envelope *reply);

static int admin_query(const hoctl_globals *g, Hyperoffload__Envelope *env,
                       Hyperoffload__Envelope__BodyCase want, print_fn print)
{
    ho_client *c = NULL;
    Hyperoffload__Envelope *reply = NULL;
    int rc = hoctl_open_client(g, &c);
    if (rc)
        return rc;
    rc = hoctl_request(c, env, want, &reply);
    if (rc == 0)
        rc = print(g, reply);
    ho_frame_envelope_free(reply);
    ho_close(c);
    return rc;
}

static const char *tier_str(Hyperoffload__Tier t)
{
    return ho_tier_name((ho_tier)t);
}

/* ----------------------------------------------------------- status */

/* -o checked before the daemon is asked: 0 or the usage error. */
static int check_columns(const hoctl_globals *g, const hoctl_col *cols,
                         unsigned n)
{
    hoctl_sheet probe;
    hoctl_view v;
    hoctl_sheet_init(&probe, cols, n);
    return hoctl_sheet_view(&probe, g->columns, true, &v);
}

/* The tiers sheet: short names (ddr, flash0, hbm1) with the daemon's
 * long name's path part in PATH, so that the table fits 100 columns. */
enum {
    TC_NAME, TC_TIER, TC_CAPACITY, TC_USED, TC_FREE, TC_LARGEST, TC_FRAG,
    TC_EXTENTS, TC_COMMITTED, TC_PATH, TC_DETAIL, TC_N
};
static const hoctl_col tier_cols[TC_N] = {
    [TC_NAME] = {"NAME", "name", HOCTL_T_STR, false},
    [TC_TIER] = {"TIER", "tier", HOCTL_T_STR, true},
    [TC_CAPACITY] = {"CAPACITY", "capacity", HOCTL_T_BYTES, false},
    [TC_USED] = {"USED", "used", HOCTL_T_BYTES, false},
    [TC_FREE] = {"FREE", "free", HOCTL_T_BYTES, false},
    [TC_LARGEST] = {"LARGEST", "largest_free", HOCTL_T_BYTES, true},
    [TC_FRAG] = {"FRAG", "fragmentation", HOCTL_T_PCT, false},
    [TC_EXTENTS] = {"EXTENTS", "extents", HOCTL_T_INT, false},
    [TC_COMMITTED] = {"COMMITTED", "committed", HOCTL_T_BYTES, true},
    [TC_PATH] = {"PATH", "path", HOCTL_T_STR, false},
    [TC_DETAIL] = {"DETAIL", "detail", HOCTL_T_STR, true},
};

static void tiers_sheet(const Hyperoffload__StatusReply *s, hoctl_sheet *sh)
{
    unsigned seen[4] = {0}, total[4] = {0};
    for (size_t i = 0; i < s->n_tiers; i++)
        if (s->tiers[i] && (unsigned)s->tiers[i]->tier < 4)
            total[s->tiers[i]->tier]++;
    hoctl_sheet_init(sh, tier_cols, TC_N);
    for (size_t i = 0; i < s->n_tiers; i++) {
        const Hyperoffload__TierStats *t = s->tiers[i];
        if (!t)
            continue;
        unsigned k = (unsigned)t->tier < 4 ? (unsigned)t->tier : 0;
        char name[48];
        if (total[k] > 1 || t->tier != HYPEROFFLOAD__TIER__TIER_DDR)
            snprintf(name, sizeof(name), "%s%u", tier_str(t->tier), seen[k]);
        else
            snprintf(name, sizeof(name), "%s", tier_str(t->tier));
        seen[k]++;
        const char *colon = t->name ? strchr(t->name, ':') : NULL;
        hoctl_sheet_row(sh);
        hoctl_set_str(sh, TC_NAME, name);
        hoctl_set_str(sh, TC_TIER, tier_str(t->tier));
        hoctl_set_u64(sh, TC_CAPACITY, t->capacity);
        hoctl_set_u64(sh, TC_USED, t->used);
        hoctl_set_u64(sh, TC_FREE, t->free);
        hoctl_set_u64(sh, TC_LARGEST, t->largest_free);
        hoctl_set_real(sh, TC_FRAG, t->fragmentation);
        hoctl_set_i64(sh, TC_EXTENTS, (int64_t)t->extents);
        hoctl_set_u64(sh, TC_COMMITTED, t->committed);
        if (colon && colon[1])
            hoctl_set_str(sh, TC_PATH, colon + 1);
        if (t->detail && t->detail[0])
            hoctl_set_str(sh, TC_DETAIL, t->detail);
    }
}

enum { DC_INDEX, DC_NAME, DC_CAPACITY, DC_RESERVE, DC_GRANTED, DC_FREE, DC_N };
static const hoctl_col device_cols[DC_N] = {
    [DC_INDEX] = {"DEVICE", "index", HOCTL_T_INT, false},
    [DC_NAME] = {"NAME", "name", HOCTL_T_STR, false},
    [DC_CAPACITY] = {"CAPACITY", "capacity", HOCTL_T_BYTES, false},
    [DC_RESERVE] = {"RESERVE", "reserved", HOCTL_T_BYTES, false},
    [DC_GRANTED] = {"GRANTED", "granted", HOCTL_T_BYTES, false},
    [DC_FREE] = {"FREE", "free", HOCTL_T_BYTES, false},
};

enum { GC_DEVICE, GC_SESSION, GC_CLIENT, GC_BYTES, GC_N };
static const hoctl_col grant_cols[GC_N] = {
    [GC_DEVICE] = {"DEVICE", "device", HOCTL_T_INT, false},
    [GC_SESSION] = {"SESSION", "session_id", HOCTL_T_INT, false},
    [GC_CLIENT] = {"CLIENT", "client_name", HOCTL_T_STR, false},
    [GC_BYTES] = {"BYTES", "bytes", HOCTL_T_BYTES, false},
};

/* One row per device in `dv`, one per grant in `gr`. */
static void devices_sheets(const Hyperoffload__StatusReply *s,
                           hoctl_sheet *dv, hoctl_sheet *gr)
{
    hoctl_sheet_init(dv, device_cols, DC_N);
    hoctl_sheet_init(gr, grant_cols, GC_N);
    for (size_t i = 0; i < s->n_devices; i++) {
        const Hyperoffload__DeviceStats *d = s->devices[i];
        if (!d)
            continue;
        uint64_t used = d->reserved + d->granted;
        hoctl_sheet_row(dv);
        hoctl_set_i64(dv, DC_INDEX, d->index);
        hoctl_set_str(dv, DC_NAME, d->name);
        hoctl_set_u64(dv, DC_CAPACITY, d->capacity);
        hoctl_set_u64(dv, DC_RESERVE, d->reserved);
        hoctl_set_u64(dv, DC_GRANTED, d->granted);
        hoctl_set_u64(dv, DC_FREE, d->capacity > used ? d->capacity - used : 0);
        for (size_t k = 0; k < d->n_grants; k++) {
            const Hyperoffload__DeviceGrant *g = d->grants[k];
            if (!g)
                continue;
            hoctl_sheet_row(gr);
            hoctl_set_i64(gr, GC_DEVICE, d->index);
            hoctl_set_i64(gr, GC_SESSION, (int64_t)g->session_id);
            hoctl_set_str(gr, GC_CLIENT, g->client_name);
            hoctl_set_u64(gr, GC_BYTES, g->bytes);
        }
    }
}

/* The devices as JSON, each with its grants (rows of `gr` whose DEVICE
 * is its index, without that column). */
static json_t *devices_json(const hoctl_sheet *dv, const hoctl_sheet *gr)
{
    hoctl_view all, gv = {.n = 3, .idx = {GC_SESSION, GC_CLIENT, GC_BYTES}};
    hoctl_sheet_view(dv, NULL, false, &all);
    json_t *arr = hoctl_sheet_json(dv, &all);
    for (size_t r = 0; r < dv->nrows; r++) {
        json_t *grants = json_array();
        for (size_t k = 0; k < gr->nrows; k++) {
            if (gr->cells[k * GC_N + GC_DEVICE].v.i !=
                dv->cells[r * DC_N + DC_INDEX].v.i)
                continue;
            json_t *o = json_object();
            for (unsigned c = 0; c < gv.n; c++)
                json_object_set_new(o, grant_cols[gv.idx[c]].key,
                                    hoctl_cell_json(gr, k, gv.idx[c]));
            json_array_append_new(grants, o);
        }
        json_object_set_new(json_array_get(arr, r), "grants", grants);
    }
    return arr;
}

static const char *nonempty(const char *s)
{
    return s && s[0] ? s : NULL;
}

static int status_json(const Hyperoffload__StatusReply *s,
                       const hoctl_sheet *tiers, const hoctl_view *tv,
                       const hoctl_sheet *dv, const hoctl_sheet *gr)
{
    json_t *o = hoctl_json_root();
    json_object_set_new(o, "server_version", hoctl_json_str(s->server_version));
    json_object_set_new(o, "protocol_version",
                        hoctl_json_u64(s->protocol_version));
    json_object_set_new(o, "pid", hoctl_json_u64(s->pid));
    json_object_set_new(o, "uptime_us", hoctl_json_us(s->uptime_s * 1e6));
    json_object_set_new(o, "socket", hoctl_json_str(s->socket_path));
    /* null: the embedded default configuration */
    json_object_set_new(o, "config", nonempty(s->config_path)
                                         ? json_string(s->config_path)
                                         : json_null());
    json_object_set_new(o, "state_dir", hoctl_json_str(s->state_dir));
    json_object_set_new(o, "clients", hoctl_json_u64(s->clients));
    json_object_set_new(o, "connections", hoctl_json_u64(s->connections));
    json_object_set_new(o, "ddr_reserved_bytes",
                        hoctl_json_u64(s->ddr_reserved));
    json_object_set_new(o, "ddr_quota_reserved_bytes",
                        hoctl_json_u64(s->ddr_quota_reserved));
    json_object_set_new(o, "tiers", hoctl_sheet_json(tiers, tv));
    json_object_set_new(o, "devices", devices_json(dv, gr));
    return hoctl_json_emit(o);
}

static void status_text(const Hyperoffload__StatusReply *s,
                        const hoctl_sheet *tiers, const hoctl_view *tv,
                        const hoctl_sheet *dv, const hoctl_sheet *gr)
{
    hoctl_fmt up;
    hoctl_view all;
    printf("hyperoffloadd %s  protocol %u  pid %u  up %s  %u client%s, %u "
           "connection%s\n",
           s->server_version ? s->server_version : "?", s->protocol_version,
           s->pid, hoctl_fmt_age(s->uptime_s, up), s->clients,
           s->clients == 1 ? "" : "s", s->connections,
           s->connections == 1 ? "" : "s");
    printf("socket  %s\n", nonempty(s->socket_path) ? s->socket_path : "-");
    printf("config  %s\n", nonempty(s->config_path) ? s->config_path
                                                    : "(embedded default)");
    printf("state   %s\n", nonempty(s->state_dir) ? s->state_dir : "-");
    hoctl_fmt r1, r2;
    printf("ddr     %s reserved (%s by DDR quotas, the rest host-copy "
           "limits)\n\n", hoctl_fmt_size(s->ddr_reserved, r1),
           hoctl_fmt_size(s->ddr_quota_reserved, r2));
    hoctl_sheet_table(tiers, tv);
    if (dv->nrows == 0) {
        puts("\nno devices configured");
        return;
    }
    putchar('\n');
    hoctl_sheet_view(dv, NULL, true, &all);
    hoctl_sheet_table(dv, &all);
    if (gr->nrows > 0) {
        putchar('\n');
        hoctl_sheet_view(gr, NULL, true, &all);
        hoctl_sheet_table(gr, &all);
    }
}

static int print_status(const hoctl_globals *g,
                        const Hyperoffload__Envelope *reply)
{
    const Hyperoffload__StatusReply *s = reply->status_reply;
    if (!s)
        return HOCTL_EXIT_FAILED;
    hoctl_sheet tiers, dv, gr;
    hoctl_view tv;
    tiers_sheet(s, &tiers);
    devices_sheets(s, &dv, &gr);
    int rc = hoctl_sheet_view(&tiers, g->columns,
                              g->format == HOCTL_FMT_TABLE, &tv);
    if (rc == 0 && (tiers.oom || dv.oom || gr.oom)) {
        fputs("hoctl: out of memory\n", stderr);
        rc = HOCTL_EXIT_FAILED;
    }
    if (rc == 0) {
        if (g->format == HOCTL_FMT_JSON)
            rc = status_json(s, &tiers, &tv, &dv, &gr);
        else if (g->format == HOCTL_FMT_CSV)
            hoctl_sheet_csv(&tiers, &tv);
        else
            status_text(s, &tiers, &tv, &dv, &gr);
    }
    hoctl_sheet_done(&tiers);
    hoctl_sheet_done(&dv);
    hoctl_sheet_done(&gr);
    return rc;
}

int hoctl_cmd_status(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0 && strcmp(argv[0], "--") == 0)
        argc--, argv++;
    if (argc > 0)
        return hoctl_usage_error_help("status takes no arguments ('%s')",
                                      argv[0]);
    int rc = check_columns(g, tier_cols, TC_N);
    if (rc)
        return rc;
    Hyperoffload__StatusRequest req = HYPEROFFLOAD__STATUS_REQUEST__INIT;
    HOC_ENVELOPE(env, STATUS_REQUEST, status_request, &req);
    return admin_query(g, &env, HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY,
                       print_status);
}

/* ----------------------------------------------------------- clients */

enum {
    CC_ID, CC_NAME, CC_PID, CC_UID, CC_GID, CC_JOB, CC_DEVICE, CC_BUDGET,
    CC_GRANT, CC_DDR, CC_FLASH, CC_EXTENTS, CC_AGE, CC_REQUESTS, CC_N
};
static const hoctl_col client_cols[CC_N] = {
    [CC_ID] = {"ID", "session_id", HOCTL_T_INT, false},
    [CC_NAME] = {"NAME", "name", HOCTL_T_STR, false},
    [CC_PID] = {"PID", "pid", HOCTL_T_INT, false},
    [CC_UID] = {"UID", "uid", HOCTL_T_INT, false},
    [CC_GID] = {"GID", "gid", HOCTL_T_INT, true},
    [CC_JOB] = {"JOB", "job", HOCTL_T_STR, false},
    [CC_DEVICE] = {"DEVICE", "device", HOCTL_T_INT, false},
    [CC_BUDGET] = {"BUDGET", "hbm_budget", HOCTL_T_BYTES, false},
    [CC_GRANT] = {"GRANT", "hbm_granted", HOCTL_T_BYTES, false},
    [CC_DDR] = {"DDR", "ddr_bytes", HOCTL_T_BYTES, false},
    [CC_FLASH] = {"FLASH", "flash_bytes", HOCTL_T_BYTES, false},
    [CC_EXTENTS] = {"EXTENTS", "extents", HOCTL_T_INT, false},
    [CC_AGE] = {"AGE", "connected_us", HOCTL_T_AGE, false},
    [CC_REQUESTS] = {"REQUESTS", "requests", HOCTL_T_INT, false},
};

/* Replays: progress and traffic of the sessions that run one, from their
 * control regions. */
enum {
    RC_ID, RC_STEPS, RC_PROGRESS, RC_OP, RC_OPS, RC_H2D, RC_D2H, RC_TO_FLASH,
    RC_FROM_FLASH, RC_STALL, RC_EXPOSED, RC_COPIES_DDR, RC_COPIES_FLASH,
    RC_PEAK, RC_DDR_LIMIT, RC_COPIES, RC_FLASH_SHARE, RC_FLASH_PLANNED, RC_N
};
static const hoctl_col replay_cols[RC_N] = {
    [RC_ID] = {"ID", "session_id", HOCTL_T_INT, false},
    [RC_STEPS] = {"STEPS", "steps", HOCTL_T_INT, false},
    [RC_PROGRESS] = {"OP", "progress", HOCTL_T_STR, false}, /* table only */
    [RC_OP] = {"CURRENT_OP", "current_op", HOCTL_T_INT, true},
    [RC_OPS] = {"OPS", "ops_per_step", HOCTL_T_INT, true},
    [RC_H2D] = {"H2D", "h2d_bytes", HOCTL_T_BYTES, false},
    [RC_D2H] = {"D2H", "d2h_bytes", HOCTL_T_BYTES, false},
    [RC_TO_FLASH] = {"TO_FLASH", "flash_out_bytes", HOCTL_T_BYTES, false},
    [RC_FROM_FLASH] = {"FROM_FLASH", "flash_in_bytes", HOCTL_T_BYTES, false},
    [RC_STALL] = {"STALL", "stall_us", HOCTL_T_US, false},
    [RC_EXPOSED] = {"EXPOSED", "exposed_us", HOCTL_T_US, false},
    [RC_COPIES_DDR] = {"COPIES_DDR", "host_copies_ddr_bytes", HOCTL_T_BYTES,
                       true},
    [RC_COPIES_FLASH] = {"COPIES_FLASH", "host_copies_flash_bytes",
                         HOCTL_T_BYTES, true},
    [RC_PEAK] = {"PEAK", "peak_device_bytes", HOCTL_T_BYTES, false},
    [RC_DDR_LIMIT] = {"DDR_LIMIT", "ddr_limit_bytes", HOCTL_T_BYTES, false},
    [RC_COPIES] = {"COPIES", "host_copies_bytes", HOCTL_T_BYTES, true},
    /* its share of the flash bandwidth now, and the one its staging plan
     * was made for (docs/runtime.md "Flash bandwidth"; 0: none) */
    [RC_FLASH_SHARE] = {"FLASH_SHARE", "flash_share", HOCTL_T_REAL, false},
    [RC_FLASH_PLANNED] = {"PLANNED_SHARE", "flash_planned_share",
                          HOCTL_T_REAL, true},
};

/* Node arbitration: what the daemon's arbiter granted each session of the
 * node workload, what it predicts and what the replay measures. */
enum {
    AC_ID, AC_EPOCH, AC_BUDGET, AC_H2D, AC_D2H, AC_DDR_LIMIT, AC_PRED_STEP,
    AC_PRED_EXPOSED, AC_STEP, AC_EXPOSED, AC_WEIGHT, AC_MAX_SLOWDOWN,
    AC_PENDING, AC_SWITCHED, AC_N
};
static const hoctl_col arb_cols[AC_N] = {
    [AC_ID] = {"ID", "session_id", HOCTL_T_INT, false},
    [AC_EPOCH] = {"EPOCH", "epoch", HOCTL_T_INT, false},
    [AC_BUDGET] = {"BUDGET", "budget_bytes", HOCTL_T_BYTES, false},
    [AC_H2D] = {"H2D_GBPS", "h2d_gbps", HOCTL_T_REAL, false},
    [AC_D2H] = {"D2H_GBPS", "d2h_gbps", HOCTL_T_REAL, false},
    [AC_DDR_LIMIT] = {"DDR_LIMIT", "ddr_limit_bytes", HOCTL_T_BYTES, false},
    [AC_PRED_STEP] = {"PRED_STEP", "predicted_step_us", HOCTL_T_US, false},
    [AC_PRED_EXPOSED] = {"PRED_EXPOSED", "predicted_exposed_us", HOCTL_T_US,
                         false},
    [AC_STEP] = {"STEP", "measured_step_us", HOCTL_T_US, false},
    [AC_EXPOSED] = {"EXPOSED", "measured_exposed_us", HOCTL_T_US, false},
    [AC_WEIGHT] = {"WEIGHT", "weight", HOCTL_T_REAL, true},
    [AC_MAX_SLOWDOWN] = {"MAX_SLOWDOWN", "max_slowdown", HOCTL_T_REAL, true},
    [AC_PENDING] = {"PENDING", "pending", HOCTL_T_BOOL, false},
    [AC_SWITCHED] = {"SWITCHED", "switched_epoch", HOCTL_T_INT, false},
};

static void set_us(hoctl_sheet *sh, unsigned col, double us)
{
    if (isfinite(us) && us >= 0 && us < 9.2e18)
        hoctl_set_u64(sh, col, (uint64_t)llround(us));
}

static void arb_row(hoctl_sheet *as, uint64_t id,
                    const Hyperoffload__ArbInfo *a)
{
    hoctl_sheet_row(as);
    hoctl_set_i64(as, AC_ID, (int64_t)id);
    hoctl_set_i64(as, AC_EPOCH, (int64_t)a->epoch);
    hoctl_set_u64(as, AC_BUDGET, a->budget);
    hoctl_set_real(as, AC_H2D, a->h2d_gbps);
    hoctl_set_real(as, AC_D2H, a->d2h_gbps);
    hoctl_set_u64(as, AC_DDR_LIMIT, a->ddr_limit);
    if (a->epoch) {
        set_us(as, AC_PRED_STEP, a->predicted_step_us);
        set_us(as, AC_PRED_EXPOSED, a->predicted_exposed_us);
    }
    if (a->measured_step_us > 0) {
        set_us(as, AC_STEP, a->measured_step_us);
        set_us(as, AC_EXPOSED, a->measured_exposed_us);
    }
    hoctl_set_real(as, AC_WEIGHT, a->weight);
    if (a->max_slowdown > 0)
        hoctl_set_real(as, AC_MAX_SLOWDOWN, a->max_slowdown);
    hoctl_set_bool(as, AC_PENDING, a->pending);
    hoctl_set_i64(as, AC_SWITCHED, (int64_t)a->switched_epoch);
}

static void clients_sheets(const Hyperoffload__ClientsReply *r,
                           hoctl_sheet *cs, hoctl_sheet *rs, hoctl_sheet *as)
{
    hoctl_sheet_init(cs, client_cols, CC_N);
    hoctl_sheet_init(rs, replay_cols, RC_N);
    hoctl_sheet_init(as, arb_cols, AC_N);
    for (size_t i = 0; i < r->n_clients; i++) {
        const Hyperoffload__ClientInfo *ci = r->clients[i];
        if (!ci)
            continue;
        const Hyperoffload__SessionUsage *u = ci->usage;
        hoctl_sheet_row(cs);
        hoctl_set_i64(cs, CC_ID, (int64_t)ci->session_id);
        hoctl_set_str(cs, CC_NAME, ci->name);
        hoctl_set_i64(cs, CC_PID, ci->pid);
        hoctl_set_i64(cs, CC_UID, ci->uid);
        hoctl_set_i64(cs, CC_GID, ci->gid);
        hoctl_set_str(cs, CC_JOB, nonempty(ci->job));
        if (ci->device >= 0)
            hoctl_set_i64(cs, CC_DEVICE, ci->device);
        hoctl_set_u64(cs, CC_BUDGET, ci->hbm_budget);
        if (u) {
            hoctl_set_u64(cs, CC_GRANT, u->hbm_granted);
            hoctl_set_u64(cs, CC_DDR, u->ddr_bytes);
            hoctl_set_u64(cs, CC_FLASH, u->flash_bytes);
            hoctl_set_i64(cs, CC_EXTENTS, (int64_t)u->extents);
        }
        set_us(cs, CC_AGE, ci->connected_s * 1e6);
        hoctl_set_i64(cs, CC_REQUESTS, (int64_t)ci->requests);
        if (ci->arb)
            arb_row(as, ci->session_id, ci->arb);
        const Hyperoffload__RuntimeInfo *rt = ci->runtime;
        if (!rt)
            continue;
        hoctl_sheet_row(rs);
        hoctl_set_i64(rs, RC_ID, (int64_t)ci->session_id);
        hoctl_set_i64(rs, RC_STEPS, (int64_t)rt->steps);
        char progress[40];
        if (rt->current_op != UINT32_MAX) { /* absent: between steps */
            hoctl_set_i64(rs, RC_OP, rt->current_op);
            snprintf(progress, sizeof(progress), "%u/%u", rt->current_op,
                     rt->ops_per_step);
        } else {
            snprintf(progress, sizeof(progress), "idle/%u", rt->ops_per_step);
        }
        hoctl_set_str(rs, RC_PROGRESS, progress);
        hoctl_set_i64(rs, RC_OPS, rt->ops_per_step);
        hoctl_set_u64(rs, RC_H2D, rt->h2d_bytes);
        hoctl_set_u64(rs, RC_D2H, rt->d2h_bytes);
        hoctl_set_u64(rs, RC_TO_FLASH, rt->flash_out_bytes);
        hoctl_set_u64(rs, RC_FROM_FLASH, rt->flash_in_bytes);
        set_us(rs, RC_STALL, rt->stall_us);
        set_us(rs, RC_EXPOSED, rt->exposed_us);
        hoctl_set_u64(rs, RC_COPIES_DDR, rt->host_copies_ddr);
        hoctl_set_u64(rs, RC_COPIES_FLASH, rt->host_copies_flash);
        hoctl_set_u64(rs, RC_PEAK, rt->peak_device_bytes);
        hoctl_set_u64(rs, RC_DDR_LIMIT, rt->ddr_limit);
        hoctl_set_u64(rs, RC_COPIES, rt->host_copies_bytes);
        hoctl_set_real(rs, RC_FLASH_SHARE, rt->flash_share);
        hoctl_set_real(rs, RC_FLASH_PLANNED, rt->flash_planned_share);
    }
}

/* Attach to each client object of arr, as `key`, the row of sheet `s`
 * (columns `cols`, n of them, the id first and left out, `skip` too)
 * with the client's id, or null. */
static void attach_rows(json_t *arr, const hoctl_sheet *cs,
                        const hoctl_sheet *s, const hoctl_col *cols,
                        unsigned n, unsigned skip, const char *key)
{
    for (size_t i = 0; i < cs->nrows; i++) {
        json_t *rt = json_null();
        for (size_t k = 0; k < s->nrows; k++) {
            if (s->cells[k * n].v.i != cs->cells[i * CC_N + CC_ID].v.i)
                continue;
            json_decref(rt);
            rt = json_object();
            for (unsigned c = 1; c < n; c++)
                if (c != skip)
                    json_object_set_new(rt, cols[c].key,
                                        hoctl_cell_json(s, k, c));
            break;
        }
        json_object_set_new(json_array_get(arr, i), key, rt);
    }
}

/* The clients, each with "runtime": its replay row (without the id) or
 * null, and "arb": its node-arbitration row or null. */
static int clients_json(const hoctl_sheet *cs, const hoctl_view *cv,
                        const hoctl_sheet *rs, const hoctl_sheet *as)
{
    json_t *o = hoctl_json_root();
    json_t *arr = hoctl_sheet_json(cs, cv);
    attach_rows(arr, cs, rs, replay_cols, RC_N, RC_PROGRESS, "runtime");
    attach_rows(arr, cs, as, arb_cols, AC_N, AC_N, "arb");
    json_object_set_new(o, "clients", arr);
    return hoctl_json_emit(o);
}

static int print_clients(const hoctl_globals *g,
                         const Hyperoffload__Envelope *reply)
{
    const Hyperoffload__ClientsReply *r = reply->clients_reply;
    if (!r)
        return HOCTL_EXIT_FAILED;
    hoctl_sheet cs, rs, as;
    hoctl_view cv, rv, av;
    clients_sheets(r, &cs, &rs, &as);
    int rc = hoctl_sheet_view(&cs, g->columns, g->format == HOCTL_FMT_TABLE,
                              &cv);
    if (rc == 0 && (cs.oom || rs.oom || as.oom)) {
        fputs("hoctl: out of memory\n", stderr);
        rc = HOCTL_EXIT_FAILED;
    }
    if (rc != 0) {
    } else if (g->format == HOCTL_FMT_JSON) {
        rc = clients_json(&cs, &cv, &rs, &as);
    } else if (g->format == HOCTL_FMT_CSV) {
        hoctl_sheet_csv(&cs, &cv);
    } else if (cs.nrows == 0) {
        puts("no clients registered");
    } else {
        hoctl_sheet_table(&cs, &cv);
        if (rs.nrows > 0) {
            puts("\nreplays:");
            hoctl_sheet_view(&rs, NULL, true, &rv);
            hoctl_sheet_table(&rs, &rv);
        }
        if (as.nrows > 0) {
            puts("\nnode arbiter (grants, predicted and measured per step):");
            hoctl_sheet_view(&as, NULL, true, &av);
            hoctl_sheet_table(&as, &av);
        }
    }
    hoctl_sheet_done(&cs);
    hoctl_sheet_done(&rs);
    hoctl_sheet_done(&as);
    return rc;
}

int hoctl_cmd_clients(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0 && strcmp(argv[0], "--") == 0)
        argc--, argv++;
    if (argc > 0 && strcmp(argv[0], "list") == 0)
        argc--, argv++;
    if (argc > 0 && strcmp(argv[0], "--") == 0)
        argc--, argv++;
    if (argc > 0)
        return hoctl_usage_error_help("clients takes no arguments ('%s')",
                                      argv[0]);
    int rc = check_columns(g, client_cols, CC_N);
    if (rc)
        return rc;
    Hyperoffload__ClientsRequest req = HYPEROFFLOAD__CLIENTS_REQUEST__INIT;
    HOC_ENVELOPE(env, CLIENTS_REQUEST, clients_request, &req);
    return admin_query(g, &env, HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REPLY,
                       print_clients);
}

/* ----------------------------------------------------------- health */

/* `hoctl health [--min-free PCT]`: the checks, in order, each a row of
 * the JSON "checks" array and a line of the human output.  A check's
 * "reason" is a code word, never a sentence. */
typedef struct health {
    json_t *checks;
    int rc; /* worst exit code so far */
} health;

static void health_check(health *h, const char *name, int rc,
                         const char *reason)
{
    json_t *o = json_object();
    json_object_set_new(o, "check", json_string(name));
    json_object_set_new(o, "ok", json_boolean(rc == 0));
    json_object_set_new(o, "reason", reason ? json_string(reason)
                                            : json_null());
    json_array_append_new(h->checks, o);
    if (rc != 0 && (h->rc == 0 || h->rc == HOCTL_EXIT_DEGRADED))
        h->rc = rc;
}

/* The tiers: each must have capacity and min_free percent of it free. */
static void health_tiers(health *h, const Hyperoffload__StatusReply *s,
                         unsigned min_free)
{
    hoctl_sheet t;
    tiers_sheet(s, &t);
    for (size_t r = 0; r < t.nrows; r++) {
        const hoctl_cell *c = &t.cells[r * TC_N];
        uint64_t cap = c[TC_CAPACITY].v.u, fr = c[TC_FREE].v.u;
        char name[80];
        snprintf(name, sizeof(name), "tier %s",
                 c[TC_NAME].set ? c[TC_NAME].v.s : "?");
        if (cap == 0)
            health_check(h, name, HOCTL_EXIT_DEGRADED, "no_capacity");
        else if (fr == 0 || (long double)fr * 100 < (long double)cap * min_free)
            health_check(h, name, HOCTL_EXIT_DEGRADED, "low_free_space");
        else
            health_check(h, name, 0, NULL);
    }
    hoctl_sheet_done(&t);
}

static int health_report(const hoctl_globals *g, health *h)
{
    const char *verdict = h->rc == 0 ? "healthy" : hoctl_exit_name(h->rc);
    if (g->json) {
        json_t *o = hoctl_json_root();
        json_object_set_new(o, "healthy", json_boolean(h->rc == 0));
        json_object_set_new(o, "status", json_string(verdict));
        json_object_set_new(o, "exit", json_integer(h->rc));
        json_object_set_new(o, "checks", h->checks);
        h->checks = NULL;
        int rc = hoctl_json_emit(o);
        return h->rc ? h->rc : rc;
    }
    size_t i;
    json_t *c;
    json_array_foreach(h->checks, i, c)
    {
        const char *why = json_string_value(json_object_get(c, "reason"));
        printf("%-20s %s%s%s\n", json_string_value(json_object_get(c, "check")),
               json_is_true(json_object_get(c, "ok")) ? "ok" : "FAIL",
               why ? "  " : "", why ? why : "");
    }
    printf("%s\n", verdict);
    return h->rc;
}

static int parse_health(int argc, char **argv, unsigned *ret_min_free)
{
    *ret_min_free = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "--") == 0)
            continue;
        if (strncmp(a, "--min-free=", 11) == 0)
            v = a + 11;
        else if (strcmp(a, "--min-free") == 0 && i + 1 < argc)
            v = argv[++i];
        else
            return hoctl_usage_error_help("health: unexpected argument '%s'",
                                          a);
        char *end;
        unsigned long x = strtoul(v, &end, 10);
        if (v[0] < '0' || v[0] > '9' || *end || x > 100)
            return hoctl_usage_error_help("--min-free: expected a "
                                          "percentage in [0, 100], got '%s'",
                                          v);
        *ret_min_free = (unsigned)x;
    }
    return 0;
}

int hoctl_cmd_health(const hoctl_globals *g, int argc, char **argv)
{
    unsigned min_free;
    int rc = parse_health(argc, argv, &min_free);
    if (rc)
        return rc;
    health h = {.checks = json_array(), .rc = 0};
    char path[HO_SOCKET_PATH_MAX + 1] = "";
    ho_client *c = NULL;
    rc = ho_socket_path(g->socket, path, sizeof(path));
    if (rc == 0)
        rc = ho_connect(path, "hoctl", &c);
    if (rc != 0) {
        bool perm = rc == -EACCES || rc == -EPERM || rc == HO_E_PERMISSION;
        health_check(&h, "connect",
                     perm ? HOCTL_EXIT_PERMISSION : HOCTL_EXIT_UNREACHABLE,
                     ho_err_name(rc));
    } else {
        health_check(&h, "connect", 0, NULL);
        Hyperoffload__StatusRequest req = HYPEROFFLOAD__STATUS_REQUEST__INIT;
        HOC_ENVELOPE(env, STATUS_REQUEST, status_request, &req);
        Hyperoffload__Envelope *reply = NULL;
        rc = hoc_call_expect(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY,
                             &reply, NULL);
        if (rc == 0 && reply->status_reply) {
            health_check(&h, "status", 0, NULL);
            health_tiers(&h, reply->status_reply, min_free);
        } else {
            int x = exit_for(rc ? rc : HO_E_PROTOCOL);
            health_check(&h, "status", x == HOCTL_EXIT_NOT_FOUND
                                           ? HOCTL_EXIT_FAILED : x,
                         ho_err_name(rc ? rc : HO_E_PROTOCOL));
        }
        ho_frame_envelope_free(reply);
        ho_close(c);
    }
    rc = health_report(g, &h);
    json_decref(h.checks);
    return rc;
}

/* ----------------------------------------------------------- quota */

typedef struct quota_args {
    Hyperoffload__QuotaOp op;
    const char *verb;
    bool have_subject;
    Hyperoffload__QuotaSubjectKind kind;
    uint32_t uid;
    const char *job;
    bool have_tier;
    Hyperoffload__Tier tier;
    bool have_size;
    uint64_t size;
} quota_args;

static int parse_tier(const char *s, Hyperoffload__Tier *ret)
{
    if (strcmp(s, "ddr") == 0)
        *ret = HYPEROFFLOAD__TIER__TIER_DDR;
    else if (strcmp(s, "flash") == 0)
        *ret = HYPEROFFLOAD__TIER__TIER_FLASH;
    else if (strcmp(s, "hbm") == 0)
        *ret = HYPEROFFLOAD__TIER__TIER_HBM;
    else
        return -EINVAL;
    return 0;
}

static int parse_uid(const char *s, uint32_t *ret)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (s[0] >= '0' && s[0] <= '9' && *end == '\0' && errno == 0 &&
        v < UINT32_MAX) {
        *ret = (uint32_t)v;
        return 0;
    }
    struct passwd *pw = getpwnam(s);
    if (!pw)
        return -ENOENT;
    *ret = (uint32_t)pw->pw_uid;
    return 0;
}

static int parse_quota_verb(const char *verb, Hyperoffload__QuotaOp *ret)
{
    if (strcmp(verb, "list") == 0)
        *ret = HYPEROFFLOAD__QUOTA_OP__QUOTA_LIST;
    else if (strcmp(verb, "get") == 0)
        *ret = HYPEROFFLOAD__QUOTA_OP__QUOTA_GET;
    else if (strcmp(verb, "set") == 0)
        *ret = HYPEROFFLOAD__QUOTA_OP__QUOTA_SET;
    else if (strcmp(verb, "clear") == 0)
        *ret = HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR;
    else
        return hoctl_usage_error_help("unknown quota verb '%s'", verb);
    return 0;
}

/* The subject option `which` (0 --uid, 1 --job) with value `val`. */
static int parse_quota_subject(int which, const char *val, quota_args *q)
{
    if (q->have_subject)
        return hoctl_usage_error_help("give one of --uid or --job, once");
    q->have_subject = true;
    if (which == 0) {
        q->kind = HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID;
        if (parse_uid(val, &q->uid) < 0) {
            fprintf(stderr, "hoctl: --uid '%s': no such user\n", val);
            return HOCTL_EXIT_NOT_FOUND;
        }
        return 0;
    }
    q->kind = HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_JOB;
    if (val[0] == '\0' || strlen(val) > HO_CLIENT_MAX_NAME)
        return hoctl_usage_error_help("--job needs a name of 1..%d bytes",
                                      HO_CLIENT_MAX_NAME);
    q->job = val;
    return 0;
}

/* Parse `--uid U`, `--job J`, `--tier T` (also --opt=value) and, when
 * want_size, one positional SIZE into q.  Returns 0 or an exit code. */
static int parse_quota_args(int argc, char **argv, bool want_size,
                            quota_args *q)
{
    bool options = true; /* until `--` */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        const char *opts[] = {"--uid", "--job", "--tier"};
        int which = -1, rc;
        if (options && strcmp(a, "--") == 0) {
            options = false;
            continue;
        }
        for (int k = 0; options && k < 3; k++) {
            size_t n = strlen(opts[k]);
            if (strncmp(a, opts[k], n) == 0 && (a[n] == '\0' || a[n] == '=')) {
                which = k;
                if (a[n] == '=')
                    val = a + n + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                else
                    return hoctl_usage_error_help("%s needs a value",
                                                  opts[k]);
            }
        }
        switch (which) {
        case 0:
        case 1:
            if ((rc = parse_quota_subject(which, val, q)) != 0)
                return rc;
            break;
        case 2:
            if (parse_tier(val, &q->tier) < 0)
                return hoctl_usage_error_help("--tier '%s': expected ddr, "
                                              "flash or hbm", val);
            q->have_tier = true;
            break;
        default:
            if (options && a[0] == '-' && a[1] != '\0')
                return hoctl_usage_error_help("unknown option '%s'", a);
            if (!want_size || q->have_size)
                return hoctl_usage_error_help("unexpected argument '%s'", a);
            char why[160];
            if (hoctl_size_parse(a, HOCTL_QUOTA_MAX, &q->size, why,
                                 sizeof(why)) < 0)
                return hoctl_usage_error_help("quota set: %s", why);
            q->have_size = true;
        }
    }
    return 0;
}

/* The verb and its options, checked against each other; 0 or an exit
 * code. */
static int parse_quota(int argc, char **argv, quota_args *q)
{
    int rc;
    if (argc < 1)
        return hoctl_usage_error_help("quota needs a verb: list, get, set or "
                                      "clear");
    q->verb = argv[0];
    if ((rc = parse_quota_verb(q->verb, &q->op)) != 0)
        return rc;
    rc = parse_quota_args(argc - 1, argv + 1,
                          q->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET, q);
    if (rc)
        return rc;
    if (q->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_LIST) {
        if (q->have_subject || q->have_tier)
            return hoctl_usage_error_help("quota list takes no options");
    } else if (!q->have_subject) {
        return hoctl_usage_error_help("quota %s needs --uid or --job",
                                      q->verb);
    }
    if (q->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET &&
        (!q->have_tier || !q->have_size))
        return hoctl_usage_error_help("quota set needs --tier and a SIZE");
    return 0;
}

enum { QC_SUBJECT, QC_UID, QC_JOB, QC_TIER, QC_LIMIT, QC_USED, QC_N };
static const hoctl_col quota_cols[QC_N] = {
    [QC_SUBJECT] = {"SUBJECT", "subject", HOCTL_T_STR, false},
    [QC_UID] = {"UID", "uid", HOCTL_T_INT, false},
    [QC_JOB] = {"JOB", "job", HOCTL_T_STR, false},
    [QC_TIER] = {"TIER", "tier", HOCTL_T_STR, false},
    [QC_LIMIT] = {"LIMIT", "limit", HOCTL_T_BYTES, false}, /* absent: none */
    [QC_USED] = {"USED", "used", HOCTL_T_BYTES, false},
};

static void quota_rows(hoctl_sheet *sh, Hyperoffload__QuotaEntry *const *es,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const Hyperoffload__QuotaEntry *e = es[i];
        if (!e)
            continue;
        bool uid = e->kind ==
                   HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID;
        hoctl_sheet_row(sh);
        hoctl_set_str(sh, QC_SUBJECT, uid ? "uid" : "job");
        if (uid)
            hoctl_set_i64(sh, QC_UID, e->uid);
        else
            hoctl_set_str(sh, QC_JOB, e->job);
        hoctl_set_str(sh, QC_TIER, tier_str(e->tier));
        if (e->limit)
            hoctl_set_u64(sh, QC_LIMIT, e->limit);
        hoctl_set_u64(sh, QC_USED, e->used);
    }
}

static int quota_call(ho_client *c, const quota_args *q,
                      Hyperoffload__Tier tier, Hyperoffload__Envelope **reply)
{
    Hyperoffload__QuotaRequest req = HYPEROFFLOAD__QUOTA_REQUEST__INIT;
    Hyperoffload__QuotaEntry e = HYPEROFFLOAD__QUOTA_ENTRY__INIT;
    if (q->op != HYPEROFFLOAD__QUOTA_OP__QUOTA_LIST) {
        e.kind = q->kind;
        e.uid = q->uid;
        e.job = (char *)(q->job ? q->job : "");
        e.limit = q->size;
    }
    e.tier = tier;
    req.op = q->op;
    req.entry = &e;
    HOC_ENVELOPE(env, QUOTA_REQUEST, quota_request, &req);
    return hoctl_request(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY,
                         reply);
}

/* Send the request once per tier it acts on (get and clear without
 * --tier act on every tier), collecting the replies' entries as rows of
 * `sh`.  0 or an exit code. */
static int quota_fetch(ho_client *c, const quota_args *q, hoctl_sheet *sh)
{
    static const Hyperoffload__Tier all_tiers[] = {
        HYPEROFFLOAD__TIER__TIER_DDR, HYPEROFFLOAD__TIER__TIER_FLASH,
        HYPEROFFLOAD__TIER__TIER_HBM};
    size_t ntiers = 1;
    const Hyperoffload__Tier *tiers = &q->tier;
    int rc = 0;
    if (!q->have_tier && (q->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_GET ||
                          q->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR)) {
        tiers = all_tiers;
        ntiers = 3;
    }
    for (size_t k = 0; k < ntiers && rc == 0; k++) {
        Hyperoffload__Envelope *reply = NULL;
        rc = quota_call(c, q, tiers[k], &reply);
        if (rc == 0 && reply->quota_reply)
            quota_rows(sh, reply->quota_reply->entries,
                       reply->quota_reply->n_entries);
        ho_frame_envelope_free(reply);
    }
    return rc;
}

/* quota set: a limit over what the daemon's tiers of that kind hold
 * together cannot be meant; refused with the figures (exit 2). */
static int quota_check_capacity(ho_client *c, const quota_args *q)
{
    Hyperoffload__StatusRequest req = HYPEROFFLOAD__STATUS_REQUEST__INIT;
    HOC_ENVELOPE(env, STATUS_REQUEST, status_request, &req);
    Hyperoffload__Envelope *reply = NULL;
    int rc = hoctl_request(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY,
                           &reply);
    if (rc)
        return rc;
    uint64_t cap = 0;
    const Hyperoffload__StatusReply *s = reply->status_reply;
    for (size_t i = 0; s && i < s->n_tiers; i++)
        if (s->tiers[i] && s->tiers[i]->tier == q->tier &&
            cap <= UINT64_MAX - s->tiers[i]->capacity)
            cap += s->tiers[i]->capacity;
    ho_frame_envelope_free(reply);
    if (q->size <= cap)
        return 0;
    hoctl_fmt a, b;
    return hoctl_usage_error("quota set: %s is more than the %s tier holds "
                             "(%s in all)", hoctl_fmt_size(q->size, a),
                             tier_str(q->tier), hoctl_fmt_size(cap, b));
}

/* set and clear say what they did (the replies' entries are not shown). */
static void quota_print_change(const quota_args *q)
{
    hoctl_fmt b;
    if (q->kind == HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID)
        printf("quota %s: uid %u", q->verb, q->uid);
    else
        printf("quota %s: job %s", q->verb, q->job);
    if (q->have_tier)
        printf(" %s", tier_str(q->tier));
    if (q->op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET)
        printf(" limit %s", hoctl_fmt_size(q->size, b));
    putchar('\n');
}

int hoctl_cmd_quota(const hoctl_globals *g, int argc, char **argv)
{
    quota_args q = {0};
    int rc = parse_quota(argc, argv, &q);
    if (rc)
        return rc;
    hoctl_sheet sh;
    hoctl_view v;
    hoctl_sheet_init(&sh, quota_cols, QC_N);
    if ((rc = hoctl_sheet_view(&sh, g->columns,
                               g->format == HOCTL_FMT_TABLE, &v)) != 0)
        return rc;
    ho_client *c = NULL;
    rc = hoctl_open_client(g, &c);
    if (rc)
        return rc;
    if (q.op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET)
        rc = quota_check_capacity(c, &q);
    if (rc == 0)
        rc = quota_fetch(c, &q, &sh);
    ho_close(c);
    if (rc == 0 && sh.oom) {
        fputs("hoctl: out of memory\n", stderr);
        rc = HOCTL_EXIT_FAILED;
    }
    if (rc) {
    } else if (g->format == HOCTL_FMT_JSON) {
        json_t *o = hoctl_json_root();
        json_object_set_new(o, "quotas", hoctl_sheet_json(&sh, &v));
        rc = hoctl_json_emit(o);
    } else if (g->format == HOCTL_FMT_CSV) {
        hoctl_sheet_csv(&sh, &v);
    } else if (q.op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET ||
               q.op == HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR) {
        quota_print_change(&q);
    } else if (sh.nrows == 0) {
        puts("no quotas set");
    } else {
        hoctl_sheet_table(&sh, &v);
    }
    hoctl_sheet_done(&sh);
    return rc;
}

/* ----------------------------------------------------------- version */

int hoctl_cmd_version(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0)
        return hoctl_usage_error_help("version takes no arguments ('%s')",
                                      argv[0]);
    ho_client *c = NULL;
    char path[HO_SOCKET_PATH_MAX + 1];
    int rc = ho_socket_path(g->socket, path, sizeof(path));
    if (rc == 0)
        rc = ho_connect(path, "hoctl", &c);
    if (g->json) {
        json_t *o = hoctl_json_root();
        json_object_set_new(o, "hoctl", hoctl_json_str(HO_VERSION_STRING));
        json_object_set_new(o, "library", hoctl_json_str(ho_version()));
        json_object_set_new(o, "protocol_min",
                            hoctl_json_u64(HO_PROTO_MIN_VERSION));
        json_object_set_new(o, "protocol_max",
                            hoctl_json_u64(HO_PROTO_VERSION));
        if (rc == 0) {
            json_t *d = json_object();
            json_object_set_new(d, "server_version",
                                hoctl_json_str(ho_server_version(c)));
            json_object_set_new(d, "protocol_version",
                                hoctl_json_u64(ho_protocol_version(c)));
            json_object_set_new(d, "socket", hoctl_json_str(ho_socket(c)));
            json_object_set_new(o, "daemon", d);
        } else {
            char msg[HO_SOCKET_PATH_MAX + 128];
            snprintf(msg, sizeof(msg), "cannot reach hyperoffloadd at %s: %s",
                     path, ho_strerror(rc));
            json_object_set_new(o, "daemon", json_null());
            json_object_set_new(o, "error",
                                hoctl_json_error(HOCTL_EXIT_UNREACHABLE, rc,
                                                 msg));
        }
        hoctl_json_emit(o);
    } else {
        printf("hoctl %s (libhyperoffload %s, protocol %u..%u)\n",
               HO_VERSION_STRING, ho_version(), HO_PROTO_MIN_VERSION,
               HO_PROTO_VERSION);
        if (rc == 0)
            printf("hyperoffloadd %s (protocol %u) at %s\n",
                   ho_server_version(c), ho_protocol_version(c),
                   ho_socket(c));
    }
    ho_close(c);
    if (rc == 0)
        return HOCTL_EXIT_OK;
    return unreachable(path, rc);
}

/* ----------------------------------------------------------- help */

int hoctl_admin_help(const char *noun)
{
    if (strcmp(noun, "status") == 0) {
        puts("usage: hoctl status [--json | --format csv] [-o COL,...] "
             "[--watch S [--count N]]\n"
             "Daemon version, uptime, every tier, every device (capacity,\n"
             "reserve, granted) and each grant.  Tier columns: NAME, TIER,\n"
             "CAPACITY, USED, FREE, LARGEST, FRAG, EXTENTS, COMMITTED, PATH,\n"
             "DETAIL (-o +DETAIL adds to the defaults, -o all shows all).\n"
             "Needs an admin peer (root or group hyperoffload).");
    } else if (strcmp(noun, "clients") == 0) {
        puts("usage: hoctl clients [--json | --format csv] [-o COL,...] "
             "[--watch S [--count N]]\n"
             "Every registered session: ID, NAME, PID, UID, GID, JOB,\n"
             "DEVICE, BUDGET, GRANT, DDR, FLASH, EXTENTS, AGE, REQUESTS;\n"
             "then the replays' progress and traffic.  Needs an admin peer.");
    } else if (strcmp(noun, "health") == 0) {
        puts("usage: hoctl health [--min-free PERCENT] [--json] "
             "[--watch S [--count N]]\n"
             "Connect, ask for the status, check every tier has capacity\n"
             "and PERCENT (default 0) of it free.  Exit 0 healthy, 3 not\n"
             "ready, 5 degraded, 69 unreachable, 77 permission denied.");
    } else if (strcmp(noun, "quota") == 0) {
        puts("usage: hoctl quota list\n"
             "       hoctl quota get   (--uid U | --job J) [--tier T]\n"
             "       hoctl quota set   (--uid U | --job J) --tier T SIZE\n"
             "       hoctl quota clear (--uid U | --job J) [--tier T]\n"
             "U is a uid or user name; T is ddr, flash or hbm; SIZE is IEC\n"
             "(2G, 1.5GiB, 512M, 4096; not 1.5 or 2GB), at most what the\n"
             "tier holds.  Without --tier, get and clear act on every tier.\n"
             "No limit shows as '-' (JSON null).  Columns: SUBJECT, UID,\n"
             "JOB, TIER, LIMIT, USED.\n"
             "Needs an admin peer.");
    } else if (strcmp(noun, "version") == 0) {
        puts("usage: hoctl version [--json]\n"
             "hoctl's and libhyperoffload's versions, then the daemon's\n"
             "when it is reachable (exit 69 when it is not).");
    } else {
        return 0;
    }
    return 1;
}
