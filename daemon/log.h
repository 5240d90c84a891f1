/*
 * daemon/log.h - the daemon's log (stderr, or the journal).
 *
 * Two output styles, chosen once by srv_log_init():
 *  - journal: stderr is the journal stream (JOURNAL_STREAM names stderr's
 *    device:inode, the systemd convention): each record is sent with
 *    sd_journal_sendv as MESSAGE=, PRIORITY=, SYSLOG_IDENTIFIER=
 *    hyperoffloadd and, where the caller knows them (srv_logx), the
 *    structured fields HO_SESSION= (session id), HO_JOB= (job name) and
 *    HO_CODE= (error name, "HO_E_QUOTA", ho_err_name); when the journal
 *    socket (/run/systemd/journal/socket) is missing at srv_log_init, or
 *    refuses a datagram, the line goes to stderr as "<P>message" with the
 *    sd-daemon priority prefix, no timestamp (journald adds its own);
 *  - otherwise (TTY, file, pipe): "2024-05-01T12:00:00.123 info: message".
 * Only the loop thread and the startup/shutdown code log; the functions are
 * nevertheless safe to call from any thread (one write(2) per line).
 */
#ifndef HO_DAEMON_LOG_H
#define HO_DAEMON_LOG_H

#include <stdbool.h>
#include <stdint.h>

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

/* The structured fields of one record; 0 / NULL / "" leave a field out.
 * Outside the journal they are not printed (the message says what
 * matters). */
typedef struct srv_log_fields {
    uint64_t session;            /* HO_SESSION=, session id */
    const char *job;             /* HO_JOB= */
    int code;                    /* HO_CODE=, negative error code */
} srv_log_fields;

/* srv_log with structured fields (f may be NULL). */
void srv_logx(int level, const srv_log_fields *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* srv_logx with the fields given inline:
 *   srv_log_s(SRV_LOG_INFO, s->id, s->job, rc, "session %llu: ...", ...) */
#define srv_log_s(level, session_id, job_name, err_code, ...)             \
    srv_logx(level,                                                       \
             &(const srv_log_fields){.session = (session_id),             \
                                     .job = (job_name),                   \
                                     .code = (err_code)},                 \
             __VA_ARGS__)

#define srv_err(...) srv_log(SRV_LOG_ERR, __VA_ARGS__)
#define srv_warn(...) srv_log(SRV_LOG_WARNING, __VA_ARGS__)
#define srv_notice(...) srv_log(SRV_LOG_NOTICE, __VA_ARGS__)
#define srv_info(...) srv_log(SRV_LOG_INFO, __VA_ARGS__)
#define srv_debug(...) srv_log(SRV_LOG_DEBUG, __VA_ARGS__)

#endif
