/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What latnicectl stats costs while it collects: a context-switch storm
 * (two processes on one CPU passing a byte back and forth over pipes, two
 * switches and two wakeups per round trip) timed with the statistics
 * program detached and attached (daemon/stats-bpf.c, the daemon's own
 * code, one of the two in a rule's class), interleaved in one sitting after
 * a warm-up, and reported as the extra time per context switch and the
 * ratio attached / detached (median of the per-round ratios). Detached, the
 * program costs nothing: it is not loaded.
 *
 *   bench-stats [ROUNDS [ROUND_TRIPS]] [--tracepoint]
 */

#include <sched.h>
#include <sys/mount.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "stats-bpf.h"
#include "util.h"

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

static void pin(int cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        (void) sched_setaffinity(0, sizeof(set), &set);
}

/* One storm: n round trips between us and the echo child; ns per context switch. */
static double storm(int to_child, int from_child, long n) {
        char c = 'x';
        uint64_t t0 = now_ns();

        for (long i = 0; i < n; i++)
                if (write(to_child, &c, 1) != 1 || read(from_child, &c, 1) != 1)
                        return -1;
        return (double) (now_ns() - t0) / (double) (2 * n);
}

int main(int argc, char **argv) {
        int rounds = 12, to_child[2], from_child[2], pidfd;
        long trips = 100000;
        bool tracepoint = false, mounted_tracefs = false;
        double *off, *on, *ratio, sum_off = 0, sum_on = 0;
        struct stat self;
        pid_t child;
        int ai = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--tracepoint") == 0)
                        tracepoint = true;
                else if (ai++ == 0)
                        rounds = atoi(argv[i]);
                else
                        trips = atol(argv[i]);
        }
        if (rounds < 2 || trips < 1000) {
                fprintf(stderr, "usage: bench-stats [ROUNDS>=2 [ROUND_TRIPS>=1000]] [--tracepoint]\n");
                return 2;
        }
        if (geteuid() != 0) {
                printf("SKIP: loading BPF needs root\n");
                return 77;
        }
        /* The plain tracepoints are found in tracefs (this machine does not mount it by itself). */
        if (tracepoint && access("/sys/kernel/tracing/events", F_OK) < 0 &&
            mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
                mounted_tracefs = true;
        if (pipe(to_child) < 0 || pipe(from_child) < 0)
                return 1;
        pin(0);
        child = fork();
        if (child == 0) {
                char c;

                close(to_child[1]);
                close(from_child[0]);
                while (read(to_child[0], &c, 1) == 1)
                        if (write(from_child[1], &c, 1) != 1)
                                break;
                _exit(0);
        }
        close(to_child[0]);
        close(from_child[1]);
        pidfd = pidfd_open(child, 0);
        if (stat("/proc/self/ns/pid", &self) < 0 || pidfd < 0)
                return 1;
        off = calloc(rounds, sizeof(double));
        on = calloc(rounds, sizeof(double));
        ratio = calloc(rounds, sizeof(double));
        if (!off || !on || !ratio)
                return 1;

        for (int r = -2; r < rounds; r++) { /* two warm-up rounds */
                for (int k = 0; k < 2; k++) {
                        /* Alternate which configuration goes first: no order effect in the ratio. */
                        bool attached = (k == 0) == (r % 2 == 0);
                        StatsBpfOptions o = {
                                .n_classes = LATNICE_STATS_MAX_CLASSES,
                                .max_processes = 1024,
                                .ns_translate = self.st_ino != 0xEFFFFFFCU,
                                .pidns_dev = self.st_dev,
                                .pidns_ino = self.st_ino,
                                .force_tracepoint = tracepoint,
                        };
                        _cleanup_(stats_bpf_freep) StatsBpf *b = NULL;
                        _cleanup_(freep) char *why = NULL;
                        double ns;

                        if (attached) {
                                int q = stats_bpf_new(&o, &b, &why);

                                if (q < 0) {
                                        printf("SKIP: %s\n", why ?: strerror(-q));
                                        kill(child, SIGKILL);
                                        if (mounted_tracefs)
                                                (void) umount("/sys/kernel/tracing");
                                        return 77;
                                }
                                (void) stats_bpf_set_class(b, child, pidfd, 1);
                        }
                        ns = storm(to_child[1], from_child[0], trips);
                        if (ns < 0)
                                return 1;
                        if (r >= 0)
                                (attached ? on : off)[r] = ns;
                }
                if (r >= 0) {
                        ratio[r] = on[r] / off[r];
                        sum_on += on[r];
                        sum_off += off[r];
                }
        }
        close(to_child[1]);
        waitpid(child, NULL, 0);
        if (mounted_tracefs)
                (void) umount("/sys/kernel/tracing");
        qsort(ratio, rounds, sizeof(double), cmp_double);
        printf("context-switch storm, %ld round trips x %d rounds, one CPU, hooks %s\n", trips, rounds,
               tracepoint ? "tracepoint" : "tp_btf");
        printf("  detached: %.0f ns per switch; attached: %.0f ns per switch (means)\n", sum_off / rounds,
               sum_on / rounds);
        printf("  extra while collecting: %.0f ns per context switch\n", (sum_on - sum_off) / rounds);
        printf("BENCH ratio attached/detached median-of-rounds %.3f (min %.3f, max %.3f)\n", ratio[rounds / 2],
               ratio[0], ratio[rounds - 1]);
        return 0;
}
