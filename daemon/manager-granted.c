/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scx_latnice gives a task the value latniced granted it and 0 to every
 * other task, whatever custom slice the task set itself (any user may set
 * one on their own tasks: include/latnice/granted.h). This file keeps the
 * scheduler's map of granted values equal to the applied table: opened
 * where scx_latnice pinned it, filled from the table, then each record and
 * each forget written as it happens (a syscall each, only while a map is
 * held). Nothing is held on a machine where scx_latnice never ran.
 */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "granted.h"
#include "log.h"
#include "manager-granted.h"
#include "manager.h"
#include "util.h"

typedef struct ManagerGranted {
        int fd;
        uint32_t id;
        bool warned_full; /* said once per map that it is full */
} ManagerGranted;

static void granted_failed(Manager *m, ManagerGranted *g, const AppliedProcess *e, int r) {
        if (r == -E2BIG || r == -ENOMEM) {
                if (!g->warned_full)
                        log_warning_errno(r, "The map of granted values (%s) is full at %d entries: under "
                                          "scx_latnice %s[%d] and further processes run at 0 until entries are "
                                          "freed: %m", LATNICE_GRANTED_PIN, LATNICE_GRANTED_MAX, e->comm,
                                          (int) e->pid);
                g->warned_full = true;
                return;
        }
        log_debug_errno(r, "Failed to tell scx_latnice the value of %s[%d]: %m", e->comm, (int) e->pid);
}

void manager_granted_refresh(Manager *m) {
        ManagerGranted *g = m->granted_state;
        GrantedSync s = {};
        uint32_t id = 0;
        int fd = -1, r;

        /* One lstat() where no scheduler ever pinned a map (a kernel without sched_ext too: there the pin
         * exists only if somebody made it, as test-scheduler-unit does to check the unit's sandbox). */
        if (m->options.dry_run)
                return;
        r = granted_map_open(LATNICE_GRANTED_PIN, &fd, &id);
        if (r == -ENOENT || r == -ENOTDIR) {
                log_debug("No %s: no scx_latnice pinned its map of granted values.", LATNICE_GRANTED_PIN);
                return; /* a map held stays: it may be pinned again (the scheduler keeps reusing it) */
        }
        if (r < 0) {
                log_warning_errno(r, "Failed to open the map of granted values %s%s, ignoring (under scx_latnice "
                                  "the tasks latniced set run at 0): %m", LATNICE_GRANTED_PIN,
                                  r == -EPERM ? " (not root's, or writable by others)"
                                  : r == -EPROTO ? " (another layout: an scx_latnice of another version)" : "");
                return;
        }
        if (g && g->id == id) {
                close(fd);
                return;
        }
        if (!g) {
                g = calloc(1, sizeof(ManagerGranted));
                if (!g) {
                        close(fd);
                        log_oom();
                        return;
                }
                m->granted_state = g;
        } else
                close(g->fd);
        g->fd = fd;
        g->id = id;
        g->warned_full = false;
        r = granted_map_sync(g->fd, m->applied, &s);
        if (r < 0)
                log_warning_errno(r, "Failed to write %u of the values latniced set into %s: %m", s.n_failed,
                                  LATNICE_GRANTED_PIN);
        log_info("Told scx_latnice the values latniced set (map %s, id %u): %u written, %u stale entries removed.",
                 LATNICE_GRANTED_PIN, (unsigned) id, s.n_written, s.n_stale);
}

void manager_granted_put(Manager *m, const AppliedProcess *e) {
        ManagerGranted *g = m->granted_state;
        int r;

        if (!g)
                return;
        r = granted_map_put(g->fd, e);
        if (r < 0)
                granted_failed(m, g, e, r);
}

void manager_granted_remove(Manager *m, const AppliedProcess *e) {
        ManagerGranted *g = m->granted_state;
        int r;

        if (!g)
                return;
        r = granted_map_remove(g->fd, e);
        if (r < 0)
                log_debug_errno(r, "Failed to take %s[%d] out of the map of granted values: %m", e->comm,
                                (int) e->pid);
        else
                g->warned_full = false;
}

void manager_granted_free(Manager *m) {
        ManagerGranted *g = m->granted_state;

        if (!g)
                return;
        close(g->fd);
        free(g);
        m->granted_state = NULL;
}
