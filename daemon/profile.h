/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Profiles are named rule files: /etc/latnice/profiles/NAME.conf (the
 * administrator's) before LATNICE_PROFILE_DIR/NAME.conf (shipped). An extra
 * directory (from --profile-dir) is searched first. A -util module: it
 * looks at files, never logs.
 */
#pragma once

#include <getopt.h>
#include <stdbool.h>

/* Validates a profile name: [A-Za-z0-9_.-], not starting with '.', at most 64 chars. */
int profile_name_valid(const char *name);

/* Finds NAME.conf; returns -ENOENT if no directory has it. */
int profile_find(const char *root, const char *extra_dir, const char *name, char **ret_path);

/* Sorted, unique names of all profiles found. */
int profile_list(const char *root, const char *extra_dir, char ***ret);

/*
 * Where the rules come from, as latniced and latnicectl both take it on
 * their command lines: --root=DIR, --profile=NAME, --no-profile,
 * --profile-dir=DIR. The strings point into argv.
 */
typedef struct RuleTreeOptions {
        const char *root;        /* rule tree prefix, NULL for / */
        const char *profile;     /* NULL: latniced.conf's, else the default */
        const char *profile_dir; /* searched first */
        bool no_profile;
} RuleTreeOptions;

enum {
        RULE_TREE_ARG_ROOT = 0x1000,
        RULE_TREE_ARG_PROFILE,
        RULE_TREE_ARG_NO_PROFILE,
        RULE_TREE_ARG_PROFILE_DIR,
};

/* Entries for a struct option table (getopt_long). */
#define RULE_TREE_OPTIONS                                                          \
        { "root", required_argument, NULL, RULE_TREE_ARG_ROOT },                   \
        { "profile", required_argument, NULL, RULE_TREE_ARG_PROFILE },             \
        { "no-profile", no_argument, NULL, RULE_TREE_ARG_NO_PROFILE },             \
        { "profile-dir", required_argument, NULL, RULE_TREE_ARG_PROFILE_DIR }

/* Takes one getopt_long() result: 1 if it was one of these, 0 if not, -EINVAL for an invalid profile name. */
int rule_tree_option(int c, char *arg, RuleTreeOptions *o);

/*
 * The active profile: none with no_profile; profile if given; else
 * latniced.conf's Profile= (below root), else LATNICE_DEFAULT_PROFILE.
 * *ret_path is where it is, or where it would be if no directory has it
 * (rule_set_load() then reports it as a rule error). *ret_warning (may be
 * NULL on return) says what was wrong with latniced.conf, for the caller to
 * show before ", ignoring.".
 */
int profile_resolve(const RuleTreeOptions *o, char **ret_name, char **ret_path, char **ret_warning);
