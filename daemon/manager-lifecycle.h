/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latniced's lifecycle: what latniced.c calls, above the manager's parts (see manager-lifecycle.c). */
#pragma once

#include "manager.h"

int manager_new(const ManagerOptions *o, const ManagerHooks *hooks, Manager **ret);
Manager *manager_free(Manager *m);
static inline void manager_freep(Manager **m) {
        manager_free(*m);
}

int manager_start(Manager *m);
int manager_run(Manager *m);
