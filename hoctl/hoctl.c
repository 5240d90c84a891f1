/*
 * hoctl/hoctl.c - hoctl's entry point: global options, noun dispatch,
 * --watch, usage.  Daemon commands live in hoctl_admin.c, offline planning
 * tools in hoctl_plan.c and hoctl_node.c, everything they print goes
 * through output.c.
 *
 *   hoctl [--socket PATH] [--json | --format table|json|csv] [-o COL,...]
 *         [--watch SECONDS [--count N]] [--help] [--version]
 *         NOUN [VERB] [ARGS]
 *
 * Global options are accepted anywhere on the command line (before or
 * after the noun); `--` ends option scanning: the words after it are
 * neither global options nor the command's (the `--` is passed on to the
 * command, whose parser stops there too).
 *
 * A noun opts into -o / --format csv (it prints sheets) and into --watch
 * (it is a read-only query worth repeating) with the flags in its row of
 * the table below; adding a noun is one row.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hoctl/hoctl.h"
#include "hoctl/hoctl_node.h"
#include "hoctl/output.h"
#include "hyperoffload/client.h"

static void usage(FILE *f)
{
    fputs(
        "usage: hoctl [--socket PATH] [--json | --format table|json|csv]\n"
        "             [-o COL,...] [--watch SECONDS [--count N]]\n"
        "             [--help] [--version] NOUN [VERB] [ARGS]\n"
        "\n"
        "Daemon commands (talk to hyperoffloadd):\n"
        "  status                      daemon, tiers, devices and grants\n"
        "  health                      exit 0 when the daemon is healthy\n"
        "  clients                     every registered session\n"
        "  quota list                  every quota with current usage\n"
        "  quota get  (--uid U | --job J) [--tier T]\n"
        "  quota set  (--uid U | --job J) --tier T SIZE   e.g. 2G, 512MiB\n"
        "  quota clear (--uid U | --job J) [--tier T]\n"
        "  version                     hoctl, library and daemon versions\n"
        "  metrics                     every metric, Prometheus text format\n"
        "  regions                     residency regions: blocks per tier\n"
        "  store                       the shared prefix store\n"
        "  admit --trace T --device D  what-if admission of a newcomer\n"
        "\n"
        "Offline planning tools (no daemon needed):\n"
        "  trace ...                   inspect and convert step traces\n"
        "  schedule ...                check and simulate schedules\n"
        "  plan ...                    plan a trace for an HBM budget\n"
        "  node ...                    check a node and a workload\n"
        "\n"
        "Global options:\n"
        "  --socket PATH   daemon socket (default: $" HO_SOCKET_ENV ", else\n"
        "                  " HO_SOCKET_LOCAL " if present,\n"
        "                  else " HO_SOCKET_SYSTEM ")\n"
        "  --format F      table (default), json or csv (status, clients,\n"
        "                  quota: their main table, raw values)\n"
        "  --json          --format json: one JSON document on stdout,\n"
        "                  errors included (docs/cli-schema.json)\n"
        "  -o COL,...      columns to show (+COL,... adds to the defaults;\n"
        "                  'all'); an unknown name lists the valid ones\n"
        "  --watch SECS    repeat status / clients every SECS seconds\n"
        "  --count N       with --watch: stop after N rounds\n"
        "  --help          this text (or the noun's with a noun)\n"
        "  --version       print hoctl's version (JSON with --json)\n"
        "\n"
        "Exit codes: 0 ok, 1 failed, 2 usage, 3 not ready, 4 not found,\n"
        "5 degraded (health), 69 daemon unreachable, 77 permission\n"
        "denied.  See hoctl(1).\n",
        f);
}

typedef int (*hoctl_cmd_fn)(const hoctl_globals *, int, char **);

enum {
    NOUN_SHEET = 1 << 0, /* prints sheets: -o and --format csv apply */
    NOUN_WATCH = 1 << 1, /* --watch repeats it */
};

static const struct {
    const char *noun;
    hoctl_cmd_fn fn;
    unsigned flags;
} nouns[] = {
    {"status", hoctl_cmd_status, NOUN_SHEET | NOUN_WATCH},
    {"clients", hoctl_cmd_clients, NOUN_SHEET | NOUN_WATCH},
    {"health", hoctl_cmd_health, NOUN_WATCH},
    {"quota", hoctl_cmd_quota, NOUN_SHEET},
    {"version", hoctl_cmd_version, 0},
    {"trace", hoctl_cmd_trace, 0},
    {"schedule", hoctl_cmd_schedule, 0},
    {"plan", hoctl_cmd_plan, 0},
    {"node", hoctl_cmd_node, 0},
    {"metrics", hoctl_cmd_metrics, NOUN_WATCH},
    {"regions", hoctl_cmd_regions, NOUN_WATCH},
    {"store", hoctl_cmd_store, NOUN_WATCH},
    {"admit", hoctl_cmd_admit, 0},
};

/* The command line with the global options taken out. */
typedef struct cmdline {
    hoctl_globals g;
    bool help, version;
    unsigned watch_s; /* 0: no --watch */
    unsigned long count; /* 0: until interrupted */
    char **rest; /* the other words, in order (owned, NULL-terminated) */
    int nrest;
} cmdline;

/* The value of option `name` at argv[*i] ("--name V" or "--name=V"; for
 * a one-letter name also "-xV"); NULL when argv[*i] is not that option,
 * "" when its value is missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return n == 2 && name[1] != '-' ? a + n : NULL;
    if (*i + 1 >= argc)
        return "";
    return argv[++*i];
}

static int parse_count(const char *opt, const char *v, unsigned long max,
                       unsigned long *ret)
{
    char *end;
    errno = 0;
    unsigned long x = v[0] >= '0' && v[0] <= '9' ? strtoul(v, &end, 10) : 0;
    if (v[0] < '0' || v[0] > '9' || *end || errno || x == 0 || x > max)
        return hoctl_usage_error_help("%s: expected a whole number in "
                                      "[1, %lu], got '%s'", opt, max, v);
    *ret = x;
    return 0;
}

/* One global option at argv[*i]: 1 when it was one (taken), 0 when not,
 * or -HOCTL_EXIT_USAGE with the reason printed. */
static int global_option(int argc, char **argv, int *i, cmdline *cl)
{
    const char *a = argv[*i], *v;
    unsigned long n;
    if (strcmp(a, "--json") == 0) {
        cl->g.format = HOCTL_FMT_JSON;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        cl->help = true;
    } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
        cl->version = true;
    } else if ((v = opt_value(argc, argv, i, "--socket"))) {
        if (!v[0])
            return -hoctl_usage_error("--socket needs a path");
        cl->g.socket = v;
    } else if ((v = opt_value(argc, argv, i, "--format"))) {
        if (strcmp(v, "table") == 0)
            cl->g.format = HOCTL_FMT_TABLE;
        else if (strcmp(v, "json") == 0)
            cl->g.format = HOCTL_FMT_JSON;
        else if (strcmp(v, "csv") == 0)
            cl->g.format = HOCTL_FMT_CSV;
        else
            return -hoctl_usage_error_help("--format: expected table, json "
                                           "or csv, got '%s'", v);
    } else if ((v = opt_value(argc, argv, i, "--output")) ||
               (v = opt_value(argc, argv, i, "-o"))) {
        if (!v[0])
            return -hoctl_usage_error_help("-o needs a column list");
        cl->g.columns = v;
    } else if ((v = opt_value(argc, argv, i, "--watch"))) {
        if (parse_count("--watch", v, 86400, &n) != 0)
            return -HOCTL_EXIT_USAGE;
        cl->watch_s = (unsigned)n;
    } else if ((v = opt_value(argc, argv, i, "--count"))) {
        if (parse_count("--count", v, 1000000000UL, &cl->count) != 0)
            return -HOCTL_EXIT_USAGE;
    } else {
        return 0;
    }
    return 1;
}

/* Step 1: take the global options from anywhere on the command line
 * (`--` ends the scan and is passed on when a noun came before it).
 * 0 or HOCTL_EXIT_USAGE with the reason printed. */
static int parse_globals(int argc, char **argv, cmdline *cl)
{
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            if (cl->nrest > 0)
                cl->rest[cl->nrest++] = argv[i];
            while (++i < argc)
                cl->rest[cl->nrest++] = argv[i];
            break;
        }
        int r = global_option(argc, argv, &i, cl);
        if (r < 0) {
            rc = -r; /* keep scanning: --json later still applies */
            continue;
        }
        if (r == 0)
            cl->rest[cl->nrest++] = argv[i];
    }
    cl->g.json = cl->g.format == HOCTL_FMT_JSON;
    if (rc == 0 && cl->count && !cl->watch_s)
        rc = hoctl_usage_error_help("--count needs --watch");
    return rc;
}

static int version(const cmdline *cl)
{
    if (!cl->g.json) {
        printf("hoctl %s\n", HO_VERSION_STRING);
        return HOCTL_EXIT_OK;
    }
    json_t *o = hoctl_json_root();
    json_object_set_new(o, "hoctl", json_string(HO_VERSION_STRING));
    json_object_set_new(o, "library", json_string(ho_version()));
    return hoctl_json_emit(o);
}

static volatile sig_atomic_t stop_watch;

static void on_stop(int sig)
{
    (void)sig;
    stop_watch = 1;
}

/* Run the noun's command once, or every watch_s seconds (count rounds,
 * 0: until SIGINT/SIGTERM); with JSON each round is one document on one
 * line.  The last round's exit code; a usage error stops at once. */
static int run_noun(const cmdline *cl, hoctl_cmd_fn fn)
{
    int argc = cl->nrest - 1;
    char **argv = cl->rest + 1;
    if (!cl->watch_s)
        return fn(&cl->g, argc, argv); /* captured by main with --json */
    /* One capture per round instead of main's. */
    if (cl->g.json)
        hoctl_capture_end(0);
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    hoctl_json_compact = cl->g.json;
    bool clear = cl->g.format == HOCTL_FMT_TABLE && isatty(STDOUT_FILENO);
    int rc = 0;
    for (unsigned long round = 0; !stop_watch; round++) {
        if (clear)
            fputs("\033[H\033[2J", stdout);
        else if (round > 0 && cl->g.format == HOCTL_FMT_TABLE)
            putchar('\n');
        if (cl->g.json)
            hoctl_capture_begin();
        rc = fn(&cl->g, argc, argv);
        if (cl->g.json)
            hoctl_capture_end(rc);
        fflush(stdout);
        if (rc == HOCTL_EXIT_USAGE || (cl->count && round + 1 >= cl->count))
            break;
        struct timespec ts = {(time_t)cl->watch_s, 0};
        while (!stop_watch && nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    return rc;
}

/* Step 2: --version, the usage, or the noun's command (its help with
 * --help).  The exit code. */
static int dispatch(const cmdline *cl)
{
    if (cl->version)
        return version(cl);
    if (cl->nrest == 0) {
        if (cl->help) {
            usage(stdout);
            return HOCTL_EXIT_OK;
        }
        if (!cl->g.json)
            usage(stderr);
        return hoctl_usage_error("a command is needed (try hoctl --help)");
    }
    for (size_t k = 0; k < sizeof(nouns) / sizeof(nouns[0]); k++) {
        if (strcmp(cl->rest[0], nouns[k].noun) != 0)
            continue;
        if (cl->help) {
            if (hoctl_admin_help(cl->rest[0]))
                return HOCTL_EXIT_OK;
            /* The planning nouns print their own help for "help". */
            char *help_argv[] = {"help", NULL};
            return nouns[k].fn(&cl->g, 1, help_argv);
        }
        if (!(nouns[k].flags & NOUN_SHEET) &&
            (cl->g.columns || cl->g.format == HOCTL_FMT_CSV))
            return hoctl_usage_error_help("%s has no table: -o and --format "
                                          "csv apply to status, clients and "
                                          "quota", nouns[k].noun);
        if (!(nouns[k].flags & NOUN_WATCH) && cl->watch_s)
            return hoctl_usage_error_help("--watch does not apply to %s",
                                          nouns[k].noun);
        return run_noun(cl, nouns[k].fn);
    }
    return hoctl_usage_error_help("unknown command '%s'", cl->rest[0]);
}

/* Whether the command line asks for JSON (before any `--`): then even
 * the usage errors of the option scan become an error document. */
static bool format_json(const char *f, bool json)
{
    if (strcmp(f, "json") == 0)
        return true;
    if (strcmp(f, "table") == 0 || strcmp(f, "csv") == 0)
        return false;
    return json; /* a bad --format is a usage error in the current mode */
}

static bool wants_json(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--json") == 0 ||
            strcmp(argv[i], "--format=json") == 0)
            json = true;
        else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc)
            json = format_json(argv[++i], json);
        else if (strncmp(argv[i], "--format=", 9) == 0)
            json = format_json(argv[i] + 9, json);
    }
    return json;
}

int main(int argc, char **argv)
{
    cmdline cl = {.g = {.socket = NULL, .format = HOCTL_FMT_TABLE}};
    cl.rest = calloc((size_t)argc + 1, sizeof(char *));
    if (!cl.rest) {
        fputs("hoctl: out of memory\n", stderr);
        return HOCTL_EXIT_FAILED;
    }
    bool json = wants_json(argc, argv);
    if (json)
        hoctl_capture_begin();
    int rc = parse_globals(argc, argv, &cl);
    if (rc == 0)
        rc = dispatch(&cl);
    if (json)
        rc = hoctl_capture_end(rc);
    free(cl.rest);
    return rc;
}
