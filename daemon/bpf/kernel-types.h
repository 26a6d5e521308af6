/* SPDX-License-Identifier: (LGPL-2.1-or-later OR BSD-2-Clause) */
/*
 * The kernel as latniced's BPF programs see it: only the types, members and
 * constants they use, written here instead of a vmlinux.h dumped from the
 * build host's BTF, so that the build needs no BTF and gives the same objects
 * on every machine.
 *
 * Every kernel-internal struct is marked preserve_access_index: clang records
 * each access as a CO-RE relocation by name, and libbpf moves it to the
 * running kernel's layout at load. So a struct here lists the members read,
 * in any order, with the kernel's types (an access needs the member's size),
 * not the kernel's layout. Members that sit in an anonymous struct or union
 * of the kernel's are listed flat: libbpf looks through those.
 *
 * What goes here is what every kernel latniced supports has (Linux 6.1 on);
 * a member some kernel lacks is a flavor (task_struct___latnice in
 * exec.bpf.c), read only under bpf_core_field_exists(). The constants are
 * uAPI (linux/bpf.h), whose values never change. tools/check-bpf-types holds
 * this file to a kernel's BTF: every struct and member here exists there,
 * with a compatible type, and every constant has the kernel's value.
 */
#pragma once

/* ---- base types (the BPF target's: long is 64 bits) --------------------------------------------- */

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;

typedef _Bool bool;
enum {
        false = 0,
        true = 1,
};

typedef int pid_t;
typedef __u32 uid_t;
typedef __u32 gid_t;
typedef __u32 dev_t;

/* ---- uAPI constants (linux/bpf.h) ------------------------------------------------------------- */

enum bpf_map_type {
        BPF_MAP_TYPE_HASH = 1,
        BPF_MAP_TYPE_PERCPU_ARRAY = 6,
        BPF_MAP_TYPE_LRU_HASH = 9,
        BPF_MAP_TYPE_LPM_TRIE = 11,
        BPF_MAP_TYPE_ARRAY_OF_MAPS = 12,
        BPF_MAP_TYPE_RINGBUF = 27,
        BPF_MAP_TYPE_TASK_STORAGE = 29,
};

/* bpf_map_update_elem() flags */
enum latnice_bpf_update_flags {
        BPF_ANY = 0,
        BPF_NOEXIST = 1,
};

/* map_flags */
enum latnice_bpf_map_flags {
        BPF_F_NO_PREALLOC = 1,
};

/* bpf_ringbuf_output(), _submit() flags */
enum latnice_bpf_ringbuf_flags {
        BPF_RB_NO_WAKEUP = 1,
        BPF_RB_FORCE_WAKEUP = 2,
};

/* bpf_ringbuf_query() */
enum latnice_bpf_ringbuf_query {
        BPF_RB_AVAIL_DATA = 0,
        BPF_RB_RING_SIZE = 1,
};

/* bpf_task_storage_get() flags */
enum latnice_bpf_storage_flags {
        BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};

/* bpf_get_ns_current_pid_tgid()'s result: uAPI, filled in by size, so no relocation. */
struct bpf_pidns_info {
        __u32 pid;
        __u32 tgid;
};

/* ---- kernel types ------------------------------------------------------------------------------ */

#define LATNICE_CORE __attribute__((preserve_access_index))

struct seq_file;

typedef struct {
        int counter;
} atomic_t;

typedef struct {
        uid_t val;
} kuid_t;

typedef struct {
        gid_t val;
} kgid_t;

struct qstr {
        const unsigned char *name;
} LATNICE_CORE;

struct dentry {
        struct dentry *d_parent;
        struct qstr d_name;
} LATNICE_CORE;

struct vfsmount {
        struct dentry *mnt_root;
} LATNICE_CORE;

/* fs/mount.h: a vfsmount is the member mnt of its struct mount. */
struct mount {
        struct mount *mnt_parent;
        struct dentry *mnt_mountpoint;
        struct vfsmount mnt;
} LATNICE_CORE;

struct path {
        struct vfsmount *mnt;
        struct dentry *dentry;
} LATNICE_CORE;

struct super_block {
        dev_t s_dev;
} LATNICE_CORE;

struct inode {
        unsigned long i_ino;
        struct super_block *i_sb;
} LATNICE_CORE;

struct file {
        struct path f_path;
        struct inode *f_inode;
} LATNICE_CORE;

struct mm_struct {
        struct file *exe_file;
        unsigned long arg_start;
        unsigned long arg_end;
} LATNICE_CORE;

struct cred {
        kuid_t uid;
        kgid_t gid;
} LATNICE_CORE;

struct kernfs_node {
        u64 id;
} LATNICE_CORE;

struct cgroup {
        struct kernfs_node *kn;
} LATNICE_CORE;

struct css_set {
        struct cgroup *dfl_cgrp;
} LATNICE_CORE;

struct signal_struct {
        atomic_t live;
} LATNICE_CORE;

/* A pid as the pid namespaces see it: the fork hook translates a task's tgid into the daemon's. */
struct ns_common {
        unsigned int inum;
} LATNICE_CORE;

struct pid_namespace {
        struct ns_common ns;
} LATNICE_CORE;

struct upid {
        int nr;
        struct pid_namespace *ns;
} LATNICE_CORE;

struct pid {
        unsigned int level;
        struct upid numbers[1]; /* level + 1 of them; [1] before Linux 6.5, a flexible array after */
} LATNICE_CORE;

struct task_struct {
        unsigned int __state; /* Linux 5.14 on; stats.bpf.c keeps a flavor for state */
        pid_t pid;
        pid_t tgid;
        struct task_struct *real_parent;
        struct task_struct *group_leader;
        struct pid *thread_pid;
        u64 start_boottime;
        const struct cred *cred;
        char comm[16];
        struct signal_struct *signal;
        struct mm_struct *mm;
        struct css_set *cgroups;
} LATNICE_CORE;

struct linux_binprm {
        const char *filename;
} LATNICE_CORE;

/* The plain tracepoints' records (what the tracepoints' format files describe). */
struct trace_event_raw_sched_process_exec {
        u32 __data_loc_filename;
} LATNICE_CORE;

struct trace_event_raw_task_rename {
        pid_t pid;
        char newcomm[16];
} LATNICE_CORE;

/* iter/task's context */
struct bpf_iter_meta {
        struct seq_file *seq;
} LATNICE_CORE;

struct bpf_iter__task {
        struct bpf_iter_meta *meta;
        struct task_struct *task;
} LATNICE_CORE;
