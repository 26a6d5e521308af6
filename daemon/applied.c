/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The applied-state table: what latniced set on which process. Entries live
 * in one dense array (iteration, no holes); an open-addressing index of
 * 32-bit slots (linear probing, backward-shift deletion, no tombstones)
 * finds them by pid. For n processes that is about n * (sizeof entry + 5)
 * bytes, a few hundred KB for thousands of processes: the daemon's RSS
 * budget is 4 MB. Pointers returned by get/next stay valid until the next
 * put or remove.
 */

#include <fcntl.h>

#include "applied.h"
#include "latnice/dbus.h"
#include "proc.h"
#include "util.h"

#define MIN_SLOTS 16U

struct AppliedTable {
        AppliedProcess *entries;
        size_t n_entries, alloc_entries;
        uint32_t *slots; /* 0 = empty, else entry index + 1 */
        size_t n_slots;  /* power of two, or 0 before the first put */
};

static size_t slot_of(const AppliedTable *t, pid_t pid) {
        /* Fibonacci hashing: consecutive pids spread over the table. */
        return (size_t) (((uint32_t) pid * 2654435769U) & (uint32_t) (t->n_slots - 1));
}

static void entry_done(AppliedProcess *e) {
        free(e->rule);
        free(e->rule_name);
}

AppliedTable *applied_table_new(void) {
        return calloc(1, sizeof(AppliedTable));
}

AppliedTable *applied_table_free(AppliedTable *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_entries; i++)
                entry_done(&t->entries[i]);
        free(t->entries);
        free(t->slots);
        free(t);
        return NULL;
}

/* Slot holding pid, or the empty slot where it would go. */
static size_t find_slot(const AppliedTable *t, pid_t pid) {
        size_t i = slot_of(t, pid);

        while (t->slots[i] != 0 && t->entries[t->slots[i] - 1].pid != pid)
                i = (i + 1) & (t->n_slots - 1);
        return i;
}

static int rehash(AppliedTable *t, size_t n_slots) {
        uint32_t *slots = calloc(n_slots, sizeof(uint32_t));

        if (!slots)
                return -ENOMEM;
        free(t->slots);
        t->slots = slots;
        t->n_slots = n_slots;
        for (size_t k = 0; k < t->n_entries; k++)
                t->slots[find_slot(t, t->entries[k].pid)] = (uint32_t) (k + 1);
        return 0;
}

int applied_table_put(AppliedTable *t, AppliedProcess *e) {
        size_t i;
        int r;

        if (!t || !e || e->pid <= 0)
                return -EINVAL;

        if (t->n_slots > 0) {
                i = find_slot(t, e->pid);
                if (t->slots[i] != 0) {
                        AppliedProcess *old = &t->entries[t->slots[i] - 1];

                        entry_done(old);
                        *old = *e;
                        e->rule = e->rule_name = NULL; /* ours now */
                        return 0;
                }
        }

        if (t->n_entries >= UINT32_MAX - 1)
                return -E2BIG;
        /* Load factor <= 3/4. */
        if ((t->n_entries + 1) * 4 > t->n_slots * 3) {
                r = rehash(t, t->n_slots ? t->n_slots * 2 : MIN_SLOTS);
                if (r < 0)
                        return r;
        }
        if (t->n_entries >= t->alloc_entries) {
                size_t n = t->alloc_entries ? t->alloc_entries * 2 : 8;
                AppliedProcess *ne = reallocarray(t->entries, n, sizeof(AppliedProcess));

                if (!ne)
                        return -ENOMEM;
                t->entries = ne;
                t->alloc_entries = n;
        }
        t->entries[t->n_entries] = *e;
        e->rule = e->rule_name = NULL;
        t->slots[find_slot(t, e->pid)] = (uint32_t) (++t->n_entries);
        return 0;
}

AppliedProcess *applied_table_get(AppliedTable *t, pid_t pid) {
        size_t i;

        if (!t || t->n_slots == 0 || pid <= 0)
                return NULL;
        i = find_slot(t, pid);
        return t->slots[i] != 0 ? &t->entries[t->slots[i] - 1] : NULL;
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
        if (t->n_slots > MIN_SLOTS && t->n_entries * 8 < t->n_slots)
                (void) rehash(t, t->n_slots / 2);
}

void applied_table_remove(AppliedTable *t, pid_t pid) {
        size_t i, j, k, last;

        if (!t || t->n_slots == 0 || pid <= 0)
                return;
        i = find_slot(t, pid);
        if (t->slots[i] == 0)
                return;
        k = t->slots[i] - 1;
        entry_done(&t->entries[k]);

        /* Backward-shift deletion: pull later members of the probe run
         * into the hole unless they already sit at or after their home. */
        t->slots[i] = 0;
        for (j = (i + 1) & (t->n_slots - 1); t->slots[j] != 0; j = (j + 1) & (t->n_slots - 1)) {
                size_t home = slot_of(t, t->entries[t->slots[j] - 1].pid);

                /* Is home cyclically in (i, j]? Then it stays. */
                if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
                        continue;
                t->slots[i] = t->slots[j];
                t->slots[j] = 0;
                i = j;
        }

        /* Keep the entries dense: move the last one into the gap. */
        last = t->n_entries - 1;
        if (k != last) {
                t->entries[k] = t->entries[last];
                t->slots[find_slot(t, t->entries[k].pid)] = (uint32_t) (k + 1);
        }
        t->n_entries--;
        shrink(t);
}

size_t applied_table_size(const AppliedTable *t) {
        return t ? t->n_entries : 0;
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
