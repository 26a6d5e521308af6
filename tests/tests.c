/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers for the unit tests. */

#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests.h"

static char *tmpdir;

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st;
        (void) type;
        (void) ftw;
        (void) remove(path);
        return 0;
}

static void rm_tmpdir(void) {
        if (tmpdir) {
                /* Make unreadable test dirs removable again. */
                (void) nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        }
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
        char *p;

        ASSERT_TRUE(asprintf(&p, "%s/%s", dir, rel) >= 0);
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
        free(path);
}
