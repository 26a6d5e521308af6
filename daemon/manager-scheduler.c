/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scx_latnice as latniced's child. Why a child and not a unit of its own:
 * the scheduler means something only together with the values latniced
 * sets, so it lives and dies with latniced; it runs in latniced.service's
 * cgroup, so `systemctl stop latniced` (KillMode=control-group) ends it even
 * after a latniced crash, and PR_SET_PDEATHSIG ends it when latniced dies
 * outside systemd. Its BPF link closes with it, so however it ends, every
 * task goes back to the fair class. One setting in one file
 * ([Daemon] Scheduler=), no second unit to keep in step, and it works
 * without systemd (the VM tests run it so). Its output goes where
 * latniced's goes (the journal).
 *
 * The child is watched through a pidfd in the event loop: if it exits
 * (the kernel ejected it, another BPF scheduler was there first) latniced
 * says so and does not restart it; the fair class runs the tasks again.
 */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "latnice/uapi.h"
#include "log.h"
#include "manager-scheduler.h"
#include "manager.h"
#include "rules.h"
#include "util.h"

#define STOP_TIMEOUT_MS 5000 /* scx_latnice detaches in well under a second */

typedef struct ManagerScheduler {
        pid_t pid;
        int pidfd;
        sd_event_source *source;
} ManagerScheduler;

static void scheduler_reap(ManagerScheduler *s, const char *why) {
        siginfo_t si = {};

        if (waitid(P_PIDFD, s->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return;
        if (si.si_code == CLD_EXITED)
                log_full_errno(why ? LOG_INFO : LOG_WARNING, 0, "scx_latnice (pid %d) exited with status %d%s%s.",
                               s->pid, si.si_status, why ? ": " : "", why ? why : "");
        else
                log_full_errno(why ? LOG_INFO : LOG_WARNING, 0, "scx_latnice (pid %d) was killed by signal %s%s%s.",
                               s->pid, strsignal(si.si_status), why ? ": " : "", why ? why : "");
        s->source = sd_event_source_disable_unref(s->source);
        close(s->pidfd);
        s->pidfd = -1;
        s->pid = 0;
}

static int scheduler_on_exit(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        scheduler_reap(m->scheduler_state, NULL);
        log_warning("The BPF scheduler latniced started is gone (its output above says why): the fair class "
                    "runs the tasks again. latniced does not restart it.");
        return 0;
}

static int scheduler_spawn(ManagerScheduler *s, const char *path) {
        pid_t parent = getpid(), pid;

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                struct latnice_sched_attr a = {
                        .size = LATNICE_SCHED_ATTR_SIZE_VER1,
                        .sched_policy = LATNICE_SCHED_OTHER,
                };
                sigset_t none;

                /* latniced blocks its signals for the event loop: the loader wants them back. */
                sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                        _exit(EXIT_FAILURE);
                /* An ordinary task: not latniced's realtime priority nor its own short custom slice. */
                (void) latnice_sched_setattr(0, &a, 0);
                execl(path, path, (char *) NULL);
                _exit(127);
        }
        s->pid = pid;
        s->pidfd = pidfd_open(pid, 0);
        if (s->pidfd < 0) {
                int r = -errno;

                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                s->pid = 0;
                return r;
        }
        return 0;
}

int manager_scheduler_start(Manager *m) {
        _cleanup_(freep) char *conf = path_join(m->options.root, LATNICE_DAEMON_CONF);
        const char *path = m->options.scx_latnice ?: LATNICE_SCX_LATNICE;
        DaemonConfig dc = {};
        ManagerScheduler *s;
        int r;

        if (!conf)
                return log_oom();
        /* Its errors are reported where the profile is read. */
        (void) daemon_config_load(conf, &dc);
        r = dc.scheduler;
        daemon_config_done(&dc);
        if (r != DAEMON_SCHEDULER_LATNICE)
                return 0;
        if (m->options.dry_run) {
                log_notice("Scheduler=latnice: not starting %s in a dry run.", path);
                return 0;
        }
        if (access(path, X_OK) < 0)
                return log_warning_errno(-errno, "Scheduler=latnice, but %s cannot be run (%m): latnice was built "
                                         "without scx_latnice (meson says why), ignoring.", path);
        s = calloc(1, sizeof(ManagerScheduler));
        if (!s)
                return log_oom();
        s->pidfd = -1;
        m->scheduler_state = s;
        r = scheduler_spawn(s, path);
        if (r < 0)
                return log_warning_errno(r, "Cannot start %s: %m, ignoring.", path);
        r = sd_event_add_io(m->event, &s->source, s->pidfd, EPOLLIN, scheduler_on_exit, m);
        if (r < 0)
                return log_warning_errno(r, "Cannot watch scx_latnice (pid %d): %m", s->pid);
        (void) sd_event_source_set_description(s->source, "scx-latnice-child");
        log_info("Scheduler=latnice: started %s (pid %d); the backend reads sched-ext:latnice once it is "
                 "enabled.", path, s->pid);
        return 0;
}

void manager_scheduler_free(Manager *m) {
        ManagerScheduler *s = m->scheduler_state;
        struct pollfd p;

        if (!s)
                return;
        if (s->pidfd >= 0) {
                (void) pidfd_send_signal(s->pidfd, SIGTERM, NULL, 0);
                p = (struct pollfd) { .fd = s->pidfd, .events = POLLIN };
                /* Bounded: it detaches at once; a loader that does not is killed (its link closes too). */
                if (poll(&p, 1, STOP_TIMEOUT_MS) <= 0) {
                        log_warning("scx_latnice (pid %d) did not stop within %d ms of SIGTERM: killing it.", s->pid,
                                    STOP_TIMEOUT_MS);
                        (void) pidfd_send_signal(s->pidfd, SIGKILL, NULL, 0);
                        (void) poll(&p, 1, STOP_TIMEOUT_MS);
                }
                scheduler_reap(s, "stopped with latniced");
        }
        sd_event_source_disable_unref(s->source);
        if (s->pidfd >= 0)
                close(s->pidfd);
        free(s);
        m->scheduler_state = NULL;
}
