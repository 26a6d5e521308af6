/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* org.latnice1 on the system bus: the vtable and its signals. */
#pragma once

#include "manager.h"

/* Adds /org/latnice1 with org.latnice1.Manager to a connection (also a direct one, for tests). */
int manager_bus_add_objects(Manager *m, sd_bus *bus);

/* Called on every (re)connection to the system bus: add the object, request the name. */
int manager_bus_on_connected(Manager *m);
/* Drops bus-side state (slots, rate limits); called on disconnect and at exit. */
void manager_bus_on_disconnected(Manager *m);

/* Signals; both are cheap no-ops without a bus. Applied is rate-limited. */
void manager_bus_emit_applied(Manager *m, pid_t pid, const char *comm, int value, const char *rule);
void manager_bus_emit_reloaded(Manager *m);
/* Backend and BackendReason changed (manager-scx.c). */
void manager_bus_emit_backend(Manager *m);

/* A statistics collection ended (ManagerHooks.stats_done): the CollectStats calls waiting get result. */
struct StatsResult;
void manager_bus_stats_done(Manager *m, const struct StatsResult *result, int error);
