/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What one foreground boost covers, read from /proc and cgroupfs (see foreground-util.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "foreground-util.h"
#include "proc.h"
#include "util.h"

/* Appends the pids in a children (or cgroup.procs) file, space or newline separated, not yet in ret. */
static size_t append_pids(int dir_fd, const char *path, pid_t *ret, size_t n, size_t max) {
        _cleanup_(freep) char *buf = NULL;
        char *p, *e;

        if (read_full_file(dir_fd, path, 1024 * 1024, &buf, NULL) < 0)
                return n;
        for (p = buf; *p && n < max; p = e) {
                long v = strtol(p, &e, 10);
                bool seen = false;

                if (e == p) {
                        e = p + 1;
                        continue;
                }
                if (v <= 0 || v > INT32_MAX)
                        continue;
                for (size_t i = 0; i < n && !seen; i++)
                        seen = ret[i] == (pid_t) v;
                if (!seen)
                        ret[n++] = (pid_t) v;
        }
        return n;
}

int foreground_list_tree(int proc_fd, pid_t root, pid_t *ret, size_t max) {
        size_t n = 0;

        if (max == 0 || root <= 0)
                return 0;
        ret[n++] = root;
        for (size_t i = 0; i < n && n < max; i++) {
                _cleanup_(freep) pid_t *tids = NULL;
                int k = proc_list_tasks(proc_fd, ret[i], &tids);

                for (int j = 0; j < k && n < max; j++) {
                        char path[80];

                        snprintf(path, sizeof(path), "%d/task/%d/children", (int) ret[i], (int) tids[j]);
                        n = append_pids(proc_fd, path, ret, n, max);
                }
        }
        return (int) n;
}

#define CGROUP_DEPTH_MAX 16 /* below the unit: a container's own tree is a few levels */
#define CGROUP_DIRS_MAX 512 /* directories read for one boost: the user may make any number */

/* dir's cgroup.procs, then its sub-cgroups depth first, while *dirs and depth allow. */
static size_t append_cgroup(int dir_fd, pid_t *ret, size_t n, size_t max, unsigned depth, unsigned *dirs) {
        struct dirent *de;
        DIR *d;
        int fd;

        n = append_pids(dir_fd, "cgroup.procs", ret, n, max);
        if (depth >= CGROUP_DEPTH_MAX || n >= max)
                return n;
        fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return n;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return n;
        }
        while (n < max && *dirs < CGROUP_DIRS_MAX && (de = readdir(d))) {
                _cleanup_(closep) int sub = -1;

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        continue;
                (*dirs)++;
                n = append_cgroup(sub, ret, n, max, depth + 1, dirs);
        }
        closedir(d);
        return n;
}

int foreground_list_cgroup(int cgroup_fd, const char *path, pid_t *ret, size_t max) {
        _cleanup_(closep) int fd = -1;
        unsigned dirs = 0;
        const char *rel = path;

        rel += strspn(rel, "/");
        fd = openat(cgroup_fd, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        return (int) append_cgroup(fd, ret, 0, max, 0, &dirs);
}
