/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * [Daemon] Scheduler=latnice: scx_latnice, latnice's sched_ext scheduler,
 * runs while latniced runs.
 *
 * Under systemd it is a unit of its own, scx_latnice.service, which latniced
 * asks systemd to start (StartUnit, asynchronously, once the system bus is
 * there). Not a child: a child of latniced.service runs in its cgroup with
 * its environment, so what the loader tells systemd (READY=1, STATUS=, and
 * STOPPING=1 after the kernel ejected it) would be taken as latniced's under
 * NotifyAccess=all, and it would run in latniced's sandbox rather than in one
 * cut to a BPF loader. The unit is PartOf=latniced.service: stopping or
 * restarting latniced stops or restarts it; an exit of its own (an
 * ejection) leaves latniced running, which sees the fair class come back in
 * sched_ext's state (manager-scx.c) and does not start it again.
 *
 * Without systemd (or with --no-bus) latniced forks the loader itself and
 * watches it through a pidfd, as before, with a clean environment: nothing
 * of latniced's notify socket, watchdog or socket activation. PR_SET_PDEATHSIG
 * ends it when latniced dies. Its BPF link closes with it, so however it
 * ends, every task goes back to the fair class.
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

#include <systemd/sd-daemon.h>

#include "latnice/uapi.h"
#include "log.h"
#include "manager-scheduler.h"
#include "manager.h"
#include "rules.h"
#include "util.h"

#define STOP_TIMEOUT_MS 5000 /* scx_latnice detaches in well under a second */
#define SCHEDULER_UNIT "scx_latnice.service"

typedef struct ManagerScheduler {
        /* Under systemd: StartUnit sent once per latniced (never again after the scheduler ended). */
        bool via_unit;
        bool start_sent;
        sd_bus_slot *start_slot;

        /* Without systemd: our child. */
        pid_t pid;
        int pidfd;
        sd_event_source *source;
} ManagerScheduler;

/* ---- under systemd: scx_latnice.service ------------------------------------------------------- */

static int scheduler_on_start_unit(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        ManagerScheduler *s = m->scheduler_state;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        const char *job = NULL;

        manager_leave_realtime(m);
        s->start_slot = sd_bus_slot_unref(s->start_slot);
        if (e) {
                log_warning("Scheduler=latnice: systemd did not start %s: %s%s", SCHEDULER_UNIT,
                            e->message ?: e->name,
                            sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit")
                                    ? " (latnice was built without scx_latnice: meson says why)"
                                    : "");
                return 0;
        }
        (void) sd_bus_message_read(reply, "o", &job);
        log_info("Scheduler=latnice: systemd starts %s (job %s); the backend reads sched-ext:latnice once it is "
                 "enabled.", SCHEDULER_UNIT, job ?: "?");
        return 0;
}

void manager_scheduler_on_bus(Manager *m) {
        ManagerScheduler *s = m->scheduler_state;
        int r;

        if (!s || !s->via_unit || s->start_sent || !m->bus)
                return;
        /* "replace": a stop job of it queued meanwhile (latniced restarting) gives way. */
        r = sd_bus_call_method_async(m->bus, &s->start_slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                     "org.freedesktop.systemd1.Manager", "StartUnit", scheduler_on_start_unit, m,
                                     "ss", SCHEDULER_UNIT, "replace");
        if (r < 0) {
                log_warning_errno(r, "Scheduler=latnice: failed to ask systemd to start %s: %m", SCHEDULER_UNIT);
                return;
        }
        s->start_sent = true;
}

/* ---- without systemd: a child ------------------------------------------------------------------ */

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

/* What latniced was given to speak to its service manager is not the child's to use. */
static const char *const inherited_env[] = {
        "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
};

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

                for (size_t i = 0; i < ELEMENTSOF(inherited_env); i++)
                        (void) unsetenv(inherited_env[i]);
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

static int scheduler_fork(Manager *m, ManagerScheduler *s) {
        const char *path = m->options.scx_latnice ?: LATNICE_SCX_LATNICE;
        int r;

        if (access(path, X_OK) < 0)
                return log_warning_errno(-errno, "Scheduler=latnice, but %s cannot be run (%m): latnice was built "
                                         "without scx_latnice (meson says why), ignoring.", path);
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

/* ---- both --------------------------------------------------------------------------------------- */

int manager_scheduler_start(Manager *m) {
        _cleanup_(freep) char *conf = path_join(m->options.root, LATNICE_DAEMON_CONF);
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
                log_notice("Scheduler=latnice: not starting the scheduler in a dry run.");
                return 0;
        }
        s = calloc(1, sizeof(ManagerScheduler));
        if (!s)
                return log_oom();
        s->pidfd = -1;
        m->scheduler_state = s;
        /* systemd runs the system: it runs the scheduler too, once the bus is there (manager_scheduler_on_bus). */
        if (!m->options.no_bus && sd_booted() > 0) {
                s->via_unit = true;
                if (m->options.scx_latnice)
                        log_debug("Scheduler=latnice under systemd: %s's ExecStart= decides the loader, not "
                                  "--scx-latnice=%s.", SCHEDULER_UNIT, m->options.scx_latnice);
                return 0;
        }
        return scheduler_fork(m, s);
}

void manager_scheduler_free(Manager *m) {
        ManagerScheduler *s = m->scheduler_state;
        struct pollfd p;

        if (!s)
                return;
        /* A unit is stopped by systemd with latniced (PartOf=), not by us: a crash of latniced must not end it. */
        sd_bus_slot_unref(s->start_slot);
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
