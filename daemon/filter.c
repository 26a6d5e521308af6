/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Building the prefilter's contents from the rules. */

#include "filter.h"
#include "latnice/event.h"
#include "util.h"

void filter_spec_done(FilterSpec *f) {
        free(f->pass_all_reason);
        free(f->comm);
        free(f->exe);
        free(f->parent);
        free(f->ancestor);
        strv_free(f->users);
        strv_free(f->groups);
        strv_free(f->units);
        *f = (FilterSpec) {};
}

/*
 * What the kernel can check of one name value, seen in a buffer of max
 * bytes (max-1 characters and a NUL): the whole name, or a prefix of it.
 * A glob counts by its literal start, or as its whole literal when it has
 * no glob character left once unescaped ("Foo\\[Steam].exe").
 */
static bool name_expressible(const char *v, size_t max, FilterName *ret) {
        char lit[256];
        size_t l = strlen(v);
        bool whole = true;
        FilterName n = {};

        if (l == 0)
                return false;
        if (string_is_glob(v)) {
                l = glob_literal_prefix(v, lit, sizeof(lit), &whole);
                if (l == 0)
                        return false; /* "*x", "?x", "[ab]x": no literal start */
                if (l >= sizeof(lit)) {
                        l = sizeof(lit) - 1;
                        whole = false;
                }
                v = lit;
        }
        if (l >= max) {
                /* The kernel side sees max-1 characters: match the prefix it sees. */
                memcpy(n.name, v, max - 1);
                n.len = (unsigned) (max - 1);
        } else {
                memcpy(n.name, v, l);
                n.len = (unsigned) l;
                n.exact = whole;
        }
        *ret = n;
        return true;
}

/*
 * The file name an Exe= value stands for. A path without glob characters
 * names its file; a path glob matches the whole path ('*' and '?' match
 * '/' too), so only a literal last component says what the file name is
 * (/usr/lib/jvm/x/java); "/opt/x/ga*" would also match /opt/x/ga/y.
 */
static const char *exe_name_of(const char *v) {
        const char *tail = strrchr(v, '/');

        if (!tail)
                return v;
        tail++;
        if (string_is_glob(v) && strpbrk(tail, "*?[]\\"))
                return NULL;
        return tail;
}

static bool value_expressible(const char *v, size_t max, bool exe, FilterName *ret) {
        if (exe) {
                v = exe_name_of(v);
                if (!v)
                        return false;
        }
        return name_expressible(v, max, ret);
}

static bool all_expressible(char * const *values, size_t max, bool exe) {
        FilterName n;

        if (!values || !values[0])
                return false;
        for (char * const *v = values; *v; v++)
                if (!value_expressible(*v, max, exe, &n))
                        return false;
        return true;
}

/*
 * Ancestor= names the kernel compares whole with the ancestors' command
 * names and file names; paths and globs it cannot check.
 */
static bool ancestors_expressible(char * const *values) {
        FilterName n;

        if (!values || !values[0])
                return false;
        for (char * const *v = values; *v; v++)
                if (strchr(*v, '/') || string_is_glob(*v) || !name_expressible(*v, LATNICE_EXE_BASE_LEN, &n) ||
                    !n.exact)
                        return false;
        return true;
}

static bool ids_expressible(char * const *values) {
        if (!values || !values[0])
                return false;
        for (char * const *v = values; *v; v++)
                if (string_is_glob(*v))
                        return false;
        return true;
}

bool filter_rule_checkable(const Rule *rule) {
        return all_expressible(rule_match(rule, MATCH_COMM), LATNICE_COMM_LEN, false) ||
               all_expressible(rule_match(rule, MATCH_EXE), LATNICE_EXE_BASE_LEN, true) ||
               all_expressible(rule_match(rule, MATCH_PARENT), LATNICE_COMM_LEN, false) ||
               ancestors_expressible(rule_match(rule, MATCH_ANCESTOR)) ||
               ids_expressible(rule_match(rule, MATCH_USER)) || ids_expressible(rule_match(rule, MATCH_GROUP)) ||
               (rule_match(rule, MATCH_UNIT) && rule_match(rule, MATCH_UNIT)[0]);
}

void filter_names_count(const FilterName *names, size_t n, size_t *ret_exact, size_t *ret_prefix) {
        size_t e = 0;

        for (size_t i = 0; i < n; i++)
                e += names[i].exact;
        *ret_exact = e;
        *ret_prefix = n - e;
}

static int add_names(FilterName **list, size_t *n, size_t *alloc, char * const *values, size_t max, bool exe) {
        for (char * const *v = values; *v; v++) {
                if (array_grow((void **) list, alloc, *n, sizeof(FilterName)) < 0)
                        return -ENOMEM;
                (void) value_expressible(*v, max, exe, &(*list)[*n]);
                (*n)++;
        }
        return 0;
}

/*
 * Exe= with a path matches the file (its inode), however it was executed:
 * /usr/bin/python3 is the file python3.11 too. The kernel side knows only
 * a name, so the name of the file the path resolves to is allowed as well.
 */
static int add_exe_targets(FilterName **list, size_t *n, size_t *alloc, char * const *values, size_t max) {
        for (char * const *v = values; *v; v++) {
                _cleanup_(freep) char *target = NULL;
                char *one[2];

                if ((*v)[0] != '/' || string_is_glob(*v))
                        continue;
                target = realpath(*v, NULL);
                if (!target || strcmp(path_basename(target), path_basename(*v)) == 0 ||
                    !name_expressible(path_basename(target), max, &(FilterName) {}))
                        continue;
                one[0] = target;
                one[1] = NULL;
                if (add_names(list, n, alloc, one, max, true) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int add_strv(char ***list, char * const *values) {
        for (char * const *v = values; *v; v++)
                if (!strv_contains(*list, *v) && strv_extend(list, *v) < 0)
                        return -ENOMEM;
        return 0;
}

int filter_spec_build(const RuleSet *s, size_t capacity, FilterSpec *ret) {
        FilterSpec f = {};
        size_t a_comm = 0, a_exe = 0, a_parent = 0, a_ancestor = 0;
        int r = 0;

        for (size_t i = 0; i < s->n_rules && r >= 0; i++) {
                const Rule *rule = &s->rules[i];

                if (rule->kind != RULE_PROCESS)
                        continue;
                if (rule_match(rule, MATCH_CMDLINE))
                        f.want_args = true;
                if (rule_match(rule, MATCH_COMM)) {
                        f.want_renames = true;
                        /* Renames are checked against the comm names only, whichever key files the rule. */
                        if (!all_expressible(rule_match(rule, MATCH_COMM), LATNICE_COMM_LEN, false))
                                f.renames_all = true;
                }
                if (rule_match(rule, MATCH_THREAD)) {
                        f.want_thread_renames = true;
                        /* A thread's rename is checked against the comm names: they take Thread='s too (an exec
                         * of a program named like a thread passes as well, which only widens the filter). */
                        if (!all_expressible(rule_match(rule, MATCH_THREAD), LATNICE_COMM_LEN, false))
                                f.thread_renames_all = true;
                        else if (!f.pass_all)
                                r = add_names(&f.comm, &f.n_comm, &a_comm, rule_match(rule, MATCH_THREAD),
                                              LATNICE_COMM_LEN, false);
                        if (r < 0)
                                break;
                }
                if (f.pass_all)
                        continue;

                if (all_expressible(rule_match(rule, MATCH_COMM), LATNICE_COMM_LEN, false))
                        r = add_names(&f.comm, &f.n_comm, &a_comm, rule_match(rule, MATCH_COMM), LATNICE_COMM_LEN,
                                      false);
                else if (all_expressible(rule_match(rule, MATCH_EXE), LATNICE_EXE_BASE_LEN, true))
                        r = add_names(&f.exe, &f.n_exe, &a_exe, rule_match(rule, MATCH_EXE), LATNICE_EXE_BASE_LEN,
                                      true) ?:
                            add_exe_targets(&f.exe, &f.n_exe, &a_exe, rule_match(rule, MATCH_EXE),
                                            LATNICE_EXE_BASE_LEN);
                else if (all_expressible(rule_match(rule, MATCH_PARENT), LATNICE_COMM_LEN, false))
                        r = add_names(&f.parent, &f.n_parent, &a_parent, rule_match(rule, MATCH_PARENT),
                                      LATNICE_COMM_LEN, false);
                else if (ancestors_expressible(rule_match(rule, MATCH_ANCESTOR)))
                        r = add_names(&f.ancestor, &f.n_ancestor, &a_ancestor, rule_match(rule, MATCH_ANCESTOR),
                                      LATNICE_EXE_BASE_LEN, false);
                else if (ids_expressible(rule_match(rule, MATCH_USER)))
                        r = add_strv(&f.users, rule_match(rule, MATCH_USER));
                else if (ids_expressible(rule_match(rule, MATCH_GROUP)))
                        r = add_strv(&f.groups, rule_match(rule, MATCH_GROUP));
                else if (rule_match(rule, MATCH_UNIT) && rule_match(rule, MATCH_UNIT)[0])
                        r = add_strv(&f.units, rule_match(rule, MATCH_UNIT));
                else {
                        f.pass_all = true;
                        if (asprintf(&f.pass_all_reason,
                                     "[Process %s] %s:%u has no key the kernel can check (a name or a glob with a "
                                     "literal start in Comm=, Exe=, Parent=, a name in Ancestor=, or User=, "
                                     "Group=, Unit=)",
                                     rule->name, rule->file, rule->line) < 0)
                                r = -ENOMEM;
                }
        }
        if (r >= 0 && !f.pass_all &&
            (f.n_comm > capacity || f.n_exe > capacity || f.n_parent > capacity || f.n_ancestor > capacity)) {
                f.pass_all = true;
                if (asprintf(&f.pass_all_reason, "more than %zu names in one prefilter map", capacity) < 0)
                        r = -ENOMEM;
        }
        if (r < 0) {
                filter_spec_done(&f);
                return r;
        }
        *ret = f;
        return 0;
}
