/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The authorization decisions of org.latnice1 (see authz.h). Pure. */

#include "authz.h"

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
