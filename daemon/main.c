/* daemon/main.c - hyperoffloadd: command line, then the daemon. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/version.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/topology.h"
#include "proto/frame.h"

int main(int argc, char **argv)
{
    char err[1024];
    srv_cmdline cl;
    srv_config cfg;

    signal(SIGPIPE, SIG_IGN);
    /* libuv's pool runs flash I/O and planning (daemon/srv_limits.h). */
    setenv("UV_THREADPOOL_SIZE", SRV_UV_THREADS, 0);
    if (srv_cmdline_parse(argc, argv, &cl, err, sizeof(err)) < 0) {
        fprintf(stderr, "hyperoffloadd: %s\n", err);
        return 2;
    }
    if (cl.help) {
        srv_config_write_help("hyperoffloadd", stdout);
        return 0;
    }
    if (cl.version) {
        printf("hyperoffloadd %s (protocol %u..%u)\n", HO_VERSION_STRING,
               HO_PROTO_MIN_VERSION, HO_PROTO_VERSION);
        return 0;
    }
    if (srv_config_build(&cl, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "hyperoffloadd: invalid configuration: %s\n", err);
        return 1;
    }
    if (cl.check_config) {
        /* The node description too: its tree is checked when built. */
        srv_topology *t = NULL;
        if (srv_topology_new(&cfg, &t, err, sizeof(err)) < 0) {
            fprintf(stderr, "hyperoffloadd: invalid configuration: %s\n",
                    err);
            srv_config_done(&cfg);
            return 1;
        }
        srv_topology_free(t);
        printf("hyperoffloadd: configuration OK (%s)\n",
               cfg.config_path ? cfg.config_path : "embedded default");
        srv_config_done(&cfg);
        return 0;
    }
    if (cl.print_config) {
        srv_config_write_ini(&cfg, false, stdout);
        srv_config_done(&cfg);
        return 0;
    }
    srv_log_init(cfg.log_level);
    srv_daemon *d = NULL;
    if (srv_daemon_new(&cfg, &cl, &d, err, sizeof(err)) < 0) {
        srv_err("startup failed: %s", err);
        srv_config_done(&cfg);
        return 1;
    }
    int rc = srv_daemon_run(d);
    srv_daemon_free(d);
    return rc;
}
