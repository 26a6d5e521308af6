/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* [Unit NAME] rules: systemd units, their cgroups, and the per-task fallback. */
#pragma once

#include "cgroup.h"
#include "manager.h"
#include "match.h"
#include "state.h"

/* Called on every (re)connection to the system bus: subscribe to systemd1, list units, apply. */
int manager_units_on_connected(Manager *m);
void manager_units_on_disconnected(Manager *m);

/* The rules changed: re-evaluate unit rules (knobs and per-task values). */
void manager_units_rules_changed(Manager *m);

/*
 * A process that no process rule matched: if a unit rule covers the unit it
 * runs in and the kernel has no cgroup knob, give it the unit's value per
 * task. Returns 1 if a unit rule decides the process (applied, already
 * applied, or left alone because its value is foreign), 0 if no unit rule
 * applies, negative errno.
 */
int manager_units_decide(Manager *m, const TaskInfo *t, uint64_t start_time, bool fresh_exec);

/*
 * cgroup v2 ids whose subtrees the prefilter must let through (units with a
 * per-task rule, and units that process rules name with Unit=). Returns 0,
 * or -ENOTCONN while systemd has not given the full picture yet (not
 * connected, or still listing): then the ids known so far are still
 * returned, so the subtrees of units seen earlier stay covered.
 */
int manager_units_filter_ids(Manager *m, uint64_t **ret_ids, size_t *ret_n);

/* Restores the cgroup knobs we wrote (unless --keep-on-exit), frees everything. */
void manager_units_free(Manager *m);

/*
 * The cgroup-knob path, kept apart so it can be tested on a fake tree. A
 * UnitKnob remembers one cgroup whose knob we wrote and what it held before.
 */
typedef StateKnob UnitKnob; /* state.h: remembered across restarts */

/*
 * Writes value to the cgroup's knob. The first write records the previous
 * value. Errors as cgroup_latency_nice_set(): -ENOENT when the cgroup has no
 * directory in the cpu hierarchy (v1) or no cpu controller (v2) (ask systemd:
 * systemd_watch_set_cpu_accounting()), -EOPNOTSUPP when the kernel has no
 * knob (per-task fallback).
 */
static inline int unit_knob_set(const CGroupMounts *mounts, UnitKnob *k, const char *cgroup, int value) {
        int before, r;

        if (k->cgroup && strcmp(k->cgroup, cgroup) != 0)
                return -EINVAL;
        r = cgroup_latency_nice_get(mounts, cgroup, &before);
        if (r < 0)
                return r;
        if (k->cgroup && before == value && k->value == value)
                return 0;
        r = cgroup_latency_nice_set(mounts, cgroup, value);
        if (r < 0)
                return r;
        if (!k->cgroup) {
                k->cgroup = strdup(cgroup);
                if (!k->cgroup) {
                        (void) cgroup_latency_nice_set(mounts, cgroup, before);
                        return -ENOMEM;
                }
                k->before = before;
        }
        k->value = value;
        return 1;
}

/* Puts the previous value back if the knob still holds ours: 1 restored, 0 changed by somebody else. */
static inline int unit_knob_restore(const CGroupMounts *mounts, const UnitKnob *k) {
        int now, r;

        if (!k->cgroup)
                return 0;
        r = cgroup_latency_nice_get(mounts, k->cgroup, &now);
        if (r < 0)
                return r;
        if (now != k->value)
                return 0;
        r = cgroup_latency_nice_set(mounts, k->cgroup, k->before);
        return r < 0 ? r : 1;
}
