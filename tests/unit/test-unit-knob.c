/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cgroup-knob path of [Unit] rules on fake trees: this machine's kernel
 * has no cpu.latency.nice, so the knob can only be exercised on files
 * standing in for cgroupfs. Covers cgroup v2 (cpu.latency.nice, -20..19),
 * the v1 cpu hierarchy of the hybrid layout (cpu.latency, 0..39), the
 * "ask systemd for CPUAccounting=yes" case (no directory), the per-task
 * fallback case (no knob file), and restoring only values still ours.
 */

#include <errno.h>
#include <sys/stat.h>

#include "unit-knob.h"
#include "tests.h"
#include "util.h"

static char *read_knob(const char *path) {
        static char buf[64];
        FILE *f = fopen(path, "re");
        size_t n;

        ASSERT_TRUE(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = 0;
        return buf;
}

static void load_mounts(const char *dir, const char *mountinfo, CGroupMounts *m) {
        test_write(dir, "mountinfo", mountinfo);
        ASSERT_EQ(cgroup_mounts_find(test_path(dir, "mountinfo"), m), 0);
}

TEST(v2) {
        const char *dir = test_tmpdir();
        char mountinfo[1024];
        CGroupMounts m = {};
        UnitKnob k = {}, k2 = {};
        const char *knob;

        snprintf(mountinfo, sizeof(mountinfo), "30 1 0:26 / %s/cg rw,nosuid - cgroup2 cgroup2 rw\n", dir);
        load_mounts(dir, mountinfo, &m);
        ASSERT_STREQ(cgroup_latency_knob(&m), "cpu.latency.nice");
        test_write(dir, "cg/game.slice/cpu.latency.nice", "0\n");
        knob = test_path(dir, "cg/game.slice/cpu.latency.nice");

        ASSERT_EQ(unit_knob_set(&m, &k, "/game.slice", -10), 1);
        ASSERT_STREQ(read_knob(knob), "-10");
        ASSERT_STREQ(k.cgroup, "/game.slice");
        ASSERT_EQ(k.before, 0);
        /* again with the same value: nothing to write */
        ASSERT_EQ(unit_knob_set(&m, &k, "/game.slice", -10), 0);
        /* a reload with another value keeps the original "before" */
        ASSERT_EQ(unit_knob_set(&m, &k, "/game.slice", -5), 1);
        ASSERT_STREQ(read_knob(knob), "-5");
        ASSERT_EQ(k.before, 0);
        ASSERT_EQ(unit_knob_restore(&m, &k), 1);
        ASSERT_STREQ(read_knob(knob), "0");

        /* somebody else changed it after us: left alone */
        ASSERT_EQ(unit_knob_set(&m, &k, "/game.slice", 7), 1);
        test_write(dir, "cg/game.slice/cpu.latency.nice", "3\n");
        ASSERT_EQ(unit_knob_restore(&m, &k), 0);
        ASSERT_STREQ(read_knob(knob), "3");
        /* a UnitKnob belongs to one cgroup */
        ASSERT_EQ(unit_knob_set(&m, &k, "/other.slice", 1), -EINVAL);
        free(k.cgroup);

        /* no directory (hybrid: systemd made none until CPUAccounting=yes) */
        ASSERT_EQ(unit_knob_set(&m, &k2, "/missing.slice", -10), -ENOENT);
        ASSERT_TRUE(!k2.cgroup);
        /* a directory without the knob: this kernel has none, fall back per task */
        ASSERT_EQ(mkdir(test_path(dir, "cg/noknob.slice"), 0755), 0);
        ASSERT_EQ(unit_knob_set(&m, &k2, "/noknob.slice", -10), -EOPNOTSUPP);
        ASSERT_TRUE(!k2.cgroup);
        /* ... and where the cpu controller is enabled for it, the kernel has none either */
        test_write(dir, "cg/cpu.slice/cgroup.controllers", "cpu memory pids\n");
        ASSERT_EQ(unit_knob_set(&m, &k2, "/cpu.slice", -10), -EOPNOTSUPP);
        /* a pure v2 tree where the cpu controller is not enabled for the cgroup (systemd enables it
         * only for units that need it; Debian 12 boots with "memory pids"): no knob yet, but not a
         * kernel without one: ask systemd, as for a missing v1 directory */
        test_write(dir, "cg/nocpu.slice/cgroup.controllers", "memory pids\n");
        ASSERT_EQ(unit_knob_set(&m, &k2, "/nocpu.slice", -10), -ENOENT);
        test_write(dir, "cg/none.slice/cgroup.controllers", "\n");
        ASSERT_EQ(unit_knob_set(&m, &k2, "/none.slice", -10), -ENOENT);
        test_write(dir, "cg/cpuset.slice/cgroup.controllers", "cpuset memory\n");
        ASSERT_EQ(unit_knob_set(&m, &k2, "/cpuset.slice", -10), -ENOENT);
        ASSERT_TRUE(!k2.cgroup);
        /* out of range never reaches the file */
        ASSERT_EQ(unit_knob_set(&m, &k2, "/game.slice", 20), -EINVAL);
        ASSERT_STREQ(read_knob(knob), "3");
        cgroup_mounts_done(&m);
}

TEST(v1_hybrid) {
        const char *dir = test_tmpdir();
        char mountinfo[2048];
        CGroupMounts m = {};
        UnitKnob k = {};
        const char *knob;

        snprintf(mountinfo, sizeof(mountinfo),
                 "30 1 0:26 / %s/unified rw,nosuid - cgroup2 cgroup2 rw\n"
                 "31 1 0:27 / %s/cpu rw,nosuid - cgroup cgroup rw,cpu\n"
                 "32 1 0:28 / %s/systemd rw,nosuid - cgroup cgroup rw,xattr,name=systemd\n",
                 dir, dir, dir);
        load_mounts(dir, mountinfo, &m);
        ASSERT_STREQ(cgroup_latency_knob(&m), "cpu.latency");
        /* the knob lives in the cpu hierarchy, not in the unified one */
        test_write(dir, "unified/game.slice/cgroup.procs", "");
        test_write(dir, "cpu/game.slice/cpu.latency", "20\n");
        knob = test_path(dir, "cpu/game.slice/cpu.latency");

        ASSERT_EQ(unit_knob_set(&m, &k, "/game.slice", -10), 1);
        ASSERT_STREQ(read_knob(knob), "10");
        ASSERT_EQ(k.before, 0);
        ASSERT_EQ(unit_knob_set(&m, &k, "/game.slice", 19), 1);
        ASSERT_STREQ(read_knob(knob), "39");
        ASSERT_EQ(unit_knob_restore(&m, &k), 1);
        ASSERT_STREQ(read_knob(knob), "20");
        free(k.cgroup);

        /* in the unified tree but not in the cpu hierarchy: ask systemd */
        test_write(dir, "unified/run.slice/cgroup.procs", "");
        k = (UnitKnob) {};
        ASSERT_EQ(unit_knob_set(&m, &k, "/run.slice", -10), -ENOENT);
        cgroup_mounts_done(&m);
}
