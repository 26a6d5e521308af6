/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Attaches daemon/bpf/taskexe.bpf.c's task iterator to one process and reads what it writes. */

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "latnice/event.h"
#include "task-exe.h"
#include "taskexe.skel.h"
#include "util.h"

struct TaskExe {
        struct taskexe_bpf *skel;
        bool no_pid_filter;       /* before Linux 6.1: every process is visited, want_tgid picks one */
};

TaskExe *task_exe_free(TaskExe *x) {
        if (!x)
                return NULL;
        taskexe_bpf__destroy(x->skel);
        free(x);
        return NULL;
}

int task_exe_new(TaskExe **ret) {
        TaskExe *x;
        int r;

        x = calloc(1, sizeof(TaskExe));
        if (!x)
                return -ENOMEM;
        x->skel = taskexe_bpf__open_and_load();
        if (!x->skel) {
                r = -errno;
                task_exe_free(x);
                return r < 0 ? r : -EOPNOTSUPP;
        }
        *ret = x;
        return 0;
}

static struct bpf_link *attach(TaskExe *x, pid_t pid) {
        union bpf_iter_link_info info = { .task.pid = (uint32_t) pid };
        struct bpf_iter_attach_opts o;
        struct bpf_link *l;

        /* Not LIBBPF_OPTS(): its compound literal leaves the tail padding to chance, and libbpf
         * refuses options with non-zero bytes it does not know. */
        memset(&o, 0, sizeof(o));
        o.sz = sizeof(o);
        o.link_info = &info;
        o.link_info_len = sizeof(info);

        if (!x->no_pid_filter) {
                x->skel->bss->want_tgid = 0;
                l = bpf_program__attach_iter(x->skel->progs.task_exe, &o);
                if (l || errno != EINVAL)
                        return l;
                x->no_pid_filter = true; /* the kernel does not know the filter */
        }
        x->skel->bss->want_tgid = (uint32_t) pid;
        return bpf_program__attach_iter(x->skel->progs.task_exe, NULL);
}

int task_exe_read(TaskExe *x, pid_t pid, char *path, size_t size, TaskExeInfo *ret) {
        struct latnice_task_exe e;
        struct bpf_link *l;
        size_t got = 0;
        int fd, r = -ESRCH;

        if (pid <= 0 || size == 0)
                return -EINVAL;
        l = attach(x, pid);
        if (!l)
                return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
        fd = bpf_iter_create(bpf_link__fd(l));
        if (fd < 0) {
                r = -errno;
                bpf_link__destroy(l);
                return r;
        }
        for (;;) {
                ssize_t n = read(fd, (char *) &e + got, sizeof(e) - got);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        break;
                }
                if (n == 0)
                        break;
                got += (size_t) n;
                if (got == sizeof(e))
                        break; /* one process: one record */
        }
        close(fd);
        bpf_link__destroy(l);
        if (got != sizeof(e))
                return got == 0 ? r : -EIO;
        /* The link's filter takes pid in our pid namespace, the record has the kernel's: compare them only
         * without the filter (where a child namespace finds nothing, as it should). */
        if (x->no_pid_filter && e.tgid != (uint32_t) pid)
                return -ESRCH;
        if (e.path_len > 0 && e.path_len <= sizeof(e.path)) {
                e.path[sizeof(e.path) - 1] = 0;
                snprintf(path, size, "%s", e.path);
        } else
                path[0] = 0;
        *ret = (TaskExeInfo) { .start_boottime = e.start_boottime, .ino = e.ino, .dev = e.dev };
        return 0;
}
