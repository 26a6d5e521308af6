/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descendants that carry one of our values through fork (see
 * manager-inherited.h). The kernel side records them at fork, at the cost
 * of one hash lookup per fork of a process that carries a value, and
 * forgets them at exit; this side reads the map only when a value's reason
 * ends (a boost, a stop) or an exec's value has no other source. Without
 * BPF, the proc connector's fork and exit events keep the same record here.
 */

#include <inttypes.h>

#include "log.h"
#include "manager-inherited.h"
#include "proc.h"
#include "util.h"

/* How often a full map is cleaned of what is stale, at most. */
#define INHERITED_FULL_USEC (10 * 1000 * 1000ULL)

/*
 * The proc connector's record: open addressing on the pid (linear probing,
 * backward-shift deletion, as the applied table's index), grown by
 * doubling, at most LATNICE_INHERITED_MAX entries as the kernel's map.
 */
typedef struct InheritedTable {
        size_t n, n_slots; /* n_slots: a power of two */
        Inherited *slots;  /* pid 0: free */
} InheritedTable;

static size_t table_home(const InheritedTable *t, pid_t pid) {
        return (size_t) (((uint32_t) pid * 2654435769U) & (uint32_t) (t->n_slots - 1));
}

static size_t table_find(const InheritedTable *t, pid_t pid) {
        size_t i = table_home(t, pid);

        while (t->slots[i].pid != 0 && t->slots[i].pid != pid)
                i = (i + 1) & (t->n_slots - 1);
        return i;
}

static Inherited *table_get(InheritedTable *t, pid_t pid) {
        size_t i;

        if (!t || t->n_slots == 0 || pid <= 0)
                return NULL;
        i = table_find(t, pid);
        return t->slots[i].pid == pid ? &t->slots[i] : NULL;
}

static int table_put(InheritedTable *t, const Inherited *d) {
        size_t i;

        if (t->n_slots > 0) {
                i = table_find(t, d->pid);
                if (t->slots[i].pid == d->pid) {
                        t->slots[i] = *d;
                        return 0;
                }
        }
        if (t->n >= LATNICE_INHERITED_MAX)
                return -E2BIG;
        if ((t->n + 1) * 4 > t->n_slots * 3) {
                size_t n_slots = t->n_slots ? t->n_slots * 2 : 64;
                Inherited *old = t->slots, *slots = calloc(n_slots, sizeof(Inherited));
                size_t n_old = t->n_slots;

                if (!slots)
                        return -ENOMEM;
                t->slots = slots;
                t->n_slots = n_slots;
                for (size_t k = 0; k < n_old; k++)
                        if (old[k].pid != 0)
                                t->slots[table_find(t, old[k].pid)] = old[k];
                free(old);
        }
        t->slots[table_find(t, d->pid)] = *d;
        t->n++;
        return 0;
}

static void table_remove(InheritedTable *t, pid_t pid) {
        size_t i, j;

        if (!t || t->n_slots == 0 || pid <= 0)
                return;
        i = table_find(t, pid);
        if (t->slots[i].pid != pid)
                return;
        t->slots[i].pid = 0;
        t->n--;
        for (j = (i + 1) & (t->n_slots - 1); t->slots[j].pid != 0; j = (j + 1) & (t->n_slots - 1)) {
                size_t home = table_home(t, t->slots[j].pid);

                /* Is home cyclically in (i, j]? Then it stays. */
                if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
                        continue;
                t->slots[i] = t->slots[j];
                t->slots[j].pid = 0;
                i = j;
        }
}

void manager_inherited_done(Manager *m) {
        if (m->inherited_nl)
                free(m->inherited_nl->slots);
        m->inherited_nl = mfree(m->inherited_nl);
}

void manager_inherited_on_fork(Manager *m, pid_t child, pid_t parent) {
        const AppliedProcess *p = applied_table_get(m->applied, parent);
        const Inherited *from = p ? NULL : table_get(m->inherited_nl, parent);
        Inherited d = { .pid = child };
        ThreadSched cur;
        ProcStat st;
        int r;

        if (p) {
                d.origin = p->pid;
                d.origin_start = p->start_time;
        } else if (from) {
                d.origin = from->origin;
                d.origin_start = from->origin_start;
        } else
                return; /* nearly every fork: its parent has no value of ours */
        /* Gone already, or it did not inherit (SCHED_RESET_ON_FORK): nothing to follow. */
        if (proc_stat_read_pid(m->proc_fd, child, 0, &st) < 0 || sched_thread_get(&m->probe, child, &cur) < 0 ||
            !sched_thread_has_value(&m->probe, &cur))
                return;
        d.start_time = st.start_time;
        if (!m->inherited_nl) {
                m->inherited_nl = calloc(1, sizeof(InheritedTable));
                if (!m->inherited_nl)
                        return (void) log_oom();
        }
        r = table_put(m->inherited_nl, &d);
        if (r == -E2BIG) {
                m->inherited_unrecorded++;
                manager_inherited_on_full(m);
        } else if (r < 0)
                (void) log_oom();
}

void manager_inherited_on_exit(Manager *m, pid_t pid) {
        table_remove(m->inherited_nl, pid);
}

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
        if (!m->bpf) {
                InheritedTable *t = m->inherited_nl;

                if (!t || t->n == 0)
                        return 0;
                v = calloc(t->n, sizeof(Inherited));
                if (!v)
                        return -ENOMEM;
                /* Collect first: the removal of the dead moves entries around. */
                for (size_t i = 0; i < t->n_slots && k < t->n; i++)
                        if (t->slots[i].pid != 0)
                                v[k++] = t->slots[i];
                n = (int) k;
                k = 0;
                for (int i = 0; i < n; i++) {
                        if (!proc_pid_is(m->proc_fd, v[i].pid, v[i].start_time)) {
                                table_remove(t, v[i].pid);
                                continue;
                        }
                        v[k++] = v[i];
                }
                *ret = TAKE_PTR(v);
                return (int) k;
        }
        if (m->ns_per_tick == 0)
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

        if (!m->bpf) {
                const Inherited *e = table_get(m->inherited_nl, pid);

                if (!e)
                        return NULL;
                d = *e;
        } else if (m->ns_per_tick == 0 || exec_bpf_inherited_get(m->bpf, pid, &x) < 0)
                return NULL;
        else
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
        else
                table_remove(m->inherited_nl, pid);
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
        if (m->bpf)
                (void) exec_bpf_counters(m->bpf, &c);
        else
                c.forks_unrecorded = m->inherited_unrecorded;
        log_warning("The record of processes that inherited a value of ours through fork was full (%" PRIu64
                    " forks not recorded so far; %d of %d entries are about running processes): those not "
                    "recorded are found only while they are in the tree.",
                    c.forks_unrecorded, n, LATNICE_INHERITED_MAX);
}
