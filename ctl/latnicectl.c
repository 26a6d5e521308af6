/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latnicectl: command line, global options and verb dispatch. */

#include <getopt.h>

#include "ctl-bus.h"
#include "ctl.h"
#include "profile.h"
#include "util.h"

static const Verb verbs[] = {
        { "check", verb_check, "validate rule files, print file:line errors" },
        { "cat-config", verb_cat_config, "show the effective rule files in order" },
        { "explain", verb_explain_online, "show which rule applies to a process and why" },
        { "run", verb_run, "run a command with a latency nice value" },
        { "get", verb_get_online, "show the latency nice of every thread of processes" },
        { "set", verb_set_online, "set latency nice on every thread of running processes" },
        { "status", verb_status, "show what latniced does: backend, events, profile, errors" },
        { "list", verb_list, "list the processes latniced gave a value" },
        { "rules", verb_rules, "list the rules latniced is running" },
        { "reload", verb_reload, "make latniced reload its rules" },
        { "profile", verb_profile, "list profiles, or switch latniced to one" },
        { "import-ananicy", verb_import_ananicy, "turn an ananicy rule tree into a latnice.d file" },
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
               "\nExit status:\n"
               "  0 success, 1 failure (or errors found by check), 2 usage error,\n"
               "  3 no such process, 4 not supported here, 5 permission denied\n");
}

int ctl_resolve_profile(Ctl *ctl, char **ret_name, char **ret_path) {
        _cleanup_(freep) char *conf_path = NULL, *name = NULL;
        DaemonConfig dc = {};
        int r;

        *ret_name = *ret_path = NULL;
        if (ctl->no_profile)
                return 0;
        if (ctl->profile)
                name = strdup(ctl->profile);
        else {
                conf_path = path_join(ctl->root, LATNICE_DAEMON_CONF);
                if (!conf_path)
                        return -ENOMEM;
                r = daemon_config_load(conf_path, &dc);
                if (r < 0)
                        return r;
                if (dc.error)
                        fprintf(stderr, "%s, ignoring.\n", dc.error);
                name = strdup(dc.profile ? dc.profile : LATNICE_DEFAULT_PROFILE);
                daemon_config_done(&dc);
        }
        if (!name)
                return -ENOMEM;
        r = profile_find(ctl->root, ctl->profile_dir, name, ret_path);
        if (r == -ENOENT || r == -EINVAL) {
                /* rule_set_load() reports a missing profile as a rule error. */
                if (asprintf(ret_path, "%s/%s.conf", LATNICE_PROFILE_DIR, name) < 0)
                        return -ENOMEM;
        } else if (r < 0)
                return r;
        *ret_name = TAKE_PTR(name);
        return 0;
}

int ctl_load_rules(Ctl *ctl, RuleSet **ret) {
        _cleanup_(freep) char *name = NULL, *path = NULL;
        int r;

        r = ctl_resolve_profile(ctl, &name, &path);
        if (r < 0)
                return r;
        return rule_set_load(ctl->root, name, path, ret);
}

bool ctl_want_help(int argc, char **argv, const char *usage) {
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        break;
                if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                        fputs(usage, stdout);
                        return true;
                }
        }
        return false;
}

int main(int argc, char **argv) {
        enum {
                ARG_VERSION = 0x100,
                ARG_ROOT,
                ARG_PROFILE,
                ARG_NO_PROFILE,
                ARG_PROFILE_DIR,
                ARG_JSON,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "root", required_argument, NULL, ARG_ROOT },
                { "profile", required_argument, NULL, ARG_PROFILE },
                { "no-profile", no_argument, NULL, ARG_NO_PROFILE },
                { "profile-dir", required_argument, NULL, ARG_PROFILE_DIR },
                { "json", no_argument, NULL, ARG_JSON },
                {}
        };
        Ctl ctl = {};
        int c;

        /* '+': stop at the verb, so each verb parses its own options. */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return CTL_EXIT_OK;
                case ARG_VERSION:
                        printf("latnicectl %s\n", LATNICE_VERSION);
                        return CTL_EXIT_OK;
                case ARG_ROOT:
                        ctl.root = optarg;
                        break;
                case ARG_PROFILE:
                        if (!profile_name_valid(optarg)) {
                                fprintf(stderr, "Invalid profile name '%s'.\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        ctl.profile = optarg;
                        break;
                case ARG_NO_PROFILE:
                        ctl.no_profile = true;
                        break;
                case ARG_PROFILE_DIR:
                        ctl.profile_dir = optarg;
                        break;
                case ARG_JSON:
                        ctl.json = true;
                        break;
                default:
                        return CTL_EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                help();
                return CTL_EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(argv[optind], verbs[i].name) == 0) {
                        int vargc = argc - optind;
                        char **vargv = argv + optind;

                        /* Verbs see argv[0] = their own name and parse their own options. */
                        optind = 0;
                        return verbs[i].run(&ctl, vargc, vargv);
                }
        fprintf(stderr, "Unknown command '%s'. See 'latnicectl --help'.\n", argv[optind]);
        return CTL_EXIT_USAGE;
}
