/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* /proc parsing on a fake tree and on the real /proc of this process. */

#include <fcntl.h>
#include <sys/stat.h>

#include "proc.h"
#include "tests.h"
#include "util.h"

TEST(stat_parse) {
        ProcStat st;

        ASSERT_EQ(proc_stat_parse("42 (a) b) c) S 7 42 42 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 3 0 12345 100 200",
                                  &st), 0);
        ASSERT_STREQ(st.comm, "a) b) c");
        ASSERT_EQ(st.state, 'S');
        ASSERT_EQ(st.ppid, 7);
        ASSERT_EQ(st.flags, 4194560);
        ASSERT_EQ(st.num_threads, 3);
        ASSERT_EQ(st.start_time, 12345);
        ASSERT_TRUE(proc_stat_parse("42 (x S 7", &st) < 0);
        ASSERT_TRUE(proc_stat_parse("42 (x) S 7 1 2", &st) < 0);
}

TEST(cgroup_parse) {
        char *p;

        ASSERT_EQ(proc_cgroup_parse("12:cpu,cpuacct:/a\n1:name=systemd:/user.slice/x.scope\n0::/user.slice/x.scope\n",
                                    &p), 0);
        ASSERT_STREQ(p, "/user.slice/x.scope");
        free(p);
        /* hybrid host, process outside systemd's unified tree: take name=systemd */
        ASSERT_EQ(proc_cgroup_parse("1:name=systemd:/system.slice/y.service\n0::/\n", &p), 0);
        ASSERT_STREQ(p, "/system.slice/y.service");
        free(p);
        ASSERT_EQ(proc_cgroup_parse("0::/\n", &p), 0);
        ASSERT_STREQ(p, "/");
        free(p);
        ASSERT_EQ(proc_cgroup_parse("3:cpu:/x\n", &p), -ENODATA);
}

/* A /proc/PID/stat of a process in state S whose pgrp and session are its own. */
static void fake_stat(const char *d, int pid, const char *comm, int ppid, int threads, unsigned long long start) {
        char rel[32], line[256];

        snprintf(rel, sizeof(rel), "%d/stat", pid);
        snprintf(line, sizeof(line), "%d (%s) S %d %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 %d 0 %llu 0 0\n", pid, comm,
                 ppid, pid, pid, threads, start);
        test_write(d, rel, line);
}

TEST(fake_tree) {
        const char *t = test_tmpdir();
        _cleanup_(closep) int fd = -1;
        char *d = test_path(t, "proc");
        ProcTask p;
        pid_t *pids = NULL;
        int n;

        fake_stat(d, 100, "game", 50, 2, 777);
        test_write(d, "100/cmdline", "wine\0C:/game.exe\0");
        test_write(d, "100/status", "Name:\tgame\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n");
        test_write(d, "100/cgroup", "0::/game.slice/run-1.scope\n");
        test_write(d, "100/task/100/stat", "x");
        test_write(d, "100/task/101/stat", "x");
        fake_stat(d, 50, "steam", 1, 1, 5);
        ASSERT_EQ(symlink("/opt/game/game", test_path(d, "100/exe")), 0);

        fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(proc_task_read(fd, 100, PROC_ALL & ~PROC_NAMES, &p), 0);
        ASSERT_STREQ(p.stat.comm, "game");
        ASSERT_STREQ(p.exe, "/opt/game/game");
        ASSERT_EQ(strv_length(p.argv), 1); /* the fake cmdline was cut at the first NUL by test_write */
        ASSERT_STREQ(p.argv[0], "wine");
        ASSERT_EQ(p.uid, 1000);
        ASSERT_EQ(p.gid, 100);
        ASSERT_STREQ(p.parent_comm, "steam");
        ASSERT_STREQ(p.cgroup, "/game.slice/run-1.scope");
        ASSERT_EQ(p.stat.start_time, 777);
        proc_task_done(&p);

        {
                /* A thread's status names its process; a status without Tgid: (none on Linux) is its own. */
                ProcIds ids;

                test_write(d, "101/status", "Name:\tworker\nTgid:\t100\nPid:\t101\nUid:\t1000\t1000\t1000\t1000\n"
                                            "Gid:\t100\t100\t100\t100\n");
                ASSERT_EQ(proc_ids_read(fd, 101, &ids), 0);
                ASSERT_EQ(ids.tgid, 100);
                ASSERT_EQ(ids.ruid, 1000);
                ASSERT_EQ(proc_ids_read(fd, 100, &ids), 0);
                ASSERT_EQ(ids.tgid, 100);
                test_write(d, "102/status", "Name:\tx\nTgid:\tnope\nUid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\n");
                ASSERT_EQ(proc_ids_read(fd, 102, &ids), -EINVAL);
        }

        ASSERT_EQ(proc_task_read(fd, 999, PROC_ALL, &p), -ESRCH);
        n = proc_list_tasks(fd, 100, &pids);
        ASSERT_EQ(n, 2);
        free(pids);
        ASSERT_EQ(proc_list_tasks(fd, 999, &pids), -ESRCH);
}

/* The chain of parents: nearest first, ended by a reused pid, a loop, the bound, or a missing process. */
TEST(ancestors) {
        const char *t = test_tmpdir();
        _cleanup_(closep) int fd = -1;
        char *d = test_path(t, "proc-anc");
        TaskAncestor *a = NULL;
        size_t n = 0;
        ProcTask p;

        fake_stat(d, 300, "game", 200, 1, 900);
        fake_stat(d, 200, "reaper", 100, 1, 800);
        fake_stat(d, 100, "steam", 1, 1, 700);
        fake_stat(d, 1, "systemd", 0, 1, 1);
        ASSERT_EQ(symlink("/usr/lib/steam/reaper", test_path(d, "200/exe")), 0);
        fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);

        ASSERT_EQ(proc_task_read(fd, 300, PROC_ANCESTORS, &p), 0);
        ASSERT_EQ(p.n_ancestors, 3);
        ASSERT_EQ(p.ancestors[0].pid, 200);
        ASSERT_STREQ(p.ancestors[0].comm, "reaper");
        ASSERT_STREQ(p.ancestors[0].exe, "/usr/lib/steam/reaper");
        ASSERT_EQ(p.ancestors[1].pid, 100);
        ASSERT_TRUE(p.ancestors[1].exe == NULL); /* unreadable exe: comm only */
        ASSERT_EQ(p.ancestors[2].pid, 1);
        {
                TaskInfo ti;
                _cleanup_(freep) char *s = NULL;

                proc_task_to_info(&p, &ti);
                ASSERT_EQ(ti.n_ancestors, 3);
                s = task_ancestors_format(&ti);
                ASSERT_STREQ(s, "reaper[200] <- steam[100] <- systemd[1]");
        }
        proc_task_done(&p);

        /* bounded: only the nearest max */
        ASSERT_EQ(proc_ancestors_read(fd, 200, 900, 2, &a, &n), 0);
        ASSERT_EQ(n, 2);
        ASSERT_EQ(a[1].pid, 100);
        task_ancestors_free(a, n);

        /* pid 100 died and a later process got its pid: it started after its "child", the chain ends */
        fake_stat(d, 100, "impostor", 1, 1, 850);
        ASSERT_EQ(proc_ancestors_read(fd, 200, 900, 32, &a, &n), 0);
        ASSERT_EQ(n, 1);
        ASSERT_STREQ(a[0].comm, "reaper");
        task_ancestors_free(a, n);

        /* a loop in ppid (equal start times let it through the age check): each pid once */
        fake_stat(d, 100, "steam", 200, 1, 800);
        ASSERT_EQ(proc_ancestors_read(fd, 200, 900, 32, &a, &n), 0);
        ASSERT_EQ(n, 2);
        task_ancestors_free(a, n);

        /* a parent /proc does not have: an empty chain, not an error */
        ASSERT_EQ(proc_ancestors_read(fd, 4242, 900, 32, &a, &n), 0);
        ASSERT_EQ(n, 0);
        task_ancestors_free(a, n);
}

TEST(real_self) {
        _cleanup_(closep) int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ProcTask p;
        pid_t *pids = NULL;
        int n;

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(proc_task_read(fd, getpid(), PROC_ALL, &p), 0);
        ASSERT_STREQ(p.stat.comm, "test-proc");
        ASSERT_TRUE(p.exe && strstr(p.exe, "test-proc"));
        ASSERT_TRUE(p.argv && strstr(p.argv[0], "test-proc"));
        ASSERT_EQ(p.uid, getuid());
        ASSERT_EQ(p.stat.num_threads, 1);
        ASSERT_TRUE(p.cgroup && p.cgroup[0] == '/');
        {
                /* The main thread's own stat says the same about the process. */
                ProcTask q;

                ASSERT_EQ(proc_task_read(fd, getpid(), PROC_IDS | PROC_MAIN_STAT, &q), 0);
                ASSERT_EQ(q.stat.start_time, p.stat.start_time);
                ASSERT_EQ(q.stat.num_threads, 1);
                ASSERT_STREQ(q.stat.comm, "test-proc");
                proc_task_done(&q);
        }
        proc_task_done(&p);
        n = proc_list_pids(fd, &pids);
        ASSERT_TRUE(n > 1);
        free(pids);
}
