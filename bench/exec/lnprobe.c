/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The matched program of the exec benchmark. At main() it notes the time and
 * whether its latency nice (custom slice) is already set; then it polls until
 * it is, or until it has lived --live-us. With --threads N it starts N
 * threads right after main() and checks each of them too. One line per run
 * goes to fd 3: pid before_main t_exec t_main t_applied threads_total threads_ok
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "latnice/uapi.h"

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static uint64_t my_runtime(void) {
        struct latnice_sched_attr a = {};

        if (latnice_sched_getattr(0, &a, sizeof(a), 0) < 0)
                return 0;
        return a.sched_runtime;
}

static uint64_t expect, deadline;
static atomic_int threads_ok;
static atomic_int go;

static void *thread_main(void *p) {
        (void) p;
        while (!atomic_load(&go))
                ;
        while (now_ns() < deadline) {
                if (my_runtime() == expect) {
                        atomic_fetch_add(&threads_ok, 1);
                        return NULL;
                }
        }
        return NULL;
}

int main(int argc, char **argv) {
        uint64_t t_main = now_ns(), t_exec, t_applied = 0, live_us;
        int before, nthreads;
        pthread_t th[64];
        char line[256];

        if (argc != 5) {
                fprintf(stderr, "usage: lnprobe EXPECT_NS T_EXEC_NS THREADS LIVE_US\n");
                return 2;
        }
        expect = strtoull(argv[1], NULL, 10);
        t_exec = strtoull(argv[2], NULL, 10);
        nthreads = atoi(argv[3]);
        live_us = strtoull(argv[4], NULL, 10);
        if (nthreads < 0 || nthreads > 64)
                return 2;

        before = my_runtime() == expect;
        if (before)
                t_applied = t_main;
        deadline = t_main + live_us * 1000;
        for (int i = 0; i < nthreads; i++)
                pthread_create(&th[i], NULL, thread_main, NULL);
        atomic_store(&go, 1);
        while (!t_applied && now_ns() < deadline)
                if (my_runtime() == expect)
                        t_applied = now_ns();
        for (int i = 0; i < nthreads; i++)
                pthread_join(th[i], NULL);

        snprintf(line, sizeof(line), "%d %d %llu %llu %llu %d %d\n", (int) getpid(), before,
                 (unsigned long long) t_exec, (unsigned long long) t_main, (unsigned long long) t_applied,
                 nthreads, atomic_load(&threads_ok));
        if (write(3, line, strlen(line)) < 0)
                return 1;
        return 0;
}
