/*
 * planner/node/node_json.c - the JSON forms of a node description
 * (`hyperoffload-node`, NODE.md §1) and of a workload
 * (`hyperoffload-workload`, §2 with the arbiter's fields of §4), read with
 * jansson and written by hand.
 *
 * Readers are strict as planner/io's: every key must be one the format
 * defines, required keys present, numbers range-checked, and every error
 * names its place ("clients[1].weight: must be a positive number, got
 * 0").  The checks of the tree itself (parents, cycles, duplicates) are the
 * builders' (node_ir.c).  Writers use a fixed key order and doubles in
 * their shortest round-trip form, so what they write reads back identical
 * and writes back byte-identical.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hyperoffload/errors.h"
#include "planner/io/plan_io.h"
#include "planner/node/node.h"
#include "proto/errfmt.h"

#define FMT_NODE "hyperoffload-node"
#define FMT_WORKLOAD "hyperoffload-workload"
#define FMT_VERSION 1

/* ------------------------------------------------------------ reader core */

typedef struct rd {
    char *err;
    size_t errlen;
} rd;

__attribute__((format(printf, 4, 5)))
static int rd_fail(const rd *r, const char *place, const char *key,
                   const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (place && place[0] && key)
        return ho_errf(r->err, r->errlen, HO_E_BAD_CONFIG, "%s.%s: %s",
                       place, key, msg);
    if (place && place[0])
        return ho_errf(r->err, r->errlen, HO_E_BAD_CONFIG, "%s: %s", place,
                       msg);
    return ho_errf(r->err, r->errlen, HO_E_BAD_CONFIG, "%s: %s",
                   key ? key : "document", msg);
}

static const char *describe(const json_t *v, char *buf, size_t len)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        snprintf(buf, len, "\"%.40s%s\"", json_string_value(v),
                 json_string_length(v) > 40 ? "..." : "");
        return buf;
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

/* 1 present, 0 absent (optional), negative when required and absent. */
static int field(const rd *r, const json_t *obj, const char *place,
                 const char *key, bool required, json_t **ret)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return rd_fail(r, place, key, "missing required field");
        return 0;
    }
    *ret = v;
    return 1;
}

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

/* The JSON types a field may be required to have, and how a message
 * names each. */
typedef enum jkind { J_OBJECT, J_ARRAY, J_INTEGER, J_NUMBER, J_BOOL,
                     J_STRING } jkind;

static const struct {
    const char *words; /* for "must be <words>" */
    unsigned types;    /* the json_type values it admits, 1 << type */
} kinds[] = {
    [J_OBJECT] = {"an object", 1u << JSON_OBJECT},
    [J_ARRAY] = {"an array", 1u << JSON_ARRAY},
    [J_INTEGER] = {"an integer", 1u << JSON_INTEGER},
    [J_NUMBER] = {"a number", 1u << JSON_INTEGER | 1u << JSON_REAL},
    [J_BOOL] = {"true or false", 1u << JSON_TRUE | 1u << JSON_FALSE},
    [J_STRING] = {"a string", 1u << JSON_STRING},
};

static bool is_kind(const json_t *v, jkind k)
{
    return v && (kinds[k].types >> json_typeof(v) & 1u);
}

/* 0 when v is of kind k, else the "must be ..." failure. */
static int want_kind(const rd *r, const json_t *v, const char *place,
                     const char *key, jkind k)
{
    char b[64];
    if (!is_kind(v, k))
        return rd_fail(r, place, key, "must be %s, got %s", kinds[k].words,
                       describe(v, b, sizeof b));
    return 0;
}

static int want_object(const rd *r, const json_t *v, const char *place,
                       const char *key)
{
    return want_kind(r, v, place, key, J_OBJECT);
}

/* field() of kind k: 1 present (*ret set), 0 absent (optional), negative
 * when required and absent or of another kind. */
static int typed_field(const rd *r, const json_t *obj, const char *place,
                       const char *key, bool required, jkind k,
                       json_t **ret)
{
    json_t *v = NULL;
    int rc = field(r, obj, place, key, required, &v);

    if (rc <= 0)
        return rc;
    if ((rc = want_kind(r, v, place, key, k)) < 0)
        return rc;
    *ret = v;
    return 1;
}

static int get_array(const rd *r, const json_t *obj, const char *key,
                     bool required, size_t max, json_t **ret)
{
    json_t *v = NULL;
    int k = typed_field(r, obj, "", key, required, J_ARRAY, &v);

    if (k <= 0)
        return k;
    if (json_array_size(v) > max)
        return rd_fail(r, "", key, "too many entries (%zu > %zu)",
                       json_array_size(v), max);
    *ret = v;
    return 1;
}

static int get_int(const rd *r, const json_t *obj, const char *place,
                   const char *key, bool required, uint64_t min,
                   uint64_t max, uint64_t *ret)
{
    char b[64];
    json_t *v = NULL;
    int k = typed_field(r, obj, place, key, required, J_INTEGER, &v);
    json_int_t x;

    if (k <= 0)
        return k;
    x = json_integer_value(v);
    if (x < 0 || (uint64_t)x < min)
        return rd_fail(r, place, key, "must be at least %llu, got %s",
                       (unsigned long long)min, describe(v, b, sizeof b));
    if ((uint64_t)x > max)
        return rd_fail(r, place, key, "must be at most %llu, got %s",
                       (unsigned long long)max, describe(v, b, sizeof b));
    *ret = (uint64_t)x;
    return 1;
}

/* A finite number in [min, max] (min excluded when min_open). */
static int get_double(const rd *r, const json_t *obj, const char *place,
                      const char *key, bool required, double min,
                      bool min_open, double max, double *ret)
{
    char b[64];
    json_t *v = NULL;
    int k = typed_field(r, obj, place, key, required, J_NUMBER, &v);
    double x;

    if (k <= 0)
        return k;
    x = json_number_value(v);
    if (!isfinite(x) || x < min || (min_open && x == min))
        return rd_fail(r, place, key, "must be %s %g, got %s",
                       min_open ? "greater than" : "at least", min,
                       describe(v, b, sizeof b));
    if (x > max)
        return rd_fail(r, place, key, "must be at most %g, got %s", max,
                       describe(v, b, sizeof b));
    *ret = x + 0.0;
    return 1;
}

static int get_bool(const rd *r, const json_t *obj, const char *place,
                    const char *key, bool *ret)
{
    json_t *v = NULL;
    int k = typed_field(r, obj, place, key, false, J_BOOL, &v);

    if (k <= 0)
        return k;
    *ret = json_is_true(v);
    return 1;
}

static int get_string(const rd *r, const json_t *obj, const char *place,
                      const char *key, bool required, size_t maxlen,
                      const char **ret)
{
    json_t *v = NULL;
    int k = typed_field(r, obj, place, key, required, J_STRING, &v);

    if (k <= 0)
        return k;
    if (json_string_length(v) == 0)
        return rd_fail(r, place, key, "must not be empty");
    if (json_string_length(v) > maxlen)
        return rd_fail(r, place, key, "longer than %zu bytes", maxlen);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return rd_fail(r, place, key, "contains a NUL character");
    *ret = json_string_value(v);
    return 1;
}

static json_t *load(const rd *r, const char *buf, size_t len, int *ret_code)
{
    json_error_t jerr;
    json_t *root;

    if (len > PLAN_NODE_MAX_FILE) {
        *ret_code = ho_errf(r->err, r->errlen, -EFBIG,
                            "document larger than %llu bytes",
                            (unsigned long long)PLAN_NODE_MAX_FILE);
        return NULL;
    }
    root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (json_error_code(&jerr) == json_error_out_of_memory)
            *ret_code = ho_errf(r->err, r->errlen, -ENOMEM,
                                "out of memory parsing JSON");
        else
            *ret_code = ho_errf(r->err, r->errlen, HO_E_BAD_CONFIG,
                                "invalid JSON at line %d, column %d: %s",
                                jerr.line, jerr.column, jerr.text);
    }
    return root;
}

static int check_header(const rd *r, const json_t *root, const char *format)
{
    char b[64];
    json_t *v = NULL;
    int k;

    if (!json_is_object(root))
        return ho_errf(r->err, r->errlen, HO_E_BAD_CONFIG,
                       "expected a JSON object at the top level, got %s",
                       describe(root, b, sizeof b));
    if ((k = field(r, root, "", "format", true, &v)) < 0)
        return k;
    if (!json_is_string(v) || strcmp(json_string_value(v), format) != 0)
        return rd_fail(r, "", "format", "expected \"%s\", got %s", format,
                       describe(v, b, sizeof b));
    if ((k = typed_field(r, root, "", "version", true, J_INTEGER, &v)) < 0)
        return k;
    if (json_integer_value(v) != FMT_VERSION)
        return rd_fail(r, "", "version", "unsupported version %s",
                       describe(v, b, sizeof b));
    return 0;
}

/* The document in buf: err cleared, the JSON parsed, the header of
 * `format` and the top-level keys checked.  0 with *ret_root (the
 * caller's reference) or negative. */
static int open_doc(const rd *r, const char *buf, size_t len,
                    const char *format, const char *const *keys,
                    json_t **ret_root)
{
    json_t *root;
    int k;

    if (r->err && r->errlen)
        r->err[0] = '\0';
    root = load(r, buf, len, &k);
    if (!root)
        return k;
    if ((k = check_header(r, root, format)) < 0 ||
        (k = check_keys(r, root, "", keys)) < 0) {
        json_decref(root);
        return k;
    }
    *ret_root = root;
    return 0;
}

/* Read a whole (small) file. */
static int slurp(const char *path, char **ret_buf, size_t *ret_len,
                 char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int r;

    if (!f) {
        r = -errno;
        return ho_errf(err, errlen, r, "%s: %s", path, strerror(-r));
    }
    for (;;) {
        size_t n;
        if (cap - len < 4096) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb;
            if (cap > PLAN_NODE_MAX_FILE) {
                r = ho_errf(err, errlen, -EFBIG, "%s: larger than %llu bytes",
                            path, (unsigned long long)PLAN_NODE_MAX_FILE);
                goto fail;
            }
            nb = realloc(buf, ncap + 1);
            if (!nb) {
                r = ho_errf(err, errlen, -ENOMEM, "%s: out of memory", path);
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                r = ho_errf(err, errlen, -EIO, "%s: read error", path);
                goto fail;
            }
            break;
        }
    }
    fclose(f);
    if (len > PLAN_NODE_MAX_FILE) {
        free(buf);
        return ho_errf(err, errlen, -EFBIG, "%s: larger than %llu bytes",
                       path, (unsigned long long)PLAN_NODE_MAX_FILE);
    }
    buf[len] = '\0';
    *ret_buf = buf;
    *ret_len = len;
    return 0;
fail:
    fclose(f);
    free(buf);
    return r;
}

/* ------------------------------------------------------------ node reader */

static const char *const node_keys[] = {"format", "version", "links",
                                        "devices", "ddr_bytes", "flash",
                                        NULL};
static const char *const link_keys[] = {"name", "parent", "h2d_gbps",
                                        "d2h_gbps", "duplex", NULL};
static const char *const device_keys[] = {"id", "name", "hbm_bytes",
                                          "reserve_bytes", "h2d_gbps",
                                          "d2h_gbps", "latency_us",
                                          "duplex", "parent", NULL};
static const char *const flash_keys[] = {"bytes", "read_gbps", "write_gbps",
                                         NULL};

static int read_link(const rd *r, plan_node *n, const json_t *v, size_t i)
{
    char place[32];
    const char *name = NULL, *parent = NULL;
    double h2d = 0, d2h = 0;
    bool duplex = true;
    int k;

    snprintf(place, sizeof place, "links[%zu]", i);
    if ((k = want_object(r, v, place, NULL)) < 0 ||
        (k = check_keys(r, v, place, link_keys)) < 0 ||
        (k = get_string(r, v, place, "name", true, PLAN_NODE_MAX_NAME,
                        &name)) < 0 ||
        (k = get_string(r, v, place, "parent", false, PLAN_NODE_MAX_NAME,
                        &parent)) < 0 ||
        (k = get_double(r, v, place, "h2d_gbps", true, 0, true,
                        PLAN_FMT_MAX_GBPS, &h2d)) < 0 ||
        (k = get_double(r, v, place, "d2h_gbps", true, 0, true,
                        PLAN_FMT_MAX_GBPS, &d2h)) < 0 ||
        (k = get_bool(r, v, place, "duplex", &duplex)) < 0)
        return k;
    return plan_node_add_link(n, name, parent, h2d, d2h, duplex, r->err,
                              r->errlen);
}

static int read_device(const rd *r, plan_node *n, const json_t *v, size_t i)
{
    char place[32];
    plan_node_device d;
    uint64_t id = 0;
    const char *name = NULL, *parent = NULL;
    int k;

    memset(&d, 0, sizeof d);
    d.duplex = true;
    snprintf(place, sizeof place, "devices[%zu]", i);
    if ((k = want_object(r, v, place, NULL)) < 0 ||
        (k = check_keys(r, v, place, device_keys)) < 0 ||
        (k = get_int(r, v, place, "id", true, 0, PLAN_NODE_MAX_DEVICE_ID,
                     &id)) < 0 ||
        (k = get_string(r, v, place, "name", true, PLAN_NODE_MAX_NAME,
                        &name)) < 0 ||
        (k = get_int(r, v, place, "hbm_bytes", true, 1, PLAN_NODE_MAX_BYTES,
                     &d.hbm_bytes)) < 0 ||
        (k = get_int(r, v, place, "reserve_bytes", false, 0,
                     PLAN_NODE_MAX_BYTES, &d.reserve_bytes)) < 0 ||
        (k = get_double(r, v, place, "h2d_gbps", true, 0, true,
                        PLAN_FMT_MAX_GBPS, &d.h2d_gbps)) < 0 ||
        (k = get_double(r, v, place, "d2h_gbps", true, 0, true,
                        PLAN_FMT_MAX_GBPS, &d.d2h_gbps)) < 0 ||
        (k = get_double(r, v, place, "latency_us", false, 0, false,
                        PLAN_FMT_MAX_LATENCY_US, &d.latency_us)) < 0 ||
        (k = get_bool(r, v, place, "duplex", &d.duplex)) < 0 ||
        (k = get_string(r, v, place, "parent", false, PLAN_NODE_MAX_NAME,
                        &parent)) < 0)
        return k;
    d.id = (uint32_t)id;
    d.name = (char *)name;
    d.parent_name = (char *)parent;
    return plan_node_add_device(n, &d, r->err, r->errlen);
}

int plan_node_parse_json(const char *buf, size_t len, plan_node **ret,
                         char *err, size_t errlen)
{
    rd r = {err, errlen};
    json_t *root, *links = NULL, *devices = NULL, *v, *flash = NULL;
    plan_node *n = NULL;
    size_t i;
    int k;

    if ((k = open_doc(&r, buf, len, FMT_NODE, node_keys, &root)) < 0)
        return k;
    n = plan_node_new();
    if (!n) {
        k = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto fail;
    }
    if ((k = get_array(&r, root, "links", false, PLAN_NODE_MAX_LINKS,
                       &links)) < 0 ||
        (k = get_array(&r, root, "devices", true, PLAN_NODE_MAX_DEVICES,
                       &devices)) < 0 ||
        (k = get_int(&r, root, "", "ddr_bytes", true, 0, PLAN_NODE_MAX_BYTES,
                     &n->ddr_bytes)) < 0 ||
        (k = field(&r, root, "", "flash", false, &flash)) < 0)
        goto fail;
    if (links)
        json_array_foreach(links, i, v) {
            if ((k = read_link(&r, n, v, i)) < 0)
                goto fail;
        }
    json_array_foreach(devices, i, v) {
        if ((k = read_device(&r, n, v, i)) < 0)
            goto fail;
    }
    if (flash) {
        if ((k = want_object(&r, flash, "", "flash")) < 0 ||
            (k = check_keys(&r, flash, "flash", flash_keys)) < 0 ||
            (k = get_int(&r, flash, "flash", "bytes", true, 0,
                         PLAN_NODE_MAX_BYTES, &n->flash.bytes)) < 0 ||
            (k = get_double(&r, flash, "flash", "read_gbps", true, 0, true,
                            PLAN_FMT_MAX_GBPS, &n->flash.read_gbps)) < 0 ||
            (k = get_double(&r, flash, "flash", "write_gbps", true, 0, true,
                            PLAN_FMT_MAX_GBPS, &n->flash.write_gbps)) < 0)
            goto fail;
        n->has_flash = true;
    }
    if ((k = plan_node_finish(n, err, errlen)) < 0)
        goto fail;
    json_decref(root);
    *ret = n;
    return 0;
fail:
    json_decref(root);
    plan_node_free(n);
    return k;
}

int plan_node_read_json(const char *path, plan_node **ret, char *err,
                        size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    int k = slurp(path, &buf, &len, err, errlen);

    if (k < 0)
        return k;
    k = plan_node_parse_json(buf, len, ret, err, errlen);
    free(buf);
    return k;
}

/* ------------------------------------------------------------ workload */

static const char *const workload_keys[] = {"format", "version", "clients",
                                            NULL};
static const char *const client_keys[] = {
    "name", "job", "device", "trace", "schedule", "budget_bytes", "weight",
    "sync", "max_slowdown", "planned_h2d_gbps", "planned_d2h_gbps",
    "ddr_limit_bytes", "predicted", NULL};
static const char *const predicted_keys[] = {"step_time_us", "exposed_us",
                                             "alloc_wait_us", NULL};

static int read_client(const rd *r, plan_workload *w, const json_t *v,
                       size_t i)
{
    char place[32], pplace[48];
    plan_wl_client c;
    const char *name = NULL, *job = NULL, *trace = NULL, *sched = NULL;
    const char *sync = NULL;
    json_t *pred = NULL;
    uint64_t dev = 0;
    int k;

    memset(&c, 0, sizeof c);
    c.weight = 1.0;
    snprintf(place, sizeof place, "clients[%zu]", i);
    if ((k = want_object(r, v, place, NULL)) < 0 ||
        (k = check_keys(r, v, place, client_keys)) < 0 ||
        (k = get_string(r, v, place, "name", true, PLAN_NODE_MAX_NAME,
                        &name)) < 0 ||
        (k = get_string(r, v, place, "job", false, PLAN_NODE_MAX_NAME,
                        &job)) < 0 ||
        (k = get_int(r, v, place, "device", true, 0, PLAN_NODE_MAX_DEVICE_ID,
                     &dev)) < 0 ||
        (k = get_string(r, v, place, "trace", true, PLAN_NODE_MAX_PATH,
                        &trace)) < 0 ||
        (k = get_string(r, v, place, "schedule", false, PLAN_NODE_MAX_PATH,
                        &sched)) < 0 ||
        (k = get_int(r, v, place, "budget_bytes", false, 0,
                     PLAN_NODE_MAX_BYTES, &c.budget_bytes)) < 0)
        return k;
    c.has_budget = k > 0;
    if ((k = get_double(r, v, place, "weight", false, 0, true,
                        PLAN_NODE_MAX_WEIGHT, &c.weight)) < 0 ||
        (k = get_string(r, v, place, "sync", false, PLAN_NODE_MAX_NAME,
                        &sync)) < 0)
        return k;
    if ((k = get_double(r, v, place, "max_slowdown", false, 1.0, false,
                        PLAN_NODE_MAX_SLOWDOWN, &c.max_slowdown)) < 0)
        return k;
    c.has_max_slowdown = k > 0;
    if ((k = get_double(r, v, place, "planned_h2d_gbps", false, 0, true,
                        PLAN_FMT_MAX_GBPS, &c.planned_h2d_gbps)) < 0)
        return k;
    c.has_planned_h2d = k > 0;
    if ((k = get_double(r, v, place, "planned_d2h_gbps", false, 0, true,
                        PLAN_FMT_MAX_GBPS, &c.planned_d2h_gbps)) < 0)
        return k;
    c.has_planned_d2h = k > 0;
    if ((k = get_int(r, v, place, "ddr_limit_bytes", false, 0,
                     PLAN_NODE_MAX_BYTES, &c.ddr_limit_bytes)) < 0)
        return k;
    c.has_ddr_limit = k > 0;
    if ((k = field(r, v, place, "predicted", false, &pred)) < 0)
        return k;
    if (pred) {
        snprintf(pplace, sizeof pplace, "%s.predicted", place);
        if ((k = want_object(r, pred, place, "predicted")) < 0 ||
            (k = check_keys(r, pred, pplace, predicted_keys)) < 0 ||
            (k = get_double(r, pred, pplace, "step_time_us", true, 0, false,
                            HUGE_VAL, &c.predicted.step_time_us)) < 0 ||
            (k = get_double(r, pred, pplace, "exposed_us", true, -HUGE_VAL,
                            false, HUGE_VAL, &c.predicted.exposed_us)) < 0 ||
            (k = get_double(r, pred, pplace, "alloc_wait_us", true, 0, false,
                            HUGE_VAL, &c.predicted.alloc_wait_us)) < 0)
            return k;
        c.has_predicted = true;
    }
    c.name = (char *)name;
    c.job = (char *)job;
    c.device = (uint32_t)dev;
    c.trace = (char *)trace;
    c.schedule = (char *)sched;
    c.sync = (char *)sync;
    return plan_workload_add_client(w, &c, r->err, r->errlen);
}

int plan_workload_parse_json(const char *buf, size_t len, const char *dir,
                             plan_workload **ret, char *err, size_t errlen)
{
    rd r = {err, errlen};
    json_t *root, *clients = NULL, *v;
    plan_workload *w = NULL;
    size_t i;
    int k;

    if ((k = open_doc(&r, buf, len, FMT_WORKLOAD, workload_keys, &root)) < 0)
        return k;
    w = plan_workload_new(dir);
    if (!w) {
        k = ho_errf(err, errlen, -ENOMEM, "out of memory");
        goto fail;
    }
    if ((k = get_array(&r, root, "clients", true, PLAN_NODE_MAX_CLIENTS,
                       &clients)) < 0)
        goto fail;
    json_array_foreach(clients, i, v) {
        if ((k = read_client(&r, w, v, i)) < 0)
            goto fail;
    }
    json_decref(root);
    *ret = w;
    return 0;
fail:
    json_decref(root);
    plan_workload_free(w);
    return k;
}

int plan_workload_read_json(const char *path, plan_workload **ret,
                            char *err, size_t errlen)
{
    char *buf = NULL, *dir = NULL;
    const char *slash;
    size_t len = 0;
    int k = slurp(path, &buf, &len, err, errlen);

    if (k < 0)
        return k;
    slash = strrchr(path, '/');
    if (slash) {
        size_t dl = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(dl + 1);
        if (!dir) {
            free(buf);
            return ho_errf(err, errlen, -ENOMEM, "out of memory");
        }
        memcpy(dir, path, dl);
        dir[dl] = '\0';
    }
    k = plan_workload_parse_json(buf, len, dir ? dir : ".", ret, err,
                                 errlen);
    free(dir);
    free(buf);
    return k;
}

/* ------------------------------------------------------------ writers */

/* A JSON string literal; -EINVAL when s is not valid UTF-8. */
static int put_str(FILE *f, const char *s)
{
    json_t *j = json_string(s);
    char *lit;

    if (!j)
        return -EINVAL;
    lit = json_dumps(j, JSON_ENCODE_ANY);
    json_decref(j);
    if (!lit)
        return -ENOMEM;
    fputs(lit, f);
    free(lit);
    return 0;
}

/* The shortest decimal that reads back as exactly v. */
static void put_double(FILE *f, double v)
{
    char buf[32];

    if (v == 0.0)
        v = 0.0;
    if (v == floor(v) && fabs(v) < 1e15) {
        fprintf(f, "%.1f", v);
        return;
    }
    plan_fmt_double(buf, v);
    fputs(buf, f);
}

static int finish_write(FILE *out, int r)
{
    if (r < 0)
        return r;
    if (fflush(out) != 0 || ferror(out))
        return -EIO;
    return 0;
}

int plan_node_write_json(const plan_node *n, FILE *out)
{
    int r = 0;

    if (!n || !out)
        return -EINVAL;
    fprintf(out, "{\n  \"format\": \"%s\", \"version\": %d,\n  \"links\": [",
            FMT_NODE, FMT_VERSION);
    for (uint32_t i = 0; i < n->n_links && r == 0; i++) {
        const plan_node_link *l = &n->links[i];
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
        r = put_str(out, l->name);
        if (r == 0 && l->parent_name) {
            fputs(", \"parent\": ", out);
            r = put_str(out, l->parent_name);
        }
        fputs(", \"h2d_gbps\": ", out);
        put_double(out, l->h2d_gbps);
        fputs(", \"d2h_gbps\": ", out);
        put_double(out, l->d2h_gbps);
        fprintf(out, ", \"duplex\": %s}", l->duplex ? "true" : "false");
    }
    fputs(n->n_links ? "\n  ],\n  \"devices\": [" : "],\n  \"devices\": [",
          out);
    for (uint32_t i = 0; i < n->n_devices && r == 0; i++) {
        const plan_node_device *d = &n->devices[i];
        fprintf(out, "%s\n    {\"id\": %u, \"name\": ", i ? "," : "", d->id);
        r = put_str(out, d->name);
        fprintf(out, ", \"hbm_bytes\": %llu, \"reserve_bytes\": %llu,"
                " \"h2d_gbps\": ", (unsigned long long)d->hbm_bytes,
                (unsigned long long)d->reserve_bytes);
        put_double(out, d->h2d_gbps);
        fputs(", \"d2h_gbps\": ", out);
        put_double(out, d->d2h_gbps);
        fputs(", \"latency_us\": ", out);
        put_double(out, d->latency_us);
        fprintf(out, ", \"duplex\": %s", d->duplex ? "true" : "false");
        if (r == 0 && d->parent_name) {
            fputs(", \"parent\": ", out);
            r = put_str(out, d->parent_name);
        }
        fputc('}', out);
    }
    fprintf(out, "%s,\n  \"ddr_bytes\": %llu", n->n_devices ? "\n  ]" : "]",
            (unsigned long long)n->ddr_bytes);
    if (n->has_flash) {
        fprintf(out, ",\n  \"flash\": {\"bytes\": %llu, \"read_gbps\": ",
                (unsigned long long)n->flash.bytes);
        put_double(out, n->flash.read_gbps);
        fputs(", \"write_gbps\": ", out);
        put_double(out, n->flash.write_gbps);
        fputc('}', out);
    }
    fputs("\n}\n", out);
    return finish_write(out, r);
}

static int put_key_str(FILE *out, const char *key, const char *v)
{
    if (!v)
        return 0;
    fprintf(out, ", \"%s\": ", key);
    return put_str(out, v);
}

static void put_key_double(FILE *out, const char *key, double v)
{
    fprintf(out, ", \"%s\": ", key);
    put_double(out, v);
}

void plan_workload_file_stem(char *buf, size_t len, uint32_t i,
                             const char *name)
{
    int k = snprintf(buf, len, "%u-", i);
    if (k < 0)
        k = 0;
    if ((size_t)k >= len)
        k = (int)len - 1;
    for (const char *p = name; *p && (size_t)k + 1 < len; p++)
        buf[k++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                           (*p >= '0' && *p <= '9') || *p == '-' ||
                           *p == '_' || *p == '.'
                       ? *p
                       : '_';
    buf[k] = 0;
}

int plan_workload_write_json(const plan_workload *w, FILE *out)
{
    int r = 0;

    if (!w || !out)
        return -EINVAL;
    fprintf(out, "{\n  \"format\": \"%s\", \"version\": %d,\n"
            "  \"clients\": [", FMT_WORKLOAD, FMT_VERSION);
    for (uint32_t i = 0; i < w->n_clients && r == 0; i++) {
        const plan_wl_client *c = &w->clients[i];
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
        if ((r = put_str(out, c->name)) < 0 ||
            (r = put_key_str(out, "job", c->job)) < 0)
            break;
        fprintf(out, ", \"device\": %u", c->device);
        if ((r = put_key_str(out, "trace", c->trace)) < 0 ||
            (r = put_key_str(out, "schedule", c->schedule)) < 0)
            break;
        if (c->has_budget)
            fprintf(out, ", \"budget_bytes\": %llu",
                    (unsigned long long)c->budget_bytes);
        put_key_double(out, "weight", c->weight);
        if ((r = put_key_str(out, "sync", c->sync)) < 0)
            break;
        if (c->has_max_slowdown)
            put_key_double(out, "max_slowdown", c->max_slowdown);
        if (c->has_planned_h2d)
            put_key_double(out, "planned_h2d_gbps", c->planned_h2d_gbps);
        if (c->has_planned_d2h)
            put_key_double(out, "planned_d2h_gbps", c->planned_d2h_gbps);
        if (c->has_ddr_limit)
            fprintf(out, ", \"ddr_limit_bytes\": %llu",
                    (unsigned long long)c->ddr_limit_bytes);
        if (c->has_predicted) {
            fputs(", \"predicted\": {\"step_time_us\": ", out);
            put_double(out, c->predicted.step_time_us);
            put_key_double(out, "exposed_us", c->predicted.exposed_us);
            put_key_double(out, "alloc_wait_us", c->predicted.alloc_wait_us);
            fputc('}', out);
        }
        fputc('}', out);
    }
    fputs(w->n_clients ? "\n  ]\n}\n" : "]\n}\n", out);
    return finish_write(out, r);
}
