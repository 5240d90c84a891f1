/*
 * planner/io/json_lex.c - the strict JSON tokenizer of json_lex.h.
 */
#include "planner/io/json_lex.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperoffload/errors.h"
#include "planner/io/io_private.h"
#include "proto/errfmt.h"
#include "proto/mem.h"

int plan_jl_init(plan_jl *x, const char *buf, size_t len, int code, char *err,
                 size_t errlen)
{
    memset(x, 0, sizeof(*x));
    x->buf = x->p = x->tok_start = buf;
    x->end = buf + len;
    x->code = code;
    x->err = err;
    x->errlen = errlen;
    x->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!x->c_locale)
        return -ENOMEM;
    return 0;
}

void plan_jl_done(plan_jl *x)
{
    if (x->c_locale)
        freelocale(x->c_locale);
    HO_FREE_ALL(x->sbuf, x->slots, x->ents, x->arena);
    memset(x, 0, sizeof(*x));
}

/* ------------------------------------------------------------ errors */

int plan_jl_fail(plan_jl *x, const char *at, const char *what)
{
    if (x->rc)
        return x->rc;
    if (!at)
        at = x->tok_start;
    if (at > x->end)
        at = x->end;
    int line = 1, col = 0;
    for (const char *q = x->buf; q < at; q++) {
        if (*q == '\n') {
            line++;
            col = 0;
        } else if (((unsigned char)*q & 0xc0) != 0x80) {
            col++; /* characters, not continuation bytes */
        }
    }
    /* the token (or what was read of it), at most 20 bytes, for "near" */
    const char *tail = at;
    size_t n = 0;
    while (tail + n < x->end && n < 20 && tail[n] != '\n' && tail[n] != 0 &&
           (n == 0 || (tail[n] != ' ' && tail[n] != ',' && tail[n] != ':' &&
                       tail[n] != '}' && tail[n] != ']')))
        n++;
    /* do not cut a UTF-8 sequence */
    while (n > 0 && tail + n < x->end &&
           ((unsigned char)tail[n] & 0xc0) == 0x80)
        n--;
    if (at >= x->end)
        x->rc = ho_errf(x->err, x->errlen, x->code,
                        "invalid JSON at line %d, column %d: %s near end of "
                        "file", line, col, what);
    else
        x->rc = ho_errf(x->err, x->errlen, x->code,
                        "invalid JSON at line %d, column %d: %s near '%.*s'",
                        line, col, what, (int)n, tail);
    return x->rc;
}

static plan_jl_tok fail_tok(plan_jl *x, const char *at, const char *what)
{
    plan_jl_fail(x, at, what);
    return PLAN_JL_ERROR;
}

static plan_jl_tok oom(plan_jl *x)
{
    if (!x->rc)
        x->rc = ho_errf(x->err, x->errlen, -ENOMEM,
                        "out of memory parsing JSON");
    return PLAN_JL_ERROR;
}

/* ------------------------------------------------------------ strings */

static int sbuf_room(plan_jl *x, size_t need)
{
    if (need <= x->scap)
        return 0;
    size_t cap = x->scap ? x->scap : 256;
    while (cap < need)
        cap *= 2;
    char *b = realloc(x->sbuf, cap);
    if (!b)
        return -ENOMEM;
    x->sbuf = b;
    x->scap = cap;
    return 0;
}

static int hex4(const char *p, const char *end, uint32_t *ret_value)
{
    uint32_t v = 0;
    if (end - p < 4)
        return -1;
    for (int k = 0; k < 4; k++) {
        char c = p[k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return -1;
    }
    *ret_value = v;
    return 0;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* One escape at p (after the backslash) into o; advances *pp. */
static int unescape(plan_jl *x, const char **pp, char *o, size_t *ret_len)
{
    const char *p = *pp;
    uint32_t cp, lo;
    switch (*p) {
    case '"': case '\\': case '/':
        *o = *p;
        break;
    case 'b': *o = '\b'; break;
    case 'f': *o = '\f'; break;
    case 'n': *o = '\n'; break;
    case 'r': *o = '\r'; break;
    case 't': *o = '\t'; break;
    case 'u':
        if (hex4(p + 1, x->end, &cp) < 0)
            return plan_jl_fail(x, p - 1, "invalid escape");
        p += 4;
        if (cp == 0)
            return plan_jl_fail(x, p - 5, "\\u0000 is not allowed");
        if (cp >= 0xdc00 && cp <= 0xdfff)
            return plan_jl_fail(x, p - 5,
                                "invalid Unicode (lone low surrogate)");
        if (cp >= 0xd800 && cp <= 0xdbff) {
            if (x->end - p < 3 || p[1] != '\\' || p[2] != 'u' ||
                hex4(p + 3, x->end, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
                return plan_jl_fail(x, p - 5, "invalid Unicode (unpaired high "
                               "surrogate)");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            p += 6;
        }
        *ret_len = put_utf8(o, cp);
        *pp = p + 1;
        return 0;
    default:
        return plan_jl_fail(x, p - 1, "invalid escape");
    }
    *ret_len = 1;
    *pp = p + 1;
    return 0;
}

static plan_jl_tok lex_string(plan_jl *x)
{
    const char *p = x->p + 1, *start = p;
    const unsigned char *end = (const unsigned char *)x->end;

    /* fast path: no escape */
    for (;;) {
        if (p >= x->end)
            return fail_tok(x, x->end, "premature end of input");
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            x->s = start;
            x->slen = (size_t)(p - start);
            x->p = p + 1;
            return PLAN_JL_STRING;
        }
        if (c == '\\')
            break;
        if (c < 0x20)
            return fail_tok(x, p, "control character in string");
        if (c < 0x80) {
            p++;
            continue;
        }
        size_t n = plan_fmt_utf8_seq((const unsigned char *)p, end);
        if (!n)
            return fail_tok(x, p, "invalid UTF-8 in string");
        p += n;
    }
    /* with escapes: decode into sbuf (never longer than the source) */
    size_t o = (size_t)(p - start);
    if (sbuf_room(x, o + 64) < 0)
        return oom(x);
    memcpy(x->sbuf, start, o);
    for (;;) {
        if (p >= x->end)
            return fail_tok(x, x->end, "premature end of input");
        if (sbuf_room(x, o + 8) < 0)
            return oom(x);
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            break;
        if (c == '\\') {
            size_t n = 0;
            p++;
            if (p >= x->end)
                return fail_tok(x, x->end, "premature end of input");
            if (unescape(x, &p, x->sbuf + o, &n) < 0)
                return PLAN_JL_ERROR;
            o += n;
            continue;
        }
        if (c < 0x20)
            return fail_tok(x, p, "control character in string");
        size_t n =
            c < 0x80 ? 1 : plan_fmt_utf8_seq((const unsigned char *)p, end);
        if (!n)
            return fail_tok(x, p, "invalid UTF-8 in string");
        memcpy(x->sbuf + o, p, n);
        o += n;
        p += n;
    }
    x->s = x->sbuf;
    x->slen = o;
    x->p = p + 1;
    return PLAN_JL_STRING;
}

/* ------------------------------------------------------------ numbers */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static const double pow10_exact[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A real whose decimal mantissa has at most 15 significant digits and
 * whose scale is at most 10^22 is m * 10^e or m / 10^-e with both operands
 * exact: one correctly rounded operation (Clinger's fast path). */
static bool real_fast(const char *s, const char *end, double *ret_value)
{
    const char *p = s;
    bool neg = *p == '-';
    uint64_t m = 0;
    int digits = 0, scale = 0;
    if (neg)
        p++;
    for (; p < end && is_digit(*p); p++) {
        if (m == 0 && *p == '0')
            continue;
        if (++digits > 15)
            return false;
        m = m * 10 + (uint64_t)(*p - '0');
    }
    if (p < end && *p == '.') {
        for (p++; p < end && is_digit(*p); p++) {
            scale--;
            if (m == 0 && *p == '0')
                continue;
            if (++digits > 15)
                return false;
            m = m * 10 + (uint64_t)(*p - '0');
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        bool eneg = false;
        int e = 0;
        p++;
        if (*p == '+' || *p == '-')
            eneg = *p++ == '-';
        for (; p < end && is_digit(*p); p++) {
            if (e > 10000)
                return false;
            e = e * 10 + (*p - '0');
        }
        scale += eneg ? -e : e;
    }
    double d = (double)m;
    if (m != 0) {
        if (scale < -22 || scale > 22)
            return false;
        d = scale < 0 ? d / pow10_exact[-scale] : d * pow10_exact[scale];
    }
    *ret_value = neg ? -d : d;
    return true;
}

static plan_jl_tok lex_number(plan_jl *x)
{
    const char *p = x->p, *start = p;
    bool neg = false, real = false;

    if (*p == '-') {
        neg = true;
        p++;
    }
    if (p >= x->end || !is_digit(*p))
        return fail_tok(x, start, "invalid token");
    if (*p == '0') {
        p++;
        if (p < x->end && is_digit(*p))
            return fail_tok(x, start, "invalid token");
    } else {
        while (p < x->end && is_digit(*p))
            p++;
    }
    if (p < x->end && *p == '.') {
        real = true;
        p++;
        if (p >= x->end || !is_digit(*p))
            return fail_tok(x, start, "invalid token");
        while (p < x->end && is_digit(*p))
            p++;
    }
    if (p < x->end && (*p == 'e' || *p == 'E')) {
        real = true;
        p++;
        if (p < x->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= x->end || !is_digit(*p))
            return fail_tok(x, start, "invalid token");
        while (p < x->end && is_digit(*p))
            p++;
    }
    x->p = p;
    if (!real) {
        uint64_t v = 0;
        for (const char *q = start + neg; q < p; q++) {
            unsigned d = (unsigned)(*q - '0');
            if (v > (UINT64_MAX - d) / 10)
                return fail_tok(x, start, "too big integer");
            v = v * 10 + d;
        }
        if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
            return fail_tok(x, start, "too big integer");
        x->ival = neg ? (int64_t)(0 - v) : (int64_t)v;
        x->dval = (double)x->ival;
        return PLAN_JL_INT;
    }
    if (!real_fast(start, p, &x->dval)) {
        char small[64], *copy = small;
        size_t n = (size_t)(p - start);
        if (n >= sizeof small && !(copy = malloc(n + 1)))
            return oom(x);
        memcpy(copy, start, n);
        copy[n] = 0;
        x->dval = strtod_l(copy, NULL, x->c_locale);
        if (copy != small)
            free(copy);
    }
    if (isinf(x->dval))
        return fail_tok(x, start, "real number overflow");
    return PLAN_JL_REAL;
}

const char *plan_jl_simple_number(const char *p, const char *end,
                                  bool *ret_int, int64_t *ret_i,
                                  double *ret_d)
{
    const char *q = p;
    if (q >= end || !is_digit(*q))
        return NULL;
    if (*q == '0')
        q++;
    else
        while (q < end && is_digit(*q))
            q++;
    if (q - p > 18 || (q < end && is_digit(*q)))
        return NULL; /* long (maybe too big), or a leading zero */
    bool real = false;
    if (q < end && *q == '.') {
        q++;
        if (q >= end || !is_digit(*q))
            return NULL;
        while (q < end && is_digit(*q))
            q++;
        real = true;
    }
    if (q < end && (*q == 'e' || *q == 'E'))
        return NULL;
    if (!real) {
        int64_t v = 0;
        for (const char *d = p; d < q; d++)
            v = v * 10 + (*d - '0'); /* at most 18 digits: no overflow */
        *ret_int = true;
        *ret_i = v;
        *ret_d = (double)v;
        return q;
    }
    /* what lex_number computes for a real when real_fast takes it */
    if (!real_fast(p, q, ret_d))
        return NULL;
    *ret_int = false;
    return q;
}

/* ------------------------------------------------------------ tokens */

static plan_jl_tok literal(plan_jl *x, const char *word, size_t n,
                           plan_jl_tok t)
{
    if ((size_t)(x->end - x->p) < n || memcmp(x->p, word, n) != 0)
        return fail_tok(x, x->p, "invalid token");
    x->p += n;
    return t;
}

static plan_jl_tok open_nested(plan_jl *x, plan_jl_tok t)
{
    if (++x->depth > PLAN_JL_MAX_DEPTH)
        return fail_tok(x, x->p, "maximum parsing depth reached");
    x->p++;
    return t;
}

plan_jl_tok plan_jl_next(plan_jl *x)
{
    const char *p = x->p;
    if (x->rc)
        return PLAN_JL_ERROR;
    while (p < x->end &&
           (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
        p++;
    x->p = x->tok_start = p;
    if (p >= x->end)
        return PLAN_JL_EOF;
    switch (*p) {
    case '{':
        return open_nested(x, PLAN_JL_LBRACE);
    case '[':
        return open_nested(x, PLAN_JL_LBRACK);
    case '}':
        x->depth--;
        x->p++;
        return PLAN_JL_RBRACE;
    case ']':
        x->depth--;
        x->p++;
        return PLAN_JL_RBRACK;
    case ':':
        x->p++;
        return PLAN_JL_COLON;
    case ',':
        x->p++;
        return PLAN_JL_COMMA;
    case '"':
        return lex_string(x);
    case 't':
        return literal(x, "true", 4, PLAN_JL_TRUE);
    case 'f':
        return literal(x, "false", 5, PLAN_JL_FALSE);
    case 'n':
        return literal(x, "null", 4, PLAN_JL_NULL);
    default:
        if (*p == '-' || is_digit(*p))
            return lex_number(x);
        return fail_tok(x, p, "invalid token");
    }
}

int plan_jl_expect_eof(plan_jl *x)
{
    plan_jl_tok t = plan_jl_next(x);
    if (t == PLAN_JL_ERROR)
        return x->rc;
    if (t != PLAN_JL_EOF)
        return plan_jl_fail(x, NULL, "end of file expected");
    return 0;
}

const char *plan_jl_pos(const plan_jl *x)
{
    return x->tok_start;
}

void plan_jl_rewind(plan_jl *x, const char *pos, uint32_t depth)
{
    x->p = x->tok_start = pos;
    x->depth = depth;
}

/* ------------------------------------------------------------ keys */

static uint64_t key_hash(const char *s, size_t n, uint32_t depth)
{
    uint64_t h = 0xcbf29ce484222325ull ^ depth;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

uint32_t plan_jl_obj_begin(plan_jl *x)
{
    return x->n_ents;
}

void plan_jl_obj_end(plan_jl *x, uint32_t mark)
{
    /* the newest first: the table returns to the state before each one */
    while (x->n_ents > mark) {
        plan_jl_keyent *e = &x->ents[--x->n_ents];
        x->slots[e->slot] = 0;
        x->n_arena = e->off;
    }
}

static int rehash(plan_jl *x, uint32_t size)
{
    uint32_t *slots = calloc(size, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    free(x->slots);
    x->slots = slots;
    x->mask = size - 1;
    for (uint32_t i = 0; i < x->n_ents; i++) {
        uint32_t h = (uint32_t)x->ents[i].hash & x->mask;
        while (slots[h])
            h = (h + 1) & x->mask;
        slots[h] = i + 1;
        x->ents[i].slot = h;
    }
    return 0;
}

int plan_jl_key_add(plan_jl *x)
{
    const char *key = x->s;
    uint32_t len = (uint32_t)x->slen;
    uint64_t hash = key_hash(key, len, x->depth);

    if (x->rc)
        return x->rc;
    if ((uint64_t)x->n_ents * 2 + 2 > (uint64_t)x->mask + 1 || !x->slots) {
        uint32_t size = x->slots ? (x->mask + 1) * 2 : 64;
        if (size == 0 || rehash(x, size) < 0) {
            oom(x);
            return x->rc;
        }
    }
    uint32_t h = (uint32_t)hash & x->mask;
    for (; x->slots[h]; h = (h + 1) & x->mask) {
        const plan_jl_keyent *e = &x->ents[x->slots[h] - 1];
        if (e->hash == hash && e->depth == x->depth && e->len == len &&
            (len == 0 || memcmp(x->arena + e->off, key, len) == 0))
            return plan_jl_fail(x, NULL, "duplicate object key");
    }
    if (x->n_ents == x->cap_ents) {
        uint32_t cap = x->cap_ents ? x->cap_ents * 2 : 64;
        plan_jl_keyent *ents = cap > x->cap_ents
                              ? realloc(x->ents, (size_t)cap * sizeof(*ents))
                              : NULL;
        if (!ents) {
            oom(x);
            return x->rc;
        }
        x->ents = ents;
        x->cap_ents = cap;
    }
    if ((uint64_t)x->n_arena + len > x->cap_arena) {
        uint64_t cap = x->cap_arena ? x->cap_arena : 4096;
        while (cap < (uint64_t)x->n_arena + len)
            cap *= 2;
        char *a = cap <= UINT32_MAX ? realloc(x->arena, cap) : NULL;
        if (!a) {
            oom(x);
            return x->rc;
        }
        x->arena = a;
        x->cap_arena = (uint32_t)cap;
    }
    if (len)
        memcpy(x->arena + x->n_arena, key, len);
    x->ents[x->n_ents] = (plan_jl_keyent){hash, x->depth, x->n_arena, len, h};
    x->n_arena += len;
    x->slots[h] = ++x->n_ents;
    return 0;
}

/* ------------------------------------------------------------ skipping */

static bool value_start(plan_jl_tok t)
{
    return t >= PLAN_JL_STRING || t == PLAN_JL_LBRACE || t == PLAN_JL_LBRACK;
}

int plan_jl_object(plan_jl *x, int (*key)(plan_jl *x, void *ctx),
                   int (*value)(plan_jl *x, void *ctx, int handle,
                                plan_jl_tok first),
                   void *ctx)
{
    uint32_t mark = plan_jl_obj_begin(x);
    plan_jl_tok t = plan_jl_next(x);
    int r = 0, h;

    if (t == PLAN_JL_RBRACE)
        goto out;
    for (;;) {
        if (t != PLAN_JL_STRING) {
            r = t == PLAN_JL_ERROR
                    ? x->rc
                    : plan_jl_fail(x, NULL, "string or '}' expected");
            goto out;
        }
        if ((r = h = key(x, ctx)) < 0)
            goto out;
        if ((t = plan_jl_next(x)) != PLAN_JL_COLON) {
            r = t == PLAN_JL_ERROR ? x->rc
                                   : plan_jl_fail(x, NULL, "':' expected");
            goto out;
        }
        if ((r = value(x, ctx, h, plan_jl_next(x))) < 0)
            goto out;
        t = plan_jl_next(x);
        if (t == PLAN_JL_RBRACE)
            break;
        if (t != PLAN_JL_COMMA) {
            r = t == PLAN_JL_ERROR ? x->rc
                                   : plan_jl_fail(x, NULL, "'}' expected");
            goto out;
        }
        t = plan_jl_next(x);
    }
    r = 0;
out:
    plan_jl_obj_end(x, mark);
    return r;
}

int plan_jl_array(plan_jl *x,
                  int (*elem)(plan_jl *x, void *ctx, size_t i,
                              plan_jl_tok first),
                  void *ctx, size_t *ret_n)
{
    plan_jl_tok t = plan_jl_next(x);
    size_t i = 0;

    *ret_n = 0;
    if (t == PLAN_JL_RBRACK)
        return 0;
    for (;;) {
        if (t == PLAN_JL_ERROR)
            return x->rc;
        if (!value_start(t))
            return plan_jl_fail(x, NULL, "unexpected token");
        int r = elem(x, ctx, i++, t);
        if (r < 0)
            return r;
        t = plan_jl_next(x);
        if (t == PLAN_JL_RBRACK)
            break;
        if (t != PLAN_JL_COMMA)
            return t == PLAN_JL_ERROR ? x->rc
                                      : plan_jl_fail(x, NULL, "']' expected");
        t = plan_jl_next(x);
    }
    *ret_n = i;
    return 0;
}

static int skip_key(plan_jl *x, void *ctx)
{
    (void)ctx;
    return plan_jl_key_add(x);
}

static int skip_value(plan_jl *x, void *ctx, int handle, plan_jl_tok first)
{
    (void)ctx;
    (void)handle;
    return plan_jl_skip(x, first);
}

static int skip_elem(plan_jl *x, void *ctx, size_t i, plan_jl_tok first)
{
    (void)ctx;
    (void)i;
    return plan_jl_skip(x, first);
}

int plan_jl_skip(plan_jl *x, plan_jl_tok first)
{
    if (first == PLAN_JL_ERROR)
        return x->rc;
    if (!value_start(first))
        return plan_jl_fail(x, NULL, "unexpected token");
    size_t n;
    if (first == PLAN_JL_LBRACE)
        return plan_jl_object(x, skip_key, skip_value, NULL);
    if (first == PLAN_JL_LBRACK)
        return plan_jl_array(x, skip_elem, NULL, &n);
    return 0;
}
