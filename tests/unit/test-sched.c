/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the scheduler layer's pure parts: the latency-nice -> slice
 * table against values computed by hand, the inverse, BTF detection on
 * synthetic BTF blobs, the applied-state table, the thread walker on a fake
 * /proc and the cgroup helpers on fake mountinfo and cgroup trees.
 */

#include <bpf/btf.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "applied.h"
#include "cgroup.h"
#include "sched.h"
#include "tests.h"
#include "util.h"

TEST(backend_strings) {
        ASSERT_STREQ(backend_to_string(BACKEND_NONE), "none");
        ASSERT_STREQ(backend_to_string(BACKEND_LATENCY_NICE), "latency-nice");
        ASSERT_STREQ(backend_to_string(BACKEND_EEVDF_SLICE), "eevdf-slice");
        ASSERT_TRUE(backend_to_string(_BACKEND_MAX) == NULL);
        for (Backend b = 0; b < _BACKEND_MAX; b++)
                ASSERT_EQ(backend_from_string(backend_to_string(b)), b);
        ASSERT_EQ(backend_from_string("eevdf"), _BACKEND_INVALID);
        ASSERT_EQ(backend_from_string(NULL), _BACKEND_INVALID);
        ASSERT_STREQ(sched_policy_to_string(LATNICE_SCHED_FIFO), "fifo");
        ASSERT_STREQ(sched_policy_to_string(LATNICE_SCHED_BATCH | LATNICE_SCHED_RESET_ON_FORK), "batch");
}

/*
 * Expected slices, ln -20..19, computed by hand (python) from
 * floor(base * 1024 / sched_prio_to_weight[ln + 20]) clamped to
 * [100000, 100000000], with 0 at ln 0.
 */
static const uint64_t expect_3ms[40] = {
        100000, 100000, 100000, 100000, 100000, 105371, 132106, 164234, 205498, 257804,
        321742, 403149, 503606, 626427, 786482, 984299, 1228308, 1542943, 1936948, 2405638,
        0, 3746341, 4690076, 5840304, 7262411, 9170149, 11294117, 14288372, 17860465, 22423357,
        27927272, 35310344, 43885714, 54857142, 68266666, 85333333, 100000000, 100000000, 100000000, 100000000,
};
static const uint64_t expect_750us[40] = {
        100000, 100000, 100000, 100000, 100000, 100000, 100000, 100000, 100000, 100000,
        100000, 100787, 125901, 156606, 196620, 246074, 307077, 385735, 484237, 601409,
        0, 936585, 1172519, 1460076, 1815602, 2292537, 2823529, 3572093, 4465116, 5605839,
        6981818, 8827586, 10971428, 13714285, 17066666, 21333333, 26482758, 33391304, 42666666, 51200000,
};

TEST(mapping_table) {
        for (int ln = -20; ln <= 19; ln++) {
                ASSERT_EQ(latnice_to_slice_ns(ln, 3000000), expect_3ms[ln + 20]);
                ASSERT_EQ(latnice_to_slice_ns(ln, 750000), expect_750us[ln + 20]);
        }
        /* the anchors the design names: 1024 at 0 is the base itself at +-0 */
        ASSERT_EQ(latnice_to_slice_ns(0, 1400000), 0);
        ASSERT_EQ(latnice_to_slice_ns(-20, 1400000), 100000);
        ASSERT_EQ(latnice_to_slice_ns(19, 1400000), 95573333); /* 1400000 * 1024 / 15 */
        /* out of range is clamped to the ends, no base means nothing to set */
        ASSERT_EQ(latnice_to_slice_ns(-100, 3000000), 100000);
        ASSERT_EQ(latnice_to_slice_ns(100, 3000000), 100000000);
        ASSERT_EQ(latnice_to_slice_ns(5, 0), 0);
        /* monotonic */
        for (int ln = -20; ln < 19; ln++) {
                uint64_t a = ln == 0 ? 1400000 : latnice_to_slice_ns(ln, 1400000);
                uint64_t b = ln + 1 == 0 ? 1400000 : latnice_to_slice_ns(ln + 1, 1400000);

                ASSERT_TRUE(a <= b);
        }
}

/* The slice a value stands for, the default slice for 0. */
static uint64_t effective(int ln, uint64_t base) {
        uint64_t s = ln == 0 ? base : latnice_to_slice_ns(ln, base);

        return s < 100000 ? 100000 : s;
}

TEST(mapping_inverse) {
        static const uint64_t bases[] = { 3000000, 750000, 1400000, 2800000, 100000 };

        for (size_t b = 0; b < ELEMENTSOF(bases); b++)
                for (int ln = -20; ln <= 19; ln++) {
                        uint64_t s = latnice_to_slice_ns(ln, bases[b]);
                        int back = latnice_from_slice_ns(s, bases[b]), lo, hi;

                        /* always lands on a value with the same slice */
                        ASSERT_EQ(effective(back, bases[b]), effective(ln, bases[b]));
                        latnice_range_from_slice_ns(s, bases[b], &lo, &hi);
                        ASSERT_TRUE(lo <= ln && ln <= hi);
                        ASSERT_TRUE(lo <= back && back <= hi);
                }
        /* exact round trip where the slice is not clamped: base 3 ms, -15..15 */
        for (int ln = -15; ln <= 15; ln++)
                ASSERT_EQ(latnice_from_slice_ns(latnice_to_slice_ns(ln, 3000000), 3000000), ln);
        /* clamped runs: the value closest to 0, the range names them all */
        {
                int lo, hi;

                ASSERT_EQ(latnice_from_slice_ns(100000, 3000000), -16);
                latnice_range_from_slice_ns(100000, 3000000, &lo, &hi);
                ASSERT_EQ(lo, -20);
                ASSERT_EQ(hi, -16);
                ASSERT_EQ(latnice_from_slice_ns(100000000, 3000000), 16);
                latnice_range_from_slice_ns(100000000, 3000000, &lo, &hi);
                ASSERT_EQ(lo, 16);
                ASSERT_EQ(hi, 19);
        }
        /* nearest, on the geometric scale: the default slice is 0, and a
         * slice between two grid points goes to the closer ratio */
        ASSERT_EQ(latnice_from_slice_ns(0, 3000000), 0);
        ASSERT_EQ(latnice_from_slice_ns(3000000, 3000000), 0);
        ASSERT_EQ(latnice_from_slice_ns(3100000, 3000000), 0);   /* 3.1/3.0 < 3.746/3.1 */
        ASSERT_EQ(latnice_from_slice_ns(3500000, 3000000), 1);   /* 3.746/3.5 < 3.5/3.0 */
        ASSERT_EQ(latnice_from_slice_ns(2500000, 3000000), -1);  /* 2.5/2.405 < 3.0/2.5 */
        ASSERT_EQ(latnice_from_slice_ns(50000, 3000000), -16);   /* below the kernel's floor: clamped */
        ASSERT_EQ(latnice_from_slice_ns(1000000000, 3000000), 16);
        ASSERT_EQ(latnice_from_slice_ns(1000000, 0), 0);
}

/* Writes a BTF blob with int and a struct task_struct with the given members.
 * Paths from test_path() belong to the harness (freed at exit). */
static char *write_btf(const char *name, const char * const *members, bool anon_wrap, bool with_task) {
        struct btf *btf = btf__new_empty();
        const void *raw;
        uint32_t size;
        char *path;
        int int_id, id, inner = 0;
        FILE *f;

        ASSERT_TRUE(btf);
        int_id = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
        ASSERT_TRUE(int_id > 0);
        if (anon_wrap) {
                size_t n = 0;

                while (members[n])
                        n++;
                /* struct { ... } without a name, as randstruct makes it */
                inner = btf__add_struct(btf, NULL, (uint32_t) (4 * n));
                ASSERT_TRUE(inner > 0);
                for (size_t k = 0; k < n; k++)
                        ASSERT_EQ(btf__add_field(btf, members[k], int_id, (uint32_t) (32 * k), 0), 0);
        }
        id = btf__add_struct(btf, with_task ? "task_struct" : "mm_struct", 64);
        ASSERT_TRUE(id > 0);
        ASSERT_EQ(btf__add_field(btf, "__state", int_id, 0, 0), 0);
        ASSERT_EQ(btf__add_field(btf, "static_prio", int_id, 32, 0), 0);
        if (anon_wrap)
                ASSERT_EQ(btf__add_field(btf, NULL, inner, 64, 0), 0);
        else
                for (size_t k = 0; members[k]; k++)
                        ASSERT_EQ(btf__add_field(btf, members[k], int_id, (uint32_t) (64 + 32 * k), 0), 0);
        raw = btf__raw_data(btf, &size);
        ASSERT_TRUE(raw && size > 0);
        path = test_path(test_tmpdir(), name);
        f = fopen(path, "we");
        ASSERT_TRUE(f);
        ASSERT_EQ(fwrite(raw, 1, size, f), size);
        ASSERT_EQ(fclose(f), 0);
        btf__free(btf);
        return path;
}

TEST(btf_detection) {
        static const char * const with_prio[] = { "prio", "latency_prio", NULL };
        static const char * const with_nice[] = { "latency_nice", NULL };
        static const char * const without[] = { "prio", "normal_prio", NULL };
        char *p;

        p = write_btf("btf-prio", with_prio, false, true);
        ASSERT_EQ(sched_btf_has_latency_field(p), 1);
        p = write_btf("btf-nice", with_nice, false, true);
        ASSERT_EQ(sched_btf_has_latency_field(p), 1);
        p = write_btf("btf-anon", with_prio, true, true);
        ASSERT_EQ(sched_btf_has_latency_field(p), 1);
        p = write_btf("btf-without", without, false, true);
        ASSERT_EQ(sched_btf_has_latency_field(p), 0);
        p = write_btf("btf-without-anon", without, true, true);
        ASSERT_EQ(sched_btf_has_latency_field(p), 0);
        /* a latency field in some other struct does not count */
        p = write_btf("btf-notask", with_prio, false, false);
        ASSERT_EQ(sched_btf_has_latency_field(p), -ENODATA);
        p = test_path(test_tmpdir(), "btf-missing");
        ASSERT_EQ(sched_btf_has_latency_field(p), -ENOENT);
        test_write(test_tmpdir(), "btf-garbage", "this is not BTF\n");
        p = test_path(test_tmpdir(), "btf-garbage");
        ASSERT_TRUE(sched_btf_has_latency_field(p) < 0);
        ASSERT_EQ(sched_btf_has_latency_field(NULL), -EINVAL);
}

TEST(raw_values) {
        SchedProbe eevdf = { .backend = BACKEND_EEVDF_SLICE, .base_slice_ns = 3000000 };
        SchedProbe ln = { .backend = BACKEND_LATENCY_NICE };
        SchedProbe none = { .backend = BACKEND_NONE };
        ThreadSched t = {};

        ASSERT_EQ(sched_raw_value(&eevdf, -5), 984299);
        ASSERT_EQ(sched_raw_value(&eevdf, 0), 0);
        ASSERT_EQ(sched_raw_value(&ln, -20), 0);
        ASSERT_EQ(sched_raw_value(&ln, 19), 39);
        ASSERT_EQ(sched_raw_value(&none, 5), 0);

        /* the default slice reads back as "no custom slice" */
        t.attr.sched_runtime = 3000000;
        ASSERT_EQ(sched_thread_raw(&eevdf, &t), 0);
        t.attr.sched_runtime = 984299;
        ASSERT_EQ(sched_thread_raw(&eevdf, &t), 984299);
        t.realtime = true;
        ASSERT_EQ(sched_thread_raw(&eevdf, &t), 0);
        t = (ThreadSched) { .attr.sched_latency_nice = -3 };
        ASSERT_EQ(sched_thread_raw(&ln, &t), 17);

        ASSERT_EQ(sched_thread_set(&none, 1, 0, NULL), -EOPNOTSUPP);
        ASSERT_EQ(sched_thread_set(&eevdf, 1, 20, NULL), -EINVAL);
        ASSERT_EQ(sched_thread_set(&eevdf, 1, -21, NULL), -EINVAL);
        ASSERT_EQ(sched_thread_set_raw(&eevdf, 1, 5, NULL), -EINVAL); /* below the kernel's floor */
        {
                ApplyResult res;

                ASSERT_EQ(sched_apply_process(&none, AT_FDCWD, 1, 0, 0, THREADS_ALL, false, &res), -EOPNOTSUPP);
                ASSERT_EQ(sched_apply_process(&eevdf, AT_FDCWD, 1, 0, 30, THREADS_ALL, false, &res), -EINVAL);
                ASSERT_EQ(sched_apply_process(&eevdf, AT_FDCWD, 0, 0, 3, THREADS_ALL, false, &res), -EINVAL);
        }
}

static void put(AppliedTable *t, pid_t pid, int ln) {
        AppliedProcess e = {
                .pid = pid,
                .start_time = (uint64_t) pid * 10,
                .latency_nice = ln,
                .raw = (uint64_t) ln + 20,
        };

        ASSERT_TRUE(asprintf(&e.rule, "[Process p%d] x.conf:%d", (int) pid, ln) > 0);
        e.rule_name = strdup("p");
        ASSERT_TRUE(e.rule_name);
        ASSERT_EQ(applied_table_put(t, &e), 0);
        /* ownership moved into the table */
        ASSERT_TRUE(e.rule == NULL && e.rule_name == NULL);
}

TEST(applied_table) {
        _cleanup_(applied_table_freep) AppliedTable *t = applied_table_new();
        AppliedProcess *e;
        size_t i, n;

        ASSERT_TRUE(t);
        ASSERT_EQ(applied_table_size(t), 0);
        ASSERT_TRUE(applied_table_get(t, 1) == NULL);
        applied_table_remove(t, 1); /* nothing there: fine */
        i = 0;
        ASSERT_TRUE(applied_table_next(t, &i) == NULL);

        /* consecutive pids, as after a burst of forks, and a sparse set */
        for (pid_t p = 1000; p < 3000; p++)
                put(t, p, (int) (p % 40) - 20);
        for (pid_t p = 1; p < 4000000; p += 99991)
                put(t, p, 1);
        n = applied_table_size(t);
        ASSERT_EQ(n, 2000 + (4000000 - 1 + 99990) / 99991);
        for (pid_t p = 1000; p < 3000; p++) {
                e = applied_table_get(t, p);
                ASSERT_TRUE(e);
                ASSERT_EQ(e->pid, p);
                ASSERT_EQ(e->start_time, (uint64_t) p * 10);
                ASSERT_EQ(e->latency_nice, (int) (p % 40) - 20);
        }
        /* replace frees the old strings (ASan would see a leak) and keeps the size */
        put(t, 1500, 7);
        ASSERT_EQ(applied_table_size(t), n);
        ASSERT_EQ(applied_table_get(t, 1500)->latency_nice, 7);
        ASSERT_STREQ(applied_table_get(t, 1500)->rule, "[Process p1500] x.conf:7");

        /* remove every other one: the rest must still be found (backward shift) */
        for (pid_t p = 1000; p < 3000; p += 2)
                applied_table_remove(t, p);
        ASSERT_EQ(applied_table_size(t), n - 1000);
        for (pid_t p = 1000; p < 3000; p++)
                ASSERT_EQ(applied_table_get(t, p) != NULL, p % 2 == 1);
        ASSERT_TRUE(applied_table_get(t, 0) == NULL);
        ASSERT_TRUE(applied_table_get(t, -5) == NULL);

        /* iteration sees each entry once */
        {
                size_t seen = 0;
                long long sum = 0, want = 0;

                i = 0;
                while ((e = applied_table_next(t, &i))) {
                        seen++;
                        sum += e->pid;
                }
                ASSERT_EQ(seen, applied_table_size(t));
                for (pid_t p = 1001; p < 3000; p += 2)
                        want += p;
                for (pid_t p = 1; p < 4000000; p += 99991)
                        want += p;
                ASSERT_EQ(sum, want);
        }

        /* drain completely (shrinks), then reuse */
        for (pid_t p = 1000; p < 3000; p++)
                applied_table_remove(t, p);
        for (pid_t p = 1; p < 4000000; p += 99991)
                applied_table_remove(t, p);
        ASSERT_EQ(applied_table_size(t), 0);
        put(t, 42, -3);
        ASSERT_EQ(applied_table_get(t, 42)->latency_nice, -3);
        ASSERT_EQ(applied_table_put(t, &(AppliedProcess) { .pid = 0 }), -EINVAL);
        ASSERT_TRUE(applied_table_free(NULL) == NULL);
}

typedef struct Seen {
        pid_t tids[64];
        size_t n;
} Seen;

static int record(pid_t tid, void *userdata) {
        Seen *s = userdata;

        ASSERT_TRUE(s->n < ELEMENTSOF(s->tids));
        s->tids[s->n++] = tid;
        return 0;
}

static int stop_at_second(pid_t tid, void *userdata) {
        Seen *s = userdata;

        s->tids[s->n++] = tid;
        return s->n == 2 ? -ECANCELED : 0;
}

TEST(walk_fake) {
        const char *t = test_tmpdir();
        _cleanup_(closep) int fd = -1;
        char *d = test_path(t, "proc/500");
        Seen s = {};
        pid_t skip = 501;

        test_write(d, "task/500/stat", "x");
        test_write(d, "task/501/stat", "x");
        test_write(d, "task/502/stat", "x");
        test_write(d, "task/notapid/stat", "x");
        fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(sched_walk_threads(fd, NULL, 0, record, &s), 0);
        ASSERT_EQ(s.n, 3); /* each once, though listed twice */
        s = (Seen) {};
        ASSERT_EQ(sched_walk_threads(fd, &skip, 1, record, &s), 0);
        ASSERT_EQ(s.n, 2);
        ASSERT_TRUE(s.tids[0] != 501 && s.tids[1] != 501);
        s = (Seen) {};
        ASSERT_EQ(sched_walk_threads(fd, NULL, 0, stop_at_second, &s), -ECANCELED);
        d = test_path(t, "proc");
        close(fd);
        fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_EQ(sched_walk_threads(fd, NULL, 0, record, &s), -ESRCH); /* no task/ here */
}

static const char mountinfo_hybrid[] =
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
        "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime shared:9 - cgroup cgroup rw,xattr,name=systemd\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n";

static const char mountinfo_v2[] =
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n";

/* cpu,cpuacct joint, a bind of a subtree first, escaped mount point */
static const char mountinfo_odd[] =
        "50 22 0:40 /lntest-1 /mnt/sub rw - cgroup cgroup rw,cpu,cpuacct\n"
        "51 22 0:40 / /mnt/cg\\040cpu rw - cgroup cgroup rw,cpu,cpuacct\n"
        "52 22 0:41 /lntest-1 /mnt/uni rw - cgroup2 cgroup2 rw\n";

static CGroupMounts mounts_from(const char *name, const char *contents) {
        CGroupMounts m;
        char *p;

        test_write(test_tmpdir(), name, contents);
        p = test_path(test_tmpdir(), name);
        ASSERT_EQ(cgroup_mounts_find(p, &m), 0);
        return m;
}

TEST(cgroup_mounts) {
        CGroupMounts m;
        char *dir, *p;

        m = mounts_from("mi-hybrid", mountinfo_hybrid);
        ASSERT_STREQ(m.cpu_v1.path, "/sys/fs/cgroup/cpu");
        ASSERT_STREQ(m.unified.path, "/sys/fs/cgroup/unified");
        ASSERT_STREQ(m.systemd_v1.path, "/sys/fs/cgroup/systemd");
        ASSERT_STREQ(cgroup_mounts_get(&m, CGROUP_HIER_CPU)->path, "/sys/fs/cgroup/cpu");
        ASSERT_STREQ(cgroup_mounts_get(&m, CGROUP_HIER_SYSTEMD)->path, "/sys/fs/cgroup/unified");
        ASSERT_TRUE(cgroup_hierarchy_is_v1(&m, CGROUP_HIER_CPU));
        ASSERT_TRUE(!cgroup_hierarchy_is_v1(&m, CGROUP_HIER_UNIFIED));
        ASSERT_STREQ(cgroup_latency_knob(&m), "cpu.latency");
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_CPU, "/game.slice", &dir), 0);
        ASSERT_STREQ(dir, "/sys/fs/cgroup/cpu/game.slice");
        free(dir);
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_SYSTEMD, "/game.slice/run-u1.scope/", &dir), 0);
        ASSERT_STREQ(dir, "/sys/fs/cgroup/unified/game.slice/run-u1.scope");
        free(dir);
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_CPU, "/", &dir), 0);
        ASSERT_STREQ(dir, "/sys/fs/cgroup/cpu");
        free(dir);
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_CPU, "game.slice", &dir), -EINVAL);
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_CPU, "/a/../../etc", &dir), -EINVAL);
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_CPU, "/a//b", &dir), -EINVAL);
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_CPU, "/a/./b", &dir), -EINVAL);
        cgroup_mounts_done(&m);

        m = mounts_from("mi-v2", mountinfo_v2);
        ASSERT_TRUE(m.cpu_v1.path == NULL && m.systemd_v1.path == NULL);
        ASSERT_STREQ(cgroup_mounts_get(&m, CGROUP_HIER_CPU)->path, "/sys/fs/cgroup");
        ASSERT_STREQ(cgroup_mounts_get(&m, CGROUP_HIER_SYSTEMD)->path, "/sys/fs/cgroup");
        ASSERT_STREQ(cgroup_latency_knob(&m), "cpu.latency.nice");
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_CPU, "/game.slice", &dir), 0);
        ASSERT_STREQ(dir, "/sys/fs/cgroup/game.slice");
        free(dir);
        cgroup_mounts_done(&m);

        m = mounts_from("mi-odd", mountinfo_odd);
        ASSERT_STREQ(m.cpu_v1.path, "/mnt/cg cpu"); /* root "/" preferred, \040 unescaped */
        ASSERT_STREQ(m.unified.root, "/lntest-1");
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_UNIFIED, "/lntest-1/game.slice", &dir), 0);
        ASSERT_STREQ(dir, "/mnt/uni/game.slice");
        free(dir);
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_UNIFIED, "/lntest-10", &dir), -EXDEV);
        ASSERT_EQ(cgroup_path_to_dir(&m, CGROUP_HIER_UNIFIED, "/other", &dir), -EXDEV);
        cgroup_mounts_done(&m);

        test_write(test_tmpdir(), "mi-nocg", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
        p = test_path(test_tmpdir(), "mi-nocg");
        ASSERT_EQ(cgroup_mounts_find(p, &m), -ENOENT);
        p = test_path(test_tmpdir(), "mi-missing");
        ASSERT_EQ(cgroup_mounts_find(p, &m), -ENOENT);
}

static char *fake_mountinfo(const char *name, const char *cpu_dir, const char *uni_dir) {
        char *contents = NULL, *p;

        if (cpu_dir)
                ASSERT_TRUE(asprintf(&contents,
                                     "32 31 0:29 / %s rw - cgroup cgroup rw,cpu\n"
                                     "41 31 0:38 / %s rw - cgroup2 cgroup2 rw\n",
                                     cpu_dir, uni_dir) > 0);
        else
                ASSERT_TRUE(asprintf(&contents, "41 31 0:38 / %s rw - cgroup2 cgroup2 rw\n", uni_dir) > 0);
        test_write(test_tmpdir(), name, contents);
        free(contents);
        p = test_path(test_tmpdir(), name);
        return p;
}

static void read_into(const char *dir, const char *rel, char **ret) {
        char *p = test_path(dir, rel);

        ASSERT_EQ(read_full_file(AT_FDCWD, p, 64, ret, NULL), 0);
}

TEST(cgroup_knob_fake) {
        const char *t = test_tmpdir();
        char *cpu = test_path(t, "cg/cpu"), *uni = test_path(t, "cg/unified"), *mi, *buf = NULL;
        CGroupMounts m;
        int v;

        /* hybrid: the v1 knob takes ln + 20 */
        test_write(cpu, "game.slice/cpu.latency", "25\n");
        test_write(cpu, "plain.slice/cpu.shares", "1024\n");
        test_write(uni, "game.slice/cgroup.procs", "");
        mi = fake_mountinfo("mi-fake-hybrid", cpu, uni);
        ASSERT_EQ(cgroup_mounts_find(mi, &m), 0);
        ASSERT_EQ(cgroup_latency_nice_get(&m, "/game.slice", &v), 0);
        ASSERT_EQ(v, 5);
        ASSERT_EQ(cgroup_latency_nice_set(&m, "/game.slice", -3), 0);
        read_into(cpu, "game.slice/cpu.latency", &buf);
        ASSERT_STREQ(buf, "17\n");
        free(buf);
        ASSERT_EQ(cgroup_latency_nice_get(&m, "/game.slice", &v), 0);
        ASSERT_EQ(v, -3);
        ASSERT_EQ(cgroup_latency_nice_set(&m, "/game.slice", 20), -EINVAL);
        ASSERT_EQ(cgroup_latency_nice_get(&m, "/plain.slice", &v), -EOPNOTSUPP);
        ASSERT_EQ(cgroup_latency_nice_set(&m, "/plain.slice", 1), -EOPNOTSUPP);
        ASSERT_EQ(cgroup_latency_nice_get(&m, "/nothere.slice", &v), -ENOENT);
        ASSERT_EQ(cgroup_latency_nice_set(&m, "/nothere.slice", 1), -ENOENT);
        test_write(cpu, "bad.slice/cpu.latency", "99\n");
        ASSERT_EQ(cgroup_latency_nice_get(&m, "/bad.slice", &v), -EBADMSG);
        test_write(cpu, "bad2.slice/cpu.latency", "x\n");
        ASSERT_EQ(cgroup_latency_nice_get(&m, "/bad2.slice", &v), -EBADMSG);
        cgroup_mounts_done(&m);

        /* pure v2: cpu.latency.nice takes the value itself */
        test_write(uni, "v2.slice/cpu.latency.nice", "-7\n");
        mi = fake_mountinfo("mi-fake-v2", NULL, uni);
        ASSERT_EQ(cgroup_mounts_find(mi, &m), 0);
        ASSERT_EQ(cgroup_latency_nice_get(&m, "/v2.slice", &v), 0);
        ASSERT_EQ(v, -7);
        ASSERT_EQ(cgroup_latency_nice_set(&m, "/v2.slice", 4), 0);
        read_into(uni, "v2.slice/cpu.latency.nice", &buf);
        ASSERT_STREQ(buf, "4\n");
        free(buf);
        ASSERT_EQ(cgroup_latency_nice_get(&m, "/game.slice", &v), -EOPNOTSUPP);
        cgroup_mounts_done(&m);
}

TEST(cgroup_pids_fake) {
        const char *t = test_tmpdir();
        char *uni = test_path(t, "cgp/unified"), *mi;
        CGroupMounts m;
        pid_t *pids = NULL;
        long long sum = 0;
        int n;

        test_write(uni, "cgroup.procs", "1\n");
        test_write(uni, "game.slice/cgroup.procs", "100\n101\n");
        test_write(uni, "game.slice/a.scope/cgroup.procs", "200\n0\n");  /* 0: other pid namespace */
        test_write(uni, "game.slice/a.scope/sub/cgroup.procs", "300\n");
        test_write(uni, "game.slice/b.service/cgroup.procs", "");
        test_write(uni, "game.slice/cpu.stat", "usage_usec 0\n");
        mi = fake_mountinfo("mi-pids", NULL, uni);
        ASSERT_EQ(cgroup_mounts_find(mi, &m), 0);
        n = cgroup_list_pids(&m, CGROUP_HIER_SYSTEMD, "/game.slice", &pids);
        ASSERT_EQ(n, 4);
        for (int i = 0; i < n; i++)
                sum += pids[i];
        ASSERT_EQ(sum, 100 + 101 + 200 + 300);
        free(pids);
        pids = NULL;
        n = cgroup_list_pids(&m, CGROUP_HIER_SYSTEMD, "/game.slice/b.service", &pids);
        ASSERT_EQ(n, 0);
        free(pids);
        ASSERT_EQ(cgroup_list_pids(&m, CGROUP_HIER_SYSTEMD, "/nothere.slice", &pids), -ENOENT);
        ASSERT_EQ(cgroup_list_pids(&m, CGROUP_HIER_SYSTEMD, "../x", &pids), -EINVAL);
        cgroup_mounts_done(&m);
}
