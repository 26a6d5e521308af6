/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The verbs about processes: get, set and explain ask latniced when it is on
 * the bus (its running rules, its record of what it set) and otherwise fall
 * back to the kernel's view (ctl-kernel.c) or the rules on disk
 * (ctl-config.c); run's step through latniced is here too.
 */

#include <inttypes.h>

#include "ctl-bus.h"
#include "ctl-output.h"
#include "ctl-table.h"
#include "ctl.h"
#include "latnice/dbus.h"
#include "latnice/uapi.h"
#include "sched-ext.h"

/* ---- get ---------------------------------------------------------------- */

/* A process in latniced's view: who set its value, and each thread. */
static const TableColumn get_columns[] = {
        CTL_GET_COLUMNS,
        { NULL, "rule", TABLE_STRING },
        { NULL, "rule_ref", TABLE_STRING },
        { NULL, "backend", TABLE_STRING },
        { NULL, "backend_note", TABLE_STRING },
        { NULL, "start_time", TABLE_UINT },
        { NULL, "threads", TABLE_JSON },
};

static const TableColumn thread_columns[] = {
        { "TID", "tid", TABLE_UINT, 8 },
        { "COMM", "comm", TABLE_STRING, -15 },
        { "POLICY", "policy", TABLE_STRING, -8 },
        { "NICE", "nice", TABLE_INT, 4 },
        { "LATNICE", NULL, TABLE_STRING, -7 }, /* "-" where the value does not count (realtime) */
        { NULL, "latency_nice", TABLE_INT },
        { "SLICE", NULL, TABLE_STRING },
        { NULL, "slice_ns", TABLE_UINT },
        { NULL, "realtime", TABLE_BOOL },
};

static int get_one_online(sd_bus *bus, Table *t, pid_t pid, bool first) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *threads = NULL;
        const char *comm, *set_by, *rule, *ref, *backend;
        json_object *j = NULL;
        uint64_t start_time;
        int32_t value;
        char note[512];
        int r, k;

        r = ctl_call_for_pid(bus, "GetTask", pid, NULL, "get the latency nice of", &reply);
        if (r != CTL_EXIT_OK)
                return r;
        r = sd_bus_message_read(reply, "sisssst", &comm, &value, &set_by, &rule, &ref, &backend, &start_time);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ussiitb)");
        if (r < 0)
                return ctl_bad_reply(r);
        (void) sched_ext_note(backend, note, sizeof(note));
        threads = table_new(thread_columns, ELEMENTSOF(thread_columns), table_is_json(t));
        if (!threads)
                return ctl_bad_reply(-ENOMEM);

        table_add_stringf(t, "%sPID %d (%s): latency nice %" PRIi32 ", %s%s%s%s", first ? "" : "\n", (int) pid, comm,
                          value,
                          strcmp(set_by, LATNICE_SET_BY_NONE) == 0 ? "the default; latniced did not set it" :
                          strcmp(set_by, LATNICE_SET_BY_FOREIGN) == 0 ? "set by somebody else (not latniced)" :
                          strcmp(set_by, LATNICE_SET_BY_INHERITED) == 0 ?
                          "inherited through fork from a process latniced set: " :
                          "set by latniced: ",
                          strcmp(set_by, LATNICE_SET_BY_NONE) == 0 || strcmp(set_by, LATNICE_SET_BY_FOREIGN) == 0 ?
                          "" : ref,
                          *note ? "\nNote: " : "", note);
        table_add_int(t, pid);
        table_add_string(t, comm);
        table_add_int(t, value);
        table_add_string(t, set_by);
        table_add_string(t, rule);
        table_add_string(t, ref);
        table_add_string(t, backend);
        table_add_string(t, note);
        table_add_uint(t, start_time);
        for (;;) {
                const char *tcomm, *policy;
                uint32_t tid;
                int32_t nice, ln;
                uint64_t slice;
                int realtime;
                char slicebuf[32] = "-", lnbuf[16] = "-";

                r = sd_bus_message_read(reply, "(ussiitb)", &tid, &tcomm, &policy, &nice, &ln, &slice, &realtime);
                if (r <= 0)
                        break;
                if (!realtime)
                        snprintf(lnbuf, sizeof(lnbuf), "%" PRIi32, ln);
                if (slice > 0 && !realtime)
                        format_ms(slice, slicebuf, sizeof(slicebuf));
                table_add_uint(threads, tid);
                table_add_string(threads, tcomm);
                table_add_string(threads, policy);
                table_add_int(threads, nice);
                table_add_string(threads, lnbuf);
                table_add_int(threads, ln);
                table_add_string(threads, slicebuf);
                table_add_uint(threads, slice);
                table_add_bool(threads, realtime);
        }
        k = table_finish(threads, &j);
        table_add_json(t, j);
        if (r < 0)
                return ctl_bad_reply(r);
        return k < 0 ? ctl_bad_reply(k) : CTL_EXIT_OK;
}

int verb_get(Ctl *ctl) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) pid_t *pids = NULL;
        _cleanup_(ctl_kernel_view_done) KernelView kernel = { .proc_fd = -1 };
        _cleanup_(table_freep) Table *t = NULL;
        int n_pids = 0, rc = CTL_EXIT_OK, r;

        if (ctl_parse_pids(ctl, 0, &pids, &n_pids) < 0)
                return CTL_EXIT_USAGE;

        /* Without latniced, the kernel's view. */
        if (ctl_bus_connect(&bus, NULL) >= 0) {
                t = table_new(get_columns, ELEMENTSOF(get_columns), ctl->json);
                if (t)
                        table_set_header(t, false);
        } else
                t = ctl_kernel_get_table(ctl);
        if (!t)
                return ctl_bad_reply(-ENOMEM);
        if (!bus && ctl_kernel_view_open(t, &kernel) < 0)
                return CTL_EXIT_FAILURE;

        for (int i = 0, shown = 0; i < n_pids; i++) {
                int k = bus ? get_one_online(bus, t, pids[i], shown == 0) : ctl_kernel_get(&kernel, t, pids[i]);

                if (k == CTL_EXIT_OK)
                        shown++;
                else if (rc == CTL_EXIT_OK)
                        rc = k;
        }
        r = ctl_table_print(t);
        return r != CTL_EXIT_OK ? r : rc;
}

/* ---- set ---------------------------------------------------------------- */

int verb_set(Ctl *ctl) {
        static const TableColumn columns[] = {
                { "", NULL, TABLE_STRING },
                { NULL, "pid", TABLE_INT },
                { NULL, "latency_nice", TABLE_INT },
                { NULL, "threads_applied", TABLE_UINT },
                { NULL, "threads", TABLE_UINT },
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_(freep) pid_t *pids = NULL;
        int32_t ln = ctl->latency_nice;
        int n_pids = 0, rc = CTL_EXIT_OK, r;
        pid_t agent;

        if (ctl_parse_pids(ctl, 0, &pids, &n_pids) < 0)
                return CTL_EXIT_USAGE;
        /* Not the verb table's to count: the PIDs of -p count too, and a bad one is said first. */
        if (!ctl->have_latency_nice || n_pids == 0)
                return ctl_usage_error(ctl, "%s", !ctl->have_latency_nice ? "Missing -l N." : "Missing PID.");

        if (ctl_bus_connect(&bus, NULL) < 0)
                return ctl_kernel_set(ctl, pids, n_pids);

        t = table_new(columns, ELEMENTSOF(columns), ctl->json);
        if (!t)
                return ctl_bad_reply(-ENOMEM);
        table_set_header(t, false);
        agent = ctl_polkit_agent_open();
        for (int i = 0; i < n_pids; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                uint32_t applied = 0, threads = 0;

                r = ctl_call_for_pid(bus, "SetLatencyNice", pids[i], &ln, "set latency nice on", &reply);
                if (r == CTL_EXIT_OK) {
                        int k = sd_bus_message_read(reply, "uu", &applied, &threads);

                        if (k < 0)
                                r = ctl_bad_reply(k);
                }
                if (r != CTL_EXIT_OK) {
                        if (rc == CTL_EXIT_OK)
                                rc = r;
                        continue;
                }
                table_add_stringf(t,
                                  "PID %d: latency nice %d on %" PRIu32 " of %" PRIu32 " thread%s (through latniced).",
                                  (int) pids[i], ctl->latency_nice, applied, threads, threads == 1 ? "" : "s");
                table_add_int(t, pids[i]);
                table_add_int(t, ctl->latency_nice);
                table_add_uint(t, applied);
                table_add_uint(t, threads);
        }
        ctl_polkit_agent_close(agent);
        r = ctl_table_print(t);
        return r != CTL_EXIT_OK ? r : rc;
}

/* ---- explain ------------------------------------------------------------ */

static int read_rule(sd_bus_message *m, CtlRule *rule) {
        return sd_bus_message_read(m, "(sssui)", &rule->kind, &rule->name, &rule->file, &rule->line, &rule->value);
}

static const TableColumn rule_columns[] = { CTL_RULE_COLUMNS };

/* A rule as JSON (null where none matched), for a cell; NULL in text. */
static json_object *rule_json(const Table *t, const CtlRule *rule) {
        _cleanup_(table_freep) Table *v = NULL;
        json_object *j = NULL;

        if (!table_is_json(t) || isempty(rule->kind))
                return NULL;
        v = table_new_vertical(rule_columns, ELEMENTSOF(rule_columns), true);
        if (!v)
                return NULL;
        ctl_table_add_rule(v, rule);
        (void) table_finish(v, &j);
        return j;
}

static const char *dict_get(char **dict, const char *key) {
        for (char **i = dict; i && i[0] && i[1]; i += 2)
                if (strcmp(i[0], key) == 0)
                        return i[1];
        return "";
}

/* dict's value for key, or dflt where it is empty. */
static const char *dict_or(char **dict, const char *key, const char *dflt) {
        const char *v = dict_get(dict, key);

        return *v ? v : dflt;
}

/* latniced's answer: the text in its order, the JSON in its own; NULL text: no line. */
static const TableColumn explain_columns[] = {
        { "", NULL, TABLE_STRING },              /* a note on kernel threads */
        { NULL, "task", TABLE_DICT },
        { "", NULL, TABLE_STRING },              /* "Process PID" */
        { "  comm", NULL, TABLE_STRING, -10 },
        { "  exe", NULL, TABLE_STRING, -10 },
        { "  cmdline", NULL, TABLE_STRING, -10 },
        { "  parent", NULL, TABLE_STRING, -10 },
        { "  app", NULL, TABLE_STRING, -10 },
        { "  ancestors", NULL, TABLE_STRING, -10 },
        { "  user", NULL, TABLE_STRING, -10 },
        { "  group", NULL, TABLE_STRING, -10 },
        { "  cgroup", NULL, TABLE_STRING, -10 },
        { "", NULL, TABLE_STRING },              /* a blank line */
        { NULL, "how", TABLE_STRING },
        { "", NULL, TABLE_STRING },              /* "Matched:  ..." and why */
        { NULL, "rule", TABLE_JSON },
        { NULL, "because", TABLE_STRV },
        { "Now", NULL, TABLE_STRING, -9 },
        { "", NULL, TABLE_STRING },              /* a "Shadowed: ..." line for each */
        { NULL, "shadowed", TABLE_JSON },
        { "Unit", NULL, TABLE_STRING, -9 },
        { NULL, "unit_rule", TABLE_JSON },
        { "Unit of the process", NULL, TABLE_STRING, -1 },
        { "Note", NULL, TABLE_STRING, -9 },
        { NULL, "backend_note", TABLE_STRING },
        { NULL, "source", TABLE_STRING },
        { "", NULL, TABLE_STRING },
};

static int explain_online(Ctl *ctl, sd_bus *bus, pid_t pid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL, *shadowed_t = NULL;
        _cleanup_(freep) char *shadowed_text = NULL, *because_text = NULL;
        json_object *j = NULL;
        _cleanup_(strv_freep) char **task = NULL, **because = NULL;
        CtlRule rule = {}, unit_rule = {}, shadowed[64];
        size_t n_shadowed = 0;
        _cleanup_(freep) char *backend = NULL;
        const char *how;
        char note[512];
        int r;

        r = ctl_call_for_pid(bus, "Explain", pid, NULL, "explain", &reply);
        if (r != CTL_EXIT_OK)
                return r;
        /* a{ss} reads as a flat strv of key, value, ... */
        r = sd_bus_message_enter_container(reply, 'a', "{ss}");
        while (r >= 0) {
                const char *k, *v;

                r = sd_bus_message_read(reply, "{ss}", &k, &v);
                if (r <= 0)
                        break;
                if (strv_extend(&task, k) < 0 || strv_extend(&task, v) < 0)
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_read(reply, "s", &how);
        if (r >= 0)
                r = read_rule(reply, &rule);
        if (r >= 0)
                r = sd_bus_message_read_strv(reply, &because);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(sssui)");
        while (r >= 0 && n_shadowed < ELEMENTSOF(shadowed)) {
                r = read_rule(reply, &shadowed[n_shadowed]);
                if (r <= 0)
                        break;
                n_shadowed++;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = read_rule(reply, &unit_rule);
        if (r < 0)
                return ctl_bad_reply(r);
        /* Whether the value means anything now: not while a BPF scheduler runs the tasks. */
        if (sd_bus_get_property_string(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "Backend", NULL,
                                       &backend) < 0)
                backend = NULL;
        (void) sched_ext_note(backend, note, sizeof(note));

        t = table_new_vertical(explain_columns, ELEMENTSOF(explain_columns), ctl->json);
        shadowed_t = table_new(rule_columns, ELEMENTSOF(rule_columns), ctl->json);
        if (!t || !shadowed_t)
                return ctl_bad_reply(-ENOMEM);
        for (size_t i = 0; i < n_shadowed; i++) {
                ctl_table_add_rule(shadowed_t, &shadowed[i]);
                r = strextendf(&shadowed_text, "%sShadowed: " CTL_RULE_FORMAT_STR " (an earlier rule wins)",
                               i ? "\n" : "", CTL_RULE_FORMAT_VAL(shadowed[i]));
                if (r < 0)
                        return ctl_bad_reply(r);
        }
        because_text = strv_join(because, " ");

        if (strcmp(how, "kernel-thread") == 0)
                table_add_stringf(t, "Note: %d is a kernel thread; latniced never changes kernel threads.", (int) pid);
        else
                table_add_string(t, NULL);
        table_add_dict(t, task);
        table_add_stringf(t, "Process %s", dict_get(task, "pid"));
        table_add_string(t, dict_or(task, "comm", "-"));
        table_add_string(t, dict_or(task, "exe", "-"));
        table_add_string(t, dict_or(task, "cmdline", "-"));
        table_add_string(t, dict_or(task, "parent", "-"));
        table_add_string(t, dict_or(task, "app", NULL));
        table_add_string(t, dict_or(task, "ancestors", NULL));
        table_add_stringf(t, "%s (%s)", dict_or(task, "user", "?"), dict_get(task, "uid"));
        table_add_stringf(t, "%s (%s)", dict_or(task, "group", "?"), dict_get(task, "gid"));
        table_add_string(t, dict_or(task, "cgroup", "-"));
        table_add_string(t, "");
        table_add_string(t, how);
        if (isempty(rule.kind))
                table_add_string(t, "Matched:  no rule; latniced leaves this process alone");
        else if (strcmp(how, "unit") == 0)
                table_add_stringf(t, "Matched:  " CTL_RULE_FORMAT_STR ", through the unit the process runs in",
                                  CTL_RULE_FORMAT_VAL(rule));
        else
                table_add_stringf(t, "Matched:  " CTL_RULE_FORMAT_STR "\n  because %s all matched",
                                  CTL_RULE_FORMAT_VAL(rule), because_text ?: "");
        table_add_json(t, rule_json(t, &rule));
        table_add_strv(t, because);
        table_add_string(t, strcmp(how, "foreground") == 0 ?
                         "the foreground boost ([Foreground] in latniced.conf): its window has focus; when focus "
                         "moves on it gets back the value above (or its own)" : NULL);
        r = table_finish(shadowed_t, &j);
        if (r < 0)
                return ctl_bad_reply(r);
        table_add_string(t, shadowed_text);
        table_add_json(t, TAKE_PTR(j));
        if (isempty(unit_rule.kind))
                table_add_string(t, NULL);
        else
                table_add_stringf(t, CTL_RULE_FORMAT_STR " for the unit; the process rule decides this process",
                                  CTL_RULE_FORMAT_VAL(unit_rule));
        table_add_json(t, rule_json(t, &unit_rule));
        table_add_string(t, dict_or(task, "unit", NULL));
        table_add_string(t, *note ? note : NULL);
        table_add_string(t, note);
        table_add_string(t, "latniced");
        table_add_string(t, "(the rules latniced is running; --root=/ explains with the files on disk)");
        return ctl_table_print(t);
}

/*
 * Only a single PID goes to latniced; a description, --verbose and an
 * explicit rule tree or profile are the offline explain's job.
 */
int verb_explain(Ctl *ctl) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) char *why = NULL;
        char **last_pid = ctl->pid_args ? ctl->pid_args + strv_length(ctl->pid_args) - 1 : NULL;
        pid_t pid = 0;

        /* "explain 1234" is what people type: accept a bare pid. */
        if (last_pid) {
                if (parse_pid(*last_pid, &pid) < 0) {
                        fprintf(stderr, "Invalid PID '%s': must be a positive integer.\n", *last_pid);
                        return CTL_EXIT_USAGE;
                }
        } else if (ctl->n_args == 1 && parse_pid(ctl->args[0], &pid) >= 0)
                ctl->n_args = 0;
        if (ctl->n_args > 0)
                return ctl_usage_error(ctl, "Unexpected argument '%s'.", ctl->args[0]);

        if (pid > 0 && !ctl->verbose && !ctl_explain_described(ctl) && !ctl_wants_offline(ctl) &&
            ctl_bus_connect(&bus, &why) >= 0)
                return explain_online(ctl, bus, pid);
        if (ctl->json) {
                fprintf(stderr, "--json needs latniced and a single PID for explain%s%s.\n", why ? ": " : "",
                        why ?: "");
                return CTL_EXIT_USAGE;
        }
        return ctl_explain_offline(ctl, pid);
}
