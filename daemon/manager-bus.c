/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.latnice1 on the system bus: the vtable of /org/latnice1
 * (org.latnice1.Manager), its properties, the connection and its signals.
 * The methods are in manager-bus-read.c and manager-bus-change.c, the
 * shapes of their replies in bus-reply.c.
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

#include "bus-reply.h"
#include "latnice/dbus.h"
#include "log.h"
#include "manager-bus.h"
#include "manager-bus-internal.h"
#include "manager-foreground.h"
#include "manager-scx.h"
#include "manager-stats.h"
#include "util.h"

/* Applied: a storm of execs must not become a storm on the bus. */
#define APPLIED_BURST 50
#define APPLIED_PER_SEC 20

static ManagerBus *manager_bus_state(Manager *m) {
        if (!m->bus_state) {
                m->bus_state = calloc(1, sizeof(ManagerBus));
                if (m->bus_state)
                        m->bus_state->applied = (TokenBucket) TOKEN_BUCKET_INIT(APPLIED_BURST, APPLIED_PER_SEC);
        }
        return m->bus_state;
}

/* ---- properties ---------------------------------------------------------- */

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", LATNICE_VERSION);
}

static int property_get_backend(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        return bus_append_str(reply, manager_backend(m));
}

static int property_get_string(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        /* userdata points at the Manager's char * field (offsetof) */
        return bus_append_str(reply, *(char **) userdata);
}

static int property_get_backend_reason(sd_bus *bus, const char *path, const char *interface,
                                       const char *property, sd_bus_message *reply, void *userdata,
                                       sd_bus_error *error) {
        Manager *m = userdata;

        return bus_append_str(reply, manager_backend_reason(m));
}

static int property_get_preempt_model(sd_bus *bus, const char *path, const char *interface,
                                      const char *property, sd_bus_message *reply, void *userdata,
                                      sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "s", preempt_model_to_string(m->preempt.model) ?: "");
}

static int property_get_preempt_source(sd_bus *bus, const char *path, const char *interface,
                                       const char *property, sd_bus_message *reply, void *userdata,
                                       sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "s", preempt_source_to_string(m->preempt.source) ?: "");
}

static int property_get_preempt_dynamic(sd_bus *bus, const char *path, const char *interface,
                                        const char *property, sd_bus_message *reply, void *userdata,
                                        sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "b", (int) m->preempt.dynamic);
}

static int property_get_event_source(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_message_append(reply, "s", source_kind_to_string(m->source));
}

/* An "as" of n strings: string_at() gives the i-th (formatted into buf if need be), or NULL to leave it out. */
static int append_string_array(sd_bus_message *reply, const Manager *m, size_t n,
                               const char *(*string_at)(const Manager *m, size_t i, char *buf, size_t size)) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                char buf[1024];
                const char *s = string_at(m, i, buf, sizeof(buf));

                if (s)
                        r = bus_append_str(reply, s);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static const char *rule_file_at(const Manager *m, size_t i, char *buf, size_t size) {
        const ConfFile *f = &m->rules->files[i];

        /* as rule errors and rule references name them (without a --root prefix) */
        return f->state == CONF_FILE_ACTIVE ? f->shown ?: f->path : NULL;
}

static int property_get_rule_files(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        return append_string_array(reply, m, m->rules ? m->rules->n_files : 0, rule_file_at);
}

static const char *rule_error_at(const Manager *m, size_t i, char *buf, size_t size) {
        rule_error_format(&m->rules->errors[i], buf, size);
        return buf;
}

static int property_get_rule_errors(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        return append_string_array(reply, m, m->rules ? m->rules->n_errors : 0, rule_error_at);
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

static int property_get_last_stats(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const StatsResult *last = manager_stats_last(userdata);
        /* Anybody may read a property: when, how long, how; the rules and their numbers only through
         * GetLastStats, which asks polkit what CollectStats asks. */
        StatsResult summary = last ? *last : (StatsResult) {};
        int r;

        summary.n_classes = 0;
        r = sd_bus_message_open_container(reply, 'r', "ttssta(suuttttat)");
        if (r >= 0)
                r = bus_append_stats_result(reply, last ? &summary : NULL);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
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

/* Each method that names a process has a pid and a pidfd ("...ByPIDFD") form: one reply for both. */
#define GET_TASK_RESULT                                                                                    \
        SD_BUS_RESULT("s", comm, "i", latency_nice, "s", set_by, "s", rule, "s", rule_ref, "s", backend, "t", \
                      start_time, "a(ussiitb)", threads)
#define EXPLAIN_RESULT                                                                                        \
        SD_BUS_RESULT("a{ss}", task, "s", how, "(sssui)", rule, "as", because, "a(sssui)", shadowed, "(sssui)", \
                      unit_rule)
#define SET_LATENCY_NICE_RESULT SD_BUS_RESULT("u", threads_applied, "u", threads)
#define SET_FOREGROUND_RESULT SD_BUS_RESULT("u", processes)

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
        /* What a wakeup may wait for on this kernel, read at start: values, latnicectl status says it in words. */
        SD_BUS_PROPERTY("PreemptModel", "s", property_get_preempt_model, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("PreemptModelSource", "s", property_get_preempt_source, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("PreemptDynamic", "b", property_get_preempt_dynamic, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("KernelHZ", "u", NULL, offsetof(Manager, preempt.hz), SD_BUS_VTABLE_PROPERTY_CONST),
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
                                GET_TASK_RESULT,
                                method_get_task, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetTaskByPIDFD",
                                SD_BUS_ARGS("h", pidfd),
                                GET_TASK_RESULT,
                                method_get_task_by_pidfd, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListApplied",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(usiss)", processes),
                                method_list_applied, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Explain",
                                SD_BUS_ARGS("u", pid),
                                EXPLAIN_RESULT,
                                method_explain, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ExplainByPIDFD",
                                SD_BUS_ARGS("h", pidfd),
                                EXPLAIN_RESULT,
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
                                SET_LATENCY_NICE_RESULT,
                                method_set_latency_nice, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetLatencyNiceByPIDFD",
                                SD_BUS_ARGS("h", pidfd, "i", latency_nice),
                                SET_LATENCY_NICE_RESULT,
                                method_set_latency_nice_by_pidfd, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetForeground",
                                SD_BUS_ARGS("u", pid),
                                SET_FOREGROUND_RESULT,
                                method_set_foreground, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetForegroundByPIDFD",
                                SD_BUS_ARGS("h", pidfd),
                                SET_FOREGROUND_RESULT,
                                method_set_foreground_by_pidfd, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("EndForeground",
                                SD_BUS_NO_ARGS,
                                SET_FOREGROUND_RESULT,
                                method_end_foreground, SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_METHOD_WITH_ARGS("CollectStats",
                                SD_BUS_ARGS("u", seconds),
                                SD_BUS_RESULT("t", finished_usec, "t", duration_usec, "s", hook, "s", note,
                                              "t", missed, "a(suuttttat)", classes),
                                method_collect_stats, SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_METHOD_WITH_ARGS("GetLastStats",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("t", finished_usec, "t", duration_usec, "s", hook, "s", note,
                                              "t", missed, "a(suuttttat)", classes),
                                method_get_last_stats, SD_BUS_VTABLE_UNPRIVILEGED),

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
        manager_bus_stats_waiters_free(b);
        manager_bus_walks_free(b);
        sd_bus_slot_unref(b->name_slot);
        sd_bus_slot_unref(b->object_slot);
        free(b);
        m->bus_state = NULL;
}

/* ---- signals --------------------------------------------------------------- */

void manager_bus_emit_applied(Manager *m, pid_t pid, const char *comm, int value, const char *rule) {
        ManagerBus *b = m->bus_state;
        const char *s_comm, *s_rule;
        BusEsc e = {};

        if (!m->bus || !b || !token_bucket_take(&b->applied, monotonic_usec()))
                return;
        s_comm = bus_esc(&e, comm);
        s_rule = bus_esc(&e, rule);
        if (e.error == 0)
                (void) sd_bus_emit_signal(m->bus, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "Applied", "usis",
                                          (uint32_t) pid, s_comm, (int32_t) value, s_rule);
        (void) bus_esc_done(&e, 0);
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
