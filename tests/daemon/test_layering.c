/*
 * tests/daemon/test_layering.c - the module order of daemon/ (written down
 * in daemon/state.h) holds: no .c file calls a function declared in the
 * header of a module later in the order, every function is declared in
 * one module header only, and every .c file of daemon/ is a module of the
 * order.  Reads the sources (HO_SOURCE_DIR) as text: comments, strings
 * and preprocessor lines are blanked, then every `srv_name (` counts as a
 * declaration (in a header) or a call (in a .c file).
 */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The order of daemon/state.h; "main" (main.c) is the program on top. */
static const char *const order[] = {
    "log",      "idmap",    "quota",    "dirs",     "config",
    "authz",    "counters", "topology", "connection", "mover",  "links",
    "sessions",
    "planning", "staging",  "arbitrate", "handlers", "admin",    "metrics",
    "dispatch", "server",   "notify",
    "daemon",   "main",
};
#define N_MODULES ((int)(sizeof(order) / sizeof(order[0])))

static int module_index(const char *name)
{
    for (int i = 0; i < N_MODULES; i++)
        if (strcmp(order[i], name) == 0)
            return i;
    return -1;
}

/* The file's text with comments, string / char literals and preprocessor
 * lines replaced by spaces (newlines kept).  NULL when it does not exist. */
static char *read_code(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc(1, (size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    bool line_start = true;
    for (long i = 0; i < n; i++) {
        if (s[i] == '/' && s[i + 1] == '*') {
            for (; i < n && !(s[i] == '*' && s[i + 1] == '/'); i++)
                if (s[i] != '\n')
                    s[i] = ' ';
            if (i < n)
                s[i] = s[i + 1] = ' ';
            i++;
            continue;
        }
        if (s[i] == '/' && s[i + 1] == '/') {
            for (; i < n && s[i] != '\n'; i++)
                s[i] = ' ';
            line_start = true;
            continue;
        }
        if (s[i] == '"' || s[i] == '\'') {
            char q = s[i];
            s[i++] = ' ';
            for (; i < n && s[i] != q; i++) {
                if (s[i] == '\\')
                    s[i++] = ' ';
                if (s[i] != '\n')
                    s[i] = ' ';
            }
            if (i < n)
                s[i] = ' ';
            line_start = false;
            continue;
        }
        if (line_start && s[i] == '#') {
            /* a preprocessor line, with its continuations */
            for (; i < n && s[i] != '\n'; i++) {
                if (s[i] == '\\' && s[i + 1] == '\n') {
                    s[i] = ' ';
                    i++;
                    continue;
                }
                s[i] = ' ';
            }
            line_start = true;
            continue;
        }
        if (s[i] == '\n')
            line_start = true;
        else if (!isspace((unsigned char)s[i]))
            line_start = false;
    }
    return s;
}

typedef struct name_list {
    char **names;
    int n, cap;
} name_list;

static void list_add(name_list *l, const char *name, size_t len)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->names = realloc(l->names, (size_t)l->cap * sizeof(char *));
        ck_assert_ptr_nonnull(l->names);
    }
    l->names[l->n] = strndup(name, len);
    ck_assert_ptr_nonnull(l->names[l->n]);
    l->n++;
}

static bool list_has(const name_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0)
            return true;
    return false;
}

static void list_free(name_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof(*l));
}

/* Every `srv_... (` of code, once each. */
static void srv_calls(const char *code, name_list *out)
{
    for (const char *p = code; *p; p++) {
        if (strncmp(p, "srv_", 4) != 0 ||
            (p > code && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
            continue;
        const char *e = p;
        while (isalnum((unsigned char)*e) || *e == '_')
            e++;
        const char *q = e;
        while (isspace((unsigned char)*q))
            q++;
        if (*q == '(') {
            char name[128];
            snprintf(name, sizeof(name), "%.*s", (int)(e - p), p);
            if (!list_has(out, name))
                list_add(out, p, (size_t)(e - p));
        }
        p = e - 1;
    }
}

static char *source_path(const char *name)
{
    const char *src = getenv("HO_SOURCE_DIR");
    ck_assert_ptr_nonnull(src);
    char *path = malloc(PATH_MAX);
    ck_assert_ptr_nonnull(path);
    snprintf(path, PATH_MAX, "%s/daemon/%s", src, name);
    return path;
}

/* declared[i]: the srv_ functions declared in module i's header. */
static void read_headers(name_list declared[N_MODULES])
{
    for (int i = 0; i < N_MODULES; i++) {
        char file[64];
        snprintf(file, sizeof(file), "%s.h", order[i]);
        char *path = source_path(file);
        char *code = read_code(path);
        if (strcmp(order[i], "main") != 0)
            ck_assert_msg(code != NULL, "%s: module without a header", path);
        if (code)
            srv_calls(code, &declared[i]);
        free(code);
        free(path);
    }
}

/* The scanner itself: calls counted, comments / strings / macros not. */
START_TEST(scanner_sees_calls_only)
{
    const char *path = "/tmp/ho_layering_sample.c";
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#define X srv_macro(1)\\\n  srv_cont(2)\n"
          "int f(void) { return srv_one (1) + g(\"srv_str(\") +\n"
          "  /* srv_comment( */ srv_two(srv_three(0)); } // srv_line(\n"
          "int srv_var = 0; char c = '(';\n", f);
    fclose(f);
    char *code = read_code(path);
    remove(path);
    ck_assert_ptr_nonnull(code);
    name_list l = {0};
    srv_calls(code, &l);
    ck_assert_int_eq(l.n, 3);
    ck_assert(list_has(&l, "srv_one") && list_has(&l, "srv_two") &&
              list_has(&l, "srv_three"));
    list_free(&l);
    free(code);
}
END_TEST

START_TEST(no_call_goes_up_the_order)
{
    name_list declared[N_MODULES];
    memset(declared, 0, sizeof(declared));
    read_headers(declared);
    int violations = 0, files = 0;
    for (int i = 0; i < N_MODULES; i++) {
        char file[64];
        snprintf(file, sizeof(file), "%s.c", order[i]);
        char *path = source_path(file);
        char *code = read_code(path);
        ck_assert_msg(code != NULL, "%s missing", path);
        files++;
        name_list calls = {0};
        srv_calls(code, &calls);
        for (int k = 0; k < calls.n; k++)
            for (int j = i + 1; j < N_MODULES; j++)
                if (list_has(&declared[j], calls.names[k])) {
                    fprintf(stderr, "daemon/%s calls %s of daemon/%s.h, "
                            "later in the order\n", file, calls.names[k],
                            order[j]);
                    violations++;
                }
        list_free(&calls);
        free(code);
        free(path);
    }
    for (int i = 0; i < N_MODULES; i++)
        list_free(&declared[i]);
    ck_assert_int_eq(files, N_MODULES);
    ck_assert_msg(violations == 0, "%d calls up the module order",
                  violations);
}
END_TEST

START_TEST(each_function_in_one_header)
{
    name_list declared[N_MODULES];
    memset(declared, 0, sizeof(declared));
    read_headers(declared);
    int twice = 0, total = 0;
    for (int i = 0; i < N_MODULES; i++)
        for (int k = 0; k < declared[i].n; k++) {
            total++;
            for (int j = i + 1; j < N_MODULES; j++)
                if (list_has(&declared[j], declared[i].names[k])) {
                    fprintf(stderr, "%s is declared in %s.h and %s.h\n",
                            declared[i].names[k], order[i], order[j]);
                    twice++;
                }
        }
    for (int i = 0; i < N_MODULES; i++)
        list_free(&declared[i]);
    ck_assert_int_gt(total, 50);   /* the headers were read */
    ck_assert_int_eq(twice, 0);
}
END_TEST

START_TEST(every_source_is_a_module)
{
    char *dir = source_path("");
    DIR *dp = opendir(dir);
    ck_assert_ptr_nonnull(dp);
    struct dirent *de;
    int unknown = 0;
    while ((de = readdir(dp)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 3 || (strcmp(de->d_name + n - 2, ".c") != 0 &&
                      strcmp(de->d_name + n - 2, ".h") != 0))
            continue;
        char name[256];
        snprintf(name, sizeof(name), "%.*s", (int)(n - 2), de->d_name);
        /* header-only: the limits and the shared state */
        if (strcmp(name, "srv_limits") == 0 || strcmp(name, "state") == 0 ||
            strcmp(name, "list") == 0)
            continue;
        if (module_index(name) < 0) {
            fprintf(stderr, "daemon/%s is in no module of the order "
                    "(daemon/state.h, tests/daemon/test_layering.c)\n",
                    de->d_name);
            unknown++;
        }
    }
    closedir(dp);
    free(dir);
    ck_assert_int_eq(unknown, 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_layering");
    TCase *t = tcase_create("order");
    tcase_add_test(t, scanner_sees_calls_only);
    tcase_add_test(t, no_call_goes_up_the_order);
    tcase_add_test(t, each_function_in_one_header);
    tcase_add_test(t, every_source_is_a_module);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
