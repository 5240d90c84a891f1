/*
 * daemon/metrics.h - the daemon's metrics in the Prometheus text
 * exposition format 0.0.4 (docs/metrics.md lists every series): per tier,
 * device, session, job, link and region, planning, admission, errors by
 * code, connections, uptime, build.  Two exits: the admin MetricsRequest
 * (hoctl metrics) and a textfile for node_exporter's textfile collector
 * ([metrics] textfile, rewritten every [metrics] interval seconds).
 *
 * The text is rendered on the loop from the live state and d->counters
 * (counters.h); the textfile is written on a worker (temporary file in
 * the same directory, fsync, rename), one write at a time, counted as a
 * worker job so a drain waits for it.
 */
#ifndef HO_DAEMON_METRICS_H
#define HO_DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/state.h"

#define SRV_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Render every series: 0 with *ret_text (malloc'd, NUL-terminated, free
 * with free()) and *ret_len, or -ENOMEM. */
int srv_metrics_render(srv_daemon *d, char **ret_text, size_t *ret_len);
/* MetricsRequest (admin): MetricsReply with the text, or an Error. */
void srv_handle_metrics(srv_daemon *d, srv_conn *c, uint64_t rid);
/* Apply [metrics] textfile / interval (startup and reload): start, restart
 * or stop the timer; the first write is immediate. */
void srv_metrics_configure(srv_daemon *d);
/* At a clean stop: stop the timer and remove the textfile (stale metrics
 * of a stopped daemon would otherwise be exported for ever). */
void srv_metrics_stop(srv_daemon *d);

#endif
