/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* XXX: placeholder until unit rules land (issue 6): [Unit] rules load but do not apply yet. */

#include "manager-units.h"

int manager_units_on_connected(Manager *m) {
        (void) m;
        return 0;
}

void manager_units_on_disconnected(Manager *m) {
        (void) m;
}

void manager_units_rules_changed(Manager *m) {
        (void) m;
}

int manager_units_decide(Manager *m, const TaskInfo *t, uint64_t start_time, bool fresh_exec) {
        (void) m;
        (void) t;
        (void) start_time;
        (void) fresh_exec;
        return 0;
}

int manager_units_filter_ids(Manager *m, uint64_t **ret_ids, size_t *ret_n) {
        (void) m;
        *ret_ids = NULL;
        *ret_n = 0;
        return 0;
}

void manager_units_free(Manager *m) {
        (void) m;
}
