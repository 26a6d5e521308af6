/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Decoding ring buffer records (see exec-event.h). */

#include <stdio.h>
#include <string.h>

#include "exec-event.h"
#include "util.h"

/* NUL-separated words as a NULL-terminated vector pointing into buf; true if words were left over. */
static bool split_args(char *buf, size_t len, char **argv, size_t max) {
        size_t n = 0, i = 0;

        while (i < len && n < max - 1) {
                argv[n++] = buf + i;
                i += strnlen(buf + i, len - i) + 1;
        }
        argv[n] = NULL;
        return i < len;
}

static bool has_nul(const char *s, size_t size) {
        return memchr(s, 0, size) != NULL;
}

ExecEventType task_info_from_event(const void *data, size_t size, uint64_t ns_per_tick, ExecEventBuf *buf,
                                   ExecEvent *ret) {
        const struct latnice_event *ev = data;
        const char *exe, *slash;

        *ret = (ExecEvent) {};
        if (size < sizeof(struct latnice_exit_event) || ns_per_tick == 0)
                return EXEC_EVENT_INVALID;
        if (ev->type == LATNICE_EVENT_NOTICE)
                return ret->type = EXEC_EVENT_NOTICE;
        if (ev->type == LATNICE_EVENT_EXIT) {
                const struct latnice_exit_event *x = data;

                ret->pid = (pid_t) x->pid;
                ret->start_time = x->start_boottime / ns_per_tick;
                return ret->type = EXEC_EVENT_EXIT;
        }
        if ((ev->type != LATNICE_EVENT_EXEC && ev->type != LATNICE_EVENT_RENAME) ||
            size < sizeof(struct latnice_event) || ev->exe_len == 0 ||
            (size_t) ev->exe_len + ev->args_len > size - sizeof(struct latnice_event))
                return EXEC_EVENT_INVALID;
        exe = (const char *) (ev + 1);
        if (exe[ev->exe_len - 1] != 0 || !has_nul(ev->comm, sizeof(ev->comm)) ||
            !has_nul(ev->parent_comm, sizeof(ev->parent_comm)) || !has_nul(ev->exe_base, sizeof(ev->exe_base)))
                return EXEC_EVENT_INVALID;

        ret->pid = (pid_t) ev->pid;
        ret->tid = (pid_t) ev->tid;
        ret->start_time = ev->start_boottime / ns_per_tick;
        ret->parent_start_time = ev->parent_start_boottime / ns_per_tick;
        ret->cgroup_id = ev->cgroup_id;
        ret->ktime = ev->ktime;
        ret->task = (TaskInfo) {
                .pid = (pid_t) ev->pid,
                .ppid = (pid_t) ev->ppid,
                .uid = ev->uid,
                .gid = ev->gid,
                .comm = ev->comm,
                .parent_comm = ev->parent_comm[0] ? ev->parent_comm : NULL,
                .exe = exe,
                .exe_ino = ev->exe_ino,
                .exe_dev = ev->exe_dev,
        };

        /* The execve() path names the binary unless it went through a symlink, is relative or was cut. */
        slash = strrchr(exe, '/');
        ret->exe_exact = exe[0] == '/' && slash && strcmp(slash + 1, ev->exe_base) == 0 &&
                         !(ev->flags & LATNICE_EVENT_F_EXE_TRUNC);
        if (!ret->exe_exact) {
                if (exe[0] == '/' && slash) {
                        snprintf(buf->exe, sizeof(buf->exe), "%.*s/%s", (int) (slash - exe), exe, ev->exe_base);
                        ret->exe_guess = buf->exe;
                } else
                        ret->exe_guess = ev->exe_base;
        }

        if (ev->flags & LATNICE_EVENT_F_ARGS) {
                size_t len = ev->args_len < LATNICE_ARGS_LEN ? ev->args_len : LATNICE_ARGS_LEN;

                memcpy(buf->args, exe + ev->exe_len, len);
                buf->args[len] = 0;
                ret->task.argv_truncated = split_args(buf->args, len, buf->argv, ELEMENTSOF(buf->argv)) ||
                                           (ev->flags & LATNICE_EVENT_F_ARGS_TRUNC);
                ret->task.argv = buf->argv;
                ret->has_args = true;
                ret->args_len = len;
        }
        return ret->type = ev->type == LATNICE_EVENT_RENAME ? EXEC_EVENT_RENAME : EXEC_EVENT_EXEC;
}

RenameSwept rename_swept_from_pending(pid_t pid, const struct latnice_rename_pending *v) {
        RenameSwept w = { .pid = pid, .leader = v->leader > 0 };

        if (v->threads > 0) {
                uint64_t tid = v->tid_sum / v->threads;

                /* The sums wrap in a long storm of large tids: then a wrong "one thread" is as unlikely as two
                 * different tids that happen to balance; it would cost the other thread's rename, not more. */
                if (v->tid_sum % v->threads == 0 && tid > 0 && tid <= INT32_MAX &&
                    tid * tid * v->threads == v->tid_sq_sum)
                        w.tid = (pid_t) tid;
                else
                        w.threads = true;
        }
        if (!w.leader && w.tid == 0 && !w.threads)
                w.leader = w.threads = true; /* nothing counted (cannot be): decide everything */
        return w;
}
