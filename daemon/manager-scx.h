/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Following sched_ext: whether a BPF scheduler runs the tasks (then the
 * values latniced sets are kept but do nothing), what the Backend property
 * reads, and writing the applied table's values again when the fair class
 * is back. Nothing is opened or polled on a kernel without sched_ext.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "sched-ext.h"

typedef struct Manager Manager;

/* At start, after the backend probe: reads the state once and follows it (see manager-scx.c). */
int manager_scx_start(Manager *m);
void manager_scx_free(Manager *m);

/* The Backend and BackendReason properties (manager_backend() in manager.c) read this file's strings. */
/* A BPF scheduler is in charge right now. */
bool manager_scx_in_charge(Manager *m);
/* Counts every change of the Backend property (statistics compare it before and after). */
uint64_t manager_backend_changes(Manager *m);
