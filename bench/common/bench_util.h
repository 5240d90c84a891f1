/*
 * bench/common/bench_util.h - what the daemon benchmarks (bench_server,
 * bench_runtime, ho-gpu-check) share: a monotonic clock, medians and
 * percentiles, dying with a message after removing what the program
 * started, a hyperoffloadd of their own in a temporary directory, the
 * default scratch directory, and the plain O_DIRECT sequential I/O that
 * their flash figures are compared with.
 *
 * Library ho_bench_util (bench/common/CMakeLists.txt).  Unlike the
 * project's libraries it prints: bench_die() and bench_check() write to
 * stderr and exit.  State: the program name for messages, the pid of the
 * daemon started by bench_start_daemon() and its temporary directory are
 * process-wide, owned here, for one thread (the main one) at a time.
 */
#ifndef HO_BENCH_UTIL_H
#define HO_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "hyperoffload/client.h"

/* Most repeats a benchmark keeps figures of (arrays of medians). */
#define BENCH_MAX_REPEATS 101
/* Size of one pwrite/pread of the O_DIRECT baseline. */
#define BENCH_IO_CHUNK (8u << 20)

/* Name that prefixes bench_die()'s messages ("bench" until set).  The
 * string is not copied: it must outlive the program's use of this. */
void bench_set_prog(const char *name);

/* CLOCK_MONOTONIC in seconds. */
double bench_now(void);

/* Median of v[0..n): sorts v ascending in place, then returns the middle
 * element (n odd) or the mean of the two middle ones (n even); 0 when
 * n == 0. */
double bench_median(double *v, size_t n);

/* Nearest-rank percentile p (0..1) of v[0..n): sorts v ascending in place
 * and returns v[i], i = (size_t)(p * (n - 1) + 0.5) capped at n - 1; 0
 * when n == 0. */
double bench_percentile(double *v, size_t n, double p);

/* Kill (SIGKILL) and reap the daemon started by bench_start_daemon() if it
 * still runs, and remove its temporary directory with everything below it
 * (nftw, depth first, not following links).  Idempotent. */
void bench_cleanup(void);

/* Print "<prog>: <message>\n" to stderr, bench_cleanup(), exit(1). */
void bench_die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* Return if rc == 0; otherwise bench_die("<what>: <ho_strerror(rc)>
 * (<ho_err_name(rc)>): <sentence>"), the sentence being ho_last_error(c)
 * when c is not NULL and has one, else ho_runtime_last_error(); without
 * ": <sentence>" when that is "". */
void bench_check(ho_client *c, int rc, const char *what);

/* The default scratch directory into buf[0..len): <directory of this
 * binary>/../tmp (created 0755 if missing, then made canonical with
 * realpath) when that is writable and fits in buf, else "/var/tmp". */
void bench_default_dir(char *buf, size_t len);

/* What bench_start_daemon() starts. */
typedef struct bench_daemon_opts {
    const char *dir;    /* parent of the temporary directory; NULL: the
                           bench_default_dir() one */
    const char *name;   /* temporary directory's prefix, e.g.
                           "bench-server" (-> <dir>/bench-server-XXXXXX) */
    uint64_t ddr;       /* --ddr-capacity */
    uint64_t flash;     /* --flash-capacity */
    unsigned devices;   /* 0: neither --devices nor --hbm-capacity;
                           else --devices=<devices> --hbm-capacity=<hbm> */
    uint64_t hbm;
} bench_daemon_opts;

/* Start hyperoffloadd ($HO_DAEMON when set and not empty, else the file
 * "hyperoffloadd" next to this binary) in a fresh temporary directory
 * <dir>/<name>-XXXXXX, with the arguments
 *   --socket=<tmp>/hod.sock --state-dir=<tmp>/state
 *   --flash-paths=<tmp>/flash0 --ddr-capacity=<ddr>
 *   --flash-capacity=<flash> [--devices=<devices> --hbm-capacity=<hbm>]
 *   --log-level=warning
 * its stdout and stderr going to <tmp>/daemon.log and NOTIFY_SOCKET unset;
 * then wait (10 ms polls, 30 s at most) until the socket accepts a
 * connection.  The socket path goes into sock[0..socklen).  Dies (with
 * cleanup) when a path does not fit, the directory cannot be made, the
 * daemon exits during its start or does not accept in time (the last
 * 4 KiB of its log copied to stderr first).  At most one such daemon at a
 * time. */
void bench_start_daemon(const bench_daemon_opts *o, char *sock,
                        size_t socklen);

/* The temporary directory of the daemon that bench_start_daemon() made
 * (until bench_cleanup()); "" when there is none.  Owned here. */
const char *bench_daemon_dir(void);

/* Stop the daemon started by bench_start_daemon(): SIGTERM, wait for it.
 * Returns its exit status (128 + signal number when killed), 0 when there
 * is none.  Leaves its directory (bench_cleanup() removes it). */
int bench_stop_daemon(void);

/* Directory part of `path` into buf[0..len): everything before the last
 * '/', "/" when that is the only one, "." when there is none.  0, or
 * -ENAMETOOLONG when it does not fit. */
int bench_parent_dir(const char *path, char *buf, size_t len);

/* A file of `size` bytes (posix_fallocate) for the O_DIRECT baseline in
 * `dir`: created with mkstemp as <dir>/bench-odirect-XXXXXX, reopened
 * O_RDWR | O_DIRECT | O_CLOEXEC and unlinked at once.  Returns the fd (the
 * caller closes it), or -1 with the reason in why[0..whylen) (e.g. the
 * file system refuses O_DIRECT). */
int bench_odirect_open(const char *dir, uint64_t size, char *why,
                       size_t whylen);

/* One timed sequential pass over [0, len) of fd: pwrite (is_write != 0)
 * or pread of buf in BENCH_IO_CHUNK pieces at the matching offsets; buf
 * must suit O_DIRECT (page aligned).  *ret_gbps = len / seconds / 1e9.
 * 0, or -1 when a call fails (errno set) or transfers nothing. */
int bench_odirect_io(int fd, void *buf, uint64_t len, int is_write,
                     double *ret_gbps);

#endif
