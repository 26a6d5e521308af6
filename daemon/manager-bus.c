/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.latnice1 on the system bus: the vtable of /org/latnice1
 * (org.latnice1.Manager), its signals, and the authorization of the calls
 * that change something. Reading is open to every local user. Reload,
 * SetProfile and lowering a value need root or a polkit action, checked
 * asynchronously: the method call stays pending until polkit answers, so
 * the event loop (and exec handling) never waits for a human.
 *
 * State that lives as long as one connection (slots, pending polkit
 * queries, the signal rate limit, manual values) is in struct ManagerBus;
 * everything the API reports is read from the Manager.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sys/pidfd.h>
#include <time.h>

#include "latnice/dbus.h"
#include "log.h"
#include "manager-bus.h"
#include "match.h"
#include "proc.h"
#include "profile.h"
#include "util.h"

/* Applied: a storm of execs must not become a storm on the bus. */
#define APPLIED_BURST 50
#define APPLIED_PER_SEC 20
/* Method calls waiting for polkit, per connection. */
#define AUTH_QUERIES_MAX 64
/* Values set through SetLatencyNice that GetTask can name as "manual". */
#define MANUAL_MAX 64

typedef struct AuthQuery AuthQuery;

typedef int (*AuthContinuation)(Manager *m, sd_bus_message *call, void *data, sd_bus_error *error);

struct AuthQuery {
        Manager *manager;
        sd_bus_message *call;
        sd_bus_slot *slot;
        char *action;
        AuthContinuation cont;
        void *data;
        void (*free_data)(void *data);
        AuthQuery *next, *prev;
};

typedef struct ManualValue {
        pid_t pid;
        uint64_t start_time;
        uint64_t raw;
        uid_t uid;
        int latency_nice;
} ManualValue;

typedef struct ManagerBus {
        sd_bus_slot *object_slot;
        sd_bus_slot *name_slot;
        AuthQuery *queries;
        unsigned n_queries;
        /* token bucket for Applied, in signals * 1000 */
        uint64_t applied_tokens;
        uint64_t applied_last_usec;
        uint64_t applied_suppressed;
        ManualValue manual[MANUAL_MAX];
        unsigned manual_next;
} ManagerBus;

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

/* ---- authorization ------------------------------------------------------ */

static AuthQuery *auth_query_free(AuthQuery *q) {
        if (!q)
                return NULL;
        if (q->manager && q->manager->bus_state) {
                ManagerBus *b = q->manager->bus_state;

                if (q->prev)
                        q->prev->next = q->next;
                else if (b->queries == q)
                        b->queries = q->next;
                if (q->next)
                        q->next->prev = q->prev;
                b->n_queries--;
        }
        sd_bus_slot_unref(q->slot);
        sd_bus_message_unref(q->call);
        if (q->free_data)
                q->free_data(q->data);
        free(q->action);
        free(q);
        return NULL;
}

/* The caller's effective uid (what the bus vouches for) and pid. */
static int bus_caller(sd_bus_message *call, uid_t *ret_uid, pid_t *ret_pid) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *c = NULL;
        int r;

        r = sd_bus_query_sender_creds(call, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID, &c);
        if (r < 0)
                return r;
        if (ret_uid) {
                r = sd_bus_creds_get_euid(c, ret_uid);
                if (r < 0)
                        return r;
        }
        if (ret_pid) {
                r = sd_bus_creds_get_pid(c, ret_pid);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int auth_finish(AuthQuery *q, bool authorized, const sd_bus_error *why) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (!authorized)
                return sd_bus_reply_method_error(q->call, why);
        r = q->cont(q->manager, q->call, q->data, &error);
        if (r < 0)
                return sd_bus_reply_method_errno(q->call, r, &error);
        return 0;
}

static int auth_on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        AuthQuery *q = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error why = SD_BUS_ERROR_NULL;
        const sd_bus_error *e;
        int authorized = 0, challenge = 0, r;

        e = sd_bus_message_get_error(reply);
        if (e) {
                /* Not installed, not activatable, or its unit masked/failed: polkit is missing. */
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
                    strncmp(e->name, "org.freedesktop.DBus.Error.Spawn.", 32) == 0 ||
                    strncmp(e->name, "org.freedesktop.systemd1.", 25) == 0)
                        r = sd_bus_error_setf(&why, LATNICE_ERROR_ACCESS_DENIED,
                                              "Only root may do this here: polkit is not available to authorize "
                                              "%s (%s).", q->action, e->message ?: e->name);
                else
                        r = sd_bus_error_setf(&why, LATNICE_ERROR_ACCESS_DENIED,
                                              "Authorization of %s failed: %s", q->action, e->message ?: e->name);
                log_notice("polkit check of %s failed: %s: %s", q->action, e->name, e->message ?: "");
                (void) r;
                goto done;
        }
        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0) {
                log_warning_errno(r, "Cannot parse polkit's answer for %s: %m", q->action);
                sd_bus_error_setf(&why, LATNICE_ERROR_ACCESS_DENIED, "Cannot parse polkit's answer.");
                authorized = 0;
                goto done;
        }
        if (!authorized) {
                if (challenge)
                        sd_bus_error_setf(&why, LATNICE_ERROR_INTERACTIVE_AUTH_REQUIRED,
                                          "%s needs authentication: call with interactive authorization allowed "
                                          "(e.g. run latnicectl on a terminal) or as root.", q->action);
                else
                        sd_bus_error_setf(&why, LATNICE_ERROR_ACCESS_DENIED, "Not authorized: polkit refused %s.",
                                          q->action);
        }
done:
        r = auth_finish(q, authorized, &why);
        if (r < 0)
                log_debug_errno(r, "Failed to reply to a call that waited for polkit: %m");
        auth_query_free(q);
        return 0;
}

/*
 * Runs cont now if the caller is root, else asks polkit for action and runs
 * cont when it says yes; replies AccessDenied otherwise. Takes ownership of
 * data (free_data frees it). Returns what a method handler returns: 1 when
 * the call is pending or answered, < 0 for an error reply.
 */
static int bus_authorize(Manager *m, sd_bus_message *call, const char *action, AuthContinuation cont, void *data,
                         void (*free_data)(void *), sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = NULL;
        ManagerBus *b = m->bus_state;
        AuthQuery *q = NULL;
        const char *sender;
        uid_t uid;
        int r;

        r = bus_caller(call, &uid, NULL);
        if (r < 0) {
                if (free_data)
                        free_data(data);
                return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED, "Cannot identify the caller: %s",
                                         strerror(-r));
        }
        if (uid == 0) {
                r = cont(m, call, data, error);
                if (free_data)
                        free_data(data);
                return r < 0 ? r : 1;
        }

        sender = sd_bus_message_get_sender(call);
        if (!b || !sender || !m->bus || sd_bus_message_get_bus(call) != m->bus) {
                /* A direct connection (tests) has no polkit and no bus name to check. */
                if (free_data)
                        free_data(data);
                return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED, "%s needs root.", action);
        }
        if (b->n_queries >= AUTH_QUERIES_MAX) {
                if (free_data)
                        free_data(data);
                return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                        "Too many authorization checks in flight, try again.");
        }

        q = calloc(1, sizeof(AuthQuery));
        if (!q) {
                if (free_data)
                        free_data(data);
                return -ENOMEM;
        }
        q->cont = cont;
        q->data = data;
        q->free_data = free_data;
        q->action = strdup(action);
        q->call = sd_bus_message_ref(call);
        if (!q->action) {
                auth_query_free(q);
                return -ENOMEM;
        }

        r = sd_bus_message_new_method_call(m->bus, &req, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r >= 0)
                /* subject: the caller's bus name; polkit resolves it to a process and a user itself */
                r = sd_bus_message_append(req, "(sa{sv})s", "system-bus-name", 1, "name", "s", sender, action);
        if (r >= 0)
                r = sd_bus_message_append(req, "a{ss}us", 0,
                                          (uint32_t) (sd_bus_message_get_allow_interactive_authorization(call) > 0),
                                          "");
        if (r >= 0)
                /* interactive: a human types a password; polkit allows it some minutes */
                r = sd_bus_call_async(m->bus, &q->slot, req, auth_on_polkit_reply, q,
                                      sd_bus_message_get_allow_interactive_authorization(call) > 0 ?
                                              (uint64_t) 300 * 1000000 : 0);
        if (r < 0) {
                auth_query_free(q);
                return r;
        }
        q->manager = m;
        q->next = b->queries;
        if (b->queries)
                b->queries->prev = q;
        b->queries = q;
        b->n_queries++;
        return 1;
}

/* ---- helpers for replies ------------------------------------------------ */

static int bus_resolve_pid(sd_bus_message *call, uint32_t upid, pid_t *ret, sd_bus_error *error) {
        pid_t pid;
        int r;

        if (upid == 0) {
                /* 0: the calling process, as elsewhere on the system bus */
                r = bus_caller(call, NULL, &pid);
                if (r < 0)
                        return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PID,
                                                 "PID 0 means the caller, and the caller's pid is unknown: %s",
                                                 strerror(-r));
        } else if (upid > INT_MAX)
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PID, "Invalid PID %" PRIu32 ".", upid);
        else
                pid = (pid_t) upid;
        *ret = pid;
        return 0;
}

static int no_such_process(sd_bus_error *error, pid_t pid, int r) {
        if (r == -ESRCH || r == -ENOENT)
                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROCESS, "No process with PID %d.", (int) pid);
        return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot read process %d: %s", (int) pid,
                                 strerror(-r));
}

/* (sssui): kind, name, file, line, latency nice; empty for none. */
static int append_rule(sd_bus_message *reply, const Rule *r) {
        if (!r)
                return sd_bus_message_append(reply, "(sssui)", "", "", "", 0, 0);
        return sd_bus_message_append(reply, "(sssui)", rule_kind_to_string(r->kind), r->name, r->file ?: "",
                                     r->line, r->latency_nice);
}

static char *rule_key_string(const Rule *r, MatchKey k) {
        _cleanup_(freep) char *v = strv_join(r->match[k], " ");
        char *s;

        if (!v || asprintf(&s, "%s=%s", match_key_to_string(k), v) < 0)
                return NULL;
        return s;
}

static int append_rule_keys(sd_bus_message *reply, const Rule *r) {
        int q;

        q = sd_bus_message_open_container(reply, 'a', "s");
        for (MatchKey k = 0; q >= 0 && r && k < _MATCH_KEY_MAX; k++) {
                _cleanup_(freep) char *s = NULL;

                if (!r->match[k])
                        continue;
                s = rule_key_string(r, k);
                if (!s)
                        return -ENOMEM;
                q = sd_bus_message_append(reply, "s", s);
        }
        if (q >= 0)
                q = sd_bus_message_close_container(reply);
        return q;
}

static ManualValue *manual_find(ManagerBus *b, pid_t pid, uint64_t start_time) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < MANUAL_MAX; i++)
                if (b->manual[i].pid == pid && b->manual[i].start_time == start_time)
                        return &b->manual[i];
        return NULL;
}

/* ---- properties --------------------------------------------------------- */

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", LATNICE_VERSION);
}

static int property_get_backend(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "s", backend_to_string(m->probe.backend));
}

static int property_get_backend_reason(sd_bus *bus, const char *path, const char *interface,
                                       const char *property, sd_bus_message *reply, void *userdata,
                                       sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "s", m->probe.reason);
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
                        r = sd_bus_message_append(reply, "s", m->rules->files[i].shown ?: m->rules->files[i].path);
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
                r = sd_bus_message_append(reply, "s", s);
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

        return sd_bus_message_append(reply, "t", m->bus_state ? m->bus_state->applied_suppressed : (uint64_t) 0);
}

/* ---- reading methods ---------------------------------------------------- */

static int method_get_task(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(freep) pid_t *tids = NULL;
        Manager *m = userdata;
        const char *set_by = LATNICE_SET_BY_NONE, *rule = "", *ref = "";
        char manual_ref[64];
        ThreadSched main_thread = {};
        AppliedProcess *e;
        ManualValue *mv;
        ProcStat st;
        char path[64];
        uint32_t upid;
        pid_t pid;
        int r, n;

        r = sd_bus_message_read(call, "u", &upid);
        if (r < 0)
                return r;
        r = bus_resolve_pid(call, upid, &pid, error);
        if (r < 0)
                return r;

        snprintf(path, sizeof(path), "%d/stat", (int) pid);
        r = proc_stat_read(m->proc_fd, path, &st);
        if (r < 0)
                return no_such_process(error, pid, r);
        r = sched_thread_get(&m->probe, pid, &main_thread);
        if (r < 0 && r != -ESRCH)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot read the scheduling of %d: %s",
                                         (int) pid, strerror(-r));

        e = m->applied ? applied_table_get(m->applied, pid) : NULL;
        mv = manual_find(m->bus_state, pid, st.start_time);
        if (e && e->start_time == st.start_time && applied_is_ours(&m->probe, m->proc_fd, e) > 0) {
                set_by = e->via_unit ? LATNICE_SET_BY_UNIT : LATNICE_SET_BY_RULE;
                rule = e->rule_name ?: "";
                ref = e->rule ?: "";
        } else if (mv && sched_thread_raw(&m->probe, &main_thread) == mv->raw) {
                set_by = LATNICE_SET_BY_MANUAL;
                rule = "manual";
                snprintf(manual_ref, sizeof(manual_ref), "SetLatencyNice by uid %u", (unsigned) mv->uid);
                ref = manual_ref;
        } else if (m->probe.backend != BACKEND_NONE && !main_thread.realtime &&
                   sched_thread_raw(&m->probe, &main_thread) != 0)
                set_by = LATNICE_SET_BY_FOREIGN;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "sisssst", st.comm, main_thread.latency_nice, set_by, rule, ref,
                                  backend_to_string(m->probe.backend), st.start_time);
        if (r < 0)
                return r;

        r = sd_bus_message_open_container(reply, 'a', "(ussiitb)");
        if (r < 0)
                return r;
        n = proc_list_tasks(m->proc_fd, pid, &tids);
        for (int i = 0; i < n; i++) {
                ThreadSched t;
                ProcStat ts = {};

                if (sched_thread_get(&m->probe, tids[i], &t) < 0)
                        continue; /* exited meanwhile */
                snprintf(path, sizeof(path), "%d/task/%d/stat", (int) pid, (int) tids[i]);
                (void) proc_stat_read(m->proc_fd, path, &ts);
                r = sd_bus_message_append(reply, "(ussiitb)", (uint32_t) tids[i], ts.comm,
                                          sched_policy_to_string(t.attr.sched_policy), (int32_t) t.attr.sched_nice,
                                          (int32_t) t.latency_nice,
                                          m->probe.backend == BACKEND_EEVDF_SLICE ? (uint64_t) t.attr.sched_runtime
                                                                                  : (uint64_t) 0,
                                          (int) t.realtime);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_applied(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        ManagerBus *b = m->bus_state;
        AppliedProcess *e;
        size_t i = 0;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(usiss)");
        if (r < 0)
                return r;
        while (m->applied && (e = applied_table_next(m->applied, &i))) {
                r = sd_bus_message_append(reply, "(usiss)", (uint32_t) e->pid, e->comm, (int32_t) e->latency_nice,
                                          e->rule_name ?: "", e->rule ?: "");
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; b && k < MANUAL_MAX; k++) {
                ManualValue *mv = &b->manual[k];
                char path[64], ref[64];
                ProcStat st;

                if (mv->pid <= 0)
                        continue;
                snprintf(path, sizeof(path), "%d/stat", (int) mv->pid);
                if (proc_stat_read(m->proc_fd, path, &st) < 0 || st.start_time != mv->start_time) {
                        mv->pid = 0; /* gone */
                        continue;
                }
                if (m->applied && applied_table_get(m->applied, mv->pid))
                        continue;
                snprintf(ref, sizeof(ref), "SetLatencyNice by uid %u", (unsigned) mv->uid);
                r = sd_bus_message_append(reply, "(usiss)", (uint32_t) mv->pid, st.comm, (int32_t) mv->latency_nice,
                                          "manual", ref);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int append_task_dict(sd_bus_message *reply, const ProcTask *p, const TaskInfo *t) {
        _cleanup_(freep) char *cmdline = NULL, *unit = NULL;
        char uid[16], gid[16], pid[16];
        int r;

        cmdline = t->argv ? strv_join(t->argv, " ") : NULL;
        unit = cgroup_path_unit(t->cgroup);
        snprintf(pid, sizeof(pid), "%d", (int) t->pid);
        snprintf(uid, sizeof(uid), "%u", (unsigned) t->uid);
        snprintf(gid, sizeof(gid), "%u", (unsigned) t->gid);
        r = sd_bus_message_append(reply, "a{ss}", 11, "pid", pid, "comm", t->comm ?: "", "exe", t->exe ?: "",
                                  "cmdline", cmdline ?: "", "parent", t->parent_comm ?: "", "uid", uid, "user",
                                  t->user ?: "", "gid", gid, "group", t->group ?: "", "cgroup", t->cgroup ?: "",
                                  "unit", unit ?: "");
        (void) p;
        return r;
}

static int method_explain(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        MatchResult mr = {};
        const Rule *winner = NULL, *unit_rule = NULL;
        const char *how = "none";
        ProcTask p = {};
        TaskInfo t;
        uint32_t upid;
        pid_t pid;
        int r;

        r = sd_bus_message_read(call, "u", &upid);
        if (r < 0)
                return r;
        r = bus_resolve_pid(call, upid, &pid, error);
        if (r < 0)
                return r;
        if (!m->rules)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "No rules are loaded.");

        r = proc_task_read(m->proc_fd, pid, PROC_ALL, &p);
        if (r < 0)
                return no_such_process(error, pid, r);
        proc_task_to_info(&p, &t);

        r = match_task(m->rules, &t, true, &mr);
        if (r < 0)
                goto finish;
        {
                /* /proc/PID/exe is readable only by the owner (and root): so is our answer. */
                uid_t caller = 0;

                if (bus_caller(call, &caller, NULL) < 0 || (caller != 0 && caller != t.uid))
                        t.exe = NULL;
        }
        /* As the daemon decides: a process rule first, else a unit rule through the process's unit. */
        unit_rule = match_task_unit_rule(m->rules, &t);
        if (mr.rule) {
                winner = mr.rule;
                how = "process";
        } else if (unit_rule) {
                winner = unit_rule;
                how = "unit";
                unit_rule = NULL;
        }
        if (p.stat.flags & PROC_PF_KTHREAD) {
                how = "kernel-thread"; /* never changed, whatever matches */
        }

        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = append_task_dict(reply, &p, &t);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", how);
        if (r >= 0)
                r = append_rule(reply, winner);
        if (r >= 0)
                r = append_rule_keys(reply, winner);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sssui)");
        for (size_t i = 0; r >= 0 && i < mr.n_shadowed; i++)
                r = append_rule(reply, mr.shadowed[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_rule(reply, unit_rule);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
finish:
        match_result_done(&mr);
        proc_task_done(&p);
        return r;
}

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

                r = sd_bus_message_open_container(reply, 'r', "sssuiasbs");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "sssui", rule_kind_to_string(q->kind), q->name,
                                                  q->file ?: "", q->line, q->latency_nice);
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

                (void) profile_find(m->options.root, m->options.profile_dir, *n, &path);
                r = sd_bus_message_append(reply, "(ssb)", *n, path ?: "", (int) streq_ptr(*n, m->profile));
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* ---- methods that change things --------------------------------------- */

static int reply_reloaded(Manager *m, sd_bus_message *call) {
        return sd_bus_reply_method_return(call, "uu", (uint32_t) (m->rules ? m->rules->n_rules : 0),
                                          (uint32_t) (m->rules ? m->rules->n_errors : 0));
}

static int reload_now(Manager *m, sd_bus_message *call, void *data, sd_bus_error *error) {
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

static int method_reload(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        return bus_authorize(userdata, call, LATNICE_POLKIT_RELOAD, reload_now, NULL, NULL, error);
}

static int set_profile_now(Manager *m, sd_bus_message *call, void *data, sd_bus_error *error) {
        const char *name = data;
        int r;

        log_info("Switch to profile %s requested on the bus.", name);
        r = manager_set_profile(m, name);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROFILE, "No profile '%s'.", name);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED,
                                         "Profile '%s' has errors (see the journal or 'latnicectl check'); "
                                         "keeping profile %s.", name, m->profile ?: "none");
        if (r < 0)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED, "Cannot switch to profile '%s': %s",
                                         name, strerror(-r));
        return sd_bus_reply_method_return(call, NULL);
}

static int method_set_profile(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        _cleanup_(freep) char *path = NULL;
        Manager *m = userdata;
        const char *name;
        char *copy;
        int r;

        r = sd_bus_message_read(call, "s", &name);
        if (r < 0)
                return r;
        /* Bad input gets its named error before authorization: asking is not doing. */
        if (!profile_name_valid(name))
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PROFILE_NAME,
                                         "Invalid profile name '%s': use letters, digits, '_', '.', '-'.", name);
        r = profile_find(m->options.root, m->options.profile_dir, name, &path);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROFILE,
                                         "No profile '%s' (see ListProfiles).", name);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot look up profile '%s': %s", name,
                                         strerror(-r));
        copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        return bus_authorize(m, call, LATNICE_POLKIT_SET_PROFILE, set_profile_now, copy, free, error);
}

typedef struct SetRequest {
        pid_t pid;
        int pidfd;
        uint64_t start_time;
        int latency_nice;
        uid_t caller;
} SetRequest;

static void set_request_free(void *p) {
        SetRequest *s = p;

        if (!s)
                return;
        if (s->pidfd >= 0)
                close(s->pidfd);
        free(s);
}

static bool pidfd_exited(int pidfd) {
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

        /* A pidfd polls readable once its process has exited. */
        return poll(&pfd, 1, 0) != 0;
}

static void manual_remember(ManagerBus *b, const SetRequest *s, uint64_t raw) {
        ManualValue *mv;

        if (!b)
                return;
        mv = manual_find(b, s->pid, s->start_time);
        if (!mv)
                mv = &b->manual[b->manual_next++ % MANUAL_MAX];
        *mv = (ManualValue) {
                .pid = s->pid,
                .start_time = s->start_time,
                .raw = raw,
                .uid = s->caller,
                .latency_nice = s->latency_nice,
        };
}

static int set_latency_nice_now(Manager *m, sd_bus_message *call, void *data, sd_bus_error *error) {
        SetRequest *s = data;
        ApplyResult res = {};
        char path[64];
        ProcStat st;
        int r;

        /* The pidfd pins the process we checked; the start time catches a reused pid. */
        if (pidfd_exited(s->pidfd))
                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROCESS,
                                         "Process %d exited before its value could be set.", (int) s->pid);
        r = sched_apply_process(&m->probe, m->proc_fd, s->pid, s->start_time, s->latency_nice, THREADS_ALL, false,
                                &res);
        if (r == -ESRCH)
                return sd_bus_error_setf(error, LATNICE_ERROR_PROCESS_CHANGED,
                                         "Process %d exited or its PID was reused; nothing applied.", (int) s->pid);
        if (r == -EOPNOTSUPP)
                return sd_bus_error_set(error, LATNICE_ERROR_NOT_SUPPORTED, "This kernel cannot apply latency nice.");
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot set latency nice %d on %d: %s",
                                         s->latency_nice, (int) s->pid, strerror(-r));
        if (res.n_applied == 0)
                return sd_bus_error_setf(error, LATNICE_ERROR_NOT_SUPPORTED,
                                         "All %u threads of %d are realtime or idle; left alone.", res.n_threads,
                                         (int) s->pid);

        snprintf(path, sizeof(path), "%d/stat", (int) s->pid);
        if (proc_stat_read(m->proc_fd, path, &st) < 0)
                snprintf(st.comm, sizeof(st.comm), "?");
        manual_remember(m->bus_state, s, sched_raw_value(&m->probe, s->latency_nice));
        log_info("%s[%d]: LatencyNice=%d set on the bus by uid %u (%u of %u threads).", st.comm, (int) s->pid,
                 s->latency_nice, (unsigned) s->caller, res.n_applied, res.n_threads);
        manager_bus_emit_applied(m, s->pid, st.comm, s->latency_nice, "manual");
        return sd_bus_reply_method_return(call, "uu", res.n_applied, res.n_threads);
}

/* Real and effective uid of a process, from /proc/PID/status. */
static int read_proc_uids(int proc_fd, pid_t pid, uid_t *ret_ruid, uid_t *ret_euid) {
        _cleanup_(freep) char *buf = NULL;
        unsigned ru, eu;
        char path[64];
        char *p;
        int r;

        snprintf(path, sizeof(path), "%d/status", (int) pid);
        r = read_full_file(proc_fd, path, 64 * 1024, &buf, NULL);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        p = strstr(buf, "\nUid:");
        if (!p || sscanf(p + 5, "%u %u", &ru, &eu) != 2)
                return -EINVAL;
        *ret_ruid = ru;
        *ret_euid = eu;
        return 0;
}

static int method_set_latency_nice(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        SetRequest *s;
        ThreadSched cur;
        ProcStat st;
        char path[64];
        const char *action = NULL;
        uid_t ruid, euid, caller;
        uint32_t upid;
        int32_t value;
        pid_t pid;
        int r;

        r = sd_bus_message_read(call, "ui", &upid, &value);
        if (r < 0)
                return r;
        if (value < LATNICE_MIN || value > LATNICE_MAX)
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_VALUE,
                                         "Invalid latency nice %" PRIi32 ": must be in %d..%d.", value, LATNICE_MIN,
                                         LATNICE_MAX);
        r = bus_resolve_pid(call, upid, &pid, error);
        if (r < 0)
                return r;
        if (m->probe.backend == BACKEND_NONE)
                return sd_bus_error_setf(error, LATNICE_ERROR_NOT_SUPPORTED, "This kernel cannot apply latency "
                                         "nice: %s", m->probe.reason);
        r = bus_caller(call, &caller, NULL);
        if (r < 0)
                return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED, "Cannot identify the caller: %s",
                                         strerror(-r));

        s = calloc(1, sizeof(SetRequest));
        if (!s)
                return -ENOMEM;
        *s = (SetRequest) { .pid = pid, .pidfd = -1, .latency_nice = value, .caller = caller };

        /* Pin the process first, then read it: if the pidfd's process is still
         * there afterwards, what we read is about it and not a successor. */
        s->pidfd = pidfd_open(pid, 0);
        if (s->pidfd < 0) {
                r = -errno;
                set_request_free(s);
                return no_such_process(error, pid, r);
        }
        snprintf(path, sizeof(path), "%d/stat", (int) pid);
        r = proc_stat_read(m->proc_fd, path, &st);
        if (r >= 0)
                r = read_proc_uids(m->proc_fd, pid, &ruid, &euid);
        if (r >= 0 && (pidfd_exited(s->pidfd) || st.state == 'Z'))
                r = -ESRCH;
        if (r < 0) {
                set_request_free(s);
                return no_such_process(error, pid, r);
        }
        if (st.flags & PROC_PF_KTHREAD) {
                set_request_free(s);
                return sd_bus_error_setf(error, LATNICE_ERROR_KERNEL_THREAD,
                                         "%d (%s) is a kernel thread; latniced never changes kernel threads.",
                                         (int) pid, st.comm);
        }
        s->start_time = st.start_time;

        r = sched_thread_get(&m->probe, pid, &cur);
        if (r < 0) {
                set_request_free(s);
                return no_such_process(error, pid, r);
        }

        /* Waiting longer is always fine for one's own processes; cutting in needs authorization. */
        if (caller != ruid && caller != euid)
                action = LATNICE_POLKIT_ANY;
        else if (value < cur.latency_nice)
                action = LATNICE_POLKIT_LOWER;

        if (!action) {
                r = set_latency_nice_now(m, call, s, error);
                set_request_free(s);
                return r < 0 ? r : 1;
        }
        return bus_authorize(m, call, action, set_latency_nice_now, s, set_request_free, error);
}

/*
 * Properties without EMITS_CHANGE are counters: read them when you need them
 * (introspection says EmitsChangedSignal=false for those, const for the
 * ones fixed at start).
 */
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),

        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Backend", "s", property_get_backend, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("BackendReason", "s", property_get_backend_reason, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("DefaultSliceNSec", "t", NULL, offsetof(Manager, probe.base_slice_ns),
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("EventSource", "s", property_get_event_source, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("EventSourceReason", "s", NULL, offsetof(Manager, source_reason),
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Profile", "s", NULL, offsetof(Manager, profile), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ProfilePath", "s", NULL, offsetof(Manager, profile_path),
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
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
        SD_BUS_PROPERTY("AppliedSignalsSuppressed", "t", property_get_suppressed, 0, 0),

        SD_BUS_METHOD_WITH_ARGS("GetTask",
                                SD_BUS_ARGS("u", pid),
                                SD_BUS_RESULT("s", comm, "i", latency_nice, "s", set_by, "s", rule, "s", rule_ref,
                                              "s", backend, "t", start_time, "a(ussiitb)", threads),
                                method_get_task, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListApplied",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(usiss)", processes),
                                method_list_applied, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Explain",
                                SD_BUS_ARGS("u", pid),
                                SD_BUS_RESULT("a{ss}", task, "s", how, "(sssui)", rule, "as", because,
                                              "a(sssui)", shadowed, "(sssui)", unit_rule),
                                method_explain, SD_BUS_VTABLE_UNPRIVILEGED),
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

        SD_BUS_SIGNAL_WITH_NAMES("Applied", "usis", SD_BUS_PARAM(pid) SD_BUS_PARAM(comm)
                                 SD_BUS_PARAM(latency_nice) SD_BUS_PARAM(rule), 0),
        SD_BUS_SIGNAL_WITH_NAMES("Reloaded", "uu", SD_BUS_PARAM(rules) SD_BUS_PARAM(errors), 0),

        SD_BUS_VTABLE_END
};

/* ---- connection lifecycle ---------------------------------------------- */

static ManagerBus *manager_bus_state(Manager *m) {
        if (!m->bus_state) {
                m->bus_state = calloc(1, sizeof(ManagerBus));
                if (m->bus_state)
                        m->bus_state->applied_tokens = APPLIED_BURST * 1000;
        }
        return m->bus_state;
}

int manager_bus_add_objects(Manager *m, sd_bus *bus) {
        ManagerBus *b = manager_bus_state(m);
        int r;

        if (!b)
                return -ENOMEM;
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
        /* Calls waiting for polkit die with their connection. */
        while (b->queries)
                auth_query_free(b->queries);
        sd_bus_slot_unref(b->name_slot);
        sd_bus_slot_unref(b->object_slot);
        free(b);
        m->bus_state = NULL;
}

/* ---- signals ------------------------------------------------------------ */

void manager_bus_emit_applied(Manager *m, pid_t pid, const char *comm, int value, const char *rule) {
        ManagerBus *b = m->bus_state;
        uint64_t now;

        if (!m->bus || !b)
                return;
        now = now_usec();
        if (b->applied_last_usec > 0) {
                b->applied_tokens += (now - b->applied_last_usec) * APPLIED_PER_SEC / 1000;
                if (b->applied_tokens > APPLIED_BURST * 1000)
                        b->applied_tokens = APPLIED_BURST * 1000;
        }
        b->applied_last_usec = now;
        if (b->applied_tokens < 1000) {
                b->applied_suppressed++;
                return;
        }
        b->applied_tokens -= 1000;
        (void) sd_bus_emit_signal(m->bus, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "Applied", "usis", (uint32_t) pid,
                                  comm ?: "", (int32_t) value, rule ?: "");
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
