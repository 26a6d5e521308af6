/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The spawner of the exec benchmark.
 *   lnspawn base                         print the default slice and the slice of LatencyNice=-10
 *   lnspawn seq N GAP_US OUT PROBE EXPECT THREADS LIVE_US
 *                                         N probes one after another
 *   lnspawn storm SECS WORKERS RATE EVERY OUT PROBE NOP EXPECT
 *                                         fork+exec storm of NOP; every EVERY-th exec is a
 *                                         probe (0: none); RATE total execs/s (0: as fast as possible)
 *   lnspawn slice NS CMD [ARGS...]       set its own slice to NS (SCHED_OTHER, as chrt -T would), then exec
 *                                         CMD: a launcher's value before the exec
 * Probes write their result lines to OUT (opened O_APPEND as their fd 3).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "latnice/uapi.h"

static const unsigned weights[40] = {
        88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
        9548, 7620, 6100, 4904, 3906, 3121, 2501, 1991, 1586, 1277,
        1024, 820, 655, 526, 423, 335, 272, 215, 172, 137,
        110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
};

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static uint64_t expected_slice(int ln) {
        struct latnice_sched_attr a = {};
        uint64_t s;

        if (latnice_sched_getattr(0, &a, sizeof(a), 0) < 0)
                return 0;
        s = a.sched_runtime * 1024 / weights[ln + 20];
        if (s < 100000)
                s = 100000;
        if (s > 100000000)
                s = 100000000;
        return s;
}

static int out_fd = -1;

static pid_t spawn(const char *path, char **argv, bool probe) {
        char tbuf[32];
        pid_t pid;

        pid = fork();
        if (pid == 0) {
                /* T_EXEC: taken in the child, right before execve() */
                snprintf(tbuf, sizeof(tbuf), "%llu", (unsigned long long) now_ns());
                if (probe)
                        argv[2] = tbuf;
                if (out_fd == 3)
                        fcntl(3, F_SETFD, 0);
                else if (out_fd >= 0)
                        dup2(out_fd, 3);
                execv(path, argv);
                _exit(127);
        }
        return pid;
}

static int cmd_seq(int argc, char **argv) {
        unsigned n, gap;
        char *pargv[6];

        if (argc != 9)
                return 2;
        n = (unsigned) atoi(argv[2]);
        gap = (unsigned) atoi(argv[3]);
        out_fd = open(argv[4], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (out_fd < 0)
                return 1;
        pargv[0] = "lnprobe";
        pargv[1] = argv[6];
        pargv[2] = "0";
        pargv[3] = argv[7];
        pargv[4] = argv[8];
        pargv[5] = NULL;
        for (unsigned i = 0; i < n; i++) {
                pid_t pid = spawn(argv[5], pargv, true);

                if (pid < 0)
                        return 1;
                waitpid(pid, NULL, 0);
                if (gap)
                        usleep(gap);
        }
        return 0;
}

static int cmd_storm(int argc, char **argv) {
        unsigned secs, workers, rate, every;
        uint64_t end, total = 0;
        char *pargv[6], *nargv[2] = { "lnnop", NULL };
        int pfd[2];

        if (argc != 10)
                return 2;
        secs = (unsigned) atoi(argv[2]);
        workers = (unsigned) atoi(argv[3]);
        rate = (unsigned) atoi(argv[4]);
        every = (unsigned) atoi(argv[5]);
        out_fd = open(argv[6], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (out_fd < 0 || pipe(pfd) < 0)
                return 1;
        pargv[0] = "lnprobe";
        pargv[1] = argv[9];
        pargv[2] = "0";
        pargv[3] = "0";
        pargv[4] = "2000";
        pargv[5] = NULL;

        end = now_ns() + (uint64_t) secs * 1000000000ULL;
        for (unsigned w = 0; w < workers; w++) {
                if (fork() == 0) {
                        uint64_t count = 0, next = now_ns(), period = rate ? 1000000000ULL * workers / rate : 0;

                        close(pfd[0]);
                        while (now_ns() < end) {
                                bool probe = every && (count % every) == every - 1;
                                pid_t pid = probe ? spawn(argv[7], pargv, true) : spawn(argv[8], nargv, false);

                                if (pid < 0)
                                        break;
                                waitpid(pid, NULL, 0);
                                count++;
                                if (period) {
                                        struct timespec ts;

                                        next += period;
                                        ts.tv_sec = (time_t) (next / 1000000000ULL);
                                        ts.tv_nsec = (long) (next % 1000000000ULL);
                                        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
                                }
                        }
                        if (write(pfd[1], &count, sizeof(count)) < 0)
                                _exit(1);
                        _exit(0);
                }
        }
        close(pfd[1]);
        for (unsigned w = 0; w < workers; w++) {
                uint64_t c;

                if (read(pfd[0], &c, sizeof(c)) == sizeof(c))
                        total += c;
        }
        while (wait(NULL) > 0)
                ;
        printf("%llu %.1f\n", (unsigned long long) total, (double) total / secs);
        return 0;
}

int main(int argc, char **argv) {
        if (argc >= 2 && strcmp(argv[1], "base") == 0) {
                struct latnice_sched_attr a = {};

                latnice_sched_getattr(0, &a, sizeof(a), 0);
                printf("%llu %llu\n", (unsigned long long) a.sched_runtime, (unsigned long long) expected_slice(-10));
                return 0;
        }
        if (argc >= 4 && strcmp(argv[1], "slice") == 0) {
                struct latnice_sched_attr a = {};

                if (latnice_sched_getattr(0, &a, sizeof(a), 0) < 0) {
                        perror("sched_getattr");
                        return 1;
                }
                a.size = LATNICE_SCHED_ATTR_SIZE_VER1;
                a.sched_flags = 0;
                a.sched_runtime = strtoull(argv[2], NULL, 10);
                if (latnice_sched_setattr(0, &a, 0) < 0) {
                        perror("sched_setattr");
                        return 1;
                }
                execv(argv[3], argv + 3);
                perror("execv");
                return 127;
        }
        if (argc >= 2 && strcmp(argv[1], "seq") == 0)
                return cmd_seq(argc, argv);
        if (argc >= 2 && strcmp(argv[1], "storm") == 0)
                return cmd_storm(argc, argv);
        fprintf(stderr, "usage: see the comment at the top of lnspawn.c\n");
        return 2;
}
