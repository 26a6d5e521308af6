// SPDX-License-Identifier: (LGPL-2.1-or-later OR BSD-2-Clause)
/*
 * latniced's exec watcher. On every exec it decides in the kernel whether any
 * rule could care (the prefilter: LPM tries over command and binary names,
 * parent names, uid/gid and cgroup ancestors, loaded by the daemon from its
 * rules), and only then wakes user space with an event that carries all a
 * rule can match on. Rules the prefilter cannot express leave filter_active off:
 * the filter widens, it never drops a possible match.
 *
 * tp_btf/sched_process_exec is the preferred hook; the plain tracepoint is
 * the fallback for kernels whose BTF lacks what tp_btf needs (the daemon
 * switches with bpf_program__set_autoload()). Exit events are sent only for
 * processes the daemon tracks (it set their value), so it can forget them.
 *
 * A process that renames itself after exec (prctl(PR_SET_NAME), a write to
 * /proc/PID/comm: Wine renaming wine64-preloader to Game.exe) is reported
 * through the task_rename tracepoint, with the same record and the same
 * prefilter on the new name: a rename to a name no Comm= rule mentions never
 * wakes user space. Only the thread group leader's name is the process's;
 * a rename of another thread (pthread_setname_np) passes only for a Thread=
 * rule, by its new or old name, coalesced per process all the same.
 */
#include "kernel-types.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "latnice/event.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set before load. */
const volatile bool ns_translate = false;
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;

/* Set at run time through the skeleton's .bss, after every rule reload. */
/* Zero until the daemon has loaded the filter maps: everything passes. */
bool filter_active = false;
bool want_args = false;
/* Some process rule has Comm=: renames can change a decision. */
bool want_renames = false;
/* ... and one of them has a Comm= the comm maps cannot express: every rename of a leader passes. */
bool renames_all = false;
/* Some process rule has Thread=: renames of the other threads pass by the comm maps (which hold its names). */
bool want_thread_renames = false;
/* ... and one of them has a Thread= the comm maps cannot express: every rename of such a thread passes. */
bool thread_renames_all = false;
__u32 filter_flags = 0; /* LATNICE_FILTER_F_*: which maps have entries */
/* Set here when the ring buffer was full; user space reads and clears it without a syscall. */
bool lost_pending = false;
/*
 * An exit record went in without waking user space. The ring buffer wakes
 * the reader only for a record at the reader's position, so the next exec
 * record, which lies behind it, must force the wakeup.
 */
bool quiet_exit_queued = false;
/*
 * A rename record did not fit: its process is in renames_pending with unsent
 * set, and no record wakes the daemon for it. Cheaper than a rescan of every
 * process, which a loop of renames could otherwise force again and again.
 */
bool renames_lost_pending = false;
/* A fork did not fit into inherited: user space drops what is stale there (and says so). */
bool inherited_full_pending = false;
/* A fork was refused for its user's share of inherited: which user (the last one), for the daemon to say. */
bool inherited_share_pending = false;
__u32 inherited_share_uid = 0;

enum {
        COUNTER_EXECS,   /* every exec seen */
        COUNTER_EVENTS,  /* exec events sent */
        COUNTER_DROPPED, /* ring buffer full */
        COUNTER_RENAMES, /* every rename after exec of a thread group leader (of other threads too with Thread=) */
        COUNTER_RENAME_EVENTS, /* rename events sent */
        COUNTER_RENAMES_DROPPED, /* rename records that did not fit (decided from /proc at the next sweep) */
        COUNTER_RENAMES_COALESCED, /* renames of a process with one pending already: no record */
        COUNTER_FORKS_INHERITED, /* new processes that inherited a value of the daemon's: in inherited */
        COUNTER_FORKS_UNRECORDED, /* of these, not recorded: inherited was full */
        COUNTER_FORKS_OVER_SHARE, /* of these, not recorded: their user held LATNICE_INHERITED_PER_USER */
        _COUNTER_MAX,
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, _COUNTER_MAX);
        __type(key, __u32);
        __type(value, __u64);
} counters SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 64 * 1024); /* set by user space: EXEC_BPF_RINGBUF_DEFAULT */
} events SEC(".maps");

/* Where a record is built before it is copied into the ring buffer at its real length. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct latnice_event_buf);
} scratch SEC(".maps");

/*
 * The prefilter maps. Each is an array of one map, filled in by the daemon
 * with a map it created for the rule set at hand: sized to it (a 15,000-name
 * set gets a 15,000-entry hash map, a small one a small map), swapped in
 * whole at a reload. An empty slot (NULL) means no entries. The inner
 * definitions below are only templates: type, key, value and flags must
 * match, the size need not.
 */
#define NAME_MAP(inner_type, flags, keytype)                                 \
        struct {                                                             \
                __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);                    \
                __uint(max_entries, 1);                                      \
                __type(key, __u32);                                          \
                __array(values, struct {                                     \
                        __uint(type, inner_type);                            \
                        __uint(max_entries, 1);                              \
                        __uint(map_flags, flags);                            \
                        __uint(key_size, sizeof(keytype));                   \
                        __uint(value_size, sizeof(__u8));                    \
                });                                                          \
        }
/* Exact names; prefixes ("game*") in an LPM trie, which the kernel has only without preallocation. */
#define NAME_HASH(keytype) NAME_MAP(BPF_MAP_TYPE_HASH, 0, keytype)
#define NAME_TRIE(keytype) NAME_MAP(BPF_MAP_TYPE_LPM_TRIE, BPF_F_NO_PREALLOC, keytype)

NAME_HASH(struct latnice_name16) filter_comm SEC(".maps");
NAME_TRIE(struct latnice_comm_key) filter_comm_prefix SEC(".maps");
NAME_HASH(struct latnice_name32) filter_exe SEC(".maps");
NAME_TRIE(struct latnice_exe_key) filter_exe_prefix SEC(".maps");
NAME_HASH(struct latnice_name16) filter_parent SEC(".maps");
NAME_TRIE(struct latnice_comm_key) filter_parent_prefix SEC(".maps");
NAME_HASH(__u32) filter_uid SEC(".maps");
NAME_HASH(__u32) filter_gid SEC(".maps");
NAME_HASH(__u64) filter_cgroup SEC(".maps");
NAME_HASH(struct latnice_name32) filter_ancestor SEC(".maps");

/* Processes whose value the daemon set: their exit is reported. Key: tgid as the daemon sees it. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, LATNICE_TRACKED_MAX);
        __type(key, __u32);
        __type(value, __u64);
} tracked SEC(".maps");

/*
 * Renames coalesced per process: the first rename that passes the prefilter
 * makes the entry and sends a record; until the daemon's sweep (a few times a
 * second, not at realtime priority) takes the entry, further renames of the
 * process only count in it, and the sweep decides the process from /proc. So
 * a process renaming itself in a loop wakes the daemon a few times a second,
 * not once per rename. Key: tgid as the daemon sees it.
 */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, LATNICE_RENAMES_PENDING_MAX);
        __type(key, __u32);
        __type(value, struct latnice_rename_pending);
} renames_pending SEC(".maps");

/*
 * Processes that inherited a value through fork from one the daemon set, directly or through other
 * such processes (exec.bpf.c's fork hook), wherever they are in the tree now: the daemon resets them
 * when the value's reason ends (a foreground boost), or at a restore. They leave at exit; the daemon
 * drops those it reset or found gone. Allocated as used: empty, it costs nothing.
 */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, LATNICE_INHERITED_MAX);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, __u32);
        __type(value, struct latnice_inherited);
} inherited SEC(".maps");

/*
 * Each user's share of inherited (LATNICE_INHERITED_PER_USER): entries held, forks refused. Entries of
 * users who hold none any more stay until the daemon drops them (with the record's clean-up).
 */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, LATNICE_INHERITED_USERS_MAX);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, __u32);
        __type(value, struct latnice_inherited_user);
} inherited_users SEC(".maps");

static __always_inline void count(__u32 which) {
        __u64 *v = bpf_map_lookup_elem(&counters, &which);

        if (v)
                *v += 1;
}

/* The task's pid and tgid as the daemon sees them; false if outside its pid namespace. */
static __always_inline bool current_ids(__u32 *pid, __u32 *tgid) {
        if (ns_translate) {
                struct bpf_pidns_info ns = {};

                if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
                        return false;
                *pid = ns.pid;
                *tgid = ns.tgid;
                return true;
        }
        __u64 id = bpf_get_current_pid_tgid();
        *pid = (__u32) id;
        *tgid = id >> 32;
        return true;
}

static __always_inline void read_exe_base(struct task_struct *task, char *buf) {
        struct mm_struct *mm = BPF_CORE_READ(task, mm);
        const unsigned char *name;

        if (!mm)
                return;
        name = BPF_CORE_READ(mm, exe_file, f_path.dentry, d_name.name);
        if (name)
                bpf_probe_read_kernel_str(buf, LATNICE_EXE_BASE_LEN, name);
}

/* Is key in the map that the one-slot array outer holds? */
static __always_inline bool in_filter(void *outer, const void *key) {
        __u32 zero = 0;
        void *inner = bpf_map_lookup_elem(outer, &zero);

        return inner && bpf_map_lookup_elem(inner, key) != NULL;
}

/* A name, exactly (flag) or by one of its prefixes (prefix_flag). */
static __always_inline bool name16_in(__u32 flags, __u32 flag, __u32 prefix_flag, void *exact, void *prefix,
                                      const char *name) {
        if (flags & flag) {
                struct latnice_name16 key;

                __builtin_memcpy(key.name, name, LATNICE_COMM_LEN);
                if (in_filter(exact, &key))
                        return true;
        }
        if (flags & prefix_flag) {
                struct latnice_comm_key key = { .prefixlen = LATNICE_COMM_LEN * 8 };

                __builtin_memcpy(key.name, name, LATNICE_COMM_LEN);
                if (in_filter(prefix, &key))
                        return true;
        }
        return false;
}

/* The patched kernels of kernel/ carry the latency priority in the task. */
struct task_struct___latnice {
        int latency_prio;
} __attribute__((preserve_access_index));

/* Mainline's custom slice (EEVDF, Linux 6.12 on): what sched_setattr()'s sched_runtime set. */
struct sched_entity___slice {
        unsigned char custom_slice;
} __attribute__((preserve_access_index));

struct task_struct___slice {
        struct sched_entity___slice se;
} __attribute__((preserve_access_index));

/*
 * Does the task carry a value other than the default (the daemon's, or one
 * it inherited from a process the daemon set)? The task itself says so
 * cheaply: its cache lines are hot at exec and at exit. Kernels without
 * either field have no value latniced could set: say so with unknown.
 */
static __always_inline bool has_custom_value(struct task_struct *task, bool unknown) {
        struct task_struct___latnice *t = (void *) task;
        struct task_struct___slice *s = (void *) task;

        if (bpf_core_field_exists(t->latency_prio))
                return BPF_CORE_READ(t, latency_prio) != 20;
        if (bpf_core_field_exists(s->se.custom_slice))
                return BPF_CORE_READ(s, se.custom_slice) != 0;
        return unknown;
}

/*
 * Is the value the task carries one of the daemon's: it set the process (tracked), or the process
 * inherited it through fork from one it set (inherited, about this very process)? A value the task's
 * user set himself (any user may give their own tasks a custom slice) is none of the daemon's business:
 * it must not open the prefilter to all of that user's execs. tgid: as the daemon sees it.
 */
static __always_inline bool carries_our_value(struct task_struct *task, __u32 tgid) {
        struct latnice_inherited *v;

        if (!has_custom_value(task, false))
                return false;
        if (bpf_map_lookup_elem(&tracked, &tgid))
                return true;
        v = bpf_map_lookup_elem(&inherited, &tgid);
        return v && v->start_boottime == BPF_CORE_READ(task, group_leader, start_boottime);
}

/* Could any rule match this exec (of current)? Cheap checks first. */
static __always_inline bool prefilter(struct task_struct *task, const char *comm) {
        __u32 flags = filter_flags, pid, tgid;

        if (!filter_active)
                return true;
        /* A task that inherited a value of ours: the daemon resets it if it came from a rule without Inherit=yes. */
        if (has_custom_value(task, false) && current_ids(&pid, &tgid) && carries_our_value(task, tgid))
                return true;
        if (name16_in(flags, LATNICE_FILTER_F_COMM, LATNICE_FILTER_F_COMM_PREFIX, &filter_comm, &filter_comm_prefix,
                      comm))
                return true;
        if (flags & (LATNICE_FILTER_F_UID | LATNICE_FILTER_F_GID)) {
                __u64 ug = bpf_get_current_uid_gid();
                __u32 uid = (__u32) ug, gid = ug >> 32;

                if ((flags & LATNICE_FILTER_F_UID) && in_filter(&filter_uid, &uid))
                        return true;
                if ((flags & LATNICE_FILTER_F_GID) && in_filter(&filter_gid, &gid))
                        return true;
        }
        if (flags & (LATNICE_FILTER_F_EXE | LATNICE_FILTER_F_EXE_PREFIX)) {
                struct latnice_exe_key key = { .prefixlen = LATNICE_EXE_BASE_LEN * 8 };

                read_exe_base(task, key.name);
                if ((flags & LATNICE_FILTER_F_EXE) && in_filter(&filter_exe, key.name))
                        return true;
                if ((flags & LATNICE_FILTER_F_EXE_PREFIX) && in_filter(&filter_exe_prefix, &key))
                        return true;
        }
        if (flags & (LATNICE_FILTER_F_PARENT | LATNICE_FILTER_F_PARENT_PREFIX)) {
                char pcomm[LATNICE_COMM_LEN] = {};

                BPF_CORE_READ_STR_INTO(&pcomm, task, real_parent, comm);
                if (name16_in(flags, LATNICE_FILTER_F_PARENT, LATNICE_FILTER_F_PARENT_PREFIX, &filter_parent,
                              &filter_parent_prefix, pcomm))
                        return true;
        }
        if (flags & LATNICE_FILTER_F_ANCESTOR) {
                /* Ancestor=: each ancestor's command name and binary's file name, nearest first, bounded. */
                struct task_struct *a = BPF_CORE_READ(task, real_parent);

                for (int level = 0; level < LATNICE_ANCESTORS_MAX && a; level++) {
                        struct latnice_name32 key = {};
                        char c[LATNICE_COMM_LEN] = {};

                        if (BPF_CORE_READ(a, pid) == 0)
                                break; /* the idle task: above init */
                        BPF_CORE_READ_STR_INTO(&c, a, comm);
                        __builtin_memcpy(key.name, c, sizeof(c));
                        if (in_filter(&filter_ancestor, &key))
                                return true;
                        __builtin_memset(&key, 0, sizeof(key));
                        read_exe_base(a, key.name);
                        if (in_filter(&filter_ancestor, &key))
                                return true;
                        a = BPF_CORE_READ(a, real_parent);
                }
        }
        if (flags & LATNICE_FILTER_F_CGROUP) {
                /* A process in a unit's subtree: walk up from the root, a few levels deep. */
                for (int level = 1; level <= LATNICE_CGROUP_LEVELS; level++) {
                        __u64 id = bpf_get_current_ancestor_cgroup_id(level);

                        if (!id)
                                break;
                        if (in_filter(&filter_cgroup, &id))
                                return true;
                }
        }
        return false;
}

/*
 * Builds and sends the record about task. type: LATNICE_EVENT_EXEC (the
 * task is current, filename the execve() path) or LATNICE_EVENT_RENAME
 * (comm is the new name; the task need not be current when another process
 * wrote its /proc/PID/comm, and then its ids and argv cannot be read the
 * way current's are: the record goes without argv, user space reads them).
 */
static __always_inline int send_record(struct task_struct *task, __u32 type, const char *comm,
                                       const char *filename, bool is_current) {
        struct latnice_event_buf *b;
        struct latnice_event *e;
        __u32 pid, tgid, zero = 0, uid, gid;
        __u64 size, cgroup_id;
        long n;

        if (is_current) {
                __u64 ug = bpf_get_current_uid_gid();

                if (!current_ids(&pid, &tgid))
                        return 0;
                uid = (__u32) ug;
                gid = ug >> 32;
                cgroup_id = bpf_get_current_cgroup_id();
        } else {
                /* XXX: in a child pid namespace, only current's ids can be translated. */
                if (ns_translate)
                        return 0;
                pid = BPF_CORE_READ(task, pid);
                tgid = BPF_CORE_READ(task, tgid);
                uid = BPF_CORE_READ(task, cred, uid.val);
                gid = BPF_CORE_READ(task, cred, gid.val);
                cgroup_id = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
        }
        b = bpf_map_lookup_elem(&scratch, &zero);
        if (!b)
                return 0;
        e = &b->ev;

        e->type = type;
        e->flags = 0;
        e->pid = tgid;
        e->tid = pid;
        e->ppid = ns_translate ? 0 : BPF_CORE_READ(task, real_parent, tgid);
        e->uid = uid;
        e->gid = gid;
        e->start_boottime = BPF_CORE_READ(task, start_boottime);
        e->parent_start_boottime = BPF_CORE_READ(task, real_parent, start_boottime);
        e->cgroup_id = cgroup_id;
        e->ktime = bpf_ktime_get_ns();
        e->exe_ino = 0;
        e->exe_dev = 0;
        e->reserved = 0;
        __builtin_memcpy(e->comm, comm, LATNICE_COMM_LEN);
        e->parent_comm[0] = 0;
        BPF_CORE_READ_STR_INTO(&e->parent_comm, task, real_parent, comm);
        e->exe_base[0] = 0;
        read_exe_base(task, e->exe_base);
        {
                /* The file the kernel runs, whatever path or mount namespace led to it. */
                struct inode *inode = BPF_CORE_READ(task, mm, exe_file, f_inode);

                if (inode) {
                        e->exe_ino = BPF_CORE_READ(inode, i_ino);
                        e->exe_dev = BPF_CORE_READ(inode, i_sb, s_dev);
                }
        }

        n = filename ? bpf_probe_read_kernel_str(b->data, LATNICE_EXE_LEN, filename) : 0;
        if (n <= 0) {
                b->data[0] = 0;
                n = 1;
        } else if (n == LATNICE_EXE_LEN)
                e->flags |= LATNICE_EVENT_F_EXE_TRUNC;
        e->exe_len = (__u16) n;
        e->args_len = 0;

        /*
         * The path's length is 1..LATNICE_EXE_LEN: masked with twice that, so
         * that a path cut at exactly LATNICE_EXE_LEN bytes keeps its length
         * (masking with LATNICE_EXE_LEN - 1 made it 0: the record went out
         * without its path, and user space dropped it as malformed).
         */
        __u32 exe_len = e->exe_len & (2 * LATNICE_EXE_LEN - 1);
        if (exe_len > LATNICE_EXE_LEN)
                exe_len = LATNICE_EXE_LEN;

        /* argv only when a Cmdline= rule needs it: most records are a few hundred bytes less. */
        if (want_args && is_current) {
                struct mm_struct *mm = BPF_CORE_READ(task, mm);
                unsigned long start = BPF_CORE_READ(mm, arg_start), end = BPF_CORE_READ(mm, arg_end);
                unsigned long len = end - start;

                if (end > start) {
                        if (len > LATNICE_ARGS_LEN) {
                                len = LATNICE_ARGS_LEN;
                                e->flags |= LATNICE_EVENT_F_ARGS_TRUNC;
                        }
                        len &= 2 * LATNICE_ARGS_LEN - 1;
                        if (len > LATNICE_ARGS_LEN)
                                len = LATNICE_ARGS_LEN;
                        if (bpf_probe_read_user(b->data + exe_len, len, (void *) start) == 0) {
                                e->args_len = (__u16) len;
                                e->flags |= LATNICE_EVENT_F_ARGS;
                        }
                }
        }

        size = sizeof(struct latnice_event) + exe_len + (e->args_len & (2 * LATNICE_ARGS_LEN - 1));
        if (size > sizeof(struct latnice_event_buf))
                size = sizeof(struct latnice_event_buf);
        __u64 wake = 0;
        if (quiet_exit_queued) {
                quiet_exit_queued = false;
                wake = BPF_RB_FORCE_WAKEUP;
        }
        if (bpf_ringbuf_output(&events, b, size, wake) < 0) {
                if (type == LATNICE_EVENT_RENAME) {
                        /* The daemon reads the process's name itself at its next sweep. */
                        struct latnice_rename_pending *rp = bpf_map_lookup_elem(&renames_pending, &tgid);

                        if (rp)
                                __sync_fetch_and_add(&rp->unsent, 1);
                        renames_lost_pending = true;
                        count(COUNTER_RENAMES_DROPPED);
                        return 0;
                }
                count(COUNTER_DROPPED);
                lost_pending = true;
                return 0;
        }
        count(type == LATNICE_EVENT_RENAME ? COUNTER_RENAME_EVENTS : COUNTER_EVENTS);
        return 0;
}

static __always_inline int handle_exec(struct task_struct *task, const char *filename) {
        char comm[LATNICE_COMM_LEN] = {};

        count(COUNTER_EXECS);
        bpf_get_current_comm(comm, sizeof(comm));
        if (!prefilter(task, comm))
                return 0;
        return send_record(task, LATNICE_EVENT_EXEC, comm, filename, true);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) {
        return handle_exec(p, BPF_CORE_READ(bprm, filename));
}

SEC("tracepoint/sched/sched_process_exec")
int exec_tp(struct trace_event_raw_sched_process_exec *ctx) {
        unsigned short off = ctx->__data_loc_filename & 0xFFFF;

        return handle_exec((struct task_struct *) bpf_get_current_task(), (const char *) ctx + off);
}

/*
 * A fork was not recorded (*pending: the record full, or its user's share): wake the daemon to read the
 * flag and say so, once until it has (nothing else may wake it soon: the prefilter keeps execs here).
 */
static __always_inline void fork_unrecorded(bool *pending) {
        struct latnice_exit_event *e;

        if (*pending)
                return;
        *pending = true;
        e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e)
                return;
        e->type = LATNICE_EVENT_NOTICE;
        e->flags = 0;
        e->pid = 0;
        e->tid = 0;
        e->start_boottime = 0;
        bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/* The entry of inherited about pid goes, and with it what it took of its user's share. */
static __always_inline void inherited_drop(__u32 pid) {
        struct latnice_inherited *v = bpf_map_lookup_elem(&inherited, &pid);
        struct latnice_inherited_user *u;
        __u32 uid;

        if (!v)
                return;
        uid = v->uid;
        /* Only the one whose delete succeeds gives the share back: an exit and the daemon may race. */
        if (bpf_map_delete_elem(&inherited, &pid) < 0)
                return;
        u = bpf_map_lookup_elem(&inherited_users, &uid);
        if (u && u->held > 0)
                __sync_fetch_and_add(&u->held, -1);
}

static __always_inline int handle_exit(struct task_struct *task) {
        struct latnice_exit_event *e;
        __u32 pid, tgid;
        __u64 flags = BPF_RB_NO_WAKEUP;

        /* Most exits skip the hash lookup: the daemon only tracks tasks it gave a value. */
        if (!has_custom_value(task, true))
                return 0;
        /*
         * The process ends with its last thread, which need not be the
         * leader (a main thread may pthread_exit() early): do_exit() counts
         * down signal->live before this tracepoint.
         */
        if (BPF_CORE_READ(task, signal, live.counter) != 0)
                return 0;
        if (!current_ids(&pid, &tgid))
                return 0;
        inherited_drop(tgid);
        if (!bpf_map_lookup_elem(&tracked, &tgid))
                return 0;
        bpf_map_delete_elem(&tracked, &tgid);
        e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                count(COUNTER_DROPPED);
                return 0;
        }
        e->type = LATNICE_EVENT_EXIT;
        e->flags = 0;
        e->pid = tgid;
        e->tid = pid;
        e->start_boottime = BPF_CORE_READ(task, group_leader, start_boottime);
        /* Nobody waits for an exit: it rides along with the next wakeup, unless the buffer fills up. */
        if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4)
                flags = BPF_RB_FORCE_WAKEUP;
        else
                quiet_exit_queued = true;
        bpf_ringbuf_submit(e, flags);
        return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *p) {
        return handle_exit(p);
}

SEC("tracepoint/sched/sched_process_exit")
int exit_tp(void *ctx) {
        return handle_exit((struct task_struct *) bpf_get_current_task());
}

static __always_inline bool same_name16(const char *a, const char *b) {
        const __u64 *x = (const void *) a, *y = (const void *) b;

        return x[0] == y[0] && x[1] == y[1];
}

/* Whose rename a pending entry counts: the process's own name, or which thread (struct latnice_rename_pending). */
static __always_inline void note_renamed(struct latnice_rename_pending *p, bool leader, __u32 tid) {
        if (leader) {
                __sync_fetch_and_add(&p->leader, 1);
                return;
        }
        __sync_fetch_and_add(&p->threads, 1);
        __sync_fetch_and_add(&p->tid_sum, (__u64) tid);
        __sync_fetch_and_add(&p->tid_sq_sum, (__u64) tid * tid);
}

/* A rename while the process has one pending (p; NULL: it went meanwhile): counted there, not sent. */
static __always_inline int rename_coalesced(struct latnice_rename_pending *p, bool leader, __u32 tid) {
        if (p) {
                note_renamed(p, leader, tid);
                __sync_fetch_and_add(&p->unsent, 1);
        }
        count(COUNTER_RENAMES_COALESCED);
        return 0;
}

/* The task's tgid as the daemon sees it (0 if not current and the daemon is in another pid namespace). */
static __always_inline __u32 task_tgid(struct task_struct *task, bool is_current) {
        __u32 pid, tgid;

        if (is_current)
                return current_ids(&pid, &tgid) ? tgid : 0;
        return ns_translate ? 0 : BPF_CORE_READ(task, tgid);
}

/* bprm_execve() sets it for the time of an exec; read as a flavor in case a kernel drops it. */
struct task_struct___execve {
        unsigned int in_execve : 1;
} __attribute__((preserve_access_index));

/*
 * A rename after exec. The exec's own rename (to the binary's name, before
 * sched_process_exec) is the exec event's business; renames of other
 * threads do not rename the process, only Thread= rules care; a rename to
 * the same name changes nothing. What is left passes the prefilter on its
 * new name or its old one, or (the leader) because the process carries a
 * value (which may have to go now). A thread's value left with its old
 * name: that name is in the maps.
 */
static __always_inline int handle_rename(struct task_struct *task, const char *newcomm, bool is_current) {
        struct task_struct___execve *tx = (void *) task;
        char comm[LATNICE_COMM_LEN] __attribute__((aligned(8))) = {};
        char old[LATNICE_COMM_LEN] __attribute__((aligned(8))) = {};
        struct latnice_rename_pending fresh = {}, *pending;
        __u32 flags = filter_flags, pid, tgid;
        bool leader = BPF_CORE_READ(task, pid) == BPF_CORE_READ(task, tgid);

        if (leader ? !want_renames : !want_thread_renames)
                return 0;
        if (bpf_core_field_exists(tx->in_execve) && BPF_CORE_READ_BITFIELD_PROBED(tx, in_execve))
                return 0;
        if (bpf_probe_read_kernel_str(comm, sizeof(comm), newcomm) <= 0)
                return 0;
        BPF_CORE_READ_STR_INTO(&old, task, comm);
        if (same_name16(comm, old))
                return 0;
        count(COUNTER_RENAMES);
        /*
         * The old name counts too: a process that renames itself right after
         * exec may do so before the daemon applied the value its old name
         * got it, so that it carries no value yet.
         */
        if (filter_active && !(leader ? renames_all : thread_renames_all) &&
            !(leader && has_custom_value(task, false) && carries_our_value(task, task_tgid(task, is_current))) &&
            !name16_in(flags, LATNICE_FILTER_F_COMM, LATNICE_FILTER_F_COMM_PREFIX, &filter_comm, &filter_comm_prefix,
                       comm) &&
            !name16_in(flags, LATNICE_FILTER_F_COMM, LATNICE_FILTER_F_COMM_PREFIX, &filter_comm, &filter_comm_prefix,
                       old))
                return 0;

        /* One record per process until the daemon's sweep: the rest only count. */
        if (is_current) {
                if (!current_ids(&pid, &tgid))
                        return 0;
        } else {
                if (ns_translate)
                        return 0; /* send_record() cannot name it either */
                pid = BPF_CORE_READ(task, pid);
                tgid = BPF_CORE_READ(task, tgid);
        }
        pending = bpf_map_lookup_elem(&renames_pending, &tgid);
        if (pending)
                return rename_coalesced(pending, leader, pid);
        /* Whose it is, also for a record that does not fit (then only the sweep decides it). */
        fresh.start_boottime = BPF_CORE_READ(task, group_leader, start_boottime);
        note_renamed(&fresh, leader, pid);
        if (bpf_map_update_elem(&renames_pending, &tgid, &fresh, BPF_NOEXIST) < 0) {
                /* Another CPU made it between the lookup and here: that one's record goes. */
                return rename_coalesced(bpf_map_lookup_elem(&renames_pending, &tgid), leader, pid);
        }
        return send_record(task, LATNICE_EVENT_RENAME, comm, NULL, is_current);
}

SEC("tp_btf/task_rename")
int BPF_PROG(rename_btf, struct task_struct *task, const char *comm) {
        return handle_rename(task, comm, (void *) task == (void *) bpf_get_current_task());
}

/* The plain tracepoint names the task by pid only: a rename of current (prctl) is all it can follow. */
SEC("tracepoint/task/task_rename")
int rename_tp(struct trace_event_raw_task_rename *ctx) {
        struct task_struct *task = (struct task_struct *) bpf_get_current_task();

        if (ctx->pid != BPF_CORE_READ(task, pid))
                return 0;
        return handle_rename(task, ctx->newcomm, true);
}

/* How deep pid namespaces nest that the fork hook looks through (the kernel allows 32). */
#define PIDNS_LEVELS_MAX 8

/* The number of task (a process's leader) in the daemon's pid namespace; 0 if it has none there. */
static __always_inline __u32 leader_tgid(struct task_struct *task) {
        struct pid *pid;
        unsigned int level;

        if (!ns_translate)
                return BPF_CORE_READ(task, tgid);
        pid = BPF_CORE_READ(task, thread_pid);
        level = BPF_CORE_READ(pid, level);
        for (unsigned int i = 0; i < PIDNS_LEVELS_MAX && i <= level; i++) {
                struct upid up;

                if (bpf_core_read(&up, sizeof(up), &pid->numbers[i]) < 0)
                        return 0;
                if (BPF_CORE_READ(up.ns, ns.inum) == pidns_ino)
                        return (__u32) up.nr;
        }
        return 0;
}

/*
 * A new process inherits its parent's value through fork, and a subshell that forks and exits leaves
 * it where no walk of the tree finds it. Most forks stop at the first check: the child carries no value
 * (its parent has none, or SCHED_RESET_ON_FORK took it); new threads are the process's own. Only then
 * one lookup: the parent is a process the daemon set (tracked), or one that inherited from it.
 */
static __always_inline int handle_fork(struct task_struct *parent, struct task_struct *child) {
        struct latnice_inherited v = {}, *from;
        struct latnice_inherited_user *user;
        __u32 pid, tgid, child_tgid;
        __u64 parent_start;

        if (!has_custom_value(child, false))
                return 0;
        if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid))
                return 0;
        if (!current_ids(&pid, &tgid))
                return 0;
        parent_start = BPF_CORE_READ(parent, group_leader, start_boottime);
        if (bpf_map_lookup_elem(&tracked, &tgid)) {
                v.origin = tgid;
                v.origin_start_boottime = parent_start;
        } else {
                from = bpf_map_lookup_elem(&inherited, &tgid);
                if (!from || from->start_boottime != parent_start)
                        return 0; /* not from us, or about an earlier process with the parent's pid */
                v.origin = from->origin;
                v.origin_start_boottime = from->origin_start_boottime;
        }
        child_tgid = leader_tgid(child);
        if (!child_tgid)
                return 0;
        v.start_boottime = BPF_CORE_READ(child, start_boottime);
        v.uid = (__u32) bpf_get_current_uid_gid();
        count(COUNTER_FORKS_INHERITED);
        user = bpf_map_lookup_elem(&inherited_users, &v.uid);
        if (!user) {
                struct latnice_inherited_user fresh = {};

                bpf_map_update_elem(&inherited_users, &v.uid, &fresh, BPF_NOEXIST);
                user = bpf_map_lookup_elem(&inherited_users, &v.uid);
                if (!user)
                        goto full;
        }
        /* Forks on several CPUs at once may each pass the check: the share is exceeded by at most that many. */
        if (user->held >= LATNICE_INHERITED_PER_USER) {
                __sync_fetch_and_add(&user->refused, 1);
                count(COUNTER_FORKS_OVER_SHARE);
                inherited_share_uid = v.uid;
                fork_unrecorded(&inherited_share_pending);
                return 0;
        }
        /* An entry about an earlier process with the child's pid (its exit went unseen): it goes first. */
        inherited_drop(child_tgid);
        if (bpf_map_update_elem(&inherited, &child_tgid, &v, BPF_NOEXIST) < 0)
                goto full;
        __sync_fetch_and_add(&user->held, 1);
        return 0;
full:
        count(COUNTER_FORKS_UNRECORDED);
        fork_unrecorded(&inherited_full_pending);
        return 0;
}

/*
 * The daemon's way to drop an entry of inherited (a process it reset, or found gone): here, so that the
 * user's share is given back exactly once, whoever (an exit, the daemon) gets there first.
 */
SEC("syscall")
int inherited_forget(struct latnice_inherited_forget_args *args) {
        inherited_drop(args->pid);
        return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child) {
        return handle_fork(parent, child);
}

/* The plain tracepoint names the child by pid only: the raw one hands over both tasks, without BTF. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child) {
        return handle_fork(parent, child);
}
