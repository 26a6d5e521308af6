/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/granted.c against real BPF hash maps of the layout scx_latnice
 * pins (include/latnice/granted.h): the map follows the applied table, a
 * reused pid is another key, and only root's pin of the right layout is
 * opened (in a bpffs mounted in a mount namespace of this test's own).
 * Needs root (CAP_BPF): skips otherwise.
 */

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "granted.h"
#include "tests.h"
#include "util.h"

static int new_map(unsigned key_size, unsigned value_size) {
        return bpf_map_create(BPF_MAP_TYPE_HASH, "granted", key_size, value_size, 64, NULL);
}

TEST_SETUP() {
        int fd = new_map(sizeof(struct latnice_granted_key), sizeof(struct latnice_granted_value));

        if (fd < 0) {
                printf("SKIP: cannot create a BPF hash map (%s): needs root (CAP_BPF)\n", strerror(errno));
                return TEST_SKIP;
        }
        close(fd);
        return 0;
}

static void put(AppliedTable *t, pid_t pid, uint64_t start, int ln, pid_t tgid) {
        AppliedProcess e = {
                .pid = pid, .start_time = start, .latency_nice = ln, .tgid = tgid,
                .rule = strdup("r"), .rule_name = strdup("r"), .state_slot = STATE_SLOT_NONE,
        };

        ASSERT_EQ(applied_table_put(t, &e), 0);
}

/* The value under (pid, start), or 99 if none; *ret_flags its flags. */
static int lookup(int fd, uint32_t pid, uint64_t start, uint32_t *ret_flags) {
        struct latnice_granted_key k = { .pid = pid, .start_time = start };
        struct latnice_granted_value v;

        if (bpf_map_lookup_elem(fd, &k, &v) < 0)
                return 99;
        if (ret_flags)
                *ret_flags = v.flags;
        return v.latency_nice;
}

static unsigned count(int fd) {
        struct latnice_granted_key k, next;
        unsigned n = 0;

        for (const void *prev = NULL; bpf_map_get_next_key(fd, prev, &next) == 0; prev = &k, n++)
                k = next;
        return n;
}

TEST(sync_follows_table) {
        AppliedTable *t = applied_table_new();
        int fd = new_map(sizeof(struct latnice_granted_key), sizeof(struct latnice_granted_value));
        struct latnice_granted_key stale = { .pid = 100, .start_time = 5 }, other = { .pid = 777, .start_time = 1 };
        struct latnice_granted_value v = { .latency_nice = -20 };
        GrantedSync s;
        uint32_t flags = 0;

        ASSERT_TRUE(t && fd >= 0);
        /* What a crashed latniced left: pid 100 of another start time (reused since), and a process gone. */
        ASSERT_EQ(bpf_map_update_elem(fd, &stale, &v, BPF_ANY), 0);
        ASSERT_EQ(bpf_map_update_elem(fd, &other, &v, BPF_ANY), 0);
        put(t, 100, 6, -10, 0);
        put(t, 200, 7, 5, 0);
        put(t, 201, 8, -3, 200); /* a Thread= rule's value on thread 201 of process 200 */
        ASSERT_EQ(granted_map_sync(fd, t, &s), 0);
        ASSERT_EQ(s.n_written, 3);
        ASSERT_EQ(s.n_stale, 2);
        ASSERT_EQ(count(fd), 3);
        ASSERT_EQ(lookup(fd, 100, 6, &flags), -10);
        ASSERT_EQ(flags, 0);
        ASSERT_EQ(lookup(fd, 100, 5, NULL), 99);
        ASSERT_EQ(lookup(fd, 777, 1, NULL), 99);
        ASSERT_EQ(lookup(fd, 200, 7, NULL), 5);
        ASSERT_EQ(lookup(fd, 201, 8, &flags), -3);
        ASSERT_EQ(flags, LATNICE_GRANTED_F_THREAD);

        /* Again: nothing stale, the same entries. */
        ASSERT_EQ(granted_map_sync(fd, t, &s), 0);
        ASSERT_EQ(s.n_stale, 0);
        ASSERT_EQ(count(fd), 3);

        /* Changes one at a time, as manager_record and manager_forget_full make them. */
        put(t, 200, 7, -20, 0);
        ASSERT_EQ(granted_map_put(fd, applied_table_get(t, 200)), 0);
        ASSERT_EQ(lookup(fd, 200, 7, NULL), -20);
        ASSERT_EQ(granted_map_remove(fd, applied_table_get(t, 100)), 0);
        applied_table_remove(t, 100);
        ASSERT_EQ(lookup(fd, 100, 6, NULL), 99);
        /* Removing what is not there is no error. */
        put(t, 300, 9, 1, 0);
        ASSERT_EQ(granted_map_remove(fd, applied_table_get(t, 300)), 0);
        ASSERT_EQ(count(fd), 2);

        /* A table emptied (every value restored): the map empties too. */
        applied_table_remove(t, 200);
        applied_table_remove(t, 201);
        applied_table_remove(t, 300);
        ASSERT_EQ(granted_map_sync(fd, t, &s), 0);
        ASSERT_EQ(s.n_stale, 2);
        ASSERT_EQ(count(fd), 0);
        close(fd);
        applied_table_free(t);
}

TEST(sync_full_map) {
        AppliedTable *t = applied_table_new();
        int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "granted", sizeof(struct latnice_granted_key),
                                sizeof(struct latnice_granted_value), 2, NULL);
        GrantedSync s;

        ASSERT_TRUE(t && fd >= 0);
        for (pid_t p = 1; p <= 3; p++)
                put(t, p, 10, -5, 0);
        ASSERT_EQ(granted_map_sync(fd, t, &s), -E2BIG);
        ASSERT_EQ(s.n_written, 2);
        ASSERT_EQ(s.n_failed, 1);
        close(fd);
        applied_table_free(t);
}

/* Pins in a bpffs of our own: root's pin of the right layout opens, others do not. */
TEST(open_pin) {
        char dir[] = "/tmp/test-granted.XXXXXX";
        _cleanup_(freep) char *good = NULL, *bad = NULL, *foreign = NULL;
        int fd = -1, m;
        uint32_t id = 0;
        struct bpf_map_info info = {};
        __u32 len = sizeof(info);

        ASSERT_TRUE(mkdtemp(dir));
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("bpf", dir, "bpf", 0, "mode=0700") < 0) {
                printf("SKIP open_pin: no bpffs in a mount namespace of our own: %s\n", strerror(errno));
                rmdir(dir);
                return;
        }
        ASSERT_TRUE(asprintf(&good, "%s/granted", dir) > 0);
        ASSERT_TRUE(asprintf(&bad, "%s/old", dir) > 0);
        ASSERT_TRUE(asprintf(&foreign, "%s/foreign", dir) > 0);

        ASSERT_EQ(granted_map_open(good, &fd, &id), -ENOENT);
        m = new_map(sizeof(struct latnice_granted_key), sizeof(struct latnice_granted_value));
        ASSERT_EQ(bpf_obj_pin(m, good), 0);
        ASSERT_EQ(bpf_obj_get_info_by_fd(m, &info, &len), 0);
        ASSERT_EQ(granted_map_open(good, &fd, &id), 0);
        ASSERT_EQ(id, info.id);
        close(fd);
        ASSERT_EQ(bpf_obj_pin(m, foreign), 0);
        ASSERT_EQ(chown(foreign, 65534, 65534), 0);
        ASSERT_EQ(granted_map_open(foreign, &fd, &id), -EPERM);
        close(m);

        m = new_map(sizeof(struct latnice_granted_key), sizeof(__s32));
        ASSERT_EQ(bpf_obj_pin(m, bad), 0);
        ASSERT_EQ(granted_map_open(bad, &fd, &id), -EPROTO);
        close(m);

        ASSERT_EQ(umount(dir), 0);
        ASSERT_EQ(rmdir(dir), 0);
}
