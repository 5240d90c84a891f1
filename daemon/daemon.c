/*
 * daemon/daemon.c - startup (state dir, quotas, tiers, socket), signals
 * (SIGTERM/SIGINT drain, SIGHUP reload) and teardown (see daemon.h).
 */
#include "daemon/daemon.h"

#include "hyperoffload/version.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/arbitrate.h"
#include "daemon/connection.h"
#include "daemon/dirs.h"
#include "daemon/links.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/mover.h"
#include "daemon/notify.h"
#include "daemon/planning.h"
#include "daemon/server.h"
#include "daemon/staging.h"
#include "daemon/topology.h"
#include "proto/errfmt.h"

/* ------------------------------------------------------------ shutdown */

static void close_if_open(uv_handle_t *h)
{
    if (h->loop && !uv_is_closing(h))
        uv_close(h, NULL);
}

/* Close everything; uv_run returns once connections have flushed. */
static void finish(srv_daemon *d)
{
    if (d->finishing)
        return;
    d->finishing = true;
    srv_server_close_all(d);
    close_if_open((uv_handle_t *)&d->sig_term);
    close_if_open((uv_handle_t *)&d->sig_int);
    close_if_open((uv_handle_t *)&d->sig_hup);
    close_if_open((uv_handle_t *)&d->drain_timer);
    close_if_open((uv_handle_t *)&d->status_timer);
    close_if_open((uv_handle_t *)&d->watchdog_timer);
    srv_metrics_stop(d);
}

static void on_drain_timeout(uv_timer_t *t)
{
    srv_daemon *d = t->data;
    srv_err("%u moves/plans still running after %u s (drain_timeout); "
            "exiting without waiting for them", d->works_in_flight,
            d->cfg.drain_timeout_s);
    /* Worker threads still use the arenas: nothing can be freed safely. */
    _exit(1);
}


static void begin_drain(srv_daemon *d, const char *why)
{
    if (d->draining) {
        srv_notice("%s: already shutting down", why);
        return;
    }
    d->draining = true;
    srv_notify_stopping();
    srv_notice("%s: shutting down (%u connections, %u moves/plans in "
               "flight)", why, d->n_conns, d->works_in_flight);
    srv_server_stop_listening(d);
    srv_planning_drain(d->planning);
    for (srv_conn *c = d->conns; c; c = c->next)
        srv_conn_event(c, HYPEROFFLOAD__EVENT_KIND__EVENT_SHUTTING_DOWN,
                       "the daemon is shutting down");
    if (d->works_in_flight == 0) {
        finish(d);
        return;
    }
    uv_timer_start(&d->drain_timer, on_drain_timeout,
                   (uint64_t)d->cfg.drain_timeout_s * 1000, 0);
}

/* ------------------------------------------------------------ reload */

/* Compare the running config with the new one, row by row: a changed
 * runtime row counts as applied, a changed restart-only row is logged and
 * kept at its running value in nc.  -ENOMEM when a row cannot be kept. */
static int reload_rows(srv_daemon *d, srv_config *nc, int *ret_changed,
                       int *ret_restart)
{
    int changed = 0, restart = 0;
    for (int i = 0; i < srv_config_rows(); i++) {
        char oldv[4096], newv[4096];
        srv_config_format(&d->cfg, i, oldv, sizeof(oldv));
        srv_config_format(nc, i, newv, sizeof(newv));
        if (strcmp(oldv, newv) == 0)
            continue;
        if (srv_config_row_runtime(i)) {
            srv_notice("SIGHUP: %s changed from '%s' to '%s'",
                       srv_config_row_name(i), oldv, newv);
            changed++;
            continue;
        }
        srv_warn("SIGHUP: %s changed from '%s' to '%s': needs a restart; "
                 "keeping '%s'", srv_config_row_name(i), oldv, newv, oldv);
        if (srv_config_copy_row(nc, &d->cfg, i) < 0)
            return -ENOMEM;
        restart++;
    }
    if (srv_config_keep_node_sections(nc, &d->cfg)) {
        srv_warn("SIGHUP: [link] or [device N] sections changed: the node "
                 "description needs a restart; keeping the running one");
        restart++;
    }
    *ret_changed = changed;
    *ret_restart = restart;
    return 0;
}

/* Make nc the running config and apply what changes at runtime. */
static void reload_apply(srv_daemon *d, srv_config *nc)
{
    srv_config old = d->cfg;
    d->cfg = *nc;
    srv_config_done(&old);
    srv_log_set_level(d->cfg.log_level);
    srv_server_resolve_admin_group(d);
    srv_planning_configure(d->planning, d->cfg.plan_cache);
    srv_stage_trim_plans(d);
    srv_notify_apply(d);
    srv_metrics_configure(d);
}

static void reload(srv_daemon *d)
{
    char err[1024];
    srv_config nc;
    int changed = 0, restart = 0;
    srv_notify_reloading(true);
    if (!d->cmdline.config_path) {
        srv_notice("SIGHUP: no config file (embedded default and flags); "
                   "nothing to reload");
    } else if (srv_config_build(&d->cmdline, &nc, err, sizeof(err)) < 0) {
        srv_err("SIGHUP: reload failed, keeping the running configuration: "
                "%s", err);
    } else if (reload_rows(d, &nc, &changed, &restart) < 0) {
        srv_err("SIGHUP: out of memory; keeping the running configuration");
        srv_config_done(&nc);
    } else {
        reload_apply(d, &nc);
        srv_notice("SIGHUP: configuration reloaded from %s: %d setting(s) "
                   "applied, %d need a restart", d->cfg.config_path, changed,
                   restart);
    }
    srv_notify_reloading(false);
}

static void on_signal(uv_signal_t *s, int signum)
{
    srv_daemon *d = s->data;
    if (signum == SIGHUP)
        reload(d);
    else
        begin_drain(d, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* ------------------------------------------------------------ startup */

static int open_ddr(srv_daemon *d, char *err, size_t errlen)
{
    char why[512] = "", a[32];
    const srv_config *c = &d->cfg;
    /* An arena's offset space covers what its owner may hold in DDR and
     * on flash together: host copies staged to flash keep their offsets,
     * so a job's copies may exceed the DDR pool. */
    uint64_t space = c->ddr_capacity;
    for (uint32_t i = 0; i < c->n_flash; i++)
        space += c->flash_capacity;
    if (space > TIER_ARENA_SPACE_MAX)
        space = TIER_ARENA_SPACE_MAX;
    tier_ddr_config dc = {
        .capacity = c->ddr_capacity,
        .align = c->ddr_alignment,
        .numa_node = c->ddr_numa_node,
        .lock = c->ddr_lock,
        .hugepages = c->ddr_hugepages,
        .arena_space = space,
    };
    int rc = tier_ddr_new(&dc, &d->ddr, why, sizeof(why));
    if (rc < 0)
        return ho_errf(err, errlen, rc, "DDR pool of %s: %s",
                       ho_size_format(c->ddr_capacity, a, sizeof(a)),
                       why[0] ? why : ho_strerror(rc));
    tier_ddr_stats ds;
    tier_ddr_stats_get(d->ddr, &ds);
    srv_info("DDR pool: %s, alignment %" PRIu64 "%s%s",
             ho_size_format(ds.capacity, a, sizeof(a)), c->ddr_alignment,
             ds.detail[0] ? ", " : "", ds.detail);
    if (c->ddr_lock && !ds.locked)
        srv_warn("DDR pool pages are not locked: %s", ds.detail);
    return 0;
}

/* Flash file i (its directory created first); d->n_flash counts it. */
static int open_flash(srv_daemon *d, uint32_t i, char *err, size_t errlen)
{
    char why[512] = "", a[32];
    const srv_config *c = &d->cfg;
    const char *path = c->flash_paths[i];
    int rc = srv_mkdir_parent(path, 0750);
    if (rc < 0)
        return ho_errf(err, errlen, rc, "cannot create the directory of "
                       "flash file %s: %s", path, strerror(-rc));
    tier_flash_config fc = {.path = path,
                            .capacity = c->flash_capacity,
                            .direct = c->flash_direct,
                            .remove_at_close = !c->flash_persist,
                            .discard_delay_ms =
                                c->flash_discard_delay * 1000u};
    rc = tier_flash_open(&fc, &d->flash[i], why, sizeof(why));
    if (rc == -EBUSY) /* the sentence names the file and the holder */
        return ho_errf(err, errlen, rc, "%s", why);
    if (rc < 0)
        return ho_errf(err, errlen, rc, "flash file %s: %s", path,
                       why[0] ? why : ho_strerror(rc));
    d->n_flash = i + 1;
    tier_flash_stats fs;
    tier_flash_stats_get(d->flash[i], &fs);
    srv_info("flash %s: %s, %s", path,
             ho_size_format(fs.capacity, a, sizeof(a)), fs.detail);
    if (c->flash_direct && !fs.direct_io)
        srv_notice("flash %s uses buffered I/O: %s", path, fs.detail);
    return 0;
}

static int open_hbm(srv_daemon *d, char *err, size_t errlen)
{
    const srv_config *c = &d->cfg;
    tier_hbm_device devs[SRV_MAX_DEVICES];
    memset(devs, 0, sizeof(devs));
    for (uint32_t i = 0; i < c->n_devices; i++) {
        srv_config_device_name(c, i, devs[i].name, sizeof(devs[i].name));
        devs[i].capacity = srv_config_hbm_capacity(c, i);
        devs[i].reserve = srv_config_hbm_reserve(c, i);
    }
    d->hbm = tier_hbm_new(devs, c->n_devices);
    if (!d->hbm)
        return ho_errf(err, errlen, -ENOMEM, "cannot create the HBM table");
    for (uint32_t i = 0; i < c->n_devices; i++) {
        char a[32], b[32];
        srv_info("device %u (%s): HBM %s, reserve %s", i, devs[i].name,
                 ho_size_format(devs[i].capacity, a, sizeof(a)),
                 ho_size_format(devs[i].reserve, b, sizeof(b)));
    }
    return 0;
}

/* The node description (topology.h), logged as one line per link. */
static int open_node(srv_daemon *d, char *err, size_t errlen)
{
    int rc = srv_topology_new(&d->cfg, &d->topology, err, errlen);
    if (rc < 0)
        return rc;
    const plan_node *n = srv_topology_node(d->topology);
    const char *note = srv_topology_note(d->topology);
    srv_info("node: %u links, %u devices, from %s%s%s",
             n ? n->n_links : 0, n ? n->n_devices : 0,
             srv_topology_source_name(srv_topology_source_of(d->topology)),
             note[0] ? "; " : "", note);
    for (uint32_t i = 0; n && i < n->n_links; i++)
        srv_info("node link %s (parent %s): H2D %g GB/s, D2H %g GB/s",
                 n->links[i].name,
                 n->links[i].parent_name ? n->links[i].parent_name : "none",
                 n->links[i].h2d_gbps, n->links[i].d2h_gbps);
    if (!n || !d->cfg.pace_links)
        return 0;
    rc = srv_links_new(n, &d->links, err, errlen);
    if (rc == 0)
        srv_info("link region: %llu bytes; host-backend copies are paced "
                 "to their share of the node's links",
                 (unsigned long long)srv_links_size(d->links));
    return rc;
}

static int open_tiers(srv_daemon *d, char *err, size_t errlen)
{
    int rc = open_ddr(d, err, errlen);
    for (uint32_t i = 0; rc == 0 && i < d->cfg.n_flash; i++)
        rc = open_flash(d, i, err, errlen);
    if (rc == 0)
        rc = open_hbm(d, err, errlen);
    if (rc == 0)
        rc = open_node(d, err, errlen);
    return rc;
}

/* The loop and its daemon-wide handles (signals, timers). */
static int init_loop(srv_daemon *d, char *err, size_t errlen)
{
    int rc = uv_loop_init(&d->loop);
    if (rc < 0)
        return ho_errf(err, errlen, HO_E_INTERNAL, "uv_loop_init: %s",
                       uv_strerror(rc));
    d->loop.data = d;
    uv_signal_init(&d->loop, &d->sig_term);
    uv_signal_init(&d->loop, &d->sig_int);
    uv_signal_init(&d->loop, &d->sig_hup);
    uv_timer_init(&d->loop, &d->drain_timer);
    uv_timer_init(&d->loop, &d->status_timer);
    uv_timer_init(&d->loop, &d->watchdog_timer);
    d->sig_term.data = d->sig_int.data = d->sig_hup.data = d;
    d->drain_timer.data = d->status_timer.data = d->watchdog_timer.data = d;
    d->start_ms = uv_now(&d->loop);
    return 0;
}

/* Raise the soft RLIMIT_NOFILE to the hard limit (each session holds
 * descriptors: srv_limits.h, "Descriptors"); d->fd_limit is the result,
 * which server.c rations. */
static void raise_fd_limit(srv_daemon *d)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
        srv_warn("descriptors: getrlimit: %s", strerror(errno));
        d->fd_limit = 1024;
        return;
    }
    rlim_t was = rl.rlim_cur;
    if (rl.rlim_cur != rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
            srv_warn("descriptors: cannot raise the soft limit from %llu to "
                     "%llu: %s", (unsigned long long)was,
                     (unsigned long long)rl.rlim_max, strerror(errno));
            rl.rlim_cur = was;
        }
    }
    d->fd_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX / 4
                                               : (uint64_t)rl.rlim_cur;
    if (rl.rlim_cur != was)
        srv_info("descriptors: soft limit raised from %llu to %llu (the "
                 "hard limit)", (unsigned long long)was,
                 (unsigned long long)d->fd_limit);
    else
        srv_info("descriptors: limit %llu", (unsigned long long)d->fd_limit);
    if (d->fd_limit < SRV_FD_PER_SESSION + SRV_FD_ADMIN_RESERVE +
                          SRV_FD_DAEMON_RESERVE + 64)
        srv_warn("descriptors: a limit of %llu leaves room for few "
                 "sessions (raise LimitNOFILE=)",
                 (unsigned long long)d->fd_limit);
}

/* The state directory, its lock (before anything is written there or
 * in a flash file: a second daemon on the same state directory stops
 * here) and the quota store in it. */
static int open_state(srv_daemon *d, char *err, size_t errlen)
{
    char path[PATH_MAX + 16];
    int rc = srv_mkdir_p(d->cfg.state_dir, 0750);
    if (rc < 0)
        return ho_errf(err, errlen, rc, "cannot create state directory %s: "
                       "%s", d->cfg.state_dir, strerror(-rc));
    rc = srv_lock_dir(d->cfg.state_dir, SRV_STATE_LOCK_NAME,
                      &d->state_lock_fd, err, errlen);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof(path), "%s/quotas", d->cfg.state_dir);
    rc = srv_quota_open(path, &d->quota, err, errlen);
    if (rc < 0)
        return rc;
    srv_info("quotas: %zu entries from %s", srv_quota_count(d->quota), path);
    uint64_t ddr_q = srv_quota_tier_sum(d->quota, SRV_TIER_DDR);
    if (ddr_q > d->cfg.ddr_capacity) {
        char a[32], b[32];
        srv_warn("quotas: the DDR quotas in %s reserve %s, more than the "
                 "DDR pool of %s: they cannot all be honoured; sessions "
                 "outside them get no unreserved DDR for host copies until "
                 "they are lowered (hoctl quota set / clear)", path,
                 ho_size_format(ddr_q, a, sizeof(a)),
                 ho_size_format(d->cfg.ddr_capacity, b, sizeof(b)));
    }
    return 0;
}

int srv_daemon_new(srv_config *cfg, const srv_cmdline *cl,
                   srv_daemon **ret_d, char *err, size_t errlen)
{
    srv_daemon *d = calloc(1, sizeof(*d));
    if (!d) {
        srv_config_done(cfg);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    d->state_lock_fd = -1;
    d->listen_fd = -1;
    d->spare_fd = -1;
    d->cfg = *cfg;
    memset(cfg, 0, sizeof(*cfg));
    d->cmdline = *cl;
    d->on_session_drop = srv_arb_session_gone;
    d->on_works_drained = finish;
    d->flash_read_gbps = SRV_FLASH_READ_GBPS;
    d->flash_write_gbps = SRV_FLASH_WRITE_GBPS;
    srv_idmap_init(&d->conn_ids);
    srv_idmap_init(&d->extents);
    int rc = init_loop(d, err, errlen);
    if (rc < 0) {
        srv_config_done(&d->cfg);
        free(d);
        return rc;
    }
    srv_info("hyperoffloadd %s starting (pid %d, config %s)",
             HO_VERSION_STRING, (int)getpid(),
             d->cfg.config_path ? d->cfg.config_path : "embedded default");
    raise_fd_limit(d);
    srv_server_resolve_admin_group(d);
    rc = open_state(d, err, errlen);
    if (rc == 0)
        rc = open_tiers(d, err, errlen);
    if (rc == 0)
        rc = srv_arb_new(d, &d->arbiter, err, errlen);
    if (rc == 0)
        rc = srv_planning_new(d, srv_arb_plan_answered, &d->planning, err,
                              errlen);
    if (rc < 0)
        goto fail;
    uv_signal_start(&d->sig_term, on_signal, SIGTERM);
    uv_signal_start(&d->sig_int, on_signal, SIGINT);
    uv_signal_start(&d->sig_hup, on_signal, SIGHUP);
    /* Last: clients only connect once everything behind the socket is. */
    rc = srv_server_listen(d, err, errlen);
    if (rc < 0)
        goto fail;
    srv_notify_start(d);
    srv_metrics_configure(d);
    srv_notify_ready(d);
    srv_notice("ready: %u devices, %u flash file(s), %s", d->cfg.n_devices,
               d->n_flash, d->socket_path);
    *ret_d = d;
    return 0;
fail:
    srv_daemon_free(d);
    return rc;
}

int srv_daemon_run(srv_daemon *d)
{
    uv_run(&d->loop, UV_RUN_DEFAULT);
    if (d->exit_code == 0)
        srv_notice("stopped");
    return d->exit_code;
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

srv_daemon *srv_daemon_free(srv_daemon *d)
{
    if (!d)
        return NULL;
    /* Half-built daemons (startup failure) still have open handles. */
    if (!d->finishing)
        finish(d);
    uv_run(&d->loop, UV_RUN_DEFAULT);
    uv_walk(&d->loop, close_walk, NULL);
    uv_run(&d->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&d->loop) != 0)
        srv_err("event loop still has open handles at exit (bug)");
    /* Sessions are gone with their connections, arenas with sessions. */
    if (d->arenas)
        srv_err("arenas left at exit (bug)");
    d->planning = srv_planning_free(d->planning);
    d->arbiter = srv_arb_free(d->arbiter);
    for (uint32_t i = 0; i < d->n_flash; i++)
        tier_flash_close(d->flash[i]);
    tier_hbm_free(d->hbm);
    d->links = srv_links_free(d->links);
    d->topology = srv_topology_free(d->topology);
    tier_ddr_free(d->ddr);
    srv_quota_free(d->quota);
    /* Last: the state directory and flash files are free for another
     * daemon once this one let go of them. */
    if (d->state_lock_fd >= 0)
        close(d->state_lock_fd);
    srv_idmap_done(&d->conn_ids);
    srv_idmap_done(&d->extents);
    srv_config_done(&d->cfg);
    free(d);
    return NULL;
}
