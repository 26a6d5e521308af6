/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers for the unit tests. */

#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests.h"

static char *tmpdir;
static char **paths;
static size_t n_paths;

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st;
        (void) type;
        (void) ftw;
        (void) remove(path);
        return 0;
}

static void rm_tmpdir(void) {
        if (tmpdir) {
                (void) nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
                free(tmpdir);
        }
        for (size_t i = 0; i < n_paths; i++)
                free(paths[i]);
        free(paths);
}

const char *test_tmpdir(void) {
        char t[] = "/tmp/latnice-test-XXXXXX";

        if (tmpdir)
                return tmpdir;
        ASSERT_TRUE(mkdtemp(t));
        tmpdir = strdup(t);
        ASSERT_TRUE(tmpdir);
        atexit(rm_tmpdir);
        return tmpdir;
}

char *test_path(const char *dir, const char *rel) {
        char *p, **n;

        /* Freed at exit, so call sites need not: the sanitizer build checks for leaks. */
        ASSERT_TRUE(asprintf(&p, "%s/%s", dir, rel) >= 0);
        n = realloc(paths, sizeof(char *) * (n_paths + 1));
        ASSERT_TRUE(n);
        paths = n;
        paths[n_paths++] = p;
        return p;
}

static void mkdir_parents(const char *path) {
        char *p = strdup(path);

        ASSERT_TRUE(p);
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                        fprintf(stderr, "mkdir %s: %m\n", p);
                        abort();
                }
                *s = '/';
        }
        free(p);
}

void test_write(const char *dir, const char *rel, const char *contents) {
        char *path = test_path(dir, rel);
        FILE *f;

        mkdir_parents(path);
        f = fopen(path, "we");
        ASSERT_TRUE(f);
        ASSERT_TRUE(fputs(contents, f) >= 0);
        ASSERT_TRUE(fclose(f) == 0);
}

int test_failed;

void test_check(const char *what, int ok) {
        printf("%s - %s\n", ok ? "ok" : "not ok", what);
        test_failed |= !ok;
}

char *test_read_source(const char *rel, size_t *ret_len) {
        const char *root = getenv("LATNICE_SOURCE_ROOT");
        char path[4096];
        FILE *f;
        char *buf;
        long n;

        snprintf(path, sizeof(path), "%s/%s", root ? root : ".", rel);
        f = fopen(path, "re");
        if (!f) {
                printf("not ok - cannot open %s\n", path);
                exit(1);
        }
        if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0 ||
            !(buf = malloc((size_t) n + 1)) || fread(buf, 1, (size_t) n, f) != (size_t) n) {
                printf("not ok - cannot read %s\n", path);
                exit(1);
        }
        fclose(f);
        buf[n] = '\0';
        *ret_len = (size_t) n;
        return buf;
}

char *test_nested_brackets(size_t n) {
        char *s = malloc(2 * n + 1);

        ASSERT_TRUE(s);
        memset(s, '[', n);
        memset(s + n, ']', n);
        s[2 * n] = '\0';
        return s;
}

/* The TEST()s of this program: the linker's bounds of their section (none: both NULL). */
extern const TestCase __start_latnice_tests[] __attribute__((weak));
extern const TestCase __stop_latnice_tests[] __attribute__((weak));
int test_setup(void) __attribute__((weak));

static int by_line(const void *a, const void *b) {
        const TestCase *x = a, *y = b;

        return (x->line > y->line) - (x->line < y->line);
}

static bool wanted(const char *name, int argc, char **argv) {
        if (argc < 2)
                return true;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], name) == 0)
                        return true;
        return false;
}

/* Weak: a file with a main() of its own (the old form) keeps it. */
__attribute__((weak)) int main(int argc, char **argv) {
        size_t n = (size_t) (__stop_latnice_tests - __start_latnice_tests), ran = 0;
        TestCase *v;

        if (n == 0) {
                fprintf(stderr, "%s: no TEST() in this program\n", program_invocation_short_name);
                return 1;
        }
        v = calloc(n, sizeof(TestCase));
        ASSERT_TRUE(v);
        memcpy(v, __start_latnice_tests, n * sizeof(TestCase));
        qsort(v, n, sizeof(TestCase), by_line); /* the section's order is the linker's: the file's is ours */
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (test_setup) {
                int r = test_setup();

                if (r != 0) {
                        free(v);
                        return r;
                }
        }
        for (size_t i = 0; i < n; i++) {
                if (!wanted(v[i].name, argc, argv))
                        continue;
                printf("%s: %s\n", program_invocation_short_name, v[i].name);
                v[i].run();
                ran++;
        }
        free(v);
        if (ran == 0) {
                fprintf(stderr, "%s: none of the tests named\n", program_invocation_short_name);
                return 1;
        }
        printf("%s: %zu of %zu tests ok\n", program_invocation_short_name, ran, n);
        return 0;
}
