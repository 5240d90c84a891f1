/*
 * planner/io/json_lex.h - a small, strict JSON tokenizer over a buffer in
 * memory, for the streaming trace and schedule readers (plan_json.c).
 * Private to planner/io/.
 *
 * It accepts exactly RFC 8259 JSON as jansson does with
 * JSON_REJECT_DUPLICATES (the reader this one replaced, still the oracle of
 * the fuzz test in tests/planner/test_json.c): UTF-8 only, no control
 * characters in strings, no \u0000, surrogates in pairs, integers that fit
 * in int64 ("too big integer"), finite reals ("real number overflow"),
 * nesting at most PLAN_JL_MAX_DEPTH, no duplicate key in any object, nothing
 * but whitespace after the top-level value.  The first syntax error stops the
 * lexer; its message names the line and column ("invalid JSON at line 5,
 * column 0: ... near end of file").
 *
 * Strings without escapes point into the buffer; with escapes they are
 * decoded into a scratch buffer that the next string token reuses.
 * Numbers are parsed as they are read.  Nothing is allocated per token.
 */
#ifndef HO_PLANNER_IO_JSON_LEX_H
#define HO_PLANNER_IO_JSON_LEX_H

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting limit of arrays and objects (jansson's JSON_PARSER_MAX_DEPTH). */
#define PLAN_JL_MAX_DEPTH 2048

typedef enum plan_jl_tok {
    PLAN_JL_ERROR = 0, /* a syntax error (or out of memory) was recorded */
    PLAN_JL_EOF,
    PLAN_JL_LBRACE,
    PLAN_JL_RBRACE,
    PLAN_JL_LBRACK,
    PLAN_JL_RBRACK,
    PLAN_JL_COLON,
    PLAN_JL_COMMA,
    PLAN_JL_STRING,
    PLAN_JL_INT,
    PLAN_JL_REAL,
    PLAN_JL_TRUE,
    PLAN_JL_FALSE,
    PLAN_JL_NULL
} plan_jl_tok;

/* One key of an open object, for duplicate detection (see plan_jl_key_add). */
typedef struct plan_jl_keyent {
    uint64_t hash;
    uint32_t depth;  /* nesting depth of the object it belongs to */
    uint32_t off;    /* in the key arena */
    uint32_t len;
    uint32_t slot;   /* its slot in the hash table */
} plan_jl_keyent;

typedef struct plan_jl {
    const char *buf, *p, *end;
    locale_t c_locale;       /* strtod_l for reals the fast path refuses */
    int rc;                  /* 0; after PLAN_JL_ERROR the error's code */
    char *err;               /* message of the error (caller's buffer) */
    size_t errlen;
    int code;                /* HO_E_BAD_TRACE or HO_E_BAD_SCHEDULE */
    uint32_t depth;          /* open arrays and objects */
    /* the last token */
    const char *tok_start;
    const char *s;           /* PLAN_JL_STRING: decoded, not NUL-ended */
    size_t slen;
    int64_t ival;            /* PLAN_JL_INT */
    double dval;             /* PLAN_JL_INT (converted) and PLAN_JL_REAL */
    char *sbuf;              /* scratch for strings with escapes */
    size_t scap;
    /* keys of the open objects: an open-addressing table (slots hold
     * 1 + an index into ents, 0 = empty) and a stack of entries removed
     * in LIFO order when their object closes */
    uint32_t *slots;
    uint32_t mask;
    plan_jl_keyent *ents;
    uint32_t n_ents, cap_ents;
    char *arena;
    uint32_t n_arena, cap_arena;
} plan_jl;

/* Start lexing buf[0..len).  err: the caller's message buffer, code the
 * error code of syntax errors.  0 or -ENOMEM. */
int plan_jl_init(plan_jl *x, const char *buf, size_t len, int code, char *err,
                 size_t errlen);
void plan_jl_done(plan_jl *x);

/* The next token.  Strings are validated and decoded; numbers parsed. */
plan_jl_tok plan_jl_next(plan_jl *x);

/* Walk the members of an object whose '{' was just read: per member,
 * key(x, ctx) with the key as the current string returns a handle (< 0:
 * an error, which stops the walk), then value(x, ctx, handle, first) gets
 * the first token of the member's value and reads the value.  Duplicate
 * keys the key callback registers (plan_jl_key_add) are found.  0 or the
 * error's code. */
int plan_jl_object(plan_jl *x, int (*key)(plan_jl *x, void *ctx),
                   int (*value)(plan_jl *x, void *ctx, int handle,
                                plan_jl_tok first),
                   void *ctx);
/* Walk an array whose '[' was just read: elem(x, ctx, i, first) reads
 * entry i.  *ret_n: the number of entries.  0 or the error's code. */
int plan_jl_array(plan_jl *x,
                  int (*elem)(plan_jl *x, void *ctx, size_t i,
                              plan_jl_tok first),
                  void *ctx, size_t *ret_n);

/* Skip the rest of the value whose first token `first` was just read
 * (objects and arrays to their end, with every check).  0, or the error's
 * code (the lexer has failed). */
int plan_jl_skip(plan_jl *x, plan_jl_tok first);

/* Record a syntax error at `at` (NULL: the current token); returns its
 * code.  `what` is the jansson-style text ("':' expected"). */
int plan_jl_fail(plan_jl *x, const char *at, const char *what);

/* Object bookkeeping for duplicate keys: plan_jl_obj_begin at '{' returns a
 * mark, plan_jl_key_add registers the key just read (the current string) and
 * fails with "duplicate object key" when the object already has it,
 * plan_jl_obj_end drops the object's keys.  Readers of known objects may skip
 * plan_jl_key_add for keys they track themselves. */
uint32_t plan_jl_obj_begin(plan_jl *x);
int plan_jl_key_add(plan_jl *x);
void plan_jl_obj_end(plan_jl *x, uint32_t mark);

/* After the top-level value: only whitespace may follow.  0 or code. */
int plan_jl_expect_eof(plan_jl *x);

/* Position for a later plan_jl_rewind (the start of the current token), and
 * rewind to it: the token is read again by the next plan_jl_next.  Used to
 * read a part of the document a second time once what it depends on is
 * known (ops listed before storages). */
const char *plan_jl_pos(const plan_jl *x);
void plan_jl_rewind(plan_jl *x, const char *pos, uint32_t depth);

/* For a reader's fast path over text of a shape it knows (the lines our
 * own writer emits): the number at p, when it has one of the simplest
 * forms -- an integer without sign or leading zero of at most 18 digits,
 * or digits '.' digits with at most 15 significant digits -- with the
 * value plan_jl_next gives it (*ret_int: an integer, *ret_i its value;
 * *ret_d the double).  Returns the end of the number, or NULL for any
 * other text; nothing is recorded either way, and the caller reads the
 * value the general way then. */
const char *plan_jl_simple_number(const char *p, const char *end,
                                  bool *ret_int, int64_t *ret_i,
                                  double *ret_d);

#endif
