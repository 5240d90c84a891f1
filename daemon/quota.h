/*
 * daemon/quota.h - the quota store: limits per subject (a uid or a job
 * name) and tier (DDR, FLASH, HBM), persisted in one text file.
 *
 * File format (<state_dir>/quotas), one entry per line, '#' comments:
 *     uid 1000 ddr 2147483648
 *     job train-7b flash 1099511627776
 * Every change is written atomically: "<file>.tmp" is written and fsynced,
 * renamed over the file, and the directory is fsynced; a failed write
 * leaves both the file and the in-memory store as they were.
 *
 * The store knows nothing about usage: the daemon computes a subject's
 * current use and asks srv_quota_check().  Not thread-safe (loop thread).
 */
#ifndef HO_DAEMON_QUOTA_H
#define HO_DAEMON_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/srv_limits.h"

/* Values are those of hyperoffload.Tier / QuotaSubjectKind. */
typedef enum srv_tier {
    SRV_TIER_DDR = 1,
    SRV_TIER_FLASH = 2,
    SRV_TIER_HBM = 3,
} srv_tier;

typedef enum srv_subject_kind {
    SRV_SUBJECT_UID = 0,
    SRV_SUBJECT_JOB = 1,
} srv_subject_kind;

typedef struct srv_quota_entry {
    srv_subject_kind kind;
    uint32_t uid;                  /* kind == UID */
    char job[SRV_JOB_MAX + 1];     /* kind == JOB */
    srv_tier tier;
    uint64_t limit;                /* bytes, > 0 */
} srv_quota_entry;

typedef struct srv_quota srv_quota;

/* Open the store backed by `path`, loading it when it exists (a missing
 * file is an empty store).  On success *ret_q is owned by the caller
 * (srv_quota_free).  A malformed file is HO_E_BAD_CONFIG with
 * "PATH:LINE: ..." in err; -errno for I/O errors; -ENOMEM. */
int srv_quota_open(const char *path, srv_quota **ret_q, char *err,
                   size_t errlen);
srv_quota *srv_quota_free(srv_quota *q);   /* accepts NULL; returns NULL */

/* A job name is 1..SRV_JOB_MAX printable non-space ASCII bytes. */
bool srv_quota_job_valid(const char *job);
const char *srv_tier_name(srv_tier t);     /* "ddr", "flash", "hbm" */
/* The subject as messages name it: "uid 1000", "job train-7b". */
void srv_quota_subject_name(srv_subject_kind kind, uint32_t uid,
                            const char *job, char *buf, size_t len);

/* Set (insert or replace) a limit and persist.  limit must be > 0
 * (HO_E_INVALID_SIZE); -EINVAL for a bad tier, kind or job name;
 * -E2BIG when SRV_QUOTA_MAX_ENTRIES are stored; -errno from the write
 * (store unchanged then, err says why). */
int srv_quota_set(srv_quota *q, const srv_quota_entry *e, char *err,
                  size_t errlen);
/* Remove the subject's limit on the tier and persist.  Returns 1 when an
 * entry was removed, 0 when there was none, or a negative code as above. */
int srv_quota_clear(srv_quota *q, srv_subject_kind kind, uint32_t uid,
                    const char *job, srv_tier tier, char *err, size_t errlen);

/* The limit of the subject on the tier, 0 when none. */
uint64_t srv_quota_limit(const srv_quota *q, srv_subject_kind kind,
                         uint32_t uid, const char *job, srv_tier tier);

/* The sum of the limits set on `tier` (every subject): on DDR what the
 * quotas reserve of the pool (docs/admin.md, Quotas). */
uint64_t srv_quota_tier_sum(const srv_quota *q, srv_tier tier);

/* Entries in insertion order (index < srv_quota_count). */
size_t srv_quota_count(const srv_quota *q);
const srv_quota_entry *srv_quota_at(const srv_quota *q, size_t i);

/* The file path (owned by the store). */
const char *srv_quota_path(const srv_quota *q);

#endif
