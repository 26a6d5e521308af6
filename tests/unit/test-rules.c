/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Rule loading on temporary trees: order, hiding, masking, parsing, every error path. */

#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rules.h"
#include "tests.h"
#include "util.h"

/* The vendor directory depends on the build prefix. */
#define VENDOR LATNICE_VENDOR_RULE_DIR
#define VENDOR_SHOWN LATNICE_VENDOR_RULE_DIR

static const char *fresh_root(const char *name) {
        const char *t = test_tmpdir();
        char *root = test_path(t, name);

        ASSERT_EQ(mkdir(root, 0755), 0);
        return root;
}

static const Rule *find_rule(const RuleSet *s, const char *name) {
        for (size_t i = 0; i < s->n_rules; i++)
                if (strcmp(s->rules[i].name, name) == 0)
                        return &s->rules[i];
        return NULL;
}

/* Key k of rule r has exactly the values given (then NULL), in that order. */
static void expect_values(const Rule *r, MatchKey k, ...) {
        char **v = rule_match(r, k);
        const char *want;
        size_t n = 0;
        va_list ap;

        va_start(ap, k);
        while ((want = va_arg(ap, const char *))) {
                ASSERT_TRUE(v && v[n]);
                ASSERT_STREQ(v[n], want);
                n++;
        }
        va_end(ap);
        ASSERT_EQ(strv_length(v), n);
}

/* The error at file:line, whose message contains needle. */
static const RuleError *find_error(const RuleSet *s, const char *file_suffix, unsigned line, const char *needle) {
        for (size_t i = 0; i < s->n_errors; i++) {
                const RuleError *e = &s->errors[i];
                size_t fl, sl = strlen(file_suffix);

                if (!e->file || e->line != line)
                        continue;
                fl = strlen(e->file);
                if (fl < sl || strcmp(e->file + fl - sl, file_suffix) != 0)
                        continue;
                if (strstr(e->message, needle))
                        return e;
        }
        fprintf(stderr, "expected error %s:%u containing '%s'; have:\n", file_suffix, line, needle);
        for (size_t i = 0; i < s->n_errors; i++)
                fprintf(stderr, "  %s:%u: %s\n", s->errors[i].file, s->errors[i].line, s->errors[i].message);
        return NULL;
}

TEST(order_hide_mask) {
        const char *root = fresh_root("order");
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        char *p;

        test_write(root, "etc/latnice.d/20-b.conf", "[Process b]\nComm=b\nLatencyNice=2\n");
        test_write(root, "run/latnice.d/10-a.conf", "[Process a]\nComm=a\nLatencyNice=1\n");
        test_write(root, VENDOR "/30-c.conf", "[Process c]\nComm=c\nLatencyNice=3\n");
        /* hidden: same name in /etc wins over /usr/lib */
        test_write(root, "etc/latnice.d/40-same.conf", "[Process etc]\nComm=x\nLatencyNice=4\n");
        test_write(root, VENDOR "/40-same.conf", "[Process vendor]\nComm=x\nLatencyNice=5\n");
        /* masked: symlink to /dev/null in /etc hides the vendor file */
        test_write(root, VENDOR "/50-masked.conf", "[Process masked]\nComm=m\nLatencyNice=6\n");
        p = test_path(root, "etc/latnice.d/50-masked.conf");
        ASSERT_EQ(symlink("/dev/null", p), 0);
        /* not *.conf, or hidden dot files: ignored */
        test_write(root, "etc/latnice.d/README", "garbage\n");
        test_write(root, "etc/latnice.d/.hidden.conf", "garbage\n");
        test_write(root, "etc/latnice.d/x.conf.bak", "garbage\n");

        ASSERT_EQ(rule_set_load(root, NULL, NULL, &s), 0);
        ASSERT_EQ(s->n_errors, 0);
        ASSERT_EQ(s->n_rules, 4);
        ASSERT_STREQ(s->rules[0].name, "a");
        ASSERT_STREQ(s->rules[1].name, "b");
        ASSERT_STREQ(s->rules[2].name, "c");
        ASSERT_STREQ(s->rules[3].name, "etc");
        ASSERT_TRUE(!find_rule(s, "vendor"));
        ASSERT_TRUE(!find_rule(s, "masked"));
        ASSERT_STREQ(s->rules[0].file, "/run/latnice.d/10-a.conf");
        ASSERT_EQ(s->rules[0].line, 1);

        ASSERT_EQ(s->n_files, 7);
        ASSERT_STREQ(s->files[3].shown, "/etc/latnice.d/40-same.conf");
        ASSERT_EQ(s->files[3].state, CONF_FILE_ACTIVE);
        ASSERT_STREQ(s->files[4].shown, VENDOR_SHOWN "/40-same.conf");
        ASSERT_EQ(s->files[4].state, CONF_FILE_HIDDEN);
        ASSERT_STREQ(s->files[4].hidden_by, "/etc/latnice.d/40-same.conf");
        ASSERT_STREQ(s->files[5].shown, "/etc/latnice.d/50-masked.conf");
        ASSERT_EQ(s->files[5].state, CONF_FILE_MASKED);
        ASSERT_EQ(s->files[6].state, CONF_FILE_HIDDEN); /* the vendor file the mask hides */
}

TEST(profile_last) {
        const char *root = fresh_root("profile");
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        char *prof = test_path(root, "desk.conf");

        test_write(root, "desk.conf", "[Process fromprofile]\nComm=x\nLatencyNice=-5\n");
        test_write(root, "etc/latnice.d/99-z.conf", "[Process local]\nComm=x\nLatencyNice=5\n");
        ASSERT_EQ(rule_set_load(root, "desk", prof, &s), 0);
        ASSERT_EQ(s->n_errors, 0);
        ASSERT_EQ(s->n_rules, 2);
        ASSERT_STREQ(s->rules[0].name, "local");
        ASSERT_STREQ(s->rules[1].name, "fromprofile");
        ASSERT_TRUE(s->files[1].profile);
        ASSERT_STREQ(s->profile, "desk");
        s = rule_set_free(s);

        ASSERT_EQ(rule_set_load(root, "nope", "/nonexistent/nope.conf", &s), 0);
        ASSERT_EQ(s->n_rules, 1);
        ASSERT_TRUE(find_error(s, "nope.conf", 0, "profile 'nope' does not exist"));
}

TEST(keys) {
        const char *root = fresh_root("keys");
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        const Rule *r;

        test_write(root, "etc/latnice.d/a.conf",
                   "# comment\n"
                   "; another\n"
                   "\n"
                   "[Process all]\n"
                   "  Comm = pipewire  wireplumber ; inline comment\n"
                   "\tComm=pulse*\n"
                   "Exe=/usr/bin/foo bar\n"
                   "Cmdline=game.exe\n"
                   "Parent=steam\n"
                   "User=1000 alice\n"
                   "Group=audio\n"
                   "Cgroup=/user.slice/*\n"
                   "Unit=app-*.scope\r\n"
                   "LatencyNice=-20\n"
                   "Threads=main\n"
                   "Override=yes\n"
                   "Inherit=yes\n"
                   "[Process reset]\n"
                   "Comm=a b\n"
                   "Comm=\n"
                   "Comm=c\n"
                   "LatencyNice=19\n"
                   "[Unit game.slice]\n"
                   "LatencyNice=-5\n"
                   "[Unit apps]\n"
                   "Unit=app-*.scope user@*.service\n"
                   "LatencyNice=3\n");
        ASSERT_EQ(rule_set_load(root, NULL, NULL, &s), 0);
        ASSERT_EQ(s->n_errors, 0);
        ASSERT_EQ(s->n_rules, 4);

        r = find_rule(s, "all");
        ASSERT_TRUE(r);
        ASSERT_EQ(r->kind, RULE_PROCESS);
        ASSERT_EQ(r->line, 4);
        expect_values(r, MATCH_COMM, "pipewire", "wireplumber", "pulse*", NULL);
        ASSERT_EQ(strv_length(rule_match(r, MATCH_EXE)), 2);
        ASSERT_STREQ(rule_match(r, MATCH_CMDLINE)[0], "game.exe");
        ASSERT_STREQ(rule_match(r, MATCH_PARENT)[0], "steam");
        ASSERT_STREQ(rule_match(r, MATCH_USER)[1], "alice");
        ASSERT_STREQ(rule_match(r, MATCH_GROUP)[0], "audio");
        ASSERT_STREQ(rule_match(r, MATCH_CGROUP)[0], "/user.slice/*");
        ASSERT_STREQ(rule_match(r, MATCH_UNIT)[0], "app-*.scope");
        ASSERT_EQ(r->latency_nice, -20);
        ASSERT_EQ(r->threads, THREADS_MAIN);
        ASSERT_TRUE(r->override);
        ASSERT_TRUE(r->inherit);
        ASSERT_TRUE(rule_set_needs_cmdline(s));

        r = find_rule(s, "reset");
        ASSERT_EQ(strv_length(rule_match(r, MATCH_COMM)), 1);
        ASSERT_STREQ(rule_match(r, MATCH_COMM)[0], "c");
        ASSERT_EQ(r->threads, THREADS_ALL);
        ASSERT_TRUE(!r->override);
        ASSERT_TRUE(!r->inherit);

        r = find_rule(s, "game.slice");
        ASSERT_EQ(r->kind, RULE_UNIT);
        ASSERT_STREQ(rule_match(r, MATCH_UNIT)[0], "game.slice");
        r = find_rule(s, "apps");
        ASSERT_EQ(strv_length(rule_match(r, MATCH_UNIT)), 2);
}

TEST(errors) {
        const char *root = fresh_root("errors");
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        char longline[400];

        memset(longline, 'x', sizeof(longline));
        memcpy(longline, "Comm=", 5);
        longline[sizeof(longline) - 1] = 0;

        test_write(root, "etc/latnice.d/bad.conf",
                   "Comm=early\n"                        /* 1: outside section */
                   "[Process]\n"                         /* 2: no name */
                   "Comm=x\n"
                   "[]\n"                                /* 4: no kind */
                   "[Frobnicate x]\n"                    /* 5: unknown kind */
                   "[Process low]\n"                     /* 6 */
                   "Comm=low\n"
                   "LatencyNice=-21\n"                   /* 8: out of range */
                   "[Process word]\n"                    /* 9 */
                   "Comm=word\n"
                   "LatencyNice=abc\n"                   /* 11: not a number */
                   "[Process nokeys]\n"                  /* 12: no match keys */
                   "LatencyNice=1\n"
                   "[Process nolatency]\n"               /* 14: no LatencyNice */
                   "Comm=x\n"
                   "[Process unknown]\n"                 /* 16 */
                   "Comm=x\n"
                   "Frob=1\n"                            /* 18: unknown key */
                   "comm=y\n"                            /* 19: case hint */
                   "LatencyNice=1\n"
                   "[Process good]\n"                    /* 21: the survivor */
                   "Comm=good\n"
                   "LatencyNice=7\n"
                   "[Process good]\n"                    /* 24: duplicate */
                   "Comm=dup\n"
                   "LatencyNice=8\n"
                   "[Process syntax]\n"                  /* 27 */
                   "this is not a key\n"                 /* 28: malformed */
                   "Comm=x\n"
                   "LatencyNice=1\n"
                   "[Process long]\n"                    /* 31 */
                   "%LONG%\n"                            /* 32: too long */
                   "LatencyNice=1\n"
                   "[Process longcomm]\n"                /* 34 */
                   "Comm=averyveryverylongname\n"        /* 35: > 15 chars */
                   "LatencyNice=1\n"
                   "[Unit u]\n"                          /* 37 */
                   "Comm=x\n"                            /* 38: not for units */
                   "LatencyNice=1\n"
                   "[Process bools]\n"                   /* 40 */
                   "Comm=x\n"
                   "Override=maybe\n"                    /* 42 */
                   "Threads=some\n"                      /* 43 */
                   "LatencyNice=20\n"                    /* 44 */
                   "[Process cg]\n"                      /* 45 */
                   "Cgroup=relative/path\n"              /* 46 */
                   "LatencyNice=1\n"
                   "[Process trailing] x\n"              /* 48 */
                   "[Process open\n"                     /* 49 */
                   "[Process two words]\n");             /* 50 */
        /* put the long line in place of %LONG% */
        {
                char *p = test_path(root, "etc/latnice.d/bad.conf"), *buf = NULL, *at;
                FILE *f;
                size_t n;

                ASSERT_EQ(read_full_file(AT_FDCWD, p, 1 << 20, &buf, &n), 0);
                at = strstr(buf, "%LONG%");
                ASSERT_TRUE(at);
                f = fopen(p, "we");
                fprintf(f, "%.*s%s%s", (int) (at - buf), buf, longline, at + 6);
                fclose(f);
                free(buf);
        }
        test_write(root, "etc/latnice.d/other.conf", "[Process other]\nComm=other\nLatencyNice=-3\n");

        ASSERT_EQ(rule_set_load(root, NULL, NULL, &s), 0);
        ASSERT_EQ(s->n_rules, 2);
        ASSERT_TRUE(find_rule(s, "good"));
        ASSERT_EQ(find_rule(s, "good")->latency_nice, 7);
        ASSERT_TRUE(find_rule(s, "other"));

        ASSERT_TRUE(find_error(s, "bad.conf", 1, "outside of any section"));
        ASSERT_TRUE(find_error(s, "bad.conf", 2, "has no name"));
        ASSERT_TRUE(find_error(s, "bad.conf", 4, "unknown section kind"));
        ASSERT_TRUE(find_error(s, "bad.conf", 5, "unknown section kind '[Frobnicate]'"));
        ASSERT_TRUE(find_error(s, "bad.conf", 8, "LatencyNice=-21 is out of range"));
        ASSERT_TRUE(find_error(s, "bad.conf", 11, "LatencyNice=abc is not a number"));
        ASSERT_TRUE(find_error(s, "bad.conf", 12, "has no match keys"));
        ASSERT_TRUE(find_error(s, "bad.conf", 14, "has no LatencyNice="));
        ASSERT_TRUE(find_error(s, "bad.conf", 18, "unknown key 'Frob'"));
        ASSERT_TRUE(find_error(s, "bad.conf", 19, "did you mean 'Comm'"));
        ASSERT_TRUE(find_error(s, "bad.conf", 24, "duplicate section [Process good], first defined at line 21"));
        ASSERT_TRUE(find_error(s, "bad.conf", 28, "expected Key=Value"));
        ASSERT_TRUE(find_error(s, "bad.conf", 32, "longer than"));
        ASSERT_TRUE(find_error(s, "bad.conf", 35, "21 bytes and the kernel keeps only the first 15 bytes"));
        ASSERT_TRUE(find_error(s, "bad.conf", 35, "use Exe=\"averyveryverylongname\""));
        ASSERT_TRUE(find_error(s, "bad.conf", 38, "not valid in a [Unit] rule"));
        ASSERT_TRUE(find_error(s, "bad.conf", 42, "Override=maybe is not a boolean"));
        ASSERT_TRUE(find_error(s, "bad.conf", 43, "Threads=some is invalid"));
        ASSERT_TRUE(find_error(s, "bad.conf", 44, "LatencyNice=20 is out of range"));
        ASSERT_TRUE(find_error(s, "bad.conf", 46, "absolute cgroup path"));
        ASSERT_TRUE(find_error(s, "bad.conf", 48, "text after"));
        ASSERT_TRUE(find_error(s, "bad.conf", 49, "without closing"));
        /* a name with spaces is a name: this rule fails for having no keys, not for its name */
        ASSERT_TRUE(find_error(s, "bad.conf", 50, "[Process two words] has no match keys"));
        /* Errors are reported in file order. */
        for (size_t i = 1; i < s->n_errors; i++)
                if (strcmp(s->errors[i].file, s->errors[i - 1].file) == 0 &&
                    s->errors[i].line < s->errors[i - 1].line &&
                    !strstr(s->errors[i].message, "duplicate"))
                        ASSERT_TRUE(!"errors out of order");
}

/* Values with spaces: quoting as systemd does for lists; names with spaces; bytes, not characters. */
TEST(ancestor_key) {
        static const char conf[] =
                "[Process steam]\n"
                "Ancestor=reaper /usr/lib/steam/steam 'Zup! 5.exe'\n"
                "LatencyNice=-5\n"
                "[Process relative]\n"      /* 4 */
                "Ancestor=bin/steam\n"      /* 5: neither a name nor an absolute path */
                "LatencyNice=1\n"
                "[Process app]\n"           /* 7 */
                "App=com.valvesoftware.Steam org.gnome.* firefox\n"
                "LatencyNice=-3\n"
                "[Process badapp]\n"        /* 10 */
                "App=../../etc/passwd\n"    /* 11: not an ID */
                "LatencyNice=1\n";
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        char **v;

        ASSERT_EQ(rule_set_load_buffer("anc.conf", conf, strlen(conf), &s), 0);
        ASSERT_TRUE(find_rule(s, "steam"));
        v = rule_match(find_rule(s, "steam"), MATCH_ANCESTOR);
        ASSERT_EQ(strv_length(v), 3);
        ASSERT_STREQ(v[2], "Zup! 5.exe");
        ASSERT_TRUE(find_error(s, "anc.conf", 5, "Ancestor=bin/steam must be a name"));
        ASSERT_TRUE(!find_rule(s, "relative"));
        ASSERT_STREQ(match_key_to_string(MATCH_ANCESTOR), "Ancestor");
        ASSERT_EQ(strv_length(rule_match(find_rule(s, "app"), MATCH_APP)), 3);
        ASSERT_TRUE(find_error(s, "anc.conf", 11, "App=../../etc/passwd is not an application ID"));
        ASSERT_TRUE(!find_rule(s, "badapp"));
}

/* Thread=: a thread's own name, 15 bytes like Comm=; it picks threads itself, so not with Threads=main. */
TEST(thread_key) {
        static const char conf[] =
                "[Process pw-data]\n"
                "Comm=pipewire\n"
                "Thread='data-loop.0' data-loop.* \"Web Content\"\n"
                "LatencyNice=-15\n"
                "[Process long]\n"                      /* 5 */
                "Comm=x\n"
                "Thread=0123456789abcdefg\n"            /* 7: 17 bytes, never matches */
                "LatencyNice=1\n"
                "[Process main]\n"                      /* 9: Thread= with Threads=main */
                "Comm=y\n"
                "Thread=worker\n"
                "Threads=main\n"
                "LatencyNice=1\n"
                "[Process alone]\n"                     /* 14: Thread= alone is a match key */
                "Thread=GameThread\n"
                "LatencyNice=-3\n"
                "[Process longglob]\n"                  /* 17 */
                "Comm=z\n"
                "Thread=0123456789abcdef*\n"            /* a glob may be longer */
                "LatencyNice=2\n";
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        char **v;

        ASSERT_EQ(rule_set_load_buffer("thr.conf", conf, strlen(conf), &s), 0);
        ASSERT_STREQ(match_key_to_string(MATCH_THREAD), "Thread");
        ASSERT_TRUE(find_rule(s, "pw-data"));
        v = rule_match(find_rule(s, "pw-data"), MATCH_THREAD);
        ASSERT_EQ(strv_length(v), 3);
        ASSERT_STREQ(v[0], "data-loop.0");
        ASSERT_STREQ(v[2], "Web Content");
        ASSERT_EQ(find_rule(s, "pw-data")->threads, THREADS_ALL);
        ASSERT_TRUE(find_error(s, "thr.conf", 7, "Thread=\"0123456789abcdefg\" can never match"));
        ASSERT_TRUE(find_error(s, "thr.conf", 9, "has both Thread= and Threads=main"));
        ASSERT_TRUE(!find_rule(s, "main"));
        ASSERT_TRUE(find_rule(s, "alone"));
        ASSERT_TRUE(find_rule(s, "longglob"));
}

TEST(quoting) {
        const char *root = fresh_root("quoting");
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        const Rule *r;

        test_write(root, "etc/latnice.d/q.conf",
                   "[Process Web Content]\n"                               /* 1 */
                   "Comm=\"Web Content\" firefox 'Isolated Web Co'\n"
                   "Exe=\"Zup! 5.exe\" Baldur's\\ Gate.exe \"a\\\"b\" Foo\\[Steam].exe\n"
                   "Cmdline=\"C:\\\\Games\\\\x.exe\" semi\\;colon\n"
                   "LatencyNice=-3\n"
                   "[Process  trailing spaces  ]\n"                        /* 6 */
                   "Comm=\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\n" /* 7: 14 bytes, 7 characters */
                   "LatencyNice=1\n"
                   "[Process bad quotes]\n"                                /* 9 */
                   "Comm=\"open\n"                                        /* 10 */
                   "LatencyNice=1\n"
                   "[Process bad quotes 2]\n"                              /* 12 */
                   "Comm=\"a\"b\n"                                       /* 13 */
                   "LatencyNice=1\n"
                   "[Process bad quotes 3]\n"                              /* 15 */
                   "Comm=x \"\"\n"                                       /* 16 */
                   "LatencyNice=1\n"
                   "[Process bad quotes 4]\n"                              /* 18 */
                   "Comm=x\\\n"                                          /* 19 */
                   "LatencyNice=1\n"
                   "[Process utf8 long]\n"                                 /* 21 */
                   /* 22: 16 bytes, 8 characters */
                   "Comm=\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\n"
                   "LatencyNice=1\n"
                   "[Process tab\x01name]\n"                              /* 24 */
                   "Comm=x\n"
                   "LatencyNice=1\n");
        ASSERT_EQ(rule_set_load(root, NULL, NULL, &s), 0);
        for (size_t i = 0; i < s->n_errors; i++)
                fprintf(stderr, "  %u: %s\n", s->errors[i].line, s->errors[i].message);
        ASSERT_EQ(s->n_rules, 2);

        r = find_rule(s, "Web Content");
        ASSERT_TRUE(r);
        expect_values(r, MATCH_COMM, "Web Content", "firefox", "Isolated Web Co", NULL);
        ASSERT_EQ(strv_length(rule_match(r, MATCH_EXE)), 4);
        ASSERT_STREQ(rule_match(r, MATCH_EXE)[0], "Zup! 5.exe");
        ASSERT_STREQ(rule_match(r, MATCH_EXE)[1], "Baldur's Gate.exe"); /* a quote inside a word is a character */
        ASSERT_STREQ(rule_match(r, MATCH_EXE)[2], "a\"b");
        ASSERT_STREQ(rule_match(r, MATCH_EXE)[3], "Foo\\[Steam].exe"); /* the glob escape stays for fnmatch */
        ASSERT_STREQ(rule_match(r, MATCH_CMDLINE)[0], "C:\\Games\\x.exe");
        ASSERT_STREQ(rule_match(r, MATCH_CMDLINE)[1], "semi;colon");

        r = find_rule(s, "trailing spaces");
        ASSERT_TRUE(r);
        ASSERT_EQ(strlen(rule_match(r, MATCH_COMM)[0]), 14);

        ASSERT_TRUE(find_error(s, "q.conf", 10, "double quote (\") is not closed"));
        ASSERT_TRUE(find_error(s, "q.conf", 13, "text right after a closing quote"));
        ASSERT_TRUE(find_error(s, "q.conf", 16, "empty quoted word"));
        ASSERT_TRUE(find_error(s, "q.conf", 19, "backslash at the end"));
        ASSERT_TRUE(find_error(s, "q.conf", 22, "16 bytes"));
        ASSERT_TRUE(find_error(s, "q.conf", 22, "use Exe="));
        ASSERT_TRUE(find_error(s, "q.conf", 24, "control character"));
        ASSERT_EQ(s->n_errors, 6);
}

TEST(bad_files) {
        const char *root = fresh_root("badfiles");
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        char *p, *big;
        FILE *f;

        /* a directory named like a rule file */
        p = test_path(root, "etc/latnice.d/10-dir.conf/x");
        test_write(root, "etc/latnice.d/10-dir.conf/x", "");
        /* 10 MB */
        big = malloc(10 * 1024 * 1024);
        ASSERT_TRUE(big);
        memset(big, '#', 10 * 1024 * 1024 - 1);
        big[10 * 1024 * 1024 - 1] = 0;
        test_write(root, "etc/latnice.d/20-big.conf", big);
        free(big);
        /* binary garbage with NUL bytes */
        p = test_path(root, "etc/latnice.d/30-bin.conf");
        f = fopen(p, "we");
        ASSERT_TRUE(f);
        for (int i = 0; i < 4096; i++)
                fputc((i * 7919) & 0xff, f);
        fclose(f);
        /* a valid file still loads */
        test_write(root, "etc/latnice.d/40-ok.conf", "[Process ok]\nComm=ok\nLatencyNice=1\n");
        /* /run/latnice.d is a file, not a directory */
        test_write(root, "run/latnice.d", "x");

        ASSERT_EQ(rule_set_load(root, NULL, NULL, &s), 0);
        ASSERT_EQ(s->n_rules, 1);
        ASSERT_STREQ(s->rules[0].name, "ok");
        ASSERT_TRUE(find_error(s, "10-dir.conf", 0, "is a directory"));
        ASSERT_TRUE(find_error(s, "20-big.conf", 0, "larger than"));
        ASSERT_TRUE(find_error(s, "30-bin.conf", 0, "NUL bytes"));
        ASSERT_TRUE(find_error(s, "/run/latnice.d", 0, "not a directory"));
}

TEST(unreadable) {
        const char *root = fresh_root("unreadable");
        char *dir = test_path(root, "etc/latnice.d");
        pid_t pid;
        int status;

        if (geteuid() != 0) {
                fprintf(stderr, "unreadable: not root, skipping the privilege-drop part\n");
                return;
        }
        test_write(root, "etc/latnice.d/a.conf", "[Process a]\nComm=a\nLatencyNice=1\n");
        test_write(root, VENDOR "/b.conf", "[Process b]\nComm=b\nLatencyNice=1\n");
        ASSERT_EQ(chmod(test_tmpdir(), 0755), 0);
        ASSERT_EQ(chmod(dir, 0), 0);

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                RuleSet *s = NULL;

                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        _exit(2);
                if (rule_set_load(root, NULL, NULL, &s) < 0)
                        _exit(3);
                if (s->n_rules != 1 || !find_error(s, "/etc/latnice.d", 0, "Permission denied"))
                        _exit(4);
                _exit(0);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
        ASSERT_EQ(chmod(dir, 0755), 0);
}

TEST(many_rules) {
        const char *root = fresh_root("many");
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        size_t n = 5000, len = 0;
        char *buf = malloc(n * 64);

        ASSERT_TRUE(buf);
        for (size_t i = 0; i < n; i++)
                len += (size_t) sprintf(buf + len, "[Process r%zu]\nComm=c%zu\nLatencyNice=%d\n", i, i,
                                        (int) (i % 40) - 20);
        test_write(root, "etc/latnice.d/many.conf", buf);
        free(buf);
        ASSERT_EQ(rule_set_load(root, NULL, NULL, &s), 0);
        ASSERT_EQ(s->n_errors, 0);
        ASSERT_EQ(s->n_rules, n);
        ASSERT_STREQ(s->rules[n - 1].name, "r4999");
        ASSERT_EQ(s->rules[n - 1].line, 3 * (n - 1) + 1);
}

TEST(load_files) {
        const char *root = fresh_root("files");
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        char *files[3];

        test_write(root, "x.conf", "[Process x]\nComm=x\nLatencyNice=1\n");
        test_write(root, "y.conf", "[Process y]\nComm=y\nLatencyNice=99\n");
        files[0] = test_path(root, "x.conf");
        files[1] = test_path(root, "y.conf");
        files[2] = NULL;
        ASSERT_EQ(rule_set_load_files(files, &s), 0);
        ASSERT_EQ(s->n_rules, 1);
        ASSERT_EQ(s->n_errors, 1);
        ASSERT_TRUE(find_error(s, "y.conf", 3, "out of range"));
}

TEST(daemon_config) {
        static const struct {
                const char *text;
                DaemonScheduler scheduler;
                const char *error; /* in the message; NULL: no error */
        } schedulers[] = {
                { "[Daemon]\nProfile=gaming\n", DAEMON_SCHEDULER_NONE, NULL },
                { "[Daemon]\nScheduler=latnice\n", DAEMON_SCHEDULER_LATNICE, NULL },
                { "[Daemon]\nScheduler=latnice\nScheduler=none\n", DAEMON_SCHEDULER_NONE, NULL },
                { "[Daemon]\nScheduler=latnice\nScheduler=\n", DAEMON_SCHEDULER_NONE, NULL },
                { "[Daemon]\n\nScheduler=lavd\n", DAEMON_SCHEDULER_NONE,
                  "latniced.conf:3: Scheduler=lavd is not one of none, latnice" },
                { "[Foreground]\nScheduler=latnice\n", DAEMON_SCHEDULER_NONE,
                  ":2: unknown key 'Scheduler' in [Foreground]" },
        };
        const char *root = fresh_root("dconf");
        DaemonConfig c = {};
        char *p = test_path(root, "latniced.conf");

        ASSERT_EQ(daemon_config_load(p, &c), 0); /* missing: defaults */
        ASSERT_TRUE(!c.profile && !c.error);

        test_write(root, "latniced.conf", "# x\n[Daemon]\nProfile=gaming\n");
        ASSERT_EQ(daemon_config_load(p, &c), 0);
        ASSERT_STREQ(c.profile, "gaming");
        ASSERT_TRUE(!c.error);
        daemon_config_done(&c);

        test_write(root, "latniced.conf", "[Daemon]\nProfile=desktop\nFoo=1\n");
        ASSERT_EQ(daemon_config_load(p, &c), 0);
        ASSERT_TRUE(c.error);
        ASSERT_TRUE(strstr(c.error, "latniced.conf:3: unknown key 'Foo'"));
        daemon_config_done(&c);

        test_write(root, "latniced.conf", "[Daemon]\nProfile=../etc/passwd\n");
        ASSERT_EQ(daemon_config_load(p, &c), 0);
        ASSERT_TRUE(c.error && strstr(c.error, ":2: Profile=../etc/passwd is not a profile name"));
        daemon_config_done(&c);

        /* Scheduler=: off unless asked for; a later line wins; a wrong word is an error with its line. */
        for (size_t i = 0; i < ELEMENTSOF(schedulers); i++) {
                test_write(root, "latniced.conf", schedulers[i].text);
                ASSERT_EQ(daemon_config_load(p, &c), 0);
                ASSERT_EQ(c.scheduler, schedulers[i].scheduler);
                ASSERT_TRUE(schedulers[i].error ? c.error && strstr(c.error, schedulers[i].error) : !c.error);
                daemon_config_done(&c);
        }
        ASSERT_STREQ(daemon_scheduler_to_string(DAEMON_SCHEDULER_LATNICE), "latnice");
        ASSERT_STREQ(daemon_scheduler_to_string(DAEMON_SCHEDULER_NONE), "none");
        ASSERT_TRUE(daemon_scheduler_to_string(_DAEMON_SCHEDULER_MAX) == NULL);
}
