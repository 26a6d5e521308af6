/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The SetLatencyNice, SetForeground and visibility decisions, alone. */

#include <errno.h>
#include <limits.h>
#include <stdint.h>

#include "authz.h"
#include "tests.h"

static void test_owns(void) {
        ASSERT_TRUE(authz_owns(0, 1000, 1000));
        ASSERT_TRUE(authz_owns(1000, 1000, 0));    /* a setuid-root program started by 1000 */
        ASSERT_TRUE(authz_owns(1000, 0, 1000));
        ASSERT_TRUE(!authz_owns(1000, 0, 0));
        ASSERT_TRUE(!authz_owns(65534, 1000, 1000));
}

static void test_set(void) {
        /* Threads=main gave the main thread -10, the others kept 0: asking for -10 lowers them. */
        int main_only[] = { -10, 0, 0, 0 };
        int all_low[] = { -10, -10 };
        int mixed[] = { 5, 19, 0 };

        ASSERT_EQ(authz_set_latency_nice(1000, 1000, 1000, main_only, 4, -10), AUTHZ_SET_LOWER);
        ASSERT_EQ(authz_set_latency_nice(1000, 1000, 1000, main_only, 1, -10), AUTHZ_SET_FREE);
        ASSERT_EQ(authz_set_latency_nice(1000, 1000, 1000, all_low, 2, -10), AUTHZ_SET_FREE);
        ASSERT_EQ(authz_set_latency_nice(1000, 1000, 1000, all_low, 2, 3), AUTHZ_SET_FREE);
        /* a thread at 19 is lowered by 5, although the main thread is raised */
        ASSERT_EQ(authz_set_latency_nice(1000, 1000, 1000, mixed, 3, 5), AUTHZ_SET_LOWER);
        ASSERT_EQ(authz_set_latency_nice(1000, 1000, 1000, mixed, 3, 19), AUTHZ_SET_FREE);
        /* another user's process: always the "any" action, raising or not */
        ASSERT_EQ(authz_set_latency_nice(1000, 0, 0, all_low, 2, 19), AUTHZ_SET_ANY);
        ASSERT_EQ(authz_set_latency_nice(0, 1000, 1000, main_only, 4, -20), AUTHZ_SET_FREE);
        /* no threads read (a zombie): nothing is lowered */
        ASSERT_EQ(authz_set_latency_nice(1000, 1000, 1000, NULL, 0, -20), AUTHZ_SET_FREE);
        ASSERT_TRUE(authz_raise_only_ok(0, 0));
        ASSERT_TRUE(!authz_raise_only_ok(0, -1));
}

static void test_set_args(void) {
        /* the value first, then the pid, then the kernel: the order the errors come in */
        ASSERT_EQ(authz_set_check_args(-20, false, 1, true), AUTHZ_SET_ARGS_OK);
        ASSERT_EQ(authz_set_check_args(19, false, INT_MAX, true), AUTHZ_SET_ARGS_OK);
        ASSERT_EQ(authz_set_check_args(-21, false, 1, true), AUTHZ_SET_ARGS_INVALID_VALUE);
        ASSERT_EQ(authz_set_check_args(20, false, (uint32_t) INT_MAX + 1, false), AUTHZ_SET_ARGS_INVALID_VALUE);
        ASSERT_EQ(authz_set_check_args(INT32_MIN, true, 0, true), AUTHZ_SET_ARGS_INVALID_VALUE);
        ASSERT_EQ(authz_set_check_args(0, false, (uint32_t) INT_MAX + 1, false), AUTHZ_SET_ARGS_INVALID_PID);
        ASSERT_EQ(authz_set_check_args(0, false, UINT32_MAX, true), AUTHZ_SET_ARGS_INVALID_PID);
        /* by pidfd the pid argument is not there */
        ASSERT_EQ(authz_set_check_args(0, true, UINT32_MAX, true), AUTHZ_SET_ARGS_OK);
        ASSERT_EQ(authz_set_check_args(0, false, 1, false), AUTHZ_SET_ARGS_NOT_SUPPORTED);
        ASSERT_TRUE(authz_may_lower_unasked(0));
        ASSERT_TRUE(!authz_may_lower_unasked(1000));
}

static void test_set_outcome(void) {
        ASSERT_EQ(authz_set_outcome(1, 3, -EPERM), AUTHZ_SET_APPLIED);
        ASSERT_EQ(authz_set_outcome(0, 1, -EPERM), AUTHZ_SET_DENIED);
        ASSERT_EQ(authz_set_outcome(0, 0, -EPERM), AUTHZ_SET_FAILED);
        ASSERT_EQ(authz_set_outcome(0, 0, 0), AUTHZ_SET_ALL_REALTIME);
}

static void test_list(void) {
        ASSERT_EQ(authz_list_applied(0, 1000), AUTHZ_LIST_SHOW);
        ASSERT_EQ(authz_list_applied(0, 0), AUTHZ_LIST_SHOW);
        /* recorded as the caller's: shown only while it is still the caller's */
        ASSERT_EQ(authz_list_applied(1000, 1000), AUTHZ_LIST_IF_OWNED_NOW);
        ASSERT_EQ(authz_list_applied(1000, 0), AUTHZ_LIST_HIDE);
        ASSERT_EQ(authz_list_applied(65534, 1000), AUTHZ_LIST_HIDE);
}

static void test_foreground(void) {
        /* root boosts anything, in any session */
        ASSERT_EQ(authz_set_foreground(0, 1000, AUTHZ_SESSION_INACTIVE_OR_REMOTE), AUTHZ_FOREGROUND_FREE);
        ASSERT_EQ(authz_set_foreground(0, 0, AUTHZ_SESSION_NONE), AUTHZ_FOREGROUND_FREE);
        /* another user's process, by real uid; that error comes before the session's */
        ASSERT_EQ(authz_set_foreground(1000, 0, AUTHZ_SESSION_ACTIVE_LOCAL), AUTHZ_FOREGROUND_NOT_YOURS);
        ASSERT_EQ(authz_set_foreground(1000, 1001, AUTHZ_SESSION_INACTIVE_OR_REMOTE), AUTHZ_FOREGROUND_NOT_YOURS);
        ASSERT_EQ(authz_set_foreground(1000, 1000, AUTHZ_SESSION_INACTIVE_OR_REMOTE), AUTHZ_FOREGROUND_INACTIVE);
        /* one's own, bound to an active local session: polkit decides */
        ASSERT_EQ(authz_set_foreground(1000, 1000, AUTHZ_SESSION_ACTIVE_LOCAL), AUTHZ_FOREGROUND_ASK);
        /* no session to bind it to (no session of its own, none of the caller's, no display session) */
        ASSERT_EQ(authz_set_foreground(1000, 1000, AUTHZ_SESSION_NONE), AUTHZ_FOREGROUND_NO_SESSION);
        ASSERT_EQ(authz_set_foreground(1000, 1001, AUTHZ_SESSION_NONE), AUTHZ_FOREGROUND_NOT_YOURS);
}

int main(void) {
        test_owns();
        test_set();
        test_set_args();
        test_set_outcome();
        test_list();
        test_foreground();
        printf("test-authz: ok\n");
        return 0;
}
