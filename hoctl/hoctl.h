/*
 * hoctl/hoctl.h - hoctl's command modules.
 *
 * hoctl.c parses the global options (--socket PATH, --json, --help,
 * --version; accepted anywhere on the command line), picks the noun and
 * calls one of the functions below with the remaining arguments: argv[0]
 * is the first word after the noun (the verb, or the first option for
 * nouns without verbs such as `plan`).
 *
 * Every command returns an exit code from the table below and prints
 * machine output (--json: one JSON object with "schema": 1, raw byte
 * counts and integer microseconds, docs/cli-schema.json) or human output
 * (IEC sizes) on stdout, errors on stderr (and, with --json, as an error
 * document on stdout), all through hoctl/output.h.  Nouns with tables
 * build them as sheets (output.h), which gives them --format csv and -o.
 *
 * Files: hoctl.c (options, noun dispatch, --watch, usage), hoctl_admin.c
 * (daemon nouns: the public API plus client/admin_call.h), hoctl_plan.c
 * and hoctl_node.c (offline nouns: the planner libraries), hoctl_parse.c
 * (strict sizes), output.c (sheets, fields, sizes, durations, JSON and
 * error documents).  A new noun is one row of hoctl.c's table (with
 * NOUN_SHEET / NOUN_WATCH when it prints sheets / may be repeated).
 */
#ifndef HO_HOCTL_HOCTL_H
#define HO_HOCTL_HOCTL_H

#include <stdbool.h>

enum hoctl_exit {
    HOCTL_EXIT_OK = 0,
    HOCTL_EXIT_FAILED = 1,       /* the operation failed */
    HOCTL_EXIT_USAGE = 2,        /* bad command line */
    HOCTL_EXIT_NOT_READY = 3,    /* daemon up but not ready / draining */
    HOCTL_EXIT_NOT_FOUND = 4,    /* no such client, quota, file */
    HOCTL_EXIT_DEGRADED = 5,     /* hoctl health: up but degraded */
    HOCTL_EXIT_UNREACHABLE = 69, /* daemon unreachable */
    HOCTL_EXIT_PERMISSION = 77,  /* permission denied */
};

#define HOCTL_JSON_SCHEMA 1

typedef enum hoctl_format {
    HOCTL_FMT_TABLE, /* human: aligned tables, IEC sizes */
    HOCTL_FMT_JSON,  /* --format json / --json */
    HOCTL_FMT_CSV,   /* --format csv: the command's main sheet */
} hoctl_format;

typedef struct hoctl_globals {
    const char *socket;  /* NULL: HO_SOCKET or the default path */
    bool json;           /* format == HOCTL_FMT_JSON */
    hoctl_format format;
    const char *columns; /* -o COL,...: NULL for the defaults */
} hoctl_globals;

/* hoctl_plan.c: offline planning tools (no daemon needed). */
int hoctl_cmd_trace(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_schedule(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_plan(const hoctl_globals *g, int argc, char **argv);

/* hoctl_admin.c: commands that talk to the daemon. */
/* `hoctl health`: 0 healthy, 3 not ready, 5 degraded, 69 unreachable,
 * 77 permission denied. */
int hoctl_cmd_health(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_status(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_clients(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_quota(const hoctl_globals *g, int argc, char **argv);
/* `hoctl version`: hoctl's and the library's version, then the daemon's
 * (server version, protocol) when it is reachable.  Unreachable is 69
 * after the local versions are printed. */
int hoctl_cmd_version(const hoctl_globals *g, int argc, char **argv);

/* hoctl_metrics.c: `hoctl metrics`, the Prometheus text on stdout. */
int hoctl_cmd_metrics(const hoctl_globals *g, int argc, char **argv);
/* hoctl_residency.c */
int hoctl_cmd_regions(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_store(const hoctl_globals *g, int argc, char **argv);

/* hoctl_admit.c: `hoctl admit`, the daemon's what-if admission. */
int hoctl_cmd_admit(const hoctl_globals *g, int argc, char **argv);

/* Per-noun help text for the daemon nouns (status, clients, quota,
 * version) on stdout; returns 1 when `noun` is one of them, else 0. */
int hoctl_admin_help(const char *noun);

#endif
