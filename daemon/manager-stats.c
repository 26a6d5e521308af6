/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latniced's side of latnicectl stats (see manager-stats.h): the class
 * table, the stats BPF program's lifecycle and the result.
 *
 * Classes are handed out as rules first apply during the collection: the
 * rule set may have 15,000 rules, but a collection of a minute sees a few
 * dozen of them at work. Class 0 is everything else; once the table is full,
 * further rules share its last class ("more rules"). The result lists the
 * rules in the order they first applied, the comparison class last.
 */

#include <fcntl.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <time.h>

#include "event-util.h"
#include "log.h"
#include "manager-scx.h"
#include "manager-stats.h"
#include "proc.h"
#include "stats-bpf.h"
#include "util.h"

typedef struct ManagerStats {
        StatsBpf *bpf;           /* attached while a collection runs */
        sd_event_source *timer;
        uint64_t started, deadline; /* CLOCK_MONOTONIC usec */
        char *names[LATNICE_STATS_MAX_CLASSES]; /* [0] unused: everything else */
        uint32_t processes[LATNICE_STATS_MAX_CLASSES];
        uint32_t n_classes;
        uint64_t put_failures;    /* processes that could not be put in their class */
        uint64_t backend_changes; /* manager_backend_changes() when the collection began */
        bool scx_in_charge;       /* a BPF scheduler ran the tasks when it began */
        StatsResult *last;
} ManagerStats;

#define CLASS_MORE (LATNICE_STATS_MAX_CLASSES - 1)

StatsResult *stats_result_free(StatsResult *result) {
        if (!result)
                return NULL;
        for (size_t i = 0; i < result->n_classes; i++)
                free(result->classes[i].name);
        free(result->classes);
        free(result->hook);
        free(result->note);
        free(result);
        return NULL;
}

static ManagerStats *stats_state(Manager *m) {
        if (!m->stats_state)
                m->stats_state = calloc(1, sizeof(ManagerStats));
        return m->stats_state;
}

bool manager_stats_running(const Manager *m) {
        return m->stats_state && m->stats_state->bpf;
}

uint64_t manager_stats_deadline(const Manager *m) {
        return manager_stats_running(m) ? m->stats_state->deadline : 0;
}

const StatsResult *manager_stats_last(const Manager *m) {
        return m->stats_state ? m->stats_state->last : NULL;
}

/* The class of a rule name, a new one if there is room: LATNICE_STATS_CLASS_OTHER for no rule. */
static uint32_t class_for(ManagerStats *s, const char *rule_name) {
        if (!rule_name || !*rule_name)
                return LATNICE_STATS_CLASS_OTHER;
        for (uint32_t c = 1; c < s->n_classes; c++)
                if (c != CLASS_MORE && streq_ptr(s->names[c], rule_name))
                        return c;
        if (s->n_classes < CLASS_MORE) {
                char *n = strdup(rule_name);

                if (!n)
                        return LATNICE_STATS_CLASS_OTHER;
                s->names[s->n_classes] = n;
                return s->n_classes++;
        }
        s->n_classes = LATNICE_STATS_MAX_CLASSES;
        return CLASS_MORE;
}

/* Puts the process in its class, if it is still the process of e (pidfd first, start time after). */
static int stats_put(Manager *m, ManagerStats *s, const AppliedProcess *e) {
        _cleanup_(closep) int pidfd = -1;
        uint32_t c;
        int r;

        pidfd = pidfd_open(e->pid, 0);
        if (pidfd < 0)
                return -errno;
        if (!proc_pid_is(m->proc_fd, e->pid, e->start_time))
                return -ESRCH;
        c = class_for(s, e->rule_name);
        r = stats_bpf_set_class(s->bpf, e->pid, pidfd, c);
        if (r < 0)
                /* Not a process that went away: the class's numbers would silently miss it. Said once per
                 * collection (a table of 100,000 failing would be as many lines); the start counts them. */
                return log_full_errno(s->put_failures++ == 0 ? LOG_WARNING : LOG_DEBUG, r,
                                      "Failed to put %s[%d] in the statistics' class of [%s]: %m",
                                      e->comm, (int) e->pid, e->rule_name ? e->rule_name : "");
        if (r > 0 && c != LATNICE_STATS_CLASS_OTHER)
                s->processes[c]++; /* once per process: applied again, it is in its class already */
        return r;
}

void manager_stats_on_record(Manager *m, const AppliedProcess *e) {
        ManagerStats *s = m->stats_state;

        if (s && s->bpf)
                (void) stats_put(m, s, e);
}

void manager_stats_on_forget(Manager *m, pid_t pid) {
        ManagerStats *s = m->stats_state;
        _cleanup_(closep) int pidfd = -1;

        if (!s || !s->bpf)
                return;
        /* Gone already: task storage went with it; the fallback's table entry is dropped by pid. */
        pidfd = pidfd_open(pid, 0);
        (void) stats_bpf_set_class(s->bpf, pid, pidfd, LATNICE_STATS_CLASS_OTHER);
}

static bool rule_exists(const Manager *m, const char *name) {
        for (size_t i = 0; m->rules && i < m->rules->n_rules; i++)
                if (streq_ptr(m->rules->rules[i].name, name))
                        return true;
        return false;
}

/* What the numbers mean on this kernel, said with every result. */
static char *stats_note(Manager *m, const ManagerStats *s) {
        char note[512];

        if (m->probe.backend == BACKEND_NONE)
                return strdup("This kernel cannot apply latency nice: the rules' classes only show how the "
                              "processes they match are scheduled, with no value of latniced's.");
        /* A BPF scheduler ran the tasks for all or part of the collection: no effect to claim. */
        if (sched_ext_note(manager_backend(m), note, sizeof(note)))
                return strdup(note);
        if (s->scx_in_charge || manager_backend_changes(m) != s->backend_changes)
                return strdup("A BPF scheduler (sched_ext) ran the tasks for part of the collection and ignored "
                              "latency nice meanwhile: the classes mix both.");
        return strdup("");
}

static int stats_finish(Manager *m, ManagerStats *s) {
        _cleanup_(stats_result_freep) StatsResult *result = calloc(1, sizeof(StatsResult));
        struct timespec ts;
        size_t k = 0;

        if (!result)
                return -ENOMEM;
        result->classes = calloc(s->n_classes, sizeof(StatsClassResult));
        result->hook = strdup(stats_bpf_hook(s->bpf));
        result->note = stats_note(m, s);
        /* cppcheck does not see the cleanup attribute: stats_result_freep() frees r and what it holds. */
        if (!result->classes || !result->hook || !result->note)
                return -ENOMEM; // cppcheck-suppress memleak
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        result->finished_usec = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
        result->duration_usec = monotonic_usec() - s->started;
        result->missed = stats_bpf_missed(s->bpf);
        /* Rules in the order they first applied, then everything else. */
        for (uint32_t c = 1; c <= s->n_classes; c++) {
                uint32_t id = c == s->n_classes ? LATNICE_STATS_CLASS_OTHER : c;
                StatsClassResult *cr = &result->classes[k];
                int q;

                q = stats_bpf_read(s->bpf, id, &cr->hist);
                if (q < 0)
                        return q;
                if (id == LATNICE_STATS_CLASS_OTHER)
                        cr->flags = LATNICE_STATS_F_OTHER;
                else if (id == CLASS_MORE)
                        cr->flags = LATNICE_STATS_F_MORE_RULES;
                else if (!rule_exists(m, s->names[id]))
                        cr->flags = LATNICE_STATS_F_RULE_REMOVED;
                cr->name = strdup(id == LATNICE_STATS_CLASS_OTHER || id == CLASS_MORE ? "" : s->names[id]);
                if (!cr->name)
                        return -ENOMEM;
                cr->processes = s->processes[id];
                result->n_classes = ++k;
        }
        stats_result_free(s->last);
        s->last = TAKE_PTR(result);
        return 0;
}

static void stats_stop(ManagerStats *s) {
        s->bpf = stats_bpf_free(s->bpf);
        s->timer = sd_event_source_disable_unref(s->timer);
        for (uint32_t c = 0; c < LATNICE_STATS_MAX_CLASSES; c++)
                s->names[c] = mfree(s->names[c]);
        memset(s->processes, 0, sizeof(s->processes));
        s->n_classes = 0;
        s->put_failures = 0;
        s->deadline = 0;
}

static int manager_stats_on_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        ManagerStats *s = m->stats_state;
        int r;

        manager_leave_realtime(m);
        r = stats_finish(m, s);
        stats_stop(s);
        if (r < 0) {
                log_error_errno(r, "Failed to read the scheduler statistics: %m");
                if (m->hooks.stats_done)
                        m->hooks.stats_done(m, NULL, r);
                return 0;
        }
        log_info("Scheduler statistics collected for %.1f s (%s), %zu classes; nothing attached now.",
                 (double) s->last->duration_usec / 1e6, s->last->hook, s->last->n_classes);
        if (m->hooks.stats_done)
                m->hooks.stats_done(m, s->last, 0);
        return 0;
}

int manager_stats_start(Manager *m, uint64_t duration_usec, char **ret_reason) {
        ManagerStats *s = stats_state(m);
        StatsBpfOptions o = {
                .n_classes = LATNICE_STATS_MAX_CLASSES,
                .force_tracepoint = m->options.force_tracepoint,
        };
        struct stat self;
        AppliedProcess *e;
        size_t i = 0, classed = 0;
        int r;

        *ret_reason = NULL;
        if (!s)
                return -ENOMEM;
        if (s->bpf)
                return -EBUSY;
        /* BPF names tasks by host pids; the fallback translates current's to ours (as the exec watcher). */
        if (stat("/proc/self/ns/pid", &self) < 0)
                return -errno;
        o.ns_translate = self.st_ino != 0xEFFFFFFCU;
        o.pidns_dev = self.st_dev;
        o.pidns_ino = self.st_ino;
        o.max_processes = applied_table_size(m->applied) * 2 + 1024;
        if (m->options.stats_fail) {
                /* --test-stats-fail: the path of a kernel where nothing attaches. */
                *ret_reason = strdup("its BPF programs do not attach (refused by --test-stats-fail)");
                return -EOPNOTSUPP;
        }
        r = stats_bpf_new(&o, &s->bpf, ret_reason);
        if (r < 0)
                return r;
        s->n_classes = 1;
        r = event_reset_time_relative(m->event, &s->timer, CLOCK_MONOTONIC, duration_usec, 10 * 1000,
                                      manager_stats_on_timer, m, "stats-timer", true);
        if (r < 0) {
                stats_stop(s);
                return r;
        }
        s->started = monotonic_usec();
        s->backend_changes = manager_backend_changes(m);
        s->scx_in_charge = manager_scx_in_charge(m);
        s->deadline = s->started + duration_usec;
        /* XXX: a large applied table is classed in one go (a pidfd and a map update each, ~2 us). */
        while ((e = applied_table_next(m->applied, &i)))
                if (stats_put(m, s, e) >= 0)
                        classed++;
        log_info("Collecting scheduler statistics for %.1f s (%s hooks, %zu of %zu processes classed).",
                 (double) duration_usec / 1e6, stats_bpf_hook(s->bpf), classed, applied_table_size(m->applied));
        return 0;
}

void manager_stats_cancel(Manager *m) {
        ManagerStats *s = m->stats_state;

        if (!s || !s->bpf)
                return;
        log_info("Nobody waits for the scheduler statistics any more: dropped after %.1f s; nothing attached now.",
                 (double) (monotonic_usec() - s->started) / 1e6);
        stats_stop(s);
}

void manager_stats_free(Manager *m) {
        ManagerStats *s = m->stats_state;

        if (!s)
                return;
        if (s->bpf && m->hooks.stats_done)
                m->hooks.stats_done(m, NULL, -ECANCELED);
        stats_stop(s);
        stats_result_free(s->last);
        free(s);
        m->stats_state = NULL;
}
