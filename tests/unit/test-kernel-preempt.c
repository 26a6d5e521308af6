/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kernel-preempt.c: the preemption model and HZ from debugfs, the command
 * line and the configuration (temp files standing in for /sys, /proc and
 * /boot), and the sentence latnicectl status prints.
 */

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "kernel-preempt.h"
#include "tests.h"
#include "util.h"

static PreemptModel debugfs(const char *s) {
        return preempt_debugfs_parse(s, strlen(s));
}

static PreemptModel cmdline(const char *s) {
        return preempt_cmdline_parse(s, strlen(s));
}

/* The lines of s (a whole .config) through the line parser. */
static KernelConfig config(const char *s) {
        KernelConfig c = {};

        while (*s) {
                size_t n = strcspn(s, "\n");

                kernel_config_parse_line(&c, s, n + (s[n] == '\n'));
                s += n + (s[n] == '\n');
        }
        return c;
}

TEST(debugfs_file) {
        /* as sched_dynamic_show() writes it: 6.12 (three modes), 6.13+ (lazy), 7.x on x86 (full and lazy only) */
        ASSERT_EQ(debugfs("(none) voluntary full \n"), PREEMPT_MODEL_NONE);
        ASSERT_EQ(debugfs("none (voluntary) full \n"), PREEMPT_MODEL_VOLUNTARY);
        ASSERT_EQ(debugfs("none voluntary (full) lazy \n"), PREEMPT_MODEL_FULL);
        ASSERT_EQ(debugfs("none voluntary full (lazy) \n"), PREEMPT_MODEL_LAZY);
        ASSERT_EQ(debugfs("full (lazy) \n"), PREEMPT_MODEL_LAZY);
        ASSERT_EQ(debugfs("(full) lazy"), PREEMPT_MODEL_FULL);
        /* no current mode, two of them, unknown words, our own "rt", empty */
        ASSERT_EQ(debugfs("none voluntary full \n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs("(none) (full) \n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs("none (laziest) \n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs("none undef (full) \n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs("(rt) \n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs("() full\n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs("(full\n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs("( full )\n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs(""), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs("\n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(preempt_debugfs_parse(NULL, 0), PREEMPT_MODEL_UNKNOWN);
        /* not UTF-8, a NUL inside a word */
        ASSERT_EQ(debugfs("\xff\xfe (full)\n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(debugfs("(f\xc3\xbcll)\n"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(preempt_debugfs_parse("(full)\0x", 8), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(preempt_debugfs_parse("(full)\0", 6), PREEMPT_MODEL_FULL); /* n stops before the NUL */
}

TEST(command_line) {
        ASSERT_EQ(cmdline("BOOT_IMAGE=/boot/vmlinuz-7.3.0 root=UUID=x ro preempt=full quiet\n"), PREEMPT_MODEL_FULL);
        ASSERT_EQ(cmdline("preempt=lazy"), PREEMPT_MODEL_LAZY);
        ASSERT_EQ(cmdline("preempt=none preempt=voluntary"), PREEMPT_MODEL_VOLUNTARY); /* the last one wins */
        ASSERT_EQ(cmdline("preempt=full preempt=bogus"), PREEMPT_MODEL_FULL); /* the kernel ignores a bad one */
        ASSERT_EQ(cmdline("preempt=full preempt= preempt=rt preempt"), PREEMPT_MODEL_FULL);
        ASSERT_EQ(cmdline("\tpreempt=none\t"), PREEMPT_MODEL_NONE);
        ASSERT_EQ(cmdline("quiet\vpreempt=none\r\n"), PREEMPT_MODEL_NONE);
        /* the kernel's next_arg() takes quotes off a value and off a whole word */
        ASSERT_EQ(cmdline("preempt=\"full\""), PREEMPT_MODEL_FULL);
        ASSERT_EQ(cmdline("\"preempt=lazy\" quiet"), PREEMPT_MODEL_LAZY);
        ASSERT_EQ(cmdline("preempt=\"full"), PREEMPT_MODEL_FULL);
        ASSERT_EQ(cmdline("preempt=\"full x\""), PREEMPT_MODEL_UNKNOWN);
        /* not a preempt= word: a prefix, a value in quotes, init's arguments, case */
        ASSERT_EQ(cmdline("xpreempt=full"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(cmdline("preempt=fullx"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(cmdline("dyndbg=\"file x preempt=full\" quiet"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(cmdline("quiet -- preempt=full"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(cmdline("preempt=lazy --x preempt=full"), PREEMPT_MODEL_FULL);
        ASSERT_EQ(cmdline("PREEMPT=full"), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(cmdline(""), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(preempt_cmdline_parse(NULL, 0), PREEMPT_MODEL_UNKNOWN);
        /* not UTF-8, a NUL, an unclosed quote that swallows the rest */
        ASSERT_EQ(cmdline("preempt=\xff" "full"), PREEMPT_MODEL_UNKNOWN);
        /* the command line is a C string: a NUL ends it */
        ASSERT_EQ(preempt_cmdline_parse("preempt=full\0 preempt=none", 26), PREEMPT_MODEL_FULL);
        ASSERT_EQ(preempt_cmdline_parse("quiet\0preempt=full", 18), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(cmdline("a=\"b preempt=full"), PREEMPT_MODEL_UNKNOWN);
        /* this project's machines: no preempt= at all */
        ASSERT_EQ(cmdline("mitigations=auto console=ttyS0 quiet reboot=k panic=1 -- --firecracker-init"),
                  PREEMPT_MODEL_UNKNOWN);
}

TEST(config_lines) {
        KernelConfig c;

        /* this machine's 6.18: PREEMPT_NONE, dynamic, HZ 250 (/proc/config.gz) */
        c = config("CONFIG_PREEMPT_BUILD=y\nCONFIG_ARCH_HAS_PREEMPT_LAZY=y\nCONFIG_PREEMPT_NONE=y\n"
                   "# CONFIG_PREEMPT_VOLUNTARY is not set\n# CONFIG_PREEMPT is not set\n"
                   "# CONFIG_PREEMPT_LAZY is not set\nCONFIG_PREEMPT_COUNT=y\nCONFIG_PREEMPTION=y\n"
                   "CONFIG_PREEMPT_DYNAMIC=y\nCONFIG_PREEMPT_RCU=y\n# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\n"
                   "CONFIG_HZ=250\nCONFIG_HAVE_PREEMPT_DYNAMIC=y\n");
        ASSERT_TRUE(c.seen);
        ASSERT_EQ(c.choice, PREEMPT_MODEL_NONE);
        ASSERT_TRUE(c.dynamic);
        ASSERT_TRUE(!c.rt);
        ASSERT_EQ(c.hz, 250);
        /* Debian's 7.3: lazy, dynamic */
        c = config("CONFIG_PREEMPT_LAZY=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=250");
        ASSERT_EQ(c.choice, PREEMPT_MODEL_LAZY);
        ASSERT_TRUE(c.dynamic);
        ASSERT_EQ(c.hz, 250);
        c = config("CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_HZ=1000\n");
        ASSERT_EQ(c.choice, PREEMPT_MODEL_VOLUNTARY);
        ASSERT_TRUE(!c.dynamic);
        ASSERT_EQ(c.hz, 1000);
        c = config("CONFIG_PREEMPT=y\nCONFIG_HZ=300\n");
        ASSERT_EQ(c.choice, PREEMPT_MODEL_FULL);
        ASSERT_EQ(c.hz, 300);
        /* RT: in the choice before 6.13, beside it (with full or lazy) since */
        c = config("CONFIG_PREEMPT_RT=y\n");
        ASSERT_TRUE(c.rt);
        ASSERT_EQ(c.choice, PREEMPT_MODEL_UNKNOWN);
        c = config("CONFIG_PREEMPT_LAZY=y\nCONFIG_PREEMPT_RT=y\n");
        ASSERT_TRUE(c.rt);
        ASSERT_EQ(c.choice, PREEMPT_MODEL_LAZY);
        /* not these: other values, options that only look alike, a bad HZ */
        c = config("CONFIG_PREEMPT=m\nCONFIG_PREEMPT_NONE=yes\nCONFIG_PREEMPT_RCU=y\nCONFIG_PREEMPT_BUILD=y\n"
                   "CONFIG_PREEMPTION=y\nCONFIG_PREEMPT_RT_FOO=y\n CONFIG_PREEMPT=y\nCONFIG_HZ_1000=y\n"
                   "CONFIG_HZ=abc\nCONFIG_HZ=0\nCONFIG_HZ=99999999\nCONFIG_HZ=-250\nCONFIG_HZ=\n"
                   "CONFIG_HZ=250x\nCONFIG_HZ= 250\n\xff\xfe\n");
        ASSERT_TRUE(!c.seen);
        ASSERT_EQ(c.choice, PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(c.hz, 0);
        kernel_config_parse_line(&c, NULL, 0);
        kernel_config_parse_line(&c, "", 0);
        ASSERT_TRUE(!c.seen);
}

TEST(decide) {
        KernelConfig none_dyn = config("CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=250\n");
        KernelConfig full_static = config("CONFIG_PREEMPT=y\nCONFIG_HZ=1000\n");
        KernelConfig rt = config("CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT=y\nCONFIG_PREEMPT_DYNAMIC=y\n");
        KernelConfig unknown = {};
        KernelPreempt p;

        /* debugfs says what runs now, whatever the command line and the build say */
        kernel_preempt_decide(&none_dyn, PREEMPT_MODEL_LAZY, PREEMPT_MODEL_FULL, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_LAZY);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_DEBUGFS);
        ASSERT_TRUE(p.dynamic);
        ASSERT_EQ(p.hz, 250);
        /* then preempt= on a dynamic kernel */
        kernel_preempt_decide(&none_dyn, PREEMPT_MODEL_UNKNOWN, PREEMPT_MODEL_FULL, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_FULL);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_CMDLINE);
        /* and on a kernel whose build is unknown (HZ then too) */
        kernel_preempt_decide(&unknown, PREEMPT_MODEL_UNKNOWN, PREEMPT_MODEL_LAZY, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_LAZY);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_CMDLINE);
        ASSERT_EQ(p.hz, 0);
        ASSERT_TRUE(!p.dynamic);
        /* a kernel without PREEMPT_DYNAMIC ignores preempt= */
        kernel_preempt_decide(&full_static, PREEMPT_MODEL_UNKNOWN, PREEMPT_MODEL_NONE, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_FULL);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_CONFIG);
        ASSERT_TRUE(!p.dynamic);
        ASSERT_EQ(p.hz, 1000);
        /* this machine: no debugfs (locked down), no preempt=, the build's none */
        kernel_preempt_decide(&none_dyn, PREEMPT_MODEL_UNKNOWN, PREEMPT_MODEL_UNKNOWN, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_NONE);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_CONFIG);
        ASSERT_TRUE(p.dynamic);
        /* PREEMPT_RT: full is rt, lazy stays lazy */
        kernel_preempt_decide(&rt, PREEMPT_MODEL_UNKNOWN, PREEMPT_MODEL_UNKNOWN, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_RT);
        kernel_preempt_decide(&rt, PREEMPT_MODEL_FULL, PREEMPT_MODEL_UNKNOWN, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_RT);
        kernel_preempt_decide(&rt, PREEMPT_MODEL_LAZY, PREEMPT_MODEL_UNKNOWN, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_LAZY);
        rt = config("CONFIG_PREEMPT_RT=y\n");
        kernel_preempt_decide(&rt, PREEMPT_MODEL_UNKNOWN, PREEMPT_MODEL_UNKNOWN, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_RT);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_CONFIG);
        /* nothing known */
        kernel_preempt_decide(NULL, PREEMPT_MODEL_UNKNOWN, PREEMPT_MODEL_UNKNOWN, &p);
        ASSERT_EQ(p.model, PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_UNKNOWN);
        ASSERT_STREQ(preempt_model_to_string(p.model), "");
        ASSERT_STREQ(preempt_source_to_string(p.source), "");
        ASSERT_STREQ(preempt_model_to_string(PREEMPT_MODEL_LAZY), "lazy");
        ASSERT_STREQ(preempt_source_to_string(PREEMPT_SOURCE_CMDLINE), "cmdline");
        ASSERT_TRUE(preempt_model_to_string(_PREEMPT_MODEL_MAX) == NULL);
        ASSERT_EQ(preempt_model_from_string("rt"), PREEMPT_MODEL_RT);
        ASSERT_EQ(preempt_model_from_string(""), PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(preempt_model_from_string(NULL), PREEMPT_MODEL_UNKNOWN);
}

static void write_gz(const char *path, const char *contents, size_t n) {
        gzFile gz = gzopen(path, "wb");

        ASSERT_TRUE(gz);
        ASSERT_EQ(gzwrite(gz, contents, (unsigned) n), (long long) n);
        ASSERT_EQ(gzclose(gz), Z_OK);
}

static void write_bytes(const char *path, const char *data, size_t n) {
        FILE *f = fopen(path, "we");

        ASSERT_TRUE(f);
        ASSERT_EQ(fwrite(data, 1, n, f), n);
        ASSERT_EQ(fclose(f), 0);
}

static KernelPreempt read_paths(const char *dir, const char *debugfs_rel, const char *cmdline_rel,
                                const char *gz_rel, const char *config_rel) {
        KernelPreemptPaths paths = {
                .debugfs = debugfs_rel ? test_path(dir, debugfs_rel) : NULL,
                .cmdline = cmdline_rel ? test_path(dir, cmdline_rel) : NULL,
                .config_gz = gz_rel ? test_path(dir, gz_rel) : NULL,
                .config = config_rel ? test_path(dir, config_rel) : NULL,
        };
        KernelPreempt p;

        memset(&p, 0xaa, sizeof(p));
        kernel_preempt_read(&paths, &p);
        return p;
}

TEST(read_files) {
        const char *d = test_tmpdir();
        KernelPreempt p;

        /* nothing there at all */
        p = read_paths(d, "debug/sched/preempt", "cmdline", "config.gz", "boot/config-x");
        ASSERT_EQ(p.model, PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_UNKNOWN);
        ASSERT_EQ(p.hz, 0);
        ASSERT_TRUE(!p.dynamic);

        /* this machine: config.gz only (debugfs unmounted or locked down, no /boot/config-*) */
        write_gz(test_path(d, "config.gz"), "CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=250\n", 61);
        test_write(d, "cmdline", "console=ttyS0 quiet\n");
        p = read_paths(d, "debug/sched/preempt", "cmdline", "config.gz", "boot/config-x");
        ASSERT_EQ(p.model, PREEMPT_MODEL_NONE);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_CONFIG);
        ASSERT_EQ(p.hz, 250);
        ASSERT_TRUE(p.dynamic);

        /* Debian: /boot/config-RELEASE, plain text; preempt=full on the command line */
        test_write(d, "boot/config-7.3", "#\n# Linux/x86 7.3.0 Kernel Configuration\nCONFIG_PREEMPT_LAZY=y\n"
                                         "CONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n");
        test_write(d, "cmdline", "BOOT_IMAGE=/boot/vmlinuz-7.3.0 ro preempt=full\n");
        p = read_paths(d, NULL, "cmdline", "nothing.gz", "boot/config-7.3");
        ASSERT_EQ(p.model, PREEMPT_MODEL_FULL);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_CMDLINE);
        ASSERT_EQ(p.hz, 250);
        /* debugfs mounted: what runs now */
        test_write(d, "debug/sched/preempt", "full (lazy) \n");
        p = read_paths(d, "debug/sched/preempt", "cmdline", "nothing.gz", "boot/config-7.3");
        ASSERT_EQ(p.model, PREEMPT_MODEL_LAZY);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_DEBUGFS);
        ASSERT_EQ(p.hz, 250);
        /* a config.gz that says nothing about preemption: the plain one is read */
        write_gz(test_path(d, "other.gz"), "CONFIG_X=y\n", 11);
        p = read_paths(d, NULL, NULL, "other.gz", "boot/config-7.3");
        ASSERT_EQ(p.model, PREEMPT_MODEL_LAZY);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_CONFIG);
        /* a "config.gz" that is plain text (zlib reads it through) and one that is broken gzip */
        test_write(d, "plain.gz", "CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_HZ=100\n");
        p = read_paths(d, NULL, NULL, "plain.gz", NULL);
        ASSERT_EQ(p.model, PREEMPT_MODEL_VOLUNTARY);
        ASSERT_EQ(p.hz, 100);
        test_write(d, "broken.gz", "\x1f\x8b\x08\x00garbage\xff\xfe\n");
        p = read_paths(d, NULL, NULL, "broken.gz", NULL);
        ASSERT_EQ(p.model, PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(p.hz, 0);
}

TEST(read_hostile_files) {
        const char *d = test_tmpdir();
        size_t big = 17 * 1024 * 1024;
        char *s;
        static const char nul_config[] = "CONFIG_HZ=\0" "300\nCONFIG_PREEMPT=y\n";
        static const char garbage[] = "\xff\xfe\0\n(full)\0\n\0preempt=full\n\0CONFIG_PREEMPT=y\n(f\x80ll)\n";
        KernelPreempt p;

        /* a FIFO or a directory where a file should be: skipped, never waited on */
        ASSERT_EQ(mkfifo(test_path(d, "fifo"), 0600), 0);
        ASSERT_EQ(mkdir(test_path(d, "dir"), 0700), 0);
        p = read_paths(d, "fifo", "fifo", "fifo", "dir");
        ASSERT_EQ(p.model, PREEMPT_MODEL_UNKNOWN);
        ASSERT_EQ(p.hz, 0);

        /* a huge debugfs file is cut at its bound: the mode after it is not seen */
        s = malloc(big + 64);
        ASSERT_TRUE(s);
        for (size_t i = 0; i + 5 <= big; i += 5)
                memcpy(s + i, "none ", 5);
        strcpy(s + big - big % 5, "(full)\n");
        test_write(d, "huge", s);
        p = read_paths(d, "huge", NULL, NULL, NULL);
        ASSERT_EQ(p.model, PREEMPT_MODEL_UNKNOWN);
        /* a huge command line: read up to its bound, and what is there counts */
        memcpy(s, "preempt=lazy ", 13);
        test_write(d, "huge-cmdline", s);
        p = read_paths(d, NULL, "huge-cmdline", NULL, NULL);
        ASSERT_EQ(p.model, PREEMPT_MODEL_LAZY);
        ASSERT_EQ(p.source, PREEMPT_SOURCE_CMDLINE);

        /* a configuration that inflates beyond 16 MiB: its lines after that are not read */
        memset(s, '#', big);
        for (size_t i = 99; i < big; i += 100)
                s[i] = '\n';
        memcpy(s, "CONFIG_HZ=250\n", 14);
        strcpy(s + big - big % 100, "CONFIG_PREEMPT=y\nCONFIG_HZ=1000\n");
        write_gz(test_path(d, "bomb.gz"), s, strlen(s));
        p = read_paths(d, NULL, NULL, "bomb.gz", NULL);
        ASSERT_EQ(p.hz, 250);
        ASSERT_EQ(p.model, PREEMPT_MODEL_UNKNOWN);

        /* the same bound when the lines are NULs (they count as read, not as their length) */
        memset(s, 0, big);
        for (size_t i = 99; i < big; i += 100)
                s[i] = '\n';
        s[big - 1] = '\n';
        strcpy(s + big, "CONFIG_HZ=1000\n");
        write_gz(test_path(d, "nul-bomb.gz"), s, big + 15);
        p = read_paths(d, NULL, NULL, "nul-bomb.gz", NULL);
        ASSERT_EQ(p.hz, 0);

        /* a line longer than the reader's buffer: its tail is not read as a line of its own */
        memset(s, 'x', 1000);
        strcpy(s + 1000, "CONFIG_HZ=1000\nCONFIG_PREEMPT=y\n");
        for (size_t cut = 200; cut < 300; cut++) {
                memmove(s + cut, s + 1000, strlen(s + 1000) + 1);
                test_write(d, "long", s);
                p = read_paths(d, NULL, NULL, "long", NULL);
                ASSERT_EQ(p.hz, 0);
                ASSERT_EQ(p.model, PREEMPT_MODEL_FULL);
                memset(s, 'x', 1000);
                strcpy(s + 1000, "CONFIG_HZ=1000\nCONFIG_PREEMPT=y\n");
        }
        /* NUL bytes and not UTF-8 in every file */
        write_bytes(test_path(d, "nul"), garbage, sizeof(garbage) - 1);
        p = read_paths(d, "nul", "nul", "nul", "nul");
        ASSERT_EQ(p.model, PREEMPT_MODEL_UNKNOWN);
        /* a NUL cuts its line short, not the line after it */
        write_bytes(test_path(d, "nul-config"), nul_config, sizeof(nul_config) - 1);
        p = read_paths(d, NULL, NULL, "nul-config", NULL);
        ASSERT_EQ(p.hz, 0);
        ASSERT_EQ(p.model, PREEMPT_MODEL_FULL);
        free(s);
}

static const char *sentence(const char *model, bool dynamic, uint32_t hz, const char *backend) {
        static char buf[512];

        ASSERT_TRUE(preempt_sentence(model, dynamic, hz, backend, buf, sizeof(buf)) < (int) sizeof(buf));
        return buf;
}

TEST(sentences) {
        /* Debian's 7.3 with the slice backend (mainline) and with the series */
        ASSERT_STREQ(sentence("lazy", true, 250, "eevdf-slice"),
                     "lazy preemption (HZ 250): a fair-class wakeup may wait up to 4 ms behind a busy task, whatever "
                     "its slice says (real-time and deadline wakeups do not wait); preempt=full on the kernel command "
                     "line avoids the wait.");
        ASSERT_TRUE(strstr(sentence("lazy", true, 250, "latency-nice"), "whatever its latency nice says"));
        ASSERT_TRUE(strstr(sentence("lazy", true, 250, "none"), "whatever its slice or latency nice says"));
        /* not dynamic: the command line cannot help */
        ASSERT_TRUE(!strstr(sentence("lazy", false, 250, "eevdf-slice"), "preempt=full"));
        ASSERT_TRUE(strstr(sentence("lazy", false, 300, "eevdf-slice"), "(HZ 300)"));
        ASSERT_TRUE(strstr(sentence("lazy", false, 300, "eevdf-slice"), "up to 3.33 ms"));
        ASSERT_TRUE(strstr(sentence("lazy", false, 1000, "eevdf-slice"), "up to 1 ms"));
        ASSERT_TRUE(strstr(sentence("lazy", false, 0, "eevdf-slice"), "(HZ unknown)"));
        ASSERT_TRUE(strstr(sentence("lazy", false, 0, "eevdf-slice"), "up to one tick"));
        /* a BPF scheduler: the lazy delay is the fair class's */
        ASSERT_STREQ(sentence("lazy", true, 250, "sched-ext:lavd (latency nice not honoured)"),
                     "lazy preemption (HZ 250): it delays only the fair class's wakeup preemption, by up to 4 ms; "
                     "the BPF scheduler's preemptions (sched_ext) take effect at once.");
        /* this machine: none, dynamic, HZ 250 */
        ASSERT_STREQ(sentence("none", true, 250, "eevdf-slice"),
                     "no forced preemption (HZ 250): a wakeup preemption takes effect at once on a task in user "
                     "space, but on one in the kernel only at its next scheduling point or return to user space; "
                     "preempt=full on the kernel command line avoids that wait.");
        ASSERT_TRUE(strstr(sentence("voluntary", false, 1000, "latency-nice"),
                           "voluntary preemption (HZ 1000): a wakeup preemption takes effect at once on a task in "
                           "user space, but on one in the kernel only at its next voluntary scheduling point or "
                           "return to user space."));
        ASSERT_STREQ(sentence("full", true, 250, "latency-nice"),
                     "full preemption (HZ 250): a wakeup preemption takes effect at once, in user space and in the "
                     "kernel.");
        ASSERT_TRUE(strstr(sentence("rt", false, 1000, "eevdf-slice"), "PREEMPT_RT, HZ 1000"));
        ASSERT_STREQ(sentence("", false, 0, NULL),
                     "preemption model unknown (HZ unknown): under lazy preemption a fair-class wakeup may wait up "
                     "to one tick behind a busy task.");
        /* a value this CLI does not know (a newer daemon) reads as unknown */
        ASSERT_TRUE(strstr(sentence("laziest", true, 250, "eevdf-slice"), "preemption model unknown (HZ 250)"));
}
