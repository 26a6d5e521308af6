/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl: the command line, the table of verbs with their help, and
 * dispatch. Options stand before or after the verb, as with systemctl: one
 * getopt_long over all of argv, the first non-option is the verb. After
 * "--", and for run after COMMAND, nothing is an option any more, so a
 * command keeps its own options.
 */

#include <getopt.h>
#include <stdarg.h>

#include "ctl.h"
#include "latnice/uapi.h"
#include "profile.h"

/*
 * Every verb in the order of --help, with its help ("VERB --help", and after
 * a usage error): the texts of latnicectl(1)'s synopses, kept together.
 */
static const Verb verbs[] = {
        {
                "check", verb_check, "validate rule files, print file:line errors",
                "latnicectl check [--root=DIR] [FILE...]\n\n"
                "Validate rule files. Without FILE, checks what latniced would load:\n"
                "the drop-in directories and the active profile. Prints each problem\n"
                "as file:line: message, and warns about rules that work at a cost\n"
                "(every exec wakes latniced) or may not mean what they say.\n\n"
                "Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage error.\n",
                .min_args = 0, .max_args = VERB_ANY,
        },
        {
                "cat-config", verb_cat_config, "show the effective rule files in order",
                "latnicectl cat-config\n\n"
                "Print the rule files latniced reads, in the order that decides\n"
                "precedence (the first matching rule wins), each with its contents.\n"
                "Hidden and masked files are listed without contents.\n",
                .min_args = 0, .max_args = 0,
        },
        {
                "explain", verb_explain, "show which rule applies to a process and why",
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
                "3 no such process.\n",
                .min_args = 0, .max_args = 1,
        },
        {
                "run", verb_run, "run a command with a latency nice value",
                "latnicectl run -l N [--] COMMAND [ARGS...]\n\n"
                "Run COMMAND with latency nice N (-20 wake me up now .. 19 I can wait),\n"
                "like nice(1) or chrt(1): latnicectl sets its own value, then executes\n"
                "COMMAND, which keeps it (and its children and threads inherit it).\n\n"
                "  -l --latency-nice=N  the value, -20..19\n"
                "  -h --help            show this help\n\n"
                "Exit status: that of COMMAND; 2 usage error, 4 not supported by this\n"
                "kernel, 5 permission denied, 1 other failure before COMMAND ran,\n"
                "126 COMMAND could not be executed, 127 COMMAND not found.\n",
                .min_args = 1, .max_args = VERB_ANY, .missing = "Missing COMMAND.", .needs_latency_nice = true,
                .takes_command = true,
        },
        {
                "get", verb_get, "show the latency nice of every thread of processes",
                "latnicectl get PID... [--json]\n\n"
                "Show the latency nice of each process and of every thread: when\n"
                "latniced runs, its view, including which rule set the value (or that\n"
                "somebody else did); otherwise the kernel's view (thread id, name,\n"
                "policy, nice, latency nice, and the EEVDF slice where that is how the\n"
                "kernel expresses it).\n\n"
                "Exit status: 0 all shown, 2 usage error, 3 a process does not exist,\n"
                "1 other failure.\n",
                .min_args = 1, .max_args = VERB_ANY, .missing = "Missing PID.",
        },
        {
                "set", verb_set, "set latency nice on every thread of running processes",
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
                "that of the first one that failed; the others are still applied.\n",
                .min_args = 0, .max_args = VERB_ANY,
        },
        {
                "status", verb_status, "show what latniced does: backend, events, profile, errors",
                "latnicectl status [--json]\n\n"
                "Show what latniced is doing: the kernel backend and why, the event\n"
                "source, the active profile, the rule files in order, rule errors with\n"
                "file:line, and its counters. Needs latniced.\n",
                .min_args = 0, .max_args = 0,
        },
        {
                "stats", verb_stats, "measure what the scheduler does for each rule: wakeup latency, preemptions",
                "latnicectl stats [--for=DURATION] [--rule=NAME...] [--json]\n\n"
                "Let latniced measure for DURATION (1s..60s, default 10s) how long the\n"
                "processes of each rule wait from their wakeup until they run, and how\n"
                "often they are preempted, in the kernel, and draw each rule's log2\n"
                "histogram with p50/p90/p99 against everything else (the tasks latniced\n"
                "did not set). --rule shows only the rules named (repeat it). Needs\n"
                "latniced, and root or polkit (the active local user may).\n",
                .min_args = 0, .max_args = 0,
        },
        {
                "list", verb_list, "list the processes latniced gave a value",
                "latnicectl list [--json]\n\n"
                "List the processes latniced gave a value: PID, name, latency nice and\n"
                "the rule that decided it (\"manual\" for values set through 'set').\n"
                "Needs latniced.\n",
                .min_args = 0, .max_args = 0,
        },
        {
                "rules", verb_rules, "list the rules latniced is running",
                "latnicectl rules [--json]\n\n"
                "List the rules latniced is running, in the order they are tried.\n"
                "('latnicectl cat-config' shows the files on disk.) Needs latniced.\n",
                .min_args = 0, .max_args = 0,
        },
        {
                "reload", verb_reload, "make latniced reload its rules",
                "latnicectl reload [--json]\n\n"
                "Ask latniced to reload latniced.conf, the profile and the rules. A\n"
                "reload whose rules have new errors keeps the rules that were running.\n"
                "Needs root or the polkit action org.latnice1.reload.\n",
                .min_args = 0, .max_args = 0,
        },
        {
                "profile", verb_profile, "list profiles, or switch latniced to one",
                "latnicectl profile [NAME] [--json]\n\n"
                "Without NAME, list the profiles and mark the active one. With NAME,\n"
                "switch latniced to that profile now (until the next restart; set\n"
                "Profile= in latniced.conf to keep it). Switching needs root or the\n"
                "polkit action org.latnice1.set-profile.\n",
                .min_args = 0, .max_args = 1,
        },
        {
                "import-ananicy", verb_import_ananicy, "turn an ananicy rule tree into a latnice.d file",
                "latnicectl import-ananicy [--out=FILE] [DIR...]\n\n"
                "Read the ananicy / ananicy-cpp rule tree in DIR (default /etc/ananicy.d):\n"
                "*.rules, *.types and *.cgroups files, one JSON object a line, '#'\n"
                "comments. Write one latnice.d file (to FILE, or standard output): a rule\n"
                "per type listing its programs, and one per program that sets its own\n"
                "value. Latency nice comes from latency_nice, else nice, else sched\n"
                "(idle 19, batch 10, fifo/rr/iso -15); ioclass, ionice, oom_score_adj,\n"
                "cgroup and rtprio are not imported. Problems are printed as file:line.\n\n"
                "Exit status: 0 written, 1 written but lines were broken or types unknown,\n"
                "or nothing written (an I/O error), 2 usage error.\n",
                .min_args = 0, .max_args = VERB_ANY,
        },
};

static void help(void) {
        printf("latnicectl [OPTIONS...] COMMAND [ARGS...]\n\n"
               "Inspect and steer latency nice, the scheduler hint that decides\n"
               "when a task runs rather than how much CPU it gets.\n\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-12s %s\n", verbs[i].name, verbs[i].summary);
        printf("\nOptions:\n"
               "  -h --help            show this help (also: COMMAND --help)\n"
               "     --version         show the version\n"
               "     --root=DIR        read rules below DIR instead of /\n"
               "     --profile=NAME    use this profile instead of latniced.conf's\n"
               "     --no-profile      use no profile, only the drop-in rules\n"
               "     --profile-dir=DIR look for profiles in DIR first\n"
               "     --json            machine-readable output (JSON)\n"
               "Options may stand before or after COMMAND.\n"
               "\nExit status:\n"
               "  0 success, 1 failure (or errors found by check), 2 usage error,\n"
               "  3 no such process, 4 not supported here, 5 permission denied\n");
}

static const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(verbs[i].name, name) == 0)
                        return &verbs[i];
        return NULL;
}

int ctl_usage_error(const Ctl *ctl, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\n%s", ctl->verb->usage);
        return CTL_EXIT_USAGE;
}

static int parse_pid_arg(const char *s, pid_t *ret) {
        if (parse_pid(s, ret) < 0) {
                fprintf(stderr, "Invalid PID '%s': must be a positive integer.\n", s);
                return -EINVAL;
        }
        return 0;
}

int ctl_parse_pids(const Ctl *ctl, int start, pid_t **ret, int *ret_n) {
        _cleanup_(freep) pid_t *pids = calloc(strv_length(ctl->pid_args) + (size_t) ctl->n_args + 1, sizeof(pid_t));
        int n = 0;

        if (!pids)
                return -ENOMEM;
        for (char **a = ctl->pid_args; a && *a; a++)
                if (parse_pid_arg(*a, &pids[n++]) < 0)
                        return -EINVAL;
        for (int i = start; i < ctl->n_args; i++)
                if (parse_pid_arg(ctl->args[i], &pids[n++]) < 0)
                        return -EINVAL;
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

/* Where an option's value goes in Ctl. */
typedef enum OptionKind {
        OPTION_STRING, /* const char *: the last one given */
        OPTION_FLAG,   /* bool */
        OPTION_LIST,   /* char **: each one given, in order */
} OptionKind;

/* Every option of every verb; getopt_long()'s table is made from it. */
static const struct {
        const char *name;
        char short_name;
        bool has_arg;
        const char *verbs; /* the verbs that take it; NULL: every verb */
        OptionKind kind;
        size_t offset;
} ctl_options[] = {
        { "help", 'h', false, NULL, OPTION_FLAG, offsetof(Ctl, help) },
        { "version", 0, false, NULL, OPTION_FLAG, offsetof(Ctl, version) },
        { "root", 0, true, NULL, OPTION_STRING, offsetof(Ctl, tree.root) },
        { "profile", 0, true, NULL, OPTION_STRING, offsetof(Ctl, tree.profile) },
        { "no-profile", 0, false, NULL, OPTION_FLAG, offsetof(Ctl, tree.no_profile) },
        { "profile-dir", 0, true, NULL, OPTION_STRING, offsetof(Ctl, tree.profile_dir) },
        { "json", 0, false, NULL, OPTION_FLAG, offsetof(Ctl, json) },
        { "latency-nice", 'l', true, "run set", OPTION_STRING, offsetof(Ctl, latency_nice_arg) },
        { "pid", 'p', true, "set explain", OPTION_LIST, offsetof(Ctl, pid_args) },
        { "verbose", 'v', false, "explain", OPTION_FLAG, offsetof(Ctl, verbose) },
        { "comm", 0, true, "explain", OPTION_STRING, offsetof(Ctl, comm) },
        { "exe", 0, true, "explain", OPTION_STRING, offsetof(Ctl, exe) },
        { "cmdline", 0, true, "explain", OPTION_LIST, offsetof(Ctl, cmdline) },
        { "parent", 0, true, "explain", OPTION_STRING, offsetof(Ctl, parent) },
        { "user", 0, true, "explain", OPTION_STRING, offsetof(Ctl, user) },
        { "group", 0, true, "explain", OPTION_STRING, offsetof(Ctl, group) },
        { "cgroup", 0, true, "explain", OPTION_STRING, offsetof(Ctl, cgroup) },
        { "out", 'o', true, "import-ananicy", OPTION_STRING, offsetof(Ctl, out) },
        { "for", 0, true, "stats", OPTION_STRING, offsetof(Ctl, for_arg) },
        { "rule", 0, true, "stats", OPTION_LIST, offsetof(Ctl, rules) },
};

/* getopt_long() returns the short name, or OPTION_VAL + index for a long-only option. */
#define OPTION_VAL 0x100

static bool word_in(const char *word, const char *list) {
        size_t l = strlen(word);

        for (const char *p = list; (p = strstr(p, word)); p += l)
                if ((p == list || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0'))
                        return true;
        return false;
}

typedef struct Parsed {
        /* Each option as first spelt; the verb's are checked once it is known (it may follow them). */
        const char *given[ELEMENTSOF(ctl_options)];
        bool bad_option;
} Parsed;

static int parse_option(Ctl *ctl, Parsed *p, int c, const char *arg) {
        size_t i = c - OPTION_VAL;
        void *field;

        if (c < OPTION_VAL)
                for (i = 0; i < ELEMENTSOF(ctl_options) && ctl_options[i].short_name != c; i++)
                        ;
        if (i >= ELEMENTSOF(ctl_options)) {
                /* getopt_long() said what; go on to learn the verb, for its usage. */
                p->bad_option = true;
                return 0;
        }
        if (!p->given[i])
                p->given[i] = arg;
        field = (uint8_t *) ctl + ctl_options[i].offset;
        switch (ctl_options[i].kind) {
        case OPTION_STRING:
                *(const char **) field = optarg;
                return 0;
        case OPTION_FLAG:
                *(bool *) field = true;
                return 0;
        case OPTION_LIST:
                return strv_extend((char ***) field, optarg);
        }
        return 0;
}

/*
 * getopt_long() in '+' mode stops at each non-option; we take it (the verb,
 * or an argument of the verb) and go on. "--" ends the options, and so does
 * the verb's first argument for run, whose argument is a command line.
 */
static int parse_argv(int argc, char **argv, Ctl *ctl, Parsed *p) {
        struct option options[ELEMENTSOF(ctl_options) + 1] = {};
        char shorts[2 * ELEMENTSOF(ctl_options) + 2] = "+";
        bool options_end = false;
        int c, r;

        for (size_t i = 0, k = 1; i < ELEMENTSOF(ctl_options); i++) {
                options[i] = (struct option) {
                        ctl_options[i].name,
                        ctl_options[i].has_arg ? required_argument : no_argument,
                        NULL,
                        ctl_options[i].short_name ?: (int) (OPTION_VAL + i),
                };
                if (ctl_options[i].short_name) {
                        shorts[k++] = ctl_options[i].short_name;
                        if (ctl_options[i].has_arg)
                                shorts[k++] = ':';
                }
        }
        optind = 0;
        ctl->args = calloc((size_t) argc + 1, sizeof(char *));
        if (!ctl->args)
                return -ENOMEM;
        for (int i = 1; i < argc;) {
                const char *a = argv[i];

                if (!options_end && strcmp(a, "--") == 0) {
                        options_end = true;
                        i++;
                        continue;
                }
                if (options_end || a[0] != '-' || a[1] == '\0') {
                        if (!ctl->verb) {
                                ctl->verb = verb_find(a);
                                if (!ctl->verb) {
                                        fprintf(stderr, "Unknown command '%s'. See 'latnicectl --help'.\n", a);
                                        return -EINVAL;
                                }
                        } else {
                                ctl->args[ctl->n_args++] = argv[i];
                                if (ctl->verb->takes_command)
                                        options_end = true;
                        }
                        i++;
                        continue;
                }
                /* getopt_long() resumes at optind; a cluster like "-vp1" is one argv element. */
                optind = i;
                c = getopt_long(argc, argv, shorts, options, NULL);
                if (c < 0)
                        break;
                r = parse_option(ctl, p, c, argv[i]);
                if (r < 0)
                        return r;
                i = optind;
        }
        return 0;
}

static void ctl_done(Ctl *ctl) {
        free(ctl->args);
        strv_free(ctl->pid_args);
        strv_free(ctl->cmdline);
        strv_free(ctl->rules);
}

int main(int argc, char **argv) {
        _cleanup_(ctl_done) Ctl ctl = {};
        Parsed p = {};
        int r;

        r = parse_argv(argc, argv, &ctl, &p);
        if (r < 0)
                return r == -ENOMEM ? CTL_EXIT_FAILURE : CTL_EXIT_USAGE;
        if (ctl.version) {
                printf("latnicectl %s\n", LATNICE_VERSION);
                return CTL_EXIT_OK;
        }
        if (ctl.help) {
                if (ctl.verb)
                        fputs(ctl.verb->usage, stdout);
                else
                        help();
                return CTL_EXIT_OK;
        }
        if (!ctl.verb) {
                if (p.bad_option)
                        return CTL_EXIT_USAGE;
                help();
                return CTL_EXIT_USAGE;
        }
        if (p.bad_option) {
                fputs(ctl.verb->usage, stderr);
                return CTL_EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(ctl_options); i++)
                if (p.given[i] && ctl_options[i].verbs && !word_in(ctl.verb->name, ctl_options[i].verbs))
                        return ctl_usage_error(&ctl, "Unexpected option '%s': %s does not take it.", p.given[i],
                                               ctl.verb->name);
        if (ctl.tree.profile && !profile_name_valid(ctl.tree.profile)) {
                fprintf(stderr, "Invalid profile name '%s'.\n", ctl.tree.profile);
                return CTL_EXIT_USAGE;
        }
        if (ctl.latency_nice_arg) {
                if (safe_atoi(ctl.latency_nice_arg, &ctl.latency_nice) < 0 || ctl.latency_nice < LATNICE_MIN ||
                    ctl.latency_nice > LATNICE_MAX) {
                        fprintf(stderr, "Invalid latency nice '%s': must be an integer in %d..%d.\n",
                                ctl.latency_nice_arg, LATNICE_MIN, LATNICE_MAX);
                        return CTL_EXIT_USAGE;
                }
                ctl.have_latency_nice = true;
        }
        if (ctl.verb->needs_latency_nice && !ctl.latency_nice_arg)
                return ctl_usage_error(&ctl, "Missing -l N.");
        if (ctl.n_args < ctl.verb->min_args)
                return ctl_usage_error(&ctl, "%s", ctl.verb->missing);
        if (ctl.verb->max_args != VERB_ANY && ctl.n_args > ctl.verb->max_args)
                return ctl_usage_error(&ctl, "Unexpected argument '%s'.", ctl.args[ctl.verb->max_args]);
        return ctl.verb->run(&ctl);
}
