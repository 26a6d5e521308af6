/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl's online verbs: talk to latniced over org.latnice1 (sd-bus,
 * the system bus). status, list, rules, reload and profile need the daemon;
 * get, set and explain ask it when it is on the bus (its running rules, its
 * record of what it set) and otherwise fall back to the offline verbs
 * (the kernel's view, the rules on disk). Tables for people, --json for
 * programs.
 */

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "ctl-bus.h"
#include "latnice/dbus.h"
#include "latnice/uapi.h"
#include "proc.h"
#include "sched.h"
#include "util.h"

/* ---- output helpers ----------------------------------------------------- */

/* A JSON string. Bytes that are not UTF-8 (a process name is any bytes) become U+FFFD. */
static void json_str(const char *s) {
        putchar('"');
        for (const unsigned char *p = (const unsigned char *) (s ?: ""); *p; p++) {
                if (*p >= 0x80) {
                        size_t n = utf8_char_len((const char *) p);

                        if (n == 0)
                                fputs("\\ufffd", stdout);
                        else {
                                fwrite(p, 1, n, stdout);
                                p += n - 1;
                        }
                        continue;
                }
                switch (*p) {
                case '"':
                        fputs("\\\"", stdout);
                        break;
                case '\\':
                        fputs("\\\\", stdout);
                        break;
                case '\n':
                        fputs("\\n", stdout);
                        break;
                case '\t':
                        fputs("\\t", stdout);
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f)
                                printf("\\u%04x", *p);
                        else
                                putchar(*p);
                }
        }
        putchar('"');
}

static void json_key(const char *k, bool first) {
        if (!first)
                putchar(',');
        json_str(k);
        putchar(':');
}

static void json_kv_str(const char *k, const char *v, bool first) {
        json_key(k, first);
        json_str(v);
}

static void json_kv_int(const char *k, long long v, bool first) {
        json_key(k, first);
        printf("%lld", v);
}

static void json_kv_strv(const char *k, char **l, bool first) {
        json_key(k, first);
        putchar('[');
        for (char **i = l; i && *i; i++) {
                if (i != l)
                        putchar(',');
                json_str(*i);
        }
        putchar(']');
}

static void format_ns(uint64_t ns, char *buf, size_t size) {
        snprintf(buf, size, "%" PRIu64 ".%03" PRIu64 " ms", ns / 1000000, ns / 1000 % 1000);
}

/* Removes --json (before "--") from argv, setting ctl->json: `latnicectl status --json` works too. */
static int strip_json(Ctl *ctl, int argc, char **argv) {
        int w = 0;
        bool end = false;

        for (int i = 0; i < argc; i++) {
                if (!end && strcmp(argv[i], "--") == 0)
                        end = true;
                if (!end && i > 0 && strcmp(argv[i], "--json") == 0) {
                        ctl->json = true;
                        continue;
                }
                argv[w++] = argv[i];
        }
        argv[w] = NULL;
        return w;
}

/* ---- the connection ----------------------------------------------------- */

static int error_exit_code(const sd_bus_error *e) {
        if (sd_bus_error_has_names(e, LATNICE_ERROR_NO_SUCH_PROCESS, LATNICE_ERROR_PROCESS_CHANGED))
                return CTL_EXIT_NO_PROCESS;
        if (sd_bus_error_has_names(e, LATNICE_ERROR_ACCESS_DENIED, LATNICE_ERROR_NOT_YOUR_PROCESS,
                                   LATNICE_ERROR_INTERACTIVE_AUTH_REQUIRED, SD_BUS_ERROR_ACCESS_DENIED))
                return CTL_EXIT_PERMISSION;
        if (sd_bus_error_has_names(e, LATNICE_ERROR_NOT_SUPPORTED, LATNICE_ERROR_KERNEL_THREAD))
                return CTL_EXIT_UNSUPPORTED;
        if (sd_bus_error_has_names(e, LATNICE_ERROR_INVALID_VALUE, LATNICE_ERROR_INVALID_PID,
                                   LATNICE_ERROR_INVALID_PROFILE_NAME))
                return CTL_EXIT_USAGE;
        return CTL_EXIT_FAILURE;
}

static int print_bus_error(const char *what, const sd_bus_error *e, int r) {
        if (sd_bus_error_is_set(e))
                fprintf(stderr, "%s: %s\n", what, e->message ?: e->name);
        else
                fprintf(stderr, "%s: %s\n", what, strerror(-r));
        return sd_bus_error_is_set(e) ? error_exit_code(e) : CTL_EXIT_FAILURE;
}

/*
 * Calls a method that names a process, through its pidfd variant
 * ("<method>ByPIDFD") where we can open a pidfd: latniced then acts on the
 * very process we named, even if its pid is reused in between. An older
 * latniced without the variants, or no pidfd, gets the pid method.
 */
static int call_for_pid(sd_bus *bus, const char *method, pid_t pid, const int32_t *value, sd_bus_error *error,
                        sd_bus_message **reply) {
        _cleanup_(closep) int pidfd = pidfd_open(pid, 0);
        char name[64];
        int r;

        if (pidfd >= 0) {
                snprintf(name, sizeof(name), "%sByPIDFD", method);
                if (value)
                        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, name,
                                               error, reply, "hi", pidfd, *value);
                else
                        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, name,
                                               error, reply, "h", pidfd);
                if (r >= 0 || !sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_METHOD))
                        return r;
                sd_bus_error_free(error);
        }
        if (value)
                return sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, method, error,
                                          reply, "ui", (uint32_t) pid, *value);
        return sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, method, error, reply,
                                  "u", (uint32_t) pid);
}

/*
 * Connects to the system bus and checks that latniced owns its name.
 * 0 and a bus if it does; < 0 if not (quiet: callers decide whether that is
 * an error or a reason to fall back).
 */
static int daemon_connect(sd_bus **ret, char **ret_why) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int has = 0, r;

        *ret_why = NULL;
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                if (asprintf(ret_why, "latniced is not reachable: cannot connect to the system bus (%s)",
                             strerror(-r)) < 0)
                        *ret_why = NULL;
                return r;
        }
        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", &error, &reply, "s", LATNICE_BUS_NAME);
        if (r >= 0)
                r = sd_bus_message_read(reply, "b", &has);
        if (r < 0 || !has) {
                if (asprintf(ret_why, "latniced is not running (%s is not on the system bus)", LATNICE_BUS_NAME) < 0)
                        *ret_why = NULL;
                return r < 0 ? r : -ESRCH;
        }
        /* Let polkit ask for a password when a person is at the terminal. */
        (void) sd_bus_set_allow_interactive_authorization(bus, isatty(STDIN_FILENO) > 0);
        *ret = TAKE_PTR(bus);
        return 0;
}

static int daemon_connect_or_fail(sd_bus **ret) {
        _cleanup_(freep) char *why = NULL;
        int r;

        r = daemon_connect(ret, &why);
        if (r < 0) {
                fprintf(stderr, "%s.\n", why ?: "latniced is not reachable");
                return CTL_EXIT_FAILURE;
        }
        return 0;
}

/* The offline view is meant when the rule tree or profile was chosen on the command line. */
static bool ctl_wants_offline(const Ctl *ctl) {
        return ctl->root || ctl->profile || ctl->profile_dir || ctl->no_profile;
}

/*
 * A text polkit agent for this terminal while a privileged call runs, as
 * systemctl does: pkttyagent tells us on a pipe when it is registered.
 */
static pid_t polkit_agent_open(sd_bus *bus) {
        int pipefd[2];
        pid_t pid;
        char fdstr[16], c;

        if (geteuid() == 0 || isatty(STDIN_FILENO) <= 0 || access("/usr/bin/pkttyagent", X_OK) < 0)
                return 0;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return 0;
        pid = fork();
        if (pid < 0) {
                close(pipefd[0]);
                close(pipefd[1]);
                return 0;
        }
        if (pid == 0) {
                int fd = fcntl(pipefd[1], F_DUPFD, 3);

                if (fd < 0)
                        _exit(1);
                snprintf(fdstr, sizeof(fdstr), "%d", fd);
                execl("/usr/bin/pkttyagent", "pkttyagent", "--notify-fd", fdstr, "--fallback", (char *) NULL);
                _exit(127);
        }
        close(pipefd[1]);
        {
                struct pollfd p = { .fd = pipefd[0], .events = POLLIN };

                /* It writes nothing and closes the fd once registered (or dies). */
                (void) poll(&p, 1, 5000);
                (void) !read(pipefd[0], &c, 1);
        }
        close(pipefd[0]);
        (void) bus;
        return pid;
}

static void polkit_agent_close(pid_t pid) {
        if (pid <= 0)
                return;
        (void) kill(pid, SIGTERM);
        (void) waitpid(pid, NULL, 0);
}

/* ---- status ----------------------------------------------------------- */

typedef struct Status {
        char *version, *backend, *backend_reason, *event_source, *event_source_reason, *profile, *profile_path;
        char *prefilter;
        uint64_t prefilter_memory;
        char **rule_files, **rule_errors;
        uint32_t rules, applied_processes;
        uint64_t tasks_applied, apply_errors, events_seen, events_lost, rescans, reloads, default_slice,
                suppressed, cmdline_truncated;
} Status;

static void status_done(Status *s) {
        free(s->version);
        free(s->backend);
        free(s->backend_reason);
        free(s->event_source);
        free(s->event_source_reason);
        free(s->profile);
        free(s->profile_path);
        free(s->prefilter);
        strv_free(s->rule_files);
        strv_free(s->rule_errors);
}

static int status_read(sd_bus *bus, Status *s, sd_bus_error *error) {
        static const struct {
                const char *name;
                const char *sig;
                size_t offset;
        } map[] = {
                { "Version", "s", offsetof(Status, version) },
                { "Backend", "s", offsetof(Status, backend) },
                { "BackendReason", "s", offsetof(Status, backend_reason) },
                { "EventSource", "s", offsetof(Status, event_source) },
                { "EventSourceReason", "s", offsetof(Status, event_source_reason) },
                { "Profile", "s", offsetof(Status, profile) },
                { "ProfilePath", "s", offsetof(Status, profile_path) },
                { "RuleFiles", "as", offsetof(Status, rule_files) },
                { "RuleErrors", "as", offsetof(Status, rule_errors) },
                { "Rules", "u", offsetof(Status, rules) },
                { "AppliedProcesses", "u", offsetof(Status, applied_processes) },
                { "TasksApplied", "t", offsetof(Status, tasks_applied) },
                { "ApplyErrors", "t", offsetof(Status, apply_errors) },
                { "EventsSeen", "t", offsetof(Status, events_seen) },
                { "EventsLost", "t", offsetof(Status, events_lost) },
                { "Rescans", "t", offsetof(Status, rescans) },
                { "Reloads", "t", offsetof(Status, reloads) },
                { "DefaultSliceNSec", "t", offsetof(Status, default_slice) },
                { "AppliedSignalsSuppressed", "t", offsetof(Status, suppressed) },
                { "CmdlineTruncated", "t", offsetof(Status, cmdline_truncated) },
                { "Prefilter", "s", offsetof(Status, prefilter) },
                { "PrefilterMemory", "t", offsetof(Status, prefilter_memory) },
        };
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll",
                               error, &reply, "s", LATNICE_BUS_INTERFACE);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *name;
                size_t i;

                r = sd_bus_message_read(reply, "s", &name);
                if (r < 0)
                        return r;
                for (i = 0; i < ELEMENTSOF(map); i++)
                        if (strcmp(map[i].name, name) == 0)
                                break;
                if (i == ELEMENTSOF(map) || sd_bus_message_enter_container(reply, 'v', map[i].sig) <= 0) {
                        r = sd_bus_message_skip(reply, "v"); /* newer daemon, or another type */
                        if (r < 0)
                                return r;
                } else {
                        void *p = (uint8_t *) s + map[i].offset;
                        const char *str;

                        switch (map[i].sig[0]) {
                        case 's':
                                r = sd_bus_message_read(reply, "s", &str);
                                if (r >= 0) {
                                        free(*(char **) p);
                                        *(char **) p = strdup(str);
                                }
                                break;
                        case 'a':
                                r = sd_bus_message_read_strv(reply, (char ***) p);
                                break;
                        default:
                                r = sd_bus_message_read_basic(reply, map[i].sig[0], p);
                        }
                        if (r < 0)
                                return r;
                        r = sd_bus_message_exit_container(reply);
                        if (r < 0)
                                return r;
                }
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        return r;
}

/*
 * What every verb without arguments starts with: --json, --help, no stray
 * arguments, a connection to latniced. Returns -1 to go on, else the exit code.
 */
static int verb_prologue(Ctl *ctl, int argc, char **argv, const char *usage, sd_bus **ret_bus) {
        int r;

        argc = strip_json(ctl, argc, argv);
        if (ctl_want_help(argc, argv, usage))
                return CTL_EXIT_OK;
        if (argc > 1) {
                fprintf(stderr, "Unexpected argument '%s'.\n%s", argv[1], usage);
                return CTL_EXIT_USAGE;
        }
        r = daemon_connect_or_fail(ret_bus);
        return r != 0 ? r : -1;
}

int verb_status(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl status [--json]\n\n"
                "Show what latniced is doing: the kernel backend and why, the event\n"
                "source, the active profile, the rule files in order, rule errors with\n"
                "file:line, and its counters. Needs latniced.\n";
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        Status s = {};
        int r;

        r = verb_prologue(ctl, argc, argv, usage, &bus);
        if (r >= 0)
                return r;
        r = status_read(bus, &s, &error);
        if (r < 0) {
                status_done(&s);
                return print_bus_error("Cannot read latniced's status", &error, r);
        }

        if (ctl->json) {
                putchar('{');
                json_kv_str("version", s.version, true);
                json_kv_str("backend", s.backend, false);
                json_kv_str("backend_reason", s.backend_reason, false);
                json_kv_int("default_slice_ns", (long long) s.default_slice, false);
                json_kv_str("event_source", s.event_source, false);
                json_kv_str("event_source_reason", s.event_source_reason, false);
                json_kv_str("profile", s.profile, false);
                json_kv_str("profile_path", s.profile_path, false);
                json_kv_int("rules", s.rules, false);
                json_kv_strv("rule_files", s.rule_files, false);
                json_kv_strv("rule_errors", s.rule_errors, false);
                json_kv_int("applied_processes", s.applied_processes, false);
                json_kv_int("tasks_applied", (long long) s.tasks_applied, false);
                json_kv_int("apply_errors", (long long) s.apply_errors, false);
                json_kv_int("events_seen", (long long) s.events_seen, false);
                json_kv_int("events_lost", (long long) s.events_lost, false);
                json_kv_int("rescans", (long long) s.rescans, false);
                json_kv_int("reloads", (long long) s.reloads, false);
                json_kv_int("applied_signals_suppressed", (long long) s.suppressed, false);
                json_kv_int("cmdline_truncated", (long long) s.cmdline_truncated, false);
                json_kv_str("prefilter", s.prefilter, false);
                json_kv_int("prefilter_memory", (long long) s.prefilter_memory, false);
                printf("}\n");
        } else {
                char slice[32] = "";

                if (s.default_slice > 0) {
                        strcpy(slice, ", default slice ");
                        format_ns(s.default_slice, slice + strlen(slice), sizeof(slice) - strlen(slice));
                }
                printf("latniced %s on %s\n", s.version ?: "?", LATNICE_BUS_NAME);
                printf("     Backend: %s%s\n", s.backend ?: "?", slice);
                printf("              %s\n", s.backend_reason ?: "");
                printf("Event source: %s: %s\n", s.event_source ?: "?", s.event_source_reason ?: "");
                if (s.prefilter)
                        printf("   Prefilter: %s; %" PRIu64 " kB of kernel memory\n", s.prefilter,
                               s.prefilter_memory / 1024);
                printf("     Profile: %s%s%s%s\n", isempty(s.profile) ? "none" : s.profile,
                       isempty(s.profile_path) ? "" : " (", s.profile_path ?: "", isempty(s.profile_path) ? "" : ")");
                printf("       Rules: %" PRIu32 " from %zu file%s, %zu error%s\n", s.rules, strv_length(s.rule_files),
                       strv_length(s.rule_files) == 1 ? "" : "s", strv_length(s.rule_errors),
                       strv_length(s.rule_errors) == 1 ? "" : "s");
                for (char **f = s.rule_files; f && *f; f++)
                        printf("              %s\n", *f);
                printf("     Applied: %" PRIu32 " process%s now; %" PRIu64 " thread values set, %" PRIu64
                       " error%s\n", s.applied_processes, s.applied_processes == 1 ? "" : "es", s.tasks_applied,
                       s.apply_errors, s.apply_errors == 1 ? "" : "s");
                printf("      Events: %" PRIu64 " seen, %" PRIu64 " lost; %" PRIu64 " rescans, %" PRIu64 " reloads\n",
                       s.events_seen, s.events_lost, s.rescans, s.reloads);
                if (s.cmdline_truncated > 0)
                        printf("    Cmdline=: %" PRIu64 " exec%s seen with a cut command line (the process was gone "
                               "before the rest could be read): Cmdline= rules did not see every word\n",
                               s.cmdline_truncated, s.cmdline_truncated == 1 ? "" : "s");
                if (s.rule_errors) {
                        printf("\nRule errors (these rules were skipped):\n");
                        for (char **e = s.rule_errors; *e; e++)
                                printf("  %s\n", *e);
                }
        }
        status_done(&s);
        return CTL_EXIT_OK;
}

/* ---- list, rules -------------------------------------------------------- */

int verb_list(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl list [--json]\n\n"
                "List the processes latniced gave a value: PID, name, latency nice and\n"
                "the rule that decided it (\"manual\" for values set through 'set').\n"
                "Needs latniced.\n";
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const char *comm, *rule, *ref;
        uint32_t pid;
        int32_t value;
        unsigned n = 0;
        int r;

        r = verb_prologue(ctl, argc, argv, usage, &bus);
        if (r >= 0)
                return r;
        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "ListApplied", &error,
                               &reply, NULL);
        if (r < 0)
                return print_bus_error("Cannot list applied processes", &error, r);
        r = sd_bus_message_enter_container(reply, 'a', "(usiss)");
        if (r < 0)
                return print_bus_error("Bad reply", &error, r);
        if (ctl->json)
                putchar('[');
        else
                printf("%8s  %-15s  %7s  %s\n", "PID", "COMM", "LATNICE", "RULE");
        while ((r = sd_bus_message_read(reply, "(usiss)", &pid, &comm, &value, &rule, &ref)) > 0) {
                if (ctl->json) {
                        fputs(n ? ",{" : "{", stdout);
                        json_kv_int("pid", pid, true);
                        json_kv_str("comm", comm, false);
                        json_kv_int("latency_nice", value, false);
                        json_kv_str("rule", rule, false);
                        json_kv_str("rule_ref", ref, false);
                        putchar('}');
                } else
                        printf("%8" PRIu32 "  %-15s  %7" PRIi32 "  %s\n", pid, comm, value, ref);
                n++;
        }
        if (r < 0)
                return print_bus_error("Bad reply", &error, r);
        if (ctl->json)
                printf("]\n");
        else
                printf("\n%u process%s.\n", n, n == 1 ? "" : "es");
        return CTL_EXIT_OK;
}

int verb_rules(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl rules [--json]\n\n"
                "List the rules latniced is running, in the order they are tried.\n"
                "('latnicectl cat-config' shows the files on disk.) Needs latniced.\n";
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        unsigned n = 0;
        int r;

        r = verb_prologue(ctl, argc, argv, usage, &bus);
        if (r >= 0)
                return r;
        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "ListRules", &error,
                               &reply, NULL);
        if (r < 0)
                return print_bus_error("Cannot list rules", &error, r);
        r = sd_bus_message_enter_container(reply, 'a', "(sssuiasbs)");
        if (ctl->json)
                putchar('[');
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'r', "sssuiasbs")) > 0) {
                _cleanup_(strv_freep) char **keys = NULL;
                _cleanup_(freep) char *joined = NULL;
                const char *kind, *name, *file, *threads;
                uint32_t line;
                int32_t value;
                int override;

                r = sd_bus_message_read(reply, "sssui", &kind, &name, &file, &line, &value);
                if (r >= 0)
                        r = sd_bus_message_read_strv(reply, &keys);
                if (r >= 0)
                        r = sd_bus_message_read(reply, "bs", &override, &threads);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        break;
                if (ctl->json) {
                        if (n)
                                putchar(',');
                        putchar('{');
                        json_kv_str("kind", kind, true);
                        json_kv_str("name", name, false);
                        json_kv_str("file", file, false);
                        json_kv_int("line", line, false);
                        json_kv_int("latency_nice", value, false);
                        json_kv_strv("match", keys, false);
                        json_key("override", false);
                        fputs(override ? "true" : "false", stdout);
                        json_kv_str("threads", threads, false);
                        putchar('}');
                } else {
                        joined = strv_join(keys, " ");
                        printf("[%s %s] %s:%" PRIu32 " -> LatencyNice=%" PRIi32 "%s%s\n    %s\n", kind, name, file,
                               line, value, override ? " Override=yes" : "",
                               strcmp(threads, "all") == 0 ? "" : " Threads=main", joined ?: "");
                }
                n++;
        }
        if (r < 0)
                return print_bus_error("Bad reply", &error, r);
        if (ctl->json)
                printf("]\n");
        else
                printf("%s%u rule%s.\n", n ? "\n" : "", n, n == 1 ? "" : "s");
        return CTL_EXIT_OK;
}

/* ---- reload, profile ---------------------------------------------------- */

int verb_reload(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl reload [--json]\n\n"
                "Ask latniced to reload latniced.conf, the profile and the rules. A\n"
                "reload whose rules have new errors keeps the rules that were running.\n"
                "Needs root or the polkit action org.latnice1.reload.\n";
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        uint32_t rules, errors;
        pid_t agent;
        int r;

        r = verb_prologue(ctl, argc, argv, usage, &bus);
        if (r >= 0)
                return r;
        agent = polkit_agent_open(bus);
        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "Reload", &error,
                               &reply, NULL);
        polkit_agent_close(agent);
        if (r < 0)
                return print_bus_error("Reload failed", &error, r);
        r = sd_bus_message_read(reply, "uu", &rules, &errors);
        if (r < 0)
                return print_bus_error("Bad reply", &error, r);
        if (ctl->json)
                printf("{\"rules\":%" PRIu32 ",\"errors\":%" PRIu32 "}\n", rules, errors);
        else
                printf("Reloaded: %" PRIu32 " rule%s, %" PRIu32 " error%s%s.\n", rules, rules == 1 ? "" : "s", errors,
                       errors == 1 ? "" : "s", errors ? " (see 'latnicectl status')" : "");
        return CTL_EXIT_OK;
}

int verb_profile(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl profile [NAME] [--json]\n\n"
                "Without NAME, list the profiles and mark the active one. With NAME,\n"
                "switch latniced to that profile now (until the next restart; set\n"
                "Profile= in latniced.conf to keep it). Switching needs root or the\n"
                "polkit action org.latnice1.set-profile.\n";
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const char *name, *path;
        unsigned n = 0;
        int active, r;

        argc = strip_json(ctl, argc, argv);
        if (ctl_want_help(argc, argv, usage))
                return CTL_EXIT_OK;
        if (argc > 2) {
                fprintf(stderr, "Unexpected argument '%s'.\n%s", argv[2], usage);
                return CTL_EXIT_USAGE;
        }
        r = daemon_connect_or_fail(&bus);
        if (r != 0)
                return r;

        if (argc == 2) {
                pid_t agent = polkit_agent_open(bus);

                r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "SetProfile",
                                       &error, NULL, "s", argv[1]);
                polkit_agent_close(agent);
                if (r < 0)
                        return print_bus_error("Cannot switch the profile", &error, r);
                if (ctl->json) {
                        putchar('{');
                        json_kv_str("profile", argv[1], true);
                        printf("}\n");
                } else
                        printf("Switched to profile %s.\n", argv[1]);
                return CTL_EXIT_OK;
        }

        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "ListProfiles",
                               &error, &reply, NULL);
        if (r < 0)
                return print_bus_error("Cannot list profiles", &error, r);
        r = sd_bus_message_enter_container(reply, 'a', "(ssb)");
        if (ctl->json)
                putchar('[');
        while (r >= 0 && (r = sd_bus_message_read(reply, "(ssb)", &name, &path, &active)) > 0) {
                if (ctl->json) {
                        if (n)
                                putchar(',');
                        putchar('{');
                        json_kv_str("name", name, true);
                        json_kv_str("path", path, false);
                        json_key("active", false);
                        fputs(active ? "true}" : "false}", stdout);
                } else
                        printf("%s %-16s %s\n", active ? "*" : " ", name, path);
                n++;
        }
        if (r < 0)
                return print_bus_error("Bad reply", &error, r);
        if (ctl->json)
                printf("]\n");
        else if (n == 0)
                printf("No profiles installed.\n");
        return CTL_EXIT_OK;
}

/* ---- get ---------------------------------------------------------------- */

static int get_one_online(Ctl *ctl, sd_bus *bus, pid_t pid, bool first) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *comm, *set_by, *rule, *ref, *backend;
        uint64_t start_time;
        int32_t value;
        unsigned n = 0;
        int r;

        r = call_for_pid(bus, "GetTask", pid, NULL, &error, &reply);
        if (r < 0) {
                char what[32];

                snprintf(what, sizeof(what), "PID %d", (int) pid);
                return print_bus_error(what, &error, r);
        }
        r = sd_bus_message_read(reply, "sisssst", &comm, &value, &set_by, &rule, &ref, &backend, &start_time);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ussiitb)");
        if (r < 0)
                return print_bus_error("Bad reply", &error, r);

        if (ctl->json) {
                if (!first)
                        putchar(',');
                putchar('{');
                json_kv_int("pid", pid, true);
                json_kv_str("comm", comm, false);
                json_kv_int("latency_nice", value, false);
                json_kv_str("set_by", set_by, false);
                json_kv_str("rule", rule, false);
                json_kv_str("rule_ref", ref, false);
                json_kv_str("backend", backend, false);
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
                        if (n)
                                putchar(',');
                        putchar('{');
                        json_kv_int("tid", tid, true);
                        json_kv_str("comm", tcomm, false);
                        json_kv_str("policy", policy, false);
                        json_kv_int("nice", nice, false);
                        json_kv_int("latency_nice", ln, false);
                        json_kv_int("slice_ns", (long long) slice, false);
                        json_key("realtime", false);
                        fputs(realtime ? "true}" : "false}", stdout);
                } else {
                        if (!realtime)
                                snprintf(lnbuf, sizeof(lnbuf), "%" PRIi32, ln);
                        if (slice > 0 && !realtime)
                                format_ns(slice, slicebuf, sizeof(slicebuf));
                        printf("%8" PRIu32 "  %-15s  %-8s  %4" PRIi32 "  %-7s  %s\n", tid, tcomm, policy, nice, lnbuf,
                               slicebuf);
                }
                n++;
        }
        if (r < 0)
                return print_bus_error("Bad reply", &error, r);
        if (ctl->json)
                fputs("]}", stdout);
        return CTL_EXIT_OK;
}

/* The kernel's view as JSON, when the daemon is not there. */
static int get_one_kernel_json(const SchedProbe *p, int proc_fd, pid_t pid, bool first) {
        _cleanup_(freep) pid_t *tids = NULL;
        ThreadSched main_thread = {};
        char path[64];
        ProcStat st;
        int n, r;

        snprintf(path, sizeof(path), "%d/stat", (int) pid);
        r = proc_stat_read(proc_fd, path, &st);
        if (r < 0) {
                fprintf(stderr, "PID %d: %s\n", (int) pid, r == -ESRCH || r == -ENOENT ? "no such process" : strerror(-r));
                return r == -ESRCH || r == -ENOENT ? CTL_EXIT_NO_PROCESS : CTL_EXIT_FAILURE;
        }
        (void) sched_thread_get(p, pid, &main_thread);
        if (!first)
                putchar(',');
        putchar('{');
        json_kv_int("pid", pid, true);
        json_kv_str("comm", st.comm, false);
        json_kv_int("latency_nice", main_thread.latency_nice, false);
        json_kv_str("set_by", "unknown", false); /* only the daemon knows */
        json_kv_str("backend", backend_to_string(p->backend), false);
        json_kv_int("start_time", (long long) st.start_time, false);
        json_key("threads", false);
        putchar('[');
        n = proc_list_tasks(proc_fd, pid, &tids);
        for (int i = 0, k = 0; i < n; i++) {
                ProcStat ts = {};
                ThreadSched t;

                if (sched_thread_get(p, tids[i], &t) < 0)
                        continue;
                snprintf(path, sizeof(path), "%d/task/%d/stat", (int) pid, (int) tids[i]);
                (void) proc_stat_read(proc_fd, path, &ts);
                if (k++)
                        putchar(',');
                putchar('{');
                json_kv_int("tid", tids[i], true);
                json_kv_str("comm", ts.comm, false);
                json_kv_str("policy", sched_policy_to_string(t.attr.sched_policy), false);
                json_kv_int("nice", t.attr.sched_nice, false);
                json_kv_int("latency_nice", t.latency_nice, false);
                json_kv_int("slice_ns", p->backend == BACKEND_EEVDF_SLICE ? (long long) t.attr.sched_runtime : 0, false);
                json_key("realtime", false);
                fputs(t.realtime ? "true}" : "false}", stdout);
        }
        fputs("]}", stdout);
        return CTL_EXIT_OK;
}

static int parse_pids(int argc, char **argv, int start, pid_t **ret, int *ret_n) {
        _cleanup_(freep) pid_t *pids = calloc((size_t) argc + 1, sizeof(pid_t));
        int n = 0;

        if (!pids)
                return -ENOMEM;
        for (int i = start; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        continue;
                if (parse_pid(argv[i], &pids[n]) < 0) {
                        fprintf(stderr, "Invalid PID '%s': must be a positive integer.\n", argv[i]);
                        return -EINVAL;
                }
                n++;
        }
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

int verb_get_online(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl get PID... [--json]\n\n"
                "Show the latency nice of each process and of every thread: when\n"
                "latniced runs, its view, including which rule set the value (or that\n"
                "somebody else did); otherwise the kernel's view (thread id, name,\n"
                "policy, nice, latency nice, and the EEVDF slice where that is how the\n"
                "kernel expresses it).\n\n"
                "Exit status: 0 all shown, 2 usage error, 3 a process does not exist,\n"
                "1 other failure.\n";
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) char *why = NULL;
        _cleanup_(freep) pid_t *pids = NULL;
        int n_pids = 0, rc = CTL_EXIT_OK;

        argc = strip_json(ctl, argc, argv);
        if (ctl_want_help(argc, argv, usage))
                return CTL_EXIT_OK;
        if (argc < 2) {
                fprintf(stderr, "Missing PID.\n%s", usage);
                return CTL_EXIT_USAGE;
        }
        if (parse_pids(argc, argv, 1, &pids, &n_pids) < 0)
                return CTL_EXIT_USAGE;

        if (daemon_connect(&bus, &why) < 0) {
                _cleanup_(closep) int proc_fd = -1;
                SchedProbe p;

                if (!ctl->json)
                        return verb_get(ctl, argc, argv);
                proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (proc_fd < 0) {
                        fprintf(stderr, "Cannot open /proc: %m\n");
                        return CTL_EXIT_FAILURE;
                }
                sched_probe("/sys/kernel/btf/vmlinux", &p);
                putchar('[');
                for (int i = 0, shown = 0; i < n_pids; i++) {
                        int r = get_one_kernel_json(&p, proc_fd, pids[i], shown == 0);

                        if (r == CTL_EXIT_OK)
                                shown++;
                        else if (rc == CTL_EXIT_OK)
                                rc = r;
                }
                printf("]\n");
                return rc;
        }

        if (ctl->json)
                putchar('[');
        for (int i = 0, shown = 0; i < n_pids; i++) {
                int r = get_one_online(ctl, bus, pids[i], shown == 0);

                if (r == CTL_EXIT_OK)
                        shown++;
                else if (rc == CTL_EXIT_OK)
                        rc = r;
        }
        if (ctl->json)
                printf("]\n");
        return rc;
}

/* ---- set ---------------------------------------------------------------- */

int verb_set_online(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
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
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "latency-nice", required_argument, NULL, 'l' },
                { "pid", required_argument, NULL, 'p' },
                {}
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) pid_t *pids = NULL;
        _cleanup_(freep) char *why = NULL;
        int c, ln = 0, n_pids = 0, rc = CTL_EXIT_OK, shown = 0;
        bool have_ln = false;
        pid_t agent;

        argc = strip_json(ctl, argc, argv);
        pids = calloc((size_t) argc + 1, sizeof(pid_t));
        if (!pids)
                return CTL_EXIT_FAILURE;
        optind = 0;
        while ((c = getopt_long(argc, argv, "hl:p:", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        fputs(usage, stdout);
                        return CTL_EXIT_OK;
                case 'l':
                        if (safe_atoi(optarg, &ln) < 0 || ln < LATNICE_MIN || ln > LATNICE_MAX) {
                                fprintf(stderr, "Invalid latency nice '%s': must be an integer in %d..%d.\n", optarg,
                                        LATNICE_MIN, LATNICE_MAX);
                                return CTL_EXIT_USAGE;
                        }
                        have_ln = true;
                        break;
                case 'p':
                        if (parse_pid(optarg, &pids[n_pids]) < 0) {
                                fprintf(stderr, "Invalid PID '%s': must be a positive integer.\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        n_pids++;
                        break;
                default:
                        fputs(usage, stderr);
                        return CTL_EXIT_USAGE;
                }
        }
        for (int i = optind; i < argc; i++) {
                if (parse_pid(argv[i], &pids[n_pids]) < 0) {
                        fprintf(stderr, "Invalid PID '%s': must be a positive integer.\n", argv[i]);
                        return CTL_EXIT_USAGE;
                }
                n_pids++;
        }
        if (!have_ln || n_pids == 0) {
                fprintf(stderr, "%s\n%s", !have_ln ? "Missing -l N." : "Missing PID.", usage);
                return CTL_EXIT_USAGE;
        }

        if (daemon_connect(&bus, &why) < 0) {
                /* Offline: the kernel directly, as the colleague verb does it. */
                optind = 0;
                return verb_set(ctl, argc, argv);
        }

        agent = polkit_agent_open(bus);
        if (ctl->json)
                putchar('[');
        for (int i = 0; i < n_pids; i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                uint32_t applied = 0, threads = 0;
                int r;

                r = call_for_pid(bus, "SetLatencyNice", pids[i], &(int32_t) { ln }, &error, &reply);
                if (r >= 0)
                        r = sd_bus_message_read(reply, "uu", &applied, &threads);
                if (r < 0) {
                        char what[48];

                        snprintf(what, sizeof(what), "PID %d: nothing applied", (int) pids[i]);
                        r = print_bus_error(what, &error, r);
                        if (rc == CTL_EXIT_OK)
                                rc = r;
                        continue;
                }
                if (ctl->json) {
                        if (shown)
                                putchar(',');
                        printf("{\"pid\":%d,\"latency_nice\":%d,\"threads_applied\":%" PRIu32 ",\"threads\":%" PRIu32
                               "}", (int) pids[i], ln, applied, threads);
                } else
                        printf("PID %d: latency nice %d on %" PRIu32 " of %" PRIu32 " thread%s (through latniced).\n",
                               (int) pids[i], ln, applied, threads, threads == 1 ? "" : "s");
                shown++;
        }
        polkit_agent_close(agent);
        if (ctl->json)
                printf("]\n");
        return rc;
}

/* ---- explain ------------------------------------------------------------ */

typedef struct BusRule {
        const char *kind, *name, *file;
        uint32_t line;
        int32_t value;
} BusRule;

static int read_rule(sd_bus_message *m, BusRule *r) {
        return sd_bus_message_read(m, "(sssui)", &r->kind, &r->name, &r->file, &r->line, &r->value);
}

static void print_bus_rule(const BusRule *r) {
        printf("[%s %s] %s:%" PRIu32, r->kind, r->name, r->file, r->line);
}

static void json_rule(const char *key, const BusRule *r) {
        json_key(key, false);
        if (isempty(r->kind)) {
                fputs("null", stdout);
                return;
        }
        putchar('{');
        json_kv_str("kind", r->kind, true);
        json_kv_str("name", r->name, false);
        json_kv_str("file", r->file, false);
        json_kv_int("line", r->line, false);
        json_kv_int("latency_nice", r->value, false);
        putchar('}');
}

static const char *dict_get(char **dict, const char *key) {
        for (char **i = dict; i && i[0] && i[1]; i += 2)
                if (strcmp(i[0], key) == 0)
                        return i[1];
        return "";
}

static int explain_online(Ctl *ctl, sd_bus *bus, pid_t pid) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(strv_freep) char **task = NULL, **because = NULL;
        BusRule rule = {}, unit_rule = {}, shadowed[64];
        size_t n_shadowed = 0;
        const char *how;
        int r;

        r = call_for_pid(bus, "Explain", pid, NULL, &error, &reply);
        if (r < 0) {
                char what[32];

                snprintf(what, sizeof(what), "PID %d", (int) pid);
                return print_bus_error(what, &error, r);
        }
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
                return print_bus_error("Bad reply", &error, r);

        if (ctl->json) {
                putchar('{');
                json_key("task", true);
                putchar('{');
                for (char **i = task; i && i[0] && i[1]; i += 2)
                        json_kv_str(i[0], i[1], i == task);
                putchar('}');
                json_kv_str("how", how, false);
                json_rule("rule", &rule);
                json_kv_strv("because", because, false);
                json_key("shadowed", false);
                putchar('[');
                for (size_t i = 0; i < n_shadowed; i++) {
                        if (i)
                                putchar(',');
                        putchar('{');
                        json_kv_str("kind", shadowed[i].kind, true);
                        json_kv_str("name", shadowed[i].name, false);
                        json_kv_str("file", shadowed[i].file, false);
                        json_kv_int("line", shadowed[i].line, false);
                        json_kv_int("latency_nice", shadowed[i].value, false);
                        putchar('}');
                }
                putchar(']');
                json_rule("unit_rule", &unit_rule);
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
        printf("(the rules latniced is running; --root=/ explains with the files on disk)\n");
        return CTL_EXIT_OK;
}

int verb_explain_online(Ctl *ctl, int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) char *why = NULL;
        pid_t pid = 0;
        int r;

        argc = strip_json(ctl, argc, argv);
        /* Only "explain PID" / "explain --pid=PID" / "-p PID" go to the daemon; descriptions,
         * --verbose and an explicit rule tree are the offline explain's job. */
        if (argc == 2 && parse_pid(argv[1], &pid) >= 0)
                ;
        else if (argc == 2 && strncmp(argv[1], "--pid=", 6) == 0 && parse_pid(argv[1] + 6, &pid) >= 0)
                ;
        else if (argc == 3 && (strcmp(argv[1], "--pid") == 0 || strcmp(argv[1], "-p") == 0) &&
                 parse_pid(argv[2], &pid) >= 0)
                ;
        else
                pid = 0;

        if (pid > 0 && !ctl_wants_offline(ctl) && daemon_connect(&bus, &why) >= 0)
                return explain_online(ctl, bus, pid);
        if (ctl->json) {
                fprintf(stderr, "--json needs latniced and a single PID for explain%s%s.\n", why ? ": " : "",
                        why ?: "");
                return CTL_EXIT_USAGE;
        }
        optind = 0;
        r = verb_explain(ctl, argc, argv);
        return r;
}

/* ---- run ---------------------------------------------------------------- */

int ctl_run_through_daemon(int ln, char **ret_why) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) char *why = NULL;
        uint32_t applied = 0, threads = 0;
        int r;

        *ret_why = NULL;
        if (daemon_connect(&bus, &why) < 0)
                return 0;
        /*
         * Set through latniced, which records it as an explicit value: its
         * rules leave it alone at the exec. Without a polkit prompt: where
         * latniced would ask for a password, we set the value ourselves.
         */
        (void) sd_bus_set_allow_interactive_authorization(bus, false);
        r = call_for_pid(bus, "SetLatencyNice", getpid(), &(int32_t) { ln }, &error, &reply);
        if (r < 0) {
                if (asprintf(ret_why, "%s", sd_bus_error_is_set(&error) ? error.message ?: error.name : strerror(-r)) < 0)
                        *ret_why = NULL;
                return r;
        }
        r = sd_bus_message_read(reply, "uu", &applied, &threads);
        if (r < 0 || applied == 0) {
                if (asprintf(ret_why, "%s", r < 0 ? "bad reply" : "it applied it to no thread") < 0)
                        *ret_why = NULL;
                return r < 0 ? r : -EBUSY;
        }
        return 1;
}
