/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading what rules match on from /proc. A -util module: the proc root
 * comes in as an fd so tests can hand in a fake tree; no logging, no
 * globals.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "match.h"

#define PROC_PF_KTHREAD 0x00200000U

typedef struct ProcStat {
        char comm[16];
        char state;
        pid_t ppid;
        unsigned flags;
        long num_threads;
        uint64_t start_time; /* clock ticks since boot, as in /proc/PID/stat */
} ProcStat;

typedef enum ProcWhat {
        PROC_EXE = 1 << 0,
        PROC_CMDLINE = 1 << 1,
        PROC_PARENT = 1 << 2,
        PROC_IDS = 1 << 3,
        PROC_CGROUP = 1 << 4,
        PROC_NAMES = 1 << 5, /* resolve uid/gid to names (NSS) */
        PROC_ANCESTORS = 1 << 6, /* the chain of parents, for Ancestor= */
        PROC_ALL = (1 << 7) - 1,
        /* The main thread's own stat (task/PID/stat): the same start time, flags and thread count, without
         * the CPU times summed over every thread (1 ms for a process of 10,000 threads, 11 us for one). */
        PROC_MAIN_STAT = 1 << 7,
} ProcWhat;

typedef struct ProcTask {
        pid_t pid;
        ProcStat stat;
        uid_t uid;
        gid_t gid;
        char *exe;
        uint64_t exe_ino, exe_dev; /* 0 unless the exe fallback said (s_dev encoding) */
        char **argv;
        char parent_comm[16];
        char *cgroup;
        char *user;
        char *group;
        TaskAncestor *ancestors;
        size_t n_ancestors;
} ProcTask;

/*
 * Where /proc/PID/exe is EACCES (another user's process, and no CAP_SYS_PTRACE): who else can say
 * what the process executes. start_time: the process's, in ticks, to tell a reused pid. Fills path
 * (NUL-terminated) and the file's inode and device (0 if unknown); negative errno if it cannot.
 */
typedef int (*ProcExeFallback)(pid_t pid, uint64_t start_time, char *path, size_t size, uint64_t *ret_ino,
                               uint64_t *ret_dev, void *userdata);
/* For every read of this process (one daemon, one /proc): NULL turns it off. */
void proc_set_exe_fallback(ProcExeFallback f, void *userdata);

/* Parses one /proc/PID/stat (or /proc/PID/task/TID/stat) line. */
int proc_stat_parse(const char *line, ProcStat *ret);

/* dir_fd: an open /proc (or fake root); path relative to it, e.g. "123/stat" or "123/task/124/stat". */
int proc_stat_read(int proc_fd, const char *path, ProcStat *ret);

/* The same of a process (tid 0) or of one of its threads: /proc/PID/stat, /proc/PID/task/TID/stat. */
int proc_stat_read_pid(int proc_fd, pid_t pid, pid_t tid, ProcStat *ret);
/* Is pid still the process that started at start_time (and not a later one with its pid)? */
bool proc_pid_is(int proc_fd, pid_t pid, uint64_t start_time);
/* Has the process a pidfd pins exited? */
bool proc_pidfd_exited(int pidfd);
/* proc_pid_is() for a process pinned by pidfd: it has not exited, and pid is still it (not reused). */
bool proc_pidfd_is(int proc_fd, int pidfd, pid_t pid, uint64_t start_time);

typedef struct ProcIds {
        pid_t tgid; /* the process of which pid is a thread (pid itself for a process) */
        uid_t ruid, euid;
        gid_t rgid;
} ProcIds;
/* Thread group, real and effective uid and real gid from /proc/PID/status; -ESRCH if it is gone. */
int proc_ids_read(int proc_fd, pid_t pid, ProcIds *ret);

/*
 * The ancestors of a process whose parent is ppid and which started at
 * start_time, nearest first, at most max of them. A parent never starts
 * after its child: an older-looking "parent" is a later process that got
 * a dead parent's pid, and the chain ends there; a pid seen twice (a loop)
 * ends it too. The chain ends at a process without a parent (pid 1, or the
 * namespace's init) or one /proc no longer has.
 */
int proc_ancestors_read(int proc_fd, pid_t ppid, uint64_t start_time, size_t max, TaskAncestor **ret,
                        size_t *ret_n);
void task_ancestors_free(TaskAncestor *a, size_t n);

int proc_task_read(int proc_fd, pid_t pid, ProcWhat what, ProcTask *ret);
void proc_task_done(ProcTask *t);
void proc_task_to_info(const ProcTask *p, TaskInfo *ret);
/* Lets Exe= paths in t be checked against the file the task really runs (its inode, or /proc/PID/exe
 * through *proc_fd, which must outlive t). */
void proc_task_set_exe_check(TaskInfo *t, const int *proc_fd);

/* Picks the unified (0::) path, else the name=systemd one, from /proc/PID/cgroup contents. */
int proc_cgroup_parse(const char *contents, char **ret);

/* Reads the thread ids of a process; returns the count, or a negative errno. */
int proc_list_tasks(int proc_fd, pid_t pid, pid_t **ret);

/* Reads all process ids; returns the count, or a negative errno. */
int proc_list_pids(int proc_fd, pid_t **ret);

/* uid/gid to names through NSS; NULL if unknown. */
char *uid_to_name(uid_t uid);
char *gid_to_name(gid_t gid);
