/* daemon/notify.c - systemd notifications (see notify.h). */
#include "daemon/notify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon/log.h"

static void status_text(srv_daemon *d, char *buf, size_t len)
{
    tier_ddr_stats st;
    char a[32], b[32];
    tier_ddr_stats_get(d->ddr, &st);
    snprintf(buf, len, "%u clients, %u connections, DDR %s of %s used%s",
             d->n_sessions, d->n_conns,
             ho_size_format(st.used, a, sizeof(a)),
             ho_size_format(st.capacity, b, sizeof(b)),
             d->draining ? ", draining" : "");
}

void srv_notify_update_status(srv_daemon *d)
{
    char text[200];
    status_text(d, text, sizeof(text));
    if (strcmp(text, d->last_status) == 0)
        return;
    snprintf(d->last_status, sizeof(d->last_status), "%s", text);
    sd_notifyf(0, "STATUS=%s", text);
}

void srv_notify_ready(srv_daemon *d)
{
    char text[200];
    status_text(d, text, sizeof(text));
    snprintf(d->last_status, sizeof(d->last_status), "%s", text);
    sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=%s", (int)getpid(), text);
}

void srv_notify_stopping(void)
{
    sd_notify(0, "STOPPING=1\nSTATUS=draining");
}

void srv_notify_reloading(bool start)
{
    sd_notify(0, start ? "RELOADING=1" : "READY=1");
}

static void on_status_timer(uv_timer_t *t)
{
    srv_notify_update_status(t->data);
}

static void on_watchdog(uv_timer_t *t)
{
    (void)t;
    sd_notify(0, "WATCHDOG=1");
}

void srv_notify_apply(srv_daemon *d)
{
    uint64_t usec = 0;
    bool want = d->cfg.watchdog && sd_watchdog_enabled(0, &usec) > 0 &&
                usec > 0;
    if (want && !d->watchdog_running) {
        uint64_t ms = usec / 2000;
        if (ms == 0)
            ms = 1;
        uv_timer_start(&d->watchdog_timer, on_watchdog, 0, ms);
        d->watchdog_running = true;
        srv_info("watchdog: pinging systemd every %" PRIu64 " ms", ms);
    } else if (!want && d->watchdog_running) {
        uv_timer_stop(&d->watchdog_timer);
        d->watchdog_running = false;
        srv_info("watchdog: pings stopped");
    }
}

void srv_notify_start(srv_daemon *d)
{
    /* The status line only matters under systemd. */
    if (getenv("NOTIFY_SOCKET"))
        uv_timer_start(&d->status_timer, on_status_timer,
                       SRV_STATUS_PERIOD_MS, SRV_STATUS_PERIOD_MS);
    srv_notify_apply(d);
}
