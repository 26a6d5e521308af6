/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scheduler side of latnice: probing which backend this kernel has and
 * applying a value to threads and whole processes. A -util module (system
 * calls, /proc through the fd handed in, the BTF from the path handed in);
 * nothing logs and nothing is global. The mapping is in sched-map.c.
 *
 * Kernel facts this relies on (kernel/sched/syscalls.c, 6.12+):
 *  - sched_getattr() reports p->se.slice in sched_runtime for fair tasks,
 *    custom or not, so a plain task shows the default slice.
 *  - sched_setattr() on a fair policy sets the custom slice from
 *    sched_runtime (0 = back to the default) and the nice from sched_nice:
 *    there is no "keep nice" for a slice change, KEEP_PARAMS would copy the
 *    current slice over ours. So the slice path is a read-modify-write.
 *  - SCHED_FLAG_KEEP_POLICY keeps the policy *and* reset-on-fork as the
 *    kernel sees them under the rq lock: if somebody makes the thread
 *    realtime between our read and our write, the write fails (EINVAL:
 *    priority 0 is invalid for FIFO/RR) instead of undoing their change.
 *  - fork() copies the custom slice (reset only by RESET_ON_FORK), exec
 *    keeps it: threads made after an apply inherit it.
 */

#include <bpf/btf.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/syscall.h>

#include "authz.h"
#include "proc.h"
#include "sched.h"
#include "util.h"

/* XXX: bounds the work for a process that makes threads faster than we can
 * list them; threads born from already handled threads inherit anyway. */
#define WALK_MAX_ROUNDS 1024

/* Finds a member by name in a struct, looking into anonymous struct/union
 * members too (randstruct wraps most of task_struct in one). */
static bool btf_struct_has_member(const struct btf *btf, const struct btf_type *t, const char * const *names,
                                  unsigned depth) {
        const struct btf_member *m = btf_members(t);

        if (depth > 8)
                return false;
        for (unsigned i = 0; i < btf_vlen(t); i++, m++) {
                const char *name = btf__name_by_offset(btf, m->name_off);

                if (isempty(name)) {
                        const struct btf_type *mt = btf__type_by_id(btf, m->type);

                        /* skip typedefs/modifiers down to the anonymous aggregate */
                        while (mt && (btf_is_mod(mt) || btf_is_typedef(mt)))
                                mt = btf__type_by_id(btf, mt->type);
                        if (mt && btf_is_composite(mt) && btf_struct_has_member(btf, mt, names, depth + 1))
                                return true;
                        continue;
                }
                for (const char * const *n = names; *n; n++)
                        if (strcmp(name, *n) == 0)
                                return true;
        }
        return false;
}

int sched_btf_has_latency_field(const char *btf_path) {
        static const char * const names[] = { "latency_prio", "latency_nice", NULL };
        struct btf *btf;
        int id, r;

        if (isempty(btf_path))
                return -EINVAL;
        btf = btf__parse(btf_path, NULL);
        if (!btf)
                return errno > 0 ? -errno : -EINVAL;
        id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
        if (id < 0)
                r = -ENODATA; /* not a kernel's BTF */
        else
                r = btf_struct_has_member(btf, btf__type_by_id(btf, (uint32_t) id), names, 0) ? 1 : 0;
        btf__free(btf);
        return r;
}

/* The probe runs on a thread of its own so the caller's settings are never touched. */
typedef struct ProbeThread {
        Backend want;
        bool ok;
        uint64_t base;
        char reason[200];
} ProbeThread;

static void *probe_latency_nice_thread(void *userdata) {
        ProbeThread *pt = userdata;
        struct latnice_sched_attr a = { .size = LATNICE_SCHED_ATTR_SIZE_VER2 };
        pid_t tid = (pid_t) syscall(SYS_gettid);

        /* Raising to 5 needs no privilege; KEEP_* leaves policy, nice, slice alone. */
        a.sched_flags = LATNICE_SCHED_FLAG_LATENCY_NICE | LATNICE_SCHED_FLAG_KEEP_POLICY |
                        LATNICE_SCHED_FLAG_KEEP_PARAMS;
        a.sched_latency_nice = 5;
        if (latnice_sched_setattr(tid, &a, 0) < 0) {
                snprintf(pt->reason, sizeof(pt->reason), "sched_setattr(SCHED_FLAG_LATENCY_NICE, size 60): %s",
                         strerror(errno));
                return NULL;
        }
        a = (struct latnice_sched_attr) {};
        if (latnice_sched_getattr(tid, &a, LATNICE_SCHED_ATTR_SIZE_VER2, 0) < 0) {
                snprintf(pt->reason, sizeof(pt->reason), "sched_getattr(size 60): %s", strerror(errno));
                return NULL;
        }
        if (a.size < LATNICE_SCHED_ATTR_SIZE_VER2 || a.sched_latency_nice != 5) {
                snprintf(pt->reason, sizeof(pt->reason),
                         "latency nice 5 did not read back (size %u, value %d)", a.size, (int) a.sched_latency_nice);
                return NULL;
        }
        pt->ok = true;
        return NULL;
}

static void *probe_slice_thread(void *userdata) {
        ProbeThread *pt = userdata;
        struct latnice_sched_attr a = {};
        pid_t tid = (pid_t) syscall(SYS_gettid);
        uint64_t want;

        if (latnice_sched_getattr(tid, &a, LATNICE_SCHED_ATTR_SIZE_VER1, 0) < 0) {
                snprintf(pt->reason, sizeof(pt->reason), "sched_getattr: %s", strerror(errno));
                return NULL;
        }
        /* Become a plain SCHED_OTHER task with the default slice, whatever
         * the caller runs as (a custom slice is inherited by threads). */
        if (a.sched_policy != LATNICE_SCHED_OTHER && a.sched_policy != LATNICE_SCHED_BATCH)
                a.sched_nice = 0;
        a = (struct latnice_sched_attr) {
                .size = LATNICE_SCHED_ATTR_SIZE_VER1,
                .sched_policy = LATNICE_SCHED_OTHER,
                .sched_nice = a.sched_nice,
        };
        if (latnice_sched_setattr(tid, &a, 0) < 0) {
                snprintf(pt->reason, sizeof(pt->reason), "sched_setattr(SCHED_OTHER): %s", strerror(errno));
                return NULL;
        }
        if (latnice_sched_getattr(tid, &a, LATNICE_SCHED_ATTR_SIZE_VER1, 0) < 0) {
                snprintf(pt->reason, sizeof(pt->reason), "sched_getattr: %s", strerror(errno));
                return NULL;
        }
        if (a.sched_runtime == 0) {
                snprintf(pt->reason, sizeof(pt->reason),
                         "sched_getattr reports no slice for SCHED_OTHER (kernel before EEVDF custom slices)");
                return NULL;
        }
        pt->base = a.sched_runtime;
        want = pt->base == 1000000 ? 2000000 : 1000000;
        a.sched_runtime = want;
        if (latnice_sched_setattr(tid, &a, 0) < 0) {
                snprintf(pt->reason, sizeof(pt->reason), "sched_setattr(sched_runtime=%llu): %s",
                         (unsigned long long) want, strerror(errno));
                return NULL;
        }
        a = (struct latnice_sched_attr) {};
        if (latnice_sched_getattr(tid, &a, LATNICE_SCHED_ATTR_SIZE_VER1, 0) < 0) {
                snprintf(pt->reason, sizeof(pt->reason), "sched_getattr: %s", strerror(errno));
                return NULL;
        }
        if (a.sched_runtime != want) {
                snprintf(pt->reason, sizeof(pt->reason),
                         "a custom slice of %llu ns did not read back (got %llu): kernel without custom slices",
                         (unsigned long long) want, (unsigned long long) a.sched_runtime);
                return NULL;
        }
        pt->ok = true;
        return NULL;
}

static int run_probe_thread(void *(*fn)(void *), ProbeThread *pt) {
        pthread_t t;
        int r;

        r = pthread_create(&t, NULL, fn, pt);
        if (r != 0) {
                snprintf(pt->reason, sizeof(pt->reason), "cannot create a scratch thread: %s", strerror(r));
                return -r;
        }
        (void) pthread_join(t, NULL);
        return 0;
}

/* Appends to a NUL-terminated buffer, truncating quietly: reasons are for humans. */
static void reason_append(char *buf, size_t size, const char *s) {
        size_t l = strnlen(buf, size), k = strlen(s);

        if (l + 1 >= size)
                return;
        if (k > size - l - 1)
                k = size - l - 1;
        memcpy(buf + l, s, k);
        buf[l + k] = 0;
}

void sched_probe(const char *btf_path, SchedProbe *ret) {
        ProbeThread ln = {}, sl = {};
        char btf_note[200] = "";
        int r;

        *ret = (SchedProbe) { .backend = BACKEND_NONE };

        r = sched_btf_has_latency_field(btf_path);
        if (r > 0) {
                (void) run_probe_thread(probe_latency_nice_thread, &ln);
                if (ln.ok) {
                        reason_append(ret->reason, sizeof(ret->reason),
                                      "kernel BTF has a latency field in struct task_struct and "
                                      "sched_setattr(SCHED_FLAG_LATENCY_NICE) round-trips");
                        ret->backend = BACKEND_LATENCY_NICE;
                        return;
                }
                reason_append(btf_note, sizeof(btf_note), "; BTF has a latency field but ");
                reason_append(btf_note, sizeof(btf_note), ln.reason);
        } else if (r == 0)
                reason_append(btf_note, sizeof(btf_note), "; no latency field in struct task_struct");
        else {
                reason_append(btf_note, sizeof(btf_note), "; cannot read kernel BTF: ");
                reason_append(btf_note, sizeof(btf_note), strerror(-r));
        }

        (void) run_probe_thread(probe_slice_thread, &sl);
        if (sl.ok) {
                ret->backend = BACKEND_EEVDF_SLICE;
                ret->base_slice_ns = sl.base;
                snprintf(ret->reason, sizeof(ret->reason),
                         "custom slices via sched_attr.sched_runtime read back (default slice %llu ns)",
                         (unsigned long long) sl.base);
                reason_append(ret->reason, sizeof(ret->reason), btf_note);
                return;
        }
        reason_append(ret->reason, sizeof(ret->reason), "no latency-nice uAPI and no custom slices: ");
        reason_append(ret->reason, sizeof(ret->reason), sl.reason);
        reason_append(ret->reason, sizeof(ret->reason), btf_note);
}

/* Threads we leave alone: the value means nothing to their class, or it is not ours to touch. */
static bool policy_is_left_alone(const SchedProbe *p, unsigned policy) {
        switch (policy) {
        case LATNICE_SCHED_OTHER:
        case LATNICE_SCHED_BATCH:
                return false;
        case LATNICE_SCHED_IDLE:
                /* the slice is ignored for SCHED_IDLE (fair_policy() is false) */
                return p->backend != BACKEND_LATENCY_NICE;
        default:
                return true;
        }
}

static unsigned attr_size(const SchedProbe *p) {
        return p->backend == BACKEND_LATENCY_NICE ? LATNICE_SCHED_ATTR_SIZE_VER2 : LATNICE_SCHED_ATTR_SIZE_VER1;
}

int sched_thread_get(const SchedProbe *p, pid_t tid, ThreadSched *ret) {
        ThreadSched t = {};

        if (tid <= 0)
                return -EINVAL;
        if (latnice_sched_getattr(tid, &t.attr, attr_size(p), 0) < 0)
                return -errno;
        t.attr.sched_policy &= ~(uint32_t) LATNICE_SCHED_RESET_ON_FORK;
        t.realtime = policy_is_left_alone(p, t.attr.sched_policy);
        switch (p->backend) {
        case BACKEND_LATENCY_NICE:
                t.latency_nice = t.attr.sched_latency_nice;
                break;
        case BACKEND_EEVDF_SLICE:
                t.latency_nice = t.realtime ? 0 : latnice_from_slice_ns(sched_thread_raw(p, &t), p->base_slice_ns);
                break;
        default:
                t.latency_nice = 0;
        }
        *ret = t;
        return 0;
}

uint64_t sched_raw_value(const SchedProbe *p, int latency_nice) {
        switch (p->backend) {
        case BACKEND_LATENCY_NICE:
                return (uint64_t) LATNICE_TO_PRIO(latency_nice);
        case BACKEND_EEVDF_SLICE:
                return latnice_to_slice_ns(latency_nice, p->base_slice_ns);
        default:
                return 0;
        }
}

uint64_t sched_thread_raw(const SchedProbe *p, const ThreadSched *t) {
        switch (p->backend) {
        case BACKEND_LATENCY_NICE:
                return (uint64_t) LATNICE_TO_PRIO(t->attr.sched_latency_nice);
        case BACKEND_EEVDF_SLICE:
                /* The kernel reports the default slice for "no custom slice"
                 * and treats writing it as no change: both are raw 0. */
                if (t->realtime || t->attr.sched_runtime == p->base_slice_ns)
                        return 0;
                return t->attr.sched_runtime;
        default:
                return 0;
        }
}

bool sched_raw_is_default(const SchedProbe *p, uint64_t raw) {
        return p->backend == BACKEND_LATENCY_NICE ? raw == (uint64_t) LATNICE_TO_PRIO(LATNICE_DEFAULT) : raw == 0;
}

bool sched_thread_has_value(const SchedProbe *p, const ThreadSched *t) {
        return p->backend != BACKEND_NONE && !t->realtime && !sched_raw_is_default(p, sched_thread_raw(p, t));
}

int sched_thread_set_raw(const SchedProbe *p, pid_t tid, uint64_t raw, ThreadSched *ret_before) {
        struct latnice_sched_attr a;
        ThreadSched before;
        int r;

        if (p->backend == BACKEND_NONE)
                return -EOPNOTSUPP;
        if (p->backend == BACKEND_LATENCY_NICE && raw >= LATNICE_WIDTH)
                return -EINVAL;
        if (p->backend == BACKEND_EEVDF_SLICE && raw != 0 &&
            (raw < LATNICE_SLICE_MIN_NS || raw > LATNICE_SLICE_MAX_NS))
                return -EINVAL;

        r = sched_thread_get(p, tid, &before);
        if (r < 0)
                return r;
        if (ret_before)
                *ret_before = before;
        if (before.realtime)
                return -EBUSY;
        if (sched_thread_raw(p, &before) == raw)
                return 0; /* the kernel would see no change either */

        if (p->backend == BACKEND_LATENCY_NICE) {
                /* KEEP_POLICY keeps reset-on-fork too; KEEP_PARAMS keeps nice and slice. */
                a = (struct latnice_sched_attr) {
                        .size = LATNICE_SCHED_ATTR_SIZE_VER2,
                        .sched_flags = LATNICE_SCHED_FLAG_LATENCY_NICE | LATNICE_SCHED_FLAG_KEEP_POLICY |
                                       LATNICE_SCHED_FLAG_KEEP_PARAMS,
                        .sched_latency_nice = (int32_t) LATNICE_FROM_PRIO((int) raw),
                };
        } else {
                /* Same nice, only the slice changes; see the top of the file. */
                a = (struct latnice_sched_attr) {
                        .size = LATNICE_SCHED_ATTR_SIZE_VER1,
                        .sched_policy = before.attr.sched_policy,
                        .sched_flags = LATNICE_SCHED_FLAG_KEEP_POLICY,
                        .sched_nice = before.attr.sched_nice,
                        .sched_runtime = raw,
                };
        }
        if (latnice_sched_setattr(tid, &a, 0) >= 0)
                return 0;
        r = -errno;
        if (r == -EINVAL) {
                ThreadSched now;

                /* Became realtime under us: that is somebody else's choice. */
                if (sched_thread_get(p, tid, &now) >= 0 && now.realtime)
                        return -EBUSY;
        }
        return r;
}

int sched_thread_set(const SchedProbe *p, pid_t tid, int latency_nice, ThreadSched *ret_before) {
        if (p->backend == BACKEND_NONE)
                return -EOPNOTSUPP;
        if (!latnice_valid(latency_nice))
                return -EINVAL;
        return sched_thread_set_raw(p, tid, sched_raw_value(p, latency_nice), ret_before);
}

/* Reads the thread ids in dir_fd/task with getdents64 straight into an
 * array: no DIR buffer, one read for up to a few hundred threads. */
static int list_tasks(int pid_dir_fd, pid_t **ret) {
        _cleanup_(closep) int fd = -1;
        _cleanup_(freep) pid_t *v = NULL;
        size_t n = 0, alloc = 0;
        char buf[8192] __attribute__((aligned(8)));

        fd = openat(pid_dir_fd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        for (;;) {
                ssize_t k = syscall(SYS_getdents64, fd, buf, sizeof(buf));

                if (k < 0)
                        return errno == ENOENT ? -ESRCH : -errno;
                if (k == 0)
                        break;
                for (ssize_t off = 0; off < k;) {
                        struct dirent64 *de = (struct dirent64 *) (buf + off);
                        pid_t tid;

                        off += de->d_reclen;
                        if (parse_pid(de->d_name, &tid) < 0)
                                continue;
                        if (array_grow((void **) &v, &alloc, n, sizeof(pid_t)) < 0)
                                return -ENOMEM;
                        v[n++] = tid;
                }
        }
        if (n > INT_MAX)
                return -E2BIG;
        *ret = TAKE_PTR(v);
        return (int) n;
}

static int pid_cmp(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return x < y ? -1 : x > y;
}

int sched_walk_threads(int pid_dir_fd, const pid_t *skip, size_t n_skip, SchedThreadFunc f, void *userdata) {
        _cleanup_(freep) pid_t *seen = NULL;
        size_t n_seen = 0;
        int r;

        if (n_skip > 0) {
                seen = reallocarray(NULL, n_skip, sizeof(pid_t));
                if (!seen)
                        return -ENOMEM;
                memcpy(seen, skip, n_skip * sizeof(pid_t));
                n_seen = n_skip;
                qsort(seen, n_seen, sizeof(pid_t), pid_cmp);
        }

        /* A thread that exists while we list is either handled now or was
         * made by a thread we had not handled yet; those show up in the
         * next listing. Stop when a listing brings nothing new. */
        for (unsigned round = 0; round < WALK_MAX_ROUNDS; round++) {
                _cleanup_(freep) pid_t *list = NULL;
                size_t n_new = 0;
                int n;

                n = list_tasks(pid_dir_fd, &list);
                if (n < 0)
                        return n;
                for (int i = 0; i < n; i++) {
                        if (seen && bsearch(&list[i], seen, n_seen, sizeof(pid_t), pid_cmp))
                                continue;
                        r = f(list[i], userdata);
                        if (r < 0)
                                return r;
                        list[n_new++] = list[i];
                }
                if (n_new == 0)
                        return 0;
                if (n_seen + n_new < n_seen)
                        return -EOVERFLOW;
                {
                        pid_t *ns = reallocarray(seen, n_seen + n_new, sizeof(pid_t));

                        if (!ns)
                                return -ENOMEM;
                        seen = ns;
                }
                memcpy(seen + n_seen, list, n_new * sizeof(pid_t));
                n_seen += n_new;
                qsort(seen, n_seen, sizeof(pid_t), pid_cmp);
        }
        return -EAGAIN;
}

typedef struct ApplyCtx {
        const SchedProbe *p;
        uint64_t raw;
        ApplyResult *res;
        pid_t zombie_leader; /* skipped: setting a zombie's value is pointless */
} ApplyCtx;

static void apply_account(ApplyResult *res, int r) {
        res->n_threads++;
        if (r >= 0)
                res->n_applied++;
        else if (r == -EBUSY)
                res->n_realtime++;
        else if (r == -ESRCH)
                res->n_gone++;
        else {
                res->n_failed++;
                if (res->first_error == 0)
                        res->first_error = r;
        }
}

static int apply_one(pid_t tid, void *userdata) {
        ApplyCtx *c = userdata;

        if (tid == c->zombie_leader) {
                c->res->n_threads++;
                c->res->n_gone++;
                return 0;
        }
        apply_account(c->res, sched_thread_set_raw(c->p, tid, c->raw, NULL));
        return 0;
}

static int apply_verdict(const ApplyResult *res) {
        if (res->n_applied + res->n_realtime > 0)
                return 0;
        if (res->n_failed > 0)
                return res->first_error;
        return -ESRCH;
}

static int read_stat_at(int dir_fd, const char *path, ProcStat *ret) {
        int r = proc_stat_read(dir_fd, path, ret);

        /* a dir fd of a dead process: ESRCH from the kernel */
        return r == -ENOENT ? -ESRCH : r;
}

static int apply_fresh(const SchedProbe *p, int proc_fd, pid_t pid, uint64_t start_time, uint64_t raw,
                       ThreadsMode mode, ApplyResult *res) {
        _cleanup_(closep) int dir_fd = -1;
        char path[32];
        ThreadSched before;
        ProcStat st;
        ApplyCtx c = { .p = p, .raw = raw, .res = res };
        int r;

        /* Set first: the process almost surely has one thread, and every
         * microsecond before the value lands is run time without it. */
        r = sched_thread_set_raw(p, pid, raw, &before);
        res->main_before = before;
        if (r == -ESRCH)
                return -ESRCH;
        if (proc_stat_read_pid(proc_fd, pid, 0, &st) < 0 || (start_time != 0 && st.start_time != start_time)) {
                /* Not the process the caller meant (or gone): put back what the pid had. */
                if (r >= 0)
                        (void) sched_thread_set_raw(p, pid, sched_thread_raw(p, &before), NULL);
                return -ESRCH;
        }
        apply_account(res, r);
        if (mode == THREADS_MAIN || st.num_threads <= 1)
                return apply_verdict(res);

        snprintf(path, sizeof(path), "%d", (int) pid);
        dir_fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return errno == ENOENT ? apply_verdict(res) : -errno;
        r = sched_walk_threads(dir_fd, &pid, 1, apply_one, &c);
        if (r < 0 && r != -ESRCH && r != -EAGAIN && res->first_error == 0)
                res->first_error = r;
        return apply_verdict(res);
}

int sched_apply_process(const SchedProbe *p, int proc_fd, pid_t pid, uint64_t start_time, int latency_nice,
                        ThreadsMode mode, bool fresh_exec, ApplyResult *ret) {
        _cleanup_(closep) int dir_fd = -1;
        ApplyResult res = {};
        ApplyCtx c = { .p = p, .res = &res };
        char path[32];
        ProcStat st;
        int r;

        *ret = res;
        if (p->backend == BACKEND_NONE)
                return -EOPNOTSUPP;
        if (!latnice_valid(latency_nice) || pid <= 0)
                return -EINVAL;
        c.raw = sched_raw_value(p, latency_nice);

        if (fresh_exec) {
                r = apply_fresh(p, proc_fd, pid, start_time, c.raw, mode, &res);
                *ret = res;
                return r;
        }

        /* Hold the process's /proc directory: whatever we read through it
         * belongs to this process, and it turns ESRCH once it is gone. */
        snprintf(path, sizeof(path), "%d", (int) pid);
        dir_fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        r = read_stat_at(dir_fd, "stat", &st);
        if (r < 0)
                return r;
        if (start_time != 0 && st.start_time != start_time)
                return -ESRCH;
        if (st.flags & PROC_PF_KTHREAD)
                return -EPERM;
        if (st.state == 'Z' || st.state == 'X')
                c.zombie_leader = pid;

        if (mode == THREADS_MAIN) {
                if (c.zombie_leader)
                        return -ESRCH;
                apply_account(&res, sched_thread_set_raw(p, pid, c.raw, &res.main_before));
        } else if (st.num_threads == 1 && !c.zombie_leader) {
                /* Most processes: set the only thread, then one stat read
                 * instead of two listings. A thread born before the set is
                 * counted there; one born after it inherits the value. */
                apply_account(&res, sched_thread_set_raw(p, pid, c.raw, &res.main_before));
                r = read_stat_at(dir_fd, "stat", &st);
                if (r >= 0 && st.num_threads > 1) {
                        r = sched_walk_threads(dir_fd, &pid, 1, apply_one, &c);
                        if (r < 0 && r != -ESRCH && r != -EAGAIN && res.first_error == 0)
                                res.first_error = r;
                }
        } else {
                r = sched_walk_threads(dir_fd, NULL, 0, apply_one, &c);
                /* -EAGAIN: still making threads after many rounds; what we did stands */
                if (r < 0 && r != -EAGAIN && !(r == -ESRCH && res.n_threads > 0)) {
                        *ret = res;
                        return r;
                }
        }
        *ret = res;
        return apply_verdict(&res);
}

typedef struct SetThreads {
        const SchedProbe *probe;
        pid_t pid;
        int value;
        bool may_lower;
        SchedSetResult *out;
} SetThreads;

static int set_thread(pid_t tid, void *userdata) {
        SetThreads *c = userdata;
        SchedSetResult *o = c->out;
        ThreadSched cur;
        int r;

        r = sched_thread_get(c->probe, tid, &cur);
        if (r < 0)
                return 0; /* exited meanwhile */
        o->n_threads++;
        if (tid == c->pid)
                o->main_before = cur;
        if (!c->may_lower && !authz_raise_only_ok(cur.latency_nice, c->value)) {
                o->n_refused++;
                return 0;
        }
        r = sched_thread_set(c->probe, tid, c->value, NULL);
        if (r >= 0)
                o->n_applied++;
        else if (r == -EBUSY)
                o->n_realtime++;
        else if (r != -ESRCH && o->first_error == 0)
                o->first_error = r;
        return 0;
}

int sched_set_threads(const SchedProbe *p, int proc_fd, pid_t pid, int value, bool may_lower, SchedSetResult *ret) {
        _cleanup_(closep) int dir_fd = -1;
        SetThreads c = { .probe = p, .pid = pid, .value = value, .may_lower = may_lower, .out = ret };
        char path[32];
        int r;

        *ret = (SchedSetResult) {};
        snprintf(path, sizeof(path), "%d", (int) pid);
        dir_fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return -errno;
        r = sched_walk_threads(dir_fd, NULL, 0, set_thread, &c);
        return r < 0 && r != -EAGAIN && ret->n_threads == 0 ? r : 0;
}

int sched_thread_values(const SchedProbe *p, int proc_fd, pid_t pid, int **ret, size_t *ret_n) {
        _cleanup_(freep) pid_t *tids = NULL;
        _cleanup_(freep) int *v = NULL;
        size_t k = 0;
        int n;

        n = proc_list_tasks(proc_fd, pid, &tids);
        if (n < 0)
                return n;
        v = calloc((size_t) n + 1, sizeof(int));
        if (!v)
                return -ENOMEM;
        for (int i = 0; i < n; i++) {
                ThreadSched t;

                if (sched_thread_get(p, tids[i], &t) >= 0 && !t.realtime)
                        v[k++] = t.latency_nice;
        }
        *ret = TAKE_PTR(v);
        *ret_n = k;
        return 0;
}
