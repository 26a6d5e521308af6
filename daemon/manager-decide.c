/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Deciding and applying (see manager-decide.h). The applied table
 * remembers what we set, so that a value somebody else set is respected,
 * a restore only touches our own values, and a reused pid is noticed by
 * its start time.
 */

#include "latnice/journal.h"
#include "log.h"
#include "manager-decide.h"
#include "manager-granted.h"
#include "manager-inherited.h"
#include "manager-stats.h"
#include "proc.h"
#include "state.h"
#include "util.h"

/* Writes e's record to the state file (a new one, or its own slot). */
static void manager_state_save(Manager *m, AppliedProcess *e) {
        StateRecord rec;

        if (!m->state)
                return;
        state_record_from_applied(e, &rec);
        if (e->state_slot == STATE_SLOT_NONE)
                e->state_slot = state_file_add(m->state, &rec);
        else
                state_file_update(m->state, e->state_slot, &rec);
}

/* Drops a process from the table and the state file; untrack: it is tracked by the BPF side still. */
void manager_forget_full(Manager *m, pid_t pid, bool untrack) {
        AppliedProcess *e = applied_table_get(m->applied, pid);

        if (!e)
                return;
        if (m->state && e->state_slot != STATE_SLOT_NONE) {
                uint32_t slot = e->state_slot;
                pid_t moved = state_file_remove(m->state, slot);
                AppliedProcess *me = moved > 0 ? applied_table_get(m->applied, moved) : NULL;

                if (me)
                        me->state_slot = slot;
        }
        if (e->tgid > 0) {
                m->n_thread_entries--;
                untrack = false; /* the kernel side tracks processes only */
        }
        manager_granted_remove(m, e);
        applied_table_remove(m->applied, pid);
        manager_stats_on_forget(m, pid);
        if (untrack && m->bpf)
                (void) exec_bpf_track(m->bpf, pid, false);
}

int manager_record(Manager *m, AppliedProcess *n) {
        AppliedProcess *old = applied_table_get(m->applied, n->pid), *e;
        bool was_thread = old && old->tgid > 0;
        int r;

        n->state_slot = old ? old->state_slot : STATE_SLOT_NONE;
        /* A reused pid: the scheduler's key of the old process goes (the entry itself is replaced). */
        if (old && old->start_time != n->start_time)
                manager_granted_remove(m, old);
        r = applied_table_put(m->applied, n);
        if (r < 0)
                return r;
        e = applied_table_get(m->applied, n->pid);
        m->n_thread_entries += (e->tgid > 0) - was_thread;
        manager_state_save(m, e);
        manager_granted_put(m, e);
        manager_stats_on_record(m, e);
        /*
         * A thread's entry goes at a prune; its process is tracked all the same, so that the kernel side
         * records the forks that carry the thread's value and lets their execs through (Inherit=no).
         */
        if (m->bpf && (!old || e->tgid > 0))
                (void) exec_bpf_track(m->bpf, e->tgid > 0 ? e->tgid : n->pid, true);
        return 0;
}

/* Records a value set through SetLatencyNice (an explicit choice: rules leave it alone). */
static int manager_record_manual(Manager *m, pid_t pid, uint64_t start_time, uid_t uid, const char *comm, int value,
                                 const ThreadSched *before, uid_t by) {
        AppliedProcess *e = applied_table_get(m->applied, pid);
        AppliedProcess n = {
                .pid = pid,
                .start_time = start_time,
                .uid = uid,
                .latency_nice = value,
                .raw = sched_raw_value(&m->probe, value),
                .before = before ? before->latency_nice : 0,
                .before_raw = before ? sched_thread_raw(&m->probe, before) : 0,
                .rule_name = strdup("manual"),
                .inherit = true, /* like nice: what somebody asked for a program, its children keep */
                .manual = true,
                .manual_uid = by,
        };
        int r;

        if (e && e->start_time == start_time) {
                /* Still what it had before any of us. */
                n.before = e->before;
                n.before_raw = e->before_raw;
        }
        snprintf(n.comm, sizeof(n.comm), "%s", comm ?: "");
        if (asprintf(&n.rule, "SetLatencyNice by uid %u", (unsigned) by) < 0)
                n.rule = NULL;
        if (!n.rule || !n.rule_name) {
                free(n.rule);
                free(n.rule_name);
                return log_oom();
        }
        r = manager_record(m, &n);
        if (r < 0) {
                free(n.rule);
                free(n.rule_name);
                return log_oom();
        }
        manager_prune(m);
        return 0;
}

int manager_set_manual(Manager *m, const ManualRequest *q, ManualResult *ret) {
        ManualResult res = {};
        int r;

        r = sched_set_threads(&m->probe, m->proc_fd, q->pid, q->latency_nice, q->may_lower, &res.set);
        if (r < 0)
                return r;
        res.exited = !proc_pidfd_is(m->proc_fd, q->pidfd, q->pid, q->start_time);
        res.outcome = authz_set_outcome(res.set.n_applied, res.set.n_refused, res.set.first_error);
        *ret = res;
        if (res.exited || res.outcome != AUTHZ_SET_APPLIED)
                return 0;

        (void) manager_record_manual(m, q->pid, q->start_time, q->uid, q->comm, q->latency_nice,
                                     &res.set.main_before, q->by);
        log_decision(LOG_INFO, LATNICE_MESSAGE_MANUAL, q->pid, NULL, q->latency_nice,
                     "%s[%d]: LatencyNice=%d set on the bus by uid %u (%u of %u threads%s).", q->comm, (int) q->pid,
                     q->latency_nice, (unsigned) q->by, res.set.n_applied, res.set.n_threads,
                     res.set.n_refused ? ", others left alone: lowering them needs authorization" : "");
        if (m->hooks.applied)
                m->hooks.applied(m, q->pid, q->comm, q->latency_nice, "manual");
        return 0;
}

static void manager_restore(Manager *m, AppliedProcess *e, const char *why) {
        int r;

        r = applied_restore(&m->probe, m->proc_fd, e);
        if (r == -ESRCH)
                log_debug("%s[%d] is gone, nothing to restore.", e->comm, (int) e->pid);
        else if (r < 0)
                log_warning_errno(r, "Failed to restore %s[%d]: %m", e->comm, (int) e->pid);
        else if (r == 0)
                log_info("%s[%d]: value changed by somebody else, leaving it (%s).", e->comm, (int) e->pid, why);
        else
                log_decision(LOG_INFO, LATNICE_MESSAGE_RESTORED, e->pid, NULL, e->before,
                             "%s[%d]: restored LatencyNice=%d (%s).", e->comm, (int) e->pid, e->before, why);
}

/*
 * Exit events keep the table small, but an exit is not reported for a
 * process whose value went back to the default (the BPF side skips those),
 * nor while events are lost. Whenever the table has doubled, drop the dead:
 * amortized constant work per apply, done later as bulk work (a walk over
 * 100,000 entries must not run at SCHED_FIFO).
 */
static int manager_on_prune(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        _cleanup_(freep) pid_t *gone = NULL;
        size_t i = 0, n_gone = 0, size = applied_table_size(m->applied);
        AppliedProcess *e;

        manager_leave_realtime(m);
        gone = calloc(size + 1, sizeof(pid_t));
        if (!gone)
                return 0;
        while ((e = applied_table_next(m->applied, &i)))
                if (!proc_pid_is(m->proc_fd, e->pid, e->start_time))
                        gone[n_gone++] = e->pid;
        for (size_t j = 0; j < n_gone; j++)
                manager_forget(m, gone[j]);
        size = applied_table_size(m->applied);
        m->prune_at = size * 2 > 256 ? size * 2 : 256;
        log_debug("Pruned %zu exited processes, %zu left.", n_gone, size);
        return 0;
}

void manager_prune(Manager *m) {
        int r;

        if (applied_table_size(m->applied) < m->prune_at)
                return;
        if (!m->prune_defer) {
                r = sd_event_add_defer(m->event, &m->prune_defer, manager_on_prune, m);
                if (r < 0)
                        return (void) log_warning_errno(r, "Failed to schedule pruning the applied table: %m");
                (void) sd_event_source_set_description(m->prune_defer, "prune");
                (void) sd_event_source_set_priority(m->prune_defer, SD_EVENT_PRIORITY_IDLE);
        }
        (void) sd_event_source_set_enabled(m->prune_defer, SD_EVENT_ONESHOT);
}

/* The same value from another rule (a re-exec into another program, a reload): only the bookkeeping changes. */
static int manager_update_metadata(Manager *m, AppliedProcess *e, const ApplyRequest *q) {
        char *ref, *name;

        if (streq_ptr(e->rule, q->ref) && streq_ptr(e->rule_name, q->rule_name) && e->inherit == q->inherit)
                return 0;
        ref = strdup(q->ref);
        name = strdup(q->rule_name);
        if (!ref || !name) {
                free(ref);
                free(name);
                return log_oom();
        }
        free(e->rule);
        free(e->rule_name);
        e->rule = ref;
        e->rule_name = name;
        e->inherit = q->inherit;
        manager_state_save(m, e);
        manager_stats_on_record(m, e);
        return 0;
}

ApplyRequest apply_request_from_rule(const Rule *rule, bool via_unit, char *ref_buf, size_t ref_size) {
        rule_format_ref(rule, ref_buf, ref_size);
        return (ApplyRequest) {
                .latency_nice = rule->latency_nice,
                .threads = rule->threads,
                .override = rule->override,
                .inherit = rule->inherit,
                .ref = ref_buf,
                .rule_name = rule->name,
                .via_unit = via_unit,
        };
}

static AppliedProcess *manager_applied_parent(Manager *m, const TaskInfo *t, uint64_t parent_start);

#define EXEC_ANCESTORS_MAX 8 /* how far up an inherited value of ours is looked for */

/*
 * Where the value raw a process carries at its exec came from, if latniced set it: the entry of its
 * parent; or, when the parent is not in the table (a shell kept by Inherit=yes, a subshell that forked
 * and exited, as in "(exec prog &)"), of the process the kernel saw it inherit from through fork
 * (manager-inherited.h), else of the nearest ancestor in the table, a few levels up, when every process
 * between carries raw too. NULL: not from us (or it cannot be told).
 */
/* The entry of a thread of process pid that carries raw (a Thread= value), if any thread has one. */
static const AppliedProcess *thread_source(Manager *m, pid_t pid, uint64_t raw) {
        return m->n_thread_entries > 0 ? applied_table_find_thread(m->applied, pid, raw) : NULL;
}

static const AppliedProcess *applied_source(Manager *m, const TaskInfo *t, uint64_t parent_start, uint64_t raw) {
        const AppliedProcess *a = manager_applied_parent(m, t, parent_start);
        ProcStat st;
        pid_t pid;

        if (a)
                /* Forked by the process, or by one of its threads with a Thread= value. */
                return a->raw == raw ? a : thread_source(m, a->pid, raw);
        a = thread_source(m, t->ppid, raw);
        if (a)
                return a;
        /* Rare (a value, and a parent we did not set): climb while the value is the same. */
        if (proc_stat_read_pid(m->proc_fd, t->pid, 0, &st) < 0)
                return NULL;
        /* The subshell between may be gone and the process reparented: the kernel's record of the fork
         * still knows. */
        a = manager_inherited_source(m, t->pid, st.start_time);
        if (a)
                return a->raw == raw ? a : NULL;
        pid = st.ppid;
        for (unsigned i = 0; i < EXEC_ANCESTORS_MAX && pid > 1; i++) {
                ThreadSched up;

                if (proc_stat_read_pid(m->proc_fd, pid, 0, &st) < 0 || sched_thread_get(&m->probe, pid, &up) < 0)
                        return NULL;
                a = applied_table_get(m->applied, pid);
                if (a && a->start_time == st.start_time)
                        return a->raw == raw ? a : NULL;
                if (sched_thread_raw(&m->probe, &up) != raw)
                        return NULL; /* the value began between that ancestor and us: not from us */
                pid = st.ppid;
        }
        return NULL;
}

const AppliedProcess *manager_value_origin(Manager *m, pid_t pid, uint64_t raw) {
        ProcStat st;

        if (proc_stat_read_pid(m->proc_fd, pid, 0, &st) < 0)
                return NULL;
        return applied_source(m, &(TaskInfo) { .pid = pid, .ppid = st.ppid }, 0, raw);
}

/*
 * Is the value the process carries somebody else's? A launcher (chrt, a game launcher, a script with
 * sched_setattr) sets a slice and then execs the program: that choice is theirs, as any value set
 * later is. Not foreign: the default, the process's own value from us, and a value latniced set on
 * an ancestor that came down through fork (applied_source()). The raw value decides: a foreign slice
 * a little off the default rounds to latency nice 0 and is still foreign.
 * 1 foreign, 0 not, negative errno; ret: the thread's state as read.
 */
static int value_foreign(Manager *m, const TaskInfo *t, const AppliedProcess *e, uint64_t parent_start,
                         ThreadSched *ret) {
        uint64_t raw;
        int r;

        r = sched_thread_get(&m->probe, t->pid, ret);
        if (r < 0)
                return r;
        if (!sched_thread_has_value(&m->probe, ret))
                return 0;
        raw = sched_thread_raw(&m->probe, ret);
        if (e)
                return raw != e->raw;
        return !applied_source(m, t, parent_start, raw);
}

int manager_apply(Manager *m, const TaskInfo *t, uint64_t start_time, const ApplyRequest *q, bool fresh_exec) {
        AppliedProcess *e = applied_table_get(m->applied, t->pid);
        ThreadSched before = {};
        ApplyResult res = {};
        uint64_t before_raw;
        int before_ln, r;

        if (e && e->start_time != start_time)
                e = NULL; /* about a dead process: replaced below */
        if (e && !e->manual && e->latency_nice == q->latency_nice && e->via_unit == q->via_unit &&
            (!q->override || applied_is_ours(&m->probe, m->proc_fd, e) != 0))
                return manager_update_metadata(m, e, q);

        if (m->probe.backend == BACKEND_NONE || m->options.dry_run) {
                log_info("%s[%d]: would set LatencyNice=%d from %s (%s).", t->comm, (int) t->pid, q->latency_nice,
                         q->ref, m->options.dry_run ? "dry run" : "kernel has no backend");
                return 0;
        }

        /* A fresh exec with Override=yes reads nothing first: every microsecond before the value lands
         * is run time without it. */
        if (!q->override || !fresh_exec) {
                r = value_foreign(m, t, e, q->parent_start, &before);
                if (r == -ESRCH) {
                        log_debug("%s[%d] exited before its value could be set.", t->comm, (int) t->pid);
                        return 0;
                }
                if (r < 0)
                        return log_warning_errno(r, "Failed to read %s[%d]: %m", t->comm, (int) t->pid);
                if (r > 0 && !q->override) {
                        log_info("%s[%d]: %s LatencyNice=%d set by somebody else%s; %s wants %d, leaving it "
                                 "(Override=no).", t->comm, (int) t->pid, fresh_exec ? "started with" : "has",
                                 before.latency_nice, fresh_exec ? " before its exec" : "", q->ref,
                                 q->latency_nice);
                        return 0;
                }
        }

        r = sched_apply_process(&m->probe, m->proc_fd, t->pid, start_time, q->latency_nice, q->threads, fresh_exec,
                                &res);
        if (r == -ESRCH) {
                log_debug("%s[%d] exited before its value could be set.", t->comm, (int) t->pid);
                return 0;
        }
        if (r < 0) {
                m->apply_errors++;
                return log_warning_errno(r, "Failed to set LatencyNice=%d on %s[%d] (%s): %m", q->latency_nice,
                                         t->comm, (int) t->pid, q->ref);
        }
        if (fresh_exec)
                before = res.main_before;
        before_ln = before.latency_nice;
        before_raw = sched_thread_raw(&m->probe, &before);
        if (!e && sched_thread_has_value(&m->probe, &before)) {
                /* A child of a process we set carries our value through fork: what it had before us
                 * is what its parent had before us, not our own value (or a stop would "restore" it).
                 * The same for a descendant found later (a scan after a restart): its origin, wherever
                 * it is (the record of forks). */
                const AppliedProcess *src = fresh_exec ? manager_applied_parent(m, t, q->parent_start)
                                                       : applied_source(m, t, q->parent_start, before_raw);

                if (src && before_raw == src->raw) {
                        before_ln = src->before;
                        before_raw = src->before_raw;
                }
        }
        m->tasks_applied += res.n_applied;

        {
                AppliedProcess n = {
                        .pid = t->pid,
                        .start_time = start_time,
                        .uid = t->uid,
                        .latency_nice = q->latency_nice,
                        .raw = sched_raw_value(&m->probe, q->latency_nice),
                        .before = e ? e->before : before_ln,
                        .before_raw = e ? e->before_raw : before_raw,
                        .rule = strdup(q->ref),
                        .rule_name = strdup(q->rule_name),
                        .via_unit = q->via_unit,
                        .inherit = q->inherit,
                        .foreground = q->foreground,
                        .exe_ino = t->exe_ino,
                        .exe_dev = t->exe_dev,
                };

                snprintf(n.comm, sizeof(n.comm), "%s", t->comm ?: "");
                if (!n.rule || !n.rule_name || manager_record(m, &n) < 0) {
                        free(n.rule);
                        free(n.rule_name);
                        return log_oom();
                }
        }
        manager_prune(m);
        if (m->hooks.applied)
                m->hooks.applied(m, t->pid, t->comm, q->latency_nice, q->rule_name);

        if (res.n_realtime > 0 || res.n_foreign > 0 || res.n_failed > 0)
                log_decision(LOG_INFO, LATNICE_MESSAGE_APPLIED, t->pid, q->rule_name, q->latency_nice,
                             "%s[%d]: LatencyNice=%d from %s on %u of %u threads "
                             "(%u realtime, %u foreign, %u failed%s%s).",
                             t->comm, (int) t->pid, q->latency_nice, q->ref, res.n_applied, res.n_threads,
                             res.n_realtime, res.n_foreign, res.n_failed, res.first_error ? ": " : "",
                             res.first_error ? strerror(-res.first_error) : "");
        else
                log_decision(LOG_INFO, LATNICE_MESSAGE_APPLIED, t->pid, q->rule_name, q->latency_nice,
                             "%s[%d]: LatencyNice=%d from %s (%u thread%s).", t->comm, (int) t->pid, q->latency_nice,
                             q->ref, res.n_threads, res.n_threads == 1 ? "" : "s");
        return 1;
}

/* The entry of t's parent if we set the parent (the same process: its start time says), else NULL. */
static AppliedProcess *manager_applied_parent(Manager *m, const TaskInfo *t, uint64_t parent_start) {
        AppliedProcess *parent;
        pid_t ppid = t->ppid;

        if (ppid <= 0 || parent_start == 0) {
                /* In a child pid namespace BPF cannot name the parent in our terms; /proc can. */
                ProcStat st, pst;

                if (proc_stat_read_pid(m->proc_fd, t->pid, 0, &st) < 0)
                        return NULL;
                ppid = st.ppid;
                if (proc_stat_read_pid(m->proc_fd, ppid, 0, &pst) < 0)
                        return NULL;
                parent_start = pst.start_time;
        }
        parent = applied_table_get(m->applied, ppid);
        return parent && parent->start_time == parent_start ? parent : NULL;
}

/*
 * A value belongs to the program a rule named, not to everything it starts:
 * a terminal at -8 must not hand -8 to every build run in it, nor a
 * compositor its value to every application it launches. So when a child
 * of a process we set execs a program that no rule matches, and it still
 * carries our value (inherited through fork), it gets the default back,
 * unless the parent's rule says Inherit=yes. Values somebody else set are
 * not ours to reset. The parent must be the process we set, not a later
 * one with its pid: its start time says.
 */
static int manager_reset_inherited(Manager *m, const TaskInfo *t, uint64_t start_time, uint64_t parent_start) {
        const AppliedProcess *parent;
        ThreadSched cur = {};
        ApplyResult res = {};
        uint64_t raw;
        pid_t ppid;
        int r;

        if (m->probe.backend == BACKEND_NONE)
                return 0;
        r = sched_thread_get(&m->probe, t->pid, &cur);
        if (r < 0 || cur.realtime)
                return 0;
        raw = sched_thread_raw(&m->probe, &cur);
        if (sched_raw_is_default(&m->probe, raw))
                return 0;
        /* The parent we set, or one further up through processes that carry its value ("(exec prog &)":
         * the subshell that forked prog is gone, or was never ours to record). */
        parent = applied_source(m, t, parent_start, raw);
        if (!parent || parent->inherit)
                return 0;
        ppid = parent->pid;
        if (m->options.dry_run) {
                log_info("%s[%d]: would reset LatencyNice=%d inherited from %s[%d] (dry run).", t->comm, (int) t->pid,
                         parent->latency_nice, parent->comm, (int) ppid);
                return 0;
        }
        r = sched_apply_process(&m->probe, m->proc_fd, t->pid, start_time, LATNICE_DEFAULT, THREADS_ALL, true, &res);
        if (r < 0) {
                if (r != -ESRCH)
                        log_warning_errno(r, "Failed to reset %s[%d] to the default: %m", t->comm, (int) t->pid);
                return 0;
        }
        manager_inherited_forget(m, t->pid);
        log_decision(LOG_INFO, LATNICE_MESSAGE_RESTORED, t->pid, NULL, LATNICE_DEFAULT,
                     "%s[%d]: back to LatencyNice=0: no rule matches it, and %d was inherited from %s[%d] (%s).",
                     t->comm, (int) t->pid, parent->latency_nice, parent->comm, (int) ppid, parent->rule);
        return 1;
}

/*
 * One decision for one process: a value somebody set through
 * SetLatencyNice (latnicectl run, set) stays; else the first matching
 * process rule, else a unit rule of the unit it runs in (per task, where
 * the kernel has no cgroup knob), else nothing (and a value we set earlier
 * is restored).
 * fresh_exec: the exec just happened, so the value the process carries is
 * inherited, not chosen for this program: apply. Otherwise a value that is
 * neither default nor ours is foreign and only replaced with Override=yes.
 * parent_start: the parent's start time as the exec event saw it (0: ask /proc).
 */
int manager_decide(Manager *m, const TaskInfo *t, uint64_t start_time, uint64_t parent_start, bool fresh_exec) {
        AppliedProcess *e = applied_table_get(m->applied, t->pid);
        MatchExplain ex;
        MatchHow how;
        const Rule *rule;
        ApplyRequest q;
        char ref[512];
        int r;

        if (e && e->start_time != start_time && start_time != 0) {
                /* The pid was reused: the entry is about a dead process. */
                manager_forget(m, t->pid);
                e = NULL;
        }
        if (e && e->manual) {
                /* An explicit choice wins over the rules, across an exec too, while it is in place. */
                if (applied_is_ours(&m->probe, m->proc_fd, e) > 0)
                        return 0;
                manager_forget(m, t->pid);
                e = NULL;
        }
        /* A foreground boost lasts until focus moves (or an exec): rescans leave it. */
        if (e && e->foreground && !fresh_exec && applied_is_ours(&m->probe, m->proc_fd, e) > 0)
                return 0;

        r = match_explain(m->rules, m->index, t, false, &ex);
        if (r < 0)
                return log_oom();
        rule = ex.rule;
        how = ex.how;
        match_explain_done(&ex);

        if (how != MATCH_HOW_PROCESS) {
                /* A unit rule acts through the unit layer (the cgroup knob, or per task without one). */
                r = rule && m->hooks.units_decide ? m->hooks.units_decide(m, t, rule, start_time, fresh_exec) : 0;
                if (r != 0)
                        return r;
                e = applied_table_get(m->applied, t->pid);
                if (e) {
                        manager_restore(m, e, "no rule matches any more");
                        manager_forget(m, t->pid);
                } else if (fresh_exec)
                        return manager_reset_inherited(m, t, start_time, parent_start);
                return 0;
        }
        q = apply_request_from_rule(rule, false, ref, sizeof(ref));
        q.parent_start = parent_start;
        return manager_apply(m, t, start_time, &q, fresh_exec);
}

ProcWhat manager_proc_what(const Manager *m) {
        ProcWhat what = PROC_EXE | PROC_IDS;

        if (m->filter.want_args)
                what |= PROC_CMDLINE;
        if (m->needs_parent)
                what |= PROC_PARENT;
        if (m->needs_cgroup)
                what |= PROC_CGROUP;
        if (m->needs_names)
                what |= PROC_NAMES;
        if (m->needs_ancestors)
                what |= PROC_ANCESTORS;
        return what;
}

/* Reads what the rules need from /proc and decides. */
int manager_decide_pid_comm(Manager *m, pid_t pid, bool fresh_exec, char *ret_comm) {
        _cleanup_(proc_task_done) ProcTask p = {};
        TaskInfo t;
        int r;

        r = proc_task_read(m->proc_fd, pid, manager_proc_what(m), &p);
        if (r < 0)
                return r;
        if (ret_comm)
                memcpy(ret_comm, p.stat.comm, sizeof(p.stat.comm));
        if ((p.stat.flags & PROC_PF_KTHREAD) || p.stat.state == 'Z')
                return 0;
        proc_task_to_info(&p, &t);
        manager_task_fill_exe(m, &p, &t);
        return manager_decide(m, &t, p.stat.start_time, 0, fresh_exec);
}

void manager_task_fill_exe(Manager *m, const ProcTask *p, TaskInfo *t) {
        proc_task_set_exe_check(t, &m->proc_fd);
        if (!p->exe) {
                /* /proc/PID/exe of another user's process needs CAP_SYS_PTRACE, which the unit does not
                 * give: what its exec event told us about the binary still holds until its next exec. */
                AppliedProcess *e = applied_table_get_process(m->applied, p->pid, p->stat.start_time);

                if (e && e->tgid == 0) {
                        t->exe_ino = e->exe_ino;
                        t->exe_dev = e->exe_dev;
                }
        }
}

/* Decides the processes of a unit's subtree, as bulk work (not at SCHED_FIFO). */
int manager_decide_pids(Manager *m, const pid_t *pids, size_t n, bool skip_applied) {
        manager_leave_realtime(m);
        for (size_t i = 0; i < n; i++)
                if (!skip_applied || !applied_table_get(m->applied, pids[i]))
                        (void) manager_decide_pid(m, pids[i], false);
        return 0;
}
