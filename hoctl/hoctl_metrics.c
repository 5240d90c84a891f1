/*
 * hoctl/hoctl_metrics.c - `hoctl metrics`: the daemon's metrics in the
 * Prometheus text format (docs/metrics.md) on stdout, as the daemon wrote
 * them (MetricsRequest, admin).  --json wraps the text in one object.
 */
#include <stdio.h>
#include <string.h>

#include "hoctl/hoctl_daemon.h"
#include "hoctl/output.h"
#include "proto/frame.h"

static const char help_text[] =
    "usage: hoctl metrics\n"
    "  Print every metric of hyperoffloadd in the Prometheus text format\n"
    "  0.0.4 (docs/metrics.md lists the series).  Needs an admin peer.\n"
    "  Exit 0, 69 daemon unreachable, 77 permission denied, 3 shutting\n"
    "  down, 1 other.\n";

int hoctl_cmd_metrics(const hoctl_globals *g, int argc, char **argv)
{
    if (argc > 0 && (strcmp(argv[0], "help") == 0 ||
                     strcmp(argv[0], "--help") == 0)) {
        fputs(help_text, stdout);
        return HOCTL_EXIT_OK;
    }
    if (argc > 0)
        return hoctl_usage_error_help("metrics takes no arguments ('%s')",
                                      argv[0]);
    ho_client *c = NULL;
    int exit_code = hoctl_open_client(g, &c);
    if (exit_code)
        return exit_code;
    Hyperoffload__MetricsRequest req = HYPEROFFLOAD__METRICS_REQUEST__INIT;
    HOC_ENVELOPE(env, METRICS_REQUEST, metrics_request, &req);
    Hyperoffload__Envelope *reply = NULL;
    exit_code = hoctl_request(
        c, &env, HYPEROFFLOAD__ENVELOPE__BODY_METRICS_REPLY, &reply);
    if (exit_code == 0 && g->json) {
        json_t *o = hoctl_json_root();
        json_object_set_new(o, "content_type",
                            hoctl_json_str(reply->metrics_reply->content_type));
        json_object_set_new(o, "text",
                            hoctl_json_str(reply->metrics_reply->text));
        exit_code = hoctl_json_emit(o);
    } else if (exit_code == 0) {
        fputs(reply->metrics_reply->text, stdout);
    }
    ho_frame_envelope_free(reply);
    ho_close(c);
    return exit_code;
}
