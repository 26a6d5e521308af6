/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rules on disk, as latniced would load them, and the verbs that read
 * them without a daemon: check, cat-config, and explain when latniced is
 * not asked (ctl-task.c decides).
 */

#include <ctype.h>
#include <fcntl.h>

#include "ctl.h"
#include "filter.h"
#include "match.h"
#include "proc.h"
#include "profile.h"
#include "util.h"

int ctl_load_rules(const Ctl *ctl, RuleSet **ret) {
        _cleanup_(freep) char *name = NULL, *path = NULL, *warning = NULL;
        int r;

        r = profile_resolve(&ctl->tree, &name, &path, &warning);
        if (warning)
                fprintf(stderr, "%s, ignoring.\n", warning);
        if (r < 0)
                return r;
        return rule_set_load(ctl->tree.root, name, path, ret);
}

bool ctl_wants_offline(const Ctl *ctl) {
        return ctl->tree.root || ctl->tree.profile || ctl->tree.profile_dir || ctl->tree.no_profile;
}

/*
 * A verb's rules: the files given, or (files NULL) what latniced would load.
 * CTL_EXIT_OK and *ret; or it said why not and returns CTL_EXIT_FAILURE.
 */
static int load_rules_or_fail(const Ctl *ctl, char * const *files, RuleSet **ret) {
        int r;

        r = files ? rule_set_load_files(files, ret) : ctl_load_rules(ctl, ret);
        if (r < 0) {
                fprintf(stderr, "Failed to load rules: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

static void print_errors(const RuleSet *s) {
        for (size_t i = 0; i < s->n_errors; i++) {
                char buf[1024];

                rule_error_format(&s->errors[i], buf, sizeof(buf));
                fprintf(stderr, "%s\n", buf);
        }
}

/*
 * "Foo[Steam].exe" in a rule set copied from elsewhere is usually a file
 * name, but as a glob "[Steam]" matches one letter. A bracket of three or
 * more letters and nothing else is worth a word.
 */
static const char *letter_class(const char *v) {
        for (const char *p = v; *p; p++) {
                const char *q;

                if (*p == '\\' && p[1]) {
                        p++;
                        continue;
                }
                if (*p != '[')
                        continue;
                for (q = p + 1; isalpha((unsigned char) *q); q++)
                        ;
                if (*q == ']' && q - p > 3)
                        return p;
        }
        return NULL;
}

/* Warnings: the rule loads and works, at a cost or with a meaning the author may not have meant. */
static size_t print_warnings(const RuleSet *s) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_rules; i++) {
                const Rule *rule = &s->rules[i];

                if (rule->kind != RULE_PROCESS)
                        continue;
                if (!filter_rule_checkable(rule)) {
                        fprintf(stderr,
                                "%s:%u: warning: [Process %s] has nothing the kernel can check, so every exec on the "
                                "machine wakes latniced to match it (a wakeup and a few microseconds per exec, about "
                                "10 times the daemon's CPU); give it Comm=, Exe= (a file name), Parent=, Ancestor= (a "
                                "name), User=, Group= or Unit=, or globs with a literal start (\"game*\", not "
                                "\"*game\"); App=, Cgroup= and Thread= the kernel cannot check.\n",
                                rule->file, rule->line, rule->name);
                        n++;
                }
                for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++)
                        for (char **v = rule_match(rule, k); v && *v; v++) {
                                const char *b = letter_class(*v);

                                if (!b)
                                        continue;
                                fprintf(stderr,
                                        "%s:%u: warning: %s=%s is a glob in which %.*s matches one letter; if it is "
                                        "part of the name, write %.*s\\%s\n",
                                        rule->file, rule->line, match_key_to_string(k), *v,
                                        (int) (strchr(b, ']') - b + 1), b, (int) (b - *v), *v, b);
                                n++;
                        }
        }
        return n;
}

int verb_check(Ctl *ctl) {
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        size_t active = 0, warnings;
        int r;

        r = load_rules_or_fail(ctl, ctl->n_args > 0 ? ctl->args : NULL, &s);
        if (r != CTL_EXIT_OK)
                return r;
        print_errors(s);
        warnings = print_warnings(s);
        for (size_t i = 0; i < s->n_files; i++)
                if (s->files[i].state == CONF_FILE_ACTIVE)
                        active++;
        printf("%zu rule%s from %zu file%s, %zu error%s, %zu warning%s.\n",
               s->n_rules, s->n_rules == 1 ? "" : "s",
               active, active == 1 ? "" : "s",
               s->n_errors, s->n_errors == 1 ? "" : "s",
               warnings, warnings == 1 ? "" : "s");
        return s->n_errors > 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}

int verb_cat_config(Ctl *ctl) {
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        int r;

        r = load_rules_or_fail(ctl, NULL, &s);
        if (r != CTL_EXIT_OK)
                return r;
        if (s->n_files == 0)
                printf("# no rule files in %s, %s or %s\n", rule_dirs[0], rule_dirs[1], rule_dirs[2]);
        for (size_t i = 0; i < s->n_files; i++) {
                const ConfFile *f = &s->files[i];
                _cleanup_(freep) char *buf = NULL;

                if (i > 0)
                        putchar('\n');
                switch (f->state) {
                case CONF_FILE_HIDDEN:
                        printf("# %s (hidden by %s)\n", f->shown, f->hidden_by);
                        continue;
                case CONF_FILE_MASKED:
                        printf("# %s (masked)\n", f->shown);
                        continue;
                case CONF_FILE_BROKEN:
                        printf("# %s (not readable as a rule file, see 'latnicectl check')\n", f->shown);
                        continue;
                case CONF_FILE_ACTIVE:
                        break;
                }
                if (f->profile)
                        printf("# %s (profile %s)\n", f->shown, s->profile);
                else
                        printf("# %s\n", f->shown);
                r = read_full_file(AT_FDCWD, f->path, RULE_FILE_MAX_SIZE, &buf, NULL);
                if (r < 0) {
                        printf("# (cannot read: %s)\n", strerror(-r));
                        continue;
                }
                fputs(buf, stdout);
                if (*buf && buf[strlen(buf) - 1] != '\n')
                        putchar('\n');
        }
        print_errors(s);
        return CTL_EXIT_OK;
}

static void print_rule_ref(const Rule *rule) {
        char ref[512];

        rule_format_ref(rule, ref, sizeof(ref));
        fputs(ref, stdout);
}

static void print_task(const TaskInfo *t) {
        if (t->pid > 0)
                printf("Process %d\n", (int) t->pid);
        else
                printf("Process (described on the command line)\n");
        printf("  comm:    %s\n", t->comm ?: "-");
        printf("  exe:     %s\n", t->exe ?: "-");
        if (t->argv) {
                _cleanup_(freep) char *j = strv_join(t->argv, " ");
                printf("  cmdline: %s\n", j ?: "-");
        } else
                printf("  cmdline: -\n");
        printf("  parent:  %s\n", t->parent_comm ?: "-");
        {
                _cleanup_(freep) char *app = cgroup_path_app(t->cgroup);

                if (app)
                        printf("  app:     %s\n", app);
        }
        if (t->ancestors) {
                _cleanup_(freep) char *a = task_ancestors_format(t);

                printf("  ancestors: %s\n", a && *a ? a : "-");
        }
        if (t->pid > 0) {
                printf("  user:    %s (%u)\n", t->user ?: "?", (unsigned) t->uid);
                printf("  group:   %s (%u)\n", t->group ?: "?", (unsigned) t->gid);
        } else {
                printf("  user:    %s\n", t->user ?: "-");
                printf("  group:   %s\n", t->group ?: "-");
        }
        printf("  cgroup:  %s\n", t->cgroup ?: "-");
}

static int explain_task(const Ctl *ctl, const TaskInfo *t, bool verbose) {
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        _cleanup_(match_explain_done) MatchExplain ex = {};
        _cleanup_(freep) char *unit = NULL;
        int r;

        r = load_rules_or_fail(ctl, NULL, &s);
        if (r != CTL_EXIT_OK)
                return r;
        if (s->n_errors > 0)
                fprintf(stderr,
                        "Failed to load %zu rule%s: errors in the rule files (see 'latnicectl check'), explaining "
                        "with the rules that loaded.\n", s->n_errors, s->n_errors == 1 ? "" : "s");

        print_task(t);
        putchar('\n');

        r = match_explain(s, NULL, t, true, &ex);
        if (r < 0) {
                fprintf(stderr, "Out of memory.\n");
                return CTL_EXIT_FAILURE;
        }
        switch (ex.how) {
        case MATCH_HOW_PROCESS:
                printf("Matched:  ");
                print_rule_ref(ex.rule);
                printf(" -> LatencyNice=%d%s\n", ex.rule->latency_nice, ex.rule->override ? " (Override=yes)" : "");
                printf("  because");
                for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++) {
                        if (!rule_match(ex.rule, k))
                                continue;
                        printf(" %s=%s", match_key_to_string(k), match_key_matched(ex.rule, k, t));
                        if (k == MATCH_ANCESTOR) {
                                ssize_t i = match_ancestor_matched(ex.rule, t);

                                if (i >= 0)
                                        printf(" (%.15s[%d], %zd level%s up)", t->ancestors[i].comm,
                                               (int) t->ancestors[i].pid, i + 1, i == 0 ? "" : "s");
                        }
                }
                printf(" matched\n");
                break;
        case MATCH_HOW_UNIT:
                /* Without a process rule, a unit rule gives its value per task (on kernels without a cgroup knob). */
                printf("Matched:  ");
                print_rule_ref(ex.rule);
                printf(" -> LatencyNice=%d, through the unit the process runs in\n", ex.rule->latency_nice);
                break;
        default:
                printf("Matched:  no rule; latniced leaves this process alone\n");
        }
        for (size_t i = 0; i < ex.match.n_shadowed; i++) {
                printf("Shadowed: ");
                print_rule_ref(ex.match.shadowed[i]);
                printf(" -> LatencyNice=%d (an earlier rule wins)\n", ex.match.shadowed[i]->latency_nice);
        }
        if (ex.unit_rule) {
                printf("Unit:     ");
                print_rule_ref(ex.unit_rule);
                printf(" -> LatencyNice=%d for the unit; the process rule decides this process\n",
                       ex.unit_rule->latency_nice);
        }
        if (verbose)
                for (size_t i = 0; i < s->n_rules; i++) {
                        const Rule *q = &s->rules[i];
                        MatchKey failed = 0;

                        if (q->kind != RULE_PROCESS || match_rule(q, t, &failed))
                                continue;
                        printf("No match: ");
                        print_rule_ref(q);
                        {
                                _cleanup_(freep) char *key = rule_format_key(q, failed);

                                printf(": %s did not match\n", key ?: "?");
                        }
                }
        unit = cgroup_path_unit(t->cgroup);
        if (unit)
                printf("Unit of the process: %s\n", unit);
        return CTL_EXIT_OK;
}

bool ctl_explain_described(const Ctl *ctl) {
        return ctl->comm || ctl->exe || ctl->cmdline || ctl->parent || ctl->user || ctl->group || ctl->cgroup;
}

/* --user=/--group= take a name or a number. */
static void name_or_id(const char *arg, const char **ret_name, unsigned *ret_id) {
        unsigned id;

        if (sscanf(arg, "%u", &id) == 1 && strspn(arg, "0123456789") == strlen(arg))
                *ret_id = id;
        else
                *ret_name = arg;
}

int ctl_explain_offline(Ctl *ctl, pid_t pid) {
        TaskInfo t = { .uid = (uid_t) -1, .gid = (gid_t) -1 };
        bool described = ctl_explain_described(ctl);
        int r;

        if ((pid > 0) == described)
                return ctl_usage_error(ctl, "Give either --pid=PID or a description (--comm=, --exe=, ...), not %s.",
                                       described ? "both" : "neither");

        if (pid > 0) {
                _cleanup_(closep) int proc_fd = -1;
                ProcTask p = {};

                proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (proc_fd < 0) {
                        fprintf(stderr, "Failed to open /proc: %m\n");
                        return CTL_EXIT_FAILURE;
                }
                r = proc_task_read(proc_fd, pid, PROC_ALL, &p);
                if (r < 0) {
                        fprintf(stderr, "Failed to read PID %d: %s\n", (int) pid, strerror(-r));
                        return r == -ESRCH ? CTL_EXIT_NO_PROCESS :
                               r == -EACCES || r == -EPERM ? CTL_EXIT_PERMISSION : CTL_EXIT_FAILURE;
                }
                if (p.stat.flags & PROC_PF_KTHREAD)
                        printf("Note: %d is a kernel thread; latniced never changes kernel threads.\n", (int) pid);
                proc_task_to_info(&p, &t);
                r = explain_task(ctl, &t, ctl->verbose);
                proc_task_done(&p);
                return r;
        }
        t.comm = ctl->comm;
        t.exe = ctl->exe;
        t.argv = ctl->cmdline;
        t.parent_comm = ctl->parent;
        if (ctl->user)
                name_or_id(ctl->user, &t.user, &t.uid);
        if (ctl->group)
                name_or_id(ctl->group, &t.group, &t.gid);
        t.cgroup = ctl->cgroup;
        return explain_task(ctl, &t, ctl->verbose);
}
