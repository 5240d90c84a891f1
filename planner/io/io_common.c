/*
 * planner/io/io_common.c - what the JSON and protobuf readers and writers
 * share (io_private.h): files, UTF-8, the writable checks, the buffered
 * writer with the shortest doubles, and the reader's error record with the
 * range checks and the trace/schedule builders both formats use.
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

#include "hyperoffload/errors.h"
#include "planner/io/io_private.h"

/* ------------------------------------------------------------ files */

static int read_all(int fd, const char *path, char **ret_buf,
                    size_t *ret_len, char *err, size_t errlen)
{
    struct stat st;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int r;

    /* a regular file: its size up front, one allocation */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size <= PLAN_FMT_MAX_FILE)
        cap = (size_t)st.st_size + 2;
    for (;;) {
        ssize_t n;
        if (cap - len < 2) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nbuf;
            if (ncap > PLAN_FMT_MAX_FILE + 2)
                ncap = PLAN_FMT_MAX_FILE + 2;
            if (ncap - len < 2) {
                r = ho_errf(err, errlen, -EFBIG, "%s: larger than %llu bytes",
                            path, (unsigned long long)PLAN_FMT_MAX_FILE);
                goto fail;
            }
            nbuf = realloc(buf, ncap);
            if (!nbuf) {
                r = ho_errf(err, errlen, -ENOMEM, "%s: out of memory", path);
                goto fail;
            }
            buf = nbuf;
            cap = ncap;
        } else if (!buf) {
            buf = malloc(cap);
            if (!buf) {
                r = ho_errf(err, errlen, -ENOMEM, "%s: out of memory", path);
                goto fail;
            }
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
            r = ho_errf(err, errlen, -EFBIG, "%s: larger than %llu bytes",
                        path, (unsigned long long)PLAN_FMT_MAX_FILE);
            goto fail;
        }
    }
    if (!buf && !(buf = malloc(1))) {
        r = ho_errf(err, errlen, -ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    buf[len] = '\0';
    *ret_buf = buf;
    *ret_len = len;
    return 0;
fail:
    free(buf);
    return r;
}

int plan_fmt_slurp(const char *path, char **ret_buf, size_t *ret_len,
                   char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int r = -errno;
        return ho_errf(err, errlen, r, "%s: %s", path, strerror(-r));
    }
    int r = read_all(fd, path, ret_buf, ret_len, err, errlen);
    close(fd);
    return r;
}

int plan_fmt_load(const char *path, bool any_format, plan_trace **ret_trace,
                  plan_schedule **ret_schedule, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    int r = plan_fmt_slurp(path, &buf, &len, err, errlen);

    if (r < 0)
        return r;
    bool json = !any_format || plan_fmt_looks_json(buf, len);
    const uint8_t *bytes = (const uint8_t *)buf;
    if (ret_trace)
        r = json ? plan_trace_parse_json(buf, len, ret_trace, err, errlen)
                 : plan_trace_from_pb(bytes, len, ret_trace, err, errlen);
    else
        r = json ? plan_schedule_parse_json(buf, len, ret_schedule, err,
                                            errlen)
                 : plan_schedule_from_pb(bytes, len, ret_schedule, err,
                                         errlen);
    free(buf);
    return r;
}

size_t plan_fmt_utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0], need;
    uint32_t cp;
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
        return 0;
    }
    if ((size_t)(end - p) <= need)
        return 0;
    for (unsigned k = 1; k <= need; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[k] & 0x3f);
    }
    /* overlong forms, surrogates, beyond U+10FFFF */
    if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return need + 1;
}

bool plan_fmt_utf8_ok(const char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf, *end = p + len;
    while (p < end) {
        if (*p == 0)
            return false;
        if (*p < 0x80) {
            p++;
            continue;
        }
        size_t n = plan_fmt_utf8_seq(p, end);
        if (!n)
            return false;
        p += n;
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

int plan_fmt_check_trace(const plan_trace *t)
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

int plan_fmt_check_schedule(const plan_schedule *s)
{
    size_t plen = strnlen(s->planner, sizeof s->planner);

    if (plen == sizeof s->planner || !plan_fmt_utf8_ok(s->planner, plen))
        return -EINVAL;
    if (s->budget_bytes > PLAN_FMT_MAX_U64)
        return -ERANGE;
    for (size_t i = 0; i < s->n_actions; i++)
        if (s->actions[i].storage_id > PLAN_FMT_MAX_ID ||
            s->actions[i].when > PLAN_AFTER ||
            s->actions[i].kind >= PLAN_ACT__COUNT)
            return -ERANGE;
    for (size_t i = 0; i < s->n_homes; i++)
        if (s->homes[i].storage_id > PLAN_FMT_MAX_ID ||
            s->homes[i].home > PLAN_HOME_HOST)
            return -ERANGE;
    return 0;
}

/* ------------------------------------------------------------ doubles */

static size_t put_u64(char *o, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        o[i] = tmp[n - 1 - i];
    return n;
}

static const double p10[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* v = m / 10^k with m < 2^51 (so no other k-decimal rounds to v) and the
 * smallest such k: its digits are what "%.{p}g" with the shortest
 * round-trip p prints, in fixed notation for |v| >= 1e-4.  0 when v is
 * not of that form. */
static size_t decimal_fast(char *o, double v)
{
    double a = fabs(v);
    if (!(a >= 1e-4) || a >= 1e15)
        return 0;
    for (int k = 1; k <= 15; k++) {
        double m = nearbyint(a * p10[k]);
        if (m >= 2251799813685248.0) /* 2^51 */
            return 0;
        if (m / p10[k] != a)
            continue;
        char digits[20];
        size_t nd = put_u64(digits, (uint64_t)m), n = 0;
        if (v < 0)
            o[n++] = '-';
        if (nd > (size_t)k) {
            memcpy(o + n, digits, nd - (size_t)k);
            n += nd - (size_t)k;
            o[n++] = '.';
            memcpy(o + n, digits + nd - (size_t)k, (size_t)k);
            n += (size_t)k;
        } else {
            o[n++] = '0';
            o[n++] = '.';
            for (size_t z = nd; z < (size_t)k; z++)
                o[n++] = '0';
            memcpy(o + n, digits, nd);
            n += nd;
        }
        o[n] = 0;
        return n;
    }
    return 0;
}

size_t plan_fmt_double(char *buf, double v)
{
    char tmp[320]; /* %.17g needs ~25; sized for what gcc proves */
    int lo = 1, hi = 17;
    size_t n;

    if (v == 0.0)
        v = 0.0; /* -0 prints as 0 */
    if (v == floor(v) && fabs(v) < 1e15) {
        n = 0;
        if (v < 0)
            buf[n++] = '-';
        n += put_u64(buf + n, (uint64_t)fabs(v));
        buf[n] = 0;
        return n;
    }
    if ((n = decimal_fast(buf, v)) > 0)
        return n;
    /* Round-tripping is monotone in the precision: binary search. */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        snprintf(tmp, sizeof tmp, "%.*g", mid, v);
        if (strtod(tmp, NULL) == v)
            hi = mid;
        else
            lo = mid + 1;
    }
    snprintf(tmp, sizeof tmp, "%.*g", lo, v);
    n = strlen(tmp);
    if (n > 31)
        n = 31;
    memcpy(buf, tmp, n);
    buf[n] = 0;
    return n;
}

/* ------------------------------------------------------------ writer */

#define WBUF_CAP (1u << 20)

void plan_wbuf_init(plan_wbuf *w, FILE *f)
{
    w->f = f;
    w->n = 0;
    w->cap = WBUF_CAP;
    w->buf = malloc(w->cap);
    w->rc = w->buf ? 0 : -ENOMEM;
}

static void wbuf_flush(plan_wbuf *w)
{
    if (w->rc == 0 && w->n && fwrite(w->buf, 1, w->n, w->f) != w->n)
        w->rc = -EIO;
    w->n = 0;
}

void plan_wbuf_put(plan_wbuf *w, const char *s, size_t n)
{
    if (w->rc)
        return;
    while (n > 0) {
        if (w->n == w->cap)
            wbuf_flush(w);
        if (w->rc)
            return;
        size_t k = w->cap - w->n < n ? w->cap - w->n : n;
        memcpy(w->buf + w->n, s, k);
        w->n += k;
        s += k;
        n -= k;
    }
}

void plan_wbuf_puts(plan_wbuf *w, const char *s)
{
    plan_wbuf_put(w, s, strlen(s));
}

void plan_wbuf_u64(plan_wbuf *w, uint64_t v)
{
    char b[24];
    plan_wbuf_put(w, b, put_u64(b, v));
}

void plan_wbuf_double(plan_wbuf *w, double v)
{
    char b[32];
    plan_wbuf_put(w, b, plan_fmt_double(b, v));
}

void plan_wbuf_str(plan_wbuf *w, const char *s)
{
    const char *run = s;
    plan_wbuf_put(w, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        const char *esc = NULL;
        char u[8];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\r')
            esc = "\\r";
        else if (c < 0x20) {
            snprintf(u, sizeof u, "\\u%04x", c);
            esc = u;
        }
        if (esc) {
            plan_wbuf_put(w, run, (size_t)(s - run));
            plan_wbuf_puts(w, esc);
            run = s + 1;
        }
    }
    plan_wbuf_put(w, run, (size_t)(s - run));
    plan_wbuf_put(w, "\"", 1);
}

int plan_wbuf_done(plan_wbuf *w)
{
    wbuf_flush(w);
    if (w->rc == 0 && (fflush(w->f) != 0 || ferror(w->f)))
        w->rc = -EIO;
    free(w->buf);
    w->buf = NULL;
    return w->rc;
}

/* ------------------------------------------------------------ errors */

static int record(plan_rd *r, uint64_t key, int code, const char *msg)
{
    if (!plan_rd_worth(r, key))
        return r->rc;
    r->rc = code;
    r->key = key;
    ho_errf(r->err, r->errlen, code, "%s", msg);
    return code;
}

int plan_rd_fail(plan_rd *r, uint64_t key, const char *place,
                 const char *field, const char *fmt, ...)
{
    char msg[200], full[480];
    va_list ap;

    if (!plan_rd_worth(r, key))
        return r->rc;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* "place.field: msg", "place: msg" or "field: msg" */
    if (place && place[0] && field)
        snprintf(full, sizeof full, "%s.%s: %s", place, field, msg);
    else if (place && place[0])
        snprintf(full, sizeof full, "%s: %s", place, msg);
    else
        snprintf(full, sizeof full, "%s: %s", field ? field : "document",
                 msg);
    return record(r, key, r->code, full);
}

int plan_rd_set(plan_rd *r, uint64_t key, int code, const char *msg)
{
    return record(r, key, code, msg);
}

int plan_rd_begin(plan_rd *r, int code, char *err, size_t errlen,
                  size_t len, const char *what)
{
    memset(r, 0, sizeof(*r));
    r->err = err;
    r->errlen = errlen;
    r->code = code;
    if (err && errlen)
        err[0] = '\0';
    if (len > PLAN_FMT_MAX_FILE)
        return ho_errf(err, errlen, -EFBIG, "%s: larger than %llu bytes",
                       what, (unsigned long long)PLAN_FMT_MAX_FILE);
    return 0;
}

int plan_rd_uint(plan_rd *r, uint64_t key, const char *place,
                 const char *field, uint64_t v, uint64_t min, uint64_t max,
                 const char *what)
{
    if (v < min)
        return plan_rd_fail(r, key, place, field, "must be %s, got %llu",
                            what, (unsigned long long)v);
    if (v > max)
        return plan_rd_fail(r, key, place, field,
                            "must be at most %llu, got %llu",
                            (unsigned long long)max, (unsigned long long)v);
    return 0;
}

int plan_rd_double(plan_rd *r, uint64_t key, const char *place,
                   const char *field, double v, const char *got,
                   double min, bool min_open, double max, const char *what)
{
    if (!isfinite(v) || v < min || (min_open && v == min))
        return plan_rd_fail(r, key, place, field, "must be %s, got %s", what,
                            got);
    if (v > max)
        return plan_rd_fail(r, key, place, field, "must be at most %g, got %s",
                            max, got);
    return 0;
}

void plan_rd_place(char *buf, const char *arr, size_t i)
{
    size_t n = strlen(arr);
    if (n > 24)
        n = 24;
    memcpy(buf, arr, n);
    buf[n++] = '[';
    n += put_u64(buf + n, i);
    buf[n++] = ']';
    buf[n] = 0;
}

int plan_rd_name(plan_rd *r, uint64_t key, const char *place,
                 const char *field, const char *s, size_t len, size_t max)
{
    if (len > max)
        return plan_rd_fail(r, key, place, field, "longer than %zu bytes",
                            max);
    if (!plan_fmt_utf8_ok(s, len))
        return plan_rd_fail(r, key, place, field, "not valid UTF-8");
    return 0;
}

/* ------------------------------------------------------------ builders */

static int add_failed(plan_rd *r, uint64_t key, const char *place, int k,
                      const char *ierr)
{
    if (k == -ENOMEM)
        return plan_rd_set(r, key, -ENOMEM, "out of memory");
    return plan_rd_fail(r, key, place, NULL, "%s",
                        ierr[0] ? ierr : ho_strerror(k));
}

int plan_rd_storage(plan_rd *r, uint64_t key, plan_trace *t, size_t i,
                    const plan_storage *s)
{
    char place[48], ierr[160] = "";
    uint32_t prev = plan_trace_find(t, s->id);
    int k;

    if (prev != PLAN_NONE) {
        plan_rd_place(place, "storages", i);
        return plan_rd_fail(r, key, place, "id", "duplicate id %llu (first "
                            "at storages[%u])", (unsigned long long)s->id,
                            prev);
    }
    k = plan_trace_add_storage(t, s, NULL, ierr, sizeof ierr);
    if (k < 0)
        plan_rd_place(place, "storages", i);
    return k < 0 ? add_failed(r, key, place, k, ierr) : 0;
}

int plan_rd_resolve(plan_rd *r, uint64_t key, const plan_trace *t, size_t i,
                    const char *field, const uint64_t *ids, uint32_t n,
                    uint32_t *idx)
{
    for (uint32_t j = 0; j < n; j++) {
        idx[j] = plan_trace_find(t, ids[j]);
        if (idx[j] == PLAN_NONE) {
            char place[48], elem[32];
            plan_rd_place(place, "ops", i);
            snprintf(elem, sizeof elem, "%s[%u]", field, j);
            return plan_rd_fail(r, key, place, elem, "unknown storage id %llu",
                                (unsigned long long)ids[j]);
        }
    }
    return 0;
}

int plan_rd_op(plan_rd *r, uint64_t key, plan_trace *t, size_t i,
               const char *name, double duration_us, const uint32_t *idx,
               uint32_t n_reads, uint32_t n_writes, uint64_t *total_refs)
{
    char place[48], ierr[160];
    uint64_t n = (uint64_t)n_reads + n_writes;
    int k;

    /* The place is formatted only for an error: this runs once per op. */
    if (n > PLAN_MAX_OP_REFS) {
        plan_rd_place(place, "ops", i);
        return plan_rd_fail(r, key, place, NULL, "more than %u references",
                            PLAN_MAX_OP_REFS);
    }
    *total_refs += n;
    if (*total_refs > PLAN_MAX_REFS) {
        plan_rd_place(place, "ops", i);
        return plan_rd_fail(r, key, place, NULL, "more than %u references "
                            "in the trace", PLAN_MAX_REFS);
    }
    ierr[0] = 0;
    k = plan_trace_add_op(t, name, duration_us, idx, n_reads, idx + n_reads,
                          n_writes, ierr, sizeof ierr);
    if (k < 0)
        plan_rd_place(place, "ops", i);
    return k < 0 ? add_failed(r, key, place, k, ierr) : 0;
}

int plan_rd_action(plan_rd *r, uint64_t key, plan_schedule *s, size_t i,
                   uint32_t op, plan_when when, plan_act_kind kind,
                   uint64_t storage_id)
{
    char place[48];
    int k = plan_schedule_push_id(s, op, when, kind, storage_id);
    if (k < 0)
        plan_rd_place(place, "actions", i);
    return k < 0 ? add_failed(r, key, place, k, "") : 0;
}

int plan_rd_home(plan_rd *r, uint64_t key, plan_schedule *s, size_t i,
                 uint64_t storage_id, plan_home home)
{
    char place[48];
    int k = plan_schedule_push_home_id(s, storage_id, home);
    if (k < 0)
        plan_rd_place(place, "homes", i);
    return k < 0 ? add_failed(r, key, place, k, "") : 0;
}

int plan_rd_trace_name(plan_trace *t, const char *name, size_t len)
{
    char *n = malloc(len + 1);
    if (!n)
        return -ENOMEM;
    memcpy(n, name, len);
    n[len] = 0;
    free(t->name);
    t->name = n;
    return 0;
}
