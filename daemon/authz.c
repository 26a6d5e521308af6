/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The authorization decisions of org.latnice1 (see authz.h). Pure. */

#include <limits.h>

#include "authz.h"
#include "latnice/uapi.h"

bool authz_owns(uid_t caller, uid_t ruid, uid_t euid) {
        return caller == 0 || caller == ruid || caller == euid;
}

AuthzSet authz_set_latency_nice(uid_t caller, uid_t ruid, uid_t euid, const int *current, size_t n, int value) {
        if (caller == 0)
                return AUTHZ_SET_FREE;
        if (caller != ruid && caller != euid)
                return AUTHZ_SET_ANY;
        for (size_t i = 0; i < n; i++)
                if (!authz_raise_only_ok(current[i], value))
                        return AUTHZ_SET_LOWER;
        return AUTHZ_SET_FREE;
}

AuthzSetArgs authz_set_check_args(int32_t value, bool by_pidfd, uint32_t upid, bool have_backend) {
        if (value < LATNICE_MIN || value > LATNICE_MAX)
                return AUTHZ_SET_ARGS_INVALID_VALUE;
        if (!by_pidfd && upid > INT_MAX)
                return AUTHZ_SET_ARGS_INVALID_PID;
        if (!have_backend)
                return AUTHZ_SET_ARGS_NOT_SUPPORTED;
        return AUTHZ_SET_ARGS_OK;
}

AuthzSetOutcome authz_set_outcome(unsigned n_applied, unsigned n_refused, int first_error) {
        if (n_applied > 0)
                return AUTHZ_SET_APPLIED;
        if (n_refused > 0)
                return AUTHZ_SET_DENIED;
        if (first_error < 0)
                return AUTHZ_SET_FAILED;
        return AUTHZ_SET_ALL_REALTIME;
}

AuthzList authz_list_applied(uid_t caller, uid_t recorded_uid) {
        if (caller == 0)
                return AUTHZ_LIST_SHOW;
        return recorded_uid == caller ? AUTHZ_LIST_IF_OWNED_NOW : AUTHZ_LIST_HIDE;
}

AuthzForeground authz_set_foreground(uid_t caller, uid_t ruid, AuthzSession session) {
        if (caller == 0)
                return AUTHZ_FOREGROUND_FREE;
        /* One's own processes only (real uid): the boost is for what the user looks at. */
        if (ruid != caller)
                return AUTHZ_FOREGROUND_NOT_YOURS;
        /* The boost lives as long as its session is active: without one there is nothing to bind it to. */
        if (session == AUTHZ_SESSION_NONE)
                return AUTHZ_FOREGROUND_NO_SESSION;
        if (session == AUTHZ_SESSION_INACTIVE_OR_REMOTE)
                return AUTHZ_FOREGROUND_INACTIVE;
        return AUTHZ_FOREGROUND_ASK;
}
