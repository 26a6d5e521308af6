/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A program that behaves like Wine for latniced's rename tests: it starts
 * under its own file name, renames itself with prctl(PR_SET_NAME) the way
 * Wine renames wine64-preloader to the Windows executable, and carries
 * whatever words it is given in argv (the .exe path).
 *
 *   helper-rename rename NAME SECONDS [WORD...]  rename, print "renamed", sleep
 *   helper-rename rename-from-thread NAME SECONDS  the same, but another thread renames the process
 *                                                (writes /proc/self/comm: the kernel's task is not current)
 *   helper-rename storm N NAME1 NAME2 [SECONDS]  rename N times between two names (NAME1 first),
 *                                                print the count, then sleep SECONDS
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int set_name(const char *name) {
        if (prctl(PR_SET_NAME, (unsigned long) name, 0, 0, 0) < 0) {
                fprintf(stderr, "prctl(PR_SET_NAME, %s): %s\n", name, strerror(errno));
                return -1;
        }
        return 0;
}

/* /proc/self is the thread group: from another thread, this renames the leader. */
static void *rename_leader(void *name) {
        int fd = open("/proc/self/comm", O_WRONLY | O_CLOEXEC);
        size_t l = strlen(name);

        if (fd < 0 || write(fd, name, l) != (ssize_t) l) {
                fprintf(stderr, "writing /proc/self/comm: %s\n", strerror(errno));
                return name;
        }
        close(fd);
        return NULL;
}

int main(int argc, char **argv) {
        if (argc >= 4 && (strcmp(argv[1], "rename") == 0 || strcmp(argv[1], "rename-from-thread") == 0)) {
                struct timespec ts = { .tv_sec = strtol(argv[3], NULL, 10) };

                if (strcmp(argv[1], "rename") == 0) {
                        if (set_name(argv[2]) < 0)
                                return 1;
                } else {
                        pthread_t th;
                        void *res;

                        if (pthread_create(&th, NULL, rename_leader, argv[2]) != 0 || pthread_join(th, &res) != 0 ||
                            res)
                                return 1;
                }
                printf("renamed\n");
                fflush(stdout);
                while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                        ;
                return 0;
        }
        if ((argc == 5 || argc == 6) && strcmp(argv[1], "storm") == 0) {
                long n = strtol(argv[2], NULL, 10);
                struct timespec ts = { .tv_sec = argc == 6 ? strtol(argv[5], NULL, 10) : 0 };

                for (long i = 0; i < n; i++)
                        if (set_name(argv[3 + (i & 1)]) < 0)
                                return 1;
                printf("%ld\n", n);
                fflush(stdout);
                while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                        ;
                return 0;
        }
        fprintf(stderr, "usage: %s rename NAME SECONDS [WORD...] | storm N NAME1 NAME2 [SECONDS]\n", argv[0]);
        return 2;
}
