/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The netlink proc connector, latniced's first fallback when BPF cannot be
 * loaded: PROC_EVENT_EXEC, PROC_EVENT_EXIT and PROC_EVENT_COMM with pids only, so the daemon
 * reads the rest from /proc at once, and PROC_EVENT_FORK of new processes
 * (the kernel sends it anyway). Socket I/O only, no logging.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

typedef enum NetlinkEventType {
        NETLINK_EVENT_EXEC,
        NETLINK_EVENT_EXIT,
        NETLINK_EVENT_RENAME, /* of a thread group leader: the process's name changed */
        NETLINK_EVENT_FORK,   /* a new process (not a thread): pid is the child, tid its parent's tgid */
        NETLINK_EVENT_THREAD_RENAME, /* of another thread (pid: its process, tid: the thread) */
} NetlinkEventType;

typedef int (*netlink_handler_t)(void *userdata, NetlinkEventType type, pid_t pid, pid_t tid);

/* Opens and subscribes; returns the fd. Needs CAP_NET_ADMIN and the initial pid namespace. */
int exec_netlink_open(int rcvbuf);
/*
 * Reads up to budget queued messages: 0 when the queue is empty, 1 when the
 * budget ran out first (more may be queued), -ENOBUFS when events were lost
 * (the caller rescans), other negative errno on failure.
 */
int exec_netlink_read(int fd, unsigned budget, netlink_handler_t handler, void *userdata);
