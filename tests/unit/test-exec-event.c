/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * task_info_from_event() on hand-built ring buffer records: what a record
 * says reaches the TaskInfo, and a record that lies about its lengths or
 * leaves a string unterminated is refused instead of read past its end.
 */

#include <stdalign.h>

#include "exec-event.h"
#include "tests.h"
#include "util.h"

#define NS_PER_TICK 10000000ULL

/* A record as the BPF side builds it: the fixed part, the execve() path, then argv words. */
static size_t build(struct latnice_event_buf *b, const char *exe, const char *exe_base, const char *args,
                    size_t args_len) {
        size_t exe_len = strlen(exe) + 1;

        memset(b, 0, sizeof(*b));
        b->ev = (struct latnice_event) {
                .type = LATNICE_EVENT_EXEC,
                .pid = 4242,
                .ppid = 1,
                .uid = 1000,
                .gid = 100,
                .exe_len = (uint16_t) exe_len,
                .start_boottime = 777 * NS_PER_TICK + 5,
                .parent_start_boottime = 5 * NS_PER_TICK,
                .cgroup_id = 99,
                .ktime = 123456,
                .exe_ino = 12,
                .exe_dev = (8 << 20) | 1,
        };
        snprintf(b->ev.comm, sizeof(b->ev.comm), "game");
        snprintf(b->ev.parent_comm, sizeof(b->ev.parent_comm), "steam");
        snprintf(b->ev.exe_base, sizeof(b->ev.exe_base), "%s", exe_base);
        memcpy(b->data, exe, exe_len);
        if (args) {
                memcpy(b->data + exe_len, args, args_len);
                b->ev.args_len = (uint16_t) args_len;
                b->ev.flags |= LATNICE_EVENT_F_ARGS;
        }
        return sizeof(struct latnice_event) + exe_len + b->ev.args_len;
}

TEST(exec) {
        static struct latnice_event_buf b;
        static ExecEventBuf buf;
        ExecEvent ev;
        size_t n;

        n = build(&b, "/usr/bin/game", "game", "game\0--fast\0", 12);
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_EXEC);
        ASSERT_EQ(ev.pid, 4242);
        ASSERT_EQ(ev.start_time, 777);
        ASSERT_EQ(ev.parent_start_time, 5);
        ASSERT_EQ(ev.cgroup_id, 99);
        ASSERT_EQ(ev.ktime, 123456);
        ASSERT_EQ(ev.task.pid, 4242);
        ASSERT_EQ(ev.task.ppid, 1);
        ASSERT_EQ(ev.task.uid, 1000);
        ASSERT_EQ(ev.task.gid, 100);
        ASSERT_STREQ(ev.task.comm, "game");
        ASSERT_STREQ(ev.task.parent_comm, "steam");
        ASSERT_STREQ(ev.task.exe, "/usr/bin/game");
        ASSERT_EQ(ev.task.exe_ino, 12);
        ASSERT_EQ(ev.task.exe_dev, (8 << 20) | 1);
        ASSERT_TRUE(ev.exe_exact);
        ASSERT_TRUE(ev.exe_guess == NULL);
        ASSERT_TRUE(ev.has_args);
        ASSERT_EQ(ev.args_len, 12);
        ASSERT_STREQ(ev.task.argv[0], "game");
        ASSERT_STREQ(ev.task.argv[1], "--fast");
        ASSERT_TRUE(ev.task.argv[2] == NULL);
        ASSERT_TRUE(!ev.task.argv_truncated);

        /* no parent name: NULL, not "" (rules then read /proc) */
        b.ev.parent_comm[0] = 0;
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_EXEC);
        ASSERT_TRUE(ev.task.parent_comm == NULL);
}

TEST(exe_guess) {
        static struct latnice_event_buf b;
        static ExecEventBuf buf;
        ExecEvent ev;
        size_t n;

        /* through a symlink: the binary's name in the execve() path's directory */
        n = build(&b, "/usr/bin/python3", "python3.11", NULL, 0);
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_EXEC);
        ASSERT_TRUE(!ev.exe_exact);
        ASSERT_STREQ(ev.task.exe, "/usr/bin/python3");
        ASSERT_STREQ(ev.exe_guess, "/usr/bin/python3.11");
        ASSERT_TRUE(!ev.has_args);
        ASSERT_TRUE(ev.task.argv == NULL);

        /* relative: only the file name is known */
        n = build(&b, "./game", "game", NULL, 0);
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_EXEC);
        ASSERT_TRUE(!ev.exe_exact);
        ASSERT_STREQ(ev.exe_guess, "game");

        /* cut by the BPF side: not exact, even if the name fits */
        n = build(&b, "/usr/bin/game", "game", NULL, 0);
        b.ev.flags |= LATNICE_EVENT_F_EXE_TRUNC;
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_EXEC);
        ASSERT_TRUE(!ev.exe_exact);
        ASSERT_STREQ(ev.exe_guess, "/usr/bin/game");
}

TEST(args) {
        static struct latnice_event_buf b;
        static ExecEventBuf buf;
        static char many[LATNICE_ARGS_LEN];
        ExecEvent ev;
        size_t n, len = 0;

        /* more words than the vector holds: truncated, and the vector stays NULL-terminated */
        for (int i = 0; i < 100; i++)
                len += (size_t) snprintf(many + len, sizeof(many) - len, "w%d", i) + 1;
        n = build(&b, "/bin/x", "x", many, len);
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_EXEC);
        ASSERT_TRUE(ev.task.argv_truncated);
        ASSERT_STREQ(ev.task.argv[0], "w0");
        ASSERT_STREQ(ev.task.argv[EXEC_EVENT_ARGV_MAX - 2], "w63");
        ASSERT_TRUE(ev.task.argv[EXEC_EVENT_ARGV_MAX - 1] == NULL);

        /* the BPF side said argv was longer than the record */
        n = build(&b, "/bin/x", "x", "x\0", 2);
        b.ev.flags |= LATNICE_EVENT_F_ARGS_TRUNC;
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_EXEC);
        ASSERT_TRUE(ev.task.argv_truncated);

        /* a last word without its NUL still ends inside the buffer */
        n = build(&b, "/bin/x", "x", "x\0tail", 6);
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_EXEC);
        ASSERT_STREQ(ev.task.argv[1], "tail");
        ASSERT_TRUE(ev.task.argv[2] == NULL);
}

TEST(exit) {
        alignas(8) struct latnice_exit_event x = {
                .type = LATNICE_EVENT_EXIT,
                .pid = 31,
                .start_boottime = 42 * NS_PER_TICK,
        };
        static ExecEventBuf buf;
        ExecEvent ev;

        ASSERT_EQ(task_info_from_event(&x, sizeof(x), NS_PER_TICK, &buf, &ev), EXEC_EVENT_EXIT);
        ASSERT_EQ(ev.pid, 31);
        ASSERT_EQ(ev.start_time, 42);
        ASSERT_EQ(task_info_from_event(&x, sizeof(x) - 1, NS_PER_TICK, &buf, &ev), EXEC_EVENT_INVALID);
}

TEST(invalid) {
        static struct latnice_event_buf b;
        static ExecEventBuf buf;
        ExecEvent ev;
        size_t n;

        n = build(&b, "/usr/bin/game", "game", "game\0", 5);
        /* shorter than its lengths say */
        ASSERT_EQ(task_info_from_event(&b, n - 1, NS_PER_TICK, &buf, &ev), EXEC_EVENT_INVALID);
        ASSERT_EQ(task_info_from_event(&b, sizeof(struct latnice_event) - 1, NS_PER_TICK, &buf, &ev),
                  EXEC_EVENT_INVALID);
        /* an unknown type */
        b.ev.type = 7;
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_INVALID);
        b.ev.type = LATNICE_EVENT_EXEC;
        /* lengths that wrap or exceed the record */
        b.ev.args_len = UINT16_MAX;
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_INVALID);
        b.ev.args_len = 5;
        b.ev.exe_len = 0;
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_INVALID);
        /* the path without its NUL */
        n = build(&b, "/usr/bin/game", "game", NULL, 0);
        b.data[b.ev.exe_len - 1] = 'x';
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_INVALID);
        /* names without their NUL */
        n = build(&b, "/usr/bin/game", "game", NULL, 0);
        memset(b.ev.comm, 'a', sizeof(b.ev.comm));
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_INVALID);
        n = build(&b, "/usr/bin/game", "game", NULL, 0);
        memset(b.ev.exe_base, 'a', sizeof(b.ev.exe_base));
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_INVALID);
        /* no tick length: nothing can be converted */
        n = build(&b, "/usr/bin/game", "game", NULL, 0);
        ASSERT_EQ(task_info_from_event(&b, n, 0, &buf, &ev), EXEC_EVENT_INVALID);
}

/* A rename record: the exec layout with the new name and no execve() path; the binary by its file name. */
TEST(rename) {
        static struct latnice_event_buf b;
        static ExecEventBuf buf;
        ExecEvent ev;
        size_t n;

        n = build(&b, "", "wine64-preloader", "Z:\\games\\Game.exe", 18);
        b.ev.type = LATNICE_EVENT_RENAME;
        snprintf(b.ev.comm, sizeof(b.ev.comm), "Game.exe");
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_RENAME);
        ASSERT_EQ(ev.pid, 4242);
        ASSERT_EQ(ev.start_time, 777);
        ASSERT_STREQ(ev.task.comm, "Game.exe");
        ASSERT_TRUE(!ev.exe_exact);
        ASSERT_STREQ(ev.exe_guess, "wine64-preloader");
        ASSERT_TRUE(ev.has_args);
        ASSERT_STREQ(ev.task.argv[0], "Z:\\games\\Game.exe");
        /* a thread's rename names the thread */
        b.ev.type = LATNICE_EVENT_RENAME;
        b.ev.tid = 4250;
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_RENAME);
        ASSERT_EQ(ev.pid, 4242);
        ASSERT_EQ(ev.tid, 4250);
        /* the kernel side's wake-up to read its flags: nothing to decide */
        b.ev.type = LATNICE_EVENT_NOTICE;
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_NOTICE);
        /* a type beyond the known ones is still invalid */
        b.ev.type = LATNICE_EVENT_NOTICE + 1;
        ASSERT_EQ(task_info_from_event(&b, n, NS_PER_TICK, &buf, &ev), EXEC_EVENT_INVALID);
}

/* A pending entry's counts: whose renames they were, one thread told from several by the tids' sums. */
TEST(rename_swept) {
        struct latnice_rename_pending v = { .unsent = 3, .leader = 3 };
        RenameSwept w;

        w = rename_swept_from_pending(10, &v);
        ASSERT_TRUE(w.pid == 10 && w.leader && w.tid == 0 && !w.threads);
        /* one thread, three times */
        v = (struct latnice_rename_pending) { .unsent = 3, .threads = 3, .tid_sum = 3 * 4250,
                                              .tid_sq_sum = 3ULL * 4250 * 4250 };
        w = rename_swept_from_pending(10, &v);
        ASSERT_TRUE(!w.leader && w.tid == 4250 && !w.threads);
        /* 4240 and 4260: their mean is a tid, but not the only one */
        v = (struct latnice_rename_pending) { .unsent = 2, .threads = 2, .tid_sum = 4240 + 4260,
                                              .tid_sq_sum = 4240ULL * 4240 + 4260ULL * 4260 };
        w = rename_swept_from_pending(10, &v);
        ASSERT_TRUE(w.tid == 0 && w.threads);
        /* a sum that does not divide */
        v = (struct latnice_rename_pending) { .unsent = 2, .threads = 2, .tid_sum = 4241 + 4250,
                                              .tid_sq_sum = 4241ULL * 4241 + 4250ULL * 4250, .leader = 1 };
        w = rename_swept_from_pending(10, &v);
        ASSERT_TRUE(w.leader && w.tid == 0 && w.threads);
        /* nothing counted: decide everything */
        v = (struct latnice_rename_pending) { .unsent = 1 };
        w = rename_swept_from_pending(10, &v);
        ASSERT_TRUE(w.leader && w.threads);
}
