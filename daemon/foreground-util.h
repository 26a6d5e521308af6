/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The processes one foreground boost covers (foreground.h decides what it
 * covers). A -util module: it reads /proc and cgroupfs through the fds
 * handed in; nothing here logs or keeps state.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/*
 * root and its descendants, breadth first (parents before children), at most
 * max, through /proc/PID/task/TID/children. Returns how many.
 */
int foreground_list_tree(int proc_fd, pid_t root, pid_t *ret, size_t max);

/* The processes of a cgroup (its cgroup.procs, relative to cgroup_fd), at most max. */
int foreground_list_cgroup(int cgroup_fd, const char *path, pid_t *ret, size_t max);
