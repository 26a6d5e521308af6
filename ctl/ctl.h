/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latnicectl: the verbs and what they share. */
#pragma once

#include <stdbool.h>

#include "rules.h"

/* Exit codes, documented in latnicectl --help and latnicectl(1). */
enum {
        CTL_EXIT_OK = 0,
        CTL_EXIT_FAILURE = 1,     /* errors found (check), or the operation failed */
        CTL_EXIT_USAGE = 2,       /* bad command line */
        CTL_EXIT_NO_PROCESS = 3,  /* the process does not exist (any more) */
        CTL_EXIT_UNSUPPORTED = 4, /* the kernel (or daemon) cannot do it */
        CTL_EXIT_PERMISSION = 5,  /* not allowed */
};

typedef struct Ctl {
        const char *root;        /* --root: rule tree prefix */
        const char *profile;     /* --profile, NULL: from latniced.conf */
        const char *profile_dir; /* --profile-dir: searched first */
        bool no_profile;
        bool json;
} Ctl;

typedef struct Verb {
        const char *name;
        int (*run)(Ctl *ctl, int argc, char **argv);
        const char *summary;
} Verb;

/* Resolves the active profile (option, then latniced.conf, then the default). */
int ctl_resolve_profile(Ctl *ctl, char **ret_name, char **ret_path);
/* Loads the effective rules as the daemon would; prints nothing. */
int ctl_load_rules(Ctl *ctl, RuleSet **ret);

/* Prints a getopt-style help for one verb when argv has -h/--help; returns true if it did. */
bool ctl_want_help(int argc, char **argv, const char *usage);

int verb_check(Ctl *ctl, int argc, char **argv);
int verb_import_ananicy(Ctl *ctl, int argc, char **argv);
int verb_cat_config(Ctl *ctl, int argc, char **argv);
int verb_explain(Ctl *ctl, int argc, char **argv);
int verb_run(Ctl *ctl, int argc, char **argv);
int verb_get(Ctl *ctl, int argc, char **argv);
int verb_set(Ctl *ctl, int argc, char **argv);
