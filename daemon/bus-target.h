/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process an org.latnice1 call is about: named by pid (0: the caller)
 * or by a pidfd handed in, pinned with a pidfd at once, and read (stat,
 * ids) for the checks. Every method that reads or changes a process goes
 * through here, so that a reused pid is caught the same way everywhere:
 * target_still_there() after reading, before replying or writing.
 * Errors are set on the call's sd_bus_error with the API's named errors.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "authz.h"
#include "bus-auth.h"
#include "proc.h"

typedef struct Target {
        pid_t pid;
        int pidfd;
        ProcStat st;
        uid_t ruid, euid;
} Target;

void target_done(Target *t);

/* Reads the target argument ('u' pid or 'h' pidfd) of a call; by_pidfd says which. */
int target_read(int proc_fd, sd_bus_message *call, const BusCaller *c, bool by_pidfd, Target *t,
                sd_bus_error *error);
int target_from_pid(int proc_fd, const BusCaller *c, uint32_t upid, Target *t, sd_bus_error *error);
int target_from_pidfd(int proc_fd, int fd, Target *t, sd_bus_error *error);

/* Is the pinned process still the one that was read? Then everything read about it is about it. */
bool target_still_there(int proc_fd, const Target *t);

/* Sends reply if the pinned process is still the one read (else NoSuchProcess: its pid was reused
 * meanwhile, and nothing in the reply is about the caller's process). */
int target_send_reply(int proc_fd, const Target *t, sd_bus_message *reply, sd_bus_error *error);

/* Is the process (pid, start time) running and the caller's now (authz_owns() on its ids as they are)? */
bool target_owned_now(int proc_fd, pid_t pid, uint64_t start_time, uid_t caller);

/* The login session a SetForeground of the pinned process by c is bound to (login-session.h), in
 * *ret_session (NULL: none), and whether it may carry a boost now. */
AuthzSession target_bound_session(const Target *t, const BusCaller *c, char **ret_session);

/* Root and the process's own user only (NotYourProcess otherwise). */
int target_check_owner(const BusCaller *c, const Target *t, sd_bus_error *error);

/* NoSuchProcess for ESRCH/ENOENT, Failed otherwise. */
int no_such_process(sd_bus_error *error, pid_t pid, int r);
