/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An asynchronous client of org.freedesktop.systemd1 on the system bus: it
 * follows the units its owner wants (by name) and reports their cgroup as
 * systemd's ControlGroup property says, plus finished jobs. It never blocks
 * and never logs: what happened comes back through SystemdWatchOps.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-bus.h>

typedef struct SystemdWatch SystemdWatch;

/* What is known about a followed unit. Read-only for the owner. */
typedef struct SystemdUnit {
        char *name;
        char *object_path;   /* from ListUnits, UnitNew or GetUnit, never built by hand */
        char *control_group; /* namespace-relative cgroup path, NULL while the unit has none */
        bool fetched;        /* control_group was read at least once */
} SystemdUnit;

typedef enum SystemdWatchState {
        SYSTEMD_WATCH_OFFLINE, /* systemd is not on the bus (never answered, or left it) */
        SYSTEMD_WATCH_SYNCING, /* subscribed, reading the unit list and cgroups */
        SYSTEMD_WATCH_ONLINE,  /* the full picture is there */
} SystemdWatchState;

typedef struct SystemdWatchOps {
        /* Which units to follow; asked for every unit seen, again after systemd_watch_refresh(). */
        bool (*want_unit)(const char *name, void *userdata);
        /*
         * A followed unit's cgroup changed (appeared, moved, went), or the unit
         * itself went (removed). Not called during a sync: state ONLINE at its
         * end stands for "look at every unit again".
         */
        void (*unit_changed)(SystemdWatch *w, const SystemdUnit *u, bool removed, void *userdata);
        /* A job finished, for any unit: processes may have been started in or moved into a cgroup. */
        void (*job_removed)(SystemdWatch *w, const char *unit, const char *result, void *userdata);
        /*
         * The state changed, or a sync ended (ONLINE again). error/message say
         * why systemd is OFFLINE (negative errno and D-Bus error text; 0/NULL
         * when it simply left the bus, as during daemon-reexec).
         */
        void (*state_changed)(SystemdWatch *w, SystemdWatchState state, int error, const char *message,
                              void *userdata);
        /* The bus refused one of our matches (e.g. its limit per connection): some changes go unseen. */
        void (*match_failed)(SystemdWatch *w, const char *message, void *userdata);
} SystemdWatchOps;

/* Installs the matches and asks whether systemd is on the bus; everything else follows from replies. */
int systemd_watch_new(sd_bus *bus, const SystemdWatchOps *ops, void *userdata, SystemdWatch **ret);
/* Drops every match and pending call; no callback runs from here. */
SystemdWatch *systemd_watch_free(SystemdWatch *w);
static inline void systemd_watch_freep(SystemdWatch **w) {
        systemd_watch_free(*w);
}

/* The wanted set changed: list the units again (state SYNCING, then ONLINE). */
int systemd_watch_refresh(SystemdWatch *w);

SystemdWatchState systemd_watch_state(const SystemdWatch *w);
size_t systemd_watch_n_units(const SystemdWatch *w);
/* Iteration: *i starts at 0; NULL at the end. Pointers stay valid until the next callback. */
const SystemdUnit *systemd_watch_next(const SystemdWatch *w, size_t *i);

/*
 * Asks systemd to give the unit the cpu controller (SetUnitProperties,
 * runtime): on the v1/v2 hybrid a directory in the cpu hierarchy, which
 * systemd creates only for units that need the controller
 * (CPUAccounting=yes); on cgroup v2, where accounting needs no controller
 * (kernel >= 4.15), the controller enabled down to the unit's cgroup, which
 * systemd does for a unit with a CPU weight (CPUWeight=100, the kernel's
 * default: no weight changes). The unit's cgroup is read again when systemd
 * answered (unit_changed fires). on=false takes it back (CPUAccounting=no,
 * CPUWeight= unset).
 */
int systemd_watch_set_cpu_accounting(SystemdWatch *w, const char *name, bool on, bool unified);

/* The same call on any bus connection, without an answer handler when cb is NULL. */
int systemd_cpu_controller_call(sd_bus *bus, sd_bus_slot **slot, const char *name, bool on, bool unified,
                                sd_bus_message_handler_t cb, void *userdata);

/* What systemd_watch_set_cpu_accounting() sets, for messages: "CPUAccounting=yes" or "CPUWeight=100". */
static inline const char *systemd_cpu_property(bool unified) {
        return unified ? "CPUWeight=100" : "CPUAccounting=yes";
}

/* The cgroup of any unit, followed or not (GetUnit, then its ControlGroup); cgroup NULL if it has none. */
typedef void (*SystemdCgroupCallback)(SystemdWatch *w, const char *unit, const char *cgroup, void *userdata);
int systemd_watch_query_cgroup(SystemdWatch *w, const char *name, SystemdCgroupCallback done, void *userdata);
