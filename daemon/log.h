/*
 * daemon/log.h - the daemon's log (stderr only).
 *
 * Three output styles, chosen once by srv_log_init():
 *  - journal: stderr is the journal stream (JOURNAL_STREAM names stderr's
 *    device:inode): each line is "<P>message" with the sd-daemon priority
 *    prefix, no timestamp (journald adds its own);
 *  - otherwise (TTY, file, pipe): "2024-05-01T12:00:00.123 info: message".
 * Only the loop thread and the startup/shutdown code log; the functions are
 * nevertheless safe to call from any thread (one write(2) per line).
 */
#ifndef HO_DAEMON_LOG_H
#define HO_DAEMON_LOG_H

#include <stdbool.h>

/* syslog priorities, as used by sd-daemon prefixes. */
typedef enum srv_log_level {
    SRV_LOG_ERR = 3,
    SRV_LOG_WARNING = 4,
    SRV_LOG_NOTICE = 5,
    SRV_LOG_INFO = 6,
    SRV_LOG_DEBUG = 7,
} srv_log_level;

/* Decide the output style from the environment and stderr; set the level. */
void srv_log_init(int level);
void srv_log_set_level(int level);
int srv_log_get_level(void);
/* True when lines go to the journal with priority prefixes. */
bool srv_log_journal(void);

/* Name of a level ("error", "warning", "notice", "info", "debug"). */
const char *srv_log_level_name(int level);
/* Parse a level name (also "err", "warn"); 0 or -EINVAL. */
int srv_log_level_parse(const char *s, int *ret_level);

/* Log one line (a trailing newline is added) when level <= the current. */
void srv_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define srv_err(...) srv_log(SRV_LOG_ERR, __VA_ARGS__)
#define srv_warn(...) srv_log(SRV_LOG_WARNING, __VA_ARGS__)
#define srv_notice(...) srv_log(SRV_LOG_NOTICE, __VA_ARGS__)
#define srv_info(...) srv_log(SRV_LOG_INFO, __VA_ARGS__)
#define srv_debug(...) srv_log(SRV_LOG_DEBUG, __VA_ARGS__)

#endif
