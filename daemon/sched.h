/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scheduler side: which of the three ways to say "latency nice" this
 * kernel has (probed, never guessed from the version), and applying a value
 * to threads and processes. A -util module: it makes system calls, reads
 * /proc through the fd handed in and starts a scratch thread to probe, but
 * never logs and keeps no globals. The mapping itself is in sched-map.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "latnice/uapi.h"
#include "rules.h"
#include "sched-map.h"

typedef struct SchedProbe {
        Backend backend;
        uint64_t base_slice_ns; /* default slice (sched_getattr of a plain task), eevdf-slice only */
        char reason[256];       /* why this backend, in words for the user */
} SchedProbe;

/*
 * Decides the backend: BTF (btf_path, normally /sys/kernel/btf/vmlinux) shows
 * a latency field in struct task_struct and the uAPI round-trips on a scratch
 * thread -> latency-nice; else a custom slice set on a scratch thread reads
 * back -> eevdf-slice; else none. Never from the version string, never from
 * flag 0x80 acceptance alone. Always fills ret (none with a reason on trouble).
 */
void sched_probe(const char *btf_path, SchedProbe *ret);

/* > 0 if the BTF at path has a latency_nice/latency_prio member in struct task_struct, 0 if not, < 0 errno. */
int sched_btf_has_latency_field(const char *btf_path);

typedef struct ThreadSched {
        struct latnice_sched_attr attr; /* as read */
        int latency_nice;               /* in latency-nice terms on every backend */
        bool realtime;                  /* FIFO, RR, DEADLINE (or others we leave alone) */
} ThreadSched;

/* Reads one thread. -ESRCH if gone. */
int sched_thread_get(const SchedProbe *p, pid_t tid, ThreadSched *ret);

/*
 * Sets one thread's value, keeping policy, priority and nice (KEEP_POLICY |
 * KEEP_PARAMS on latency-nice; read-modify-write of sched_runtime on
 * eevdf-slice). Returns -EBUSY for realtime/deadline threads (left alone),
 * -ESRCH if gone, -EPERM/-EACCES if not allowed, -EOPNOTSUPP on backend none.
 * ret_before (optional) receives the thread's state before the change.
 */
int sched_thread_set(const SchedProbe *p, pid_t tid, int latency_nice, ThreadSched *ret_before);
/* The same with a raw value (sched_raw_value()/sched_thread_raw() terms), e.g.
 * to put back a slice that is not on the latency-nice grid. */
int sched_thread_set_raw(const SchedProbe *p, pid_t tid, uint64_t raw, ThreadSched *ret_before);

/* Raw value a backend writes for a latency nice, to detect later foreign changes:
 * eevdf-slice: the slice in ns, 0 = default slice; latency-nice: ln + 20. */
uint64_t sched_raw_value(const SchedProbe *p, int latency_nice);
/* Raw value currently in a ThreadSched (the default slice reads as 0; 0 for realtime on eevdf-slice). */
uint64_t sched_thread_raw(const SchedProbe *p, const ThreadSched *t);
/* raw is the backend's "no value set": the latency nice backend's prio 20 (latency nice 0), eevdf-slice's 0
 * (no custom slice); raw 0 on the latency nice backend is -20, a value. */
bool sched_raw_is_default(const SchedProbe *p, uint64_t raw);
/* The thread carries a value of this backend: not realtime and not the default. */
bool sched_thread_has_value(const SchedProbe *p, const ThreadSched *t);

typedef struct ApplyResult {
        unsigned n_threads;  /* threads seen */
        unsigned n_applied;  /* threads now at the value */
        unsigned n_realtime; /* left alone: realtime/deadline policy */
        unsigned n_foreign;  /* left alone: someone else set a value (Override=no) */
        unsigned n_gone;     /* exited while we worked */
        unsigned n_failed;   /* other errors; first_error has the first */
        int first_error;     /* negative errno */
        ThreadSched main_before; /* the main thread before the change (when it was written) */
} ApplyResult;

/*
 * Applies to a process: its main thread and (THREADS_ALL) every other thread
 * in /proc/PID/task, re-reading the list until no new thread appears.
 * start_time (clock ticks, as in /proc/PID/stat; 0 = don't check) names the
 * process the caller meant: if the pid now belongs to another process,
 * nothing is changed and -ESRCH is returned. Returns 0 if at least the
 * process was handled (see ret for per-thread outcomes), -ESRCH if it is
 * gone, other negative errno if nothing could be applied.
 *
 * fresh_exec: the caller saw the exec a moment ago, so the process almost
 * surely has one thread: set it first, then read /proc/PID/stat once
 * (start time check and thread count) and list threads only if there are
 * more. Threads created after the set inherit the value. If the start time
 * does not match after the set, the old value is put back and -ESRCH
 * returned.
 *
 * Kernel threads are refused with -EPERM; -EINVAL for a value out of
 * range, -EOPNOTSUPP on backend none. n_foreign is left to the caller
 * (Override= is a rule's business).
 */
int sched_apply_process(const SchedProbe *p, int proc_fd, pid_t pid, uint64_t start_time, int latency_nice,
                        ThreadsMode mode, bool fresh_exec, ApplyResult *ret);

/*
 * Calls f for every thread in /proc/PID/task (pid_dir_fd: an open /proc/PID),
 * except the tids in skip, re-listing until a listing shows nothing new: a
 * thread made during the walk by a thread not yet visited is still visited.
 * f returning < 0 stops the walk with that value. -EAGAIN if threads kept
 * appearing for too many rounds, -ESRCH if the process is gone.
 */
typedef int (*SchedThreadFunc)(pid_t tid, void *userdata);
int sched_walk_threads(int pid_dir_fd, const pid_t *skip, size_t n_skip, SchedThreadFunc f, void *userdata);

/* What SetLatencyNice did to the threads of a process. */
typedef struct SchedSetResult {
        unsigned n_threads, n_applied, n_refused, n_realtime;
        int first_error;         /* of a thread that failed for another reason than exiting */
        ThreadSched main_before; /* the main thread's, before */
} SchedSetResult;

/*
 * Writes latency_nice to every thread of pid; without may_lower only to the
 * threads it does not lower (authz_raise_only_ok()), decided per thread as
 * it is written: a thread may change meanwhile. An error only when no
 * thread could be looked at.
 */
int sched_set_threads(const SchedProbe *p, int proc_fd, pid_t pid, int value, bool may_lower, SchedSetResult *ret);

/* The values of pid's threads that are not realtime (does a call lower any of them?). */
int sched_thread_values(const SchedProbe *p, int proc_fd, pid_t pid, int **ret, size_t *ret_n);
