/*
 * planner/io/plan_pb.c - the protobuf forms of a trace and a schedule
 * (proto/plan.proto), read and written directly on the wire format, and
 * the format-detecting file readers.
 *
 * The messages mirror the JSON documents field for field and the readers
 * apply the same bounds with the same sentences (io_private.h), so
 * JSON -> protobuf -> JSON is byte-identical.  Proto3 cannot tell a zero
 * value from a missing one: where JSON has a default, protobuf carries the
 * value explicitly, and the reader has no defaults of its own.
 *
 * Wire format.  Reading accepts what protobuf-c 1.4's generated
 * unpackers accept (the fuzz test in tests/planner/test_pb.c holds it to
 * that): tags of at most 5 bytes (field 0 refused only when the first byte
 * says so), varints of at most 10 bytes, length prefixes of at most 5
 * bytes and 2^31 - 1, a known field only with its own wire type (repeated
 * ids packed or not) except bools, which take any wire type and are true
 * when any byte of the field (a length prefix included) is, unknown
 * fields of wire types 0, 1, 2 and 5 skipped, the last value of a
 * repeated scalar field winning and a repeated message field replacing
 * the earlier one (proto3 scalars do not merge); uint32 and enum fields
 * keep the low 32 bits of their varint.
 * Any fault is "protobuf: not a valid hyperoffload.Trace message
 * (truncated or corrupt)", reported before any other error.  The trace is
 * built while the message is read: no per-element allocation.  Writing
 * produces the bytes protobuf-c packs (fields in number order, zero
 * scalars and empty strings left out, repeated ids packed), in one buffer
 * of the exact size.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/io/io_private.h"
#include "planner/io/plan_io.h"
#include "planner/plan.h"

/* ------------------------------------------------------------ wire: read */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct pbr {
    const uint8_t *p, *end;
} pbr;

static bool rd_varint(pbr *r, uint64_t *ret_value)
{
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return false;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *ret_value = v;
            return true;
        }
    }
    return false; /* more than 10 bytes */
}

/* A tag as protobuf-c reads one: at most 5 bytes, 32 bits of field
 * number, a first byte with no field bits refused. */
static bool rd_tag(pbr *r, uint32_t *ret_field, int *ret_wt)
{
    const uint8_t *p = r->p;
    size_t max = (size_t)(r->end - p) < 5 ? (size_t)(r->end - p) : 5;
    if (max == 0 || (p[0] & 0xf8) == 0)
        return false;
    uint32_t tag = (uint32_t)(p[0] & 0x7f) >> 3;
    unsigned shift = 4;
    *ret_wt = p[0] & 7;
    if (!(p[0] & 0x80)) {
        r->p++;
        *ret_field = tag;
        return true;
    }
    for (size_t i = 1; i < max; i++) {
        if (p[i] & 0x80) {
            tag |= (uint32_t)(p[i] & 0x7f) << shift;
            shift += 7;
        } else {
            tag |= (uint32_t)p[i] << shift;
            r->p += i + 1;
            *ret_field = tag;
            return true;
        }
    }
    return false;
}

/* A length-delimited payload into *ret_sub: a prefix of at most 5 bytes,
 * a length of at most 2^31 - 1 within the message. */
static bool rd_len(pbr *r, pbr *ret_sub)
{
    uint64_t n = 0;
    size_t max = (size_t)(r->end - r->p) < 5 ? (size_t)(r->end - r->p) : 5;
    size_t i;
    for (i = 0; i < max; i++) {
        n |= (uint64_t)(r->p[i] & 0x7f) << (7 * i);
        if (!(r->p[i] & 0x80))
            break;
    }
    if (i == max)
        return false;
    r->p += i + 1;
    if (n > 0x7fffffff || n > (uint64_t)(r->end - r->p))
        return false;
    ret_sub->p = r->p;
    ret_sub->end = r->p + n;
    r->p += n;
    return true;
}

static bool rd_double(pbr *r, double *ret_value)
{
    uint64_t v = 0;
    if (r->end - r->p < 8)
        return false;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += 8;
    memcpy(ret_value, &v, sizeof v);
    return true;
}

/* Skip a field of an unknown number. */
static bool rd_skip(pbr *r, int wt)
{
    uint64_t v;
    pbr sub;
    switch (wt) {
    case WT_VARINT:
        return rd_varint(r, &v);
    case WT_I64:
        if (r->end - r->p < 8)
            return false;
        r->p += 8;
        return true;
    case WT_LEN:
        return rd_len(r, &sub);
    case WT_I32:
        if (r->end - r->p < 4)
            return false;
        r->p += 4;
        return true;
    default: /* groups and reserved wire types */
        return false;
    }
}

/* The scalar fields a message reader wants, by wire type. */
static bool rd_u64(pbr *r, int wt, uint64_t *ret_value)
{
    return wt == WT_VARINT && rd_varint(r, ret_value);
}

static bool rd_u32(pbr *r, int wt, uint32_t *ret_value)
{
    uint64_t v;
    if (!rd_u64(r, wt, &v))
        return false;
    *ret_value = (uint32_t)v;
    return true;
}

static bool rd_enum(pbr *r, int wt, int32_t *ret_value)
{
    uint64_t v;
    if (!rd_u64(r, wt, &v))
        return false;
    *ret_value = (int32_t)(uint32_t)v;
    return true;
}

/* Any wire type: true when a byte of the field's data (a length prefix
 * included) has a bit of its low 7 set, as protobuf-c decides. */
static bool rd_bool(pbr *r, int wt, bool *ret_value)
{
    const uint8_t *start = r->p;
    if (!rd_skip(r, wt))
        return false;
    bool v = false;
    for (const uint8_t *q = start; q < r->p; q++)
        v |= (*q & 0x7f) != 0;
    *ret_value = v;
    return true;
}

static bool rd_f64(pbr *r, int wt, double *ret_value)
{
    return wt == WT_I64 && rd_double(r, ret_value);
}

typedef struct pbstr {
    const char *s;
    size_t len;
} pbstr;

static bool rd_str(pbr *r, int wt, pbstr *ret_value)
{
    pbr sub;
    if (wt != WT_LEN || !rd_len(r, &sub))
        return false;
    ret_value->s = (const char *)sub.p;
    ret_value->len = (size_t)(sub.end - sub.p);
    return true;
}

/* Repeated uint64: packed or one varint; appended to ids[*n] while there
 * is room (max), counted in *n beyond it. */
static bool rd_ids(pbr *r, int wt, uint64_t *ids, size_t *n, size_t max)
{
    uint64_t v;
    if (wt == WT_VARINT) {
        if (!rd_varint(r, &v))
            return false;
        if (*n < max)
            ids[*n] = v;
        (*n)++;
        return true;
    }
    pbr sub;
    if (wt != WT_LEN || !rd_len(r, &sub))
        return false;
    while (sub.p < sub.end) {
        if (!rd_varint(&sub, &v))
            return false;
        if (*n < max)
            ids[*n] = v;
        (*n)++;
    }
    return true;
}

static bool str_is(pbstr s, const char *want)
{
    return s.len == strlen(want) && memcmp(s.s, want, s.len) == 0;
}

/* A message's fields, by number (table index = number - 1): where each
 * value goes; numbers beyond the table or PF_SKIP are skipped. */
typedef enum pf_type {
    PF_SKIP = 0, PF_U64, PF_U32, PF_ENUM, PF_BOOL, PF_F64, PF_STR, PF_IDS,
    PF_MSG
} pf_type;

typedef struct pbf {
    uint8_t type;
    void *dst;   /* the value; PF_IDS: the id array */
    size_t *n;   /* PF_IDS: ids so far; PF_MSG: messages so far */
    bool (*msg)(void *ctx, pbr sub, size_t i); /* PF_MSG, entry i */
    void *ctx;
} pbf;

static bool read_fields(pbr r, const pbf *f, uint32_t nf)
{
    while (r.p < r.end) {
        uint32_t num;
        int wt;
        pbr sub;
        bool ok;
        if (!rd_tag(&r, &num, &wt))
            return false;
        const pbf *d = num >= 1 && num <= nf ? &f[num - 1] : NULL;
        switch (d ? d->type : PF_SKIP) {
        case PF_U64:
            ok = rd_u64(&r, wt, d->dst);
            break;
        case PF_U32:
            ok = rd_u32(&r, wt, d->dst);
            break;
        case PF_ENUM:
            ok = rd_enum(&r, wt, d->dst);
            break;
        case PF_BOOL:
            ok = rd_bool(&r, wt, d->dst);
            break;
        case PF_F64:
            ok = rd_f64(&r, wt, d->dst);
            break;
        case PF_STR:
            ok = rd_str(&r, wt, d->dst);
            break;
        case PF_IDS:
            ok = rd_ids(&r, wt, d->dst, d->n, PLAN_MAX_OP_REFS);
            break;
        case PF_MSG:
            ok = wt == WT_LEN && rd_len(&r, &sub) &&
                 d->msg(d->ctx, sub, (*d->n)++);
            break;
        default:
            ok = rd_skip(&r, wt);
        }
        if (!ok)
            return false;
    }
    return true;
}

#define F(t, p) {t, p, NULL, NULL, NULL}
#define FMSG(fn, ctx, n) {PF_MSG, NULL, n, fn, ctx}
#define FN(f) (uint32_t)(sizeof(f) / sizeof((f)[0]))

/* ------------------------------------------------------------ header */

/* The reader state of one document. */
typedef struct px {
    plan_rd rd;
    const char *what;       /* "Trace" / "Schedule" for the wire error */
    plan_trace *t;
    plan_schedule *s;
    uint64_t *rids, *wids;
    uint32_t *idx;
    uint64_t total_refs;
} px;

static int corrupt(px *c)
{
    return ho_errf(c->rd.err, c->rd.errlen, c->rd.code,
                   "protobuf: not a valid hyperoffload.%s message (truncated "
                   "or corrupt)", c->what);
}

static void check_header(px *c, uint64_t stage, pbstr format,
                         uint32_t version, const char *want)
{
    uint64_t key = RD_KEY(stage, 0);
    if (!str_is(format, want)) {
        if (format.len > 40 || !plan_fmt_utf8_ok(format.s, format.len))
            plan_rd_fail(&c->rd, key, "", "format", "expected \"%s\", got "
                         "something else", want);
        else
            plan_rd_fail(&c->rd, key, "", "format", "expected \"%s\", got "
                         "\"%.*s\"", want, (int)format.len, format.s);
        return;
    }
    if (version != PLAN_FMT_VERSION)
        plan_rd_fail(&c->rd, RD_KEY(stage + 1, 0), "", "version",
                     "unsupported version %u", version);
}

/* A finite double in range, else the error with the value as %.17g. */
static int check_double(px *c, uint64_t key, const char *place,
                        const char *field, double v, double min,
                        bool min_open, double max, const char *what)
{
    char got[40];
    if (plan_rd_double_ok(v, min, min_open, max))
        return 0;
    snprintf(got, sizeof got, "%.17g", v);
    return plan_rd_double(&c->rd, key, place, field, v, got, min, min_open,
                          max, what);
}

/* An enum value below `count`, else "place.field: unknown value V". */
static int check_enum(px *c, uint64_t key, const char *place,
                      const char *field, int32_t v, uint32_t count)
{
    if ((uint32_t)v < count)
        return 0;
    return plan_rd_fail(&c->rd, key, place, field, "unknown value %d", v);
}

static int parse_begin(px *c, const char *what, int code, size_t len,
                       char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    c->what = what;
    return plan_rd_begin(&c->rd, code, err, errlen, len, "protobuf");
}

/* ------------------------------------------------------------ trace */

enum {
    T_FORMAT = 1, T_VERSION, T_NAME, T_LINK, T_STORAGES, T_OPS, T_OPS_EMPTY,
    T_STORAGE, T_OP
};

/* The top-level fields of a Trace other than its entries. */
typedef struct ttop {
    pbstr format, name;
    uint32_t version;
    bool has_link;
    plan_link link;
    size_t n_storages, n_ops, n_links;
} ttop;

/* A later link replaces an earlier one (proto3 scalars do not merge). */
static bool link_msg(void *ctx, pbr r, size_t i)
{
    ttop *top = ctx;
    plan_link *l = &top->link;
    const pbf f[] = {F(PF_F64, &l->h2d_gbps), F(PF_F64, &l->d2h_gbps),
                     F(PF_F64, &l->latency_us), F(PF_BOOL, &l->duplex)};
    (void)i;
    memset(l, 0, sizeof(*l));
    top->has_link = true;
    return read_fields(r, f, FN(f));
}

static bool count_msg(void *ctx, pbr r, size_t i)
{
    (void)ctx;
    (void)r;
    (void)i;
    return true;
}

/* Pass 1: the header, the link, the entry counts; every top-level field
 * checked on the wire. */
static bool scan_trace(pbr r, ttop *top)
{
    const pbf f[] = {F(PF_STR, &top->format), F(PF_U32, &top->version),
                     F(PF_STR, &top->name),
                     FMSG(link_msg, top, &top->n_links),
                     FMSG(count_msg, NULL, &top->n_storages),
                     FMSG(count_msg, NULL, &top->n_ops)};
    memset(top, 0, sizeof(*top));
    top->format = top->name = (pbstr){"", 0};
    return read_fields(r, f, FN(f));
}

static void check_trace_top(px *c, const ttop *top)
{
    const plan_link *l = &top->link;
    uint64_t kl = RD_KEY(T_LINK, 0);

    check_header(c, T_FORMAT, top->format, top->version, PLAN_FMT_TRACE);
    plan_rd_name(&c->rd, RD_KEY(T_NAME, 0), "", "name", top->name.s,
                 top->name.len, PLAN_FMT_MAX_NAME);
    if (!top->has_link)
        plan_rd_fail(&c->rd, kl, "", "link", "missing required field");
    else if (check_double(c, kl, "link", "h2d_gbps", l->h2d_gbps, 0.0, true,
                          PLAN_FMT_MAX_GBPS, "a positive number") == 0 &&
             check_double(c, kl, "link", "d2h_gbps", l->d2h_gbps, 0.0, true,
                          PLAN_FMT_MAX_GBPS, "a positive number") == 0)
        check_double(c, kl, "link", "latency_us", l->latency_us, 0.0, false,
                     PLAN_FMT_MAX_LATENCY_US, "a non-negative number");
    if (top->n_storages > PLAN_MAX_STORAGES)
        plan_rd_fail(&c->rd, RD_KEY(T_STORAGES, 0), "", "storages",
                     "too many entries (%zu > %u)", top->n_storages,
                     PLAN_MAX_STORAGES);
    if (top->n_ops > PLAN_MAX_OPS)
        plan_rd_fail(&c->rd, RD_KEY(T_OPS, 0), "", "ops",
                     "too many entries (%zu > %u)", top->n_ops, PLAN_MAX_OPS);
    if (top->n_ops == 0)
        plan_rd_fail(&c->rd, RD_KEY(T_OPS_EMPTY, 0), "", "ops",
                     "a trace needs at least one op");
}

/* One Storage message: read, then (when worth it) checked and added. */
static bool storage_msg(void *ctx, pbr r, size_t i)
{
    px *c = ctx;
    uint64_t key = RD_KEY(T_STORAGE, i), id = 0, bytes = 0;
    int32_t kind = 0, initial = 0;
    bool retained = false, pinned = false, movable = false;
    char place[48];
    const pbf f[] = {F(PF_U64, &id), F(PF_U64, &bytes), F(PF_ENUM, &kind),
                     F(PF_ENUM, &initial), F(PF_BOOL, &retained),
                     F(PF_BOOL, &pinned), F(PF_BOOL, &movable)};

    if (!read_fields(r, f, FN(f)))
        return false;
    if (!plan_rd_worth(&c->rd, key) || c->rd.rc == -ENOMEM)
        return true;
    bool ok = id <= PLAN_FMT_MAX_ID && bytes >= 1 &&
              bytes <= PLAN_MAX_STORAGE_BYTES &&
              (uint32_t)kind < PLAN_KIND__COUNT &&
              (uint32_t)initial < PLAN_INIT__COUNT;
    if (!ok)
        plan_rd_place(place, "storages", i); /* only for the error */
    if (!ok &&
        (plan_rd_uint(&c->rd, key, place, "id", id, 0, PLAN_FMT_MAX_ID,
                      "a non-negative integer") < 0 ||
         plan_rd_uint(&c->rd, key, place, "bytes", bytes, 1,
                      PLAN_MAX_STORAGE_BYTES, "a positive integer") < 0 ||
         check_enum(c, key, place, "kind", kind, PLAN_KIND__COUNT) < 0 ||
         check_enum(c, key, place, "initial", initial, PLAN_INIT__COUNT) < 0))
        return true;
    plan_storage s = {.id = id, .bytes = bytes, .kind = (uint8_t)kind,
                      .initial = (uint8_t)initial, .retained = retained,
                      .pinned = pinned, .movable = movable};
    plan_rd_storage(&c->rd, key, c->t, i, &s);
    return true;
}

/* One Op message. */
static bool op_msg(void *ctx, pbr r, size_t i)
{
    px *c = ctx;
    uint64_t key = RD_KEY(T_OP, i);
    size_t nr = 0, nw = 0;
    pbstr name = {"", 0};
    double duration = 0;
    char place[48], nbuf[PLAN_MAX_NAME];
    const pbf f[] = {F(PF_STR, &name), F(PF_F64, &duration),
                     {PF_IDS, c->rids, &nr, NULL, NULL},
                     {PF_IDS, c->wids, &nw, NULL, NULL}};

    if (!read_fields(r, f, FN(f)))
        return false;
    if (!plan_rd_worth(&c->rd, key) || c->rd.rc == -ENOMEM)
        return true;
    duration += 0.0;
    /* Checked first without the place, which is formatted only for an
     * error (this runs once per op). */
    if (name.len > PLAN_FMT_MAX_NAME || !plan_fmt_utf8_ok(name.s, name.len) ||
        !plan_rd_double_ok(duration, 0.0, false, PLAN_FMT_MAX_DURATION_US) ||
        nr > PLAN_MAX_OP_REFS || nr + nw > PLAN_MAX_OP_REFS) {
        plan_rd_place(place, "ops", i);
        if (plan_rd_name(&c->rd, key, place, "name", name.s, name.len,
                         PLAN_FMT_MAX_NAME) < 0 ||
            check_double(c, key, place, "duration_us", duration, 0.0, false,
                         PLAN_FMT_MAX_DURATION_US,
                         "a non-negative number") < 0)
            return true;
        plan_rd_fail(&c->rd, key, place, NULL, "more than %u references",
                     PLAN_MAX_OP_REFS);
        return true;
    }
    if (plan_rd_resolve(&c->rd, key, c->t, i, "reads", c->rids,
                        (uint32_t)nr, c->idx) < 0 ||
        plan_rd_resolve(&c->rd, key, c->t, i, "writes", c->wids,
                        (uint32_t)nw, c->idx + nr) < 0)
        return true;
    memcpy(nbuf, name.s, name.len);
    nbuf[name.len] = 0;
    plan_rd_op(&c->rd, key, c->t, i, nbuf, duration, c->idx, (uint32_t)nr,
               (uint32_t)nw, &c->total_refs);
    return true;
}

/* Passes 2 and 3: every storage (field 5), then every op (field 6). */
static bool read_entries(px *c, pbr r)
{
    size_t n = 0;
    const pbf fs[] = {F(PF_SKIP, NULL), F(PF_SKIP, NULL), F(PF_SKIP, NULL),
                      F(PF_SKIP, NULL), FMSG(storage_msg, c, &n)};
    const pbf fo[] = {F(PF_SKIP, NULL), F(PF_SKIP, NULL), F(PF_SKIP, NULL),
                      F(PF_SKIP, NULL), F(PF_SKIP, NULL),
                      FMSG(op_msg, c, &n)};
    if (!read_fields(r, fs, FN(fs)))
        return false;
    n = 0;
    return read_fields(r, fo, FN(fo));
}

int plan_trace_from_pb(const uint8_t *buf, size_t len, plan_trace **ret_trace,
                       char *err, size_t errlen)
{
    pbr r = {buf, buf + len};
    ttop top;
    px c;
    int rc = parse_begin(&c, "Trace", HO_E_BAD_TRACE, len, err, errlen);

    if (rc < 0)
        return rc;
    if (!scan_trace(r, &top)) {
        rc = corrupt(&c);
        goto out;
    }
    check_trace_top(&c, &top);
    c.t = plan_trace_new("", &top.link);
    c.rids = malloc(sizeof(uint64_t) * PLAN_MAX_OP_REFS);
    c.wids = malloc(sizeof(uint64_t) * PLAN_MAX_OP_REFS);
    c.idx = malloc(sizeof(uint32_t) * PLAN_MAX_OP_REFS);
    if (!c.t || !c.rids || !c.wids || !c.idx) {
        rc = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    if (!read_entries(&c, r)) {
        rc = corrupt(&c);
        goto out;
    }
    if ((rc = c.rd.rc) < 0)
        goto out;
    if ((rc = plan_rd_trace_name(c.t, top.name.s, top.name.len)) < 0) {
        rc = ho_errf(err, errlen, rc, "out of memory");
        goto out;
    }
    c.t->link.latency_us += 0.0;
    if ((rc = plan_trace_finish(c.t, err, errlen)) < 0)
        goto out;
    *ret_trace = c.t;
    c.t = NULL;
out:
    plan_trace_free(c.t);
    free(c.rids);
    free(c.wids);
    free(c.idx);
    return rc;
}

/* ------------------------------------------------------------ schedule */

enum {
    S_FORMAT = 1, S_VERSION, S_PLANNER, S_BUDGET, S_ACTIONS, S_PREDICTED_SET,
    S_HOMES, S_ACTION, S_HOME, S_PREDICTED
};

typedef struct stop {
    pbstr format, planner;
    uint32_t version;
    uint64_t budget;
    bool has_predicted;
    plan_metrics m;
    size_t n_actions, n_homes, n_predicted;
} stop;

/* A later Metrics message replaces an earlier one. */
static bool metrics_msg(void *ctx, pbr r, size_t i)
{
    plan_metrics *m = ctx;
    const pbf f[] = {F(PF_U64, &m->peak_device_bytes),
                     F(PF_U64, &m->peak_host_bytes),
                     F(PF_F64, &m->compute_us), F(PF_F64, &m->step_time_us),
                     F(PF_F64, &m->exposed_us), F(PF_U64, &m->h2d_bytes),
                     F(PF_U64, &m->d2h_bytes)};
    (void)i;
    memset(m, 0, sizeof(*m));
    return read_fields(r, f, FN(f));
}

static bool action_msg(void *ctx, pbr r, size_t i)
{
    px *c = ctx;
    uint64_t key = RD_KEY(S_ACTION, i), storage = 0;
    uint32_t op = 0;
    int32_t when = 0, kind = 0;
    char place[48];
    const pbf f[] = {F(PF_U32, &op), F(PF_ENUM, &when), F(PF_ENUM, &kind),
                     F(PF_U64, &storage)};

    if (!read_fields(r, f, FN(f)))
        return false;
    if (!plan_rd_worth(&c->rd, key) || c->rd.rc == -ENOMEM)
        return true;
    plan_rd_place(place, "actions", i);
    if (plan_rd_uint(&c->rd, key, place, "op", op, 0, PLAN_MAX_OPS - 1u,
                     "an op index (non-negative integer)") < 0 ||
        check_enum(c, key, place, "when", when, PLAN_AFTER + 1) < 0 ||
        check_enum(c, key, place, "kind", kind, PLAN_ACT__COUNT) < 0 ||
        plan_rd_uint(&c->rd, key, place, "storage", storage, 0,
                     PLAN_FMT_MAX_ID,
                     "a storage id (non-negative integer)") < 0)
        return true;
    plan_rd_action(&c->rd, key, c->s, i, op, (plan_when)when,
                   (plan_act_kind)kind, storage);
    return true;
}

static bool home_msg(void *ctx, pbr r, size_t i)
{
    px *c = ctx;
    uint64_t key = RD_KEY(S_HOME, i), storage = 0;
    int32_t home = 0;
    char place[48];
    const pbf f[] = {F(PF_U64, &storage), F(PF_ENUM, &home)};

    if (!read_fields(r, f, FN(f)))
        return false;
    if (!plan_rd_worth(&c->rd, key) || c->rd.rc == -ENOMEM)
        return true;
    plan_rd_place(place, "homes", i);
    if (plan_rd_uint(&c->rd, key, place, "storage", storage, 0,
                     PLAN_FMT_MAX_ID,
                     "a storage id (non-negative integer)") < 0 ||
        check_enum(c, key, place, "home", home, PLAN_HOME_HOST + 1) < 0)
        return true;
    plan_rd_home(&c->rd, key, c->s, i, storage, (plan_home)home);
    return true;
}

/* One pass: the scalars at the top, every action and home. */
static bool read_schedule(px *c, pbr r, stop *top)
{
    const pbf f[] = {F(PF_STR, &top->format), F(PF_U32, &top->version),
                     F(PF_STR, &top->planner), F(PF_U64, &top->budget),
                     FMSG(action_msg, c, &top->n_actions),
                     FMSG(metrics_msg, &top->m, &top->n_predicted),
                     F(PF_BOOL, &top->has_predicted),
                     FMSG(home_msg, c, &top->n_homes)};
    memset(top, 0, sizeof(*top));
    top->format = top->planner = (pbstr){"", 0};
    return read_fields(r, f, FN(f));
}

static void check_schedule_top(px *c, stop *top)
{
    plan_schedule *s = c->s;
    const plan_metrics *p = &top->m;
    check_header(c, S_FORMAT, top->format, top->version, PLAN_FMT_SCHEDULE);
    if (plan_rd_name(&c->rd, RD_KEY(S_PLANNER, 0), "", "planner",
                     top->planner.s, top->planner.len,
                     PLAN_FMT_MAX_PLANNER) == 0 && top->planner.len) {
        memcpy(s->planner, top->planner.s, top->planner.len);
        s->planner[top->planner.len] = 0;
    }
    if (plan_rd_uint(&c->rd, RD_KEY(S_BUDGET, 0), "", "budget_bytes",
                     top->budget, 0, PLAN_FMT_MAX_U64,
                     "a non-negative integer") == 0)
        s->budget_bytes = top->budget;
    if (top->n_actions > PLAN_MAX_ACTIONS)
        plan_rd_fail(&c->rd, RD_KEY(S_ACTIONS, 0), "", "actions",
                     "too many entries (%zu > %u)", top->n_actions,
                     PLAN_MAX_ACTIONS);
    if (top->has_predicted && !top->n_predicted)
        plan_rd_fail(&c->rd, RD_KEY(S_PREDICTED_SET, 0), "", "predicted",
                     "has_predicted is set but predicted is missing");
    if (top->n_homes > PLAN_MAX_HOMES)
        plan_rd_fail(&c->rd, RD_KEY(S_HOMES, 0), "", "homes",
                     "too many entries (%zu > %u)", top->n_homes,
                     PLAN_MAX_HOMES);
    if (!top->has_predicted)
        return;
    if (p->peak_device_bytes > PLAN_FMT_MAX_U64 ||
        p->peak_host_bytes > PLAN_FMT_MAX_U64 ||
        p->h2d_bytes > PLAN_FMT_MAX_U64 || p->d2h_bytes > PLAN_FMT_MAX_U64 ||
        !isfinite(p->compute_us) || !isfinite(p->step_time_us) ||
        !isfinite(p->exposed_us)) {
        plan_rd_fail(&c->rd, RD_KEY(S_PREDICTED, 0), "", "predicted",
                     "a figure is out of range (integers at most %llu, "
                     "finite doubles)", (unsigned long long)PLAN_FMT_MAX_U64);
        return;
    }
    s->has_predicted = true;
    s->predicted = *p;
    s->predicted.compute_us += 0.0;
    s->predicted.step_time_us += 0.0;
    s->predicted.exposed_us += 0.0;
}

int plan_schedule_from_pb(const uint8_t *buf, size_t len,
                          plan_schedule **ret_schedule, char *err,
                          size_t errlen)
{
    pbr r = {buf, buf + len};
    stop top;
    px c;
    int rc = parse_begin(&c, "Schedule", HO_E_BAD_SCHEDULE, len, err, errlen);

    if (rc < 0)
        return rc;
    c.s = plan_schedule_new("", 0);
    if (!c.s)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    if (!read_schedule(&c, r, &top)) {
        rc = corrupt(&c);
        goto out;
    }
    check_schedule_top(&c, &top);
    if ((rc = c.rd.rc) < 0)
        goto out;
    *ret_schedule = c.s;
    c.s = NULL;
out:
    plan_schedule_free(c.s);
    return rc;
}

/* ------------------------------------------------------------ wire: write */

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *put_varint(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

static uint8_t *put_tag(uint8_t *o, uint32_t field, int wt)
{
    return put_varint(o, (uint64_t)field << 3 | (uint64_t)wt);
}

/* Field sizes as protobuf-c packs proto3 scalars: absent when zero. */
static size_t sz_u64(uint64_t v)
{
    return v ? 1 + varint_size(v) : 0;
}

static size_t sz_f64(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits ? 9 : 0;
}

static size_t sz_len(size_t n)
{
    return 1 + varint_size(n) + n;
}

static size_t sz_str(const char *s)
{
    size_t n = strlen(s);
    return n ? sz_len(n) : 0;
}

static uint8_t *w_u64(uint8_t *o, uint32_t field, uint64_t v)
{
    return v ? put_varint(put_tag(o, field, WT_VARINT), v) : o;
}

static uint8_t *w_f64(uint8_t *o, uint32_t field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (!bits)
        return o;
    o = put_tag(o, field, WT_I64);
    for (int i = 0; i < 8; i++)
        *o++ = (uint8_t)(bits >> (8 * i));
    return o;
}

static uint8_t *w_len(uint8_t *o, uint32_t field, size_t n)
{
    return put_varint(put_tag(o, field, WT_LEN), n);
}

static uint8_t *w_str(uint8_t *o, uint32_t field, const char *s)
{
    size_t n = strlen(s);
    if (!n)
        return o;
    o = w_len(o, field, n);
    memcpy(o, s, n);
    return o + n;
}

static size_t link_size(const plan_link *l)
{
    return sz_f64(l->h2d_gbps) + sz_f64(l->d2h_gbps) +
           sz_f64(l->latency_us + 0.0) + sz_u64(l->duplex);
}

static size_t storage_size(const plan_storage *s)
{
    return sz_u64(s->id) + sz_u64(s->bytes) + sz_u64(s->kind) +
           sz_u64(s->initial) + sz_u64(s->retained) + sz_u64(s->pinned) +
           sz_u64(s->movable);
}

static size_t ids_size(const uint64_t *ids, uint32_t n)
{
    size_t b = 0;
    for (uint32_t j = 0; j < n; j++)
        b += varint_size(ids[j]);
    return b;
}

/* The op's body size (ids: its references as storage ids); *ret_r /
 * *ret_w the packed payloads of its reads and writes. */
static size_t op_size(const plan_trace *t, uint32_t i, const uint64_t *ids,
                      size_t *ret_r, size_t *ret_w)
{
    const plan_op *o = &t->ops[i];
    *ret_r = ids_size(ids, o->n_reads);
    *ret_w = ids_size(ids + o->n_reads, o->n_writes);
    return sz_str(plan_op_name(t, i)) + sz_f64(o->duration_us + 0.0) +
           (o->n_reads ? sz_len(*ret_r) : 0) +
           (o->n_writes ? sz_len(*ret_w) : 0);
}

static uint8_t *w_ids(uint8_t *o, uint32_t field, const uint64_t *ids,
                      uint32_t n, size_t payload)
{
    if (!n)
        return o;
    o = w_len(o, field, payload);
    for (uint32_t j = 0; j < n; j++)
        o = put_varint(o, ids[j]);
    return o;
}

int plan_trace_to_pb(const plan_trace *t, uint8_t **ret_buf, size_t *ret_len)
{
    size_t total, lr, lw;
    int r = plan_fmt_check_trace(t);

    if (r < 0)
        return r;
    /* the references as ids, once, in trace order */
    uint64_t *ids = malloc((t->n_refs ? t->n_refs : 1) * sizeof(*ids));
    if (!ids)
        return -ENOMEM;
    for (uint64_t k = 0; k < t->n_refs; k++)
        ids[k] = t->storages[t->refs[k]].id;
    total = sz_str(PLAN_FMT_TRACE) + sz_u64(PLAN_FMT_VERSION) +
            sz_str(t->name) + sz_len(link_size(&t->link));
    for (uint32_t i = 0; i < t->n_storages; i++)
        total += sz_len(storage_size(&t->storages[i]));
    for (uint32_t i = 0; i < t->n_ops; i++)
        total += sz_len(op_size(t, i, ids + t->ops[i].first_ref, &lr, &lw));
    uint8_t *buf = malloc(total ? total : 1), *o = buf;
    if (!buf) {
        free(ids);
        return -ENOMEM;
    }
    o = w_str(o, 1, PLAN_FMT_TRACE);
    o = w_u64(o, 2, PLAN_FMT_VERSION);
    o = w_str(o, 3, t->name);
    o = w_len(o, 4, link_size(&t->link));
    o = w_f64(o, 1, t->link.h2d_gbps);
    o = w_f64(o, 2, t->link.d2h_gbps);
    o = w_f64(o, 3, t->link.latency_us + 0.0);
    o = w_u64(o, 4, t->link.duplex);
    for (uint32_t i = 0; i < t->n_storages; i++) {
        const plan_storage *s = &t->storages[i];
        o = w_len(o, 5, storage_size(s));
        o = w_u64(o, 1, s->id);
        o = w_u64(o, 2, s->bytes);
        o = w_u64(o, 3, s->kind);
        o = w_u64(o, 4, s->initial);
        o = w_u64(o, 5, s->retained);
        o = w_u64(o, 6, s->pinned);
        o = w_u64(o, 7, s->movable);
    }
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *op = &t->ops[i];
        const uint64_t *oid = ids + op->first_ref;
        o = w_len(o, 6, op_size(t, i, oid, &lr, &lw));
        o = w_str(o, 1, plan_op_name(t, i));
        o = w_f64(o, 2, op->duration_us + 0.0);
        o = w_ids(o, 3, oid, op->n_reads, lr);
        o = w_ids(o, 4, oid + op->n_reads, op->n_writes, lw);
    }
    free(ids);
    if ((size_t)(o - buf) != total) {
        free(buf);
        return HO_E_INTERNAL;
    }
    *ret_buf = buf;
    *ret_len = total;
    return 0;
}

static size_t action_size(const plan_action *a)
{
    return sz_u64(a->op) + sz_u64(a->when) + sz_u64(a->kind) +
           sz_u64(a->storage_id);
}

static size_t home_size(const plan_home_entry *h)
{
    return sz_u64(h->storage_id) + sz_u64(h->home);
}

static size_t metrics_size(const plan_metrics *m)
{
    return sz_u64(m->peak_device_bytes) + sz_u64(m->peak_host_bytes) +
           sz_f64(m->compute_us + 0.0) + sz_f64(m->step_time_us + 0.0) +
           sz_f64(m->exposed_us + 0.0) + sz_u64(m->h2d_bytes) +
           sz_u64(m->d2h_bytes);
}

int plan_schedule_to_pb(const plan_schedule *s, uint8_t **ret_buf,
                        size_t *ret_len)
{
    const plan_metrics *m = &s->predicted;
    size_t total;
    int r = plan_fmt_check_schedule(s);

    if (r < 0)
        return r;
    total = sz_str(PLAN_FMT_SCHEDULE) + sz_u64(PLAN_FMT_VERSION) +
            sz_str(s->planner) + sz_u64(s->budget_bytes);
    for (size_t i = 0; i < s->n_actions; i++)
        total += sz_len(action_size(&s->actions[i]));
    if (s->has_predicted)
        total += sz_len(metrics_size(m)) + sz_u64(1);
    for (size_t i = 0; i < s->n_homes; i++)
        total += sz_len(home_size(&s->homes[i]));
    uint8_t *buf = malloc(total ? total : 1), *o = buf;
    if (!buf)
        return -ENOMEM;
    o = w_str(o, 1, PLAN_FMT_SCHEDULE);
    o = w_u64(o, 2, PLAN_FMT_VERSION);
    o = w_str(o, 3, s->planner);
    o = w_u64(o, 4, s->budget_bytes);
    for (size_t i = 0; i < s->n_actions; i++) {
        const plan_action *a = &s->actions[i];
        o = w_len(o, 5, action_size(a));
        o = w_u64(o, 1, a->op);
        o = w_u64(o, 2, a->when);
        o = w_u64(o, 3, a->kind);
        o = w_u64(o, 4, a->storage_id);
    }
    if (s->has_predicted) {
        o = w_len(o, 6, metrics_size(m));
        o = w_u64(o, 1, m->peak_device_bytes);
        o = w_u64(o, 2, m->peak_host_bytes);
        o = w_f64(o, 3, m->compute_us + 0.0);
        o = w_f64(o, 4, m->step_time_us + 0.0);
        o = w_f64(o, 5, m->exposed_us + 0.0);
        o = w_u64(o, 6, m->h2d_bytes);
        o = w_u64(o, 7, m->d2h_bytes);
        o = w_u64(o, 7, 1); /* has_predicted */
    }
    for (size_t i = 0; i < s->n_homes; i++) {
        o = w_len(o, 8, home_size(&s->homes[i]));
        o = w_u64(o, 1, s->homes[i].storage_id);
        o = w_u64(o, 2, s->homes[i].home);
    }
    if ((size_t)(o - buf) != total) {
        free(buf);
        return HO_E_INTERNAL;
    }
    *ret_buf = buf;
    *ret_len = total;
    return 0;
}

/* ------------------------------------------------------------ file readers */

int plan_trace_read_file(const char *path, plan_trace **ret_trace, char *err,
                         size_t errlen)
{
    return plan_fmt_load(path, true, ret_trace, NULL, err, errlen);
}

int plan_schedule_read_file(const char *path, plan_schedule **ret_schedule,
                            char *err, size_t errlen)
{
    return plan_fmt_load(path, true, NULL, ret_schedule, err, errlen);
}
