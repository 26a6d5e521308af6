/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Rule files: finding them in the drop-in directories (rules-load.c, -util:
 * the root directory and the profile path come in as parameters), parsing
 * them with inih (rules.c, pure) and keeping the result as an ordered
 * RuleSet. Errors are collected with file:line, never logged.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum RuleKind {
        RULE_PROCESS,
        RULE_UNIT,
        _RULE_KIND_MAX,
} RuleKind;

typedef enum MatchKey {
        MATCH_COMM,
        MATCH_EXE,
        MATCH_CMDLINE,
        MATCH_PARENT,
        MATCH_USER,
        MATCH_GROUP,
        MATCH_CGROUP,
        MATCH_UNIT,
        MATCH_ANCESTOR, /* any ancestor's command name or executable, nearest first */
        MATCH_APP,      /* the Flatpak or Snap application ID, from the systemd unit the process runs in */
        MATCH_THREAD,   /* a thread's own name (task/TID/comm): the rule applies to those threads only */
        _MATCH_KEY_MAX,
} MatchKey;

typedef enum ThreadsMode {
        THREADS_ALL,  /* every thread of the process (default) */
        THREADS_MAIN, /* only the thread group leader; later threads still inherit */
        _THREADS_MODE_MAX,
} ThreadsMode;

/*
 * One rule. Rule sets of tens of thousands of rules are normal (community
 * collections), so a rule is small: its name and values live in the set's
 * arena, its keys in one packed list (rule_match() reads it).
 */
typedef struct Rule {
        char *name;
        const char *file;  /* points into RuleSet.files */
        char **values;     /* the given keys' values in key order, each list NULL-terminated */
        uint32_t line;
        uint16_t keys;     /* bit k: key k given */
        uint8_t kind;      /* RuleKind */
        uint8_t threads;   /* ThreadsMode */
        int8_t latency_nice;
        bool override;
        bool inherit;      /* children that exec another program keep the value */
} Rule;

/* The values of key k (alternatives), or NULL if the rule does not have the key. */
static inline char **rule_match(const Rule *rule, MatchKey k) {
        char **p = rule->values;
        unsigned bit = 1U << k, before;

        if (!(rule->keys & bit))
                return NULL;
        for (before = (unsigned) __builtin_popcount(rule->keys & (bit - 1)); before > 0; before--) {
                while (*p)
                        p++;
                p++;
        }
        return p;
}

typedef struct RuleArena RuleArena;

typedef enum ConfFileState {
        CONF_FILE_ACTIVE,
        CONF_FILE_HIDDEN, /* a file of the same name in an earlier directory wins */
        CONF_FILE_MASKED, /* symlink to /dev/null */
        CONF_FILE_BROKEN, /* could not be read at all */
} ConfFileState;

typedef struct ConfFile {
        char *path;      /* as seen by the caller (with the root prefix) */
        char *shown;     /* without the root prefix, for messages */
        ConfFileState state;
        const char *hidden_by; /* shown path of the winner, for CONF_FILE_HIDDEN */
        bool profile;
} ConfFile;

typedef struct RuleError {
        char *file; /* shown path, or NULL for errors not tied to a file */
        unsigned line; /* 0: the whole file */
        char *message;
} RuleError;

typedef struct RuleSet {
        Rule *rules;
        size_t n_rules, alloc_rules;
        ConfFile *files;
        size_t n_files, alloc_files;
        RuleError *errors;
        size_t n_errors, alloc_errors;
        char *profile; /* active profile name, or NULL */
        RuleArena *arena; /* names and values of the rules */
} RuleSet;

/* The drop-in directories in precedence order, without root prefix. */
extern const char * const rule_dirs[];

#define RULE_FILE_MAX_SIZE (1024 * 1024)
#define RULE_LINE_MAX 1024

RuleSet *rule_set_free(RuleSet *s);
static inline void rule_set_freep(RuleSet **s) {
        rule_set_free(*s);
}

/*
 * Loads the drop-in directories below root (NULL or "/" for the real
 * system), then the profile file (may be NULL). Returns 0 and a set even
 * when files have errors (see ret->n_errors); negative errno only on OOM.
 */
int rule_set_load(const char *root, const char *profile_name, const char *profile_path, RuleSet **ret);

/* Parses one in-memory file (for the fuzzer); name is used in messages. */
int rule_set_load_buffer(const char *name, const char *buf, size_t size, RuleSet **ret);

/* Parses just the given files, in the given order (for "latnicectl check FILE..."). */
int rule_set_load_files(char * const *paths, RuleSet **ret);

/* "[Process name] file:line": how logs, D-Bus and the CLI name a rule. */
void rule_format_ref(const Rule *rule, char *buf, size_t size);
/* "Comm=a b*": one match key of a rule as its file says it (ListRules, Explain, latnicectl explain);
 * newly allocated, NULL on OOM or if the rule has no such key. */
char *rule_format_key(const Rule *rule, MatchKey k);
/* "file:line: message" (or "file: message" for a whole file). */
void rule_error_format(const RuleError *e, char *buf, size_t size);

const char *match_key_to_string(MatchKey k);
const char *rule_kind_to_string(RuleKind k);
const char *threads_mode_to_string(ThreadsMode m);
const char *conf_file_state_to_string(ConfFileState s);

/* True if any process rule uses Cmdline=, so exec events need argv. */
bool rule_set_needs_cmdline(const RuleSet *s);

/*
 * Reads the daemon's own settings file ([Daemon] and [Foreground] sections). Unknown keys are
 * errors. Missing file is not an error: defaults stay.
 */
/* [Daemon] Scheduler=: a sched_ext scheduler latniced starts and stops. */
typedef enum DaemonScheduler {
        DAEMON_SCHEDULER_NONE,    /* "none" or empty: the default */
        DAEMON_SCHEDULER_LATNICE, /* "latnice": scx_latnice (scheduler/) */
        _DAEMON_SCHEDULER_MAX,
} DaemonScheduler;

const char *daemon_scheduler_to_string(DaemonScheduler s);

typedef struct DaemonConfig {
        char *profile;
        DaemonScheduler scheduler;
        /* [Foreground] */
        bool foreground;           /* LatencyNice= is set: the boost is on */
        int foreground_latency_nice;
        int foreground_cover;      /* ForegroundCover (foreground.h) */
        char *error; /* "file:line: message" of the first error, or NULL */
} DaemonConfig;

void daemon_config_done(DaemonConfig *c);
int daemon_config_load(const char *path, DaemonConfig *c);
