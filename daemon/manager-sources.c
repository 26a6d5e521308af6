/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event sources (see manager-sources.h). The exec sources run at
 * SCHED_FIFO with a budget per dispatch; everything else here (walks,
 * timers) leaves realtime first. What an exec record says is decoded by
 * task_info_from_event() (exec-event.c, pure); what it cannot say (a path
 * behind a symlink, a command line too long for the record, names, a
 * cgroup path) is read here while the process still runs.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "cgroup.h"
#include "event-util.h"
#include "exec-event.h"
#include "exec-netlink.h"
#include "log.h"
#include "manager-decide.h"
#include "manager-inherited.h"
#include "manager-sources-internal.h"
#include "manager-sources.h"
#include "manager-threads.h"
#include "proc.h"
#include "util.h"

/*
 * uid/gid -> name for User=name and Group=name rules, cached: NSS reads
 * /etc/passwd (or asks LDAP) on every call. Direct-mapped by id, one cache
 * for users and one for groups; the name is copied out, so no lookup can
 * invalidate what an earlier one returned. Misses are remembered for a
 * while (a uid without a name stays without one), and everything is
 * forgotten when the passwd or group file changes.
 */
#define NAME_MISS_USEC (30 * 1000 * 1000ULL)

static const char *cached_name(Manager *m, uint32_t id, bool group, char *buf, size_t size) {
        NameCacheEntry *e = &(group ? m->group_cache : m->user_cache)[(id * 2654435761U) % NAME_CACHE_SIZE];
        uint64_t now = monotonic_usec();
        char *name;

        if (!(e->used && e->id == id && (e->name || now < e->miss_until))) {
                name = group ? gid_to_name(id) : uid_to_name(id);
                free(e->name);
                *e = (NameCacheEntry) { .used = true, .id = id, .name = name, .miss_until = now + NAME_MISS_USEC };
        }
        if (!e->name)
                return NULL;
        snprintf(buf, size, "%s", e->name);
        return buf;
}

void manager_name_cache_flush(Manager *m) {
        for (size_t i = 0; i < NAME_CACHE_SIZE; i++) {
                free(m->user_cache[i].name);
                free(m->group_cache[i].name);
        }
        memset(m->user_cache, 0, sizeof(m->user_cache));
        memset(m->group_cache, 0, sizeof(m->group_cache));
}

int manager_find_cgroup2(Manager *m) {
        _cleanup_(cgroup_mounts_done) CGroupMounts mounts = {};
        int r;

        r = cgroup_mounts_find("/proc/self/mountinfo", &mounts);
        if (r < 0)
                return r;
        if (!mounts.unified.path)
                return -ENOENT;
        m->cgroup2_fd = open(mounts.unified.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (m->cgroup2_fd < 0)
                return -errno;
        m->cgroup2_path = TAKE_PTR(mounts.unified.path);
        return 0;
}

/* cgroup v2 id (what BPF reports) -> path relative to the cgroup2 root. */
static int cgroup_id_to_path(Manager *m, uint64_t id, char **ret) {
        struct {
                struct file_handle fh;
                uint64_t id;
        } h = { .fh = { .handle_bytes = sizeof(uint64_t), .handle_type = 0xfe /* FILEID_KERNFS */ }, .id = id };
        _cleanup_(closep) int fd = -1;
        char link[64], target[4096];
        size_t pl;
        ssize_t n;

        if (m->cgroup2_fd < 0)
                return -ENOENT;
        fd = open_by_handle_at(m->cgroup2_fd, &h.fh, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, target, sizeof(target) - 1);
        if (n < 0)
                return -errno;
        target[n] = 0;
        pl = strlen(m->cgroup2_path);
        if (strncmp(target, m->cgroup2_path, pl) != 0)
                return -EXDEV; /* outside our cgroup namespace view */
        *ret = strdup(target[pl] ? target + pl : "/");
        return *ret ? 0 : -ENOMEM;
}

/* ---- the BPF source --------------------------------------------------- */

static void manager_arm_rename_sweep(Manager *m);

int manager_on_bpf_record(void *userdata, const void *data, size_t size) {
        static ExecEventBuf buf;
        static char exe_link[LATNICE_EXE_LEN + LATNICE_EXE_BASE_LEN + 2];
        Manager *m = userdata;
        _cleanup_(freep) char *cgroup = NULL;
        _cleanup_(strv_freep) char **full_argv = NULL;
        TaskAncestor *ancestors = NULL;
        size_t n_ancestors = 0;
        char user[256], group[256];
        int r;
        ExecEvent ev;
        TaskInfo *t = &ev.task;
        bool renamed = false;

        switch (task_info_from_event(data, size, m->ns_per_tick, &buf, &ev)) {
        case EXEC_EVENT_EXIT: {
                AppliedProcess *e = applied_table_get(m->applied, ev.pid);

                if (e && e->start_time == ev.start_time) {
                        log_debug("%s[%d] exited, forgetting it.", e->comm, (int) ev.pid);
                        manager_forget_full(m, ev.pid, false);
                }
                return 0;
        }
        case EXEC_EVENT_RENAME:
                if (ev.tid > 0 && ev.tid != ev.pid) {
                        /* A thread other than the main one: a Thread= rule's business, the process's name is
                         * the same. Its further renames (any thread's) wait for the sweep, as the process's. */
                        log_debug("Thread %d of PID %d renamed to '%s', deciding it.", (int) ev.tid, (int) ev.pid,
                                  t->comm);
                        m->events_seen++;
                        manager_arm_rename_sweep(m);
                        (void) manager_thread_renamed(m, ev.pid, ev.tid);
                        return 0;
                }
                /* Decided again under its new name; its value is no longer just inherited. */
                log_debug("PID %d renamed itself to '%s', deciding again.", (int) ev.pid, t->comm);
                renamed = true;
                manager_arm_rename_sweep(m);
                break;
        case EXEC_EVENT_EXEC:
                break;
        default:
                return 0;
        }
        m->events_seen++;
        proc_task_set_exe_check(t, &m->proc_fd);

        /*
         * Where the execve() path may not name the binary, ask /proc while
         * the process still exists; no rule looks at the path in most sets.
         * Exe= paths are checked against the file itself (manager_exe_is),
         * so a made-up path gains nothing.
         */
        if (m->needs_exe && !ev.exe_exact) {
                char link[32];
                ssize_t n;

                snprintf(link, sizeof(link), "%d/exe", (int) ev.pid);
                n = readlinkat(m->proc_fd, link, exe_link, sizeof(exe_link) - 1);
                if (n > 0) {
                        exe_link[n] = 0;
                        t->exe = exe_link;
                } else
                        t->exe = ev.exe_guess;
        }

        if (ev.has_args && t->argv_truncated) {
                /* More than the record holds: Cmdline= must see every word, so read /proc while we can. */
                ProcTask p = {};

                if (proc_task_read(m->proc_fd, t->pid, PROC_CMDLINE, &p) >= 0 && p.stat.start_time == ev.start_time) {
                        full_argv = TAKE_PTR(p.argv);
                        t->argv = full_argv;
                        t->argv_truncated = false;
                }
                proc_task_done(&p);
                if (t->argv_truncated) {
                        /* Gone before we could read it: say so (CmdlineTruncated, latnicectl status). */
                        m->cmdline_truncated++;
                        log_debug("PID %d: exited before its whole command line could be read; Cmdline= rules saw "
                                  "its first %zu bytes.", (int) ev.pid, ev.args_len);
                }
        }
        if (!ev.has_args && m->filter.want_args) {
                /* The program could not read argv (not paged in): /proc can. */
                ProcTask p = {};

                if (proc_task_read(m->proc_fd, t->pid, PROC_CMDLINE, &p) >= 0 && p.stat.start_time == ev.start_time) {
                        full_argv = TAKE_PTR(p.argv);
                        t->argv = full_argv;
                } else
                        m->cmdline_truncated++;
                proc_task_done(&p);
        }
        if (m->needs_names) {
                t->user = cached_name(m, t->uid, false, user, sizeof(user));
                t->group = cached_name(m, t->gid, true, group, sizeof(group));
        }
        if (m->needs_cgroup) {
                if (cgroup_id_to_path(m, ev.cgroup_id, &cgroup) < 0) {
                        _cleanup_(freep) char *contents = NULL;
                        char path[64];

                        snprintf(path, sizeof(path), "%d/cgroup", (int) ev.pid);
                        if (read_full_file(m->proc_fd, path, 65536, &contents, NULL) >= 0)
                                (void) proc_cgroup_parse(contents, &cgroup);
                }
                t->cgroup = cgroup;
        }
        if (m->needs_ancestors) {
                /* From the parent the record names: a process gone already still has its ancestors. */
                pid_t ppid = t->ppid;
                ProcStat st;

                if (ppid <= 0 && proc_stat_read_pid(m->proc_fd, t->pid, 0, &st) >= 0 && st.start_time == ev.start_time)
                        ppid = st.ppid; /* in a child pid namespace the record cannot name it */
                if (ppid > 0 && proc_ancestors_read(m->proc_fd, ppid, ev.start_time, LATNICE_ANCESTORS_MAX, &ancestors,
                                                    &n_ancestors) >= 0) {
                        t->ancestors = ancestors;
                        t->n_ancestors = n_ancestors;
                }
        }
        r = manager_decide(m, t, ev.start_time, ev.parent_start_time, !renamed);
        task_ancestors_free(ancestors, n_ancestors);
        if (r > 0 && !renamed && m->latency_ring) {
                struct timespec ts;
                uint64_t now, d;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                now = (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
                d = now > ev.ktime ? now - ev.ktime : 0;
                m->latency_ring[m->latency_n++ % LATENCY_RING] = d > UINT32_MAX ? UINT32_MAX : (uint32_t) d;
        }
        return 0;
}

/*
 * An exec source that used up its budget is still pending: it drops to the
 * priority of everything else, so the bus, signals and timers get their turn
 * in between (round robin among equal priorities), and goes back to the
 * front once it has caught up.
 */
static void manager_exec_source_throttle(Manager *m, sd_event_source *s, bool behind) {
        (void) sd_event_source_set_priority(s, behind ? SD_EVENT_PRIORITY_NORMAL : SD_EVENT_PRIORITY_IMPORTANT);
        m->exec_behind = behind;
        if (behind)
                manager_leave_realtime(m);
}

/*
 * Renames are coalesced per process in the kernel (exec.bpf.c): after a
 * process's rename record, its further renames only count until this sweep
 * takes it out of the set. The sweep runs RENAME_SWEEP_USEC after a record
 * and again while the set is not empty, as a normal task, and decides from
 * /proc the processes renamed again meanwhile. A process renaming itself in
 * a loop thus costs at most two decisions per interval.
 */
#define RENAME_SWEEP_USEC (20 * 1000ULL) /* 20 ms */

/*
 * The proc connector has no kernel side to coalesce in: its renames go
 * through this gate, the same way. A process's first rename is decided at
 * once and opens a slot; its further renames until the sweep only mark the
 * slot. Open addressing, no deletes but the sweep's clearing of all.
 */
#define RENAME_GATE_SLOTS 1024 /* a power of two; more than half full: decided at once, as without a gate */

typedef struct RenameGate {
        size_t n;
        struct {
                pid_t pid; /* 0: free */
                bool again;
                RenameSwept what; /* whose renames came again */
        } slot[RENAME_GATE_SLOTS];
} RenameGate;

/* Whose rename it was, as exec.bpf.c's note_renamed(): the process's own, one thread, more threads. */
static void rename_note(RenameSwept *w, pid_t pid, pid_t tid) {
        if (tid == pid)
                w->leader = true;
        else if (w->tid == 0)
                w->tid = tid;
        else if (w->tid != tid)
                w->threads = true;
}

/* A rename of thread tid of pid (tid == pid: of the process itself). 1: pid is new in the gate (decide it
 * now), 0: it was there (decided at the sweep), -ENOSPC: full. */
static int rename_gate_add(RenameGate *g, pid_t pid, pid_t tid) {
        size_t i = ((uint32_t) pid * 2654435761U) & (RENAME_GATE_SLOTS - 1);

        for (;; i = (i + 1) & (RENAME_GATE_SLOTS - 1)) {
                if (g->slot[i].pid == pid) {
                        g->slot[i].again = true;
                        rename_note(&g->slot[i].what, pid, tid);
                        return 0;
                }
                if (g->slot[i].pid == 0)
                        break;
        }
        if (g->n >= RENAME_GATE_SLOTS / 2)
                return -ENOSPC;
        g->slot[i].pid = pid;
        g->slot[i].again = false;
        g->slot[i].what = (RenameSwept) { .pid = pid };
        g->n++;
        return 1;
}

/* Empties the gate; out: the processes renamed again after their first rename (max: at least
 * RENAME_GATE_SLOTS / 2, what the gate holds). */
static size_t rename_gate_sweep(RenameGate *g, RenameSwept *out, size_t max) {
        size_t n = 0;

        if (!g)
                return 0;
        for (size_t i = 0; i < RENAME_GATE_SLOTS && g->n > 0; i++) {
                if (g->slot[i].pid == 0)
                        continue;
                if (g->slot[i].again && n < max)
                        out[n++] = g->slot[i].what;
                g->slot[i].pid = 0;
                g->n--;
        }
        return n;
}

/* A process renamed again since its record: its own name, and the threads Thread= rules may care for. */
static void manager_decide_swept(Manager *m, const RenameSwept *w) {
        if (w->leader)
                (void) manager_decide_pid(m, w->pid, false);
        if (w->threads)
                /* Which of its threads were renamed is not known: they are walked, in steps, and not again
                 * until a pause several times as long. */
                manager_threads_walk(m, w->pid);
        else if (w->tid > 0)
                (void) manager_thread_renamed(m, w->pid, w->tid);
}

static int manager_on_rename_sweep(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        RenameSwept swept[RENAME_GATE_SLOTS / 2 > EXEC_BPF_SWEEP_MAX ? RENAME_GATE_SLOTS / 2 : EXEC_BPF_SWEEP_MAX];
        bool more = false;
        size_t n;
        int r;

        manager_leave_realtime(m);
        if (!m->bpf) {
                n = rename_gate_sweep(m->rename_gate, swept, ELEMENTSOF(swept));
                for (size_t i = 0; i < n; i++)
                        manager_decide_swept(m, &swept[i]);
                return 0;
        }
        /* The ring buffer first: a record still queued is older than what /proc says now. */
        r = exec_bpf_consume(m->bpf, EXEC_BUDGET);
        if (r == 0) {
                n = exec_bpf_sweep_renames(m->bpf, swept, ELEMENTSOF(swept), &more);
                for (size_t i = 0; i < n; i++)
                        manager_decide_swept(m, &swept[i]);
                if (n > 0 || more)
                        r = 1; /* look again: what was swept may rename again, and did not send meanwhile */
        }
        if (r > 0) {
                (void) sd_event_source_set_time_relative(s, RENAME_SWEEP_USEC);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

static void manager_arm_rename_sweep(Manager *m) {
        int enabled = SD_EVENT_OFF, r;

        if (m->rename_sweep) {
                if (sd_event_source_get_enabled(m->rename_sweep, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                        return; /* armed: the rename waits its turn */
                (void) sd_event_source_set_time_relative(m->rename_sweep, RENAME_SWEEP_USEC);
                (void) sd_event_source_set_enabled(m->rename_sweep, SD_EVENT_ONESHOT);
                return;
        }
        r = event_add_timer(m->event, &m->rename_sweep, CLOCK_MONOTONIC, RENAME_SWEEP_USEC, 1000ULL,
                            manager_on_rename_sweep, m, "rename-sweep", SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Failed to set up the sweep of renames, renames may be missed: %m");
}

static int manager_on_bpf(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r;

        r = exec_bpf_consume(m->bpf, EXEC_BUDGET);
        if (r < 0)
                log_warning_errno(r, "Failed to read the BPF ring buffer: %m");
        manager_exec_source_throttle(m, s, r > 0);
        /* Renames that did not fit: those processes, not all of them, are decided by the sweep. */
        if (exec_bpf_take_renames_lost(m->bpf))
                manager_arm_rename_sweep(m);
        if (exec_bpf_take_inherited_full(m->bpf))
                manager_inherited_on_full(m);
        {
                uid_t uid;

                if (exec_bpf_take_inherited_share(m->bpf, &uid))
                        manager_inherited_on_share(m, uid);
        }
        if (exec_bpf_take_lost(m->bpf)) {
                ExecBpfCounters c;

                if (exec_bpf_counters(m->bpf, &c) >= 0)
                        m->events_lost = c.dropped;
                log_warning("The BPF ring buffer overflowed (%" PRIu64 " events lost so far); rescanning.",
                            m->events_lost);
                (void) manager_rescan(m, "events were lost");
        }
        return 0;
}

/* ---- the netlink source ----------------------------------------------- */

int manager_on_netlink_event(void *userdata, NetlinkEventType type, pid_t pid, pid_t tid) {
        Manager *m = userdata;
        int r;

        if (type == NETLINK_EVENT_FORK) {
                manager_inherited_on_fork(m, pid, tid);
                return 0;
        }
        if (type == NETLINK_EVENT_EXIT) {
                AppliedProcess *e = applied_table_get(m->applied, pid);
                ProcStat st;

                manager_inherited_on_exit(m, pid);
                if (!e)
                        return 0;
                /* The leader's exit is reported for a main thread that called pthread_exit() too. */
                if (proc_stat_read_pid(m->proc_fd, pid, 0, &st) >= 0 && st.start_time == e->start_time &&
                    st.num_threads > 1)
                        return 0;
                manager_forget(m, pid);
                return 0;
        }
        /* Without an in-kernel filter, a rename is worth a /proc read only where a Comm= rule could care. */
        if (type == NETLINK_EVENT_RENAME && !m->filter.want_renames && !applied_table_get(m->applied, pid))
                return 0;
        /* ... and another thread's rename only where a Thread= rule could. */
        if (type == NETLINK_EVENT_THREAD_RENAME && m->n_thread_rules == 0 && m->n_thread_entries == 0)
                return 0;
        if (type == NETLINK_EVENT_RENAME || type == NETLINK_EVENT_THREAD_RENAME) {
                if (!m->rename_gate) {
                        m->rename_gate = calloc(1, sizeof(RenameGate));
                        if (!m->rename_gate)
                                return log_oom();
                }
                r = rename_gate_add(m->rename_gate, pid, type == NETLINK_EVENT_THREAD_RENAME ? tid : pid);
                if (r == 0)
                        return 0; /* renamed again: the sweep decides it */
                if (r > 0)
                        manager_arm_rename_sweep(m);
        }
        m->events_seen++;
        if (type == NETLINK_EVENT_THREAD_RENAME) {
                (void) manager_thread_renamed(m, pid, tid);
                return 0;
        }
        r = manager_decide_pid(m, pid, type == NETLINK_EVENT_EXEC);
        if (r == -ESRCH)
                log_debug("Process %d exited before /proc could be read.", (int) pid);
        return 0;
}

static int manager_on_netlink(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r;

        r = exec_netlink_read(fd, EXEC_BUDGET, manager_on_netlink_event, m);
        manager_exec_source_throttle(m, s, r > 0);
        if (r == -ENOBUFS) {
                m->events_lost++;
                log_warning("The proc connector dropped events (ENOBUFS); rescanning.");
                (void) manager_rescan(m, "events were lost");
        } else if (r < 0)
                log_warning_errno(r, "Failed to read the proc connector: %m");
        return 0;
}

/* ---- the /proc scan --------------------------------------------------- */

static int scan_entry_compare(const void *a, const void *b) {
        const ScanEntry *x = a, *y = b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
}

/* Seen in the previous walk, under the same name. */
static bool scan_prev_has(Manager *m, const ScanEntry *e) {
        const ScanEntry *p = bsearch(e, m->scan_prev, m->n_scan_prev, sizeof(ScanEntry), scan_entry_compare);

        return p && strncmp(p->comm, e->comm, sizeof(e->comm)) == 0;
}

/*
 * A walk over /proc: all=true re-evaluates every process (start, reload,
 * after a loss); all=false (the periodic scan source) only processes not
 * seen in the previous walk. It runs as a job, SCAN_CHUNK processes per
 * dispatch of a defer source, so that exec events are handled in between
 * even with 100,000 processes.
 */
typedef struct ScanJob {
        pid_t *pids;
        size_t n_pids, next;
        ScanEntry *now;
        size_t n_now;
        bool all;
} ScanJob;

static ScanJob *scan_job_free(ScanJob *j) {
        if (!j)
                return NULL;
        free(j->pids);
        free(j->now);
        free(j);
        return NULL;
}

/* Decides the next chunk; true when the walk is complete. */
static bool scan_job_step(Manager *m, ScanJob *j, size_t chunk) {
        for (size_t k = 0; k < chunk && j->next < j->n_pids; k++) {
                pid_t pid = j->pids[j->next++];
                ProcStat st;
                ScanEntry e;

                if (proc_stat_read_pid(m->proc_fd, pid, 0, &st) < 0)
                        continue;
                if (st.flags & PROC_PF_KTHREAD)
                        continue;
                e = (ScanEntry) { .pid = pid, .start_time = st.start_time };
                memcpy(e.comm, st.comm, sizeof(e.comm));
                j->now[j->n_now++] = e;
                if (!j->all && scan_prev_has(m, &e))
                        continue;
                /* The name to remember is the one decided on: a rename between the two reads would
                 * otherwise leave the value of a name the process no longer has, never decided again. */
                (void) manager_decide_pid_comm(m, pid, false, j->now[j->n_now - 1].comm);
                if (st.num_threads > 1)
                        manager_threads_walk(m, pid);
        }
        return j->next >= j->n_pids;
}

/* The walk is done: forget processes that are gone (their exit may not have been reported). */
static void scan_job_finish(Manager *m, ScanJob *j) {
        _cleanup_(freep) pid_t *gone = NULL;
        size_t i = 0, n_gone = 0;
        AppliedProcess *e;

        qsort(j->now, j->n_now, sizeof(ScanEntry), scan_entry_compare);
        gone = calloc(applied_table_size(m->applied) + 1, sizeof(pid_t));
        while (gone && (e = applied_table_next(m->applied, &i))) {
                ScanEntry k = { .pid = e->pid, .start_time = e->start_time };

                if (bsearch(&k, j->now, j->n_now, sizeof(ScanEntry), scan_entry_compare))
                        continue;
                /* Not listed: gone, or started after the listing (events were handled meanwhile). */
                if (proc_pid_is(m->proc_fd, e->pid, e->start_time))
                        continue;
                gone[n_gone++] = e->pid;
        }
        for (size_t g = 0; g < n_gone; g++)
                manager_forget(m, gone[g]);

        free(m->scan_prev);
        m->scan_prev = TAKE_PTR(j->now);
        m->n_scan_prev = j->n_now;
}

static int scan_job_new(Manager *m, bool all, ScanJob **ret) {
        ScanJob *j;
        int n;

        j = calloc(1, sizeof(ScanJob));
        if (!j)
                return -ENOMEM;
        n = proc_list_pids(m->proc_fd, &j->pids);
        if (n < 0) {
                scan_job_free(j);
                return n;
        }
        j->n_pids = (size_t) n;
        j->now = calloc((size_t) n + 1, sizeof(ScanEntry));
        if (!j->now) {
                scan_job_free(j);
                return -ENOMEM;
        }
        j->all = all;
        *ret = j;
        return 0;
}

/* A whole walk at once: at start, before anything else runs. */
int manager_scan_now(Manager *m, bool all) {
        ScanJob *j = NULL;
        int r;

        manager_leave_realtime(m);
        r = scan_job_new(m, all, &j);
        if (r < 0)
                return log_error_errno(r, "Failed to list /proc: %m");
        (void) scan_job_step(m, j, SIZE_MAX);
        scan_job_finish(m, j);
        scan_job_free(j);
        return 0;
}

static int manager_on_scan_step(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        int r;

        manager_leave_realtime(m);
        if (!m->scan_job) {
                bool all = m->scan_want_all;

                m->scan_want_all = false;
                m->scan_pending = false;
                r = scan_job_new(m, all, &m->scan_job);
                if (r < 0) {
                        log_error_errno(r, "Failed to list /proc: %m");
                        return sd_event_source_set_enabled(s, SD_EVENT_OFF);
                }
                if (all)
                        m->rescans++;
        }
        if (!scan_job_step(m, m->scan_job, SCAN_CHUNK))
                return 0; /* more next time round */
        scan_job_finish(m, m->scan_job);
        m->scan_job = scan_job_free(m->scan_job);
        manager_notify_status(m);
        /* Asked again while walking (a loss, a reload): once more, from a fresh listing. */
        if (!m->scan_pending)
                return sd_event_source_set_enabled(s, SD_EVENT_OFF);
        return 0;
}

/* Queues a walk; a burst of requests costs one walk (plus one, if a walk was already under way). */
static int manager_queue_scan(Manager *m, bool all) {
        int r;

        m->scan_want_all = m->scan_want_all || all;
        m->scan_pending = true;
        if (!m->scan_defer) {
                r = sd_event_add_defer(m->event, &m->scan_defer, manager_on_scan_step, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to schedule a rescan: %m");
                (void) sd_event_source_set_description(m->scan_defer, "rescan");
        }
        return sd_event_source_set_enabled(m->scan_defer, SD_EVENT_ON);
}

int manager_rescan(Manager *m, const char *why) {
        log_debug("Rescanning: %s.", why);
        return manager_queue_scan(m, true);
}

static int manager_on_scan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        (void) manager_queue_scan(m, false);
        return sd_event_source_set_time_relative(s, m->options.scan_interval_usec);
}

/* ---- choosing the event source ---------------------------------------- */

/* Exec events go before anything else (they are what is time critical), at SCHED_FIFO (manager.c). */
static int manager_add_exec_source(Manager *m, sd_event_source **ret, int fd, sd_event_io_handler_t handler,
                                   const char *description) {
        int r;

        r = sd_event_add_io(m->event, ret, fd, EPOLLIN, handler, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(*ret, description);
        (void) sd_event_source_set_priority(*ret, SD_EVENT_PRIORITY_IMPORTANT);
        return sd_event_source_set_prepare(*ret, manager_on_exec_source_prepare);
}

static int manager_setup_bpf(Manager *m, char **ret_reason) {
        ExecBpfOptions o = {
                .ringbuf_size = m->options.ringbuf_size,
                .force_tracepoint = m->options.force_tracepoint,
        };
        _cleanup_(closep) int stored_inherited = -1, stored_users = -1;
        struct stat self;
        int r;

        /* In a child pid namespace BPF sees host pids: translate to ours. The
         * initial namespace has the fixed inode PROC_PID_INIT_INO. */
        if (stat("/proc/self/ns/pid", &self) < 0)
                return -errno;
        o.ns_translate = self.st_ino != 0xEFFFFFFCU;
        o.pidns_dev = self.st_dev;
        o.pidns_ino = self.st_ino;

        /* What an earlier latniced's kernel side recorded (a crash, Restart=): its maps, kept by systemd. */
        manager_inherited_take_stored(m, &stored_inherited, &stored_users);
        o.inherited_fd = stored_inherited;
        o.inherited_users_fd = stored_users;
        r = exec_bpf_new(&o, manager_on_bpf_record, m, &m->bpf, ret_reason);
        if (r < 0)
                return r;
        if (exec_bpf_inherited_reused(m->bpf))
                log_notice("Went on with the record of processes that inherited a value through fork from an "
                           "earlier latniced.");
        else if (stored_inherited >= 0 || stored_users >= 0) {
                log_notice("The record of processes that inherited a value through fork that an earlier latniced "
                           "left is not of this version's kind: starting a new one.");
                /* Out of the store, or they would take the new ones' places there (FileDescriptorStoreMax=). */
                manager_inherited_unstore(m);
        }
        manager_inherited_store(m);
        /* Processes taken over from an earlier run: their exits are reported too. */
        {
                size_t i = 0;
                AppliedProcess *e;

                /* A thread's entry: its process (manager_record()). */
                while ((e = applied_table_next(m->applied, &i)))
                        (void) exec_bpf_track(m->bpf, e->tgid > 0 ? e->tgid : e->pid, true);
        }
        return manager_add_exec_source(m, &m->bpf_event_source, exec_bpf_epoll_fd(m->bpf), manager_on_bpf,
                                       "bpf-ringbuf");
}

static int manager_setup_netlink(Manager *m) {
        m->netlink_fd = exec_netlink_open(4 * 1024 * 1024);
        if (m->netlink_fd < 0)
                return m->netlink_fd;
        return manager_add_exec_source(m, &m->netlink_event_source, m->netlink_fd, manager_on_netlink,
                                       "proc-connector");
}

static int manager_setup_scan(Manager *m) {
        return event_add_timer(m->event, &m->scan_timer, CLOCK_MONOTONIC, m->options.scan_interval_usec, 10 * 1000,
                               manager_on_scan_timer, m, "proc-scan", SD_EVENT_ON);
}

int manager_setup_source(Manager *m) {
        _cleanup_(freep) char *bpf_reason = NULL;
        SourceKind want = m->options.source;
        int r = -EOPNOTSUPP, r_netlink = 0;

        if (want == SOURCE_AUTO || want == SOURCE_BPF) {
                r = manager_setup_bpf(m, &bpf_reason);
                if (r >= 0) {
                        m->source = SOURCE_BPF;
                        if (asprintf(&m->source_reason, "BPF exec tracepoint (%s)%s%s", exec_bpf_hook(m->bpf),
                                     bpf_reason ? ": " : "", bpf_reason ?: "") < 0)
                                return log_oom();
                        return 0;
                }
                if (!bpf_reason && asprintf(&bpf_reason, "cannot load BPF: %s", strerror(-r)) < 0)
                        return log_oom();
                if (r == -EPERM || r == -EACCES)
                        log_warning("BPF is not permitted (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN; before "
                                    "Linux 5.11 also a high enough RLIMIT_MEMLOCK): %s; "
                                    "falling back.", bpf_reason);
                else
                        log_warning("%s; falling back.", bpf_reason);
                m->bpf = exec_bpf_free(m->bpf);
                if (want == SOURCE_BPF)
                        return log_error_errno(r, "The BPF event source was requested and is not available.");
        }
        if (want == SOURCE_AUTO || want == SOURCE_NETLINK) {
                r_netlink = manager_setup_netlink(m);
                if (r_netlink >= 0) {
                        m->source = SOURCE_NETLINK;
                        if (asprintf(&m->source_reason, "netlink proc connector%s%s%s",
                                     bpf_reason ? " (BPF unavailable: " : "", bpf_reason ?: "",
                                     bpf_reason ? ")" : "") < 0)
                                return log_oom();
                        return 0;
                }
                log_warning_errno(r_netlink, "Cannot subscribe to the proc connector (needs CAP_NET_ADMIN and the "
                                  "initial pid namespace): %m; falling back to scanning /proc.");
                if (want == SOURCE_NETLINK)
                        return log_error_errno(r_netlink,
                                               "The netlink event source was requested and is not available.");
        }
        r = manager_setup_scan(m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the /proc scan: %m");
        m->source = SOURCE_SCAN;
        if (asprintf(&m->source_reason, "periodic /proc scan every %" PRIu64 " ms%s",
                     m->options.scan_interval_usec / 1000,
                     want == SOURCE_SCAN ? " (requested)" : " (no BPF, no proc connector)") < 0)
                return log_oom();
        return 0;
}

void manager_sources_done(Manager *m) {
        manager_threads_done(m);
        m->scan_defer = sd_event_source_unref(m->scan_defer);
        m->scan_job = scan_job_free(m->scan_job);
        m->scan_timer = sd_event_source_unref(m->scan_timer);
        m->scan_prev = mfree(m->scan_prev);
        m->netlink_event_source = sd_event_source_unref(m->netlink_event_source);
        if (m->netlink_fd >= 0)
                close(m->netlink_fd);
        m->netlink_fd = -1;
        m->bpf_event_source = sd_event_source_unref(m->bpf_event_source);
        m->rename_sweep = sd_event_source_unref(m->rename_sweep);
        m->rename_gate = mfree(m->rename_gate);
        manager_inherited_done(m);
        m->bpf = exec_bpf_free(m->bpf);
        m->source_reason = mfree(m->source_reason);
        manager_name_cache_flush(m);
        if (m->cgroup2_fd >= 0)
                close(m->cgroup2_fd);
        m->cgroup2_fd = -1;
        m->cgroup2_path = mfree(m->cgroup2_path);
}
