/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The process a call is about (see bus-target.h). */

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/pidfd.h>

#include "authz.h"
#include "bus-target.h"
#include "latnice/dbus.h"
#include "login-session.h"
#include "util.h"

void target_done(Target *t) {
        if (t->pidfd >= 0)
                close(t->pidfd);
        t->pidfd = -1;
}

int no_such_process(sd_bus_error *error, pid_t pid, int r) {
        if (r == -ESRCH || r == -ENOENT)
                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROCESS, "No process with PID %d.", (int) pid);
        return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot read process %d: %s", (int) pid,
                                 strerror(-r));
}

/* Is the pinned process still the one that was read? Then everything read about it is about it. */
bool target_still_there(int proc_fd, const Target *t) {
        return proc_pidfd_is(proc_fd, t->pidfd, t->pid, t->st.start_time);
}

bool target_owned_now(int proc_fd, pid_t pid, uint64_t start_time, uid_t caller) {
        ProcIds ids;

        return proc_pid_is(proc_fd, pid, start_time) && proc_ids_read(proc_fd, pid, &ids) >= 0 &&
               authz_owns(caller, ids.ruid, ids.euid);
}

AuthzSession target_bound_session(const Target *t, const BusCaller *c, char **ret_session) {
        if (login_bound_session(t->pid, c->pid, c->uid, t->ruid, ret_session) < 0)
                return AUTHZ_SESSION_NONE;
        return login_session_usable(*ret_session) ? AUTHZ_SESSION_ACTIVE_LOCAL : AUTHZ_SESSION_INACTIVE_OR_REMOTE;
}

/* Pins pid (opens a pidfd first), then reads what the checks need. */
static int target_open(int proc_fd, pid_t pid, int pidfd, Target *t, sd_bus_error *error) {
        ProcIds ids = {};
        int r;

        *t = (Target) { .pid = pid, .pidfd = pidfd };
        if (t->pidfd < 0) {
                t->pidfd = pidfd_open(pid, 0);
                if (t->pidfd < 0) {
                        r = -errno;
                        /* A thread's id (from top -H, say) names no process: say whose thread it is.
                         * (pidfd_open() says EINVAL on older kernels, ENOENT on 6.18.) */
                        if ((r == -EINVAL || r == -ENOENT || r == -ESRCH) && proc_ids_read(proc_fd, pid, &ids) >= 0 && ids.tgid != pid)
                                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROCESS,
                                                         "%d is not a process but a thread of process %d: ask "
                                                         "about %d.", (int) pid, (int) ids.tgid, (int) ids.tgid);
                        return no_such_process(error, pid, r);
                }
        }
        r = proc_stat_read_pid(proc_fd, pid, 0, &t->st);
        if (r >= 0)
                r = proc_ids_read(proc_fd, pid, &ids);
        t->ruid = ids.ruid;
        t->euid = ids.euid;
        if (r >= 0 && (proc_pidfd_exited(t->pidfd) || t->st.state == 'Z'))
                r = -ESRCH;
        if (r < 0) {
                target_done(t);
                return no_such_process(error, pid, r);
        }
        return 0;
}

int target_from_pid(int proc_fd, const BusCaller *c, uint32_t upid, Target *t, sd_bus_error *error) {
        pid_t pid;

        if (upid == 0) {
                /* 0: the calling process, as elsewhere on the system bus */
                if (c->pid <= 0)
                        return sd_bus_error_set(error, LATNICE_ERROR_INVALID_PID,
                                                "PID 0 means the caller, and the caller's pid is unknown.");
                pid = c->pid;
        } else if (upid > INT_MAX)
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PID, "Invalid PID %" PRIu32 ".", upid);
        else
                pid = (pid_t) upid;
        return target_open(proc_fd, pid, -1, t, error);
}

/* The process behind a pidfd handed in: its pid in our namespace, from fdinfo. */
int target_from_pidfd(int proc_fd, int fd, Target *t, sd_bus_error *error) {
        _cleanup_(freep) char *info = NULL;
        _cleanup_(closep) int own = -1;
        char path[64], link[64];
        const char *p;
        ssize_t n;
        int pid, r;

        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        n = readlink(path, link, sizeof(link) - 1);
        if (n < 0 || (link[n] = 0, strcmp(link, "anon_inode:[pidfd]") != 0))
                return sd_bus_error_set(error, LATNICE_ERROR_INVALID_PID, "The file descriptor is not a pidfd.");
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
        r = read_full_file(AT_FDCWD, path, 16 * 1024, &info, NULL);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot read the pidfd: %s", strerror(-r));
        p = strstr(info, "\nPid:");
        if (!p || sscanf(p + 5, "%d", &pid) != 1)
                return sd_bus_error_set(error, LATNICE_ERROR_INVALID_PID, "The pidfd names no process.");
        if (pid == -1)
                return sd_bus_error_set(error, LATNICE_ERROR_NO_SUCH_PROCESS, "The pidfd's process has exited.");
        if (pid == 0)
                return sd_bus_error_set(error, LATNICE_ERROR_INVALID_PID,
                                        "The pidfd's process is not visible in latniced's pid namespace.");
        /* Ours to keep and close: the message owns the one it carries. */
        own = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (own < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot keep the pidfd: %m");
        return target_open(proc_fd, (pid_t) pid, TAKE_FD(own), t, error);
}

/* Reads the target argument ('u' pid or 'h' pidfd) of a call; by_pidfd says which. */
int target_read(int proc_fd, sd_bus_message *call, const BusCaller *c, bool by_pidfd, Target *t,
                sd_bus_error *error) {
        uint32_t upid;
        int fd, r;

        if (by_pidfd) {
                r = sd_bus_message_read(call, "h", &fd);
                return r < 0 ? r : target_from_pidfd(proc_fd, fd, t, error);
        }
        r = sd_bus_message_read(call, "u", &upid);
        return r < 0 ? r : target_from_pid(proc_fd, c, upid, t, error);
}

int target_check_owner(const BusCaller *c, const Target *t, sd_bus_error *error) {
        if (authz_owns(c->uid, t->ruid, t->euid))
                return 0;
        return sd_bus_error_setf(error, LATNICE_ERROR_NOT_YOUR_PROCESS,
                                 "Process %d belongs to another user: only root and its owner may see it.",
                                 (int) t->pid);
}

int target_send_reply(int proc_fd, const Target *t, sd_bus_message *reply, sd_bus_error *error) {
        if (!target_still_there(proc_fd, t))
                return no_such_process(error, t->pid, -ESRCH);
        return sd_bus_send(NULL, reply, NULL);
}
