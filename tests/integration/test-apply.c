/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Integration test of the scheduler layer on this host's real kernel: the
 * probe, latnicectl run/get/set, every thread of a process, threads born
 * during an apply, realtime threads left alone, foreign changes kept by
 * restore, and gone or reused pids never touched. Target processes are
 * tests/helper-threads and sleep(1). Skips (77) with a reason where the
 * kernel cannot do it; no timing thresholds anywhere.
 */

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "applied.h"
#include "cgroup.h"
#include "proc.h"
#include "sched.h"
#include "tests.h"
#include "util.h"

static const char *latnicectl, *helper;
static SchedProbe probe;
static int proc_fd = -1;

typedef struct Child {
        pid_t pid;
        FILE *out; /* its stdout */
        int in;    /* its stdin */
} Child;

static void nap(void) {
        struct timespec ts = { 0, 5 * 1000 * 1000 };

        (void) nanosleep(&ts, NULL);
}

static Child spawn(char * const *argv) {
        int p[2], q[2];
        Child c;

        ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
        ASSERT_EQ(pipe2(q, O_CLOEXEC), 0);
        c.pid = fork();
        ASSERT_TRUE(c.pid >= 0);
        if (c.pid == 0) {
                /* no orphans if the test aborts */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                dup2(p[1], 1);
                dup2(q[0], 0);
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        close(q[0]);
        c.in = q[1];
        c.out = fdopen(p[0], "r");
        ASSERT_TRUE(c.out);
        return c;
}

static void expect_line(Child *c, const char *want) {
        char line[256];

        ASSERT_TRUE(fgets(line, sizeof(line), c->out));
        line[strcspn(line, "\n")] = 0;
        ASSERT_STREQ(line, want);
}

/* chain > 0: --chain K; chain < 0: --spawner. */
static Child spawn_helper(int n_threads, int chain) {
        char n[16], k[16];
        char *argv[] = { (char *) helper, n, (char *) "--chain", k, NULL };
        Child c;

        snprintf(n, sizeof(n), "%d", n_threads);
        snprintf(k, sizeof(k), "%d", chain);
        if (chain == 0)
                argv[2] = NULL;
        else if (chain < 0) {
                argv[2] = (char *) "--spawner";
                argv[3] = NULL;
        }
        c = spawn(argv);
        expect_line(&c, "ready");
        return c;
}

static void reap(Child *c) {
        int status;

        if (c->pid > 0) {
                (void) kill(c->pid, SIGKILL);
                (void) waitpid(c->pid, &status, 0);
        }
        if (c->out)
                fclose(c->out);
        if (c->in > 0)
                close(c->in);
        *c = (Child) {};
}

static uint64_t start_time_of(pid_t pid) {
        ProcStat st;

        ASSERT_EQ(proc_stat_read_pid(proc_fd, pid, 0, &st), 0);
        return st.start_time;
}

/* se.slice from /proc/PID/task/TID/sched: what the scheduler really uses. */
static uint64_t se_slice(pid_t pid, pid_t tid) {
        _cleanup_(freep) char *buf = NULL;
        char path[64], *p;

        snprintf(path, sizeof(path), "%d/task/%d/sched", (int) pid, (int) tid);
        ASSERT_EQ(read_full_file(proc_fd, path, 64 * 1024, &buf, NULL), 0);
        p = strstr(buf, "\nse.slice");
        ASSERT_TRUE(p);
        p = strchr(p, ':');
        ASSERT_TRUE(p);
        return strtoull(p + 1, NULL, 10);
}

static int list_threads(pid_t pid, pid_t **ret) {
        int n = proc_list_tasks(proc_fd, pid, ret);

        ASSERT_TRUE(n > 0);
        return n;
}

/* Every thread of pid has this slice (0: the default). */
static void expect_all(pid_t pid, uint64_t raw) {
        _cleanup_(freep) pid_t *tids = NULL;
        int n = list_threads(pid, &tids);

        for (int i = 0; i < n; i++)
                ASSERT_EQ(se_slice(pid, tids[i]), raw ? raw : probe.base_slice_ns);
}

TEST(probe) {
        sched_probe("/sys/kernel/btf/vmlinux", &probe);
        printf("probe: %s: %s\n", backend_to_string(probe.backend), probe.reason);
        if (probe.backend != BACKEND_EEVDF_SLICE) {
                printf("SKIP: this kernel has no EEVDF custom slices (backend %s), the tests below need them\n",
                       backend_to_string(probe.backend));
                exit(TEST_SKIP);
        }
        ASSERT_TRUE(probe.base_slice_ns >= LATNICE_SLICE_MIN_NS);
        /* the probe leaves the caller alone */
        {
                ThreadSched t;

                ASSERT_EQ(sched_thread_get(&probe, gettid(), &t), 0);
                ASSERT_EQ(t.attr.sched_runtime, probe.base_slice_ns);
        }
        /* a real kernel's BTF has task_struct; mainline 6.18 has no latency field */
        ASSERT_TRUE(sched_btf_has_latency_field("/sys/kernel/btf/vmlinux") >= 0);
}

static int run_ctl(char **argv, char **ret_out) {
        _cleanup_(freep) char *out = NULL;
        size_t size = 0, alloc = 0;
        int p[2], status;
        pid_t pid;

        ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                dup2(p[1], 1);
                dup2(p[1], 2);
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        for (;;) {
                ssize_t k;

                if (size + 1024 > alloc) {
                        char *n;

                        alloc = alloc ? alloc * 2 : 4096;
                        n = realloc(out, alloc);
                        ASSERT_TRUE(n);
                        out = n;
                }
                k = read(p[0], out + size, alloc - size - 1);
                ASSERT_TRUE(k >= 0);
                if (k == 0)
                        break;
                size += (size_t) k;
        }
        out[size] = 0;
        close(p[0]);
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        printf("$ %s %s ... -> %d\n%s", argv[0], argv[1], WEXITSTATUS(status), out);
        if (ret_out)
                *ret_out = TAKE_PTR(out);
        return WEXITSTATUS(status);
}

TEST(ctl_run) {
        char *argv[] = { (char *) latnicectl, (char *) "run", (char *) "-l", (char *) "-20", (char *) "--",
                         (char *) "/bin/sleep", (char *) "30", NULL };
        uint64_t want = latnice_to_slice_ns(-20, probe.base_slice_ns);
        _cleanup_(freep) char *out = NULL;
        char pidbuf[16], comm[64] = "";
        Child c;
        int i;

        c = spawn(argv);
        /* wait for latnicectl to become sleep (bounded: a liveness guard, not a timing check) */
        for (i = 0; i < 2000; i++) {
                _cleanup_(freep) char *b = NULL;
                char path[32];

                snprintf(path, sizeof(path), "%d/comm", (int) c.pid);
                if (read_full_file(proc_fd, path, 64, &b, NULL) == 0) {
                        snprintf(comm, sizeof(comm), "%s", b);
                        if (strcmp(comm, "sleep\n") == 0)
                                break;
                }
                nap();
        }
        ASSERT_STREQ(comm, "sleep\n");
        ASSERT_EQ(se_slice(c.pid, c.pid), want);

        snprintf(pidbuf, sizeof(pidbuf), "%d", (int) c.pid);
        {
                char *gargv[] = { (char *) latnicectl, (char *) "get", pidbuf, NULL };
                char want_ln[32];

                ASSERT_EQ(run_ctl(gargv, &out), 0);
                ASSERT_TRUE(strstr(out, "sleep"));
                ASSERT_TRUE(strstr(out, "0.100 ms"));
                snprintf(want_ln, sizeof(want_ln), " -20..%d ", latnice_from_slice_ns(want, probe.base_slice_ns));
                ASSERT_TRUE(strstr(out, want_ln));
                ASSERT_TRUE(strstr(out, "ours: unknown (daemon not queried)"));
        }
        reap(&c);

        /* a value that is not clamped reads back exactly */
        {
                char *argv2[] = { (char *) latnicectl, (char *) "run", (char *) "-l", (char *) "7", (char *) "--",
                                  (char *) "/bin/sh", (char *) "-c",
                                  (char *) "exec cat /proc/self/sched", NULL };
                _cleanup_(freep) char *o = NULL;
                char line[96];

                ASSERT_EQ(run_ctl(argv2, &o), 0);
                snprintf(line, sizeof(line), "%llu", (unsigned long long) latnice_to_slice_ns(7, probe.base_slice_ns));
                ASSERT_TRUE(strstr(strstr(o, "se.slice"), line));
        }
}

TEST(eight_threads) {
        Child c = spawn_helper(8, 0);
        ApplyResult res;

        ASSERT_EQ(sched_apply_process(&probe, proc_fd, c.pid, start_time_of(c.pid), -7, THREADS_ALL, false, &res), 0);
        ASSERT_EQ(res.n_threads, 8);
        ASSERT_EQ(res.n_applied, 8);
        ASSERT_EQ(res.n_failed + res.n_gone + res.n_realtime, 0);
        expect_all(c.pid, latnice_to_slice_ns(-7, probe.base_slice_ns));

        /* again with another value, through the fresh_exec path */
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, c.pid, start_time_of(c.pid), 3, THREADS_ALL, true, &res), 0);
        ASSERT_EQ(res.n_applied, 8);
        expect_all(c.pid, latnice_to_slice_ns(3, probe.base_slice_ns));

        /* THREADS_MAIN: only the leader */
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, c.pid, start_time_of(c.pid), -2, THREADS_MAIN, false, &res), 0);
        ASSERT_EQ(res.n_threads, 1);
        ASSERT_EQ(se_slice(c.pid, c.pid), latnice_to_slice_ns(-2, probe.base_slice_ns));

        /* back to the default: raw 0 */
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, c.pid, 0, 0, THREADS_ALL, false, &res), 0);
        expect_all(c.pid, 0);
        reap(&c);

        /* latnicectl set on all threads, with the same check */
        c = spawn_helper(8, 0);
        {
                char pidbuf[16];
                char *argv[] = { (char *) latnicectl, (char *) "set", (char *) "-l", (char *) "4", (char *) "-p",
                                 pidbuf, NULL };
                _cleanup_(freep) char *out = NULL;

                snprintf(pidbuf, sizeof(pidbuf), "%d", (int) c.pid);
                ASSERT_EQ(run_ctl(argv, &out), 0);
                ASSERT_TRUE(strstr(out, "on 8 of 8 threads"));
                expect_all(c.pid, latnice_to_slice_ns(4, probe.base_slice_ns));
        }
        reap(&c);
}

TEST(threads_born_during_apply) {
        _cleanup_(freep) pid_t *tids = NULL;
        const int n_start = 50, chain = 60;
        Child c = spawn_helper(n_start, chain);
        ApplyResult res;
        int n;

        /* The helper's watcher starts a chain of threads the moment the
         * leader's slice changes, i.e. while we are still applying. */
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, c.pid, start_time_of(c.pid), -4, THREADS_ALL, false, &res), 0);
        expect_line(&c, "chain-done");
        n = list_threads(c.pid, &tids);
        ASSERT_EQ(n, n_start + chain);
        /* Which way the race went is the kernel's business; the outcome
         * must be the same either way. */
        printf("chain: the apply visited %u threads (%u born during it), %d exist now\n", res.n_threads,
               res.n_threads - (unsigned) n_start, n);
        expect_all(c.pid, latnice_to_slice_ns(-4, probe.base_slice_ns));
        reap(&c);
}

typedef struct WalkCtx {
        Child *c;
        uint64_t raw;
        unsigned n_visited;
        pid_t spawned;
} WalkCtx;

static int walk_apply(pid_t tid, void *userdata) {
        WalkCtx *w = userdata;

        w->n_visited++;
        ASSERT_EQ(sched_thread_set_raw(&probe, tid, w->raw, NULL), 0);
        if (tid == w->spawned)
                return 0;
        if (w->spawned == 0) {
                char line[64];
                int t;

                /* While the walk is on its first thread, the last thread
                 * (not visited yet, old value) makes a new one. */
                ASSERT_EQ(write(w->c->in, "x", 1), 1);
                ASSERT_TRUE(fgets(line, sizeof(line), w->c->out));
                ASSERT_EQ(sscanf(line, "spawned %d", &t), 1);
                w->spawned = (pid_t) t;
        }
        return 0;
}

TEST(walk_catches_new_thread) {
        Child c = spawn_helper(5, -1);
        WalkCtx w = { .c = &c, .raw = latnice_to_slice_ns(-8, probe.base_slice_ns) };
        _cleanup_(closep) int dir_fd = -1;
        char path[16];

        snprintf(path, sizeof(path), "%d", (int) c.pid);
        dir_fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dir_fd >= 0);
        ASSERT_EQ(sched_walk_threads(dir_fd, NULL, 0, walk_apply, &w), 0);
        ASSERT_TRUE(w.spawned > 0);
        /* born from a thread the walk had not reached: it started with the
         * old value, and only a later listing could catch it */
        ASSERT_EQ(w.n_visited, 6);
        expect_all(c.pid, w.raw);
        reap(&c);
}

/* chrt POLICY -p PRIORITY TID, which must succeed (can_make_fifo() said it works here). */
static void chrt_thread(const char *policy, const char *priority, pid_t tid) {
        char tidbuf[16];
        int status;
        pid_t pid;

        snprintf(tidbuf, sizeof(tidbuf), "%d", (int) tid);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                execlp("chrt", "chrt", policy, "-p", priority, tidbuf, (char *) NULL);
                _exit(127);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(fifo_left_alone) {
        _cleanup_(freep) pid_t *tids = NULL;
        Child c = spawn_helper(4, 0);
        ThreadSched before, after;
        ApplyResult res;
        pid_t rt;
        int n;

        n = list_threads(c.pid, &tids);
        ASSERT_EQ(n, 4);
        rt = tids[0] == c.pid ? tids[1] : tids[0];
        chrt_thread("-f", "10", rt);
        ASSERT_EQ(sched_thread_get(&probe, rt, &before), 0);
        ASSERT_EQ(before.attr.sched_policy, LATNICE_SCHED_FIFO);
        ASSERT_TRUE(before.realtime);

        ASSERT_EQ(sched_apply_process(&probe, proc_fd, c.pid, start_time_of(c.pid), -9, THREADS_ALL, false, &res), 0);
        ASSERT_EQ(res.n_threads, 4);
        ASSERT_EQ(res.n_applied, 3);
        ASSERT_EQ(res.n_realtime, 1);
        ASSERT_EQ(sched_thread_get(&probe, rt, &after), 0);
        ASSERT_EQ(after.attr.sched_policy, LATNICE_SCHED_FIFO);
        ASSERT_EQ(after.attr.sched_priority, 10);
        ASSERT_EQ(sched_thread_set(&probe, rt, -9, NULL), -EBUSY);
        for (int i = 0; i < n; i++)
                if (tids[i] != rt)
                        ASSERT_EQ(se_slice(c.pid, tids[i]), latnice_to_slice_ns(-9, probe.base_slice_ns));
        /* Back to SCHED_OTHER, the thread shows it never got a custom slice
         * (a realtime task's /proc/.../sched has no se.slice). */
        chrt_thread("-o", "0", rt);
        ASSERT_EQ(se_slice(c.pid, rt), probe.base_slice_ns);
        reap(&c);
}

TEST(keep_nice_and_reset_on_fork) {
        Child c = spawn_helper(1, 0);
        struct latnice_sched_attr a = {
                .size = LATNICE_SCHED_ATTR_SIZE_VER1,
                .sched_policy = LATNICE_SCHED_BATCH,
                .sched_flags = LATNICE_SCHED_FLAG_RESET_ON_FORK,
                .sched_nice = 6,
        };
        ThreadSched t;

        ASSERT_EQ(latnice_sched_setattr(c.pid, &a, 0), 0);
        ASSERT_EQ(sched_thread_set(&probe, c.pid, -6, NULL), 0);
        ASSERT_EQ(sched_thread_get(&probe, c.pid, &t), 0);
        ASSERT_EQ(t.attr.sched_policy, LATNICE_SCHED_BATCH);
        ASSERT_EQ(t.attr.sched_nice, 6);
        ASSERT_TRUE(t.attr.sched_flags & LATNICE_SCHED_FLAG_RESET_ON_FORK);
        ASSERT_EQ(t.latency_nice, -6);
        ASSERT_EQ(se_slice(c.pid, c.pid), latnice_to_slice_ns(-6, probe.base_slice_ns));
        reap(&c);
}

TEST(restore_keeps_foreign) {
        _cleanup_(freep) pid_t *tids = NULL;
        Child c = spawn_helper(4, 0);
        uint64_t ours = latnice_to_slice_ns(-5, probe.base_slice_ns), foreign = 5000000;
        ApplyResult res;
        AppliedProcess e;
        pid_t other;
        int n;

        n = list_threads(c.pid, &tids);
        other = tids[0] == c.pid ? tids[1] : tids[0];
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, c.pid, start_time_of(c.pid), -5, THREADS_ALL, false, &res), 0);
        e = (AppliedProcess) {
                .pid = c.pid,
                .start_time = start_time_of(c.pid),
                .latency_nice = -5,
                .raw = sched_raw_value(&probe, -5),
                .before = 0,
                .before_raw = 0,
        };
        ASSERT_EQ(e.raw, ours);
        ASSERT_EQ(applied_is_ours(&probe, proc_fd, &e), 1);

        /* somebody else sets one thread: still ours on the main thread */
        ASSERT_EQ(sched_thread_set_raw(&probe, other, foreign, NULL), 0);
        ASSERT_EQ(applied_is_ours(&probe, proc_fd, &e), 1);
        ASSERT_EQ(applied_restore(&probe, proc_fd, &e), n - 1);
        ASSERT_EQ(se_slice(c.pid, other), foreign);
        for (int i = 0; i < n; i++)
                if (tids[i] != other)
                        ASSERT_EQ(se_slice(c.pid, tids[i]), probe.base_slice_ns);

        /* and a foreign change on the main thread makes it not ours */
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, c.pid, e.start_time, -5, THREADS_ALL, false, &res), 0);
        ASSERT_EQ(sched_thread_set_raw(&probe, c.pid, foreign, NULL), 0);
        ASSERT_EQ(applied_is_ours(&probe, proc_fd, &e), 0);
        ASSERT_EQ(applied_restore(&probe, proc_fd, &e), n - 1);
        ASSERT_EQ(se_slice(c.pid, c.pid), foreign);

        /* restore puts back a slice that is not on the grid */
        e.before_raw = 2345678;
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, c.pid, e.start_time, -5, THREADS_ALL, false, &res), 0);
        ASSERT_EQ(applied_restore(&probe, proc_fd, &e), n);
        expect_all(c.pid, 2345678);
        reap(&c);
}

TEST(gone_and_reused) {
        Child c = spawn_helper(2, 0);
        pid_t pid = c.pid, zpid;
        uint64_t st = start_time_of(pid);
        AppliedProcess e = { .pid = pid, .start_time = st, .raw = sched_raw_value(&probe, 3) };
        ApplyResult res;
        ThreadSched t;

        /* pid reused: a start time that does not match means hands off */
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, pid, st + 1, 3, THREADS_ALL, false, &res), -ESRCH);
        ASSERT_EQ(res.n_applied, 0);
        expect_all(pid, 0);
        /* fresh_exec sets first: it must put the old value back */
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, pid, st + 1, 3, THREADS_ALL, true, &res), -ESRCH);
        expect_all(pid, 0);
        e.start_time = st + 1;
        ASSERT_EQ(applied_is_ours(&probe, proc_fd, &e), -ESRCH);
        ASSERT_EQ(applied_restore(&probe, proc_fd, &e), -ESRCH);
        e.start_time = st;

        /* gone between listing and apply */
        reap(&c);
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, pid, st, 3, THREADS_ALL, false, &res), -ESRCH);
        ASSERT_EQ(sched_apply_process(&probe, proc_fd, pid, st, 3, THREADS_ALL, true, &res), -ESRCH);
        ASSERT_EQ(sched_thread_set(&probe, pid, 3, NULL), -ESRCH);
        ASSERT_EQ(sched_thread_get(&probe, pid, &t), -ESRCH);
        ASSERT_EQ(applied_is_ours(&probe, proc_fd, &e), -ESRCH);
        ASSERT_EQ(applied_restore(&probe, proc_fd, &e), -ESRCH);

        /* a zombie: exited, not reaped */
        zpid = fork();
        ASSERT_TRUE(zpid >= 0);
        if (zpid == 0)
                _exit(0);
        {
                siginfo_t si;
                char pidbuf[16];
                char *argv[] = { (char *) latnicectl, (char *) "set", (char *) "-l", (char *) "1", pidbuf, NULL };

                ASSERT_EQ(waitid(P_PID, (id_t) zpid, &si, WEXITED | WNOWAIT), 0);
                ASSERT_EQ(sched_apply_process(&probe, proc_fd, zpid, 0, 3, THREADS_ALL, false, &res), -ESRCH);
                snprintf(pidbuf, sizeof(pidbuf), "%d", (int) zpid);
                ASSERT_EQ(run_ctl(argv, NULL), 3);
                ASSERT_EQ(waitpid(zpid, NULL, 0), zpid);
        }
}

TEST(ctl_errors) {
        char pidbuf[16], *out = NULL;
        Child c;

#define CTL(...) ((char *[]) { (char *) latnicectl, __VA_ARGS__, NULL })
        ASSERT_EQ(run_ctl(CTL("set", "-l", "0", "-p", "0"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("set", "-l", "0", "-p", "-5"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("set", "-l", "0", "-p", "12abc"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("set", "-l", "20", "-p", "1"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("set", "-l", "-21", "-p", "1"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("set", "-l", "x", "-p", "1"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("set", "-p", "1"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("set", "-l", "1"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("get"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("get", "0"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("run", "-l", "1"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("run", "-l", "99", "--", "/bin/true"), NULL), 2);
        ASSERT_EQ(run_ctl(CTL("run", "-l", "1", "--", "/nonexistent/x"), NULL), 127);
        ASSERT_EQ(run_ctl(CTL("run", "--help"), NULL), 0);
        ASSERT_EQ(run_ctl(CTL("get", "--help"), NULL), 0);
        ASSERT_EQ(run_ctl(CTL("set", "--help"), NULL), 0);

        /* kernel thread: kthreadd is pid 2 outside a pid namespace */
        ASSERT_EQ(run_ctl(CTL("set", "-l", "1", "-p", "2"), &out), 1);
        ASSERT_TRUE(strstr(out, "Failed to set latency nice on PID 2 ("));
        ASSERT_TRUE(strstr(out, "): a kernel thread, refused."));
        free(out);

        /* vanished pid, and nothing applied to the good one before it is reported */
        c = spawn_helper(1, 0);
        snprintf(pidbuf, sizeof(pidbuf), "%d", (int) c.pid);
        reap(&c);
        ASSERT_EQ(run_ctl(CTL("get", pidbuf), NULL), 3);
        c = spawn_helper(2, 0);
        {
                char good[16], gone[16];
                Child g = spawn_helper(1, 0);

                snprintf(gone, sizeof(gone), "%d", (int) g.pid);
                reap(&g);
                snprintf(good, sizeof(good), "%d", (int) c.pid);
                ASSERT_EQ(run_ctl(CTL("set", "-l", "2", "-p", gone, "-p", good), &out), 3);
                ASSERT_TRUE(strstr(out, "Failed to set latency nice on PID "));
                ASSERT_TRUE(strstr(out, ": no such process"));
                ASSERT_TRUE(strstr(out, "on 2 of 2 threads"));
                free(out);
                expect_all(c.pid, latnice_to_slice_ns(2, probe.base_slice_ns));
        }

        /* permission: an unprivileged user on root's process */
        snprintf(pidbuf, sizeof(pidbuf), "%d", (int) c.pid);
        {
                char *argv[] = { (char *) "/usr/bin/setpriv", (char *) "--reuid=65534", (char *) "--regid=65534",
                                 (char *) "--clear-groups", (char *) latnicectl, (char *) "set", (char *) "-l",
                                 (char *) "5", (char *) "-p", pidbuf, NULL };
                int r = run_ctl(argv, &out);

                if (r == 126 || r == 127)
                        printf("NOTE: permission case not run: setpriv or %s not executable as nobody (exit %d)\n",
                               latnicectl, r);
                else {
                        ASSERT_EQ(r, 5);
                        ASSERT_TRUE(strstr(out, "another user"));
                        ASSERT_TRUE(strstr(out, "CAP_SYS_NICE"));
                        expect_all(c.pid, latnice_to_slice_ns(2, probe.base_slice_ns));
                }
                free(out);
        }
        reap(&c);
#undef CTL
}

TEST(cgroup_host) {
        CGroupMounts m;
        int v, r;

        r = cgroup_mounts_find("/proc/self/mountinfo", &m);
        if (r == -ENOENT) {
                printf("NOTE: no cgroup mounts, cgroup host checks not run\n");
                return;
        }
        ASSERT_EQ(r, 0);
        ASSERT_TRUE(cgroup_mounts_get(&m, CGROUP_HIER_CPU));
        /* mainline has no latency knob: -EOPNOTSUPP, never a made-up value */
        r = cgroup_latency_nice_get(&m, "/", &v);
        printf("cgroup: cpu hierarchy %s, %s on /: %s\n", cgroup_mounts_get(&m, CGROUP_HIER_CPU)->path,
               cgroup_latency_knob(&m), r < 0 ? strerror(-r) : "present");
        ASSERT_TRUE(r == -EOPNOTSUPP || r == 0);
        ASSERT_EQ(cgroup_latency_nice_get(&m, "/latnice-does-not-exist.slice", &v), -ENOENT);
        {
                _cleanup_(freep) pid_t *pids = NULL;
                bool self = false;
                int n;

                /* the root of systemd's hierarchy holds everybody, us included */
                n = cgroup_list_pids(&m, CGROUP_HIER_SYSTEMD, "/", &pids);
                ASSERT_TRUE(n > 0);
                for (int i = 0; i < n; i++)
                        self = self || pids[i] == getpid();
                ASSERT_TRUE(self);
        }
        cgroup_mounts_done(&m);
}

/* Can a thread of ours become SCHED_FIFO here (root, and an RT budget in our cgroup)? Asked before any test runs. */
static bool can_make_fifo(void) {
        pid_t pid = fork();
        int status;

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                struct sched_param sp = { .sched_priority = 10 };

                _exit(sched_setscheduler(0, SCHED_FIFO, &sp) < 0 ? 1 : 0);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 && access("/usr/bin/chrt", X_OK) == 0;
}

TEST_SETUP() {
        latnicectl = getenv("LATNICECTL");
        helper = getenv("LATNICE_HELPER_THREADS");
        if (!latnicectl || !helper) {
                printf("SKIP: LATNICECTL and LATNICE_HELPER_THREADS must name the built binaries "
                       "(run via meson test)\n");
                return TEST_SKIP;
        }
        proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(proc_fd >= 0);
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (!can_make_fifo()) {
                /* All or nothing: a skip must not hide tests that ran and passed, nor ones that never ran. */
                printf("SKIP: cannot make a SCHED_FIFO thread here (not root, no RT budget in this cgroup, or no "
                       "chrt); the realtime checks need one\n");
                return TEST_SKIP;
        }
        return 0;
}
