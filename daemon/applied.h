/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What latniced set, per process: so a value somebody else set afterwards
 * is recognised (and left alone unless the rule says Override=yes), and so
 * restoring only touches values that are still ours. A -util module: the
 * table is plain memory, the checks read the thread (sched.c); no logging.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sched.h"

typedef struct AppliedProcess {
        pid_t pid;
        uint64_t start_time;   /* clock ticks since boot, /proc/PID/stat field 22 */
        uid_t uid;             /* the process's real uid when it was set: who may see this entry */
        int latency_nice;      /* what we set */
        uint64_t raw;          /* sched_raw_value() of what we set */
        int before;            /* latency nice the main thread had before us */
        uint64_t before_raw;   /* its raw value */
        char comm[16];
        char *rule;            /* "[Process name] file:line", or "unit NAME" / "manual" */
        char *rule_name;       /* the rule's section name, for D-Bus */
        bool via_unit;         /* from a unit rule's per-task fallback */
        bool inherit;          /* the rule lets children that exec other programs keep the value */
        bool manual;           /* set through SetLatencyNice: the caller's explicit choice, which wins
                                * over rules (also at its next exec) and is not undone when latniced stops */
        uid_t manual_uid;      /* who set it */
        bool foreground;       /* the foreground boost (manager-foreground.c): dropped, never adopted,
                                * after a restart */
        uint64_t exe_ino;      /* the binary it ran when it was set (TaskInfo.exe_ino/exe_dev), 0 if unknown */
        uint32_t exe_dev;
        uint32_t state_slot;   /* its record in the state file (state.c), STATE_SLOT_NONE if none */
        pid_t tgid;            /* 0: about a process; else a Thread= rule's value on one thread, pid (its tid)
                                * of process tgid; start_time, comm and before are the thread's */
} AppliedProcess;

#define STATE_SLOT_NONE UINT32_MAX

typedef struct AppliedTable AppliedTable;

AppliedTable *applied_table_new(void);
AppliedTable *applied_table_free(AppliedTable *t);
static inline void applied_table_freep(AppliedTable **t) {
        applied_table_free(*t);
}

/* Inserts or replaces (copies e, takes ownership of e->rule and e->rule_name:
 * on success they are set to NULL in e; on failure e is untouched and still
 * the caller's). Pointers from get/next stay valid until the next put/remove. */
int applied_table_put(AppliedTable *t, AppliedProcess *e);
AppliedProcess *applied_table_get(AppliedTable *t, pid_t pid);
/* The entry about this very process (pid and start time), if any; t may be NULL. */
AppliedProcess *applied_table_get_process(AppliedTable *t, pid_t pid, uint64_t start_time);
/* Removes and frees. */
void applied_table_remove(AppliedTable *t, pid_t pid);
size_t applied_table_size(const AppliedTable *t);
/* The entry of a thread of process tgid that carries raw (a Thread= rule's value), or NULL. */
const AppliedProcess *applied_table_find_thread(AppliedTable *t, pid_t tgid, uint64_t raw);
/* Iteration: *i starts at 0; returns NULL at the end. Do not put/remove while iterating. */
AppliedProcess *applied_table_next(AppliedTable *t, size_t *i);

/*
 * Is the value on the process's main thread still the one we set?
 * 1 ours, 0 changed by somebody else, -ESRCH gone or pid reused.
 */
int applied_is_ours(const SchedProbe *p, int proc_fd, const AppliedProcess *e);

/*
 * Who set the value on a process's main thread (GetTask's set_by, one of
 * LATNICE_SET_BY_*): e, the process's entry or NULL, if the value is still
 * ours (then *ret_ours, and e's rule names it); else "foreign" if the
 * thread has any value, "none" if it has the default.
 */
const char *applied_set_by(const SchedProbe *p, int proc_fd, const AppliedProcess *e, const ThreadSched *main_thread,
                           bool *ret_ours);

/*
 * Puts back the value the process had before us, on every thread that still
 * carries our value. Threads with foreign values are left alone. Returns
 * the number of threads restored, or -ESRCH.
 */
int applied_restore(const SchedProbe *p, int proc_fd, const AppliedProcess *e);

typedef struct ReapplyResult {
        unsigned n_kept;     /* threads that still carried our value */
        unsigned n_written;  /* threads back at the default: given our value again */
        unsigned n_foreign;  /* threads somebody else set meanwhile (or made realtime): left alone */
} ReapplyResult;

/*
 * Writes our value again to every thread of the process that is back at
 * the backend's default (a value lost while something else scheduled the
 * tasks, see manager-scx.c); threads with our value or a foreign one are
 * counted and left alone. 0, or -ESRCH if the process is gone.
 */
int applied_reapply(const SchedProbe *p, int proc_fd, const AppliedProcess *e, ReapplyResult *ret);
