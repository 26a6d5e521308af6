/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Telling scx_latnice which values latniced granted: the pinned map of
 * include/latnice/granted.h, kept equal to the applied table (manager-granted.c).
 */
#pragma once

#include "applied.h"

typedef struct Manager Manager;

/* Opens the pin if a scheduler made one and it is not the map held already, then fills it from the
 * applied table. At start (after the state file was taken over) and on every change of sched_ext. */
void manager_granted_refresh(Manager *m);
/* An entry of the applied table was written, or is about to be removed (e still valid). */
void manager_granted_put(Manager *m, const AppliedProcess *e);
void manager_granted_remove(Manager *m, const AppliedProcess *e);
void manager_granted_free(Manager *m);
