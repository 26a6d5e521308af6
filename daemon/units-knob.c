/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cgroup-knob path of [Unit] rules, where the kernel has the knob: the
 * knobs we wrote and what they held, the runtime CPUAccounting=yes (v1/v2
 * hybrid: a cpu directory) or CPUWeight=100 (cgroup v2: the cpu controller)
 * asked of systemd, and giving
 * both back when no rule names the unit any more, at exit, or after a
 * crash (they are kept in <state_dir>/units).
 */

#include "log.h"
#include "manager-units-internal.h"
#include "unit-knob.h"

/*
 * The knobs we wrote (with what they held before) and the units we asked for
 * CPUAccounting=yes go to <state_dir>/units, so that a latniced restarted
 * after a crash gives them back like the one that wrote them would have.
 */
static const char *units_state_dir(Manager *m) {
        return m->options.state_dir ?: LATNICE_STATE_DIR;
}

void units_save(Manager *m) {
        ManagerUnits *u = m->units_state;
        int r;

        if (m->options.dry_run || !u)
                return;
        r = state_units_write(units_state_dir(m), u->knobs, u->n_knobs, u->asked_cpu_accounting);
        if (r < 0)
                log_warning_errno(r, "Failed to write %s/units: %m", units_state_dir(m));
}

void units_load(Manager *m, ManagerUnits *u) {
        unsigned skipped = 0;
        int r;

        if (m->options.dry_run)
                return;
        r = state_units_read(units_state_dir(m), &u->knobs, &u->n_knobs, &u->asked_cpu_accounting, &skipped);
        if (r < 0)
                log_warning_errno(r, "Failed to read %s/units: %m", units_state_dir(m));
        if (skipped > 0)
                log_warning("%s/units: ignored %u line(s) that are not latniced's.", units_state_dir(m), skipped);
        if (u->n_knobs > 0 || u->asked_cpu_accounting)
                log_info("Took over %zu cgroup knob(s) and %zu CPUAccounting= request(s) from the latniced before us.",
                         u->n_knobs, strv_length(u->asked_cpu_accounting));
}

/* The kernel has a per-cgroup knob: unit rules write it instead of giving values per task. */
bool units_use_knob(Manager *m) {
        ManagerUnits *u = m->units_state;

        return m->probe.backend == BACKEND_LATENCY_NICE && u && !u->knob_missing && u->mounts_error >= 0 &&
               cgroup_latency_knob(&u->mounts);
}

static UnitKnob *knob_find(ManagerUnits *u, const char *cgroup) {
        for (size_t i = 0; i < u->n_knobs; i++)
                if (streq_ptr(u->knobs[i].cgroup, cgroup))
                        return &u->knobs[i];
        return NULL;
}

static void knob_forget(Manager *m, UnitKnob *k) {
        ManagerUnits *u = m->units_state;

        free(k->cgroup);
        *k = u->knobs[--u->n_knobs];
        units_save(m);
}

static void knob_restore(Manager *m, UnitKnob *k, const char *why) {
        ManagerUnits *u = m->units_state;
        int r;

        r = unit_knob_restore(&u->mounts, k);
        if (r == -ENOENT)
                log_debug("cgroup %s is gone, nothing to restore.", k->cgroup);
        else if (r < 0)
                log_warning_errno(r, "Failed to restore the latency nice of cgroup %s: %m", k->cgroup);
        else if (r == 0)
                log_info("cgroup %s: latency nice changed by somebody else, leaving it (%s).", k->cgroup, why);
        else
                log_info("cgroup %s: restored latency nice %d (%s).", k->cgroup, k->before, why);
}

int units_apply_knob(Manager *m, const SystemdUnit *su) {
        ManagerUnits *u = m->units_state;
        bool unified = !cgroup_hierarchy_is_v1(&u->mounts, CGROUP_HIER_CPU);
        const Rule *rule = match_unit(m->rules, su->name);
        UnitKnob *k = knob_find(u, su->control_group), n = {};
        char ref[512];
        int r;

        if (!rule) {
                if (k) {
                        knob_restore(m, k, "no unit rule names it any more");
                        knob_forget(m, k);
                }
                return 0;
        }
        rule_format_ref(rule, ref, sizeof(ref));
        if (m->options.dry_run) {
                log_info("%s: would set LatencyNice=%d on cgroup %s from %s (dry run).", su->name,
                         rule->latency_nice, su->control_group, ref);
                return 0;
        }
        r = unit_knob_set(&u->mounts, k ?: &n, su->control_group, rule->latency_nice);
        if (r == -ENOENT) {
                /* The unit has no cpu directory (v1/v2 hybrid) or no cpu controller (cgroup v2) until
                 * systemd sees that it needs the controller (cgroup.c, knob_errno()). */
                if (strv_contains(u->asked_cpu_accounting, su->name)) {
                        /* systemd realizes the cgroup after it answered: look again shortly. */
                        if (u->knob_retries++ < 20)
                                return -EAGAIN;
                        log_warning("%s: still no %s after %s, cannot apply %s.", su->name,
                                    unified ? "cpu controller for its cgroup" : "directory in the cpu hierarchy",
                                    systemd_cpu_property(unified), ref);
                        return 0;
                }
                if (strv_extend(&u->asked_cpu_accounting, su->name) < 0)
                        return log_oom();
                units_save(m);
                r = systemd_watch_set_cpu_accounting(u->watch, su->name, true, unified);
                if (r < 0)
                        log_warning_errno(r, "%s: failed to ask systemd for %s: %m", su->name,
                                          systemd_cpu_property(unified));
                else
                        log_info("%s: asked systemd for %s (runtime), so that its cgroup has %s for %s.", su->name,
                                 systemd_cpu_property(unified), unified ? "the cpu controller" : "a cpu directory",
                                 ref);
                return 0;
        }
        if (r == -EOPNOTSUPP) {
                free(n.cgroup);
                return r;
        }
        if (r < 0) {
                free(n.cgroup);
                log_warning_errno(r, "%s: failed to set LatencyNice=%d on cgroup %s (%s): %m", su->name,
                                  rule->latency_nice, su->control_group, ref);
                return 0;
        }
        if (!k && n.cgroup) {
                UnitKnob *nk = reallocarray(u->knobs, u->n_knobs + 1, sizeof(UnitKnob));

                if (!nk) {
                        (void) unit_knob_restore(&u->mounts, &n);
                        free(n.cgroup);
                        return log_oom();
                }
                u->knobs = nk;
                u->knobs[u->n_knobs++] = n;
        }
        if (r > 0) {
                units_save(m);
                log_info("%s: LatencyNice=%d on cgroup %s from %s.", su->name, rule->latency_nice,
                         su->control_group, ref);
        }
        return 0;
}

/* Knobs of cgroups that no followed unit with a rule has any more: give them back. */
void units_restore_stale_knobs(Manager *m) {
        ManagerUnits *u = m->units_state;

        for (size_t i = u->n_knobs; i > 0; i--) {
                UnitKnob *k = &u->knobs[i - 1];
                const SystemdUnit *su;
                bool covered = false;
                size_t j = 0;

                while (u->watch && (su = systemd_watch_next(u->watch, &j)))
                        if (streq_ptr(su->control_group, k->cgroup) && match_unit(m->rules, su->name))
                                covered = true;
                if (!covered) {
                        knob_restore(m, k, "no unit rule names it any more");
                        knob_forget(m, k);
                }
        }
        units_return_accounting(m, false);
}

/*
 * Takes back the runtime CPUAccounting=yes / CPUWeight=100 we asked for units that no rule
 * names any more (all: every unit, latniced is stopping). Sent without
 * waiting for the answer: the connection is flushed before it closes.
 */
void units_return_accounting(Manager *m, bool all) {
        ManagerUnits *u = m->units_state;
        bool unified = !cgroup_hierarchy_is_v1(&u->mounts, CGROUP_HIER_CPU);
        bool changed = false;
        size_t j = 0;

        for (size_t i = 0; u->asked_cpu_accounting && u->asked_cpu_accounting[i]; i++) {
                char *name = u->asked_cpu_accounting[i];
                int r = 0;

                if (!all && match_unit(m->rules, name)) {
                        u->asked_cpu_accounting[j++] = name;
                        continue;
                }
                if (m->bus)
                        r = systemd_cpu_controller_call(m->bus, NULL, name, false, unified, NULL, NULL);
                if (!m->bus || r < 0)
                        log_warning("%s: could not take back the runtime %s latniced asked for; "
                                    "`systemctl set-property --runtime %s %s` does.", name,
                                    systemd_cpu_property(unified), name, unified ? "CPUWeight=" : "CPUAccounting=no");
                else
                        log_info("%s: took back the runtime %s latniced asked for.", name,
                                 systemd_cpu_property(unified));
                free(name);
                changed = true;
        }
        if (u->asked_cpu_accounting)
                u->asked_cpu_accounting[j] = NULL;
        if (changed)
                units_save(m);
}

void units_knobs_done(Manager *m) {
        ManagerUnits *u = m->units_state;

        if (!m->options.keep_on_exit && !m->options.dry_run) {
                for (size_t i = 0; i < u->n_knobs; i++)
                        knob_restore(m, &u->knobs[i], "latniced is stopping");
        }
        for (size_t i = 0; i < u->n_knobs; i++)
                free(u->knobs[i].cgroup);
        if (!m->options.keep_on_exit && !m->options.dry_run) {
                /* Everything given back: nothing for the next latniced to take over. */
                u->n_knobs = 0;
                units_return_accounting(m, true);
                units_save(m);
        }
        u->knobs = mfree(u->knobs);
        u->n_knobs = 0;
}
