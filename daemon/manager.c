/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latniced's state and its event sources, all on one sd-event loop: the BPF
 * ring buffer (or the proc connector, or a /proc scan timer), signals,
 * inotify on the rule directories with a debounce timer, and the watchdog.
 * Decisions: process rules first; the applied table remembers what we set so
 * foreign values are respected and restores only touch our own.
 */

#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <systemd/sd-daemon.h>

#include "cgroup.h"
#include "dir-watch.h"
#include "exec-netlink.h"
#include "log.h"
#include "manager-bus.h"
#include "manager-units.h"
#include "manager.h"
#include "match.h"
#include "proc.h"
#include "profile.h"
#include "state.h"
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
        return _SOURCE_MAX;
}

typedef struct ScanJob ScanJob;
static ScanJob *scan_job_free(ScanJob *j);
static void manager_arm_name_retry(Manager *m, bool on);
static int manager_refresh_watches(Manager *m);
static void name_cache_flush(Manager *m);
static void manager_prune(Manager *m);

static void options_done(ManagerOptions *o) {
        free(o->root);
        free(o->profile);
        free(o->profile_dir);
        free(o->state_dir);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        manager_units_on_disconnected(m);
        manager_bus_on_disconnected(m);
        manager_units_free(m);
        sd_event_source_disable_unref(m->bus_io_source);
        sd_event_source_disable_unref(m->bus_time_source);
        sd_event_source_unref(m->bus_retry_timer);
        sd_event_source_unref(m->reload_timer);
        sd_event_source_unref(m->inotify_event_source);
        dir_watch_free(m->dir_watch);
        sd_event_source_unref(m->name_retry_timer);
        sd_event_source_unref(m->scan_defer);
        scan_job_free(m->scan_job);
        sd_event_source_unref(m->prune_defer);
        sd_event_source_unref(m->scan_timer);
        free(m->scan_prev);
        sd_event_source_unref(m->netlink_event_source);
        if (m->netlink_fd >= 0)
                close(m->netlink_fd);
        sd_event_source_unref(m->bpf_event_source);
        exec_bpf_free(m->bpf);
        free(m->source_reason);
        free(m->latency_ring);
        name_cache_flush(m);
        if (m->cgroup2_fd >= 0)
                close(m->cgroup2_fd);
        free(m->cgroup2_path);
        if (m->proc_fd >= 0)
                close(m->proc_fd);
        applied_table_free(m->applied);
        filter_spec_done(&m->filter);
        free(m->prefilter);
        match_index_free(m->index);
        rule_set_free(m->rules);
        free(m->profile);
        free(m->profile_path);
        /* Not closed by manager_run(): a failed start; what is in it stays for the next run. */
        state_file_close(m->state, true);
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        options_done(&m->options);
        free(m);
        return NULL;
}

static int strdup_opt(const char *s, char **ret) {
        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* ---- helpers ---------------------------------------------------------- */

/*
 * uid/gid -> name for User=name and Group=name rules, cached: NSS reads
 * /etc/passwd (or asks LDAP) on every call. Direct-mapped by id, one cache
 * for users and one for groups; the name is copied out, so no lookup can
 * invalidate what an earlier one returned. Misses are remembered for a
 * while (a uid without a name stays without one), and everything is
 * forgotten when the passwd or group file changes.
 */
#define NAME_MISS_USEC (30 * 1000 * 1000ULL)

static uint64_t now_monotonic_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static const char *cached_name(Manager *m, uint32_t id, bool group, char *buf, size_t size) {
        NameCacheEntry *e = &(group ? m->group_cache : m->user_cache)[(id * 2654435761U) % NAME_CACHE_SIZE];
        uint64_t now = now_monotonic_usec();
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

static void name_cache_flush(Manager *m) {
        for (size_t i = 0; i < NAME_CACHE_SIZE; i++) {
                free(m->user_cache[i].name);
                free(m->group_cache[i].name);
        }
        memset(m->user_cache, 0, sizeof(m->user_cache));
        memset(m->group_cache, 0, sizeof(m->group_cache));
}

static int find_cgroup2(Manager *m) {
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

static void manager_notify_status(Manager *m) {
        if (!m->ready)
                return;
        (void) sd_notifyf(false, "STATUS=%zu rules (%s), %zu processes applied, %s events, %s backend",
                          m->rules ? m->rules->n_rules : 0, m->profile ?: "no profile",
                          applied_table_size(m->applied), source_kind_to_string(m->source),
                          backend_to_string(m->probe.backend));
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

void manager_leave_realtime(Manager *m) {
        int r;

        if (!m->rt_on)
                return;
        r = manager_sched_self(m, false);
        if (r < 0)
                log_debug_errno(r, "Failed to leave SCHED_FIFO: %m");
        else
                m->rt_on = false;
}

static void manager_enter_realtime(Manager *m) {
        int r;

        if (!m->realtime || m->rt_on)
                return;
        r = manager_sched_self(m, true);
        if (r < 0)
                log_debug_errno(r, "Failed to go back to SCHED_FIFO: %m");
        else
                m->rt_on = true;
}

/* The exec sources' prepare callback: runs before every sleep of the loop. */
static int manager_on_exec_source_prepare(sd_event_source *s, void *userdata) {
        manager_enter_realtime(userdata);
        return 0;
}

static void manager_setup_realtime(Manager *m) {
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
                log_notice_errno(r, "Cannot run at SCHED_FIFO (%m); values may be set after a program "
                                 "started rather than before.");
                if (m->probe.backend != BACKEND_NONE)
                        (void) manager_sched_self(m, false);
                return;
        }
        m->realtime = m->rt_on = true;
        manager_leave_realtime(m);
        log_info("Handling exec events at SCHED_FIFO priority 1, everything else as a normal task.");
}

/* ---- deciding and applying ------------------------------------------- */

/* Writes e's record to the state file (a new one, or its own slot). */
static void manager_state_save(Manager *m, AppliedProcess *e) {
        StateRecord rec;

        if (!m->state)
                return;
        state_record_from_applied(e, &rec);
        if (e->state_slot == STATE_SLOT_NONE)
                e->state_slot = state_file_add(m->state, &rec);
        else
                state_file_update(m->state, e->state_slot, &rec);
}

/* Drops a process from the table and the state file; untrack: it is tracked by the BPF side still. */
static void manager_forget_full(Manager *m, pid_t pid, bool untrack) {
        AppliedProcess *e = applied_table_get(m->applied, pid);

        if (!e)
                return;
        if (m->state && e->state_slot != STATE_SLOT_NONE) {
                uint32_t slot = e->state_slot;
                pid_t moved = state_file_remove(m->state, slot);
                AppliedProcess *me = moved > 0 ? applied_table_get(m->applied, moved) : NULL;

                if (me)
                        me->state_slot = slot;
        }
        applied_table_remove(m->applied, pid);
        if (untrack && m->bpf)
                (void) exec_bpf_track(m->bpf, pid, false);
}

static void manager_forget(Manager *m, pid_t pid) {
        manager_forget_full(m, pid, true);
}

/* Inserts or replaces an entry (the table takes its strings) and keeps the state file in step. */
static int manager_record(Manager *m, AppliedProcess *n) {
        AppliedProcess *old = applied_table_get(m->applied, n->pid), *e;
        int r;

        n->state_slot = old ? old->state_slot : STATE_SLOT_NONE;
        r = applied_table_put(m->applied, n);
        if (r < 0)
                return r;
        e = applied_table_get(m->applied, n->pid);
        manager_state_save(m, e);
        if (m->bpf && !old)
                (void) exec_bpf_track(m->bpf, n->pid, true);
        return 0;
}

int manager_record_manual(Manager *m, pid_t pid, uint64_t start_time, uid_t uid, const char *comm, int value,
                          const ThreadSched *before, uid_t by) {
        AppliedProcess *e = applied_table_get(m->applied, pid);
        AppliedProcess n = {
                .pid = pid,
                .start_time = start_time,
                .uid = uid,
                .latency_nice = value,
                .raw = sched_raw_value(&m->probe, value),
                .before = before ? before->latency_nice : 0,
                .before_raw = before ? sched_thread_raw(&m->probe, before) : 0,
                .rule_name = strdup("manual"),
                .inherit = true, /* like nice: what somebody asked for a program, its children keep */
                .manual = true,
                .manual_uid = by,
        };
        int r;

        if (e && e->start_time == start_time) {
                /* Still what it had before any of us. */
                n.before = e->before;
                n.before_raw = e->before_raw;
        }
        snprintf(n.comm, sizeof(n.comm), "%s", comm ?: "");
        if (asprintf(&n.rule, "SetLatencyNice by uid %u", (unsigned) by) < 0)
                n.rule = NULL;
        if (!n.rule || !n.rule_name) {
                free(n.rule);
                free(n.rule_name);
                return log_oom();
        }
        r = manager_record(m, &n);
        if (r < 0) {
                free(n.rule);
                free(n.rule_name);
                return log_oom();
        }
        manager_prune(m);
        return 0;
}

/*
 * Is the file at path the executable t runs? The kernel told us its inode
 * (BPF record), or /proc/PID/exe leads to it. An executable that was
 * replaced while it ran (an upgrade: "/usr/bin/x (deleted)") still counts
 * for its old path if root owns it and only root could write it.
 */
static bool manager_exe_is(const TaskInfo *t, const char *path, void *userdata) {
        Manager *m = userdata;
        struct stat want, have;
        bool have_want;
        char link[32];
        size_t l;

        have_want = stat(path, &want) >= 0;
        if (have_want && t->exe_ino != 0) {
                if (want.st_ino != t->exe_ino)
                        return false;
                if (want.st_dev == makedev(t->exe_dev >> 20, t->exe_dev & 0xfffff))
                        return true;
                /* Same inode number, another device number (btrfs subvolumes report their own): ask /proc. */
        }
        snprintf(link, sizeof(link), "%d/exe", (int) t->pid);
        if (fstatat(m->proc_fd, link, &have, 0) < 0)
                return false;
        if (have_want && want.st_dev == have.st_dev && want.st_ino == have.st_ino)
                return true;
        l = strlen(path);
        return t->exe && strncmp(t->exe, path, l) == 0 && strcmp(t->exe + l, " (deleted)") == 0 &&
               have.st_nlink == 0 && have.st_uid == 0 && !(have.st_mode & (S_IWGRP | S_IWOTH));
}

void manager_task_set_exe_check(Manager *m, TaskInfo *t) {
        t->exe_is = manager_exe_is;
        t->exe_userdata = m;
}

static void manager_restore(Manager *m, AppliedProcess *e, const char *why) {
        int r;

        r = applied_restore(&m->probe, m->proc_fd, e);
        if (r == -ESRCH)
                log_debug("%s[%d] is gone, nothing to restore.", e->comm, (int) e->pid);
        else if (r < 0)
                log_warning_errno(r, "Failed to restore %s[%d]: %m", e->comm, (int) e->pid);
        else if (r == 0)
                log_info("%s[%d]: value changed by somebody else, leaving it (%s).", e->comm, (int) e->pid, why);
        else
                log_info("%s[%d]: restored LatencyNice=%d (%s).", e->comm, (int) e->pid, e->before, why);
}

/*
 * Exit events keep the table small, but an exit is not reported for a
 * process whose value went back to the default (the BPF side skips those),
 * nor while events are lost. Whenever the table has doubled, drop the dead:
 * amortized constant work per apply, done later as bulk work (a walk over
 * 100,000 entries must not run at SCHED_FIFO).
 */
static int manager_on_prune(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        _cleanup_(freep) pid_t *gone = NULL;
        size_t i = 0, n_gone = 0, size = applied_table_size(m->applied);
        AppliedProcess *e;

        manager_leave_realtime(m);
        gone = calloc(size + 1, sizeof(pid_t));
        if (!gone)
                return 0;
        while ((e = applied_table_next(m->applied, &i))) {
                char path[64];
                ProcStat st;

                snprintf(path, sizeof(path), "%d/stat", (int) e->pid);
                if (proc_stat_read(m->proc_fd, path, &st) < 0 || st.start_time != e->start_time)
                        gone[n_gone++] = e->pid;
        }
        for (size_t j = 0; j < n_gone; j++)
                manager_forget(m, gone[j]);
        size = applied_table_size(m->applied);
        m->prune_at = size * 2 > 256 ? size * 2 : 256;
        log_debug("Pruned %zu exited processes, %zu left.", n_gone, size);
        return 0;
}

static void manager_prune(Manager *m) {
        int r;

        if (applied_table_size(m->applied) < m->prune_at)
                return;
        if (!m->prune_defer) {
                r = sd_event_add_defer(m->event, &m->prune_defer, manager_on_prune, m);
                if (r < 0)
                        return (void) log_warning_errno(r, "Failed to schedule pruning the applied table: %m");
                (void) sd_event_source_set_description(m->prune_defer, "prune");
                (void) sd_event_source_set_priority(m->prune_defer, SD_EVENT_PRIORITY_IDLE);
        }
        (void) sd_event_source_set_enabled(m->prune_defer, SD_EVENT_ONESHOT);
}

/* The same value from another rule (a re-exec into another program, a reload): only the bookkeeping changes. */
static int manager_update_metadata(Manager *m, AppliedProcess *e, const ApplyRequest *q) {
        char *ref, *name;

        if (streq_ptr(e->rule, q->ref) && streq_ptr(e->rule_name, q->rule_name) && e->inherit == q->inherit)
                return 0;
        ref = strdup(q->ref);
        name = strdup(q->rule_name);
        if (!ref || !name) {
                free(ref);
                free(name);
                return log_oom();
        }
        free(e->rule);
        free(e->rule_name);
        e->rule = ref;
        e->rule_name = name;
        e->inherit = q->inherit;
        manager_state_save(m, e);
        return 0;
}

static AppliedProcess *manager_applied_parent(Manager *m, const TaskInfo *t, uint64_t parent_start);

int manager_apply(Manager *m, const TaskInfo *t, uint64_t start_time, const ApplyRequest *q, bool fresh_exec) {
        AppliedProcess *e = applied_table_get(m->applied, t->pid);
        ThreadSched before = {};
        ApplyResult res = {};
        uint64_t before_raw;
        int before_ln, r;

        if (e && e->start_time != start_time)
                e = NULL; /* about a dead process: replaced below */
        if (e && !e->manual && e->latency_nice == q->latency_nice && e->via_unit == q->via_unit &&
            (!q->override || applied_is_ours(&m->probe, m->proc_fd, e) != 0))
                return manager_update_metadata(m, e, q);

        if (m->probe.backend == BACKEND_NONE || m->options.dry_run) {
                log_info("%s[%d]: would set LatencyNice=%d from %s (%s).", t->comm, (int) t->pid, q->latency_nice,
                         q->ref, m->options.dry_run ? "dry run" : "kernel has no backend");
                return 0;
        }

        if (!fresh_exec) {
                /* Somebody else's value is theirs, unless the rule says Override=yes. The raw value decides:
                 * a foreign slice a little off the default rounds to latency nice 0 and is still foreign. */
                r = sched_thread_get(&m->probe, t->pid, &before);
                if (r == -ESRCH) {
                        log_debug("%s[%d] exited before its value could be set.", t->comm, (int) t->pid);
                        return 0;
                }
                if (r < 0)
                        return log_warning_errno(r, "Failed to read %s[%d]: %m", t->comm, (int) t->pid);
                if (!q->override && !before.realtime && sched_thread_raw(&m->probe, &before) != 0 &&
                    (!e || sched_thread_raw(&m->probe, &before) != e->raw)) {
                        log_info("%s[%d]: has LatencyNice=%d set by somebody else; %s wants %d, leaving it "
                                 "(Override=no).", t->comm, (int) t->pid, before.latency_nice, q->ref,
                                 q->latency_nice);
                        return 0;
                }
        }

        r = sched_apply_process(&m->probe, m->proc_fd, t->pid, start_time, q->latency_nice, q->threads, fresh_exec,
                                &res);
        if (r == -ESRCH) {
                log_debug("%s[%d] exited before its value could be set.", t->comm, (int) t->pid);
                return 0;
        }
        if (r < 0) {
                m->apply_errors++;
                return log_warning_errno(r, "Failed to set LatencyNice=%d on %s[%d] (%s): %m", q->latency_nice,
                                         t->comm, (int) t->pid, q->ref);
        }
        before_ln = before.latency_nice;
        before_raw = sched_thread_raw(&m->probe, &before);
        if (fresh_exec) {
                const AppliedProcess *parent;

                before = res.main_before;
                before_ln = before.latency_nice;
                before_raw = sched_thread_raw(&m->probe, &before);
                /* A child of a process we set carries our value through fork: what it had before us
                 * is what its parent had before us, not our own value (or a stop would "restore" it). */
                parent = e ? NULL : manager_applied_parent(m, t, q->parent_start);
                if (parent && before_raw == parent->raw) {
                        before_ln = parent->before;
                        before_raw = parent->before_raw;
                }
        }
        m->tasks_applied += res.n_applied;

        {
                AppliedProcess n = {
                        .pid = t->pid,
                        .start_time = start_time,
                        .uid = t->uid,
                        .latency_nice = q->latency_nice,
                        .raw = sched_raw_value(&m->probe, q->latency_nice),
                        .before = e ? e->before : before_ln,
                        .before_raw = e ? e->before_raw : before_raw,
                        .rule = strdup(q->ref),
                        .rule_name = strdup(q->rule_name),
                        .via_unit = q->via_unit,
                        .inherit = q->inherit,
                        .exe_ino = t->exe_ino,
                        .exe_dev = t->exe_dev,
                };

                snprintf(n.comm, sizeof(n.comm), "%s", t->comm ?: "");
                if (!n.rule || !n.rule_name || manager_record(m, &n) < 0) {
                        free(n.rule);
                        free(n.rule_name);
                        return log_oom();
                }
        }
        manager_prune(m);
        manager_bus_emit_applied(m, t->pid, t->comm, q->latency_nice, q->rule_name);

        if (res.n_realtime > 0 || res.n_foreign > 0 || res.n_failed > 0)
                log_info("%s[%d]: LatencyNice=%d from %s on %u of %u threads (%u realtime, %u foreign, %u failed%s%s).",
                         t->comm, (int) t->pid, q->latency_nice, q->ref, res.n_applied, res.n_threads,
                         res.n_realtime, res.n_foreign, res.n_failed, res.first_error ? ": " : "",
                         res.first_error ? strerror(-res.first_error) : "");
        else
                log_info("%s[%d]: LatencyNice=%d from %s (%u thread%s).", t->comm, (int) t->pid, q->latency_nice,
                         q->ref, res.n_threads, res.n_threads == 1 ? "" : "s");
        return 1;
}

/*
 * A value belongs to the program a rule named, not to everything it starts:
 * a terminal at -8 must not hand -8 to every build run in it, nor a
 * compositor its value to every application it launches. So when a child
 * of a process we set execs a program that no rule matches, and it still
 * carries our value (inherited through fork), it gets the default back,
 * unless the parent's rule says Inherit=yes. Values somebody else set are
 * not ours to reset. The parent must be the process we set, not a later
 * one with its pid: its start time says.
 */
/* The entry of t's parent if we set the parent (the same process: its start time says), else NULL. */
static AppliedProcess *manager_applied_parent(Manager *m, const TaskInfo *t, uint64_t parent_start) {
        AppliedProcess *parent;
        pid_t ppid = t->ppid;

        if (ppid <= 0 || parent_start == 0) {
                /* In a child pid namespace BPF cannot name the parent in our terms; /proc can. */
                char path[64];
                ProcStat st, pst;

                snprintf(path, sizeof(path), "%d/stat", (int) t->pid);
                if (proc_stat_read(m->proc_fd, path, &st) < 0)
                        return NULL;
                ppid = st.ppid;
                snprintf(path, sizeof(path), "%d/stat", (int) ppid);
                if (proc_stat_read(m->proc_fd, path, &pst) < 0)
                        return NULL;
                parent_start = pst.start_time;
        }
        parent = applied_table_get(m->applied, ppid);
        return parent && parent->start_time == parent_start ? parent : NULL;
}

static int manager_reset_inherited(Manager *m, const TaskInfo *t, uint64_t start_time, uint64_t parent_start) {
        AppliedProcess *parent = manager_applied_parent(m, t, parent_start);
        ThreadSched cur = {};
        ApplyResult res = {};
        pid_t ppid;
        int r;

        if (!parent || parent->inherit || m->probe.backend == BACKEND_NONE)
                return 0;
        ppid = parent->pid;
        r = sched_thread_get(&m->probe, t->pid, &cur);
        if (r < 0 || sched_thread_raw(&m->probe, &cur) != parent->raw)
                return 0;
        if (m->options.dry_run) {
                log_info("%s[%d]: would reset LatencyNice=%d inherited from %s[%d] (dry run).", t->comm, (int) t->pid,
                         parent->latency_nice, parent->comm, (int) ppid);
                return 0;
        }
        r = sched_apply_process(&m->probe, m->proc_fd, t->pid, start_time, LATNICE_DEFAULT, THREADS_ALL, true, &res);
        if (r < 0) {
                if (r != -ESRCH)
                        log_warning_errno(r, "Failed to reset %s[%d] to the default: %m", t->comm, (int) t->pid);
                return 0;
        }
        log_info("%s[%d]: back to LatencyNice=0: no rule matches it, and %d was inherited from %s[%d] (%s).",
                 t->comm, (int) t->pid, parent->latency_nice, parent->comm, (int) ppid, parent->rule);
        return 1;
}

/*
 * One decision for one process: a value somebody set through
 * SetLatencyNice (latnicectl run, set) stays; else the first matching
 * process rule, else a unit rule of the unit it runs in (per task, where
 * the kernel has no cgroup knob), else nothing (and a value we set earlier
 * is restored).
 * fresh_exec: the exec just happened, so the value the process carries is
 * inherited, not chosen for this program: apply. Otherwise a value that is
 * neither default nor ours is foreign and only replaced with Override=yes.
 * parent_start: the parent's start time as the exec event saw it (0: ask /proc).
 */
static int manager_decide(Manager *m, const TaskInfo *t, uint64_t start_time, uint64_t parent_start,
                          bool fresh_exec) {
        AppliedProcess *e = applied_table_get(m->applied, t->pid);
        MatchResult mr = {};
        const Rule *rule;
        char ref[512];
        int r;

        if (e && e->start_time != start_time && start_time != 0) {
                /* The pid was reused: the entry is about a dead process. */
                manager_forget(m, t->pid);
                e = NULL;
        }
        if (e && e->manual) {
                /* An explicit choice wins over the rules, across an exec too, while it is in place. */
                if (applied_is_ours(&m->probe, m->proc_fd, e) > 0)
                        return 0;
                manager_forget(m, t->pid);
                e = NULL;
        }

        r = match_index_task(m->index, t, false, &mr);
        if (r < 0)
                return log_oom();
        rule = mr.rule;
        match_result_done(&mr);

        if (!rule) {
                r = manager_units_decide(m, t, start_time, fresh_exec);
                if (r != 0)
                        return r;
                e = applied_table_get(m->applied, t->pid);
                if (e) {
                        manager_restore(m, e, "no rule matches any more");
                        manager_forget(m, t->pid);
                } else if (fresh_exec)
                        return manager_reset_inherited(m, t, start_time, parent_start);
                return 0;
        }
        rule_format_ref(rule, ref, sizeof(ref));
        return manager_apply(m, t, start_time,
                             &(ApplyRequest) {
                                     .latency_nice = rule->latency_nice,
                                     .threads = rule->threads,
                                     .override = rule->override,
                                     .inherit = rule->inherit,
                                     .ref = ref,
                                     .rule_name = rule->name,
                                     .parent_start = parent_start,
                             },
                             fresh_exec);
}

/* Reads what the rules need from /proc and decides. */
static int manager_decide_pid(Manager *m, pid_t pid, bool fresh_exec) {
        ProcWhat what = PROC_EXE | PROC_IDS;
        _cleanup_(proc_task_done) ProcTask p = {};
        TaskInfo t;
        int r;

        if (m->filter.want_args)
                what |= PROC_CMDLINE;
        if (m->needs_parent)
                what |= PROC_PARENT;
        if (m->needs_cgroup)
                what |= PROC_CGROUP;
        if (m->needs_names)
                what |= PROC_NAMES;

        r = proc_task_read(m->proc_fd, pid, what, &p);
        if (r < 0)
                return r;
        if ((p.stat.flags & PROC_PF_KTHREAD) || p.stat.state == 'Z')
                return 0;
        proc_task_to_info(&p, &t);
        manager_task_set_exe_check(m, &t);
        if (!p.exe) {
                /* /proc/PID/exe of another user's process needs CAP_SYS_PTRACE, which the unit does not
                 * give: what its exec event told us about the binary still holds until its next exec. */
                AppliedProcess *e = applied_table_get(m->applied, pid);

                if (e && e->start_time == p.stat.start_time) {
                        t.exe_ino = e->exe_ino;
                        t.exe_dev = e->exe_dev;
                }
        }
        return manager_decide(m, &t, p.stat.start_time, 0, fresh_exec);
}

/* Decides the processes of a unit's subtree, as bulk work (not at SCHED_FIFO). */
int manager_decide_pids(Manager *m, const pid_t *pids, size_t n, bool skip_applied) {
        manager_leave_realtime(m);
        for (size_t i = 0; i < n; i++)
                if (!skip_applied || !applied_table_get(m->applied, pids[i]))
                        (void) manager_decide_pid(m, pids[i], false);
        return 0;
}

/* ---- the BPF source --------------------------------------------------- */

/* argv of a record, NUL-separated words, as a NULL-terminated vector pointing into buf; true if words were left over. */
static bool split_args(char *buf, size_t len, char **argv, size_t max) {
        size_t n = 0, i = 0;

        while (i < len && n < max - 1) {
                argv[n++] = buf + i;
                i += strnlen(buf + i, len - i) + 1;
        }
        argv[n] = NULL;
        return i < len;
}

static int manager_on_bpf_record(void *userdata, const void *data, size_t size) {
        Manager *m = userdata;
        const struct latnice_event *ev = data;
        static char exe_buf[LATNICE_EXE_LEN + LATNICE_EXE_BASE_LEN + 2], args[LATNICE_ARGS_LEN + 1];
        _cleanup_(freep) char *cgroup = NULL;
        _cleanup_(strv_freep) char **full_argv = NULL;
        char user[256], group[256];
        const char *exe;
        char *argv[65];
        TaskInfo t;
        uint64_t start;

        if (size < sizeof(struct latnice_exit_event))
                return 0;
        if (ev->type == LATNICE_EVENT_EXIT) {
                const struct latnice_exit_event *x = data;
                AppliedProcess *e = applied_table_get(m->applied, (pid_t) x->pid);

                if (e && e->start_time == x->start_boottime / m->ns_per_tick) {
                        log_debug("%s[%u] exited, forgetting it.", e->comm, x->pid);
                        manager_forget_full(m, (pid_t) x->pid, false);
                }
                return 0;
        }
        if (ev->type != LATNICE_EVENT_EXEC || size < sizeof(struct latnice_event) ||
            ev->exe_len == 0 || (size_t) ev->exe_len + ev->args_len > size - sizeof(struct latnice_event))
                return 0;
        m->events_seen++;
        exe = (const char *) (ev + 1);

        start = ev->start_boottime / m->ns_per_tick;
        t = (TaskInfo) {
                .pid = (pid_t) ev->pid,
                .ppid = (pid_t) ev->ppid,
                .uid = ev->uid,
                .gid = ev->gid,
                .comm = ev->comm,
                .parent_comm = ev->parent_comm[0] ? ev->parent_comm : NULL,
                .exe_ino = ev->exe_ino,
                .exe_dev = ev->exe_dev,
        };
        manager_task_set_exe_check(m, &t);

        /*
         * The executable's path: the execve() path names the binary that runs
         * unless it went through a symlink or is relative; then ask /proc
         * while the process still exists. Exe= paths are checked against the
         * file itself (manager_exe_is), so a made-up path gains nothing.
         */
        {
                const char *base = strrchr(exe, '/');

                if (!m->needs_exe || (exe[0] == '/' && base && strcmp(base + 1, ev->exe_base) == 0 &&
                                      !(ev->flags & LATNICE_EVENT_F_EXE_TRUNC)))
                        /* No rule looks at the path (most sets): the execve() path will do. */
                        t.exe = exe;
                else {
                        char link[32];
                        ssize_t n;

                        snprintf(link, sizeof(link), "%u/exe", ev->pid);
                        n = readlinkat(m->proc_fd, link, exe_buf, sizeof(exe_buf) - 1);
                        if (n > 0) {
                                exe_buf[n] = 0;
                                t.exe = exe_buf;
                        } else if (exe[0] == '/' && base) {
                                snprintf(exe_buf, sizeof(exe_buf), "%.*s/%s", (int) (base - exe), exe,
                                         ev->exe_base);
                                t.exe = exe_buf;
                        } else
                                t.exe = ev->exe_base;
                }
        }

        if (ev->flags & LATNICE_EVENT_F_ARGS) {
                size_t len = ev->args_len < LATNICE_ARGS_LEN ? ev->args_len : LATNICE_ARGS_LEN;

                memcpy(args, exe + ev->exe_len, len);
                args[len] = 0;
                t.argv_truncated = split_args(args, len, argv, ELEMENTSOF(argv)) ||
                                   (ev->flags & LATNICE_EVENT_F_ARGS_TRUNC);
                t.argv = argv;
                if (t.argv_truncated) {
                        /* More than the record holds: Cmdline= must see every word, so read /proc while we can. */
                        ProcTask p = {};

                        if (proc_task_read(m->proc_fd, t.pid, PROC_CMDLINE, &p) >= 0 && p.stat.start_time == start) {
                                full_argv = TAKE_PTR(p.argv);
                                t.argv = full_argv;
                                t.argv_truncated = false;
                        }
                        proc_task_done(&p);
                }
                if (t.argv_truncated) {
                        /* Gone before we could read it: say so (CmdlineTruncated, latnicectl status). */
                        m->cmdline_truncated++;
                        log_debug("PID %u: exited before its whole command line could be read; Cmdline= rules saw "
                                  "its first %zu bytes.", ev->pid, len);
                }
        }
        if (!(ev->flags & LATNICE_EVENT_F_ARGS) && m->filter.want_args) {
                /* The program could not read argv (not paged in): /proc can. */
                ProcTask p = {};

                if (proc_task_read(m->proc_fd, t.pid, PROC_CMDLINE, &p) >= 0 && p.stat.start_time == start) {
                        full_argv = TAKE_PTR(p.argv);
                        t.argv = full_argv;
                } else
                        m->cmdline_truncated++;
                proc_task_done(&p);
        }
        if (m->needs_names) {
                t.user = cached_name(m, ev->uid, false, user, sizeof(user));
                t.group = cached_name(m, ev->gid, true, group, sizeof(group));
        }
        if (m->needs_cgroup) {
                if (cgroup_id_to_path(m, ev->cgroup_id, &cgroup) < 0) {
                        _cleanup_(freep) char *buf = NULL;
                        char path[64];

                        snprintf(path, sizeof(path), "%u/cgroup", ev->pid);
                        if (read_full_file(m->proc_fd, path, 65536, &buf, NULL) >= 0)
                                (void) proc_cgroup_parse(buf, &cgroup);
                }
                t.cgroup = cgroup;
        }
        if (manager_decide(m, &t, start, ev->parent_start_boottime / m->ns_per_tick, true) > 0 && m->latency_ring) {
                struct timespec ts;
                uint64_t now, d;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                now = (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
                d = now > ev->ktime ? now - ev->ktime : 0;
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
static void manager_exec_source_throttle(sd_event_source *s, bool behind) {
        (void) sd_event_source_set_priority(s, behind ? SD_EVENT_PRIORITY_NORMAL : SD_EVENT_PRIORITY_IMPORTANT);
}

static int manager_on_bpf(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r;

        r = exec_bpf_consume(m->bpf, EXEC_BUDGET);
        if (r < 0)
                log_warning_errno(r, "Failed to read the BPF ring buffer: %m");
        manager_exec_source_throttle(s, r > 0);
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

static int manager_on_netlink_event(void *userdata, NetlinkEventType type, pid_t pid, pid_t tid) {
        Manager *m = userdata;
        int r;

        if (type == NETLINK_EVENT_EXIT) {
                AppliedProcess *e = applied_table_get(m->applied, pid);
                char path[64];
                ProcStat st;

                if (!e)
                        return 0;
                /* The leader's exit is reported for a main thread that called pthread_exit() too. */
                snprintf(path, sizeof(path), "%d/stat", (int) pid);
                if (proc_stat_read(m->proc_fd, path, &st) >= 0 && st.start_time == e->start_time &&
                    st.num_threads > 1)
                        return 0;
                manager_forget(m, pid);
                return 0;
        }
        m->events_seen++;
        r = manager_decide_pid(m, pid, true);
        if (r == -ESRCH)
                log_debug("Process %d exited before /proc could be read.", (int) pid);
        return 0;
}

static int manager_on_netlink(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r;

        r = exec_netlink_read(fd, EXEC_BUDGET, manager_on_netlink_event, m);
        manager_exec_source_throttle(s, r > 0);
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

static bool scan_prev_has(Manager *m, const ScanEntry *e) {
        return bsearch(e, m->scan_prev, m->n_scan_prev, sizeof(ScanEntry), scan_entry_compare) != NULL;
}

/*
 * A walk over /proc: all=true re-evaluates every process (start, reload,
 * after a loss); all=false (the periodic scan source) only processes not
 * seen in the previous walk. It runs as a job, SCAN_CHUNK processes per
 * dispatch of a defer source, so that exec events are handled in between
 * even with 100,000 processes.
 */
struct ScanJob {
        pid_t *pids;
        size_t n_pids, next;
        ScanEntry *now;
        size_t n_now;
        bool all;
};

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
                char path[64];
                ScanEntry e;

                snprintf(path, sizeof(path), "%d/stat", (int) pid);
                if (proc_stat_read(m->proc_fd, path, &st) < 0)
                        continue;
                if (st.flags & PROC_PF_KTHREAD)
                        continue;
                e = (ScanEntry) { .pid = pid, .start_time = st.start_time };
                j->now[j->n_now++] = e;
                if (!j->all && scan_prev_has(m, &e))
                        continue;
                (void) manager_decide_pid(m, pid, false);
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
                char path[64];
                ProcStat st;

                if (bsearch(&k, j->now, j->n_now, sizeof(ScanEntry), scan_entry_compare))
                        continue;
                /* Not listed: gone, or started after the listing (events were handled meanwhile). */
                snprintf(path, sizeof(path), "%d/stat", (int) e->pid);
                if (proc_stat_read(m->proc_fd, path, &st) >= 0 && st.start_time == e->start_time)
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
static int manager_scan_now(Manager *m, bool all) {
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

static int manager_setup_bpf(Manager *m, char **ret_reason) {
        ExecBpfOptions o = {
                .ringbuf_size = m->options.ringbuf_size,
                .force_tracepoint = m->options.force_tracepoint,
        };
        struct stat self;
        int r;

        /* In a child pid namespace BPF sees host pids: translate to ours. The
         * initial namespace has the fixed inode PROC_PID_INIT_INO. */
        if (stat("/proc/self/ns/pid", &self) < 0)
                return -errno;
        o.ns_translate = self.st_ino != 0xEFFFFFFCU;
        o.pidns_dev = self.st_dev;
        o.pidns_ino = self.st_ino;

        r = exec_bpf_new(&o, manager_on_bpf_record, m, &m->bpf, ret_reason);
        if (r < 0)
                return r;
        /* Processes taken over from an earlier run: their exits are reported too. */
        {
                size_t i = 0;
                AppliedProcess *e;

                while ((e = applied_table_next(m->applied, &i)))
                        (void) exec_bpf_track(m->bpf, e->pid, true);
        }
        r = sd_event_add_io(m->event, &m->bpf_event_source, exec_bpf_epoll_fd(m->bpf), EPOLLIN, manager_on_bpf, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->bpf_event_source, "bpf-ringbuf");
        /* Events before anything else: they are what is time critical. */
        (void) sd_event_source_set_priority(m->bpf_event_source, SD_EVENT_PRIORITY_IMPORTANT);
        return sd_event_source_set_prepare(m->bpf_event_source, manager_on_exec_source_prepare);
}

static int manager_setup_netlink(Manager *m) {
        int r;

        m->netlink_fd = exec_netlink_open(4 * 1024 * 1024);
        if (m->netlink_fd < 0)
                return m->netlink_fd;
        r = sd_event_add_io(m->event, &m->netlink_event_source, m->netlink_fd, EPOLLIN, manager_on_netlink, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->netlink_event_source, "proc-connector");
        (void) sd_event_source_set_priority(m->netlink_event_source, SD_EVENT_PRIORITY_IMPORTANT);
        return sd_event_source_set_prepare(m->netlink_event_source, manager_on_exec_source_prepare);
}

static int manager_setup_scan(Manager *m) {
        int r;

        r = sd_event_add_time_relative(m->event, &m->scan_timer, CLOCK_MONOTONIC, m->options.scan_interval_usec,
                                       10 * 1000, manager_on_scan_timer, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->scan_timer, "proc-scan");
        return sd_event_source_set_enabled(m->scan_timer, SD_EVENT_ON);
}

static int manager_setup_source(Manager *m) {
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
                        return log_error_errno(r_netlink, "The netlink event source was requested and is not available.");
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

/* ---- rules, reload, inotify ------------------------------------------- */

static bool rule_errors_subset(const RuleSet *new, const RuleSet *old) {
        for (size_t i = 0; i < new->n_errors; i++) {
                bool found = false;

                for (size_t j = 0; old && j < old->n_errors && !found; j++)
                        found = streq_ptr(new->errors[i].file, old->errors[j].file) &&
                                new->errors[i].line == old->errors[j].line &&
                                streq_ptr(new->errors[i].message, old->errors[j].message);
                if (!found)
                        return false;
        }
        return true;
}

static void log_rule_errors(const RuleSet *s, int level) {
        for (size_t i = 0; i < s->n_errors; i++) {
                char buf[1024];

                rule_error_format(&s->errors[i], buf, sizeof(buf));
                log_full_errno(level, 0, "%s", buf);
        }
}

static int manager_resolve_profile(Manager *m, char **ret_name, char **ret_path) {
        _cleanup_(freep) char *conf = NULL, *name = NULL, *path = NULL;
        DaemonConfig dc = {};
        int r;

        *ret_name = *ret_path = NULL;
        if (m->options.no_profile)
                return 0;
        if (m->options.profile)
                name = strdup(m->options.profile);
        else {
                conf = path_join(m->options.root, LATNICE_DAEMON_CONF);
                if (!conf)
                        return -ENOMEM;
                r = daemon_config_load(conf, &dc);
                if (r < 0)
                        return r;
                if (dc.error)
                        log_warning("%s, ignoring.", dc.error);
                name = strdup(dc.profile ? dc.profile : LATNICE_DEFAULT_PROFILE);
                daemon_config_done(&dc);
        }
        if (!name)
                return -ENOMEM;
        r = profile_find(m->options.root, m->options.profile_dir, name, &path);
        if (r == -ENOENT || r == -EINVAL) {
                if (asprintf(&path, "%s/%s.conf", m->options.profile_dir ?: LATNICE_PROFILE_DIR, name) < 0)
                        return -ENOMEM;
        } else if (r < 0)
                return r;
        *ret_name = TAKE_PTR(name);
        *ret_path = TAKE_PTR(path);
        return 0;
}

/* Names to ids for the prefilter; *ret_unresolved: the first name NSS does not know (yet). */
static int resolve_ids(char * const *values, bool group, uint32_t **ret, size_t *ret_n, const char **ret_unresolved) {
        _cleanup_(freep) uint32_t *v = NULL;
        size_t n = 0;

        for (char * const *i = values; i && *i; i++) {
                uint64_t id;
                uint32_t *nv;

                if (safe_atou64(*i, &id) < 0 || id > UINT32_MAX) {
                        struct passwd *pw;
                        struct group *gr;

                        if (group) {
                                gr = getgrnam(*i);
                                if (!gr) {
                                        if (!*ret_unresolved)
                                                *ret_unresolved = *i;
                                        continue;
                                }
                                id = gr->gr_gid;
                        } else {
                                pw = getpwnam(*i);
                                if (!pw) {
                                        if (!*ret_unresolved)
                                                *ret_unresolved = *i;
                                        continue;
                                }
                                id = pw->pw_uid;
                        }
                }
                nv = reallocarray(v, n + 1, sizeof(uint32_t));
                if (!nv)
                        return -ENOMEM;
                v = nv;
                v[n++] = (uint32_t) id;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

static int manager_on_name_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        name_cache_flush(m);
        (void) manager_update_filter(m);
        return 0;
}

static void manager_arm_name_retry(Manager *m, bool on) {
        int r;

        if (!on) {
                if (m->name_retry_timer)
                        (void) sd_event_source_set_enabled(m->name_retry_timer, SD_EVENT_OFF);
                return;
        }
        if (!m->name_retry_timer) {
                r = sd_event_add_time_relative(m->event, &m->name_retry_timer, CLOCK_MONOTONIC, 30 * 1000 * 1000,
                                               1000 * 1000, manager_on_name_retry, m);
                if (r < 0)
                        return (void) log_warning_errno(r, "Failed to arm the name lookup retry: %m");
                (void) sd_event_source_set_description(m->name_retry_timer, "name-retry");
        } else if (sd_event_source_get_enabled(m->name_retry_timer, NULL) > 0)
                return;
        else
                (void) sd_event_source_set_time_relative(m->name_retry_timer, 30 * 1000 * 1000);
        (void) sd_event_source_set_enabled(m->name_retry_timer, SD_EVENT_ONESHOT);
}

int manager_update_filter(Manager *m) {
        _cleanup_(freep) uint32_t *uids = NULL, *gids = NULL;
        struct timespec t0, t1;
        _cleanup_(freep) uint64_t *cgroup_ids = NULL;
        size_t n_uids = 0, n_gids = 0, n_cgroup_ids = 0;
        FilterSpec f = {};
        int r;

        r = filter_spec_build(m->rules, FILTER_NAMES_MAX, &f);
        if (r < 0)
                return log_oom();
        /* Units are known by cgroup id once systemd told us about them; until then let everything through. */
        r = manager_units_filter_ids(m, &cgroup_ids, &n_cgroup_ids);
        if (r < 0 && !f.pass_all && f.units) {
                f.pass_all = true;
                free(f.pass_all_reason);
                f.pass_all_reason = strdup("rules match on Unit= only, and systemd has not told us the units yet");
        }
        filter_spec_done(&m->filter);
        m->filter = f;

        m->needs_cgroup = m->needs_names = m->needs_parent = m->needs_exe = false;
        for (size_t i = 0; i < m->rules->n_rules; i++) {
                const Rule *rule = &m->rules->rules[i];

                if (rule_match(rule, MATCH_EXE))
                        m->needs_exe = true;

                if (rule_match(rule, MATCH_CGROUP) || rule_match(rule, MATCH_UNIT) || rule->kind == RULE_UNIT)
                        m->needs_cgroup = true;
                if (rule_match(rule, MATCH_PARENT))
                        m->needs_parent = true;
                for (MatchKey k = MATCH_USER; k <= MATCH_GROUP; k++)
                        for (char **v = rule_match(rule, k); v && *v; v++) {
                                uint64_t id;

                                if (safe_atou64(*v, &id) < 0)
                                        m->needs_names = true;
                        }
        }

        if (!m->bpf) {
                free(m->prefilter);
                m->prefilter = strdup("none: the event source has no in-kernel filter");
                return 0;
        }
        {
                const char *unresolved = NULL;

                r = resolve_ids(m->filter.users, false, &uids, &n_uids, &unresolved);
                if (r >= 0)
                        r = resolve_ids(m->filter.groups, true, &gids, &n_gids, &unresolved);
                if (r < 0)
                        return log_oom();
                /*
                 * A name NSS does not know yet (a user added later, LDAP not up at boot) may match a
                 * process any moment: the filter stays open until it resolves, and we ask again when
                 * passwd/group change and every half minute.
                 */
                if (unresolved && !m->filter.pass_all) {
                        m->filter.pass_all = true;
                        free(m->filter.pass_all_reason);
                        if (asprintf(&m->filter.pass_all_reason, "the user or group '%s' does not resolve (yet)",
                                     unresolved) < 0)
                                m->filter.pass_all_reason = NULL;
                }
                manager_arm_name_retry(m, unresolved != NULL);
        }
        clock_gettime(CLOCK_MONOTONIC, &t0);
        r = exec_bpf_set_filter(m->bpf, &m->filter, uids, n_uids, gids, n_gids, cgroup_ids, n_cgroup_ids);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        m->prefilter_memory = exec_bpf_filter_memory(m->bpf);
        free(m->prefilter);
        m->prefilter = NULL;
        if (r < 0) {
                log_warning_errno(r, "Failed to load the in-kernel prefilter, every exec wakes the daemon: %m");
                if (asprintf(&m->prefilter, "off: the maps could not be loaded: %s", strerror(-r)) < 0)
                        m->prefilter = NULL;
        } else if (m->filter.pass_all) {
                log_notice("Prefilter off: %s. Every exec wakes the daemon.", m->filter.pass_all_reason);
                if (asprintf(&m->prefilter, "off: %s", m->filter.pass_all_reason ?: "?") < 0)
                        m->prefilter = NULL;
        } else {
                size_t ce, cp, ee, ep, pe, pp;

                filter_names_count(m->filter.comm, m->filter.n_comm, &ce, &cp);
                filter_names_count(m->filter.exe, m->filter.n_exe, &ee, &ep);
                filter_names_count(m->filter.parent, m->filter.n_parent, &pe, &pp);
                if (asprintf(&m->prefilter,
                             "on: %zu command names (%zu prefixes), %zu binary names (%zu prefixes), %zu parent names "
                             "(%zu prefixes), %zu users, %zu groups, %zu cgroups",
                             ce, cp, ee, ep, pe, pp, n_uids, n_gids, n_cgroup_ids) < 0)
                        m->prefilter = NULL;
                log_info("Prefilter %s; %" PRIu64 " kB of kernel memory (%" PRIu64 " kB with the ring buffer and "
                         "the other maps), loaded in %" PRIu64 " us.",
                         m->prefilter ?: "on", m->prefilter_memory / 1024, exec_bpf_memory(m->bpf) / 1024,
                         (uint64_t) ((t1.tv_sec - t0.tv_sec) * 1000000LL + (t1.tv_nsec - t0.tv_nsec) / 1000));
        }
        /* In the kernel now (and compared there by digest): the lists need not stay in memory. */
        free(m->filter.comm);
        free(m->filter.exe);
        free(m->filter.parent);
        m->filter.comm = m->filter.exe = m->filter.parent = NULL;
        m->filter.n_comm = m->filter.n_exe = m->filter.n_parent = 0;
        return 0;
}

int manager_reload(Manager *m, bool startup) {
        _cleanup_(match_index_freep) MatchIndex *index = NULL;
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        _cleanup_(freep) char *name = NULL, *path = NULL;
        size_t active = 0;
        int r;

        struct timespec t0, t1, c0, c1;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        r = manager_resolve_profile(m, &name, &path);
        if (r < 0)
                return log_error_errno(r, "Failed to resolve the profile: %m");
        r = rule_set_load(m->options.root, name, path, &s);
        if (r < 0)
                return log_error_errno(r, "Failed to load rules: %m");

        if (!startup && !rule_errors_subset(s, m->rules)) {
                log_rule_errors(s, LOG_ERR);
                log_error("Reload failed: the new rules have errors (above); keeping the %zu rules that were running.",
                          m->rules ? m->rules->n_rules : 0);
                return -EINVAL;
        }
        log_rule_errors(s, LOG_WARNING);
        for (size_t i = 0; i < s->n_files; i++)
                if (s->files[i].state == CONF_FILE_ACTIVE)
                        active++;
        if (s->n_rules == 0)
                log_notice("No rules loaded (no files in %s, %s, %s%s): running with zero rules.",
                           rule_dirs[0], rule_dirs[1], rule_dirs[2], name ? " and the profile" : "");
        else
                log_info("Loaded %zu rules from %zu files (profile %s), %zu errors.", s->n_rules, active,
                         name ?: "none", s->n_errors);

        r = match_index_new(s, &index);
        if (r < 0)
                return log_error_errno(r, "Failed to index the rules: %m");
        {
                MatchIndexStats st;

                match_index_stats(index, &st);
                log_debug("Rule index: %zu process rules by name, %zu tried for every process, %zu names, %zu kB.",
                          st.indexed, st.unindexed, st.entries, st.bytes / 1024);
        }

        match_index_free(m->index);
        m->index = TAKE_PTR(index);
        rule_set_free(m->rules);
        m->rules = TAKE_PTR(s);
        free(m->profile);
        m->profile = TAKE_PTR(name);
        free(m->profile_path);
        m->profile_path = TAKE_PTR(path);
        (void) manager_update_filter(m);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        /* How long parsing, indexing and the prefilter took: big rule sets should not stall the loop. */
        log_info("Rules in place after %" PRIu64 " us, %" PRIu64 " us of CPU (parse, index, prefilter).",
                 (uint64_t) ((t1.tv_sec - t0.tv_sec) * 1000000LL + (t1.tv_nsec - t0.tv_nsec) / 1000),
                 (uint64_t) ((c1.tv_sec - c0.tv_sec) * 1000000LL + (c1.tv_nsec - c0.tv_nsec) / 1000));
        /* The profile, and whether user names matter, may be other ones now. */
        (void) manager_refresh_watches(m);
        if (!startup) {
                /* The old set and the prefilter's lists are gone: give their memory back, as at start-up. */
                (void) malloc_trim(0);
                m->reloads++;
                manager_units_rules_changed(m);
                (void) manager_rescan(m, "rules reloaded");
                manager_bus_emit_reloaded(m);
        }
        manager_notify_status(m);
        return 0;
}

int manager_set_profile(Manager *m, const char *name) {
        _cleanup_(freep) char *path = NULL, *old = NULL;
        bool old_no_profile;
        int r;

        if (!profile_name_valid(name))
                return -EINVAL;
        r = profile_find(m->options.root, m->options.profile_dir, name, &path);
        if (r < 0)
                return r;
        old = m->options.profile;
        m->options.profile = strdup(name);
        if (!m->options.profile) {
                m->options.profile = TAKE_PTR(old);
                return -ENOMEM;
        }
        old_no_profile = m->options.no_profile;
        m->options.no_profile = false;
        r = manager_reload(m, false);
        if (r < 0) {
                free(m->options.profile);
                m->options.profile = TAKE_PTR(old);
                m->options.no_profile = old_no_profile;
                return r;
        }
        log_info("Switched to profile %s.", name);
        return 0;
}

static int manager_on_reload_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        log_info("Rule files changed, reloading.");
        (void) manager_reload(m, false);
        return 0;
}

/*
 * What to follow: the rule directories, latniced.conf, the active profile,
 * and passwd/group while rules name users or groups (dir-watch.c).
 */
static int manager_refresh_watches(Manager *m) {
        _cleanup_(freep) char *d0 = NULL, *d1 = NULL, *d2 = NULL, *conf = NULL, *profile = NULL;
        DirWatchTarget t[8];
        size_t n = 0;
        char *slash;
        int r;

        if (!m->dir_watch)
                return 0;
        d0 = path_join(m->options.root, rule_dirs[0]);
        d1 = path_join(m->options.root, rule_dirs[1]);
        d2 = path_join(m->options.root, rule_dirs[2]);
        conf = path_join(m->options.root, LATNICE_DAEMON_CONF);
        profile = m->profile_path ? strdup(m->profile_path) : NULL;
        if (!d0 || !d1 || !d2 || !conf || (m->profile_path && !profile))
                return log_oom();
        t[n++] = (DirWatchTarget) { .dir = d0, .kind = DIR_WATCH_RULES };
        t[n++] = (DirWatchTarget) { .dir = d1, .kind = DIR_WATCH_RULES };
        t[n++] = (DirWatchTarget) { .dir = d2, .kind = DIR_WATCH_RULES };
        slash = strrchr(conf, '/');
        if (slash && slash != conf) {
                *slash = 0;
                t[n++] = (DirWatchTarget) { .dir = conf, .name = slash + 1, .kind = DIR_WATCH_FILE };
        }
        slash = profile ? strrchr(profile, '/') : NULL;
        if (slash && slash != profile) {
                *slash = 0;
                t[n++] = (DirWatchTarget) { .dir = profile, .name = slash + 1, .kind = DIR_WATCH_FILE };
        }
        if (m->needs_names || m->filter.users || m->filter.groups) {
                /* NSS reads the real /etc, whatever --root says */
                t[n++] = (DirWatchTarget) { .dir = "/etc", .name = "passwd", .kind = DIR_WATCH_NSS };
                t[n++] = (DirWatchTarget) { .dir = "/etc", .name = "group", .kind = DIR_WATCH_NSS };
        }
        r = dir_watch_set(m->dir_watch, t, n);
        if (r < 0)
                log_warning_errno(r, "Cannot follow all rule directories (%m); reload with SIGHUP or 'latnicectl "
                                  "reload' after changes.");
        return 0;
}

static int manager_on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        unsigned changes = 0;
        int r;

        /* Reading is bounded and most events are for names we do not follow: stay realtime for that. */
        r = dir_watch_read(m->dir_watch, &changes);
        if (r < 0)
                log_warning_errno(r, "Failed to read inotify events: %m");
        if (changes == 0)
                return 0;
        manager_leave_realtime(m);
        if (changes & DIR_WATCH_CHANGED_LAYOUT)
                (void) manager_refresh_watches(m);
        if (changes & DIR_WATCH_CHANGED_NSS) {
                /* Users or groups changed: names may mean other ids now. */
                name_cache_flush(m);
                (void) manager_update_filter(m);
        }
        if (!(changes & DIR_WATCH_CHANGED_RULES))
                return 0;
        /* Debounce: editors and package managers write in several steps. */
        if (!m->reload_timer) {
                r = sd_event_add_time_relative(m->event, &m->reload_timer, CLOCK_MONOTONIC, 200 * 1000, 10 * 1000,
                                               manager_on_reload_timer, m);
                if (r < 0)
                        return log_warning_errno(r, "Failed to arm the reload timer: %m");
                (void) sd_event_source_set_description(m->reload_timer, "reload-debounce");
        } else
                (void) sd_event_source_set_time_relative(m->reload_timer, 200 * 1000);
        (void) sd_event_source_set_enabled(m->reload_timer, SD_EVENT_ONESHOT);
        return 0;
}

static int manager_setup_inotify(Manager *m) {
        int r;

        r = dir_watch_new(&m->dir_watch);
        if (r < 0)
                return log_warning_errno(r, "Cannot watch the rule directories, reload with SIGHUP: %m");
        r = sd_event_add_io(m->event, &m->inotify_event_source, dir_watch_fd(m->dir_watch), EPOLLIN,
                            manager_on_inotify, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch rule directories: %m");
        (void) sd_event_source_set_description(m->inotify_event_source, "rule-dirs");
        return manager_refresh_watches(m);
}

/* ---- the system bus --------------------------------------------------- */

static int manager_connect_bus(Manager *m);

static int manager_on_bus_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        (void) manager_connect_bus(m);
        return 0;
}

/* Reconnects with a backoff: 1 s, doubling up to 30 s. */
static void manager_schedule_bus_retry(Manager *m) {
        int r;

        m->bus_retry_usec = m->bus_retry_usec ? m->bus_retry_usec * 2 : 1000 * 1000;
        if (m->bus_retry_usec > 30 * 1000 * 1000)
                m->bus_retry_usec = 30 * 1000 * 1000;
        if (!m->bus_retry_timer) {
                r = sd_event_add_time_relative(m->event, &m->bus_retry_timer, CLOCK_MONOTONIC, m->bus_retry_usec,
                                               100 * 1000, manager_on_bus_retry, m);
                if (r < 0) {
                        log_warning_errno(r, "Failed to schedule a bus reconnection: %m");
                        return;
                }
                (void) sd_event_source_set_description(m->bus_retry_timer, "bus-reconnect");
        } else
                (void) sd_event_source_set_time_relative(m->bus_retry_timer, m->bus_retry_usec);
        (void) sd_event_source_set_enabled(m->bus_retry_timer, SD_EVENT_ONESHOT);
}

static void manager_drop_bus(Manager *m) {
        manager_units_on_disconnected(m);
        manager_bus_on_disconnected(m);
        /* Freeing the source that is being dispatched is fine: sd-event keeps it until the callback returns. */
        m->bus_io_source = sd_event_source_disable_unref(m->bus_io_source);
        m->bus_time_source = sd_event_source_disable_unref(m->bus_time_source);
        m->bus = sd_bus_flush_close_unref(m->bus);
}

static int manager_on_bus_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        log_warning("Disconnected from the system bus; reconnecting. Process rules keep working meanwhile.");
        manager_drop_bus(m);
        m->bus_retry_usec = 0;
        manager_schedule_bus_retry(m);
        return 0;
}

/*
 * The bus joins the loop through sources of our own rather than
 * sd_bus_attach_event(), only so that every message (parsing included) is
 * handled as a normal task and never at SCHED_FIFO (see the top of the
 * scheduling section). They do what sd-bus's own do: one sd_bus_process()
 * per dispatch, the fd's events and the next timeout updated before the
 * loop sleeps (sd_bus_get_timeout() says "now" while messages are queued).
 */
static void manager_bus_process(Manager *m) {
        int r;

        manager_leave_realtime(m);
        r = sd_bus_process(m->bus, NULL);
        if (r < 0 && m->bus) {
                log_warning_errno(r, "Processing the system bus failed (%m); reconnecting.");
                manager_drop_bus(m);
                m->bus_retry_usec = 0;
                manager_schedule_bus_retry(m);
        }
}

static int manager_on_bus_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        manager_bus_process(userdata);
        return 0;
}

static int manager_on_bus_time(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_bus_process(userdata);
        return 0;
}

static int manager_on_bus_prepare(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        uint64_t until;
        int e, r;

        if (!m->bus)
                return 0;
        e = sd_bus_get_events(m->bus);
        if (e >= 0)
                r = sd_event_source_set_io_events(m->bus_io_source, (uint32_t) e);
        else
                r = e;
        if (r >= 0)
                r = sd_bus_get_timeout(m->bus, &until);
        if (r > 0)
                r = sd_event_source_set_time(m->bus_time_source, until);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->bus_time_source, r > 0 ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
        if (r < 0)
                /* The connection is gone: its Disconnected message comes with the next process call. */
                (void) sd_event_source_set_enabled(m->bus_time_source, SD_EVENT_ONESHOT);
        return 0;
}

static int manager_attach_bus(Manager *m, sd_bus *bus) {
        int fd, r;

        fd = sd_bus_get_fd(bus);
        if (fd < 0)
                return fd;
        r = sd_event_add_io(m->event, &m->bus_io_source, fd, 0, manager_on_bus_io, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->bus_io_source, "system-bus");
        r = sd_event_source_set_prepare(m->bus_io_source, manager_on_bus_prepare);
        if (r < 0)
                return r;
        r = sd_event_add_time(m->event, &m->bus_time_source, CLOCK_MONOTONIC, 0, 0, manager_on_bus_time, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->bus_time_source, "system-bus-timeout");
        return sd_event_source_set_enabled(m->bus_time_source, SD_EVENT_OFF);
}

static int manager_connect_bus(Manager *m) {
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = manager_attach_bus(m, bus);
        if (r >= 0)
                r = sd_bus_match_signal_async(bus, NULL, "org.freedesktop.DBus.Local", NULL,
                                              "org.freedesktop.DBus.Local", "Disconnected",
                                              manager_on_bus_disconnected, NULL, m);
        if (r < 0) {
                m->bus_io_source = sd_event_source_disable_unref(m->bus_io_source);
                m->bus_time_source = sd_event_source_disable_unref(m->bus_time_source);
                if (m->bus_retry_usec == 0)
                        log_warning_errno(r, "Cannot connect to the system bus (%m): no D-Bus API and no unit "
                                          "rules until it is there; process rules work. Retrying.");
                manager_schedule_bus_retry(m);
                return r;
        }
        m->bus = TAKE_PTR(bus);
        m->bus_retry_usec = 0;
        r = manager_bus_on_connected(m);
        if (r < 0)
                log_warning_errno(r, "Failed to publish org.latnice1: %m");
        r = manager_units_on_connected(m);
        if (r < 0)
                log_warning_errno(r, "Failed to watch systemd units: %m");
        return 0;
}

/* ---- lifecycle -------------------------------------------------------- */

static int manager_on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        if (si->ssi_signo == SIGHUP) {
                log_info("SIGHUP: reloading.");
                /* Before start-up ended, READY=1 is still to come from manager_notify_ready(). */
                if (m->ready)
                        (void) sd_notify(false, "RELOADING=1");
                (void) manager_reload(m, false);
                if (m->ready)
                        (void) sd_notify(false, "READY=1");
                return 0;
        }
        log_info("Received %s, exiting.", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(m->event, 0);
}

int manager_new(const ManagerOptions *o, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        long tck;
        int r;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        m->proc_fd = m->cgroup2_fd = m->netlink_fd = -1;
        m->options = *o;
        m->options.root = m->options.profile = m->options.profile_dir = m->options.state_dir = NULL;
        if (strdup_opt(o->root, &m->options.root) < 0 || strdup_opt(o->profile, &m->options.profile) < 0 ||
            strdup_opt(o->profile_dir, &m->options.profile_dir) < 0 ||
            strdup_opt(o->state_dir, &m->options.state_dir) < 0)
                return -ENOMEM;
        if (m->options.scan_interval_usec == 0)
                m->options.scan_interval_usec = 1000 * 1000;
        m->prune_at = 256;

        tck = sysconf(_SC_CLK_TCK);
        m->ns_per_tick = tck > 0 ? 1000000000ULL / (uint64_t) tck : 10000000ULL;

        m->applied = applied_table_new();
        m->latency_ring = calloc(LATENCY_RING, sizeof(uint32_t));
        if (!m->applied || !m->latency_ring)
                return -ENOMEM;
        m->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (m->proc_fd < 0)
                return -errno;

        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return r;
        for (int sig = 0, sigs[] = { SIGTERM, SIGINT, SIGHUP }; sig < 3; sig++) {
                r = sd_event_add_signal(m->event, NULL, sigs[sig], manager_on_signal, m);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

/* A record of an earlier run: adopted if its process still runs with the value we wrote. */
static bool manager_adopt(const StateRecord *rec, uint32_t slot, void *userdata) {
        Manager *m = userdata;
        AppliedProcess n = {
                .pid = rec->pid,
                .start_time = rec->start_time,
                .uid = rec->uid,
                .latency_nice = rec->latency_nice,
                .raw = rec->raw,
                .before = rec->before,
                .before_raw = rec->before_raw,
                .via_unit = rec->flags & STATE_F_VIA_UNIT,
                .inherit = rec->flags & STATE_F_INHERIT,
                .manual = rec->flags & STATE_F_MANUAL,
                .manual_uid = rec->manual_uid,
                .exe_ino = rec->exe_ino,
                .exe_dev = rec->exe_dev,
                .state_slot = slot,
        };

        memcpy(n.comm, rec->comm, sizeof(n.comm));
        n.comm[sizeof(n.comm) - 1] = 0;
        if (rec->latency_nice < LATNICE_MIN || rec->latency_nice > LATNICE_MAX ||
            applied_is_ours(&m->probe, m->proc_fd, &n) <= 0)
                return false;
        if (n.manual) {
                if (asprintf(&n.rule, "SetLatencyNice by uid %u", (unsigned) n.manual_uid) < 0)
                        n.rule = NULL;
                n.rule_name = strdup("manual");
        } else {
                /* The start-up scan finds the rule again (or restores the value). */
                n.rule = strdup("(set before latniced restarted)");
                n.rule_name = strdup("");
        }
        if (!n.rule || !n.rule_name || applied_table_put(m->applied, &n) < 0) {
                free(n.rule);
                free(n.rule_name);
                return false;
        }
        return true;
}

static void manager_open_state(Manager *m) {
        _cleanup_(freep) char *boot_id = NULL;
        StateKey key = { .backend = m->probe.backend, .base_slice_ns = m->probe.base_slice_ns };
        int r;

        if (m->options.dry_run || m->probe.backend == BACKEND_NONE)
                return;
        if (read_full_file(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 64, &boot_id, NULL) >= 0)
                snprintf(key.boot_id, sizeof(key.boot_id), "%.36s", boot_id);
        r = state_file_open(m->options.state_dir ?: LATNICE_STATE_DIR, &key, manager_adopt, m, &m->state);
        if (r < 0) {
                log_warning_errno(r, "Cannot keep what latniced sets in %s (%m): after a crash, values set "
                                  "before it are left as they are.", m->options.state_dir ?: LATNICE_STATE_DIR);
                return;
        }
        if (applied_table_size(m->applied) > 0)
                log_notice("Took over %zu processes whose values an earlier latniced set.",
                           applied_table_size(m->applied));
}

int manager_start(Manager *m) {
        int r;

        sched_probe("/sys/kernel/btf/vmlinux", &m->probe);
        log_info("Scheduler backend %s: %s", backend_to_string(m->probe.backend), m->probe.reason);
        if (m->probe.backend == BACKEND_NONE)
                log_warning("This kernel has neither latency nice nor custom slices: latniced will report what "
                            "it would apply, and apply nothing.");

        manager_setup_realtime(m);

        r = find_cgroup2(m);
        if (r < 0)
                log_debug_errno(r, "No cgroup2 mount found, cgroup ids resolve through /proc: %m");

        manager_open_state(m);

        r = manager_reload(m, true);
        if (r < 0)
                return r;

        r = manager_setup_source(m);
        if (r < 0)
                return r;
        log_info("Event source %s: %s", source_kind_to_string(m->source), m->source_reason);
        (void) manager_update_filter(m);

        /* After the source is live, so that nothing starting meanwhile is missed. */
        r = manager_scan_now(m, true);
        if (r < 0)
                return r;
        (void) manager_setup_inotify(m);

        if (!m->options.no_bus)
                (void) manager_connect_bus(m);
        else
                for (size_t i = 0; i < m->rules->n_rules; i++)
                        if (m->rules->rules[i].kind == RULE_UNIT) {
                                log_notice("--no-bus: [Unit] rules are inactive (they need systemd on the bus).");
                                break;
                        }

        /* Start-up parsed kernel BTF and /proc: give that memory back. */
        (void) malloc_trim(0);

        /* With a bus, READY waits for org.latnice1 (manager_bus_on_name calls manager_notify_ready()). */
        if (!m->bus)
                manager_notify_ready(m);
        return 0;
}

void manager_notify_ready(Manager *m) {
        if (m->ready)
                return;
        m->ready = true;
        (void) sd_notify(false, "READY=1");
        manager_notify_status(m);
        log_info("Ready: %zu processes applied at start.", applied_table_size(m->applied));
}

static int compare_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

        return x < y ? -1 : x > y;
}

/* exec -> applied percentiles, measured with the kernel's own exec timestamp. */
static void manager_log_latency(Manager *m) {
        size_t n = m->latency_n < LATENCY_RING ? m->latency_n : LATENCY_RING;

        if (n == 0)
                return;
        qsort(m->latency_ring, n, sizeof(uint32_t), compare_u32);
        log_notice("exec->applied over the last %zu matched execs: p50 %u us, p90 %u us, p99 %u us, max %u us.", n,
                 m->latency_ring[n / 2] / 1000, m->latency_ring[n * 9 / 10] / 1000,
                 m->latency_ring[n * 99 / 100] / 1000, m->latency_ring[n - 1] / 1000);
}

int manager_run(Manager *m) {
        int r;

        r = sd_event_loop(m->event);
        manager_leave_realtime(m);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        manager_log_latency(m);

        if (m->options.keep_on_exit) {
                /* The state file stays: the next latniced takes them over. */
                log_info("Keeping the values of %zu processes (--keep-on-exit).", applied_table_size(m->applied));
                m->state = state_file_close(m->state, true);
                return 0;
        }
        {
                _cleanup_(freep) pid_t *done = calloc(applied_table_size(m->applied) + 1, sizeof(pid_t));
                size_t i = 0, n = 0, n_done = 0;
                AppliedProcess *e;

                while ((e = applied_table_next(m->applied, &i))) {
                        if (e->manual)
                                continue; /* somebody's explicit choice: it stays, and so does its record */
                        if (applied_restore(&m->probe, m->proc_fd, e) > 0)
                                n++;
                        if (done)
                                done[n_done++] = e->pid;
                }
                for (size_t k = 0; k < n_done; k++)
                        manager_forget_full(m, done[k], false);
                log_notice("Restored the previous values of %zu processes.", n);
        }
        m->state = state_file_close(m->state, state_file_size(m->state) > 0);
        return 0;
}
