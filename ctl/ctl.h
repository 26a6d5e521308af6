/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl: the parsed command line every verb gets, and the verbs.
 * latnicectl.c parses all options wherever they stand; a verb sees values,
 * never argv, so "check --root=DIR" and "--root=DIR check" are one thing.
 */
#pragma once

#include <stdbool.h>

#include "ctl-exit.h"
#include "ctl-table.h"
#include "profile.h"
#include "rules.h"
#include "sched.h"
#include "util.h"

typedef struct Verb Verb;

typedef struct Ctl {
        const Verb *verb;

        bool help, version;

        /* Global options. */
        RuleTreeOptions tree;    /* --root, --profile, --no-profile, --profile-dir */
        bool json;

        /* The verbs' options; latnicectl.c refuses one the verb does not take. */
        const char *latency_nice_arg; /* -l as given: run, set */
        bool have_latency_nice;       /* and validated */
        int latency_nice;
        char **pid_args;        /* -p/--pid in order, as given: set, explain */
        bool verbose;           /* explain */
        const char *comm, *exe, *parent, *user, *group, *cgroup; /* explain's description */
        char **cmdline;
        const char *out;        /* import-ananicy */
        const char *for_arg;    /* stats --for */
        char **rules;           /* stats --rule, in order */

        /* What follows the verb, options taken out; for run, COMMAND and its ARGS. */
        char **args;
        int n_args;
} Ctl;

/* A verb's arguments, as systemd's dispatch_verb() counts them: latnicectl.c checks them before run(). */
#define VERB_ANY (-1)

/* A verb: what it does, after latnicectl.c checked its arguments; an exit status. */
typedef int VerbRun(Ctl *ctl);

struct Verb {
        const char *name;
        VerbRun *run;
        const char *summary;
        const char *usage;     /* the synopsis lines, a blank line, the description */
        int min_args, max_args; /* what follows the verb, options taken out; max VERB_ANY: no limit */
        const char *missing;    /* the message when fewer than min_args are given */
        bool needs_latency_nice; /* -l N, said before a missing argument */
        bool takes_command;      /* its first argument begins a command line: no option after it */
};

/* In the files of their kind; latnicectl.c's table of verbs names each and holds its help. */
extern VerbRun verb_check, verb_cat_config, verb_explain, verb_run, verb_get, verb_set, verb_status, verb_list,
        verb_rules, verb_reload, verb_profile, verb_import_ananicy, verb_stats;

/* "Missing PID." and the like: the message, the verb's usage, CTL_EXIT_USAGE. */
int ctl_usage_error(const Ctl *ctl, const char *fmt, ...) _printf_(2, 3);
/* The PIDs of -p and those of ctl->args from index start on; prints the first bad one. */
int ctl_parse_pids(const Ctl *ctl, int start, pid_t **ret, int *ret_n);

/* Loads the effective rules as latniced would; prints only a warning about latniced.conf. */
int ctl_load_rules(const Ctl *ctl, RuleSet **ret);
/* The offline view is meant when the rule tree or profile was chosen on the command line. */
bool ctl_wants_offline(const Ctl *ctl);
/* explain was given a description of a process (--comm=, --exe=, ...). */
bool ctl_explain_described(const Ctl *ctl);

/* Without latniced: the kernel's view and the kernel directly (ctl-kernel.c), the rules on disk (ctl-config.c). */
typedef struct KernelView {
        int proc_fd;
        SchedProbe probe;
} KernelView;
/* Opens /proc and probes the backend (and says which, in t's text); < 0 it said why not. */
int ctl_kernel_view_open(const Table *t, KernelView *ret);
void ctl_kernel_view_done(KernelView *v);
/*
 * The columns get begins with in both its views, latniced's (ctl-task.c) and
 * the kernel's (ctl-kernel.c), so that --json names a process alike in each:
 * the process as people read it, then the numbers behind the sentence.
 */
#define CTL_GET_COLUMNS                         \
        { "", NULL, TABLE_STRING },             \
        { NULL, "pid", TABLE_INT },             \
        { NULL, "comm", TABLE_STRING },         \
        { NULL, "latency_nice", TABLE_INT },    \
        { NULL, "set_by", TABLE_STRING }
/* get's table for the kernel's view, and one process added to it; an exit status. */
Table *ctl_kernel_get_table(const Ctl *ctl);
int ctl_kernel_get(const KernelView *v, Table *t, pid_t pid);
int ctl_kernel_set(Ctl *ctl, const pid_t *pids, int n_pids);
int ctl_explain_offline(Ctl *ctl, pid_t pid);
