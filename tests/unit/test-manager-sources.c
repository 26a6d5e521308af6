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
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdalign.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "latnice/event.h"
#include "manager-decide.h"
#include "manager-sources-internal.h"
#include "manager-sources.h"
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
static pid_t children[32];
static size_t n_children;
static bool initial_pidns;

static void kill_children(void) {
        for (size_t i = 0; i < n_children; i++)
                if (children[i] > 0) {
                        (void) kill(children[i], SIGKILL);
                        (void) waitpid(children[i], NULL, 0);
                }
}

static Manager *manager_new_hand(void) {
        Manager *n = calloc(1, sizeof(Manager));

        ASSERT_TRUE(n);
        n->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(n->proc_fd >= 0);
        n->netlink_fd = n->cgroup2_fd = -1;
        n->applied = applied_table_new();
        ASSERT_TRUE(n->applied);
        ASSERT_EQ(sd_event_new(&n->event), 0); /* the table's pruning is deferred to a loop run only here */
        n->ns_per_tick = 1000000000ULL / (uint64_t) sysconf(_SC_CLK_TCK);
        n->options.source = SOURCE_AUTO;
        n->options.scan_interval_usec = 2 * 1000 * 1000;
        n->options.ringbuf_size = 256 * 1024;
        n->source = _SOURCE_INVALID;
        return n;
}

TEST_SETUP() {
        struct stat st;

        if (geteuid() != 0) {
                printf("SKIP: the sources decide real processes and open BPF and netlink: needs root\n");
                return TEST_SKIP;
        }
        m = manager_new_hand();
        sched_probe("/sys/kernel/btf/vmlinux", &m->probe);
        if (m->probe.backend == BACKEND_NONE) {
                printf("SKIP: this kernel has no latency nice backend (%s)\n", m->probe.reason);
                return TEST_SKIP;
        }
        ASSERT_EQ(rule_set_load_buffer("sources.conf", rules_text, strlen(rules_text), &m->rules), 0);
        ASSERT_EQ(m->rules->n_rules, 2);
        /* The initial pid namespace has the fixed inode PROC_PID_INIT_INO: only there the proc connector. */
        initial_pidns = stat("/proc/self/ns/pid", &st) >= 0 && st.st_ino == 0xEFFFFFFCU;
        atexit(kill_children);
        return 0;
}

/* A child named comm that waits to be killed, renaming itself when told (child_rename()); its pid. */
static struct {
        int cmd, ack;
} control[ELEMENTSOF(children)];

static pid_t child(const char *comm) {
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
        control[n_children].cmd = cmd[1];
        control[n_children].ack = ack[0];
        children[n_children++] = pid;
        return pid;
}

static void child_rename(pid_t pid, const char *comm) {
        char c;

        for (size_t i = 0; i < n_children; i++)
                if (children[i] == pid) {
                        ASSERT_EQ(write(control[i].cmd, comm, strlen(comm)), (ssize_t) strlen(comm));
                        ASSERT_EQ(read(control[i].ack, &c, 1), 1);
                        return;
                }
        ASSERT_TRUE(!"not a child");
}

static void child_reap(pid_t pid) {
        for (size_t i = 0; i < n_children; i++)
                if (children[i] == pid) {
                        ASSERT_EQ(kill(pid, SIGKILL), 0);
                        ASSERT_EQ(waitpid(pid, NULL, 0), pid);
                        children[i] = 0;
                }
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
        pid_t pid = child("lnt-batchy");
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
        pid_t pid = child("lnt-plain");

        ASSERT_EQ(manager_on_bpf_record(m, &b, record(&b, LATNICE_EVENT_EXEC, pid, pid, "lnt-snappy")), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, -4);
}

TEST(bpf_invalid_record_is_dropped) {
        static struct latnice_event_buf b;
        pid_t pid = child("lnt-batchy");
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
        pid_t pid = child("lnt-plain");
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
        pid_t pid = child("lnt-plain");
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
        pid_t pid = child("lnt-batchy");

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
        pid_t pid = child("lnt-snappy");
        uint64_t seen = m->events_seen;

        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_EXEC, pid, pid), 0);
        ASSERT_EQ(m->events_seen, seen + 1);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, -4);
}

TEST(netlink_exit_forgets) {
        pid_t pid = child("lnt-batchy");

        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_EXEC, pid, pid), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        child_reap(pid);
        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_EXIT, pid, pid), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
}

/* Without an in-kernel filter every rename reaches us: only where a rule could care is /proc read. */
TEST(netlink_renames_nobody_asked_for) {
        pid_t pid = child("lnt-batchy");
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
        pid_t pid = child("lnt-batchy");
        uint64_t seen = m->events_seen;

        m->filter.want_renames = true;
        ASSERT_EQ(manager_on_netlink_event(m, NETLINK_EVENT_RENAME, pid, pid), 0);
        ASSERT_EQ(m->events_seen, seen + 1);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 7);
        ASSERT_TRUE(rename_sweep_armed());
        /* Other rules meanwhile, so that a decision shows: the second and third renames decide nothing now. */
        m->rules = NULL;
        ASSERT_EQ(rule_set_load_buffer("two.conf", two, strlen(two), &m->rules), 0);
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
        pid_t batchy = child("lnt-batchy"), plain = child("lnt-plain");

        ASSERT_EQ(manager_scan_now(m, true), 0);
        ASSERT_TRUE(applied_table_get(m->applied, batchy));
        ASSERT_EQ(applied_table_get(m->applied, batchy)->latency_nice, 7);
        ASSERT_TRUE(!applied_table_get(m->applied, plain));
        /* Its exit was never reported: the next walk sees it gone. */
        child_reap(batchy);
        ASSERT_EQ(manager_scan_now(m, true), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, batchy));
}

/* The periodic scan (all=false) decides only processes the previous walk did not see under that name. */
TEST(periodic_scan_decides_only_the_new) {
        _cleanup_(rule_set_freep) RuleSet *old = m->rules;
        static const char later[] = "[Process later]\nComm=lnt-later\nLatencyNice=3\n";
        pid_t pid = child("lnt-later");

        ASSERT_EQ(manager_scan_now(m, false), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
        m->rules = NULL;
        ASSERT_EQ(rule_set_load_buffer("later.conf", later, strlen(later), &m->rules), 0);
        ASSERT_EQ(manager_scan_now(m, false), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid)); /* seen, same name: not decided again */
        ASSERT_EQ(manager_scan_now(m, true), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 3);
        /* Renamed since the previous walk: decided again, also by the periodic scan. */
        pid = child("lnt-plain");
        ASSERT_EQ(manager_scan_now(m, false), 0);
        ASSERT_TRUE(!applied_table_get(m->applied, pid));
        child_rename(pid, "lnt-later");
        ASSERT_EQ(manager_scan_now(m, false), 0);
        ASSERT_TRUE(applied_table_get(m->applied, pid));
        ASSERT_EQ(applied_table_get(m->applied, pid)->latency_nice, 3);
        m->rules = rule_set_free(m->rules);
        m->rules = TAKE_PTR(old);
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
                n = manager_new_hand();
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

static const int no_bpf[] = { CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN };
static const int nothing[] = { CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_NET_ADMIN };

TEST(source_scan_when_asked) {
        Choice c;

        choose(SOURCE_SCAN, NULL, 0, &c);
        ASSERT_EQ(c.r, 0);
        ASSERT_EQ(c.source, SOURCE_SCAN);
        ASSERT_TRUE(c.has_timer && !c.has_bpf && !c.has_netlink);
        ASSERT_STREQ(c.reason, "periodic /proc scan every 2000 ms (requested)");
}

TEST(source_auto_prefers_bpf) {
        Choice c;

        choose(SOURCE_AUTO, NULL, 0, &c);
        ASSERT_EQ(c.r, 0);
        if (c.source != SOURCE_BPF) {
                /* Not a failure of the order: the program does not load here. Say so. */
                printf("  (BPF does not load on this machine: %s)\n", c.reason);
                ASSERT_TRUE(strstr(c.reason, "BPF unavailable: ") || strstr(c.reason, "no BPF"));
                return;
        }
        ASSERT_TRUE(c.has_bpf && !c.has_netlink && !c.has_timer);
        ASSERT_TRUE(strncmp(c.reason, "BPF exec tracepoint (", 21) == 0);
}

TEST(source_auto_falls_back_to_the_proc_connector) {
        Choice c;

        if (!initial_pidns) {
                printf("  (skipped: the proc connector needs the initial pid namespace)\n");
                return;
        }
        choose(SOURCE_AUTO, no_bpf, ELEMENTSOF(no_bpf), &c);
        ASSERT_EQ(c.r, 0);
        ASSERT_EQ(c.source, SOURCE_NETLINK);
        ASSERT_TRUE(c.has_netlink && !c.has_bpf && !c.has_timer);
        ASSERT_TRUE(strncmp(c.reason, "netlink proc connector (BPF unavailable: ", 41) == 0);
}

TEST(source_auto_falls_back_to_scanning) {
        Choice c;

        choose(SOURCE_AUTO, nothing, ELEMENTSOF(nothing), &c);
        ASSERT_EQ(c.r, 0);
        ASSERT_EQ(c.source, SOURCE_SCAN);
        ASSERT_TRUE(c.has_timer && !c.has_bpf && !c.has_netlink);
        ASSERT_STREQ(c.reason, "periodic /proc scan every 2000 ms (no BPF, no proc connector)");
}

/* A source asked for by name is that one or none: no fallback behind the administrator's back. */
TEST(source_asked_for_does_not_fall_back) {
        Choice c;

        choose(SOURCE_BPF, nothing, ELEMENTSOF(nothing), &c);
        ASSERT_TRUE(c.r < 0);
        ASSERT_TRUE(!c.has_bpf && !c.has_netlink && !c.has_timer);
        ASSERT_EQ(c.source, _SOURCE_INVALID);
        choose(SOURCE_NETLINK, nothing, ELEMENTSOF(nothing), &c);
        ASSERT_TRUE(c.r < 0);
        ASSERT_TRUE(!c.has_bpf && !c.has_netlink && !c.has_timer);
        ASSERT_EQ(c.source, _SOURCE_INVALID);
}
