/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The foreground boost's decisions (daemon/foreground.c) and its [Foreground] settings. */
#include <fcntl.h>

#include "foreground-util.h"
#include "foreground.h"
#include "rules.h"
#include "tests.h"
#include "util.h"

TEST(decide) {
        ForegroundView v = { .value = 0 };

        /* Default value: boosted. */
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_BOOST);
        /* A rule's value above the boost: boosted (and given back later). */
        v = (ForegroundView) { .has_value = true, .value = 5, .ours = true, .rule = true, .focused = true };
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_BOOST);
        /* A rule's value at or below the boost: a boost never makes it worse. */
        v = (ForegroundView) { .has_value = true, .value = -15, .ours = true };
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_LEAVE_BETTER);
        v.value = -10;
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_LEAVE_BETTER);
        /* Somebody else's value, whatever it is. */
        v = (ForegroundView) { .has_value = true, .value = 10 };
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_LEAVE_FOREIGN);
        /* An explicit SetLatencyNice choice. */
        v = (ForegroundView) { .has_value = true, .value = 10, .ours = true, .manual = true };
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_LEAVE_MANUAL);
        /* Already boosted. */
        v = (ForegroundView) { .has_value = true, .value = -10, .ours = true, .boosted = true };
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_KEEP);
        /* Realtime: nothing to say. */
        v = (ForegroundView) { .realtime = true };
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_LEAVE_REALTIME);
        /* A rule's value on a process the focused one stands for (a batch job in a focused terminal): kept. */
        v = (ForegroundView) { .has_value = true, .value = 19, .ours = true, .rule = true };
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_LEAVE_RULE);
        v.value = 1;
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_LEAVE_RULE);
        /* A rule that makes it wake sooner (or says 0) does not stand against the boost. */
        v.value = 0;
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_BOOST);
        v = (ForegroundView) { .has_value = true, .value = -5, .ours = true, .rule = true };
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_BOOST);
        /* The focused process's own rule value: boosted (and given back later). */
        v = (ForegroundView) { .has_value = true, .value = 19, .ours = true, .rule = true, .focused = true };
        ASSERT_EQ(foreground_decide(&v, -10), FOREGROUND_BOOST);
        /* A positive boost (a "foreground waits" setting) still only ever lowers. */
        v = (ForegroundView) { .value = 0 };
        ASSERT_EQ(foreground_decide(&v, 3), FOREGROUND_LEAVE_BETTER);
}

TEST(user_unit) {
        char u[256];

        ASSERT_TRUE(foreground_user_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/"
                                         "app-org.gnome.Terminal.slice/vte-spawn-1.scope",
                                         1000, u, sizeof(u)));
        ASSERT_STREQ(u, "/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/"
                        "vte-spawn-1.scope");
        ASSERT_TRUE(foreground_user_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/"
                                         "app-firefox-123.scope/sub/deeper",
                                         1000, u, sizeof(u)));
        ASSERT_STREQ(u, "/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-123.scope");
        ASSERT_TRUE(foreground_user_unit("/user.slice/user-1000.slice/user@1000.service/xterm.service", 1000, u,
                                         sizeof(u)));
        ASSERT_STREQ(u, "/user.slice/user-1000.slice/user@1000.service/xterm.service");
        /* Another user's manager. */
        ASSERT_TRUE(!foreground_user_unit("/user.slice/user-1001.slice/user@1001.service/app.slice/a.scope", 1000,
                                          u, sizeof(u)));
        /* The session scope is the whole login, the manager's init.scope is no application. */
        ASSERT_TRUE(!foreground_user_unit("/user.slice/user-1000.slice/session-3.scope", 1000, u, sizeof(u)));
        ASSERT_TRUE(!foreground_user_unit("/user.slice/user-1000.slice/user@1000.service/init.scope", 1000, u,
                                          sizeof(u)));
        /* A slice alone, nothing, relative or empty paths. */
        ASSERT_TRUE(!foreground_user_unit("/user.slice/user-1000.slice/user@1000.service/app.slice", 1000, u,
                                          sizeof(u)));
        ASSERT_TRUE(!foreground_user_unit("/user.slice/user-1000.slice/user@1000.service/", 1000, u, sizeof(u)));
        ASSERT_TRUE(!foreground_user_unit("user@1000.service/a.scope", 1000, u, sizeof(u)));
        ASSERT_TRUE(!foreground_user_unit(NULL, 1000, u, sizeof(u)));
        /* A path longer than the buffer is no unit rather than a cut one. */
        ASSERT_TRUE(!foreground_user_unit("/user@1000.service/app.slice/a-very-long-name.scope", 1000, u, 20));
}

/* foreground_list_cgroup() of cgroup with room for max gives exactly the pids want, in this order. */
static void expect_cgroup(int fd, const char *cgroup, size_t max, const pid_t *want, size_t n_want) {
        pid_t pids[8];

        ASSERT_TRUE(max <= ELEMENTSOF(pids));
        ASSERT_EQ(foreground_list_cgroup(fd, cgroup, pids, max), n_want);
        for (size_t i = 0; i < n_want; i++)
                ASSERT_EQ(pids[i], want[i]);
}
#define EXPECT_CGROUP(fd, cgroup, max, ...)                                                                \
        expect_cgroup(fd, cgroup, max, (const pid_t[]) { __VA_ARGS__ }, ELEMENTSOF(((const pid_t[]) { __VA_ARGS__ })))

TEST(tree) {
        const char *d = test_tmpdir();
        _cleanup_(closep) int fd = -1;
        pid_t pids[8];

        /* 10 -> 11 (thread 10), 12 (thread 13); 11 -> 14; 14 -> 10 (a loop must not loop) */
        test_write(d, "proc/10/task/10/children", "11 ");
        test_write(d, "proc/10/task/13/children", "12");
        test_write(d, "proc/10/task/10/stat", "");
        test_write(d, "proc/11/task/11/children", "14 ");
        test_write(d, "proc/12/task/12/children", "");
        test_write(d, "proc/14/task/14/children", "10 11\n");
        fd = open(test_path(d, "proc"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(foreground_list_tree(fd, 10, pids, 8), 4);
        ASSERT_EQ(pids[0], 10);
        /* Threads in directory order; breadth first: 14 (a grandchild) after both children. */
        ASSERT_TRUE((pids[1] == 11 && pids[2] == 12) || (pids[1] == 12 && pids[2] == 11));
        ASSERT_EQ(pids[3], 14);
        /* Bounded. */
        ASSERT_EQ(foreground_list_tree(fd, 10, pids, 2), 2);
        /* A process without children (or gone): itself. */
        ASSERT_EQ(foreground_list_tree(fd, 99, pids, 8), 1);
        ASSERT_EQ(foreground_list_tree(fd, 0, pids, 8), 0);

        test_write(d, "cg/user.slice/app.scope/cgroup.procs", "5\n7\n-3\nx\n9\n");
        close(fd);
        fd = open(test_path(d, "cg"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        EXPECT_CGROUP(fd, "/user.slice/app.scope", 8, 5, 7, 9);
        EXPECT_CGROUP(fd, "/user.slice/app.scope", 1, 5);
        ASSERT_EQ(foreground_list_cgroup(fd, "/none", pids, 8), 0);
        /* A unit with sub-cgroups of its own (Delegate=yes, toolbox, podman): they are the unit too. */
        test_write(d, "cg/user.slice/app.scope/payload/cgroup.procs", "20\n");
        test_write(d, "cg/user.slice/app.scope/payload/inner/cgroup.procs", "21\n5\n");
        test_write(d, "cg/user.slice/app.scope/payload/inner/cgroup.threads", "22\n");
        EXPECT_CGROUP(fd, "/user.slice/app.scope", 8, 5, 7, 9, 20, 21);
        EXPECT_CGROUP(fd, "/user.slice/app.scope", 4, 5, 7, 9, 20);
        EXPECT_CGROUP(fd, "/user.slice/app.scope/payload", 8, 20, 21, 5);
}

TEST(config) {
        const char *d = test_tmpdir();
        DaemonConfig c = {};

        test_write(d, "a.conf", "[Daemon]\nProfile=gaming\n[Foreground]\nLatencyNice=-7\nCover=tree\n");
        ASSERT_EQ(daemon_config_load(test_path(d, "a.conf"), &c), 0);
        ASSERT_TRUE(!c.error);
        ASSERT_TRUE(c.foreground);
        ASSERT_EQ(c.foreground_latency_nice, -7);
        ASSERT_EQ(c.foreground_cover, FOREGROUND_COVER_TREE);
        ASSERT_STREQ(c.profile, "gaming");
        daemon_config_done(&c);

        /* Default: off, and Cover=unit. */
        test_write(d, "b.conf", "[Daemon]\nProfile=desktop\n");
        ASSERT_EQ(daemon_config_load(test_path(d, "b.conf"), &c), 0);
        ASSERT_TRUE(!c.foreground);
        ASSERT_EQ(c.foreground_cover, FOREGROUND_COVER_UNIT);
        daemon_config_done(&c);

        test_write(d, "c.conf", "[Foreground]\nLatencyNice=off\n");
        ASSERT_EQ(daemon_config_load(test_path(d, "c.conf"), &c), 0);
        ASSERT_TRUE(!c.error);
        ASSERT_TRUE(!c.foreground);
        daemon_config_done(&c);

        /* Bad values are errors with file:line, and leave the boost off. */
        test_write(d, "d.conf", "[Foreground]\nLatencyNice=-21\n");
        ASSERT_EQ(daemon_config_load(test_path(d, "d.conf"), &c), 0);
        ASSERT_TRUE(c.error && strstr(c.error, "d.conf:2:"));
        ASSERT_TRUE(!c.foreground);
        daemon_config_done(&c);
        test_write(d, "e.conf", "[Foreground]\nCover=everything\n");
        ASSERT_EQ(daemon_config_load(test_path(d, "e.conf"), &c), 0);
        ASSERT_TRUE(c.error && strstr(c.error, "Cover=everything"));
        daemon_config_done(&c);
        test_write(d, "f.conf", "[Foreground]\nProfile=x\n");
        ASSERT_EQ(daemon_config_load(test_path(d, "f.conf"), &c), 0);
        ASSERT_TRUE(c.error && strstr(c.error, "unknown key"));
        daemon_config_done(&c);
}
