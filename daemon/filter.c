/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Building the prefilter's contents from the rules. */

#include "filter.h"
#include "util.h"

void filter_spec_done(FilterSpec *f) {
        free(f->pass_all_reason);
        free(f->comm);
        free(f->exe);
        free(f->parent);
        strv_free(f->users);
        strv_free(f->groups);
        strv_free(f->units);
        *f = (FilterSpec) {};
}

static const char *base_of(const char *p) {
        const char *s = strrchr(p, '/');

        return s ? s + 1 : p;
}

/* Can the value be a trie entry for names of at most max-1 characters? */
static bool name_expressible(const char *v, size_t max, FilterName *ret) {
        size_t l = strlen(v);
        FilterName n = {};

        if (l == 0)
                return false;
        if (!string_is_glob(v)) {
                if (l >= max) {
                        /* The kernel side sees max-1 characters: match the prefix it sees. */
                        memcpy(n.name, v, max - 1);
                        n.len = (unsigned) (max - 1);
                } else {
                        memcpy(n.name, v, l);
                        n.len = (unsigned) l;
                        n.exact = true;
                }
                *ret = n;
                return true;
        }
        /* "prefix*" with no other glob character */
        if (v[l - 1] != '*' || strpbrk(v, "?[") || memchr(v, '*', l - 1) || l - 1 >= max)
                return false;
        if (l == 1)
                return false; /* "*" alone is everything */
        memcpy(n.name, v, l - 1);
        n.len = (unsigned) (l - 1);
        *ret = n;
        return true;
}

static bool all_expressible(char * const *values, size_t max, bool basename) {
        FilterName n;

        if (!values || !values[0])
                return false;
        for (char * const *v = values; *v; v++)
                if (!name_expressible(basename ? base_of(*v) : *v, max, &n))
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

static int add_names(FilterName **list, size_t *n, char * const *values, size_t max, bool basename) {
        for (char * const *v = values; *v; v++) {
                FilterName *nl;

                nl = reallocarray(*list, *n + 1, sizeof(FilterName));
                if (!nl)
                        return -ENOMEM;
                *list = nl;
                (void) name_expressible(basename ? base_of(*v) : *v, max, &(*list)[*n]);
                (*n)++;
        }
        return 0;
}

/*
 * Exe= with a path matches the file (its inode), however it was executed:
 * /usr/bin/python3 is the file python3.11 too. The kernel side knows only
 * a name, so the name of the file the path resolves to is allowed as well.
 */
static int add_exe_targets(FilterName **list, size_t *n, char * const *values, size_t max) {
        for (char * const *v = values; *v; v++) {
                _cleanup_(freep) char *target = NULL;
                char *one[2];

                if ((*v)[0] != '/' || string_is_glob(*v))
                        continue;
                target = realpath(*v, NULL);
                if (!target || strcmp(base_of(target), base_of(*v)) == 0 ||
                    !name_expressible(base_of(target), max, &(FilterName) {}))
                        continue;
                one[0] = target;
                one[1] = NULL;
                if (add_names(list, n, one, max, true) < 0)
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
        int r = 0;

        for (size_t i = 0; i < s->n_rules && r >= 0; i++) {
                const Rule *rule = &s->rules[i];

                if (rule->kind != RULE_PROCESS)
                        continue;
                if (rule->match[MATCH_CMDLINE])
                        f.want_args = true;
                if (f.pass_all)
                        continue;

                if (all_expressible(rule->match[MATCH_COMM], 16, false))
                        r = add_names(&f.comm, &f.n_comm, rule->match[MATCH_COMM], 16, false);
                else if (all_expressible(rule->match[MATCH_EXE], 32, true))
                        r = add_names(&f.exe, &f.n_exe, rule->match[MATCH_EXE], 32, true) ?:
                            add_exe_targets(&f.exe, &f.n_exe, rule->match[MATCH_EXE], 32);
                else if (all_expressible(rule->match[MATCH_PARENT], 16, false))
                        r = add_names(&f.parent, &f.n_parent, rule->match[MATCH_PARENT], 16, false);
                else if (ids_expressible(rule->match[MATCH_USER]))
                        r = add_strv(&f.users, rule->match[MATCH_USER]);
                else if (ids_expressible(rule->match[MATCH_GROUP]))
                        r = add_strv(&f.groups, rule->match[MATCH_GROUP]);
                else if (rule->match[MATCH_UNIT] && rule->match[MATCH_UNIT][0])
                        r = add_strv(&f.units, rule->match[MATCH_UNIT]);
                else {
                        f.pass_all = true;
                        if (asprintf(&f.pass_all_reason,
                                     "[Process %s] %s:%u has no key the kernel can check (exact names or 'prefix*' "
                                     "of Comm=, Exe=, Parent=, or User=, Group=, Unit=)",
                                     rule->name, rule->file, rule->line) < 0)
                                r = -ENOMEM;
                }
        }
        if (r >= 0 && !f.pass_all &&
            (f.n_comm > capacity || f.n_exe > capacity || f.n_parent > capacity)) {
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
