/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replays fuzz corpus files (arguments, or every file in a directory) through the fuzz target. */

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
        _cleanup_(freep) char *buf = NULL;
        size_t size;
        int r;

        r = read_full_file(AT_FDCWD, path, 16 * 1024 * 1024, &buf, &size);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return 1;
        }
        LLVMFuzzerTestOneInput((const uint8_t *) buf, size);
        return 0;
}

int main(int argc, char **argv) {
        unsigned n = 0;
        int fails = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                DIR *d;
                struct dirent *de;

                if (stat(argv[i], &st) < 0 || !S_ISDIR(st.st_mode)) {
                        fails += run_file(argv[i]);
                        n++;
                        continue;
                }
                d = opendir(argv[i]);
                if (!d) {
                        perror(argv[i]);
                        return 1;
                }
                while ((de = readdir(d))) {
                        _cleanup_(freep) char *p = NULL;

                        if (de->d_name[0] == '.')
                                continue;
                        if (asprintf(&p, "%s/%s", argv[i], de->d_name) < 0)
                                return 1;
                        fails += run_file(p);
                        n++;
                }
                closedir(d);
        }
        if (n == 0) {
                fprintf(stderr, "no corpus files given\n");
                return 1;
        }
        printf("replayed %u corpus files\n", n);
        return fails ? 1 : 0;
}
