/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Rule matching. Keys are ANDed, the values of one key are alternatives;
 * a value is an exact string unless it contains glob characters. Cmdline=
 * values match any argv word or its file name, so "python3 /usr/bin/tool.py"
 * matches Cmdline=tool.py.
 *
 * Exe= is the one key a process cannot fake: a path names a file as latniced
 * sees it, and matches only a task that runs that very file (the same inode,
 * through TaskInfo.exe_is), wherever the task's own mount namespace put it.
 * A glob path must match the executable's path and that path must be the
 * file. A value without a slash matches the executable's file name, which
 * anybody can choose, like Comm=.
 */

#include <fnmatch.h>

#include "match.h"
#include "util.h"

static bool value_matches(const char *pattern, const char *s) {
        if (!s)
                return false;
        if (string_is_glob(pattern))
                return fnmatch(pattern, s, 0) == 0;
        return strcmp(pattern, s) == 0;
}

static bool any_matches(char * const *patterns, const char *s) {
        for (char * const *p = patterns; *p; p++)
                if (value_matches(*p, s))
                        return true;
        return false;
}

static const char *basename_of(const char *p) {
        const char *s = strrchr(p, '/');

        return s ? s + 1 : p;
}

static bool exe_matches(const char *pattern, const TaskInfo *t) {
        const char *exe = t->exe;
        char buf[4096];
        size_t l;

        if (strchr(pattern, '/') && !string_is_glob(pattern) && t->exe_is)
                /* Whatever the task's exec path or mount namespace: is it this file? (Symlinks resolve.) */
                return t->exe_is(t, pattern, t->exe_userdata);
        if (!exe)
                return false;
        /* The kernel appends " (deleted)" once the binary was replaced (e.g. by an upgrade). */
        l = strlen(exe);
        if (l > 10 && l < sizeof(buf) && strcmp(exe + l - 10, " (deleted)") == 0) {
                memcpy(buf, exe, l - 10);
                buf[l - 10] = 0;
                exe = buf;
        }
        if (!strchr(pattern, '/'))
                return value_matches(pattern, basename_of(exe));
        if (!value_matches(pattern, exe))
                return false;
        /* A path the task's namespace may have made up: it must be this file in ours. */
        return !t->exe_is || t->exe_is(t, exe, t->exe_userdata);
}

static bool cmdline_matches(const char *pattern, char * const *argv) {
        if (!argv)
                return false;
        for (char * const *a = argv; *a; a++) {
                const char *b = basename_of(*a);

                if (value_matches(pattern, *a) || (b != *a && value_matches(pattern, b)))
                        return true;
        }
        return false;
}

static bool id_matches(const char *pattern, unsigned id, const char *name) {
        char num[16];

        snprintf(num, sizeof(num), "%u", id);
        return value_matches(pattern, num) || value_matches(pattern, name);
}

static bool is_unit_name(const char *s, size_t len) {
        static const char * const suffixes[] = {
                ".slice", ".service", ".scope", ".socket", ".mount", ".swap",
        };

        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t sl = strlen(suffixes[i]);

                if (len > sl && memcmp(s + len - sl, suffixes[i], sl) == 0)
                        return true;
        }
        return false;
}

bool cgroup_path_in_unit(const char *cgroup, const char *pattern) {
        const char *p = cgroup;

        if (!cgroup)
                return false;
        while (*p) {
                const char *e;
                size_t len;
                char buf[256];

                p += strspn(p, "/");
                e = strchrnul(p, '/');
                len = (size_t) (e - p);
                if (len > 0 && len < sizeof(buf) && is_unit_name(p, len)) {
                        memcpy(buf, p, len);
                        buf[len] = 0;
                        if (value_matches(pattern, buf))
                                return true;
                }
                p = e;
        }
        return false;
}

char *cgroup_path_unit(const char *cgroup) {
        const char *p = cgroup, *best = NULL;
        size_t best_len = 0;

        if (!cgroup)
                return NULL;
        while (*p) {
                const char *e;

                p += strspn(p, "/");
                e = strchrnul(p, '/');
                if (e > p && is_unit_name(p, (size_t) (e - p))) {
                        best = p;
                        best_len = (size_t) (e - p);
                }
                p = e;
        }
        return best ? strndup(best, best_len) : NULL;
}

/* Does one value of key k match the task? */
static bool pattern_matches(MatchKey k, const char *pattern, const TaskInfo *t) {
        switch (k) {
        case MATCH_COMM:
                return value_matches(pattern, t->comm);
        case MATCH_EXE:
                return exe_matches(pattern, t);
        case MATCH_CMDLINE:
                return cmdline_matches(pattern, t->argv);
        case MATCH_PARENT:
                return value_matches(pattern, t->parent_comm);
        case MATCH_USER:
                return id_matches(pattern, t->uid, t->user);
        case MATCH_GROUP:
                return id_matches(pattern, t->gid, t->group);
        case MATCH_CGROUP:
                return value_matches(pattern, t->cgroup);
        case MATCH_UNIT:
                return cgroup_path_in_unit(t->cgroup, pattern);
        default:
                return false;
        }
}

const char *match_key_matched(const Rule *r, MatchKey k, const TaskInfo *t) {
        for (char * const *p = r->match[k]; p && *p; p++)
                if (pattern_matches(k, *p, t))
                        return *p;
        return NULL;
}

bool match_rule(const Rule *r, const TaskInfo *t, MatchKey *ret_failed) {
        for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++) {
                if (!r->match[k])
                        continue;
                /* A key given with an empty list ("Comm=" reset) matches nothing. */
                if (!match_key_matched(r, k, t)) {
                        if (ret_failed)
                                *ret_failed = k;
                        return false;
                }
        }
        return true;
}

void match_result_done(MatchResult *m) {
        free(m->shadowed);
        *m = (MatchResult) {};
}

int match_task(const RuleSet *s, const TaskInfo *t, bool want_shadowed, MatchResult *ret) {
        MatchResult m = {};
        size_t alloc = 0;

        for (size_t i = 0; i < s->n_rules; i++) {
                const Rule *r = &s->rules[i];

                if (r->kind != RULE_PROCESS || !match_rule(r, t, NULL))
                        continue;
                if (!m.rule) {
                        m.rule = r;
                        if (!want_shadowed)
                                break;
                        continue;
                }
                if (m.n_shadowed >= alloc) {
                        const Rule **n;

                        alloc = alloc ? alloc * 2 : 8;
                        n = reallocarray(m.shadowed, alloc, sizeof(Rule *));
                        if (!n) {
                                match_result_done(&m);
                                return -ENOMEM;
                        }
                        m.shadowed = n;
                }
                m.shadowed[m.n_shadowed++] = r;
        }
        *ret = m;
        return m.rule ? 1 : 0;
}

const Rule *match_task_unit_rule(const RuleSet *s, const TaskInfo *t) {
        if (!t->cgroup)
                return NULL;
        for (size_t i = 0; i < s->n_rules; i++)
                if (s->rules[i].kind == RULE_UNIT && match_rule(&s->rules[i], t, NULL))
                        return &s->rules[i];
        return NULL;
}

const Rule *match_unit(const RuleSet *s, const char *unit) {
        for (size_t i = 0; i < s->n_rules; i++) {
                const Rule *r = &s->rules[i];

                if (r->kind == RULE_UNIT && r->match[MATCH_UNIT] && any_matches(r->match[MATCH_UNIT], unit))
                        return r;
        }
        return NULL;
}
