/*
 * planner/io/plan_json.c - the JSON forms of a trace and a schedule
 * (PLANNER.md §1-§2): a streaming reader on the tokenizer of json_lex.h
 * that builds the trace or schedule as it goes, and a buffered writer.
 *
 * Readers are strict: every key must be one the format defines, required
 * keys must be present, every number is range-checked (io_private.h), and
 * every error names its place ("ops[12].reads[1]: unknown storage id 99").
 * Optional keys take the defaults listed in docs/formats.md.  Memory is
 * the document plus what is built from it: nothing is kept per element
 * but the element being read.
 *
 * Which error is reported: a syntax error anywhere wins (the document is
 * read to its end before any other error is reported); otherwise the
 * first in the order of the format's own description -- the header
 * (format, version), unknown top-level keys, the top-level fields in
 * their table order, then the entries of storages before those of ops (of
 * actions, then homes, then predicted) -- whatever order the keys have in
 * the file.  Inside one object: unknown keys first, then the fields in
 * table order.  Ops listed before the storages they name are read again,
 * from the buffer, once the storages are known.
 *
 * Writers emit one storage / op / action per line with a fixed key order
 * and doubles in their shortest form that reads back bit-identical, so a
 * file we wrote reads and writes back byte-identical.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/io/io_private.h"
#include "planner/io/json_lex.h"
#include "planner/io/plan_io.h"
#include "planner/plan.h"

/* ------------------------------------------------------------ values */

typedef enum jv_type {
    JV_NONE = 0, /* absent */
    JV_OBJECT,
    JV_ARRAY,
    JV_STRING,
    JV_INT,
    JV_REAL,
    JV_TRUE,
    JV_FALSE,
    JV_NULL
} jv_type;

#define JV_STR_MAX 256 /* names are at most 255 bytes: longer ones fail */

/* A scalar value (or the type of a nested one) kept for validation. */
typedef struct jval {
    uint8_t type;
    int64_t i;
    double d;
    size_t slen;            /* the string's full length */
    char s[JV_STR_MAX + 1]; /* its first JV_STR_MAX bytes, NUL-ended */
} jval;

/* A short description of a value for "got ..." messages. */
static const char *describe(const jval *v, char *buf, size_t len)
{
    switch (v->type) {
    case JV_OBJECT:
        return "an object";
    case JV_ARRAY:
        return "an array";
    case JV_STRING:
        if (v->slen > 40)
            snprintf(buf, len, "\"%.40s...\"", v->s);
        else
            snprintf(buf, len, "\"%.40s\"", v->s);
        return buf;
    case JV_INT:
        snprintf(buf, len, "%lld", (long long)v->i);
        return buf;
    case JV_REAL:
        snprintf(buf, len, "%.17g", v->d);
        return buf;
    case JV_TRUE:
        return "true";
    case JV_FALSE:
        return "false";
    case JV_NULL:
        return "null";
    }
    return "?";
}

/* The reader: the lexer, the error record, what is being built. */
typedef struct rx {
    plan_jl lx;
    plan_rd rd;
    plan_trace *t;
    plan_schedule *s;
    uint64_t *rids, *wids;  /* ids of the op being read */
    uint32_t *idx;          /* their storage indices */
    uint64_t total_refs;
} rx;

/* Store the token just read (the first of a value) into v, skipping
 * nested values.  0 or the syntax error's code. */
static int take(rx *c, plan_jl_tok t, jval *v)
{
    plan_jl *x = &c->lx;
    memset(v, 0, offsetof(jval, s) + 1);
    switch (t) {
    case PLAN_JL_STRING:
        v->type = JV_STRING;
        v->slen = x->slen;
        memcpy(v->s, x->s, x->slen < JV_STR_MAX ? x->slen : JV_STR_MAX);
        v->s[x->slen < JV_STR_MAX ? x->slen : JV_STR_MAX] = 0;
        return 0;
    case PLAN_JL_INT:
        v->type = JV_INT;
        v->i = x->ival;
        v->d = x->dval;
        return 0;
    case PLAN_JL_REAL:
        v->type = JV_REAL;
        v->d = x->dval;
        return 0;
    case PLAN_JL_TRUE:
        v->type = JV_TRUE;
        return 0;
    case PLAN_JL_FALSE:
        v->type = JV_FALSE;
        return 0;
    case PLAN_JL_NULL:
        v->type = JV_NULL;
        return 0;
    case PLAN_JL_LBRACE:
        v->type = JV_OBJECT;
        return plan_jl_skip(x, t);
    case PLAN_JL_LBRACK:
        v->type = JV_ARRAY;
        return plan_jl_skip(x, t);
    default:
        return plan_jl_skip(x, t); /* the error */
    }
}

/* ------------------------------------------------------------ checks
 * The field checks of the format, on a jval, recording under `key`.
 * Each returns 1 when the value is there and good, 0 when absent and
 * optional (the default stays), < 0 when an error was recorded. */

static int need(rx *c, uint64_t key, const char *place, const char *field,
                const jval *v, bool required)
{
    if (v->type != JV_NONE)
        return 1;
    return required ? plan_rd_fail(&c->rd, key, place, field,
                                   "missing required field")
                    : 0;
}

static int get_int(rx *c, uint64_t key, const char *place, const char *field,
                   const jval *v, bool required, uint64_t min, uint64_t max,
                   const char *what, uint64_t *ret_value)
{
    char b[64];
    int k = need(c, key, place, field, v, required);
    if (k <= 0)
        return k;
    if (v->type != JV_INT || v->i < 0)
        return plan_rd_fail(&c->rd, key, place, field, "must be %s, got %s",
                            what, describe(v, b, sizeof b));
    if ((k = plan_rd_uint(&c->rd, key, place, field, (uint64_t)v->i, min, max,
                          what)) < 0)
        return k;
    *ret_value = (uint64_t)v->i;
    return 1;
}

static int get_double(rx *c, uint64_t key, const char *place,
                      const char *field, const jval *v, bool required,
                      double min, bool min_open, double max, const char *what,
                      double *ret_value)
{
    char b[64];
    int k = need(c, key, place, field, v, required);
    if (k <= 0)
        return k;
    if (v->type != JV_INT && v->type != JV_REAL)
        return plan_rd_fail(&c->rd, key, place, field, "must be %s, got %s",
                            what, describe(v, b, sizeof b));
    if (!plan_rd_double_ok(v->d, min, min_open, max))
        return plan_rd_double(&c->rd, key, place, field, v->d,
                              describe(v, b, sizeof b), min, min_open, max,
                              what);
    *ret_value = v->d + 0.0; /* -0 reads as +0: what we write for it */
    return 1;
}

static int get_bool(rx *c, uint64_t key, const char *place, const char *field,
                    const jval *v, bool *ret_value)
{
    char b[64];
    int k = need(c, key, place, field, v, false);
    if (k <= 0)
        return k;
    if (v->type != JV_TRUE && v->type != JV_FALSE)
        return plan_rd_fail(&c->rd, key, place, field,
                            "must be true or false, got %s",
                            describe(v, b, sizeof b));
    *ret_value = v->type == JV_TRUE;
    return 1;
}

static int get_string(rx *c, uint64_t key, const char *place,
                      const char *field, const jval *v, bool required,
                      size_t maxlen)
{
    char b[64];
    int k = need(c, key, place, field, v, required);
    if (k <= 0)
        return k;
    if (v->type != JV_STRING)
        return plan_rd_fail(&c->rd, key, place, field,
                            "must be a string, got %s",
                            describe(v, b, sizeof b));
    if (v->slen > maxlen)
        return plan_rd_fail(&c->rd, key, place, field, "longer than %zu bytes",
                            maxlen);
    return 1;
}

/* A string naming an enum value: `names` lists the spellings (of
 * `count`), `list` them for the message. */
static int get_enum(rx *c, uint64_t key, const char *place, const char *field,
                    const jval *v, bool required,
                    const char *(*name_of)(int), int count, const char *list,
                    int *ret_value)
{
    int k = get_string(c, key, place, field, v, required, 64);
    if (k <= 0)
        return k;
    for (int i = 0; i < count; i++) {
        if (strcmp(v->s, name_of(i)) == 0) {
            *ret_value = i;
            return 1;
        }
    }
    return plan_rd_fail(&c->rd, key, place, field,
                        "unknown value \"%s\" (expected %s)", v->s, list);
}

static const char *kind_name(int i)
{
    return plan_kind_name((plan_kind)i);
}
static const char *initial_name(int i)
{
    return plan_initial_name((plan_initial)i);
}
static const char *act_name(int i)
{
    return plan_act_name((plan_act_kind)i);
}
static const char *when_name(int i)
{
    return i == PLAN_AFTER ? "after" : "before";
}
static const char *home_name(int i)
{
    return plan_home_name((plan_home)i);
}

/* ------------------------------------------------------------ objects */

/* How a known object's fields are read: into slots[k], or by `special`
 * for the keys in the mask (an array or object read in place). */
/* A key of a known object, with its length. */
typedef struct jkey {
    const char *s;
    size_t len;
} jkey;
#define K(s) {s, sizeof(s) - 1}

typedef struct jobj {
    const jkey *keys;           /* ended by {NULL, 0}, at most 16 */
    jval *slots;
    uint32_t special;           /* bit k: keys[k] goes to `fn` */
    int (*fn)(rx *c, int k, plan_jl_tok first, void *ctx);
    void *ctx;
    char unknown[200];          /* the first unknown key ("" if none) */
} jobj;

static int key_index(const plan_jl *x, const jkey *keys)
{
    for (int k = 0; keys[k].s; k++)
        if (keys[k].len == x->slen && memcmp(keys[k].s, x->s, x->slen) == 0)
            return k;
    return -1;
}

/* The walk of a known object (plan_jl_object's callbacks). */
typedef struct jwalk {
    rx *c;
    jobj *o;
    uint32_t seen;
} jwalk;

/* Handle: 1 + the key's index, 0 for an unknown key. */
static int walk_key(plan_jl *x, void *ctx)
{
    jwalk *w = ctx;
    int k = key_index(x, w->o->keys);
    if (k >= 0) {
        if ((w->seen >> k) & 1u)
            return plan_jl_fail(x, NULL, "duplicate object key");
        w->seen |= 1u << k;
        return k + 1;
    }
    int r = plan_jl_key_add(x);
    if (r < 0)
        return r;
    if (!w->o->unknown[0])
        snprintf(w->o->unknown, sizeof w->o->unknown, "%.*s",
                 (int)(x->slen < 199 ? x->slen : 199), x->s);
    return 0;
}

static int walk_value(plan_jl *x, void *ctx, int handle, plan_jl_tok t)
{
    jwalk *w = ctx;
    int k = handle - 1;
    if (k < 0)
        return plan_jl_skip(x, t);
    return (w->o->special >> k) & 1u ? w->o->fn(w->c, k, t, w->o->ctx)
                                     : take(w->c, t, &w->o->slots[k]);
}

/* Read an object whose '{' was just read. */
static int read_object(rx *c, jobj *o)
{
    jwalk w = {c, o, 0};
    o->unknown[0] = 0;
    for (int k = 0; o->keys[k].s; k++)
        o->slots[k].type = JV_NONE;
    return plan_jl_object(&c->lx, walk_key, walk_value, &w);
}

typedef struct jarr {
    rx *c;
    int (*elem)(rx *c, size_t i, plan_jl_tok first, void *ctx);
    void *ctx;
} jarr;

static int arr_elem(plan_jl *x, void *ctx, size_t i, plan_jl_tok t)
{
    jarr *a = ctx;
    (void)x;
    return a->elem(a->c, i, t, a->ctx);
}

/* Read an array whose first token is `t` ('[' expected; anything else is
 * taken into *other), calling `elem(c, i, first)` per entry.  *ret_n: the
 * number of entries. */
static int read_array(rx *c, plan_jl_tok t, jval *other,
                      int (*elem)(rx *c, size_t i, plan_jl_tok first,
                                  void *ctx),
                      void *ctx, size_t *ret_n)
{
    jarr a = {c, elem, ctx};
    *ret_n = 0;
    if (t != PLAN_JL_LBRACK)
        return take(c, t, other);
    other->type = JV_ARRAY;
    return plan_jl_array(&c->lx, arr_elem, &a, ret_n);
}

/* "must be an object" for an entry that is not one (after skipping it). */
static int not_object(rx *c, uint64_t key, const char *place, plan_jl_tok t,
                      bool worth)
{
    char b[64];
    jval v;
    int r = take(c, t, &v);
    if (r < 0 || !worth)
        return r;
    plan_rd_fail(&c->rd, key, place, NULL, "must be an object, got %s",
                 describe(&v, b, sizeof b));
    return 0;
}

/* The start of entry i of an array of objects (stage: its precedence,
 * `max`: its limit): reads the entry into o; *ret_check when its fields
 * are to be checked now (it is an object and could be the first error);
 * place: "arr[i]". */
static int entry(rx *c, uint64_t stage, size_t i, size_t max,
                 const char *arr, plan_jl_tok t, jobj *o, char *place,
                 bool *ret_check)
{
    uint64_t key = RD_KEY(stage, i);
    bool worth = plan_rd_worth(&c->rd, key) && i < max;
    int r;

    *ret_check = false;
    plan_rd_place(place, arr, i);
    if (t != PLAN_JL_LBRACE)
        return not_object(c, key, place, t, worth);
    if ((r = read_object(c, o)) < 0)
        return r;
    *ret_check = worth;
    return 0;
}

/* An entry's end: only running out of memory stops the read. */
static int entry_done(const rx *c)
{
    return c->rd.rc == -ENOMEM ? -ENOMEM : 0;
}

/* The first unknown key of an object: "place.key: unknown field". */
static int unknown_key(rx *c, uint64_t key, const char *place,
                       const jobj *o)
{
    if (!o->unknown[0])
        return 0;
    return plan_rd_fail(&c->rd, key, place, o->unknown, "unknown field");
}

/* An array's "must be an array" / "too many entries" checks. */
static int array_field(rx *c, uint64_t key, const char *place,
                       const char *field, const jval *v, bool required,
                       size_t n, size_t max)
{
    char b[64];
    int k = need(c, key, place, field, v, required);
    if (k <= 0)
        return k;
    if (v->type != JV_ARRAY)
        return plan_rd_fail(&c->rd, key, place, field,
                            "must be an array, got %s",
                            describe(v, b, sizeof b));
    if (n > max)
        return plan_rd_fail(&c->rd, key, place, field,
                            "too many entries (%zu > %zu)", n, max);
    return 1;
}

/* ------------------------------------------------------------ header */

typedef struct header {
    jval format, version;
} header;

static int check_header(rx *c, uint64_t stage_format, const header *h,
                        const char *format)
{
    char b[64];
    uint64_t kf = RD_KEY(stage_format, 0), kv = RD_KEY(stage_format + 1, 0);
    if (need(c, kf, "", "format", &h->format, true) < 0)
        return c->rd.rc;
    if (h->format.type != JV_STRING || strcmp(h->format.s, format) != 0 ||
        h->format.slen != strlen(format))
        return plan_rd_fail(&c->rd, kf, "", "format",
                            "expected \"%s\", got %s", format,
                            describe(&h->format, b, sizeof b));
    if (need(c, kv, "", "version", &h->version, true) < 0)
        return c->rd.rc;
    if (h->version.type != JV_INT)
        return plan_rd_fail(&c->rd, kv, "", "version",
                            "must be an integer, got %s",
                            describe(&h->version, b, sizeof b));
    if (h->version.i != PLAN_FMT_VERSION)
        return plan_rd_fail(&c->rd, kv, "", "version",
                            "unsupported version %s",
                            describe(&h->version, b, sizeof b));
    return 0;
}

/* The top level: an object, or an error (an array is read to its end,
 * then refused as not an object).  1 when it is an object. */
static int top_object(rx *c)
{
    char b[64];
    plan_jl *x = &c->lx;
    plan_jl_tok t = plan_jl_next(x);
    jval v;
    int r;

    if (t == PLAN_JL_LBRACE)
        return 1;
    if (t != PLAN_JL_LBRACK)
        return t == PLAN_JL_ERROR
                   ? x->rc
                   : plan_jl_fail(x, NULL, "'[' or '{' expected");
    if ((r = take(c, t, &v)) < 0 || (r = plan_jl_expect_eof(x)) < 0)
        return r;
    char msg[96];
    snprintf(msg, sizeof msg, "expected a JSON object at the top level, "
             "got %s", describe(&v, b, sizeof b));
    return plan_rd_set(&c->rd, 0, c->rd.code, msg);
}

static int parse_begin(rx *c, const char *buf, size_t len, int code,
                       char *err, size_t errlen)
{
    int r;
    memset(c, 0, sizeof(*c));
    if ((r = plan_rd_begin(&c->rd, code, err, errlen, len, "document")) < 0)
        return r;
    if (plan_jl_init(&c->lx, buf, len, code, err, errlen) < 0)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    return 0;
}

/* ------------------------------------------------------------ trace */

enum {
    T_FORMAT = 1, T_VERSION, T_KEYS, T_NAME, T_LINK, T_STORAGES, T_OPS,
    T_OPS_EMPTY, T_STORAGE, T_OP, T_FINISH
};

static const jkey trace_keys[] = {K("format"), K("version"), K("name"),
    K("link"), K("storages"), K("ops"), {NULL, 0}};
enum { TK_FORMAT, TK_VERSION, TK_NAME, TK_LINK, TK_STORAGES, TK_OPS };
static const jkey link_keys[] = {K("h2d_gbps"), K("d2h_gbps"), K("latency_us"),
    K("duplex"), {NULL, 0}};
static const jkey storage_keys[] = {K("id"), K("bytes"), K("kind"),
    K("initial"), K("retained"), K("pinned"), K("movable"), {NULL, 0}};
static const jkey op_keys[] = {K("name"), K("duration_us"), K("reads"),
    K("writes"), {NULL, 0}};
enum { OK_NAME, OK_DURATION, OK_READS, OK_WRITES };

/* The top level of a trace as read (checked at its end). */
typedef struct ttop {
    jval slots[6];
    jobj top;
    jval link_slots[4];
    jobj link;
    bool link_read;        /* the link value was an object */
    size_t n_storages, n_ops;
    bool storages_read;    /* the storages key was met */
    const char *ops_pos;   /* ops listed before storages: read them later */
} ttop;

static int read_storage(rx *c, size_t i, plan_jl_tok t, void *ctx)
{
    uint64_t key = RD_KEY(T_STORAGE, i);
    char place[48];
    jval sl[7];
    jobj o = {.keys = storage_keys, .slots = sl};
    plan_storage s;
    int kind = PLAN_KIND_OTHER, initial = PLAN_INIT_NONE, r;
    bool check;

    (void)ctx;
    if ((r = entry(c, T_STORAGE, i, PLAN_MAX_STORAGES, "storages", t, &o,
                   place, &check)) < 0 || !check)
        return r;
    memset(&s, 0, sizeof s);
    if (unknown_key(c, key, place, &o) < 0 ||
        get_int(c, key, place, "id", &sl[0], true, 0, PLAN_FMT_MAX_ID,
                "a non-negative integer", &s.id) < 0 ||
        get_int(c, key, place, "bytes", &sl[1], true, 1,
                PLAN_MAX_STORAGE_BYTES, "a positive integer", &s.bytes) < 0 ||
        get_enum(c, key, place, "kind", &sl[2], false, kind_name,
                 PLAN_KIND__COUNT,
                 "activation, param, grad, optimizer, kv or other",
                 &kind) < 0 ||
        get_enum(c, key, place, "initial", &sl[3], false, initial_name,
                 PLAN_INIT__COUNT, "none, device or host", &initial) < 0 ||
        get_bool(c, key, place, "retained", &sl[4], &s.retained) < 0 ||
        get_bool(c, key, place, "pinned", &sl[5], &s.pinned) < 0 ||
        get_bool(c, key, place, "movable", &sl[6], &s.movable) < 0)
        return entry_done(c);
    s.kind = (uint8_t)kind;
    s.initial = (uint8_t)initial;
    plan_rd_storage(&c->rd, key, c->t, i, &s);
    return entry_done(c);
}

/* An op's reads or writes as read: the ids before the first bad entry. */
typedef struct jrefs {
    jval v;                 /* the value (type JV_ARRAY when an array) */
    uint64_t *ids;
    size_t n;               /* entries */
    size_t n_ok;            /* good ids stored before the first bad one */
    bool bad;               /* entry n_ok is not a storage id: */
    jval bad_v;             /* ... this */
} jrefs;

static int ref_elem(rx *c, size_t j, plan_jl_tok t, void *ctx)
{
    jrefs *f = ctx;
    plan_jl *x = &c->lx;
    f->n = j + 1;
    if (f->bad || j >= PLAN_MAX_OP_REFS)
        return plan_jl_skip(x, t);
    if (t == PLAN_JL_INT && x->ival >= 0 &&
        (uint64_t)x->ival <= PLAN_FMT_MAX_ID) {
        f->ids[f->n_ok++] = (uint64_t)x->ival;
        return 0;
    }
    f->bad = true;
    return take(c, t, &f->bad_v);
}

static int op_special(rx *c, int k, plan_jl_tok t, void *ctx)
{
    jrefs *f = (jrefs *)ctx + (k == OK_WRITES);
    size_t n;
    int r = read_array(c, t, &f->v, ref_elem, f, &n);
    f->n = n;
    return r;
}

/* reads or writes of ops[i]: the array checks, each entry's type and
 * range, each id known; indices into idx.  *ret_n: the count. */
static int check_refs(rx *c, uint64_t key, const char *place, size_t i,
                      const char *field, const jrefs *f, uint32_t room,
                      uint32_t *idx, uint32_t *ret_n)
{
    char b[64], elem[32];
    int k = array_field(c, key, place, field, &f->v, false, f->n,
                        PLAN_MAX_OP_REFS);
    *ret_n = 0;
    if (k <= 0)
        return k;
    if (f->n > room)
        return plan_rd_fail(&c->rd, key, place, NULL,
                            "more than %u references", PLAN_MAX_OP_REFS);
    if ((k = plan_rd_resolve(&c->rd, key, c->t, i, field, f->ids,
                             (uint32_t)f->n_ok, idx)) < 0)
        return k;
    if (f->bad) {
        snprintf(elem, sizeof elem, "%s[%zu]", field, f->n_ok);
        return plan_rd_fail(&c->rd, key, place, elem, "must be a storage id "
                            "(non-negative integer), got %s",
                            describe(&f->bad_v, b, sizeof b));
    }
    *ret_n = (uint32_t)f->n;
    return 1;
}

/* ---- the fast path of ops
 * An op as our writer prints it -- {"name": "...", "duration_us": N,
 * "reads": [ids], "writes": [ids]}, that spacing, a printable ASCII name
 * without escapes, numbers in their simplest forms (plan_jl_simple_number)
 * -- is read straight from the bytes, without tokens.  Anything else, and
 * anything the format would refuse (a long name, a duration out of range,
 * an unknown id, too many references), leaves the op to the general
 * reader below, which then reads it from the same place and reports what
 * it reports: the fast path only ever accepts what that reader accepts,
 * with the same values (tests/planner/test_json_ref.c compares them on
 * every layout). */

static const char *lit(const char *p, const char *end, const char *s,
                       size_t n)
{
    return (size_t)(end - p) >= n && memcmp(p, s, n) == 0 ? p + n : NULL;
}

#define LIT(p, end, s) lit(p, end, s, sizeof(s) - 1)

/* "[id, id, ...]" into ids; NULL when it is not that. */
static const char *ids_fast(const char *p, const char *end, uint64_t *ids,
                            uint32_t *ret_n)
{
    uint32_t n = 0;
    if (!(p = LIT(p, end, "[")))
        return NULL;
    if (p < end && *p == ']') {
        *ret_n = 0;
        return p + 1;
    }
    for (;;) {
        bool is_int;
        int64_t v;
        double d;
        p = plan_jl_simple_number(p, end, &is_int, &v, &d);
        if (!p || !is_int || (uint64_t)v > PLAN_FMT_MAX_ID ||
            n >= PLAN_MAX_OP_REFS)
            return NULL;
        ids[n++] = (uint64_t)v;
        if (p < end && *p == ']') {
            *ret_n = n;
            return p + 1;
        }
        if (!(p = LIT(p, end, ", ")))
            return NULL;
    }
}

/* ops[i], whose '{' was just read: 1 when read and added here, 0 when
 * left to the general reader (nothing consumed). */
static int op_fast(rx *c, size_t i)
{
    plan_jl *x = &c->lx;
    const char *p = x->p, *end = x->end, *name;
    uint32_t nr, nw;
    bool is_int;
    int64_t iv;
    double duration;

    if (!(p = LIT(p, end, "\"name\": \"")))
        return 0;
    for (name = p; p < end && *p != '"'; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f ||
            *p == '\\')
            return 0;
    size_t nlen = (size_t)(p - name);
    if (p >= end || nlen > PLAN_FMT_MAX_NAME ||
        !(p = LIT(p + 1, end, ", \"duration_us\": ")) ||
        !(p = plan_jl_simple_number(p, end, &is_int, &iv, &duration)) ||
        !plan_rd_double_ok(duration, 0.0, false, PLAN_FMT_MAX_DURATION_US) ||
        !(p = LIT(p, end, ", \"reads\": ")) ||
        !(p = ids_fast(p, end, c->rids, &nr)) ||
        !(p = LIT(p, end, ", \"writes\": ")) ||
        !(p = ids_fast(p, end, c->wids, &nw)) || !(p = LIT(p, end, "}")) ||
        nr + nw > PLAN_MAX_OP_REFS)
        return 0;
    for (uint32_t j = 0; j < nr + nw; j++) {
        uint64_t id = j < nr ? c->rids[j] : c->wids[j - nr];
        if ((c->idx[j] = plan_trace_find(c->t, id)) == PLAN_NONE)
            return 0;
    }
    char nbuf[PLAN_FMT_MAX_NAME + 1];
    memcpy(nbuf, name, nlen);
    nbuf[nlen] = 0;
    /* the object's '}' read: what plan_jl_next would leave */
    x->p = x->tok_start = p;
    x->depth--;
    plan_rd_op(&c->rd, RD_KEY(T_OP, i), c->t, i, nbuf, duration, c->idx, nr,
               nw, &c->total_refs);
    return 1;
}

static int read_op(rx *c, size_t i, plan_jl_tok t, void *ctx)
{
    ttop *top = ctx;
    uint64_t key = RD_KEY(T_OP, i);
    bool check;
    char place[48];
    jval sl[4];
    jrefs f[2];
    jobj o = {.keys = op_keys, .slots = sl,
              .special = 1u << OK_READS | 1u << OK_WRITES,
              .fn = op_special, .ctx = f};
    double duration = 0.0;
    uint32_t nr = 0, nw = 0;
    int r;

    top->n_ops = i + 1;
    if (t == PLAN_JL_LBRACE && c->rd.rc == 0 && i < PLAN_MAX_OPS &&
        op_fast(c, i))
        return entry_done(c);
    memset(f, 0, sizeof f);
    f[0].ids = c->rids;
    f[1].ids = c->wids;
    if ((r = entry(c, T_OP, i, PLAN_MAX_OPS, "ops", t, &o, place,
                   &check)) < 0 || !check)
        return r;
    if (unknown_key(c, key, place, &o) < 0 ||
        get_string(c, key, place, "name", &sl[OK_NAME], false,
                   PLAN_FMT_MAX_NAME) < 0 ||
        get_double(c, key, place, "duration_us", &sl[OK_DURATION], true, 0.0,
                   false, PLAN_FMT_MAX_DURATION_US, "a non-negative number",
                   &duration) < 0 ||
        check_refs(c, key, place, i, "reads", &f[0], PLAN_MAX_OP_REFS,
                   c->idx, &nr) < 0 ||
        check_refs(c, key, place, i, "writes", &f[1], PLAN_MAX_OP_REFS - nr,
                   c->idx + nr, &nw) < 0)
        return entry_done(c);
    plan_rd_op(&c->rd, key, c->t, i,
               sl[OK_NAME].type == JV_STRING ? sl[OK_NAME].s : "", duration,
               c->idx, nr, nw, &c->total_refs);
    return entry_done(c);
}

static int trace_special(rx *c, int k, plan_jl_tok t, void *ctx)
{
    ttop *top = ctx;
    plan_jl *x = &c->lx;
    size_t n;
    int r;

    switch (k) {
    case TK_LINK:
        if (t != PLAN_JL_LBRACE)
            return take(c, t, &top->slots[TK_LINK]);
        top->slots[TK_LINK].type = JV_OBJECT;
        top->link_read = true;
        return read_object(c, &top->link);
    case TK_STORAGES:
        top->storages_read = true;
        r = read_array(c, t, &top->slots[TK_STORAGES], read_storage, top, &n);
        top->n_storages = n;
        return r;
    default: /* TK_OPS */
        if (!top->storages_read && t == PLAN_JL_LBRACK) {
            /* the storages come later: check the syntax now, read the ops
             * once they are known */
            top->ops_pos = plan_jl_pos(x);
            top->slots[TK_OPS].type = JV_ARRAY;
            return plan_jl_skip(x, t);
        }
        r = read_array(c, t, &top->slots[TK_OPS], read_op, top, &n);
        top->n_ops = n;
        return r;
    }
}

/* The top-level checks, in the format's order (the keys rank them). */
static void check_trace_top(rx *c, ttop *top, plan_link *ret_link)
{
    const jval *sl = top->slots;
    header h = {sl[TK_FORMAT], sl[TK_VERSION]};
    uint64_t kl = RD_KEY(T_LINK, 0);
    char b[64];

    check_header(c, T_FORMAT, &h, PLAN_FMT_TRACE);
    unknown_key(c, RD_KEY(T_KEYS, 0), "", &top->top);
    get_string(c, RD_KEY(T_NAME, 0), "", "name", &sl[TK_NAME], false,
               PLAN_FMT_MAX_NAME);
    ret_link->latency_us = 0.0;
    ret_link->duplex = true;
    if (need(c, kl, "", "link", &sl[TK_LINK], true) > 0) {
        const jval *l = top->link_slots;
        if (!top->link_read)
            plan_rd_fail(&c->rd, kl, "", "link", "must be an object, got %s",
                         describe(&sl[TK_LINK], b, sizeof b));
        else if (unknown_key(c, kl, "link", &top->link) == 0 &&
                 get_double(c, kl, "link", "h2d_gbps", &l[0], true, 0.0, true,
                            PLAN_FMT_MAX_GBPS, "a positive number",
                            &ret_link->h2d_gbps) >= 0 &&
                 get_double(c, kl, "link", "d2h_gbps", &l[1], true, 0.0, true,
                            PLAN_FMT_MAX_GBPS, "a positive number",
                            &ret_link->d2h_gbps) >= 0 &&
                 get_double(c, kl, "link", "latency_us", &l[2], false, 0.0,
                            false, PLAN_FMT_MAX_LATENCY_US,
                            "a non-negative number",
                            &ret_link->latency_us) >= 0)
            get_bool(c, kl, "link", "duplex", &l[3], &ret_link->duplex);
    }
    array_field(c, RD_KEY(T_STORAGES, 0), "", "storages", &sl[TK_STORAGES],
                true, top->n_storages, PLAN_MAX_STORAGES);
    if (array_field(c, RD_KEY(T_OPS, 0), "", "ops", &sl[TK_OPS], true,
                    top->n_ops, PLAN_MAX_OPS) > 0 &&
        top->n_ops == 0)
        plan_rd_fail(&c->rd, RD_KEY(T_OPS_EMPTY, 0), "", "ops",
                     "a trace needs at least one op");
}

static int parse_trace(rx *c, plan_trace **ret_trace)
{
    ttop top;
    plan_link link = {0, 0, 0, true};
    int r;

    memset(&top, 0, sizeof top);
    top.top = (jobj){.keys = trace_keys, .slots = top.slots,
                     .special = 1u << TK_LINK | 1u << TK_STORAGES |
                                1u << TK_OPS,
                     .fn = trace_special, .ctx = &top};
    top.link = (jobj){.keys = link_keys, .slots = top.link_slots};
    c->t = plan_trace_new("", NULL);
    c->rids = malloc(sizeof(uint64_t) * PLAN_MAX_OP_REFS);
    c->wids = malloc(sizeof(uint64_t) * PLAN_MAX_OP_REFS);
    c->idx = malloc(sizeof(uint32_t) * PLAN_MAX_OP_REFS);
    if (!c->t || !c->rids || !c->wids || !c->idx)
        return ho_errf(c->rd.err, c->rd.errlen, -ENOMEM, "out of memory");
    if ((r = top_object(c)) <= 0)
        return r < 0 ? r : c->rd.rc;
    if ((r = read_object(c, &top.top)) < 0 ||
        (r = plan_jl_expect_eof(&c->lx)) < 0)
        return r;
    if (top.ops_pos) {
        /* the ops listed before the storages, now that those are known */
        size_t n;
        plan_jl_rewind(&c->lx, top.ops_pos, 1);
        if ((r = read_array(c, plan_jl_next(&c->lx), &top.slots[TK_OPS],
                            read_op, &top, &n)) < 0)
            return r;
        top.n_ops = n;
    }
    check_trace_top(c, &top, &link);
    if (c->rd.rc)
        return c->rd.rc;
    c->t->link = link;
    if (top.slots[TK_NAME].type == JV_STRING &&
        plan_rd_trace_name(c->t, top.slots[TK_NAME].s,
                           top.slots[TK_NAME].slen) < 0)
        return ho_errf(c->rd.err, c->rd.errlen, -ENOMEM, "out of memory");
    if ((r = plan_trace_finish(c->t, c->rd.err, c->rd.errlen)) < 0)
        return r;
    *ret_trace = c->t;
    c->t = NULL;
    return 0;
}

int plan_trace_parse_json(const char *buf, size_t len, plan_trace **ret_trace,
                          char *err, size_t errlen)
{
    rx c;
    int r = parse_begin(&c, buf, len, HO_E_BAD_TRACE, err, errlen);
    if (r == 0)
        r = parse_trace(&c, ret_trace);
    plan_trace_free(c.t);
    free(c.rids);
    free(c.wids);
    free(c.idx);
    plan_jl_done(&c.lx);
    return r;
}

int plan_trace_read_json(const char *path, plan_trace **ret_trace, char *err,
                         size_t errlen)
{
    return plan_fmt_load(path, false, ret_trace, NULL, err, errlen);
}

/* ------------------------------------------------------------ schedule */

enum {
    S_FORMAT = 1, S_VERSION, S_KEYS, S_PLANNER, S_BUDGET, S_ACTIONS,
    S_ACTION, S_HOMES, S_HOME, S_PREDICTED
};

static const jkey schedule_keys[] = {K("format"), K("version"), K("planner"),
    K("budget_bytes"), K("actions"), K("homes"), K("predicted"), {NULL, 0}};
enum { SK_FORMAT, SK_VERSION, SK_PLANNER, SK_BUDGET, SK_ACTIONS, SK_HOMES,
       SK_PREDICTED };
static const jkey action_keys[] = {K("op"), K("when"), K("kind"), K("storage"),
    {NULL, 0}};
static const jkey home_keys[] = {K("storage"), K("home"), {NULL, 0}};
static const jkey metric_keys[] = {K("peak_device_bytes"),
    K("peak_host_bytes"), K("compute_us"), K("step_time_us"), K("exposed_us"),
    K("h2d_bytes"), K("d2h_bytes"), {NULL, 0}};

typedef struct stop {
    jval slots[7];
    jobj top;
    jval metric_slots[7];
    jobj metrics;
    bool metrics_read;
    size_t n_actions, n_homes;
} stop;

static int read_action(rx *c, size_t i, plan_jl_tok t, void *ctx)
{
    uint64_t key = RD_KEY(S_ACTION, i);
    char place[48];
    jval sl[4];
    jobj o = {.keys = action_keys, .slots = sl};
    uint64_t op = 0, id = 0;
    int when = 0, kind = 0, r;
    bool check;

    (void)ctx;
    if ((r = entry(c, S_ACTION, i, PLAN_MAX_ACTIONS, "actions", t, &o, place,
                   &check)) < 0 || !check)
        return r;
    if (unknown_key(c, key, place, &o) < 0 ||
        get_int(c, key, place, "op", &sl[0], true, 0, PLAN_MAX_OPS - 1u,
                "an op index (non-negative integer)", &op) < 0 ||
        get_enum(c, key, place, "when", &sl[1], true, when_name, 2,
                 "before or after", &when) < 0 ||
        get_enum(c, key, place, "kind", &sl[2], true, act_name,
                 PLAN_ACT__COUNT,
                 "prefetch, store, free_device, free_host or wait",
                 &kind) < 0 ||
        get_int(c, key, place, "storage", &sl[3], true, 0, PLAN_FMT_MAX_ID,
                "a storage id (non-negative integer)", &id) < 0)
        return entry_done(c);
    plan_rd_action(&c->rd, key, c->s, i, (uint32_t)op, (plan_when)when,
                   (plan_act_kind)kind, id);
    return entry_done(c);
}

static int read_home(rx *c, size_t i, plan_jl_tok t, void *ctx)
{
    uint64_t key = RD_KEY(S_HOME, i);
    char place[48];
    jval sl[2];
    jobj o = {.keys = home_keys, .slots = sl};
    uint64_t id = 0;
    int home = 0, r;
    bool check;

    (void)ctx;
    if ((r = entry(c, S_HOME, i, PLAN_MAX_HOMES, "homes", t, &o, place,
                   &check)) < 0 || !check)
        return r;
    if (unknown_key(c, key, place, &o) < 0 ||
        get_int(c, key, place, "storage", &sl[0], true, 0, PLAN_FMT_MAX_ID,
                "a storage id (non-negative integer)", &id) < 0 ||
        get_enum(c, key, place, "home", &sl[1], true, home_name, 2,
                 "device or host", &home) < 0)
        return entry_done(c);
    plan_rd_home(&c->rd, key, c->s, i, id, (plan_home)home);
    return entry_done(c);
}

static int schedule_special(rx *c, int k, plan_jl_tok t, void *ctx)
{
    stop *top = ctx;
    size_t n;
    int r;

    switch (k) {
    case SK_ACTIONS:
        r = read_array(c, t, &top->slots[k], read_action, top, &n);
        top->n_actions = n;
        return r;
    case SK_HOMES:
        r = read_array(c, t, &top->slots[k], read_home, top, &n);
        top->n_homes = n;
        return r;
    default: /* SK_PREDICTED */
        if (t != PLAN_JL_LBRACE)
            return take(c, t, &top->slots[k]);
        top->slots[k].type = JV_OBJECT;
        top->metrics_read = true;
        return read_object(c, &top->metrics);
    }
}

static void check_metrics(rx *c, stop *top)
{
    static const char place[] = "predicted";
    const char *nonneg = "a non-negative integer", *fin = "a finite number";
    uint64_t key = RD_KEY(S_PREDICTED, 0);
    const jval *v = top->metric_slots;
    plan_metrics *m = &c->s->predicted;
    char b[64];

    if (need(c, key, "", place, &top->slots[SK_PREDICTED], false) <= 0)
        return;
    if (!top->metrics_read) {
        plan_rd_fail(&c->rd, key, "", place, "must be an object, got %s",
                     describe(&top->slots[SK_PREDICTED], b, sizeof b));
        return;
    }
    if (unknown_key(c, key, place, &top->metrics) < 0 ||
        get_int(c, key, place, "peak_device_bytes", &v[0], true, 0,
                PLAN_FMT_MAX_U64, nonneg, &m->peak_device_bytes) < 0 ||
        get_int(c, key, place, "peak_host_bytes", &v[1], true, 0,
                PLAN_FMT_MAX_U64, nonneg, &m->peak_host_bytes) < 0 ||
        get_double(c, key, place, "compute_us", &v[2], true, -HUGE_VAL, false,
                   HUGE_VAL, fin, &m->compute_us) < 0 ||
        get_double(c, key, place, "step_time_us", &v[3], true, -HUGE_VAL,
                   false, HUGE_VAL, fin, &m->step_time_us) < 0 ||
        get_double(c, key, place, "exposed_us", &v[4], true, -HUGE_VAL, false,
                   HUGE_VAL, fin, &m->exposed_us) < 0 ||
        get_int(c, key, place, "h2d_bytes", &v[5], true, 0, PLAN_FMT_MAX_U64,
                nonneg, &m->h2d_bytes) < 0 ||
        get_int(c, key, place, "d2h_bytes", &v[6], true, 0, PLAN_FMT_MAX_U64,
                nonneg, &m->d2h_bytes) < 0)
        return;
    c->s->has_predicted = true;
}

static void check_schedule_top(rx *c, stop *top)
{
    const jval *sl = top->slots;
    header h = {sl[SK_FORMAT], sl[SK_VERSION]};
    uint64_t budget = 0;

    check_header(c, S_FORMAT, &h, PLAN_FMT_SCHEDULE);
    unknown_key(c, RD_KEY(S_KEYS, 0), "", &top->top);
    if (get_string(c, RD_KEY(S_PLANNER, 0), "", "planner", &sl[SK_PLANNER],
                   false, PLAN_FMT_MAX_PLANNER) > 0) {
        memcpy(c->s->planner, sl[SK_PLANNER].s, sl[SK_PLANNER].slen);
        c->s->planner[sl[SK_PLANNER].slen] = 0;
    }
    if (get_int(c, RD_KEY(S_BUDGET, 0), "", "budget_bytes", &sl[SK_BUDGET],
                true, 0, PLAN_FMT_MAX_U64, "a non-negative integer",
                &budget) > 0)
        c->s->budget_bytes = budget;
    array_field(c, RD_KEY(S_ACTIONS, 0), "", "actions", &sl[SK_ACTIONS], true,
                top->n_actions, PLAN_MAX_ACTIONS);
    array_field(c, RD_KEY(S_HOMES, 0), "", "homes", &sl[SK_HOMES], false,
                top->n_homes, PLAN_MAX_HOMES);
    check_metrics(c, top);
}

static int parse_schedule(rx *c, plan_schedule **ret_schedule)
{
    stop top;
    int r;

    memset(&top, 0, sizeof top);
    top.top = (jobj){.keys = schedule_keys, .slots = top.slots,
                     .special = 1u << SK_ACTIONS | 1u << SK_HOMES |
                                1u << SK_PREDICTED,
                     .fn = schedule_special, .ctx = &top};
    top.metrics = (jobj){.keys = metric_keys, .slots = top.metric_slots};
    c->s = plan_schedule_new("", 0);
    if (!c->s)
        return ho_errf(c->rd.err, c->rd.errlen, -ENOMEM, "out of memory");
    if ((r = top_object(c)) <= 0)
        return r < 0 ? r : c->rd.rc;
    if ((r = read_object(c, &top.top)) < 0 ||
        (r = plan_jl_expect_eof(&c->lx)) < 0)
        return r;
    check_schedule_top(c, &top);
    if (c->rd.rc)
        return c->rd.rc;
    *ret_schedule = c->s;
    c->s = NULL;
    return 0;
}

int plan_schedule_parse_json(const char *buf, size_t len,
                             plan_schedule **ret_schedule, char *err,
                             size_t errlen)
{
    rx c;
    int r = parse_begin(&c, buf, len, HO_E_BAD_SCHEDULE, err, errlen);
    if (r == 0)
        r = parse_schedule(&c, ret_schedule);
    plan_schedule_free(c.s);
    plan_jl_done(&c.lx);
    return r;
}

int plan_schedule_read_json(const char *path, plan_schedule **ret_schedule,
                            char *err, size_t errlen)
{
    return plan_fmt_load(path, false, NULL, ret_schedule, err, errlen);
}

/* ------------------------------------------------------------ writers */

static const char *bool_str(bool b)
{
    return b ? "true" : "false";
}

/* `key` is the literal text before the value (", \"bytes\": "). */
static void kv_u64(plan_wbuf *w, const char *key, uint64_t v)
{
    plan_wbuf_puts(w, key);
    plan_wbuf_u64(w, v);
}

static void kv_double(plan_wbuf *w, const char *key, double v)
{
    plan_wbuf_puts(w, key);
    plan_wbuf_double(w, v);
}

static void kv_word(plan_wbuf *w, const char *key, const char *word)
{
    plan_wbuf_puts(w, key);
    plan_wbuf_puts(w, word);
}

/* Start a document that passed its writable check (check < 0: refused):
 * "{", format, version and the document's first string field. */
static int begin_doc(plan_wbuf *w, FILE *out, int check, const char *format,
                     const char *key, const char *value)
{
    if (check < 0)
        return check;
    plan_wbuf_init(w, out);
    plan_wbuf_puts(w, "{\n  \"format\": \"");
    plan_wbuf_puts(w, format);
    plan_wbuf_puts(w, "\",\n  \"version\": 1,\n  ");
    plan_wbuf_puts(w, key);
    plan_wbuf_str(w, value);
    return 0;
}

/* Entry i of a list: its opening text, after a comma unless it is the
 * first. */
static void entry_open(plan_wbuf *w, size_t i, const char *first_key)
{
    plan_wbuf_puts(w, i ? ",\n    {" : "\n    {");
    plan_wbuf_puts(w, first_key);
}

static void put_ids(plan_wbuf *w, const plan_trace *t, const uint32_t *refs,
                    uint32_t n)
{
    for (uint32_t j = 0; j < n; j++) {
        if (j)
            plan_wbuf_put(w, ", ", 2);
        plan_wbuf_u64(w, t->storages[refs[j]].id);
    }
}

int plan_trace_write_json(const plan_trace *t, FILE *out)
{
    const plan_link *l = &t->link;
    plan_wbuf w;
    int r = begin_doc(&w, out, plan_fmt_check_trace(t), PLAN_FMT_TRACE,
                      "\"name\": ", t->name);

    if (r < 0)
        return r;
    kv_double(&w, ",\n  \"link\": {\"h2d_gbps\": ", l->h2d_gbps);
    kv_double(&w, ", \"d2h_gbps\": ", l->d2h_gbps);
    kv_double(&w, ", \"latency_us\": ", l->latency_us);
    kv_word(&w, ", \"duplex\": ", bool_str(l->duplex));
    plan_wbuf_puts(&w, "},\n  \"storages\": [");
    for (uint32_t i = 0; i < t->n_storages; i++) {
        const plan_storage *s = &t->storages[i];
        entry_open(&w, i, "\"id\": ");
        plan_wbuf_u64(&w, s->id);
        kv_u64(&w, ", \"bytes\": ", s->bytes);
        kv_word(&w, ", \"kind\": \"", plan_kind_name((plan_kind)s->kind));
        kv_word(&w, "\", \"initial\": \"",
                plan_initial_name((plan_initial)s->initial));
        kv_word(&w, "\", \"retained\": ", bool_str(s->retained));
        kv_word(&w, ", \"pinned\": ", bool_str(s->pinned));
        plan_wbuf_puts(&w, s->movable ? ", \"movable\": true}" : "}");
    }
    plan_wbuf_puts(&w, t->n_storages ? "\n  ],\n  \"ops\": ["
                                     : "],\n  \"ops\": [");
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *o = &t->ops[i];
        const uint32_t *refs = t->refs + o->first_ref;
        entry_open(&w, i, "\"name\": ");
        plan_wbuf_str(&w, plan_op_name(t, i));
        kv_double(&w, ", \"duration_us\": ", o->duration_us);
        plan_wbuf_puts(&w, ", \"reads\": [");
        put_ids(&w, t, refs, o->n_reads);
        plan_wbuf_puts(&w, "], \"writes\": [");
        put_ids(&w, t, refs + o->n_reads, o->n_writes);
        plan_wbuf_puts(&w, "]}");
    }
    plan_wbuf_puts(&w, t->n_ops ? "\n  ]\n}\n" : "]\n}\n");
    return plan_wbuf_done(&w);
}

int plan_schedule_write_json(const plan_schedule *s, FILE *out)
{
    const plan_metrics *m = &s->predicted;
    plan_wbuf w;
    int r = begin_doc(&w, out, plan_fmt_check_schedule(s), PLAN_FMT_SCHEDULE,
                      "\"planner\": ", s->planner);

    if (r < 0)
        return r;
    kv_u64(&w, ",\n  \"budget_bytes\": ", s->budget_bytes);
    plan_wbuf_puts(&w, ",\n  \"actions\": [");
    for (size_t i = 0; i < s->n_actions; i++) {
        const plan_action *a = &s->actions[i];
        entry_open(&w, i, "\"op\": ");
        plan_wbuf_u64(&w, a->op);
        plan_wbuf_puts(&w, a->when == PLAN_AFTER ? ", \"when\": \"after\""
                                                 : ", \"when\": \"before\"");
        kv_word(&w, ", \"kind\": \"", plan_act_name((plan_act_kind)a->kind));
        kv_u64(&w, "\", \"storage\": ", a->storage_id);
        plan_wbuf_puts(&w, "}");
    }
    plan_wbuf_puts(&w, s->n_actions ? "\n  ]" : "]");
    if (s->n_homes) {
        plan_wbuf_puts(&w, ",\n  \"homes\": [");
        for (size_t i = 0; i < s->n_homes; i++) {
            entry_open(&w, i, "\"storage\": ");
            plan_wbuf_u64(&w, s->homes[i].storage_id);
            kv_word(&w, ", \"home\": \"",
                    plan_home_name((plan_home)s->homes[i].home));
            plan_wbuf_puts(&w, "\"}");
        }
        plan_wbuf_puts(&w, "\n  ]");
    }
    if (s->has_predicted) {
        kv_u64(&w, ",\n  \"predicted\": {\"peak_device_bytes\": ",
               m->peak_device_bytes);
        kv_u64(&w, ", \"peak_host_bytes\": ", m->peak_host_bytes);
        kv_double(&w, ", \"compute_us\": ", m->compute_us);
        kv_double(&w, ", \"step_time_us\": ", m->step_time_us);
        kv_double(&w, ", \"exposed_us\": ", m->exposed_us);
        kv_u64(&w, ", \"h2d_bytes\": ", m->h2d_bytes);
        kv_u64(&w, ", \"d2h_bytes\": ", m->d2h_bytes);
        plan_wbuf_puts(&w, "}");
    }
    plan_wbuf_puts(&w, "\n}\n");
    return plan_wbuf_done(&w);
}
