/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The foreground boost: while a user's window has focus, the processes it
 * stands for get latniced.conf's [Foreground] LatencyNice=; when focus moves
 * on, they get back what they had (a rule's value or their own), unless
 * somebody else changed it meanwhile. One boost per user; the bus names
 * that set it are tracked, and it ends when they all leave the bus, or
 * when the login session it is bound to is no longer active. A layer
 * above the manager, like manager-units.c: the manager reaches it only
 * through ManagerHooks (latniced.c), the bus API (manager-bus-change.c) calls it.
 */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "manager.h"

/* Reads [Foreground] from latniced.conf; a change of it drops every boost. */
void manager_foreground_reload(Manager *m);
bool manager_foreground_enabled(const Manager *m);

/*
 * owner's boost moves to pid (start_time pins it) and what it stands for;
 * only processes whose real uid is uid are touched. pid 0 ends owner's
 * boost. session (may be NULL): the login session the boost is bound to;
 * it ends when logind says that session is no longer active (or gone).
 * call (may be NULL): its sender is tracked. Returns the number of
 * processes that carry the boost, -EBUSY if too many users have one.
 */
int manager_foreground_set(Manager *m, uid_t owner, pid_t pid, uint64_t start_time, uid_t uid, const char *session,
                           sd_bus_message *call);

/* owner's boost is already at pid (start_time), bound to session: the number of processes it covers, and
 * call's sender is tracked with it; -ENOENT otherwise. Lets the same request again be answered without
 * asking polkit. */
int manager_foreground_current(Manager *m, uid_t owner, pid_t pid, uint64_t start_time, const char *session,
                               sd_bus_message *call);

/* A boost an earlier latniced left behind (its state record): put the value back. */
void manager_foreground_drop_adopted(Manager *m, const AppliedProcess *e);

/* Frees the state; the values are restored with the applied table on stop. */
void manager_foreground_free(Manager *m);

/* For status: "off", or the setting and the boosts in place ("LatencyNice=-10 Cover=unit: 1 boost, 3 processes"). */
char *manager_foreground_describe(const Manager *m);
