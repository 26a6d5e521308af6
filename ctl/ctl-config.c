/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Offline verbs: check, cat-config, explain. They need no daemon. */

#include <ctype.h>
#include <fcntl.h>
#include <getopt.h>

#include "ctl.h"
#include "filter.h"
#include "match.h"
#include "proc.h"
#include "util.h"

static void print_errors(const RuleSet *s) {
        for (size_t i = 0; i < s->n_errors; i++) {
                char buf[1024];

                rule_error_format(&s->errors[i], buf, sizeof(buf));
                fprintf(stderr, "%s\n", buf);
        }
}

/*
 * "Foo[Steam].exe" in a rule set copied from elsewhere is usually a file
 * name, but as a glob "[Steam]" matches one letter. A bracket of three or
 * more letters and nothing else is worth a word.
 */
static const char *letter_class(const char *v) {
        for (const char *p = v; *p; p++) {
                const char *q;

                if (*p == '\\' && p[1]) {
                        p++;
                        continue;
                }
                if (*p != '[')
                        continue;
                for (q = p + 1; isalpha((unsigned char) *q); q++)
                        ;
                if (*q == ']' && q - p > 3)
                        return p;
        }
        return NULL;
}

/* Warnings: the rule loads and works, at a cost or with a meaning the author may not have meant. */
static size_t print_warnings(const RuleSet *s) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_rules; i++) {
                const Rule *r = &s->rules[i];

                if (r->kind != RULE_PROCESS)
                        continue;
                if (!filter_rule_checkable(r)) {
                        fprintf(stderr,
                                "%s:%u: warning: [Process %s] has nothing the kernel can check, so every exec on the "
                                "machine wakes latniced to match it (a wakeup and a few microseconds per exec, about "
                                "10 times the daemon's CPU); give it Comm=, Exe= (a file name), Parent=, User=, Group= "
                                "or Unit=, or globs with a literal start (\"game*\", not \"*game\").\n",
                                r->file, r->line, r->name);
                        n++;
                }
                for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++)
                        for (char **v = rule_match(r, k); v && *v; v++) {
                                const char *b = letter_class(*v);

                                if (!b)
                                        continue;
                                fprintf(stderr,
                                        "%s:%u: warning: %s=%s is a glob in which %.*s matches one letter; if it is "
                                        "part of the name, write %.*s\\%s\n",
                                        r->file, r->line, match_key_to_string(k), *v,
                                        (int) (strchr(b, ']') - b + 1), b, (int) (b - *v), *v, b);
                                n++;
                        }
        }
        return n;
}

int verb_check(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl check [--root=DIR] [FILE...]\n\n"
                "Validate rule files. Without FILE, checks what latniced would load:\n"
                "the drop-in directories and the active profile. Prints each problem\n"
                "as file:line: message, and warns about rules that work at a cost\n"
                "(every exec wakes latniced) or may not mean what they say.\n\n"
                "Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage error.\n";
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        size_t active = 0, warnings;
        int r;

        if (ctl_want_help(argc, argv, usage))
                return CTL_EXIT_OK;
        for (int i = 1; i < argc; i++)
                if (argv[i][0] == '-' && strcmp(argv[i], "--") != 0) {
                        fprintf(stderr, "Unknown option '%s'.\n%s", argv[i], usage);
                        return CTL_EXIT_USAGE;
                }

        if (argc > 1) {
                char **files = argv + 1;

                if (strcmp(files[0], "--") == 0)
                        files++;
                r = rule_set_load_files(files, &s);
        } else
                r = ctl_load_rules(ctl, &s);
        if (r < 0) {
                fprintf(stderr, "Failed to load rules: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        print_errors(s);
        warnings = print_warnings(s);
        for (size_t i = 0; i < s->n_files; i++)
                if (s->files[i].state == CONF_FILE_ACTIVE)
                        active++;
        printf("%zu rule%s from %zu file%s, %zu error%s, %zu warning%s.\n",
               s->n_rules, s->n_rules == 1 ? "" : "s",
               active, active == 1 ? "" : "s",
               s->n_errors, s->n_errors == 1 ? "" : "s",
               warnings, warnings == 1 ? "" : "s");
        return s->n_errors > 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}

int verb_cat_config(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl cat-config\n\n"
                "Print the rule files latniced reads, in the order that decides\n"
                "precedence (the first matching rule wins), each with its contents.\n"
                "Hidden and masked files are listed without contents.\n";
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        int r;

        if (ctl_want_help(argc, argv, usage))
                return CTL_EXIT_OK;
        if (argc > 1) {
                fprintf(stderr, "cat-config takes no arguments.\n%s", usage);
                return CTL_EXIT_USAGE;
        }
        r = ctl_load_rules(ctl, &s);
        if (r < 0) {
                fprintf(stderr, "Failed to load rules: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        if (s->n_files == 0)
                printf("# no rule files in %s, %s or %s\n", rule_dirs[0], rule_dirs[1], rule_dirs[2]);
        for (size_t i = 0; i < s->n_files; i++) {
                const ConfFile *f = &s->files[i];
                _cleanup_(freep) char *buf = NULL;

                if (i > 0)
                        putchar('\n');
                switch (f->state) {
                case CONF_FILE_HIDDEN:
                        printf("# %s (hidden by %s)\n", f->shown, f->hidden_by);
                        continue;
                case CONF_FILE_MASKED:
                        printf("# %s (masked)\n", f->shown);
                        continue;
                case CONF_FILE_BROKEN:
                        printf("# %s (not readable as a rule file, see 'latnicectl check')\n", f->shown);
                        continue;
                case CONF_FILE_ACTIVE:
                        break;
                }
                if (f->profile)
                        printf("# %s (profile %s)\n", f->shown, s->profile);
                else
                        printf("# %s\n", f->shown);
                r = read_full_file(AT_FDCWD, f->path, RULE_FILE_MAX_SIZE, &buf, NULL);
                if (r < 0) {
                        printf("# (cannot read: %s)\n", strerror(-r));
                        continue;
                }
                fputs(buf, stdout);
                if (*buf && buf[strlen(buf) - 1] != '\n')
                        putchar('\n');
        }
        print_errors(s);
        return CTL_EXIT_OK;
}

static void print_rule_ref(const Rule *r) {
        char ref[512];

        rule_format_ref(r, ref, sizeof(ref));
        fputs(ref, stdout);
}

static void print_key_values(const Rule *r, MatchKey k) {
        printf("%s=", match_key_to_string(k));
        for (char **v = rule_match(r, k); v && *v; v++)
                printf("%s%s", v == rule_match(r, k) ? "" : " ", *v);
}

static void print_task(const TaskInfo *t) {
        if (t->pid > 0)
                printf("Process %d\n", (int) t->pid);
        else
                printf("Process (described on the command line)\n");
        printf("  comm:    %s\n", t->comm ?: "-");
        printf("  exe:     %s\n", t->exe ?: "-");
        if (t->argv) {
                _cleanup_(freep) char *j = strv_join(t->argv, " ");
                printf("  cmdline: %s\n", j ?: "-");
        } else
                printf("  cmdline: -\n");
        printf("  parent:  %s\n", t->parent_comm ?: "-");
        if (t->pid > 0) {
                printf("  user:    %s (%u)\n", t->user ?: "?", (unsigned) t->uid);
                printf("  group:   %s (%u)\n", t->group ?: "?", (unsigned) t->gid);
        } else {
                printf("  user:    %s\n", t->user ?: "-");
                printf("  group:   %s\n", t->group ?: "-");
        }
        printf("  cgroup:  %s\n", t->cgroup ?: "-");
}

static int explain_task(Ctl *ctl, const TaskInfo *t, bool verbose) {
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        _cleanup_(freep) char *unit = NULL;
        MatchResult m = {};
        const Rule *ur = NULL;
        int r;

        r = ctl_load_rules(ctl, &s);
        if (r < 0) {
                fprintf(stderr, "Failed to load rules: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        if (s->n_errors > 0)
                fprintf(stderr, "Warning: %zu rule error%s, see 'latnicectl check'; explaining with the rules that loaded.\n",
                        s->n_errors, s->n_errors == 1 ? "" : "s");

        print_task(t);
        putchar('\n');

        r = match_task(s, t, true, &m);
        if (r < 0) {
                fprintf(stderr, "Out of memory.\n");
                return CTL_EXIT_FAILURE;
        }
        if (m.rule) {
                printf("Matched:  ");
                print_rule_ref(m.rule);
                printf(" -> LatencyNice=%d%s\n", m.rule->latency_nice, m.rule->override ? " (Override=yes)" : "");
                printf("  because");
                for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++) {
                        if (!rule_match(m.rule, k))
                                continue;
                        printf(" %s=%s", match_key_to_string(k), match_key_matched(m.rule, k, t));
                }
                printf(" matched\n");
        } else {
                /* Without a process rule, a unit rule gives its value per task (on kernels without a cgroup knob). */
                ur = match_task_unit_rule(s, t);
                if (ur) {
                        printf("Matched:  ");
                        print_rule_ref(ur);
                        printf(" -> LatencyNice=%d, through the unit the process runs in\n", ur->latency_nice);
                } else
                        printf("Matched:  no rule; latniced leaves this process alone\n");
        }
        for (size_t i = 0; i < m.n_shadowed; i++) {
                printf("Shadowed: ");
                print_rule_ref(m.shadowed[i]);
                printf(" -> LatencyNice=%d (an earlier rule wins)\n", m.shadowed[i]->latency_nice);
        }
        if (m.rule && (ur = match_task_unit_rule(s, t))) {
                printf("Unit:     ");
                print_rule_ref(ur);
                printf(" -> LatencyNice=%d for the unit; the process rule decides this process\n", ur->latency_nice);
        }
        if (verbose)
                for (size_t i = 0; i < s->n_rules; i++) {
                        const Rule *q = &s->rules[i];
                        MatchKey failed = 0;

                        if (q->kind != RULE_PROCESS || match_rule(q, t, &failed))
                                continue;
                        printf("No match: ");
                        print_rule_ref(q);
                        printf(": ");
                        print_key_values(q, failed);
                        printf(" did not match\n");
                }
        unit = cgroup_path_unit(t->cgroup);
        if (unit)
                printf("Unit of the process: %s\n", unit);
        match_result_done(&m);
        return CTL_EXIT_OK;
}

int verb_explain(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl explain --pid=PID [--verbose]\n"
                "latnicectl explain [--comm=NAME] [--exe=PATH] [--cmdline=WORD...] [--parent=NAME]\n"
                "                   [--user=NAME] [--group=NAME] [--cgroup=PATH] [--verbose]\n\n"
                "Show which rule gives a process its latency nice and why, and which\n"
                "later rules it shadows. --pid reads the process from /proc; the other\n"
                "options describe a process that need not exist. --cmdline may repeat.\n"
                "--verbose also shows why each other rule did not match.\n\n"
                "Exit status: 0 explained, 1 rules could not be loaded, 2 usage error,\n"
                "3 no such process.\n";
        enum { ARG_PID = 0x100, ARG_COMM, ARG_EXE, ARG_CMDLINE, ARG_PARENT, ARG_USER, ARG_GROUP, ARG_CGROUP };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "verbose", no_argument, NULL, 'v' },
                { "pid", required_argument, NULL, ARG_PID },
                { "comm", required_argument, NULL, ARG_COMM },
                { "exe", required_argument, NULL, ARG_EXE },
                { "cmdline", required_argument, NULL, ARG_CMDLINE },
                { "parent", required_argument, NULL, ARG_PARENT },
                { "user", required_argument, NULL, ARG_USER },
                { "group", required_argument, NULL, ARG_GROUP },
                { "cgroup", required_argument, NULL, ARG_CGROUP },
                {}
        };
        _cleanup_(strv_freep) char **cmdline = NULL;
        TaskInfo t = { .uid = (uid_t) -1, .gid = (gid_t) -1 };
        unsigned id;
        pid_t pid = 0;
        bool verbose = false, described = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "hvp:", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        fputs(usage, stdout);
                        return CTL_EXIT_OK;
                case 'v':
                        verbose = true;
                        break;
                case 'p':
                case ARG_PID:
                        if (parse_pid(optarg, &pid) < 0) {
                                fprintf(stderr, "Invalid pid '%s': expected a positive number.\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        break;
                case ARG_COMM:
                        t.comm = optarg;
                        described = true;
                        break;
                case ARG_EXE:
                        t.exe = optarg;
                        described = true;
                        break;
                case ARG_CMDLINE:
                        if (strv_extend(&cmdline, optarg) < 0)
                                return CTL_EXIT_FAILURE;
                        described = true;
                        break;
                case ARG_PARENT:
                        t.parent_comm = optarg;
                        described = true;
                        break;
                case ARG_USER:
                        if (sscanf(optarg, "%u", &id) == 1 && strspn(optarg, "0123456789") == strlen(optarg))
                                t.uid = id;
                        else
                                t.user = optarg;
                        described = true;
                        break;
                case ARG_GROUP:
                        if (sscanf(optarg, "%u", &id) == 1 && strspn(optarg, "0123456789") == strlen(optarg))
                                t.gid = id;
                        else
                                t.group = optarg;
                        described = true;
                        break;
                case ARG_CGROUP:
                        t.cgroup = optarg;
                        described = true;
                        break;
                default:
                        return CTL_EXIT_USAGE;
                }
        }
        if (optind < argc) {
                /* "explain 1234" is what people type: accept a bare pid. */
                if (optind + 1 == argc && pid == 0 && parse_pid(argv[optind], &pid) >= 0)
                        optind++;
                else {
                        fprintf(stderr, "Unexpected argument '%s'.\n%s", argv[optind], usage);
                        return CTL_EXIT_USAGE;
                }
        }
        if ((pid > 0) == described) {
                fprintf(stderr, "Give either --pid=PID or a description (--comm=, --exe=, ...), not %s.\n%s",
                        described ? "both" : "neither", usage);
                return CTL_EXIT_USAGE;
        }

        if (pid > 0) {
                _cleanup_(closep) int proc_fd = -1;
                ProcTask p = {};

                proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (proc_fd < 0) {
                        fprintf(stderr, "Cannot open /proc: %s\n", strerror(errno));
                        return CTL_EXIT_FAILURE;
                }
                r = proc_task_read(proc_fd, pid, PROC_ALL, &p);
                if (r == -ESRCH) {
                        fprintf(stderr, "No process with pid %d.\n", (int) pid);
                        return CTL_EXIT_NO_PROCESS;
                }
                if (r < 0) {
                        fprintf(stderr, "Cannot read process %d: %s\n", (int) pid, strerror(-r));
                        return r == -EACCES || r == -EPERM ? CTL_EXIT_PERMISSION : CTL_EXIT_FAILURE;
                }
                if (p.stat.flags & PROC_PF_KTHREAD)
                        printf("Note: %d is a kernel thread; latniced never changes kernel threads.\n", (int) pid);
                proc_task_to_info(&p, &t);
                r = explain_task(ctl, &t, verbose);
                proc_task_done(&p);
                return r;
        }
        t.argv = cmdline;
        return explain_task(ctl, &t, verbose);
}
