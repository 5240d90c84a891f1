/*
 * hoctl/hoctl_admin.c - hoctl commands that talk to the daemon: status,
 * clients, quota, version.  The admin requests without a public wrapper
 * go through the library's one raw entry point (client/admin_call.h);
 * everything is printed through hoctl/output.h: aligned human tables with
 * IEC sizes, or one JSON object ("schema": 1, raw byte counts).
 */
#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/admin_call.h"
#include "proto/frame.h"
#include "hoctl/hoctl.h"
#include "hoctl/output.h"

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
 * ho_socket_path or ho_connect, rc < 0): print it and return the exit
 * code, 77 for a refused permission, else 69. */
static int unreachable(const char *path, int rc)
{
    fprintf(stderr, "hoctl: cannot reach hyperoffloadd at %s: %s\n", path,
            ho_strerror(rc));
    return rc == -EACCES || rc == -EPERM ? HOCTL_EXIT_PERMISSION
                                         : HOCTL_EXIT_UNREACHABLE;
}

/* Connect; on failure print why and return the exit code (> 0). */
static int open_client(const hoctl_globals *g, ho_client **ret)
{
    char path[HO_SOCKET_PATH_MAX + 1];
    int rc = ho_socket_path(g->socket, path, sizeof(path));
    if (rc == 0)
        rc = ho_connect(path, "hoctl", ret);
    if (rc == 0)
        return 0;
    return unreachable(path[0] ? path : "(socket path too long)", rc);
}

/* Send `env` and expect `want`; on failure print the daemon's sentence
 * and return the exit code (> 0). */
static int request(ho_client *c, Hyperoffload__Envelope *env,
                   Hyperoffload__Envelope__BodyCase want,
                   Hyperoffload__Envelope **ret)
{
    int rc = hoc_call_expect(c, env, want, ret, NULL);
    if (rc == 0)
        return 0;
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
    int rc = open_client(g, &c);
    if (rc)
        return rc;
    rc = request(c, env, want, &reply);
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

static json_t *tier_json(const Hyperoffload__TierStats *t)
{
    json_t *o = json_object();
    json_object_set_new(o, "tier", hoctl_json_str(tier_str(t->tier)));
    json_object_set_new(o, "name", hoctl_json_str(t->name));
    json_object_set_new(o, "capacity", hoctl_json_u64(t->capacity));
    json_object_set_new(o, "used", hoctl_json_u64(t->used));
    json_object_set_new(o, "free", hoctl_json_u64(t->free));
    json_object_set_new(o, "largest_free", hoctl_json_u64(t->largest_free));
    json_object_set_new(o, "fragmentation", json_real(t->fragmentation));
    json_object_set_new(o, "extents", hoctl_json_u64(t->extents));
    json_object_set_new(o, "committed", hoctl_json_u64(t->committed));
    json_object_set_new(o, "detail", hoctl_json_str(t->detail));
    return o;
}

static json_t *device_json(const Hyperoffload__DeviceStats *d)
{
    json_t *jd = json_object();
    json_object_set_new(jd, "index", json_integer(d->index));
    json_object_set_new(jd, "name", hoctl_json_str(d->name));
    json_object_set_new(jd, "capacity", hoctl_json_u64(d->capacity));
    json_object_set_new(jd, "reserved", hoctl_json_u64(d->reserved));
    json_object_set_new(jd, "granted", hoctl_json_u64(d->granted));
    json_t *grants = json_array();
    for (size_t k = 0; k < d->n_grants; k++) {
        const Hyperoffload__DeviceGrant *gr = d->grants[k];
        if (!gr)
            continue;
        json_t *jg = json_object();
        json_object_set_new(jg, "session_id", hoctl_json_u64(gr->session_id));
        json_object_set_new(jg, "client_name", hoctl_json_str(gr->client_name));
        json_object_set_new(jg, "bytes", hoctl_json_u64(gr->bytes));
        json_array_append_new(grants, jg);
    }
    json_object_set_new(jd, "grants", grants);
    return jd;
}

static int status_json(const Hyperoffload__StatusReply *s)
{
    json_t *o = hoctl_json_root();
    json_object_set_new(o, "server_version", hoctl_json_str(s->server_version));
    json_object_set_new(o, "protocol_version",
                        hoctl_json_u64(s->protocol_version));
    json_object_set_new(o, "pid", hoctl_json_u64(s->pid));
    json_object_set_new(o, "uptime_s", json_real(s->uptime_s));
    json_object_set_new(o, "socket", hoctl_json_str(s->socket_path));
    json_object_set_new(o, "config", hoctl_json_str(s->config_path));
    json_object_set_new(o, "state_dir", hoctl_json_str(s->state_dir));
    json_object_set_new(o, "clients", hoctl_json_u64(s->clients));
    json_object_set_new(o, "connections", hoctl_json_u64(s->connections));
    json_t *tiers = json_array();
    for (size_t i = 0; i < s->n_tiers; i++)
        if (s->tiers[i])
            json_array_append_new(tiers, tier_json(s->tiers[i]));
    json_object_set_new(o, "tiers", tiers);
    json_t *devs = json_array();
    for (size_t i = 0; i < s->n_devices; i++)
        if (s->devices[i])
            json_array_append_new(devs, device_json(s->devices[i]));
    json_object_set_new(o, "devices", devs);
    return hoctl_json_emit(o);
}

static void tiers_table(Hyperoffload__TierStats *const *tiers, size_t n)
{
    hoctl_table t;
    hoctl_fmt b[8];
    hoctl_table_init(&t, 10);
    hoctl_table_row(&t, "TIER", "NAME", "CAPACITY", "USED", "FREE",
                    "LARGEST FREE", "FRAG", "EXTENTS", "COMMITTED", "DETAIL");
    for (size_t i = 0; i < n; i++) {
        const Hyperoffload__TierStats *s = tiers[i];
        if (!s)
            continue;
        snprintf(b[5], sizeof(b[5]), "%.1f%%", s->fragmentation * 100.0);
        hoctl_table_row(&t, tier_str(s->tier), s->name,
                        hoctl_fmt_size(s->capacity, b[0]),
                        hoctl_fmt_size(s->used, b[1]),
                        hoctl_fmt_size(s->free, b[2]),
                        hoctl_fmt_size(s->largest_free, b[3]), b[5],
                        hoctl_fmt_u64(s->extents, b[4]),
                        hoctl_fmt_size(s->committed, b[6]), s->detail);
    }
    hoctl_table_print(&t, "");
}

/* One row per device; returns how many grants they hold together. */
static size_t devices_table(const Hyperoffload__StatusReply *s)
{
    hoctl_table t;
    hoctl_fmt b[5];
    size_t ngrants = 0;
    hoctl_table_init(&t, 6);
    hoctl_table_row(&t, "DEVICE", "NAME", "CAPACITY", "RESERVE", "GRANTED",
                    "FREE");
    for (size_t i = 0; i < s->n_devices; i++) {
        const Hyperoffload__DeviceStats *d = s->devices[i];
        if (!d)
            continue;
        uint64_t used = d->reserved + d->granted;
        uint64_t avail = d->capacity > used ? d->capacity - used : 0;
        snprintf(b[0], sizeof(b[0]), "%d", d->index);
        hoctl_table_row(&t, b[0], d->name, hoctl_fmt_size(d->capacity, b[1]),
                        hoctl_fmt_size(d->reserved, b[2]),
                        hoctl_fmt_size(d->granted, b[3]),
                        hoctl_fmt_size(avail, b[4]));
        ngrants += d->n_grants;
    }
    putchar('\n');
    hoctl_table_print(&t, "");
    return ngrants;
}

static void grants_table(const Hyperoffload__StatusReply *s)
{
    hoctl_table t;
    hoctl_fmt b[3];
    hoctl_table_init(&t, 4);
    hoctl_table_row(&t, "GRANT ON", "SESSION", "CLIENT", "BYTES");
    for (size_t i = 0; i < s->n_devices; i++) {
        const Hyperoffload__DeviceStats *d = s->devices[i];
        for (size_t k = 0; d && k < d->n_grants; k++) {
            const Hyperoffload__DeviceGrant *gr = d->grants[k];
            if (!gr)
                continue;
            snprintf(b[0], sizeof(b[0]), "%d %s", d->index,
                     d->name ? d->name : "");
            hoctl_table_row(&t, b[0], hoctl_fmt_u64(gr->session_id, b[1]),
                            gr->client_name, hoctl_fmt_size(gr->bytes, b[2]));
        }
    }
    putchar('\n');
    hoctl_table_print(&t, "");
}

static int status_text(const Hyperoffload__StatusReply *s)
{
    hoctl_fmt up;
    printf("hyperoffloadd %s  protocol %u  pid %u  up %s\n",
           s->server_version ? s->server_version : "?", s->protocol_version,
           s->pid, hoctl_fmt_age(s->uptime_s, up));
    printf("socket %s  config %s  state %s\n",
           s->socket_path && s->socket_path[0] ? s->socket_path : "-",
           s->config_path && s->config_path[0] ? s->config_path
                                               : "(embedded default)",
           s->state_dir && s->state_dir[0] ? s->state_dir : "-");
    printf("%u client%s, %u connection%s\n\n", s->clients,
           s->clients == 1 ? "" : "s", s->connections,
           s->connections == 1 ? "" : "s");
    tiers_table(s->tiers, s->n_tiers);
    if (s->n_devices == 0) {
        puts("\nno devices configured");
        return HOCTL_EXIT_OK;
    }
    if (devices_table(s) > 0)
        grants_table(s);
    return HOCTL_EXIT_OK;
}

static int print_status(const hoctl_globals *g,
                        const Hyperoffload__Envelope *reply)
{
    const Hyperoffload__StatusReply *s = reply->status_reply;
    if (!s)
        return HOCTL_EXIT_FAILED;
    return g->json ? status_json(s) : status_text(s);
}

int hoctl_cmd_status(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0)
        return hoctl_usage_error_help("status takes no arguments ('%s')",
                                      argv[0]);
    Hyperoffload__StatusRequest req = HYPEROFFLOAD__STATUS_REQUEST__INIT;
    HOC_ENVELOPE(env, STATUS_REQUEST, status_request, &req);
    return admin_query(g, &env, HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY,
                       print_status);
}

/* ----------------------------------------------------------- clients */

static json_t *runtime_json(const Hyperoffload__RuntimeInfo *rt)
{
    json_t *x = json_object();
    json_object_set_new(x, "steps", hoctl_json_u64(rt->steps));
    json_object_set_new(x, "current_op", rt->current_op == UINT32_MAX
                                             ? json_null()
                                             : hoctl_json_u64(rt->current_op));
    json_object_set_new(x, "ops_per_step", hoctl_json_u64(rt->ops_per_step));
    json_object_set_new(x, "h2d_bytes", hoctl_json_u64(rt->h2d_bytes));
    json_object_set_new(x, "d2h_bytes", hoctl_json_u64(rt->d2h_bytes));
    json_object_set_new(x, "flash_out_bytes",
                        hoctl_json_u64(rt->flash_out_bytes));
    json_object_set_new(x, "flash_in_bytes",
                        hoctl_json_u64(rt->flash_in_bytes));
    json_object_set_new(x, "stall_us", json_real(rt->stall_us));
    json_object_set_new(x, "exposed_us", json_real(rt->exposed_us));
    json_object_set_new(x, "host_copies_ddr_bytes",
                        hoctl_json_u64(rt->host_copies_ddr));
    json_object_set_new(x, "host_copies_flash_bytes",
                        hoctl_json_u64(rt->host_copies_flash));
    json_object_set_new(x, "peak_device_bytes",
                        hoctl_json_u64(rt->peak_device_bytes));
    return x;
}

static json_t *client_json(const Hyperoffload__ClientInfo *ci)
{
    const Hyperoffload__SessionUsage *u = ci->usage;
    json_t *j = json_object();
    json_object_set_new(j, "session_id", hoctl_json_u64(ci->session_id));
    json_object_set_new(j, "name", hoctl_json_str(ci->name));
    json_object_set_new(j, "pid", hoctl_json_u64(ci->pid));
    json_object_set_new(j, "uid", hoctl_json_u64(ci->uid));
    json_object_set_new(j, "gid", hoctl_json_u64(ci->gid));
    json_object_set_new(j, "job", hoctl_json_str(ci->job));
    json_object_set_new(j, "device", json_integer(ci->device));
    json_object_set_new(j, "hbm_budget", hoctl_json_u64(ci->hbm_budget));
    json_object_set_new(j, "ddr_bytes", hoctl_json_u64(u ? u->ddr_bytes : 0));
    json_object_set_new(j, "flash_bytes",
                        hoctl_json_u64(u ? u->flash_bytes : 0));
    json_object_set_new(j, "extents", hoctl_json_u64(u ? u->extents : 0));
    json_object_set_new(j, "hbm_granted",
                        hoctl_json_u64(u ? u->hbm_granted : 0));
    json_object_set_new(j, "connected_s", json_real(ci->connected_s));
    json_object_set_new(j, "requests", hoctl_json_u64(ci->requests));
    json_object_set_new(j, "runtime",
                        ci->runtime ? runtime_json(ci->runtime) : json_null());
    return j;
}

static int clients_json(const Hyperoffload__ClientsReply *r)
{
    json_t *o = hoctl_json_root();
    json_t *arr = json_array();
    for (size_t i = 0; i < r->n_clients; i++)
        if (r->clients[i])
            json_array_append_new(arr, client_json(r->clients[i]));
    json_object_set_new(o, "clients", arr);
    return hoctl_json_emit(o);
}

static void clients_table(const Hyperoffload__ClientsReply *r)
{
    hoctl_table t;
    hoctl_fmt b[10];
    hoctl_table_init(&t, 12);
    hoctl_table_row(&t, "ID", "NAME", "PID", "UID", "JOB", "DEVICE", "GRANT",
                    "DDR", "FLASH", "EXTENTS", "AGE", "REQUESTS");
    for (size_t i = 0; i < r->n_clients; i++) {
        const Hyperoffload__ClientInfo *ci = r->clients[i];
        if (!ci)
            continue;
        const Hyperoffload__SessionUsage *u = ci->usage;
        if (ci->device >= 0)
            snprintf(b[3], sizeof(b[3]), "%d", ci->device);
        else
            snprintf(b[3], sizeof(b[3]), "-");
        uint64_t grant = u && u->hbm_granted ? u->hbm_granted : ci->hbm_budget;
        hoctl_table_row(&t, hoctl_fmt_u64(ci->session_id, b[0]), ci->name,
                        hoctl_fmt_u64(ci->pid, b[1]),
                        hoctl_fmt_u64(ci->uid, b[2]),
                        ci->job && ci->job[0] ? ci->job : "-", b[3],
                        hoctl_fmt_size(grant, b[4]),
                        hoctl_fmt_size(u ? u->ddr_bytes : 0, b[5]),
                        hoctl_fmt_size(u ? u->flash_bytes : 0, b[6]),
                        hoctl_fmt_u64(u ? u->extents : 0, b[7]),
                        hoctl_fmt_age(ci->connected_s, b[8]),
                        hoctl_fmt_u64(ci->requests, b[9]));
    }
    hoctl_table_print(&t, "");
}

/* Replays: progress and traffic of the sessions that run one, from their
 * control regions. */
static void replays_table(const Hyperoffload__ClientsReply *r)
{
    size_t n_rt = 0;
    for (size_t i = 0; i < r->n_clients; i++)
        n_rt += r->clients[i] && r->clients[i]->runtime;
    if (n_rt == 0)
        return;
    hoctl_table t;
    hoctl_fmt c[11];
    hoctl_table_init(&t, 11);
    hoctl_table_row(&t, "ID", "STEPS", "OP", "H2D", "D2H", "TO FLASH",
                    "FROM FLASH", "STALL", "EXPOSED", "COPIES DDR",
                    "COPIES FLASH");
    for (size_t i = 0; i < r->n_clients; i++) {
        const Hyperoffload__ClientInfo *ci = r->clients[i];
        if (!ci || !ci->runtime)
            continue;
        const Hyperoffload__RuntimeInfo *rt = ci->runtime;
        if (rt->current_op == UINT32_MAX)
            snprintf(c[2], sizeof(c[2]), "idle/%u", rt->ops_per_step);
        else
            snprintf(c[2], sizeof(c[2]), "%u/%u", rt->current_op,
                     rt->ops_per_step);
        snprintf(c[7], sizeof(c[7]), "%.1f ms", rt->stall_us / 1e3);
        snprintf(c[8], sizeof(c[8]), "%.1f ms", rt->exposed_us / 1e3);
        hoctl_table_row(&t, hoctl_fmt_u64(ci->session_id, c[0]),
                        hoctl_fmt_u64(rt->steps, c[1]), c[2],
                        hoctl_fmt_size(rt->h2d_bytes, c[3]),
                        hoctl_fmt_size(rt->d2h_bytes, c[4]),
                        hoctl_fmt_size(rt->flash_out_bytes, c[5]),
                        hoctl_fmt_size(rt->flash_in_bytes, c[6]), c[7], c[8],
                        hoctl_fmt_size(rt->host_copies_ddr, c[9]),
                        hoctl_fmt_size(rt->host_copies_flash, c[10]));
    }
    puts("\nreplays:");
    hoctl_table_print(&t, "");
}

static int print_clients(const hoctl_globals *g,
                         const Hyperoffload__Envelope *reply)
{
    const Hyperoffload__ClientsReply *r = reply->clients_reply;
    if (!r)
        return HOCTL_EXIT_FAILED;
    if (g->json)
        return clients_json(r);
    if (r->n_clients == 0) {
        puts("no clients registered");
        return HOCTL_EXIT_OK;
    }
    clients_table(r);
    replays_table(r);
    return HOCTL_EXIT_OK;
}

int hoctl_cmd_clients(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0 && strcmp(argv[0], "list") != 0)
        return hoctl_usage_error_help("clients takes no arguments ('%s')",
                                      argv[0]);
    if (argc > 1)
        return hoctl_usage_error_help("clients list takes no arguments "
                                      "('%s')", argv[1]);
    Hyperoffload__ClientsRequest req = HYPEROFFLOAD__CLIENTS_REQUEST__INIT;
    HOC_ENVELOPE(env, CLIENTS_REQUEST, clients_request, &req);
    return admin_query(g, &env, HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REPLY,
                       print_clients);
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
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        const char *opts[] = {"--uid", "--job", "--tier"};
        int which = -1, rc;
        for (int k = 0; k < 3; k++) {
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
            if (a[0] == '-' && a[1] != '\0')
                return hoctl_usage_error_help("unknown option '%s'", a);
            if (!want_size || q->have_size)
                return hoctl_usage_error_help("unexpected argument '%s'", a);
            if (ho_size_parse(a, &q->size) < 0)
                return hoctl_usage_error_help("'%s' is not a size (e.g. 2G, "
                                              "512MiB, 4096)", a);
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

static json_t *quota_json(const Hyperoffload__QuotaEntry *e)
{
    json_t *o = json_object();
    bool uid = e->kind == HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID;
    json_object_set_new(o, "subject", hoctl_json_str(uid ? "uid" : "job"));
    if (uid)
        json_object_set_new(o, "uid", hoctl_json_u64(e->uid));
    else
        json_object_set_new(o, "job", hoctl_json_str(e->job));
    json_object_set_new(o, "tier", hoctl_json_str(tier_str(e->tier)));
    json_object_set_new(o, "limit", hoctl_json_u64(e->limit));
    json_object_set_new(o, "used", hoctl_json_u64(e->used));
    return o;
}

static void quota_rows(hoctl_table *t, Hyperoffload__QuotaEntry *const *es,
                       size_t n)
{
    hoctl_fmt b[2];
    char subject[HOCTL_TABLE_CELL];
    for (size_t i = 0; i < n; i++) {
        const Hyperoffload__QuotaEntry *e = es[i];
        if (!e)
            continue;
        if (e->kind == HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID)
            snprintf(subject, sizeof(subject), "uid %u", e->uid);
        else
            snprintf(subject, sizeof(subject), "job %.*s",
                     HOCTL_TABLE_CELL - 8, e->job ? e->job : "");
        hoctl_table_row(t, subject, tier_str(e->tier),
                        e->limit ? hoctl_fmt_size(e->limit, b[0])
                                 : "unlimited",
                        hoctl_fmt_size(e->used, b[1]));
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
    return request(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY, reply);
}

/* Send the request once per tier it acts on (get and clear without
 * --tier act on every tier), collecting the entries of the replies as
 * JSON (jarr, when not NULL) and as table rows.  0 or an exit code. */
static int quota_fetch(ho_client *c, const quota_args *q, json_t *jarr,
                       hoctl_table *t, size_t *ret_rows)
{
    static const Hyperoffload__Tier all_tiers[] = {
        HYPEROFFLOAD__TIER__TIER_DDR, HYPEROFFLOAD__TIER__TIER_FLASH,
        HYPEROFFLOAD__TIER__TIER_HBM};
    size_t ntiers = 1, rows = 0;
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
        if (rc == 0 && reply->quota_reply) {
            const Hyperoffload__QuotaReply *r = reply->quota_reply;
            for (size_t i = 0; i < r->n_entries; i++)
                if (r->entries[i] && jarr)
                    json_array_append_new(jarr, quota_json(r->entries[i]));
            quota_rows(t, r->entries, r->n_entries);
            rows += r->n_entries;
        }
        ho_frame_envelope_free(reply);
    }
    *ret_rows = rows;
    return rc;
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
    ho_client *c = NULL;
    rc = open_client(g, &c);
    if (rc)
        return rc;

    json_t *jarr = g->json ? json_array() : NULL;
    hoctl_table t;
    size_t rows = 0;
    hoctl_table_init(&t, 4);
    hoctl_table_row(&t, "SUBJECT", "TIER", "LIMIT", "USED");
    rc = quota_fetch(c, &q, jarr, &t, &rows);
    ho_close(c);
    if (rc) {
        json_decref(jarr);
        hoctl_table_done(&t);
        return rc;
    }
    if (g->json) {
        hoctl_table_done(&t);
        json_t *o = hoctl_json_root();
        json_object_set_new(o, "quotas", jarr);
        return hoctl_json_emit(o);
    }
    if (q.op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET ||
        q.op == HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR) {
        hoctl_table_done(&t);
        quota_print_change(&q);
        return HOCTL_EXIT_OK;
    }
    if (rows == 0) {
        hoctl_table_done(&t);
        puts("no quotas set");
        return HOCTL_EXIT_OK;
    }
    hoctl_table_print(&t, "");
    return HOCTL_EXIT_OK;
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
            json_object_set_new(o, "daemon", json_null());
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
        puts("usage: hoctl status [--json]\n"
             "Daemon version, uptime, every tier (capacity, used, free,\n"
             "largest free block, fragmentation, extents, detail), every\n"
             "device (capacity, reserve, granted) and each grant.\n"
             "Needs an admin peer (root or group hyperoffload).");
    } else if (strcmp(noun, "clients") == 0) {
        puts("usage: hoctl clients [--json]\n"
             "Every registered session: id, name, pid, uid, job, device,\n"
             "HBM grant, DDR and flash use, extents, age, requests.\n"
             "Needs an admin peer.");
    } else if (strcmp(noun, "quota") == 0) {
        puts("usage: hoctl quota list\n"
             "       hoctl quota get   (--uid U | --job J) [--tier T]\n"
             "       hoctl quota set   (--uid U | --job J) --tier T SIZE\n"
             "       hoctl quota clear (--uid U | --job J) [--tier T]\n"
             "U is a uid or user name; T is ddr, flash or hbm; SIZE is IEC\n"
             "(2G, 1.5GiB, 512M, 4096).  Without --tier, get and clear act\n"
             "on every tier.  A limit of 0 shows as unlimited.\n"
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
