/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loop of the fork benchmark: N times fork(), the child _exit()s at
 * once, the parent waits. Prints the mean nanoseconds per fork+wait.
 *   lnfork N [EXPECT_NS]
 * EXPECT_NS: first wait (up to 5 s) until the process's own slice is
 * EXPECT_NS, the value a rule of latniced gives it: the loop then runs as a
 * process latniced set, whose every child inherits the value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "latnice/uapi.h"

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

int main(int argc, char **argv) {
        unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
        uint64_t expect = argc > 2 ? strtoull(argv[2], NULL, 10) : 0, t0;

        if (expect > 0) {
                uint64_t until = now_ns() + 5000000000ULL;
                struct latnice_sched_attr a = {};

                while (latnice_sched_getattr(0, &a, sizeof(a), 0) == 0 && a.sched_runtime != expect) {
                        if (now_ns() > until) {
                                fprintf(stderr, "lnfork: the value never came (slice %llu, want %llu)\n",
                                        (unsigned long long) a.sched_runtime, (unsigned long long) expect);
                                return 1;
                        }
                        usleep(1000);
                }
        }
        t0 = now_ns();
        for (unsigned long i = 0; i < n; i++) {
                pid_t pid = fork();

                if (pid < 0) {
                        perror("fork");
                        return 1;
                }
                if (pid == 0)
                        _exit(0);
                if (waitpid(pid, NULL, 0) < 0) {
                        perror("waitpid");
                        return 1;
                }
        }
        printf("%.0f\n", (double) (now_ns() - t0) / (double) n);
        return 0;
}
