/*
 * client/hoctl.h - hoctl's command modules.
 *
 * hoctl.c parses the global options (--socket PATH, --json, --help,
 * --version; accepted anywhere on the command line), picks the noun and
 * calls one of the functions below with the remaining arguments: argv[0]
 * is the first word after the noun (the verb, or the first option for
 * nouns without verbs such as `plan`).
 *
 * Every command returns an exit code from the table below and prints
 * machine output (--json: one JSON object with "schema": 1 and raw byte
 * counts) or human output (IEC sizes) on stdout, errors on stderr.
 */
#ifndef HO_CLIENT_HOCTL_H
#define HO_CLIENT_HOCTL_H

#include <stdbool.h>

enum hoctl_exit {
    HOCTL_EXIT_OK = 0,
    HOCTL_EXIT_FAILED = 1,       /* the operation failed */
    HOCTL_EXIT_USAGE = 2,        /* bad command line */
    HOCTL_EXIT_NOT_READY = 3,    /* daemon up but not ready / draining */
    HOCTL_EXIT_NOT_FOUND = 4,    /* no such client, quota, file */
    HOCTL_EXIT_UNREACHABLE = 69, /* daemon unreachable */
    HOCTL_EXIT_PERMISSION = 77,  /* permission denied */
};

#define HOCTL_JSON_SCHEMA 1

typedef struct hoctl_globals {
    const char *socket;  /* NULL: HO_SOCKET or the default path */
    bool json;
} hoctl_globals;

/* hoctl_plan.c: offline planning tools (no daemon needed). */
int hoctl_cmd_trace(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_schedule(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_plan(const hoctl_globals *g, int argc, char **argv);

/* hoctl_admin.c: commands that talk to the daemon. */
int hoctl_cmd_status(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_clients(const hoctl_globals *g, int argc, char **argv);
int hoctl_cmd_quota(const hoctl_globals *g, int argc, char **argv);

/* Format bytes as IEC ("1.5 GiB", "512 B") into buf; returns buf. */
const char *hoctl_iec(unsigned long long bytes, char *buf, unsigned len);

#endif
