/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event sources (daemon/manager-sources.c) on a small hand-built Manager, as test-decide does for
 * the decide module: which source is chosen from what the kernel and our privileges allow, in which
 * order it falls back, what an exec, rename or exit record or a proc connector event turns into, and
 * what a walk over /proc decides and forgets. Records are built by hand (no BPF program runs for
 * them); the processes they name are real children, so this needs root and a kernel with a backend
 * (it skips, saying why, without). The fallback order is seen by giving up capabilities in a child
 * process; what needs the initial pid namespace (the proc connector) skips elsewhere.
 */
#include <linux/capability.h>
#include <stdalign.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "latnice/event.h"
#include "hand-manager.h"
#include "manager-decide.h"
#include "manager-sources-internal.h"
#include "manager-sources.h"
#include "manager-stubs.h"
#include "proc.h"
#include "tests.h"
#include "util.h"

static Manager *m;
static bool initial_pidns;

/* What every Manager of this test has besides the hand-built one's: the settings the sources read. */
static void sources_options(Manager *n) {
        n->options.source = SOURCE_AUTO;
        n->options.scan_interval_usec = 2 * 1000 * 1000;
        n->options.ringbuf_size = 256 * 1024;
        n->source = _SOURCE_INVALID;
}

TEST_SETUP() {
        struct stat st;

        m = hand_manager_new(hand_rules, "the sources decide real processes and open BPF and netlink");
        if (!m)
                return TEST_SKIP;
        sources_options(m);
        /* The initial pid namespace has the fixed inode PROC_PID_INIT_INO: only there the proc connector. */
        initial_pidns = stat("/proc/self/ns/pid", &st) >= 0 && st.st_ino == 0xEFFFFFFCU;
        return 0;
}

static uint64_t start_time_of(pid_t pid) {
        ProcStat st;

        ASSERT_EQ(proc_stat_read_pid(m->proc_fd, pid, 0, &st), 0);
        return st.start_time;
}

/* An exec (or, with another type, rename) record of pid under comm, as exec.bpf.c builds it. */
static size_t record(struct latnice_event_buf *b, uint32_t type, pid_t pid, pid_t tid, const char *comm) {
        static const char exe[] = "/usr/bin/lnt";

        memset(b, 0, sizeof(*b));
        b->ev = (struct latnice_event) {
                .type = type,
                .pid = (uint32_t) pid,
                .tid = (uint32_t) tid,
                .ppid = (uint32_t) getpid(),
                .exe_len = type == LATNICE_EVENT_EXEC ? sizeof(exe) : 1,
                .start_boottime = start_time_of(pid) * m->ns_per_tick,
                .parent_start_boottime = start_time_of(getpid()) * m->ns_per_tick,
        };
        snprintf(b->ev.comm, sizeof(b->ev.comm), "%s", comm);
        snprintf(b->ev.parent_comm, sizeof(b->ev.parent_comm), "test");
        snprintf(b->ev.exe_base, sizeof(b->ev.exe_base), "lnt");
        if (type == LATNICE_EVENT_EXEC)
                memcpy(b->data, exe, sizeof(exe));
        return sizeof(struct latnice_event) + b->ev.exe_len;
}

static bool rename_sweep_armed(void) {
        int enabled = SD_EVENT_OFF;

        return m->rename_sweep && sd_event_source_get_enabled(m->rename_sweep, &enabled) >= 0 &&
               enabled != SD_EVENT_OFF;
}

/* Runs the loop until the armed sweep of renames has run (20 ms after it was armed). */
static void run_rename_sweep(void) {
        for (int i = 0; i < 100 && rename_sweep_armed(); i++)
                ASSERT_TRUE(sd_event_run(m->event, 100 * 1000) >= 0);
        ASSERT_TRUE(!rename_sweep_armed());
}

/* ---- the BPF records ------------------------------------------------------------------------------- */

TEST(bpf_exec_record_decides) {
        static struct latnice_event_buf b;
        pid_t pid = hand_child("lnt-batchy");
        uint64_t seen = m->events_seen;
        AppliedProcess *e;

        ASSERT_EQ(manager_on_bpf_record(m, &b, record(&b, LATNICE_EVENT_EXEC, pid, pid, "lnt-batchy")), 0);
        ASSERT_EQ(m->events_seen, seen + 1);
        e = applied_table_get(m->applied, pid);
        ASSERT_TRUE(e);
        ASSERT_EQ(e->latency_nice, 7);
        ASSERT_STREQ(e->rule_name, "batchy");
        ASSERT_EQ(e->start_time, start_time_of(pid));
}

/* The rules see the name the record says, not what /proc says: short-lived processes are gone by then. */
TEST(bpf_record_name_is_what_counts) {
        static struct latnice_event_buf b;
        pid_t pid = hand_child("lnt-plain");

        ASSERT_EQ(manager_on_bpf_record(m, &b, record(&b, LATNICE_EVENT_EXEC, pid, pid, "lnt-snappy")), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, -4);
}

TEST(bpf_invalid_record_is_dropped) {
        static struct latnice_event_buf b;
        pid_t pid = hand_child("lnt-batchy");
        uint64_t seen = m->events_seen;
        size_t n = record(&b, LATNICE_EVENT_EXEC, pid, pid, "lnt-batchy");

        ASSERT_EQ(manager_on_bpf_record(m, &b, n - 1), 0); /* the execve() path without its NUL */
        b.ev.type = LATNICE_EVENT_RENAME + 1;
        ASSERT_EQ(manager_on_bpf_record(m, &b, n), 0);
        ASSERT_EQ(m->events_seen, seen);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
}

TEST(bpf_rename_of_the_process_decides_again) {
        static struct latnice_event_buf b;
        pid_t pid = hand_child("lnt-plain");
        uint64_t seen = m->events_seen;

        /* Its exec under a name no rule has: nothing. Then it renames itself to one a rule has. */
        ASSERT_EQ(manager_on_bpf_record(m, &b, record(&b, LATNICE_EVENT_EXEC, pid, pid, "lnt-plain")), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
        ASSERT_EQ(manager_on_bpf_record(m, &b, record(&b, LATNICE_EVENT_RENAME, pid, pid, "lnt-batchy")), 0);
        ASSERT_EQ(m->events_seen, seen + 2);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 7);
        /* Its further renames wait for the sweep (exec.bpf.c coalesces them meanwhile). */
        ASSERT_TRUE(rename_sweep_armed());
        run_rename_sweep();
}

TEST(bpf_rename_of_another_thread_is_not_the_process) {
        static struct latnice_event_buf b;
        pid_t pid = hand_child("lnt-plain");
        uint64_t seen = m->events_seen;

        /* A thread named like a rule's Comm=: the process keeps its name, so nothing is decided for it. */
        ASSERT_EQ(manager_on_bpf_record(m, &b, record(&b, LATNICE_EVENT_RENAME, pid, pid + 1, "lnt-batchy")), 0);
        ASSERT_EQ(m->events_seen, seen + 1);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
        ASSERT_TRUE(rename_sweep_armed());
        run_rename_sweep();
}

TEST(bpf_exit_record_forgets_only_that_process) {
        alignas(8) struct latnice_exit_event x = { .type = LATNICE_EVENT_EXIT };
        static struct latnice_event_buf b;
        pid_t pid = hand_child("lnt-batchy");

        ASSERT_EQ(manager_on_bpf_record(m, &b, record(&b, LATNICE_EVENT_EXEC, pid, pid, "lnt-batchy")), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        /* Another process that had the pid before (an earlier start time): ours stays. */
        x.pid = (uint32_t) pid;
        x.start_boottime = (start_time_of(pid) - 1) * m->ns_per_tick;
        ASSERT_EQ(manager_on_bpf_record(m, &x, sizeof(x)), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        x.start_boottime = start_time_of(pid) * m->ns_per_tick;
        ASSERT_EQ(manager_on_bpf_record(m, &x, sizeof(x)), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
}

/* ---- the proc connector's events --------------------------------------------------------------------- */

TEST(netlink_exec_decides_from_proc) {
        pid_t pid = hand_child("lnt-snappy");
        uint64_t seen = m->events_seen;

        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_EXEC, pid, pid), 0);
        ASSERT_EQ(m->events_seen, seen + 1);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, -4);
}

TEST(netlink_exit_forgets) {
        pid_t pid = hand_child("lnt-batchy");

        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_EXEC, pid, pid), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        hand_child_kill(pid);
        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_EXIT, pid, pid), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
}

/* Without an in-kernel filter every rename reaches us: only where a rule could care is /proc read. */
TEST(netlink_renames_nobody_asked_for) {
        pid_t pid = hand_child("lnt-batchy");
        uint64_t seen = m->events_seen;

        m->filter.want_renames = false;
        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_RENAME, pid, pid), 0);
        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_THREAD_RENAME, pid, pid + 1), 0);
        ASSERT_EQ(m->events_seen, seen);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
}

/* The gate: a process's first rename is decided at once, its further ones by the sweep, once. */
TEST(netlink_renames_through_the_gate) {
        static const char two[] = "[Process batchy]\nComm=lnt-batchy\nLatencyNice=2\n";
        _cleanup_(rule_set_freep) RuleSet *old = m->rules;
        pid_t pid = hand_child("lnt-batchy");
        uint64_t seen = m->events_seen;

        m->filter.want_renames = true;
        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_RENAME, pid, pid), 0);
        ASSERT_EQ(m->events_seen, seen + 1);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 7);
        ASSERT_TRUE(rename_sweep_armed());
        /* Other rules meanwhile, so that a decision shows: the second and third renames decide nothing now. */
        m->rules = hand_rules_load("two.conf", two);
        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_RENAME, pid, pid), 0);
        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_RENAME, pid, pid), 0);
        ASSERT_EQ(m->events_seen, seen + 1);
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 7);
        /* ... the sweep does, from /proc. */
        run_rename_sweep();
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 2);
        /* The gate is empty again: the next rename is decided at once. */
        m->rules = rule_set_free(m->rules);
        m->rules = TAKE_PTR(old);
        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_RENAME, pid, pid), 0);
        ASSERT_EQ(m->events_seen, seen + 2);
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 7);
        run_rename_sweep();
        m->filter.want_renames = false;
}

/* ---- the walks over /proc ------------------------------------------------------------------------------ */

TEST(scan_decides_and_forgets_the_gone) {
        pid_t batchy = hand_child("lnt-batchy"), plain = hand_child("lnt-plain");

        ASSERT_EQ(manager_scan_now(m, true), 0);
        ASSERT_TRUE(applied_table_get(m->applied, batchy));
        ASSERT_EQ(applied_table_get(m->applied, batchy)->latency_nice, 7);
        ASSERT_TRUE(!applied_table_get(m->applied, plain));
        /* Its exit was never reported: the next walk sees it gone. */
        hand_child_kill(batchy);
        ASSERT_EQ(manager_scan_now(m, true), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, batchy));
}

/* The periodic scan (all=false) decides only processes the previous walk did not see under that name. */
TEST(periodic_scan_decides_only_the_new) {
        _cleanup_(rule_set_freep) RuleSet *old = m->rules;
        static const char later[] = "[Process later]\nComm=lnt-later\nLatencyNice=3\n";
        pid_t pid = hand_child("lnt-later");

        ASSERT_EQ(manager_scan_now(m, false), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
        m->rules = hand_rules_load("later.conf", later);
        ASSERT_EQ(manager_scan_now(m, false), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid)); /* seen, same name: not decided again */
        ASSERT_EQ(manager_scan_now(m, true), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 3);
        /* Renamed since the previous walk: decided again, also by the periodic scan. */
        pid = hand_child("lnt-plain");
        ASSERT_EQ(manager_scan_now(m, false), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
        hand_child_rename(pid, "lnt-later");
        ASSERT_EQ(manager_scan_now(m, false), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 3);
        m->rules = rule_set_free(m->rules);
        m->rules = TAKE_PTR(old);
}

/*
 * A process renamed while a walk reads it: the name the walk remembers must be the one it decided on,
 * or the walks after it (same name: not decided again) keep a value the process's name does not get.
 * The child swaps lnt-batchy (7) and lnt-plain (no rule) as fast as it can while the test walks, then
 * stops on one of them; one more walk, and the record must follow that last name. A walk that reads
 * the name twice (once to remember, once to decide) is caught between the two in about a quarter of
 * the rounds: 40 rounds miss it with a chance of 0.75^40, about 1e-5.
 */
TEST(periodic_scan_remembers_the_name_it_decided) {
        struct Storm {
                volatile int stop, stopped;
        } *storm = mmap(NULL, sizeof(struct Storm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

        ASSERT_TRUE(storm != MAP_FAILED);
        for (int round = 0; round < 40; round++) {
                const char *last = round % 2 ? "lnt-batchy" : "lnt-plain";
                const AppliedProcess *e;
                pid_t pid;

                storm->stop = storm->stopped = 0;
                pid = fork();
                ASSERT_TRUE(pid >= 0);
                if (pid == 0) {
                        (void) prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed assertion does not leave it spinning */
                        while (!storm->stop) {
                                (void) prctl(PR_SET_NAME, "lnt-batchy");
                                (void) prctl(PR_SET_NAME, "lnt-plain");
                        }
                        (void) prctl(PR_SET_NAME, last);
                        storm->stopped = 1;
                        for (;;)
                                pause();
                }
                for (int k = 0; k < 20; k++)
                        ASSERT_EQ(manager_scan_now(m, false), 0);
                storm->stop = 1;
                while (!storm->stopped)
                        usleep(100);
                ASSERT_EQ(manager_scan_now(m, false), 0);
                e = applied_table_get(m->applied, pid);
                if (round % 2)
                        ASSERT_TRUE(e && e->latency_nice == 7);
                else
                        ASSERT_TRUE(!e || e->latency_nice == 0);
                ASSERT_EQ(kill(pid, SIGKILL), 0);
                ASSERT_EQ(waitpid(pid, NULL, 0), pid);
                ASSERT_EQ(manager_scan_now(m, true), 0); /* forgets it */
        }
        ASSERT_EQ(munmap(storm, sizeof(struct Storm)), 0);
}

/* ---- choosing the source ------------------------------------------------------------------------------- */

/* Chooses on a fresh Manager, in a child without the capabilities in drop; what it chose, in *ret. */
typedef struct Choice {
        int r;
        SourceKind source;
        bool has_bpf, has_netlink, has_timer;
        char reason[256];
} Choice;

static void choose(SourceKind want, const int *drop, size_t n_drop, Choice *ret) {
        Choice *shared = mmap(NULL, sizeof(Choice), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        int status;
        pid_t pid;

        ASSERT_TRUE(shared != MAP_FAILED);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
                struct __user_cap_data_struct d[2] = {};
                Manager *n;

                if (syscall(SYS_capget, &h, d) < 0)
                        _exit(2);
                for (size_t i = 0; i < n_drop; i++)
                        d[drop[i] / 32].effective &= ~(1U << (drop[i] % 32));
                if (syscall(SYS_capset, &h, d) < 0)
                        _exit(3);
                n = hand_manager_new(hand_rules, "choosing a source");
                ASSERT_TRUE(n);
                sources_options(n);
                n->options.source = want;
                shared->r = manager_setup_source(n);
                shared->source = n->source;
                shared->has_bpf = n->bpf && n->bpf_event_source;
                shared->has_netlink = n->netlink_fd >= 0 && n->netlink_event_source;
                shared->has_timer = n->scan_timer;
                snprintf(shared->reason, sizeof(shared->reason), "%s", n->source_reason ?: "");
                manager_sources_done(n);
                _exit(0);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
        *ret = *shared;
        ASSERT_EQ(munmap(shared, sizeof(Choice)), 0);
        printf("  %s -> %d %s: %s\n", want == SOURCE_AUTO ? "auto" : source_kind_to_string(want), ret->r,
               ret->r >= 0 ? source_kind_to_string(ret->source) : "none", ret->reason);
}

/* It chose source (_SOURCE_INVALID: none, an error) with a reason that starts with reason. */
static void expect_choice(SourceKind want, const int *drop, size_t n_drop, SourceKind source, const char *reason) {
        Choice c;

        choose(want, drop, n_drop, &c);
        ASSERT_EQ(c.source, source);
        ASSERT_TRUE(source == _SOURCE_INVALID ? c.r < 0 : c.r == 0);
        ASSERT_EQ(c.has_bpf, source == SOURCE_BPF);
        ASSERT_EQ(c.has_netlink, source == SOURCE_NETLINK);
        ASSERT_EQ(c.has_timer, source == SOURCE_SCAN);
        ASSERT_TRUE(strncmp(c.reason, reason, strlen(reason)) == 0);
}

static const int no_bpf[] = { CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN };
static const int nothing[] = { CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_NET_ADMIN };

TEST(source_scan_when_asked) {
        expect_choice(SOURCE_SCAN, NULL, 0, SOURCE_SCAN, "periodic /proc scan every 2000 ms (requested)");
}

TEST(source_auto_prefers_bpf) {
        Choice c;

        choose(SOURCE_AUTO, NULL, 0, &c);
        if (c.source != SOURCE_BPF) {
                /* Not a failure of the order: the program does not load here. Say so. */
                printf("  (BPF does not load on this machine: %s)\n", c.reason);
                ASSERT_TRUE(strstr(c.reason, "BPF unavailable: ") || strstr(c.reason, "no BPF"));
                return;
        }
        expect_choice(SOURCE_AUTO, NULL, 0, SOURCE_BPF, "BPF exec tracepoint (");
}

TEST(source_auto_falls_back_to_the_proc_connector) {
        if (!initial_pidns) {
                printf("  (skipped: the proc connector needs the initial pid namespace)\n");
                return;
        }
        expect_choice(SOURCE_AUTO, no_bpf, ELEMENTSOF(no_bpf), SOURCE_NETLINK,
                      "netlink proc connector (BPF unavailable: ");
}

TEST(source_auto_falls_back_to_scanning) {
        expect_choice(SOURCE_AUTO, nothing, ELEMENTSOF(nothing), SOURCE_SCAN,
                      "periodic /proc scan every 2000 ms (no BPF, no proc connector)");
}

/* A source asked for by name is that one or none: no fallback behind the administrator's back. */
TEST(source_asked_for_does_not_fall_back) {
        expect_choice(SOURCE_BPF, nothing, ELEMENTSOF(nothing), _SOURCE_INVALID, "");
        expect_choice(SOURCE_NETLINK, nothing, ELEMENTSOF(nothing), _SOURCE_INVALID, "");
}
