/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Rule matching. Keys are ANDed, the values of one key are alternatives;
 * a value is an exact string unless it contains glob characters. Cmdline=
 * values match any argv word or its file name, so "python3 /usr/bin/tool.py"
 * matches Cmdline=tool.py, and "Z:\\games\\Game.exe" (how Wine spells a
 * Windows path in argv) matches Cmdline=Game.exe.
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
#include "string-table.h"
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

/* The kernel appends " (deleted)" once the binary was replaced (e.g. by an upgrade). */
static const char *exe_trimmed(const char *exe, char *buf, size_t size) {
        size_t l = strlen(exe);

        if (l > 10 && l < size && strcmp(exe + l - 10, " (deleted)") == 0) {
                memcpy(buf, exe, l - 10);
                buf[l - 10] = 0;
                return buf;
        }
        return exe;
}

static bool exe_matches(const char *pattern, const TaskInfo *t) {
        const char *exe = t->exe;
        char buf[4096];

        if (strchr(pattern, '/') && !string_is_glob(pattern) && t->exe_is)
                /* Whatever the task's exec path or mount namespace: is it this file? (Symlinks resolve.) */
                return t->exe_is(t, pattern, t->exe_userdata);
        if (!exe)
                return false;
        exe = exe_trimmed(exe, buf, sizeof(buf));
        if (!strchr(pattern, '/'))
                return value_matches(pattern, path_basename(exe));
        if (!value_matches(pattern, exe))
                return false;
        /* A path the task's namespace may have made up: it must be this file in ours. */
        return !t->exe_is || t->exe_is(t, exe, t->exe_userdata);
}

/* The file name of an argv word: after its last '/', or after the last '\\' of a Windows path. */
static const char *cmdline_word_name(const char *w) {
        const char *b = path_basename(w), *bs = strrchr(b, '\\');

        return bs && bs[1] ? bs + 1 : b;
}

static bool cmdline_matches(const char *pattern, char * const *argv) {
        if (!argv)
                return false;
        for (char * const *a = argv; *a; a++) {
                const char *b = cmdline_word_name(*a);

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

static const UnitType unit_types[] = {
        { ".service", "org.freedesktop.systemd1.Service" },
        { ".slice", "org.freedesktop.systemd1.Slice" },
        { ".scope", "org.freedesktop.systemd1.Scope" },
        { ".socket", "org.freedesktop.systemd1.Socket" },
        { ".mount", "org.freedesktop.systemd1.Mount" },
        { ".swap", "org.freedesktop.systemd1.Swap" },
};

const UnitType *unit_type_from_name(const char *s, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(unit_types); i++) {
                size_t sl = strlen(unit_types[i].suffix);

                if (len > sl && memcmp(s + len - sl, unit_types[i].suffix, sl) == 0)
                        return &unit_types[i];
        }
        return NULL;
}

static bool is_unit_name(const char *s, size_t len) {
        return unit_type_from_name(s, len) != NULL;
}

/* user@UID.service: what is below it is named by that user's manager, as systemd's cg_path_get_user_unit()
 * also reads it. */
static bool is_user_manager(const char *s, size_t len) {
        return len > strlen("user@.service") && strncmp(s, "user@", 5) == 0 &&
               memcmp(s + len - strlen(".service"), ".service", strlen(".service")) == 0;
}

/*
 * Calls f(name, userdata) for each system unit a cgroup path runs in, outermost first, until f returns
 * non-zero (returned). The user manager's own unit is the last one: below it every user may create any
 * name (systemd-run --user --slice=game.slice), and a [Unit] rule is the administrator's, not theirs.
 */
static int for_each_system_unit(const char *cgroup, int (*f)(const char *name, void *userdata), void *userdata) {
        const char *p = cgroup;

        if (!p)
                return 0;
        while (*p) {
                const char *e;
                size_t len;
                char buf[256];
                int r;

                p += strspn(p, "/");
                e = strchrnul(p, '/');
                len = (size_t) (e - p);
                if (len > 0 && len < sizeof(buf) && is_unit_name(p, len)) {
                        memcpy(buf, p, len);
                        buf[len] = 0;
                        r = f(buf, userdata);
                        if (r != 0)
                                return r;
                        if (is_user_manager(p, len))
                                break;
                }
                p = e;
        }
        return 0;
}

static int unit_matches_pattern(const char *name, void *pattern) {
        return value_matches(pattern, name);
}

bool cgroup_path_in_unit(const char *cgroup, const char *pattern) {
        return for_each_system_unit(cgroup, unit_matches_pattern, (void *) pattern) > 0;
}

/* The app ID one path component (len bytes) names, copied into buf (size > len); false if none. */
static bool unit_app_id(const char *s, size_t len, char *buf, size_t size) {
        static const char * const flatpak[] = { "app-flatpak-", "flatpak-" };
        const size_t scope = strlen(".scope");

        if (len >= size)
                return false;
        if (len > 5 && strncmp(s, "snap.", 5) == 0) {
                const char *dot = memchr(s + 5, '.', len - 5);

                if (!dot || dot == s + 5)
                        return false;
                memcpy(buf, s + 5, (size_t) (dot - s - 5));
                buf[dot - s - 5] = 0;
                return true;
        }
        if (len <= scope || strncmp(s + len - scope, ".scope", scope) != 0)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(flatpak); i++) {
                size_t pl = strlen(flatpak[i]), e = len - scope;

                if (len <= pl + scope || strncmp(s, flatpak[i], pl) != 0)
                        continue;
                /* the instance: "-" and digits at the end */
                while (e > pl && s[e - 1] >= '0' && s[e - 1] <= '9')
                        e--;
                if (e == len - scope || e <= pl + 1 || s[e - 1] != '-')
                        return false;
                memcpy(buf, s + pl, e - 1 - pl);
                buf[e - 1 - pl] = 0;
                return true;
        }
        return false;
}

char *cgroup_path_app(const char *cgroup) {
        char buf[256], best[256] = "";

        for (const char *p = cgroup; p && *p;) {
                const char *e;

                p += strspn(p, "/");
                e = strchrnul(p, '/');
                if (e > p && unit_app_id(p, (size_t) (e - p), buf, sizeof(buf)))
                        memcpy(best, buf, sizeof(best));
                p = e;
        }
        return best[0] ? strdup(best) : NULL;
}

static bool app_matches(const char *pattern, const char *cgroup) {
        _cleanup_(freep) char *app = cgroup_path_app(cgroup);

        return app && value_matches(pattern, app);
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

/*
 * An Ancestor= value: a path is compared with the ancestor's executable
 * path, a name with its command name and its executable's file name.
 */
static bool ancestor_matches(const char *pattern, const TaskAncestor *a) {
        if (strchr(pattern, '/'))
                return a->exe && value_matches(pattern, a->exe);
        return value_matches(pattern, a->comm) || (a->exe && value_matches(pattern, path_basename(a->exe)));
}

static ssize_t ancestor_index(const char *pattern, const TaskInfo *t) {
        for (size_t i = 0; i < t->n_ancestors; i++)
                if (ancestor_matches(pattern, &t->ancestors[i]))
                        return (ssize_t) i;
        return -1;
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
        case MATCH_ANCESTOR:
                return ancestor_index(pattern, t) >= 0;
        case MATCH_APP:
                return app_matches(pattern, t->cgroup);
        case MATCH_THREAD:
                return t->thread_any || value_matches(pattern, t->thread_comm);
        default:
                return false;
        }
}

static const char *values_matched(MatchKey k, char * const *values, const TaskInfo *t) {
        for (char * const *p = values; p && *p; p++)
                if (pattern_matches(k, *p, t))
                        return *p;
        return NULL;
}

const char *match_key_matched(const Rule *rule, MatchKey k, const TaskInfo *t) {
        return values_matched(k, rule_match(rule, k), t);
}

char *task_ancestors_format(const TaskInfo *t) {
        size_t size = 1;
        char *s, *p;

        for (size_t i = 0; i < t->n_ancestors; i++)
                size += sizeof(t->ancestors[i].comm) + 16 + 4;
        s = p = malloc(size);
        if (!s)
                return NULL;
        *p = 0;
        for (size_t i = 0; i < t->n_ancestors; i++)
                if (t->ancestors[i].hidden)
                        p += snprintf(p, size - (size_t) (p - s), "%s?", i ? " <- " : "");
                else
                        p += snprintf(p, size - (size_t) (p - s), "%s%.15s[%d]", i ? " <- " : "",
                                      t->ancestors[i].comm, (int) t->ancestors[i].pid);
        return s;
}

ssize_t match_ancestor_matched(const Rule *rule, const TaskInfo *t) {
        ssize_t best = -1;

        for (char * const *p = rule_match(rule, MATCH_ANCESTOR); p && *p; p++) {
                ssize_t i = ancestor_index(*p, t);

                if (i >= 0 && (best < 0 || i < best))
                        best = i;
        }
        return best;
}

bool match_rule(const Rule *rule, const TaskInfo *t, MatchKey *ret_failed) {
        char **p = rule->values;

        /* The given keys' lists lie one after the other, in key order. */
        for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++) {
                char **v;

                if (!(rule->keys & (1U << k)))
                        continue;
                v = p;
                while (*p)
                        p++;
                p++;
                /* A key given with an empty list ("Comm=" reset) matches nothing. */
                if (!values_matched(k, v, t)) {
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

/* A matching rule, in rule order: the first one wins, later ones are shadowed. 1: done, no more wanted. */
static int match_result_add(MatchResult *m, size_t *alloc, const Rule *rule, bool want_shadowed) {
        if (!m->rule) {
                m->rule = rule;
                return want_shadowed ? 0 : 1;
        }
        if (array_grow((void **) &m->shadowed, alloc, m->n_shadowed, sizeof(Rule *)) < 0)
                return -ENOMEM;
        m->shadowed[m->n_shadowed++] = rule;
        return 0;
}

/* rule tried on t and added if it matches: 1 done (no more wanted), 0 go on, < 0 failed (*m emptied). */
static int match_result_try(MatchResult *m, size_t *alloc, const Rule *rule, const TaskInfo *t, bool want_shadowed) {
        int r;

        if (!match_rule(rule, t, NULL))
                return 0;
        r = match_result_add(m, alloc, rule, want_shadowed);
        if (r < 0)
                match_result_done(m);
        return r;
}

/*
 * The first of s's process rules that matches t, in file order; order, when
 * given, lists the n indices to try (ascending), otherwise all n rules are.
 */
static int match_first(const RuleSet *s, const uint32_t *order, size_t n, const TaskInfo *t, bool want_shadowed,
                       MatchResult *ret) {
        MatchResult m = {};
        size_t alloc = 0;
        int r;

        for (size_t i = 0; i < n; i++) {
                const Rule *q = &s->rules[order ? order[i] : i];

                if (q->kind != RULE_PROCESS)
                        continue;
                r = match_result_try(&m, &alloc, q, t, want_shadowed);
                if (r < 0)
                        return r;
                if (r > 0)
                        break;
        }
        *ret = m;
        return m.rule ? 1 : 0;
}

int match_task(const RuleSet *s, const TaskInfo *t, bool want_shadowed, MatchResult *ret) {
        return match_first(s, NULL, s->n_rules, t, want_shadowed, ret);
}

const Rule *match_task_unit_rule(const RuleSet *s, const TaskInfo *t) {
        if (!t->cgroup)
                return NULL;
        for (size_t i = 0; i < s->n_rules; i++)
                if (s->rules[i].kind == RULE_UNIT && match_rule(&s->rules[i], t, NULL))
                        return &s->rules[i];
        return NULL;
}

int match_explain(const RuleSet *s, MatchIndex *ix, const TaskInfo *t, bool want_shadowed, MatchExplain *ret) {
        MatchExplain e = {};
        int r;

        r = ix ? match_index_task(ix, t, want_shadowed, &e.match)
               : s ? match_task(s, t, want_shadowed, &e.match) : 0;
        if (r < 0)
                return r;
        if (e.match.rule) {
                e.how = MATCH_HOW_PROCESS;
                e.rule = e.match.rule;
                if (want_shadowed && s)
                        e.unit_rule = match_task_unit_rule(s, t);
        } else {
                e.rule = s ? match_task_unit_rule(s, t) : NULL;
                e.how = e.rule ? MATCH_HOW_UNIT : MATCH_HOW_NONE;
        }
        *ret = e;
        return 0;
}

void match_explain_done(MatchExplain *e) {
        match_result_done(&e->match);
        *e = (MatchExplain) {};
}

static const char *const match_how_table[_MATCH_HOW_MAX] = {
        [MATCH_HOW_NONE] = "none",
        [MATCH_HOW_PROCESS] = "process",
        [MATCH_HOW_UNIT] = "unit",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(match_how, MatchHow);

const Rule *match_unit(const RuleSet *s, const char *unit) {
        for (size_t i = 0; i < s->n_rules; i++) {
                const Rule *rule = &s->rules[i];

                if (rule->kind == RULE_UNIT && rule_match(rule, MATCH_UNIT) &&
                    any_matches(rule_match(rule, MATCH_UNIT), unit))
                        return rule;
        }
        return NULL;
}

/* ---- the index ---------------------------------------------------------- */

/*
 * Which part of a task a rule is filed under. Every value of the key the
 * rule is filed under is an exact name or has a literal start, and keys
 * are ANDed: a task whose names find nothing in the table cannot match the
 * rule, so trying only what the table finds keeps the result exact.
 */
typedef enum IndexSlot {
        IX_COMM,
        IX_EXE_BASE,
        IX_PARENT,
        IX_CMDLINE,
        IX_CGROUP,
        IX_UNIT,
        IX_USER,
        IX_GROUP,
        _IX_MAX,
} IndexSlot;

/* The order in which keys are tried: the most selective (and cheapest to look up) first. */
static const struct {
        MatchKey key;
        IndexSlot slot;
} index_order[] = {
        { MATCH_COMM, IX_COMM },       { MATCH_EXE, IX_EXE_BASE }, { MATCH_PARENT, IX_PARENT },
        { MATCH_CMDLINE, IX_CMDLINE }, { MATCH_CGROUP, IX_CGROUP }, { MATCH_UNIT, IX_UNIT },
        { MATCH_USER, IX_USER },       { MATCH_GROUP, IX_GROUP },
};

/*
 * One name or prefix for one rule: 16 bytes, as a set has about one per
 * rule. A name several rules file under is several entries; a lookup walks
 * the probe sequence to the first free slot and collects them all.
 */
typedef struct IndexEntry {
        const char *key;  /* NUL-terminated: a rule's value, its literal file name, or an unescaped copy */
        uint32_t tag;     /* hash bits, with slot and prefix in the top four */
        uint32_t rule;
} IndexEntry;

struct MatchIndex {
        const RuleSet *set;
        IndexEntry *entries; /* the open-addressing table itself; key NULL = free */
        size_t table_size;   /* at most 3/4 full */
        size_t n_entries;
        /* distinct prefix lengths per slot, ascending */
        uint32_t *prefix_lens[_IX_MAX];
        size_t n_prefix_lens[_IX_MAX];
        bool slot_used[_IX_MAX];
        uint32_t *unindexed; /* process rules without an indexable key, ascending */
        size_t n_unindexed, n_indexed;
        char **strings;      /* unescaped literals the entries point to */
        size_t n_strings;
        uint32_t *cand;      /* scratch: candidate rule indices of one lookup */
        size_t n_cand, alloc_cand;
        size_t bytes;
};

static uint32_t index_tag(IndexSlot slot, bool prefix, const char *s, size_t len) {
        uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

        for (size_t i = 0; i < len; i++)
                h = (h ^ (unsigned char) s[i]) * 0x100000001b3ULL;
        h ^= h >> 32;
        return ((uint32_t) h & 0x0fffffffU) | (uint32_t) (slot * 2 + prefix) << 28;
}

static bool entry_is(const IndexEntry *x, uint32_t tag, const char *s, size_t len) {
        return x->tag == tag && strncmp(x->key, s, len) == 0 && x->key[len] == 0;
}

/* Where the probe sequence of a tag starts: the table need not be a power of two. */
static size_t index_home(const MatchIndex *ix, uint32_t tag) {
        return (size_t) (((uint64_t) (uint32_t) (tag * 0x9E3779B1U) * ix->table_size) >> 32);
}

static size_t index_next(const MatchIndex *ix, size_t i) {
        return i + 1 == ix->table_size ? 0 : i + 1;
}

static void index_add(MatchIndex *ix, IndexSlot slot, bool prefix, const char *key, size_t len, uint32_t rule) {
        uint32_t tag = index_tag(slot, prefix, key, len);

        for (size_t i = index_home(ix, tag);; i = index_next(ix, i))
                if (!ix->entries[i].key) {
                        ix->entries[i] = (IndexEntry) { .key = key, .tag = tag, .rule = rule };
                        ix->n_entries++;
                        return;
                }
}

static int index_add_prefix_len(MatchIndex *ix, IndexSlot slot, size_t len) {
        size_t n = ix->n_prefix_lens[slot], at = 0;
        uint32_t *v;

        while (at < n && ix->prefix_lens[slot][at] < len)
                at++;
        if (at < n && ix->prefix_lens[slot][at] == len)
                return 0;
        v = reallocarray(ix->prefix_lens[slot], n + 1, sizeof(uint32_t));
        if (!v)
                return -ENOMEM;
        memmove(v + at + 1, v + at, (n - at) * sizeof(uint32_t));
        v[at] = (uint32_t) len;
        ix->prefix_lens[slot] = v;
        ix->n_prefix_lens[slot]++;
        return 0;
}

/*
 * What one value can be filed under: the name itself, the unescaped whole
 * of a glob that has no glob characters left (Foo\[Steam].exe), or the
 * literal start of a glob. False if there is none (a glob that starts
 * with '*', an Exe= path, which matches by inode).
 */
typedef struct IndexKey {
        const char *key;
        size_t len;
        bool prefix;
        char *copy; /* owned, when key is an unescaped literal */
} IndexKey;

static bool index_key_of(MatchKey k, const char *v, IndexKey *ret) {
        bool whole;
        size_t n;
        char *buf;

        *ret = (IndexKey) {};
        if (k == MATCH_EXE && strchr(v, '/')) {
                const char *tail = strrchr(v, '/') + 1;

                /*
                 * A path glob matches the whole path ('*' and '?' match '/' too), so only a
                 * literal last component says what the file name is: /usr/lib/jvm/x/java.
                 */
                if (!string_is_glob(v) || !*tail || strpbrk(tail, "*?[]\\"))
                        return false;
                *ret = (IndexKey) { .key = tail, .len = strlen(tail) };
                return true;
        }
        if (!string_is_glob(v)) {
                *ret = (IndexKey) { .key = v, .len = strlen(v) };
                return true;
        }
        buf = malloc(strlen(v) + 1);
        if (!buf)
                return false;
        n = glob_literal_prefix(v, buf, strlen(v) + 1, &whole);
        if (n == 0) {
                free(buf);
                return false;
        }
        *ret = (IndexKey) { .key = buf, .len = n, .prefix = !whole, .copy = buf };
        return true;
}

/* Can every value of the key be filed? (Nothing allocated.) */
static bool index_key_usable(MatchKey k, char * const *values) {
        if (!values || !values[0])
                return false; /* an empty list matches nothing; no key: anything */
        for (char * const *v = values; *v; v++) {
                bool whole;

                if (k == MATCH_EXE && strchr(*v, '/')) {
                        const char *tail = strrchr(*v, '/') + 1;

                        if (!string_is_glob(*v) || !*tail || strpbrk(tail, "*?[]\\"))
                                return false;
                } else if (string_is_glob(*v) && glob_literal_prefix(*v, NULL, 0, &whole) == 0)
                        return false;
        }
        return true;
}

/* The key a rule is filed under, or -1. */
static int index_pick(const Rule *rule) {
        for (size_t o = 0; o < ELEMENTSOF(index_order); o++)
                if (index_key_usable(index_order[o].key, rule_match(rule, index_order[o].key)))
                        return (int) o;
        return -1;
}

static int index_file_rule(MatchIndex *ix, const Rule *rule, uint32_t i, size_t o) {
        MatchKey k = index_order[o].key;
        IndexSlot slot = index_order[o].slot;

        for (char * const *v = rule_match(rule, k); *v; v++) {
                IndexKey key;

                if (!index_key_of(k, *v, &key))
                        return -ENOMEM; /* usable, so only allocation can fail */
                if (key.copy) {
                        ix->strings[ix->n_strings++] = key.copy;
                        ix->bytes += key.len + 1;
                }
                if (key.prefix && index_add_prefix_len(ix, slot, key.len) < 0)
                        return -ENOMEM;
                index_add(ix, slot, key.prefix, key.key, key.len, i);
        }
        ix->slot_used[slot] = true;
        return 0;
}

MatchIndex *match_index_free(MatchIndex *ix) {
        if (!ix)
                return NULL;
        free(ix->entries);
        for (size_t s = 0; s < _IX_MAX; s++)
                free(ix->prefix_lens[s]);
        free(ix->unindexed);
        for (size_t i = 0; i < ix->n_strings; i++)
                free(ix->strings[i]);
        free(ix->strings);
        free(ix->cand);
        free(ix);
        return NULL;
}

int match_index_new(const RuleSet *s, MatchIndex **ret) {
        _cleanup_(match_index_freep) MatchIndex *ix = NULL;
        _cleanup_(freep) int8_t *pick = NULL;
        size_t n_keys = 0, n_globs = 0, n_unindexed = 0;
        int r;

        ix = calloc(1, sizeof(MatchIndex));
        pick = calloc(s->n_rules + 1, 1);
        if (!ix || !pick)
                return -ENOMEM;
        ix->set = s;
        /* Count first, so that every array is allocated once at its size. */
        for (size_t i = 0; i < s->n_rules; i++) {
                const Rule *rule = &s->rules[i];

                pick[i] = -1;
                if (rule->kind != RULE_PROCESS)
                        continue;
                pick[i] = (int8_t) index_pick(rule);
                if (pick[i] < 0) {
                        n_unindexed++;
                        continue;
                }
                for (char * const *v = rule_match(rule, index_order[pick[i]].key); *v; v++) {
                        n_keys++;
                        n_globs += string_is_glob(*v);
                }
        }
        /* A quarter free keeps probe sequences short, and one free slot ends every lookup. */
        ix->table_size = n_keys * 4 / 3 + 16;
        ix->entries = calloc(ix->table_size, sizeof(IndexEntry));
        ix->strings = calloc(n_globs + 1, sizeof(char *));
        ix->unindexed = calloc(n_unindexed + 1, sizeof(uint32_t));
        if (!ix->entries || !ix->strings || !ix->unindexed)
                return -ENOMEM;

        for (size_t i = 0; i < s->n_rules; i++) {
                if (s->rules[i].kind != RULE_PROCESS)
                        continue;
                if (pick[i] < 0) {
                        ix->unindexed[ix->n_unindexed++] = (uint32_t) i;
                        continue;
                }
                r = index_file_rule(ix, &s->rules[i], (uint32_t) i, (size_t) pick[i]);
                if (r < 0)
                        return r;
                ix->n_indexed++;
        }
        ix->bytes += sizeof(MatchIndex) + ix->table_size * sizeof(IndexEntry) +
                     (n_globs + 1) * sizeof(char *) + (n_unindexed + 1) * sizeof(uint32_t);
        *ret = TAKE_PTR(ix);
        return 0;
}

void match_index_stats(const MatchIndex *ix, MatchIndexStats *ret) {
        *ret = (MatchIndexStats) {
                .indexed = ix->n_indexed,
                .unindexed = ix->n_unindexed,
                .entries = ix->n_entries,
                .bytes = ix->bytes,
        };
}

static int cand_add(MatchIndex *ix, uint32_t rule) {
        if (array_grow((void **) &ix->cand, &ix->alloc_cand, ix->n_cand, sizeof(uint32_t)) < 0)
                return -ENOMEM;
        ix->cand[ix->n_cand++] = rule;
        return 0;
}

/* The rules of every entry that is (slot, prefix, s[0..len)). */
static int index_find(MatchIndex *ix, IndexSlot slot, bool prefix, const char *s, size_t len) {
        uint32_t tag = index_tag(slot, prefix, s, len);
        int r;

        for (size_t i = index_home(ix, tag); ix->entries[i].key; i = index_next(ix, i))
                if (entry_is(&ix->entries[i], tag, s, len)) {
                        r = cand_add(ix, ix->entries[i].rule);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Every entry of the slot that a task's name s finds: the name itself and each literal start it has. */
static int index_lookup(MatchIndex *ix, IndexSlot slot, const char *s) {
        size_t len;
        int r;

        if (!s || !ix->slot_used[slot])
                return 0;
        len = strlen(s);
        r = index_find(ix, slot, false, s, len);
        for (size_t i = 0; r >= 0 && i < ix->n_prefix_lens[slot] && ix->prefix_lens[slot][i] <= len; i++)
                r = index_find(ix, slot, true, s, ix->prefix_lens[slot][i]);
        return r;
}

static bool slot_used(const MatchIndex *ix, IndexSlot slot) {
        return ix->slot_used[slot];
}

static int compare_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

        return x < y ? -1 : x > y;
}

static int index_unit(const char *name, void *ix) {
        int r = index_lookup(ix, IX_UNIT, name);

        return r < 0 ? r : 0;
}

static int index_candidates(MatchIndex *ix, const TaskInfo *t) {
        char num[16], buf[4096];
        int r = 0;

        ix->n_cand = 0;
        r = index_lookup(ix, IX_COMM, t->comm);
        if (r >= 0 && t->exe)
                r = index_lookup(ix, IX_EXE_BASE, path_basename(exe_trimmed(t->exe, buf, sizeof(buf))));
        if (r >= 0)
                r = index_lookup(ix, IX_PARENT, t->parent_comm);
        if (r >= 0 && t->argv && slot_used(ix, IX_CMDLINE))
                for (char * const *a = t->argv; *a && r >= 0; a++) {
                        const char *b = cmdline_word_name(*a);

                        r = index_lookup(ix, IX_CMDLINE, *a);
                        if (r >= 0 && b != *a)
                                r = index_lookup(ix, IX_CMDLINE, b);
                }
        if (r >= 0)
                r = index_lookup(ix, IX_CGROUP, t->cgroup);
        if (r >= 0 && t->cgroup && slot_used(ix, IX_UNIT))
                r = for_each_system_unit(t->cgroup, index_unit, ix); /* what cgroup_path_in_unit() tries */
        if (r >= 0) {
                snprintf(num, sizeof(num), "%u", (unsigned) t->uid);
                r = index_lookup(ix, IX_USER, num);
        }
        if (r >= 0)
                r = index_lookup(ix, IX_USER, t->user);
        if (r >= 0) {
                snprintf(num, sizeof(num), "%u", (unsigned) t->gid);
                r = index_lookup(ix, IX_GROUP, num);
        }
        if (r >= 0)
                r = index_lookup(ix, IX_GROUP, t->group);
        if (r < 0)
                return r;
        if (ix->n_cand + ix->n_unindexed > ix->alloc_cand) {
                size_t na = (ix->n_cand + ix->n_unindexed) * 2;
                uint32_t *c = reallocarray(ix->cand, na, sizeof(uint32_t));

                if (!c)
                        return -ENOMEM;
                ix->cand = c;
                ix->alloc_cand = na;
        }
        if (ix->n_unindexed > 0) {
                memcpy(ix->cand + ix->n_cand, ix->unindexed, ix->n_unindexed * sizeof(uint32_t));
                ix->n_cand += ix->n_unindexed;
        }
        /* Rule order decides, as in match_task(). */
        if (ix->n_cand > 1) {
                size_t w = 1;

                qsort(ix->cand, ix->n_cand, sizeof(uint32_t), compare_u32);
                for (size_t i = 1; i < ix->n_cand; i++)
                        if (ix->cand[i] != ix->cand[w - 1])
                                ix->cand[w++] = ix->cand[i];
                ix->n_cand = w;
        }
        return 0;
}

int match_index_task(MatchIndex *ix, const TaskInfo *t, bool want_shadowed, MatchResult *ret) {
        int r;

        r = index_candidates(ix, t);
        if (r < 0)
                return r;
        /* The candidates are process rules only, sorted: the order of the file. */
        return match_first(ix->set, ix->cand, ix->n_cand, t, want_shadowed, ret);
}
