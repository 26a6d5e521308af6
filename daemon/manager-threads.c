/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Thread= rules (see manager-threads.h). A thread's name is the program's
 * to choose, any bytes, and a tid can be reused the moment its thread
 * exits: a thread is named by its /proc/PID/task/TID directory (so it is a
 * thread of that process) and its start time, read again after its value
 * is written; the walk over a process reads the process once per chunk,
 * not once per thread. The main thread is the process: its name is Comm=,
 * and Thread= decides the other threads only.
 */

#include <inttypes.h>

#include "latnice/journal.h"
#include "log.h"
#include "manager-decide.h"
#include "manager-threads.h"
#include "util.h"

/* A walk that took d is not started again for the same process before PAUSE_FACTOR * d has passed. */
#define PAUSE_FACTOR 9
#define PAUSE_MIN_USEC (20 * 1000ULL)

typedef enum WalkState {
        WALK_QUEUED,  /* waits for its turn (not before not_before) */
        WALK_RUNNING, /* listed, part of its threads decided */
        WALK_COOLING, /* done; a new request until not_before waits until then */
} WalkState;

typedef struct ThreadWalk {
        pid_t pid;
        WalkState state;
        bool again;          /* asked for while running or cooling */
        uint64_t start_time; /* the process's, from the first chunk */
        pid_t *tids;
        size_t n_tids, next;
        uint64_t spent_usec; /* in this walk's chunks so far */
        uint64_t not_before; /* CLOCK_MONOTONIC usec */
} ThreadWalk;

typedef struct ManagerThreads {
        ThreadWalk walks[THREAD_WALKS_MAX];
        size_t n_walks;
        sd_event_source *timer;
        bool warned_full;
} ManagerThreads;

/* The entry for the process p, if it is one we set and still carry (what an unnamed thread has from us). */
static const AppliedProcess *process_entry(Manager *m, pid_t pid, uint64_t start_time) {
        const AppliedProcess *p = applied_table_get_process(m->applied, pid, start_time);

        return p && p->tgid == 0 && !p->manual ? p : NULL;
}

/* The thread no longer has a Thread= rule: what the process has from us, or what it had before us. */
static void thread_unset(Manager *m, AppliedProcess *e, uint64_t process_start, const char *name) {
        const AppliedProcess *p = process_entry(m, e->tgid, process_start);
        uint64_t raw = p ? p->raw : e->before_raw;
        pid_t tid = e->pid, pid = e->tgid;
        int r;

        r = applied_is_ours(&m->probe, m->proc_fd, e);
        if (r > 0 && !m->options.dry_run) {
                r = sched_thread_set_raw(&m->probe, tid, raw, NULL);
                if (r < 0 && r != -ESRCH)
                        log_warning_errno(r, "Failed to reset thread %d of PID %d: %m", (int) tid, (int) pid);
                else if (r >= 0)
                        log_info("Thread %d '%s' of PID %d: no Thread= rule matches any more, back to %s.", (int) tid,
                                 name, (int) pid, p ? "the process's value" : "its value before latniced");
        }
        manager_forget_full(m, tid, false);
}

/* Sets rule's value on thread tid (st: its stat as read) of the process t; e: its entry, if any. */
static int thread_set(Manager *m, const TaskInfo *t, uint64_t process_start, pid_t tid, const ProcStat *st,
                      AppliedProcess *e, const Rule *rule) {
        const AppliedProcess *p = process_entry(m, t->pid, process_start);
        uint64_t raw = sched_raw_value(&m->probe, rule->latency_nice), cur_raw;
        ThreadSched cur = {};
        ProcStat again;
        char ref[512];
        int r;

        rule_format_ref(rule, ref, sizeof(ref));
        if (e && e->latency_nice == rule->latency_nice && applied_is_ours(&m->probe, m->proc_fd, e) > 0) {
                if (streq_ptr(e->rule, ref))
                        return 0;
                /* Another rule, the same value (a reload): only the bookkeeping changes. */
                AppliedProcess n = *e;

                n.rule = strdup(ref);
                n.rule_name = strdup(rule->name);
                if (!n.rule || !n.rule_name || manager_record(m, &n) < 0) {
                        free(n.rule);
                        free(n.rule_name);
                        return log_oom();
                }
                return 0;
        }
        if (m->probe.backend == BACKEND_NONE || m->options.dry_run) {
                log_info("Thread %d '%s' of %s[%d]: would set LatencyNice=%d from %s (%s).", (int) tid, st->comm,
                         t->comm, (int) t->pid, rule->latency_nice, ref,
                         m->options.dry_run ? "dry run" : "kernel has no backend");
                return 0;
        }
        r = sched_thread_get(&m->probe, tid, &cur);
        if (r < 0)
                return 0; /* gone */
        if (cur.realtime)
                return 0; /* realtime threads are left alone, as in a process */
        cur_raw = sched_thread_raw(&m->probe, &cur);
        /* Not foreign: the default, ours on this thread or on the process, or this very value (a thread made
         * by a named thread carries its name and its value). */
        if (sched_thread_has_value(&m->probe, &cur) && !(e && cur_raw == e->raw) && !(p && cur_raw == p->raw) &&
            cur_raw != raw && !rule->override) {
                log_info("Thread %d '%s' of %s[%d] has LatencyNice=%d set by somebody else; %s wants %d, leaving it "
                         "(Override=no).", (int) tid, st->comm, t->comm, (int) t->pid, cur.latency_nice, ref,
                         rule->latency_nice);
                if (e)
                        manager_forget_full(m, tid, false);
                return 0;
        }
        if (cur_raw != raw) {
                r = sched_thread_set_raw(&m->probe, tid, raw, NULL);
                if (r == -ESRCH)
                        return 0;
                if (r < 0) {
                        m->apply_errors++;
                        return log_warning_errno(r, "Failed to set LatencyNice=%d on thread %d of %s[%d] (%s): %m",
                                                 rule->latency_nice, (int) tid, t->comm, (int) t->pid, ref);
                }
                /* The tid is the thread we read only if it still starts when it did. XXX: a tid reused between
                 * the read and the write gets the old thread's value back, not its own. */
                if (proc_stat_read_pid(m->proc_fd, t->pid, tid, &again) < 0 || again.start_time != st->start_time) {
                        (void) sched_thread_set_raw(&m->probe, tid, cur_raw, NULL);
                        return 0;
                }
                m->tasks_applied++;
        }

        {
                AppliedProcess n = {
                        .pid = tid,
                        .tgid = t->pid,
                        .start_time = st->start_time,
                        .uid = t->uid,
                        .latency_nice = rule->latency_nice,
                        .raw = raw,
                        .before = cur.latency_nice,
                        .before_raw = cur_raw,
                        .rule = strdup(ref),
                        .rule_name = strdup(rule->name),
                        .inherit = rule->inherit,
                        .exe_ino = t->exe_ino,
                        .exe_dev = t->exe_dev,
                };

                if (e) {
                        n.before = e->before;
                        n.before_raw = e->before_raw;
                } else if (p && (cur_raw == p->raw || cur_raw == raw)) {
                        /* The process's value from us, or a named creator's: before us it had the process's. */
                        n.before = p->before;
                        n.before_raw = p->before_raw;
                } else if (cur_raw == raw) {
                        n.before = 0;
                        n.before_raw = sched_raw_value(&m->probe, 0);
                }
                memcpy(n.comm, st->comm, sizeof(n.comm));
                n.comm[sizeof(n.comm) - 1] = 0;
                if (!n.rule || !n.rule_name || manager_record(m, &n) < 0) {
                        free(n.rule);
                        free(n.rule_name);
                        return log_oom();
                }
        }
        manager_prune(m);
        log_decision(LOG_INFO, LATNICE_MESSAGE_APPLIED, tid, rule->name, rule->latency_nice,
                     "Thread %d '%s' of %s[%d]: LatencyNice=%d from %s.", (int) tid, st->comm, t->comm, (int) t->pid,
                     rule->latency_nice, ref);
        return 1;
}

/*
 * One thread of the process t (read from /proc, started at process_start): the first matching rule with
 * the thread's name decides; if it is not a Thread= rule, the thread has no value of its own.
 */
static int thread_decide(Manager *m, TaskInfo *t, uint64_t process_start, pid_t tid) {
        AppliedProcess *e = applied_table_get(m->applied, tid);
        const Rule *rule = NULL;
        MatchExplain ex;
        ProcStat st;
        int r;

        if (tid == t->pid)
                return 0; /* the main thread: the process's own name and rules */
        if (proc_stat_read_pid(m->proc_fd, t->pid, tid, &st) < 0) {
                if (e && e->tgid == t->pid)
                        manager_forget_full(m, tid, false);
                return 0;
        }
        if (e && (e->tgid != t->pid || e->start_time != st.start_time)) {
                /* About a thread or a process that is gone: the tid is this thread's now. */
                manager_forget_full(m, tid, e->tgid == 0);
                e = NULL;
        }

        t->thread_comm = st.comm;
        r = match_explain(m->rules, m->index, t, false, &ex);
        t->thread_comm = NULL;
        if (r < 0)
                return log_oom();
        if (ex.how == MATCH_HOW_PROCESS && ex.rule && rule_match(ex.rule, MATCH_THREAD))
                rule = ex.rule;
        match_explain_done(&ex);

        if (!rule) {
                if (e)
                        thread_unset(m, e, process_start, st.comm);
                return 0;
        }
        return thread_set(m, t, process_start, tid, &st, e, rule);
}

/* Could a rule with Thread= match a thread of t, whatever its name? */
static bool thread_rules_possible(const Manager *m, const TaskInfo *t) {
        TaskInfo any = *t;

        any.thread_any = true;
        for (size_t i = 0; i < m->n_thread_rules; i++)
                if (match_rule(m->thread_rules[i], &any, NULL))
                        return true;
        return false;
}

/* Reads process pid for deciding its threads; 0 and p filled, or negative (gone, a kernel thread, a zombie). */
static int thread_process_read(Manager *m, pid_t pid, ProcTask *p, TaskInfo *t) {
        int r;

        r = proc_task_read(m->proc_fd, pid, manager_proc_what(m) | PROC_MAIN_STAT, p);
        if (r < 0)
                return r;
        if ((p->stat.flags & PROC_PF_KTHREAD) || p->stat.state == 'Z')
                return -ESRCH;
        proc_task_to_info(p, t);
        manager_task_fill_exe(m, p, t);
        return 0;
}

int manager_thread_renamed(Manager *m, pid_t pid, pid_t tid) {
        _cleanup_(proc_task_done) ProcTask p = {};
        TaskInfo t;
        int r;

        if (m->n_thread_rules == 0 && m->n_thread_entries == 0)
                return 0;
        r = thread_process_read(m, pid, &p, &t);
        if (r < 0)
                return 0;
        if (!applied_table_get(m->applied, tid) && !thread_rules_possible(m, &t))
                return 0; /* no Thread= rule for this process, and no value of ours on the thread */
        return thread_decide(m, &t, p.stat.start_time, tid);
}

typedef struct ThreadValue {
        pid_t tgid;
        uint64_t raw, before_raw;
} ThreadValue;

static int thread_value_compare(const void *a, const void *b) {
        const ThreadValue *x = a, *y = b;

        return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

unsigned manager_threads_restore_unrecorded(Manager *m) {
        _cleanup_(freep) ThreadValue *v = NULL;
        const AppliedProcess *e;
        size_t i = 0, n = 0;
        unsigned restored = 0;

        if (m->n_thread_entries == 0 || m->probe.backend == BACKEND_NONE)
                return 0;
        v = calloc(m->n_thread_entries, sizeof(ThreadValue));
        if (!v)
                return 0;
        while ((e = applied_table_next(m->applied, &i)) && n < m->n_thread_entries)
                if (e->tgid > 0)
                        v[n++] = (ThreadValue) { .tgid = e->tgid, .raw = e->raw, .before_raw = e->before_raw };
        qsort(v, n, sizeof(ThreadValue), thread_value_compare);
        for (size_t a = 0, b; a < n; a = b) {
                _cleanup_(freep) pid_t *tids = NULL;
                int n_tids;

                for (b = a + 1; b < n && v[b].tgid == v[a].tgid; b++)
                        ;
                n_tids = proc_list_tasks(m->proc_fd, v[a].tgid, &tids);
                for (int k = 0; k < n_tids; k++) {
                        ThreadSched cur;
                        uint64_t raw;

                        if (tids[k] == v[a].tgid || applied_table_get(m->applied, tids[k]) ||
                            sched_thread_get(&m->probe, tids[k], &cur) < 0 || cur.realtime)
                                continue;
                        raw = sched_thread_raw(&m->probe, &cur);
                        for (size_t j = a; j < b; j++)
                                if (v[j].raw == raw) {
                                        if (sched_thread_set_raw(&m->probe, tids[k], v[j].before_raw, NULL) >= 0)
                                                restored++;
                                        break;
                                }
                }
        }
        return restored;
}

/* ---- walks ------------------------------------------------------------ */

static void thread_walk_reset(ThreadWalk *w) {
        w->tids = mfree(w->tids);
        w->n_tids = w->next = 0;
        w->spent_usec = 0;
        w->start_time = 0;
}

static void threads_arm(Manager *m);

/* One chunk of w; true when the walk is over (done, or the process is gone). */
static bool thread_walk_step(Manager *m, ThreadWalk *w) {
        _cleanup_(proc_task_done) ProcTask p = {};
        uint64_t t0 = monotonic_usec();
        TaskInfo t;
        int n;

        if (thread_process_read(m, w->pid, &p, &t) < 0)
                return true;
        if (w->state == WALK_QUEUED) {
                if (p.stat.num_threads <= 1 || (m->n_thread_entries == 0 && !thread_rules_possible(m, &t)))
                        return true;
                n = proc_list_tasks(m->proc_fd, w->pid, &w->tids);
                if (n < 0)
                        return true;
                w->n_tids = (size_t) n;
                w->next = 0;
                w->start_time = p.stat.start_time;
                w->state = WALK_RUNNING;
                log_debug("Walking the threads of %s[%d] (%zu).", t.comm, (int) w->pid, w->n_tids);
        } else if (p.stat.start_time != w->start_time)
                return true; /* another process now; the threads it has are its business */

        /* XXX: a thread made during the walk is not listed; it starts with its creator's name and value. */
        for (size_t k = 0; k < THREAD_CHUNK && w->next < w->n_tids; k++)
                (void) thread_decide(m, &t, w->start_time, w->tids[w->next++]);
        w->spent_usec += monotonic_usec() - t0;
        if (w->next < w->n_tids)
                return false;
        log_debug("Walked the %zu threads of %s[%d] in %" PRIu64 " us.", w->n_tids, t.comm, (int) w->pid,
                  w->spent_usec);
        return true;
}

static int manager_on_threads_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        ManagerThreads *ts = m->threads_state;
        uint64_t now = monotonic_usec();
        ThreadWalk *w = NULL;

        manager_leave_realtime(m);
        /* A running walk first, then the oldest queued one that may start; cooled walks leave the list. */
        for (size_t i = 0; i < ts->n_walks; i++) {
                ThreadWalk *x = &ts->walks[i];

                if (x->state == WALK_COOLING && x->not_before <= now) {
                        if (x->again) {
                                x->state = WALK_QUEUED;
                                x->again = false;
                        } else {
                                thread_walk_reset(x);
                                ts->walks[i--] = ts->walks[--ts->n_walks];
                                continue;
                        }
                }
                if (x->state == WALK_RUNNING)
                        w = x;
                else if (!w && x->state == WALK_QUEUED && x->not_before <= now)
                        w = x;
        }
        if (w && thread_walk_step(m, w)) {
                uint64_t pause = w->spent_usec * PAUSE_FACTOR;

                thread_walk_reset(w);
                w->state = WALK_COOLING;
                w->not_before = monotonic_usec() + (pause > PAUSE_MIN_USEC ? pause : PAUSE_MIN_USEC);
        }
        threads_arm(m);
        return 0;
}

/* The timer at the earliest moment some walk can go on: at once while one runs or may start. */
static void threads_arm(Manager *m) {
        ManagerThreads *ts = m->threads_state;
        uint64_t when = UINT64_MAX;
        int r;

        for (size_t i = 0; i < ts->n_walks; i++) {
                const ThreadWalk *x = &ts->walks[i];
                uint64_t at = x->state == WALK_RUNNING ? 0 : x->not_before;

                if (at < when)
                        when = at;
        }
        if (when == UINT64_MAX) {
                if (ts->timer)
                        (void) sd_event_source_set_enabled(ts->timer, SD_EVENT_OFF);
                return;
        }
        if (!ts->timer) {
                r = sd_event_add_time(m->event, &ts->timer, CLOCK_MONOTONIC, when, 1000, manager_on_threads_timer, m);
                if (r < 0)
                        return (void) log_warning_errno(r, "Failed to set up the walks over threads: %m");
                (void) sd_event_source_set_description(ts->timer, "thread-walk");
        } else
                (void) sd_event_source_set_time(ts->timer, when);
        (void) sd_event_source_set_enabled(ts->timer, SD_EVENT_ONESHOT);
}

void manager_threads_walk(Manager *m, pid_t pid) {
        ManagerThreads *ts;
        ThreadWalk *w;

        if (pid <= 0 || (m->n_thread_rules == 0 && m->n_thread_entries == 0))
                return;
        if (!m->threads_state) {
                m->threads_state = calloc(1, sizeof(ManagerThreads));
                if (!m->threads_state)
                        return (void) log_oom();
        }
        ts = m->threads_state;
        for (size_t i = 0; i < ts->n_walks; i++)
                if (ts->walks[i].pid == pid) {
                        /* Queued: it will see this too. Running or cooling: once more after it. */
                        if (ts->walks[i].state != WALK_QUEUED)
                                ts->walks[i].again = true;
                        return;
                }
        if (ts->n_walks >= THREAD_WALKS_MAX) {
                if (!ts->warned_full)
                        log_warning("More than %d processes wait for a walk over their threads; PID %d waits for "
                                    "the next rescan.", THREAD_WALKS_MAX, (int) pid);
                ts->warned_full = true;
                return;
        }
        w = &ts->walks[ts->n_walks++];
        *w = (ThreadWalk) { .pid = pid, .state = WALK_QUEUED };
        threads_arm(m);
}

void manager_threads_done(Manager *m) {
        ManagerThreads *ts = m->threads_state;

        if (!ts)
                return;
        for (size_t i = 0; i < ts->n_walks; i++)
                thread_walk_reset(&ts->walks[i]);
        ts->timer = sd_event_source_unref(ts->timer);
        m->threads_state = mfree(ts);
}
