/*
 * client/hoctl.c - hoctl's entry point: global options, noun dispatch,
 * usage.  Daemon commands live in hoctl_admin.c, offline planning tools in
 * hoctl_plan.c.
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
#include "hoctl/hoctl_admin.h"
#include "hoctl/hoctl_node.h"
#include "hyperoffload/client.h"


const char *hoctl_iec(unsigned long long bytes, char *buf, unsigned len)
{
    return ho_size_format((uint64_t)bytes, buf, len);
}

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
};

int main(int argc, char **argv)
{
    hoctl_globals g = {.socket = NULL, .json = false};
    bool help = false, version = false;
    char **rest = calloc((size_t)argc + 1, sizeof(char *));
    int nrest = 0, rc;

    if (!rest) {
        fputs("hoctl: out of memory\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            while (++i < argc)
                rest[nrest++] = argv[i];
            break;
        } else if (strcmp(a, "--json") == 0) {
            g.json = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help = true;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            version = true;
        } else if (strcmp(a, "--socket") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                fputs("hoctl: --socket needs a path\n", stderr);
                rc = HOCTL_EXIT_USAGE;
                goto out;
            }
            g.socket = argv[++i];
        } else if (strncmp(a, "--socket=", 9) == 0) {
            if (a[9] == '\0') {
                fputs("hoctl: --socket needs a path\n", stderr);
                rc = HOCTL_EXIT_USAGE;
                goto out;
            }
            g.socket = a + 9;
        } else {
            rest[nrest++] = argv[i];
        }
    }

    if (version) {
        printf("hoctl %s\n", HO_VERSION_STRING);
        rc = HOCTL_EXIT_OK;
        goto out;
    }
    if (nrest == 0) {
        if (help) {
            usage(stdout);
            rc = HOCTL_EXIT_OK;
        } else {
            usage(stderr);
            rc = HOCTL_EXIT_USAGE;
        }
        goto out;
    }
    for (size_t k = 0; k < sizeof(nouns) / sizeof(nouns[0]); k++) {
        if (strcmp(rest[0], nouns[k].noun) != 0)
            continue;
        if (help) {
            if (hoctl_admin_help(rest[0])) {
                rc = HOCTL_EXIT_OK;
            } else {
                /* The planning nouns print their own help for "help". */
                char *help_argv[] = {"help", NULL};
                rc = nouns[k].fn(&g, 1, help_argv);
            }
            goto out;
        }
        rc = nouns[k].fn(&g, nrest - 1, rest + 1);
        goto out;
    }
    fprintf(stderr, "hoctl: unknown command '%s' (try hoctl --help)\n",
            rest[0]);
    rc = HOCTL_EXIT_USAGE;
out:
    free(rest);
    return rc;
}
