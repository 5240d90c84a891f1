/*
 * tests/integration/itest.h - helpers shared by the integration tests:
 * running the real hoctl binary, reading `hoctl --json status`, content
 * patterns, child processes that report back, polling the daemon's state.
 */
#ifndef HO_TESTS_ITEST_H
#define HO_TESTS_ITEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/harness.h"
#include "hyperoffload/client.h"

/* Path of build/bin/hoctl ($HO_BUILD_DIR/bin/hoctl). */
const char *it_hoctl_path(void);

/* Run hoctl with the NULL-terminated argument list (argv[0] is added).
 * Captures stdout into *ret_out (malloc'ed, may be NULL to discard) and
 * stderr into *ret_err (same).  With run_as_uid >= 0 the child drops to
 * that uid/gid before exec.  Returns the exit status, 128+signal, or -1. */
int it_hoctl_as(int run_as_uid, char **ret_out, char **ret_err,
                const char *const *args);
int it_hoctl(char **ret_out, const char *const *args);

/* `hoctl --socket S --json status`, parsed; NULL on any failure. */
json_t *it_status(const char *socket);

/* Used bytes and extents of the tier named ("ddr", "flash": the first tier
 * of that kind) in a status object.  0 or -1 when absent. */
int it_tier(json_t *status, const char *tier, uint64_t *ret_used,
            uint64_t *ret_extents, uint64_t *ret_capacity);

/* Read DDR and flash used bytes through hoctl; aborts the test on error. */
void it_used(const char *socket, uint64_t *ret_ddr, uint64_t *ret_flash);

/* Poll `hoctl status` until DDR and flash used equal the given values
 * (UINT64_MAX: any).  Returns 1 when reached, 0 after timeout_ms (x10
 * under valgrind).  The last values seen are stored when pointers given. */
int it_wait_used(const char *socket, uint64_t ddr, uint64_t flash,
                 int timeout_ms, uint64_t *ret_ddr, uint64_t *ret_flash);

/* Deterministic pseudo-random content (xorshift64*), seed-dependent. */
void it_fill(void *p, size_t len, uint64_t seed);
/* 1 when p holds it_fill(seed) content, else 0. */
int it_check(const void *p, size_t len, uint64_t seed);

/* Fork a child that runs fn(arg) and _exits with its return value (the
 * child must clean up after itself).  Before fn runs, the child closes its
 * copies of every client made by it_client() and not yet it_close()d (its
 * own copy of the mapping and socket; the parent's connection is not
 * affected): valgrind's leak scan at the child's exit would otherwise
 * crawl over the inherited pool mapping page by page.  Returns the pid. */
pid_t it_spawn(int (*fn)(void *), void *arg);
/* Wait for a child; returns its exit status, 128+signal, or -1. */
int it_wait(pid_t pid);

/* Connect and register (job may be NULL); aborts the test on failure.
 * Release with it_close(). */
ho_client *it_client(const char *socket, const char *job);
void it_close(ho_client *c);

/* Scale an iteration count down under valgrind (divide by `div`, >= 1). */
unsigned it_scale(unsigned n, unsigned div);

#endif
