/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Verbs that act on the kernel directly, without the daemon: run (like
 * nice/chrt: set our own value, then exec), get (per-thread view) and set
 * (apply to every thread of running processes). Each probes the backend
 * itself and says clearly what it did, also when it did only part of it.
 */

#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include "ctl-bus.h"
#include "ctl.h"
#include "proc.h"
#include "sched.h"
#include "util.h"

#define BTF_PATH "/sys/kernel/btf/vmlinux"

static int parse_latnice_arg(const char *s, int *ret) {
        int v;

        if (safe_atoi(s, &v) < 0 || v < LATNICE_MIN || v > LATNICE_MAX) {
                fprintf(stderr, "Invalid latency nice '%s': must be an integer in %d..%d.\n", s, LATNICE_MIN,
                        LATNICE_MAX);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static int parse_pid_arg(const char *s, pid_t *ret) {
        if (parse_pid(s, ret) < 0) {
                fprintf(stderr, "Invalid PID '%s': must be a positive integer.\n", s);
                return -EINVAL;
        }
        return 0;
}

static int exit_code_for(int r) {
        switch (r) {
        case 0:
                return CTL_EXIT_OK;
        case -ESRCH:
        case -ENOENT:
                return CTL_EXIT_NO_PROCESS;
        case -EPERM:
        case -EACCES:
                return CTL_EXIT_PERMISSION;
        case -EOPNOTSUPP:
                return CTL_EXIT_UNSUPPORTED;
        default:
                return CTL_EXIT_FAILURE;
        }
}

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
                fprintf(stderr, "This kernel cannot apply latency nice: %s\n", p->reason);
                return -EOPNOTSUPP;
        }
        return 0;
}

static void format_slice(uint64_t ns, char *buf, size_t size) {
        snprintf(buf, size, "%llu.%03llu ms", (unsigned long long) (ns / 1000000),
                 (unsigned long long) (ns / 1000 % 1000));
}

int verb_run(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl run -l N [--] COMMAND [ARGS...]\n\n"
                "Run COMMAND with latency nice N (-20 wake me up now .. 19 I can wait),\n"
                "like nice(1) or chrt(1): latnicectl sets its own value, then executes\n"
                "COMMAND, which keeps it (and its children and threads inherit it).\n\n"
                "  -l --latency-nice=N  the value, -20..19\n"
                "  -h --help            show this help\n\n"
                "Exit status: that of COMMAND; 2 usage error, 4 not supported by this\n"
                "kernel, 5 permission denied, 1 other failure before COMMAND ran,\n"
                "126 COMMAND could not be executed, 127 COMMAND not found.\n";
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "latency-nice", required_argument, NULL, 'l' },
                {}
        };
        _cleanup_(freep) char *why = NULL;
        SchedProbe p;
        bool have_ln = false;
        int c, ln = 0, r, daemon;

        while ((c = getopt_long(argc, argv, "+hl:", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        fputs(usage, stdout);
                        return CTL_EXIT_OK;
                case 'l':
                        if (parse_latnice_arg(optarg, &ln) < 0)
                                return CTL_EXIT_USAGE;
                        have_ln = true;
                        break;
                default:
                        fputs(usage, stderr);
                        return CTL_EXIT_USAGE;
                }
        }
        if (!have_ln || optind >= argc) {
                fprintf(stderr, "%s\n%s", !have_ln ? "Missing -l N." : "Missing COMMAND.", usage);
                return CTL_EXIT_USAGE;
        }

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
                fprintf(stderr, "latnicectl itself runs with a realtime or idle policy: latency nice applies to "
                                "SCHED_OTHER/SCHED_BATCH tasks. Nothing set, not running %s.\n", argv[optind]);
                return CTL_EXIT_FAILURE;
        }
        if (r == -EPERM || r == -EACCES) {
                fprintf(stderr, "Cannot set latency nice %d: %s. Not running %s.\n", ln,
                        permission_hint(&p, -1, getpid()), argv[optind]);
                return CTL_EXIT_PERMISSION;
        }
        if (r < 0) {
                fprintf(stderr, "Cannot set latency nice %d: %s. Not running %s.\n", ln, strerror(-r),
                        argv[optind]);
                return exit_code_for(r);
        }

        if (daemon < 0)
                fprintf(stderr, "latniced did not take latency nice %d as explicit (%s): a rule matching %s may "
                        "replace it.\n", ln, why ?: "failed", argv[optind]);
exec:
        execvp(argv[optind], argv + optind);
        r = errno;
        fprintf(stderr, "Failed to execute %s: %s\n", argv[optind], strerror(r));
        return r == ENOENT ? 127 : 126;
}

/* For a terminal: a process name is any bytes; controls and what is not UTF-8 become '?', as ps(1) does. */
static void comm_printable(char *s) {
        for (unsigned char *c = (unsigned char *) s; *c;) {
                size_t n = *c >= 0x80 ? utf8_char_len((const char *) c) : 1;

                if (n == 0 || *c < 0x20 || *c == 0x7f) {
                        *c++ = '?';
                        continue;
                }
                c += n;
        }
}

static void print_thread(const SchedProbe *p, int proc_fd, pid_t pid, pid_t tid) {
        char path[64], lnbuf[16] = "-", slice[32] = "-", policy[24];
        ProcStat st = {};
        ThreadSched t;
        int r;

        r = sched_thread_get(p, tid, &t);
        if (r < 0)
                return; /* exited while we listed */
        snprintf(path, sizeof(path), "%d/task/%d/stat", (int) pid, (int) tid);
        (void) proc_stat_read(proc_fd, path, &st);
        comm_printable(st.comm);

        switch (p->backend) {
        case BACKEND_EEVDF_SLICE:
                if (!t.realtime) {
                        uint64_t raw = sched_thread_raw(p, &t);
                        int lo, hi;

                        latnice_range_from_slice_ns(raw, p->base_slice_ns, &lo, &hi);
                        if (lo == hi)
                                snprintf(lnbuf, sizeof(lnbuf), "%d", lo);
                        else
                                snprintf(lnbuf, sizeof(lnbuf), "%d..%d", lo, hi);
                        format_slice(t.attr.sched_runtime, slice, sizeof(slice));
                        if (raw == 0)
                                strcat(slice, " (default)");
                }
                break;
        case BACKEND_LATENCY_NICE:
                if (!t.realtime)
                        snprintf(lnbuf, sizeof(lnbuf), "%d", t.latency_nice);
                break;
        default:
                break;
        }
        if (t.attr.sched_priority > 0)
                snprintf(policy, sizeof(policy), "%s:%u", sched_policy_to_string(t.attr.sched_policy),
                         t.attr.sched_priority);
        else
                snprintf(policy, sizeof(policy), "%s", sched_policy_to_string(t.attr.sched_policy));
        printf("%8d  %-15s  %-8s  %4d  %-8s  %s\n", (int) tid, st.comm[0] ? st.comm : "?", policy,
               (int) t.attr.sched_nice, lnbuf, slice);
}

int verb_get(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl get PID...\n\n"
                "Show the latency nice of every thread of each process: thread id,\n"
                "name, policy, nice, latency nice and, on kernels that express it as\n"
                "an EEVDF custom slice, the slice itself. A slice that several values\n"
                "map to (clamped at 0.1 or 100 ms) shows as a range.\n\n"
                "Exit status: 0 all shown, 2 usage error, 3 a process does not exist,\n"
                "1 other failure.\n";
        _cleanup_(closep) int proc_fd = -1;
        _cleanup_(freep) pid_t *pids = NULL;
        int n_pids, rc = CTL_EXIT_OK;
        SchedProbe p;

        if (ctl_want_help(argc, argv, usage))
                return CTL_EXIT_OK;
        if (argc < 2) {
                fprintf(stderr, "Missing PID.\n%s", usage);
                return CTL_EXIT_USAGE;
        }
        pids = calloc((size_t) argc, sizeof(pid_t));
        if (!pids)
                return CTL_EXIT_FAILURE;
        n_pids = 0;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        continue;
                if (parse_pid_arg(argv[i], &pids[n_pids]) < 0)
                        return CTL_EXIT_USAGE;
                n_pids++;
        }

        proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0) {
                fprintf(stderr, "Cannot open /proc: %m\n");
                return CTL_EXIT_FAILURE;
        }
        sched_probe(BTF_PATH, &p);
        if (p.backend == BACKEND_EEVDF_SLICE) {
                char base[32];

                format_slice(p.base_slice_ns, base, sizeof(base));
                printf("Backend: %s (default slice %s)\n", backend_to_string(p.backend), base);
        } else
                printf("Backend: %s (%s)\n", backend_to_string(p.backend), p.reason);

        for (int i = 0; i < n_pids; i++) {
                _cleanup_(freep) pid_t *tids = NULL;
                char path[32];
                ProcStat st;
                int n, r;

                snprintf(path, sizeof(path), "%d/stat", (int) pids[i]);
                r = proc_stat_read(proc_fd, path, &st);
                if (r < 0) {
                        fprintf(stderr, "PID %d: %s\n", (int) pids[i],
                                r == -ESRCH ? "no such process" : strerror(-r));
                        if (rc == CTL_EXIT_OK)
                                rc = exit_code_for(r);
                        continue;
                }
                comm_printable(st.comm);
                printf("\nPID %d (%s)%s\n", (int) pids[i], st.comm,
                       (st.flags & PROC_PF_KTHREAD) ? " [kernel thread]" :
                       st.state == 'Z' ? " [zombie]" : "");
                printf("  ours: unknown (daemon not queried)\n");
                n = proc_list_tasks(proc_fd, pids[i], &tids);
                if (n < 0) {
                        fprintf(stderr, "PID %d: cannot list threads: %s\n", (int) pids[i],
                                n == -ESRCH ? "process exited" : strerror(-n));
                        if (rc == CTL_EXIT_OK)
                                rc = exit_code_for(n);
                        continue;
                }
                printf("%8s  %-15s  %-8s  %4s  %-8s  %s\n", "TID", "COMM", "POLICY", "NICE", "LATNICE", "SLICE");
                for (int k = 0; k < n; k++)
                        print_thread(&p, proc_fd, pids[i], tids[k]);
        }
        return rc;
}

/* Applies to one process and reports it in one line; returns an exit code. */
static int set_one(const SchedProbe *p, int proc_fd, pid_t pid, int ln) {
        ApplyResult res;
        char path[32], what[48];
        ProcStat st;
        int r;

        snprintf(path, sizeof(path), "%d/stat", (int) pid);
        r = proc_stat_read(proc_fd, path, &st);
        if (r < 0) {
                fprintf(stderr, "PID %d: %s, nothing applied.\n", (int) pid,
                        r == -ESRCH ? "no such process" : strerror(-r));
                return exit_code_for(r);
        }
        comm_printable(st.comm);
        if (st.flags & PROC_PF_KTHREAD) {
                fprintf(stderr, "PID %d (%s): kernel thread, refused.\n", (int) pid, st.comm);
                return CTL_EXIT_FAILURE;
        }
        if (st.state == 'Z' && st.num_threads <= 1) {
                fprintf(stderr, "PID %d (%s): zombie (exited, not yet reaped), nothing to apply.\n", (int) pid,
                        st.comm);
                return CTL_EXIT_NO_PROCESS;
        }

        r = sched_apply_process(p, proc_fd, pid, st.start_time, ln, THREADS_ALL, false, &res);
        if (r == -ESRCH) {
                fprintf(stderr, "PID %d (%s): exited, nothing applied.\n", (int) pid, st.comm);
                return CTL_EXIT_NO_PROCESS;
        }
        if (r == -EPERM || r == -EACCES) {
                fprintf(stderr, "PID %d (%s): %s, nothing applied.\n", (int) pid, st.comm,
                        permission_hint(p, proc_fd, pid));
                return CTL_EXIT_PERMISSION;
        }
        if (r < 0) {
                fprintf(stderr, "PID %d (%s): %s, nothing applied.\n", (int) pid, st.comm, strerror(-r));
                return exit_code_for(r);
        }

        if (p->backend == BACKEND_EEVDF_SLICE) {
                uint64_t s = sched_raw_value(p, ln);

                if (s == 0)
                        snprintf(what, sizeof(what), "default slice");
                else {
                        snprintf(what, sizeof(what), "slice ");
                        format_slice(s, what + strlen(what), sizeof(what) - strlen(what));
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
                fprintf(stderr, "PID %d (%s): PARTIAL: %u thread%s kept the old value: %s.\n", (int) pid, st.comm,
                        res.n_failed, res.n_failed == 1 ? "" : "s",
                        res.first_error == -EPERM ? permission_hint(p, proc_fd, pid) :
                                                    strerror(-res.first_error));
                return exit_code_for(res.first_error);
        }
        return CTL_EXIT_OK;
}

int verb_set(Ctl *ctl, int argc, char **argv) {
        static const char usage[] =
                "latnicectl set -l N -p PID [-p PID...] [PID...]\n\n"
                "Set latency nice N on every thread of running processes, threads\n"
                "created meanwhile included. Realtime (FIFO, RR, deadline) and idle\n"
                "threads are left alone and counted. Reports the outcome per PID.\n\n"
                "  -l --latency-nice=N  the value, -20..19\n"
                "  -p --pid=PID         a process; may be repeated, PIDs may also follow\n"
                "  -h --help            show this help\n\n"
                "Exit status: 0 applied everywhere; 2 usage error (nothing applied);\n"
                "3 no such process; 4 not supported by this kernel, or every thread\n"
                "realtime; 5 permission denied; 1 other failure. With several PIDs the\n"
                "status is that of the first one that failed; the others are still\n"
                "applied and reported.\n";
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "latency-nice", required_argument, NULL, 'l' },
                { "pid", required_argument, NULL, 'p' },
                {}
        };
        _cleanup_(closep) int proc_fd = -1;
        _cleanup_(freep) pid_t *pids = NULL;
        int c, ln = 0, n_pids = 0, rc = CTL_EXIT_OK;
        bool have_ln = false;
        SchedProbe p;

        pids = calloc((size_t) argc, sizeof(pid_t));
        if (!pids)
                return CTL_EXIT_FAILURE;
        /* Validate everything before touching anything. */
        while ((c = getopt_long(argc, argv, "hl:p:", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        fputs(usage, stdout);
                        return CTL_EXIT_OK;
                case 'l':
                        if (parse_latnice_arg(optarg, &ln) < 0)
                                return CTL_EXIT_USAGE;
                        have_ln = true;
                        break;
                case 'p':
                        if (parse_pid_arg(optarg, &pids[n_pids]) < 0)
                                return CTL_EXIT_USAGE;
                        n_pids++;
                        break;
                default:
                        fputs(usage, stderr);
                        return CTL_EXIT_USAGE;
                }
        }
        for (int i = optind; i < argc; i++) {
                if (parse_pid_arg(argv[i], &pids[n_pids]) < 0)
                        return CTL_EXIT_USAGE;
                n_pids++;
        }
        if (!have_ln || n_pids == 0) {
                fprintf(stderr, "%s\n%s", !have_ln ? "Missing -l N." : "Missing PID.", usage);
                return CTL_EXIT_USAGE;
        }

        if (probe_or_fail(&p) < 0)
                return CTL_EXIT_UNSUPPORTED;
        proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0) {
                fprintf(stderr, "Cannot open /proc: %m\n");
                return CTL_EXIT_FAILURE;
        }
        for (int i = 0; i < n_pids; i++) {
                int r = set_one(&p, proc_fd, pids[i], ln);

                if (r != CTL_EXIT_OK && rc == CTL_EXIT_OK)
                        rc = r;
        }
        return rc;
}
