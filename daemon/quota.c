/* daemon/quota.c - see quota.h. */
#include "daemon/quota.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"

struct srv_quota {
    char *path;
    srv_quota_entry *entries;
    size_t n, cap;
};

const char *srv_tier_name(srv_tier t)
{
    switch (t) {
    case SRV_TIER_DDR: return "ddr";
    case SRV_TIER_FLASH: return "flash";
    case SRV_TIER_HBM: return "hbm";
    }
    return "?";
}

void srv_quota_subject_name(srv_subject_kind kind, uint32_t uid,
                            const char *job, char *buf, size_t len)
{
    if (kind == SRV_SUBJECT_UID)
        snprintf(buf, len, "uid %u", uid);
    else
        snprintf(buf, len, "job %s", job);
}

static int tier_parse(const char *s, srv_tier *ret_tier)
{
    for (int t = SRV_TIER_DDR; t <= SRV_TIER_HBM; t++)
        if (strcmp(s, srv_tier_name((srv_tier)t)) == 0) {
            *ret_tier = (srv_tier)t;
            return 0;
        }
    return -EINVAL;
}

bool srv_quota_job_valid(const char *job)
{
    size_t n = job ? strlen(job) : 0;
    if (n == 0 || n > SRV_JOB_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)job[i]) || (unsigned char)job[i] > 126)
            return false;
    return true;
}

static bool same_subject(const srv_quota_entry *e, srv_subject_kind kind,
                         uint32_t uid, const char *job, srv_tier tier)
{
    if (e->kind != kind || e->tier != tier)
        return false;
    return kind == SRV_SUBJECT_UID ? e->uid == uid
                                   : strcmp(e->job, job ? job : "") == 0;
}

static long find(const srv_quota *q, srv_subject_kind kind, uint32_t uid,
                 const char *job, srv_tier tier)
{
    for (size_t i = 0; i < q->n; i++)
        if (same_subject(&q->entries[i], kind, uid, job, tier))
            return (long)i;
    return -1;
}

uint64_t srv_quota_limit(const srv_quota *q, srv_subject_kind kind,
                         uint32_t uid, const char *job, srv_tier tier)
{
    long i = find(q, kind, uid, job, tier);
    return i < 0 ? 0 : q->entries[i].limit;
}

uint64_t srv_quota_tier_sum(const srv_quota *q, srv_tier tier)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < q->n; i++)
        if (q->entries[i].tier == tier) /* saturating: limits are u64 */
            sum = sum + q->entries[i].limit < sum
                      ? UINT64_MAX : sum + q->entries[i].limit;
    return sum;
}

size_t srv_quota_count(const srv_quota *q) { return q->n; }
const char *srv_quota_path(const srv_quota *q) { return q->path; }

const srv_quota_entry *srv_quota_at(const srv_quota *q, size_t i)
{
    return i < q->n ? &q->entries[i] : NULL;
}

static int reserve(srv_quota *q, size_t want)
{
    if (want <= q->cap)
        return 0;
    size_t ncap = q->cap ? q->cap * 2 : 16;
    while (ncap < want)
        ncap *= 2;
    srv_quota_entry *ne = realloc(q->entries, ncap * sizeof(*ne));
    if (!ne)
        return -ENOMEM;
    q->entries = ne;
    q->cap = ncap;
    return 0;
}

/* Write entries[0..n) to the file atomically. */
static void write_entries(FILE *f, const srv_quota_entry *entries, size_t n)
{
    fprintf(f, "# hyperoffloadd quotas (written by the daemon; edit with "
               "hoctl quota)\n# <uid|job> SUBJECT <ddr|flash|hbm> "
               "LIMIT_BYTES\n");
    for (size_t i = 0; i < n; i++) {
        const srv_quota_entry *e = &entries[i];
        if (e->kind == SRV_SUBJECT_UID)
            fprintf(f, "uid %u %s %llu\n", e->uid, srv_tier_name(e->tier),
                    (unsigned long long)e->limit);
        else
            fprintf(f, "job %s %s %llu\n", e->job, srv_tier_name(e->tier),
                    (unsigned long long)e->limit);
    }
}

/* Make a rename in path's directory durable (best effort). */
static void sync_parent_dir(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}

static int save(const srv_quota *q, const srv_quota_entry *entries, size_t n,
                char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    int rc = 0;
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", q->path) >= (int)sizeof(tmp))
        return ho_errf(err, errlen, -ENAMETOOLONG, "%s: path too long",
                       q->path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0) {
        rc = -errno;
        return ho_errf(err, errlen, rc, "%s: %s", tmp, strerror(errno));
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        rc = -errno;
        close(fd);
        unlink(tmp);
        return ho_errf(err, errlen, rc, "%s: %s", tmp, strerror(-rc));
    }
    write_entries(f, entries, n);
    if (fflush(f) != 0 || ferror(f)) {
        rc = -(errno ? errno : EIO);
        goto fail_file;
    }
    if (fsync(fileno(f)) != 0) {
        rc = -errno;
        goto fail_file;
    }
    if (fclose(f) != 0) {
        rc = -errno;
        f = NULL;
        goto fail_file;
    }
    f = NULL;
    if (rename(tmp, q->path) != 0) {
        rc = -errno;
        goto fail_file;
    }
    sync_parent_dir(q->path);
    return 0;
fail_file:
    ho_errf(err, errlen, 0, "writing %s: %s", tmp, strerror(-rc));
    if (f)
        fclose(f);
    unlink(tmp);
    return rc;
}

static int check_entry(const srv_quota_entry *e, char *err, size_t errlen)
{
    if (e->kind != SRV_SUBJECT_UID && e->kind != SRV_SUBJECT_JOB)
        return ho_errf(err, errlen, -EINVAL,
                       "quota subject kind %d is neither uid nor job",
                       (int)e->kind);
    if (e->tier < SRV_TIER_DDR || e->tier > SRV_TIER_HBM)
        return ho_errf(err, errlen, -EINVAL,
                       "quota tier %d is not DDR, FLASH or HBM", (int)e->tier);
    if (e->kind == SRV_SUBJECT_JOB && !srv_quota_job_valid(e->job))
        return ho_errf(err, errlen, -EINVAL,
                       "job name '%.40s' is not 1..%d printable "
                       "characters without spaces",
                       e->job, SRV_JOB_MAX);
    if (e->limit == 0)
        return ho_errf(err, errlen, HO_E_INVALID_SIZE,
                       "a quota limit of 0 bytes is not allowed (clear "
                       "the quota to remove it)");
    return 0;
}

int srv_quota_set(srv_quota *q, const srv_quota_entry *e, char *err,
                  size_t errlen)
{
    int rc = check_entry(e, err, errlen);
    if (rc < 0)
        return rc;
    long i = find(q, e->kind, e->uid, e->job, e->tier);
    if (i < 0 && q->n >= SRV_QUOTA_MAX_ENTRIES)
        return ho_errf(err, errlen, -E2BIG,
                       "the quota store holds its maximum of %d entries",
                       SRV_QUOTA_MAX_ENTRIES);
    rc = reserve(q, q->n + 1);
    if (rc < 0)
        return ho_errf(err, errlen, rc, "out of memory");
    /* Build the new state in place but write it before committing. */
    srv_quota_entry saved;
    size_t n = q->n;
    if (i >= 0) {
        saved = q->entries[i];
        q->entries[i] = *e;
    } else {
        q->entries[n++] = *e;
    }
    if (e->kind == SRV_SUBJECT_UID)
        q->entries[i >= 0 ? (size_t)i : n - 1].job[0] = '\0';
    else
        q->entries[i >= 0 ? (size_t)i : n - 1].uid = 0;
    rc = save(q, q->entries, n, err, errlen);
    if (rc < 0) {
        if (i >= 0)
            q->entries[i] = saved;
        return rc;
    }
    q->n = n;
    return 0;
}

int srv_quota_clear(srv_quota *q, srv_subject_kind kind, uint32_t uid,
                    const char *job, srv_tier tier, char *err, size_t errlen)
{
    long i = find(q, kind, uid, job, tier);
    if (i < 0)
        return 0;
    srv_quota_entry removed = q->entries[i];
    memmove(&q->entries[i], &q->entries[i + 1],
            (q->n - (size_t)i - 1) * sizeof(q->entries[0]));
    int rc = save(q, q->entries, q->n - 1, err, errlen);
    if (rc < 0) {
        memmove(&q->entries[i + 1], &q->entries[i],
                (q->n - (size_t)i - 1) * sizeof(q->entries[0]));
        q->entries[i] = removed;
        return rc;
    }
    q->n--;
    return 1;
}

srv_quota *srv_quota_free(srv_quota *q)
{
    if (q) {
        free(q->path);
        free(q->entries);
        free(q);
    }
    return NULL;
}

/* The subject of a file line: "uid N" or "job NAME".  why is set on a
 * refusal. */
static void parse_subject(const char *kind, const char *subject,
                          srv_quota_entry *e, char *why, size_t whylen)
{
    if (strcmp(kind, "uid") == 0) {
        char *end;
        errno = 0;
        unsigned long long u = strtoull(subject, &end, 10);
        if (!isdigit((unsigned char)subject[0]) || *end || errno ||
            u > UINT32_MAX)
            snprintf(why, whylen, "'%s' is not a uid", subject);
        e->kind = SRV_SUBJECT_UID;
        e->uid = (uint32_t)u;
    } else if (strcmp(kind, "job") == 0) {
        e->kind = SRV_SUBJECT_JOB;
        if (!srv_quota_job_valid(subject))
            snprintf(why, whylen, "'%.40s' is not a job name", subject);
        else
            memcpy(e->job, subject, strlen(subject) + 1);
    } else {
        snprintf(why, whylen, "'%s' is neither 'uid' nor 'job'", kind);
    }
}

/* One entry line (p: the line without leading space) into *e; why is set
 * on a refusal (the first problem found). */
static void parse_entry(const srv_quota *q, const char *p, srv_quota_entry *e,
                        char *why, size_t whylen)
{
    char kind[8], subject[SRV_JOB_MAX + 2], tier[8], limit[32], extra[2];
    int n = sscanf(p, "%7s %129s %7s %31s %1s", kind, subject, tier, limit,
                   extra);
    memset(e, 0, sizeof(*e));
    if (n != 4)
        snprintf(why, whylen, "expected '<uid|job> SUBJECT <ddr|flash|hbm> "
                 "LIMIT_BYTES'");
    else
        parse_subject(kind, subject, e, why, whylen);
    if (!why[0] && tier_parse(tier, &e->tier) < 0)
        snprintf(why, whylen, "'%s' is not a tier (ddr, flash, hbm)", tier);
    if (!why[0]) {
        char *end;
        errno = 0;
        e->limit = strtoull(limit, &end, 10);
        if (!isdigit((unsigned char)limit[0]) || *end || errno ||
            e->limit == 0)
            snprintf(why, whylen, "'%s' is not a limit in bytes (a positive "
                     "integer)", limit);
    }
    if (!why[0] && find(q, e->kind, e->uid, e->job, e->tier) >= 0)
        snprintf(why, whylen, "duplicate entry");
    if (!why[0] && q->n >= SRV_QUOTA_MAX_ENTRIES)
        snprintf(why, whylen, "more than %d entries", SRV_QUOTA_MAX_ENTRIES);
}

static int load(srv_quota *q, char *err, size_t errlen)
{
    FILE *f = fopen(q->path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        int rc = -errno;
        return ho_errf(err, errlen, rc, "%s: %s", q->path, strerror(errno));
    }
    char line[512];
    unsigned lineno = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] != '\n' && !feof(f)) {
            rc = ho_errf(err, errlen, HO_E_BAD_CONFIG,
                         "%s:%u: line longer than %zu bytes", q->path, lineno,
                         sizeof(line) - 2);
            break;
        }
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#')
            continue;
        srv_quota_entry e;
        char why[200] = "";
        parse_entry(q, p, &e, why, sizeof(why));
        p[strcspn(p, "\n")] = '\0';
        if (why[0]) {
            rc = ho_errf(err, errlen, HO_E_BAD_CONFIG, "%s:%u: %s: '%.80s'",
                         q->path, lineno, why, p);
            break;
        }
        rc = reserve(q, q->n + 1);
        if (rc < 0)
            ho_errf(err, errlen, 0, "out of memory");
        else
            q->entries[q->n++] = e;
    }
    if (!rc && ferror(f))
        rc = ho_errf(err, errlen, -EIO, "%s: read error", q->path);
    fclose(f);
    return rc;
}

int srv_quota_open(const char *path, srv_quota **ret_q, char *err,
                   size_t errlen)
{
    srv_quota *q = calloc(1, sizeof(*q));
    if (!q || !(q->path = strdup(path))) {
        free(q);
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    }
    int rc = load(q, err, errlen);
    if (rc < 0) {
        srv_quota_free(q);
        return rc;
    }
    *ret_q = q;
    return 0;
}
