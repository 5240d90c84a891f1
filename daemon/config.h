/*
 * daemon/config.h - hyperoffloadd's settings.
 *
 * Every setting is one row of a table (config.c), built by a macro per
 * type (SIZE_ROW, U32_ROW, BOOL_ROW, ...): section, key, flag, field,
 * bounds, default (as text, parsed by the same code as a file value),
 * whether a running daemon can apply a new value on SIGHUP, whether the
 * row is hidden, and a help sentence.  The help text (--help), the example
 * config and the docs are generated from / checked against that table.
 * Hidden rows ([debug]: knobs for measurements) are settable in a file
 * and as flags like any other but are left out of --help, the example
 * config and --print-config.
 *
 * Sources, later ones win: the embedded defaults, the INI file given with
 * --config, then the command-line flags.  A setting given twice in the same
 * file is an error; a flag given twice takes the last value.
 *
 * INI syntax: "[section]", "key = value", blank lines, whole-line comments
 * starting with '#' or ';', and trailing comments introduced by " #" or
 * " ;".  Values may be quoted with "..." (no escapes).  Unknown sections and
 * keys are errors.  Sizes accept IEC suffixes: K, M, G, T, P (factor 1024),
 * also written KiB, MiB, ...; a plain number is bytes.
 *
 * Errors are written into a caller buffer naming the place ("FILE:LINE: "
 * or "--flag: "), the setting ("[ddr] capacity"), the value and the bound
 * that was violated.  Nothing here logs.
 */
#ifndef HO_DAEMON_CONFIG_H
#define HO_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/srv_limits.h"
#include "hyperoffload/size.h"

/* One [link NAME] section (the node description, NODE.md §1). */
typedef struct srv_link_cfg {
    char name[SRV_LINK_NAME];
    char parent[SRV_LINK_NAME];   /* "": the root link */
    double h2d_gbps, d2h_gbps;    /* 0: not given (an error at validate) */
    bool duplex;                  /* default yes */
    unsigned given;               /* keys set, for "set twice" */
    unsigned line;                /* where the section starts */
} srv_link_cfg;

/* One [device N] section: overrides of device N's figures. */
typedef struct srv_device_cfg {
    bool present;
    unsigned given;               /* keys set */
    unsigned line;
    char name[SRV_DEVICE_NAME];   /* "": [devices] names / emu<N> */
    char parent[SRV_LINK_NAME];   /* "": the default rule (topology.h) */
    uint64_t hbm_capacity, hbm_reserve; /* when given */
    double h2d_gbps, d2h_gbps, latency_us; /* when given */
    bool duplex;                  /* when given */
} srv_device_cfg;

/* Bits of srv_device_cfg.given / srv_link_cfg.given. */
enum {
    SRV_NODE_KEY_NAME = 1u << 0,
    SRV_NODE_KEY_PARENT = 1u << 1,
    SRV_NODE_KEY_HBM = 1u << 2,
    SRV_NODE_KEY_RESERVE = 1u << 3,
    SRV_NODE_KEY_H2D = 1u << 4,
    SRV_NODE_KEY_D2H = 1u << 5,
    SRV_NODE_KEY_LATENCY = 1u << 6,
    SRV_NODE_KEY_DUPLEX = 1u << 7,
};

typedef struct srv_config {
    /* [server] */
    char *socket;                 /* owned */
    uint32_t socket_mode;
    char *state_dir;              /* owned */
    uint32_t max_connections;
    uint32_t max_connections_per_uid; /* non-admin peers, each uid */
    uint64_t max_frame;
    uint64_t max_output;
    uint64_t max_output_total;    /* all connections together */
    uint64_t max_partial;         /* partly received frames, all peers */
    uint32_t handshake_timeout_s;
    uint32_t read_timeout_s;      /* a frame from first to last byte */
    uint32_t idle_timeout_s;      /* READY without a session; 0 never */
    uint32_t max_extents;         /* per session */
    char *admin_group;            /* owned; "" = only root is admin */
    uint32_t admin_reserve;       /* of max_connections, admins only */
    bool watchdog;
    uint32_t drain_timeout_s;
    /* [log] */
    int log_level;                /* srv_log_level */
    /* [ddr] */
    uint64_t ddr_capacity;
    int32_t ddr_numa_node;        /* -1 none */
    bool ddr_lock;
    bool ddr_hugepages;
    uint64_t ddr_alignment;
    uint32_t stage_wait_s;        /* a client's wait for a host copy */
    /* [flash] */
    uint32_t n_flash;
    char *flash_paths[SRV_MAX_FLASH]; /* owned */
    uint64_t flash_capacity;      /* per path */
    bool flash_direct;
    bool flash_persist;           /* keep files and data at a clean exit */
    uint32_t flash_discard_delay; /* s before a freed range is punched */
    /* [devices] */
    uint32_t n_devices;
    uint32_t n_device_names;      /* 0: generated "emu<i>" */
    char device_names[SRV_MAX_DEVICES][SRV_DEVICE_NAME];
    uint32_t n_hbm_capacity;      /* 1 (applies to all) or n_devices */
    uint64_t hbm_capacity[SRV_MAX_DEVICES];
    uint32_t n_hbm_reserve;
    uint64_t hbm_reserve[SRV_MAX_DEVICES];
    /* [node]: the node description (daemon/topology.h) */
    char *node_discover;          /* owned; "auto", "sysfs" or "no" */
    char *sysfs_root;             /* owned; "/sys" */
    uint32_t devices_per_switch;  /* emulated default; 0: no switches */
    double device_gbps;           /* emulated default figures */
    double switch_gbps;
    double host_gbps;
    double device_latency_us;
    bool pace_links;              /* host backend paces copies (links.h) */
    double flash_read_gbps, flash_write_gbps; /* [flash] figures */
    /* [link NAME] and [device N] sections (files only) */
    uint32_t n_links;
    srv_link_cfg links[SRV_MAX_LINKS];
    srv_device_cfg device_cfg[SRV_MAX_DEVICES];
    /* [planning] */
    char *planner;                /* owned */
    uint32_t plan_cache;          /* entries */
    uint64_t plan_cache_bytes;    /* packed schedules in the cache */
    uint64_t retained_per_session; /* plans a session keeps, bytes */
    uint64_t retained_total;      /* plans all sessions keep, bytes */
    /* [metrics] */
    char *metrics_textfile;       /* owned; "" = no textfile */
    uint32_t metrics_interval;    /* seconds between textfile writes */
    /* [debug]: hidden rows, for measurements */
    bool debug_spill_via_fd;      /* spills write through the memfd */
    uint32_t debug_move_parts;    /* 0, or parts per move below the max */

    char *config_path;            /* owned; NULL: embedded default */
} srv_config;

/* What the command line asked for besides settings. */
typedef struct srv_cmdline {
    const char *config_path;      /* --config FILE (points into argv) */
    bool check_config;            /* --check-config */
    bool print_config;            /* --print-config */
    bool help;                    /* --help / -h */
    bool version;                 /* --version / -V */
    int n_settings;               /* flags that set a setting */
    struct {
        int row;                  /* index in the table */
        const char *value;        /* points into argv */
        const char *flag;         /* as written, for messages */
    } settings[SRV_CMDLINE_SETTINGS_MAX];
} srv_cmdline;

/* Fill *c with the embedded defaults.  0 or -ENOMEM (then *c holds no
 * allocation).  Release with srv_config_done(). */
int srv_config_init(srv_config *c);
/* Free the strings of *c (safe on a zeroed or half-built config). */
void srv_config_done(srv_config *c);

/* Set one setting from text.  `section`/`key` name the row.  -ENOENT for
 * an unknown section or key (err says which), HO_E_BAD_CONFIG for a value
 * that does not parse or violates a bound (err names value and bound),
 * -ENOMEM.  Leaves the setting unchanged on failure. */
int srv_config_set(srv_config *c, const char *section, const char *key,
                   const char *value, char *err, size_t errlen);

/* Parse an INI file into *c (settings not in the file keep their value).
 * Only a regular file is read (opened with O_NONBLOCK and checked with
 * fstat before any read, so a FIFO or a device never blocks the caller:
 * -EISDIR for a directory, -EINVAL for a FIFO, device or socket, with
 * "FILE: is a FIFO; ..."); a file above SRV_MAX_CONFIG_FILE bytes, a line
 * above SRV_MAX_CONFIG_LINE and a NUL byte ("FILE:LINE: NUL byte at
 * column N") are refused.  Errors: -errno for the file itself
 * ("FILE: No such file or directory"), HO_E_BAD_CONFIG with
 * "FILE:LINE: ..." for contents.  On failure *c may be partly updated: load
 * into a scratch config and keep the old one when that matters. */
int srv_config_load_file(srv_config *c, const char *path, char *err,
                         size_t errlen);

/* Cross-setting checks (alignment a power of two, list lengths matching the
 * device count, hugepage alignment, reserves below capacities, distinct
 * flash paths and device names, socket path length, max_output >=
 * max_frame, max_output_total >= max_output, max_partial_frames >=
 * max_frame, planner name).  0 or HO_E_BAD_CONFIG with err. */
int srv_config_validate(const srv_config *c, char *err, size_t errlen);

/* Parse argv (argv[0] is the program).  Flags: every setting as
 * "--flag VALUE" or "--flag=VALUE" (booleans also bare "--flag"), and
 * --config FILE, --check-config, --print-config, --help, --version.
 * Unknown flags, missing values and stray arguments are HO_E_BAD_CONFIG
 * with err (*ret_cl untouched).  Values are not parsed here
 * (srv_config_build does). */
int srv_cmdline_parse(int argc, char **argv, srv_cmdline *ret_cl, char *err,
                      size_t errlen);

/* Build the effective config: defaults, then cl->config_path (if any),
 * then cl's settings; relative flash paths are made absolute (relative to
 * the working directory, leading "./" dropped); then srv_config_validate().
 * On success *ret_cfg is set (release with srv_config_done) and 0 is
 * returned; on failure *ret_cfg is untouched and err says why. */
int srv_config_build(const srv_cmdline *cl, srv_config *ret_cfg, char *err,
                     size_t errlen);

/* Number of rows and their names ("ddr.capacity"). */
int srv_config_rows(void);
const char *srv_config_row_name(int row);
const char *srv_config_row_flag(int row);
bool srv_config_row_runtime(int row);
/* A debug knob left out of the help and the generated config. */
bool srv_config_row_hidden(int row);
const char *srv_config_row_help(int row);
/* Value type word ("SIZE", "N", "BOOL", ...) and range ("4M..64T", "" when
 * unbounded) of a row, for documentation. */
const char *srv_config_row_type(int row);
void srv_config_row_range(int row, char *buf, size_t len);
const char *srv_config_row_default(int row);

/* Format row's value of c as config text into buf ("1G", "yes", "a,b").
 * Sizes are written with the largest exact IEC suffix. */
void srv_config_format(const srv_config *c, int row, char *buf, size_t len);

/* Copy one row's value from src into dst (used to keep restart-only
 * settings at their running value on reload).  0 or -ENOMEM. */
int srv_config_copy_row(srv_config *dst, const srv_config *src, int row);

/* Write c as an INI file (every setting but the hidden ones, with its help
 * as a comment; with `commented` every assignment is commented out, which
 * is the form of the example config). */
void srv_config_write_ini(const srv_config *c, bool commented, FILE *out);

/* Write the --help text (usage + one line per setting from the table,
 * hidden rows left out). */
void srv_config_write_help(const char *prog, FILE *out);

/* Sizes in settings and messages follow hyperoffload/size.h
 * (ho_size_parse, ho_size_format), like every other tool of the project. */

/* HBM capacity / reserve of device i (applies the one-value-for-all
 * rule), and its name (configured or "emu<i>"). */
uint64_t srv_config_hbm_capacity(const srv_config *c, uint32_t i);
uint64_t srv_config_hbm_reserve(const srv_config *c, uint32_t i);
void srv_config_device_name(const srv_config *c, uint32_t i, char *buf,
                            size_t len);

/* Keep the running config's [link] and [device N] sections in nc (they
 * need a restart, like the [node] rows); true when nc's differed. */
bool srv_config_keep_node_sections(srv_config *nc, const srv_config *old);

#endif
