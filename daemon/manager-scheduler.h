/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * [Daemon] Scheduler=latnice: latniced runs scx_latnice, latnice's own
 * sched_ext scheduler (scheduler/), as its child for as long as it runs.
 */
#pragma once

typedef struct Manager Manager;

/* At start, after manager_scx_start(): reads latniced.conf and, if asked, starts the loader. */
int manager_scheduler_start(Manager *m);
/* Stops it (SIGTERM, then SIGKILL after a bound) and waits for it. */
void manager_scheduler_free(Manager *m);
