/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.latnice1 on the system bus: the vtable of /org/latnice1
 * (org.latnice1.Manager) and its signals.
 *
 * Every local user may call it, so every method first learns who calls
 * (bus-auth.c, asynchronously) and:
 *  - shows a process's details (command line, cgroup, unit, user, threads)
 *    to root and to the process's own user only (NotYourProcess otherwise),
 *    and lists only the caller's own processes;
 *  - pins the process it acts on with a pidfd (handed in, or opened at
 *    once) and checks that it is still that process after reading it
 *    (bus-target.c);
 *  - needs root or polkit for Reload, SetProfile, lowering any thread's
 *    value and touching other users' processes (authz.c decides, bus-auth.c
 *    asks polkit);
 *  - sends valid UTF-8 only: names processes chose are escaped.
 * The Applied signal is for root only (the D-Bus policy keeps it from
 * other users), and rate-limited.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>

#include "authz.h"
#include "bus-auth.h"
#include "bus-target.h"
#include "latnice/dbus.h"
#include "log.h"
#include "manager-bus.h"
#include "manager-decide.h"
#include "manager-foreground.h"
#include "manager-rules.h"
#include "manager-scx.h"
#include "manager-stats.h"
#include "match.h"
#include "proc.h"
#include "profile.h"
#include "ratelimit.h"
#include "util.h"

/* Applied: a storm of execs must not become a storm on the bus. */
#define APPLIED_BURST 50
#define APPLIED_PER_SEC 20
/* CollectStats calls that wait for the collection under way; more get Busy. */
#define STATS_WAITERS_MAX 8

typedef struct ManagerBus {
        sd_bus_slot *object_slot;
        sd_bus_slot *name_slot;
        BusAuth *auth;
        TokenBucket applied; /* for the Applied signal */
        sd_bus_message *stats_waiters[STATS_WAITERS_MAX]; /* answered when the collection ends */
        unsigned n_stats_waiters;
} ManagerBus;

static ManagerBus *manager_bus_state(Manager *m) {
        if (!m->bus_state) {
                m->bus_state = calloc(1, sizeof(ManagerBus));
                if (m->bus_state)
                        m->bus_state->applied = (TokenBucket) TOKEN_BUCKET_INIT(APPLIED_BURST, APPLIED_PER_SEC);
        }
        return m->bus_state;
}

/* ---- strings ------------------------------------------------------------ */

/*
 * Escaped copies of strings for one append: valid UTF-8 whatever a process
 * named itself. One Esc holds ESC_MAX copies, more than any one append
 * below takes (Explain's task has 9); a copy beyond that, or one that
 * cannot be made, gives "" and makes esc_done() fail the append, so that
 * nothing is sent with a string silently missing.
 */
#define ESC_MAX 16

typedef struct Esc {
        char *bufs[ESC_MAX];
        unsigned n;
        int error;
} Esc;

static const char *esc(Esc *e, const char *s) {
        char *buf = NULL;
        const char *r = utf8_safe(s ?: "", &buf);

        if (!r) {
                e->error = -ENOMEM;
                return "";
        }
        if (!buf)
                return r; /* valid already */
        if (e->n >= ELEMENTSOF(e->bufs)) {
                free(buf);
                e->error = -ENOBUFS;
                return "";
        }
        e->bufs[e->n++] = buf;
        return buf;
}

/* Frees the copies; returns r, or the error of a copy that was not made. */
static int esc_done(Esc *e, int r) {
        for (unsigned i = 0; i < e->n; i++)
                free(e->bufs[i]);
        e->n = 0;
        r = r < 0 ? r : e->error;
        e->error = 0;
        return r;
}

static int append_str(sd_bus_message *m, const char *s) {
        _cleanup_(freep) char *buf = NULL;
        const char *v = utf8_safe(s ?: "", &buf);

        return v ? sd_bus_message_append(m, "s", v) : -ENOMEM;
}

/* ---- replies ------------------------------------------------------------- */

/* (sssui): kind, name, file, line, latency nice; empty for none. */
static int append_rule(sd_bus_message *reply, const Rule *r) {
        Esc e = {};
        int q;

        if (!r)
                return sd_bus_message_append(reply, "(sssui)", "", "", "", 0, 0);
        q = sd_bus_message_append(reply, "(sssui)", rule_kind_to_string(r->kind), esc(&e, r->name),
                                  esc(&e, r->file), r->line, r->latency_nice);
        return esc_done(&e, q);
}

static int append_rule_keys(sd_bus_message *reply, const Rule *r) {
        int q;

        q = sd_bus_message_open_container(reply, 'a', "s");
        for (MatchKey k = 0; q >= 0 && r && k < _MATCH_KEY_MAX; k++) {
                _cleanup_(freep) char *s = NULL;

                if (!rule_match(r, k))
                        continue;
                s = rule_format_key(r, k);
                if (!s)
                        return -ENOMEM;
                q = append_str(reply, s);
        }
        if (q >= 0)
                q = sd_bus_message_close_container(reply);
        return q;
}

/* ---- properties ---------------------------------------------------------- */

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", LATNICE_VERSION);
}

static int property_get_backend(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        return append_str(reply, manager_backend(m));
}

static int property_get_string(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        /* userdata points at the Manager's char * field (offsetof) */
        return append_str(reply, *(char **) userdata);
}

static int property_get_backend_reason(sd_bus *bus, const char *path, const char *interface,
                                       const char *property, sd_bus_message *reply, void *userdata,
                                       sd_bus_error *error) {
        Manager *m = userdata;

        return append_str(reply, manager_backend_reason(m));
}

static int property_get_event_source(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "s", source_kind_to_string(m->source));
}

static int property_get_rule_files(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && m->rules && i < m->rules->n_files; i++)
                if (m->rules->files[i].state == CONF_FILE_ACTIVE)
                        /* as rule errors and rule references name them (without a --root prefix) */
                        r = append_str(reply, m->rules->files[i].shown ?: m->rules->files[i].path);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static int property_get_rule_errors(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && m->rules && i < m->rules->n_errors; i++) {
                char s[1024];

                rule_error_format(&m->rules->errors[i], s, sizeof(s));
                r = append_str(reply, s);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static int property_get_rules(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "u", (uint32_t) (m->rules ? m->rules->n_rules : 0));
}

static int property_get_applied_processes(sd_bus *bus, const char *path, const char *interface,
                                          const char *property, sd_bus_message *reply, void *userdata,
                                          sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "u", (uint32_t) (m->applied ? applied_table_size(m->applied) : 0));
}

static int property_get_suppressed(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "t", m->bus_state ? m->bus_state->applied.refused : (uint64_t) 0);
}

/* (suuttttat): one class of a statistics result. */
static int append_stats_classes(sd_bus_message *reply, const StatsResult *r) {
        int q;

        q = sd_bus_message_open_container(reply, 'a', "(suuttttat)");
        for (size_t i = 0; q >= 0 && r && i < r->n_classes; i++) {
                const StatsClassResult *c = &r->classes[i];

                q = sd_bus_message_open_container(reply, 'r', "suuttttat");
                if (q >= 0)
                        q = append_str(reply, c->name);
                if (q >= 0)
                        q = sd_bus_message_append(reply, "uutttt", c->flags, c->processes, c->hist.wakeups,
                                                  c->hist.total_ns, c->hist.max_ns, c->hist.preemptions);
                if (q >= 0)
                        q = sd_bus_message_append_array(reply, 't', c->hist.slots, sizeof(c->hist.slots));
                if (q >= 0)
                        q = sd_bus_message_close_container(reply);
        }
        if (q >= 0)
                q = sd_bus_message_close_container(reply);
        return q;
}

/* (tt ss t a(...)): finished (realtime usec), duration, hook, note, missed wakeups, classes. */
static int append_stats_result(sd_bus_message *reply, const StatsResult *r) {
        int q;

        q = sd_bus_message_append(reply, "tt", r ? r->finished_usec : 0, r ? r->duration_usec : 0);
        if (q >= 0)
                q = append_str(reply, r ? r->hook : "");
        if (q >= 0)
                q = append_str(reply, r ? r->note : "");
        if (q >= 0)
                q = sd_bus_message_append(reply, "t", r ? r->missed : 0);
        if (q >= 0)
                q = append_stats_classes(reply, r);
        return q;
}

static int property_get_last_stats(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int q;

        q = sd_bus_message_open_container(reply, 'r', "ttssta(suuttttat)");
        if (q >= 0)
                q = append_stats_result(reply, manager_stats_last(m));
        if (q >= 0)
                q = sd_bus_message_close_container(reply);
        return q;
}

static int property_get_stats_waiting(sd_bus *bus, const char *path, const char *interface,
                                      const char *property, sd_bus_message *reply, void *userdata,
                                      sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "u", m->bus_state ? m->bus_state->n_stats_waiters : 0);
}

static int property_get_foreground(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        _cleanup_(freep) char *s = manager_foreground_describe(userdata);

        return s ? sd_bus_message_append(reply, "s", s) : -ENOMEM;
}

/* ---- reading methods ------------------------------------------------------ */

/* Every method learns its caller first; the argument decides pid or pidfd. */
#define CALLER_METHOD(name, impl, by_pidfd)                                                              \
        static int name##_caller(sd_bus_message *call, const BusCaller *c, void *userdata,             \
                                 sd_bus_error *error) {                                                \
                return impl(userdata, call, c, by_pidfd, error);                                         \
        }                                                                                                \
        static int name(sd_bus_message *call, void *userdata, sd_bus_error *error) {                   \
                Manager *m = userdata;                                                                   \
                if (!m->bus_state || !m->bus_state->auth)                                                \
                        return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "Not ready.");              \
                return bus_auth_with_caller(m->bus_state->auth, call, name##_caller, m, error);           \
        }

static int get_task(Manager *m, sd_bus_message *call, const BusCaller *c, bool by_pidfd, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(freep) pid_t *tids = NULL;
        _cleanup_(target_done) Target t = { .pidfd = -1 };
        const char *set_by, *rule = "", *ref = "";
        ThreadSched main_thread = {};
        AppliedProcess *e;
        bool ours;
        Esc es = {};
        int r, n;

        r = target_read(m->proc_fd, call, c, by_pidfd, &t, error);
        if (r < 0)
                return r;
        r = target_check_owner(c, &t, error);
        if (r < 0)
                return r;
        r = sched_thread_get(&m->probe, t.pid, &main_thread);
        if (r < 0 && r != -ESRCH)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot read the scheduling of %d: %s",
                                         (int) t.pid, strerror(-r));

        e = applied_table_get_process(m->applied, t.pid, t.st.start_time);
        set_by = applied_set_by(&m->probe, m->proc_fd, e, &main_thread, &ours);
        if (ours) {
                rule = e->rule_name ?: "";
                ref = e->rule ?: "";
        }

        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "sisssst", esc(&es, t.st.comm), main_thread.latency_nice, set_by,
                                          esc(&es, rule), esc(&es, ref), manager_backend(m),
                                          t.st.start_time);
        r = esc_done(&es, r);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ussiitb)");
        if (r < 0)
                return r;
        n = proc_list_tasks(m->proc_fd, t.pid, &tids);
        for (int i = 0; i < n; i++) {
                ThreadSched ts;
                ProcStat st = {};

                if (sched_thread_get(&m->probe, tids[i], &ts) < 0)
                        continue; /* exited meanwhile */
                (void) proc_stat_read_pid(m->proc_fd, t.pid, tids[i], &st);
                r = sd_bus_message_append(reply, "(ussiitb)", (uint32_t) tids[i], esc(&es, st.comm),
                                          sched_policy_to_string(ts.attr.sched_policy), (int32_t) ts.attr.sched_nice,
                                          (int32_t) ts.latency_nice,
                                          m->probe.backend == BACKEND_EEVDF_SLICE ? (uint64_t) ts.attr.sched_runtime
                                                                                  : (uint64_t) 0,
                                          (int) ts.realtime);
                r = esc_done(&es, r);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return target_send_reply(m->proc_fd, &t, reply, error);
}
CALLER_METHOD(method_get_task, get_task, false)
CALLER_METHOD(method_get_task_by_pidfd, get_task, true)

static int list_applied(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        AppliedProcess *e;
        size_t i = 0;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(usiss)");
        if (r < 0)
                return r;
        while (m->applied && (e = applied_table_next(m->applied, &i))) {
                Esc es = {};

                switch (authz_list_applied(c->uid, e->uid)) {
                case AUTHZ_LIST_SHOW:
                        break;
                case AUTHZ_LIST_HIDE:
                        continue;
                case AUTHZ_LIST_IF_OWNED_NOW:
                        if (!target_owned_now(m->proc_fd, e->pid, e->start_time, c->uid))
                                continue;
                        break;
                }
                r = sd_bus_message_append(reply, "(usiss)", (uint32_t) e->pid, esc(&es, e->comm),
                                          (int32_t) e->latency_nice, esc(&es, e->rule_name), esc(&es, e->rule));
                r = esc_done(&es, r);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}
CALLER_METHOD(method_list_applied, list_applied, false)

static int append_task_dict(sd_bus_message *reply, const TaskInfo *t) {
        _cleanup_(freep) char *cmdline = NULL, *unit = NULL, *ancestors = NULL, *app = NULL;
        char uid[16], gid[16], pid[16];
        Esc e = {};
        int r;

        cmdline = t->argv ? strv_join(t->argv, " ") : NULL;
        unit = cgroup_path_unit(t->cgroup);
        ancestors = task_ancestors_format(t);
        app = cgroup_path_app(t->cgroup);
        snprintf(pid, sizeof(pid), "%d", (int) t->pid);
        snprintf(uid, sizeof(uid), "%u", (unsigned) t->uid);
        snprintf(gid, sizeof(gid), "%u", (unsigned) t->gid);
        r = sd_bus_message_append(reply, "a{ss}", 13, "ancestors", esc(&e, ancestors), "app", esc(&e, app), "pid", pid, "comm", esc(&e, t->comm), "exe", esc(&e, t->exe),
                                  "cmdline", esc(&e, cmdline), "parent", esc(&e, t->parent_comm), "uid", uid, "user",
                                  esc(&e, t->user), "gid", gid, "group", esc(&e, t->group), "cgroup",
                                  esc(&e, t->cgroup), "unit", esc(&e, unit));
        return esc_done(&e, r);
}

static int explain(Manager *m, sd_bus_message *call, const BusCaller *c, bool by_pidfd, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(target_done) Target tg = { .pidfd = -1 };
        _cleanup_(match_explain_done) MatchExplain ex = {};
        _cleanup_(proc_task_done) ProcTask p = {};
        const char *how;
        TaskInfo t;
        int r;

        r = target_read(m->proc_fd, call, c, by_pidfd, &tg, error);
        if (r < 0)
                return r;
        r = target_check_owner(c, &tg, error);
        if (r < 0)
                return r;
        if (!m->rules)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "No rules are loaded.");

        r = proc_task_read(m->proc_fd, tg.pid, PROC_ALL, &p);
        if (r < 0)
                return no_such_process(error, tg.pid, r);
        proc_task_to_info(&p, &t);
        proc_task_set_exe_check(&t, &m->proc_fd);
        if (c->uid != 0)
                /* The chain climbs into other users' processes (sudo, sshd, a root shell): they are matched
                 * against, but only the caller's own are named to the caller. */
                for (size_t i = 0; i < p.n_ancestors; i++)
                        p.ancestors[i].hidden = !target_owned_now(m->proc_fd, p.ancestors[i].pid,
                                                                  p.ancestors[i].start_time, c->uid);

        r = match_explain(m->rules, NULL, &t, true, &ex);
        if (r < 0)
                return r;
        how = match_how_to_string(ex.how);
        {
                /* The boost holds the value while the window has focus; the rule above comes back after. */
                AppliedProcess *e = applied_table_get_process(m->applied, tg.pid, tg.st.start_time);

                if (e && e->foreground && applied_is_ours(&m->probe, m->proc_fd, e) > 0)
                        how = "foreground";
        }
        if (p.stat.flags & PROC_PF_KTHREAD)
                how = "kernel-thread"; /* never changed, whatever matches */

        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = append_task_dict(reply, &t);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", how);
        if (r >= 0)
                r = append_rule(reply, ex.rule);
        if (r >= 0)
                r = append_rule_keys(reply, ex.rule);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sssui)");
        for (size_t i = 0; r >= 0 && i < ex.match.n_shadowed; i++)
                r = append_rule(reply, ex.match.shadowed[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_rule(reply, ex.unit_rule);
        if (r < 0)
                return r;
        return target_send_reply(m->proc_fd, &tg, reply, error);
}
CALLER_METHOD(method_explain, explain, false)
CALLER_METHOD(method_explain_by_pidfd, explain, true)

static int method_list_rules(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(sssuiasbs)");
        for (size_t i = 0; r >= 0 && m->rules && i < m->rules->n_rules; i++) {
                const Rule *q = &m->rules->rules[i];
                Esc e = {};

                r = sd_bus_message_open_container(reply, 'r', "sssuiasbs");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "sssui", rule_kind_to_string(q->kind), esc(&e, q->name),
                                                  esc(&e, q->file), q->line, q->latency_nice);
                r = esc_done(&e, r);
                if (r >= 0)
                        r = append_rule_keys(reply, q);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "bs", (int) q->override,
                                                  threads_mode_to_string(q->threads));
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_profiles(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(strv_freep) char **names = NULL;
        Manager *m = userdata;
        int r;

        r = profile_list(m->options.root, m->options.profile_dir, &names);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot list profiles: %s", strerror(-r));
        r = sd_bus_message_new_method_return(call, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(ssb)");
        for (char **n = names; r >= 0 && n && *n; n++) {
                _cleanup_(freep) char *path = NULL;
                Esc e = {};

                (void) profile_find(m->options.root, m->options.profile_dir, *n, &path);
                r = sd_bus_message_append(reply, "(ssb)", esc(&e, *n), esc(&e, path),
                                          (int) streq_ptr(*n, m->profile));
                r = esc_done(&e, r);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* ---- methods that change things ------------------------------------------- */

static int reply_reloaded(Manager *m, sd_bus_message *call) {
        return sd_bus_reply_method_return(call, "uu", (uint32_t) (m->rules ? m->rules->n_rules : 0),
                                          (uint32_t) (m->rules ? m->rules->n_errors : 0));
}

static int reload_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        Manager *m = data;
        int r;

        log_info("Reload requested on the bus.");
        r = manager_reload(m, false);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED,
                                         "The new rules have errors (see the journal or 'latnicectl check'); "
                                         "keeping the %zu rules that were running.",
                                         m->rules ? m->rules->n_rules : 0);
        if (r < 0)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED, "Reload failed: %s", strerror(-r));
        return reply_reloaded(m, call);
}

static int reload(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        return bus_auth_polkit(m->bus_state->auth, call, c, LATNICE_POLKIT_RELOAD, NULL, reload_now, m, NULL, error);
}
CALLER_METHOD(method_reload, reload, false)

typedef struct ProfileRequest {
        Manager *manager;
        char name[];
} ProfileRequest;

static int set_profile_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        ProfileRequest *q = data;
        Manager *m = q->manager;
        int r;

        log_info("Switch to profile %s requested on the bus.", q->name);
        r = manager_set_profile(m, q->name);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROFILE, "No profile '%s'.", q->name);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED,
                                         "Profile '%s' has errors (see the journal or 'latnicectl check'); "
                                         "keeping profile %s.", q->name, m->profile ?: "none");
        if (r < 0)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED, "Cannot switch to profile '%s': %s",
                                         q->name, strerror(-r));
        return sd_bus_reply_method_return(call, NULL);
}

static int set_profile(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        _cleanup_(freep) char *path = NULL;
        ProfileRequest *q;
        const char *name;
        int r;

        r = sd_bus_message_read(call, "s", &name);
        if (r < 0)
                return r;
        /* Bad input gets its named error before authorization: asking is not doing. */
        if (!profile_name_valid(name)) {
                _cleanup_(freep) char *shown = utf8_escape_invalid(name, true);

                /* Cut by characters, not bytes: an error message that is not UTF-8 is never sent. */
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PROFILE_NAME,
                                         "Invalid profile name '%.*s': use letters, digits, '_', '.', '-'.",
                                         (int) utf8_prefix_len(shown ?: "?", 64), shown ?: "?");
        }
        r = profile_find(m->options.root, m->options.profile_dir, name, &path);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROFILE,
                                         "No profile '%s' (see ListProfiles).", name);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot look up profile '%s': %s", name,
                                         strerror(-r));
        q = calloc(1, sizeof(ProfileRequest) + strlen(name) + 1);
        if (!q)
                return -ENOMEM;
        q->manager = m;
        strcpy(q->name, name);
        /* The name is valid (letters, digits, '_', '.', '-'): a rule may allow some profiles only
         * (GameMode's, conf/gamemode/). */
        return bus_auth_polkit(m->bus_state->auth, call, c, LATNICE_POLKIT_SET_PROFILE,
                               (const char *const[]) { "profile", q->name, NULL }, set_profile_now, q, free, error);
}
CALLER_METHOD(method_set_profile, set_profile, false)

typedef struct SetRequest {
        Manager *manager;
        Target target;
        int latency_nice;
        uid_t caller;
        bool may_lower; /* authorized to lower (root or polkit): else raise only, thread by thread */
} SetRequest;

static SetRequest *set_request_free(SetRequest *s) {
        if (!s)
                return NULL;
        target_done(&s->target);
        return mfree(s);
}

static void set_request_freep(SetRequest **s) {
        set_request_free(*s);
}

static void set_request_destroy(void *p) {
        set_request_free(p);
}

/* Pins and reads the process a SetLatencyNice or SetForeground is about; never a kernel thread. */
static int set_request_new(Manager *m, const BusCaller *c, bool by_pidfd, int fd, uint32_t upid, int latency_nice,
                           SetRequest **ret, sd_bus_error *error) {
        _cleanup_(set_request_freep) SetRequest *s = NULL;
        int r;

        s = calloc(1, sizeof(SetRequest));
        if (!s)
                return -ENOMEM;
        *s = (SetRequest) { .manager = m, .target.pidfd = -1, .latency_nice = latency_nice, .caller = c->uid };
        r = by_pidfd ? target_from_pidfd(m->proc_fd, fd, &s->target, error)
                     : target_from_pid(m->proc_fd, c, upid, &s->target, error);
        if (r < 0)
                return r;
        if (s->target.st.flags & PROC_PF_KTHREAD)
                return sd_bus_error_setf(error, LATNICE_ERROR_KERNEL_THREAD,
                                         "%d is a kernel thread; latniced never changes kernel threads.",
                                         (int) s->target.pid);
        *ret = TAKE_PTR(s);
        return 0;
}

static int set_latency_nice_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        SetRequest *s = data;
        Manager *m = s->manager;
        ManualResult res;
        int r;

        /* The pidfd pins the process we checked; the start time catches a reused pid. */
        if (!target_still_there(m->proc_fd, &s->target))
                return sd_bus_error_setf(error, LATNICE_ERROR_PROCESS_CHANGED,
                                         "Process %d exited or its PID was reused; nothing applied.",
                                         (int) s->target.pid);
        r = manager_set_manual(m, &(ManualRequest) {
                                       .pid = s->target.pid,
                                       .pidfd = s->target.pidfd,
                                       .start_time = s->target.st.start_time,
                                       .uid = s->target.ruid,
                                       .comm = s->target.st.comm,
                                       .latency_nice = s->latency_nice,
                                       .may_lower = s->may_lower,
                                       .by = s->caller,
                               }, &res);
        if (r < 0)
                return no_such_process(error, s->target.pid, r);
        if (res.exited)
                return sd_bus_error_setf(error, LATNICE_ERROR_PROCESS_CHANGED,
                                         "Process %d exited while its value was set.", (int) s->target.pid);
        switch (res.outcome) {
        case AUTHZ_SET_APPLIED:
                break;
        case AUTHZ_SET_DENIED:
                return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED,
                                         "Lowering the latency nice of %d needs authorization; nothing applied.",
                                         (int) s->target.pid);
        case AUTHZ_SET_FAILED:
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot set latency nice %d on %d: %s",
                                         s->latency_nice, (int) s->target.pid, strerror(-res.set.first_error));
        case AUTHZ_SET_ALL_REALTIME:
                return sd_bus_error_setf(error, LATNICE_ERROR_NOT_SUPPORTED,
                                         "All %u threads of %d are realtime or idle; left alone.", res.set.n_threads,
                                         (int) s->target.pid);
        }
        return sd_bus_reply_method_return(call, "uu", res.set.n_applied, res.set.n_threads);
}

static int set_latency_nice(Manager *m, sd_bus_message *call, const BusCaller *c, bool by_pidfd,
                            sd_bus_error *error) {
        _cleanup_(set_request_freep) SetRequest *s = NULL;
        _cleanup_(freep) int *values = NULL;
        size_t n_values = 0;
        int32_t value;
        int r, fd = -1;
        uint32_t upid = 0;
        AuthzSet need;

        /* The value first: bad input gets its named error before anything else. */
        r = by_pidfd ? sd_bus_message_read(call, "hi", &fd, &value) : sd_bus_message_read(call, "ui", &upid, &value);
        if (r < 0)
                return r;
        switch (authz_set_check_args(value, by_pidfd, upid, m->probe.backend != BACKEND_NONE)) {
        case AUTHZ_SET_ARGS_OK:
                break;
        case AUTHZ_SET_ARGS_INVALID_VALUE:
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_VALUE,
                                         "Invalid latency nice %" PRIi32 ": must be in %d..%d.", value, LATNICE_MIN,
                                         LATNICE_MAX);
        case AUTHZ_SET_ARGS_INVALID_PID:
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PID, "Invalid PID %" PRIu32 ".", upid);
        case AUTHZ_SET_ARGS_NOT_SUPPORTED:
                return sd_bus_error_setf(error, LATNICE_ERROR_NOT_SUPPORTED, "This kernel cannot apply latency "
                                         "nice: %s", m->probe.reason);
        }

        r = set_request_new(m, c, by_pidfd, fd, upid, value, &s, error);
        if (r < 0)
                return r;
        r = sched_thread_values(&m->probe, m->proc_fd, s->target.pid, &values, &n_values);
        if (r < 0)
                return no_such_process(error, s->target.pid, r);
        need = authz_set_latency_nice(c->uid, s->target.ruid, s->target.euid, values, n_values, value);
        if (need == AUTHZ_SET_FREE) {
                /* Root may lower; anybody else raises thread by thread (a thread may change meanwhile). */
                s->may_lower = authz_may_lower_unasked(c->uid);
                r = set_latency_nice_now(call, s, error);
                return r < 0 ? r : 1;
        }
        s->may_lower = true; /* once polkit said yes */
        /* bus_auth_polkit() owns the request from here on, whatever it answers. */
        return bus_auth_polkit(m->bus_state->auth, call, c,
                               need == AUTHZ_SET_ANY ? LATNICE_POLKIT_ANY : LATNICE_POLKIT_LOWER, NULL,
                               set_latency_nice_now, TAKE_PTR(s), set_request_destroy, error);
}
CALLER_METHOD(method_set_latency_nice, set_latency_nice, false)
CALLER_METHOD(method_set_latency_nice_by_pidfd, set_latency_nice, true)

/* SetForeground: the boost itself is manager-foreground.c's; here who may name which process. */
static int set_foreground_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        SetRequest *s = data;
        Manager *m = s->manager;
        int r;

        if (!target_still_there(m->proc_fd, &s->target))
                return sd_bus_error_setf(error, LATNICE_ERROR_PROCESS_CHANGED,
                                         "Process %d exited or its PID was reused; nothing boosted.",
                                         (int) s->target.pid);
        r = manager_foreground_set(m, s->caller, s->target.pid, s->target.st.start_time, s->target.ruid, call);
        if (r == -EBUSY)
                return sd_bus_error_set(error, LATNICE_ERROR_BUSY, "Too many users have a foreground boost.");
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot boost %d: %s", (int) s->target.pid,
                                         strerror(-r));
        return sd_bus_reply_method_return(call, "u", (uint32_t) r);
}

static int set_foreground(Manager *m, sd_bus_message *call, const BusCaller *c, bool by_pidfd,
                          sd_bus_error *error) {
        _cleanup_(set_request_freep) SetRequest *s = NULL;
        uint32_t upid = 0;
        int r, fd = -1;

        r = by_pidfd ? sd_bus_message_read(call, "h", &fd) : sd_bus_message_read(call, "u", &upid);
        if (r < 0)
                return r;
        if (!by_pidfd && upid == 0) {
                /* 0: nothing of the caller's has focus (its own boost ends; nothing to authorize). */
                r = manager_foreground_set(m, c->uid, 0, 0, c->uid, NULL);
                return r < 0 ? r : sd_bus_reply_method_return(call, "u", (uint32_t) 0);
        }
        if (!by_pidfd && upid > INT_MAX)
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PID, "Invalid PID %" PRIu32 ".", upid);
        if (!manager_foreground_enabled(m))
                /* Off ([Foreground] LatencyNice= unset): cheap, and nothing to ask polkit. */
                return sd_bus_reply_method_return(call, "u", (uint32_t) 0);

        r = set_request_new(m, c, by_pidfd, fd, upid, 0, &s, error);
        if (r < 0)
                return r;
        switch (authz_set_foreground(c->uid, s->target.ruid, target_session(&s->target))) {
        case AUTHZ_FOREGROUND_NOT_YOURS:
                return sd_bus_error_setf(error, LATNICE_ERROR_NOT_YOUR_PROCESS,
                                         "Process %d belongs to another user: only root may boost it.",
                                         (int) s->target.pid);
        case AUTHZ_FOREGROUND_INACTIVE:
                return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED,
                                         "Process %d runs in a session that is not active or not local.",
                                         (int) s->target.pid);
        case AUTHZ_FOREGROUND_FREE:
                r = set_foreground_now(call, s, error);
                return r < 0 ? r : 1;
        case AUTHZ_FOREGROUND_ASK:
                break;
        }
        /* The same window again (focus services repeat themselves): polkit said yes to this very boost, whose
         * target was checked above to be the caller's, in an active session. */
        r = manager_foreground_current(m, c->uid, s->target.pid, s->target.st.start_time, call);
        if (r >= 0)
                return sd_bus_reply_method_return(call, "u", (uint32_t) r);
        return bus_auth_polkit(m->bus_state->auth, call, c, LATNICE_POLKIT_FOREGROUND, NULL, set_foreground_now,
                               TAKE_PTR(s), set_request_destroy, error);
}
CALLER_METHOD(method_set_foreground, set_foreground, false)
CALLER_METHOD(method_set_foreground_by_pidfd, set_foreground, true)

/* CollectStats: the collection is the manager's (manager-stats.c); here who may ask and who waits. */
static int collect_stats_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        Manager *m = data;
        ManagerBus *b = m->bus_state;
        uint32_t seconds;
        int r;

        r = sd_bus_message_rewind(call, true);
        if (r >= 0)
                r = sd_bus_message_read(call, "u", &seconds);
        if (r < 0)
                return r;
        if (!b)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "Not ready.");
        if (b->n_stats_waiters >= STATS_WAITERS_MAX)
                return sd_bus_error_setf(error, LATNICE_ERROR_BUSY,
                                         "A collection is under way and %u callers wait for it already; "
                                         "try again in %" PRIu64 " s.", b->n_stats_waiters,
                                         (manager_stats_deadline(m) - monotonic_usec()) / 1000000 + 1);
        if (!manager_stats_running(m)) {
                _cleanup_(freep) char *reason = NULL;

                r = manager_stats_start(m, (uint64_t) seconds * 1000000, &reason);
                if (r < 0) {
                        log_warning("Cannot collect scheduler statistics: %s",
                                    reason ?: strerror(-r));
                        return sd_bus_error_setf(error, LATNICE_ERROR_NOT_SUPPORTED,
                                                 "Cannot collect scheduler statistics here: %s.",
                                                 reason ?: strerror(-r));
                }
        }
        /* A caller that comes while one runs gets the same result, when it ends. */
        b->stats_waiters[b->n_stats_waiters++] = sd_bus_message_ref(call);
        return 1;
}

static int collect_stats(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        uint32_t seconds;
        int r;

        r = sd_bus_message_read(call, "u", &seconds);
        if (r < 0)
                return r;
        if (seconds < LATNICE_STATS_MIN_SEC || seconds > LATNICE_STATS_MAX_SEC)
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_DURATION,
                                         "Invalid duration %" PRIu32 " s: collect for %d..%d s.", seconds,
                                         LATNICE_STATS_MIN_SEC, LATNICE_STATS_MAX_SEC);
        return bus_auth_polkit(m->bus_state->auth, call, c, LATNICE_POLKIT_STATS, NULL, collect_stats_now, m, NULL,
                               error);
}
CALLER_METHOD(method_collect_stats, collect_stats, false)

void manager_bus_stats_done(Manager *m, const StatsResult *result, int error) {
        ManagerBus *b = m->bus_state;

        if (!b)
                return;
        for (unsigned i = 0; i < b->n_stats_waiters; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = b->stats_waiters[i], *reply = NULL;
                int r;

                b->stats_waiters[i] = NULL;
                if (!result) {
                        if (error == -ECANCELED)
                                (void) sd_bus_reply_method_errorf(call, SD_BUS_ERROR_FAILED,
                                                                  "latniced stopped; the collection was dropped.");
                        else
                                (void) sd_bus_reply_method_errnof(call, error,
                                                                  "Cannot read the scheduler statistics: %m");
                        continue;
                }
                r = sd_bus_message_new_method_return(call, &reply);
                if (r >= 0)
                        r = append_stats_result(reply, result);
                if (r >= 0)
                        r = sd_bus_send(NULL, reply, NULL);
                if (r < 0)
                        (void) sd_bus_reply_method_errnof(call, r, "Cannot send the scheduler statistics: %m");
        }
        b->n_stats_waiters = 0;
}

/*
 * Properties without EMITS_CHANGE are counters: read them when you need them
 * (introspection says EmitsChangedSignal=false for those, const for the
 * ones fixed at start).
 */
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),

        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        /* They change while a BPF scheduler (sched_ext) comes and goes. */
        SD_BUS_PROPERTY("Backend", "s", property_get_backend, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("BackendReason", "s", property_get_backend_reason, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("DefaultSliceNSec", "t", NULL, offsetof(Manager, probe.base_slice_ns),
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("EventSource", "s", property_get_event_source, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("EventSourceReason", "s", property_get_string, offsetof(Manager, source_reason),
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Profile", "s", property_get_string, offsetof(Manager, profile),
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ProfilePath", "s", property_get_string, offsetof(Manager, profile_path),
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Foreground", "s", property_get_foreground, 0, 0),
        SD_BUS_PROPERTY("RuleFiles", "as", property_get_rule_files, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("RuleErrors", "as", property_get_rule_errors, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Rules", "u", property_get_rules, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("AppliedProcesses", "u", property_get_applied_processes, 0, 0),
        SD_BUS_PROPERTY("TasksApplied", "t", NULL, offsetof(Manager, tasks_applied), 0),
        SD_BUS_PROPERTY("ApplyErrors", "t", NULL, offsetof(Manager, apply_errors), 0),
        SD_BUS_PROPERTY("EventsSeen", "t", NULL, offsetof(Manager, events_seen), 0),
        SD_BUS_PROPERTY("EventsLost", "t", NULL, offsetof(Manager, events_lost), 0),
        SD_BUS_PROPERTY("Rescans", "t", NULL, offsetof(Manager, rescans), 0),
        SD_BUS_PROPERTY("Reloads", "t", NULL, offsetof(Manager, reloads), 0),
        SD_BUS_PROPERTY("UnitWalks", "t", NULL, offsetof(Manager, unit_walks), 0),
        SD_BUS_PROPERTY("CmdlineTruncated", "t", NULL, offsetof(Manager, cmdline_truncated), 0),
        SD_BUS_PROPERTY("Prefilter", "s", property_get_string, offsetof(Manager, prefilter), 0),
        SD_BUS_PROPERTY("PrefilterMemory", "t", NULL, offsetof(Manager, prefilter_memory), 0),
        SD_BUS_PROPERTY("AppliedSignalsSuppressed", "t", property_get_suppressed, 0, 0),
        SD_BUS_PROPERTY("LastStats", "(ttssta(suuttttat))", property_get_last_stats, 0, 0),
        SD_BUS_PROPERTY("StatsWaiting", "u", property_get_stats_waiting, 0, 0),

        SD_BUS_METHOD_WITH_ARGS("GetTask",
                                SD_BUS_ARGS("u", pid),
                                SD_BUS_RESULT("s", comm, "i", latency_nice, "s", set_by, "s", rule, "s", rule_ref,
                                              "s", backend, "t", start_time, "a(ussiitb)", threads),
                                method_get_task, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetTaskByPIDFD",
                                SD_BUS_ARGS("h", pidfd),
                                SD_BUS_RESULT("s", comm, "i", latency_nice, "s", set_by, "s", rule, "s", rule_ref,
                                              "s", backend, "t", start_time, "a(ussiitb)", threads),
                                method_get_task_by_pidfd, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListApplied",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(usiss)", processes),
                                method_list_applied, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Explain",
                                SD_BUS_ARGS("u", pid),
                                SD_BUS_RESULT("a{ss}", task, "s", how, "(sssui)", rule, "as", because,
                                              "a(sssui)", shadowed, "(sssui)", unit_rule),
                                method_explain, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ExplainByPIDFD",
                                SD_BUS_ARGS("h", pidfd),
                                SD_BUS_RESULT("a{ss}", task, "s", how, "(sssui)", rule, "as", because,
                                              "a(sssui)", shadowed, "(sssui)", unit_rule),
                                method_explain_by_pidfd, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListRules",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(sssuiasbs)", rules),
                                method_list_rules, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListProfiles",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ssb)", profiles),
                                method_list_profiles, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Reload",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("u", rules, "u", errors),
                                method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetProfile",
                                SD_BUS_ARGS("s", name),
                                SD_BUS_NO_RESULT,
                                method_set_profile, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetLatencyNice",
                                SD_BUS_ARGS("u", pid, "i", latency_nice),
                                SD_BUS_RESULT("u", threads_applied, "u", threads),
                                method_set_latency_nice, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetLatencyNiceByPIDFD",
                                SD_BUS_ARGS("h", pidfd, "i", latency_nice),
                                SD_BUS_RESULT("u", threads_applied, "u", threads),
                                method_set_latency_nice_by_pidfd, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetForeground",
                                SD_BUS_ARGS("u", pid),
                                SD_BUS_RESULT("u", processes),
                                method_set_foreground, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetForegroundByPIDFD",
                                SD_BUS_ARGS("h", pidfd),
                                SD_BUS_RESULT("u", processes),
                                method_set_foreground_by_pidfd, SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_METHOD_WITH_ARGS("CollectStats",
                                SD_BUS_ARGS("u", seconds),
                                SD_BUS_RESULT("t", finished_usec, "t", duration_usec, "s", hook, "s", note,
                                              "t", missed, "a(suuttttat)", classes),
                                method_collect_stats, SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_SIGNAL_WITH_NAMES("Applied", "usis", SD_BUS_PARAM(pid) SD_BUS_PARAM(comm)
                                 SD_BUS_PARAM(latency_nice) SD_BUS_PARAM(rule), 0),
        SD_BUS_SIGNAL_WITH_NAMES("Reloaded", "uu", SD_BUS_PARAM(rules) SD_BUS_PARAM(errors), 0),

        SD_BUS_VTABLE_END
};

/* ---- connection lifecycle -------------------------------------------------- */

int manager_bus_add_objects(Manager *m, sd_bus *bus) {
        ManagerBus *b = manager_bus_state(m);
        int r;

        if (!b)
                return -ENOMEM;
        if (!b->auth) {
                b->auth = bus_auth_new(m->bus);
                if (!b->auth)
                        return -ENOMEM;
        }
        if (bus != m->bus)
                /* A direct connection (tests): the object lives as long as the connection. */
                return sd_bus_add_object_vtable(bus, NULL, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, manager_vtable,
                                                m);
        b->object_slot = sd_bus_slot_unref(b->object_slot);
        r = sd_bus_add_object_vtable(bus, &b->object_slot, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, manager_vtable,
                                     m);
        if (r < 0)
                return r;
        (void) sd_bus_slot_set_description(b->object_slot, "org.latnice1.Manager");
        return 0;
}

static int manager_bus_on_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t ret = 0;

        Manager *m = userdata;

        if (e)
                log_error("Cannot own %s: %s (is the D-Bus policy org.latnice1.conf installed?)", LATNICE_BUS_NAME,
                          e->message ?: e->name);
        else if (sd_bus_message_read(reply, "u", &ret) >= 0 && ret != 1 /* PRIMARY_OWNER */ && ret != 4 /* ALREADY */)
                log_error("Cannot own %s: another latniced has it (RequestName said %u).", LATNICE_BUS_NAME, ret);
        else
                log_info("Serving %s on the system bus.", LATNICE_BUS_NAME);
        /* Without the name the process rules still work: ready either way, the log says what is missing. */
        manager_notify_ready(m);
        return 0;
}

int manager_bus_on_connected(Manager *m) {
        ManagerBus *b;
        int r;

        if (!m->bus)
                return 0;
        r = manager_bus_add_objects(m, m->bus);
        if (r < 0)
                return r;
        b = m->bus_state;
        /* Asynchronous: the loop keeps handling execs while the bus answers. */
        r = sd_bus_request_name_async(m->bus, &b->name_slot, LATNICE_BUS_NAME, 0, manager_bus_on_name, m);
        if (r < 0)
                return r;
        return 0;
}

void manager_bus_on_disconnected(Manager *m) {
        ManagerBus *b = m->bus_state;

        if (!b)
                return;
        /* Calls waiting for polkit or for their caller's identity die with their connection. */
        bus_auth_free(b->auth);
        for (unsigned i = 0; i < b->n_stats_waiters; i++)
                sd_bus_message_unref(b->stats_waiters[i]);
        sd_bus_slot_unref(b->name_slot);
        sd_bus_slot_unref(b->object_slot);
        free(b);
        m->bus_state = NULL;
}

/* ---- signals --------------------------------------------------------------- */

void manager_bus_emit_applied(Manager *m, pid_t pid, const char *comm, int value, const char *rule) {
        ManagerBus *b = m->bus_state;
        const char *s_comm, *s_rule;
        Esc e = {};

        if (!m->bus || !b || !token_bucket_take(&b->applied, monotonic_usec()))
                return;
        s_comm = esc(&e, comm);
        s_rule = esc(&e, rule);
        if (e.error == 0)
                (void) sd_bus_emit_signal(m->bus, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "Applied", "usis",
                                          (uint32_t) pid, s_comm, (int32_t) value, s_rule);
        (void) esc_done(&e, 0);
}

void manager_bus_emit_backend(Manager *m) {
        if (!m->bus || !m->bus_state)
                return;
        (void) sd_bus_emit_properties_changed(m->bus, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "Backend",
                                              "BackendReason", NULL);
}

void manager_bus_emit_reloaded(Manager *m) {
        uint32_t n_rules = m->rules ? m->rules->n_rules : 0, n_errors = m->rules ? m->rules->n_errors : 0;

        if (!m->bus || !m->bus_state)
                return;
        (void) sd_bus_emit_properties_changed(m->bus, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "Profile",
                                              "ProfilePath", "RuleFiles", "RuleErrors", "Rules", NULL);
        (void) sd_bus_emit_signal(m->bus, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "Reloaded", "uu", n_rules,
                                  n_errors);
}
