/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Micro benchmark of sched_apply_process(): time to apply a value to a
 * process with 1, 10 and 100 threads (and the fresh-exec path for one
 * thread), and system calls per apply and per thread. Timings are
 * interleaved across the cases, values alternate so every apply really
 * writes, and warm-up rounds come first (order effects on this
 * machine are larger than the effects measured here). System calls are counted with strace -c
 * on a child run of this program that applies once and three times: the
 * difference halved is one apply, whatever the setup costs.
 */

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "proc.h"
#include "sched.h"
#include "util.h"

#define WARMUP_ROUNDS 30
#define DEFAULT_ROUNDS 300

typedef struct Case {
        const char *name;
        int threads;
        bool fresh;
        pid_t pid;
        uint64_t start_time;
        double *us;
} Case;

static void *sit(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

/* A target with n threads, dying with us. */
static pid_t spawn_target(int n) {
        int p[2];
        pid_t pid;
        char b;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                pthread_t t;

                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (int i = 1; i < n; i++)
                        if (pthread_create(&t, NULL, sit, NULL) != 0)
                                _exit(1);
                if (write(p[1], "r", 1) != 1)
                        _exit(1);
                sit(NULL);
        }
        close(p[1]);
        if (read(p[0], &b, 1) != 1) {
                close(p[0]);
                return -EIO;
        }
        close(p[0]);
        return pid;
}

static uint64_t start_time_of(int proc_fd, pid_t pid) {
        char path[32];
        ProcStat st;

        snprintf(path, sizeof(path), "%d/stat", (int) pid);
        return proc_stat_read(proc_fd, path, &st) < 0 ? 0 : st.start_time;
}

static double now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static int apply(const SchedProbe *p, int proc_fd, Case *c, int value) {
        ApplyResult res;
        int r;

        r = sched_apply_process(p, proc_fd, c->pid, c->start_time, value, THREADS_ALL, c->fresh, &res);
        if (r < 0)
                return r;
        if (res.n_applied != (unsigned) c->threads)
                return -EIO;
        return 0;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* --count N K fresh|walk: apply K times, for strace -c. */
static int count_mode(const SchedProbe *p, int proc_fd, int n, int k, bool fresh) {
        Case c = { .threads = n, .fresh = fresh };
        int r;

        c.pid = spawn_target(n);
        if (c.pid < 0)
                return 1;
        c.start_time = start_time_of(proc_fd, c.pid);
        for (int i = 0; i < k; i++) {
                r = apply(p, proc_fd, &c, i % 2 ? 5 : -5);
                if (r < 0) {
                        fprintf(stderr, "apply: %s\n", strerror(-r));
                        return 1;
                }
        }
        kill(c.pid, SIGKILL);
        waitpid(c.pid, NULL, 0);
        return 0;
}

/* Total calls in strace -c output: the "total" line's fourth column. */
static long strace_calls(const char *self, int n, int k, bool fresh) {
        char out[] = "/tmp/bench-apply-strace-XXXXXX", cmd[1024], line[256];
        long calls = -1;
        FILE *f;
        int fd;

        fd = mkstemp(out);
        if (fd < 0)
                return -1;
        close(fd);
        snprintf(cmd, sizeof(cmd), "strace -f -c -o %s -- %s --count %d %d %s >/dev/null 2>&1", out, self, n, k,
                 fresh ? "fresh" : "walk");
        if (system(cmd) == 0 && (f = fopen(out, "re"))) {
                while (fgets(line, sizeof(line), f)) {
                        double pct, secs;
                        long usecs, c;

                        if (strstr(line, " total") && sscanf(line, "%lf %lf %ld %ld", &pct, &secs, &usecs, &c) == 4)
                                calls = c;
                }
                fclose(f);
        }
        unlink(out);
        return calls;
}

int main(int argc, char **argv) {
        Case cases[] = {
                { "walk", 1, false },
                { "walk", 10, false },
                { "walk", 100, false },
                { "fresh", 1, true },
        };
        const size_t n_cases = ELEMENTSOF(cases);
        _cleanup_(closep) int proc_fd = -1;
        int rounds = DEFAULT_ROUNDS, r;
        char self[4096];
        ssize_t sl;
        SchedProbe p;

        proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0)
                return 1;
        sched_probe("/sys/kernel/btf/vmlinux", &p);
        if (p.backend == BACKEND_NONE) {
                printf("SKIP: nothing to apply on this kernel: %s\n", p.reason);
                return 77;
        }
        if (argc == 5 && strcmp(argv[1], "--count") == 0)
                return count_mode(&p, proc_fd, atoi(argv[2]), atoi(argv[3]), strcmp(argv[4], "fresh") == 0);
        if (argc == 3 && strcmp(argv[1], "--rounds") == 0 && safe_atoi(argv[2], &rounds) >= 0 && rounds > 0)
                ;
        else if (argc != 1) {
                fprintf(stderr, "usage: bench-apply [--rounds N]\n");
                return 2;
        }

        for (size_t i = 0; i < n_cases; i++) {
                cases[i].pid = spawn_target(cases[i].threads);
                if (cases[i].pid < 0) {
                        fprintf(stderr, "cannot start a target: %s\n", strerror(-cases[i].pid));
                        return 1;
                }
                cases[i].start_time = start_time_of(proc_fd, cases[i].pid);
                cases[i].us = calloc((size_t) rounds, sizeof(double));
                if (!cases[i].us)
                        return 1;
        }

        /* Interleaved: every round runs each case once, starting at a
         * different case each time; values alternate so each apply writes. */
        for (int round = -WARMUP_ROUNDS; round < rounds; round++)
                for (size_t j = 0; j < n_cases; j++) {
                        Case *c = &cases[((size_t) (round + WARMUP_ROUNDS) + j) % n_cases];
                        double t0 = now_us();

                        r = apply(&p, proc_fd, c, (round & 1) ? 5 : -5);
                        if (r < 0) {
                                fprintf(stderr, "apply to %d threads: %s\n", c->threads, strerror(-r));
                                return 1;
                        }
                        if (round >= 0)
                                c->us[round] = now_us() - t0;
                }

        sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (sl < 0)
                return 1;
        self[sl] = 0;

        printf("sched_apply_process() on %s (default slice %llu ns), %d rounds after %d warm-up, interleaved\n\n",
               backend_to_string(p.backend), (unsigned long long) p.base_slice_ns, rounds, WARMUP_ROUNDS);
        printf("%-7s %-6s %10s %9s %9s %10s %14s %15s\n", "threads", "path", "median_us", "p10_us", "p90_us",
               "us/thread", "syscalls/apply", "syscalls/thread");
        for (size_t i = 0; i < n_cases; i++) {
                Case *c = &cases[i];
                long c1, c3;
                double med;
                char sc_apply[32] = "n/a", sc_thread[32] = "n/a";

                qsort(c->us, (size_t) rounds, sizeof(double), cmp_double);
                med = c->us[rounds / 2];
                c1 = strace_calls(self, c->threads, 1, c->fresh);
                c3 = strace_calls(self, c->threads, 3, c->fresh);
                if (c1 >= 0 && c3 >= c1) {
                        double per = (double) (c3 - c1) / 2.0;

                        snprintf(sc_apply, sizeof(sc_apply), "%.1f", per);
                        snprintf(sc_thread, sizeof(sc_thread), "%.2f", per / c->threads);
                }
                printf("%-7d %-6s %10.1f %9.1f %9.1f %10.2f %14s %15s\n", c->threads, c->name, med,
                       c->us[rounds / 10], c->us[rounds * 9 / 10], med / c->threads, sc_apply, sc_thread);
        }
        printf("\nsyscalls counted with strace -f -c (apply x3 minus apply x1, halved); n/a without strace\n");

        for (size_t i = 0; i < n_cases; i++) {
                kill(cases[i].pid, SIGKILL);
                waitpid(cases[i].pid, NULL, 0);
                free(cases[i].us);
        }
        return 0;
}
