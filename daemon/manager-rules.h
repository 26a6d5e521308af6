/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rules in force: loading them (profile, latniced.conf), the match
 * index, the in-kernel prefilter built from them, and inotify on the files
 * they come from.
 */
#pragma once

#include "manager.h"

/* Reloads latniced.conf and the rules; a reload that adds errors keeps the running rules. */
int manager_reload(Manager *m, bool startup);
/* Switches the active profile at run time; -ENOENT if there is no such profile. */
int manager_set_profile(Manager *m, const char *name);
/* Rebuilds the in-kernel prefilter from the rules (and the units' cgroup ids). */
int manager_update_filter(Manager *m);
/* Starts following the rule files; reloads happen on their own from then on. */
int manager_setup_inotify(Manager *m);
/* Frees the rules, the prefilter spec and the watches. */
void manager_rules_done(Manager *m);
