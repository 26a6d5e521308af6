/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* [Unit NAME] rules: systemd units, their cgroups, and the per-task fallback. */
#pragma once

#include "manager.h"
#include "match.h"

/* Called on every (re)connection to the system bus: subscribe to systemd1, list units, apply. */
int manager_units_on_connected(Manager *m);
void manager_units_on_disconnected(Manager *m);

/* The rules changed: re-evaluate unit rules (knobs and per-task values). */
void manager_units_rules_changed(Manager *m);

/*
 * A process that no process rule matched and that the unit rule rule
 * covers (match_explain()): if the kernel has no cgroup knob, give it the
 * unit's value per task. Returns 1 if the unit rule decides the process
 * (applied, already applied, or left alone because its value is foreign),
 * 0 if unit rules do not act per task, negative errno.
 */
int manager_units_decide(Manager *m, const TaskInfo *t, const Rule *rule, uint64_t start_time, bool fresh_exec);

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
