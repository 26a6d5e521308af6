/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the compositor sources share (session/focus-socket.c), on real sockets and a real sd-event
 * loop: a socket of another uid is refused (its word would pick which of our processes is
 * boosted), the reconnect backoff doubles to its cap and calls connect once per wait, and a line
 * stream is read until the peer closes.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "focus-source.h"
#include "tests.h"

/* A listening socket at path, made by a child running as uid, which answers the first connection
 * with reply (if any, len bytes) once it has read the request; the child's pid. */
static pid_t listen_as(const char *path, uid_t uid, const void *reply, size_t len) {
        int ready[2];
        char c;
        pid_t pid;

        ASSERT_TRUE(pipe(ready) == 0);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int fd = socket(AF_UNIX, SOCK_STREAM, 0);

                if (uid != getuid() && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                                        setresuid(uid, uid, uid) < 0))
                        _exit(1);
                /* After the uid change, which clears it. */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                        _exit(1);
                strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
                if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 4) < 0)
                        _exit(1);
                if (write(ready[1], "x", 1) != 1)
                        _exit(1);
                if (reply) {
                        char buf[4096];
                        int conn = accept(fd, NULL, NULL);

                        if (conn < 0 || read(conn, buf, sizeof(buf)) <= 0 ||
                            write(conn, reply, len) != (ssize_t) len)
                                _exit(1);
                }
                for (;;)
                        pause();
        }
        close(ready[1]);
        ASSERT_EQ(read(ready[0], &c, 1), 1);
        close(ready[0]);
        return pid;
}

static void stop(pid_t pid) {
        kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

TEST(socket_owner) {
        const char *dir = test_tmpdir();
        char *mine = test_path(dir, "mine.sock"), *theirs = test_path(dir, "theirs.sock");
        pid_t a, b;
        int fd = -1;

        a = listen_as(mine, getuid(), NULL, 0);
        ASSERT_EQ(focus_socket_connect(mine, true, &fd), 0);
        ASSERT_TRUE(fd >= 0);
        close(fd);
        stop(a);
        ASSERT_EQ(focus_socket_connect(test_path(dir, "none.sock"), true, &fd), -ENOENT);

        if (getuid() != 0) {
                printf("skip - a socket of another uid: needs root to make one\n");
                return;
        }
        ASSERT_TRUE(chmod(dir, 0777) == 0);
        b = listen_as(theirs, 65534, NULL, 0);
        fd = -1;
        ASSERT_EQ(focus_socket_connect(theirs, true, &fd), -EPERM);
        ASSERT_EQ(fd, -1);
        stop(b);
}

typedef struct Tries {
        FocusRetry *retry;
        sd_event *event;
        unsigned calls;
        uint64_t waits[8];
} Tries;

static int try_connect(void *userdata) {
        Tries *t = userdata;

        /* Fails four times, then works: what a compositor that is still starting looks like. */
        t->calls++;
        if (t->calls < 5) {
                focus_retry_schedule(t->retry, t->event);
                t->waits[t->calls] = t->retry->backoff;
        } else {
                focus_retry_works(t->retry);
                (void) sd_event_exit(t->event, 0);
        }
        return 0;
}

TEST(retry_backoff) {
        FocusRetry retry = { .min_usec = 1000, .max_usec = 4000, .description = "test-retry" };
        Tries t = { .retry = &retry };

        ASSERT_TRUE(sd_event_new(&t.event) >= 0);
        retry.connect = try_connect;
        retry.userdata = &t;
        focus_retry_schedule(&retry, t.event);
        t.waits[0] = retry.backoff;
        /* A second failure before the timer fired keeps the one timer. */
        focus_retry_schedule(&retry, t.event);
        ASSERT_TRUE(sd_event_loop(t.event) >= 0);
        ASSERT_EQ(t.calls, 5u);
        ASSERT_EQ(t.waits[0], 1000);
        ASSERT_EQ(t.waits[1], 4000); /* 1000, 2000 (the second schedule), then the cap */
        ASSERT_EQ(t.waits[4], 4000);
        ASSERT_EQ(retry.backoff, 0);
        ASSERT_TRUE(retry.timer == NULL);
        focus_retry_done(&retry);
        sd_event_unref(t.event);
}

static int count_line(const char *line, size_t len, void *userdata) {
        unsigned *n = userdata;

        if (len == 3 && memcmp(line, "bad", 3) == 0)
                return -EPROTO;
        (*n)++;
        return 0;
}

TEST(read_lines) {
        LineBuffer lb;
        unsigned n = 0;
        int sv[2];

        ASSERT_TRUE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
        line_buffer_init(&lb, 64);
        ASSERT_EQ(write(sv[1], "one\ntwo\nthr", 11), 11);
        ASSERT_EQ(focus_socket_read_lines(sv[0], &lb, 4, count_line, &n), 0); /* then EAGAIN */
        ASSERT_EQ(n, 2u);
        ASSERT_EQ(write(sv[1], "ee\n", 3), 3);
        close(sv[1]);
        ASSERT_EQ(focus_socket_read_lines(sv[0], &lb, 4, count_line, &n), -ECONNRESET);
        ASSERT_EQ(n, 3u);
        line_buffer_done(&lb);
        close(sv[0]);

        /* What the line function refuses drops the connection. */
        ASSERT_TRUE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
        line_buffer_init(&lb, 64);
        ASSERT_EQ(write(sv[1], "bad\n", 4), 4);
        ASSERT_EQ(focus_socket_read_lines(sv[0], &lb, 4, count_line, &n), -EPROTO);
        line_buffer_done(&lb);
        close(sv[0]);
        close(sv[1]);
}

typedef struct Seen {
        pid_t last;
        unsigned calls;
} Seen;

static void record(void *userdata, pid_t pid, const char *source) {
        Seen *seen = userdata;

        seen->last = pid;
        seen->calls++;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* The pid Sway's source reports after a GET_TREE reply naming 77 from a listener of uid, 0 if none. */
static pid_t sway_focus_from(const char *path, uid_t uid) {
        static const char tree[] = "{\"nodes\":[{\"focused\":true,\"pid\":77}]}";
        uint8_t msg[14 + sizeof(tree) - 1];
        uint32_t len = sizeof(tree) - 1, type = 4; /* GET_TREE */
        Seen seen = {};
        sd_event *e = NULL;
        FocusConn *ipc = NULL;
        pid_t server;

        memcpy(msg, "i3-ipc", 6);
        memcpy(msg + 6, &len, 4);
        memcpy(msg + 10, &type, 4);
        memcpy(msg + 14, tree, len);
        server = listen_as(path, uid, msg, sizeof(msg));
        ASSERT_TRUE(sd_event_new(&e) >= 0);
        ASSERT_TRUE(sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC, 500 * 1000, 1000, on_timeout, NULL) >= 0);
        ASSERT_EQ(focus_conn_new(&sway_source, &(FocusSink) { .event = e, .set = record, .userdata = &seen }, path,
                                 &ipc), 0);
        ASSERT_STREQ(ipc->retry.description, "sway-retry"); /* the retry timer's name, made from the type's */
        ASSERT_TRUE(sd_event_loop(e) >= 0);
        focus_conn_free(ipc);
        sd_event_unref(e);
        stop(server);
        return seen.last;
}

TEST(sway_socket_owner) {
        const char *dir = test_tmpdir();

        /* The control: our own socket's tree is read. */
        ASSERT_EQ(sway_focus_from(test_path(dir, "sway-mine.sock"), getuid()), 77);
        if (getuid() != 0) {
                printf("skip - Sway on a socket of another uid: needs root to make one\n");
                return;
        }
        ASSERT_TRUE(chmod(dir, 0777) == 0);
        /* $SWAYSOCK naming another user's socket: refused, so what it says boosts nothing. */
        ASSERT_EQ(sway_focus_from(test_path(dir, "sway-theirs.sock"), 65534), 0);
}
