/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rules in force (see manager-rules.h). A reload builds the new set,
 * its index and prefilter aside and swaps them in only if it adds no
 * errors; names in User=/Group= resolve to ids for the prefilter, which
 * stays open while one does not resolve yet.
 */

#include <grp.h>
#include <inttypes.h>
#include <pwd.h>

#include "dir-watch.h"
#include "event-util.h"
#include "log.h"
#include "manager-rules.h"
#include "manager-sources.h"
#include "profile.h"
#include "util.h"

static int manager_refresh_watches(Manager *m);

static bool rule_errors_subset(const RuleSet *new, const RuleSet *old) {
        for (size_t i = 0; i < new->n_errors; i++) {
                bool found = false;

                for (size_t j = 0; old && j < old->n_errors && !found; j++)
                        found = streq_ptr(new->errors[i].file, old->errors[j].file) &&
                                new->errors[i].line == old->errors[j].line &&
                                streq_ptr(new->errors[i].message, old->errors[j].message);
                if (!found)
                        return false;
        }
        return true;
}

static void log_rule_errors(const RuleSet *s, int level) {
        for (size_t i = 0; i < s->n_errors; i++) {
                char buf[1024];

                rule_error_format(&s->errors[i], buf, sizeof(buf));
                log_full_errno(level, 0, "%s", buf);
        }
}

static int manager_resolve_profile(Manager *m, char **ret_name, char **ret_path) {
        const RuleTreeOptions o = {
                .root = m->options.root,
                .profile = m->options.profile,
                .profile_dir = m->options.profile_dir,
                .no_profile = m->options.no_profile,
        };
        _cleanup_(freep) char *warning = NULL;
        int r;

        r = profile_resolve(&o, ret_name, ret_path, &warning);
        if (warning)
                log_warning("%s, ignoring.", warning);
        return r;
}

/* Names to ids for the prefilter; *ret_unresolved: the first name NSS does not know (yet). */
static int resolve_ids(char * const *values, bool group, uint32_t **ret, size_t *ret_n, const char **ret_unresolved) {
        _cleanup_(freep) uint32_t *v = NULL;
        size_t n = 0;

        for (char * const *i = values; i && *i; i++) {
                uint64_t id;
                uint32_t *nv;

                if (safe_atou64(*i, &id) < 0 || id > UINT32_MAX) {
                        struct passwd *pw;
                        struct group *gr;

                        if (group) {
                                gr = getgrnam(*i);
                                if (!gr) {
                                        if (!*ret_unresolved)
                                                *ret_unresolved = *i;
                                        continue;
                                }
                                id = gr->gr_gid;
                        } else {
                                pw = getpwnam(*i);
                                if (!pw) {
                                        if (!*ret_unresolved)
                                                *ret_unresolved = *i;
                                        continue;
                                }
                                id = pw->pw_uid;
                        }
                }
                nv = reallocarray(v, n + 1, sizeof(uint32_t));
                if (!nv)
                        return -ENOMEM;
                v = nv;
                v[n++] = (uint32_t) id;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

static int manager_on_name_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        manager_name_cache_flush(m);
        (void) manager_update_filter(m);
        return 0;
}

static void manager_arm_name_retry(Manager *m, bool on) {
        int r;

        if (!on) {
                if (m->name_retry_timer)
                        (void) sd_event_source_set_enabled(m->name_retry_timer, SD_EVENT_OFF);
                return;
        }
        r = event_reset_time_relative(m->event, &m->name_retry_timer, CLOCK_MONOTONIC, 30 * 1000 * 1000,
                                      1000 * 1000, manager_on_name_retry, m, "name-retry", false);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the name lookup retry: %m");
}

int manager_update_filter(Manager *m) {
        _cleanup_(freep) uint32_t *uids = NULL, *gids = NULL;
        struct timespec t0, t1;
        _cleanup_(freep) uint64_t *cgroup_ids = NULL;
        size_t n_uids = 0, n_gids = 0, n_cgroup_ids = 0;
        FilterSpec f = {};
        int r;

        r = filter_spec_build(m->rules, FILTER_NAMES_MAX, &f);
        if (r < 0)
                return log_oom();
        /* Units are known by cgroup id once systemd told us about them; until then let everything through. */
        r = m->hooks.units_filter_ids ? m->hooks.units_filter_ids(m, &cgroup_ids, &n_cgroup_ids) : -ENOTCONN;
        if (r < 0 && !f.pass_all && f.units) {
                f.pass_all = true;
                free(f.pass_all_reason);
                f.pass_all_reason = strdup("rules match on Unit= only, and systemd has not told us the units yet");
        }
        filter_spec_done(&m->filter);
        m->filter = f;

        m->needs_cgroup = m->needs_names = m->needs_parent = m->needs_exe = m->needs_ancestors = false;
        for (size_t i = 0; i < m->rules->n_rules; i++) {
                const Rule *rule = &m->rules->rules[i];

                if (rule_match(rule, MATCH_EXE))
                        m->needs_exe = true;

                if (rule_match(rule, MATCH_CGROUP) || rule_match(rule, MATCH_UNIT) || rule_match(rule, MATCH_APP) ||
                    rule->kind == RULE_UNIT)
                        m->needs_cgroup = true;
                if (rule_match(rule, MATCH_PARENT))
                        m->needs_parent = true;
                if (rule_match(rule, MATCH_ANCESTOR))
                        m->needs_ancestors = true;
                for (MatchKey k = MATCH_USER; k <= MATCH_GROUP; k++)
                        for (char **v = rule_match(rule, k); v && *v; v++) {
                                uint64_t id;

                                if (safe_atou64(*v, &id) < 0)
                                        m->needs_names = true;
                        }
        }

        if (!m->bpf) {
                free(m->prefilter);
                m->prefilter = strdup("none: the event source has no in-kernel filter");
                return 0;
        }
        {
                const char *unresolved = NULL;

                r = resolve_ids(m->filter.users, false, &uids, &n_uids, &unresolved);
                if (r >= 0)
                        r = resolve_ids(m->filter.groups, true, &gids, &n_gids, &unresolved);
                if (r < 0)
                        return log_oom();
                /*
                 * A name NSS does not know yet (a user added later, LDAP not up at boot) may match a
                 * process any moment: the filter stays open until it resolves, and we ask again when
                 * passwd/group change and every half minute.
                 */
                if (unresolved && !m->filter.pass_all) {
                        m->filter.pass_all = true;
                        free(m->filter.pass_all_reason);
                        if (asprintf(&m->filter.pass_all_reason, "the user or group '%s' does not resolve (yet)",
                                     unresolved) < 0)
                                m->filter.pass_all_reason = NULL;
                }
                manager_arm_name_retry(m, unresolved != NULL);
        }
        clock_gettime(CLOCK_MONOTONIC, &t0);
        r = exec_bpf_set_filter(m->bpf, &m->filter, uids, n_uids, gids, n_gids, cgroup_ids, n_cgroup_ids);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        m->prefilter_memory = exec_bpf_filter_memory(m->bpf);
        free(m->prefilter);
        m->prefilter = NULL;
        if (r < 0) {
                log_warning_errno(r, "Failed to load the in-kernel prefilter, every exec wakes the daemon: %m");
                if (asprintf(&m->prefilter, "off: the maps could not be loaded: %s", strerror(-r)) < 0)
                        m->prefilter = NULL;
        } else if (m->filter.pass_all) {
                log_notice("Prefilter off: %s. Every exec wakes the daemon.", m->filter.pass_all_reason);
                if (asprintf(&m->prefilter, "off: %s", m->filter.pass_all_reason ?: "?") < 0)
                        m->prefilter = NULL;
        } else {
                size_t ce, cp, ee, ep, pe, pp;

                filter_names_count(m->filter.comm, m->filter.n_comm, &ce, &cp);
                filter_names_count(m->filter.exe, m->filter.n_exe, &ee, &ep);
                filter_names_count(m->filter.parent, m->filter.n_parent, &pe, &pp);
                if (asprintf(&m->prefilter,
                             "on: %zu command names (%zu prefixes), %zu binary names (%zu prefixes), %zu parent names "
                             "(%zu prefixes), %zu users, %zu groups, %zu cgroups, %zu ancestor names",
                             ce, cp, ee, ep, pe, pp, n_uids, n_gids, n_cgroup_ids, m->filter.n_ancestor) < 0)
                        m->prefilter = NULL;
                log_info("Prefilter %s; %" PRIu64 " kB of kernel memory (%" PRIu64 " kB with the ring buffer and "
                         "the other maps), loaded in %" PRIu64 " us.",
                         m->prefilter ?: "on", m->prefilter_memory / 1024, exec_bpf_memory(m->bpf) / 1024,
                         (uint64_t) ((t1.tv_sec - t0.tv_sec) * 1000000LL + (t1.tv_nsec - t0.tv_nsec) / 1000));
        }
        /* In the kernel now (and compared there by digest): the lists need not stay in memory. */
        free(m->filter.comm);
        free(m->filter.exe);
        free(m->filter.parent);
        free(m->filter.ancestor);
        m->filter.comm = m->filter.exe = m->filter.parent = m->filter.ancestor = NULL;
        m->filter.n_comm = m->filter.n_exe = m->filter.n_parent = m->filter.n_ancestor = 0;
        return 0;
}

int manager_reload(Manager *m, bool startup) {
        _cleanup_(match_index_freep) MatchIndex *index = NULL;
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        _cleanup_(freep) char *name = NULL, *path = NULL;
        size_t active = 0;
        int r;

        struct timespec t0, t1, c0, c1;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        r = manager_resolve_profile(m, &name, &path);
        if (r < 0)
                return log_error_errno(r, "Failed to resolve the profile: %m");
        r = rule_set_load(m->options.root, name, path, &s);
        if (r < 0)
                return log_error_errno(r, "Failed to load rules: %m");

        if (!startup && !rule_errors_subset(s, m->rules)) {
                log_rule_errors(s, LOG_ERR);
                log_error("Reload failed: the new rules have errors (above); keeping the %zu rules that were running.",
                          m->rules ? m->rules->n_rules : 0);
                return -EINVAL;
        }
        log_rule_errors(s, LOG_WARNING);
        for (size_t i = 0; i < s->n_files; i++)
                if (s->files[i].state == CONF_FILE_ACTIVE)
                        active++;
        if (s->n_rules == 0)
                log_notice("No rules loaded (no files in %s, %s, %s%s): running with zero rules.",
                           rule_dirs[0], rule_dirs[1], rule_dirs[2], name ? " and the profile" : "");
        else
                log_info("Loaded %zu rules from %zu files (profile %s), %zu errors.", s->n_rules, active,
                         name ?: "none", s->n_errors);

        r = match_index_new(s, &index);
        if (r < 0)
                return log_error_errno(r, "Failed to index the rules: %m");
        {
                MatchIndexStats st;

                match_index_stats(index, &st);
                log_debug("Rule index: %zu process rules by name, %zu tried for every process, %zu names, %zu kB.",
                          st.indexed, st.unindexed, st.entries, st.bytes / 1024);
        }

        match_index_free(m->index);
        m->index = TAKE_PTR(index);
        {
                /* The rules with Thread=: before a walk over a process's threads, could any of them match? */
                const Rule **l = NULL;
                size_t n = 0;

                for (size_t i = 0; i < s->n_rules; i++)
                        n += s->rules[i].kind == RULE_PROCESS && rule_match(&s->rules[i], MATCH_THREAD);
                if (n > 0 && !(l = calloc(n, sizeof(Rule *))))
                        return log_oom();
                n = 0;
                for (size_t i = 0; i < s->n_rules; i++)
                        if (s->rules[i].kind == RULE_PROCESS && rule_match(&s->rules[i], MATCH_THREAD))
                                l[n++] = &s->rules[i];
                free(m->thread_rules);
                m->thread_rules = l;
                m->n_thread_rules = n;
        }
        rule_set_free(m->rules);
        m->rules = TAKE_PTR(s);
        free(m->profile);
        m->profile = TAKE_PTR(name);
        free(m->profile_path);
        m->profile_path = TAKE_PTR(path);
        (void) manager_update_filter(m);
        if (m->hooks.foreground_reload)
                m->hooks.foreground_reload(m);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        /* How long parsing, indexing and the prefilter took: big rule sets should not stall the loop. */
        log_info("Rules in place after %" PRIu64 " us, %" PRIu64 " us of CPU (parse, index, prefilter).",
                 (uint64_t) ((t1.tv_sec - t0.tv_sec) * 1000000LL + (t1.tv_nsec - t0.tv_nsec) / 1000),
                 (uint64_t) ((c1.tv_sec - c0.tv_sec) * 1000000LL + (c1.tv_nsec - c0.tv_nsec) / 1000));
        /* The profile, and whether user names matter, may be other ones now. */
        (void) manager_refresh_watches(m);
        if (!startup) {
                m->reloads++;
                if (m->hooks.units_rules_changed)
                        m->hooks.units_rules_changed(m);
                (void) manager_rescan(m, "rules reloaded");
                if (m->hooks.reloaded)
                        m->hooks.reloaded(m);
                /* The old set and the prefilter's lists are gone: give their memory back, as at start-up. */
                manager_trim_soon(m);
        }
        manager_notify_status(m);
        return 0;
}

int manager_set_profile(Manager *m, const char *name) {
        _cleanup_(freep) char *path = NULL, *old = NULL;
        bool old_no_profile;
        int r;

        if (!profile_name_valid(name))
                return -EINVAL;
        r = profile_find(m->options.root, m->options.profile_dir, name, &path);
        if (r < 0)
                return r;
        old = m->options.profile;
        m->options.profile = strdup(name);
        if (!m->options.profile) {
                m->options.profile = TAKE_PTR(old);
                return -ENOMEM;
        }
        old_no_profile = m->options.no_profile;
        m->options.no_profile = false;
        r = manager_reload(m, false);
        if (r < 0) {
                free(m->options.profile);
                m->options.profile = TAKE_PTR(old);
                m->options.no_profile = old_no_profile;
                return r;
        }
        log_info("Switched to profile %s.", name);
        return 0;
}

static int manager_on_reload_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        log_info("Rule files changed, reloading.");
        (void) manager_reload(m, false);
        return 0;
}

/*
 * What to follow: the rule directories, latniced.conf, the active profile,
 * and passwd/group while rules name users or groups (dir-watch.c).
 */
static int manager_refresh_watches(Manager *m) {
        _cleanup_(freep) char *d0 = NULL, *d1 = NULL, *d2 = NULL, *conf = NULL, *profile = NULL;
        DirWatchTarget t[8];
        size_t n = 0;
        char *slash;
        int r;

        if (!m->dir_watch)
                return 0;
        d0 = path_join(m->options.root, rule_dirs[0]);
        d1 = path_join(m->options.root, rule_dirs[1]);
        d2 = path_join(m->options.root, rule_dirs[2]);
        conf = path_join(m->options.root, LATNICE_DAEMON_CONF);
        profile = m->profile_path ? strdup(m->profile_path) : NULL;
        if (!d0 || !d1 || !d2 || !conf || (m->profile_path && !profile))
                return log_oom();
        t[n++] = (DirWatchTarget) { .dir = d0, .kind = DIR_WATCH_RULES };
        t[n++] = (DirWatchTarget) { .dir = d1, .kind = DIR_WATCH_RULES };
        t[n++] = (DirWatchTarget) { .dir = d2, .kind = DIR_WATCH_RULES };
        slash = strrchr(conf, '/');
        if (slash && slash != conf) {
                *slash = 0;
                t[n++] = (DirWatchTarget) { .dir = conf, .name = slash + 1, .kind = DIR_WATCH_FILE };
        }
        slash = profile ? strrchr(profile, '/') : NULL;
        if (slash && slash != profile) {
                *slash = 0;
                t[n++] = (DirWatchTarget) { .dir = profile, .name = slash + 1, .kind = DIR_WATCH_FILE };
        }
        if (m->needs_names || m->filter.users || m->filter.groups) {
                /* NSS reads the real /etc, whatever --root says */
                t[n++] = (DirWatchTarget) { .dir = "/etc", .name = "passwd", .kind = DIR_WATCH_NSS };
                t[n++] = (DirWatchTarget) { .dir = "/etc", .name = "group", .kind = DIR_WATCH_NSS };
        }
        r = dir_watch_set(m->dir_watch, t, n);
        if (r < 0)
                log_warning_errno(r, "Failed to follow all rule directories, ignoring (reload with SIGHUP or "
                                  "'latnicectl reload' after changes): %m");
        return 0;
}

static int manager_on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        unsigned changes = 0;
        int r;

        /* Reading is bounded and most events are for names we do not follow: stay realtime for that. */
        r = dir_watch_read(m->dir_watch, &changes);
        if (r < 0)
                log_warning_errno(r, "Failed to read inotify events: %m");
        if (changes == 0)
                return 0;
        manager_leave_realtime(m);
        if (changes & DIR_WATCH_CHANGED_LAYOUT)
                (void) manager_refresh_watches(m);
        if (changes & DIR_WATCH_CHANGED_NSS) {
                /* Users or groups changed: names may mean other ids now. */
                manager_name_cache_flush(m);
                (void) manager_update_filter(m);
        }
        if (!(changes & DIR_WATCH_CHANGED_RULES))
                return 0;
        /* Debounce: editors and package managers write in several steps. */
        r = event_reset_time_relative(m->event, &m->reload_timer, CLOCK_MONOTONIC, 200 * 1000, 10 * 1000,
                                      manager_on_reload_timer, m, "reload-debounce", true);
        if (r < 0)
                return log_warning_errno(r, "Failed to arm the reload timer: %m");
        return 0;
}

int manager_setup_inotify(Manager *m) {
        int r;

        r = dir_watch_new(&m->dir_watch);
        if (r < 0)
                return log_warning_errno(r, "Failed to watch the rule directories (reload with SIGHUP): %m");
        r = sd_event_add_io(m->event, &m->inotify_event_source, dir_watch_fd(m->dir_watch), EPOLLIN,
                            manager_on_inotify, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch rule directories: %m");
        (void) sd_event_source_set_description(m->inotify_event_source, "rule-dirs");
        return manager_refresh_watches(m);
}

void manager_rules_done(Manager *m) {
        m->reload_timer = sd_event_source_unref(m->reload_timer);
        m->inotify_event_source = sd_event_source_unref(m->inotify_event_source);
        m->dir_watch = dir_watch_free(m->dir_watch);
        m->name_retry_timer = sd_event_source_unref(m->name_retry_timer);
        filter_spec_done(&m->filter);
        m->prefilter = mfree(m->prefilter);
        m->index = match_index_free(m->index);
        m->rules = rule_set_free(m->rules);
        m->thread_rules = mfree(m->thread_rules);
        m->n_thread_rules = 0;
        m->profile = mfree(m->profile);
        m->profile_path = mfree(m->profile_path);
}
