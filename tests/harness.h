/*
 * tests/harness.h - start and stop the real hyperoffloadd for tests.
 *
 * CMake: include(${CMAKE_SOURCE_DIR}/tests/harness.cmake) (safe to include
 * more than once) and link the static library `ho_test_harness`, e.g.
 *     ho_add_test(NAME client_roundtrip SOURCES test_roundtrip.c
 *                 LIBS hyperoffload ho_test_harness LABELS integration)
 * The library depends on the `hyperoffloadd` target, so building a test
 * builds the daemon too.
 *
 * The daemon binary is $HO_BUILD_DIR/bin/hyperoffloadd (HO_BUILD_DIR is set
 * by ho_add_test; override with HO_DAEMON=/path/to/binary).  Each harness
 * owns a fresh directory $HO_BUILD_DIR/tmp/hod-XXXXXX (TMPDIR when
 * HO_BUILD_DIR is unset) holding the socket, the state directory, the flash
 * file and the daemon's log.  The daemon starts with small defaults
 * (DDR 256 MiB, one flash file of 512 MiB, two devices of 1 GiB HBM, log
 * level debug); extra flags given to ho_harness_start() come after the
 * defaults and so override them ("--ddr-capacity=64M").
 *
 * Under valgrind (HO_UNDER_VALGRIND=1, set by the *.valgrind ctest variants)
 * the daemon itself runs under
 *     valgrind --error-exitcode=99 --leak-check=full
 * and gets a longer start/stop timeout: a memory error or a definite leak in
 * the daemon makes ho_harness_stop() return 99.
 *
 * Not thread-safe; one harness per daemon.  Usable from check tests in fork
 * and no-fork mode: the daemon gets PR_SET_PDEATHSIG=SIGKILL, so it never
 * outlives the test process that started it.
 */
#ifndef HO_TESTS_HARNESS_H
#define HO_TESTS_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ho_harness ho_harness;

typedef struct ho_harness_opts {
    /* NULL-terminated extra command-line flags, after the defaults. */
    const char *const *args;
    /* Write this text to <dir>/hyperoffloadd.conf and pass
     * --config <that file> (NULL: no config file). */
    const char *config_text;
    /* Do not pass the small defaults (only --socket, --state-dir,
     * --flash-paths inside the directory, plus args). */
    int no_defaults;
    /* Start timeout in ms (0: 15 s, 120 s under valgrind). */
    int start_timeout_ms;
    /* NULL-terminated "NAME=VALUE" strings added to the daemon's
     * environment (after the harness removed NOTIFY_SOCKET, LISTEN_*,
     * WATCHDOG_* and JOURNAL_STREAM from it). */
    const char *const *env;
    /* Socket activation as systemd does it: the harness binds and listens
     * on the socket path itself and passes it as fd 3 with LISTEN_FDS=1,
     * LISTEN_PID and LISTEN_FDNAMES=hyperoffloadd. */
    int systemd_socket;
} ho_harness_opts;

/* Create the directory and start the daemon; wait until its socket accepts
 * a connection.  On failure returns NULL and writes the reason into err
 * (the daemon's exit status and the tail of its log when it died during
 * start).  The returned harness is owned by the caller: ho_harness_free().
 * opts may be NULL. */
ho_harness *ho_harness_start(const ho_harness_opts *opts, char *err,
                             size_t errlen);

/* Convenience: ho_harness_start() with only extra flags (NULL-terminated
 * list of strings, NULL for none).  Aborts the test (ck_abort style: prints
 * the reason and exit(1)) when the daemon does not come up. */
ho_harness *ho_harness_start_args(const char *const *args);

/* Paths inside the harness directory (owned by the harness). */
const char *ho_harness_socket(const ho_harness *h); /* <dir>/hod.sock */
const char *ho_harness_dir(const ho_harness *h);
const char *ho_harness_log_path(const ho_harness *h);    /* <dir>/daemon.log */
const char *ho_harness_config_path(const ho_harness *h); /* "" when none */
const char *ho_harness_state_dir(const ho_harness *h);   /* <dir>/state */
/* pid of the running daemon (valgrind's pid under valgrind: the same
 * process), -1 when stopped. */
pid_t ho_harness_pid(const ho_harness *h);

/* SIGTERM and wait (timeout: 30 s, 300 s under valgrind).  Returns the exit
 * status (0..255), 128+signal when the daemon died by a signal, or -1 with
 * a SIGKILL sent when it did not exit in time.  -2 when not running. */
int ho_harness_stop(ho_harness *h);

/* SIGKILL and reap.  Returns 0, -2 when not running. */
int ho_harness_kill9(ho_harness *h);

/* Send any signal (SIGHUP to reload).  0 or -errno. */
int ho_harness_signal(ho_harness *h, int sig);
int ho_harness_sighup(ho_harness *h);

/* Has the daemon exited on its own?  Returns -1 while it runs, else its
 * status as ho_harness_stop() reports it (reaps it). */
int ho_harness_poll_exit(ho_harness *h);

/* Start the daemon again in the same directory with the same flags (after
 * stop or kill9), e.g. to check persistence.  0, or -1 with err filled. */
int ho_harness_restart(ho_harness *h, char *err, size_t errlen);

/* Replace the config file's text (for SIGHUP tests).  0 or -errno. */
int ho_harness_write_config(ho_harness *h, const char *text);

/* The daemon's log so far as a NUL-terminated malloc'ed string (caller
 * frees), NULL on error. */
char *ho_harness_log(const ho_harness *h);

/* Wait until the log contains `needle` (polling, timeout in ms; scaled x10
 * under valgrind).  1 found, 0 timed out. */
int ho_harness_wait_log(const ho_harness *h, const char *needle,
                        int timeout_ms);

/* Connect a blocking SOCK_STREAM socket to the daemon (CLOEXEC).
 * Returns the fd or -errno. */
int ho_harness_connect(const ho_harness *h);

/* Stop the daemon if it runs (SIGTERM, then SIGKILL), remove the directory
 * and free.  Accepts NULL.  Returns the stop status as ho_harness_stop()
 * (or -2 when it was not running). */
int ho_harness_free(ho_harness *h);

/* In a child forked by the test (e.g. to drop privileges): free the
 * harness's memory without touching the daemon or the directory, so that
 * the child exits without leaks.  Accepts NULL. */
void ho_harness_forget(ho_harness *h);

/* 1 when HO_UNDER_VALGRIND=1 is set in the environment. */
int ho_harness_under_valgrind(void);

/* Path of the daemon binary used by the harness (static storage). */
const char *ho_harness_daemon_path(void);

#ifdef __cplusplus
}
#endif
#endif
