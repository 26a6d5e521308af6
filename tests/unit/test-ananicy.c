/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* import-ananicy's translation: every field, types, comments, broken lines, conflicts, and the
 * written file loaded and matched as latniced would. */

#include "ananicy.h"
#include "match.h"
#include "rules.h"
#include "tests.h"
#include "util.h"

static void import(AnanicyImport *imp, const char *file, const char *text) {
        ASSERT_EQ(ananicy_import_buffer(imp, file, text, strlen(text)), 0);
}

/* An import and what it converts to: the written rule text, the rule set it loads as, and the counts
 * ananicy_import_write() gives. */
typedef struct Conversion {
        AnanicyImport imp;
        RuleSet *s;
        char *text;
        size_t rules, names;
} Conversion;

static void conversion_done(Conversion *c) {
        ananicy_import_done(&c->imp);
        rule_set_free(c->s);
        free(c->text);
}

/* Imports as file what fill() puts in a stream. */
static void import_written(Conversion *c, const char *file, void (*fill)(FILE *f)) {
        _cleanup_(freep) char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        ASSERT_TRUE(f);
        fill(f);
        ASSERT_EQ(fclose(f), 0);
        import(&c->imp, file, buf);
}

/* Writes the import and loads it as rules (no load errors allowed). */
static void convert(Conversion *c) {
        size_t size = 0;
        FILE *f = open_memstream(&c->text, &size);

        ASSERT_TRUE(f);
        ASSERT_EQ(ananicy_import_write(&c->imp, "/etc/ananicy.d", f, &c->rules, &c->names), 0);
        ASSERT_EQ(fclose(f), 0);
        ASSERT_EQ(rule_set_load_buffer("imported.conf", c->text, size, &c->s), 0);
        for (size_t i = 0; i < c->s->n_errors; i++)
                fprintf(stderr, "%s:%u: %s\n", c->s->errors[i].file, c->s->errors[i].line, c->s->errors[i].message);
        ASSERT_EQ(c->s->n_errors, 0);
}

static bool has_message(const AnanicyImport *imp, AnanicySeverity sev, const char *file, unsigned line,
                        const char *part) {
        for (size_t i = 0; i < imp->n_messages; i++) {
                const AnanicyMessage *m = &imp->messages[i];

                if (m->severity == sev && streq_ptr(m->file, file) && m->line == line && strstr(m->text, part))
                        return true;
        }
        return false;
}

/* The latency nice the rules give a process, or 100 when no rule matches. */
static int value_of(const RuleSet *s, const char *comm, const char *exe, char **argv) {
        MatchResult m = {};
        TaskInfo t = { .comm = comm, .exe = exe, .argv = argv };
        int v;

        ASSERT_TRUE(match_task(s, &t, false, &m) >= 0);
        v = m.rule ? m.rule->latency_nice : 100;
        match_result_done(&m);
        return v;
}

TEST(table) {
        AnanicyFields f = {};
        int v = 0;

        ASSERT_TRUE(!ananicy_latency_nice(&f, &v));
        f.sched = (char *) "idle";
        ASSERT_TRUE(ananicy_latency_nice(&f, &v) && v == 19);
        f.sched = (char *) "batch";
        ASSERT_TRUE(ananicy_latency_nice(&f, &v) && v == 10);
        f.sched = (char *) "rr";
        ASSERT_TRUE(ananicy_latency_nice(&f, &v) && v == -15);
        f.sched = (char *) "other";
        ASSERT_TRUE(!ananicy_latency_nice(&f, &v));
        f.has_nice = true, f.nice = 7; /* nice before sched, as ananicy-cpp */
        ASSERT_TRUE(ananicy_latency_nice(&f, &v) && v == 7);
        f.has_latency_nice = true, f.latency_nice = -3; /* latency_nice before nice */
        ASSERT_TRUE(ananicy_latency_nice(&f, &v) && v == -3);
}

TEST(tree) {
        _cleanup_(conversion_done) Conversion c = {};

        import(&c.imp, "types/00-default.types",
               "# Types, ananicy style\n"
               "\n"
               "{ \"type\": \"Game\", \"nice\": -5, \"ioclass\": \"best-effort\" }\n"
               "   { \"type\": \"BG_CPUIO\", \"nice\": 16, \"sched\": \"idle\", \"ioclass\": \"idle\", "
               "\"ionice\": 7 }\n"
               "{ \"type\": \"LowLatency_RT\", \"sched\": \"rr\", \"rtprio\": 10 }\n"
               "{ \"type\": \"Heavy_CPU\", \"nice\": 9, \"latency_nice\": 12, \"oom_score_adj\": 100 }\n"
               "{ \"type\": \"OnlyIO\", \"ioclass\": \"idle\" }\n"
               "{ \"type\": \"Odd\", \"sched\": \"deadline\" }\n"
               "{ \"type\": \"Br]ack[et\", \"nice\": 6 }\n");
        import(&c.imp, "00-cgroups/x.cgroups", "{ \"cgroup\": \"cpu80\", \"CPUQuota\": 80 }\n");
        import(&c.imp, "games/games.rules",
               "{ \"name\": \"Game.exe\", \"type\": \"Game\" }\n"
               "{ \"name\": \"steam\", \"type\": \"Game\", \"nice\": 2 } # its own value\n"
               "{ \"name\": \"gcc\", \"type\": \"Heavy_CPU\", \"cgroup\": \"cpu80\" }\n"
               "{ \"name\": \"chromium-browser-stable\", \"type\": \"Heavy_CPU\" }\n"
               "{ \"name\": \"weird*name[x]\", \"type\": \"BG_CPUIO\" }\n"
               "{ \"name\": \"java\", \"cmdlines\": [\"freenet.node.NodeStarter\"], \"type\": \"BG_CPUIO\" }\n"
               "{ \"name\": \"pipewire\", \"type\": \"LowLatency_RT\" }\n"
               "{ \"name\": \"updatedb\", \"type\": \"OnlyIO\" }\n"
               "{ \"name\": \"mystery\", \"type\": \"NoSuchType\", \"nice\": 3 }\n"
               "{ \"name\": \"broken\", \"type\":\n"
               "not json\n"
               "{ \"nice\": 3 }\n"
               "{ \"name\": \"x\", \"nice\": \"high\", \"colour\": 1 }\n"
               "{ \"name\": \"y\", \"latency_nice\": -40 }\n"
               "{ \"name\": \"z\", \"nice\": 4 } trailing\n"
               "[ 1, 2 ]\n"
               "{ \"name\": \"a\\u0001b\", \"nice\": 1 }\n"
               "{ \"name\": \"q\\\" m; #n\\\\\", \"nice\": -1 }\n"
               "{ \"name\": \"make\", \"sched\": \"batch\" }\n"
               "{ \"name\": \"bracketed\", \"type\": \"Br]ack[et\" }\n");
        import(&c.imp, "zz-late.rules",
               "{ \"name\": \"gcc\", \"type\": \"BG_CPUIO\" }\n"
               "{ \"name\": \"Game.exe\", \"type\": \"Game\" }\n");

        ASSERT_EQ(c.imp.n_files, 4);
        ASSERT_EQ(c.imp.n_cgroups, 1);
        /* Broken lines, each with file:line and why. */
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "games/games.rules", 10, "does not end on this line"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "games/games.rules", 11, "'{' expected"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "games/games.rules", 12, "neither \"name\" nor \"type\""));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "games/games.rules", 13, "\"nice\" must be a whole number"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_WARNING, "games/games.rules", 13, "unknown field \"colour\""));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "games/games.rules", 14, "outside -20..19"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "games/games.rules", 15, "text after the object"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "games/games.rules", 16, "'{' expected"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "games/games.rules", 17, "control characters"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_WARNING, "types/00-default.types", 8, "\"deadline\" is not a policy"));

        convert(&c);
        /* Written after resolving: unknown types, duplicates and conflicts. */
        ASSERT_TRUE(has_message(&c.imp, ANANICY_WARNING, "games/games.rules", 9, "type \"NoSuchType\" is not defined"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_WARNING, "zz-late.rules", 1, "also defined at games/games.rules:3"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_WARNING, "zz-late.rules", 2, "repeats games/games.rules:1"));
        ASSERT_EQ(c.imp.n_replaced, 2);
        /* updatedb (ioclass only) and x (its nice was refused) carry nothing latnice sets; y's value was refused. */
        ASSERT_EQ(c.imp.n_no_value, 3);

        ASSERT_EQ(value_of(c.s, "Game.exe", NULL, NULL), -5);       /* the type's nice */
        ASSERT_EQ(value_of(c.s, "steam", NULL, NULL), 2);           /* its own nice replaces the type's */
        ASSERT_EQ(value_of(c.s, "gcc", NULL, NULL), 16);            /* the later definition, BG_CPUIO */
        ASSERT_EQ(value_of(c.s, "pipewire", NULL, NULL), -15);      /* sched rr */
        ASSERT_EQ(value_of(c.s, "make", NULL, NULL), 10);           /* sched batch */
        ASSERT_EQ(value_of(c.s, "bracketed", NULL, NULL), 6);       /* a type name that cannot head a section */
        ASSERT_EQ(value_of(c.s, "mystery", NULL, NULL), 3);         /* unknown type: own fields */
        ASSERT_EQ(value_of(c.s, "updatedb", NULL, NULL), 100);
        /* A 23-byte name is cut to 15 in comm: matched by file name. */
        ASSERT_EQ(value_of(c.s, "chromium-browse", "/usr/lib/chromium/chromium-browser-stable", NULL), 12);
        /* Glob characters in a name are the characters themselves. */
        ASSERT_EQ(value_of(c.s, "weird*name[x]", NULL, NULL), 16);
        ASSERT_EQ(value_of(c.s, "weirdXnamex", NULL, NULL), 100);
        ASSERT_EQ(value_of(c.s, "q\" m; #n\\", NULL, NULL), -1); /* quote, blank, comment starts, backslash */
        /* cmdlines: java only with that argument word. */
        char *freenet[] = { (char *) "java", (char *) "freenet.node.NodeStarter", NULL };
        char *other[] = { (char *) "java", (char *) "-jar", (char *) "app.jar", NULL };
        ASSERT_EQ(value_of(c.s, "java", "/usr/bin/java", freenet), 16);
        ASSERT_EQ(value_of(c.s, "java", "/usr/bin/java", other), 100);
        ASSERT_TRUE(strstr(c.text, "ioclass, ionice, oom_score_adj, cgroup, rtprio"));
        ASSERT_EQ(c.names, 11);
}

/* Thousands of names in one type: the Comm= lines wrap below the rule parser's line limit. */
static void write_bulk(FILE *f) {
        fprintf(f, "{ \"type\": \"Bulk\", \"nice\": 19 }\n");
        for (int i = 0; i < 15000; i++)
                fprintf(f, "{ \"name\": \"prog%05d\", \"type\": \"Bulk\" }\n", i);
}

TEST(large) {
        _cleanup_(conversion_done) Conversion c = {};

        import_written(&c, "bulk.rules", write_bulk);
        convert(&c);
        ASSERT_EQ(c.names, 15000);
        ASSERT_EQ(c.rules, 1);
        ASSERT_EQ(c.imp.n_errors, 0);
        ASSERT_EQ(value_of(c.s, "prog00000", NULL, NULL), 19);
        ASSERT_EQ(value_of(c.s, "prog14999", NULL, NULL), 19);
        ASSERT_EQ(value_of(c.s, "prog15000", NULL, NULL), 100);
        for (const char *p = c.text, *nl; (nl = strchr(p, '\n')); p = nl + 1)
                ASSERT_TRUE(nl - p < 200);
}

/* What a hostile rule tree puts in the report: a megabyte name, a key with a terminal escape. */
static void write_hostile(FILE *f) {
        fputs("{ \"name\": \"", f);
        for (int i = 0; i < 1000000; i++)
                fputc('a', f);
        fputs("\", \"nice\": 3 }\n{ \"name\": \"ok\", \"nice\": 1, \"\\u001b[2Jx\": 1 }\n", f);
}

TEST(hostile) {
        _cleanup_(conversion_done) Conversion c = {};

        import_written(&c, "hostile.rules", write_hostile);
        convert(&c);
        ASSERT_EQ(c.names, 1);
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "hostile.rules", 1, "too long for a rule line"));
        ASSERT_TRUE(has_message(&c.imp, ANANICY_WARNING, "hostile.rules", 2, "unknown field \"?[2Jx\""));
        for (size_t i = 0; i < c.imp.n_messages; i++) {
                ASSERT_TRUE(strlen(c.imp.messages[i].text) < 200);
                for (const char *ch = c.imp.messages[i].text; *ch; ch++)
                        ASSERT_TRUE((unsigned char) *ch >= 0x20 && *ch != 0x7f);
        }
}

/* What ananicy-cpp accepts (it reads each line from its first '{' to its first '}'): a BOM, a comma after
 * the object, a // comment after it. Other text after the object stays a reported error. */
TEST(lenient) {
        _cleanup_(conversion_done) Conversion c = {};

        import(&c.imp, "lenient.rules",
               "\xef\xbb\xbf{ \"name\": \"bom\", \"nice\": 3 }\n"
               "{ \"name\": \"comma\", \"nice\": 4 },\n"
               "{ \"name\": \"slashes\", \"nice\": 5 } // a comment\n"
               "{ \"name\": \"both\", \"nice\": 6 }, // a comment\n"
               "// a whole line of comment\n"
               "{ \"name\": \"plus\", \"nice\": 7 }+\n");
        for (size_t i = 0; i < c.imp.n_messages; i++)
                fprintf(stderr, "%s:%u: %s\n", c.imp.messages[i].file, c.imp.messages[i].line, c.imp.messages[i].text);
        ASSERT_EQ(c.imp.n_messages, 1);
        ASSERT_TRUE(has_message(&c.imp, ANANICY_ERROR, "lenient.rules", 6, "text after the object"));
        convert(&c);
        ASSERT_EQ(value_of(c.s, "bom", NULL, NULL), 3);
        ASSERT_EQ(value_of(c.s, "comma", NULL, NULL), 4);
        ASSERT_EQ(value_of(c.s, "slashes", NULL, NULL), 5);
        ASSERT_EQ(value_of(c.s, "both", NULL, NULL), 6);
        ASSERT_EQ(value_of(c.s, "plus", NULL, NULL), 100);
}
