/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What one foreground boost covers, read from /proc and cgroupfs (see foreground-util.h). */
#include <stdio.h>
#include <stdlib.h>

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

int foreground_list_cgroup(int cgroup_fd, const char *path, pid_t *ret, size_t max) {
        _cleanup_(freep) char *p = NULL;

        if (asprintf(&p, "%s/cgroup.procs", path[0] == '/' ? path + 1 : path) < 0)
                return -ENOMEM;
        return (int) append_pids(cgroup_fd, p[0] == '/' ? p + 1 : p, ret, 0, max);
}
