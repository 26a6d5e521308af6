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

/* The same through the index: 1 from it exactly when a rule matched. */
static const char *index_winner(MatchIndex *ix, const TaskInfo *t) {
        MatchResult m = {};
        const char *n;
        int r = match_index_task(ix, t, false, &m);

        ASSERT_TRUE(r >= 0);
        ASSERT_EQ(r, m.rule != NULL);
        n = m.rule ? m.rule->name : NULL;
        match_result_done(&m);
        return n;
}

/* A task and the rule that must win for it (NULL: none). */
typedef struct WinnerCase {
        TaskInfo t;
        const char *want;
} WinnerCase;

/* Each case decided by the rules s, then through their index: the same winner both ways. */
static void expect_winners(const RuleSet *s, const WinnerCase *c, size_t n) {
        _cleanup_(match_index_freep) MatchIndex *ix = NULL;

        ASSERT_EQ(match_index_new(s, &ix), 0);
        for (size_t i = 0; i < n; i++)
                for (int by_index = 0; by_index < 2; by_index++) {
                        const char *got = by_index ? index_winner(ix, &c[i].t) : winner(s, &c[i].t);

                        if (c[i].want)
                                ASSERT_STREQ(got, c[i].want);
                        else
                                ASSERT_TRUE(!got);
                }
}

static void test_ancestor(void) {
        _cleanup_(rule_set_freep) RuleSet *s = load("ancestor",
                "[Process under-steam]\nAncestor=reaper\nLatencyNice=-5\n"
                "[Process ide]\nAncestor=/opt/ide/bin/ide code-*\nComm=cc1\nLatencyNice=5\n");
        TaskAncestor chain[] = {
                { .pid = 30, .comm = "bash", .exe = "/usr/bin/bash" },
                { .pid = 20, .comm = "java", .exe = "/opt/ide/bin/ide" },
                { .pid = 10, .comm = "srt-bwrap", .exe = "/usr/lib/steam/reaper" }, /* renamed: the file name counts */
        };
        TaskInfo t = { .comm = "cc1", .ancestors = chain, .n_ancestors = 3 };
        MatchResult m = {};

        ASSERT_STREQ(winner(s, &t), "under-steam");
        ASSERT_TRUE(match_task(s, &t, true, &m) >= 0);
        ASSERT_EQ(m.n_shadowed, 1);
        ASSERT_STREQ(m.shadowed[0]->name, "ide");
        ASSERT_EQ(match_ancestor_matched(m.rule, &t), 2);       /* three levels up */
        ASSERT_EQ(match_ancestor_matched(m.shadowed[0], &t), 1); /* by its exe path, nearest first */
        match_result_done(&m);

        /* a path is the exe path, never the command name */
        strcpy(chain[1].comm, "/opt/ide/bin/id");
        chain[1].exe = NULL;
        chain[2].exe = NULL;
        ASSERT_TRUE(!winner(s, &t));
        strcpy(chain[0].comm, "code-oss");
        ASSERT_STREQ(winner(s, &t), "ide");

        /* no chain known, or an empty one: no match */
        t.ancestors = NULL;
        t.n_ancestors = 0;
        ASSERT_TRUE(!winner(s, &t));
        t.comm = "reaper"; /* the process itself is not its own ancestor */
        ASSERT_TRUE(!winner(s, &t));
}

static void test_app(void) {
        static const struct {
                const char *cgroup, *app;
        } ids[] = {
                { "/user.slice/user-1000.slice/user@1000.service/app.slice/"
                  "app-flatpak-com.valvesoftware.Steam-4242.scope",
                  "com.valvesoftware.Steam" },
                { "/user.slice/flatpak-org.gnome.Builder-77.scope", "org.gnome.Builder" },        /* older Flatpak */
                { "/app-flatpak-org.x.My-App-9.scope/sub", "org.x.My-App" },                     /* dashes in the ID */
                { "/user.slice/snap.firefox.firefox-2d3c4b5a-1.scope", "firefox" },
                { "/system.slice/snap.lxd.daemon.service", "lxd" },
                { "/system.slice/snap.lxd.daemon.service/app-flatpak-org.x.Y-1.scope", "org.x.Y" }, /* innermost */
                { "/app-flatpak-org.x.Y.scope", NULL },   /* no instance number */
                { "/app-flatpak--12.scope", NULL },       /* no ID */
                { "/app-flatpak-org.x.Y-12.service", NULL },
                { "/snap..x.scope", NULL },
                { "/snap.x", NULL },
                { "/app-gnome-org.gnome.Terminal-12.scope", NULL }, /* not a Flatpak */
                { "/", NULL },
                { NULL, NULL },
        };
        _cleanup_(rule_set_freep) RuleSet *s = load("app",
                "[Process steam]\nApp=com.valvesoftware.Steam\nLatencyNice=-5\n"
                "[Process gnome]\nApp=org.gnome.*\nLatencyNice=3\n"
                "[Process snap]\nApp=firefox\nComm=firefox\nLatencyNice=-2\n");
        TaskInfo t;

        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                _cleanup_(freep) char *a = cgroup_path_app(ids[i].cgroup);

                if (!ids[i].app)
                        ASSERT_TRUE(a == NULL);
                else
                        ASSERT_STREQ(a, ids[i].app);
        }
        t = (TaskInfo) { .comm = "steam", .cgroup = ids[0].cgroup };
        ASSERT_STREQ(winner(s, &t), "steam");
        t = (TaskInfo) { .comm = "gnome-builder", .cgroup = ids[1].cgroup };
        ASSERT_STREQ(winner(s, &t), "gnome");
        t = (TaskInfo) { .comm = "firefox", .cgroup = ids[3].cgroup };
        ASSERT_STREQ(winner(s, &t), "snap");
        t = (TaskInfo) { .comm = "firefox-bin", .cgroup = ids[3].cgroup }; /* keys are ANDed */
        ASSERT_TRUE(!winner(s, &t));
        t = (TaskInfo) { .comm = "steam" }; /* cgroup unknown */
        ASSERT_TRUE(!winner(s, &t));
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
        const WinnerCase cases[] = {
                { { .comm = "pipewire" }, "comm" },
                { { .comm = "pipewire-pulse" }, NULL }, /* exact, not prefix */
                { { .comm = "kwin_wayland" }, "glob" },
                { { .comm = "game", .exe = "/opt/game/bin/game" }, "exe-path" },
                { { .comm = "game", .exe = "/opt/game/bin/game (deleted)" }, "exe-path" },
                { { .comm = "firefox", .exe = "/usr/lib/firefox-esr/firefox-esr" }, "exe-base" },
                /* '*' also matches '/' */
                { { .comm = "java", .exe = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java" }, "exe-glob" },
                { { .comm = "java", .exe = "/usr/lib/jvm/x/javac" }, NULL },

                { { .comm = "wine", .argv = (char *[]) { "wine", "C:/Games/game.exe", NULL } }, "cmdline" },
                { { .comm = "python3", .argv = (char *[]) { "python3", "/usr/bin/tool.py", "--flag", NULL } },
                  "cmdline" },
                /* Wine spells the Windows path in argv: the name after the last backslash counts. */
                { { .comm = "game.exe", .argv = (char *[]) { "Z:\\home\\u\\Games\\game.exe", NULL } }, "cmdline" },
                { { .comm = "wine64-preloader",
                    .argv = (char *[]) { "C:\\Program Files\\Game\\game.exe", "-dx11", NULL } }, "cmdline" },
                { { .comm = "x", .argv = (char *[]) { "Z:\\games\\game.exe.bak", "game.exe\\", "\\", NULL } }, NULL },
                { { .comm = "python3", .argv = (char *[]) { "python3", "/usr/bin/tool.pyc", NULL } }, NULL },
                { { .comm = "python3" }, NULL }, /* argv unknown: no match, no crash */

                { { .comm = "reaper", .parent_comm = "steam" }, "parent" },

                { { .comm = "make", .uid = 4242 }, "user" },
                { { .comm = "make", .uid = 1000, .user = "builder" }, "user" },
                { { .comm = "make", .uid = 1000, .user = "alice" }, NULL },
                { { .comm = "cc1", .uid = 4242 }, NULL }, /* keys are ANDed */

                { { .comm = "ardour", .gid = 29, .group = "audio" }, "group" },

                { { .comm = "borg", .cgroup = "/system.slice/backup-home.service" }, "cgroup" },
                { { .comm = "x", .cgroup = "/game.slice/run-u12.scope" }, "unit" },
                { { .comm = "x", .cgroup = "/game.slicex/run-u12.scope" }, NULL },
                /* A user's own unit of that name (systemd-run --user --slice=game.slice) is not the system's. */
                { { .comm = "x", .cgroup = "/user.slice/user-1000.slice/user@1000.service/game.slice/run-u3.scope" },
                  NULL },
        };

        expect_winners(s, cases, ELEMENTSOF(cases));
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

/* The one precedence latniced decides by and explain shows: a process rule, else a unit rule, else none. */
static void test_explain(void) {
        _cleanup_(rule_set_freep) RuleSet *s = load("explain",
                "[Process first]\nComm=abc\nLatencyNice=1\n"
                "[Unit u]\nUnit=abc.service\nLatencyNice=4\n"
                "[Process second]\nComm=a*\nLatencyNice=2\n");
        _cleanup_(match_index_freep) MatchIndex *ix = NULL;
        TaskInfo t = { .comm = "abc", .cgroup = "/abc.service" };
        MatchExplain e;

        ASSERT_EQ(match_index_new(s, &ix), 0);
        ASSERT_EQ(match_explain(s, NULL, &t, true, &e), 0);
        ASSERT_EQ(e.how, MATCH_HOW_PROCESS);
        ASSERT_STREQ(match_how_to_string(e.how), "process");
        ASSERT_STREQ(e.rule->name, "first");
        ASSERT_STREQ(e.unit_rule->name, "u"); /* overridden by the process rule */
        ASSERT_EQ(e.match.n_shadowed, 1);
        ASSERT_STREQ(e.match.shadowed[0]->name, "second");
        match_explain_done(&e);
        /* the daemon's way: through the index, nothing but the winner */
        ASSERT_EQ(match_explain(s, ix, &t, false, &e), 0);
        ASSERT_EQ(e.how, MATCH_HOW_PROCESS);
        ASSERT_STREQ(e.rule->name, "first");
        ASSERT_TRUE(!e.unit_rule);
        ASSERT_EQ(e.match.n_shadowed, 0);
        match_explain_done(&e);

        t.comm = "xyz";
        ASSERT_EQ(match_explain(s, ix, &t, true, &e), 0);
        ASSERT_EQ(e.how, MATCH_HOW_UNIT);
        ASSERT_STREQ(match_how_to_string(e.how), "unit");
        ASSERT_STREQ(e.rule->name, "u");
        ASSERT_TRUE(!e.unit_rule);
        match_explain_done(&e);

        t.cgroup = "/other.service";
        ASSERT_EQ(match_explain(s, NULL, &t, true, &e), 0);
        ASSERT_EQ(e.how, MATCH_HOW_NONE);
        ASSERT_STREQ(match_how_to_string(e.how), "none");
        ASSERT_TRUE(!e.rule && !e.unit_rule);
        match_explain_done(&e);
        ASSERT_TRUE(!match_how_to_string(_MATCH_HOW_INVALID));
}

static void test_cgroup_units(void) {
        char *u;

        ASSERT_TRUE(cgroup_path_in_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope",
                                        "user@*.service"));
        ASSERT_TRUE(cgroup_path_in_unit("/user.slice/user-1000.slice", "user.slice"));
        /* Below user@UID.service the names are the user manager's: anybody can make a game.slice there. */
        ASSERT_TRUE(cgroup_path_in_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope",
                                        "user-1000.slice"));
        ASSERT_TRUE(!cgroup_path_in_unit("/user.slice/user-1000.slice/user@1000.service/game.slice/x.scope",
                                         "game.slice"));
        ASSERT_TRUE(!cgroup_path_in_unit("/user.slice/user-1000.slice/user@1000.service/game.slice/x.scope",
                                         "x.scope"));
        ASSERT_TRUE(!cgroup_path_in_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope",
                                         "*.scope"));
        ASSERT_TRUE(cgroup_path_in_unit("/user.slice/user-1000.slice/session-4.scope", "session-*.scope"));
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

/* ---- the index against the linear matcher ---------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n) {
        /* xorshift64*: deterministic, so a failing seed can be replayed */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return (uint32_t) ((rng_state * 0x2545F4914F6CDD1DULL) >> 32) % n;
}

/* Few, overlapping names: prefixes of each other, so that rules collide and shadow. */
static const char *syllables[] = { "a", "b", "ab", "ba", "abc", "x", "Foo", "[S]", "a b", "é" };

static void rnd_name(char *buf, size_t size) {
        size_t n = 1 + rnd(3);

        buf[0] = 0;
        for (size_t i = 0; i < n; i++)
                strncat(buf, syllables[rnd(ELEMENTSOF(syllables))], size - strlen(buf) - 1);
}

/* A name for a rule file: a literal (glob characters escaped), or a glob of some shape. */
static void rnd_pattern(char *buf, size_t size, bool comm) {
        char n[64], m[64], lit[160];
        size_t j = 0;

        rnd_name(n, sizeof(n));
        rnd_name(m, sizeof(m));
        if (comm && strlen(n) > 7)
                n[7] = 0; /* stay within 15 bytes */
        if (comm && strlen(m) > 4)
                m[4] = 0;
        /* the line reader strips a line's trailing white space, escaped or not */
        for (size_t l = strlen(n); l > 1 && n[l - 1] == ' '; l--)
                n[l - 1] = 0;
        /* escape what a glob would read, and the space for the list syntax */
        for (const char *p = n; *p && j + 3 < sizeof(lit); p++) {
                if (strchr("*?[\\ ", *p))
                        lit[j++] = '\\';
                lit[j++] = *p;
        }
        lit[j] = 0;
        switch (rnd(12)) {
        case 0: snprintf(buf, size, "%s*", lit); break;
        case 1: snprintf(buf, size, "%s?", lit); break;
        case 2: snprintf(buf, size, "*%s", lit); break;
        case 3: snprintf(buf, size, "%s[ab]*", lit); break;
        case 4: snprintf(buf, size, "[ab]%s", lit); break;
        case 5: snprintf(buf, size, "%s*%s", lit, m[0] == '[' || m[0] == ' ' || strchr(m, ' ') ? "x" : m); break;
        case 6: snprintf(buf, size, "Foo[S]*"); break;     /* [S] a class: FooS... */
        case 7: snprintf(buf, size, "Foo\\[S]"); break;    /* the name Foo[S] */
        default: snprintf(buf, size, "%s", lit); break;   /* escaped literal, often exact */
        }
}

/* The keys whose values are picked from a few that mean something to the matcher. */
static const char *const ids[] = { "0", "1000", "10*", "alice", "al*", "*ce", "root", "?oot" };
static const char *const cgroups[] = { "/user.slice/*", "/user.slice/a.scope", "/a*", "*.scope", "/app-*/x" };
static const char *const units[] = { "user.slice", "a.scope", "app-*.scope", "*.scope", "ab*", "app-ab.scope" };
static const char *const apps[] = { "org.x.Game", "org.x.*", "firefox", "fire*", "*" };
static const struct {
        const char *const *v;
        size_t n;
} value_choices[_MATCH_KEY_MAX] = {
        [MATCH_USER] = { ids, ELEMENTSOF(ids) },
        [MATCH_GROUP] = { ids, ELEMENTSOF(ids) },
        [MATCH_CGROUP] = { cgroups, ELEMENTSOF(cgroups) },
        [MATCH_UNIT] = { units, ELEMENTSOF(units) },
        [MATCH_APP] = { apps, ELEMENTSOF(apps) },
};

static void rnd_value(FILE *f, MatchKey k) {
        char p[200], n[64];

        switch (k) {
        case MATCH_COMM:
        case MATCH_THREAD:
        case MATCH_PARENT:
        case MATCH_CMDLINE:
                rnd_pattern(p, sizeof(p), k != MATCH_CMDLINE);
                break;
        case MATCH_EXE:
                rnd_name(n, sizeof(n));
                for (char *c = n; *c; c++)
                        if (strchr("[ ", *c))
                                *c = '_';
                switch (rnd(5)) {
                case 0: snprintf(p, sizeof(p), "/usr/bin/%s", n); break;     /* by inode */
                case 1: snprintf(p, sizeof(p), "/usr/*/%s", n); break;       /* literal file name */
                case 2: snprintf(p, sizeof(p), "/usr/bin/%s*", n); break;    /* '*' also matches '/' */
                default: rnd_pattern(p, sizeof(p), false); break;
                }
                break;
        case MATCH_USER:
        case MATCH_GROUP:
        case MATCH_CGROUP:
        case MATCH_UNIT:
        case MATCH_APP:
                snprintf(p, sizeof(p), "%s", value_choices[k].v[rnd(value_choices[k].n)]);
                break;
        case MATCH_ANCESTOR:
                if (rnd(4) == 0) {
                        rnd_name(n, sizeof(n));
                        for (char *c = n; *c; c++)
                                if (strchr("[ ", *c))
                                        *c = '_';
                        snprintf(p, sizeof(p), "/usr/bin/%s", n);
                } else {
                        rnd_pattern(p, sizeof(p), true);
                        for (char *c = p; *c; c++)
                                if (*c == '/')
                                        *c = '_';
                }
                break;
        default:
                abort();
        }
        fprintf(f, " %s", p);
}

static RuleSet *rnd_rule_set(size_t n_rules) {
        _cleanup_(freep) char *text = NULL;
        size_t size = 0;
        RuleSet *s = NULL;
        FILE *f = open_memstream(&text, &size);

        ASSERT_TRUE(f);
        for (size_t i = 0; i < n_rules; i++) {
                if (rnd(20) == 0) {
                        fprintf(f, "[Unit u%zu]\nUnit=a.scope\nLatencyNice=1\n", i); /* never a process match */
                        continue;
                }
                fprintf(f, "[Process r%zu]\n", i);
                for (size_t k = 0, n = 1 + rnd(3); k < n; k++) {
                        MatchKey key = (MatchKey) (rnd(10) < 5 ? MATCH_COMM : rnd(_MATCH_KEY_MAX));

                        /* Thread= files no rule in the index: kept rare, so the shares asserted below still hold. */
                        if (key == MATCH_THREAD && rnd(8))
                                key = MATCH_COMM;

                        fprintf(f, "%s=", match_key_to_string(key));
                        for (size_t v = 0, nv = 1 + rnd(3); v < nv; v++)
                                rnd_value(f, key);
                        fputc('\n', f);
                }
                fprintf(f, "LatencyNice=%d\n", (int) rnd(40) - 20);
        }
        ASSERT_EQ(fclose(f), 0);
        ASSERT_EQ(rule_set_load_buffer("rnd.conf", text, size, &s), 0);
        for (size_t i = 0; i < s->n_errors; i++)
                fprintf(stderr, "%u: %s\n", s->errors[i].line, s->errors[i].message);
        ASSERT_EQ(s->n_errors, 0);
        return s;
}

/* Stands in for the inode check: some paths "are" the task's file although they name another (a symlink). */
static bool rnd_exe_is(const TaskInfo *t, const char *path, void *userdata) {
        (void) userdata;
        if (!t->exe)
                return false;
        return strcmp(path, t->exe) == 0 || (strlen(path) + strlen(t->exe)) % 5 == 0;
}

typedef struct RndTask {
        TaskInfo t;
        char comm[16], thread[16], exe[128], parent[16], cgroup[128], words[3][64];
        char *argv[4];
        TaskAncestor ancestors[3];
        char ancestor_exe[3][128];
} RndTask;

static void rnd_task(RndTask *r) {
        char n[64];
        static const char *users[] = { "root", "alice", "albert", NULL };
        static const uid_t uids[] = { 0, 1000, 1001, 42 };

        *r = (RndTask) {};
        rnd_name(n, sizeof(n));
        snprintf(r->comm, sizeof(r->comm), "%s", n);
        r->t.comm = r->comm;
        if (rnd(5) > 0) {
                rnd_name(n, sizeof(n));
                snprintf(r->exe, sizeof(r->exe), "%s/%s%s", rnd(2) ? "/usr/bin" : "/usr/lib/x", rnd(3) ? n : r->comm,
                         rnd(8) == 0 ? " (deleted)" : "");
                r->t.exe = r->exe;
                r->t.exe_is = rnd(4) ? rnd_exe_is : NULL;
        }
        if (rnd(3) > 0) {
                rnd_name(n, sizeof(n));
                snprintf(r->parent, sizeof(r->parent), "%s", n);
                r->t.parent_comm = r->parent;
        }
        if (rnd(2)) {
                size_t nw = rnd(4);

                for (size_t i = 0; i < nw; i++) {
                        rnd_name(n, sizeof(n));
                        snprintf(r->words[i], sizeof(r->words[i]), "%s%s", rnd(2) ? "/opt/" : "", n);
                        r->argv[i] = r->words[i];
                }
                r->argv[nw] = NULL;
                r->t.argv = r->argv;
        }
        if (rnd(2)) {
                /* Deciding one thread: its own name, sometimes the process's. */
                rnd_name(n, sizeof(n));
                snprintf(r->thread, sizeof(r->thread), "%s", rnd(4) ? n : r->comm);
                r->t.thread_comm = r->thread;
        }
        r->t.uid = uids[rnd(4)];
        r->t.user = users[rnd(4)];
        r->t.gid = uids[rnd(4)];
        r->t.group = users[rnd(4)];
        if (rnd(3) > 0) {
                static const char *cg[] = { "/user.slice/a.scope", "/user.slice/user-1000.slice/app-ab.scope",
                                            "/app-x.scope/x", "/ab.slice/b.service", "/",
                                            "/user.slice/app-flatpak-org.x.Game-12.scope",
                                            "/system.slice/snap.firefox.firefox-1a2b.scope" };

                snprintf(r->cgroup, sizeof(r->cgroup), "%s", cg[rnd(ELEMENTSOF(cg))]);
                r->t.cgroup = r->cgroup;
        }
        if (rnd(3) > 0) {
                size_t na = rnd(4);

                for (size_t i = 0; i < na; i++) {
                        rnd_name(n, sizeof(n));
                        snprintf(r->ancestors[i].comm, sizeof(r->ancestors[i].comm), "%s", n);
                        if (rnd(2)) {
                                rnd_name(n, sizeof(n));
                                snprintf(r->ancestor_exe[i], sizeof(r->ancestor_exe[i]), "/usr/bin/%s", n);
                                r->ancestors[i].exe = r->ancestor_exe[i];
                        }
                        r->ancestors[i].pid = (pid_t) (100 - i);
                }
                r->t.ancestors = r->ancestors;
                r->t.n_ancestors = na;
        }
}

static void check_same(const RuleSet *s, MatchIndex *ix, const TaskInfo *t, uint64_t seed, size_t *matched,
                       size_t *shadowed) {
        MatchResult a = {}, b = {};

        ASSERT_TRUE(match_task(s, t, true, &a) >= 0);
        ASSERT_TRUE(match_index_task(ix, t, true, &b) >= 0);
        if (a.rule != b.rule || a.n_shadowed != b.n_shadowed) {
                fprintf(stderr, "seed %llu comm '%s' exe '%s': linear %s (+%zu), index %s (+%zu)\n",
                        (unsigned long long) seed, t->comm, t->exe ?: "-", a.rule ? a.rule->name : "-", a.n_shadowed,
                        b.rule ? b.rule->name : "-", b.n_shadowed);
                abort();
        }
        for (size_t i = 0; i < a.n_shadowed; i++)
                ASSERT_TRUE(a.shadowed[i] == b.shadowed[i]);
        *matched += !!a.rule;
        *shadowed += a.n_shadowed > 0;
        match_result_done(&a);
        match_result_done(&b);
        /* and without the shadowed list: the same winner */
        ASSERT_TRUE(match_task(s, t, false, &a) >= 0);
        ASSERT_TRUE(match_index_task(ix, t, false, &b) >= 0);
        ASSERT_TRUE(a.rule == b.rule);
        match_result_done(&a);
        match_result_done(&b);
}

static void test_index_equivalence(void) {
        size_t matched = 0, shadowed = 0, tasks = 0, indexed = 0, unindexed = 0;

        for (uint64_t seed = 1; seed <= 400; seed++) {
                _cleanup_(rule_set_freep) RuleSet *s = NULL;
                _cleanup_(match_index_freep) MatchIndex *ix = NULL;
                MatchIndexStats st;

                rng_state = seed * 0x9E3779B97F4A7C15ULL;
                s = rnd_rule_set(seed % 50 == 0 ? 1500 : 1 + rnd(40));
                ASSERT_EQ(match_index_new(s, &ix), 0);
                match_index_stats(ix, &st);
                indexed += st.indexed;
                unindexed += st.unindexed;
                for (size_t i = 0; i < 300; i++) {
                        RndTask r;

                        rnd_task(&r);
                        check_same(s, ix, &r.t, seed, &matched, &shadowed);
                        tasks++;
                }
        }
        fprintf(stderr, "index equivalence: %zu tasks, %zu matched, %zu with shadowed rules; %zu rules indexed, "
                "%zu not\n", tasks, matched, shadowed, indexed, unindexed);
        /* The comparison is only worth something if the random sets match often and exercise both paths. */
        ASSERT_TRUE(matched > tasks / 10);
        ASSERT_TRUE(shadowed > tasks / 50);
        ASSERT_TRUE(indexed > 2 * unindexed);
        ASSERT_TRUE(unindexed > 0);
}

/* Shapes that must be filed (found without trying every rule), and found. */
static void test_index_shapes(void) {
        _cleanup_(rule_set_freep) RuleSet *s = load("shapes",
                "[Process literal]\nExe=Foo\\[Steam].exe\nLatencyNice=1\n"
                "[Process class]\nExe=Foo[Steam].exe\nLatencyNice=2\n"
                "[Process spaced]\nComm=\"Web Content\"\nLatencyNice=3\n"
                "[Process pathglob]\nExe=/usr/lib/jvm/*/java\nLatencyNice=4\n"
                "[Process prefix]\nComm=kwin_*\nLatencyNice=5\n"
                "[Process suffix-and-user]\nComm=*.exe\nUser=alice\nLatencyNice=6\n"
                "[Process inode]\nExe=/usr/bin/pipewire\nLatencyNice=7\n");
        _cleanup_(match_index_freep) MatchIndex *ix = NULL;
        static const WinnerCase shapes[] = {
                { { .comm = "FooS.exe", .exe = "/games/FooS.exe" }, "class" },
                { { .comm = "Web Content" }, "spaced" },
                { { .comm = "java", .exe = "/usr/lib/jvm/17/bin/java" }, "pathglob" },
                { { .comm = "x.exe", .uid = 1000, .user = "alice" }, "suffix-and-user" },
                { { .comm = "x.exe", .uid = 1001, .user = "bob" }, NULL },
        };
        MatchIndexStats st;
        MatchResult m = {};
        TaskInfo t;

        ASSERT_EQ(match_index_new(s, &ix), 0);
        match_index_stats(ix, &st);
        ASSERT_EQ(st.indexed, 6);
        ASSERT_EQ(st.unindexed, 1); /* Exe= by inode only */

        t = (TaskInfo) { .comm = "Foo[Steam].exe", .exe = "/games/Foo[Steam].exe" };
        ASSERT_EQ(match_index_task(ix, &t, true, &m), 1);
        ASSERT_STREQ(m.rule->name, "literal");
        ASSERT_EQ(m.n_shadowed, 0);
        match_result_done(&m);
        expect_winners(s, shapes, ELEMENTSOF(shapes));
}

/* Thread= matches one thread's own name; deciding the whole process, a rule with Thread= never matches. */
static void test_thread(void) {
        _cleanup_(rule_set_freep) RuleSet *s = load("thread",
                "[Process pw-data]\n"
                "Comm=pipewire\n"
                "Thread=data-loop.* 'Web Content'\n"
                "LatencyNice=-15\n"
                "[Process pw]\n"
                "Comm=pipewire\n"
                "LatencyNice=-5\n"
                "[Process game]\n"
                "Thread=GameThread\n"
                "LatencyNice=-3\n");
        static const WinnerCase cases[] = {
                { { .comm = "pipewire" }, "pw" },
                { { .comm = "pipewire", .thread_comm = "pipewire" }, "pw" },
                { { .comm = "pipewire", .thread_comm = "data-loop.0" }, "pw-data" },
                { { .comm = "pipewire", .thread_comm = "data-loop.3" }, "pw-data" },
                { { .comm = "pipewire", .thread_comm = "Web Content" }, "pw-data" },
                /* Bytes, not text: a name that is not UTF-8 is just a name that matches nothing here. */
                { { .comm = "pipewire", .thread_comm = "\xff\xfe data-loop" }, "pw" },
                { { .comm = "pipewire", .thread_comm = "GameThread" }, "pw" },
                { { .comm = "game", .thread_comm = "GameThread" }, "game" },
                { { .comm = "game" }, NULL },
                { { .comm = "game", .thread_comm = "GameThread2" }, NULL },
        };

        expect_winners(s, cases, ELEMENTSOF(cases));
}

int main(void) {
        test_thread();
        test_app();
        test_ancestor();
        test_keys();
        test_precedence();
        test_explain();
        test_cgroup_units();
        test_index_shapes();
        test_index_equivalence();
        printf("test-match: ok\n");
        return 0;
}
