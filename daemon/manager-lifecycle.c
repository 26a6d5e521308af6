/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latniced's lifecycle on one sd-event loop: setting up (backend probe,
 * state file and taking over what an earlier run set, rules, event source,
 * start-up scan, bus), signals, and at exit the latency statistics and
 * restoring what it set. It stands above the manager's parts
 * (manager-decide.c, manager-sources.c, manager-rules.c, manager-scx.c,
 * manager-stats.c, bus-link.c) and calls them; they never call it: what
 * they share is in manager.c.
 */

#include <fcntl.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>

#include "bus-link.h"
#include "log.h"
#include "manager-decide.h"
#include "manager-inherited.h"
#include "manager-lifecycle.h"
#include "manager-rules.h"
#include "manager-granted.h"
#include "manager-scheduler.h"
#include "manager-scx.h"
#include "manager-sources.h"
#include "manager-stats.h"
#include "manager-threads.h"
#include "proc.h"
#include "state.h"
#include "task-exe.h"
#include "util.h"

static void options_done(ManagerOptions *o) {
        free(o->root);
        free(o->profile);
        free(o->profile_dir);
        free(o->state_dir);
        free(o->scx_latnice);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        if (m->hooks.foreground_free)
                m->hooks.foreground_free(m);
        /* Before the bus layer goes: callers waiting for a collection hear that it was dropped. */
        manager_stats_free(m);
        bus_link_layers_down(m);
        manager_scheduler_free(m);
        manager_scx_free(m);
        manager_granted_free(m);
        if (m->hooks.units_free)
                m->hooks.units_free(m);
        manager_rules_done(m);
        sd_event_source_unref(m->prune_defer);
        sd_event_source_unref(m->trim_timer);
        manager_sources_done(m);
        proc_set_exe_fallback(NULL, NULL);
        task_exe_free(m->task_exe);
        free(m->latency_ring);
        if (m->proc_fd >= 0)
                close(m->proc_fd);
        applied_table_free(m->applied);
        /* Not closed by manager_run(): a failed start; what is in it stays for the next run. */
        state_file_close(m->state, true);
        /* Last: what the unit layer sent while freeing (CPUAccounting= given back) is flushed here. */
        bus_link_done(m);
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

int manager_new(const ManagerOptions *o, const ManagerHooks *hooks, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        long tck;
        int r;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        m->proc_fd = m->cgroup2_fd = m->netlink_fd = -1;
        m->options = *o;
        if (hooks)
                m->hooks = *hooks;
        m->options.root = m->options.profile = m->options.profile_dir = m->options.state_dir = NULL;
        m->options.scx_latnice = NULL;
        if (strdup_opt(o->root, &m->options.root) < 0 || strdup_opt(o->profile, &m->options.profile) < 0 ||
            strdup_opt(o->profile_dir, &m->options.profile_dir) < 0 ||
            strdup_opt(o->state_dir, &m->options.state_dir) < 0 ||
            strdup_opt(o->scx_latnice, &m->options.scx_latnice) < 0)
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
                .tgid = rec->flags & STATE_F_THREAD ? (pid_t) rec->tgid : 0,
                .state_slot = slot,
        };

        memcpy(n.comm, rec->comm, sizeof(n.comm));
        n.comm[sizeof(n.comm) - 1] = 0;
        if (rec->flags & STATE_F_FOREGROUND) {
                /* Focus may be elsewhere now: the focus service tells the new latniced again. */
                if (m->hooks.foreground_drop_adopted)
                        m->hooks.foreground_drop_adopted(m, &n);
                return false;
        }
        if ((rec->flags & STATE_F_THREAD) && (n.tgid <= 0 || n.tgid == n.pid))
                return false;
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
        if (n.tgid > 0)
                m->n_thread_entries++;
        return true;
}

/*
 * This boot's id, for the state file's key. sd_id128_get_boot() reads /proc/sys/kernel/random/boot_id, which
 * the shipped unit's ProcSubset=pid hides: the unit hands it in as LATNICE_BOOT_ID=%b (systemd reads it
 * outside the sandbox). Without either the check is off, and said so.
 */
static int manager_boot_id(char ret[static SD_ID128_UUID_STRING_MAX]) {
        const char *e = getenv("LATNICE_BOOT_ID");
        sd_id128_t id;
        int r;

        r = sd_id128_get_boot(&id);
        if (r < 0 && e && *e)
                r = sd_id128_from_string(e, &id);
        if (r >= 0 && sd_id128_is_null(id))
                r = -EINVAL;
        if (r < 0)
                return r;
        /* The UUID form: what the kernel's file says, and what state files of earlier versions hold. */
        sd_id128_to_uuid_string(id, ret);
        return 0;
}

static void manager_open_state(Manager *m) {
        StateKey key = { .backend = m->probe.backend, .base_slice_ns = m->probe.base_slice_ns };
        char boot_id[SD_ID128_UUID_STRING_MAX];
        int r;

        if (m->options.dry_run || m->probe.backend == BACKEND_NONE)
                return;
        r = manager_boot_id(boot_id);
        if (r >= 0)
                snprintf(key.boot_id, sizeof(key.boot_id), "%s", boot_id);
        else
                log_notice_errno(r, "Failed to learn this boot's id (/proc/sys/kernel/random/boot_id, "
                                 "$LATNICE_BOOT_ID): %m; what latniced set is taken over from the state file "
                                 "without checking that it is of this boot.");
        r = state_file_open(m->options.state_dir ?: LATNICE_STATE_DIR, &key, manager_adopt, m, &m->state);
        if (r < 0) {
                log_warning_errno(r, "Failed to keep what latniced sets in %s, ignoring (after a crash, values "
                                  "set before it are left as they are): %m",
                                  m->options.state_dir ?: LATNICE_STATE_DIR);
                return;
        }
        if (applied_table_size(m->applied) > 0)
                log_notice("Took over %zu processes whose values an earlier latniced set.",
                           applied_table_size(m->applied));
}

/*
 * /proc/PID/exe of another user's process needs CAP_SYS_PTRACE, which the shipped unit does not
 * give: the kernel says which file it executes through a BPF task iterator instead (loaded at the
 * first refusal), so that Exe= and Ancestor= paths match every user's processes, at start and
 * after a restart too.
 */
static int manager_exe_fallback(pid_t pid, uint64_t start_time, char *path, size_t size, uint64_t *ret_ino,
                                uint64_t *ret_dev, void *userdata) {
        Manager *m = userdata;
        TaskExeInfo info;
        int r;

        if (m->task_exe_error < 0)
                return m->task_exe_error;
        if (!m->task_exe) {
                r = task_exe_new(&m->task_exe);
                if (r < 0) {
                        m->task_exe_error = r;
                        return log_notice_errno(r, "Failed to tell which file other users' processes execute "
                                                "(/proc/PID/exe needs CAP_SYS_PTRACE, and the BPF task "
                                                "iterator did not load), ignoring (Exe= and Ancestor= paths do "
                                                "not match their processes that were running before latniced): %m");
                }
        }
        r = task_exe_read(m->task_exe, pid, path, size, &info);
        if (r < 0)
                return r;
        if (m->ns_per_tick > 0 && info.start_boottime / m->ns_per_tick != start_time)
                return -ESRCH; /* the pid was reused meanwhile */
        *ret_ino = info.ino;
        *ret_dev = info.dev;
        return 0;
}

/* What a wakeup may wait for on this kernel: the model and HZ, said once in the log, on the bus for status. */
static void manager_read_preempt(Manager *m) {
        char config[320], hz[24] = "unknown";
        KernelPreemptPaths paths;

        kernel_preempt_default_paths(&paths, config, sizeof(config));
        kernel_preempt_read(&paths, &m->preempt);
        if (m->preempt.hz > 0)
                snprintf(hz, sizeof(hz), "%" PRIu32, m->preempt.hz);
        if (m->preempt.model == PREEMPT_MODEL_UNKNOWN)
                log_info("Preemption model unknown (%s unreadable, no preempt= on %s, no configuration in %s or %s), "
                         "HZ %s.", paths.debugfs, paths.cmdline, paths.config_gz, paths.config ?: "/boot", hz);
        else
                log_info("Preemption model %s (from %s%s), HZ %s.", preempt_model_to_string(m->preempt.model),
                         preempt_source_to_string(m->preempt.source), m->preempt.dynamic ? ", dynamic" : "", hz);
}

int manager_start(Manager *m) {
        int r;

        proc_set_exe_fallback(manager_exe_fallback, m);

        sched_probe("/sys/kernel/btf/vmlinux", &m->probe);
        log_info("Scheduler backend %s: %s", backend_to_string(m->probe.backend), m->probe.reason);
        if (m->probe.backend == BACKEND_NONE)
                log_warning("This kernel has neither latency nice nor custom slices: latniced will report what "
                            "it would apply, and apply nothing.");
        manager_read_preempt(m);
        r = manager_scx_start(m);
        if (r < 0)
                return r;
        /* After: the first uevent of the scheduler we start is then followed. */
        (void) manager_scheduler_start(m);

        manager_setup_realtime(m);

        r = manager_find_cgroup2(m);
        if (r < 0)
                log_debug_errno(r, "Failed to find a cgroup2 mount, resolving cgroup ids through /proc: %m");

        manager_open_state(m);
        /* What an earlier latniced set and this one took over, to a scheduler already running. */
        manager_granted_refresh(m);

        r = manager_reload(m, true);
        if (r < 0)
                return r;

        r = manager_setup_source(m);
        if (r < 0)
                return r;
        log_info("Event source %s: %s", source_kind_to_string(m->source), m->source_reason);
        manager_inherited_drop_origins(m);
        (void) manager_update_filter(m);

        /* After the source is live, so that nothing starting meanwhile is missed. */
        r = manager_scan_now(m, true);
        if (r < 0)
                return r;
        (void) manager_setup_inotify(m);

        if (!m->options.no_bus)
                (void) bus_link_connect(m);
        else
                for (size_t i = 0; i < m->rules->n_rules; i++)
                        if (m->rules->rules[i].kind == RULE_UNIT) {
                                log_notice("--no-bus: [Unit] rules are inactive (they need systemd on the bus).");
                                break;
                        }

        /* Start-up parsed kernel BTF and /proc: give that memory and its pages back (READY arms it again). */
        manager_trim_soon(m);

        /* With a bus, READY waits for org.latnice1 (manager_bus_on_name calls manager_notify_ready()). */
        if (!m->bus)
                manager_notify_ready(m);
        return 0;
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
                return log_error_errno(r, "Failed to run the event loop: %m");
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
                unsigned n_threads = manager_threads_restore_unrecorded(m);

                if (n_threads > 0)
                        log_info("Restored %u threads that a named thread made with its value.", n_threads);

                /* First what their descendants inherited through fork: the table says what that was. */
                n = manager_inherited_restore_all(m);
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
                /* What the record of forks was about is restored: a next latniced starts a new one. */
                manager_inherited_unstore(m);
        }
        m->state = state_file_close(m->state, state_file_size(m->state) > 0);
        return 0;
}
