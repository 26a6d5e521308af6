/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* XXX: placeholder until the org.latnice1 API lands (issue 7): the daemon runs without a bus API. */

#include "manager-bus.h"

int manager_bus_on_connected(Manager *m) {
        (void) m;
        return 0;
}

void manager_bus_on_disconnected(Manager *m) {
        (void) m;
}

void manager_bus_emit_applied(Manager *m, pid_t pid, const char *comm, int value, const char *rule) {
        (void) m;
        (void) pid;
        (void) comm;
        (void) value;
        (void) rule;
}

void manager_bus_emit_reloaded(Manager *m) {
        (void) m;
}
