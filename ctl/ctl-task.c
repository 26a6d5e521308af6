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
#include "ctl.h"
#include "latnice/dbus.h"
#include "latnice/uapi.h"
#include "sched-ext.h"

/* ---- get ---------------------------------------------------------------- */

static int get_one_online(Ctl *ctl, sd_bus *bus, pid_t pid, bool first) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *comm, *set_by, *rule, *ref, *backend;
        uint64_t start_time;
        int32_t value;
        unsigned n = 0;
        char note[512];
        int r;

        r = ctl_call_for_pid(bus, "GetTask", pid, NULL, NULL, &reply);
        if (r != CTL_EXIT_OK)
                return r;
        r = sd_bus_message_read(reply, "sisssst", &comm, &value, &set_by, &rule, &ref, &backend, &start_time);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ussiitb)");
        if (r < 0)
                return ctl_bad_reply(r);
        (void) sched_ext_note(backend, note, sizeof(note));

        if (ctl->json) {
                json_sep(!first);
                putchar('{');
                json_kv_int("pid", pid, true);
                json_kv_str("comm", comm, false);
                json_kv_int("latency_nice", value, false);
                json_kv_str("set_by", set_by, false);
                json_kv_str("rule", rule, false);
                json_kv_str("rule_ref", ref, false);
                json_kv_str("backend", backend, false);
                json_kv_str("backend_note", note, false);
                json_kv_int("start_time", (long long) start_time, false);
                json_key("threads", false);
                putchar('[');
        } else {
                printf("%sPID %d (%s): latency nice %" PRIi32 ", ", first ? "" : "\n", (int) pid, comm, value);
                if (strcmp(set_by, LATNICE_SET_BY_NONE) == 0)
                        printf("the default; latniced did not set it\n");
                else if (strcmp(set_by, LATNICE_SET_BY_FOREIGN) == 0)
                        printf("set by somebody else (not latniced)\n");
                else
                        printf("set by latniced: %s\n", ref);
                if (*note)
                        printf("Note: %s\n", note);
                printf("%8s  %-15s  %-8s  %4s  %-7s  %s\n", "TID", "COMM", "POLICY", "NICE", "LATNICE", "SLICE");
        }
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
                if (ctl->json) {
                        json_sep(n);
                        putchar('{');
                        json_kv_int("tid", tid, true);
                        json_kv_str("comm", tcomm, false);
                        json_kv_str("policy", policy, false);
                        json_kv_int("nice", nice, false);
                        json_kv_int("latency_nice", ln, false);
                        json_kv_int("slice_ns", (long long) slice, false);
                        json_kv_bool("realtime", realtime, false);
                        putchar('}');
                } else {
                        if (!realtime)
                                snprintf(lnbuf, sizeof(lnbuf), "%" PRIi32, ln);
                        if (slice > 0 && !realtime)
                                format_ms(slice, slicebuf, sizeof(slicebuf));
                        printf("%8" PRIu32 "  %-15s  %-8s  %4" PRIi32 "  %-7s  %s\n", tid, tcomm, policy, nice, lnbuf,
                               slicebuf);
                }
                n++;
        }
        if (r < 0)
                return ctl_bad_reply(r);
        if (ctl->json)
                fputs("]}", stdout);
        return CTL_EXIT_OK;
}

static const char get_usage[] =
        "latnicectl get PID... [--json]\n\n"
        "Show the latency nice of each process and of every thread: when\n"
        "latniced runs, its view, including which rule set the value (or that\n"
        "somebody else did); otherwise the kernel's view (thread id, name,\n"
        "policy, nice, latency nice, and the EEVDF slice where that is how the\n"
        "kernel expresses it).\n\n"
        "Exit status: 0 all shown, 2 usage error, 3 a process does not exist,\n"
        "1 other failure.\n";

static int run_get(Ctl *ctl) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) char *why = NULL;
        _cleanup_(freep) pid_t *pids = NULL;
        _cleanup_(ctl_kernel_view_done) KernelView kernel = { .proc_fd = -1 };
        int n_pids = 0, rc = CTL_EXIT_OK;

        if (ctl->n_args == 0)
                return ctl_usage_error(ctl, "Missing PID.");
        if (ctl_parse_pids(ctl, 0, &pids, &n_pids) < 0)
                return CTL_EXIT_USAGE;

        /* Without latniced, the kernel's view. */
        if (ctl_bus_connect(&bus, &why) < 0 && ctl_kernel_view_open(ctl, &kernel) < 0)
                return CTL_EXIT_FAILURE;

        if (ctl->json)
                putchar('[');
        for (int i = 0, shown = 0; i < n_pids; i++) {
                int r = bus ? get_one_online(ctl, bus, pids[i], shown == 0) :
                              ctl_kernel_get(ctl, &kernel, pids[i], shown == 0);

                if (r == CTL_EXIT_OK)
                        shown++;
                else if (rc == CTL_EXIT_OK)
                        rc = r;
        }
        if (ctl->json)
                printf("]\n");
        return rc;
}

const Verb verb_get = {
        "get", run_get, "show the latency nice of every thread of processes", get_usage,
};

/* ---- set ---------------------------------------------------------------- */

static const char set_usage[] =
        "latnicectl set -l N -p PID [-p PID...] [PID...] [--json]\n\n"
        "Set latency nice N on every thread of running processes. When\n"
        "latniced runs, it does the work: anybody may raise the value of their\n"
        "own processes (ask to wait longer); lowering it, or changing other\n"
        "users' processes, needs root or polkit (org.latnice1.set-latency-nice,\n"
        "org.latnice1.set-latency-nice-any). The daemon pins each process\n"
        "(pidfd and start time), so a reused PID is never changed. Without\n"
        "latniced the kernel is asked directly, with your own privileges.\n\n"
        "  -l --latency-nice=N  the value, -20..19\n"
        "  -p --pid=PID         a process; may be repeated, PIDs may also follow\n"
        "  -h --help            show this help\n\n"
        "Exit status: 0 applied everywhere; 2 usage error (nothing applied);\n"
        "3 no such process; 4 not supported, or every thread realtime;\n"
        "5 permission denied; 1 other failure. With several PIDs the status is\n"
        "that of the first one that failed; the others are still applied.\n";

static int run_set(Ctl *ctl) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) pid_t *pids = NULL;
        _cleanup_(freep) char *why = NULL;
        int32_t ln = ctl->latency_nice;
        int n_pids = 0, rc = CTL_EXIT_OK, shown = 0;
        pid_t agent;

        if (ctl_parse_pids(ctl, 0, &pids, &n_pids) < 0)
                return CTL_EXIT_USAGE;
        if (!ctl->have_latency_nice || n_pids == 0)
                return ctl_usage_error(ctl, "%s", !ctl->have_latency_nice ? "Missing -l N." : "Missing PID.");

        if (ctl_bus_connect(&bus, &why) < 0)
                return ctl_kernel_set(ctl, pids, n_pids);

        agent = ctl_polkit_agent_open();
        if (ctl->json)
                putchar('[');
        for (int i = 0; i < n_pids; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                uint32_t applied = 0, threads = 0;
                int r;

                r = ctl_call_for_pid(bus, "SetLatencyNice", pids[i], &ln, "nothing applied", &reply);
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
                if (ctl->json) {
                        json_sep(shown);
                        printf("{\"pid\":%d,\"latency_nice\":%d,\"threads_applied\":%" PRIu32 ",\"threads\":%" PRIu32
                               "}", (int) pids[i], ctl->latency_nice, applied, threads);
                } else
                        printf("PID %d: latency nice %d on %" PRIu32 " of %" PRIu32 " thread%s (through latniced).\n",
                               (int) pids[i], ctl->latency_nice, applied, threads, threads == 1 ? "" : "s");
                shown++;
        }
        ctl_polkit_agent_close(agent);
        if (ctl->json)
                printf("]\n");
        return rc;
}

const Verb verb_set = {
        "set", run_set, "set latency nice on every thread of running processes", set_usage,
};

/* ---- explain ------------------------------------------------------------ */

typedef struct BusRule {
        const char *kind, *name, *file;
        uint32_t line;
        int32_t value;
} BusRule;

static int read_rule(sd_bus_message *m, BusRule *rule) {
        return sd_bus_message_read(m, "(sssui)", &rule->kind, &rule->name, &rule->file, &rule->line, &rule->value);
}

static void print_bus_rule(const BusRule *rule) {
        printf("[%s %s] %s:%" PRIu32, rule->kind, rule->name, rule->file, rule->line);
}

static void json_rule(const BusRule *rule) {
        putchar('{');
        json_kv_str("kind", rule->kind, true);
        json_kv_str("name", rule->name, false);
        json_kv_str("file", rule->file, false);
        json_kv_int("line", rule->line, false);
        json_kv_int("latency_nice", rule->value, false);
        putchar('}');
}

/* "key":{rule}, or "key":null where no rule matched. */
static void json_kv_rule(const char *key, const BusRule *rule) {
        json_key(key, false);
        if (isempty(rule->kind))
                fputs("null", stdout);
        else
                json_rule(rule);
}

static const char *dict_get(char **dict, const char *key) {
        for (char **i = dict; i && i[0] && i[1]; i += 2)
                if (strcmp(i[0], key) == 0)
                        return i[1];
        return "";
}

static int explain_online(Ctl *ctl, sd_bus *bus, pid_t pid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(strv_freep) char **task = NULL, **because = NULL;
        BusRule rule = {}, unit_rule = {}, shadowed[64];
        size_t n_shadowed = 0;
        _cleanup_(freep) char *backend = NULL;
        const char *how;
        char note[512];
        int r;

        r = ctl_call_for_pid(bus, "Explain", pid, NULL, NULL, &reply);
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

        if (ctl->json) {
                putchar('{');
                json_key("task", true);
                putchar('{');
                for (char **i = task; i && i[0] && i[1]; i += 2)
                        json_kv_str(i[0], i[1], i == task);
                putchar('}');
                json_kv_str("how", how, false);
                json_kv_rule("rule", &rule);
                json_kv_strv("because", because, false);
                json_key("shadowed", false);
                putchar('[');
                for (size_t i = 0; i < n_shadowed; i++) {
                        json_sep(i);
                        json_rule(&shadowed[i]);
                }
                putchar(']');
                json_kv_rule("unit_rule", &unit_rule);
                json_kv_str("backend_note", note, false);
                json_kv_str("source", "latniced", false);
                printf("}\n");
                return CTL_EXIT_OK;
        }

        if (strcmp(how, "kernel-thread") == 0)
                printf("Note: %d is a kernel thread; latniced never changes kernel threads.\n", (int) pid);
        printf("Process %s\n", dict_get(task, "pid"));
        printf("  comm:    %s\n", *dict_get(task, "comm") ? dict_get(task, "comm") : "-");
        printf("  exe:     %s\n", *dict_get(task, "exe") ? dict_get(task, "exe") : "-");
        printf("  cmdline: %s\n", *dict_get(task, "cmdline") ? dict_get(task, "cmdline") : "-");
        printf("  parent:  %s\n", *dict_get(task, "parent") ? dict_get(task, "parent") : "-");
        if (*dict_get(task, "app"))
                printf("  app:     %s\n", dict_get(task, "app"));
        if (*dict_get(task, "ancestors"))
                printf("  ancestors: %s\n", dict_get(task, "ancestors"));
        printf("  user:    %s (%s)\n", *dict_get(task, "user") ? dict_get(task, "user") : "?", dict_get(task, "uid"));
        printf("  group:   %s (%s)\n", *dict_get(task, "group") ? dict_get(task, "group") : "?",
               dict_get(task, "gid"));
        printf("  cgroup:  %s\n\n", *dict_get(task, "cgroup") ? dict_get(task, "cgroup") : "-");

        if (!isempty(rule.kind)) {
                printf("Matched:  ");
                print_bus_rule(&rule);
                if (strcmp(how, "unit") == 0)
                        printf(" -> LatencyNice=%" PRIi32 ", through the unit the process runs in\n", rule.value);
                else {
                        _cleanup_(freep) char *j = strv_join(because, " ");

                        printf(" -> LatencyNice=%" PRIi32 "\n", rule.value);
                        printf("  because %s all matched\n", j ?: "");
                }
        } else
                printf("Matched:  no rule; latniced leaves this process alone\n");
        if (strcmp(how, "foreground") == 0)
                printf("Now:      the foreground boost ([Foreground] in latniced.conf): its window has focus; "
                       "when focus moves on it gets back the value above (or its own)\n");
        for (size_t i = 0; i < n_shadowed; i++) {
                printf("Shadowed: ");
                print_bus_rule(&shadowed[i]);
                printf(" -> LatencyNice=%" PRIi32 " (an earlier rule wins)\n", shadowed[i].value);
        }
        if (!isempty(unit_rule.kind)) {
                printf("Unit:     ");
                print_bus_rule(&unit_rule);
                printf(" -> LatencyNice=%" PRIi32 " for the unit; the process rule decides this process\n",
                       unit_rule.value);
        }
        if (*dict_get(task, "unit"))
                printf("Unit of the process: %s\n", dict_get(task, "unit"));
        if (*note)
                printf("Note:     %s\n", note);
        printf("(the rules latniced is running; --root=/ explains with the files on disk)\n");
        return CTL_EXIT_OK;
}

static const char explain_usage[] =
        "latnicectl explain PID\n"
        "latnicectl explain --pid=PID [--verbose]\n"
        "latnicectl explain [--comm=NAME] [--exe=PATH] [--cmdline=WORD...] [--parent=NAME]\n"
        "                   [--user=NAME] [--group=NAME] [--cgroup=PATH] [--verbose]\n\n"
        "Show which rule gives a process its latency nice and why, and which\n"
        "later rules it shadows. A single PID is explained by latniced, with the\n"
        "rules it is running, when it runs (--json then prints its answer);\n"
        "otherwise, and with --verbose, --root or a profile option, from the\n"
        "rule files on disk. --pid reads the process from /proc; the other\n"
        "options describe a process that need not exist. --cmdline may repeat.\n"
        "--verbose also shows why each other rule did not match.\n\n"
        "Exit status: 0 explained, 1 rules could not be loaded, 2 usage error,\n"
        "3 no such process.\n";

/*
 * Only a single PID goes to latniced; a description, --verbose and an
 * explicit rule tree or profile are the offline explain's job.
 */
static int run_explain(Ctl *ctl) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) char *why = NULL;
        char **last_pid = ctl->pid_args ? ctl->pid_args + strv_length(ctl->pid_args) - 1 : NULL;
        pid_t pid = 0;

        /* "explain 1234" is what people type: accept a bare pid. */
        if (last_pid) {
                if (parse_pid(*last_pid, &pid) < 0) {
                        fprintf(stderr, "Invalid pid '%s': expected a positive number.\n", *last_pid);
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

const Verb verb_explain = {
        "explain", run_explain, "show which rule applies to a process and why", explain_usage,
};
