/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The session a foreground boost belongs to (see login-session.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-login.h>

#include "login-session.h"
#include "util.h"

bool login_session_usable(const char *session) {
        _cleanup_(freep) char *state = NULL;

        if (!session || sd_session_is_active(session) <= 0 || sd_session_is_remote(session) > 0)
                return false;
        /* A terminated session stays "active" until its processes are gone: it is over already. */
        return sd_session_get_state(session, &state) >= 0 && strcmp(state, "closing") != 0;
}

/* pid's session if it is uid's: a process of uid's in somebody else's session (su) binds to none of it. */
static bool session_of(pid_t pid, uid_t uid, char **ret) {
        _cleanup_(freep) char *s = NULL;
        uid_t owner;

        if (pid <= 0 || sd_pid_get_session(pid, &s) < 0 || sd_session_get_uid(s, &owner) < 0 || owner != uid)
                return false;
        *ret = TAKE_PTR(s);
        return true;
}

/* uid's display session, if it still exists: the user's record may name one that has just ended. */
static bool display_of(uid_t uid, char **ret) {
        _cleanup_(freep) char *s = NULL, *state = NULL;

        if (sd_uid_get_display(uid, &s) < 0 || sd_session_get_state(s, &state) < 0)
                return false;
        *ret = TAKE_PTR(s);
        return true;
}

int login_bound_session(pid_t target, pid_t caller, uid_t caller_uid, uid_t uid, char **ret_session) {
        char *s = NULL;

        if (session_of(target, uid, &s) || (caller_uid == uid && session_of(caller, uid, &s)) || display_of(uid, &s)) {
                *ret_session = s;
                return 0;
        }
        *ret_session = NULL;
        return -ENXIO;
}
