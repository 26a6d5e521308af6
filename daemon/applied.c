/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The applied-state table: what latniced set on which process. Entries live
 * in one dense array (iteration, no holes); a PidIndex (pid-index.h) of
 * 32-bit slots finds them by pid. For n processes that is about n * (sizeof entry + 5)
 * bytes, a few hundred KB for thousands of processes: the daemon's RSS
 * budget is 4 MB. Pointers returned by get/next stay valid until the next
 * put or remove.
 */

#include <fcntl.h>

#include "applied.h"
#include "latnice/dbus.h"
#include "pid-index.h"
#include "proc.h"
#include "util.h"

struct AppliedTable {
        AppliedProcess *entries;
        size_t n_entries, alloc_entries;
        PidIndex index;
};

static pid_t entry_pid(const void *entries, uint32_t k) {
        return ((const AppliedProcess *) entries)[k].pid;
}

static void entry_done(AppliedProcess *e) {
        free(e->rule);
        free(e->rule_name);
}

AppliedTable *applied_table_new(void) {
        AppliedTable *t = calloc(1, sizeof(AppliedTable));

        if (t)
                t->index.key = entry_pid;
        return t;
}

AppliedTable *applied_table_free(AppliedTable *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_entries; i++)
                entry_done(&t->entries[i]);
        free(t->entries);
        pid_index_done(&t->index);
        free(t);
        return NULL;
}

int applied_table_put(AppliedTable *t, AppliedProcess *e) {
        AppliedProcess *old;
        int r;

        if (!t || !e || e->pid <= 0)
                return -EINVAL;

        old = applied_table_get(t, e->pid);
        if (old) {
                entry_done(old);
                *old = *e;
                e->rule = e->rule_name = NULL; /* ours now */
                return 0;
        }

        if (t->n_entries >= UINT32_MAX - 1)
                return -E2BIG;
        r = pid_index_append(&t->index, (void **) &t->entries, &t->alloc_entries, &t->n_entries, e,
                             sizeof(AppliedProcess));
        if (r < 0)
                return r;
        e->rule = e->rule_name = NULL;
        return 0;
}

AppliedProcess *applied_table_get(AppliedTable *t, pid_t pid) {
        uint32_t k = t ? pid_index_get(&t->index, t->entries, pid) : 0;

        return k != 0 ? &t->entries[k - 1] : NULL;
}

AppliedProcess *applied_table_get_process(AppliedTable *t, pid_t pid, uint64_t start_time) {
        AppliedProcess *e = applied_table_get(t, pid);

        return e && e->start_time == start_time ? e : NULL;
}

static void shrink(AppliedTable *t) {
        /* Give memory back after a burst (a build finishing): entries at
         * 1/4 use, the index when under 1/8 full. Failures just keep more. */
        if (t->alloc_entries > 8 && t->n_entries < t->alloc_entries / 4) {
                size_t n = t->alloc_entries / 2;
                AppliedProcess *ne = reallocarray(t->entries, n, sizeof(AppliedProcess));

                if (ne) {
                        t->entries = ne;
                        t->alloc_entries = n;
                }
        }
        pid_index_shrink(&t->index, t->entries, t->n_entries);
}

void applied_table_remove(AppliedTable *t, pid_t pid) {
        uint32_t k = t ? pid_index_get(&t->index, t->entries, pid) : 0;
        size_t last;

        if (k-- == 0)
                return;
        entry_done(&t->entries[k]);
        pid_index_delete(&t->index, t->entries, pid);

        /* Keep the entries dense: move the last one into the gap. */
        last = t->n_entries - 1;
        if (k != last) {
                t->entries[k] = t->entries[last];
                pid_index_set(&t->index, t->entries, t->entries[k].pid, k);
        }
        t->n_entries--;
        shrink(t);
}

size_t applied_table_size(const AppliedTable *t) {
        return t ? t->n_entries : 0;
}

const AppliedProcess *applied_table_find_thread(AppliedTable *t, pid_t tgid, uint64_t raw) {
        const AppliedProcess *e;
        size_t i = 0;

        if (tgid <= 0)
                return NULL;
        /* A walk over the table: only for an exec that carries a value its parent process has not. */
        while ((e = applied_table_next(t, &i)))
                if (e->tgid == tgid && e->raw == raw)
                        return e;
        return NULL;
}

AppliedProcess *applied_table_next(AppliedTable *t, size_t *i) {
        if (!t || *i >= t->n_entries)
                return NULL;
        return &t->entries[(*i)++];
}

/* Opens /proc/PID if it still is the process e names; for a thread's entry /proc/TGID/task/TID, if that
 * thread still belongs to that process. */
static int open_process(int proc_fd, const AppliedProcess *e, int *ret_fd) {
        _cleanup_(closep) int fd = -1;
        char path[32];
        ProcStat st;
        int r;

        if (e->tgid > 0)
                snprintf(path, sizeof(path), "%d/task/%d", (int) e->tgid, (int) e->pid);
        else
                snprintf(path, sizeof(path), "%d", (int) e->pid);
        fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        r = proc_stat_read(fd, "stat", &st);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        if (st.start_time != e->start_time)
                return -ESRCH;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int thread_is_ours(const SchedProbe *p, pid_t tid, uint64_t raw) {
        ThreadSched t;
        int r;

        r = sched_thread_get(p, tid, &t);
        if (r < 0)
                return r;
        /* A realtime policy set after us is a foreign change too. */
        return !t.realtime && sched_thread_raw(p, &t) == raw;
}

int applied_is_ours(const SchedProbe *p, int proc_fd, const AppliedProcess *e) {
        _cleanup_(closep) int fd = -1;
        int r;

        r = open_process(proc_fd, e, &fd);
        if (r < 0)
                return r;
        r = thread_is_ours(p, e->pid, e->raw);
        return r == -ENOENT ? -ESRCH : r;
}

typedef struct RestoreCtx {
        const SchedProbe *p;
        const AppliedProcess *e;
        int n_restored;
} RestoreCtx;

static int restore_one(pid_t tid, void *userdata) {
        RestoreCtx *c = userdata;

        /* Check, then set: a foreign write between the two is lost.
         * XXX: sched_setattr() has no compare-and-set. */
        if (thread_is_ours(c->p, tid, c->e->raw) > 0 &&
            sched_thread_set_raw(c->p, tid, c->e->before_raw, NULL) >= 0)
                c->n_restored++;
        return 0;
}

/* Calls fn for every thread of e's process, if it is still that process: < 0 if it is not (or no backend),
 * else 0 and the walk's own result in *ret_walk. */
static int walk_process(const SchedProbe *p, int proc_fd, const AppliedProcess *e, SchedThreadFunc fn,
                        void *userdata, int *ret_walk) {
        _cleanup_(closep) int fd = -1;
        int r;

        if (p->backend == BACKEND_NONE)
                return -EOPNOTSUPP;
        r = open_process(proc_fd, e, &fd);
        if (r < 0)
                return r;
        /* A Thread= rule's value is on that thread alone. */
        *ret_walk = e->tgid > 0 ? fn(e->pid, userdata) : sched_walk_threads(fd, NULL, 0, fn, userdata);
        return 0;
}

int applied_restore(const SchedProbe *p, int proc_fd, const AppliedProcess *e) {
        RestoreCtx c = { .p = p, .e = e };
        int r, walk;

        r = walk_process(p, proc_fd, e, restore_one, &c, &walk);
        if (r < 0)
                return r;
        if (walk < 0 && walk != -EAGAIN && c.n_restored == 0)
                return walk;
        return c.n_restored;
}

typedef struct ReapplyCtx {
        const SchedProbe *p;
        const AppliedProcess *e;
        uint64_t default_raw;
        ReapplyResult *ret;
} ReapplyCtx;

static int reapply_one(pid_t tid, void *userdata) {
        ReapplyCtx *c = userdata;
        ThreadSched t;
        uint64_t raw;

        if (sched_thread_get(c->p, tid, &t) < 0)
                return 0; /* exited meanwhile */
        raw = sched_thread_raw(c->p, &t);
        if (t.realtime || (raw != c->e->raw && raw != c->default_raw))
                c->ret->n_foreign++;
        else if (raw == c->e->raw)
                c->ret->n_kept++;
        /* As in restore_one(): a foreign write between the read and this one is lost. */
        else if (sched_thread_set_raw(c->p, tid, c->e->raw, NULL) >= 0)
                c->ret->n_written++;
        return 0;
}

int applied_reapply(const SchedProbe *p, int proc_fd, const AppliedProcess *e, ReapplyResult *ret) {
        ReapplyCtx c = { .p = p, .e = e, .default_raw = sched_raw_value(p, 0), .ret = ret };
        int r, walk;

        r = walk_process(p, proc_fd, e, reapply_one, &c, &walk);
        if (r < 0)
                return r;
        return walk == -ESRCH ? walk : 0;
}

const char *applied_set_by(const SchedProbe *p, int proc_fd, const AppliedProcess *e, const ThreadSched *main_thread,
                           bool *ret_ours) {
        *ret_ours = e && applied_is_ours(p, proc_fd, e) > 0;
        if (*ret_ours)
                return e->manual       ? LATNICE_SET_BY_MANUAL
                       : e->foreground ? LATNICE_SET_BY_FOREGROUND
                       : e->via_unit   ? LATNICE_SET_BY_UNIT
                                       : LATNICE_SET_BY_RULE;
        return sched_thread_has_value(p, main_thread) ? LATNICE_SET_BY_FOREIGN : LATNICE_SET_BY_NONE;
}
