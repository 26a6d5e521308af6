/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* state.c: records survive a close (crash) and come back in order; moves keep the file dense; another key
 * empties it. */

#include <errno.h>
#include <sys/stat.h>

#include "state.h"
#include "tests.h"
#include "util.h"

typedef struct Seen {
        pid_t pids[256];
        uint32_t slots[256];
        size_t n;
        pid_t reject;
} Seen;

static bool adopt(const StateRecord *r, uint32_t slot, void *userdata) {
        Seen *s = userdata;

        if (r->pid == s->reject)
                return false;
        s->pids[s->n] = r->pid;
        s->slots[s->n++] = slot;
        return true;
}

static StateRecord rec(pid_t pid) {
        AppliedProcess e = { .pid = pid, .start_time = 1000 + (uint64_t) pid, .latency_nice = -5, .raw = 150146,
                             .inherit = true };
        StateRecord r;

        snprintf(e.comm, sizeof(e.comm), "p%d", (int) pid);
        state_record_from_applied(&e, &r);
        return r;
}

/* A Thread= value on one thread: the record says so, and which process the thread belongs to. */
TEST(thread_record) {
        AppliedProcess e = { .pid = 4321, .tgid = 4300, .start_time = 77, .latency_nice = -10, .raw = 150146 };
        AppliedProcess p = { .pid = 4300, .start_time = 70, .latency_nice = 5 };
        StateRecord r;

        snprintf(e.comm, sizeof(e.comm), "data-loop.0");
        state_record_from_applied(&e, &r);
        ASSERT_EQ(r.pid, 4321);
        ASSERT_TRUE(r.flags & STATE_F_THREAD);
        ASSERT_EQ(r.tgid, 4300U);
        ASSERT_STREQ(r.comm, "data-loop.0");
        state_record_from_applied(&p, &r);
        ASSERT_TRUE(!(r.flags & STATE_F_THREAD));
        ASSERT_EQ(r.tgid, 0U);
}

/* dir/units: what the unit side set survives a restart; lines that are not ours are skipped. */
TEST(units) {
        const char *dir = test_tmpdir();
        StateKnob knobs[] = {
                { .cgroup = (char *) "/game.slice", .before = 0, .value = -10 },
                { .cgroup = (char *) "/a.slice/b\tc.service", .before = 1, .value = 2 }, /* not writable: skipped */
                { .cgroup = (char *) "/user.slice", .before = 3, .value = 19 },
        };
        char *asked[] = { (char *) "game.slice", (char *) "x\ny.service", NULL };
        StateKnob *got = NULL;
        char **got_asked = NULL;
        size_t n = 0;
        unsigned skipped = 7;
        struct stat st;

        ASSERT_EQ(state_units_read(dir, &got, &n, &got_asked, &skipped), 0); /* no file yet */
        ASSERT_EQ(n, 0);
        ASSERT_EQ(state_units_write(dir, knobs, ELEMENTSOF(knobs), asked), 0);
        ASSERT_EQ(state_units_read(dir, &got, &n, &got_asked, &skipped), 0);
        ASSERT_EQ(n, 2);
        ASSERT_STREQ(got[0].cgroup, "/game.slice");
        ASSERT_EQ(got[0].before, 0);
        ASSERT_EQ(got[0].value, -10);
        ASSERT_STREQ(got[1].cgroup, "/user.slice");
        ASSERT_EQ(got[1].value, 19);
        ASSERT_EQ(strv_length(got_asked), 1);
        ASSERT_STREQ(got_asked[0], "game.slice");
        ASSERT_EQ(skipped, 0);
        for (size_t i = 0; i < n; i++)
                free(got[i].cgroup);
        free(got);
        got = NULL;
        n = 0;
        got_asked = strv_free(got_asked);

        /* somebody else's file: out-of-range values, relative paths, junk */
        test_write(dir, "units", "knob\t-21\t0\t/a\nknob\t0\t20\t/b\nknob\t0\t1\trelative\nknob\t0\t1\t\n"
                                 "garbage\ncpu-accounting\t\nknob\t5\t-5\t/ok.slice\n");
        ASSERT_EQ(state_units_read(dir, &got, &n, &got_asked, &skipped), 0);
        ASSERT_EQ(n, 1);
        ASSERT_STREQ(got[0].cgroup, "/ok.slice");
        ASSERT_EQ(skipped, 6);
        ASSERT_TRUE(!got_asked);
        free(got[0].cgroup);
        free(got);

        /* nothing left to remember: no file */
        ASSERT_EQ(state_units_write(dir, NULL, 0, NULL), 0);
        ASSERT_TRUE(stat(test_path(dir, "units"), &st) < 0 && errno == ENOENT);
}

TEST(state_file) {
        const char *dir = test_path(test_tmpdir(), "state");
        StateKey key = { .backend = 2, .base_slice_ns = 1400000 }, other = key;
        StateFile *f = NULL;
        Seen seen = {};

        snprintf(key.boot_id, sizeof(key.boot_id), "boot-a");
        ASSERT_EQ(state_file_open(dir, &key, adopt, &seen, &f), 0);
        ASSERT_EQ(seen.n, 0);
        /* more than the first mapping holds: the file grows */
        for (pid_t p = 1; p <= 200; p++) {
                StateRecord r = rec(p);

                ASSERT_EQ(state_file_add(f, &r), (uint32_t) (p - 1));
        }
        f = state_file_close(f, false);

        seen = (Seen) {};
        ASSERT_EQ(state_file_open(dir, &key, adopt, &seen, &f), 0);
        ASSERT_EQ(seen.n, 0); /* unlinked: nothing left */
        for (pid_t p = 1; p <= 100; p++) {
                StateRecord r = rec(p);

                ASSERT_EQ(state_file_add(f, &r), (uint32_t) (p - 1));
        }
        /* removing slot 9 moves the last record (pid 100) there */
        ASSERT_EQ(state_file_remove(f, 9), 100);
        ASSERT_EQ(state_file_remove(f, 98), 0); /* the last one: nothing moves */
        ASSERT_EQ(state_file_size(f), 98);
        f = state_file_close(f, true); /* as after a crash: the file stays */

        seen = (Seen) { .reject = 50 };
        ASSERT_EQ(state_file_open(dir, &key, adopt, &seen, &f), 0);
        ASSERT_EQ(seen.n, 97);          /* 98 minus the one adopt() refused */
        ASSERT_EQ(seen.pids[9], 100);   /* the moved record, at its new place */
        ASSERT_EQ(seen.slots[seen.n - 1], seen.n - 1); /* dense */
        ASSERT_EQ(state_file_size(f), 97);
        f = state_file_close(f, true);

        /* a record from another boot (or backend) means nothing */
        snprintf(other.boot_id, sizeof(other.boot_id), "boot-b");
        seen = (Seen) {};
        ASSERT_EQ(state_file_open(dir, &other, adopt, &seen, &f), 0);
        ASSERT_EQ(seen.n, 0);
        ASSERT_EQ(state_file_size(f), 0);
        f = state_file_close(f, false);
}
