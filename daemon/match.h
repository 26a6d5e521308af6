/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Matching a task (or a systemd unit) against a RuleSet. Pure logic: the
 * caller fills a TaskInfo from wherever it learnt about the task (a BPF
 * event, /proc), this module never reads the system.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "rules.h"

typedef struct TaskInfo TaskInfo;

/* One ancestor of a task: its parent first, then the parent's parent, ... */
typedef struct TaskAncestor {
        pid_t pid;
        char comm[16];
        char *exe;               /* NULL if unknown (another user's process without CAP_SYS_PTRACE) */
        uint64_t start_time;     /* /proc/PID/stat's, when the chain was read */
        bool hidden;             /* shown as "?": not the asking user's (Explain) */
} TaskAncestor;

/*
 * Is the file at path, as latniced sees the file system, the executable
 * the task runs (the same inode)? The caller supplies it, because it needs
 * stat(). Without it Exe= paths are compared as strings only.
 */
typedef bool (*TaskExeCheck)(const TaskInfo *t, const char *path, void *userdata);

struct TaskInfo {
        pid_t pid;  /* thread group id */
        pid_t ppid;
        uid_t uid;
        gid_t gid;
        const char *comm;
        const char *exe;         /* may end in " (deleted)": trimmed when matching */
        uint64_t exe_ino;        /* the executable's inode and device (kernel dev_t), 0 if unknown */
        uint32_t exe_dev;
        TaskExeCheck exe_is;
        void *exe_userdata;
        char * const *argv;      /* NULL if unknown */
        const char *parent_comm; /* NULL if unknown */
        const char *user;        /* name of uid, NULL if unknown */
        const char *group;       /* name of gid, NULL if unknown */
        const char *cgroup;      /* cgroup v2 (or name=systemd) path, NULL if unknown */
        bool argv_truncated;     /* argv holds only the first words (what the BPF record had room for) */
        const TaskAncestor *ancestors; /* nearest first, NULL if unknown (Ancestor= then matches nothing) */
        size_t n_ancestors;
        const char *thread_comm; /* the thread's own name when one thread is decided; NULL: the whole
                                  * process, and then a rule with Thread= does not match */
        bool thread_any;         /* Thread= matches any name: could a rule with Thread= match one of its threads? */
};

typedef struct MatchResult {
        const Rule *rule;     /* the winner, NULL if none */
        const Rule **shadowed; /* later rules that matched too */
        size_t n_shadowed;
} MatchResult;

void match_result_done(MatchResult *m);

/* Does this one rule match? On false, *ret_failed names the first key that did not. */
bool match_rule(const Rule *rule, const TaskInfo *t, MatchKey *ret_failed);

/* The value of key k that matches the task (for explain), or NULL. */
const char *match_key_matched(const Rule *rule, MatchKey k, const TaskInfo *t);

/* "reaper[1234] <- steam[1200] <- systemd[1]": the chain, nearest first, newly allocated; NULL on OOM. */
char *task_ancestors_format(const TaskInfo *t);

/* The nearest ancestor that one of the rule's Ancestor= values matches (its index: levels up - 1), or -1. */
ssize_t match_ancestor_matched(const Rule *rule, const TaskInfo *t);

/*
 * First process rule that matches wins. With want_shadowed, also collects the
 * later matching ones (for explain); without it, stops at the first match.
 */
int match_task(const RuleSet *s, const TaskInfo *t, bool want_shadowed, MatchResult *ret);

/*
 * The same first-match decision as match_task(), without trying every
 * rule: each process rule is filed under one of its keys whose values are
 * all exact names or globs with a literal start (Comm=, Exe='s file name,
 * Parent=, Cmdline=, Cgroup=, Unit=, User=, Group=), in a hash table of
 * exact names and of literal prefixes. A task is tried only against the
 * rules its own names find there, plus the few rules that have no such
 * key, in rule order: the winner and the shadowed list are those of
 * match_task() (tests/unit/test-match.c checks that on random rule sets).
 * The index points into the RuleSet, which must outlive it.
 */
typedef struct MatchIndex MatchIndex;

int match_index_new(const RuleSet *s, MatchIndex **ret);
MatchIndex *match_index_free(MatchIndex *ix);
static inline void match_index_freep(MatchIndex **ix) {
        match_index_free(*ix);
}
/* Not const: the index keeps a scratch buffer for candidates. */
int match_index_task(MatchIndex *ix, const TaskInfo *t, bool want_shadowed, MatchResult *ret);

typedef struct MatchIndexStats {
        size_t indexed;   /* process rules found through the hash table */
        size_t unindexed; /* process rules tried for every task */
        size_t entries;   /* names and prefixes in the table */
        size_t bytes;     /* memory the index allocated */
} MatchIndexStats;
void match_index_stats(const MatchIndex *ix, MatchIndexStats *ret);

/* First unit rule covering a unit the task runs in (its cgroup path), or NULL. */
const Rule *match_task_unit_rule(const RuleSet *s, const TaskInfo *t);

/*
 * Which rule gives a process its value, the one precedence that latniced
 * decides by and that explain shows: the first process rule, else the
 * first unit rule of a unit the process runs in, else none. ix, if not
 * NULL, finds the process rule (the daemon's exec path); else every rule
 * of s is tried. With want_shadowed, also the later process rules that
 * matched and the unit rule the process rule overrides (for explain).
 */
typedef enum MatchHow {
        MATCH_HOW_NONE,    /* no rule: latniced leaves the process alone */
        MATCH_HOW_PROCESS, /* a process rule */
        MATCH_HOW_UNIT,    /* no process rule: a unit rule, through the process's unit */
        _MATCH_HOW_MAX,
        _MATCH_HOW_INVALID = -EINVAL,
} MatchHow;

typedef struct MatchExplain {
        MatchHow how;
        const Rule *rule;      /* what gives the value: the process rule or the unit rule, NULL for none */
        const Rule *unit_rule; /* with want_shadowed and a process rule: the unit rule it overrides */
        MatchResult match;     /* the process rules: the first and, with want_shadowed, those it shadows */
} MatchExplain;

int match_explain(const RuleSet *s, MatchIndex *ix, const TaskInfo *t, bool want_shadowed, MatchExplain *ret);
void match_explain_done(MatchExplain *e);
/* "none", "process", "unit": as Explain names them on D-Bus. */
const char *match_how_to_string(MatchHow h);

/* First unit rule whose Unit= matches the unit name. */
const Rule *match_unit(const RuleSet *s, const char *unit);

/*
 * Does a cgroup path lie inside a unit that the pattern names? The path's
 * components that are unit names (*.slice, *.service, *.scope, ...) are
 * candidates: a process in /game.slice/run-1.scope runs "in" both.
 */
bool cgroup_path_in_unit(const char *cgroup, const char *pattern);

/*
 * The application ID of a cgroup path: of the innermost unit named like a
 * Flatpak app's scope (app-flatpak-<ID>-<N>.scope, older Flatpak:
 * flatpak-<ID>-<N>.scope) or a Snap's (snap.<NAME>.*), newly allocated;
 * NULL if there is none (or on OOM).
 */
char *cgroup_path_app(const char *cgroup);

/* The innermost unit of a cgroup path, newly allocated, or NULL if there is none. */
char *cgroup_path_unit(const char *cgroup);

/* The unit types whose units run processes in a cgroup: the name suffix, and the systemd1 interface that
 * carries the unit's ControlGroup. */
typedef struct UnitType {
        const char *suffix;
        const char *interface;
} UnitType;
/* The type of the unit named by the first len bytes of s; NULL if it names no such unit. */
const UnitType *unit_type_from_name(const char *s, size_t len);
