/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record latniced's BPF program sends through its ring buffer, and the
 * keys of its prefilter maps. Shared by daemon/bpf/exec.bpf.c and user space:
 * an event carries everything a rule can match on, because a short-lived
 * process is gone before /proc could be read.
 */
#pragma once

#ifndef __bpf__ /* BPF programs have them from daemon/bpf/kernel-types.h */
#include <linux/types.h>
#endif

#define LATNICE_COMM_LEN 16
#define LATNICE_EXE_LEN 1024  /* the execve() path kept in a record, with its NUL (powers of two: */
#define LATNICE_EXE_BASE_LEN 32
#define LATNICE_ARGS_LEN 2048 /* the verifier bounds offsets with masks) */

enum latnice_event_type {
        LATNICE_EVENT_EXEC = 1,
        LATNICE_EVENT_EXIT = 2,
        LATNICE_EVENT_RENAME = 3, /* a struct latnice_event: comm is the new name, no execve() path */
        LATNICE_EVENT_NOTICE = 4, /* a struct latnice_exit_event, nothing else: read the flags of .bss */
};

enum latnice_event_flags {
        LATNICE_EVENT_F_ARGS = 1 << 0,       /* args[] holds NUL-separated argv words */
        LATNICE_EVENT_F_ARGS_TRUNC = 1 << 1, /* argv was longer than LATNICE_ARGS_LEN */
        LATNICE_EVENT_F_EXE_TRUNC = 1 << 2,
};

/*
 * An exec record is as long as what it carries: the fixed part, then right
 * after it the execve() path (exe_len bytes with its NUL) and, when a
 * Cmdline= rule needs them, the argv words (args_len bytes, NUL-separated).
 * Most records are under 200 bytes, so the ring buffer holds many.
 */
struct latnice_event {
        __u32 type;
        __u32 flags;
        __u32 pid;  /* thread group id, in latniced's pid namespace */
        __u32 tid;
        __u32 ppid; /* 0 when latniced runs in a child pid namespace */
        __u32 uid;
        __u32 gid;
        __u16 exe_len;
        __u16 args_len;
        __u64 start_boottime;        /* ns since boot: /proc/PID/stat field 22 * (1e9 / USER_HZ) */
        __u64 parent_start_boottime; /* the same of the parent: a reused parent pid is another process */
        __u64 cgroup_id;             /* cgroup v2 id (inode of its directory) */
        __u64 ktime;                 /* bpf_ktime_get_ns() when the exec finished */
        __u64 exe_ino;               /* the binary that runs (mm->exe_file): inode ... */
        __u32 exe_dev;               /* ... and its file system's kernel dev_t (MAJOR << 20 | MINOR) */
        __u32 reserved;
        char comm[LATNICE_COMM_LEN];
        char parent_comm[LATNICE_COMM_LEN];
        char exe_base[LATNICE_EXE_BASE_LEN]; /* file name of the binary that runs */
        /* followed by exe_len + args_len bytes of data */
};

/* The largest record: what the BPF side builds it in. */
struct latnice_event_buf {
        struct latnice_event ev;
        char data[LATNICE_EXE_LEN + LATNICE_ARGS_LEN];
};

/* Sent when a process the daemon tracks exits. Starts like latnice_event. */
struct latnice_exit_event {
        __u32 type; /* LATNICE_EVENT_EXIT */
        __u32 flags;
        __u32 pid;
        __u32 tid;
        __u64 start_boottime;
};

/* Prefilter keys: LPM tries over names, so exact names and "prefix*" globs both fit. */
struct latnice_comm_key {
        __u32 prefixlen; /* in bits */
        char name[LATNICE_COMM_LEN];
};

struct latnice_exe_key {
        __u32 prefixlen;
        char name[LATNICE_EXE_BASE_LEN];
};

/* Which prefilter maps have entries (the BPF program's filter_flags). */
enum latnice_filter_flags {
        LATNICE_FILTER_F_COMM = 1 << 0,        /* exact command names */
        LATNICE_FILTER_F_EXE = 1 << 1,         /* exact binary names */
        LATNICE_FILTER_F_PARENT = 1 << 2,      /* exact parent names */
        LATNICE_FILTER_F_UID = 1 << 3,
        LATNICE_FILTER_F_GID = 1 << 4,
        LATNICE_FILTER_F_CGROUP = 1 << 5,
        LATNICE_FILTER_F_COMM_PREFIX = 1 << 6,
        LATNICE_FILTER_F_EXE_PREFIX = 1 << 7,
        LATNICE_FILTER_F_PARENT_PREFIX = 1 << 8,
        LATNICE_FILTER_F_ANCESTOR = 1 << 9,    /* exact names of an ancestor's comm or binary (latnice_name32) */
};

/*
 * Exact names are looked up in hash maps, keyed by the NUL-padded name;
 * prefixes in LPM tries (struct latnice_comm_key, latnice_exe_key).
 */
struct latnice_name16 {
        char name[LATNICE_COMM_LEN];
};

struct latnice_name32 {
        char name[LATNICE_EXE_BASE_LEN];
};

#define LATNICE_CGROUP_LEVELS 8
/* Ancestor= looks this many levels up (the kernel side's prefilter and user space alike). */
#define LATNICE_ANCESTORS_MAX 32
#define LATNICE_TRACKED_MAX 65536
/*
 * Processes with a rename the daemon has not swept yet (exec.bpf.c's renames_pending): one record per
 * process until then, later renames only counted. An LRU map: past this many renaming processes the
 * oldest entry goes, and a rename counted there is decided at the process's next rename or exec.
 */
#define LATNICE_RENAMES_PENDING_MAX 4096

/*
 * Processes that carry a value through fork from one the daemon set (exec.bpf.c's inherited map), so
 * that the end of a foreground boost and a restore find them after they left the tree (a subshell that
 * forked them and exited). Bounded: past this many, a fork is counted, not recorded (see latniced(8)).
 */
#define LATNICE_INHERITED_MAX 16384
/*
 * One user's share of it (exec.bpf.c's inherited_users, by real uid at fork): a user who holds any of
 * the daemon's values cannot fill the record with long-lived forks and leave everybody else's forks
 * unrecorded. Past it, that user's forks are counted and refused (the daemon names the bound).
 */
#define LATNICE_INHERITED_PER_USER 1024
/* Users that hold entries of inherited at once (inherited_users). */
#define LATNICE_INHERITED_USERS_MAX 4096

/* A value of inherited; key: the child's tgid as the daemon sees it. */
struct latnice_inherited {
        __u32 origin;                /* the process the daemon set, its tgid: where the value came from */
        __u32 uid;                   /* whose share of the record it takes (real uid at fork) */
        __u64 origin_start_boottime; /* its start (ns since boot): a later process with its pid is not it */
        __u64 start_boottime;        /* the child's own start */
};

/* A value of inherited_users; key: a real uid. */
struct latnice_inherited_user {
        __s64 held;    /* entries of inherited it holds */
        __u64 refused; /* forks not recorded: it held its share */
};

/* What the daemon hands exec.bpf.c's inherited_forget program (bpf_prog_test_run). */
struct latnice_inherited_forget_args {
        __u32 pid;
};

/* What taskexe.bpf.c's iterator writes per process. */
struct latnice_task_exe {
        __u32 tgid;
        __u32 path_len;       /* with its NUL; 0: no path (d_path failed) */
        __u64 start_boottime; /* ns, as the exec record's */
        __u64 ino;            /* of the file it executes */
        __u64 dev;            /* its super block's s_dev (the kernel's MKDEV) */
        char path[LATNICE_EXE_LEN];
};

/* A value of renames_pending. */
struct latnice_rename_pending {
        __u64 start_boottime; /* of the process, as in its record */
        __u64 unsent;         /* renames after the record (or a record that did not fit): decide from /proc */
        /* Whose renames these were (counted with atomic adds only): the main thread's, the process's own
         * name; and those of other threads (Thread=), with their tids summed and squared, so that the
         * sweep can tell one thread (sq_sum == n * (sum / n)^2) from several (a walk over them). */
        __u64 leader;
        __u64 threads;
        __u64 tid_sum;
        __u64 tid_sq_sum;
};
