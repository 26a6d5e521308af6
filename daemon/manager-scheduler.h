/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * [Daemon] Scheduler=latnice: latniced has scx_latnice, latnice's own
 * sched_ext scheduler (scheduler/), run while it runs: as scx_latnice.service
 * under systemd, else as its child (manager-scheduler.c).
 */
#pragma once

typedef struct Manager Manager;

/* At start, after manager_scx_start(): reads latniced.conf and, if asked, starts the loader (without
 * systemd) or notes that systemd is to start the unit once the bus is there. */
int manager_scheduler_start(Manager *m);
/* The system bus is connected: asks systemd to start scx_latnice.service, once per latniced. */
void manager_scheduler_on_bus(Manager *m);
/* Stops a child (SIGTERM, then SIGKILL after a bound) and waits for it; leaves the unit to systemd. */
void manager_scheduler_free(Manager *m);
