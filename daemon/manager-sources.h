/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where exec events come from: the BPF ring buffer, else the netlink proc
 * connector, else a periodic /proc scan; plus the /proc walks every source
 * needs (start-up, reload, after losses), in chunks.
 */
#pragma once

#include "manager.h"

/* Picks and starts the best event source the kernel and our privileges allow. */
int manager_setup_source(Manager *m);
/* A whole walk at once: at start, before anything else runs. */
int manager_scan_now(Manager *m, bool all);
/* Re-evaluates every running process against the rules (queued: a walk in chunks). */
int manager_rescan(Manager *m, const char *why);
/* Finds the cgroup2 mount, so that the cgroup ids BPF reports resolve to paths. */
int manager_find_cgroup2(Manager *m);
/* Forgets the uid/gid -> name cache (passwd or group changed). */
void manager_name_cache_flush(Manager *m);
/* Frees what the sources hold. */
void manager_sources_done(Manager *m);
