/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A target process for the Thread= tests: N threads that sit still and
 * are named on command. Prints "tids TID..." (threads 0..N-1) once they
 * all exist, then reads commands on stdin, one a line, and answers each
 * with one line:
 *   self I NAME      thread I names itself (prctl(PR_SET_NAME))          -> ok
 *   other I NAME     the main thread names thread I (pthread_setname_np(),
 *                    a write to /proc/self/task/TID/comm)                  -> ok
 *   spawn I          thread I makes a new thread, which starts with its
 *                    creator's name (and value)                            -> spawned TID
 *   storm I N A B    thread I renames itself N times, A and B in turn      -> ok
 *   storm2 I J N A B threads I and J do so at the same time                -> ok
 *   run I PROG       thread I forks and the child executes PROG 30 (it
 *                    starts with the thread's value)                       -> child PID
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

typedef struct Worker {
        pthread_t thread;
        pid_t tid;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        char cmd[16], a[16], b[16];
        char prog[200];
        long n;
        int busy;
        pid_t result;
} Worker;

static Worker *workers;
static long n_workers;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static long n_started;

static void *sleeper(void *arg) {
        pid_t *tid = arg;

        __atomic_store_n(tid, gettid(), __ATOMIC_SEQ_CST);
        for (;;)
                pause();
        return NULL;
}

static void run(Worker *w) {
        if (strcmp(w->cmd, "self") == 0) {
                if (prctl(PR_SET_NAME, w->a) < 0)
                        abort();
        } else if (strcmp(w->cmd, "spawn") == 0) {
                pid_t tid = 0;
                pthread_t t;

                if (pthread_create(&t, NULL, sleeper, &tid) != 0)
                        abort();
                while (__atomic_load_n(&tid, __ATOMIC_SEQ_CST) == 0)
                        usleep(1000);
                w->result = tid;
        } else if (strcmp(w->cmd, "run") == 0) {
                pid_t child = fork();

                if (child < 0)
                        abort();
                if (child == 0) {
                        execl(w->prog, w->prog, "30", (char *) NULL);
                        _exit(127);
                }
                w->result = child;
        } else if (strcmp(w->cmd, "storm") == 0) {
                for (long i = 0; i < w->n; i++)
                        if (prctl(PR_SET_NAME, i % 2 ? w->b : w->a) < 0)
                                abort();
        }
}

static void *worker(void *arg) {
        Worker *w = arg;

        w->tid = gettid();
        pthread_mutex_lock(&start_lock);
        n_started++;
        pthread_cond_signal(&start_cond);
        pthread_mutex_unlock(&start_lock);
        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (!w->busy)
                        pthread_cond_wait(&w->cond, &w->lock);
                run(w);
                w->busy = 0;
                pthread_cond_broadcast(&w->cond);
        }
        return NULL;
}

/* Hands a command to worker i; wait_done() waits until it is done. */
static void post(long i, const char *cmd) {
        Worker *w = &workers[i];

        pthread_mutex_lock(&w->lock);
        snprintf(w->cmd, sizeof(w->cmd), "%s", cmd);
        w->busy = 1;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

static void wait_done(long i) {
        Worker *w = &workers[i];

        pthread_mutex_lock(&w->lock);
        while (w->busy)
                pthread_cond_wait(&w->cond, &w->lock);
        pthread_mutex_unlock(&w->lock);
}

static void command(long i, const char *cmd) {
        post(i, cmd);
        wait_done(i);
}

int main(int argc, char **argv) {
        pthread_attr_t attr;
        char line[256];

        if (argc != 2 || (n_workers = strtol(argv[1], NULL, 10)) <= 0) {
                fprintf(stderr, "usage: %s N\n", argv[0]);
                return 2;
        }
        workers = calloc((size_t) n_workers, sizeof(Worker));
        if (!workers)
                return 1;
        signal(SIGCHLD, SIG_IGN); /* children of "run" are reaped by the kernel */
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024); /* 10,000 threads fit in a test machine */
        for (long i = 0; i < n_workers; i++) {
                pthread_mutex_init(&workers[i].lock, NULL);
                pthread_cond_init(&workers[i].cond, NULL);
                if (pthread_create(&workers[i].thread, &attr, worker, &workers[i]) != 0) {
                        fprintf(stderr, "thread %ld: %s\n", i, strerror(errno));
                        return 1;
                }
        }
        pthread_mutex_lock(&start_lock);
        while (n_started < n_workers)
                pthread_cond_wait(&start_cond, &start_lock);
        pthread_mutex_unlock(&start_lock);

        printf("tids");
        for (long i = 0; i < n_workers; i++)
                printf(" %d", (int) workers[i].tid);
        printf("\n");
        fflush(stdout);

        while (fgets(line, sizeof(line), stdin)) {
                char cmd[16] = "", a[16] = "", b[16] = "";
                long i = -1, j = -1, n = 0;

                if (sscanf(line, "%15s %ld", cmd, &i) < 2 || i < 0 || i >= n_workers) {
                        printf("bad command\n");
                        fflush(stdout);
                        continue;
                }
                if (strcmp(cmd, "self") == 0 && sscanf(line, "%*s %*d %15s", a) == 1) {
                        memcpy(workers[i].a, a, sizeof(a));
                        command(i, "self");
                        printf("ok\n");
                } else if (strcmp(cmd, "other") == 0 && sscanf(line, "%*s %*d %15s", a) == 1) {
                        if (pthread_setname_np(workers[i].thread, a) != 0)
                                abort();
                        printf("ok\n");
                } else if (strcmp(cmd, "run") == 0 && sscanf(line, "%*s %*d %199s", workers[i].prog) == 1) {
                        command(i, "run");
                        printf("child %d\n", (int) workers[i].result);
                } else if (strcmp(cmd, "spawn") == 0) {
                        command(i, "spawn");
                        printf("spawned %d\n", (int) workers[i].result);
                } else if (strcmp(cmd, "storm") == 0 && sscanf(line, "%*s %*d %ld %15s %15s", &n, a, b) == 3) {
                        memcpy(workers[i].a, a, sizeof(a));
                        memcpy(workers[i].b, b, sizeof(b));
                        workers[i].n = n;
                        command(i, "storm");
                        printf("ok\n");
                } else if (strcmp(cmd, "storm2") == 0 && sscanf(line, "%*s %*d %ld %ld %15s %15s", &j, &n, a, b) == 4 &&
                           j >= 0 && j < n_workers && j != i) {
                        for (long k = 0; k < 2; k++) {
                                Worker *w = &workers[k ? j : i];

                                memcpy(w->a, a, sizeof(a));
                                memcpy(w->b, b, sizeof(b));
                                w->n = n;
                        }
                        post(i, "storm");
                        post(j, "storm");
                        wait_done(i);
                        wait_done(j);
                        printf("ok\n");
                } else
                        printf("bad command\n");
                fflush(stdout);
        }
        return 0;
}
