/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Decoding the BPF ring buffer's records (include/latnice/event.h) into
 * what the rules match on. Pure: no I/O, no logging, no globals. What a
 * record cannot say (a path behind a symlink, a command line longer than
 * the record, names, the cgroup path) the caller reads from /proc while the
 * process runs (manager-sources.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "latnice/event.h"
#include "match.h"

typedef enum ExecEventType {
        EXEC_EVENT_INVALID, /* too short, unknown type, lengths beyond the record, strings without their NUL */
        EXEC_EVENT_EXEC,
        EXEC_EVENT_EXIT,
        EXEC_EVENT_RENAME, /* a process renamed itself after exec: an EXEC record without the execve() path */
        EXEC_EVENT_NOTICE, /* the kernel side set a flag (a fork not recorded): nothing to decide */
} ExecEventType;

/* argv words a record's arguments are split into, the last one NULL. */
#define EXEC_EVENT_ARGV_MAX 65

/* Where decoded strings live that are not in the record itself. */
typedef struct ExecEventBuf {
        char exe[LATNICE_EXE_LEN + LATNICE_EXE_BASE_LEN + 2];
        char args[LATNICE_ARGS_LEN + 1];
        char *argv[EXEC_EVENT_ARGV_MAX];
} ExecEventBuf;

typedef struct ExecEvent {
        ExecEventType type;
        pid_t pid;
        pid_t tid;                  /* the thread: of a RENAME, the one renamed (pid for the process's own name) */
        uint64_t start_time;        /* clock ticks since boot, as in /proc/PID/stat */
        /* EXEC and RENAME only: */
        uint64_t parent_start_time; /* the same of the parent */
        uint64_t cgroup_id;
        uint64_t ktime;             /* CLOCK_MONOTONIC ns when the exec finished */
        TaskInfo task;              /* strings point into the record and the ExecEventBuf */
        bool exe_exact;             /* task.exe, the execve() path, names the binary that runs */
        const char *exe_guess;      /* else: the binary's path as far as the record tells */
        bool has_args;              /* the record carries argv words (task.argv) */
        size_t args_len;            /* how many bytes of them */
} ExecEvent;

/*
 * A process with renames after its record (exec.bpf.c's renames_pending):
 * its own (leader), of one thread (tid, for Thread= rules), or of more
 * threads (threads: only a walk over them tells which).
 */
typedef struct RenameSwept {
        pid_t pid;
        pid_t tid;
        bool leader;
        bool threads;
} RenameSwept;

/* What an entry of renames_pending counted: one thread if its tids' sums say every tid was the same. */
RenameSwept rename_swept_from_pending(pid_t pid, const struct latnice_rename_pending *v);

/*
 * Decodes one record of size bytes; the record and buf must outlive what
 * *ret points into. ns_per_tick converts the kernel's boot times to clock
 * ticks. task.argv_truncated says the record could not hold every word.
 */
ExecEventType task_info_from_event(const void *data, size_t size, uint64_t ns_per_tick, ExecEventBuf *buf,
                                   ExecEvent *ret);
