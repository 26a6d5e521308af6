/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl: the command line and verb dispatch. Options stand before or
 * after the verb, as with systemctl: one getopt_long over all of argv, the
 * first non-option is the verb. After "--", and for run after COMMAND,
 * nothing is an option any more, so a command keeps its own options.
 */

#include <getopt.h>
#include <stdarg.h>

#include "ctl.h"
#include "latnice/uapi.h"
#include "profile.h"

static const Verb *const verbs[] = {
        &verb_check, &verb_cat_config, &verb_explain, &verb_run, &verb_get, &verb_set,
        &verb_status, &verb_list, &verb_rules, &verb_reload, &verb_profile,
};

static void help(void) {
        printf("latnicectl [OPTIONS...] COMMAND [ARGS...]\n\n"
               "Inspect and steer latency nice, the scheduler hint that decides\n"
               "when a task runs rather than how much CPU it gets.\n\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-12s %s\n", verbs[i]->name, verbs[i]->summary);
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
                if (strcmp(verbs[i]->name, name) == 0)
                        return verbs[i];
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

enum {
        ARG_VERSION = 0x100,
        ARG_ROOT,
        ARG_PROFILE,
        ARG_NO_PROFILE,
        ARG_PROFILE_DIR,
        ARG_JSON,
        ARG_PID,
        ARG_COMM,
        ARG_EXE,
        ARG_CMDLINE,
        ARG_PARENT,
        ARG_USER,
        ARG_GROUP,
        ARG_CGROUP,
};

static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        { "root", required_argument, NULL, ARG_ROOT },
        { "profile", required_argument, NULL, ARG_PROFILE },
        { "no-profile", no_argument, NULL, ARG_NO_PROFILE },
        { "profile-dir", required_argument, NULL, ARG_PROFILE_DIR },
        { "json", no_argument, NULL, ARG_JSON },
        { "latency-nice", required_argument, NULL, 'l' },
        { "pid", required_argument, NULL, 'p' },
        { "verbose", no_argument, NULL, 'v' },
        { "comm", required_argument, NULL, ARG_COMM },
        { "exe", required_argument, NULL, ARG_EXE },
        { "cmdline", required_argument, NULL, ARG_CMDLINE },
        { "parent", required_argument, NULL, ARG_PARENT },
        { "user", required_argument, NULL, ARG_USER },
        { "group", required_argument, NULL, ARG_GROUP },
        { "cgroup", required_argument, NULL, ARG_CGROUP },
        {}
};

/* The verbs an option is for; the others refuse it (global options are for all). */
static const char *option_verbs(int c) {
        switch (c) {
        case 'l':
                return "run set";
        case 'p':
                return "set explain";
        case 'v':
        case ARG_COMM:
        case ARG_EXE:
        case ARG_CMDLINE:
        case ARG_PARENT:
        case ARG_USER:
        case ARG_GROUP:
        case ARG_CGROUP:
                return "explain";
        default:
                return NULL;
        }
}

static bool word_in(const char *word, const char *list) {
        size_t l = strlen(word);

        for (const char *p = list; (p = strstr(p, word)); p += l)
                if ((p == list || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0'))
                        return true;
        return false;
}

typedef struct Parsed {
        const char *latency_nice_arg;
        /* The verbs' options as given, checked once the verb is known (it may follow them). */
        struct {
                const char *arg, *verbs;
        } verb_options[ELEMENTSOF(options)];
        size_t n_verb_options;
        bool help, version, bad_option;
} Parsed;

static int parse_option(Ctl *ctl, Parsed *p, int c, const char *arg) {
        const char *for_verbs = option_verbs(c);

        if (for_verbs && p->n_verb_options < ELEMENTSOF(p->verb_options)) {
                p->verb_options[p->n_verb_options].arg = arg;
                p->verb_options[p->n_verb_options++].verbs = for_verbs;
        }
        switch (c) {
        case 'h':
                p->help = true;
                break;
        case ARG_VERSION:
                p->version = true;
                break;
        case ARG_ROOT:
                ctl->root = optarg;
                break;
        case ARG_PROFILE:
                if (!profile_name_valid(optarg)) {
                        fprintf(stderr, "Invalid profile name '%s'.\n", optarg);
                        return -EINVAL;
                }
                ctl->profile = optarg;
                break;
        case ARG_NO_PROFILE:
                ctl->no_profile = true;
                break;
        case ARG_PROFILE_DIR:
                ctl->profile_dir = optarg;
                break;
        case ARG_JSON:
                ctl->json = true;
                break;
        case 'l':
                p->latency_nice_arg = optarg;
                break;
        case 'p':
                return strv_extend(&ctl->pid_args, optarg);
        case 'v':
                ctl->verbose = true;
                break;
        case ARG_COMM:
                ctl->comm = optarg;
                break;
        case ARG_EXE:
                ctl->exe = optarg;
                break;
        case ARG_CMDLINE:
                return strv_extend(&ctl->cmdline, optarg);
        case ARG_PARENT:
                ctl->parent = optarg;
                break;
        case ARG_USER:
                ctl->user = optarg;
                break;
        case ARG_GROUP:
                ctl->group = optarg;
                break;
        case ARG_CGROUP:
                ctl->cgroup = optarg;
                break;
        default:
                /* getopt_long() said what; go on to learn the verb, for its usage. */
                p->bad_option = true;
        }
        return 0;
}

/*
 * getopt_long() in '+' mode stops at each non-option; we take it (the verb,
 * or an argument of the verb) and go on. "--" ends the options, and so does
 * the verb's first argument for run, whose argument is a command line.
 */
static int parse_argv(int argc, char **argv, Ctl *ctl, Parsed *p) {
        bool options_end = false;
        int c, r;

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
                                if (ctl->verb == &verb_run)
                                        options_end = true;
                        }
                        i++;
                        continue;
                }
                /* getopt_long() resumes at optind; a cluster like "-vp1" is one argv element. */
                optind = i;
                c = getopt_long(argc, argv, "+hl:p:v", options, NULL);
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
}

int main(int argc, char **argv) {
        _cleanup_(ctl_done) Ctl ctl = {};
        Parsed p = {};
        int r;

        r = parse_argv(argc, argv, &ctl, &p);
        if (r < 0)
                return r == -ENOMEM ? CTL_EXIT_FAILURE : CTL_EXIT_USAGE;
        if (p.version) {
                printf("latnicectl %s\n", LATNICE_VERSION);
                return CTL_EXIT_OK;
        }
        if (p.help) {
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
        for (size_t i = 0; i < p.n_verb_options; i++)
                if (!word_in(ctl.verb->name, p.verb_options[i].verbs))
                        return ctl_usage_error(&ctl, "Unexpected option '%s': %s does not take it.",
                                               p.verb_options[i].arg, ctl.verb->name);
        if (p.latency_nice_arg) {
                if (safe_atoi(p.latency_nice_arg, &ctl.latency_nice) < 0 || ctl.latency_nice < LATNICE_MIN ||
                    ctl.latency_nice > LATNICE_MAX) {
                        fprintf(stderr, "Invalid latency nice '%s': must be an integer in %d..%d.\n",
                                p.latency_nice_arg, LATNICE_MIN, LATNICE_MAX);
                        return CTL_EXIT_USAGE;
                }
                ctl.have_latency_nice = true;
        }
        return ctl.verb->run(&ctl);
}
