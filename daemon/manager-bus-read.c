/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.latnice1's methods that read (GetTask, ListApplied, Explain,
 * ListRules, ListProfiles): who may see which process is authz.c's and
 * bus-target.c's, which rule applies match.c's, who set a value
 * applied.c's; here the answers become replies.
 */

#include "applied.h"
#include "authz.h"
#include "bus-reply.h"
#include "bus-target.h"
#include "latnice/dbus.h"
#include "manager-bus-internal.h"
#include "manager-decide.h"
#include "manager-scx.h"
#include "match.h"
#include "proc.h"
#include "profile.h"
#include "util.h"

/* A reply that is one array of sig, open for its elements. */
static int reply_new_array(sd_bus_message *call, const char *sig, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', sig);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(reply);
        return 0;
}

/* Closes the array reply_new_array() opened and sends the reply. */
static int reply_send_array(sd_bus_message *reply) {
        int r;

        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* The process a GetTask or an Explain is about: only root and the process's own user may read it. */
static int target_read_own(Manager *m, sd_bus_message *call, const BusCaller *c, bool by_pidfd, Target *t,
                           sd_bus_error *error) {
        int r;

        r = target_read(m->proc_fd, call, c, by_pidfd, t, error);
        if (r < 0)
                return r;
        return target_check_owner(c, t, error);
}

/* One element of GetTask's array of threads: 0 also for a thread gone meanwhile (left out), or < 0. */
static int append_thread(Manager *m, sd_bus_message *reply, pid_t pid, pid_t tid) {
        ThreadSched ts;
        ProcStat st = {};
        BusEsc es = {};
        int r;

        if (sched_thread_get(&m->probe, tid, &ts) < 0)
                return 0; /* exited meanwhile */
        (void) proc_stat_read_pid(m->proc_fd, pid, tid, &st);
        r = sd_bus_message_append(reply, "(ussiitb)", (uint32_t) tid, bus_esc(&es, st.comm),
                                  sched_policy_to_string(ts.attr.sched_policy), (int32_t) ts.attr.sched_nice,
                                  (int32_t) ts.latency_nice,
                                  m->probe.backend == BACKEND_EEVDF_SLICE ? (uint64_t) ts.attr.sched_runtime
                                                                          : (uint64_t) 0,
                                  (int) ts.realtime);
        return bus_esc_done(&es, r);
}

/* Closes GetTask's array of threads and sends the reply (if the process is still the one read). */
static int finish_task_reply(Manager *m, const Target *t, sd_bus_message *reply, sd_bus_error *error) {
        int r;

        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return target_send_reply(m->proc_fd, t, reply, error);
}

/* A GetTask whose threads are read a chunk per turn of the loop (TASK_WALK_CHUNK). */
struct TaskWalk {
        Manager *m;
        sd_bus_message *call;
        sd_bus_message *reply;
        Target t;
        uid_t uid;
        pid_t *tids;
        int n, next;
        sd_event_source *source;
};

static TaskWalk *task_walk_free(TaskWalk *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->source);
        sd_bus_message_unref(w->reply);
        sd_bus_message_unref(w->call);
        target_done(&w->t);
        free(w->tids);
        free(w);
        return NULL;
}

void manager_bus_walks_free(ManagerBus *b) {
        for (unsigned i = 0; i < b->n_walks; i++)
                task_walk_free(b->walks[i]);
        b->n_walks = 0;
}

/* The walk is over (answered or failed): it leaves the list and goes. */
static void task_walk_done(Manager *m, TaskWalk *w) {
        ManagerBus *b = m->bus_state;

        for (unsigned i = 0; b && i < b->n_walks; i++)
                if (b->walks[i] == w) {
                        b->walks[i] = b->walks[--b->n_walks];
                        break;
                }
        task_walk_free(w);
}

static int task_walk_on_turn(sd_event_source *s, void *userdata) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        TaskWalk *w = userdata;
        Manager *m = w->m;
        int r = 0, end = w->next + TASK_WALK_CHUNK < w->n ? w->next + TASK_WALK_CHUNK : w->n;

        (void) s;
        for (; r >= 0 && w->next < end; w->next++)
                r = append_thread(m, w->reply, w->t.pid, w->tids[w->next]);
        if (r >= 0 && w->next < w->n)
                return 0; /* the next chunk at the next turn */
        if (r >= 0)
                r = finish_task_reply(m, &w->t, w->reply, &error);
        if (r < 0 || sd_bus_error_is_set(&error)) {
                if (!sd_bus_error_is_set(&error))
                        (void) sd_bus_error_set_errno(&error, r);
                (void) sd_bus_reply_method_error(w->call, &error);
        }
        task_walk_done(m, w);
        return 0;
}

/* May c start a walk now? Asked before anything is read, so that a refusal costs nothing. */
static int task_walk_admit(Manager *m, const BusCaller *c, sd_bus_error *error) {
        ManagerBus *b = m->bus_state;
        unsigned mine = 0;

        if (!b)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "Not ready.");
        for (unsigned i = 0; i < b->n_walks; i++)
                if (b->walks[i]->uid == c->uid)
                        mine++;
        if (mine >= TASK_WALKS_PER_USER)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "uid %u has %u per-thread walks in flight, the per-user bound: a process "
                                         "with more than %d threads is read a part at a time; try again when one "
                                         "has answered.",
                                         (unsigned) c->uid, mine, TASK_WALK_CHUNK);
        if (b->n_walks >= TASK_WALKS_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "%u per-thread walks are in flight, the bound for all users together; "
                                         "try again when one has answered.",
                                         b->n_walks);
        return 0;
}

/*
 * Takes over the reply (its array open) and the threads left to read: they are read at the turns to
 * come. Refused past the bounds of walks in flight (per user and in all).
 */
static int task_walk_start(Manager *m, sd_bus_message *call, const BusCaller *c, Target *t,
                           sd_bus_message **reply, pid_t **tids, int n, sd_bus_error *error) {
        ManagerBus *b = m->bus_state;
        TaskWalk *w;
        int r;

        r = task_walk_admit(m, c, error);
        if (r < 0)
                return r;
        w = calloc(1, sizeof(TaskWalk));
        if (!w)
                return -ENOMEM;
        *w = (TaskWalk) {
                .m = m,
                .call = sd_bus_message_ref(call),
                .reply = TAKE_PTR(*reply),
                .t = *t,
                .uid = c->uid,
                .tids = TAKE_PTR(*tids),
                .n = n,
        };
        t->pidfd = -1; /* the walk's now */
        r = sd_event_add_defer(m->event, &w->source, task_walk_on_turn, w);
        if (r >= 0)
                r = sd_event_source_set_enabled(w->source, SD_EVENT_ON);
        /* After everything else that is ready: execs, other calls, timers. */
        if (r >= 0)
                r = sd_event_source_set_priority(w->source, SD_EVENT_PRIORITY_IDLE);
        if (r >= 0)
                (void) sd_event_source_set_description(w->source, "task-walk");
        if (r < 0) {
                task_walk_free(w);
                return r;
        }
        b->walks[b->n_walks++] = w;
        return 1;
}

static int get_task(Manager *m, sd_bus_message *call, const BusCaller *c, bool by_pidfd, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(freep) pid_t *tids = NULL;
        _cleanup_(target_done) Target t = { .pidfd = -1 };
        const char *set_by, *rule = "", *ref = "";
        ThreadSched main_thread = {};
        AppliedProcess *e;
        bool ours;
        BusEsc es = {};
        int r, n;

        r = target_read_own(m, call, c, by_pidfd, &t, error);
        if (r < 0)
                return r;
        if (t.st.num_threads > TASK_WALK_CHUNK) {
                r = task_walk_admit(m, c, error);
                if (r < 0)
                        return r;
        }
        r = sched_thread_get(&m->probe, t.pid, &main_thread);
        if (r < 0 && r != -ESRCH)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot read the scheduling of %d: %s",
                                         (int) t.pid, strerror(-r));

        e = applied_table_get_process(m->applied, t.pid, t.st.start_time);
        set_by = applied_set_by(&m->probe, m->proc_fd, e, &main_thread, &ours);
        if (ours) {
                rule = e->rule_name ?: "";
                ref = e->rule ?: "";
        } else if (sched_thread_has_value(&m->probe, &main_thread)) {
                const AppliedProcess *o =
                        manager_value_origin(m, t.pid, sched_thread_raw(&m->probe, &main_thread));

                if (o) {
                        set_by = LATNICE_SET_BY_INHERITED;
                        rule = o->rule_name ?: "";
                        ref = o->rule ?: "";
                }
        }

        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "sisssst", bus_esc(&es, t.st.comm), main_thread.latency_nice, set_by,
                                          bus_esc(&es, rule), bus_esc(&es, ref), manager_backend(m),
                                          t.st.start_time);
        r = bus_esc_done(&es, r);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ussiitb)");
        if (r < 0)
                return r;
        /* XXX: the listing of the threads is one read of /proc/PID/task, a few ms for 10,000 threads. */
        n = proc_list_tasks(m->proc_fd, t.pid, &tids);
        if (n > TASK_WALK_CHUNK)
                return task_walk_start(m, call, c, &t, &reply, &tids, n, error);
        for (int i = 0; i < n; i++) {
                r = append_thread(m, reply, t.pid, tids[i]);
                if (r < 0)
                        return r;
        }
        return finish_task_reply(m, &t, reply, error);
}
CALLER_METHOD(method_get_task, get_task, false)
CALLER_METHOD(method_get_task_by_pidfd, get_task, true)

static int list_applied(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        AppliedProcess *e;
        size_t i = 0;
        int r;

        r = reply_new_array(call, "(usiss)", &reply);
        if (r < 0)
                return r;
        while (m->applied && (e = applied_table_next(m->applied, &i))) {
                BusEsc es = {};

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
                r = sd_bus_message_append(reply, "(usiss)", (uint32_t) e->pid, bus_esc(&es, e->comm),
                                          (int32_t) e->latency_nice, bus_esc(&es, e->rule_name),
                                          bus_esc(&es, e->rule));
                r = bus_esc_done(&es, r);
                if (r < 0)
                        return r;
        }
        return reply_send_array(reply);
}
CALLER_METHOD(method_list_applied, list_applied, false)

static int explain(Manager *m, sd_bus_message *call, const BusCaller *c, bool by_pidfd, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(target_done) Target tg = { .pidfd = -1 };
        _cleanup_(match_explain_done) MatchExplain ex = {};
        _cleanup_(proc_task_done) ProcTask p = {};
        const char *how;
        TaskInfo t;
        int r;

        r = target_read_own(m, call, c, by_pidfd, &tg, error);
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
        /* The parent is the chain's first link (read with the same start-time check): named under the same
         * condition, after the match, which saw its name. */
        if (c->uid != 0 && t.parent_comm &&
            (p.n_ancestors == 0 || p.ancestors[0].pid != p.stat.ppid || p.ancestors[0].hidden))
                t.parent_comm = "?";
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
                r = bus_append_task(reply, &t);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", how);
        if (r >= 0)
                r = bus_append_rule(reply, ex.rule);
        if (r >= 0)
                r = bus_append_rule_keys(reply, ex.rule);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sssui)");
        for (size_t i = 0; r >= 0 && i < ex.match.n_shadowed; i++)
                r = bus_append_rule(reply, ex.match.shadowed[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = bus_append_rule(reply, ex.unit_rule);
        if (r < 0)
                return r;
        return target_send_reply(m->proc_fd, &tg, reply, error);
}
CALLER_METHOD(method_explain, explain, false)
CALLER_METHOD(method_explain_by_pidfd, explain, true)

int method_list_rules(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        int r;

        r = reply_new_array(call, "(sssuiasbs)", &reply);
        for (size_t i = 0; r >= 0 && m->rules && i < m->rules->n_rules; i++) {
                const Rule *q = &m->rules->rules[i];
                BusEsc e = {};

                r = sd_bus_message_open_container(reply, 'r', "sssuiasbs");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "sssui", rule_kind_to_string(q->kind), bus_esc(&e, q->name),
                                                  bus_esc(&e, q->file), q->line, q->latency_nice);
                r = bus_esc_done(&e, r);
                if (r >= 0)
                        r = bus_append_rule_keys(reply, q);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "bs", (int) q->override,
                                                  threads_mode_to_string(q->threads));
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r < 0)
                return r;
        return reply_send_array(reply);
}

int method_list_profiles(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(strv_freep) char **names = NULL;
        Manager *m = userdata;
        int r;

        r = profile_list(m->options.root, m->options.profile_dir, &names);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot list profiles: %s", strerror(-r));
        r = reply_new_array(call, "(ssb)", &reply);
        for (char **n = names; r >= 0 && n && *n; n++) {
                _cleanup_(freep) char *path = NULL;
                BusEsc e = {};

                (void) profile_find(m->options.root, m->options.profile_dir, *n, &path);
                r = sd_bus_message_append(reply, "(ssb)", bus_esc(&e, *n), bus_esc(&e, path),
                                          (int) streq_ptr(*n, m->profile));
                r = bus_esc_done(&e, r);
        }
        if (r < 0)
                return r;
        return reply_send_array(reply);
}
