/*
 * client/hoctl_admin.c - hoctl commands that talk to the daemon: status,
 * clients, quota, version.  They use the library's raw request interface
 * (client_internal.h) and print either aligned human tables with IEC sizes
 * or one JSON object ("schema": 1, raw byte counts) built with jansson.
 */
#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/admin_call.h"
#include "proto/frame.h"
#include "hoctl/hoctl.h"
#include "hoctl/hoctl_admin.h"


#define TABLE_MAX_COLS 14
#define CELL_MAX 192

/* ----------------------------------------------------------- errors */

int hoctl_exit_for(int code)
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

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("hoctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try hoctl --help)\n", stderr);
    return HOCTL_EXIT_USAGE;
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
    fprintf(stderr, "hoctl: cannot reach hyperoffloadd at %s: %s\n",
            path[0] ? path : "(socket path too long)", ho_strerror(rc));
    if (rc == -EACCES || rc == -EPERM)
        return HOCTL_EXIT_PERMISSION;
    return HOCTL_EXIT_UNREACHABLE;
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
    return hoctl_exit_for(rc);
}

/* ----------------------------------------------------------- output */

/* An aligned text table: first row is the header. */
typedef struct table {
    unsigned ncols;
    size_t nrows, cap;
    char (*cells)[TABLE_MAX_COLS][CELL_MAX];
    bool oom;
} table;

static void table_init(table *t, unsigned ncols)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols;
}

static void table_row(table *t, ...) /* ncols const char * */
{
    if (t->oom)
        return;
    if (t->nrows == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 16;
        void *p = realloc(t->cells, ncap * sizeof(*t->cells));
        if (!p) {
            t->oom = true;
            return;
        }
        t->cells = p;
        t->cap = ncap;
    }
    va_list ap;
    va_start(ap, t);
    for (unsigned i = 0; i < t->ncols; i++) {
        const char *s = va_arg(ap, const char *);
        snprintf(t->cells[t->nrows][i], CELL_MAX, "%s", s ? s : "");
    }
    va_end(ap);
    t->nrows++;
}

static void table_free(table *t)
{
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

static void table_print(table *t, const char *indent)
{
    size_t width[TABLE_MAX_COLS] = {0};
    for (size_t r = 0; r < t->nrows; r++)
        for (unsigned i = 0; i < t->ncols; i++) {
            size_t n = strlen(t->cells[r][i]);
            if (n > width[i])
                width[i] = n;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        fputs(indent, stdout);
        for (unsigned i = 0; i < t->ncols; i++) {
            if (i + 1 == t->ncols)
                printf("%s", t->cells[r][i]);
            else
                printf("%-*s  ", (int)width[i], t->cells[r][i]);
        }
        putchar('\n');
    }
    table_free(t);
}

static const char *iec(uint64_t v, char *buf)
{
    return ho_size_format(v, buf, 32);
}

static const char *u64s(uint64_t v, char *buf)
{
    snprintf(buf, 32, "%llu", (unsigned long long)v);
    return buf;
}

static const char *duration(double s, char *buf)
{
    unsigned long long t = s > 0 ? (unsigned long long)s : 0;
    if (s < 60)
        snprintf(buf, 32, "%.1fs", s > 0 ? s : 0.0);
    else if (t < 3600)
        snprintf(buf, 32, "%llum %02llus", t / 60, t % 60);
    else if (t < 86400)
        snprintf(buf, 32, "%lluh %02llum", t / 3600, t / 60 % 60);
    else
        snprintf(buf, 32, "%llud %02lluh", t / 86400, t / 3600 % 24);
    return buf;
}

static const char *tier_str(Hyperoffload__Tier t)
{
    return ho_tier_name((ho_tier)t);
}

static json_t *jint(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *jstr(const char *s)
{
    return json_string(s ? s : "");
}

static json_t *json_root(void)
{
    json_t *o = json_object();
    if (o)
        json_object_set_new(o, "schema", json_integer(HOCTL_JSON_SCHEMA));
    return o;
}

static int json_emit(json_t *o)
{
    if (!o) {
        fputs("hoctl: out of memory\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    int rc = json_dumpf(o, stdout, JSON_INDENT(2)) == 0 ? 0 : -1;
    json_decref(o);
    putchar('\n');
    if (rc < 0) {
        fputs("hoctl: cannot write JSON\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    return HOCTL_EXIT_OK;
}

static json_t *tier_json(const Hyperoffload__TierStats *t)
{
    json_t *o = json_object();
    json_object_set_new(o, "tier", jstr(tier_str(t->tier)));
    json_object_set_new(o, "name", jstr(t->name));
    json_object_set_new(o, "capacity", jint(t->capacity));
    json_object_set_new(o, "used", jint(t->used));
    json_object_set_new(o, "free", jint(t->free));
    json_object_set_new(o, "largest_free", jint(t->largest_free));
    json_object_set_new(o, "fragmentation", json_real(t->fragmentation));
    json_object_set_new(o, "extents", jint(t->extents));
    json_object_set_new(o, "committed", jint(t->committed));
    json_object_set_new(o, "detail", jstr(t->detail));
    return o;
}

static void tiers_table(Hyperoffload__TierStats *const *tiers, size_t n)
{
    table t;
    char b[8][32];
    table_init(&t, 10);
    table_row(&t, "TIER", "NAME", "CAPACITY", "USED", "FREE", "LARGEST FREE",
              "FRAG", "EXTENTS", "COMMITTED", "DETAIL");
    for (size_t i = 0; i < n; i++) {
        const Hyperoffload__TierStats *s = tiers[i];
        if (!s)
            continue;
        snprintf(b[5], 32, "%.1f%%", s->fragmentation * 100.0);
        table_row(&t, tier_str(s->tier), s->name, iec(s->capacity, b[0]),
                  iec(s->used, b[1]), iec(s->free, b[2]),
                  iec(s->largest_free, b[3]), b[5], u64s(s->extents, b[4]),
                  iec(s->committed, b[6]), s->detail);
    }
    table_print(&t, "");
}

/* ----------------------------------------------------------- status */

static int print_status(const hoctl_globals *g, const Hyperoffload__StatusReply *s)
{
    if (g->json) {
        json_t *o = json_root();
        json_object_set_new(o, "server_version", jstr(s->server_version));
        json_object_set_new(o, "protocol_version", jint(s->protocol_version));
        json_object_set_new(o, "pid", jint(s->pid));
        json_object_set_new(o, "uptime_s", json_real(s->uptime_s));
        json_object_set_new(o, "socket", jstr(s->socket_path));
        json_object_set_new(o, "config", jstr(s->config_path));
        json_object_set_new(o, "state_dir", jstr(s->state_dir));
        json_object_set_new(o, "clients", jint(s->clients));
        json_object_set_new(o, "connections", jint(s->connections));
        json_t *tiers = json_array();
        for (size_t i = 0; i < s->n_tiers; i++)
            if (s->tiers[i])
                json_array_append_new(tiers, tier_json(s->tiers[i]));
        json_object_set_new(o, "tiers", tiers);
        json_t *devs = json_array();
        for (size_t i = 0; i < s->n_devices; i++) {
            const Hyperoffload__DeviceStats *d = s->devices[i];
            if (!d)
                continue;
            json_t *jd = json_object();
            json_object_set_new(jd, "index", json_integer(d->index));
            json_object_set_new(jd, "name", jstr(d->name));
            json_object_set_new(jd, "capacity", jint(d->capacity));
            json_object_set_new(jd, "reserved", jint(d->reserved));
            json_object_set_new(jd, "granted", jint(d->granted));
            json_t *grants = json_array();
            for (size_t k = 0; k < d->n_grants; k++) {
                const Hyperoffload__DeviceGrant *gr = d->grants[k];
                if (!gr)
                    continue;
                json_t *jg = json_object();
                json_object_set_new(jg, "session_id", jint(gr->session_id));
                json_object_set_new(jg, "client_name", jstr(gr->client_name));
                json_object_set_new(jg, "bytes", jint(gr->bytes));
                json_array_append_new(grants, jg);
            }
            json_object_set_new(jd, "grants", grants);
            json_array_append_new(devs, jd);
        }
        json_object_set_new(o, "devices", devs);
        return json_emit(o);
    }

    char up[32], b[8][32];
    printf("hyperoffloadd %s  protocol %u  pid %u  up %s\n",
           s->server_version ? s->server_version : "?", s->protocol_version,
           s->pid, duration(s->uptime_s, up));
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
    table t;
    table_init(&t, 6);
    table_row(&t, "DEVICE", "NAME", "CAPACITY", "RESERVE", "GRANTED",
              "FREE");
    size_t ngrants = 0;
    for (size_t i = 0; i < s->n_devices; i++) {
        const Hyperoffload__DeviceStats *d = s->devices[i];
        if (!d)
            continue;
        uint64_t used = d->reserved + d->granted;
        uint64_t avail = d->capacity > used ? d->capacity - used : 0;
        snprintf(b[0], 32, "%d", d->index);
        table_row(&t, b[0], d->name, iec(d->capacity, b[1]),
                  iec(d->reserved, b[2]), iec(d->granted, b[3]),
                  iec(avail, b[4]));
        ngrants += d->n_grants;
    }
    putchar('\n');
    table_print(&t, "");
    if (ngrants == 0)
        return HOCTL_EXIT_OK;
    table_init(&t, 4);
    table_row(&t, "GRANT ON", "SESSION", "CLIENT", "BYTES");
    for (size_t i = 0; i < s->n_devices; i++) {
        const Hyperoffload__DeviceStats *d = s->devices[i];
        for (size_t k = 0; d && k < d->n_grants; k++) {
            const Hyperoffload__DeviceGrant *gr = d->grants[k];
            if (!gr)
                continue;
            snprintf(b[0], 32, "%d %s", d->index, d->name ? d->name : "");
            table_row(&t, b[0], u64s(gr->session_id, b[1]), gr->client_name,
                      iec(gr->bytes, b[2]));
        }
    }
    putchar('\n');
    table_print(&t, "");
    return HOCTL_EXIT_OK;
}

int hoctl_cmd_status(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0)
        return usage_error("status takes no arguments ('%s')", argv[0]);
    ho_client *c = NULL;
    int rc = open_client(g, &c);
    if (rc)
        return rc;
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__StatusRequest req = HYPEROFFLOAD__STATUS_REQUEST__INIT;
    Hyperoffload__Envelope *reply = NULL;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &req;
    rc = request(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_STATUS_REPLY, &reply);
    if (rc == 0)
        rc = reply->status_reply ? print_status(g, reply->status_reply)
                                 : HOCTL_EXIT_FAILED;
    ho_frame_envelope_free(reply);
    ho_close(c);
    return rc;
}

/* ----------------------------------------------------------- clients */

static int print_clients(const hoctl_globals *g, const Hyperoffload__ClientsReply *r)
{
    if (g->json) {
        json_t *o = json_root();
        json_t *arr = json_array();
        for (size_t i = 0; i < r->n_clients; i++) {
            const Hyperoffload__ClientInfo *ci = r->clients[i];
            if (!ci)
                continue;
            const Hyperoffload__SessionUsage *u = ci->usage;
            json_t *j = json_object();
            json_object_set_new(j, "session_id", jint(ci->session_id));
            json_object_set_new(j, "name", jstr(ci->name));
            json_object_set_new(j, "pid", jint(ci->pid));
            json_object_set_new(j, "uid", jint(ci->uid));
            json_object_set_new(j, "gid", jint(ci->gid));
            json_object_set_new(j, "job", jstr(ci->job));
            json_object_set_new(j, "device", json_integer(ci->device));
            json_object_set_new(j, "hbm_budget", jint(ci->hbm_budget));
            json_object_set_new(j, "ddr_bytes", jint(u ? u->ddr_bytes : 0));
            json_object_set_new(j, "flash_bytes",
                                jint(u ? u->flash_bytes : 0));
            json_object_set_new(j, "extents", jint(u ? u->extents : 0));
            json_object_set_new(j, "hbm_granted",
                                jint(u ? u->hbm_granted : 0));
            json_object_set_new(j, "connected_s", json_real(ci->connected_s));
            json_object_set_new(j, "requests", jint(ci->requests));
            const Hyperoffload__RuntimeInfo *rt = ci->runtime;
            if (rt) {
                json_t *x = json_object();
                json_object_set_new(x, "steps", jint(rt->steps));
                json_object_set_new(x, "current_op",
                                    rt->current_op == UINT32_MAX
                                        ? json_null()
                                        : jint(rt->current_op));
                json_object_set_new(x, "ops_per_step", jint(rt->ops_per_step));
                json_object_set_new(x, "h2d_bytes", jint(rt->h2d_bytes));
                json_object_set_new(x, "d2h_bytes", jint(rt->d2h_bytes));
                json_object_set_new(x, "flash_out_bytes",
                                    jint(rt->flash_out_bytes));
                json_object_set_new(x, "flash_in_bytes",
                                    jint(rt->flash_in_bytes));
                json_object_set_new(x, "stall_us", json_real(rt->stall_us));
                json_object_set_new(x, "exposed_us",
                                    json_real(rt->exposed_us));
                json_object_set_new(x, "host_copies_ddr_bytes",
                                    jint(rt->host_copies_ddr));
                json_object_set_new(x, "host_copies_flash_bytes",
                                    jint(rt->host_copies_flash));
                json_object_set_new(x, "peak_device_bytes",
                                    jint(rt->peak_device_bytes));
                json_object_set_new(j, "runtime", x);
            } else {
                json_object_set_new(j, "runtime", json_null());
            }
            json_array_append_new(arr, j);
        }
        json_object_set_new(o, "clients", arr);
        return json_emit(o);
    }
    if (r->n_clients == 0) {
        puts("no clients registered");
        return HOCTL_EXIT_OK;
    }
    table t;
    char b[12][32];
    table_init(&t, 12);
    table_row(&t, "ID", "NAME", "PID", "UID", "JOB", "DEVICE", "GRANT", "DDR",
              "FLASH", "EXTENTS", "AGE", "REQUESTS");
    for (size_t i = 0; i < r->n_clients; i++) {
        const Hyperoffload__ClientInfo *ci = r->clients[i];
        if (!ci)
            continue;
        const Hyperoffload__SessionUsage *u = ci->usage;
        if (ci->device >= 0)
            snprintf(b[3], 32, "%d", ci->device);
        else
            snprintf(b[3], 32, "-");
        uint64_t grant = u && u->hbm_granted ? u->hbm_granted : ci->hbm_budget;
        table_row(&t, u64s(ci->session_id, b[0]), ci->name,
                  u64s(ci->pid, b[1]), u64s(ci->uid, b[2]),
                  ci->job && ci->job[0] ? ci->job : "-", b[3],
                  iec(grant, b[4]), iec(u ? u->ddr_bytes : 0, b[5]),
                  iec(u ? u->flash_bytes : 0, b[6]),
                  u64s(u ? u->extents : 0, b[7]),
                  duration(ci->connected_s, b[8]), u64s(ci->requests, b[9]));
    }
    table_print(&t, "");

    /* Replays: progress and traffic of the sessions that run one, from
     * their control regions. */
    size_t n_rt = 0;
    for (size_t i = 0; i < r->n_clients; i++)
        n_rt += r->clients[i] && r->clients[i]->runtime;
    if (n_rt == 0)
        return HOCTL_EXIT_OK;
    char c[11][32];
    table_init(&t, 11);
    table_row(&t, "ID", "STEPS", "OP", "H2D", "D2H", "TO FLASH",
              "FROM FLASH", "STALL", "EXPOSED", "COPIES DDR", "COPIES FLASH");
    for (size_t i = 0; i < r->n_clients; i++) {
        const Hyperoffload__ClientInfo *ci = r->clients[i];
        if (!ci || !ci->runtime)
            continue;
        const Hyperoffload__RuntimeInfo *rt = ci->runtime;
        if (rt->current_op == UINT32_MAX)
            snprintf(c[2], 32, "idle/%u", rt->ops_per_step);
        else
            snprintf(c[2], 32, "%u/%u", rt->current_op, rt->ops_per_step);
        snprintf(c[7], 32, "%.1f ms", rt->stall_us / 1e3);
        snprintf(c[8], 32, "%.1f ms", rt->exposed_us / 1e3);
        table_row(&t, u64s(ci->session_id, c[0]), u64s(rt->steps, c[1]),
                  c[2], iec(rt->h2d_bytes, c[3]), iec(rt->d2h_bytes, c[4]),
                  iec(rt->flash_out_bytes, c[5]), iec(rt->flash_in_bytes, c[6]),
                  c[7], c[8], iec(rt->host_copies_ddr, c[9]),
                  iec(rt->host_copies_flash, c[10]));
    }
    puts("\nreplays:");
    table_print(&t, "");
    return HOCTL_EXIT_OK;
}

int hoctl_cmd_clients(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0 && strcmp(argv[0], "list") != 0)
        return usage_error("clients takes no arguments ('%s')", argv[0]);
    if (argc > 1)
        return usage_error("clients list takes no arguments ('%s')",
                           argv[1]);
    ho_client *c = NULL;
    int rc = open_client(g, &c);
    if (rc)
        return rc;
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__ClientsRequest req = HYPEROFFLOAD__CLIENTS_REQUEST__INIT;
    Hyperoffload__Envelope *reply = NULL;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REQUEST;
    env.clients_request = &req;
    rc = request(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_CLIENTS_REPLY, &reply);
    if (rc == 0)
        rc = reply->clients_reply ? print_clients(g, reply->clients_reply)
                                  : HOCTL_EXIT_FAILED;
    ho_frame_envelope_free(reply);
    ho_close(c);
    return rc;
}

/* ----------------------------------------------------------- quota */

typedef struct quota_args {
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

/* Parse `--uid U`, `--job J`, `--tier T` (also --opt=value) and, when
 * want_size, one positional SIZE.  Returns 0 or an exit code. */
static int parse_quota_args(int argc, char **argv, bool want_size,
                            quota_args *q)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        const char *opts[] = {"--uid", "--job", "--tier"};
        int which = -1;
        for (int k = 0; k < 3; k++) {
            size_t n = strlen(opts[k]);
            if (strncmp(a, opts[k], n) == 0 && (a[n] == '\0' || a[n] == '=')) {
                which = k;
                if (a[n] == '=')
                    val = a + n + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                else
                    return usage_error("%s needs a value", opts[k]);
            }
        }
        switch (which) {
        case 0:
        case 1:
            if (q->have_subject)
                return usage_error("give one of --uid or --job, once");
            q->have_subject = true;
            if (which == 0) {
                q->kind = HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID;
                if (parse_uid(val, &q->uid) < 0) {
                    fprintf(stderr, "hoctl: --uid '%s': no such user\n", val);
                    return HOCTL_EXIT_NOT_FOUND;
                }
            } else {
                q->kind = HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_JOB;
                if (val[0] == '\0' || strlen(val) > HO_CLIENT_MAX_NAME)
                    return usage_error("--job needs a name of 1..%d bytes",
                                       HO_CLIENT_MAX_NAME);
                q->job = val;
            }
            break;
        case 2:
            if (parse_tier(val, &q->tier) < 0)
                return usage_error("--tier '%s': expected ddr, flash or hbm",
                                   val);
            q->have_tier = true;
            break;
        default:
            if (a[0] == '-' && a[1] != '\0')
                return usage_error("unknown option '%s'", a);
            if (!want_size || q->have_size)
                return usage_error("unexpected argument '%s'", a);
            if (ho_size_parse(a, &q->size) < 0)
                return usage_error("'%s' is not a size (e.g. 2G, 512MiB, "
                                   "4096)", a);
            q->have_size = true;
        }
    }
    return 0;
}

static json_t *quota_json(const Hyperoffload__QuotaEntry *e)
{
    json_t *o = json_object();
    bool uid = e->kind == HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID;
    json_object_set_new(o, "subject", jstr(uid ? "uid" : "job"));
    if (uid)
        json_object_set_new(o, "uid", jint(e->uid));
    else
        json_object_set_new(o, "job", jstr(e->job));
    json_object_set_new(o, "tier", jstr(tier_str(e->tier)));
    json_object_set_new(o, "limit", jint(e->limit));
    json_object_set_new(o, "used", jint(e->used));
    return o;
}

static void quota_rows(table *t, Hyperoffload__QuotaEntry *const *es, size_t n)
{
    char b[4][32], subject[CELL_MAX];
    for (size_t i = 0; i < n; i++) {
        const Hyperoffload__QuotaEntry *e = es[i];
        if (!e)
            continue;
        if (e->kind == HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID)
            snprintf(subject, sizeof(subject), "uid %u", e->uid);
        else
            snprintf(subject, sizeof(subject), "job %.*s", CELL_MAX - 8,
                     e->job ? e->job : "");
        table_row(t, subject, tier_str(e->tier),
                  e->limit ? iec(e->limit, b[1]) : "unlimited",
                  iec(e->used, b[2]));
    }
}

static int quota_call(ho_client *c, Hyperoffload__QuotaOp op,
                      const quota_args *q, Hyperoffload__Tier tier,
                      Hyperoffload__Envelope **reply)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__QuotaRequest req = HYPEROFFLOAD__QUOTA_REQUEST__INIT;
    Hyperoffload__QuotaEntry e = HYPEROFFLOAD__QUOTA_ENTRY__INIT;
    if (q) {
        e.kind = q->kind;
        e.uid = q->uid;
        e.job = (char *)(q->job ? q->job : "");
        e.limit = q->size;
    }
    e.tier = tier;
    req.op = op;
    req.entry = &e;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REQUEST;
    env.quota_request = &req;
    return request(c, &env, HYPEROFFLOAD__ENVELOPE__BODY_QUOTA_REPLY, reply);
}

int hoctl_cmd_quota(const hoctl_globals *g, int argc, char **argv)
{
    static const Hyperoffload__Tier all_tiers[] = {
        HYPEROFFLOAD__TIER__TIER_DDR, HYPEROFFLOAD__TIER__TIER_FLASH,
        HYPEROFFLOAD__TIER__TIER_HBM};
    quota_args q = {0};
    Hyperoffload__QuotaOp op;
    int rc;

    if (argc < 1)
        return usage_error("quota needs a verb: list, get, set or clear");
    const char *verb = argv[0];
    if (strcmp(verb, "list") == 0)
        op = HYPEROFFLOAD__QUOTA_OP__QUOTA_LIST;
    else if (strcmp(verb, "get") == 0)
        op = HYPEROFFLOAD__QUOTA_OP__QUOTA_GET;
    else if (strcmp(verb, "set") == 0)
        op = HYPEROFFLOAD__QUOTA_OP__QUOTA_SET;
    else if (strcmp(verb, "clear") == 0)
        op = HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR;
    else
        return usage_error("unknown quota verb '%s'", verb);

    rc = parse_quota_args(argc - 1, argv + 1,
                          op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET, &q);
    if (rc)
        return rc;
    if (op == HYPEROFFLOAD__QUOTA_OP__QUOTA_LIST) {
        if (q.have_subject || q.have_tier)
            return usage_error("quota list takes no options");
    } else if (!q.have_subject) {
        return usage_error("quota %s needs --uid or --job", verb);
    }
    if (op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET && (!q.have_tier || !q.have_size))
        return usage_error("quota set needs --tier and a SIZE");

    ho_client *c = NULL;
    rc = open_client(g, &c);
    if (rc)
        return rc;

    /* get/clear without --tier act on every tier. */
    size_t ntiers = 1;
    const Hyperoffload__Tier *tiers = &q.tier;
    if (!q.have_tier && (op == HYPEROFFLOAD__QUOTA_OP__QUOTA_GET ||
                         op == HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR)) {
        tiers = all_tiers;
        ntiers = 3;
    }

    json_t *jarr = g->json ? json_array() : NULL;
    table t;
    table_init(&t, 4);
    table_row(&t, "SUBJECT", "TIER", "LIMIT", "USED");
    size_t rows = 0;
    for (size_t k = 0; k < ntiers && rc == 0; k++) {
        Hyperoffload__Envelope *reply = NULL;
        rc = quota_call(c, op, op == HYPEROFFLOAD__QUOTA_OP__QUOTA_LIST ? NULL : &q,
                        tiers[k], &reply);
        if (rc == 0 && reply->quota_reply) {
            const Hyperoffload__QuotaReply *r = reply->quota_reply;
            for (size_t i = 0; i < r->n_entries; i++)
                if (r->entries[i] && jarr)
                    json_array_append_new(jarr, quota_json(r->entries[i]));
            quota_rows(&t, r->entries, r->n_entries);
            rows += r->n_entries;
        }
        ho_frame_envelope_free(reply);
    }
    ho_close(c);
    if (rc) {
        json_decref(jarr);
        table_free(&t);
        return rc;
    }
    if (g->json) {
        table_free(&t);
        json_t *o = json_root();
        json_object_set_new(o, "quotas", jarr);
        return json_emit(o);
    }
    if (op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET ||
        op == HYPEROFFLOAD__QUOTA_OP__QUOTA_CLEAR) {
        char b[32];
        table_free(&t);
        if (q.kind == HYPEROFFLOAD__QUOTA_SUBJECT_KIND__QUOTA_SUBJECT_UID)
            printf("quota %s: uid %u", verb, q.uid);
        else
            printf("quota %s: job %s", verb, q.job);
        if (q.have_tier)
            printf(" %s", tier_str(q.tier));
        if (op == HYPEROFFLOAD__QUOTA_OP__QUOTA_SET)
            printf(" limit %s", iec(q.size, b));
        putchar('\n');
        return HOCTL_EXIT_OK;
    }
    if (rows == 0) {
        table_free(&t);
        puts("no quotas set");
        return HOCTL_EXIT_OK;
    }
    table_print(&t, "");
    return HOCTL_EXIT_OK;
}

/* ----------------------------------------------------------- version */

int hoctl_cmd_version(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0)
        return usage_error("version takes no arguments ('%s')", argv[0]);
    ho_client *c = NULL;
    char path[HO_SOCKET_PATH_MAX + 1];
    int rc = ho_socket_path(g->socket, path, sizeof(path));
    if (rc == 0)
        rc = ho_connect(path, "hoctl", &c);
    if (g->json) {
        json_t *o = json_root();
        json_object_set_new(o, "hoctl", jstr(HO_VERSION_STRING));
        json_object_set_new(o, "library", jstr(ho_version()));
        json_object_set_new(o, "protocol_min", jint(HO_PROTO_MIN_VERSION));
        json_object_set_new(o, "protocol_max", jint(HO_PROTO_VERSION));
        if (rc == 0) {
            json_t *d = json_object();
            json_object_set_new(d, "server_version",
                                jstr(ho_server_version(c)));
            json_object_set_new(d, "protocol_version",
                                jint(ho_protocol_version(c)));
            json_object_set_new(d, "socket", jstr(ho_socket(c)));
            json_object_set_new(o, "daemon", d);
        } else {
            json_object_set_new(o, "daemon", json_null());
        }
        json_emit(o);
    } else {
        printf("hoctl %s (libhyperoffload %s, protocol %u..%u)\n", HO_VERSION_STRING,
               ho_version(), HO_PROTO_MIN_VERSION, HO_PROTO_VERSION);
        if (rc == 0)
            printf("hyperoffloadd %s (protocol %u) at %s\n",
                   ho_server_version(c), ho_protocol_version(c),
                   ho_socket(c));
    }
    ho_close(c);
    if (rc == 0)
        return HOCTL_EXIT_OK;
    fprintf(stderr, "hoctl: cannot reach hyperoffloadd at %s: %s\n", path,
            ho_strerror(rc));
    return rc == -EACCES || rc == -EPERM ? HOCTL_EXIT_PERMISSION
                                         : HOCTL_EXIT_UNREACHABLE;
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
