/*
 * client/runtime/runtime_trace.c - traces (ho_trace_*): a thin, checked wrapper
 * around the planner's plan_trace, which keeps storage ids, derives the
 * access lists and reads/writes the JSON and protobuf forms.  Also the
 * runtime's thread-local error sentence.
 *
 * A trace is built with ho_trace_add_storage/ho_trace_add_op and becomes
 * read-only ("finished") the first time it is saved, planned or replayed;
 * adding to a finished trace is HO_E_STATE.
 */
#include "client/runtime/runtime_internal.h"
#include "planner/io/plan_io.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------------------- errors */

static _Thread_local char tl_error[HOR_ERRLEN];

int hor_fail(ho_client *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_error, sizeof(tl_error), fmt, ap);
    va_end(ap);
    if (c)
        hoc_fail(c, code, "%s", tl_error);
    return code;
}

HO_EXPORT const char *ho_runtime_last_error(void)
{
    return tl_error;
}

/* ----------------------------------------------------------- traces */

/* The link a trace gets when ho_trace_new is given none: a PCIe Gen5 x16
 * class host link. */
static const ho_link default_link = {
    .h2d_gbps = 25.0, .d2h_gbps = 25.0, .latency_us = 10.0, .duplex = 1};

static bool link_ok(const ho_link *l)
{
    return isfinite(l->h2d_gbps) && l->h2d_gbps > 0 &&
           isfinite(l->d2h_gbps) && l->d2h_gbps > 0 &&
           isfinite(l->latency_us) && l->latency_us >= 0;
}

HO_EXPORT int ho_trace_new(const char *name, const ho_link *link,
                           ho_trace **ret)
{
    if (!ret)
        return -EINVAL;
    if (!link)
        link = &default_link;
    if (!link_ok(link))
        return hor_fail(NULL, -EINVAL, "link bandwidths must be finite and "
                        "> 0 and the latency finite and >= 0");
    if (name && strlen(name) >= PLAN_MAX_NAME)
        return hor_fail(NULL, HO_E_INVALID_SIZE,
                        "trace name longer than %u bytes", PLAN_MAX_NAME - 1);
    plan_link pl = {.h2d_gbps = link->h2d_gbps,
                    .d2h_gbps = link->d2h_gbps,
                    .latency_us = link->latency_us,
                    .duplex = link->duplex != 0};
    ho_trace *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->pt = plan_trace_new(name ? name : "", &pl);
    if (!t->pt) {
        free(t);
        return -ENOMEM;
    }
    *ret = t;
    return 0;
}

HO_EXPORT ho_trace *ho_trace_free(ho_trace *t)
{
    if (t) {
        plan_trace_free(t->pt);
        free(t);
    }
    return NULL;
}

HO_EXPORT int ho_trace_add_storage(ho_trace *t, uint64_t id, uint64_t bytes,
                                   ho_storage_kind kind, ho_initial initial,
                                   unsigned flags)
{
    char err[HOR_DETAIL_LEN] = "";
    if (!t)
        return -EINVAL;
    if (t->pt->finished)
        return hor_fail(NULL, HO_E_STATE, "trace '%s' is finished (saved, "
                        "planned or replayed); storages cannot be added",
                        t->pt->name);
    if ((unsigned)kind >= PLAN_KIND__COUNT ||
        (unsigned)initial >= PLAN_INIT__COUNT ||
        (flags & ~(HO_STORAGE_RETAINED | HO_STORAGE_PINNED |
                   HO_STORAGE_MOVABLE)))
        return hor_fail(NULL, -EINVAL, "storage %llu: bad kind %d, initial "
                        "%d or flags 0x%x", (unsigned long long)id,
                        (int)kind, (int)initial, flags);
    if (bytes == 0 || bytes > PLAN_MAX_STORAGE_BYTES)
        return hor_fail(NULL, HO_E_INVALID_SIZE, "storage %llu: size %llu "
                        "is 0 or above %llu bytes", (unsigned long long)id,
                        (unsigned long long)bytes,
                        (unsigned long long)PLAN_MAX_STORAGE_BYTES);
    plan_storage s = {.id = id,
                      .bytes = bytes,
                      .kind = (uint8_t)kind,
                      .initial = (uint8_t)initial,
                      .retained = (flags & HO_STORAGE_RETAINED) != 0,
                      .pinned = (flags & HO_STORAGE_PINNED) != 0,
                      .movable = (flags & HO_STORAGE_MOVABLE) != 0};
    int rc = plan_trace_add_storage(t->pt, &s, NULL, err, sizeof(err));
    if (rc < 0)
        return hor_fail(NULL, rc, "storage %llu: %s", (unsigned long long)id,
                        err[0] ? err : ho_strerror(rc));
    return 0;
}

/* Map storage ids to indices into idx[]; HO_E_BAD_TRACE for an unknown id. */
static int map_ids(const ho_trace *t, uint32_t op, const char *what,
                   const uint64_t *ids, uint32_t n, uint32_t *idx)
{
    for (uint32_t k = 0; k < n; k++) {
        idx[k] = plan_trace_find(t->pt, ids[k]);
        if (idx[k] == PLAN_NONE)
            return hor_fail(NULL, HO_E_BAD_TRACE, "op %u %s[%u]: unknown "
                            "storage id %llu (add the storage first)", op,
                            what, k, (unsigned long long)ids[k]);
    }
    return 0;
}

HO_EXPORT int ho_trace_add_op(ho_trace *t, const char *name,
                              double duration_us, const uint64_t *reads,
                              uint32_t n_reads, const uint64_t *writes,
                              uint32_t n_writes)
{
    char err[HOR_DETAIL_LEN] = "";
    uint32_t *idx = NULL;
    int rc;

    if (!t || (n_reads && !reads) || (n_writes && !writes))
        return -EINVAL;
    uint32_t op = t->pt->n_ops;
    if (t->pt->finished)
        return hor_fail(NULL, HO_E_STATE, "trace '%s' is finished (saved, "
                        "planned or replayed); ops cannot be added",
                        t->pt->name);
    if (!isfinite(duration_us) || duration_us < 0)
        return hor_fail(NULL, -EINVAL, "op %u: duration must be finite and "
                        ">= 0", op);
    if ((uint64_t)n_reads + n_writes > PLAN_MAX_OP_REFS)
        return hor_fail(NULL, HO_E_INVALID_SIZE, "op %u: %llu storage "
                        "references, at most %u", op,
                        (unsigned long long)n_reads + n_writes,
                        PLAN_MAX_OP_REFS);
    if (name && strlen(name) >= PLAN_MAX_NAME)
        return hor_fail(NULL, HO_E_INVALID_SIZE, "op %u: name longer than "
                        "%u bytes", op, PLAN_MAX_NAME - 1);
    idx = malloc(((size_t)n_reads + n_writes + 1) * sizeof(*idx));
    if (!idx)
        return -ENOMEM;
    rc = map_ids(t, op, "reads", reads, n_reads, idx);
    if (rc < 0)
        goto out;
    rc = map_ids(t, op, "writes", writes, n_writes, idx + n_reads);
    if (rc < 0)
        goto out;
    rc = plan_trace_add_op(t->pt, name ? name : "", duration_us, idx,
                           n_reads, idx + n_reads, n_writes, err,
                           sizeof(err));
    if (rc < 0)
        hor_fail(NULL, rc, "op %u: %s", op, err[0] ? err : ho_strerror(rc));
out:
    free(idx);
    return rc;
}

int hor_trace_finish(const ho_trace *t)
{
    char err[HOR_DETAIL_LEN] = "";
    /* Finishing derives cached access lists; the trace's content does not
     * change, so a const trace may be finished. */
    plan_trace *pt = t->pt;
    if (pt->finished)
        return 0;
    int rc = plan_trace_finish(pt, err, sizeof(err));
    if (rc < 0)
        return hor_fail(NULL, rc, "trace '%s': %s", pt->name,
                        err[0] ? err : ho_strerror(rc));
    return 0;
}

HO_EXPORT int ho_trace_load(const char *path, ho_trace **ret)
{
    char err[HOR_DETAIL_LEN] = "";
    if (!path || !ret)
        return -EINVAL;
    ho_trace *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    int rc = plan_trace_read_file(path, &t->pt, err, sizeof(err));
    if (rc < 0) {
        free(t);
        return hor_fail(NULL, rc, "%s: %s", path,
                        err[0] ? err : ho_strerror(rc));
    }
    rc = hor_trace_finish(t);
    if (rc < 0) {
        ho_trace_free(t);
        return rc;
    }
    *ret = t;
    return 0;
}

static int write_trace(FILE *f, const void *obj)
{
    return plan_trace_write_json(obj, f);
}

HO_EXPORT int ho_trace_save(const ho_trace *t, const char *path)
{
    if (!t || !path)
        return -EINVAL;
    int rc = hor_trace_finish(t);
    if (rc < 0)
        return rc;
    return hor_write_file(path, "trace", write_trace, t->pt);
}

/* Write through a temporary file renamed over `path`, so a reader never
 * sees half a file.  `what` names the content in the error sentence. */
int hor_write_file(const char *path, const char *what,
                   int (*writer)(FILE *f, const void *obj), const void *obj)
{
    int rc;
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return -ENOMEM;
    snprintf(tmp, n + 16, "%s.tmp", path);
    FILE *f = fopen(tmp, "we");
    if (!f) {
        rc = -errno;
        hor_fail(NULL, rc, "%s: %s", tmp, strerror(-rc));
        goto out;
    }
    rc = writer(f, obj);
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc < 0) {
        hor_fail(NULL, rc, "cannot write %s %s: %s", what, path,
                 ho_strerror(rc));
        unlink(tmp);
    }
out:
    free(tmp);
    return rc;
}

HO_EXPORT uint32_t ho_trace_ops(const ho_trace *t)
{
    return t ? t->pt->n_ops : 0;
}
