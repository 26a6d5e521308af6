/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the exec sources do with one record, shared by manager-sources.c and its unit test
 * (tests/unit/test-manager-sources.c), which feeds them records by hand instead of the kernel.
 * Nothing else includes this.
 */
#pragma once

#include <stddef.h>

#include "exec-netlink.h"
#include "manager.h"

/* A BPF ring buffer record (include/latnice/event.h): an exec, a rename or a tracked exit. */
int manager_on_bpf_record(void *userdata, const void *data, size_t size);
/* A proc connector event: a fork, an exit, an exec or a rename of pid (tid: the thread). */
int manager_on_netlink_event(void *userdata, NetlinkEventType type, pid_t pid, pid_t tid);
