/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sched-ext.c: the sched_ext state and ops files, and the backend string latniced shows for them. */

#include <stdbool.h>
#include <string.h>

#include "sched-ext.h"
#include "tests.h"
#include "util.h"

static ScxState state(const char *s) {
        return scx_state_parse(s, strlen(s));
}

static const char *ops(const char *s) {
        static char name[SCX_NAME_MAX];

        memset(name, 'x', sizeof(name));
        scx_ops_name_parse(s, strlen(s), name);
        return name;
}

static const char *backend(ScxState st, const char *name, bool partial) {
        static char buf[256];
        ScxStatus s = { .state = st, .partial = partial };

        snprintf(s.name, sizeof(s.name), "%s", name);
        scx_backend_string(&s, "eevdf-slice", buf, sizeof(buf));
        return buf;
}

TEST(state_ops_note) {
        char note[512], long_name[300];

        /* Each state as the kernel writes it, with or without its newline. */
        ASSERT_EQ(state("enabled\n"), SCX_ENABLED);
        ASSERT_EQ(state("enabling\n"), SCX_ENABLING);
        ASSERT_EQ(state("disabling\n"), SCX_DISABLING);
        ASSERT_EQ(state("disabled\n"), SCX_DISABLED);
        ASSERT_EQ(state("disabled"), SCX_DISABLED);
        /* Garbage, prefixes and an empty or missing file. */
        ASSERT_EQ(state(""), SCX_UNKNOWN);
        ASSERT_EQ(state("\n"), SCX_UNKNOWN);
        ASSERT_EQ(state("enable\n"), SCX_UNKNOWN);
        ASSERT_EQ(state("enabledx\n"), SCX_UNKNOWN);
        ASSERT_EQ(state(" enabled\n"), SCX_UNKNOWN);
        ASSERT_EQ(state("enabled\nenabled\n"), SCX_UNKNOWN);
        ASSERT_EQ(scx_state_parse("enabled\0junk", 12), SCX_UNKNOWN);
        ASSERT_EQ(scx_state_parse(NULL, 0), SCX_UNKNOWN);
        ASSERT_STREQ(scx_state_to_string(SCX_ENABLING), "enabling");
        ASSERT_TRUE(scx_state_to_string(_SCX_STATE_MAX) == NULL);

        /* Names: plain, versioned (scx's Rust schedulers), cut at the line's end. */
        ASSERT_STREQ(ops("simple\n"), "simple");
        ASSERT_STREQ(ops("simple"), "simple");
        ASSERT_STREQ(ops("lavd_1.0.5_g1c2d3e4_x86_64_unknown_linux_gnu\n"), "lavd");
        ASSERT_STREQ(ops("bpfland_1.0.13\n"), "bpfland");
        ASSERT_STREQ(ops("flash_1.0.7-dirty\n"), "flash");
        ASSERT_STREQ(ops("scx_2lvl\n"), "scx_2lvl"); /* a digit after "_" is not yet a version */
        ASSERT_STREQ(ops("p2dq_2\n"), "p2dq_2");
        ASSERT_STREQ(ops("_1.0\n"), "_1.0"); /* nothing before the suffix: the name is kept */
        /* Garbage: not a name. */
        ASSERT_STREQ(ops(""), "");
        ASSERT_STREQ(ops("\n"), "");
        ASSERT_STREQ(ops("evil name\n"), "");
        ASSERT_STREQ(ops("\x1b[31mred\n"), "");
        ASSERT_STREQ(ops("caf\xc3\xa9\n"), "");
        ASSERT_STREQ(ops("simple)\n"), "");
        /* Long: cut, always terminated. */
        memset(long_name, 'a', sizeof(long_name) - 2);
        long_name[sizeof(long_name) - 2] = '\n';
        long_name[sizeof(long_name) - 1] = 0;
        ASSERT_EQ(strlen(ops(long_name)), SCX_NAME_MAX - 1);

        /* The backend string: the fair backend unless a BPF scheduler is in charge. Partial mode: the
         * BPF scheduler runs only SCHED_EXT tasks, the fair class the rest. scx_latnice honours the
         * values: no "not honoured", except while it changes. */
        static const struct {
                ScxState state;
                const char *name;
                bool partial;
                const char *want;
        } backends[] = {
                { SCX_ABSENT, "", false, "eevdf-slice" },
                { SCX_DISABLED, "", false, "eevdf-slice" },
                { SCX_ENABLED, "lavd", false, "sched-ext:lavd (latency nice not honoured)" },
                { SCX_ENABLED, "", false, "sched-ext (latency nice not honoured)" },
                { SCX_ENABLING, "simple", false, "sched-ext:simple (enabling; latency nice not honoured)" },
                { SCX_DISABLING, "simple", false, "sched-ext:simple (disabling; latency nice not honoured)" },
                { SCX_UNKNOWN, "", false, "sched-ext (latency nice not honoured)" },
                { SCX_ENABLED, "simple", true, "eevdf-slice" },
                { SCX_ENABLING, "simple", true, "sched-ext:simple (enabling; latency nice not honoured)" },
                { SCX_ENABLED, "latnice", false, "sched-ext:latnice" },
                { SCX_ENABLING, "latnice", false, "sched-ext:latnice (enabling; latency nice not honoured)" },
                { SCX_DISABLING, "latnice", false, "sched-ext:latnice (disabling; latency nice not honoured)" },
                { SCX_ENABLED, "latnice2", false, "sched-ext:latnice2 (latency nice not honoured)" },
                { SCX_ENABLED, "latnice", true, "eevdf-slice" },
        };
        for (size_t i = 0; i < ELEMENTSOF(backends); i++)
                ASSERT_STREQ(backend(backends[i].state, backends[i].name, backends[i].partial), backends[i].want);

        /* The note: for sched_ext backends only, naming the scheduler. */
        ASSERT_TRUE(!sched_ext_note("eevdf-slice", note, sizeof(note)) && note[0] == 0);
        ASSERT_TRUE(!sched_ext_note("latency-nice", note, sizeof(note)));
        ASSERT_TRUE(!sched_ext_note("sched-extra", note, sizeof(note)));
        ASSERT_TRUE(!sched_ext_note(NULL, note, sizeof(note)));
        ASSERT_TRUE(sched_ext_note("sched-ext:lavd (latency nice not honoured)", note, sizeof(note)));
        ASSERT_TRUE(strstr(note, "(sched_ext: lavd)") != NULL);
        ASSERT_TRUE(strstr(note, "ignores latency nice") != NULL);
        ASSERT_TRUE(sched_ext_note("sched-ext (latency nice not honoured)", note, sizeof(note)));
        ASSERT_TRUE(strstr(note, "(sched_ext)") != NULL);
        /* A name from the wire that is not one is not repeated. */
        ASSERT_TRUE(sched_ext_note("sched-ext:\x1b[2J (x)", note, sizeof(note)));
        ASSERT_TRUE(strstr(note, "(sched_ext)") != NULL && !strchr(note, '\x1b'));
        ASSERT_TRUE(sched_ext_note("sched-ext:latnice", note, sizeof(note)));
        ASSERT_TRUE(strstr(note, "honours them") != NULL && !strstr(note, "ignores"));
        /* A small buffer: cut, terminated. */
        ASSERT_TRUE(sched_ext_note("sched-ext:lavd (latency nice not honoured)", note, 8));
        ASSERT_EQ(strlen(note), 7);
}
