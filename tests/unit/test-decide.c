/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The decide module (daemon/manager-decide.c) on a small hand-built Manager: rules from a buffer,
 * the applied table, this kernel's backend, no bus, no state file, no event source. The processes
 * are real children (their command name set with prctl) and the values really set, so this needs
 * root and a kernel with a backend (it skips, saying why, without). What the whole daemon adds
 * (exec events, units, the bus) is the integration suite's.
 */
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hand-manager.h"
#include "manager-decide.h"
#include "manager-inherited.h"
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

/*
 * After a restart the start-up scan may find a process that inherited our value through fork from a
 * process we set (it left the tree: the record of forks knows) and match it to a rule itself: what it
 * had before us is what its origin had, not the value it inherited (a stop would "restore" that).
 */
TEST(a_descendant_found_later_takes_its_origins_before) {
        pid_t origin = hand_child("lnt-snappy"), d = hand_child("lnt-snappy");
        const AppliedProcess *o, *e;

        ASSERT_EQ(manager_decide_pid(m, origin, false), 1);
        o = applied_table_get(m->applied, origin);
        ASSERT_TRUE(o && o->latency_nice == -4);
        /* d carries the origin's value, as a fork of it would; the proc connector's record says so. */
        ASSERT_EQ(sched_thread_set_raw(&m->probe, d, o->raw, NULL), 0);
        manager_inherited_on_fork(m, d, origin);
        ASSERT_EQ(manager_decide_pid(m, d, false), 1);
        e = applied_table_get(m->applied, d);
        o = applied_table_get(m->applied, origin);
        ASSERT_TRUE(e && e->latency_nice == -4);
        ASSERT_EQ(e->before_raw, o->before_raw);
        ASSERT_EQ(e->before, o->before);
}

/* A child of the test that carries raw (as a fork of a process we set would) and waits to be killed. */
static pid_t valued_child(uint64_t raw) {
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;)
                        pause();
        }
        ASSERT_EQ(sched_thread_set_raw(&m->probe, pid, raw, NULL), 0);
        return pid;
}

/*
 * The proc connector's record of forks (no BPF here), as the kernel's: one user holds at most
 * LATNICE_INHERITED_PER_USER entries; past that a fork is counted, not recorded, and another user's
 * fork still is.
 */
TEST(a_users_share_of_the_record_of_forks) {
        enum { N = LATNICE_INHERITED_PER_USER + 6 };
        static pid_t kids[N + 1]; /* static: a thousand pids */
        pid_t origin = hand_child("lnt-batchy"), other = hand_child("lnt-batchy");
        _cleanup_(freep) Inherited *v = NULL;
        AppliedProcess *o, *o2;
        uint64_t unrecorded = m->inherited_unrecorded;
        int n, mine = 0, theirs = 0;

        ASSERT_EQ(manager_decide_pid(m, origin, false), 1);
        ASSERT_EQ(manager_decide_pid(m, other, false), 1);
        o = applied_table_get(m->applied, origin);
        o2 = applied_table_get(m->applied, other);
        ASSERT_TRUE(o && o2);
        o->uid = 4242;  /* two users' processes */
        o2->uid = 4343;
        for (int i = 0; i < N; i++) {
                kids[i] = valued_child(o->raw);
                manager_inherited_on_fork(m, kids[i], origin);
        }
        ASSERT_EQ(m->inherited_unrecorded - unrecorded, (uint64_t) (N - LATNICE_INHERITED_PER_USER));
        kids[N] = valued_child(o2->raw);
        manager_inherited_on_fork(m, kids[N], other);
        ASSERT_EQ(m->inherited_unrecorded - unrecorded, (uint64_t) (N - LATNICE_INHERITED_PER_USER));
        n = manager_inherited_list(m, &v);
        for (int i = 0; i < n; i++) {
                mine += v[i].origin == origin;
                theirs += v[i].origin == other;
        }
        ASSERT_EQ(mine, LATNICE_INHERITED_PER_USER);
        ASSERT_EQ(theirs, 1);
        /* An exit gives a place back: the user's next fork is recorded. */
        (void) kill(kids[0], SIGKILL);
        (void) waitpid(kids[0], NULL, 0);
        manager_inherited_on_exit(m, kids[0]);
        kids[0] = valued_child(o->raw);
        manager_inherited_on_fork(m, kids[0], origin);
        ASSERT_EQ(m->inherited_unrecorded - unrecorded, (uint64_t) (N - LATNICE_INHERITED_PER_USER));
        for (int i = 0; i <= N; i++) {
                (void) kill(kids[i], SIGKILL);
                (void) waitpid(kids[i], NULL, 0);
        }
}
