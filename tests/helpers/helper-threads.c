/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A target process for the apply tests: N threads that sit still, and
 * optionally a chain of threads born *while* somebody applies a value. With
 * --chain K, the last of the N threads watches the main thread's slice; the moment it
 * changes (an apply has begun) it starts a chain: each new thread makes the
 * next, so threads keep appearing from threads an applier may not have
 * visited yet. Prints "ready" when the N threads exist and "chain-done"
 * when the chain is complete, one line each on stdout; then waits to be
 * killed. With --spawner, the last thread makes a new thread for each byte
 * read from stdin and prints "spawned TID": a test can make a thread appear
 * at an exact point of a walk.
 */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "latnice/uapi.h"

static pid_t leader;
static int chain_left;

static void *sleeper(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

static void *chain_link(void *arg) {
        pthread_t t;

        (void) arg;
        if (__atomic_sub_fetch(&chain_left, 1, __ATOMIC_SEQ_CST) > 0) {
                if (pthread_create(&t, NULL, chain_link, NULL) != 0)
                        abort();
        } else {
                printf("chain-done\n");
                fflush(stdout);
        }
        return sleeper(NULL);
}

static uint64_t leader_slice(void) {
        struct latnice_sched_attr a = {};

        if (latnice_sched_getattr(leader, &a, LATNICE_SCHED_ATTR_SIZE_VER1, 0) < 0)
                abort();
        return a.sched_runtime;
}

static int watching;

static void *watcher(void *arg) {
        uint64_t start = leader_slice();
        pthread_t t;

        (void) arg;
        /* "ready" waits for this: an apply before we read start would go unseen */
        __atomic_store_n(&watching, 1, __ATOMIC_SEQ_CST);
        /* Busy-poll on purpose: the chain must start within microseconds. */
        while (leader_slice() == start)
                ;
        if (pthread_create(&t, NULL, chain_link, NULL) != 0)
                abort();
        return sleeper(NULL);
}

/* --spawner: for each byte on stdin, make a thread and say "spawned TID". */
static void *spawned(void *arg) {
        (void) arg;
        printf("spawned %d\n", (int) gettid());
        fflush(stdout);
        return sleeper(NULL);
}

static void *spawner(void *arg) {
        char b;
        pthread_t t;

        (void) arg;
        while (read(0, &b, 1) == 1)
                if (pthread_create(&t, NULL, spawned, NULL) != 0)
                        abort();
        return sleeper(NULL);
}

int main(int argc, char **argv) {
        bool spawn_mode = false;

        int n, i = 1;
        pthread_t t;

        if (argc < 2) {
                fprintf(stderr, "usage: helper-threads N [--chain K]\n");
                return 2;
        }
        n = atoi(argv[i++]);
        if (i + 1 < argc && strcmp(argv[i], "--chain") == 0)
                chain_left = atoi(argv[i + 1]);
        if (i < argc && strcmp(argv[i], "--spawner") == 0)
                spawn_mode = true;
        leader = getpid();
        setvbuf(stdout, NULL, _IOLBF, 0);

        /* The watcher comes last: the highest tid is visited last by an
         * applier walking the list, so the chain starts from a thread the
         * applier has not reached yet. */
        for (int k = 1; k < n; k++)
                if (pthread_create(&t, NULL,
                                   k < n - 1 ? sleeper : chain_left > 0 ? watcher : spawn_mode ? spawner : sleeper,
                                   NULL) != 0) {
                        fprintf(stderr, "pthread_create: %s\n", strerror(errno));
                        return 1;
                }
        while (chain_left > 0 && !__atomic_load_n(&watching, __ATOMIC_SEQ_CST))
                sched_yield();
        printf("ready\n");
        fflush(stdout);
        for (;;)
                pause();
}
