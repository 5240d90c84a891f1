/* tests/integration/itest.c - see itest.h. */
#include "tests/integration/itest.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *it_hoctl_path(void)
{
    static char path[4096];
    const char *b = getenv("HO_BUILD_DIR");
    snprintf(path, sizeof(path), "%s/bin/hoctl", b && *b ? b : ".");
    return path;
}

/* Append everything readable from fd to a growing buffer; 0 at EOF. */
static int slurp(int fd, char **buf, size_t *len, size_t *cap)
{
    if (*len + 4096 + 1 > *cap) {
        size_t ncap = (*cap ? *cap * 2 : 8192) + 4096;
        char *nb = realloc(*buf, ncap);
        ck_assert_ptr_nonnull(nb);
        *buf = nb;
        *cap = ncap;
    }
    ssize_t n = read(fd, *buf + *len, 4096);
    if (n < 0 && errno == EINTR)
        return 1;
    if (n <= 0)
        return 0;
    *len += (size_t)n;
    (*buf)[*len] = '\0';
    return 1;
}

int it_hoctl_as(int run_as_uid, char **ret_out, char **ret_err,
                const char *const *args)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = it_hoctl_path();
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;

    int po[2], pe[2];
    ck_assert_int_eq(pipe2(po, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(pe, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        if (run_as_uid >= 0) {
            if (setgroups(0, NULL) != 0 || setgid((gid_t)run_as_uid) != 0 ||
                setuid((uid_t)run_as_uid) != 0)
                _exit(126);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    char *out = NULL, *err = NULL;
    size_t olen = 0, ocap = 0, elen = 0, ecap = 0;
    int open_o = 1, open_e = 1;
    while (open_o || open_e) {
        struct pollfd p[2] = {{.fd = open_o ? po[0] : -1, .events = POLLIN},
                              {.fd = open_e ? pe[0] : -1, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (open_o && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            open_o = slurp(po[0], &out, &olen, &ocap);
        if (open_e && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
            open_e = slurp(pe[0], &err, &elen, &ecap);
    }
    close(po[0]);
    close(pe[0]);
    int rc = it_wait(pid);
    if (!out)
        out = strdup("");
    if (!err)
        err = strdup("");
    if (ret_out)
        *ret_out = out;
    else
        free(out);
    if (ret_err)
        *ret_err = err;
    else
        free(err);
    return rc;
}

int it_hoctl(char **ret_out, const char *const *args)
{
    return it_hoctl_as(-1, ret_out, NULL, args);
}

json_t *it_status(const char *socket)
{
    const char *args[] = {"--socket", socket, "--json", "status", NULL};
    char *out = NULL;
    int rc = it_hoctl(&out, args);
    json_t *j = NULL;
    if (rc == 0) {
        json_error_t e;
        j = json_loads(out, 0, &e);
    }
    free(out);
    return j;
}

int it_tier(json_t *status, const char *tier, uint64_t *ret_used,
            uint64_t *ret_extents, uint64_t *ret_capacity)
{
    json_t *tiers = json_object_get(status, "tiers");
    size_t i;
    json_t *t;
    json_array_foreach(tiers, i, t)
    {
        const char *kind = json_string_value(json_object_get(t, "tier"));
        if (!kind || strcmp(kind, tier) != 0)
            continue;
        if (ret_used)
            *ret_used = (uint64_t)json_integer_value(json_object_get(t, "used"));
        if (ret_extents)
            *ret_extents =
                (uint64_t)json_integer_value(json_object_get(t, "extents"));
        if (ret_capacity)
            *ret_capacity =
                (uint64_t)json_integer_value(json_object_get(t, "capacity"));
        return 0;
    }
    return -1;
}

void it_used(const char *socket, uint64_t *ret_ddr, uint64_t *ret_flash)
{
    json_t *s = it_status(socket);
    ck_assert_msg(s != NULL, "hoctl --json status failed");
    ck_assert_int_eq(it_tier(s, "ddr", ret_ddr, NULL, NULL), 0);
    ck_assert_int_eq(it_tier(s, "flash", ret_flash, NULL, NULL), 0);
    json_decref(s);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int it_wait_used(const char *socket, uint64_t ddr, uint64_t flash,
                 int timeout_ms, uint64_t *ret_ddr, uint64_t *ret_flash)
{
    if (ho_harness_under_valgrind())
        timeout_ms *= 10;
    uint64_t d = 0, f = 0;
    for (int waited = 0;; waited += 50) {
        it_used(socket, &d, &f);
        if ((ddr == UINT64_MAX || d == ddr) &&
            (flash == UINT64_MAX || f == flash))
            break;
        if (waited >= timeout_ms) {
            if (ret_ddr)
                *ret_ddr = d;
            if (ret_flash)
                *ret_flash = f;
            return 0;
        }
        sleep_ms(50);
    }
    if (ret_ddr)
        *ret_ddr = d;
    if (ret_flash)
        *ret_flash = f;
    return 1;
}

static uint64_t xs_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

void it_fill(void *p, size_t len, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
    uint8_t *b = p;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = xs_next(&s);
        memcpy(b + i, &v, 8);
    }
    if (i < len) {
        uint64_t v = xs_next(&s);
        memcpy(b + i, &v, len - i);
    }
}

int it_check(const void *p, size_t len, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
    const uint8_t *b = p;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = xs_next(&s);
        if (memcmp(b + i, &v, 8) != 0)
            return 0;
    }
    if (i < len) {
        uint64_t v = xs_next(&s);
        if (memcmp(b + i, &v, len - i) != 0)
            return 0;
    }
    return 1;
}

#define IT_MAX_CLIENTS 32
static ho_client *tracked[IT_MAX_CLIENTS];

pid_t it_spawn(int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        for (int i = 0; i < IT_MAX_CLIENTS; i++)
            tracked[i] = ho_close(tracked[i]);
        _exit(fn(arg));
    }
    return pid;
}

int it_wait(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

ho_client *it_client(const char *socket, const char *job)
{
    ho_client *c = NULL;
    int rc = ho_connect(socket, "itest", &c);
    ck_assert_msg(rc == 0, "connect %s: %s", socket, ho_strerror(rc));
    rc = ho_register(c, job, -1, 0);
    char msg[512];
    ck_assert_msg(rc == 0, "register: %s (%s)", ho_strerror(rc),
                  ho_last_error(c, msg, sizeof(msg)));
    for (int i = 0; i < IT_MAX_CLIENTS; i++) {
        if (!tracked[i]) {
            tracked[i] = c;
            break;
        }
    }
    return c;
}

void it_close(ho_client *c)
{
    for (int i = 0; i < IT_MAX_CLIENTS; i++)
        if (tracked[i] == c)
            tracked[i] = NULL;
    ho_close(c);
}

unsigned it_scale(unsigned n, unsigned div)
{
    if (!ho_harness_under_valgrind())
        return n;
    n /= div;
    return n ? n : 1;
}
