/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The verbs about latniced itself: status, list, rules, reload, profile.
 * Each needs the daemon; a table for people, one JSON document with --json.
 */

#include <inttypes.h>

#include "ctl-bus.h"
#include "ctl-output.h"
#include "ctl-stats.h"
#include "ctl-table.h"
#include "ctl.h"
#include "kernel-preempt.h"
#include "latnice/dbus.h"
#include "sched-ext.h"

typedef struct Status {
        char *version, *backend, *backend_reason, *event_source, *event_source_reason, *profile, *profile_path;
        char *prefilter;
        char *foreground; /* [Foreground]: "off" or the boosts in place */
        char *preempt_model, *preempt_source; /* NULL: a latniced without them */
        int preempt_dynamic;
        uint32_t kernel_hz;
        uint64_t prefilter_memory;
        char **rule_files, **rule_errors;
        uint32_t rules, applied_processes;
        uint64_t tasks_applied, apply_errors, events_seen, events_lost, rescans, reloads, default_slice,
                suppressed, cmdline_truncated;
        CtlStats last_stats; /* the last latnicectl stats of this run of latniced */
} Status;

/* LastStats: a struct of what CollectStats returns. */
static int read_last_stats(sd_bus_message *m, void *field) {
        CtlStats *stats = field;
        int r;

        ctl_stats_done(stats);
        r = sd_bus_message_enter_container(m, 'r', "ttssta(suuttttat)");
        if (r < 0)
                return r;
        r = ctl_stats_read(m, stats);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/*
 * The property says when and how long; the rules and their numbers come from GetLastStats, which polkit
 * allows to root and the active session (never asking here: status is no reason for a password).
 */
static int read_last_stats_full(CtlStats *stats) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (stats->finished_usec == 0)
                return 0; /* nothing collected yet */
        r = ctl_bus_connect(&bus, NULL);
        if (r < 0)
                return r;
        (void) sd_bus_set_allow_interactive_authorization(bus, false);
        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "GetLastStats", &error,
                               &reply, NULL);
        if (r < 0)
                return r;
        ctl_stats_done(stats);
        return ctl_stats_read(reply, stats);
}

static const CtlProperty status_properties[] = {
        { "Version", "s", NULL, offsetof(Status, version) },
        { "Backend", "s", NULL, offsetof(Status, backend) },
        { "BackendReason", "s", NULL, offsetof(Status, backend_reason) },
        { "PreemptModel", "s", NULL, offsetof(Status, preempt_model) },
        { "PreemptModelSource", "s", NULL, offsetof(Status, preempt_source) },
        { "PreemptDynamic", "b", NULL, offsetof(Status, preempt_dynamic) },
        { "KernelHZ", "u", NULL, offsetof(Status, kernel_hz) },
        { "EventSource", "s", NULL, offsetof(Status, event_source) },
        { "EventSourceReason", "s", NULL, offsetof(Status, event_source_reason) },
        { "Profile", "s", NULL, offsetof(Status, profile) },
        { "ProfilePath", "s", NULL, offsetof(Status, profile_path) },
        { "RuleFiles", "as", NULL, offsetof(Status, rule_files) },
        { "RuleErrors", "as", NULL, offsetof(Status, rule_errors) },
        { "Rules", "u", NULL, offsetof(Status, rules) },
        { "AppliedProcesses", "u", NULL, offsetof(Status, applied_processes) },
        { "TasksApplied", "t", NULL, offsetof(Status, tasks_applied) },
        { "ApplyErrors", "t", NULL, offsetof(Status, apply_errors) },
        { "EventsSeen", "t", NULL, offsetof(Status, events_seen) },
        { "EventsLost", "t", NULL, offsetof(Status, events_lost) },
        { "Rescans", "t", NULL, offsetof(Status, rescans) },
        { "Reloads", "t", NULL, offsetof(Status, reloads) },
        { "DefaultSliceNSec", "t", NULL, offsetof(Status, default_slice) },
        { "AppliedSignalsSuppressed", "t", NULL, offsetof(Status, suppressed) },
        { "CmdlineTruncated", "t", NULL, offsetof(Status, cmdline_truncated) },
        { "Prefilter", "s", NULL, offsetof(Status, prefilter) },
        { "PrefilterMemory", "t", NULL, offsetof(Status, prefilter_memory) },
        { "Foreground", "s", NULL, offsetof(Status, foreground) },
        { "LastStats", "(ttssta(suuttttat))", read_last_stats, offsetof(Status, last_stats) },
};

static void status_done(Status *s) {
        ctl_bus_properties_done(status_properties, ELEMENTSOF(status_properties), s);
        ctl_stats_done(&s->last_stats);
}

/* What each verb here is: one call, and the table its answer is shown in. */
typedef struct DaemonCall {
        const char *interface, *method;
        const char *what; /* "Failed to WHAT: why" when it fails */
        bool interactive; /* polkit may ask: an agent on this terminal meanwhile */
        const char *rows; /* the reply is an array of these, a listing: daemon_call() enters it */
        const TableColumn *columns; /* the answer's table: a row a row of a listing, else one vertical row */
        size_t n_columns;
} DaemonCall;

/*
 * The call with arg (NULL: none): CTL_EXIT_OK, the reply, which outlives
 * the connection, at its first row if it is a listing, and the empty table;
 * or it said why not and returns the status.
 */
static int daemon_call(const Ctl *ctl, const DaemonCall *c, const char *arg, sd_bus_message **ret_reply,
                       Table **ret_table) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        pid_t agent = 0;
        int r;

        r = ctl_bus_connect_or_fail(&bus);
        if (r != CTL_EXIT_OK)
                return r;
        if (c->interactive)
                agent = ctl_polkit_agent_open();
        if (arg)
                r = ctl_call(bus, c->interface, c->method, c->what, ret_reply, "s", arg);
        else
                r = ctl_call(bus, c->interface, c->method, c->what, ret_reply, NULL);
        ctl_polkit_agent_close(agent);
        if (r != CTL_EXIT_OK)
                return r;
        if (c->rows) {
                r = sd_bus_message_enter_container(*ret_reply, 'a', c->rows);
                if (r < 0)
                        return ctl_bad_reply(r);
        }
        *ret_table = c->rows ? table_new(c->columns, c->n_columns, ctl->json) :
                               table_new_vertical(c->columns, c->n_columns, ctl->json);
        return *ret_table ? CTL_EXIT_OK : ctl_bad_reply(-ENOMEM);
}

/* A listing, once its rows were read into t (r < 0: they did not): t printed, or why not; an exit status. */
static int print_rows(Table *t, int r) {
        return r < 0 ? ctl_bad_reply(r) : ctl_table_print(t);
}

/* The text in its order and the JSON in its own; a NULL text is no line. */
static const TableColumn status_columns[] = {
        { "", NULL, TABLE_STRING },
        { NULL, "version", TABLE_STRING },
        { "Backend", NULL, TABLE_STRING, 12 },
        { NULL, "backend", TABLE_STRING },
        { NULL, "backend_reason", TABLE_STRING },
        { "Note", NULL, TABLE_STRING, 12 },
        { NULL, "backend_note", TABLE_STRING },
        { NULL, "default_slice_ns", TABLE_UINT },
        { "Preemption", NULL, TABLE_STRING, 12 },
        { NULL, "preempt_model", TABLE_STRING },
        { NULL, "preempt_model_source", TABLE_STRING },
        { NULL, "preempt_dynamic", TABLE_BOOL },
        { NULL, "kernel_hz", TABLE_UINT },
        { NULL, "preempt_note", TABLE_STRING },
        { "Event source", NULL, TABLE_STRING, 12 },
        { NULL, "event_source", TABLE_STRING },
        { NULL, "event_source_reason", TABLE_STRING },
        { "Prefilter", NULL, TABLE_STRING, 12 },
        { "Profile", NULL, TABLE_STRING, 12 },
        { NULL, "profile", TABLE_STRING },
        { NULL, "profile_path", TABLE_STRING },
        { "Rules", NULL, TABLE_STRING, 12 },
        { NULL, "rules", TABLE_UINT },
        { NULL, "rule_files", TABLE_STRV },
        { NULL, "rule_errors", TABLE_STRV },
        { "Foreground", NULL, TABLE_STRING, 12 },
        { "Applied", NULL, TABLE_STRING, 12 },
        { NULL, "applied_processes", TABLE_UINT },
        { NULL, "tasks_applied", TABLE_UINT },
        { NULL, "apply_errors", TABLE_UINT },
        { "Events", NULL, TABLE_STRING, 12 },
        { NULL, "events_seen", TABLE_UINT },
        { NULL, "events_lost", TABLE_UINT },
        { NULL, "rescans", TABLE_UINT },
        { NULL, "reloads", TABLE_UINT },
        { NULL, "applied_signals_suppressed", TABLE_UINT },
        { NULL, "cmdline_truncated", TABLE_UINT },
        { NULL, "prefilter", TABLE_STRING },
        { NULL, "prefilter_memory", TABLE_UINT },
        { NULL, "foreground", TABLE_STRING },
        { "Statistics", NULL, TABLE_STRING, 12 },
        { NULL, "last_stats", TABLE_JSON },
        { "Cmdline=", NULL, TABLE_STRING, 12 },
        { "", NULL, TABLE_STRING }, /* the rule errors */
};

int verb_status(Ctl *ctl) {
        static const DaemonCall get_all = {
                "org.freedesktop.DBus.Properties", "GetAll", "read latniced's status",
                .columns = status_columns, .n_columns = ELEMENTSOF(status_columns),
        };
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(status_done) Status s = {};
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_(freep) char *files = NULL, *errors = NULL, *stats = NULL;
        char slice[32] = "", note[512], preempt[512] = "";
        bool last_stats_hidden;
        int r;

        r = daemon_call(ctl, &get_all, LATNICE_BUS_INTERFACE, &reply, &t);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_bus_read_properties(reply, status_properties, ELEMENTSOF(status_properties), &s);
        if (r < 0) {
                fprintf(stderr, "Failed to %s: %s\n", get_all.what, strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        (void) sched_ext_note(s.backend, note, sizeof(note));
        /* What the kernel's preemption model means for a wakeup on this backend: latniced gives the values. */
        if (s.preempt_model)
                (void) preempt_sentence(s.preempt_model, s.preempt_dynamic, s.kernel_hz, s.backend, preempt,
                                        sizeof(preempt));
        if (s.default_slice > 0) {
                strcpy(slice, ", default slice ");
                format_ms(s.default_slice, slice + strlen(slice), sizeof(slice) - strlen(slice));
        }
        for (char **f = s.rule_files; f && *f; f++)
                if (strextendf(&files, "\n%s", *f) < 0)
                        return ctl_bad_reply(-ENOMEM);
        for (char **e = s.rule_errors; e && *e; e++)
                if (strextendf(&errors, "\n  %s", *e) < 0)
                        return ctl_bad_reply(-ENOMEM);
        last_stats_hidden = read_last_stats_full(&s.last_stats) < 0;
        stats = ctl_stats_status_text(&s.last_stats);
        if (stats && last_stats_hidden && strextendf(&stats, "\n(the rules' numbers: root or the active session's "
                                                            "user only)") < 0)
                return ctl_bad_reply(-ENOMEM);

        table_add_stringf(t, "latniced %s on %s", s.version ?: "?", LATNICE_BUS_NAME);
        table_add_string(t, s.version);
        /* While a BPF scheduler runs the tasks, the reason is that sentence. */
        table_add_stringf(t, "%s%s%s%s", s.backend ?: "?", slice, *note ? "" : "\n",
                          *note ? "" : s.backend_reason ?: "");
        table_add_string(t, s.backend);
        table_add_string(t, s.backend_reason);
        table_add_string(t, *note ? note : NULL);
        table_add_string(t, note);
        table_add_uint(t, s.default_slice);
        table_add_string(t, *preempt ? preempt : NULL);
        table_add_string(t, s.preempt_model);
        table_add_string(t, s.preempt_source);
        table_add_bool(t, s.preempt_dynamic);
        table_add_uint(t, s.kernel_hz);
        table_add_string(t, preempt);
        table_add_stringf(t, "%s: %s", s.event_source ?: "?", s.event_source_reason ?: "");
        table_add_string(t, s.event_source);
        table_add_string(t, s.event_source_reason);
        if (s.prefilter)
                table_add_stringf(t, "%s; %" PRIu64 " kB of kernel memory", s.prefilter, s.prefilter_memory / 1024);
        else
                table_add_string(t, NULL);
        table_add_stringf(t, "%s%s%s%s", isempty(s.profile) ? "none" : s.profile, isempty(s.profile_path) ? "" : " (",
                          s.profile_path ?: "", isempty(s.profile_path) ? "" : ")");
        table_add_string(t, s.profile);
        table_add_string(t, s.profile_path);
        table_add_stringf(t, "%" PRIu32 " from %zu file%s, %zu error%s%s", s.rules, strv_length(s.rule_files),
                          strv_length(s.rule_files) == 1 ? "" : "s", strv_length(s.rule_errors),
                          strv_length(s.rule_errors) == 1 ? "" : "s", files ?: "");
        table_add_uint(t, s.rules);
        table_add_strv(t, s.rule_files);
        table_add_strv(t, s.rule_errors);
        table_add_string(t, s.foreground);
        table_add_stringf(t, "%" PRIu32 " process%s now; %" PRIu64 " thread values set, %" PRIu64 " error%s",
                          s.applied_processes, s.applied_processes == 1 ? "" : "es", s.tasks_applied, s.apply_errors,
                          s.apply_errors == 1 ? "" : "s");
        table_add_uint(t, s.applied_processes);
        table_add_uint(t, s.tasks_applied);
        table_add_uint(t, s.apply_errors);
        table_add_stringf(t, "%" PRIu64 " seen, %" PRIu64 " lost; %" PRIu64 " rescans, %" PRIu64 " reloads",
                          s.events_seen, s.events_lost, s.rescans, s.reloads);
        table_add_uint(t, s.events_seen);
        table_add_uint(t, s.events_lost);
        table_add_uint(t, s.rescans);
        table_add_uint(t, s.reloads);
        table_add_uint(t, s.suppressed);
        table_add_uint(t, s.cmdline_truncated);
        table_add_string(t, s.prefilter);
        table_add_uint(t, s.prefilter_memory);
        table_add_string(t, s.foreground);
        table_add_string(t, stats);
        table_add_json(t, ctl_stats_status_json(&s.last_stats, ctl->json));
        if (s.cmdline_truncated > 0)
                table_add_stringf(t, "%" PRIu64 " exec%s seen with a cut command line (the process was gone before the "
                                  "rest could be read): Cmdline= rules did not see every word", s.cmdline_truncated,
                                  s.cmdline_truncated == 1 ? "" : "s");
        else
                table_add_string(t, NULL);
        if (errors)
                table_add_stringf(t, "\nRule errors (these rules were skipped):%s", errors);
        else
                table_add_string(t, NULL);
        return ctl_table_print(t);
}

/* ---- list, rules -------------------------------------------------------- */

int verb_list(Ctl *ctl) {
        static const TableColumn columns[] = {
                { "PID", "pid", TABLE_UINT, 8 },
                { "COMM", "comm", TABLE_STRING, -15 },
                { "LATNICE", "latency_nice", TABLE_INT, 7 },
                { NULL, "rule", TABLE_STRING },
                { "RULE", "rule_ref", TABLE_STRING },
        };
        static const DaemonCall list_applied = {
                LATNICE_BUS_INTERFACE, "ListApplied", "list the applied processes",
                .rows = "(usiss)", .columns = columns, .n_columns = ELEMENTSOF(columns),
        };
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        const char *comm, *rule, *ref;
        uint32_t pid;
        int32_t value;
        size_t n;
        int r;

        r = daemon_call(ctl, &list_applied, NULL, &reply, &t);
        if (r != CTL_EXIT_OK)
                return r;
        while ((r = sd_bus_message_read(reply, "(usiss)", &pid, &comm, &value, &rule, &ref)) > 0) {
                table_add_uint(t, pid);
                table_add_string(t, comm);
                table_add_int(t, value);
                table_add_string(t, rule);
                table_add_string(t, ref);
        }
        n = table_rows(t);
        r = print_rows(t, r);
        if (r == CTL_EXIT_OK)
                table_text(t, "\n%zu process%s.\n", n, n == 1 ? "" : "es");
        return r;
}

int verb_rules(Ctl *ctl) {
        static const TableColumn columns[] = {
                CTL_RULE_COLUMNS,
                { NULL, "match", TABLE_STRV },
                { NULL, "override", TABLE_BOOL },
                { NULL, "threads", TABLE_STRING },
                { "", NULL, TABLE_STRING }, /* the rule as people read it, two lines */
        };
        static const DaemonCall list_rules = {
                LATNICE_BUS_INTERFACE, "ListRules", "list the rules",
                .rows = "(sssuiasbs)", .columns = columns, .n_columns = ELEMENTSOF(columns),
        };
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        size_t n;
        int r;

        r = daemon_call(ctl, &list_rules, NULL, &reply, &t);
        if (r != CTL_EXIT_OK)
                return r;
        table_set_header(t, false);
        while ((r = sd_bus_message_enter_container(reply, 'r', "sssuiasbs")) > 0) {
                _cleanup_(strv_freep) char **keys = NULL;
                _cleanup_(freep) char *joined = NULL;
                const char *threads;
                CtlRule rule;
                int override;

                r = sd_bus_message_read(reply, "sssui", &rule.kind, &rule.name, &rule.file, &rule.line, &rule.value);
                if (r >= 0)
                        r = sd_bus_message_read_strv(reply, &keys);
                if (r >= 0)
                        r = sd_bus_message_read(reply, "bs", &override, &threads);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        break;
                joined = strv_join(keys, " ");
                ctl_table_add_rule(t, &rule);
                table_add_strv(t, keys);
                table_add_bool(t, override);
                table_add_string(t, threads);
                table_add_stringf(t, CTL_RULE_FORMAT_STR "%s%s\n    %s", CTL_RULE_FORMAT_VAL(rule),
                                  override ? " Override=yes" : "", strcmp(threads, "all") == 0 ? "" : " Threads=main",
                                  joined ?: "");
        }
        n = table_rows(t);
        r = print_rows(t, r);
        if (r == CTL_EXIT_OK)
                table_text(t, "%s%zu rule%s.\n", n ? "\n" : "", n, n == 1 ? "" : "s");
        return r;
}

/* ---- reload, profile ---------------------------------------------------- */

int verb_reload(Ctl *ctl) {
        static const TableColumn columns[] = {
                { "", NULL, TABLE_STRING },
                { NULL, "rules", TABLE_UINT },
                { NULL, "errors", TABLE_UINT },
        };
        static const DaemonCall reload = {
                LATNICE_BUS_INTERFACE, "Reload", "reload latniced", true,
                .columns = columns, .n_columns = ELEMENTSOF(columns),
        };
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        uint32_t rules, errors;
        int r;

        r = daemon_call(ctl, &reload, NULL, &reply, &t);
        if (r != CTL_EXIT_OK)
                return r;
        r = sd_bus_message_read(reply, "uu", &rules, &errors);
        if (r < 0)
                return ctl_bad_reply(r);
        table_add_stringf(t, "Reloaded: %" PRIu32 " rule%s, %" PRIu32 " error%s%s.", rules, rules == 1 ? "" : "s",
                          errors, errors == 1 ? "" : "s", errors ? " (see 'latnicectl status')" : "");
        table_add_uint(t, rules);
        table_add_uint(t, errors);
        return ctl_table_print(t);
}

int verb_profile(Ctl *ctl) {
        static const TableColumn switched[] = {
                { "", NULL, TABLE_STRING },
                { NULL, "profile", TABLE_STRING },
        };
        static const TableColumn columns[] = {
                { "", NULL, TABLE_STRING }, /* "*" marks the active one */
                { "", "name", TABLE_STRING, -16 },
                { "", "path", TABLE_STRING },
                { NULL, "active", TABLE_BOOL },
        };
        static const DaemonCall set_profile = {
                LATNICE_BUS_INTERFACE, "SetProfile", "switch the profile", true,
                .columns = switched, .n_columns = ELEMENTSOF(switched),
        };
        static const DaemonCall list_profiles = {
                LATNICE_BUS_INTERFACE, "ListProfiles", "list the profiles",
                .rows = "(ssb)", .columns = columns, .n_columns = ELEMENTSOF(columns),
        };
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        const char *name, *path;
        int active, r;

        if (ctl->n_args == 1) {
                r = daemon_call(ctl, &set_profile, ctl->args[0], NULL, &t);
                if (r != CTL_EXIT_OK)
                        return r;
                table_add_stringf(t, "Switched to profile %s.", ctl->args[0]);
                table_add_string(t, ctl->args[0]);
                return ctl_table_print(t);
        }

        r = daemon_call(ctl, &list_profiles, NULL, &reply, &t);
        if (r != CTL_EXIT_OK)
                return r;
        table_set_header(t, false);
        table_set_separator(t, " ");
        while ((r = sd_bus_message_read(reply, "(ssb)", &name, &path, &active)) > 0) {
                table_add_string(t, active ? "*" : " ");
                table_add_string(t, name);
                table_add_string(t, path);
                table_add_bool(t, active);
        }
        r = print_rows(t, r);
        if (r == CTL_EXIT_OK && table_rows(t) == 0)
                table_text(t, "No profiles installed.\n");
        return r;
}
