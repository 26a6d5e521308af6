/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The decide module (daemon/manager-decide.c) on a small hand-built Manager: rules from a buffer,
 * the applied table, this kernel's backend, no bus, no state file, no event source. The processes
 * are real children (their command name set with prctl) and the values really set, so this needs
 * root and a kernel with a backend (it skips, saying why, without). What the whole daemon adds
 * (exec events, units, the bus) is the integration suite's.
 */
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hand-manager.h"
#include "manager-decide.h"
#include "manager-stubs.h"
#include "proc.h"
#include "tests.h"
#include "util.h"

static Manager *m;

TEST_SETUP() {
        m = hand_manager_new(hand_rules, "the decide module sets real values on real processes");
        if (!m)
                return TEST_SKIP;
        m->source = SOURCE_SCAN;
        ASSERT_EQ(m->rules->n_rules, 2);
        return 0;
}

/* The raw value the kernel holds for pid's main thread (the backend's terms). */
static uint64_t raw_of(pid_t pid) {
        ThreadSched t;

        ASSERT_EQ(sched_thread_get(&m->probe, pid, &t), 0);
        return sched_thread_raw(&m->probe, &t);
}

TEST(rule_applies) {
        pid_t pid = hand_child("lnt-batchy");
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
        pid_t pid = hand_child("lnt-snappy");

        ASSERT_EQ(manager_decide_pid(m, pid, false), 1);
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, -4);
        ASSERT_EQ(raw_of(pid), sched_raw_value(&m->probe, -4));
}

TEST(no_rule_no_value) {
        pid_t pid = hand_child("lnt-plain");
        uint64_t before = raw_of(pid);

        ASSERT_EQ(manager_decide_pid(m, pid, false), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid) == NULL);
        ASSERT_EQ(raw_of(pid), before);
}

TEST(manual_wins_over_the_rule) {
        pid_t pid = hand_child("lnt-batchy");
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
        pid_t pid = hand_child("lnt-batchy");

        ASSERT_EQ(manager_decide_pid(m, pid, false), 1);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        manager_forget(m, pid);
        ASSERT_TRUE(applied_table_get(m->applied, pid) == NULL);
        /* A pid that is gone is decided as nothing, not an error. */
        hand_child_kill(pid);
        ASSERT_TRUE(manager_decide_pid(m, pid, false) <= 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid) == NULL);
}
