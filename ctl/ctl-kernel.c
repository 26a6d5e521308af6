/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel directly, without latniced: run (like nice/chrt: set our own
 * value, then exec), and get and set when latniced is not there (the
 * per-thread view; every thread of running processes). Each probes the
 * backend itself and says clearly what it did, also when it did only part.
 */

#include <fcntl.h>
#include <sys/stat.h>

#include "ctl-bus.h"
#include "ctl-output.h"
#include "ctl-table.h"
#include "ctl.h"
#include "proc.h"
#include "sched.h"
#include "util.h"

#define BTF_PATH "/sys/kernel/btf/vmlinux"

/* Why sched_setattr() said EPERM, in words an administrator can act on. */
static const char *permission_hint(const SchedProbe *p, int proc_fd, pid_t pid) {
        struct stat st;
        char path[16];

        snprintf(path, sizeof(path), "%d", (int) pid);
        if (proc_fd >= 0 && fstatat(proc_fd, path, &st, 0) >= 0 && st.st_uid != geteuid())
                return "the process belongs to another user; changing it needs CAP_SYS_NICE";
        /* The series treats latency nice like nice: raising is free, lowering
         * (below 0, or below the current value) is privileged. */
        if (p->backend == BACKEND_LATENCY_NICE && geteuid() != 0)
                return "lowering latency nice needs CAP_SYS_NICE";
        return "not permitted (CAP_SYS_NICE or a security policy may be missing)";
}

static int probe_or_fail(SchedProbe *p) {
        sched_probe(BTF_PATH, p);
        if (p->backend == BACKEND_NONE) {
                fprintf(stderr, "Failed to find a way to apply latency nice on this kernel: %s\n", p->reason);
                return -EOPNOTSUPP;
        }
        return 0;
}

/*
 * Sets latency nice ln on ourselves through latniced when it is on the bus,
 * so that the value counts as explicit and a rule matching the command does
 * not replace it after the exec. 1 done; 0 latniced is not there; < 0 it
 * refused or failed (*ret_why says why, free it).
 */
static int ctl_run_through_daemon(int ln, char **ret_why) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        uint32_t applied = 0, threads = 0;
        int r;

        *ret_why = NULL;
        if (ctl_bus_connect(&bus, NULL) < 0)
                return 0;
        /*
         * Set through latniced, which records it as an explicit value: its
         * rules leave it alone at the exec. Without a polkit prompt: where
         * latniced would ask for a password, we set the value ourselves.
         */
        (void) sd_bus_set_allow_interactive_authorization(bus, false);
        r = ctl_bus_call_for_pid(bus, "SetLatencyNice", getpid(), &(int32_t) { ln }, &error, &reply);
        if (r < 0) {
                const char *why_not = sd_bus_error_is_set(&error) ? error.message ?: error.name : strerror(-r);

                if (asprintf(ret_why, "%s", why_not) < 0)
                        *ret_why = NULL;
                return r;
        }
        r = sd_bus_message_read(reply, "uu", &applied, &threads);
        if (r < 0 || applied == 0) {
                if (asprintf(ret_why, "%s", r < 0 ? "bad reply" : "it applied it to no thread") < 0)
                        *ret_why = NULL;
                return r < 0 ? r : -EBUSY;
        }
        return 1;
}

int verb_run(Ctl *ctl) {
        _cleanup_(freep) char *why = NULL;
        char **command = ctl->args;
        int ln = ctl->latency_nice, r, daemon;
        SchedProbe p;

        r = probe_or_fail(&p);
        if (r < 0)
                return CTL_EXIT_UNSUPPORTED;

        /*
         * An explicit value wins over rules: when latniced runs, it sets the
         * value and records it as explicit, else a rule matching COMMAND
         * would replace it right after the exec. Without latniced (or if it
         * refuses) we set it ourselves.
         */
        daemon = ctl_run_through_daemon(ln, &why);
        if (daemon > 0)
                goto exec;

        /* The probe's scratch thread is joined: we are single-threaded, so
         * setting our thread is setting the process that will exec. */
        r = sched_thread_set(&p, gettid(), ln, NULL);
        if (r == -EBUSY) {
                fprintf(stderr, "Failed to set latency nice %d: latnicectl itself runs with a realtime or idle "
                                "policy and latency nice applies to SCHED_OTHER/SCHED_BATCH tasks; not running %s.\n",
                        ln, command[0]);
                return CTL_EXIT_FAILURE;
        }
        if (r == -EPERM || r == -EACCES) {
                fprintf(stderr, "Failed to set latency nice %d: %s; not running %s.\n", ln,
                        permission_hint(&p, -1, getpid()), command[0]);
                return CTL_EXIT_PERMISSION;
        }
        if (r < 0) {
                fprintf(stderr, "Failed to set latency nice %d: %s; not running %s.\n", ln, strerror(-r),
                        command[0]);
                return ctl_exit_from_errno(r);
        }

        if (daemon < 0)
                fprintf(stderr, "Failed to have latniced take latency nice %d as explicit: %s; a rule matching %s "
                        "may replace it, ignoring.\n", ln, why ?: "failed", command[0]);
exec:
        execvp(command[0], command);
        r = errno;
        fprintf(stderr, "Failed to execute %s: %s\n", command[0], strerror(r));
        return r == ENOENT ? 127 : 126;
}

/* A thread as the kernel sees it; for people, a range where a slice means more than one value. */
static const TableColumn kernel_thread_columns[] = {
        { "TID", "tid", TABLE_INT, 8 },
        { "COMM", NULL, TABLE_STRING, -15 },
        { NULL, "comm", TABLE_STRING },
        { "POLICY", NULL, TABLE_STRING, -8 },
        { NULL, "policy", TABLE_STRING },
        { "NICE", "nice", TABLE_INT, 4 },
        { "LATNICE", NULL, TABLE_STRING, -8 },
        { NULL, "latency_nice", TABLE_INT },
        { "SLICE", NULL, TABLE_STRING },
        { NULL, "slice_ns", TABLE_UINT },
        { NULL, "realtime", TABLE_BOOL },
};

static void add_thread(Table *t, const SchedProbe *p, int proc_fd, pid_t pid, pid_t tid) {
        char lnbuf[16] = "-", slice[32] = "-", policy[24], comm[sizeof(((ProcStat *) NULL)->comm)];
        ProcStat st = {};
        ThreadSched ts;
        int r;

        r = sched_thread_get(p, tid, &ts);
        if (r < 0)
                return; /* exited while we listed */
        (void) proc_stat_read_pid(proc_fd, pid, tid, &st);
        strcpy(comm, st.comm);
        comm_printable(comm);

        switch (p->backend) {
        case BACKEND_EEVDF_SLICE:
                if (!ts.realtime) {
                        uint64_t raw = sched_thread_raw(p, &ts);
                        int lo, hi;

                        latnice_range_from_slice_ns(raw, p->base_slice_ns, &lo, &hi);
                        if (lo == hi)
                                snprintf(lnbuf, sizeof(lnbuf), "%d", lo);
                        else
                                snprintf(lnbuf, sizeof(lnbuf), "%d..%d", lo, hi);
                        format_ms(ts.attr.sched_runtime, slice, sizeof(slice));
                        if (raw == 0)
                                strcat(slice, " (default)");
                }
                break;
        case BACKEND_LATENCY_NICE:
                if (!ts.realtime)
                        snprintf(lnbuf, sizeof(lnbuf), "%d", ts.latency_nice);
                break;
        default:
                break;
        }
        if (ts.attr.sched_priority > 0)
                snprintf(policy, sizeof(policy), "%s:%u", sched_policy_to_string(ts.attr.sched_policy),
                         ts.attr.sched_priority);
        else
                snprintf(policy, sizeof(policy), "%s", sched_policy_to_string(ts.attr.sched_policy));
        table_add_int(t, tid);
        table_add_string(t, comm[0] ? comm : "?");
        table_add_string(t, st.comm);
        table_add_string(t, policy);
        table_add_string(t, sched_policy_to_string(ts.attr.sched_policy));
        table_add_int(t, ts.attr.sched_nice);
        table_add_string(t, lnbuf);
        table_add_int(t, ts.latency_nice);
        table_add_string(t, slice);
        table_add_uint(t, p->backend == BACKEND_EEVDF_SLICE ? ts.attr.sched_runtime : 0);
        table_add_bool(t, ts.realtime);
}

/* A process as the kernel sees it: only latniced knows who set the value. */
static const TableColumn kernel_get_columns[] = {
        CTL_GET_COLUMNS,
        { NULL, "backend", TABLE_STRING },
        { NULL, "start_time", TABLE_UINT },
        { NULL, "threads", TABLE_JSON },
};

Table *ctl_kernel_get_table(const Ctl *ctl) {
        Table *t = table_new(kernel_get_columns, ELEMENTSOF(kernel_get_columns), ctl->json);

        if (t)
                table_set_header(t, false);
        return t;
}

int ctl_kernel_get(const KernelView *v, Table *t, pid_t pid) {
        _cleanup_(table_freep) Table *threads = NULL;
        _cleanup_(freep) pid_t *tids = NULL;
        ThreadSched main_thread = {};
        char comm[sizeof(((ProcStat *) NULL)->comm)];
        json_object *j = NULL;
        ProcStat st;
        int n, r;

        r = proc_stat_read_pid(v->proc_fd, pid, 0, &st);
        if (r < 0) {
                fprintf(stderr, "Failed to read PID %d: %s\n", (int) pid, strerror(r == -ENOENT ? ESRCH : -r));
                return ctl_exit_from_errno(r);
        }
        (void) sched_thread_get(&v->probe, pid, &main_thread);
        strcpy(comm, st.comm);
        comm_printable(comm);
        table_add_stringf(t, "\nPID %d (%s)%s\n  ours: unknown (daemon not queried)", (int) pid, comm,
                          (st.flags & PROC_PF_KTHREAD) ? " [kernel thread]" :
                          st.state == 'Z' ? " [zombie]" : "");
        table_add_int(t, pid);
        table_add_string(t, st.comm);
        table_add_int(t, main_thread.latency_nice);
        table_add_string(t, "unknown");
        table_add_string(t, backend_to_string(v->probe.backend));
        table_add_uint(t, st.start_time);

        threads = table_new(kernel_thread_columns, ELEMENTSOF(kernel_thread_columns), table_is_json(t));
        if (!threads) {
                table_add_json(t, NULL);
                fprintf(stderr, "Out of memory.\n");
                return CTL_EXIT_FAILURE;
        }
        n = proc_list_tasks(v->proc_fd, pid, &tids);
        if (n < 0) {
                table_add_json(t, json_object_new_array()); /* gone meanwhile: no threads */
                fprintf(stderr, "Failed to list the threads of PID %d: %s\n", (int) pid,
                        n == -ESRCH ? "process exited" : strerror(-n));
                return ctl_exit_from_errno(n);
        }
        for (int k = 0; k < n; k++)
                add_thread(threads, &v->probe, v->proc_fd, pid, tids[k]);
        r = table_finish(threads, &j);
        table_add_json(t, j);
        if (r < 0) {
                fprintf(stderr, "Failed to read the threads of PID %d: %s\n", (int) pid, strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

/* Applies to one process and reports it in one line; returns an exit code. */
static int set_one(const SchedProbe *p, int proc_fd, pid_t pid, int ln) {
        ApplyResult res;
        char what[48];
        ProcStat st;
        int r;

        r = proc_stat_read_pid(proc_fd, pid, 0, &st);
        if (r < 0) {
                fprintf(stderr, "Failed to set latency nice on PID %d: %s\n", (int) pid,
                        r == -ESRCH ? "no such process" : strerror(-r));
                return ctl_exit_from_errno(r);
        }
        comm_printable(st.comm);
        if (st.flags & PROC_PF_KTHREAD) {
                fprintf(stderr, "Failed to set latency nice on PID %d (%s): a kernel thread, refused.\n", (int) pid,
                        st.comm);
                return CTL_EXIT_FAILURE;
        }
        if (st.state == 'Z' && st.num_threads <= 1) {
                fprintf(stderr, "Failed to set latency nice on PID %d (%s): a zombie (exited, not yet reaped).\n",
                        (int) pid, st.comm);
                return CTL_EXIT_NO_PROCESS;
        }

        r = sched_apply_process(p, proc_fd, pid, st.start_time, ln, THREADS_ALL, false, &res);
        if (r == -ESRCH) {
                fprintf(stderr, "Failed to set latency nice on PID %d (%s): it exited.\n", (int) pid, st.comm);
                return CTL_EXIT_NO_PROCESS;
        }
        if (r == -EPERM || r == -EACCES) {
                fprintf(stderr, "Failed to set latency nice on PID %d (%s): %s\n", (int) pid, st.comm,
                        permission_hint(p, proc_fd, pid));
                return CTL_EXIT_PERMISSION;
        }
        if (r < 0) {
                fprintf(stderr, "Failed to set latency nice on PID %d (%s): %s\n", (int) pid, st.comm, strerror(-r));
                return ctl_exit_from_errno(r);
        }

        if (p->backend == BACKEND_EEVDF_SLICE) {
                uint64_t s = sched_raw_value(p, ln);

                if (s == 0)
                        snprintf(what, sizeof(what), "default slice");
                else {
                        snprintf(what, sizeof(what), "slice ");
                        format_ms(s, what + strlen(what), sizeof(what) - strlen(what));
                }
        } else
                snprintf(what, sizeof(what), "%s", backend_to_string(p->backend));

        if (res.n_applied == 0) {
                printf("PID %d (%s): nothing applied, all %u thread%s realtime/idle, left alone.\n", (int) pid,
                       st.comm, res.n_threads, res.n_threads == 1 ? "" : "s");
                return CTL_EXIT_UNSUPPORTED;
        }
        printf("PID %d (%s): latency nice %d (%s) on %u of %u thread%s", (int) pid, st.comm, ln, what,
               res.n_applied, res.n_threads, res.n_threads == 1 ? "" : "s");
        if (res.n_realtime > 0)
                printf(", %u realtime/idle left alone", res.n_realtime);
        if (res.n_gone > 0)
                printf(", %u exited meanwhile", res.n_gone);
        printf(".\n");
        if (res.n_failed > 0) {
                fprintf(stderr, "Failed to set latency nice on %u thread%s of PID %d (%s): %s.\n",
                        res.n_failed, res.n_failed == 1 ? "" : "s", (int) pid, st.comm,
                        res.first_error == -EPERM ? permission_hint(p, proc_fd, pid) :
                                                    strerror(-res.first_error));
                return ctl_exit_from_errno(res.first_error);
        }
        return CTL_EXIT_OK;
}

int ctl_kernel_set(Ctl *ctl, const pid_t *pids, int n_pids) {
        _cleanup_(closep) int proc_fd = -1;
        int rc = CTL_EXIT_OK;
        SchedProbe p;

        if (probe_or_fail(&p) < 0)
                return CTL_EXIT_UNSUPPORTED;
        proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0) {
                fprintf(stderr, "Failed to open /proc: %m\n");
                return CTL_EXIT_FAILURE;
        }
        for (int i = 0; i < n_pids; i++) {
                int r = set_one(&p, proc_fd, pids[i], ctl->latency_nice);

                if (r != CTL_EXIT_OK && rc == CTL_EXIT_OK)
                        rc = r;
        }
        return rc;
}

int ctl_kernel_view_open(const Table *t, KernelView *ret) {
        ret->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ret->proc_fd < 0) {
                fprintf(stderr, "Failed to open /proc: %m\n");
                return -errno;
        }
        sched_probe(BTF_PATH, &ret->probe);
        if (ret->probe.backend == BACKEND_EEVDF_SLICE) {
                char base[32];

                format_ms(ret->probe.base_slice_ns, base, sizeof(base));
                table_text(t, "Backend: %s (default slice %s)\n", backend_to_string(ret->probe.backend), base);
        } else
                table_text(t, "Backend: %s (%s)\n", backend_to_string(ret->probe.backend), ret->probe.reason);
        return 0;
}

void ctl_kernel_view_done(KernelView *v) {
        closep(&v->proc_fd);
}
