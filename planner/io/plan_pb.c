/*
 * planner/pb.c - the protobuf forms of a trace and a schedule
 * (proto/plan.proto), and the format-detecting file readers.
 *
 * The protobuf messages mirror the JSON documents field for field and the
 * readers apply the same bounds and the same messages (fmt_private.h), so
 * JSON -> protobuf -> JSON is byte-identical.  Proto3 cannot tell a zero
 * value from a missing one: where JSON has a default, protobuf carries the
 * value explicitly (every writer here fills every field).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/io/io_private.h"
#include "hyperoffload/errors.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"
#include "proto/plan.pb-c.h"

/* Same checks as the JSON writer: what we write must read back. */
static int check_trace_writable(const plan_trace *t)
{
    if (!plan_fmt_utf8_ok(t->name, strlen(t->name)))
        return -EINVAL;
    for (uint32_t i = 0; i < t->n_storages; i++)
        if (t->storages[i].id > PLAN_FMT_MAX_ID)
            return -ERANGE;
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const char *n = plan_op_name(t, i);
        if (!plan_fmt_utf8_ok(n, strlen(n)))
            return -EINVAL;
    }
    return 0;
}

int plan_trace_to_pb(const plan_trace *t, uint8_t **ret_buf, size_t *ret_len)
{
    Hyperoffload__Trace m = HYPEROFFLOAD__TRACE__INIT;
    Hyperoffload__Link link = HYPEROFFLOAD__LINK__INIT;
    Hyperoffload__Storage *st = NULL, **stp = NULL;
    Hyperoffload__Op *ops = NULL, **opp = NULL;
    uint64_t *ids = NULL;
    uint8_t *buf = NULL;
    size_t len;
    int r;

    if ((r = check_trace_writable(t)) < 0)
        return r;
    st = calloc(t->n_storages ? t->n_storages : 1, sizeof *st);
    stp = calloc(t->n_storages ? t->n_storages : 1, sizeof *stp);
    ops = calloc(t->n_ops ? t->n_ops : 1, sizeof *ops);
    opp = calloc(t->n_ops ? t->n_ops : 1, sizeof *opp);
    ids = malloc((t->n_refs ? t->n_refs : 1) * sizeof *ids);
    if (!st || !stp || !ops || !opp || !ids) {
        r = -ENOMEM;
        goto out;
    }
    m.format = (char *)PLAN_FMT_TRACE;
    m.version = PLAN_FMT_VERSION;
    m.name = t->name;
    link.h2d_gbps = t->link.h2d_gbps;
    link.d2h_gbps = t->link.d2h_gbps;
    link.latency_us = t->link.latency_us;
    link.duplex = t->link.duplex;
    m.link = &link;
    for (uint32_t i = 0; i < t->n_storages; i++) {
        const plan_storage *s = &t->storages[i];
        hyperoffload__storage__init(&st[i]);
        st[i].id = s->id;
        st[i].bytes = s->bytes;
        st[i].kind = (Hyperoffload__StorageKind)s->kind;
        st[i].initial = (Hyperoffload__StorageInitial)s->initial;
        st[i].retained = s->retained;
        st[i].pinned = s->pinned;
        st[i].movable = s->movable;
        stp[i] = &st[i];
    }
    m.n_storages = t->n_storages;
    m.storages = stp;
    for (uint64_t k = 0; k < t->n_refs; k++)
        ids[k] = t->storages[t->refs[k]].id;
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *o = &t->ops[i];
        hyperoffload__op__init(&ops[i]);
        ops[i].name = (char *)plan_op_name(t, i);
        ops[i].duration_us = o->duration_us + 0.0;
        ops[i].n_reads = o->n_reads;
        ops[i].reads = ids + o->first_ref;
        ops[i].n_writes = o->n_writes;
        ops[i].writes = ids + o->first_ref + o->n_reads;
        opp[i] = &ops[i];
    }
    m.n_ops = t->n_ops;
    m.ops = opp;
    len = hyperoffload__trace__get_packed_size(&m);
    buf = malloc(len ? len : 1);
    if (!buf) {
        r = -ENOMEM;
        goto out;
    }
    hyperoffload__trace__pack(&m, buf);
    *ret_buf = buf;
    *ret_len = len;
    r = 0;
out:
    free(st);
    free(stp);
    free(ops);
    free(opp);
    free(ids);
    return r;
}

/* Checks shared by both unpackers: format and version. */
static int check_header(const char *format, uint32_t version,
                        const char *want, int code, char *err, size_t errlen)
{
    if (strcmp(format, want) != 0) {
        if (!plan_fmt_utf8_ok(format, strlen(format)) || strlen(format) > 40)
            return ho_errf(err, errlen, code,
                                 "format: expected \"%s\", got something "
                                 "else", want);
        return ho_errf(err, errlen, code,
                             "format: expected \"%s\", got \"%s\"", want,
                             format);
    }
    if (version != PLAN_FMT_VERSION)
        return ho_errf(err, errlen, code,
                             "version: unsupported version %u", version);
    return 0;
}

static int check_name(const char *name, size_t max, const char *place,
                      int code, char *err, size_t errlen)
{
    size_t n = strlen(name);
    if (n > max)
        return ho_errf(err, errlen, code, "%s: longer than %zu bytes",
                             place, max);
    if (!plan_fmt_utf8_ok(name, n))
        return ho_errf(err, errlen, code, "%s: not valid UTF-8",
                             place);
    return 0;
}

static int check_double(double v, double min, bool min_open, double max,
                        const char *place, const char *what, int code,
                        char *err, size_t errlen)
{
    if (!isfinite(v) || v < min || (min_open && v == min) || v > max)
        return ho_errf(err, errlen, code, "%s: must be %s (at most "
                             "%g), got %.17g", place, what, max, v);
    return 0;
}

static int trace_from_msg(const Hyperoffload__Trace *m, plan_trace **ret_trace,
                          char *err, size_t errlen)
{
    const int code = HO_E_BAD_TRACE;
    char place[64], ierr[160];
    plan_trace *t = NULL;
    plan_link link;
    uint32_t *idx = NULL;
    uint64_t total_refs = 0;
    int r;

    if ((r = check_header(m->format, m->version, PLAN_FMT_TRACE, code, err,
                          errlen)) < 0 ||
        (r = check_name(m->name, PLAN_FMT_MAX_NAME, "name", code, err,
                        errlen)) < 0)
        return r;
    if (!m->link)
        return ho_errf(err, errlen, code,
                             "link: missing required field");
    link.h2d_gbps = m->link->h2d_gbps;
    link.d2h_gbps = m->link->d2h_gbps;
    link.latency_us = m->link->latency_us + 0.0;
    link.duplex = m->link->duplex;
    if ((r = check_double(link.h2d_gbps, 0.0, true, PLAN_FMT_MAX_GBPS,
                          "link.h2d_gbps", "a positive number", code, err,
                          errlen)) < 0 ||
        (r = check_double(link.d2h_gbps, 0.0, true, PLAN_FMT_MAX_GBPS,
                          "link.d2h_gbps", "a positive number", code, err,
                          errlen)) < 0 ||
        (r = check_double(link.latency_us, 0.0, false,
                          PLAN_FMT_MAX_LATENCY_US, "link.latency_us",
                          "a non-negative number", code, err, errlen)) < 0)
        return r;
    if (m->n_storages > PLAN_MAX_STORAGES)
        return ho_errf(err, errlen, code, "storages: too many entries "
                             "(%zu > %u)", m->n_storages, PLAN_MAX_STORAGES);
    if (m->n_ops > PLAN_MAX_OPS)
        return ho_errf(err, errlen, code, "ops: too many entries "
                             "(%zu > %u)", m->n_ops, PLAN_MAX_OPS);
    if (m->n_ops == 0)
        return ho_errf(err, errlen, code,
                             "ops: a trace needs at least one op");
    t = plan_trace_new(m->name, &link);
    idx = malloc(sizeof *idx * PLAN_MAX_OP_REFS);
    if (!t || !idx) {
        r = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < m->n_storages; i++) {
        const Hyperoffload__Storage *ps = m->storages[i];
        plan_storage s;
        uint32_t prev;

        snprintf(place, sizeof place, "storages[%zu]", i);
        if (ps->id > PLAN_FMT_MAX_ID) {
            r = ho_errf(err, errlen, code, "%s.id: must be at most "
                              "%llu, got %llu", place,
                              (unsigned long long)PLAN_FMT_MAX_ID,
                              (unsigned long long)ps->id);
            goto fail;
        }
        if (ps->bytes == 0 || ps->bytes > PLAN_MAX_STORAGE_BYTES) {
            r = ho_errf(err, errlen, code, "%s.bytes: must be a "
                              "positive integer at most %llu, got %llu",
                              place, PLAN_MAX_STORAGE_BYTES,
                              (unsigned long long)ps->bytes);
            goto fail;
        }
        if ((unsigned)ps->kind >= PLAN_KIND__COUNT) {
            r = ho_errf(err, errlen, code, "%s.kind: unknown value %d",
                              place, (int)ps->kind);
            goto fail;
        }
        if ((unsigned)ps->initial >= PLAN_INIT__COUNT) {
            r = ho_errf(err, errlen, code,
                              "%s.initial: unknown value %d", place,
                              (int)ps->initial);
            goto fail;
        }
        prev = plan_trace_find(t, ps->id);
        if (prev != PLAN_NONE) {
            r = ho_errf(err, errlen, code, "%s.id: duplicate id %llu "
                              "(first at storages[%u])", place,
                              (unsigned long long)ps->id, prev);
            goto fail;
        }
        memset(&s, 0, sizeof s);
        s.id = ps->id;
        s.bytes = ps->bytes;
        s.kind = (uint8_t)ps->kind;
        s.initial = (uint8_t)ps->initial;
        s.retained = ps->retained;
        s.pinned = ps->pinned;
        s.movable = ps->movable;
        ierr[0] = '\0';
        r = plan_trace_add_storage(t, &s, NULL, ierr, sizeof ierr);
        if (r == -ENOMEM)
            goto fail;
        if (r < 0) {
            r = ho_errf(err, errlen, code, "%s: %s", place,
                              ierr[0] ? ierr : ho_strerror(r));
            goto fail;
        }
    }
    for (size_t i = 0; i < m->n_ops; i++) {
        const Hyperoffload__Op *po = m->ops[i];
        size_t n = po->n_reads + po->n_writes;

        snprintf(place, sizeof place, "ops[%zu].name", i);
        if ((r = check_name(po->name, PLAN_FMT_MAX_NAME, place, code, err,
                            errlen)) < 0)
            goto fail;
        snprintf(place, sizeof place, "ops[%zu].duration_us", i);
        if ((r = check_double(po->duration_us, 0.0, false,
                              PLAN_FMT_MAX_DURATION_US, place,
                              "a non-negative number", code, err,
                              errlen)) < 0)
            goto fail;
        snprintf(place, sizeof place, "ops[%zu]", i);
        if (po->n_reads > PLAN_MAX_OP_REFS || n > PLAN_MAX_OP_REFS) {
            r = ho_errf(err, errlen, code, "%s: more than %u "
                              "references", place, PLAN_MAX_OP_REFS);
            goto fail;
        }
        total_refs += n;
        if (total_refs > PLAN_MAX_REFS) {
            r = ho_errf(err, errlen, code, "%s: more than %u "
                              "references in the trace", place,
                              PLAN_MAX_REFS);
            goto fail;
        }
        for (size_t j = 0; j < n; j++) {
            bool rd = j < po->n_reads;
            uint64_t id = rd ? po->reads[j] : po->writes[j - po->n_reads];
            idx[j] = plan_trace_find(t, id);
            if (idx[j] == PLAN_NONE) {
                r = ho_errf(err, errlen, code, "%s.%s[%zu]: unknown "
                                  "storage id %llu", place,
                                  rd ? "reads" : "writes",
                                  rd ? j : j - po->n_reads,
                                  (unsigned long long)id);
                goto fail;
            }
        }
        ierr[0] = '\0';
        r = plan_trace_add_op(t, po->name, po->duration_us + 0.0, idx,
                              (uint32_t)po->n_reads, idx + po->n_reads,
                              (uint32_t)po->n_writes, ierr, sizeof ierr);
        if (r == -ENOMEM)
            goto fail;
        if (r < 0) {
            r = ho_errf(err, errlen, code, "%s: %s", place,
                              ierr[0] ? ierr : ho_strerror(r));
            goto fail;
        }
    }
    if ((r = plan_trace_finish(t, err, errlen)) < 0)
        goto fail;
    free(idx);
    *ret_trace = t;
    return 0;
fail:
    if (r == -ENOMEM)
        ho_errf(err, errlen, r, "out of memory");
    free(idx);
    plan_trace_free(t);
    return r;
}

int plan_trace_from_pb(const uint8_t *buf, size_t len, plan_trace **ret_trace,
                       char *err, size_t errlen)
{
    Hyperoffload__Trace *m;
    int r;

    if (err && errlen)
        err[0] = '\0';
    if (len > PLAN_FMT_MAX_FILE)
        return ho_errf(err, errlen, -EFBIG, "protobuf: larger than "
                             "%llu bytes",
                             (unsigned long long)PLAN_FMT_MAX_FILE);
    m = hyperoffload__trace__unpack(NULL, len, buf);
    if (!m)
        return ho_errf(err, errlen, HO_E_BAD_TRACE,
                             "protobuf: not a valid hyperoffload.Trace "
                             "message (truncated or corrupt)");
    r = trace_from_msg(m, ret_trace, err, errlen);
    hyperoffload__trace__free_unpacked(m, NULL);
    return r;
}

int plan_schedule_to_pb(const plan_schedule *s, uint8_t **ret_buf,
                        size_t *ret_len)
{
    Hyperoffload__Schedule m = HYPEROFFLOAD__SCHEDULE__INIT;
    Hyperoffload__Metrics met = HYPEROFFLOAD__METRICS__INIT;
    Hyperoffload__Action *acts = NULL, **actp = NULL;
    Hyperoffload__HomeEntry *homes = NULL, **homep = NULL;
    char planner[sizeof s->planner];
    size_t plen = strnlen(s->planner, sizeof s->planner), len;
    uint8_t *buf = NULL;
    int r;

    if (plen == sizeof s->planner || !plan_fmt_utf8_ok(s->planner, plen))
        return -EINVAL;
    if (s->budget_bytes > PLAN_FMT_MAX_U64)
        return -ERANGE;
    for (size_t i = 0; i < s->n_actions; i++)
        if (s->actions[i].storage_id > PLAN_FMT_MAX_ID)
            return -ERANGE;
    for (size_t i = 0; i < s->n_homes; i++)
        if (s->homes[i].storage_id > PLAN_FMT_MAX_ID ||
            s->homes[i].home > PLAN_HOME_HOST)
            return -ERANGE;
    memcpy(planner, s->planner, plen + 1);
    acts = calloc(s->n_actions ? s->n_actions : 1, sizeof *acts);
    actp = calloc(s->n_actions ? s->n_actions : 1, sizeof *actp);
    homes = calloc(s->n_homes ? s->n_homes : 1, sizeof *homes);
    homep = calloc(s->n_homes ? s->n_homes : 1, sizeof *homep);
    if (!acts || !actp || !homes || !homep) {
        r = -ENOMEM;
        goto out;
    }
    m.format = (char *)PLAN_FMT_SCHEDULE;
    m.version = PLAN_FMT_VERSION;
    m.planner = planner;
    m.budget_bytes = s->budget_bytes;
    for (size_t i = 0; i < s->n_actions; i++) {
        const plan_action *a = &s->actions[i];
        hyperoffload__action__init(&acts[i]);
        acts[i].op = a->op;
        acts[i].when = (Hyperoffload__ActionWhen)a->when;
        acts[i].kind = (Hyperoffload__ActionKind)a->kind;
        acts[i].storage = a->storage_id;
        actp[i] = &acts[i];
    }
    m.n_actions = s->n_actions;
    m.actions = actp;
    for (size_t i = 0; i < s->n_homes; i++) {
        hyperoffload__home_entry__init(&homes[i]);
        homes[i].storage = s->homes[i].storage_id;
        homes[i].home = (Hyperoffload__Home)s->homes[i].home;
        homep[i] = &homes[i];
    }
    m.n_homes = s->n_homes;
    m.homes = homep;
    if (s->has_predicted) {
        const plan_metrics *p = &s->predicted;
        met.peak_device_bytes = p->peak_device_bytes;
        met.peak_host_bytes = p->peak_host_bytes;
        met.compute_us = p->compute_us + 0.0;
        met.step_time_us = p->step_time_us + 0.0;
        met.exposed_us = p->exposed_us + 0.0;
        met.h2d_bytes = p->h2d_bytes;
        met.d2h_bytes = p->d2h_bytes;
        m.predicted = &met;
        m.has_predicted = true;
    }
    len = hyperoffload__schedule__get_packed_size(&m);
    buf = malloc(len ? len : 1);
    if (!buf) {
        r = -ENOMEM;
        goto out;
    }
    hyperoffload__schedule__pack(&m, buf);
    *ret_buf = buf;
    *ret_len = len;
    r = 0;
out:
    free(acts);
    free(actp);
    free(homes);
    free(homep);
    return r;
}

static int schedule_from_msg(const Hyperoffload__Schedule *m,
                             plan_schedule **ret_schedule, char *err, size_t errlen)
{
    const int code = HO_E_BAD_SCHEDULE;
    plan_schedule *s = NULL;
    int r;

    if ((r = check_header(m->format, m->version, PLAN_FMT_SCHEDULE, code,
                          err, errlen)) < 0 ||
        (r = check_name(m->planner, PLAN_FMT_MAX_PLANNER, "planner", code,
                        err, errlen)) < 0)
        return r;
    if (m->budget_bytes > PLAN_FMT_MAX_U64)
        return ho_errf(err, errlen, code, "budget_bytes: must be at "
                             "most %llu, got %llu",
                             (unsigned long long)PLAN_FMT_MAX_U64,
                             (unsigned long long)m->budget_bytes);
    if (m->n_actions > PLAN_MAX_ACTIONS)
        return ho_errf(err, errlen, code, "actions: too many entries "
                             "(%zu > %u)", m->n_actions, PLAN_MAX_ACTIONS);
    if (m->n_homes > PLAN_MAX_HOMES)
        return ho_errf(err, errlen, code, "homes: too many entries "
                             "(%zu > %u)", m->n_homes, PLAN_MAX_HOMES);
    if (m->has_predicted && !m->predicted)
        return ho_errf(err, errlen, code, "predicted: has_predicted "
                             "is set but predicted is missing");
    s = plan_schedule_new(m->planner, m->budget_bytes);
    if (!s) {
        r = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < m->n_actions; i++) {
        const Hyperoffload__Action *a = m->actions[i];
        if (a->op >= PLAN_MAX_OPS) {
            r = ho_errf(err, errlen, code, "actions[%zu].op: must be "
                              "at most %u, got %u", i, PLAN_MAX_OPS - 1u,
                              a->op);
            goto fail;
        }
        if ((unsigned)a->when > PLAN_AFTER) {
            r = ho_errf(err, errlen, code, "actions[%zu].when: "
                              "unknown value %d", i, (int)a->when);
            goto fail;
        }
        if ((unsigned)a->kind >= PLAN_ACT__COUNT) {
            r = ho_errf(err, errlen, code, "actions[%zu].kind: "
                              "unknown value %d", i, (int)a->kind);
            goto fail;
        }
        if (a->storage > PLAN_FMT_MAX_ID) {
            r = ho_errf(err, errlen, code, "actions[%zu].storage: "
                              "must be at most %llu, got %llu", i,
                              (unsigned long long)PLAN_FMT_MAX_ID,
                              (unsigned long long)a->storage);
            goto fail;
        }
        r = plan_schedule_push_id(s, a->op, (plan_when)a->when,
                                  (plan_act_kind)a->kind, a->storage);
        if (r == -ENOMEM)
            goto fail;
        if (r < 0) {
            r = ho_errf(err, errlen, code, "actions[%zu]: %s", i,
                              ho_strerror(r));
            goto fail;
        }
    }
    for (size_t i = 0; i < m->n_homes; i++) {
        const Hyperoffload__HomeEntry *h = m->homes[i];
        if (h->storage > PLAN_FMT_MAX_ID) {
            r = ho_errf(err, errlen, code, "homes[%zu].storage: must be at "
                        "most %llu, got %llu", i,
                        (unsigned long long)PLAN_FMT_MAX_ID,
                        (unsigned long long)h->storage);
            goto fail;
        }
        if ((unsigned)h->home > PLAN_HOME_HOST) {
            r = ho_errf(err, errlen, code, "homes[%zu].home: unknown value "
                        "%d", i, (int)h->home);
            goto fail;
        }
        r = plan_schedule_push_home_id(s, h->storage, (plan_home)h->home);
        if (r < 0)
            goto fail;
    }
    if (m->has_predicted) {
        const Hyperoffload__Metrics *p = m->predicted;
        if (p->peak_device_bytes > PLAN_FMT_MAX_U64 ||
            p->peak_host_bytes > PLAN_FMT_MAX_U64 ||
            p->h2d_bytes > PLAN_FMT_MAX_U64 ||
            p->d2h_bytes > PLAN_FMT_MAX_U64 ||
            !isfinite(p->compute_us) || !isfinite(p->step_time_us) ||
            !isfinite(p->exposed_us)) {
            r = ho_errf(err, errlen, code, "predicted: a figure is out "
                              "of range (integers at most %llu, finite "
                              "doubles)",
                              (unsigned long long)PLAN_FMT_MAX_U64);
            goto fail;
        }
        s->has_predicted = true;
        s->predicted.peak_device_bytes = p->peak_device_bytes;
        s->predicted.peak_host_bytes = p->peak_host_bytes;
        s->predicted.compute_us = p->compute_us + 0.0;
        s->predicted.step_time_us = p->step_time_us + 0.0;
        s->predicted.exposed_us = p->exposed_us + 0.0;
        s->predicted.h2d_bytes = p->h2d_bytes;
        s->predicted.d2h_bytes = p->d2h_bytes;
    }
    *ret_schedule = s;
    return 0;
fail:
    if (r == -ENOMEM)
        ho_errf(err, errlen, r, "out of memory");
    plan_schedule_free(s);
    return r;
}

int plan_schedule_from_pb(const uint8_t *buf, size_t len,
                          plan_schedule **ret_schedule, char *err, size_t errlen)
{
    Hyperoffload__Schedule *m;
    int r;

    if (err && errlen)
        err[0] = '\0';
    if (len > PLAN_FMT_MAX_FILE)
        return ho_errf(err, errlen, -EFBIG, "protobuf: larger than "
                             "%llu bytes",
                             (unsigned long long)PLAN_FMT_MAX_FILE);
    m = hyperoffload__schedule__unpack(NULL, len, buf);
    if (!m)
        return ho_errf(err, errlen, HO_E_BAD_SCHEDULE,
                             "protobuf: not a valid hyperoffload.Schedule "
                             "message (truncated or corrupt)");
    r = schedule_from_msg(m, ret_schedule, err, errlen);
    hyperoffload__schedule__free_unpacked(m, NULL);
    return r;
}

/* ------------------------------------------------------------ file readers */

int plan_trace_read_file(const char *path, plan_trace **ret_trace, char *err,
                         size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    int r = plan_fmt_slurp(path, &buf, &len, err, errlen);

    if (r < 0)
        return r;
    if (plan_fmt_looks_json(buf, len))
        r = plan_trace_parse_json(buf, len, ret_trace, err, errlen);
    else
        r = plan_trace_from_pb((const uint8_t *)buf, len, ret_trace, err, errlen);
    free(buf);
    return r;
}

int plan_schedule_read_file(const char *path, plan_schedule **ret_schedule,
                            char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    int r = plan_fmt_slurp(path, &buf, &len, err, errlen);

    if (r < 0)
        return r;
    if (plan_fmt_looks_json(buf, len))
        r = plan_schedule_parse_json(buf, len, ret_schedule, err, errlen);
    else
        r = plan_schedule_from_pb((const uint8_t *)buf, len, ret_schedule, err,
                                  errlen);
    free(buf);
    return r;
}
