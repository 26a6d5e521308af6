/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* See hand-manager.h. */

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hand-manager.h"
#include "tests.h"
#include "util.h"

const char hand_rules[] =
        "[Process batchy]\n"
        "Comm=lnt-batchy\n"
        "LatencyNice=7\n"
        "\n"
        "[Process snappy]\n"
        "Comm=lnt-snappy\n"
        "LatencyNice=-4\n";

/* pid 0: reaped already. cmd: names to take, ack: one byte each time it has. */
static struct {
        pid_t pid;
        int cmd, ack;
} children[32];
static size_t n_children;

static void kill_children(void) {
        for (size_t i = 0; i < n_children; i++)
                if (children[i].pid > 0) {
                        (void) kill(children[i].pid, SIGKILL);
                        (void) waitpid(children[i].pid, NULL, 0);
                }
}

RuleSet *hand_rules_load(const char *name, const char *text) {
        RuleSet *s = NULL;

        ASSERT_EQ(rule_set_load_buffer(name, text, strlen(text), &s), 0);
        ASSERT_EQ(s->n_errors, 0);
        return s;
}

Manager *hand_manager_new(const char *rules, const char *what) {
        Manager *m;

        if (geteuid() != 0) {
                printf("SKIP: %s: needs root\n", what);
                return NULL;
        }
        m = calloc(1, sizeof(Manager));
        ASSERT_TRUE(m);
        m->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(m->proc_fd >= 0);
        m->netlink_fd = m->cgroup2_fd = -1;
        m->applied = applied_table_new();
        ASSERT_TRUE(m->applied);
        ASSERT_EQ(sd_event_new(&m->event), 0); /* the table's pruning is deferred to a loop run only by tests */
        m->ns_per_tick = 1000000000ULL / (uint64_t) sysconf(_SC_CLK_TCK);
        sched_probe("/sys/kernel/btf/vmlinux", &m->probe);
        if (m->probe.backend == BACKEND_NONE) {
                printf("SKIP: this kernel has no latency nice backend (%s)\n", m->probe.reason);
                return NULL;
        }
        m->rules = hand_rules_load("hand.conf", rules);
        atexit(kill_children);
        return m;
}

pid_t hand_child(const char *comm) {
        int cmd[2], ack[2];
        pid_t pid;
        char c;

        ASSERT_TRUE(n_children < ELEMENTSOF(children));
        ASSERT_EQ(pipe2(cmd, O_CLOEXEC), 0);
        ASSERT_EQ(pipe2(ack, O_CLOEXEC), 0);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                char name[16];
                ssize_t n;

                /* A failed assertion aborts the test without its atexit(): the children go with it
                 * (and with them the test's stdout, which meson waits for). */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                (void) prctl(PR_SET_NAME, comm);
                close(cmd[1]);
                for (;;) {
                        if (write(ack[1], "x", 1) != 1)
                                _exit(1);
                        n = read(cmd[0], name, sizeof(name) - 1);
                        if (n <= 0)
                                break;
                        name[n] = 0;
                        (void) prctl(PR_SET_NAME, name);
                }
                for (;;)
                        pause();
        }
        close(cmd[0]);
        close(ack[1]);
        ASSERT_EQ(read(ack[0], &c, 1), 1);
        children[n_children].pid = pid;
        children[n_children].cmd = cmd[1];
        children[n_children].ack = ack[0];
        n_children++;
        return pid;
}

static size_t child_index(pid_t pid) {
        for (size_t i = 0; i < n_children; i++)
                if (children[i].pid == pid)
                        return i;
        fprintf(stderr, "%d is not a child of this test\n", (int) pid);
        abort();
}

void hand_child_rename(pid_t pid, const char *comm) {
        size_t i = child_index(pid);
        char c;

        ASSERT_EQ(write(children[i].cmd, comm, strlen(comm)), (ssize_t) strlen(comm));
        ASSERT_EQ(read(children[i].ack, &c, 1), 1);
}

void hand_child_kill(pid_t pid) {
        size_t i = child_index(pid);

        ASSERT_EQ(kill(pid, SIGKILL), 0);
        ASSERT_EQ(waitpid(pid, NULL, 0), pid);
        close(children[i].cmd);
        close(children[i].ack);
        children[i].pid = 0;
}
