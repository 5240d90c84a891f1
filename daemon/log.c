/* daemon/log.c - see log.h. */
#include "daemon/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "hyperoffload/errors.h"

/* Where sd_journal_sendv writes (systemd's fixed path). */
#define JOURNAL_SOCKET "/run/systemd/journal/socket"

static atomic_int log_level = SRV_LOG_INFO;
static bool log_to_journal;
static bool journal_native;      /* the journal's socket is there */

static const char *const level_names[8] = {
    "emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"};

/* JOURNAL_STREAM is "device:inode" of the stream systemd connected to our
 * stdout/stderr; only when it is really stderr do prefixes make sense. */
static bool stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    if (!js || !*js)
        return false;
    unsigned long long dev, ino;
    if (sscanf(js, "%llu:%llu", &dev, &ino) != 2)
        return false;
    struct stat st;
    if (fstat(STDERR_FILENO, &st) < 0)
        return false;
    return (unsigned long long)st.st_dev == dev &&
           (unsigned long long)st.st_ino == ino;
}

void srv_log_init(int level)
{
    log_to_journal = stderr_is_journal();
    /* sd_journal_sendv drops records silently when the socket is
     * missing; the stream keeps them then. */
    struct stat st;
    journal_native = log_to_journal && stat(JOURNAL_SOCKET, &st) == 0 &&
                     S_ISSOCK(st.st_mode);
    srv_log_set_level(level);
}

void srv_log_set_level(int level)
{
    if (level < SRV_LOG_ERR)
        level = SRV_LOG_ERR;
    if (level > SRV_LOG_DEBUG)
        level = SRV_LOG_DEBUG;
    atomic_store(&log_level, level);
}

int srv_log_get_level(void)
{
    return atomic_load(&log_level);
}

bool srv_log_journal(void)
{
    return log_to_journal;
}

const char *srv_log_level_name(int level)
{
    if (level < 0 || level > 7)
        return "unknown";
    return level_names[level];
}

int srv_log_level_parse(const char *s, int *ret_level)
{
    static const struct {
        const char *name;
        int level;
    } names[] = {{"error", SRV_LOG_ERR},     {"err", SRV_LOG_ERR},
                 {"warning", SRV_LOG_WARNING}, {"warn", SRV_LOG_WARNING},
                 {"notice", SRV_LOG_NOTICE}, {"info", SRV_LOG_INFO},
                 {"debug", SRV_LOG_DEBUG}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcasecmp(s, names[i].name) == 0) {
            *ret_level = names[i].level;
            return 0;
        }
    return -EINVAL;
}

static void write_all(const char *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(STDERR_FILENO, p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}

/* One record to the journal socket: 0 or sd_journal_sendv's -errno. */
static int journal_send(int level, const srv_log_fields *f, const char *msg)
{
    char m[2100], p[16], sess[40], job[128], code[64];
    struct iovec iov[6];
    int n = 0;
#define FIELD(buf, ...)                                                   \
    do {                                                                  \
        int len_ = snprintf(buf, sizeof(buf), __VA_ARGS__);               \
        if (len_ < 0)                                                     \
            len_ = 0;                                                     \
        if ((size_t)len_ >= sizeof(buf))                                  \
            len_ = (int)sizeof(buf) - 1;                                  \
        iov[n].iov_base = buf;                                            \
        iov[n++].iov_len = (size_t)len_;                                  \
    } while (0)
    FIELD(m, "MESSAGE=%s", msg);
    FIELD(p, "PRIORITY=%d", level);
    static char ident[] = "SYSLOG_IDENTIFIER=hyperoffloadd";
    iov[n].iov_base = ident;
    iov[n++].iov_len = sizeof(ident) - 1;
    if (f && f->session)
        FIELD(sess, "HO_SESSION=%llu", (unsigned long long)f->session);
    if (f && f->job && f->job[0])
        FIELD(job, "HO_JOB=%s", f->job);
    if (f && f->code < 0)
        FIELD(code, "HO_CODE=%s", ho_err_name(f->code));
#undef FIELD
    return sd_journal_sendv(iov, n);
}

static void log_v(int level, const srv_log_fields *f, const char *fmt,
                  va_list ap)
{
    if (level > atomic_load(&log_level))
        return;
    char line[2048];
    size_t n = 0;
    if (!log_to_journal) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
        n += (size_t)snprintf(line + n, sizeof(line) - n,
                              ".%03ld %s: ", ts.tv_nsec / 1000000L,
                              srv_log_level_name(level));
    }
    int m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    if (m < 0)
        m = 0;
    n += (size_t)m;
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    /* One line per record: newlines inside a message would split it. */
    for (size_t i = 0; i < n; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    line[n] = '\0';
    if (log_to_journal) {
        if (journal_native && journal_send(level, f, line) >= 0)
            return;
        /* No journal socket: the stream, with the priority prefix, in
         * one write like every other line (log.h). */
        char out[sizeof(line) + 8];
        int k = snprintf(out, 8, "<%d>", level);
        memcpy(out + k, line, n);
        out[k + n] = '\n';
        write_all(out, (size_t)k + n + 1);
        return;
    }
    line[n++] = '\n';
    write_all(line, n);
}

void srv_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_v(level, NULL, fmt, ap);
    va_end(ap);
}

void srv_logx(int level, const srv_log_fields *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_v(level, f, fmt, ap);
    va_end(ap);
}
