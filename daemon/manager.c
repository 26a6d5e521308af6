/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the manager's parts share: the names of the event sources, the
 * Backend property's strings, sd_notify (READY=1, STATUS=) and latniced's
 * own scheduling policy (realtime while it sleeps and handles execs). The
 * parts call these and this file calls none of them; the lifecycle that
 * calls the parts is manager-lifecycle.c.
 */

#include <inttypes.h>
#include <malloc.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>

#include "event-util.h"
#include "log.h"
#include "manager.h"
#include "util.h"

static const char * const source_kind_table[_SOURCE_MAX] = {
        [SOURCE_BPF] = "bpf",
        [SOURCE_NETLINK] = "netlink",
        [SOURCE_SCAN] = "proc-scan",
};

const char *source_kind_to_string(SourceKind k) {
        return k >= 0 && k < _SOURCE_MAX ? source_kind_table[k] : "auto";
}

SourceKind source_kind_from_string(const char *s) {
        if (strcmp(s, "auto") == 0)
                return SOURCE_AUTO;
        for (int k = 0; k < _SOURCE_MAX; k++)
                if (strcmp(s, source_kind_table[k]) == 0)
                        return k;
        if (strcmp(s, "scan") == 0)
                return SOURCE_SCAN;
        return _SOURCE_INVALID;
}

const char *manager_backend(const Manager *m) {
        return m->backend ?: backend_to_string(m->probe.backend);
}

const char *manager_backend_reason(const Manager *m) {
        return m->backend_reason ?: m->probe.reason;
}

void manager_notify_status(Manager *m) {
        if (!m->ready)
                return;
        (void) sd_notifyf(false, "STATUS=%zu rules (%s), %zu processes applied, %s events, %s backend",
                          m->rules ? m->rules->n_rules : 0, m->profile ?: "no profile",
                          applied_table_size(m->applied), source_kind_to_string(m->source),
                          manager_backend(m));
}

/* ---- our own scheduling ----------------------------------------------- */

/*
 * A matched program must get its value before it reaches main(), i.e. within
 * the few hundred microseconds its dynamic loader takes. Our wakeup after an
 * exec event lands on a busy CPU more often than not, and only a realtime
 * wakeup preempts for sure: measured here, a short custom slice leaves the
 * p99 exec->applied latency at ~2.5 ms, SCHED_FIFO 1 brings it to ~0.2 ms.
 *
 * So latniced *sleeps* at SCHED_FIFO, and only the exec sources (the ring
 * buffer, the proc connector) are dispatched at it, each with a budget per
 * dispatch. Every other source (the bus, timers, signals, inotify, scans,
 * restores) first calls manager_leave_realtime(), and the exec source's
 * prepare callback, which runs before the loop sleeps again, goes back to
 * SCHED_FIFO. One sched_setattr() each way, only when something else ran.
 * As a normal task latniced keeps the shortest slice: the mechanism it
 * applies, on itself.
 */
static int manager_sched_self(Manager *m, bool fifo) {
        struct latnice_sched_attr a = {
                .size = LATNICE_SCHED_ATTR_SIZE_VER1,
                .sched_policy = fifo ? LATNICE_SCHED_FIFO : LATNICE_SCHED_OTHER,
                .sched_flags = LATNICE_SCHED_FLAG_RESET_ON_FORK,
                .sched_priority = fifo ? 1 : 0,
                .sched_nice = fifo ? 0 : m->self_nice,
        };

        if (!fifo && m->probe.backend == BACKEND_EEVDF_SLICE)
                a.sched_runtime = sched_raw_value(&m->probe, LATNICE_MIN);
        else if (!fifo && m->probe.backend == BACKEND_LATENCY_NICE) {
                a.size = LATNICE_SCHED_ATTR_SIZE_VER2;
                a.sched_flags |= LATNICE_SCHED_FLAG_LATENCY_NICE;
                a.sched_latency_nice = LATNICE_MIN;
        }
        return latnice_sched_setattr(0, &a, 0) < 0 ? -errno : 0;
}

/* SCHED_FIFO on or off for the loop's thread, where it is not already so (and on only if it was granted). */
static void manager_switch_realtime(Manager *m, bool on) {
        int r;

        if (m->rt_on == on || (on && !m->realtime))
                return;
        r = manager_sched_self(m, on);
        if (r < 0)
                log_debug_errno(r, on ? "Failed to go back to SCHED_FIFO: %m" : "Failed to leave SCHED_FIFO: %m");
        else
                m->rt_on = on;
}

void manager_leave_realtime(Manager *m) {
        manager_switch_realtime(m, false);
}

static void manager_enter_realtime(Manager *m) {
        manager_switch_realtime(m, true);
}

/* The exec sources' prepare callback: runs before every sleep of the loop. */
int manager_on_exec_source_prepare(sd_event_source *s, void *userdata) {
        Manager *m = userdata;

        /* Behind (a storm, or an attacker's loop): the backlog is worked off as a normal task, which
         * cannot take a CPU away from anybody else for longer than its fair share. */
        if (!m->exec_behind)
                manager_enter_realtime(m);
        return 0;
}

void manager_setup_realtime(Manager *m) {
        int r;

        errno = 0;
        m->self_nice = getpriority(PRIO_PROCESS, 0);
        if (errno != 0)
                m->self_nice = 0;
        if (m->probe.backend != BACKEND_NONE)
                (void) manager_sched_self(m, false);
        if (m->options.no_realtime)
                return;
        /* Try once now, so that a refusal is reported at start; then stay a normal task until the loop sleeps. */
        r = manager_sched_self(m, true);
        if (r < 0) {
                log_notice_errno(r, "Failed to run at SCHED_FIFO, ignoring (values may be set after a program "
                                 "started rather than before): %m");
                if (m->probe.backend != BACKEND_NONE)
                        (void) manager_sched_self(m, false);
                return;
        }
        m->realtime = m->rt_on = true;
        manager_leave_realtime(m);
        log_info("Handling exec events at SCHED_FIFO priority 1, everything else as a normal task.");
}

void manager_notify_ready(Manager *m) {
        if (m->ready)
                return;
        m->ready = true;
        (void) sd_notify(false, "READY=1");
        manager_notify_status(m);
        log_info("Ready: %zu processes applied at start.", applied_table_size(m->applied));
        manager_trim_soon(m);
}

/*
 * The heap start-up or a reload grew and freed goes back to the kernel. Only the heap: latniced's code
 * and read-only data stay mapped and resident, because a page dropped here would fault back in on the
 * realtime exec path (Anonymous and Pss in /proc/PID/smaps_rollup say what latniced costs, not RSS).
 */
static int manager_on_trim_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) malloc_trim(0);
        return 0;
}

void manager_trim_soon(Manager *m) {
        /* A few seconds on: the start-up scan or a reload's rescan is done by then; a burst of reloads trims once. */
        (void) event_reset_time_relative(m->event, &m->trim_timer, CLOCK_MONOTONIC, 3ULL * 1000 * 1000, 500 * 1000,
                                         manager_on_trim_timer, m, "malloc-trim", true);
}

