/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descendants that carry one of our values through fork (see
 * manager-inherited.h). The kernel side records them at fork, at the cost
 * of one hash lookup per fork of a process that carries a value, and
 * forgets them at exit; this side reads the map only when a value's reason
 * ends (a boost, a stop) or an exec's value has no other source.
 */

#include <inttypes.h>

#include "log.h"
#include "manager-inherited.h"
#include "proc.h"
#include "util.h"

/* How often a full map is cleaned of what is stale, at most. */
#define INHERITED_FULL_USEC (10 * 1000 * 1000ULL)

static Inherited inherited_from_bpf(const Manager *m, const ExecBpfInherited *x) {
        return (Inherited) {
                .pid = x->pid,
                .start_time = x->start_boottime / m->ns_per_tick,
                .origin = x->origin,
                .origin_start = x->origin_start_boottime / m->ns_per_tick,
        };
}

int manager_inherited_list(Manager *m, Inherited **ret) {
        _cleanup_(freep) ExecBpfInherited *x = NULL;
        _cleanup_(freep) Inherited *v = NULL;
        size_t k = 0;
        int n;

        *ret = NULL;
        if (!m->bpf || m->ns_per_tick == 0)
                return 0;
        n = exec_bpf_inherited_list(m->bpf, &x);
        if (n <= 0)
                return n;
        v = calloc((size_t) n, sizeof(Inherited));
        if (!v)
                return -ENOMEM;
        for (int i = 0; i < n; i++) {
                Inherited d = inherited_from_bpf(m, &x[i]);

                /* Its exit went unseen (it carried the default by then): not worth a slot any more. */
                if (!proc_pid_is(m->proc_fd, d.pid, d.start_time)) {
                        (void) exec_bpf_inherited_forget(m->bpf, d.pid);
                        continue;
                }
                v[k++] = d;
        }
        *ret = TAKE_PTR(v);
        return (int) k;
}

const AppliedProcess *manager_inherited_source(Manager *m, pid_t pid, uint64_t start_time) {
        ExecBpfInherited x;
        Inherited d;

        if (!m->bpf || m->ns_per_tick == 0 || exec_bpf_inherited_get(m->bpf, pid, &x) < 0)
                return NULL;
        d = inherited_from_bpf(m, &x);
        if (d.start_time != start_time)
                return NULL; /* about an earlier process with this pid */
        return applied_table_get_process(m->applied, d.origin, d.origin_start);
}

int manager_inherited_restore(Manager *m, const Inherited *d, uint64_t raw, uint64_t before_raw) {
        AppliedProcess x = {
                .pid = d->pid,
                .start_time = d->start_time,
                .raw = raw,
                .before_raw = before_raw,
        };
        int r;

        if (applied_table_get_process(m->applied, d->pid, d->start_time))
                return 0; /* we set it ourselves since: its own entry says what it carries */
        r = applied_is_ours(&m->probe, m->proc_fd, &x);
        if (r == -ESRCH)
                manager_inherited_forget(m, d->pid);
        if (r <= 0)
                return r == -ESRCH ? 0 : r;
        r = applied_restore(&m->probe, m->proc_fd, &x);
        if (r <= 0)
                return r == -ESRCH ? 0 : r;
        manager_inherited_forget(m, d->pid);
        return 1;
}

void manager_inherited_forget(Manager *m, pid_t pid) {
        if (m->bpf)
                (void) exec_bpf_inherited_forget(m->bpf, pid);
}

size_t manager_inherited_restore_all(Manager *m) {
        _cleanup_(freep) Inherited *v = NULL;
        size_t done = 0;
        int n;

        n = manager_inherited_list(m, &v);
        for (int i = 0; i < n; i++) {
                const AppliedProcess *e = applied_table_get_process(m->applied, v[i].origin, v[i].origin_start);

                /* An origin that exited took what it could tell with it: its descendants keep the value. */
                if (!e || e->manual)
                        continue;
                if (manager_inherited_restore(m, &v[i], e->raw, e->before_raw) > 0) {
                        log_info("PID %d: restored LatencyNice=%d, inherited from %s[%d] through fork (stopping).",
                                 (int) v[i].pid, e->before, e->comm, (int) e->pid);
                        done++;
                }
        }
        return done;
}

void manager_inherited_on_full(Manager *m) {
        _cleanup_(freep) Inherited *v = NULL;
        uint64_t now = monotonic_usec();
        ExecBpfCounters c = {};
        int n;

        if (m->inherited_full_usec != 0 && now < m->inherited_full_usec + INHERITED_FULL_USEC)
                return;
        m->inherited_full_usec = now;
        manager_leave_realtime(m);
        n = manager_inherited_list(m, &v);
        (void) exec_bpf_counters(m->bpf, &c);
        log_warning("The record of processes that inherited a value of ours through fork was full (%" PRIu64
                    " forks not recorded so far; %d of %d entries are about running processes): those not "
                    "recorded are found only while they are in the tree.",
                    c.forks_unrecorded, n, LATNICE_INHERITED_MAX);
}
