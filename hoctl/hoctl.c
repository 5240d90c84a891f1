/*
 * hoctl/hoctl.c - hoctl's entry point: global options, noun dispatch,
 * usage.  Daemon commands live in hoctl_admin.c, offline planning tools in
 * hoctl_plan.c, everything they print goes through output.c.
 *
 *   hoctl [--socket PATH] [--json] [--help] [--version] NOUN [VERB] [ARGS]
 *
 * Global options are accepted anywhere on the command line (before or
 * after the noun); `--` ends option scanning and passes the rest through.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hoctl/hoctl.h"
#include "hoctl/hoctl_node.h"
#include "hoctl/output.h"
#include "hyperoffload/client.h"

static void usage(FILE *f)
{
    fputs(
        "usage: hoctl [--socket PATH] [--json] [--help] [--version] "
        "NOUN [VERB] [ARGS]\n"
        "\n"
        "Daemon commands (talk to hyperoffloadd):\n"
        "  status                      daemon, tiers, devices and grants\n"
        "  clients                     every registered session\n"
        "  quota list                  every quota with current usage\n"
        "  quota get  (--uid U | --job J) [--tier T]\n"
        "  quota set  (--uid U | --job J) --tier T SIZE   e.g. 2G, 512MiB\n"
        "  quota clear (--uid U | --job J) [--tier T]\n"
        "  version                     hoctl, library and daemon versions\n"
        "  metrics                     every metric, Prometheus text format\n"
        "\n"
        "Offline planning tools (no daemon needed):\n"
        "  trace ...                   inspect and convert step traces\n"
        "  schedule ...                check and simulate schedules\n"
        "  plan ...                    plan a trace for an HBM budget\n"
        "\n"
        "Global options:\n"
        "  --socket PATH   daemon socket (default: $" HO_SOCKET_ENV ", else\n"
        "                  " HO_SOCKET_LOCAL " if present,\n"
        "                  else " HO_SOCKET_SYSTEM ")\n"
        "  --json          one JSON object (\"schema\": 1, raw byte counts)\n"
        "  --help          this text (or the noun's with a noun)\n"
        "  --version       print hoctl's version\n"
        "\n"
        "Exit codes: 0 ok, 1 failed, 2 usage, 3 not ready, 4 not found,\n"
        "69 daemon unreachable, 77 permission denied.  See hoctl(1).\n",
        f);
}

typedef int (*hoctl_cmd_fn)(const hoctl_globals *, int, char **);

static const struct {
    const char *noun;
    hoctl_cmd_fn fn;
} nouns[] = {
    {"status", hoctl_cmd_status},     {"clients", hoctl_cmd_clients},
    {"quota", hoctl_cmd_quota},       {"version", hoctl_cmd_version},
    {"trace", hoctl_cmd_trace},       {"schedule", hoctl_cmd_schedule},
    {"plan", hoctl_cmd_plan},
    {"node", hoctl_cmd_node},
    {"metrics", hoctl_cmd_metrics},
};

/* The command line with the global options taken out. */
typedef struct cmdline {
    hoctl_globals g;
    bool help, version;
    char **rest; /* the other words, in order (owned, NULL-terminated) */
    int nrest;
} cmdline;

/* Step 1: take the global options from anywhere on the command line
 * (`--` ends the scan).  0 or HOCTL_EXIT_USAGE with the reason printed. */
static int parse_globals(int argc, char **argv, cmdline *cl)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            while (++i < argc)
                cl->rest[cl->nrest++] = argv[i];
            break;
        } else if (strcmp(a, "--json") == 0) {
            cl->g.json = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cl->help = true;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            cl->version = true;
        } else if (strcmp(a, "--socket") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return hoctl_usage_error("--socket needs a path");
            cl->g.socket = argv[++i];
        } else if (strncmp(a, "--socket=", 9) == 0) {
            if (a[9] == '\0')
                return hoctl_usage_error("--socket needs a path");
            cl->g.socket = a + 9;
        } else {
            cl->rest[cl->nrest++] = argv[i];
        }
    }
    return 0;
}

/* Step 2: --version, the usage, or the noun's command (its help with
 * --help).  The exit code. */
static int dispatch(const cmdline *cl)
{
    if (cl->version) {
        printf("hoctl %s\n", HO_VERSION_STRING);
        return HOCTL_EXIT_OK;
    }
    if (cl->nrest == 0) {
        usage(cl->help ? stdout : stderr);
        return cl->help ? HOCTL_EXIT_OK : HOCTL_EXIT_USAGE;
    }
    for (size_t k = 0; k < sizeof(nouns) / sizeof(nouns[0]); k++) {
        if (strcmp(cl->rest[0], nouns[k].noun) != 0)
            continue;
        if (!cl->help)
            return nouns[k].fn(&cl->g, cl->nrest - 1, cl->rest + 1);
        if (hoctl_admin_help(cl->rest[0]))
            return HOCTL_EXIT_OK;
        /* The planning nouns print their own help for "help". */
        char *help_argv[] = {"help", NULL};
        return nouns[k].fn(&cl->g, 1, help_argv);
    }
    return hoctl_usage_error_help("unknown command '%s'", cl->rest[0]);
}

int main(int argc, char **argv)
{
    cmdline cl = {.g = {.socket = NULL, .json = false}};
    cl.rest = calloc((size_t)argc + 1, sizeof(char *));
    if (!cl.rest) {
        fputs("hoctl: out of memory\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    int rc = parse_globals(argc, argv, &cl);
    if (rc == 0)
        rc = dispatch(&cl);
    free(cl.rest);
    return rc;
}
