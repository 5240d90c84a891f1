/*
 * planner/json.c - the JSON forms of a trace and a schedule (PLANNER.md
 * §1-§2), read with jansson and written by hand.
 *
 * Readers are strict: every key must be one the format defines, required
 * keys must be present, every number is range-checked (fmt_private.h), and
 * every error names its place ("ops[12].reads[1]: unknown storage id 99").
 * Optional keys take the defaults listed in docs/formats.md.
 *
 * Writers emit one storage / op / action per line with a fixed key order
 * and doubles in their shortest form that reads back bit-identical, so a
 * file we wrote reads and writes back byte-identical.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "planner/io/io_private.h"
#include "hyperoffload/errors.h"
#include "planner/plan.h"
#include "planner/io/plan_io.h"

/* ------------------------------------------------------------ shared helpers */

int plan_fmt_slurp(const char *path, char **ret_buf, size_t *ret_len,
                   char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int fd, r;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        r = -errno;
        return ho_errf(err, errlen, r, "%s: %s", path, strerror(-r));
    }
    for (;;) {
        ssize_t n;
        if (cap - len < 2) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nbuf;
            if (ncap > PLAN_FMT_MAX_FILE + 2)
                ncap = PLAN_FMT_MAX_FILE + 2;
            if (ncap - len < 2) {
                r = ho_errf(err, errlen, -EFBIG,
                                  "%s: larger than %llu bytes", path,
                                  (unsigned long long)PLAN_FMT_MAX_FILE);
                goto fail;
            }
            nbuf = realloc(buf, ncap);
            if (!nbuf) {
                r = ho_errf(err, errlen, -ENOMEM, "%s: out of memory",
                                  path);
                goto fail;
            }
            buf = nbuf;
            cap = ncap;
        }
        n = read(fd, buf + len, cap - len - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            ho_errf(err, errlen, r, "%s: %s", path, strerror(-r));
            goto fail;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > PLAN_FMT_MAX_FILE) {
            r = ho_errf(err, errlen, -EFBIG,
                              "%s: larger than %llu bytes", path,
                              (unsigned long long)PLAN_FMT_MAX_FILE);
            goto fail;
        }
    }
    close(fd);
    buf[len] = '\0';
    *ret_buf = buf;
    *ret_len = len;
    return 0;
fail:
    close(fd);
    free(buf);
    return r;
}

bool plan_fmt_utf8_ok(const char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0;

    while (i < len) {
        unsigned c = p[i];
        unsigned need;
        uint32_t cp;
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i <= need)
            return false;
        for (unsigned k = 1; k <= need; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        /* overlong forms, surrogates, beyond U+10FFFF */
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return false;
        i += need + 1;
    }
    return true;
}

bool plan_fmt_looks_json(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        return c == '{';
    }
    return true;
}

/* ------------------------------------------------------------ reader core */

typedef struct rd {
    char *err;
    size_t errlen;
    int code; /* HO_E_BAD_TRACE or HO_E_BAD_SCHEDULE */
} rd;

/* "place.key: message", "place: message" or "key: message". */
__attribute__((format(printf, 4, 5)))
static int rd_fail(const rd *r, const char *place, const char *key,
                   const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (place && place[0] && key)
        return ho_errf(r->err, r->errlen, r->code, "%s.%s: %s", place,
                             key, msg);
    if (place && place[0])
        return ho_errf(r->err, r->errlen, r->code, "%s: %s", place,
                             msg);
    return ho_errf(r->err, r->errlen, r->code, "%s: %s",
                         key ? key : "document", msg);
}

/* A short description of a JSON value for "got ..." messages. */
static const char *describe(const json_t *v, char *buf, size_t len)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (n > 40)
            snprintf(buf, len, "\"%.40s...\"", s);
        else
            snprintf(buf, len, "\"%s\"", s);
        return buf;
    }
    case JSON_INTEGER:
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return buf;
    case JSON_REAL:
        snprintf(buf, len, "%.17g", json_real_value(v));
        return buf;
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

/* Fetch obj[key].  1 when present, 0 when absent and optional, negative
 * (message set) when absent and required. */
static int field(const rd *r, const json_t *obj, const char *place,
                 const char *key, bool required, json_t **ret_value)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return rd_fail(r, place, key, "missing required field");
        return 0;
    }
    *ret_value = v;
    return 1;
}

/* Every key of obj must be in allowed (NULL-terminated). */
static int check_keys(const rd *r, const json_t *obj, const char *place,
                      const char *const *allowed)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)obj, key, v) {
        const char *const *a;
        (void)v;
        for (a = allowed; *a; a++)
            if (strcmp(*a, key) == 0)
                break;
        if (!*a)
            return rd_fail(r, place, key, "unknown field");
    }
    return 0;
}

static int want_object(const rd *r, const json_t *v, const char *place,
                       const char *key)
{
    char b[64];
    if (!json_is_object(v))
        return rd_fail(r, place, key, "must be an object, got %s",
                       describe(v, b, sizeof b));
    return 0;
}

static int want_array(const rd *r, const json_t *v, const char *place,
                      const char *key, size_t max)
{
    char b[64];
    if (!json_is_array(v))
        return rd_fail(r, place, key, "must be an array, got %s",
                       describe(v, b, sizeof b));
    if (json_array_size(v) > max)
        return rd_fail(r, place, key, "too many entries (%zu > %zu)",
                       json_array_size(v), max);
    return 0;
}

/* An integer in [min, max]; `what` completes "must be ...". */
static int int_value(const rd *r, const json_t *v, const char *place,
                     const char *key, uint64_t min, uint64_t max,
                     const char *what, uint64_t *ret_value)
{
    char b[64];
    json_int_t x;

    if (!json_is_integer(v))
        return rd_fail(r, place, key, "must be %s, got %s", what,
                       describe(v, b, sizeof b));
    x = json_integer_value(v);
    if (x < 0 || (uint64_t)x < min)
        return rd_fail(r, place, key, "must be %s, got %s", what,
                       describe(v, b, sizeof b));
    if ((uint64_t)x > max)
        return rd_fail(r, place, key, "must be at most %llu, got %s",
                       (unsigned long long)max, describe(v, b, sizeof b));
    *ret_value = (uint64_t)x;
    return 0;
}

static int get_int(const rd *r, const json_t *obj, const char *place,
                   const char *key, bool required, uint64_t min,
                   uint64_t max, const char *what, uint64_t *ret_value)
{
    json_t *v = NULL;
    int k = field(r, obj, place, key, required, &v);
    if (k <= 0)
        return k;
    return int_value(r, v, place, key, min, max, what, ret_value);
}

/* A finite number in [min, max] (min exclusive when min_open). */
static int get_double(const rd *r, const json_t *obj, const char *place,
                      const char *key, bool required, double min,
                      bool min_open, double max, const char *what,
                      double *ret_value)
{
    char b[64];
    json_t *v = NULL;
    double x;
    int k = field(r, obj, place, key, required, &v);

    if (k <= 0)
        return k;
    if (!json_is_number(v))
        return rd_fail(r, place, key, "must be %s, got %s", what,
                       describe(v, b, sizeof b));
    x = json_number_value(v);
    if (!isfinite(x) || x < min || (min_open && x == min))
        return rd_fail(r, place, key, "must be %s, got %s", what,
                       describe(v, b, sizeof b));
    if (x > max)
        return rd_fail(r, place, key, "must be at most %g, got %s", max,
                       describe(v, b, sizeof b));
    *ret_value = x + 0.0; /* -0 reads as +0: what we write for it */
    return 0;
}

static int get_bool(const rd *r, const json_t *obj, const char *place,
                    const char *key, bool *ret_value)
{
    char b[64];
    json_t *v = NULL;
    int k = field(r, obj, place, key, false, &v);

    if (k <= 0)
        return k;
    if (!json_is_boolean(v))
        return rd_fail(r, place, key, "must be true or false, got %s",
                       describe(v, b, sizeof b));
    *ret_value = json_is_true(v);
    return 0;
}

static int get_string(const rd *r, const json_t *obj, const char *place,
                      const char *key, bool required, size_t maxlen,
                      const char **ret_value)
{
    char b[64];
    json_t *v = NULL;
    int k = field(r, obj, place, key, required, &v);

    if (k <= 0)
        return k;
    if (!json_is_string(v))
        return rd_fail(r, place, key, "must be a string, got %s",
                       describe(v, b, sizeof b));
    if (json_string_length(v) > maxlen)
        return rd_fail(r, place, key, "longer than %zu bytes", maxlen);
    *ret_value = json_string_value(v);
    return 0;
}

/* A string naming an enum value, parsed by `parse`; `names` lists the
 * spellings for the message. */
static int get_enum(const rd *r, const json_t *obj, const char *place,
                    const char *key, bool required,
                    int (*parse)(const char *, int *), const char *names,
                    int *ret_value)
{
    const char *s = NULL;
    int k = get_string(r, obj, place, key, required, 64, &s);

    if (k < 0 || !s)
        return k;
    if (parse(s, ret_value) < 0)
        return rd_fail(r, place, key, "unknown value \"%s\" (expected %s)",
                       s, names);
    return 0;
}

static int parse_kind(const char *s, int *ret_value)
{
    plan_kind k;
    int r = plan_kind_parse(s, &k);
    if (r == 0)
        *ret_value = (int)k;
    return r;
}

static int parse_initial(const char *s, int *ret_value)
{
    plan_initial i;
    int r = plan_initial_parse(s, &i);
    if (r == 0)
        *ret_value = (int)i;
    return r;
}

static int parse_act(const char *s, int *ret_value)
{
    plan_act_kind k;
    int r = plan_act_parse(s, &k);
    if (r == 0)
        *ret_value = (int)k;
    return r;
}

static int parse_when(const char *s, int *ret_value)
{
    if (strcmp(s, "before") == 0)
        *ret_value = PLAN_BEFORE;
    else if (strcmp(s, "after") == 0)
        *ret_value = PLAN_AFTER;
    else
        return -EINVAL;
    return 0;
}

static json_t *load(const rd *r, const char *buf, size_t len, int *ret_code)
{
    json_error_t jerr;
    json_t *root;

    if (len > PLAN_FMT_MAX_FILE) {
        *ret_code = ho_errf(r->err, r->errlen, -EFBIG,
                                  "document larger than %llu bytes",
                                  (unsigned long long)PLAN_FMT_MAX_FILE);
        return NULL;
    }
    root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (json_error_code(&jerr) == json_error_out_of_memory)
            *ret_code = ho_errf(r->err, r->errlen, -ENOMEM,
                                      "out of memory parsing JSON");
        else
            *ret_code = ho_errf(r->err, r->errlen, r->code,
                                      "invalid JSON at line %d, column %d: "
                                      "%s", jerr.line, jerr.column,
                                      jerr.text);
    }
    return root;
}

/* The top level must be an object with the expected format and version. */
static int check_header(const rd *r, const json_t *root, const char *format)
{
    char b[64];
    const char *s = NULL;
    json_t *v = NULL;
    int k;

    if (!json_is_object(root))
        return ho_errf(r->err, r->errlen, r->code,
                             "expected a JSON object at the top level, "
                             "got %s", describe(root, b, sizeof b));
    k = field(r, root, "", "format", true, &v);
    if (k < 0)
        return k;
    if (!json_is_string(v))
        return rd_fail(r, "", "format", "expected \"%s\", got %s", format,
                       describe(v, b, sizeof b));
    s = json_string_value(v);
    if (strcmp(s, format) != 0)
        return rd_fail(r, "", "format", "expected \"%s\", got %s", format,
                       describe(v, b, sizeof b));
    k = field(r, root, "", "version", true, &v);
    if (k < 0)
        return k;
    if (!json_is_integer(v))
        return rd_fail(r, "", "version", "must be an integer, got %s",
                       describe(v, b, sizeof b));
    if (json_integer_value(v) != PLAN_FMT_VERSION)
        return rd_fail(r, "", "version", "unsupported version %s",
                       describe(v, b, sizeof b));
    return 0;
}

/* ------------------------------------------------------------ trace reader */

static const char *const trace_keys[] = {"format", "version", "name", "link",
                                         "storages", "ops", NULL};
static const char *const link_keys[] = {"h2d_gbps", "d2h_gbps", "latency_us",
                                        "duplex", NULL};
static const char *const storage_keys[] = {"id", "bytes", "kind", "initial",
                                           "retained", "pinned", "movable",
                                           NULL};
static const char *const op_keys[] = {"name", "duration_us", "reads",
                                      "writes", NULL};

static int read_link(const rd *r, const json_t *root, plan_link *link)
{
    json_t *v = NULL;
    int k;

    k = field(r, root, "", "link", true, &v);
    if (k < 0)
        return k;
    if ((k = want_object(r, v, "", "link")) < 0 ||
        (k = check_keys(r, v, "link", link_keys)) < 0)
        return k;
    link->latency_us = 0.0;
    link->duplex = true;
    if ((k = get_double(r, v, "link", "h2d_gbps", true, 0.0, true,
                        PLAN_FMT_MAX_GBPS, "a positive number",
                        &link->h2d_gbps)) < 0 ||
        (k = get_double(r, v, "link", "d2h_gbps", true, 0.0, true,
                        PLAN_FMT_MAX_GBPS, "a positive number",
                        &link->d2h_gbps)) < 0 ||
        (k = get_double(r, v, "link", "latency_us", false, 0.0, false,
                        PLAN_FMT_MAX_LATENCY_US, "a non-negative number",
                        &link->latency_us)) < 0 ||
        (k = get_bool(r, v, "link", "duplex", &link->duplex)) < 0)
        return k;
    return 0;
}

static int read_storage(const rd *r, plan_trace *t, const json_t *v,
                        size_t i)
{
    char place[48], ierr[160];
    plan_storage s;
    uint32_t prev;
    int kind = PLAN_KIND_OTHER, initial = PLAN_INIT_NONE, k;

    snprintf(place, sizeof place, "storages[%zu]", i);
    if ((k = want_object(r, v, place, NULL)) < 0 ||
        (k = check_keys(r, v, place, storage_keys)) < 0)
        return k;
    memset(&s, 0, sizeof s);
    if ((k = get_int(r, v, place, "id", true, 0, PLAN_FMT_MAX_ID,
                     "a non-negative integer", &s.id)) < 0 ||
        (k = get_int(r, v, place, "bytes", true, 1, PLAN_MAX_STORAGE_BYTES,
                     "a positive integer", &s.bytes)) < 0 ||
        (k = get_enum(r, v, place, "kind", false, parse_kind,
                      "activation, param, grad, optimizer, kv or other",
                      &kind)) < 0 ||
        (k = get_enum(r, v, place, "initial", false, parse_initial,
                      "none, device or host", &initial)) < 0 ||
        (k = get_bool(r, v, place, "retained", &s.retained)) < 0 ||
        (k = get_bool(r, v, place, "pinned", &s.pinned)) < 0 ||
        (k = get_bool(r, v, place, "movable", &s.movable)) < 0)
        return k;
    s.kind = (uint8_t)kind;
    s.initial = (uint8_t)initial;
    prev = plan_trace_find(t, s.id);
    if (prev != PLAN_NONE)
        return rd_fail(r, place, "id", "duplicate id %llu (first at "
                       "storages[%u])", (unsigned long long)s.id, prev);
    ierr[0] = '\0';
    k = plan_trace_add_storage(t, &s, NULL, ierr, sizeof ierr);
    if (k == -ENOMEM)
        return ho_errf(r->err, r->errlen, k, "out of memory");
    if (k < 0)
        return rd_fail(r, place, NULL, "%s",
                       ierr[0] ? ierr : ho_strerror(k));
    return 0;
}

/* Resolve a reads/writes array of ids into indices appended to *idx. */
static int read_refs(const rd *r, plan_trace *t, const json_t *op,
                     const char *place, const char *key, uint32_t *idx,
                     uint32_t *n, uint32_t room)
{
    char elem[32];
    json_t *arr = NULL, *v;
    size_t j;
    int k = field(r, op, place, key, false, &arr);

    if (k <= 0)
        return k;
    if ((k = want_array(r, arr, place, key, PLAN_MAX_OP_REFS)) < 0)
        return k;
    if (json_array_size(arr) > room)
        return rd_fail(r, place, NULL, "more than %u references",
                       PLAN_MAX_OP_REFS);
    json_array_foreach(arr, j, v) {
        uint64_t id;
        uint32_t ix;
        snprintf(elem, sizeof elem, "%s[%zu]", key, j);
        if ((k = int_value(r, v, place, elem, 0, PLAN_FMT_MAX_ID,
                           "a storage id (non-negative integer)", &id)) < 0)
            return k;
        ix = plan_trace_find(t, id);
        if (ix == PLAN_NONE)
            return rd_fail(r, place, elem, "unknown storage id %llu",
                           (unsigned long long)id);
        idx[(*n)++] = ix;
    }
    return 0;
}

static int read_op(const rd *r, plan_trace *t, const json_t *v, size_t i,
                   uint32_t *idx, uint64_t *total_refs)
{
    char place[48], ierr[160];
    const char *name = "";
    double duration = 0.0;
    uint32_t n_reads = 0, n_writes = 0;
    int k;

    snprintf(place, sizeof place, "ops[%zu]", i);
    if ((k = want_object(r, v, place, NULL)) < 0 ||
        (k = check_keys(r, v, place, op_keys)) < 0)
        return k;
    if ((k = get_string(r, v, place, "name", false, PLAN_FMT_MAX_NAME,
                        &name)) < 0 ||
        (k = get_double(r, v, place, "duration_us", true, 0.0, false,
                        PLAN_FMT_MAX_DURATION_US, "a non-negative number",
                        &duration)) < 0 ||
        (k = read_refs(r, t, v, place, "reads", idx, &n_reads,
                       PLAN_MAX_OP_REFS)) < 0 ||
        (k = read_refs(r, t, v, place, "writes", idx + n_reads, &n_writes,
                       PLAN_MAX_OP_REFS - n_reads)) < 0)
        return k;
    *total_refs += (uint64_t)n_reads + n_writes;
    if (*total_refs > PLAN_MAX_REFS)
        return rd_fail(r, place, NULL, "more than %u references in the "
                       "trace", PLAN_MAX_REFS);
    ierr[0] = '\0';
    k = plan_trace_add_op(t, name, duration, idx, n_reads, idx + n_reads,
                          n_writes, ierr, sizeof ierr);
    if (k == -ENOMEM)
        return ho_errf(r->err, r->errlen, k, "out of memory");
    if (k < 0)
        return rd_fail(r, place, NULL, "%s",
                       ierr[0] ? ierr : ho_strerror(k));
    return 0;
}

int plan_trace_parse_json(const char *buf, size_t len, plan_trace **ret_trace,
                          char *err, size_t errlen)
{
    rd r = {err, errlen, HO_E_BAD_TRACE};
    json_t *root, *storages = NULL, *ops = NULL, *v;
    plan_trace *t = NULL;
    plan_link link;
    const char *name = "";
    uint32_t *idx = NULL;
    uint64_t total_refs = 0;
    size_t i;
    int k;

    if (err && errlen)
        err[0] = '\0';
    root = load(&r, buf, len, &k);
    if (!root)
        return k;
    if ((k = check_header(&r, root, PLAN_FMT_TRACE)) < 0 ||
        (k = check_keys(&r, root, "", trace_keys)) < 0 ||
        (k = get_string(&r, root, "", "name", false, PLAN_FMT_MAX_NAME,
                        &name)) < 0 ||
        (k = read_link(&r, root, &link)) < 0 ||
        (k = field(&r, root, "", "storages", true, &storages)) < 0 ||
        (k = want_array(&r, storages, "", "storages",
                        PLAN_MAX_STORAGES)) < 0 ||
        (k = field(&r, root, "", "ops", true, &ops)) < 0 ||
        (k = want_array(&r, ops, "", "ops", PLAN_MAX_OPS)) < 0)
        goto fail;
    if (json_array_size(ops) == 0) {
        k = rd_fail(&r, "", "ops", "a trace needs at least one op");
        goto fail;
    }
    t = plan_trace_new(name, &link);
    idx = malloc(sizeof *idx * PLAN_MAX_OP_REFS);
    if (!t || !idx) {
        k = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto fail;
    }
    json_array_foreach(storages, i, v) {
        if ((k = read_storage(&r, t, v, i)) < 0)
            goto fail;
    }
    json_array_foreach(ops, i, v) {
        if ((k = read_op(&r, t, v, i, idx, &total_refs)) < 0)
            goto fail;
    }
    /* The tree can be large: drop it before deriving the access lists. */
    json_decref(root);
    root = NULL;
    k = plan_trace_finish(t, err, errlen);
    if (k < 0)
        goto fail;
    free(idx);
    *ret_trace = t;
    return 0;
fail:
    json_decref(root);
    free(idx);
    plan_trace_free(t);
    return k;
}

int plan_trace_read_json(const char *path, plan_trace **ret_trace, char *err,
                         size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    int k = plan_fmt_slurp(path, &buf, &len, err, errlen);

    if (k < 0)
        return k;
    k = plan_trace_parse_json(buf, len, ret_trace, err, errlen);
    free(buf);
    return k;
}

/* ------------------------------------------------------------ schedule reader */

static const char *const schedule_keys[] = {"format", "version", "planner",
                                            "budget_bytes", "actions",
                                            "homes", "predicted", NULL};
static const char *const home_keys[] = {"storage", "home", NULL};
static const char *const action_keys[] = {"op", "when", "kind", "storage",
                                          NULL};
static const char *const metric_keys[] = {"peak_device_bytes",
                                          "peak_host_bytes", "compute_us",
                                          "step_time_us", "exposed_us",
                                          "h2d_bytes", "d2h_bytes", NULL};

static int read_action(const rd *r, plan_schedule *s, const json_t *v,
                       size_t i)
{
    char place[48];
    uint64_t op = 0, id = 0;
    int when = 0, kind = 0, k;

    snprintf(place, sizeof place, "actions[%zu]", i);
    if ((k = want_object(r, v, place, NULL)) < 0 ||
        (k = check_keys(r, v, place, action_keys)) < 0)
        return k;
    if ((k = get_int(r, v, place, "op", true, 0, PLAN_MAX_OPS - 1u,
                     "an op index (non-negative integer)", &op)) < 0 ||
        (k = get_enum(r, v, place, "when", true, parse_when,
                      "before or after", &when)) < 0 ||
        (k = get_enum(r, v, place, "kind", true, parse_act,
                      "prefetch, store, free_device, free_host or wait",
                      &kind)) < 0 ||
        (k = get_int(r, v, place, "storage", true, 0, PLAN_FMT_MAX_ID,
                     "a storage id (non-negative integer)", &id)) < 0)
        return k;
    k = plan_schedule_push_id(s, (uint32_t)op, (plan_when)when,
                              (plan_act_kind)kind, id);
    if (k == -ENOMEM)
        return ho_errf(r->err, r->errlen, k, "out of memory");
    if (k < 0)
        return rd_fail(r, place, NULL, "%s", ho_strerror(k));
    return 0;
}

static int parse_home(const char *s, int *ret_value)
{
    plan_home h;
    int r = plan_home_parse(s, &h);
    if (r == 0)
        *ret_value = (int)h;
    return r;
}

static int read_home(const rd *r, plan_schedule *s, const json_t *v,
                     size_t i)
{
    char place[48];
    uint64_t id = 0;
    int home = 0, k;

    snprintf(place, sizeof place, "homes[%zu]", i);
    if ((k = want_object(r, v, place, NULL)) < 0 ||
        (k = check_keys(r, v, place, home_keys)) < 0)
        return k;
    if ((k = get_int(r, v, place, "storage", true, 0, PLAN_FMT_MAX_ID,
                     "a storage id (non-negative integer)", &id)) < 0 ||
        (k = get_enum(r, v, place, "home", true, parse_home,
                      "device or host", &home)) < 0)
        return k;
    k = plan_schedule_push_home_id(s, id, (plan_home)home);
    if (k == -ENOMEM)
        return ho_errf(r->err, r->errlen, k, "out of memory");
    if (k < 0)
        return rd_fail(r, place, NULL, "%s", ho_strerror(k));
    return 0;
}

static int read_homes(const rd *r, const json_t *root, plan_schedule *s)
{
    json_t *arr = NULL, *v;
    size_t i;
    int k = field(r, root, "", "homes", false, &arr);

    if (k <= 0)
        return k;
    if ((k = want_array(r, arr, "", "homes", PLAN_MAX_HOMES)) < 0)
        return k;
    json_array_foreach(arr, i, v) {
        if ((k = read_home(r, s, v, i)) < 0)
            return k;
    }
    return 0;
}

static int read_metrics(const rd *r, const json_t *root, plan_schedule *s)
{
    static const char place[] = "predicted";
    const char *nonneg = "a non-negative integer";
    plan_metrics *m = &s->predicted;
    json_t *v = NULL;
    int k = field(r, root, "", place, false, &v);

    if (k <= 0)
        return k;
    if ((k = want_object(r, v, "", place)) < 0 ||
        (k = check_keys(r, v, place, metric_keys)) < 0)
        return k;
    if ((k = get_int(r, v, place, "peak_device_bytes", true, 0,
                     PLAN_FMT_MAX_U64, nonneg, &m->peak_device_bytes)) < 0 ||
        (k = get_int(r, v, place, "peak_host_bytes", true, 0,
                     PLAN_FMT_MAX_U64, nonneg, &m->peak_host_bytes)) < 0 ||
        (k = get_double(r, v, place, "compute_us", true, -HUGE_VAL, false,
                        HUGE_VAL, "a finite number", &m->compute_us)) < 0 ||
        (k = get_double(r, v, place, "step_time_us", true, -HUGE_VAL, false,
                        HUGE_VAL, "a finite number", &m->step_time_us)) < 0 ||
        (k = get_double(r, v, place, "exposed_us", true, -HUGE_VAL, false,
                        HUGE_VAL, "a finite number", &m->exposed_us)) < 0 ||
        (k = get_int(r, v, place, "h2d_bytes", true, 0, PLAN_FMT_MAX_U64,
                     nonneg, &m->h2d_bytes)) < 0 ||
        (k = get_int(r, v, place, "d2h_bytes", true, 0, PLAN_FMT_MAX_U64,
                     nonneg, &m->d2h_bytes)) < 0)
        return k;
    s->has_predicted = true;
    return 0;
}

int plan_schedule_parse_json(const char *buf, size_t len,
                             plan_schedule **ret_schedule, char *err, size_t errlen)
{
    rd r = {err, errlen, HO_E_BAD_SCHEDULE};
    json_t *root, *actions = NULL, *v;
    plan_schedule *s = NULL;
    const char *planner = "";
    uint64_t budget = 0;
    size_t i;
    int k;

    if (err && errlen)
        err[0] = '\0';
    root = load(&r, buf, len, &k);
    if (!root)
        return k;
    if ((k = check_header(&r, root, PLAN_FMT_SCHEDULE)) < 0 ||
        (k = check_keys(&r, root, "", schedule_keys)) < 0 ||
        (k = get_string(&r, root, "", "planner", false, PLAN_FMT_MAX_PLANNER,
                        &planner)) < 0 ||
        (k = get_int(&r, root, "", "budget_bytes", true, 0, PLAN_FMT_MAX_U64,
                     "a non-negative integer", &budget)) < 0 ||
        (k = field(&r, root, "", "actions", true, &actions)) < 0 ||
        (k = want_array(&r, actions, "", "actions", PLAN_MAX_ACTIONS)) < 0)
        goto fail;
    s = plan_schedule_new(planner, budget);
    if (!s) {
        k = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto fail;
    }
    json_array_foreach(actions, i, v) {
        if ((k = read_action(&r, s, v, i)) < 0)
            goto fail;
    }
    if ((k = read_homes(&r, root, s)) < 0 ||
        (k = read_metrics(&r, root, s)) < 0)
        goto fail;
    json_decref(root);
    *ret_schedule = s;
    return 0;
fail:
    json_decref(root);
    plan_schedule_free(s);
    return k;
}

int plan_schedule_read_json(const char *path, plan_schedule **ret_schedule,
                            char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    int k = plan_fmt_slurp(path, &buf, &len, err, errlen);

    if (k < 0)
        return k;
    k = plan_schedule_parse_json(buf, len, ret_schedule, err, errlen);
    free(buf);
    return k;
}

/* ------------------------------------------------------------ writers */

/* A JSON string literal; the caller has checked plan_fmt_utf8_ok. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        default:
            if (c < 0x20)
                fprintf(f, "\\u%04x", c);
            else
                fputc(c, f);
        }
    }
    fputc('"', f);
}

/* The shortest decimal that reads back as exactly v (integers plainly). */
static void put_double(FILE *f, double v)
{
    char buf[320]; /* %.17g needs ~25; sized for what gcc proves */
    int lo = 1, hi = 17;

    if (v == 0.0)
        v = 0.0; /* -0 prints as 0 */
    if (v == floor(v) && fabs(v) < 1e15) {
        fprintf(f, "%.0f", v);
        return;
    }
    /* Round-tripping is monotone in the precision: binary search. */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        snprintf(buf, sizeof buf, "%.*g", mid, v);
        if (strtod(buf, NULL) == v)
            hi = mid;
        else
            lo = mid + 1;
    }
    snprintf(buf, sizeof buf, "%.*g", lo, v);
    fputs(buf, f);
}

static const char *bool_str(bool b)
{
    return b ? "true" : "false";
}

static int finish_write(FILE *out)
{
    if (fflush(out) != 0 || ferror(out))
        return -EIO;
    return 0;
}

int plan_trace_write_json(const plan_trace *t, FILE *out)
{
    const plan_link *l = &t->link;

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
    fprintf(out, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n"
            "  \"name\": ", PLAN_FMT_TRACE, PLAN_FMT_VERSION);
    put_str(out, t->name);
    fputs(",\n  \"link\": {\"h2d_gbps\": ", out);
    put_double(out, l->h2d_gbps);
    fputs(", \"d2h_gbps\": ", out);
    put_double(out, l->d2h_gbps);
    fputs(", \"latency_us\": ", out);
    put_double(out, l->latency_us);
    fprintf(out, ", \"duplex\": %s},\n  \"storages\": [", bool_str(l->duplex));
    for (uint32_t i = 0; i < t->n_storages; i++) {
        const plan_storage *s = &t->storages[i];
        fprintf(out, "%s\n    {\"id\": %llu, \"bytes\": %llu, \"kind\": "
                "\"%s\", \"initial\": \"%s\", \"retained\": %s, "
                "\"pinned\": %s%s}", i ? "," : "",
                (unsigned long long)s->id, (unsigned long long)s->bytes,
                plan_kind_name((plan_kind)s->kind),
                plan_initial_name((plan_initial)s->initial),
                bool_str(s->retained), bool_str(s->pinned),
                s->movable ? ", \"movable\": true" : "");
    }
    fputs(t->n_storages ? "\n  ],\n  \"ops\": [" : "],\n  \"ops\": [", out);
    for (uint32_t i = 0; i < t->n_ops; i++) {
        const plan_op *o = &t->ops[i];
        const uint32_t *refs = t->refs + o->first_ref;
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
        put_str(out, plan_op_name(t, i));
        fputs(", \"duration_us\": ", out);
        put_double(out, o->duration_us);
        fputs(", \"reads\": [", out);
        for (uint32_t j = 0; j < o->n_reads; j++)
            fprintf(out, j ? ", %llu" : "%llu",
                    (unsigned long long)t->storages[refs[j]].id);
        fputs("], \"writes\": [", out);
        for (uint32_t j = 0; j < o->n_writes; j++)
            fprintf(out, j ? ", %llu" : "%llu",
                    (unsigned long long)t->storages[refs[o->n_reads + j]].id);
        fputs("]}", out);
    }
    fputs(t->n_ops ? "\n  ]\n}\n" : "]\n}\n", out);
    return finish_write(out);
}

int plan_schedule_write_json(const plan_schedule *s, FILE *out)
{
    size_t plen = strnlen(s->planner, sizeof s->planner);

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
    fprintf(out, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n"
            "  \"planner\": ", PLAN_FMT_SCHEDULE, PLAN_FMT_VERSION);
    put_str(out, s->planner);
    fprintf(out, ",\n  \"budget_bytes\": %llu,\n  \"actions\": [",
            (unsigned long long)s->budget_bytes);
    for (size_t i = 0; i < s->n_actions; i++) {
        const plan_action *a = &s->actions[i];
        fprintf(out, "%s\n    {\"op\": %u, \"when\": \"%s\", \"kind\": "
                "\"%s\", \"storage\": %llu}", i ? "," : "", a->op,
                a->when == PLAN_AFTER ? "after" : "before",
                plan_act_name((plan_act_kind)a->kind),
                (unsigned long long)a->storage_id);
    }
    fputs(s->n_actions ? "\n  ]" : "]", out);
    if (s->n_homes) {
        fputs(",\n  \"homes\": [", out);
        for (size_t i = 0; i < s->n_homes; i++)
            fprintf(out, "%s\n    {\"storage\": %llu, \"home\": \"%s\"}",
                    i ? "," : "",
                    (unsigned long long)s->homes[i].storage_id,
                    plan_home_name((plan_home)s->homes[i].home));
        fputs("\n  ]", out);
    }
    if (s->has_predicted) {
        const plan_metrics *m = &s->predicted;
        fprintf(out, ",\n  \"predicted\": {\"peak_device_bytes\": %llu, "
                "\"peak_host_bytes\": %llu, \"compute_us\": ",
                (unsigned long long)m->peak_device_bytes,
                (unsigned long long)m->peak_host_bytes);
        put_double(out, m->compute_us);
        fputs(", \"step_time_us\": ", out);
        put_double(out, m->step_time_us);
        fputs(", \"exposed_us\": ", out);
        put_double(out, m->exposed_us);
        fprintf(out, ", \"h2d_bytes\": %llu, \"d2h_bytes\": %llu}",
                (unsigned long long)m->h2d_bytes,
                (unsigned long long)m->d2h_bytes);
    }
    fputs("\n}\n", out);
    return finish_write(out);
}
