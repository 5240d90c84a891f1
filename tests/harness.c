/* tests/harness.c - see harness.h. */
#include "tests/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HARNESS_MAX_ARGS 96
#define HARNESS_TAIL 3000

#define HARNESS_DIR_MAX 96   /* so that <dir>/hod.sock fits sun_path */

struct ho_harness {
    char dir[HARNESS_DIR_MAX + 1];
    char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char state[PATH_MAX];
    char flash[PATH_MAX];
    char log[PATH_MAX];
    char config[PATH_MAX];   /* "" when none */
    char *argv[HARNESS_MAX_ARGS + 1]; /* owned strings, NULL-terminated */
    int argc;
    int start_timeout_ms;
    char *env[HARNESS_MAX_ARGS + 1]; /* owned "NAME=VALUE", NULL-terminated */
    int n_env;
    int systemd_socket;
    pid_t pid;               /* -1 when not running */
};

int ho_harness_under_valgrind(void)
{
    const char *v = getenv("HO_UNDER_VALGRIND");
    return v && strcmp(v, "1") == 0;
}

const char *ho_harness_daemon_path(void)
{
    static char path[PATH_MAX];
    const char *d = getenv("HO_DAEMON");
    if (d && *d)
        return d;
    const char *b = getenv("HO_BUILD_DIR");
    snprintf(path, sizeof(path), "%s/bin/hyperoffloadd", b && *b ? b : ".");
    return path;
}

static void errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int add_arg(ho_harness *h, const char *a)
{
    if (h->argc >= HARNESS_MAX_ARGS)
        return -E2BIG;
    char *s = strdup(a);
    if (!s)
        return -ENOMEM;
    h->argv[h->argc++] = s;
    h->argv[h->argc] = NULL;
    return 0;
}

static int write_file(const char *path, const char *text)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -errno;
    size_t n = strlen(text);
    if (fwrite(text, 1, n, f) != n) {
        int e = -errno;
        fclose(f);
        return e ? e : -EIO;
    }
    if (fclose(f) != 0)
        return -errno;
    if (rename(tmp, path) != 0)
        return -errno;
    return 0;
}

static char *read_all(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    if (buf) {
        buf[len] = '\0';
        if (ret_len)
            *ret_len = len;
    }
    return buf;
}

char *ho_harness_log(const ho_harness *h)
{
    return read_all(h->log, NULL);
}

static void log_tail(const ho_harness *h, char *out, size_t outlen)
{
    size_t len = 0;
    char *all = read_all(h->log, &len);
    if (!all) {
        snprintf(out, outlen, "(no log at %.200s)", h->log);
        return;
    }
    const char *p = all;
    if (len > HARNESS_TAIL)
        p = all + len - HARNESS_TAIL;
    snprintf(out, outlen, "%s", p);
    free(all);
}

static int decode_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

static int try_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

int ho_harness_connect(const ho_harness *h)
{
    return try_connect(h->sock);
}

static int spawn(ho_harness *h, char *err, size_t errlen)
{
    const char *vg_args[] = {"valgrind", "--error-exitcode=99",
                             "--leak-check=full", "--quiet",
                             "--child-silent-after-fork=yes", NULL};
    const char *argv[HARNESS_MAX_ARGS + 8];
    int n = 0;
    if (ho_harness_under_valgrind())
        for (int i = 0; vg_args[i]; i++)
            argv[n++] = vg_args[i];
    argv[n++] = ho_harness_daemon_path();
    for (int i = 0; i < h->argc; i++)
        argv[n++] = h->argv[i];
    argv[n] = NULL;

    if (access(ho_harness_daemon_path(), X_OK) != 0) {
        errf(err, errlen, "daemon binary %s: %s", ho_harness_daemon_path(),
             strerror(errno));
        return -1;
    }
    /* A socket left by a previous run (kill9) stays: connecting to it is
     * refused until the new daemon replaces it, so the probe below is not
     * fooled, and the daemon's stale-socket handling is exercised. */
    int lfd = -1;
    if (h->systemd_socket) {
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof(sa));
        sa.sun_family = AF_UNIX;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h->sock);
        unlink(h->sock);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            chmod(h->sock, 0666) < 0 || listen(lfd, 128) < 0) {
            errf(err, errlen, "systemd-style socket %s: %s", h->sock,
                 strerror(errno));
            if (lfd >= 0)
                close(lfd);
            return -1;
        }
    }

    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        errf(err, errlen, "fork: %s", strerror(errno));
        if (lfd >= 0)
            close(lfd);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int logfd = open(h->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                         0644);
        int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (logfd < 0 || nfd < 0)
            _exit(127);
        dup2(nfd, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        if (lfd >= 0) {
            if (dup2(lfd, 3) < 0)
                _exit(127);
            close_range(4, ~0u, 0);
        } else {
            close_range(3, ~0u, 0);
        }
        unsetenv("NOTIFY_SOCKET");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDNAMES");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        unsetenv("JOURNAL_STREAM");
        for (int i = 0; i < h->n_env; i++)
            putenv(h->env[i]);
        if (lfd >= 0) {
            char pidbuf[32];
            snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
            setenv("LISTEN_FDS", "1", 1);
            setenv("LISTEN_PID", pidbuf, 1);
            setenv("LISTEN_FDNAMES", "hyperoffloadd", 1);
        }
        sigset_t all;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        signal(SIGPIPE, SIG_DFL);
        if (ho_harness_under_valgrind())
            execvp("valgrind", (char *const *)argv);
        else
            execv(argv[0], (char *const *)argv);
        dprintf(2, "harness: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    h->pid = pid;
    if (lfd >= 0)
        close(lfd); /* the daemon holds it now */

    int timeout = h->start_timeout_ms;
    long long deadline = now_ms() + timeout;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            h->pid = -1;
            char tail[HARNESS_TAIL + 1];
            log_tail(h, tail, sizeof(tail));
            errf(err, errlen, "daemon exited with status %d during start; "
                 "log tail:\n%s", decode_status(st), tail);
            return -1;
        }
        int fd = try_connect(h->sock);
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        if (now_ms() > deadline) {
            char tail[HARNESS_TAIL + 1];
            log_tail(h, tail, sizeof(tail));
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            h->pid = -1;
            errf(err, errlen, "daemon did not accept on %s within %d ms; "
                 "log tail:\n%s", h->sock, timeout, tail);
            return -1;
        }
        sleep_ms(20);
    }
}

static int make_dir(ho_harness *h, char *err, size_t errlen)
{
    char base[PATH_MAX];
    const char *b = getenv("HO_BUILD_DIR");
    if (b && *b) {
        snprintf(base, sizeof(base), "%s/tmp", b);
        if (mkdir(base, 0755) < 0 && errno != EEXIST)
            snprintf(base, sizeof(base), "/tmp");
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(base, sizeof(base), "%s", t && *t ? t : "/tmp");
    }
    /* The socket path must fit sun_path. */
    if (strlen(base) + sizeof("/hod-XXXXXX") > sizeof(h->dir))
        snprintf(base, sizeof(base), "/tmp");
    int n = snprintf(h->dir, sizeof(h->dir), "%s/hod-XXXXXX", base);
    if (n < 0 || (size_t)n >= sizeof(h->dir) || !mkdtemp(h->dir)) {
        errf(err, errlen, "mkdtemp in %s: %s", base, strerror(errno));
        return -1;
    }
    /* Let tests that drop privileges reach the socket. */
    chmod(h->dir, 0755);
    snprintf(h->sock, sizeof(h->sock), "%.96s/hod.sock", h->dir);
    snprintf(h->state, sizeof(h->state), "%.96s/state", h->dir);
    snprintf(h->flash, sizeof(h->flash), "%.96s/flash0", h->dir);
    snprintf(h->log, sizeof(h->log), "%.96s/daemon.log", h->dir);
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

ho_harness *ho_harness_start(const ho_harness_opts *opts, char *err,
                             size_t errlen)
{
    static const char *const small[] = {
        "--ddr-capacity=256M", "--flash-capacity=512M", "--devices=2",
        "--hbm-capacity=1G", "--log-level=debug", NULL};
    ho_harness_opts none = {0};
    if (!opts)
        opts = &none;
    ho_harness *h = calloc(1, sizeof(*h));
    if (!h) {
        errf(err, errlen, "out of memory");
        return NULL;
    }
    h->pid = -1;
    if (make_dir(h, err, errlen) < 0) {
        free(h);
        return NULL;
    }
    h->start_timeout_ms = opts->start_timeout_ms > 0 ? opts->start_timeout_ms
                          : ho_harness_under_valgrind() ? 120000 : 15000;
    char flag[PATH_MAX + 32];
    int rc = 0;
    snprintf(flag, sizeof(flag), "--socket=%s", h->sock);
    rc |= add_arg(h, flag);
    snprintf(flag, sizeof(flag), "--state-dir=%s", h->state);
    rc |= add_arg(h, flag);
    snprintf(flag, sizeof(flag), "--flash-paths=%s", h->flash);
    rc |= add_arg(h, flag);
    if (!opts->no_defaults)
        for (int i = 0; small[i]; i++)
            rc |= add_arg(h, small[i]);
    if (opts->config_text) {
        snprintf(h->config, sizeof(h->config), "%.96s/hyperoffloadd.conf",
                 h->dir);
        int w = write_file(h->config, opts->config_text);
        if (w < 0) {
            errf(err, errlen, "write %s: %s", h->config, strerror(-w));
            goto fail;
        }
        snprintf(flag, sizeof(flag), "--config=%s", h->config);
        rc |= add_arg(h, flag);
    }
    if (opts->args)
        for (int i = 0; opts->args[i]; i++)
            rc |= add_arg(h, opts->args[i]);
    for (int i = 0; opts->env && opts->env[i]; i++) {
        if (h->n_env >= HARNESS_MAX_ARGS || !strchr(opts->env[i], '=') ||
            !(h->env[h->n_env] = strdup(opts->env[i]))) {
            rc = -1;
            break;
        }
        h->n_env++;
    }
    h->systemd_socket = opts->systemd_socket;
    if (rc) {
        errf(err, errlen, "too many arguments");
        goto fail;
    }
    if (spawn(h, err, errlen) < 0)
        goto fail;
    return h;
fail:
    ho_harness_free(h);
    return NULL;
}

ho_harness *ho_harness_start_args(const char *const *args)
{
    char err[4096];
    ho_harness_opts o = {.args = args};
    ho_harness *h = ho_harness_start(&o, err, sizeof(err));
    if (!h) {
        fprintf(stderr, "harness: %s\n", err);
        exit(1);
    }
    return h;
}

int ho_harness_restart(ho_harness *h, char *err, size_t errlen)
{
    if (h->pid > 0) {
        errf(err, errlen, "daemon still running (pid %d)", (int)h->pid);
        return -1;
    }
    return spawn(h, err, errlen);
}

const char *ho_harness_socket(const ho_harness *h) { return h->sock; }
const char *ho_harness_dir(const ho_harness *h) { return h->dir; }
const char *ho_harness_log_path(const ho_harness *h) { return h->log; }
const char *ho_harness_config_path(const ho_harness *h) { return h->config; }
const char *ho_harness_state_dir(const ho_harness *h) { return h->state; }
pid_t ho_harness_pid(const ho_harness *h) { return h->pid; }

int ho_harness_write_config(ho_harness *h, const char *text)
{
    if (!h->config[0])
        snprintf(h->config, sizeof(h->config), "%.96s/hyperoffloadd.conf",
                 h->dir);
    return write_file(h->config, text);
}

int ho_harness_signal(ho_harness *h, int sig)
{
    if (h->pid <= 0)
        return -ESRCH;
    return kill(h->pid, sig) < 0 ? -errno : 0;
}

int ho_harness_sighup(ho_harness *h)
{
    return ho_harness_signal(h, SIGHUP);
}

int ho_harness_poll_exit(ho_harness *h)
{
    if (h->pid <= 0)
        return -2;
    int st;
    pid_t r = waitpid(h->pid, &st, WNOHANG);
    if (r != h->pid)
        return -1;
    h->pid = -1;
    return decode_status(st);
}

int ho_harness_stop(ho_harness *h)
{
    if (h->pid <= 0)
        return -2;
    kill(h->pid, SIGTERM);
    int timeout = ho_harness_under_valgrind() ? 300000 : 30000;
    long long deadline = now_ms() + timeout;
    for (;;) {
        int st;
        pid_t r = waitpid(h->pid, &st, WNOHANG);
        if (r == h->pid) {
            h->pid = -1;
            return decode_status(st);
        }
        if (r < 0 && errno != EINTR) {
            h->pid = -1;
            return -1;
        }
        if (now_ms() > deadline) {
            kill(h->pid, SIGKILL);
            waitpid(h->pid, &st, 0);
            h->pid = -1;
            return -1;
        }
        sleep_ms(10);
    }
}

int ho_harness_kill9(ho_harness *h)
{
    if (h->pid <= 0)
        return -2;
    kill(h->pid, SIGKILL);
    int st;
    while (waitpid(h->pid, &st, 0) < 0 && errno == EINTR)
        ;
    h->pid = -1;
    return 0;
}

int ho_harness_wait_log(const ho_harness *h, const char *needle,
                        int timeout_ms)
{
    if (ho_harness_under_valgrind())
        timeout_ms *= 10;
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        char *log = ho_harness_log(h);
        int found = log && strstr(log, needle) != NULL;
        free(log);
        if (found)
            return 1;
        if (now_ms() > deadline)
            return 0;
        sleep_ms(20);
    }
}

void ho_harness_forget(ho_harness *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->argc; i++)
        free(h->argv[i]);
    for (int i = 0; i < h->n_env; i++)
        free(h->env[i]);
    free(h);
}

int ho_harness_free(ho_harness *h)
{
    if (!h)
        return -2;
    int st = ho_harness_stop(h);
    const char *keep = getenv("HO_KEEP_TMP");
    if (h->dir[0] && !(keep && strcmp(keep, "1") == 0))
        nftw(h->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    ho_harness_forget(h);
    return st;
}
