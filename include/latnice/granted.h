/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The values latniced granted, as scx_latnice (scheduler/) reads them: a
 * BPF hash map pinned in bpffs, one entry per entry of latniced's applied
 * table (a process, or one thread of a Thread= rule). On a mainline kernel
 * anybody may give their own tasks a custom slice (sched_setattr's
 * sched_runtime), so the slice a task carries says nothing about whether
 * latniced or its rules allowed it: scx_latnice gives a task the value of
 * its entry here and 0 to every task without one, whatever slice it set
 * itself. (On the patched kernels, lowering task_struct.latency_prio needs
 * CAP_SYS_NICE already: scx_latnice reads that field there instead.)
 *
 * Who does what: scx_latnice creates and pins the map when it loads, or
 * reuses the one already pinned (so a restart of the scheduler keeps what
 * latniced wrote). latniced never creates it: it opens the pin at start
 * and whenever sched_ext changes (a scheduler that pinned a new map is
 * enabled then), makes it equal to its applied table, and then writes
 * each change as it makes it. A clean stop of latniced removes the
 * entries of the values it restores; after a crash the entries stay, as
 * the values stay on the tasks, until the next latniced takes them over.
 *
 * A task is found by its pid and its start time, as /proc/PID/stat's
 * field 22 gives it (clock ticks since boot): a reused pid is another key.
 * The scheduler looks up the thread itself (pid = its tid), then its
 * process (pid = tgid, start time of the thread group leader), where only
 * a process entry counts.
 *
 * XXX: a process that a granted process forks without an exec carries the
 * value on the fair class (fork copies the slice) but has no entry here, so
 * it runs at 0 under scx_latnice; latniced's record of forks
 * (manager-inherited.c) is not written into this map.
 *
 * XXX: pids are those of latniced's pid namespace and the scheduler reads
 * the initial namespace's: a latniced in a pid namespace of its own (a
 * container) grants nothing to a scheduler on the host.
 *
 * Kernel types: from vmlinux.h in BPF, <linux/types.h> in user space.
 */
#pragma once

#if !defined(__bpf__) && !defined(__VMLINUX_H__)
#include <linux/types.h>
#endif

/* scx_latnice pins the map as LATNICE_GRANTED_PIN_DIR/<map name> (libbpf's LIBBPF_PIN_BY_NAME). */
#define LATNICE_BPFFS "/sys/fs/bpf"
#define LATNICE_GRANTED_PIN_DIR LATNICE_BPFFS "/latnice"
#define LATNICE_GRANTED_MAP_NAME "granted"
#define LATNICE_GRANTED_PIN LATNICE_GRANTED_PIN_DIR "/" LATNICE_GRANTED_MAP_NAME

/* Entries: more than the default pid_max (32768 on small machines); a full map refuses a new value
 * (latniced says so; that task then runs at 0 under scx_latnice). */
#define LATNICE_GRANTED_MAX 131072

struct latnice_granted_key {
        __u32 pid;        /* a process's pid (tgid), or a thread's tid for a thread entry */
        __u32 zero;       /* always 0: a hash map compares every byte of the key */
        __u64 start_time; /* clock ticks since boot of that process or thread */
};

/* The entry is about this one thread (a Thread= rule), not about every thread of a process. */
#define LATNICE_GRANTED_F_THREAD 0x1

struct latnice_granted_value {
        __s32 latency_nice; /* -20..19 */
        __u32 flags;        /* LATNICE_GRANTED_F_* */
};
