/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* state.c: records survive a close (crash) and come back in order; moves keep the file dense; another key empties it. */

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

int main(void) {
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
        printf("test-state: ok\n");
        return 0;
}
