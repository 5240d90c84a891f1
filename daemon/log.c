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
#include <time.h>
#include <unistd.h>

static atomic_int log_level = SRV_LOG_INFO;
static bool log_to_journal;

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

void srv_log(int level, const char *fmt, ...)
{
    if (level > atomic_load(&log_level))
        return;
    char line[2048];
    size_t n = 0;
    if (log_to_journal) {
        n = (size_t)snprintf(line, sizeof(line), "<%d>", level);
    } else {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
        n += (size_t)snprintf(line + n, sizeof(line) - n,
                              ".%03ld %s: ", ts.tv_nsec / 1000000L,
                              srv_log_level_name(level));
    }
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    n += (size_t)m;
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    /* One line per record: newlines inside a message would split it. */
    for (size_t i = 0; i < n; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    line[n++] = '\n';
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(STDERR_FILENO, line + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}
