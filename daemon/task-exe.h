/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The file a running process executes, from the kernel (daemon/bpf/taskexe.bpf.c), for processes
 * whose /proc/PID/exe latniced may not read (another user's, without CAP_SYS_PTRACE). No logging:
 * failures come back as a negative errno.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct TaskExe TaskExe;

typedef struct TaskExeInfo {
        uint64_t start_boottime; /* ns: tells a reused pid */
        uint64_t ino;
        uint64_t dev;            /* the kernel's s_dev encoding, as in exec records */
} TaskExeInfo;

/* Loads the iterator; -EOPNOTSUPP and the like where the kernel cannot run it. */
int task_exe_new(TaskExe **ret);
TaskExe *task_exe_free(TaskExe *x);

/*
 * pid's executable: its path into path (NUL-terminated; empty if the kernel could not make one) and
 * its identity. -ESRCH: no such process (or a kernel thread), negative errno otherwise.
 */
int task_exe_read(TaskExe *x, pid_t pid, char *path, size_t size, TaskExeInfo *ret);
