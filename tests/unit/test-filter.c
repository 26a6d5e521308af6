/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The prefilter spec: one cheap key per rule, widening instead of losing matches. */

#include <unistd.h>

#include "filter.h"
#include "rules.h"
#include "tests.h"
#include "util.h"

static RuleSet *load(const char *contents) {
        RuleSet *s = NULL;

        ASSERT_EQ(rule_set_load_buffer("t.conf", contents, strlen(contents), &s), 0);
        for (size_t i = 0; i < s->n_errors; i++)
                fprintf(stderr, "%u: %s\n", s->errors[i].line, s->errors[i].message);
        ASSERT_EQ(s->n_errors, 0);
        return s;
}

TEST(keys) {
        _cleanup_(rule_set_freep) RuleSet *s = load(
                "[Process a]\nComm=pipewire kwin_*\nExe=/usr/bin/x\nLatencyNice=-5\n"  /* Comm chosen, not Exe */
                "[Process b]\nExe=/usr/lib/gnome-terminal-server-with-a-very-long-name tracker-*\nLatencyNice=1\n"
                "[Process c]\nParent=steam\nCmdline=*.exe\nLatencyNice=-3\n"
                "[Process d]\nUser=builder 1001\nLatencyNice=19\n"
                "[Process e]\nGroup=audio\nComm=*x*\nLatencyNice=2\n"          /* Comm glob not a prefix: Group */
                "[Process f]\nUnit=game.slice\nLatencyNice=-1\n"
                "[Unit g.slice]\nLatencyNice=4\n");
        FilterSpec f = {};

        ASSERT_EQ(filter_spec_build(s, 4096, &f), 0);
        ASSERT_TRUE(!f.pass_all);
        ASSERT_TRUE(f.want_args);

        ASSERT_EQ(f.n_comm, 2);
        ASSERT_STREQ(f.comm[0].name, "pipewire");
        ASSERT_TRUE(f.comm[0].exact);
        ASSERT_EQ(f.comm[0].len, 8);
        ASSERT_STREQ(f.comm[1].name, "kwin_");
        ASSERT_TRUE(!f.comm[1].exact);
        ASSERT_EQ(f.comm[1].len, 5);

        ASSERT_EQ(f.n_exe, 2);
        /* longer than the kernel side's 31 characters: a prefix of what it sees */
        ASSERT_EQ(f.exe[0].len, 31);
        ASSERT_TRUE(!f.exe[0].exact);
        ASSERT_TRUE(strncmp(f.exe[0].name, "gnome-terminal-server-with-a-ve", 31) == 0);
        ASSERT_STREQ(f.exe[1].name, "tracker-");

        ASSERT_EQ(f.n_parent, 1);
        ASSERT_STREQ(f.parent[0].name, "steam");
        ASSERT_EQ(strv_length(f.users), 2);
        ASSERT_EQ(strv_length(f.groups), 1);
        ASSERT_EQ(strv_length(f.units), 1);
        ASSERT_STREQ(f.units[0], "game.slice");
        /* rule e has Comm=*x*, which the comm names cannot express: every rename must pass */
        ASSERT_TRUE(f.want_renames);
        ASSERT_TRUE(f.renames_all);
        filter_spec_done(&f);
}

/* Ancestor= names go to the kernel whole; paths and globs leave the rule to other keys. */
TEST(ancestor) {
        _cleanup_(rule_set_freep) RuleSet *s = load(
                "[Process a]\nAncestor=reaper steam\nLatencyNice=-5\n"
                "[Process b]\nAncestor=reaper\nComm=game\nLatencyNice=-5\n"); /* Comm= is chosen */
        _cleanup_(rule_set_freep) RuleSet *p = load("[Process a]\nAncestor=/usr/bin/steam\nLatencyNice=-5\n");
        _cleanup_(rule_set_freep) RuleSet *g = load("[Process a]\nAncestor=ste*\nLatencyNice=-5\n");
        FilterSpec f = {};

        ASSERT_EQ(filter_spec_build(s, 4096, &f), 0);
        ASSERT_TRUE(!f.pass_all);
        ASSERT_EQ(f.n_ancestor, 2);
        ASSERT_STREQ(f.ancestor[0].name, "reaper");
        ASSERT_TRUE(f.ancestor[0].exact);
        ASSERT_EQ(f.n_comm, 1);
        filter_spec_done(&f);
        ASSERT_TRUE(filter_rule_checkable(&s->rules[0]));
        ASSERT_TRUE(!filter_rule_checkable(&p->rules[0]));
        ASSERT_TRUE(!filter_rule_checkable(&g->rules[0]));
        ASSERT_EQ(filter_spec_build(p, 4096, &f), 0);
        ASSERT_TRUE(f.pass_all);
        filter_spec_done(&f);
}

/* Renames pass the filter by the comm names alone: only Comm= rules decide whether they can. */
TEST(renames) {
        static const struct {
                const char *rules;
                bool want, all;
        } cases[] = {
                { "[Process a]\nExe=wine64-preloader\nCmdline=Game.exe\nLatencyNice=-5\n", false, false },
                { "[Process a]\nComm=Game.exe\nLatencyNice=-5\n", true, false },
                { "[Process a]\nComm=Game*\nLatencyNice=-5\n", true, false },
                /* filed under Group=, but its Comm= still changes with a rename */
                { "[Process a]\nGroup=games\nComm=*.exe\nLatencyNice=-5\n", true, true },
                { "[Unit a.slice]\nLatencyNice=-5\n", false, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(rule_set_freep) RuleSet *s = load(cases[i].rules);
                FilterSpec f = {};

                ASSERT_EQ(filter_spec_build(s, 4096, &f), 0);
                ASSERT_EQ(f.want_renames, cases[i].want);
                ASSERT_EQ(f.renames_all, cases[i].all);
                ASSERT_TRUE(!f.want_thread_renames);
                filter_spec_done(&f);
        }
}

/* Thread=: renames of other threads than the main one pass by its names, which go into the comm names. */
TEST(thread_renames) {
        _cleanup_(rule_set_freep) RuleSet *s = load("[Process pw]\nExe=pipewire\nThread=data-loop.* Compositor\n"
                                                    "LatencyNice=-5\n");
        _cleanup_(rule_set_freep) RuleSet *g = load("[Process pw]\nExe=pipewire\nThread=*loop\nLatencyNice=-5\n");
        FilterSpec f = {};
        bool prefix = false, exact = false;

        ASSERT_EQ(filter_spec_build(s, 4096, &f), 0);
        ASSERT_TRUE(f.want_thread_renames);
        ASSERT_TRUE(!f.thread_renames_all);
        ASSERT_TRUE(!f.want_renames); /* no Comm=: the process's own renames change nothing */
        ASSERT_TRUE(!f.pass_all);
        for (size_t i = 0; i < f.n_comm; i++) {
                if (!f.comm[i].exact && f.comm[i].len == 10 && memcmp(f.comm[i].name, "data-loop.", 10) == 0)
                        prefix = true;
                if (f.comm[i].exact && strcmp(f.comm[i].name, "Compositor") == 0)
                        exact = true;
        }
        ASSERT_TRUE(prefix && exact);
        filter_spec_done(&f);

        /* A glob without a literal start cannot be checked: every rename of a thread passes. */
        ASSERT_EQ(filter_spec_build(g, 4096, &f), 0);
        ASSERT_TRUE(f.want_thread_renames && f.thread_renames_all);
        filter_spec_done(&f);
}

TEST(widen) {
        _cleanup_(rule_set_freep) RuleSet *s = load(
                "[Process a]\nComm=pipewire\nLatencyNice=-5\n"
                "[Process b]\nCmdline=game.exe\nLatencyNice=1\n");
        _cleanup_(rule_set_freep) RuleSet *s2 = load("[Process a]\nComm=*wire\nLatencyNice=-5\n");
        _cleanup_(rule_set_freep) RuleSet *s3 = load("[Process a]\nComm=a b c\nLatencyNice=-5\n");
        FilterSpec f = {};

        ASSERT_EQ(filter_spec_build(s, 4096, &f), 0);
        ASSERT_TRUE(f.pass_all);
        ASSERT_TRUE(strstr(f.pass_all_reason, "[Process b] t.conf:4"));
        filter_spec_done(&f);

        ASSERT_EQ(filter_spec_build(s2, 4096, &f), 0);
        ASSERT_TRUE(f.pass_all); /* a suffix glob cannot be a trie prefix */
        filter_spec_done(&f);

        ASSERT_EQ(filter_spec_build(s3, 2, &f), 0);
        ASSERT_TRUE(f.pass_all); /* over capacity */
        ASSERT_TRUE(strstr(f.pass_all_reason, "more than 2"));
        filter_spec_done(&f);
}

/* Globs the kernel cannot check exactly are narrowed to what it can: their literal start. */
TEST(narrow) {
        _cleanup_(rule_set_freep) RuleSet *s = load(
                "[Process class]\nExe=Foo[Steam].exe\nLatencyNice=-1\n"          /* [Steam] a class: prefix Foo */
                "[Process literal]\nExe=Foo\\[Steam].exe\nLatencyNice=-1\n"      /* the name Foo[Steam].exe */
                "[Process q]\nComm=ab?d\nLatencyNice=1\n"
                "[Process mid]\nComm=kwin*wayland\nLatencyNice=1\n"
                "[Process long]\nComm=averyveryverylongname*\nLatencyNice=1\n"    /* longer than the kernel keeps */
                "[Process path]\nExe=/usr/lib/jvm/*/java\nLatencyNice=1\n"       /* a literal file name */
                "[Process pathglob]\nExe=/opt/x/ga* \nComm=game\nLatencyNice=1\n" /* 'ga*' could be ga/y: Comm */
                "[Process spaced]\nComm=\"Web Content\"\nLatencyNice=1\n");
        FilterSpec f = {};

        ASSERT_EQ(filter_spec_build(s, FILTER_NAMES_MAX, &f), 0);
        ASSERT_TRUE(!f.pass_all);
        ASSERT_EQ(f.n_exe, 3);
        ASSERT_STREQ(f.exe[0].name, "Foo");
        ASSERT_TRUE(!f.exe[0].exact);
        ASSERT_STREQ(f.exe[1].name, "Foo[Steam].exe");
        ASSERT_TRUE(f.exe[1].exact);
        ASSERT_STREQ(f.exe[2].name, "java");
        ASSERT_TRUE(f.exe[2].exact);
        ASSERT_EQ(f.n_comm, 5);
        ASSERT_STREQ(f.comm[0].name, "ab");
        ASSERT_TRUE(!f.comm[0].exact);
        ASSERT_STREQ(f.comm[1].name, "kwin");
        ASSERT_EQ(f.comm[2].len, 15);
        ASSERT_TRUE(!f.comm[2].exact);
        ASSERT_STREQ(f.comm[3].name, "game");
        ASSERT_STREQ(f.comm[4].name, "Web Content");
        ASSERT_TRUE(f.comm[4].exact);
        {
                size_t e, p;

                filter_names_count(f.comm, f.n_comm, &e, &p);
                ASSERT_EQ(e, 2);
                ASSERT_EQ(p, 3);
        }
        for (size_t i = 0; i < s->n_rules; i++)
                ASSERT_TRUE(filter_rule_checkable(&s->rules[i]));
        filter_spec_done(&f);
}

/* Only a rule with nothing the kernel can check opens the filter, and it is named. */
TEST(open) {
        _cleanup_(rule_set_freep) RuleSet *s = load(
                "[Process fine]\nComm=a\nLatencyNice=1\n"
                "[Process suffix]\nExe=*.exe\nCmdline=*.exe\nLatencyNice=1\n"
                "[Process path]\nExe=/opt/x/ga*\nLatencyNice=1\n");
        FilterSpec f = {};

        ASSERT_TRUE(filter_rule_checkable(&s->rules[0]));
        ASSERT_TRUE(!filter_rule_checkable(&s->rules[1]));
        ASSERT_TRUE(!filter_rule_checkable(&s->rules[2]));
        ASSERT_EQ(filter_spec_build(s, FILTER_NAMES_MAX, &f), 0);
        ASSERT_TRUE(f.pass_all);
        ASSERT_TRUE(strstr(f.pass_all_reason, "[Process suffix] t.conf:4"));
        filter_spec_done(&f);
}

/* Exe=/usr/bin/python3 is the file python3.11 too: the kernel side must let that name through. */
TEST(exe_symlink) {
        const char *dir = test_tmpdir();
        _cleanup_(freep) char *conf = NULL;
        RuleSet *s;
        FilterSpec f = {};

        test_write(dir, "bin/python3.11", "");
        ASSERT_EQ(symlink("python3.11", test_path(dir, "bin/python3")), 0);
        ASSERT_TRUE(asprintf(&conf, "[Process p]\nExe=%s\nLatencyNice=-1\n", test_path(dir, "bin/python3")) > 0);
        s = load(conf);
        ASSERT_EQ(filter_spec_build(s, 4096, &f), 0);
        ASSERT_TRUE(!f.pass_all);
        ASSERT_EQ(f.n_exe, 2);
        ASSERT_STREQ(f.exe[0].name, "python3");
        ASSERT_STREQ(f.exe[1].name, "python3.11");
        ASSERT_TRUE(f.exe[1].exact);
        filter_spec_done(&f);
        rule_set_free(s);
}
