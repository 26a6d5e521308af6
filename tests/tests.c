/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers for the unit tests. */

#include <errno.h>
#include <ftw.h>
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
