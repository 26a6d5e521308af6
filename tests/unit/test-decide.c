/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The decide module (daemon/manager-decide.c) on a small hand-built Manager: rules from a buffer,
 * the applied table, this kernel's backend, no bus, no state file, no event source. The processes
 * are real children (their command name set with prctl) and the values really set, so this needs
 * root and a kernel with a backend (it skips, saying why, without). What the whole daemon adds
 * (exec events, units, the bus) is the integration suite's.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "manager-decide.h"
#include "manager-stubs.h"
#include "proc.h"
#include "tests.h"
#include "util.h"

static const char rules_text[] =
        "[Process batchy]\n"
        "Comm=lnt-batchy\n"
        "LatencyNice=7\n"
        "\n"
        "[Process snappy]\n"
        "Comm=lnt-snappy\n"
        "LatencyNice=-4\n";

static Manager *m;
static pid_t children[16];
static size_t n_children;

static void kill_children(void) {
        for (size_t i = 0; i < n_children; i++) {
                (void) kill(children[i], SIGKILL);
                (void) waitpid(children[i], NULL, 0);
        }
}

TEST_SETUP() {
        if (geteuid() != 0) {
                printf("SKIP: the decide module sets real values on real processes: needs root\n");
                return TEST_SKIP;
        }
        m = calloc(1, sizeof(Manager));
        ASSERT_TRUE(m);
        m->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(m->proc_fd >= 0);
        m->applied = applied_table_new();
        ASSERT_TRUE(m->applied);
        ASSERT_EQ(sd_event_new(&m->event), 0); /* the table's pruning is deferred to a loop never run */
        sched_probe("/sys/kernel/btf/vmlinux", &m->probe);
        if (m->probe.backend == BACKEND_NONE) {
                printf("SKIP: this kernel has no latency nice backend (%s)\n", m->probe.reason);
                return TEST_SKIP;
        }
        m->source = SOURCE_SCAN;
        ASSERT_EQ(rule_set_load_buffer("decide.conf", rules_text, strlen(rules_text), &m->rules), 0);
        ASSERT_EQ(m->rules->n_rules, 2);
        atexit(kill_children);
        return 0;
}

/* A child named comm that waits to be killed; its pid. */
static pid_t child(const char *comm) {
        int p[2];
        pid_t pid;
        char c;

        ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_NAME, comm);
                if (write(p[1], "x", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(p[1]);
        ASSERT_EQ(read(p[0], &c, 1), 1);
        close(p[0]);
        ASSERT_TRUE(n_children < ELEMENTSOF(children));
        children[n_children++] = pid;
        return pid;
}

/* The raw value the kernel holds for pid's main thread (the backend's terms). */
static uint64_t raw_of(pid_t pid) {
        ThreadSched t;

        ASSERT_EQ(sched_thread_get(&m->probe, pid, &t), 0);
        return sched_thread_raw(&m->probe, &t);
}

TEST(rule_applies) {
        pid_t pid = child("lnt-batchy");
        AppliedProcess *e;

        ASSERT_EQ(manager_decide_pid(m, pid, false), 1);
        e = applied_table_get(m->applied, pid);
        ASSERT_TRUE(e);
        ASSERT_EQ(e->latency_nice, 7);
        ASSERT_STREQ(e->rule_name, "batchy");
        ASSERT_TRUE(!e->manual && !e->foreground);
        ASSERT_EQ(raw_of(pid), sched_raw_value(&m->probe, 7));
        /* Deciding again changes nothing and keeps one entry. */
        ASSERT_TRUE(manager_decide_pid(m, pid, false) >= 0);
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 7);
}

TEST(a_negative_value) {
        pid_t pid = child("lnt-snappy");

        ASSERT_EQ(manager_decide_pid(m, pid, false), 1);
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, -4);
        ASSERT_EQ(raw_of(pid), sched_raw_value(&m->probe, -4));
}

TEST(no_rule_no_value) {
        pid_t pid = child("lnt-plain");
        uint64_t before = raw_of(pid);

        ASSERT_EQ(manager_decide_pid(m, pid, false), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid) == NULL);
        ASSERT_EQ(raw_of(pid), before);
}

TEST(manual_wins_over_the_rule) {
        pid_t pid = child("lnt-batchy");
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        ProcStat st;
        ManualResult res = {};
        AppliedProcess *e;

        ASSERT_TRUE(pidfd >= 0);
        ASSERT_EQ(proc_stat_read_pid(m->proc_fd, pid, 0, &st), 0);
        ASSERT_EQ(manager_decide_pid(m, pid, false), 1);
        ASSERT_EQ(manager_set_manual(m,
                                     &(ManualRequest) {
                                             .pid = pid, .pidfd = pidfd, .start_time = st.start_time,
                                             .uid = 0, .comm = st.comm, .latency_nice = 3,
                                             .may_lower = true, .by = 0,
                                     },
                                     &res),
                  0);
        ASSERT_TRUE(!res.exited);
        e = applied_table_get(m->applied, pid);
        ASSERT_TRUE(e && e->manual && e->latency_nice == 3);
        /* The rules decide again (a reload, an exec): the explicit choice stays. */
        (void) manager_decide_pid(m, pid, false);
        e = applied_table_get(m->applied, pid);
        ASSERT_TRUE(e && e->manual && e->latency_nice == 3);
        ASSERT_EQ(raw_of(pid), sched_raw_value(&m->probe, 3));
        close(pidfd);
}

TEST(gone_and_forgotten) {
        pid_t pid = child("lnt-batchy");

        ASSERT_EQ(manager_decide_pid(m, pid, false), 1);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        manager_forget(m, pid);
        ASSERT_TRUE(applied_table_get(m->applied, pid) == NULL);
        /* A pid that is gone is decided as nothing, not an error. */
        ASSERT_EQ(kill(pid, SIGKILL), 0);
        ASSERT_EQ(waitpid(pid, NULL, 0), pid);
        children[--n_children] = 0;
        ASSERT_TRUE(manager_decide_pid(m, pid, false) <= 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid) == NULL);
}
