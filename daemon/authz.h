/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who may do what through org.latnice1, decided without the bus: pure
 * functions of the caller's uid and the target process's ids and values,
 * so that the policy is tested on its own (tests/unit/test-authz.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* May the caller see this process's details (command line, cgroup, threads)? Root, or its real or effective uid. */
bool authz_owns(uid_t caller, uid_t ruid, uid_t euid);

typedef enum AuthzSet {
        AUTHZ_SET_FREE,  /* nothing to ask: raising (or keeping) one's own process, or root */
        AUTHZ_SET_LOWER, /* polkit org.latnice1.set-latency-nice: a thread of one's own gets a lower value */
        AUTHZ_SET_ANY,   /* polkit org.latnice1.set-latency-nice-any: another user's process */
} AuthzSet;

/*
 * What SetLatencyNice(value) needs, from the current value of *every*
 * thread the call would write (current[0..n)): a thread whose value is
 * higher than the new one is lowered, whatever its main thread has.
 */
AuthzSet authz_set_latency_nice(uid_t caller, uid_t ruid, uid_t euid, const int *current, size_t n, int value);

/* May this thread be written by a call that is allowed to raise only? */
static inline bool authz_raise_only_ok(int current, int value) {
        return value >= current;
}

/*
 * SetLatencyNice's checks of its arguments, before it looks at the
 * process: bad input gets its named error first, then a kernel that cannot
 * apply anything. upid is ignored for a call by pidfd.
 */
typedef enum AuthzSetArgs {
        AUTHZ_SET_ARGS_OK,
        AUTHZ_SET_ARGS_INVALID_VALUE, /* outside LATNICE_MIN..LATNICE_MAX */
        AUTHZ_SET_ARGS_INVALID_PID,   /* above INT_MAX */
        AUTHZ_SET_ARGS_NOT_SUPPORTED, /* no backend */
} AuthzSetArgs;
AuthzSetArgs authz_set_check_args(int32_t value, bool by_pidfd, uint32_t upid, bool have_backend);

/* May the call lower threads without asking polkit? Root only; once polkit said yes, always. */
static inline bool authz_may_lower_unasked(uid_t caller) {
        return caller == 0;
}

/* How a SetLatencyNice ends, from what its walk over the threads did. */
typedef enum AuthzSetOutcome {
        AUTHZ_SET_APPLIED,      /* at least one thread has the value now */
        AUTHZ_SET_DENIED,       /* none written: lowering them needs authorization */
        AUTHZ_SET_FAILED,       /* none written: an error */
        AUTHZ_SET_ALL_REALTIME, /* none written: all realtime or idle, left alone */
} AuthzSetOutcome;
AuthzSetOutcome authz_set_outcome(unsigned n_applied, unsigned n_refused, int first_error);

/*
 * ListApplied: which entries of the applied table a caller sees. Root all;
 * anybody else only those recorded as theirs, and of those only the ones
 * whose process is still theirs now (authz_owns() on its ids as they are).
 */
typedef enum AuthzList {
        AUTHZ_LIST_SHOW,
        AUTHZ_LIST_HIDE,
        AUTHZ_LIST_IF_OWNED_NOW,
} AuthzList;
AuthzList authz_list_applied(uid_t caller, uid_t recorded_uid);

/* The login session a SetForeground is bound to (login-session.h finds it, bus-target.c asks). */
typedef enum AuthzSession {
        AUTHZ_SESSION_NONE,               /* the user has none: no session of its own, no display session */
        AUTHZ_SESSION_ACTIVE_LOCAL,
        AUTHZ_SESSION_INACTIVE_OR_REMOTE,
} AuthzSession;

/* What SetForeground needs, in the order its errors come in. */
typedef enum AuthzForeground {
        AUTHZ_FOREGROUND_FREE,       /* root: boosted without asking */
        AUTHZ_FOREGROUND_NOT_YOURS,  /* another user's process (by real uid): only root may boost it */
        AUTHZ_FOREGROUND_NO_SESSION, /* no session to bind the boost to: it belongs to the user at the screen */
        AUTHZ_FOREGROUND_INACTIVE,   /* the session it would be bound to is not active or not local */
        AUTHZ_FOREGROUND_ASK,        /* polkit org.latnice1.set-foreground (unless it is the same boost again) */
} AuthzForeground;
AuthzForeground authz_set_foreground(uid_t caller, uid_t ruid, AuthzSession session);
