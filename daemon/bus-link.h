/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latniced's connection to the system bus: connecting, joining the event
 * loop as a normal task, and reconnecting with a backoff when it is lost.
 * What runs on the connection is the hooks' business (ManagerHooks).
 */
#pragma once

#include "manager.h"

/* Connects now, or schedules a retry; process rules work either way. */
int bus_link_connect(Manager *m);
/* Tells the layers on the connection it is going (the ManagerHooks *_disconnected). */
void bus_link_layers_down(Manager *m);
/* Closes the connection and its sources (at exit). */
void bus_link_done(Manager *m);
