/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Deciding and applying: which value a process gets (a SetLatencyNice
 * choice, the first process rule, a unit rule, or none), setting it,
 * resetting values children inherited from a process we set, and keeping
 * the applied table and the state file in step with what runs.
 */
#pragma once

#include "authz.h"
#include "manager.h"
#include "proc.h"

typedef struct ApplyRequest {
        int latency_nice;
        ThreadsMode threads;
        bool override;
        const char *ref;       /* "[Process x] file:line", for logs and D-Bus */
        const char *rule_name; /* the rule's section name */
        bool via_unit;         /* a unit rule's per-task fallback */
        bool inherit;          /* Inherit=yes: children that exec other programs keep it */
        uint64_t parent_start; /* fresh exec: the parent's start time as the event saw it (0: ask /proc) */
        bool foreground;       /* the foreground boost (manager-foreground.c) */
} ApplyRequest;

/* The request a rule makes; the rule's reference is formatted into ref_buf. */
ApplyRequest apply_request_from_rule(const Rule *rule, bool via_unit, char *ref_buf, size_t ref_size);

/*
 * Sets a process's value and records it (applied table, exit tracking, the
 * Applied signal, a log line). A value somebody else set stays unless
 * q->override. Returns 1 if applied, 0 if left alone or gone, <0 on error.
 */
int manager_apply(Manager *m, const TaskInfo *t, uint64_t start_time, const ApplyRequest *q, bool fresh_exec);

/*
 * The entry of the process latniced set whose value raw the process pid
 * carries through fork (a child of a rule with Inherit=yes, say), as an
 * exec would find it; NULL if the value is not from latniced, or the
 * process is gone.
 */
const AppliedProcess *manager_value_origin(Manager *m, pid_t pid, uint64_t raw);

/*
 * One decision for one process. fresh_exec: the exec just happened, so its
 * value is inherited, not chosen for this program. parent_start: the
 * parent's start time as the exec event saw it (0: ask /proc).
 */
int manager_decide(Manager *m, const TaskInfo *t, uint64_t start_time, uint64_t parent_start, bool fresh_exec);
/*
 * Reads what the rules need from /proc and decides. ret_comm (16 bytes, or NULL): the name the
 * decision was made on, from the same read (a process may rename itself at any moment).
 */
int manager_decide_pid_comm(Manager *m, pid_t pid, bool fresh_exec, char *ret_comm);
static inline int manager_decide_pid(Manager *m, pid_t pid, bool fresh_exec) {
        return manager_decide_pid_comm(m, pid, fresh_exec, NULL);
}
/* Decides the given processes (a unit's subtree) as bulk work; skip_applied: only those we have not set. */
int manager_decide_pids(Manager *m, const pid_t *pids, size_t n, bool skip_applied);

/* SetLatencyNice's request: an explicit choice for one process, pinned by its pidfd. */
typedef struct ManualRequest {
        pid_t pid;
        int pidfd;
        uint64_t start_time;
        uid_t uid;          /* the process's real uid */
        const char *comm;
        int latency_nice;
        bool may_lower;     /* authorized to lower (root or polkit): else raise only, thread by thread */
        uid_t by;           /* the caller */
} ManualRequest;

typedef struct ManualResult {
        AuthzSetOutcome outcome;
        bool exited;        /* the process exited (or its pid was reused) while its value was set */
        SchedSetResult set; /* what the walk over the threads did */
} ManualResult;

/*
 * Sets q's value on every thread of the process and, if any thread took
 * it, records it as an explicit choice (rules leave it alone, the exit
 * restore too), logs it and emits Applied. Returns 0 and what happened in
 * *ret, or a negative errno when no thread could be looked at (-ESRCH:
 * gone).
 */
int manager_set_manual(Manager *m, const ManualRequest *q, ManualResult *ret);

/* Drops a process from the table and the state file; untrack: stop its exit reports from BPF too. */
/* Inserts or replaces an entry (the table takes its strings) and keeps the state file in step. */
int manager_record(Manager *m, AppliedProcess *n);
/* Drops the dead from the table once it has doubled (later, as bulk work). */
void manager_prune(Manager *m);
/* What /proc must say about a process for the rules in place, and the exe check for a TaskInfo read so. */
ProcWhat manager_proc_what(const Manager *m);
void manager_task_fill_exe(Manager *m, const ProcTask *p, TaskInfo *t);

void manager_forget_full(Manager *m, pid_t pid, bool untrack);
static inline void manager_forget(Manager *m, pid_t pid) {
        manager_forget_full(m, pid, true);
}
