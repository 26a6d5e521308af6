/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Processes that carry one of our values through fork, wherever they are
 * in the tree now (exec.bpf.c's inherited map). A subshell that forks and
 * exits, as in "(exec prog &)", leaves its child reparented, out of every
 * tree latniced walks, with the value of a process latniced set: its
 * origin. Found again by that origin, such a process is reset when the
 * value's reason ends (a foreground boost) and restored when latniced
 * stops, as long as it is the process that inherited (its start time) and
 * still carries the value (one somebody set since is theirs).
 */
#pragma once

#include "manager.h"

typedef struct Inherited {
        pid_t pid;
        uint64_t start_time;   /* clock ticks since boot, as AppliedProcess's */
        pid_t origin;          /* the process latniced set */
        uint64_t origin_start;
        uint64_t raw, before_raw; /* manager_inherited_note_dropped() only: the value and what was before */
        uid_t uid;                /* the proc connector's record: whose share it takes */
} Inherited;

/*
 * What the kernel recorded, about processes that still run (entries about
 * gone ones are dropped on the way): how many in *ret, which the caller
 * frees; 0 without the BPF source, or a negative errno.
 */
int manager_inherited_list(Manager *m, Inherited **ret);

/* The entry of the process that pid (started at start_time) inherited its value from, if we set it. */
const AppliedProcess *manager_inherited_source(Manager *m, pid_t pid, uint64_t start_time);

/*
 * Puts before_raw back on every thread of d that still carries raw (the
 * value it inherited), unless latniced set d itself since: 1 if it did
 * (and d leaves the map), 0 if not (another value, or gone), or < 0.
 */
int manager_inherited_restore(Manager *m, const Inherited *d, uint64_t raw, uint64_t before_raw);

/* pid no longer carries what it inherited (it was reset). */
void manager_inherited_forget(Manager *m, pid_t pid);

/*
 * At stop: what descendants inherited from the processes of the table
 * (SetLatencyNice's choices excepted, which stay) goes back to what those
 * had before us. Call before the table's own restore. How many were reset.
 */
size_t manager_inherited_restore_all(Manager *m);

/* The kernel could not record a fork (the map is full): drop what is stale, at most every few seconds. */
void manager_inherited_on_full(Manager *m);
/* The kernel refused a fork of uid's: it holds its share (LATNICE_INHERITED_PER_USER). Says so, now and then. */
void manager_inherited_on_share(Manager *m, uid_t uid);

/*
 * Across a crash or Restart=: the kernel's record lives in BPF maps, which die with the last fd to them.
 * systemd's file descriptor store (FileDescriptorStoreMax= in the unit) keeps them for the next latniced
 * while the unit is not fully stopped. _take: the maps an earlier latniced stored (-1 where none; the
 * caller owns them), at most once per run. _store: ours, after the source is set up. _unstore: at a
 * clean stop, which restored what the record is about.
 */
void manager_inherited_take_stored(Manager *m, int *ret_inherited, int *ret_users);
void manager_inherited_store(Manager *m);
void manager_inherited_unstore(Manager *m);

/*
 * An earlier latniced's value on e (a foreground boost) ended at start, before the source is up: what
 * e's descendants inherited from it goes back to before_raw too, at manager_inherited_drop_origins().
 */
void manager_inherited_note_dropped(Manager *m, const AppliedProcess *e);
void manager_inherited_drop_origins(Manager *m);

/* The proc connector's events (without BPF): a new process, child of parent (a tgid); a process exited. */
void manager_inherited_on_fork(Manager *m, pid_t child, pid_t parent);
void manager_inherited_on_exit(Manager *m, pid_t pid);
void manager_inherited_done(Manager *m);
