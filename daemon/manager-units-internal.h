/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The unit layer's state, shared by its two files: manager-units.c (systemd,
 * the prefilter, per-task values) and units-knob.c (the cgroup knob and
 * CPUAccounting=). Nothing else includes this.
 */
#pragma once

#include "cgroup.h"
#include "manager.h"
#include "systemd-watch.h"
#include "unit-knob.h"

typedef struct ManagerUnits {
        SystemdWatch *watch;
        CGroupMounts mounts;
        int mounts_error;      /* 0, or why there are no cgroup mounts */
        bool active;           /* systemd answered at least once: unit rules are in force */
        bool logged_offline;   /* said once that unit rules are inactive */
        bool knob_missing;     /* the kernel has no cgroup knob after all: per task */
        UnitKnob *knobs;
        size_t n_knobs;
        char **asked_cpu_accounting; /* units we asked for CPUAccounting=yes or CPUWeight=100 */
        uint64_t *ids;         /* what manager_units_filter_ids() last returned */
        size_t n_ids;
        sd_event_source *rescan_timer;
        char **jobs_done;      /* units whose jobs finished since the rescan timer was armed */
        bool jobs_overflow;    /* too many to name: walk every followed unit */
        sd_event_source *offline_timer; /* grace period before saying unit rules are inactive */
        sd_event_source *knob_retry_timer; /* waiting for systemd to realize a cpu cgroup */
        unsigned knob_retries;
        char *offline_reason;
} ManagerUnits;

/* Remembers the knobs and CPUAccounting= requests across restarts (<state_dir>/units). */
void units_save(Manager *m);
void units_load(Manager *m, ManagerUnits *u);

/* The kernel has a per-cgroup knob: unit rules write it instead of giving values per task. */
bool units_use_knob(Manager *m);

/*
 * Writes the knob of a unit's cgroup as its rule says (or gives it back if
 * none does). -EAGAIN: systemd is still creating the cpu directory, look
 * again shortly; -EOPNOTSUPP: the kernel has no knob after all; 0 else.
 */
int units_apply_knob(Manager *m, const SystemdUnit *su);
/* Gives back knobs of cgroups no followed unit with a rule has any more, and their CPUAccounting=. */
void units_restore_stale_knobs(Manager *m);
/* Takes back the CPUAccounting=yes asked for units no rule names (all: every one). */
void units_return_accounting(Manager *m, bool all);
/* At exit: restores the knobs (unless --keep-on-exit or --dry-run) and frees them. */
void units_knobs_done(Manager *m);
