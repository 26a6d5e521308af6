/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descendants that carry one of our values through fork (see
 * manager-inherited.h). The kernel side records them at fork, at the cost
 * of one hash lookup per fork of a process that carries a value, and
 * forgets them at exit; this side reads the map only when a value's reason
 * ends (a boost, a stop) or an exec's value has no other source. Without
 * BPF, the proc connector's fork and exit events keep the same record here.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "latnice/journal.h"
#include "log.h"
#include "manager-inherited.h"
#include "pid-index.h"
#include "proc.h"
#include "util.h"

/* How often a full map is cleaned of what is stale, at most; and a user's full share is said. */
#define INHERITED_FULL_USEC (10 * 1000 * 1000ULL)

/* The names of the maps in systemd's file descriptor store. */
#define FDNAME_INHERITED "inherited"
#define FDNAME_INHERITED_USERS "inherited-users"

/*
 * The proc connector's record: a dense array found by pid through a PidIndex
 * (pid-index.h, as the applied table), at most LATNICE_INHERITED_MAX entries
 * as the kernel's map.
 */
typedef struct InheritedShare {
        uid_t uid;
        uint32_t held;
        uint64_t refused;
} InheritedShare;

typedef struct InheritedTable {
        Inherited *entries;
        size_t n, alloc;
        PidIndex index;
        /* Each user's share (LATNICE_INHERITED_PER_USER), as the kernel's inherited_users; few users. */
        InheritedShare *shares;
        size_t n_shares;
} InheritedTable;

static pid_t inherited_pid(const void *entries, uint32_t k) {
        return ((const Inherited *) entries)[k].pid;
}

static Inherited *table_get(InheritedTable *t, pid_t pid) {
        uint32_t k = t ? pid_index_get(&t->index, t->entries, pid) : 0;

        return k != 0 ? &t->entries[k - 1] : NULL;
}

static InheritedShare *table_share(InheritedTable *t, uid_t uid, bool make) {
        InheritedShare *v;

        for (size_t i = 0; i < t->n_shares; i++)
                if (t->shares[i].uid == uid)
                        return &t->shares[i];
        if (!make || t->n_shares >= LATNICE_INHERITED_USERS_MAX)
                return NULL;
        v = reallocarray(t->shares, t->n_shares + 1, sizeof(InheritedShare));
        if (!v)
                return NULL;
        t->shares = v;
        v[t->n_shares] = (InheritedShare) { .uid = uid };
        return &v[t->n_shares++];
}

static void table_release(InheritedTable *t, uid_t uid) {
        InheritedShare *s = table_share(t, uid, false);

        if (!s || s->held == 0)
                return;
        /* A user who holds nothing leaves the list (what it was refused is said already). */
        if (--s->held == 0 && s->refused == 0)
                *s = t->shares[--t->n_shares];
}

/* 0, -E2BIG (the record is full), -EDQUOT (d->uid holds its share), or -ENOMEM. */
static int table_put(InheritedTable *t, const Inherited *d) {
        Inherited *old = table_get(t, d->pid);
        InheritedShare *s;
        int r;

        if (old) {
                table_release(t, old->uid);
                old->uid = (uid_t) -1; /* counted again below, if it fits */
        }
        if (!old && t->n >= LATNICE_INHERITED_MAX)
                return -E2BIG;
        s = table_share(t, d->uid, true);
        if (!s)
                return -E2BIG;
        if (s->held >= LATNICE_INHERITED_PER_USER) {
                s->refused++;
                return -EDQUOT;
        }
        if (old)
                *old = *d;
        else {
                r = pid_index_append(&t->index, (void **) &t->entries, &t->alloc, &t->n, d, sizeof(Inherited));
                if (r < 0)
                        return r;
        }
        s->held++;
        return 0;
}

static void table_remove(InheritedTable *t, pid_t pid) {
        uint32_t k = t ? pid_index_get(&t->index, t->entries, pid) : 0;

        if (k-- == 0)
                return;
        table_release(t, t->entries[k].uid);
        pid_index_delete(&t->index, t->entries, pid);
        /* Dense: the last entry fills the gap. */
        if (k != t->n - 1) {
                t->entries[k] = t->entries[t->n - 1];
                pid_index_set(&t->index, t->entries, t->entries[k].pid, k);
        }
        t->n--;
        pid_index_shrink(&t->index, t->entries, t->n);
}

void manager_inherited_done(Manager *m) {
        m->dropped_origins = mfree(m->dropped_origins);
        m->n_dropped_origins = 0;
        if (m->inherited_nl) {
                free(m->inherited_nl->entries);
                free(m->inherited_nl->shares);
                pid_index_done(&m->inherited_nl->index);
        }
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
                d.uid = p->uid;
        } else if (from) {
                d.origin = from->origin;
                d.origin_start = from->origin_start;
                d.uid = from->uid;
        } else
                return; /* nearly every fork: its parent has no value of ours */
        /*
         * Gone already: events are read after the fact, and a child that forked and exited in
         * between may have passed the value on. It is kept (with no start time if /proc has lost it
         * too: it restores nothing) for its own forks, which come next, to find their origin; its exit
         * event, which follows them, removes it. Alive without the value (SCHED_RESET_ON_FORK):
         * nothing to follow.
         */
        r = proc_stat_read_pid(m->proc_fd, child, 0, &st);
        if (r >= 0) {
                d.start_time = st.start_time;
                r = sched_thread_get(&m->probe, child, &cur);
                if (r >= 0 && !sched_thread_has_value(&m->probe, &cur))
                        return;
        }
        if (r < 0 && r != -ESRCH && r != -ENOENT)
                return;
        if (!m->inherited_nl) {
                m->inherited_nl = calloc(1, sizeof(InheritedTable));
                if (!m->inherited_nl)
                        return (void) log_oom();
                m->inherited_nl->index.key = inherited_pid;
        }
        r = table_put(m->inherited_nl, &d);
        if (r == -E2BIG) {
                m->inherited_unrecorded++;
                manager_inherited_on_full(m);
        } else if (r == -EDQUOT) {
                m->inherited_unrecorded++;
                manager_inherited_on_share(m, d.uid);
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
                /* A copy first: the removal of the dead moves entries around. */
                v = calloc(t->n, sizeof(Inherited));
                if (!v)
                        return -ENOMEM;
                memcpy(v, t->entries, t->n * sizeof(Inherited));
                n = (int) t->n;
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
                        log_decision(LOG_INFO, LATNICE_MESSAGE_RESTORED, v[i].pid, NULL, e->before,
                                     "PID %d: restored LatencyNice=%d, inherited from %s[%d] through fork (stopping).",
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
        if (m->bpf) {
                (void) exec_bpf_counters(m->bpf, &c);
                (void) exec_bpf_inherited_users_prune(m->bpf);
        }
        else
                c.forks_unrecorded = m->inherited_unrecorded;
        log_warning("The record of processes that inherited a value of ours through fork was full (%" PRIu64
                    " forks not recorded so far; %d of %d entries are about running processes): those not "
                    "recorded are found only while they are in the tree.",
                    c.forks_unrecorded, n, LATNICE_INHERITED_MAX);
}

void manager_inherited_on_share(Manager *m, uid_t uid) {
        uint64_t now = monotonic_usec(), held = 0, refused = 0;

        if (m->inherited_share_usec != 0 && now < m->inherited_share_usec + INHERITED_FULL_USEC)
                return;
        m->inherited_share_usec = now;
        if (m->bpf)
                (void) exec_bpf_inherited_user(m->bpf, uid, &held, &refused);
        else if (m->inherited_nl) {
                const InheritedShare *s = table_share(m->inherited_nl, uid, false);

                if (s) {
                        held = s->held;
                        refused = s->refused;
                }
        }
        log_warning("The record of processes that inherited a value of ours through fork refused forks of uid %u: "
                    "it holds %" PRIu64 " entries, its per-user bound is %d (%" PRIu64 " of its forks not recorded "
                    "so far); those are found only while they are in the tree.",
                    (unsigned) uid, held, LATNICE_INHERITED_PER_USER, refused);
}

void manager_inherited_take_stored(Manager *m, int *ret_inherited, int *ret_users) {
        _cleanup_(strv_freep) char **names = NULL;
        int n;

        *ret_inherited = *ret_users = -1;
        (void) m;
        n = sd_listen_fds_with_names(true, &names);
        if (n < 0) {
                log_debug_errno(n, "Failed to read the file descriptors systemd kept for us, ignoring: %m");
                return;
        }
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                const char *name = names ? names[i] : NULL;

                if (streq_ptr(name, FDNAME_INHERITED) && *ret_inherited < 0)
                        *ret_inherited = fd;
                else if (streq_ptr(name, FDNAME_INHERITED_USERS) && *ret_users < 0)
                        *ret_users = fd;
                else {
                        log_debug("Closing file descriptor %d (%s) that systemd kept: not ours.", fd,
                                  name ?: "unnamed");
                        (void) close(fd);
                        continue;
                }
                (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
}

static void store_fd(int fd, const char *name) {
        _cleanup_(freep) char *msg = NULL;
        int r;

        /* FDPOLL=0: a map has no poll(); systemd would refuse to watch it, and so the fd. */
        if (asprintf(&msg, "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", name) < 0)
                return (void) log_oom();
        r = sd_pid_notify_with_fds(0, false, msg, &fd, 1);
        if (r < 0)
                log_warning_errno(r, "Failed to hand the map '%s' to systemd's file descriptor store, ignoring "
                                  "(after a crash, processes that inherited a value through fork are not known "
                                  "as ours): %m", name);
}

void manager_inherited_store(Manager *m) {
        if (!m->bpf)
                return;
        store_fd(exec_bpf_inherited_fd(m->bpf), FDNAME_INHERITED);
        store_fd(exec_bpf_inherited_users_fd(m->bpf), FDNAME_INHERITED_USERS);
}

void manager_inherited_unstore(Manager *m) {
        if (!m->bpf)
                return;
        (void) sd_notify(false, "FDSTOREREMOVE=1\nFDNAME=" FDNAME_INHERITED);
        (void) sd_notify(false, "FDSTOREREMOVE=1\nFDNAME=" FDNAME_INHERITED_USERS);
}

void manager_inherited_note_dropped(Manager *m, const AppliedProcess *e) {
        Inherited *v = reallocarray(m->dropped_origins, m->n_dropped_origins + 1, sizeof(Inherited));

        if (!v)
                return (void) log_oom();
        m->dropped_origins = v;
        /* Here pid/start_time name the origin, and origin/origin_start are unused. */
        v[m->n_dropped_origins++] = (Inherited) {
                .pid = e->pid,
                .start_time = e->start_time,
                .raw = e->raw,
                .before_raw = e->before_raw,
        };
}

void manager_inherited_drop_origins(Manager *m) {
        _cleanup_(freep) Inherited *v = NULL;
        size_t done = 0;
        int n;

        if (m->n_dropped_origins == 0)
                return;
        n = manager_inherited_list(m, &v);
        for (int i = 0; i < n; i++)
                for (size_t k = 0; k < m->n_dropped_origins; k++) {
                        const Inherited *o = &m->dropped_origins[k];

                        if (v[i].origin != o->pid || v[i].origin_start != o->start_time)
                                continue;
                        if (manager_inherited_restore(m, &v[i], o->raw, o->before_raw) > 0)
                                done++;
                        break;
                }
        if (done > 0)
                log_info("Ended the foreground boost of an earlier latniced on %zu processes that inherited it "
                         "through fork.", done);
        m->dropped_origins = mfree(m->dropped_origins);
        m->n_dropped_origins = 0;
}
