/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * [Unit NAME] rules. systemd-watch.c tells us which units the rules name and
 * where their cgroups are; this file decides what that means:
 *
 * - where the kernel has the cgroup knob (the latency-nice series), the
 *   unit's cgroup gets the value through cpu.latency.nice / cpu.latency,
 *   and systemd is asked for the cpu controller where the unit has none:
 *   CPUAccounting=yes on the v1/v2 hybrid (a directory in the cpu
 *   hierarchy), CPUWeight=100 on cgroup v2 (the controller enabled down to
 *   the unit's cgroup) (units-knob.c);
 * - where it has none (mainline EEVDF), every task in the unit's subtree
 *   gets the value per task: the in-kernel prefilter lets execs below the
 *   unit's cgroup through (manager_units_filter_ids), execs that no process
 *   rule matches come to manager_units_decide(), and the subtree is walked
 *   when the unit appears, when rules change, and after every finished job
 *   (processes started or moved in without an exec of their own).
 *
 * Which rule wins is decided from the process's cgroup path, exactly as
 * "latnicectl explain" does: process rules first, then the first unit rule
 * in file order whose unit the path runs through. Unit rules are active
 * once systemd answered on the bus; what was applied stays applied while
 * systemd or the bus restarts, and is re-checked when it is back.
 */

#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "event-util.h"
#include "log.h"
#include "manager-decide.h"
#include "manager-rules.h"
#include "manager-sources.h"
#include "manager-units-internal.h"
#include "manager-units.h"

static ManagerUnits *units_get(Manager *m) {
        ManagerUnits *u = m->units_state;

        if (u)
                return u;
        u = calloc(1, sizeof(ManagerUnits));
        if (!u)
                return NULL;
        u->mounts_error = cgroup_mounts_find("/proc/self/mountinfo", &u->mounts);
        m->units_state = u;
        units_load(m, u);
        return u;
}

static bool has_unit_rules(Manager *m) {
        for (size_t i = 0; m->rules && i < m->rules->n_rules; i++)
                if (m->rules->rules[i].kind == RULE_UNIT)
                        return true;
        return false;
}

/* Units whose cgroup ids the prefilter needs because process rules name them with Unit=. */
static bool filter_wants(Manager *m, const char *name) {
        for (char **p = m->filter.units; p && *p; p++)
                if (string_is_glob(*p) ? fnmatch(*p, name, 0) == 0 : strcmp(*p, name) == 0)
                        return true;
        return false;
}

static bool needs_watch(Manager *m) {
        return has_unit_rules(m) || (m->filter.units && m->filter.units[0]);
}

/* ---- the prefilter ------------------------------------------------------ */

static bool unit_in_filter(Manager *m, const SystemdUnit *su) {
        if (!su->control_group)
                return false;
        if (filter_wants(m, su->name))
                return true;
        return !units_use_knob(m) && match_unit(m->rules, su->name);
}

static int compare_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static int units_compute_ids(Manager *m, uint64_t **ret, size_t *ret_n) {
        ManagerUnits *u = m->units_state;
        _cleanup_(freep) uint64_t *ids = NULL;
        const SystemdUnit *su;
        size_t n = 0, i = 0;

        *ret = NULL;
        *ret_n = 0;
        if (!u || !u->watch || u->mounts_error < 0 || !u->mounts.unified.path)
                return 0;
        ids = calloc(systemd_watch_n_units(u->watch) + 1, sizeof(uint64_t));
        if (!ids)
                return -ENOMEM;
        while ((su = systemd_watch_next(u->watch, &i))) {
                _cleanup_(freep) char *dir = NULL;
                struct stat st;

                if (!unit_in_filter(m, su))
                        continue;
                if (cgroup_path_to_dir(&u->mounts, CGROUP_HIER_UNIFIED, su->control_group, &dir) < 0)
                        continue;
                /* A cgroup's id (what BPF sees) is its directory's inode in the cgroup2 mount. */
                if (stat(dir, &st) < 0)
                        continue;
                ids[n++] = (uint64_t) st.st_ino;
        }
        qsort(ids, n, sizeof(uint64_t), compare_u64);
        *ret = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}

int manager_units_filter_ids(Manager *m, uint64_t **ret_ids, size_t *ret_n) {
        ManagerUnits *u = m->units_state;
        int r;

        *ret_ids = NULL;
        *ret_n = 0;
        if (!u)
                return -ENOTCONN;
        /* Keep what is known while systemd is away: those subtrees are still there. */
        if (u->watch && systemd_watch_state(u->watch) == SYSTEMD_WATCH_ONLINE) {
                uint64_t *ids;
                size_t n;

                r = units_compute_ids(m, &ids, &n);
                if (r < 0)
                        return r;
                free(u->ids);
                u->ids = ids;
                u->n_ids = n;
        }
        if (u->n_ids > 0) {
                *ret_ids = malloc(u->n_ids * sizeof(uint64_t));
                if (!*ret_ids)
                        return -ENOMEM;
                memcpy(*ret_ids, u->ids, u->n_ids * sizeof(uint64_t));
                *ret_n = u->n_ids;
        }
        return u->watch && systemd_watch_state(u->watch) == SYSTEMD_WATCH_ONLINE ? 0 : -ENOTCONN;
}

/* Reloads the prefilter if the set of unit cgroups changed. */
static void units_update_filter(Manager *m) {
        ManagerUnits *u = m->units_state;
        _cleanup_(freep) uint64_t *ids = NULL;
        size_t n;

        if (units_compute_ids(m, &ids, &n) < 0)
                return;
        if (n == u->n_ids && (n == 0 || memcmp(ids, u->ids, n * sizeof(uint64_t)) == 0))
                return;
        (void) manager_update_filter(m);
}

/* ---- per task ----------------------------------------------------------- */

int manager_units_decide(Manager *m, const TaskInfo *t, const Rule *rule, uint64_t start_time, bool fresh_exec) {
        ManagerUnits *u = m->units_state;
        ApplyRequest q;
        char ref[512];
        int r;

        if (!u || !u->active || units_use_knob(m))
                return 0;
        q = apply_request_from_rule(rule, true, ref, sizeof(ref));
        r = manager_apply(m, t, start_time, &q, fresh_exec);
        return r < 0 ? r : 1;
}

static bool unit_is_scope(const char *name) {
        const UnitType *t = unit_type_from_name(name, strlen(name));

        return t && strcmp(t->suffix, ".scope") == 0;
}

/* Is the unit one we follow? */
static bool strv_contains_unit(ManagerUnits *u, const char *name) {
        const SystemdUnit *su;
        size_t i = 0;

        while ((su = systemd_watch_next(u->watch, &i)))
                if (strcmp(su->name, name) == 0)
                        return true;
        return false;
}

/* Walks a cgroup subtree and decides every process in it (process rules first, as always). */
static void units_rescan_cgroup(Manager *m, const char *name, const char *cgroup, bool skip_applied) {
        ManagerUnits *u = m->units_state;
        _cleanup_(freep) pid_t *pids = NULL;
        int n;

        m->unit_walks++;
        n = cgroup_list_pids(&u->mounts, CGROUP_HIER_SYSTEMD, cgroup, &pids);
        if (n == -ENOENT) {
                log_debug("%s: its cgroup %s is gone already.", name, cgroup);
                return;
        }
        if (n < 0) {
                log_warning_errno(n, "Failed to list the processes of %s (%s), ignoring: %m", name, cgroup);
                return;
        }
        log_debug("%s: deciding the %d processes in %s.", name, n, cgroup);
        (void) manager_decide_pids(m, pids, (size_t) n, skip_applied);
}

static void units_fall_back_to_tasks(Manager *m, const char *cgroup) {
        ManagerUnits *u = m->units_state;

        u->knob_missing = true;
        log_notice("cgroup %s has no %s: this kernel has no latency-nice cgroup knob; [Unit] rules give their "
                   "value to each task instead.", cgroup, cgroup_latency_knob(&u->mounts));
        units_update_filter(m);
        (void) manager_rescan(m, "no cgroup knob");
}

static void units_apply_all(Manager *m);

static int units_on_knob_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_leave_realtime(userdata);
        units_apply_all(userdata);
        return 0;
}

static void units_arm_knob_retry(Manager *m) {
        ManagerUnits *u = m->units_state;
        int r;

        r = event_reset_time_relative(m->event, &u->knob_retry_timer, CLOCK_MONOTONIC, 250 * 1000, 10 * 1000,
                                      units_on_knob_retry, m, "unit-knob-retry", true);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the knob retry timer: %m");
}

/* ---- reacting to systemd ------------------------------------------------ */

/* A unit appeared, started, stopped, or the rules changed: apply what its rule says. */
static void units_apply_unit(Manager *m, const SystemdUnit *su, bool skip_applied) {
        int r;

        if (!su->control_group)
                return;
        if (units_use_knob(m)) {
                r = units_apply_knob(m, su);
                if (r == -EAGAIN)
                        units_arm_knob_retry(m);
                else if (r == -EOPNOTSUPP)
                        units_fall_back_to_tasks(m, su->control_group);
                return;
        }
        /* Per task: process rules with Unit= and [Unit] rules alike are decided per process. */
        units_rescan_cgroup(m, su->name, su->control_group, skip_applied);
}

static void units_apply_all(Manager *m) {
        ManagerUnits *u = m->units_state;
        const SystemdUnit *su;
        size_t i = 0;

        while ((su = systemd_watch_next(u->watch, &i)))
                units_apply_unit(m, su, false);
        if (units_use_knob(m))
                units_restore_stale_knobs(m);
}

static bool units_want_unit(const char *name, void *userdata) {
        Manager *m = userdata;

        return match_unit(m->rules, name) || filter_wants(m, name);
}

static void units_on_unit_changed(SystemdWatch *w, const SystemdUnit *su, bool removed, void *userdata) {
        Manager *m = userdata;

        if (removed || !su->control_group) {
                log_debug("%s: %s.", su->name, removed ? "gone" : "has no cgroup now");
                if (units_use_knob(m))
                        units_restore_stale_knobs(m);
                units_update_filter(m);
                return;
        }
        log_debug("%s: cgroup %s.", su->name, su->control_group);
        units_update_filter(m);
        units_apply_unit(m, su, false);
}

/* Is cgroup below (or at) a followed unit's cgroup? */
static bool units_covers(ManagerUnits *u, const char *cgroup) {
        const SystemdUnit *su;
        size_t i = 0;

        while (cgroup && (su = systemd_watch_next(u->watch, &i))) {
                size_t l = su->control_group ? strlen(su->control_group) : 0;

                if (l > 0 && strncmp(cgroup, su->control_group, l) == 0 &&
                    (cgroup[l] == 0 || cgroup[l] == '/' || strcmp(su->control_group, "/") == 0))
                        return true;
        }
        return false;
}

static void units_on_scope_cgroup(SystemdWatch *w, const char *unit, const char *cgroup, void *userdata) {
        Manager *m = userdata;
        ManagerUnits *u = m->units_state;

        if (!u || u->watch != w || !cgroup || !units_covers(u, cgroup))
                return;
        units_rescan_cgroup(m, unit, cgroup, true);
}

static int units_on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        ManagerUnits *u = m->units_state;
        _cleanup_(strv_freep) char **jobs = TAKE_PTR(u->jobs_done);
        bool all = u->jobs_overflow;
        const SystemdUnit *su;
        size_t i = 0;

        manager_leave_realtime(m);
        u->jobs_overflow = false;
        if (!u->watch || units_use_knob(m))
                return 0;
        /*
         * Processes that start in a unit exec there, and exec events decide
         * them. Without an exec a process gets into a unit only as a scope's
         * (a desktop moving a running app into app-*.scope) or by an explicit
         * move: so only the finished job's own unit is walked, and only when
         * it is followed, or a scope inside a followed unit.
         */
        while ((su = systemd_watch_next(u->watch, &i)))
                if (su->control_group && (all || strv_contains(jobs, su->name)))
                        units_rescan_cgroup(m, su->name, su->control_group, true);
        for (char **j = jobs; !all && j && *j; j++)
                if (unit_is_scope(*j) && !strv_contains_unit(u, *j))
                        (void) systemd_watch_query_cgroup(u->watch, *j, units_on_scope_cgroup, m);
        return 0;
}

#define JOBS_MAX 256

static void units_on_job_removed(SystemdWatch *w, const char *unit, const char *result, void *userdata) {
        Manager *m = userdata;
        ManagerUnits *u = m->units_state;
        int r;

        if (units_use_knob(m) || systemd_watch_n_units(w) == 0)
                return;
        /* Only followed units and scopes can have gained processes that did not exec. */
        if (!strv_contains_unit(u, unit) && !unit_is_scope(unit))
                return;
        if (strv_contains(u->jobs_done, unit))
                ;
        else if (strv_length(u->jobs_done) >= JOBS_MAX)
                u->jobs_overflow = true;
        else if (strv_extend(&u->jobs_done, unit) < 0)
                u->jobs_overflow = true;
        /* Debounced: a transaction finishes many jobs at once; a rescan already pending covers this one. */
        r = event_reset_time_relative(m->event, &u->rescan_timer, CLOCK_MONOTONIC, 20 * 1000, 5 * 1000,
                                      units_on_rescan_timer, m, "unit-rescan", false);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the unit rescan timer: %m");
}

static int units_on_offline_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        ManagerUnits *u = m->units_state;

        manager_leave_realtime(m);
        if (u->active || u->logged_offline)
                return 0;
        u->logged_offline = true;
        log_notice("systemd is not on the system bus%s%s%s: [Unit] rules are inactive until it is; process rules "
                   "keep working.", u->offline_reason ? " (" : "", u->offline_reason ?: "",
                   u->offline_reason ? ")" : "");
        return 0;
}

/*
 * systemd joins the bus only once dbus.service runs, which may be after us
 * (bus activation by our own connection): say "inactive" only if it stays away.
 */
static void units_arm_offline_notice(Manager *m, const char *message) {
        ManagerUnits *u = m->units_state;
        int r;

        free(u->offline_reason);
        u->offline_reason = message ? strdup(message) : NULL;
        log_debug("systemd is not on the system bus (yet)%s%s.", message ? ": " : "", message ?: "");
        if (u->logged_offline || u->offline_timer)
                return;
        r = event_reset_time_relative(m->event, &u->offline_timer, CLOCK_MONOTONIC, 5 * 1000 * 1000, 100 * 1000,
                                      units_on_offline_timer, m, "systemd-absent", false);
        if (r < 0)
                (void) units_on_offline_timer(NULL, 0, m);
}

static void units_on_state_changed(SystemdWatch *w, SystemdWatchState state, int error, const char *message,
                                   void *userdata) {
        Manager *m = userdata;
        ManagerUnits *u = m->units_state;

        switch (state) {
        case SYSTEMD_WATCH_ONLINE:
                if (!u->active || u->logged_offline)
                        log_info("systemd is on the bus: [Unit] rules are active, following %zu unit%s.",
                                 systemd_watch_n_units(w), systemd_watch_n_units(w) == 1 ? "" : "s");
                u->active = true;
                u->logged_offline = false;
                u->knob_retries = 0;
                (void) manager_update_filter(m);
                units_apply_all(m);
                break;
        case SYSTEMD_WATCH_OFFLINE:
                if (u->active) {
                        if (!u->logged_offline)
                                log_info("systemd left the bus (reexecuting?): keeping what unit rules applied, "
                                         "waiting for it to come back.");
                        u->logged_offline = true;
                } else
                        units_arm_offline_notice(m, message);
                (void) manager_update_filter(m);
                break;
        case SYSTEMD_WATCH_SYNCING:
                break;
        }
        (void) error;
}

static void units_on_match_failed(SystemdWatch *w, const char *message, void *userdata) {
        log_warning("The bus refused to send latniced systemd's unit changes (%s): [Unit] rules apply only as "
                    "units are listed again.", message);
}

static const SystemdWatchOps units_ops = {
        .want_unit = units_want_unit,
        .unit_changed = units_on_unit_changed,
        .job_removed = units_on_job_removed,
        .state_changed = units_on_state_changed,
        .match_failed = units_on_match_failed,
};

static int units_start_watch(Manager *m) {
        ManagerUnits *u = units_get(m);
        int r;

        if (!u)
                return -ENOMEM;
        if (u->watch || !m->bus)
                return 0;
        if (u->mounts_error < 0)
                log_warning_errno(u->mounts_error, "Failed to find a cgroup hierarchy, ignoring ([Unit] rules cannot "
                                  "apply): %m");
        r = systemd_watch_new(m->bus, &units_ops, m, &u->watch);
        if (r < 0)
                return log_warning_errno(r, "Failed to watch systemd on the bus: %m");
        return 0;
}

int manager_units_on_connected(Manager *m) {
        ManagerUnits *u = units_get(m);

        /* Nothing to follow: stay off systemd's subscriber list (every unit change would wake us). */
        if (!needs_watch(m)) {
                /* ... but give back what a latniced before us set for units no rule names now. */
                if (u && (u->n_knobs > 0 || u->asked_cpu_accounting))
                        units_restore_stale_knobs(m);
                return 0;
        }
        return units_start_watch(m);
}

void manager_units_on_disconnected(Manager *m) {
        ManagerUnits *u = m->units_state;

        if (!u)
                return;
        /* The watch lives on the bus connection that is going away; the rest stays for the next one. */
        u->watch = systemd_watch_free(u->watch);
        u->rescan_timer = sd_event_source_disable_unref(u->rescan_timer);
        u->knob_retry_timer = sd_event_source_disable_unref(u->knob_retry_timer);
}

void manager_units_rules_changed(Manager *m) {
        ManagerUnits *u = m->units_state;

        if (!needs_watch(m)) {
                if (u && u->watch) {
                        log_info("No rules name units any more: not following systemd.");
                        u->watch = systemd_watch_free(u->watch);
                        u->rescan_timer = sd_event_source_disable_unref(u->rescan_timer);
                        units_restore_stale_knobs(m);
                        (void) manager_update_filter(m);
                }
                return;
        }
        if (!u || !u->watch) {
                (void) units_start_watch(m);
                return;
        }
        /* Units newly named or no longer named: list again; ONLINE at the end applies everything. */
        if (systemd_watch_refresh(u->watch) < 0)
                log_warning("Failed to list systemd's units again; unit rules apply as units change.");
}

void manager_units_free(Manager *m) {
        ManagerUnits *u = m->units_state;

        if (!u)
                return;
        units_knobs_done(m);
        systemd_watch_free(u->watch);
        sd_event_source_disable_unref(u->rescan_timer);
        sd_event_source_disable_unref(u->offline_timer);
        sd_event_source_disable_unref(u->knob_retry_timer);
        free(u->offline_reason);
        strv_free(u->asked_cpu_accounting);
        strv_free(u->jobs_done);
        free(u->ids);
        cgroup_mounts_done(&u->mounts);
        free(u);
        m->units_state = NULL;
}
