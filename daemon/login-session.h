/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The login session a foreground boost belongs to, from logind's records
 * (sd-login): which session a SetForeground binds to, and whether that
 * session may carry a boost now. No logging, no state: manager-foreground.c
 * watches the sessions and asks again when logind changes them.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/*
 * May session carry a foreground boost now? Active (the session in front on
 * its seat; logind counts a session without a seat as always active), not
 * closing, not remote. An unknown (ended) session may not.
 */
bool login_session_usable(const char *session);

/*
 * The session a boost of target (a process of uid's) is bound to: target's
 * own session when it runs in one; else the caller's when the caller is
 * uid's and runs in one; else uid's display session, logind's pick of the
 * user's graphical session (apps and latnice-focus run in user units, in no
 * session). 0 with the id in *ret_session; -ENXIO when there is none.
 */
int login_bound_session(pid_t target, pid_t caller, uid_t caller_uid, uid_t uid, char **ret_session);
