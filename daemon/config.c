/* daemon/config.c - see config.h. */
#include "daemon/config.h"

#include "hyperoffload/paths.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"
#include "proto/proto_limits.h"
#include "daemon/log.h"

typedef enum cfg_type {
    T_SIZE,      /* uint64_t, IEC suffixes */
    T_U32,       /* uint32_t */
    T_I32,       /* int32_t */
    T_BOOL,      /* bool */
    T_STR,       /* char *, length min..max */
    T_MODE,      /* uint32_t, octal permission bits */
    T_LEVEL,     /* int, log level name */
    T_PATHLIST,  /* char *[SRV_MAX_FLASH] + uint32_t count */
    T_SIZELIST,  /* uint64_t[SRV_MAX_DEVICES] + uint32_t count */
    T_NAMELIST,  /* char [SRV_MAX_DEVICES][SRV_DEVICE_NAME] + count */
    T_GBPS,      /* double in (0, max]: GB/s */
    T_REAL,      /* double in [min, max] */
} cfg_type;

/* Row flags. */
#define RELOAD 1u     /* applied by SIGHUP without a restart */
#define RESTART 0u
#define HIDDEN 2u     /* a debug knob: settable (file, flag), but not in
                         --help, the example config or --print-config */

typedef struct cfg_row {
    const char *section;
    const char *key;
    const char *flag;      /* without the leading "--" */
    cfg_type type;
    size_t off;            /* field in srv_config */
    size_t count_off;      /* list types: uint32_t count field */
    int64_t min, max;      /* value bounds (strings, lists: lengths/items) */
    const char *def;       /* default, as config text */
    unsigned flags;        /* RELOAD, HIDDEN */
    const char *help;
} cfg_row;

#define F(field) offsetof(srv_config, field)
#define KiB (1ll << 10)
#define MiB (1ll << 20)
#define GiB (1ll << 30)
#define TiB (1ll << 40)
#define PiB (1ll << 50)

/* One row per setting type: (section, key, flag, field, [bounds,]
 * default, RELOAD/RESTART [| HIDDEN], help). */
#define ROW(sec, k, fl, t, field, cnt, lo, hi, dflt, fls, hlp)             \
    {                                                                     \
        .section = sec, .key = k, .flag = fl, .type = t, .off = F(field), \
        .count_off = cnt, .min = lo, .max = hi, .def = dflt,              \
        .flags = fls, .help = hlp,                                        \
    }
#define SIZE_ROW(s, k, fl, field, lo, hi, dflt, fls, hlp)                 \
    ROW(s, k, fl, T_SIZE, field, 0, lo, hi, dflt, fls, hlp)
#define U32_ROW(s, k, fl, field, lo, hi, dflt, fls, hlp)                  \
    ROW(s, k, fl, T_U32, field, 0, lo, hi, dflt, fls, hlp)
#define I32_ROW(s, k, fl, field, lo, hi, dflt, fls, hlp)                  \
    ROW(s, k, fl, T_I32, field, 0, lo, hi, dflt, fls, hlp)
#define BOOL_ROW(s, k, fl, field, dflt, fls, hlp)                         \
    ROW(s, k, fl, T_BOOL, field, 0, 0, 1, dflt, fls, hlp)
/* lo..hi: length in bytes */
#define STR_ROW(s, k, fl, field, lo, hi, dflt, fls, hlp)                  \
    ROW(s, k, fl, T_STR, field, 0, lo, hi, dflt, fls, hlp)
#define MODE_ROW(s, k, fl, field, dflt, fls, hlp)                         \
    ROW(s, k, fl, T_MODE, field, 0, 0, 0777, dflt, fls, hlp)
#define LEVEL_ROW(s, k, fl, field, dflt, fls, hlp)                        \
    ROW(s, k, fl, T_LEVEL, field, 0, 0, 0, dflt, fls, hlp)
/* lo..hi: number of paths */
#define PATHLIST_ROW(s, k, fl, field, count, lo, hi, dflt, fls, hlp)      \
    ROW(s, k, fl, T_PATHLIST, field, F(count), lo, hi, dflt, fls, hlp)
/* lo..hi: each size; at most SRV_MAX_DEVICES of them */
#define SIZELIST_ROW(s, k, fl, field, count, lo, hi, dflt, fls, hlp)      \
    ROW(s, k, fl, T_SIZELIST, field, F(count), lo, hi, dflt, fls, hlp)
#define GBPS_ROW(s, k, fl, field, dflt, fls, hlp)                         \
    ROW(s, k, fl, T_GBPS, field, 0, 0, (int64_t)SRV_MAX_GBPS, dflt, fls, hlp)
#define REAL_ROW(s, k, fl, field, lo, hi, dflt, fls, hlp)                 \
    ROW(s, k, fl, T_REAL, field, 0, lo, hi, dflt, fls, hlp)
/* lo..hi: number of names (each below SRV_DEVICE_NAME bytes) */
#define NAMELIST_ROW(s, k, fl, field, count, lo, hi, dflt, fls, hlp)      \
    ROW(s, k, fl, T_NAMELIST, field, F(count), lo, hi, dflt, fls, hlp)

_Static_assert(HO_SOCKET_PATH_MAX + 1 ==
                   sizeof(((struct sockaddr_un *)0)->sun_path),
               "HO_SOCKET_PATH_MAX is what sun_path holds");

/* The settings.  Sections appear in this order in files and help. */
static const cfg_row rows[] = {
    STR_ROW("server", "socket", "socket", socket, 1, HO_SOCKET_PATH_MAX,
            HO_SOCKET_LOCAL, RESTART,
            "Unix socket path (ignored when systemd passes a socket)"),
    MODE_ROW("server", "socket_mode", "socket-mode", socket_mode, "0660",
             RESTART, "permission bits of the socket file the daemon creates"),
    STR_ROW("server", "state_dir", "state-dir", state_dir, 1, PATH_MAX - 64,
            HO_LOCAL_DIR "/state", RESTART,
            "directory for persistent state (quotas)"),
    U32_ROW("server", "max_connections", "max-connections", max_connections,
            1, 65536, "1024", RELOAD,
            "connections served at once; more are refused with an error"),
    U32_ROW("server", "max_connections_per_uid", "max-connections-per-uid",
            max_connections_per_uid, 1, 65536, "256", RELOAD,
            "connections one non-admin uid may hold at once"),
    SIZE_ROW("server", "max_frame", "max-frame", max_frame,
             HO_FRAME_LIMIT_HANDSHAKE, HO_FRAME_LIMIT_MAX, "64M", RESTART,
             "largest frame accepted after the handshake (announced in "
             "Welcome)"),
    SIZE_ROW("server", "max_output", "max-output", max_output, MiB, 4 * GiB,
             "128M", RELOAD,
             "replies queued for one connection before it is dropped as too "
             "slow"),
    SIZE_ROW("server", "max_output_total", "max-output-total",
             max_output_total, MiB, TiB, "1G", RELOAD,
             "replies queued for all connections together; above it the "
             "connection with the most queued is dropped"),
    SIZE_ROW("server", "max_partial_frames", "max-partial-frames",
             max_partial, MiB, TiB, "256M", RELOAD,
             "bytes of partly received frames held for all peers together; "
             "a frame that would pass it is refused"),
    U32_ROW("server", "handshake_timeout", "handshake-timeout",
            handshake_timeout_s, 1, 3600, "10", RELOAD,
            "seconds a new connection has to complete Hello"),
    U32_ROW("server", "read_timeout", "read-timeout", read_timeout_s, 1,
            3600, "30", RELOAD,
            "seconds a frame may take from its first byte to its last"),
    U32_ROW("server", "idle_timeout", "idle-timeout", idle_timeout_s, 0,
            86400, "300", RELOAD,
            "seconds a connection without a session may stay silent; 0: "
            "no limit (connections with a session are never timed out)"),
    U32_ROW("server", "max_extents_per_session", "max-extents", max_extents,
            1, 1 << 24, "65536", RELOAD,
            "extents one session may hold at once"),
    STR_ROW("server", "admin_group", "admin-group", admin_group, 0, 255,
            "hyperoffload", RELOAD,
            "members of this group (and root) may use admin requests; "
            "empty: root only"),
    U32_ROW("server", "admin_reserve", "admin-reserve", admin_reserve, 0,
            8192, "16", RELOAD,
            "of max_connections, this many (at most an eighth) are kept for "
            "admin peers"),
    BOOL_ROW("server", "watchdog", "watchdog", watchdog, "yes", RELOAD,
             "send WATCHDOG=1 pings when systemd asks for them"),
    U32_ROW("server", "drain_timeout", "drain-timeout", drain_timeout_s, 0,
            3600, "10", RELOAD,
            "seconds SIGTERM waits for moves and plans in flight"),
    LEVEL_ROW("log", "level", "log-level", log_level, "info", RELOAD,
              "error, warning, notice, info or debug"),
    SIZE_ROW("ddr", "capacity", "ddr-capacity", ddr_capacity, 4 * MiB,
             64 * TiB, "1G", RESTART, "bytes of host DDR the pool may hold"),
    I32_ROW("ddr", "numa_node", "ddr-numa-node", ddr_numa_node, -1, 1023,
            "-1", RESTART,
            "NUMA node the pool's pages are bound to; -1: no binding"),
    BOOL_ROW("ddr", "lock", "ddr-lock", ddr_lock, "yes", RESTART,
             "mlock pool pages (needs CAP_IPC_LOCK or LimitMEMLOCK)"),
    BOOL_ROW("ddr", "hugepages", "ddr-hugepages", ddr_hugepages, "no",
             RESTART, "back arenas with 2 MiB huge pages (MFD_HUGETLB)"),
    SIZE_ROW("ddr", "alignment", "ddr-alignment", ddr_alignment, 4 * KiB, GiB,
             "4K", RESTART, "extent alignment, a power of two"),
    U32_ROW("ddr", "stage_wait", "ddr-stage-wait", stage_wait_s, 1, 3600,
            "30", RELOAD,
            "seconds a client's copy may wait for a host copy to come into "
            "DDR before the daemon fails the wait, naming what it waited "
            "for"),
    PATHLIST_ROW("flash", "paths", "flash-paths", flash_paths, n_flash, 1,
                 SRV_MAX_FLASH, HO_LOCAL_DIR "/flash0", RESTART,
                 "comma-separated flash files, one preallocated file each"),
    SIZE_ROW("flash", "capacity", "flash-capacity", flash_capacity, MiB, PiB,
             "4G", RESTART, "bytes of each flash file"),
    BOOL_ROW("flash", "direct", "flash-direct", flash_direct, "yes", RESTART,
             "use O_DIRECT (buffered I/O when the filesystem refuses)"),
    BOOL_ROW("flash", "persist", "flash-persist", flash_persist, "no",
             RESTART,
             "keep the flash files and their data at a clean exit (no: "
             "remove the files the daemon created, truncate the others)"),
    U32_ROW("flash", "discard_delay", "flash-discard-delay",
            flash_discard_delay, 0, 3600, "10", RESTART,
            "seconds after which a freed flash extent not allocated again "
            "is discarded (punched out); 0: at once"),
    GBPS_ROW("flash", "read_gbps", "flash-read-gbps", flash_read_gbps, "2",
             RESTART, "flash read bandwidth of the node description (GB/s)"),
    GBPS_ROW("flash", "write_gbps", "flash-write-gbps", flash_write_gbps,
             "1", RESTART,
             "flash write bandwidth of the node description (GB/s)"),
    U32_ROW("devices", "count", "devices", n_devices, 0, SRV_MAX_DEVICES, "4",
            RESTART, "accelerator devices whose HBM is budgeted"),
    NAMELIST_ROW("devices", "names", "device-names", device_names,
                 n_device_names, 0, SRV_MAX_DEVICES, "", RESTART,
                 "comma-separated device names; empty: emu0, emu1, ..."),
    SIZELIST_ROW("devices", "hbm_capacity", "hbm-capacity", hbm_capacity,
                 n_hbm_capacity, MiB, PiB, "1G", RESTART,
                 "HBM bytes per device: one value for all, or one per "
                 "device"),
    SIZELIST_ROW("devices", "hbm_reserve", "hbm-reserve", hbm_reserve,
                 n_hbm_reserve, 0, PiB, "0", RESTART,
                 "HBM bytes per device kept back from grants: one value or "
                 "one per device"),
    STR_ROW("node", "discover", "node-discover", node_discover, 2, 5, "auto",
            RESTART,
            "where the node's links come from without [link] sections: "
            "auto (sysfs when it lists enough NVIDIA devices, else the "
            "emulated switches), sysfs (required), no (emulated)"),
    STR_ROW("node", "sysfs_root", "sysfs-root", sysfs_root, 1, PATH_MAX - 64,
            "/sys", RESTART,
            "sysfs mount read by discovery (bus/pci/devices below it)"),
    U32_ROW("node", "devices_per_switch", "devices-per-switch",
            devices_per_switch, 0, SRV_MAX_DEVICES, "2", RESTART,
            "emulated node: devices under each emulated switch (sw0, sw1, "
            "...); 0: every device directly under the host link"),
    GBPS_ROW("node", "device_gbps", "device-gbps", device_gbps, "16",
             RESTART, "a device's own link (H2D and D2H, GB/s) unless its "
             "[device N] section or sysfs says otherwise"),
    GBPS_ROW("node", "switch_gbps", "switch-gbps", switch_gbps, "16",
             RESTART, "each emulated switch's link to the host (GB/s)"),
    GBPS_ROW("node", "host_gbps", "host-gbps", host_gbps, "32", RESTART,
             "the emulated host link, the root of the tree (GB/s)"),
    REAL_ROW("node", "latency_us", "device-latency-us", device_latency_us, 0,
             1000000000, "10", RESTART,
             "a device's copy latency (µs) unless its [device N] section "
             "says otherwise"),
    BOOL_ROW("node", "pace_links", "pace-links", pace_links, "yes", RESTART,
             "hand out the link region: host-backend clients pace their "
             "copies to their fair share of the node's links"),
    STR_ROW("planning", "planner", "planner", planner, 1,
            SRV_PLANNER_NAME_MAX - 1, "hoplan", RELOAD,
            "planner used when a PlanRequest names none"),
    U32_ROW("planning", "cache_entries", "plan-cache", plan_cache, 0, 4096,
            "64", RELOAD, "plans kept in the cache (0 disables caching)"),
    SIZE_ROW("planning", "cache_bytes", "plan-cache-bytes", plan_cache_bytes,
             MiB, TiB, "256M", RELOAD,
             "bytes of packed schedules in the plan cache; least recently "
             "used dropped first"),
    SIZE_ROW("planning", "retained_per_session", "retained-per-session",
             retained_per_session, 64 * KiB, TiB, "256M", RELOAD,
             "bytes of plans (trace and schedule) one session keeps for "
             "StageRequest; least recently used dropped first"),
    SIZE_ROW("planning", "retained_total", "retained-total", retained_total,
             64 * KiB, PiB, "1G", RELOAD,
             "bytes of plans all sessions keep for StageRequest together; "
             "least recently used dropped first"),
    STR_ROW("metrics", "textfile", "metrics-textfile", metrics_textfile, 0,
            PATH_MAX - 64, "", RELOAD,
            "Prometheus textfile (*.prom) for node_exporter's textfile "
            "collector, rewritten atomically every interval; empty: none"),
    U32_ROW("metrics", "interval", "metrics-interval", metrics_interval, 1,
            SRV_METRICS_INTERVAL_MAX, "15", RELOAD,
            "seconds between writes of the metrics textfile"),
    /* Debug knobs, for measurements (bench/, docs/admin.md). */
    BOOL_ROW("debug", "spill_via_fd", "debug-spill-via-fd",
             debug_spill_via_fd, "no", RESTART | HIDDEN,
             "spill through the arena's memfd with bounce buffers instead of "
             "O_DIRECT from its mapping"),
    U32_ROW("debug", "move_parts", "debug-move-parts", debug_move_parts, 0,
            SRV_MOVE_PARTS_MAX, "0", RESTART | HIDDEN,
            "worker parts per move, below the built-in maximum (0: the "
            "maximum)"),
};

#define N_ROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static const char *const sections[] = {"server", "log", "ddr", "flash",
                                       "devices", "node", "planning",
                                       "metrics", "debug"};
#define N_SECTIONS ((int)(sizeof(sections) / sizeof(sections[0])))

/* Planner names of planner/plan.h (plan_planner_names); kept here so the
 * config has no link dependency on the planner. */
static const char *const planner_names[] = {
    "hoplan", "none", "seed-greedy", "ms-distance", "reactive-lru", "oracle"};

int srv_config_rows(void) { return N_ROWS; }
bool srv_config_row_runtime(int row) { return rows[row].flags & RELOAD; }
bool srv_config_row_hidden(int row) { return rows[row].flags & HIDDEN; }
const char *srv_config_row_flag(int row) { return rows[row].flag; }

const char *srv_config_row_name(int row)
{
    static char names[N_ROWS][64];
    if (!names[row][0])
        snprintf(names[row], sizeof(names[row]), "%s.%s", rows[row].section,
                 rows[row].key);
    return names[row];
}

/* ------------------------------------------------------------------ sizes */

/* Config text for a size: the largest exact suffix. */
static void size_text(uint64_t v, char *buf, size_t len)
{
    static const char suf[] = "KMGTP";
    int u = -1;
    while (v && u < 4 && (v & 1023) == 0) {
        v >>= 10;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%llu", (unsigned long long)v);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)v, suf[u]);
}

/* The shortest text of v that reads back the same ("16", "12.5"). */
static void real_text(double v, char *buf, size_t len)
{
    if (v == (double)(int64_t)v && v > -1e15 && v < 1e15) {
        snprintf(buf, len, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* "64 TiB" for bound messages; exact when the value is a whole unit. */
static void bound_text(cfg_type t, int64_t v, char *buf, size_t len)
{
    if (t == T_SIZE || t == T_SIZELIST) {
        char a[32];
        size_text((uint64_t)v, a, sizeof(a));
        if (v >= 1024) {
            char h[32];
            ho_size_format((uint64_t)v, h, sizeof(h));
            snprintf(buf, len, "%s (%s)", a, h);
        } else {
            snprintf(buf, len, "%s", a);
        }
    } else {
        snprintf(buf, len, "%lld", (long long)v);
    }
}

/* ------------------------------------------------------------------ values */

static int parse_uint(const char *s, uint64_t *ret_v)
{
    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    if (*end)
        return -EINVAL;
    *ret_v = v;
    return 0;
}

static int parse_int(const char *s, int64_t *ret_v)
{
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!isdigit((unsigned char)*p))
        return -EINVAL;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    if (*end)
        return -EINVAL;
    *ret_v = v;
    return 0;
}

static int parse_bool(const char *s, bool *ret_v)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *ret_v = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *ret_v = false;
            return 0;
        }
    }
    return -EINVAL;
}

static void trim(char **s)
{
    char *p = *s;
    while (isspace((unsigned char)*p))
        p++;
    size_t n = strlen(p);
    while (n && isspace((unsigned char)p[n - 1]))
        p[--n] = '\0';
    *s = p;
}

/* Split a comma list into at most max trimmed items (in a copy owned by
 * *ret_copy).  Empty text gives 0 items; empty items are an error. */
static int split_list(const char *s, char **items, uint32_t max,
                      uint32_t *ret_n, char **ret_copy, char *err,
                      size_t errlen)
{
    char *copy = strdup(s);
    if (!copy)
        return -ENOMEM;
    uint32_t n = 0;
    char *p = copy;
    trim(&p);
    if (*p) {
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            char *item = p;
            trim(&item);
            if (!*item) {
                ho_errf(err, errlen, 0, "'%s' has an empty item", s);
                free(copy);
                return HO_E_BAD_CONFIG;
            }
            if (n >= max) {
                ho_errf(err, errlen, 0,
                        "'%s' has more than the maximum %u items", s, max);
                free(copy);
                return HO_E_BAD_CONFIG;
            }
            items[n++] = item;
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    *ret_n = n;
    *ret_copy = copy;
    return 0;
}

/* ------------------------------------------------------------ setting a row
 *
 * set_row runs three steps on the text of a value:
 *   parse_value  the syntax of the row's type: a number, a size, a boolean,
 *                an octal mode, a level name, a comma list (the items of a
 *                size list are each read and bound-checked in turn, so the
 *                first bad item is the one named);
 *   check_value  the row's bounds: numeric range, string length and
 *                characters, number of list items, path and name rules;
 *   apply_value  write the field (strings and paths are copied).
 * A failure at any step leaves the setting unchanged; err gets the reason
 * without the place (the callers add "FILE:LINE: " or "--flag: "). */

/* A value between the steps. */
typedef struct cfg_value {
    int64_t num;                   /* U32, I32, BOOL (0/1), MODE, LEVEL */
    uint64_t size;                 /* SIZE */
    uint32_t n;                    /* lists: items */
    char *items[SRV_MAX_DEVICES];  /* lists: into copy */
    uint64_t sizes[SRV_MAX_DEVICES]; /* SIZELIST */
    char *copy;                    /* lists: the split text, owned */
    double real;                   /* GBPS, REAL */
} cfg_value;

/* "'text' is below the minimum B" / "... above the maximum B". */
static int out_of_bounds(const cfg_row *r, const char *text, bool below,
                         char *err, size_t errlen)
{
    char b[80];
    bound_text(r->type, below ? r->min : r->max, b, sizeof(b));
    return ho_errf(err, errlen, HO_E_BAD_CONFIG, "'%s' is %s the %s %s", text,
                   below ? "below" : "above", below ? "minimum" : "maximum",
                   b);
}

static int parse_size_text(const char *s, uint64_t *ret_v, char *err,
                           size_t errlen)
{
    int rc = ho_size_parse(s, ret_v);
    if (rc == -ERANGE)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "'%s' is too large", s);
    if (rc < 0)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "'%s' is not a size (a number with an optional K, M, "
                       "G, T or P suffix)", s);
    return 0;
}

static int check_size(const cfg_row *r, const char *s, uint64_t v, char *err,
                      size_t errlen)
{
    if (v < (uint64_t)r->min)
        return out_of_bounds(r, s, true, err, errlen);
    if (v > (uint64_t)r->max)
        return out_of_bounds(r, s, false, err, errlen);
    return 0;
}

static int parse_integer(const cfg_row *r, const char *s, int64_t *ret_v,
                         char *err, size_t errlen)
{
    int64_t v = 0;
    int rc;
    if (r->type == T_U32) {
        uint64_t u = 0;
        rc = parse_uint(s, &u);
        v = rc == 0 && u > INT64_MAX ? INT64_MAX : (int64_t)u;
    } else {
        rc = parse_int(s, &v);
    }
    if (rc == -ERANGE)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "'%s' is out of range (%lld..%lld)", s,
                       (long long)r->min, (long long)r->max);
    if (rc < 0)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "'%s' is not %s", s,
                       r->type == T_U32 ? "a non-negative integer"
                                        : "an integer");
    *ret_v = v;
    return 0;
}

static int parse_mode(const char *s, int64_t *ret_v, char *err,
                      size_t errlen)
{
    char *end = NULL;
    unsigned long v = 0;
    errno = 0;
    if (isdigit((unsigned char)*s))
        v = strtoul(s, &end, 8);
    if (!end || *end || errno)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "'%s' is not an octal mode such as 0660", s);
    *ret_v = (int64_t)v;
    return 0;
}

static int parse_boolean(const char *s, int64_t *ret_v, char *err,
                         size_t errlen)
{
    bool b;
    if (parse_bool(s, &b) < 0)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "'%s' is not a boolean "
                       "(yes/no, true/false, on/off, 1/0)", s);
    *ret_v = b;
    return 0;
}

static int parse_level(const char *s, int64_t *ret_v, char *err,
                       size_t errlen)
{
    int lv;
    if (srv_log_level_parse(s, &lv) < 0)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "'%s' is not a log level "
                       "(error, warning, notice, info, debug)", s);
    *ret_v = lv;
    return 0;
}

/* Split a list and, for a size list, read and bound-check its items. */
static int parse_list(const cfg_row *r, const char *s, cfg_value *v,
                      char *err, size_t errlen)
{
    uint32_t max = (uint32_t)(r->type == T_PATHLIST ? r->max
                                                    : SRV_MAX_DEVICES);
    int rc = split_list(s, v->items, max, &v->n, &v->copy, err, errlen);
    if (rc < 0 || r->type != T_SIZELIST)
        return rc;
    if (v->n == 0)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "at least one size is required");
    for (uint32_t i = 0; i < v->n; i++) {
        rc = parse_size_text(v->items[i], &v->sizes[i], err, errlen);
        if (rc == 0)
            rc = check_size(r, v->items[i], v->sizes[i], err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A finite decimal number ("16", "12.5", "1e3"; no hex, inf or nan). */
static int parse_real(const char *s, double *ret_v)
{
    if (!*s || strspn(s, "0123456789.+-eE") != strlen(s))
        return -EINVAL;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno == ERANGE || *end || end == s || !isfinite(v))
        return -EINVAL;
    *ret_v = v;
    return 0;
}

static int check_real(const cfg_row *r, const char *s, double v, char *err,
                      size_t errlen)
{
    if (r->type == T_GBPS && !(v > 0))
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "'%s' is not above 0 (a bandwidth in GB/s)", s);
    if (v < (double)r->min)
        return out_of_bounds(r, s, true, err, errlen);
    if (v > (double)r->max)
        return out_of_bounds(r, s, false, err, errlen);
    return 0;
}

static int parse_value(const cfg_row *r, const char *s, cfg_value *v,
                       char *err, size_t errlen)
{
    switch (r->type) {
    case T_GBPS:
    case T_REAL:
        if (parse_real(s, &v->real) < 0)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "'%s' is not a number", s);
        return 0;
    case T_SIZE:
        return parse_size_text(s, &v->size, err, errlen);
    case T_U32:
    case T_I32:
        return parse_integer(r, s, &v->num, err, errlen);
    case T_BOOL:
        return parse_boolean(s, &v->num, err, errlen);
    case T_MODE:
        return parse_mode(s, &v->num, err, errlen);
    case T_LEVEL:
        return parse_level(s, &v->num, err, errlen);
    case T_STR:
        return 0;   /* the text itself */
    case T_PATHLIST:
    case T_SIZELIST:
    case T_NAMELIST:
        return parse_list(r, s, v, err, errlen);
    }
    return HO_E_INTERNAL;
}

static int check_string(const cfg_row *r, const char *s, char *err,
                        size_t errlen)
{
    size_t n = strlen(s);
    if ((int64_t)n < r->min)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "an empty value is not allowed");
    if ((int64_t)n > r->max)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "'%.40s...' is %zu bytes, above the maximum %lld", s,
                       n, (long long)r->max);
    for (size_t i = 0; i < n; i++)
        if (iscntrl((unsigned char)s[i]))
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "control characters are not allowed");
    return 0;
}

static int check_paths(const cfg_row *r, const cfg_value *v, char *err,
                       size_t errlen)
{
    if (v->n < (uint32_t)r->min)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "at least %lld path is required", (long long)r->min);
    for (uint32_t i = 0; i < v->n; i++)
        if (strlen(v->items[i]) > PATH_MAX - 64)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "path %u is longer than %d bytes", i,
                           PATH_MAX - 64);
    return 0;
}

static int check_names(const cfg_value *v, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < v->n; i++) {
        const char *name = v->items[i];
        size_t len = strlen(name);
        if (len >= SRV_DEVICE_NAME)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "name '%s' is longer than %d bytes", name,
                           SRV_DEVICE_NAME - 1);
        for (size_t k = 0; k < len; k++)
            if (!isgraph((unsigned char)name[k]))
                return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                               "name '%s' has a space or control character",
                               name);
    }
    return 0;
}

static int check_value(const cfg_row *r, const char *s, const cfg_value *v,
                       char *err, size_t errlen)
{
    switch (r->type) {
    case T_SIZE:
        return check_size(r, s, v->size, err, errlen);
    case T_U32:
    case T_I32:
        if (v->num < r->min)
            return out_of_bounds(r, s, true, err, errlen);
        if (v->num > r->max)
            return out_of_bounds(r, s, false, err, errlen);
        return 0;
    case T_MODE:
        if (v->num > r->max)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "'%s' is above the maximum 0777", s);
        return 0;
    case T_STR:
        return check_string(r, s, err, errlen);
    case T_PATHLIST:
        return check_paths(r, v, err, errlen);
    case T_NAMELIST:
        return check_names(v, err, errlen);
    case T_GBPS:
    case T_REAL:
        return check_real(r, s, v->real, err, errlen);
    case T_BOOL:
    case T_LEVEL:
    case T_SIZELIST:   /* items checked as they were read */
        return 0;
    }
    return HO_E_INTERNAL;
}

/* Replace a string field by a copy of s.  0 or -ENOMEM (field unchanged). */
static int apply_string(char **field, const char *s)
{
    char *copy = strdup(s);
    if (!copy)
        return -ENOMEM;
    free(*field);
    *field = copy;
    return 0;
}

/* Replace the path list by copies of the items.  0 or -ENOMEM (unchanged). */
static int apply_paths(char **slots, uint32_t *count, const cfg_value *v)
{
    char *paths[SRV_MAX_FLASH] = {0};
    for (uint32_t i = 0; i < v->n; i++) {
        paths[i] = strdup(v->items[i]);
        if (!paths[i]) {
            for (uint32_t k = 0; k < i; k++)
                free(paths[k]);
            return -ENOMEM;
        }
    }
    for (uint32_t i = 0; i < SRV_MAX_FLASH; i++) {
        free(slots[i]);
        slots[i] = paths[i];
    }
    *count = v->n;
    return 0;
}

static int apply_value(srv_config *c, const cfg_row *r, const char *s,
                       const cfg_value *v)
{
    void *field = (char *)c + r->off;
    uint32_t *count = (uint32_t *)(void *)((char *)c + r->count_off);
    switch (r->type) {
    case T_SIZE:
        *(uint64_t *)field = v->size;
        return 0;
    case T_U32:
    case T_MODE:
        *(uint32_t *)field = (uint32_t)v->num;
        return 0;
    case T_I32:
        *(int32_t *)field = (int32_t)v->num;
        return 0;
    case T_BOOL:
        *(bool *)field = v->num != 0;
        return 0;
    case T_GBPS:
    case T_REAL:
        *(double *)field = v->real;
        return 0;
    case T_LEVEL:
        *(int *)field = (int)v->num;
        return 0;
    case T_STR:
        return apply_string((char **)field, s);
    case T_PATHLIST:
        return apply_paths((char **)field, count, v);
    case T_SIZELIST:
        memcpy(field, v->sizes, v->n * sizeof(uint64_t));
        *count = v->n;
        return 0;
    case T_NAMELIST: {
        char(*names)[SRV_DEVICE_NAME] = field;
        for (uint32_t i = 0; i < v->n; i++)
            snprintf(names[i], SRV_DEVICE_NAME, "%s", v->items[i]);
        *count = v->n;
        return 0;
    }
    }
    return HO_E_INTERNAL;
}

/* Set row r of c from text (the three steps above). */
static int set_row(srv_config *c, const cfg_row *r, const char *value,
                   char *err, size_t errlen)
{
    cfg_value v;
    memset(&v, 0, sizeof(v));
    int rc = parse_value(r, value, &v, err, errlen);
    if (rc == 0)
        rc = check_value(r, value, &v, err, errlen);
    if (rc == 0)
        rc = apply_value(c, r, value, &v);
    free(v.copy);
    return rc;
}

void srv_config_format(const srv_config *c, int row, char *buf, size_t len)
{
    const cfg_row *r = &rows[row];
    const char *field = (const char *)c + r->off;
    switch (r->type) {
    case T_SIZE:
        size_text(*(const uint64_t *)(const void *)field, buf, len);
        return;
    case T_U32:
        snprintf(buf, len, "%u", *(const uint32_t *)(const void *)field);
        return;
    case T_I32:
        snprintf(buf, len, "%d", *(const int32_t *)(const void *)field);
        return;
    case T_BOOL:
        snprintf(buf, len, "%s", *(const bool *)field ? "yes" : "no");
        return;
    case T_GBPS:
    case T_REAL:
        real_text(*(const double *)(const void *)field, buf, len);
        return;
    case T_MODE:
        snprintf(buf, len, "0%03o", *(const uint32_t *)(const void *)field);
        return;
    case T_LEVEL:
        snprintf(buf, len, "%s",
                 srv_log_level_name(*(const int *)(const void *)field));
        return;
    case T_STR: {
        const char *s = *(char *const *)(const void *)field;
        snprintf(buf, len, "%s", s ? s : "");
        return;
    }
    case T_PATHLIST:
    case T_SIZELIST:
    case T_NAMELIST: {
        uint32_t n = *(const uint32_t *)(const void *)((const char *)c +
                                                       r->count_off);
        size_t off = 0;
        buf[0] = '\0';
        for (uint32_t i = 0; i < n && off < len; i++) {
            char item[PATH_MAX];
            if (r->type == T_PATHLIST)
                snprintf(item, sizeof(item), "%s",
                         ((char *const *)(const void *)field)[i]);
            else if (r->type == T_SIZELIST)
                size_text(((const uint64_t *)(const void *)field)[i], item,
                          sizeof(item));
            else
                snprintf(
                    item, sizeof(item), "%s",
                    ((const char(*)[SRV_DEVICE_NAME])(const void *)field)[i]);
            int w = snprintf(buf + off, len - off, "%s%s", i ? "," : "", item);
            if (w < 0)
                break;
            off += (size_t)w;
        }
        return;
    }
    }
    buf[0] = '\0';
}

static int find_row(const char *section, const char *key)
{
    for (int i = 0; i < N_ROWS; i++)
        if (strcmp(rows[i].section, section) == 0 &&
            strcmp(rows[i].key, key) == 0)
            return i;
    return -1;
}

static bool known_section(const char *s)
{
    for (int i = 0; i < N_SECTIONS; i++)
        if (strcmp(sections[i], s) == 0)
            return true;
    return false;
}

int srv_config_set(srv_config *c, const char *section, const char *key,
                   const char *value, char *err, size_t errlen)
{
    if (!known_section(section))
        return ho_errf(err, errlen, -ENOENT, "unknown section [%s]", section);
    int row = find_row(section, key);
    if (row < 0)
        return ho_errf(err, errlen, -ENOENT,
                       "unknown key '%s' in section [%s]", key, section);
    char why[512];
    int rc = set_row(c, &rows[row], value, why, sizeof(why));
    if (rc < 0)
        ho_errf(err, errlen, 0, "[%s] %s: %s", section, key, why);
    return rc;
}

int srv_config_copy_row(srv_config *dst, const srv_config *src, int row)
{
    char text[SRV_MAX_FLASH * PATH_MAX];
    char why[256];
    srv_config_format(src, row, text, sizeof(text));
    int rc = set_row(dst, &rows[row], text, why, sizeof(why));
    return rc == -ENOMEM ? rc : 0;
}

/* ------------------------------------------------------------------ init */

void srv_config_done(srv_config *c)
{
    if (!c)
        return;
    free(c->socket);
    free(c->state_dir);
    free(c->admin_group);
    free(c->planner);
    free(c->metrics_textfile);
    free(c->node_discover);
    free(c->sysfs_root);
    free(c->config_path);
    for (int i = 0; i < SRV_MAX_FLASH; i++)
        free(c->flash_paths[i]);
    memset(c, 0, sizeof(*c));
}

int srv_config_init(srv_config *c)
{
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < N_ROWS; i++) {
        char why[256];
        int rc = set_row(c, &rows[i], rows[i].def, why, sizeof(why));
        if (rc < 0) {
            srv_config_done(c);
            /* A default that does not parse is a bug of the table. */
            return rc == -ENOMEM ? rc : HO_E_INTERNAL;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ files */

/* Where a file is being read. */
typedef struct ini_reader {
    const char *path;
    unsigned lineno;
    char section[64];            /* current [section], "" before one */
    int link;                    /* [link NAME]: index in c->links, or -1 */
    int device;                  /* [device N]: N, or -1 */
    int first_line[N_ROWS];      /* line that set each row, 0 none */
} ini_reader;

/* "FILE:LINE: " + the sentence; returns HO_E_BAD_CONFIG. */
static int ini_fail(const ini_reader *r, char *err, size_t errlen,
                    const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int ini_fail(const ini_reader *r, char *err, size_t errlen,
                    const char *fmt, ...)
{
    char msg[SRV_MAX_CONFIG_LINE + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ho_errf(err, errlen, HO_E_BAD_CONFIG, "%s:%u: %s", r->path,
                   r->lineno, msg);
}

/* ------------------------------------------------------------ node sections
 *
 * [link NAME] and [device N] (docs/hyperoffloadd.conf.5): the node
 * description of NODE.md §1, one section per link and per device.  Not
 * rows (they repeat): files only, restart-only, written by
 * srv_config_write_ini after the rows. */

/* A link or device name: printable, no spaces, no brackets or '=' (it is
 * written back into a section header). */
static bool node_name_ok(const char *s, size_t cap)
{
    size_t n = strlen(s);
    if (n == 0 || n >= cap)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)s[i]) || strchr("[]=#;\"", s[i]))
            return false;
    return true;
}

static int ini_node_section(srv_config *c, ini_reader *r, const char *kind,
                            const char *arg, char *err, size_t errlen)
{
    if (strcmp(kind, "link") == 0) {
        if (!node_name_ok(arg, SRV_LINK_NAME))
            return ini_fail(r, err, errlen, "[link %s]: a link name is 1 to "
                            "%d printable bytes without spaces, brackets, "
                            "'=', '#', ';' or quotes", arg,
                            SRV_LINK_NAME - 1);
        for (uint32_t i = 0; i < c->n_links; i++)
            if (strcmp(c->links[i].name, arg) == 0)
                return ini_fail(r, err, errlen, "[link %s] is given twice "
                                "(first at line %u)", arg, c->links[i].line);
        if (c->n_links >= SRV_MAX_LINKS)
            return ini_fail(r, err, errlen, "[link %s]: more than %d links",
                            arg, SRV_MAX_LINKS);
        srv_link_cfg *l = &c->links[c->n_links];
        memset(l, 0, sizeof(*l));
        snprintf(l->name, sizeof(l->name), "%s", arg);
        l->duplex = true;
        l->line = r->lineno;
        r->link = (int)c->n_links++;
        snprintf(r->section, sizeof(r->section), "link");
        return 0;
    }
    if (strcmp(kind, "device") == 0) {
        uint64_t n = 0;
        if (parse_uint(arg, &n) < 0 || n >= SRV_MAX_DEVICES)
            return ini_fail(r, err, errlen, "[device %s]: the device number "
                            "is an integer 0..%d (its index in [devices])",
                            arg, SRV_MAX_DEVICES - 1);
        srv_device_cfg *d = &c->device_cfg[n];
        if (d->present)
            return ini_fail(r, err, errlen, "[device %s] is given twice "
                            "(first at line %u)", arg, d->line);
        memset(d, 0, sizeof(*d));
        d->present = true;
        d->duplex = true;
        d->line = r->lineno;
        r->device = (int)n;
        snprintf(r->section, sizeof(r->section), "device");
        return 0;
    }
    return ini_fail(r, err, errlen, "unknown section [%s %s] (sections with "
                    "an argument: [link NAME], [device N])", kind, arg);
}

/* The keys of [link NAME] / [device N]: bit, name, what it takes. */
typedef struct node_key {
    const char *key;
    unsigned bit;       /* SRV_NODE_KEY_*, both directions for "gbps" */
    bool link, device;  /* allowed in */
} node_key;

static const node_key node_keys[] = {
    {"name", SRV_NODE_KEY_NAME, false, true},
    {"parent", SRV_NODE_KEY_PARENT, true, true},
    {"hbm_capacity", SRV_NODE_KEY_HBM, false, true},
    {"hbm_reserve", SRV_NODE_KEY_RESERVE, false, true},
    {"gbps", SRV_NODE_KEY_H2D | SRV_NODE_KEY_D2H, true, true},
    {"h2d_gbps", SRV_NODE_KEY_H2D, true, true},
    {"d2h_gbps", SRV_NODE_KEY_D2H, true, true},
    {"latency_us", SRV_NODE_KEY_LATENCY, false, true},
    {"duplex", SRV_NODE_KEY_DUPLEX, true, true},
};

/* Set `key` of the current [link] / [device] section.  The value's text
 * is checked like a row of the same kind. */
static int ini_node_assign(srv_config *c, ini_reader *r, const char *key,
                           const char *value, char *err, size_t errlen)
{
    bool is_link = r->link >= 0;
    char where[96];
    if (is_link)
        snprintf(where, sizeof(where), "[link %s]", c->links[r->link].name);
    else
        snprintf(where, sizeof(where), "[device %d]", r->device);
    const node_key *k = NULL;
    for (size_t i = 0; i < sizeof(node_keys) / sizeof(node_keys[0]); i++)
        if (strcmp(node_keys[i].key, key) == 0 &&
            (is_link ? node_keys[i].link : node_keys[i].device))
            k = &node_keys[i];
    if (!k)
        return ini_fail(r, err, errlen, "unknown key '%s' in %s (known: %s)",
                        key, where, is_link
                        ? "parent, gbps, h2d_gbps, d2h_gbps, duplex"
                        : "name, parent, hbm_capacity, hbm_reserve, gbps, "
                          "h2d_gbps, d2h_gbps, latency_us, duplex");
    unsigned *given = is_link ? &c->links[r->link].given
                              : &c->device_cfg[r->device].given;
    if (*given & k->bit)
        return ini_fail(r, err, errlen, "%s %s is set twice", where, key);
    *given |= k->bit;
    srv_link_cfg *l = is_link ? &c->links[r->link] : NULL;
    srv_device_cfg *d = is_link ? NULL : &c->device_cfg[r->device];
    char *parent = is_link ? l->parent : d->parent;
    switch (k->bit) {
    case SRV_NODE_KEY_NAME:
        if (!node_name_ok(value, SRV_DEVICE_NAME))
            return ini_fail(r, err, errlen, "%s name '%s': 1 to %d printable "
                            "bytes without spaces", where, value,
                            SRV_DEVICE_NAME - 1);
        snprintf(d->name, sizeof(d->name), "%s", value);
        return 0;
    case SRV_NODE_KEY_PARENT:
        if (!node_name_ok(value, SRV_LINK_NAME))
            return ini_fail(r, err, errlen, "%s parent '%s' is not a link "
                            "name", where, value);
        snprintf(parent, SRV_LINK_NAME, "%s", value);
        return 0;
    case SRV_NODE_KEY_HBM:
    case SRV_NODE_KEY_RESERVE: {
        uint64_t v = 0;
        char why[256];
        if (parse_size_text(value, &v, why, sizeof(why)) < 0)
            return ini_fail(r, err, errlen, "%s %s: %s", where, key, why);
        if (k->bit == SRV_NODE_KEY_HBM && v < (uint64_t)MiB)
            return ini_fail(r, err, errlen, "%s hbm_capacity '%s' is below "
                            "the minimum 1M", where, value);
        *(k->bit == SRV_NODE_KEY_HBM ? &d->hbm_capacity : &d->hbm_reserve) =
            v;
        return 0;
    }
    case SRV_NODE_KEY_DUPLEX: {
        bool b;
        if (parse_bool(value, &b) < 0)
            return ini_fail(r, err, errlen, "%s duplex: '%s' is not a "
                            "boolean (yes/no)", where, value);
        *(is_link ? &l->duplex : &d->duplex) = b;
        return 0;
    }
    default:
        break;
    }
    double v = 0;
    bool latency = k->bit == SRV_NODE_KEY_LATENCY;
    if (parse_real(value, &v) < 0 || (latency ? v < 0 || v > 1e9
                                              : !(v > 0) || v > SRV_MAX_GBPS))
        return ini_fail(r, err, errlen, "%s %s: '%s' is not a number in %s",
                        where, key, value,
                        latency ? "0..1000000000 (µs)" : "(0, 1000000] (GB/s)");
    if (latency)
        d->latency_us = v;
    if (k->bit & SRV_NODE_KEY_H2D)
        *(is_link ? &l->h2d_gbps : &d->h2d_gbps) = v;
    if (k->bit & SRV_NODE_KEY_D2H)
        *(is_link ? &l->d2h_gbps : &d->d2h_gbps) = v;
    return 0;
}

bool srv_config_keep_node_sections(srv_config *nc, const srv_config *old)
{
    bool differ = nc->n_links != old->n_links;
    for (uint32_t i = 0; i < old->n_links && !differ; i++) {
        const srv_link_cfg *a = &nc->links[i], *b = &old->links[i];
        differ = strcmp(a->name, b->name) || strcmp(a->parent, b->parent) ||
                 a->h2d_gbps != b->h2d_gbps || a->d2h_gbps != b->d2h_gbps ||
                 a->duplex != b->duplex;
    }
    for (uint32_t i = 0; i < SRV_MAX_DEVICES && !differ; i++) {
        const srv_device_cfg *a = &nc->device_cfg[i], *b = &old->device_cfg[i];
        differ = a->present != b->present ||
                 (a->present && (a->given != b->given ||
                                 strcmp(a->name, b->name) ||
                                 strcmp(a->parent, b->parent) ||
                                 a->hbm_capacity != b->hbm_capacity ||
                                 a->hbm_reserve != b->hbm_reserve ||
                                 a->h2d_gbps != b->h2d_gbps ||
                                 a->d2h_gbps != b->d2h_gbps ||
                                 a->latency_us != b->latency_us ||
                                 a->duplex != b->duplex));
    }
    nc->n_links = old->n_links;
    memcpy(nc->links, old->links, sizeof(nc->links));
    memcpy(nc->device_cfg, old->device_cfg, sizeof(nc->device_cfg));
    return differ;
}

/* A "[section]" line (p starts with '['; trailing comment allowed). */
static int ini_section(srv_config *c, ini_reader *r, char *p, char *err,
                       size_t errlen)
{
    char *end = strchr(p, ']');
    char *tail = end ? end + 1 : NULL;
    if (tail)
        trim(&tail);
    if (!end || (tail && *tail && *tail != '#' && *tail != ';'))
        return ini_fail(r, err, errlen, "malformed section header '%s'", p);
    *end = '\0';
    char *name = p + 1;
    trim(&name);
    r->link = r->device = -1;
    char *arg = name + strcspn(name, " \t");
    if (*arg) {
        *arg++ = '\0';
        trim(&arg);
        return ini_node_section(c, r, name, arg, err, errlen);
    }
    if (strcmp(name, "link") == 0 || strcmp(name, "device") == 0)
        return ini_fail(r, err, errlen, "[%s] needs a %s: [%s %s]", name,
                        name[0] == 'l' ? "name" : "number", name,
                        name[0] == 'l' ? "sw0" : "0");
    if (!known_section(name))
        return ini_fail(r, err, errlen, "unknown section [%s] (known: "
                        "server, log, ddr, flash, devices, node, planning, "
                        "metrics, [link NAME], [device N])", name);
    snprintf(r->section, sizeof(r->section), "%s", name);
    return 0;
}

/* Split "key = value" in place: the value unquoted, or cut at a comment
 * that follows whitespace. */
static int ini_key_value(const ini_reader *r, char *p, char **ret_key,
                         char **ret_value, char *err, size_t errlen)
{
    char *eq = strchr(p, '=');
    if (!eq)
        return ini_fail(r, err, errlen, "expected 'key = value', got '%s'",
                        p);
    *eq = '\0';
    char *key = p, *value = eq + 1;
    trim(&key);
    trim(&value);
    if (*value == '"') {
        char *close = strchr(value + 1, '"');
        char *tail = close ? close + 1 : NULL;
        if (tail)
            trim(&tail);
        if (!close || (*tail && *tail != '#' && *tail != ';'))
            return ini_fail(r, err, errlen,
                            "unterminated quoted value for '%s'", key);
        *close = '\0';
        value++;
    } else {
        /* A comment after the value needs whitespace before it. */
        for (char *q = value; *q; q++)
            if ((*q == '#' || *q == ';') && q > value &&
                isspace((unsigned char)q[-1])) {
                *q = '\0';
                trim(&value);
                break;
            }
    }
    *ret_key = key;
    *ret_value = value;
    return 0;
}

/* Set key of the current section to value, once per file. */
static int ini_assign(srv_config *c, ini_reader *r, const char *key,
                      const char *value, char *err, size_t errlen)
{
    if (!*r->section)
        return ini_fail(r, err, errlen,
                        "key '%s' is outside of any [section]", key);
    if (r->link >= 0 || r->device >= 0)
        return ini_node_assign(c, r, key, value, err, errlen);
    int row = find_row(r->section, key);
    if (row < 0)
        return ini_fail(r, err, errlen, "unknown key '%s' in section [%s]",
                        key, r->section);
    if (r->first_line[row])
        return ini_fail(r, err, errlen, "[%s] %s is set twice (first at "
                        "line %d)", r->section, key, r->first_line[row]);
    r->first_line[row] = (int)r->lineno;
    char why[512];
    int rc = set_row(c, &rows[row], value, why, sizeof(why));
    if (rc == -ENOMEM)
        return ho_errf(err, errlen, rc, "%s:%u: out of memory", r->path,
                       r->lineno);
    if (rc < 0)
        return ini_fail(r, err, errlen, "[%s] %s: %s", r->section, key, why);
    return 0;
}

/* One line of the file (without its newline). */
static int ini_line(srv_config *c, ini_reader *r, char *line, char *err,
                    size_t errlen)
{
    char *p = line;
    trim(&p);
    if (!*p || *p == '#' || *p == ';')
        return 0;
    if (*p == '[')
        return ini_section(c, r, p, err, errlen);
    char *key = NULL, *value = NULL;
    int rc = ini_key_value(r, p, &key, &value, err, errlen);
    if (rc == 0)
        rc = ini_assign(c, r, key, value, err, errlen);
    return rc;
}

/* What a non-regular file is, for the refusal. */
static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

/* The whole of a config file, NUL-terminated, in *ret_buf (caller frees),
 * *ret_len bytes.  Only a regular file of at most SRV_MAX_CONFIG_FILE
 * bytes is read: it is opened with O_NONBLOCK and fstat'ed before any
 * read, so a FIFO or a device (/dev/zero) is refused at once instead of
 * blocking or feeding the parser forever (also on SIGHUP, which reads on
 * the loop); a file growing past the limit while read is refused too. */
static int read_whole_file(const char *path, char **ret_buf, size_t *ret_len,
                           char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return ho_errf(err, errlen, -e, "%s: %s", path, strerror(e));
    }
    struct stat st;
    char *buf = NULL;
    size_t len = 0;
    int rc = 0;
    if (fstat(fd, &st) < 0) {
        rc = ho_errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = ho_errf(err, errlen, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
                     "%s: is %s; a config file must be a regular file", path,
                     file_kind(st.st_mode));
    } else if (st.st_size > (off_t)SRV_MAX_CONFIG_FILE) {
        rc = ho_errf(err, errlen, HO_E_BAD_CONFIG, "%s: file is larger than "
                     "%u bytes", path, SRV_MAX_CONFIG_FILE);
    } else if (!(buf = malloc(SRV_MAX_CONFIG_FILE + 2))) {
        rc = -ENOMEM;
    }
    while (rc == 0) {
        ssize_t n = read(fd, buf + len, SRV_MAX_CONFIG_FILE + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = ho_errf(err, errlen, -EIO, "%s: read error: %s", path,
                         strerror(errno));
        else if (n == 0)
            break;
        else if ((len += (size_t)n) > SRV_MAX_CONFIG_FILE)
            rc = ho_errf(err, errlen, HO_E_BAD_CONFIG, "%s: file is larger "
                         "than %u bytes", path, SRV_MAX_CONFIG_FILE);
    }
    close(fd);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

int srv_config_load_file(srv_config *c, const char *path, char *err,
                         size_t errlen)
{
    ini_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return ho_errf(err, errlen, -ENOMEM, "%s: out of memory", path);
    char *text = NULL;
    size_t len = 0;
    int rc = read_whole_file(path, &text, &len, err, errlen);
    if (rc < 0) {
        free(r);
        return rc;
    }
    r->path = path;
    r->link = r->device = -1;
    /* Line by line, by length (a NUL byte is in the data, not an end). */
    char *p = text, *end = text + len;
    while (rc == 0 && p < end) {
        r->lineno++;
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char *nul = memchr(p, '\0', n);
        if (n > SRV_MAX_CONFIG_LINE)
            rc = ini_fail(r, err, errlen, "line is longer than %u bytes",
                          SRV_MAX_CONFIG_LINE);
        else if (nul)
            rc = ini_fail(r, err, errlen, "NUL byte at column %zu (not a "
                          "text file?)", (size_t)(nul - p) + 1);
        else {
            p[n] = '\0'; /* the newline, or the NUL after the text */
            rc = ini_line(c, r, p, err, errlen);
        }
        p += n + 1;
    }
    free(r);
    free(text);
    return rc;
}

/* ------------------------------------------------------------------ checks */

uint64_t srv_config_hbm_capacity(const srv_config *c, uint32_t i)
{
    if (i < SRV_MAX_DEVICES && (c->device_cfg[i].given & SRV_NODE_KEY_HBM))
        return c->device_cfg[i].hbm_capacity;
    if (c->n_hbm_capacity == 0)
        return 0;
    return c->n_hbm_capacity == 1 ? c->hbm_capacity[0]
           : i < c->n_hbm_capacity ? c->hbm_capacity[i] : 0;
}

uint64_t srv_config_hbm_reserve(const srv_config *c, uint32_t i)
{
    if (i < SRV_MAX_DEVICES && (c->device_cfg[i].given & SRV_NODE_KEY_RESERVE))
        return c->device_cfg[i].hbm_reserve;
    if (c->n_hbm_reserve == 0)
        return 0;
    return c->n_hbm_reserve == 1 ? c->hbm_reserve[0]
           : i < c->n_hbm_reserve ? c->hbm_reserve[i] : 0;
}

void srv_config_device_name(const srv_config *c, uint32_t i, char *buf,
                            size_t len)
{
    if (i < SRV_MAX_DEVICES && (c->device_cfg[i].given & SRV_NODE_KEY_NAME))
        snprintf(buf, len, "%s", c->device_cfg[i].name);
    else if (i < c->n_device_names)
        snprintf(buf, len, "%s", c->device_names[i]);
    else
        snprintf(buf, len, "emu%u", i);
}

/* [ddr]: alignment a power of two within the capacity; huge pages need
 * both to be multiples of 2 MiB. */
static int validate_ddr(const srv_config *c, char *err, size_t errlen)
{
    char a[64];
    if (c->ddr_alignment & (c->ddr_alignment - 1)) {
        size_text(c->ddr_alignment, a, sizeof(a));
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "[ddr] alignment %s is not a power of two", a);
    }
    if (c->ddr_capacity < c->ddr_alignment)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "[ddr] capacity is smaller than [ddr] alignment");
    if (!c->ddr_hugepages)
        return 0;
    if (c->ddr_alignment < 2 * MiB) {
        size_text(c->ddr_alignment, a, sizeof(a));
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[ddr] hugepages = yes "
                       "needs [ddr] alignment of at least 2M (it is %s)", a);
    }
    if (c->ddr_capacity % (2 * MiB)) {
        size_text(c->ddr_capacity, a, sizeof(a));
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[ddr] hugepages = yes "
                       "needs [ddr] capacity to be a multiple of 2M (it is "
                       "%s)", a);
    }
    return 0;
}

/* [server] output (per connection and in total) and partial frames above
 * the frame size, a socket path that fits; [flash]
 * paths distinct. */
static int validate_server_flash(const srv_config *c, char *err,
                                 size_t errlen)
{
    char a[64], b[64];
    if (c->max_output < c->max_frame) {
        size_text(c->max_output, a, sizeof(a));
        size_text(c->max_frame, b, sizeof(b));
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[server] max_output %s "
                       "is below [server] max_frame %s", a, b);
    }
    if (c->max_output_total < c->max_output) {
        size_text(c->max_output_total, a, sizeof(a));
        size_text(c->max_output, b, sizeof(b));
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[server] "
                       "max_output_total %s is below [server] max_output %s",
                       a, b);
    }
    if (c->max_partial < c->max_frame) {
        size_text(c->max_partial, a, sizeof(a));
        size_text(c->max_frame, b, sizeof(b));
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[server] "
                       "max_partial_frames %s is below [server] max_frame %s "
                       "(a largest frame could never arrive)", a, b);
    }
    if (strlen(c->socket) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                       "[server] socket path is too long");
    for (uint32_t i = 0; i < c->n_flash; i++)
        for (uint32_t j = i + 1; j < c->n_flash; j++)
            if (strcmp(c->flash_paths[i], c->flash_paths[j]) == 0)
                return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                               "[flash] paths lists '%s' twice",
                               c->flash_paths[i]);
    return 0;
}

/* [devices]: list lengths matching the count, reserves below capacities,
 * distinct names. */
static int validate_devices(const srv_config *c, char *err, size_t errlen)
{
    char a[64], b[64];
    if (c->n_hbm_capacity != 1 && c->n_hbm_capacity != c->n_devices)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[devices] hbm_capacity "
                       "has %u values but [devices] count is %u (give one "
                       "value for all or one per device)", c->n_hbm_capacity,
                       c->n_devices);
    if (c->n_hbm_reserve != 1 && c->n_hbm_reserve != c->n_devices)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[devices] hbm_reserve "
                       "has %u values but [devices] count is %u (give one "
                       "value for all or one per device)", c->n_hbm_reserve,
                       c->n_devices);
    if (c->n_device_names != 0 && c->n_device_names != c->n_devices)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[devices] names has %u "
                       "names but [devices] count is %u", c->n_device_names,
                       c->n_devices);
    for (uint32_t i = 0; i < c->n_devices; i++) {
        uint64_t cap = srv_config_hbm_capacity(c, i);
        uint64_t res = srv_config_hbm_reserve(c, i);
        if (res >= cap) {
            size_text(res, a, sizeof(a));
            size_text(cap, b, sizeof(b));
            return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[devices] "
                           "hbm_reserve %s of device %u is not below its "
                           "hbm_capacity %s", a, i, b);
        }
        char ni[SRV_DEVICE_NAME], nj[SRV_DEVICE_NAME];
        srv_config_device_name(c, i, ni, sizeof(ni));
        for (uint32_t j = i + 1; j < c->n_devices; j++) {
            srv_config_device_name(c, j, nj, sizeof(nj));
            bool listed = !(c->device_cfg[i].given & SRV_NODE_KEY_NAME) &&
                          !(c->device_cfg[j].given & SRV_NODE_KEY_NAME);
            if (strcmp(ni, nj) == 0 && listed)
                return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                               "[devices] names lists '%s' twice", ni);
            if (strcmp(ni, nj) == 0)
                return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                               "devices %u and %u are both named '%s' "
                               "([devices] names or [device N] name)", i, j,
                               ni);
        }
    }
    return 0;
}

static const srv_link_cfg *find_link(const srv_config *c, const char *name)
{
    for (uint32_t i = 0; i < c->n_links; i++)
        if (strcmp(c->links[i].name, name) == 0)
            return &c->links[i];
    return NULL;
}

/* [node], [link NAME], [device N]: discover is a known word; every link
 * has both figures, a parent among the links but one (the root); device
 * sections are within [devices] count and name known links.  Cycles are
 * found when the tree is built (daemon/topology.h). */
static int validate_node(const srv_config *c, char *err, size_t errlen)
{
    if (strcmp(c->node_discover, "auto") && strcmp(c->node_discover, "sysfs") &&
        strcmp(c->node_discover, "no"))
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[node] discover '%s' is "
                       "not one of auto, sysfs, no", c->node_discover);
    const srv_link_cfg *root = NULL;
    for (uint32_t i = 0; i < c->n_links; i++) {
        const srv_link_cfg *l = &c->links[i];
        if (!(l->given & SRV_NODE_KEY_H2D) || !(l->given & SRV_NODE_KEY_D2H))
            return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[link %s] (line %u) "
                           "has no %s (give gbps, or h2d_gbps and d2h_gbps)",
                           l->name, l->line,
                           (l->given & SRV_NODE_KEY_H2D) ? "d2h_gbps"
                                                         : "h2d_gbps");
        if (!l->parent[0]) {
            if (root)
                return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[link %s] (line "
                               "%u) has no parent, and [link %s] is already "
                               "the root: give one of them a parent",
                               l->name, l->line, root->name);
            root = l;
        } else if (!find_link(c, l->parent)) {
            return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[link %s] parent "
                           "'%s' is not a [link] section", l->name, l->parent);
        }
    }
    if (c->n_links && !root)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "every [link] has a "
                       "parent: one link, the root (the host), must have "
                       "none");
    for (uint32_t i = 0; i < SRV_MAX_DEVICES; i++) {
        const srv_device_cfg *d = &c->device_cfg[i];
        if (!d->present)
            continue;
        if (i >= c->n_devices)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[device %u] (line "
                           "%u): [devices] count is %u (devices 0..%d)", i,
                           d->line, c->n_devices, (int)c->n_devices - 1);
        if (d->parent[0] && !find_link(c, d->parent))
            return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[device %u] parent "
                           "'%s' is not a [link] section%s", i, d->parent,
                           c->n_links ? "" : " (there are none)");
    }
    return 0;
}

static int validate_planner(const srv_config *c, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(planner_names) / sizeof(planner_names[0]);
         i++)
        if (strcmp(c->planner, planner_names[i]) == 0)
            return 0;
    return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[planning] planner '%s' is "
                   "not one of hoplan, none, seed-greedy, ms-distance, "
                   "reactive-lru, oracle", c->planner);
}

int srv_config_validate(const srv_config *c, char *err, size_t errlen)
{
    int rc = validate_ddr(c, err, errlen);
    if (rc == 0)
        rc = validate_server_flash(c, err, errlen);
    if (rc == 0)
        rc = validate_devices(c, err, errlen);
    if (rc == 0)
        rc = validate_planner(c, err, errlen);
    if (rc == 0)
        rc = validate_node(c, err, errlen);
    return rc;
}

/* ------------------------------------------------------------------ argv */

static int find_flag(const char *name, size_t len)
{
    for (int i = 0; i < N_ROWS; i++)
        if (strlen(rows[i].flag) == len &&
            strncmp(rows[i].flag, name, len) == 0)
            return i;
    return -1;
}

int srv_cmdline_parse(int argc, char **argv, srv_cmdline *ret_cl, char *err,
                      size_t errlen)
{
    srv_cmdline cl;
    memset(&cl, 0, sizeof(cl));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cl.help = true;
            continue;
        }
        if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            cl.version = true;
            continue;
        }
        if (strcmp(a, "--check-config") == 0) {
            cl.check_config = true;
            continue;
        }
        if (strcmp(a, "--print-config") == 0) {
            cl.print_config = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || !a[2])
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "unexpected argument '%s' (see --help)", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const char *value = eq ? eq + 1 : NULL;
        bool is_config = len == 6 && strncmp(name, "config", 6) == 0;
        int row = is_config ? -1 : find_flag(name, len);
        if (!is_config && row < 0)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "unknown option '--%.*s' (see --help)", (int)len,
                           name);
        if (!value) {
            bool is_bool = row >= 0 && rows[row].type == T_BOOL;
            if (is_bool &&
                (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0))
                value = "yes";
            else if (i + 1 < argc)
                value = argv[++i];
            else {
                return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                               "option '%s' needs a value", a);
            }
        }
        if (is_config) {
            if (!*value)
                return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                               "option '--config' needs a file name");
            cl.config_path = value;
            continue;
        }
        if (cl.n_settings >= (int)(sizeof(cl.settings) /
                                     sizeof(cl.settings[0])))
            return ho_errf(err, errlen, HO_E_BAD_CONFIG, "too many options");
        cl.settings[cl.n_settings].row = row;
        cl.settings[cl.n_settings].value = value;
        cl.settings[cl.n_settings].flag = rows[row].flag;
        cl.n_settings++;
    }
    *ret_cl = cl;
    return 0;
}

/* Make every flash path absolute, relative to the working directory, so
 * that tier names ("flash:/path") mean the same to every client: leading
 * "./" segments are dropped, nothing else is rewritten (the file may not
 * exist yet).  0, -ENOMEM, or HO_E_BAD_CONFIG when the result is too long
 * or the working directory is unknown. */
static int absolute_flash_paths(srv_config *c, char *err, size_t errlen)
{
    char cwd[PATH_MAX];
    bool have_cwd = false;
    for (uint32_t i = 0; i < c->n_flash; i++) {
        const char *p = c->flash_paths[i];
        if (p[0] == '/')
            continue;
        if (!have_cwd && !getcwd(cwd, sizeof(cwd)))
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "[flash] path '%s' is relative and the working "
                           "directory is unknown: %s",
                           p, strerror(errno));
        have_cwd = true;
        while (p[0] == '.' && p[1] == '/') {
            p += 2;
            while (*p == '/')
                p++;
        }
        size_t need = strlen(cwd) + 1 + strlen(p) + 1;
        if (need > PATH_MAX)
            return ho_errf(err, errlen, HO_E_BAD_CONFIG,
                           "[flash] path '%s' is too long once made "
                           "absolute",
                           c->flash_paths[i]);
        char *abs = malloc(need);
        if (!abs)
            return ho_errf(err, errlen, -ENOMEM, "out of memory");
        size_t cl = strlen(cwd), pl = strlen(p);
        memcpy(abs, cwd, cl);
        if (cl == 0 || cwd[cl - 1] != '/')
            abs[cl++] = '/';
        memcpy(abs + cl, p, pl + 1);
        free(c->flash_paths[i]);
        c->flash_paths[i] = abs;
    }
    return 0;
}

int srv_config_build(const srv_cmdline *cl, srv_config *ret_cfg, char *err,
                     size_t errlen)
{
    srv_config c;
    int rc = srv_config_init(&c);
    if (rc < 0)
        return ho_errf(err, errlen, rc, "out of memory");
    if (cl->config_path) {
        rc = srv_config_load_file(&c, cl->config_path, err, errlen);
        if (rc < 0)
            goto fail;
        char *abs = realpath(cl->config_path, NULL);
        c.config_path = abs ? abs : strdup(cl->config_path);
        if (!c.config_path) {
            rc = -ENOMEM;
            goto fail;
        }
    }
    for (int i = 0; i < cl->n_settings; i++) {
        const cfg_row *r = &rows[cl->settings[i].row];
        char why[512];
        rc = set_row(&c, r, cl->settings[i].value, why, sizeof(why));
        if (rc < 0) {
            ho_errf(err, errlen, 0, "--%s: %s", r->flag, why);
            goto fail;
        }
    }
    rc = absolute_flash_paths(&c, err, errlen);
    if (rc < 0)
        goto fail;
    rc = srv_config_validate(&c, err, errlen);
    if (rc < 0)
        goto fail;
    *ret_cfg = c;
    return 0;
fail:
    srv_config_done(&c);
    return rc;
}

/* ------------------------------------------------------------------ output */

static void bounds_line(const cfg_row *r, char *buf, size_t len);
static const char *type_word(cfg_type t);

const char *srv_config_row_help(int row) { return rows[row].help; }
const char *srv_config_row_type(int row) { return type_word(rows[row].type); }
const char *srv_config_row_default(int row) { return rows[row].def; }

void srv_config_row_range(int row, char *buf, size_t len)
{
    bounds_line(&rows[row], buf, len);
}

static const char *type_word(cfg_type t)
{
    switch (t) {
    case T_SIZE: return "SIZE";
    case T_U32:
    case T_I32: return "N";
    case T_BOOL: return "BOOL";
    case T_STR: return "TEXT";
    case T_MODE: return "MODE";
    case T_LEVEL: return "LEVEL";
    case T_PATHLIST: return "PATH[,PATH]";
    case T_SIZELIST: return "SIZE[,SIZE]";
    case T_NAMELIST: return "NAME[,NAME]";
    case T_GBPS: return "GBPS";
    case T_REAL: return "NUMBER";
    }
    return "VALUE";
}

static void bounds_line(const cfg_row *r, char *buf, size_t len)
{
    char a[64], b[64];
    switch (r->type) {
    case T_SIZE:
    case T_SIZELIST:
        size_text((uint64_t)r->min, a, sizeof(a));
        size_text((uint64_t)r->max, b, sizeof(b));
        snprintf(buf, len, "%s..%s", a, b);
        return;
    case T_U32:
    case T_I32:
    case T_REAL:
        bound_text(r->type, r->min, a, sizeof(a));
        bound_text(r->type, r->max, b, sizeof(b));
        snprintf(buf, len, "%s..%s", a, b);
        return;
    case T_GBPS:
        bound_text(r->type, r->max, b, sizeof(b));
        snprintf(buf, len, "(0..%s]", b);
        return;
    case T_MODE:
        snprintf(buf, len, "0000..0777");
        return;
    default:
        buf[0] = '\0';
    }
}

void srv_config_write_help(const char *prog, FILE *out)
{
    fprintf(out,
            "Usage: %s [--config FILE] [--check-config] [--print-config] "
            "[OPTION VALUE]...\n"
            "HyperOffload node memory-tiering daemon.\n\n"
            "  --config FILE      read settings from an INI file (flags "
            "override it)\n"
            "  --check-config     validate the settings and exit (0 valid, 1 "
            "not)\n"
            "  --print-config     print the effective settings as a config "
            "file and exit\n"
            "  --help, --version\n\n"
            "Settings ([section] key in a config file; * = applied on "
            "SIGHUP):\n",
            prog);
    for (int i = 0; i < N_ROWS; i++) {
        const cfg_row *r = &rows[i];
        char opt[64], bounds[160];
        if (r->flags & HIDDEN)
            continue;
        snprintf(opt, sizeof(opt), "--%s %s", r->flag, type_word(r->type));
        bounds_line(r, bounds, sizeof(bounds));
        fprintf(out, "  %-34s %s%s\n", opt, (r->flags & RELOAD) ? "* " : "  ",
                r->help);
        fprintf(out, "  %-34s   [%s] %s, default '%s'%s%s\n", "", r->section,
                r->key, r->def, bounds[0] ? ", " : "", bounds);
    }
}

static void write_real(FILE *out, const char *pfx, const char *key, double v)
{
    char buf[64];
    real_text(v, buf, sizeof(buf));
    fprintf(out, "%s%s = %s\n", pfx, key, buf);
}

/* The [link NAME] and [device N] sections that are set. */
static void write_node_sections(const srv_config *c, bool commented,
                                FILE *out)
{
    const char *pfx = commented ? "#" : "";
    for (uint32_t i = 0; i < c->n_links; i++) {
        const srv_link_cfg *l = &c->links[i];
        fprintf(out, "\n%s[link %s]\n", pfx, l->name);
        if (l->parent[0])
            fprintf(out, "%sparent = %s\n", pfx, l->parent);
        write_real(out, pfx, "h2d_gbps", l->h2d_gbps);
        write_real(out, pfx, "d2h_gbps", l->d2h_gbps);
        fprintf(out, "%sduplex = %s\n", pfx, l->duplex ? "yes" : "no");
    }
    for (uint32_t i = 0; i < SRV_MAX_DEVICES; i++) {
        const srv_device_cfg *d = &c->device_cfg[i];
        char a[64];
        if (!d->present)
            continue;
        fprintf(out, "\n%s[device %u]\n", pfx, i);
        if (d->given & SRV_NODE_KEY_NAME)
            fprintf(out, "%sname = %s\n", pfx, d->name);
        if (d->given & SRV_NODE_KEY_PARENT)
            fprintf(out, "%sparent = %s\n", pfx, d->parent);
        if (d->given & SRV_NODE_KEY_HBM) {
            size_text(d->hbm_capacity, a, sizeof(a));
            fprintf(out, "%shbm_capacity = %s\n", pfx, a);
        }
        if (d->given & SRV_NODE_KEY_RESERVE) {
            size_text(d->hbm_reserve, a, sizeof(a));
            fprintf(out, "%shbm_reserve = %s\n", pfx, a);
        }
        if (d->given & SRV_NODE_KEY_H2D)
            write_real(out, pfx, "h2d_gbps", d->h2d_gbps);
        if (d->given & SRV_NODE_KEY_D2H)
            write_real(out, pfx, "d2h_gbps", d->d2h_gbps);
        if (d->given & SRV_NODE_KEY_LATENCY)
            write_real(out, pfx, "latency_us", d->latency_us);
        if (d->given & SRV_NODE_KEY_DUPLEX)
            fprintf(out, "%sduplex = %s\n", pfx, d->duplex ? "yes" : "no");
    }
}

void srv_config_write_ini(const srv_config *c, bool commented, FILE *out)
{
    fprintf(out, "# hyperoffloadd configuration.  Every setting is shown with "
                 "its default;\n# flags (--section-key style, see "
                 "hyperoffloadd --help) override this file.\n"
                 "# Settings marked 'reload' are applied on SIGHUP, the "
                 "others need a restart.\n");
    for (int s = 0; s < N_SECTIONS; s++) {
        bool header = false;
        for (int i = 0; i < N_ROWS; i++) {
            const cfg_row *r = &rows[i];
            if (strcmp(r->section, sections[s]) != 0 || (r->flags & HIDDEN))
                continue;
            if (!header)
                fprintf(out, "\n[%s]\n", sections[s]);
            header = true;
            char bounds[160], val[SRV_MAX_FLASH * 256];
            bounds_line(r, bounds, sizeof(bounds));
            srv_config_format(c, i, val, sizeof(val));
            fprintf(out, "# %s.\n# flag --%s%s%s; %s\n", r->help, r->flag,
                    bounds[0] ? "; range " : "", bounds,
                    (r->flags & RELOAD) ? "reload" : "restart");
            fprintf(out, "%s%s = %s\n", commented ? "#" : "", r->key, val);
        }
    }
    write_node_sections(c, commented, out);
}
