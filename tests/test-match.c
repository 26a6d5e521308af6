/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Matching: every key, globs, precedence and shadow reporting, unit rules. */

#include "match.h"
#include "rules.h"
#include "tests.h"
#include "util.h"

static RuleSet *load(const char *name, const char *contents) {
        const char *t = test_tmpdir();
        char *rel, *path[2] = {};
        RuleSet *s = NULL;

        ASSERT_TRUE(asprintf(&rel, "%s.conf", name) >= 0);
        test_write(t, rel, contents);
        path[0] = test_path(t, rel);
        ASSERT_EQ(rule_set_load_files(path, &s), 0);
        for (size_t i = 0; i < s->n_errors; i++)
                fprintf(stderr, "%s:%u: %s\n", s->errors[i].file, s->errors[i].line, s->errors[i].message);
        ASSERT_EQ(s->n_errors, 0);
        free(rel);
        return s;
}

static const char *winner(const RuleSet *s, const TaskInfo *t) {
        MatchResult m = {};
        const char *n;

        ASSERT_TRUE(match_task(s, t, false, &m) >= 0);
        n = m.rule ? m.rule->name : NULL;
        match_result_done(&m);
        return n;
}

static void test_keys(void) {
        _cleanup_(rule_set_freep) RuleSet *s = load("keys",
                "[Process comm]\nComm=pipewire\nLatencyNice=-10\n"
                "[Process glob]\nComm=kwin_*\nLatencyNice=-9\n"
                "[Process exe-path]\nExe=/opt/game/bin/game\nLatencyNice=-8\n"
                "[Process exe-base]\nExe=firefox-esr\nLatencyNice=-7\n"
                "[Process exe-glob]\nExe=/usr/lib/jvm/*/java\nLatencyNice=5\n"
                "[Process cmdline]\nCmdline=game.exe tool.py\nLatencyNice=-6\n"
                "[Process parent]\nParent=steam\nLatencyNice=-5\n"
                "[Process user]\nUser=builder 4242\nComm=make\nLatencyNice=10\n"
                "[Process group]\nGroup=audio\nComm=ardour\nLatencyNice=-4\n"
                "[Process cgroup]\nCgroup=/system.slice/backup*.service\nLatencyNice=19\n"
                "[Process unit]\nUnit=game.slice\nLatencyNice=-3\n");
        TaskInfo t;

        t = (TaskInfo) { .comm = "pipewire" };
        ASSERT_STREQ(winner(s, &t), "comm");
        t = (TaskInfo) { .comm = "pipewire-pulse" };
        ASSERT_TRUE(!winner(s, &t)); /* exact, not prefix */
        t = (TaskInfo) { .comm = "kwin_wayland" };
        ASSERT_STREQ(winner(s, &t), "glob");
        t = (TaskInfo) { .comm = "game", .exe = "/opt/game/bin/game" };
        ASSERT_STREQ(winner(s, &t), "exe-path");
        t = (TaskInfo) { .comm = "game", .exe = "/opt/game/bin/game (deleted)" };
        ASSERT_STREQ(winner(s, &t), "exe-path");
        t = (TaskInfo) { .comm = "firefox", .exe = "/usr/lib/firefox-esr/firefox-esr" };
        ASSERT_STREQ(winner(s, &t), "exe-base");
        t = (TaskInfo) { .comm = "java", .exe = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java" };
        ASSERT_STREQ(winner(s, &t), "exe-glob"); /* '*' also matches '/' */
        t = (TaskInfo) { .comm = "java", .exe = "/usr/lib/jvm/x/javac" };
        ASSERT_TRUE(!winner(s, &t));

        char *wine[] = { "wine", "C:/Games/game.exe", NULL };
        t = (TaskInfo) { .comm = "wine", .argv = wine };
        ASSERT_STREQ(winner(s, &t), "cmdline");
        char *py[] = { "python3", "/usr/bin/tool.py", "--flag", NULL };
        t = (TaskInfo) { .comm = "python3", .argv = py };
        ASSERT_STREQ(winner(s, &t), "cmdline");
        char *other[] = { "python3", "/usr/bin/tool.pyc", NULL };
        t = (TaskInfo) { .comm = "python3", .argv = other };
        ASSERT_TRUE(!winner(s, &t));
        t = (TaskInfo) { .comm = "python3" }; /* argv unknown: no match, no crash */
        ASSERT_TRUE(!winner(s, &t));

        t = (TaskInfo) { .comm = "reaper", .parent_comm = "steam" };
        ASSERT_STREQ(winner(s, &t), "parent");

        t = (TaskInfo) { .comm = "make", .uid = 4242 };
        ASSERT_STREQ(winner(s, &t), "user");
        t = (TaskInfo) { .comm = "make", .uid = 1000, .user = "builder" };
        ASSERT_STREQ(winner(s, &t), "user");
        t = (TaskInfo) { .comm = "make", .uid = 1000, .user = "alice" };
        ASSERT_TRUE(!winner(s, &t));
        t = (TaskInfo) { .comm = "cc1", .uid = 4242 }; /* keys are ANDed */
        ASSERT_TRUE(!winner(s, &t));

        t = (TaskInfo) { .comm = "ardour", .gid = 29, .group = "audio" };
        ASSERT_STREQ(winner(s, &t), "group");

        t = (TaskInfo) { .comm = "borg", .cgroup = "/system.slice/backup-home.service" };
        ASSERT_STREQ(winner(s, &t), "cgroup");
        t = (TaskInfo) { .comm = "x", .cgroup = "/game.slice/run-u12.scope" };
        ASSERT_STREQ(winner(s, &t), "unit");
        t = (TaskInfo) { .comm = "x", .cgroup = "/game.slicex/run-u12.scope" };
        ASSERT_TRUE(!winner(s, &t));
}

static void test_precedence(void) {
        _cleanup_(rule_set_freep) RuleSet *s = load("prec",
                "[Process first]\nComm=a*\nLatencyNice=1\n"
                "[Process second]\nComm=abc\nLatencyNice=2\n"
                "[Unit u]\nUnit=abc.service\nLatencyNice=4\n"
                "[Process third]\nExe=/bin/abc\nLatencyNice=3\n");
        TaskInfo t = { .comm = "abc", .exe = "/bin/abc", .cgroup = "/abc.service" };
        MatchResult m = {};
        MatchKey failed = _MATCH_KEY_MAX;

        ASSERT_EQ(match_task(s, &t, true, &m), 1);
        ASSERT_STREQ(m.rule->name, "first");
        ASSERT_EQ(m.rule->line, 1);
        ASSERT_EQ(m.n_shadowed, 2); /* unit rules never shadow process rules */
        ASSERT_STREQ(m.shadowed[0]->name, "second");
        ASSERT_STREQ(m.shadowed[1]->name, "third");
        match_result_done(&m);

        ASSERT_EQ(match_task(s, &t, false, &m), 1);
        ASSERT_EQ(m.n_shadowed, 0);
        match_result_done(&m);

        t.comm = "xyz";
        ASSERT_TRUE(!match_rule(&s->rules[0], &t, &failed));
        ASSERT_EQ(failed, MATCH_COMM);

        ASSERT_STREQ(match_unit(s, "abc.service")->name, "u");
        ASSERT_TRUE(!match_unit(s, "abd.service"));
}

static void test_cgroup_units(void) {
        char *u;

        ASSERT_TRUE(cgroup_path_in_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope", "user@*.service"));
        ASSERT_TRUE(cgroup_path_in_unit("/user.slice/user-1000.slice", "user.slice"));
        ASSERT_TRUE(!cgroup_path_in_unit("/user.slice", "user"));
        ASSERT_TRUE(!cgroup_path_in_unit(NULL, "*"));
        ASSERT_TRUE(!cgroup_path_in_unit("/", "*"));
        u = cgroup_path_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope");
        ASSERT_STREQ(u, "app-x.scope");
        free(u);
        u = cgroup_path_unit("/system.slice/foo.service/sub");
        ASSERT_STREQ(u, "foo.service");
        free(u);
        ASSERT_TRUE(!cgroup_path_unit("/"));
}

int main(void) {
        test_keys();
        test_precedence();
        test_cgroup_units();
        printf("test-match: ok\n");
        return 0;
}
