/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Thread= rules: a value for the threads of a process whose own name
 * (/proc/PID/task/TID/comm) matches, not for the process. A thread is
 * decided when it is renamed (the rename record names it), and the threads
 * of a process are walked, a chunk per dispatch, after a /proc walk met the
 * process and when its renames were coalesced. A thread's value is an entry
 * of the applied table keyed by its tid (AppliedProcess.tgid), so restores,
 * the state file and ListApplied treat it like a process's.
 */
#pragma once

#include "manager.h"

/* Threads decided per dispatch of a walk. */
#define THREAD_CHUNK 256
/* Walks queued or cooling down at once; beyond, a request waits for the next rescan. */
#define THREAD_WALKS_MAX 1024

/* Decides thread tid of process pid now (its rename record arrived). */
int manager_thread_renamed(Manager *m, pid_t pid, pid_t tid);

/* Queues a walk over the threads of pid (nothing without Thread= rules). A process walked a moment ago
 * is walked again only after a pause several times as long as that walk took: a storm of thread renames
 * costs latniced a bounded share of the CPU. */
void manager_threads_walk(Manager *m, pid_t pid);

/*
 * When latniced stops: a thread made by a named thread starts with its name and value, and no event
 * tells of it until a walk meets it. Every thread of a process with Thread= values that has no entry
 * and carries one of those values gets back what its creator had before latniced. Returns how many.
 */
unsigned manager_threads_restore_unrecorded(Manager *m);

/* A thread of process pid with the value raw from a Thread= rule: a child it forked carries that value. */
void manager_threads_done(Manager *m);
